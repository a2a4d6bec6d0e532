//! Controller runner glue: the shared [`Context`] every controller receives and
//! [`run_controller`], which drives a [`kube::runtime::Controller`] with N workers, records the
//! controller-runtime metrics and applies the standard per-object retry backoff.
//!
//! # Contract for controllers (stable)
//!
//! A controller module exposes a set-up function that `main.rs` calls at start-up, before
//! leader election, through its registry line; it returns the future `main.rs` runs once this
//! replica leads:
//!
//! ```text
//! pub fn setup(ctx: &Arc<Context>, …) -> impl Future<Output = Result<(), runtime::Error>> + Send + 'static;
//! ```
//!
//! Set-up takes the informers it reads from the shared cache ([`Context::cache`], started at
//! once so they fill while the replica waits for the Lease) and describes what triggers a
//! reconcile ([`Triggers`]: the primary informer, plus owned objects mapped to their owner);
//! the future hands both to [`run_controller`], which builds the kube-runtime `Controller`,
//! starts no reconcile before every listed cache has synced and returns once the manager shuts
//! down (`ctx.shutdown` cancelled) and every in-flight reconcile has finished:
//!
//! ```text
//! pub fn setup(ctx: &Arc<Context>) -> impl Future<Output = Result<(), runtime::Error>> + Send + 'static {
//!     let ctx = ctx.clone();
//!     let clonesets = ctx.cache.informer::<CloneSet>();
//!     let pods = ctx.cache.informer::<Pod>();
//!     let caches = vec![clonesets.synced(), pods.synced()];
//!     let triggers = Triggers::from_informer(&clonesets).reconcile_on(owner_refs_of(&pods));
//!     async move { runtime::run_controller(ctx, "cloneset", 3, triggers, caches, reconcile).await }
//! }
//!
//! // Any error type implementing std::error::Error + Send + Sync + 'static works.
//! async fn reconcile(cs: Arc<CloneSet>, ctx: Arc<Context>) -> Result<Action, MyError> { … }
//! ```
//!
//! What the reconcile function returns decides the follow-up, mirroring controller-runtime's
//! `reconcile.Result` handling:
//!
//! | reconcile returns                        | metric `result` label | follow-up                                           |
//! |------------------------------------------|-----------------------|-----------------------------------------------------|
//! | `Ok(Action::await_change())`             | `success`             | backoff forgotten; next watch event                 |
//! | `Ok(Action::requeue(d))`, `d > 0`        | `requeue_after`       | backoff forgotten; reconcile again after `d`        |
//! | `Ok(Action::requeue(Duration::ZERO))`    | `requeue`             | rate-limited retry (per-object backoff, see below)  |
//! | `Err(e)`                                 | `error`               | logged, rate-limited retry (per-object backoff)     |
//!
//! The per-object backoff is controller-runtime's default item limiter: `5ms * 2^failures`,
//! capped at 1000s; a `success`/`requeue_after` outcome resets it.
//!
//! [`Context`] fields are public: `client`, `gates` ([`FeatureGates`]), `metrics` ([`Metrics`]),
//! `recorder` ([`EventRecorder`]), `shutdown` ([`CancellationToken`], cancelled on SIGTERM/SIGINT
//! or lost leadership), `readiness` ([`Readiness`]), `cache` ([`SharedCache`]) and `config`
//! ([`ControllerConfig`]: `expectation_timeout`, `namespace`,
//! `cache_sync_timeout`). Tests build one with [`Context::new`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::{BoxStream, Stream};
use futures::{FutureExt, StreamExt};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
pub use tokio_util::sync::CancellationToken;

use crate::cache::{CacheSync, Cached, Informer, InitialList, SharedCache};
use crate::events::EventRecorder;
use crate::features::FeatureGates;
use crate::metrics::{Metrics, ReconcileResult};
use crate::server::Readiness;

