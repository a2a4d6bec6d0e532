//! The pure decisions of one ContainerRecreateRequest pass (OpenKruise v1.9.0
//! `pkg/controller/containerrecreaterequest/crr_controller.go`, `Reconcile`).

use std::time::Duration;

use jiff::Timestamp;
use kruise_api::apps::v1alpha1::{
    ContainerRecreateRequest, ContainerRecreateRequestSyncContainerStatus,
    container_recreate_request_phase as phase,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;

/// How long kruise-daemon has to pick a request up before it is completed as failed
/// (OpenKruise's `responseTimeout`).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a request is completed by the manager (the `status.message` OpenKruise writes).
pub const POD_GONE: &str = "pod has gone";
/// See [`POD_GONE`].
pub const DAEMON_SILENT: &str = "daemon has not responded for a long time";
/// See [`POD_GONE`].
pub const DEADLINE_EXCEEDED: &str = "recreating has exceeded the activeDeadlineSeconds";

/// One write of a pass, in the order they are performed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Remove the request's not-ready key from the pod (when it has the `KruisePodReady`
    /// gate), then the `crr.apps.kruise.io/unready-acquired` finalizer.
    ReleaseNotReady,
    /// Drop the label `crr.apps.kruise.io/active` of a finished request (kruise-daemon stops
    /// watching it).
    RemoveActiveLabel,
    /// Delete the request (`ttlSecondsAfterFinished` passed).
    Delete,
    /// Complete the request (`phase: Completed`, `completionTime`, this message).
    Complete(&'static str),
    /// Write this `crr.apps.kruise.io/sync-container-statuses` annotation.
    SyncContainerStatuses(String),
    /// Add the finalizer and the pod's not-ready key (when it has the `KruisePodReady` gate),
    /// then the `crr.apps.kruise.io/unready-acquired` annotation (now, RFC 3339).
    AcquireNotReady,
}

/// What one pass does: `steps` in order, then the pass comes back after `requeue`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes, in order.
    pub steps: Vec<Step>,
    /// When to look again (`None`: on the next change only).
    pub requeue: Option<Duration>,
}

/// The smallest positive of several "come back after" durations (OpenKruise's
/// `requeueduration.Duration`).
#[derive(Debug, Default)]
struct Requeue(Option<Duration>);

impl Requeue {
    fn update(&mut self, d: Duration) {
        if d > Duration::ZERO && self.0.is_none_or(|cur| d < cur) {
            self.0 = Some(d);
        }
    }
}

fn since(
    t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    now: Timestamp,
) -> Duration {
    t.map_or(Duration::ZERO, |t| {
        Duration::try_from(now.duration_since(t.0)).unwrap_or(Duration::ZERO)
    })
}

/// Left of `total` after `elapsed`, or `None` when it has run out.
fn left(total: Duration, elapsed: Duration) -> Option<Duration> {
    total.checked_sub(elapsed).filter(|d| !d.is_zero())
}

fn has_finalizer(crr: &ContainerRecreateRequest) -> bool {
    crr.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == keys::CRR_UNREADY_ACQUIRED))
}

fn label<'a>(crr: &'a ContainerRecreateRequest, key: &str) -> Option<&'a String> {
    crr.metadata.labels.as_ref().and_then(|l| l.get(key))
}

