//! Workload controls shared by every workload controller — the I/O halves of OpenKruise's
//! `pkg/util` (history, pod control with slow start, lifecycle control, in-place update
//! control). The decisions come from `kruise-engines`; these functions perform them against the
//! API server, record expectations around every write and report Events on the owner. A
//! controller calls them with its own objects; nothing here knows a workload kind.
//!
//! - [`claim`]: adopt matching orphans and release owned objects that stopped matching.
//! - [`finder`]: the workload behind a pod or a reference (replicas, selector, its pods),
//!   OpenKruise's `controllerfinder`.
//! - [`history`]: find or create the revision of the current template (collision counts, an
//!   older equal revision moved to the head), delete revisions beyond the history limit.
//! - [`pods`]: create pods (and their PVCs) in slow-start batches; delete pods (and their PVCs)
//!   with a UID precondition, or move them to `PreparingDelete` while a preDelete hook holds them.
//! - [`lifecycle`]: lifecycle state writes (`KruisePodReady` not-ready keys first, then the state
//!   label and `lifecycle.apps.kruise.io/timestamp`).
//! - [`inplace`]: in-place update writes (start an update, refresh grace periods and completion).
//! - [`update_pod`]: a pod update built on a cached pod, as a JSON patch bound to its
//!   resourceVersion; [`StatusWrites`]: count-only status changes held to one write a second.
//! - [`forget_deleted`]: what a cache event does to resourceVersion expectations.

pub mod claim;
pub mod finder;
pub mod history;
pub mod inplace;
pub mod lifecycle;
pub mod pods;

use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};

#[cfg(test)]
mod tests;

/// What one cache event does to a workload's resourceVersion expectations: a deleted object's
/// expectation is forgotten; an added or changed object leaves them as they are.
///
/// An expectation is satisfied only by the check a sync makes on the object it read
/// (`is_satisfied_object` on each pod of its snapshot). OpenKruise's event handlers also
/// `Observe` every updated object, which deletes an expectation the moment the cache reaches
/// the written version — and that races with a sync that took its snapshot just before: the
/// snapshot still holds the pod as it was before the write, the expectation is already gone,
/// so the sync decides on the stale pod and repeats its write (measured in a 1,000-pod
/// unthrottled in-place rollout: 6–16 repeated `pods/status` patches, each computed on the
/// same resourceVersion as the write 2–20 ms before it). Leaving the expectation to the sync's
/// own check closes that window: a snapshot older than the write stays unsatisfied (the sync
/// requeues), the first snapshot at or past it clears the entry.
pub fn forget_deleted<K: kube::Resource>(
    rvs: &kruise_engines::expectations::ResourceVersionExpectations,
    event: &kruise_runtime::cache::CacheEvent<K>,
) {
    if let kruise_runtime::cache::CacheEvent::Delete(o) = event {
        rvs.delete_object(o.meta());
    }
}

/// Errors of the workload controls.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// An API call failed (conflicts are retried inside the control where that is safe).
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A revision could not be built or read.
    #[error("revision: {0}")]
    Revision(#[from] kruise_engines::revision::RevisionError),
    /// An engine refused the object (e.g. a malformed in-place update state annotation).
    #[error("{0}")]
    Invalid(String),
}

/// Upper bound of one pass of a workload controller. The runner never runs two passes of one
/// object at once, so a pass that hung would block its object for good: it is cut off and
/// retried with backoff.
pub const PASS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs one pass of `key` within [`PASS_TIMEOUT`]; when cut off, the error `timed_out` builds
/// from the message `sync of <key> did not finish within 300s`.
pub async fn bounded_pass<T, E>(
    key: &str,
    pass: impl std::future::Future<Output = Result<T, E>>,
    timed_out: impl FnOnce(String) -> E,
) -> Result<T, E> {
    match tokio::time::timeout(PASS_TIMEOUT, pass).await {
        Ok(r) => r,
        Err(_) => Err(timed_out(format!(
            "sync of {key} did not finish within {PASS_TIMEOUT:?}"
        ))),
    }
}

