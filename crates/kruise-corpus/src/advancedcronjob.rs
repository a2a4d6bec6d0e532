//! AdvancedCronJob cases (`advancedcronjob-v1beta1`, `advancedcronjob-v1alpha1`): every rule
//! of OpenKruise v1.9.0's `pkg/webhook/advancedcronjob` — the defaults (concurrency policy,
//! paused, history limits, pod template defaults of Job and BroadcastJob templates, and the
//! ImageListPullJob template's on v1beta1), the schedule as robfig/cron's `ParseStandard`
//! reads it (five fields, descriptors, `@every`, `TZ=` / `CRON_TZ=` prefixes, not both a prefix
//! and `timeZone`), `timeZone`, the name rule, non-negative deadline and limits, exactly one
//! template, Kubernetes' pod template validation of the Job and BroadcastJob templates, the
//! ImageListPullJob template's rules, and on update the fields that may change. (Schedules whose
//! error lies inside a field, e.g. `61 * * * *`, are left out: their error text is the cron
//! crate's, not robfig's.)

use serde_json::{Value, json};

use super::{Builder, Case, Edit, NAMESPACE, pod_spec_edits};

fn acj(version: &str, name: &str, template: Value) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "AdvancedCronJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedule": "*/1 * * * *", "template": template}
    })
}

fn job_template() -> Value {
    json!({"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["date"]}],
        "restartPolicy": "OnFailure",
    }}}}})
}

fn broadcast_template() -> Value {
    json!({"broadcastJobTemplate": {"spec": {
        "template": {"spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}],
            "restartPolicy": "Never",
        }},
        "completionPolicy": {"type": "Always"},
    }}})
}

fn image_list_template() -> Value {
    json!({"imageListPullJobTemplate": {"spec": {
        "images": ["nginx:1.25", "busybox:1.36"],
        "completionPolicy": {"type": "Always"},
    }}})
}

fn schedules() -> Vec<Value> {
    [
        "*/5 * * * *",
        "0 0 * * MON",
        "0 0 1 jan,Feb *",
        "5/15 * * * *",
        "* * ? * *",
        "0 9 * * 1-5",
        "@hourly",
        "@daily",
        "@midnight",
        "@weekly",
        "@monthly",
        "@yearly",
        "@annually",
        "@every 1m",
        "@every 10s",
        "@every 1h30m",
        "@every 100ms",
        "@Hourly",
        "@foo",
        "@every abc",
        "@every 5x",
        "@every 5",
        "",
        "* * * *",
        "0 * * * * *",
        "abc * * * *",
        "TZ=UTC * * * * *",
        "CRON_TZ=Asia/Shanghai 0 9 * * *",
        "TZ=America/New_York @hourly",
        "TZ=Mars/Base * * * * *",
        "TZ=UTC",
        "CRON_TZ=UTC",
    ]
    .iter()
    .map(|s| json!(s))
    .chain([json!(5)])
    .collect()
}

