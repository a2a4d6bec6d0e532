//! The pure decisions of kruise-daemon's ContainerRecreateRequest controller (OpenKruise v1.9.0
//! `pkg/daemon/containerrecreate/crr_daemon_util.go` and `crr_daemon_controller.go`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kruise_api::apps::v1alpha1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState,
    ContainerRecreateRequestSyncContainerStatus, container_recreate_request_failure_policy,
    container_recreate_request_phase as phase,
};
use kruise_api::keys;

/// A container of the pod as the runtime reports it: the newest runtime container of that name
/// (the kubelet's `PodStatus.FindContainerStatusByName`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeView {
    /// Container name.
    pub name: String,
    /// `<runtime>://<id>`.
    pub full_id: String,
    /// Whether it has exited.
    pub exited: bool,
    /// The kubelet's restart count.
    pub restart_count: i32,
    /// When it started (`None`: never).
    pub started_at: Option<Timestamp>,
}

/// The order requests of one pod are looked at (OpenKruise's `crrListByPhaseAndCreated`):
/// Completed, Recreating, Pending, then new ones; oldest first within a phase.
pub fn sort_requests(list: &mut [Arc<ContainerRecreateRequest>]) {
    fn weight(p: &str) -> u8 {
        match p {
            phase::COMPLETED => 1,
            phase::RECREATING => 2,
            phase::PENDING => 3,
            _ => 4,
        }
    }
    list.sort_by(|a, b| {
        let pa = a.status.as_ref().map_or("", |s| s.phase.as_str());
        let pb = b.status.as_ref().map_or("", |s| s.phase.as_str());
        weight(pa).cmp(&weight(pb)).then_with(|| {
            let ca = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
            let cb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
            ca.cmp(&cb)
        })
    });
}

/// Whether a request is finished (deleted or completed): the daemon leaves it alone.
pub fn finished(crr: &ContainerRecreateRequest) -> bool {
    crr.metadata.deletion_timestamp.is_some()
        || crr
            .status
            .as_ref()
            .is_some_and(|s| s.completion_time.is_some())
}

fn previous<'a>(
    crr: &'a ContainerRecreateRequest,
    name: &str,
) -> Option<&'a ContainerRecreateRequestContainerRecreateState> {
    crr.status
        .as_ref()?
        .container_recreate_states
        .as_ref()?
        .iter()
        .find(|s| s.name == name)
}

/// The manager's copy of the pod's container statuses (annotation
/// `crr.apps.kruise.io/sync-container-statuses`), by name; none when absent or unparsable.
pub fn sync_container_statuses(
    crr: &ContainerRecreateRequest,
) -> HashMap<String, ContainerRecreateRequestSyncContainerStatus> {
    crr.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::CRR_SYNC_CONTAINER_STATUSES))
        .filter(|s| !s.is_empty())
        .and_then(|s| {
            serde_json::from_str::<Vec<ContainerRecreateRequestSyncContainerStatus>>(s).ok()
        })
        .map(|v| v.into_iter().map(|s| (s.name.clone(), s)).collect())
        .unwrap_or_default()
}

fn state(
    name: &str,
    p: &str,
    killed: bool,
    message: Option<&str>,
) -> ContainerRecreateRequestContainerRecreateState {
    ContainerRecreateRequestContainerRecreateState {
        name: name.to_owned(),
        phase: p.to_owned(),
        message: message.map(str::to_owned),
        // Go's `isKilled,omitempty`: false is not written.
        is_killed: killed.then_some(true),
    }
}

fn killed(prev: Option<&ContainerRecreateRequestContainerRecreateState>) -> bool {
    prev.and_then(|p| p.is_killed).unwrap_or(false)
}

