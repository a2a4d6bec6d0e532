//! CloneSet status computation (pure), as OpenKruise's `calculateStatus`.

use kruise_api::apps::v1alpha1::{CloneSet, CloneSetStatus};
use kruise_api::keys;
use kruise_api::pod::CachedPod;

use kruise_engines::podutil;
use kruise_engines::revision;

/// OpenKruise CloneSet `IsPodUpdateReady`: Running and available for `min_ready_seconds`, and the
/// `InPlaceUpdateReady` condition absent or True.
pub fn is_pod_update_ready(pod: &CachedPod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    podutil::is_running_and_available(pod, min_ready_seconds, now)
        && podutil::get_condition(pod, keys::IN_PLACE_UPDATE_READY)
            .is_none_or(|c| c.status == podutil::CONDITION_TRUE)
}

/// The pod's lifecycle state label (`lifecycle.apps.kruise.io/state`), `""` when absent.
pub fn lifecycle_state(pod: &CachedPod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::LIFECYCLE_STATE))
        .map_or("", String::as_str)
}

/// OpenKruise CloneSet `IsPodAvailable`: lifecycle state `""` or `Normal`, and
/// [`is_pod_update_ready`].
pub fn is_pod_available(pod: &CachedPod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    matches!(lifecycle_state(pod), "" | "Normal")
        && is_pod_update_ready(pod, min_ready_seconds, now)
}

pub use kruise_engines::selector::format_label_selector;

/// Computes the CloneSet status from its active pods. `partition` is the resolved partition
/// (None when it cannot be resolved; `expectedUpdatedReplicas` is then left unset).
/// `currentRevision` becomes the update revision once every pod is updated and the count
/// equals `replicas`.
pub fn calculate_status(
    cs: &CloneSet,
    pods: &[&CachedPod],
    update_revision: &str,
    current_revision: &str,
    collision_count: i32,
    partition: Option<i32>,
    now: jiff::Timestamp,
) -> CloneSetStatus {
    let min_ready = cs.spec.min_ready_seconds.unwrap_or(0);
    let replicas = cs.spec.replicas.unwrap_or(1);
    let mut s = CloneSetStatus {
        observed_generation: cs.metadata.generation,
        update_revision: Some(update_revision.to_string()),
        current_revision: Some(current_revision.to_string()),
        collision_count: Some(collision_count),
        label_selector: Some(format_label_selector(&cs.spec.selector)),
        conditions: cs.status.as_ref().and_then(|st| st.conditions.clone()),
        ..CloneSetStatus::default()
    };
    let mut updated_available = 0;
    for pod in pods {
        let updated =
            revision::equal_to_revision_hash(pod.metadata.labels.as_ref(), update_revision);
        let ready = is_pod_update_ready(pod, 0, now);
        let available = is_pod_available(pod, min_ready, now);
        s.replicas += 1;
        s.ready_replicas += i32::from(ready);
        s.available_replicas += i32::from(available);
        if updated {
            s.updated_replicas += 1;
            s.updated_ready_replicas += i32::from(ready);
            updated_available += i32::from(available);
        }
    }
    s.updated_available_replicas = Some(updated_available);
    if s.updated_replicas == s.replicas && s.replicas == replicas {
        s.current_revision = Some(update_revision.to_string());
    }
    s.expected_updated_replicas = partition.map(|p| replicas - p);
    s
}

/// Condition type `Progressing`.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Reason: every replica is updated and available.
pub const REASON_AVAILABLE: &str = "CloneSetAvailable";
/// Reason: `updateStrategy.paused` is set.
pub const REASON_PAUSED: &str = "CloneSetPaused";
/// Reason: the pods the partition allows to update are updated and available.
pub const REASON_PARTITION_AVAILABLE: &str = "ProgressPartitionAvailable";
/// Reason: no progress within `progressDeadlineSeconds`.
pub const REASON_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
/// Reason: the rollout is under way.
pub const REASON_UPDATED: &str = "CloneSetUpdated";

