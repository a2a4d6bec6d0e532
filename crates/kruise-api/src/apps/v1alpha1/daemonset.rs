//! Advanced DaemonSet, `apps.kruise.io/v1alpha1` (served; the storage version is
//! [`crate::apps::v1beta1::DaemonSet`]).
//!
//! Differences from v1beta1: there is no `spec.scaleStrategy` (partitioned scaling is the
//! annotation [`crate::keys::PROGRESSIVE_CREATE_POD`]), `rollingUpdateType` also accepts the
//! deprecated `Surging`, and the revision in the status is called `daemonSetHash`. See
//! [`crate::conversion::daemonset`].

use k8s_openapi::api::apps::v1::DaemonSetCondition;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::Lifecycle;

pub use crate::apps::v1beta1::daemonset::daemonset_update_strategy_type;

/// Values of [`RollingUpdateDaemonSet::type_`] (JSON `rollingUpdateType`) in v1alpha1.
pub mod rolling_update_type {
    pub use crate::apps::v1beta1::daemonset::rolling_update_type::{
        IN_PLACE_IF_POSSIBLE, STANDARD,
    };

    /// Deprecated alias of [`STANDARD`]: the defaults turn it into `Standard` with
    /// `maxSurge: 1` and `maxUnavailable: 0` unless those are set.
    pub const SURGING: &str = "Surging";
}

/// Desired state of an Advanced DaemonSet (v1alpha1 form).
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "DaemonSet",
    plural = "daemonsets",
    singular = "daemonset",
    shortname = "daemon",
    shortname = "ads",
    namespaced,
    status = "DaemonSetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An Advanced DaemonSet in its v1alpha1 form (the storage version is v1beta1).",
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".status.desiredNumberScheduled",
        description = "The desired number of pods."
    ),
    printcolumn(
        name = "CURRENT",
        type_ = "integer",
        json_path = ".status.currentNumberScheduled",
        description = "The current number of pods."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.numberReady",
        description = "The ready number of pods."
    ),
    printcolumn(
        name = "UP-TO-DATE",
        type_ = "integer",
        json_path = ".status.updatedNumberScheduled",
        description = "The updated number of pods."
    ),
    printcolumn(
        name = "AVAILABLE",
        type_ = "integer",
        json_path = ".status.numberAvailable",
        description = "The updated number of pods."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    ),
    printcolumn(
        name = "CONTAINERS",
        type_ = "string",
        priority = 1,
        json_path = ".spec.template.spec.containers[*].name",
        description = "The containers of currently  daemonset."
    ),
    printcolumn(
        name = "IMAGES",
        type_ = "string",
        priority = 1,
        json_path = ".spec.template.spec.containers[*].image",
        description = "The images of currently advanced daemonset."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetSpec {
    /// Label query selecting the pods this DaemonSet owns; it must match the template's
    /// labels and cannot be changed after creation.
    pub selector: LabelSelector,

    /// Pod template; one copy runs on every node that matches its node selector, affinity and
    /// tolerations (every node when it has none). Not validated by the CRD schema.
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub template: PodTemplateSpec,

    /// How pods are moved to a new revision of the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<DaemonSetUpdateStrategy>,

    /// Seconds a new pod must be ready, with no container crashing, before it counts as
    /// available. Absent means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,

    /// Most pods created (or deleted) in one sync, as a count or a percentage of the desired
    /// pods. Absent means 250.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_replicas: Option<IntOrString>,

    /// How many old ControllerRevisions are kept for rollback. Absent means 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,

    /// Lifecycle hooks of the pods; only `preDelete` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
}

/// How the DaemonSet moves its pods to a new template revision.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetUpdateStrategy {
    /// `RollingUpdate` (default) or `OnDelete`, see [`daemonset_update_strategy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Parameters of a `RollingUpdate`; only meaningful for that type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDaemonSet>,
}

/// Parameters of a rolling update of an Advanced DaemonSet (v1alpha1 form).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateDaemonSet {
    /// How a pod is replaced: `Standard` (default), `InPlaceIfPossible` or the deprecated
    /// `Surging`, see [`rolling_update_type`].
    #[serde(
        default,
        rename = "rollingUpdateType",
        skip_serializing_if = "Option::is_none"
    )]
    pub type_: Option<String>,

    /// Upper bound on nodes whose daemon pod may be unavailable during the update, as a count
    /// or a percentage of `status.desiredNumberScheduled` (rounded up). Must not be 0 when
    /// `maxSurge` is 0. Defaults to 1 when neither this nor `maxSurge` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// Upper bound on nodes that may run an extra, updated pod next to the old available one,
    /// as a count or a percentage of `status.desiredNumberScheduled` (rounded up, at least 1).
    /// Must be 0 when `maxUnavailable` is not 0. Defaults to 0 when neither is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,

    /// Label query over **nodes**: only pods on matching nodes are updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Number (or percentage of `status.desiredNumberScheduled`) of pods kept at the old
    /// revision. Absent means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,

    /// Stops the rollout while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
}

/// Observed state of an Advanced DaemonSet (v1alpha1 form).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetStatus {
    /// Nodes that should run the daemon pod and run at least one.
    pub current_number_scheduled: i32,

    /// Nodes that run the daemon pod but should not.
    pub number_misscheduled: i32,

    /// Nodes that should run the daemon pod (whether or not they do).
    pub desired_number_scheduled: i32,

    /// Nodes that should run the daemon pod and have at least one ready.
    pub number_ready: i32,

    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Nodes running a pod of the latest revision.
    pub updated_number_scheduled: i32,

    /// Nodes that should run the daemon pod and have one that has been ready for at least
    /// `minReadySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_available: Option<i32>,

    /// Nodes that should run the daemon pod and have none available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_unavailable: Option<i32>,

    /// Counter mixed into the revision hash to avoid name collisions between
    /// ControllerRevisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,

    /// Latest observations of the DaemonSet's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::conditions_requiring_status_and_type::<DaemonSetCondition>"
    )]
    pub conditions: Option<Vec<DaemonSetCondition>>,

    /// Hash (`controller-revision-hash`) of the latest revision (`updateRevision` in v1beta1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_set_hash: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use serde_json::json;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_daemonset.yaml"
    ));

    #[test]
    fn daemonset_v1alpha1_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let ds: DaemonSet = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(serde_json::to_value(&ds).unwrap(), raw);
        assert_eq!(raw["apiVersion"], "apps.kruise.io/v1alpha1");
    }

    #[test]
    fn daemonset_v1alpha1_absent_fields_stay_absent() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "DaemonSet",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}},
                "updateStrategy": {},
            },
            "status": {"currentNumberScheduled": 1, "numberMisscheduled": 0,
                       "desiredNumberScheduled": 1, "numberReady": 1, "updatedNumberScheduled": 1,
                       "daemonSetHash": "5d8f7c9b6"},
        });
        let ds: DaemonSet = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(ds.spec.burst_replicas, None);
        assert_eq!(
            ds.status.as_ref().unwrap().daemon_set_hash.as_deref(),
            Some("5d8f7c9b6")
        );
        assert_eq!(serde_json::to_value(&ds).unwrap(), v);
    }

    #[test]
    fn daemonset_v1alpha1_identity() {
        assert_eq!(DaemonSet::version(&()), "v1alpha1");
        assert_eq!(DaemonSet::plural(&()), "daemonsets");
    }
}
