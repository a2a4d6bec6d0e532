//! Advanced StatefulSet (`apps.kruise.io/v1beta1`, the storage version; `v1alpha1` is also
//! served): the upstream StatefulSet extended with in-place update, parallel updates and scaling
//! limited by `maxUnavailable`, priority-ordered (unordered) updates, reserved ordinals, a start
//! ordinal, lifecycle hooks, PVC retention and in-place PVC expansion.
//!
//! [`StatefulSetSpec`] is also embedded by UnitedDeployment's `advancedStatefulSetTemplate`.

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::{InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy};

/// Largest value accepted for `updateStrategy.rollingUpdate.minReadySeconds`, in seconds.
pub const MAX_MIN_READY_SECONDS: i32 = 300;

/// Values of [`StatefulSetUpdateStrategy::type_`] (upstream `apps/v1` strategy types).
pub mod statefulset_update_strategy_type {
    /// Pods are replaced in a controlled rollout (the default).
    pub const ROLLING_UPDATE: &str = "RollingUpdate";
    /// Pods get the new revision only when someone deletes them.
    pub const ON_DELETE: &str = "OnDelete";
}

/// Values of [`StatefulSetSpec::pod_management_policy`] (upstream `apps/v1` policies).
pub mod pod_management_policy_type {
    /// Pods are created one by one in ordinal order, each waiting for the previous one to be
    /// ready, and removed in reverse order (the default).
    pub const ORDERED_READY: &str = "OrderedReady";
    /// Pods are created and removed all at once, without waiting for each other.
    pub const PARALLEL: &str = "Parallel";
}

/// Values of [`RollingUpdateStatefulSetStrategy::pod_update_policy`].
pub mod pod_update_strategy_type {
    /// Pods are always deleted and created again at the new revision (the default).
    pub const RECREATE: &str = "ReCreate";
    /// Pods are updated in place when only in-place-updatable fields changed (images, and
    /// env or resources where enabled); any other change recreates them.
    pub const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
    /// Pods are always updated in place; template changes that cannot be applied in place are
    /// rejected.
    pub const IN_PLACE_ONLY: &str = "InPlaceOnly";
}

/// Values of [`VolumeClaimUpdateStrategy::type_`].
pub mod volume_claim_update_strategy_type {
    /// PVCs are brought to the new template (expanded in place) while their pods are rolled.
    pub const ON_POD_ROLLING_UPDATE: &str = "OnPodRollingUpdate";
    /// A changed claim template only applies once the user deletes the PVC.
    pub const ON_DELETE: &str = "OnDelete";
}

/// Values of [`StatefulSetPersistentVolumeClaimRetentionPolicy`]'s fields.
pub mod persistent_volume_claim_retention_policy_type {
    /// The PVCs are kept (the default).
    pub const RETAIN: &str = "Retain";
    /// The PVCs are deleted.
    pub const DELETE: &str = "Delete";
}

/// Condition types Kruise adds to the upstream StatefulSet condition types in
/// [`StatefulSetStatus::conditions`].
pub mod statefulset_condition_type {
    /// The controller could not create a pod.
    pub const FAILED_CREATE_POD: &str = "FailedCreatePod";
    /// The controller could not update a pod.
    pub const FAILED_UPDATE_POD: &str = "FailedUpdatePod";
}

/// Desired state of an Advanced StatefulSet.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "StatefulSet",
    plural = "statefulsets",
    singular = "statefulset",
    shortname = "sts",
    shortname = "asts",
    namespaced,
    status = "StatefulSetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "An Advanced StatefulSet: pods with stable identities and storage, updated in place or by recreation.",
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
    /// Number of pods to run (not counting reserved ordinals). Absent means 1.
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

    /// How changes to `volumeClaimTemplates` reach existing PVCs. Only honoured with the
    /// `StatefulSetAutoResizePVCGate` feature gate, which then defaults it to `OnDelete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_claim_update_strategy: Option<VolumeClaimUpdateStrategy>,

    /// Name of the headless Service that gives the pods their network identity
    /// (`<pod>.<serviceName>.<namespace>.svc...`). It must exist before the StatefulSet and
    /// cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,

    /// How pods are created and removed when scaling or replacing them: `OrderedReady`
    /// (default; one at a time in ordinal order, waiting for readiness, removal in reverse) or
    /// `Parallel` (all at once). See [`pod_management_policy_type`]. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_management_policy: Option<String>,

    /// How pods are moved to a new revision of the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<StatefulSetUpdateStrategy>,

    /// How many old ControllerRevisions (revisions not used by any current pod) are kept.
    /// Absent means 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,

    /// Ordinals that must not be used; the controller runs `replicas` pods on the remaining
    /// ordinals. Entries are numbers or ranges such as `"3-5"` (meaning 3, 4 and 5). Reserving
    /// the ordinal of a running pod deletes it (and, with unchanged replicas, creates a pod at
    /// the next free ordinal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_ordinals: Option<Vec<IntOrString>>,

    /// Lifecycle hooks of the pods: `preDelete`, `inPlaceUpdate` and `preNormal` are honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,

    /// How pods are created and deleted when scaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<StatefulSetScaleStrategy>,

    /// Whether PVCs created from `volumeClaimTemplates` are deleted when the StatefulSet is
    /// deleted or scaled down (feature gate `StatefulSetAutoDeletePVC`, which defaults both
    /// to `Retain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim_retention_policy:
        Option<StatefulSetPersistentVolumeClaimRetentionPolicy>,

    /// Numbering of the pods: where the ordinals start (feature gate `StatefulSetStartOrdinal`).
    /// Absent means ordinals start at 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals: Option<StatefulSetOrdinals>,
}

