//! The pure decisions of the pod prober: which probe workers run, what a worker does with a
//! container and a probe result (OpenKruise v1.9.0 `pkg/daemon/podprobe/worker.go`), the results
//! it keeps (`results_manager.go`) and the NodePodProbe status rebuilt from them
//! (`pod_probe_controller.go`, `syncUpdateNodePodProbeStatus`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::{
    ContainerProbeSpec, ContainerProbeState, NodePodProbeSpec, NodePodProbeStatus, PodProbeStatus,
    probe_state,
};

/// Longest probe message kept, in bytes (OpenKruise `maxProbeMessageLength`).
pub const MAX_MESSAGE_LENGTH: usize = 1024;

/// A result unchanged for this long is stored (and the status synced) again, so
/// `lastProbeTime` moves (OpenKruise `maxSyncProbeTime`, seconds).
pub const MAX_SYNC_PROBE_SECONDS: i64 = 600;

/// What identifies one probe worker (OpenKruise `probeKey`): the pod, its IP, the container and
/// the probe name (`<PodProbeMarker>#<probe>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ProbeKey {
    /// Pod namespace.
    pub pod_namespace: String,
    /// Pod name.
    pub pod_name: String,
    /// Pod UID.
    pub pod_uid: String,
    /// Pod IP (default host of `httpGet` and `tcpSocket` probes).
    pub pod_ip: String,
    /// Container name.
    pub container_name: String,
    /// Probe name.
    pub probe_name: String,
}

/// Every probe of `spec` with its key, in spec order (a key listed twice appears twice; the
/// later spec wins, as in OpenKruise's `sync`).
pub fn desired_probes(spec: &NodePodProbeSpec) -> Vec<(ProbeKey, ContainerProbeSpec)> {
    let mut out = Vec::new();
    for pod in spec.pod_probes.iter().flatten() {
        for probe in pod.probes.iter().flatten() {
            out.push((
                ProbeKey {
                    pod_namespace: pod.namespace.clone(),
                    pod_name: pod.name.clone(),
                    pod_uid: pod.uid.clone(),
                    pod_ip: pod.ip.clone(),
                    container_name: probe.container_name.clone(),
                    probe_name: probe.name.clone(),
                },
                probe.probe.clone(),
            ));
        }
    }
    out
}

/// A change to the running probe workers.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerChange {
    /// Start a worker for a new key.
    Start(ProbeKey, ContainerProbeSpec),
    /// Give a running worker a changed probe spec.
    Update(ProbeKey, ContainerProbeSpec),
    /// Stop the worker of a key no longer in the spec.
    Stop(ProbeKey),
}

/// The worker changes that make the `running` workers (key → their current spec) match
/// `desired` (OpenKruise `Controller.sync`): new keys start, changed specs update, vanished keys
/// stop. Stops come last, ordered by key.
pub fn plan_workers(
    desired: &[(ProbeKey, ContainerProbeSpec)],
    running: &HashMap<ProbeKey, ContainerProbeSpec>,
) -> Vec<WorkerChange> {
    let mut specs: HashMap<&ProbeKey, &ContainerProbeSpec> = running.iter().collect();
    let mut out = Vec::new();
    let mut valid = HashSet::new();
    for (key, spec) in desired {
        valid.insert(key);
        match specs.get(key) {
            Some(current) if *current == spec => {}
            Some(_) => out.push(WorkerChange::Update(key.clone(), spec.clone())),
            None => out.push(WorkerChange::Start(key.clone(), spec.clone())),
        }
        specs.insert(key, spec);
    }
    let mut stops: Vec<_> = running.keys().filter(|k| !valid.contains(k)).collect();
    stops.sort();
    out.extend(stops.into_iter().map(|k| WorkerChange::Stop(k.clone())));
    out
}

/// Whether the probe action (`exec`, `httpGet`, `tcpSocket`, `grpc`) differs (OpenKruise
/// compares `ProbeHandler`): a changed action resets the result to `Unknown`.
pub fn handler_changed(old: &Probe, new: &Probe) -> bool {
    old.exec != new.exec
        || old.http_get != new.http_get
        || old.tcp_socket != new.tcp_socket
        || old.grpc != new.grpc
}

