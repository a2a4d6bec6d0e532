//! ResourceDistribution controller (`apps.kruise.io/v1alpha1`, cluster-scoped; OpenKruise
//! v1.9.0 `pkg/controller/resourcedistribution`, gate `ResourceDistributionGate`).
//!
//! Same shape as every controller: [`setup`] (watches: ResourceDistributions; Namespaces —
//! created, deleted, relabelled — mapped to the distributions they concern as OpenKruise's
//! `enqueueRequestForNamespace`; changes and deletions of Secrets and ConfigMaps mapped to the
//! distribution that controls them), [`reconcile`] (one pass, in `sync`), the pure decisions in
//! [`plan`] (targets, matching, hash, copy, status) and the status (`desired`, `succeeded`,
//! `failed`, `observedGeneration` and always the six conditions `GetResourceFailed`,
//! `CreateResourceFailed`, `UpdateResourceFailed`, `DeleteResourceFailed`, `ConflictOccurred`,
//! `NamespaceNotExists`, reason `Succeeded` or the last error).
//!
//! One pass, as OpenKruise's `doReconcile`: the target namespaces are computed from the
//! namespace cache; in each target the copy of `spec.resource` is created (with the
//! distribution as controller owner and the annotations `kruise.io/resourcedistribution.resource.from`
//! = its name and `kruise.io/resourcedistribution.resource.hashcode` = SHA-256 of the resource's
//! JSON), or updated when its content (all but `metadata` and `status`) differs, keeping the
//! labels, annotations and finalizers others added; a same-named object the distribution does not
//! control is a conflict; a listed namespace that does not exist is reported. In every other
//! namespace a copy the distribution controls is deleted. Copies of a deleted distribution are
//! removed by Kubernetes' garbage collector through the owner reference (as in OpenKruise).
//!
//! **Memory.** OpenKruise's manager caches every Secret and ConfigMap of the cluster, whole (its
//! watches on the two kinds). Here the two caches are metadata-only
//! (`PartialObjectMeta`, the API server's metadata watch; managed fields dropped): the pass reads
//! names, owners and resourceVersions from them, never the data. Whether a copy's content is
//! still the distributed one is known without reading it while its resourceVersion is one this
//! manager wrote or checked for the current hash (`State::verified`, one entry per copy);
//! otherwise (someone edited the copy, the spec changed, or the manager restarted) the copy is
//! read with one GET and compared as OpenKruise compares it. Neither kind can be narrowed by a
//! label or field selector: the copies carry the user's labels only.
//!
//! Differences from OpenKruise: a copy that already exists when the cache did not show it yet is
//! checked instead of failing the pass with `CreateResourceFailed`; a resource of another kind
//! than Secret/ConfigMap (refused by the webhook) is logged and not distributed; every change of
//! a distribution triggers a pass (OpenKruise: changes of the spec only), which writes nothing
//! when nothing changed.

pub mod plan;
mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kruise_api::apps::v1alpha1::ResourceDistribution;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

pub use crate::scaffold::Error;

use plan::{Kind, NamespaceView};

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "resourcedistribution";

/// The CRD it reads.
pub const CRDS: &[&str] = &["resourcedistributions.apps.kruise.io"];

/// A copy: its kind, namespace and name.
pub type CopyKey = (Kind, String, String);

/// What is known of a copy's content: at `resource_version` it held the resource whose
/// hash is `hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The copy's resourceVersion when it was written or read.
    pub resource_version: String,
    /// [`plan::hash_resource`] of the resource it held.
    pub hash: String,
}

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// ResourceDistributions (cluster-scoped).
    pub distributions: Informer<ResourceDistribution>,
    /// Namespaces.
    pub namespaces: Informer<Namespace>,
    /// Secrets, metadata only.
    pub secrets: Informer<PartialObjectMeta<Secret>>,
    /// ConfigMaps, metadata only.
    pub config_maps: Informer<PartialObjectMeta<ConfigMap>>,
    /// Copies whose content is known (module docs: Memory); entries leave with their copy.
    pub verified: Arc<Mutex<HashMap<CopyKey, Verified>>>,
}

impl State {
    /// The cached metadata of the copy of `kind` named `name` in `namespace`.
    pub fn cached_copy(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        match kind {
            Kind::Secret => self
                .secrets
                .store()
                .get(&ObjectRef::new(name).within(namespace))
                .map(|o| o.metadata.clone()),
            Kind::ConfigMap => self
                .config_maps
                .store()
                .get(&ObjectRef::new(name).within(namespace))
                .map(|o| o.metadata.clone()),
        }
    }