/// OpenKruise's `DoItSlowly`: runs `f` on every item in batches of `initial`, then twice as
/// many each time (the items of a batch concurrently), and stops after the first batch in
/// which a call failed. Returns how many calls succeeded, or the first error (items after the
/// failing batch are never attempted). [`pods::PodControl::create_slow_start`] is the same
/// flow for pod creation with expectations and PVCs; this one serves any other write.
///
/// # Errors
/// The first error of the failing batch.
pub async fn do_slowly<T, E, F, Fut>(items: Vec<T>, initial: usize, f: F) -> Result<usize, E>
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    let mut done = 0usize;
    let mut batch = initial.max(1);
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let now: Vec<T> = items.by_ref().take(batch).collect();
        let results = futures::future::join_all(now.into_iter().map(&f)).await;
        let mut first_error = None;
        for r in results {
            match r {
                Ok(()) => done += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        batch *= 2;
    }
    Ok(done)
}

/// The scale-expectations gate in front of a pass (OpenKruise's `SatisfiedExpectations`):
/// `Some(requeue)` while the cache has not yet shown every pod this controller created or
/// deleted for `key` (requeue after at most 30 s); expectations unsatisfied for longer than
/// `timeout` (`--expectation-timeout`) are logged, dropped, and the pass acts on the cache.
pub fn scale_gate(
    scale: &kruise_engines::expectations::ScaleExpectations,
    key: &str,
    timeout: std::time::Duration,
) -> Option<kube::runtime::controller::Action> {
    use kruise_engines::expectations::ExpectationCheck;
    match scale.check(key, timeout) {
        ExpectationCheck::Satisfied => None,
        ExpectationCheck::Waiting { requeue_after } => {
            tracing::debug!(key, "scale expectations not satisfied yet");
            Some(kube::runtime::controller::Action::requeue(
                requeue_after.min(std::time::Duration::from_secs(30)),
            ))
        }
        ExpectationCheck::TimedOut { unsatisfied_for } => {
            tracing::warn!(
                key,
                ?unsatisfied_for,
                "scale expectations timed out; acting on the cache"
            );
            scale.delete(key);
            None
        }
    }
}

/// The JSON patch (RFC 6902) that turns `base` into `updated`: the differences of their
/// `metadata` (without `managedFields` and `resourceVersion`) and `spec`, preceded by
/// `replace /metadata/resourceVersion` with `base`'s resourceVersion when it has one. The API
/// server rejects a patch whose result carries a resourceVersion other than the live object's
/// with 409 Conflict, so the patch is the optimistic update of a PUT of `updated` — applied only
/// while the server still holds `base` — that sends neither the fields the shared cache drops
/// from pods (status beyond its keep-list, volumes other than claims) nor anything unchanged.
/// `status` is never part of it (a pod's status changes only through `pods/status`).
///
/// Arrays the cache trims (`spec.volumes`) must not be changed on a cached base: their indices
/// differ from the server's. A change of volumes starts from a pod read from the API server.
///
/// # Errors
/// Serialization errors of the pods (not expected for API types).
pub fn pod_update_patch(
    base: &CachedPod,
    updated: &CachedPod,
) -> Result<json_patch::Patch, serde_json::Error> {
    let doc = |p: &CachedPod| -> Result<serde_json::Value, serde_json::Error> {
        let mut metadata = p.metadata.clone();
        metadata.managed_fields = None;
        metadata.resource_version = None;
        Ok(serde_json::json!({
            "metadata": serde_json::to_value(&metadata)?,
            "spec": serde_json::to_value(&p.spec)?,
        }))
    };
    bound_diff(base, &doc(base)?, &doc(updated)?)
}

/// The JSON patch from `before` to `after`, after an operation setting
/// `metadata.resourceVersion` to `base`'s: the API server answers 409 Conflict when the pod
/// changed since `base` was read (a PUT's optimistic concurrency).
fn bound_diff(
    base: &CachedPod,
    before: &serde_json::Value,
    after: &serde_json::Value,
) -> Result<json_patch::Patch, serde_json::Error> {
    let mut ops = Vec::new();
    if let Some(rv) = &base.metadata.resource_version {
        ops.push(serde_json::from_value(serde_json::json!(
            {"op": "replace", "path": "/metadata/resourceVersion", "value": rv}
        ))?);
    }
    ops.extend(json_patch::diff(before, after).0);
    Ok(json_patch::Patch(ops))
}

