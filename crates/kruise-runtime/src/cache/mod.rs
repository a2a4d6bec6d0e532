//! The process-wide shared informer cache: one reflector per resource type, created on first
//! use and shared by every controller (controller-runtime's `cache.Cache`).
//!
//! # What it guarantees
//!
//! * **One watch per type.** [`SharedCache::informer`] (namespaced kinds) and
//!   [`SharedCache::cluster_informer`] (cluster-scoped kinds) return the same [`Informer`] to
//!   every caller; the first call starts its reflector (initial list + watch, client-go's
//!   default backoff on errors). The initial list is streamed when the API server can
//!   (WatchList: a watch with `sendInitialEvents=true`, objects arriving one by one and slimmed
//!   as they come, so the process never holds the whole collection at once), else one LIST with
//!   `resourceVersion=0` from the API server's watch cache ([`InitialList`]).
//! * **Indexed by owner.** [`Informer::owned_by`] answers "the objects this controller owns"
//!   from an index on the controller owner reference's UID, without scanning the store.
//! * **Slim objects.** `metadata.managedFields` is dropped before an object is stored: no
//!   controller reads it, and it is often the largest part of a pod. The manager caches pods
//!   as `kruise_api::pod::CachedPod`, a type holding only the pod fields kruise-rs reads (it
//!   decodes straight from the watch); of its volumes only the claims are kept. Pods cached as
//!   k8s-openapi's `Pod` (kruise-daemon's) keep only the status fields some controller reads
//!   (`slim`) and the claim volumes. Nodes are cached without their status, which nothing
//!   reads. Pods are written as JSON patches against the cached copy.
//! * **Sync state per informer.** Every informer has a [`CacheSync`] handle that turns true when
//!   its initial list has completed (the watcher's first `InitDone`, i.e. client-go's
//!   `HasSynced`). The check `cache-<plural>` keeps `/readyz` failing until then. Controllers
//!   pass the handles of every cache they read to [`crate::runner::run_controller`], which
//!   starts no reconcile before all of them are synced ([`wait_for_cache_sync`], fatal on
//!   timeout, naming the cache): a restarted manager never acts on a half-filled cache.
//! * **Events after the store.** Subscribers ([`Informer::subscribe`]) receive every change
//!   *after* the store shows it, so a subscriber that reads the store sees at least that
//!   state. A re-list (the watch expired, HTTP 410) is turned into the changes it implies —
//!   `Apply` for objects that are new or have a new `resourceVersion`, `Delete` for objects that
//!   disappeared while the watch was down — as client-go's `DeltaFIFO.Replace` does; kube's
//!   watcher alone would swap the store silently and lose those deletions.
//!
//! The cache watches one namespace when the manager runs with `--namespace`, else the whole
//! cluster; cluster-scoped kinds are always watched cluster-wide.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::server::Readiness;

/// What a cached object type must offer (every k8s-openapi and kruise-api kind does).
pub trait Cached:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}
impl<K> Cached for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

/// A change seen by an informer, delivered to subscribers after the store was updated.
#[derive(Debug, Clone)]
pub enum CacheEvent<K> {
    /// The object was added or modified; the `Arc` is the one the store holds.
    Apply(Arc<K>),
    /// The object was deleted (its last known state).
    Delete(Arc<K>),
}

impl<K> CacheEvent<K> {
    /// The object the event is about.
    pub fn object(&self) -> &Arc<K> {
        match self {
            CacheEvent::Apply(o) | CacheEvent::Delete(o) => o,
        }
    }
}

/// Whether one informer has completed its initial list. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CacheSync {
    name: Arc<str>,
    rx: watch::Receiver<bool>,
}

impl CacheSync {
    /// A handle that is synced once `rx` holds `true` (for tests and custom caches).
    pub fn new(name: &str, rx: watch::Receiver<bool>) -> Self {
        Self {
            name: name.into(),
            rx,
        }
    }

