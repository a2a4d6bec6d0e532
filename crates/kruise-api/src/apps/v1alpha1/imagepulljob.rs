//! ImagePullJob (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0 also serves it as v1beta1, the
//! storage version): pre-pull one container image on a set of nodes through kruise-daemon.
//!
//! The controller turns the job into tags in the [`NodeImage`](super::NodeImage) of every
//! selected node, at most `parallelism` nodes at a time, and sums up the per-node results in
//! the status. This module also holds the types the image jobs share: the job template
//! ([`ImagePullJobTemplate`], reused by [`ImageListPullJob`](super::ImageListPullJob)), the node
//! and pod selectors, the pull policy and the CRI sandbox configuration.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CompletionPolicy;

/// Values of [`ImagePullJobTemplate::image_pull_policy`] and of the NodeImage tag field of the
/// same name.
pub mod image_pull_policy {
    /// kruise-daemon pulls the image every time, even when it is already on the node.
    pub const ALWAYS: &str = "Always";
    /// kruise-daemon pulls only when the image is missing on the node (the default).
    pub const IF_NOT_PRESENT: &str = "IfNotPresent";
}

/// The desired state of an ImagePullJob: the image plus the settings shared with
/// ImageListPullJob.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ImagePullJob",
    plural = "imagepulljobs",
    singular = "imagepulljob",
    namespaced,
    status = "ImagePullJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An ImagePullJob pulls one image on the selected nodes ahead of the pods that need it.",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of all nodes matched by this job"
    ),
    printcolumn(
        name = "ACTIVE",
        type_ = "integer",
        json_path = ".status.active",
        description = "Number of image pull task active"
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of image pull task succeeded"
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "Number of image pull tasks failed"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    ),
    printcolumn(
        name = "MESSAGE",
        type_ = "string",
        json_path = ".status.message",
        description = "Summary of status when job is failed"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobSpec {
    /// The image reference to pull (`repository:tag` or `repository@digest`).
    pub image: String,

    /// Node/pod selection, parallelism, retry and completion settings (inlined in JSON).
    #[serde(flatten)]
    pub image_pull_job_template: ImagePullJobTemplate,
}

/// Settings shared by ImagePullJob and ImageListPullJob; its fields appear inline in the spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobTemplate {
    /// Names of Secrets in the job's namespace holding registry credentials. They are copied to
    /// the `kruise-daemon-config` namespace and handed to the daemon's puller (for Docker-style
    /// registries only `kubernetes.io/dockerconfigjson`-like secrets are used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secrets: Option<Vec<String>>,

    /// Which nodes pull the image: by name or by node labels. Absent means every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<ImagePullJobNodeSelector>,

    /// Pull on the nodes that run pods matching this label selector. Cannot be combined with
    /// `selector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<ImagePullJobPodSelector>,

    /// How many nodes may pull at the same time (an integer; OpenKruise rejects percentages).
    /// Default 1; 0 pauses the job until it is raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,

    /// Timeout and retries of the pull on each node. Defaulted to 600 seconds and 3 retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<PullPolicy>,

    /// When the job counts as finished and when it is cleaned up. `type` defaults to `Always`.
    pub completion_policy: CompletionPolicy,

    /// Labels and annotations passed as the pod sandbox config of the CRI `PullImage` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,

    /// Whether to pull again when the image is already on the node: `Always` or
    /// `IfNotPresent` (see [`image_pull_policy`]). Defaults to `IfNotPresent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
}

/// A selector over pods: a plain label selector (inlined in JSON).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ImagePullJobPodSelector {
    /// The label query over pods; its `matchLabels` and `matchExpressions` appear inline.
    #[serde(flatten)]
    pub label_selector: LabelSelector,
}

/// A selector over nodes: an explicit list of node names, or a label selector (inlined in JSON).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct ImagePullJobNodeSelector {
    /// Names of the nodes that should pull the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,

    /// The label query over nodes; its `matchLabels` and `matchExpressions` appear inline.
    #[serde(flatten)]
    pub label_selector: LabelSelector,
}

/// Per-node limits of a pull task.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullPolicy {
    /// Seconds one pull attempt may take before it is cancelled. Defaults to 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,

    /// Number of retries before the pull on a node is marked failed. Defaults to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

/// Metadata attached as the pod sandbox config of the CRI `PullImage` request (some runtimes
/// and image services use it, e.g. to pick credentials or a mirror).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SandboxConfig {
    /// Sandbox labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,

    /// Sandbox annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The observed state of an ImagePullJob, aggregated from the NodeImages of the selected nodes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobStatus {
    /// When the controller first picked up the job (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the job finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Number of pull tasks wanted, normally the number of selected nodes.
    pub desired: i32,

    /// Number of pull tasks currently running. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub active: i32,

    /// Number of pull tasks that succeeded. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub succeeded: i32,

    /// Number of pull tasks that failed. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub failed: i32,

    /// A short human-readable summary of the job's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// Names of the nodes on which the pull failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_nodes: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_imagepulljob.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let job: ImagePullJob = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(job.spec.image, "nginx:1.25");
        assert!(job.spec.image_pull_job_template.selector.is_some());
        assert_eq!(serde_json::to_value(&job).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "ImagePullJob",
            "metadata": {"name": "j"},
            "spec": {"image": "busybox", "completionPolicy": {}},
            "status": {"desired": 0, "active": 0, "succeeded": 0, "failed": 0}
        });
        let job: ImagePullJob = serde_json::from_value(raw.clone()).unwrap();
        let t = &job.spec.image_pull_job_template;
        assert!(t.selector.is_none() && t.pull_policy.is_none() && t.image_pull_policy.is_none());
        assert_eq!(serde_json::to_value(&job).unwrap(), raw);
    }

    #[test]
    fn node_selector_inlines_label_selector() {
        let raw = json!({"names": ["n1"], "matchLabels": {"a": "b"}});
        let sel: ImagePullJobNodeSelector = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(sel.names.as_deref(), Some(&["n1".to_string()][..]));
        assert_eq!(sel.label_selector.match_labels.as_ref().unwrap()["a"], "b");
        assert_eq!(serde_json::to_value(&sel).unwrap(), raw);
    }
}
