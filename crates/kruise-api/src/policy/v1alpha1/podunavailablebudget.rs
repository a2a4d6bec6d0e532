//! PodUnavailableBudget (`policy.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0):
//! like a PodDisruptionBudget, but it also guards pod deletion and in-place updates (not only
//! eviction). The pod validating webhook refuses an operation that would leave fewer available
//! pods than the budget allows.
//!
//! Behaviour that v1alpha1 has no field for is configured with annotations on the budget (see
//! [`crate::keys::PUB_PROTECT_OPERATIONS`], [`crate::keys::PUB_PROTECT_TOTAL_REPLICAS`]) and on
//! pods ([`crate::keys::PUB_NO_PROTECT`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a PodUnavailableBudget: which pods it covers and how many of them may be
/// unavailable at once.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.kruise.io",
    version = "v1alpha1",
    kind = "PodUnavailableBudget",
    plural = "podunavailablebudgets",
    singular = "podunavailablebudget",
    shortname = "pub",
    namespaced,
    status = "PodUnavailableBudgetStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A PodUnavailableBudget limits how many of the pods it covers may be made unavailable at once by deletion, eviction or in-place update.",
    printcolumn(
        name = "Allowed",
        type_ = "integer",
        json_path = ".status.unavailableAllowed",
        description = "UnavailableAllowed number of pod unavailable that are currently allowed"
    ),
    printcolumn(
        name = "Current",
        type_ = "integer",
        json_path = ".status.currentAvailable",
        description = "CurrentAvailable current number of available pods"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.desiredAvailable",
        description = "DesiredAvailable minimum desired number of available pods"
    ),
    printcolumn(
        name = "Total",
        type_ = "integer",
        json_path = ".status.totalReplicas",
        description = "TotalReplicas total number of pods counted by this budget"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetSpec {
    /// Pods covered by the budget, by label. Set either this or `targetRef`; when both are set
    /// `targetRef` wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// A workload whose pods are covered; the expected number of pods is read from its scale
    /// subresource (or the [`crate::keys::PUB_PROTECT_TOTAL_REPLICAS`] annotation).
    #[serde(default, rename = "targetRef", skip_serializing_if = "Option::is_none")]
    pub target_reference: Option<TargetReference>,

    /// At most this many covered pods (a number, or a percentage of the expected pods) may be
    /// unavailable after an operation. Set this or `minAvailable`; this one wins if both are set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,

    /// At least this many covered pods (a number, or a percentage of the expected pods) must
    /// stay available after an operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
}

/// A workload in the budget's namespace, by apiVersion, kind and name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// apiVersion of the workload, e.g. `apps.kruise.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the workload, e.g. `CloneSet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Operations a PodUnavailableBudget can guard, as listed (comma separated) in the
/// [`crate::keys::PUB_PROTECT_OPERATIONS`] annotation. Without the annotation `DELETE`, `EVICT`
/// and `UPDATE` are guarded.
pub mod pub_operation {
    /// Updates of a pod that make it unavailable (e.g. an in-place image update).
    pub const UPDATE: &str = "UPDATE";
    /// Pod deletion.
    pub const DELETE: &str = "DELETE";
    /// Pod eviction.
    pub const EVICT: &str = "EVICT";
    /// In-place resource resizing of a pod (a special case of UPDATE).
    pub const RESIZE: &str = "RESIZE";
}

/// Observed state of a PodUnavailableBudget, maintained by its controller and the pod webhook.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetStatus {
    /// The `metadata.generation` this status was computed from; the counters are only
    /// meaningful when it equals the current generation.
    #[serde(default)]
    pub observed_generation: i64,

    /// Pods whose deletion or eviction was admitted but is not yet observed, with the time of
    /// admission, by pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disrupted_pods: Option<BTreeMap<String, Time>>,

    /// Pods admitted for an update that makes them unavailable, with the time of admission, by
    /// pod name; an entry is removed once the pod is ready and consistent again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_pods: Option<BTreeMap<String, Time>>,

    /// How many more covered pods may be made unavailable right now.
    pub unavailable_allowed: i32,

    /// Number of covered pods that are currently available.
    pub current_available: i32,

    /// Minimum number of covered pods that must stay available.
    pub desired_available: i32,

    /// Number of pods the budget expects to cover.
    pub total_replicas: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/policy.kruise.io_v1alpha1_podunavailablebudget.yaml"
    ));

    #[test]
    fn podunavailablebudget_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: PodUnavailableBudget = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(obj.spec.target_reference.is_some());
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn podunavailablebudget_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "policy.kruise.io/v1alpha1",
            "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub"},
            "spec": {"targetRef": {"name": "web"}},
            "status": {"observedGeneration": 0, "unavailableAllowed": 1, "currentAvailable": 3,
                       "desiredAvailable": 2, "totalReplicas": 3}
        });
        let obj: PodUnavailableBudget = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.max_unavailable, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }
}
