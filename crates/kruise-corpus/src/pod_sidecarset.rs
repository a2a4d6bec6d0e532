//! Pod CREATE cases against a cluster holding SidecarSets (`pod-sidecarset`): OpenKruise
//! v1.9.0's SidecarSet injection in `/mutate-pod` (`pkg/webhook/pod/mutating/sidecarset.go`,
//! `sidecarset_hotupgrade.go`, `sidecarset_resources.go` and `pkg/control/sidecarcontrol`).
//!
//! The cluster ([`cluster`]) holds Namespaces, hand-made ControllerRevisions (injection
//! revisions pinned by name or custom version) and about 25 v1beta1 SidecarSets, each selecting
//! pods by its own label (`f-before: y`, `f-vol: y`, ...), some by `app: web` too: containers
//! before/after the pod's, plain and native-sidecar init containers, hot upgrade (containers and
//! a native sidecar), volumes (one clashing with a pod volume), image pull secrets,
//! shareVolumePolicy, shareVolumeDevicePolicy, transferEnv, patchPodMetadata, resources
//! policies, namespace selectors (pinned by `kubernetes.io/metadata.name` and by another label),
//! a paused injection and pinned revisions. The cases are hand-written pods per feature, then
//! generated ones: pod shapes (env, mounts, devices, resources, init containers, existing
//! hash annotations in the current, older and malformed formats) × label sets × namespaces.
//!
//! OpenKruise lists the SidecarSets matching a pod from its cache's field index: those pinned to
//! the pod's namespace first, then the cluster-scoped ones, each group in Go map order (random).
//! The order matters only for what is appended in it (volumes, image pull secrets), for `Retain`
//! and `MergePatchJson` patches of one key, and for which error comes first; the fixtures are
//! built so that it never does: within a group, only `pc-volumes` adds volumes and only
//! `pc-secrets` adds pull secrets (the pinned group's `pc-ns-pinned` adds both, ahead of them),
//! only `pc-meta` patches metadata, and no case has two failing SidecarSets.

use kruise_engines::revision::go_json::{self, GoType};
use serde_json::{Value, json};

use super::{Builder, Case, KRUISE_NAMESPACE, NAMESPACE};

/// Namespaces the cluster holds for this corpus (besides `corpus` and `default`).
const NAMESPACES: &[(&str, &[(&str, &str)])] = &[
    ("pc-prod", &[("env", "prod")]),
    ("pc-dev", &[("env", "dev")]),
    ("pc-pinned", &[("team", "x")]),
];

/// A namespace no object is in: SidecarSets with a namespace selector never match its pods.
const GHOST_NAMESPACE: &str = "pc-ghost";

fn set(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": spec
    })
}

fn revision(name: &str, labels: Value, annotations: Value, number: i64, spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": KRUISE_NAMESPACE, "labels": labels, "annotations": annotations},
        "revision": number,
        "data": {"spec": spec}
    })
}

/// A revision's spec as OpenKruise's controller writes it (`$patch: replace` of the injected
/// fields), with `containers` as given.
fn revision_spec(containers: Value) -> Value {
    json!({"$patch": "replace", "containers": containers,
        "volumes": null, "initContainers": null, "imagePullSecrets": null, "patchPodMetadata": null})
}

