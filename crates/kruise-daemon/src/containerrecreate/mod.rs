//! kruise-daemon's ContainerRecreateRequest controller (OpenKruise v1.9.0
//! `pkg/daemon/containerrecreate`): stops the requested containers of a pod on this node so the
//! kubelet recreates them; the manager's controller
//! (`kruise_manager::controllers::containerrecreaterequest`) ends requests that time out and
//! feeds the pod's container statuses back.
//!
//! It watches the active requests of its node only (labels `crr.apps.kruise.io/node-name=<node>`
//! and `crr.apps.kruise.io/active=true`, so a finished request leaves the cache) and works one
//! pod at a time: of the unfinished requests for a pod (ordered Recreating, Pending, new; oldest
//! first) the first is picked and the others are marked `Pending`. The picked request is set
//! `Recreating`; with `unreadyGracePeriodSeconds` it waits until the manager has made the pod
//! not ready and the grace period has passed; then each pass compares the requested containers
//! with the runtime's ([`plan::current_states`]), writes their states, stops the next pending
//! container as the kubelet would ([`crate::kuberuntime::kill_container`]: `preStop` within the
//! request's `terminationGracePeriodSeconds`, default 30), one per pass, waiting for each with
//! `orderedRecreate`, and completes the request when every container succeeded or one failed
//! (`failurePolicy: Fail`). A write is not acted on again before the cache shows it (resource
//! version expectations, at most 10 s, as OpenKruise's).

pub mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::LifecycleHandler;
use kruise_api::apps::v1alpha1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState,
    container_recreate_request_phase as phase,
};
use kruise_api::keys;
use kruise_engines::expectations::ResourceVersionExpectations;
use kruise_runtime::Context;
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::events::EventRecorder;
use kruise_runtime::runner::{Triggers, run_controller};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use self::plan::{Decision, RuntimeView, UnreadyGate};
use crate::cri::{Cri, CriError};
use crate::kuberuntime::{KillSpec, kill_container};

/// Controller name (metrics, logs) and the Events' component (OpenKruise's `kruise-daemon-crr`).
pub const NAME: &str = "kruise-daemon-crr";

/// Concurrent passes (OpenKruise's `workers`, 32).
pub const WORKERS: u16 = 32;

/// How long the daemon waits for the cache to show its own write (OpenKruise's
/// `maxExpectationWaitDuration`).
const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(10);

/// The grace period of a request that sets none and whose pod had none (the kubelet's default).
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// Why a pass failed (retried with the runner's backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The runtime failed.
    #[error(transparent)]
    Cri(#[from] CriError),
}

/// The label selector of the requests this node's daemon works on.
pub fn selector(node: &str) -> String {
    format!("{}={node},{}=true", keys::CRR_NODE_NAME, keys::CRR_ACTIVE)
}

/// The controller: the API client, the runtime, its Event recorder, expectations of its own writes, and one
/// lock per pod (`<namespace>/<podName>`, OpenKruise's work-queue key).
pub struct ContainerRecreate {
    client: kube::Client,
    cri: Cri,
    recorder: EventRecorder,
    expectations: ResourceVersionExpectations,
    pods: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl ContainerRecreate {
    /// A controller writing through `client`, stopping containers through `cri`, recording
    /// Events with `recorder`.
    pub fn new(client: kube::Client, cri: Cri, recorder: EventRecorder) -> Self {
        Self {
            client,
            cri,
            recorder,
            expectations: ResourceVersionExpectations::new(),
            pods: Mutex::default(),
        }
    }

    /// Runs until `ctx.shutdown`, reading `requests` (the node's active requests,
    /// [`selector`]).
    ///
    /// # Errors
    /// The runner's cache-sync error.
    pub async fn run(
        self,
        ctx: Arc<Context>,
        requests: Informer<ContainerRecreateRequest>,
    ) -> Result<(), kruise_runtime::runner::Error> {
        let this = Arc::new(self);
        let source = requests.clone();
        let forget = this.clone();
        let objects = futures::stream::once(async move {
            let rx = source.subscribe();
            let existing = source.store().state();
            futures::stream::iter(existing).chain(rx.filter_map(move |ev| {
                let out = match ev {
                    CacheEvent::Apply(c) => (!plan::finished(&c)).then_some(c),
                    CacheEvent::Delete(c) => {
                        if let Some(uid) = c.metadata.uid.as_deref() {
                            forget.expectations.delete(uid);
                        }
                        None
                    }
                };
                futures::future::ready(out)
            }))
        })
        .flatten();
        let triggers = Triggers::new(objects, requests.store().clone());
        let informer = requests.clone();
        run_controller(
            ctx,
            NAME,
            WORKERS,
            triggers,
            vec![requests.synced()],
            move |crr, _ctx| {
                let this = this.clone();
                let informer = informer.clone();
                async move { this.sync_pod_of(&crr, &informer).await }
            },
        )
        .await
    }

    fn pod_lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut pods = self
            .pods
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pods.retain(|_, l| Arc::strong_count(l) > 1);
        pods.entry(key.to_owned()).or_default().clone()
    }

