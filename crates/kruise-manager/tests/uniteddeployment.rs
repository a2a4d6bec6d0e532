//! UnitedDeployment controller and webhooks end to end on the testbed (OpenKruise v1.9.0
//! `pkg/controller/uniteddeployment`, `pkg/webhook/uniteddeployment`): replicas allocated to the
//! subsets (the elastic min/max allocator, the specific allocator with percentages) and followed
//! through the `/scale` subresource; subset workloads of the four template kinds
//! (`<ud>-<subset>-<random>`, subset and revision labels, node selector term and tolerations);
//! manual partitions holding a subset back during an update; a subset's patch; the adaptive
//! strategy moving replicas out of a subset whose pods cannot be scheduled (and, in
//! reservation mode, keeping them reserved with temporary pods elsewhere); the webhooks'
//! defaults and refusals; and a restarted manager that changes nothing. Each test runs its own
//! `kruise-manager` (webhooks on) restricted to its namespace.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{CloneSet, UnitedDeployment};
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const SUBSET: &str = "apps.kruise.io/subset-name";
const REVISION: &str = "apps.kruise.io/controller-revision-hash";
const RESERVED: &str = "apps.kruise.io/united-deployment-reserved-pod";

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

fn pod_template(app: &str, image: &str) -> Value {
    json!({"metadata": {"labels": {"app": app}},
           "spec": {"containers": [{"name": "main", "image": image}]}})
}

/// A template of `kind` (`deploymentTemplate`, `cloneSetTemplate`, …) for pods labelled `app`.
fn template(kind: &str, app: &str, image: &str) -> Value {
    let mut spec =
        json!({"selector": {"matchLabels": {"app": app}}, "template": pod_template(app, image)});
    if kind.contains("tatefulSet") {
        spec["serviceName"] = json!(app);
    }
    json!({kind: {"metadata": {"labels": {"app": app}}, "spec": spec}})
}

async fn create_ud(ns: &TestNamespace, name: &str, spec: Value) -> Api<UnitedDeployment> {
    let api: Api<UnitedDeployment> = ns.api();
    let obj: UnitedDeployment = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    api
}

/// The subset workloads of kind `K` controlled by UnitedDeployment `ud`, by subset name.
async fn subsets<K>(ns: &TestNamespace, ud: &UnitedDeployment) -> BTreeMap<String, K>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = ns.api();
    let uid = ud.uid().unwrap();
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|w| {
            w.meta()
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
        .map(|w| (w.meta().labels.as_ref().unwrap()[SUBSET].clone(), w))
        .collect()
}

fn replicas_of(v: &Value) -> i64 {
    v["spec"]["replicas"].as_i64().unwrap_or(-1)
}

async fn subset_replicas<K>(ns: &TestNamespace, ud: &UnitedDeployment) -> Vec<i64>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    subsets::<K>(ns, ud)
        .await
        .values()
        .map(|w| replicas_of(&serde_json::to_value(w).unwrap()))
        .collect()
}

async fn wait_subset_replicas<K>(
    ns: &TestNamespace,
    api: &Api<UnitedDeployment>,
    name: &str,
    want: &[i64],
) where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let ud = api.get(name).await.unwrap();
    wait_for(&format!("subset replicas {want:?}"), TIMEOUT, || async {
        let got = subset_replicas::<K>(ns, &ud).await;
        (got == want).then_some(())
    })
    .await
    .unwrap();
}

