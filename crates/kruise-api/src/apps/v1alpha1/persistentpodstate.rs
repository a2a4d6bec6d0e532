//! PersistentPodState (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0):
//! remembers, per pod name of a StatefulSet-like workload, the node topology and selected
//! annotations a ready pod had, so that a pod recreated under the same name can be steered back
//! to the same topology (node affinity) and get the annotations back.
//!
//! The StatefulSet annotations that auto-create a PersistentPodState are in [`crate::keys`]
//! (`AUTO_GENERATE_PERSISTENT_POD_STATE` and friends).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TargetReference;

/// Desired state of a PersistentPodState: the workload whose pods are tracked and what to
/// remember about them.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PersistentPodState",
    plural = "persistentpodstates",
    singular = "persistentpodstate",
    namespaced,
    status = "PersistentPodStateStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A PersistentPodState records the node topology and chosen annotations of a workload's pods so recreated pods keep them."
)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateSpec {
    /// The workload whose pods are tracked (an apps or Kruise StatefulSet, or a whitelisted
    /// custom kind). Required and immutable.
    #[serde(rename = "targetRef")]
    pub target_reference: TargetReference,

    /// Pod annotations whose values are recorded and restored on a recreated pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_pod_annotations: Option<Vec<PersistentPodAnnotation>>,

    /// Node label keys whose values a recreated pod must match (injected as required node
    /// affinity), e.g. `kubernetes.io/hostname` or `topology.kubernetes.io/zone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_persistent_topology: Option<NodeTopologyTerm>,

    /// Node label keys a recreated pod should match, each with a weight (injected as preferred
    /// node affinity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_persistent_topology: Option<Vec<PreferredTopologyTerm>>,

    /// When a pod's record is dropped (see [`persistent_pod_state_retention_policy`]). Absent
    /// means `WhenScaled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_pod_state_retention_policy: Option<String>,
}

/// Values of [`PersistentPodStateSpec::persistent_pod_state_retention_policy`].
pub mod persistent_pod_state_retention_policy {
    /// Drop a pod's record once the workload is scaled down below that pod's ordinal (the
    /// default).
    pub const WHEN_SCALED: &str = "WhenScaled";
    /// Keep records until the workload itself is deleted.
    pub const WHEN_DELETED: &str = "WhenDeleted";
}

/// A weighted preference for node topology.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreferredTopologyTerm {
    /// Weight of the preference in node affinity scoring, 1-100.
    pub weight: i32,
    /// Node label keys that make up the preference.
    pub preference: NodeTopologyTerm,
}

/// A set of node label keys.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeTopologyTerm {
    /// Node label keys; the values the pod's node had for them are recorded and matched.
    pub node_topology_keys: Vec<String>,
}

/// One pod annotation to persist.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PersistentPodAnnotation {
    /// Annotation key.
    pub key: String,
}

/// Observed state of a PersistentPodState.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateStatus {
    /// The `metadata.generation` this status was computed from.
    pub observed_generation: i64,

    /// Recorded state by pod name, written once a pod is ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_states: Option<BTreeMap<String, PodState>>,
}

/// What was recorded for one pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// The node the pod ran on (`spec.nodeName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,

    /// Values of the configured topology label keys on that node, e.g.
    /// `kubernetes.io/hostname: node-1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_topology_labels: Option<BTreeMap<String, String>>,

    /// Values of the persisted pod annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_persistentpodstate.yaml"
    ));

    #[test]
    fn persistentpodstate_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: PersistentPodState = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(obj.spec.target_reference.kind, "StatefulSet");
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn persistentpodstate_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "PersistentPodState",
            "metadata": {"name": "pps"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}},
            "status": {"observedGeneration": 1, "podStates": {"db-0": {}}}
        });
        let obj: PersistentPodState = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.persistent_pod_state_retention_policy, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }
}
