//! Admission that cannot take the cluster down (#21), on the real testbed: with the manager
//! killed (its webhook configurations registered, nothing answering), pods nothing of Kruise
//! acts on are created as if there were no manager, while OpenKruise's configuration (every pod
//! through a failing webhook) rejects them; pods a SidecarSet selects are rejected rather than
//! created without their sidecar (`Fail`), or — under `Ignore` — created, then reported and,
//! with the opt-in, replaced once the manager is back; the manager's own namespace never calls
//! its webhooks; the WorkloadSpread and PersistentPodState terms refuse only the pods they
//! cover. Each test runs its own manager restricted to its namespace.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, TestNamespace, install_crds, kubectl, wait_for};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(180);

async fn env() -> TestEnv {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    env
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "strategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "busybox:1.34"}]}}},
    }))
    .unwrap()
}

async fn ready_pods(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    ns.api::<Pod>()
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect()
}

async fn wait_ready(ns: &TestNamespace, app: &str, n: usize) -> Duration {
    let start = Instant::now();
    wait_for(&format!("{n} ready pods of {app}"), TIMEOUT, || async {
        (ready_pods(ns, app).await.len() == n).then_some(())
    })
    .await
    .unwrap();
    start.elapsed()
}

/// `FailedCreate` Events of the ReplicaSets in `ns` that name the webhook.
async fn webhook_create_failures(ns: &TestNamespace) -> usize {
    ns.api::<Event>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some("FailedCreate")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("mpod.kb.io"))
        })
        .count()
}

fn containers(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

/// The first acceptance test: the manager killed, 100 pods of a Deployment in a
/// namespace without Kruise objects become Ready (the time is printed beside the same
/// Deployment with no manager at all; `hack/bench/admission.sh` compares them at scale), and
/// `kubectl run` works; under OpenKruise's configuration (`--pod-webhook-scope all`) the same
/// creates are rejected.
#[tokio::test]
async fn a_killed_manager_blocks_no_pod_that_kruise_does_not_act_on() {
    let env = env().await;
    // Baseline: no manager, no webhook configuration for this namespace.
    let free = env.namespace("scope-free").await.unwrap();
    free.api::<Deployment>()
        .create(&PostParams::default(), &deployment("web", 100))
        .await
        .unwrap();
    let baseline = wait_ready(&free, "web", 100).await;

    let ns = env.namespace("scope-needed").await.unwrap();
    let mut manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()),
        TIMEOUT,
    )
    .await;
    manager.kill();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("web", 100))
        .await
        .unwrap();
    let with_dead_manager = wait_ready(&ns, "web", 100).await;
    assert_eq!(webhook_create_failures(&ns).await, 0);
    eprintln!(
        "100 pods Ready: {with_dead_manager:?} with the manager killed, {baseline:?} with no manager"
    );
    let out = kubectl(
        &[
            "run",
            "probe",
            "-n",
            ns.name(),
            "--image=busybox:1.34",
            "--restart=Never",
        ],
        None,
    )
    .unwrap();
    assert!(out.success, "kubectl run: {}", out.stderr);

    // OpenKruise's configuration: every pod goes through the dead webhook and is refused.
    let all = env.namespace("scope-all").await.unwrap();
    let mut manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), all.name())
            .args(&["--pod-webhook-scope", "all"]),
        TIMEOUT,
    )
    .await;
    manager.kill();
    all.api::<Deployment>()
        .create(&PostParams::default(), &deployment("web", 10))
        .await
        .unwrap();
    wait_for("FailedCreate naming mpod.kb.io", TIMEOUT, || async {
        (webhook_create_failures(&all).await > 0).then_some(())
    })
    .await
    .unwrap();
    let created = all.api::<Pod>().list(&ListParams::default()).await.unwrap();
    assert!(
        created.items.is_empty(),
        "pods were created past a failing webhook"
    );
    let out = kubectl(
        &[
            "run",
            "probe",
            "-n",
            all.name(),
            "--image=busybox:1.34",
            "--restart=Never",
        ],
        None,
    )
    .unwrap();
    assert!(!out.success, "kubectl run passed a failing webhook");
    assert!(out.stderr.contains("mpod.kb.io"), "{}", out.stderr);
}