/// Sets the `Progressing` condition of `new` as OpenKruise v1.9.0's
/// `calculateProgressingStatus` does, and returns when the CloneSet must be looked at again to
/// detect a missed deadline (`None`: no need).
///
/// Without `progressDeadlineSeconds` (or with `2147483647`) the condition is removed. Otherwise,
/// in this order: all replicas updated and available → True/`CloneSetAvailable`; paused →
/// True/`CloneSetPaused`; partition reached and available → True/`ProgressPartitionAvailable`;
/// already exceeded, or `lastUpdateTime` + deadline passed → False/`ProgressDeadlineExceeded`;
/// else True/`CloneSetUpdated`. A condition whose status and reason do not change keeps its
/// timestamps, so the deadline counts from the moment the rollout started progressing.
pub fn set_progressing_condition(
    cs: &CloneSet,
    new: &mut CloneSetStatus,
    now: jiff::Timestamp,
) -> Option<std::time::Duration> {
    let conditions = new.conditions.get_or_insert_with(Vec::new);
    let deadline = match cs.spec.progress_deadline_seconds {
        Some(d) if d != i32::MAX => d,
        _ => {
            conditions.retain(|c| c.type_ != CONDITION_PROGRESSING);
            if conditions.is_empty() {
                new.conditions = None;
            }
            return None;
        }
    };
    let replicas = cs.spec.replicas.unwrap_or(1);
    let updated_available = new.updated_available_replicas.unwrap_or(0);
    let existing = conditions
        .iter()
        .find(|c| c.type_ == CONDITION_PROGRESSING)
        .cloned();
    let paused = cs
        .spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.paused)
        .unwrap_or(false);
    let expected = new.expected_updated_replicas.unwrap_or(replicas);
    let deadline_passed = |c: &kruise_api::apps::v1alpha1::CloneSetCondition| {
        c.reason.as_deref() == Some(REASON_DEADLINE_EXCEEDED)
            || c.last_update_time.as_ref().is_some_and(|t| {
                t.0.checked_add(jiff::SignedDuration::from_secs(i64::from(deadline)))
                    .is_ok_and(|end| end < now)
            })
    };
    let (status, reason, message) = if new.current_revision == new.update_revision
        && new.replicas == replicas
        && new.updated_replicas == replicas
        && updated_available == replicas
    {
        ("True", REASON_AVAILABLE, "CloneSet is available".to_owned())
    } else if paused {
        ("True", REASON_PAUSED, "CloneSet is paused".to_owned())
    } else if expected < replicas && expected <= updated_available {
        (
            "True",
            REASON_PARTITION_AVAILABLE,
            "CloneSet has been paused due to partition ready".to_owned(),
        )
    } else if existing.as_ref().is_some_and(deadline_passed) {
        (
            "False",
            REASON_DEADLINE_EXCEEDED,
            format!(
                "CloneSet revision {} has timed out progressing",
                new.update_revision.as_deref().unwrap_or_default()
            ),
        )
    } else {
        ("True", REASON_UPDATED, "CloneSet is progressing".to_owned())
    };
    let effective = match existing {
        Some(c) if c.status == status && c.reason.as_deref() == Some(reason) => c,
        existing => {
            let stamp = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now);
            let transition = match &existing {
                Some(c) if c.status == status => c.last_transition_time.clone(),
                _ => Some(stamp.clone()),
            };
            let c = kruise_api::apps::v1alpha1::CloneSetCondition {
                type_: CONDITION_PROGRESSING.to_owned(),
                status: status.to_owned(),
                last_update_time: Some(stamp),
                last_transition_time: transition,
                reason: Some(reason.to_owned()),
                message: Some(message),
            };
            conditions.retain(|c| c.type_ != CONDITION_PROGRESSING);
            conditions.push(c.clone());
            c
        }
    };
    if reason != REASON_UPDATED {
        return None;
    }
    let since = effective.last_update_time.map_or(now, |t| t.0);
    let end = since
        .checked_add(jiff::SignedDuration::from_secs(i64::from(deadline)))
        .unwrap_or(now);
    let left = end.duration_since(now);
    let left = if left.is_negative() {
        jiff::SignedDuration::ZERO
    } else {
        left
    };
    // One extra second avoids waking up a hair before the deadline.
    Some(
        std::time::Duration::try_from(left).unwrap_or_default() + std::time::Duration::from_secs(1),
    )
}

/// Whether `new` differs from `old` in a way that must be written (OpenKruise's
/// `inconsistentStatus`, plus conditions).
pub fn status_changed(old: Option<&CloneSetStatus>, new: &CloneSetStatus) -> bool {
    let default = CloneSetStatus::default();
    let old = old.unwrap_or(&default);
    new.observed_generation.unwrap_or(0) > old.observed_generation.unwrap_or(0)
        || new.replicas != old.replicas
        || new.ready_replicas != old.ready_replicas
        || new.available_replicas != old.available_replicas
        || new.updated_ready_replicas != old.updated_ready_replicas
        || new.updated_replicas != old.updated_replicas
        || new.updated_available_replicas != old.updated_available_replicas
        || new.expected_updated_replicas != old.expected_updated_replicas
        || new.update_revision != old.update_revision
        || new.current_revision != old.current_revision
        || new.label_selector != old.label_selector
        || new.collision_count != old.collision_count
        || new.conditions != old.conditions
}

