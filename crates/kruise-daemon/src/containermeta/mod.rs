//! The containermeta controller (OpenKruise `pkg/daemon/containermeta`): for each Kruise pod on
//! this node it reports what the container runtime runs in the pod annotation
//! `apps.kruise.io/runtime-containers-meta` — per container the runtime ID, restart count, the
//! kubelet's spec hash (`plainHash`) and, with gate `InPlaceUpdateEnvFromMetadata`, the hash
//! of the env values the process actually got from pod labels/annotations
//! (`extractedEnvFromMetadataHash`, read by executing `env` in the container). The in-place
//! update engine of the manager reads it to tell an update done when the image ID cannot show
//! it (a new tag of the same digest) and to wait for env-from-metadata changes.
//!
//! During an in-place update (`InPlaceUpdateReady=False`) a container whose env from metadata
//! no longer matches the pod's labels/annotations is stopped over CRI (after its preStop
//! handler, within the pod's grace period) so that the kubelet starts it again with the new
//! values (OpenKruise `container_meta_restarter.go`).
//!
//! Watches: the node's pods (one shared informer, field selector `spec.nodeName`). Reconcile:
//! runtime containers of the pod over CRI → [`plan`] → a strategic-merge patch of
//! `pods/status` when the report changed, restarts handed to the [`Restarter`].

pub mod plan;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::keys;
use kruise_engines::expectations::ResourceVersionExpectations;
use kruise_engines::inplace::current_env_from_metadata_hash;
use kruise_runtime::Context;
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::features::Feature;
use kruise_runtime::runner::{Triggers, run_controller};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::cri::{Cri, CriError};

/// Controller name (metrics, logs, Events' reporting component as in OpenKruise).
pub const NAME: &str = "kruise-daemon-containermeta";

/// Concurrent syncs (OpenKruise: 5 workers).
pub const WORKERS: u16 = 5;

/// How long a sync trusts that its own patch will reach the cache (OpenKruise
/// `maxExpectationWaitDuration`).
const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Timeout of the `env` command executed in a container.
const ENV_EXEC_TIMEOUT: Duration = Duration::from_secs(3);

/// First delay of a restart request, doubled per failure up to [`RESTART_MAX_DELAY`]
/// (OpenKruise's restarter queue: exponential 3 s .. 10 min, a request is always rate-limited).
const RESTART_BASE_DELAY: Duration = Duration::from_secs(3);
const RESTART_MAX_DELAY: Duration = Duration::from_secs(600);

