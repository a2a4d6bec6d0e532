use super::*;
use k8s_openapi::api::core::v1::{ExecAction, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{ContainerProbe, PodProbe};

fn exec(cmd: &str) -> ContainerProbeSpec {
    ContainerProbeSpec {
        probe: Probe {
            exec: Some(ExecAction {
                command: Some(vec!["sh".into(), "-c".into(), cmd.into()]),
            }),
            ..Default::default()
        },
    }
}

fn pod(uid: &str, probes: &[(&str, &str, ContainerProbeSpec)]) -> PodProbe {
    PodProbe {
        name: format!("pod-{uid}"),
        namespace: "ns".into(),
        uid: uid.into(),
        ip: "10.0.0.1".into(),
        probes: Some(
            probes
                .iter()
                .map(|(name, container, spec)| ContainerProbe {
                    name: (*name).into(),
                    container_name: (*container).into(),
                    probe: spec.clone(),
                })
                .collect(),
        ),
    }
}

fn spec(pods: Vec<PodProbe>) -> NodePodProbeSpec {
    NodePodProbeSpec {
        pod_probes: Some(pods),
    }
}

fn key(uid: &str, probe: &str) -> ProbeKey {
    ProbeKey {
        pod_namespace: "ns".into(),
        pod_name: format!("pod-{uid}"),
        pod_uid: uid.into(),
        pod_ip: "10.0.0.1".into(),
        container_name: "main".into(),
        probe_name: probe.into(),
    }
}

fn ts(s: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(s).unwrap()
}

#[test]
fn workers_start_update_and_stop_with_the_spec() {
    let s = spec(vec![
        pod(
            "u1",
            &[
                ("ppm#a", "main", exec("true")),
                ("ppm#b", "main", exec("true")),
            ],
        ),
        pod("u2", &[("ppm#a", "main", exec("true"))]),
    ]);
    let desired = desired_probes(&s);
    assert_eq!(desired.len(), 3);
    let changes = plan_workers(&desired, &HashMap::new());
    assert!(changes.iter().all(|c| matches!(c, WorkerChange::Start(..))));
    assert_eq!(changes.len(), 3);

    // u2 gone, u1/a changed, u1/b unchanged.
    let mut running: HashMap<_, _> = desired.into_iter().collect();
    let s2 = spec(vec![pod(
        "u1",
        &[
            ("ppm#a", "main", exec("false")),
            ("ppm#b", "main", exec("true")),
        ],
    )]);
    let changes = plan_workers(&desired_probes(&s2), &running);
    assert_eq!(
        changes,
        vec![
            WorkerChange::Update(key("u1", "ppm#a"), exec("false")),
            WorkerChange::Stop(key("u2", "ppm#a")),
        ]
    );
    // Nothing changes when the spec is the same.
    running.remove(&key("u2", "ppm#a"));
    running.insert(key("u1", "ppm#a"), exec("false"));
    assert!(plan_workers(&desired_probes(&s2), &running).is_empty());
    // A different pod IP is a different worker.
    let mut moved = pod("u1", &[("ppm#b", "main", exec("true"))]);
    moved.ip = "10.0.0.2".into();
    let changes = plan_workers(&desired_probes(&spec(vec![moved])), &running);
    assert!(matches!(&changes[0], WorkerChange::Start(k, _) if k.pod_ip == "10.0.0.2"));
    assert_eq!(changes.len(), 3);
}

#[test]
fn a_key_listed_twice_ends_with_the_later_spec() {
    let s = spec(vec![pod(
        "u1",
        &[("p", "main", exec("one")), ("p", "main", exec("two"))],
    )]);
    let changes = plan_workers(&desired_probes(&s), &HashMap::new());
    assert_eq!(
        changes,
        vec![
            WorkerChange::Start(key("u1", "p"), exec("one")),
            WorkerChange::Update(key("u1", "p"), exec("two")),
        ]
    );
}

#[test]
fn timings_have_a_minimum_of_one_second() {
    let mut p = Probe::default();
    assert_eq!(period(&p), Duration::from_secs(1));
    assert_eq!(timeout(&p), Duration::from_secs(1));
    p.period_seconds = Some(-3);
    p.timeout_seconds = Some(0);
    assert_eq!(period(&p), Duration::from_secs(1));
    assert_eq!(timeout(&p), Duration::from_secs(1));
    p.period_seconds = Some(10);
    p.timeout_seconds = Some(3);
    assert_eq!(period(&p), Duration::from_secs(10));
    assert_eq!(timeout(&p), Duration::from_secs(3));
    assert!(jitter_first_probe(
        Duration::from_secs(10),
        Duration::from_secs(9)
    ));
    assert!(!jitter_first_probe(
        Duration::from_secs(10),
        Duration::from_secs(10)
    ));
}

#[test]
fn initial_delay_counts_whole_seconds_since_start() {
    const S: i64 = 1_000_000_000;
    let mut p = Probe::default();
    // Default and 0 mean 1 s.
    assert!(!initial_delay_passed(&p, 100 * S, 100 * S + S - 1));
    assert!(initial_delay_passed(&p, 100 * S, 101 * S));
    p.initial_delay_seconds = Some(5);
    assert!(!initial_delay_passed(&p, 100 * S, 104 * S + S / 2));
    assert!(initial_delay_passed(&p, 100 * S, 105 * S));
    // A container that never started (0) is long past any delay.
    assert!(initial_delay_passed(&p, 0, 100 * S));
}

#[test]
fn a_new_container_resets_the_result_and_a_stopped_one_fails() {
    let mut w = WorkerState::default();
    assert_eq!(
        w.observe_container("c1", true, "main"),
        vec![ResultOp::Set {
            container_id: "c1".into(),
            state: probe_state::UNKNOWN,
            message: String::new()
        }]
    );
    assert!(w.observe_container("c1", true, "main").is_empty());
    assert_eq!(
        w.observe_container("c2", false, "main"),
        vec![
            ResultOp::Remove("c1".into()),
            ResultOp::Set {
                container_id: "c2".into(),
                state: probe_state::UNKNOWN,
                message: String::new()
            },
            ResultOp::Set {
                container_id: "c2".into(),
                state: probe_state::FAILED,
                message: "Container(main) is Non-running".into()
            },
        ]
    );
    assert_eq!(w.container_id, "c2");
}

#[test]
fn thresholds_count_runs_of_the_same_result() {
    let p = Probe {
        failure_threshold: Some(3),
        success_threshold: Some(2),
        ..Default::default()
    };
    let mut w = WorkerState::default();
    assert!(!w.record(&p, probe_state::SUCCEEDED));
    assert!(w.record(&p, probe_state::SUCCEEDED));
    assert!(w.record(&p, probe_state::SUCCEEDED));
    assert!(!w.record(&p, probe_state::FAILED));
    assert!(!w.record(&p, probe_state::FAILED));
    assert!(w.record(&p, probe_state::FAILED));
    // A success breaks the run of failures.
    assert!(!w.record(&p, probe_state::SUCCEEDED));
    assert!(!w.record(&p, probe_state::FAILED));
    // Unset or non-positive thresholds are 1.
    let mut w = WorkerState::default();
    let p = Probe {
        failure_threshold: Some(0),
        ..Default::default()
    };
    assert!(w.record(&p, probe_state::FAILED));
    assert!(w.record(&p, probe_state::SUCCEEDED));
}

#[test]
fn only_a_changed_action_resets_the_result() {
    let mut w = WorkerState::default();
    let old = exec("true").probe;
    let mut timing = old.clone();
    timing.period_seconds = Some(30);
    // No container seen yet: nothing to reset.
    assert_eq!(w.on_spec_change(&old, &exec("false").probe), None);
    w.observe_container("c1", true, "main");
    assert_eq!(w.on_spec_change(&old, &timing), None);
    let tcp = Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(80),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        w.on_spec_change(&old, &tcp),
        Some(ResultOp::Set {
            container_id: "c1".into(),
            state: probe_state::UNKNOWN,
            message: String::new()
        })
    );
}

