//! ResourceDistribution cases (`resourcedistribution`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/resourcedistribution/validating` that does not depend on the API server — the
//! object's metadata (cluster-scoped, DNS-subdomain name, labels, annotations, finalizers),
//! `spec.resource` (empty, without kind, a kind other than core Secret/ConfigMap; apiVersion,
//! kind and name immutable on UPDATE) and `spec.targets` (namespace names of both lists, a
//! namespace both included and excluded, label selectors that do not convert) — on Secrets and
//! ConfigMaps that Kubernetes accepts, so OpenKruise's dry-run create passes (the replay has no
//! API server; the dry-run's refusals are covered by the e2e test
//! `webhook_refuses_as_openkruise` in crates/kruise-manager/tests/resourcedistribution.rs).

use serde_json::{Value, json};

use super::{Builder, Case, Edit};

fn secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "rd-corpus-secret"},
           "type": "Opaque", "data": {"k": "dmFsdWU="}})
}

fn config_map() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "rd-corpus-cm", "labels": {"app": "demo"}, "annotations": {"a": "b"}},
           "data": {"game.properties": "lives=3\n", "ui": "dark"}})
}

fn rd(resource: Value, targets: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
        "metadata": {"name": "rd-corpus"},
        "spec": {"resource": resource, "targets": targets}
    })
}

fn listed() -> Value {
    json!({"includedNamespaces": {"list": [{"name": "ns-1"}, {"name": "ns-2"}]},
           "namespaceLabelSelector": {"matchLabels": {"group": "one"}}})
}

fn all() -> Value {
    json!({"allNamespaces": true, "excludedNamespaces": {"list": [{"name": "kube-system"}]}})
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "resourcedistribution",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "ResourceDistribution",
        resource: "resourcedistributions",
        cases: Vec::new(),
    };
    let bases = [
        ("secret", rd(secret(), listed())),
        ("configmap", rd(config_map(), all())),
    ];
    for (n, o) in &bases {
        b.create(&format!("valid/{n}"), o.clone());
    }
    b.create("valid/no-targets", rd(secret(), json!({})));
    let s = |v: &[&str]| v.iter().map(|x| json!(x)).collect::<Vec<_>>();
    let mut edits: Vec<Edit> = Vec::new();
    let mut set =
        |p: &'static str, vals: Vec<Value>| edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    set(
        "/metadata/name",
        s(&[
            "",
            "RD",
            "a_b",
            "-x",
            "rd.example.com",
            &"x".repeat(254),
            &"x".repeat(253),
        ]),
    );
    set("/metadata/namespace", s(&["default"]));
    set("/metadata/generateName", s(&["rd-", "RD-"]));
    set(
        "/metadata/labels",
        vec![
            json!({"a b": "x"}),
            json!({"ok": "v"}),
            json!({"k": "bad value"}),
            json!({"example.com/x": "y"}),
        ],
    );
    set(
        "/metadata/annotations",
        vec![json!({"a": "b"}), json!({"a b": "x"})],
    );
    set(
        "/metadata/finalizers",
        vec![
            json!(["example.com/f"]),
            json!(["a b"]),
            json!(["orphan", "foregroundDeletion"]),
            json!(["kubernetes"]),
        ],
    );
    set(
        "/spec/resource",
        vec![
            Value::Null,
            json!({"metadata": {"name": "x"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "x"}, "data": {"a": "b"}}),
        ],
    );
    set(
        "/spec/resource/kind",
        s(&["Pod", "Deployment", "Service", "ConfigMap", "secret"]),
    );
    set(
        "/spec/resource/apiVersion",
        s(&["apps/v1", "example.com/v1"]),
    );
    set("/spec/resource/metadata/name", s(&["other-name"]));
    set(
        "/spec/targets/allNamespaces",
        vec![json!(true), json!(false)],
    );
    set(
        "/spec/targets/includedNamespaces/list",
        vec![
            json!([{"name": "Bad"}]),
            json!([{"name": ""}]),
            json!([{}]),
            json!([{"name": "x".repeat(64)}]),
            json!([{"name": "x".repeat(63)}]),
            json!([{"name": "a.b"}]),
            json!([{"name": "ok"}, {"name": "Not_OK"}, {"name": "-no"}]),
            json!([]),
        ],
    );
    set(
        "/spec/targets/excludedNamespaces/list",
        vec![
            json!([{"name": "ns-1"}]),
            json!([{"name": "ns-1"}, {"name": "ns-2"}]),
            json!([{"name": "Bad_ns"}]),
            json!([{"name": ""}]),
            json!([{"name": "kube-public"}]),
        ],
    );
    set(
        "/spec/targets/namespaceLabelSelector",
        vec![
            json!({"matchLabels": {"$#%": "x"}}),
            json!({"matchLabels": {"k": "in valid"}}),
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", "y"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Bogus", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            json!({"matchExpressions": [{"key": "a b", "operator": "DoesNotExist"}]}),
            json!({"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["d"]}]}),
            json!({}),
        ],
    );
    edits.push(Edit::Remove("/spec/targets/includedNamespaces"));
    edits.push(Edit::Remove("/spec/targets/namespaceLabelSelector"));
    b.edits(&bases, &edits, 40, 0x5d15_7121);

    // Updates: the resource's apiVersion, kind and name are immutable; its content and the
    // targets are not.
    let old = rd(secret(), listed());
    let mut renamed = old.clone();
    renamed["spec"]["resource"]["metadata"]["name"] = json!("renamed");
    b.update("resource-name", old.clone(), renamed);
    let mut to_cm = old.clone();
    to_cm["spec"]["resource"]["kind"] = json!("ConfigMap");
    to_cm["spec"]["resource"]
        .as_object_mut()
        .unwrap()
        .remove("type");
    b.update("resource-kind", old.clone(), to_cm);
    let mut new_data = old.clone();
    new_data["spec"]["resource"]["data"] = json!({"k": "bmV3", "k2": "eA=="});
    b.update("resource-data", old.clone(), new_data);
    let mut labels = old.clone();
    labels["spec"]["resource"]["metadata"]["labels"] = json!({"x": "y"});
    b.update("resource-labels", old.clone(), labels);
    let mut targets = old.clone();
    targets["spec"]["targets"] = all();
    b.update("targets", old.clone(), targets);
    let mut bad_targets = old.clone();
    bad_targets["spec"]["targets"]["excludedNamespaces"] = json!({"list": [{"name": "ns-2"}]});
    b.update("targets-conflict", old.clone(), bad_targets);
    let mut to_pod = old.clone();
    to_pod["spec"]["resource"]["kind"] = json!("Pod");
    b.update("resource-unsupported", old.clone(), to_pod);
    let mut old_pod = old.clone();
    old_pod["spec"]["resource"]["kind"] = json!("Pod");
    b.update("from-unsupported", old_pod, old.clone());
    b.update("unchanged", old.clone(), old);
    b.cases
}
