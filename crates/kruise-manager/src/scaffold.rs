//! The shape every controller shares, written once: the error of a pass, the owner lookup and
//! the expectation bookkeeping of the informers a controller follows, the reconcile prologue
//! (scale-expectations gate, bounded pass) and the set-up tail (observers running beside
//! [`runtime::run_controller`] until shutdown). A controller module keeps only its watches, its
//! `reconcile`, its pure `plan` and its status (see "How to add a controller" in
//! `docs/architecture.md`).
//!
//! The parts follow controller-runtime's and OpenKruise's: an error is retried with the
//! runner's per-object backoff (controller-runtime's default rate limiter); owned objects map to
//! their controller owner (`handler.EnqueueRequestForOwner` with `OnlyControllerOwner`); the
//! expectations are OpenKruise's `ScaleExpectations`, `UpdateExpectations` and
//! `ResourceVersionExpectations`, observed from the event handlers.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use kruise_engines::expectations::{
    ResourceVersionExpectations, ScaleAction, ScaleExpectations, UpdateExpectations,
};
use kruise_runtime::cache::{CacheEvent, CacheSync, Cached, Informer};
use kruise_runtime::runner::{self as runtime, Context, Triggers};

/// The error of one pass of a controller. Every variant is retried with the runner's
/// per-object backoff (5 ms doubling to 1000 s, as controller-runtime's default); a user's
/// mistake is also reported as an Event or condition by the controller where OpenKruise does.
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

/// The object of kind `kind` in group `apps.kruise.io` (any version) that controls `obj`
/// (its controller owner reference), if any.
pub fn controller_of<W, K>(obj: &K, kind: &str) -> Option<ObjectRef<W>>
where
    W: Resource<DynamicType = ()>,
    K: Resource,
{
    let owner = obj.meta().owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true) && o.kind == kind && o.api_version.starts_with("apps.kruise.io/")
    })?;
    let ns = obj.meta().namespace.as_deref().unwrap_or("");
    Some(ObjectRef::new(&owner.name).within(ns))
}

/// The expectations a workload controller keeps about the objects it owns.
#[derive(Clone)]
pub struct Expectations {
    /// Creations and deletions not yet seen in the cache, per owner (`namespace/name`).
    pub scale: ScaleExpectations,
    /// Objects updated in place and not yet seen at their new revision (when the controller
    /// keeps them).
    pub updates: Option<UpdateExpectations>,
    /// Minimum resourceVersions the cache must show for objects the controller wrote.
    pub resource_versions: ResourceVersionExpectations,
}

/// Follows one shared informer of objects that workloads of kind `kind` own: for every change
/// of an owned object (deletions included) it observes the scale expectations (an object seen
/// is a creation seen; one terminating or gone is a deletion seen), drops a deleted object's
/// update and resourceVersion expectations ([`crate::workload::forget_deleted`]) and asks for a
/// reconcile of the owner through `triggers`. Ends when the informer stops.
pub fn observe_owned<K, W>(
    informer: &Informer<K>,
    kind: &'static str,
    expectations: Expectations,
    triggers: UnboundedSender<ObjectRef<W>>,
) -> impl Future<Output = ()> + Send + 'static + use<K, W>
where
    K: Cached,
    W: Resource<DynamicType = ()> + 'static,
{
    informer.subscribe().for_each(move |event| {
        let obj = event.object();
        let owner = controller_of::<W, _>(obj.as_ref(), kind);
        if let Some(owner) = &owner {
            let key = format!(
                "{}/{}",
                owner.namespace.as_deref().unwrap_or(""),
                owner.name
            );
            let name = obj.name_any();
            match &event {
                CacheEvent::Apply(_) => {
                    expectations.scale.observe(&key, ScaleAction::Create, &name);
                    if obj.meta().deletion_timestamp.is_some() {
                        expectations.scale.observe(&key, ScaleAction::Delete, &name);
                    }
                }
                CacheEvent::Delete(o) => {
                    expectations.scale.observe(&key, ScaleAction::Delete, &name);
                    if let Some(updates) = &expectations.updates {
                        updates.delete_object(&key, o.meta());
                    }
                }
            }
        }
        crate::workload::forget_deleted(&expectations.resource_versions, &event);
        if let Some(owner) = owner {
            let _ = triggers.unbounded_send(owner);
        }
        std::future::ready(())
    })
}

