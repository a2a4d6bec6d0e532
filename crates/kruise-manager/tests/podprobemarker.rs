//! PodProbeMarker and NodePodProbe, the manager's half, on the kwok testbed (default flags:
//! gates `PodProbeMarkerGate` and `KruiseDaemon` on, webhooks on).
//!
//! No kruise-daemon runs here (the real-node test `kruise-daemon/tests/podprobe.rs` has one):
//! the test writes the NodePodProbe status the daemon would. Its node is one of its own that
//! no kubelet or kwok manages, made `Ready` by writing its status, and its pods' statuses
//! (Running, Initialized, an IP) are written the same way, so nothing else touches them. What
//! is checked: the node's NodePodProbe is created; a marker gets its finalizer and status and
//! puts its probes (a named port resolved) into the NodePodProbe for every matching pod, also
//! for a pod that comes later; results become the pod's condition, labels and annotations;
//! pods that go leave the NodePodProbe; a deleted marker's probes are removed; the
//! NodePodProbe goes with its node; and the webhook refuses an invalid marker.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds, wait_for, wait_for_object};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Deletes the test's node when dropped.
struct NodeGuard(Client, String);

impl Drop for NodeGuard {
    fn drop(&mut self) {
        let (client, name) = (self.0.clone(), self.1.clone());
        let _ = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(async move {
                    let _ = Api::<Node>::all(client.clone())
                        .delete(&name, &DeleteParams::default())
                        .await;
                    let _ = Api::<NodePodProbe>::all(client)
                        .delete(&name, &DeleteParams::default())
                        .await;
                })
        })
        .join();
    }
}

/// A node of the test's own, reported `Ready`.
async fn ready_node(client: &Client, name: &str) {
    let api: Api<Node> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
    let npps: Api<NodePodProbe> = Api::all(client.clone());
    let _ = npps.delete(name, &DeleteParams::default()).await;
    wait_for("old node and NodePodProbe gone", TIMEOUT, || {
        let (api, npps) = (api.clone(), npps.clone());
        async move {
            (api.get_opt(name).await.ok()?.is_none() && npps.get_opt(name).await.ok()?.is_none())
                .then_some(())
        }
    })
    .await
    .unwrap();
    let node: Node = serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &node).await.unwrap();
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap()
        .to_string();
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
        "reason": "KubeletReady", "lastHeartbeatTime": now, "lastTransitionTime": now}]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
}

fn web_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "main", "image": "nginx:1",
                "ports": [{"name": "http", "containerPort": 8080}]}],
        },
    }))
    .unwrap()
}

/// Writes the status a kubelet would: Running, Initialized, with `ip`.
async fn report_running(pods: &Api<Pod>, name: &str, ip: &str) {
    let body = json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Initialized", "status": "True"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap();
}

fn marker(name: &str) -> PodProbeMarker {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "probes": [{
                "name": "healthy", "containerName": "main",
                "probe": {"exec": {"command": ["/bin/sh", "-c", "ls /"]}},
                "podConditionType": "game.kruise.io/healthy",
                "markerPolicy": [
                    {"state": "Succeeded", "labels": {"nginx": "healthy"},
                        "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}},
                    {"state": "Failed", "labels": {"nginx": ""},
                        "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}]
            }, {
                "name": "port", "containerName": "main",
                "probe": {"tcpSocket": {"port": "http"}, "periodSeconds": 5},
                "podConditionType": "game.kruise.io/port"
            }]
        }
    }))
    .unwrap()
}

fn entries(npp: &NodePodProbe) -> Vec<(String, Vec<String>)> {
    npp.spec
        .pod_probes
        .iter()
        .flatten()
        .map(|p| {
            (
                p.name.clone(),
                p.probes.iter().flatten().map(|c| c.name.clone()).collect(),
            )
        })
        .collect()
}

