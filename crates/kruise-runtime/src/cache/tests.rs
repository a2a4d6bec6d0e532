//! The shared cache and the runner's cache-sync gate, against a scripted API whose pod list is
//! slow or never answers.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::CloneSet;
use kube::runtime::controller::Action;
use serde_json::json;

use crate::features::FeatureGates;
use crate::runner::{self as runtime, Context, ControllerConfig};
use crate::testing::{ListReply, ScriptedApi};

const CLONESETS: &str = "/apis/apps.kruise.io/v1alpha1/clonesets";
const PODS: &str = "/api/v1/pods";

fn cloneset() -> serde_json::Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "cs-uid", "resourceVersion": "5"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}})
}

fn context(api: &ScriptedApi, sync_timeout: Duration) -> Arc<Context> {
    let config = ControllerConfig {
        cache_sync_timeout: sync_timeout,
        ..ControllerConfig::default()
    };
    Arc::new(Context::new(api.client(), FeatureGates::default(), config))
}

#[derive(Debug, Clone, Copy)]
struct Call {
    at: Duration,
    pods_synced: bool,
}

type Running = tokio::task::JoinHandle<Result<(), runtime::Error>>;

/// Runs a controller for CloneSets that reads the pod cache; returns its task and the calls.
fn start(ctx: &Arc<Context>) -> (Running, Arc<Mutex<Vec<Call>>>) {
    let clonesets = ctx.cache.informer::<CloneSet>();
    let pods = ctx.cache.informer::<Pod>();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let controller = runtime::Triggers::from_informer(&clonesets);
    let caches = vec![clonesets.synced(), pods.synced()];
    let recorded = calls.clone();
    let reconcile = move |_cs: Arc<CloneSet>, _ctx: Arc<Context>| {
        let recorded = recorded.clone();
        let pods = pods.clone();
        async move {
            recorded.lock().unwrap().push(Call {
                at: start.elapsed(),
                pods_synced: pods.synced().is_synced(),
            });
            Ok::<_, std::io::Error>(Action::await_change())
        }
    };
    let handle = tokio::spawn(runtime::run_controller(
        ctx.clone(),
        "test",
        2,
        controller,
        caches,
        reconcile,
    ));
    (handle, calls)
}