/// Errors of the controller runtime and of controller entry points (`run`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call made while setting a controller up failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The controller's watch caches never became ready before shutdown.
    #[error("controller {controller}: caches did not sync: {reason}")]
    CacheSync {
        /// Controller name.
        controller: String,
        /// Why.
        reason: String,
    },
    /// Any other fatal controller failure.
    #[error("controller {controller}: {reason}")]
    Fatal {
        /// Controller name.
        controller: String,
        /// Why.
        reason: String,
    },
}

/// Static knobs of the controllers, filled from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// How long an unsatisfied scale/resource-version expectation is trusted before it is
    /// considered leaked (`--expectation-timeout`, default 5 minutes).
    pub expectation_timeout: Duration,
    /// Restrict the watches to one namespace (`--namespace`, OpenKruise's flag of the same
    /// name); `None` watches the whole cluster.
    pub namespace: Option<String>,
    /// How long a controller waits for the caches it reads to complete their initial list
    /// before the manager gives up and exits (`--cache-sync-timeout`, controller-runtime's
    /// `CacheSyncTimeout`, default 2 minutes).
    pub cache_sync_timeout: Duration,
    /// Reconcile every object of each controller again at this period (`--sync-period`,
    /// controller-runtime's SyncPeriod); `None`: only on changes.
    pub sync_period: Option<Duration>,
    /// How the shared cache's informers make their initial lists (`--cache-initial-list`,
    /// default [`InitialList::Auto`]: streamed where the API server can).
    pub initial_list: InitialList,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            expectation_timeout: Duration::from_secs(300),
            namespace: None,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            sync_period: None,
            initial_list: InitialList::Auto,
        }
    }
}

/// controller-runtime's default `CacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything a controller's reconcile function needs, shared by all controllers.
#[derive(Clone)]
pub struct Context {
    /// API client.
    pub client: Client,
    /// Effective feature gates (defaults, flags and dependency rules applied).
    pub gates: FeatureGates,
    /// Prometheus metrics of the manager.
    pub metrics: Arc<Metrics>,
    /// Event recorder reporting as `kruise-manager`.
    pub recorder: EventRecorder,
    /// Cancelled when the manager shuts down (signal or lost leadership).
    pub shutdown: CancellationToken,
    /// Readiness shared with `/readyz`; [`run_controller`] registers each controller's caches.
    pub readiness: Readiness,
    /// Controller knobs from the command line.
    pub config: ControllerConfig,
    /// The process-wide informer cache every controller reads from (see [`crate::cache`]).
    pub cache: SharedCache,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("gates", &self.gates)
            .field("config", &self.config)
            .field("shutdown", &self.shutdown.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context with fresh metrics, a recorder for `client`, a new shutdown token and
    /// readiness flag. Fields can be replaced afterwards (they are public).
    /// The [`SharedCache`] watches `config.namespace` (or the cluster), reports to the new
    /// readiness and stops with the new shutdown token.
    pub fn new(client: Client, gates: FeatureGates, config: ControllerConfig) -> Self {
        let shutdown = CancellationToken::new();
        let readiness = Readiness::new();
        Self {
            recorder: EventRecorder::new(client.clone()),
            cache: SharedCache::with_initial_list(
                client.clone(),
                config.namespace.clone(),
                readiness.clone(),
                shutdown.clone(),
                config.initial_list,
            ),
            client,
            gates,
            metrics: Arc::new(Metrics::new()),
            shutdown,
            readiness,
            config,
        }
    }
}

/// How often the cache-sync watcher re-checks the controller's store.
const CACHE_POLL: Duration = Duration::from_millis(250);

/// Base delay of the per-object retry backoff (controller-runtime: 5ms).
pub const BACKOFF_BASE: Duration = Duration::from_millis(5);
/// Cap of the per-object retry backoff (controller-runtime: 1000s).
pub const BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// Delay before the next retry of an object that has failed `failures` times before this
/// failure: `5ms * 2^failures`, capped at 1000s (controller-runtime's per-item exponential
/// limiter).
pub fn item_backoff(failures: u32) -> Duration {
    // 2^18 * 5ms ≈ 1310s already exceeds the cap.
    if failures >= 18 {
        return BACKOFF_MAX;
    }
    (BACKOFF_BASE * (1u32 << failures)).min(BACKOFF_MAX)
}

/// The action asking for a rate-limited retry (controller-runtime's `Result{Requeue: true}`).
pub fn requeue_rate_limited() -> Action {
    Action::requeue(Duration::ZERO)
}

/// The metric label of a successful reconcile's action (see the module table).
pub fn classify(action: &Action) -> ReconcileResult {
    if *action == Action::await_change() {
        ReconcileResult::Success
    } else if *action == requeue_rate_limited() {
        ReconcileResult::Requeue
    } else {
        ReconcileResult::RequeueAfter
    }
}

type ObjectKey = (String, String);

/// Per-object failure counts and the set of objects waiting for a rate-limited retry.
#[derive(Debug, Default)]
struct RateLimiter {
    failures: Mutex<HashMap<ObjectKey, u32>>,
}

impl RateLimiter {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, u32>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Next delay for `key`, counting this failure.
    fn when(&self, key: ObjectKey) -> Duration {
        let mut map = self.lock();
        let n = map.entry(key).or_insert(0);
        let delay = item_backoff(*n);
        *n = n.saturating_add(1);
        delay
    }

