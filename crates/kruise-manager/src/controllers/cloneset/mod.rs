//! CloneSet controller (OpenKruise v1.9 semantics, reference §3.1).
//!
//! Shape shared by every controller: [`run`] sets up the watches, [`reconcile`] does one sync of
//! one CloneSet, [`plan`] holds the pure scale/update decisions, [`pods`] builds pods and PVCs,
//! [`status`] computes the status.
//!
//! One sync: (1) skip while scale expectations are unsatisfied (a stale cache must never cause
//! double creates/deletes); (2) collect owned active pods, PVCs and ControllerRevisions from the
//! reflector caches; (3) find or create the update revision; (4) wait for resourceVersion
//! expectations of pods we wrote; (5) scale — create, delete pods in PreparingDelete, specified
//! deletes, scale in — and stop if anything was written; (6) otherwise update — refresh pod
//! states, then update the next pods in place or by recreation within `partition` and
//! `maxUnavailable`; (7) write the status, truncate `podsToDelete` and the revision history.

pub mod plan;
pub mod pods;
pub mod status;
mod sync;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kruise_api::apps::v1alpha1::CloneSet;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use tracing::{debug, warn};

use crate::expectations::{ResourceVersionExpectations, ScaleAction, ScaleExpectations};
use crate::runtime::{self, Context};

/// Name of the controller in metrics and logs.
pub const CONTROLLER_NAME: &str = "cloneset";

/// Errors of one CloneSet sync. Every variant is retried with backoff; user errors are also
/// reported as Events.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The CloneSet spec cannot be planned (e.g. an invalid partition).
    #[error("invalid CloneSet spec: {0}")]
    Plan(#[from] plan::PlanError),
    /// A revision could not be built or read.
    #[error("revision: {0}")]
    Revision(#[from] crate::revision::RevisionError),
    /// Anything else that makes the sync fail.
    #[error("{0}")]
    Other(String),
}

/// State shared by all reconciles of the CloneSet controller: the reflector caches of owned
/// objects and the expectations.
#[derive(Clone)]
pub struct State {
    /// All pods (shared `Arc`s; never mutated).
    pub pods: Store<Pod>,
    /// All PVCs.
    pub pvcs: Store<PersistentVolumeClaim>,
    /// All ControllerRevisions.
    pub revisions: Store<ControllerRevision>,
    /// Expected pod/PVC creations and deletions per CloneSet (`namespace/name`).
    pub scale: ScaleExpectations,
    /// Minimum resourceVersions the cache must show for objects we wrote.
    pub resource_versions: ResourceVersionExpectations,
    /// Value of `--cloneset-scaling-exclude-preparing-delete`.
    pub exclude_preparing_delete: bool,
}

/// The CloneSet controlling `obj` (controller owner reference of kind CloneSet), if any.
fn owning_cloneset<K: Resource>(obj: &K) -> Option<ObjectRef<CloneSet>> {
    let owner = obj.meta().owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true)
            && o.kind == "CloneSet"
            && o.api_version.starts_with("apps.kruise.io/")
    })?;
    let ns = obj.meta().namespace.as_deref().unwrap_or("");
    Some(ObjectRef::new(&owner.name).within(ns))
}

/// Drives a reflector for `api` and, for every event of an object owned by a CloneSet
/// (including deletions), observes the scale and resourceVersion expectations and asks for a
/// reconcile of the owner through `triggers`.
///
/// (kube's shared-store subscriptions are not used for this: they do not forward deletions and
/// stall when an object disappears between dispatch and read.)
fn observed_stream<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    scale: ScaleExpectations,
    rvs: ResourceVersionExpectations,
    triggers: futures::channel::mpsc::UnboundedSender<ObjectRef<CloneSet>>,
) -> impl std::future::Future<Output = ()> + Send
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let stream = watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .reflect(writer);
    stream.for_each(move |event| {
        match event {
            Ok(watcher::Event::Apply(obj)) | Ok(watcher::Event::InitApply(obj)) => {
                if let Some(owner) = owning_cloneset(&obj) {
                    let key = format!(
                        "{}/{}",
                        owner.namespace.as_deref().unwrap_or(""),
                        owner.name
                    );
                    let name = obj.name_any();
                    scale.observe(&key, ScaleAction::Create, &name);
                    if obj.meta().deletion_timestamp.is_some() {
                        scale.observe(&key, ScaleAction::Delete, &name);
                    }
                    let _ = triggers.unbounded_send(owner);
                }
                rvs.observe_object(obj.meta());
            }
            Ok(watcher::Event::Delete(obj)) => {
                if let Some(owner) = owning_cloneset(&obj) {
                    let key = format!(
                        "{}/{}",
                        owner.namespace.as_deref().unwrap_or(""),
                        owner.name
                    );
                    scale.observe(&key, ScaleAction::Delete, &obj.name_any());
                    let _ = triggers.unbounded_send(owner);
                }
                rvs.delete_object(obj.meta());
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "watch error"),
        }
        std::future::ready(())
    })
}

