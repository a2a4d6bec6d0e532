use serde_json::json;

use super::*;

fn pod(name: &str, labels: serde_json::Value, node: &str, extra: serde_json::Value) -> CachedPod {
    let mut v = json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"nodeName": node, "containers": [
            {"name": "main", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": format!("10.0.0.{}", name.len()),
            "conditions": [{"type": "Initialized", "status": "True"}]},
    });
    json_merge(&mut v, extra);
    serde_json::from_value(v).unwrap()
}

fn json_merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                json_merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn ppm(name: &str, spec: serde_json::Value) -> PodProbeMarker {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }))
    .unwrap()
}

fn healthy(name: &str) -> PodProbeMarker {
    ppm(
        name,
        json!({
            "selector": {"matchLabels": {"app": "web"}},
            "probes": [{
                "name": "healthy", "containerName": "main",
                "probe": {"exec": {"command": ["/bin/sh", "-c", "ls /"]}},
                "podConditionType": "game.kruise.io/healthy",
                "markerPolicy": [
                    {"state": "Succeeded", "labels": {"nginx": "healthy"}},
                    {"state": "Failed", "annotations": {"cost": "-10"}}]
            }, {
                "name": "port", "containerName": "main",
                "probe": {"tcpSocket": {"port": "http"}}
            }]
        }),
    )
}

#[test]
fn matching_pods_splits_by_node_and_filters_unprobed_pods() {
    let pods = vec![
        pod("a", json!({"app": "web"}), "n1", json!({})),
        pod("b", json!({"app": "web"}), "vk", json!({})),
        pod("c", json!({"app": "web"}), "gone", json!({})),
        pod("d", json!({"app": "other"}), "n1", json!({})),
        // not initialized
        pod(
            "e",
            json!({"app": "web"}),
            "n1",
            json!({"status": {"conditions": [{"type": "Initialized", "status": "False"}]}}),
        ),
        // finished
        pod(
            "f",
            json!({"app": "web"}),
            "n1",
            json!({"status": {"phase": "Succeeded"}}),
        ),
        // unscheduled
        pod("g", json!({"app": "web"}), "", json!({})),
    ];
    let pods: Vec<std::sync::Arc<CachedPod>> = pods.into_iter().map(std::sync::Arc::new).collect();
    let kind = |n: &str| match n {
        "n1" => NodeKind::Normal,
        "vk" => NodeKind::Serverless,
        _ => NodeKind::Missing,
    };
    let (normal, serverless) = matching_pods(&healthy("m"), &pods, kind);
    let names = |v: &[&CachedPod]| -> Vec<String> {
        v.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    };
    assert_eq!(names(&normal), ["a"]);
    assert_eq!(names(&serverless), ["b"]);
    // An empty selector lists every pod (a list call with it), unlike the pod handler's match.
    let all = ppm("all", json!({"selector": {}, "probes": []}));
    let (normal, _) = matching_pods(&all, &pods, kind);
    assert_eq!(names(&normal), ["a", "d"]);
    assert!(!applies_to(&all, &pods[0]));
}

#[test]
fn applies_to_follows_the_marker_list_annotation_first() {
    let m = healthy("m");
    let listed = pod(
        "a",
        json!({"app": "other"}),
        "n1",
        json!({"metadata": {"annotations": {"kruise.io/podprobemarker-list": "x,m"}}}),
    );
    assert!(applies_to(&m, &listed));
    let not_listed = pod(
        "a",
        json!({"app": "web"}),
        "n1",
        json!({"metadata": {"annotations": {"kruise.io/podprobemarker-list": "x"}}}),
    );
    assert!(!applies_to(&m, &not_listed));
    assert!(applies_to(
        &m,
        &pod("a", json!({"app": "web"}), "n1", json!({}))
    ));
}

