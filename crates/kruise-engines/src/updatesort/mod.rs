//! Pod orderings shared by the workloads, as pure functions over `&[&CachedPod]` returning indexes.
//!
//! - **Update order** ([`sort_update_indexes`], OpenKruise CloneSet `SortUpdateIndexes`): the
//!   upstream "active pods" order ([`active_pods_cmp`]: less ready/running first), then the
//!   [`UpdatePriorityStrategy`] ([`priority_sort`]), then the [`UpdateScatterStrategy`]
//!   ([`scatter_sort`]), and finally `PreparingUpdate` pods first.
//! - **Deletion order** ([`sort_for_deletion`], OpenKruise `ActivePodsWithRanks`): the first pod
//!   is the best one to delete.
//!
//! Ties: Go sorts with `sort.Slice`/`sort.Sort`, whose order among equal pods is unspecified;
//! here every sort is stable, so equal pods keep their input order.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use kruise_api::apps::common::{UpdatePriorityStrategy, UpdateScatterStrategy, UpdateScatterTerm};
use kruise_api::keys;
use kruise_api::pod::CachedPod;

use crate::{lifecycle, podutil};

// ---------------------------------------------------------------------------------------------
// Pod facts

fn node_name(pod: &CachedPod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

fn phase_ordinal(pod: &CachedPod) -> u8 {
    match podutil::phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        // Pending and every other phase (upstream map default)
        _ => 0,
    }
}