    fn forget(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }

    #[cfg(test)]
    fn pending(&self) -> usize {
        self.lock().len()
    }
}

fn key_of<K: Resource>(obj: &K) -> ObjectKey {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

fn key_of_ref<K: Resource>(r: &ObjectRef<K>) -> ObjectKey {
    (r.namespace.clone().unwrap_or_default(), r.name.clone())
}

/// What makes a controller reconcile an object: its primary objects (every object of the
/// stream is reconciled; typically [`Informer::applied_objects`] of the shared cache) with the
/// store reconciles read them from, plus streams of references to reconcile (owned objects
/// mapped to their owner, periodic resyncs, …). [`run_controller`] builds the kube-runtime
/// `Controller` from them and counts what enters its queue.
pub struct Triggers<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> {
    objects: BoxStream<'static, Arc<K>>,
    store: Store<K>,
    refs: Vec<BoxStream<'static, ObjectRef<K>>>,
}

impl<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> Triggers<K> {
    /// Reconcile every object `objects` yields, reading them from `store`.
    pub fn new(objects: impl Stream<Item = Arc<K>> + Send + 'static, store: Store<K>) -> Self {
        Self {
            objects: objects.boxed(),
            store,
            refs: Vec::new(),
        }
    }

    /// Every object of a shared-cache informer, as it is added or changes.
    pub fn from_informer(informer: &Informer<K>) -> Self
    where
        K: Cached,
    {
        Self::new(informer.applied_objects(), informer.store().clone())
    }

    /// Also reconcile every object `refs` names (kube-runtime's `Controller::reconcile_on`).
    pub fn reconcile_on(mut self, refs: impl Stream<Item = ObjectRef<K>> + Send + 'static) -> Self {
        self.refs.push(refs.boxed());
        self
    }
}

/// The work-queue accounting of one controller, as client-go's workqueue reports it:
/// an object **added** while not already waiting counts once in `workqueue_adds_total` and
/// waits (`workqueue_depth`) until a worker takes it, which observes the time it waited in
/// `workqueue_queue_duration_seconds`. kube-runtime's scheduler merges requests internally, so
/// the accounting is done on what enters it (the [`Triggers`]) and what leaves it (a reconcile
/// starting): a reconcile of an object that was not waiting came from a requeue timer — the
/// delayed add client-go counts when the timer fires.
#[derive(Debug)]
struct WorkQueue {
    waiting: Mutex<HashMap<ObjectKey, Instant>>,
    depth: prometheus_client::metrics::gauge::Gauge,
    adds: prometheus_client::metrics::counter::Counter,
    queue_duration: prometheus_client::metrics::histogram::Histogram,
}

impl WorkQueue {
    fn new(metrics: &Metrics, name: &str) -> Self {
        Self {
            waiting: Mutex::default(),
            depth: metrics.workqueue_depth(name),
            adds: metrics.workqueue_adds(name),
            queue_duration: metrics.workqueue_queue_duration(name),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Instant>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A trigger asked for `key`.
    fn add(&self, key: ObjectKey) {
        let mut waiting = self.lock();
        if let std::collections::hash_map::Entry::Vacant(e) = waiting.entry(key) {
            e.insert(Instant::now());
            self.adds.inc();
        }
        self.depth
            .set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    }

    /// A worker took `key`.
    fn start(&self, key: &ObjectKey) {
        let mut waiting = self.lock();
        match waiting.remove(key) {
            Some(since) => self.queue_duration.observe(since.elapsed().as_secs_f64()),
            None => {
                // A requeue timer fired: client-go adds it then, and a worker takes it at once.
                self.adds.inc();
                self.queue_duration.observe(0.0);
            }
        }
        self.depth
            .set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    }

    /// `key` left the queue without a reconcile (the object is gone).
    fn forget(&self, key: &ObjectKey) {
        let mut waiting = self.lock();
        waiting.remove(key);
        self.depth
            .set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    }
}

/// Runs the controller `triggers` describe with `workers` concurrent reconciles until `ctx.shutdown` is cancelled and
/// the in-flight reconciles have finished.
///
/// **No reconcile before the caches are synced**: `caches` lists every cache the reconcile
/// function reads (the controller's primary informer included when it comes from the
/// [`SharedCache`]). The controller is not started — no trigger is processed, no worker runs —
/// until all of them have completed their initial list, as controller-runtime's
/// `WaitForCacheSync`; `/readyz` reports `<name>-cache` failing meanwhile. If they have not
/// synced within `ctx.config.cache_sync_timeout`, or shutdown comes first, the function returns
/// without reconciling anything.
///
/// Per reconcile it records `controller_runtime_reconcile_total{controller=name,result}`,
/// `…_errors_total`, `…_reconcile_time_seconds`, `…_active_workers` and, for retries,
/// `workqueue_retries_total`; `workqueue_adds_total`, `workqueue_depth` (objects waiting for a
/// worker) and `workqueue_queue_duration_seconds` follow client-go's workqueue (see the
/// accounting on the triggers). Until the controller's main cache has synced, `/readyz`
/// reports the check `<name>-cache` as failing. Errors are logged with the object and retried
/// with [`item_backoff`]; see the module docs for how returned actions are treated.
///
/// # Errors
/// [`Error::CacheSync`] naming the caches that did not sync in time (the manager exits
/// non-zero with that message rather than run half-blind). Reconcile errors are retried and
/// watch errors logged and retried by kube.
pub async fn run_controller<K, F, Fut, E>(
    ctx: Arc<Context>,
    name: &'static str,
    workers: u16,
    triggers: Triggers<K>,
    caches: Vec<CacheSync>,
    reconcile: F,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let workers = workers.max(1);
    let metrics = ctx.metrics.clone();
    metrics.register_controller(name, workers);
    let instruments = Instruments {
        name,
        metrics: metrics.clone(),
        queue: Arc::new(WorkQueue::new(&metrics, name)),
        limiter: Arc::new(RateLimiter::default()),
    };
    // Readiness: the controller's caches, then its main store.
    let cache_check = format!("{name}-cache");
    ctx.readiness.add_pending(&cache_check);
    if !wait_for_caches(&ctx, name, &caches).await? {
        return Ok(());
    }
    let store = triggers.store.clone();
    let controller = controller_for(&ctx, &instruments.queue, triggers);
    mark_ready_when_synced(&ctx, name, store, cache_check);

    tracing::info!(controller = name, workers, "starting controller");
    let queue = instruments.queue.clone();
    controller
        .with_config(kube::runtime::controller::Config::default().concurrency(workers))
        .graceful_shutdown_on(ctx.shutdown.clone().cancelled_owned())
        .run(
            instruments.reconcile_handler(reconcile, metrics.active_workers(name)),
            instruments.error_policy(),
            ctx.clone(),
        )
        .for_each(|res| {
            let queue = queue.clone();
            async move { log_controller_result(name, &queue, res) }
        })
        .await;
    tracing::info!(controller = name, "controller stopped");
    Ok(())
}

/// controller-runtime's `WaitForCacheSync` at a controller's start: `Ok(true)` once every cache
/// in `caches` has completed its initial list, `Ok(false)` when shutdown came first,
/// [`Error::CacheSync`] naming what did not sync within `--cache-sync-timeout`.
async fn wait_for_caches(
    ctx: &Context,
    name: &'static str,
    caches: &[CacheSync],
) -> Result<bool, Error> {
    if caches.is_empty() {
        return Ok(true);
    }
    let names: Vec<&str> = caches.iter().map(CacheSync::name).collect();
    tracing::info!(controller = name, caches = ?names, "waiting for caches to sync");
    let timeout = ctx.config.cache_sync_timeout;
    tokio::select! {
        res = crate::cache::wait_for_cache_sync(caches, timeout) => match res {
            Ok(()) => Ok(true),
            Err(reason) => Err(Error::CacheSync { controller: name.to_owned(), reason }),
        },
        () = ctx.shutdown.cancelled() => {
            tracing::info!(controller = name, "shutdown before the caches synced");
            Ok(false)
        }
    }
}

/// The kube-runtime controller of `triggers`, every trigger counted into `queue`
/// (client-go's workqueue metrics), with controller-runtime's `SyncPeriod` resync of every
/// object in the store when `--sync-period` is set.
fn controller_for<K>(ctx: &Context, queue: &Arc<WorkQueue>, triggers: Triggers<K>) -> Controller<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let Triggers {
        objects,
        store,
        refs,
    } = triggers;
    let objects = {
        let queue = queue.clone();
        objects.inspect(move |o| queue.add(key_of(o.as_ref())))
    };
    let refs = {
        let queue = queue.clone();
        futures::stream::select_all(refs).inspect(move |r| queue.add(key_of_ref(r)))
    };
    let controller = Controller::for_shared_stream(objects, store.clone()).reconcile_on(refs);
    let Some(period) = ctx.config.sync_period.filter(|p| !p.is_zero()) else {
        return controller;
    };
    let queue = queue.clone();
    let ticks = futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(period).await;
        Some(((), ()))
    })
    .inspect(move |()| {
        for o in store.state() {
            queue.add(key_of(o.as_ref()));
        }
    });
    controller.reconcile_all_on(ticks)
}

/// Marks the readiness check `check` done once the controller's main store is ready.
fn mark_ready_when_synced<K>(ctx: &Context, name: &'static str, store: Store<K>, check: String)
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let readiness = ctx.readiness.clone();
    let shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        // The store's readiness future only keeps the waker of its latest poller, and the
        // controller's own applier polls it too; so poll in short rounds instead of parking once.
        loop {
            let round = tokio::time::timeout(CACHE_POLL, store.wait_until_ready());
            tokio::select! {
                res = round => match res {
                    Ok(Ok(())) => {
                        tracing::info!(controller = name, "caches synced");
                        readiness.mark_done(&check);
                        return;
                    }
                    // The writer is gone: the controller stopped.
                    Ok(Err(_)) => return,
                    Err(_) => {}
                },
                () = shutdown.cancelled() => return,
            }
        }
    });
}