#[test]
fn messages_are_cut_at_1024_bytes_on_a_char_boundary() {
    assert_eq!(truncate_message("a".repeat(1024)).len(), 1024);
    assert_eq!(truncate_message("a".repeat(5000)).len(), 1024);
    // 1025 chars, the last multi-byte one straddling the cut.
    let s = format!("{}é{}", "a".repeat(1023), "b".repeat(10));
    let t = truncate_message(s);
    assert_eq!(t, "a".repeat(1023));
    // Fewer than 1025 chars: kept whole even when longer than 1024 bytes (rune count, as Go).
    let wide = "é".repeat(1000);
    assert_eq!(truncate_message(wide.clone()), wide);
}

#[test]
fn results_are_stored_when_they_change_or_age() {
    let r = Results::default();
    let k = key("u1", "p");
    assert!(r.set("c1", &k, probe_state::UNKNOWN, "", ts(1000)));
    assert!(!r.set("c1", &k, probe_state::UNKNOWN, "", ts(1001)));
    assert!(r.set("c1", &k, probe_state::SUCCEEDED, "", ts(1002)));
    assert!(r.set("c1", &k, probe_state::SUCCEEDED, "out", ts(1003)));
    assert!(!r.set("c1", &k, probe_state::SUCCEEDED, "out", ts(1602)));
    assert!(r.set("c1", &k, probe_state::SUCCEEDED, "out", ts(1603)));
    assert_eq!(r.list()[0].last_probe_time, ts(1603));
    // A second probe of the same container keeps its own result.
    let k2 = key("u1", "q");
    assert!(r.set("c1", &k2, probe_state::FAILED, "", ts(1604)));
    assert!(!r.set("c1", &k, probe_state::SUCCEEDED, "out", ts(1605)));
    assert_eq!(r.list().len(), 2);
    r.remove("c1", "p");
    assert_eq!(r.list().len(), 1);
    r.remove("c1", "q");
    assert!(r.list().is_empty());
}

