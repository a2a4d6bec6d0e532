//! SidecarTerminator controller (OpenKruise v1.9.0 `pkg/controller/sidecarterminator`, gate
//! `SidecarTerminator`): stops the sidecars of a job pod (restartPolicy `Never` or `OnFailure`)
//! once its main containers have completed, so the pod can finish.
//!
//! A sidecar is a container with env `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT=true`, or, on a
//! virtual-kubelet node (label `type=virtual-kubelet`), one with
//! `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE=<image>`. One pass over an interesting pod
//! ([`plan::is_interesting`]):
//!
//! - on a virtual-kubelet node, the running sidecars are updated in place to their env's image
//!   (an image that exits at once);
//! - elsewhere the running sidecars are stopped by the ContainerRecreateRequest
//!   `sidecar-termination-<pod UID>` (owned by the pod, `forceRecreate`, failure policy
//!   `Ignore`), which kruise-daemon carries out; an existing request is waited for;
//! - sidecars with `KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE=true` are stopped only once the
//!   other sidecars have completed, after the pod is marked terminated: condition
//!   `SidecarTerminated` and phase `Succeeded` (main containers exited 0) or `Failed`, by a
//!   strategic-merge patch of `pods/status`, so their exit code does not decide the phase.
//!
//! Shape: watches = the shared pod informer, filtered by [`plan::is_interesting`] (OpenKruise's
//! event handler; the cache emits an update only for a new resourceVersion); nodes are read
//! from the lazily started shared node cache (live until it has synced); [`reconcile`] = the
//! writes of [`plan::plan`]; no status of its own.

pub mod plan;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1alpha1::ContainerRecreateRequest;
use kruise_api::pod::CachedPod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use tracing::{debug, info};

use kruise_runtime::cache::read_synced;
use kruise_runtime::events::object_ref;
use kruise_runtime::runner::{self as runtime, Context};

use self::plan::{Names, Step};
use crate::workload::is_status;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "sidecarterminator";

/// The CRDs it reads.
pub const CRDS: &[&str] = &["containerrecreaterequests.apps.kruise.io"];

/// The reason of its Events (`SidecarTerminator`).
pub const EVENT_REASON: &str = "SidecarTerminator";

/// How long a pass waits for the node cache's first list before reading the node live.
const NODE_CACHE_WAIT: Duration = Duration::from_secs(3);

/// Conflicts retried by the in-place update (client-go's `retry.DefaultRetry`: 5 steps).
const UPDATE_ATTEMPTS: usize = 5;

/// Sets the controller up (the shared pod informer starts now) and returns the future that
/// runs it with `workers` (`--sidecarterminator-workers`, 3 as OpenKruise) once the pod cache
/// has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    crate::scaffold::pod_controller(
        ctx,
        CONTROLLER_NAME,
        workers,
        plan::is_interesting,
        reconcile,
    )
}

/// One pass over one pod (see the module documentation).
pub async fn reconcile(pod: Arc<CachedPod>, ctx: Arc<Context>) -> Result<Action, Error> {
    if !plan::is_interesting(&pod) {
        return Ok(Action::await_change());
    }
    let vk = on_virtual_kubelet(&ctx, &pod).await?;
    for step in plan::plan(&pod, vk) {
        perform(&ctx, &pod, &step).await?;
    }
    Ok(Action::await_change())
}

/// `IsPodRunningOnVirtualKubelet`: whether the pod's node has label `type=virtual-kubelet`; a
/// node that cannot be read fails the pass.
async fn on_virtual_kubelet(ctx: &Context, pod: &CachedPod) -> Result<bool, Error> {
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("");
    if node_name.is_empty() {
        return Err(Error::Other("resource name may not be empty".into()));
    }
    let cache = ctx.cache.lazy_cluster_informer::<Node>();
    let labels = if read_synced(&cache, NODE_CACHE_WAIT).await {
        cache
            .store()
            .get(&ObjectRef::new(node_name))
            .map(|n| n.metadata.labels.clone().unwrap_or_default())
    } else {
        Api::<Node>::all(ctx.client.clone())
            .get_opt(node_name)
            .await?
            .map(|n| n.metadata.labels.unwrap_or_default())
    };
    let Some(labels) = labels else {
        return Err(Error::Other(format!("nodes \"{node_name}\" not found")));
    };
    let (key, value) = plan::VIRTUAL_KUBELET_LABEL;
    Ok(labels.get(key).is_some_and(|v| v == value))
}

async fn perform(ctx: &Context, pod: &CachedPod, step: &Step) -> Result<(), Error> {
    let namespace = pod.namespace().unwrap_or_default();
    match step {
        Step::InPlaceUpdate(sidecars) => {
            update_in_place(&ctx.client, &namespace, &pod.name_any(), sidecars).await?;
            info!(
                namespace,
                pod = pod.name_any(),
                ?sidecars,
                "SidecarTerminator: in-place updated pod"
            );
            ctx.recorder
                .normal(
                    &object_ref(pod),
                    EVENT_REASON,
                    &format!(
                        "Kruise SidecarTerminator is trying to terminate sidecar {} using in-place update",
                        plan::go_list(sidecars)
                    ),
                )
                .await;
            Ok(())
        }
        Step::KillContainers(sidecars) => {
            let api: Api<ContainerRecreateRequest> =
                Api::namespaced(ctx.client.clone(), &namespace);
            let name = plan::request_name(pod);
            if api.get_opt(&name).await?.is_some() {
                debug!(
                    namespace,
                    name, "SidecarTerminator: CRR exists, waiting for it to complete"
                );
                return Ok(());
            }
            api.create(&PostParams::default(), &plan::kill_request(pod, sidecars))
                .await?;
            info!(namespace, name, ?sidecars, "SidecarTerminator: created CRR");
            ctx.recorder
                .normal(
                    &object_ref(pod),
                    EVENT_REASON,
                    &format!(
                        "Kruise SidecarTerminator is trying to terminate sidecar {} using crr",
                        plan::go_list(sidecars)
                    ),
                )
                .await;
            Ok(())
        }
        Step::MarkTerminated(phase) => {
            info!(
                namespace,
                pod = pod.name_any(),
                phase,
                "SidecarTerminator: all main containers completed, terminating the job pod"
            );
            let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &namespace);
            api.patch_status(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Strategic(plan::terminated_status_patch(phase, jiff::Timestamp::now())),
            )
            .await
            .map_err(|e| Error::Other(format!("failed to patch pod status: {e}")))?;
            Ok(())
        }
    }
}

/// `executeInPlaceUpdateAction`'s write: on a fresh read of the whole pod, the sidecars' images
/// set to their env's, conflicts retried; a pod that is gone is not an error.
async fn update_in_place(
    client: &Client,
    namespace: &str,
    name: &str,
    sidecars: &Names,
) -> Result<(), Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for attempt in 1.. {
        let Some(mut pod) = api.get_opt(name).await? else {
            return Ok(());
        };
        let Some(spec) = pod.spec.as_mut() else {
            return Ok(());
        };
        if !plan::update_images_in_place(&mut spec.containers, sidecars) {
            return Ok(());
        }
        match api.replace(name, &PostParams::default(), &pod).await {
            Ok(_) => return Ok(()),
            Err(e) if is_status(&e, 409) && attempt < UPDATE_ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
