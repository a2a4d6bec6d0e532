//! The PodProbeMarker controller's decisions, as plain functions (OpenKruise v1.9.0
//! `pkg/controller/podprobemarker/pod_probe_marker_controller.go` and
//! `podprobemarker_event_handler.go`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    ContainerProbe, NodePodProbeSpec, PodContainerProbe, PodProbe, PodProbeMarker,
    ProbeMarkerPolicy, probe_state,
};
use kruise_api::keys;
use kruise_api::pod::{CachedContainer, CachedPod};
use kruise_engines::podutil;
use kruise_engines::updatesort::selector_matches;

#[cfg(test)]
mod tests;

/// The name of a probe in a NodePodProbe: `<PodProbeMarker name>#<probe name>`.
pub fn probe_name(ppm: &str, probe: &str) -> String {
    format!("{ppm}#{probe}")
}

/// Whether a pod is one a PodProbeMarker probes (`getMatchingPods`' filter): active
/// (`controller.IsPodActive`), `Initialized` is `True`, and it is bound to a node.
pub fn probed(pod: &CachedPod) -> bool {
    podutil::is_active(pod)
        && podutil::is_condition_true(pod, "Initialized")
        && !node_name(pod).is_empty()
}

/// The pod's `spec.nodeName` (`""` when unbound).
pub fn node_name(pod: &CachedPod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// Whether node labels mark a virtual-kubelet node (`type=virtual-kubelet`).
pub fn is_virtual_kubelet(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels
        .and_then(|l| l.get(keys::VIRTUAL_KUBELET_LABEL))
        .is_some_and(|v| v == keys::VIRTUAL_KUBELET_LABEL_VALUE)
}

/// What a node is to the controller: absent (pods on it are skipped), normal (probed by its
/// kruise-daemon through the NodePodProbe) or virtual-kubelet (serverless: marked from the
/// pod's own conditions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// The node is not in the cache.
    Missing,
    /// A node with a kruise-daemon.
    Normal,
    /// A virtual-kubelet node.
    Serverless,
}

/// The pods of a PodProbeMarker (`getMatchingPods`): those of `pods` (its namespace) its
/// selector selects (as a list call with that selector: an empty selector selects all; an
/// invalid one nothing) that are [`probed`], split by the kind of their node; pods on a missing
/// node are left out.
pub fn matching_pods<'a, P: AsRef<CachedPod>>(
    ppm: &PodProbeMarker,
    pods: &'a [P],
    node: impl Fn(&str) -> NodeKind,
) -> (Vec<&'a CachedPod>, Vec<&'a CachedPod>) {
    let mut normal = Vec::new();
    let mut serverless = Vec::new();
    for pod in pods.iter().map(AsRef::as_ref) {
        if selector_matches(&ppm.spec.selector, pod.metadata.labels.as_ref()) != Some(true)
            || !probed(pod)
        {
            continue;
        }
        match node(node_name(pod)) {
            NodeKind::Missing => {}
            NodeKind::Normal => normal.push(pod),
            NodeKind::Serverless => serverless.push(pod),
        }
    }
    (normal, serverless)
}

/// Whether a PodProbeMarker applies to a pod, as the pod event handler asks
/// (`GetPodProbeMarkerForPod`): when the pod has annotation `kruise.io/podprobemarker-list`
/// (comma-separated names, set by the pod webhook for serverless pods) it is listed there;
/// otherwise its selector selects the pod, an empty or invalid selector selecting nothing.
pub fn applies_to(ppm: &PodProbeMarker, pod: &CachedPod) -> bool {
    let listed = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::POD_PROBE_MARKER_LIST))
        .filter(|s| !s.is_empty());
    if let Some(list) = listed {
        let name = ppm.metadata.name.as_deref().unwrap_or("");
        return list.split(',').any(|n| n == name);
    }
    let sel = &ppm.spec.selector;
    let empty = sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty);
    !empty && selector_matches(sel, pod.metadata.labels.as_ref()) == Some(true)
}

