//! Pure decisions of the Advanced StatefulSet controller (OpenKruise v1.9.0
//! `pkg/controller/statefulset`): slots and ordinals, which revision a new pod gets, pod health,
//! which pods the rolling update visits in which order, PVC owner references for the retention
//! policy, and the status. No I/O; the caller passes `now`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kruise_api::apps::v1beta1::{
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetStatus, VolumeClaimStatus,
    persistent_volume_claim_retention_policy_type as retention, statefulset_update_strategy_type,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::lifecycle::{self, LifecycleState};
use kruise_engines::ordinals::{self, OrdinalRange};
use kruise_engines::podutil;
use kruise_engines::updatesort;

/// `controller-revision-hash`: the revision a stateful pod was made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// `statefulset.kubernetes.io/pod-name`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.kubernetes.io/pod-index` (gate PodIndexLabel).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// Most pods deleted at once by one Parallel scale-down batch.
pub const MAX_BATCH_SIZE: usize = 500;

/// The pod's revision label (`""` when absent).
pub fn pod_revision(pod: &CachedPod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map_or("", String::as_str)
}

/// The pod's ordinal (`-1` when the name has none or it overflows).
pub fn ordinal_of(pod: &CachedPod) -> i32 {
    pod.metadata
        .name
        .as_deref()
        .and_then(ordinals::parent_and_ordinal)
        .map_or(-1, |(_, o)| o)
}

/// `<set>-<ordinal>`.
pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// `<claim template>-<set>-<ordinal>`.
pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

/// Whether `pod` belongs to `set` by name (OpenKruise `isMemberOf`): `<set>-<digits>`.
pub fn is_member_of(set: &str, pod: &CachedPod) -> bool {
    pod.metadata
        .name
        .as_deref()
        .and_then(ordinals::parent_and_ordinal)
        .is_some_and(|(parent, _)| parent == set)
}

/// The ordinal range of `set` (`start_ordinal_gate` = StatefulSetStartOrdinal).
pub fn ordinal_range(set: &StatefulSet, start_ordinal_gate: bool) -> OrdinalRange {
    let start = if start_ordinal_gate {
        set.spec
            .ordinals
            .as_ref()
            .map_or(0, |o| o.start.unwrap_or(0))
    } else {
        0
    };
    OrdinalRange::new(
        set.spec.replicas.unwrap_or(1),
        start,
        ordinals::reserve_set(set.spec.reserve_ordinals.as_deref().unwrap_or_default()),
    )
}

/// Where each claimed pod goes: its slot (`ordinal - start`) when the range holds its ordinal,
/// else condemned (sorted by descending ordinal). Pods without a parsable ordinal are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignment {
    /// Per slot, the index into the claimed pods (`None`: reserved or missing).
    pub slots: Vec<Option<usize>>,
    /// Indexes of the pods to scale away, highest ordinal first.
    pub condemned: Vec<usize>,
}

/// Assigns `pods` to the slots of `range` (OpenKruise `updateStatefulSet` steps 5–8).
pub fn assign(pods: &[&CachedPod], range: &OrdinalRange) -> Assignment {
    let mut slots = vec![None; range.len()];
    let mut condemned = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let ord = ordinal_of(pod);
        if range.contains(ord) {
            slots[(ord - range.start) as usize] = Some(i);
        } else if ord >= 0 {
            condemned.push(i);
        }
    }
    condemned.sort_by_key(|&i| std::cmp::Reverse(ordinal_of(pods[i])));
    Assignment { slots, condemned }
}

/// OpenKruise `IsPodUpdate` for stateful pods: the revision label equals `update` (or its last
/// `-` component does), or, with the PreparingUpdateAsUpdate gate, the pod is `PreparingUpdate`.
pub fn is_pod_update(pod: &CachedPod, update: &str, preparing_update_as_update: bool) -> bool {
    if preparing_update_as_update
        && lifecycle::pod_state(pod) == Some(LifecycleState::PreparingUpdate)
    {
        return true;
    }
    let rev = pod_revision(pod);
    rev == update || short_hash(rev) == short_hash(update)
}

