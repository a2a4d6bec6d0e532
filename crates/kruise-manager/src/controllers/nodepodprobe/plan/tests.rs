use std::sync::Arc;

use serde_json::json;

use super::*;

fn node(extra: serde_json::Value) -> Node {
    let mut v = json!({"metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    if let (Some(a), Some(b)) = (v.as_object_mut(), extra.as_object()) {
        for (k, val) in b {
            a.insert(k.clone(), val.clone());
        }
    }
    serde_json::from_value(v).unwrap()
}

fn pod(labels: serde_json::Value, conditions: serde_json::Value) -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": labels,
            "annotations": {"keep": "1"}},
        "spec": {"nodeName": "n1", "containers": []},
        "status": {"phase": "Running", "conditions": conditions},
    }))
    .unwrap()
}

fn marker(probes: serde_json::Value) -> Arc<PodProbeMarker> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "probes": probes},
        }))
        .unwrap(),
    )
}

fn healthy() -> Arc<PodProbeMarker> {
    marker(json!([{
        "name": "healthy", "containerName": "main", "probe": {},
        "podConditionType": "game.kruise.io/healthy",
        "markerPolicy": [
            {"state": "Succeeded", "labels": {"nginx": "healthy"},
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}},
            {"state": "Failed", "labels": {"nginx": ""},
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}]
    }, {
        "name": "check", "containerName": "main", "probe": {},
        "podConditionType": "game.kruise.io/healthy"
    }]))
}

fn status(states: serde_json::Value) -> PodProbeStatus {
    serde_json::from_value(
        json!({"name": "p", "namespace": "ns", "uid": "u1", "probeStates": states}),
    )
    .unwrap()
}

#[test]
fn node_steps_as_openkruise() {
    assert_eq!(node_step(&node(json!({})), false, false), NodeStep::Create);
    assert_eq!(node_step(&node(json!({})), true, false), NodeStep::Sync);
    assert_eq!(node_step(&node(json!({})), false, true), NodeStep::Nothing);
    let not_ready =
        node(json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}));
    assert!(!is_node_ready(&not_ready));
    assert_eq!(node_step(&not_ready, false, false), NodeStep::Nothing);
    assert_eq!(node_step(&not_ready, true, false), NodeStep::Sync);
    let deleting = node(json!({"metadata": {"name": "n1",
        "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x"]}}));
    assert_eq!(node_step(&deleting, true, false), NodeStep::Delete);
    assert_eq!(node_step(&deleting, false, false), NodeStep::Nothing);
}

#[test]
fn live_spec_keeps_active_pods_with_their_uid() {
    let spec: NodePodProbeSpec = serde_json::from_value(json!({"podProbes": [
        {"name": "p", "namespace": "ns", "uid": "u1", "IP": ""},
        {"name": "p2", "namespace": "ns", "uid": "old", "IP": ""},
        {"name": "gone", "namespace": "ns", "uid": "u3", "IP": ""},
        {"name": "done", "namespace": "ns", "uid": "u4", "IP": ""}]}))
    .unwrap();
    let lookup = |_: &str, name: &str| -> Option<Arc<CachedPod>> {
        let (uid, phase) = match name {
            "p" => ("u1", "Running"),
            "p2" => ("new", "Running"),
            "done" => ("u4", "Succeeded"),
            _ => return None,
        };
        Some(Arc::new(
            serde_json::from_value(
                json!({"metadata": {"name": name, "namespace": "ns", "uid": uid},
            "status": {"phase": phase}}),
            )
            .unwrap(),
        ))
    };
    let (out, live) = live_spec(&spec, lookup);
    assert_eq!(out.pod_probes.as_ref().unwrap().len(), 1);
    assert_eq!(live.into_iter().collect::<Vec<_>>(), ["u1"]);
    let (out, live) = live_spec(&spec, |_: &str, _: &str| None::<Arc<CachedPod>>);
    assert_eq!(out, NodePodProbeSpec::default());
    assert!(live.is_empty());
}

