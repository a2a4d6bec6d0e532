//! UnitedDeployment (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0): runs one
//! workload per "subset" of nodes (a StatefulSet, Advanced StatefulSet, CloneSet or Deployment,
//! all built from one template) and splits a total replica count between them, either by
//! explicit per-subset replicas or by min/max capacities. Updates are rolled out per subset with
//! manual partitions.
//!
//! Subset workloads carry the labels [`crate::keys::SUBSET_NAME`] and
//! [`crate::keys::KRUISE_CONTROLLER_REVISION_HASH`].

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DeploymentSpec, StatefulSetSpec as UpstreamStatefulSetSpec};
use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CloneSetSpec;
use crate::apps::v1beta1::StatefulSetSpec as AdvancedStatefulSetSpec;

/// Default of `topology.scheduleStrategy.adaptive.rescheduleCriticalSeconds`, in seconds.
pub const DEFAULT_RESCHEDULE_CRITICAL_SECONDS: i32 = 30;
/// Default of `topology.scheduleStrategy.adaptive.unschedulableDuration`, in seconds.
pub const DEFAULT_UNSCHEDULABLE_DURATION_SECONDS: i32 = 300;

/// Desired state of a UnitedDeployment: total replicas, the workload template, the subsets and
/// how updates are rolled out.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "UnitedDeployment",
    plural = "uniteddeployments",
    singular = "uniteddeployment",
    shortname = "ud",
    namespaced,
    status = "UnitedDeploymentStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A UnitedDeployment manages one workload per subset of nodes from a single template and divides its replicas between them.",
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
    )
)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSpec {
    /// Total number of pods over all subsets. Absent means 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Label query over the pods of all subsets; it must match the template's pod labels.
    pub selector: LabelSelector,

    /// The workload every subset is built from (exactly one kind of template is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<SubsetTemplate>,

    /// The subsets and how pods are scheduled between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,

    /// How a template change is rolled out to the subsets. Absent means `Manual` with no
    /// partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UnitedDeploymentUpdateStrategy>,

    /// Number of old ControllerRevisions kept for rollback. Absent means 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
}

/// The workload template of a UnitedDeployment; exactly one field is set. The template's own
/// `replicas` and partition are ignored (the UnitedDeployment sets them per subset). The
/// templates are boxed: four workload specs inline made decoding a UnitedDeployment overflow a
/// worker thread's stack in debug builds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubsetTemplate {
    /// Subsets are upstream `apps/v1` StatefulSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful_set_template: Option<Box<StatefulSetTemplateSpec>>,

    /// Subsets are Kruise Advanced StatefulSets (`apps.kruise.io/v1beta1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced_stateful_set_template: Option<Box<AdvancedStatefulSetTemplateSpec>>,

    /// Subsets are Kruise CloneSets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_set_template: Option<Box<CloneSetTemplateSpec>>,

    /// Subsets are upstream `apps/v1` Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<Box<DeploymentTemplateSpec>>,
}

/// Template of upstream StatefulSet subsets: metadata and spec of each subset StatefulSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StatefulSetTemplateSpec {
    /// Labels and annotations given to every subset StatefulSet (its name is generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub metadata: Option<ObjectMeta>,

    /// StatefulSet spec shared by the subsets (the CRD does not describe it; the webhook
    /// validates it).
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub spec: UpstreamStatefulSetSpec,
}

/// Template of Advanced StatefulSet subsets: metadata and spec of each subset workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AdvancedStatefulSetTemplateSpec {
    /// Labels and annotations given to every subset workload (its name is generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub metadata: Option<ObjectMeta>,

    /// Advanced StatefulSet spec shared by the subsets.
    pub spec: AdvancedStatefulSetSpec,
}

/// Template of CloneSet subsets: metadata and spec of each subset CloneSet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CloneSetTemplateSpec {
    /// Labels and annotations given to every subset CloneSet (its name is generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub metadata: Option<ObjectMeta>,

    /// CloneSet spec shared by the subsets.
    pub spec: CloneSetSpec,
}

