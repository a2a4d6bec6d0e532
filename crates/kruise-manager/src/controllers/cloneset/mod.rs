//! CloneSet controller (OpenKruise v1.9 semantics, reference §3.1).
//!
//! Shape shared by every controller: [`run`] sets up the watches, [`reconcile`] does one sync of
//! one CloneSet, [`plan`] holds the pure scale/update decisions, [`pods`] builds pods and PVCs,
//! [`status`] computes the status.
//!
//! One sync: (1) skip while scale expectations are unsatisfied (a stale cache must never cause
//! double creates/deletes); (2) collect owned active pods, PVCs and ControllerRevisions from the
//! shared cache — never before those caches have completed their initial list, see
//! [`setup`]; (3) find or create the update revision; (4) wait for resourceVersion
//! expectations of pods we wrote; (5) write the status computed from those pods (before any pod
//! write, so an interrupted sync still leaves a true status); (6) scale — create, delete pods in
//! PreparingDelete, specified deletes, scale in — and stop if anything was written; (7)
//! otherwise update — refresh pod states, then update the next pods in place or by recreation
//! within `partition` and `maxUnavailable`; (8) truncate `podsToDelete` and the revision
//! history.

pub mod plan;
pub mod pods;
pub mod predownload;
pub mod status;
mod sync;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::ImagePullJob;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::Store;
use tracing::{debug, warn};

use kruise_runtime::cache::Informer;

use crate::scaffold;

use kruise_engines::expectations::{ResourceVersionExpectations, ScaleExpectations};
use kruise_runtime::metrics::{ObjectLabels, UntypedCounter};
use kruise_runtime::runner::{self as runtime, Context};
use prometheus_client::metrics::family::Family;

/// Name of the controller in metrics and logs.
pub const CONTROLLER_NAME: &str = "cloneset";

pub use crate::scaffold::Error;

/// The kind whose controller owner references mark the objects this controller owns.
const KIND: &str = "CloneSet";

impl From<plan::PlanError> for Error {
    /// The CloneSet spec cannot be planned (e.g. an invalid partition).
    fn from(e: plan::PlanError) -> Self {
        Error::Other(format!("invalid CloneSet spec: {e}"))
    }
}

/// State shared by all reconciles of the CloneSet controller: the stores of owned objects (from
/// the shared cache) and the expectations.
#[derive(Clone)]
pub struct State {
    /// Pods (shared informer; read by owner index, shared `Arc`s, never mutated).
    pub pods: Informer<CachedPod>,
    /// PVCs.
    pub pvcs: Informer<PersistentVolumeClaim>,
    /// ControllerRevisions.
    pub revisions: Informer<ControllerRevision>,
    /// Expected pod/PVC creations and deletions per CloneSet (`namespace/name`).
    pub scale: ScaleExpectations,
    /// Minimum resourceVersions the cache must show for objects we wrote.
    pub resource_versions: ResourceVersionExpectations,
    /// Last status write per CloneSet, to hold count-only changes back.
    pub status_writes: crate::workload::StatusWrites,
    /// Value of `--cloneset-scaling-exclude-preparing-delete`.
    pub exclude_preparing_delete: bool,
    /// ImagePullJobs (`apps.kruise.io/v1beta1`), read only with the
    /// `PreDownloadImageForInPlaceUpdate` gate (to delete a CloneSet's jobs after its update).
    pub image_pull_jobs: Option<Store<ImagePullJob>>,
    /// PodUnavailableBudgets, read only with `PodUnavailableBudgetUpdateGate`: each pod is
    /// checked against its budget before it is updated (OpenKruise's `Update` step 6).
    pub budgets: Option<Informer<PodUnavailableBudget>>,
    /// OpenKruise's `cloneset_scale_expectation_leakage{namespace,name}`: scale expectations
    /// that stayed unsatisfied past `--expectation-timeout`.
    pub expectation_leakage: Family<ObjectLabels, UntypedCounter>,
}

