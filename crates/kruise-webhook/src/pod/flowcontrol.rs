//! Pod-deletion flow control at admission (kruise-rs's `PodDeletionFlowControl`,
//! `docs/pod-deletion-flow-control.md`): `/validate-pod` judges a pod DELETE (`vpod.kb.io`) or
//! an eviction (`vpodeviction.kb.io`) against every flow-control object that counts it
//! ([`kruise_engines::flowcontrol::selects`]) before the PodUnavailableBudget check, and records
//! it after the budget admitted it ([`Pending::record`]): the object's `status.admitted` gains
//! the pod in a status write bound to its resourceVersion, so two admissions (in this replica or
//! another) never both take the last room of a window — a conflict is re-judged on a fresh read.
//!
//! A refusal names the object, the window, the count and when the next deletion is allowed
//! ([`Pending::code`]: 429 Too Many Requests for an eviction, so `kubectl drain` waits and
//! retries as it does for a PodDisruptionBudget; 403 for a DELETE, as a budget refuses one —
//! a 429 would make kube-rs clients retry the DELETE for many minutes on their own), and
//! counts in
//! `kruise_pod_deletion_flow_control_refusals_total{name,username}`. A dry run is judged but not
//! recorded. Without any flow-control object nothing is read or written.

use std::sync::{Arc, LazyLock};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::rspolicy::v1alpha1::{PodDeletionFlowControl, PodDeletionFlowControlStatus};
use kruise_engines::flowcontrol as engine;
use kube::api::{Api, PostParams};
use kube::core::admission::Operation as AdmissionOp;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::Request;
use crate::lookup::Lookup;
use crate::support::decode;

/// Status code of an eviction refused by flow control (Too Many Requests).
pub const CODE_TOO_MANY_REQUESTS: u16 = 429;

/// How many times a status write that conflicts is tried.
const CONFLICT_ATTEMPTS: usize = 8;

/// Labels of [`REMAINING`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct WindowLabels {
    /// The object's name.
    pub name: String,
    /// The limit's window, as written (`1m`).
    pub window: String,
}

/// Labels of [`REFUSALS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct RefusalLabels {
    /// The object's name.
    pub name: String,
    /// Who asked (the request's user).
    pub username: String,
}

/// `kruise_pod_deletion_flow_control_remaining{name,window}`: deletions left in each window at
/// the last status write (by the webhook or the controller).
pub static REMAINING: LazyLock<Family<WindowLabels, Gauge>> = LazyLock::new(Default::default);

/// `kruise_pod_deletion_flow_control_refusals_total{name,username}`: deletions refused.
pub static REFUSALS: LazyLock<Family<RefusalLabels, Counter>> = LazyLock::new(Default::default);

/// Sets [`REMAINING`] from a status.
pub fn export_remaining(name: &str, status: &PodDeletionFlowControlStatus) {
    for w in &status.windows {
        REMAINING
            .get_or_create(&WindowLabels {
                name: name.to_string(),
                window: w.window.clone(),
            })
            .set(i64::from(w.remaining));
    }
}

/// A deletion some flow-control objects count, judged and waiting for the budget's verdict.
#[derive(Debug)]
pub struct Pending {
    objects: Vec<Arc<PodDeletionFlowControl>>,
    eviction: bool,
    pod: String,
    uid: Option<String>,
    username: String,
}

/// The flow-control objects that count this request's deletion (sorted by name), with the
/// pod; `Ok(None)` when it is not a pod DELETE or eviction, or nothing counts it.
///
/// # Errors
/// A request that cannot be decoded, or a failed lookup, as text.
pub async fn pending(req: &Request, lookup: &Lookup) -> Result<Option<Pending>, String> {
    let sub = req.sub_resource.as_deref().unwrap_or("");
    let deletion = matches!(
        (&req.operation, sub),
        (AdmissionOp::Delete, "") | (AdmissionOp::Create, "eviction")
    );
    if !deletion {
        return Ok(None);
    }
    let mut objects = lookup.flow_controls().await?;
    if objects.is_empty() {
        return Ok(None);
    }
    let ns = req.namespace.as_deref().unwrap_or("");
    let pod: Pod = if req.operation == AdmissionOp::Delete {
        let Some(old) = req.old_object.as_ref() else {
            return Ok(None);
        };
        decode(old)?
    } else {
        let Some(cached) = lookup.pod(ns, &req.name).await? else {
            // The eviction is answered 404 by the API server.
            return Ok(None);
        };
        serde_json::to_value(cached.as_ref())
            .and_then(serde_json::from_value)
            .map_err(|e| e.to_string())?
    };
    let namespace = lookup.namespace(ns).await?;
    let username = req.user_info.username.clone().unwrap_or_default();
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let deletion = engine::Deletion {
        labels: pod.metadata.labels.as_ref(),
        controller_api_version: controller.map(|o| o.api_version.as_str()),
        namespace_labels: namespace.as_ref().and_then(|n| n.metadata.labels.as_ref()),
        username: &username,
    };
    objects.retain(|fc| engine::selects(fc, &deletion));
    if objects.is_empty() {
        return Ok(None);
    }
    objects.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(Some(Pending {
        objects,
        eviction: req.operation == AdmissionOp::Create,
        pod: format!("{ns}/{}", pod.metadata.name.as_deref().unwrap_or(&req.name)),
        uid: pod.metadata.uid.clone(),
        username,
    }))
}

