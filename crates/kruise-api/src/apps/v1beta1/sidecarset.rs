//! SidecarSet (`apps.kruise.io/v1beta1`, cluster-scoped, the storage version; v1alpha1 is also
//! served): sidecar and init containers that the pod webhook injects into every matching pod at
//! creation, and that the controller keeps up to date in place on already-injected pods.
//!
//! Differences to v1alpha1 (see [`crate::conversion::sidecarset`]): the matching namespaces are
//! chosen only by `spec.namespaceSelector` (v1alpha1 also has `spec.namespace`), and the custom
//! version of a revision is the field `spec.customVersion` (a label in v1alpha1).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LocalObjectReference, ObjectFieldSelector, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apps::common::{UpdatePriorityStrategy, UpdateScatterStrategy};

/// Desired state of a SidecarSet: which pods to inject, what to inject and how to roll out
/// changes to pods that already carry the sidecars.
// kube-derive's repeated `printcolumn(...)` arguments trip this lint.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "SidecarSet",
    plural = "sidecarsets",
    singular = "sidecarset",
    status = "SidecarSetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A cluster-wide set of sidecar containers injected into every matching pod (v1beta1, storage version).",
    printcolumn(
        name = "MATCHED",
        type_ = "integer",
        json_path = ".status.matchedPods",
        description = "The number of pods matched."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedPods",
        description = "The number of pods matched and updated."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyPods",
        description = "The number of pods matched and ready."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Label query selecting the pods to inject. Absent: no pod is selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Label query over namespaces: only pods in matching namespaces are injected. Absent
    /// matches every namespace. (A single namespace is selected with the label
    /// `kubernetes.io/metadata.name`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,

    /// Init containers added to newly created pods, in ascending order of name. They are only
    /// injected at pod creation and never updated on existing pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<SidecarContainer>>,

    /// Sidecar containers added to the selected pods (and updated in place on injected pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<SidecarContainer>>,

    /// Volumes added to the pod for the sidecar containers to mount (a pod volume of the same
    /// name takes precedence). Not described in the CRD schema; the webhook validates them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub volumes: Option<Vec<Volume>>,

    /// How already-injected pods are moved to a new version of the sidecars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<SidecarSetUpdateStrategy>,

    /// How (and which revision of) the sidecars are injected into newly created pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_strategy: Option<SidecarSetInjectionStrategy>,

    /// Secrets used to pull the sidecar images; appended to the pod's `imagePullSecrets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apps::v1alpha1::sidecarset::image_pull_secrets_schema")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,

    /// How many old revisions (ControllerRevisions) of this SidecarSet are kept. Defaults to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,

    /// Pod metadata (annotations) that is written into injected pods together with the
    /// sidecars, and updated in place where the policy allows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_pod_metadata: Option<Vec<SidecarSetPatchPodMetadata>>,

    /// A user-chosen version name for the current spec. It is copied to the ControllerRevision
    /// of this spec, so that `injectionStrategy.revision.customVersion` can later pin injection
    /// to it (e.g. raise it from `v1` to `v2` with a new sidecar image, and promote `v2` only
    /// once it proved itself). The label [`crate::keys::SIDECARSET_CUSTOM_VERSION`] in v1alpha1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,
}

/// Pod metadata patched by a SidecarSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetPatchPodMetadata {
    /// Annotations to set on the pod (key → value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,

    /// What to do when the pod already has a different value; one of [`sidecarset_patch_policy`].
    /// Defaults to `Retain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_policy: Option<String>,
}

/// Values of [`SidecarSetPatchPodMetadata::patch_policy`].
pub mod sidecarset_patch_policy {
    /// Keep the pod's own value on conflict; only applied at injection, never on in-place
    /// updates. Two SidecarSets may not patch the same key with this policy.
    pub const RETAIN: &str = "Retain";
    /// Overwrite the pod's value, at injection and on in-place updates.
    pub const OVERWRITE: &str = "Overwrite";
    /// Treat the value as a JSON object and merge it into the pod's value with a JSON merge
    /// patch, so several SidecarSets can contribute keys to one annotation.
    pub const MERGE_PATCH_JSON: &str = "MergePatchJson";
}

