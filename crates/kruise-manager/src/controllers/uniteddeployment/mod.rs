//! UnitedDeployment controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/uniteddeployment`).
//!
//! Same shape as every controller: [`setup`] (watches: UnitedDeployments, the four kinds of
//! subset workload they control — `apps/v1` StatefulSets and Deployments, Advanced
//! StatefulSets, CloneSets — and, to follow readiness and scheduling of the subsets' pods, the
//! pods and the Deployments' ReplicaSets, all from the shared cache), [`reconcile`] (one pass, in
//! `sync`), the pure decisions in [`plan`] (allocators, partitions, adaptive scheduling state,
//! conditions, status) and [`template`] (the subset workload built from the template).
//!
//! One pass, as OpenKruise's `Reconcile`: the update revision (a ControllerRevision of the
//! template, through `workload::history`); the subset workloads the UnitedDeployment controls
//! (from the owner index; duplicates of a subset deleted); with the `Adaptive` schedule
//! strategy the unschedulable state of each subset (pending pods past
//! `rescheduleCriticalSeconds`, or reserved pods in reservation mode, whose
//! `apps.kruise.io/united-deployment-reserved-pod` label is written); the replicas of every
//! subset ([`plan::allocate`]) and their partitions; missing subsets created as
//! `<ud>-<subset>-<random>`, removed ones and subsets of another kind deleted, changed ones
//! updated (`PUT`, conflicts retried on a fresh read); then the status (sums, per subset,
//! `subsetReplicas`, `updateStatus`, conditions, `labelSelector` for `/scale`) written when it
//! changed, and the pass comes back when the adaptive strategy's next deadline is due.
//!
//! Subset workloads are claimed as `GetAllSubsets` claims them (`workload::claim`): those of the
//! template's kind that match the selector, its own kept and orphans adopted. Differences from
//! OpenKruise: only the UnitedDeployment's namespace is searched for orphans (OpenKruise lists
//! every namespace, and an owner reference across namespaces has the garbage collector delete
//! the workload); the subset's pods are those its workload controls (for a Deployment, through
//! its ReplicaSets) rather than a claim by selector.

pub mod plan;
mod sync;
pub mod template;

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1alpha1::{CloneSet, UnitedDeployment};
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_api::pod::CachedPod;
use kruise_engines::expectations::ResourceVersionExpectations;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use kruise_runtime::cache::Informer;
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "uniteddeployment";