/// How changes to the claim templates are applied to the PVCs of existing pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeClaimUpdateStrategy {
    /// `OnPodRollingUpdate` or `OnDelete`, see [`volume_claim_update_strategy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
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

/// Parameters of a rolling update of an Advanced StatefulSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateStatefulSetStrategy {
    /// How many pods stay at the old revision: the controller updates `replicas - partition`
    /// pods. Absent means 0 (update all).
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

    /// Seconds an updated (or, under `OrderedReady`, a newly created) pod must be ready before
    /// it counts as available and the rollout proceeds. Absent means 0; at most
    /// [`MAX_MIN_READY_SECONDS`].
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

/// What happens to the PVCs of the claim templates when the StatefulSet is deleted or shrinks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetPersistentVolumeClaimRetentionPolicy {
    /// On deletion of the StatefulSet: `Retain` (default, PVCs are left alone) or `Delete`, see
    /// [`persistent_volume_claim_retention_policy_type`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_deleted: Option<String>,

    /// On scale-down: `Retain` (default) or `Delete` (the PVCs of the removed pods are deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_scaled: Option<String>,
}

/// Numbering of the pods of a StatefulSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetOrdinals {
    /// Ordinal of the first pod; pods use `[start, start + replicas)` minus the reserved
    /// ordinals. Absent means 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<i32>,
}

/// How pods are added and removed when the StatefulSet scales.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetScaleStrategy {
    /// Upper bound on pods that may be unavailable while scaling, as a count or a percentage of
    /// `replicas` (rounded down). Values other than 1 need the `Parallel` pod management
    /// policy. Absent means no limit beyond the pod management policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// Observed state of an Advanced StatefulSet.
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

    /// Number of pods at `updateRevision` whose Ready condition is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_ready_replicas: Option<i32>,

    /// Number of pods at `updateRevision` that have been ready for at least `minReadySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_available_replicas: Option<i32>,

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

    /// Latest observations of the StatefulSet's state (upstream condition types plus those in
    /// [`statefulset_condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        schema_with = "crate::schema::conditions_requiring_status_and_type::<StatefulSetCondition>"
    )]
    pub conditions: Option<Vec<StatefulSetCondition>>,

    /// Serialized `spec.selector`, used by the scale subresource (HPA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,

    /// Per claim template: how many pods have PVCs matching the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_claims: Option<Vec<VolumeClaimStatus>>,
}

/// How far the PVCs of one claim template have caught up with the template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeClaimStatus {
    /// Name of the claim template.
    pub volume_claim_name: String,

    /// Pods whose PVC requests at least the storage the template requests.
    pub compatible_replicas: i32,

    /// Of those, pods whose PVC capacity has also reached the requested storage.
    pub compatible_ready_replicas: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;
    use serde_json::json;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1beta1_statefulset.yaml"
    ));

    #[test]
    fn statefulset_v1beta1_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let sts: StatefulSet = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(serde_json::to_value(&sts).unwrap(), raw);
        let spec = &sts.spec;
        assert!(spec.reserve_ordinals.is_some());
        assert!(spec.lifecycle.is_some());
        assert!(spec.persistent_volume_claim_retention_policy.is_some());
        assert_eq!(raw["apiVersion"], "apps.kruise.io/v1beta1");
    }

    #[test]
    fn statefulset_v1beta1_absent_fields_stay_absent() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet",
            "metadata": {"name": "s"},
            "spec": {
                "selector": {"matchLabels": {"app": "s"}},
                "template": {"metadata": {"labels": {"app": "s"}}},
                "updateStrategy": {"rollingUpdate": {}},
                "ordinals": {},
            },
            "status": {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                       "currentReplicas": 0, "updatedReplicas": 0},
        });
        let sts: StatefulSet = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(sts.spec.replicas, None);
        assert_eq!(sts.spec.ordinals, Some(StatefulSetOrdinals { start: None }));
        assert_eq!(serde_json::to_value(&sts).unwrap(), v);
    }

    #[test]
    fn statefulset_v1beta1_explicit_zero_values_are_kept() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet",
            "metadata": {"name": "s"},
            "spec": {
                "replicas": 0,
                "selector": {},
                "template": {},
                "updateStrategy": {"rollingUpdate": {"partition": 0, "paused": false, "maxUnavailable": "0%"}},
                "reserveOrdinals": [1, "3-5"],
                "ordinals": {"start": 0},
            },
        });
        let sts: StatefulSet = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            sts.spec.reserve_ordinals,
            Some(vec![IntOrString::Int(1), IntOrString::String("3-5".into())])
        );
        assert_eq!(serde_json::to_value(&sts).unwrap(), v);
    }

    #[test]
    fn statefulset_v1beta1_identity() {
        assert_eq!(StatefulSet::group(&()), "apps.kruise.io");
        assert_eq!(StatefulSet::version(&()), "v1beta1");
        assert_eq!(StatefulSet::plural(&()), "statefulsets");
    }
}