    /// One pass for the pod `crr` names (OpenKruise's `sync` of key `<namespace>/<podName>`).
    async fn sync_pod_of(
        &self,
        crr: &ContainerRecreateRequest,
        requests: &Informer<ContainerRecreateRequest>,
    ) -> Result<Action, Error> {
        let namespace = crr.namespace().unwrap_or_default();
        let key = format!("{namespace}/{}", crr.spec.pod_name);
        let lock = self.pod_lock(&key);
        let _held = lock.lock().await;
        let mut siblings: Vec<_> = requests
            .in_namespace(&namespace)
            .into_iter()
            .filter(|c| c.spec.pod_name == crr.spec.pod_name)
            .collect();
        plan::sort_requests(&mut siblings);
        let api: Api<ContainerRecreateRequest> = Api::namespaced(self.client.clone(), &namespace);
        let Some(picked) = self.pick(&api, &siblings).await? else {
            return Ok(Action::await_change());
        };
        tracing::debug!(request = %format!("{namespace}/{}", picked.name_any()), "syncing");
        if picked.status.as_ref().map_or("", |s| s.phase.as_str()) != phase::RECREATING {
            self.set_phase(&api, &picked, phase::RECREATING).await?;
            return Ok(Action::await_change());
        }
        match plan::unready_gate(&picked, jiff::Timestamp::now()) {
            UnreadyGate::Open => {}
            UnreadyGate::WaitForManager => {
                tracing::info!(request = %key, "waiting for the pod to be made not ready");
                return Ok(Action::await_change());
            }
            UnreadyGate::Wait(left) => {
                tracing::info!(request = %key, ?left, "waiting out the unready grace period");
                return Ok(Action::requeue(left));
            }
            UnreadyGate::Invalid(msg) => {
                self.complete(&api, &picked, &msg).await?;
                return Ok(Action::await_change());
            }
        }
        self.manage(&api, &picked).await
    }

    /// The request to work on (`pickRecreateRequest`): the first unfinished one whose own
    /// writes the cache shows; the other new ones are set `Pending`.
    async fn pick(
        &self,
        api: &Api<ContainerRecreateRequest>,
        sorted: &[Arc<ContainerRecreateRequest>],
    ) -> Result<Option<Arc<ContainerRecreateRequest>>, Error> {
        let mut picked = None;
        for crr in sorted {
            let uid = crr.metadata.uid.clone().unwrap_or_default();
            if plan::finished(crr) {
                self.expectations.delete(&uid);
                continue;
            }
            let rv = crr.resource_version().unwrap_or_default();
            self.expectations.observe(&uid, &rv);
            let (satisfied, waited) = self.expectations.is_satisfied(&uid, &rv);
            if !satisfied {
                if waited < EXPECTATION_TIMEOUT {
                    break;
                }
                tracing::info!(request = %crr.name_any(), ?waited, "own write not seen in the cache in time; going on");
                self.expectations.delete(&uid);
            }
            if picked.is_none() {
                picked = Some(crr.clone());
            } else if crr.status.as_ref().is_none_or(|s| s.phase.is_empty()) {
                self.set_phase(api, crr, phase::PENDING).await?;
            }
        }
        Ok(picked)
    }

    /// Works on a `Recreating` request past its unready gate (`manage`).
    async fn manage(
        &self,
        api: &Api<ContainerRecreateRequest>,
        crr: &ContainerRecreateRequest,
    ) -> Result<Action, Error> {
        match plan::runtime_of(crr) {
            Ok(rt) if rt == self.cri.runtime_name() => {}
            Ok(rt) => {
                let msg = format!(
                    "failed to find runtime service: not found runtime service for {rt} in daemon"
                );
                self.complete(api, crr, &msg).await?;
                return Ok(Action::await_change());
            }
            Err(e) => {
                self.complete(api, crr, &format!("failed to find runtime service: {e}"))
                    .await?;
                return Ok(Action::await_change());
            }
        }
        let pod_uid = crr
            .labels()
            .get(keys::CRR_POD_UID)
            .cloned()
            .unwrap_or_default();
        let runtime = self.runtime_view(&pod_uid).await?;
        let states = plan::current_states(crr, &runtime, jiff::Timestamp::now());
        match plan::decide(crr, &runtime, states) {
            Decision::Patch(states) => self.patch_states(api, crr, &states).await?,
            Decision::Complete => self.complete(api, crr, "").await?,
            Decision::Kill {
                index,
                full_id,
                states,
            } => {
                let id = full_id
                    .split_once("://")
                    .map_or(full_id.as_str(), |(_, id)| id);
                let spec = kill_spec(crr, index);
                let error = kill_container(&self.cri, &self.recorder, id, &spec)
                    .await
                    .err()
                    .map(|e| e.to_string());
                if let Some(e) = &error {
                    tracing::warn!(request = %crr.name_any(), container = %spec.container_name, error = %e, "failed to kill container");
                }
                let states = plan::after_kill(states, index, error);
                self.patch_states(api, crr, &states).await?;
            }
            Decision::Wait(after) => {
                return Ok(after.map_or_else(Action::await_change, Action::requeue));
            }
        }
        Ok(Action::await_change())
    }

