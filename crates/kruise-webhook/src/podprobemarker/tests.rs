use super::*;
use serde_json::json;

fn ppm(spec: Value) -> Decoded {
    decode(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "m", "namespace": "default"},
        "spec": spec
    }))
    .expect("decodes")
}

fn probe(extra: Value) -> Value {
    let mut p = json!({
        "name": "healthy", "containerName": "main",
        "probe": {"exec": {"command": ["true"]}},
        "podConditionType": "game.kruise.io/healthy"
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

fn messages(obj: &Decoded) -> Option<String> {
    aggregate(&validate_spec(obj, &Path::new("spec")))
}

#[test]
fn a_valid_marker_passes() {
    let obj = ppm(json!({"selector": {"matchLabels": {"app": "x"}}, "probes": [probe(json!({}))]}));
    assert_eq!(messages(&obj), None);
}

#[test]
fn selector_nil_empty_and_invalid() {
    let obj = ppm(json!({"probes": [probe(json!({}))]}));
    assert!(!obj.has_selector);
    assert_eq!(
        messages(&obj).unwrap(),
        "spec.selector: Invalid value: \"null\": empty Selector is not valid for PodProbeMarker."
    );
    let obj = ppm(json!({"selector": {}, "probes": [probe(json!({}))]}));
    assert_eq!(
        messages(&obj).unwrap(),
        "spec.selector: Invalid value: {}: empty selector is not valid for podProbeMarker."
    );
    let obj = ppm(
        json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]},
                         "probes": [probe(json!({}))]}),
    );
    let m = messages(&obj).unwrap();
    assert!(
        m.starts_with(
            "[spec.selector.matchExpressions[0].operator: Invalid value: \"Bad\": not a valid selector operator, spec.selector.selector: Invalid value: {"
        ),
        "{m}"
    );
}

#[test]
fn probe_naming_stops_at_the_first_problem() {
    let sel = json!({"matchLabels": {"app": "x"}});
    let cases = [
        (
            json!({"name": "a#b", "containerName": ""}),
            "spec.probes: Invalid value: \"a#b\": probe name can't contains '#'.",
        ),
        (
            json!({"name": ""}),
            "spec.probes: Invalid value: \"\": probe name can't be empty in PodProbeMarker.",
        ),
        (
            json!({"containerName": ""}),
            "spec.probes: Invalid value: \"\": probe containerName can't be empty in PodProbeMarker.",
        ),
        (
            json!({"name": "KruisePodReady"}),
            "spec.probes: Invalid value: \"KruisePodReady\": probe name can't be KruisePodReady",
        ),
    ];
    for (extra, want) in cases {
        let obj = ppm(json!({"selector": sel, "probes": [probe(extra), probe(json!({}))]}));
        assert_eq!(messages(&obj).unwrap(), want);
    }
    let obj = ppm(json!({"selector": sel, "probes": [probe(json!({})), probe(json!({}))]}));
    assert_eq!(
        messages(&obj).unwrap(),
        "spec.probes: Invalid value: \"healthy\": probe name must be unique in PodProbeMarker."
    );
    let obj =
        ppm(json!({"selector": sel, "probes": [probe(json!({})), probe(json!({"name": "b"}))]}));
    assert_eq!(
        messages(&obj).unwrap(),
        "spec.probes: Invalid value: \"game.kruise.io/healthy\": podConditionType game.kruise.io/healthy must be unique in podProbeMarker"
    );
}

#[test]
fn handlers_and_timing() {
    let p = |probe_spec: Value| {
        let obj = ppm(json!({"selector": {"matchLabels": {"app": "x"}},
                             "probes": [probe(json!({"probe": probe_spec}))]}));
        messages(&obj)
    };
    assert_eq!(
        p(json!({"grpc": {"port": 80}})).unwrap(),
        "spec.probe: Required value: must specify a handler type"
    );
    assert_eq!(
        p(json!({"exec": {}, "tcpSocket": {"port": 0, "host": "h"}})).unwrap(),
        "[spec.probe.exec.command: Required value, spec.probe.tcpSocket: Forbidden: may not specify more than 1 handler type]"
    );
    assert_eq!(
        p(json!({"tcpSocket": {"port": 0, "host": "h"}, "periodSeconds": -1})).unwrap(),
        "[spec.probe.tcpSocket.host: Invalid value: \"h\": host field in probes is not allowed, spec.probe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.probe.periodSeconds: Invalid value: -1: must be greater than or equal to 0]"
    );
    assert_eq!(
        p(json!({"httpGet": {"port": "http", "path": "/%zz", "scheme": "FTP"}})).unwrap(),
        "[spec.probe.httpGet.path: Invalid value: \"/%zz\": must be a valid URL path, spec.probe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"]"
    );
    assert_eq!(
        p(json!({"httpGet": {"port": 8080, "path": "/ok", "scheme": "HTTP"}})),
        None
    );
}

