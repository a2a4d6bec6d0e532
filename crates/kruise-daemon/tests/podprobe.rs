//! PodProbeMarker probes on the testbed's real node: kruise-manager (webhooks on, its
//! PodProbeMarker and NodePodProbe controllers, default gates) and kruise-daemon (its
//! generated ClusterRole only), as OpenKruise's e2e "PodProbeMarker" specs use them:
//!
//! - the manager creates the node's NodePodProbe and puts the marker's probes in it;
//! - the daemon runs them against the pod's container — `exec` over CRI, `tcpSocket` on a named
//!   port, `httpGet` — and writes the results into the NodePodProbe status, with a
//!   `KruiseProbeSucceeded` / `KruiseProbeFailed` Event on the pod;
//! - the manager turns the results into the pod's conditions and the `markerPolicy` labels and
//!   annotations; a probe changed to fail flips them; two probes of one container keep their
//!   own results;
//! - a deleted marker's probes leave the NodePodProbe and the daemon drops their results.
//!
//! One test: one kruise-daemon per node, as in a cluster.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_e2e::daemon::{TestDaemon, manager_binary_beside};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds, on_real_node, real_node, wait_for, wait_for_object};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.annotations().get(key).map(String::as_str)
}

const COST: &str = "controller.kubernetes.io/pod-deletion-cost";

#[tokio::test]
async fn pod_probe_markers_probe_containers_on_a_real_node() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let node = real_node(&env).await.expect("a real node");
    let ns = env.namespace("ppm").await.unwrap();
    let daemon_bin = env!("CARGO_BIN_EXE_kruise-daemon");
    let manager_bin = manager_binary_beside(daemon_bin).expect("kruise-manager binary");
    let _manager = TestManager::start(ManagerSpec::new(&manager_bin, ns.name()), TIMEOUT).await;
    let _daemon =
        TestDaemon::start_bound(std::path::Path::new(daemon_bin), &node, ns.name(), TIMEOUT)
            .await
            .expect("kruise-daemon ready");

    let npps: Api<NodePodProbe> = Api::all(env.client.clone());
    wait_for_object(
        &npps,
        &node,
        "the real node's NodePodProbe",
        TIMEOUT,
        |_| true,
    )
    .await
    .unwrap();

    let mut spec = json!({
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "nginx", "image": "nginx:alpine",
            "ports": [{"name": "http", "containerPort": 80}]}]});
    on_real_node(&mut spec, &node);
    let pods = ns.api::<Pod>();
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": spec}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    let ppms = ns.api::<PodProbeMarker>();
    let marker: PodProbeMarker = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "m"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "probes": [{
                "name": "healthy", "containerName": "nginx",
                "probe": {"exec": {"command": ["/bin/sh", "-c", "ls /"]},
                    "periodSeconds": 1},
                "podConditionType": "game.kruise.io/healthy",
                "markerPolicy": [
                    {"state": "Succeeded", "labels": {"nginx": "healthy"},
                        "annotations": {COST: "10"}},
                    {"state": "Failed", "labels": {"nginx": ""},
                        "annotations": {COST: "-10"}}]
            }, {
                "name": "tcp", "containerName": "nginx",
                "probe": {"tcpSocket": {"port": "http"}, "periodSeconds": 1},
                "podConditionType": "game.kruise.io/tcp"
            }, {
                "name": "http", "containerName": "nginx",
                "probe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "periodSeconds": 1},
                "podConditionType": "game.kruise.io/http"
            }]
        }
    }))
    .unwrap();
    ppms.create(&PostParams::default(), &marker).await.unwrap();

    // Every probe succeeds: conditions True, the Succeeded policy's marks.
    let p = wait_for_object(
        &pods,
        "p",
        "probes succeeded and marked the pod",
        TIMEOUT,
        |p| {
            [
                "game.kruise.io/healthy",
                "game.kruise.io/tcp",
                "game.kruise.io/http",
            ]
            .iter()
            .all(|c| condition(p, c).as_deref() == Some("True"))
                && p.labels().get("nginx").map(String::as_str) == Some("healthy")
        },
    )
    .await
    .unwrap();
    assert_eq!(annotation(&p, COST), Some("10"));
    let events = ns.api::<Event>();
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some("p"))
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "KruiseProbeSucceeded"),
        "{reasons:?}"
    );

    // The exec probe changed to fail: its condition False and the Failed policy's marks; the
    // other probes of the container keep succeeding.
    let patch = json!({"spec": {"probes": [
        {"name": "healthy", "containerName": "nginx",
            "probe": {"exec": {"command": ["/bin/sh", "-c", "exit 1"]}, "periodSeconds": 1},
            "podConditionType": "game.kruise.io/healthy",
            "markerPolicy": marker.spec.probes[0].marker_policy},
        serde_json::to_value(&marker.spec.probes[1]).unwrap(),
        serde_json::to_value(&marker.spec.probes[2]).unwrap()]}});
    ppms.patch("m", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    let p = wait_for_object(
        &pods,
        "p",
        "the failing probe marked the pod",
        TIMEOUT,
        |p| {
            condition(p, "game.kruise.io/healthy").as_deref() == Some("False")
                && annotation(p, COST) == Some("-10")
        },
    )
    .await
    .unwrap();
    assert_eq!(p.labels()["nginx"], "");
    assert_eq!(condition(&p, "game.kruise.io/tcp").as_deref(), Some("True"));
    assert_eq!(
        condition(&p, "game.kruise.io/http").as_deref(),
        Some("True")
    );
    wait_for("a KruiseProbeFailed Event", TIMEOUT, || {
        let events = events.clone();
        async move {
            events
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .any(|e| e.reason.as_deref() == Some("KruiseProbeFailed"))
                .then_some(())
        }
    })
    .await
    .unwrap();

    // A deleted marker: its probes leave the NodePodProbe and their results its status.
    ppms.delete("m", &DeleteParams::default()).await.unwrap();
    let uid = p.uid().unwrap();
    wait_for_object(
        &npps,
        &node,
        "the marker's probes and results gone",
        TIMEOUT,
        |n| {
            let listed = n.spec.pod_probes.iter().flatten().any(|e| e.uid == uid);
            let reported = n
                .status
                .iter()
                .flat_map(|s| s.pod_probe_statuses.iter().flatten())
                .any(|s| s.uid == uid);
            !listed && !reported
        },
    )
    .await
    .unwrap();
}
