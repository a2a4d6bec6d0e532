//! Automatic PodUnavailableBudgets end to end on the testbed (the `autobudget` controller, a
//! kruise-rs extension): a workload annotated `policy.kruise-rs.io/pod-unavailable-budget` gets
//! a budget that follows it — created with `maxUnavailable` from the annotation or the
//! workload's update strategy, updated with it, reverted when edited by hand, deleted when the
//! annotation goes and, through its owner reference, by the garbage collector with the
//! workload — and that protects its pods as any budget. A budget the workload does not own is
//! never touched, and a malformed value is reported. Each test runs its own `kruise-manager` as
//! users run it (webhooks on, default flags), restricted to the test's namespace.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_api::policy::v1alpha1::{PodUnavailableBudget, TargetReference};
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const ANNOTATION: &str = "policy.kruise-rs.io/pod-unavailable-budget";

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

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    })
}

fn annotations(value: Option<&str>) -> Value {
    match value {
        Some(v) => json!({ ANNOTATION: v }),
        None => json!({}),
    }
}

async fn create_cloneset(
    ns: &TestNamespace,
    name: &str,
    replicas: i32,
    annotation: Option<&str>,
    strategy: Value,
) -> Api<CloneSet> {
    let api: Api<CloneSet> = ns.api();
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name, "annotations": annotations(annotation)},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": template(name), "updateStrategy": strategy},
    }))
    .unwrap();
    api.create(&PostParams::default(), &cs).await.unwrap();
    api
}

/// Waits until budget `name` exists with `maxUnavailable` `want` (and no `minAvailable`).
async fn wait_budget(
    api: &Api<PodUnavailableBudget>,
    name: &str,
    want: IntOrString,
) -> PodUnavailableBudget {
    wait_for_object(
        api,
        name,
        &format!("maxUnavailable {want:?}"),
        TIMEOUT,
        |b| b.spec.max_unavailable.as_ref() == Some(&want) && b.spec.min_available.is_none(),
    )
    .await
    .unwrap()
}

async fn wait_gone(api: &Api<PodUnavailableBudget>, name: &str) {
    wait_for(&format!("budget {name} gone"), TIMEOUT, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await
    .unwrap();
}

/// Waits for an Event with `reason` about object `regarding` whose note contains `text`.
async fn wait_event(env: &TestEnv, ns: &TestNamespace, reason: &str, regarding: &str, text: &str) {
    let events: Api<Event> = Api::namespaced(env.client.clone(), ns.name());
    wait_for(
        &format!("{reason} event on {regarding} saying {text:?}"),
        TIMEOUT,
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some(reason)
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
                        && e.note.as_deref().is_some_and(|n| n.contains(text))
                })
                .then_some(())
        },
    )
    .await
    .unwrap();
}

fn patch_annotation(value: Option<&str>) -> Patch<Value> {
    Patch::Merge(json!({"metadata": {"annotations": { ANNOTATION: value }}}))
}

