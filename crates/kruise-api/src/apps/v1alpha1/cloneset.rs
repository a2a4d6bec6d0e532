//! The `CloneSet` custom resource in `apps.kruise.io/v1alpha1`, the single version OpenKruise
//! v1.9.0 serves for this kind. A CloneSet keeps a number of interchangeable pods built from one
//! template. Compared with a Deployment it can update pods in place, stop a rollout at a
//! partition, surge above the desired count, delete chosen pods on scale-in, and give every pod
//! its own PVCs from `volumeClaimTemplates`.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::{
    InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy, UpdateScatterStrategy,
};

/// What the user asks of a CloneSet: how many pods, built from which template, and the rules for
/// scaling and rolling out template changes.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "CloneSet",
    plural = "clonesets",
    singular = "cloneset",
    shortname = "clone",
    namespaced,
    status = "CloneSetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A CloneSet object: a namespaced group of identical pods, managed by kruise-manager",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.labelSelector"
    ),
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "Pods requested by spec.replicas."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedReplicas",
        description = "Pods at the update revision."
    ),
    printcolumn(
        name = "UPDATED_READY",
        type_ = "integer",
        json_path = ".status.updatedReadyReplicas",
        description = "Ready pods at the update revision."
    ),
    printcolumn(
        name = "UPDATED_AVAILABLE",
        type_ = "integer",
        json_path = ".status.updatedAvailableReplicas",
        description = "Available pods at the update revision."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Ready pods, any revision."
    ),
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "All pods the CloneSet currently owns."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since the CloneSet was created (creationTimestamp, set by the API server)."
    ),
    printcolumn(
        name = "CONTAINERS",
        type_ = "string",
        priority = 1,
        json_path = ".spec.template.spec.containers[*].name",
        description = "Container names in the pod template."
    ),
    printcolumn(
        name = "IMAGES",
        type_ = "string",
        priority = 1,
        json_path = ".spec.template.spec.containers[*].image",
        description = "Container images in the pod template."
    ),
    printcolumn(
        name = "SELECTOR",
        type_ = "string",
        priority = 1,
        json_path = ".status.labelSelector",
        description = "Pod label selector, as a string."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetSpec {
    /// How many pods the CloneSet should run, all stamped from `template`. The mutating webhook
    /// fills in 1 when the field is left out. This is also the value the scale subresource reads
    /// and writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Label query that decides which pods belong to the CloneSet and are counted against
    /// `replicas`. The webhook rejects an empty selector and one that does not match
    /// `template.metadata.labels`, and the field cannot be changed after creation. Syntax:
    /// <https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors>
    pub selector: LabelSelector,

    /// Pod template for every pod the controller creates. `restartPolicy` may only be `Always`
    /// and `activeDeadlineSeconds` must not be set. Any change produces a new revision, which is
    /// rolled out according to `updateStrategy`.
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub template: PodTemplateSpec,

    /// PVC templates giving each pod its own claims. For every template, each pod gets one PVC
    /// named `<template name>-<cloneset name>-<instance id>`, owned by the CloneSet and labelled
    /// with the pod's instance id, and a volume named after the template that mounts it. When
    /// the controller deletes a pod it deletes that pod's PVCs too; see
    /// `scaleStrategy.disablePVCReuse` for PVCs whose pod went away by other means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub volume_claim_templates: Option<Vec<PersistentVolumeClaim>>,

    /// Rules for creating and removing pods when the CloneSet scales out or in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<CloneSetScaleStrategy>,

    /// Rules for moving existing pods to a new revision after `template` changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<CloneSetUpdateStrategy>,

    /// Upper bound on the number of ControllerRevisions kept for this CloneSet; older ones are
    /// pruned. The current and update revisions, and any revision a pod still runs, are never
    /// pruned. Defaults to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,

    /// Seconds a pod has to stay Ready, with no container crashing, before the controller
    /// counts it as available. With the default of 0 a pod is available as soon as it is Ready.
    /// The controller requeues the CloneSet after this delay to recount availability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,

    /// Hooks that hold pods at three points: after creation before they become Normal
    /// (`preNormal`), before deletion (`preDelete`), and around an in-place update
    /// (`inPlaceUpdate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,

    /// Seconds the CloneSet may take to become available, or to stop at its partition, before
    /// the rollout counts as stuck. The controller then sets the `Progressing` condition to False
    /// with reason `ProgressDeadlineExceeded`. Time spent paused does not count towards the
    /// deadline. Must be greater than `minReadySeconds`. Optional: if it is unset, the controller
    /// does not track progress and does not write the condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

/// How the CloneSet adds and removes pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetScaleStrategy {
    /// Names of particular pods to remove. The controller deletes them, within the
    /// `updateStrategy.maxUnavailable` budget and after any preDelete hook, and creates
    /// replacements so the count stays at `replicas`. Names of pods that no
    /// longer exist are dropped from the list. The webhook rejects duplicates, and each newly
    /// added name must be an existing pod of this CloneSet that is not already terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods_to_delete: Option<Vec<String>>,

    /// Caps unavailable pods while scaling out, which limits how fast `replicas` can grow. Each
    /// round the controller creates no more than this number minus the pods already
    /// unavailable. Has no effect on scale-in or updates. Takes an integer or a percentage of
    /// `replicas` (rounded up). If unset, there is no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// Turns off PVC reuse. When true, PVCs that no active pod uses are cleaned up before
    /// scaling. When false (the default), a new pod takes over the instance id of such a
    /// leftover PVC and mounts that PVC again.
    #[serde(
        default,
        rename = "disablePVCReuse",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_pvc_reuse: Option<bool>,
}

/// Values of [`CloneSetUpdateStrategy::type_`].
pub mod update_strategy_type {
    /// The controller never updates pods by itself. A pod is moved to the update revision only
    /// when someone else deletes it and the controller creates its replacement. OpenKruise
    /// v1.9.0's validating webhook does not list this value among the accepted ones.
    pub const ON_DELETE: &str = "OnDelete";
    /// Update a pod by deleting it and creating a new one. This is the default.
    pub const RE_CREATE: &str = "ReCreate";
    /// Update in place when the revision diff allows it, otherwise recreate. The diff may touch
    /// only container images, template labels and annotations, and (with the
    /// `InPlaceWorkloadVerticalScaling` gate) container resources.
    pub const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
    /// Always update in place and never recreate. The webhook rejects template changes other
    /// than new container images, and `maxSurge` must stay 0.
    pub const IN_PLACE_ONLY: &str = "InPlaceOnly";
}

/// How the CloneSet moves pods to a new revision.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetUpdateStrategy {
    /// Update method, one of the values in [`update_strategy_type`]. The webhook sets
    /// `ReCreate` when it is empty.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// How many pods should stay on the old revisions; the controller updates
    /// `replicas - partition` pods. Takes an integer (e.g. `5`) or a percentage of `replicas`
    /// (e.g. `10%`), rounded up. A percentage below 100% with more than one replica still lets at
    /// least one pod update. The result is clamped to `[0, replicas]`. Defaults to 0, which
    /// updates every pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,

    /// Limit on unavailable pods while pods are being updated or deleted on request. Takes an
    /// integer (e.g. `5`) or a percentage of `replicas` (e.g. `10%`). A percentage is rounded up,
    /// or rounded down if `maxSurge` is above 0. Defaults to `20%`. If `replicas` is above 0, the
    /// webhook rejects a spec where both this and `maxSurge` come to less than 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// How many pods may exist above `replicas` while pods are being updated or deleted on
    /// request. Takes an integer (e.g. `5`) or a percentage of `replicas` (e.g. `10%`), rounded
    /// up. Defaults to 0. Treated as 0 while `paused` is true, and must be 0 with `InPlaceOnly`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,

    /// When true, the rollout stops and no further pods are updated. Scaling carries on.
    /// Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// Chooses which pods are updated first, either by ordered label keys or by summed weights
    /// of matching label selectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,

    /// Label key/value pairs whose pods should be spread across update batches rather than
    /// updated together. It is applied after the priority sort. The two strategies can be
    /// combined, but the resulting order is easier to predict with only one of them, and with
    /// a single scatter term.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scatter_strategy: Option<UpdateScatterStrategy>,

    /// Settings for in-place updates (`gracePeriodSeconds`). The webhook sets it to `{}` for
    /// the two in-place types when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
}

