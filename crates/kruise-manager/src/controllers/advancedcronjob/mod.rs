//! AdvancedCronJob controller (`apps.kruise.io`, read as v1beta1, the storage version;
//! OpenKruise v1.9.0 `pkg/controller/advancedcronjob`).
//!
//! Same shape as every controller: [`setup`] (watches: AdvancedCronJobs, and the Jobs and
//! BroadcastJobs they control, all from the shared cache), [`reconcile`] (one pass, in
//! `sync`), the pure decisions in [`plan`] (states of the children, last schedule time,
//! history clean-up, missed and next runs, concurrency) and the status (`type`, `active`,
//! `lastScheduleTime`).
//!
//! One pass, as OpenKruise's `reconcileJob` / `reconcileBroadcastJob`: the children (owned
//! through a controller reference, from the owner-UID index) are sorted into active, succeeded
//! and failed; the status is written when it changed; finished children beyond
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted (oldest start first,
//! best effort); a paused cron job stops there; else the schedule (robfig/cron's standard
//! syntax with the `timeZone` / `TZ=` zone, [`kruise_engines::cron`]) gives the latest missed
//! run and the next: a missed run within `startingDeadlineSeconds` is created as
//! `<name>-<unix seconds>` with the `apps.kruise.io/scheduled-at` annotation, the template's
//! labels and annotations and a controller reference, unless `Forbid` finds an active child
//! (`Replace` deletes the active ones first); the pass comes back at the next run. The name is
//! the same for a scheduled time whatever happens between passes, so a run is created once even
//! across a manager restart (the created child's annotation becomes the last schedule time).
//!
//! Differences from OpenKruise: changes of the Jobs an AdvancedCronJob controls trigger its
//! pass (OpenKruise's Job watch maps them to a BroadcastJob owner and so never triggers one;
//! its status caught up only at the next run); a child that already exists under the run's
//! name counts as created instead of failing the pass; the status is written only when it
//! changed; a schedule that cannot be parsed and too many missed start times are reported as
//! Warning Events (`UnparseableSchedule`, `TooManyMissedTimes`, the reasons of Kubernetes'
//! CronJob controller; OpenKruise only logs them). The `imageListPullJobTemplate` (v1beta1) is
//! not run: kruise-rs has no ImageListPullJob controller; such a cron job gets status.type
//! `ImageListPullJob` and a Warning Event.

pub mod plan;
mod sync;

use std::sync::Arc;

use futures::channel::mpsc::unbounded;
use k8s_openapi::api::batch::v1::Job;
use kruise_api::apps::v1beta1::{AdvancedCronJob, BroadcastJob};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_runtime::cache::Informer;
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "advancedcronjob";

/// The CRDs it reads.
pub const CRDS: &[&str] = &[
    "advancedcronjobs.apps.kruise.io",
    "broadcastjobs.apps.kruise.io",
];

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// AdvancedCronJobs (v1beta1).
    pub cronjobs: Informer<AdvancedCronJob>,
    /// Jobs (`batch/v1`).
    pub jobs: Informer<Job>,
    /// BroadcastJobs (v1beta1).
    pub broadcastjobs: Informer<BroadcastJob>,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--advancedcronjob-workers`, 3 as OpenKruise's) once every cache it reads has
/// synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        cronjobs: ctx.cache.informer(),
        jobs: ctx.cache.informer(),
        broadcastjobs: ctx.cache.informer(),
    };
    let caches = vec![
        state.cronjobs.synced(),
        state.jobs.synced(),
        state.broadcastjobs.synced(),
    ];
    let (tx, rx) = unbounded::<ObjectRef<AdvancedCronJob>>();
    let observers = futures::future::join(
        scaffold::enqueue_owner(&state.jobs, "AdvancedCronJob", tx.clone()),
        scaffold::enqueue_owner(&state.broadcastjobs, "AdvancedCronJob", tx),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.cronjobs).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one AdvancedCronJob (see the module documentation).
pub async fn reconcile(
    cronjob: Arc<AdvancedCronJob>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if cronjob.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let key = scaffold::key(cronjob.as_ref());
    crate::workload::bounded_pass(&key, sync::sync(&cronjob, &ctx, &state), Error::Other).await
}
