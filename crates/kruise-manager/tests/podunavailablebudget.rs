//! PodUnavailableBudget controller end to end on the testbed: the status OpenKruise v1.9.0's
//! controller computes (`pkg/controller/podunavailablebudget`) for budgets that select pods by
//! label and by `targetRef` (a CloneSet, a Deployment, and a custom kind read through its
//! `/scale` subresource), the `kruise.io/related-pub` annotation on covered pods, pending
//! disruptions expiring, and the feature gates that switch the controller on. Each test runs
//! its own `kruise-manager` as users run it (webhooks on, default flags), restricted to the
//! test's namespace.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::policy::v1alpha1::{PodUnavailableBudget, PodUnavailableBudgetStatus};
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);

async fn setup(prefix: &str, args: &[&str]) -> (TestEnv, TestNamespace, TestManager) {
    TestManager::setup(
        env!("CARGO_BIN_EXE_kruise-manager"),
        prefix,
        args,
        3,
        TIMEOUT,
    )
    .await
}

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    })
}

async fn create_cloneset(ns: &TestNamespace, name: &str, replicas: i32) -> Api<CloneSet> {
    let api: Api<CloneSet> = ns.api();
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": template(name)},
    }))
    .unwrap();
    api.create(&PostParams::default(), &cs).await.unwrap();
    api
}

async fn create_budget(ns: &TestNamespace, name: &str, spec: Value) -> Api<PodUnavailableBudget> {
    let api: Api<PodUnavailableBudget> = ns.api();
    let b: PodUnavailableBudget = serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &b).await.unwrap();
    api
}

/// (unavailableAllowed, currentAvailable, desiredAvailable, totalReplicas).
fn counts(s: &PodUnavailableBudgetStatus) -> (i32, i32, i32, i32) {
    (
        s.unavailable_allowed,
        s.current_available,
        s.desired_available,
        s.total_replicas,
    )
}

/// Waits until the budget's status, computed for its current generation, shows `want`.
async fn wait_counts(
    api: &Api<PodUnavailableBudget>,
    name: &str,
    want: (i32, i32, i32, i32),
) -> PodUnavailableBudget {
    wait_for_object(
        api,
        name,
        &format!("status counts {want:?}"),
        TIMEOUT,
        |b| {
            b.status.as_ref().is_some_and(|s| {
                counts(s) == want && Some(s.observed_generation) == b.meta().generation
            })
        },
    )
    .await
    .unwrap()
}

async fn pods_of(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    let pods: Api<Pod> = ns.api();
    pods.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
}

/// Watches the pods labelled `app=<app>` and keeps the fewest ready (and not terminating) seen
/// at any event once at least `n` pods have been seen: a pod that is not ready, terminating or
/// gone (its Delete event drops it) counts as unavailable, so `n` minus the minimum is the most
/// pods of an `n`-pod workload ever unavailable at a sampled instant. Abort the task when done.
fn sample_min_ready(
    pods: Api<Pod>,
    app: &str,
    n: usize,
) -> (
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use futures::TryStreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let min_ready = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
    let labels = format!("app={app}");
    let task = {
        let min_ready = min_ready.clone();
        tokio::spawn(async move {
            // Ready and active, by pod; `relist` collects a re-list's pods until it is done.
            let mut state: std::collections::BTreeMap<String, bool> = Default::default();
            let mut relist: Option<std::collections::BTreeMap<String, bool>> = None;
            let mut armed = false;
            let ready =
                |p: &Pod| p.metadata.deletion_timestamp.is_none() && kruise_e2e::pod_ready(p);
            let stream =
                watcher(pods, watcher::Config::default().labels(&labels)).default_backoff();
            futures::pin_mut!(stream);
            while let Ok(Some(event)) = stream.try_next().await {
                match event {
                    watcher::Event::Init => {
                        relist = Some(Default::default());
                        continue;
                    }
                    watcher::Event::InitApply(p) => {
                        if let Some(r) = relist.as_mut() {
                            r.insert(p.name_any(), ready(&p));
                        }
                        continue;
                    }
                    watcher::Event::InitDone => {
                        if let Some(r) = relist.take() {
                            state = r;
                        }
                    }
                    watcher::Event::Apply(p) => {
                        state.insert(p.name_any(), ready(&p));
                    }
                    watcher::Event::Delete(p) => {
                        state.remove(&p.name_any());
                    }
                }
                armed |= state.len() >= n;
                if armed {
                    let now = state.values().filter(|r| **r).count();
                    min_ready.fetch_min(now, std::sync::atomic::Ordering::SeqCst);
                }
            }
        })
    };
    (task, min_ready)
}