async fn sidecarset(
    env: &TestEnv,
    ns: &str,
    name: &str,
    app: &str,
    annotations: Value,
) -> SidecarSet {
    sidecarset_with(env, ns, name, app, annotations, json!({})).await
}

/// [`sidecarset`] with more `spec` fields (`extra`, merged at the top of the spec).
async fn sidecarset_with(
    env: &TestEnv,
    ns: &str,
    name: &str,
    app: &str,
    annotations: Value,
    extra: Value,
) -> SidecarSet {
    let mut spec = json!({"selector": {"matchLabels": {"app": app}},
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
        "containers": [{"name": "sidecar", "image": "busybox:1.34"}]});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    let s: SidecarSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }))
    .unwrap();
    let api: Api<SidecarSet> = Api::all(env.client.clone());
    let _ = api.delete(name, &Default::default()).await;
    wait_for("old SidecarSet gone", TIMEOUT, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
    api.create(&PostParams::default(), &s).await.unwrap()
}

/// With the default `Fail`, a pod a SidecarSet selects is refused while the manager is down —
/// never created without its sidecar — and created with it once the manager is back.
#[tokio::test]
async fn selected_pods_are_refused_not_created_without_their_sidecar() {
    let env = env().await;
    let ns = env.namespace("scope-fail").await.unwrap();
    let name = format!("{}-ss", ns.name());
    let _cleanup = SidecarSetGuard(name.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let mut manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset(&env, ns.name(), &name, "meshed", json!({})).await;
    // The pod webhook's match condition now includes the SidecarSet's selector.
    wait_scope_follows(ns.name()).await;
    manager.kill();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("meshed", 2))
        .await
        .unwrap();
    wait_for("FailedCreate naming mpod.kb.io", TIMEOUT, || async {
        (webhook_create_failures(&ns).await > 0).then_some(())
    })
    .await
    .unwrap();
    assert!(
        ns.api::<Pod>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "a selected pod was created while injection could not happen"
    );
    // A pod nothing selects is not affected.
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("plain", 1))
        .await
        .unwrap();
    wait_ready(&ns, "plain", 1).await;
    manager.restart(TIMEOUT).await;
    wait_ready(&ns, "meshed", 2).await;
    for p in ready_pods(&ns, "meshed").await {
        assert!(
            containers(&p).contains(&"sidecar".to_string()),
            "{:?}",
            containers(&p)
        );
    }
    let _ = Api::<SidecarSet>::all(env.client.clone())
        .delete(&name, &Default::default())
        .await;
}