/// The objects the cluster holds while the corpus is recorded (Namespaces first, then the
/// ControllerRevisions pinned injection revisions name, then the SidecarSets).
pub fn cluster() -> Vec<Value> {
    let mut out = Vec::new();
    for (name, labels) in NAMESPACES {
        let labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        out.push(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}}));
    }
    let owner = |set: &str| json!({"kruise.io/sidecarset-name": set});
    let owner_cv = |set: &str, cv: &str| json!({"kruise.io/sidecarset-name": set, "apps.kruise.io/sidecarset-custom-version": cv});
    out.extend([
        // Restored without hash annotations: the hashes are computed from the restored set.
        revision(
            "pc-rev-name-v1",
            owner("pc-rev-name"),
            json!({}),
            1,
            revision_spec(json!([{"name": "rev-name-agent", "image": "busybox:1.30",
                "imagePullPolicy": "IfNotPresent", "podInjectPolicy": "BeforeAppContainer",
                "env": [{"name": "REV", "value": "v1"}],
                "upgradeStrategy": {"upgradeType": "ColdUpgrade"}, "shareVolumePolicy": {"type": "disabled"}}])),
        ),
        // Restored with the hashes its annotations carry.
        revision(
            "pc-rev-ann-v1",
            owner("pc-rev-ann"),
            json!({"kruise.io/sidecarset-hash": "rev-ann-hash", "kruise.io/sidecarset-hash-without-image": "rev-ann-hash-wo"}),
            1,
            revision_spec(json!([{"name": "rev-ann-agent", "image": "busybox:1.31"}])),
        ),
        // Custom version cv-old twice: the higher revision number wins.
        revision(
            "pc-rev-cv-a",
            owner_cv("pc-rev-cv", "cv-old"),
            json!({}),
            3,
            revision_spec(json!([{"name": "rev-cv-agent", "image": "busybox:1.32"}])),
        ),
        revision(
            "pc-rev-cv-b",
            owner_cv("pc-rev-cv", "cv-old"),
            json!({}),
            5,
            revision_spec(json!([{"name": "rev-cv-agent", "image": "busybox:1.33",
                "podInjectPolicy": "AfterAppContainer"}])),
        ),
        revision(
            "pc-rev-cv-c",
            owner_cv("pc-rev-cv", "cv-other"),
            json!({}),
            7,
            revision_spec(json!([{"name": "rev-cv-agent", "image": "busybox:1.34"}])),
        ),
        revision(
            "pc-rev-partial-v1",
            owner("pc-rev-partial"),
            json!({}),
            1,
            revision_spec(json!([{"name": "rev-partial-agent", "image": "busybox:1.30"}])),
        ),
        revision(
            "pc-rev-paused-v1",
            owner_cv("pc-rev-paused", "cv-p"),
            json!({}),
            1,
            revision_spec(json!([{"name": "rev-paused-agent", "image": "busybox:1.30",
                "volumeMounts": [{"name": "gone", "mountPath": "/gone"}]}])),
        ),
    ]);
    let not_update = json!({"type": "NotUpdate"});
    out.extend([
        set("pc-before", json!({
            "selector": {"matchLabels": {"f-before": "y"}},
            "containers": [{"name": "before-agent", "image": "busybox:1.36", "podInjectPolicy": "BeforeAppContainer",
                "command": ["sh", "-c", "sleep 3600"],
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "IS_INJECTED", "value": "false"}],
                "ports": [{"name": "metrics", "containerPort": 9100}]}]
        })),
        set("pc-after", json!({
            "selector": {"matchLabels": {"f-after": "y"}},
            "containers": [
                {"name": "after-b", "image": "busybox:1.36", "podInjectPolicy": "AfterAppContainer",
                 "args": ["--b"], "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}},
                {"name": "after-a", "image": "busybox:1.36", "podInjectPolicy": "AfterAppContainer",
                 "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 7}}
            ]
        })),
        set("pc-init", json!({
            "selector": {"matchLabels": {"f-init": "y"}},
            "initContainers": [
                {"name": "init-z", "image": "busybox:1.36", "command": ["sh", "-c", "echo z"]},
                {"name": "init-a", "image": "busybox:1.36", "env": [{"name": "STEP", "value": "a"}]}
            ]
        })),
        set("pc-native", json!({
            "selector": {"matchLabels": {"f-native": "y"}},
            "updateStrategy": not_update,
            "initContainers": [
                {"name": "native-proxy", "image": "envoyproxy/envoy:v1.30.1", "restartPolicy": "Always",
                 "ports": [{"containerPort": 15001}]},
                {"name": "native-prep", "image": "busybox:1.36", "command": ["true"]}
            ]
        })),
        set("pc-native-hot", json!({
            "selector": {"matchLabels": {"f-native-hot": "y"}},
            "updateStrategy": not_update,
            "initContainers": [
                {"name": "native-hot", "image": "busybox:1.36", "restartPolicy": "Always",
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:empty"}}
            ]
        })),
        set("pc-hot", json!({
            "selector": {"matchLabels": {"f-hot": "y"}},
            "containers": [
                {"name": "hot-mesh", "image": "mesh:1.0", "podInjectPolicy": "BeforeAppContainer",
                 "env": [{"name": "MESH", "value": "1"}],
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "mesh:empty"}},
                {"name": "hot-cold", "image": "busybox:1.36"}
            ]
        })),
        set("pc-volumes", json!({
            "selector": {"matchLabels": {"f-vol": "y"}},
            "volumes": [
                {"name": "pc-logs", "emptyDir": {}},
                {"name": "pc-cfg", "configMap": {"name": "pc-cfg", "defaultMode": 420}},
                {"name": "data", "hostPath": {"path": "/var/pc-data", "type": "DirectoryOrCreate"}},
                {"name": "pc-blk", "persistentVolumeClaim": {"claimName": "pc-blk"}},
                {"name": "pc-unused", "emptyDir": {"medium": "Memory"}}
            ],
            "initContainers": [
                {"name": "vol-init", "image": "busybox:1.36", "volumeMounts": [{"name": "pc-logs", "mountPath": "/logs"}]}
            ],
            "containers": [
                {"name": "vol-agent", "image": "busybox:1.36",
                 "volumeMounts": [{"name": "pc-logs", "mountPath": "/logs"}, {"name": "pc-cfg", "mountPath": "/cfg", "readOnly": true},
                                  {"name": "data", "mountPath": "/sidecar-data"}],
                 "volumeDevices": [{"name": "pc-blk", "devicePath": "/dev/pcblk"}]}
            ]
        })),
        set("pc-secrets", json!({
            "selector": {"matchLabels": {"f-sec": "y"}},
            "imagePullSecrets": [{"name": "regcred"}, {"name": "shared-cred"}],
            "containers": [{"name": "sec-agent", "image": "private.example.com/agent:1"}]
        })),
        set("pc-share", json!({
            "selector": {"matchLabels": {"f-share": "y"}},
            // pc-logs as pc-volumes declares it, first in both: the volume list is the same in
            // either order.
            "volumes": [{"name": "pc-logs", "emptyDir": {}}],
            "containers": [{"name": "share-agent", "image": "busybox:1.36", "shareVolumePolicy": {"type": "enabled"},
                "env": [{"name": "SUB", "value": "sidecar-sub"}],
                "volumeMounts": [{"name": "pc-logs", "mountPath": "/data"}]}]
        })),
        set("pc-share-dev", json!({
            "selector": {"matchLabels": {"f-sharedev": "y"}},
            "volumes": [{"name": "pc-logs", "emptyDir": {}}],
            "containers": [{"name": "dev-agent", "image": "busybox:1.36",
                "shareVolumeDevicePolicy": {"type": "enabled"},
                "volumeMounts": [{"name": "pc-logs", "mountPath": "/dev/xvdb"}]}]
        })),
        set("pc-transfer", json!({
            "selector": {"matchLabels": {"f-transfer": "y"}},
            "containers": [{"name": "transfer-agent", "image": "busybox:1.36",
                "env": [{"name": "A", "value": "sidecar-a"}],
                "transferEnv": [
                    {"sourceContainerName": "main", "envName": "TZ"},
                    {"sourceContainerName": "main", "envNames": ["B", "A", "MISSING"]},
                    {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['src-container']"}}, "envNames": ["C"]},
                    {"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.annotations['src-container']"}}, "envName": "D"},
                    {"sourceContainerName": "app-1", "envName": "POD_NAME"}
                ]}]
        })),
        set("pc-meta", json!({
            "selector": {"matchLabels": {"f-meta": "y"}},
            "containers": [{"name": "meta-agent", "image": "busybox:1.36"}],
            "patchPodMetadata": [
                {"annotations": {"pc/retain": "sidecar-retain", "pc/retain2": "r2"}, "patchPolicy": "Retain"},
                {"annotations": {"pc/over": "sidecar-over"}, "patchPolicy": "Overwrite"},
                {"annotations": {"pc/merge": "{\"a\":1,\"b\":{\"c\":\"x\",\"e\":null},\"u\":\"<&>\",\"n\":1.50}"}, "patchPolicy": "MergePatchJson"}
            ]
        })),
        set("pc-res-sum", json!({
            "selector": {"matchLabels": {"f-res": "sum"}},
            "containers": [{"name": "res-sum", "image": "busybox:1.36",
                "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "^(main|app-.*)$",
                    "resourcesExpr": {
                        "limits": {"cpu": "max(cpu*50%, 50m)", "memory": "memory*50% + 32Mi"},
                        "requests": {"cpu": "cpu*10%", "memory": "min(memory, 64Mi)"}}}}]
        })),
        set("pc-res-max", json!({
            "selector": {"matchLabels": {"f-res": "max"}},
            "containers": [{"name": "res-max", "image": "busybox:1.36",
                "resourcesPolicy": {"targetContainersMode": "max", "targetContainersNameRegex": ".*",
                    "resourcesExpr": {
                        "limits": {"cpu": "cpu", "memory": "memory + 100Mi"},
                        "requests": {"cpu": "min(cpu, 100m)", "memory": "memory/2"}}}}]
        })),
        set("pc-res-native", json!({
            "selector": {"matchLabels": {"f-res": "native"}},
            "updateStrategy": not_update,
            "initContainers": [{"name": "res-native", "image": "busybox:1.36", "restartPolicy": "Always",
                "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "^main$",
                    "resourcesExpr": {"limits": {"cpu": "cpu*20%"}, "requests": {"memory": "memory*20%"}}}}]
        })),
        set("pc-web", json!({
            "selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "web-log", "image": "fluent-bit:3", "podInjectPolicy": "AfterAppContainer"}]
        })),
        set("pc-exists", json!({
            "selector": {"matchExpressions": [{"key": "f-exists", "operator": "Exists"},
                                              {"key": "tier", "operator": "NotIn", "values": ["db"]}]},
            "containers": [{"name": "exists-agent", "image": "busybox:1.36"}]
        })),
        set("pc-replace", json!({
            "selector": {"matchLabels": {"f-replace": "y"}},
            "containers": [{"name": "main", "image": "sidecar-main:1", "env": [{"name": "REPLACED", "value": "1"}]}]
        })),
        set("pc-paused", json!({
            "selector": {"matchLabels": {"app": "web"}},
            "injectionStrategy": {"paused": true},
            "containers": [{"name": "paused-agent", "image": "busybox:1.36"}]
        })),
        set("pc-ns-env", json!({
            "selector": {"matchLabels": {"app": "web"}},
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "containers": [{"name": "prod-agent", "image": "busybox:1.36"}]
        })),
        set("pc-ns-pinned", json!({
            "selector": {"matchLabels": {"app": "web"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "pc-pinned"}},
            "volumes": [{"name": "pinned-vol", "emptyDir": {}}, {"name": "pc-logs", "emptyDir": {}}],
            "imagePullSecrets": [{"name": "pinned-cred"}, {"name": "regcred"}],
            "containers": [{"name": "pinned-agent", "image": "busybox:1.36",
                "volumeMounts": [{"name": "pinned-vol", "mountPath": "/pinned"}, {"name": "pc-logs", "mountPath": "/logs"}]}]
        })),
        set("pc-ns-in", json!({
            "selector": {"matchLabels": {"f-nsin": "y"}},
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["pc-dev", "pc-prod"]}]},
            "containers": [{"name": "nsin-agent", "image": "busybox:1.36"}]
        })),
        set("pc-rev-name", json!({
            "selector": {"matchLabels": {"f-rev": "name"}},
            "injectionStrategy": {"revision": {"revisionName": "pc-rev-name-v1", "policy": "Always"}},
            "containers": [{"name": "rev-name-agent", "image": "busybox:1.36"}]
        })),
        set("pc-rev-ann", json!({
            "selector": {"matchLabels": {"f-rev": "ann"}},
            "injectionStrategy": {"revision": {"revisionName": "pc-rev-ann-v1", "policy": "Always"}},
            "containers": [{"name": "rev-ann-agent", "image": "busybox:1.36"}]
        })),
        set("pc-rev-cv", json!({
            "selector": {"matchLabels": {"f-rev": "cv"}},
            "customVersion": "cv-new",
            "injectionStrategy": {"revision": {"customVersion": "cv-old", "policy": "Always"}},
            "containers": [{"name": "rev-cv-agent", "image": "busybox:1.36"}]
        })),
        // Partial without a partition is deterministic: pods outside updateStrategy.selector get
        // the pinned revision, the others the latest.
        set("pc-rev-partial", json!({
            "selector": {"matchLabels": {"f-rev": "partial"}},
            "updateStrategy": {"selector": {"matchLabels": {"canary": "true"}}},
            "injectionStrategy": {"revision": {"revisionName": "pc-rev-partial-v1", "policy": "Partial"}},
            "containers": [{"name": "rev-partial-agent", "image": "busybox:1.36"}]
        })),
        // A paused update injects the pinned revision before the policy is looked at.
        set("pc-rev-paused", json!({
            "selector": {"matchLabels": {"f-rev": "paused"}},
            "customVersion": "cv-now",
            "updateStrategy": {"paused": true, "partition": "50%"},
            "injectionStrategy": {"revision": {"customVersion": "cv-p", "policy": "Partial"}},
            "containers": [{"name": "rev-paused-agent", "image": "busybox:1.36"}]
        })),
    ]);
    out
}

