//! ContainerRecreateRequest, CRR (`apps.kruise.io/v1alpha1`, the only version in OpenKruise
//! v1.9.0): ask kruise-daemon to restart (kill and let the kubelet recreate) some containers of
//! a running pod, with optional not-ready grace, ordering and deadlines.
//!
//! The spec is immutable after creation. The mutating webhook labels the request with the pod
//! UID and node ([`crate::keys::CRR_POD_UID`], [`crate::keys::CRR_NODE_NAME`]) and marks it
//! active ([`crate::keys::CRR_ACTIVE`]); it also copies each container's preStop hook, ports
//! and current container ID into the request (the read-only fields below).

use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, HTTPGetAction, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// The desired state of a ContainerRecreateRequest.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ContainerRecreateRequest",
    plural = "containerrecreaterequests",
    singular = "containerrecreaterequest",
    shortname = "crr",
    namespaced,
    status = "ContainerRecreateRequestStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A ContainerRecreateRequest asks kruise-daemon to recreate some containers of one pod in place.",
    printcolumn(
        name = "PHASE",
        type_ = "string",
        json_path = ".status.phase",
        description = "Phase of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "POD",
        type_ = "string",
        json_path = ".spec.podName",
        description = "Pod name of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "NODE",
        type_ = "string",
        json_path = ".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",
        description = "Pod name of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestSpec {
    /// Name of the pod (in the request's namespace) whose containers are recreated. The pod must
    /// be active and scheduled.
    pub pod_name: String,

    /// The containers to recreate, each at most once (merged by `name` in strategic patches).
    pub containers: Vec<ContainerRecreateRequestContainer>,

    /// How the containers are recreated. The webhook fills in an empty strategy with
    /// `failurePolicy: Fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ContainerRecreateRequestStrategy>,

    /// Seconds after creation at which the request is failed if it has not completed (the
    /// webhook requires at least 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,

    /// Seconds after completion at which the request is deleted; unset keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// One container to recreate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainer {
    /// Name of the container; it must be one of the pod's `spec.containers`.
    pub name: String,

    /// Read-only, set by the webhook: the container's preStop hook, run before it is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<ProbeHandler>,

    /// Read-only, set by the webhook when the preStop hook is an HTTP GET: the container's
    /// ports, so that a named hook port can be resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "container_ports_schema")]
    pub ports: Option<Vec<ContainerPort>>,

    /// Read-only, set by the webhook: the container's ID and restart count at creation time,
    /// used to recognise the recreated container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_context: Option<ContainerRecreateRequestContainerContext>,
}

/// The schema of a list of [`ContainerPort`]s, plus the `default: TCP` that the Kubernetes Go
/// type declares for `protocol` (k8s-openapi's schema leaves it out).
fn container_ports_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<Vec<ContainerPort>>();
    if let Some(protocol) = schema
        .pointer_mut("/items/properties/protocol")
        .and_then(serde_json::Value::as_object_mut)
    {
        protocol.insert("example".into(), "TCP".into());
    }
    schema
}

/// The schema of an [`HTTPGetAction`] as in OpenKruise v1.9.0's CRD, which was generated from
/// an older Kubernetes API: without the later `protocol` field (the apiserver prunes it, as it
/// does for OpenKruise).
fn http_get_action_schema(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<HTTPGetAction>();
    if let Some(props) = schema
        .pointer_mut("/properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        props.remove("protocol");
    }
    schema
}

/// An action run against a container (here: the preStop hook). Exactly one member is set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeHandler {
    /// Run a command inside the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,

    /// Send an HTTP GET request to the pod.
    #[serde(default, rename = "httpGet", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "http_get_action_schema")]
    pub http_get: Option<HTTPGetAction>,

    /// Open a TCP connection to the pod.
    #[serde(default, rename = "tcpSocket", skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TCPSocketAction>,
}

/// The state of a container when the request was created.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainerContext {
    /// The container's ID, `<runtime>://<id>`.
    #[serde(rename = "containerID")]
    pub container_id: String,

    /// The container's restart count (as reported by the kubelet; counted from dead containers
    /// not yet garbage-collected, so it may be capped).
    pub restart_count: i32,
}

/// Values of [`ContainerRecreateRequestStrategy::failure_policy`].
pub mod container_recreate_request_failure_policy {
    /// Stop at the first container that fails to be recreated and fail the request (default).
    pub const FAIL: &str = "Fail";
    /// Carry on with the other containers when one fails.
    pub const IGNORE: &str = "Ignore";
}

