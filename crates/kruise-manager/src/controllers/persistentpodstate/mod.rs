//! PersistentPodState controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/persistentpodstate`).
//!
//! [`setup`] (watches: PersistentPodStates, pods, StatefulSets and Advanced StatefulSets from
//! the shared cache, and the kinds of the `kruise-configuration` ConfigMap's
//! `PPS_Watch_Custom_Workload_WhiteList`, followed as the ConfigMap changes), [`reconcile`]
//! (one pass), pure decisions in [`plan`].
//!
//! One pass, as OpenKruise's `Reconcile`: the target workload (`targetRef`: StatefulSet and
//! Advanced StatefulSet from the shared cache, a whitelisted kind by a live read of its
//! `spec.replicas`, anything else through the shared [`Finder`]) and its active pods; with the
//! workload gone or being deleted the status loses every pod state; otherwise each ready,
//! scheduled pod not yet recorded on its node gets its node's topology labels and its chosen
//! annotations recorded ([`plan::next_status`]), and unless `WhenDeleted`, states of ordinals
//! outside the replicas whose pod is gone are dropped. The status is written when it changed
//! (a conflict retried on a fresh read).
//!
//! Workloads annotated `kruise.io/auto-generate-persistent-pod-state: "true"` with a required or
//! preferred topology get a PersistentPodState of their own name, controlled by them
//! (`autoGeneratePersistentPodState`): created when seen, its spec updated when those
//! annotations change, deleted when the annotation goes. OpenKruise runs this through fake
//! `generate#…` requests of its work queue; here workload events feed a small queue of their
//! own, processed once the caches have synced, each failure retried after a backoff.
//!
//! Differences from OpenKruise, supersets of its triggers: any change of a targeted workload
//! triggers its PersistentPodState (not only its deletion), and whitelisted kinds added to the
//! ConfigMap while the manager runs are followed at once (OpenKruise reads the whitelist when
//! it starts).

pub mod plan;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1alpha1::{PersistentPodState, PersistentPodStateStatus, TargetReference};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::persistentpodstate::{self as pps_engine, Gvk, WhiteList};
use kruise_engines::podutil;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tracing::{debug, info, warn};

use kruise_runtime::cache::{CacheEvent, CacheSync, Informer, read_synced};
use kruise_runtime::runner::{self as runtime, Context};
use kruise_runtime::triggers::Coalescer;

use crate::scaffold;
use crate::workload::finder::Finder;
use crate::workload::is_status;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "persistentpodstate";

/// Name of OpenKruise's configuration ConfigMap (in the manager's namespace).
pub const CONFIGURATION: &str = "kruise-configuration";

/// How often events trigger a pass of one PersistentPodState at most ([`Coalescer`]).
const TRIGGER_WINDOW: Duration = Duration::from_millis(200);
/// How long a read waits for a lazily started cache (nodes, ConfigMaps) before reading live.
const LAZY_WAIT: Duration = Duration::from_secs(3);
/// How many times a conflicting write is retried on a fresh read.
const CONFLICT_ATTEMPTS: usize = 5;
/// Backoff of a failed auto-generation before it is retried.
const GENERATE_RETRY: Duration = Duration::from_secs(2);