fn ready_time(pod: &CachedPod) -> Option<Timestamp> {
    podutil::conditions(pod)
        .iter()
        .find(|c| c.type_ == podutil::POD_READY && c.status == podutil::CONDITION_TRUE)
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

fn creation_time(pod: &CachedPod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// Upstream `afterOrZero` as an ordering: a missing time sorts first, then later times first.
fn later_or_missing_first(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

fn max_restarts(pod: &CachedPod) -> i32 {
    podutil::container_statuses(pod)
        .iter()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
        .max(0)
}

/// Highest restart count among restartable init containers (native sidecars).
fn max_sidecar_restarts(pod: &CachedPod) -> i32 {
    let Some(inits) = pod.spec.as_ref().and_then(|s| s.init_containers.as_ref()) else {
        return 0;
    };
    let sidecars: Vec<&str> = inits
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| sidecars.contains(&c.name.as_str()))
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
        .max(0)
}

/// `controller.kubernetes.io/pod-deletion-cost` of a pod: the annotation as a 32-bit integer;
/// 0 when absent or invalid (a leading `+`, leading zeros other than `"0"`, or out of range are
/// invalid, as upstream).
pub fn deletion_cost(pod: &CachedPod) -> i32 {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::POD_DELETION_COST))
    else {
        return 0;
    };
    let valid_first = match value.as_bytes().first() {
        Some(b'-') => true,
        Some(b'0') => value == "0",
        Some(b'1'..=b'9') => true,
        _ => false,
    };
    if !valid_first {
        return 0;
    }
    value.parse::<i32>().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Update order

/// Upstream `controller.ActivePods` order (Kubernetes 1.32, used by OpenKruise as the default
/// update order): unassigned < assigned; Pending (and other phases) < Unknown < Running;
/// not ready < ready; if both ready, more recently ready (or without a transition time) first;
/// more container restarts first, then more native-sidecar restarts first; without creation time
/// first, then newer first.
pub fn active_pods_cmp(a: &CachedPod, b: &CachedPod) -> Ordering {
    let (ra, rb) = (podutil::is_pod_ready(a), podutil::is_pod_ready(b));
    (!node_name(a).is_empty())
        .cmp(&!node_name(b).is_empty())
        .then_with(|| phase_ordinal(a).cmp(&phase_ordinal(b)))
        .then_with(|| ra.cmp(&rb))
        .then_with(|| {
            if ra && rb {
                later_or_missing_first(ready_time(a), ready_time(b))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| max_sidecar_restarts(b).cmp(&max_sidecar_restarts(a)))
        .then_with(|| later_or_missing_first(creation_time(a), creation_time(b)))
}

/// Label selector matching with OpenKruise's `ValidatedLabelSelectorAsSelector` semantics: an
/// empty selector matches everything; `matchLabels` need equal values; `In` needs the label with
/// one of the values, `NotIn` its absence or another value, `Exists` / `DoesNotExist` its
/// presence / absence. `None` for an unknown operator (the selector is invalid).
///
/// Matching is kube-core's [`Selector`](kube_core::Selector); the one difference from Go's
/// unvalidated conversion — `In`/`NotIn` without `values` (Go: an empty set; kube-core: an
/// error) — is bridged by treating missing values as empty.
pub fn selector_matches(
    selector: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<bool> {
    use kube_core::{Selector, SelectorExt};
    let mut selector = selector.clone();
    for expr in selector.match_expressions.iter_mut().flatten() {
        if matches!(expr.operator.as_str(), "In" | "NotIn") {
            expr.values.get_or_insert_with(Vec::new);
        }
    }
    let selector = Selector::try_from(selector).ok()?;
    let empty = BTreeMap::new();
    Some(selector.matches(labels.unwrap_or(&empty)))
}

/// OpenKruise `getIntFromStringSuffix`: the integer formed by the trailing ASCII digits of `v`
/// (`"sts-10"` → 10, `"5"` → 5); 0 without trailing digits or when they overflow `i64`.
pub fn int_suffix(v: &str) -> i64 {
    let digits = v.bytes().rev().take_while(u8::is_ascii_digit).count();
    v[v.len() - digits..].parse::<i64>().unwrap_or(0)
}

fn weight_priority(
    strategy: &UpdatePriorityStrategy,
    labels: Option<&BTreeMap<String, String>>,
) -> i64 {
    strategy
        .weight_priority
        .iter()
        .flatten()
        .filter(|t| selector_matches(&t.match_selector, labels) == Some(true))
        .map(|t| i64::from(t.weight))
        .sum()
}

/// `(term index, value)` of the first order term whose key the pod has; `(-1, 0)` without one.
fn order_priority(
    strategy: &UpdatePriorityStrategy,
    labels: Option<&BTreeMap<String, String>>,
) -> (i64, i64) {
    for (i, term) in strategy.order_priority.iter().flatten().enumerate() {
        if let Some(v) = labels.and_then(|l| l.get(&term.ordered_key)) {
            return (i as i64, int_suffix(v));
        }
    }
    (-1, 0)
}

/// Ordering of two pods' labels by an [`UpdatePriorityStrategy`] (OpenKruise `prioritySort`):
/// with `weightPriority`, the higher sum of matching term weights first (invalid selectors are
/// skipped); otherwise with `orderPriority`, the lower index of the first term whose key the pod
/// has first — **pods with none of the keys come before all others**, as in OpenKruise — and,
/// within a term, the higher [`int_suffix`] of the value first.
pub fn priority_cmp(
    strategy: &UpdatePriorityStrategy,
    a: Option<&BTreeMap<String, String>>,
    b: Option<&BTreeMap<String, String>>,
) -> Ordering {
    if strategy
        .weight_priority
        .as_ref()
        .is_some_and(|w| !w.is_empty())
    {
        weight_priority(strategy, b).cmp(&weight_priority(strategy, a))
    } else if strategy
        .order_priority
        .as_ref()
        .is_some_and(|o| !o.is_empty())
    {
        let (la, oa) = order_priority(strategy, a);
        let (lb, ob) = order_priority(strategy, b);
        la.cmp(&lb).then(ob.cmp(&oa))
    } else {
        Ordering::Equal
    }
}

/// Stable sort of `indexes` (into `pods`) by [`priority_cmp`]; unchanged without priority terms.
pub fn priority_sort(
    pods: &[&CachedPod],
    mut indexes: Vec<usize>,
    strategy: &UpdatePriorityStrategy,
) -> Vec<usize> {
    indexes.sort_by(|&i, &j| {
        priority_cmp(
            strategy,
            pods[i].metadata.labels.as_ref(),
            pods[j].metadata.labels.as_ref(),
        )
    });
    indexes
}

fn label_equals(pod: &CachedPod, term: &UpdateScatterTerm) -> bool {
    // An absent label reads as "" (a term with an empty value matches pods without the label).
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(&term.key))
        .map_or("", String::as_str)
        == term.value
}

/// Terms to apply, in order: a single term as is; otherwise the terms (deduplicated) that at
/// least one waiting pod carries (the label present with the value), most matched first, ties in
/// strategy order.
fn scatter_terms(
    pods: &[&CachedPod],
    indexes: &[usize],
    strategy: &[UpdateScatterTerm],
) -> Vec<UpdateScatterTerm> {
    if strategy.len() == 1 {
        return strategy.to_vec();
    }
    let mut terms: Vec<(UpdateScatterTerm, usize)> = Vec::new();
    for term in strategy {
        for &i in indexes {
            let carries = pods[i]
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&term.key))
                .is_some_and(|v| *v == term.value);
            if !carries {
                continue;
            }
            match terms
                .iter_mut()
                .find(|(t, _)| t.key == term.key && t.value == term.value)
            {
                Some((_, n)) => *n += 1,
                None => terms.push((term.clone(), 1)),
            }
        }
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.1));
    terms.into_iter().map(|(t, _)| t).collect()
}