#[tokio::test]
async fn no_reconcile_before_a_slow_pod_list_completes() {
    let api = ScriptedApi::new();
    api.list(CLONESETS, ListReply::Now(vec![cloneset()]));
    api.list(PODS, ListReply::After(Duration::from_millis(1500), vec![]));
    let ctx = context(&api, Duration::from_secs(30));
    let (handle, calls) = start(&ctx);

    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        calls.lock().unwrap().is_empty(),
        "reconciled before the pod cache synced"
    );
    let failing = ctx.readiness.failing();
    assert!(
        failing.contains(&"cache-pods".to_string()),
        "readyz: {failing:?}"
    );
    assert!(
        !failing.contains(&"cache-clonesets".to_string()),
        "readyz: {failing:?}"
    );

    let deadline = Instant::now() + Duration::from_secs(10);
    while calls.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let calls = calls.lock().unwrap().clone();
    assert!(
        !calls.is_empty(),
        "never reconciled after the caches synced"
    );
    for c in &calls {
        assert!(
            c.pods_synced,
            "reconcile at {:?} saw an unsynced pod cache",
            c.at
        );
        assert!(
            c.at >= Duration::from_millis(1500),
            "reconcile at {:?}",
            c.at
        );
    }
    assert!(
        !ctx.readiness
            .failing()
            .iter()
            .any(|c| c.starts_with("cache-")),
        "caches synced but readyz says {:?}",
        ctx.readiness.failing()
    );
    ctx.shutdown.cancel();
    handle.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_cache_that_never_syncs_stops_the_controller_naming_it() {
    let api = ScriptedApi::new();
    api.list(CLONESETS, ListReply::Now(vec![cloneset()]));
    api.list(PODS, ListReply::Never);
    let ctx = context(&api, Duration::from_millis(400));
    let (handle, calls) = start(&ctx);
    let err = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("run_controller returns after the sync timeout")
        .unwrap()
        .expect_err("a cache that never syncs is fatal");
    let msg = err.to_string();
    assert!(msg.contains("controller test"), "{msg}");
    assert!(msg.contains("timed out"), "{msg}");
    assert!(msg.contains("pods"), "{msg}");
    assert!(!msg.contains("clonesets"), "synced cache named: {msg}");
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn informers_are_shared_per_type_and_slim() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "3",
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let api = ScriptedApi::new();
    api.list(PODS, ListReply::Now(vec![pod]));
    let ctx = context(&api, Duration::from_secs(5));
    let a = ctx.cache.informer::<Pod>();
    let b = ctx.cache.informer::<Pod>();
    assert_eq!(ctx.cache.len(), 1, "one informer per type");
    assert!(
        crate::cache::wait_for_cache_sync(&[a.synced()], Duration::from_secs(5))
            .await
            .is_ok()
    );
    assert!(b.synced().is_synced(), "both handles share the sync state");
    let stored = b.store().state();
    assert_eq!(stored.len(), 1);
    assert!(
        stored[0].metadata.managed_fields.is_none(),
        "managedFields kept"
    );
    let lists = api
        .seen()
        .iter()
        .filter(|s| s.path == PODS && !s.watch)
        .count();
    assert_eq!(lists, 1, "one list for two users");
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn owned_by_reads_the_owner_index() {
    let pod = |name: &str, owner: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}"),
                "resourceVersion": "3"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        if let Some(uid) = owner {
            p["metadata"]["ownerReferences"] = json!([
                {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "x",
                 "uid": "other", "controller": false},
                {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web",
                 "uid": uid, "controller": true}]);
        }
        p
    };
    let api = ScriptedApi::new();
    api.list(
        PODS,
        ListReply::Now(vec![
            pod("a", Some("cs-1")),
            pod("b", Some("cs-1")),
            pod("c", Some("cs-2")),
            pod("d", None),
        ]),
    );
    let ctx = context(&api, Duration::from_secs(5));
    let pods = ctx.cache.informer::<Pod>();
    crate::cache::wait_for_cache_sync(&[pods.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    let mut names: Vec<String> = pods
        .owned_by("cs-1")
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(pods.owned_by("cs-2").len(), 1);
    assert!(
        pods.owned_by("other").is_empty(),
        "only controller references are indexed"
    );
    assert!(pods.owned_by("nobody").is_empty());
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn namespace_and_node_indexes() {
    let pod = |name: &str, ns: &str, node: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": format!("u-{name}"),
                "resourceVersion": "3"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        p
    };
    let api = ScriptedApi::new();
    api.list(
        PODS,
        ListReply::Now(vec![
            pod("a", "ns1", Some("n1")),
            pod("b", "ns1", Some("n2")),
            pod("c", "ns2", Some("n1")),
            pod("d", "ns2", None),
        ]),
    );
    let ctx = context(&api, Duration::from_secs(5));
    let pods = ctx.cache.informer::<Pod>();
    crate::cache::wait_for_cache_sync(&[pods.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    let names = |v: Vec<Arc<Pod>>| {
        let mut n: Vec<String> = v.iter().filter_map(|p| p.metadata.name.clone()).collect();
        n.sort();
        n
    };
    assert_eq!(names(pods.in_namespace("ns1")), ["a", "b"]);
    assert_eq!(names(pods.in_namespace("ns2")), ["c", "d"]);
    assert_eq!(names(pods.on_node("n1")), ["a", "c"]);
    assert_eq!(names(pods.on_node("n2")), ["b"]);
    assert!(
        pods.on_node("").is_empty(),
        "unscheduled pods are not indexed"
    );
    assert!(pods.in_namespace("ns3").is_empty());
    // Other kinds have no node index.
    let clonesets = ctx.cache.informer::<CloneSet>();
    crate::cache::wait_for_cache_sync(&[clonesets.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    assert!(clonesets.on_node("n1").is_empty());
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn a_lazy_informer_does_not_hold_readiness_back() {
    let api = ScriptedApi::new();
    api.list("/api/v1/nodes", ListReply::Never);
    let ctx = context(&api, Duration::from_secs(5));
    ctx.readiness.set_ready(true);
    let nodes = ctx
        .cache
        .lazy_cluster_informer::<k8s_openapi::api::core::v1::Node>();
    assert!(ctx.readiness.is_ready(), "{:?}", ctx.readiness.failing());
    assert!(!crate::cache::read_synced(&nodes, Duration::from_millis(200)).await);
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn informer_in_another_namespace_is_its_own_when_the_cache_is_restricted() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    let rev = |name: &str, ns: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": ns, "uid": format!("u-{name}"), "resourceVersion": "1"},
            "revision": 1})
    };
    let api = ScriptedApi::new();
    api.list(
        "/apis/apps/v1/namespaces/kruise-system/controllerrevisions",
        ListReply::Now(vec![rev("ss-1", "kruise-system")]),
    );
    api.list(
        "/apis/apps/v1/namespaces/test/controllerrevisions",
        ListReply::Now(vec![rev("cs-1", "test")]),
    );
    let config = ControllerConfig {
        namespace: Some("test".into()),
        ..ControllerConfig::default()
    };
    let ctx = Arc::new(Context::new(api.client(), FeatureGates::default(), config));
    let own = ctx.cache.informer::<ControllerRevision>();
    let same = ctx.cache.informer_in::<ControllerRevision>("test");
    let other = ctx.cache.informer_in::<ControllerRevision>("kruise-system");
    assert_eq!(
        ctx.cache.len(),
        2,
        "the cache's namespace is served by its own informer"
    );
    crate::cache::wait_for_cache_sync(&[own.synced(), other.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    assert!(same.synced().is_synced());
    assert_eq!(own.in_namespace("test").len(), 1);
    assert_eq!(same.in_namespace("test").len(), 1);
    let names: Vec<_> = other
        .in_namespace("kruise-system")
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    assert_eq!(names, ["ss-1"]);
    ctx.shutdown.cancel();

    // An unrestricted cache answers every namespace from its one informer.
    let api = ScriptedApi::new();
    api.list(
        "/apis/apps/v1/controllerrevisions",
        ListReply::Now(vec![rev("ss-1", "kruise-system"), rev("cs-1", "test")]),
    );
    let ctx = context(&api, Duration::from_secs(5));
    let all = ctx.cache.informer_in::<ControllerRevision>("kruise-system");
    let _ = ctx.cache.informer::<ControllerRevision>();
    assert_eq!(ctx.cache.len(), 1);
    crate::cache::wait_for_cache_sync(&[all.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(all.in_namespace("kruise-system").len(), 1);
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn a_lazy_namespaced_informer_does_not_hold_readiness_back() {
    let api = ScriptedApi::new();
    api.list("/api/v1/configmaps", ListReply::Never);
    let ctx = context(&api, Duration::from_secs(5));
    ctx.readiness.set_ready(true);
    let config_maps = ctx
        .cache
        .lazy_informer::<k8s_openapi::api::core::v1::ConfigMap>();
    assert!(ctx.readiness.is_ready(), "{:?}", ctx.readiness.failing());
    assert!(!crate::cache::read_synced(&config_maps, Duration::from_millis(200)).await);
    ctx.shutdown.cancel();
}

/// A pod as kwok and the kubelet write it (trimmed to one of each shape).
fn full_pod() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "3",
            "labels": {"app": "a"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                "apps.kruise.io/inplace-update-state": "{}"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "name": "cs", "uid": "o1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "spec": {"nodeName": "n1", "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
            "containers": [{"name": "c", "image": "i:2", "resources": {"limits": {"cpu": "1"}},
                "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/s"},
                    {"name": "data", "mountPath": "/d"}]}],
            "initContainers": [{"name": "init", "image": "b"}],
            "volumes": [{"name": "kube-api-access-x", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-p"}},
                {"name": "cfg", "configMap": {"name": "c"}}]},
        "status": {"phase": "Running", "reason": "R", "message": "M", "observedGeneration": 2,
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}],
            "startTime": "2026-01-01T00:00:00Z", "qosClass": "BestEffort",
            "nominatedNodeName": "n2",
            "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:01Z"},
                {"type": "InPlaceUpdateReady", "status": "True"}],
            "containerStatuses": [{"name": "c", "image": "i:2", "imageID": "i@sha256:1",
                "containerID": "containerd://1", "ready": true, "restartCount": 3,
                "started": true, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                "lastState": {"terminated": {"exitCode": 0, "finishedAt": "2026-01-01T00:00:00Z"}},
                "allocatedResources": {"cpu": "1"}, "resources": {"limits": {"cpu": "1"}},
                "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
            "initContainerStatuses": [{"name": "init", "image": "b", "imageID": "b@sha256:2",
                "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0}}}]}})
}

#[test]
fn slim_keeps_what_readers_use_and_drops_the_rest_of_a_pod_status_and_volumes() {
    let mut pod: Pod = serde_json::from_value(full_pod()).unwrap();
    crate::cache::slim(&mut pod);
    let got = serde_json::to_value(&pod).unwrap();
    let mut want = full_pod();
    // Metadata is kept but managedFields; of the spec, the volumes that are not claims go
    // (volume mounts stay).
    want["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    want["spec"]["volumes"] =
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-p"}}]);
    want["status"] = json!({"phase": "Running", "reason": "R", "message": "M",
        "observedGeneration": 2,
        "conditions": want["status"]["conditions"].clone(),
        "containerStatuses": [{"name": "c", "image": "i:2", "imageID": "i@sha256:1",
            "containerID": "containerd://1", "ready": true, "restartCount": 3,
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}],
        "initContainerStatuses": [{"name": "init", "image": "b", "imageID": "b@sha256:2",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}]});
    assert_eq!(got, want);

    // A pod whose volumes are all dropped has none.
    let mut no_claims: Pod = serde_json::from_value(json!({"metadata": {"name": "n"},
        "spec": {"containers": [], "volumes": [{"name": "t", "emptyDir": {}}]}}))
    .unwrap();
    crate::cache::slim(&mut no_claims);
    assert!(no_claims.spec.unwrap().volumes.is_none());

    // A pod without status stays without.
    let mut bare: Pod = serde_json::from_value(json!({"metadata": {"name": "b"}})).unwrap();
    crate::cache::slim(&mut bare);
    assert!(bare.status.is_none());
}

#[test]
fn slim_keeps_a_cached_pods_ports_for_an_http_pre_stop_and_named_ones() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "ports": [{"containerPort": 80}],
            "lifecycle": {"preStop": {"httpGet": {"path": "/q", "port": 80}}}},
        {"name": "b", "ports": [{"containerPort": 81}],
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}}},
        {"name": "c", "ports": [{"containerPort": 82}, {"name": "http", "containerPort": 8080}]}],
        "initContainers": [{"name": "i", "ports": [{"containerPort": 83}]}]}});
    let mut obj: kruise_api::pod::CachedPod = serde_json::from_value(pod).unwrap();
    crate::cache::slim(&mut obj);
    let spec = obj.spec.unwrap();
    let ports: Vec<Vec<i32>> = spec
        .containers
        .iter()
        .map(|c| c.ports.iter().flatten().map(|p| p.container_port).collect())
        .collect();
    assert_eq!(ports, [vec![80], vec![], vec![8080]]);
    assert!(spec.containers[1].ports.is_none(), "no empty list is kept");
    assert!(spec.containers[1].lifecycle.is_some(), "lifecycle is kept");
    assert!(spec.init_containers.unwrap()[0].ports.is_none());
}