async fn scale(api: &Api<UnitedDeployment>, name: &str, replicas: i32) {
    api.patch_scale(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn elastic_allocation_follows_scale_subresource() {
    let (_env, ns, _m) = setup("ud-elastic").await;
    let api = create_ud(
        &ns,
        "elastic",
        json!({
            "replicas": 3,
            "selector": {"matchLabels": {"app": "elastic"}},
            "template": template("deploymentTemplate", "elastic", "nginx:1.25"),
            "topology": {"subsets": [
                {"name": "subset-0", "minReplicas": 1, "maxReplicas": 2},
                {"name": "subset-1", "minReplicas": 1, "maxReplicas": 2},
                {"name": "subset-2", "minReplicas": 1}]},
        }),
    )
    .await;
    // Defaults of the mutating webhook.
    let created = api.get("elastic").await.unwrap();
    assert_eq!(created.spec.revision_history_limit, Some(10));
    let strategy = created.spec.update_strategy.clone().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("Manual"));
    wait_subset_replicas::<Deployment>(&ns, &api, "elastic", &[1, 1, 1]).await;
    // Scale through /scale: the status follows once kwok runs the pods.
    scale(&api, "elastic", 7).await;
    wait_subset_replicas::<Deployment>(&ns, &api, "elastic", &[2, 2, 3]).await;
    let ud = wait_for_object(
        &api,
        "elastic",
        "7 ready replicas",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(7) && s.replicas == 7)
        },
    )
    .await
    .unwrap();
    let status = ud.status.unwrap();
    assert_eq!(
        status.subset_replicas.unwrap(),
        BTreeMap::from([
            ("subset-0".to_owned(), 2),
            ("subset-1".to_owned(), 2),
            ("subset-2".to_owned(), 3)
        ])
    );
    assert_eq!(status.label_selector.as_deref(), Some("app=elastic"));
    let s = api.get_scale("elastic").await.unwrap();
    assert_eq!(s.status.unwrap().replicas, 7);
    scale(&api, "elastic", 1).await;
    wait_subset_replicas::<Deployment>(&ns, &api, "elastic", &[1, 0, 0]).await;
}

#[tokio::test]
async fn specific_allocation_and_webhook_refusals() {
    let (_env, ns, _m) = setup("ud-specific").await;
    let api = create_ud(
        &ns,
        "specific",
        json!({
            "replicas": 3,
            "selector": {"matchLabels": {"app": "specific"}},
            "template": template("cloneSetTemplate", "specific", "nginx:1.25"),
            "topology": {"subsets": [
                {"name": "subset-0", "replicas": "25%"},
                {"name": "subset-1", "replicas": "25%"},
                {"name": "subset-2"}]},
        }),
    )
    .await;
    wait_subset_replicas::<CloneSet>(&ns, &api, "specific", &[1, 1, 1]).await;
    scale(&api, "specific", 4).await;
    wait_subset_replicas::<CloneSet>(&ns, &api, "specific", &[1, 1, 2]).await;
    scale(&api, "specific", 1).await;
    wait_subset_replicas::<CloneSet>(&ns, &api, "specific", &[0, 0, 1]).await;

    // Refusals of the validating webhook, worded as OpenKruise's.
    let bad: UnitedDeployment = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "bad"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "bad"}},
            "template": template("cloneSetTemplate", "bad", "nginx:1.25"),
            "topology": {"subsets": [{"name": "a", "replicas": 1}, {"name": "a", "minReplicas": 1}]}},
    }))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &bad)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("duplicated subset name a"), "{err}");
    assert!(
        err.contains("mutually exclusive in a UnitedDeployment"),
        "{err}"
    );
    // A subset's node selector term cannot change.
    let err = api
        .patch(
            "specific",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"topology": {"subsets": [
                {"name": "subset-0", "replicas": "25%", "nodeSelectorTerm": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"name": "subset-1", "replicas": "25%"}, {"name": "subset-2"}]}}})),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn each_template_kind_builds_labelled_subset_workloads() {
    let (_env, ns, _m) = setup("ud-kinds").await;
    let subsets_spec = json!([
        {"name": "a", "nodeSelectorTerm": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]},
         "tolerations": [{"key": "ud-test", "operator": "Exists"}]},
        {"name": "b"}]);
    let mut apis = Vec::new();
    for (name, kind) in [
        ("d", "deploymentTemplate"),
        ("c", "cloneSetTemplate"),
        ("s", "statefulSetTemplate"),
        ("x", "advancedStatefulSetTemplate"),
    ] {
        let api = create_ud(
            &ns,
            name,
            json!({"replicas": 2, "selector": {"matchLabels": {"app": name}},
                   "template": template(kind, name, "nginx:1.25"),
                   "topology": {"subsets": subsets_spec}}),
        )
        .await;
        apis.push((name, api));
    }
    for (name, api) in &apis {
        wait_for_object(
            api,
            name,
            "2 ready replicas",
            TIMEOUT,
            |u: &UnitedDeployment| {
                u.status
                    .as_ref()
                    .is_some_and(|s| s.ready_replicas == Some(2))
            },
        )
        .await
        .unwrap();
    }
    let ud = apis[0].1.get("d").await.unwrap();
    let revision = ud.status.clone().unwrap().current_revision;
    let deployments = subsets::<Deployment>(&ns, &ud).await;
    assert_eq!(deployments.len(), 2);
    let a = &deployments["a"];
    assert!(a.name_any().starts_with("d-a-"), "{}", a.name_any());
    assert_eq!(a.labels()[REVISION], revision);
    assert_eq!(a.labels()["app"], "d");
    let spec = &a.spec;
    assert_eq!(spec.selector.match_labels.as_ref().unwrap()[SUBSET], "a");
    let pod_spec = spec.template.spec.as_ref().unwrap();
    let terms = &pod_spec
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
    assert_eq!(
        terms[0].match_expressions.as_ref().unwrap()[0]
            .values
            .as_ref()
            .unwrap()[0],
        "zone-a"
    );
    assert_eq!(
        pod_spec.tolerations.as_ref().unwrap()[0].key.as_deref(),
        Some("ud-test")
    );
    // Every kind: one workload per subset, named after the subset, with its pods labelled.
    let c = apis[1].1.get("c").await.unwrap();
    assert_eq!(subsets::<CloneSet>(&ns, &c).await.len(), 2);
    let s = apis[2].1.get("s").await.unwrap();
    let sts = subsets::<StatefulSet>(&ns, &s).await;
    assert!(sts["b"].name_any().starts_with("s-b-"));
    let x = apis[3].1.get("x").await.unwrap();
    assert_eq!(subsets::<AdvancedStatefulSet>(&ns, &x).await.len(), 2);
    let pods: Api<Pod> = ns.api();
    let in_a = pods
        .list(&ListParams::default().labels(&format!("{SUBSET}=a,app=x")))
        .await
        .unwrap()
        .items;
    assert_eq!(in_a.len(), 1);
    assert_eq!(
        in_a[0]
            .spec
            .as_ref()
            .unwrap()
            .node_name
            .as_deref()
            .map(|n| n.is_empty()),
        Some(false)
    );
}

