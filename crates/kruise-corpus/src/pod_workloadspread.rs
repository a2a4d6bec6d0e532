//! Pod CREATE cases for the pod webhook's WorkloadSpread step (`pod-workloadspread`; OpenKruise
//! v1.9.0 `pkg/webhook/pod/mutating/workloadspread.go`): pods of a CloneSet a WorkloadSpread of
//! [`cluster`] targets get the first subset with room (its node term merged into theirs, its
//! tolerations and patch, the `apps.kruise.io/matched-workloadspread` annotation), a
//! `targetFilter` selects by label, a StatefulSet's pods take subsets by ordinal; pods of other
//! or unknown owners, without a controller, finished or dry runs are left alone, and a pod whose
//! known owner does not exist is refused (OpenKruise looks the owner's own controller up). Pods
//! are named (a `generateName` pod gets a generated identifier in its annotation).

use serde_json::{Value, json};

use super::{Builder, Case, KRUISE_NAMESPACE};

/// One namespace per WorkloadSpread: OpenKruise tries a namespace's WorkloadSpreads in the
/// informer's (random) order and refuses the pod when one of them makes it look up an owner that
/// does not exist, so two in one namespace would make its verdicts random.
const WEB: &str = "pw-web";
const FILTER: &str = "pw-filter";
const DB: &str = "pw-db";
/// A subset patch of containers, env, ports, volumes, tolerations and labels (apimachinery's
/// strategic merge with the `Pod` schema), and one it refuses (a container without its name).
const PATCH: &str = "pw-patch";
const BAD_PATCH: &str = "pw-badpatch";

