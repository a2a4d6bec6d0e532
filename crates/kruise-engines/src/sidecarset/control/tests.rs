use super::*;
#[allow(unused_imports)]
use kruise_api::pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodSpec, CachedPodStatus,
};
use serde_json::json;

/// The full pod (as an admission request carries it) of a cached one: what the injection-time
/// helpers take.
fn full(p: &CachedPod) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::to_value(p).unwrap()).unwrap()
}

/// A full pod (as an admission request carries it), for the injection-time helpers that read
/// fields the cached type does not hold (volume devices).
fn full_pod(v: serde_json::Value) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(v).unwrap()
}

fn pod(v: serde_json::Value) -> CachedPod {
    serde_json::from_value(v).unwrap()
}

#[test]
fn upgrade_specs_read_both_formats_and_write_go_bytes() {
    let new = parse_upgrade_specs(
        Some(r#"{"test-sidecarset":{"hash":"aaa"}}"#),
        keys::SIDECARSET_HASH,
    )
    .unwrap()
    .unwrap();
    assert_eq!(new["test-sidecarset"].hash, "aaa");
    let old = parse_upgrade_specs(Some(r#"{"test-sidecarset": "aaa"}"#), keys::SIDECARSET_HASH)
        .unwrap()
        .unwrap();
    assert_eq!(old["test-sidecarset"].hash, "aaa");
    assert_eq!(old["test-sidecarset"].sidecar_set_name, "test-sidecarset");
    assert!(parse_upgrade_specs(Some("failed-sidecarset-hash"), keys::SIDECARSET_HASH).is_err());

    let mut m = BTreeMap::new();
    m.insert(
        "b".to_string(),
        SidecarSetUpgradeSpec {
            update_timestamp: Some("2026-11-25T19:30:00Z".into()),
            hash: "h<1>".into(),
            sidecar_set_name: "b".into(),
            sidecar_list: Some(vec!["x".into(), "y".into()]),
            controller_revision: "b-123".into(),
        },
    );
    m.insert(
        "a".to_string(),
        SidecarSetUpgradeSpec {
            hash: "h".into(),
            sidecar_set_name: "a".into(),
            ..Default::default()
        },
    );
    // Keys sorted, Go's field order, `<`/`>` escaped, controllerRevision omitted when empty,
    // nil slice and zero time written as null.
    assert_eq!(
        encode_upgrade_specs(&m),
        r#"{"a":{"updateTimestamp":null,"hash":"h","sidecarSetName":"a","sidecarList":null},"b":{"updateTimestamp":"2026-11-25T19:30:00Z","hash":"h\u003c1\u003e","sidecarSetName":"b","sidecarList":["x","y"],"controllerRevision":"b-123"}}"#
    );
}

#[test]
fn image_references_as_docker_distribution_parses_them() {
    let r = parse_image(
        "docker.io/busybox@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d",
    )
    .unwrap();
    assert_eq!(r.repo, "docker.io/busybox");
    assert_eq!(r.tag, "");
    assert!(r.digest.starts_with("sha256:a928"));
    let r = parse_image("localhost:5000/a/b:1.2").unwrap();
    assert_eq!(
        (r.repo.as_str(), r.tag.as_str()),
        ("localhost:5000/a/b", "1.2")
    );
    assert_eq!(parse_image("busybox").unwrap().tag, "");
    assert!(parse_image("BusyBox:1").is_none());
    assert!(parse_image("busybox:").is_none());
    assert!(is_container_image_equal("nginx:1.1", "nginx:1.1"));
    assert!(!is_container_image_equal(
        "nginx:1.1",
        "docker.io/library/nginx:1.1"
    ));
    assert!(!is_container_image_equal("nginx:1.1", "nginx:1.2"));
    assert!(is_image_digest(
        "nginx@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d"
    ));
    assert!(!is_image_digest("nginx:latest"));
}

#[test]
fn transfer_envs_follow_the_source_container_from_labels() {
    let p = pod(json!({
        "metadata": {"name": "p", "labels": {"main": "app"}},
        "spec": {"containers": [
            {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "other", "env": [{"name": "A", "value": "x"}]}
        ]}
    }));
    let sidecar: SidecarContainer = serde_json::from_value(json!({
        "name": "s",
        "transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['main']"}}, "envNames": ["B", "A", "Z"]},
            {"sourceContainerName": "other", "envName": "A"}
        ]
    }))
    .unwrap();
    let got: Vec<(String, String)> = transfer_envs(&sidecar, &full(&p))
        .into_iter()
        .map(|e| (e.name, e.value.unwrap_or_default()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("A".into(), "1".into()),
            ("B".into(), "2".into()),
            ("A".into(), "x".into())
        ]
    );
}