/// A selector budget over a CloneSet: OpenKruise's `maxUnavailable` arithmetic (25% of 4 rounds
/// up to 1), the expected count following the CloneSet's replicas, the related-pub annotation
/// on every pod, and a pod with an `unavailable-pod.kruise.io/` label no longer available.
#[tokio::test]
async fn selector_budget_follows_replicas_and_unavailable_labels() {
    let (_env, ns, _m) = setup("pub-sel", &[]).await;
    let sets = create_cloneset(&ns, "web", 4).await;
    let budgets = create_budget(
        &ns,
        "web-pub",
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": "25%"}),
    )
    .await;
    wait_counts(&budgets, "web-pub", (1, 4, 3, 4)).await;
    let pods = pods_of(&ns, "web").await;
    assert_eq!(pods.len(), 4);
    for p in &pods {
        assert_eq!(
            p.annotations()
                .get("kruise.io/related-pub")
                .map(String::as_str),
            Some("web-pub"),
            "pod {} carries the related-pub annotation",
            p.name_any()
        );
    }

    // Scaling the CloneSet moves the expected count: 8 pods, 25% → 2 may be unavailable.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 8}})),
    )
    .await
    .unwrap();
    wait_counts(&budgets, "web-pub", (2, 8, 6, 8)).await;

    // A pod marked unavailable no longer counts.
    let pods: Api<Pod> = ns.api();
    let victim = pods_of(&ns, "web").await[0].name_any();
    pods.patch(
        &victim,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"unavailable-pod.kruise.io/drain": "true"}}})),
    )
    .await
    .unwrap();
    wait_counts(&budgets, "web-pub", (1, 7, 6, 8)).await;

    // The protect-total-replicas annotation overrides the expected count.
    budgets
        .patch(
            "web-pub",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"pub.kruise.io/protect-total-replicas": "20"}}}),
            ),
        )
        .await
        .unwrap();
    // 20 expected, 25% → 5 unavailable allowed → 15 desired; 7 available.
    wait_counts(&budgets, "web-pub", (0, 7, 15, 20)).await;
}

