//! WorkloadSpread end to end on the testbed (OpenKruise v1.9.0 `pkg/controller/workloadspread`,
//! `pkg/webhook/pod/*/workloadspread.go`, `pkg/webhook/workloadspread`): pods of a CloneSet and
//! of a Deployment spread over subsets at creation (`maxReplicas`, the subset's node term and
//! patch, the `apps.kruise.io/matched-workloadspread` annotation), the status per subset
//! (versioned for a Deployment), the deletion cost that makes scale-in take pods beyond a
//! subset's limit first, adaptive rescheduling of pods a subset cannot schedule, pods created
//! before their WorkloadSpread adopted by their node, and the validating webhook's denials.
//! Subsets select the testbed's kwok nodes by their `topology.kubernetes.io/zone` labels
//! (zone-a, zone-b, zone-c), so no test adds cluster-wide fixtures. Each test runs its own
//! `kruise-manager` (webhooks on, default gates: WorkloadSpread is Beta, on) in its namespace.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{CloneSet, WorkloadSpread};
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const ANNOTATION: &str = "apps.kruise.io/matched-workloadspread";
const COST: &str = "controller.kubernetes.io/pod-deletion-cost";

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

fn zone_subset(name: &str, zone: &str, max: Option<Value>) -> Value {
    let mut s = json!({"name": name,
        "requiredNodeSelectorTerm": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]},
        "patch": {"metadata": {"annotations": {"subset": name}}}});
    if let Some(m) = max {
        s["maxReplicas"] = m;
    }
    s
}

async fn create_spread(
    ns: &TestNamespace,
    target: Value,
    subsets: Value,
    extra: Value,
) -> Api<WorkloadSpread> {
    let api: Api<WorkloadSpread> = ns.api();
    let mut spec = json!({"targetRef": target, "subsets": subsets});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    let ws: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws"}, "spec": spec}))
    .unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    api
}

fn cloneset_ref() -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"})
}

async fn create_cloneset(ns: &TestNamespace, replicas: i32) -> Api<CloneSet> {
    let api: Api<CloneSet> = ns.api();
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "cs"}},
            "template": {"metadata": {"labels": {"app": "cs"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}))
    .unwrap();
    api.create(&PostParams::default(), &cs).await.unwrap();
    api
}

async fn pods(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    let api: Api<Pod> = ns.api();
    api.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn annotation<'a>(p: &'a Pod, key: &str) -> Option<&'a str> {
    p.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

fn subset_of(p: &Pod) -> Option<String> {
    let v: Value = serde_json::from_str(annotation(p, ANNOTATION)?).ok()?;
    v["subset"].as_str().map(str::to_string)
}

/// Waits until the pods of `app` are `want` by subset (and counted, running, with costs).
async fn wait_spread(ns: &TestNamespace, app: &str, want: &[(&str, usize, &str)]) -> Vec<Pod> {
    let what = format!("pods of {app} spread as {want:?}");
    wait_for(&what, TIMEOUT, || async {
        let ps = pods(ns, app).await;
        let mut by: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        for p in &ps {
            by.entry(subset_of(p).unwrap_or_default())
                .or_default()
                .push(p);
        }
        let ok = want.iter().all(|(s, n, cost)| {
            by.get(*s).map_or(0, Vec::len) == *n
                && by
                    .get(*s)
                    .into_iter()
                    .flatten()
                    .all(|p| annotation(p, COST) == Some(*cost))
        }) && ps.len() == want.iter().map(|w| w.1).sum::<usize>();
        ok.then_some(ps)
    })
    .await
    .unwrap()
}

/// Waits until the test manager's `mpod.kb.io` condition names the test's namespace.
async fn wait_scope(env: &TestEnv, ns: &TestNamespace) {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    let api: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    let name = ns.name().to_string();
    wait_for(
        "the pod webhook's scope to name the namespace",
        TIMEOUT,
        || async {
            let list = api.list(&ListParams::default()).await.ok()?;
            let quoted = format!("'{name}'");
            list.items
                .iter()
                .filter(|c| {
                    c.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.ends_with(&name))
                })
                .flat_map(|c| c.webhooks.iter().flatten())
                .filter(|w| w.name == "mpod.kb.io")
                .any(|w| {
                    w.match_conditions
                        .as_ref()
                        .is_none_or(|m| m.iter().any(|c| c.expression.contains(&quoted)))
                })
                .then_some(())
        },
    )
    .await
    .unwrap();
}

/// (name, replicas, missingReplicas) of every subset status.
fn statuses(ws: &WorkloadSpread) -> Vec<(String, i32, i32)> {
    ws.status
        .as_ref()
        .and_then(|s| s.subset_statuses.as_ref())
        .map(|ss| {
            ss.iter()
                .map(|s| (s.name.clone(), s.replicas, s.missing_replicas))
                .collect()
        })
        .unwrap_or_default()
}

