//! Admission and conversion webhooks end to end on the real testbed: the API server calls a
//! `kruise-manager` running outside the cluster at `https://127.0.0.1:<port>`.
//!
//! The webhook configurations and the CRD conversion settings are cluster-wide objects with fixed
//! names, so these tests run one at a time (a process-wide lock), scope the admission webhooks
//! to their own namespace (`--webhook-only-namespace`) and, when they end (even by panic),
//! delete the configurations and turn the StatefulSet CRD's conversion back to `None` before
//! their namespace is deleted.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::{
    TestEnv, TestNamespace, install_crds, kubectl, log_file, repo_root, testbed_kubeconfig,
    wait_for,
};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);
/// The controller resyncs every 20 s; healing must happen "within a minute".
const HEAL: Duration = Duration::from_secs(60);
const MUTATING: &str = "kruise-mutating-webhook-configuration";
const VALIDATING: &str = "kruise-validating-webhook-configuration";
const ASTS_CRD: &str = "statefulsets.apps.kruise.io";

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A kruise-manager serving webhooks for one namespace (its certificate Secret lives there too).
struct WebhookManager {
    child: Child,
    health_port: u16,
    metrics_port: u16,
}

impl WebhookManager {
    /// Starts a manager whose admission webhooks apply to `ns` only and whose own namespace
    /// (`POD_NAMESPACE`: certificate Secret, pods left alone by `/mutate-pod`) is `home`.
    fn start(ns: &str, home: &str, port: u16, tag: &str) -> Self {
        Self::start_with(ns, home, port, tag, &[])
    }

    /// [`start`](Self::start) with extra manager flags.
    fn start_with(ns: &str, home: &str, port: u16, tag: &str, extra: &[&str]) -> Self {
        let (log, log_path) = log_file(&format!("{ns}-manager-{tag}.log")).unwrap();
        let health_port = free_port();
        let metrics_port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
            .arg("--kubeconfig")
            .arg(testbed_kubeconfig())
            .env("POD_NAMESPACE", home)
            .args([
                "--enable-leader-election=false",
                "--namespace",
                ns,
                "--metrics-addr",
                &format!("127.0.0.1:{metrics_port}"),
                "--health-probe-addr",
                &format!("127.0.0.1:{health_port}"),
                "--webhook-server",
                "--webhook-host",
                "127.0.0.1",
                "--webhook-bind-address",
                "127.0.0.1",
                "--webhook-port",
                &port.to_string(),
                "--webhook-only-namespace",
                ns,
                "-v",
                &std::env::var("KRUISE_E2E_MANAGER_V").unwrap_or_else(|_| "1".into()),
            ])
            .args(extra)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start kruise-manager");
        eprintln!("manager log: {}", log_path.display());
        WebhookManager {
            child,
            health_port,
            metrics_port,
        }
    }

    /// Waits until `/readyz` answers 200 (the first certificate and configuration sync is done).
    async fn ready(&self) {
        let port = self.health_port;
        wait_for("manager /readyz", TIMEOUT, || async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()?;
            conn.write_all(b"GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n")
                .await
                .ok()?;
            let mut answer = String::new();
            conn.read_to_string(&mut answer).await.ok()?;
            (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")).then_some(())
        })
        .await
        .unwrap();
    }

    /// SIGTERM, as a rolling restart does, then wait for the exit.
    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for WebhookManager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Restores the cluster-wide state when a test ends, pass or fail.
struct ClusterGuard;

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "delete",
                "mutatingwebhookconfiguration",
                MUTATING,
                "--ignore-not-found",
            ],
            None,
        );
        let _ = kubectl(
            &[
                "delete",
                "validatingwebhookconfiguration",
                VALIDATING,
                "--ignore-not-found",
            ],
            None,
        );
        let _ = kubectl(
            &[
                "patch",
                "crd",
                ASTS_CRD,
                "--type",
                "merge",
                "-p",
                r#"{"spec":{"conversion":{"strategy":"None","webhook":null}}}"#,
            ],
            None,
        );
    }
}

/// Everything one test needs; field order makes the manager stop and the cluster state be
/// restored before the namespace is deleted.
struct Fixture {
    manager: WebhookManager,
    _guard: ClusterGuard,
    ns: TestNamespace,
    _home: Option<TestNamespace>,
    env: TestEnv,
    port: u16,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

async fn setup(prefix: &str) -> Fixture {
    setup_with(prefix, false).await
}

/// With `separate_home`, the manager's own namespace is a second test namespace instead of the
/// one its webhooks apply to.
async fn setup_with(prefix: &str, separate_home: bool) -> Fixture {
    let serial = SERIAL.lock().await;
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace(prefix).await.unwrap();
    let home = if separate_home {
        Some(env.namespace(&format!("{prefix}-home")).await.unwrap())
    } else {
        None
    };
    let guard = ClusterGuard;
    let port = free_port();
    let home_name = home.as_ref().map_or(ns.name(), |h| h.name()).to_owned();
    let manager = WebhookManager::start(ns.name(), &home_name, port, "a");
    manager.ready().await;
    Fixture {
        manager,
        _guard: guard,
        ns,
        _home: home,
        env,
        port,
        _serial: serial,
    }
}

fn ca_of(secret: &Secret) -> String {
    let data = secret.data.as_ref().expect("secret data");
    String::from_utf8(data.get("ca-cert.pem").expect("ca-cert.pem").0.clone()).unwrap()
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

/// The caBundle (PEM) of every webhook of configuration `name`; empty when it does not exist.
async fn ca_bundles<K>(env: &TestEnv, name: &str) -> Vec<String>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let api: Api<K> = Api::all(env.client.clone());
    let Ok(cfg) = api.get(name).await else {
        return vec![];
    };
    let v = serde_json::to_value(cfg).unwrap();
    v["webhooks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|w| {
            let b = w
                .pointer("/clientConfig/caBundle")
                .and_then(Value::as_str)
                .unwrap_or_default();
            String::from_utf8_lossy(
                &base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .unwrap_or_default(),
            )
            .into_owned()
        })
        .collect()
}

