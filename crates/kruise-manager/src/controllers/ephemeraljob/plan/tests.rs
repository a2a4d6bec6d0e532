use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerState as KState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus, EnvVar, EphemeralContainer,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kruise_api::apps::v1alpha1::{
    EphemeralContainerTemplateSpec, EphemeralJob, EphemeralJobSpec, EphemeralJobStatus,
};
use kruise_api::pod::{CachedPod, CachedPodSpec, CachedPodStatus};

use super::*;

const UID: &str = "job-uid";

fn job(names: &[&str], replicas: Option<i32>, parallelism: Option<i32>) -> EphemeralJob {
    let mut j = EphemeralJob::new(
        "ej",
        EphemeralJobSpec {
            selector: LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            replicas,
            parallelism,
            template: EphemeralContainerTemplateSpec {
                ephemeral_containers: names
                    .iter()
                    .map(|n| EphemeralContainer {
                        name: (*n).into(),
                        image: Some("busybox".into()),
                        ..Default::default()
                    })
                    .collect(),
            },
            ..Default::default()
        },
    );
    j.metadata.namespace = Some("ns".into());
    j.metadata.uid = Some(UID.into());
    j
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn pod(name: &str, created: i64, app: &str) -> CachedPod {
    CachedPod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            labels: Some([("app".to_string(), app.to_string())].into()),
            creation_timestamp: Some(Time(at(created))),
            ..Default::default()
        },
        spec: Some(CachedPodSpec::default()),
        status: Some(CachedPodStatus {
            phase: Some("Running".into()),
            ..Default::default()
        }),
    }
}

fn with_container(mut p: CachedPod, name: &str, owner: Option<&str>) -> CachedPod {
    let c = EphemeralContainer {
        name: name.into(),
        env: owner.map(|o| {
            vec![EnvVar {
                name: "KRUISE_EJOB_ID".into(),
                value: Some(o.into()),
                value_from: None,
            }]
        }),
        ..Default::default()
    };
    p.spec
        .get_or_insert_with(Default::default)
        .ephemeral_containers
        .get_or_insert_with(Vec::new)
        .push(c);
    p
}

fn cstatus(name: &str, state: KState) -> ContainerStatus {
    ContainerStatus {
        name: name.into(),
        state: Some(state),
        ..Default::default()
    }
}

fn running() -> KState {
    KState {
        running: Some(ContainerStateRunning::default()),
        ..Default::default()
    }
}