#[test]
fn patch_pod_metadata_policies() {
    let mut p = pod(json!({"metadata": {"annotations": {"keep": "pod", "m": "{\"a\":1}"}}}));
    let patches: Vec<kruise_api::apps::v1beta1::SidecarSetPatchPodMetadata> =
        serde_json::from_value(json!([
            {"annotations": {"keep": "sidecar", "new": "v"}},
            {"patchPolicy": "MergePatchJson", "annotations": {"m": "{\"b\":2}"}}
        ]))
        .unwrap();
    assert!(!patch_pod_metadata(&mut p, &patches).unwrap());
    let a = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(a["keep"], "pod");
    assert_eq!(a["new"], "v");
    assert_eq!(a["m"], r#"{"a":1,"b":2}"#);
    // Nothing left to change: skip.
    assert!(patch_pod_metadata(&mut p, &patches).unwrap());
}

#[test]
fn subpath_expr_env_references() {
    assert_eq!(
        subpath_env_names("foo/$(ODD_NAME)/$(POD_NAME)"),
        vec!["ODD_NAME", "POD_NAME"]
    );
    assert_eq!(subpath_env_names("$(1BAD)/$()"), Vec::<&str>::new());
}

// ---------------------------------------------------------------------------------------------
// Cases of OpenKruise v1.9.0 `pkg/control/sidecarcontrol/util_test.go` and
// `pkg/util/tools_test.go`, run through this port.

const SIDECARSET: &str = "test-sidecarset";

fn now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_764_000_000).unwrap()
}

/// util_test.go `ImageIds`.
fn image_id(image: &str) -> &'static str {
    match image {
        "main:v1" => "4120593193b4",
        "cold-sidecar:v1" => "docker-pullable://cold-sidecar@sha256:9ead06a1362e",
        "cold-sidecar:v2" => "docker-pullable://cold-sidecar@sha256:7223aa0f3a7a",
        "hot-sidecar:v1" => "docker-pullable://hot-sidecar@sha256:86618128c92e",
        "hot-sidecar:v2" => "docker-pullable://hot-sidecar@sha256:74abd85af1e9",
        "hotupgrade:empty" => "docker-pullable://hotupgrade@sha256:0e9daf5c02e7",
        other => panic!("no image id for {other}"),
    }
}

/// util_test.go `podDemo`.
fn pod_demo() -> CachedPod {
    let status = |name: &str, image: &str| json!({"name": name, "image": image, "imageID": image_id(image), "ready": true, "restartCount": 0});
    pod(json!({
        "metadata": {"annotations": {}, "name": "test-pod-1", "namespace": "default",
                     "labels": {"app": "nginx"}, "resourceVersion": "495711227"},
        "spec": {"containers": [
            {"name": "main", "image": "main:v1"},
            {"name": "cold-sidecar", "image": "cold-sidecar:v1"},
            {"name": "hot-sidecar-1", "image": "hot-sidecar:v1"},
            {"name": "hot-sidecar-2", "image": "hotupgrade:empty"}
        ]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                status("main", "main:v1"),
                status("cold-sidecar", "cold-sidecar:v1"),
                status("hot-sidecar-1", "hot-sidecar:v1"),
                status("hot-sidecar-2", "hotupgrade:empty")
            ]}
    }))
}

/// util_test.go `sidecarSetDemo`.
fn sidecarset_demo() -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"generation": 123, "name": SIDECARSET, "labels": {"app": "sidecar"},
            "annotations": {"kruise.io/sidecarset-hash": "bbb",
                            "kruise.io/sidecarset-hash-without-image": "without-image-aaa"}},
        "spec": {"containers": [
            {"name": "cold-sidecar", "image": "cold-image:v1",
             "upgradeStrategy": {"upgradeType": "ColdUpgrade"}},
            {"name": "hot-sidecar", "image": "hot-image:v1",
             "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "hotupgrade:empty"}}
        ]}
    }))
    .unwrap()
}

fn set_annotation(p: &mut CachedPod, key: &str, value: &str) {
    p.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), value.to_string());
}

fn set_spec_image(p: &mut CachedPod, i: usize, image: &str) {
    p.spec.as_mut().unwrap().containers[i].image = Some(image.to_string());
}

fn set_status_image_id(p: &mut CachedPod, i: usize, id: &str) {
    p.status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[i]
        .image_id = id.to_string();
}

