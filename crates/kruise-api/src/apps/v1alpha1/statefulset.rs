//! Advanced StatefulSet, `apps.kruise.io/v1alpha1` (served; the storage version is
//! [`crate::apps::v1beta1::StatefulSet`]).
//!
//! v1alpha1 is the older, smaller form: it has the upstream StatefulSet fields plus Kruise's
//! rolling-update extensions (in-place update, `maxUnavailable`, unordered update, paused,
//! `minReadySeconds`), but none of reserveOrdinals, lifecycle, scaleStrategy, PVC retention,
//! ordinals, volumeClaimUpdateStrategy, nor the newer status fields. See
//! [`crate::conversion::statefulset`] for how those travel through this version.

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::{InPlaceUpdateStrategy, UpdatePriorityStrategy};

pub use crate::apps::v1beta1::statefulset::{
    MAX_MIN_READY_SECONDS, pod_management_policy_type, pod_update_strategy_type,
    statefulset_condition_type, statefulset_update_strategy_type,
};

/// Desired state of an Advanced StatefulSet (v1alpha1 form).
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "StatefulSet",
    plural = "statefulsets",
    singular = "statefulset",
    shortname = "sts",
    shortname = "asts",
    namespaced,
    status = "StatefulSetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An Advanced StatefulSet in its v1alpha1 form (the storage version is v1beta1).",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.labelSelector"
    ),
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "The desired number of pods."
    ),
    printcolumn(
        name = "CURRENT",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "The number of currently all pods."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedReplicas",
        description = "The number of pods updated."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "The number of pods ready."
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
        description = "The containers of currently advanced statefulset."
    ),
    printcolumn(
        name = "IMAGES",
        type_ = "string",
        priority = 1,
        json_path = ".spec.template.spec.containers[*].image",
        description = "The images of currently advanced statefulset."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetSpec {
    /// Number of pods to run. Absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Label query selecting the pods this StatefulSet owns; it must match the template's
    /// labels and cannot be changed after creation.
    pub selector: LabelSelector,

    /// Pod template. Every pod is stamped from it and gets its own stable name
    /// (`<statefulset>-<ordinal>`). Not validated by the CRD schema (the webhook validates it).
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub template: PodTemplateSpec,

    /// Claim templates: each pod gets one PVC per template, named
    /// `<claim>-<statefulset>-<ordinal>`, which must be mounted (by name) by some container
    /// and takes precedence over a template volume of the same name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub volume_claim_templates: Option<Vec<PersistentVolumeClaim>>,

    /// Name of the headless Service that gives the pods their network identity. It must exist
    /// before the StatefulSet and cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,

    /// `OrderedReady` (default; one pod at a time in ordinal order, waiting for readiness) or
    /// `Parallel` (all at once), see [`pod_management_policy_type`]. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_management_policy: Option<String>,

    /// How pods are moved to a new revision of the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<StatefulSetUpdateStrategy>,

    /// How many old ControllerRevisions are kept. Absent means 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
}

/// How the StatefulSet moves its pods to a new template revision.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetUpdateStrategy {
    /// `RollingUpdate` (default) or `OnDelete`, see [`statefulset_update_strategy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Parameters of a `RollingUpdate`; ignored for other types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateStatefulSetStrategy>,
}

/// Parameters of a rolling update (v1alpha1 form; the same fields as in v1beta1).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateStatefulSetStrategy {
    /// Pods with an ordinal at or above this value are updated; with `unorderedUpdate`, it is
    /// the number of pods left at the old revision. Absent means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,

    /// Upper bound on pods that may be unavailable during the update, as a count or a
    /// percentage of `replicas` (rounded down). Values other than 1 need the `Parallel` pod
    /// management policy. Absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// How a single pod is updated: `ReCreate` (default), `InPlaceIfPossible` or
    /// `InPlaceOnly`, see [`pod_update_strategy_type`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_update_policy: Option<String>,

    /// Stops the rollout while true. Absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// When present, pods are updated in priority order instead of by descending ordinal
    /// (only with the `Parallel` pod management policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unordered_update: Option<UnorderedUpdateStrategy>,

    /// Settings of in-place updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,

    /// Seconds an updated pod must be ready before it counts as available and the rollout
    /// proceeds. Absent means 0; at most [`MAX_MIN_READY_SECONDS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
}

/// Ordering of an update that does not follow the ordinals.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnorderedUpdateStrategy {
    /// Rules that rank the pods to update (by label order or weighted label selectors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
}

/// Observed state of an Advanced StatefulSet (v1alpha1 form).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetStatus {
    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Number of pods the controller has created (and not yet removed).
    pub replicas: i32,

    /// Number of those pods whose Ready condition is true.
    pub ready_replicas: i32,

    /// Number of those pods that have been ready for at least `minReadySeconds`.
    pub available_replicas: i32,

    /// Number of pods at `currentRevision`.
    pub current_replicas: i32,

    /// Number of pods at `updateRevision`.
    pub updated_replicas: i32,

    /// Revision (ControllerRevision name) of the pods that are not yet updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,

    /// Revision (ControllerRevision name) generated from the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_revision: Option<String>,

    /// Counter mixed into the revision hash to avoid name collisions between
    /// ControllerRevisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,

    /// Latest observations of the StatefulSet's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::conditions_requiring_status_and_type::<StatefulSetCondition>"
    )]
    pub conditions: Option<Vec<StatefulSetCondition>>,

    /// Serialized `spec.selector`, used by the scale subresource (HPA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use serde_json::json;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_statefulset.yaml"
    ));

    #[test]
    fn statefulset_v1alpha1_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let sts: StatefulSet = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(serde_json::to_value(&sts).unwrap(), raw);
        assert_eq!(raw["apiVersion"], "apps.kruise.io/v1alpha1");
        assert!(sts.spec.update_strategy.is_some());
    }

    #[test]
    fn statefulset_v1alpha1_absent_fields_stay_absent() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "StatefulSet",
            "metadata": {"name": "s"},
            "spec": {
                "selector": {"matchLabels": {"app": "s"}},
                "template": {"metadata": {"labels": {"app": "s"}}},
                "updateStrategy": {"rollingUpdate": {"unorderedUpdate": {}}},
            },
            "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                       "currentReplicas": 1, "updatedReplicas": 1},
        });
        let sts: StatefulSet = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(sts.spec.service_name, None);
        assert_eq!(sts.status.as_ref().unwrap().observed_generation, None);
        assert_eq!(serde_json::to_value(&sts).unwrap(), v);
    }

    #[test]
    fn statefulset_v1alpha1_identity() {
        assert_eq!(StatefulSet::version(&()), "v1alpha1");
        assert_eq!(StatefulSet::kind(&()), "StatefulSet");
    }
}
