//! Pure decisions of the EphemeralJob controller (OpenKruise v1.9.0
//! `pkg/controller/ephemeraljob/ephemeraljob_controller.go` and `ephemeraljob_utils.go`): which
//! pods a job targets, which of them get its ephemeral containers now, how the kubelet's
//! `ephemeralContainerStatuses` roll up into the job's status, and when the job's deadline and
//! TTL fall due.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, EnvVar, EphemeralContainer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::{
    EphemeralJob, EphemeralJobCondition, EphemeralJobStatus, ephemeral_job_condition_type as cond,
    ephemeral_job_phase as phase,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;

use kruise_engines::podutil;
use kruise_engines::updatesort::selector_matches;

/// OpenKruise's `defaultParallelism`: pods injected at a time when `spec.parallelism` is unset.
pub const DEFAULT_PARALLELISM: i32 = 1;

/// The TTL (seconds) of a finished job whose `spec.ttlSecondsAfterFinished` is unset.
pub const DEFAULT_TTL_SECONDS: i64 = 1800;

/// The selector of `job` is not a valid label selector (OpenKruise's
/// `ValidatedLabelSelectorAsSelector` error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid selector of EphemeralJob {0}")]
pub struct InvalidSelector(pub String);

/// How one ephemeral container is doing (OpenKruise `parseEphemeralContainerStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerState {
    /// Terminated with exit code 0 and a finish time.
    Succeeded,
    /// Terminated with a non-zero exit code, or waiting with reason `RunContainerError`.
    Failed,
    /// Waiting (image pull, creation).
    Waiting,
    /// Running.
    Running,
    /// No state reported.
    Unknown,
}

/// How one targeted pod is doing with the job's containers (OpenKruise
/// `parseEphemeralPodStatus`, as a pod phase).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodState {
    /// Every container of the template succeeded.
    Succeeded,
    /// One of them failed.
    Failed,
    /// One of them runs.
    Running,
    /// One of them waits.
    Pending,
    /// None reported yet (not injected, or the kubelet has not seen it).
    Unknown,
}

/// The state of one ephemeral container status.
pub fn container_state(status: &ContainerStatus) -> ContainerState {
    let Some(state) = &status.state else {
        return ContainerState::Unknown;
    };
    if let Some(t) = &state.terminated {
        if t.finished_at.is_some() && t.exit_code == 0 {
            return ContainerState::Succeeded;
        }
        if t.exit_code != 0 {
            return ContainerState::Failed;
        }
    }
    if state.running.is_some() {
        return ContainerState::Running;
    }
    if let Some(w) = &state.waiting {
        if w.reason.as_deref() == Some("RunContainerError") {
            return ContainerState::Failed;
        }
        return ContainerState::Waiting;
    }
    ContainerState::Unknown
}

/// The template's containers by name (`getEphemeralContainersMaps`).
fn template_names(job: &EphemeralJob) -> BTreeMap<&str, &EphemeralContainer> {
    job.spec
        .template
        .ephemeral_containers
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect()
}

/// The state of `pod` for `job`: its ephemeral container statuses of the template's names
/// rolled up (any failed: failed; all succeeded: succeeded; else running, pending, unknown).
/// `None` when the template has no container (OpenKruise's "spec containers is empty" error).
pub fn pod_state(job: &EphemeralJob, pod: &CachedPod) -> Option<PodState> {
    let names = template_names(job);
    if names.is_empty() {
        return None;
    }
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.ephemeral_container_statuses.as_deref())
        .unwrap_or_default();
    let (mut waiting, mut running, mut succeeded) = (0usize, 0usize, 0usize);
    for s in statuses
        .iter()
        .filter(|s| names.contains_key(s.name.as_str()))
    {
        match container_state(s) {
            ContainerState::Failed => return Some(PodState::Failed),
            ContainerState::Waiting => waiting += 1,
            ContainerState::Running => running += 1,
            ContainerState::Succeeded => succeeded += 1,
            ContainerState::Unknown => {}
        }
    }
    Some(if succeeded > 0 && succeeded == names.len() {
        PodState::Succeeded
    } else if running > 0 {
        PodState::Running
    } else if waiting > 0 {
        PodState::Pending
    } else {
        PodState::Unknown
    })
}

