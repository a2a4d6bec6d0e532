use super::*;
use serde_json::json;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn crr(v: serde_json::Value) -> ContainerRecreateRequest {
    let mut base = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"podName": "p", "containers": [
            {"name": "app", "statusContext": {"containerID": "containerd://a1", "restartCount": 0}},
            {"name": "side", "statusContext": {"containerID": "containerd://s1", "restartCount": 0}}],
            "strategy": {"failurePolicy": "Fail"}},
        "status": {"phase": "Recreating"}});
    json_patch::merge(&mut base, &v);
    serde_json::from_value(base).unwrap()
}

fn rt(name: &str, id: &str, exited: bool, restarts: i32, started: &str) -> RuntimeView {
    RuntimeView {
        name: name.into(),
        full_id: format!("containerd://{id}"),
        exited,
        restart_count: restarts,
        started_at: Some(at(started)),
    }
}

fn phases(
    states: &[ContainerRecreateRequestContainerRecreateState],
) -> Vec<(String, String, Option<bool>)> {
    states
        .iter()
        .map(|s| (s.name.clone(), s.phase.clone(), s.is_killed))
        .collect()
}

fn p(name: &str, phase: &str, killed: Option<bool>) -> (String, String, Option<bool>) {
    (name.into(), phase.into(), killed)
}

#[test]
fn a_request_kills_one_container_per_pass_then_waits_for_ready_containers() {
    let now = at("2026-01-01T00:00:10Z");
    let c = crr(json!({"spec": {"strategy": {"minStartedSeconds": 5}}}));
    let old = [
        rt("app", "a1", false, 0, "2025-12-31T00:00:00Z"),
        rt("side", "s1", false, 0, "2025-12-31T00:00:00Z"),
    ];
    let states = current_states(&c, &old, now);
    assert_eq!(
        phases(&states),
        [p("app", "Pending", None), p("side", "Pending", None)]
    );
    // First pass: the states are written.
    let Decision::Patch(states) = decide(&c, &old, states) else {
        panic!()
    };
    let mut c = c;
    c.status.as_mut().unwrap().container_recreate_states = Some(states.clone());
    // Next pass: stop the first pending container.
    let Decision::Kill {
        index,
        full_id,
        states,
    } = decide(&c, &old, current_states(&c, &old, now))
    else {
        panic!()
    };
    assert_eq!((index, full_id.as_str()), (0, "containerd://a1"));
    let states = after_kill(states, index, None);
    assert_eq!(
        phases(&states),
        [
            p("app", "Recreating", Some(true)),
            p("side", "Pending", None)
        ]
    );
    c.status.as_mut().unwrap().container_recreate_states = Some(states);
    // Not ordered: the next pending one goes while the first restarts.
    let restarting = [
        rt("app", "a1", true, 0, "2025-12-31T00:00:00Z"),
        old[1].clone(),
    ];
    let Decision::Kill { index, .. } =
        decide(&c, &restarting, current_states(&c, &restarting, now))
    else {
        panic!()
    };
    assert_eq!(index, 1);
    // Ordered: it waits for the first.
    let mut ordered = c.clone();
    ordered.spec.strategy.as_mut().unwrap().ordered_recreate = Some(true);
    assert_eq!(
        decide(
            &ordered,
            &restarting,
            current_states(&ordered, &restarting, now)
        ),
        Decision::Wait(Some(Duration::from_secs(5)))
    );
}

#[test]
fn a_recreated_container_succeeds_once_the_manager_reports_it_ready_past_min_started() {
    let sync = r#"[{"name":"app","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#;
    let c = crr(
        json!({"metadata": {"annotations": {"crr.apps.kruise.io/sync-container-statuses": sync}},
        "spec": {"strategy": {"minStartedSeconds": 5}},
        "status": {"containerRecreateStates": [
            {"name": "app", "phase": "Recreating", "isKilled": true},
            {"name": "side", "phase": "Succeeded", "isKilled": true}]}}),
    );
    let new = [
        rt("app", "a2", false, 1, "2026-01-01T00:00:04Z"),
        rt("side", "s2", false, 1, "2026-01-01T00:00:00Z"),
    ];
    let young = current_states(&c, &new, at("2026-01-01T00:00:08Z"));
    assert_eq!(
        phases(&young),
        [
            p("app", "Recreating", Some(true)),
            p("side", "Succeeded", Some(true))
        ]
    );
    let grown = current_states(&c, &new, at("2026-01-01T00:00:10Z"));
    assert_eq!(
        phases(&grown),
        [
            p("app", "Succeeded", Some(true)),
            p("side", "Succeeded", Some(true))
        ]
    );
    let mut done = c.clone();
    done.status.as_mut().unwrap().container_recreate_states = Some(grown.clone());
    assert_eq!(decide(&done, &new, grown), Decision::Complete);
    // The manager's copy must be of that very container.
    let other = [
        rt("app", "a3", false, 2, "2026-01-01T00:00:04Z"),
        new[1].clone(),
    ];
    assert_eq!(
        current_states(&c, &other, at("2026-01-01T00:01:00Z"))[0].phase,
        "Recreating"
    );
}

