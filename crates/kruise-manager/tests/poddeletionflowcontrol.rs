//! Pod-deletion flow control (kruise-rs's `PodDeletionFlowControl`, `policy.kruise-rs.io`;
//! docs/pod-deletion-flow-control.md) end to end on the testbed: the limit holds over a sliding
//! 60 s window and the window slides; the denial (403 for a DELETE, 429 for an eviction) names
//! the window; the status shows
//! the room left and the metrics count; scope, exemptions, dry runs and evictions; a deletion a
//! budget refuses spends no room; with the manager down, deletions the objects cannot count are
//! not held. Each test runs its own `kruise-manager` as users run it (webhooks on, default
//! flags) restricted to its namespace; every object pins the test's namespace
//! (`kubernetes.io/metadata.name`), so tests running beside it are never counted.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::rspolicy::v1alpha1::PodDeletionFlowControl;
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, TestManager) {
    TestManager::setup(
        env!("CARGO_BIN_EXE_kruise-manager"),
        prefix,
        &[],
        3,
        TIMEOUT,
    )
    .await
}

/// A cluster-scoped object deleted when the test ends (also when it fails).
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let name = self.0.clone();
        // The test's runtime is blocked in this drop: delete with a client and runtime of our
        // own (the test's client runs on the test's runtime).
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(env) = TestEnv::connect().await {
                    let api: Api<PodDeletionFlowControl> = Api::all(env.client.clone());
                    let _ = api.delete(&name, &DeleteParams::default()).await;
                }
            });
        })
        .join();
    }
}

/// Creates flow-control object `<ns>-<suffix>` pinned to the test's namespace with `spec`
/// (its `namespaceSelector` is set here).
async fn create_flow_control(
    env: &TestEnv,
    ns: &TestNamespace,
    suffix: &str,
    mut spec: Value,
) -> (Api<PodDeletionFlowControl>, String, Cleanup) {
    let api: Api<PodDeletionFlowControl> = Api::all(env.client.clone());
    let name = format!("{}-{suffix}", ns.name());
    spec["namespaceSelector"] = json!({"matchLabels": {"kubernetes.io/metadata.name": ns.name()}});
    let obj: PodDeletionFlowControl = serde_json::from_value(json!({
        "apiVersion": "policy.kruise-rs.io/v1alpha1", "kind": "PodDeletionFlowControl",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let cleanup = Cleanup(name.clone());
    (api, name, cleanup)
}

async fn create_cloneset(ns: &TestNamespace, name: &str, replicas: i32) {
    let api: Api<CloneSet> = ns.api();
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &cs).await.unwrap();
}

fn bare_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "bare"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }))
    .unwrap()
}

