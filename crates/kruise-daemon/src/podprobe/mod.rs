//! kruise-daemon's pod prober (OpenKruise v1.9.0 `pkg/daemon/podprobe`): runs the custom probes
//! the node's NodePodProbe lists and writes their results to its status, from which the
//! manager's NodePodProbe controller sets pod conditions, labels and annotations. Runs when the
//! `PodProbeMarkerGate` feature gate is on.
//!
//! It reads its node's NodePodProbe only (field selector `metadata.name=<node>`). On a spec
//! change (`Controller.sync`) it keeps one worker per (pod namespace, name, UID, IP, container,
//! probe): new probes start a worker, changed ones update it ([`plan::plan_workers`]), vanished
//! ones stop it. A worker (`run_worker`) probes every `periodSeconds` (at least 1 s; a first
//! random wait within one period while the daemon started less than a period ago) the newest
//! runtime container of its name ([`Cri::latest_container_status`]) with [`prober::Prober`],
//! and stores the result by container ID and probe ([`plan::Results`]) once its threshold is
//! reached. A stored change (or an unchanged result 600 s old) makes the status sync
//! ([`plan::rebuild_status`]) record a `KruiseProbeSucceeded` / `KruiseProbeFailed` Event on the
//! pod for every result and replace the status when it changed; a failed write is retried with
//! backoff from 500 ms to about 50 s (OpenKruise's rate limiter).
//!
//! As in OpenKruise, a changed `periodSeconds` does not change the pace of a running worker (its
//! ticker was set when it started), and a deleted NodePodProbe leaves its workers running
//! until a new spec says otherwise.

pub mod plan;
pub mod prober;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kruise_api::apps::v1alpha1::{ContainerProbeSpec, NodePodProbe};
use kruise_runtime::Context;
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::events::EventRecorder;
use kruise_runtime::runner::{Triggers, run_controller};
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use self::plan::{ProbeKey, ResultOp, Results, WorkerChange, WorkerState};
use self::prober::Prober;
use crate::cri::Cri;

/// Controller name (metrics, logs) and the Events' component (OpenKruise's
/// `kruise-daemon-podprobe`).
pub const NAME: &str = "kruise-daemon-podprobe";

/// Name of the status-writing loop (metrics, logs).
pub const STATUS_NAME: &str = "kruise-daemon-podprobe-status";

/// Event reason of a succeeded probe result (`Normal`).
pub const EVENT_PROBE_SUCCEEDED: &str = "KruiseProbeSucceeded";

/// Event reason of a failed or unknown probe result (`Normal`, as OpenKruise records it).
pub const EVENT_PROBE_FAILED: &str = "KruiseProbeFailed";

/// First retry delay of a failed status write.
const STATUS_BACKOFF_BASE: Duration = Duration::from_millis(500);

/// Retry delay cap of a failed status write, before OpenKruise's random 0–5 s addition.
const STATUS_BACKOFF_CAP: Duration = Duration::from_secs(50);

/// The field selector of the node's own NodePodProbe.
pub fn selector(node: &str) -> String {
    format!("metadata.name={node}")
}

/// The delay before the retry after `failures` consecutive failed status writes:
/// `500ms * 2^(failures-1)`, at most `cap`.
pub fn status_backoff(failures: u32, cap: Duration) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    STATUS_BACKOFF_BASE.saturating_mul(1u32 << exp).min(cap)
}

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
}

struct WorkerHandle {
    spec: watch::Sender<ContainerProbeSpec>,
    stop: CancellationToken,
}

struct Inner {
    client: kube::Client,
    cri: Cri,
    prober: Prober,
    recorder: EventRecorder,
    node: String,
    start: Instant,
    results: Results,
    workers: Mutex<HashMap<ProbeKey, WorkerHandle>>,
    status_tx: mpsc::UnboundedSender<()>,
    status_failures: AtomicU32,
    backoff_cap: Duration,
    shutdown: CancellationToken,
}

/// The pod prober of one node.
pub struct PodProbe {
    inner: Arc<Inner>,
    status_rx: mpsc::UnboundedReceiver<()>,
}