#[test]
fn add_probes_appends_pods_and_resolves_named_ports() {
    let p = pod("a", json!({"app": "web"}), "n1", json!({}));
    let mut spec = NodePodProbeSpec::default();
    assert!(add_probes(&mut spec, &healthy("m"), &[&p]));
    let v = serde_json::to_value(&spec).unwrap();
    assert_eq!(
        v,
        json!({"podProbes": [{"name": "a", "namespace": "ns", "uid": "uid-a", "IP": "10.0.0.1",
            "probes": [
                {"name": "m#healthy", "containerName": "main",
                    "probe": {"exec": {"command": ["/bin/sh", "-c", "ls /"]}}},
                {"name": "m#port", "containerName": "main",
                    "probe": {"tcpSocket": {"port": 8080}}}]}]})
    );
    // A second pass changes nothing.
    assert!(!add_probes(&mut spec, &healthy("m"), &[&p]));
    // A changed probe replaces the one of its name; another marker's probes are added.
    let mut changed = healthy("m");
    changed.spec.probes[0].probe.probe.exec = Some(k8s_openapi::api::core::v1::ExecAction {
        command: Some(vec!["false".into()]),
    });
    assert!(add_probes(&mut spec, &changed, &[&p]));
    assert!(add_probes(&mut spec, &healthy("other"), &[&p]));
    let names: Vec<_> = spec.pod_probes.as_ref().unwrap()[0]
        .probes
        .iter()
        .flatten()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["m#healthy", "m#port", "other#healthy", "other#port"]
    );
    assert_eq!(
        spec.pod_probes.as_ref().unwrap()[0]
            .probes
            .as_ref()
            .unwrap()[0]
            .probe
            .probe
            .exec
            .as_ref()
            .unwrap()
            .command,
        Some(vec!["false".to_owned()])
    );
}

#[test]
fn an_unresolvable_port_leaves_that_probe_out_and_an_ip_is_filled_in_once() {
    let mut m = healthy("m");
    m.spec.probes[1]
        .probe
        .probe
        .tcp_socket
        .as_mut()
        .unwrap()
        .port = IntOrString::String("nope".into());
    let mut p = pod("a", json!({"app": "web"}), "n1", json!({}));
    p.status.as_mut().unwrap().pod_ip = None;
    let mut spec = NodePodProbeSpec::default();
    assert!(add_probes(&mut spec, &m, &[&p]));
    let entry = &spec.pod_probes.as_ref().unwrap()[0];
    assert_eq!(entry.ip, "");
    assert_eq!(entry.probes.as_ref().unwrap().len(), 1);
    assert!(pod_needs_pass(&p, Some(&spec), &m), "a probe is missing");
    p.status.as_mut().unwrap().pod_ip = Some("10.1.1.1".into());
    assert!(add_probes(&mut spec, &m, &[&p]));
    assert_eq!(spec.pod_probes.as_ref().unwrap()[0].ip, "10.1.1.1");
    // Only an empty IP is filled in (OpenKruise keeps the first one).
    p.status.as_mut().unwrap().pod_ip = Some("10.2.2.2".into());
    assert!(!add_probes(&mut spec, &m, &[&p]));
}

#[test]
fn extract_port_as_openkruise() {
    let c: CachedContainer = serde_json::from_value(
        json!({"name": "c", "ports": [{"name": "http", "containerPort": 80}]}),
    )
    .unwrap();
    assert_eq!(extract_port(&IntOrString::Int(9), &c), Ok(9));
    assert_eq!(
        extract_port(&IntOrString::String("http".into()), &c),
        Ok(80)
    );
    assert_eq!(extract_port(&IntOrString::String("81".into()), &c), Ok(81));
    assert!(extract_port(&IntOrString::String("x".into()), &c).is_err());
    assert!(extract_port(&IntOrString::Int(0), &c).is_err());
    assert!(extract_port(&IntOrString::Int(65536), &c).is_err());
}