/// One container injected by a SidecarSet: a complete Kubernetes container (its fields inline)
/// plus the SidecarSet-specific injection and upgrade settings.
///
/// The container fields are not described in the CRD schema (they are kept as-is by the
/// apiserver and validated by the webhook).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct SidecarContainer {
    /// The container itself; its fields appear inline next to the SidecarSet settings.
    #[serde(flatten)]
    #[schemars(skip)]
    pub container: Container,

    /// Where a sidecar goes among the pod's containers: before the application containers or
    /// after them; one of [`pod_inject_policy`]. Ignored for init containers. Defaults to
    /// `BeforeAppContainer` (`AfterAppContainer` for init containers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_inject_policy: Option<String>,

    /// How the sidecar is upgraded on injected pods (cold restart or hot upgrade).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<SidecarContainerUpgradeStrategy>,

    /// When enabled, the sidecar also mounts every volume mount of the pod's other
    /// (non-sidecar) containers. Defaults to disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_volume_policy: Option<ShareVolumePolicy>,

    /// When enabled, the sidecar also gets every volume device of the pod's other
    /// (non-sidecar) containers. Absent means disabled (and keeps the SidecarSet hash of
    /// older objects unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_volume_device_policy: Option<ShareVolumePolicy>,

    /// Environment variables copied into the sidecar from other containers of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_env: Option<Vec<TransferEnvVar>>,

    /// Computes the sidecar's resources at pod creation from the resources of other containers
    /// of the pod. Must not be combined with explicit `resources`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_policy: Option<ResourcesPolicy>,
}

/// Values of [`SidecarContainer::pod_inject_policy`].
pub mod pod_inject_policy {
    /// Insert the sidecar in front of the pod's containers.
    pub const BEFORE_APP_CONTAINER: &str = "BeforeAppContainer";
    /// Append the sidecar after the pod's containers.
    pub const AFTER_APP_CONTAINER: &str = "AfterAppContainer";
}

/// Whether a sharing feature is on.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShareVolumePolicy {
    /// `enabled` or `disabled` (see [`share_volume_policy_type`]).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// Values of [`ShareVolumePolicy::type_`].
pub mod share_volume_policy_type {
    /// Share the other containers' volume mounts/devices.
    pub const ENABLED: &str = "enabled";
    /// Do not share (the default).
    pub const DISABLED: &str = "disabled";
}

/// An environment variable copied from another container of the pod into the sidecar.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferEnvVar {
    /// Name of the pod container to copy from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_container_name: Option<String>,

    /// Takes the source container name from a field of the pod instead of a fixed name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_container_name_from: Option<SourceContainerNameSource>,

    /// Name of the single variable to copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_name: Option<String>,

    /// Names of several variables to copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_names: Option<Vec<String>>,
}

/// Where the name of the source container is read from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceContainerNameSource {
    /// A pod field holding the name: `metadata.name`, `metadata.labels['<key>']` or
    /// `metadata.annotations['<key>']`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<ObjectFieldSelector>,
}

/// Rules computing a sidecar's resources from the resources of the pod's other containers.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesPolicy {
    /// How the resources of the target containers are combined into the `cpu`/`memory`
    /// variables: `sum` or `max` (see [`target_containers_mode`]).
    #[schemars(extend("enum" = ["sum", "max"]))]
    pub target_containers_mode: String,

    /// Regular expression selecting the target containers by name (plain and native-sidecar
    /// containers; SidecarSet-injected ones are never targets). Pod creation is rejected if no
    /// container matches. Defaults to `.*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("example" = ".*"))]
    pub target_containers_name_regex: Option<String>,

    /// The expressions giving the sidecar's limits and requests.
    pub resources_expr: ResourcesExpr,
}

/// Values of [`ResourcesPolicy::target_containers_mode`].
pub mod target_containers_mode {
    /// Add up the resources of all target containers.
    pub const SUM: &str = "sum";
    /// Take the largest resources among the target containers.
    pub const MAX: &str = "max";
}

/// Resource expressions of a sidecar.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesExpr {
    /// Expressions for `resources.limits`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceExprLimits>,

    /// Expressions for `resources.requests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceExprRequests>,
}

/// Limit expressions. Each is built from numbers, `+ - * /`, `max()`, `min()` and the variable
/// named after the resource (the combined limit of the target containers). If a target has no
/// limit the variable is unlimited, and an unlimited result leaves the sidecar's limit unset.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceExprLimits {
    /// Expression for the CPU limit, using the variable `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,

    /// Expression for the memory limit, using the variable `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// Request expressions, built like [`ResourceExprLimits`]; a target container without a
/// request counts as 0.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceExprRequests {
    /// Expression for the CPU request, using the variable `cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,

    /// Expression for the memory request, using the variable `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// How a sidecar container is upgraded on injected pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainerUpgradeStrategy {
    /// `ColdUpgrade` (restart the container with the new image; the default, for stateless
    /// sidecars) or `HotUpgrade` (run old and new side by side, e.g. for proxies); see
    /// [`sidecar_container_upgrade_type`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_type: Option<String>,

    /// For `HotUpgrade`: an image that behaves like the sidecar (same command, args, probes)
    /// but does nothing, used for the idle one of the two containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_upgrade_empty_image: Option<String>,
}

/// Values of [`SidecarContainerUpgradeStrategy::upgrade_type`].
pub mod sidecar_container_upgrade_type {
    /// Restart the sidecar with the new image.
    pub const COLD_UPGRADE: &str = "ColdUpgrade";
    /// Start the new version next to the old one, then switch over.
    pub const HOT_UPGRADE: &str = "HotUpgrade";
}

