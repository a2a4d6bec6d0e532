//! SidecarSet cases (`sidecarset-v1beta1`, `sidecarset-v1alpha1`): every rule of OpenKruise
//! v1.9.0's `pkg/webhook/sidecarset` (mutating: defaults and hash annotations; validating:
//! metadata, selectors, update and injection strategies, containers and their Kubernetes
//! validation, resources policies, transferEnv, volumes, patchPodMetadata and its whitelist,
//! conflicts with other SidecarSets, the container list on update), generated edits of valid
//! objects and updates.
//!
//! The cases run against a cluster holding [`cluster`]: SidecarSets the new ones may conflict
//! with, ControllerRevisions an injection revision may name, and (v1beta1 corpus only) the
//! `kruise-configuration` ConfigMap with a patch-metadata whitelist; the v1alpha1 corpus runs
//! without it, where the gate `SidecarSetPatchPodMetadataDefaultsAllowed` (on with AllAlpha)
//! decides.

use serde_json::{Value, json};

use super::{
    Builder, Case, Edit, bools, int_or_percent, label_maps, pod_spec_edits, selectors, strings,
};

/// Namespace of OpenKruise's ControllerRevisions and configuration (the manager's).
pub const KRUISE_NAMESPACE: &str = "kruise-system";

/// A ControllerRevision (the API server requires `data` to be a JSON object).
fn revision(name: &str, labels: Value, number: i64, data: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": KRUISE_NAMESPACE, "labels": labels},
        "revision": number,
        "data": data
    })
}

fn fixture(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": spec
    })
}

/// The objects the cluster holds while a SidecarSet corpus is recorded (and that its replay
/// looks up): `with_whitelist` adds ConfigMap `kruise-system/kruise-configuration` with a
/// patch-metadata whitelist (keys `corpus/...` for every SidecarSet, `team-a/...` for those
/// labelled `team: a`).
pub fn cluster(with_whitelist: bool) -> Vec<Value> {
    let mut out = Vec::new();
    if with_whitelist {
        let whitelist = json!({"rules": [
            {"allowedAnnotationKeyExprs": ["^corpus/.*$", "^allowed$"]},
            {"selector": {"matchLabels": {"team": "a"}}, "allowedAnnotationKeyExprs": ["^team-a/"]},
        ]});
        out.push(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": KRUISE_NAMESPACE},
            "data": {"SidecarSet_PatchPodMetadata_WhiteList": whitelist.to_string()}
        }));
    }
    let labels = |cv: &str| json!({"kruise.io/sidecarset-name": "ss", "apps.kruise.io/sidecarset-custom-version": cv});
    let good = json!({"spec": {"$patch": "replace",
        "containers": [{"name": "sidecar", "image": "busybox:1.35", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "podInjectPolicy": "BeforeAppContainer", "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
            "shareVolumePolicy": {"type": "disabled"}, "resources": {}}],
        "volumes": null, "initContainers": null, "imagePullSecrets": null, "patchPodMetadata": null}});
    out.extend([
        revision("corpus-rev-ok", labels("v1"), 1, good.clone()),
        revision("corpus-rev-v2-old", labels("v2"), 2, good.clone()),
        revision("corpus-rev-v2-new", labels("v2"), 3, json!({"spec": {"containers": "x"}})),
        revision("corpus-rev-v3", labels("v3"), 4, good),
        revision("corpus-rev-badpatch", json!({}), 7, json!({"spec": {"$patch": "bogus"}})),
        revision("corpus-rev-nested-bad", json!({}), 8, json!({"spec": {"$patch": "replace", "volumes": "x"}})),
        revision("corpus-rev-other-set", json!({"kruise.io/sidecarset-name": "other", "apps.kruise.io/sidecarset-custom-version": "v4"}), 9,
            json!({"spec": {}})),
    ]);
    out.extend([
        fixture("fx-logger", json!({
            "selector": {"matchLabels": {"app": "demo"}},
            "containers": [{"name": "logger", "image": "busybox:1.36"}],
            "volumes": [{"name": "logs", "emptyDir": {}}, {"name": "shared-cfg", "configMap": {"name": "cfg"}}],
            "patchPodMetadata": [
                {"annotations": {"corpus/overwrite": "x"}, "patchPolicy": "Overwrite"},
                {"annotations": {"corpus/merge": "{\"a\":1}"}, "patchPolicy": "MergePatchJson"},
                {"annotations": {"corpus/retain": "x"}, "patchPolicy": "Retain"},
            ]
        })),
        fixture("fx-init", json!({
            "selector": {"matchLabels": {"app": "demo"}},
            "initContainers": [{"name": "fx-init", "image": "busybox:1.36"}]
        })),
        fixture("fx-prod", json!({
            "selector": {"matchLabels": {"app": "demo"}},
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "containers": [{"name": "prod-agent", "image": "busybox:1.36"}],
            "volumes": [{"name": "prod-vol", "emptyDir": {}}]
        })),
        fixture("fx-web", json!({
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]},
            "containers": [{"name": "web-agent", "image": "busybox:1.36"}]
        })),
        fixture("fx-rev", json!({
            "selector": {"matchLabels": {"app": "rev"}},
            "customVersion": "cv1",
            "containers": [{"name": "rev-sidecar", "image": "busybox:1.36"}]
        })),
    ]);
    out
}

