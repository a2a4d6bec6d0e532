//! EphemeralJob controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/ephemeraljob`): adds the ephemeral containers of `spec.template` to the
//! running pods its `selector` picks in its namespace and reports how they run.
//!
//! Same shape as every controller: [`setup`] (watches: EphemeralJobs and pods, from the shared
//! cache), [`reconcile`] (one pass), pure decisions in [`plan`], the status written when it
//! changed.
//!
//! One pass, as OpenKruise's `Reconcile`:
//! - a job being deleted loses its finalizer `apps.kruise.io/ephemeralcontainers-cleanup`.
//!   Kubernetes cannot remove ephemeral containers from a pod (OpenKruise's
//!   `RemoveEphemeralContainer` only logs that), so they stay and run to their end; the
//!   pods keep them until they are deleted;
//! - the finalizer is added to a job that lacks it;
//! - a finished job (`status.completionTime`) is deleted once `spec.ttlSecondsAfterFinished`
//!   (default 1800 s) have passed, else looked at again then;
//! - otherwise (behind the scale-expectations gate) the targets are the active pods the
//!   selector picks, oldest first, without pods holding a container of a template name another
//!   job or a user added, at most `spec.replicas`; the status (matched, running, succeeded,
//!   failed, waiting from the kubelet's `ephemeralContainerStatuses`; phase, conditions,
//!   start and completion times; `activeDeadlineSeconds` failing the job) is computed; unless
//!   the job is paused, up to `spec.parallelism` (default 1) minus the running pods get the
//!   containers (each with env `KRUISE_EJOB_ID=<job UID>`) through the
//!   `pods/ephemeralcontainers` subresource, in slow-start batches; a failure is an Event
//!   `CreateFailed` and the pass is retried; then the status is written. A job with an
//!   active deadline is looked at again when it falls due.
//!
//! Differences from OpenKruise: a pod triggers the jobs that select it whenever its ephemeral
//! containers, their statuses, its labels, or whether it is active change (OpenKruise: only
//! on create, delete and status changes); an injection counts as seen once the pod shows the
//! container (OpenKruise: on any pod event); conditions that did not change keep their times,
//! and a status that did not change is not written (OpenKruise writes it on every pass, with
//! fresh condition times); expectations left unsatisfied past `--expectation-timeout` are
//! dropped and the pass goes on (OpenKruise ends the pass).

pub mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kruise_api::apps::v1alpha1::EphemeralJob;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::{info, warn};

use kruise_engines::expectations::{ScaleAction, ScaleExpectations};
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::events::object_ref;
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;
use crate::workload::{is_status, write_finalizer};

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "ephemeraljob";

