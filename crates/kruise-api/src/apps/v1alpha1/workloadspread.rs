//! WorkloadSpread (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0): spreads the
//! pods of an existing workload (Deployment, ReplicaSet, Job, StatefulSet, CloneSet, ...) over
//! ordered subsets of nodes without owning the workload. The pod webhook assigns each new pod to
//! the first subset with room, and the controller sets pod deletion costs so that scale-in
//! removes pods from the later subsets first.
//!
//! The pod annotation written by the webhook is [`crate::keys::MATCHED_WORKLOADSPREAD`], whose
//! value is a JSON [`InjectWorkloadSpread`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a WorkloadSpread: the target workload, which of its pods to manage, and the
/// ordered subsets to spread them over.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "WorkloadSpread",
    plural = "workloadspreads",
    singular = "workloadspread",
    shortname = "ws",
    namespaced,
    status = "WorkloadSpreadStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A WorkloadSpread distributes the pods of a workload over ordered subsets of nodes, each with an optional replica limit.",
    printcolumn(
        name = "WorkloadName",
        type_ = "string",
        json_path = ".spec.targetRef.name"
    ),
    printcolumn(
        name = "WorkloadKind",
        type_ = "string",
        json_path = ".spec.targetRef.kind"
    ),
    printcolumn(
        name = "Adaptive",
        type_ = "boolean",
        json_path = ".spec.scheduleStrategy.type[?(@ == \"Adaptive\")]",
        description = "Whether use the adaptive reschedule strategy"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSpec {
    /// The workload whose pods are spread. Required; one workload can be the target of only one
    /// WorkloadSpread.
    #[serde(rename = "targetRef")]
    pub target_reference: TargetReference,

    /// Restricts the WorkloadSpread to part of the target's pods, and says how to count them.
    /// Absent means all pods of the target, counted by its `spec.replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_filter: Option<TargetFilter>,

    /// The subsets, in priority order: a new pod goes to the first one that still has room.
    /// Names must be unique.
    pub subsets: Vec<WorkloadSpreadSubset>,

    /// How pods that cannot be scheduled in their subset are handled. Absent means `Fixed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_strategy: Option<WorkloadSpreadScheduleStrategy>,
}

/// Identifies a workload by apiVersion, kind and name (same namespace). Used by WorkloadSpread
/// and PersistentPodState.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// apiVersion of the workload, e.g. `apps/v1`.
    pub api_version: String,
    /// Kind of the workload, e.g. `Deployment`.
    pub kind: String,
    /// Name of the workload.
    pub name: String,
}

/// Narrows a WorkloadSpread to part of the target's pods, e.g. only the workers of a TFJob whose
/// pods carry `role: worker` and whose count is at `spec.tfReplicaSpecs.Worker.replicas`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetFilter {
    /// Only pods matching this label selector are managed. Absent means all pods of the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Dot-separated paths into the target object (numeric segments index arrays, as in
    /// `spec.subsets.1.replicas`) whose integer values are summed to get the number of managed
    /// replicas. Absent or empty means the target's own replica count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas_path_list: Option<Vec<String>>,
}

/// Values of [`WorkloadSpreadScheduleStrategy::type_`].
pub mod workload_spread_schedule_strategy_type {
    /// Pods stuck unschedulable in a subset are deleted so they get recreated in a later subset,
    /// and the webhook may simulate scheduling before choosing a subset.
    pub const ADAPTIVE: &str = "Adaptive";
    /// Pods stay in the subset they were assigned to (the default).
    pub const FIXED: &str = "Fixed";
}

/// How a WorkloadSpread reacts to pods that cannot be scheduled in their subset.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadScheduleStrategy {
    /// `Fixed` or `Adaptive` (see [`workload_spread_schedule_strategy_type`]); empty or absent
    /// means `Fixed`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Adaptive", "Fixed", ""]))]
    pub type_: Option<String>,

    /// Settings used when the type is `Adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveWorkloadSpreadStrategy>,
}