    /// Name of the cache (the resource's plural, e.g. `pods`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the initial list has completed.
    pub fn is_synced(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once the initial list has completed; `false` if the informer stopped first.
    pub async fn wait(&self) -> bool {
        let mut rx = self.rx.clone();
        rx.wait_for(|s| *s).await.is_ok()
    }
}

/// Waits until every cache in `caches` has completed its initial list (controller-runtime's
/// `WaitForCacheSync`).
///
/// # Errors
/// After `timeout`, or when an informer stopped before syncing, a message naming every cache
/// that is not synced, e.g. `timed out after 120s waiting for caches to sync: pods`.
pub async fn wait_for_cache_sync(caches: &[CacheSync], timeout: Duration) -> Result<(), String> {
    let all = futures::future::join_all(caches.iter().map(CacheSync::wait));
    match tokio::time::timeout(timeout, all).await {
        Ok(results) if results.iter().all(|ok| *ok) => Ok(()),
        Ok(_) => Err(format!(
            "informers stopped before their caches synced: {}",
            unsynced(caches)
        )),
        Err(_) => Err(format!(
            "timed out after {timeout:?} waiting for caches to sync: {}",
            unsynced(caches)
        )),
    }
}

fn unsynced(caches: &[CacheSync]) -> String {
    let names: Vec<&str> = caches
        .iter()
        .filter(|c| !c.is_synced())
        .map(CacheSync::name)
        .collect();
    names.join(", ")
}

struct InformerInner<K: Cached> {
    name: String,
    store: Store<K>,
    synced: CacheSync,
    subscribers: Mutex<Vec<UnboundedSender<CacheEvent<K>>>>,
    /// The indexes (by controller owner UID, namespace, node), changed under one lock with
    /// the store.
    indexes: Mutex<Indexes<K>>,
}

type Index<K> = HashMap<String, HashSet<Entry<K>>>;

/// An index entry: the stored object itself (the store's `Arc`, no copy of its name or
/// namespace), found by namespace and name — what identifies it in the store.
struct Entry<K: Cached>(Arc<K>);

impl<K: Cached> Entry<K> {
    fn id(&self) -> (Option<&str>, Option<&str>) {
        let meta = self.0.meta();
        (meta.namespace.as_deref(), meta.name.as_deref())
    }
}

impl<K: Cached> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl<K: Cached> Eq for Entry<K> {}

impl<K: Cached> std::hash::Hash for Entry<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id().hash(state);
    }
}

/// controller-runtime's field indexes of one informer: objects by the UID of their controller
/// owner reference (`controller: true`), by namespace, and — for pods — by `spec.nodeName`.
struct Indexes<K: Cached> {
    by_owner: Index<K>,
    by_namespace: Index<K>,
    by_node: Index<K>,
}

impl<K: Cached> Default for Indexes<K> {
    fn default() -> Self {
        Self {
            by_owner: HashMap::new(),
            by_namespace: HashMap::new(),
            by_node: HashMap::new(),
        }
    }
}

/// Selects one index of [`Indexes`].
type IndexOf<K> = fn(&mut Indexes<K>) -> &mut Index<K>;

/// The node a cached object is bound to: `spec.nodeName` of a pod; `None` for other kinds.
fn node_of<K: Cached>(obj: &K) -> Option<&str> {
    let any: &dyn std::any::Any = obj;
    let node = if let Some(p) = any.downcast_ref::<kruise_api::pod::CachedPod>() {
        p.spec.as_ref().and_then(|s| s.node_name.as_deref())
    } else {
        any.downcast_ref::<k8s_openapi::api::core::v1::Pod>()
            .and_then(|p| p.spec.as_ref())
            .and_then(|s| s.node_name.as_deref())
    };
    node.filter(|n| !n.is_empty())
}

impl<K: Cached> Indexes<K> {
    fn keys(obj: &K) -> [(IndexOf<K>, Option<&str>); 3] {
        [
            (|i| &mut i.by_owner, controller_uid(obj.meta())),
            (|i| &mut i.by_namespace, obj.meta().namespace.as_deref()),
            (|i| &mut i.by_node, node_of(obj)),
        ]
    }

    /// Indexes `obj`, the store's `Arc` of it: lookups answer with that `Arc`. An entry of the
    /// same object (namespace and name) already under a key is replaced, not kept.
    fn add(&mut self, obj: &Arc<K>) {
        for (index, key) in Self::keys(obj) {
            if let Some(key) = key {
                index(self)
                    .entry(key.to_owned())
                    .or_default()
                    .replace(Entry(obj.clone()));
            }
        }
    }