/// One instrumented pass ([`Instruments::reconcile_handler`]).
type PassFuture<E> = std::pin::Pin<Box<dyn Future<Output = Result<Action, E>> + Send>>;

/// What one controller's reconciles are measured and paced with: controller-runtime's
/// reconcile metrics, client-go's workqueue accounting and the per-object backoff.
struct Instruments {
    name: &'static str,
    metrics: Arc<Metrics>,
    queue: Arc<WorkQueue>,
    limiter: Arc<RateLimiter>,
}

impl Instruments {
    /// controller-runtime's `reconcileHandler` around `reconcile`: the object leaves the queue,
    /// `active_workers` counts the pass, a panic fails only this pass (logged, counted, retried
    /// with backoff, as controller-runtime's `RecoverPanic`), the result is counted by kind, a
    /// requeue without a delay is paced by the backoff and a success forgets it.
    fn reconcile_handler<K, F, Fut, E>(
        &self,
        reconcile: F,
        active: prometheus_client::metrics::gauge::Gauge,
    ) -> impl FnMut(Arc<K>, Arc<Context>) -> PassFuture<E> + use<K, F, Fut, E>
    where
        K: Resource<DynamicType = ()> + Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Send + 'static,
    {
        let reconcile = Arc::new(reconcile);
        let (name, metrics, queue, limiter) = (
            self.name,
            self.metrics.clone(),
            self.queue.clone(),
            self.limiter.clone(),
        );
        move |obj: Arc<K>, ctx: Arc<Context>| {
            let (metrics, limiter, queue) = (metrics.clone(), limiter.clone(), queue.clone());
            let (active, reconcile) = (active.clone(), reconcile.clone());
            Box::pin(async move {
                let key = key_of(obj.as_ref());
                queue.start(&key);
                active.inc();
                let start = Instant::now();
                let res = recover_panic(reconcile(obj, ctx)).await;
                let elapsed = start.elapsed();
                active.dec();
                match res {
                    Ok(Ok(action)) => {
                        let result = classify(&action);
                        metrics.observe_reconcile(name, result, elapsed);
                        if result == ReconcileResult::Requeue {
                            metrics.workqueue_retry(name);
                            Ok(Action::requeue(limiter.when(key)))
                        } else {
                            limiter.forget(&key);
                            Ok(action)
                        }
                    }
                    Ok(Err(err)) => {
                        metrics.observe_reconcile(name, ReconcileResult::Error, elapsed);
                        Err(err)
                    }
                    Err(message) => {
                        metrics.observe_panic(name);
                        metrics.observe_reconcile(name, ReconcileResult::Error, elapsed);
                        metrics.workqueue_retry(name);
                        let delay = limiter.when(key.clone());
                        tracing::error!(
                            controller = name,
                            namespace = %key.0,
                            name = %key.1,
                            panic = %message,
                            retry_in = ?delay,
                            "reconcile panicked; retrying"
                        );
                        Ok(Action::requeue(delay))
                    }
                }
            })
        }
    }

