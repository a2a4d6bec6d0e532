//! The WorkloadSpread controller's decisions as plain functions (OpenKruise v1.9.0
//! `pkg/controller/workloadspread`: `calculateWorkloadSpreadSubsetStatus`, `rescheduleSubset`,
//! `syncSubsetPodDeletionCost`, `matchesSubset`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Affinity, Node, NodeAffinity, NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    WorkloadSpread, WorkloadSpreadSubset, WorkloadSpreadSubsetCondition, WorkloadSpreadSubsetStatus,
};
use kruise_api::pod::CachedPod;
use kruise_engines::podutil;
use kruise_webhook::pod::workloadspread::{self as ws_util, FAKE_SUBSET_NAME};

/// `CreatPodTimeout`: how long a pod stays in `creatingPods` without appearing.
pub const CREATE_POD_TIMEOUT: Duration = Duration::from_secs(30);
/// `DeletePodTimeout`: how long a pod stays in `deletingPods` while still existing.
pub const DELETE_POD_TIMEOUT: Duration = Duration::from_secs(15);
/// `MaxScheduledFailedDuration`: how long a subset stays unschedulable.
pub const MAX_SCHEDULED_FAILED: Duration = Duration::from_secs(300);
/// The subset condition type.
pub const SCHEDULABLE: &str = "Schedulable";

/// A warning the pass reports (`CreatePodFailed` / `DeletePodFailed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The Event reason.
    pub reason: &'static str,
    /// The pod name or identifier.
    pub pod: String,
}

/// What the pass learned beside the statuses.
#[derive(Debug, Default)]
pub struct Notes {
    /// Warnings to record as Events.
    pub warnings: Vec<Warning>,
    /// The earliest time a status entry expires (the pass comes back then).
    pub requeue: Option<Duration>,
}

impl Notes {
    fn push(&mut self, d: Duration) {
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }
}

fn since(t: &Time, now: jiff::Timestamp) -> Duration {
    now.duration_since(t.0).try_into().unwrap_or_default()
}

/// `calculateWorkloadSpreadSubsetStatus`: the status of `subset` from its pods and the old
/// status (`creatingPods` kept until the pod appears or [`CREATE_POD_TIMEOUT`],
/// `deletingPods` until it goes or [`DELETE_POD_TIMEOUT`]); `None` for a malformed limit.
pub fn subset_status(
    subset: &WorkloadSpreadSubset,
    pods: &[&CachedPod],
    old: Option<&WorkloadSpreadSubsetStatus>,
    replicas: i32,
    now: jiff::Timestamp,
    notes: &mut Notes,
) -> Option<WorkloadSpreadSubsetStatus> {
    let max = match &subset.max_replicas {
        None => -1,
        Some(m) => {
            let v = ws_util::scaled(m, replicas, true)?;
            if v < 0 {
                return None;
            }
            v as i32
        }
    };
    let mut st = WorkloadSpreadSubsetStatus {
        name: subset.name.clone(),
        missing_replicas: max,
        ..Default::default()
    };
    let mut creating: BTreeMap<String, Time> = old
        .and_then(|o| o.creating_pods.clone())
        .unwrap_or_default();
    let old_deleting = old.and_then(|o| o.deleting_pods.as_ref());
    let mut deleting = BTreeMap::new();
    let mut active = 0;
    for pod in pods {
        let inject = ws_util::injected(pod.metadata.annotations.as_ref());
        match inject.filter(|i| !i.uid.is_empty()) {
            Some(i) => creating.remove(&i.uid),
            None => creating.remove(pod.metadata.name.as_deref().unwrap_or("")),
        };
        if !podutil::is_active(pod) {
            continue;
        }
        active += 1;
        if st.missing_replicas > 0 {
            st.missing_replicas -= 1;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        if let Some(t) = old_deleting.and_then(|d| d.get(&name)) {
            let age = since(t, now);
            if age > DELETE_POD_TIMEOUT {
                notes.warnings.push(Warning {
                    reason: "DeletePodFailed",
                    pod: name,
                });
            } else {
                deleting.insert(name, t.clone());
                if st.missing_replicas < max {
                    st.missing_replicas += 1;
                }
                notes.push(DELETE_POD_TIMEOUT - age);
            }
        }
    }
    st.replicas = active;
    let mut kept = BTreeMap::new();
    for (id, t) in creating {
        let age = since(&t, now);
        if age > CREATE_POD_TIMEOUT {
            notes.warnings.push(Warning {
                reason: "CreatePodFailed",
                pod: id,
            });
        } else {
            if st.missing_replicas > 0 {
                st.missing_replicas -= 1;
            }
            notes.push(CREATE_POD_TIMEOUT - age);
            kept.insert(id, t);
        }
    }
    st.creating_pods = Some(kept);
    st.deleting_pods = Some(deleting);
    Some(st)
}

fn condition<'a>(
    s: Option<&'a WorkloadSpreadSubsetStatus>,
    type_: &str,
) -> Option<&'a WorkloadSpreadSubsetCondition> {
    s?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// `setWorkloadSpreadSubsetCondition`: replaces the condition of its type, keeping the old