/// Applies `edit`, written against the cached view of a pod ([`CachedPod`]), to the full pod
/// `pod` — a pod about to be created from a template, which must keep every field the view
/// does not hold. The view's change is taken as a JSON patch ([`json_patch::diff`] of the view
/// before and after `edit`) and applied to the full pod's JSON, so one set of pod edits
/// (lifecycle state, StatefulSet identity and storage, …) serves cached pods and new ones.
///
/// # Errors
/// Serialization errors (not expected for API types), a patch that does not apply (not expected:
/// the view is a subset of the pod).
pub fn edit_as_cached(
    pod: &mut k8s_openapi::api::core::v1::Pod,
    edit: impl FnOnce(&mut CachedPod),
) -> Result<(), ControlError> {
    let invalid = |e: &dyn std::fmt::Display| ControlError::Invalid(format!("pod edit: {e}"));
    let before = CachedPod::from(&*pod);
    let mut after = before.clone();
    edit(&mut after);
    let diff = json_patch::diff(
        &serde_json::to_value(&before).map_err(|e| invalid(&e))?,
        &serde_json::to_value(&after).map_err(|e| invalid(&e))?,
    );
    if diff.0.is_empty() {
        return Ok(());
    }
    let mut full = serde_json::to_value(&*pod).map_err(|e| invalid(&e))?;
    json_patch::patch(&mut full, &diff).map_err(|e| invalid(&e))?;
    *pod = serde_json::from_value(full).map_err(|e| invalid(&e))?;
    Ok(())
}

/// Writes `updated`, a changed copy of `base` (typically a pod from the shared cache), as
/// [`pod_update_patch`]: the effect of OpenKruise's `Update` of the pod (409 Conflict when the
/// pod changed since `base` was read) without a full PUT. Returns the written pod.
///
/// # Errors
/// The API server's errors (409 when `base` is stale, 404 when the pod is gone).
pub async fn update_pod(
    api: &Api<CachedPod>,
    base: &CachedPod,
    updated: &CachedPod,
) -> Result<CachedPod, kube::Error> {
    let patch = pod_update_patch(base, updated).map_err(kube::Error::SerdeError)?;
    api.patch(
        &base.name_any(),
        &PatchParams::default(),
        &Patch::Json::<()>(patch),
    )
    .await
}

/// Writes the status of `updated`, a changed copy of `base` (read from the API server or the
/// cache), as a JSON patch of `pods/status`: the difference of the two statuses, after an
/// operation setting `metadata.resourceVersion` to `base`'s (409 Conflict when the pod changed
/// since) — the effect of a PUT of `pods/status` (OpenKruise's `UpdateStatus`) without sending a
/// status the cached view does not hold whole. The view keeps `conditions` whole and in the
/// server's order, so index paths into them address the same conditions on the server.
///
/// # Errors
/// The API server's errors (409 when `base` is stale, 404 when the pod is gone).
pub async fn update_pod_status(
    api: &Api<CachedPod>,
    base: &CachedPod,
    updated: &CachedPod,
) -> Result<CachedPod, kube::Error> {
    let doc = |p: &CachedPod| serde_json::json!({ "status": p.status });
    let patch = bound_diff(base, &doc(base), &doc(updated)).map_err(kube::Error::SerdeError)?;
    api.patch_status(
        &base.name_any(),
        &PatchParams::default(),
        &Patch::Json::<()>(patch),
    )
    .await
}