fn names(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// One step of a util_test.go `getPod`: what the Go test does to `podDemo`.
enum Step {
    /// `pod.Spec.Containers[i].Image = image`.
    SpecImage(usize, &'static str),
    /// `UpdatePodSidecarSetHash(pod, sidecarSet)`.
    Hash,
    /// `control.UpdatePodAnnotationsInUpgrade(containers, pod)`.
    Record(&'static [&'static str]),
    /// `pod.Status.ContainerStatuses[i].ImageID = ImageIds[image]`.
    StatusImageId(usize, &'static str),
}

fn apply(steps: &[Step], s: &SidecarSet, p: &mut CachedPod) {
    for step in steps {
        match step {
            Step::SpecImage(i, image) => set_spec_image(p, *i, image),
            Step::Hash => update_pod_sidecarset_hash(p, s, now()),
            Step::Record(changed) => {
                let changed: Vec<String> = changed.iter().map(|c| c.to_string()).collect();
                record_inplace_update_state(s, p, &changed, now());
            }
            Step::StatusImageId(i, image) => set_status_image_id(p, *i, image_id(image)),
        }
    }
}

#[test]
fn go_is_sidecar_container_update_completed() {
    use Step::*;
    let cold_done = [
        SpecImage(1, "cold-sidecar:v2"),
        Hash,
        Record(&["cold-sidecar"]),
        StatusImageId(1, "cold-sidecar:v2"),
    ];
    let cases: Vec<(&str, Vec<Step>, bool)> = vec![
        ("only inject sidecar, not upgrade", vec![], true),
        (
            "upgrade cold sidecar, upgrade not completed",
            vec![
                SpecImage(1, "cold-sidecar:v2"),
                Hash,
                Record(&["cold-sidecar"]),
            ],
            false,
        ),
        (
            "upgrade cold sidecar, upgrade completed",
            vec![
                SpecImage(1, "cold-sidecar:v2"),
                Hash,
                Record(&["cold-sidecar"]),
                StatusImageId(1, "cold-sidecar:v2"),
            ],
            true,
        ),
        (
            "upgrade hot sidecar, upgrade hot-sidecar-2 not completed",
            vec![SpecImage(3, "hot-sidecar:v2"), Record(&["hot-sidecar-2"])],
            false,
        ),
        (
            "upgrade hot sidecar, upgrade hot-sidecar-1 not completed",
            vec![
                SpecImage(3, "hot-sidecar:v2"),
                Record(&["hot-sidecar-2"]),
                StatusImageId(3, "hot-sidecar:v2"),
                SpecImage(2, "hotupgrade:empty"),
                Record(&["hot-sidecar-1"]),
            ],
            false,
        ),
        (
            "upgrade hot sidecar, upgrade hot-sidecar completed",
            vec![
                SpecImage(3, "hot-sidecar:v2"),
                Record(&["hot-sidecar-2"]),
                StatusImageId(3, "hot-sidecar:v2"),
                SpecImage(2, "hotupgrade:empty"),
                Record(&["hot-sidecar-1"]),
                StatusImageId(2, "hotupgrade:empty"),
            ],
            true,
        ),
    ];
    let s = sidecarset_demo();
    let sets = names(&[SIDECARSET]);
    let containers = names(&["cold-sidecar", "hot-sidecar-1", "hot-sidecar-2"]);
    for (i, (name, steps, want)) in cases.iter().enumerate() {
        let mut p = pod_demo();
        // The hot-sidecar cases start from a completed cold-sidecar upgrade.
        if i >= 3 {
            apply(&cold_done, &s, &mut p);
        }
        apply(steps, &s, &mut p);
        assert_eq!(
            is_sidecar_container_update_completed(&p, &sets, &containers),
            *want,
            "{name}"
        );
    }
}

#[test]
fn go_get_pod_sidecarset_revision() {
    let cases = [
        (
            "normal sidecarSet revision",
            r#"{"test-sidecarset":{"hash":"aaa"}}"#,
            r#"{"test-sidecarset":{"hash":"without-image-aaa"}}"#,
            "aaa",
            "without-image-aaa",
        ),
        (
            "older sidecarSet revision",
            r#"{"test-sidecarset": "aaa"}"#,
            r#"{"test-sidecarset": "without-image-aaa"}"#,
            "aaa",
            "without-image-aaa",
        ),
        (
            "failed sidecarSet revision",
            "failed-sidecarset-hash",
            "failed-sidecarset-hash",
            "",
            "",
        ),
    ];
    for (name, hash, without, want, want_without) in cases {
        let mut p = pod_demo();
        set_annotation(&mut p, keys::SIDECARSET_HASH, hash);
        set_annotation(&mut p, keys::SIDECARSET_HASH_WITHOUT_IMAGE, without);
        assert_eq!(pod_sidecarset_revision(&p, SIDECARSET), want, "{name}");
        assert_eq!(
            pod_sidecarset_without_image_revision(&p, SIDECARSET),
            want_without,
            "{name}"
        );
    }
}

fn hashes(value: &str) -> BTreeMap<String, String> {
    parse_upgrade_specs(Some(value), keys::SIDECARSET_HASH)
        .unwrap()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.hash))
        .collect()
}

