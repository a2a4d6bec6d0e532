//! API types that more than one workload kind embeds; OpenKruise keeps them in
//! `apis/apps/pub`. Covered here: pod lifecycle hooks, in-place update settings and the state
//! recorded on a pod while it is updated in place, update ordering (priority and scatter), and
//! the per-container runtime data that kruise-daemon reports. Several of these end up as JSON in
//! pod annotations, which both implementations read and write. So every field name and every
//! "omit when empty" rule must stay identical to OpenKruise's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The three points at which a workload's pods can be held for an outside party to act. CloneSet
/// and Advanced StatefulSet support all three; Advanced DaemonSet accepts only `preDelete`.
///
/// The controller records the pod's position in the label [`crate::keys::LIFECYCLE_STATE`].
/// The normal path is `PreparingNormal → Normal`; an in-place update goes
/// `Normal → PreparingUpdate → Updating → Updated → Normal`; and a pod about to be deleted goes
/// to `PreparingDelete`. Each hook is a set of labels and finalizers ([`LifecycleHook`]). A pod
/// leaves `PreparingDelete` or `PreparingUpdate` only after none of its hook's markers remain on
/// it. It leaves `PreparingNormal` (when `preNormal` is set) or `Updated` only once all of the
/// markers are present.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    /// Held in `PreparingDelete` before the workload deletes the pod (on scale-in, specified
    /// delete, or recreate-update). Deletion happens once the hook's markers are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_delete: Option<LifecycleHook>,
    /// Wraps an in-place update. The pod waits in `PreparingUpdate` until the markers are
    /// removed, and it returns from `Updated` to `Normal` once all of them are back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update: Option<LifecycleHook>,
    /// Held in `PreparingNormal` after creation, so the pod does not yet count as available. It
    /// becomes `Normal` once it carries all the markers. Without this hook, the pod becomes
    /// `Normal` as soon as it is scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_normal: Option<LifecycleHook>,
}

/// The markers that make up one lifecycle hook. A pod is "hooked" if it carries at least one of
/// them, and "fully hooked" if it carries every one. Usually the user or an operator removes the
/// markers to release a pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleHook {
    /// Label markers. A label counts only if the pod has the key with exactly this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_handler: Option<BTreeMap<String, String>>,
    /// Finalizer markers. They are matched by name in `metadata.finalizers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers_handler: Option<Vec<String>>,
    /// If true, the pod is taken out of service while it waits on the hook. On entering
    /// `PreparingDelete` or `PreparingUpdate`, the controller adds a not-ready entry to the pod's
    /// `KruisePodReady` condition. For an update, that entry is removed again once the pod reaches
    /// `Updated`. Only the `inPlaceUpdate` and `preDelete` hooks honour it. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_pod_not_ready: Option<bool>,
}

/// Tuning for in-place updates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateStrategy {
    /// Delay, in seconds, between marking a pod not-ready (its `InPlaceUpdateReady` condition
    /// goes False) and writing the new images into its spec. It gives endpoints time to drop the
    /// pod before its containers restart. While the delay runs, the pending change is kept in the
    /// pod annotation [`crate::keys::IN_PLACE_UPDATE_GRACE`]. 0 or unset: patch at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
}

/// Stored as JSON in the pod annotation [`crate::keys::IN_PLACE_UPDATE_STATE`]. It describes the
/// most recent in-place update of the pod: the target revision, what is being changed, the
/// container batches still waiting, and a snapshot of the container statuses from before the
/// update, which is used to tell when the update has finished.
///
/// The serialized form is byte-for-byte what OpenKruise writes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateState {
    /// Revision hash the pod is being moved to.
    pub revision: String,
    /// When this in-place update began.
    pub update_timestamp: Time,
    /// Snapshot taken before the patch, keyed by container name. A container counts as updated
    /// once its reported `imageID` differs from the one recorded here.
    #[serde(default, deserialize_with = "crate::schema::null_as_default")]
    pub last_container_statuses: BTreeMap<String, InPlaceUpdateContainerStatus>,
    /// The update changes labels or annotations that containers read as env vars (through
    /// `fieldRef`), so those containers are restarted to pick up the new values.
    #[serde(default, skip_serializing_if = "is_false")]
    pub update_env_from_metadata: bool,
    /// The update resizes container resources in place.
    #[serde(default, skip_serializing_if = "is_false")]
    pub update_resources: bool,
    /// The update replaces container images.
    #[serde(default, skip_serializing_if = "is_false")]
    pub update_images: bool,
    /// New images deferred to a later batch, by container name. These containers have a lower
    /// launch priority than the batch being patched now.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::schema::null_as_default"
    )]
    pub next_container_images: BTreeMap<String, String>,
    /// Label/annotation changes deferred to a later batch, by the name of the lower-priority
    /// container that consumes them.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::schema::null_as_default"
    )]
    pub next_container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// Resource changes deferred to a later batch, by container name (lower-priority containers).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::schema::null_as_default"
    )]
    pub next_container_resources: BTreeMap<String, ResourceRequirements>,
    /// Condition the pod has to meet before the controller patches the next deferred batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_check_before_next: Option<InPlaceUpdatePreCheckBeforeNext>,
    /// History of the batches patched so far for this revision, oldest first.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::schema::null_as_default"
    )]
    pub container_batches_record: Vec<InPlaceUpdateContainerBatch>,
}

/// Gate between two batches of a prioritised in-place update.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdatePreCheckBeforeNext {
    /// Names of the containers (normally the batch just patched) that must all be Ready before
    /// the next batch is applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers_required_ready: Vec<String>,
}