#[derive(Debug, Default, PartialEq)]
struct ScatterGroup {
    group_num: usize,
    matched_size: usize,
    unmatched_size: usize,
    unmatched_remainder: usize,
}

fn go_round_div(a: usize, b: usize) -> usize {
    // Go: int(math.Round(float64(a) / float64(b))); b is never 0 here.
    (a as f64 / b as f64).round() as usize
}

fn scatter_group(matched: usize, unmatched: usize) -> ScatterGroup {
    let group_num = matched.min(unmatched).max(1);
    ScatterGroup {
        group_num,
        matched_size: go_round_div(matched, group_num),
        unmatched_size: go_round_div(unmatched, group_num),
        unmatched_remainder: 0,
    }
}

fn group_by_density(
    total_matched: usize,
    total_unmatched: usize,
    update_matched: usize,
    update_unmatched: usize,
) -> ScatterGroup {
    let update = scatter_group(update_matched, update_unmatched);
    // Go compares float32 ratios.
    let total_ratio = total_unmatched as f32 / total_matched as f32;
    let update_ratio = update_unmatched as f32 / update_matched as f32;
    if total_ratio >= update_ratio {
        return update;
    }
    let total = scatter_group(total_matched, total_unmatched);
    let (ms, us) = (total.matched_size.max(1), total.unmatched_size.max(1));
    let group_num = (update_matched / ms).min(update_unmatched / us);
    ScatterGroup {
        group_num,
        matched_size: ms,
        unmatched_size: us,
        unmatched_remainder: update_unmatched - group_num * us,
    }
}

fn migrate(src: &mut Vec<usize>, dst: &mut Vec<usize>, size: usize) {
    let n = size.min(src.len());
    dst.extend(src.drain(..n));
}

fn scatter_by_term(
    pods: &[&CachedPod],
    indexes: Vec<usize>,
    term: &UpdateScatterTerm,
) -> Vec<usize> {
    let (mut matched, mut unmatched): (Vec<usize>, Vec<usize>) =
        indexes.iter().partition(|&&i| label_equals(pods[i], term));
    if matched.len() <= 1 || unmatched.len() <= 1 {
        return indexes;
    }
    let total_matched = pods.iter().filter(|p| label_equals(p, term)).count();
    let total_unmatched = pods.len() - total_matched;

    // The last matched pod always goes to the very end.
    let last = matched.pop().unwrap_or_default();
    let group = group_by_density(
        total_matched - 1,
        total_unmatched,
        matched.len(),
        unmatched.len(),
    );
    let mut out = Vec::with_capacity(indexes.len());
    migrate(&mut unmatched, &mut out, group.unmatched_remainder);
    for _ in 0..group.group_num {
        migrate(&mut matched, &mut out, group.matched_size);
        migrate(&mut unmatched, &mut out, group.unmatched_size);
    }
    out.append(&mut matched);
    out.append(&mut unmatched);
    out.push(last);
    out
}

/// OpenKruise `scatterSort`: spreads the waiting pods carrying each scatter term's `key=value`
/// evenly through `indexes` (into `pods`, which must hold **all** of the workload's pods: the
/// spread density is computed over them), one term after the other (see the module docs).
/// Unchanged with no terms or at most one index.
pub fn scatter_sort(
    pods: &[&CachedPod],
    mut indexes: Vec<usize>,
    strategy: &[UpdateScatterTerm],
) -> Vec<usize> {
    if strategy.is_empty() || indexes.len() <= 1 {
        return indexes;
    }
    for term in scatter_terms(pods, &indexes, strategy) {
        indexes = scatter_by_term(pods, indexes, &term);
    }
    indexes
}

