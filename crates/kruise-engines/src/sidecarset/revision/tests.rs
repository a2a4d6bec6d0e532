use super::*;

fn sidecarset(v: Value) -> SidecarSet {
    serde_json::from_value(v).unwrap()
}

fn base() -> SidecarSet {
    sidecarset(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "ss", "uid": "u-1", "labels": {"team": "a"},
            "annotations": {"kruise.io/sidecarset-hash": "h1", "kruise.io/sidecarset-hash-without-image": "w1"}},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "containers": [{"name": "sidecar", "image": "busybox:1", "podInjectPolicy": "BeforeAppContainer"}],
            "imagePullSecrets": [{"name": "secret-1"}],
            "customVersion": "v1"
        }
    }))
}

#[test]
fn data_records_the_five_fields_with_nulls_for_unset_ones() {
    let data = revision_data(&base()).unwrap();
    let spec = data["spec"].as_object().unwrap();
    assert_eq!(spec.len(), 6);
    assert_eq!(spec["$patch"], "replace");
    assert_eq!(spec["volumes"], Value::Null);
    assert_eq!(spec["initContainers"], Value::Null);
    assert_eq!(spec["patchPodMetadata"], Value::Null);
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "secret-1"}]));
    assert_eq!(spec["containers"][0]["name"], "sidecar");
    // Go's typed encoding: a container always has `resources: {}`.
    assert_eq!(spec["containers"][0]["resources"], json!({}));
}

#[test]
fn new_revision_is_labelled_annotated_and_owned() {
    let r = new_revision(&base(), "kruise-system", 3, 0).unwrap();
    let labels = r.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["kruise.io/sidecarset-name"], "ss");
    assert_eq!(labels["team"], "a");
    assert_eq!(labels["apps.kruise.io/sidecarset-custom-version"], "v1");
    assert!(labels.contains_key("controller-revision-hash"));
    assert_eq!(
        r.metadata.annotations.as_ref().unwrap()["kruise.io/sidecarset-hash"],
        "h1"
    );
    assert_eq!(r.metadata.namespace.as_deref(), Some("kruise-system"));
    assert_eq!(r.revision, Some(3));
    let owner = &r.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("SidecarSet", "u-1")
    );
    assert!(r.metadata.name.as_deref().unwrap().starts_with("ss-"));
    // Another collision count gives another name.
    let r2 = new_revision(&base(), "kruise-system", 3, 1).unwrap();
    assert_ne!(r.metadata.name, r2.metadata.name);
}

#[test]
fn restore_takes_the_recorded_spec_and_hashes() {
    let mut old = base();
    old.spec.containers.as_mut().unwrap()[0].container.image = Some("busybox:0".into());
    let mut r = new_revision(&old, "kruise-system", 1, 0).unwrap();
    r.metadata.annotations = Some(BTreeMap::from([(
        "kruise.io/sidecarset-hash".to_string(),
        "old-hash".to_string(),
    )]));
    let restored = restore(&base(), &r, |_| ("x".into(), "recomputed".into())).unwrap();
    assert_eq!(
        restored.spec.containers.as_ref().unwrap()[0]
            .container
            .image
            .as_deref(),
        Some("busybox:0")
    );
    // Fields the revision does not record are gone, as with Go's `$patch: replace`.
    assert!(restored.spec.selector.is_none());
    let a = restored.metadata.annotations.as_ref().unwrap();
    assert_eq!(a["kruise.io/sidecarset-hash"], "old-hash");
    assert_eq!(a["kruise.io/sidecarset-hash-without-image"], "recomputed");
    assert_eq!(
        restored.status.unwrap().latest_revision,
        r.metadata.name.clone()
    );
}

#[test]
fn truncation_keeps_active_and_newest_revisions() {
    let s = sidecarset(json!({"metadata": {"name": "ss"}, "spec": {"revisionHistoryLimit": 2}}));
    let revs: Vec<ControllerRevision> = (1..=5)
        .map(|i| ControllerRevision {
            metadata: ObjectMeta {
                name: Some(format!("ss-{i}")),
                ..Default::default()
            },
            revision: Some(i),
            ..Default::default()
        })
        .collect();
    let sorted: Vec<&ControllerRevision> = revs.iter().collect();
    let active = BTreeSet::from(["ss-1".to_string()]);
    let (doomed, met) = history_to_truncate(&s, &sorted, &active);
    // ss-1 is in use and ss-5 is the newest: the three between go.
    assert_eq!(doomed, vec!["ss-2", "ss-3", "ss-4"]);
    assert!(met);
    // With a limit of 1, only the in-use and the newest revision can stay: not met.
    let s = sidecarset(json!({"metadata": {"name": "ss"}, "spec": {"revisionHistoryLimit": 1}}));
    let (doomed, met) = history_to_truncate(&s, &sorted, &active);
    assert_eq!(doomed, vec!["ss-2", "ss-3", "ss-4"]);
    assert!(!met);
}
