//! PodUnavailableBudget decisions (OpenKruise v1.9.0 `pkg/controller/podunavailablebudget`
//! and `pkg/control/pubcontrol`): which covered pods count as available, how many must stay
//! available, which admitted disruptions are still pending, and the status the controller
//! writes. Pure functions; the caller passes the pods, the expected pod count and `now`.
//!
//! The status the controller computes ([`plan_status`]):
//! - `desiredAvailable` from `maxUnavailable` (expected − scaled value, at least 0) or
//!   `minAvailable` (the number, or the percentage of the expected count rounded up);
//! - `disruptedPods`: entries the pod webhook wrote for deletions/evictions it admitted, kept
//!   while the pod is still active and the entry is younger than [`DELETION_TIMEOUT`] (an
//!   older one is dropped and reported: the pod "was expected to be deleted but it wasn't");
//! - `unavailablePods`: entries for admitted in-place updates, kept for
//!   [`UPDATED_DELAY_CHECK_TIME`] (the informer may not show the update yet);
//! - `currentAvailable`: active pods that are neither of the above, running and ready, without
//!   an `unavailable-pod.kruise.io/` label, and consistent (no in-place or sidecar update in
//!   flight, digests as their status reports);
//! - `unavailableAllowed` = currentAvailable − desiredAvailable, at least 0.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::{
    PodUnavailableBudget, PodUnavailableBudgetSpec, PodUnavailableBudgetStatus, TargetReference,
};

use crate::intstr::{IntStrError, scaled_value};
use crate::podutil;
use crate::sidecarset::control as sidecar;

/// How long a `disruptedPods` entry waits for its pod to be deleted (`DeletionTimeout`).
pub const DELETION_TIMEOUT: SignedDuration = SignedDuration::from_secs(20);

/// How long an `unavailablePods` entry is kept after the update was admitted
/// (`UpdatedDelayCheckTime`).
pub const UPDATED_DELAY_CHECK_TIME: SignedDuration = SignedDuration::from_secs(10);

/// Whether the labels hold one starting with `unavailable-pod.kruise.io/`
/// (`pub.HasUnavailableLabel`): such a pod is unavailable to every budget.
pub fn has_unavailable_label(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels
        .into_iter()
        .flatten()
        .any(|(k, _)| k.starts_with(keys::UNAVAILABLE_POD_LABEL_PREFIX))
}

/// `pubControl.IsPodReady`: running and ready, not being deleted, and without an
/// unavailable label.
pub fn is_pod_ready(pod: &CachedPod) -> bool {
    podutil::is_running_and_ready(pod) && !has_unavailable_label(pod.metadata.labels.as_ref())
}

/// `pubControl.IsPodStateConsistent`: every container whose image is a digest runs that digest
/// (its status `imageID` names it); if every image is a digest that settles it. Otherwise the
/// SidecarSet sidecars (`IS_INJECTED=true` containers of the SidecarSets in
/// `kruise.io/sidecarset-injected-list`) must have completed their in-place update, and so
/// must the pod's own in-place update (`DefaultCheckInPlaceUpdateCompleted`).
pub fn is_pod_state_consistent(pod: &CachedPod) -> bool {
    let ids = sidecar::pod_container_image_ids(pod);
    let mut all_digest = true;
    for c in podutil::containers(pod) {
        let image = c.image.as_deref().unwrap_or("");
        if !sidecar::is_image_digest(image) {
            all_digest = false;
            continue;
        }
        if !ids
            .get(&c.name)
            .is_some_and(|id| sidecar::is_container_image_equal(image, id))
        {
            return false;
        }
    }
    if all_digest {
        return true;
    }
    let sidecarsets = sidecar::injected_list(pod);
    let sidecars: BTreeSet<String> = podutil::containers(pod)
        .iter()
        .filter(|c| sidecar::is_injected_container(*c))
        .map(|c| c.name.clone())
        .collect();
    if !sidecarsets.is_empty()
        && !sidecars.is_empty()
        && !sidecar::is_sidecar_container_update_completed(pod, &sidecarsets, &sidecars)
    {
        return false;
    }
    crate::inplace::check_update_completed(pod).is_ok()
}