    /// The pod's runtime containers, newest per name, with their start times.
    async fn runtime_view(&self, pod_uid: &str) -> Result<Vec<RuntimeView>, Error> {
        let mut out: Vec<RuntimeView> = Vec::new();
        for c in self.cri.pod_containers(pod_uid).await? {
            if out.iter().any(|v| v.name == c.name) {
                continue;
            }
            let started = self.cri.started_at(&c.id).await.unwrap_or(0);
            out.push(RuntimeView {
                name: c.name.clone(),
                full_id: self.cri.full_id(&c.id),
                exited: c.exited,
                restart_count: c.restart_count,
                started_at: (started > 0)
                    .then(|| jiff::Timestamp::from_nanosecond(i128::from(started)).ok())
                    .flatten(),
            });
        }
        Ok(out)
    }

    async fn patch_states(
        &self,
        api: &Api<ContainerRecreateRequest>,
        crr: &ContainerRecreateRequest,
        states: &[ContainerRecreateRequestContainerRecreateState],
    ) -> Result<(), Error> {
        let body = json!({"status": {"containerRecreateStates": states}});
        self.write_status(api, crr, body).await
    }

    async fn set_phase(
        &self,
        api: &Api<ContainerRecreateRequest>,
        crr: &ContainerRecreateRequest,
        to: &str,
    ) -> Result<(), Error> {
        let body = json!({"metadata": {"resourceVersion": crr.resource_version()}, "status": {"phase": to}});
        self.write_status(api, crr, body).await
    }

    async fn complete(
        &self,
        api: &Api<ContainerRecreateRequest>,
        crr: &ContainerRecreateRequest,
        message: &str,
    ) -> Result<(), Error> {
        let body = json!({"metadata": {"resourceVersion": crr.resource_version()},
            "status": {"phase": phase::COMPLETED, "completionTime": kruise_api::time::now(),
                "message": (!message.is_empty()).then_some(message)}});
        self.write_status(api, crr, body).await
    }

    /// A merge patch of the status; the written resourceVersion is expected in the cache
    /// before the request is acted on again.
    async fn write_status(
        &self,
        api: &Api<ContainerRecreateRequest>,
        crr: &ContainerRecreateRequest,
        body: serde_json::Value,
    ) -> Result<(), Error> {
        let written = api
            .patch_status(
                &crr.name_any(),
                &PatchParams::default(),
                &Patch::Merge(body),
            )
            .await?;
        if written.resource_version() != crr.resource_version() {
            self.expectations.expect_object(&written.metadata);
        }
        Ok(())
    }
}

/// The pod as the request restores it (`convertCRRToPod`): its grace period (default 30 s) and
/// the container's `preStop` and `ports`, for stopping container `index`.
fn kill_spec(crr: &ContainerRecreateRequest, index: usize) -> KillSpec {
    let c = &crr.spec.containers[index];
    KillSpec {
        pod_namespace: crr.namespace().unwrap_or_default(),
        pod_name: crr.spec.pod_name.clone(),
        pod_uid: crr
            .labels()
            .get(keys::CRR_POD_UID)
            .cloned()
            .unwrap_or_default(),
        container_name: c.name.clone(),
        grace_period_seconds: Some(
            crr.spec
                .strategy
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .unwrap_or(DEFAULT_GRACE_SECONDS),
        ),
        pre_stop: c.pre_stop.as_ref().map(|h| LifecycleHandler {
            exec: h.exec.clone(),
            http_get: h.http_get.clone(),
            tcp_socket: h.tcp_socket.clone(),
            ..Default::default()
        }),
        ports: c.ports.clone().unwrap_or_default(),
        message: format!(
            "Stopping container {} by ContainerRecreateRequest {}",
            c.name,
            crr.name_any()
        ),
    }
}
