//! Table-driven tests of the pod template rules: each case edits a valid (defaulted) template
//! and lists the field paths Kubernetes v1.32 names for it.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use super::*;
use crate::validation::field::aggregate;

/// A valid template as OpenKruise's defaults leave it.
fn base() -> Value {
    json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {
            "containers": [{
                "name": "main", "image": "nginx:1.25", "imagePullPolicy": "Always",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30, "securityContext": {}
        }
    })
}

fn container(extra: Value) -> Value {
    let mut c = json!({"name": "main", "image": "nginx:1.25", "imagePullPolicy": "Always",
        "terminationMessagePolicy": "File"});
    json_merge(&mut c, &extra);
    c
}

/// RFC 7386 merge (arrays replaced as a whole).
fn json_merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    json_merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn validate(edit: &Value) -> ErrorList {
    let mut v = base();
    json_merge(&mut v, edit);
    let t: PodTemplateSpec = serde_json::from_value(v).expect("template");
    validate_pod_template_spec(
        &t,
        &Path::new("spec").child("template"),
        &PodValidationOptions::openkruise(),
    )
}

fn paths(edit: &Value) -> Vec<String> {
    let mut p: Vec<String> = validate(edit).iter().map(|e| e.path.to_string()).collect();
    p.sort();
    p.dedup();
    p
}

/// Runs a table of `(edit, expected paths below spec.template)`.
fn check(cases: &[(Value, &[&str])]) {
    for (edit, want) in cases {
        let mut want: Vec<String> = want.iter().map(|w| format!("spec.template.{w}")).collect();
        want.sort();
        let errs = validate(edit);
        assert_eq!(
            paths(edit),
            want,
            "{edit}: {}",
            aggregate(&errs).unwrap_or_default()
        );
    }
}

#[test]
fn valid_template_passes() {
    check(&[(json!({}), &[])]);
}

#[test]
fn template_metadata() {
    check(&[
        (
            json!({"metadata": {"labels": {"app": "-bad-"}}}),
            &["labels"],
        ),
        (
            json!({"metadata": {"labels": {"bad key!": "v"}}}),
            &["labels"],
        ),
        (
            json!({"metadata": {"annotations": {"bad key!": "v"}}}),
            &["annotations"],
        ),
        (
            json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "bogus"}}}),
            &["annotations.seccomp.security.alpha.kubernetes.io/pod"],
        ),
        (
            json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/nope": "runtime/default"}}}),
            &["annotations[container.apparmor.security.beta.kubernetes.io/nope]"],
        ),
        (
            json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}),
            &["annotations[kubernetes.io/config.mirror]"],
        ),
    ]);
}

