//! EphemeralJob cases (`ephemeraljob`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/ephemeraljob/validating` on `spec.template.ephemeralContainers` — name (DNS-1123
//! label, unique), image (required, no surrounding whitespace), termination message policy and
//! pull policy (required, supported values), ports, env and envFrom, the security context, the
//! fields outside OpenKruise's allow-list (ports, resources, resizePolicy, restartPolicy, probes,
//! lifecycle) and volume mount sub-paths — on CREATE and UPDATE, and the spec fields the webhook
//! does not judge.

use serde_json::{Value, json};

use super::{Builder, Case, NAMESPACE};

fn job(spec_containers: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "EphemeralJob",
        "metadata": {"name": "ejob", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "replicas": 2, "parallelism": 1,
            "template": {"ephemeralContainers": spec_containers}
        }
    })
}

fn debugger() -> Value {
    json!({"name": "debugger", "image": "busybox:1.36", "command": ["sleep", "10"],
           "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
           "targetContainerName": "main"})
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "ephemeraljob",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "EphemeralJob",
        resource: "ephemeraljobs",
        cases: Vec::new(),
    };
    let valid = job(json!([debugger()]));
    b.create("valid", valid.clone());

    // One field of the container set to each value (null: removed).
    let edits: Vec<(&str, Vec<Value>)> = vec![
        (
            "name",
            vec![
                json!(""),
                json!("Debugger"),
                json!("a_b"),
                json!("-x"),
                json!("x".repeat(64)),
                json!("x".repeat(63)),
                Value::Null,
            ],
        ),
        (
            "image",
            vec![
                json!(""),
                json!(" busybox"),
                json!("busybox "),
                Value::Null,
                json!("registry.local:5000/tools/debug@sha256:0123"),
            ],
        ),
        (
            "imagePullPolicy",
            vec![
                Value::Null,
                json!(""),
                json!("Sometimes"),
                json!("Always"),
                json!("Never"),
            ],
        ),
        (
            "terminationMessagePolicy",
            vec![
                Value::Null,
                json!(""),
                json!("Other"),
                json!("FallbackToLogsOnError"),
            ],
        ),
        (
            "ports",
            vec![
                json!([]),
                json!([{"containerPort": 80, "protocol": "TCP"}]),
                json!([{"containerPort": 0, "protocol": "TCP"}]),
                json!([{"containerPort": 70000, "protocol": "TCP"}]),
                json!([{"name": "Bad_Name", "containerPort": 80, "protocol": "TCP"}]),
                json!([{"containerPort": 80, "protocol": "XTP"}]),
                json!([{"containerPort": 80}]),
                json!([{"containerPort": 80, "hostPort": -1, "protocol": "UDP"}]),
                json!([{"name": "p", "containerPort": 80, "protocol": "TCP"},
                              {"name": "p", "containerPort": 81, "protocol": "TCP"}]),
            ],
        ),
        (
            "resources",
            vec![
                json!({}),
                json!({"limits": {"cpu": "1"}}),
                json!({"requests": {}}),
                json!({"requests": {"memory": "64Mi"}}),
            ],
        ),
        (
            "resizePolicy",
            vec![
                json!([]),
                json!([{"resourceName": "cpu", "restartPolicy": "NotRequired"}]),
            ],
        ),
        ("restartPolicy", vec![json!("Always"), json!("")]),
        (
            "livenessProbe",
            vec![json!({"exec": {"command": ["true"]}}), Value::Null],
        ),
        ("readinessProbe", vec![json!({"tcpSocket": {"port": 80}})]),
        ("startupProbe", vec![json!({"httpGet": {"port": 80}})]),
        (
            "lifecycle",
            vec![
                json!({"preStop": {"exec": {"command": ["true"]}}}),
                json!({}),
            ],
        ),
        (
            "env",
            vec![
                json!([{"name": "A", "value": "1"}]),
                json!([{"name": ""}]),
                json!([{"name": "1BAD"}]),
                json!([{"name": "a.b-c"}]),
                json!([{"name": "A=B"}]),
                json!([{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
                json!([{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]),
                json!([{"name": "A", "value": "x",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
                json!([{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]),
                json!([{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "", "key": ""}}}]),
                json!([{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]),
                json!([{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "bogus"}}}]),
                json!([{"name": "A", "valueFrom": {}}]),
                json!([{"name": "A", "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.name"},
                "secretKeyRef": {"name": "s", "key": "k"}}}]),
                json!([{"name": "KRUISE_EJOB_ID", "value": "spoofed"}]),
            ],
        ),
        (
            "envFrom",
            vec![
                json!([{"configMapRef": {"name": "cm"}}]),
                json!([{"prefix": "1x", "configMapRef": {"name": "cm"}}]),
                json!([{}]),
                json!([{"secretRef": {"name": "s"}, "configMapRef": {"name": "c"}}]),
                json!([{"configMapRef": {"name": "Bad_Name"}}]),
                json!([{"secretRef": {"name": ""}}]),
            ],
        ),
        (
            "volumeMounts",
            vec![
                json!([{"name": "v", "mountPath": "/v"}]),
                json!([{"name": "v", "mountPath": "/v", "subPath": "x"}]),
                json!([{"name": "v", "mountPath": "/v", "subPathExpr": "$(X)"}]),
                json!([{"name": "v", "mountPath": "/v", "subPath": "x", "subPathExpr": "$(X)"}]),
                json!([{"name": "", "mountPath": ""}]),
            ],
        ),
        (
            "volumeDevices",
            vec![json!([{"name": "d", "devicePath": "/dev/x"}])],
        ),
        (
            "securityContext",
            vec![
                json!({"privileged": true}),
                json!({"runAsUser": -1}),
                json!({"runAsGroup": -1}),
                json!({"runAsUser": 0, "runAsNonRoot": true}),
                json!({"procMount": "Unmasked"}),
                json!({"procMount": "Bogus"}),
                json!({"allowPrivilegeEscalation": false, "privileged": true}),
                json!({"allowPrivilegeEscalation": false, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}),
                json!({"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}}),
                json!({"seccompProfile": {"type": "Localhost"}}),
                json!({"seccompProfile": {"type": "Bogus"}}),
                json!({"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x"}}),
                json!({"appArmorProfile": {"type": "Localhost"}}),
                json!({"appArmorProfile": {"type": "Unconfined"}}),
                json!({"windowsOptions": {"runAsUserName": ""}}),
                json!({"windowsOptions": {"gmsaCredentialSpecName": "Bad_Name"}}),
                json!({}),
            ],
        ),
        (
            "targetContainerName",
            vec![json!(""), json!("nonexistent"), Value::Null],
        ),
        ("workingDir", vec![json!("/tmp"), json!("relative")]),
        ("args", vec![json!(["a", "b"])]),
        ("stdin", vec![json!(true)]),
        ("stdinOnce", vec![json!(true)]),
        ("tty", vec![json!(true)]),
        ("terminationMessagePath", vec![json!("/dev/log"), json!("")]),
    ];
    for (field, values) in edits {
        for (i, v) in values.into_iter().enumerate() {
            let mut o = valid.clone();
            let c = &mut o["spec"]["template"]["ephemeralContainers"][0];
            if v.is_null() {
                c.as_object_mut().unwrap().remove(field);
            } else {
                c[field] = v;
            }
            b.create(&format!("container-{field}-{i}"), o);
        }
    }

    // Lists of containers.
    let mut second = debugger();
    second["name"] = json!("second");
    let mut bad = debugger();
    bad["name"] = json!("Bad");
    bad["imagePullPolicy"] = json!("");
    bad["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
    let lists = [
        ("empty", json!([])),
        ("two", json!([debugger(), second])),
        ("duplicate-names", json!([debugger(), debugger()])),
        ("second-invalid", json!([debugger(), bad.clone()])),
        ("all-invalid", json!([bad.clone(), bad])),
        (
            "minimal",
            json!([{"name": "m", "image": "busybox", "imagePullPolicy": "Always",
                            "terminationMessagePolicy": "File"}]),
        ),
        ("bare", json!([{"name": "m", "image": "busybox"}])),
    ];
    for (label, list) in lists {
        b.create(&format!("list-{label}"), job(list));
    }

    // Spec fields the webhook does not judge (the CRD schema and the controller do).
    let spec_edits: Vec<(&str, Value)> = vec![
        ("replicas", json!(0)),
        ("replicas", json!(-1)),
        ("parallelism", json!(0)),
        ("parallelism", json!(100)),
        ("paused", json!(true)),
        ("activeDeadlineSeconds", json!(1)),
        ("activeDeadlineSeconds", json!(-5)),
        ("ttlSecondsAfterFinished", json!(0)),
        ("selector", json!({})),
        (
            "selector",
            json!({"matchExpressions": [{"key": "app", "operator": "In",
                                                  "values": ["a", "b"]}]}),
        ),
    ];
    for (i, (field, v)) in spec_edits.into_iter().enumerate() {
        let mut o = valid.clone();
        o["spec"][field] = v;
        b.create(&format!("spec-{field}-{i}"), o);
    }

    // Updates: OpenKruise validates the new object alone.
    let mut changed = valid.clone();
    changed["spec"]["parallelism"] = json!(3);
    b.update("parallelism", valid.clone(), changed);
    let mut paused = valid.clone();
    paused["spec"]["paused"] = json!(true);
    b.update("pause", valid.clone(), paused);
    let mut invalid = valid.clone();
    invalid["spec"]["template"]["ephemeralContainers"][0]["image"] = json!("");
    b.update("to-invalid", valid.clone(), invalid.clone());
    b.update("from-invalid", invalid, valid.clone());
    let mut renamed = valid.clone();
    renamed["spec"]["template"]["ephemeralContainers"][0]["name"] = json!("other");
    b.update("rename-container", valid, renamed);
    b.cases
}
