//! Reconcile-level tests on a scripted API: which requests one pass sends.

use std::sync::Arc;

use kruise_api::pod::CachedPod;
use kruise_runtime::features::FeatureGates;
use kruise_runtime::runner::{Context, ControllerConfig};
use kruise_runtime::testing::{ListReply, Reply, ScriptedApi};
use serde_json::{Value, json};

use super::reconcile;

const PODS: &str = "/api/v1/namespaces/ns/pods";
const CRRS: &str = "/apis/apps.kruise.io/v1alpha1/namespaces/ns/containerrecreaterequests";
const CRR: &str =
    "/apis/apps.kruise.io/v1alpha1/namespaces/ns/containerrecreaterequests/sidecar-termination-u1";

fn pod_json(node: &str, sidecars: Value, statuses: Value) -> Value {
    let mut containers = vec![json!({"name": "main", "image": "main:1"})];
    containers.extend(sidecars.as_array().unwrap().iter().cloned());
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job", "namespace": "ns", "uid": "u1", "resourceVersion": "3"},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": containers},
        "status": {"phase": "Running", "containerStatuses": statuses}})
}

fn sidecar(name: &str, env: Value) -> Value {
    json!({"name": name, "image": "sidecar:1", "env": env})
}

fn exited(name: &str) -> Value {
    json!({"name": name, "state": {"terminated": {"exitCode": 0}}})
}

fn running(name: &str) -> Value {
    json!({"name": name, "state": {"running": {}}})
}

fn api_with_nodes() -> ScriptedApi {
    let api = ScriptedApi::new();
    api.list(
        "/api/v1/nodes",
        ListReply::Now(vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
            json!({"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": "vk1", "labels": {"type": "virtual-kubelet"}}}),
        ]),
    );
    api
}

async fn pass(api: &ScriptedApi, pod: &Value) -> Result<(), super::Error> {
    let ctx = Arc::new(Context::new(
        api.client(),
        FeatureGates::default(),
        ControllerConfig::default(),
    ));
    let pod: CachedPod = serde_json::from_value(pod.clone()).unwrap();
    reconcile(Arc::new(pod), ctx).await.map(|_| ())
}

/// The calls of a pass, without the node cache's list and the Events.
fn writes_and_reads(api: &ScriptedApi) -> Vec<String> {
    api.calls()
        .into_iter()
        .filter(|c| !c.ends_with("/api/v1/nodes") && !c.contains("/events"))
        .collect()
}

fn not_found() -> Reply {
    Reply::Status(404, "not found".into())
}

#[tokio::test]
async fn a_missing_request_is_created_an_existing_one_waited_for() {
    let pod = pod_json(
        "n1",
        json!([sidecar(
            "s",
            json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}])
        )]),
        json!([exited("main"), running("s")]),
    );
    let api = api_with_nodes();
    api.reply("GET", CRR, [not_found()]);
    pass(&api, &pod).await.unwrap();
    assert_eq!(
        writes_and_reads(&api),
        [format!("GET {CRR}"), format!("POST {CRRS}")]
    );
    assert!(
        api.calls().iter().any(|c| c.contains("/events")),
        "an Event"
    );

    let api = api_with_nodes();
    api.reply(
        "GET",
        CRR,
        [Reply::Object(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": "sidecar-termination-u1", "namespace": "ns"},
        "spec": {"podName": "job", "containers": [{"name": "s"}]}}))],
    );
    pass(&api, &pod).await.unwrap();
    assert_eq!(writes_and_reads(&api), [format!("GET {CRR}")]);
}

#[tokio::test]
async fn a_missing_node_fails_the_pass() {
    let pod = pod_json(
        "gone",
        json!([sidecar(
            "s",
            json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}])
        )]),
        json!([exited("main"), running("s")]),
    );
    let api = api_with_nodes();
    let err = pass(&api, &pod).await.unwrap_err();
    assert!(
        err.to_string().contains("nodes \"gone\" not found"),
        "{err}"
    );
    assert!(writes_and_reads(&api).is_empty());
}

#[tokio::test]
async fn in_place_update_retries_a_conflict_on_a_fresh_read() {
    let pod = pod_json(
        "vk1",
        json!([sidecar(
            "s",
            json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE", "value": "exit:1"}])
        )]),
        json!([exited("main"), running("s")]),
    );
    let api = api_with_nodes();
    let one = format!("{PODS}/job");
    api.reply(
        "GET",
        &one,
        [Reply::Object(pod.clone()), Reply::Object(pod.clone())],
    );
    api.reply("PUT", &one, [Reply::Status(409, "conflict".into())]);
    pass(&api, &pod).await.unwrap();
    assert_eq!(
        writes_and_reads(&api),
        [
            format!("GET {one}"),
            format!("PUT {one}"),
            format!("GET {one}"),
            format!("PUT {one}")
        ]
    );
}

#[tokio::test]
async fn ignore_exit_code_sidecars_are_stopped_after_the_pod_is_marked_terminated() {
    let pod = pod_json(
        "n1",
        json!([
            sidecar(
                "done",
                json!([{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}])
            ),
            sidecar(
                "ignored",
                json!([
                {"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"},
                {"name": "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "value": "true"}])
            ),
        ]),
        json!([exited("main"), exited("done"), running("ignored")]),
    );
    let api = api_with_nodes();
    api.reply("GET", CRR, [not_found()]);
    api.reply(
        "PATCH",
        &format!("{PODS}/job/status"),
        [Reply::Object(pod.clone())],
    );
    pass(&api, &pod).await.unwrap();
    assert_eq!(
        writes_and_reads(&api),
        [
            format!("PATCH {PODS}/job/status"),
            format!("GET {CRR}"),
            format!("POST {CRRS}")
        ]
    );
}