#[test]
fn go_update_pod_sidecarset_hash() {
    let cases = [
        (
            "normal sidecarSet revision",
            r#"{"test-sidecarset":{"hash":"aaa"}}"#,
            r#"{"test-sidecarset":{"hash":"without-image-aaa"}}"#,
            Some("without-image-aaa"),
        ),
        (
            "older sidecarSet revision",
            r#"{"test-sidecarset": "aaa"}"#,
            r#"{"test-sidecarset": "without-image-aaa"}"#,
            Some("without-image-aaa"),
        ),
        (
            "failed sidecarSet revision",
            "failed-sidecarset-hash",
            "failed-sidecarset-hash",
            None,
        ),
    ];
    let s = sidecarset_demo();
    let ts = go_time(now());
    for (name, hash, without, want_without) in cases {
        let mut p = pod_demo();
        set_annotation(&mut p, keys::SIDECARSET_HASH, hash);
        set_annotation(&mut p, keys::SIDECARSET_HASH_WITHOUT_IMAGE, without);
        update_pod_sidecarset_hash(&mut p, &s, now());
        let a = p.metadata.annotations.as_ref().unwrap();
        assert_eq!(
            hashes(&a[keys::SIDECARSET_HASH]),
            BTreeMap::from([(SIDECARSET.to_string(), "bbb".to_string())]),
            "{name}"
        );
        // Go's json.Marshal of the new entry: the sidecar list sorted, no controllerRevision
        // without status.latestRevision.
        assert_eq!(
            a[keys::SIDECARSET_HASH],
            format!(
                r#"{{"test-sidecarset":{{"updateTimestamp":"{ts}","hash":"bbb","sidecarSetName":"test-sidecarset","sidecarList":["cold-sidecar","hot-sidecar"]}}}}"#
            ),
            "{name}"
        );
        match want_without {
            Some(w) => assert_eq!(
                hashes(&a[keys::SIDECARSET_HASH_WITHOUT_IMAGE]),
                BTreeMap::from([(SIDECARSET.to_string(), w.to_string())]),
                "{name}"
            ),
            // Neither format: left as it is.
            None => assert_eq!(a[keys::SIDECARSET_HASH_WITHOUT_IMAGE], without, "{name}"),
        }
    }
    // The older format is rewritten in the new one (Go: only when the hash annotation was in
    // the older format too).
    let mut p = pod_demo();
    set_annotation(
        &mut p,
        keys::SIDECARSET_HASH,
        r#"{"test-sidecarset": "aaa"}"#,
    );
    set_annotation(
        &mut p,
        keys::SIDECARSET_HASH_WITHOUT_IMAGE,
        r#"{"test-sidecarset": "without-image-aaa"}"#,
    );
    update_pod_sidecarset_hash(&mut p, &s, now());
    assert_eq!(
        p.metadata.annotations.as_ref().unwrap()[keys::SIDECARSET_HASH_WITHOUT_IMAGE],
        format!(
            r#"{{"test-sidecarset":{{"updateTimestamp":"{ts}","hash":"without-image-aaa","sidecarSetName":"test-sidecarset","sidecarList":null}}}}"#
        )
    );
}

fn field_ref(path: &str) -> ObjectFieldSelector {
    ObjectFieldSelector {
        api_version: Some("v1".into()),
        field_path: path.into(),
    }
}

#[test]
fn go_extract_container_name_from_field_path() {
    let cases = [
        (
            "metadata.labels['test-label']",
            json!({"metadata": {"name": "test-pod-label", "labels": {"test-label": "test-pod-label"}}}),
            "test-pod-label",
        ),
        (
            "metadata.labels['test-label']",
            json!({"metadata": {"name": "test-pod-label"}}),
            "",
        ),
        (
            "metadata.annotations['test-anno']",
            json!({"metadata": {"name": "test-pod-anno", "annotations": {"test-anno": "test-pod-anno"}}}),
            "test-pod-anno",
        ),
    ];
    for (path, p, want) in cases {
        assert_eq!(
            container_name_from_field_path(&field_ref(path), &pod(p)).unwrap(),
            want,
            "{path}"
        );
    }
}

