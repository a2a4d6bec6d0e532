//! Pure decisions of the UnitedDeployment controller (OpenKruise v1.9.0
//! `pkg/controller/uniteddeployment`): replica allocation (`allocator.go`: the specific, elastic
//! min/max, adaptive and reservation allocators), partitions (`calcNextPartitions`), which
//! subsets need an update (`manageSubsets`), the adaptive strategy's per-subset unschedulable
//! state (`calculateSubsetsStatusFor{Default,Reserved}AdaptiveStrategy`,
//! `CheckPodReallyInReservedStatus`), the conditions and the status sums (`calculateStatus`).
//! Times are `jiff::Timestamp`s passed in (`now`), durations are seconds unless named otherwise.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::{
    Subset as SubsetSpec, UnitedDeployment, UnitedDeploymentCondition, UnitedDeploymentStatus,
    UnitedDeploymentSubsetCondition, UnitedDeploymentSubsetStatus,
    united_deployment_subset_condition_type as subset_cond,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;

/// What the controller knows of one existing subset workload (OpenKruise's `Subset`).
#[derive(Clone, Debug, Default)]
pub struct Subset {
    /// The subset name (label `apps.kruise.io/subset-name`).
    pub subset_name: String,
    /// The workload's name.
    pub workload: String,
    /// The workload's labels.
    pub labels: BTreeMap<String, String>,
    /// The workload's annotations.
    pub annotations: BTreeMap<String, String>,
    /// `spec.replicas` of the workload.
    pub spec_replicas: i32,
    /// The workload's current partition (0 when it has none).
    pub partition: i32,
    /// `status.replicas`.
    pub replicas: i32,
    /// `status.readyReplicas`.
    pub ready_replicas: i32,
    /// Active pods at the expected revision.
    pub updated_replicas: i32,
    /// Ready active pods at the expected revision.
    pub updated_ready_replicas: i32,
    /// The revision the UnitedDeployment expects.
    pub updated_revision: String,
    /// The subset's pods.
    pub pods: Vec<std::sync::Arc<CachedPod>>,
    /// Adaptive strategy state.
    pub unschedulable: Unschedulable,
}

/// OpenKruise's `SubsetUnschedulableStatus`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unschedulable {
    /// The subset is unschedulable (pending pods timed out, or reserved pods exist).
    pub unschedulable: bool,
    /// Its `Schedulable` condition is False (reservation mode).
    pub marked: bool,
    /// Reserved pods (reservation mode).
    pub reserved_pods: i32,
    /// Pending pods past the reschedule deadline (default adaptive mode).
    pub pending_pods: i32,
    /// Old-revision pods past the update deadline (reservation mode).
    pub update_timeout_pods: i32,
}

impl Subset {
    /// OpenKruise's `Subset.Allocatable`.
    pub fn allocatable(&self) -> bool {
        !self.unschedulable.unschedulable && !self.unschedulable.marked
    }
}

pub use kruise_api::apps::v1alpha1::parse_subset_replicas;

fn subsets(ud: &UnitedDeployment) -> &[SubsetSpec] {
    ud.spec
        .topology
        .as_ref()
        .and_then(|t| t.subsets.as_deref())
        .unwrap_or_default()
}

fn strategy(ud: &UnitedDeployment) -> kruise_api::apps::v1alpha1::UnitedDeploymentScheduleStrategy {
    ud.spec
        .topology
        .as_ref()
        .and_then(|t| t.schedule_strategy.clone())
        .unwrap_or_default()
}

/// Whether the `Adaptive` schedule strategy is selected.
pub fn is_adaptive(ud: &UnitedDeployment) -> bool {
    strategy(ud).is_adaptive()
}

/// Whether the adaptive strategy keeps unschedulable pods (reservation mode).
pub fn reserves(ud: &UnitedDeployment) -> bool {
    strategy(ud).should_reserve_unschedulable_pods()
}

