//! PersistentPodState end to end on the testbed (OpenKruise v1.9.0
//! `pkg/controller/persistentpodstate`, `pkg/webhook/persistentpodstate`,
//! `pkg/webhook/pod/mutating/persistent_pod_state.go`): a workload annotated
//! `kruise.io/auto-generate-persistent-pod-state` gets a PersistentPodState it controls, the
//! ready pods' node topology and chosen annotations are recorded, a recreated pod is steered back
//! by node affinity, states of pods scaled away are dropped, removing the annotation deletes the
//! object; validation refuses what OpenKruise refuses; a StatefulSet-like kind listed in the
//! `kruise-configuration` whitelist is followed too. Each test runs its own `kruise-manager` as
//! users run it (webhooks on), restricted to the test's namespace.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kruise_api::apps::v1alpha1::PersistentPodState;
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, TestNamespace, install_crds, wait_for, wait_for_object};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const HOSTNAME: &str = "kubernetes.io/hostname";
const OS: &str = "kubernetes.io/os";

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, ManagerSpec) {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    kruise_e2e::ensure_kwok_nodes(&env, 3)
        .await
        .expect("kwok nodes");
    let ns = env.namespace(prefix).await.unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    (env, ns, spec)
}

fn states(p: &PersistentPodState) -> BTreeMap<String, kruise_api::apps::v1alpha1::PodState> {
    p.status
        .as_ref()
        .and_then(|s| s.pod_states.clone())
        .unwrap_or_default()
}

async fn node_labels(env: &TestEnv, name: &str) -> BTreeMap<String, String> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    nodes
        .get(name)
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default()
}

/// Every recorded state names its pod's node and that node's labels for `keys`.
async fn assert_recorded(env: &TestEnv, ns: &TestNamespace, p: &PersistentPodState, keys: &[&str]) {
    let pods: Api<Pod> = ns.api();
    for (name, state) in states(p) {
        let pod = pods.get(&name).await.unwrap();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap();
        assert_eq!(state.node_name.as_deref(), Some(node.as_str()), "{name}");
        let labels = node_labels(env, &node).await;
        let want: BTreeMap<String, String> = keys
            .iter()
            .filter_map(|k| Some((k.to_string(), labels.get(*k)?.clone())))
            .collect();
        assert_eq!(
            state.node_topology_labels.unwrap_or_default(),
            want,
            "{name}"
        );
    }
}

#[tokio::test]
async fn annotated_statefulset_keeps_its_pods_topology_across_recreation_and_scale_in() {
    let (env, ns, spec) = setup("pps-sts").await;
    let _manager = TestManager::start(spec, TIMEOUT).await;
    let sets: Api<AdvancedStatefulSet> = ns.api();
    let set: AdvancedStatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "web", "annotations": {
            "kruise.io/auto-generate-persistent-pod-state": "true",
            "kruise.io/required-persistent-topology": OS,
            "kruise.io/preferred-persistent-topology": HOSTNAME,
            "kruise.io/persistent-pod-annotations": "ip"}},
        "spec": {"replicas": 3, "serviceName": "web", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"ip": "10.0.0.1"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    }))
    .unwrap();
    let created = sets.create(&PostParams::default(), &set).await.unwrap();
    let ppss: Api<PersistentPodState> = ns.api();
    let p = wait_for_object(&ppss, "web", "3 pod states", TIMEOUT, |p| {
        states(p).len() == 3
    })
    .await
    .unwrap();
    let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller
        ),
        ("apps.kruise.io/v1beta1", "StatefulSet", "web", Some(true))
    );
    assert_eq!(Some(owner.uid.as_str()), created.metadata.uid.as_deref());
    assert_eq!(
        serde_json::to_value(&p.spec).unwrap(),
        json!({"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
            "persistentPodAnnotations": [{"key": "ip"}],
            "requiredPersistentTopology": {"nodeTopologyKeys": [OS]},
            "preferredPersistentTopology": [{"weight": 100, "preference": {"nodeTopologyKeys": [HOSTNAME]}}]})
    );
    assert_eq!(
        p.status.as_ref().unwrap().observed_generation,
        p.metadata.generation.unwrap()
    );
    assert_recorded(&env, &ns, &p, &[HOSTNAME, OS]).await;
    for s in states(&p).values() {
        assert_eq!(s.annotations.clone().unwrap_or_default()["ip"], "10.0.0.1");
    }

    // A recreated pod gets its recorded topology back.
    let pods: Api<Pod> = ns.api();
    let old = pods.get("web-1").await.unwrap();
    let recorded = states(&p)["web-1"].clone();
    pods.delete("web-1", &DeleteParams::default())
        .await
        .unwrap();
    let new = wait_for("web-1 recreated", TIMEOUT, || async {
        pods.get_opt("web-1")
            .await
            .ok()
            .flatten()
            .filter(|n| n.metadata.uid != old.metadata.uid)
    })
    .await
    .unwrap();
    assert_eq!(
        new.annotations()
            .get("kruise.io/injected-persistent-pod-state")
            .map(String::as_str),
        Some("web")
    );
    let labels = recorded.node_topology_labels.unwrap();
    let spec = new.spec.unwrap();
    assert_eq!(
        spec.node_selector.unwrap_or_default().get(OS),
        labels.get(OS)
    );
    let preferred = serde_json::to_value(
        spec.affinity
            .unwrap()
            .node_affinity
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution,
    )
    .unwrap();
    assert_eq!(
        preferred,
        json!([{"weight": 100, "preference": {"matchExpressions": [
            {"key": HOSTNAME, "operator": "In", "values": [labels[HOSTNAME]]}]}}])
    );

    // Scale in: the states of the ordinals scaled away go once their pods are gone.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    wait_for_object(&ppss, "web", "only web-0 recorded", TIMEOUT, |p| {
        states(p).keys().eq(["web-0"].iter())
    })
    .await
    .unwrap();

    // Dropping the annotation deletes the generated object.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"kruise.io/auto-generate-persistent-pod-state": null}}})),
    )
    .await
    .unwrap();
    wait_for("generated PersistentPodState deleted", TIMEOUT, || async {
        matches!(ppss.get_opt("web").await, Ok(None)).then_some(())
    })
    .await
    .unwrap();
}