/// Record of one batch of containers patched during an in-place update.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateContainerBatch {
    /// Time the batch was written to the pod.
    pub timestamp: Time,
    /// Containers the batch covered, by name.
    #[serde(default)]
    pub containers: Vec<String>,
}

/// What was recorded about one container just before an in-place update, for the completion
/// check.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateContainerStatus {
    /// `imageID` the container reported before the update (omitted when empty).
    #[serde(default, rename = "imageID", skip_serializing_if = "String::is_empty")]
    pub image_id: String,
}

/// JSON kept in the pod annotation [`crate::keys::RUNTIME_CONTAINERS_META`]. kruise-daemon
/// writes it with what the container runtime sees for each container of the pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RuntimeContainerMetaSet {
    /// An entry for each runtime container of the pod.
    #[serde(default)]
    pub containers: Vec<RuntimeContainerMeta>,
}

/// What the runtime reports about one container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerMeta {
    /// Name of the container, as in the pod spec.
    pub name: String,
    /// ID assigned by the runtime, in the form `<runtime>://<id>`.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// Times the container has been restarted.
    pub restart_count: i32,
    /// Spec hashes the running container was started from.
    pub hashes: RuntimeContainerHashes,
}

/// Hashes of the spec that a runtime container was started from. The in-place update completion
/// check compares them with the current pod spec.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeContainerHashes {
    /// Hash of the container's entry in `pod.spec.containers`, as the kubelet computes it and
    /// stores it on the runtime container.
    pub plain_hash: u64,
    /// Same kind of hash, computed after env vars sourced from pod labels or annotations have
    /// been replaced by their actual values. 0 (omitted) when not reported.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub extracted_env_from_metadata_hash: u64,
}

/// Decides which pods a rollout updates first. Set either `orderPriority` or `weightPriority`;
/// the webhook rejects a strategy that has both. The sort is stable, so pods that the rules
/// cannot tell apart keep their previous relative order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityStrategy {
    /// Label keys in order of precedence. A pod is ranked by the first key in the list that it
    /// has as a label. Pods ranked by an earlier key are updated before pods ranked by a later
    /// one. Among pods ranked by the same key, the larger number in the label value goes first.
    /// As in OpenKruise v1.9.0, pods that carry none of the keys are placed ahead of all ranked
    /// pods. Example:
    /// ```yaml
    /// orderPriority:
    ///   - orderedKey: update-group
    ///   - orderedKey: rack
    /// ```
    /// Pods labelled `update-group` are ordered by that label's value. After them come the pods
    /// that have `rack` but no `update-group`, ordered by the value of `rack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_priority: Option<Vec<UpdatePriorityOrderTerm>>,
    /// Weighted selectors. Each pod scores the sum of the weights of the terms whose selector
    /// matches it, and higher scores are updated first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_priority: Option<Vec<UpdatePriorityWeightTerm>>,
}

/// One entry of `orderPriority`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityOrderTerm {
    /// Pod label key to rank by (must not be empty). The rank is the number formed by the
    /// trailing digits of the label value: `5` gives 5, `sts-10` gives 10, and a value that
    /// does not end in a digit gives 0.
    pub ordered_key: String,
}

/// One entry of `weightPriority`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityWeightTerm {
    /// Points a pod gains when `matchSelector` matches it. Documented range 1–100; the
    /// webhook rejects values below 0 or above 100.
    pub weight: i32,
    /// Selector over pod labels; must be valid and not empty.
    pub match_selector: LabelSelector,
}

/// Names a label pair; the pods carrying it are spread out over the update order rather than
/// updated back to back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct UpdateScatterTerm {
    /// Label key (must not be empty).
    pub key: String,
    /// Value the label must have.
    pub value: String,
}

/// List of label pairs whose pods are spread across update batches. It runs after the priority
/// sort. Repeating a key/value pair is rejected. When several pairs are given, the pair that
/// matches more pods is spread first.
pub type UpdateScatterStrategy = Vec<UpdateScatterTerm>;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod null_tests {
    use super::*;

    #[test]
    fn go_nulls_in_the_in_place_update_state_read_as_empty() {
        let s: InPlaceUpdateState = serde_json::from_str(
            r#"{"revision":"r","updateTimestamp":"2026-01-01T00:00:00Z","lastContainerStatuses":null,"nextContainerImages":null,"containerBatchesRecord":null}"#,
        )
        .unwrap();
        assert!(s.last_container_statuses.is_empty());
        assert!(s.next_container_images.is_empty());
        assert!(s.container_batches_record.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inplace_state_json_matches_openkruise_field_names() {
        let json = r#"{"revision":"cs-5f7b8c","updateTimestamp":"2026-01-02T03:04:05Z","lastContainerStatuses":{"main":{"imageID":"docker.io/library/nginx@sha256:abc"}},"updateImages":true}"#;
        let state: InPlaceUpdateState = serde_json::from_str(json).unwrap();
        assert_eq!(state.revision, "cs-5f7b8c");
        assert!(state.update_images);
        assert!(!state.update_env_from_metadata);
        assert_eq!(
            state.last_container_statuses["main"].image_id,
            "docker.io/library/nginx@sha256:abc"
        );
        assert_eq!(serde_json::to_string(&state).unwrap(), json);
    }

    #[test]
    fn runtime_meta_round_trip() {
        let json = r#"{"containers":[{"name":"main","containerID":"containerd://1","restartCount":2,"hashes":{"plainHash":123,"extractedEnvFromMetadataHash":9}}]}"#;
        let set: RuntimeContainerMetaSet = serde_json::from_str(json).unwrap();
        assert_eq!(set.containers[0].hashes.plain_hash, 123);
        assert_eq!(serde_json::to_string(&set).unwrap(), json);
    }
}
