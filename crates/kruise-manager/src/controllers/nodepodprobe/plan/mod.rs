//! The NodePodProbe controller's decisions, as plain functions (OpenKruise v1.9.0
//! `pkg/controller/nodepodprobe/node_pod_probe_controller.go` and
//! `nodepodprobe_event_handler.go`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1alpha1::{NodePodProbeSpec, PodProbeMarker, PodProbeStatus, probe_state};
use kruise_api::pod::{CachedPod, CachedPodCondition};
use kruise_engines::podutil;

#[cfg(test)]
mod tests;

/// OpenKruise `isNodeReady`: the node's `Ready` condition is `True`.
pub fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// What a node asks of its NodePodProbe (`syncNodePodProbe`'s start and the node event
/// handler).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStep {
    /// Nothing: a virtual-kubelet node, or a node not ready without a NodePodProbe.
    Nothing,
    /// Create the node's NodePodProbe (named after it, empty).
    Create,
    /// Delete the NodePodProbe: the node is being deleted.
    Delete,
    /// Sync the existing NodePodProbe against the pods.
    Sync,
}

/// The step for `node` whose NodePodProbe exists (`has_probe`) or not.
pub fn node_step(node: &Node, has_probe: bool, virtual_kubelet: bool) -> NodeStep {
    if virtual_kubelet {
        return NodeStep::Nothing;
    }
    match (node.metadata.deletion_timestamp.is_some(), has_probe) {
        (true, true) => NodeStep::Delete,
        (true, false) => NodeStep::Nothing,
        (false, true) => NodeStep::Sync,
        (false, false) if is_node_ready(node) => NodeStep::Create,
        (false, false) => NodeStep::Nothing,
    }
}

/// The NodePodProbe spec without the pods that are gone (`syncPodFromNodePodProbe`): an entry
/// stays while `pod` finds an active pod of its namespace and name with its UID.
pub fn live_spec<P: AsRef<CachedPod>>(
    spec: &NodePodProbeSpec,
    pod: impl Fn(&str, &str) -> Option<P>,
) -> (NodePodProbeSpec, BTreeSet<String>) {
    let mut live = BTreeSet::new();
    let kept: Vec<_> = spec
        .pod_probes
        .iter()
        .flatten()
        .filter(|e| {
            let ok = pod(&e.namespace, &e.name).is_some_and(|p| {
                let p = p.as_ref();
                podutil::is_active(p) && p.metadata.uid.as_deref() == Some(e.uid.as_str())
            });
            if ok {
                live.insert(e.uid.clone());
            }
            ok
        })
        .cloned()
        .collect();
    (
        NodePodProbeSpec {
            pod_probes: (!kept.is_empty()).then_some(kept),
        },
        live,
    )
}

/// The changes probe results make to a pod (`updatePodProbeStatus`), only those the pod does
/// not show yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMarks {
    /// Conditions to set (replacing the one of the same type, as `SetPodConditionIfMsgChanged`:
    /// only when its status or message differs).
    pub conditions: Vec<CachedPodCondition>,
    /// Labels to set (`Some`) or remove (`None`).
    pub labels: BTreeMap<String, Option<String>>,
    /// Annotations to set (`Some`) or remove (`None`).
    pub annotations: BTreeMap<String, Option<String>>,
}

impl PodMarks {
    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.labels.is_empty() && self.annotations.is_empty()
    }

    /// `pod` with the changes made.
    pub fn apply(&self, pod: &CachedPod) -> CachedPod {
        let mut out = pod.clone();
        let status = out.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        for c in &self.conditions {
            match conditions.iter_mut().find(|have| have.type_ == c.type_) {
                Some(have) => *have = c.clone(),
                None => conditions.push(c.clone()),
            }
        }
        let edit = |map: &mut Option<BTreeMap<String, String>>,
                    changes: &BTreeMap<String, Option<String>>| {
            if changes.is_empty() {
                return;
            }
            let m = map.get_or_insert_with(BTreeMap::new);
            for (k, v) in changes {
                match v {
                    Some(v) => {
                        m.insert(k.clone(), v.clone());
                    }
                    None => {
                        m.remove(k);
                    }
                }
            }
        };
        edit(&mut out.metadata.labels, &self.labels);
        edit(&mut out.metadata.annotations, &self.annotations);
        out
    }
}