/// `rescheduleCriticalSeconds` as a duration.
pub fn reschedule_critical(ud: &UnitedDeployment) -> Duration {
    Duration::from_secs(strategy(ud).reschedule_critical_seconds().max(0) as u64)
}

/// `unschedulableDuration` as a duration.
pub fn unschedulable_duration(ud: &UnitedDeployment) -> Duration {
    Duration::from_secs(strategy(ud).unschedulable_duration_seconds().max(0) as u64)
}

/// `NewReplicaAllocator(ud).Alloc(existing)`: the next replicas of every subset.
///
/// # Errors
/// The specific allocator's and the min/max check's messages, as OpenKruise's.
pub fn allocate(
    ud: &UnitedDeployment,
    existing: &BTreeMap<String, Subset>,
) -> Result<BTreeMap<String, i32>, String> {
    let replicas = ud.spec.replicas.unwrap_or(0);
    if reserves(ud) {
        let (min, max) = raw_min_max(replicas, subsets(ud))?;
        let names: Vec<String> = subsets(ud).iter().map(|s| s.name.clone()).collect();
        return Ok(allocate_with_reservation(
            replicas, &min, &max, existing, &names,
        ));
    }
    if is_adaptive(ud) {
        let (mut min, mut max) = raw_min_max(replicas, subsets(ud))?;
        for s in subsets(ud) {
            let (mut lo, mut hi) = (min[&s.name], max[&s.name]);
            let unschedulable = existing
                .get(&s.name)
                .is_some_and(|e| e.unschedulable.unschedulable);
            let ready = existing.get(&s.name).map(|e| e.ready_replicas);
            if let (true, Some(running)) = (unschedulable, ready) {
                lo = lo.max(running);
                hi = hi.min(running);
            }
            let running = ready.unwrap_or(0);
            if !unschedulable && running > lo {
                lo = running.min(hi);
            }
            min.insert(s.name.clone(), lo);
            max.insert(s.name.clone(), hi);
        }
        return Ok(allocate_by_min_max(replicas, &min, &max, subsets(ud)));
    }
    if subsets(ud)
        .iter()
        .any(|s| s.min_replicas.is_some() || s.max_replicas.is_some())
    {
        let (min, max) = raw_min_max(replicas, subsets(ud))?;
        return Ok(allocate_by_min_max(replicas, &min, &max, subsets(ud)));
    }
    specific_allocate(ud, existing)
}

/// Replicas by subset name.
pub type Replicas = BTreeMap<String, i32>;

/// `calculateRawMinMaxMap`: `minReplicas` (default 0) and `maxReplicas` (default MaxInt32) of
/// each subset; an unparsable value counts as 0.
fn raw_min_max(replicas: i32, subsets: &[SubsetSpec]) -> Result<(Replicas, Replicas), String> {
    let mut min = BTreeMap::new();
    let mut max = BTreeMap::new();
    for (i, s) in subsets.iter().enumerate() {
        let lo = s
            .min_replicas
            .as_ref()
            .map_or(0, |v| parse_subset_replicas(replicas, v).unwrap_or(0));
        let hi = s.max_replicas.as_ref().map_or(i32::MAX, |v| {
            parse_subset_replicas(replicas, v).unwrap_or(0)
        });
        if lo > hi {
            return Err(format!(
                "subset[{i}].maxReplicas({hi}) must be more than or equal to minReplicas({lo})"
            ));
        }
        min.insert(s.name.clone(), lo);
        max.insert(s.name.clone(), hi);
    }
    Ok((min, max))
}

