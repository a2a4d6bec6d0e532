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
use kube::{Resource, ResourceExt};

use kruise_engines::expectations::{
    ResourceVersionExpectations, ScaleAction, ScaleExpectations, UpdateExpectations,
};
use kruise_runtime::cache::{CacheEvent, Cached, Informer};
use kruise_runtime::runner::{self as runtime, Context};

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "statefulset";

/// Errors of one pass. Every variant is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A revision could not be built or read.
    #[error("revision: {0}")]
    Revision(#[from] kruise_engines::revision::RevisionError),
    /// A shared workload control failed.
    #[error(transparent)]
    Control(#[from] crate::workload::ControlError),
    /// Anything else that makes the pass fail (messages as OpenKruise's).
    #[error("{0}")]
    Other(String),
}

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

/// The Advanced StatefulSet controlling `obj`, if any.
fn owning_statefulset<K: Resource>(obj: &K) -> Option<ObjectRef<StatefulSet>> {
    let owner = obj.meta().owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true)
            && o.kind == "StatefulSet"
            && o.api_version.starts_with("apps.kruise.io/")
    })?;
    let ns = obj.meta().namespace.as_deref().unwrap_or("");
    Some(ObjectRef::new(&owner.name).within(ns))
}

/// Follows an informer of objects Advanced StatefulSets own: observes the expectations and
/// asks for a reconcile of the owner.
fn observe_owned<K: Cached>(
    informer: &Informer<K>,
    state: State,
    triggers: futures::channel::mpsc::UnboundedSender<ObjectRef<StatefulSet>>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    informer.subscribe().for_each(move |event| {
        let obj = event.object();
        let owner = owning_statefulset(obj.as_ref());
        if let Some(owner) = &owner {
            let key = format!(
                "{}/{}",
                owner.namespace.as_deref().unwrap_or(""),
                owner.name
            );
            let name = obj.name_any();
            match &event {
                CacheEvent::Apply(_) => {
                    state.scale.observe(&key, ScaleAction::Create, &name);
                    if obj.meta().deletion_timestamp.is_some() {
                        state.scale.observe(&key, ScaleAction::Delete, &name);
                    }
                }
                CacheEvent::Delete(o) => {
                    state.scale.observe(&key, ScaleAction::Delete, &name);
                    state.updates.delete_object(&key, o.meta());
                }
            }
        }
        crate::workload::forget_deleted(&state.resource_versions, &event);
        if let Some(owner) = owner {
            let _ = triggers.unbounded_send(owner);
        }
        std::future::ready(())
    })
}

/// Follows the claims this controller expanded (annotation `apps.kruise.io/owned-by-asts:
/// <set>`, OpenKruise's `pvcEventHandler`): a change of one (its capacity growing, a resize
/// condition) asks for a reconcile of that set.
fn observe_expanded_claims(
    informer: &Informer<PersistentVolumeClaim>,
    triggers: futures::channel::mpsc::UnboundedSender<ObjectRef<StatefulSet>>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
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
    let observers = futures::future::join3(
        observe_owned(&state.pods, state.clone(), triggers.clone()),
        observe_owned(&state.revisions, state.clone(), triggers.clone()),
        observe_expanded_claims(&state.pvcs, triggers),
    );
    let shutdown = ctx.shutdown.clone();
    let observers = tokio::spawn(async move {
        tokio::select! {
            _ = observers => {},
            () = shutdown.cancelled() => {},
        }
    });
    let controller = runtime::Triggers::from_informer(&sets).reconcile_on(trigger_rx);
    async move {
        let result = runtime::run_controller(
            ctx,
            CONTROLLER_NAME,
            workers,
            controller,
            caches,
            move |set, ctx| {
                let state = state.clone();
                async move { reconcile(set, ctx, state).await }
            },
        )
        .await;
        observers.abort();
        result
    }
}

/// One pass over one Advanced StatefulSet (see the module documentation).
pub async fn reconcile(
    set: Arc<StatefulSet>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = format!("{}/{}", set.namespace().unwrap_or_default(), set.name_any());
    if let Some(wait) =
        crate::workload::scale_gate(&state.scale, &key, ctx.config.expectation_timeout)
    {
        return Ok(wait);
    }
    crate::workload::bounded_pass(&key, sync::sync(&set, &ctx, &state, &key), Error::Other).await
}