/// `targetRef` budgets: a Deployment's pods are found through its ReplicaSets and counted
/// against its replicas (`minAvailable` 50% of 3 rounds up to 2), and a custom kind with a
/// `/scale` subresource is read through it (replicas and selector), beyond OpenKruise's
/// built-in kinds.
#[tokio::test]
async fn target_ref_budgets_for_a_deployment_and_a_scale_subresource_kind() {
    let (env, ns, _m) = setup("pub-ref", &[]).await;
    let deployments: Api<Deployment> = ns.api();
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api"}},
                 "template": template("api")},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let budgets = create_budget(
        &ns,
        "api-pub",
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
               "minAvailable": "50%"}),
    )
    .await;
    wait_counts(&budgets, "api-pub", (1, 3, 2, 3)).await;

    // A custom workload kind with a scale subresource, its pods selected by the scale selector.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.e2e.kruise-rs.io"},
        "spec": {
            "group": "e2e.kruise-rs.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector"}}}]
        }
    }))
    .unwrap();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("widget CRD: {e}"),
    }
    kruise_e2e::wait_crd_established(&crds, "widgets.e2e.kruise-rs.io", TIMEOUT)
        .await
        .unwrap();
    let widgets = kruise_e2e::dynamic_api(
        &env.client,
        Some(ns.name()),
        ("e2e.kruise-rs.io", "v1", "Widget"),
        "widgets",
    );
    let w = kruise_e2e::dynamic_object(json!({
        "apiVersion": "e2e.kruise-rs.io/v1", "kind": "Widget",
        "metadata": {"name": "gadget"}, "spec": {"replicas": 2},
    }));
    wait_for("widget creatable", TIMEOUT, || async {
        widgets.create(&PostParams::default(), &w).await.ok()
    })
    .await
    .unwrap();
    widgets
        .patch_status(
            "gadget",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 2, "selector": "app=gadget"}})),
        )
        .await
        .unwrap();
    let pods: Api<Pod> = ns.api();
    for i in 0..2 {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("gadget-{i}"), "labels": {"app": "gadget"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let budgets = create_budget(
        &ns,
        "gadget-pub",
        json!({"targetRef": {"apiVersion": "e2e.kruise-rs.io/v1", "kind": "Widget", "name": "gadget"},
               "maxUnavailable": 1}),
    )
    .await;
    wait_counts(&budgets, "gadget-pub", (1, 2, 1, 2)).await;
}

/// Pending disruptions (the pod webhook's `disruptedPods` entries): an entry older than
/// OpenKruise's 20 s deletion timeout is dropped with the Warning Event `NotDeleted` on the pod,
/// a fresh one keeps its pod out of `currentAvailable` until it expires, and then the pass the
/// controller scheduled for the expiry counts the pod again.
#[tokio::test]
async fn pending_disruptions_expire() {
    let (env, ns, _m) = setup("pub-disr", &[]).await;
    create_cloneset(&ns, "db", 3).await;
    let budgets = create_budget(
        &ns,
        "db-pub",
        json!({"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 1}),
    )
    .await;
    let b = wait_counts(&budgets, "db-pub", (1, 3, 2, 3)).await;
    let mut names: Vec<String> = pods_of(&ns, "db")
        .await
        .iter()
        .map(|p| p.name_any())
        .collect();
    names.sort();
    let now = jiff::Timestamp::now();
    let fmt = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let mut st = serde_json::to_value(b.status.clone().unwrap()).unwrap();
    st["disruptedPods"] = json!({
        names[0].clone(): fmt(now - jiff::SignedDuration::from_secs(60)),
        names[1].clone(): fmt(now),
    });
    budgets
        .patch_status(
            "db-pub",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": st})),
        )
        .await
        .unwrap();
    // The old entry is dropped, the fresh one holds its pod: 2 available, 2 desired.
    let b = wait_counts(&budgets, "db-pub", (0, 2, 2, 3)).await;
    let pending = b.status.unwrap().disrupted_pods.unwrap_or_default();
    assert_eq!(pending.keys().collect::<Vec<_>>(), [&names[1]]);
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(env.client.clone(), ns.name());
    wait_for("NotDeleted event on the pod", TIMEOUT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| {
                e.reason.as_deref() == Some("NotDeleted")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref())
                        == Some(names[0].as_str())
            })
            .then_some(())
    })
    .await
    .unwrap();
    // Within about 20 s the fresh entry expires too and the pod counts again.
    let b = wait_counts(&budgets, "db-pub", (1, 3, 2, 3)).await;
    assert_eq!(b.status.unwrap().disrupted_pods, None);
}

/// With both `PodUnavailableBudgetDeleteGate` and `PodUnavailableBudgetUpdateGate` off, the
/// controller does not run (OpenKruise's `Add`) and — as OpenKruise's webhook answers — no
/// budget can be created; the other controllers work.
#[tokio::test]
async fn gates_off_no_budgets() {
    let (_env, ns, _m) = setup(
        "pub-gate",
        &[
            "--feature-gates",
            "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false",
        ],
    )
    .await;
    let sets = create_cloneset(&ns, "off", 2).await;
    // The CloneSet controller reports both pods ready: the manager is running.
    wait_for_object(&sets, "off", "CloneSet ready", TIMEOUT, |c| {
        c.status.as_ref().is_some_and(|s| s.ready_replicas == 2)
    })
    .await
    .unwrap();
    let api: Api<PodUnavailableBudget> = ns.api();
    let b: PodUnavailableBudget = serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "off-pub"},
        "spec": {"selector": {"matchLabels": {"app": "off"}}, "maxUnavailable": 1},
    }))
    .unwrap();
    match api.create(&PostParams::default(), &b).await {
        Err(kube::Error::Api(e)) => assert!(
            e.code == 400
                && e.message.contains("feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)"),
            "{e:?}"
        ),
        other => panic!("created without the gates: {other:?}"),
    }
    let pods = pods_of(&ns, "off").await;
    assert!(
        pods.iter()
            .all(|p| !p.annotations().contains_key("kruise.io/related-pub"))
    );
}

