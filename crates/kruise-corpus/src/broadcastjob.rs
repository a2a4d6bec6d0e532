//! BroadcastJob cases (`broadcastjob-v1beta1`, `broadcastjob-v1alpha1`): every rule of OpenKruise
//! v1.9.0's `pkg/webhook/broadcastjob` — the defaults (completion policy `Always`, unbounded
//! `parallelism`, failure policy `FailFast`, the pod template's on create and when the template
//! changes, the status reset), the name rule, `ttlSecondsAfterFinished` and
//! `activeDeadlineSeconds` only with completion policy `Always`, the template's `restartPolicy`
//! (`Never` or `OnFailure`, defaulted first), the controller's pod labels not preset, and
//! Kubernetes' pod template validation.

use serde_json::{Value, json};

use super::{
    Builder, Case, Edit, NAMESPACE, bools, int_or_percent, int32s, label_maps, pod_spec_edits,
    strings,
};

fn template() -> Value {
    json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox:1.36"}]}
    })
}

fn base(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "BroadcastJob",
        "metadata": {"name": "job", "namespace": NAMESPACE},
        "spec": {"template": template()}
    })
}

fn full(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "BroadcastJob",
        "metadata": {"name": "job-full", "namespace": NAMESPACE, "labels": {"team": "a"}},
        "spec": {
            "parallelism": "50%",
            "template": {
                "metadata": {"labels": {"app": "demo"}, "annotations": {"a": "b"}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "nodeSelector": {"pool": "a"},
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "main", "image": "busybox:1.36",
                        "command": ["sh", "-c", "true"],
                        "resources": {"requests": {"cpu": "100m"}}}]
                }
            },
            "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 60,
                "ttlSecondsAfterFinished": 30},
            "paused": false,
            "failurePolicy": {"type": "Continue", "restartLimit": 3}
        }
    })
}

/// The cases of one version.
pub fn cases(version: &'static str) -> Vec<Case> {
    let mut b = Builder {
        prefix: if version == "v1beta1" {
            "broadcastjob-v1beta1"
        } else {
            "broadcastjob-v1alpha1"
        },
        group: "apps.kruise.io",
        version,
        kind: "BroadcastJob",
        resource: "broadcastjobs",
        cases: Vec::new(),
    };
    b.create("valid/minimal", base(version));
    b.create("valid/full", full(version));
    let mut with_status = full(version);
    with_status["status"] = json!({"active": 2, "phase": "running", "desired": 3});
    b.create("valid/with-status", with_status);
    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set("/spec/parallelism", int_or_percent());
    set("/spec/paused", bools());
    set("/spec/completionPolicy/type", strings(&["Always", "Never"]));
    set(
        "/spec/completionPolicy",
        vec![
            json!({"type": "Never", "ttlSecondsAfterFinished": 10}),
            json!({"type": "Never", "activeDeadlineSeconds": 10}),
            json!({"type": "Never", "activeDeadlineSeconds": 10, "ttlSecondsAfterFinished": 5}),
            json!({"type": "Always", "activeDeadlineSeconds": -1, "ttlSecondsAfterFinished": -1}),
            json!({"ttlSecondsAfterFinished": 0}),
            json!({}),
            json!("x"),
        ],
    );
    set(
        "/spec/completionPolicy/activeDeadlineSeconds",
        vec![json!(0), json!(1), json!(-5), json!("x"), json!(1.5)],
    );
    set("/spec/completionPolicy/ttlSecondsAfterFinished", int32s());
    set(
        "/spec/failurePolicy/type",
        strings(&["Continue", "FailFast", "Pause"]),
    );
    set("/spec/failurePolicy/restartLimit", int32s());
    set(
        "/spec/failurePolicy",
        vec![json!({}), json!({"type": "Pause"}), json!("x")],
    );
    set("/spec/template/metadata/labels", label_maps());
    set(
        "/spec/template/metadata/labels",
        vec![
            json!({"broadcastjob-name": "x"}),
            json!({"broadcastjob-controller-uid": "u"}),
            json!({"broadcastjob-name": ""}),
            json!({"app": "demo", "broadcastjob-controller-uid": ""}),
        ],
    );
    set(
        "/spec/template/spec/restartPolicy",
        vec![
            json!("Always"),
            json!("Never"),
            json!("OnFailure"),
            json!(""),
            json!("Sometimes"),
        ],
    );
    set(
        "/spec/template/spec/activeDeadlineSeconds",
        vec![json!(10), json!(0)],
    );
    set(
        "/metadata/name",
        vec![
            json!("Bad_Name"),
            json!("ok-name"),
            json!("UPPER-ok"),
            json!("a.b"),
            json!("x".repeat(64)),
        ],
    );
    set("/spec", vec![json!({}), json!("x")]);
    set("/spec/template", vec![json!({}), json!("x")]);
    set(
        "/spec/template/spec/containers",
        vec![json!("x"), json!([])],
    );
    edits.push(Edit::Remove("/spec/template"));
    edits.push(Edit::Remove("/spec/template/spec/restartPolicy"));
    edits.push(Edit::Remove("/spec/completionPolicy"));
    edits.extend(pod_spec_edits("/spec/template/spec"));
    b.edits(
        &[("min", base(version)), ("full", full(version))],
        &edits,
        60,
        if version == "v1beta1" {
            0x424A_4231
        } else {
            0x424A_4230
        },
    );
    b.names(&base(version));
    let upd: Vec<Edit> = vec![
        Edit::Set(
            "/spec/template/spec/containers/0/image",
            json!("busybox:1.37"),
        ),
        Edit::Set("/spec/template/metadata/labels/app", json!("other")),
        Edit::Set("/spec/parallelism", json!(5)),
        Edit::Set("/spec/paused", json!(true)),
        Edit::Set("/spec/completionPolicy/type", json!("Never")),
        Edit::Set("/spec/completionPolicy/ttlSecondsAfterFinished", json!(100)),
        Edit::Set("/spec/failurePolicy", json!({"type": "Pause"})),
        Edit::Set("/spec/template/spec/restartPolicy", json!("Always")),
        Edit::Set(
            "/spec/template/metadata/labels/broadcastjob-name",
            json!("job"),
        ),
        Edit::Set("/metadata/labels", json!({"team": "b"})),
        Edit::Set("/status", json!({"active": 1, "phase": "running"})),
    ];
    for (bname, base) in [("min", base(version)), ("full", full(version))] {
        for e in upd.iter() {
            let mut o = base.clone();
            e.apply(&mut o);
            b.update(&format!("{bname}/{}", e.label()), base.clone(), o);
        }
    }
    b.finish()
}
