//! Admission that cannot take the cluster down (#21), on the real testbed: with the manager
//! killed (its webhook configurations registered, nothing answering), pods nothing of Kruise
//! acts on are created as if there were no manager, while OpenKruise's configuration (every pod
//! through a failing webhook) rejects them; pods a SidecarSet selects are rejected rather than
//! created without their sidecar (`Fail`), or — under `Ignore` — created, then reported and,
//! with the opt-in, replaced once the manager is back; the manager's own namespace never calls
//! its webhooks. Each test runs its own manager restricted to its namespace.

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
    let s: SidecarSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"selector": {"matchLabels": {"app": app}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "containers": [{"name": "sidecar", "image": "busybox:1.34"}]},
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
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let mut manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset(&env, ns.name(), &name, "meshed", json!({})).await;
    // The pod webhook's match condition now includes the SidecarSet's selector.
    wait_for(
        "the configuration to follow the SidecarSet",
        TIMEOUT,
        || async {
            let out = kubectl(
                &["get", "mutatingwebhookconfigurations", "-o", "json"],
                None,
            )
            .ok()?;
            out.stdout
                .contains(&format!("'{}'", ns.name()))
                .then_some(())
        },
    )
    .await
    .unwrap();
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
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
        .args(&["--webhook-failure-policy", "mpod.kb.io=Ignore"]);
    let mut manager = TestManager::start(spec, TIMEOUT).await;
    sidecarset(&env, ns.name(), &name, "meshed", json!({})).await;
    wait_for(
        "the configuration to follow the SidecarSet",
        TIMEOUT,
        || async {
            let out = kubectl(
                &["get", "mutatingwebhookconfigurations", "-o", "json"],
                None,
            )
            .ok()?;
            out.stdout
                .contains(&format!("'{}'", ns.name()))
                .then_some(())
        },
    )
    .await
    .unwrap();
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
