//! ContainerRecreateRequest controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/containerrecreaterequest`), the manager's half of a request — kruise-daemon
//! on the pod's node stops the containers (`kruise_daemon::containerrecreate`).
//!
//! Same shape as every controller: [`setup`] (watches: requests, and pods mapped to the active
//! requests that name them by UID, from the shared cache), [`reconcile`] (one pass), the pure
//! decisions in [`plan`], and the status (`Completed` with its message when the manager ends a
//! request). One pass:
//!
//! - a finished (or deleted) request gives the pod's readiness back (`KruisePodReady` key of
//!   user agent `ContainerRecreateRequest`, key `<namespace>/<name>`) and drops its finalizer,
//!   then loses the label `crr.apps.kruise.io/active`, then is deleted once
//!   `ttlSecondsAfterFinished` has passed;
//! - a request whose pod is gone (deleted, being deleted, another UID) is completed with
//!   `pod has gone`; one no daemon picked up within a minute with `daemon has not responded for
//!   a long time`; one past `activeDeadlineSeconds` with `recreating has exceeded the
//!   activeDeadlineSeconds`;
//! - while `Recreating`, the pod's container statuses (running since the request was created)
//!   are copied into the annotation `crr.apps.kruise.io/sync-container-statuses` for the
//!   daemon, and with `unreadyGracePeriodSeconds` the pod is made not ready first: finalizer
//!   `crr.apps.kruise.io/unready-acquired`, the `KruisePodReady` key (pods with that readiness
//!   gate), then the annotation `crr.apps.kruise.io/unready-acquired` (the daemon waits the
//!   grace period from it).

pub mod plan;

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use kruise_api::apps::v1alpha1::{ContainerRecreateRequest, container_recreate_request_phase};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::lifecycle::{NotReadyChange, readiness};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use serde_json::json;
use tracing::info;

use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use self::plan::Step;
use crate::scaffold;
use crate::workload::{is_status, lifecycle::write_not_ready};

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "containerrecreaterequest";

/// The CRDs it reads.
pub const CRDS: &[&str] = &["containerrecreaterequests.apps.kruise.io"];