/// controller-runtime's `EnqueueRequestForOwner` (`OnlyControllerOwner`) for a kind whose
/// objects need no expectations: every change of an object of `informer` (deletions included)
/// asks for a reconcile of its controller of kind `kind` through `triggers`. Ends when the
/// informer stops.
pub fn enqueue_owner<K, W>(
    informer: &Informer<K>,
    kind: &'static str,
    triggers: UnboundedSender<ObjectRef<W>>,
) -> impl Future<Output = ()> + Send + 'static + use<K, W>
where
    K: Cached,
    W: Resource<DynamicType = ()> + 'static,
{
    informer.subscribe().for_each(move |event| {
        if let Some(owner) = controller_of::<W, _>(event.object().as_ref(), kind) {
            let _ = triggers.unbounded_send(owner);
        }
        std::future::ready(())
    })
}

/// The key of a namespaced object in expectations and logs: `namespace/name`.
pub fn key<K: Resource>(obj: &K) -> String {
    format!(
        "{}/{}",
        obj.meta().namespace.as_deref().unwrap_or(""),
        obj.meta().name.as_deref().unwrap_or("")
    )
}

/// The reconcile prologue of a workload `key` ([`key`]): OpenKruise's scale-expectations gate
/// ([`crate::workload::scale_gate`]: wait while creations or deletions are not yet in the
/// cache), then `pass` bounded by [`crate::workload::PASS_TIMEOUT`].
pub async fn workload_pass(
    key: &str,
    ctx: &Context,
    scale: &ScaleExpectations,
    pass: impl Future<Output = Result<Action, Error>>,
) -> Result<Action, Error> {
    if let Some(wait) = crate::workload::scale_gate(scale, key, ctx.config.expectation_timeout) {
        return Ok(wait);
    }
    crate::workload::bounded_pass(key, pass, Error::Other).await
}

/// A set-up controller for [`run`]: its name (`--controllers`, metrics, logs), its worker
/// count, what triggers its passes, and every cache its passes read.
pub struct Controller<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> {
    /// The controller's name.
    pub name: &'static str,
    /// Concurrent passes (0 is taken as 1).
    pub workers: u16,
    /// What triggers a pass ([`Triggers`]).
    pub triggers: Triggers<K>,
    /// The caches the passes read; no pass runs before all have synced.
    pub caches: Vec<CacheSync>,
}

impl<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> Controller<K> {
    /// Controller `name` with `workers`, triggered by `triggers`, reading `caches`.
    pub fn new(
        name: &'static str,
        workers: u16,
        triggers: Triggers<K>,
        caches: Vec<CacheSync>,
    ) -> Self {
        Self {
            name,
            workers,
            triggers,
            caches,
        }
    }
}

/// The set-up tail every controller shares: `observers` (futures following shared informers,
/// mapping their events to the triggers) run on their own task until shutdown; the
/// controller runs once its caches have synced ([`runtime::run_controller`]), each pass being
/// `reconcile(object, ctx, state)` with a clone of `state`; the observers are stopped when it
/// returns.
pub fn run<K, S, Fut, E>(
    ctx: Arc<Context>,
    controller: Controller<K>,
    observers: impl Future<Output: Send> + Send + 'static,
    state: S,
    reconcile: fn(Arc<K>, Arc<Context>, S) -> Fut,
) -> impl Future<Output = Result<(), runtime::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    S: Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let shutdown = ctx.shutdown.clone();
    let observers = tokio::spawn(async move {
        tokio::select! {
            _ = observers => {},
            () = shutdown.cancelled() => {},
        }
    });
    let Controller {
        name,
        workers,
        triggers,
        caches,
    } = controller;
    async move {
        let pass = move |obj, ctx| reconcile(obj, ctx, state.clone());
        let result = runtime::run_controller(ctx, name, workers, triggers, caches, pass).await;
        observers.abort();
        result
    }
}

/// Sets up a controller of pods: the shared pod informer (started now), the pod changes
/// `wanted` selects as triggers, and `reconcile` for each, run by [`runtime::run_controller`]
/// once the pod cache has synced. Used by the controllers whose only input is the pod itself
/// (pod readiness, container launch priority).
pub fn pod_controller<Fut, E>(
    ctx: &Arc<Context>,
    name: &'static str,
    workers: u16,
    wanted: fn(&kruise_api::pod::CachedPod) -> bool,
    reconcile: fn(Arc<kruise_api::pod::CachedPod>, Arc<Context>) -> Fut,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static
where
    Fut:
        std::future::Future<Output = Result<kube::runtime::controller::Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    use futures::StreamExt;
    let ctx = ctx.clone();
    let pods = ctx.cache.informer::<kruise_api::pod::CachedPod>();
    let caches = vec![pods.synced()];
    let triggers = pods
        .applied_objects()
        .filter(move |p| std::future::ready(wanted(p)));
    let controller = Triggers::new(triggers, pods.store().clone());
    async move { runtime::run_controller(ctx, name, workers, controller, caches, reconcile).await }
}