/// Under `--webhook-failure-policy mpod.kb.io=Ignore`, pods created while the manager is down
/// run without the sidecar; once it is back they are reported (status, Events, metric) and, with
/// the opt-in annotation, replaced by their Deployment one at a time, with the sidecar.
#[tokio::test]
async fn pods_created_under_ignore_are_reported_and_replaced() {
    let env = env().await;
    let ns = env.namespace("scope-ignore").await.unwrap();
    let name = format!("{}-ss", ns.name());
    let _cleanup = SidecarSetGuard(name.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
        .args(&["--webhook-failure-policy", "mpod.kb.io=Ignore"]);
    let mut manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset(&env, ns.name(), &name, "meshed", json!({})).await;
    wait_scope_follows(ns.name()).await;
    manager.kill();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("meshed", 3))
        .await
        .unwrap();
    wait_ready(&ns, "meshed", 3).await;
    let before: BTreeSet<String> = ready_pods(&ns, "meshed")
        .await
        .iter()
        .map(|p| {
            assert_eq!(containers(p), ["main"], "injected without a manager?");
            p.name_any()
        })
        .collect();

    manager.restart(TIMEOUT).await;
    let sets: Api<SidecarSet> = Api::all(env.client.clone());
    wait_for("status.uninjectedPods 3", TIMEOUT, || async {
        let s = sets.get(&name).await.ok()?;
        (s.status?.uninjected_pods == Some(3)).then_some(())
    })
    .await
    .unwrap();
    let events = ns
        .api::<Event>()
        .list(&ListParams::default())
        .await
        .unwrap();
    let on_pods: BTreeSet<String> = events
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("SidecarNotInjected"))
        .map(|e| e.involved_object.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(on_pods, before, "one Event per uninjected pod");
    let metrics = manager.process.metrics_text().await.unwrap_or_default();
    assert!(
        metrics.contains(&format!(
            "kruise_sidecarset_uninjected_pods{{sidecarset=\"{name}\"}} 3"
        )),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("uninjected"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Opt in: the Deployment (maxUnavailable 1) replaces them one at a time, with the sidecar.
    sets.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {
            "sidecarset.kruise-rs.io/recreate-uninjected-pods": "true"}}})),
    )
    .await
    .unwrap();
    let max_down = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    wait_for("3 ready pods with the sidecar", TIMEOUT, || async {
        let ready = ready_pods(&ns, "meshed").await;
        let down = 3usize.saturating_sub(ready.len());
        max_down.fetch_max(down, std::sync::atomic::Ordering::Relaxed);
        (ready.len() == 3
            && ready
                .iter()
                .all(|p| containers(p).contains(&"sidecar".to_string())))
        .then_some(())
    })
    .await
    .unwrap();
    assert!(
        max_down.load(std::sync::atomic::Ordering::Relaxed) <= 1,
        "more pods down at once than the Deployment's maxUnavailable"
    );
    let after: BTreeSet<String> = ready_pods(&ns, "meshed")
        .await
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert!(after.is_disjoint(&before));
    wait_for("status.uninjectedPods gone", TIMEOUT, || async {
        let s = sets.get(&name).await.ok()?;
        (s.status?.uninjected_pods.is_none()).then_some(())
    })
    .await
    .unwrap();
    let _ = sets.delete(&name, &Default::default()).await;
}

/// The manager's own pods never go through its webhooks: with the manager down, a pod in its
/// namespace that the pod webhook would otherwise be called for (launch priority) is created;
/// the same pod in a namespace it serves is refused.
#[tokio::test]
async fn the_managers_own_namespace_never_calls_its_webhooks() {
    let env = env().await;
    let pod = |name: &str| -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name,
                "annotations": {"apps.kruise.io/container-launch-priority": "Ordered"}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [
                {"name": "a", "image": "busybox:1.34"}, {"name": "b", "image": "busybox:1.34"}]},
        }))
        .unwrap()
    };
    // A manager deployed in `own`, serving `own`: its own replacement pod is admitted.
    let own = env.namespace("scope-own").await.unwrap();
    let mut manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), own.name())
            .pod_namespace(own.name()),
        TIMEOUT,
    )
    .await;
    manager.kill();
    own.api::<Pod>()
        .create(&PostParams::default(), &pod("replacement"))
        .await
        .expect("the manager's own namespace does not call its webhook");
    // A manager deployed elsewhere serving `other`: the same pod is refused there.
    let other = env.namespace("scope-other").await.unwrap();
    let mut manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), other.name()),
        TIMEOUT,
    )
    .await;
    manager.kill();
    let err = other
        .api::<Pod>()
        .create(&PostParams::default(), &pod("refused"))
        .await
        .expect_err("a served namespace calls the dead webhook");
    assert!(err.to_string().contains("mpod.kb.io"), "{err}");
}

/// Deletes a test's (cluster-scoped) SidecarSet when the test ends, pass or fail, so that no
/// later test or recording meets it.
struct SidecarSetGuard(String);

impl Drop for SidecarSetGuard {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "delete",
                "sidecarsets.apps.kruise.io",
                &self.0,
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        );
    }
}