/// Whether the pod counts as available to a budget: ready ([`is_pod_ready`]) and consistent
/// ([`is_pod_state_consistent`]).
pub fn is_pod_available(pod: &CachedPod) -> bool {
    is_pod_ready(pod) && is_pod_state_consistent(pod)
}

/// `pubcontrol.IsReferenceEqual`: the same API group (the version does not matter), kind and
/// name. An unparsable apiVersion (more than one `/`) equals nothing.
pub fn is_reference_equal(a: &TargetReference, b: &TargetReference) -> bool {
    fn group(api_version: Option<&str>) -> Option<&str> {
        let v = api_version.unwrap_or("");
        match v.split_once('/') {
            None => Some(""),
            Some((g, rest)) if !rest.contains('/') => Some(g),
            Some(_) => None,
        }
    }
    let (Some(ga), Some(gb)) = (
        group(a.api_version.as_deref()),
        group(b.api_version.as_deref()),
    ) else {
        return false;
    };
    ga == gb && a.kind == b.kind && a.name == b.name
}

/// `getDesiredAvailableForPub`: the number of covered pods that must stay available, given
/// `expected` pods. `maxUnavailable` wins over `minAvailable`; neither set gives 0.
///
/// # Errors
/// A percentage string that is not `<integer>%` (the controller reports it as the Event
/// `CalculateExpectedPodCountFailed`).
pub fn desired_available(
    spec: &PodUnavailableBudgetSpec,
    expected: i32,
) -> Result<i32, IntStrError> {
    if let Some(max) = &spec.max_unavailable {
        let max = scaled_value(max, i64::from(expected), true)?;
        return Ok((i64::from(expected) - max).max(0) as i32);
    }
    match &spec.min_available {
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => Ok(*n),
        Some(min) => Ok(scaled_value(min, i64::from(expected), true)? as i32),
        None => Ok(0),
    }
}

/// The pending disruptions of a budget after `buildDisruptedAndUnavailablePods`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Disruptions {
    /// `disruptedPods` entries still pending.
    pub disrupted_pods: BTreeMap<String, Time>,
    /// `unavailablePods` entries still pending.
    pub unavailable_pods: BTreeMap<String, Time>,
    /// When the earliest kept entry expires: the controller looks again then.
    pub recheck_at: Option<Timestamp>,
    /// Active pods whose `disruptedPods` entry expired: admitted for deletion or eviction over
    /// [`DELETION_TIMEOUT`] ago and still there (OpenKruise's Warning Event `NotDeleted`).
    pub not_deleted: Vec<String>,
}

/// `buildDisruptedAndUnavailablePods`: the entries of `status` that are still pending at
/// `now` for the active pods among `pods` (entries of pods that are gone or terminating are
/// dropped: their disruption happened).
pub fn pending_disruptions(
    pods: &[&CachedPod],
    status: Option<&PodUnavailableBudgetStatus>,
    now: Timestamp,
) -> Disruptions {
    let mut out = Disruptions::default();
    let disrupted = status.and_then(|s| s.disrupted_pods.as_ref());
    let unavailable = status.and_then(|s| s.unavailable_pods.as_ref());
    if disrupted.is_none() && unavailable.is_none() {
        return out;
    }
    let recheck = |at: Timestamp, out: &mut Disruptions| {
        if out.recheck_at.is_none_or(|r| at < r) {
            out.recheck_at = Some(at);
        }
    };
    for pod in pods.iter().filter(|p| podutil::is_active(p)) {
        let Some(name) = pod.metadata.name.as_deref() else {
            continue;
        };
        if let Some(t) = disrupted.and_then(|m| m.get(name)) {
            let expected_deletion = t.0 + DELETION_TIMEOUT;
            if expected_deletion < now {
                out.not_deleted.push(name.to_string());
            } else {
                out.disrupted_pods.insert(name.to_string(), t.clone());
                recheck(expected_deletion, &mut out);
            }
        }
        if let Some(t) = unavailable.and_then(|m| m.get(name)) {
            let expected_update = t.0 + UPDATED_DELAY_CHECK_TIME;
            if expected_update >= now {
                out.unavailable_pods.insert(name.to_string(), t.clone());
                recheck(expected_update, &mut out);
            }
        }
    }
    out
}

