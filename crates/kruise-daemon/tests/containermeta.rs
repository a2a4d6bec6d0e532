//! kruise-daemon's containermeta controller with kruise-manager on the testbed's real node
//! (OpenKruise's CloneSet specs "in-place update images with the same imageID",
//! `partition="99%"` and "in-place update both image and env from label", and the ContainerMeta
//! spec "should recreate container when annotations for env changed" rely on it):
//!
//! - the daemon reports each Kruise pod's runtime containers in
//!   `apps.kruise.io/runtime-containers-meta` with the kubelet's hash, which equals the one the
//!   manager computes (so OpenKruise's and our managers both read it) — and leaves other pods
//!   alone;
//! - an in-place update to another tag of the same digest (the runtime keeps reporting the old
//!   tag and the same imageID) completes through that report;
//! - an in-place update of a label or an annotation read by an env var restarts the container
//!   (the kubelet cannot) so the process sees the new value, and completes;
//! - a restarted daemon writes nothing;
//! - the daemon needs nothing beyond its generated ClusterRole (`config/rbac/daemon_role.yaml`).
//!
//! One test: one kruise-daemon per node, as in a cluster.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::common::RuntimeContainerMetaSet;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::keys;
use kruise_e2e::daemon::{TestDaemon, manager_binary_beside};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{
    TestEnv, install_crds, kubectl, on_real_node, real_node, wait_for_list, wait_for_object,
};
use kruise_engines::inplace::{expected_env_from_metadata_hash, plain_container_hash};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

fn meta(pod: &Pod) -> Option<RuntimeContainerMetaSet> {
    let raw = pod
        .metadata
        .annotations
        .as_ref()?
        .get(keys::RUNTIME_CONTAINERS_META)?;
    Some(serde_json::from_str(raw).expect("runtime-containers-meta is valid JSON"))
}

/// Requests the API server refused with 403, from a daemon's metrics.
fn forbidden(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("rest_client_requests_total{") && l.contains("code=\"403\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn restart_count(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or(-1, |c| c.restart_count)
}

fn container_id(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .container_id
        .clone()
}

fn running_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|cs| !cs.is_empty() && cs.iter().all(|c| c.ready))
}