/// `allocateByMinMaxMap`: minimums in subset order, then up to the maximums in subset order.
pub fn allocate_by_min_max(
    replicas: i32,
    min: &BTreeMap<String, i32>,
    max: &BTreeMap<String, i32>,
    subsets: &[SubsetSpec],
) -> BTreeMap<String, i32> {
    let mut allocated = 0i32;
    let mut out = BTreeMap::new();
    for s in subsets {
        let add = min[&s.name].min(replicas - allocated).max(0);
        out.insert(s.name.clone(), add);
        allocated += add;
    }
    if allocated >= replicas {
        return out;
    }
    for s in subsets {
        let add = (max[&s.name].saturating_sub(min[&s.name]))
            .min(replicas - allocated)
            .max(0);
        *out.entry(s.name.clone()).or_default() += add;
        allocated += add;
    }
    out
}

#[derive(Clone, Copy)]
struct Record {
    max_allocatable: i32,
    allocated: i32,
}

impl Record {
    fn allocate(&mut self, to: i32, rest: i32) -> i32 {
        let mut add = (to - self.allocated).min(rest);
        self.allocated += add;
        self.max_allocatable = self.max_allocatable.saturating_sub(add);
        if self.max_allocatable < 0 {
            add += self.max_allocatable;
            return add.max(0);
        }
        add
    }
}

/// `allocateByMinMaxMapAndReservation` (reservation mode): replicas expected to stay
/// unschedulable in a subset are allocated again to the next subsets, as temporary pods.
pub fn allocate_with_reservation(
    mut replicas: i32,
    min: &BTreeMap<String, i32>,
    max: &BTreeMap<String, i32>,
    existing: &BTreeMap<String, Subset>,
    names: &[String],
) -> BTreeMap<String, i32> {
    let mut records: BTreeMap<&str, Record> = names
        .iter()
        .map(|n| {
            let max_allocatable = match existing.get(n) {
                Some(s) if !s.allocatable() => s.spec_replicas - s.unschedulable.reserved_pods,
                _ => i32::MAX,
            };
            (
                n.as_str(),
                Record {
                    max_allocatable,
                    allocated: 0,
                },
            )
        })
        .collect();
    let export = |records: &BTreeMap<&str, Record>| {
        records
            .iter()
            .map(|(n, r)| ((*n).to_owned(), r.allocated))
            .collect()
    };
    for n in names {
        if let Some(r) = records.get_mut(n.as_str()) {
            replicas -= r.allocate(min[n], replicas);
        }
        if replicas <= 0 {
            return export(&records);
        }
    }
    for n in names {
        let to = match existing.get(n) {
            Some(s) if s.unschedulable.unschedulable => s.spec_replicas,
            _ => max[n],
        };
        if let Some(r) = records.get_mut(n.as_str()) {
            replicas -= r.allocate(to, replicas);
        }
        if replicas <= 0 {
            return export(&records);
        }
    }
    export(&records)
}