#[test]
fn resolve_probe_names_a_missing_container() {
    let mut m = healthy("m");
    m.spec.probes[1].container_name = "side".into();
    let p = pod("a", json!({}), "n1", json!({}));
    assert_eq!(
        resolve_probe(&m.spec.probes[1], &p).unwrap_err(),
        "Failed to get container by name: side in pod: ns/a"
    );
    // A numeric port needs no container.
    m.spec.probes[1]
        .probe
        .probe
        .tcp_socket
        .as_mut()
        .unwrap()
        .port = IntOrString::Int(1);
    assert!(resolve_probe(&m.spec.probes[1], &p).is_ok());
}

#[test]
fn remove_probes_drops_the_markers_probes_in_its_namespace_only() {
    let spec: NodePodProbeSpec = serde_json::from_value(json!({"podProbes": [
        {"name": "a", "namespace": "ns", "uid": "1", "IP": "1",
            "probes": [{"name": "m#x", "containerName": "c", "probe": {}},
                       {"name": "o#x", "containerName": "c", "probe": {}}]},
        {"name": "b", "namespace": "ns", "uid": "2", "IP": "2",
            "probes": [{"name": "m#x", "containerName": "c", "probe": {}}]},
        {"name": "c", "namespace": "other", "uid": "3", "IP": "3",
            "probes": [{"name": "m#x", "containerName": "c", "probe": {}}]}]}))
    .unwrap();
    let out = serde_json::to_value(remove_probes(&spec, "ns", "m")).unwrap();
    assert_eq!(
        out,
        json!({"podProbes": [
            {"name": "a", "namespace": "ns", "uid": "1", "IP": "1",
                "probes": [{"name": "o#x", "containerName": "c", "probe": {}}]},
            {"name": "c", "namespace": "other", "uid": "3", "IP": "3",
                "probes": [{"name": "m#x", "containerName": "c", "probe": {}}]}]})
    );
    assert_eq!(
        remove_probes(&NodePodProbeSpec::default(), "ns", "m"),
        NodePodProbeSpec::default()
    );
}

#[test]
fn pod_needs_pass_only_while_it_is_not_listed_whole() {
    let m = healthy("m");
    let p = pod("a", json!({"app": "web"}), "n1", json!({}));
    assert!(!pod_needs_pass(&p, None, &m), "no NodePodProbe yet");
    let mut spec = NodePodProbeSpec::default();
    assert!(pod_needs_pass(&p, Some(&spec), &m));
    add_probes(&mut spec, &m, &[&p]);
    assert!(!pod_needs_pass(&p, Some(&spec), &m));
    let mut other = p.clone();
    other.metadata.uid = Some("new".into());
    assert!(pod_needs_pass(&other, Some(&spec), &m), "re-created pod");
}

#[test]
fn serverless_marks_follow_the_pods_conditions() {
    let m = healthy("m");
    let markers = markers(&m);
    assert_eq!(
        markers.len(),
        1,
        "only probes with a condition type and a policy"
    );
    let p = pod(
        "a",
        json!({"app": "web"}),
        "vk",
        json!({"status": {"conditions": [{"type": "game.kruise.io/healthy", "status": "True"}]}}),
    );
    let (labels, annotations) = serverless_marks(&p, &markers).unwrap();
    assert_eq!(
        labels,
        BTreeMap::from([("nginx".to_owned(), "healthy".to_owned())])
    );
    assert!(annotations.is_empty());
    let marked = pod(
        "a",
        json!({"app": "web", "nginx": "healthy"}),
        "vk",
        json!({"status": {"conditions": [{"type": "game.kruise.io/healthy", "status": "True"}]}}),
    );
    assert_eq!(serverless_marks(&marked, &markers), None);
    let failed = pod(
        "a",
        json!({"app": "web"}),
        "vk",
        json!({"status": {"conditions": [{"type": "game.kruise.io/healthy", "status": "False"}]}}),
    );
    let (labels, annotations) = serverless_marks(&failed, &markers).unwrap();
    assert!(labels.is_empty());
    assert_eq!(
        annotations,
        BTreeMap::from([("cost".to_owned(), "-10".to_owned())])
    );
    assert_eq!(
        serverless_marks(&pod("a", json!({}), "vk", json!({})), &markers),
        None
    );
}