/// How the sidecars are injected into newly created pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectionStrategy {
    /// Stop injecting into new pods (sidecars already injected keep running and updating).
    /// Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// Inject a specific historic revision instead of the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<SidecarSetInjectRevision>,
}

/// A historic revision to inject, chosen by custom version or by ControllerRevision name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectRevision {
    /// The custom version (`spec.customVersion` of a historic SidecarSet revision) to inject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,

    /// Name of the ControllerRevision of this SidecarSet to inject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,

    /// When the chosen revision is injected: `Always` or `Partial` (see
    /// [`sidecarset_inject_revision_policy`]). Defaults to `Always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Always", "Partial"], "example" = "Always"))]
    pub policy: Option<String>,
}

/// Values of [`SidecarSetInjectRevision::policy`].
pub mod sidecarset_inject_revision_policy {
    /// New pods always get the chosen revision, except pods selected by
    /// `updateStrategy.selector`.
    pub const ALWAYS: &str = "Always";
    /// New pods get the chosen or the latest revision following the update strategy: unless
    /// the update is paused, pods not selected by `updateStrategy.selector` get the chosen
    /// revision and the others get the latest one with probability `1 - partition` (a
    /// non-percentage or absent partition counts as 0%).
    pub const PARTIAL: &str = "Partial";
}

/// How already-injected pods are updated to a new version of the sidecars.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetUpdateStrategy {
    /// `RollingUpdate` (update injected pods in place; the default) or `NotUpdate` (only inject
    /// new pods); see [`sidecarset_update_strategy_type`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Stop updating injected pods. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// Only pods matching this selector are updated. Since Kruise 1.8 it also decides which
    /// new pods get the latest sidecars when an injection revision is pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Number (or percentage) of matched pods that stay at the old revision. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,

    /// Maximum number (or percentage, rounded up, of the matched pods) of pods that may be
    /// unavailable during the update; must not be 0. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// Order in which pods are updated (weights or label-value order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,

    /// Spreads pods with the same label key/value over different update batches (applied after
    /// the priority order; one term is usually enough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scatter_strategy: Option<UpdateScatterStrategy>,
}

/// Values of [`SidecarSetUpdateStrategy::type_`].
pub mod sidecarset_update_strategy_type {
    /// Never update injected pods; only new pods get the new sidecars.
    pub const NOT_UPDATE: &str = "NotUpdate";
    /// Update injected pods in place, in batches.
    pub const ROLLING_UPDATE: &str = "RollingUpdate";
}

/// Observed state of a SidecarSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// The `metadata.generation` this status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Number of pods matched by the selector (created after the SidecarSet).
    pub matched_pods: i32,

    /// Number of matched pods carrying the latest sidecars.
    pub updated_pods: i32,

    /// Number of matched pods that are ready.
    pub ready_pods: i32,

    /// Number of matched pods that are both updated and ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_ready_pods: Option<i32>,

    /// Name of the latest ControllerRevision of this SidecarSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision: Option<String>,

    /// Counter used to derive a different ControllerRevision name after a hash collision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,

    /// kruise-rs extension (absent from OpenKruise's CRD, which prunes it): pods the SidecarSet
    /// selects that run without its sidecars — created while the pod webhook did not answer
    /// (failure policy `Ignore`) or before the SidecarSet existed. Absent when 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uninjected_pods: Option<i32>,

    /// kruise-rs extension: when the controller first saw `injectionStrategy.paused` (the
    /// start of the window in which pods are created without this SidecarSet on purpose; kept
    /// across later pauses, so the window only widens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_paused_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,

    /// kruise-rs extension: when the controller last saw injection resumed after a pause
    /// (absent while paused). Pods created between `injectionPausedTime` and this time lack the
    /// sidecars by design and are not counted in `uninjectedPods`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_resumed_time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1beta1_sidecarset.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: SidecarSet = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(obj.metadata.namespace, None, "SidecarSet is cluster-scoped");
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn absent_fields_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "SidecarSet",
            "metadata": {"name": "empty"},
            "spec": {"containers": [{"name": "sidecar", "image": "busybox"}]},
        });
        let obj: SidecarSet = serde_json::from_value(json.clone()).unwrap();
        let c = &obj.spec.containers.as_ref().unwrap()[0];
        assert_eq!(c.container.name, "sidecar");
        assert_eq!(c.pod_inject_policy, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }

    #[test]
    fn container_fields_are_inline() {
        let json = serde_json::json!({
            "name": "proxy",
            "image": "envoy:1",
            "command": ["envoy"],
            "podInjectPolicy": "AfterAppContainer",
            "shareVolumePolicy": {"type": "enabled"},
        });
        let c: SidecarContainer = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(c.container.image.as_deref(), Some("envoy:1"));
        assert_eq!(
            c.share_volume_policy.as_ref().unwrap().type_.as_deref(),
            Some(share_volume_policy_type::ENABLED)
        );
        assert_eq!(serde_json::to_value(&c).unwrap(), json);
    }
}