/// Settings of the `Adaptive` schedule strategy of a WorkloadSpread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveWorkloadSpreadStrategy {
    /// Turns off the webhook's simple node-fit simulation (which only looks at node resources)
    /// used to skip subsets a pod would not fit in. Absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_simulation_schedule: Option<bool>,

    /// Seconds a pod may stay unschedulable in its subset before the controller moves it to a
    /// later subset that has room. Absent means no rescheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
}

/// One subset of nodes of a WorkloadSpread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubset {
    /// Name of the subset, unique within the WorkloadSpread.
    pub name: String,

    /// Node selector term ANDed into the required node affinity of the subset's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_node_selector_term: Option<NodeSelectorTerm>,

    /// Terms appended to the preferred node affinity of the subset's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_node_selector_terms: Option<Vec<PreferredSchedulingTerm>>,

    /// Tolerations added to the subset's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,

    /// Maximum number of pods in the subset, as a number or a percentage of the managed
    /// replicas. Absent means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,

    /// Strategic-merge patch applied to the subset's pods (labels, annotations, resources, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub patch: Option<serde_json::Value>,
}

/// Observed state of a WorkloadSpread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// One entry per subset, in the order of `spec.subsets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset_statuses: Option<Vec<WorkloadSpreadSubsetStatus>>,

    /// Per workload revision subset accounting, used during rolling updates where pods of the new
    /// revision may be created before pods of the old one are deleted. Keyed by revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versioned_subset_statuses: Option<BTreeMap<String, Vec<WorkloadSpreadSubsetStatus>>>,
}

/// Values of [`WorkloadSpreadSubsetCondition::type_`].
pub mod workload_spread_subset_condition_type {
    /// False while pods of the subset cannot be scheduled (reset after a while).
    pub const SCHEDULABLE: &str = "Schedulable";
}

/// One observation about a subset of a WorkloadSpread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubsetCondition {
    /// Kind of observation (see [`workload_spread_subset_condition_type`]).
    #[serde(rename = "type")]
    pub type_: String,

    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: String,

    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,

    /// Short machine-readable cause of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// Human-readable details of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Observed state of one subset of a WorkloadSpread.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadSubsetStatus {
    /// Name of the subset.
    pub name: String,

    /// Number of active pods currently in the subset.
    pub replicas: i32,

    /// Observations about the subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<WorkloadSpreadSubsetCondition>>,

    /// How many more pods the subset can take: positive means room for that many, 0 means full,
    /// -1 means the subset has no `maxReplicas` limit.
    pub missing_replicas: i32,

    /// Pods admitted into the subset by the webhook but not yet seen by the controller, with the
    /// time of admission; entries expire after 30 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creating_pods: Option<BTreeMap<String, Time>>,

    /// Pods whose deletion was admitted but not yet observed, with the time of admission;
    /// entries expire after 15 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleting_pods: Option<BTreeMap<String, Time>>,
}

/// Value of the pod annotation [`crate::keys::MATCHED_WORKLOADSPREAD`]: the WorkloadSpread and
/// subset the webhook assigned the pod to. Not part of the CRD.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct InjectWorkloadSpread {
    /// Name of the WorkloadSpread.
    pub name: String,
    /// Name of the subset.
    pub subset: String,
    /// Identifier generated for a pod created without a name (`generateName`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_workloadspread.yaml"
    ));

    #[test]
    fn workloadspread_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: WorkloadSpread = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(obj.spec.subsets.len(), 2);
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn workloadspread_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "WorkloadSpread",
            "metadata": {"name": "ws"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "subsets": [{"name": "a"}]
            },
            "status": {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": -1}]}
        });
        let obj: WorkloadSpread = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.subsets[0].patch, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }

    #[test]
    fn inject_workloadspread_annotation_json() {
        let json = r#"{"name":"ws","subset":"zone-a"}"#;
        let v: InjectWorkloadSpread = serde_json::from_str(json).unwrap();
        assert_eq!(v.subset, "zone-a");
        assert_eq!(serde_json::to_string(&v).unwrap(), json);
    }
}
