use k8s_openapi::api::core::v1::ConfigMap;
use kruise_runtime::features::FeatureGates;
use serde_json::{Value, json};

use super::*;
use crate::lookup::FixedCluster;
use crate::support::testing::request;

const VECTORS: &str = include_str!("../../../kruise-engines/src/sidecarset/hash_vectors.tsv");

fn ctx(cluster: FixedCluster, gates: &str) -> HandlerContext {
    HandlerContext {
        gates: FeatureGates::parse(gates).unwrap(),
        lookup: Some(Lookup::fixed_cluster(cluster)),
    }
}

fn mutated(resp: &Response, object: &Value) -> Value {
    let mut obj = object.clone();
    if let Some(p) = resp.patch.as_deref() {
        let patch: json_patch::Patch = serde_json::from_slice(p).unwrap();
        json_patch::patch(&mut obj, &patch).unwrap();
    }
    obj
}

fn version_of(obj: &Value) -> &'static str {
    if obj["apiVersion"] == "apps.kruise.io/v1alpha1" {
        "v1alpha1"
    } else {
        "v1beta1"
    }
}

/// The annotations OpenKruise's mutating webhook writes (`hash_vectors.tsv`, columns 4 and 5:
/// `SetDefaultsSidecarSet[V1beta1]` then `SetHashSidecarSet[V1beta1]` in Go) are what this
/// webhook writes.
#[tokio::test]
async fn mutation_writes_openkruise_hash_annotations() {
    let c = ctx(FixedCluster::default(), "");
    let mut n = 0;
    for line in VECTORS.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let obj: Value = serde_json::from_str(cols[0]).unwrap();
        let req = request(
            "CREATE",
            "sidecarsets",
            version_of(&obj),
            Some(obj.clone()),
            None,
        );
        let resp = mutate(&req, &c).await;
        assert!(resp.allowed, "{}: {}", cols[0], resp.result.message);
        let out = mutated(&resp, &obj);
        let a = &out["metadata"]["annotations"];
        assert_eq!(
            a["kruise.io/sidecarset-hash"], cols[3],
            "hash of {}",
            cols[0]
        );
        assert_eq!(
            a["kruise.io/sidecarset-hash-without-image"], cols[4],
            "hash without image of {}",
            cols[0]
        );
        // A second pass finds nothing to do and answers without a patch (but for a list sent
        // empty, which Go hashes as `[]` and then leaves out, so the stored object hashes anew).
        let sent_empty = ["containers", "initContainers"]
            .iter()
            .any(|k| obj["spec"][k].as_array().is_some_and(Vec::is_empty));
        if sent_empty {
            n += 1;
            continue;
        }
        let req = request(
            "UPDATE",
            "sidecarsets",
            version_of(&obj),
            Some(out.clone()),
            Some(out.clone()),
        );
        let again = mutate(&req, &c).await;
        assert!(again.allowed);
        assert!(again.patch.is_none(), "second pass patched {}", cols[0]);
        n += 1;
    }
    assert!(n >= 50);
}

fn valid(version: &str, name: &str, container: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "containers": [{"name": container, "image": "busybox:1.36"}],
            "volumes": [{"name": "shared", "emptyDir": {}}],
        }
    })
}

/// Mutates then validates, as the API server does; the validating answer.
async fn admit(c: &HandlerContext, version: &str, obj: Value) -> Response {
    let req = request("CREATE", "sidecarsets", version, Some(obj.clone()), None);
    let m = mutate(&req, c).await;
    if !m.allowed {
        return m;
    }
    let out = mutated(&m, &obj);
    let req = request("CREATE", "sidecarsets", version, Some(out), None);
    validate(&req, c).await
}

fn stored(obj: Value) -> b1::SidecarSet {
    let mut s: b1::SidecarSet = serde_json::from_value(obj).unwrap();
    kruise_api::defaults::sidecarset::set_defaults_sidecarset_v1beta1(&mut s);
    s
}

#[tokio::test]
async fn valid_sidecarsets_are_admitted_in_both_versions() {
    let c = ctx(FixedCluster::default(), "");
    for v in ["v1alpha1", "v1beta1"] {
        let r = admit(&c, v, valid(v, "s", "sidecar")).await;
        assert!(r.allowed, "{v}: {}", r.result.message);
    }
}