#[test]
fn a_success_sets_the_condition_and_the_matched_policy_and_clears_the_opposite() {
    let p = pod(json!({"app": "web"}), json!([]));
    let s = status(
        json!([{"name": "m#healthy", "state": "Succeeded", "message": "ok",
        "lastProbeTime": "2026-01-01T00:00:01Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
    );
    let m = healthy();
    let marks = pod_marks(&p, &s, |_| Some(m.clone()));
    assert_eq!(marks.conditions.len(), 1);
    let c = &marks.conditions[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str()),
        ("game.kruise.io/healthy", "True")
    );
    assert_eq!(c.message.as_deref(), Some("ok"));
    assert!(c.last_probe_time.is_some() && c.last_transition_time.is_some());
    assert_eq!(
        marks.labels,
        BTreeMap::from([("nginx".to_owned(), Some("healthy".to_owned()))])
    );
    assert_eq!(
        marks.annotations,
        BTreeMap::from([(
            "controller.kubernetes.io/pod-deletion-cost".to_owned(),
            Some("10".to_owned())
        )])
    );
    // Applied, nothing is left to change.
    let done = marks.apply(&p);
    assert!(pod_marks(&done, &s, |_| Some(m.clone())).is_empty());
    assert_eq!(done.metadata.annotations.as_ref().unwrap()["keep"], "1");
}

#[test]
fn a_failure_sets_false_and_the_failed_policy() {
    let p = pod(
        json!({"nginx": "healthy"}),
        json!([{"type": "game.kruise.io/healthy", "status": "True", "message": "ok"}]),
    );
    let s = status(json!([{"name": "m#healthy", "state": "Failed", "message": "boom"}]));
    let m = healthy();
    let marks = pod_marks(&p, &s, |_| Some(m.clone()));
    assert_eq!(marks.conditions[0].status.as_str(), "False");
    assert_eq!(
        marks.labels,
        BTreeMap::from([("nginx".to_owned(), Some(String::new()))])
    );
    let done = marks.apply(&p);
    let conds = done.status.as_ref().unwrap().conditions.as_ref().unwrap();
    assert_eq!(conds.len(), 1, "the condition is replaced, not added");
    assert_eq!(conds[0].message.as_deref(), Some("boom"));
}

#[test]
fn unknown_state_clears_the_last_policy_and_reports_false() {
    let p = pod(json!({}), json!([]));
    let m = marker(json!([{
        "name": "x", "containerName": "c", "probe": {}, "podConditionType": "t",
        "markerPolicy": [{"state": "Succeeded", "labels": {"a": "1"}},
                         {"state": "Failed", "labels": {"b": "1"}}]}]));
    let pod_with_b = pod(json!({"a": "1", "b": "1"}), json!([]));
    let s = status(json!([{"name": "m#x", "state": "Unknown"}]));
    let marks = pod_marks(&pod_with_b, &s, |_| Some(m.clone()));
    // Both policies are "opposite"; the later one is taken, as OpenKruise's loop.
    assert_eq!(marks.labels, BTreeMap::from([("b".to_owned(), None)]));
    assert_eq!(marks.conditions[0].status.as_str(), "False");
    // The same status and message: no condition change.
    let marks = pod_marks(&p, &status(json!([{"name": "m#x", "state": ""}])), |_| {
        Some(m.clone())
    });
    assert!(marks.is_empty(), "an empty state is skipped");
}

#[test]
fn the_first_probe_of_a_condition_type_wins_and_gone_markers_are_skipped() {
    let p = pod(json!({}), json!([]));
    let s = status(json!([
        {"name": "m#check", "state": "Failed"},
        {"name": "m#healthy", "state": "Succeeded"},
        {"name": "gone#x", "state": "Succeeded"},
        {"name": "nohash", "state": "Succeeded"}]));
    let m = healthy();
    let marks = pod_marks(&p, &s, |name| (name == "m").then(|| m.clone()));
    assert_eq!(marks.conditions.len(), 1);
    assert_eq!(
        marks.conditions[0].status.as_str(),
        "False",
        "check came first"
    );
    assert_eq!(marks.labels["nginx"], Some("healthy".to_owned()));
    let mut deleting = (*healthy()).clone();
    deleting.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
    );
    let deleting = Arc::new(deleting);
    assert!(pod_marks(&p, &s, |_| Some(deleting.clone())).is_empty());
}

#[test]
fn pod_leaves_when_gone_or_inactive_and_listed() {
    let spec: NodePodProbeSpec = serde_json::from_value(
        json!({"podProbes": [{"name": "p", "namespace": "ns", "uid": "u1", "IP": ""}]}),
    )
    .unwrap();
    let running = pod(json!({}), json!([]));
    assert!(!pod_leaves(&running, false, &spec));
    assert!(pod_leaves(&running, true, &spec));
    let mut done = running.clone();
    done.status.as_mut().unwrap().phase = Some("Failed".into());
    assert!(pod_leaves(&done, false, &spec));
    assert!(!pod_leaves(&done, false, &NodePodProbeSpec::default()));
}
