//! Advanced StatefulSet controller (`apps.kruise.io/v1beta1` StatefulSet; OpenKruise v1.9.0
//! `pkg/controller/statefulset`, reference §3.2).
//!
//! Same shape as every controller: [`setup`] (watches: StatefulSets, and pods, PVCs and
//! ControllerRevisions from the shared cache), [`reconcile`] (one pass over one set, in
//! `sync`), pure decisions in [`plan`].
//!
//! One pass, as OpenKruise's `UpdateStatefulSet`: adopt orphan revisions; claim pods (adopt
//! matching orphans, release owned pods that stopped matching); find or create the update
//! revision; observe update expectations; put every pod in its ordinal slot (reserved ordinals
//! and `ordinals.start` respected) or condemn it; then per slot in ascending order create the
//! missing pod (current or update revision by `partition`), delete failed ones, refresh
//! lifecycle and in-place state, repair identity/storage/PVC owner references — stopping at the
//! first pod not yet Running and available under `OrderedReady`, or when
//! `scaleStrategy.maxUnavailable` is used up under `Parallel`; then delete condemned pods
//! (highest ordinal first; one at a time and only when all is healthy under `OrderedReady`);
//! then the rolling update (`partition` pods left on the old revision, `maxUnavailable`,
//! in place or by recreation, `unorderedUpdate` priorities, `paused`, the
//! `apps.kruise.io/specified-delete` label); and the status.
//!
//! Beyond OpenKruise: every pod create and delete is recorded in scale expectations, so a
//! stale cache (a restart, a slow watch) never makes a pass act twice.

pub mod plan;
mod sync;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::v1beta1::StatefulSet;
use kruise_api::pod::CachedPod;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::expectations::{
    ResourceVersionExpectations, ScaleExpectations, UpdateExpectations,
};
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "statefulset";

/// The kind whose controller owner references mark the objects this controller owns.
const KIND: &str = "StatefulSet";

pub use crate::scaffold::Error;

/// State shared by all passes: the shared-cache informers read and the expectations.
#[derive(Clone)]
pub struct State {
    /// Pods (owner and namespace indexes).
    pub pods: Informer<CachedPod>,
    /// PVCs.
    pub pvcs: Informer<PersistentVolumeClaim>,
    /// ControllerRevisions.
    pub revisions: Informer<ControllerRevision>,
    /// Pod creations and deletions not yet seen in the cache, per set (`namespace/name`).
    pub scale: ScaleExpectations,
    /// Pods updated in place and not yet seen on the new revision (OpenKruise's).
    pub updates: UpdateExpectations,
    /// Minimum resourceVersions the cache must show for pods we wrote.
    pub resource_versions: ResourceVersionExpectations,
    /// Update revisions whose skipped image pre-download was already logged (`ns/name/rev`).
    pub predownload_logged: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// Follows the claims this controller expanded (annotation `apps.kruise.io/owned-by-asts:
/// <set>`, OpenKruise's `pvcEventHandler`): a change of one (its capacity growing, a resize
/// condition) asks for a reconcile of that set.
fn observe_expanded_claims(
    informer: &Informer<PersistentVolumeClaim>,
    triggers: futures::channel::mpsc::UnboundedSender<ObjectRef<StatefulSet>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    informer.subscribe().for_each(move |event| {
        if let CacheEvent::Apply(claim) = &event
            && let Some(set) = claim
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(plan::PVC_OWNED_BY_ASTS))
        {
            let ns = claim.metadata.namespace.as_deref().unwrap_or("");
            let _ = triggers.unbounded_send(ObjectRef::new(set).within(ns));
        }
        std::future::ready(())
    })
}

/// Sets the controller up (its informers start filling the shared cache at once) and returns
/// the future that runs it with `workers` (`--statefulset-workers`) once every cache it reads
/// has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let sets = ctx.cache.informer::<StatefulSet>();
    let state = State {
        pods: ctx.cache.informer::<CachedPod>(),
        pvcs: ctx.cache.informer::<PersistentVolumeClaim>(),
        revisions: ctx.cache.informer::<ControllerRevision>(),
        scale: ScaleExpectations::new(),
        updates: UpdateExpectations::new(),
        resource_versions: ResourceVersionExpectations::new(),
        predownload_logged: Arc::default(),
    };
    let caches = vec![
        sets.synced(),
        state.pods.synced(),
        state.pvcs.synced(),
        state.revisions.synced(),
    ];
    let (triggers, trigger_rx) = futures::channel::mpsc::unbounded();
    let expectations = scaffold::Expectations {
        scale: state.scale.clone(),
        updates: Some(state.updates.clone()),
        resource_versions: state.resource_versions.clone(),
    };
    let observers = futures::future::join3(
        scaffold::observe_owned(&state.pods, KIND, expectations.clone(), triggers.clone()),
        scaffold::observe_owned(&state.revisions, KIND, expectations, triggers.clone()),
        observe_expanded_claims(&state.pvcs, triggers),
    );
    let triggers = runtime::Triggers::from_informer(&sets).reconcile_on(trigger_rx);
    let controller = scaffold::Controller::new(CONTROLLER_NAME, workers, triggers, caches);
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one Advanced StatefulSet (see the module documentation).
pub async fn reconcile(
    set: Arc<StatefulSet>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(set.as_ref());
    let pass = sync::sync(&set, &ctx, &state, &key);
    scaffold::workload_pass(&key, &ctx, &state.scale, pass).await
}