/// Template of Deployment subsets: metadata and spec of each subset Deployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeploymentTemplateSpec {
    /// Labels and annotations given to every subset Deployment (its name is generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub metadata: Option<ObjectMeta>,

    /// Deployment spec shared by the subsets (the CRD does not describe it; the webhook
    /// validates it).
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub spec: DeploymentSpec,
}

/// Values of [`UnitedDeploymentUpdateStrategy::type_`].
pub mod united_deployment_update_strategy_type {
    /// Each subset is updated up to the partition given for it in `manualUpdate.partitions`
    /// (the only strategy, and the default).
    pub const MANUAL: &str = "Manual";
}

/// How a UnitedDeployment rolls out a template change.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentUpdateStrategy {
    /// Strategy type (see [`united_deployment_update_strategy_type`]). Absent means `Manual`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Parameters of the `Manual` strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_update: Option<ManualUpdate>,
}

/// Parameters of the `Manual` update strategy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManualUpdate {
    /// Partition of each subset's workload, by subset name: that many pods (by ordinal, from
    /// the highest, for StatefulSets) stay at the old revision. Subsets not listed get 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<BTreeMap<String, i32>>,
}

/// The subsets of a UnitedDeployment and how pods are scheduled between them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// The subsets, in priority order (capacity-based allocation fills them in this order).
    /// Names must be unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsets: Option<Vec<Subset>>,

    /// What happens to pods that cannot be scheduled in their subset. Absent means `Fixed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_strategy: Option<UnitedDeploymentScheduleStrategy>,
}

/// One subset of a UnitedDeployment: a group of nodes that gets its own workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Subset {
    /// Subset name, a DNS label unique within the UnitedDeployment; the subset workload is
    /// named `<unitedDeployment>-<subset>-<random>`.
    pub name: String,

    /// Node selector term added to the required node affinity of the subset's pods. Cannot be
    /// changed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector_term: Option<NodeSelectorTerm>,

    /// Tolerations added to the subset's pods. Cannot be changed once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,

    /// Fixed number of pods for this subset, or a percentage of `spec.replicas` such as `10%`.
    /// When absent the controller shares the remaining replicas evenly between the subsets
    /// without a value. Cannot be combined with `minReplicas`/`maxReplicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrString>,

    /// Lower bound on the subset's pods (number or percentage), at least 0; bounds are
    /// satisfied in subset order. Defaults to 0 when capacities are used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<IntOrString>,

    /// Upper bound on the subset's pods (number or percentage), at least `minReplicas`. Absent
    /// means unlimited; at least one subset should be unlimited so scaling cannot get stuck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,

    /// Strategic-merge patch applied to the subset's workload template; it takes precedence
    /// over every other field (including replicas, node selector and tolerations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::schemaless")]
    pub patch: Option<serde_json::Value>,
}

/// Values of [`UnitedDeploymentScheduleStrategy::type_`].
pub mod united_deployment_schedule_strategy_type {
    /// Pods stuck unschedulable are moved to another subset (see
    /// [`super::AdaptiveUnitedDeploymentStrategy`]).
    pub const ADAPTIVE: &str = "Adaptive";
    /// Pods stay in their subset even if they cannot be scheduled (the default).
    pub const FIXED: &str = "Fixed";
}

/// How a UnitedDeployment reacts to pods that cannot be scheduled in their subset.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentScheduleStrategy {
    /// `Fixed` or `Adaptive` (see [`united_deployment_schedule_strategy_type`]); empty or absent
    /// means `Fixed`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Adaptive", "Fixed", ""]))]
    pub type_: Option<String>,

    /// Settings used when the type is `Adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveUnitedDeploymentStrategy>,
}

impl UnitedDeploymentScheduleStrategy {
    /// Whether the `Adaptive` strategy is selected.
    pub fn is_adaptive(&self) -> bool {
        self.type_.as_deref() == Some(united_deployment_schedule_strategy_type::ADAPTIVE)
    }

    /// Whether unschedulable pods are kept (with a temporary substitute elsewhere) instead of
    /// being moved.
    pub fn should_reserve_unschedulable_pods(&self) -> bool {
        self.is_adaptive()
            && self
                .adaptive
                .as_ref()
                .and_then(|a| a.reserve_unschedulable_pods)
                .unwrap_or(false)
    }