/// The specific allocator (`specificAllocator.Alloc`): subsets with `replicas` get them, the
/// rest is shared evenly by the others, the larger shares going to the subsets that are
/// larger now (then later by name).
fn specific_allocate(
    ud: &UnitedDeployment,
    existing: &BTreeMap<String, Subset>,
) -> Result<BTreeMap<String, i32>, String> {
    let expected = ud.spec.replicas.unwrap_or(-1);
    // (name, current replicas, allocated, specified), sorted by current replicas then name.
    let mut infos: Vec<(String, i32, bool)> = subsets(ud)
        .iter()
        .map(|s| {
            let cur = existing.get(&s.name).map_or(0, |e| e.spec_replicas);
            (s.name.clone(), cur, false)
        })
        .collect();
    infos.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut specified = BTreeMap::new();
    for s in subsets(ud) {
        if let Some(v) = &s.replicas
            && let Ok(r) = parse_subset_replicas(expected, v)
        {
            specified.insert(s.name.clone(), r);
        }
    }
    // validateReplicas
    let sum: i32 = specified.values().sum();
    let count = infos
        .iter()
        .filter(|i| specified.contains_key(&i.0))
        .count();
    if expected != -1 {
        if sum > expected {
            return Err(format!(
                "specified subsets' replica ({sum}) is greater than UnitedDeployment replica ({expected})"
            ));
        } else if sum < expected && count == infos.len() {
            return Err(format!(
                "specified subsets' replica ({sum}) is less than UnitedDeployment replica ({expected})"
            ));
        }
    } else if count != infos.len() {
        return Err(
            "all subsets must be specified when UnitedDeployment replica is unspecified".into(),
        );
    }
    for info in infos.iter_mut() {
        if let Some(r) = specified.get(&info.0) {
            info.1 = *r;
            info.2 = true;
        }
    }
    let mut left = infos.len() - count;
    if left != 0 {
        let allocatable = i64::from(expected) - i64::from(sum);
        let average = allocatable / left as i64;
        let mut remainder = allocatable % left as i64;
        for info in infos.iter_mut().rev() {
            if info.2 {
                continue;
            }
            if remainder > 0 {
                info.1 = (average + 1) as i32;
                remainder -= 1;
            } else {
                info.1 = average as i32;
            }
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    Ok(infos.into_iter().map(|(n, r, _)| (n, r)).collect())
}

/// `calcNextPartitions`: the partition of `manualUpdate.partitions` (0 when not listed), at
/// most the subset's next replicas.
pub fn next_partitions(
    ud: &UnitedDeployment,
    next_replicas: &BTreeMap<String, i32>,
) -> BTreeMap<String, i32> {
    let strategy = ud.spec.update_strategy.as_ref();
    let manual = strategy.is_some_and(|s| s.type_.as_deref() == Some("Manual"));
    let partitions = strategy
        .and_then(|s| s.manual_update.as_ref())
        .and_then(|m| m.partitions.as_ref());
    subsets(ud)
        .iter()
        .map(|s| {
            let mut p = if manual {
                partitions
                    .and_then(|p| p.get(&s.name))
                    .copied()
                    .unwrap_or(0)
            } else {
                0
            };
            if let Some(r) = next_replicas.get(&s.name)
                && p > *r
            {
                p = *r;
            }
            (s.name.clone(), p)
        })
        .collect()
}

/// The subset patch as OpenKruise records it in `apps.kruise.io/subset-patch`
/// (`string(subset.Patch.Raw)`: the JSON as the API server sent it, empty when absent).
pub fn patch_text(subset: &SubsetSpec) -> String {
    match &subset.patch {
        None => String::new(),
        Some(v) => kruise_engines::revision::go_json::to_string(v),
    }
}

/// Why a subset needs an update, as `manageSubsets` checks it (in this order): `None` when it
/// does not.
pub fn update_reason(
    subset: &Subset,
    expected_revision: &str,
    replicas: i32,
    partition: i32,
    patch: &str,
) -> Option<&'static str> {
    if subset
        .labels
        .get(keys::KRUISE_CONTROLLER_REVISION_HASH)
        .map(String::as_str)
        != Some(expected_revision)
    {
        Some("revision changed")
    } else if subset.spec_replicas != replicas {
        Some("replicas changed")
    } else if subset.partition != partition {
        Some("partition changed")
    } else if subset
        .annotations
        .get(keys::SUBSET_PATCH)
        .map_or("", String::as_str)
        != patch
    {
        Some("patch changed")
    } else if subset.updated_replicas < subset.replicas {
        Some("still in updating progress")
    } else {
        None
    }
}

/// `CalculateUpdatedReplicas`: active pods at `revision`, and those of them ready.
pub fn updated_replicas(pods: &[std::sync::Arc<CachedPod>], revision: &str) -> (i32, i32) {
    let mut updated = 0;
    let mut ready = 0;
    for p in pods {
        if pod_revision(p) == Some(revision) && kruise_engines::podutil::is_active(p) {
            updated += 1;
            if kruise_engines::podutil::is_pod_ready(p) {
                ready += 1;
            }
        }
    }
    (updated, ready)
}

fn pod_revision(p: &CachedPod) -> Option<&str> {
    p.metadata
        .labels
        .as_ref()?
        .get(keys::KRUISE_CONTROLLER_REVISION_HASH)
        .map(String::as_str)
}

/// `IsPodMarkedAsReserved`: `(reserved, labelled)`.
pub fn reserved_label(p: &CachedPod) -> (bool, bool) {
    match p
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::UNITED_DEPLOYMENT_RESERVED_POD))
    {
        Some(v) => (v == "true", true),
        None => (false, false),
    }
}

