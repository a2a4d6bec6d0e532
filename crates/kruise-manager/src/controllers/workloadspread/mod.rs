//! WorkloadSpread controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/workloadspread`).
//!
//! Same shape as every controller: [`setup`] (watches: WorkloadSpreads, pods, the replica
//! counts of Deployments, StatefulSets, CloneSets, Advanced StatefulSets and Jobs, Nodes — all
//! from the shared cache), [`reconcile`] (one pass, in `sync`), pure decisions in [`plan`],
//! status written when it changed.
//!
//! One pass, as OpenKruise's `syncWorkloadSpread`: the target's pods and replicas (a Job: the
//! pods it owns and `spec.parallelism`; other kinds through [`crate::workload::finder`], any
//! kind with `/scale`; `targetFilter.replicasPathList` or the `kruise-configuration`
//! whitelist's `replicasPath` read from the target), filtered by `targetFilter.selector`;
//! grouped by version (a Deployment's `pod-template-hash`) and subset (the
//! `apps.kruise.io/matched-workloadspread` annotation, or for a pod created before the
//! WorkloadSpread the subset its node fits, written to it with the subset patch's metadata);
//! the `controller.kubernetes.io/pod-deletion-cost` of each pod (CloneSet, Deployment and
//! ReplicaSet targets: within a subset's limit `100 × (subsets − index)`, beyond it negative,
//! the order reversed for old versions); `status.subsetStatuses` and
//! `versionedSubsetStatuses` (replicas, missingReplicas, creatingPods/deletingPods the webhook
//! recorded, expired after 30 s / 15 s with a `CreatePodFailed`/`DeletePodFailed` Event); with
//! `scheduleStrategy: Adaptive` and `rescheduleCriticalSeconds`, pods of a subset that stay
//! unschedulable that long are deleted and the subset marked `Schedulable=False` for 5 min so
//! the webhook places their replacements in the next subset. The pass comes back when the
//! earliest entry expires.

pub mod plan;
mod sync;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1alpha1::WorkloadSpread;
use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_runtime::cache::{Cached, Informer};
use kruise_runtime::runner::{self as runtime, Context};
use kruise_runtime::triggers::Coalescer;

use crate::scaffold;
use crate::workload::finder::Finder;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "workloadspread";

/// How often pod and workload events trigger a pass of one WorkloadSpread at most.
const TRIGGER_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// WorkloadSpreads.
    pub spreads: Informer<WorkloadSpread>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Jobs (a Job target's pods and parallelism).
    pub jobs: Informer<Job>,
    /// Nodes (the subset of a pod created before its WorkloadSpread).
    pub nodes: Informer<Node>,
    /// Workloads behind references.
    pub finder: Finder,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--workloadspread-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        spreads: ctx.cache.informer::<WorkloadSpread>(),
        pods: ctx.cache.informer::<CachedPod>(),
        jobs: ctx.cache.informer::<Job>(),
        nodes: ctx.cache.cluster_informer::<Node>(),
        finder: Finder::new(&ctx),
    };
    let mut caches = vec![
        state.spreads.synced(),
        state.pods.synced(),
        state.jobs.synced(),
        state.nodes.synced(),
    ];
    caches.extend(state.finder.caches());
    let (triggers, trigger_rx) = Coalescer::<WorkloadSpread>::new(TRIGGER_WINDOW);
    let observers = futures::future::join(
        futures::future::join3(
            observe_pods(&state, triggers.clone()),
            observe_workloads(&state, state.finder.deployments(), triggers.clone()),
            observe_workloads(&state, state.finder.statefulsets(), triggers.clone()),
        ),
        futures::future::join3(
            observe_workloads(&state, state.finder.clonesets(), triggers.clone()),
            observe_workloads(
                &state,
                state.finder.advanced_statefulsets(),
                triggers.clone(),
            ),
            observe_workloads(&state, &state.jobs, triggers),
        ),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.spreads).reconcile_on(trigger_rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one WorkloadSpread (see the module documentation).
pub async fn reconcile(
    ws: Arc<WorkloadSpread>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if ws.metadata.deletion_timestamp.is_some() {
        kruise_webhook::pod::workloadspread::forget(
            ws.namespace().as_deref().unwrap_or(""),
            &ws.name_any(),
        );
        return Ok(Action::await_change());
    }
    let key = scaffold::key(ws.as_ref());
    crate::workload::bounded_pass(&key, sync::sync(&ws, &ctx, &state), Error::Other).await
}

/// `EnqueueRequestForPod`, as OpenKruise's `podEventHandler`: a pod carrying the
/// `apps.kruise.io/matched-workloadspread` annotation triggers the WorkloadSpread it names when
/// it appears or goes, turns inactive, or changes version; other pods trigger nothing (a pod
/// created before its WorkloadSpread is found by the WorkloadSpread's own passes).
fn observe_pods(
    state: &State,
    triggers: Coalescer<WorkloadSpread>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let seen = std::sync::Mutex::new(std::collections::HashMap::<String, (bool, String)>::new());
    state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let named =
            kruise_webhook::pod::workloadspread::injected(pod.metadata.annotations.as_ref());
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(inject) = named else {
            seen.remove(&uid);
            return std::future::ready(());
        };
        let owner = crate::workload::finder::controller_ref(&pod.metadata).map(|o| o.kind.as_str());
        let now = (
            kruise_engines::podutil::is_active(pod),
            kruise_webhook::pod::workloadspread::pod_version(owner, pod.metadata.labels.as_ref()),
        );
        let fire = match &event {
            kruise_runtime::cache::CacheEvent::Delete(_) => {
                seen.remove(&uid);
                true
            }
            kruise_runtime::cache::CacheEvent::Apply(_) => match seen.insert(uid, now.clone()) {
                None => true,
                Some((was_active, version)) => (was_active && !now.0) || version != now.1,
            },
        };
        if fire {
            triggers.trigger(ObjectRef::new(&inject.name).within(ns));
        }
        std::future::ready(())
    })
}

