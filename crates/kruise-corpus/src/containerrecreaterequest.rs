//! ContainerRecreateRequest cases (`containerrecreaterequest`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/containerrecreaterequest/mutating` (a mutating webhook that also refuses) —
//! required `podName` and `containers`, `activeDeadlineSeconds` of at least 3, non-negative
//! grace periods, the failure policies, the target pod of [`cluster`] (missing, pending,
//! succeeded, failed, stopped by the SidecarTerminator, on a node that is gone, on a
//! virtual-kubelet node, containers without a status or an ID), the injected labels, grace
//! period, `preStop` (with `ports` for an `httpGet` handler) and `statusContext`, the read-only
//! container fields, and on update the immutable spec, identity labels and unready stamp; plus
//! the decoding of wrong JSON types.

use serde_json::{Value, json};

use super::{Builder, Case, Edit, NAMESPACE};

/// The node the pods of [`cluster`] run on, and a virtual-kubelet one (no kubelet behind
/// either: they only have to exist).
const NODE: &str = "corpus-crr-node";
const VK_NODE: &str = "corpus-crr-vk";

fn node(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": true}})
}

fn container_status(name: &str, id: Option<&str>, restarts: i32) -> Value {
    let mut s = json!({"name": name, "image": "nginx:alpine", "imageID": "", "ready": true,
        "restartCount": restarts, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}});
    if let Some(id) = id {
        s["containerID"] = json!(id);
    }
    s
}

fn pod(name: &str, node: Option<&str>, phase: &str, statuses: Value, conditions: Value) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "terminationGracePeriodSeconds": 45,
            "initContainers": [{"name": "init", "image": "busybox:1.36"}],
            "containers": [
                {"name": "app", "image": "nginx:alpine",
                 "lifecycle": {"preStop": {"exec": {"command": ["sleep", "3"]}}}},
                {"name": "web", "image": "nginx:alpine",
                 "ports": [{"name": "http", "containerPort": 8080}],
                 "lifecycle": {"preStop": {"httpGet": {"path": "/quit", "port": "http"}}}},
                {"name": "side", "image": "busybox:1.36", "ports": [{"containerPort": 9090}]}]},
        "status": {"phase": phase, "containerStatuses": statuses, "conditions": conditions}});
    match node {
        Some(n) => p["spec"]["nodeName"] = json!(n),
        // Kept pending: no node has this label.
        None => p["spec"]["nodeSelector"] = json!({"corpus.kruise.io/never": "true"}),
    }
    p
}

fn running_statuses() -> Value {
    json!([
        container_status("app", Some("containerd://app1"), 1),
        container_status("side", Some("containerd://side1"), 0),
        container_status("web", Some("containerd://web1"), 2),
    ])
}

/// Two nodes and the pods requests name.
pub fn cluster() -> Vec<Value> {
    let no_conditions = json!([]);
    vec![
        node(NODE, json!({"kubernetes.io/hostname": NODE})),
        node(VK_NODE, json!({"type": "virtual-kubelet"})),
        pod(
            "running",
            Some(NODE),
            "Running",
            running_statuses(),
            no_conditions.clone(),
        ),
        pod(
            "vk",
            Some(VK_NODE),
            "Running",
            running_statuses(),
            no_conditions.clone(),
        ),
        pod(
            "ghost",
            Some("corpus-crr-gone"),
            "Running",
            running_statuses(),
            no_conditions.clone(),
        ),
        pod("pending", None, "Pending", json!([]), no_conditions.clone()),
        pod(
            "succeeded",
            Some(NODE),
            "Succeeded",
            running_statuses(),
            no_conditions.clone(),
        ),
        pod(
            "failed",
            Some(NODE),
            "Failed",
            running_statuses(),
            no_conditions.clone(),
        ),
        pod(
            "sidecar-stopped",
            Some(NODE),
            "Succeeded",
            running_statuses(),
            json!([{"type": "SidecarTerminated", "status": "True"}]),
        ),
        pod(
            "fresh",
            Some(NODE),
            "Running",
            json!([
                container_status("app", None, 0),
                container_status("side", Some(""), 0)
            ]),
            no_conditions.clone(),
        ),
        pod("no-status", Some(NODE), "Running", json!([]), no_conditions),
    ]
}