async fn mutating_ca_bundles(env: &TestEnv) -> Vec<String> {
    ca_bundles::<MutatingWebhookConfiguration>(env, MUTATING).await
}

async fn validating_ca_bundles(env: &TestEnv) -> Vec<String> {
    ca_bundles::<ValidatingWebhookConfiguration>(env, VALIDATING).await
}

fn cloneset_yaml(name: &str, selector_app: &str, label_app: &str, extra_strategy: &str) -> String {
    format!(
        r#"apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: {name}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: "{selector_app}"
  updateStrategy: {{{extra_strategy}}}
  template:
    metadata:
      labels:
        app: "{label_app}"
    spec:
      containers:
      - name: main
        image: nginx:1.25
"#
    )
}

/// `kubectl apply` of `yaml` in namespace `ns`.
fn apply_in(ns: &str, yaml: &str) -> kruise_e2e::KubectlOutput {
    kubectl(&["apply", "-n", ns, "-f", "-"], Some(yaml)).unwrap()
}

/// A valid CloneSet created with dry run: goes through both admission webhooks, stores nothing.
async fn dry_run_cloneset(api: &Api<CloneSet>, name: &str) -> Result<(), kube::Error> {
    let cs: CloneSet = serde_yaml_ng::from_str(&cloneset_yaml(name, "ok", "ok", "")).unwrap();
    api.create(
        &PostParams {
            dry_run: true,
            ..Default::default()
        },
        &cs,
    )
    .await
    .map(|_| ())
}

