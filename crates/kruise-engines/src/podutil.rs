//! Small, dependency-free pod helpers shared by every workload controller: condition lookup and
//! update, readiness gates, readiness/availability, active/terminating checks and container
//! (status) lookup.
//!
//! The semantics follow the upstream Kubernetes helpers OpenKruise v1.9.0 builds on
//! (`k8s.io/kubernetes/pkg/api/v1/pod`, `pkg/controller`) and OpenKruise's own `pkg/util/pods.go`;
//! differences are called out on the individual functions.

use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::pod::{CachedContainer, CachedContainerStatus, CachedPod, CachedPodCondition};

/// Pod condition type `Ready`.
pub const POD_READY: &str = "Ready";
/// Pod condition type `ContainersReady`.
pub const CONTAINERS_READY: &str = "ContainersReady";
/// Pod condition type `PodScheduled`.
pub const POD_SCHEDULED: &str = "PodScheduled";
/// Condition status `True`.
pub const CONDITION_TRUE: &str = "True";
/// Condition status `False`.
pub const CONDITION_FALSE: &str = "False";
/// Pod phase `Running`.
pub const PHASE_RUNNING: &str = "Running";
/// Pod phase `Succeeded`.
pub const PHASE_SUCCEEDED: &str = "Succeeded";
/// Pod phase `Failed`.
pub const PHASE_FAILED: &str = "Failed";
/// Pod phase `Pending`.
pub const PHASE_PENDING: &str = "Pending";
/// Reason OpenKruise gives the `Ready` condition when it forces it `False` because a readiness
/// gate is not `True` (see [`set_pod_ready_condition`]).
pub const READINESS_GATES_NOT_READY: &str = "ReadinessGatesNotReady";