fn to_std(d: jiff::SignedDuration) -> Option<Duration> {
    Duration::try_from(d).ok()
}

fn add(t: jiff::Timestamp, d: Duration) -> jiff::Timestamp {
    t.checked_add(jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(jiff::Timestamp::MAX)
}

/// `GetTimeBeforePendingTimeout`: a pending, unbound pod whose `PodScheduled` condition is
/// False with reason `Unschedulable` times out `timeout` after its creation. Returns
/// `(timed out, check again after)`.
pub fn pending_timeout(
    p: &CachedPod,
    timeout: Duration,
    now: jiff::Timestamp,
) -> (bool, Option<Duration>) {
    let phase = p
        .status
        .as_ref()
        .and_then(|s| s.phase.as_ref())
        .map(|w| w.as_str());
    let bound = p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if p.metadata.deletion_timestamp.is_some() || phase != Some("Pending") || bound {
        return (false, None);
    }
    let unschedulable = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            c.type_.as_str() == "PodScheduled"
                && c.status.as_str() == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        });
    if !unschedulable {
        return (false, None);
    }
    let created = p.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
    let expect = add(created, timeout);
    if expect < now {
        (true, None)
    } else {
        (false, to_std(expect.duration_since(now)))
    }
}

/// The `Schedulable` condition of a subset status.
pub fn schedulable_condition(
    s: &UnitedDeploymentSubsetStatus,
) -> Option<&UnitedDeploymentSubsetCondition> {
    s.condition(subset_cond::SCHEDULABLE)
}

/// `UnitedDeploymentSubsetStatus.SetCondition`: unchanged when status and reason are the same,
/// else the condition (added when missing) gets them, `message` and `now`.
pub fn set_subset_condition(
    s: &mut UnitedDeploymentSubsetStatus,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) {
    let conds = s.conditions.get_or_insert_with(Vec::new);
    if let Some(c) = conds.iter_mut().find(|c| c.type_ == type_) {
        if c.status == status && c.reason.as_deref() == Some(reason) {
            return;
        }
        c.status = status.to_owned();
        c.reason = Some(reason.to_owned());
        c.message = Some(message.to_owned());
        c.last_transition_time = Some(Time(now));
        return;
    }
    conds.push(UnitedDeploymentSubsetCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_transition_time: Some(Time(now)),
    });
}

/// `initStatus`: a status entry for every subset of the topology; in reservation mode a subset
/// added to an existing UnitedDeployment starts as not schedulable.
pub fn init_status(
    ud: &UnitedDeployment,
    status: &mut UnitedDeploymentStatus,
    now: jiff::Timestamp,
) {
    let existed = status
        .subset_statuses
        .as_ref()
        .is_some_and(|s| !s.is_empty());
    let reserve = reserves(ud);
    for s in subsets(ud) {
        if status.subset_status(&s.name).is_some() {
            continue;
        }
        let mut entry = UnitedDeploymentSubsetStatus {
            name: Some(s.name.clone()),
            ..Default::default()
        };
        if existed && reserve {
            set_subset_condition(
                &mut entry,
                subset_cond::SCHEDULABLE,
                "False",
                "created",
                "newly-created subsets in reservation strategy",
                now,
            );
        }
        status
            .subset_statuses
            .get_or_insert_with(Vec::new)
            .push(entry);
    }
}