/// [`update_pod_status`] that also writes `updated`'s labels and annotations: `pods/status`
/// takes them too (the API server's pod status strategy resets only the spec and a few metadata
/// fields), as OpenKruise's NodePodProbe controller relies on when it puts a probe's marks and
/// condition in one `UpdateStatus` (openkruise/kruise#1597).
///
/// # Errors
/// The API server's errors (409 when `base` is stale, 404 when the pod is gone).
pub async fn update_pod_status_and_marks(
    api: &Api<CachedPod>,
    base: &CachedPod,
    updated: &CachedPod,
) -> Result<CachedPod, kube::Error> {
    let doc = |p: &CachedPod| {
        serde_json::json!({
            "metadata": {"labels": p.metadata.labels, "annotations": p.metadata.annotations},
            "status": p.status,
        })
    };
    let patch = bound_diff(base, &doc(base), &doc(updated)).map_err(kube::Error::SerdeError)?;
    api.patch_status(
        &base.name_any(),
        &PatchParams::default(),
        &Patch::Json::<()>(patch),
    )
    .await
}

/// Adds (`add`) or removes `finalizer` on `obj` (OpenKruise's `util.UpdateFinalizer`): a merge
/// patch of the whole `metadata.finalizers` list bound to `obj`'s resourceVersion, so a stale
/// `obj` gets 409 Conflict and the pass is retried on the newer object. Nothing is written when
/// the list already is as asked. Returns the written object (`None`: nothing written, or the
/// object is gone).
///
/// # Errors
/// The API server's errors but 404.
pub async fn write_finalizer<K>(
    api: &Api<K>,
    obj: &K,
    finalizer: &str,
    add: bool,
) -> Result<Option<K>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = obj.meta().finalizers.clone().unwrap_or_default();
    if finalizers.iter().any(|f| f == finalizer) == add {
        return Ok(None);
    }
    if add {
        finalizers.push(finalizer.to_owned());
    } else {
        finalizers.retain(|f| f != finalizer);
    }
    let patch = serde_json::json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": obj.meta().resource_version,
    }});
    match api
        .patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(o) => Ok(Some(o)),
        Err(e) if is_status(&e, 404) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Least time between two writes of one workload's status that change nothing but its replica
/// counts. OpenKruise writes a changed status on every reconcile; during a fast rollout (no
/// client throttling) that is several writes per second per workload, each one superseded by
/// the next. A count-only change made sooner than this after the last write is held back and
/// written when the interval ends (the reconcile requeues for it), so a rollout's status
/// trails its pods by at most this long. Changes of anything else — `observedGeneration`,
/// revisions, conditions, selector, collision count, expected updated replicas — are written at
/// once.
pub const STATUS_COUNTS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// When each workload's status was last written by this process, for holding count-only
/// changes back ([`STATUS_COUNTS_INTERVAL`]). Keys are the controller's queue keys
/// (`namespace/name`); entries older than the interval are dropped as new ones come, so the map
/// holds only workloads written within the last interval. A restarted manager knows no write
/// and writes at once. Clones share one record.
#[derive(Debug, Default, Clone)]
pub struct StatusWrites {
    last: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
}

impl StatusWrites {
    /// How long a count-only status change of `key` must wait at `now`: `None` to write now,
    /// else the rest of [`STATUS_COUNTS_INTERVAL`] since the last write.
    pub fn hold(&self, key: &str, now: std::time::Instant) -> Option<std::time::Duration> {
        let last = self.lock().get(key).copied();
        hold_for(last, now, STATUS_COUNTS_INTERVAL)
    }

    /// Records a status write of `key` at `now` (and forgets writes older than the interval).
    pub fn wrote(&self, key: &str, now: std::time::Instant) {
        let mut last = self.lock();
        last.retain(|_, t| now.saturating_duration_since(*t) < STATUS_COUNTS_INTERVAL);
        last.insert(key.to_owned(), now);
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, std::time::Instant>> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The hold of a count-only status change: `None` when nothing was written within `interval`
/// before `now`, else what is left of it.
pub fn hold_for(
    last_write: Option<std::time::Instant>,
    now: std::time::Instant,
    interval: std::time::Duration,
) -> Option<std::time::Duration> {
    let elapsed = now.saturating_duration_since(last_write?);
    (elapsed < interval).then(|| interval - elapsed)
}

/// Whether a kube error is the API server's `code`.
pub(crate) fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}