    /// controller-runtime's error path: log the error with the object and retry it after the
    /// per-object backoff.
    fn error_policy<K, E>(&self) -> impl Fn(Arc<K>, &E, Arc<Context>) -> Action + use<K, E>
    where
        K: Resource<DynamicType = ()>,
        E: std::error::Error,
    {
        let (name, metrics, limiter) = (self.name, self.metrics.clone(), self.limiter.clone());
        move |obj: Arc<K>, err: &E, _ctx: Arc<Context>| {
            let key = key_of(obj.as_ref());
            let delay = limiter.when(key.clone());
            metrics.workqueue_retry(name);
            tracing::error!(
                controller = name,
                namespace = %key.0,
                name = %key.1,
                error = %err,
                retry_in = ?delay,
                "Reconciler error"
            );
            Action::requeue(delay)
        }
    }
}

/// What the controller stream reports after each pass: errors were handled by the error
/// policy; an object gone before its pass leaves the queue; anything else is logged.
fn log_controller_result<K, E, QE>(
    name: &'static str,
    queue: &WorkQueue,
    res: Result<(ObjectRef<K>, Action), kube::runtime::controller::Error<E, QE>>,
) where
    K: Resource<DynamicType = ()>,
    E: std::error::Error + 'static,
    QE: std::error::Error + 'static,
{
    use kube::runtime::controller::Error as CErr;
    match res {
        Ok(_) | Err(CErr::ReconcilerFailed(..)) => {}
        Err(CErr::ObjectNotFound(obj)) => {
            queue.forget(&key_of_ref(&obj));
            tracing::debug!(controller = name, object = %obj, "object gone before reconcile");
        }
        Err(err) => tracing::warn!(controller = name, error = %err, "controller stream error"),
    }
}