fn subset_status_mut<'a>(
    status: &'a mut UnitedDeploymentStatus,
    name: &str,
) -> Option<&'a mut UnitedDeploymentSubsetStatus> {
    status
        .subset_statuses
        .as_mut()?
        .iter_mut()
        .find(|s| s.name.as_deref() == Some(name))
}

/// Smallest requeue among the pushed ones (OpenKruise's `durationStore`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Requeue(pub Option<Duration>);

impl Requeue {
    /// Keeps the smaller of the two (a zero duration is ignored).
    pub fn push(&mut self, d: Duration) {
        if d.is_zero() {
            return;
        }
        self.0 = Some(self.0.map_or(d, |c| c.min(d)));
    }
}

/// `calculateSubsetsStatusForDefaultAdaptiveStrategy`: a subset marked unschedulable stays so
/// for `unschedulableDuration` after the transition, then recovers; a subset with pending pods
/// past `rescheduleCriticalSeconds` becomes unschedulable.
pub fn default_adaptive_status(
    ud: &UnitedDeployment,
    name: &str,
    subset: &mut Subset,
    status: &mut UnitedDeploymentStatus,
    now: jiff::Timestamp,
    requeue: &mut Requeue,
) {
    let duration = unschedulable_duration(ud);
    let critical = reschedule_critical(ud);
    let Some(st) = subset_status_mut(status, name) else {
        return;
    };
    if let Some(c) = schedulable_condition(st)
        && c.status == "False"
    {
        let since = c.last_transition_time.as_ref().map_or(now, |t| t.0);
        let recover = add(since, duration);
        if now < recover {
            if let Some(d) = to_std(recover.duration_since(now)) {
                requeue.push(d);
            }
            subset.unschedulable.unschedulable = true;
        } else {
            set_subset_condition(
                st,
                subset_cond::SCHEDULABLE,
                "True",
                "recover",
                &format!(
                    "unschedulable subset recovered after {:.6} seconds",
                    duration.as_secs_f64()
                ),
                now,
            );
        }
    }
    if subset.ready_replicas < subset.replicas {
        for p in &subset.pods {
            let (timed_out, after) = pending_timeout(p, critical, now);
            if timed_out {
                subset.unschedulable.pending_pods += 1;
            }
            if let Some(a) = after {
                requeue.push(a);
            }
        }
        if subset.unschedulable.pending_pods > 0 {
            subset.unschedulable.unschedulable = true;
            set_subset_condition(
                st,
                subset_cond::SCHEDULABLE,
                "False",
                "reschedule",
                "timeout pending pods found",
                now,
            );
            requeue.push(duration);
        }
    }
}

/// `CheckPodReallyInReservedStatus`: whether pod `p` of `subset` is reserved, and when to check
/// again. `updated_since`: the transition time of the `UnitedDeploymentUpdated` condition.
pub fn pod_reserved(
    p: &CachedPod,
    subset: &mut Subset,
    updated_since: Option<jiff::Timestamp>,
    pending: Duration,
    min_ready: Duration,
    now: jiff::Timestamp,
) -> (bool, Option<Duration>) {
    let revision = pod_revision(p).unwrap_or("");
    if reserved_label(p).0 {
        let running = p
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|w| w.as_str() == "Running");
        if running && revision == subset.updated_revision {
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .find(|c| c.type_.as_str() == "Ready");
            if let Some(c) = ready
                && c.status.as_str() == "True"
            {
                let since = c.last_transition_time.as_ref().map_or(now, |t| t.0);
                let until = add(since, min_ready);
                if until < now {
                    return (false, None);
                }
                return (true, to_std(until.duration_since(now)));
            }
        }
        return (true, Some(min_ready));
    }
    let (timed_out, after) = if revision == subset.updated_revision {
        pending_timeout(p, pending, now)
    } else if p.metadata.deletion_timestamp.is_some() {
        (false, None)
    } else {
        let expect = add(updated_since.unwrap_or(now), pending);
        let r = if expect < now {
            (true, None)
        } else {
            (false, to_std(expect.duration_since(now)))
        };
        if r.0 {
            subset.unschedulable.update_timeout_pods += 1;
        }
        r
    };
    if timed_out {
        (true, Some(min_ready))
    } else {
        (false, after)
    }
}