/// Waits until the pod webhook (`mpod.kb.io`) of the test's manager names `ns` in its
/// `matchConditions` (the SidecarSet pinned to `ns` has reached its scope).
async fn wait_scope_follows(ns: &str) {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    let env = TestEnv::connect().await.expect("testbed");
    let api = Api::<MutatingWebhookConfiguration>::all(env.client.clone());
    let name = format!("kruise-mutating-webhook-configuration-{ns}");
    wait_for(
        "the pod webhook's scope to follow the SidecarSet",
        TIMEOUT,
        || async {
            let cfg = api.get(&name).await.ok()?;
            let pod_hook = cfg.webhooks?.into_iter().find(|h| h.name == "mpod.kb.io")?;
            pod_hook
                .match_conditions?
                .iter()
                .any(|c| c.expression.contains(&format!("'{ns}'")))
                .then_some(())
        },
    )
    .await
    .unwrap();
}

/// External certificates (#32): the manager runs with `--webhook-external-certs` as under
/// cert-manager — the test writes the Secret (`tls.crt`, `tls.key`, `ca.crt`) and installs the
/// configurations as shipped (the pod webhook scoped without any SidecarSet) with the CA
/// injected, as cert-manager's CA injector would. A SidecarSet then selects a plain
/// Deployment's pods: every pod must carry the sidecar, so the manager must keep the pod
/// webhook's scope current in this mode too — without touching the injected caBundle.
#[tokio::test]
async fn with_external_certificates_selected_pods_still_get_their_sidecar() {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    use k8s_openapi::api::core::v1::Secret;
    use kruise_webhook::{certs, controller};
    let env = env().await;
    let ns = env.namespace("scope-extcert").await.unwrap();
    let home = env.namespace("scope-extcert-home").await.unwrap();
    let name = format!("{}-ss", ns.name());
    let _cleanup = SidecarSetGuard(name.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
        .pod_namespace(home.name())
        .args(&["--webhook-external-certs"]);

    let issued = certs::generate("127.0.0.1", jiff::Timestamp::now()).unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "kruise-webhook-certs"},
        "stringData": {"tls.crt": issued.cert, "tls.key": issued.key, "ca.crt": issued.ca_cert},
    }))
    .unwrap();
    home.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let shipped = controller::WebhookSettings {
        namespace: home.name().to_owned(),
        secret_name: "kruise-webhook-certs".into(),
        endpoint: controller::Endpoint::Url {
            host: "127.0.0.1".into(),
            port: spec.webhook_port(),
        },
        renew_before: jiff::SignedDuration::ZERO,
        external_certs: true,
        only_namespace: Some(ns.name().to_owned()),
        name_suffix: Some(ns.name().to_owned()),
        failure_policies: Default::default(),
        timeout_seconds: Some(controller::DEFAULT_TIMEOUT_SECONDS),
        pod_scope: controller::PodScope::Needed {
            sidecarsets: None,
            budgets: None,
            flow_controls: None,
            persistent_pod_states: None,
            every_pod: false,
            workload_spreads: None,
        },
        webhooks: Default::default(),
    };
    let (m, v) = controller::configurations(&shipped, &issued.ca_cert);
    for cfg in [&m, &v] {
        let out = kubectl(
            &["apply", "-f", "-"],
            Some(&serde_json::to_string(cfg).unwrap()),
        )
        .unwrap();
        assert!(out.success, "{}", out.stderr);
    }

    let _manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset(&env, ns.name(), &name, "ext-meshed", json!({})).await;
    wait_scope_follows(ns.name()).await;
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("ext-meshed", 3))
        .await
        .unwrap();
    wait_ready(&ns, "ext-meshed", 3).await;
    for p in ready_pods(&ns, "ext-meshed").await {
        assert!(
            containers(&p).contains(&"sidecar".to_string()),
            "pod {} created without its sidecar: {:?}",
            p.name_any(),
            containers(&p)
        );
    }
    // The caBundle is still the one the issuer injected.
    let cfg = Api::<MutatingWebhookConfiguration>::all(env.client.clone())
        .get(&format!(
            "kruise-mutating-webhook-configuration-{}",
            ns.name()
        ))
        .await
        .unwrap();
    for hook in cfg.webhooks.unwrap_or_default() {
        let bundle = hook
            .client_config
            .ca_bundle
            .map(|b| b.0)
            .unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&bundle),
            issued.ca_cert,
            "{}: caBundle rewritten",
            hook.name
        );
    }
    let _ = Api::<SidecarSet>::all(env.client.clone())
        .delete(&name, &Default::default())
        .await;
}