/// Sum of the manager's metric samples whose line passes `keep`.
async fn metric_sum(port: u16, keep: impl Fn(&str) -> bool) -> f64 {
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let (_, body) = kruise_e2e::manager::http_get(addr, "/metrics")
        .await
        .expect("metrics answer");
    body.lines()
        .filter(|l| keep(l))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Sum of the manager's `rest_client_requests_total` with `method="GET"`.
async fn manager_gets(port: u16) -> f64 {
    metric_sum(port, |l| {
        l.starts_with("rest_client_requests_total{") && l.contains(r#"method="GET""#)
    })
    .await
}

/// Writes the manager made to webhook configurations (`kruise_rest_client_writes_total`).
async fn configuration_writes(port: u16) -> f64 {
    metric_sum(port, |l| {
        l.starts_with("kruise_rest_client_writes_total{") && l.contains("webhookconfigurations")
    })
    .await
}

/// A resync that finds the configurations as the manager left them writes nothing (it used to
/// re-apply both every 20 s); an edited configuration is still repaired
/// (`deleted_secret_and_corrupted_ca_bundles_heal_themselves`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_resync_writes_no_webhook_configuration() {
    let f = setup("wh-idle").await;
    let before = configuration_writes(f.manager.metrics_port).await;
    assert!(before >= 2.0, "the first sync applies both configurations");
    let gets = manager_gets(f.manager.metrics_port).await;
    // Past one resync period (20 s).
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert!(
        manager_gets(f.manager.metrics_port).await > gets,
        "a resync ran (it reads the Secret and the configurations)"
    );
    assert_eq!(
        configuration_writes(f.manager.metrics_port).await,
        before,
        "an idle resync wrote a webhook configuration"
    );
}

/// The CloneSet webhook judges the pods newly named in `scaleStrategy.podsToDelete` (they must
/// exist, not be terminating and belong to the CloneSet: OpenKruise's `validateScaleStrategy`)
/// by reading the manager's shared pod cache — no API call per admission, as OpenKruise's
/// cache-backed client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_to_delete_are_judged_from_the_shared_pod_cache() {
    let f = setup("wh-lookup").await;
    let ns = f.ns.name();
    let pods: Api<Pod> = Api::namespaced(f.env.client.clone(), ns);
    let stray: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stray", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &stray).await.unwrap();
    let api: Api<CloneSet> = Api::namespaced(f.env.client.clone(), ns);
    let admit = |name: String, to_delete: &'static str| {
        let api = api.clone();
        async move {
            let mut cs: CloneSet =
                serde_yaml_ng::from_str(&cloneset_yaml(&name, "ok", "ok", "")).unwrap();
            cs.spec.scale_strategy =
                Some(serde_json::from_value(json!({"podsToDelete": [to_delete]})).unwrap());
            let dry = PostParams {
                dry_run: true,
                ..Default::default()
            };
            match api.create(&dry, &cs).await {
                Ok(_) => "admitted".to_owned(),
                Err(e) => e.to_string(),
            }
        }
    };
    // The pod reaches the cache through its watch.
    let denial = wait_for("the webhook to see the stray pod", TIMEOUT, || async {
        let d = admit("probe".into(), "stray").await;
        (!d.contains("not found")).then_some(d)
    })
    .await
    .unwrap();
    assert!(
        denial.contains("spec.scaleStrategy.podsToDelete")
            && denial.contains("owner is not this CloneSet"),
        "{denial}"
    );
    let missing = admit("ghost".into(), "ghost").await;
    assert!(
        missing.contains("spec.scaleStrategy.podsToDelete") && missing.contains("not found"),
        "{missing}"
    );

    // Many admissions, few GETs: the lookups are cache reads.
    let before = manager_gets(f.manager.metrics_port).await;
    let validate = |suffix: &'static str| {
        move |l: &str| {
            l.starts_with(suffix)
                && l.contains("webhook=\"/validate-apps-kruise-io-v1alpha1-cloneset\"")
        }
    };
    let port = f.manager.metrics_port;
    let cpu_before = metric_sum(port, validate("kruise_webhook_cpu_seconds_count")).await;
    const N: usize = 30;
    for i in 0..N {
        let d = admit(format!("load-{i}"), "stray").await;
        assert!(d.contains("owner is not this CloneSet"), "{d}");
    }
    let gets = manager_gets(f.manager.metrics_port).await - before;
    assert!(
        gets < (N / 2) as f64,
        "{gets} GET requests for {N} admissions: the webhook reads pods live"
    );
    // Each admission's handler CPU time is recorded beside its latency, and is no more than it.
    let cpu_count = metric_sum(port, validate("kruise_webhook_cpu_seconds_count")).await;
    assert!(
        cpu_count - cpu_before >= (N / 2) as f64,
        "handler CPU time recorded for {} of {N} admissions",
        cpu_count - cpu_before
    );
    let cpu_sum = metric_sum(port, validate("kruise_webhook_cpu_seconds_sum")).await;
    let wall_sum = metric_sum(
        port,
        validate("controller_runtime_webhook_latency_seconds_sum"),
    )
    .await;
    assert!(
        cpu_sum > 0.0 && cpu_sum <= wall_sum,
        "handler CPU {cpu_sum} s vs latency {wall_sum} s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_clonesets_are_rejected_with_the_field_named() {
    let f = setup("wh-reject").await;
    let ns = f.ns.name();

    let out = apply_in(ns, &cloneset_yaml("mismatch", "a", "b", ""));
    assert!(
        !out.success,
        "a CloneSet whose selector does not match its labels was accepted"
    );
    assert!(
        out.stderr.contains("vcloneset.kb.io")
            && out.stderr.contains("spec.template.metadata.labels")
            && out.stderr.contains("selector"),
        "denial does not name the field: {}",
        out.stderr
    );

    let out = apply_in(
        ns,
        &cloneset_yaml("partition", "a", "a", r#"partition: "abc""#),
    );
    assert!(!out.success, "partition \"abc\" was accepted");
    assert!(
        out.stderr.contains("spec.updateStrategy.partition") && out.stderr.contains("abc"),
        "denial does not name the field: {}",
        out.stderr
    );

    let out = apply_in(
        ns,
        &cloneset_yaml("surge", "a", "a", r#"type: InPlaceOnly, maxSurge: 1"#),
    );
    assert!(!out.success, "maxSurge with InPlaceOnly was accepted");
    assert!(
        out.stderr.contains("spec.updateStrategy.maxSurge"),
        "{}",
        out.stderr
    );

    // A valid one passes, and an immutable field cannot change afterwards.
    let out = apply_in(ns, &cloneset_yaml("valid", "a", "a", ""));
    assert!(out.success, "a valid CloneSet was refused: {}", out.stderr);
    let out = kubectl(
        &[
            "patch", "-n", ns, "clonesets.apps.kruise.io", "valid", "--type", "merge", "-p",
            r#"{"spec":{"selector":{"matchLabels":{"app":"a","tier":"x"}},"template":{"metadata":{"labels":{"app":"a","tier":"x"}}}}}"#,
        ],
        None,
    )
    .unwrap();
    assert!(!out.success, "changing the selector was accepted");
    assert!(
        out.stderr
            .contains("spec: Forbidden: updates to cloneset spec for fields other than"),
        "{}",
        out.stderr
    );

    // Nothing refused was stored.
    let api: Api<CloneSet> = Api::namespaced(f.env.client.clone(), ns);
    assert!(api.get("mismatch").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloneset_without_defaults_reads_back_with_openkruise_defaults() {
    let f = setup("wh-defaults").await;
    let ns = f.ns.name();
    let out = apply_in(ns, &cloneset_yaml("plain", "a", "a", ""));
    assert!(out.success, "{}", out.stderr);
    let api: Api<DynamicObject> = Api::namespaced_with(
        f.env.client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
            "clonesets",
        ),
    );
    let cs = serde_json::to_value(api.get("plain").await.unwrap()).unwrap();
    let spec = &cs["spec"];
    assert_eq!(spec["revisionHistoryLimit"], 10, "{spec}");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0}),
        "{spec}"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["securityContext"], json!({}));
    let c = &pod["containers"][0];
    // OpenKruise defaults regular containers to Always, whatever the tag, so that an in-place
    // image change always pulls.
    assert_eq!(c["imagePullPolicy"], "Always", "{c}");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
}

fn asts_api(env: &TestEnv, ns: &str, version: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("apps.kruise.io", version, "StatefulSet"),
            "statefulsets",
        ),
    )
}

fn asts(name: &str, version: &str, extra_spec: Value) -> DynamicObject {
    let mut v = json!({
        "apiVersion": format!("apps.kruise.io/{version}"),
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 0,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                                  "containers": [{"name": "main", "image": "nginx:1.25"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "partition": 0, "maxUnavailable": 2, "podUpdatePolicy": "InPlaceIfPossible",
                "inPlaceUpdateStrategy": {"gracePeriodSeconds": 5}}},
        },
    });
    for (k, val) in extra_spec.as_object().unwrap() {
        v["spec"][k] = val.clone();
    }
    serde_json::from_value(v).unwrap()
}