/// transition time when the status did not change (and the whole old one when neither the
/// status nor the reason did).
pub fn set_condition(st: &mut WorkloadSpreadSubsetStatus, mut c: WorkloadSpreadSubsetCondition) {
    let list = st.conditions.get_or_insert_with(Vec::new);
    if let Some(cur) = list.iter().find(|x| x.type_ == c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    list.retain(|x| x.type_ != c.type_);
    list.push(c);
}

/// `NewWorkloadSpreadSubsetCondition`.
pub fn new_condition(status: &str, now: jiff::Timestamp) -> WorkloadSpreadSubsetCondition {
    WorkloadSpreadSubsetCondition {
        type_: SCHEDULABLE.to_string(),
        status: status.to_string(),
        last_transition_time: Some(Time(now)),
        reason: None,
        message: None,
    }
}

/// `GetTimeBeforePendingTimeout`: `(timed out, check again after)` for a pod pending
/// unschedulable since its creation.
pub fn pending_timeout(
    pod: &CachedPod,
    timeout: Duration,
    now: jiff::Timestamp,
) -> (bool, Option<Duration>) {
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    if pod.metadata.deletion_timestamp.is_some()
        || podutil::phase(pod) != "Pending"
        || node.is_some_and(|n| !n.is_empty())
    {
        return (false, None);
    }
    let unschedulable = podutil::conditions(pod).iter().any(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    if !unschedulable {
        return (false, None);
    }
    let Some(created) = pod.metadata.creation_timestamp.as_ref() else {
        return (false, None);
    };
    let age = since(created, now);
    if age > timeout {
        (true, None)
    } else {
        (false, Some(timeout - age))
    }
}

/// `rescheduleSubset`: the subset's pods that failed to schedule within
/// `rescheduleCriticalSeconds`, and its `Schedulable` condition (False while some did; back to
/// True [`MAX_SCHEDULED_FAILED`] after it turned False). The bool says the subset recovered (an
/// Event).
pub fn reschedule_subset<'a>(
    pods: &[&'a CachedPod],
    critical: Duration,
    st: &mut WorkloadSpreadSubsetStatus,
    old: Option<&WorkloadSpreadSubsetStatus>,
    now: jiff::Timestamp,
    notes: &mut Notes,
) -> (Vec<&'a CachedPod>, bool) {
    let mut failed = Vec::new();
    for p in pods {
        let (timed_out, after) = pending_timeout(p, critical, now);
        if let Some(a) = after {
            notes.push(a);
        }
        if timed_out {
            failed.push(*p);
        }
    }
    let unschedulable = !failed.is_empty();
    let Some(old_c) = condition(old, SCHEDULABLE) else {
        set_condition(
            st,
            new_condition(if unschedulable { "False" } else { "True" }, now),
        );
        return (failed, false);
    };
    set_condition(st, old_c.clone());
    let mut recovered = false;
    if unschedulable {
        set_condition(st, new_condition("False", now));
    } else if old_c.status == "False" {
        let since_false = old_c
            .last_transition_time
            .as_ref()
            .map_or(MAX_SCHEDULED_FAILED, |t| since(t, now));
        if since_false > MAX_SCHEDULED_FAILED {
            recovered = true;
            set_condition(st, new_condition("True", now));
        } else {
            notes.push(MAX_SCHEDULED_FAILED - since_false);
        }
    }
    (failed, recovered)
}

/// `isEmptySubsetStatuses`.
pub fn is_empty(statuses: &[WorkloadSpreadSubsetStatus]) -> bool {
    statuses.iter().all(|s| {
        s.replicas == 0
            && s.creating_pods.as_ref().is_none_or(|m| m.is_empty())
            && s.deleting_pods.as_ref().is_none_or(|m| m.is_empty())
    })
}

/// `kubecontroller.ActivePods.Less`: the pod to delete first sorts first (unscheduled, then
/// pending, unknown, running; not ready before ready; ready for less time; more restarts;
/// newer).
pub fn deletion_order(a: &CachedPod, b: &CachedPod) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let scheduled = |p: &CachedPod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    let phase_rank = |p: &CachedPod| match podutil::phase(p) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    };
    let ready = |p: &CachedPod| podutil::is_pod_ready(p);
    let ready_since = |p: &CachedPod| {
        podutil::get_condition(p, "Ready")
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0)
    };
    let created = |p: &CachedPod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    scheduled(a)
        .cmp(&scheduled(b))
        .then(phase_rank(a).cmp(&phase_rank(b)))
        .then(ready(a).cmp(&ready(b)))
        .then_with(|| {
            if ready(a) && ready(b) {
                // Ready for less time first.
                ready_since(b).cmp(&ready_since(a))
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| created(b).cmp(&created(a)))
}

/// `syncSubsetPodDeletionCost`: the deletion cost of each active pod of a subset (index
/// `index` of `n` subsets; `None`: the pods of no subset): within the limit
/// `100 × (n − index)`, beyond it (the first to delete) `−100 × (index + 1)`.
pub fn subset_deletion_costs<'a>(
    subset: Option<&WorkloadSpreadSubset>,
    index: usize,
    n: usize,
    pods: &[&'a CachedPod],
    replicas: i32,
) -> Vec<(&'a CachedPod, String)> {
    let mut active: Vec<&CachedPod> = pods
        .iter()
        .copied()
        .filter(|p| podutil::is_active(p))
        .collect();
    let positive = (ws_util::DELETION_COST_POSITIVE * (n as i64 - index as i64)).to_string();
    let negative = (ws_util::DELETION_COST_NEGATIVE * (index as i64 + 1)).to_string();
    let Some(subset) = subset else {
        return active.into_iter().map(|p| (p, negative.clone())).collect();
    };
    let Some(max) = &subset.max_replicas else {
        return active.into_iter().map(|p| (p, positive.clone())).collect();
    };
    // `GetValueFromIntOrPercent(max, replicas, true)`.
    let Some(max) = ws_util::scaled(max, replicas, true).filter(|m| *m >= 0) else {
        return Vec::new();
    };
    let max = max as usize;
    if active.len() <= max {
        return active.into_iter().map(|p| (p, positive.clone())).collect();
    }
    active.sort_by(|a, b| deletion_order(a, b));
    let extra = active.len() - max;
    active
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            (
                p,
                if i < extra {
                    negative.clone()
                } else {
                    positive.clone()
                },
            )
        })
        .collect()
}