impl Pending {
    /// The status code of a refusal: 429 for an eviction, 403 for a DELETE (module docs).
    pub fn code(&self) -> u16 {
        if self.eviction {
            CODE_TOO_MANY_REQUESTS
        } else {
            crate::support::CODE_FORBIDDEN
        }
    }

    /// The first refusal of the objects as last seen (nothing written): `Some(reason)` refuses.
    pub fn judge(&self) -> Option<String> {
        let now = jiff::Timestamp::now();
        for fc in &self.objects {
            let current = WRITTEN.newer(fc.clone());
            let admitted = admitted_of(&current);
            if engine::is_recorded(admitted, &self.pod, self.uid.as_deref()) {
                continue;
            }
            if let Err(reason) = engine::judge(&current, admitted, now) {
                self.refused(&current);
                return Some(reason);
            }
        }
        None
    }

    /// Records the admitted deletion in every object (in name order), each under a per-object
    /// lock, re-judged on the newest copy: `Some(reason)` when one of them has no room left after
    /// all (another admission took it meanwhile). A dry run records nothing. Without a client
    /// (tests, corpus replay) nothing is written.
    pub async fn record(&self, client: Option<&kube::Client>, dry_run: bool) -> Option<String> {
        if dry_run {
            return None;
        }
        let client = client?;
        for fc in &self.objects {
            if let Some(reason) = self.record_one(client, fc).await {
                return Some(reason);
            }
        }
        None
    }

    async fn record_one(
        &self,
        client: &kube::Client,
        fc: &Arc<PodDeletionFlowControl>,
    ) -> Option<String> {
        let name = fc.metadata.name.clone().unwrap_or_default();
        let lock = WRITTEN.lock(fc);
        let _held = lock.lock().await;
        let api: Api<PodDeletionFlowControl> = Api::all(client.clone());
        let mut current = WRITTEN.newer(fc.clone());
        for attempt in 1..=CONFLICT_ATTEMPTS {
            let now = jiff::Timestamp::now();
            let admitted = admitted_of(&current);
            if engine::is_recorded(admitted, &self.pod, self.uid.as_deref()) {
                return None;
            }
            if let Err(reason) = engine::judge(&current, admitted, now) {
                self.refused(&current);
                return Some(reason);
            }
            let limits = engine::limits(&current).ok()?;
            let mut next = (*current).clone();
            let status = next.status.get_or_insert_with(Default::default);
            status.admitted =
                engine::record(&limits, admitted, &self.pod, self.uid.as_deref(), now);
            status.windows = engine::windows(&limits, &status.admitted, now);
            status.summary = Some(engine::summary(&limits, &status.windows));
            match api
                .replace_status(&name, &PostParams::default(), &next)
                .await
            {
                Ok(written) => {
                    if let Some(s) = &written.status {
                        export_remaining(&name, s);
                    }
                    WRITTEN.remember(written);
                    return None;
                }
                Err(kube::Error::Api(e)) if e.code == 404 => return None,
                Err(kube::Error::Api(e)) if e.code == 409 && attempt < CONFLICT_ATTEMPTS => {
                    match api.get_opt(&name).await {
                        Ok(Some(fresh)) => current = Arc::new(fresh),
                        Ok(None) => return None,
                        Err(e) => return Some(e.to_string()),
                    }
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    return Some(format!(
                        "pod deletion flow control {name}: couldn't record the deletion due to \
                         conflicts; retry"
                    ));
                }
                Err(e) => return Some(e.to_string()),
            }
        }
        None
    }

    fn refused(&self, fc: &PodDeletionFlowControl) {
        REFUSALS
            .get_or_create(&RefusalLabels {
                name: fc.metadata.name.clone().unwrap_or_default(),
                username: self.username.clone(),
            })
            .inc();
    }
}

fn admitted_of(fc: &PodDeletionFlowControl) -> &[kruise_api::rspolicy::v1alpha1::AdmittedDeletion] {
    fc.status
        .as_ref()
        .map(|s| s.admitted.as_slice())
        .unwrap_or(&[])
}

/// This process's last writes and per-object locks ([`super::writelog`]).
static WRITTEN: LazyLock<super::writelog::WriteLog<PodDeletionFlowControl>> =
    LazyLock::new(Default::default);
