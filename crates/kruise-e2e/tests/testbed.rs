//! Proves the testbed is a real cluster: scheduling, ReplicaSets, garbage collection, and the kwok
//! stages that simulate what OpenKruise needs from a kubelet (in-place image restarts, readiness
//! gates).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::{TestEnv, wait_for_list, wait_for_object};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
}

fn deployment(name: &str, replicas: i32, spread: bool) -> Deployment {
    let mut spec = json!({
        "containers": [{"name": "web", "image": "nginx:1.25"}],
    });
    if spread {
        spec["topologySpreadConstraints"] = json!([{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": name}},
        }]);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn deployment_scales_to_five_ready_pods_spread_over_kwok_nodes() {
    let env = TestEnv::connect().await.expect("testbed");
    let ns = env.namespace("deploy-spread").await.unwrap();
    let nodes: Vec<Node> = Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .unwrap()
        .items;
    assert!(
        nodes.len() >= 3,
        "testbed has at least 3 kwok nodes, found {}",
        nodes.len()
    );
    let zones: BTreeSet<String> = nodes
        .iter()
        .filter_map(|n| n.labels().get("topology.kubernetes.io/zone").cloned())
        .collect();
    assert_eq!(zones.len(), 3, "nodes span 3 zones: {zones:?}");

    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("web", 5, true))
        .await
        .unwrap();
    let pods = wait_for_list(
        &ns.api::<Pod>(),
        &ListParams::default().labels("app=web"),
        "5 Running+Ready pods of Deployment web",
        TIMEOUT,
        |pods| pods.len() == 5 && pods.iter().all(running_and_ready),
    )
    .await
    .unwrap();

    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in &pods {
        let node = p
            .spec
            .as_ref()
            .unwrap()
            .node_name
            .clone()
            .expect("pod bound by the scheduler");
        *per_node.entry(node).or_default() += 1;
        let status = p.status.as_ref().unwrap();
        assert!(status.pod_ip.is_some(), "kwok assigned a pod IP");
        let cs = &status.container_statuses.as_ref().unwrap()[0];
        assert!(cs.ready && cs.started == Some(true));
        assert!(
            cs.image_id.starts_with("nginx@sha256:"),
            "imageID set: {}",
            cs.image_id
        );
        assert!(
            cs.container_id
                .as_deref()
                .unwrap_or("")
                .starts_with("containerd://")
        );
    }
    // The hard topology spread constraint (maxSkew 1 over hostname) is enforced by the real
    // scheduler: with 5 pods over 3 nodes every node gets 1 or 2.
    assert_eq!(
        per_node.len(),
        nodes.len().min(5),
        "pods on every node: {per_node:?}"
    );
    assert!(
        per_node.values().all(|&n| (1..=2).contains(&n)),
        "{per_node:?}"
    );

    let d = wait_for_object(
        &ns.api::<Deployment>(),
        "web",
        "Deployment status to report 5 available replicas",
        TIMEOUT,
        |d: &Deployment| d.status.as_ref().and_then(|s| s.available_replicas) == Some(5),
    )
    .await
    .unwrap();
    assert_eq!(d.status.unwrap().ready_replicas, Some(5));
}

#[tokio::test]
async fn patching_a_pod_image_restarts_the_container_in_place() {
    let env = TestEnv::connect().await.expect("testbed");
    let ns = env.namespace("inplace-image").await.unwrap();
    let pods = ns.api::<Pod>();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [
            {"name": "main", "image": "nginx:1.25"},
            {"name": "side", "image": "busybox:1.36"},
        ]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let before = wait_for_object(
        &pods,
        "p",
        "pod p Running+Ready",
        TIMEOUT,
        running_and_ready,
    )
    .await
    .unwrap();
    let status_of = |p: &Pod, c: &str| {
        p.status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()
            .iter()
            .find(|s| s.name == c)
            .cloned()
            .unwrap()
    };
    let main_before = status_of(&before, "main");
    let side_before = status_of(&before, "side");
    assert_eq!(main_before.restart_count, 0);

    // Watch the pod from the current resourceVersion so every transition is seen.
    let mut events = watcher(
        pods.clone(),
        watcher::Config::default().fields("metadata.name=p"),
    )
    .applied_objects()
    .boxed();

    pods.patch(
        "p",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.26"}
            ]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();

    let mut saw_not_ready_with_new_image = false;
    let after = tokio::time::timeout(TIMEOUT, async {
        while let Some(p) = events.try_next().await.unwrap() {
            let main = status_of(&p, "main");
            if main.image == "nginx:1.26" && !main.ready {
                assert_eq!(
                    condition(&p, "Ready").as_deref(),
                    Some("False"),
                    "pod is not Ready while the restarted container is not ready"
                );
                saw_not_ready_with_new_image = true;
            }
            if main.image == "nginx:1.26" && main.ready && running_and_ready(&p) {
                return p;
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("pod became Ready again with the new image");
    assert!(
        saw_not_ready_with_new_image,
        "the container was briefly not ready after the restart"
    );

    assert_eq!(
        after.uid(),
        before.uid(),
        "same pod (in place), not recreated"
    );
    let main_after = status_of(&after, "main");
    assert_eq!(main_after.restart_count, 1);
    assert_ne!(
        main_after.image_id, main_before.image_id,
        "imageID follows the new image"
    );
    assert!(main_after.image_id.starts_with("nginx@sha256:"));
    assert_ne!(
        main_after.container_id, main_before.container_id,
        "a new container"
    );
    // The untouched container is not restarted.
    let side_after = status_of(&after, "side");
    assert_eq!(side_after.restart_count, 0);
    assert_eq!(side_after.container_id, side_before.container_id);

    // imageID is a deterministic function of the image: a second pod with nginx:1.26 reports
    // the same imageID.
    let other: Pod = serde_json::from_value(json!({
        "metadata": {"name": "q"},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &other).await.unwrap();
    let q = wait_for_object(
        &pods,
        "q",
        "pod q Running+Ready",
        TIMEOUT,
        running_and_ready,
    )
    .await
    .unwrap();
    assert_eq!(status_of(&q, "main").image_id, main_after.image_id);
}

#[tokio::test]
async fn deleting_a_deployment_garbage_collects_its_pods() {
    let env = TestEnv::connect().await.expect("testbed");
    let ns = env.namespace("gc").await.unwrap();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment("gc", 3, false))
        .await
        .unwrap();
    let lp = ListParams::default().labels("app=gc");
    wait_for_list(&ns.api::<Pod>(), &lp, "3 ready pods", TIMEOUT, |p| {
        p.len() == 3 && p.iter().all(running_and_ready)
    })
    .await
    .unwrap();
    ns.api::<Deployment>()
        .delete("gc", &DeleteParams::background())
        .await
        .unwrap();
    wait_for_list(
        &ns.api::<ReplicaSet>(),
        &lp,
        "ReplicaSets garbage-collected",
        TIMEOUT,
        |r| r.is_empty(),
    )
    .await
    .unwrap();
    wait_for_list(
        &ns.api::<Pod>(),
        &lp,
        "pods garbage-collected",
        TIMEOUT,
        |p| p.is_empty(),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_pod_with_an_unmet_readiness_gate_stays_not_ready() {
    let env = TestEnv::connect().await.expect("testbed");
    let ns = env.namespace("readiness-gate").await.unwrap();
    let pods = ns.api::<Pod>();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "gated"},
        "spec": {
            "readinessGates": [{"conditionType": "example.com/ready"}],
            "containers": [{"name": "main", "image": "nginx:1.25"}],
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for_object(&pods, "gated", "containers ready", TIMEOUT, |p| {
        condition(p, "ContainersReady").as_deref() == Some("True")
    })
    .await
    .unwrap();
    // Containers are ready, but the gate is unmet: Ready must stay False.
    for _ in 0..10 {
        let p = pods.get("gated").await.unwrap();
        assert_eq!(
            condition(&p, "Ready").as_deref(),
            Some("False"),
            "gate unmet"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    let set_gate = |status: &str| {
        Patch::Strategic(json!({"status": {"conditions": [
            {"type": "example.com/ready", "status": status}
        ]}}))
    };
    pods.patch_status("gated", &PatchParams::default(), &set_gate("True"))
        .await
        .unwrap();
    wait_for_object(
        &pods,
        "gated",
        "Ready once the gate is True",
        TIMEOUT,
        |p| condition(p, "Ready").as_deref() == Some("True"),
    )
    .await
    .unwrap();
    // And back: a controller setting its gate False takes the pod out of Ready (as the kubelet).
    pods.patch_status("gated", &PatchParams::default(), &set_gate("False"))
        .await
        .unwrap();
    wait_for_object(
        &pods,
        "gated",
        "not Ready once the gate is False",
        TIMEOUT,
        |p| condition(p, "Ready").as_deref() == Some("False"),
    )
    .await
    .unwrap();
}