/// `countAvailablePods`: active pods not pending a disruption that are available
/// ([`is_pod_available`]).
pub fn count_available(pods: &[&CachedPod], pending: &Disruptions) -> i32 {
    pods.iter()
        .filter(|p| podutil::is_active(p))
        .filter(|p| {
            let name = p.metadata.name.as_deref().unwrap_or("");
            !pending.disrupted_pods.contains_key(name)
                && !pending.unavailable_pods.contains_key(name)
        })
        .filter(|p| is_pod_available(p))
        .count() as i32
}

/// What one pass of the controller decides for a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusPlan {
    /// The status to write.
    pub status: PodUnavailableBudgetStatus,
    /// Whether it differs from the budget's current status (`updatePubStatus` writes only
    /// then).
    pub changed: bool,
    /// When to look again (the earliest pending entry's expiry).
    pub recheck_at: Option<Timestamp>,
    /// Pods admitted for deletion that were not deleted in time (Event `NotDeleted`).
    pub not_deleted: Vec<String>,
}

/// `syncPodUnavailableBudget`'s status for `budget` (as last read) covering `pods` when
/// `expected` pods are expected; see the module documentation.
///
/// # Errors
/// As [`desired_available`].
pub fn plan_status(
    budget: &PodUnavailableBudget,
    pods: &[&CachedPod],
    expected: i32,
    now: Timestamp,
) -> Result<StatusPlan, IntStrError> {
    let desired = desired_available(&budget.spec, expected)?;
    let pending = pending_disruptions(pods, budget.status.as_ref(), now);
    let current = count_available(pods, &pending);
    let non_empty = |m: BTreeMap<String, Time>| (!m.is_empty()).then_some(m);
    let status = PodUnavailableBudgetStatus {
        observed_generation: budget.metadata.generation.unwrap_or(0),
        disrupted_pods: non_empty(pending.disrupted_pods),
        unavailable_pods: non_empty(pending.unavailable_pods),
        unavailable_allowed: (current - desired).max(0),
        current_available: current,
        desired_available: desired,
        total_replicas: expected,
    };
    // Go compares with `equality.Semantic.DeepEqual`, for which an empty map equals a missing
    // one: normalise the current status the same way.
    let old = budget.status.clone().map(|mut s| {
        s.disrupted_pods = s.disrupted_pods.filter(|m| !m.is_empty());
        s.unavailable_pods = s.unavailable_pods.filter(|m| !m.is_empty());
        s
    });
    Ok(StatusPlan {
        changed: old.as_ref() != Some(&status),
        status,
        recheck_at: pending.recheck_at,
        not_deleted: pending.not_deleted,
    })
}

/// `GetPubForPod`'s selector half: whether a budget without `targetRef` selects labels
/// `labels`. A missing, empty or invalid selector selects nothing ("a PUB with a nil or empty
/// selector should match nothing, not everything").
pub fn selects(budget: &PodUnavailableBudget, labels: Option<&BTreeMap<String, String>>) -> bool {
    let Some(sel) = budget.spec.selector.as_ref() else {
        return false;
    };
    let empty = sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty);
    !empty && crate::updatesort::selector_matches(sel, labels) == Some(true)
}

#[cfg(test)]
mod tests;

/// An operation a budget can guard (`policyv1alpha1.PubOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Pod deletion.
    Delete,
    /// Pod eviction (`pods/eviction` CREATE).
    Evict,
    /// A pod update that may make it unavailable.
    Update,
    /// An in-place resource resize that keeps the pod available.
    Resize,
}

