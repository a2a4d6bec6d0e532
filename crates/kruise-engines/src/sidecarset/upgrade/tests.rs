use super::*;
use serde_json::json;

fn sidecarset(strategy: serde_json::Value) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "ss", "annotations": {
            "kruise.io/sidecarset-hash": "new", "kruise.io/sidecarset-hash-without-image": "w"}},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "containers": [{"name": "sidecar", "image": "busybox:2"}],
                 "updateStrategy": strategy}
    }))
    .unwrap()
}

fn pod(name: &str, hash: &str, ready: bool) -> Pod {
    let ann = |h: &str| format!(r#"{{"ss":{{"hash":"{h}","sidecarSetName":"ss"}}}}"#);
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "a"}, "annotations": {
            "kruise.io/sidecarset-hash": ann(hash),
            "kruise.io/sidecarset-hash-without-image": ann("w"),
            "kruise.io/sidecarset-injected-list": "ss"}},
        "spec": {"containers": [{"name": "sidecar", "image": "busybox:1"}, {"name": "main", "image": "nginx"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
            "containerStatuses": [
                {"name": "sidecar", "image": "busybox:1", "imageID": "busybox@sha256:1", "ready": ready, "restartCount": 0},
                {"name": "main", "image": "nginx", "imageID": "nginx@sha256:2", "ready": ready, "restartCount": 0}]}
    }))
    .unwrap()
}

#[test]
fn max_unavailable_and_partition_bound_each_round() {
    let s = sidecarset(json!({"maxUnavailable": 2, "partition": 1}));
    let pods: Vec<Pod> = (0..5).map(|i| pod(&format!("p{i}"), "old", true)).collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let next = next_upgrade_pods(&s, &refs);
    assert_eq!(next.upgrade.len(), 2);
    assert!(next.not_upgradable.is_empty());
    // A not-ready pod is always taken and does not use the budget.
    let mut pods = pods;
    pods[4] = pod("p4", "old", false);
    let refs: Vec<&Pod> = pods.iter().collect();
    let next = next_upgrade_pods(&s, &refs);
    assert_eq!(next.upgrade.first(), Some(&4));
    assert_eq!(next.upgrade.len(), 3);
}

#[test]
fn changed_non_image_fields_are_not_upgradable() {
    let s = sidecarset(json!({}));
    let mut p = pod("p", "old", true);
    p.metadata.annotations.as_mut().unwrap().insert(
        "kruise.io/sidecarset-hash-without-image".into(),
        r#"{"ss":{"hash":"other"}}"#.into(),
    );
    let next = next_upgrade_pods(&s, &[&p]);
    assert_eq!(next.not_upgradable, vec![0]);
    assert!(next.upgrade.is_empty());
}

#[test]
fn upgrade_moves_the_image_and_records_hash_and_image_id() {
    let s = sidecarset(json!({}));
    let mut p = pod("p", "old", true);
    let now = jiff::Timestamp::from_second(1_764_000_000).unwrap();
    let changed = upgrade_pod(&s, &mut p, now);
    assert_eq!(changed, vec!["sidecar".to_string()]);
    assert_eq!(
        p.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("busybox:2")
    );
    assert!(is_pod_sidecar_updated(&s, &p));
    let states = control::inplace_update_states(&p).unwrap().unwrap();
    assert_eq!(
        states["ss"].last_container_statuses["sidecar"].image_id,
        "busybox@sha256:1"
    );
    // The kubelet has not restarted the container yet: not consistent.
    assert!(!is_pod_state_consistent(&s, &p, &BTreeSet::new()));
}

#[test]
fn star_scatter_terms_expand_to_every_value() {
    let mut a = pod("a", "old", true);
    a.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "z1".into());
    let mut b = pod("b", "old", true);
    b.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "z2".into());
    let scatter = vec![UpdateScatterTerm {
        key: "zone".into(),
        value: "*".into(),
    }];
    let terms = expand_scatter_terms(&scatter, &[&a, &b, &a]);
    let values: Vec<&str> = terms.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(values, vec!["z1", "z2"]);
}
