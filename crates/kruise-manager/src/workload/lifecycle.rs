//! Lifecycle state writes (OpenKruise `pkg/util/lifecycle` `UpdatePodLifecycle` /
//! `UpdatePodLifecycleWithHandler`). Every transition goes through [`apply`], so the state label
//! and `lifecycle.apps.kruise.io/timestamp` are always written together.

use kruise_api::apps::common::LifecycleHook;
use kruise_api::pod::CachedPod;
use kruise_engines::expectations::ResourceVersionExpectations;
use kruise_engines::lifecycle::{self, LifecycleState, StateChange};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};

use super::{ControlError, is_status};

/// How many times a `pods/status` write is retried on a conflict (re-reading the pod each time).
const STATUS_CONFLICT_RETRIES: u32 = 5;

/// Moves `pod` to `state` (OpenKruise `UpdatePodLifecycle`): with `mark_not_ready`, the
/// `KruisePodReady` not-ready key is set or cleared first through `pods/status`, then the state
/// label and timestamp are patched. Expects the written resourceVersions in `rvs`.
///
/// # Errors
/// API errors (status conflicts are retried with a fresh read, 5 times).
pub async fn set_state(
    client: &Client,
    rvs: &ResourceVersionExpectations,
    pod: &CachedPod,
    state: LifecycleState,
    mark_not_ready: bool,
) -> Result<(), ControlError> {
    let change = lifecycle::plan_state_change(pod, state, mark_not_ready, jiff::Timestamp::now());
    apply(client, rvs, pod, change).await
}

/// [`set_state`] re-applying the hook's labels and finalizers (OpenKruise
/// `UpdatePodLifecycleWithHandler`, e.g. `Updated → PreparingUpdate`).
///
/// # Errors
/// As [`set_state`].
pub async fn set_state_with_handler(
    client: &Client,
    rvs: &ResourceVersionExpectations,
    pod: &CachedPod,
    state: LifecycleState,
    hook: Option<&LifecycleHook>,
) -> Result<(), ControlError> {
    let change =
        lifecycle::plan_state_change_with_handler(pod, state, hook, jiff::Timestamp::now());
    apply(client, rvs, pod, change).await
}

/// Sets or clears one `KruisePodReady` not-ready key of pod `name` (OpenKruise
/// `podreadiness.AddNotReadyKey` / `RemoveNotReadyKey`): the pod is read fresh from
/// `pods/status`, changed, and written back only when the change does something; a conflict is
/// retried with a new read (5 times). Returns the written pod, `None` when nothing was written.
///
/// # Errors
/// API errors.
pub async fn write_not_ready(
    api: &Api<CachedPod>,
    name: &str,
    change: &lifecycle::NotReadyChange,
) -> Result<Option<CachedPod>, ControlError> {
    let mut attempt = 0;
    loop {
        let base = api.get_status(name).await?;
        let mut fresh = base.clone();
        if !lifecycle::readiness::apply_not_ready_change(&mut fresh, change, jiff::Timestamp::now())
        {
            return Ok(None);
        }
        match super::update_pod_status(api, &base, &fresh).await {
            Ok(written) => return Ok(Some(written)),
            Err(e) if is_status(&e, 409) && attempt < STATUS_CONFLICT_RETRIES => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Performs a planned [`StateChange`]: the not-ready change on `pods/status` (re-read, applied,
/// written; conflicts retried), then the label/annotation patch.
///
/// # Errors
/// As [`set_state`].
pub async fn apply(
    client: &Client,
    rvs: &ResourceVersionExpectations,
    pod: &CachedPod,
    change: StateChange,
) -> Result<(), ControlError> {
    let name = pod.name_any();
    let api: Api<CachedPod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    if let Some(readiness) = &change.readiness
        && let Some(written) = write_not_ready(&api, &name, readiness).await?
    {
        rvs.expect_object(&written.metadata);
    }
    if let Some(patch) = change.patch {
        let written = api
            .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
            .await?;
        rvs.expect_object(&written.metadata);
    }
    Ok(())
}
