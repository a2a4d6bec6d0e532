//! EphemeralJob (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0): injects a set
//! of ephemeral containers into running pods picked by a label selector (for debugging or
//! one-off tasks) and tracks how those containers finish.

use k8s_openapi::api::core::v1::EphemeralContainer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of an EphemeralJob: which pods to target, how many at a time, and the ephemeral
/// containers to add to each of them.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "EphemeralJob",
    plural = "ephemeraljobs",
    singular = "ephemeraljob",
    shortname = "ejob",
    namespaced,
    status = "EphemeralJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An EphemeralJob adds ephemeral containers to the running pods matched by its selector and reports their outcome.",
    printcolumn(
        name = "STATUS",
        type_ = "string",
        json_path = ".status.phase",
        description = "The status of ephemeral job"
    ),
    printcolumn(
        name = "MATCH",
        type_ = "integer",
        json_path = ".status.match",
        description = "Number of ephemeral container matched by this job"
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of succeed ephemeral containers"
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "Number of failed ephemeral containers"
    ),
    printcolumn(
        name = "RUNNING",
        type_ = "integer",
        json_path = ".status.running",
        description = "Number of running ephemeral containers"
    ),
    printcolumn(
        name = "WAITING",
        type_ = "integer",
        json_path = ".status.waiting",
        description = "Number of waiting ephemeral containers"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobSpec {
    /// Label query choosing the pods that receive the ephemeral containers. Required.
    pub selector: LabelSelector,

    /// How many of the matched pods to target (useful for a gradual rollout). When absent, or
    /// larger than the number of matched pods, every matched pod is targeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// How many pods get the ephemeral containers at a time: a pass injects into at most this
    /// many minus the pods whose containers run. When absent, 1 (OpenKruise's controller
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,

    /// The ephemeral containers to inject into every targeted pod.
    pub template: EphemeralContainerTemplateSpec,

    /// Stops injecting into further pods while true (containers already started keep running).
    /// Absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// Seconds, counted from `status.startTime`, after which a still-active job is terminated and
    /// marked failed. Must be positive. Absent means no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,

    /// Seconds to keep the job after it has finished (succeeded or failed) before it is deleted
    /// automatically; 0 deletes it right away. When absent the controller uses 1800 seconds
    /// (the value is not written back into the spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// The ephemeral containers an EphemeralJob injects.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralContainerTemplateSpec {
    /// Containers added to each targeted pod's `spec.ephemeralContainers` (names must be unique
    /// within the pod). The CRD leaves them undescribed; the validating webhook checks them.
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub ephemeral_containers: Vec<EphemeralContainer>,
}

/// Observed state of an EphemeralJob. The counters refer to the targeted pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobStatus {
    /// Latest observations of the job (see [`ephemeral_job_condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<EphemeralJobCondition>>,

    /// When the controller first picked the job up (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the job finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Overall phase of the job (see [`ephemeral_job_phase`]); empty before the first sync.
    #[serde(default)]
    pub phase: String,

    /// Number of pods currently matched by the selector (after `replicas` is applied).
    #[serde(default, rename = "match")]
    pub matches: i32,

    /// Number of targeted pods whose ephemeral containers are running.
    #[serde(default)]
    pub running: i32,

    /// Number of targeted pods whose ephemeral containers exited successfully.
    #[serde(default)]
    pub succeeded: i32,

    /// Number of targeted pods whose ephemeral containers have not started yet.
    #[serde(default)]
    pub waiting: i32,

    /// Number of targeted pods whose ephemeral containers failed.
    #[serde(default)]
    pub failed: i32,
}

/// Values of [`EphemeralJobStatus::phase`].
pub mod ephemeral_job_phase {
    /// Every targeted ephemeral container completed successfully.
    pub const SUCCEEDED: &str = "Succeeded";
    /// At least one targeted ephemeral container failed.
    pub const FAILED: &str = "Failed";
    /// Containers are waiting to start.
    pub const WAITING: &str = "Waiting";
    /// Containers are running.
    pub const RUNNING: &str = "Running";
    /// The job is paused (`spec.paused`).
    pub const PAUSED: &str = "Paused";
    /// Creating or tracking the containers returned an error.
    pub const ERROR: &str = "Error";
    /// The state could not be determined.
    pub const UNKNOWN: &str = "Unknown";
}

/// One observation about an EphemeralJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobCondition {
    /// Kind of observation (see [`ephemeral_job_condition_type`]).
    #[serde(rename = "type")]
    pub type_: String,

    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: String,

    /// When the condition was last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,

    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,

    /// Short machine-readable cause of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// Human-readable details of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Values of [`EphemeralJobCondition::type_`].
pub mod ephemeral_job_condition_type {
    /// Every targeted ephemeral container completed successfully.
    pub const JOB_SUCCEEDED: &str = "JobSucceeded";
    /// Some targeted ephemeral containers failed.
    pub const JOB_FAILED: &str = "JobFailed";
    /// Some targeted ephemeral containers could not run because of an error.
    pub const JOB_ERROR: &str = "JobError";
    /// The controller has initialized the job.
    pub const INITIALIZED: &str = "Initialized";
    /// The selector matched no pods.
    pub const MATCHED_EMPTY: &str = "MatchedEmpty";
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_ephemeraljob.yaml"
    ));

    #[test]
    fn ephemeraljob_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: EphemeralJob = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(obj.spec.template.ephemeral_containers.len(), 1);
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn ephemeraljob_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "EphemeralJob",
            "metadata": {"name": "ej"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}
            }
        });
        let obj: EphemeralJob = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.replicas, None);
        assert_eq!(obj.spec.paused, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }

    #[test]
    fn ephemeraljob_status_counters_use_openkruise_names() {
        let status = EphemeralJobStatus {
            phase: ephemeral_job_phase::RUNNING.into(),
            matches: 3,
            running: 2,
            waiting: 1,
            ..Default::default()
        };
        let v = serde_json::to_value(&status).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"phase": "Running", "match": 3, "running": 2,
                               "succeeded": 0, "waiting": 1, "failed": 0})
        );
        let back: EphemeralJobStatus = serde_json::from_value(v).unwrap();
        assert_eq!(back, status);
    }
}
