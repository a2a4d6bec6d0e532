//! In-place update writes (OpenKruise `pkg/util/inplaceupdate` `realControl.Update` /
//! `Refresh`): the decisions are `kruise_engines::inplace`'s.

use kruise_api::pod::CachedPod;
use std::time::Duration;

use kruise_engines::inplace::{self, RefreshAction, RevisionAdapter, UpdateSpec};
use kruise_engines::lifecycle::{self, LifecycleState};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};

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
    api: &Api<CachedPod>,
    pod: &CachedPod,
    spec: &UpdateSpec,
    adapter: &impl RevisionAdapter,
) -> Result<CachedPod, ControlError> {
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
        match super::update_pod(api, &base, &updated).await {
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
    api: &Api<CachedPod>,
    pod: &CachedPod,
    adapter: &impl RevisionAdapter,
    now: jiff::Timestamp,
) -> Result<(Option<CachedPod>, Option<Duration>), ControlError> {
    refresh_with(api, pod, adapter, now, |_| {}).await
}

/// [`refresh`] letting `fold` add to the `pods/status` patch (when the action is one) before it
/// is sent, e.g. the lifecycle state change that follows `InPlaceUpdateReady=True`.
async fn refresh_with(
    api: &Api<CachedPod>,
    pod: &CachedPod,
    adapter: &impl RevisionAdapter,
    now: jiff::Timestamp,
    fold: impl FnOnce(&mut serde_json::Value),
) -> Result<(Option<CachedPod>, Option<Duration>), ControlError> {
    let mut action = inplace::refresh(pod, adapter, now)
        .map_err(|e| ControlError::Invalid(format!("pod {}: {e}", pod.name_any())))?;
    if let RefreshAction::PatchStatus(patch) = &mut action {
        fold(patch);
    }
    let written = match action {
        RefreshAction::Nothing => return Ok((None, None)),
        RefreshAction::Wait(d) => return Ok((None, Some(d))),
        RefreshAction::UpdatePod(new_pod) => super::update_pod(api, pod, &new_pod).await,
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

/// What a workload tells the shared pod-update flow ([`refresh_pod_state`],
/// [`update_pod_in_place`]) about itself: where to write, whom to report Events on, its
/// lifecycle hooks and how its pods carry revisions.
pub struct PodUpdater<'a, A: RevisionAdapter> {
    /// API client.
    pub client: &'a kube::Client,
    /// Event recorder.
    pub recorder: &'a kruise_runtime::events::EventRecorder,
    /// The workload, for Events.
    pub owner: &'a k8s_openapi::api::core::v1::ObjectReference,
    /// resourceVersions of the pods written are expected here.
    pub rvs: &'a kruise_engines::expectations::ResourceVersionExpectations,
    /// The workload's `spec.lifecycle`.
    pub lifecycle: Option<&'a kruise_api::apps::common::Lifecycle>,
    /// How revisions are written on and read from pods.
    pub adapter: &'a A,
}

/// What [`update_pod_in_place`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlaceOutcome {
    /// The pod's containers/metadata were updated (`Updating`).
    Updated,
    /// The inPlaceUpdate hook holds the pod: it was moved to `PreparingUpdate` (or had the
    /// hook's labels and finalizers put back) and is updated once the hook lets go.
    MovedToPreparingUpdate,
    /// The pod is in `PreparingUpdate` and still hooked: nothing written.
    Waiting,
}

impl<A: RevisionAdapter> PodUpdater<'_, A> {
    fn pods(&self, pod: &CachedPod) -> Api<CachedPod> {
        Api::namespaced(self.client.clone(), &pod.namespace().unwrap_or_default())
    }

    /// OpenKruise's `refreshPodState` (CloneSet and Advanced StatefulSet alike): the in-place
    /// engine's refresh (grace period, next container batch, `InPlaceUpdateReady` back to
    /// True), then the lifecycle transition the pod is due (`PreparingNormal → Normal`,
    /// `Updating → Updated/Normal` once the update completed, `Updated → Normal`, a
    /// `PreparingUpdate` pod already on `update_revision`). Returns whether the pod was written
    /// and when to look at it again.
    ///
    /// # Errors
    /// API errors other than conflicts; a malformed in-place update state.
    pub async fn refresh_pod_state(
        &self,
        pod: &CachedPod,
        update_revision: &str,
        now: jiff::Timestamp,
    ) -> Result<(bool, Option<Duration>), ControlError> {
        let completed = inplace::check_update_completed(pod).is_ok();
        let next = lifecycle::refresh_target_state(self.lifecycle, pod, update_revision, completed);
        let mark = lifecycle::refresh_mark_not_ready(self.lifecycle);
        // OpenKruise writes InPlaceUpdateReady=True and then, in the same call, the lifecycle
        // state (`Updating → Normal`). pods/status writes labels and annotations as well, so a
        // plain state change rides on the condition's write: one request per updated pod fewer.
        let mut folded = false;
        let (written, delay) = refresh_with(&self.pods(pod), pod, self.adapter, now, |patch| {
            if let Some(next) = next {
                let change = lifecycle::plan_state_change(pod, next, mark, now);
                folded = lifecycle::fold_into_status_patch(patch, &change);
            }
        })
        .await?;
        if let Some(w) = &written {
            self.rvs.expect_object(&w.metadata);
            return Ok((true, delay));
        }
        if folded {
            // The write conflicted: look again (refresh's delay) with a fresh pod.
            return Ok((false, delay));
        }
        if let Some(next) = next {
            super::lifecycle::set_state(self.client, self.rvs, pod, next, mark).await?;
            return Ok((true, delay));
        }
        Ok((false, delay))
    }

    /// Updates `pod` in place to `target` with `spec` (from
    /// [`inplace::calculate_update_spec`]), honouring the inPlaceUpdate lifecycle hook as
    /// OpenKruise's CloneSet and Advanced StatefulSet do: a hooked pod goes to
    /// `PreparingUpdate` first, an `Updated` one gets the hook's labels and finalizers back,
    /// a `PreparingUpdate` one waits while still hooked. Reports `SuccessfulUpdatePodInPlace`
    /// / `FailedUpdatePodInPlace` Events.
    ///
    /// # Errors
    /// API errors; [`ControlError::Invalid`] for a pod in a state that must not be updated
    /// (`not allowed to in-place update pod <name> in state <state>`).
    pub async fn update_pod_in_place(
        &self,
        pod: &CachedPod,
        spec: &UpdateSpec,
        target: &str,
    ) -> Result<InPlaceOutcome, ControlError> {
        use kruise_runtime::events;
        let name = pod.name_any();
        let hook = self.lifecycle.and_then(|l| l.in_place_update.as_ref());
        match lifecycle::in_place_update_gate(self.lifecycle, pod) {
            lifecycle::InPlaceUpdateGate::ToPreparingUpdate { mark_not_ready } => {
                super::lifecycle::set_state(
                    self.client,
                    self.rvs,
                    pod,
                    LifecycleState::PreparingUpdate,
                    mark_not_ready,
                )
                .await?;
                return Ok(InPlaceOutcome::MovedToPreparingUpdate);
            }
            lifecycle::InPlaceUpdateGate::ToPreparingUpdateWithHandler => {
                super::lifecycle::set_state_with_handler(
                    self.client,
                    self.rvs,
                    pod,
                    LifecycleState::PreparingUpdate,
                    hook,
                )
                .await?;
                return Ok(InPlaceOutcome::MovedToPreparingUpdate);
            }
            lifecycle::InPlaceUpdateGate::Wait => return Ok(InPlaceOutcome::Waiting),
            lifecycle::InPlaceUpdateGate::Update => {}
            lifecycle::InPlaceUpdateGate::NotAllowed(st) => {
                return Err(ControlError::Invalid(format!(
                    "not allowed to in-place update pod {name} in state {st}"
                )));
            }
        }
        match update(&self.pods(pod), pod, spec, self.adapter).await {
            Ok(written) => {
                self.rvs.expect_object(&written.metadata);
                self.recorder
                    .normal(
                        self.owner,
                        events::SUCCESSFUL_UPDATE_POD_IN_PLACE,
                        &format!("successfully update pod {name} in-place(revision {target})"),
                    )
                    .await;
                Ok(InPlaceOutcome::Updated)
            }
            Err(e) => {
                self.recorder
                    .warning(
                        self.owner,
                        events::FAILED_UPDATE_POD_IN_PLACE,
                        &format!("failed to update pod {name} in-place(revision {target}): {e}"),
                    )
                    .await;
                Err(e)
            }
        }
    }
}