/// Whether `container` was injected by the job of UID `uid` (its `KRUISE_EJOB_ID` env).
pub fn created_by(uid: &str, container: &EphemeralContainer) -> bool {
    container
        .env
        .iter()
        .flatten()
        .any(|e| e.name == keys::EPHEMERAL_JOB_ID_ENV && e.value.as_deref() == Some(uid))
}

fn pod_ephemeral_containers(pod: &CachedPod) -> &[EphemeralContainer] {
    pod.spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_deref())
        .unwrap_or_default()
}

fn uid(job: &EphemeralJob) -> &str {
    job.metadata.uid.as_deref().unwrap_or("")
}

/// `ContainsEphemeralContainer`: whether `pod` has an ephemeral container named as one of the
/// template's (first found), and whether this job injected it.
pub fn contains(job: &EphemeralJob, pod: &CachedPod) -> (bool, bool) {
    let existing: BTreeMap<&str, &EphemeralContainer> = pod_ephemeral_containers(pod)
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    for c in &job.spec.template.ephemeral_containers {
        if let Some(found) = existing.get(c.name.as_str()) {
            return (true, created_by(uid(job), found));
        }
    }
    (false, false)
}

/// `existDuplicatedEphemeralContainer`: `pod` already has an ephemeral container of one of the
/// template's names that another job (or a user) added; such a pod is not targeted.
pub fn has_foreign_duplicate(job: &EphemeralJob, pod: &CachedPod) -> bool {
    let existing: BTreeMap<&str, &EphemeralContainer> = pod_ephemeral_containers(pod)
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    job.spec.template.ephemeral_containers.iter().any(|c| {
        existing
            .get(c.name.as_str())
            .is_some_and(|found| !created_by(uid(job), found))
    })
}

/// `podMatchedEphemeralJob` (the pod event handler's test): same namespace and a non-empty
/// selector that selects the pod's labels.
pub fn selects(job: &EphemeralJob, pod: &CachedPod) -> bool {
    let sel = &job.spec.selector;
    let empty = sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty);
    pod.metadata.namespace == job.metadata.namespace
        && !empty
        && selector_matches(sel, pod.metadata.labels.as_ref()) == Some(true)
}

/// `filterPods`: of the pods of the job's namespace (`pods`), those its selector selects, sorted
/// by creation time then name, without inactive pods and pods with a foreign ephemeral
/// container of a template name, at most `spec.replicas` of them.
///
/// # Errors
/// [`InvalidSelector`] when the selector cannot be parsed.
pub fn target_pods(
    job: &EphemeralJob,
    pods: &[Arc<CachedPod>],
) -> Result<Vec<Arc<CachedPod>>, InvalidSelector> {
    let mut selected = Vec::new();
    for p in pods {
        match selector_matches(&job.spec.selector, p.metadata.labels.as_ref()) {
            None => {
                return Err(InvalidSelector(format!(
                    "{}/{}",
                    job.metadata.namespace.as_deref().unwrap_or(""),
                    job.metadata.name.as_deref().unwrap_or("")
                )));
            }
            Some(true) => selected.push(p.clone()),
            Some(false) => {}
        }
    }
    selected.sort_by(|a, b| {
        let ta = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let tb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
        ta.cmp(&tb)
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    let limit = job.spec.replicas.map(|r| usize::try_from(r).unwrap_or(0));
    let mut targets = Vec::new();
    for p in selected {
        if !podutil::is_active(&p) || has_foreign_duplicate(job, &p) {
            continue;
        }
        if limit.is_none_or(|l| targets.len() < l) {
            targets.push(p);
        }
    }
    Ok(targets)
}

/// `getSyncPods` and `syncTargetPods`' limit: the targets that have none of the job's
/// containers yet, at most `parallelism` (default 1) minus the pods whose containers run
/// (`running`); none when more run than that.
pub fn pods_to_inject(
    job: &EphemeralJob,
    targets: &[Arc<CachedPod>],
    running: i32,
) -> Vec<Arc<CachedPod>> {
    let names = template_names(job);
    if names.is_empty() {
        return Vec::new();
    }
    let to_create: Vec<Arc<CachedPod>> = targets
        .iter()
        .filter(|p| {
            !pod_ephemeral_containers(p)
                .iter()
                .any(|c| names.contains_key(c.name.as_str()) && created_by(uid(job), c))
        })
        .cloned()
        .collect();
    let parallelism = job.spec.parallelism.unwrap_or(DEFAULT_PARALLELISM);
    let parallelism = i64::from(parallelism).min(to_create.len() as i64);
    let diff = parallelism - i64::from(running);
    if diff <= 0 {
        return Vec::new();
    }
    to_create
        .into_iter()
        .take(usize::try_from(diff).unwrap_or(0))
        .collect()
}

/// `CreateEphemeralContainer`'s containers: the template's, each with env `KRUISE_EJOB_ID` set
/// to the job's UID appended.
pub fn containers_to_inject(job: &EphemeralJob) -> Vec<EphemeralContainer> {
    job.spec
        .template
        .ephemeral_containers
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: keys::EPHEMERAL_JOB_ID_ENV.into(),
                value: Some(uid(job).to_string()),
                value_from: None,
            });
            c
        })
        .collect()
}