impl Operation {
    /// The name in the `kruise.io/pub-protect-operations` annotation.
    pub fn as_str(self) -> &'static str {
        use kruise_api::policy::v1alpha1::pub_operation as op;
        match self {
            Operation::Delete => op::DELETE,
            Operation::Evict => op::EVICT,
            Operation::Update => op::UPDATE,
            Operation::Resize => op::RESIZE,
        }
    }
}

/// `isNeedPubProtection`: whether `budget` guards `operation`. Without the
/// `kruise.io/pub-protect-operations` annotation DELETE, UPDATE and EVICT are guarded; the
/// annotation's comma-separated list adds to that only when it is set (then it is the list);
/// without gate `InPlacePodVerticalScaling` a guarded UPDATE guards RESIZE too.
pub fn needs_protection(
    budget: &PodUnavailableBudget,
    operation: Operation,
    in_place_vertical_scaling: bool,
) -> bool {
    let value = budget
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::PUB_PROTECT_OPERATIONS))
        .map(String::as_str)
        .unwrap_or("");
    let mut ops: BTreeSet<&str> = value.split(',').collect();
    if value.is_empty() {
        ops.extend([Operation::Delete, Operation::Update, Operation::Evict].map(Operation::as_str));
    }
    if !in_place_vertical_scaling && ops.contains(Operation::Update.as_str()) {
        ops.insert(Operation::Resize.as_str());
    }
    ops.contains(operation.as_str())
}

/// `isPodRecordedInPub`: the pod already has a pending `unavailablePods` or `disruptedPods`
/// entry (its disruption was admitted and counted).
pub fn is_recorded(budget: &PodUnavailableBudget, pod: &str) -> bool {
    budget.status.as_ref().is_some_and(|s| {
        s.unavailable_pods
            .as_ref()
            .is_some_and(|m| m.contains_key(pod))
            || s.disrupted_pods
                .as_ref()
                .is_some_and(|m| m.contains_key(pod))
    })
}

/// `MaxUnavailablePodSize`: at most this many pending entries (`disruptedPods` +
/// `unavailablePods`) before every further disruption is refused.
pub const MAX_UNAVAILABLE_POD_SIZE: usize = 2000;

/// `checkAndDecrement`: takes one unit of `unavailableAllowed` for pod `pod` and records it
/// (`unavailablePods` for an UPDATE, `disruptedPods` otherwise) at `now`.
///
/// # Errors
/// The reason of the refusal as OpenKruise words it (the admission denial's message):
/// `podunavailablebudgets.policy.kruise.io "<name>" is forbidden: pub unavailable allowed is
/// negative`, or the too-many-pending-entries message.
pub fn check_and_decrement(
    budget: &mut PodUnavailableBudget,
    pod: &str,
    operation: Operation,
    now: Timestamp,
) -> Result<(), String> {
    let name = budget.metadata.name.clone().unwrap_or_default();
    let status = budget.status.get_or_insert_with(Default::default);
    let forbidden = |why: &str| {
        format!("podunavailablebudgets.policy.kruise.io \"{name}\" is forbidden: {why}")
    };
    if status.unavailable_allowed <= 0 {
        return Err(forbidden("pub unavailable allowed is negative"));
    }
    let pending = status.disrupted_pods.as_ref().map_or(0, BTreeMap::len)
        + status.unavailable_pods.as_ref().map_or(0, BTreeMap::len);
    if pending > MAX_UNAVAILABLE_POD_SIZE {
        return Err(forbidden(
            "DisruptedPods and UnavailablePods map too big - too many unavailable not confirmed by PUB controller",
        ));
    }
    status.unavailable_allowed -= 1;
    let map = if operation == Operation::Update {
        status.unavailable_pods.get_or_insert_with(BTreeMap::new)
    } else {
        status.disrupted_pods.get_or_insert_with(BTreeMap::new)
    };
    map.insert(pod.to_string(), Time(now));
    Ok(())
}