fn exited(code: i32) -> KState {
    KState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            finished_at: Some(Time(at(5))),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn waiting(reason: &str) -> KState {
    KState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_status(mut p: CachedPod, s: ContainerStatus) -> CachedPod {
    p.status
        .get_or_insert_with(Default::default)
        .ephemeral_container_statuses
        .get_or_insert_with(Vec::new)
        .push(s);
    p
}

fn arcs(pods: Vec<CachedPod>) -> Vec<Arc<CachedPod>> {
    pods.into_iter().map(Arc::new).collect()
}

fn names(pods: &[Arc<CachedPod>]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn container_states_follow_openkruise() {
    assert_eq!(
        container_state(&cstatus("d", running())),
        ContainerState::Running
    );
    assert_eq!(
        container_state(&cstatus("d", exited(0))),
        ContainerState::Succeeded
    );
    assert_eq!(
        container_state(&cstatus("d", exited(2))),
        ContainerState::Failed
    );
    assert_eq!(
        container_state(&cstatus("d", waiting("RunContainerError"))),
        ContainerState::Failed
    );
    assert_eq!(
        container_state(&cstatus("d", waiting("ContainerCreating"))),
        ContainerState::Waiting
    );
    assert_eq!(
        container_state(&ContainerStatus::default()),
        ContainerState::Unknown
    );
    // Exit 0 without a finish time is neither success nor failure.
    let mut t = exited(0);
    t.terminated.as_mut().unwrap().finished_at = None;
    assert_eq!(container_state(&cstatus("d", t)), ContainerState::Unknown);
}

#[test]
fn pod_state_rolls_up_the_template_containers() {
    let j = job(&["a", "b"], None, None);
    let p = pod("p", 0, "web");
    assert_eq!(pod_state(&j, &p), Some(PodState::Unknown));
    let p = with_status(p, cstatus("a", exited(0)));
    // One of two succeeded: not yet a success.
    assert_eq!(pod_state(&j, &p), Some(PodState::Unknown));
    let p2 = with_status(p.clone(), cstatus("b", exited(0)));
    assert_eq!(pod_state(&j, &p2), Some(PodState::Succeeded));
    let p3 = with_status(p.clone(), cstatus("b", running()));
    assert_eq!(pod_state(&j, &p3), Some(PodState::Running));
    let p4 = with_status(p.clone(), cstatus("b", waiting("PodInitializing")));
    assert_eq!(pod_state(&j, &p4), Some(PodState::Pending));
    let p5 = with_status(p3, cstatus("b", exited(1)));
    assert_eq!(pod_state(&j, &p5), Some(PodState::Failed));
    // Statuses of other names are ignored.
    let other = with_status(pod("q", 0, "web"), cstatus("zzz", exited(1)));
    assert_eq!(pod_state(&j, &other), Some(PodState::Unknown));
    assert_eq!(pod_state(&job(&[], None, None), &other), None);
}

#[test]
fn targets_are_active_selected_pods_oldest_first_capped_by_replicas() {
    let j = job(&["dbg"], Some(2), None);
    let mut gone = pod("gone", 0, "web");
    gone.status.as_mut().unwrap().phase = Some("Succeeded".into());
    let pods = arcs(vec![
        pod("c", 3, "web"),
        pod("b", 1, "web"),
        pod("a", 1, "web"),
        pod("other", 0, "db"),
        gone,
    ]);
    assert_eq!(names(&target_pods(&j, &pods).unwrap()), ["a", "b"]);
    let all = job(&["dbg"], None, None);
    assert_eq!(names(&target_pods(&all, &pods).unwrap()), ["a", "b", "c"]);
}

#[test]
fn a_pod_with_a_foreign_container_of_the_same_name_is_not_a_target() {
    let j = job(&["dbg"], None, None);
    let pods = arcs(vec![
        with_container(pod("foreign", 0, "web"), "dbg", Some("other-uid")),
        with_container(pod("user", 0, "web"), "dbg", None),
        with_container(pod("mine", 0, "web"), "dbg", Some(UID)),
        with_container(pod("unrelated", 0, "web"), "other", Some("other-uid")),
    ]);
    assert_eq!(
        names(&target_pods(&j, &pods).unwrap()),
        ["mine", "unrelated"]
    );
    assert_eq!(contains(&j, &pods[0]), (true, false));
    assert_eq!(contains(&j, &pods[2]), (true, true));
    assert_eq!(contains(&j, &pods[3]), (false, false));
}

#[test]
fn invalid_selector_is_an_error() {
    let mut j = job(&["dbg"], None, None);
    j.spec.selector.match_expressions = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement {
            key: "app".into(),
            operator: "Bogus".into(),
            values: None,
        },
    ]);
    assert!(target_pods(&j, &arcs(vec![pod("a", 0, "web")])).is_err());
}

#[test]
fn injection_is_bounded_by_parallelism_minus_running() {
    let pods = arcs(vec![
        with_container(pod("a", 0, "web"), "dbg", Some(UID)),
        pod("b", 1, "web"),
        pod("c", 2, "web"),
        pod("d", 3, "web"),
    ]);
    // Default parallelism is 1.
    assert_eq!(
        names(&pods_to_inject(&job(&["dbg"], None, None), &pods, 0)),
        ["b"]
    );
    assert_eq!(
        names(&pods_to_inject(&job(&["dbg"], None, Some(2)), &pods, 0)),
        ["b", "c"]
    );
    assert_eq!(
        names(&pods_to_inject(&job(&["dbg"], None, Some(2)), &pods, 1)),
        ["b"]
    );
    assert!(pods_to_inject(&job(&["dbg"], None, Some(2)), &pods, 2).is_empty());
    assert!(pods_to_inject(&job(&["dbg"], None, Some(1)), &pods, 3).is_empty());
    // Parallelism above what is left is cut to it.
    assert_eq!(
        names(&pods_to_inject(&job(&["dbg"], None, Some(10)), &pods, 0)),
        ["b", "c", "d"]
    );
    assert!(pods_to_inject(&job(&[], None, Some(10)), &pods, 0).is_empty());
}

#[test]
fn injected_containers_carry_the_job_uid() {
    let j = job(&["a", "b"], None, None);
    let cs = containers_to_inject(&j);
    assert_eq!(cs.len(), 2);
    assert!(cs.iter().all(|c| created_by(UID, c)));
    assert_eq!(expectation_names(&j, "p"), ["p-a", "p-b"]);
    // The template itself is untouched.
    assert!(j.spec.template.ephemeral_containers[0].env.is_none());
}

#[test]
fn selects_needs_a_non_empty_selector_and_the_namespace() {
    let j = job(&["dbg"], None, None);
    assert!(selects(&j, &pod("a", 0, "web")));
    assert!(!selects(&j, &pod("a", 0, "db")));
    let mut elsewhere = pod("a", 0, "web");
    elsewhere.metadata.namespace = Some("other".into());
    assert!(!selects(&j, &elsewhere));
    let mut empty = job(&["dbg"], None, None);
    empty.spec.selector = LabelSelector::default();
    assert!(!selects(&empty, &pod("a", 0, "web")));
}

fn phase_of(j: &EphemeralJob, pods: Vec<CachedPod>, now: i64) -> EphemeralJobStatus {
    super::status(j, &arcs(pods), at(0), at(now)).unwrap()
}

#[test]
fn status_phases() {
    let j = job(&["dbg"], Some(2), None);
    let st = phase_of(&j, vec![], 1);
    assert_eq!((st.phase.as_str(), st.matches), ("Waiting", 0));
    let conds = st.conditions.as_ref().unwrap();
    assert_eq!(conds[0].type_, "Initialized");
    assert_eq!(conds[1].type_, "MatchedEmpty");
    assert_eq!(st.start_time, Some(Time(at(0))));
    assert!(st.completion_time.is_none());

    let ok = |n| {
        with_status(
            with_container(pod(n, 0, "web"), "dbg", Some(UID)),
            cstatus("dbg", exited(0)),
        )
    };
    let st = phase_of(&j, vec![ok("a"), ok("b")], 1);
    assert_eq!((st.phase.as_str(), st.succeeded), ("Succeeded", 2));
    assert_eq!(st.completion_time, Some(Time(at(1))));
    assert!(
        st.conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "JobSucceeded")
    );

    let run = with_status(pod("b", 0, "web"), cstatus("dbg", running()));
    let st = phase_of(&j, vec![ok("a"), run], 1);
    assert_eq!(
        (st.phase.as_str(), st.running, st.succeeded),
        ("Running", 1, 1)
    );

    let bad = |n| with_status(pod(n, 0, "web"), cstatus("dbg", exited(1)));
    let st = phase_of(&j, vec![bad("a"), bad("b")], 1);
    assert_eq!((st.phase.as_str(), st.failed), ("Failed", 2));
    let failed = st.conditions.unwrap();
    let c = failed.iter().find(|c| c.type_ == "JobFailed").unwrap();
    // The CreateFailed rewrite comes after JobFailed, as OpenKruise's order.
    assert_eq!(c.reason.as_deref(), Some("CreateFailed"));

    let wait = |n| {
        with_status(
            pod(n, 0, "web"),
            cstatus("dbg", waiting("ContainerCreating")),
        )
    };
    assert_eq!(phase_of(&j, vec![wait("a"), wait("b")], 1).phase, "Waiting");
    assert_eq!(
        phase_of(&j, vec![wait("a"), pod("b", 0, "web")], 1).phase,
        "Unknown"
    );

    let mut paused = j.clone();
    paused.spec.paused = Some(true);
    assert_eq!(phase_of(&paused, vec![wait("a")], 1).phase, "Paused");

    assert!(
        super::status(
            &job(&[], None, None),
            &arcs(vec![pod("a", 0, "web")]),
            at(0),
            at(1)
        )
        .is_err()
    );
    assert_eq!(phase_of(&job(&[], None, None), vec![], 1).phase, "Error");
}