/// OpenKruise CloneSet `SortUpdateIndexes`: orders `wait` (indexes into `pods`, all the
/// workload's pods) for update — [`active_pods_cmp`], then [`priority_sort`] and
/// [`scatter_sort`] when given, then pods in lifecycle state `PreparingUpdate` first (stable).
pub fn sort_update_indexes(
    pods: &[&CachedPod],
    mut wait: Vec<usize>,
    priority: Option<&UpdatePriorityStrategy>,
    scatter: Option<&UpdateScatterStrategy>,
) -> Vec<usize> {
    wait.sort_by(|&i, &j| active_pods_cmp(pods[i], pods[j]));
    if let Some(p) = priority {
        wait = priority_sort(pods, wait, p);
    }
    if let Some(s) = scatter {
        wait = scatter_sort(pods, wait, s);
    }
    wait.sort_by_key(|&i| {
        lifecycle::pod_state(pods[i]) != Some(lifecycle::LifecycleState::PreparingUpdate)
    });
    wait
}

// ---------------------------------------------------------------------------------------------
// Deletion order

/// Upstream/OpenKruise `sameNodeRanker`: on every node with several of `pods`, the pods are
/// ordered by [`deletion_cmp`] (without ranks or availability); the last (most valuable) one is
/// dropped and the others get ranks `m, m-1, …, 1` in that order (`m` = pods on the node − 1), so
/// the pods most worth deleting on crowded nodes get the highest ranks. Others get 0. Returns one
/// rank per pod.
pub fn same_node_ranks(pods: &[&CachedPod]) -> Vec<f64> {
    let mut ranks = vec![0.0; pods.len()];
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in pods.iter().enumerate() {
        let node = node_name(p);
        if !node.is_empty() {
            by_node.entry(node).or_default().push(i);
        }
    }
    for (_, mut members) in by_node {
        if members.len() <= 1 {
            continue;
        }
        members.sort_by(|&i, &j| deletion_cmp(pods[i], pods[j], 0.0, 0.0, None));
        members.pop();
        let n = members.len();
        for (pos, i) in members.into_iter().enumerate() {
            ranks[i] = (n - pos) as f64;
        }
    }
    ranks
}

/// Topology key of one spread constraint used for ranking (OpenKruise `PodSpreadConstraint`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpreadConstraint {
    /// Node label defining the topology domains.
    pub topology_key: String,
    /// When non-empty, only these domain values count.
    pub limited_values: Vec<String>,
}

/// OpenKruise `spreadConstraintsRanker` (used when the pod template has
/// `topologySpreadConstraints`): for each constraint, the pods are grouped by the value of the
/// constraint's label on their node (`node_labels`: node name → labels; pods on unknown nodes or
/// nodes without the label are not ranked), each group is ordered by [`deletion_cmp`] (with the
/// [`same_node_ranks`] unless the key is `kubernetes.io/hostname`), and a pod at position `i` of
/// a group of `n` gains `(n - i) · ln(domains + 2)`. Returns one rank per pod.
pub fn spread_constraint_ranks(
    pods: &[&CachedPod],
    constraints: &[SpreadConstraint],
    node_labels: &HashMap<String, BTreeMap<String, String>>,
) -> Vec<f64> {
    let mut ranks = vec![0.0; pods.len()];
    // nodes in order of first appearance, and the pods on each
    let mut nodes: Vec<&str> = Vec::new();
    let mut on_node: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, p) in pods.iter().enumerate() {
        let node = node_name(p);
        if node.is_empty() || !node_labels.contains_key(node) {
            continue;
        }
        if !on_node.contains_key(node) {
            nodes.push(node);
        }
        on_node.entry(node).or_default().push(i);
    }
    let same_node = same_node_ranks(pods);
    for constraint in constraints {
        let mut domains: Vec<(&str, Vec<usize>)> = Vec::new();
        for node in &nodes {
            let Some(value) = node_labels
                .get(*node)
                .and_then(|l| l.get(&constraint.topology_key))
            else {
                continue;
            };
            if !constraint.limited_values.is_empty() && !constraint.limited_values.contains(value) {
                continue;
            }
            let members = on_node.get(node).cloned().unwrap_or_default();
            match domains.iter_mut().find(|(v, _)| *v == value.as_str()) {
                Some((_, d)) => d.extend(members),
                None => domains.push((value.as_str(), members)),
            }
        }
        let use_same_node = constraint.topology_key != "kubernetes.io/hostname";
        let weight = ((domains.len() + 2) as f64).ln();
        for (_, mut members) in domains {
            members.sort_by(|&i, &j| {
                let (ri, rj) = if use_same_node {
                    (same_node[i], same_node[j])
                } else {
                    (0.0, 0.0)
                };
                deletion_cmp(pods[i], pods[j], ri, rj, None)
            });
            let n = members.len();
            for (pos, i) in members.into_iter().enumerate() {
                ranks[i] += (n - pos) as f64 * weight;
            }
        }
    }
    ranks
}