/// Sets the controller up at once — its informers (CloneSets, pods, PVCs,
/// ControllerRevisions) start filling the shared cache now, e.g. while this replica waits for
/// the leader Lease — and returns the future that runs it. That future reconciles nothing
/// before all four caches have synced (see [`runtime::run_controller`]).
///
/// `workers` = `--cloneset-workers`, `exclude_preparing_delete` =
/// `--cloneset-scaling-exclude-preparing-delete`.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
    exclude_preparing_delete: bool,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let scale = ScaleExpectations::new();
    let rvs = ResourceVersionExpectations::new();

    let clonesets = ctx.cache.informer::<CloneSet>();
    let pods = ctx.cache.informer::<CachedPod>();
    let pvcs = ctx.cache.informer::<PersistentVolumeClaim>();
    let revisions = ctx.cache.informer::<ControllerRevision>();
    let mut caches = vec![
        clonesets.synced(),
        pods.synced(),
        pvcs.synced(),
        revisions.synced(),
    ];
    let image_pull_jobs = ctx
        .gates
        .enabled(kruise_runtime::features::Feature::PreDownloadImageForInPlaceUpdate)
        .then(|| {
            let jobs = ctx.cache.informer::<ImagePullJob>();
            caches.push(jobs.synced());
            jobs.store().clone()
        });
    let budgets = ctx
        .gates
        .enabled(kruise_runtime::features::Feature::PodUnavailableBudgetUpdateGate)
        .then(|| {
            let budgets = ctx.cache.informer::<PodUnavailableBudget>();
            caches.push(budgets.synced());
            budgets
        });
    let (triggers, trigger_rx) = futures::channel::mpsc::unbounded();
    let expectations = scaffold::Expectations {
        scale: scale.clone(),
        updates: None,
        resource_versions: rvs.clone(),
    };
    let observers = futures::future::join3(
        scaffold::observe_owned(&pods, KIND, expectations.clone(), triggers.clone()),
        scaffold::observe_owned(&pvcs, KIND, expectations.clone(), triggers.clone()),
        scaffold::observe_owned(&revisions, KIND, expectations, triggers),
    );

    let expectation_leakage = Family::<ObjectLabels, UntypedCounter>::default();
    ctx.metrics.register(
        "cloneset_scale_expectation_leakage",
        "CloneSet scale expectations that timed out, by CloneSet namespace and name",
        expectation_leakage.clone(),
    );
    let state = State {
        pods: pods.clone(),
        pvcs: pvcs.clone(),
        revisions: revisions.clone(),
        scale,
        resource_versions: rvs,
        status_writes: Default::default(),
        exclude_preparing_delete,
        image_pull_jobs,
        budgets,
        expectation_leakage,
    };
    let triggers = runtime::Triggers::from_informer(&clonesets).reconcile_on(trigger_rx);
    let controller = scaffold::Controller::new(CONTROLLER_NAME, workers, triggers, caches);
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One sync of one CloneSet. See the module documentation for the steps.
pub async fn reconcile(
    cs: Arc<CloneSet>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if cs.metadata.deletion_timestamp.is_some() {
        // Pods, PVCs and revisions are garbage-collected through their owner references.
        return Ok(Action::await_change());
    }
    let ns = cs.namespace().unwrap_or_default();
    let key = format!("{ns}/{}", cs.name_any());
    match state.scale.check(&key, ctx.config.expectation_timeout) {
        kruise_engines::expectations::ExpectationCheck::Satisfied => {}
        kruise_engines::expectations::ExpectationCheck::Waiting { requeue_after } => {
            debug!(cloneset = %key, "scale expectations not satisfied yet");
            return Ok(Action::requeue(requeue_after.min(Duration::from_secs(30))));
        }
        kruise_engines::expectations::ExpectationCheck::TimedOut { unsatisfied_for } => {
            warn!(cloneset = %key, ?unsatisfied_for, "scale expectations timed out (leaked)");
            state
                .expectation_leakage
                .get_or_create(&ObjectLabels {
                    namespace: ns.clone(),
                    name: cs.name_any(),
                })
                .inc();
            if ctx
                .gates
                .enabled(kruise_runtime::features::Feature::ForceDeleteTimeoutExpectationGate)
            {
                state.scale.delete(&key);
            } else {
                return Ok(Action::requeue(Duration::from_secs(30)));
            }
        }
    }
    let r = crate::workload::bounded_pass(&key, sync::sync(&cs, &ctx, &state, &key), Error::Other)
        .await;
    debug!(cloneset = %key, ok = r.is_ok(), "sync done");
    r
}

#[cfg(test)]
mod tests;