/// OpenKruise `util.ExtractPort` against a container's ports: a number as it is; a name looked
/// up among the container's named ports, else parsed as a number; the result must be in
/// 1..=65535.
pub fn extract_port(port: &IntOrString, container: &CachedContainer) -> Result<i32, String> {
    let value = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port)
            .or_else(|| name.parse::<i32>().ok())
            .ok_or_else(|| format!("couldn't find port: {name}"))?,
    };
    if value > 0 && value < 65536 {
        Ok(value)
    } else {
        Err(format!("invalid port number: {value}"))
    }
}

/// A probe as the NodePodProbe holds it for `pod` (`convertHttpGetProbeCheckPort` /
/// `convertTcpSocketProbeCheckPort`): a named `httpGet` or `tcpSocket` port is resolved against
/// the probe's container (`containers` only, as `GetPodContainerByName`). `Err` with OpenKruise's
/// message when the container or the port is not found (the probe is skipped for that pod).
pub fn resolve_probe(
    probe: &PodContainerProbe,
    pod: &CachedPod,
) -> Result<PodContainerProbe, String> {
    let mut out = probe.clone();
    let pod_ref = || {
        format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or(""),
            pod.metadata.name.as_deref().unwrap_or("")
        )
    };
    let container = || {
        pod.spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|c| c.name == probe.container_name))
    };
    let resolve = |port: &mut IntOrString| -> Result<(), String> {
        if matches!(port, IntOrString::Int(_)) {
            return Ok(());
        }
        let Some(c) = container() else {
            return Err(format!(
                "Failed to get container by name: {} in pod: {}",
                probe.container_name,
                pod_ref()
            ));
        };
        let n = extract_port(port, c).map_err(|_| {
            format!(
                "Failed to extract port for container: {} in pod: {}",
                c.name,
                pod_ref()
            )
        })?;
        *port = IntOrString::Int(n);
        Ok(())
    };
    if let Some(tcp) = out.probe.probe.tcp_socket.as_mut() {
        resolve(&mut tcp.port)?;
    }
    if let Some(http) = out.probe.probe.http_get.as_mut() {
        resolve(&mut http.port)?;
    }
    Ok(out)
}

fn container_probe(ppm_name: &str, probe: PodContainerProbe) -> ContainerProbe {
    ContainerProbe {
        name: probe_name(ppm_name, &probe.name),
        container_name: probe.container_name,
        probe: probe.probe,
    }
}

/// Adds a PodProbeMarker's probes for `pods` (all on the NodePodProbe's node) to its spec, as
/// `updateNodePodProbes`: a pod already listed (same name, namespace and UID) gets its IP if it
/// had none and each probe added or replaced by name; a pod not listed is appended with its IP
/// and the probes. A probe whose port cannot be resolved is left out for that pod. Returns
/// whether the spec changed.
pub fn add_probes(spec: &mut NodePodProbeSpec, ppm: &PodProbeMarker, pods: &[&CachedPod]) -> bool {
    let before = spec.clone();
    let ppm_name = ppm.metadata.name.as_deref().unwrap_or("");
    let entries = spec.pod_probes.get_or_insert_with(Vec::new);
    for pod in pods {
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.as_deref())
            .unwrap_or("");
        let resolved = ppm
            .spec
            .probes
            .iter()
            .filter_map(|p| resolve_probe(p, pod).ok())
            .map(|p| container_probe(ppm_name, p));
        if let Some(entry) = entries
            .iter_mut()
            .find(|e| e.name == name && e.namespace == namespace && e.uid == uid)
        {
            if entry.ip.is_empty() {
                entry.ip = ip.to_owned();
            }
            let probes = entry.probes.get_or_insert_with(Vec::new);
            for new in resolved {
                match probes.iter_mut().find(|p| p.name == new.name) {
                    Some(p) => *p = new,
                    None => probes.push(new),
                }
            }
            if probes.is_empty() {
                entry.probes = None;
            }
        } else {
            let probes: Vec<_> = resolved.collect();
            entries.push(PodProbe {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                uid: uid.to_owned(),
                ip: ip.to_owned(),
                probes: (!probes.is_empty()).then_some(probes),
            });
        }
    }
    if entries.is_empty() {
        spec.pod_probes = None;
    }
    *spec != before
}