#[test]
fn volumes() {
    let vol = |v: Value| json!({"spec": {"volumes": [v]}});
    check(&[
        (
            vol(json!({"name": "Bad_Name", "emptyDir": {}})),
            &[
                "spec.volumes[0].name",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "", "emptyDir": {}})),
            &[
                "spec.volumes[0].name",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            json!({"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}}),
            &["spec.volumes[1].name"],
        ),
        (
            vol(json!({"name": "data"})),
            &["spec.volumes[0]", "spec.containers[0].volumeMounts[0].name"],
        ),
        (
            vol(json!({"name": "data", "emptyDir": {}, "hostPath": {"path": "/tmp"}})),
            &[
                "spec.volumes[0].hostPath",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "hostPath": {"path": ""}})),
            &[
                "spec.volumes[0].hostPath.path",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "hostPath": {"path": "/a/../b"}})),
            &[
                "spec.volumes[0].hostPath.path",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "hostPath": {"path": "/a", "type": "Bogus"}})),
            &[
                "spec.volumes[0].hostPath.type",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "configMap": {"name": "cm", "items": [{"key": "k", "path": "../x"}]}}),
            ),
            &[
                "spec.volumes[0].configMap.items[0].path",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "configMap": {"name": "cm", "items": [{"key": "", "path": "/abs"}]}}),
            ),
            &[
                "spec.volumes[0].configMap.items[0].key",
                "spec.volumes[0].configMap.items[0].path",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "secret": {"secretName": "s", "defaultMode": 4096}})),
            &[
                "spec.volumes[0].secret.defaultMode",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "secret": {}})),
            &[
                "spec.volumes[0].secret.secretName",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "persistentVolumeClaim": {"claimName": ""}})),
            &[
                "spec.volumes[0].persistentVolumeClaim.claimName",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "emptyDir": {"sizeLimit": "-1Gi"}})),
            &[
                "spec.volumes[0].emptyDir.sizeLimit",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "nfs": {"server": "s", "path": "rel"}})),
            &[
                "spec.volumes[0].nfs.path",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "csi": {"driver": "Bad_Driver!"}})),
            &[
                "spec.volumes[0].csi.driver",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "downwardAPI": {"items": [{"path": "p", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}]}}),
            ),
            &[
                "spec.volumes[0].downwardAPI.fieldRef.fieldPath",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "downwardAPI": {"items": [{"path": "p", "resourceFieldRef": {"resource": "limits.cpu"}}]}}),
            ),
            &[
                "spec.volumes[0].downwardAPI.resourceFieldRef.containerName",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "projected": {"sources": [{"secret": {"name": "a", "items": [{"key": "k", "path": "p"}]},
                                                                  "configMap": {"name": "b"}}]}}),
            ),
            &[
                "spec.volumes[0].projected.sources[0]",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]}}),
            ),
            &[
                "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "ephemeral": {}})),
            &[
                "spec.volumes[0].ephemeral.volumeClaimTemplate",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(json!({"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})),
            &[
                "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes",
                "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]",
                "spec.containers[0].volumeMounts[0].name",
            ],
        ),
        (
            vol(
                json!({"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}),
            ),
            &[],
        ),
    ]);
}

#[test]
fn containers_names_images_policies() {
    let c = |extra: Value| json!({"spec": {"containers": [container(extra)]}});
    check(&[
        (json!({"spec": {"containers": []}}), &["spec.containers"]),
        (c(json!({"name": "Main"})), &["spec.containers[0].name"]),
        (
            c(json!({"name": "a".repeat(64)})),
            &["spec.containers[0].name"],
        ),
        (c(json!({"image": ""})), &["spec.containers[0].image"]),
        // Templates keep surrounding spaces (a pod would not).
        (c(json!({"image": " "})), &[]),
        (
            c(json!({"imagePullPolicy": "Sometimes"})),
            &["spec.containers[0].imagePullPolicy"],
        ),
        (
            c(json!({"terminationMessagePolicy": "Bogus"})),
            &["spec.containers[0].terminationMessagePolicy"],
        ),
        (
            c(json!({"restartPolicy": "Always"})),
            &["spec.containers[0].restartPolicy"],
        ),
        (
            json!({"spec": {"containers": [container(json!({})), container(json!({}))]}}),
            &["spec.containers[1].name"],
        ),
        (
            json!({"spec": {"initContainers": [container(json!({}))]}}),
            &["spec.initContainers[0].name"],
        ),
        (
            json!({"spec": {"initContainers": [container(json!({"name": "init", "restartPolicy": "Never"}))]}}),
            &["spec.initContainers[0].restartPolicy"],
        ),
        (
            json!({"spec": {"initContainers": [container(json!({"name": "init", "readinessProbe": {"exec": {"command": ["true"]}}}))]}}),
            &["spec.initContainers[0].readinessProbe"],
        ),
        (
            json!({"spec": {"initContainers": [container(json!({"name": "init", "restartPolicy": "Always",
                "readinessProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}}))]}}),
            &[],
        ),
        (
            json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]}}),
            &["spec.ephemeralContainers"],
        ),
    ]);
}

#[test]
fn ports_env_and_mounts() {
    let c = |extra: Value| json!({"spec": {"containers": [container(extra)]}});
    check(&[
        (
            c(json!({"ports": [{"containerPort": 80, "protocol": "TCP", "name": "HTTP_BAD"}]})),
            &["spec.containers[0].ports[0].name"],
        ),
        (
            c(json!({"ports": [{"containerPort": 0, "protocol": "TCP"}]})),
            &["spec.containers[0].ports[0].containerPort"],
        ),
        (
            c(json!({"ports": [{"containerPort": 70000, "protocol": "TCP"}]})),
            &["spec.containers[0].ports[0].containerPort"],
        ),
        (
            c(json!({"ports": [{"containerPort": 80, "hostPort": 70000, "protocol": "TCP"}]})),
            &["spec.containers[0].ports[0].hostPort"],
        ),
        (
            c(json!({"ports": [{"containerPort": 80, "protocol": "HTTP"}]})),
            &["spec.containers[0].ports[0].protocol"],
        ),
        (
            c(
                json!({"ports": [{"containerPort": 80, "protocol": "TCP", "name": "web"}, {"containerPort": 81, "protocol": "TCP", "name": "web"}]}),
            ),
            &["spec.containers[0].ports[1].name"],
        ),
        (
            c(
                json!({"ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}, {"containerPort": 81, "hostPort": 8080, "protocol": "TCP"}]}),
            ),
            &["spec.containers[0].ports[1].hostPort"],
        ),
        (
            c(json!({"env": [{"name": "has space"}]})),
            &["spec.containers[0].env[0].name"],
        ),
        (
            c(json!({"env": [{"name": ""}]})),
            &["spec.containers[0].env[0].name"],
        ),
        (
            c(json!({"env": [{"name": "X", "valueFrom": {}}]})),
            &["spec.containers[0].env[0].valueFrom"],
        ),
        (
            c(
                json!({"env": [{"name": "X", "value": "1", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]}),
            ),
            &["spec.containers[0].env[0].valueFrom"],
        ),
        (
            c(
                json!({"env": [{"name": "X", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.bogus"}}}]}),
            ),
            &["spec.containers[0].env[0].valueFrom.fieldRef.fieldPath"],
        ),
        (
            c(
                json!({"env": [{"name": "X", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}}}]}),
            ),
            &[],
        ),
        (
            c(
                json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": ""}}}]}),
            ),
            &["spec.containers[0].env[0].valueFrom.secretKeyRef.key"],
        ),
        (
            c(
                json!({"env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "bogus"}}}]}),
            ),
            &["spec.containers[0].env[0].valueFrom.resourceFieldRef.resource"],
        ),
        (
            c(
                json!({"env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}}]}),
            ),
            &["spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor"],
        ),
        (c(json!({"envFrom": [{}]})), &["spec.containers[0].envFrom"]),
        (
            c(json!({"envFrom": [{"prefix": "1X", "configMapRef": {"name": "cm"}}]})),
            &["spec.containers[0].envFrom[0].prefix"],
        ),
        (
            c(json!({"volumeMounts": [{"name": "nope", "mountPath": "/d"}]})),
            &["spec.containers[0].volumeMounts[0].name"],
        ),
        (
            c(
                json!({"volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "data", "mountPath": "/d"}]}),
            ),
            &["spec.containers[0].volumeMounts[1].mountPath"],
        ),
        // Kubernetes reports sub-path errors without the mount's index.
        (
            c(json!({"volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": "../x"}]})),
            &["spec.containers[0].volumeMounts.subPath"],
        ),
        (
            c(
                json!({"volumeMounts": [{"name": "data", "mountPath": "/d", "subPath": "a", "subPathExpr": "b"}]}),
            ),
            &["spec.containers[0].volumeMounts[0].subPathExpr"],
        ),
        (
            c(
                json!({"volumeMounts": [{"name": "data", "mountPath": "/d", "mountPropagation": "Bidirectional"}]}),
            ),
            &["spec.containers[0].volumeMounts.mountPropagation"],
        ),
        (
            c(json!({"volumeDevices": [{"name": "data", "devicePath": "/dev/x"}]})),
            &["spec.containers[0].volumeDevices[0].name"],
        ),
    ]);
}

#[test]
fn probes_and_lifecycle() {
    let c = |extra: Value| json!({"spec": {"containers": [container(extra)]}});
    let probe = |p: Value| {
        let mut v = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        json_merge(&mut v, &p);
        v
    };
    check(&[
        (
            c(json!({"livenessProbe": probe(json!({}))})),
            &["spec.containers[0].livenessProbe"],
        ),
        (
            c(
                json!({"livenessProbe": probe(json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "tcpSocket": {"port": 80}}))}),
            ),
            &["spec.containers[0].livenessProbe.tcpSocket"],
        ),
        (
            c(
                json!({"livenessProbe": probe(json!({"httpGet": {"path": "/", "port": 0, "scheme": "HTTP"}}))}),
            ),
            &["spec.containers[0].livenessProbe.httpGet.port"],
        ),
        (
            c(
                json!({"livenessProbe": probe(json!({"httpGet": {"path": "/", "port": "bad_name", "scheme": "HTTP"}}))}),
            ),
            &["spec.containers[0].livenessProbe.httpGet.port"],
        ),
        (
            c(
                json!({"readinessProbe": probe(json!({"httpGet": {"path": "/", "port": 80, "scheme": "FTP"}}))}),
            ),
            &["spec.containers[0].readinessProbe.httpGet.scheme"],
        ),
        (
            c(
                json!({"livenessProbe": probe(json!({"tcpSocket": {"port": 80}, "successThreshold": 2}))}),
            ),
            &["spec.containers[0].livenessProbe.successThreshold"],
        ),
        (
            c(
                json!({"readinessProbe": probe(json!({"tcpSocket": {"port": 80}, "successThreshold": 2}))}),
            ),
            &[],
        ),
        (
            c(
                json!({"startupProbe": probe(json!({"exec": {"command": ["true"]}, "periodSeconds": -1}))}),
            ),
            &["spec.containers[0].startupProbe.periodSeconds"],
        ),
        (
            c(json!({"readinessProbe": probe(json!({"exec": {}}))})),
            &["spec.containers[0].readinessProbe.exec.command"],
        ),
        (
            c(
                json!({"readinessProbe": probe(json!({"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 5}))}),
            ),
            &["spec.containers[0].readinessProbe.terminationGracePeriodSeconds"],
        ),
        (
            c(json!({"livenessProbe": probe(json!({"grpc": {"port": 9000}}))})),
            &[],
        ),
        (
            c(json!({"lifecycle": {"postStart": {}}})),
            &["spec.containers[0].lifecycle.postStart"],
        ),
        (
            c(json!({"lifecycle": {"preStop": {"sleep": {"seconds": -1}}}})),
            &["spec.containers[0].lifecycle.preStop.sleep"],
        ),
        (
            c(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 31}}}})),
            &["spec.containers[0].lifecycle.preStop.sleep"],
        ),
        (
            c(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 30}}}})),
            &[],
        ),
    ]);
}

#[test]
fn resources() {
    let c = |r: Value| json!({"spec": {"containers": [container(json!({"resources": r}))]}});
    check(&[
        (
            c(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})),
            &["spec.containers[0].resources.requests"],
        ),
        (
            c(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1000m"}})),
            &[],
        ),
        (
            c(json!({"requests": {"memory": "-1Mi"}})),
            &["spec.containers[0].resources.requests[memory]"],
        ),
        (
            c(json!({"requests": {"bogus": "1"}})),
            &["spec.containers[0].resources.requests[bogus]"],
        ),
        (
            c(json!({"limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}})),
            &["spec.containers[0].resources.requests"],
        ),
        (
            c(json!({"requests": {"example.com/gpu": "1"}})),
            &["spec.containers[0].resources.limits"],
        ),
        (
            c(json!({"limits": {"example.com/gpu": "1.5"}})),
            &["spec.containers[0].resources.limits[example.com/gpu]"],
        ),
        (
            c(json!({"requests": {"hugepages-2Mi": "1Gi"}})),
            &[
                "spec.containers[0].resources",
                "spec.containers[0].resources.limits",
            ],
        ),
        (
            c(
                json!({"limits": {"hugepages-2Mi": "1Gi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "1Gi"}}),
            ),
            &[],
        ),
        (
            c(json!({"claims": [{"name": "gpu"}]})),
            &["spec.containers[0].resources.claims[0]"],
        ),
    ]);
}

#[test]
fn security_contexts() {
    let c =
        |sc: Value| json!({"spec": {"containers": [container(json!({"securityContext": sc}))]}});
    let pod = |sc: Value| json!({"spec": {"securityContext": sc}});
    check(&[
        (
            c(json!({"runAsUser": -1})),
            &["spec.containers[0].securityContext.runAsUser"],
        ),
        (
            c(json!({"runAsGroup": 2147483648i64})),
            &["spec.containers[0].securityContext.runAsGroup"],
        ),
        (
            c(json!({"allowPrivilegeEscalation": false, "privileged": true})),
            &["spec.containers[0].securityContext"],
        ),
        (
            c(
                json!({"allowPrivilegeEscalation": false, "capabilities": {"add": ["CAP_SYS_ADMIN"]}}),
            ),
            &["spec.containers[0].securityContext"],
        ),
        (c(json!({"privileged": true})), &[]),
        (
            c(json!({"procMount": "Unmasked"})),
            &["spec.containers[0].securityContext.procMount"],
        ),
        (
            c(json!({"seccompProfile": {"type": "Localhost"}})),
            &["spec.containers[0].securityContext.seccompProfile.localhostProfile"],
        ),
        (
            c(json!({"seccompProfile": {"type": "Bogus"}})),
            &["spec.containers[0].securityContext.seccompProfile.type"],
        ),
        (
            c(json!({"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}})),
            &["spec.containers[0].securityContext.appArmorProfile.localhostProfile"],
        ),
        (
            c(json!({"windowsOptions": {"runAsUserName": ""}})),
            &["spec.containers[0].securityContext.windowsOptions.runAsUserName"],
        ),
        (
            pod(json!({"runAsGroup": -5})),
            &["spec.securityContext.runAsGroup"],
        ),
        (
            pod(json!({"fsGroup": -1, "supplementalGroups": [-1]})),
            &[
                "spec.securityContext.fsGroup",
                "spec.securityContext.supplementalGroups[0]",
            ],
        ),
        (
            pod(json!({"sysctls": [{"name": "bad sysctl", "value": "1"}]})),
            &["spec.securityContext.sysctls[0].name"],
        ),
        (
            pod(
                json!({"sysctls": [{"name": "net.core.somaxconn", "value": "1"}, {"name": "net.core.somaxconn", "value": "2"}]}),
            ),
            &["spec.securityContext.sysctls[1].name"],
        ),
        (
            json!({"spec": {"hostNetwork": true, "securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1"}]}}}),
            &["spec.securityContext.sysctls[0].name"],
        ),
        (
            json!({"spec": {"hostIPC": true, "securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}}}),
            &["spec.securityContext.sysctls[0].name"],
        ),
        (
            pod(json!({"fsGroupChangePolicy": "Sometimes"})),
            &["spec.securityContext.fsGroupChangePolicy"],
        ),
        (
            json!({"spec": {"hostPID": true, "shareProcessNamespace": true}}),
            &["spec.securityContext.shareProcessNamespace"],
        ),
        (
            json!({"spec": {"hostUsers": false, "hostNetwork": true}}),
            &["spec.hostNetwork"],
        ),
        (
            json!({"metadata": {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}, "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}}),
            &["spec.securityContext.seccompProfile.type"],
        ),
        (
            json!({"spec": {"os": {"name": "linux"}, "securityContext": {"windowsOptions": {}}}}),
            &["spec.securityContext.windowsOptions"],
        ),
        (
            json!({"spec": {"os": {"name": "windows"}, "securityContext": {"runAsUser": 1}}}),
            &["spec.securityContext.runAsUser"],
        ),
        (json!({"spec": {"os": {"name": "plan9"}}}), &["spec.os"]),
    ]);
}

#[test]
fn pod_level_fields() {
    check(&[
        (
            json!({"spec": {"restartPolicy": "Sometimes"}}),
            &["spec.restartPolicy"],
        ),
        (json!({"spec": {"dnsPolicy": "Bogus"}}), &["spec.dnsPolicy"]),
        (json!({"spec": {"dnsPolicy": "None"}}), &["spec.dnsConfig"]),
        (
            json!({"spec": {"dnsPolicy": "None", "dnsConfig": {}}}),
            &["spec.dnsConfig.nameservers"],
        ),
        (
            json!({"spec": {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.1"]}}}),
            &[],
        ),
        (
            json!({"spec": {"dnsConfig": {"nameservers": ["not-an-ip"]}}}),
            &["spec.dnsConfig.nameservers[0]"],
        ),
        (
            json!({"spec": {"dnsConfig": {"nameservers": ["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"]}}}),
            &["spec.dnsConfig.nameservers"],
        ),
        (
            json!({"spec": {"dnsConfig": {"searches": ["Bad_Domain"]}}}),
            &["spec.dnsConfig.searches[0]"],
        ),
        (
            json!({"spec": {"dnsConfig": {"searches": ["example.com."]}}}),
            &[],
        ),
        (
            json!({"spec": {"dnsConfig": {"options": [{"name": ""}]}}}),
            &["spec.dnsConfig.options[0]"],
        ),
        // Kubernetes only requires the grace period to be set (a pod turns a negative one into 1).
        (json!({"spec": {"terminationGracePeriodSeconds": -1}}), &[]),
        (
            json!({"spec": {"terminationGracePeriodSeconds": null}}),
            &["spec.terminationGracePeriodSeconds"],
        ),
        (
            json!({"spec": {"activeDeadlineSeconds": 0}}),
            &["spec.activeDeadlineSeconds"],
        ),
        (
            json!({"spec": {"nodeSelector": {"bad key!": "x"}}}),
            &["spec.nodeSelector"],
        ),
        (
            json!({"spec": {"nodeSelector": {"k": "-bad-"}}}),
            &["spec.nodeSelector"],
        ),
        (
            json!({"spec": {"hostname": "Bad_Host"}}),
            &["spec.hostname"],
        ),
        (
            json!({"spec": {"subdomain": "Bad.Sub"}}),
            &["spec.subdomain"],
        ),
        (
            json!({"spec": {"serviceAccountName": "Bad_SA"}}),
            &["spec.serviceAccountName"],
        ),
        (
            json!({"spec": {"priorityClassName": "Bad_Class"}}),
            &["spec.priorityClassName"],
        ),
        (
            json!({"spec": {"runtimeClassName": "Bad_Class"}}),
            &["spec.runtimeClassName"],
        ),
        (
            json!({"spec": {"preemptionPolicy": "Sometimes"}}),
            &["spec.preemptionPolicy"],
        ),
        (
            json!({"spec": {"nodeName": "Bad_Node"}}),
            &["spec.nodeName"],
        ),
        (
            json!({"spec": {"schedulingGates": [{"name": "bad gate"}]}}),
            &["spec.schedulingGates[0]"],
        ),
        (
            json!({"spec": {"schedulingGates": [{"name": "a"}, {"name": "a"}]}}),
            &["spec.schedulingGates[1]"],
        ),
        (
            json!({"spec": {"readinessGates": [{"conditionType": "bad gate"}]}}),
            &["spec.readinessGates[0].conditionType"],
        ),
        (
            json!({"spec": {"hostAliases": [{"ip": "x", "hostnames": ["Bad_Host"]}]}}),
            &["spec.hostAliases[0].ip", "spec.hostAliases[0].hostnames[0]"],
        ),
        (
            json!({"spec": {"overhead": {"cpu": "-1"}}}),
            &["spec.overhead.limits[cpu]"],
        ),
        (
            json!({"spec": {"hostNetwork": true, "containers": [container(json!({"ports": [{"containerPort": 80, "hostPort": 81, "protocol": "TCP"}]}))]}}),
            &["spec.containers[0].ports[0].hostPort"],
        ),
        (
            json!({"spec": {"resourceClaims": [{"name": "gpu"}]}}),
            &["spec.resourceClaims[0]"],
        ),
    ]);
}

#[test]
fn scheduling() {
    let aff = |a: Value| json!({"spec": {"affinity": a}});
    let tol = |t: Value| json!({"spec": {"tolerations": [t]}});
    let tsc = |t: Value| json!({"spec": {"topologySpreadConstraints": t}});
    let na = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
    check(&[
        (
            aff(
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
            ),
            &[&format!("{na}.nodeSelectorTerms")],
        ),
        (
            aff(
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]}}}),
            ),
            &[&format!(
                "{na}.nodeSelectorTerms[0].matchExpressions[0].operator"
            )],
        ),
        (
            aff(
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1", "2"]}]}]}}}),
            ),
            &[&format!(
                "{na}.nodeSelectorTerms[0].matchExpressions[0].values"
            )],
        ),
        (
            aff(
                json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}}),
            ),
            &[&format!("{na}.nodeSelectorTerms[0].matchFields[0].key")],
        ),
        (
            aff(
                json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}),
            ),
            &[
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            ],
        ),
        (
            aff(
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "x"}}}]}}),
            ),
            &[
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
            ],
        ),
        (
            aff(
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": "zone"}}]}}),
            ),
            &[
                "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            ],
        ),
        // OpenKruise allows invalid label values in pod affinity selectors.
        (
            aff(
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["-bad-"]}]}}]}}),
            ),
            &[],
        ),
        (
            tol(json!({"key": "k", "operator": "Exists", "value": "v"})),
            &["spec.tolerations[0].operator"],
        ),
        (
            tol(json!({"key": "k", "operator": "Bogus"})),
            &["spec.tolerations[0].operator"],
        ),
        (
            tol(json!({"key": "k", "operator": "Exists", "effect": "Bogus"})),
            &["spec.tolerations[0].effect"],
        ),
        (
            tol(json!({"operator": "Equal", "value": "v"})),
            &["spec.tolerations[0].operator"],
        ),
        (
            tol(
                json!({"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}),
            ),
            &["spec.tolerations[0].effect"],
        ),
        (
            tol(json!({"key": "bad key!", "operator": "Exists"})),
            &["spec.tolerations[0].key"],
        ),
        (tol(json!({"operator": "Exists"})), &[]),
        (
            tsc(
                json!([{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
            ),
            &["spec.topologySpreadConstraints[0].maxSkew"],
        ),
        (
            tsc(json!([{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}])),
            &["spec.topologySpreadConstraints[0].topologyKey"],
        ),
        (
            tsc(json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Bogus"}])),
            &["spec.topologySpreadConstraints[0].whenUnsatisfiable"],
        ),
        (
            tsc(
                json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                       {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
            ),
            &["spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"],
        ),
        (
            tsc(
                json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]),
            ),
            &["spec.topologySpreadConstraints[0].minDomains"],
        ),
        (
            tsc(
                json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "matchLabelKeys": ["app"]}]),
            ),
            &["spec.topologySpreadConstraints[0].matchLabelKeys"],
        ),
    ]);
}