/// What the controller last observed about a CloneSet and its pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetStatus {
    /// The `metadata.generation` this status was computed from. The API server bumps the
    /// generation on every spec change, so a smaller value here means the status is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Number of active pods the CloneSet owns, at any revision.
    pub replicas: i32,

    /// Owned pods that are Running and Ready, and whose `InPlaceUpdateReady` condition is
    /// either missing or True.
    pub ready_replicas: i32,

    /// Ready pods (as counted in `readyReplicas`) that have been Ready for at least
    /// `minReadySeconds` and are in lifecycle state Normal or have no lifecycle state.
    pub available_replicas: i32,

    /// Owned pods whose revision is `updateRevision`.
    pub updated_replicas: i32,

    /// Pods that are at `updateRevision` and also count in `readyReplicas`.
    pub updated_ready_replicas: i32,

    /// Pods that are at `updateRevision` and also count in `availableReplicas`. With the
    /// `InPlaceWorkloadVerticalScaling` gate on, a pod whose resources are being resized is
    /// unavailable, so it uses up part of `maxUnavailable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_available_replicas: Option<i32>,

    /// How many pods the controller intends to move to `updateRevision`: `replicas` minus the
    /// computed `partition`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_updated_replicas: Option<i32>,

    /// Name of the ControllerRevision built from the current `template`, the revision pods are
    /// being moved to. Absent until computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_revision: Option<String>,

    /// Name of the ControllerRevision the pods are known to be at. It becomes `updateRevision`
    /// once every pod is updated and the pod count equals `replicas`. Absent until computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,

    /// Counts the hash collisions met while naming ControllerRevisions. The controller mixes
    /// the counter into the hash so that the newest revision gets a name nobody else uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,

    /// Latest observations about the CloneSet: `FailedScale`, `FailedUpdate` and `Progressing`
    /// (see [`condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<CloneSetCondition>>,

    /// `selector` as a string, exposed through the scale subresource so that the HPA can find
    /// the pods it counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