/// Event reason of a failed injection (OpenKruise's `CreateFailed`).
pub const REASON_CREATE_FAILED: &str = "CreateFailed";

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// EphemeralJobs.
    pub jobs: Informer<EphemeralJob>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Injections sent and not yet seen in the pod cache, per job (`namespace/name`), named
    /// `<pod>-<container>`.
    pub scale: ScaleExpectations,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--ephemeraljob-workers`, default 10) once the job and pod caches have synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        jobs: ctx.cache.informer::<EphemeralJob>(),
        pods: ctx.cache.informer::<CachedPod>(),
        scale: ScaleExpectations::default(),
    };
    let caches = vec![state.jobs.synced(), state.pods.synced()];
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let observers = futures::future::join(observe_pods(&state, tx), forget_deleted_jobs(&state));
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.jobs).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// What of a pod the jobs selecting it react to (see the module documentation).
fn pod_fingerprint(pod: &CachedPod) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    pod.metadata.labels.hash(&mut h);
    kruise_engines::podutil::is_active(pod).hash(&mut h);
    if let Some(ecs) = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_ref())
    {
        for c in ecs {
            c.name.hash(&mut h);
        }
    }
    if let Some(st) = pod
        .status
        .as_ref()
        .and_then(|s| s.ephemeral_container_statuses.as_ref())
    {
        serde_json::to_string(st).unwrap_or_default().hash(&mut h);
    }
    h.finish()
}

/// OpenKruise's `podHandler`, widened (module docs): a pod event concerns the jobs of its
/// namespace whose selector selects it; their injections the pod shows are observed, and they
/// get a pass when the pod is new to them, gone, or changed in what they read.
fn observe_pods(
    state: &State,
    triggers: UnboundedSender<ObjectRef<EphemeralJob>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let state = state.clone();
    let seen = Mutex::new(HashMap::<String, u64>::new());
    state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let jobs: Vec<Arc<EphemeralJob>> = state
            .jobs
            .in_namespace(ns)
            .into_iter()
            .filter(|j| plan::selects(j, pod))
            .collect();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let changed = {
            let mut seen = seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match &event {
                _ if jobs.is_empty() => {
                    seen.remove(&uid);
                    false
                }
                CacheEvent::Delete(_) => {
                    seen.remove(&uid);
                    true
                }
                CacheEvent::Apply(p) => {
                    let fp = pod_fingerprint(p);
                    seen.insert(uid, fp) != Some(fp)
                }
            }
        };
        let name = pod.name_any();
        for job in jobs {
            let key = scaffold::key(job.as_ref());
            for c in &job.spec.template.ephemeral_containers {
                if matches!(event, CacheEvent::Delete(_)) || plan::injection_seen(pod, &c.name) {
                    state
                        .scale
                        .observe(&key, ScaleAction::Create, &format!("{name}-{}", c.name));
                }
            }
            if changed {
                let _ = triggers.unbounded_send(ObjectRef::from_obj(job.as_ref()));
            }
        }
        std::future::ready(())
    })
}

/// OpenKruise's `ejobHandler.Delete`: a deleted job's expectations are dropped.
fn forget_deleted_jobs(
    state: &State,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let scale = state.scale.clone();
    state.jobs.subscribe().for_each(move |event| {
        if let CacheEvent::Delete(j) = &event {
            scale.delete(&scaffold::key(j.as_ref()));
        }
        std::future::ready(())
    })
}

fn jobs_api(ctx: &Context, job: &EphemeralJob) -> Api<EphemeralJob> {
    Api::namespaced(ctx.client.clone(), job.namespace().as_deref().unwrap_or(""))
}

/// One pass over one job (see the module documentation).
pub async fn reconcile(
    job: Arc<EphemeralJob>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(job.as_ref());
    let has_finalizer = job
        .finalizers()
        .iter()
        .any(|f| f == keys::EPHEMERAL_CONTAINERS_CLEANUP_FINALIZER);
    if job.meta().deletion_timestamp.is_some() {
        if has_finalizer {
            let injected = state
                .pods
                .in_namespace(job.namespace().as_deref().unwrap_or(""))
                .into_iter()
                .filter(|p| plan::selects(&job, p) && plan::contains(&job, p).1)
                .count();
            info!(ejob = %key, pods = injected, "ephemeral containers cannot be removed from pods; they run to their end");
            write_finalizer(
                &jobs_api(&ctx, &job),
                job.as_ref(),
                keys::EPHEMERAL_CONTAINERS_CLEANUP_FINALIZER,
                false,
            )
            .await?;
        }
        return Ok(Action::await_change());
    }
    let job = if has_finalizer {
        job
    } else {
        match write_finalizer(
            &jobs_api(&ctx, &job),
            job.as_ref(),
            keys::EPHEMERAL_CONTAINERS_CLEANUP_FINALIZER,
            true,
        )
        .await?
        {
            Some(j) => Arc::new(j),
            None => return Ok(Action::await_change()),
        }
    };
    let now = jiff::Timestamp::now();
    match plan::finished(&job, now) {
        Some(plan::Finished::Delete) => {
            info!(ejob = %key, "deleting EphemeralJob for ttlSecondsAfterFinished");
            match jobs_api(&ctx, &job)
                .delete(&job.name_any(), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => {
                    return Err(Error::Other(format!("Delete ephemeral job error: {e}. ")));
                }
            }
            state.scale.delete(&key);
            return Ok(Action::await_change());
        }
        Some(plan::Finished::Wait(left)) => return Ok(Action::requeue(left)),
        None => {}
    }
    if let Some(wait) =
        crate::workload::scale_gate(&state.scale, &key, ctx.config.expectation_timeout)
    {
        return Ok(wait);
    }
    crate::workload::bounded_pass(&key, sync(&job, &ctx, &state, now), Error::Other).await
}

/// The pass of an active job after the gates: targets, status, injection, status write.
async fn sync(
    job: &EphemeralJob,
    ctx: &Context,
    state: &State,
    now: jiff::Timestamp,
) -> Result<Action, Error> {
    let key = scaffold::key(job);
    let start = job
        .status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0);
    let requeue = plan::deadline_left(job, start, now)
        .filter(|d| !d.is_zero())
        .map_or_else(Action::await_change, Action::requeue);
    let pods = state
        .pods
        .in_namespace(job.namespace().as_deref().unwrap_or(""));
    let targets = plan::target_pods(job, &pods).map_err(|e| Error::Other(e.to_string()))?;
    let status = plan::status(job, &targets, start, now).map_err(Error::Other)?;
    info!(ejob = %key, matched = status.matches, succeeded = status.succeeded, failed = status.failed,
          running = status.running, waiting = status.waiting, phase = %status.phase, "status computed");
    if status.phase != kruise_api::apps::v1alpha1::ephemeral_job_phase::PAUSED {
        let inject = plan::pods_to_inject(job, &targets, status.running);
        inject_all(job, ctx, state, inject).await?;
    }
    if job.status.as_ref() != Some(&status) {
        let patch = json!({
            "metadata": {"resourceVersion": job.resource_version()},
            "status": status,
        });
        match jobs_api(ctx, job)
            .patch_status(
                &job.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(requeue)
}

/// `syncTargetPods`' injections: `pods` in slow-start batches (1, 2, 4, …), each recorded in
/// the scale expectations first; a failure stops after its batch, is reported as Event
/// `CreateFailed` on the job and fails the pass.
async fn inject_all(
    job: &EphemeralJob,
    ctx: &Context,
    state: &State,
    pods: Vec<Arc<CachedPod>>,
) -> Result<(), Error> {
    if pods.is_empty() {
        return Ok(());
    }
    let key = scaffold::key(job);
    let containers = plan::containers_to_inject(job);
    let result = crate::workload::do_slowly(pods, crate::workload::pods::INITIAL_BATCH, |pod| {
        let containers = &containers;
        let key = &key;
        async move { inject(job, ctx, state, key, &pod, containers).await }
    })
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) => {
            ctx.recorder
                .warning(&object_ref(job), REASON_CREATE_FAILED, &e)
                .await;
            Err(Error::Other(e))
        }
    }
}

/// `CreateEphemeralContainer` on one pod: a strategic-merge patch of
/// `spec.ephemeralContainers` through the `pods/ephemeralcontainers` subresource (a pod
/// already holding a container of a template name is left alone; a pod gone is skipped).
async fn inject(
    job: &EphemeralJob,
    ctx: &Context,
    state: &State,
    key: &str,
    pod: &CachedPod,
    containers: &[k8s_openapi::api::core::v1::EphemeralContainer],
) -> Result<(), String> {
    if plan::contains(job, pod).0 {
        return Ok(());
    }
    let name = pod.name_any();
    let ns = pod.namespace().unwrap_or_default();
    let expected = plan::expectation_names(job, &name);
    for n in &expected {
        state.scale.expect(key, ScaleAction::Create, n);
    }
    info!(ejob = key, pod = %name, "creating ephemeral containers in pod");
    let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &ns);
    let patch = json!({"spec": {"ephemeralContainers": containers}});
    match api
        .patch_subresource(
            "ephemeralcontainers",
            &name,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) => {
            for n in &expected {
                state.scale.observe(key, ScaleAction::Create, n);
            }
            if is_status(&e, 404) {
                warn!(ejob = key, pod = %name, "pod gone (or ephemeral containers disabled)");
                return Ok(());
            }
            Err(format!(
                "failed to create ephemeral container in pod {ns}/{name}: {e}"
            ))
        }
    }
}