/// Whether `new` differs from `old` only in its replica counts (`replicas`, `readyReplicas`,
/// `availableReplicas`, `updatedReplicas`, `updatedReadyReplicas`, `updatedAvailableReplicas`):
/// such a change may be held back ([`crate::workload::STATUS_COUNTS_INTERVAL`]); any other is
/// written at once.
pub fn only_counts_changed(old: Option<&CloneSetStatus>, new: &CloneSetStatus) -> bool {
    let Some(old) = old else {
        return false;
    };
    new.observed_generation == old.observed_generation
        && new.expected_updated_replicas == old.expected_updated_replicas
        && new.update_revision == old.update_revision
        && new.current_revision == old.current_revision
        && new.label_selector == old.label_selector
        && new.collision_count == old.collision_count
        && new.conditions == old.conditions
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(revision: &str, ready: bool, inplace_ready: Option<bool>, state: &str) -> CachedPod {
        let mut conditions = vec![
            json!({"type": "Ready", "status": if ready {"True"} else {"False"},
            "lastTransitionTime": "2026-01-01T00:00:00Z"}),
        ];
        if let Some(r) = inplace_ready {
            conditions.push(
                json!({"type": "InPlaceUpdateReady", "status": if r {"True"} else {"False"}}),
            );
        }
        let mut labels = json!({"controller-revision-hash": revision});
        if !state.is_empty() {
            labels["lifecycle.apps.kruise.io/state"] = json!(state);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": labels},
            "status": {"phase": "Running", "conditions": conditions},
        }))
        .unwrap()
    }

    fn cloneset(replicas: i32) -> CloneSet {
        serde_json::from_value(json!({
            "metadata": {"name": "cs", "generation": 4},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"app": "x", "tier": "web"},
                                  "matchExpressions": [{"key": "env", "operator": "In", "values": ["b", "a"]}]},
                     "template": {}},
        }))
        .unwrap()
    }

    #[test]
    fn counts_follow_openkruise_definitions() {
        let now: jiff::Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        let pods = [
            pod("cs-new", true, Some(true), "Normal"),
            pod("cs-new", true, Some(false), "Normal"), // in-place updating: not ready
            pod("cs-old", true, None, "PreparingDelete"), // ready but not available
            pod("cs-old", false, None, ""),
        ];
        let refs: Vec<&CachedPod> = pods.iter().collect();
        let s = calculate_status(&cloneset(4), &refs, "cs-new", "cs-old", 0, Some(2), now);
        assert_eq!(s.replicas, 4);
        assert_eq!(s.ready_replicas, 2);
        assert_eq!(s.available_replicas, 1);
        assert_eq!(s.updated_replicas, 2);
        assert_eq!(s.updated_ready_replicas, 1);
        assert_eq!(s.updated_available_replicas, Some(1));
        assert_eq!(s.expected_updated_replicas, Some(2));
        assert_eq!(s.current_revision.as_deref(), Some("cs-old"));
        assert_eq!(s.observed_generation, Some(4));
        assert_eq!(
            s.label_selector.as_deref(),
            Some("app=x,env in (a,b),tier=web")
        );
    }

    #[test]
    fn current_revision_moves_when_all_pods_are_updated() {
        let now = jiff::Timestamp::now();
        let pods = [
            pod("cs-new", false, None, ""),
            pod("cs-new", true, None, ""),
        ];
        let refs: Vec<&CachedPod> = pods.iter().collect();
        let s = calculate_status(&cloneset(2), &refs, "cs-new", "cs-old", 0, Some(0), now);
        assert_eq!(s.current_revision.as_deref(), Some("cs-new"));
        // Not while the count differs from replicas.
        let s = calculate_status(&cloneset(3), &refs, "cs-new", "cs-old", 0, Some(0), now);
        assert_eq!(s.current_revision.as_deref(), Some("cs-old"));
    }

    #[test]
    fn min_ready_seconds_delays_availability() {
        let now: jiff::Timestamp = "2026-01-01T00:00:05Z".parse().unwrap();
        let p = pod("r", true, None, "");
        assert!(is_pod_available(&p, 4, now));
        assert!(!is_pod_available(&p, 5, now));
        assert!(is_pod_update_ready(&p, 0, now));
    }

    #[test]
    fn change_detection() {
        let a = CloneSetStatus::default();
        let mut b = a.clone();
        assert!(!status_changed(Some(&a), &b));
        b.ready_replicas = 1;
        assert!(status_changed(Some(&a), &b));
        assert!(status_changed(None, &b));
    }

    #[test]
    fn only_replica_count_changes_may_be_held_back() {
        let old = CloneSetStatus {
            observed_generation: Some(2),
            replicas: 5,
            update_revision: Some("r2".into()),
            current_revision: Some("r1".into()),
            expected_updated_replicas: Some(5),
            ..CloneSetStatus::default()
        };
        let mut counts = old.clone();
        counts.ready_replicas = 4;
        counts.updated_replicas = 3;
        counts.updated_ready_replicas = 2;
        counts.updated_available_replicas = Some(2);
        counts.available_replicas = 4;
        assert!(only_counts_changed(Some(&old), &counts));
        // Anything else is written at once.
        let changes: [fn(&mut CloneSetStatus); 7] = [
            |s| s.observed_generation = Some(3),
            |s| s.update_revision = Some("r3".into()),
            |s| s.current_revision = Some("r2".into()),
            |s| s.expected_updated_replicas = Some(4),
            |s| s.collision_count = Some(1),
            |s| s.label_selector = Some("app=x".into()),
            |s| {
                s.conditions = Some(vec![kruise_api::apps::v1alpha1::CloneSetCondition {
                    type_: CONDITION_PROGRESSING.into(),
                    status: "True".into(),
                    ..Default::default()
                }])
            },
        ];
        for change in changes {
            let mut new = counts.clone();
            change(&mut new);
            assert!(!only_counts_changed(Some(&old), &new), "{new:?}");
        }
        // The first status of a CloneSet is never held.
        assert!(!only_counts_changed(None, &counts));
    }

    fn progressing(st: &CloneSetStatus) -> Option<(String, String)> {
        st.conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == CONDITION_PROGRESSING)
            .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
    }

    fn rolling(replicas: i32, updated: i32, updated_available: i32) -> CloneSetStatus {
        CloneSetStatus {
            replicas,
            updated_replicas: updated,
            updated_available_replicas: Some(updated_available),
            expected_updated_replicas: Some(replicas),
            current_revision: Some("old".into()),
            update_revision: Some("new".into()),
            ..Default::default()
        }
    }

    #[test]
    fn progressing_condition_follows_openkruise() {
        let t0: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut cs = cloneset(4);
        // No deadline: no condition, other conditions kept.
        let mut st = rolling(4, 1, 1);
        st.conditions = Some(vec![kruise_api::apps::v1alpha1::CloneSetCondition {
            type_: "FailedScale".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        assert_eq!(set_progressing_condition(&cs, &mut st, t0), None);
        assert_eq!(st.conditions.as_ref().unwrap().len(), 1);

        cs.spec.progress_deadline_seconds = Some(60);
        let mut st = rolling(4, 1, 1);
        let wake = set_progressing_condition(&cs, &mut st, t0).unwrap();
        assert_eq!(wake, std::time::Duration::from_secs(61));
        assert_eq!(
            progressing(&st),
            Some(("True".into(), REASON_UPDATED.into()))
        );

        // Still progressing 30 s later: timestamps kept, so the deadline does not move.
        cs.status = Some(st.clone());
        let mut later = rolling(4, 2, 2);
        later.conditions = st.conditions.clone();
        let t30 = t0 + jiff::SignedDuration::from_secs(30);
        let wake = set_progressing_condition(&cs, &mut later, t30).unwrap();
        assert_eq!(wake, std::time::Duration::from_secs(31));
        assert_eq!(later.conditions, st.conditions);

        // Past the deadline: False/ProgressDeadlineExceeded, and it stays so.
        let t61 = t0 + jiff::SignedDuration::from_secs(61);
        assert_eq!(set_progressing_condition(&cs, &mut later, t61), None);
        assert_eq!(
            progressing(&later),
            Some(("False".into(), REASON_DEADLINE_EXCEEDED.into()))
        );
        let c = later.conditions.as_ref().unwrap()[0].clone();
        assert_eq!(
            c.message.as_deref(),
            Some("CloneSet revision new has timed out progressing")
        );
        assert_eq!(c.last_transition_time.unwrap().0, t61);
        let t99 = t0 + jiff::SignedDuration::from_secs(99);
        set_progressing_condition(&cs, &mut later, t99);
        assert_eq!(
            later.conditions.as_ref().unwrap()[0]
                .last_update_time
                .as_ref()
                .unwrap()
                .0,
            t61
        );

        // Everything updated and available: True/CloneSetAvailable.
        let mut done = rolling(4, 4, 4);
        done.current_revision = Some("new".into());
        done.conditions = later.conditions.clone();
        assert_eq!(set_progressing_condition(&cs, &mut done, t99), None);
        assert_eq!(
            progressing(&done),
            Some(("True".into(), REASON_AVAILABLE.into()))
        );

        // Paused.
        let mut paused = cs.clone();
        paused.spec.update_strategy =
            Some(serde_json::from_value(json!({"paused": true})).unwrap());
        let mut st = rolling(4, 1, 1);
        set_progressing_condition(&paused, &mut st, t0);
        assert_eq!(
            progressing(&st),
            Some(("True".into(), REASON_PAUSED.into()))
        );

        // Partition reached.
        let mut st = rolling(4, 1, 1);
        st.expected_updated_replicas = Some(1);
        set_progressing_condition(&cs, &mut st, t0);
        assert_eq!(
            progressing(&st),
            Some(("True".into(), REASON_PARTITION_AVAILABLE.into()))
        );
    }
}