#[tokio::test]
async fn rules_refuse_with_openkruise_paths() {
    let c = ctx(FixedCluster::default(), "");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("/spec/selector", json!({}), "spec.selector"),
        ("/spec/containers", json!([]), "spec: Required value"),
        ("/metadata/name", json!("bad.name"), "metadata.name"),
        (
            "/spec/containers/0/podInjectPolicy",
            json!("Bogus"),
            "spec.container.podInjectPolicy",
        ),
        (
            "/spec/updateStrategy",
            json!({"partition": 1, "selector": {"matchLabels": {"a": "b"}}}),
            "updateStrategy: Invalid value",
        ),
        (
            "/spec/updateStrategy",
            json!({"maxUnavailable": "x"}),
            "spec.updateStrategy.maxUnavailable",
        ),
        (
            "/spec/injectionStrategy",
            json!({"revision": {"revisionName": "missing"}}),
            "revision: Invalid value",
        ),
        (
            "/spec/containers/0/resourcesPolicy",
            json!({"targetContainersMode": "sum", "targetContainersNameRegex": "(", "resourcesExpr": {"limits": {"cpu": "cpu"}}}),
            "spec[0].resourcesPolicy.targetContainersNameRegex",
        ),
        (
            "/spec/containers/0/resourcesPolicy",
            json!({"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {"limits": {"cpu": "memory"}}}),
            "spec[0].resourcesPolicy.resourcesExpr.limits.cpu",
        ),
        (
            "/spec/containers/0/transferEnv",
            json!([{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.name"}}, "envName": "X"}]),
            "spec[0].transferEnv.fieldRef.fieldPath",
        ),
        (
            "/spec/containers/0/name",
            json!("Bad_Name"),
            "spec.containers[0].name",
        ),
        (
            "/spec/initContainers",
            json!([{"name": "init", "image": "busybox", "restartPolicy": "Always"}]),
            "spec.updateStrategy: Required value",
        ),
    ];
    for (pointer, value, want) in cases {
        let mut obj = valid("v1beta1", "s", "sidecar");
        *obj.pointer_mut(pointer.rsplit_once('/').unwrap().0)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .entry(pointer.rsplit_once('/').unwrap().1)
            .or_insert(Value::Null) = value;
        let edit = format!("{pointer}={}", obj.pointer(pointer).unwrap());
        let r = admit(&c, "v1beta1", obj.clone()).await;
        assert!(!r.allowed, "{edit} was admitted");
        assert!(
            r.result.message.contains(want),
            "{edit}: {} lacks {want}",
            r.result.message
        );
        assert!(r.result.code < 500);
    }
}

#[tokio::test]
async fn conflicts_with_other_sidecarsets() {
    let other = stored(json!({
        "metadata": {"name": "other"},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "containers": [{"name": "taken", "image": "busybox"}],
            "volumes": [{"name": "shared", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "x"}}],
            "patchPodMetadata": [{"annotations": {"k": "v"}, "patchPolicy": "Overwrite"}],
        }
    }));
    let c = ctx(
        FixedCluster {
            sidecar_sets: vec![other],
            ..FixedCluster::default()
        },
        "AllAlpha=true",
    );
    // Same container name on overlapping pods.
    let r = admit(&c, "v1beta1", valid("v1beta1", "s", "taken")).await;
    assert!(
        r.result
            .message
            .contains("container taken already exist in other"),
        "{}",
        r.result.message
    );
    // Same volume, same definition: fine; a different one: refused.
    let r = admit(&c, "v1beta1", valid("v1beta1", "s", "free")).await;
    assert!(r.allowed, "{}", r.result.message);
    let mut obj = valid("v1beta1", "s", "free");
    obj["spec"]["volumes"] = json!([{"name": "cfg", "configMap": {"name": "y"}}]);
    let r = admit(&c, "v1beta1", obj).await;
    assert!(
        r.result.message.contains("spec.volumes"),
        "{}",
        r.result.message
    );
    // Pods that cannot overlap: no conflict.
    let mut obj = valid("v1beta1", "s", "taken");
    obj["spec"]["selector"] = json!({"matchLabels": {"app": "else"}});
    assert!(admit(&c, "v1beta1", obj).await.allowed);
    // The SidecarSet itself is not a conflict.
    assert!(
        admit(&c, "v1beta1", valid("v1beta1", "other", "taken"))
            .await
            .allowed
    );
    // Patched annotations: a clash only when one side overwrites.
    let mut obj = valid("v1beta1", "s", "free");
    obj["spec"]["patchPodMetadata"] =
        json!([{"annotations": {"k": "v"}, "patchPolicy": "MergePatchJson"}]);
    let r = admit(&c, "v1beta1", obj).await;
    assert!(
        r.result
            .message
            .contains("annotation k is in conflict with sidecarset other"),
        "{}",
        r.result.message
    );
}

#[tokio::test]
async fn patch_metadata_whitelist() {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"},
        "data": {"SidecarSet_PatchPodMetadata_WhiteList": serde_json::to_string(&json!({
            "rules": [
                {"allowedAnnotationKeyExprs": ["^allowed/.*$"]},
                {"selector": {"matchLabels": {"team": "a"}}, "allowedAnnotationKeyExprs": ["^team-a$"]},
            ]
        })).unwrap()}
    }))
    .unwrap();
    let with = |cm: Option<ConfigMap>, gates: &str| {
        ctx(
            FixedCluster {
                config_maps: cm.into_iter().collect(),
                ..FixedCluster::default()
            },
            gates,
        )
    };
    let patch = |key: &str, labels: Value| {
        let mut obj = valid("v1beta1", "s", "sidecar");
        obj["metadata"]["labels"] = labels;
        obj["spec"]["patchPodMetadata"] = json!([{"annotations": {key: "v"}}]);
        obj
    };
    let c = with(Some(cm.clone()), "");
    assert!(
        admit(&c, "v1beta1", patch("allowed/x", json!({})))
            .await
            .allowed
    );
    let r = admit(&c, "v1beta1", patch("team-a", json!({}))).await;
    assert!(
        r.result
            .message
            .contains("spec.patchPodMetadata: Required value"),
        "{}",
        r.result.message
    );
    assert!(
        admit(&c, "v1beta1", patch("team-a", json!({"team": "a"})))
            .await
            .allowed
    );
    // No whitelist: the gate decides.
    assert!(
        !admit(&with(None, ""), "v1beta1", patch("any", json!({})))
            .await
            .allowed
    );
    assert!(
        admit(
            &with(None, "SidecarSetPatchPodMetadataDefaultsAllowed=true"),
            "v1beta1",
            patch("any", json!({}))
        )
        .await
        .allowed
    );
}

