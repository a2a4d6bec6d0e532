//! NodePodProbe, NPP (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0): the
//! custom probes kruise-daemon must run on one node, and their latest results.
//!
//! Cluster-scoped; one per node, named after the node. The PodProbeMarker controller writes the
//! spec (one entry per pod with probes), the daemon writes the status, and the NodePodProbe
//! controller turns the status into pod conditions, labels and annotations.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ContainerProbeSpec;

/// The desired state of a NodePodProbe: the probes of the pods on the node.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "NodePodProbe",
    plural = "nodepodprobes",
    singular = "nodepodprobe",
    status = "NodePodProbeStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A NodePodProbe lists the custom probes kruise-daemon runs on the node of the same name, with their results."
)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeSpec {
    /// One entry per pod on the node that has custom probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_probes: Option<Vec<PodProbe>>,
}

/// The custom probes of one pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbe {
    /// Name of the pod.
    pub name: String,

    /// Namespace of the pod.
    pub namespace: String,

    /// UID of the pod.
    pub uid: String,

    /// IP of the pod (target of tcpSocket and httpGet probes).
    #[serde(rename = "IP")]
    pub ip: String,

    /// The probes to run against the pod's containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<ContainerProbe>>,
}

/// One probe of a container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerProbe {
    /// `<PodProbeMarker name>#<probe name>`.
    pub name: String,

    /// Name of the container.
    pub container_name: String,

    /// The probe to run.
    pub probe: ContainerProbeSpec,
}

/// The observed state of a NodePodProbe, written by kruise-daemon.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeStatus {
    /// Latest results, one entry per pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_probe_statuses: Option<Vec<PodProbeStatus>>,
}

/// Latest probe results of one pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeStatus {
    /// Name of the pod.
    pub name: String,

    /// Namespace of the pod.
    pub namespace: String,

    /// UID of the pod.
    pub uid: String,

    /// One entry per probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_states: Option<Vec<ContainerProbeState>>,
}

/// Values of [`ContainerProbeState::state`] and of
/// [`ProbeMarkerPolicy::state`](super::ProbeMarkerPolicy::state).
pub mod probe_state {
    /// The probe passed (pod condition status `True`).
    pub const SUCCEEDED: &str = "Succeeded";
    /// The probe failed (pod condition status `False`).
    pub const FAILED: &str = "Failed";
    /// The result is not known (pod condition status `Unknown`).
    pub const UNKNOWN: &str = "Unknown";

    /// Whether a probe state corresponds to a pod condition status (`True`, `False`, anything
    /// else meaning unknown).
    pub fn matches_condition_status(state: &str, condition_status: &str) -> bool {
        match condition_status {
            "True" => state == SUCCEEDED,
            "False" => state == FAILED,
            _ => state == UNKNOWN,
        }
    }
}

/// Latest result of one probe.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerProbeState {
    /// `<PodProbeMarker name>#<probe name>`.
    pub name: String,

    /// `Succeeded`, `Failed` or `Unknown` (see [`probe_state`]).
    pub state: String,

    /// When the probe last ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,

    /// When the state last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,

    /// The probe's output on success, or its error on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_nodepodprobe.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let npp: NodePodProbe = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(npp.metadata.namespace.is_none());
        assert_eq!(npp.spec.pod_probes.as_ref().unwrap().len(), 1);
        assert_eq!(serde_json::to_value(&npp).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "NodePodProbe",
            "metadata": {"name": "node-1"},
            "spec": {"podProbes": [{"name": "p", "namespace": "ns", "uid": "u", "IP": "10.0.0.1"}]},
            "status": {"podProbeStatuses": [{"name": "p", "namespace": "ns", "uid": "u",
                        "probeStates": [{"name": "m#h", "state": "Unknown"}]}]}
        });
        let npp: NodePodProbe = serde_json::from_value(raw.clone()).unwrap();
        assert!(npp.spec.pod_probes.as_ref().unwrap()[0].probes.is_none());
        assert_eq!(serde_json::to_value(&npp).unwrap(), raw);
    }

    #[test]
    fn probe_state_matches_condition_status() {
        assert!(probe_state::matches_condition_status("Succeeded", "True"));
        assert!(probe_state::matches_condition_status("Failed", "False"));
        assert!(probe_state::matches_condition_status("Unknown", "Unknown"));
        assert!(!probe_state::matches_condition_status("Failed", "True"));
    }
}
