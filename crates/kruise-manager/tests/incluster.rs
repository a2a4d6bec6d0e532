//! kruise-rs installed the way users install it (#34 item 3): the images of `hack/image/build.sh`
//! in the testbed's registry, the Helm chart `charts/kruise-rs`, and the manager's two replicas
//! and the daemon running as pods on real nodes (containerd + kubelet), on a testbed of the
//! test's own (one kwok node for the workloads' pods, two real nodes).
//!
//! Checked: `helm install --wait` succeeds with the chart's defaults plus the testbed's
//! addresses; both manager replicas and a daemon per real node are Ready there; the webhook
//! configurations point at Service kruise-webhook-service and carry the manager's CA; the API
//! server reaches the webhooks through that Service (defaulting, SidecarSet injection, the
//! StatefulSet conversion webhook); a CloneSet and an Advanced StatefulSet with an injected
//! SidecarSet sidecar run and roll out in place. Then the leader is lost twice — its pod deleted
//! (a rollout, a drain) and its process killed (a crash: the Lease is not released) — while an
//! admission is sent every 100 ms: the other replica must take the Lease within the lease time
//! and the controllers must work again. Failover times and failed admissions are printed (run
//! with `--nocapture`); a graceful loss must fail no admission.
//!
//! The images hold the debug binaries the suite builds anyway (`build.sh --dev`);
//! `KRUISE_E2E_RELEASE_IMAGES=1` runs the same test on the release images `make image` ships.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::install::{ImageKind, helm, push_images, testbed_values};
use kruise_e2e::testbed::OwnTestbed;
use kruise_e2e::{dynamic_api, dynamic_object, kubectl_path, pod_ready, wait_for, wait_for_list};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// Port block of this test's testbed (the shared one uses 16440, modular.rs 23440).
const BASE: u16 = 24440;
const TIMEOUT: Duration = Duration::from_secs(180);
/// The manager's `--leader-election-lease-duration` (the chart keeps OpenKruise's 15 s).
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// `--leader-election-retry-period` (2 s): how often a standby looks at the Lease.
const RETRY_PERIOD: Duration = Duration::from_secs(2);
const SYSTEM: &str = "kruise-system";
const APPS: &str = "apps";

fn dynamic(
    client: &Client,
    ns: Option<&str>,
    gvk: (&str, &str, &str),
    plural: &str,
) -> Api<DynamicObject> {
    dynamic_api(client, ns, gvk, plural)
}

