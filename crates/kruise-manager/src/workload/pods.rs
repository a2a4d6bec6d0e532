//! Pod creation and deletion for a workload (OpenKruise `pkg/util/controller` pod control with
//! CloneSet's `createPods` slow start and `deletePods` preDelete handling).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim};
use kruise_api::apps::common::LifecycleHook;
use kruise_api::pod::CachedPod;
use kruise_engines::expectations::{ResourceVersionExpectations, ScaleAction, ScaleExpectations};
use kruise_engines::lifecycle::{self, LifecycleState};
use kruise_runtime::events::{self, EventRecorder};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::{Client, ResourceExt};

use super::{ControlError, is_status};

/// First batch size of slow-start creation (OpenKruise `initialBatchSize`).
pub const INITIAL_BATCH: usize = 1;

/// A pod to create, with the PVCs it mounts (created first unless they exist).
#[derive(Debug, Clone)]
pub struct NewPod {
    /// The pod.
    pub pod: k8s_openapi::api::core::v1::Pod,
    /// Its PersistentVolumeClaims.
    pub claims: Vec<PersistentVolumeClaim>,
}

/// What a deletion did with one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Deleted (or already gone), with its PVCs.
    Deleted,
    /// Held by the preDelete hook: moved to `PreparingDelete` now.
    MovedToPreparingDelete,
    /// Held by the preDelete hook and already `PreparingDelete`: nothing written.
    Held,
}

/// How a workload words the Events of its pod writes (OpenKruise's controllers differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventStyle<'a> {
    /// CloneSet: `succeed to create pod <pod>`, `failed to create pod <pod>: <err>`, ….
    CloneSet,
    /// Advanced StatefulSet `recordPodEvent`: `create Pod <pod> in StatefulSet <set>
    /// successful`, `create Pod <pod> in StatefulSet <set> failed error: <err>`, ….
    StatefulSet(&'a str),
    /// Upstream pod control (Advanced DaemonSet): `Created pod: <pod>`, `Error creating:
    /// <err>`, `Deleted pod: <pod>`, `Error deleting: <err>`.
    DaemonSet,
    /// BroadcastJob (OpenKruise `createPod`/`deleteJobPods`): as [`EventStyle::DaemonSet`] but
    /// `Delete pod: <pod>` for a deletion.
    BroadcastJob,
}

impl EventStyle<'_> {
    /// The Event note of `verb` (`create`/`delete`) on `pod`, successful when `error` is None.
    pub fn pod_note(&self, verb: &str, pod: &str, error: Option<&dyn std::fmt::Display>) -> String {
        match (self, error) {
            (EventStyle::CloneSet, None) => format!("succeed to {verb} pod {pod}"),
            (EventStyle::CloneSet, Some(e)) => format!("failed to {verb} pod {pod}: {e}"),
            (EventStyle::StatefulSet(set), None) => {
                format!("{verb} Pod {pod} in StatefulSet {set} successful")
            }
            (EventStyle::StatefulSet(set), Some(e)) => {
                format!("{verb} Pod {pod} in StatefulSet {set} failed error: {e}")
            }
            (EventStyle::BroadcastJob, None) if verb == "delete" => format!("Delete pod: {pod}"),
            (EventStyle::DaemonSet | EventStyle::BroadcastJob, None) => {
                let done = if verb == "create" {
                    "Created"
                } else {
                    "Deleted"
                };
                format!("{done} pod: {pod}")
            }
            (EventStyle::DaemonSet | EventStyle::BroadcastJob, Some(e)) => {
                let doing = if verb == "create" {
                    "creating"
                } else {
                    "deleting"
                };
                format!("Error {doing}: {e}")
            }
        }
    }
}

