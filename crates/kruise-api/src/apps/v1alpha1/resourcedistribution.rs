//! ResourceDistribution (`apps.kruise.io/v1alpha1`, cluster-scoped, the only version in
//! OpenKruise v1.9.0): keeps copies of one Secret or ConfigMap in a chosen set of namespaces.
//!
//! Each copy is owned by the ResourceDistribution and carries the annotations
//! [`crate::keys::RESOURCE_DISTRIBUTION_FROM`] (the distribution's name) and
//! [`crate::keys::RESOURCE_DISTRIBUTION_HASHCODE`] (hash of the distributed content).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a ResourceDistribution: the object to copy and the namespaces to copy it to.
// kube's repeated `printcolumn(...)` arguments look like duplicated attributes to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ResourceDistribution",
    plural = "resourcedistributions",
    singular = "resourcedistribution",
    shortname = "distributor",
    status = "ResourceDistributionStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A ResourceDistribution copies a Secret or ConfigMap into a selected set of namespaces and keeps the copies in sync.",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "The desired number of desired distribution and syncs."
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "The number of successful distribution and syncs."
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "The number of failed distributions and syncs."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionSpec {
    /// The complete object to distribute (with `apiVersion`, `kind` and `metadata.name`; the
    /// namespace is set per copy). Only Secrets and ConfigMaps are accepted, and its apiVersion,
    /// kind and name cannot change afterwards.
    #[schemars(schema_with = "crate::schema::embedded_resource")]
    pub resource: serde_json::Value,

    /// The namespaces that receive a copy.
    pub targets: ResourceDistributionTargets,
}

/// Target namespaces of a ResourceDistribution: the union of `allNamespaces`,
/// `includedNamespaces` and `namespaceLabelSelector`, minus `excludedNamespaces`. `kube-system`
/// and `kube-public` never receive copies.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionTargets {
    /// Every namespace (apart from the forbidden ones) is a target. Absent means false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_namespaces: Option<bool>,

    /// Namespaces that never receive a copy; this wins over every other option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<ResourceDistributionTargetNamespaces>,

    /// Namespaces that receive a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<ResourceDistributionTargetNamespaces>,

    /// Namespaces whose labels match this selector receive a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_label_selector: Option<LabelSelector>,
}

/// A list of namespaces by name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceDistributionTargetNamespaces {
    /// The namespaces (names must be unique).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<ResourceDistributionNamespace>>,
}

/// One namespace, by name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceDistributionNamespace {
    /// Name of the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Observed state of a ResourceDistribution (written by the controller only).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionStatus {
    /// Number of target namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<i32>,

    /// Number of target namespaces whose copy is up to date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<i32>,

    /// Number of target namespaces where creating, updating or deleting the copy failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,

    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Problems met while creating, updating or deleting copies (see
    /// [`resource_distribution_condition_type`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ResourceDistributionCondition>>,
}

/// One observation about a ResourceDistribution.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionCondition {
    /// Kind of observation (see [`resource_distribution_condition_type`]).
    #[serde(rename = "type")]
    pub type_: String,

    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: String,

    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,

    /// Human-readable details of the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// The namespaces the condition applies to (the failed ones).
    #[serde(
        default,
        rename = "failedNamespace",
        skip_serializing_if = "Option::is_none"
    )]
    pub failed_namespaces: Option<Vec<String>>,
}

/// Values of [`ResourceDistributionCondition::type_`].
pub mod resource_distribution_condition_type {
    /// A same-named resource not owned by this distribution already exists in a target.
    pub const CONFLICT_OCCURRED: &str = "ConflictOccurred";
    /// Some target namespaces do not exist.
    pub const NAMESPACE_NOT_EXISTS: &str = "NamespaceNotExists";
    /// Reading existing copies failed.
    pub const GET_RESOURCE_FAILED: &str = "GetResourceFailed";
    /// Creating copies failed.
    pub const CREATE_RESOURCE_FAILED: &str = "CreateResourceFailed";
    /// Updating copies failed.
    pub const UPDATE_RESOURCE_FAILED: &str = "UpdateResourceFailed";
    /// Deleting copies that are no longer targeted failed.
    pub const DELETE_RESOURCE_FAILED: &str = "DeleteResourceFailed";
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_resourcedistribution.yaml"
    ));

    #[test]
    fn resourcedistribution_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: ResourceDistribution = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(obj.metadata.namespace.is_none());
        assert_eq!(obj.spec.resource["kind"], "ConfigMap");
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }

    #[test]
    fn resourcedistribution_absent_optionals_stay_absent() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "ResourceDistribution",
            "metadata": {"name": "rd"},
            "spec": {
                "resource": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
                "targets": {"includedNamespaces": {"list": [{}]}}
            },
            "status": {"conditions": [{"type": "ConflictOccurred", "status": "False"}]}
        });
        let obj: ResourceDistribution = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(obj.spec.targets.all_namespaces, None);
        assert_eq!(serde_json::to_value(&obj).unwrap(), json);
    }
}