impl PodProbe {
    /// A prober for node `node` writing through `client`, probing through `cri`, recording
    /// Events with `recorder` (component [`NAME`]).
    ///
    /// # Errors
    /// When the HTTP probe client cannot be built.
    pub fn new(
        client: kube::Client,
        cri: Cri,
        recorder: EventRecorder,
        node: &str,
    ) -> Result<Self, reqwest::Error> {
        let (status_tx, status_rx) = mpsc::unbounded_channel();
        let jitter = Duration::from_millis(rand::random_range(0..5000));
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                prober: Prober::new(cri.clone())?,
                cri,
                recorder,
                node: node.to_owned(),
                start: Instant::now(),
                results: Results::default(),
                workers: Mutex::default(),
                status_tx,
                status_failures: AtomicU32::new(0),
                backoff_cap: STATUS_BACKOFF_CAP + jitter,
                shutdown: CancellationToken::new(),
            }),
            status_rx,
        })
    }

    /// Runs until `ctx.shutdown`, reading `probes` (the node's NodePodProbe, [`selector`]).
    ///
    /// # Errors
    /// The runner's cache-sync error.
    pub async fn run(
        self,
        ctx: Arc<Context>,
        probes: Informer<NodePodProbe>,
    ) -> Result<(), kruise_runtime::runner::Error> {
        let Self { inner, status_rx } = self;
        let shutdown = inner.shutdown.clone();
        let parent = ctx.shutdown.clone();
        tokio::spawn(async move {
            parent.cancelled().await;
            shutdown.cancel();
        });

        // Spec changes (OpenKruise's add/update handlers: every object when first seen, then
        // only when its spec changed; none while it is being deleted).
        let source = probes.clone();
        let spec_objects = futures::stream::once(async move {
            let rx = source.subscribe();
            let existing = source.store().state();
            let mut seen: HashMap<String, kruise_api::apps::v1alpha1::NodePodProbeSpec> =
                HashMap::new();
            futures::stream::iter(existing.into_iter().map(CacheEvent::Apply))
                .chain(rx)
                .filter_map(move |ev| {
                    let out = match ev {
                        CacheEvent::Apply(o) => {
                            let name = o.metadata.name.clone().unwrap_or_default();
                            let changed = seen.get(&name) != Some(&o.spec);
                            if changed {
                                seen.insert(name, o.spec.clone());
                            }
                            (changed && o.metadata.deletion_timestamp.is_none()).then_some(o)
                        }
                        CacheEvent::Delete(o) => {
                            seen.remove(&o.metadata.name.clone().unwrap_or_default());
                            None
                        }
                    };
                    futures::future::ready(out)
                })
        })
        .flatten();
        let spec_triggers = Triggers::new(spec_objects, probes.store().clone());
        let this = inner.clone();
        let store = probes.store().clone();
        let spec_loop = run_controller(
            ctx.clone(),
            NAME,
            1,
            spec_triggers,
            vec![probes.synced()],
            move |_npp, _ctx| {
                let this = this.clone();
                let store = store.clone();
                async move {
                    if let Some(npp) = store.get(&ObjectRef::new(&this.node)) {
                        this.sync_workers(&npp);
                    }
                    this.trigger_status();
                    Ok::<_, Error>(Action::await_change())
                }
            },
        );

        // Result changes (OpenKruise's `updateStatus` queue).
        let store = probes.store().clone();
        let node = inner.node.clone();
        let status_objects = tokio_stream_from(status_rx)
            .filter_map(move |()| futures::future::ready(store.get(&ObjectRef::new(&node))));
        let status_triggers = Triggers::new(status_objects, probes.store().clone());
        let this = inner.clone();
        let store = probes.store().clone();
        let status_loop = run_controller(
            ctx.clone(),
            STATUS_NAME,
            1,
            status_triggers,
            vec![probes.synced()],
            move |_npp, _ctx| {
                let this = this.clone();
                let store = store.clone();
                async move { this.sync_status(&store).await }
            },
        );
        let (a, b) = tokio::join!(spec_loop, status_loop);
        inner.shutdown.cancel();
        a.and(b)
    }
}