/// An invalid budget is refused with OpenKruise's message naming the field; a second budget
/// over the same workload is refused as a conflict.
#[tokio::test]
async fn invalid_and_conflicting_budgets_are_refused() {
    let (_env, ns, _m) = setup("pub-valid", &[]).await;
    let api: Api<PodUnavailableBudget> = ns.api();
    let make = |name: &str, spec: Value| -> PodUnavailableBudget {
        serde_json::from_value(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    let err = api
        .create(
            &PostParams::default(),
            &make("bad", json!({"selector": {"matchLabels": {"app": "x"}}})),
        )
        .await
        .expect_err("no maxUnavailable or minAvailable");
    assert!(
        err.to_string().contains(
            "spec.maxUnavailable, minAvailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget"
        ),
        "{err}"
    );
    let by_ref = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web"},
                        "maxUnavailable": 1});
    api.create(&PostParams::default(), &make("first", by_ref.clone()))
        .await
        .unwrap();
    let err = api
        .create(&PostParams::default(), &make("second", by_ref))
        .await
        .expect_err("conflict");
    assert!(
        err.to_string().contains(
            "pub.spec.targetReference is in conflict with other PodUnavailableBudget first"
        ),
        "{err}"
    );
}

/// The stage of a storm: a 20-pod CloneSet `storm` under the budget `storm-pub`
/// (`maxUnavailable: 2`), every pod Ready and carrying `kruise.io/related-pub`, and a watch
/// sampling how many are ready ([`sample_min_ready`]) from before the storm until [`Storm::settle`].
struct Storm {
    _env: TestEnv,
    ns: TestNamespace,
    _manager: TestManager,
    budgets: Api<PodUnavailableBudget>,
    pods: Api<Pod>,
    /// The 20 pods before the storm.
    names: Vec<String>,
    sampler: tokio::task::JoinHandle<()>,
    min_ready: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// The refusal of a disruption the budget `storm-pub` does not allow.
const STORM_DENIAL: &str = "podunavailablebudgets.policy.kruise.io \"storm-pub\" is forbidden: pub unavailable allowed is negative";

async fn storm(prefix: &str) -> Storm {
    let (env, ns, manager) = setup(prefix, &[]).await;
    create_cloneset(&ns, "storm", 20).await;
    let budgets = create_budget(
        &ns,
        "storm-pub",
        json!({"selector": {"matchLabels": {"app": "storm"}}, "maxUnavailable": 2}),
    )
    .await;
    wait_counts(&budgets, "storm-pub", (2, 20, 18, 20)).await;
    let pods: Api<Pod> = ns.api();
    // Every pod carries the annotation before the storm (the controller's patch).
    wait_for("related-pub on every pod", TIMEOUT, || async {
        let list = pods_of(&ns, "storm").await;
        (list.len() == 20
            && list
                .iter()
                .all(|p| p.annotations().contains_key("kruise.io/related-pub")))
        .then_some(())
    })
    .await
    .unwrap();
    // Watch readiness throughout: the fewest ready, active pods seen.
    let (sampler, min_ready) = sample_min_ready(pods.clone(), "storm", 20);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut names: Vec<String> = pods_of(&ns, "storm")
        .await
        .iter()
        .map(|p| p.name_any())
        .collect();
    names.sort();
    Storm {
        _env: env,
        ns,
        _manager: manager,
        budgets,
        pods,
        names,
        sampler,
        min_ready,
    }
}

impl Storm {
    /// After the storm: the replacements come up and the budget's status is consistent again
    /// (2 allowed, 20 available of 20, no pending disruption, `currentAvailable` the pods listed
    /// ready); at no sampled instant were more than 2 pods of the workload unavailable.
    async fn settle(self) {
        wait_for_object(
            &self.budgets,
            "storm-pub",
            "status (2, 20, 18, 20) with no pending disruption",
            TIMEOUT,
            |b| {
                b.status.as_ref().is_some_and(|s| {
                    counts(s) == (2, 20, 18, 20)
                        && Some(s.observed_generation) == b.meta().generation
                        && s.disrupted_pods.as_ref().is_none_or(|d| d.is_empty())
                        && s.unavailable_pods.as_ref().is_none_or(|u| u.is_empty())
                })
            },
        )
        .await
        .unwrap();
        let ready = pods_of(&self.ns, "storm")
            .await
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && kruise_e2e::pod_ready(p))
            .count();
        assert_eq!(ready, 20, "pods ready and active after the storm");
        self.sampler.abort();
        let min = self.min_ready.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            min != usize::MAX && 20 - min <= 2,
            "as many as {} of the 20 pods were unavailable at once",
            20usize.saturating_sub(min)
        );
    }
}

