//! In-place sidecar upgrades of injected pods — OpenKruise v1.9.0's SidecarSet controller
//! decisions (`pkg/controller/sidecarset`: `sidecarset_strategy.go` `GetNextUpgradePods`,
//! `SortUpdateIndexes`, `calculateUpgradeCount`, the `"*"` scatter terms;
//! `sidecarset_processor.go` `calculateStatus`, `updatePodSidecarContainer`,
//! `inconsistentStatus`; `sidecarset_hotupgrade.go` the hot-upgrade flip) as pure functions.

use std::collections::{BTreeMap, BTreeSet};

use kruise_api::apps::common::{UpdateScatterStrategy, UpdateScatterTerm};
use kruise_api::apps::v1beta1::{SidecarSet, SidecarSetStatus};
use kruise_api::keys;
use kruise_api::pod::{CachedContainer, CachedPod};

use super::control::{
    self, hot_upgrade_empty_image, hot_upgrade_names, is_hot_upgrade, is_pod_ready,
    is_pod_sidecar_updated, is_pod_state_consistent, is_sidecarset_upgradable,
    pod_hot_upgrade_containers,
};
use crate::podutil;
use crate::updatesort;

/// The pods to upgrade in this round and the pods that cannot be upgraded in place (their
/// sidecars changed in more than images), as indexes into the pods given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NextUpgrade {
    /// Pods to upgrade now, in upgrade order.
    pub upgrade: Vec<usize>,
    /// Pods waiting for an upgrade that changes more than images.
    pub not_upgradable: Vec<usize>,
}

/// OpenKruise `GetNextUpgradePods`: among the pods not on the latest hash and selected by
/// `updateStrategy.selector`, the upgradable and consistent ones in upgrade order
/// ([`sort_update_indexes`]), cut to what `partition` and `maxUnavailable` allow
/// ([`upgrade_count`]). `pods` are the SidecarSet's matched pods.
pub fn next_upgrade_pods(s: &SidecarSet, pods: &[&CachedPod]) -> NextUpgrade {
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    let selected = |pod: &CachedPod| match &strategy.selector {
        None => true,
        Some(sel) => updatesort::selector_matches(sel, pod.metadata.labels.as_ref()) == Some(true),
    };
    let mut wait = Vec::new();
    let mut not_upgradable = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        if !is_pod_sidecar_updated(s, pod) && selected(pod) {
            let (can, consistent) = is_sidecarset_upgradable(s, pod);
            if can && consistent {
                wait.push(i);
            } else if !can {
                not_upgradable.push(i);
            }
        }
    }
    let wait = sort_update_indexes(s, pods, wait);
    let n = upgrade_count(s, &wait, pods);
    NextUpgrade {
        upgrade: wait.into_iter().take(n).collect(),
        not_upgradable,
    }
}

/// OpenKruise SidecarSet `SortUpdateIndexes`: active-pods order (not ready, unscheduled,
/// pending first), then `priorityStrategy`, then `scatterStrategy` with `"*"` values expanded
/// to every value of that label among the pods.
pub fn sort_update_indexes(
    s: &SidecarSet,
    pods: &[&CachedPod],
    mut wait: Vec<usize>,
) -> Vec<usize> {
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    wait.sort_by(|&i, &j| updatesort::active_pods_cmp(pods[i], pods[j]));
    if let Some(p) = &strategy.priority_strategy {
        wait = updatesort::priority_sort(pods, wait, p);
    }
    if let Some(sc) = &strategy.scatter_strategy {
        let terms = expand_scatter_terms(sc, pods);
        wait = updatesort::scatter_sort(pods, wait, &terms);
    }
    wait
}

/// OpenKruise `parseUpdateScatterTerms`: a term with value `"*"` becomes one term per value of
/// its key among the pods (in pod order); duplicates are dropped.
pub fn expand_scatter_terms(
    scatter: &UpdateScatterStrategy,
    pods: &[&CachedPod],
) -> Vec<UpdateScatterTerm> {
    let mut out: Vec<UpdateScatterTerm> = Vec::new();
    let insert = |t: UpdateScatterTerm, out: &mut Vec<UpdateScatterTerm>| {
        if !out.iter().any(|o| o.key == t.key && o.value == t.value) {
            out.push(t);
        }
    };
    for term in scatter {
        if term.value != "*" {
            insert(term.clone(), &mut out);
            continue;
        }
        for pod in pods {
            if let Some(v) = pod.metadata.labels.as_ref().and_then(|l| l.get(&term.key)) {
                insert(
                    UpdateScatterTerm {
                        key: term.key.clone(),
                        value: v.clone(),
                    },
                    &mut out,
                );
            }
        }
    }
    out
}