#[tokio::test]
async fn manual_partitions_hold_subsets_back() {
    let (_env, ns, _m) = setup("ud-partition").await;
    let api = create_ud(
        &ns,
        "part",
        json!({"replicas": 4, "selector": {"matchLabels": {"app": "part"}},
               "template": template("advancedStatefulSetTemplate", "part", "nginx:1.25"),
               "topology": {"subsets": [{"name": "a"}, {"name": "b"}]}}),
    )
    .await;
    let first = wait_for_object(
        &api,
        "part",
        "4 updated ready replicas",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.updated_ready_replicas == Some(4))
        },
    )
    .await
    .unwrap();
    let old_revision = first.status.unwrap().current_revision;
    // New image, subset a held at partition 2 (both of its pods stay at the old revision).
    api.patch(
        "part",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {
            "template": {"advancedStatefulSetTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "main", "image": "nginx:1.26"}]}}}}},
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"a": 2}}}}})),
    )
    .await
    .unwrap();
    let ud = wait_for_object(
        &api,
        "part",
        "subset b updated",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status.as_ref().is_some_and(|s| {
                s.updated_ready_replicas == Some(2)
                    && s.update_status
                        .as_ref()
                        .and_then(|x| x.updated_revision.as_deref())
                        != Some(old_revision.as_str())
            })
        },
    )
    .await
    .unwrap();
    let status = ud.status.clone().unwrap();
    assert_eq!(
        status.current_revision, old_revision,
        "not every replica is updated yet"
    );
    let update = status.update_status.unwrap();
    assert_eq!(update.current_partitions.unwrap()["a"], 2);
    assert_eq!(
        status
            .subset_statuses
            .unwrap()
            .iter()
            .find(|s| s.name.as_deref() == Some("a"))
            .unwrap()
            .partition,
        Some(2)
    );
    let sets = subsets::<AdvancedStatefulSet>(&ns, &ud).await;
    let rolling = |s: &AdvancedStatefulSet| {
        s.spec
            .update_strategy
            .clone()
            .unwrap()
            .rolling_update
            .unwrap()
            .partition
    };
    assert_eq!(rolling(&sets["a"]), Some(2));
    assert_eq!(rolling(&sets["b"]), Some(0));
    let pods: Api<Pod> = ns.api();
    for p in pods
        .list(&ListParams::default().labels(&format!("{SUBSET}=a")))
        .await
        .unwrap()
    {
        assert_eq!(
            p.spec.unwrap().containers[0].image.as_deref(),
            Some("nginx:1.25")
        );
    }
    // Partition released: everything updates and the current revision moves.
    api.patch(
        "part",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"updateStrategy": {"manualUpdate": {"partitions": null}}}})),
    )
    .await
    .unwrap();
    let done = wait_for_object(
        &api,
        "part",
        "all updated",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status.as_ref().is_some_and(|s| {
                s.updated_ready_replicas == Some(4) && s.current_revision != old_revision
            })
        },
    )
    .await
    .unwrap();
    let cond = done.status.unwrap().conditions.unwrap();
    assert!(
        cond.iter()
            .any(|c| c.type_.as_deref() == Some("UnitedDeploymentUpdated")
                && c.status.as_deref() == Some("True"))
    );
}