#[test]
fn messages_read_like_kubernetes() {
    let one = |edit: Value| aggregate(&validate(&edit)).unwrap_or_default();
    assert_eq!(
        one(
            json!({"spec": {"containers": [container(json!({"terminationMessagePolicy": "Bogus"}))]}})
        ),
        "spec.template.spec.containers[0].terminationMessagePolicy: Unsupported value: \"Bogus\": supported values: \"File\", \"FallbackToLogsOnError\""
    );
    assert_eq!(
        one(
            json!({"spec": {"containers": [container(json!({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}))]}})
        ),
        "spec.template.spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
    );
    assert_eq!(
        one(
            json!({"spec": {"containers": [container(json!({"lifecycle": {"preStop": {"sleep": {"seconds": -1}}}}))]}})
        ),
        "spec.template.spec.containers[0].lifecycle.preStop.sleep: Invalid value: -1: must be greater than 0 and less than terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep."
    );
    assert_eq!(
        one(json!({"spec": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}})),
        "spec.template.spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\""
    );
    // Resource names and quantities print through their String(): unquoted.
    assert_eq!(
        one(
            json!({"spec": {"containers": [container(json!({"resources": {"requests": {"bogus": "1"}}}))]}})
        ),
        "[spec.template.spec.containers[0].resources.requests[bogus]: Invalid value: bogus: must be a standard resource type or fully qualified, spec.template.spec.containers[0].resources.requests[bogus]: Invalid value: bogus: must be a standard resource for containers]"
    );
    assert_eq!(
        one(
            json!({"spec": {"containers": [container(json!({"resources": {"limits": {"example.com/gpu": "1500m"}}}))]}})
        ),
        "spec.template.spec.containers[0].resources.limits[example.com/gpu]: Invalid value: 1500m: must be an integer"
    );
    assert_eq!(
        one(json!({"spec": {"dnsConfig": {"nameservers": ["not-an-ip"]}}})),
        "spec.template.spec.dnsConfig.nameservers[0]: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    );
}

#[test]
fn quantities_of_a_spec() {
    let spec: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(json!({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "abc"}},
                        "env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}}]}],
        "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}],
        "overhead": {"memory": "1Mi"}
    }))
    .unwrap();
    let mut q = pod_spec_quantities(&spec);
    q.sort_unstable();
    assert_eq!(q, ["1Gi", "1Mi", "1m", "abc"]);
}