/// Pod writes of one workload: every create and delete is recorded in the scale expectations
/// under `key` before it is sent (and withdrawn when it fails), and reported as an Event on
/// `owner` with OpenKruise's reasons and messages.
#[derive(Clone, Copy)]
pub struct PodControl<'a> {
    /// API client.
    pub client: &'a Client,
    /// Event recorder.
    pub recorder: &'a EventRecorder,
    /// The workload, for Events.
    pub owner: &'a ObjectReference,
    /// The workload's namespace.
    pub namespace: &'a str,
    /// The workload's expectations key (`namespace/name`).
    pub key: &'a str,
    /// Scale expectations of the controller.
    pub scale: &'a ScaleExpectations,
    /// How the Events are worded.
    pub style: EventStyle<'a>,
}

impl PodControl<'_> {
    fn pods(&self) -> Api<CachedPod> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    fn pvcs(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    /// Creates `new` in slow-start batches of 1, 2, 4, … (OpenKruise `DoItSlowly`), stopping
    /// after the first batch with a failure; PVCs named in `existing_pvcs` are not created again.
    /// Pods never attempted are withdrawn from the expectations. Returns how many pods were
    /// created; a partial failure is logged and reported as success (the next sync retries).
    ///
    /// # Errors
    /// The first error when no pod at all was created.
    pub async fn create_slow_start(
        &self,
        new: Vec<NewPod>,
        existing_pvcs: &BTreeSet<String>,
    ) -> Result<usize, ControlError> {
        for p in &new {
            self.scale
                .expect(self.key, ScaleAction::Create, &p.pod.name_any());
        }
        let mut created = 0usize;
        let mut first_error: Option<ControlError> = None;
        let mut remaining: &[NewPod] = &new;
        let mut batch = INITIAL_BATCH;
        while !remaining.is_empty() && first_error.is_none() {
            let (now_batch, rest) = remaining.split_at(batch.min(remaining.len()));
            remaining = rest;
            let results = futures::future::join_all(
                now_batch.iter().map(|p| self.create_one(p, existing_pvcs)),
            )
            .await;
            for (p, r) in now_batch.iter().zip(results) {
                match r {
                    Ok(()) => created += 1,
                    Err(e) => {
                        self.scale
                            .observe(self.key, ScaleAction::Create, &p.pod.name_any());
                        first_error.get_or_insert(e);
                    }
                }
            }
            batch *= 2;
        }
        for p in remaining {
            self.scale
                .observe(self.key, ScaleAction::Create, &p.pod.name_any());
        }
        match first_error {
            Some(e) if created == 0 => Err(e),
            Some(e) => {
                tracing::info!(workload = self.key, created, error = %e, "created some pods; will retry the rest");
                Ok(created)
            }
            None => Ok(created),
        }
    }

    async fn create_one(
        &self,
        new: &NewPod,
        existing_pvcs: &BTreeSet<String>,
    ) -> Result<(), ControlError> {
        let pvcs = self.pvcs();
        for claim in &new.claims {
            let name = claim.name_any();
            if existing_pvcs.contains(&name) {
                continue;
            }
            self.scale.expect(self.key, ScaleAction::Create, &name);
            match pvcs.create(&PostParams::default(), claim).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 409) => {
                    // Created by an earlier attempt whose event has not arrived yet.
                    self.scale.observe(self.key, ScaleAction::Create, &name);
                }
                Err(e) => {
                    self.scale.observe(self.key, ScaleAction::Create, &name);
                    self.warn(
                        events::FAILED_CREATE,
                        format!("failed to create pvc {name}: {e}"),
                    )
                    .await;
                    return Err(e.into());
                }
            }
        }
        // The pod's expectation was recorded by the caller (for the whole batch).
        self.create_pod_expected(&new.pod).await.map(|_| ())
    }

    /// Creates one pod (recording the expectation first and withdrawing it on failure) and
    /// reports the Event. A pod that already exists (409) is an error without Event, as
    /// OpenKruise's stateful pod control has it. Returns the created pod.
    ///
    /// # Errors
    /// The API error.
    pub async fn create_pod(
        &self,
        pod: &k8s_openapi::api::core::v1::Pod,
    ) -> Result<CachedPod, ControlError> {
        self.scale
            .expect(self.key, ScaleAction::Create, &pod.name_any());
        self.create_pod_expected(pod).await
    }

    async fn create_pod_expected(
        &self,
        pod: &k8s_openapi::api::core::v1::Pod,
    ) -> Result<CachedPod, ControlError> {
        let name = pod.name_any();
        let api: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(self.client.clone(), self.namespace);
        match api.create(&PostParams::default(), pod).await {
            Ok(created) => {
                self.recorder
                    .normal(
                        self.owner,
                        events::SUCCESSFUL_CREATE,
                        &self.style.pod_note("create", &name, None),
                    )
                    .await;
                Ok(CachedPod::from(created))
            }
            Err(e) => {
                self.scale.observe(self.key, ScaleAction::Create, &name);
                if !is_status(&e, 409) || self.style == EventStyle::CloneSet {
                    self.warn(
                        events::FAILED_CREATE,
                        self.style.pod_note("create", &name, Some(&e)),
                    )
                    .await;
                }
                Err(e.into())
            }
        }
    }

    /// Deletes `pod` (UID precondition: never a replacement with the same name) and then the
    /// PVCs in `claims`, unless `pre_delete` holds it: a pod carrying the hook's labels or
    /// finalizers is moved to `PreparingDelete` instead (not-ready key first when the hook has
    /// `markPodNotReady`), and deleted by a later sync once the hook lets go. A pod or PVC
    /// already gone counts as deleted.
    ///
    /// # Errors
    /// API errors (after a Warning Event `FailedDelete`).
    pub async fn delete_or_hold(
        &self,
        pod: &CachedPod,
        claims: impl IntoIterator<Item = &PersistentVolumeClaim>,
        pre_delete: Option<&LifecycleHook>,
        rvs: &ResourceVersionExpectations,
    ) -> Result<Deletion, ControlError> {
        if let Some(hook) = pre_delete
            && lifecycle::is_hooked(hook, pod)
        {
            if lifecycle::pod_state(pod) == Some(LifecycleState::PreparingDelete) {
                return Ok(Deletion::Held);
            }
            let mark = hook.mark_pod_not_ready.unwrap_or(false);
            super::lifecycle::set_state(
                self.client,
                rvs,
                pod,
                LifecycleState::PreparingDelete,
                mark,
            )
            .await?;
            return Ok(Deletion::MovedToPreparingDelete);
        }
        let name = pod.name_any();
        self.scale.expect(self.key, ScaleAction::Delete, &name);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.pods().delete(&name, &params).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {
                // Already gone: its deletion event may have passed before we expected it.
                self.scale.observe(self.key, ScaleAction::Delete, &name);
            }
            Err(e) => {
                self.scale.observe(self.key, ScaleAction::Delete, &name);
                self.warn(
                    events::FAILED_DELETE,
                    self.style.pod_note("delete", &name, Some(&e)),
                )
                .await;
                if matches!(self.style, EventStyle::StatefulSet(_)) {
                    self.warn(
                        events::FAILED_DELETE,
                        format!("failed to delete pod {name}: {e}"),
                    )
                    .await;
                }
                return Err(e.into());
            }
        }
        self.recorder
            .normal(
                self.owner,
                events::SUCCESSFUL_DELETE,
                &self.style.pod_note("delete", &name, None),
            )
            .await;
        let pvcs = self.pvcs();
        for claim in claims {
            let pvc_name = claim.name_any();
            self.scale.expect(self.key, ScaleAction::Delete, &pvc_name);
            match pvcs.delete(&pvc_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {
                    self.scale.observe(self.key, ScaleAction::Delete, &pvc_name);
                }
                Err(e) => {
                    self.scale.observe(self.key, ScaleAction::Delete, &pvc_name);
                    self.warn(
                        events::FAILED_DELETE,
                        format!("failed to delete pvc {pvc_name}: {e}"),
                    )
                    .await;
                    return Err(e.into());
                }
            }
        }
        Ok(Deletion::Deleted)
    }

    async fn warn(&self, reason: &str, note: String) {
        self.recorder.warning(self.owner, reason, &note).await;
    }
}