#[tokio::test]
async fn subset_patch_applies_to_its_subset_only() {
    let (_env, ns, _m) = setup("ud-patch").await;
    let api = create_ud(
        &ns,
        "patched",
        json!({"replicas": 2, "selector": {"matchLabels": {"app": "patched"}},
               "template": template("cloneSetTemplate", "patched", "nginx:1.25"),
               "topology": {"subsets": [
                   {"name": "a", "patch": {"metadata": {"labels": {"zone": "a"}},
                       "spec": {"containers": [{"name": "main", "env": [{"name": "ZONE", "value": "a"}]}]}}},
                   {"name": "b"}]}}),
    )
    .await;
    let ud = wait_for_object(
        &api,
        "patched",
        "2 ready",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(2))
        },
    )
    .await
    .unwrap();
    let sets = subsets::<CloneSet>(&ns, &ud).await;
    let a = &sets["a"];
    let tpl = &a.spec.template;
    assert_eq!(
        tpl.metadata.as_ref().unwrap().labels.as_ref().unwrap()["zone"],
        "a"
    );
    let c = &tpl.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx:1.25"));
    assert_eq!(c.env.as_ref().unwrap()[0].value.as_deref(), Some("a"));
    let recorded: Value =
        serde_json::from_str(&a.annotations()["apps.kruise.io/subset-patch"]).unwrap();
    assert_eq!(recorded["metadata"]["labels"]["zone"], "a");
    assert_eq!(sets["b"].annotations()["apps.kruise.io/subset-patch"], "");
    assert!(
        sets["b"].spec.template.spec.as_ref().unwrap().containers[0]
            .env
            .is_none()
    );
    // A changed patch reaches the subset's pods.
    api.patch(
        "patched",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"topology": {"subsets": [
            {"name": "a", "patch": {"metadata": {"labels": {"zone": "a2"}}}}, {"name": "b"}]}}})),
    )
    .await
    .unwrap();
    let pods: Api<Pod> = ns.api();
    wait_for("subset a's pod relabelled", TIMEOUT, || async {
        let list = pods
            .list(&ListParams::default().labels(&format!("{SUBSET}=a,zone=a2")))
            .await
            .unwrap();
        (list.items.len() == 1).then_some(())
    })
    .await
    .unwrap();
}

fn adaptive_spec(app: &str, unmatched_key: &str, reserve: bool) -> Value {
    json!({
        "replicas": 3,
        "selector": {"matchLabels": {"app": app}},
        "template": template("deploymentTemplate", app, "nginx:1.25"),
        "topology": {
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {
                "rescheduleCriticalSeconds": 3, "unschedulableDuration": 300,
                "reserveUnschedulablePods": reserve}},
            "subsets": [
                {"name": "subset-0", "maxReplicas": 2, "nodeSelectorTerm": {"matchExpressions": [
                    {"key": unmatched_key, "operator": "In", "values": ["nowhere"]}]}},
                {"name": "subset-1"}]},
    })
}

