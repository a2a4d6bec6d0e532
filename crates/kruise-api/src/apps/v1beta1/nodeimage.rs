//! NodeImage (`apps.kruise.io/v1beta1`, the storage version in OpenKruise v1.9.0; v1alpha1 is
//! served too): the images one node should hold, and how pulling them went.
//!
//! The only difference from v1alpha1 is [`ReferenceObject::mode`].
//!
//! Cluster-scoped; there is one NodeImage per node, named after the node. Controllers (mostly
//! the ImagePullJob controller) add image tags to the spec; the kruise-daemon on that node pulls
//! them and writes the per-tag results into the status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SandboxConfig;

/// The desired state of a NodeImage: the images to have on the node.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "NodeImage",
    plural = "nodeimages",
    singular = "nodeimage",
    status = "NodeImageStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A NodeImage lists the images kruise-daemon should pull on the node of the same name, with their pull results.",
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of all images on this node"
    ),
    printcolumn(
        name = "PULLING",
        type_ = "integer",
        json_path = ".status.pulling",
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
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageSpec {
    /// Images to pull on this node, keyed by repository (image name without tag). OpenKruise
    /// allows at most 256 entries per NodeImage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<BTreeMap<String, ImageSpec>>,
}

/// What to pull for one repository.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageSpec {
    /// Secrets (namespace and name) with the registry credentials the daemon's puller uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secrets: Option<Vec<ReferenceObject>>,

    /// The tags (versions) of the repository to pull.
    pub tags: Vec<ImageTagSpec>,

    /// Labels and annotations passed as the pod sandbox config of the CRI `PullImage` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
}

/// Values of [`ReferenceObject::mode`].
pub mod reference_object_mode {
    /// The secret is a shared copy in `kruise-daemon-config` (one per source secret, not one per
    /// ImagePullJob) and is removed together with the image entry.
    pub const BATCH: &str = "batch";
}

/// A reference to a namespaced object, written `<namespace>/<name>` in text form (see the
/// [`Display`](std::fmt::Display) impl and [`ReferenceObject::parse`]).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ReferenceObject {
    /// Namespace of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How the referenced pull secret is managed. Unset: the legacy scheme, in which every
    /// ImagePullJob got its own secret copy (such entries are cleaned up separately);
    /// `batch` ([`reference_object_mode::BATCH`]): the shared-copy scheme, in which one copy
    /// serves all jobs using the same source secret and goes away with the image entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

impl ReferenceObject {
    /// Parses `<namespace>/<name>` or `<name>` (anything after a second `/` is ignored, as in
    /// OpenKruise). An empty string gives an empty reference.
    pub fn parse(s: &str) -> Self {
        if s.is_empty() {
            return Self::default();
        }
        let mut parts = s.split('/');
        let first = parts.next().unwrap_or_default().to_string();
        match parts.next() {
            None => Self {
                name: Some(first),
                ..Self::default()
            },
            Some(name) => Self {
                namespace: Some(first),
                name: Some(name.to_string()),
                mode: None,
            },
        }
    }
}

impl std::fmt::Display for ReferenceObject {
    /// `<namespace>/<name>`, or just `<name>` when the namespace is empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.name.as_deref().unwrap_or_default();
        match self.namespace.as_deref() {
            None | Some("") => f.write_str(name),
            Some(ns) => write!(f, "{ns}/{name}"),
        }
    }
}

/// One tag of a repository to pull.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagSpec {
    /// The tag (or digest) to pull.
    pub tag: String,

    /// When the tag was added; the mutating webhook fills in the admission time if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,

    /// Timeout, retries, deadline and TTL of this tag's pull task. The webhook defaults the
    /// timeout to 600 seconds and the retries to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<ImageTagPullPolicy>,

    /// The objects (normally ImagePullJobs) that asked for this tag. The tag is dropped once
    /// none of them exists any more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<ObjectReference>>,

    /// Opaque counter, bumped by the writer whenever the tag's request changes; the daemon
    /// echoes the version it handled in the status so that stale results can be told apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,

    /// `Always` or `IfNotPresent` (see [`super::image_pull_policy`]); `IfNotPresent` when
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
}