fn spread(name: &str, ns: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// WorkloadSpreads over CloneSet `web` (subset `a` with room for many, its node term,
/// toleration and patch; `b` unlimited), over CloneSet `filtered` (pods labelled
/// `pick: yes`, one unlimited subset), over StatefulSet `db` (subsets of 2, 1 and the rest), and
/// the `kruise-configuration` whitelist.
pub fn cluster() -> Vec<Value> {
    vec![
        namespace(WEB),
        namespace(FILTER),
        namespace(DB),
        namespace(PATCH),
        namespace(BAD_PATCH),
        spread(
            "ws-patch",
            PATCH,
            json!({
            "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "patched"},
            "subsets": [{"name": "p", "patch": {
                "metadata": {"labels": {"subset": "p", "drop": null}, "annotations": {"note": "p"}},
                "spec": {
                    "containers": [
                        {"name": "main", "resources": {"limits": {"cpu": "1"}},
                         "env": [{"name": "ZONE", "value": "p"}, {"name": "GONE", "$patch": "delete"}],
                         "ports": [{"containerPort": 8080, "name": "alt"}]},
                        {"name": "added", "image": "busybox:1.36"}],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "spot", "operator": "Exists"}],
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                        "whenUnsatisfiable": "ScheduleAnyway"}]}}}]}),
        ),
        spread(
            "ws-badpatch",
            BAD_PATCH,
            json!({
            "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "broken"},
            "subsets": [{"name": "x", "patch": {"spec": {"containers": [{"image": "busybox:1.36"}]}}}]}),
        ),
        spread(
            "ws-web",
            WEB,
            json!({
            "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web"},
            "subsets": [
                {"name": "a", "maxReplicas": 100000,
                 "requiredNodeSelectorTerm": {"matchExpressions": [
                     {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]},
                 "preferredNodeSelectorTerms": [{"weight": 10, "preference": {"matchExpressions": [
                     {"key": "disk", "operator": "In", "values": ["ssd"]}]}}],
                 "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
                 "patch": {"metadata": {"labels": {"subset": "a"}, "annotations": {"note": "a"}}}},
                {"name": "b"}]}),
        ),
        spread(
            "ws-filtered",
            FILTER,
            json!({
            "targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "filtered"},
            "targetFilter": {"selector": {"matchLabels": {"pick": "yes"}}},
            "subsets": [{"name": "only", "patch": {"metadata": {"labels": {"picked": "true"}}}}]}),
        ),
        spread(
            "ws-db",
            DB,
            json!({
            "targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "subsets": [{"name": "s0", "maxReplicas": 2}, {"name": "s1", "maxReplicas": 1}, {"name": "s2"}]}),
        ),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": KRUISE_NAMESPACE},
            "data": {"WorkloadSpread_Watch_Custom_Workload_WhiteList":
                r#"{"workloads":[{"Group":"kubeflow.org","Version":"v1","Kind":"TFJob","ReplicasPath":"spec.tfReplicaSpecs.MASTER.replicas"},{"Group":"apps.kruise.io","Version":"v1alpha1","Kind":"DaemonSet"}]}"#}}),
    ]
}

fn owner(api_version: &str, kind: &str, name: &str, controller: Value) -> Value {
    let mut o = json!({"apiVersion": api_version, "kind": kind, "name": name,
        "uid": "6f9d2b1e-0000-4000-8000-0000000000aa"});
    if !controller.is_null() {
        o["controller"] = controller;
    }
    o
}

fn pod(name: &str, ns: &str, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "demo"},
            "ownerReferences": owners},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}})
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "pod-workloadspread",
        group: "",
        version: "v1",
        kind: "Pod",
        resource: "pods",
        cases: Vec::new(),
    };
    let web = json!([owner(
        "apps.kruise.io/v1alpha1",
        "CloneSet",
        "web",
        json!(true)
    )]);
    let base = pod("web-1", WEB, web.clone());
    b.create("web", base.clone());
    // Spec variations the injection merges into.
    let variants: Vec<(&str, Value)> = vec![
        (
            "affinity-required",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}),
        ),
        (
            "affinity-two-terms",
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}),
        ),
        (
            "affinity-preferred",
            json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "y", "operator": "Exists"}]}}]}}),
        ),
        (
            "affinity-pod-anti",
            json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "demo"}}}}]}}),
        ),
        ("affinity-empty", json!({})),
    ];
    for (label, a) in variants {
        let mut p = base.clone();
        p["metadata"]["name"] = json!(format!("web-{label}"));
        p["spec"]["affinity"] = a;
        b.create(label, p);
    }
    for (i, t) in [
        json!([{"key": "other", "operator": "Exists"}]),
        json!([{"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoSchedule"}]),
        json!([]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = base.clone();
        p["metadata"]["name"] = json!(format!("web-tolerations-{i}"));
        p["spec"]["tolerations"] = t;
        b.create(&format!("tolerations-{i}"), p);
    }
    for (i, (labels, annotations)) in [
        (json!({"subset": "z"}), Value::Null),
        (Value::Null, json!({"note": "mine"})),
        (json!({}), json!({})),
        (
            json!({"app": "demo", "x": "y"}),
            json!({"apps.kruise.io/matched-workloadspread": "{\"name\":\"old\",\"subset\":\"x\"}"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = base.clone();
        p["metadata"]["name"] = json!(format!("web-meta-{i}"));
        if labels.is_null() {
            p["metadata"].as_object_mut().map(|m| m.remove("labels"));
        } else {
            p["metadata"]["labels"] = labels;
        }
        if !annotations.is_null() {
            p["metadata"]["annotations"] = annotations;
        }
        b.create(&format!("metadata-{i}"), p);
    }
    for (i, extra) in [
        json!({"priorityClassName": "high", "priority": 1000}),
        json!({"nodeSelector": {"disk": "ssd"}}),
        json!({"nodeName": "kwok-node-0"}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = base.clone();
        p["metadata"]["name"] = json!(format!("web-spec-{i}"));
        for (k, v) in extra.as_object().into_iter().flatten() {
            p["spec"][k] = v.clone();
        }
        b.create(&format!("spec-{i}"), p);
    }
    // Phases and deletion: inactive pods are left alone.
    for (i, phase) in ["Succeeded", "Failed", "Pending", "Running"]
        .iter()
        .enumerate()
    {
        let mut p = base.clone();
        p["metadata"]["name"] = json!(format!("web-phase-{i}"));
        p["status"] = json!({"phase": phase});
        b.create(&format!("phase-{i}"), p);
    }
    let mut p = base.clone();
    p["metadata"]["name"] = json!("web-dry-run");
    b.create("dry-run", p);
    if let Some(c) = b.cases.last_mut() {
        c.dry_run = true;
    }

    // Owners.
    let owners: Vec<(&str, Value)> = vec![
        (
            "not-controller",
            json!([owner(
                "apps.kruise.io/v1alpha1",
                "CloneSet",
                "web",
                json!(false)
            )]),
        ),
        (
            "controller-unset",
            json!([owner(
                "apps.kruise.io/v1alpha1",
                "CloneSet",
                "web",
                Value::Null
            )]),
        ),
        (
            "beta-version",
            json!([owner(
                "apps.kruise.io/v1beta1",
                "CloneSet",
                "web",
                json!(true)
            )]),
        ),
        (
            "wrong-group",
            json!([owner("apps/v1", "CloneSet", "web", json!(true))]),
        ),
        (
            "unknown-kind",
            json!([owner("example.com/v1", "Widget", "web", json!(true))]),
        ),
        (
            "rc",
            json!([owner("v1", "ReplicationController", "web", json!(true))]),
        ),
        (
            "daemonset-whitelisted",
            json!([owner(
                "apps.kruise.io/v1alpha1",
                "DaemonSet",
                "web",
                json!(true)
            )]),
        ),
        (
            "missing-cloneset",
            json!([owner(
                "apps.kruise.io/v1alpha1",
                "CloneSet",
                "nowhere",
                json!(true)
            )]),
        ),
        (
            "missing-replicaset",
            json!([owner("apps/v1", "ReplicaSet", "web-5d4f", json!(true))]),
        ),
        (
            "missing-deployment",
            json!([owner("apps/v1", "Deployment", "web", json!(true))]),
        ),
        (
            "missing-job",
            json!([owner("batch/v1", "Job", "web", json!(true))]),
        ),
        (
            "second-owner-controls",
            json!([
                owner("v1", "ConfigMap", "cm", json!(false)),
                owner("apps.kruise.io/v1alpha1", "CloneSet", "web", json!(true))
            ]),
        ),
        ("none", json!([])),
    ];
    for (label, o) in owners {
        let p = pod(&format!("owner-{label}"), WEB, o);
        b.create(&format!("owner-{label}"), p);
    }

    // targetFilter.
    let filtered = json!([owner(
        "apps.kruise.io/v1alpha1",
        "CloneSet",
        "filtered",
        json!(true)
    )]);
    for (i, labels) in [
        json!({"pick": "yes"}),
        json!({"pick": "no"}),
        json!({}),
        json!({"pick": "yes", "app": "demo"}),
    ]
    .into_iter()
    .enumerate()
    {
        let mut p = pod(&format!("filtered-{i}"), FILTER, filtered.clone());
        p["metadata"]["labels"] = labels;
        b.create(&format!("filter-{i}"), p);
    }

    // StatefulSet ordinals.
    let db = json!([owner("apps/v1", "StatefulSet", "db", json!(true))]);
    for name in [
        "db-0",
        "db-1",
        "db-2",
        "db-3",
        "db-10",
        "db-2147483647",
        "db",
        "db-x",
        "db-01",
        "a-b-2",
    ] {
        b.create(&format!("statefulset-{name}"), pod(name, DB, db.clone()));
    }
    let asts = json!([owner(
        "apps.kruise.io/v1beta1",
        "StatefulSet",
        "db",
        json!(true)
    )]);
    for name in ["db-0", "db-2", "db-5"] {
        b.create(
            &format!("advanced-statefulset-{name}"),
            pod(name, DB, asts.clone()),
        );
    }
    // Subset patches merged strategically into the pod.
    let patched = json!([owner(
        "apps.kruise.io/v1alpha1",
        "CloneSet",
        "patched",
        json!(true)
    )]);
    let patch_variants: Vec<(&str, Value)> = vec![
        ("plain", json!({})),
        (
            "env-ports",
            json!({"containers": [{"name": "main", "image": "nginx:1.25", "resources": {},
                "env": [{"name": "ZONE", "value": "orig"}, {"name": "A", "value": "1"},
                        {"name": "GONE", "value": "x"}],
                "ports": [{"containerPort": 80}, {"containerPort": 8080, "protocol": "TCP"}]}]}),
        ),
        (
            "tolerations",
            json!({"tolerations": [{"key": "other", "operator": "Exists"}]}),
        ),
        (
            "order",
            json!({"containers": [{"name": "sidecar", "image": "envoy", "resources": {}},
                {"name": "main", "image": "nginx:1.25", "resources": {}},
                {"name": "added", "image": "old", "resources": {}}]}),
        ),
        (
            "volumes",
            json!({"volumes": [{"name": "data", "hostPath": {"path": "/data"}},
                {"name": "cfg", "configMap": {"name": "cfg"}}]}),
        ),
        (
            "spread",
            json!({"topologySpreadConstraints": [{"maxSkew": 3, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 1, "topologyKey": "host",
                "whenUnsatisfiable": "DoNotSchedule"}]}),
        ),
    ];
    for (label, extra) in patch_variants {
        let mut p = pod(&format!("patched-{label}"), PATCH, patched.clone());
        p["metadata"]["labels"]["drop"] = json!("me");
        // As the API server sends a pod: empty `resources` written out (the patch OpenKruise
        // answers with adds below it).
        p["spec"]["containers"][0]["resources"] = json!({});
        for (k, v) in extra.as_object().into_iter().flatten() {
            p["spec"][k] = v.clone();
        }
        b.create(&format!("patch-{label}"), p);
    }
    let broken = json!([owner(
        "apps.kruise.io/v1alpha1",
        "CloneSet",
        "broken",
        json!(true)
    )]);
    b.create("patch-refused", pod("broken-1", BAD_PATCH, broken));
    // Every case names its pod's namespace.
    for c in &mut b.cases {
        c.namespace = c
            .object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/namespace"))
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    // Another owner in a namespace without a WorkloadSpread: untouched.
    b.cases
}