fn untolerated(node: &Node, tolerations: &[Toleration]) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .any(|taint| {
            !tolerations
                .iter()
                .any(|t| crate::controllers::daemonset::plan::tolerates(t, taint))
        })
}

/// `matchesSubset`: whether a pod already on `node` fits `subset` (taints tolerated by the
/// subset's tolerations, the required term ANDed into the pod's own required terms), and its
/// preference score (preferred node terms × 100, the patch's labels already on the pod × 10,
/// room left × 1). The pod's own tolerations are not cached: only the subset's count.
pub fn matches_subset(
    pod: &CachedPod,
    node: &Node,
    subset: &WorkloadSpreadSubset,
    missing: i64,
) -> Option<i64> {
    if untolerated(node, subset.tolerations.as_deref().unwrap_or_default()) {
        return None;
    }
    if let Some(req) = &subset.required_node_selector_term {
        let mut terms: Vec<k8s_openapi::api::core::v1::NodeSelectorTerm> = pod
            .spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|r| r.node_selector_terms.clone())
            .unwrap_or_default();
        if terms.is_empty() {
            terms.push(req.clone());
        } else {
            for t in &mut terms {
                t.match_expressions
                    .get_or_insert_with(Vec::new)
                    .extend(req.match_expressions.iter().flatten().cloned());
                t.match_fields
                    .get_or_insert_with(Vec::new)
                    .extend(req.match_fields.iter().flatten().cloned());
            }
        }
        let affinity = Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: terms,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        if !crate::controllers::daemonset::plan::selector_and_affinity_match(
            None,
            Some(&affinity),
            node,
        ) {
            return None;
        }
    }
    let mut node_score = 0i64;
    for t in subset.preferred_node_selector_terms.iter().flatten() {
        let affinity = Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![t.preference.clone()],
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        if crate::controllers::daemonset::plan::selector_and_affinity_match(
            None,
            Some(&affinity),
            node,
        ) {
            node_score += i64::from(t.weight);
        }
    }
    let pod_score = subset
        .patch
        .as_ref()
        .filter(|p| !p.is_null())
        .map_or(0, |p| {
            let labels = p.pointer("/metadata/labels").and_then(|l| l.as_object());
            let only_metadata = p
                .as_object()
                .is_some_and(|m| m.keys().all(|k| k == "metadata"));
            let have = pod.metadata.labels.as_ref();
            let all = labels.is_none_or(|l| {
                l.iter()
                    .all(|(k, v)| have.and_then(|h| h.get(k)).map(String::as_str) == v.as_str())
            });
            i64::from(only_metadata && all)
        });
    let quota = i64::from(missing > 0);
    Some(node_score * 100 + pod_score * 10 + quota)
}

