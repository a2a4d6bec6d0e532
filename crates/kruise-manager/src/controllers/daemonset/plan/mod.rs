//! Pure decisions of the Advanced DaemonSet controller (OpenKruise v1.9.0
//! `pkg/controller/daemonset`, a fork of the upstream DaemonSet controller): which nodes should
//! run a daemon pod, how a pod is bound to its node, which pods of a node to keep, which nodes
//! the rolling update visits, and the status. No I/O; the caller passes `now`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    Taint, Toleration,
};
use kruise_api::apps::v1beta1::{DaemonSet, DaemonSetStatus};
use kruise_api::pod::CachedPod;
use kruise_engines::lifecycle::{self, LifecycleState};
use kruise_engines::podutil;

/// `controller-revision-hash`: the revision (hash) a daemon pod was made from.
pub const HASH_LABEL: &str = "controller-revision-hash";
/// The pod's InPlaceUpdateReady readiness gate / condition.
pub const IN_PLACE_UPDATE_READY: &str = "InPlaceUpdateReady";

// ---------------------------------------------------------------------------------------------
// Eligibility (daemonset_util.go nodeShouldRunDaemonPod, dsutil.AddOrUpdateDaemonPodTolerations)

fn toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some(effect.to_owned()),
        ..Default::default()
    }
}

/// Upstream `AddOrUpdateDaemonPodTolerations`: the tolerations every daemon pod gets, in
/// order: not-ready and unreachable (NoExecute), disk/memory/pid pressure and unschedulable
/// (NoSchedule), and network-unavailable (NoSchedule) with `hostNetwork`. An equal toleration
/// is kept, one matching in key/effect/operator/value but otherwise different is replaced in
/// place, others are appended.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut wanted = vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        wanted.push(toleration(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    let list = spec.tolerations.get_or_insert_with(Vec::new);
    for t in wanted {
        let same = |x: &Toleration| {
            x.key == t.key && x.effect == t.effect && x.operator == t.operator && x.value == t.value
        };
        match list.iter().position(same) {
            Some(i) if list[i] == t => {}
            Some(i) => list[i] = t,
            None => list.push(t),
        }
    }
}

/// Whether toleration `t` tolerates `taint` (upstream `ToleratesTaint`; `tolerationSeconds`
/// ignored).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t.effect.as_deref().unwrap_or("").is_empty()
        || t.effect.as_deref() == Some(taint.effect.as_str());
    let key_ok =
        t.key.as_deref().unwrap_or("").is_empty() || t.key.as_deref() == Some(taint.key.as_str());
    let op_ok = match t.operator.as_deref().unwrap_or("") {
        "Exists" => true,
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    };
    effect_ok && key_ok && op_ok
}

fn label_requirement_matches(
    r: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> Option<bool> {
    let values = r.values.as_deref().unwrap_or_default();
    let v = labels.get(&r.key);
    Some(match r.operator.as_str() {
        "In" if !values.is_empty() => v.is_some_and(|v| values.contains(v)),
        "NotIn" if !values.is_empty() => v.is_none_or(|v| !values.contains(v)),
        "Exists" if values.is_empty() => v.is_some(),
        "DoesNotExist" if values.is_empty() => v.is_none(),
        "Gt" | "Lt" if values.len() == 1 => {
            let want: i64 = values[0].parse().ok()?;
            let Some(have) = v.and_then(|v| v.parse::<i64>().ok()) else {
                return Some(false);
            };
            if r.operator == "Gt" {
                have > want
            } else {
                have < want
            }
        }
        _ => return None,
    })
}

fn field_requirement_matches(r: &NodeSelectorRequirement, node: &str) -> Option<bool> {
    let values = r.values.as_deref().unwrap_or_default();
    if r.key != "metadata.name" || values.len() != 1 {
        return None;
    }
    match r.operator.as_str() {
        "In" => Some(values[0] == node),
        "NotIn" => Some(values[0] != node),
        _ => None,
    }
}

/// Upstream `nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`: `nodeSelector` labels, and
/// the required node affinity terms ORed (empty terms dropped; none left means no match; a term
/// that does not parse matches nothing).
pub fn required_affinity_matches(spec: &PodSpec, node: &Node) -> bool {
    selector_and_affinity_match(spec.node_selector.as_ref(), spec.affinity.as_ref(), node)
}

/// [`required_affinity_matches`] of a `nodeSelector` and an `affinity` given apart (a pod's own
/// affinity beside its template's selector, without building a spec).
pub fn selector_and_affinity_match(
    node_selector: Option<&BTreeMap<String, String>>,
    affinity: Option<&Affinity>,
    node: &Node,
) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let name = node.metadata.name.as_deref().unwrap_or("");
    if let Some(sel) = node_selector
        && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let Some(required) = affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return true;
    };
    required
        .node_selector_terms
        .iter()
        .filter(|t| {
            t.match_expressions.as_ref().is_some_and(|e| !e.is_empty())
                || t.match_fields.as_ref().is_some_and(|f| !f.is_empty())
        })
        .any(|t| {
            let exprs = t
                .match_expressions
                .iter()
                .flatten()
                .map(|r| label_requirement_matches(r, labels))
                .collect::<Option<Vec<bool>>>();
            let fields = t
                .match_fields
                .iter()
                .flatten()
                .map(|r| field_requirement_matches(r, name))
                .collect::<Option<Vec<bool>>>();
            match (exprs, fields) {
                (Some(e), Some(f)) => e.into_iter().chain(f).all(|b| b),
                _ => false,
            }
        })
}