/// The report is current: it names the running container and carries the hashes the manager
/// expects for the pod's spec and metadata.
fn report_current(pod: &Pod) -> bool {
    let (Some(m), Some(id)) = (meta(pod), container_id(pod)) else {
        return false;
    };
    let c = &pod.spec.as_ref().unwrap().containers[0];
    m.containers.len() == 1
        && m.containers[0].container_id == id
        && m.containers[0].hashes.plain_hash == plain_container_hash(c)
        && m.containers[0].hashes.extracted_env_from_metadata_hash
            == expected_env_from_metadata_hash(c, pod)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kruise_daemon_reports_runtime_containers_and_completes_in_place_updates_on_a_real_node() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let node = real_node(&env).await.expect("a real node");
    let ns = env.namespace("containermeta").await.unwrap();
    let daemon_bin = env!("CARGO_BIN_EXE_kruise-daemon");
    let manager_bin = manager_binary_beside(daemon_bin).expect("kruise-manager binary");
    let spec = ManagerSpec::new(&manager_bin, ns.name());
    let _manager = TestManager::start(spec, TIMEOUT).await;
    // The daemon runs with the generated ClusterRole only (config/rbac/daemon_role.yaml).
    let mut daemon =
        TestDaemon::start_bound(std::path::Path::new(daemon_bin), &node, ns.name(), TIMEOUT)
            .await
            .expect("kruise-daemon ready");

    let mut pod_spec = json!({
        "terminationGracePeriodSeconds": 3,
        "containers": [{"name": "nginx", "image": "nginx:alpine",
            "env": [{"name": "LABEL_E",
                     "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['e']"}}},
                    {"name": "ANNOTATION_A",
                     "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a']"}}}]}],
    });
    on_real_node(&mut pod_spec, &node);
    let cs: CloneSet = serde_json::from_value(json!({
        "metadata": {"name": "cm"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "cm"}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "100%"},
            "template": {"metadata": {"labels": {"app": "cm", "e": "one"}, "annotations": {"a": "x"}},
                         "spec": pod_spec},
        },
    }))
    .unwrap();
    let sets = ns.api::<CloneSet>();
    sets.create(&PostParams::default(), &cs).await.unwrap();
    // A pod no Kruise workload owns: the daemon leaves it alone.
    let mut plain_spec = json!({"terminationGracePeriodSeconds": 1,
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]});
    on_real_node(&mut plain_spec, &node);
    let plain: Pod =
        serde_json::from_value(json!({"metadata": {"name": "plain"}, "spec": plain_spec})).unwrap();
    let pods = ns.api::<Pod>();
    pods.create(&PostParams::default(), &plain).await.unwrap();

    let lp = ListParams::default().labels("app=cm");
    let first = wait_for_list(
        &pods,
        &lp,
        "two running CloneSet pods with a current runtime-containers-meta",
        TIMEOUT,
        |ps| ps.len() == 2 && ps.iter().all(|p| running_ready(p) && report_current(p)),
    )
    .await
    .unwrap();
    let uids: BTreeMap<String, String> = first
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.metadata.uid.clone().unwrap(),
            )
        })
        .collect();
    let plain_now = wait_for_object(&pods, "plain", "pod plain running", TIMEOUT, running_ready)
        .await
        .unwrap();
    assert!(
        meta(&plain_now).is_none(),
        "a pod no Kruise workload owns gets no report"
    );

    // 1. Another tag of the same digest: the runtime keeps the old tag and image ID in the
    //    status, so only the report (new kubelet hash) shows the containers were updated.
    sets.patch(
        "cm",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{"op": "replace",
                "path": "/spec/template/spec/containers/0/image", "value": "nginx:mainline-alpine"}]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    let done = |gen_at_least: i64| {
        move |c: &CloneSet| {
            let Some(st) = c.status.as_ref() else {
                return false;
            };
            st.observed_generation.unwrap_or(0) >= gen_at_least
                && st.updated_replicas == 2
                && st.updated_ready_replicas == 2
                && st.ready_replicas == 2
        }
    };
    wait_for_object(
        &sets,
        "cm",
        "CloneSet cm updated to the new tag",
        TIMEOUT,
        done(2),
    )
    .await
    .expect("same-digest in-place update completes");
    let after_image = wait_for_list(
        &pods,
        &lp,
        "pods restarted once with a current report",
        TIMEOUT,
        |ps| {
            ps.len() == 2
                && ps
                    .iter()
                    .all(|p| restart_count(p) == 1 && running_ready(p) && report_current(p))
        },
    )
    .await
    .unwrap();
    for p in &after_image {
        let name = p.metadata.name.clone().unwrap();
        assert_eq!(
            p.metadata.uid.as_ref(),
            uids.get(&name),
            "{name} updated in place"
        );
    }

    // 2. A label read by an env var: the kubelet does not restart for it; the daemon does.
    sets.patch(
        "cm",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"metadata": {"labels": {"e": "two"}}}}})),
    )
    .await
    .unwrap();
    wait_for_object(
        &sets,
        "cm",
        "CloneSet cm updated to the new label",
        TIMEOUT,
        done(3),
    )
    .await
    .expect("env-from-label in-place update completes");
    let after_env = wait_for_list(
        &pods,
        &lp,
        "pods restarted a second time with the new env hash reported",
        TIMEOUT,
        |ps| {
            ps.len() == 2
                && ps
                    .iter()
                    .all(|p| restart_count(p) == 2 && running_ready(p) && report_current(p))
        },
    )
    .await
    .unwrap();
    let env_of = |name: &str| {
        let out = kubectl(
            &[
                "-n",
                ns.name(),
                "exec",
                name,
                "-c",
                "nginx",
                "--",
                "sh",
                "-c",
                "echo $LABEL_E $ANNOTATION_A",
            ],
            None,
        )
        .unwrap();
        assert!(out.success, "exec in {name}: {}", out.stderr);
        out.stdout.trim().to_owned()
    };
    for p in &after_env {
        let name = p.metadata.name.clone().unwrap();
        assert_eq!(p.metadata.uid.as_ref(), uids.get(&name));
        assert_eq!(
            env_of(&name),
            "two x",
            "{name}'s process sees the new label"
        );
    }

    // 3. The same for an annotation (OpenKruise's ContainerMeta spec).
    sets.patch(
        "cm",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"metadata": {"annotations": {"a": "y"}}}}})),
    )
    .await
    .unwrap();
    wait_for_object(
        &sets,
        "cm",
        "CloneSet cm updated to the new annotation",
        TIMEOUT,
        done(4),
    )
    .await
    .expect("env-from-annotation in-place update completes");
    let after_annotation = wait_for_list(
        &pods,
        &lp,
        "pods restarted a third time with the new env hash reported",
        TIMEOUT,
        |ps| {
            ps.len() == 2
                && ps
                    .iter()
                    .all(|p| restart_count(p) == 3 && running_ready(p) && report_current(p))
        },
    )
    .await
    .unwrap();
    for p in &after_annotation {
        let name = p.metadata.name.clone().unwrap();
        assert_eq!(p.metadata.uid.as_ref(), uids.get(&name));
        assert_eq!(
            env_of(&name),
            "two y",
            "{name}'s process sees the new annotation"
        );
    }

    let first_metrics = daemon.metrics_text().await.expect("daemon metrics");
    assert_eq!(
        forbidden(&first_metrics),
        0.0,
        "no request forbidden by the generated role"
    );

    // 4. A restarted daemon finds every report current and writes nothing (the CloneSet's
    //    pods keep their resourceVersion; the kubelet may still write the plain pod).
    let before: Vec<Pod> = pods.list(&lp).await.unwrap().items;
    daemon.restart(TIMEOUT).await.expect("daemon ready again");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after: Vec<Pod> = pods.list(&lp).await.unwrap().items;
    let versions = |ps: &[Pod]| {
        ps.iter()
            .map(|p| {
                (
                    p.metadata.name.clone().unwrap(),
                    p.metadata.resource_version.clone().unwrap(),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(
        versions(&before),
        versions(&after),
        "no CloneSet pod written after a daemon restart"
    );
    let metrics = daemon.metrics_text().await.expect("daemon metrics");
    let patches: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("rest_client_requests_total{") && l.contains("method=\"PATCH\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(
        patches, 0.0,
        "the restarted daemon sent no PATCH:\n{metrics}"
    );
    assert_eq!(forbidden(&metrics), 0.0);
}