/// What the probe results of one pod (`status`, the NodePodProbe's entry for it) change on the
/// pod, as `updatePodProbeStatus`. For each probe state with a state, the marker
/// (`<marker>#<probe>`, in the pod's namespace, read by `marker`; gone or being deleted:
/// skipped) gives:
///
/// - its `podConditionType`: a condition `True` when the state is `Succeeded`, else `False`,
///   with the state's times and message; the first probe of a condition type wins;
/// - its `markerPolicy`: the policy of the state sets its labels and annotations, the other
///   policy removes its keys (a later probe's marks win over an earlier one's).
///
/// Only what differs from `pod` is returned.
pub fn pod_marks<M: AsRef<PodProbeMarker>>(
    pod: &CachedPod,
    status: &PodProbeStatus,
    marker: impl Fn(&str) -> Option<M>,
) -> PodMarks {
    let mut conditions: Vec<CachedPodCondition> = Vec::new();
    let mut seen_types = BTreeSet::new();
    let mut labels: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut annotations: BTreeMap<String, Option<String>> = BTreeMap::new();
    for state in status.probe_states.iter().flatten() {
        if state.state.is_empty() {
            continue;
        }
        let mut parts = state.name.split('#');
        let (Some(ppm_name), Some(probe_name)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(ppm) = marker(ppm_name) else {
            continue;
        };
        let ppm = ppm.as_ref();
        if ppm.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let probe = ppm.spec.probes.iter().find(|p| p.name == probe_name);
        let condition_type = probe
            .and_then(|p| p.pod_condition_type.as_deref())
            .unwrap_or("");
        let policies = probe
            .and_then(|p| p.marker_policy.as_deref())
            .unwrap_or(&[]);
        if !condition_type.is_empty() && seen_types.insert(condition_type.to_owned()) {
            let status = if state.state == probe_state::SUCCEEDED {
                podutil::CONDITION_TRUE
            } else {
                podutil::CONDITION_FALSE
            };
            conditions.push(CachedPodCondition {
                type_: condition_type.into(),
                status: status.into(),
                last_probe_time: state.last_probe_time.clone(),
                last_transition_time: state.last_transition_time.clone(),
                message: state
                    .message
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .map(Into::into),
                ..Default::default()
            });
        }
        if policies.is_empty() {
            continue;
        }
        let mut matched = None;
        let mut opposite = None;
        for p in policies {
            if p.state == state.state {
                matched = Some(p);
            } else {
                opposite = Some(p);
            }
        }
        if let Some(p) = opposite {
            for k in p.labels.iter().flatten().map(|(k, _)| k) {
                labels.insert(k.clone(), None);
            }
            for k in p.annotations.iter().flatten().map(|(k, _)| k) {
                annotations.insert(k.clone(), None);
            }
        }
        if let Some(p) = matched {
            for (k, v) in p.labels.iter().flatten() {
                labels.insert(k.clone(), Some(v.clone()));
            }
            for (k, v) in p.annotations.iter().flatten() {
                annotations.insert(k.clone(), Some(v.clone()));
            }
        }
    }
    let have_conditions = podutil::conditions(pod);
    conditions.retain(|c| {
        have_conditions
            .iter()
            .find(|h| h.type_ == c.type_)
            .is_none_or(|h| h.status != c.status || h.message != c.message)
    });
    let differ = |changes: &mut BTreeMap<String, Option<String>>,
                  have: Option<&BTreeMap<String, String>>| {
        changes.retain(|k, v| have.and_then(|h| h.get(k)) != v.as_ref());
    };
    differ(&mut labels, pod.metadata.labels.as_ref());
    differ(&mut annotations, pod.metadata.annotations.as_ref());
    PodMarks {
        conditions,
        labels,
        annotations,
    }
}

/// Whether a pod change asks a pass of its node's NodePodProbe (the pod event handler): the pod
/// is gone or no longer active while the NodePodProbe lists it (by namespace and name).
pub fn pod_leaves(pod: &CachedPod, deleted: bool, spec: &NodePodProbeSpec) -> bool {
    if !deleted && podutil::is_active(pod) {
        return false;
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let name = pod.metadata.name.as_deref().unwrap_or("");
    spec.pod_probes
        .iter()
        .flatten()
        .any(|e| e.namespace == namespace && e.name == name)
}