/// Runs, verbatim, the one `kubectl apply` command of README.md that contains `needle` (from a
/// code block or inline code; a trailing `# comment` dropped), in the repository root with the
/// testbed's kubectl and kubeconfig, and fails the test if it fails.
fn run_readme_command(needle: &str) {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut found: Vec<String> = Vec::new();
    for line in readme.lines() {
        let candidates: Vec<&str> = if line.trim_start().starts_with("kubectl ") {
            vec![line.trim()]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for c in candidates {
            let c = c.split(" #").next().unwrap_or(c).trim();
            if c.starts_with("kubectl apply") && c.contains(needle) && !found.iter().any(|f| f == c)
            {
                found.push(c.to_owned());
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "README commands containing {needle:?}: {found:?}"
    );
    let kubectl = kruise_e2e::kubectl_path().unwrap();
    let path = format!(
        "{}:{}",
        kubectl.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", &found[0]])
        .current_dir(repo_root())
        .env("PATH", path)
        .env("KUBECONFIG", testbed_kubeconfig())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "README command `{}` failed: {}{}",
        found[0],
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_statefulset_converts_between_v1alpha1_and_v1beta1_without_loss() {
    let f = setup("wh-convert").await;
    let ns = f.ns.name();
    // Install exactly as the README says, verbatim: the CRDs (`kubectl apply --server-side -f
    // config/crd/bases`), then the conversion webhook on. The CRDs with a conversion webhook are
    // deleted first so that the README's install owns them alone (as on a fresh cluster, where
    // a conversion patch applied by the same field manager would drop the rest of the CRD).
    let crds: Api<CustomResourceDefinition> = Api::all(f.env.client.clone());
    for name in [
        ASTS_CRD,
        "daemonsets.apps.kruise.io",
        "sidecarsets.apps.kruise.io",
    ] {
        let out = kubectl(
            &["delete", "crd", name, "--ignore-not-found", "--wait=true"],
            None,
        )
        .unwrap();
        assert!(out.success, "{}", out.stderr);
    }
    run_readme_command("kubectl apply --server-side -f config/crd/bases");
    install_crds(&f.env).await.expect("CRDs Established");
    // The manager then points the conversion webhook at itself with its caBundle.
    run_readme_command("config/webhook/crd-conversion/");
    let want_url = format!("https://127.0.0.1:{}/convert", f.port);
    wait_for(
        "the StatefulSet CRD to point at the manager's /convert",
        HEAL,
        || {
            let crds = crds.clone();
            let want_url = want_url.clone();
            async move {
                let crd = crds.get(ASTS_CRD).await.ok()?;
                let cc = crd.spec.conversion?.webhook?.client_config?;
                (cc.url.as_deref() == Some(want_url.as_str()) && cc.ca_bundle.is_some())
                    .then_some(())
            }
        },
    )
    .await
    .unwrap();

    let a1 = asts_api(&f.env, ns, "v1alpha1");
    let b1 = asts_api(&f.env, ns, "v1beta1");
    let pp = PostParams::default();
    // The API server applies a CRD change to its serving storage asynchronously (from its own
    // CRD informer): right after the CRD reads back with the manager's URL, a request can still
    // go to the previous `service` client config (CI saw a GET fail on
    // `kruise-webhook-service.kruise-system.svc`). Wait until a probe object round-trips
    // through the manager's /convert in both directions before asserting on conversions.
    wait_for(
        "the API server to convert StatefulSets through the manager",
        HEAL,
        || {
            let (a1, b1, pp) = (a1.clone(), b1.clone(), pp.clone());
            async move {
                match a1.create(&pp, &asts("probe", "v1alpha1", json!({}))).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(_) => return None,
                }
                b1.get("probe").await.ok()?;
                a1.get("probe").await.ok()
            }
        },
    )
    .await
    .unwrap();

    // Created as v1alpha1, read as v1beta1: every v1alpha1 field is there.
    a1.create(&pp, &asts("from-alpha", "v1alpha1", json!({})))
        .await
        .unwrap();
    let as_beta = serde_json::to_value(b1.get("from-alpha").await.unwrap()).unwrap();
    let as_alpha = serde_json::to_value(a1.get("from-alpha").await.unwrap()).unwrap();
    assert_eq!(as_beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(
        as_beta["spec"], as_alpha["spec"],
        "v1alpha1 fields differ when read as v1beta1"
    );
    assert_eq!(
        as_beta["spec"]["updateStrategy"]["rollingUpdate"]["inPlaceUpdateStrategy"]["gracePeriodSeconds"],
        5
    );

    // Created as v1beta1 with v1beta1-only fields, read as v1alpha1, and written back as v1alpha1:
    // the v1beta1-only fields survive.
    let beta_only = json!({
        "reserveOrdinals": [1, 3],
        "scaleStrategy": {"maxUnavailable": 1},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
    });
    b1.create(&pp, &asts("from-beta", "v1beta1", beta_only.clone()))
        .await
        .unwrap();
    // Read as v1alpha1, edited and written back as v1alpha1 — retried on a conflict, as any
    // client does, since the Advanced StatefulSet controller writes the status meanwhile.
    let mut attempts = 0;
    loop {
        let alpha = a1.get("from-beta").await.unwrap();
        let alpha_v = serde_json::to_value(&alpha).unwrap();
        assert_eq!(alpha_v["apiVersion"], "apps.kruise.io/v1alpha1");
        assert!(
            alpha_v["spec"].get("reserveOrdinals").is_none(),
            "v1alpha1 has no reserveOrdinals: {alpha_v}"
        );
        let mut edited = alpha.clone();
        edited
            .metadata
            .labels
            .get_or_insert_default()
            .insert("edited".into(), "as-v1alpha1".into());
        match a1.replace("from-beta", &pp, &edited).await {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 409 && attempts < 10 => attempts += 1,
            Err(e) => panic!("writing the v1alpha1 object: {e}"),
        }
    }
    let beta = serde_json::to_value(b1.get("from-beta").await.unwrap()).unwrap();
    assert_eq!(beta["metadata"]["labels"]["edited"], "as-v1alpha1");
    for (k, v) in beta_only.as_object().unwrap() {
        assert_eq!(
            &beta["spec"][k], v,
            "v1beta1-only field {k} lost through a v1alpha1 write: {beta}"
        );
    }
    let annotations = beta["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(
        !annotations
            .keys()
            .any(|k| k.starts_with("conversion.apps.kruise.io/")),
        "conversion stash leaked into v1beta1: {annotations:?}"
    );

    // Advanced DaemonSet: v1alpha1 `rollingUpdateType: Surging` is stored as `Standard` with
    // `maxSurge: 1, maxUnavailable: 0`, read in either version; the controller's v1beta1 `status.updateRevision` reads as v1alpha1
    // `status.daemonSetHash`.
    let ds_api = |version: &str| -> Api<DynamicObject> {
        Api::namespaced_with(
            f.env.client.clone(),
            ns,
            &ApiResource::from_gvk_with_plural(
                &kube::api::GroupVersionKind::gvk("apps.kruise.io", version, "DaemonSet"),
                "daemonsets",
            ),
        )
    };
    let (ds_a1, ds_b1) = (ds_api("v1alpha1"), ds_api("v1beta1"));
    let ds: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
        "metadata": {"name": "daemon"},
        "spec": {"selector": {"matchLabels": {"app": "daemon"}},
                 "template": {"metadata": {"labels": {"app": "daemon"}},
                              "spec": {"nodeSelector": {"e2e.kruise-rs.io/no-such-node": "x"},
                                       "containers": [{"name": "main", "image": "nginx:1.25"}]}},
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"rollingUpdateType": "Surging"}}},
    }))
    .unwrap();
    ds_a1.create(&pp, &ds).await.unwrap();
    let beta = wait_for("the DaemonSet status from the controller", TIMEOUT, || {
        let ds_b1 = ds_b1.clone();
        async move {
            let v = serde_json::to_value(ds_b1.get("daemon").await.ok()?).ok()?;
            v["status"]["updateRevision"].is_string().then_some(v)
        }
    })
    .await
    .unwrap();
    assert_eq!(
        beta["spec"]["updateStrategy"]["rollingUpdate"]["rollingUpdateType"],
        "Standard"
    );
    let alpha = serde_json::to_value(ds_a1.get("daemon").await.unwrap()).unwrap();
    // OpenKruise's v1alpha1 defaulting already turned Surging into Standard with a surge of one.
    assert_eq!(
        alpha["spec"]["updateStrategy"]["rollingUpdate"],
        json!({"rollingUpdateType": "Standard", "maxSurge": 1, "maxUnavailable": 0}),
        "{alpha}"
    );
    assert_eq!(
        alpha["status"]["daemonSetHash"], beta["status"]["updateRevision"],
        "v1alpha1 daemonSetHash: {alpha}"
    );
    assert!(alpha["status"].get("updateRevision").is_none());

    // A conversion caBundle overwritten with another CA is repaired, and conversion works again.
    let other = kruise_webhook::certs::generate("127.0.0.1", jiff::Timestamp::now()).unwrap();
    let bogus = b64(&other.ca_cert);
    let corrupt = Patch::<Value>::Merge(
        json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bogus}}}}}),
    );
    crds.patch(ASTS_CRD, &PatchParams::default(), &corrupt)
        .await
        .unwrap();
    let ca = ca_of(
        &Api::<Secret>::namespaced(f.env.client.clone(), ns)
            .get("kruise-webhook-certs")
            .await
            .unwrap(),
    );
    wait_for("the conversion caBundle to be repaired", HEAL, || {
        let crds = crds.clone();
        let ca = ca.clone();
        async move {
            let crd = crds.get(ASTS_CRD).await.ok()?;
            let bundle = crd.spec.conversion?.webhook?.client_config?.ca_bundle?;
            (bundle.0 == ca.as_bytes()).then_some(())
        }
    })
    .await
    .unwrap();
    let again = wait_for(
        "a v1alpha1 read through the repaired webhook",
        TIMEOUT,
        || {
            let a1 = a1.clone();
            async move { a1.get("from-beta").await.ok() }
        },
    )
    .await
    .unwrap();
    assert_eq!(
        again
            .metadata
            .labels
            .unwrap_or_default()
            .get("edited")
            .map(String::as_str),
        Some("as-v1alpha1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_secret_and_corrupted_ca_bundles_heal_themselves() {
    let f = setup("wh-heal").await;
    let ns = f.ns.name();
    let secrets: Api<Secret> = Api::namespaced(f.env.client.clone(), ns);
    let cs_api: Api<CloneSet> = Api::namespaced(f.env.client.clone(), ns);
    let first_ca = ca_of(&secrets.get("kruise-webhook-certs").await.unwrap());
    assert!(
        mutating_ca_bundles(&f.env)
            .await
            .iter()
            .all(|b| *b == first_ca)
    );
    dry_run_cloneset(&cs_api, "probe")
        .await
        .expect("admission works");

    // Secret deleted: a new CA and serving certificate are generated, loaded without a restart,
    // and every caBundle follows.
    secrets
        .delete("kruise-webhook-certs", &DeleteParams::default())
        .await
        .unwrap();
    let new_ca = wait_for("a new certificate Secret", HEAL, || {
        let secrets = secrets.clone();
        let first_ca = first_ca.clone();
        async move {
            let s = secrets.get("kruise-webhook-certs").await.ok()?;
            let ca = ca_of(&s);
            (ca != first_ca).then_some(ca)
        }
    })
    .await
    .unwrap();
    wait_for("caBundles to follow the new CA", TIMEOUT, || {
        let env = f.env.clone();
        let want = new_ca.clone();
        async move {
            let m = mutating_ca_bundles(&env).await;
            let v = validating_ca_bundles(&env).await;
            (!m.is_empty() && !v.is_empty() && m.iter().chain(&v).all(|b| *b == want)).then_some(())
        }
    })
    .await
    .unwrap();
    dry_run_cloneset(&cs_api, "probe")
        .await
        .expect("admission works with the new certificate");

    // caBundle overwritten by "a user or tool": repaired within a minute.
    let bogus_pem = "-----BEGIN CERTIFICATE-----\nbogus\n-----END CERTIFICATE-----\n".to_owned();
    let bogus = b64(&bogus_pem);
    let mapi: Api<MutatingWebhookConfiguration> = Api::all(f.env.client.clone());
    let vapi: Api<ValidatingWebhookConfiguration> = Api::all(f.env.client.clone());
    let jp = |bogus: &str| {
        Patch::<Value>::Json(
            serde_json::from_value(json!([
                {"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": bogus}
            ]))
            .unwrap(),
        )
    };
    mapi.patch(MUTATING, &PatchParams::default(), &jp(&bogus))
        .await
        .unwrap();
    vapi.patch(VALIDATING, &PatchParams::default(), &jp(&bogus))
        .await
        .unwrap();
    assert!(mutating_ca_bundles(&f.env).await.contains(&bogus_pem));
    wait_for("corrupted caBundles to be repaired", HEAL, || {
        let env = f.env.clone();
        let want = new_ca.clone();
        async move {
            let m = mutating_ca_bundles(&env).await;
            let v = validating_ca_bundles(&env).await;
            (m.iter().chain(&v).all(|b| *b == want)).then_some(())
        }
    })
    .await
    .unwrap();
    dry_run_cloneset(&cs_api, "probe")
        .await
        .expect("admission works after the repair");

    // A webhook this manager does not serve (e.g. left by an OpenKruise install) is removed, as
    // OpenKruise's controller does, and the installed list is kept in the `template` annotation.
    let foreign = json!({"op": "add", "path": "/webhooks/-", "value": {
        "name": "mnodeimage.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "failurePolicy": "Ignore",
        "clientConfig": {"url": format!("https://127.0.0.1:{}/mutate-apps-kruise-io-v1alpha1-nodeimage", f.port)},
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "rules": [{"apiGroups": ["apps.kruise.io"], "apiVersions": ["v1alpha1"],
                   "operations": ["CREATE"], "resources": ["nodeimages"]}]}});
    mapi.patch(
        MUTATING,
        &PatchParams::default(),
        &Patch::<Value>::Json(serde_json::from_value(json!([foreign])).unwrap()),
    )
    .await
    .unwrap();
    let pruned = wait_for("the unserved webhook to be removed", HEAL, || {
        let mapi = mapi.clone();
        async move {
            let cfg = mapi.get(MUTATING).await.ok()?;
            let names: Vec<String> = cfg.webhooks.clone()?.into_iter().map(|w| w.name).collect();
            (!names.iter().any(|n| n == "mnodeimage.kb.io")).then_some(cfg)
        }
    })
    .await
    .unwrap();
    let template = pruned
        .metadata
        .annotations
        .unwrap_or_default()
        .get("template")
        .cloned()
        .unwrap_or_default();
    assert!(
        template.contains("mnodeimage.kb.io"),
        "template annotation: {template}"
    );
    dry_run_cloneset(&cs_api, "probe")
        .await
        .expect("admission works after pruning");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_the_manager_keeps_admission_working() {
    let mut f = setup("wh-restart").await;
    let ns = f.ns.name().to_owned();
    let secrets: Api<Secret> = Api::namespaced(f.env.client.clone(), &ns);
    let ca_before = ca_of(&secrets.get("kruise-webhook-certs").await.unwrap());

    // Admission requests all the time, through both webhooks, from several clients at once so
    // that some are in flight on the old process's connections when it stops.
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let load: Vec<_> = (0..4)
        .map(|worker| {
            let api: Api<CloneSet> = Api::namespaced(f.env.client.clone(), &ns);
            let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
            tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    match dry_run_cloneset(&api, &format!("load-{worker}-{i}")).await {
                        Ok(()) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => failures.lock().unwrap().push(e.to_string()),
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Rolling restart: the new process comes up on the same port, then the old one stops.
    let second = WebhookManager::start(&ns, &ns, f.port, "b");
    second.ready().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.manager.terminate();
    let served_before_stop = ok.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    for l in load {
        l.await.unwrap();
    }

    let total_ok = ok.load(Ordering::Relaxed);
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} admissions failed around the restart: {failures:?}",
        failures.len()
    );
    assert!(
        total_ok > served_before_stop + 10,
        "too few admissions after the old manager stopped ({served_before_stop} → {total_ok})"
    );
    // The restarted manager reused the certificates in the Secret.
    let ca_after = ca_of(&secrets.get("kruise-webhook-certs").await.unwrap());
    assert_eq!(
        ca_before, ca_after,
        "the restart replaced a valid certificate"
    );
    assert!(
        mutating_ca_bundles(&f.env)
            .await
            .iter()
            .all(|b| *b == ca_after)
    );
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_webhook_injects_the_container_launch_barrier() {
    // Pods in the manager's own namespace are left alone, as OpenKruise does.
    let f = setup_with("wh-pod", true).await;
    let ns = f.ns.name();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(f.env.client.clone(), ns);
    let pod = |name: &str, ordered: bool| -> k8s_openapi::api::core::v1::Pod {
        let mut v = json!({
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "first", "image": "nginx:1.25"},
                                    {"name": "second", "image": "nginx:1.25"}]},
        });
        if ordered {
            v["metadata"]["annotations"] =
                json!({"apps.kruise.io/container-launch-priority": "Ordered"});
        }
        serde_json::from_value(v).unwrap()
    };
    let created = pods
        .create(&PostParams::default(), &pod("ordered", true))
        .await
        .unwrap();
    let spec = serde_json::to_value(created.spec.unwrap()).unwrap();
    assert_eq!(
        spec["containers"][1]["env"],
        json!([{"name": "KRUISE_CONTAINER_BARRIER", "valueFrom":
            {"configMapKeyRef": {"name": "ordered-barrier", "key": "p_-1"}}}]),
        "{spec}"
    );
    let plain = pods
        .create(&PostParams::default(), &pod("plain", false))
        .await
        .unwrap();
    let spec = serde_json::to_value(plain.spec.unwrap()).unwrap();
    assert!(spec["containers"][1].get("env").is_none(), "{spec}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_certificates_are_used_and_never_rewritten() {
    use kruise_webhook::{certs, controller};
    let _serial = SERIAL.lock().await;
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("wh-external").await.unwrap();
    let _guard = ClusterGuard;
    let port = free_port();

    // What cert-manager would provide: a Secret with tls.crt, tls.key and ca.crt, and the
    // configurations with the CA injected.
    let issued = certs::generate("127.0.0.1", jiff::Timestamp::now()).unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "kruise-webhook-certs"},
        "stringData": {"tls.crt": issued.cert, "tls.key": issued.key, "ca.crt": issued.ca_cert},
    }))
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), ns.name());
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let settings = controller::WebhookSettings {
        namespace: ns.name().to_owned(),
        secret_name: "kruise-webhook-certs".into(),
        endpoint: controller::Endpoint::Url {
            host: "127.0.0.1".into(),
            port,
        },
        renew_before: jiff::SignedDuration::ZERO,
        external_certs: true,
        only_namespace: Some(ns.name().to_owned()),
        name_suffix: None,
        failure_policies: Default::default(),
        timeout_seconds: Some(controller::DEFAULT_TIMEOUT_SECONDS),
        pod_scope: controller::PodScope::Every,
        webhooks: Default::default(),
    };
    let (m, v) = controller::configurations(&settings, &issued.ca_cert);
    let out = kubectl(
        &["apply", "-f", "-"],
        Some(&serde_json::to_string(&m).unwrap()),
    )
    .unwrap();
    assert!(out.success, "{}", out.stderr);
    let out = kubectl(
        &["apply", "-f", "-"],
        Some(&serde_json::to_string(&v).unwrap()),
    )
    .unwrap();
    assert!(out.success, "{}", out.stderr);
    let mapi: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());

    let manager = WebhookManager::start_with(
        ns.name(),
        ns.name(),
        port,
        "a",
        &["--webhook-external-certs"],
    );
    manager.ready().await;
    // The manager keeps the configurations current (server-side apply, without caBundle):
    // the first sync may have taken ownership of the fields it sets; nothing after that.
    let config_rv = mapi.get(MUTATING).await.unwrap().metadata.resource_version;
    let cs_api: Api<CloneSet> = Api::namespaced(env.client.clone(), ns.name());
    dry_run_cloneset(&cs_api, "probe")
        .await
        .expect("admission through the external certificate");
    let out = apply_in(
        ns.name(),
        &cloneset_yaml("partition", "a", "a", r#"partition: "abc""#),
    );
    assert!(
        !out.success && out.stderr.contains("spec.updateStrategy.partition"),
        "{}",
        out.stderr
    );

    // After a resync, nothing the manager does not own was rewritten.
    tokio::time::sleep(Duration::from_secs(22)).await;
    let now = secrets.get("kruise-webhook-certs").await.unwrap();
    assert_eq!(
        now.metadata.resource_version, created.metadata.resource_version,
        "Secret rewritten"
    );
    assert_eq!(
        mapi.get(MUTATING).await.unwrap().metadata.resource_version,
        config_rv,
        "configuration rewritten by an idle resync"
    );
    // The injected caBundle is the issuer's, untouched.
    let want = issued.ca_cert.clone();
    for bundle in mutating_ca_bundles(&env)
        .await
        .into_iter()
        .chain(validating_ca_bundles(&env).await)
    {
        assert_eq!(bundle, want, "a caBundle other than the injected one");
    }
    drop(manager);
}