fn short_hash(rev: &str) -> &str {
    rev.rsplit('-').next().unwrap_or(rev)
}

fn is_rolling_update(set: &StatefulSet) -> bool {
    set.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == statefulset_update_strategy_type::ROLLING_UPDATE)
}

/// The rolling-update strategy, if the set updates by rolling update.
pub fn rolling_update(set: &StatefulSet) -> Option<&RollingUpdateStatefulSetStrategy> {
    if !is_rolling_update(set) {
        return None;
    }
    set.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
}

/// Whether the pod at `slot` (ordinal `start + slot`) is (re)created from the current revision
/// rather than the update revision (OpenKruise `isCurrentRevisionNeeded`; v1.9 `partition` =
/// number of pods kept on the old revision). `filled` holds, per slot decided so far (existing
/// pods and the new pods of lower slots), whether that pod is updated
/// ([`is_pod_update`]); `None` = reserved or not decided yet (the slot itself).
pub fn is_current_revision_needed(
    set: &StatefulSet,
    slot: usize,
    ordinal: i32,
    filled: &[Option<bool>],
) -> bool {
    if !is_rolling_update(set) {
        return false;
    }
    let Some(ru) = rolling_update(set) else {
        let current = set.status.as_ref().map_or(0, |s| s.current_replicas);
        return ordinal < current;
    };
    let partition = i64::from(ru.partition.unwrap_or(0));
    if ru.unordered_update.is_none() {
        let before = filled[..slot.min(filled.len())]
            .iter()
            .filter(|p| p.is_some())
            .count() as i64;
        return before < partition;
    }
    let not_updated = filled
        .iter()
        .enumerate()
        .filter(|(i, p)| *i != slot && **p == Some(false))
        .count() as i64;
    not_updated < partition
}

/// The slots the rolling update visits, in order (OpenKruise `sortPodsToUpdate`): ordered sets
/// from the highest slot down to `partition`, at most `replicas - partition`; unordered sets
/// (`unorderedUpdate`) updated or terminating pods first, then the others in priority order,
/// at most `replicas - partition` in all.
pub fn sort_pods_to_update(
    ru: Option<&RollingUpdateStatefulSetStrategy>,
    update_revision: &str,
    replicas: i32,
    slots: &[Option<&CachedPod>],
    preparing_update_as_update: bool,
) -> Vec<usize> {
    let partition = ru.and_then(|r| r.partition).unwrap_or(0);
    let max_update = i64::from(replicas) - i64::from(partition);
    if max_update <= 0 {
        return Vec::new();
    }
    let max_update = max_update as usize;
    let unordered = ru.and_then(|r| r.unordered_update.as_ref());
    let Some(unordered) = unordered else {
        let mut out = Vec::new();
        let mut target = slots.len() as i64 - 1;
        while target >= i64::from(partition) && out.len() < max_update {
            if slots[target as usize].is_some() {
                out.push(target as usize);
            }
            target -= 1;
        }
        return out;
    };
    let mut updated = Vec::new();
    let mut waiting = Vec::new();
    for i in (0..slots.len()).rev() {
        let Some(pod) = slots[i] else { continue };
        if podutil::is_terminating(pod)
            || is_pod_update(pod, update_revision, preparing_update_as_update)
        {
            updated.push(i);
        } else {
            waiting.push(i);
        }
    }
    if let Some(strategy) = unordered.priority_strategy.as_ref() {
        let pods: Vec<&CachedPod> = slots.iter().map(|p| p.unwrap_or(&EMPTY_POD)).collect();
        waiting = updatesort::priority_sort(&pods, waiting, strategy);
    }
    updated.extend(waiting);
    updated.truncate(max_update);
    updated
}

static EMPTY_POD: CachedPod = CachedPod {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        annotations: None,
        creation_timestamp: None,
        deletion_grace_period_seconds: None,
        deletion_timestamp: None,
        finalizers: None,
        generate_name: None,
        generation: None,
        labels: None,
        managed_fields: None,
        name: None,
        namespace: None,
        owner_references: None,
        resource_version: None,
        self_link: None,
        uid: None,
    },
    spec: None,
    status: None,
};