/// How the containers of a request are recreated.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStrategy {
    /// What to do when a container fails to be recreated: `Fail` (the webhook default) or
    /// `Ignore` (see [`container_recreate_request_failure_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,

    /// Recreate the containers one after another, each waiting for the previous one to be
    /// recreated and started. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_recreate: Option<bool>,

    /// Kill a container even if it is still starting after an earlier recreation. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_recreate: Option<bool>,

    /// Seconds the container is given to stop gracefully (non-negative; 0 kills at once). Unset:
    /// the webhook copies the pod's `terminationGracePeriodSeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,

    /// Seconds the pod is held not-ready (through the `KruisePodReady` condition) before the
    /// preStop hook runs and the container is stopped (non-negative). Unset: no such wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unready_grace_period_seconds: Option<i64>,

    /// Seconds the new container must stay started and ready to count as succeeded. Default 0
    /// (succeeded as soon as it is started and ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_started_seconds: Option<i32>,
}

/// Values of [`ContainerRecreateRequestStatus::phase`] and
/// [`ContainerRecreateRequestContainerRecreateState::phase`].
pub mod container_recreate_request_phase {
    /// Waiting (for the daemon, or for another request on the same pod).
    pub const PENDING: &str = "Pending";
    /// The daemon is recreating the containers.
    pub const RECREATING: &str = "Recreating";
    /// The container was recreated (per-container phase).
    pub const SUCCEEDED: &str = "Succeeded";
    /// The container could not be recreated (per-container phase).
    pub const FAILED: &str = "Failed";
    /// The request is finished (the final phase of a request).
    pub const COMPLETED: &str = "Completed";
}

/// The observed state of a ContainerRecreateRequest.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStatus {
    /// Phase of the request (see [`container_recreate_request_phase`]).
    pub phase: String,

    /// When the request completed (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Human-readable details, e.g. why the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// Progress of each container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_recreate_states: Option<Vec<ContainerRecreateRequestContainerRecreateState>>,
}

/// Progress of one container of a request.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestContainerRecreateState {
    /// Name of the container.
    pub name: String,

    /// Phase of this container's recreation (see [`container_recreate_request_phase`]).
    pub phase: String,

    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// Whether kruise-daemon has already killed the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_killed: Option<bool>,
}

/// One element of the JSON list kept in the annotation
/// [`crate::keys::CRR_SYNC_CONTAINER_STATUSES`] while a request is `Recreating`: a snapshot of a
/// pod container status, written by the controller and read by the daemon.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestSyncContainerStatus {
    /// Name of the container.
    pub name: String,
    /// Whether the container passes its readiness probe.
    pub ready: bool,
    /// The container's restart count.
    pub restart_count: i32,
    /// The container's ID, `<runtime>://<id>`.
    #[serde(
        default,
        rename = "containerID",
        skip_serializing_if = "String::is_empty"
    )]
    pub container_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_containerrecreaterequest.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let crr: ContainerRecreateRequest = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(!crr.spec.containers.is_empty());
        assert_eq!(serde_json::to_value(&crr).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "ContainerRecreateRequest",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": {"podName": "p", "containers": [{"name": "app"}], "strategy": {}},
            "status": {"phase": "Pending", "containerRecreateStates": [{"name": "app", "phase": "Pending"}]}
        });
        let crr: ContainerRecreateRequest = serde_json::from_value(raw.clone()).unwrap();
        let s = crr.spec.strategy.as_ref().unwrap();
        assert!(s.failure_policy.is_none() && s.ordered_recreate.is_none());
        assert!(s.min_started_seconds.is_none());
        assert_eq!(serde_json::to_value(&crr).unwrap(), raw);
    }

    #[test]
    fn sync_container_statuses_annotation_format() {
        let text = r#"[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://1"},{"name":"side","ready":false,"restartCount":0}]"#;
        let list: Vec<ContainerRecreateRequestSyncContainerStatus> =
            serde_json::from_str(text).unwrap();
        assert_eq!(list[0].container_id, "containerd://1");
        assert!(list[1].container_id.is_empty());
        assert_eq!(serde_json::to_string(&list).unwrap(), text);
    }

    #[test]
    fn container_schema_matches_openkruise() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(ContainerRecreateRequest::crd()).unwrap();
        let c = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["containers"]["items"]["properties"];
        assert!(c["ports"]["items"]["properties"]["protocol"].is_object());
        assert!(c["preStop"]["properties"]["httpGet"]["properties"]["path"].is_object());
        assert!(
            c["preStop"]["properties"]["httpGet"]["properties"]
                .get("protocol")
                .is_none()
        );
    }
}