    /// Seconds a pod may stay unschedulable before it is rescheduled (default
    /// [`DEFAULT_RESCHEDULE_CRITICAL_SECONDS`]).
    pub fn reschedule_critical_seconds(&self) -> i32 {
        self.adaptive
            .as_ref()
            .and_then(|a| a.reschedule_critical_seconds)
            .unwrap_or(DEFAULT_RESCHEDULE_CRITICAL_SECONDS)
    }

    /// Seconds a subset stays marked unschedulable (default
    /// [`DEFAULT_UNSCHEDULABLE_DURATION_SECONDS`]).
    pub fn unschedulable_duration_seconds(&self) -> i32 {
        self.adaptive
            .as_ref()
            .and_then(|a| a.unschedulable_duration)
            .unwrap_or(DEFAULT_UNSCHEDULABLE_DURATION_SECONDS)
    }
}

/// Settings of the `Adaptive` schedule strategy of a UnitedDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveUnitedDeploymentStrategy {
    /// Seconds a pod may stay pending as unschedulable in its subset before it is moved to a
    /// subset with spare capacity. Absent means 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,

    /// Seconds a subset stays marked unschedulable before it is tried again. Absent means 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable_duration: Option<i32>,

    /// Keep unschedulable pods pending in their subset and create a temporary substitute in
    /// another subset; the substitute is deleted once the original is scheduled and ready.
    /// Substitutes carry the label [`crate::keys::UNITED_DEPLOYMENT_RESERVED_POD`]. Absent means
    /// false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_unschedulable_pods: Option<bool>,
}

/// Observed state of a UnitedDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Number of ready pods over all subsets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,

    /// Number of pods over all subsets.
    pub replicas: i32,

    /// Number of pods at the current template revision.
    pub updated_replicas: i32,

    /// Number of pods kept pending by the adaptive strategy's reservation mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_pods: Option<i32>,

    /// Number of ready pods at the current template revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_ready_replicas: Option<i32>,

    /// Counter of ControllerRevision name collisions, mixed into the next revision name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,

    /// The revision the subsets are currently at.
    pub current_revision: String,

    /// Replicas allocated to each subset, by subset name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset_replicas: Option<BTreeMap<String, i32>>,

    /// Per-subset state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset_statuses: Option<Vec<UnitedDeploymentSubsetStatus>>,

    /// Latest observations (see [`united_deployment_condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<UnitedDeploymentCondition>>,

    /// Progress of the current update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_status: Option<UpdateStatus>,

    /// Serialized label selector of the pods, for the scale subresource (HPA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
}

impl UnitedDeploymentStatus {
    /// The status entry of the named subset, if any.
    pub fn subset_status(&self, subset: &str) -> Option<&UnitedDeploymentSubsetStatus> {
        self.subset_statuses
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|s| s.name.as_deref() == Some(subset))
    }
}

/// Values of [`UnitedDeploymentCondition::type_`].
pub mod united_deployment_condition_type {
    /// Every expected subset workload exists and no unexpected one is left.
    pub const SUBSET_PROVISIONED: &str = "SubsetProvisioned";
    /// Every subset workload has been updated.
    pub const SUBSET_UPDATED: &str = "SubsetUpdated";
    /// Reconciling one of the subsets failed.
    pub const SUBSET_FAILURE: &str = "SubsetFailure";
    /// The current revision equals the update revision.
    pub const UNITED_DEPLOYMENT_UPDATED: &str = "UnitedDeploymentUpdated";
}

/// One observation about a UnitedDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentCondition {
    /// Kind of observation (see [`united_deployment_condition_type`]).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Whether the condition holds: `True`, `False` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,

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

/// Progress of a UnitedDeployment update.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStatus {
    /// The revision being rolled out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_revision: Option<String>,

    /// Partition currently applied to each subset, by subset name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_partitions: Option<BTreeMap<String, i32>>,
}

/// Observed state of one subset of a UnitedDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSubsetStatus {
    /// Subset name (from `topology.subsets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// Number of pods in the subset (reserved for future use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Number of ready pods in the subset (reserved for future use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,

    /// Partition of the subset (reserved for future use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,

    /// Number of pods of the subset kept pending by reservation mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_pods: Option<i32>,

    /// Observations about the subset (see [`united_deployment_subset_condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<UnitedDeploymentSubsetCondition>>,
}