// ---------------------------------------------------------------------------------------------
// Pod health (stateful_set_utils.go)

/// Created: the API server has given it a phase (an in-memory pod has none).
pub fn is_created(pod: &CachedPod) -> bool {
    !podutil::phase(pod).is_empty()
}

/// Phase `Running` and `Ready` True (terminating pods included, as OpenKruise's
/// `isRunningAndReady`).
pub fn is_running_and_ready(pod: &CachedPod) -> bool {
    podutil::phase(pod) == podutil::PHASE_RUNNING && podutil::is_pod_ready(pod)
}

/// OpenKruise `isHealthy`: lifecycle `""`/`Normal`, running and ready, not terminating.
pub fn is_healthy(pod: &CachedPod) -> bool {
    lifecycle::is_normal_or_unset(pod) && is_running_and_ready(pod) && !podutil::is_terminating(pod)
}

/// OpenKruise `isRunningAndAvailable`: lifecycle `""`/`Normal`, running, ready for
/// `min_ready_seconds`; when not yet, how long until it will be (if known).
pub fn running_and_available(
    pod: &CachedPod,
    min_ready_seconds: i32,
    now: jiff::Timestamp,
) -> (bool, Option<Duration>) {
    if !lifecycle::is_normal_or_unset(pod) || !is_running_and_ready(pod) {
        return (false, None);
    }
    if min_ready_seconds <= 0 {
        return (true, None);
    }
    let min = Duration::from_secs(min_ready_seconds as u64);
    let Some(ltt) = podutil::get_condition(pod, podutil::POD_READY)
        .and_then(|c| c.last_transition_time.as_ref())
    else {
        return (false, Some(min));
    };
    let ready_at = ltt.0 + jiff::SignedDuration::from_secs(i64::from(min_ready_seconds));
    let wait = ready_at.duration_since(now);
    if wait.is_positive() {
        (
            false,
            Some(Duration::from_millis(wait.as_millis().max(1) as u64)),
        )
    } else {
        (true, None)
    }
}

/// OpenKruise `getMinReadySeconds`: `rollingUpdate.minReadySeconds` or 0.
pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.min_ready_seconds)
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// Identity and storage

/// OpenKruise `identityMatches`.
pub fn identity_matches(set: &StatefulSet, pod: &CachedPod) -> bool {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let Some((parent, ord)) = pod
        .metadata
        .name
        .as_deref()
        .and_then(ordinals::parent_and_ordinal)
    else {
        return false;
    };
    ord >= 0
        && parent == set_name
        && pod.metadata.name.as_deref() == Some(pod_name(set_name, ord).as_str())
        && pod.metadata.namespace == set.metadata.namespace
        && pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_NAME_LABEL))
            .map(String::as_str)
            == pod.metadata.name.as_deref()
}

/// OpenKruise `storageMatches`: every claim template is mounted from the pod's own claim.
pub fn storage_matches(set: &StatefulSet, pod: &CachedPod) -> bool {
    let ord = ordinal_of(pod);
    if ord < 0 {
        return false;
    }
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let volumes: BTreeMap<&str, Option<&str>> = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .map(|v| {
            (
                v.name.as_str(),
                v.persistent_volume_claim
                    .as_ref()
                    .map(|c| c.claim_name.as_str()),
            )
        })
        .collect();
    set.spec.volume_claim_templates.iter().flatten().all(|t| {
        let name = t.metadata.name.as_deref().unwrap_or("");
        volumes.get(name).copied().flatten() == Some(claim_name(name, set_name, ord).as_str())
    })
}

