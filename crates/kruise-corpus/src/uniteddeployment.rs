//! UnitedDeployment cases (`uniteddeployment`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/uniteddeployment` — the defaults (history limit, `Manual` update strategy with
//! `manualUpdate: {}`, `minReplicas: 0` for capacity subsets, a StatefulSet template's pod
//! defaults, the status reset), the name rule, `replicas`, the selector (valid, non-empty,
//! matching the template's labels), exactly one template (StatefulSet, Advanced StatefulSet,
//! CloneSet, Deployment) and what each validates (no own `replicas` / `partition`, the pod
//! template as Kubernetes validates a StatefulSet's or a ReplicaSet's), subset names
//! (required, unique, DNS labels), node selector terms, tolerations, `replicas` /
//! `minReplicas` / `maxReplicas` (numbers and percentages, exclusive, sums), the adaptive
//! strategy (no fixed `replicas`; reservation only for stateless templates), partitions of
//! existing subsets only; on update the immutable subset node selector terms and tolerations
//! and a StatefulSet template's spec beyond `template` / `updateStrategy`; DELETE under deletion
//! protection. Cases avoid two of OpenKruise's messages that are not deterministic (a `*int32`
//! printed with `%d`, i.e. its address; several unknown partitions, reported in Go map order).

use serde_json::{Value, json};

use super::{
    Builder, Case, Edit, NAMESPACE, bools, label_maps, pod_spec_edits, selectors, strings,
};

fn pod_template() -> Value {
    json!({"metadata": {"labels": {"app": "demo"}},
           "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}})
}

fn template(kind: &str) -> Value {
    let mut spec =
        json!({"selector": {"matchLabels": {"app": "demo"}}, "template": pod_template()});
    if kind.contains("tatefulSet") {
        spec["serviceName"] = json!("demo");
    }
    json!({kind: {"metadata": {"labels": {"app": "demo"}}, "spec": spec}})
}

fn ud(name: &str, kind: &str, topology: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": template(kind),
            "topology": topology,
        }
    })
}

/// Deployment template, two subsets sharing the replicas.
fn base() -> Value {
    ud(
        "ud",
        "deploymentTemplate",
        json!({"subsets": [{"name": "a"}, {"name": "b"}]}),
    )
}

/// CloneSet template with capacities, node selector terms, tolerations, patch and partitions.
fn full() -> Value {
    let mut o = ud(
        "ud-full",
        "cloneSetTemplate",
        json!({"subsets": [
            {"name": "zone-a", "minReplicas": 1, "maxReplicas": 2,
             "nodeSelectorTerm": {"matchExpressions": [
                 {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]},
             "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
             "patch": {"metadata": {"labels": {"zone": "a"}}}},
            {"name": "zone-b", "maxReplicas": "50%"},
            {"name": "zone-c"}]}),
    );
    o["metadata"]["labels"] = json!({"team": "a"});
    o["spec"]["revisionHistoryLimit"] = json!(5);
    o["spec"]["updateStrategy"] =
        json!({"type": "Manual", "manualUpdate": {"partitions": {"zone-a": 1}}});
    o
}

/// Advanced StatefulSet template with the adaptive strategy.
fn adaptive() -> Value {
    ud(
        "ud-adaptive",
        "advancedStatefulSetTemplate",
        json!({"scheduleStrategy": {"type": "Adaptive", "adaptive": {
                   "rescheduleCriticalSeconds": 10, "unschedulableDuration": 60}},
               "subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b"}]}),
    )
}

/// StatefulSet template (its pod spec is defaulted by the mutating webhook).
fn statefulset() -> Value {
    let mut o = ud(
        "ud-sts",
        "statefulSetTemplate",
        json!({"subsets": [{"name": "a"}, {"name": "b"}]}),
    );
    o["spec"]["template"]["statefulSetTemplate"]["spec"]["volumeClaimTemplates"] = json!([
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}]);
    o
}