/// A CloneSet annotated `"true"`: the budget takes the CloneSet's `maxUnavailable`, names the
/// CloneSet in `targetRef` and as its controller owner, and gets its status from the
/// PodUnavailableBudget controller; it follows the CloneSet's strategy and the annotation's
/// value, a hand edit is reverted, it holds pod deletions (a second deletion of a 3-pod
/// CloneSet under `maxUnavailable: 1` is refused), and it goes when the annotation goes.
#[tokio::test]
async fn cloneset_budget_follows_its_workload() {
    let (_env, ns, _m) = setup("ab-cs").await;
    let sets = create_cloneset(&ns, "web", 3, Some("true"), json!({"maxUnavailable": 2})).await;
    let budgets: Api<PodUnavailableBudget> = ns.api();
    let b = wait_budget(&budgets, "cloneset-web", IntOrString::Int(2)).await;
    let cs = sets.get("web").await.unwrap();
    assert_eq!(
        b.spec.target_reference,
        Some(TargetReference {
            api_version: Some("apps.kruise.io/v1alpha1".into()),
            kind: Some("CloneSet".into()),
            name: Some("web".into()),
        })
    );
    assert_eq!(b.spec.selector, None);
    let owner = &b.owner_references()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            Some(owner.uid.as_str()),
            owner.controller,
            owner.block_owner_deletion
        ),
        (
            "CloneSet",
            "web",
            cs.meta().uid.as_deref(),
            Some(true),
            Some(true)
        )
    );
    assert_eq!(
        b.labels()
            .get("policy.kruise-rs.io/auto-budget")
            .map(String::as_str),
        Some("true")
    );
    // The PodUnavailableBudget controller computes its status: 3 pods, 2 may go, 1 must stay.
    let status = |b: &PodUnavailableBudget| {
        b.status.as_ref().map(|s| {
            (
                s.unavailable_allowed,
                s.current_available,
                s.desired_available,
                s.total_replicas,
            )
        })
    };
    wait_for_object(
        &budgets,
        "cloneset-web",
        "status (2, 3, 1, 3)",
        TIMEOUT,
        |b| status(b) == Some((2, 3, 1, 3)),
    )
    .await
    .unwrap();

    // The CloneSet's strategy changes: the budget follows.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"updateStrategy": {"maxUnavailable": "50%"}}})),
    )
    .await
    .unwrap();
    wait_budget(&budgets, "cloneset-web", IntOrString::String("50%".into())).await;

    // An explicit value wins.
    sets.patch("web", &PatchParams::default(), &patch_annotation(Some("1")))
        .await
        .unwrap();
    wait_budget(&budgets, "cloneset-web", IntOrString::Int(1)).await;

    // A hand edit of the budget's spec is reverted.
    budgets
        .patch(
            "cloneset-web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxUnavailable": 3}})),
        )
        .await
        .unwrap();
    wait_for_object(&budgets, "cloneset-web", "hand edit seen", TIMEOUT, |b| {
        b.spec.max_unavailable != Some(IntOrString::Int(3))
    })
    .await
    .unwrap();
    wait_budget(&budgets, "cloneset-web", IntOrString::Int(1)).await;

    // The budget holds deletions: 3 ready pods, 1 may go.
    wait_for_object(
        &budgets,
        "cloneset-web",
        "status (1, 3, 2, 3)",
        TIMEOUT,
        |b| status(b) == Some((1, 3, 2, 3)),
    )
    .await
    .unwrap();
    let pods: Api<Pod> = ns.api();
    let names = wait_for("3 ready pods naming the budget", TIMEOUT, || async {
        let list = pods
            .list(&ListParams::default().labels("app=web"))
            .await
            .ok()?;
        let ok = list.items.len() == 3
            && list.items.iter().all(|p| {
                kruise_e2e::pod_ready(p)
                    && p.annotations()
                        .get("kruise.io/related-pub")
                        .map(String::as_str)
                        == Some("cloneset-web")
            });
        ok.then(|| list.items.iter().map(|p| p.name_any()).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    pods.delete(&names[0], &DeleteParams::default())
        .await
        .unwrap();
    match pods.delete(&names[1], &DeleteParams::default()).await {
        Err(kube::Error::Api(e)) => assert!(
            e.code == 403 && e.message.contains("pub unavailable allowed is negative"),
            "{e:?}"
        ),
        other => panic!("second deletion admitted: {other:?}"),
    }

    // The annotation goes: so does the budget.
    sets.patch("web", &PatchParams::default(), &patch_annotation(None))
        .await
        .unwrap();
    wait_gone(&budgets, "cloneset-web").await;
}

/// A Deployment annotated `"30%"` gets `deployment-<name>` with that value; deleting the
/// Deployment deletes the budget (garbage collection through the owner reference).
#[tokio::test]
async fn deployment_budget_goes_with_the_deployment() {
    let (_env, ns, _m) = setup("ab-dep").await;
    let deployments: Api<Deployment> = ns.api();
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "api", "annotations": annotations(Some("30%"))},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                 "template": template("api")},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let budgets: Api<PodUnavailableBudget> = ns.api();
    let b = wait_budget(
        &budgets,
        "deployment-api",
        IntOrString::String("30%".into()),
    )
    .await;
    assert_eq!(
        b.spec
            .target_reference
            .as_ref()
            .and_then(|r| r.api_version.as_deref()),
        Some("apps/v1")
    );
    // "true" takes the Deployment's default strategy: 25%.
    deployments
        .patch(
            "api",
            &PatchParams::default(),
            &patch_annotation(Some("true")),
        )
        .await
        .unwrap();
    wait_budget(
        &budgets,
        "deployment-api",
        IntOrString::String("25%".into()),
    )
    .await;
    deployments
        .delete("api", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&budgets, "deployment-api").await;
}

