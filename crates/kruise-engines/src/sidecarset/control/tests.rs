use super::*;
use serde_json::json;

fn pod(v: serde_json::Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

#[test]
fn upgrade_specs_read_both_formats_and_write_go_bytes() {
    let new = parse_upgrade_specs(
        Some(r#"{"test-sidecarset":{"hash":"aaa"}}"#),
        keys::SIDECARSET_HASH,
    )
    .unwrap();
    assert_eq!(new["test-sidecarset"].hash, "aaa");
    let old =
        parse_upgrade_specs(Some(r#"{"test-sidecarset": "aaa"}"#), keys::SIDECARSET_HASH).unwrap();
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
    let got: Vec<(String, String)> = transfer_envs(&sidecar, &p)
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