/// A workload whose generated PersistentPodState is to be checked
/// (OpenKruise's `generate#{apiVersion}#{kind}#{name}` request).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GenerateKey {
    /// apiVersion.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// PersistentPodStates.
    pub ppss: Informer<PersistentPodState>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Workloads (StatefulSets and Advanced StatefulSets among them) and their pods.
    pub finder: Finder,
    /// Resolved custom kinds (`apiVersion/kind` → resource).
    resources: Arc<Mutex<HashMap<String, ApiResource>>>,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--persistentpodstate-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        ppss: ctx.cache.informer::<PersistentPodState>(),
        pods: ctx.cache.informer::<CachedPod>(),
        finder: Finder::new(&ctx),
        resources: Arc::default(),
    };
    let mut caches = vec![state.ppss.synced(), state.pods.synced()];
    caches.extend(state.finder.caches());
    let (triggers, trigger_rx) = Coalescer::<PersistentPodState>::new(TRIGGER_WINDOW);
    let (gen_tx, gen_rx) = futures::channel::mpsc::unbounded::<GenerateKey>();
    let observers = futures::future::join5(
        observe_pods(&state, triggers.clone()),
        observe_workloads(
            &state,
            state.finder.statefulsets(),
            triggers.clone(),
            gen_tx.clone(),
        ),
        observe_workloads(
            &state,
            state.finder.advanced_statefulsets(),
            triggers.clone(),
            gen_tx.clone(),
        ),
        follow_whitelist(ctx.clone(), state.clone(), triggers, gen_tx.clone()),
        generate_loop(ctx.clone(), state.clone(), caches.clone(), gen_tx, gen_rx),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.ppss).reconcile_on(trigger_rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one PersistentPodState (see the module documentation).
pub async fn reconcile(
    pps: Arc<PersistentPodState>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(pps.as_ref());
    crate::workload::bounded_pass(&key, sync(&pps, &ctx, &state), Error::Other).await
}

async fn sync(pps: &PersistentPodState, ctx: &Context, state: &State) -> Result<Action, Error> {
    let ns = pps.namespace().unwrap_or_default();
    let r = &pps.spec.target_reference;
    let workload = resolve(ctx, state, &r.api_version, &r.kind, &ns, &r.name).await?;
    // `GetPodsForRef`: a workload scaled to 0 has no pods (its `spec.replicas`, read here, is
    // the scale OpenKruise's finder reports for StatefulSet-like kinds too).
    let pods: Vec<plan::PodView> = match &workload {
        Some(w) if !w.deleting && w.replicas != 0 => {
            let (pods, _) = state
                .finder
                .pods_for_ref(&state.pods, &r.api_version, &r.kind, &ns, &r.name, true)
                .await
                .map_err(|e| Error::Other(e.to_string()))?;
            pods.iter().map(|p| pod_view(p)).collect()
        }
        _ => Vec::new(),
    };
    let nodes = node_labels(ctx, &pods).await;
    let status = plan::next_status(pps, workload.as_ref(), &pods, &mut |n| {
        nodes.get(n).cloned()
    });
    write_status(ctx, pps, status).await?;
    Ok(Action::await_change())
}

fn pod_view(p: &CachedPod) -> plan::PodView {
    plan::PodView {
        name: p.metadata.name.clone().unwrap_or_default(),
        node_name: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        ready: podutil::is_pod_ready(p),
        annotations: p.metadata.annotations.clone().unwrap_or_default(),
    }
}

/// The labels of the nodes of the ready, scheduled pods: from the shared node cache (started
/// on first use) once synced, else read live; a node that cannot be read is left out.
async fn node_labels(
    ctx: &Context,
    pods: &[plan::PodView],
) -> HashMap<String, BTreeMap<String, String>> {
    let names: HashSet<&str> = pods
        .iter()
        .filter(|p| p.ready && !p.node_name.is_empty())
        .map(|p| p.node_name.as_str())
        .collect();
    let mut out = HashMap::new();
    if names.is_empty() {
        return out;
    }
    let cache = ctx.cache.lazy_cluster_informer::<Node>();
    let synced = read_synced(&cache, LAZY_WAIT).await;
    let api: Api<Node> = Api::all(ctx.client.clone());
    for name in names {
        let labels = if synced {
            cache
                .store()
                .get(&ObjectRef::new(name))
                .map(|n| n.metadata.labels.clone().unwrap_or_default())
        } else {
            match api.get_opt(name).await {
                Ok(n) => n.map(|n| n.metadata.labels.unwrap_or_default()),
                Err(e) => {
                    warn!(node = name, error = %e, "Fetched node of pod error");
                    None
                }
            }
        };
        if let Some(l) = labels {
            out.insert(name.to_string(), l);
        }
    }
    out
}

/// `updatePersistentPodStateStatus`: writes `status` when it differs from the object's, a
/// conflict retried on a fresh read.
async fn write_status(
    ctx: &Context,
    pps: &PersistentPodState,
    status: PersistentPodStateStatus,
) -> Result<(), Error> {
    if pps.status.clone().unwrap_or_default() == status {
        return Ok(());
    }
    let ns = pps.namespace().unwrap_or_default();
    let api: Api<PersistentPodState> = Api::namespaced(ctx.client.clone(), &ns);
    let mut current = pps.clone();
    for attempt in 1..=CONFLICT_ATTEMPTS {
        current.status = Some(status.clone());
        match api
            .replace_status(&current.name_any(), &PostParams::default(), &current)
            .await
        {
            Ok(_) => {
                debug!(pps = %scaffold::key(pps), states = status.pod_states.as_ref().map_or(0, |s| s.len()), "Updated PersistentPodState status success");
                return Ok(());
            }
            Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                match api.get_opt(&current.name_any()).await? {
                    Some(fresh) => current = fresh,
                    None => return Ok(()),
                }
            }
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The whitelist of custom kinds from ConfigMap `kruise-configuration` (shared cache, started
/// on first read; live until it has synced).
///
/// # Errors
/// A live read failed, or the whitelist is not valid JSON.
pub async fn whitelist(ctx: &Context) -> Result<WhiteList, Error> {
    let ns = kruise_runtime::kruise_namespace();
    let informer = ctx.cache.lazy_informer::<ConfigMap>();
    // A cache restricted to another namespace (`--namespace`) does not hold it: read live.
    let cached = ctx.config.namespace.as_ref().is_none_or(|n| *n == ns);
    let cm = if cached && read_synced(&informer, LAZY_WAIT).await {
        informer
            .store()
            .get(&ObjectRef::new(CONFIGURATION).within(&ns))
    } else {
        Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
            .get_opt(CONFIGURATION)
            .await?
            .map(Arc::new)
    };
    WhiteList::from_data(cm.as_ref().and_then(|c| c.data.as_ref())).map_err(Error::Other)
}

/// The workload `apiVersion`/`kind`/`namespace`/`name` as the controller reads it
/// (`GetScaleAndSelectorForRef` reduced to replicas, reserved ordinals, deletion and
/// annotations): StatefulSets and Advanced StatefulSets from the shared cache, whitelisted
/// kinds by a live read (`getPodStatefulSetLike`: `spec.replicas`, 0 when absent), others
/// through the shared finder.
///
/// # Errors
/// A live read failed.
pub async fn resolve(
    ctx: &Context,
    state: &State,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<plan::Workload>, Error> {
    let Some(group) = pps_engine::group_of(api_version) else {
        return Ok(None);
    };
    let from_meta = |meta: &ObjectMeta, replicas: i32| plan::Workload {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        uid: meta.uid.clone().unwrap_or_default(),
        replicas,
        reserve_ordinals: Default::default(),
        deleting: meta.deletion_timestamp.is_some(),
        annotations: meta.annotations.clone().unwrap_or_default(),
    };
    match (group, kind) {
        ("apps", "StatefulSet") => {
            let key = ObjectRef::new(name).within(namespace);
            return Ok(state
                .finder
                .statefulsets()
                .store()
                .get(&key)
                .map(|s| from_meta(&s.metadata, s.spec.replicas.unwrap_or(1))));
        }
        ("apps.kruise.io", "StatefulSet") => {
            let key = ObjectRef::new(name).within(namespace);
            return Ok(state
                .finder
                .advanced_statefulsets()
                .store()
                .get(&key)
                .map(|s| {
                    let mut w = from_meta(&s.metadata, s.spec.replicas.unwrap_or(1));
                    w.reserve_ordinals = kruise_engines::ordinals::reserve_set(
                        s.spec.reserve_ordinals.as_deref().unwrap_or_default(),
                    );
                    w
                }));
        }
        _ => {}
    }
    if !is_typed(group, kind) && whitelist(ctx).await?.allows(api_version, kind) {
        let Some(resource) = resource(ctx, state, api_version, kind).await? else {
            return Ok(None);
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), namespace, &resource);
        return Ok(api.get_opt(name).await?.map(|o| {
            let replicas = o
                .data
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(0);
            from_meta(&o.metadata, i32::try_from(replicas).unwrap_or(0))
        }));
    }
    let found = state
        .finder
        .workload(api_version, kind, namespace, name, None)
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    Ok(found.map(|w| plan::Workload {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        uid: w.uid,
        replicas: w.scale,
        reserve_ordinals: Default::default(),
        deleting: w.deleting,
        annotations: Default::default(),
    }))
}

/// Kinds OpenKruise's typed finders read before the StatefulSet-like one.
fn is_typed(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("", "ReplicationController")
            | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet")
            | ("apps.kruise.io", "CloneSet" | "StatefulSet")
    )
}

/// The API resource of a custom kind (discovery, cached on success).
async fn resource(
    ctx: &Context,
    state: &State,
    api_version: &str,
    kind: &str,
) -> Result<Option<ApiResource>, Error> {
    let key = format!("{api_version}/{kind}");
    if let Some(r) = lock(&state.resources).get(&key) {
        return Ok(Some(r.clone()));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    match kube::discovery::pinned_kind(&ctx.client, &gvk).await {
        Ok((r, _)) => {
            lock(&state.resources).insert(key, r.clone());
            Ok(Some(r))
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `SelectorPersistentPodState` over the shared cache: the PersistentPodState of `namespace`
/// targeting `reference`.
fn selected(
    state: &State,
    namespace: &str,
    reference: &TargetReference,
) -> Option<ObjectRef<PersistentPodState>> {
    let candidates = state.ppss.in_namespace(namespace);
    pps_engine::select(&candidates, reference).map(ObjectRef::from_obj)
}

/// OpenKruise's `enqueueRequestForPod`: a pod that is deleted, starts terminating or turns
/// ready triggers the PersistentPodState its `kruise.io/injected-persistent-pod-state` names,
/// else the one targeting its controller.
fn observe_pods(
    state: &State,
    triggers: Coalescer<PersistentPodState>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let state = state.clone();
    let seen = Mutex::new(HashMap::<String, (bool, bool)>::new());
    state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        let target = pps_of_pod(&state, pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut seen = lock(&seen);
        let fire = match &event {
            _ if target.is_none() => {
                seen.remove(&uid);
                false
            }
            CacheEvent::Delete(_) => {
                seen.remove(&uid);
                true
            }
            CacheEvent::Apply(p) => {
                let now = (
                    podutil::is_pod_ready(p),
                    p.metadata.deletion_timestamp.is_some(),
                );
                let before = seen.insert(uid, now);
                // Turned ready, or started terminating (a first sighting of a ready pod too:
                // the manager may have missed the change).
                match before {
                    None => now.0 || now.1,
                    Some(b) => (!b.0 && now.0) || (!b.1 && now.1),
                }
            }
        };
        drop(seen);
        if fire && let Some(t) = target {
            triggers.trigger(t);
        }
        std::future::ready(())
    })
}

fn pps_of_pod(state: &State, pod: &CachedPod) -> Option<ObjectRef<PersistentPodState>> {
    let owner = crate::workload::finder::controller_ref(&pod.metadata)?;
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    if let Some(name) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::INJECTED_PERSISTENT_POD_STATE))
        .filter(|n| !n.is_empty())
    {
        let r = ObjectRef::new(name).within(ns);
        return state.ppss.store().get(&r).map(|_| r);
    }
    selected(
        state,
        ns,
        &TargetReference {
            api_version: owner.api_version.clone(),
            kind: owner.kind.clone(),
            name: owner.name.clone(),
        },
    )
}

/// What a workload event means for PersistentPodStates: the auto-generation check when it is
/// first seen asking for one or its generation annotations changed; a pass of the
/// PersistentPodState targeting it on any change.
struct WorkloadEvents {
    state: State,
    triggers: Coalescer<PersistentPodState>,
    gen_tx: futures::channel::mpsc::UnboundedSender<GenerateKey>,
    /// Last seen generation annotations per workload UID.
    seen: Mutex<HashMap<String, BTreeMap<String, String>>>,
}

impl WorkloadEvents {
    fn new(
        state: State,
        triggers: Coalescer<PersistentPodState>,
        gen_tx: futures::channel::mpsc::UnboundedSender<GenerateKey>,
    ) -> Self {
        Self {
            state,
            triggers,
            gen_tx,
            seen: Mutex::new(HashMap::new()),
        }
    }

    fn handle(&self, meta: &ObjectMeta, api_version: &str, kind: &str, deleted: bool) {
        let (state, triggers, gen_tx) = (&self.state, &self.triggers, &self.gen_tx);
        let uid = meta.uid.clone().unwrap_or_default();
        let ns = meta.namespace.clone().unwrap_or_default();
        let name = meta.name.clone().unwrap_or_default();
        let annotations: BTreeMap<String, String> = meta
            .annotations
            .iter()
            .flatten()
            .filter(|(k, _)| {
                [
                    keys::AUTO_GENERATE_PERSISTENT_POD_STATE,
                    keys::REQUIRED_PERSISTENT_TOPOLOGY,
                    keys::PREFERRED_PERSISTENT_TOPOLOGY,
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let generate = {
            let mut seen = lock(&self.seen);
            if deleted {
                seen.remove(&uid);
                false
            } else {
                match seen.insert(uid, annotations.clone()) {
                    None => plan::wants_generated(&annotations),
                    Some(before) => plan::generation_annotations_changed(&before, &annotations),
                }
            }
        };
        if generate {
            let _ = gen_tx.unbounded_send(GenerateKey {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                namespace: ns.clone(),
                name: name.clone(),
            });
        }
        let reference = TargetReference {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name,
        };
        if let Some(t) = selected(state, &ns, &reference) {
            triggers.trigger(t);
        }
    }
}

/// OpenKruise's `enqueueRequestForStatefulSet` / `enqueueRequestForKruiseStatefulSet` (widened:
/// see the module docs).
fn observe_workloads<K>(
    state: &State,
    workloads: &Informer<K>,
    triggers: Coalescer<PersistentPodState>,
    gen_tx: futures::channel::mpsc::UnboundedSender<GenerateKey>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K>
where
    K: kruise_runtime::cache::Cached,
{
    let state = state.clone();
    let events = WorkloadEvents::new(state.clone(), triggers, gen_tx);
    let api_version = K::api_version(&()).to_string();
    let kind = K::kind(&()).to_string();
    workloads.subscribe().for_each(move |event| {
        let deleted = matches!(event, CacheEvent::Delete(_));
        events.handle(event.object().meta(), &api_version, &kind, deleted);
        std::future::ready(())
    })
}

/// Follows the whitelist of ConfigMap `kruise-configuration`: every custom kind it lists (not
/// one of the typed ones) is watched (`AddWatcherDynamically`) from the moment it is listed.
async fn follow_whitelist(
    ctx: Arc<Context>,
    state: State,
    triggers: Coalescer<PersistentPodState>,
    gen_tx: futures::channel::mpsc::UnboundedSender<GenerateKey>,
) {
    let ns = kruise_runtime::kruise_namespace();
    let informer = ctx.cache.lazy_informer::<ConfigMap>();
    let mut events = informer.subscribe();
    let mut watched: HashSet<Gvk> = HashSet::new();
    loop {
        match whitelist(&ctx).await {
            Ok(list) => {
                for gvk in list.workloads {
                    if pps_engine::is_default_support(&gvk.group, &gvk.kind)
                        || is_typed(&gvk.group, &gvk.kind)
                        || !watched.insert(gvk.clone())
                    {
                        continue;
                    }
                    info!(group = %gvk.group, version = %gvk.version, kind = %gvk.kind, "PersistentPodState watches a whitelisted workload kind");
                    tokio::spawn(watch_kind(
                        ctx.clone(),
                        state.clone(),
                        gvk,
                        triggers.clone(),
                        gen_tx.clone(),
                    ));
                }
            }
            Err(e) => warn!(error = %e, "Failed to get persistent pod state config white list"),
        }
        // Next change of the ConfigMap.
        loop {
            let Some(ev) = events.next().await else {
                return;
            };
            let m = ev.object().meta();
            if m.name.as_deref() == Some(CONFIGURATION) && m.namespace.as_deref() == Some(&ns) {
                break;
            }
        }
    }
}

/// Watches one whitelisted kind (all namespaces) until shutdown, feeding [`WorkloadEvents`];
/// discovery is retried while the kind is not served.
async fn watch_kind(
    ctx: Arc<Context>,
    state: State,
    gvk: Gvk,
    triggers: Coalescer<PersistentPodState>,
    gen_tx: futures::channel::mpsc::UnboundedSender<GenerateKey>,
) {
    let api_version = if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    };
    let resource = loop {
        match resource(&ctx, &state, &api_version, &gvk.kind).await {
            Ok(Some(r)) => break r,
            Ok(None) => debug!(kind = %gvk.kind, "whitelisted kind not served yet"),
            Err(e) => warn!(kind = %gvk.kind, error = %e, "discovery of a whitelisted kind failed"),
        }
        tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
    };
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &resource);
    let events = WorkloadEvents::new(state, triggers, gen_tx);
    let mut stream = std::pin::pin!(watcher::watcher(api, watcher::Config::default()));
    loop {
        let next = tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            n = stream.next() => n,
        };
        match next {
            None => return,
            Some(Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => {
                events.handle(&o.metadata, &api_version, &gvk.kind, false);
            }
            Some(Ok(watcher::Event::Delete(o))) => {
                events.handle(&o.metadata, &api_version, &gvk.kind, true);
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => debug!(kind = %gvk.kind, error = %e, "watch of a whitelisted kind"),
        }
    }
}

/// Processes the auto-generation queue once `caches` have synced; a failed key comes back
/// after [`GENERATE_RETRY`].
async fn generate_loop(
    ctx: Arc<Context>,
    state: State,
    caches: Vec<CacheSync>,
    retry: futures::channel::mpsc::UnboundedSender<GenerateKey>,
    mut rx: futures::channel::mpsc::UnboundedReceiver<GenerateKey>,
) {
    for c in &caches {
        c.wait().await;
    }
    while let Some(key) = rx.next().await {
        if let Err(e) = auto_generate(&ctx, &state, &key).await {
            warn!(workload = %format!("{}/{}", key.namespace, key.name), error = %e, "auto-generating PersistentPodState failed; retrying");
            let retry = retry.clone();
            tokio::spawn(async move {
                tokio::time::sleep(GENERATE_RETRY).await;
                let _ = retry.unbounded_send(key);
            });
        }
    }
}

/// `autoGeneratePersistentPodState` for one workload.
async fn auto_generate(ctx: &Context, state: &State, key: &GenerateKey) -> Result<(), Error> {
    let Some(workload) = resolve(
        ctx,
        state,
        &key.api_version,
        &key.kind,
        &key.namespace,
        &key.name,
    )
    .await?
    else {
        return Ok(());
    };
    let api: Api<PersistentPodState> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let existing = state
        .ppss
        .store()
        .get(&ObjectRef::new(&key.name).within(&key.namespace));
    match plan::generated(&workload, existing.is_some()) {
        plan::Generated::Nothing => Ok(()),
        plan::Generated::Ensure(obj) => {
            let Some(old) = existing else {
                return match api.create(&PostParams::default(), &obj).await {
                    Ok(_) => {
                        info!(pps = %format!("{}/{}", key.namespace, key.name), "Created StatefulSet persistentPodState success");
                        Ok(())
                    }
                    Err(e) if is_status(&e, 409) => Ok(()),
                    Err(e) => Err(e.into()),
                };
            };
            if plan::same_spec(&old.spec, &obj.spec) {
                return Ok(());
            }
            let mut current = (*old).clone();
            for attempt in 1..=CONFLICT_ATTEMPTS {
                current.spec = obj.spec.clone();
                match api
                    .replace(&key.name, &PostParams::default(), &current)
                    .await
                {
                    Ok(_) => return Ok(()),
                    Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                        match api.get_opt(&key.name).await? {
                            Some(fresh) => current = fresh,
                            None => return Ok(()),
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        }
        plan::Generated::Delete => match api.delete(&key.name, &Default::default()).await {
            Ok(_) => {
                info!(pps = %format!("{}/{}", key.namespace, key.name), "Deleted StatefulSet persistentPodState");
                Ok(())
            }
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(e.into()),
        },
    }
}