/// `SidecarNotInjected` Events in `ns`.
async fn not_injected_events(ns: &TestNamespace) -> usize {
    ns.api::<Event>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("SidecarNotInjected"))
        .count()
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
}

/// Paused injection (#32): pods created while a SidecarSet's `injectionStrategy.paused` is set
/// lack its sidecar by design (OpenKruise skips paused SidecarSets at creation and injects
/// only at creation). With the replacement opt-in on, they are neither reported nor evicted —
/// across resyncs while paused and after injection resumes; after resuming, new pods get the
/// sidecar and the old ones are left as they are.
#[tokio::test]
async fn pods_created_while_injection_is_paused_are_not_missed_injections() {
    let env = env().await;
    let ns = env.namespace("scope-paused").await.unwrap();
    let name = format!("{}-ss", ns.name());
    let _cleanup = SidecarSetGuard(name.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let _manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset_with(
        &env,
        ns.name(),
        &name,
        "paused",
        json!({"sidecarset.kruise-rs.io/recreate-uninjected-pods": "true"}),
        json!({"injectionStrategy": {"paused": true}}),
    )
    .await;
    let sets: Api<SidecarSet> = Api::all(env.client.clone());
    wait_for("status.injectionPausedTime", TIMEOUT, || async {
        let s = sets.get(&name).await.ok()?;
        s.status?.injection_paused_time.map(|_| ())
    })
    .await
    .unwrap();
    let deployments = ns.api::<Deployment>();
    deployments
        .create(&PostParams::default(), &deployment("paused", 3))
        .await
        .unwrap();
    wait_ready(&ns, "paused", 3).await;
    let before = ready_pods(&ns, "paused").await;
    for p in &before {
        assert_eq!(containers(p), ["main"], "injected while paused");
    }
    let before = uids(&before);

    // Two resyncs while paused: the repair's requeue period is 5 s, and each annotation
    // change makes the controller reconcile the SidecarSet at once.
    for round in 0..2 {
        sets.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"resync": round.to_string()}}})),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_secs(6)).await;
        let s = sets.get(&name).await.unwrap();
        assert_eq!(
            s.status.as_ref().and_then(|s| s.uninjected_pods),
            None,
            "pods created while paused reported as missed"
        );
    }
    assert_eq!(not_injected_events(&ns).await, 0);
    assert_eq!(
        uids(&ready_pods(&ns, "paused").await),
        before,
        "a pod was replaced"
    );

    // Injection resumes: old pods stay untouched, new pods get the sidecar.
    sets.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"injectionStrategy": {"paused": false}}})),
    )
    .await
    .unwrap();
    wait_for("status.injectionResumedTime", TIMEOUT, || async {
        let s = sets.get(&name).await.ok()?;
        s.status?.injection_resumed_time.map(|_| ())
    })
    .await
    .unwrap();
    // A paused SidecarSet is out of the pod webhook's scope; resumed, it is in it again.
    wait_scope_follows(ns.name()).await;
    deployments
        .patch(
            "paused",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    wait_ready(&ns, "paused", 5).await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    let now = ready_pods(&ns, "paused").await;
    let (old, new): (Vec<&Pod>, Vec<&Pod>) = now
        .iter()
        .partition(|p| before.contains(p.metadata.uid.as_deref().unwrap_or("")));
    assert_eq!(old.len(), 3, "an old pod was replaced");
    for p in old {
        assert_eq!(containers(p), ["main"]);
    }
    assert_eq!(new.len(), 2);
    for p in new {
        assert!(
            containers(p).contains(&"sidecar".to_string()),
            "{:?}",
            containers(p)
        );
    }
    let s = sets.get(&name).await.unwrap();
    assert_eq!(s.status.and_then(|s| s.uninjected_pods), None);
    assert_eq!(not_injected_events(&ns).await, 0);
    let _ = sets.delete(&name, &Default::default()).await;
}