/// OpenKruise `updateIdentity`: name, namespace, `statefulset.kubernetes.io/pod-name` and (gate
/// PodIndexLabel) `apps.kubernetes.io/pod-index`.
pub fn update_identity(
    set: &StatefulSet,
    pod: &mut CachedPod,
    ordinal: i32,
    pod_index_label: bool,
) {
    let name = pod_name(set.metadata.name.as_deref().unwrap_or(""), ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(POD_NAME_LABEL.to_owned(), name);
    if pod_index_label {
        labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
    }
}

/// OpenKruise `updateStorage`: one volume per claim template (its claim), then the template's
/// own volumes not named like a claim template.
pub fn update_storage(set: &StatefulSet, pod: &mut CachedPod, ordinal: i32) {
    let templates = set
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    if templates.is_empty() {
        return;
    }
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    let spec = pod.spec.get_or_insert_with(Default::default);
    let names: BTreeSet<&str> = templates
        .iter()
        .filter_map(|t| t.metadata.name.as_deref())
        .collect();
    let mut volumes: Vec<k8s_openapi::api::core::v1::Volume> = templates
        .iter()
        .map(|t| {
            let name = t.metadata.name.clone().unwrap_or_default();
            k8s_openapi::api::core::v1::Volume {
                persistent_volume_claim: Some(
                    k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                        claim_name: claim_name(&name, set_name, ordinal),
                        read_only: Some(false),
                    },
                ),
                name,
                ..Default::default()
            }
        })
        .collect();
    volumes.extend(
        spec.volumes
            .take()
            .into_iter()
            .flatten()
            .filter(|v| !names.contains(v.name.as_str())),
    );
    spec.volumes = Some(volumes);
}

/// The claims of the pod at `ordinal` (OpenKruise `getPersistentVolumeClaims`): each template
/// named `<template>-<set>-<ordinal>` in the set's namespace, its labels plus the selector's
/// `matchLabels`.
pub fn claims_for(set: &StatefulSet, ordinal: i32) -> Vec<PersistentVolumeClaim> {
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    set.spec
        .volume_claim_templates
        .iter()
        .flatten()
        .map(|t| {
            let mut c = t.clone();
            c.metadata.name = Some(claim_name(
                t.metadata.name.as_deref().unwrap_or(""),
                set_name,
                ordinal,
            ));
            c.metadata.namespace = set.metadata.namespace.clone();
            let labels = c.metadata.labels.get_or_insert_with(Default::default);
            for (k, v) in set.spec.selector.match_labels.iter().flatten() {
                labels.insert(k.clone(), v.clone());
            }
            c.status = None;
            c
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// PVC retention policy (gate StatefulSetAutoDeletePVC)

/// Which owner references a pod's claims should carry (KEP-1847 as OpenKruise adapts it to
/// reserved ordinals): `(set_ref, pod_ref)`.
pub fn desired_claim_owners(set: &StatefulSet, scaled_down: bool) -> (bool, bool) {
    let policy = set.spec.persistent_volume_claim_retention_policy.as_ref();
    let when_deleted = policy
        .and_then(|p| p.when_deleted.as_deref())
        .unwrap_or(retention::RETAIN);
    let when_scaled = policy
        .and_then(|p| p.when_scaled.as_deref())
        .unwrap_or(retention::RETAIN);
    match (when_deleted, when_scaled) {
        (retention::DELETE, retention::RETAIN) => (true, false),
        (retention::RETAIN, retention::DELETE) => (false, scaled_down),
        (retention::DELETE, retention::DELETE) => (!scaled_down, scaled_down),
        _ => (false, false),
    }
}

fn has_owner(claim: &PersistentVolumeClaim, uid: &str) -> bool {
    !uid.is_empty()
        && claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid)
}

/// Whether `claim`'s owner references are those the policy wants
/// (OpenKruise `claimOwnerMatchesSetAndPod`).
pub fn claim_owner_matches(
    set: &StatefulSet,
    pod: &CachedPod,
    claim: &PersistentVolumeClaim,
    scaled_down: bool,
) -> bool {
    let (want_set, want_pod) = desired_claim_owners(set, scaled_down);
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let pod_uid = pod.metadata.uid.as_deref().unwrap_or("");
    has_owner(claim, set_uid) == want_set && has_owner(claim, pod_uid) == want_pod
}

/// Rewrites `claim`'s owner references as the policy wants (OpenKruise
/// `updateClaimOwnerRefForSetAndPod`): references added carry apiVersion, kind, name and uid
/// only. Returns whether anything changed.
pub fn fix_claim_owners(
    set: &StatefulSet,
    pod: &CachedPod,
    claim: &mut PersistentVolumeClaim,
    scaled_down: bool,
) -> bool {
    let (want_set, want_pod) = desired_claim_owners(set, scaled_down);
    let mut changed = false;
    let set_ref = OwnerReference {
        api_version: "apps.kruise.io/v1beta1".to_owned(),
        kind: "StatefulSet".to_owned(),
        name: set.metadata.name.clone().unwrap_or_default(),
        uid: set.metadata.uid.clone().unwrap_or_default(),
        ..Default::default()
    };
    let pod_ref = OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Pod".to_owned(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        ..Default::default()
    };
    for (want, r) in [(want_set, set_ref), (want_pod, pod_ref)] {
        if r.uid.is_empty() {
            continue;
        }
        let present = has_owner(claim, &r.uid);
        let refs = claim.metadata.owner_references.get_or_insert_with(Vec::new);
        if want && !present {
            refs.push(r);
            changed = true;
        } else if !want && present {
            if let Some(i) = refs.iter().position(|o| o.uid == r.uid) {
                refs.remove(i);
            }
            changed = true;
        }
    }
    if claim
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(Vec::is_empty)
    {
        claim.metadata.owner_references = None;
    }
    changed
}

/// OpenKruise `PodClaimIsStale`: with `whenScaled: Delete`, a claim of the pod to create still
/// owned by an earlier pod of the same name (waiting for the garbage collector).
pub fn claim_is_stale(set: &StatefulSet, pod_name: &str, claim: &PersistentVolumeClaim) -> bool {
    let when_scaled = set
        .spec
        .persistent_volume_claim_retention_policy
        .as_ref()
        .and_then(|p| p.when_scaled.as_deref())
        .unwrap_or(retention::RETAIN);
    when_scaled != retention::RETAIN
        && claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.name == pod_name)
}