#[test]
fn marker_policies() {
    let with = |policies: Value| {
        let obj = ppm(json!({"selector": {"matchLabels": {"app": "x"}},
            "probes": [{"name": "p", "containerName": "c", "probe": {"exec": {"command": ["x"]}},
                        "markerPolicy": policies}]}));
        messages(&obj)
    };
    assert_eq!(
        with(json!([])).unwrap(),
        format!(
            "spec.probes: Invalid value: {}: podConditionType and markerPolicy cannot be empty at the same time",
            json!({"containerName": "c", "markerPolicy": [], "name": "p", "probe": {"exec": {"command": ["x"]}}})
        )
    );
    assert_eq!(
        with(json!([{"state": "True", "labels": {"a": "b"}}])).unwrap(),
        "spec.markerPolicy.state: Required value: marker policy state must be 'True' or 'False'"
    );
    assert_eq!(
        with(json!([{"state": "Failed"}])).unwrap(),
        "spec.markerPolicy: Required value: marker policy annotations or labels can't be both empty"
    );
    assert_eq!(
        with(json!([{"state": "Failed", "labels": {"a": "b"}}, {"state": "Failed", "labels": {"a": "c"}}])).unwrap(),
        "spec.markerPolicy: Invalid value: \"Failed\": marker policy state must be unique."
    );
    assert_eq!(
        with(json!([{"state": "Succeeded", "labels": {"a": "b c"}}])).unwrap(),
        "spec.markerPolicy.labels: Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
    assert_eq!(
        with(json!([{"state": "Succeeded", "annotations": {"x": "1"}}])),
        None
    );
}

#[test]
fn the_selector_is_immutable() {
    let a = ppm(json!({"selector": {"matchLabels": {"app": "x"}}, "probes": [probe(json!({}))]}));
    let mut b = a.clone();
    assert!(validate_update(&b, &a).is_empty());
    b.ppm.spec.probes[0].container_name = "other".into();
    assert!(validate_update(&b, &a).is_empty());
    let c = ppm(json!({"selector": {"matchLabels": {"app": "y"}}, "probes": [probe(json!({}))]}));
    assert_eq!(
        aggregate(&validate_update(&c, &a)).unwrap(),
        "selector: Invalid value: {\"matchLabels\":{\"app\":\"y\"}}: selector must be immutable"
    );
    let nil = ppm(json!({"probes": []}));
    assert_eq!(
        aggregate(&validate_update(&nil, &a)).unwrap(),
        "selector: Invalid value: \"null\": selector must be immutable"
    );
    let no_spec = decode(json!({"metadata": {"name": "m"}})).expect("decodes");
    assert!(!no_spec.has_selector);
    assert_eq!(
        messages(&no_spec).unwrap(),
        "[spec.selector: Invalid value: \"null\": empty Selector is not valid for PodProbeMarker., spec.probes: Invalid value: null: empty probes is not valid for PodProbeMarker.]"
    );
}

fn ctx(gates: &str) -> HandlerContext {
    HandlerContext {
        gates: kruise_runtime::features::FeatureGates::parse(gates).expect("gates"),
        lookup: None,
    }
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
           "metadata": {"name": "m", "namespace": "ns"}, "spec": spec})
}

#[tokio::test]
async fn decoding_then_gates_then_rules() {
    use crate::support::testing::request;
    let valid =
        object(json!({"selector": {"matchLabels": {"app": "x"}}, "probes": [probe(json!({}))]}));
    let req = request(
        "CREATE",
        "podprobemarkers",
        "v1alpha1",
        Some(valid.clone()),
        None,
    );
    assert!(validate(&req, &ctx("")).await.allowed);
    // Gates in OpenKruise's order: PodProbeMarkerGate first (KruiseDaemon=false turns it off too).
    for (gates, which) in [
        ("PodProbeMarkerGate=false", "PodProbeMarkerGate"),
        ("KruiseDaemon=false", "PodProbeMarkerGate"),
        (
            "PodProbeMarkerGate=true,KruiseDaemon=false",
            "PodProbeMarkerGate",
        ),
    ] {
        let r = validate(&req, &ctx(gates)).await;
        assert_eq!((r.allowed, r.result.code), (false, 403), "{gates}");
        assert_eq!(
            r.result.message,
            format!("feature-gate {which} is not enabled")
        );
    }
    // A decoding error wins over the gates.
    let bad = object(json!({"probes": "x"}));
    let req = request("CREATE", "podprobemarkers", "v1alpha1", Some(bad), None);
    let r = validate(&req, &ctx("PodProbeMarkerGate=false")).await;
    assert_eq!((r.allowed, r.result.code), (false, 400));
    // UPDATE: the spec rules, then the selector.
    let mut new = valid.clone();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "y"}});
    new["spec"]["probes"][0]["probe"]["periodSeconds"] = json!(-1);
    let req = request(
        "UPDATE",
        "podprobemarkers",
        "v1alpha1",
        Some(new),
        Some(valid),
    );
    let r = validate(&req, &ctx("")).await;
    assert_eq!((r.allowed, r.result.code), (false, 400));
    assert_eq!(
        r.result.message,
        "[spec.probe.periodSeconds: Invalid value: -1: must be greater than or equal to 0, selector: Invalid value: {\"matchLabels\":{\"app\":\"y\"}}: selector must be immutable]"
    );
}