#[tokio::test]
async fn injection_revisions_are_looked_up() {
    let rev = |name: &str, labels: Value, revision: i64, data: Value| {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "kruise-system", "labels": labels},
            "revision": revision, "data": data
        }))
        .unwrap()
    };
    let c = ctx(
        FixedCluster {
            controller_revisions: vec![
                rev(
                    "s-1",
                    json!({"kruise.io/sidecarset-name": "s", "apps.kruise.io/sidecarset-custom-version": "v1"}),
                    1,
                    json!({"spec": {"$patch": "replace", "containers": [{"name": "sidecar", "image": "busybox:1.35"}]}}),
                ),
                rev(
                    "s-bad",
                    json!({"kruise.io/sidecarset-name": "s", "apps.kruise.io/sidecarset-custom-version": "v2"}),
                    2,
                    json!({"spec": {"containers": "x"}}),
                ),
                rev("s-str", json!({}), 3, json!("x")),
            ],
            ..FixedCluster::default()
        },
        "",
    );
    let with_revision = |r: Value| {
        let mut obj = valid("v1beta1", "s", "sidecar");
        obj["spec"]["injectionStrategy"] = json!({"revision": r});
        obj
    };
    for (r, ok) in [
        (json!({"revisionName": "s-1"}), true),
        (json!({"customVersion": "v1"}), true),
        (json!({"revisionName": "s-bad"}), false),
        (json!({"customVersion": "v2"}), false),
        (json!({"revisionName": "s-str"}), false),
        (json!({"customVersion": "v3"}), false),
        (json!({"revisionName": "s-1", "policy": "Bogus"}), false),
        (json!({"policy": "Partial"}), false),
    ] {
        let resp = admit(&c, "v1beta1", with_revision(r.clone())).await;
        assert_eq!(resp.allowed, ok, "{r}: {}", resp.result.message);
    }
}

#[tokio::test]
async fn updates_keep_containers_and_upgrade_types() {
    let c = ctx(FixedCluster::default(), "");
    let old = valid("v1beta1", "s", "sidecar");
    let req = request("CREATE", "sidecarsets", "v1beta1", Some(old.clone()), None);
    let stored_old = mutated(&mutate(&req, &c).await, &old);
    for (edit, ok) in [
        (
            json!({"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}),
            true,
        ),
        (
            json!({"spec": {"containers": [{"name": "renamed", "image": "busybox"}]}}),
            false,
        ),
        (
            json!({"spec": {"containers": [{"name": "sidecar", "image": "busybox", "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "e"}}]}}),
            false,
        ),
    ] {
        let mut new = stored_old.clone();
        json_patch::merge(&mut new, &edit);
        let req = request(
            "UPDATE",
            "sidecarsets",
            "v1beta1",
            Some(new.clone()),
            Some(stored_old.clone()),
        );
        let m = mutate(&req, &c).await;
        let new = mutated(&m, &new);
        let req = request(
            "UPDATE",
            "sidecarsets",
            "v1beta1",
            Some(new),
            Some(stored_old.clone()),
        );
        let r = validate(&req, &c).await;
        assert_eq!(r.allowed, ok, "{edit}: {}", r.result.message);
    }
}

#[test]
fn alpha_objects_convert_as_openkruise_converts_them() {
    let a: a1::SidecarSet = serde_json::from_value(json!({
        "metadata": {"name": "s", "labels": {"apps.kruise.io/sidecarset-custom-version": "v7", "x": "y"}},
        "spec": {"namespace": "ns", "namespaceSelector": {"matchLabels": {"a": "b"}}, "selector": {"matchLabels": {"app": "demo"}}}
    }))
    .unwrap();
    let b = convert_to_v1beta1(&a);
    assert_eq!(b.spec.custom_version.as_deref(), Some("v7"));
    assert_eq!(
        serde_json::to_value(&b.spec.namespace_selector).unwrap(),
        json!({"matchLabels": {"kubernetes.io/metadata.name": "ns"}})
    );
    assert_eq!(
        serde_json::to_value(&b.metadata).unwrap(),
        json!({"name": "s", "labels": {"x": "y"}})
    );
}