/// The pod webhooks hold evictions to the budget: a burst of 20 concurrent evictions of a
/// 20-pod CloneSet under `maxUnavailable: 2` admits at most 2 (each recorded in
/// `disruptedPods`), refuses the rest with OpenKruise's message, and — sampled by a watch over
/// the whole burst and the replacements — never leaves fewer than 18 pods ready.
#[tokio::test]
async fn eviction_storm_never_takes_more_than_the_budget() {
    use kube::api::EvictParams;

    let storm = storm("pub-storm").await;
    let results = futures::future::join_all(storm.names.iter().map(|n| {
        let pods = storm.pods.clone();
        async move { pods.evict(n, &EvictParams::default()).await }
    }))
    .await;
    let admitted = results.iter().filter(|r| r.is_ok()).count();
    let refused: Vec<String> = results
        .iter()
        .filter_map(|r| match r {
            Err(kube::Error::Api(e)) => Some(e.message.clone()),
            _ => None,
        })
        .collect();
    assert!(
        (1..=2).contains(&admitted),
        "{admitted} evictions admitted: {results:?}"
    );
    assert_eq!(admitted + refused.len(), 20);
    assert!(
        refused.iter().all(|m| m.contains(STORM_DENIAL)),
        "{refused:?}"
    );
    storm.settle().await;
}

/// The pod webhook holds plain deletions (`kubectl delete pod`, a DELETE with the pod's grace
/// period) to the budget: 50 concurrent DELETEs over the 20 pods of a CloneSet under
/// `maxUnavailable: 2` (every pod named two or three times) take at most 2 pods — repeated
/// DELETEs of a pod already taken pass (it is recorded, then terminating) or find it gone —
/// and every other DELETE is refused by `vpod.kb.io` with the budget's denial (403), its pod
/// left untouched; sampled by a watch over the storm and the replacements, never more than 2
/// pods are unavailable (not ready, terminating or gone) at once, and the status is consistent
/// after.
#[tokio::test]
async fn delete_storm_never_takes_more_than_the_budget() {
    use kube::api::DeleteParams;

    let storm = storm("pub-dstorm").await;
    let targets: Vec<&String> = (0..50).map(|i| &storm.names[i % 20]).collect();
    let results = futures::future::join_all(targets.iter().map(|n| {
        let pods = storm.pods.clone();
        async move { pods.delete(n, &DeleteParams::default()).await }
    }))
    .await;
    let mut taken = std::collections::BTreeSet::new();
    let mut refused = std::collections::BTreeSet::new();
    let mut gone = Vec::new();
    for (name, r) in targets.iter().zip(&results) {
        match r {
            Ok(_) => {
                taken.insert(name.as_str());
            }
            Err(kube::Error::Api(e)) if e.code == 403 => {
                assert!(
                    e.message.contains("vpod.kb.io") && e.message.contains(STORM_DENIAL),
                    "DELETE {name} refused otherwise: {}",
                    e.message
                );
                refused.insert(name.as_str());
            }
            // A repeated DELETE of a pod taken and already removed.
            Err(kube::Error::Api(e)) if e.code == 404 => gone.push(name.as_str()),
            Err(e) => panic!("DELETE {name}: {e}"),
        }
    }
    assert!(
        (1..=2).contains(&taken.len()),
        "{} pods taken by 50 DELETEs: {taken:?}",
        taken.len()
    );
    assert!(
        taken.is_disjoint(&refused),
        "a pod both taken and refused: {taken:?} {refused:?}"
    );
    assert!(
        gone.iter().all(|n| taken.contains(n)),
        "NotFound for a pod never taken: {gone:?}"
    );
    assert_eq!(
        taken.len() + refused.len(),
        20,
        "every pod either taken or refused"
    );
    let refusals = results
        .iter()
        .filter(|r| matches!(r, Err(kube::Error::Api(e)) if e.code == 403))
        .count();
    assert!(refusals >= 50 - 3 * taken.len(), "{refusals} refusals");
    // The refused pods are untouched.
    for name in &refused {
        let p = storm.pods.get(name).await.unwrap();
        assert!(
            p.metadata.deletion_timestamp.is_none(),
            "refused pod {name} is terminating"
        );
    }
    storm.settle().await;
}