async fn pods_by_subset(pods: &Api<Pod>, app: &str) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for p in pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
    {
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let entry = out.entry(p.labels()[SUBSET].clone()).or_default();
        entry.0 += 1;
        if p.labels().get(RESERVED).map(String::as_str) == Some("true") {
            entry.1 += 1;
        }
    }
    out
}

#[tokio::test]
async fn adaptive_strategy_moves_replicas_out_of_an_unschedulable_subset() {
    let (_env, ns, _m) = setup("ud-adaptive").await;
    // No node carries this key: subset-0's pods can never be scheduled.
    let key = format!("ud-e2e.kruise.io/{}", ns.name());
    let api = create_ud(&ns, "adaptive", adaptive_spec("adaptive", &key, false)).await;
    let ud = wait_for_object(
        &api,
        "adaptive",
        "subset-0 unschedulable",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .and_then(|s| s.subset_status("subset-0"))
                .and_then(|s| s.condition("Schedulable").map(|c| c.status == "False"))
                == Some(true)
        },
    )
    .await
    .unwrap();
    let c = ud
        .status
        .unwrap()
        .subset_status("subset-0")
        .unwrap()
        .condition("Schedulable")
        .unwrap()
        .clone();
    assert_eq!(c.reason.as_deref(), Some("reschedule"));
    // Its replicas move to subset-1, which runs all three.
    wait_subset_replicas::<Deployment>(&ns, &api, "adaptive", &[0, 3]).await;
    let pods: Api<Pod> = ns.api();
    wait_for("3 pods in subset-1 only", TIMEOUT, || async {
        let got = pods_by_subset(&pods, "adaptive").await;
        (got == BTreeMap::from([("subset-1".to_owned(), (3, 0))])).then_some(())
    })
    .await
    .unwrap();
    wait_for_object(
        &api,
        "adaptive",
        "3 ready",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(3))
        },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn reservation_keeps_unschedulable_pods_and_adds_temporary_ones() {
    let (_env, ns, _m) = setup("ud-reserve").await;
    let key = format!("ud-e2e.kruise.io/{}", ns.name());
    let api = create_ud(&ns, "reserve", adaptive_spec("reserve", &key, true)).await;
    let pods: Api<Pod> = ns.api();
    // subset-0 keeps its 2 pods, reserved; subset-1 runs 1 + 2 temporary pods.
    wait_for("reserved pods and temporary pods", TIMEOUT, || async {
        let got = pods_by_subset(&pods, "reserve").await;
        (got == BTreeMap::from([
            ("subset-0".to_owned(), (2, 2)),
            ("subset-1".to_owned(), (3, 0)),
        ]))
        .then_some(())
    })
    .await
    .unwrap();
    let ud = wait_for_object(
        &api,
        "reserve",
        "reserved pods in status",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.reserved_pods == Some(2) && s.ready_replicas == Some(3))
        },
    )
    .await
    .unwrap();
    let status = ud.status.unwrap();
    assert_eq!(
        status.replicas, 3,
        "reserved pods are not counted as replicas"
    );
    assert_eq!(
        status.label_selector.as_deref(),
        Some("app=reserve,apps.kruise.io/united-deployment-reserved-pod=false")
    );
}

#[tokio::test]
async fn restarted_manager_changes_nothing() {
    let (_env, ns, mut m) = setup("ud-restart").await;
    let api = create_ud(
        &ns,
        "steady",
        json!({"replicas": 4, "selector": {"matchLabels": {"app": "steady"}},
               "template": template("cloneSetTemplate", "steady", "nginx:1.25"),
               "topology": {"subsets": [{"name": "a"}, {"name": "b", "replicas": 1}]}}),
    )
    .await;
    let before = wait_for_object(
        &api,
        "steady",
        "4 ready",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(4) && s.updated_ready_replicas == Some(4))
        },
    )
    .await
    .unwrap();
    let sets_before: BTreeMap<String, String> = subsets::<CloneSet>(&ns, &before)
        .await
        .into_iter()
        .map(|(k, v)| (k, v.resource_version().unwrap()))
        .collect();
    assert_eq!(sets_before.len(), 2);
    m.restart(TIMEOUT).await;
    // The new process has passed over the UnitedDeployment at least once.
    wait_for("a reconcile after restart", TIMEOUT, || async {
        let text = m.process.metrics_text().await?;
        (kruise_e2e::manager::reconciles(&text, "uniteddeployment") >= 1.0).then_some(())
    })
    .await
    .unwrap();
    let after = api.get("steady").await.unwrap();
    assert_eq!(
        after.resource_version(),
        before.resource_version(),
        "status rewritten after restart"
    );
    let sets_after: BTreeMap<String, String> = subsets::<CloneSet>(&ns, &after)
        .await
        .into_iter()
        .map(|(k, v)| (k, v.resource_version().unwrap()))
        .collect();
    assert_eq!(
        sets_after, sets_before,
        "subset workloads rewritten after restart"
    );
}