/// `calculateSubsetsStatusForReservedAdaptiveStrategy`: counts reserved pods, sets the subset's
/// `Schedulable` condition, and returns the pods whose reserved label must be written
/// (`(pod name, reserved)`).
pub fn reserved_adaptive_status(
    ud: &UnitedDeployment,
    name: &str,
    subset: &mut Subset,
    status: &mut UnitedDeploymentStatus,
    now: jiff::Timestamp,
    requeue: &mut Requeue,
) -> Vec<(String, bool)> {
    let updated_since = status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_.as_deref() == Some("UnitedDeploymentUpdated"))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    let duration = unschedulable_duration(ud);
    let critical = reschedule_critical(ud);
    let Some(st) = subset_status_mut(status, name) else {
        return Vec::new();
    };
    if let Some(c) = schedulable_condition(st) {
        subset.unschedulable.marked = c.status == "False";
    }
    let mut patches = Vec::new();
    let mut next: Option<Duration> = None;
    let pods = subset.pods.clone();
    for p in &pods {
        let (old_reserved, labelled) = reserved_label(p);
        if subset.unschedulable.marked && !labelled {
            subset.unschedulable.reserved_pods += 1;
            patches.push((p.metadata.name.clone().unwrap_or_default(), true));
        } else {
            let (reserved, after) = pod_reserved(p, subset, updated_since, critical, duration, now);
            if reserved {
                subset.unschedulable.reserved_pods += 1;
            }
            if let Some(a) = after
                && !a.is_zero()
            {
                next = Some(next.map_or(a, |n| n.min(a)));
            }
            if reserved != old_reserved || !labelled {
                patches.push((p.metadata.name.clone().unwrap_or_default(), reserved));
            }
        }
    }
    if let Some(n) = next {
        requeue.push(n);
    }
    if subset.unschedulable.reserved_pods > 0 {
        subset.unschedulable.unschedulable = true;
        set_subset_condition(
            st,
            subset_cond::SCHEDULABLE,
            "False",
            "reschedule",
            "reserved pods found",
            now,
        );
    } else {
        subset.unschedulable.unschedulable = false;
        set_subset_condition(
            st,
            subset_cond::SCHEDULABLE,
            "True",
            "reschedule",
            "no reserved pods",
            now,
        );
    }
    patches
}

/// `postProcessSubsetStatusForReservedAdaptiveStrategy`: a subset that just recovered and gets
/// more replicas is marked unschedulable again, so its new pods start reserved.
pub fn reserved_post_process(
    name: &str,
    subset: &Subset,
    status: &mut UnitedDeploymentStatus,
    next_replicas: i32,
    now: jiff::Timestamp,
) {
    if !subset.unschedulable.unschedulable
        && subset.unschedulable.marked
        && next_replicas > subset.spec_replicas
        && let Some(st) = subset_status_mut(status, name)
    {
        set_subset_condition(
            st,
            subset_cond::SCHEDULABLE,
            "False",
            "reschedule",
            "subset just recovered scaled up",
            now,
        );
    }
}