/// `EnqueueRequestForWorkload`, as OpenKruise's `workloadEventHandler`: a workload that appears
/// or goes, or whose replicas (or, for a CloneSet or Deployment, revision) changed, triggers
/// the WorkloadSpreads of its namespace that target its kind and name (for a ReplicaSet, also
/// its Deployment's).
fn observe_workloads<K>(
    state: &State,
    workloads: &Informer<K>,
    triggers: Coalescer<WorkloadSpread>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K>
where
    K: Cached + serde::Serialize,
{
    let spreads = state.spreads.clone();
    let seen = std::sync::Mutex::new(std::collections::HashMap::<String, String>::new());
    workloads.subscribe().for_each(move |event| {
        let w = event.object();
        let uid = w.uid().unwrap_or_default();
        let fingerprint = workload_fingerprint(w.as_ref());
        let fire = {
            let mut seen = seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match &event {
                kruise_runtime::cache::CacheEvent::Delete(_) => {
                    seen.remove(&uid);
                    true
                }
                kruise_runtime::cache::CacheEvent::Apply(_) => seen
                    .insert(uid, fingerprint.clone())
                    .is_none_or(|b| b != fingerprint),
            }
        };
        if fire {
            let ns = w.namespace().unwrap_or_default();
            let name = w.name_any();
            let kind = K::kind(&());
            for ws in spreads.in_namespace(&ns) {
                let t = &ws.spec.target_reference;
                if t.name == name && t.kind == kind && ws.metadata.deletion_timestamp.is_none() {
                    triggers.trigger(ObjectRef::from_obj(ws.as_ref()));
                }
            }
        }
        std::future::ready(())
    })
}

/// What a workload event must change to trigger (`workloadEventHandler.Update`): the replicas
/// (`spec.replicas`, a Job's `spec.parallelism`), a CloneSet's update revision against its
/// current one, a Deployment's `deployment.kubernetes.io/revision`.
fn workload_fingerprint<K: serde::Serialize>(w: &K) -> String {
    let v = serde_json::to_value(w).unwrap_or_default();
    format!(
        "{}|{}|{}|{}",
        v.pointer("/spec/replicas")
            .unwrap_or(&serde_json::Value::Null),
        v.pointer("/spec/parallelism")
            .unwrap_or(&serde_json::Value::Null),
        v.pointer("/status/updateRevision")
            .zip(v.pointer("/status/currentRevision"))
            .map(|(u, c)| u != c)
            .unwrap_or(false),
        v.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .unwrap_or(&serde_json::Value::Null),
    )
}