/// The running (not terminating) pods labelled `app=<app>`, by name, once there are `n`.
async fn running(ns: &TestNamespace, app: &str, n: usize) -> Vec<String> {
    let pods: Api<Pod> = ns.api();
    let lp = ListParams::default().labels(&format!("app={app}"));
    wait_for(&format!("{n} running {app} pods"), TIMEOUT, || async {
        let list = pods.list(&lp).await.ok()?.items;
        let mut names: Vec<String> = list
            .iter()
            .filter(|p| {
                p.metadata.deletion_timestamp.is_none()
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
            .map(|p| p.name_any())
            .collect();
        names.sort();
        (names.len() >= n).then_some(names)
    })
    .await
    .unwrap()
}

/// The admission error's code and message.
fn refusal<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String) {
    match r {
        Err(kube::Error::Api(e)) => (e.code, e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Waits until the object's status log holds `n` deletions (the webhook's write).
async fn wait_logged(
    api: &Api<PodDeletionFlowControl>,
    name: &str,
    n: usize,
) -> PodDeletionFlowControl {
    wait_for_object(
        api,
        name,
        &format!("{n} admitted deletions"),
        TIMEOUT,
        |o| o.status.as_ref().map_or(0, |s| s.admitted.len()) == n,
    )
    .await
    .unwrap()
}

/// The limit holds over a sliding 60 s window: one deletion of a CloneSet pod every 2 s for
/// 80 s under `1m: 3` admits 3, refuses with 403 and the time to wait, and admits again once
/// the first admitted deletion is a minute old — never 4 within 60 s. The status and metrics
/// show the room left and the refusals.
#[tokio::test]
async fn the_limit_holds_over_a_sliding_60s_window() {
    let (env, ns, m) = setup("pdfc-window").await;
    create_cloneset(&ns, "win", 6).await;
    running(&ns, "win", 6).await;
    let (api, name, _cleanup) = create_flow_control(
        &env,
        &ns,
        "window",
        json!({"limits": [{"window": "1m", "maxDeletions": 3}]}),
    )
    .await;
    // The controller shows the empty windows: the object is known to the manager.
    wait_for_object(&api, &name, "status summary", TIMEOUT, |o| {
        o.status.as_ref().and_then(|s| s.summary.as_deref()) == Some("1m:0/3")
    })
    .await
    .unwrap();

    let pods: Api<Pod> = ns.api();
    let start = Instant::now();
    let mut admitted: Vec<(Duration, String)> = Vec::new();
    let mut refused: Vec<(u16, String)> = Vec::new();
    let mut tried: Vec<String> = Vec::new();
    while start.elapsed() < Duration::from_secs(80) {
        let tick = Instant::now();
        let names = running(&ns, "win", 1).await;
        let Some(victim) = names.iter().find(|n| !tried.contains(n)).cloned() else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        match pods.delete(&victim, &DeleteParams::default()).await {
            Ok(_) => {
                admitted.push((start.elapsed(), victim.clone()));
                tried.push(victim);
            }
            Err(kube::Error::Api(e)) => refused.push((e.code, e.message)),
            Err(e) => panic!("delete {victim}: {e}"),
        }
        tokio::time::sleep(Duration::from_secs(2).saturating_sub(tick.elapsed())).await;
    }
    // Never 4 admitted within 60 s (client-side times come after the admission, so two of them
    // 60 s apart bound the admissions from below within the request latency).
    for w in admitted.windows(4) {
        let span = w[3].0 - w[0].0;
        assert!(
            span >= Duration::from_secs(59),
            "4 deletions admitted within {span:?}: {admitted:?}"
        );
    }
    // The window slides: the first three at once, then more once they have aged out.
    assert!(admitted.len() >= 4, "the window never slid: {admitted:?}");
    assert!(admitted[2].0 < Duration::from_secs(20), "{admitted:?}");
    assert!(!refused.is_empty());
    for (code, message) in &refused {
        assert_eq!(*code, 403, "{message}");
        assert!(
            message.contains(&format!(
                "pod deletion flow control {name}: 3 deletions in the last 1m (limit 3); the next is allowed in"
            )),
            "{message}"
        );
    }
    // Every admitted deletion is in the log (those of the last minute), each once.
    let obj = api.get(&name).await.unwrap();
    let status = obj.status.clone().unwrap();
    let logged: Vec<String> = status.admitted.iter().map(|e| e.pod.clone()).collect();
    let recent: Vec<String> = admitted
        .iter()
        .filter(|(t, _)| start.elapsed().saturating_sub(*t) < Duration::from_secs(55))
        .map(|(_, p)| format!("{}/{p}", ns.name()))
        .collect();
    for p in &recent {
        assert!(logged.contains(p), "{p} not in the log {logged:?}");
    }
    let w = &status.windows[0];
    assert_eq!(w.window, "1m");
    assert_eq!(w.used + w.remaining, 3, "{status:?}");
    // The metrics: the room left and the refusals, by object.
    let text = m.process.metrics_text().await.expect("metrics");
    let gauge =
        format!("kruise_pod_deletion_flow_control_remaining{{name=\"{name}\",window=\"1m\"}}");
    assert!(
        text.lines().any(|l| l.starts_with(&gauge)),
        "{gauge} not in the metrics"
    );
    let counter = format!("kruise_pod_deletion_flow_control_refusals_total{{name=\"{name}\"");
    let refusals: f64 = text
        .lines()
        .filter(|l| l.starts_with(&counter))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        refusals >= refused.len() as f64,
        "{refusals} refusals counted, {} seen",
        refused.len()
    );
}

/// The username the test's client authenticates as (SelfSubjectReview).
async fn whoami(env: &TestEnv) -> String {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let api: Api<SelfSubjectReview> = Api::all(env.client.clone());
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
    }))
    .unwrap();
    let r = api.create(&PostParams::default(), &review).await.unwrap();
    r.status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .expect("a username")
}