/// The pass for `crr` whose pod (`spec.podName`) is `pod` (`None`: not found), at `now`.
pub fn plan(crr: &ContainerRecreateRequest, pod: Option<&CachedPod>, now: Timestamp) -> Plan {
    let status = crr.status.as_ref();
    let completion = status.and_then(|s| s.completion_time.as_ref());
    let deleting = crr.metadata.deletion_timestamp.is_some();
    if deleting || completion.is_some() {
        let mut steps = Vec::new();
        if has_finalizer(crr) {
            steps.push(Step::ReleaseNotReady);
        }
        if deleting {
            return Plan {
                steps,
                requeue: None,
            };
        }
        if label(crr, keys::CRR_ACTIVE).is_some() {
            steps.push(Step::RemoveActiveLabel);
            return Plan {
                steps,
                requeue: None,
            };
        }
        let mut requeue = None;
        if let Some(ttl) = crr.spec.ttl_seconds_after_finished {
            let ttl = Duration::from_secs(u64::try_from(ttl).unwrap_or(0));
            match left(ttl, since(completion, now)) {
                Some(d) => requeue = Some(d),
                None => steps.push(Step::Delete),
            }
        }
        return Plan { steps, requeue };
    }

    let pod_uid = label(crr, keys::CRR_POD_UID).map_or("", String::as_str);
    let pod_gone = pod.is_none_or(|p| {
        p.metadata.deletion_timestamp.is_some()
            || p.metadata.uid.as_deref().unwrap_or("") != pod_uid
    });
    if pod_gone {
        return complete(POD_GONE);
    }
    let mut requeue = Requeue::default();
    let created = crr.metadata.creation_timestamp.as_ref();
    let current_phase = status.map_or("", |s| s.phase.as_str());
    if current_phase.is_empty() {
        match left(RESPONSE_TIMEOUT, since(created, now)) {
            Some(d) => requeue.update(d),
            None => return complete(DAEMON_SILENT),
        }
    }
    if let Some(deadline) = crr.spec.active_deadline_seconds {
        let deadline = Duration::from_secs(u64::try_from(deadline).unwrap_or(0));
        match left(deadline, since(created, now)) {
            Some(d) => requeue.update(d),
            None => return complete(DEADLINE_EXCEEDED),
        }
    }
    let mut steps = Vec::new();
    if current_phase == phase::RECREATING {
        let synced = sync_container_statuses(crr, pod.expect("pod checked above"));
        let annotation = crr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::CRR_SYNC_CONTAINER_STATUSES));
        if annotation != Some(&synced) {
            steps.push(Step::SyncContainerStatuses(synced));
        }
        let unready_wanted = crr
            .spec
            .strategy
            .as_ref()
            .is_some_and(|s| s.unready_grace_period_seconds.is_some());
        let acquired = crr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::CRR_UNREADY_ACQUIRED))
            .is_some_and(|v| !v.is_empty());
        if unready_wanted && !acquired {
            steps.push(Step::AcquireNotReady);
        }
    }
    Plan {
        steps,
        requeue: requeue.0,
    }
}

fn complete(message: &'static str) -> Plan {
    Plan {
        steps: vec![Step::Complete(message)],
        requeue: None,
    }
}