/// The pod's phase, or `""` when the status or phase is absent.
pub fn phase(pod: &CachedPod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The pod's conditions (empty when there is no status).
pub fn conditions(pod: &CachedPod) -> &[CachedPodCondition] {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// The first condition of type `type_`, if any.
pub fn get_condition<'a>(pod: &'a CachedPod, type_: &str) -> Option<&'a CachedPodCondition> {
    conditions(pod).iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` exists and has status `True`.
pub fn is_condition_true(pod: &CachedPod, type_: &str) -> bool {
    get_condition(pod, type_).is_some_and(|c| c.status == CONDITION_TRUE)
}

/// Sets a condition the way OpenKruise's `util.SetPodCondition` does: a missing condition is
/// appended; an existing condition of the same type is replaced **only when its status differs**
/// (a same-status condition keeps its reason, message and times). Returns whether the pod changed.
pub fn set_condition(pod: &mut CachedPod, condition: impl Into<CachedPodCondition>) -> bool {
    let condition = condition.into();
    let conds = pod
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conds.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) if existing.status != condition.status => {
            *existing = condition;
            true
        }
        Some(_) => false,
        None => {
            conds.push(condition);
            true
        }
    }
}

/// Sets a condition, also replacing an existing same-status condition whose message differs
/// (OpenKruise `util.SetPodConditionIfMsgChanged`). Returns whether the pod changed.
pub fn set_condition_if_msg_changed(
    pod: &mut CachedPod,
    condition: impl Into<CachedPodCondition>,
) -> bool {
    let condition = condition.into();
    let conds = pod
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conds.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing)
            if existing.status != condition.status || existing.message != condition.message =>
        {
            *existing = condition;
            true
        }
        Some(_) => false,
        None => {
            conds.push(condition);
            true
        }
    }
}

/// Recomputes the `Ready` condition from the readiness gates, as OpenKruise's
/// `util.SetPodReadyCondition` does right after it flips a gate condition, so that the pod leaves
/// Service endpoints without waiting for the kubelet.
///
/// Nothing happens unless the pod already has a `Ready` condition and `ContainersReady` is `True`.
/// If every readiness gate has a `True` condition, `Ready` becomes `True` (transition time `now`);
/// otherwise it becomes `False` with reason [`READINESS_GATES_NOT_READY`], a message listing the
/// offending gates, and no transition time. As with [`set_condition`], an existing `Ready`
/// condition is only replaced when its status changes. Returns whether the pod changed.
pub fn set_pod_ready_condition(pod: &mut CachedPod, now: jiff::Timestamp) -> bool {
    if get_condition(pod, POD_READY).is_none() || !is_condition_true(pod, CONTAINERS_READY) {
        return false;
    }
    let gates: Vec<String> = pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .map(|g| g.iter().map(|g| g.condition_type.clone()).collect())
        .unwrap_or_default();
    let mut unready = Vec::new();
    for gate in &gates {
        match get_condition(pod, gate) {
            None => unready.push(format!(
                "corresponding condition of pod readiness gate \"{gate}\" does not exist."
            )),
            Some(c) if c.status != CONDITION_TRUE => unready.push(format!(
                "the status of pod readiness gate \"{gate}\" is not \"True\", but {}",
                c.status
            )),
            Some(_) => {}
        }
    }
    let ready = if unready.is_empty() {
        PodCondition {
            type_: POD_READY.to_string(),
            status: CONDITION_TRUE.to_string(),
            last_transition_time: Some(Time(now)),
            ..Default::default()
        }
    } else {
        PodCondition {
            type_: POD_READY.to_string(),
            status: CONDITION_FALSE.to_string(),
            reason: Some(READINESS_GATES_NOT_READY.to_string()),
            message: Some(unready.join(", ")),
            ..Default::default()
        }
    };
    set_condition(pod, ready)
}

/// Whether the pod's `Ready` condition is `True` (upstream `podutil.IsPodReady`).
pub fn is_pod_ready(pod: &CachedPod) -> bool {
    is_condition_true(pod, POD_READY)
}

/// Whether the pod is being deleted (`metadata.deletionTimestamp` is set).
pub fn is_terminating(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Whether the pod's phase is terminal (`Succeeded` or `Failed`).
pub fn is_terminal(pod: &CachedPod) -> bool {
    matches!(phase(pod), PHASE_SUCCEEDED | PHASE_FAILED)
}

/// Upstream `controller.IsPodActive`: not `Succeeded`, not `Failed`, and not being deleted.
pub fn is_active(pod: &CachedPod) -> bool {
    !is_terminal(pod) && !is_terminating(pod)
}

/// OpenKruise `util.IsRunningAndReady`: phase `Running`, `Ready` is `True`, not being deleted.
pub fn is_running_and_ready(pod: &CachedPod) -> bool {
    phase(pod) == PHASE_RUNNING && is_pod_ready(pod) && !is_terminating(pod)
}

/// Upstream `podutil.IsPodAvailable` (as vendored by OpenKruise v1.9.0): the pod is ready, and
/// either `min_ready_seconds` is 0 (or negative) or the `Ready` condition's transition time plus
/// `min_ready_seconds` is strictly before `now`. A ready pod without a transition time is
/// available only when `min_ready_seconds` is 0.
pub fn is_available(pod: &CachedPod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    let Some(ready) = get_condition(pod, POD_READY) else {
        return false;
    };
    if ready.status != CONDITION_TRUE {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    match &ready.last_transition_time {
        Some(Time(t)) => {
            let since = jiff::SignedDuration::from_secs(i64::from(min_ready_seconds));
            match t.checked_add(since) {
                Ok(deadline) => deadline < now,
                Err(_) => false,
            }
        }
        None => false,
    }
}

/// OpenKruise CloneSet `IsRunningAndAvailable`: phase `Running` and [`is_available`].
pub fn is_running_and_available(
    pod: &CachedPod,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> bool {
    phase(pod) == PHASE_RUNNING && is_available(pod, min_ready_seconds, now)
}

/// OpenKruise `util.HasPodScheduled`: the pod has a `spec.nodeName`.
pub fn is_scheduled(pod: &CachedPod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

/// The pod's regular containers (empty when there is no spec).
pub fn containers(pod: &CachedPod) -> &[CachedContainer] {
    pod.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or(&[])
}

/// The regular container named `name` (init and ephemeral containers are not searched).
pub fn get_container<'a>(pod: &'a CachedPod, name: &str) -> Option<&'a CachedContainer> {
    containers(pod).iter().find(|c| c.name == name)
}

/// The regular container statuses (empty when there is no status).
pub fn container_statuses(pod: &CachedPod) -> &[CachedContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[])
}

/// The status of the regular container named `name` (OpenKruise `util.GetContainerStatus`).
pub fn get_container_status<'a>(
    pod: &'a CachedPod,
    name: &str,
) -> Option<&'a CachedContainerStatus> {
    container_statuses(pod).iter().find(|c| c.name == name)
}

/// Whether the pod spec lists the readiness gate `condition_type`.
pub fn has_readiness_gate(pod: &CachedPod, condition_type: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_deref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == condition_type))
}

/// Whether the pod spec (or pod template spec) lists the readiness gate `condition_type`.
pub fn spec_has_readiness_gate(spec: &PodSpec, condition_type: &str) -> bool {
    spec.readiness_gates
        .as_ref()
        .is_some_and(|g| g.iter().any(|g| g.condition_type == condition_type))
}

/// Appends the readiness gate `condition_type` to the spec unless it is already listed
/// (OpenKruise `util.InjectReadinessGateToPod`). Returns whether the spec changed.
pub fn inject_readiness_gate(spec: &mut PodSpec, condition_type: &str) -> bool {
    if spec_has_readiness_gate(spec, condition_type) {
        return false;
    }
    spec.readiness_gates
        .get_or_insert_with(Vec::new)
        .push(PodReadinessGate {
            condition_type: condition_type.to_string(),
        });
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kruise_api::pod::{CachedContainer, CachedContainerStatus, CachedPodSpec, CachedPodStatus};

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().expect("valid timestamp")
    }

    fn cond(t: &str, status: &str) -> PodCondition {
        PodCondition {
            type_: t.into(),
            status: status.into(),
            ..Default::default()
        }
    }

    fn pod_with(phase: &str, conds: Vec<PodCondition>) -> CachedPod {
        CachedPod {
            status: Some(CachedPodStatus {
                phase: Some(phase.into()),
                conditions: Some(conds.into_iter().map(Into::into).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn empty_pod_is_safe() {
        let pod = CachedPod::default();
        assert_eq!(phase(&pod), "");
        assert!(get_condition(&pod, POD_READY).is_none());
        assert!(!is_pod_ready(&pod));
        assert!(!is_running_and_ready(&pod));
        assert!(!is_available(&pod, 0, ts("2026-01-01T00:00:00Z")));
        assert!(is_active(&pod));
        assert!(!is_terminating(&pod));
        assert!(!is_scheduled(&pod));
        assert!(containers(&pod).is_empty());
        assert!(get_container_status(&pod, "a").is_none());
        assert!(!has_readiness_gate(&pod, "X"));
    }

    #[test]
    fn set_condition_only_replaces_on_status_change() {
        let mut pod = CachedPod::default();
        let mut c = cond("X", "False");
        c.reason = Some("A".into());
        assert!(set_condition(&mut pod, c.clone()));
        assert_eq!(conditions(&pod).len(), 1);
        // same status, different reason: kept as is
        let mut c2 = cond("X", "False");
        c2.reason = Some("B".into());
        assert!(!set_condition(&mut pod, c2));
        assert_eq!(
            get_condition(&pod, "X").unwrap().reason.as_deref(),
            Some("A")
        );
        // status change replaces
        assert!(set_condition(&mut pod, cond("X", "True")));
        let got = get_condition(&pod, "X").unwrap();
        assert_eq!(got.status, "True");
        assert_eq!(got.reason, None);
        // another type is appended
        assert!(set_condition(&mut pod, cond("Y", "True")));
        assert_eq!(conditions(&pod).len(), 2);
    }

    #[test]
    fn set_condition_if_msg_changed_replaces_on_message() {
        let mut pod = pod_with("Running", vec![cond("X", "True")]);
        let mut c = cond("X", "True");
        c.message = Some("m".into());
        assert!(set_condition_if_msg_changed(&mut pod, c.clone()));
        assert!(!set_condition_if_msg_changed(&mut pod, c));
        assert_eq!(
            get_condition(&pod, "X").unwrap().message.as_deref(),
            Some("m")
        );
    }

    #[test]
    fn ready_condition_follows_gates() {
        let now = ts("2026-01-01T00:00:00Z");
        let mut pod = pod_with(
            "Running",
            vec![
                cond(POD_READY, "True"),
                cond(CONTAINERS_READY, "True"),
                cond("G", "False"),
            ],
        );
        pod.spec = Some(CachedPodSpec {
            readiness_gates: Some(vec![
                PodReadinessGate {
                    condition_type: "G".into(),
                },
                PodReadinessGate {
                    condition_type: "H".into(),
                },
            ]),
            ..Default::default()
        });
        assert!(set_pod_ready_condition(&mut pod, now));
        let ready = get_condition(&pod, POD_READY).unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(ready.reason.as_deref(), Some(READINESS_GATES_NOT_READY));
        assert_eq!(
            ready.message.as_deref(),
            Some(
                "the status of pod readiness gate \"G\" is not \"True\", but False, \
                 corresponding condition of pod readiness gate \"H\" does not exist."
            )
        );
        assert!(ready.last_transition_time.is_none());

        // no Ready condition: untouched
        let mut p2 = pod_with("Running", vec![cond(CONTAINERS_READY, "True")]);
        assert!(!set_pod_ready_condition(&mut p2, now));
        // containers not ready: untouched
        let mut p3 = pod_with(
            "Running",
            vec![cond(POD_READY, "True"), cond(CONTAINERS_READY, "False")],
        );
        p3.spec = pod.spec.clone();
        assert!(!set_pod_ready_condition(&mut p3, now));
        assert_eq!(get_condition(&p3, POD_READY).unwrap().status, "True");
        // all gates true: becomes True
        let mut p4 = pod_with(
            "Running",
            vec![cond(POD_READY, "False"), cond(CONTAINERS_READY, "True")],
        );
        assert!(set_pod_ready_condition(&mut p4, now));
        assert_eq!(
            get_condition(&p4, POD_READY).unwrap().last_transition_time,
            Some(Time(now))
        );
    }

    #[test]
    fn running_ready_and_available_table() {
        let now = ts("2026-01-01T00:01:00Z");
        let ready_at = |t: Option<&str>| {
            let mut c = cond(POD_READY, "True");
            c.last_transition_time = t.map(|t| Time(ts(t)));
            c
        };
        // (phase, ready condition, deleting, minReady, running&ready, available, running&available)
        type Case = (
            &'static str,
            Option<PodCondition>,
            bool,
            i32,
            bool,
            bool,
            bool,
        );
        let cases: Vec<Case> = vec![
            ("Running", Some(ready_at(None)), false, 0, true, true, true),
            (
                "Running",
                Some(ready_at(None)),
                false,
                5,
                true,
                false,
                false,
            ),
            (
                "Running",
                Some(ready_at(Some("2026-01-01T00:00:00Z"))),
                false,
                59,
                true,
                true,
                true,
            ),
            // exactly at the boundary: not yet (strictly before)
            (
                "Running",
                Some(ready_at(Some("2026-01-01T00:00:00Z"))),
                false,
                60,
                true,
                false,
                false,
            ),
            (
                "Running",
                Some(ready_at(Some("2026-01-01T00:00:00Z"))),
                false,
                61,
                true,
                false,
                false,
            ),
            (
                "Running",
                Some(cond(POD_READY, "False")),
                false,
                0,
                false,
                false,
                false,
            ),
            ("Running", None, false, 0, false, false, false),
            (
                "Pending",
                Some(ready_at(None)),
                false,
                0,
                false,
                true,
                false,
            ),
            ("Running", Some(ready_at(None)), true, 0, false, true, true),
        ];
        for (i, (ph, c, deleting, mrs, rr, av, ra)) in cases.into_iter().enumerate() {
            let mut pod = pod_with(ph, c.into_iter().collect());
            if deleting {
                pod.metadata = ObjectMeta {
                    deletion_timestamp: Some(Time(now)),
                    ..Default::default()
                };
            }
            assert_eq!(is_running_and_ready(&pod), rr, "case {i} running&ready");
            assert_eq!(is_available(&pod, mrs, now), av, "case {i} available");
            assert_eq!(
                is_running_and_available(&pod, mrs, now),
                ra,
                "case {i} running&available"
            );
        }
    }

    #[test]
    fn active_and_terminating() {
        let now = ts("2026-01-01T00:00:00Z");
        assert!(is_active(&pod_with("Running", vec![])));
        assert!(!is_active(&pod_with("Succeeded", vec![])));
        assert!(!is_active(&pod_with("Failed", vec![])));
        let mut p = pod_with("Running", vec![]);
        p.metadata.deletion_timestamp = Some(Time(now));
        assert!(!is_active(&p));
        assert!(is_terminating(&p));
        assert!(is_terminal(&pod_with("Failed", vec![])));
    }

    #[test]
    fn containers_and_gates() {
        let mut pod = CachedPod {
            spec: Some(CachedPodSpec {
                node_name: Some("n1".into()),
                containers: vec![
                    CachedContainer {
                        name: "a".into(),
                        ..Default::default()
                    },
                    CachedContainer {
                        name: "b".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            status: Some(CachedPodStatus {
                container_statuses: Some(vec![CachedContainerStatus {
                    name: "b".into(),
                    image_id: "id-b".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(is_scheduled(&pod));
        assert_eq!(get_container(&pod, "b").map(|c| c.name.as_str()), Some("b"));
        assert!(get_container(&pod, "z").is_none());
        assert_eq!(
            get_container_status(&pod, "b").map(|c| c.image_id.as_str()),
            Some("id-b")
        );
        assert!(get_container_status(&pod, "a").is_none());
        let spec = &mut PodSpec::default();
        assert!(inject_readiness_gate(spec, "G"));
        assert!(!inject_readiness_gate(spec, "G"));
        assert_eq!(spec.readiness_gates.as_ref().unwrap().len(), 1);
        assert!(!has_readiness_gate(&pod, "G"));
        pod.spec.as_mut().unwrap().readiness_gates = spec.readiness_gates.clone();
        assert!(has_readiness_gate(&pod, "G"));
    }
}