fn clonesets(client: &Client) -> Api<DynamicObject> {
    dynamic(
        client,
        Some(APPS),
        ("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    )
}

fn object(v: Value) -> DynamicObject {
    dynamic_object(v)
}

fn status(o: &DynamicObject, field: &str) -> i64 {
    o.data["status"][field].as_i64().unwrap_or(0)
}

/// Generation observed, `replicas` ready and updated, and nothing left of an older revision.
fn rolled_out(o: &DynamicObject, replicas: i64) -> bool {
    o.data["status"]["observedGeneration"].as_i64() == o.metadata.generation
        && status(o, "readyReplicas") == replicas
        && status(o, "updatedReplicas") == replicas
        && status(o, "updatedReadyReplicas") == replicas
}

async fn ready_pods(api: &Api<Pod>, selector: &str, n: usize, what: &str) -> Vec<Pod> {
    wait_for_list(
        api,
        &ListParams::default().labels(selector),
        what,
        TIMEOUT,
        |pods| {
            pods.len() == n
                && pods
                    .iter()
                    .all(|p| p.metadata.deletion_timestamp.is_none() && pod_ready(p))
        },
    )
    .await
    .expect(what)
}

/// The holder of the `kruise-manager` Lease: identity `<pod name>_<uuid>`, new for every
/// process (a killed container restarted in the same pod is another holder).
async fn leader(leases: &Api<Lease>) -> Option<String> {
    let lease = leases.get_opt("kruise-manager").await.ok()??;
    let holder = lease.spec?.holder_identity?;
    let pod = holder.split_once('_')?.0.to_string();
    (!pod.is_empty()).then_some(holder)
}

/// The pod of a holder identity `<pod name>_<uuid>`.
fn pod_of(holder: &str) -> String {
    holder.split_once('_').map_or(holder, |h| h.0).to_string()
}

/// Sends a server-side dry-run CloneSet create (both CloneSet webhooks, through the Service)
/// every 100 ms until stopped; counts answers and failures.
struct AdmissionProbe {
    sent: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl AdmissionProbe {
    fn start(client: &Client) -> Self {
        let (sent, failed, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let api = clonesets(client);
        let (s, f, st) = (sent.clone(), failed.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut errors = Vec::new();
            let pp = PostParams {
                dry_run: true,
                ..Default::default()
            };
            let mut i = 0u64;
            while !st.load(Ordering::Relaxed) {
                i += 1;
                let cs = object(json!({
                    "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                    "metadata": {"name": format!("probe-{i}")},
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}},
                        "template": {"metadata": {"labels": {"app": "probe"}},
                            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
                }));
                s.fetch_add(1, Ordering::Relaxed);
                // A defaulted object proves the mutating webhook answered.
                match api.create(&pp, &cs).await {
                    Ok(o) if o.data["spec"]["updateStrategy"]["type"] == "ReCreate" => {}
                    Ok(_) => {
                        f.fetch_add(1, Ordering::Relaxed);
                        errors.push("created without the webhook's defaults".into());
                    }
                    Err(e) => {
                        f.fetch_add(1, Ordering::Relaxed);
                        errors.push(match e {
                            kube::Error::Api(s) => s.message,
                            e => e.to_string(),
                        });
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            errors
        });
        Self {
            sent,
            failed,
            stop,
            task,
        }
    }

    /// Stops; returns (sent, failed, the first distinct failure messages).
    async fn finish(self) -> (u64, u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut errors = self.task.await.expect("probe task");
        errors.dedup();
        errors.truncate(5);
        (
            self.sent.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            errors,
        )
    }
}

/// The host PID of the manager container of pod `pod` on real node `node` (from its crictl).
fn manager_pid(tb: &OwnTestbed, node: &str, pod: &str) -> u32 {
    let crictl = kubectl_path()
        .expect("testbed bin")
        .with_file_name("crictl");
    let config = tb.dir().join("realnode").join(node).join("crictl.yaml");
    let run = |args: &[&str]| -> Value {
        let out = std::process::Command::new(&crictl)
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .expect("crictl");
        assert!(
            out.status.success(),
            "crictl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("crictl json")
    };
    let list = run(&[
        "ps",
        "--name",
        "^manager$",
        "--label",
        &format!("io.kubernetes.pod.name={pod}"),
        "-o",
        "json",
    ]);
    let id = list["containers"][0]["id"]
        .as_str()
        .expect("the manager container")
        .to_string();
    let info = run(&["inspect", &id]);
    info["info"]["pid"].as_u64().expect("pid") as u32
}

/// Loses the leader (`how`), measures how long until the other replica holds the Lease, and
/// checks the controllers act again (a scale of the CloneSet `web` to `replicas`).
async fn lose_leader(
    tb: &OwnTestbed,
    client: &Client,
    how: &str,
    replicas: i64,
) -> (Duration, u64, u64) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), SYSTEM);
    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
    let old = wait_for("a leader", TIMEOUT, || leader(&leases))
        .await
        .expect("leader");
    // Both replicas serve admission before the loss.
    ready_pods(
        &pods,
        "control-plane=controller-manager",
        2,
        "2 Ready manager pods",
    )
    .await;
    let probe = AdmissionProbe::start(client);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t0 = Instant::now();
    let old_pod = pod_of(&old);
    match how {
        "delete" => {
            pods.delete(&old_pod, &DeleteParams::default())
                .await
                .expect("delete the leader pod");
        }
        "kill" => {
            let pod = pods.get(&old_pod).await.expect("leader pod");
            let node = pod.spec.and_then(|s| s.node_name).expect("scheduled");
            let pid = manager_pid(tb, &node, &old_pod);
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .expect("kill");
            assert!(status.success(), "kill -KILL {pid}");
        }
        _ => unreachable!(),
    }
    // Another process: the standby replica, or (kill) the killed container restarted in the
    // same pod if it comes back before the Lease expires — either way a live manager leads.
    let new = wait_for(
        "another manager process takes the Lease",
        LEASE_DURATION * 3,
        || {
            let leases = leases.clone();
            let old = old.clone();
            async move { leader(&leases).await.filter(|p| *p != old) }
        },
    )
    .await
    .expect("failover");
    let failover = t0.elapsed();
    // The new leader's controllers work: scale the CloneSet.
    let api = clonesets(client);
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .expect("scale");
    wait_for("the new leader scales the CloneSet", TIMEOUT, || {
        let api = api.clone();
        async move {
            api.get("web")
                .await
                .ok()
                .filter(|o| rolled_out(o, replicas))
        }
    })
    .await
    .expect("scaled by the new leader");
    // Admissions keep going until the lost replica is back (kill) or replaced (delete).
    ready_pods(
        &pods,
        "control-plane=controller-manager",
        2,
        "2 Ready manager pods again",
    )
    .await;
    let (sent, failed, errors) = probe.finish().await;
    println!(
        "leader lost by {how}: {old} -> {new} in {:.1} s; admissions during the loss: {sent} sent, \
         {failed} failed {errors:?}",
        failover.as_secs_f64()
    );
    assert!(
        failover <= LEASE_DURATION + RETRY_PERIOD + Duration::from_secs(3),
        "failover by {how} took {failover:?} (lease {LEASE_DURATION:?})"
    );
    (failover, sent, failed)
}

#[tokio::test]
async fn helm_install_on_real_nodes_then_leader_failover() {
    let tb = OwnTestbed::up("incluster", BASE, 1, 2).expect("testbed");
    let client = tb.client().await.expect("client");
    let registry = tb.env_var("KRUISE_TESTBED_REGISTRY").expect("registry");
    let t = Instant::now();
    let tag = push_images(&registry, ImageKind::from_env()).expect("images");
    println!(
        "images {registry}/kruise-rs/*:{tag} in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    let values = testbed_values(&tb, &tag).expect("values");
    let values = values.to_str().expect("path");
    let t = Instant::now();
    helm(
        &tb,
        &[
            "install",
            "kruise",
            "charts/kruise-rs",
            "-f",
            values,
            "--wait",
            "--timeout",
            "5m",
        ],
    )
    .expect("helm install");
    println!("helm install --wait: {:.0} s", t.elapsed().as_secs_f64());

    // Where it runs: the manager's replicas and one daemon per real node, all Ready.
    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
    let nodes: Api<Node> = Api::all(client.clone());
    let managers = ready_pods(
        &pods,
        "control-plane=controller-manager",
        2,
        "2 Ready manager pods",
    )
    .await;
    let daemons = ready_pods(&pods, "control-plane=daemon", 2, "2 Ready daemon pods").await;
    let mut daemon_nodes = Vec::new();
    for p in managers.iter().chain(&daemons) {
        let node = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .expect("scheduled");
        let labels = nodes.get(&node).await.expect("node").labels().clone();
        assert_eq!(
            labels.get("type").map(String::as_str),
            Some("real"),
            "{} on {node}",
            p.name_any()
        );
        if p.labels().get("control-plane").map(String::as_str) == Some("daemon") {
            daemon_nodes.push(node);
        }
    }
    daemon_nodes.sort();
    daemon_nodes.dedup();
    assert_eq!(daemon_nodes.len(), 2, "a daemon per real node");

    // The webhooks are called through the Service, with the CA the manager wrote.
    let mutating = dynamic(
        &client,
        None,
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        "mutatingwebhookconfigurations",
    );
    let m = mutating
        .get("kruise-mutating-webhook-configuration")
        .await
        .expect("configuration");
    for w in m.data["webhooks"].as_array().expect("webhooks") {
        assert_eq!(
            w["clientConfig"]["service"]["name"], "kruise-webhook-service",
            "{w}"
        );
        assert_eq!(w["clientConfig"]["service"]["namespace"], SYSTEM, "{w}");
        assert!(
            w["clientConfig"]["caBundle"]
                .as_str()
                .is_some_and(|c| !c.is_empty()),
            "{w}"
        );
    }

    tb.kubectl(&["create", "namespace", APPS], None)
        .expect("namespace");
    let sidecarsets = dynamic(
        &client,
        None,
        ("apps.kruise.io", "v1alpha1", "SidecarSet"),
        "sidecarsets",
    );
    sidecarsets
        .create(&PostParams::default(), &object(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "log-agent"},
            "spec": {"selector": {"matchLabels": {"sidecar": "log-agent"}},
                "containers": [{"name": "log-agent", "image": "busybox:1.36", "command": ["sleep", "3600"]}]},
        })))
        .await
        .expect("SidecarSet");
    // CloneSet: defaulted by mcloneset (through the Service), pods injected by mpod.
    let cs = clonesets(&client);
    let created = cs
        .create(
            &PostParams::default(),
            &object(json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": "web"},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "updateStrategy": {"type": "InPlaceIfPossible"},
                    "template": {"metadata": {"labels": {"app": "web", "sidecar": "log-agent"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
            })),
        )
        .await
        .expect("CloneSet");
    assert_eq!(
        created.data["spec"]["revisionHistoryLimit"], 10,
        "defaulted by mcloneset"
    );
    // Advanced StatefulSet through v1beta1 (the CRD's conversion webhook, through the Service).
    let asts = dynamic(
        &client,
        Some(APPS),
        ("apps.kruise.io", "v1beta1", "StatefulSet"),
        "statefulsets",
    );
    asts.create(&PostParams::default(), &object(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}},
            "template": {"metadata": {"labels": {"app": "db", "sidecar": "log-agent"}},
                "spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                    "containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    })))
    .await
    .expect("Advanced StatefulSet");
    let asts_v1alpha1 = dynamic(
        &client,
        Some(APPS),
        ("apps.kruise.io", "v1alpha1", "StatefulSet"),
        "statefulsets",
    );

    let app_pods: Api<Pod> = Api::namespaced(client.clone(), APPS);
    for (api, name, n) in [(&cs, "web", 3), (&asts, "db", 2)] {
        wait_for(&format!("{name} rolled out"), TIMEOUT, || async move {
            api.get(name).await.ok().filter(|o| rolled_out(o, n))
        })
        .await
        .expect("workload ready");
    }
    asts_v1alpha1
        .get("db")
        .await
        .expect("the StatefulSet read as v1alpha1 (conversion)");
    let before = app_pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items;
    assert_eq!(before.len(), 5);
    for p in &before {
        let containers: Vec<_> = p
            .spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert!(
            containers.contains(&"log-agent".to_string()),
            "{} has no sidecar: {containers:?}",
            p.name_any()
        );
    }

    // In-place rollouts of both.
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}});
    for (api, name, n) in [(&cs, "web", 3), (&asts, "db", 2)] {
        api.patch(name, &PatchParams::default(), &Patch::Merge(image.clone()))
            .await
            .expect("update");
        wait_for(
            &format!("{name} updated in place"),
            TIMEOUT,
            || async move {
                api.get(name).await.ok().filter(|o| {
                    o.data["status"]["updateRevision"] == o.data["status"]["currentRevision"]
                        && rolled_out(o, n)
                })
            },
        )
        .await
        .expect("in-place rollout");
    }
    let after = app_pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items;
    let uids = |pods: &[Pod]| {
        let mut u: Vec<_> = pods.iter().map(|p| p.uid().unwrap_or_default()).collect();
        u.sort();
        u
    };
    assert_eq!(uids(&before), uids(&after), "in place: the same pods");
    for p in &after {
        let main = p
            .spec
            .as_ref()
            .unwrap()
            .containers
            .iter()
            .find(|c| c.name == "main")
            .unwrap();
        assert_eq!(
            main.image.as_deref(),
            Some("nginx:1.26"),
            "{}",
            p.name_any()
        );
    }

    // Failover, graceful then a crash.
    let (_, _, failed) = lose_leader(&tb, &client, "delete", 4).await;
    assert_eq!(
        failed, 0,
        "admissions failed while a replica shut down gracefully"
    );
    lose_leader(&tb, &client, "kill", 5).await;

    helm(&tb, &["uninstall", "kruise", "--wait"]).expect("helm uninstall");
}
