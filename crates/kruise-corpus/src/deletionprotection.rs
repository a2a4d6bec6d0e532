//! Deletion-protection cases (`deletionprotection`): DELETE requests for every built-in kind
//! OpenKruise v1.9.0 protects (`pkg/webhook/{builtinworkloads,namespace,customresourcedefinition,
//! service,ingress}`) and for UnitedDeployments (`pkg/webhook/uniteddeployment/validating`) with
//! `policy.kruise.io/delete-protection` absent, `Always`, `Cascading` and other values,
//! replicas absent, 0 and positive (and for UnitedDeployments `null`, a type Go cannot decode,
//! and dry runs), objects already being deleted. Recorded on an empty cluster: a `Cascading`
//! Namespace holds no pods, a `Cascading` CRD's kind has no objects.

use serde_json::{Value, json};

use super::{Builder, Case, NAMESPACE};

fn with_label(mut o: Value, value: Option<&str>) -> Value {
    if let Some(v) = value {
        o["metadata"]["labels"] = json!({"policy.kruise.io/delete-protection": v, "app": "x"});
    }
    o
}

/// What the API server adds to a stored object.
fn stored(mut o: Value) -> Value {
    let m = &mut o["metadata"];
    m["uid"] = json!("6f9d2b1e-0000-4000-8000-00000000c0de");
    m["resourceVersion"] = json!("1000");
    m["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    o
}

const VALUES: &[Option<&str>] = &[
    None,
    Some("Always"),
    Some("Cascading"),
    Some(""),
    Some("always"),
    Some("Never"),
];

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let workloads = [
        ("Deployment", "deployments"),
        ("ReplicaSet", "replicasets"),
        ("StatefulSet", "statefulsets"),
    ];
    for (kind, resource) in workloads {
        let mut b = Builder {
            prefix: "deletionprotection",
            group: "apps",
            version: "v1",
            kind,
            resource,
            cases: Vec::new(),
        };
        for (vi, v) in VALUES.iter().enumerate() {
            for replicas in [None, Some(0), Some(3)] {
                let mut spec = json!({"selector": {"matchLabels": {"app": "x"}},
                    "template": {"metadata": {"labels": {"app": "x"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}});
                if let Some(r) = replicas {
                    spec["replicas"] = json!(r);
                }
                let o = json!({"apiVersion": "apps/v1", "kind": kind,
                    "metadata": {"name": "w", "namespace": NAMESPACE}, "spec": spec});
                let label = format!(
                    "{}/label-{vi}/replicas-{}",
                    kind.to_lowercase(),
                    replicas.map_or("absent".to_string(), |r| r.to_string())
                );
                b.delete(&label, stored(with_label(o, *v)));
            }
        }
        // Already being deleted.
        let mut o = stored(with_label(
            json!({"apiVersion": "apps/v1", "kind": kind,
                   "metadata": {"name": "w", "namespace": NAMESPACE},
                   "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}},
                            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
            Some("Always"),
        ));
        o["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
        b.delete(&format!("{}/terminating", kind.to_lowercase()), o);
        out.extend(b.cases);
    }

    out.extend(united_deployment_cases());

    let mut b = Builder {
        prefix: "deletionprotection",
        group: "",
        version: "v1",
        kind: "Service",
        resource: "services",
        cases: Vec::new(),
    };
    for (vi, v) in VALUES.iter().enumerate() {
        let o = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc", "namespace": NAMESPACE},
            "spec": {"ports": [{"port": 80}]}});
        b.delete(&format!("service/label-{vi}"), stored(with_label(o, *v)));
    }
    out.extend(b.cases);

    let mut b = Builder {
        prefix: "deletionprotection",
        group: "networking.k8s.io",
        version: "v1",
        kind: "Ingress",
        resource: "ingresses",
        cases: Vec::new(),
    };
    for (vi, v) in VALUES.iter().enumerate() {
        let o = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ing", "namespace": NAMESPACE},
            "spec": {"defaultBackend": {"service": {"name": "svc", "port": {"number": 80}}}}});
        b.delete(&format!("ingress/label-{vi}"), stored(with_label(o, *v)));
    }
    out.extend(b.cases);

    let mut b = Builder {
        prefix: "deletionprotection",
        group: "",
        version: "v1",
        kind: "Namespace",
        resource: "namespaces",
        cases: Vec::new(),
    };
    for (vi, v) in VALUES.iter().enumerate() {
        // A namespace that does not exist holds no pods or PVCs.
        let o = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "corpus-empty-ns"}});
        b.delete(&format!("namespace/label-{vi}"), stored(with_label(o, *v)));
    }
    let mut o = stored(with_label(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "corpus-empty-ns"}}),
        Some("Always"),
    ));
    o["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
    b.delete("namespace/terminating", o);
    let mut cases = b.cases;
    for c in &mut cases {
        c.namespace = Some(String::new());
    }
    out.extend(cases);

    let mut b = Builder {
        prefix: "deletionprotection",
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        resource: "customresourcedefinitions",
        cases: Vec::new(),
    };
    for (vi, v) in VALUES.iter().enumerate() {
        let o = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.corpus.kruise-rs.io"},
            "spec": {"group": "corpus.kruise-rs.io", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        // Cascading lists the kind's objects: only Always and the no-op values are recorded
        // (a kind the API server does not serve fails the list with an error text of its own).
        if *v == Some("Cascading") {
            continue;
        }
        b.delete(&format!("crd/label-{vi}"), stored(with_label(o, *v)));
    }
    let mut cases = b.cases;
    for c in &mut cases {
        c.namespace = Some(String::new());
    }
    out.extend(cases);
    out
}

/// A UnitedDeployment (an Advanced StatefulSet template over three zones) with `replicas`
/// (`None`: absent).
fn united_deployment(replicas: Option<Value>) -> Value {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": "x"}},
        "template": {"advancedStatefulSetTemplate": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                "template": {"metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}},
        "topology": {"subsets": [
            {"name": "a", "nodeSelectorTerm": {"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}},
            {"name": "b", "nodeSelectorTerm": {"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}}]},
        "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "Manual", "manualUpdate": {}}
    });
    if let Some(r) = replicas {
        spec["replicas"] = r;
    }
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "ud", "namespace": NAMESPACE}, "spec": spec})
}

/// UnitedDeployment deletions (`/validate-apps-kruise-io-v1alpha1-uniteddeployment`).
fn united_deployment_cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "deletionprotection",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "UnitedDeployment",
        resource: "uniteddeployments",
        cases: Vec::new(),
    };
    for (vi, v) in VALUES.iter().enumerate() {
        for replicas in [None, Some(0), Some(3)] {
            let o = united_deployment(replicas.map(|r| json!(r)));
            let label = format!(
                "uniteddeployment/label-{vi}/replicas-{}",
                replicas.map_or("absent".to_string(), |r| r.to_string())
            );
            b.delete(&label, stored(with_label(o, *v)));
        }
    }
    for v in ["Always", "Cascading"] {
        let o = united_deployment(Some(Value::Null));
        b.delete(
            &format!("uniteddeployment/{}/replicas-null", v.to_lowercase()),
            stored(with_label(o, Some(v))),
        );
    }
    // Values Go's decoder refuses before any label is read.
    for (what, r) in [
        ("string", json!("3")),
        ("float", json!(1.5)),
        ("int64", json!(3_000_000_000_i64)),
    ] {
        let o = united_deployment(Some(r));
        b.delete(
            &format!("uniteddeployment/replicas-{what}"),
            stored(with_label(o, Some("Cascading"))),
        );
    }
    let mut o = stored(with_label(
        united_deployment(Some(json!(3))),
        Some("Always"),
    ));
    o["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
    b.delete("uniteddeployment/terminating", o);
    let mut cases = b.cases;
    // Dry runs are judged as real deletions.
    for (v, r) in [("Always", 0), ("Cascading", 3), ("Cascading", 0)] {
        let o = stored(with_label(united_deployment(Some(json!(r))), Some(v)));
        let mut d = Builder {
            prefix: "deletionprotection",
            group: "apps.kruise.io",
            version: "v1alpha1",
            kind: "UnitedDeployment",
            resource: "uniteddeployments",
            cases: Vec::new(),
        };
        d.delete(
            &format!("uniteddeployment/dry-run/{}/replicas-{r}", v.to_lowercase()),
            o,
        );
        for mut c in d.cases {
            c.dry_run = true;
            cases.push(c);
        }
    }
    cases
}
