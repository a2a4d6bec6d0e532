//! The SidecarTerminator's decisions, pure (OpenKruise v1.9.0
//! `pkg/controller/sidecarterminator`: `utils.go`, the checks of `doReconcile`,
//! `filterUncompletedSidecars`, `getCRRName`, `updateSidecarsForInPlaceUpdate` and the event
//! handler's predicate).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1alpha1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainer, ContainerRecreateRequestSpec,
    ContainerRecreateRequestStrategy, container_recreate_request_failure_policy,
};
use kruise_api::keys;
use kruise_api::pod::{CachedContainer, CachedPod};
use serde_json::{Value, json};

/// Pod condition set on a job pod the controller marks terminated (OpenKruise's
/// `sidecarterminator.SidecarTerminated`).
pub const SIDECAR_TERMINATED: &str = "SidecarTerminated";

/// The message of that condition.
pub const TERMINATED_MESSAGE: &str = "Terminated by Sidecar Terminator";

/// Node label (and value) of a virtual-kubelet node (OpenKruise's `util.VirtualKubeletLabelKey`
/// and `VirtualKubeletLabelValue`).
pub const VIRTUAL_KUBELET_LABEL: (&str, &str) = ("type", "virtual-kubelet");

/// Container names, ordered (Go's `sets.Set[string]`).
pub type Names = BTreeSet<String>;

/// Whether any env `name` of `c` has a value equal to `true` in any case (Go ranges over all of
/// them, so a later duplicate counts too).
fn env_true(c: &CachedContainer, name: &str) -> bool {
    c.env.as_deref().unwrap_or_default().iter().any(|e| {
        e.name == name
            && e.value
                .as_deref()
                .unwrap_or("")
                .eq_ignore_ascii_case("true")
    })
}

/// `isNormalSidecar`: env `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT` is `true` (any case).
pub fn is_normal_sidecar(c: &CachedContainer) -> bool {
    env_true(c, keys::TERMINATE_SIDECAR_WHEN_JOB_EXIT_ENV)
}

/// `isIgnoreExitCodeSidecar`: a normal sidecar whose `KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE`
/// is `true` (any case).
pub fn is_ignore_exit_code_sidecar(c: &CachedContainer) -> bool {
    is_normal_sidecar(c) && env_true(c, keys::TERMINATE_SIDECAR_IGNORE_EXIT_CODE_ENV)
}

/// `isInplaceUpdateSidecar`: some env `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE` is
/// not empty.
pub fn is_in_place_update_sidecar(c: &CachedContainer) -> bool {
    c.env.as_deref().unwrap_or_default().iter().any(|e| {
        e.name == keys::TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE_ENV
            && !e.value.as_deref().unwrap_or("").is_empty()
    })
}

/// `isSidecarContainer`.
pub fn is_sidecar(c: &CachedContainer) -> bool {
    is_normal_sidecar(c) || is_in_place_update_sidecar(c)
}

fn containers(pod: &CachedPod) -> &[CachedContainer] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// `groupMainSidecarContainers`: (main, sidecar) container names.
pub fn group_main_sidecar(pod: &CachedPod) -> (Names, Names) {
    let (mut main, mut sidecars) = (Names::new(), Names::new());
    for c in containers(pod) {
        if is_sidecar(c) {
            sidecars.insert(c.name.clone());
        } else {
            main.insert(c.name.clone());
        }
    }
    (main, sidecars)
}

/// `getSidecarContainerNames`: (normal, ignore-exit-code, in-place-update) sidecars of a pod on
/// a virtual-kubelet node (`vk`) or not: on one only in-place-update sidecars, elsewhere only
/// the others.
pub fn sidecar_names(pod: &CachedPod, vk: bool) -> (Names, Names, Names) {
    let (mut normal, mut ignore, mut in_place) = (Names::new(), Names::new(), Names::new());
    for c in containers(pod) {
        if vk && is_in_place_update_sidecar(c) {
            in_place.insert(c.name.clone());
        } else if !vk && is_ignore_exit_code_sidecar(c) {
            ignore.insert(c.name.clone());
        } else if !vk && is_normal_sidecar(c) {
            normal.insert(c.name.clone());
        }
    }
    (normal, ignore, in_place)
}