/// OpenKruise `ActivePodsWithRanks` comparison of two pods with their ranks: unassigned <
/// assigned; Pending (and other phases) < Unknown < Running; if `available` is given, not
/// available < available; not ready < ready; lower [`deletion_cost`] first; higher rank first; if
/// both ready, more recently ready (or without a transition time) first; more container restarts
/// first; without creation time first, then newer first. `Less` = delete first.
pub fn deletion_cmp(
    a: &CachedPod,
    b: &CachedPod,
    rank_a: f64,
    rank_b: f64,
    available: Option<&dyn Fn(&CachedPod) -> bool>,
) -> Ordering {
    let (ra, rb) = (podutil::is_pod_ready(a), podutil::is_pod_ready(b));
    (!node_name(a).is_empty())
        .cmp(&!node_name(b).is_empty())
        .then_with(|| phase_ordinal(a).cmp(&phase_ordinal(b)))
        .then_with(|| available.map_or(Ordering::Equal, |f| f(a).cmp(&f(b))))
        .then_with(|| ra.cmp(&rb))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| rank_b.partial_cmp(&rank_a).unwrap_or(Ordering::Equal))
        .then_with(|| {
            if ra && rb {
                later_or_missing_first(ready_time(a), ready_time(b))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| later_or_missing_first(creation_time(a), creation_time(b)))
}

/// Stable deletion order of `pods` with precomputed `ranks` (one per pod, e.g.
/// [`same_node_ranks`] or [`spread_constraint_ranks`]) and an optional availability test:
/// indexes, best to delete first.
pub fn sort_for_deletion_with(
    pods: &[&CachedPod],
    ranks: &[f64],
    available: Option<&dyn Fn(&CachedPod) -> bool>,
) -> Vec<usize> {
    let rank = |i: usize| ranks.get(i).copied().unwrap_or(0.0);
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by(|&i, &j| deletion_cmp(pods[i], pods[j], rank(i), rank(j), available));
    order
}

/// Availability as OpenKruise's workloads judge it for scale-in and updates (CloneSet
/// `IsPodAvailable`): lifecycle state unset or `Normal`, phase `Running`,
/// available for `min_ready_seconds` at `now`, and the `InPlaceUpdateReady` condition `True`
/// when present.
pub fn available_in_lifecycle(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    lifecycle::is_normal_or_unset(pod)
        && podutil::is_running_and_available(pod, min_ready_seconds, now)
        && podutil::get_condition(pod, keys::IN_PLACE_UPDATE_READY)
            .is_none_or(|c| c.status == podutil::CONDITION_TRUE)
}

/// CloneSet scale-in order (OpenKruise `choosePodsToDelete` without topology spread
/// constraints): [`same_node_ranks`] and availability [`available_in_lifecycle`] with
/// `min_ready_seconds` = 0. Use [`sort_for_deletion_min_ready`] to pass the CloneSet's
/// `minReadySeconds`, or [`sort_for_deletion_with`] with [`spread_constraint_ranks`] when the
/// template has topology spread constraints.
pub fn sort_for_deletion(pods: &[&CachedPod], now: Timestamp) -> Vec<usize> {
    sort_for_deletion_min_ready(pods, now, 0)
}

/// [`sort_for_deletion`] with the workload's `minReadySeconds` (what OpenKruise passes).
pub fn sort_for_deletion_min_ready(
    pods: &[&CachedPod],
    now: Timestamp,
    min_ready_seconds: i32,
) -> Vec<usize> {
    let ranks = same_node_ranks(pods);
    let available = |p: &CachedPod| available_in_lifecycle(p, min_ready_seconds, now);
    sort_for_deletion_with(pods, &ranks, Some(&available))
}

#[cfg(test)]
mod tests;