async fn wait_status(api: &Api<WorkloadSpread>, want: &[(&str, i32, i32)]) -> WorkloadSpread {
    let want: Vec<(String, i32, i32)> = want
        .iter()
        .map(|(n, r, m)| (n.to_string(), *r, *m))
        .collect();
    wait_for_object(
        api,
        "ws",
        &format!("subset statuses {want:?}"),
        TIMEOUT,
        |ws| {
            statuses(ws) == want
                && ws
                    .status
                    .as_ref()
                    .and_then(|s| s.subset_statuses.as_ref())
                    .is_some_and(|ss| {
                        ss.iter().all(|s| {
                            s.creating_pods.as_ref().is_none_or(|m| m.is_empty())
                                && s.deleting_pods.as_ref().is_none_or(|m| m.is_empty())
                        })
                    })
        },
    )
    .await
    .unwrap()
}

/// Pods are assigned at creation: the first subset up to its `maxReplicas` (with its node term
/// and patch), the rest to the unlimited one; the status counts them and the deletion cost
/// ranks the first subset higher. Lowering the limit marks the pods beyond it to go first, and a
/// scale-in takes exactly those.
#[tokio::test]
async fn cloneset_pods_spread_by_max_replicas_and_scale_in_follows_the_limits() {
    let (_env, ns, _manager) = setup("ws-cloneset").await;
    let ws_api = create_spread(
        &ns,
        cloneset_ref(),
        json!([
            zone_subset("a", "zone-a", Some(json!(2))),
            zone_subset("b", "zone-b", None)
        ]),
        json!({}),
    )
    .await;
    let cs_api = create_cloneset(&ns, 5).await;
    let ps = wait_spread(&ns, "cs", &[("a", 2, "200"), ("b", 3, "100")]).await;
    for p in &ps {
        let s = subset_of(p).unwrap();
        assert_eq!(
            annotation(p, "subset"),
            Some(s.as_str()),
            "the subset patch is applied"
        );
        let terms = &p
            .spec
            .as_ref()
            .unwrap()
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms;
        let zone = if s == "a" { "zone-a" } else { "zone-b" };
        assert_eq!(
            terms[0].match_expressions.as_ref().unwrap()[0]
                .values
                .as_ref()
                .unwrap()[0],
            zone
        );
    }
    wait_status(&ws_api, &[("a", 2, 0), ("b", 3, -1)]).await;

    // Subset a may hold one pod only now: one of its pods is the first to go.
    ws_api
        .patch(
            "ws",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"subsets": [
            zone_subset("a", "zone-a", Some(json!(1))), zone_subset("b", "zone-b", None)]}})),
        )
        .await
        .unwrap();
    let ps = wait_for("a negative deletion cost in subset a", TIMEOUT, || async {
        let ps = pods(&ns, "cs").await;
        let neg: Vec<String> = ps
            .iter()
            .filter(|p| subset_of(p).as_deref() == Some("a") && annotation(p, COST) == Some("-100"))
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        (neg.len() == 1).then_some(neg)
    })
    .await
    .unwrap();
    cs_api
        .patch(
            "cs",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    let left = wait_spread(&ns, "cs", &[("a", 1, "200"), ("b", 3, "100")]).await;
    assert!(
        left.iter()
            .all(|p| p.metadata.name.as_ref() != Some(&ps[0])),
        "the pod beyond the limit went"
    );
    wait_status(&ws_api, &[("a", 1, 0), ("b", 3, -1)]).await;
}

/// A Deployment's pods (through its ReplicaSet) are spread the same way; the status is also
/// kept per version (`pod-template-hash`).
#[tokio::test]
async fn deployment_pods_are_spread_with_a_versioned_status() {
    let (_env, ns, _manager) = setup("ws-deploy").await;
    let ws_api = create_spread(
        &ns,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "dp"}),
        json!([
            zone_subset("a", "zone-a", Some(json!(1))),
            zone_subset("b", "zone-b", None)
        ]),
        json!({}),
    )
    .await;
    // A Deployment's pods reach the pod webhook only once its scope names the namespace (the
    // configuration is re-applied when the first WorkloadSpread of a namespace appears).
    wait_scope(&_env, &ns).await;
    let api: Api<Deployment> = ns.api();
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "dp"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "dp"}},
            "template": {"metadata": {"labels": {"app": "dp"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}))
    .unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let ps = wait_spread(&ns, "dp", &[("a", 1, "200"), ("b", 2, "100")]).await;
    let hash = ps[0].metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    let ws = wait_status(&ws_api, &[("a", 1, 0), ("b", 2, -1)]).await;
    let versioned = ws
        .status
        .unwrap()
        .versioned_subset_statuses
        .unwrap_or_default();
    let v = versioned
        .get(&hash)
        .expect("a status for the pods' version");
    assert_eq!(v.iter().map(|s| s.replicas).collect::<Vec<_>>(), vec![1, 2]);
}