/// `getPodEphemeralContainers`: the scale-expectation names of `pod_name`'s injection
/// (`<pod>-<container>` per template container).
pub fn expectation_names(job: &EphemeralJob, pod_name: &str) -> Vec<String> {
    job.spec
        .template
        .ephemeral_containers
        .iter()
        .map(|c| format!("{pod_name}-{}", c.name))
        .collect()
}

/// Whether `pod` holds the container `<pod>-<container>` names (`expectation` from
/// [`expectation_names`]): the injection is visible in the cache.
pub fn injection_seen(pod: &CachedPod, container: &str) -> bool {
    pod_ephemeral_containers(pod)
        .iter()
        .any(|c| c.name == container)
}

/// `pastActiveDeadline`: `spec.activeDeadlineSeconds` have passed since `start`.
pub fn past_deadline(job: &EphemeralJob, start: Timestamp, now: Timestamp) -> bool {
    deadline_left(job, start, now).is_some_and(|left| left.is_zero())
}

/// Time left until the active deadline (zero once past), `None` without a deadline.
pub fn deadline_left(
    job: &EphemeralJob,
    start: Timestamp,
    now: Timestamp,
) -> Option<std::time::Duration> {
    let secs = job.spec.active_deadline_seconds?;
    let elapsed_ms = now.as_millisecond() - start.as_millisecond();
    let left_ms = secs.saturating_mul(1000).saturating_sub(elapsed_ms).max(0);
    Some(std::time::Duration::from_millis(
        u64::try_from(left_ms).unwrap_or(0),
    ))
}

/// What a finished job (one with `status.completionTime`) is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// Its TTL (`spec.ttlSecondsAfterFinished`, default 1800 s) has passed: delete it.
    Delete,
    /// Look again after this long.
    Wait(std::time::Duration),
}

/// The TTL decision of a finished job, `None` while it has not finished.
pub fn finished(job: &EphemeralJob, now: Timestamp) -> Option<Finished> {
    let done = job.status.as_ref()?.completion_time.as_ref()?.0;
    let ttl = job
        .spec
        .ttl_seconds_after_finished
        .map_or(DEFAULT_TTL_SECONDS, i64::from);
    let left_ms = ttl.saturating_mul(1000) - (now.as_millisecond() - done.as_millisecond());
    Some(if left_ms <= 0 {
        Finished::Delete
    } else {
        Finished::Wait(std::time::Duration::from_millis(
            u64::try_from(left_ms).unwrap_or(0),
        ))
    })
}

/// `addConditions`: condition `type_` (status True) with `reason` and `message`, replacing the
/// one of that type. Unlike OpenKruise, which stamps it anew on every pass, a condition whose
/// status, reason and message are unchanged keeps its times (so an unchanged status is not
/// written again).
fn set_condition(
    conditions: &mut Vec<EphemeralJobCondition>,
    type_: &str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    let new = EphemeralJobCondition {
        type_: type_.into(),
        status: "True".into(),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
        reason: (!reason.is_empty()).then(|| reason.into()),
        message: (!message.is_empty()).then(|| message.into()),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) if c.status == new.status && c.reason == new.reason && c.message == new.message => {
        }
        Some(c) => *c = new,
        None => conditions.push(new),
    }
}