#[test]
fn force_missing_and_failed_containers() {
    let now = at("2026-01-01T00:00:10Z");
    let c = crr(json!({"spec": {"strategy": {"forceRecreate": true}},
        "status": {"containerRecreateStates": [{"name": "app", "phase": "Pending"}]}}));
    // Force: moved on but never killed → still pending (to be killed).
    let moved = [rt("app", "a9", false, 3, "2026-01-01T00:00:00Z")];
    let states = current_states(&c, &moved, now);
    assert_eq!(phases(&states)[0], p("app", "Pending", None));
    assert_eq!(
        states[1].message.as_deref(),
        Some("not found container on Node")
    );
    // A failed container ends a Fail request, not an Ignore one.
    let failed = after_kill(states.clone(), 0, Some("boom".into()));
    assert_eq!(
        failed[0].message.as_deref(),
        Some("kill container error: boom")
    );
    let mut f = c.clone();
    f.status.as_mut().unwrap().container_recreate_states = Some(failed.clone());
    assert_eq!(
        decide(&f, &moved, current_states(&f, &moved, now)),
        Decision::Complete
    );
    f.spec.strategy.as_mut().unwrap().failure_policy = Some("Ignore".into());
    // Ignore: the missing container is next, and it is not on the node: wait.
    assert_eq!(
        decide(&f, &moved, current_states(&f, &moved, now)),
        Decision::Wait(None)
    );
}

#[test]
fn requests_are_ordered_by_phase_then_age_and_need_one_runtime() {
    let mk = |name: &str, phase: &str, created: &str| {
        Arc::new(crr(
            json!({"metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": phase}}),
        ))
    };
    let mut list = vec![
        mk("new", "", "2026-01-01T00:00:00Z"),
        mk("pending2", "Pending", "2026-01-01T00:00:02Z"),
        mk("pending1", "Pending", "2026-01-01T00:00:01Z"),
        mk("recreating", "Recreating", "2026-01-01T00:00:09Z"),
    ];
    sort_requests(&mut list);
    let names: Vec<_> = list
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["recreating", "pending1", "pending2", "new"]);

    assert_eq!(runtime_of(&crr(json!({}))), Ok("containerd".into()));
    let mixed = crr(json!({"spec": {"containers": [
        {"name": "a", "statusContext": {"containerID": "containerd://1", "restartCount": 0}},
        {"name": "b", "statusContext": {"containerID": "cri-o://2", "restartCount": 0}}]}}));
    assert_eq!(
        runtime_of(&mixed).unwrap_err(),
        "has different runtime types containerd, cri-o in Pod"
    );
    let none = crr(json!({"spec": {"containers": [{"name": "a"}]}}));
    assert_eq!(
        runtime_of(&none).unwrap_err(),
        "no statusContext or empty containerID in a container"
    );
}

#[test]
fn the_unready_gate_waits_for_the_manager_then_the_grace_period() {
    let c = crr(json!({"spec": {"strategy": {"unreadyGracePeriodSeconds": 3}}}));
    assert_eq!(
        unready_gate(&crr(json!({})), at("2026-01-01T00:00:00Z")),
        UnreadyGate::Open
    );
    assert_eq!(
        unready_gate(&c, at("2026-01-01T00:00:00Z")),
        UnreadyGate::WaitForManager
    );
    let mut a = c.clone();
    a.metadata.annotations = Some(
        [(
            keys::CRR_UNREADY_ACQUIRED.to_string(),
            "2026-01-01T00:00:01Z".to_string(),
        )]
        .into(),
    );
    assert_eq!(
        unready_gate(&a, at("2026-01-01T00:00:02Z")),
        UnreadyGate::Wait(Duration::from_millis(2100))
    );
    assert_eq!(
        unready_gate(&a, at("2026-01-01T00:00:04Z")),
        UnreadyGate::Open
    );
    a.metadata.annotations = Some(
        [(
            keys::CRR_UNREADY_ACQUIRED.to_string(),
            "yesterday".to_string(),
        )]
        .into(),
    );
    assert!(matches!(
        unready_gate(&a, at("2026-01-01T00:00:04Z")),
        UnreadyGate::Invalid(_)
    ));
}