#[test]
fn go_get_sidecar_transfer_envs() {
    let main_pod = |labels: serde_json::Value, annotations: serde_json::Value| {
        pod(json!({
            "metadata": {"annotations": annotations, "name": "test-pod-1", "namespace": "default",
                         "labels": labels, "resourceVersion": "495711227"},
            "spec": {"containers": [{"name": "main", "image": "main:v1",
                                     "env": [{"name": "test-env", "value": "test-value"}]}]}
        }))
    };
    let sidecar = |transfer: serde_json::Value| -> SidecarContainer {
        serde_json::from_value(json!({
            "name": "cold-sidecar", "image": "cold-image:v1",
            "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
            "transferEnv": [transfer]
        }))
        .unwrap()
    };
    let cases = [
        (
            sidecar(json!({"envName": "test-env", "sourceContainerName": "main"})),
            main_pod(json!({"app": "nginx"}), json!({})),
        ),
        (
            sidecar(
                json!({"envName": "test-env", "sourceContainerNameFrom": {"fieldRef":
                {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}}}),
            ),
            main_pod(json!({"app": "main"}), json!({})),
        ),
        (
            sidecar(
                json!({"envName": "test-env", "sourceContainerNameFrom": {"fieldRef":
                {"apiVersion": "v1", "fieldPath": "metadata.annotations['app']"}}}),
            ),
            main_pod(json!({"app": "main"}), json!({"app": "main"})),
        ),
    ];
    let want = vec![EnvVar {
        name: "test-env".into(),
        value: Some("test-value".into()),
        value_from: None,
    }];
    for (i, (s, p)) in cases.iter().enumerate() {
        assert_eq!(transfer_envs(s, &full(p)), want, "case {i}");
    }
}