    fn remove(&mut self, obj: &Arc<K>) {
        for (index, key) in Self::keys(obj) {
            let index = index(self);
            if let Some(key) = key
                && let Some(set) = index.get_mut(key)
            {
                set.remove(&Entry(obj.clone()));
                if set.is_empty() {
                    index.remove(key);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.by_owner.clear();
        self.by_namespace.clear();
        self.by_node.clear();
    }
}

/// UID of the controller owner reference of `meta`, if any.
fn controller_uid(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

/// One shared reflector: its store, its sync state and its event fan-out. Cheap to clone.
pub struct Informer<K: Cached> {
    inner: Arc<InformerInner<K>>,
}

impl<K: Cached> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K: Cached> Informer<K> {
    /// The store (read-only view). Objects are shared `Arc`s: never copy them to read.
    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    /// The sync handle to pass to [`crate::runner::run_controller`].
    pub fn synced(&self) -> CacheSync {
        self.inner.synced.clone()
    }

    /// Name of the cache (the resource's plural).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The cached objects whose controller owner reference has `uid` (index lookup, no scan
    /// of the store; controller-runtime's owner index). The index and the store change under
    /// one lock, so an object being updated is never missing from the answer.
    pub fn owned_by(&self, uid: &str) -> Vec<Arc<K>> {
        self.lookup(|i| &i.by_owner, uid)
    }

    /// The cached objects in `namespace` (index lookup).
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.lookup(|i| &i.by_namespace, namespace)
    }

    /// The cached pods bound to node `node` (`spec.nodeName`; index lookup). Always empty for
    /// kinds other than pods.
    pub fn on_node(&self, node: &str) -> Vec<Arc<K>> {
        self.lookup(|i| &i.by_node, node)
    }

    fn lookup(&self, index: impl Fn(&Indexes<K>) -> &Index<K>, key: &str) -> Vec<Arc<K>> {
        let idx = lock(&self.inner.indexes);
        index(&idx)
            .get(key)
            .map(|set| set.iter().map(|e| e.0.clone()).collect())
            .unwrap_or_default()
    }

    /// Every change from now on, in order, after the store shows it. The channel is
    /// unbounded (a slow subscriber never stalls the informer) and is dropped from the
    /// fan-out when the receiver is dropped.
    pub fn subscribe(&self) -> UnboundedReceiver<CacheEvent<K>> {
        let (tx, rx) = unbounded();
        lock(&self.inner.subscribers).push(tx);
        rx
    }

    /// A stream of the objects to reconcile for a controller whose primary kind this is
    /// (`Controller::for_shared_stream`): on first poll, every object in the store, then every
    /// added or modified object. Build the controller before the cache syncs; the runner polls
    /// it only after the sync.
    pub fn applied_objects(&self) -> impl Stream<Item = Arc<K>> + Send + 'static {
        let this = self.clone();
        futures::stream::once(async move {
            let rx = this.subscribe();
            let existing = this.store().state();
            futures::stream::iter(existing).chain(rx.filter_map(|ev| async move {
                match ev {
                    CacheEvent::Apply(o) => Some(o),
                    CacheEvent::Delete(_) => None,
                }
            }))
        })
        .flatten()
    }

    fn publish(&self, ev: CacheEvent<K>) {
        lock(&self.inner.subscribers).retain(|tx| tx.unbounded_send(ev.clone()).is_ok());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Drops what no controller or webhook reads before an object is cached: `managedFields` of
/// every kind; of pods the volumes that are not claims ([`slim_pod_volumes`]) and, of a
/// k8s-openapi `Pod` (a `CachedPod` holds no more), the status fields outside
/// [`slim_pod_status`]'s keep-list; of nodes the whole status.
///
/// Safe for writes: an update (PUT) without `managedFields` keeps the server's (the API
/// server's field manager takes the live object's entries when a request has none); a pod's
/// status is written only through `pods/status`, from patches or a fresh GET; and kruise-rs
/// never PUTs a pod built from a cached one: it sends the difference between the cached pod
/// and the changed copy as a JSON patch with the cached `resourceVersion` as precondition
/// (kruise-manager's `workload::update_pod`), so the fields dropped here are neither sent nor
/// needed. Pod metadata, the rest of the pod spec and every other kind are kept whole: cached
/// objects of other kinds are the base of full updates.
pub(crate) fn slim<K: Resource + 'static>(obj: &mut K) {
    obj.meta_mut().managed_fields = None;
    let any: &mut dyn Any = obj;
    if let Some(pod) = any.downcast_mut::<k8s_openapi::api::core::v1::Pod>() {
        slim_pod_status(pod);
        slim_pod_volumes(pod);
    } else if let Some(pod) = any.downcast_mut::<kruise_api::pod::CachedPod>() {
        // The type holds only the fields kruise-rs reads; of the volumes, the claims are.
        if let Some(spec) = pod.spec.as_mut() {
            kruise_api::pod::keep_claim_volumes(&mut spec.volumes);
            kruise_api::pod::keep_read_ports(&mut spec.containers);
            if let Some(init) = spec.init_containers.as_mut() {
                kruise_api::pod::keep_read_ports(init);
            }
        }
    } else if let Some(node) = any.downcast_mut::<k8s_openapi::api::core::v1::Node>() {
        // Of a node's status only `allocatable` is read (the BroadcastJob controller's
        // resource fit, as OpenKruise's `noderesources.Fits`) and the `Ready` condition; the
        // DaemonSet controller reads names, labels and taints, CloneSet's scale-in spreading the labels. On a real node
        // the status is most of the object: `status.images` alone lists up to 50 images with
        // every name and size, beside conditions with their messages, capacity, addresses and
        // node info. Code that starts reading more of a node's status must keep it here (a
        // unit test checks what is kept). Nodes are never written from the cache. The
        // NodePodProbe controller reads whether the node is `Ready` (OpenKruise's
        // `isNodeReady`): of the conditions the `Ready` one's type and status are kept.
        node.status = node.status.take().and_then(|s| {
            let ready: Vec<_> = s
                .conditions
                .into_iter()
                .flatten()
                .filter(|c| c.type_ == "Ready")
                .map(|c| k8s_openapi::api::core::v1::NodeCondition {
                    type_: c.type_,
                    status: c.status,
                    ..Default::default()
                })
                .collect();
            (s.allocatable.is_some() || !ready.is_empty()).then(|| {
                k8s_openapi::api::core::v1::NodeStatus {
                    allocatable: s.allocatable,
                    conditions: (!ready.is_empty()).then_some(ready),
                    ..Default::default()
                }
            })
        });
    }
}

/// Keeps only the pod volumes backed by a `persistentVolumeClaim` (read by the StatefulSet
/// controller's `storage_matches`); every other volume — above all the API server's projected
/// `kube-api-access-*` service-account volume, ~5 KB of a ~14 KB cached pod — is dropped.
/// Containers keep their `volumeMounts`. Code that starts reading another kind of volume of a
/// cached pod must keep it here (a unit test lists the keep-list); code that changes a pod's
/// volumes must read the pod from the API server first.
fn slim_pod_volumes(pod: &mut k8s_openapi::api::core::v1::Pod) {
    if let Some(spec) = pod.spec.as_mut() {
        kruise_api::pod::keep_claim_volumes(&mut spec.volumes);
    }
}

/// Keeps only the pod status fields kruise-rs reads: `phase`, `reason`, `message`,
/// `observedGeneration`, `conditions` (readiness, availability, `InPlaceUpdateReady`,
/// `KruisePodReady`), and of each container and init container status `name`, `image`,
/// `imageID`, `containerID`, `ready`, `restartCount` (in-place update completion, SidecarSet
/// upgrades and hot upgrade, update order, container launch priority), `state`
/// (ContainerRecreateRequest). Everything else —
/// `podIP(s)`, `hostIP(s)`, `startTime`, `qosClass`, container `lastState`/`resources`,
/// … — is dropped: code that starts reading another status field of a cached pod must add it
/// here (a unit test lists the keep-list).
fn slim_pod_status(pod: &mut k8s_openapi::api::core::v1::Pod) {
    use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
    let Some(st) = pod.status.take() else {
        return;
    };
    let containers = |v: Option<Vec<ContainerStatus>>| {
        v.map(|v| {
            v.into_iter()
                .map(|c| ContainerStatus {
                    name: c.name,
                    image: c.image,
                    image_id: c.image_id,
                    container_id: c.container_id,
                    ready: c.ready,
                    restart_count: c.restart_count,
                    state: c.state,
                    ..ContainerStatus::default()
                })
                .collect()
        })
    };
    pod.status = Some(PodStatus {
        phase: st.phase,
        reason: st.reason,
        message: st.message,
        observed_generation: st.observed_generation,
        conditions: st.conditions,
        container_statuses: containers(st.container_statuses),
        init_container_statuses: containers(st.init_container_statuses),
        ..PodStatus::default()
    });
}

/// How informers make their initial list and every re-list (`--cache-initial-list`).
///
/// A LIST answered from the API server's watch cache (`resourceVersion=0`) ignores `limit`:
/// the whole collection arrives as one response and is decoded at once — at 10,000 pods that
/// transient copy, `managedFields` included, is larger than the slimmed cache it fills, and the
/// allocator keeps the memory. A streamed list (Kubernetes' WatchList, KEP-3157: `watch=1`,
/// `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`, ended by a bookmark annotated
/// `k8s.io/initial-events-end`) delivers the same objects one by one, each slimmed before the
/// next is decoded, at the consistency of a quorum list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialList {
    /// Stream when the API server can, decided once per process by a probe: a streamed watch
    /// of no object (`fieldSelector=metadata.name=<none>`, server timeout 1 s) that must end
    /// with the initial-events bookmark. Servers with the WatchList gate off refuse the
    /// parameters (HTTP 4xx), servers older than 1.27 ignore them and send no bookmark: both
    /// fall back to [`InitialList::List`].
    #[default]
    Auto,
    /// Always stream (fails to sync where the API server cannot).
    Stream,
    /// Always LIST with `resourceVersion=0` (client-go's informers before WatchList).
    List,
}

impl std::str::FromStr for InitialList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "stream" => Ok(Self::Stream),
            "list" => Ok(Self::List),
            other => Err(format!(
                "unknown initial list strategy {other:?} (expected auto, stream or list)"
            )),
        }
    }
}