fn at_least_one(v: Option<i32>) -> i32 {
    v.unwrap_or(0).max(1)
}

/// How often a worker probes: `periodSeconds`, at least 1 s.
pub fn period(probe: &Probe) -> Duration {
    Duration::from_secs(at_least_one(probe.period_seconds).unsigned_abs().into())
}

/// How long one probe may take: `timeoutSeconds`, at least 1 s.
pub fn timeout(probe: &Probe) -> Duration {
    Duration::from_secs(at_least_one(probe.timeout_seconds).unsigned_abs().into())
}

/// Whether a worker started `since_start` after the daemon waits a random part of its period
/// before its first probe (only while the daemon started less than one period ago, so probes
/// of a restarted daemon spread out).
pub fn jitter_first_probe(period: Duration, since_start: Duration) -> bool {
    period > since_start
}

/// Whether the container started at `started_at_ns` (ns since the epoch) has been running for
/// `initialDelaySeconds` (at least 1 s) at `now_ns`; whole seconds elapsed, truncated, as
/// OpenKruise's `int32(time.Since(startedAt).Seconds())`.
pub fn initial_delay_passed(probe: &Probe, started_at_ns: i64, now_ns: i64) -> bool {
    let elapsed = now_ns.saturating_sub(started_at_ns) / 1_000_000_000;
    elapsed >= i64::from(at_least_one(probe.initial_delay_seconds))
}

/// An operation on the results manager decided by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultOp {
    /// Forget the result of this container ID.
    Remove(String),
    /// Store `state` and `message` for this container ID.
    Set {
        /// Runtime container ID.
        container_id: String,
        /// `Succeeded`, `Failed` or `Unknown`.
        state: &'static str,
        /// The message.
        message: String,
    },
}

/// What a worker remembers between ticks (OpenKruise `worker`): the container it last probed
/// and the run of identical results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerState {
    /// The container ID last seen ("" before the first).
    pub container_id: String,
    last_result: Option<&'static str>,
    result_run: i32,
}

impl WorkerState {
    /// The result operations for the container `id` found this tick: a new container drops the
    /// old one's result and starts at `Unknown` with no message; a container that is not running
    /// is `Failed` with `Container(<name>) is Non-running` (the tick goes on after that, as
    /// OpenKruise's does).
    pub fn observe_container(
        &mut self,
        id: &str,
        running: bool,
        container_name: &str,
    ) -> Vec<ResultOp> {
        let mut ops = Vec::new();
        if self.container_id != id {
            if !self.container_id.is_empty() {
                ops.push(ResultOp::Remove(self.container_id.clone()));
            }
            self.container_id = id.to_owned();
            ops.push(ResultOp::Set {
                container_id: id.to_owned(),
                state: probe_state::UNKNOWN,
                message: String::new(),
            });
        }
        if !running {
            ops.push(ResultOp::Set {
                container_id: self.container_id.clone(),
                state: probe_state::FAILED,
                message: format!("Container({container_name}) is Non-running"),
            });
        }
        ops
    }

    /// The result reset when the probe spec changes from `old` to `new`: `Unknown` when the
    /// action changed and a container was seen (OpenKruise `updateProbeSpec`).
    pub fn on_spec_change(&self, old: &Probe, new: &Probe) -> Option<ResultOp> {
        (handler_changed(old, new) && !self.container_id.is_empty()).then(|| ResultOp::Set {
            container_id: self.container_id.clone(),
            state: probe_state::UNKNOWN,
            message: String::new(),
        })
    }