#[test]
fn slim_keeps_a_nodes_metadata_spec_allocatable_and_readiness_and_drops_the_rest_of_its_status() {
    use k8s_openapi::api::core::v1::Node;
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": [{"manager": "kubelet", "operation": "Update"}]},
        "spec": {"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24"], "unschedulable": true,
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b",
                "kernelVersion": "6", "osImage": "o", "containerRuntimeVersion": "containerd://2",
                "kubeletVersion": "v1.37.2", "kubeProxyVersion": "", "operatingSystem": "linux",
                "architecture": "amd64"},
            "images": [{"names": ["registry.k8s.io/pause@sha256:1", "registry.k8s.io/pause:3.10"],
                "sizeBytes": 320368}]}});
    let mut obj: Node = serde_json::from_value(node.clone()).unwrap();
    crate::cache::slim(&mut obj);
    let mut want = node;
    want["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    want["status"] = json!({"allocatable": {"cpu": "4"},
        "conditions": [{"type": "Ready", "status": "True"}]});
    assert_eq!(serde_json::to_value(&obj).unwrap(), want);
}

#[test]
fn slim_keeps_other_kinds_whole_but_managed_fields() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "d",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
        "data": {"k": "v"}});
    let mut obj: ConfigMap = serde_json::from_value(cm.clone()).unwrap();
    crate::cache::slim(&mut obj);
    let mut want = cm;
    want["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert_eq!(serde_json::to_value(&obj).unwrap(), want);
}