/// Exit codes of terminated containers by name, `None` for a status without a terminated
/// state; `None` as a whole when the pod has not one status per container.
fn statuses(pod: &CachedPod) -> Option<Vec<(&str, Option<i32>)>> {
    let st = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    if st.len() != containers(pod).len() {
        return None;
    }
    Some(
        st.iter()
            .map(|s| {
                let code = s
                    .state
                    .as_ref()
                    .and_then(|st| st.terminated.as_ref())
                    .map(|t| t.exit_code);
                (s.name.as_str(), code)
            })
            .collect(),
    )
}

/// `containersCompleted`: the pod has one status per container and each of `names` with a
/// status is terminated.
pub fn containers_completed(pod: &CachedPod, names: &Names) -> bool {
    statuses(pod).is_some_and(|st| {
        st.iter()
            .all(|(n, code)| !names.contains(*n) || code.is_some())
    })
}

/// `containersSucceeded`: as [`containers_completed`], with exit code 0.
pub fn containers_succeeded(pod: &CachedPod, names: &Names) -> bool {
    statuses(pod).is_some_and(|st| {
        st.iter()
            .all(|(n, code)| !names.contains(*n) || *code == Some(0))
    })
}

/// `filterUncompletedSidecars`: those of `sidecars` without a terminated status.
pub fn uncompleted(pod: &CachedPod, sidecars: &Names) -> Names {
    let mut out = sidecars.clone();
    for s in pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
    {
        if s.state.as_ref().is_some_and(|st| st.terminated.is_some()) {
            out.remove(&s.name);
        }
    }
    out
}

fn phase(pod: &CachedPod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn restart_policy(pod: &CachedPod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("")
}

/// `isInterestingPod`: a live, not pending job pod (restartPolicy `Never` or `OnFailure`) with
/// sidecars not all completed whose main containers have completed (`Never`) or succeeded
/// (`OnFailure`).
pub fn is_interesting(pod: &CachedPod) -> bool {
    if pod.metadata.deletion_timestamp.is_some()
        || phase(pod) == "Pending"
        || restart_policy(pod) == "Always"
    {
        return false;
    }
    let (main, sidecars) = group_main_sidecar(pod);
    if sidecars.is_empty() || containers_completed(pod, &sidecars) {
        return false;
    }
    match restart_policy(pod) {
        "Never" => containers_completed(pod, &main),
        "OnFailure" => containers_succeeded(pod, &main),
        _ => false,
    }
}

/// The event handler's predicate on an update (`handlePodUpdate`): the pod changed
/// (resourceVersion) and is interesting. A creation is [`is_interesting`].
pub fn wanted_on_update(old: &CachedPod, new: &CachedPod) -> bool {
    old.metadata.resource_version != new.metadata.resource_version && is_interesting(new)
}

/// One write of a pass, in order; a failed one ends the pass (retried with backoff).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Virtual-kubelet node: update these sidecars in place to the image of their
    /// `KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE` (`executeInPlaceUpdateAction`).
    InPlaceUpdate(Names),
    /// Create the pod's request to stop these sidecars unless it already exists
    /// (`executeKillContainerAction`).
    KillContainers(Names),
    /// Condition `SidecarTerminated` and this phase, through the pod status
    /// (`markJobPodTerminated`).
    MarkTerminated(&'static str),
}

/// `doReconcile` without its writes: the steps for `pod`, on a virtual-kubelet node or not.
pub fn plan(pod: &CachedPod, vk: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if !is_interesting(pod) {
        return steps;
    }
    let (normal, ignore, in_place) = sidecar_names(pod, vk);
    let in_place_left = uncompleted(pod, &in_place);
    if !in_place_left.is_empty() {
        steps.push(Step::InPlaceUpdate(in_place_left));
    }
    let normal_left = uncompleted(pod, &normal);
    if !normal_left.is_empty() {
        steps.push(Step::KillContainers(normal_left));
    }
    if ignore.is_empty()
        || !containers_completed(pod, &normal)
        || !containers_completed(pod, &in_place)
    {
        return steps;
    }
    if let Some(phase) = terminated_phase(pod) {
        steps.push(Step::MarkTerminated(phase));
    }
    let ignore_left = uncompleted(pod, &ignore);
    if !ignore_left.is_empty() {
        steps.push(Step::KillContainers(ignore_left));
    }
    steps
}

/// The phase `markJobPodTerminated` writes: none for a pod already `Failed` or `Succeeded`,
/// else `Succeeded` when every main container exited 0, `Failed` otherwise.
pub fn terminated_phase(pod: &CachedPod) -> Option<&'static str> {
    match phase(pod) {
        "Failed" | "Succeeded" => None,
        _ => {
            let (main, _) = group_main_sidecar(pod);
            Some(if containers_succeeded(pod, &main) {
                "Succeeded"
            } else {
                "Failed"
            })
        }
    }
}