/// The `crr.apps.kruise.io/sync-container-statuses` annotation for `crr` (OpenKruise's
/// `syncContainerStatuses`): per requested container whose status shows it running since the
/// request was created, its name, readiness, restart count and ID — what kruise-daemon checks
/// before it calls a recreated container done. JSON as Go writes it (`[]` when none).
pub fn sync_container_statuses(crr: &ContainerRecreateRequest, pod: &CachedPod) -> String {
    let created = crr.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let synced: Vec<ContainerRecreateRequestSyncContainerStatus> = crr
        .spec
        .containers
        .iter()
        .filter_map(|c| statuses.iter().find(|s| s.name == c.name))
        .filter(|s| {
            let started = s
                .state
                .as_ref()
                .and_then(|st| st.running.as_ref())
                .map(|r| r.started_at.as_ref().map(|t| t.0));
            match started {
                None => false,
                // Go's zero time (no startedAt) is before any creation time.
                Some(started) => {
                    !matches!((started, created), (None, Some(_)))
                        && !matches!((started, created), (Some(s), Some(c)) if s < c)
                }
            }
        })
        .map(|s| ContainerRecreateRequestSyncContainerStatus {
            name: s.name.clone(),
            ready: s.ready,
            restart_count: s.restart_count,
            container_id: s.container_id.clone().unwrap_or_default(),
        })
        .collect();
    serde_json::to_string(&synced).unwrap_or_else(|_| "[]".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn crr(v: serde_json::Value) -> ContainerRecreateRequest {
        let mut base = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"crr.apps.kruise.io/pod-uid": "u1", "crr.apps.kruise.io/active": "true"}},
            "spec": {"podName": "p", "containers": [{"name": "app"}, {"name": "side"}],
                "strategy": {"failurePolicy": "Fail"}}});
        json_patch::merge(&mut base, &v);
        serde_json::from_value(base).unwrap()
    }

    fn pod(v: serde_json::Value) -> CachedPod {
        let mut base = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"containers": [{"name": "app"}, {"name": "side"}]},
            "status": {"containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 1, "containerID": "containerd://a2",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}},
                {"name": "side", "ready": true, "restartCount": 0, "containerID": "containerd://s1",
                    "state": {"running": {"startedAt": "2025-12-31T23:00:00Z"}}}]}});
        json_patch::merge(&mut base, &v);
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn a_new_request_waits_for_the_daemon_then_fails_after_a_minute() {
        let c = crr(json!({}));
        let p = pod(json!({}));
        let plan1 = plan(&c, Some(&p), at("2026-01-01T00:00:20Z"));
        assert_eq!(plan1.steps, vec![]);
        assert_eq!(plan1.requeue, Some(Duration::from_secs(40)));
        let plan2 = plan(&c, Some(&p), at("2026-01-01T00:01:00Z"));
        assert_eq!(plan2.steps, vec![Step::Complete(DAEMON_SILENT)]);
    }

    #[test]
    fn the_deadline_and_a_gone_pod_complete_the_request() {
        let c =
            crr(json!({"spec": {"activeDeadlineSeconds": 10}, "status": {"phase": "Recreating"}}));
        let p = pod(json!({}));
        assert_eq!(
            plan(&c, Some(&p), at("2026-01-01T00:00:10Z")).steps,
            vec![Step::Complete(DEADLINE_EXCEEDED)]
        );
        assert_eq!(
            plan(&c, None, at("2026-01-01T00:00:01Z")).steps,
            vec![Step::Complete(POD_GONE)]
        );
        let other = pod(json!({"metadata": {"uid": "u2"}}));
        assert_eq!(
            plan(&c, Some(&other), at("2026-01-01T00:00:01Z")).steps,
            vec![Step::Complete(POD_GONE)]
        );
        let deleting = pod(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:01Z"}}));
        assert_eq!(
            plan(&c, Some(&deleting), at("2026-01-01T00:00:01Z")).steps,
            vec![Step::Complete(POD_GONE)]
        );
    }

    #[test]
    fn recreating_syncs_containers_started_since_the_request_and_acquires_unready() {
        let c = crr(
            json!({"spec": {"strategy": {"unreadyGracePeriodSeconds": 3}},
            "status": {"phase": "Recreating"}}),
        );
        let p = pod(json!({}));
        let got = plan(&c, Some(&p), at("2026-01-01T00:00:06Z"));
        let synced =
            r#"[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#;
        assert_eq!(
            got.steps,
            vec![
                Step::SyncContainerStatuses(synced.into()),
                Step::AcquireNotReady
            ]
        );
        assert_eq!(got.requeue, None);
        let mut done = c.clone();
        done.metadata.annotations = Some(
            [
                (
                    keys::CRR_SYNC_CONTAINER_STATUSES.to_string(),
                    synced.to_string(),
                ),
                (
                    keys::CRR_UNREADY_ACQUIRED.to_string(),
                    "2026-01-01T00:00:06Z".to_string(),
                ),
            ]
            .into(),
        );
        assert_eq!(
            plan(&done, Some(&p), at("2026-01-01T00:00:07Z")).steps,
            vec![]
        );
        // Nothing running since the request: an empty list, as Go writes it.
        let waiting = pod(json!({"status": {"containerStatuses": [
            {"name": "app", "ready": false, "restartCount": 1, "state": {"waiting": {"reason": "x"}}}]}}));
        assert_eq!(sync_container_statuses(&c, &waiting), "[]");
    }

    #[test]
    fn a_finished_request_releases_the_pod_drops_its_label_then_lives_out_its_ttl() {
        let c = crr(
            json!({"metadata": {"finalizers": ["crr.apps.kruise.io/unready-acquired"]},
            "spec": {"ttlSecondsAfterFinished": 30},
            "status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:10Z"}}),
        );
        let got = plan(&c, None, at("2026-01-01T00:00:20Z"));
        assert_eq!(
            got.steps,
            vec![Step::ReleaseNotReady, Step::RemoveActiveLabel]
        );
        let mut inactive = c.clone();
        inactive.metadata.finalizers = None;
        inactive
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(keys::CRR_ACTIVE);
        let got = plan(&inactive, None, at("2026-01-01T00:00:20Z"));
        assert_eq!(
            (got.steps, got.requeue),
            (vec![], Some(Duration::from_secs(20)))
        );
        assert_eq!(
            plan(&inactive, None, at("2026-01-01T00:00:40Z")).steps,
            vec![Step::Delete]
        );
        let mut no_ttl = inactive.clone();
        no_ttl.spec.ttl_seconds_after_finished = None;
        assert_eq!(
            plan(&no_ttl, None, at("2026-01-01T01:00:00Z")),
            Plan::default()
        );
    }
}