/// `rx` as a stream.
fn tokio_stream_from<T: Send + 'static>(
    rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}

impl Inner {
    fn trigger_status(&self) {
        // The receiver lives as long as the status loop; a send after it ended is moot.
        let _ = self.status_tx.send(());
    }

    fn lock_workers(&self) -> std::sync::MutexGuard<'_, HashMap<ProbeKey, WorkerHandle>> {
        self.workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts, updates and stops workers to match the spec of `npp` (OpenKruise `sync`).
    fn sync_workers(self: &Arc<Self>, npp: &NodePodProbe) {
        let desired = plan::desired_probes(&npp.spec);
        let mut workers = self.lock_workers();
        let running: HashMap<ProbeKey, ContainerProbeSpec> = workers
            .iter()
            .map(|(k, w)| (k.clone(), w.spec.borrow().clone()))
            .collect();
        for change in plan::plan_workers(&desired, &running) {
            match change {
                WorkerChange::Start(key, spec) => {
                    tracing::info!(pod_uid = %key.pod_uid, container = %key.container_name, probe = %key.probe_name, "NodePodProbe run pod container probe worker");
                    let (tx, rx) = watch::channel(spec);
                    let stop = self.shutdown.child_token();
                    tokio::spawn(run_worker(self.clone(), key.clone(), rx, stop.clone()));
                    workers.insert(key, WorkerHandle { spec: tx, stop });
                }
                WorkerChange::Update(key, spec) => {
                    if let Some(w) = workers.get(&key) {
                        tracing::info!(pod_uid = %key.pod_uid, container = %key.container_name, probe = %key.probe_name, "NodePodProbe pod container probe changed");
                        w.spec.send_replace(spec);
                    }
                }
                WorkerChange::Stop(key) => {
                    if let Some(w) = workers.remove(&key) {
                        tracing::info!(namespace = %key.pod_namespace, pod = %key.pod_name, container = %key.container_name, probe = %key.probe_name, "NodePodProbe stop pod container probe worker");
                        w.stop.cancel();
                    }
                }
            }
        }
    }

    fn apply(&self, key: &ProbeKey, op: ResultOp) {
        match op {
            ResultOp::Remove(id) => self.results.remove(&id, &key.probe_name),
            ResultOp::Set {
                container_id,
                state,
                message,
            } => {
                if self
                    .results
                    .set(&container_id, key, state, &message, jiff::Timestamp::now())
                {
                    self.trigger_status();
                }
            }
        }
    }

    /// One probe tick of a worker (OpenKruise `worker.doProbe`).
    async fn do_probe(&self, key: &ProbeKey, spec: &ContainerProbeSpec, state: &mut WorkerState) {
        let container = match self
            .cri
            .latest_container_status(&key.pod_uid, &key.container_name)
            .await
        {
            Ok(Some(c)) => c,
            Ok(None) => {
                tracing::trace!(namespace = %key.pod_namespace, pod = %key.pod_name, container = %key.container_name, "pod container not found");
                return;
            }
            Err(e) => {
                tracing::debug!(pod_uid = %key.pod_uid, error = %e, "NodePodProbe pod list containers failed");
                return;
            }
        };
        for op in state.observe_container(&container.id, container.running, &key.container_name) {
            self.apply(key, op);
        }
        let now_ns = i64::try_from(jiff::Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX);
        if !plan::initial_delay_passed(&spec.probe, container.started_at, now_ns) {
            return;
        }
        match self
            .prober
            .probe(&spec.probe, key, &state.container_id)
            .await
        {
            Ok((result, message)) => {
                if state.record(&spec.probe, result) {
                    self.apply(
                        key,
                        ResultOp::Set {
                            container_id: state.container_id.clone(),
                            state: result,
                            message,
                        },
                    );
                }
            }
            Err(e) => {
                tracing::error!(namespace = %key.pod_namespace, pod = %key.pod_name, container = %key.container_name, probe = %key.probe_name, error = %e, "pod container probe failed");
            }
        }
    }