fn pps(name: &str, spec: Value) -> PersistentPodState {
    serde_json::from_value(
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
        "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

async fn denial(api: &Api<PersistentPodState>, obj: &PersistentPodState) -> String {
    match api.create(&PostParams::default(), obj).await {
        Err(kube::Error::Api(e)) => e.message,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn validation_refuses_a_second_state_a_changed_target_and_no_topology() {
    let (_env, ns, spec) = setup("pps-validate").await;
    let _manager = TestManager::start(spec, TIMEOUT).await;
    let api: Api<PersistentPodState> = ns.api();
    let target = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"});
    let first = pps(
        "first",
        json!({"targetRef": target, "requiredPersistentTopology": {"nodeTopologyKeys": [OS]}}),
    );
    api.create(&PostParams::default(), &first).await.unwrap();
    let msg = denial(
        &api,
        &pps("second", json!({"targetRef": {"apiVersion": "apps/v2", "kind": "StatefulSet", "name": "db"},
            "preferredPersistentTopology": [{"weight": 10, "preference": {"nodeTopologyKeys": [OS]}}]})),
    )
    .await;
    assert!(
        msg.ends_with("spec.targetReference: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v2\", Kind:\"StatefulSet\", Name:\"db\"}: targetReference is in conflict with other PersistentPodState first"),
        "{msg}"
    );
    let msg = denial(
        &api,
        &pps(
            "bare",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}),
        ),
    )
    .await;
    assert!(
        msg.contains(
            "TargetReference.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("TopologyConstraint and TopologyPreference cannot be empty at the same time"),
        "{msg}"
    );
    let err = api
        .patch(
            "first",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetRef": {"name": "other"}}})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(e) = err else {
        panic!("{err:?}")
    };
    assert!(
        e.message
            .ends_with("spec.targetRef: Required value: targetRef cannot be modified"),
        "{}",
        e.message
    );
}

const LIKE_CRD: &str =
    include_str!("../../../hack/conformance/persistentpodstate/statefulsetliketests-crd.yaml");

#[tokio::test]
async fn a_whitelisted_statefulset_like_kind_gets_its_state_generated_and_recorded() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let (env, ns, spec) = setup("pps-like").await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(LIKE_CRD).unwrap();
    crds.patch(
        crd.name_any().as_str(),
        &PatchParams::apply("kruise-e2e-pps").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    wait_for_object(&crds, &crd.name_any(), "established", TIMEOUT, |c| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
    })
    .await
    .unwrap();
    // The manager runs as if installed in the test's namespace, so its kruise-configuration is
    // the test's own.
    let cms: Api<ConfigMap> = ns.api();
    cms.create(&PostParams::default(), &serde_json::from_value(json!({
        "metadata": {"name": "kruise-configuration"},
        "data": {"PPS_Watch_Custom_Workload_WhiteList":
            "{\"workloads\":[{\"Group\":\"apps.kruise.io\",\"Version\":\"v1beta1\",\"Kind\":\"StatefulSetLikeTest\"}]}"}}))
        .unwrap())
        .await
        .unwrap();
    let _manager = TestManager::start(spec.pod_namespace(ns.name()), TIMEOUT).await;
    let resource = ApiResource {
        group: "apps.kruise.io".into(),
        version: "v1beta1".into(),
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "StatefulSetLikeTest".into(),
        plural: "statefulsetliketests".into(),
    };
    let likes: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), ns.name(), &resource);
    let like: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSetLikeTest",
        "metadata": {"name": "like", "annotations": {
            "kruise.io/auto-generate-persistent-pod-state": "true",
            "kruise.io/required-persistent-topology": OS,
            "kruise.io/persistent-pod-annotations": "name"}},
        "spec": {"replicas": 2}}))
    .unwrap();
    let like = likes.create(&PostParams::default(), &like).await.unwrap();
    let ppss: Api<PersistentPodState> = ns.api();
    let p = wait_for_object(&ppss, "like", "generated", TIMEOUT, |_| true)
        .await
        .unwrap();
    assert_eq!(
        p.metadata.owner_references.as_ref().unwrap()[0].kind,
        "StatefulSetLikeTest"
    );
    let pods: Api<Pod> = ns.api();
    for i in 0..2 {
        let name = format!("like-{i}");
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name, "annotations": {"name": name},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSetLikeTest",
                "name": "like", "uid": like.uid().unwrap(), "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let p = wait_for_object(&ppss, "like", "2 pod states", TIMEOUT, |p| {
        states(p).len() == 2
    })
    .await
    .unwrap();
    assert_recorded(&env, &ns, &p, &[OS]).await;
    for (name, s) in states(&p) {
        assert_eq!(s.annotations.unwrap_or_default()["name"], name);
    }
    let _ = p.meta();
}