fn base(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "SidecarSet",
        "metadata": {"name": "ss"},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "containers": [{"name": "sidecar", "image": "busybox:1.36"}]
        }
    })
}

fn full(version: &str) -> Value {
    let mut v = json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "SidecarSet",
        "metadata": {"name": "ss-full", "labels": {"team": "b"}},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
            "namespaceSelector": {"matchLabels": {"env": "dev"}},
            "initContainers": [{"name": "init-cfg", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}],
            "containers": [
                {"name": "proxy", "image": "envoyproxy/envoy:v1.30.1",
                 "ports": [{"containerPort": 15001, "name": "proxy"}],
                 "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}},
                 "readinessProbe": {"tcpSocket": {"port": 15001}, "periodSeconds": 5},
                 "livenessProbe": {"httpGet": {"port": 15020}},
                 "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}},
                 "volumeMounts": [{"name": "proxy-cfg", "mountPath": "/etc/proxy"}],
                 "podInjectPolicy": "BeforeAppContainer",
                 "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
                 "shareVolumePolicy": {"type": "enabled"},
                 "transferEnv": [{"sourceContainerName": "main", "envName": "MAIN_ENV"},
                                 {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}, "envNames": ["A", "B"]}]},
                {"name": "hot", "image": "busybox:1.36",
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:empty"},
                 "podInjectPolicy": "AfterAppContainer"},
                {"name": "sized", "image": "busybox:1.36",
                 "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "^main$",
                     "resourcesExpr": {"limits": {"cpu": "max(cpu*50%, 100m)", "memory": "memory + 64Mi"},
                                       "requests": {"cpu": "cpu*10%"}}}}
            ],
            "volumes": [{"name": "proxy-cfg", "configMap": {"name": "proxy"}}, {"name": "logs", "emptyDir": {}}],
            "updateStrategy": {"type": "RollingUpdate", "partition": "20%", "maxUnavailable": 2,
                "priorityStrategy": {"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"p": "high"}}}]},
                "scatterStrategy": [{"key": "zone", "value": "a"}]},
            "injectionStrategy": {"paused": false},
            "imagePullSecrets": [{"name": "regcred"}],
            "revisionHistoryLimit": 5,
            "patchPodMetadata": [{"annotations": {"corpus/full": "x"}, "patchPolicy": "Overwrite"}]
        }
    });
    if version == "v1beta1" {
        v["spec"]["customVersion"] = json!("c1");
    } else {
        v["metadata"]["labels"]["apps.kruise.io/sidecarset-custom-version"] = json!("c1");
        v["spec"]
            .as_object_mut()
            .map(|m| m.remove("namespaceSelector"));
        v["spec"]["namespace"] = json!("dev");
    }
    v
}