/// OpenKruise `nodeShouldRunDaemonPod`: `(should run, should continue running)` for the
/// simulated pod `spec` (template spec with the daemon tolerations) on `node`. Node readiness
/// and cordoning are not criteria; an untolerated NoSchedule taint keeps existing pods, an
/// untolerated NoExecute one does not.
pub fn should_run(node: &Node, spec: &PodSpec) -> (bool, bool) {
    let name = node.metadata.name.as_deref().unwrap_or("");
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty())
        && n != name
    {
        return (false, false);
    }
    if !required_affinity_matches(spec, node) {
        return (false, false);
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    let untolerated = |effect: &str| {
        node.spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| t.effect == effect)
            .any(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
    };
    let no_execute = untolerated("NoExecute");
    if no_execute || untolerated("NoSchedule") {
        return (false, !no_execute);
    }
    (true, true)
}

// ---------------------------------------------------------------------------------------------
// Binding and node mapping

/// Binds a daemon pod to `node` (upstream `ReplaceDaemonSetPodNodeNameNodeAffinity` when the
/// scheduler binds it, the default; else `spec.nodeName`): the required node affinity becomes
/// the single term `metadata.name In [node]`, other affinity left as it is.
pub fn bind_to_node(spec: &mut PodSpec, node: &str, by_scheduler: bool) {
    if !by_scheduler {
        spec.scheduler_name = Some("kubernetes.io/daemonset-controller".to_owned());
        spec.node_name = Some(node.to_owned());
        return;
    }
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".to_owned(),
            operator: "In".to_owned(),
            values: Some(vec![node.to_owned()]),
        }]),
        ..Default::default()
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    na.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
}

/// Upstream `GetTargetNodeName`: `spec.nodeName`, else the single `metadata.name In` value of
/// the required node affinity's match fields.
pub fn target_node(pod: &CachedPod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(n.to_owned());
    }
    spec.affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| r.key == "metadata.name" && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([one]) => Some(one.clone()),
            _ => None,
        })
}

