//! BroadcastJob (`apps.kruise.io/v1beta1`, the storage version; v1alpha1 is also served and has
//! the same fields): runs one pod of a template to completion on every eligible node, like a
//! DaemonSet whose pods are jobs.
//!
//! [`CompletionPolicy`] is also used by ImagePullJob and ImageListPullJob.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a BroadcastJob.
// kube-derive's repeated `printcolumn(...)` arguments trip this lint.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "BroadcastJob",
    plural = "broadcastjobs",
    singular = "broadcastjob",
    shortname = "bcj",
    namespaced,
    status = "BroadcastJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A job that runs one pod on every eligible node (v1beta1, storage version).",
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.desired",
        description = "The desired number of pods. This is typically equal to the number of nodes satisfied to run pods."
    ),
    printcolumn(
        name = "Active",
        type_ = "integer",
        json_path = ".status.active",
        description = "The number of actively running pods."
    ),
    printcolumn(
        name = "Succeeded",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "The number of pods which reached phase Succeeded."
    ),
    printcolumn(
        name = "Failed",
        type_ = "integer",
        json_path = ".status.failed",
        description = "The number of pods which reached phase Failed."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobSpec {
    /// Upper bound on the number of pods running at the same time (a number, or a percentage
    /// of the desired pods). Absent means unbounded (the webhook sets 2147483647).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,

    /// The pod run on each node. Not described in the CRD schema; the webhook validates it.
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub template: PodTemplateSpec,

    /// When the job counts as finished. Defaults to type `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_policy: Option<CompletionPolicy>,

    /// Stop creating new pods (running pods are left alone). Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// What the job does when a pod fails. Defaults to type `FailFast`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
}

/// When a job counts as finished (shared with ImagePullJob and ImageListPullJob).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionPolicy {
    /// `Always` (the job finishes; the default) or `Never` (the job stays active and runs pods
    /// on nodes added later); see [`completion_policy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Seconds after the start time after which an active job is terminated (and fails).
    /// Must be positive. Only for type `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,

    /// Seconds after the job finished (completed or failed) after which it is deleted
    /// automatically; 0 deletes it right away, absent never. Only for type `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// Values of [`CompletionPolicy::type_`].
pub mod completion_policy_type {
    /// The job finishes once the pods on all desired nodes have finished (succeeded or
    /// failed), the active deadline passed or the restart limit was exceeded. The default.
    pub const ALWAYS: &str = "Always";
    /// The job never finishes: pods are started on nodes that join later, too.
    pub const NEVER: &str = "Never";
}

/// What a BroadcastJob does when one of its pods fails.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// `FailFast` (the default), `Continue` or `Pause`; see [`failure_policy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// How many container restarts (summed over the job's pods) are tolerated before the job
    /// is marked failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_limit: Option<i32>,
}

/// Values of [`FailurePolicy::type_`].
pub mod failure_policy_type {
    /// Keep running the remaining pods.
    pub const CONTINUE: &str = "Continue";
    /// Mark the job failed as soon as a pod fails. The default.
    pub const FAIL_FAST: &str = "FailFast";
    /// Pause the job (set `spec.paused`).
    pub const PAUSE: &str = "Pause";
}

/// Observed state of a BroadcastJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobStatus {
    /// Latest observations (`Complete`, `Failed`), one per type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<JobCondition>>,

    /// When the controller first acknowledged the job (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the job finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Number of pods currently running.
    #[serde(default)]
    pub active: i32,

    /// Number of pods that succeeded.
    #[serde(default)]
    pub succeeded: i32,

    /// Number of pods that failed.
    #[serde(default)]
    pub failed: i32,

    /// Number of pods wanted, usually the number of eligible nodes.
    #[serde(default)]
    pub desired: i32,

    /// Phase of the job; one of [`broadcastjob_phase`] (empty before the first reconcile).
    #[serde(default)]
    pub phase: String,
}

/// Values of [`BroadcastJobStatus::phase`].
pub mod broadcastjob_phase {
    /// The job has finished successfully.
    pub const COMPLETED: &str = "completed";
    /// The job is running.
    pub const RUNNING: &str = "running";
    /// The job is paused.
    pub const PAUSED: &str = "paused";
    /// The job has failed.
    pub const FAILED: &str = "failed";
}

/// Values of [`JobCondition::type_`].
pub mod job_condition_type {
    /// All pods on the nodes eligible at the start of the reconcile finished.
    pub const COMPLETE: &str = "Complete";
    /// The active deadline passed or the restart limit was exceeded.
    pub const FAILED: &str = "Failed";
}

/// One condition of a BroadcastJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobCondition {
    /// Condition type, `Complete` or `Failed` (see [`job_condition_type`]).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the condition was last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable details of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1beta1_broadcastjob.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: BroadcastJob = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn absent_fields_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "BroadcastJob",
            "metadata": {"name": "minimal", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        });
        let obj: BroadcastJob = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.completion_policy, None);
        assert_eq!(obj.spec.parallelism, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }
}