/// A PersistentPodState written by hand over a Kubernetes StatefulSet: the pod webhook is
/// called for that StatefulSet's pods (its scope follows the PersistentPodStates) and gives a
/// recreated pod its recorded node back as a required selector; with the StatefulSet deleted the
/// states are cleared.
#[tokio::test]
async fn a_kubernetes_statefulset_pod_is_pinned_back_to_its_node() {
    use k8s_openapi::api::apps::v1::StatefulSet;
    let (_env, ns, spec) = setup("pps-k8s").await;
    let _manager = TestManager::start(spec, TIMEOUT).await;
    let ppss: Api<PersistentPodState> = ns.api();
    ppss.create(
        &PostParams::default(),
        &pps(
            "db-state",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
                "requiredPersistentTopology": {"nodeTopologyKeys": [HOSTNAME]}}),
        ),
    )
    .await
    .unwrap();
    let sets: Api<StatefulSet> = ns.api();
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let p = wait_for_object(&ppss, "db-state", "2 pod states", TIMEOUT, |p| {
        states(p).len() == 2
    })
    .await
    .unwrap();
    let node = states(&p)["db-0"].node_name.clone().unwrap();
    let pods: Api<Pod> = ns.api();
    let old = pods.get("db-0").await.unwrap();
    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    let new = wait_for("db-0 recreated", TIMEOUT, || async {
        pods.get_opt("db-0")
            .await
            .ok()
            .flatten()
            .filter(|n| n.metadata.uid != old.metadata.uid)
    })
    .await
    .unwrap();
    assert_eq!(
        new.annotations()
            .get("kruise.io/injected-persistent-pod-state")
            .map(String::as_str),
        Some("db-state")
    );
    let selector = new.spec.unwrap().node_selector.unwrap_or_default();
    assert_eq!(selector.get(HOSTNAME), Some(&node));
    sets.delete("db", &DeleteParams::default()).await.unwrap();
    wait_for_object(&ppss, "db-state", "states cleared", TIMEOUT, |p| {
        states(p).is_empty()
    })
    .await
    .unwrap();
}