/// Subset replica values whose sums never exceed `spec.replicas` (3) in the cases below:
/// OpenKruise reports an exceeded sum with the address of a pointer.
fn subset_replicas() -> Vec<Value> {
    vec![
        json!(0),
        json!(1),
        json!(3),
        json!(-1),
        json!("0%"),
        json!("50%"),
        json!("100%"),
        json!("150%"),
        json!("-10%"),
        json!("abc"),
        json!(""),
        json!("3"),
        json!("1.5%"),
        json!("99999999999999%"),
        json!(true),
        Value::Null,
    ]
}

fn capacities() -> Vec<Value> {
    let mut v = subset_replicas();
    v.extend([json!(2), json!(100), json!("20%")]);
    v
}

/// The cases.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "uniteddeployment",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "UnitedDeployment",
        resource: "uniteddeployments",
        cases: Vec::new(),
    };
    b.create("valid/minimal", base());
    b.create("valid/full", full());
    b.create("valid/adaptive", adaptive());
    b.create("valid/statefulset", statefulset());
    for kind in [
        "statefulSetTemplate",
        "advancedStatefulSetTemplate",
        "cloneSetTemplate",
        "deploymentTemplate",
    ] {
        b.create(
            &format!("valid/{kind}"),
            ud("ud", kind, json!({"subsets": [{"name": "a"}]})),
        );
    }
    let mut with_status = full();
    with_status["status"] = json!({"replicas": 3, "currentRevision": "x", "updatedReplicas": 1});
    b.create("valid/with-status", with_status);

    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set(
        "/spec/replicas",
        vec![
            json!(0),
            json!(3),
            json!(-1),
            json!(2147483648i64),
            json!("3"),
            json!(1.5),
            Value::Null,
        ],
    );
    set(
        "/spec/revisionHistoryLimit",
        vec![json!(0), json!(-1), json!(3), json!("x")],
    );
    set("/spec/selector", selectors());
    set("/spec/template", vec![json!({}), json!("x")]);
    set(
        "/spec/topology/subsets/0/name",
        vec![
            json!(""),
            json!("b"),
            json!("Bad_Name"),
            json!("UPPER"),
            json!("a.b"),
            json!("x".repeat(64)),
            json!(5),
        ],
    );
    set("/spec/topology/subsets/0/replicas", subset_replicas());
    set("/spec/topology/subsets/0/minReplicas", capacities());
    set("/spec/topology/subsets/0/maxReplicas", capacities());
    set(
        "/spec/topology/subsets/0/nodeSelectorTerm",
        vec![
            json!({}),
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
            json!({"matchExpressions": [{"key": "zone", "operator": "Bogus", "values": ["a"]}]}),
            json!({"matchExpressions": [{"key": "zone", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "bad key!", "operator": "Exists"}]}),
            json!({"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}),
            json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
            json!({"matchFields": [{"key": "spec.x", "operator": "In", "values": ["n1"]}]}),
            json!("x"),
        ],
    );
    set(
        "/spec/topology/subsets/0/tolerations",
        vec![
            json!([]),
            json!([{"operator": "Exists"}]),
            json!([{"key": "k", "operator": "Bogus"}]),
            json!([{"key": "k", "operator": "Exists", "value": "v"}]),
            json!([{"key": "bad key!", "operator": "Exists"}]),
            json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "Sometimes"}]),
            json!([{"operator": "Equal", "value": "v"}]),
            json!([{"key": "k", "effect": "NoExecute", "tolerationSeconds": 5}]),
            json!([{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]),
            json!("x"),
        ],
    );
    set(
        "/spec/topology/subsets/0/patch",
        vec![
            json!({"metadata": {"labels": {"x": "y"}}}),
            json!({}),
            json!("x"),
            json!(5),
        ],
    );
    set(
        "/spec/topology/subsets",
        vec![
            json!([]),
            json!([{"name": "a"}]),
            json!([{"name": "a", "replicas": 1}, {"name": "b", "minReplicas": 1}]),
            json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}]),
            json!([{"name": "a", "minReplicas": 3, "maxReplicas": 1}, {"name": "b"}]),
            json!([{"name": "a", "minReplicas": 2, "maxReplicas": 1}, {"name": "b", "minReplicas": 0}]),
            json!([{"name": "a", "minReplicas": "150%"}, {"name": "b"}]),
            json!([{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}]),
            json!([{"name": "a", "replicas": "100%"}, {"name": "b", "replicas": 0}]),
            json!([{"name": "a"}, {"name": "a"}]),
            json!("x"),
        ],
    );
    set(
        "/spec/topology/scheduleStrategy",
        vec![
            json!({}),
            json!({"type": "Fixed"}),
            json!({"type": "Adaptive"}),
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 5}}),
            json!({"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": true}}),
            json!({"type": "Bogus"}),
            json!({"type": ""}),
            json!("x"),
        ],
    );
    set(
        "/spec/updateStrategy",
        vec![
            json!({}),
            json!({"type": "Manual"}),
            json!({"type": ""}),
            json!({"type": "Bogus"}),
            json!({"type": "Manual", "manualUpdate": {"partitions": {"a": 1}}}),
            json!({"type": "Manual", "manualUpdate": {"partitions": {"zz": 1}}}),
            json!({"type": "Manual", "manualUpdate": {"partitions": {"a": -1}}}),
            json!({"manualUpdate": {}}),
            json!("x"),
        ],
    );
    set(
        "/spec/template/deploymentTemplate/metadata/labels",
        label_maps(),
    );
    set(
        "/spec/template/deploymentTemplate/spec/replicas",
        vec![json!(1), json!(0), json!(-1)],
    );
    set(
        "/spec/template/deploymentTemplate/spec/template/metadata/labels",
        label_maps(),
    );
    set(
        "/spec/template/deploymentTemplate/spec/template/spec/restartPolicy",
        strings(&["Always", "Never", "OnFailure"]),
    );
    set(
        "/spec/template/deploymentTemplate/spec/template/spec/activeDeadlineSeconds",
        vec![json!(10), json!(0)],
    );
    set("/spec/template/deploymentTemplate/spec/paused", bools());
    set(
        "/spec/template/cloneSetTemplate",
        vec![
            json!({"spec": {"selector": {"matchLabels": {"app": "demo"}}, "template": pod_template()}}),
        ],
    );
    set(
        "/spec/template/statefulSetTemplate",
        vec![
            json!({"metadata": {"labels": {"app": "demo"}}, "spec": {"template": pod_template()}}),
        ],
    );
    set(
        "/metadata/name",
        vec![
            json!("Bad_Name"),
            json!("ok-name"),
            json!("a.b"),
            json!("x".repeat(254)),
        ],
    );
    set(
        "/metadata/labels",
        label_maps().into_iter().filter(Value::is_object).collect(),
    );
    edits.push(Edit::Remove("/spec/template/deploymentTemplate"));
    edits.push(Edit::Remove("/spec/replicas"));
    edits.push(Edit::Remove("/spec/topology"));
    edits.push(Edit::Remove("/spec/template/deploymentTemplate/metadata"));
    edits.extend(pod_spec_edits(
        "/spec/template/deploymentTemplate/spec/template/spec",
    ));
    b.edits(&[("min", base())], &edits, 40, 0x5544_0001);

    let mut full_edits: Vec<Edit> = Vec::new();
    let mut fset = |p: &'static str, vals: Vec<Value>| {
        full_edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    fset(
        "/spec/replicas",
        vec![json!(0), json!(1), json!(10), Value::Null],
    );
    fset("/spec/topology/subsets/1/maxReplicas", capacities());
    fset("/spec/topology/subsets/2/minReplicas", capacities());
    fset(
        "/spec/updateStrategy/manualUpdate/partitions",
        vec![
            json!({}),
            json!({"zone-b": 2}),
            json!({"nowhere": 1}),
            json!(null),
        ],
    );
    fset(
        "/spec/template/cloneSetTemplate/spec/replicas",
        vec![json!(2)],
    );
    fset(
        "/spec/template/cloneSetTemplate/metadata/labels",
        label_maps(),
    );
    fset(
        "/spec/template/cloneSetTemplate/spec/template/metadata/labels",
        label_maps(),
    );
    fset(
        "/spec/template/deploymentTemplate",
        vec![template("deploymentTemplate")["deploymentTemplate"].clone()],
    );
    b.edits(&[("full", full())], &full_edits, 0, 0);

    let mut a_edits: Vec<Edit> = Vec::new();
    let mut aset = |p: &'static str, vals: Vec<Value>| {
        a_edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    aset("/spec/topology/subsets/0/replicas", vec![json!(1)]);
    aset(
        "/spec/topology/scheduleStrategy/adaptive/reserveUnschedulablePods",
        bools(),
    );
    aset(
        "/spec/topology/scheduleStrategy/adaptive/rescheduleCriticalSeconds",
        vec![json!(0), json!(-1), json!("x")],
    );
    aset(
        "/spec/template/advancedStatefulSetTemplate/spec/replicas",
        vec![json!(1)],
    );
    aset(
        "/spec/template/advancedStatefulSetTemplate/spec/updateStrategy",
        vec![
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
            json!({"type": "OnDelete"}),
            json!({"rollingUpdate": {"partition": 1}}),
        ],
    );
    aset(
        "/spec/template/advancedStatefulSetTemplate/metadata/labels",
        label_maps(),
    );
    aset(
        "/spec/template/advancedStatefulSetTemplate/spec/template/metadata/labels",
        label_maps(),
    );
    aset(
        "/spec/template/advancedStatefulSetTemplate/spec/template/metadata/annotations",
        vec![json!({"a": "b"}), json!({"bad key!": "v"})],
    );
    b.edits(&[("adaptive", adaptive())], &a_edits, 0, 0);

    let mut s_edits: Vec<Edit> = Vec::new();
    let mut sset = |p: &'static str, vals: Vec<Value>| {
        s_edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    sset(
        "/spec/template/statefulSetTemplate/spec/replicas",
        vec![json!(1), json!(-1)],
    );
    sset(
        "/spec/template/statefulSetTemplate/spec/updateStrategy",
        vec![
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
            json!({"type": "OnDelete"}),
        ],
    );
    sset(
        "/spec/template/statefulSetTemplate/spec/template/metadata/labels",
        label_maps(),
    );
    sset(
        "/spec/template/statefulSetTemplate/spec/template/spec/restartPolicy",
        strings(&["Always"]),
    );
    sset(
        "/spec/topology/scheduleStrategy",
        vec![json!({"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": true}})],
    );
    s_edits.extend(
        pod_spec_edits("/spec/template/statefulSetTemplate/spec/template/spec")
            .into_iter()
            .step_by(4),
    );
    b.edits(&[("sts", statefulset())], &s_edits, 0, 0);
    b.names(&base());

    // Updates.
    let upd: Vec<(&str, Value, Edit)> = vec![
        (
            "min",
            base(),
            Edit::Set(
                "/spec/template/deploymentTemplate/spec/template/spec/containers/0/image",
                json!("nginx:1.26"),
            ),
        ),
        ("min", base(), Edit::Set("/spec/replicas", json!(5))),
        ("min", base(), Edit::Set("/spec/replicas", json!(-1))),
        (
            "min",
            base(),
            Edit::Set("/spec/topology/subsets/2", json!({"name": "c"})),
        ),
        (
            "min",
            base(),
            Edit::Set(
                "/spec/topology/subsets/0/nodeSelectorTerm",
                json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}),
            ),
        ),
        (
            "min",
            base(),
            Edit::Set(
                "/spec/topology/subsets/0/tolerations",
                json!([{"operator": "Exists"}]),
            ),
        ),
        (
            "min",
            base(),
            Edit::Set("/spec/selector", json!({"matchLabels": {"app": "other"}})),
        ),
        (
            "min",
            base(),
            Edit::Set("/spec/template/deploymentTemplate/spec/replicas", json!(-1)),
        ),
        (
            "full",
            full(),
            Edit::Set("/spec/topology/subsets/0/nodeSelectorTerm", json!({})),
        ),
        (
            "full",
            full(),
            Edit::Set("/spec/topology/subsets/0/tolerations", json!([])),
        ),
        (
            "full",
            full(),
            Edit::Set(
                "/spec/topology/subsets/0/patch",
                json!({"metadata": {"labels": {"zone": "a2"}}}),
            ),
        ),
        (
            "full",
            full(),
            Edit::Set("/spec/topology/subsets/1/name", json!("zone-d")),
        ),
        (
            "full",
            full(),
            Edit::Set(
                "/spec/updateStrategy/manualUpdate/partitions",
                json!({"zone-a": 2}),
            ),
        ),
        (
            "full",
            full(),
            Edit::Set(
                "/spec/template/cloneSetTemplate/spec/template/spec/containers/0/image",
                json!("nginx:1.26"),
            ),
        ),
        (
            "full",
            full(),
            Edit::Set("/metadata/labels", json!({"team": "b"})),
        ),
        (
            "full",
            full(),
            Edit::Set(
                "/status",
                json!({"replicas": 1, "currentRevision": "r", "updatedReplicas": 0}),
            ),
        ),
        (
            "adaptive",
            adaptive(),
            Edit::Set(
                "/spec/template/advancedStatefulSetTemplate/spec/serviceName",
                json!("other"),
            ),
        ),
        (
            "adaptive",
            adaptive(),
            Edit::Set(
                "/spec/template/advancedStatefulSetTemplate/spec/replicas",
                json!(-1),
            ),
        ),
        (
            "adaptive",
            adaptive(),
            Edit::Set(
                "/spec/template/advancedStatefulSetTemplate/spec/template/spec/containers/0/image",
                json!("nginx:1.26"),
            ),
        ),
        (
            "adaptive",
            adaptive(),
            Edit::Set(
                "/spec/template/advancedStatefulSetTemplate/spec/updateStrategy",
                json!({"type": "OnDelete"}),
            ),
        ),
        (
            "sts",
            statefulset(),
            Edit::Set(
                "/spec/template/statefulSetTemplate/spec/serviceName",
                json!("other"),
            ),
        ),
        (
            "sts",
            statefulset(),
            Edit::Set(
                "/spec/template/statefulSetTemplate/spec/podManagementPolicy",
                json!("Parallel"),
            ),
        ),
        (
            "sts",
            statefulset(),
            Edit::Set(
                "/spec/template/statefulSetTemplate/spec/template/spec/containers/0/image",
                json!("nginx:1.26"),
            ),
        ),
        (
            "sts",
            statefulset(),
            Edit::Set(
                "/spec/template/statefulSetTemplate/spec/replicas",
                json!(-2),
            ),
        ),
        (
            "sts",
            statefulset(),
            Edit::Set(
                "/spec/template/deploymentTemplate",
                template("deploymentTemplate")["deploymentTemplate"].clone(),
            ),
        ),
    ];
    for (bname, base, e) in upd {
        let mut o = base.clone();
        e.apply(&mut o);
        b.update(&format!("{bname}/{}", e.label()), base, o);
    }
    // Deletion protection.
    for (label, replicas) in [
        ("always", json!(3)),
        ("cascading", json!(3)),
        ("cascading", json!(0)),
    ] {
        let mut o = base();
        o["metadata"]["labels"] = json!({"policy.kruise.io/delete-protection": match label {
            "always" => "Always", _ => "Cascading"}});
        o["spec"]["replicas"] = replicas.clone();
        b.delete(&format!("{label}-{replicas}"), o);
    }
    b.finish()
}