/// Limits of the pull task of one tag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagPullPolicy {
    /// Seconds one pull attempt may take. Defaults to 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,

    /// Number of retries before the task is marked failed. Defaults to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,

    /// Seconds after the task finished (succeeded or failed) before the tag may be removed; 0
    /// removes it right away, unset keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,

    /// Seconds since the task started after which it is given up (a positive number); unset
    /// means no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
}

/// The observed state of a NodeImage, written by kruise-daemon (per tag) and the NodeImage
/// controller (counts).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageStatus {
    /// Number of pull tasks wanted, normally the number of tags in the spec.
    pub desired: i32,

    /// Number of tasks that succeeded. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub succeeded: i32,

    /// Number of tasks that failed. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub failed: i32,

    /// Number of tasks still pulling. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub pulling: i32,

    /// Number of tasks not yet started. Always written by OpenKruise; 0 when absent.
    #[serde(default)]
    pub waiting: i32,

    /// Status of the active pull tasks, keyed by repository like the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_statuses: Option<BTreeMap<String, ImageStatus>>,

    /// Outcome of the first time every task on the node had finished, e.g. to tell when a newly
    /// added node has its images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sync_status: Option<SyncStatus>,
}

/// Pull status of one repository.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ImageStatus {
    /// One entry per tag task on this node.
    pub tags: Vec<ImageTagStatus>,
}

/// Values of [`ImageTagStatus::phase`].
pub mod image_pull_phase {
    /// The task has not started yet.
    pub const WAITING: &str = "Waiting";
    /// The task is running.
    pub const PULLING: &str = "Pulling";
    /// The image was pulled.
    pub const SUCCEEDED: &str = "Succeeded";
    /// The pull failed (retries exhausted, deadline exceeded, ...).
    pub const FAILED: &str = "Failed";
}

/// Pull status of one tag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagStatus {
    /// The tag.
    pub tag: String,

    /// Phase of the task (see [`image_pull_phase`]).
    pub phase: String,

    /// Progress of the pull in percent (0–100). It may go backwards when a pull is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<i32>,

    /// When the puller accepted the task (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the task finished (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// The spec `version` of the tag this status belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,

    /// ID of the pulled image.
    #[serde(default, rename = "imageID", skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,

    /// Human-readable details, e.g. the pull error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Values of [`SyncStatus::status`].
pub mod sync_status_phase {
    /// Every task on the node succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
    /// Some task on the node failed.
    pub const FAILED: &str = "Failed";
}

/// Summary of all pull tasks of a node at one point in time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// When the summary was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_at: Option<Time>,
    /// `Succeeded` or `Failed` (see [`sync_status_phase`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1beta1_nodeimage.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let ni: NodeImage = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(ni.metadata.namespace.is_none());
        assert!(!ni.spec.images.as_ref().unwrap().is_empty());
        assert_eq!(serde_json::to_value(&ni).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "NodeImage",
            "metadata": {"name": "node-1"},
            "spec": {"images": {"nginx": {"tags": [{"tag": "1.25"}]}}},
            "status": {"desired": 1, "succeeded": 0, "failed": 0, "pulling": 1, "waiting": 0,
                       "imageStatuses": {"nginx": {"tags": [{"tag": "1.25", "phase": "Pulling"}]}}}
        });
        let ni: NodeImage = serde_json::from_value(raw.clone()).unwrap();
        let tag = &ni.spec.images.as_ref().unwrap()["nginx"].tags[0];
        assert!(tag.created_at.is_none() && tag.pull_policy.is_none() && tag.version.is_none());
        assert_eq!(serde_json::to_value(&ni).unwrap(), raw);
    }

    #[test]
    fn reference_object_text_form() {
        let r = ReferenceObject::parse("kruise-daemon-config/abc");
        assert_eq!(r.namespace.as_deref(), Some("kruise-daemon-config"));
        assert_eq!(r.name.as_deref(), Some("abc"));
        assert_eq!(r.to_string(), "kruise-daemon-config/abc");
        let r = ReferenceObject::parse("abc");
        assert_eq!(
            (r.namespace.as_deref(), r.name.as_deref()),
            (None, Some("abc"))
        );
        assert_eq!(r.to_string(), "abc");
        assert_eq!(ReferenceObject::parse(""), ReferenceObject::default());
    }
}