/// OpenKruise `calculateUpgradeCount`: how many of `wait` (in order) to upgrade now. The last
/// `partition` (number, or percentage of all pods with OpenKruise's
/// `CalculatePartitionReplicas`) are kept; then pods that are not ready are always taken, ready
/// ones while the updated-but-unavailable pods stay under `maxUnavailable` (default 1,
/// percentages rounded up).
pub fn upgrade_count(s: &SidecarSet, wait: &[usize], pods: &[&CachedPod]) -> usize {
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    let total = pods.len() as i64;
    let partition =
        crate::intstr::partition_replicas(strategy.partition.as_ref(), pods.len() as i32)
            .unwrap_or(0)
            .max(0) as usize;
    if wait.len() <= partition {
        return 0;
    }
    let wait = &wait[..wait.len() - partition];
    let max_unavailable = strategy
        .max_unavailable
        .as_ref()
        .map(|m| crate::intstr::scaled_value(m, total, true).unwrap_or(0))
        .unwrap_or(1);
    let none = BTreeSet::new();
    let mut unavailable = pods
        .iter()
        .filter(|p| {
            is_pod_sidecar_updated(s, p)
                && (!is_pod_state_consistent(s, p, &none) || !is_pod_ready(s, p))
        })
        .count() as i64;
    let mut n = 0;
    for &i in wait {
        if !is_pod_ready(s, pods[i]) {
            n += 1;
            continue;
        }
        if unavailable >= max_unavailable {
            break;
        }
        unavailable += 1;
        n += 1;
    }
    n
}

/// OpenKruise `calculateStatus` (without `latestRevision`/`collisionCount`, which the caller
/// adds): matched pods, pods on the latest hash, consistent and ready pods, and both.
pub fn calculate_status(s: &SidecarSet, pods: &[&CachedPod]) -> SidecarSetStatus {
    let none = BTreeSet::new();
    let mut st = SidecarSetStatus {
        observed_generation: s.metadata.generation,
        matched_pods: pods.len() as i32,
        ..Default::default()
    };
    let mut updated_ready = 0;
    for pod in pods {
        let updated = is_pod_sidecar_updated(s, pod);
        if updated {
            st.updated_pods += 1;
        }
        if is_pod_state_consistent(s, pod, &none) && is_pod_ready(s, pod) {
            st.ready_pods += 1;
            if updated {
                updated_ready += 1;
            }
        }
    }
    st.updated_ready_pods = Some(updated_ready);
    st
}

/// OpenKruise `inconsistentStatus`: whether the computed status differs from the stored one
/// (a newer generation, a count, the latest revision or the collision count).
pub fn status_changed(stored: Option<&SidecarSetStatus>, new: &SidecarSetStatus) -> bool {
    let d = SidecarSetStatus::default();
    let old = stored.unwrap_or(&d);
    new.observed_generation.unwrap_or(0) > old.observed_generation.unwrap_or(0)
        || new.matched_pods != old.matched_pods
        || new.updated_pods != old.updated_pods
        || new.ready_pods != old.ready_pods
        || new.updated_ready_pods.unwrap_or(0) != old.updated_ready_pods.unwrap_or(0)
        || new.latest_revision.as_deref().unwrap_or("")
            != old.latest_revision.as_deref().unwrap_or("")
        || new.collision_count != old.collision_count
        || new.uninjected_pods != old.uninjected_pods
        || new.injection_paused_time != old.injection_paused_time
        || new.injection_resumed_time != old.injection_resumed_time
}