/// `IsPodUnavailableChanged`: whether an update from `old` to `new` may make the pod
/// unavailable — its spec changed, or it gained an `unavailable-pod.kruise.io/` label.
pub fn is_pod_unavailable_changed(
    old: &k8s_openapi::api::core::v1::Pod,
    new: &k8s_openapi::api::core::v1::Pod,
) -> bool {
    old.spec != new.spec
        || (!has_unavailable_label(old.metadata.labels.as_ref())
            && has_unavailable_label(new.metadata.labels.as_ref()))
}

/// `CanResizeInplace`: whether the update only resizes container CPU / memory in place without
/// a container restart — no unavailable label added, the spec equal but for container
/// resources, not a static pod, the same QoS class, and every changed resource CPU or memory
/// with resize policy `NotRequired` (or none).
pub fn can_resize_in_place(
    old: &k8s_openapi::api::core::v1::Pod,
    new: &k8s_openapi::api::core::v1::Pod,
) -> bool {
    use k8s_openapi::api::core::v1::{Pod, PodSpec};
    if !has_unavailable_label(old.metadata.labels.as_ref())
        && has_unavailable_label(new.metadata.labels.as_ref())
    {
        return false;
    }
    let without_resources = |p: &Pod| -> PodSpec {
        let mut spec = p.spec.clone().unwrap_or_default();
        for c in &mut spec.containers {
            c.resources = None;
        }
        spec
    };
    if without_resources(old) != without_resources(new) {
        return false;
    }
    let is_static = |p: &Pod| {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubernetes.io/config.source"))
            .is_some_and(|s| s != "api")
    };
    if is_static(old) || is_static(new) {
        return false;
    }
    if qos_class(old) != qos_class(new) {
        return false;
    }
    let (Some(os), Some(ns)) = (old.spec.as_ref(), new.spec.as_ref()) else {
        return false;
    };
    if os.containers.len() != ns.containers.len() {
        return false;
    }
    for c in &ns.containers {
        let Some(o) = os.containers.iter().find(|o| o.name == c.name) else {
            return false;
        };
        let lists = |c: &k8s_openapi::api::core::v1::Container| {
            let r = c.resources.clone().unwrap_or_default();
            (r.requests.unwrap_or_default(), r.limits.unwrap_or_default())
        };
        let ((oreq, olim), (nreq, nlim)) = (lists(o), lists(c));
        let names: BTreeSet<&String> = oreq
            .keys()
            .chain(nreq.keys())
            .chain(olim.keys())
            .chain(nlim.keys())
            .collect();
        for name in names {
            if oreq.get(name) == nreq.get(name) && olim.get(name) == nlim.get(name) {
                continue;
            }
            if name != "cpu" && name != "memory" {
                return false;
            }
            let policy = c
                .resize_policy
                .iter()
                .flatten()
                .find(|p| &p.resource_name == name)
                .map(|p| p.restart_policy.as_str())
                .unwrap_or("");
            if !(policy.is_empty() || policy == "NotRequired") {
                return false;
            }
        }
    }
    true
}

/// The pod's QoS class as Kubernetes computes it (`qos.ComputePodQOS`, CPU and memory of every
/// container, init containers included): `BestEffort` without requests or limits,
/// `Guaranteed` when every container limits both and requests equal limits, else `Burstable`.
pub fn qos_class(pod: &k8s_openapi::api::core::v1::Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return "BestEffort";
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
    {
        let r = c.resources.clone().unwrap_or_default();
        let (req, lim) = (r.requests.unwrap_or_default(), r.limits.unwrap_or_default());
        for name in ["cpu", "memory"] {
            let (rq, lm) = (req.get(name), lim.get(name));
            if rq.is_some() || lm.is_some() {
                any = true;
            }
            match (rq, lm) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if r != l => guaranteed = false,
                _ => {}
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