/// A conversion webhook left on by an earlier run (a stopped manager's `/convert`) makes every
/// request for that kind fail; the e2e CRD install turns it off again, so no test depends on
/// what a previous run or experiment left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_install_resets_a_conversion_webhook_left_behind() {
    let _serial = SERIAL.lock().await;
    let _guard = ClusterGuard;
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("wh-leftover").await.unwrap();
    let dead = format!("https://127.0.0.1:{}/convert", free_port());
    let patch = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": dead}}}}});
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    crds.patch(ASTS_CRD, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let a1 = asts_api(&env, ns.name(), "v1alpha1");
    let pp = PostParams::default();
    // The dead endpoint breaks the kind (v1alpha1 objects are stored as v1beta1).
    let broken = wait_for("requests to fail on the dead /convert", TIMEOUT, || async {
        a1.create(&pp, &asts("probe", "v1alpha1", json!({})))
            .await
            .err()
    })
    .await;
    assert!(
        broken.is_ok(),
        "the leftover conversion webhook did not break the kind"
    );

    install_crds(&env).await.expect("CRDs");
    let crd = crds.get(ASTS_CRD).await.unwrap();
    assert_eq!(
        crd.spec.conversion.map(|c| c.strategy).as_deref(),
        Some("None")
    );
    wait_for(
        "a v1alpha1 StatefulSet to be accepted again",
        TIMEOUT,
        || async {
            a1.create(&pp, &asts("after-reset", "v1alpha1", json!({})))
                .await
                .ok()
        },
    )
    .await
    .unwrap();
}