impl std::fmt::Display for InitialList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Stream => "stream",
            Self::List => "list",
        })
    }
}

/// The object name the WatchList probe selects; no object is expected to have it (a match is
/// harmless: its event precedes the bookmark).
const STREAM_PROBE_NAME: &str = "kruise-rs-watchlist-probe";

/// Whether the API server behind `api` streams initial lists: a watch of no object with
/// `sendInitialEvents=true` that ends with the `k8s.io/initial-events-end` bookmark. Any error
/// or a stream that ends (server timeout, 1 s) without that bookmark means no.
async fn server_streams_lists<K: Cached>(api: &Api<K>) -> bool {
    use kube::api::{WatchEvent, WatchParams};
    let wp = WatchParams {
        field_selector: Some(format!("metadata.name={STREAM_PROBE_NAME}")),
        timeout: Some(1),
        bookmarks: true,
        send_initial_events: true,
        ..WatchParams::default()
    };
    let probe = async {
        let mut events = match api.watch(&wp, "").await {
            Ok(events) => events.boxed(),
            Err(e) => {
                tracing::info!(error = %e, "the API server refused a streamed list");
                return false;
            }
        };
        while let Some(event) = events.next().await {
            match event {
                Ok(WatchEvent::Bookmark(b))
                    if b.metadata
                        .annotations
                        .contains_key("k8s.io/initial-events-end") =>
                {
                    return true;
                }
                Ok(WatchEvent::Error(e)) => {
                    tracing::info!(error = %e, "the API server refused a streamed list");
                    return false;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::info!(error = %e, "streamed list probe failed");
                    return false;
                }
            }
        }
        false
    };
    tokio::time::timeout(Duration::from_secs(10), probe)
        .await
        .unwrap_or(false)
}