/// Deletions: a dry run is judged but spends nothing, a deletion beyond the budget is refused,
/// `pub.kruise.io/no-protect: "true"` exempts a pod, and a pod not ready passes (it is not
/// available anyway).
#[tokio::test]
async fn deletions_dry_run_and_exemptions() {
    use kube::api::DeleteParams;
    let (_env, ns, m) = setup("pub-del", &[]).await;
    create_cloneset(&ns, "del", 3).await;
    let budgets = create_budget(
        &ns,
        "del-pub",
        json!({"selector": {"matchLabels": {"app": "del"}}, "maxUnavailable": 1}),
    )
    .await;
    wait_counts(&budgets, "del-pub", (1, 3, 2, 3)).await;
    let pods: Api<Pod> = ns.api();
    wait_for("related-pub on every pod", TIMEOUT, || async {
        let list = pods_of(&ns, "del").await;
        (list.len() == 3
            && list
                .iter()
                .all(|p| p.annotations().contains_key("kruise.io/related-pub")))
        .then_some(())
    })
    .await
    .unwrap();
    let mut names: Vec<String> = pods_of(&ns, "del")
        .await
        .iter()
        .map(|p| p.name_any())
        .collect();
    names.sort();

    // A dry run passes and leaves the budget as it was.
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    pods.delete(&names[0], &dry).await.unwrap();
    let b = budgets.get("del-pub").await.unwrap();
    assert_eq!(b.status.as_ref().unwrap().unavailable_allowed, 1);
    assert_eq!(b.status.unwrap().disrupted_pods, None);

    // The first deletion spends the budget; the second is refused.
    pods.delete(&names[0], &DeleteParams::default())
        .await
        .unwrap();
    let err = pods
        .delete(&names[1], &DeleteParams::default())
        .await
        .expect_err("the budget is spent");
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 403);
            assert!(
                e.message.contains("vpod.kb.io")
                    && e.message.contains(
                        "podunavailablebudgets.policy.kruise.io \"del-pub\" is forbidden: pub unavailable allowed is negative"
                    ),
                "{}",
                e.message
            );
        }
        other => panic!("unexpected error {other}"),
    }
    // OpenKruise's pod_unavailable_budget counter names the workload and the user.
    let text = m.process.metrics_text().await.expect("metrics");
    let line = format!(
        "pod_unavailable_budget{{kind_namespace_name=\"CloneSet_{}_del\"",
        ns.name()
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with(&line) && l.ends_with(" 1")),
        "{line} not in the metrics"
    );
    // Exempt: no-protect.
    pods.patch(
        &names[1],
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"pub.kruise.io/no-protect": "true"}}})),
    )
    .await
    .unwrap();
    pods.delete(&names[1], &DeleteParams::default())
        .await
        .unwrap();
}