/// The state of every requested container from what the runtime runs
/// (`getCurrentCRRContainersRecreateStates`): finished states stay; a container the runtime does
/// not have is Pending ("not found container on Node"); an exited one is Recreating; with
/// `forceRecreate` one not yet killed is Pending; one whose ID or restart count moved on since
/// the request is Recreating, and Succeeded once the manager reports that very container ready
/// and it has run longer than `minStartedSeconds`; anything else is Pending.
pub fn current_states(
    crr: &ContainerRecreateRequest,
    runtime: &[RuntimeView],
    now: Timestamp,
) -> Vec<ContainerRecreateRequestContainerRecreateState> {
    let strategy = crr.spec.strategy.as_ref();
    let min_started = Duration::from_secs(
        u64::try_from(strategy.and_then(|s| s.min_started_seconds).unwrap_or(0)).unwrap_or(0),
    );
    let force = strategy.and_then(|s| s.force_recreate).unwrap_or(false);
    let synced = sync_container_statuses(crr);
    crr.spec
        .containers
        .iter()
        .map(|c| {
            let prev = previous(crr, &c.name);
            if let Some(p) =
                prev.filter(|p| p.phase == phase::FAILED || p.phase == phase::SUCCEEDED)
            {
                return p.clone();
            }
            let Some(rt) = runtime.iter().find(|r| r.name == c.name) else {
                return state(
                    &c.name,
                    phase::PENDING,
                    killed(prev),
                    Some("not found container on Node"),
                );
            };
            if rt.exited {
                return state(&c.name, phase::RECREATING, killed(prev), None);
            }
            if force && !killed(prev) {
                return state(&c.name, phase::PENDING, false, None);
            }
            let moved_on = c.status_context.as_ref().is_some_and(|ctx| {
                rt.full_id != ctx.container_id || rt.restart_count > ctx.restart_count
            });
            if moved_on {
                let ran = rt.started_at.map_or(Duration::MAX, |s| {
                    Duration::try_from(now.duration_since(s)).unwrap_or(Duration::ZERO)
                });
                let ready = synced
                    .get(&c.name)
                    .is_some_and(|s| s.container_id == rt.full_id && s.ready);
                let p = if ready && ran > min_started {
                    phase::SUCCEEDED
                } else {
                    phase::RECREATING
                };
                return state(&c.name, p, killed(prev), None);
            }
            state(&c.name, phase::PENDING, killed(prev), None)
        })
        .collect()
}

/// What a pass does once the request is `Recreating` and past its unready grace period
/// (`manage`).
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Write these container states (`status.containerRecreateStates`).
    Patch(Vec<ContainerRecreateRequestContainerRecreateState>),
    /// Complete the request (every container finished, or one failed with `failurePolicy:
    /// Fail`).
    Complete,
    /// Stop container `index` of the request (its runtime ID is `full_id`), then write `states`
    /// with that container `Recreating` and killed (or `Failed` if stopping fails).
    Kill {
        /// Index in `spec.containers` (and in `states`).
        index: usize,
        /// `<runtime>://<id>` to stop.
        full_id: String,
        /// The states to write after the kill.
        states: Vec<ContainerRecreateRequestContainerRecreateState>,
    },
    /// Nothing to write; look again after `minStartedSeconds` if set.
    Wait(Option<Duration>),
}

/// The next step for a `Recreating` request whose containers are in `states` (from
/// [`current_states`]).
pub fn decide(
    crr: &ContainerRecreateRequest,
    runtime: &[RuntimeView],
    mut states: Vec<ContainerRecreateRequestContainerRecreateState>,
) -> Decision {
    let recorded = crr
        .status
        .as_ref()
        .and_then(|s| s.container_recreate_states.clone())
        .unwrap_or_default();
    if recorded != states {
        return Decision::Patch(states);
    }
    let strategy = crr.spec.strategy.as_ref();
    let ignore = strategy.and_then(|s| s.failure_policy.as_deref())
        == Some(container_recreate_request_failure_policy::IGNORE);
    let ordered = strategy.and_then(|s| s.ordered_recreate).unwrap_or(false);
    let mut completed = 0;
    let mut kill = None;
    for (i, st) in states.iter_mut().enumerate() {
        match st.phase.as_str() {
            phase::SUCCEEDED => {
                completed += 1;
                continue;
            }
            phase::FAILED => {
                completed += 1;
                if ignore {
                    continue;
                }
                return Decision::Complete;
            }
            _ => {}
        }
        if st.phase == phase::RECREATING {
            st.is_killed = Some(true);
            if ordered {
                break;
            }
            continue;
        }
        let Some(rt) = runtime.iter().find(|r| r.name == st.name) else {
            break;
        };
        kill = Some((i, rt.full_id.clone()));
        break;
    }
    if let Some((index, full_id)) = kill {
        return Decision::Kill {
            index,
            full_id,
            states,
        };
    }
    if recorded != states {
        return Decision::Patch(states);
    }
    if completed == states.len() {
        return Decision::Complete;
    }
    let min_started = strategy.and_then(|s| s.min_started_seconds).unwrap_or(0);
    Decision::Wait(
        (min_started > 0).then(|| Duration::from_secs(u64::try_from(min_started).unwrap_or(0))),
    )
}