/// With `scheduleStrategy: Adaptive`, pods a subset cannot schedule (no node in zone-x) are
/// deleted after `rescheduleCriticalSeconds`, the subset is marked unschedulable and their
/// replacements go to the next subset.
#[tokio::test]
async fn adaptive_strategy_reschedules_pods_a_subset_cannot_schedule() {
    let (_env, ns, _manager) = setup("ws-adaptive").await;
    let ws_api = create_spread(
        &ns,
        cloneset_ref(),
        json!([zone_subset("x", "zone-x", Some(json!(2))), zone_subset("b", "zone-b", None)]),
        json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 3}}}),
    )
    .await;
    create_cloneset(&ns, 3).await;
    wait_for_object(&ws_api, "ws", "subset x unschedulable", TIMEOUT, |ws| {
        ws.status
            .as_ref()
            .and_then(|s| s.subset_statuses.as_ref())
            .is_some_and(|ss| {
                ss[0]
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Schedulable" && c.status == "False")
            })
    })
    .await
    .unwrap();
    wait_for("all pods running in subset b", TIMEOUT, || async {
        let ps = pods(&ns, "cs").await;
        (ps.len() == 3
            && ps.iter().all(|p| {
                subset_of(p).as_deref() == Some("b")
                    && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
            }))
        .then_some(())
    })
    .await
    .unwrap();
}

/// Pods created before their WorkloadSpread are assigned to the subset their node fits (the
/// annotation and the subset patch's metadata written to them).
#[tokio::test]
async fn existing_pods_are_adopted_by_their_node() {
    let (_env, ns, _manager) = setup("ws-existing").await;
    let cs_api = create_cloneset(&ns, 3).await;
    wait_for_object(&cs_api, "cs", "3 ready replicas", TIMEOUT, |c| {
        c.status.as_ref().is_some_and(|s| s.ready_replicas == 3)
    })
    .await
    .unwrap();
    let ps = pods(&ns, "cs").await;
    let ws_api = create_spread(
        &ns,
        cloneset_ref(),
        json!([
            zone_subset("a", "zone-a", None),
            zone_subset("b", "zone-b", None),
            zone_subset("c", "zone-c", None)
        ]),
        json!({}),
    )
    .await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(_env.client.clone());
    wait_for(
        "every pod annotated with its node's subset",
        TIMEOUT,
        || async {
            let now = pods(&ns, "cs").await;
            let mut ok = now.len() == ps.len();
            for p in &now {
                let node = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default();
                let zone = nodes.get(&node).await.ok().and_then(|n| {
                    n.metadata
                        .labels
                        .unwrap_or_default()
                        .get("topology.kubernetes.io/zone")
                        .cloned()
                });
                let want = zone.map(|z| z.trim_start_matches("zone-").to_string());
                ok &= subset_of(p) == want && annotation(p, "subset") == want.as_deref();
            }
            ok.then_some(())
        },
    )
    .await
    .unwrap();
    wait_for_object(&ws_api, "ws", "3 pods counted", TIMEOUT, |ws| {
        statuses(ws).iter().map(|s| s.1).sum::<i32>() == 3
    })
    .await
    .unwrap();
}

/// The validating webhook's denials, worded as OpenKruise's.
#[tokio::test]
async fn validation_refuses_conflicts_bad_limits_and_target_changes() {
    let (_env, ns, _manager) = setup("ws-validate").await;
    let api = create_spread(
        &ns,
        cloneset_ref(),
        json!([zone_subset("a", "zone-a", None)]),
        json!({}),
    )
    .await;
    let second: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "other"},
        "spec": {"targetRef": cloneset_ref(), "subsets": [{"name": "a"}]}}))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &second)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ws.spec.targetRef is in conflict with other WorkloadSpread ws"),
        "{err}"
    );

    let mut bad = second.clone();
    bad.spec.target_reference.name = "cs2".into();
    bad.spec.subsets = serde_json::from_value(
        json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b", "maxReplicas": "30%"}]),
    )
    .unwrap();
    let err = api
        .create(&PostParams::default(), &bad)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent"
        ),
        "{err}"
    );

    let err = api
        .patch(
            "ws",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetRef": {"name": "other"}}})),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("change TargetReference is not permitted for WorkloadSpread"),
        "{err}"
    );
}