/// An informer's kind and, for one of another namespace, that namespace.
type InformerKey = (TypeId, Option<String>);

struct CacheInner {
    client: Client,
    namespace: Option<String>,
    readiness: Readiness,
    stop: CancellationToken,
    /// Keyed by kind and, for informers of one other namespace ([`SharedCache::informer_in`]),
    /// that namespace.
    informers: Mutex<HashMap<InformerKey, Arc<dyn Any + Send + Sync>>>,
    initial_list: InitialList,
    /// [`InitialList::Auto`]'s verdict, probed once by the first informer that starts.
    streams: tokio::sync::OnceCell<bool>,
}

impl CacheInner {
    /// Whether informers stream their initial lists; `api` is the asking informer's (the
    /// probe runs on the first one, its verdict holds for the process).
    async fn stream_lists<K: Cached>(&self, api: &Api<K>) -> bool {
        match self.initial_list {
            InitialList::Stream => true,
            InitialList::List => false,
            InitialList::Auto => {
                *self
                    .streams
                    .get_or_init(|| async {
                        let streams = server_streams_lists(api).await;
                        if streams {
                            tracing::info!("caches stream their initial lists (WatchList)");
                        } else {
                            tracing::info!(
                                "the API server does not stream lists: caches LIST with resourceVersion=0"
                            );
                        }
                        streams
                    })
                    .await
            }
        }
    }
}

/// The process-wide cache. Cheap to clone; every clone shares the informers.
#[derive(Clone)]
pub struct SharedCache {
    inner: Arc<CacheInner>,
}