/// A namespaced API when the manager is restricted to one namespace, else a cluster-wide one.
fn api<K>(client: &kube::Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Starts the CloneSet controller: watches CloneSets and the pods, PVCs and ControllerRevisions
/// they own, and reconciles with `--cloneset-workers` workers until shutdown.
pub async fn run(ctx: Arc<Context>) -> Result<(), runtime::Error> {
    run_with(ctx, false).await
}

/// [`run`] with `--cloneset-scaling-exclude-preparing-delete`.
pub async fn run_with(
    ctx: Arc<Context>,
    exclude_preparing_delete: bool,
) -> Result<(), runtime::Error> {
    let client = ctx.client.clone();
    let scale = ScaleExpectations::new();
    let rvs = ResourceVersionExpectations::new();

    let (pods, pod_writer) = reflector::store::<Pod>();
    let (pvcs, pvc_writer) = reflector::store::<PersistentVolumeClaim>();
    let (revisions, rev_writer) = reflector::store::<ControllerRevision>();
    let (triggers, trigger_rx) = futures::channel::mpsc::unbounded();

    let namespace = ctx.config.namespace.clone();
    let drivers = futures::future::join3(
        observed_stream(
            api(&client, &namespace),
            pod_writer,
            scale.clone(),
            rvs.clone(),
            triggers.clone(),
        ),
        observed_stream(
            api(&client, &namespace),
            pvc_writer,
            scale.clone(),
            rvs.clone(),
            triggers.clone(),
        ),
        observed_stream(
            api(&client, &namespace),
            rev_writer,
            scale.clone(),
            rvs.clone(),
            triggers,
        ),
    );
    let shutdown = ctx.shutdown.clone();
    let drivers = tokio::spawn(async move {
        tokio::select! {
            _ = drivers => {},
            _ = shutdown.cancelled() => {},
        }
    });

    let state = State {
        pods,
        pvcs,
        revisions,
        scale,
        resource_versions: rvs,
        exclude_preparing_delete,
    };
    let controller = Controller::new(
        api::<CloneSet>(&client, &namespace),
        watcher::Config::default().any_semantic(),
    )
    .reconcile_on(trigger_rx);
    let workers = ctx.config.cloneset_workers;
    let result =
        runtime::run_controller(ctx, CONTROLLER_NAME, workers, controller, move |cs, ctx| {
            let state = state.clone();
            async move { reconcile(cs, ctx, state).await }
        })
        .await;
    drivers.abort();
    result
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
        crate::expectations::ExpectationCheck::Satisfied => {}
        crate::expectations::ExpectationCheck::Waiting { requeue_after } => {
            debug!(cloneset = %key, "scale expectations not satisfied yet");
            return Ok(Action::requeue(requeue_after.min(Duration::from_secs(30))));
        }
        crate::expectations::ExpectationCheck::TimedOut { unsatisfied_for } => {
            warn!(cloneset = %key, ?unsatisfied_for, "scale expectations timed out (leaked)");
            ctx.metrics
                .cloneset_scale_expectation_leakage(&ns, &cs.name_any());
            if ctx
                .gates
                .enabled(crate::features::Feature::ForceDeleteTimeoutExpectationGate)
            {
                state.scale.delete(&key);
            } else {
                return Ok(Action::requeue(Duration::from_secs(30)));
            }
        }
    }
    // A sync that hangs would block this CloneSet forever (the controller never runs two syncs
    // of one object at once): bound it and retry.
    match tokio::time::timeout(SYNC_TIMEOUT, sync::sync(&cs, &ctx, &state, &key)).await {
        Ok(r) => {
            debug!(cloneset = %key, ok = r.is_ok(), "sync done");
            r
        }
        Err(_) => Err(Error::Other(format!(
            "sync of {key} did not finish within {SYNC_TIMEOUT:?}"
        ))),
    }
}

/// Upper bound of one sync.
const SYNC_TIMEOUT: Duration = Duration::from_secs(300);
