//! BroadcastJob controller (`apps.kruise.io/v1beta1` BroadcastJob, the storage version;
//! OpenKruise v1.9.0 `pkg/controller/broadcastjob`).
//!
//! Same shape as every controller: [`setup`] (watches: BroadcastJobs, their pods, nodes, from
//! the shared cache), [`reconcile`] (one pass, in `sync`), pure decisions in [`plan`].
//!
//! One pass, as OpenKruise's `Reconcile`: a finished job (a `Complete` or `Failed` condition)
//! is deleted once `ttlSecondsAfterFinished` has passed; otherwise the job's pods (controller
//! owner and the `broadcastjob-name`/`broadcastjob-controller-uid` labels) are counted active,
//! failed (also `OnFailure` pods restarted more than `restartLimit` times) and succeeded, each
//! node is checked with OpenKruise's predicates (node name, selector and required affinity,
//! taints, unschedulable, allocatable resources), pods on nodes that no longer fit are deleted
//! and nodes without a pod get one — bound by node affinity, in slow-start batches, within
//! `parallelism` — unless the job is paused or a failure policy stops it (`FailFast` fails the
//! job and deletes its active pods, `Pause` pauses it, `Continue` goes on); the
//! `activeDeadlineSeconds` fails it; the job completes when every eligible node's pod has
//! finished (never with completion policy `Never`). Then the status (counters, phase, start and
//! completion time, conditions) is written. A node that appears or whose fitness changes wakes
//! the jobs it fits.
//!
//! Pods are named `<job>-<5 random characters>` by the controller (what the `generateName`
//! OpenKruise uses gives) so that every create is tracked in scale expectations by name.

pub mod plan;
mod sync;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_api::pod::CachedPod;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::expectations::{ResourceVersionExpectations, ScaleExpectations};
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "broadcastjob";

pub use crate::scaffold::Error;

/// The kind whose controller owner references mark the pods this controller owns (OpenKruise
/// matches the kind and the `apps.kruise.io` group, any version).
const KIND: &str = "BroadcastJob";

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// BroadcastJobs (to map node changes to jobs).
    pub jobs: Informer<BroadcastJob>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Nodes (cluster-wide).
    pub nodes: Informer<Node>,
    /// Pod creations and deletions not yet seen in the cache, per job.
    pub scale: ScaleExpectations,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--broadcastjob-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let jobs = ctx.cache.informer::<BroadcastJob>();
    let state = State {
        jobs: jobs.clone(),
        pods: ctx.cache.informer::<CachedPod>(),
        nodes: ctx.cache.cluster_informer::<Node>(),
        scale: ScaleExpectations::new(),
    };
    let caches = vec![jobs.synced(), state.pods.synced(), state.nodes.synced()];
    let (triggers, trigger_rx) = futures::channel::mpsc::unbounded();
    let pods = scaffold::observe_owned(
        &state.pods,
        KIND,
        scaffold::Expectations {
            scale: state.scale.clone(),
            updates: None,
            resource_versions: ResourceVersionExpectations::new(),
        },
        triggers.clone(),
    );
    let nodes = watch_nodes(state.jobs.clone(), state.nodes.clone(), triggers);
    let triggers = runtime::Triggers::from_informer(&jobs).reconcile_on(trigger_rx);
    let controller = scaffold::Controller::new(CONTROLLER_NAME, workers, triggers, caches);
    scaffold::run(
        ctx,
        controller,
        futures::future::join(pods, nodes),
        state,
        reconcile,
    )
}

/// OpenKruise `enqueueBroadcastJobForNode`: a node that appears wakes every job whose template
/// fits it; a node whose fitness for a job changed (by its labels, taints, unschedulable
/// flag or allocatable resources) wakes that job; a node that goes wakes nothing.
fn watch_nodes(
    jobs: Informer<BroadcastJob>,
    nodes: Informer<Node>,
    triggers: futures::channel::mpsc::UnboundedSender<ObjectRef<BroadcastJob>>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    // The last version of each node seen, to compare fitness before and after a change.
    let mut seen: std::collections::HashMap<String, Arc<Node>> = Default::default();
    let empty = k8s_openapi::api::core::v1::PodSpec::default();
    nodes.subscribe().for_each(move |event| {
        if let CacheEvent::Apply(node) = &event {
            let name = kube::ResourceExt::name_any(node.as_ref());
            let old = seen.insert(name.clone(), node.clone());
            for job in jobs.store().state() {
                let template = job.spec.template.spec.as_ref().unwrap_or(&empty);
                let pod = plan::FitPod::mock(template, &name);
                let fits_now = plan::node_fits(pod, node).is_ok();
                let wake = match &old {
                    None => fits_now,
                    Some(old) => plan::node_fits(pod, old).is_ok() != fits_now,
                };
                if wake {
                    let _ = triggers.unbounded_send(ObjectRef::from_obj(job.as_ref()));
                }
            }
        } else if let CacheEvent::Delete(node) = &event {
            seen.remove(&kube::ResourceExt::name_any(node.as_ref()));
        }
        std::future::ready(())
    })
}

/// One pass over one BroadcastJob (see the module documentation).
pub async fn reconcile(
    job: Arc<BroadcastJob>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(job.as_ref());
    let pass = sync::sync(&job, &ctx, &state, &key);
    scaffold::workload_pass(&key, &ctx, &state.scale, pass).await
}