/// What counts: `KruiseWorkloads` counts a CloneSet's pods and not a bare pod; a dry run is
/// judged but not recorded; an eviction counts and is refused when the window is full; an
/// exempt user passes uncounted; `AllWorkloads` counts the bare pod too. With the manager down,
/// a pod no object can count is deleted normally, and one it can is held by the dead webhook.
#[tokio::test]
async fn scope_exemptions_dry_runs_and_evictions() {
    let (env, ns, mut m) = setup("pdfc-scope").await;
    create_cloneset(&ns, "kr", 4).await;
    let pods: Api<Pod> = ns.api();
    for n in ["bare-0", "bare-1", "bare-2"] {
        pods.create(&PostParams::default(), &bare_pod(n))
            .await
            .unwrap();
    }
    let kr = running(&ns, "kr", 4).await;
    running(&ns, "bare", 3).await;
    let (api, name, _cleanup) = create_flow_control(
        &env,
        &ns,
        "scope",
        json!({"limits": [{"window": "1h", "maxDeletions": 1}],
               "exempt": {"usernames": ["system:serviceaccount:kube-system:drainer"]}}),
    )
    .await;
    // Known to the webhook: a dry-run deletion of a CloneSet pod is judged (allowed) and not
    // recorded.
    wait_for_object(&api, &name, "status", TIMEOUT, |o| o.status.is_some())
        .await
        .unwrap();
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    pods.delete(&kr[0], &dry).await.unwrap();
    // A bare pod is not a Kruise workload's: not counted.
    pods.delete("bare-0", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let obj = api.get(&name).await.unwrap();
    assert!(
        obj.status.unwrap().admitted.is_empty(),
        "dry run or bare pod recorded"
    );

    // An eviction counts.
    pods.evict(&kr[0], &EvictParams::default()).await.unwrap();
    let obj = wait_logged(&api, &name, 1).await;
    assert_eq!(
        obj.status.unwrap().admitted[0].pod,
        format!("{}/{}", ns.name(), kr[0])
    );
    // The window is full: a deletion is refused with 403, an eviction with 429 (drain waits and
    // retries; kube-rs clients retry a 429 on their own, so this one is built without).
    let (code, message) = refusal(pods.delete(&kr[1], &DeleteParams::default()).await);
    assert_eq!(code, 403);
    assert!(
        message.contains("1 deletions in the last 1h (limit 1)"),
        "{message}"
    );
    let mut config = env.config.clone();
    config.default_retry = false;
    let no_retry: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), ns.name());
    let (code, _) = refusal(no_retry.evict(&kr[1], &EvictParams::default()).await);
    assert_eq!(code, 429);

    // AllWorkloads: the bare pod counts now.
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scope": "AllWorkloads"}})),
    )
    .await
    .unwrap();
    wait_for("bare pod held", TIMEOUT, || async {
        match pods.delete("bare-1", &dry).await {
            Err(kube::Error::Api(e)) if e.code == 403 => Some(()),
            _ => None,
        }
    })
    .await
    .unwrap();

    // Exempt: this test's user passes uncounted.
    let me = whoami(&env).await;
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"exempt": {"usernames": [me]}}})),
    )
    .await
    .unwrap();
    wait_for("exempt deletion", TIMEOUT, || async {
        pods.delete(&kr[1], &DeleteParams::default()).await.ok()
    })
    .await
    .unwrap();
    assert_eq!(
        api.get(&name).await.unwrap().status.unwrap().admitted.len(),
        1
    );

    // Manager down: with KruiseWorkloads and no exemption, a bare pod's deletion is not sent to
    // the webhook (the scope's condition), a CloneSet pod's is and fails closed.
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"scope": "KruiseWorkloads", "exempt": null}})),
    )
    .await
    .unwrap();
    let kr = running(&ns, "kr", 4).await;
    wait_for("CloneSet pod held again", TIMEOUT, || async {
        match pods.delete(&kr[2], &dry).await {
            Err(kube::Error::Api(e)) if e.code == 403 => Some(()),
            _ => None,
        }
    })
    .await
    .unwrap();
    // The validating configuration follows the object: the term for this namespace now asks
    // for a Kruise-owned pod, and the API server no longer sends a bare pod's deletion (a dry
    // run leaves the manager's request counter alone).
    m.wait_webhook_condition(
        "vpod.kb.io",
        &format!(
            "['{}'] && (has(oldObject.metadata.ownerReferences)",
            ns.name()
        ),
        TIMEOUT,
    )
    .await
    .unwrap();
    wait_for(
        "a bare pod's deletion left out of scope",
        TIMEOUT,
        || async {
            let before = m.process.webhook_requests("/validate-pod").await?;
            pods.delete("bare-2", &dry).await.ok()?;
            let after = m.process.webhook_requests("/validate-pod").await?;
            (after == before).then_some(())
        },
    )
    .await
    .unwrap();
    m.process.kill();
    pods.delete("bare-2", &DeleteParams::default())
        .await
        .expect("a deletion no object counts, with the manager down");
    let err = pods
        .delete(&kr[2], &DeleteParams::default())
        .await
        .expect_err("the webhook is down");
    assert!(err.to_string().contains("vpod.kb.io"), "{err}");
}