fn crr(name: &str, pod: &str, containers: &[&str], strategy: Option<Value>) -> Value {
    let mut o = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"podName": pod,
                 "containers": containers.iter().map(|c| json!({"name": c})).collect::<Vec<_>>()}
    });
    if let Some(s) = strategy {
        o["spec"]["strategy"] = s;
    }
    o
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "containerrecreaterequest",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "ContainerRecreateRequest",
        resource: "containerrecreaterequests",
        cases: Vec::new(),
    };
    let valid = crr("crr", "running", &["app"], None);
    b.create("valid", valid.clone());

    // Every pod × container set.
    let pods = [
        "running",
        "vk",
        "ghost",
        "pending",
        "succeeded",
        "failed",
        "sidecar-stopped",
        "fresh",
        "no-status",
        "missing",
        "",
    ];
    let sets: [&[&str]; 9] = [
        &["app"],
        &["web"],
        &["side"],
        &["app", "web", "side"],
        &["init"],
        &["app", "app"],
        &["nope"],
        &["side", "app"],
        &[],
    ];
    for p in pods {
        for (i, set) in sets.iter().enumerate() {
            b.create(&format!("pod-{p}/set-{i}"), crr("crr", p, set, None));
        }
    }

    // The checks that need no pod, and the strategy fields.
    let strategies: Vec<(&str, Value)> = vec![
        ("empty", json!({})),
        ("fail", json!({"failurePolicy": "Fail"})),
        ("ignore", json!({"failurePolicy": "Ignore"})),
        ("lower-fail", json!({"failurePolicy": "fail"})),
        ("never", json!({"failurePolicy": "Never"})),
        ("tgps-0", json!({"terminationGracePeriodSeconds": 0})),
        ("tgps-10", json!({"terminationGracePeriodSeconds": 10})),
        ("tgps-neg", json!({"terminationGracePeriodSeconds": -1})),
        ("ugps-0", json!({"unreadyGracePeriodSeconds": 0})),
        ("ugps-5", json!({"unreadyGracePeriodSeconds": 5})),
        ("ugps-neg", json!({"unreadyGracePeriodSeconds": -3})),
        (
            "ordered",
            json!({"orderedRecreate": true, "forceRecreate": false}),
        ),
        (
            "force",
            json!({"forceRecreate": true, "minStartedSeconds": 5}),
        ),
        (
            "min-started-0",
            json!({"minStartedSeconds": 0, "orderedRecreate": false}),
        ),
        (
            "all",
            json!({"failurePolicy": "Ignore", "orderedRecreate": true, "forceRecreate": true,
            "terminationGracePeriodSeconds": 3, "unreadyGracePeriodSeconds": 2, "minStartedSeconds": 1}),
        ),
        (
            "both-neg",
            json!({"terminationGracePeriodSeconds": -1, "unreadyGracePeriodSeconds": -1,
            "failurePolicy": "Never"}),
        ),
    ];
    for (label, s) in &strategies {
        b.create(
            &format!("strategy/{label}"),
            crr("crr", "running", &["app"], Some(s.clone())),
        );
        b.create(
            &format!("strategy/{label}/pending-pod"),
            crr("crr", "pending", &["app"], Some(s.clone())),
        );
    }
    for d in [-1, 0, 2, 3, 60] {
        let mut o = valid.clone();
        o["spec"]["activeDeadlineSeconds"] = json!(d);
        b.create(&format!("activeDeadlineSeconds/{d}"), o.clone());
        o["spec"]["podName"] = json!("");
        b.create(&format!("activeDeadlineSeconds/{d}/no-pod-name"), o);
    }
    for t in [0, 5] {
        let mut o = valid.clone();
        o["spec"]["ttlSecondsAfterFinished"] = json!(t);
        b.create(&format!("ttl/{t}"), o);
    }
    // Read-only container fields, labels and annotations the client set.
    let read_only: Vec<(&str, Value)> = vec![
        ("preStop", json!({"exec": {"command": ["true"]}})),
        ("ports", json!([])),
        (
            "statusContext",
            json!({"containerID": "containerd://x", "restartCount": 0}),
        ),
    ];
    for (field, v) in read_only {
        let mut o = valid.clone();
        o["spec"]["containers"][0][field] = v;
        b.create(&format!("read-only/{field}"), o);
    }
    let mut labelled = valid.clone();
    labelled["metadata"]["labels"] = json!({"app": "x", "crr.apps.kruise.io/active": "false",
        "crr.apps.kruise.io/pod-uid": "forged", "crr.apps.kruise.io/node-name": "elsewhere",
        "type": "virtual-kubelet"});
    labelled["metadata"]["annotations"] = json!({"crr.apps.kruise.io/unready-acquired": "x"});
    b.create("labels/forged", labelled);
    let mut no_containers = valid.clone();
    no_containers["spec"]
        .as_object_mut()
        .unwrap()
        .remove("containers");
    b.create("containers/absent", no_containers);
    let mut no_spec = valid.clone();
    no_spec.as_object_mut().unwrap().remove("spec");
    b.create("spec/absent", no_spec);
    b.names(&valid);

    // Wrong JSON types and values, on the valid request.
    let edits = vec![
        Edit::Set("/spec/podName", json!(1)),
        Edit::Set("/spec/containers", json!("app")),
        Edit::Set("/spec/containers", json!({"name": "app"})),
        Edit::Set("/spec/containers/0", json!("app")),
        Edit::Set("/spec/containers/0/name", json!(7)),
        Edit::Set("/spec/containers/0/name", json!("")),
        Edit::Set("/spec/strategy", json!("Fail")),
        Edit::Set("/spec/strategy", json!(null)),
        Edit::Set("/spec/strategy/failurePolicy", json!(1)),
        Edit::Set("/spec/strategy/orderedRecreate", json!("true")),
        Edit::Set("/spec/strategy/minStartedSeconds", json!("5")),
        Edit::Set("/spec/strategy/minStartedSeconds", json!(1.5)),
        Edit::Set("/spec/strategy/minStartedSeconds", json!(3_000_000_000_i64)),
        Edit::Set("/spec/strategy/minStartedSeconds", json!(-1)),
        Edit::Set("/spec/strategy/terminationGracePeriodSeconds", json!("3")),
        Edit::Set("/spec/activeDeadlineSeconds", json!("3")),
        Edit::Set("/spec/activeDeadlineSeconds", json!(1e20)),
        Edit::Set("/spec/ttlSecondsAfterFinished", json!(-1)),
        Edit::Set("/spec/ttlSecondsAfterFinished", json!(3_000_000_000_i64)),
        Edit::Set(
            "/status",
            json!({"phase": "Completed", "completionTime": "2026-01-01T00:00:00Z"}),
        ),
        Edit::Set("/status", json!({"phase": 1})),
        Edit::Set(
            "/metadata/labels",
            json!({"crr.apps.kruise.io/active": "true"}),
        ),
        Edit::Remove("/spec/podName"),
        Edit::Remove("/metadata/namespace"),
    ];
    b.edits(&[("valid", valid.clone())], &edits, 24, 0xC22);

    // Updates: the stored request (the webhook's create answer) changed.
    let mut old = crr(
        "crr",
        "running",
        &["app", "side"],
        Some(json!({"unreadyGracePeriodSeconds": 3})),
    );
    old["spec"]["ttlSecondsAfterFinished"] = json!(30);
    let updates: Vec<(&str, Value)> = vec![
        ("unchanged", json!({})),
        ("status", json!({"status": {"phase": "Recreating"}})),
        (
            "active-label-removed",
            json!({"metadata": {"labels": {"crr.apps.kruise.io/active": null}}}),
        ),
        ("other-label", json!({"metadata": {"labels": {"x": "y"}}})),
        (
            "pod-uid-changed",
            json!({"metadata": {"labels": {"crr.apps.kruise.io/pod-uid": "other"}}}),
        ),
        (
            "pod-uid-removed",
            json!({"metadata": {"labels": {"crr.apps.kruise.io/pod-uid": null}}}),
        ),
        (
            "node-name-changed",
            json!({"metadata": {"labels": {"crr.apps.kruise.io/node-name": "other"}}}),
        ),
        (
            "unready-set",
            json!({"metadata": {"annotations": {"crr.apps.kruise.io/unready-acquired": "2026-01-01T00:00:00Z"}}}),
        ),
        (
            "sync-annotation",
            json!({"metadata": {"annotations": {"crr.apps.kruise.io/sync-container-statuses": "[]"}}}),
        ),
        (
            "finalizer",
            json!({"metadata": {"finalizers": ["crr.apps.kruise.io/unready-acquired"]}}),
        ),
        (
            "ttl-changed",
            json!({"spec": {"ttlSecondsAfterFinished": 31}}),
        ),
        (
            "deadline-added",
            json!({"spec": {"activeDeadlineSeconds": 60}}),
        ),
        (
            "strategy-changed",
            json!({"spec": {"strategy": {"orderedRecreate": true}}}),
        ),
        (
            "containers-changed",
            json!({"spec": {"containers": [{"name": "app"}]}}),
        ),
        ("pod-changed", json!({"spec": {"podName": "vk"}})),
        (
            "spec-and-label",
            json!({"spec": {"ttlSecondsAfterFinished": 1},
            "metadata": {"labels": {"crr.apps.kruise.io/pod-uid": "other"}}}),
        ),
    ];
    for (label, patch) in updates {
        b.update_stored(label, old.clone(), patch);
    }
    // The unready stamp, once written, stays.
    let mut stamped = old.clone();
    stamped["metadata"]["annotations"] =
        json!({"crr.apps.kruise.io/unready-acquired": "2026-01-01T00:00:00Z"});
    for (label, patch) in [
        ("stamp-kept", json!({"status": {"phase": "Recreating"}})),
        (
            "stamp-changed",
            json!({"metadata": {"annotations": {"crr.apps.kruise.io/unready-acquired": "2026-01-01T00:00:09Z"}}}),
        ),
        (
            "stamp-removed",
            json!({"metadata": {"annotations": {"crr.apps.kruise.io/unready-acquired": null}}}),
        ),
    ] {
        b.update_stored(label, stamped.clone(), patch);
    }
    b.finish()
}