impl std::fmt::Debug for SharedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedCache")
            .field("namespace", &self.inner.namespace)
            .field("informers", &lock(&self.inner.informers).len())
            .finish_non_exhaustive()
    }
}

impl SharedCache {
    /// A cache reading through `client`, restricted to `namespace` for namespaced kinds when
    /// set; informers report their sync to `readiness` and stop when `stop` is cancelled. Their
    /// initial lists follow [`InitialList::Auto`] (see [`SharedCache::with_initial_list`]).
    pub fn new(
        client: Client,
        namespace: Option<String>,
        readiness: Readiness,
        stop: CancellationToken,
    ) -> Self {
        Self::with_initial_list(client, namespace, readiness, stop, InitialList::Auto)
    }

    /// [`SharedCache::new`] with the given initial-list strategy.
    pub fn with_initial_list(
        client: Client,
        namespace: Option<String>,
        readiness: Readiness,
        stop: CancellationToken,
        initial_list: InitialList,
    ) -> Self {
        Self {
            inner: Arc::new(CacheInner {
                client,
                namespace,
                readiness,
                stop,
                informers: Mutex::new(HashMap::new()),
                initial_list,
                streams: tokio::sync::OnceCell::new(),
            }),
        }
    }

    /// Whether informers stream their initial lists: forced by the strategy, or
    /// [`InitialList::Auto`]'s verdict once the first informer has probed (`None` before).
    pub fn initial_lists_streamed(&self) -> Option<bool> {
        match self.inner.initial_list {
            InitialList::Stream => Some(true),
            InitialList::List => Some(false),
            InitialList::Auto => self.inner.streams.get().copied(),
        }
    }