/// Namespaces pods are created in: existing ones with and without labels, `default`, and one
/// that does not exist.
const POD_NAMESPACES: &[&str] = &[
    NAMESPACE,
    "pc-prod",
    "pc-pinned",
    "pc-dev",
    "default",
    GHOST_NAMESPACE,
];

fn pod(namespace: &str, labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace, "labels": labels},
        "spec": spec
    })
}

fn main_container() -> Value {
    json!({"name": "main", "image": "nginx:1.25"})
}

/// Pod shapes: `(name, spec, annotations)`.
fn shapes() -> Vec<(&'static str, Value, Value)> {
    let rich_main = json!({
        "name": "main", "image": "nginx:1.25",
        "env": [{"name": "TZ", "value": "UTC"}, {"name": "A", "value": "main-a"},
                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "SUB", "value": "s"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"},
                         {"name": "cache", "mountPath": "/cache", "subPathExpr": "$(POD_NAME)/$(SUB)/$(NOPE)"},
                         {"name": "token", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
        "resources": {"requests": {"cpu": "200m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}}
    });
    let app1 = json!({
        "name": "app-1", "image": "app:1",
        "env": [{"name": "C", "value": "app1-c"}, {"name": "D", "value": "app1-d"}, {"name": "POD_NAME", "value": "app1-pod"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "cache", "mountPath": "/app-cache", "subPath": "x"}],
        "volumeDevices": [{"name": "blk-pod", "devicePath": "/dev/xvda"}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m", "memory": "1Gi"}}
    });
    let rich_volumes = json!([
        {"name": "data", "emptyDir": {}},
        {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "blk-pod", "persistentVolumeClaim": {"claimName": "blk"}},
        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    ]);
    let new_hash = json!({
        "pc-gone": {"updateTimestamp": "2024-03-01T10:00:00Z", "hash": "h-gone", "sidecarSetName": "pc-gone",
                    "sidecarList": ["gone"], "controllerRevision": "pc-gone-123"},
        "pc-before": {"hash": "h-old-before", "sidecarSetName": "pc-before", "updateTimestamp": "2023-05-05T12:00:00.25+02:00",
                      "extra": 1, "sidecarList": null},
        "pc-web": {"updateTimestamp": null, "hash": "h-old-web"}
    })
    .to_string();
    let new_hash_wo = json!({
        "pc-gone": {"updateTimestamp": "2024-03-01T10:00:00Z", "hash": "h-gone-wo", "sidecarSetName": "pc-gone", "sidecarList": ["gone"]}
    })
    .to_string();
    vec![
        (
            "single",
            json!({"containers": [main_container()]}),
            json!(null),
        ),
        (
            "rich",
            json!({"containers": [rich_main, app1], "volumes": rich_volumes}),
            json!({"src-container": "app-1"}),
        ),
        (
            "init",
            json!({
                "initContainers": [
                    {"name": "pod-init", "image": "busybox", "command": ["true"]},
                    {"name": "pod-native", "image": "busybox", "restartPolicy": "Always",
                     "resources": {"limits": {"cpu": "300m", "memory": "300Mi"}}}],
                "containers": [{"name": "main", "image": "nginx:1.25",
                    "env": [{"name": "TZ", "value": "Europe/Berlin"}],
                    "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]
            }),
            json!(null),
        ),
        (
            "secrets",
            json!({
                "imagePullSecrets": [{"name": "shared-cred"}, {"name": "own-cred"}, {"name": "shared-cred"}],
                "volumes": [{"name": "pc-logs", "hostPath": {"path": "/var/log"}}, {"name": "data", "emptyDir": {}}],
                "containers": [{"name": "main", "image": "nginx:1.25",
                    "volumeMounts": [{"name": "pc-logs", "mountPath": "/logs"}, {"name": "data", "mountPath": "/sidecar-data"}]}]
            }),
            json!(null),
        ),
        (
            "unlimited",
            json!({"containers": [
                {"name": "main", "image": "nginx:1.25"},
                {"name": "app-2", "image": "app:2", "resources": {"requests": {"cpu": "250m", "memory": "100Mi"}}},
                {"name": "helper", "image": "helper:1", "resources": {"limits": {"cpu": "3", "memory": "2Gi"}}}
            ]}),
            json!(null),
        ),
        (
            "clash",
            json!({"containers": [
                {"name": "before-agent", "image": "pod-own:1"},
                main_container(),
                {"name": "injected-before", "image": "x:1", "env": [{"name": "IS_INJECTED", "value": "true"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/injected"}],
                 "volumeDevices": [{"name": "blk-pod", "devicePath": "/dev/injected"}]}
            ], "volumes": [{"name": "data", "emptyDir": {}}, {"name": "blk-pod", "persistentVolumeClaim": {"claimName": "blk"}}]}),
            json!(null),
        ),
        (
            "hash-old",
            json!({"containers": [main_container()]}),
            json!({
                "kruise.io/sidecarset-hash": "{\"pc-gone\":\"abc\",\"pc-before\":\"old\"}",
                "kruise.io/sidecarset-hash-without-image": "{\"pc-gone\":\"abc-wo\"}",
                "kruise.io/sidecarset-injected-list": "pc-gone"
            }),
        ),
        (
            "hash-new",
            json!({"containers": [main_container()]}),
            json!({
                "kruise.io/sidecarset-hash": new_hash,
                "kruise.io/sidecarset-hash-without-image": new_hash_wo,
                "kruise.io/sidecarset-injected-list": "pc-gone,pc-before"
            }),
        ),
        (
            "hash-bad",
            json!({"containers": [main_container()]}),
            json!({"kruise.io/sidecarset-hash": "not-json"}),
        ),
        (
            "hot-info",
            json!({"containers": [main_container()]}),
            json!({"kruise.io/sidecarset-working-hotupgrade-container": "{\"other\":\"other-1\"}",
                   "kruise.io/sidecarset-injected-list": ""}),
        ),
        (
            "meta",
            json!({"containers": [rich_main_small()]}),
            json!({"pc/retain": "pod-retain", "pc/over": "pod-over", "pc/merge": "{\"b\":{\"d\":3},\"z\":1,\"a\":[1]}",
                   "src-container": "main"}),
        ),
        (
            "inactive",
            json!({"containers": [main_container()]}),
            json!(null),
        ),
    ]
}

fn rich_main_small() -> Value {
    json!({"name": "main", "image": "nginx:1.25",
        "env": [{"name": "TZ", "value": "UTC"}, {"name": "D", "value": "main-d"}, {"name": "C", "value": "main-c"}],
        "resources": {"requests": {"cpu": "1500m", "memory": "1G"}, "limits": {"cpu": "3", "memory": "3G"}}})
}

fn shaped(shape: &(&str, Value, Value), namespace: &str, labels: &Value) -> Value {
    let (name, spec, annotations) = shape;
    let mut p = pod(namespace, labels.clone(), spec.clone());
    if !annotations.is_null() {
        p["metadata"]["annotations"] = annotations.clone();
    }
    if *name == "inactive" {
        p["status"] = json!({"phase": "Succeeded"});
    }
    p
}

/// Label sets of the generated pods: one per SidecarSet feature, and combinations.
fn label_sets() -> Vec<(&'static str, Value)> {
    vec![
        ("none", json!({})),
        ("web", json!({"app": "web"})),
        ("before", json!({"f-before": "y"})),
        ("after", json!({"f-after": "y"})),
        ("init", json!({"f-init": "y"})),
        ("native", json!({"f-native": "y"})),
        ("native-hot", json!({"f-native-hot": "y"})),
        ("hot", json!({"f-hot": "y"})),
        ("vol", json!({"f-vol": "y"})),
        ("sec", json!({"f-sec": "y"})),
        ("share", json!({"f-share": "y"})),
        ("sharedev", json!({"f-sharedev": "y"})),
        (
            "transfer",
            json!({"f-transfer": "y", "src-container": "main"}),
        ),
        ("meta", json!({"f-meta": "y"})),
        ("res-sum", json!({"f-res": "sum"})),
        ("res-max", json!({"f-res": "max"})),
        ("res-native", json!({"f-res": "native"})),
        ("exists", json!({"f-exists": "", "tier": "web"})),
        ("exists-db", json!({"f-exists": "1", "tier": "db"})),
        ("replace", json!({"f-replace": "y"})),
        ("rev-name", json!({"f-rev": "name"})),
        ("rev-ann", json!({"f-rev": "ann"})),
        ("rev-cv", json!({"f-rev": "cv"})),
        ("rev-partial", json!({"f-rev": "partial"})),
        (
            "rev-partial-canary",
            json!({"f-rev": "partial", "canary": "true"}),
        ),
        ("rev-paused", json!({"f-rev": "paused"})),
        ("nsin", json!({"f-nsin": "y"})),
        (
            "web+before+after+init+hot",
            json!({"app": "web", "f-before": "y", "f-after": "y", "f-init": "y", "f-hot": "y"}),
        ),
        (
            "web+vol+sec+share+transfer",
            json!({"app": "web", "f-vol": "y", "f-sec": "y", "f-share": "y", "f-transfer": "y", "src-container": "app-1"}),
        ),
        (
            "native+native-hot+init+res-native",
            json!({"f-native": "y", "f-native-hot": "y", "f-init": "y", "f-res": "native"}),
        ),
        (
            "web+meta+replace+rev-cv+sharedev+nsin",
            json!({"app": "web", "f-meta": "y", "f-replace": "y", "f-rev": "cv", "f-sharedev": "y", "f-nsin": "y"}),
        ),
        (
            "all",
            json!({"app": "web", "f-before": "y", "f-after": "y", "f-init": "y", "f-native": "y",
                   "f-native-hot": "y", "f-hot": "y", "f-vol": "y", "f-sec": "y", "f-share": "y",
                   "f-sharedev": "y", "f-transfer": "y", "f-meta": "y", "f-res": "sum", "f-exists": "y",
                   "tier": "web", "f-rev": "name", "f-nsin": "y", "src-container": "main"}),
        ),
    ]
}

/// Adds a CREATE of `object` in `namespace`, sent as the API server sends it: the pod as Go's
/// typed `encoding/json` writes it (`creationTimestamp: null`, `resources: {}`, `status: {}`),
/// which is also what OpenKruise computes its JSON patch against.
fn push(b: &mut Builder, label: &str, namespace: &str, mut object: Value) {
    go_json::normalize(&mut object, GoType::Pod);
    b.create(label, object);
    if let Some(c) = b.cases.last_mut() {
        c.namespace = Some(namespace.to_owned());
    }
}

/// Hand-written pods, per feature.
fn hand_written(b: &mut Builder) {
    let main = main_container();
    let with = |labels: Value, annotations: Value, spec: Value| {
        let mut p = pod(NAMESPACE, labels, spec);
        if !annotations.is_null() {
            p["metadata"]["annotations"] = annotations;
        }
        p
    };
    let single = json!({"containers": [main.clone()]});
    // patchPodMetadata: existing annotations of every kind.
    let meta = json!({"f-meta": "y"});
    for (label, anns) in [
        ("absent", json!(null)),
        ("empty-map", json!({})),
        ("retain-kept", json!({"pc/retain": "pod"})),
        ("retain-empty-value", json!({"pc/retain": ""})),
        ("over-replaced", json!({"pc/over": "pod"})),
        ("merge-empty", json!({"pc/merge": ""})),
        (
            "merge-object",
            json!({"pc/merge": "{\"b\":{\"d\":3,\"c\":\"y\"},\"z\":true}"}),
        ),
        (
            "merge-spaced",
            json!({"pc/merge": " { \"z\" : [ 1 , 2 ] , \"a\" : 2 } "}),
        ),
        ("merge-nested-null", json!({"pc/merge": "{\"b\":null}"})),
        ("merge-array", json!({"pc/merge": "[1,2]"})),
        ("merge-string", json!({"pc/merge": "\"s\""})),
        ("merge-number", json!({"pc/merge": "12"})),
        ("merge-null", json!({"pc/merge": "null"})),
        ("merge-invalid", json!({"pc/merge": "{not json"})),
        (
            "merge-big-numbers",
            json!({"pc/merge": "{\"x\":1e3,\"y\":12345678901234567890,\"w\":0.1}"}),
        ),
        (
            "merge-unicode",
            json!({"pc/merge": "{\"k\":\"\\u00e9\\u2028<>\",\"é\":\"ü\"}"}),
        ),
        (
            "merge-duplicate-keys",
            json!({"pc/merge": "{\"a\":1,\"a\":2}"}),
        ),
        (
            "all-set",
            json!({"pc/retain": "p", "pc/retain2": "p2", "pc/over": "p", "pc/merge": "{}"}),
        ),
    ] {
        push(
            b,
            &format!("meta/{label}"),
            NAMESPACE,
            with(meta.clone(), anns, single.clone()),
        );
    }
    // Hash annotations in the current, older and malformed formats.
    let before = json!({"f-before": "y"});
    for (label, hash, without) in [
        (
            "older-format",
            Some("{\"pc-before\":\"h1\",\"x\":\"h2\"}"),
            None,
        ),
        (
            "older-format-both",
            Some("{\"pc-before\":\"h1\"}"),
            Some("{\"pc-before\":\"w1\"}"),
        ),
        (
            "current-format",
            Some(
                "{\"x\":{\"updateTimestamp\":\"2024-01-02T03:04:05Z\",\"hash\":\"hx\",\"sidecarSetName\":\"x\",\"sidecarList\":[\"c\"]}}",
            ),
            None,
        ),
        (
            "current-nonutc-time",
            Some("{\"x\":{\"updateTimestamp\":\"2024-01-02T03:04:05.999-07:00\",\"hash\":\"hx\"}}"),
            None,
        ),
        (
            "current-bad-time",
            Some("{\"x\":{\"updateTimestamp\":\"yesterday\",\"hash\":\"hx\"}}"),
            None,
        ),
        (
            "current-empty-time",
            Some("{\"x\":{\"updateTimestamp\":\"\",\"hash\":\"hx\"}}"),
            None,
        ),
        (
            "current-wrong-list",
            Some("{\"x\":{\"sidecarList\":\"c\"}}"),
            None,
        ),
        (
            "mixed-formats",
            Some("{\"x\":{\"hash\":\"hx\"},\"y\":\"hy\"}"),
            None,
        ),
        ("number-value", Some("{\"x\":5}"), None),
        ("empty-object", Some("{}"), Some("{}")),
        ("empty-string", Some(""), Some("")),
        ("null", Some("null"), None),
        ("null-without-image", None, Some("null")),
        ("array", Some("[]"), None),
        ("string", Some("\"x\""), None),
        ("not-json", Some("{"), None),
        ("not-json-without-image", None, Some("nope")),
        ("trailing", Some("{} x"), None),
    ] {
        let mut anns = serde_json::Map::new();
        if let Some(h) = hash {
            anns.insert("kruise.io/sidecarset-hash".into(), json!(h));
        }
        if let Some(w) = without {
            anns.insert("kruise.io/sidecarset-hash-without-image".into(), json!(w));
        }
        push(
            b,
            &format!("hash/{label}"),
            NAMESPACE,
            with(before.clone(), Value::Object(anns.clone()), single.clone()),
        );
        // The same annotations on a pod no SidecarSet selects: left alone.
        push(
            b,
            &format!("hash/{label}/unmatched"),
            NAMESPACE,
            with(json!({"app": "other"}), Value::Object(anns), single.clone()),
        );
    }
    // The injected-list annotation.
    for (label, list) in [
        ("empty", ""),
        ("others", "z-set,a-set"),
        ("self", "pc-before"),
        ("commas", ",pc-before,,x,"),
    ] {
        push(
            b,
            &format!("injected-list/{label}"),
            NAMESPACE,
            with(
                before.clone(),
                json!({"kruise.io/sidecarset-injected-list": list}),
                single.clone(),
            ),
        );
    }
    // Hot upgrade: the working-container annotation.
    for (label, info) in [
        ("absent", None),
        ("other", Some("{\"other\":\"other-2\"}")),
        ("self", Some("{\"hot-mesh\":\"hot-mesh-2\"}")),
        ("malformed", Some("x")),
        ("partly-wrong", Some("{\"a\":\"b\",\"c\":1}")),
        ("empty", Some("")),
        ("null", Some("null")),
    ] {
        let anns = info
            .map(|i| json!({"kruise.io/sidecarset-working-hotupgrade-container": i}))
            .unwrap_or(Value::Null);
        for (set, labels) in [
            ("hot", json!({"f-hot": "y"})),
            ("native-hot", json!({"f-native-hot": "y"})),
        ] {
            push(
                b,
                &format!("hot-upgrade/{set}/{label}"),
                NAMESPACE,
                with(labels, anns.clone(), single.clone()),
            );
        }
    }
    // Pods already holding a hot upgrade container's name.
    push(
        b,
        "hot-upgrade/hot/pod-has-hot-mesh-1",
        NAMESPACE,
        with(
            json!({"f-hot": "y"}),
            Value::Null,
            json!({"containers": [main.clone(), {"name": "hot-mesh-1", "image": "pod:1"}]}),
        ),
    );
    // Resources policies.
    for (label, containers) in [
        ("no-match", json!([{"name": "other", "image": "x"}])),
        ("no-resources", json!([{"name": "main", "image": "x"}])),
        (
            "requests-only",
            json!([{"name": "main", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]),
        ),
        (
            "limits-only",
            json!([{"name": "main", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
        ),
        (
            "mixed-unlimited",
            json!([
            {"name": "main", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "app-x", "image": "x", "resources": {"requests": {"cpu": "1"}}}]),
        ),
        (
            "odd-quantities",
            json!([
            {"name": "main", "image": "x", "resources": {"limits": {"cpu": "1001m", "memory": "1000000001"}, "requests": {"cpu": "3m", "memory": "1.5Gi"}}},
            {"name": "app-y", "image": "x", "resources": {"limits": {"cpu": "0.333", "memory": "7Ki"}, "requests": {"cpu": "0", "memory": "0"}}}]),
        ),
        (
            "sidecar-name-excluded",
            json!([
            {"name": "main", "image": "x", "resources": {"limits": {"cpu": "2"}}},
            {"name": "res-sum", "image": "x", "resources": {"limits": {"cpu": "100"}}},
            {"name": "app-s", "image": "x", "resources": {"limits": {"cpu": "1"}}}]),
        ),
        (
            "huge",
            json!([{"name": "main", "image": "x", "resources": {"limits": {"cpu": "64", "memory": "512Gi"}, "requests": {"cpu": "32", "memory": "256Gi"}}}]),
        ),
    ] {
        for mode in ["sum", "max", "native"] {
            push(
                b,
                &format!("resources/{mode}/{label}"),
                NAMESPACE,
                with(
                    json!({"f-res": mode}),
                    Value::Null,
                    json!({"containers": containers}),
                ),
            );
        }
    }
    // transferEnv: where the source container name comes from.
    for (label, labels, anns) in [
        (
            "label-app-1",
            json!({"f-transfer": "y", "src-container": "app-1"}),
            json!({"src-container": "main"}),
        ),
        ("no-label", json!({"f-transfer": "y"}), json!(null)),
        (
            "label-unknown",
            json!({"f-transfer": "y", "src-container": "nope"}),
            json!({"src-container": ""}),
        ),
    ] {
        let containers = json!([
            {"name": "main", "image": "x", "env": [{"name": "TZ", "value": "UTC"}, {"name": "A", "value": "ma"},
                {"name": "B", "value": "mb"}, {"name": "C", "value": "mc"}, {"name": "D", "value": "md"}]},
            {"name": "app-1", "image": "y", "env": [{"name": "C", "value": "ac"}, {"name": "D", "value": "ad"},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
        ]);
        push(
            b,
            &format!("transfer/{label}"),
            NAMESPACE,
            with(labels, anns, json!({"containers": containers})),
        );
    }
    // Namespaces: pods without metadata.namespace take the request's.
    for ns in POD_NAMESPACES {
        let mut p = pod(ns, json!({"app": "web", "f-nsin": "y"}), single.clone());
        p["metadata"].as_object_mut().map(|m| m.remove("namespace"));
        push(b, &format!("namespace/from-request/{ns}"), ns, p);
    }
    // Inactive pods are never injected.
    for (label, status, meta) in [
        ("succeeded", json!({"phase": "Succeeded"}), json!({})),
        ("failed", json!({"phase": "Failed"}), json!({})),
        ("running", json!({"phase": "Running"}), json!({})),
        (
            "deleting",
            json!({}),
            json!({"deletionTimestamp": "2024-01-01T00:00:00Z"}),
        ),
    ] {
        let mut p = with(
            json!({"app": "web", "f-before": "y"}),
            Value::Null,
            single.clone(),
        );
        if status != json!({}) {
            p["status"] = status;
        }
        for (k, v) in meta.as_object().into_iter().flatten() {
            p["metadata"][k] = v.clone();
        }
        push(b, &format!("active/{label}"), NAMESPACE, p);
    }
    // Pods with existing init containers and native sidecars, sidecar names taken.
    push(
        b,
        "init/pod-has-init-a",
        NAMESPACE,
        with(
            json!({"f-init": "y", "f-native": "y"}),
            Value::Null,
            json!({"initContainers": [{"name": "init-a", "image": "pod-init:1"}, {"name": "zz", "image": "z"}],
                   "containers": [main.clone()]}),
        ),
    );
    push(
        b,
        "init/pod-has-native-proxy-container",
        NAMESPACE,
        with(
            json!({"f-native": "y"}),
            Value::Null,
            json!({"containers": [main.clone(), {"name": "native-proxy", "image": "pod:1"}]}),
        ),
    );
    // Volume clashes: the pod's volume of the same name wins, mount paths already taken.
    push(
        b,
        "volumes/pod-has-all",
        NAMESPACE,
        with(
            json!({"f-vol": "y"}),
            Value::Null,
            json!({"containers": [main.clone()], "volumes": [
                {"name": "pc-logs", "emptyDir": {"medium": "Memory"}}, {"name": "pc-cfg", "secret": {"secretName": "s"}},
                {"name": "pc-blk", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]}),
        ),
    );
    let mut p = with(
        json!({"app": "web", "f-vol": "y", "f-sec": "y"}),
        Value::Null,
        json!({"containers": [main.clone()], "imagePullSecrets": [{"name": "shared-cred"}]}),
    );
    p["metadata"]["namespace"] = json!("pc-pinned");
    push(b, "volumes/pinned-and-cluster", "pc-pinned", p);
    // Sharing mounts and devices with mount paths the sidecar already uses.
    push(
        b,
        "share/paths-taken",
        NAMESPACE,
        with(
            json!({"f-share": "y", "f-sharedev": "y"}),
            Value::Null,
            json!({"containers": [
                {"name": "main", "image": "x", "volumeMounts": [{"name": "cache", "mountPath": "/data"}, {"name": "x", "mountPath": "/x", "subPathExpr": "$(SUB)"}],
                 "env": [{"name": "SUB", "value": "main-sub"}],
                 "volumeDevices": [{"name": "d1", "devicePath": "/dev/xvdb"}, {"name": "d2", "devicePath": "/dev/xvdc"}]},
                {"name": "second", "image": "y", "volumeMounts": [{"name": "x", "mountPath": "/x"}, {"name": "y", "mountPath": "/y", "subPathExpr": "$(SUB)-$(SUB)"}],
                 "env": [{"name": "SUB", "value": "second-sub"}],
                 "volumeDevices": [{"name": "d3", "devicePath": "/dev/xvdc"}]}
            ]}),
        ),
    );
    // The readiness gate alongside injection.
    push(
        b,
        "readiness-gate/present",
        NAMESPACE,
        with(
            json!({"f-before": "y"}),
            Value::Null,
            json!({"containers": [main.clone()], "readinessGates": [{"conditionType": "KruisePodReady"}]}),
        ),
    );
    // Revisions: the latest for canaries, the pinned one otherwise.
    for (label, labels) in [
        (
            "partial-canary-false",
            json!({"f-rev": "partial", "canary": "false"}),
        ),
        ("cv-and-web", json!({"f-rev": "cv", "app": "web"})),
    ] {
        push(
            b,
            &format!("revision/{label}"),
            NAMESPACE,
            with(labels, Value::Null, single.clone()),
        );
    }
}

/// The cases: hand-written pods per feature, then every pod shape with every label set (in
/// the namespaces taken in turn), then a few label sets in every namespace.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "pod-sidecarset",
        group: "",
        version: "v1",
        kind: "Pod",
        resource: "pods",
        cases: Vec::new(),
    };
    hand_written(&mut b);
    let shapes = shapes();
    let labels = label_sets();
    let mut turn = 0usize;
    for shape in &shapes {
        for (lname, l) in &labels {
            let ns = POD_NAMESPACES[turn % POD_NAMESPACES.len()];
            turn += 1;
            push(
                &mut b,
                &format!("gen/{}/{lname}@{ns}", shape.0),
                ns,
                shaped(shape, ns, l),
            );
        }
    }
    for shape in shapes
        .iter()
        .filter(|s| ["single", "rich", "secrets"].contains(&s.0))
    {
        for (lname, l) in labels
            .iter()
            .filter(|(n, _)| ["web", "nsin", "web+vol+sec+share+transfer", "all"].contains(n))
        {
            for ns in POD_NAMESPACES {
                push(
                    &mut b,
                    &format!("ns/{}/{lname}@{ns}", shape.0),
                    ns,
                    shaped(shape, ns, l),
                );
            }
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The replay masks every `updateTimestamp` at or after 2025 in the hash annotations (the
    /// time of injection): no case may carry one itself.
    #[test]
    fn cases_carry_no_timestamp_the_replay_masks() {
        for c in cases() {
            let text = c.object.as_ref().map(Value::to_string).unwrap_or_default();
            for year in 2025..2100 {
                assert!(
                    !text.contains(&format!("{year}-")),
                    "{} carries a {year} timestamp",
                    c.id
                );
            }
        }
    }

    /// As the API server: a pod's namespace, when it has one, is the request's.
    #[test]
    fn pods_are_in_the_request_namespace() {
        for c in cases() {
            let ns = c
                .object
                .as_ref()
                .and_then(|o| o.pointer("/metadata/namespace"));
            if let Some(ns) = ns {
                assert_eq!(ns, c.request_namespace(), "{}", c.id);
            }
        }
    }

    #[test]
    fn cluster_names_are_unique() {
        let mut names: Vec<String> = cluster()
            .iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
