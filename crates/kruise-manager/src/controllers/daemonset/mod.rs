//! Advanced DaemonSet controller (`apps.kruise.io/v1beta1` DaemonSet; OpenKruise v1.9.0
//! `pkg/controller/daemonset`, reference §3.3).
//!
//! Same shape as every controller: [`setup`] (watches: DaemonSets, their pods, nodes, from the
//! shared cache), [`reconcile`] (one pass, in `sync`), pure decisions in [`plan`].
//!
//! One pass, as OpenKruise's `syncDaemonSet`: find or create the revision of the template
//! (its `controller-revision-hash` label is the hash pods carry); claim pods; per node, from
//! the scheduling predicates a daemon pod must pass there (node name, node selector and required
//! affinity, taints against the template's tolerations plus the daemon tolerations), create the
//! missing pod, delete extra, failed (with a per-node backoff), misscheduled and unscheduled
//! pods — within `burstReplicas`, holding pods in `PreparingDelete` while a preDelete hook
//! holds them; then, once those writes are seen in the cache, the rolling update: nodes in
//! OpenKruise's order (updated, being replaced, then by descending name, restricted by the
//! rollout's node `selector`, `partition` nodes left old), old pods replaced within
//! `maxUnavailable` — in place with `rollingUpdateType: InPlaceIfPossible` — or, with
//! `maxSurge`, a new pod started beside each old one; then history and status.
//!
//! Pods are named `<set>-<5 random characters>` by the controller (what `generateName` would
//! give) so that every create is tracked in scale expectations by name.

pub mod plan;
mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1beta1::DaemonSet;
use kruise_api::pod::CachedPod;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::expectations::{ResourceVersionExpectations, ScaleExpectations};
use kruise_runtime::cache::Informer;
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "daemonset";

pub use crate::scaffold::Error;

/// The kind whose controller owner references mark the pods this controller owns (OpenKruise
/// resolves only `apps.kruise.io/v1beta1` references; any `apps.kruise.io` version is taken
/// here).
const KIND: &str = "DaemonSet";

/// Exponential backoff of failed daemon pods per set and node (upstream's `failedPodsBackoff`:
/// 1 s doubling to 15 min, forgotten after 30 min).
#[derive(Clone, Default)]
pub struct FailedBackoff(Arc<Mutex<HashMap<String, (Duration, Instant)>>>);

impl FailedBackoff {
    const INITIAL: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(15 * 60);
    const FORGET: Duration = Duration::from_secs(30 * 60);

    /// How long failed pods on `key` still wait (`None`: delete them now).
    pub fn waiting(&self, key: &str, now: Instant) -> Option<Duration> {
        let map = self.0.lock().ok()?;
        let (backoff, last) = *map.get(key)?;
        let since = now.saturating_duration_since(last);
        (since <= Self::FORGET)
            .then(|| backoff.checked_sub(since))
            .flatten()
            .filter(|d| !d.is_zero())
    }

    /// A failed pod on `key` is deleted now: the next one waits twice as long.
    pub fn next(&self, key: &str, now: Instant) {
        if let Ok(mut map) = self.0.lock() {
            let e = map.entry(key.to_owned()).or_insert((Duration::ZERO, now));
            let expired = now.saturating_duration_since(e.1) > Self::FORGET;
            e.0 = if e.0.is_zero() || expired {
                Self::INITIAL
            } else {
                (e.0 * 2).min(Self::MAX)
            };
            e.1 = now;
        }
    }
}

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// DaemonSets (to map node changes to sets).
    pub sets: Informer<DaemonSet>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Nodes (cluster-wide).
    pub nodes: Informer<Node>,
    /// ControllerRevisions.
    pub revisions: Informer<ControllerRevision>,
    /// Pod creations and deletions not yet seen in the cache, per set.
    pub scale: ScaleExpectations,
    /// Minimum resourceVersions the cache must show for pods we wrote.
    pub resource_versions: ResourceVersionExpectations,
    /// Failed-pod backoff.
    pub backoff: FailedBackoff,
    /// `--assign-pods-by-scheduler`.
    pub assign_by_scheduler: bool,
    /// Update revisions whose skipped image pre-download was logged.
    pub predownload_logged: Arc<Mutex<std::collections::HashSet<String>>>,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--daemonset-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
    assign_by_scheduler: bool,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let sets = ctx.cache.informer::<DaemonSet>();
    let state = State {
        sets: sets.clone(),
        pods: ctx.cache.informer::<CachedPod>(),
        nodes: ctx.cache.cluster_informer::<Node>(),
        revisions: ctx.cache.informer::<ControllerRevision>(),
        scale: ScaleExpectations::new(),
        resource_versions: ResourceVersionExpectations::new(),
        backoff: FailedBackoff::default(),
        assign_by_scheduler,
        predownload_logged: Arc::default(),
    };
    let caches = vec![
        sets.synced(),
        state.pods.synced(),
        state.nodes.synced(),
        state.revisions.synced(),
    ];
    let (triggers, trigger_rx) = futures::channel::mpsc::unbounded();
    let pods = scaffold::observe_owned(
        &state.pods,
        KIND,
        scaffold::Expectations {
            scale: state.scale.clone(),
            updates: None,
            resource_versions: state.resource_versions.clone(),
        },
        triggers.clone(),
    );
    // A node change can change where daemon pods should run: every set looks again (upstream
    // compares the predicates per set; the passes are cheap when nothing changed).
    let node_sets = sets.clone();
    let nodes = state.nodes.subscribe().for_each(move |_| {
        for ds in node_sets.store().state() {
            let _ = triggers.unbounded_send(ObjectRef::from_obj(ds.as_ref()));
        }
        std::future::ready(())
    });
    let triggers = runtime::Triggers::from_informer(&sets).reconcile_on(trigger_rx);
    let controller = scaffold::Controller::new(CONTROLLER_NAME, workers, triggers, caches);
    scaffold::run(
        ctx,
        controller,
        futures::future::join(pods, nodes),
        state,
        reconcile,
    )
}

/// One pass over one Advanced DaemonSet (see the module documentation).
pub async fn reconcile(
    ds: Arc<DaemonSet>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(ds.as_ref());
    let pass = sync::sync(&ds, &ctx, &state, &key);
    scaffold::workload_pass(&key, &ctx, &state.scale, pass).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_backoff_waits_then_expires_without_overflow() {
        let b = FailedBackoff::default();
        let t0 = Instant::now();
        assert_eq!(b.waiting("k", t0), None, "no failure yet");
        b.next("k", t0);
        assert_eq!(
            b.waiting("k", t0 + Duration::from_millis(400)),
            Some(Duration::from_millis(600))
        );
        // Past the backoff (the OpenKruise e2e run that found this panicked here).
        assert_eq!(b.waiting("k", t0 + Duration::from_secs(1)), None);
        assert_eq!(b.waiting("k", t0 + Duration::from_secs(5)), None);
        assert_eq!(b.waiting("k", t0 + FailedBackoff::FORGET * 2), None);
        // The next failure doubles it.
        let t1 = t0 + Duration::from_secs(5);
        b.next("k", t1);
        assert_eq!(b.waiting("k", t1), Some(Duration::from_secs(2)));
    }
}