    /// The shared informer of namespaced kind `K`, started on first use.
    /// Must be called inside a Tokio runtime.
    pub fn informer<K>(&self) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.get_or_start(true, None, |client, ns| match ns {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        })
    }

    /// The shared informer of namespaced kind `K` objects in `namespace` (e.g. the manager's own
    /// namespace, where SidecarSet revisions live): the cache's [`informer`](Self::informer)
    /// when it covers `namespace` (all namespaces, or restricted to this one), else an informer
    /// of that namespace alone, started on first use and shared too. Read it with
    /// [`Informer::in_namespace`].
    pub fn informer_in<K>(&self, namespace: &str) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match self.inner.namespace.as_deref() {
            None => self.informer(),
            Some(ns) if ns == namespace => self.informer(),
            Some(_) => {
                let ns = namespace.to_owned();
                self.get_or_start(true, Some(ns.clone()), move |client, _| {
                    Api::namespaced(client, &ns)
                })
            }
        }
    }

    /// The shared informer of cluster-scoped kind `K` (e.g. nodes), started on first use.
    pub fn cluster_informer<K>(&self) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::ClusterResourceScope>,
    {
        self.get_or_start(true, None, |client, _| Api::all(client))
    }

    /// [`cluster_informer`](Self::cluster_informer) for a kind a controller reads only now and
    /// then, started on the first read while the manager runs (controller-runtime starts an
    /// informer on the first cache read of a kind the same way): it does not hold `/readyz`
    /// back, so a reader must check [`Informer::synced`] itself — see [`read_synced`]. If the
    /// kind's informer already exists it is returned.
    pub fn lazy_cluster_informer<K>(&self) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::ClusterResourceScope>,
    {
        self.get_or_start(false, None, |client, _| Api::all(client))
    }

    /// [`informer`](Self::informer) for a namespaced kind read only now and then (e.g.
    /// ConfigMaps, read by an admission webhook when an object asks for it), started on the first
    /// read like [`lazy_cluster_informer`](Self::lazy_cluster_informer): it does not hold
    /// `/readyz` back, so a reader must use [`read_synced`]. If the kind's informer already
    /// exists it is returned.
    pub fn lazy_informer<K>(&self) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.get_or_start(false, None, |client, ns| match ns {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        })
    }

    /// How many informers have been started.
    pub fn len(&self) -> usize {
        lock(&self.inner.informers).len()
    }

    /// Whether no informer has been started yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shared informer of namespaced kind `K` restricted by `field_selector` (e.g. a node
    /// agent's `spec.nodeName=<node>` for pods, as client-go's `WithTweakListOptions`), started
    /// on first use and shared by every reader asking for the same selector. It gates `/readyz`
    /// like [`informer`](Self::informer).
    pub fn informer_with_fields<K>(&self, field_selector: &str) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.get_or_start_scoped(
            true,
            Some(format!("fields:{field_selector}")),
            Some(field_selector.to_owned()),
            |client, ns| match ns {
                Some(ns) => Api::namespaced(client, ns),
                None => Api::all(client),
            },
        )
    }

    /// The shared informer of cluster-scoped kind `K` restricted by `field_selector` (e.g.
    /// kruise-daemon's own NodePodProbe, `metadata.name=<node>`, as OpenKruise's
    /// `newNodePodProbeInformer`), started on first use and shared by every reader asking for the
    /// same selector. It gates `/readyz` like [`informer`](Self::informer).
    pub fn cluster_informer_with_fields<K>(&self, field_selector: &str) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::ClusterResourceScope>,
    {
        self.get_or_start_scoped(
            true,
            Some(format!("fields:{field_selector}")),
            Some(field_selector.to_owned()),
            |client, _| Api::all(client),
        )
    }

    /// The shared informer of namespaced kind `K` restricted by `label_selector` (e.g. kruise-daemon's
    /// ContainerRecreateRequests of its node, `crr.apps.kruise.io/node-name=<node>,
    /// crr.apps.kruise.io/active=true`, as OpenKruise's `newCRRInformer`), started on first use and
    /// shared by every reader asking for the same selector. Objects that stop matching leave the
    /// store as if deleted. It gates `/readyz` like [`informer`](Self::informer).
    pub fn informer_with_labels<K>(&self, label_selector: &str) -> Informer<K>
    where
        K: Cached + Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        self.get_or_start_selected(
            true,
            Some(format!("labels:{label_selector}")),
            Selectors {
                labels: Some(label_selector.to_owned()),
                ..Selectors::default()
            },
            |client, ns| match ns {
                Some(ns) => Api::namespaced(client, ns),
                None => Api::all(client),
            },
        )
    }

    fn get_or_start<K: Cached>(
        &self,
        gate_readiness: bool,
        only_namespace: Option<String>,
        api: impl FnOnce(Client, Option<&str>) -> Api<K>,
    ) -> Informer<K> {
        self.get_or_start_scoped(gate_readiness, only_namespace, None, api)
    }

    fn get_or_start_scoped<K: Cached>(
        &self,
        gate_readiness: bool,
        scope: Option<String>,
        field_selector: Option<String>,
        api: impl FnOnce(Client, Option<&str>) -> Api<K>,
    ) -> Informer<K> {
        let selectors = Selectors {
            fields: field_selector,
            labels: None,
        };
        self.get_or_start_selected(gate_readiness, scope, selectors, api)
    }

    /// `scope` (a namespace, `fields:<selector>` or `labels:<selector>`) tells informers of one
    /// kind apart: it is part of the key and of the informer's name.
    fn get_or_start_selected<K: Cached>(
        &self,
        gate_readiness: bool,
        scope: Option<String>,
        selectors: Selectors,
        api: impl FnOnce(Client, Option<&str>) -> Api<K>,
    ) -> Informer<K> {
        let mut map = lock(&self.inner.informers);
        let key = (TypeId::of::<K>(), scope.clone());
        if let Some(inf) = map.get(&key).and_then(|e| e.downcast_ref::<Informer<K>>()) {
            return inf.clone();
        }
        let name = match &scope {
            None => K::plural(&()).into_owned(),
            Some(s) => format!("{}-{s}", K::plural(&())),
        };
        let writer: Writer<K> = Writer::default();
        let (tx, rx) = watch::channel(false);
        let informer = Informer {
            inner: Arc::new(InformerInner {
                name: name.clone(),
                store: writer.as_reader(),
                synced: CacheSync::new(&name, rx),
                subscribers: Mutex::new(Vec::new()),
                indexes: Mutex::new(Indexes::default()),
            }),
        };
        map.insert(key, Arc::new(informer.clone()));
        drop(map);

        let api = api(self.inner.client.clone(), self.inner.namespace.as_deref());
        let check = gate_readiness.then(|| format!("cache-{name}"));
        if let Some(check) = &check {
            self.inner.readiness.add_pending(check);
        }
        let inner = self.inner.clone();
        let informer_for_driver = informer.clone();
        let driver = async move {
            let mut config = if inner.stream_lists(&api).await {
                watcher::Config::default().streaming_lists()
            } else {
                watcher::Config::default().any_semantic()
            };
            if let Some(fields) = &selectors.fields {
                config = config.fields(fields);
            }
            if let Some(labels) = &selectors.labels {
                config = config.labels(labels);
            }
            drive(
                api,
                config,
                informer_for_driver,
                writer,
                tx,
                inner.readiness.clone(),
                check,
            )
            .await;
        };
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = driver => {}
                () = stop.cancelled() => {}
            }
        });
        tracing::debug!(cache = %name, "informer started");
        informer
    }
}