/// Deletes the (cluster-scoped) SidecarSets a test created, pass or fail.
struct SidecarSetGuard(Vec<String>);

impl Drop for SidecarSetGuard {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = kubectl(
                &[
                    "delete",
                    "sidecarsets.apps.kruise.io",
                    name,
                    "--ignore-not-found",
                ],
                None,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecarsets_get_go_hashes_and_conflicts_are_judged_from_the_cache() {
    use kruise_api::apps::v1beta1::SidecarSet;
    let f = setup("wh-sidecarset").await;
    let tag = f.ns.name().to_owned();
    let (first, second) = (format!("{tag}-a"), format!("{tag}-b"));
    let _cleanup = SidecarSetGuard(vec![first.clone(), second.clone()]);
    let api: Api<SidecarSet> = Api::all(f.env.client.clone());
    let set = |name: &str, app: &str, container: &str| -> SidecarSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": app}},
                // Pinned to the test's namespace: each test manager's SidecarSet webhooks see
                // only the SidecarSets of its namespace (SidecarSets are cluster-scoped).
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tag.as_str()}},
                "containers": [{"name": container, "image": "busybox:1.36",
                    "resources": {"requests": {"cpu": "0.1"}}}],
            }
        }))
        .unwrap()
    };
    let logger = format!("{tag}-logger");
    let created = api
        .create(&PostParams::default(), &set(&first, &tag, &logger))
        .await
        .expect("a valid SidecarSet is admitted");
    // Defaults and the hash annotations, as OpenKruise writes them.
    let annotations = created.metadata.annotations.clone().unwrap_or_default();
    let (hash, without_image) = kruise_engines::sidecarset::hash::hashes_v1beta1(&created);
    assert_eq!(annotations.get("kruise.io/sidecarset-hash"), Some(&hash));
    assert_eq!(
        annotations.get("kruise.io/sidecarset-hash-without-image"),
        Some(&without_image)
    );
    let c = &created.spec.containers.as_ref().unwrap()[0];
    assert_eq!(c.pod_inject_policy.as_deref(), Some("BeforeAppContainer"));
    let requests = c
        .container
        .resources
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    assert_eq!(requests["cpu"].0, "100m");

    // A second SidecarSet injecting a container of the same name into the same pods is refused
    // once the webhook's cache has seen the first; on other pods it is fine.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let denial = wait_for("the webhook to see the first SidecarSet", TIMEOUT, || {
        let api = api.clone();
        let (second, tag, logger, dry) = (second.clone(), tag.clone(), logger.clone(), dry.clone());
        async move {
            match api.create(&dry, &set(&second, &tag, &logger)).await {
                Ok(_) => None,
                Err(e) => Some(e.to_string()),
            }
        }
    })
    .await
    .unwrap();
    assert!(
        denial.contains("vsidecarset.kb.io")
            && denial.contains("spec.containers")
            && denial.contains(&format!("already exist in {first}")),
        "{denial}"
    );
    api.create(&dry, &set(&second, &format!("{tag}-other"), &logger))
        .await
        .expect("no conflict on other pods");

    // On update the containers may change their image, not their name.
    // (read-modify-write retried on conflict: the controller writes the SidecarSet's status)
    let err = kruise_e2e::replace_latest(&api, &first, |s| {
        s.spec.containers.as_mut().unwrap()[0].container.name = "renamed".into();
    })
    .await
    .expect_err("renaming a container was accepted");
    assert!(
        err.to_string().contains("container renamed is not found"),
        "{err}"
    );
    let updated = kruise_e2e::replace_latest(&api, &first, |s| {
        s.spec.containers.as_mut().unwrap()[0].container.image = Some("busybox:1.37".into());
    })
    .await
    .expect("an image change is admitted");
    let after = updated.metadata.annotations.unwrap_or_default();
    assert_ne!(after.get("kruise.io/sidecarset-hash"), Some(&hash));
    assert_eq!(
        after.get("kruise.io/sidecarset-hash-without-image"),
        Some(&without_image),
        "only the image changed"
    );
}