    fn verified(&self) -> std::sync::MutexGuard<'_, HashMap<CopyKey, Verified>> {
        self.verified.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--resourcedistribution-workers`, 3 as OpenKruise's) once every cache it reads
/// has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        distributions: ctx.cache.cluster_informer(),
        namespaces: ctx.cache.cluster_informer(),
        secrets: ctx.cache.informer(),
        config_maps: ctx.cache.informer(),
        verified: Arc::default(),
    };
    let caches = vec![
        state.distributions.synced(),
        state.namespaces.synced(),
        state.secrets.synced(),
        state.config_maps.synced(),
    ];
    let (tx, rx) = unbounded::<ObjectRef<ResourceDistribution>>();
    let observers = futures::future::join3(
        observe_namespaces(&state, tx.clone()),
        observe_copies(&state.secrets, Kind::Secret, state.clone(), tx.clone()),
        observe_copies(&state.config_maps, Kind::ConfigMap, state.clone(), tx),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.distributions).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

fn view(ns: &Namespace) -> NamespaceView<'_> {
    NamespaceView {
        name: ns.metadata.name.as_deref().unwrap_or(""),
        labels: ns.metadata.labels.as_ref(),
    }
}

fn enqueue_matching(
    state: &State,
    tx: &UnboundedSender<ObjectRef<ResourceDistribution>>,
    wanted: impl Fn(&ResourceDistribution) -> bool,
) {
    for rd in state.distributions.store().state() {
        if wanted(&rd) {
            let _ = tx.unbounded_send(ObjectRef::new(&rd.name_any()));
        }
    }
}

/// OpenKruise's `enqueueRequestForNamespace`: a new namespace triggers the distributions whose
/// targets take it (`matchViaTargets`), a deleted one those that list it
/// (`matchViaIncludedNamespaces`), a change of labels those whose selector takes the old or the
/// new namespace (`matchViaLabelSelector`). The previous state of each namespace is the `Arc`
/// the store held (no copy).
fn observe_namespaces(
    state: &State,
    tx: UnboundedSender<ObjectRef<ResourceDistribution>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let state = state.clone();
    let events = state.namespaces.subscribe();
    // Seeded after subscribing: a namespace changed in between is seen twice, never missed.
    let mut last: HashMap<String, Arc<Namespace>> = state
        .namespaces
        .store()
        .state()
        .into_iter()
        .map(|ns| (ns.name_any(), ns))
        .collect();
    events.for_each(move |event| {
        match event {
            CacheEvent::Apply(ns) => {
                let name = ns.name_any();
                match last.insert(name, ns.clone()) {
                    None => {
                        enqueue_matching(&state, &tx, |rd| plan::match_via_targets(view(&ns), rd))
                    }
                    Some(old) if old.metadata.labels != ns.metadata.labels => {
                        enqueue_matching(&state, &tx, |rd| {
                            plan::match_via_label_selector(view(&ns), rd)
                                || plan::match_via_label_selector(view(&old), rd)
                        });
                    }
                    Some(_) => {}
                }
            }
            CacheEvent::Delete(ns) => {
                let name = ns.name_any();
                last.remove(&name);
                enqueue_matching(&state, &tx, |rd| plan::match_via_included(&name, rd));
            }
        }
        std::future::ready(())
    })
}

/// controller-runtime's `EnqueueRequestForOwner` (controller owners of kind
/// ResourceDistribution) on Secrets or ConfigMaps: a change or deletion of a copy triggers the
/// pass of its distribution; a deleted copy also leaves [`State::verified`].
fn observe_copies<K>(
    informer: &Informer<PartialObjectMeta<K>>,
    kind: Kind,
    state: State,
    tx: UnboundedSender<ObjectRef<ResourceDistribution>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K>
where
    PartialObjectMeta<K>: kruise_runtime::cache::Cached,
{
    informer.subscribe().for_each(move |event| {
        let meta = &event.object().metadata;
        let owner = meta.owner_references.iter().flatten().find(|o| {
            o.controller == Some(true)
                && o.kind == plan::KIND
                && o.api_version.starts_with("apps.kruise.io/")
        });
        if let Some(owner) = owner {
            if let CacheEvent::Delete(_) = &event {
                state.verified().remove(&(
                    kind,
                    meta.namespace.clone().unwrap_or_default(),
                    meta.name.clone().unwrap_or_default(),
                ));
            }
            let _ = tx.unbounded_send(ObjectRef::new(&owner.name));
        }
        std::future::ready(())
    })
}

/// One pass over one ResourceDistribution (see the module documentation).
pub async fn reconcile(
    rd: Arc<ResourceDistribution>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if rd.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let key = rd.name_any();
    crate::workload::bounded_pass(&key, sync::sync(&rd, &ctx, &state), Error::Other).await
}
