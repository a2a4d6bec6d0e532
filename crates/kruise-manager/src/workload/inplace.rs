//! In-place update writes (OpenKruise `pkg/util/inplaceupdate` `realControl.Update` /
//! `Refresh`): the decisions are `kruise_engines::inplace`'s.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_engines::inplace::{self, RefreshAction, RevisionAdapter, UpdateSpec};
use kruise_engines::lifecycle::{self, LifecycleState};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};

use super::{ControlError, is_status};

/// How often a conflicting pod update is retried with a fresh read.
const UPDATE_CONFLICT_RETRIES: u32 = 5;
/// When to look again at a pod whose refresh write conflicted (its event usually comes first).
const CONFLICT_RECHECK: Duration = Duration::from_millis(200);

/// Runs the in-place update of one pod: `InPlaceUpdateReady` False first (status), then the pod
/// update carrying the new images/metadata, the revision labels (`adapter`), lifecycle
/// `Updating` (OpenKruise's `SetPodLifecycle(Updating)` additional func, with its timestamp) and
/// the `apps.kruise.io/inplace-update-state` annotation. Conflicts re-read the pod and retry.
/// Returns the written pod.
///
/// # Errors
/// API errors; [`ControlError::Invalid`] if the engine cannot build the update.
pub async fn update(
    api: &Api<Pod>,
    pod: &Pod,
    spec: &UpdateSpec,
    adapter: &impl RevisionAdapter,
) -> Result<Pod, ControlError> {
    let name = pod.name_any();
    // The status write returns the latest pod; build the update on it (saves a GET). Without
    // it, start from the cached pod; a stale one costs a 409 and a re-read.
    let mut base = match inplace::not_ready_condition_patch(pod, jiff::Timestamp::now()) {
        Some(patch) => {
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await?
        }
        None => pod.clone(),
    };
    let mut attempt = 0;
    loop {
        let mut updated = inplace::prepare_update(&base, spec, adapter, jiff::Timestamp::now())
            .map_err(|e| ControlError::Invalid(e.to_string()))?;
        lifecycle::set_pod_lifecycle(
            &mut updated,
            LifecycleState::Updating,
            jiff::Timestamp::now(),
        );
        match api.replace(&name, &PostParams::default(), &updated).await {
            Ok(written) => return Ok(written),
            Err(e) if is_status(&e, 409) && attempt < UPDATE_CONFLICT_RETRIES => {
                attempt += 1;
                base = api.get(&name).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The in-place engine's refresh for one pod: finish a grace period, start the next container
/// batch, or flip `InPlaceUpdateReady` back to True once the update completed. Returns the
/// written pod (if any) and when to look again.
///
/// # Errors
/// API errors other than conflicts (a conflict means someone else wrote the pod: look again
/// shortly); [`ControlError::Invalid`] for a malformed update state.
pub async fn refresh(
    api: &Api<Pod>,
    pod: &Pod,
    adapter: &impl RevisionAdapter,
    now: jiff::Timestamp,
) -> Result<(Option<Pod>, Option<Duration>), ControlError> {
    let action = inplace::refresh(pod, adapter, now)
        .map_err(|e| ControlError::Invalid(format!("pod {}: {e}", pod.name_any())))?;
    let written = match action {
        RefreshAction::Nothing => return Ok((None, None)),
        RefreshAction::Wait(d) => return Ok((None, Some(d))),
        RefreshAction::UpdatePod(new_pod) => {
            api.replace(&pod.name_any(), &PostParams::default(), &new_pod)
                .await
        }
        RefreshAction::PatchStatus(patch) => {
            api.patch_status(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await
        }
    };
    match written {
        Ok(w) => Ok((Some(w), None)),
        Err(e) if is_status(&e, 409) => Ok((None, Some(CONFLICT_RECHECK))),
        Err(e) => Err(e.into()),
    }
}
