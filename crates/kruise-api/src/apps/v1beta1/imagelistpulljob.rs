//! ImageListPullJob (`apps.kruise.io/v1beta1`, the storage version in OpenKruise v1.9.0; v1alpha1
//! is served too, with the same fields): pre-pull a list of images. The controller creates one
//! [`ImagePullJob`](super::ImagePullJob) per image, all sharing the same
//! [`ImagePullJobTemplate`], and reports their progress.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ImagePullJobTemplate;

/// The desired state of an ImageListPullJob: the images plus the settings every generated
/// ImagePullJob gets.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "ImageListPullJob",
    plural = "imagelistpulljobs",
    singular = "imagelistpulljob",
    namespaced,
    status = "ImageListPullJobStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An ImageListPullJob pulls several images on the selected nodes, one ImagePullJob per image.",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of image pull job"
    ),
    printcolumn(
        name = "SUCCEEDED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of image pull job succeeded"
    ),
    printcolumn(
        name = "COMPLETED",
        type_ = "integer",
        json_path = ".status.completed",
        description = "Number of ImagePullJobs which are finished"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ImageListPullJobSpec {
    /// The image references to pull (OpenKruise accepts 1 to 255 distinct, valid references).
    pub images: Vec<String>,

    /// Node/pod selection, parallelism, retry and completion settings (inlined in JSON), copied
    /// into every generated ImagePullJob.
    #[serde(flatten)]
    pub image_pull_job_template: ImagePullJobTemplate,
}

/// The observed state of an ImageListPullJob, summed over its ImagePullJobs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageListPullJobStatus {
    /// When the controller first picked up the job (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When every ImagePullJob of the list had finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Number of ImagePullJobs wanted, normally the number of images.
    pub desired: i32,

    /// Number of ImagePullJobs that exist and are still running. Always written by
    /// OpenKruise; 0 when absent.
    #[serde(default)]
    pub active: i32,

    /// Number of ImagePullJobs that have finished. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub completed: i32,

    /// Number of finished ImagePullJobs that succeeded on every desired node. Always written by
    /// OpenKruise; 0 when absent.
    #[serde(default)]
    pub succeeded: i32,

    /// One entry per ImagePullJob that has failed on at least one node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_image_statuses: Option<Vec<FailedImageStatus>>,
}

/// An ImagePullJob of the list that failed on at least one node.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedImageStatus {
    /// Name of the ImagePullJob.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_job: Option<String>,

    /// The image it pulls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// The ImagePullJob's status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1beta1_imagelistpulljob.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let job: ImageListPullJob = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(job.spec.images.len() > 1);
        assert_eq!(serde_json::to_value(&job).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "ImageListPullJob",
            "metadata": {"name": "j"},
            "spec": {"images": ["busybox"], "completionPolicy": {}},
            "status": {"desired": 1, "active": 0, "completed": 0, "succeeded": 0,
                       "failedImageStatuses": [{}]}
        });
        let job: ImageListPullJob = serde_json::from_value(raw.clone()).unwrap();
        assert!(job.spec.image_pull_job_template.pull_secrets.is_none());
        assert_eq!(serde_json::to_value(&job).unwrap(), raw);
    }
}
