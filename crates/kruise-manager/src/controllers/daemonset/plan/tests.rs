use super::*;
use kruise_api::pod::CachedPod;
use serde_json::json;

fn node(name: &str, labels: serde_json::Value, taints: serde_json::Value) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}),
    )
    .unwrap()
}

fn spec(v: serde_json::Value) -> PodSpec {
    let mut s: PodSpec = serde_json::from_value(v).unwrap();
    add_daemon_tolerations(&mut s);
    s
}

fn pod(name: &str, hash: &str, node: &str, ready: bool, created: &str) -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {HASH_LABEL: hash}, "creationTimestamp": created},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    }))
    .unwrap()
}

fn now() -> jiff::Timestamp {
    "2026-01-01T00:01:00Z".parse().unwrap()
}

/// `plan_node`'s inputs for a node that should run a daemon pod, in a rollout to hash `h`
/// without surge.
fn eligible() -> NodeInputs<'static> {
    NodeInputs {
        should_run: true,
        should_continue: true,
        surge: false,
        hash: "h",
        min_ready_seconds: 0,
        now: now(),
        backoff: None,
    }
}

#[test]
fn daemon_tolerations_are_added_once_in_order() {
    let mut s: PodSpec = serde_json::from_value(json!({"containers": [], "hostNetwork": true,
        "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]}))
        .unwrap();
    add_daemon_tolerations(&mut s);
    add_daemon_tolerations(&mut s);
    let keys: Vec<&str> = s
        .tolerations
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.key.as_deref().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/unschedulable",
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/network-unavailable",
        ]
    );
    assert_eq!(s.tolerations.as_ref().unwrap()[0].toleration_seconds, None);
}

#[test]
fn eligibility_follows_selector_affinity_and_taints() {
    let plain = spec(json!({"containers": []}));
    let n = node("a", json!({"zone": "z1", "rank": "5"}), json!([]));
    assert_eq!(should_run(&n, &plain), (true, true));
    // cordon / unschedulable taint is tolerated by default
    let cordoned = node(
        "a",
        json!({}),
        json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
    );
    assert_eq!(should_run(&cordoned, &plain), (true, true));
    // an untolerated NoSchedule taint keeps existing pods, NoExecute does not
    let no_sched = node(
        "a",
        json!({}),
        json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
    );
    assert_eq!(should_run(&no_sched, &plain), (false, true));
    let no_exec = node(
        "a",
        json!({}),
        json!([{"key": "dedicated", "effect": "NoExecute"}]),
    );
    assert_eq!(should_run(&no_exec, &plain), (false, false));
    let tolerant = spec(json!({"containers": [], "tolerations": [{"operator": "Exists"}]}));
    assert_eq!(should_run(&no_exec, &tolerant), (true, true));
    // nodeSelector and required affinity
    let sel = spec(json!({"containers": [], "nodeSelector": {"zone": "z1"}}));
    assert_eq!(should_run(&n, &sel), (true, true));
    assert_eq!(
        should_run(&node("b", json!({"zone": "z2"}), json!([])), &sel),
        (false, false)
    );
    let aff = spec(
        json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "rank", "operator": "Gt", "values": ["3"]}]},
                              {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]}]}}}}),
    );
    assert_eq!(should_run(&n, &aff), (true, true));
    assert_eq!(
        should_run(&node("b", json!({"rank": "1"}), json!([])), &aff),
        (false, false)
    );
    assert_eq!(
        should_run(&node("other", json!({}), json!([])), &aff),
        (true, true)
    );
    // only empty terms: no match
    let empty = spec(
        json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}]}}}}),
    );
    assert_eq!(should_run(&n, &empty), (false, false));
    let pinned = spec(json!({"containers": [], "nodeName": "b"}));
    assert_eq!(should_run(&n, &pinned), (false, false));
}

#[test]
fn pods_are_bound_by_affinity_and_found_again() {
    let mut s: PodSpec = serde_json::from_value(json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "Exists"}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}})).unwrap();
    bind_to_node(&mut s, "n1", true);
    let terms = &s
        .affinity
        .as_ref()
        .unwrap()
        .node_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
    assert!(
        s.affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .preferred_during_scheduling_ignored_during_execution
            .is_some()
    );
    let p = CachedPod {
        spec: Some((&s).into()),
        ..Default::default()
    };
    assert_eq!(target_node(&p).as_deref(), Some("n1"));
    let mut direct = PodSpec::default();
    bind_to_node(&mut direct, "n2", false);
    assert_eq!(direct.node_name.as_deref(), Some("n2"));
}

#[test]
fn a_node_keeps_its_oldest_pod() {
    let a = pod("a", "h", "n", true, "2026-01-01T00:00:10Z");
    let b = pod("b", "h", "n", true, "2026-01-01T00:00:05Z");
    let plan = plan_node(&[&a, &b], &eligible());
    assert_eq!(plan.delete, vec!["a".to_owned()]);
    assert!(!plan.create);
    assert!(plan_node(&[], &eligible()).create);
    // not eligible any more: everything goes
    let plan = plan_node(
        &[&a, &b],
        &NodeInputs {
            should_run: false,
            should_continue: false,
            ..eligible()
        },
    );
    assert_eq!(plan.delete.len(), 2);
    // NoSchedule-only: kept, none created
    assert_eq!(
        plan_node(
            &[&a],
            &NodeInputs {
                should_run: false,
                ..eligible()
            }
        ),
        NodePlan::default()
    );
}