    /// Counts a probe result (`Succeeded` or `Failed`) and says whether it is stored: only once
    /// the same result came `failureThreshold` / `successThreshold` (each at least 1) times in a
    /// row; below that the stored state is left unchanged.
    pub fn record(&mut self, probe: &Probe, result: &'static str) -> bool {
        if self.last_result == Some(result) {
            self.result_run = self.result_run.saturating_add(1);
        } else {
            self.last_result = Some(result);
            self.result_run = 1;
        }
        let threshold = if result == probe_state::FAILED {
            at_least_one(probe.failure_threshold)
        } else {
            at_least_one(probe.success_threshold)
        };
        self.result_run >= threshold
    }
}

/// `msg` cut to [`MAX_MESSAGE_LENGTH`] bytes, at a char boundary, when it has more than that
/// many characters (OpenKruise counts runes, then cuts bytes).
pub fn truncate_message(mut msg: String) -> String {
    if msg.chars().count() > MAX_MESSAGE_LENGTH {
        let mut end = MAX_MESSAGE_LENGTH;
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        msg.truncate(end);
    }
    msg
}

/// The latest result of one probe on one container (OpenKruise `Update`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The probe.
    pub key: ProbeKey,
    /// `Succeeded`, `Failed` or `Unknown`.
    pub state: &'static str,
    /// Its message.
    pub message: String,
    /// When it was stored.
    pub last_probe_time: jiff::Timestamp,
}

/// The probe results by runtime container ID and probe name (OpenKruise's `resultManager`
/// keys them by container ID alone, so two probes of one container overwrite each other's
/// result: the status then flips between them every period and a reset can be lost; keyed by
/// both, each probe keeps its own result and the status holds the same states without the
/// churn).
#[derive(Debug, Default)]
pub struct Results {
    map: Mutex<BTreeMap<(String, String), Update>>,
}

impl Results {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Update>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores the result of probe `key` on container `id` at `now` when it is new, its state or message
    /// changed, or the stored one is [`MAX_SYNC_PROBE_SECONDS`] old; returns whether it did
    /// (then the status must be synced).
    pub fn set(
        &self,
        id: &str,
        key: &ProbeKey,
        state: &'static str,
        message: &str,
        now: jiff::Timestamp,
    ) -> bool {
        let mut map = self.lock();
        let slot = (id.to_owned(), key.probe_name.clone());
        let store = map.get(&slot).is_none_or(|prev| {
            prev.state != state
                || prev.message != message
                || now.duration_since(prev.last_probe_time).as_secs() >= MAX_SYNC_PROBE_SECONDS
        });
        if store {
            map.insert(
                slot,
                Update {
                    key: key.clone(),
                    state,
                    message: message.to_owned(),
                    last_probe_time: now,
                },
            );
        }
        store
    }

    /// Forgets the result of probe `probe_name` on container `id`.
    pub fn remove(&self, id: &str, probe_name: &str) {
        self.lock().remove(&(id.to_owned(), probe_name.to_owned()));
    }

    /// Every stored result, ordered by container ID and probe name.
    pub fn list(&self) -> Vec<Update> {
        self.lock().values().cloned().collect()
    }
}

/// `<pod uid>/<probe name>` of every probe in `spec`.
pub fn valid_probes(spec: &NodePodProbeSpec) -> HashSet<String> {
    spec.pod_probes
        .iter()
        .flatten()
        .flat_map(|pod| {
            pod.probes
                .iter()
                .flatten()
                .map(move |p| format!("{}/{}", pod.uid, p.name))
        })
        .collect()
}

/// Whether `update` is about a probe still in the spec (`valid` from [`valid_probes`]).
pub fn is_valid(valid: &HashSet<String>, update: &Update) -> bool {
    valid.contains(&format!("{}/{}", update.key.pod_uid, update.key.probe_name))
}

pub use kruise_api::time::whole_seconds;