/// `SetUnitedDeploymentCondition`: no change when status and reason are the same; the
/// transition time is kept when only reason/message change.
pub fn set_condition(status: &mut UnitedDeploymentStatus, mut c: UnitedDeploymentCondition) {
    let conds = status.conditions.get_or_insert_with(Vec::new);
    if let Some(cur) = conds.iter().find(|x| x.type_ == c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    conds.retain(|x| x.type_ != c.type_);
    conds.push(c);
}

/// `RemoveUnitedDeploymentCondition`.
pub fn remove_condition(status: &mut UnitedDeploymentStatus, type_: &str) {
    if let Some(c) = status.conditions.as_mut() {
        c.retain(|x| x.type_.as_deref() != Some(type_));
        if c.is_empty() {
            status.conditions = None;
        }
    }
}

/// `NewUnitedDeploymentCondition`; empty reason/message are left out (Go's `omitempty`).
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> UnitedDeploymentCondition {
    UnitedDeploymentCondition {
        type_: Some(type_.to_owned()),
        status: Some(status.to_owned()),
        last_transition_time: Some(Time(now)),
        reason: (!reason.is_empty()).then(|| reason.to_owned()),
        message: (!message.is_empty()).then(|| message.to_owned()),
    }
}

/// `setUpdatedCondition`: `UnitedDeploymentUpdated` True once the current revision is the
/// expected one.
pub fn set_updated_condition(
    status: &mut UnitedDeploymentStatus,
    current: &str,
    expected: &str,
    now: jiff::Timestamp,
) {
    let value = if current == expected { "True" } else { "False" };
    let old = status
        .conditions
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_.as_deref() == Some("UnitedDeploymentUpdated"));
    if old.is_some_and(|c| c.status.as_deref() == Some(value)) {
        return;
    }
    let (reason, message) = if value == "False" {
        (
            "UnitedDeploymentRevisionUpdating",
            format!("updating to revision {expected}"),
        )
    } else {
        (
            "UnitedDeploymentRevisionUpdated",
            format!("updated to revision {expected}"),
        )
    };
    set_condition(
        status,
        condition("UnitedDeploymentUpdated", value, reason, &message, now),
    );
}

/// `calculateStatus`: sums of the subsets (reserved pods are not counted as replicas), per
/// subset replicas/ready/partition/reserved, the allocation, the update status and the current
/// revision (moved to the expected one once every replica is updated and ready).
pub fn calculate_status(
    status: &mut UnitedDeploymentStatus,
    existing: &BTreeMap<String, Subset>,
    next_replicas: &BTreeMap<String, i32>,
    next_partitions: &BTreeMap<String, i32>,
    current_revision: &str,
    expected_revision: &str,
) {
    status.replicas = 0;
    let mut reserved = 0;
    let mut ready = 0;
    status.updated_replicas = 0;
    let mut updated_ready = 0;
    for (name, s) in existing {
        status.replicas += s.replicas - s.unschedulable.reserved_pods;
        reserved += s.unschedulable.reserved_pods;
        ready += s.ready_replicas;
        status.updated_replicas += s.updated_replicas;
        updated_ready += s.updated_ready_replicas;
        if let Some(st) = subset_status_mut(status, name) {
            st.replicas = nonzero(s.replicas);
            st.ready_replicas = nonzero(s.ready_replicas);
            st.partition = nonzero(next_partitions.get(name).copied().unwrap_or(0));
            st.reserved_pods = nonzero(s.unschedulable.reserved_pods);
        }
    }
    status.reserved_pods = nonzero(reserved);
    status.ready_replicas = nonzero(ready);
    status.updated_ready_replicas = nonzero(updated_ready);
    status.subset_replicas = Some(next_replicas.clone());
    if status.current_revision.is_empty() {
        status.current_revision = current_revision.to_owned();
    }
    let update = status.update_status.get_or_insert_with(Default::default);
    update.updated_revision = Some(expected_revision.to_owned());
    update.current_partitions = Some(next_partitions.clone());
    if expected_revision != status.current_revision && updated_ready >= status.replicas {
        status.current_revision = expected_revision.to_owned();
    }
}

/// Go's `omitempty` for an int32.
fn nonzero(v: i32) -> Option<i32> {
    (v != 0).then_some(v)
}

#[cfg(test)]
mod tests;