/// The strategic-merge patch of `pods/status` that marks the pod terminated, as Go marshals
/// its `PodStatus` (`lastProbeTime` null, `lastTransitionTime` in whole seconds).
pub fn terminated_status_patch(phase: &str, now: jiff::Timestamp) -> Value {
    let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
    json!({"status": {
        "phase": phase,
        "conditions": [{
            "type": SIDECAR_TERMINATED,
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "message": TERMINATED_MESSAGE,
        }],
    }})
}

/// `getCRRName`: `sidecar-termination-<pod UID>`.
pub fn request_name(pod: &CachedPod) -> String {
    format!(
        "sidecar-termination-{}",
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

/// The request stopping `sidecars` of `pod` (`executeKillContainerAction`): owned by the pod
/// (controller reference), force-recreate, failure policy `Ignore`; no labels of its own (the
/// mutating webhook adds the pod-UID, node and active labels).
pub fn kill_request(pod: &CachedPod, sidecars: &Names) -> ContainerRecreateRequest {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut crr = ContainerRecreateRequest::new(
        &request_name(pod),
        ContainerRecreateRequestSpec {
            pod_name: name.clone(),
            containers: sidecars
                .iter()
                .map(|n| ContainerRecreateRequestContainer {
                    name: n.clone(),
                    ..Default::default()
                })
                .collect(),
            strategy: Some(ContainerRecreateRequestStrategy {
                force_recreate: Some(true),
                failure_policy: Some(container_recreate_request_failure_policy::IGNORE.to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    crr.metadata = ObjectMeta {
        name: crr.metadata.name.take(),
        namespace: pod.metadata.namespace.clone(),
        owner_references: Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name,
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]),
        ..Default::default()
    };
    crr
}

/// `updateSidecarsForInPlaceUpdate` on the containers of a full pod: the new image of each of
/// `sidecars` whose image differs from its env's; whether anything changed.
pub fn update_images_in_place(
    containers: &mut [k8s_openapi::api::core::v1::Container],
    sidecars: &Names,
) -> bool {
    let mut changed = false;
    for c in containers.iter_mut().filter(|c| sidecars.contains(&c.name)) {
        let image = c
            .env
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|e| e.name == keys::TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE_ENV)
            .map(|e| e.value.clone().unwrap_or_default())
            .unwrap_or_default();
        if c.image.as_deref().unwrap_or("") == image {
            continue;
        }
        changed = true;
        c.image = Some(image);
    }
    changed
}

/// Go's `%v` of a string slice: `[a b]`.
pub fn go_list(names: &Names) -> String {
    format!("[{}]", names.iter().cloned().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests;