/// Feature gates (#32): `PodWebhook=false` turns the pod webhook off as in OpenKruise — it is
/// neither registered nor served, so a pod a SidecarSet selects is created as it is, and it is
/// not reported as a missed injection; and every enabled gate whose feature kruise-rs lacks is
/// named at start-up (a warning line and `kruise_feature_gate_unimplemented{name}` 1) while the
/// manager starts with OpenKruise's e2e gates (`AllAlpha`, `AllBeta`).
#[tokio::test]
async fn pod_webhook_gate_and_unimplemented_gates_are_honoured_and_named() {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    let env = env().await;
    let ns = env.namespace("scope-gates").await.unwrap();
    let name = format!("{}-ss", ns.name());
    let _cleanup = SidecarSetGuard(name.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(&[
        "--feature-gates",
        "AllAlpha=true,AllBeta=true,EnableExternalCerts=false,PodWebhook=false",
    ]);
    let port = spec.webhook_port();
    let manager = TestManager::start(spec, TIMEOUT).await;

    let cfg = Api::<MutatingWebhookConfiguration>::all(env.client.clone())
        .get(&format!(
            "kruise-mutating-webhook-configuration-{}",
            ns.name()
        ))
        .await
        .unwrap();
    let hooks: Vec<String> = cfg
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .map(|h| h.name)
        .collect();
    assert!(!hooks.contains(&"mpod.kb.io".to_string()), "{hooks:?}");
    assert!(hooks.contains(&"mcloneset.kb.io".to_string()), "{hooks:?}");
    // Not served either.
    let out = std::process::Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .arg(format!("https://127.0.0.1:{port}/mutate-pod"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "404");

    sidecarset(&env, ns.name(), &name, "gated", json!({})).await;
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("gated", 2))
        .await
        .unwrap();
    wait_ready(&ns, "gated", 2).await;
    for p in ready_pods(&ns, "gated").await {
        assert_eq!(containers(&p), ["main"], "injected with PodWebhook=false");
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    let s = Api::<SidecarSet>::all(env.client.clone())
        .get(&name)
        .await
        .unwrap();
    assert_eq!(s.status.and_then(|s| s.uninjected_pods), None);
    assert_eq!(not_injected_events(&ns).await, 0);

    let log = std::fs::read_to_string(&manager.process.log).unwrap();
    for gate in ["ImagePullJobGate", "InPlacePodVerticalScaling"] {
        assert!(
            log.contains(&format!("feature gate {gate}=true:")),
            "no start-up warning for {gate}"
        );
    }
    assert!(!log.contains("feature gate RecreatePodWhenChangeVCTInCloneSetGate=true:"));
    // Switched off by PodWebhook=false (OpenKruise's dependency rule): not enabled, no warning.
    assert!(!log.contains("feature gate EnablePodProbeMarkerOnServerless=true:"));
    let metrics = manager.process.metrics_text().await.unwrap_or_default();
    assert!(
        metrics.contains("kruise_feature_gate_unimplemented{name=\"ImagePullJobGate\"} 1"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("unimplemented"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // PodWebhook=false switches the gates that need it off (OpenKruise's dependency rule).
    assert!(metrics.contains(
        "kruise_feature_gate_unimplemented{name=\"EnablePodProbeMarkerOnServerless\"} 0"
    ));
    let _ = Api::<SidecarSet>::all(env.client.clone())
        .delete(&name, &Default::default())
        .await;
}

/// The WorkloadSpread and PersistentPodState terms of the pod webhook's scope (#37) with the
/// manager killed. In a namespace holding a WorkloadSpread, a Deployment's pods are refused (the
/// WorkloadSpread may have to place them), never created without their subset; a bare pod there
/// is created. In a namespace whose PersistentPodState names StatefulSet `db`, that
/// StatefulSet's pods are refused while a Deployment's are created. Once the manager is back,
/// the refused pods are created through it (the spread's pods carry their subset).
#[tokio::test]
async fn workloadspread_and_persistentpodstate_terms_refuse_only_their_pods() {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use kruise_api::apps::v1alpha1::{PersistentPodState, WorkloadSpread};
    let env = env().await;

    let ws_ns = env.namespace("scope-ws").await.unwrap();
    let mut ws_manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ws_ns.name()),
        TIMEOUT,
    )
    .await;
    let ws: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "spread"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "spread"},
            "subsets": [{"name": "first", "maxReplicas": 1}, {"name": "rest"}]}}))
    .unwrap();
    ws_ns
        .api::<WorkloadSpread>()
        .create(&PostParams::default(), &ws)
        .await
        .unwrap();

    let pps_ns = env.namespace("scope-pps").await.unwrap();
    let mut pps_manager = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), pps_ns.name()),
        TIMEOUT,
    )
    .await;
    let pps: PersistentPodState = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
        "metadata": {"name": "db"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "requiredPersistentTopology": {"nodeTopologyKeys": ["kubernetes.io/hostname"]}}}))
    .unwrap();
    pps_ns
        .api::<PersistentPodState>()
        .create(&PostParams::default(), &pps)
        .await
        .unwrap();

    wait_scope_follows(ws_ns.name()).await;
    wait_scope_follows(pps_ns.name()).await;
    ws_manager.kill();
    pps_manager.kill();

    ws_ns
        .api::<Deployment>()
        .create(&PostParams::default(), &deployment("spread", 2))
        .await
        .unwrap();
    let sts: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "busybox:1.34"}]}}}}))
    .unwrap();
    pps_ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &sts)
        .await
        .unwrap();
    pps_ns
        .api::<Deployment>()
        .create(&PostParams::default(), &deployment("plain", 1))
        .await
        .unwrap();

    // Refused, not created unplaced.
    wait_for(
        "FailedCreate naming mpod.kb.io (spread)",
        TIMEOUT,
        || async { (webhook_create_failures(&ws_ns).await > 0).then_some(()) },
    )
    .await
    .unwrap();
    wait_for("FailedCreate naming mpod.kb.io (db)", TIMEOUT, || async {
        (webhook_create_failures(&pps_ns).await > 0).then_some(())
    })
    .await
    .unwrap();
    // What neither term covers is created as with no manager.
    wait_ready(&pps_ns, "plain", 1).await;
    let out = kubectl(
        &[
            "run",
            "probe",
            "-n",
            ws_ns.name(),
            "--image=busybox:1.34",
            "--restart=Never",
        ],
        None,
    )
    .unwrap();
    assert!(out.success, "kubectl run: {}", out.stderr);
    for (ns, app) in [(&ws_ns, "spread"), (&pps_ns, "db")] {
        let pods = ns
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap();
        assert!(
            pods.items.is_empty(),
            "{app}: a pod was created while its webhook could not answer"
        );
    }

    ws_manager.restart(TIMEOUT).await;
    pps_manager.restart(TIMEOUT).await;
    wait_ready(&ws_ns, "spread", 2).await;
    wait_ready(&pps_ns, "db", 1).await;
    let subsets: BTreeSet<String> = ready_pods(&ws_ns, "spread")
        .await
        .iter()
        .map(|p| {
            let a = p
                .annotations()
                .get("apps.kruise.io/matched-workloadspread")
                .cloned()
                .unwrap_or_else(|| {
                    panic!("{} has no matched-workloadspread annotation", p.name_any())
                });
            let v: Value = serde_json::from_str(&a).unwrap();
            v["subset"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(
        subsets,
        BTreeSet::from(["first".to_owned(), "rest".to_owned()]),
        "one pod per subset (first has maxReplicas 1)"
    );
}