// ---------------------------------------------------------------------------------------------
// Status

/// Counts of one pass (OpenKruise `computeReplicaStatus` summed over lists).
pub fn count_replicas(
    status: &mut StatefulSetStatus,
    pods: &[&CachedPod],
    min_ready_seconds: i32,
    current: &str,
    update: &str,
    now: jiff::Timestamp,
) {
    let (mut replicas, mut ready, mut available, mut cur, mut upd, mut upd_ready, mut upd_avail) =
        (0, 0, 0, 0, 0, 0, 0);
    for pod in pods {
        if is_created(pod) {
            replicas += 1;
        }
        let rev = pod_revision(pod);
        if is_running_and_ready(pod) {
            ready += 1;
            let (avail, _) = running_and_available(pod, min_ready_seconds, now);
            if rev == update {
                upd_ready += 1;
                if avail {
                    upd_avail += 1;
                }
            }
            if avail {
                available += 1;
            }
        }
        if is_created(pod) && !podutil::is_terminating(pod) {
            if rev == current {
                cur += 1;
            }
            if rev == update {
                upd += 1;
            }
        }
    }
    status.replicas = replicas;
    status.ready_replicas = ready;
    status.available_replicas = available;
    status.current_replicas = cur;
    status.updated_replicas = upd;
    status.updated_ready_replicas = Some(upd_ready);
    status.updated_available_replicas = Some(upd_avail);
}

/// A storage quantity (absent or malformed: zero), compared exactly.
fn storage_value(
    q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> kruise_api::validation::quantity::Quantity {
    use kruise_api::validation::quantity::Quantity;
    q.and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or_else(|| Quantity::parse("0").expect("zero parses"))
}

/// `apps.kruise.io/owned-by-asts`: on a claim the controller expanded, the set's name.
pub const PVC_OWNED_BY_ASTS: &str = "apps.kruise.io/owned-by-asts";

/// OpenKruise `IsClaimCompatibleWithoutSize`: same storage class when both name one, and the
/// same access modes in the same order.
pub fn claim_compatible_without_size(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> bool {
    let sc = |c: &PersistentVolumeClaim| c.spec.as_ref().and_then(|s| s.storage_class_name.clone());
    if let (Some(a), Some(b)) = (sc(claim), sc(template))
        && a != b
    {
        return false;
    }
    let modes = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.access_modes.clone())
            .unwrap_or_default()
    };
    modes(claim) == modes(template)
}

