//! AdvancedCronJob (`apps.kruise.io/v1alpha1`, served next to the storage version v1beta1): a
//! cron schedule that creates a Job or a BroadcastJob from a template at every run.
//!
//! Difference to v1beta1 (see [`crate::conversion::advancedcronjob`]): v1beta1 can also create
//! ImageListPullJobs (`spec.template.imageListPullJobTemplate`).

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::BroadcastJobSpec;

/// Kind name of AdvancedCronJob (used in owner references of the jobs it creates).
pub const ADVANCED_CRON_JOB_KIND: &str = "AdvancedCronJob";

/// Desired state of an AdvancedCronJob.
// kube-derive's repeated `printcolumn(...)` arguments trip this lint.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "AdvancedCronJob",
    plural = "advancedcronjobs",
    singular = "advancedcronjob",
    shortname = "acj",
    namespaced,
    status = "AdvancedCronJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "Creates a Job or BroadcastJob on a cron schedule (v1alpha1).",
    printcolumn(
        name = "Schedule",
        type_ = "string",
        json_path = ".spec.schedule",
        description = "The schedule of advanced cron job."
    ),
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".status.type",
        description = "Type of cron job."
    ),
    printcolumn(
        name = "LastScheduleTime",
        type_ = "date",
        json_path = ".status.lastScheduleTime",
        description = "The last time at which job was scheduled."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AdvancedCronJobSpec {
    /// When to run, in cron syntax (five fields, e.g. `*/5 * * * *`; see
    /// <https://en.wikipedia.org/wiki/Cron>).
    #[schemars(extend("minLength" = 0))]
    pub schedule: String,

    /// IANA time zone of the schedule (e.g. `Europe/Berlin`). Absent: the time zone of the
    /// kruise-controller-manager process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,

    /// How many seconds after its scheduled time a run may still start; a run missed by more
    /// counts as failed. Absent: no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,

    /// What to do when a run is due while the previous one is still active: `Allow` (the
    /// default), `Forbid` or `Replace` (see [`concurrency_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Allow", "Forbid", "Replace"]))]
    pub concurrency_policy: Option<String>,

    /// Stop scheduling new runs (active ones continue). Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// How many successfully finished jobs are kept. Defaults to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,

    /// How many failed jobs are kept. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,

    /// The job created at every run (exactly one of the templates is set).
    pub template: CronJobTemplate,
}

/// The job template of an AdvancedCronJob; exactly one member is set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobTemplate {
    /// Create a `batch/v1` Job. Not described in the CRD schema; the webhook validates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub job_template: Option<JobTemplateSpec>,

    /// Create a BroadcastJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_job_template: Option<BroadcastJobTemplateSpec>,
}

/// Values of [`AdvancedCronJobStatus::type_`]: the kind of job an AdvancedCronJob creates.
pub mod template_kind {
    /// A `batch/v1` Job.
    pub const JOB: &str = "Job";
    /// A BroadcastJob.
    pub const BROADCAST_JOB: &str = "BroadcastJob";
}

/// Template of the BroadcastJobs created by an AdvancedCronJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobTemplateSpec {
    /// Labels and annotations (and other metadata) given to every created BroadcastJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "embedded_object_meta")]
    pub metadata: Option<ObjectMeta>,

    /// Spec of every created BroadcastJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<BroadcastJobSpec>,
}

/// Schema of an `ObjectMeta` embedded below the root: controller-gen writes a bare
/// `type: object` (no properties) for it.
pub(crate) fn embedded_object_meta(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
    })
}

/// Values of [`AdvancedCronJobSpec::concurrency_policy`].
pub mod concurrency_policy {
    /// Runs may overlap (the default).
    pub const ALLOW: &str = "Allow";
    /// Skip a run while the previous one is still active.
    pub const FORBID: &str = "Forbid";
    /// Delete the active run and start the new one.
    pub const REPLACE: &str = "Replace";
}

/// Observed state of an AdvancedCronJob.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvancedCronJobStatus {
    /// Kind of job created from the template (see [`template_kind`]).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// References to the jobs that are currently running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Vec<ObjectReference>>,

    /// When a job was last scheduled successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_advancedcronjob.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: AdvancedCronJob = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(obj.spec.template.broadcast_job_template.is_some());
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn absent_fields_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "AdvancedCronJob",
            "metadata": {"name": "minimal", "namespace": "default"},
            "spec": {
                "schedule": "*/1 * * * *",
                "template": {"jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "Never",
                }}}}},
            },
        });
        let obj: AdvancedCronJob = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.paused, None);
        assert_eq!(obj.spec.concurrency_policy, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }
}