/// The states after stopping container `index`: `Recreating` and killed, or `Failed` with the
/// error (`kill container error: …`).
pub fn after_kill(
    mut states: Vec<ContainerRecreateRequestContainerRecreateState>,
    index: usize,
    error: Option<String>,
) -> Vec<ContainerRecreateRequestContainerRecreateState> {
    if let Some(st) = states.get_mut(index) {
        match error {
            None => {
                st.is_killed = Some(true);
                st.phase = phase::RECREATING.to_owned();
            }
            Some(e) => {
                st.phase = phase::FAILED.to_owned();
                st.message = Some(format!("kill container error: {e}"));
            }
        }
    }
    states
}

/// The runtime (`containerd`, ...) every requested container's `statusContext.containerID`
/// names (`newRuntimeManager`).
///
/// # Errors
/// OpenKruise's messages: no status context, an unparsable ID, two runtimes, none.
pub fn runtime_of(crr: &ContainerRecreateRequest) -> Result<String, String> {
    let mut runtime: Option<String> = None;
    for c in &crr.spec.containers {
        let Some(id) = c
            .status_context
            .as_ref()
            .map(|s| s.container_id.as_str())
            .filter(|s| !s.is_empty())
        else {
            return Err(format!(
                "no statusContext or empty containerID in {} container",
                c.name
            ));
        };
        let Some((kind, _)) = id.split_once("://") else {
            return Err(format!(
                "failed to parse containerID {id} in {} container: invalid container ID: {id:?}",
                c.name
            ));
        };
        match &runtime {
            None => runtime = Some(kind.to_owned()),
            Some(r) if r != kind => {
                return Err(format!("has different runtime types {r}, {kind} in Pod"));
            }
            Some(_) => {}
        }
    }
    runtime.ok_or_else(|| "no runtime type found in Pod".to_owned())
}

/// How long is left of `unreadyGracePeriodSeconds` after the manager made the pod not ready
/// (annotation `crr.apps.kruise.io/unready-acquired`, RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnreadyGate {
    /// No grace period asked, or it has passed.
    Open,
    /// The manager has not made the pod not ready yet.
    WaitForManager,
    /// Wait this long.
    Wait(Duration),
    /// The annotation cannot be parsed (the request is completed with this message).
    Invalid(String),
}

/// The unready gate of `crr` at `now`.
pub fn unready_gate(crr: &ContainerRecreateRequest, now: Timestamp) -> UnreadyGate {
    let Some(grace) = crr
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.unready_grace_period_seconds)
    else {
        return UnreadyGate::Open;
    };
    let stamp = crr
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::CRR_UNREADY_ACQUIRED))
        .map_or("", String::as_str);
    if stamp.is_empty() {
        return UnreadyGate::WaitForManager;
    }
    let acquired: Timestamp = match stamp.parse() {
        Ok(t) => t,
        Err(e) => {
            return UnreadyGate::Invalid(format!("failed to parse unready time {stamp}: {e}"));
        }
    };
    let grace = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
    let elapsed = Duration::try_from(now.duration_since(acquired)).unwrap_or(Duration::ZERO);
    match grace.checked_sub(elapsed).filter(|d| !d.is_zero()) {
        Some(left) => UnreadyGate::Wait(left + Duration::from_millis(100)),
        None => UnreadyGate::Open,
    }
}

#[cfg(test)]
mod tests;