fn requested_storage(c: &PersistentVolumeClaim) -> kruise_api::validation::quantity::Quantity {
    storage_value(
        c.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage")),
    )
}

/// OpenKruise `IsPVCNeedExpand`: the claim requests less storage than its template.
pub fn claim_needs_expand(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    requested_storage(claim) < requested_storage(template)
}

/// OpenKruise `CompareWithCheckFn(claim, template, IsPVCNeedExpand)` as the rolling update
/// reads it: `Some(true)` the claim matches its template, `Some(false)` it only needs to be
/// expanded, `None` it differs in more than size (class or access modes).
pub fn claim_match(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> Option<bool> {
    if !claim_compatible_without_size(claim, template) {
        return None;
    }
    Some(!claim_needs_expand(claim, template))
}

/// OpenKruise `IsPatchPVCCompleted`: compatible and ready, or compatible with the file system
/// resize pending (the node finishes it).
pub fn claim_patch_completed(
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> bool {
    if !claim_compatible(claim, template) {
        return false;
    }
    claim_ready(claim)
        || claim
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "FileSystemResizePending" && c.status == "True")
}

/// Whether a claim satisfies its template (OpenKruise `isPVCCompatible`): same storage class
/// when both name one, the same access modes, and at least the requested storage.
pub fn claim_compatible(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    claim_match(claim, template) == Some(true)
}

/// Whether a claim's capacity has reached its request (OpenKruise `isPVCReady`).
pub fn claim_ready(claim: &PersistentVolumeClaim) -> bool {
    let requested = storage_value(
        claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage")),
    );
    let capacity = storage_value(
        claim
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("storage")),
    );
    capacity >= requested
}

/// `status.volumeClaims` (OpenKruise `updatePVCStatus`): per claim template, how many of
/// `pods` have a compatible (and ready) claim. `claim_of` finds a claim by name.
pub fn volume_claim_status<'a>(
    set: &StatefulSet,
    pods: &[&CachedPod],
    claim_of: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> Option<Vec<VolumeClaimStatus>> {
    let templates = set
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    if templates.is_empty() {
        return None;
    }
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    Some(
        templates
            .iter()
            .map(|t| {
                let name = t.metadata.name.clone().unwrap_or_default();
                let (mut compatible, mut ready) = (0, 0);
                for pod in pods {
                    let ord = ordinal_of(pod);
                    let Some(c) = claim_of(&claim_name(&name, set_name, ord)) else {
                        continue;
                    };
                    if c.metadata.deletion_timestamp.is_some() || !claim_compatible(c, t) {
                        continue;
                    }
                    compatible += 1;
                    if claim_ready(c) {
                        ready += 1;
                    }
                }
                VolumeClaimStatus {
                    volume_claim_name: name,
                    compatible_replicas: compatible,
                    compatible_ready_replicas: ready,
                }
            })
            .collect(),
    )
}

/// OpenKruise `completeRollingUpdate`: a rolling update whose every pod is updated and ready
/// makes the update revision current.
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    if is_rolling_update(set)
        && status.updated_replicas == status.replicas
        && status.ready_replicas == status.replicas
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

/// Whether `new` must be written: any field differs from the stored status (OpenKruise's
/// `inconsistentStatus` compares only some of them, so `updatedReadyReplicas` — which Kruise
/// Rollouts reads — could stay stale; kruise-rs writes whenever anything changed).
pub fn status_changed(old: Option<&StatefulSetStatus>, new: &StatefulSetStatus) -> bool {
    old != Some(new)
}

/// The pod's lifecycle state label, `""` when absent.
pub fn lifecycle_state(pod: &CachedPod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::LIFECYCLE_STATE))
        .map_or("", String::as_str)
}

#[cfg(test)]
mod tests;