/// Values of [`CloneSetCondition::type_`].
pub mod condition_type {
    /// Creating or deleting pods or PVCs failed.
    pub const FAILED_SCALE: &str = "FailedScale";
    /// Updating pods (in place or by recreation) failed.
    pub const FAILED_UPDATE: &str = "FailedUpdate";
    /// Rollout progress, tracked only when `progressDeadlineSeconds` is set; the reason is one
    /// of [`super::condition_reason`].
    pub const PROGRESSING: &str = "Progressing";
}

/// Reasons the controller writes on the `Progressing` condition.
pub mod condition_reason {
    /// Nothing moved forward within `progressDeadlineSeconds`; set with status False.
    pub const PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
    /// `updateStrategy.paused` is true; the paused time is left out of the deadline.
    pub const PAUSED: &str = "CloneSetPaused";
    /// The CloneSet changed and a new revision is being rolled out.
    pub const UPDATED: &str = "CloneSetUpdated";
    /// The rollout has reached the partition and the updated pods are available.
    pub const PARTITION_AVAILABLE: &str = "ProgressPartitionAvailable";
    /// Every pod is updated and available.
    pub const AVAILABLE: &str = "CloneSetAvailable";
}

/// One entry of `status.conditions`: an aspect of the CloneSet's state as of a given time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetCondition {
    /// Condition kind; see [`condition_type`].
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Most recent time the controller wrote this condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Most recent time `status` changed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Short CamelCase cause of the latest status change (for `Progressing`, see
    /// [`condition_reason`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details of the latest change, written for people to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_cloneset.yaml"
    ));

    #[test]
    fn cloneset_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let cs: CloneSet = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(serde_json::to_value(&cs).unwrap(), raw);
        let strategy = cs.spec.update_strategy.as_ref().unwrap();
        assert_eq!(
            strategy.type_.as_deref(),
            Some(update_strategy_type::IN_PLACE_IF_POSSIBLE)
        );
        assert_eq!(strategy.partition, Some(IntOrString::String("20%".into())));
        assert!(cs.spec.lifecycle.as_ref().unwrap().pre_delete.is_some());
    }

    #[test]
    fn cloneset_absent_fields_stay_absent_and_zeros_stay_explicit() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "metadata": {"name": "c"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "c"}},
                "template": {"metadata": {"labels": {"app": "c"}}},
                "updateStrategy": {"paused": false, "partition": 0},
            },
            "status": {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
                       "updatedReplicas": 0, "updatedReadyReplicas": 0},
        });
        let cs: CloneSet = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(cs.spec.replicas, Some(0));
        assert_eq!(cs.spec.scale_strategy, None);
        assert_eq!(serde_json::to_value(&cs).unwrap(), v);
    }

    #[test]
    fn cloneset_status_uses_openkruise_field_names() {
        let status = CloneSetStatus {
            observed_generation: Some(3),
            replicas: 5,
            ready_replicas: 4,
            available_replicas: 4,
            updated_replicas: 2,
            updated_ready_replicas: 2,
            updated_available_replicas: Some(2),
            expected_updated_replicas: Some(4),
            update_revision: Some("c-5d4f".into()),
            current_revision: Some("c-77b8".into()),
            collision_count: Some(0),
            conditions: None,
            label_selector: Some("app=c".into()),
        };
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"observedGeneration": 3, "replicas": 5, "readyReplicas": 4,
                   "availableReplicas": 4, "updatedReplicas": 2, "updatedReadyReplicas": 2,
                   "updatedAvailableReplicas": 2, "expectedUpdatedReplicas": 4,
                   "updateRevision": "c-5d4f", "currentRevision": "c-77b8",
                   "collisionCount": 0, "labelSelector": "app=c"})
        );
    }
}