fn state(name: &str, st: &str, probe: i64, transition: i64, msg: &str) -> ContainerProbeState {
    ContainerProbeState {
        name: name.into(),
        state: st.into(),
        last_probe_time: Some(Time(ts(probe))),
        last_transition_time: Some(Time(ts(transition))),
        message: (!msg.is_empty()).then(|| msg.into()),
    }
}

fn update(uid: &str, probe: &str, st: &'static str, at: jiff::Timestamp, msg: &str) -> Update {
    Update {
        key: key(uid, probe),
        state: st,
        message: msg.into(),
        last_probe_time: at,
    }
}

#[test]
fn status_keeps_valid_states_and_applies_results() {
    let s = spec(vec![
        pod(
            "u1",
            &[("a", "main", exec("true")), ("b", "main", exec("true"))],
        ),
        pod("u3", &[("a", "main", exec("true"))]),
    ]);
    let current = NodePodProbeStatus {
        pod_probe_statuses: Some(vec![
            PodProbeStatus {
                name: "pod-u1".into(),
                namespace: "ns".into(),
                uid: "u1".into(),
                probe_states: Some(vec![
                    state("a", probe_state::SUCCEEDED, 10, 5, "ok"),
                    state("gone", probe_state::FAILED, 10, 5, ""),
                ]),
            },
            PodProbeStatus {
                name: "pod-u2".into(),
                namespace: "ns".into(),
                uid: "u2".into(),
                probe_states: Some(vec![state("a", probe_state::SUCCEEDED, 10, 5, "")]),
            },
        ]),
    };
    let now = jiff::Timestamp::from_nanosecond(100_700_000_000).unwrap();
    let updates = vec![
        // Same state: transition time kept, probe time and message replaced.
        update("u1", "a", probe_state::SUCCEEDED, now, ""),
        // New state of a known pod.
        update("u1", "b", probe_state::FAILED, ts(99), "boom"),
        // A new pod.
        update("u3", "a", probe_state::UNKNOWN, ts(98), ""),
        // Not in the spec: ignored.
        update("u2", "a", probe_state::FAILED, ts(98), ""),
    ];
    let got = rebuild_status(&s, Some(&current), &updates, now);
    let want = NodePodProbeStatus {
        pod_probe_statuses: Some(vec![
            PodProbeStatus {
                name: "pod-u1".into(),
                namespace: "ns".into(),
                uid: "u1".into(),
                probe_states: Some(vec![
                    state("a", probe_state::SUCCEEDED, 100, 5, ""),
                    state("b", probe_state::FAILED, 99, 100, "boom"),
                ]),
            },
            PodProbeStatus {
                name: "pod-u3".into(),
                namespace: "ns".into(),
                uid: "u3".into(),
                probe_states: Some(vec![state("a", probe_state::UNKNOWN, 98, 100, "")]),
            },
        ]),
    };
    assert_eq!(got, want);
    assert!(status_changed(Some(&current), &got));
    // Written and read back, the same results change nothing (no write loop).
    assert!(!status_changed(
        Some(&got),
        &rebuild_status(&s, Some(&got), &updates, now)
    ));
    // A changed state moves the transition time.
    let later = ts(200);
    let flipped = rebuild_status(
        &s,
        Some(&got),
        &[update("u1", "a", probe_state::FAILED, later, "x")],
        later,
    );
    let a = &flipped.pod_probe_statuses.as_ref().unwrap()[0]
        .probe_states
        .as_ref()
        .unwrap()[0];
    assert_eq!(a, &state("a", probe_state::FAILED, 200, 200, "x"));
}

#[test]
fn an_empty_status_stays_empty() {
    let s = spec(vec![]);
    let got = rebuild_status(&s, None, &[], ts(1));
    assert_eq!(got, NodePodProbeStatus::default());
    assert!(!status_changed(None, &got));
    let empty_list = NodePodProbeStatus {
        pod_probe_statuses: Some(vec![]),
    };
    assert!(!status_changed(Some(&empty_list), &got));
    // Every state invalid: the pod entry is dropped.
    let current = NodePodProbeStatus {
        pod_probe_statuses: Some(vec![PodProbeStatus {
            uid: "u1".into(),
            probe_states: Some(vec![state("a", probe_state::FAILED, 1, 1, "")]),
            ..Default::default()
        }]),
    };
    assert_eq!(rebuild_status(&s, Some(&current), &[], ts(2)), got);
    assert!(status_changed(Some(&current), &got));
}

#[test]
fn event_reasons() {
    assert_eq!(event_reason(probe_state::SUCCEEDED), "KruiseProbeSucceeded");
    assert_eq!(event_reason(probe_state::FAILED), "KruiseProbeFailed");
    assert_eq!(event_reason(probe_state::UNKNOWN), "KruiseProbeFailed");
}