fn resources_policy(mode: &str, regex: &str, expr: Value) -> Value {
    json!({"targetContainersMode": mode, "targetContainersNameRegex": regex, "resourcesExpr": expr})
}

/// Edits of the SidecarSet-specific fields (pod-spec edits come from [`pod_spec_edits`]).
fn edits(version: &str) -> Vec<Edit> {
    let mut e: Vec<Edit> = Vec::new();
    let mut set =
        |p: &'static str, vals: Vec<Value>| e.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    // Metadata.
    set(
        "/metadata/name",
        vec![
            json!("Bad_Name"),
            json!("bad.name"),
            json!("UPPER-ok"),
            json!("a".repeat(64)),
            json!(""),
            json!(5),
        ],
    );
    set("/metadata/namespace", vec![json!("corpus")]);
    set("/metadata/labels", label_maps());
    set(
        "/metadata/annotations",
        vec![
            json!({"bad key!": "x"}),
            json!({"note": "x"}),
            json!({"kruise.io/sidecarset-hash": "stale"}),
            json!("x"),
        ],
    );
    set(
        "/metadata/finalizers",
        vec![
            json!(["example"]),
            json!(["bad finalizer!"]),
            json!(["orphan", "foregroundDeletion"]),
        ],
    );
    set("/metadata/generateName", vec![json!("ss-"), json!("Bad_")]);
    // Selectors.
    set("/spec/selector", selectors());
    set("/spec/namespaceSelector", selectors());
    if version == "v1alpha1" {
        set(
            "/spec/namespace",
            vec![
                json!("ns1"),
                json!(""),
                json!("Bad_NS"),
                json!("a".repeat(64)),
                json!(3),
            ],
        );
    } else {
        set(
            "/spec/customVersion",
            vec![json!("v2"), json!(""), json!(3)],
        );
    }
    // Update strategy.
    set(
        "/spec/updateStrategy/type",
        strings(&["RollingUpdate", "NotUpdate"]),
    );
    set("/spec/updateStrategy/partition", int_or_percent());
    set("/spec/updateStrategy/maxUnavailable", int_or_percent());
    set("/spec/updateStrategy/selector", selectors());
    set("/spec/updateStrategy/paused", bools());
    set(
        "/spec/updateStrategy",
        vec![
            json!({"partition": 1, "selector": {"matchLabels": {"a": "b"}}}),
            json!({"partition": 0, "selector": {"matchLabels": {"a": "b"}}}),
            json!({"partition": "0%", "selector": {"matchLabels": {"a": "b"}}}),
            json!({"type": "NotUpdate", "partition": 1, "selector": {"matchLabels": {"a": "b"}}}),
            json!({"type": "NotUpdate", "maxUnavailable": "x", "selector": {}}),
            json!({}),
            json!("x"),
        ],
    );
    set(
        "/spec/updateStrategy/priorityStrategy",
        vec![
            json!({"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"weightPriority": [{"weight": -1, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"weightPriority": [{"weight": 10, "matchSelector": {}}]}),
            json!({"weightPriority": [{"weight": 10, "matchSelector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}}]}),
            json!({"orderPriority": [{"orderedKey": "k"}]}),
            json!({"orderPriority": [{"orderedKey": ""}]}),
            json!({"orderPriority": [{"orderedKey": "k"}], "weightPriority": [{"weight": 1, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
        ],
    );
    set(
        "/spec/updateStrategy/scatterStrategy",
        vec![
            json!([{"key": "zone", "value": "a"}]),
            json!([{"key": "", "value": "a"}]),
            json!([{"key": "zone", "value": "a"}, {"key": "zone", "value": "a"}]),
            json!([{"key": "zone", "value": "*"}]),
            json!([]),
        ],
    );
    // Injection strategy and revisions.
    set(
        "/spec/injectionStrategy",
        vec![
            json!({"paused": true}),
            json!({"revision": {}}),
            json!({"revision": {"policy": "Always"}}),
            json!({"revision": {"revisionName": "corpus-rev-ok"}}),
            json!({"revision": {"revisionName": "corpus-rev-ok", "policy": "Partial"}}),
            json!({"revision": {"revisionName": "corpus-rev-ok", "policy": "Bogus"}}),
            json!({"revision": {"revisionName": "missing"}}),
            json!({"revision": {"revisionName": ""}}),
            json!({"revision": {"revisionName": "corpus-rev-badpatch"}}),
            json!({"revision": {"revisionName": "corpus-rev-nested-bad"}}),
            json!({"revision": {"revisionName": "corpus-rev-v2-new"}}),
            json!({"revision": {"customVersion": "v1"}}),
            json!({"revision": {"customVersion": "v2"}}),
            json!({"revision": {"customVersion": "v3", "policy": "Partial"}}),
            json!({"revision": {"customVersion": "v4"}}),
            json!({"revision": {"customVersion": "v9"}}),
            json!({"revision": {"customVersion": ""}}),
            json!({"revision": {"customVersion": "v1", "revisionName": "missing"}}),
            json!({"revision": {"customVersion": "v9", "revisionName": "corpus-rev-ok"}}),
            json!({"revision": "x"}),
        ],
    );
    // Sidecar containers.
    set(
        "/spec/containers",
        vec![
            json!([]),
            Value::Null,
            json!("x"),
            json!([{}]),
            json!([{"name": "sidecar", "image": "busybox"}, {"name": "sidecar", "image": "busybox"}]),
            json!([{"name": "sidecar", "image": "busybox"}, {"name": "second", "image": "nginx:1.25"}]),
        ],
    );
    set(
        "/spec/containers/0/podInjectPolicy",
        strings(&["BeforeAppContainer", "AfterAppContainer"]),
    );
    set(
        "/spec/containers/0/upgradeStrategy",
        vec![
            json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:empty"}),
            json!({"upgradeType": "HotUpgrade"}),
            json!({"upgradeType": "ColdUpgrade"}),
            json!({"upgradeType": "Bogus"}),
            json!({}),
            json!("x"),
        ],
    );
    set(
        "/spec/containers/0/shareVolumePolicy",
        vec![
            json!({"type": "enabled"}),
            json!({"type": "disabled"}),
            json!({"type": "Bogus"}),
            json!({"type": ""}),
            json!({}),
        ],
    );
    set(
        "/spec/containers/0/shareVolumeDevicePolicy",
        vec![
            json!({"type": "enabled"}),
            json!({"type": "Bogus"}),
            json!({}),
        ],
    );
    set(
        "/spec/containers/0/transferEnv",
        vec![
            json!([{"sourceContainerName": "main", "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.annotations['Example.com/Main']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['bad key!']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.annotations['bad key!']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.name"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "spec['x']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": ""}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.labels['app']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "['x']"}}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": {}, "envName": "X"}]),
            json!([{"sourceContainerNameFrom": null, "envName": "X"}]),
            json!([{"envNames": ["A", "B"]}]),
            json!("x"),
        ],
    );
    set(
        "/spec/containers/0/resourcesPolicy",
        vec![
            resources_policy(
                "sum",
                ".*",
                json!({"limits": {"cpu": "cpu*50%", "memory": "memory"}}),
            ),
            resources_policy(
                "max",
                "^main$",
                json!({"requests": {"cpu": "max(cpu, 100m)", "memory": "min(memory, 1Gi)"}}),
            ),
            resources_policy("sum", "", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "(", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "a**", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "x{1001}", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "\\Qa.b\\E", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "a{,5}", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "(?x)a", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "[[:bogus:]]", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "\\8", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "(?P<n>a)(?P<n>b)", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", "\\pL+", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", ".*", json!({})),
            resources_policy("sum", ".*", json!({"limits": {}})),
            resources_policy("bogus", ".*", json!({"limits": {"cpu": "cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "memory"}})),
            resources_policy("sum", ".*", json!({"limits": {"memory": "cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "cpu - 2"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "cpu / 0"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "1m * 1m"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "1 / 1m"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "max(cpu)"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "max(cpu, 1, 2)"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "foo(cpu)"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "cpu +"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "+cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "(cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "1e3m"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "2x * cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "-1m + cpu"}})),
            resources_policy("sum", ".*", json!({"limits": {"cpu": "--cpu"}})),
            resources_policy(
                "sum",
                ".*",
                json!({"limits": {"cpu": "CPU * 1.5 + 0.5Gi - 0.5Gi"}}),
            ),
            resources_policy(
                "sum",
                ".*",
                json!({"requests": {"memory": "memory * 2 - 1Gi"}}),
            ),
            resources_policy("sum", ".*", json!({"requests": {"memory": "1%%"}})),
            resources_policy("sum", ".*", json!({"requests": {"memory": "memory ^ 2"}})),
            json!({}),
            json!("x"),
        ],
    );
    set(
        "/spec/containers/0/resources",
        vec![
            json!({"requests": {"cpu": "0.0001", "memory": "1.5Gi"}, "limits": {"cpu": "1000m"}}),
            json!({"requests": {"cpu": "+100m", "memory": "0100Mi"}}),
            json!({"requests": {"cpu": "1e3"}}),
            json!({"limits": {"cpu": "100u"}}),
        ],
    );
    set(
        "/spec/containers/0/restartPolicy",
        vec![json!("Always"), json!("Never")],
    );
    set(
        "/spec/containers/0/image",
        vec![
            json!(" busybox"),
            json!("busybox:latest"),
            json!("Busybox"),
            json!(
                "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            ),
            json!("busybox:latest@sha256:0123456789abcdef"),
            json!("registry.example.com:5000/team/app"),
            json!("a..b"),
        ],
    );
    // Init containers.
    set(
        "/spec/initContainers",
        vec![
            json!([{"name": "init", "image": "busybox:1.36", "restartPolicy": "Always", "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {"limits": {"cpu": "cpu"}}}}]),
            json!([{"name": "init", "image": "busybox:1.36", "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {"limits": {"cpu": "cpu"}}}}]),
            json!([{"name": "init", "image": "busybox:1.36", "restartPolicy": "Always", "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "(", "resourcesExpr": {}}}]),
            json!([{"name": "init", "image": "busybox:1.36", "podInjectPolicy": "Bogus", "shareVolumePolicy": {"type": "Bogus"}}]),
            json!([{"name": "init", "image": "busybox:1.36", "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]),
            json!([{"name": "init", "image": "busybox:1.36", "transferEnv": [{"sourceContainerNameFrom": {}}]}]),
            json!([{"name": "sidecar", "image": "busybox:1.36"}]),
            json!([{"name": "fx-init", "image": "busybox:1.36"}]),
            json!([]),
        ],
    );
    // Volumes: the base's own and those of the other SidecarSets.
    set(
        "/spec/volumes",
        vec![
            json!([{"name": "logs", "emptyDir": {}}]),
            json!([{"name": "logs", "emptyDir": {"medium": "Memory"}}]),
            json!([{"name": "logs"}]),
            json!([{"name": "shared-cfg", "configMap": {"name": "cfg"}}]),
            json!([{"name": "shared-cfg", "configMap": {"name": "cfg", "defaultMode": 420}}]),
            json!([{"name": "shared-cfg", "configMap": {"name": "other"}}]),
            json!([{"name": "shared-cfg", "configMap": {"name": "cfg", "items": []}}]),
            json!([{"name": "prod-vol", "emptyDir": {}}]),
            json!([{"name": "prod-vol", "hostPath": {"path": "/var/log"}}]),
            json!([{"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]),
            json!([{"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]),
            json!([{"name": "sized", "emptyDir": {"sizeLimit": "0.5Gi"}}]),
        ],
    );
    set(
        "/spec/imagePullSecrets",
        vec![
            json!([{"name": "regcred"}]),
            json!([{"name": ""}]),
            json!("x"),
        ],
    );
    set(
        "/spec/revisionHistoryLimit",
        vec![json!(-1), json!(0), json!(3), json!("x")],
    );
    // Pod metadata patches.
    set(
        "/spec/patchPodMetadata",
        vec![
            json!([]),
            json!([{}]),
            json!([{"annotations": {}}]),
            json!([{"annotations": {"corpus/a": "x"}}]),
            json!([{"annotations": {"corpus/a": "x"}, "patchPolicy": "Overwrite"}]),
            json!([{"annotations": {"corpus/a": "{\"x\":1}"}, "patchPolicy": "MergePatchJson"}]),
            json!([{"annotations": {"corpus/a": "x"}, "patchPolicy": "Bogus"}]),
            json!([{"annotations": {"allowed": "x"}}]),
            json!([{"annotations": {"not-allowed": "x"}}]),
            json!([{"annotations": {"team-a/x": "x"}}]),
            json!([{"annotations": {"corpus/bad key!": "x"}}]),
            json!([{"annotations": {"corpus/a": "x"}}, {"annotations": {"corpus/a": "y"}}]),
            json!([{"annotations": {"corpus/a": "x", "corpus/b": "y"}}, {"annotations": {"corpus/b": "z"}, "patchPolicy": "Overwrite"}]),
            json!([{"annotations": {"corpus/overwrite": "y"}, "patchPolicy": "Retain"}]),
            json!([{"annotations": {"corpus/overwrite": "y"}, "patchPolicy": "MergePatchJson"}]),
            json!([{"annotations": {"corpus/overwrite": "y"}, "patchPolicy": "Overwrite"}]),
            json!([{"annotations": {"corpus/merge": "{}"}, "patchPolicy": "MergePatchJson"}]),
            json!([{"annotations": {"corpus/merge": "{}"}, "patchPolicy": "Overwrite"}]),
            json!([{"annotations": {"corpus/retain": "y"}, "patchPolicy": "Overwrite"}]),
            json!("x"),
        ],
    );
    set("/metadata/labels/team", vec![json!("a")]);
    set("/spec", vec![json!({}), json!("x")]);
    e.push(Edit::Remove("/spec/selector"));
    e.push(Edit::Remove("/spec/containers"));
    e.push(Edit::Remove("/spec/updateStrategy"));
    // Kubernetes' container and volume validation, through the fake pod.
    for edit in pod_spec_edits("/spec") {
        let p = match &edit {
            Edit::Set(p, _) | Edit::Remove(p) => *p,
        };
        if p.starts_with("/spec/containers")
            || p.starts_with("/spec/initContainers")
            || p.starts_with("/spec/volumes")
        {
            e.push(edit);
        }
    }
    e
}

/// Cases where the other SidecarSets of [`cluster`] matter: container, init container, volume
/// and patched-annotation clashes on overlapping pods, and the same objects on pods that cannot
/// overlap.
fn conflict_cases(b: &mut Builder, version: &str) {
    let with = |f: &dyn Fn(&mut Value)| {
        let mut o = base(version);
        f(&mut o);
        o
    };
    let name = |n: &'static str| move |o: &mut Value| o["spec"]["containers"][0]["name"] = json!(n);
    b.create("conflict/container-logger", with(&name("logger")));
    b.create("conflict/container-prod-agent", with(&name("prod-agent")));
    b.create("conflict/container-web-agent", with(&name("web-agent")));
    b.create("conflict/container-fx-init", with(&name("fx-init")));
    b.create("conflict/container-rev-sidecar", with(&name("rev-sidecar")));
    b.create(
        "conflict/init-fx-init",
        with(&|o| o["spec"]["initContainers"] = json!([{"name": "fx-init", "image": "busybox"}])),
    );
    b.create(
        "conflict/init-logger",
        with(&|o| o["spec"]["initContainers"] = json!([{"name": "logger", "image": "busybox"}])),
    );
    let selectors = [
        ("other-app", json!({"matchLabels": {"app": "other"}})),
        ("web", json!({"matchLabels": {"app": "web"}})),
        ("rev", json!({"matchLabels": {"app": "rev"}})),
        (
            "app-exists",
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        ),
        (
            "app-not-demo",
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["demo"]}]}),
        ),
        (
            "app-in-demo-web",
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["demo", "web"]}]}),
        ),
        (
            "app-does-not-exist",
            json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
        ),
        ("tier", json!({"matchLabels": {"tier": "x"}})),
        ("app-all", json!({"matchLabels": {"app": "ALL"}})),
    ];
    for (sname, sel) in &selectors {
        for container in ["logger", "web-agent", "rev-sidecar", "prod-agent"] {
            let mut o = base(version);
            o["spec"]["selector"] = sel.clone();
            o["spec"]["containers"][0]["name"] = json!(container);
            b.create(&format!("conflict/selector-{sname}/{container}"), o);
        }
    }
    let namespaces: Vec<(&str, Value)> = if version == "v1beta1" {
        vec![
            (
                "ns-prod",
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            ),
            (
                "ns-dev",
                json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}}),
            ),
            (
                "ns-env-exists",
                json!({"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}}),
            ),
            (
                "ns-name",
                json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "corpus"}}}),
            ),
        ]
    } else {
        vec![
            (
                "ns-prod",
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            ),
            (
                "ns-dev",
                json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}}),
            ),
            ("namespace-corpus", json!({"namespace": "corpus"})),
            (
                "namespace-and-selector",
                json!({"namespace": "corpus", "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            ),
        ]
    };
    for (nname, fields) in &namespaces {
        for container in ["prod-agent", "logger"] {
            let mut o = base(version);
            for (k, v) in fields.as_object().into_iter().flatten() {
                o["spec"][k] = v.clone();
            }
            o["spec"]["containers"][0]["name"] = json!(container);
            b.create(&format!("conflict/{nname}/{container}"), o);
        }
    }
    // The SidecarSet itself (same name) is no conflict.
    let mut o = base(version);
    o["metadata"]["name"] = json!("fx-logger");
    o["spec"]["containers"][0]["name"] = json!("logger");
    b.create("conflict/self-fx-logger", o);
    // Volumes and patches on pods that cannot overlap.
    let mut o = base(version);
    o["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
    o["spec"]["volumes"] = json!([{"name": "logs", "hostPath": {"path": "/x"}}]);
    o["spec"]["patchPodMetadata"] =
        json!([{"annotations": {"corpus/overwrite": "y"}, "patchPolicy": "Overwrite"}]);
    b.create("conflict/disjoint-volume-and-patch", o);
    // A hot-upgrade container whose names would clash.
    let mut o = base(version);
    o["spec"]["containers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:empty"});
    o["spec"]["containers"][0]["name"] = json!("logger");
    b.create("conflict/hot-logger", o);
    // The injection revision of a SidecarSet recorded by the controller (fx-rev, customVersion cv1).
    let mut o = base(version);
    o["metadata"]["name"] = json!("fx-rev");
    o["spec"]["selector"] = json!({"matchLabels": {"app": "rev"}});
    o["spec"]["containers"][0]["name"] = json!("rev-sidecar");
    for cv in ["cv1", "cv2"] {
        let mut r = o.clone();
        r["spec"]["injectionStrategy"] = json!({"revision": {"customVersion": cv}});
        b.create(&format!("revision/fx-rev-{cv}"), r);
    }
}

/// Updates of stored SidecarSets: image changes, new, renamed or removed containers, upgrade
/// type changes, selectors and everything else that may change.
fn update_cases(b: &mut Builder, version: &str) {
    let upd: Vec<Edit> = vec![
        Edit::Set("/spec/containers/0/image", json!("busybox:1.37")),
        Edit::Set("/spec/containers/0/name", json!("renamed")),
        Edit::Set(
            "/spec/containers/1",
            json!({"name": "added", "image": "busybox"}),
        ),
        Edit::Set("/spec/containers", json!([])),
        Edit::Remove("/spec/containers"),
        Edit::Set(
            "/spec/containers/0/upgradeStrategy",
            json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:empty"}),
        ),
        Edit::Set(
            "/spec/containers/0/upgradeStrategy",
            json!({"upgradeType": "ColdUpgrade"}),
        ),
        Edit::Set("/spec/containers/0/upgradeStrategy", json!({})),
        Edit::Set(
            "/spec/containers/0/env",
            json!([{"name": "A", "value": "1"}]),
        ),
        Edit::Set(
            "/spec/containers/0/podInjectPolicy",
            json!("AfterAppContainer"),
        ),
        Edit::Set("/spec/selector", json!({"matchLabels": {"app": "other"}})),
        Edit::Set("/spec/selector", json!({})),
        Edit::Set("/spec/volumes", json!([{"name": "v", "emptyDir": {}}])),
        Edit::Set(
            "/spec/initContainers",
            json!([{"name": "init", "image": "busybox"}]),
        ),
        Edit::Set("/spec/updateStrategy", json!({"type": "NotUpdate"})),
        Edit::Set("/spec/updateStrategy/partition", json!(2)),
        Edit::Set("/spec/updateStrategy/paused", json!(true)),
        Edit::Set("/spec/injectionStrategy", json!({"paused": true})),
        Edit::Set(
            "/spec/patchPodMetadata",
            json!([{"annotations": {"corpus/u": "x"}}]),
        ),
        Edit::Set("/metadata/name", json!("renamed")),
        Edit::Set("/metadata/labels", json!({"team": "a"})),
        Edit::Set(
            "/metadata/annotations",
            json!({"kruise.io/sidecarset-hash": "stale"}),
        ),
        Edit::Set("/spec/containers/0/name", json!("logger")),
    ];
    let mut upd = upd;
    if version == "v1beta1" {
        upd.push(Edit::Set("/spec/customVersion", json!("v9")));
    } else {
        upd.push(Edit::Set("/spec/namespace", json!("corpus")));
    }
    for (bname, base) in [("min", base(version)), ("full", full(version))] {
        for e in &upd {
            let mut o = base.clone();
            e.apply(&mut o);
            b.update(&format!("{bname}/{}", e.label()), base.clone(), o);
        }
    }
    // The full object with its containers reordered and one hot-upgraded.
    let old = full(version);
    let mut new = old.clone();
    if let Some(cs) = new["spec"]["containers"].as_array_mut() {
        cs.reverse();
    }
    b.update("full/reordered", old.clone(), new);
    let mut new = old.clone();
    new["spec"]["containers"][1]["upgradeStrategy"] = json!({"upgradeType": "ColdUpgrade"});
    b.update("full/hot-to-cold", old, new);
}

/// The cases of one SidecarSet corpus (`version` `v1beta1` or `v1alpha1`).
pub fn cases(version: &'static str) -> Vec<Case> {
    let mut b = Builder {
        prefix: if version == "v1beta1" {
            "sidecarset-v1beta1"
        } else {
            "sidecarset-v1alpha1"
        },
        group: "apps.kruise.io",
        version,
        kind: "SidecarSet",
        resource: "sidecarsets",
        cases: Vec::new(),
    };
    b.create("valid/minimal", base(version));
    b.create("valid/full", full(version));
    conflict_cases(&mut b, version);
    let edits = edits(version);
    b.edits(
        &[("min", base(version)), ("full", full(version))],
        &edits,
        80,
        if version == "v1beta1" {
            0x5353_4231
        } else {
            0x5353_4130
        },
    );
    b.names(&base(version));
    update_cases(&mut b, version);
    b.finish()
}