/// Writes the NodePodProbe status kruise-daemon would: `state` for probe `m#healthy` of `pod`.
async fn report_probe(npps: &Api<NodePodProbe>, node: &str, pod: &Pod, state: &str, msg: &str) {
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap()
        .to_string();
    let body = json!({"status": {"podProbeStatuses": [{
        "name": pod.name_any(), "namespace": pod.namespace().unwrap(), "uid": pod.uid().unwrap(),
        "probeStates": [{"name": "m#healthy", "state": state, "message": msg,
            "lastProbeTime": now, "lastTransitionTime": now}]}]}});
    npps.patch_status(node, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap();
}

fn condition(pod: &Pod, type_: &str) -> Option<(String, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_probe_markers_fill_node_pod_probes_and_mark_pods() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("ppm").await.unwrap();
    let node = format!("{}-node", ns.name());
    let _guard = NodeGuard(env.client.clone(), node.clone());
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let _manager = TestManager::start(spec, TIMEOUT).await;
    ready_node(&env.client, &node).await;

    let npps: Api<NodePodProbe> = Api::all(env.client.clone());
    let ppms = ns.api::<PodProbeMarker>();
    let pods = ns.api::<Pod>();

    // The node's NodePodProbe is created for the ready node.
    wait_for_object(&npps, &node, "the node's NodePodProbe", TIMEOUT, |_| true)
        .await
        .unwrap();

    let p1 = pods
        .create(&PostParams::default(), &web_pod("p1", &node))
        .await
        .unwrap();
    report_running(&pods, "p1", "10.9.0.1").await;
    ppms.create(&PostParams::default(), &marker("m"))
        .await
        .unwrap();
    let m = wait_for_object(&ppms, "m", "the marker's status", TIMEOUT, |m| {
        m.status
            .as_ref()
            .is_some_and(|s| s.observed_generation == 1 && s.matched_pods == Some(1))
    })
    .await
    .unwrap();
    assert!(
        m.finalizers()
            .contains(&"kruise.io/node-pod-probe-cleanup".to_owned())
    );
    let npp = wait_for_object(&npps, &node, "p1's probes", TIMEOUT, |n| {
        entries(n)
            == [(
                "p1".to_owned(),
                vec!["m#healthy".to_owned(), "m#port".to_owned()],
            )]
    })
    .await
    .unwrap();
    let entry = &npp.spec.pod_probes.as_ref().unwrap()[0];
    assert_eq!(
        (entry.uid.as_str(), entry.ip.as_str()),
        (p1.uid().unwrap().as_str(), "10.9.0.1")
    );
    let port = serde_json::to_value(&entry.probes.as_ref().unwrap()[1].probe).unwrap();
    assert_eq!(
        port,
        json!({"tcpSocket": {"port": 8080}, "periodSeconds": 5}),
        "named port resolved"
    );

    // A success: condition True, the Succeeded policy's label and annotation.
    report_probe(&npps, &node, &p1, "Succeeded", "ok").await;
    let pod = wait_for_object(&pods, "p1", "p1 marked healthy", TIMEOUT, |p| {
        p.labels().get("nginx").map(String::as_str) == Some("healthy")
    })
    .await
    .unwrap();
    assert_eq!(
        pod.annotations()["controller.kubernetes.io/pod-deletion-cost"],
        "10"
    );
    assert_eq!(
        condition(&pod, "game.kruise.io/healthy"),
        Some(("True".to_owned(), Some("ok".to_owned())))
    );
    // A failure: condition False with the message, the Failed policy's marks.
    report_probe(&npps, &node, &p1, "Failed", "boom").await;
    let pod = wait_for_object(&pods, "p1", "p1 marked unhealthy", TIMEOUT, |p| {
        p.annotations()
            .get("controller.kubernetes.io/pod-deletion-cost")
            .map(String::as_str)
            == Some("-10")
    })
    .await
    .unwrap();
    assert_eq!(pod.labels()["nginx"], "");
    assert_eq!(
        condition(&pod, "game.kruise.io/healthy"),
        Some(("False".to_owned(), Some("boom".to_owned())))
    );

    // A pod that comes later is added when it is running and initialized.
    pods.create(&PostParams::default(), &web_pod("p2", &node))
        .await
        .unwrap();
    report_running(&pods, "p2", "10.9.0.2").await;
    wait_for_object(&npps, &node, "p2's probes", TIMEOUT, |n| {
        entries(n)
            .iter()
            .any(|(p, probes)| p == "p2" && probes.len() == 2)
    })
    .await
    .unwrap();
    wait_for_object(&ppms, "m", "two matched pods", TIMEOUT, |m| {
        m.status.as_ref().and_then(|s| s.matched_pods) == Some(2)
    })
    .await
    .unwrap();

    // A pod that goes leaves the NodePodProbe.
    pods.delete("p1", &DeleteParams::default()).await.unwrap();
    wait_for_object(
        &npps,
        &node,
        "p1 gone from the NodePodProbe",
        TIMEOUT,
        |n| entries(n).iter().all(|(p, _)| p != "p1"),
    )
    .await
    .unwrap();

    // A deleted marker takes its probes with it and loses its finalizer.
    ppms.delete("m", &DeleteParams::default()).await.unwrap();
    wait_for("the marker gone", TIMEOUT, || {
        let ppms = ppms.clone();
        async move { ppms.get_opt("m").await.ok()?.is_none().then_some(()) }
    })
    .await
    .unwrap();
    let npp = npps.get(&node).await.unwrap();
    assert_eq!(
        entries(&npp),
        Vec::<(String, Vec<String>)>::new(),
        "{npp:?}"
    );

    // The webhook refuses a marker without probes.
    let mut bad = marker("bad");
    bad.spec.probes.clear();
    let err = ppms
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("a marker without probes is refused");
    assert!(err.to_string().contains("spec.probes"), "{err}");

    // The NodePodProbe goes with its node.
    Api::<Node>::all(env.client.clone())
        .delete(&node, &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the NodePodProbe gone with its node", TIMEOUT, || {
        let npps = npps.clone();
        let node = node.clone();
        async move { npps.get_opt(&node).await.ok()?.is_none().then_some(()) }
    })
    .await
    .unwrap();
}
