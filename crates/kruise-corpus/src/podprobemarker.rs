//! PodProbeMarker cases (`podprobemarker`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/podprobemarker/validating` — the selector (absent, `null`, empty, invalid
//! labels and expressions), the probes (none, names empty, with `#`, a built-in readiness
//! condition or duplicated, an empty container name), the probe handler (none, `grpc` only,
//! `exec`, `httpGet` with its path, host, port, scheme and headers, `tcpSocket`, several at
//! once), the timing fields, `podConditionType` (missing with no marker policy, invalid,
//! duplicated), the marker policies (state, duplicates, labels and annotations), several probes,
//! and on UPDATE the immutable selector; plus the decoding of wrong JSON types. Maps the cases
//! make invalid hold one entry each (Go reports a map's errors in random order).

use serde_json::{Value, json};

use super::{Builder, Case, Edit, NAMESPACE};

fn ppm(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec
    })
}

fn exec_probe(name: &str, condition: Option<&str>, policies: Option<Value>) -> Value {
    let mut p = json!({
        "name": name, "containerName": "main",
        "probe": {"exec": {"command": ["/bin/sh", "-c", "/healthy.sh"]},
                  "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 3,
                  "successThreshold": 1, "failureThreshold": 3}
    });
    if let Some(c) = condition {
        p["podConditionType"] = json!(c);
    }
    if let Some(m) = policies {
        p["markerPolicy"] = m;
    }
    p
}