/// OpenKruise's `GetAllSubsets` claims the workloads its selector matches: a UnitedDeployment
/// deleted with `--cascade=orphan` and created again takes its orphaned subset CloneSets back
/// (same objects, same pods) instead of creating new ones beside them. CloneSets are custom
/// resources, so the adoption is the merge-patch path of the shared claim.
#[tokio::test]
async fn a_recreated_united_deployment_adopts_its_orphaned_subsets() {
    use kube::api::DeleteParams;
    let (_env, ns, _m) = setup("ud-adopt").await;
    let spec = json!({"replicas": 2, "selector": {"matchLabels": {"app": "adopt"}},
        "template": template("cloneSetTemplate", "adopt", "nginx:1.25"),
        "topology": {"subsets": [{"name": "a"}, {"name": "b"}]}});
    let api = create_ud(&ns, "web", spec.clone()).await;
    wait_subset_replicas::<CloneSet>(&ns, &api, "web", &[1, 1]).await;
    let first = api.get("web").await.unwrap();
    let before: BTreeMap<String, String> = subsets::<CloneSet>(&ns, &first)
        .await
        .into_iter()
        .map(|(s, w)| (s, w.uid().unwrap()))
        .collect();
    let pods: Api<Pod> = ns.api();
    let pod_uids = |list: Vec<Pod>| -> Vec<String> {
        let mut v: Vec<String> = list.into_iter().filter_map(|p| p.uid()).collect();
        v.sort();
        v
    };
    wait_for("2 pods", TIMEOUT, || async {
        (pods.list(&ListParams::default()).await.ok()?.items.len() == 2).then_some(())
    })
    .await
    .unwrap();
    let pods_before = pod_uids(pods.list(&ListParams::default()).await.unwrap().items);

    api.delete("web", &DeleteParams::orphan()).await.unwrap();
    let old_uid = first.uid().unwrap();
    let sets: Api<CloneSet> = ns.api();
    wait_for(
        "UnitedDeployment gone, subsets orphaned",
        TIMEOUT,
        || async {
            if api.get_opt("web").await.ok()?.is_some() {
                return None;
            }
            let list = sets.list(&ListParams::default()).await.ok()?.items;
            list.iter()
                .all(|s| !s.owner_references().iter().any(|o| o.uid == old_uid))
                .then_some(())
        },
    )
    .await
    .unwrap();

    create_ud(&ns, "web", spec).await;
    let second = api.get("web").await.unwrap();
    wait_for("the orphans adopted", TIMEOUT, || async {
        let got: BTreeMap<String, String> = subsets::<CloneSet>(&ns, &second)
            .await
            .into_iter()
            .map(|(s, w)| (s, w.uid().unwrap()))
            .collect();
        (got == before).then_some(())
    })
    .await
    .unwrap();
    wait_for_object(
        &api,
        "web",
        "status of the adopted subsets",
        TIMEOUT,
        |u: &UnitedDeployment| {
            u.status
                .as_ref()
                .is_some_and(|s| s.ready_replicas == Some(2) && s.replicas == 2)
        },
    )
    .await
    .unwrap();
    assert_eq!(
        sets.list(&ListParams::default()).await.unwrap().items.len(),
        2,
        "no subset created beside the adopted ones"
    );
    assert_eq!(
        pod_uids(pods.list(&ListParams::default()).await.unwrap().items),
        pods_before,
        "the pods are the same"
    );
}