/// The field and label selectors of a restricted informer.
#[derive(Debug, Default)]
struct Selectors {
    fields: Option<String>,
    labels: Option<String>,
}

/// Waits at most `wait` for `informer`'s initial list; whether it has completed. Readers of a
/// lazily started informer use it to never answer from a half-filled cache (and to fall back
/// to a live read instead).
pub async fn read_synced<K: Cached>(informer: &Informer<K>, wait: Duration) -> bool {
    let sync = informer.synced();
    sync.is_synced()
        || tokio::time::timeout(wait, sync.wait())
            .await
            .unwrap_or(false)
}

/// Keeps one informer's store in step with the API server until the watch stream ends.
async fn drive<K: Cached>(
    api: Api<K>,
    config: watcher::Config,
    informer: Informer<K>,
    mut writer: Writer<K>,
    synced: watch::Sender<bool>,
    readiness: Readiness,
    check: Option<String>,
) {
    let name = informer.name().to_owned();
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut listed = 0usize;
    while let Some(event) = stream.next().await {
        let mut event = match event {
            Ok(ev) => ev,
            Err(e) => {
                tracing::warn!(cache = %name, error = %e, "watch error (retrying with backoff)");
                continue;
            }
        };
        match &mut event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) | watcher::Event::Delete(o) => {
                slim(o)
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
        match event {
            watcher::Event::Init => {
                listed = 0;
                writer.apply_watcher_event(&watcher::Event::Init);
            }
            watcher::Event::InitApply(o) => {
                listed += 1;
                writer.apply_watcher_event(&watcher::Event::InitApply(o));
            }
            watcher::Event::InitDone => {
                let before: HashMap<ObjectRef<K>, Arc<K>> = informer
                    .store()
                    .state()
                    .into_iter()
                    .map(|o| (ObjectRef::from_obj(o.as_ref()), o))
                    .collect();
                let after = {
                    let mut idx = lock(&informer.inner.indexes);
                    writer.apply_watcher_event(&watcher::Event::InitDone);
                    let after = informer.store().state();
                    idx.clear();
                    for obj in &after {
                        idx.add(obj);
                    }
                    after
                };
                let mut seen = std::collections::HashSet::with_capacity(after.len());
                for obj in after {
                    let key = ObjectRef::from_obj(obj.as_ref());
                    let changed = before
                        .get(&key)
                        .is_none_or(|old| old.resource_version() != obj.resource_version());
                    seen.insert(key);
                    if changed {
                        informer.publish(CacheEvent::Apply(obj));
                    }
                }
                for (key, old) in before {
                    if !seen.contains(&key) {
                        informer.publish(CacheEvent::Delete(old));
                    }
                }
                if !*synced.borrow() {
                    tracing::info!(cache = %name, objects = listed, "cache synced");
                    if let Some(check) = &check {
                        readiness.mark_done(check);
                    }
                    let _ = synced.send(true);
                } else {
                    tracing::debug!(cache = %name, objects = listed, "cache re-listed");
                }
            }
            watcher::Event::Apply(o) => {
                let key = ObjectRef::from_obj(&o);
                let stored = {
                    let mut idx = lock(&informer.inner.indexes);
                    if let Some(old) = informer.store().get(&key) {
                        idx.remove(&old);
                    }
                    writer.apply_watcher_event(&watcher::Event::Apply(o));
                    let stored = informer.store().get(&key);
                    if let Some(stored) = &stored {
                        idx.add(stored);
                    }
                    stored
                };
                if let Some(stored) = stored {
                    informer.publish(CacheEvent::Apply(stored));
                }
            }
            watcher::Event::Delete(o) => {
                let o = Arc::new(o);
                {
                    let mut idx = lock(&informer.inner.indexes);
                    if let Some(old) = informer.store().get(&ObjectRef::from_obj(o.as_ref())) {
                        idx.remove(&old);
                    }
                    idx.remove(&o);
                    writer.apply_watcher_event(&watcher::Event::Delete((*o).clone()));
                }
                informer.publish(CacheEvent::Delete(o));
            }
        }
    }
}

#[cfg(test)]
mod tests;