#[test]
fn deadline_fails_an_active_job() {
    let mut j = job(&["dbg"], Some(1), None);
    j.spec.active_deadline_seconds = Some(20);
    let p = pod("a", 0, "web");
    assert_eq!(phase_of(&j, vec![p.clone()], 19).phase, "Unknown");
    let st = phase_of(&j, vec![p.clone()], 20);
    assert_eq!(st.phase, "Failed");
    assert_eq!(st.completion_time, Some(Time(at(20))));
    let c = st.conditions.unwrap();
    let c = c.iter().find(|c| c.type_ == "JobFailed").unwrap();
    assert_eq!(c.reason.as_deref(), Some("DeadlineExceeded"));
    assert_eq!(
        c.message.as_deref(),
        Some("EphemeralJob ns/ej was active longer than specified deadline")
    );
    assert_eq!(
        deadline_left(&j, at(0), at(5)),
        Some(std::time::Duration::from_secs(15))
    );
    assert_eq!(
        deadline_left(&j, at(0), at(50)),
        Some(std::time::Duration::ZERO)
    );
    assert_eq!(deadline_left(&job(&["d"], None, None), at(0), at(5)), None);
    // A paused job does not fail on its deadline.
    j.spec.paused = Some(true);
    assert_eq!(phase_of(&j, vec![p], 30).phase, "Paused");
}

#[test]
fn unchanged_conditions_keep_their_times() {
    let j = job(&["dbg"], None, None);
    let first = phase_of(&j, vec![], 1);
    let mut again = j.clone();
    again.status = Some(first.clone());
    let second = super::status(&again, &[], at(0), at(9)).unwrap();
    assert_eq!(first, second);
}

#[test]
fn ttl_after_finish() {
    let mut j = job(&["dbg"], None, None);
    assert_eq!(finished(&j, at(0)), None);
    j.status = Some(EphemeralJobStatus {
        completion_time: Some(Time(at(10))),
        ..Default::default()
    });
    assert_eq!(
        finished(&j, at(20)),
        Some(Finished::Wait(std::time::Duration::from_secs(1790)))
    );
    j.spec.ttl_seconds_after_finished = Some(5);
    assert_eq!(
        finished(&j, at(12)),
        Some(Finished::Wait(std::time::Duration::from_secs(3)))
    );
    assert_eq!(finished(&j, at(15)), Some(Finished::Delete));
    j.spec.ttl_seconds_after_finished = Some(0);
    assert_eq!(finished(&j, at(10)), Some(Finished::Delete));
}