/// `calculateStatus`: the status of `job` over its `targets` at `now`, its start time being
/// `start` (the pass sets it when the status has none). Phase: Waiting when nothing matched,
/// Succeeded when every target (`replicas`, default the matched count) succeeded, Running while
/// one runs, Failed when all failed, Waiting when all wait, else Unknown; Paused while
/// `spec.paused`; a Waiting, Unknown or Running job past its active deadline fails
/// (`DeadlineExceeded`); a template without containers is an Error. Finishing sets
/// `completionTime`.
///
/// # Errors
/// The message of OpenKruise's error for a template without containers when there are
/// targets (the pass fails and is retried).
pub fn status(
    job: &EphemeralJob,
    targets: &[Arc<CachedPod>],
    start: Timestamp,
    now: Timestamp,
) -> Result<EphemeralJobStatus, String> {
    let ns = job.metadata.namespace.as_deref().unwrap_or("");
    let name = job.metadata.name.as_deref().unwrap_or("");
    let now_t = Time(now);
    let mut st = job.status.clone().unwrap_or_default();
    st.start_time.get_or_insert(Time(start));
    let conditions = st.conditions.get_or_insert_with(|| {
        vec![EphemeralJobCondition {
            type_: cond::INITIALIZED.into(),
            status: "True".into(),
            last_probe_time: Some(now_t.clone()),
            last_transition_time: Some(now_t.clone()),
            reason: Some(cond::INITIALIZED.into()),
            message: None,
        }]
    });
    st.matches = i32::try_from(targets.len()).unwrap_or(i32::MAX);
    let (mut succeeded, mut failed, mut running, mut waiting) = (0, 0, 0, 0);
    for p in targets {
        match pod_state(job, p) {
            None => {
                return Err(format!(
                    "ephemeral job {ns}/{name} spec containers is empty. "
                ));
            }
            Some(PodState::Succeeded) => succeeded += 1,
            Some(PodState::Failed) => failed += 1,
            Some(PodState::Running) => running += 1,
            Some(PodState::Pending) => waiting += 1,
            Some(PodState::Unknown) => {}
        }
    }
    st.succeeded = succeeded;
    st.failed = failed;
    st.running = running;
    st.waiting = waiting;
    let replicas = job.spec.replicas.unwrap_or(st.matches);
    if st.matches == 0 {
        st.phase = phase::WAITING.into();
        set_condition(
            conditions,
            cond::MATCHED_EMPTY,
            "MatchEmpty",
            "job match no pods",
            &now_t,
        );
    } else if st.succeeded == replicas && st.succeeded > 0 {
        st.completion_time = Some(now_t.clone());
        st.phase = phase::SUCCEEDED.into();
        set_condition(
            conditions,
            cond::JOB_SUCCEEDED,
            "JobSucceeded",
            "job success to run all tasks",
            &now_t,
        );
    } else if st.running > 0 {
        st.phase = phase::RUNNING.into();
    } else if st.failed == replicas {
        st.completion_time = Some(now_t.clone());
        st.phase = phase::FAILED.into();
        set_condition(
            conditions,
            cond::JOB_FAILED,
            "JobFailed",
            "job failed to run all tasks",
            &now_t,
        );
    } else if st.waiting == replicas {
        st.phase = phase::WAITING.into();
    } else {
        st.phase = phase::UNKNOWN.into();
    }
    if job.spec.paused == Some(true) {
        st.phase = phase::PAUSED.into();
    }
    if st.failed > 0 {
        set_condition(
            conditions,
            cond::JOB_FAILED,
            "CreateFailed",
            &format!("EphemeralJob {ns}/{name} failed to create ephemeral container"),
            &now_t,
        );
    }
    let active = [phase::WAITING, phase::UNKNOWN, phase::RUNNING].contains(&st.phase.as_str());
    let started = st.start_time.as_ref().map_or(start, |t| t.0);
    if active && past_deadline(job, started, now) {
        st.completion_time = Some(now_t.clone());
        st.phase = phase::FAILED.into();
        set_condition(
            conditions,
            cond::JOB_FAILED,
            "DeadlineExceeded",
            &format!("EphemeralJob {ns}/{name} was active longer than specified deadline"),
            &now_t,
        );
    }
    if job.spec.template.ephemeral_containers.is_empty() {
        st.phase = phase::ERROR.into();
        set_condition(
            conditions,
            cond::JOB_ERROR,
            "Error",
            "job spec invalid fields.",
            &now_t,
        );
    }
    Ok(st)
}

#[cfg(test)]
mod tests;