#[tokio::test]
async fn the_pod_cache_stores_slim_pods() {
    let api = ScriptedApi::new();
    api.list(PODS, ListReply::Now(vec![full_pod()]));
    let ctx = context(&api, Duration::from_secs(5));
    let pods = ctx.cache.informer::<Pod>();
    assert!(
        crate::cache::wait_for_cache_sync(&[pods.synced()], Duration::from_secs(5))
            .await
            .is_ok()
    );
    let stored = pods.store().state();
    let status = stored[0].status.as_ref().unwrap();
    assert!(
        status.pod_ip.is_none() && status.start_time.is_none(),
        "{status:?}"
    );
    let c = &status.container_statuses.as_ref().unwrap()[0];
    assert_eq!((c.image_id.as_str(), c.restart_count), ("i@sha256:1", 3));
    assert!(c.state.as_ref().is_some_and(|s| s.running.is_some()));
    assert!(c.last_state.is_none() && c.resources.is_none());
    ctx.shutdown.cancel();
}

#[tokio::test]
async fn auto_lists_when_the_api_server_refuses_streamed_lists() {
    // The scripted API refuses `sendInitialEvents` with 422, as an API server with the
    // WatchList gate off: the probe says no and the informer syncs from a LIST.
    let api = ScriptedApi::new();
    api.list(CLONESETS, ListReply::Now(vec![cloneset()]));
    let ctx = context(&api, Duration::from_secs(5));
    assert_eq!(ctx.cache.initial_lists_streamed(), None, "not probed yet");
    let sets = ctx.cache.informer::<CloneSet>();
    crate::cache::wait_for_cache_sync(&[sets.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(sets.store().state().len(), 1);
    assert_eq!(ctx.cache.initial_lists_streamed(), Some(false));
    assert!(
        api.calls().iter().any(|r| r == &format!("GET {CLONESETS}")),
        "{:?}",
        api.calls()
    );
    ctx.shutdown.cancel();
}

#[test]
fn initial_list_flag_values() {
    use crate::cache::InitialList;
    for (s, v) in [
        ("auto", InitialList::Auto),
        ("stream", InitialList::Stream),
        ("list", InitialList::List),
    ] {
        assert_eq!(s.parse::<InitialList>().unwrap(), v);
        assert_eq!(v.to_string(), s);
    }
    assert!(
        "watch"
            .parse::<InitialList>()
            .unwrap_err()
            .contains("auto, stream or list")
    );
    assert_eq!(InitialList::default(), InitialList::Auto);
}

#[test]
fn indexes_hold_the_stored_objects_and_follow_their_changes() {
    use crate::cache::Indexes;
    let pod = |node: Option<&str>, owner: &str| -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "a", "namespace": "ns1", "uid": "u-a",
                    "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1",
                        "kind": "CloneSet", "name": "web", "uid": owner, "controller": true}]},
                "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": node}}))
            .unwrap(),
        )
    };
    let get = |idx: &Indexes<Pod>, index: fn(&Indexes<Pod>) -> &super::Index<Pod>, key: &str| {
        index(idx)
            .get(key)
            .map(|set| set.iter().map(|e| e.0.clone()).collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let mut idx = Indexes::<Pod>::default();
    let first = pod(None, "cs-1");
    idx.add(&first);
    let found = get(&idx, |i| &i.by_owner, "cs-1");
    assert_eq!(found.len(), 1);
    assert!(
        Arc::ptr_eq(&found[0], &first),
        "the index answers with the stored Arc"
    );
    assert!(get(&idx, |i| &i.by_node, "n1").is_empty(), "unscheduled");

    // The pod is scheduled and adopted by another owner: the watch's update replaces it.
    let second = pod(Some("n1"), "cs-2");
    idx.remove(&first);
    idx.add(&second);
    assert!(get(&idx, |i| &i.by_owner, "cs-1").is_empty());
    assert!(!idx.by_owner.contains_key("cs-1"), "empty keys are dropped");
    assert!(Arc::ptr_eq(&get(&idx, |i| &i.by_owner, "cs-2")[0], &second));
    assert!(Arc::ptr_eq(&get(&idx, |i| &i.by_node, "n1")[0], &second));
    let in_ns = get(&idx, |i| &i.by_namespace, "ns1");
    assert_eq!(in_ns.len(), 1, "one entry per object, not one per version");
    assert!(Arc::ptr_eq(&in_ns[0], &second));

    // Indexing a newer version under the same keys replaces the entry.
    let third = pod(Some("n1"), "cs-2");
    idx.add(&third);
    let on_node = get(&idx, |i| &i.by_node, "n1");
    assert_eq!(on_node.len(), 1);
    assert!(Arc::ptr_eq(&on_node[0], &third), "the newest Arc answers");

    // Removing by any version of the object (same namespace and name) removes it.
    idx.remove(&pod(Some("n1"), "cs-2"));
    assert!(idx.by_owner.is_empty() && idx.by_namespace.is_empty() && idx.by_node.is_empty());
}

#[tokio::test]
async fn index_lookups_answer_with_the_stores_objects() {
    let api = ScriptedApi::new();
    api.list(
        PODS,
        ListReply::Now(vec![json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "a", "namespace": "ns1", "uid": "u-a", "resourceVersion": "3"},
            "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": "n1"}})]),
    );
    let ctx = context(&api, Duration::from_secs(5));
    let pods = ctx.cache.informer::<Pod>();
    crate::cache::wait_for_cache_sync(&[pods.synced()], Duration::from_secs(5))
        .await
        .unwrap();
    let stored = pods
        .store()
        .get(&kube::runtime::reflector::ObjectRef::new("a").within("ns1"))
        .unwrap();
    for found in [pods.in_namespace("ns1"), pods.on_node("n1")] {
        assert_eq!(found.len(), 1);
        assert!(Arc::ptr_eq(&found[0], &stored));
    }
    ctx.shutdown.cancel();
}