/// A NodePodProbe spec without a deleted PodProbeMarker's probes
/// (`removePodProbeFromNodePodProbe`): of the pods in the marker's namespace, the probes whose
/// name contains `<marker>#` are removed, and pods left without probes are dropped.
pub fn remove_probes(spec: &NodePodProbeSpec, namespace: &str, ppm_name: &str) -> NodePodProbeSpec {
    let marker = format!("{ppm_name}#");
    let mut out = Vec::new();
    for entry in spec.pod_probes.iter().flatten() {
        if entry.namespace != namespace {
            out.push(entry.clone());
            continue;
        }
        let probes: Vec<_> = entry
            .probes
            .iter()
            .flatten()
            .filter(|p| !p.name.contains(&marker))
            .cloned()
            .collect();
        if !probes.is_empty() {
            out.push(PodProbe {
                probes: Some(probes),
                ..entry.clone()
            });
        }
    }
    NodePodProbeSpec {
        pod_probes: (!out.is_empty()).then_some(out),
    }
}

/// Whether a probed pod on a normal node needs a pass of a PodProbeMarker that applies to it:
/// it is not in its NodePodProbe (`spec` of its node; none: no pass, there is nowhere to add it)
/// with its UID, or is listed without an IP while it has one now, or lacks one of the marker's
/// probes. (OpenKruise reconciles on the `Initialized` transition and on an IP change; the
/// shared cache hands over only the new pod, so the need itself is checked.)
pub fn pod_needs_pass(
    pod: &CachedPod,
    spec: Option<&NodePodProbeSpec>,
    ppm: &PodProbeMarker,
) -> bool {
    let Some(spec) = spec else {
        return false;
    };
    let uid = pod.metadata.uid.as_deref().unwrap_or("");
    let Some(entry) = spec.pod_probes.iter().flatten().find(|e| e.uid == uid) else {
        return true;
    };
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .unwrap_or("");
    if entry.ip.is_empty() && !ip.is_empty() {
        return true;
    }
    let ppm_name = ppm.metadata.name.as_deref().unwrap_or("");
    ppm.spec.probes.iter().any(|p| {
        let name = probe_name(ppm_name, &p.name);
        !entry.probes.iter().flatten().any(|e| e.name == name)
    })
}

/// `podConditionType` → `markerPolicy` of a marker's probes that have both.
pub fn markers(ppm: &PodProbeMarker) -> BTreeMap<&str, &[ProbeMarkerPolicy]> {
    ppm.spec
        .probes
        .iter()
        .filter_map(|p| {
            let cond = p.pod_condition_type.as_deref().filter(|c| !c.is_empty())?;
            let policy = p.marker_policy.as_deref().filter(|m| !m.is_empty())?;
            Some((cond, policy))
        })
        .collect()
}

/// The labels and annotations to set on a serverless pod (`markServerlessPod`): for each marked
/// condition the pod has, the policies whose state matches its status; only the entries that
/// differ from the pod's. `None` when nothing changes.
pub fn serverless_marks(
    pod: &CachedPod,
    markers: &BTreeMap<&str, &[ProbeMarkerPolicy]>,
) -> Option<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    for (cond, policies) in markers {
        let Some(condition) = podutil::get_condition(pod, cond) else {
            continue;
        };
        for policy in policies.iter() {
            if !probe_state::matches_condition_status(&policy.state, condition.status.as_str()) {
                continue;
            }
            for (k, v) in policy.annotations.iter().flatten() {
                annotations.insert(k.clone(), v.clone());
            }
            for (k, v) in policy.labels.iter().flatten() {
                labels.insert(k.clone(), v.clone());
            }
        }
    }
    let differ = |want: &mut BTreeMap<String, String>, have: Option<&BTreeMap<String, String>>| {
        want.retain(|k, v| have.and_then(|h| h.get(k)) != Some(v));
    };
    differ(&mut labels, pod.metadata.labels.as_ref());
    differ(&mut annotations, pod.metadata.annotations.as_ref());
    (!labels.is_empty() || !annotations.is_empty()).then_some((labels, annotations))
}