fn policies() -> Value {
    json!([
        {"state": "Succeeded", "labels": {"game.kruise.io/healthy": "true"},
         "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}},
        {"state": "Failed", "labels": {"game.kruise.io/healthy": "false"}}
    ])
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "podprobemarker",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "PodProbeMarker",
        resource: "podprobemarkers",
        cases: Vec::new(),
    };
    let selector = json!({"matchLabels": {"app": "game"}});
    let valid = ppm(
        "ppm",
        json!({"selector": selector, "probes": [
            exec_probe("healthy", Some("game.kruise.io/healthy"), Some(policies()))
        ]}),
    );
    b.create("valid", valid.clone());
    let http_valid = ppm(
        "ppm-http",
        json!({"selector": selector, "probes": [{
            "name": "ready-http", "containerName": "web",
            "probe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP",
                                  "httpHeaders": [{"name": "X-Probe", "value": "1"}]}},
            "podConditionType": "game.kruise.io/http-ready"}]}),
    );
    b.create("valid-http", http_valid.clone());
    let tcp_valid = ppm(
        "ppm-tcp",
        json!({"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["game"]}]},
               "probes": [{"name": "tcp", "containerName": "main",
                           "probe": {"tcpSocket": {"port": "game"}},
                           "markerPolicy": [{"state": "Succeeded", "annotations": {"tcp": "up"}}]}]}),
    );
    b.create("valid-tcp", tcp_valid.clone());
    let multi_valid = ppm(
        "ppm-multi",
        json!({"selector": selector, "probes": [
            exec_probe("a", Some("game.kruise.io/a"), None),
            exec_probe("b", None, Some(json!([{"state": "Failed", "labels": {"b": "failed"}}]))),
            exec_probe("c", Some("game.kruise.io/c"), Some(policies())),
        ]}),
    );
    b.create("valid-multi", multi_valid.clone());

    // Selector.
    let selector_edits = vec![
        Edit::Remove("/spec/selector"),
        Edit::Set("/spec/selector", json!(null)),
        Edit::Set("/spec/selector", json!({})),
        Edit::Set("/spec/selector/matchLabels", json!({})),
        Edit::Set("/spec/selector/matchLabels", json!(null)),
        Edit::Set("/spec/selector/matchLabels", json!({"a b": "x"})),
        Edit::Set("/spec/selector/matchLabels", json!({"app": "-x"})),
        Edit::Set("/spec/selector/matchLabels", json!({"app": "a".repeat(64)})),
        Edit::Set("/spec/selector/matchLabels", json!({"kruise.io/app": ""})),
        Edit::Set("/spec/selector/matchLabels", json!({"/app": "x"})),
        Edit::Set("/spec/selector/matchExpressions", json!([])),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "NotIn", "values": ["db"]}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "In"}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "In", "values": []}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "Exists"}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "DoesNotExist", "values": ["x"]}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "Bogus", "values": ["x"]}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "bad key", "operator": "Exists"}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "tier", "operator": "In", "values": ["ok", "-bad"]}]),
        ),
        Edit::Set(
            "/spec/selector/matchExpressions",
            json!([{"key": "", "operator": "exists"}]),
        ),
        Edit::Set("/spec/selector", json!("app=game")),
        Edit::Set("/spec/selector/matchLabels", json!({"app": 1})),
        Edit::Set("/spec/selector/matchExpressions", json!({"key": "x"})),
    ];
    b.edits(&[("valid", valid.clone())], &selector_edits, 0, 0);

    // Probes: presence, naming and the container.
    let mut probe_edits = vec![
        Edit::Remove("/spec/probes"),
        Edit::Set("/spec/probes", json!(null)),
        Edit::Set("/spec/probes", json!([])),
        Edit::Set("/spec/probes", json!("healthy")),
        Edit::Set("/spec/probes/0", json!("healthy")),
        Edit::Set("/spec/probes/0/name", json!("")),
        Edit::Remove("/spec/probes/0/name"),
        Edit::Set("/spec/probes/0/name", json!("a#b")),
        Edit::Set("/spec/probes/0/name", json!("#")),
        Edit::Set("/spec/probes/0/name", json!(5)),
        Edit::Set("/spec/probes/0/name", json!("with space")),
        Edit::Set("/spec/probes/0/name", json!("a".repeat(300))),
        Edit::Set("/spec/probes/0/name", json!("ready")),
        Edit::Set("/spec/probes/0/containerName", json!("")),
        Edit::Remove("/spec/probes/0/containerName"),
        Edit::Set("/spec/probes/0/containerName", json!(false)),
        Edit::Set("/spec/probes/0/containerName", json!("not-in-pod")),
        Edit::Remove("/spec/probes/0/probe"),
        Edit::Set("/spec/probes/0/probe", json!(null)),
        Edit::Set("/spec/probes/0/probe", json!({})),
        Edit::Set("/spec/probes/0/probe", json!([])),
    ];
    for reserved in [
        "PodScheduled",
        "Initialized",
        "Ready",
        "ContainersReady",
        "KruisePodReady",
        "InPlaceUpdateReady",
    ] {
        probe_edits.push(Edit::Set("/spec/probes/0/name", json!(reserved)));
    }
    b.edits(&[("valid", valid.clone())], &probe_edits, 0, 0);

    // The handler and the timing fields.
    let handler_edits = vec![
        Edit::Remove("/spec/probes/0/probe/exec"),
        Edit::Set("/spec/probes/0/probe/exec", json!(null)),
        Edit::Set("/spec/probes/0/probe/exec", json!({})),
        Edit::Set("/spec/probes/0/probe/exec/command", json!([])),
        Edit::Set("/spec/probes/0/probe/exec/command", json!([""])),
        Edit::Set("/spec/probes/0/probe/exec/command", json!("true")),
        Edit::Set(
            "/spec/probes/0/probe/httpGet",
            json!({"path": "/", "port": 80, "scheme": "HTTP"}),
        ),
        Edit::Set("/spec/probes/0/probe/tcpSocket", json!({"port": 80})),
        Edit::Set(
            "/spec/probes/0/probe/tcpSocket",
            json!({"port": 0, "host": "h"}),
        ),
        Edit::Set("/spec/probes/0/probe/grpc", json!({"port": 9000})),
        Edit::Set("/spec/probes/0/probe/initialDelaySeconds", json!(-1)),
        Edit::Set("/spec/probes/0/probe/initialDelaySeconds", json!(0)),
        Edit::Set("/spec/probes/0/probe/timeoutSeconds", json!(-3)),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!(-10)),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!(0)),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!(2147483647)),
        Edit::Set(
            "/spec/probes/0/probe/periodSeconds",
            json!(3_000_000_000_i64),
        ),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!("10")),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!(1.5)),
        Edit::Set("/spec/probes/0/probe/successThreshold", json!(-1)),
        Edit::Set("/spec/probes/0/probe/successThreshold", json!(0)),
        Edit::Set("/spec/probes/0/probe/failureThreshold", json!(-2)),
        Edit::Set(
            "/spec/probes/0/probe/terminationGracePeriodSeconds",
            json!(-1),
        ),
    ];
    b.edits(&[("valid", valid.clone())], &handler_edits, 16, 0x99B);

    // Probes with no handler but gRPC, and with several handlers.
    let no_exec = |probe: Value| {
        let mut o = valid.clone();
        o["spec"]["probes"][0]["probe"] = probe;
        o
    };
    for (label, probe) in [
        ("grpc-only", json!({"grpc": {"port": 9000}})),
        (
            "grpc-only-service",
            json!({"grpc": {"port": 9000, "service": "health"}}),
        ),
        (
            "timing-only",
            json!({"periodSeconds": 5, "failureThreshold": -1}),
        ),
        (
            "http-and-tcp",
            json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "tcpSocket": {"port": 80}}),
        ),
        (
            "http-bad-and-tcp-bad",
            json!({"httpGet": {"port": 0}, "tcpSocket": {"port": 0, "host": "h"}}),
        ),
        (
            "all-three-and-grpc",
            json!({"exec": {}, "httpGet": {"port": 0}, "tcpSocket": {"port": 0}, "grpc": {"port": 1}}),
        ),
        (
            "tcp-and-grpc",
            json!({"tcpSocket": {"port": 70000}, "grpc": {"port": 1}}),
        ),
    ] {
        b.create(&format!("handler/{label}"), no_exec(probe));
    }

    // httpGet and tcpSocket fields.
    let http_edits = vec![
        Edit::Remove("/spec/probes/0/probe/httpGet/path"),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("healthz")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("/a b?x=1#frag")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("/%zz")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("/%2")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("/ok#%g1")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!(":8080/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("a:b")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("1a:b")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("/tab\there")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("//host:port/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("//host:80/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("//[::1/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("//[1.2.3.4]/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("//h st/x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("///x")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("http://x/y")),
        Edit::Set("/spec/probes/0/probe/httpGet/path", json!("*")),
        Edit::Set("/spec/probes/0/probe/httpGet/host", json!("10.0.0.1")),
        Edit::Set("/spec/probes/0/probe/httpGet/host", json!("")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!(0)),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!(-1)),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!(65535)),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!(65536)),
        Edit::Remove("/spec/probes/0/probe/httpGet/port"),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("http")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("HTTP")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("8080")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("a--b")),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!("-ab")),
        Edit::Set(
            "/spec/probes/0/probe/httpGet/port",
            json!("abcdefghijklmnop"),
        ),
        Edit::Set("/spec/probes/0/probe/httpGet/port", json!(true)),
        Edit::Set("/spec/probes/0/probe/httpGet/scheme", json!("HTTPS")),
        Edit::Set("/spec/probes/0/probe/httpGet/scheme", json!("http")),
        Edit::Set("/spec/probes/0/probe/httpGet/scheme", json!("FTP")),
        Edit::Set("/spec/probes/0/probe/httpGet/scheme", json!("")),
        Edit::Remove("/spec/probes/0/probe/httpGet/scheme"),
        Edit::Set("/spec/probes/0/probe/httpGet/httpHeaders", json!([])),
        Edit::Set(
            "/spec/probes/0/probe/httpGet/httpHeaders",
            json!([{"name": "bad name", "value": "1"}]),
        ),
        Edit::Set(
            "/spec/probes/0/probe/httpGet/httpHeaders",
            json!([{"name": "", "value": "1"}]),
        ),
        Edit::Set(
            "/spec/probes/0/probe/httpGet/httpHeaders",
            json!([{"name": "X-Ok", "value": ""}, {"name": "X:Bad", "value": "2"}, {"name": "Y(", "value": "3"}]),
        ),
        Edit::Set("/spec/probes/0/probe/httpGet/httpHeaders", json!("X: 1")),
    ];
    b.edits(
        &[("valid-http", http_valid.clone())],
        &http_edits,
        16,
        0x477,
    );

    let tcp_edits = vec![
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!(0)),
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!(22)),
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!(100000)),
        Edit::Remove("/spec/probes/0/probe/tcpSocket/port"),
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!("Game")),
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!("123")),
        Edit::Set("/spec/probes/0/probe/tcpSocket/port", json!([80])),
        Edit::Set("/spec/probes/0/probe/tcpSocket/host", json!("localhost")),
        Edit::Set("/spec/probes/0/probe/tcpSocket", json!({})),
        Edit::Set("/spec/probes/0/probe/tcpSocket", json!(null)),
    ];
    b.edits(&[("valid-tcp", tcp_valid.clone())], &tcp_edits, 6, 0x7C9);

    // podConditionType and the marker policies.
    let marker_edits = vec![
        Edit::Remove("/spec/probes/0/podConditionType"),
        Edit::Set("/spec/probes/0/podConditionType", json!("")),
        Edit::Set("/spec/probes/0/podConditionType", json!("bad type!")),
        Edit::Set("/spec/probes/0/podConditionType", json!("a/b/c")),
        Edit::Set("/spec/probes/0/podConditionType", json!("-healthy")),
        Edit::Set("/spec/probes/0/podConditionType", json!("Ready")),
        Edit::Set("/spec/probes/0/podConditionType", json!("healthy")),
        Edit::Set("/spec/probes/0/podConditionType", json!("a".repeat(64))),
        Edit::Set(
            "/spec/probes/0/podConditionType",
            json!(format!("{}/x", "a".repeat(254))),
        ),
        Edit::Set("/spec/probes/0/podConditionType", json!(1)),
        Edit::Remove("/spec/probes/0/markerPolicy"),
        Edit::Set("/spec/probes/0/markerPolicy", json!(null)),
        Edit::Set("/spec/probes/0/markerPolicy", json!([])),
        Edit::Set("/spec/probes/0/markerPolicy", json!({"state": "Succeeded"})),
        Edit::Set("/spec/probes/0/markerPolicy/0/state", json!("True")),
        Edit::Set("/spec/probes/0/markerPolicy/0/state", json!("")),
        Edit::Remove("/spec/probes/0/markerPolicy/0/state"),
        Edit::Set("/spec/probes/0/markerPolicy/0/state", json!("Unknown")),
        Edit::Set("/spec/probes/0/markerPolicy/0/state", json!("succeeded")),
        Edit::Set("/spec/probes/0/markerPolicy/0/state", json!("Failed")),
        Edit::Set("/spec/probes/1", json!("x")),
        Edit::Set("/spec/probes/0/markerPolicy/1/state", json!("Succeeded")),
        Edit::Set("/spec/probes/0/markerPolicy/1/state", json!("Bad")),
        Edit::Set("/spec/probes/0/markerPolicy/0/labels", json!({})),
        Edit::Set("/spec/probes/0/markerPolicy/0/labels", json!(null)),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/labels",
            json!({"bad key": "v"}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/labels",
            json!({"k": "bad value"}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/labels",
            json!({"k": "a".repeat(64)}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/labels",
            json!({"kruise.io/": "v"}),
        ),
        Edit::Set("/spec/probes/0/markerPolicy/0/labels", json!({"k": 1})),
        Edit::Set("/spec/probes/0/markerPolicy/0/annotations", json!({})),
        Edit::Set("/spec/probes/0/markerPolicy/0/annotations", json!(null)),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/annotations",
            json!({"bad key": "v"}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/annotations",
            json!({"Upper/Key": "any value at all !"}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/0/annotations",
            json!({"x": "a".repeat(300)}),
        ),
        Edit::Set("/spec/probes/0/markerPolicy/1/labels", json!({})),
        Edit::Set("/spec/probes/0/markerPolicy/1/labels", json!({"-k": "v"})),
        Edit::Set("/spec/probes/0/markerPolicy/1", json!({"state": "Failed"})),
        Edit::Set(
            "/spec/probes/0/markerPolicy/2",
            json!({"state": "Failed", "annotations": {"a": "b"}}),
        ),
        Edit::Set(
            "/spec/probes/0/markerPolicy/2",
            json!({"state": "Unknown", "annotations": {"a": "b"}}),
        ),
    ];
    b.edits(&[("valid", valid.clone())], &marker_edits, 24, 0x3A2);

    // Several probes: duplicates and the first failing one stopping the checks.
    let multi_edits = vec![
        Edit::Set("/spec/probes/1/name", json!("a")),
        Edit::Set("/spec/probes/2/name", json!("a")),
        Edit::Set("/spec/probes/2/name", json!("b")),
        Edit::Set("/spec/probes/1/name", json!("Ready")),
        Edit::Set("/spec/probes/1/name", json!("")),
        Edit::Set("/spec/probes/1/containerName", json!("")),
        Edit::Set("/spec/probes/1/name", json!("x#y")),
        Edit::Set("/spec/probes/2/podConditionType", json!("game.kruise.io/a")),
        Edit::Set("/spec/probes/1/podConditionType", json!("game.kruise.io/c")),
        Edit::Set("/spec/probes/1/podConditionType", json!("game.kruise.io/b")),
        Edit::Set("/spec/probes/1/markerPolicy", json!([])),
        Edit::Set("/spec/probes/0/probe", json!({})),
        Edit::Set("/spec/probes/0/probe/periodSeconds", json!(-1)),
        Edit::Set("/spec/probes/2/probe/periodSeconds", json!(-1)),
        Edit::Set("/spec/probes/0/podConditionType", json!("bad type")),
        Edit::Set("/spec/probes/2/markerPolicy/0/state", json!("Failed")),
        Edit::Set("/spec/probes/1/markerPolicy/0/labels", json!({"b": "-"})),
        Edit::Set("/spec/probes/2/markerPolicy/1/labels", json!({"-": "v"})),
        Edit::Set("/spec/selector", json!({})),
        Edit::Set("/spec/probes/3", json!({"name": "d"})),
        Edit::Set(
            "/spec/probes/3",
            json!({"name": "d", "containerName": "main", "probe": {"tcpSocket": {"port": 1}}}),
        ),
    ];
    b.edits(
        &[("valid-multi", multi_valid.clone())],
        &multi_edits,
        24,
        0x5B1,
    );

    // Metadata the webhook does not look at.
    let meta_edits = vec![
        Edit::Set("/metadata/name", json!("Not_A_DNS_Name")),
        Edit::Set("/metadata/labels", json!({"bad key": "v"})),
        Edit::Remove("/metadata/namespace"),
        Edit::Set(
            "/status",
            json!({"observedGeneration": 3, "matchedPods": 2}),
        ),
        Edit::Set("/status", json!({"matchedPods": "2"})),
        Edit::Set("/spec", json!("x")),
        Edit::Remove("/spec"),
    ];
    b.edits(&[("valid", valid.clone())], &meta_edits, 0, 0);

    // Updates.
    let mut updates: Vec<(&str, Value, Value)> = Vec::new();
    updates.push(("unchanged", valid.clone(), valid.clone()));
    let mut v = valid.clone();
    v["spec"]["probes"][0]["probe"]["periodSeconds"] = json!(30);
    updates.push(("probe-period-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["probes"].as_array_mut().unwrap().push(exec_probe(
        "second",
        Some("game.kruise.io/second"),
        None,
    ));
    updates.push(("probe-added", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"]["matchLabels"]["app"] = json!("other");
    updates.push(("selector-label-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"]["matchExpressions"] = json!([{"key": "tier", "operator": "Exists"}]);
    updates.push(("selector-expression-added", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"]["matchExpressions"] = json!([]);
    updates.push(("selector-empty-expressions-added", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"] = json!({});
    updates.push(("selector-emptied", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"].as_object_mut().unwrap().remove("selector");
    updates.push(("selector-removed", valid.clone(), v.clone()));
    updates.push(("selector-added", v, valid.clone()));
    let mut v = valid.clone();
    v["spec"]["selector"]["matchLabels"]["app"] = json!("other");
    v["spec"]["probes"][0]["name"] = json!("");
    updates.push(("selector-changed-and-probe-invalid", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"]["matchLabels"]["app"] = json!("-bad");
    updates.push(("selector-changed-to-invalid", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["probes"][0]["markerPolicy"][0]["state"] = json!("True");
    updates.push(("policy-made-invalid", valid.clone(), v));
    let mut old = valid.clone();
    old["spec"]["probes"][0]["name"] = json!("Ready");
    updates.push(("old-invalid-new-valid", old, valid.clone()));
    let mut old = valid.clone();
    old["spec"]["selector"] = json!({"matchLabels": {"app": "game"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]}]});
    let mut v = old.clone();
    v["spec"]["selector"]["matchExpressions"][0]["values"] = json!(["b", "a"]);
    updates.push(("selector-values-reordered", old.clone(), v));
    let mut v = old.clone();
    v["spec"]["selector"]["matchExpressions"][0]["operator"] = json!("NotIn");
    updates.push(("selector-operator-changed", old, v));
    let mut old = valid.clone();
    old["spec"]["selector"] = json!({"matchLabels": {"app": "game"}, "matchExpressions": [
        {"key": "tier", "operator": "Exists", "values": []}]});
    let mut v = old.clone();
    v["spec"]["selector"]["matchExpressions"][0]
        .as_object_mut()
        .unwrap()
        .remove("values");
    updates.push(("selector-empty-values-removed", old, v));
    let mut v = valid.clone();
    v["metadata"]["labels"] = json!({"a": "b"});
    updates.push(("labels-added", valid.clone(), v));
    let mut v = valid.clone();
    v["status"] = json!({"observedGeneration": 1, "matchedPods": 3});
    updates.push(("status-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"] = json!("x");
    updates.push(("selector-wrong-type", valid.clone(), v.clone()));
    updates.push(("old-selector-wrong-type", v, valid.clone()));
    let mut v = http_valid.clone();
    v["spec"]["probes"][0]["probe"]["httpGet"]["scheme"] = json!("HTTPS");
    updates.push(("http-scheme-changed", http_valid.clone(), v));
    let mut v = tcp_valid.clone();
    v["spec"]["selector"]["matchExpressions"][0]["values"] = json!(["game", "web"]);
    updates.push(("tcp-selector-values-added", tcp_valid.clone(), v));
    for (label, old, new) in updates {
        b.update(label, old, new);
    }
    // A seeded pair may repeat one drawn before: keep the first.
    let mut seen = std::collections::BTreeSet::new();
    b.cases.retain(|c| seen.insert(c.id.clone()));
    b.cases
}