/// The cases of `version` (`v1beta1` or `v1alpha1`), deterministic.
pub fn cases(version: &'static str) -> Vec<Case> {
    let mut b = Builder {
        prefix: if version == "v1beta1" {
            "advancedcronjob-v1beta1"
        } else {
            "advancedcronjob-v1alpha1"
        },
        group: "apps.kruise.io",
        version,
        kind: "AdvancedCronJob",
        resource: "advancedcronjobs",
        cases: Vec::new(),
    };
    let job = acj(version, "acj", job_template());
    let bcj = acj(version, "acj", broadcast_template());
    let mut full = job.clone();
    full["spec"]["timeZone"] = json!("Asia/Shanghai");
    full["spec"]["startingDeadlineSeconds"] = json!(60);
    full["spec"]["concurrencyPolicy"] = json!("Forbid");
    full["spec"]["paused"] = json!(true);
    full["spec"]["successfulJobsHistoryLimit"] = json!(5);
    full["spec"]["failedJobsHistoryLimit"] = json!(2);
    full["spec"]["template"]["jobTemplate"]["metadata"] =
        json!({"labels": {"team": "a"}, "annotations": {"note": "x"}});
    b.create("valid-job", job.clone());
    b.create("valid-broadcastjob", bcj.clone());
    b.create("valid-full", full.clone());
    let mut both = job.clone();
    both["spec"]["template"]["broadcastJobTemplate"] =
        broadcast_template()["broadcastJobTemplate"].clone();
    b.create("two-templates", both);
    b.create("no-template", acj(version, "acj", json!({})));
    if version == "v1beta1" {
        image_list_cases(&mut b);
    }

    let mut edits: Vec<Edit> = Vec::new();
    for s in schedules() {
        edits.push(Edit::Set("/spec/schedule", s));
    }
    for tz in [
        json!("UTC"),
        json!("Asia/Shanghai"),
        json!("America/New_York"),
        json!(""),
        json!("Local"),
        json!("local"),
        json!("Mars/Base"),
        json!("../etc"),
        json!(3),
        Value::Null,
    ] {
        edits.push(Edit::Set("/spec/timeZone", tz));
    }
    for v in [json!(-1), json!(0), json!(100), json!("10"), Value::Null] {
        edits.push(Edit::Set("/spec/startingDeadlineSeconds", v.clone()));
        edits.push(Edit::Set("/spec/successfulJobsHistoryLimit", v.clone()));
        edits.push(Edit::Set("/spec/failedJobsHistoryLimit", v));
    }
    for v in ["Allow", "Forbid", "Replace", "", "Bogus"] {
        edits.push(Edit::Set("/spec/concurrencyPolicy", json!(v)));
    }
    for v in [json!(true), json!(false), json!("true")] {
        edits.push(Edit::Set("/spec/paused", v));
    }
    for n in [
        "UPPER-ok",
        "has.dot",
        "a_b",
        "-lead",
        "x1234567890123456789012345678901234567890123456789012345678901234",
    ] {
        edits.push(Edit::Set("/metadata/name", json!(n)));
    }
    edits.push(Edit::Set("/metadata/labels", json!({"bad key!": "v"})));
    edits.push(Edit::Set(
        "/status",
        json!({"type": "Job", "lastScheduleTime": "2026-01-01T00:00:00Z"}),
    ));
    edits.push(Edit::Remove("/spec/schedule"));
    edits.push(Edit::Set("/spec/template", json!("job")));
    edits.push(Edit::Set(
        "/spec/template/jobTemplate/metadata",
        json!({"labels": {"bad key!": "v"}}),
    ));
    edits.push(Edit::Set(
        "/spec/template/jobTemplate/spec/parallelism",
        json!(2),
    ));
    edits.push(Edit::Set(
        "/spec/template/jobTemplate/spec/template/spec/restartPolicy",
        json!("Always"),
    ));
    edits.push(Edit::Remove("/spec/template/jobTemplate/spec"));
    edits.push(Edit::Set(
        "/spec/template/jobTemplate/spec/template",
        json!({}),
    ));
    edits.extend(pod_spec_edits(
        "/spec/template/jobTemplate/spec/template/spec",
    ));
    b.edits(&[("job", job.clone())], &edits, 240, 0x0acc_0001);

    let bcj_edits = vec![
        Edit::Set(
            "/spec/template/broadcastJobTemplate/spec/template/spec/containers",
            json!([]),
        ),
        Edit::Set(
            "/spec/template/broadcastJobTemplate/spec/template/spec/containers/0/image",
            json!(""),
        ),
        Edit::Set(
            "/spec/template/broadcastJobTemplate/spec/template/spec/containers/0/name",
            json!("Bad_Name"),
        ),
        Edit::Remove("/spec/template/broadcastJobTemplate/spec"),
        Edit::Set(
            "/spec/template/broadcastJobTemplate/spec/parallelism",
            json!("50%"),
        ),
        Edit::Set(
            "/spec/template/broadcastJobTemplate/spec/completionPolicy",
            json!({"type": "Never"}),
        ),
        Edit::Set(
            "/spec/template/broadcastJobTemplate/metadata",
            json!({"labels": {"a": "b"}}),
        ),
        Edit::Set("/spec/schedule", json!("@every 30s")),
        Edit::Set("/spec/concurrencyPolicy", json!("Replace")),
    ];
    b.edits(&[("bcj", bcj.clone())], &bcj_edits, 0, 0);

    // Updates: what may change, and what may not.
    let mut stored = full.clone();
    stored["spec"]["template"]["jobTemplate"]["spec"]["template"]["spec"] = json!({
        "containers": [{"name": "main", "image": "busybox:1.36", "command": ["date"],
                        "imagePullPolicy": "IfNotPresent", "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"}],
        "restartPolicy": "OnFailure", "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler", "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    });
    let upd = |f: &dyn Fn(&mut Value)| {
        let mut n = stored.clone();
        f(&mut n);
        n
    };
    let updates: Vec<(&str, Value)> = vec![
        ("unchanged", stored.clone()),
        (
            "schedule",
            upd(&|o| o["spec"]["schedule"] = json!("@hourly")),
        ),
        (
            "bad-schedule",
            upd(&|o| o["spec"]["schedule"] = json!("@bogus")),
        ),
        ("paused", upd(&|o| o["spec"]["paused"] = json!(false))),
        ("time-zone", upd(&|o| o["spec"]["timeZone"] = json!("UTC"))),
        (
            "concurrency",
            upd(&|o| o["spec"]["concurrencyPolicy"] = json!("Replace")),
        ),
        (
            "limits",
            upd(&|o| {
                o["spec"]["successfulJobsHistoryLimit"] = json!(1);
                o["spec"]["failedJobsHistoryLimit"] = json!(0);
                o["spec"]["startingDeadlineSeconds"] = json!(10);
            }),
        ),
        (
            "template-image",
            upd(&|o| {
                o["spec"]["template"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
                    ["image"] = json!("busybox:1.37")
            }),
        ),
        (
            "template-labels",
            upd(&|o| {
                o["spec"]["template"]["jobTemplate"]["metadata"]["labels"] = json!({"team": "b"})
            }),
        ),
        (
            "to-broadcastjob",
            upd(&|o| o["spec"]["template"] = broadcast_template()),
        ),
        (
            "labels",
            upd(&|o| o["metadata"]["labels"] = json!({"x": "y"})),
        ),
    ];
    for (label, new) in updates {
        b.update(label, stored.clone(), new);
    }
    // Seeded pairs may draw the same two edits twice: keep the first.
    let mut seen = std::collections::HashSet::new();
    b.cases.retain(|c| seen.insert(c.id.clone()));
    b.cases
}

/// The ImageListPullJob template (v1beta1 only): its defaults and rules.
fn image_list_cases(b: &mut Builder) {
    let base = acj("v1beta1", "acj", image_list_template());
    b.create("image-list/valid", base.clone());
    let edits = vec![
        Edit::Set("/spec/concurrencyPolicy", json!("Allow")),
        Edit::Set("/spec/concurrencyPolicy", json!("Forbid")),
        Edit::Set("/spec/concurrencyPolicy", json!("Replace")),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/images",
            json!([]),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/images",
            json!(["nginx:1.25", "nginx:1.25"]),
        ),
        Edit::Remove("/spec/template/imageListPullJobTemplate/spec/completionPolicy"),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/completionPolicy",
            json!({"type": "Never"}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/completionPolicy",
            json!({"type": "Always", "ttlSecondsAfterFinished": 10}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/completionPolicy",
            json!({"type": "Always", "activeDeadlineSeconds": 86401}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/completionPolicy",
            json!({"type": "Always", "activeDeadlineSeconds": 100}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/completionPolicy",
            json!({"type": "Always", "activeDeadlineSeconds": 1000}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/pullPolicy",
            json!({"timeoutSeconds": 300}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/imagePullPolicy",
            json!("Always"),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/selector",
            json!({"names": ["n1", "n2"]}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/selector",
            json!({"names": ["n1", "n1"]}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/selector",
            json!({"names": ["n1"], "matchLabels": {"a": "b"}}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/selector",
            json!({"matchLabels": {"a": "b"}}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/selector",
            json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/podSelector",
            json!({"matchLabels": {"a": "b"}}),
        ),
        Edit::Set(
            "/spec/template/imageListPullJobTemplate/spec/podSelector",
            json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
        ),
    ];
    b.edits(&[("image-list", base.clone())], &edits, 0, 0);
    let mut both = base;
    both["spec"]["template"]["imageListPullJobTemplate"]["spec"]["selector"] =
        json!({"names": ["n1"]});
    both["spec"]["template"]["imageListPullJobTemplate"]["spec"]["podSelector"] =
        json!({"matchLabels": {"a": "b"}});
    b.create("image-list/selector-and-pod-selector", both);
}