/// The CRDs it reads.
pub const CRDS: &[&str] = &[
    "uniteddeployments.apps.kruise.io",
    "clonesets.apps.kruise.io",
    "statefulsets.apps.kruise.io",
];

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// UnitedDeployments.
    pub uds: Informer<UnitedDeployment>,
    /// `apps/v1` StatefulSets.
    pub statefulsets: Informer<StatefulSet>,
    /// Advanced StatefulSets (v1beta1).
    pub advanced_statefulsets: Informer<AdvancedStatefulSet>,
    /// CloneSets.
    pub clonesets: Informer<CloneSet>,
    /// `apps/v1` Deployments.
    pub deployments: Informer<Deployment>,
    /// `apps/v1` ReplicaSets (the pods of Deployment subsets).
    pub replicasets: Informer<ReplicaSet>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// ControllerRevisions.
    pub revisions: Informer<ControllerRevision>,
    /// Minimum resourceVersion of each UnitedDeployment after its own status writes
    /// (OpenKruise's `ResourceVersionExpectation`).
    pub versions: ResourceVersionExpectations,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--uniteddeployment-workers`, 3 as OpenKruise's) once every cache it reads has
/// synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        uds: ctx.cache.informer(),
        statefulsets: ctx.cache.informer(),
        advanced_statefulsets: ctx.cache.informer(),
        clonesets: ctx.cache.informer(),
        deployments: ctx.cache.informer(),
        replicasets: ctx.cache.informer(),
        pods: ctx.cache.informer(),
        revisions: ctx.cache.informer(),
        versions: ResourceVersionExpectations::new(),
    };
    let caches = vec![
        state.uds.synced(),
        state.statefulsets.synced(),
        state.advanced_statefulsets.synced(),
        state.clonesets.synced(),
        state.deployments.synced(),
        state.replicasets.synced(),
        state.pods.synced(),
        state.revisions.synced(),
    ];
    let (tx, rx) = unbounded::<ObjectRef<UnitedDeployment>>();
    let observers = futures::future::join3(
        futures::future::join4(
            scaffold::enqueue_owner(&state.statefulsets, "UnitedDeployment", tx.clone()),
            scaffold::enqueue_owner(&state.advanced_statefulsets, "UnitedDeployment", tx.clone()),
            scaffold::enqueue_owner(&state.clonesets, "UnitedDeployment", tx.clone()),
            scaffold::enqueue_owner(&state.deployments, "UnitedDeployment", tx.clone()),
        ),
        observe_pods(state.clone(), tx.clone()),
        observe_deleted(state.clone()),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.uds).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// The UnitedDeployment behind a pod: the controller of its workload (for a pod of a
/// ReplicaSet, of the ReplicaSet's Deployment), from the cached workloads. OpenKruise watches
/// no pods (it relies on the workloads' status and timed requeues); following them makes a
/// pass see a pod's scheduling failure and readiness at once.
fn pod_owner(state: &State, pod: &CachedPod) -> Option<ObjectRef<UnitedDeployment>> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let owner = pod
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))?;
    let ud_of = |owner: Option<&ObjectMeta>| {
        let meta = owner?;
        let r = meta
            .owner_references
            .as_ref()?
            .iter()
            .find(|o| o.controller == Some(true) && o.kind == "UnitedDeployment")?;
        Some(ObjectRef::new(&r.name).within(ns))
    };
    match (owner.api_version.as_str(), owner.kind.as_str()) {
        ("apps/v1", "StatefulSet") => ud_of(
            state
                .statefulsets
                .store()
                .get(&ObjectRef::new(&owner.name).within(ns))
                .as_deref()
                .map(|s| &s.metadata),
        ),
        (v, "StatefulSet") if v.starts_with("apps.kruise.io/") => ud_of(
            state
                .advanced_statefulsets
                .store()
                .get(&ObjectRef::new(&owner.name).within(ns))
                .as_deref()
                .map(|s| &s.metadata),
        ),
        (_, "CloneSet") => ud_of(
            state
                .clonesets
                .store()
                .get(&ObjectRef::new(&owner.name).within(ns))
                .as_deref()
                .map(|s| &s.metadata),
        ),
        ("apps/v1", "ReplicaSet") => {
            let rs = state
                .replicasets
                .store()
                .get(&ObjectRef::new(&owner.name).within(ns))?;
            let dep = rs
                .owner_references()
                .iter()
                .find(|o| o.controller == Some(true) && o.kind == "Deployment")?;
            let d = state
                .deployments
                .store()
                .get(&ObjectRef::new(&dep.name).within(ns))?;
            ud_of(Some(&d.metadata))
        }
        _ => None,
    }
}

fn observe_pods(
    state: State,
    triggers: UnboundedSender<ObjectRef<UnitedDeployment>>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let events = state.pods.subscribe();
    events.for_each(move |event| {
        if let Some(owner) = pod_owner(&state, event.object()) {
            let _ = triggers.unbounded_send(owner);
        }
        std::future::ready(())
    })
}

/// A deleted UnitedDeployment's resourceVersion expectation is forgotten.
fn observe_deleted(state: State) -> impl std::future::Future<Output = ()> + Send + 'static {
    let events = state.uds.subscribe();
    let versions = state.versions.clone();
    events.for_each(move |event| {
        if let kruise_runtime::cache::CacheEvent::Delete(ud) = &event {
            versions.delete_object(ud.meta());
        }
        std::future::ready(())
    })
}

/// One pass over one UnitedDeployment (see the module documentation).
pub async fn reconcile(
    ud: Arc<UnitedDeployment>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if ud.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if !state.versions.is_satisfied_object(&ud.metadata).0 {
        return Ok(Action::requeue(std::time::Duration::from_secs(1)));
    }
    let key = scaffold::key(ud.as_ref());
    crate::workload::bounded_pass(&key, Box::pin(sync::sync(&ud, &ctx, &state)), Error::Other).await
}