impl UnitedDeploymentSubsetStatus {
    /// The condition of the given type, if present.
    pub fn condition(&self, type_: &str) -> Option<&UnitedDeploymentSubsetCondition> {
        self.conditions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|c| c.type_ == type_)
    }
}

/// Values of [`UnitedDeploymentSubsetCondition::type_`].
pub mod united_deployment_subset_condition_type {
    /// False while new pods placed in the subset would stay pending.
    pub const SCHEDULABLE: &str = "Schedulable";
}

/// One observation about a subset of a UnitedDeployment.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSubsetCondition {
    /// Kind of observation (see [`united_deployment_subset_condition_type`]).
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

/// `ParseSubsetReplicas`: an int (≥ 0) or a percentage of `ud_replicas` (`-1`: unset), rounded
/// half up. Errors as OpenKruise's texts.
pub fn parse_subset_replicas(ud_replicas: i32, v: &IntOrString) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => {
            if *i < 0 {
                return Err(format!("subset replicas ({i}) should not be less than 0"));
            }
            Ok(*i)
        }
        IntOrString::String(s) => {
            if ud_replicas < 0 {
                return Err(format!(
                    "subsetReplicas ({s}) should not be string when unitedDeployment replicas is empty"
                ));
            }
            let Some(int_part) = s.strip_suffix('%') else {
                return Err(format!(
                    "subset replicas ({s}) only support integer value or percentage value with a suffix '%'"
                ));
            };
            let percent: i64 = int_part.parse::<i32>().map(i64::from).map_err(|e| {
                format!(
                    "subset replicas ({s}) should be correct percentage integer: {}",
                    go_parse_int_error(int_part, &e)
                )
            })?;
            if !(0..=100).contains(&percent) {
                return Err(format!("subset replicas ({s}) should be in range [0, 100]"));
            }
            Ok((f64::from(ud_replicas) * percent as f64 / 100.0 + 0.5).floor() as i32)
        }
    }
}

/// Go's `strconv.ParseInt(s, 10, 32)` error text.
fn go_parse_int_error(s: &str, e: &std::num::ParseIntError) -> String {
    use std::num::IntErrorKind;
    let what = match e.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
        _ => "invalid syntax",
    };
    format!("strconv.ParseInt: parsing {}: {what}", go_quote(s))
}

fn go_quote(s: &str) -> String {
    crate::validation::gofmt::quote(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_uniteddeployment.yaml"
    ));

    #[test]
    fn uniteddeployment_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: UnitedDeployment = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let template = obj.spec.template.as_ref().unwrap();
        assert!(template.advanced_stateful_set_template.is_some());
        assert_eq!(
            obj.spec
                .topology
                .as_ref()
                .unwrap()
                .subsets
                .as_ref()
                .unwrap()
                .len(),
            3
        );
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn uniteddeployment_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": {"name": "ud"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"deploymentTemplate": {"spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}}
                }}},
                "topology": {"subsets": [{"name": "a"}]}
            },
            "status": {"replicas": 0, "updatedReplicas": 0, "currentRevision": "",
                       "subsetStatuses": [{}]}
        });
        let obj: UnitedDeployment = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.replicas, None);
        assert_eq!(obj.spec.update_strategy, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }

    #[test]
    fn uniteddeployment_schedule_strategy_helpers() {
        let mut s = UnitedDeploymentScheduleStrategy::default();
        assert!(!s.is_adaptive());
        assert_eq!(s.reschedule_critical_seconds(), 30);
        assert_eq!(s.unschedulable_duration_seconds(), 300);
        s.type_ = Some(united_deployment_schedule_strategy_type::ADAPTIVE.into());
        s.adaptive = Some(AdaptiveUnitedDeploymentStrategy {
            reschedule_critical_seconds: Some(10),
            unschedulable_duration: None,
            reserve_unschedulable_pods: Some(true),
        });
        assert!(s.is_adaptive());
        assert!(s.should_reserve_unschedulable_pods());
        assert_eq!(s.reschedule_critical_seconds(), 10);
    }
}