#[test]
fn failed_pods_are_deleted_unless_the_node_backs_off() {
    let mut f = pod("f", "h", "n", false, "2026-01-01T00:00:10Z");
    f.status.as_mut().unwrap().phase = Some("Failed".into());
    let plan = plan_node(&[&f], &eligible());
    assert_eq!(plan.failed, vec!["f".to_owned()]);
    let plan = plan_node(
        &[&f],
        &NodeInputs {
            backoff: Some(Duration::from_secs(4)),
            ..eligible()
        },
    );
    assert!(plan.failed.is_empty());
    assert_eq!(plan.backoff_wait, Some(Duration::from_secs(4)));
}

#[test]
fn surge_keeps_old_until_new_is_available() {
    let old = pod("old", "h1", "n", true, "2026-01-01T00:00:00Z");
    let new = pod("new", "h2", "n", false, "2026-01-01T00:00:30Z");
    assert!(
        plan_node(
            &[&old, &new],
            &NodeInputs {
                surge: true,
                hash: "h2",
                ..eligible()
            }
        )
        .delete
        .is_empty()
    );
    let new = pod("new", "h2", "n", true, "2026-01-01T00:00:30Z");
    assert_eq!(
        plan_node(
            &[&old, &new],
            &NodeInputs {
                surge: true,
                hash: "h2",
                ..eligible()
            }
        )
        .delete,
        vec!["old".to_owned()]
    );
    // ready for 60 s, minReadySeconds 300: wait
    let plan = plan_node(
        &[&old, &new],
        &NodeInputs {
            surge: true,
            hash: "h2",
            min_ready_seconds: 300,
            ..eligible()
        },
    );
    assert!(plan.delete.is_empty());
    assert_eq!(plan.wait, Some(Duration::from_secs(240)));
}

#[test]
fn partition_limits_creation_only_with_partitioned_scaling() {
    let nodes = vec!["c".to_owned(), "a".to_owned(), "b".to_owned()];
    assert_eq!(
        nodes_needing_pods(0, 3, 1, false, nodes.clone()),
        ["a", "b", "c"]
    );
    assert_eq!(nodes_needing_pods(0, 3, 1, true, nodes.clone()), ["a", "b"]);
    assert!(nodes_needing_pods(0, 3, 5, true, nodes).is_empty());
}

#[test]
fn rollout_visits_nodes_by_descending_name_within_partition() {
    let p1 = pod("p1", "old", "n1", true, "2026-01-01T00:00:00Z");
    let p2 = pod("p2", "old", "n2", true, "2026-01-01T00:00:00Z");
    let p3 = pod("p3", "old", "n3", true, "2026-01-01T00:00:00Z");
    let mut map: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
    map.insert("n1".into(), vec![&p1]);
    map.insert("n2".into(), vec![&p2]);
    map.insert("n3".into(), vec![&p3]);
    assert_eq!(nodes_to_update(&map, "new", 1, None), ["n3", "n2"]);
    let only_n1 = |n: &str| n == "n1";
    assert_eq!(nodes_to_update(&map, "new", 0, Some(&only_n1)), ["n1"]);
    // one at a time with maxUnavailable 1
    let nodes = nodes_to_update(&map, "new", 0, None);
    assert_eq!(
        old_pods_to_replace(&nodes, &map, "new", 1, 0, now()),
        ["p3"]
    );
    assert_eq!(
        old_pods_to_replace(&nodes, &map, "new", 2, 0, now()),
        ["p3", "p2"]
    );
    // an unavailable old pod is replaced regardless of the budget
    let sick = pod("p1", "old", "n1", false, "2026-01-01T00:00:00Z");
    map.insert("n1".into(), vec![&sick]);
    assert_eq!(
        old_pods_to_replace(&nodes, &map, "new", 1, 0, now()),
        ["p1", "p3"]
    );
    // surge: new pods beside old ones, up to maxSurge
    map.insert("n1".into(), vec![&p1]);
    let (delete, create) = surge_plan(&nodes, &map, "new", 1, 0, now());
    assert!(delete.is_empty());
    assert_eq!(create, ["n3"]);
}

#[test]
fn status_counts_the_oldest_pod_per_node() {
    let a = pod("a", "h", "n1", true, "2026-01-01T00:00:00Z");
    let b = pod("b", "old", "n2", false, "2026-01-01T00:00:00Z");
    let c = pod("c", "h", "n3", true, "2026-01-01T00:00:00Z");
    let mut map: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
    map.insert("n1".into(), vec![&a]);
    map.insert("n2".into(), vec![&b]);
    map.insert("n3".into(), vec![&c]);
    let nodes = vec![
        ("n1".to_owned(), true),
        ("n2".to_owned(), true),
        ("n3".to_owned(), false),
        ("n4".to_owned(), true),
    ];
    let st = status_counts(&nodes, &map, "h", 0, now());
    assert_eq!(st.desired_number_scheduled, 3);
    assert_eq!(st.current_number_scheduled, 2);
    assert_eq!(st.number_misscheduled, 1);
    assert_eq!(st.number_ready, 1);
    assert_eq!(st.number_available, Some(1));
    assert_eq!(st.updated_number_scheduled, 1);
    assert_eq!(st.number_unavailable, Some(2));
    assert_eq!(st.update_revision.as_deref(), Some("h"));
}