/// OpenKruise `updatePodSidecarContainer` (with `commonControl.UpgradeSidecarContainer`): the
/// pod with every sidecar whose image changed moved to the SidecarSet's image — a cold sidecar
/// in place, a hot-upgrade sidecar in its idle container (which becomes the working one, with
/// the version annotations set from the SidecarSet's `resourceVersion`) — its hash annotation
/// updated and the image IDs of the changed containers recorded. Only images change.
pub fn upgrade_pod(s: &SidecarSet, pod: &mut CachedPod, now: jiff::Timestamp) -> Vec<String> {
    let rv = s.metadata.resource_version.clone().unwrap_or_default();
    let mut changed = Vec::new();
    for sidecar in control::containers(s) {
        let name = &sidecar.container.name;
        let new_image = sidecar.container.image.clone().unwrap_or_default();
        let (target, old_image) = if is_hot_upgrade(sidecar) {
            let (to, other) = find_container_to_hot_upgrade(s, sidecar, pod);
            let old = any_image_of(pod, &other);
            (to, old)
        } else {
            (name.clone(), any_image_of(pod, name))
        };
        if new_image == old_image {
            continue;
        }
        let Some(c) = any_container_mut(pod, &target) else {
            continue;
        };
        c.image = Some(new_image);
        changed.push(target.clone());
        if is_hot_upgrade(sidecar) {
            let (n1, n2) = hot_upgrade_names(name);
            let older = if target == n1 { n2 } else { n1 };
            let mut info = control::hot_upgrade_info(pod);
            info.insert(name.clone(), target.clone());
            let anns = pod
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            anns.insert(
                keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER.to_string(),
                control::encode_string_map(&info),
            );
            anns.insert(control::version_annotation(&target), rv.clone());
            let older_version = anns
                .get(&control::version_annotation(&older))
                .cloned()
                .unwrap_or_default();
            anns.insert(control::version_alt_annotation(&target), older_version);
            anns.insert(control::version_alt_annotation(&older), rv.clone());
        }
    }
    control::update_pod_sidecarset_hash(pod, s, now);
    control::record_inplace_update_state(s, pod, &changed, now);
    changed
}

fn image_of(pod: &CachedPod, name: &str) -> String {
    podutil::get_container(pod, name)
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn any_image_of(pod: &CachedPod, name: &str) -> String {
    control::get_container(pod, name)
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn any_container_mut<'a>(pod: &'a mut CachedPod, name: &str) -> Option<&'a mut CachedContainer> {
    let spec = pod.spec.as_mut()?;
    spec.init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
        .find(|c| c.name == name)
}

fn container_mut<'a>(pod: &'a mut CachedPod, name: &str) -> Option<&'a mut CachedContainer> {
    pod.spec
        .as_mut()?
        .containers
        .iter_mut()
        .find(|c| c.name == name)
}

/// OpenKruise `findContainerToHotUpgrade`: `(container to upgrade, the other one)` of a hot
/// upgrade pair — the one running the empty image; else the one not ready (and consistent);
/// else the idle one by the working-container annotation.
pub fn find_container_to_hot_upgrade(
    s: &SidecarSet,
    sidecar: &kruise_api::apps::v1beta1::SidecarContainer,
    pod: &CachedPod,
) -> (String, String) {
    let (n1, n2) = hot_upgrade_names(&sidecar.container.name);
    let empty = hot_upgrade_empty_image(sidecar);
    let img1 = image_of(pod, &n1);
    let img2 = image_of(pod, &n2);
    // Go compares against zero-value containers when a name is missing: "" == "" counts.
    let (c1, c2) = (name_or_empty(pod, &n1), name_or_empty(pod, &n2));
    if img1 == empty {
        return (c1, c2);
    }
    if img2 == empty {
        return (c2, c1);
    }
    let ready = |n: &str| {
        podutil::get_container_status(pod, n).is_some_and(|c| c.ready)
            && is_pod_state_consistent(s, pod, &BTreeSet::from([n.to_string()]))
    };
    let (r1, r2) = (ready(&c1), ready(&c2));
    if r1 && !r2 {
        return (c2, c1);
    }
    if !r1 && r2 {
        return (c1, c2);
    }
    let (work, other) = pod_hot_upgrade_containers(&sidecar.container.name, pod);
    (other, work)
}

fn name_or_empty(pod: &CachedPod, n: &str) -> String {
    if podutil::get_container(pod, n).is_some() {
        n.to_string()
    } else {
        String::new()
    }
}

/// OpenKruise `isPodSidecarInHotUpgrading`: some hot-upgrade pair's idle container does not
/// run the empty image.
pub fn is_pod_in_hot_upgrading(s: &SidecarSet, pod: &CachedPod) -> bool {
    let images: BTreeMap<&str, &str> = podutil::containers(pod)
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or("")))
        .collect();
    control::containers(s)
        .iter()
        .filter(|c| is_hot_upgrade(c))
        .any(|c| {
            let (_, idle) = pod_hot_upgrade_containers(&c.container.name, pod);
            images.get(idle.as_str()).copied().unwrap_or("") != hot_upgrade_empty_image(c)
        })
}

/// OpenKruise `isHotUpgradingReady`: the pod is running and Ready, or every container but the
/// idle ones of hot-upgrade pairs is ready.
pub fn is_hot_upgrading_ready(s: &SidecarSet, pod: &CachedPod) -> bool {
    if podutil::is_running_and_ready(pod) {
        return true;
    }
    let idle: BTreeSet<String> = control::containers(s)
        .iter()
        .filter(|c| is_hot_upgrade(c))
        .map(|c| pod_hot_upgrade_containers(&c.container.name, pod).1)
        .collect();
    podutil::container_statuses(pod)
        .iter()
        .filter(|c| !idle.contains(&c.name))
        .all(|c| c.ready)
}