/// Both StatefulSet kinds: an `apps/v1` StatefulSet annotated `"true"` gets `statefulset-db`
/// with the default `1`; an Advanced StatefulSet of the same name gets
/// `advancedstatefulset-db` with its `rollingUpdate.maxUnavailable`.
#[tokio::test]
async fn statefulsets_get_budgets_of_their_own() {
    let (_env, ns, _m) = setup("ab-sts").await;
    let native: Api<StatefulSet> = ns.api();
    let s: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db", "annotations": annotations(Some("true"))},
        "spec": {"replicas": 1, "serviceName": "db",
                 "selector": {"matchLabels": {"app": "db"}}, "template": template("db")},
    }))
    .unwrap();
    native.create(&PostParams::default(), &s).await.unwrap();
    let advanced: Api<AdvancedStatefulSet> = ns.api();
    let a: AdvancedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "db", "annotations": annotations(Some("true"))},
        "spec": {"replicas": 1, "serviceName": "adb", "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": {"app": "adb"}}, "template": template("adb"),
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxUnavailable": 2}}},
    }))
    .unwrap();
    advanced.create(&PostParams::default(), &a).await.unwrap();
    let budgets: Api<PodUnavailableBudget> = ns.api();
    let b = wait_budget(&budgets, "statefulset-db", IntOrString::Int(1)).await;
    assert_eq!(
        b.spec
            .target_reference
            .as_ref()
            .and_then(|r| r.api_version.as_deref()),
        Some("apps/v1")
    );
    let b = wait_budget(&budgets, "advancedstatefulset-db", IntOrString::Int(2)).await;
    assert_eq!(
        b.spec
            .target_reference
            .as_ref()
            .and_then(|r| r.api_version.as_deref()),
        Some("apps.kruise.io/v1beta1")
    );
    assert_eq!(b.owner_references()[0].kind, "StatefulSet");
}

/// A budget the workload does not own is never touched: one with the automatic budget's name
/// (an `AutoBudgetConflict` Warning names it), and one of another name covering the workload
/// (named too; once it is deleted the automatic budget is created).
#[tokio::test]
async fn foreign_budgets_are_left_alone() {
    let (env, ns, _m) = setup("ab-conf").await;
    let budgets: Api<PodUnavailableBudget> = ns.api();
    let make = |name: &str, spec: Value| -> PodUnavailableBudget {
        serde_json::from_value(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    budgets
        .create(
            &PostParams::default(),
            &make(
                "cloneset-own",
                json!({"selector": {"matchLabels": {"app": "own"}}, "maxUnavailable": 5}),
            ),
        )
        .await
        .unwrap();
    budgets
        .create(
            &PostParams::default(),
            &make(
                "hand-made",
                json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "other"},
                       "minAvailable": 1}),
            ),
        )
        .await
        .unwrap();
    create_cloneset(&ns, "own", 1, Some("true"), json!({})).await;
    create_cloneset(&ns, "other", 1, Some("true"), json!({})).await;
    wait_event(
        &env,
        &ns,
        "AutoBudgetConflict",
        "own",
        &format!("PodUnavailableBudget {}/cloneset-own exists", ns.name()),
    )
    .await;
    wait_event(
        &env,
        &ns,
        "AutoBudgetConflict",
        "other",
        &format!(
            "PodUnavailableBudget {}/hand-made already covers",
            ns.name()
        ),
    )
    .await;
    let b = budgets.get("cloneset-own").await.unwrap();
    assert_eq!(b.spec.max_unavailable, Some(IntOrString::Int(5)));
    assert!(b.owner_references().is_empty());
    assert!(b.spec.selector.is_some());
    assert!(budgets.get_opt("cloneset-other").await.unwrap().is_none());
    budgets
        .delete("hand-made", &DeleteParams::default())
        .await
        .unwrap();
    wait_budget(
        &budgets,
        "cloneset-other",
        IntOrString::String("20%".into()),
    )
    .await;
    // The foreign one is still as it was.
    let b = budgets.get("cloneset-own").await.unwrap();
    assert_eq!(b.spec.max_unavailable, Some(IntOrString::Int(5)));
}

/// A malformed value gets a Warning Event naming the annotation and the value, and no budget.
#[tokio::test]
async fn a_malformed_value_is_reported() {
    let (env, ns, _m) = setup("ab-bad").await;
    let sets = create_cloneset(&ns, "bad", 1, Some("abc"), json!({})).await;
    wait_event(
        &env,
        &ns,
        "AutoBudgetInvalid",
        "bad",
        "policy.kruise-rs.io/pod-unavailable-budget=\"abc\"",
    )
    .await;
    let budgets: Api<PodUnavailableBudget> = ns.api();
    assert!(budgets.get_opt("cloneset-bad").await.unwrap().is_none());
    sets.patch(
        "bad",
        &PatchParams::default(),
        &patch_annotation(Some("150%")),
    )
    .await
    .unwrap();
    wait_event(
        &env,
        &ns,
        "AutoBudgetInvalid",
        "bad",
        "policy.kruise-rs.io/pod-unavailable-budget=\"150%\"",
    )
    .await;
    assert!(budgets.get_opt("cloneset-bad").await.unwrap().is_none());
    // Fixed: the budget appears.
    sets.patch("bad", &PatchParams::default(), &patch_annotation(Some("0")))
        .await
        .unwrap();
    wait_budget(&budgets, "cloneset-bad", IntOrString::Int(0)).await;
}