/// The `KruisePodReady` user agent of a request's not-ready key.
pub const USER_AGENT: &str = keys::CRR_POD_READY_USER_AGENT;

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// Requests.
    pub requests: Informer<ContainerRecreateRequest>,
    /// Pods.
    pub pods: Informer<CachedPod>,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--containerrecreaterequest-workers`, 3 as OpenKruise's `--crr-workers`) once
/// both caches have synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        requests: ctx.cache.informer(),
        pods: ctx.cache.informer(),
    };
    let caches = vec![state.requests.synced(), state.pods.synced()];
    let (tx, rx) = unbounded::<ObjectRef<ContainerRecreateRequest>>();
    let observers = requests_of_pods(state.pods.clone(), state.requests.clone(), tx);
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.requests).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// Maps every pod change to the unfinished requests in its namespace that name the pod by UID
/// (OpenKruise's `podEventHandler`, which lists them by the `crr.apps.kruise.io/pod-uid` label).
async fn requests_of_pods(
    pods: Informer<CachedPod>,
    requests: Informer<ContainerRecreateRequest>,
    tx: UnboundedSender<ObjectRef<ContainerRecreateRequest>>,
) {
    let mut events = pods.subscribe();
    while let Some(ev) = events.next().await {
        let pod = match &ev {
            CacheEvent::Apply(p) | CacheEvent::Delete(p) => p,
        };
        let (Some(ns), Some(uid)) = (
            pod.metadata.namespace.as_deref(),
            pod.metadata.uid.as_deref(),
        ) else {
            continue;
        };
        for crr in requests.in_namespace(ns) {
            let names_pod = crr
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(keys::CRR_POD_UID))
                .is_some_and(|u| u == uid);
            let finished = crr.metadata.deletion_timestamp.is_some()
                || crr
                    .status
                    .as_ref()
                    .is_some_and(|s| s.completion_time.is_some());
            if names_pod
                && !finished
                && tx
                    .unbounded_send(ObjectRef::from_obj(crr.as_ref()))
                    .is_err()
            {
                return;
            }
        }
    }
}

/// One pass over one request (see the module documentation).
pub async fn reconcile(
    crr: Arc<ContainerRecreateRequest>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let namespace = crr.namespace().unwrap_or_default();
    let pod = state
        .pods
        .store()
        .get(&ObjectRef::new(&crr.spec.pod_name).within(&namespace));
    let plan = plan::plan(&crr, pod.as_deref(), jiff::Timestamp::now());
    let api: Api<ContainerRecreateRequest> = Api::namespaced(ctx.client.clone(), &namespace);
    for step in &plan.steps {
        perform(&ctx.client, &api, &crr, pod.as_deref(), step).await?;
    }
    Ok(plan
        .requeue
        .map_or_else(Action::await_change, Action::requeue))
}

fn not_ready_message(crr: &ContainerRecreateRequest) -> readiness::NotReadyMessage {
    readiness::NotReadyMessage::new(
        USER_AGENT,
        &format!("{}/{}", crr.namespace().unwrap_or_default(), crr.name_any()),
    )
}

async fn perform(
    client: &Client,
    api: &Api<ContainerRecreateRequest>,
    crr: &ContainerRecreateRequest,
    pod: Option<&CachedPod>,
    step: &Step,
) -> Result<(), Error> {
    let name = crr.name_any();
    match step {
        Step::ReleaseNotReady => {
            if let Some(pod) = pod.filter(|p| {
                p.metadata.deletion_timestamp.is_none() && readiness::contains_readiness_gate(p)
            }) {
                let pods: Api<CachedPod> =
                    Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
                write_not_ready(
                    &pods,
                    &pod.name_any(),
                    &NotReadyChange::Remove(not_ready_message(crr)),
                )
                .await?;
            }
            set_finalizer(api, &name, false).await
        }
        Step::RemoveActiveLabel => {
            let body = json!({"metadata": {"labels": {keys::CRR_ACTIVE: null}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(body))
                .await?;
            Ok(())
        }
        Step::Delete => {
            info!(namespace = %crr.namespace().unwrap_or_default(), name, "deleting ContainerRecreateRequest for ttlSecondsAfterFinished");
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => Ok(()),
                Err(e) if is_status(&e, 404) => Ok(()),
                Err(e) => Err(Error::Other(format!("delete CRR error: {e}"))),
            }
        }
        Step::Complete(message) => {
            info!(namespace = %crr.namespace().unwrap_or_default(), name, reason = message, "completing ContainerRecreateRequest as failure");
            let status = json!({
                "metadata": {"resourceVersion": crr.resource_version()},
                "status": {
                    "phase": container_recreate_request_phase::COMPLETED,
                    "completionTime": kruise_api::time::now(),
                    "message": message,
                }
            });
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await?;
            Ok(())
        }
        Step::SyncContainerStatuses(value) => {
            let body =
                json!({"metadata": {"annotations": {keys::CRR_SYNC_CONTAINER_STATUSES: value}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(body))
                .await
                .map_err(|e| Error::Other(format!("sync containerStatuses error: {e}")))?;
            Ok(())
        }
        Step::AcquireNotReady => {
            match pod.filter(|p| readiness::contains_readiness_gate(p)) {
                Some(pod) => {
                    set_finalizer(api, &name, true).await?;
                    let pods: Api<CachedPod> =
                        Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
                    write_not_ready(
                        &pods,
                        &pod.name_any(),
                        &NotReadyChange::Add(not_ready_message(crr)),
                    )
                    .await
                    .map_err(|e| Error::Other(format!("add Pod not ready error: {e}")))?;
                }
                None => info!(
                    namespace = %crr.namespace().unwrap_or_default(), name,
                    "the request cannot make its pod not ready: the pod has no readiness gate KruisePodReady"
                ),
            }
            let now = jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            let body = json!({"metadata": {"annotations": {keys::CRR_UNREADY_ACQUIRED: now}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(body))
                .await?;
            Ok(())
        }
    }
}

/// Adds (`add`) or removes finalizer `crr.apps.kruise.io/unready-acquired` on a fresh read,
/// retrying conflicts (OpenKruise's `RetryOnConflict` around Get + Update).
async fn set_finalizer(
    api: &Api<ContainerRecreateRequest>,
    name: &str,
    add: bool,
) -> Result<(), Error> {
    let what = if add { "add" } else { "remove" };
    for attempt in 0.. {
        let Some(mut fresh) = api.get_opt(name).await? else {
            return Ok(());
        };
        let finalizers = fresh.metadata.finalizers.get_or_insert_with(Vec::new);
        let has = finalizers.iter().any(|f| f == keys::CRR_UNREADY_ACQUIRED);
        if has == add {
            return Ok(());
        }
        if add {
            finalizers.push(keys::CRR_UNREADY_ACQUIRED.to_owned());
        } else {
            finalizers.retain(|f| f != keys::CRR_UNREADY_ACQUIRED);
        }
        match api.replace(name, &Default::default(), &fresh).await {
            Ok(_) => return Ok(()),
            Err(e) if is_status(&e, 409) && attempt < 5 => continue,
            Err(e) => return Err(Error::Other(format!("{what} finalizer error: {e}"))),
        }
    }
    Ok(())
}