/// Whether the SidecarSet has a hot-upgrade sidecar.
pub fn has_hot_upgrade(s: &SidecarSet) -> bool {
    control::containers(s).iter().any(is_hot_upgrade)
}

/// Whether the pod's hot upgrade is done and its old container may be reset: it is in hot
/// upgrading, its sidecars other than the idle ones are consistent and it is ready enough
/// (the condition of OpenKruise's `UpdateSidecarSet` before `flipHotUpgradingContainers`).
pub fn needs_hot_upgrade_flip(s: &SidecarSet, pod: &CachedPod) -> bool {
    let mut sidecars = control::sidecar_containers_in_pod(s);
    for c in control::containers(s).iter().filter(|c| is_hot_upgrade(c)) {
        let (_, idle) = pod_hot_upgrade_containers(&c.container.name, pod);
        sidecars.remove(&idle);
    }
    is_pod_in_hot_upgrading(s, pod)
        && is_pod_state_consistent(s, pod, &sidecars)
        && is_hot_upgrading_ready(s, pod)
}

/// OpenKruise `flipPodSidecarContainerDo`: every hot-upgrade pair's idle container not on the
/// empty image is reset to it, with version annotations `0`, and the change recorded in the
/// in-place update state. Returns the reset containers.
pub fn flip_hot_upgrade(s: &SidecarSet, pod: &mut CachedPod, now: jiff::Timestamp) -> Vec<String> {
    let mut changed = Vec::new();
    for c in control::containers(s).iter().filter(|c| is_hot_upgrade(c)) {
        let (work, idle) = pod_hot_upgrade_containers(&c.container.name, pod);
        let empty = hot_upgrade_empty_image(c).to_string();
        if image_of(pod, &idle) == empty {
            continue;
        }
        if let Some(ct) = container_mut(pod, &idle) {
            ct.image = Some(empty);
        }
        changed.push(idle.clone());
        let anns = pod
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        anns.insert(control::version_annotation(&idle), "0".to_string());
        anns.insert(control::version_alt_annotation(&work), "0".to_string());
    }
    control::record_inplace_update_state(s, pod, &changed, now);
    changed
}

/// The `SidecarSetUpgradable` pod condition after SidecarSet `name` says `upgradable`
/// (OpenKruise `updatePodSidecarSetUpgradableCondition`): the condition's message is a JSON
/// map of SidecarSet name → upgradable; status `True` (`AllSidecarsetUpgradable`) when none is
/// `false`, else `False` (`UpdateImmutableField`). `None` when nothing changes, or when the
/// message is not a JSON object (Go returns an error and patches nothing).
pub fn upgradable_condition(
    pod: &CachedPod,
    name: &str,
    upgradable: bool,
    now: jiff::Timestamp,
) -> Option<k8s_openapi::api::core::v1::PodCondition> {
    use k8s_openapi::api::core::v1::PodCondition;
    let old = podutil::get_condition(pod, control::SIDECARSET_UPGRADABLE).map(PodCondition::from);
    let mut cond = old.clone().unwrap_or(PodCondition {
        type_: control::SIDECARSET_UPGRADABLE.to_string(),
        ..Default::default()
    });
    let mut kv = match cond.message.as_deref().filter(|m| !m.is_empty()) {
        None => serde_json::Map::new(),
        Some(m) => serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(m).ok()?,
    };
    kv.insert(name.to_string(), serde_json::Value::Bool(upgradable));
    let all = !kv.values().any(|v| *v == serde_json::Value::Bool(false));
    cond.status = if all { "True" } else { "False" }.to_string();
    cond.reason = Some(
        if all {
            "AllSidecarsetUpgradable"
        } else {
            "UpdateImmutableField"
        }
        .to_string(),
    );
    cond.message = Some(crate::revision::go_json::to_string(
        &serde_json::Value::Object(kv),
    ));
    // podutil.UpdatePodCondition: the transition time moves only with the status; nothing
    // changes when status, reason, message and probe time are equal.
    match &old {
        Some(o)
            if o.status == cond.status
                && o.reason == cond.reason
                && o.message == cond.message
                && o.last_probe_time == cond.last_probe_time =>
        {
            None
        }
        Some(o) => {
            if o.status != cond.status {
                cond.last_transition_time =
                    Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
            }
            Some(cond)
        }
        None => {
            cond.last_transition_time =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
            Some(cond)
        }
    }
}

#[cfg(test)]
mod tests;