/// Upstream `podByCreationTimestampAndPhase`: scheduled pods first, then by creation time,
/// then by name.
pub fn creation_order(a: &CachedPod, b: &CachedPod) -> Ordering {
    let scheduled = |p: &CachedPod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    scheduled(b)
        .cmp(&scheduled(a))
        .then_with(|| {
            let t = |p: &CachedPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The pod's hash label.
pub fn pod_hash(pod: &CachedPod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .map_or("", String::as_str)
}

/// Whether the pod is on revision `hash` (upstream `IsPodUpdated`, without the deprecated
/// template generation).
pub fn is_updated(pod: &CachedPod, hash: &str) -> bool {
    !hash.is_empty() && pod_hash(pod) == hash
}

fn is_preparing_delete(pod: &CachedPod) -> bool {
    lifecycle::pod_state(pod) == Some(LifecycleState::PreparingDelete)
}

/// Upstream `findUpdatedPodsOnNode`: the node's non-terminating new and old pod; `None` when
/// there is more than one of either.
pub fn updated_pods_on_node<'a>(
    pods: &[&'a CachedPod],
    hash: &str,
) -> Option<(Option<&'a CachedPod>, Option<&'a CachedPod>)> {
    let (mut new, mut old) = (None, None);
    for p in pods.iter().copied().filter(|p| !podutil::is_terminating(p)) {
        let slot = if is_updated(p, hash) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(p);
    }
    Some((new, old))
}

/// Upstream `IsPodAvailable`: Ready, and ready for `min_ready_seconds` (strictly).
pub fn is_available(pod: &CachedPod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    podutil::is_available(pod, min_ready_seconds, now)
}

/// How long until a ready pod becomes available (`None`: it is, or is not ready).
pub fn until_available(
    pod: &CachedPod,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> Option<Duration> {
    if min_ready_seconds <= 0 || !podutil::is_pod_ready(pod) {
        return None;
    }
    let ltt = podutil::get_condition(pod, podutil::POD_READY)
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    let Some(ltt) = ltt else {
        return Some(Duration::from_secs(min_ready_seconds as u64));
    };
    let at = ltt + jiff::SignedDuration::from_secs(i64::from(min_ready_seconds));
    let wait = at.duration_since(now);
    wait.is_positive()
        .then(|| Duration::from_millis(wait.as_millis().max(1) as u64))
}

// ---------------------------------------------------------------------------------------------
// One node's pods (podsShouldBeOnNode)

/// What one node needs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct NodePlan {
    /// Create a daemon pod here.
    pub create: bool,
    /// Pods to delete (names).
    pub delete: Vec<String>,
    /// Failed pods deleted now (their node's backoff grows): names.
    pub failed: Vec<String>,
    /// Failed pods waiting for their node's backoff: when to look again.
    pub backoff_wait: Option<Duration>,
    /// A surge pod becoming available: when to look again.
    pub wait: Option<Duration>,
}

/// What OpenKruise `podsShouldBeOnNode` decides one node's pods by, besides the pods: the
/// node's eligibility (`nodeShouldRunDaemonPod`), the rollout and the node's failed-pod backoff.
#[derive(Debug, Clone, Copy)]
pub struct NodeInputs<'a> {
    /// A daemon pod should run on the node.
    pub should_run: bool,
    /// The pods on the node may keep running.
    pub should_continue: bool,
    /// The rolling update surges (`maxSurge`).
    pub surge: bool,
    /// The hash of the update revision.
    pub hash: &'a str,
    /// The DaemonSet's `minReadySeconds`.
    pub min_ready_seconds: i32,
    /// The time of the pass.
    pub now: jiff::Timestamp,
    /// How long the node's failed pods still wait (`None`: delete them now).
    pub backoff: Option<Duration>,
}

/// OpenKruise `podsShouldBeOnNode` for one node. `pods` are the daemon pods targeting it.
pub fn plan_node(pods: &[&CachedPod], node: &NodeInputs<'_>) -> NodePlan {
    let NodeInputs {
        should_run,
        should_continue,
        surge,
        hash,
        min_ready_seconds,
        now,
        backoff,
    } = *node;
    let mut plan = NodePlan::default();
    let exists = !pods.is_empty();
    if should_run && !exists {
        plan.create = true;
        return plan;
    }
    if !should_continue {
        if exists {
            plan.delete = pods
                .iter()
                .filter(|p| !podutil::is_terminating(p))
                .filter_map(|p| p.metadata.name.clone())
                .collect();
        }
        return plan;
    }
    let mut running: Vec<&CachedPod> = Vec::new();
    for p in pods.iter().copied() {
        if podutil::is_terminating(p) {
            continue;
        }
        if podutil::phase(p) == podutil::PHASE_FAILED {
            match backoff {
                Some(wait) => plan.backoff_wait = Some(wait),
                None => plan.failed.extend(p.metadata.name.clone()),
            }
            continue;
        }
        if is_preparing_delete(p) {
            plan.delete.extend(p.metadata.name.clone());
            continue;
        }
        running.push(p);
    }
    running.sort_by(|a, b| creation_order(a, b));
    if !surge {
        if running.len() > 1 {
            plan.delete
                .extend(running[1..].iter().filter_map(|p| p.metadata.name.clone()));
        }
        return plan;
    }
    if running.is_empty() && should_run {
        plan.create = true;
        return plan;
    }
    if running.len() <= 1 {
        return plan;
    }
    let oldest_new = running.iter().position(|p| pod_hash(p) == hash);
    let oldest_old = running.iter().position(|p| pod_hash(p) != hash);
    for (i, p) in running.iter().enumerate() {
        if Some(i) != oldest_new && Some(i) != oldest_old {
            plan.delete.extend(p.metadata.name.clone());
        }
    }
    if let (Some(n), Some(o)) = (oldest_new, oldest_old) {
        let (new, old) = (running[n], running[o]);
        if !podutil::is_pod_ready(old) || is_available(new, min_ready_seconds, now) {
            plan.delete.extend(old.metadata.name.clone());
        } else if podutil::is_pod_ready(new) && min_ready_seconds > 0 {
            plan.wait = until_available(new, min_ready_seconds, now)
                .or(Some(Duration::from_secs(min_ready_seconds as u64)));
        }
    }
    plan
}

/// OpenKruise `GetNodesNeedingPods` (only with a non-zero partition): nodes sorted by name; with
/// `partitioned_scaling`, at most `desired - updated - partition` of them.
pub fn nodes_needing_pods(
    new_pod_count: i64,
    desired: i64,
    partition: i64,
    partitioned_scaling: bool,
    mut nodes: Vec<String>,
) -> Vec<String> {
    nodes.sort();
    if !partitioned_scaling {
        return nodes;
    }
    let p = partition.clamp(0, desired);
    let max_create = (desired - new_pod_count - p).max(0) as usize;
    nodes.truncate(max_create.min(nodes.len()));
    nodes
}

// ---------------------------------------------------------------------------------------------
// Rolling update (daemonset_update.go)

/// Which nodes the rolling update may touch (OpenKruise `filterDaemonPodsNodeToUpdate`): nodes
/// already updated or being replaced first, then the others (only those the rollout's node
/// `selector` matches, when it has one) in descending name order, at most `nodes - partition`.
pub fn nodes_to_update(
    node_pods: &BTreeMap<String, Vec<&CachedPod>>,
    hash: &str,
    partition: i64,
    selector_matches: Option<&dyn Fn(&str) -> bool>,
) -> Vec<String> {
    let (mut updated, mut updating, mut selected, mut rest) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (node, pods) in node_pods.iter().rev() {
        match updated_pods_on_node(pods, hash) {
            None | Some((Some(_), _)) => updated.push(node.clone()),
            Some((None, old)) => {
                if old.is_none_or(is_preparing_delete) {
                    updating.push(node.clone());
                } else if let Some(m) = selector_matches {
                    if m(node) {
                        selected.push(node.clone());
                    }
                } else {
                    rest.push(node.clone());
                }
            }
        }
    }
    let max_update = node_pods.len() as i64 - partition;
    if max_update <= 0 {
        return Vec::new();
    }
    let mut sorted = updated;
    sorted.extend(updating);
    if selector_matches.is_some() {
        sorted.extend(selected);
    } else {
        sorted.extend(rest);
    }
    sorted.truncate(max_update as usize);
    sorted
}

/// What the no-surge rolling update does (OpenKruise `rollingUpdate`, `maxSurge == 0`): old pods
/// to replace — every unavailable one, and available ones while fewer than `max_unavailable` of
/// the visited nodes are unavailable (nodes visited in name order; OpenKruise visits a Go map).
pub fn old_pods_to_replace(
    nodes: &[String],
    node_pods: &BTreeMap<String, Vec<&CachedPod>>,
    hash: &str,
    max_unavailable: i64,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> Vec<String> {
    let mut unavailable = 0i64;
    let mut allowed = Vec::new();
    let mut candidates = Vec::new();
    let none: Vec<&CachedPod> = Vec::new();
    for node in nodes {
        let pods = node_pods.get(node).unwrap_or(&none);
        let Some((new, old)) = updated_pods_on_node(pods, hash) else {
            unavailable += 1;
            continue;
        };
        let gone = |p: Option<&CachedPod>| p.is_none_or(is_preparing_delete);
        if (gone(old) && gone(new)) || (new.is_some() && old.is_some() && !gone(new) && !gone(old))
        {
            unavailable += 1;
        } else if let Some(new) = new {
            if !is_available(new, min_ready_seconds, now) {
                unavailable += 1;
            }
            if is_preparing_delete(new) {
                unavailable += 1;
            }
        } else if let Some(old) = old {
            if !is_available(old, min_ready_seconds, now) {
                allowed.extend(old.metadata.name.clone());
            } else if unavailable >= max_unavailable {
                continue;
            } else {
                candidates.extend(old.metadata.name.clone());
            }
        }
    }
    let remaining = (max_unavailable - unavailable).clamp(0, candidates.len() as i64) as usize;
    allowed.extend(candidates.into_iter().take(remaining));
    allowed
}

/// What the surge rolling update does (OpenKruise `rollingUpdate`, `maxSurge > 0`): old pods to
/// delete (their new pod is available) and nodes to get a new pod beside the old one.
pub fn surge_plan(
    nodes: &[String],
    node_pods: &BTreeMap<String, Vec<&CachedPod>>,
    hash: &str,
    max_surge: i64,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> (Vec<String>, Vec<String>) {
    let mut surge = 0i64;
    let mut delete = Vec::new();
    let mut allowed_new = Vec::new();
    let mut candidates = Vec::new();
    let none: Vec<&CachedPod> = Vec::new();
    for node in nodes {
        let pods = node_pods.get(node).unwrap_or(&none);
        let Some((new, old)) = updated_pods_on_node(pods, hash) else {
            surge += 1;
            continue;
        };
        let Some(old) = old.filter(|o| !is_preparing_delete(o)) else {
            continue;
        };
        match new {
            None => {
                if !is_available(old, min_ready_seconds, now) {
                    allowed_new.push(node.clone());
                } else if surge < max_surge {
                    candidates.push(node.clone());
                }
            }
            Some(new) => {
                if !is_available(new, min_ready_seconds, now) || is_preparing_delete(new) {
                    surge += 1;
                } else {
                    delete.extend(old.metadata.name.clone());
                }
            }
        }
    }
    let remaining = (max_surge - surge).clamp(0, candidates.len() as i64) as usize;
    allowed_new.extend(candidates.into_iter().take(remaining));
    (delete, allowed_new)
}

// ---------------------------------------------------------------------------------------------
// Status

/// Whether a daemon pod counts as available in the status (`isDaemonPodAvailable`): available,
/// and its InPlaceUpdateReady condition (when it has the gate and the condition) True.
pub fn is_daemon_pod_available(
    pod: &CachedPod,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> bool {
    if !is_available(pod, min_ready_seconds, now) {
        return false;
    }
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY));
    !gated
        || podutil::get_condition(pod, IN_PLACE_UPDATE_READY)
            .is_none_or(|c| c.status == podutil::CONDITION_TRUE)
}

/// The status counters (OpenKruise `updateDaemonSetStatus`): per node with pods, its oldest pod
/// decides ready / available / updated.
pub fn status_counts(
    nodes: &[(String, bool)],
    node_pods: &BTreeMap<String, Vec<&CachedPod>>,
    hash: &str,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> DaemonSetStatus {
    let mut st = DaemonSetStatus::default();
    for (node, should_run) in nodes {
        let pods = node_pods.get(node).filter(|p| !p.is_empty());
        if *should_run {
            st.desired_number_scheduled += 1;
            if let Some(pods) = pods {
                st.current_number_scheduled += 1;
                let mut sorted = pods.clone();
                sorted.sort_by(|a, b| creation_order(a, b));
                let oldest = sorted[0];
                if podutil::is_pod_ready(oldest) {
                    st.number_ready += 1;
                    if is_daemon_pod_available(oldest, min_ready_seconds, now) {
                        *st.number_available.get_or_insert(0) += 1;
                    }
                }
                if is_updated(oldest, hash) {
                    st.updated_number_scheduled += 1;
                }
            }
        } else if pods.is_some() {
            st.number_misscheduled += 1;
        }
    }
    let available = st.number_available.unwrap_or(0);
    st.number_available = Some(available);
    st.number_unavailable = Some(st.desired_number_scheduled - available);
    st.update_revision = Some(hash.to_owned());
    st
}

/// Whether the rollout's strategy allows surge (`maxSurge` non-zero).
pub fn allows_surge(ds: &DaemonSet) -> bool {
    rolling(ds)
        .and_then(|r| r.max_surge.as_ref())
        .is_some_and(|v| kruise_engines::intstr::scaled_value(v, 1, true).is_ok_and(|n| n > 0))
}

/// The rolling update settings when the strategy is RollingUpdate.
pub fn rolling(ds: &DaemonSet) -> Option<&kruise_api::apps::v1beta1::RollingUpdateDaemonSet> {
    let s = ds.spec.update_strategy.as_ref()?;
    if s.type_.as_deref().unwrap_or("RollingUpdate") != "RollingUpdate" {
        return None;
    }
    s.rolling_update.as_ref()
}

/// Node names in `nodes` as a set.
pub fn names(nodes: &[&Node]) -> BTreeSet<String> {
    nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect()
}

#[cfg(test)]
mod tests;