/// Why a sync failed (retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A CRI call failed.
    #[error(transparent)]
    Cri(#[from] CriError),
    /// Patching the pod failed.
    #[error("patching pod {namespace}/{name}: {source}")]
    Patch {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The report could not be encoded.
    #[error("encoding runtime container meta: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The controller's state shared by its workers.
#[derive(Clone)]
pub struct ContainerMeta {
    cri: Cri,
    restarter: Restarter,
    expectations: ResourceVersionExpectations,
}

impl ContainerMeta {
    /// A controller reporting what `cri` runs; restarts go through `restarter`.
    pub fn new(cri: Cri, restarter: Restarter) -> Self {
        Self {
            cri,
            restarter,
            expectations: ResourceVersionExpectations::new(),
        }
    }

    /// Runs until `ctx.shutdown`, reading `pods` (the node's pods).
    ///
    /// # Errors
    /// The runner's cache-sync error.
    pub async fn run(
        self,
        ctx: Arc<Context>,
        pods: Informer<Pod>,
    ) -> Result<(), kruise_runtime::runner::Error> {
        let env_gate = ctx.gates.enabled(Feature::InPlaceUpdateEnvFromMetadata);
        let expectations = self.expectations.clone();
        let source = pods.clone();
        // OpenKruise's event handlers: pods present at start are synced only if they already
        // carry a report (no burst of first reports against the API server after a restart),
        // then every change that `needs_sync`; deleted pods drop their expectation.
        let objects = futures::stream::once(async move {
            let rx = source.subscribe();
            let existing: Vec<Arc<Pod>> = source
                .store()
                .state()
                .into_iter()
                .filter(|p| plan::meta_set(p).is_some() && plan::needs_sync(p, env_gate))
                .collect();
            futures::stream::iter(existing).chain(rx.filter_map(move |ev| {
                let out = match ev {
                    CacheEvent::Apply(p) => plan::needs_sync(&p, env_gate).then_some(p),
                    CacheEvent::Delete(p) => {
                        if let Some(uid) = p.metadata.uid.as_deref() {
                            expectations.delete(uid);
                        }
                        None
                    }
                };
                futures::future::ready(out)
            }))
        })
        .flatten();
        let triggers = Triggers::new(objects, pods.store().clone());
        let this = Arc::new(self);
        run_controller(
            ctx,
            NAME,
            WORKERS,
            triggers,
            vec![pods.synced()],
            move |pod, ctx| {
                let this = this.clone();
                async move { this.sync(pod, ctx).await }
            },
        )
        .await
    }

    async fn sync(&self, pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, Error> {
        let done = Action::await_change();
        let (Some(ns), Some(name), Some(uid)) = (
            pod.metadata.namespace.as_deref(),
            pod.metadata.name.as_deref(),
            pod.metadata.uid.as_deref(),
        ) else {
            return Ok(done);
        };
        let statuses = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() || statuses.is_empty() {
            return Ok(done);
        }
        let rv = pod.metadata.resource_version.as_deref().unwrap_or_default();
        self.expectations.observe(uid, rv);
        let (satisfied, waited) = self.expectations.is_satisfied(uid, rv);
        if !satisfied {
            if waited < EXPECTATION_TIMEOUT {
                return Ok(done);
            }
            tracing::info!(pod = %format!("{ns}/{name}"), ?waited, "own report not seen in the cache in time; syncing anyway");
            self.expectations.delete(uid);
        }
        // The runtime of the pod's containers must be ours (OpenKruise `getRuntimeForPod`).
        let Some(first) = statuses
            .iter()
            .filter_map(|c| c.container_id.as_deref())
            .find(|id| !id.is_empty())
        else {
            return Ok(done);
        };
        match first.split_once("://") {
            Some((rt, _)) if rt == self.cri.runtime_name() => {}
            _ => {
                tracing::warn!(pod = %format!("{ns}/{name}"), container_id = first, runtime = self.cri.runtime_name(),
                    "pod's containers are not run by this daemon's runtime; not reported");
                return Ok(done);
            }
        }

        let runtime = self.cri.pod_containers(uid).await?;
        let old = plan::meta_set(&pod);
        let env_gate = ctx.gates.enabled(Feature::InPlaceUpdateEnvFromMetadata);
        let mut env_hashes = HashMap::new();
        let mut retry = false;
        if env_gate {
            for probe in plan::env_probes(&pod, &runtime, self.cri.runtime_name(), old.as_ref()) {
                let Some(spec) = plan::container_spec(&pod, &probe.name) else {
                    continue;
                };
                let cmd = ["env".to_owned()];
                match self
                    .cri
                    .exec_sync(&probe.runtime_id, &cmd, ENV_EXEC_TIMEOUT)
                    .await
                {
                    Ok(out) => {
                        let env = plan::parse_env_output(&out.stdout);
                        let hash = current_env_from_metadata_hash(spec, |k| {
                            env.get(k).map(String::as_str)
                        });
                        env_hashes.insert(probe.full_id, hash);
                    }
                    Err(e) => {
                        tracing::warn!(pod = %format!("{ns}/{name}"), container = %probe.name, error = %e,
                            "reading the container's environment failed; retrying in 3s");
                        retry = true;
                    }
                }
            }
        }
        let plan = plan::plan(
            &pod,
            &runtime,
            self.cri.runtime_name(),
            old.as_ref(),
            &env_hashes,
            env_gate,
        );
        for id in &plan.restart {
            tracing::info!(pod = %format!("{ns}/{name}"), container_id = %id,
                "container's env from metadata differs from the pod's during an in-place update; restarting it");
            self.restarter.request(id);
        }
        if old.as_ref() != Some(&plan.meta) {
            let value = serde_json::to_string(&plan.meta)?;
            tracing::info!(pod = %format!("{ns}/{name}"), meta = %value, "reporting runtime containers");
            let patch =
                json!({"metadata": {"annotations": {keys::RUNTIME_CONTAINERS_META: value}}});
            let patched = Api::<Pod>::namespaced(ctx.client.clone(), ns)
                .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
                .map_err(|source| Error::Patch {
                    namespace: ns.to_owned(),
                    name: name.to_owned(),
                    source,
                })?;
            if let Some(rv) = patched.metadata.resource_version.as_deref() {
                self.expectations.expect(uid, rv);
            }
        }
        Ok(if retry {
            Action::requeue(Duration::from_secs(3))
        } else {
            done
        })
    }
}

/// Stops containers whose env from metadata went stale, one request per container ID at a
/// time, each after [`RESTART_BASE_DELAY`] doubled per earlier failure (OpenKruise's
/// restarter queue). Cheap to clone.
#[derive(Clone)]
pub struct Restarter {
    cri: Cri,
    recorder: kruise_runtime::events::EventRecorder,
    pending: Arc<Mutex<HashSet<String>>>,
}

impl Restarter {
    /// A restarter stopping containers through `cri`, recording a `Killing` Event with
    /// `recorder`.
    pub fn new(cri: Cri, recorder: kruise_runtime::events::EventRecorder) -> Self {
        Self {
            cri,
            recorder,
            pending: Arc::default(),
        }
    }

    /// Asks for container `full_id` (`<runtime>://<id>`) to be stopped; a request for a
    /// container already waiting is merged into it.
    pub fn request(&self, full_id: &str) {
        {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !pending.insert(full_id.to_owned()) {
                return;
            }
        }
        let this = self.clone();
        let full_id = full_id.to_owned();
        tokio::spawn(async move {
            let mut delay = RESTART_BASE_DELAY;
            loop {
                tokio::time::sleep(delay).await;
                match this.restart(&full_id).await {
                    Ok(()) => break,
                    Err(e) => {
                        tracing::warn!(container_id = %full_id, error = %e, retry_in = ?delay * 2, "stopping container failed");
                        delay = (delay * 2).min(RESTART_MAX_DELAY);
                    }
                }
            }
            this.pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&full_id);
        });
    }

    /// OpenKruise `restartController.sync` + `KillContainer` with the pod restored from the
    /// container's labels: skip a container that is gone or not running; else stop it as the
    /// kubelet does ([`crate::kuberuntime::kill_container`]: Event, preStop handler, then
    /// `StopContainer` with the grace period left, at least 2 s).
    async fn restart(&self, full_id: &str) -> Result<(), CriError> {
        let id = full_id
            .split_once("://")
            .map_or(full_id, |(_, id)| id)
            .to_owned();
        match self.cri.container(&id).await? {
            Some(c) if c.running => {}
            _ => {
                tracing::debug!(container_id = %full_id, "not running any more; nothing to stop");
                return Ok(());
            }
        }
        let spec = self.cri.stop_spec(&id).await?;
        let kill = crate::kuberuntime::KillSpec {
            pod_namespace: spec.pod_namespace,
            pod_name: spec.pod_name,
            pod_uid: spec.pod_uid,
            container_name: spec.container_name,
            grace_period_seconds: spec.grace_period_seconds,
            pre_stop: spec.pre_stop,
            ports: Vec::new(),
            message: format!("Stopping containerID {full_id} by container meta restarter"),
        };
        crate::kuberuntime::kill_container(&self.cri, &self.recorder, &id, &kill).await
    }
}