/// With `PodUnavailableBudgetUpdateGate` the CloneSet controller checks each pod against its
/// budget before updating it (OpenKruise's `Update` step 6): an in-place rollout of 4 pods whose
/// own `maxUnavailable` is 100% goes at the budget's pace — never more than 1 pod unready —
/// and completes; the pod webhook also holds updates of other writers.
#[tokio::test]
async fn cloneset_rollout_goes_at_the_budgets_pace() {
    let (_env, ns, _m) = setup(
        "pub-roll",
        &["--feature-gates", "PodUnavailableBudgetUpdateGate=true"],
    )
    .await;
    let sets: Api<CloneSet> = ns.api();
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "roll"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "roll"}},
                 "template": template("roll"),
                 "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "100%"}},
    }))
    .unwrap();
    sets.create(&PostParams::default(), &cs).await.unwrap();
    let budgets = create_budget(
        &ns,
        "roll-pub",
        json!({"selector": {"matchLabels": {"app": "roll"}}, "maxUnavailable": 1}),
    )
    .await;
    wait_counts(&budgets, "roll-pub", (1, 4, 3, 4)).await;
    wait_for("related-pub on every pod", TIMEOUT, || async {
        let list = pods_of(&ns, "roll").await;
        (list.len() == 4
            && list
                .iter()
                .all(|p| p.annotations().contains_key("kruise.io/related-pub")))
        .then_some(())
    })
    .await
    .unwrap();

    let (sampler, min_ready) = sample_min_ready(ns.api(), "roll", 4);
    tokio::time::sleep(Duration::from_millis(500)).await;
    sets.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": "nginx:1.26"}]}}}})),
    )
    .await
    .unwrap();
    wait_for_object(
        &sets,
        "roll",
        "rollout complete",
        Duration::from_secs(180),
        |c| {
            c.status.as_ref().is_some_and(|s| {
                s.observed_generation == c.metadata.generation
                    && s.updated_ready_replicas == 4
                    && s.ready_replicas == 4
            })
        },
    )
    .await
    .unwrap();
    sampler.abort();
    let min = min_ready.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        min >= 3 && min != usize::MAX,
        "as few as {min} pods were ready"
    );
}

/// Admission that cannot block a cluster: with the manager killed, pods of a namespace holding
/// no budget are still evicted and deleted (the eviction webhook is called only in namespaces
/// with a budget, the pod webhook only for pods naming one), while in a namespace with a budget
/// an eviction is refused by the unreachable webhook (`failurePolicy: Fail`), as OpenKruise's.
#[tokio::test]
async fn a_killed_manager_blocks_no_eviction_outside_budgets() {
    use kube::api::{DeleteParams, EvictParams};
    let plain = |name: &str, app: &str| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        }))
        .unwrap()
    };
    // No budget in the namespace.
    let (_env, ns, mut m) = setup("pub-dead", &[]).await;
    let pods: Api<Pod> = ns.api();
    for n in ["free-0", "free-1"] {
        pods.create(&PostParams::default(), &plain(n, "free"))
            .await
            .unwrap();
    }
    m.process.kill();
    pods.evict("free-0", &EvictParams::default())
        .await
        .expect("eviction with the manager down in a namespace without budgets");
    pods.delete("free-1", &DeleteParams::default())
        .await
        .expect("deletion with the manager down");

    // A namespace with a budget: evictions go to the (dead) webhook.
    let (_env, ns, mut m) = setup("pub-dead2", &[]).await;
    let pods: Api<Pod> = ns.api();
    create_budget(
        &ns,
        "guard",
        json!({"selector": {"matchLabels": {"app": "guarded"}}, "maxUnavailable": 1}),
    )
    .await;
    pods.create(&PostParams::default(), &plain("guarded-0", "guarded"))
        .await
        .unwrap();
    // The eviction webhook's scope follows the budget: wait until the namespace is in
    // `vpodeviction.kb.io`'s matchConditions (a dry-run eviction succeeding proves nothing: it
    // also succeeds while the webhook is not called yet).
    m.wait_webhook_condition("vpodeviction.kb.io", &format!("'{}'", ns.name()), TIMEOUT)
        .await
        .unwrap();
    // And the API server calls it (its view of the configuration may lag the object): a
    // dry-run eviction, judged without effect, shows up in the manager's request counter.
    wait_for(
        "an eviction judged by the live webhook",
        TIMEOUT,
        || async {
            let before = m.process.webhook_requests("/validate-pod").await?;
            let dry = EvictParams {
                delete_options: Some(DeleteParams {
                    dry_run: true,
                    ..DeleteParams::default()
                }),
                ..EvictParams::default()
            };
            pods.evict("guarded-0", &dry).await.ok()?;
            let after = m.process.webhook_requests("/validate-pod").await?;
            (after > before).then_some(())
        },
    )
    .await
    .unwrap();
    m.process.kill();
    let err = pods
        .evict("guarded-0", &EvictParams::default())
        .await
        .expect_err("the webhook is down");
    assert!(err.to_string().contains("vpodeviction.kb.io"), "{err}");
}