/// The limit of every subset for `replicas` (`MaxInt32` when unlimited) minus the pods already
/// assigned to it by annotation (`groupPodBySubset`'s `subsetMissingReplicas`).
pub fn missing_by_subset(
    ws: &WorkloadSpread,
    pods: &[&CachedPod],
    replicas: i32,
) -> BTreeMap<String, i64> {
    let name = ws.metadata.name.as_deref().unwrap_or("");
    let mut m: BTreeMap<String, i64> = ws
        .spec
        .subsets
        .iter()
        .map(|s| {
            let limit = s.max_replicas.clone().unwrap_or(IntOrString::Int(i32::MAX));
            (
                s.name.clone(),
                ws_util::scaled(&limit, replicas, true).unwrap_or(0),
            )
        })
        .collect();
    for p in pods {
        if let Some(i) = ws_util::injected(p.metadata.annotations.as_ref())
            && i.name == name
            && !i.subset.is_empty()
            && let Some(v) = m.get_mut(&i.subset)
        {
            *v -= 1;
        }
    }
    m
}

/// The subset a pod belongs to by its annotation for this WorkloadSpread (`None`: not
/// annotated for it; `Some(FAKE)` when its subset is gone).
pub fn annotated_subset(ws: &WorkloadSpread, pod: &CachedPod) -> Option<String> {
    let i = ws_util::injected(pod.metadata.annotations.as_ref())?;
    if i.name != ws.metadata.name.as_deref().unwrap_or("") || i.subset.is_empty() {
        return None;
    }
    if ws.spec.subsets.iter().any(|s| s.name == i.subset) {
        Some(i.subset)
    } else {
        Some(FAKE_SUBSET_NAME.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, subset: Option<&str>, phase: &str) -> CachedPod {
        let mut ann = serde_json::Map::new();
        if let Some(s) = subset {
            ann.insert(
                kruise_api::keys::MATCHED_WORKLOADSPREAD.into(),
                json!(format!(r#"{{"name":"ws","subset":"{s}"}}"#)),
            );
        }
        serde_json::from_value(json!({"metadata": {"name": name, "annotations": ann,
            "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [], "nodeName": "n"}, "status": {"phase": phase}}))
        .unwrap()
    }

    fn subset(v: serde_json::Value) -> WorkloadSpreadSubset {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn status_counts_active_pods_and_expires_entries() {
        let now: jiff::Timestamp = "2024-01-01T00:01:00Z".parse().unwrap();
        let s = subset(json!({"name": "a", "maxReplicas": 3}));
        let old: WorkloadSpreadSubsetStatus = serde_json::from_value(json!({"name": "a",
            "replicas": 0, "missingReplicas": 0,
            "creatingPods": {"p1": "2024-01-01T00:00:50Z", "p9": "2024-01-01T00:00:10Z"},
            "deletingPods": {"p2": "2024-01-01T00:00:55Z"}}))
        .unwrap();
        let p1 = pod("p1", Some("a"), "Running");
        let p2 = pod("p2", Some("a"), "Running");
        let mut notes = Notes::default();
        let st = subset_status(&s, &[&p1, &p2], Some(&old), 0, now, &mut notes).unwrap();
        assert_eq!(st.replicas, 2);
        // 3 - 2 active + 1 deleting.
        assert_eq!(st.missing_replicas, 2);
        assert!(st.creating_pods.as_ref().unwrap().is_empty());
        assert_eq!(
            notes.warnings,
            vec![Warning {
                reason: "CreatePodFailed",
                pod: "p9".into()
            }]
        );
        assert_eq!(notes.requeue, Some(Duration::from_secs(10)));
    }

    #[test]
    fn deletion_costs_put_pods_beyond_the_limit_first() {
        let s = subset(json!({"name": "a", "maxReplicas": 1}));
        let a = pod("a", Some("a"), "Running");
        let b = pod("b", Some("a"), "Pending");
        let costs = subset_deletion_costs(Some(&s), 0, 2, &[&a, &b], 0);
        let of = |n: &str| {
            costs
                .iter()
                .find(|(p, _)| p.metadata.name.as_deref() == Some(n))
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(of("a"), "200");
        assert_eq!(of("b"), "-100");
        let costs = subset_deletion_costs(None, 2, 2, &[&a], 0);
        assert_eq!(costs[0].1, "-300");
    }

    #[test]
    fn a_subset_turns_unschedulable_and_recovers() {
        let now: jiff::Timestamp = "2024-01-01T00:10:00Z".parse().unwrap();
        let mut p: CachedPod = serde_json::from_value(json!({"metadata": {"name": "p",
            "creationTimestamp": "2024-01-01T00:09:00Z"}, "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})).unwrap();
        let mut st = WorkloadSpreadSubsetStatus::default();
        let mut notes = Notes::default();
        let (failed, _) = reschedule_subset(
            &[&p],
            Duration::from_secs(30),
            &mut st,
            None,
            now,
            &mut notes,
        );
        assert_eq!(failed.len(), 1);
        assert_eq!(st.conditions.as_ref().unwrap()[0].status, "False");
        p.status = None;
        let old = st.clone();
        let later: jiff::Timestamp = "2024-01-01T00:20:00Z".parse().unwrap();
        let mut st = WorkloadSpreadSubsetStatus::default();
        let (failed, recovered) = reschedule_subset(
            &[&p],
            Duration::from_secs(30),
            &mut st,
            Some(&old),
            later,
            &mut notes,
        );
        assert!(failed.is_empty() && recovered);
        assert_eq!(st.conditions.as_ref().unwrap()[0].status, "True");
    }

    #[test]
    fn existing_pods_match_subsets_by_node() {
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": "n", "labels": {"zone": "a"}}}))
                .unwrap();
        let p = pod("p", None, "Running");
        let a = subset(
            json!({"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}),
        );
        let b = subset(
            json!({"name": "b", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}),
        );
        assert_eq!(matches_subset(&p, &node, &a, 1), Some(1));
        assert_eq!(matches_subset(&p, &node, &b, 1), None);
    }
}