#[test]
fn go_patch_pod_metadata() {
    let cases = [
        (
            "add pod annotation",
            json!(null),
            json!([{"patchPolicy": "Retain", "annotations": {"key1": "value1"}},
                   {"patchPolicy": "Overwrite", "annotations": {"key2": "value2"}}]),
            json!({"key1": "value1", "key2": "value2"}),
            false,
        ),
        (
            "add pod annotation, exist",
            json!({"key1": "old", "key2": "old"}),
            json!([{"patchPolicy": "Retain", "annotations": {"key1": "value1"}},
                   {"patchPolicy": "Overwrite", "annotations": {"key2": "value2"}}]),
            json!({"key1": "old", "key2": "value2"}),
            false,
        ),
        (
            "json merge pod annotation",
            json!({"key1": r#"{"log-agent":1}"#, "key2": r#"{"log-agent":1}"#}),
            json!([{"patchPolicy": "MergePatchJson", "annotations": {
                "key1": r#"{"log-agent":1}"#, "key2": r#"{"envoy":2}"#, "key3": r#"{"probe":5}"#}}]),
            json!({"key1": r#"{"log-agent":1}"#, "key2": r#"{"envoy":2,"log-agent":1}"#,
                   "key3": r#"{"probe":5}"#}),
            false,
        ),
        (
            "json merge pod annotation, skip",
            json!({"key1": r#"{"log-agent":1}"#}),
            json!([{"patchPolicy": "MergePatchJson", "annotations": {"key1": r#"{"log-agent":1}"#}}]),
            json!({"key1": r#"{"log-agent":1}"#}),
            true,
        ),
    ];
    for (name, annotations, patches, want, skip) in cases {
        let mut p = pod(json!({"metadata": {"annotations": annotations}}));
        let patches: Vec<kruise_api::apps::v1beta1::SidecarSetPatchPodMetadata> =
            serde_json::from_value(patches).unwrap();
        assert_eq!(
            patch_pod_metadata(&mut p, &patches).unwrap(),
            skip,
            "{name}"
        );
        let want: BTreeMap<String, String> = serde_json::from_value(want).unwrap();
        assert_eq!(p.metadata.annotations.unwrap(), want, "{name}");
    }
}

#[test]
fn go_get_injected_volume_devices() {
    let p = full_pod(json!({"spec": {"containers": [
        {"name": "", "volumeDevices": [{"name": "vd-1", "devicePath": "/data/volume-1"}]},
        {"name": "", "volumeDevices": [{"name": "vd-2", "devicePath": "/data/volume-2"}]},
        {"name": "", "volumeDevices": [{"name": "vd-3", "devicePath": "/data/volume-3"}],
         "env": [{"name": "IS_INJECTED", "value": "true"}]}
    ]}}));
    let device = |n: &str, path: &str| VolumeDevice {
        name: n.into(),
        device_path: path.into(),
    };
    let cases = [
        (
            "ShareVolumeDevicePolicy, disable",
            json!({"name": ""}),
            vec![],
        ),
        (
            "ShareVolumeDevicePolicy, enabled",
            json!({"name": "", "shareVolumeDevicePolicy": {"type": "enabled"}}),
            vec![
                device("vd-1", "/data/volume-1"),
                device("vd-2", "/data/volume-2"),
            ],
        ),
    ];
    for (name, sidecar, want) in cases {
        let sidecar: SidecarContainer = serde_json::from_value(sidecar).unwrap();
        assert_eq!(injected_volume_devices(&sidecar, &p), want, "{name}");
    }
}

#[test]
fn go_is_container_image_equal() {
    const D1: &str = "sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
    const D2: &str = "sha256:a2d86defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
    let digest = |d: &str| format!("docker.io/busybox@{d}");
    let cases = [
        (
            "image tag and equal",
            [
                "docker.io/busybox:v1".to_string(),
                "docker.io/busybox:v1".to_string(),
            ],
            true,
            vec![(
                "docker.io/busybox:v1".to_string(),
                ["docker.io/busybox", "v1", ""],
            )],
        ),
        (
            "image tag and not equal",
            [
                "docker.io/busybox:v1".to_string(),
                "docker.io/busybox:v2".to_string(),
            ],
            false,
            vec![
                (
                    "docker.io/busybox:v1".to_string(),
                    ["docker.io/busybox", "v1", ""],
                ),
                (
                    "docker.io/busybox:v2".to_string(),
                    ["docker.io/busybox", "v2", ""],
                ),
            ],
        ),
        (
            "image digest and equal",
            [digest(D1), digest(D1)],
            true,
            vec![(digest(D1), ["docker.io/busybox", "", D1])],
        ),
        (
            "image digest and not equal",
            [digest(D1), digest(D2)],
            false,
            vec![
                (digest(D1), ["docker.io/busybox", "", D1]),
                (digest(D2), ["docker.io/busybox", "", D2]),
            ],
        ),
    ];
    for (name, [a, b], equal, parsed) in cases {
        assert_eq!(is_container_image_equal(&a, &b), equal, "{name}");
        for (image, [repo, tag, digest]) in parsed {
            let r = parse_image(&image).unwrap_or_else(|| panic!("{name}: {image}"));
            assert_eq!(
                (r.repo.as_str(), r.tag.as_str(), r.digest.as_str()),
                (repo, tag, digest),
                "{name}: {image}"
            );
        }
    }
}

#[test]
fn image_digests_and_domains_as_go_digest_and_distribution_v2_8_2_accept_them() {
    let hex64 = "a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
    // go-digest v1.0.0: sha256/sha384/sha512 only, lower-case hex of the algorithm's length.
    assert!(parse_image(&format!("busybox@sha256:{hex64}")).is_some());
    assert!(parse_image(&format!("busybox@sha512:{hex64}{hex64}")).is_some());
    assert!(parse_image(&format!("busybox@sha384:{hex64}{}", &hex64[..32])).is_some());
    assert!(parse_image(&format!("busybox@sha256:{}", &hex64[..32])).is_none());
    assert!(parse_image(&format!("busybox@sha256:{hex64}00")).is_none());
    assert!(parse_image(&format!("busybox@sha256:{}", hex64.to_uppercase())).is_none());
    assert!(parse_image(&format!("busybox@md5:{hex64}")).is_none());
    assert!(parse_image(&format!("busybox@SHA256:{hex64}")).is_none());
    assert!(!is_image_digest(&format!(
        "busybox@sha256:{}",
        &hex64[..40]
    )));
    // The reference grammar of docker/distribution v2.8.2 has no IPv6 domains.
    assert!(parse_image("[::1]:5000/busybox:1").is_none());
    assert!(parse_image("localhost:5000/busybox:1").is_some());
}

#[test]
fn containers_are_looked_up_among_init_containers_first_as_go_util_get_container() {
    let s = sidecarset_demo();
    let mut p = pod_demo();
    set_annotation(
        &mut p,
        keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER,
        r#"{"hot-sidecar":"hot-sidecar-1"}"#,
    );
    assert!(is_pod_consistent_with_sidecarset(&p, &s));
    let spec = p.spec.as_mut().unwrap();
    let cold = spec.containers.remove(1);
    assert!(!is_pod_consistent_with_sidecarset(&p, &s));
    p.spec.as_mut().unwrap().init_containers = Some(vec![cold]);
    assert!(is_pod_consistent_with_sidecarset(&p, &s));
}

#[test]
fn field_path_errors_as_go() {
    let p = pod(json!({"metadata": {"name": "p"}}));
    let err = |path: &str| container_name_from_field_path(&field_ref(path), &p).unwrap_err();
    assert_eq!(err("metadata.name"), "unsupported fieldPath: metadata.name");
    // fieldpath.SplitMaybeSubscriptedPath needs a path before the subscript.
    assert_eq!(err("['app']"), "unsupported fieldPath: ['app']");
    assert_eq!(
        err("spec.nodeName['app']"),
        r#"fieldPath "spec.nodeName['app']" does not support subscript"#
    );
    // The validation messages follow, joined by ';'.
    let e = err("metadata.labels['a b']");
    assert!(
        e.starts_with("invalid key subscript in metadata.labels['a b']: name part must consist of"),
        "{e}"
    );
}

#[test]
fn transfer_envs_take_the_last_duplicate_and_injected_reads_the_first() {
    let p = full_pod(json!({
        "spec": {"containers": [
            {"name": "app", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
             "volumeDevices": [{"name": "d", "devicePath": "/d"}]},
            {"name": "s", "env": [{"name": "IS_INJECTED", "value": "false"},
                                  {"name": "IS_INJECTED", "value": "true"}],
             "volumeDevices": [{"name": "e", "devicePath": "/e"}]}
        ]}
    }));
    let sidecar: SidecarContainer = serde_json::from_value(json!({
        "name": "x",
        "transferEnv": [{"sourceContainerName": "app", "envName": "A"}],
        "shareVolumeDevicePolicy": {"type": "enabled"}
    }))
    .unwrap();
    // Go keys the pod's env vars by "container/name" in a map: the last one wins.
    let got = transfer_envs(&sidecar, &p);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].value.as_deref(), Some("2"));
    // util.GetContainerEnvValue reads the first IS_INJECTED: "s" is not an injected sidecar.
    assert_eq!(injected_volume_devices(&sidecar, &p).len(), 2);
}

#[test]
fn older_hash_format_as_go_reads_and_converts_it() {
    let mut p = pod_demo();
    set_annotation(
        &mut p,
        keys::SIDECARSET_HASH,
        r#"{"test-sidecarset": "aaa", "other": "ooo"}"#,
    );
    set_annotation(
        &mut p,
        keys::SIDECARSET_HASH_WITHOUT_IMAGE,
        r#"{"test-sidecarset": "without-image-aaa"}"#,
    );
    // GetPodSidecarSetUpgradeSpecInAnnotations keeps only the hash of the older format.
    assert_eq!(
        pod_upgrade_spec(&p, SIDECARSET, keys::SIDECARSET_HASH),
        SidecarSetUpgradeSpec {
            hash: "aaa".into(),
            ..Default::default()
        }
    );
    // UpdatePodSidecarSetHash decodes both older annotations into one map: the image-less
    // annotation it writes also carries the hashes only the hash annotation had.
    update_pod_sidecarset_hash(&mut p, &sidecarset_demo(), now());
    let a = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        hashes(&a[keys::SIDECARSET_HASH_WITHOUT_IMAGE]),
        BTreeMap::from([
            ("other".to_string(), "ooo".to_string()),
            (SIDECARSET.to_string(), "without-image-aaa".to_string()),
        ])
    );
    assert_eq!(
        hashes(&a[keys::SIDECARSET_HASH]),
        BTreeMap::from([
            ("other".to_string(), "ooo".to_string()),
            (SIDECARSET.to_string(), "bbb".to_string()),
        ])
    );
}

#[test]
fn merge_patch_json_as_evanphx_json_patch_v5_6_0() {
    let cases = [
        // Values the merge does not read keep their text (key order, number form, escapes).
        (
            r#"{"a":{"z":1,"b":2}, "c":1.0,"e":"\u0041<"}"#,
            r#"{"d":3}"#,
            r#"{"a":{"z":1,"b":2},"c":1.0,"d":3,"e":"\u0041\u003c"}"#,
        ),
        // Objects it merges into are written with sorted keys.
        (
            r#"{"a":{"z":1,"b":2}}"#,
            r#"{"a":{"y":null,"x":1}}"#,
            r#"{"a":{"b":2,"x":1,"z":1}}"#,
        ),
        // A patch object set where there was no object loses its null members.
        (
            r#"{"a":1}"#,
            r#"{"a":{"b":null,"c":{"e":null}}}"#,
            r#"{"a":{"c":{}}}"#,
        ),
        // A patch array replacing an object is kept as written.
        (
            r#"{"a":{"b":1}}"#,
            r#"{"a":[{"x":null}]}"#,
            r#"{"a":[{"x":null}]}"#,
        ),
        // A document that is no object: the patch, without its null members.
        (
            "[1]",
            r#"{"a":{"b":null,"c":"<"}}"#,
            r#"{"a":{"c":"\u003c"}}"#,
        ),
        // A patch that is an array: the array, nulls kept, null members of its objects dropped.
        (
            r#"{"x":1}"#,
            r#"[{"a":null,"b":1},null]"#,
            r#"[{"b":1},null]"#,
        ),
    ];
    for (origin, patch, want) in cases {
        assert_eq!(
            merge_patch_json(origin, patch).unwrap(),
            want,
            "{origin} + {patch}"
        );
    }
    let err = |o: &str, p: &str| merge_patch_json(o, p).unwrap_err().0;
    assert_eq!(err("null", "{}"), "Invalid JSON Document");
    assert_eq!(err("{", "{}"), "Invalid JSON Document");
    assert_eq!(err("{}", "null"), "Invalid JSON Patch");
    assert_eq!(err("{}", "1"), "Invalid JSON Patch");
    assert_eq!(err("{}", "{"), "Invalid JSON Patch");

    // Nothing changes when the merge writes the pod's value back as it was.
    let mut p = pod(json!({"metadata": {"annotations": {"k": r#"{"a":1.0}"#}}}));
    let patches: Vec<kruise_api::apps::v1beta1::SidecarSetPatchPodMetadata> =
        serde_json::from_value(
            json!([{"patchPolicy": "MergePatchJson", "annotations": {"k": r#"{"a":1.0}"#}}]),
        )
        .unwrap();
    assert!(patch_pod_metadata(&mut p, &patches).unwrap());
}

#[test]
fn injected_matches_the_injected_list() {
    let mut s = sidecarset_demo();
    for (list, name) in [
        (None, "a"),
        (Some(""), "a"),
        (Some("a"), "a"),
        (Some("b,a"), "a"),
        (Some("ab,b"), "a"),
        (Some("a,,b"), ""),
        (Some(","), ""),
        (Some(""), ""),
    ] {
        let mut p = pod(json!({"metadata": {"name": "p"}}));
        if let Some(l) = list {
            set_annotation(&mut p, keys::SIDECARSET_INJECTED_LIST, l);
        }
        s.metadata.name = Some(name.to_string());
        assert_eq!(
            is_pod_injected(&p, &s),
            injected_list(&p).contains(name),
            "{list:?} {name:?}"
        );
    }
}

#[test]
fn upgrade_specs_read_again_answer_the_same() {
    // The decoded values are remembered: every read of one value, in either format, and of
    // values that cannot be decoded, answers as the first.
    for value in [
        r#"{"s":{"hash":"h1","sidecarSetName":"s","controllerRevision":"s-1"},"t":{"hash":"h2"}}"#,
        r#"{"s": "old", "t": "older"}"#,
        "null",
        "not json",
        r#"{"s":{"hash":1}}"#,
    ] {
        let mut p = pod(json!({"metadata": {"name": "p"}}));
        set_annotation(&mut p, keys::SIDECARSET_HASH, value);
        let first: Vec<SidecarSetUpgradeSpec> = ["s", "t", "u"]
            .iter()
            .map(|n| pod_upgrade_spec(&p, n, keys::SIDECARSET_HASH))
            .collect();
        for _ in 0..3 {
            let again: Vec<SidecarSetUpgradeSpec> = ["s", "t", "u"]
                .iter()
                .map(|n| pod_upgrade_spec(&p, n, keys::SIDECARSET_HASH))
                .collect();
            assert_eq!(again, first, "{value}");
        }
        assert_eq!(
            decode_pod_upgrade_specs(value)
                .get("s")
                .cloned()
                .unwrap_or_default(),
            first[0],
            "{value}"
        );
    }
}