/// Runs `fut`, turning a panic into `Err(<the panic message>)`.
async fn recover_panic<T>(fut: impl Future<Output = T>) -> Result<T, String> {
    std::panic::AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|panic| {
            panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_reconcile_becomes_an_error() {
        assert_eq!(recover_panic(async { 7 }).await, Ok(7));
        let none: Option<u8> = None;
        let r = recover_panic(async move { std::hint::black_box(none).expect("no value") }).await;
        assert_eq!(r, Err("no value".to_owned()));
        let n = 3;
        let r: Result<(), String> = recover_panic(async move { panic!("bad input {n}") }).await;
        assert_eq!(r, Err("bad input 3".to_owned()));
    }

    #[test]
    fn backoff_matches_controller_runtime() {
        let table = [
            (0, Duration::from_millis(5)),
            (1, Duration::from_millis(10)),
            (2, Duration::from_millis(20)),
            (10, Duration::from_millis(5120)),
            (17, Duration::from_millis(655_360)),
            (18, BACKOFF_MAX),
            (u32::MAX, BACKOFF_MAX),
        ];
        for (n, want) in table {
            assert_eq!(item_backoff(n), want, "failures={n}");
        }
    }

    #[test]
    fn backoff_is_monotonic_and_capped() {
        let mut prev = Duration::ZERO;
        for n in 0..64 {
            let d = item_backoff(n);
            assert!(d >= prev && d <= BACKOFF_MAX);
            prev = d;
        }
    }

    #[test]
    fn classify_actions() {
        assert_eq!(classify(&Action::await_change()), ReconcileResult::Success);
        assert_eq!(classify(&requeue_rate_limited()), ReconcileResult::Requeue);
        assert_eq!(
            classify(&Action::requeue(Duration::from_secs(3))),
            ReconcileResult::RequeueAfter
        );
    }

    fn series(m: &Metrics, s: &str) -> f64 {
        let text = m.encode().unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(s).and_then(|r| r.strip_prefix(' ')))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{s} missing in\n{text}"))
    }

    #[test]
    fn work_queue_counts_adds_and_waiting_items_as_client_go() {
        let m = Metrics::new();
        let q = WorkQueue::new(&m, "c");
        let a = ("ns".to_string(), "a".to_string());
        let b = ("ns".to_string(), "b".to_string());
        // Two triggers for a waiting object: one add, one waiting item.
        q.add(a.clone());
        q.add(a.clone());
        q.add(b.clone());
        assert_eq!(series(&m, r#"workqueue_adds_total{name="c"}"#), 2.0);
        assert_eq!(series(&m, r#"workqueue_depth{name="c"}"#), 2.0);
        // A worker takes a: it no longer waits.
        q.start(&a);
        assert_eq!(series(&m, r#"workqueue_depth{name="c"}"#), 1.0);
        assert_eq!(
            series(&m, r#"workqueue_queue_duration_seconds_count{name="c"}"#),
            1.0
        );
        // Triggered again while being reconciled: a new add.
        q.add(a.clone());
        assert_eq!(series(&m, r#"workqueue_adds_total{name="c"}"#), 3.0);
        // b is deleted before a worker takes it.
        q.forget(&b);
        assert_eq!(series(&m, r#"workqueue_depth{name="c"}"#), 1.0);
        q.start(&a);
        // A requeue timer fires for a: counted as an add when it runs.
        q.start(&a);
        assert_eq!(series(&m, r#"workqueue_adds_total{name="c"}"#), 4.0);
        assert_eq!(series(&m, r#"workqueue_depth{name="c"}"#), 0.0);
    }

    #[test]
    fn limiter_counts_and_forgets() {
        let l = RateLimiter::default();
        let k = ("ns".to_string(), "a".to_string());
        assert_eq!(l.when(k.clone()), Duration::from_millis(5));
        assert_eq!(l.when(k.clone()), Duration::from_millis(10));
        assert_eq!(l.when(("ns".into(), "b".into())), Duration::from_millis(5));
        assert_eq!(l.pending(), 2);
        l.forget(&k);
        assert_eq!(l.when(k), Duration::from_millis(5));
    }
}