    /// Rebuilds and writes the status (OpenKruise `syncUpdateNodePodProbeStatus`).
    async fn sync_status(
        &self,
        store: &kube::runtime::reflector::Store<NodePodProbe>,
    ) -> Result<Action, Error> {
        let Some(npp) = store.get(&ObjectRef::new(&self.node)) else {
            return Ok(Action::await_change());
        };
        let valid = plan::valid_probes(&npp.spec);
        let updates = self.results.list();
        let events: Vec<_> = updates
            .iter()
            .filter(|u| plan::is_valid(&valid, u))
            .map(|u| {
                let regarding = ObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    namespace: Some(u.key.pod_namespace.clone()),
                    name: Some(u.key.pod_name.clone()),
                    uid: Some(u.key.pod_uid.clone()),
                    ..ObjectReference::default()
                };
                (regarding, plan::event_reason(u.state), u.message.clone())
            })
            .collect();
        if !events.is_empty() {
            let recorder = self.recorder.clone();
            tokio::spawn(async move {
                for (regarding, reason, note) in events {
                    recorder.normal(&regarding, reason, &note).await;
                }
            });
        }
        let status = plan::rebuild_status(
            &npp.spec,
            npp.status.as_ref(),
            &updates,
            jiff::Timestamp::now(),
        );
        if !plan::status_changed(npp.status.as_ref(), &status) {
            self.status_failures.store(0, Ordering::Relaxed);
            return Ok(Action::await_change());
        }
        let mut obj = (*npp).clone();
        obj.status = Some(status);
        let api: Api<NodePodProbe> = Api::all(self.client.clone());
        match api
            .replace_status(&self.node, &PostParams::default(), &obj)
            .await
        {
            Ok(_) => {
                self.status_failures.store(0, Ordering::Relaxed);
                tracing::info!(node = %self.node, "NodePodProbe update status success");
                Ok(Action::await_change())
            }
            Err(e) => {
                let failures = self.status_failures.fetch_add(1, Ordering::Relaxed) + 1;
                let delay = status_backoff(failures, self.backoff_cap);
                tracing::warn!(node = %self.node, error = %e, ?delay, "NodePodProbe update status failed");
                Ok(Action::requeue(delay))
            }
        }
    }
}

/// A probe worker (OpenKruise `worker.run`): probes every period until stopped, applying spec
/// updates between ticks; on exit it forgets its container's result.
async fn run_worker(
    inner: Arc<Inner>,
    key: ProbeKey,
    mut spec_rx: watch::Receiver<ContainerProbeSpec>,
    stop: CancellationToken,
) {
    let mut spec = spec_rx.borrow_and_update().clone();
    let period = plan::period(&spec.probe);
    if plan::jitter_first_probe(period, inner.start.elapsed()) {
        let wait = period.mul_f64(rand::random::<f64>());
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut state = WorkerState::default();
    'probing: loop {
        inner.do_probe(&key, &spec, &mut state).await;
        loop {
            tokio::select! {
                () = stop.cancelled() => break 'probing,
                _ = ticker.tick() => break,
                changed = spec_rx.changed() => {
                    if changed.is_err() {
                        break 'probing;
                    }
                    let new = spec_rx.borrow_and_update().clone();
                    if let Some(op) = state.on_spec_change(&spec.probe, &new.probe) {
                        tracing::info!(pod_uid = %key.pod_uid, container = %key.container_name, "pod container probe spec changed");
                        inner.apply(&key, op);
                    }
                    spec = new;
                }
            }
        }
    }
    if !state.container_id.is_empty() {
        inner.results.remove(&state.container_id, &key.probe_name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_backoff_doubles_from_500ms_to_the_cap() {
        let cap = Duration::from_secs(52);
        assert_eq!(status_backoff(1, cap), Duration::from_millis(500));
        assert_eq!(status_backoff(2, cap), Duration::from_secs(1));
        assert_eq!(status_backoff(7, cap), Duration::from_secs(32));
        assert_eq!(status_backoff(8, cap), cap);
        assert_eq!(status_backoff(u32::MAX, cap), cap);
    }

    #[test]
    fn selector_names_the_node() {
        assert_eq!(selector("n1"), "metadata.name=n1");
    }
}
