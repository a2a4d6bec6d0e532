//! PodDeletionFlowControl (`policy.kruise-rs.io/v1alpha1`, cluster-scoped): a limit on how many
//! pods may be deleted or evicted per time window across many workloads and namespaces — flow
//! control of pod deletion from OpenKruise's roadmap, which OpenKruise never shipped. The API
//! decision and its alternatives are in `docs/pod-deletion-flow-control.md`.
//!
//! The pod validating webhooks (`/validate-pod`: `vpod.kb.io` for DELETE, `vpodeviction.kb.io`
//! for `pods/eviction`) admit a deletion of a pod an object selects only while every one of its
//! `limits` has room, and record it in `status.admitted` with a status write bound to the
//! object's resourceVersion (so concurrent admissions, in one replica or several, never
//! over-spend a window). Its controller keeps `status.windows` current as time passes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a PodDeletionFlowControl: which deletions count and the limits per window.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.kruise-rs.io",
    version = "v1alpha1",
    kind = "PodDeletionFlowControl",
    plural = "poddeletionflowcontrols",
    singular = "poddeletionflowcontrol",
    shortname = "pdfc",
    status = "PodDeletionFlowControlStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A PodDeletionFlowControl limits how many pods may be deleted or evicted per time window across the namespaces and workloads it selects.",
    printcolumn(
        name = "Scope",
        type_ = "string",
        json_path = ".spec.scope",
        description = "Which pods count: KruiseWorkloads or AllWorkloads"
    ),
    printcolumn(
        name = "Windows",
        type_ = "string",
        json_path = ".status.summary",
        description = "Deletions used per window, e.g. 1m:7/20 1h:150/200"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PodDeletionFlowControlSpec {
    /// Which pods count: `KruiseWorkloads` (default: pods whose controller is an
    /// `apps.kruise.io` workload) or `AllWorkloads` (every pod, opt-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<FlowControlScope>,

    /// The namespaces the limit applies to, by label; absent or empty selects every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,

    /// Narrows the counted pods by label; absent or empty selects every pod in scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,

    /// The limits; a deletion is admitted only while every window has room.
    #[schemars(length(min = 1))]
    pub limits: Vec<DeletionLimit>,

    /// Deletions that are neither counted nor limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exempt: Option<FlowControlExemptions>,
}

/// Which pods a PodDeletionFlowControl counts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum FlowControlScope {
    /// Pods whose controller owner is a Kruise workload (`apps.kruise.io/*`).
    #[default]
    KruiseWorkloads,
    /// Every pod (including pods of Deployments, Jobs, and pods without an owner).
    AllWorkloads,
}

/// At most `maxDeletions` admitted deletions in any `window`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionLimit {
    /// The sliding window: an integer with unit `s`, `m`, `h` or `d` (`30s`, `1m`, `1h`, `1d`),
    /// or a Go-style sum of them (`1h30m`); at least 1s and at most 7d.
    #[schemars(regex(pattern = r"^([0-9]+(s|m|h|d))+$"))]
    pub window: String,
    /// Deletions admitted per window; 0 refuses every deletion in scope. At most 5,000: the
    /// admitted deletions of the longest window are kept in the status.
    #[schemars(range(min = 0, max = 5000))]
    pub max_deletions: i32,
}

/// Deletions a PodDeletionFlowControl does not count.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlowControlExemptions {
    /// Users (the admission request's `userInfo.username`, e.g.
    /// `system:serviceaccount:kube-system:cluster-autoscaler`) whose deletions pass uncounted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usernames: Vec<String>,
}

/// Observed state of a PodDeletionFlowControl: the admitted deletions and the room left.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodDeletionFlowControlStatus {
    /// The `metadata.generation` the windows were last computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Per limit (in `spec.limits` order): deletions admitted in the window ending now and the
    /// room left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<WindowStatus>,

    /// `windows` in one line for `kubectl get` (`1m:7/20 1h:150/200`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,

    /// The admitted deletions the windows count, oldest first; entries older than the longest
    /// window are pruned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admitted: Vec<AdmittedDeletion>,
}

/// One limit's state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowStatus {
    /// The limit's window, as in the spec.
    pub window: String,
    /// Deletions admitted in the window ending at the last status write.
    pub used: i32,
    /// `maxDeletions - used` (never below 0).
    pub remaining: i32,
}

/// One admitted deletion.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmittedDeletion {
    /// The pod, `<namespace>/<name>`.
    pub pod: String,
    /// The pod's UID (a pod deleted twice, e.g. a retried DELETE and an eviction, counts once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// When the deletion was admitted.
    pub time: Time,
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/policy.kruise-rs.io_v1alpha1_poddeletionflowcontrol.yaml"
    ));

    #[test]
    fn poddeletionflowcontrol_sample_round_trips() {
        let raw: serde_json::Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let obj: PodDeletionFlowControl = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert_eq!(obj.spec.limits.len(), 2);
        assert_eq!(obj.spec.scope, Some(FlowControlScope::KruiseWorkloads));
        assert_eq!(serde_json::to_value(&obj).unwrap(), raw);
    }
}