/// The NodePodProbe status rebuilt from the `current` one and the `updates`
/// (`syncUpdateNodePodProbeStatus`): states of probes no longer in `spec` are dropped (a pod
/// left with none is dropped), then every valid update is written into its pod's entry
/// (appended when new): state, message and `lastProbeTime` (whole seconds);
/// `lastTransitionTime` is `now` when the entry is new or its state changed.
pub fn rebuild_status(
    spec: &NodePodProbeSpec,
    current: Option<&NodePodProbeStatus>,
    updates: &[Update],
    now: jiff::Timestamp,
) -> NodePodProbeStatus {
    let valid = valid_probes(spec);
    let now = Time(whole_seconds(now));
    let mut pods: Vec<PodProbeStatus> = Vec::new();
    for pod in current
        .and_then(|s| s.pod_probe_statuses.as_ref())
        .into_iter()
        .flatten()
    {
        let states: Vec<ContainerProbeState> = pod
            .probe_states
            .iter()
            .flatten()
            .filter(|s| valid.contains(&format!("{}/{}", pod.uid, s.name)))
            .cloned()
            .collect();
        if !states.is_empty() {
            pods.push(PodProbeStatus {
                name: pod.name.clone(),
                namespace: pod.namespace.clone(),
                uid: pod.uid.clone(),
                probe_states: Some(states),
            });
        }
    }
    for update in updates.iter().filter(|u| is_valid(&valid, u)) {
        let idx = match pods.iter().position(|p| p.uid == update.key.pod_uid) {
            Some(i) => i,
            None => {
                pods.push(PodProbeStatus {
                    name: update.key.pod_name.clone(),
                    namespace: update.key.pod_namespace.clone(),
                    uid: update.key.pod_uid.clone(),
                    probe_states: None,
                });
                pods.len() - 1
            }
        };
        let states = pods[idx].probe_states.get_or_insert_with(Vec::new);
        let message = (!update.message.is_empty()).then(|| update.message.clone());
        let probe_time = Some(Time(whole_seconds(update.last_probe_time)));
        match states.iter_mut().find(|s| s.name == update.key.probe_name) {
            Some(s) => {
                if s.state != update.state {
                    s.last_transition_time = Some(now.clone());
                }
                s.state = update.state.to_owned();
                s.message = message;
                s.last_probe_time = probe_time;
            }
            None => states.push(ContainerProbeState {
                name: update.key.probe_name.clone(),
                state: update.state.to_owned(),
                last_probe_time: probe_time,
                last_transition_time: Some(now.clone()),
                message,
            }),
        }
    }
    NodePodProbeStatus {
        pod_probe_statuses: (!pods.is_empty()).then_some(pods),
    }
}

/// `status` as the API would return it after a write: empty lists and messages absent,
/// times in whole seconds.
fn normalized(status: Option<&NodePodProbeStatus>) -> NodePodProbeStatus {
    let pods: Vec<PodProbeStatus> = status
        .and_then(|s| s.pod_probe_statuses.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|mut p| {
            let states: Vec<ContainerProbeState> = p
                .probe_states
                .take()
                .unwrap_or_default()
                .into_iter()
                .map(|mut s| {
                    s.message = s.message.filter(|m| !m.is_empty());
                    s.last_probe_time = s.last_probe_time.map(|t| Time(whole_seconds(t.0)));
                    s.last_transition_time =
                        s.last_transition_time.map(|t| Time(whole_seconds(t.0)));
                    s
                })
                .collect();
            p.probe_states = (!states.is_empty()).then_some(states);
            p
        })
        .collect();
    NodePodProbeStatus {
        pod_probe_statuses: (!pods.is_empty()).then_some(pods),
    }
}

/// Whether writing `new` would change the `current` status (compared as written: whole
/// seconds, empty lists and messages as absent), so an unchanged status is not written again.
pub fn status_changed(current: Option<&NodePodProbeStatus>, new: &NodePodProbeStatus) -> bool {
    normalized(current) != normalized(Some(new))
}

/// The reason of the pod Event recording a result: `KruiseProbeSucceeded` for `Succeeded`,
/// else `KruiseProbeFailed` (both `Normal`).
pub fn event_reason(state: &str) -> &'static str {
    if state == probe_state::SUCCEEDED {
        super::EVENT_PROBE_SUCCEEDED
    } else {
        super::EVENT_PROBE_FAILED
    }
}

#[cfg(test)]
mod tests;
