//! WorkloadSpread cases (`workloadspread`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/workloadspread/validating` — `targetRef` (each built-in kind with right and
//! wrong groups, a kind of the `kruise-configuration` whitelist of [`cluster`], other kinds, empty
//! fields), subsets (none, names empty and duplicated, node selector terms, preferred terms'
//! weights, tolerations, `maxReplicas` integers and percentages, mixed, negative, malformed,
//! sums, StatefulSet integers only), `scheduleStrategy` (types, adaptive with
//! `rescheduleCriticalSeconds` bounds), conflicts with the WorkloadSpread of [`cluster`] and
//! `targetRef` changes on update. Targets do not exist, so subset patches are not validated
//! against a template (as OpenKruise when the workload is created after its WorkloadSpread).

use serde_json::{Value, json};

use super::{Builder, Case, KRUISE_NAMESPACE, NAMESPACE};

fn spread(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec
    })
}

fn cloneset(name: &str) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": name})
}

fn zone(name: &str, zone: &str) -> Value {
    json!({"name": name, "requiredNodeSelectorTerm": {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}})
}

/// A WorkloadSpread over CloneSet `taken` to conflict with, and the `kruise-configuration`
/// whitelist (TFJob with a replicas path, Advanced DaemonSet).
pub fn cluster() -> Vec<Value> {
    vec![
        spread(
            "corpus-taken",
            json!({"targetRef": cloneset("taken"), "subsets": [{"name": "a"}]}),
        ),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": KRUISE_NAMESPACE},
            "data": {"WorkloadSpread_Watch_Custom_Workload_WhiteList":
                r#"{"workloads":[{"Group":"kubeflow.org","Version":"v1","Kind":"TFJob","ReplicasPath":"spec.tfReplicaSpecs.MASTER.replicas"},{"Group":"apps.kruise.io","Version":"v1alpha1","Kind":"DaemonSet"}]}"#}}),
    ]
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "workloadspread",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "WorkloadSpread",
        resource: "workloadspreads",
        cases: Vec::new(),
    };
    let valid = spread(
        "ws",
        json!({"targetRef": cloneset("web"),
            "subsets": [zone("a", "zone-a"), zone("b", "zone-b")]}),
    );
    b.create("valid", valid.clone());

    // targetRef.
    let refs = [
        cloneset("web"),
        json!({"apiVersion": "apps/v1", "kind": "CloneSet", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}),
        json!({"apiVersion": "extensions/v1beta1", "kind": "Deployment", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ReplicaSet", "name": "web"}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "Job", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet", "name": "web"}),
        json!({"apiVersion": "batch/v1", "kind": "StatefulSet", "name": "web"}),
        json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "web"}),
        json!({"apiVersion": "kubeflow.org/v2", "kind": "TFJob", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web"}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}),
        json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "web"}),
        json!({"apiVersion": "", "kind": "CloneSet", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "", "name": "web"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": ""}),
        // Conflicts with corpus-taken (any version of the same group).
        cloneset("taken"),
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "taken"}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "taken"}),
    ];
    for (i, r) in refs.iter().enumerate() {
        let mut o = valid.clone();
        o["spec"]["targetRef"] = r.clone();
        b.create(&format!("target-ref-{i}"), o);
    }
    // Same name as the existing one: no conflict with itself.
    let mut o = valid.clone();
    o["metadata"]["name"] = json!("corpus-taken");
    o["spec"]["targetRef"] = cloneset("taken");
    b.create("same-name-as-existing", o);

    // Subsets: count and names.
    for (i, subsets) in [
        json!([]),
        json!([{"name": "a"}]),
        json!([{"name": ""}]),
        json!([{"name": "a"}, {"name": "a"}]),
        json!([{"name": "a"}, {"name": ""}, {"name": "a"}, {"name": "a"}]),
        json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"] = subsets;
        b.create(&format!("subsets-{i}"), o);
    }

    // Required node selector terms.
    let requirements = [
        json!({"key": "zone", "operator": "In", "values": ["a"]}),
        json!({"key": "zone", "operator": "In", "values": []}),
        json!({"key": "zone", "operator": "NotIn", "values": ["a", "b"]}),
        json!({"key": "zone", "operator": "Exists"}),
        json!({"key": "zone", "operator": "Exists", "values": ["a"]}),
        json!({"key": "zone", "operator": "DoesNotExist"}),
        json!({"key": "zone", "operator": "Gt", "values": ["3"]}),
        json!({"key": "zone", "operator": "Gt", "values": ["3", "4"]}),
        json!({"key": "zone", "operator": "Lt", "values": []}),
        json!({"key": "zone", "operator": "Equals", "values": ["a"]}),
        json!({"key": "", "operator": "In", "values": ["a"]}),
        json!({"key": "bad key!", "operator": "In", "values": ["a"]}),
        json!({"key": "zone", "operator": "In", "values": ["bad value!"]}),
    ];
    for (i, r) in requirements.iter().enumerate() {
        let mut o = valid.clone();
        o["spec"]["subsets"][0]["requiredNodeSelectorTerm"] = json!({"matchExpressions": [r]});
        b.create(&format!("required-term-{i}"), o);
    }
    for (i, f) in [
        json!({"key": "metadata.name", "operator": "In", "values": ["n1"]}),
        json!({"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}),
        json!({"key": "metadata.name", "operator": "Exists"}),
        json!({"key": "spec.unschedulable", "operator": "In", "values": ["true"]}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"][0]["requiredNodeSelectorTerm"] = json!({"matchFields": [f]});
        b.create(&format!("required-fields-{i}"), o);
    }
    let mut o = valid.clone();
    o["spec"]["subsets"][0]["requiredNodeSelectorTerm"] = json!({});
    b.create("required-term-empty", o);

    // Preferred terms.
    for (i, (w, r)) in [
        (1, requirements[0].clone()),
        (100, requirements[3].clone()),
        (0, requirements[0].clone()),
        (101, requirements[0].clone()),
        (-5, requirements[1].clone()),
        (50, requirements[9].clone()),
        (50, requirements[12].clone()),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"][1]["preferredNodeSelectorTerms"] =
            json!([{"weight": w, "preference": {"matchExpressions": [r]}}]);
        b.create(&format!("preferred-term-{i}"), o);
    }

    // Tolerations.
    for (i, t) in [
        json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30}),
        json!({"operator": "Exists"}),
        json!({"key": "k", "operator": "Exists", "value": "v"}),
        json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 30}),
        json!({"key": "k", "operator": "Like", "value": "v"}),
        json!({"key": "k", "effect": "Sometimes"}),
        json!({"key": "bad key!", "operator": "Exists"}),
        json!({"value": "v"}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"][0]["tolerations"] = json!([t]);
        b.create(&format!("toleration-{i}"), o);
    }

    // maxReplicas.
    for (i, (a, c)) in [
        (json!(3), Value::Null),
        (json!(0), Value::Null),
        (json!(-1), Value::Null),
        (json!(3), json!(2)),
        (json!("50%"), json!("50%")),
        (json!("50%"), Value::Null),
        (json!("30%"), json!("30%")),
        (json!("70%"), json!("50%")),
        (json!("100%"), Value::Null),
        (json!("101%"), Value::Null),
        (json!("-10%"), Value::Null),
        (json!("abc"), Value::Null),
        (json!("50"), Value::Null),
        (json!("%"), Value::Null),
        (json!(3), json!("50%")),
        (json!("50%"), json!(3)),
        (json!("0%"), json!("100%")),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"][0]["maxReplicas"] = a;
        if !c.is_null() {
            o["spec"]["subsets"][1]["maxReplicas"] = c;
        }
        b.create(&format!("max-replicas-{i}"), o);
    }
    for (i, subsets) in [
        json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b", "maxReplicas": "30%"}, {"name": "c"}]),
        json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b", "maxReplicas": "30%"}, {"name": "c", "maxReplicas": "40%"}]),
        json!([{"name": "a", "maxReplicas": "30%"}, {"name": "b"}, {"name": "c", "maxReplicas": "30%"}]),
        json!([{"name": "a", "maxReplicas": "60%"}, {"name": "b", "maxReplicas": "60%"}, {"name": "c"}]),
        json!([{"name": "a"}, {"name": "b", "maxReplicas": 2}, {"name": "c", "maxReplicas": "x"}]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"] = subsets;
        b.create(&format!("max-replicas-three-{i}"), o);
    }
    for (i, m) in [json!(2), json!("50%"), json!("x")].into_iter().enumerate() {
        for (j, r) in [
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}),
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"}),
        ]
        .into_iter()
        .enumerate()
        {
            let mut o = valid.clone();
            o["spec"]["targetRef"] = r;
            o["spec"]["subsets"][0]["maxReplicas"] = m.clone();
            b.create(&format!("statefulset-max-replicas-{i}-{j}"), o);
        }
    }

    // scheduleStrategy.
    for (i, s) in [
        json!({"type": "Fixed"}),
        json!({"type": "Adaptive"}),
        json!({"type": ""}),
        json!({"type": "Random"}),
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}),
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 0}}),
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": -1}}),
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 295}}),
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 296}}),
        json!({"type": "Adaptive", "adaptive": {"disableSimulationSchedule": true}}),
        json!({"type": "Fixed", "adaptive": {"rescheduleCriticalSeconds": 30}}),
        json!({"adaptive": {"rescheduleCriticalSeconds": 30}}),
        json!({"type": "Random", "adaptive": {}}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["scheduleStrategy"] = s;
        b.create(&format!("schedule-strategy-{i}"), o);
    }
    for (i, (subsets, secs)) in [
        (json!([{"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 2}]), 10),
        (json!([{"name": "a", "maxReplicas": 2}, {"name": "b"}, {"name": "c"}]), 147),
        (json!([{"name": "a", "maxReplicas": 2}, {"name": "b"}, {"name": "c"}]), 148),
        (json!([{"name": "a", "maxReplicas": 1}]), 1000),
        (json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}, {"name": "f"}]), 60),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["subsets"] = subsets;
        o["spec"]["scheduleStrategy"] =
            json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": secs}});
        b.create(&format!("adaptive-{i}"), o);
    }

    // targetFilter (valid selectors only: OpenKruise prints the filter with its pointers).
    for (i, f) in [
        json!({"selector": {"matchLabels": {"app": "web"}}}),
        json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}),
        json!({"selector": {"matchLabels": {"app": "web"}}, "replicasPathList": ["spec.replicas"]}),
        json!({"replicasPathList": ["spec.replicas", "spec.other"]}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["spec"]["targetFilter"] = f;
        b.create(&format!("target-filter-{i}"), o);
    }

    // Several errors at once.
    b.create(
        "everything-wrong",
        spread(
            "ws",
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "CloneSet", "name": "web"},
                "subsets": [{"name": "", "maxReplicas": -1}, {"name": "", "tolerations": [{"operator": "Like"}]}],
                "scheduleStrategy": {"type": "Random", "adaptive": {"rescheduleCriticalSeconds": -1}}}),
        ),
    );

    // Updates.
    let mut edits: Vec<(&str, Value, Value)> = Vec::new();
    let mut v = valid.clone();
    v["spec"]["subsets"][0]["maxReplicas"] = json!(5);
    edits.push(("max-replicas-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"]["name"] = json!("other");
    edits.push(("target-name-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"]["apiVersion"] = json!("apps.kruise.io/v1beta1");
    edits.push(("target-version-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"] = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    edits.push(("target-kind-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"] = cloneset("taken");
    edits.push(("target-to-taken", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["subsets"] = json!([{"name": "a"}, {"name": "a"}]);
    v["spec"]["targetRef"]["name"] = json!("other");
    edits.push(("invalid-and-target-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["subsets"] = json!([
        zone("a", "zone-a"),
        zone("b", "zone-b"),
        zone("c", "zone-c")
    ]);
    edits.push(("subset-added", valid, v));
    for (label, old, new) in edits {
        b.update(label, old, new);
    }
    b.cases
}