/// A deletion its PodUnavailableBudget refuses spends no flow-control room, and a deletion
/// flow control refuses spends no budget.
#[tokio::test]
async fn a_budget_refusal_spends_no_flow_control_room() {
    use kruise_api::policy::v1alpha1::PodUnavailableBudget;
    let (env, ns, _m) = setup("pdfc-pub").await;
    create_cloneset(&ns, "held", 2).await;
    create_cloneset(&ns, "free", 2).await;
    let budgets: Api<PodUnavailableBudget> = ns.api();
    // `held` may lose no pod, `free` two.
    for (app, max) in [("held", 0), ("free", 2)] {
        let b: PodUnavailableBudget = serde_json::from_value(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": app},
            "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": max},
        }))
        .unwrap();
        budgets.create(&PostParams::default(), &b).await.unwrap();
    }
    let held = running(&ns, "held", 2).await;
    let free = running(&ns, "free", 2).await;
    let pods: Api<Pod> = ns.api();
    wait_for("related-pub on every pod", TIMEOUT, || async {
        let list = pods
            .list(&ListParams::default().labels("app in (held,free)"))
            .await
            .ok()?
            .items;
        (list.len() == 4
            && list
                .iter()
                .all(|p| p.annotations().contains_key("kruise.io/related-pub")))
        .then_some(())
    })
    .await
    .unwrap();
    for (b, allowed) in [("held", 0), ("free", 2)] {
        wait_for_object(&budgets, b, "budget status", TIMEOUT, |o| {
            o.status
                .as_ref()
                .is_some_and(|s| s.current_available == 2 && s.unavailable_allowed == allowed)
        })
        .await
        .unwrap();
    }
    let (api, name, _cleanup) = create_flow_control(
        &env,
        &ns,
        "pub",
        json!({"limits": [{"window": "1h", "maxDeletions": 1}]}),
    )
    .await;
    wait_for_object(&api, &name, "status", TIMEOUT, |o| o.status.is_some())
        .await
        .unwrap();
    let (code, message) = refusal(pods.delete(&held[0], &DeleteParams::default()).await);
    assert_eq!(code, 403, "{message}");
    assert!(
        message.contains("pub unavailable allowed is negative"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        api.get(&name)
            .await
            .unwrap()
            .status
            .unwrap()
            .admitted
            .is_empty()
    );
    // The room is still there for another workload's pod.
    pods.delete(&free[0], &DeleteParams::default())
        .await
        .unwrap();
    wait_logged(&api, &name, 1).await;
    // Now flow control refuses first, though the budget has room: the budget is not spent.
    let (code, message) = refusal(pods.delete(&free[1], &DeleteParams::default()).await);
    assert_eq!(code, 403);
    assert!(message.contains("pod deletion flow control"), "{message}");
    let b = budgets.get("free").await.unwrap();
    let disrupted: Vec<String> = b
        .status
        .unwrap()
        .disrupted_pods
        .unwrap_or_default()
        .into_keys()
        .collect();
    assert!(!disrupted.contains(&free[1]), "{disrupted:?}");
}
