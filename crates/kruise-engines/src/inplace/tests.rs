//! Unit tests of the in-place update engine (flow level; the wire formats, JSON diff, metadata
//! patch and hashes have their own tests next to their code).

use super::*;
use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, EnvVar, EnvVarSource, ObjectFieldSelector, PodReadinessGate,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kruise_api::apps::common::{RuntimeContainerHashes, RuntimeContainerMeta};
#[allow(unused_imports)]
use kruise_api::pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodSpec, CachedPodStatus,
};
use proptest::prelude::*;

const NOW: &str = "2026-03-04T05:06:07Z";

fn ts(s: &str) -> jiff::Timestamp {
    s.parse().unwrap()
}

fn now() -> jiff::Timestamp {
    ts(NOW)
}

fn container(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image, "resources": {}, "imagePullPolicy": "IfNotPresent"})
}

fn revision_data(labels: Value, annotations: Value, containers: Vec<Value>) -> Value {
    json!({"spec": {"template": {
        "$patch": "replace",
        "metadata": {"labels": labels, "annotations": annotations, "creationTimestamp": null},
        "spec": {"containers": containers, "restartPolicy": "Always"}
    }}})
}

fn rev(name: &str, data: Value) -> ControllerRevision {
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: RawExtension(data),
        revision: Some(1),
    }
}

fn opts() -> UpdateOptions {
    UpdateOptions::default()
}

fn env_from(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn barrier(priority: i64) -> EnvVar {
    EnvVar {
        name: keys::CONTAINER_LAUNCH_BARRIER_ENV.into(),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: "p-barrier".into(),
                key: format!("p_{priority}"),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A running pod of revision `cs-1` with the given (name, image, imageID) containers.
fn running_pod(containers: &[(&str, &str, &str)]) -> CachedPod {
    CachedPod {
        metadata: ObjectMeta {
            name: Some("cs-abcde".into()),
            namespace: Some("ns".into()),
            resource_version: Some("42".into()),
            labels: Some(BTreeMap::from([
                (CONTROLLER_REVISION_HASH.to_string(), "cs-1".to_string()),
                (keys::POD_TEMPLATE_HASH.to_string(), "1".to_string()),
                ("app".to_string(), "demo".to_string()),
            ])),
            ..Default::default()
        },
        spec: Some(CachedPodSpec {
            containers: containers
                .iter()
                .map(|(n, i, _)| CachedContainer {
                    name: (*n).into(),
                    image: Some((*i).into()),
                    ..Default::default()
                })
                .collect(),
            readiness_gates: Some(vec![PodReadinessGate {
                condition_type: IN_PLACE_UPDATE_READY.into(),
            }]),
            ..Default::default()
        }),
        status: Some(CachedPodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![
                CachedPodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                },
                CachedPodCondition {
                    type_: "ContainersReady".into(),
                    status: "True".into(),
                    ..Default::default()
                },
                CachedPodCondition {
                    type_: IN_PLACE_UPDATE_READY.into(),
                    status: "True".into(),
                    ..Default::default()
                },
            ]),
            container_statuses: Some(
                containers
                    .iter()
                    .map(|(n, i, id)| CachedContainerStatus {
                        name: (*n).into(),
                        image: (*i).into(),
                        image_id: (*id).into(),
                        ready: true,
                        container_id: Some(format!("containerd://{n}-1")),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
    }
}

fn image_of<'a>(pod: &'a CachedPod, name: &str) -> &'a str {
    podutil::get_container(pod, name)
        .and_then(|c| c.image.as_deref())
        .unwrap_or("")
}

fn state_of(pod: &CachedPod) -> InPlaceUpdateState {
    get_state(pod).unwrap().expect("state annotation")
}

/// Simulates the kubelet restarting containers on their new images.
fn kubelet_runs_new_images(pod: &mut CachedPod) {
    let images: BTreeMap<String, String> = podutil::containers(pod)
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect();
    for cs in pod
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()
    {
        let img = &images[&cs.name];
        if &cs.image != img {
            cs.image = img.clone();
            cs.image_id = format!("{img}@sha256:new");
        }
    }
}

// ------------------------------------------------------------------------------------------
// calculate
// ------------------------------------------------------------------------------------------

#[test]
fn image_only_change_is_in_place() {
    let old = rev(
        "cs-1",
        revision_data(
            json!({"app":"demo"}),
            json!({}),
            vec![container("main", "nginx:1"), container("side", "busybox:1")],
        ),
    );
    let new = rev(
        "cs-2",
        revision_data(
            json!({"app":"demo"}),
            json!({}),
            vec![container("main", "nginx:2"), container("side", "busybox:1")],
        ),
    );
    let spec = calculate_update_spec(
        &old,
        &new,
        &UpdateOptions {
            grace_period_seconds: 3,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(spec.revision, "cs-2");
    assert_eq!(
        spec.container_images,
        BTreeMap::from([("main".to_string(), "nginx:2".to_string())])
    );
    assert_eq!(spec.meta_data_patch, None);
    assert_eq!(spec.grace_seconds, 3);
    assert!(!spec.update_env_from_metadata);
    assert!(can_update_in_place(&old, &new, &opts()));
    assert_eq!(
        calculate_update_spec_with_revision(&old, &new, "hash2", &opts())
            .unwrap()
            .revision,
        "hash2"
    );
}

#[test]
fn identical_revisions_give_an_empty_spec() {
    let d = revision_data(
        json!({"app":"demo"}),
        json!({}),
        vec![container("main", "nginx:1")],
    );
    let spec = calculate_update_spec(&rev("a", d.clone()), &rev("b", d), &opts()).unwrap();
    assert!(spec.container_images.is_empty());
    assert!(spec.meta_data_patch.is_none());
}

#[test]
fn not_in_place_changes() {
    let base = || {
        revision_data(
            json!({"app":"demo"}),
            json!({}),
            vec![container("main", "nginx:1")],
        )
    };
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "env added",
            Box::new(|d| {
                d["spec"]["template"]["spec"]["containers"][0]["env"] =
                    json!([{"name":"A","value":"1"}])
            }),
        ),
        (
            "container added",
            Box::new(|d| {
                d["spec"]["template"]["spec"]["containers"]
                    .as_array_mut()
                    .unwrap()
                    .push(container("x", "y"))
            }),
        ),
        (
            "resources changed",
            Box::new(|d| {
                d["spec"]["template"]["spec"]["containers"][0]["resources"] =
                    json!({"limits":{"cpu":"1"}})
            }),
        ),
        (
            "init container image",
            Box::new(|d| {
                d["spec"]["template"]["spec"]["initContainers"] =
                    json!([container("init", "busybox")])
            }),
        ),
        (
            "image removed",
            Box::new(|d| {
                d["spec"]["template"]["spec"]["containers"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("image");
            }),
        ),
        (
            "pod spec field",
            Box::new(|d| d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never")),
        ),
        (
            "whole metadata removed",
            Box::new(|d| {
                d["spec"]["template"]
                    .as_object_mut()
                    .unwrap()
                    .remove("metadata");
            }),
        ),
        (
            "outside template",
            Box::new(|d| d["spec"]["other"] = json!(1)),
        ),
    ];
    for (name, mutate) in cases {
        let mut new = base();
        mutate(&mut new);
        assert!(
            calculate_update_spec(&rev("a", base()), &rev("b", new), &opts()).is_none(),
            "{name} must not be in-place"
        );
    }
}

#[test]
fn image_change_with_minimal_containers_is_in_place() {
    // Containers without a `resources` object make the array "simple" for the Go diff.
    let data = |img: &str| json!({"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":img}]}}}});
    let spec = calculate_update_spec(&rev("1", data("y")), &rev("2", data("z")), &opts()).unwrap();
    assert_eq!(
        spec.container_images,
        BTreeMap::from([("b".to_string(), "z".to_string())])
    );
}

#[test]
fn metadata_changes_are_in_place_and_patched() {
    let old = rev(
        "cs-1",
        revision_data(
            json!({"app":"demo","v":"1","gone":"x"}),
            json!({"a/b":"1"}),
            vec![container("main", "nginx:1")],
        ),
    );
    let new = rev(
        "cs-2",
        revision_data(
            json!({"app":"demo","v":"2"}),
            json!({"a/b":"2","n":"new"}),
            vec![container("main", "nginx:1")],
        ),
    );
    let spec = calculate_update_spec(&old, &new, &opts()).unwrap();
    assert!(spec.container_images.is_empty());
    assert_eq!(
        spec.meta_data_patch,
        Some(
            json!({"metadata":{"labels":{"v":"2","gone":null},"annotations":{"a/b":"2","n":"new"}}})
        )
    );
    // and it is applied by prepare_update
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    let mut pod = pod;
    pod.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("gone".into(), "x".into());
    let out = prepare_update(&pod, &spec, &TemplateHashRevisionAdapter::default(), now()).unwrap();
    let labels = out.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["v"], "2");
    assert!(!labels.contains_key("gone"));
    assert_eq!(labels[CONTROLLER_REVISION_HASH], "cs-2");
    let ann = out.metadata.annotations.as_ref().unwrap();
    assert_eq!(ann["a/b"], "2");
    assert_eq!(ann["n"], "new");
    // metadata-only update completes immediately (no image to wait for)
    assert_eq!(check_update_completed(&out), Ok(()));
}

fn env_template(containers: Vec<Value>, labels: Value, annotations: Value) -> Value {
    revision_data(labels, annotations, containers)
}

fn env_container(name: &str, image: &str, env: Value) -> Value {
    json!({"name": name, "image": image, "resources": {}, "env": env})
}

#[test]
fn env_from_metadata_is_recorded_per_container_with_the_gate() {
    let containers = || {
        vec![
            env_container(
                "main",
                "nginx:1",
                json!([{"name":"V","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['ver']"}}}]),
            ),
            env_container(
                "side",
                "busybox:1",
                json!([{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.annotations['x/y']"}}}]),
            ),
            container("plain", "p:1"),
        ]
    };
    let old = rev(
        "cs-1",
        env_template(
            containers(),
            json!({"app":"d","ver":"1","other":"1"}),
            json!({"x/y":"a"}),
        ),
    );
    let new = rev(
        "cs-2",
        env_template(
            containers(),
            json!({"app":"d","ver":"2","other":"2"}),
            json!({"x/y":"b"}),
        ),
    );

    let gated = UpdateOptions {
        env_from_metadata: true,
        ..opts()
    };
    let spec = calculate_update_spec(&old, &new, &gated).unwrap();
    assert!(spec.update_env_from_metadata);
    assert_eq!(
        spec.container_ref_metadata["main"].labels,
        Some(BTreeMap::from([("ver".to_string(), "2".to_string())]))
    );
    assert_eq!(
        spec.container_ref_metadata["side"].annotations,
        Some(BTreeMap::from([("x/y".to_string(), "b".to_string())]))
    );
    assert!(!spec.container_ref_metadata.contains_key("plain"));
    // consumed keys are not in the metadata patch
    assert_eq!(
        spec.meta_data_patch,
        Some(json!({"metadata":{"labels":{"other":"2"}}}))
    );

    // without the gate everything goes through the metadata patch
    let spec = calculate_update_spec(&old, &new, &opts()).unwrap();
    assert!(!spec.update_env_from_metadata);
    assert!(spec.container_ref_metadata.is_empty());
    assert_eq!(
        spec.meta_data_patch,
        Some(json!({"metadata":{"labels":{"other":"2","ver":"2"},"annotations":{"x/y":"b"}}}))
    );
}

#[test]
fn env_from_metadata_state_needs_daemon_hashes() {
    let containers = || {
        vec![env_container(
            "main",
            "nginx:1",
            json!([{"name":"V","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['ver']"}}}]),
        )]
    };
    let old = rev(
        "cs-1",
        env_template(containers(), json!({"ver":"1"}), json!({})),
    );
    let new = rev(
        "cs-2",
        env_template(containers(), json!({"ver":"2"}), json!({})),
    );
    let spec = calculate_update_spec(
        &old,
        &new,
        &UpdateOptions {
            env_from_metadata: true,
            ..opts()
        },
    )
    .unwrap();

    let mut pod = running_pod(&[("main", "nginx:1", "id1")]);
    pod.spec.as_mut().unwrap().containers[0].env =
        Some(vec![env_from("V", "metadata.labels['ver']")]);
    let out = prepare_update(&pod, &spec, &TemplateHashRevisionAdapter::default(), now()).unwrap();
    assert_eq!(out.metadata.labels.as_ref().unwrap()["ver"], "2");
    let state = state_of(&out);
    assert!(state.update_env_from_metadata);
    assert!(!state.update_images);
    assert_eq!(
        check_update_completed(&out),
        Err(
            "waiting for all containers hash consistent, but runtime-container-meta not found"
                .into()
        )
    );

    // kruise-daemon reports the old env hash: still waiting
    let c = podutil::get_container(&out, "main").unwrap().clone();
    let mut stale = out.clone();
    let old_hash = expected_env_from_metadata_hash(&c, &pod);
    let meta = |env_hash: u64| {
        serde_json::to_string(&RuntimeContainerMetaSet {
            containers: vec![RuntimeContainerMeta {
                name: "main".into(),
                container_id: "containerd://main-1".into(),
                restart_count: 1,
                hashes: RuntimeContainerHashes {
                    plain_hash: 1,
                    extracted_env_from_metadata_hash: env_hash,
                },
            }],
        })
        .unwrap()
    };
    set_annotation(&mut stale, keys::RUNTIME_CONTAINERS_META, meta(old_hash));
    assert_eq!(
        check_update_completed(&stale),
        Err("waiting for all containers hash consistent".into())
    );
    let mut done = out.clone();
    set_annotation(
        &mut done,
        keys::RUNTIME_CONTAINERS_META,
        meta(expected_env_from_metadata_hash(&c, &out)),
    );
    assert_eq!(check_update_completed(&done), Ok(()));
    // malformed meta is an error
    let mut bad = out.clone();
    set_annotation(&mut bad, keys::RUNTIME_CONTAINERS_META, "{".into());
    assert!(check_update_completed(&bad).is_err());
}

#[test]
fn vct_hash_rules() {
    let d = |img: &str| revision_data(json!({"a":"b"}), json!({}), vec![container("main", img)]);
    let with_hash = |name: &str, img: &str, h: Option<&str>| {
        let mut r = rev(name, d(img));
        if let Some(h) = h {
            r.metadata.annotations = Some(BTreeMap::from([(
                keys::CLONESET_VOLUME_CLAIM_TEMPLATE_HASH.to_string(),
                h.to_string(),
            )]));
        }
        r
    };
    let gate = UpdateOptions {
        recreate_pod_when_change_vct: true,
        ..opts()
    };
    let (o, n) = (
        with_hash("1", "a", Some("11")),
        with_hash("2", "b", Some("22")),
    );
    assert!(calculate_update_spec(&o, &n, &gate).is_none());
    assert!(calculate_update_spec(&o, &n, &opts()).is_some());
    assert!(
        calculate_update_spec(
            &o,
            &n,
            &UpdateOptions {
                ignore_volume_claim_templates_hash_diff: true,
                ..gate.clone()
            }
        )
        .is_some()
    );
    assert!(calculate_update_spec(&with_hash("1", "a", None), &n, &gate).is_some());
    assert!(calculate_update_spec(&o, &with_hash("2", "b", Some("11")), &gate).is_some());
}

#[test]
fn missing_or_bad_revision_data() {
    let good = rev(
        "a",
        revision_data(json!({}), json!({}), vec![container("main", "x")]),
    );
    let empty = ControllerRevision::default();
    assert!(calculate_update_spec(&good, &empty, &opts()).is_none());
    let bad = rev(
        "b",
        json!({"spec":{"template":{"spec":{"containers":"nope"}}}}),
    );
    assert!(calculate_update_spec(&good, &bad, &opts()).is_none());
    assert!(calculate_update_spec(&bad, &bad, &opts()).is_none());
}

// ------------------------------------------------------------------------------------------
// prepare_update
// ------------------------------------------------------------------------------------------

fn image_spec(revision: &str, images: &[(&str, &str)], grace: i32) -> UpdateSpec {
    UpdateSpec {
        revision: revision.into(),
        container_images: images
            .iter()
            .map(|(n, i)| ((*n).to_string(), (*i).to_string()))
            .collect(),
        grace_seconds: grace,
        ..Default::default()
    }
}

#[test]
fn prepare_update_without_grace_patches_images_and_state() {
    let mut pod = running_pod(&[
        ("main", "nginx:1", "docker.io/nginx@sha256:1"),
        ("side", "busybox:1", "bb@sha256:1"),
    ]);
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_STATE_OLD, "{}".into());
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_GRACE_OLD, "{}".into());
    let spec = image_spec("cs-2", &[("main", "nginx:2")], 0);
    let out = prepare_update(&pod, &spec, &TemplateHashRevisionAdapter::default(), now()).unwrap();
    assert_eq!(image_of(&out, "main"), "nginx:2");
    assert_eq!(image_of(&out, "side"), "busybox:1");
    let labels = out.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[CONTROLLER_REVISION_HASH], "cs-2");
    assert_eq!(labels[keys::POD_TEMPLATE_HASH], "2");
    let ann = out.metadata.annotations.as_ref().unwrap();
    assert!(!ann.contains_key(keys::IN_PLACE_UPDATE_STATE_OLD));
    assert!(!ann.contains_key(keys::IN_PLACE_UPDATE_GRACE_OLD));
    assert!(!ann.contains_key(keys::IN_PLACE_UPDATE_GRACE));
    assert_eq!(
        ann[keys::IN_PLACE_UPDATE_STATE],
        r#"{"revision":"cs-2","updateTimestamp":"2026-03-04T05:06:07Z","lastContainerStatuses":{"main":{"imageID":"docker.io/nginx@sha256:1"}},"updateImages":true,"containerBatchesRecord":[{"timestamp":"2026-03-04T05:06:07Z","containers":["main"]}]}"#
    );
    // unchanged: status, resource version, spec otherwise
    assert_eq!(out.status, pod.status);
    assert_eq!(out.metadata.resource_version, pod.metadata.resource_version);
    // the input pod is untouched
    assert_eq!(image_of(&pod, "main"), "nginx:1");

    // short hash adapter
    let out = prepare_update(
        &pod,
        &spec,
        &TemplateHashRevisionAdapter { short_hash: true },
        now(),
    )
    .unwrap();
    assert_eq!(
        out.metadata.labels.as_ref().unwrap()[CONTROLLER_REVISION_HASH],
        "2"
    );
    // default adapter writes the revision verbatim and nothing else
    let out = prepare_update(&pod, &spec, &DefaultRevisionAdapter, now()).unwrap();
    assert_eq!(
        out.metadata.labels.as_ref().unwrap()[CONTROLLER_REVISION_HASH],
        "cs-2"
    );
    assert_eq!(
        out.metadata.labels.as_ref().unwrap()[keys::POD_TEMPLATE_HASH],
        "1"
    );
}

#[test]
fn prepare_update_with_grace_defers_the_spec() {
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    let spec = image_spec("cs-2", &[("main", "nginx:2")], 10);
    let out = prepare_update(&pod, &spec, &TemplateHashRevisionAdapter::default(), now()).unwrap();
    assert_eq!(
        image_of(&out, "main"),
        "nginx:1",
        "images wait for the grace period"
    );
    let ann = out.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        ann[keys::IN_PLACE_UPDATE_STATE],
        r#"{"revision":"cs-2","updateTimestamp":"2026-03-04T05:06:07Z","lastContainerStatuses":null,"updateImages":true}"#
    );
    assert_eq!(
        ann[keys::IN_PLACE_UPDATE_GRACE],
        r#"{"revision":"cs-2","containerImages":{"main":"nginx:2"},"graceSeconds":10}"#
    );
    assert_eq!(
        out.metadata.labels.as_ref().unwrap()[CONTROLLER_REVISION_HASH],
        "cs-2"
    );
    assert_eq!(
        check_update_completed(&out),
        Err("still in grace period of in-place update".into())
    );

    // refresh: 3.5s later → requeue after 7s (rounded up)
    let a = refresh(
        &out,
        &TemplateHashRevisionAdapter::default(),
        ts("2026-03-04T05:06:10.5Z"),
    )
    .unwrap();
    assert_eq!(a, RefreshAction::Wait(Duration::from_secs(7)));
    let a = refresh(
        &out,
        &TemplateHashRevisionAdapter::default(),
        ts("2026-03-04T05:06:16Z"),
    )
    .unwrap();
    assert_eq!(a, RefreshAction::Wait(Duration::from_secs(1)));
    // 10s later → the images are patched and the grace annotation dropped
    let later = ts("2026-03-04T05:06:17Z");
    let RefreshAction::UpdatePod(done) =
        refresh(&out, &TemplateHashRevisionAdapter::default(), later).unwrap()
    else {
        panic!("expected an update")
    };
    assert_eq!(image_of(&done, "main"), "nginx:2");
    let ann = done.metadata.annotations.as_ref().unwrap();
    assert!(!ann.contains_key(keys::IN_PLACE_UPDATE_GRACE));
    let state = state_of(&done);
    assert_eq!(
        state.update_timestamp,
        Time(now()),
        "update timestamp stays the start time"
    );
    assert_eq!(state.last_container_statuses["main"].image_id, "id1");
    assert_eq!(state.container_batches_record[0].timestamp, Time(later));
    assert!(check_update_completed(&done).is_err());
}

#[test]
fn grace_spec_of_another_revision_is_dropped() {
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    let out = prepare_update(
        &pod,
        &image_spec("cs-2", &[("main", "nginx:2")], 10),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    let mut moved = out.clone();
    moved
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(CONTROLLER_REVISION_HASH.into(), "cs-3".into());
    let RefreshAction::UpdatePod(p) = refresh(&moved, &DefaultRevisionAdapter, now()).unwrap()
    else {
        panic!("expected an update")
    };
    assert!(grace_annotation(&p).is_none());
    assert_eq!(image_of(&p, "main"), "nginx:1");
    // CloneSet adapter compares short hashes: `3` label vs `cs-3` spec is the same revision
    let mut short = prepare_update(
        &pod,
        &image_spec("cs-3", &[("main", "nginx:3")], 10),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    short
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(CONTROLLER_REVISION_HASH.into(), "3".into());
    assert!(matches!(
        refresh(&short, &TemplateHashRevisionAdapter::default(), now()).unwrap(),
        RefreshAction::Wait(_)
    ));
}

#[test]
fn malformed_annotations_are_errors() {
    let mut pod = running_pod(&[("main", "nginx:1", "id1")]);
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_GRACE, "{}".into());
    assert!(matches!(
        refresh(&pod, &DefaultRevisionAdapter, now()),
        Err(InPlaceError::MissingState)
    ));
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_GRACE, "nope".into());
    assert!(matches!(
        refresh(&pod, &DefaultRevisionAdapter, now()),
        Err(InPlaceError::InvalidAnnotation {
            key: keys::IN_PLACE_UPDATE_GRACE,
            ..
        })
    ));
    let mut pod = running_pod(&[("main", "nginx:1", "id1")]);
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_STATE, "nope".into());
    assert!(refresh(&pod, &DefaultRevisionAdapter, now()).is_err());
    assert!(check_update_completed(&pod).is_err());
    let spec = UpdateSpec {
        meta_data_patch: Some(json!("x")),
        ..image_spec("r", &[], 0)
    };
    assert!(matches!(
        prepare_update(&running_pod(&[]), &spec, &DefaultRevisionAdapter, now()),
        Err(InPlaceError::MetadataPatch(_))
    ));
}

#[test]
fn legacy_state_key_is_read() {
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    let out = prepare_update(
        &pod,
        &image_spec("cs-2", &[("main", "nginx:2")], 0),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    let mut legacy = out.clone();
    let v = legacy
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(keys::IN_PLACE_UPDATE_STATE)
        .unwrap();
    set_annotation(&mut legacy, keys::IN_PLACE_UPDATE_STATE_OLD, v);
    assert_eq!(state_of(&legacy), state_of(&out));
}

// ------------------------------------------------------------------------------------------
// completion
// ------------------------------------------------------------------------------------------

#[test]
fn completion_by_image_id_table() {
    let base = running_pod(&[("main", "nginx", "id-old")]);
    let updated = prepare_update(
        &base,
        &image_spec("cs-2", &[("main", "nginx:2")], 0),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    // (status image, status imageID, spec image override, expected)
    type Case = (
        &'static str,
        &'static str,
        Option<&'static str>,
        Result<(), String>,
    );
    let cases: Vec<Case> = vec![
        (
            "nginx",
            "id-old",
            None,
            Err("container main imageID not changed".into()),
        ),
        ("nginx:2", "id-new", None, Ok(())),
        ("whatever", "id-new", None, Ok(())),
        // same image ID (tag points to the same digest) but the status reports the new image
        ("nginx:2", "id-old", None, Ok(())),
        // untagged spec image: compared with ":latest" appended
        ("nginx:latest", "id-old", Some("nginx"), Ok(())),
        (
            "nginx",
            "id-old",
            Some("nginx"),
            Err("container main imageID not changed".into()),
        ),
        // registry with port but no tag: no ":latest" appended
        ("reg:5000/nginx", "id-old", Some("reg:5000/nginx"), Ok(())),
    ];
    for (i, (img, id, spec_img, want)) in cases.into_iter().enumerate() {
        let mut p = updated.clone();
        if let Some(s) = spec_img {
            p.spec.as_mut().unwrap().containers[0].image = Some(s.into());
        }
        let cs = &mut p
            .status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[0];
        cs.image = img.into();
        cs.image_id = id.into();
        assert_eq!(check_update_completed(&p), want, "case {i}");
    }
    // status of the container missing
    let mut p = updated.clone();
    p.status.as_mut().unwrap().container_statuses = Some(vec![]);
    assert_eq!(
        check_update_completed(&p),
        Err(r#"not found statuses of containers {"main"}"#.into())
    );
    // never updated in place
    assert_eq!(check_update_completed(&base), Ok(()));
}

#[test]
fn completion_by_runtime_plain_hash() {
    let base = running_pod(&[("main", "nginx:1", "id-old")]);
    let mut p = prepare_update(
        &base,
        &image_spec("cs-2", &[("main", "nginx:2")], 0),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    let c = podutil::get_container(&p, "main").unwrap().clone();
    let meta = |hash: u64, id: &str| {
        serde_json::to_string(&RuntimeContainerMetaSet {
            containers: vec![RuntimeContainerMeta {
                name: "main".into(),
                container_id: id.into(),
                restart_count: 0,
                hashes: RuntimeContainerHashes {
                    plain_hash: hash,
                    extracted_env_from_metadata_hash: 0,
                },
            }],
        })
        .unwrap()
    };
    set_annotation(
        &mut p,
        keys::RUNTIME_CONTAINERS_META,
        meta(plain_container_hash(&c), "containerd://main-1"),
    );
    assert_eq!(
        check_update_completed(&p),
        Ok(()),
        "hash consistent although the imageID did not change"
    );
    set_annotation(
        &mut p,
        keys::RUNTIME_CONTAINERS_META,
        meta(plain_container_hash(&c), "containerd://other"),
    );
    assert!(
        check_update_completed(&p).is_err(),
        "different container id falls back to image IDs"
    );
    set_annotation(
        &mut p,
        keys::RUNTIME_CONTAINERS_META,
        meta(1, "containerd://main-1"),
    );
    assert!(check_update_completed(&p).is_err());
}

// ------------------------------------------------------------------------------------------
// refresh and conditions
// ------------------------------------------------------------------------------------------

#[test]
fn full_flow_single_batch() {
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    let spec = image_spec("cs-2", &[("main", "nginx:2")], 0);
    assert!(needs_unready(&pod, &spec));

    // step 2: status patch
    let patch = not_ready_condition_patch(&pod, now()).unwrap();
    assert_eq!(
        patch,
        json!({"status":{"conditions":[
            {"type":"Ready","status":"False","reason":"ReadinessGatesNotReady",
             "message":"the status of pod readiness gate \"InPlaceUpdateReady\" is not \"True\", but False",
             "lastProbeTime":null,"lastTransitionTime":null,"observedGeneration":null},
            {"type":"InPlaceUpdateReady","status":"False","reason":"StartInPlaceUpdate","message":null,
             "lastProbeTime":null,"lastTransitionTime":NOW,"observedGeneration":null}
        ]}})
    );
    let mut pod = pod;
    set_in_place_update_condition(&mut pod, false, now());
    assert_eq!(
        not_ready_condition_patch(&pod, now()),
        None,
        "already False"
    );
    assert_eq!(
        get_condition(&pod).unwrap().reason.as_deref(),
        Some(REASON_START_IN_PLACE_UPDATE)
    );

    // step 3
    let mut updated =
        prepare_update(&pod, &spec, &TemplateHashRevisionAdapter::default(), now()).unwrap();
    // not done yet
    assert_eq!(
        refresh(&updated, &TemplateHashRevisionAdapter::default(), now()).unwrap(),
        RefreshAction::Nothing
    );
    // kubelet restarts the container
    kubelet_runs_new_images(&mut updated);
    assert_eq!(check_update_completed(&updated), Ok(()));
    let later = ts("2026-03-04T05:07:00Z");
    let RefreshAction::PatchStatus(p) =
        refresh(&updated, &TemplateHashRevisionAdapter::default(), later).unwrap()
    else {
        panic!("expected a status patch")
    };
    assert_eq!(
        p,
        json!({"status":{"conditions":[
            {"type":"InPlaceUpdateReady","status":"True","reason":null,"message":null,
             "lastProbeTime":null,"lastTransitionTime":"2026-03-04T05:07:00Z","observedGeneration":null}
        ]}})
    );
    set_in_place_update_condition(&mut updated, true, later);
    assert_eq!(
        refresh(&updated, &TemplateHashRevisionAdapter::default(), later).unwrap(),
        RefreshAction::Nothing
    );
}

#[test]
fn refresh_initialises_the_condition_of_new_pods() {
    let mut pod = running_pod(&[("main", "nginx:1", "id1")]);
    pod.status.as_mut().unwrap().conditions = Some(vec![]);
    let RefreshAction::PatchStatus(p) = refresh(&pod, &DefaultRevisionAdapter, now()).unwrap()
    else {
        panic!("expected a status patch")
    };
    assert_eq!(p["status"]["conditions"][0]["status"], "True");
    // no gate: nothing
    pod.spec.as_mut().unwrap().readiness_gates = None;
    assert_eq!(
        refresh(&pod, &DefaultRevisionAdapter, now()).unwrap(),
        RefreshAction::Nothing
    );
    assert_eq!(ready_condition_patch(&pod, now()), None);
    // True with a reason counts as not equal, but setting True again changes nothing
    let mut pod = running_pod(&[("main", "nginx:1", "id1")]);
    pod.status.as_mut().unwrap().conditions.as_mut().unwrap()[2].reason = Some("X".into());
    assert_eq!(ready_condition_patch(&pod, now()), None);
}

#[test]
fn container_priority_batches() {
    let mut pod = running_pod(&[
        ("a", "a:1", "ida"),
        ("b", "b:1", "idb"),
        ("c", "c:1", "idc"),
        ("d", "d:1", "idd"),
    ]);
    {
        let cs = &mut pod.spec.as_mut().unwrap().containers;
        cs[0].env = Some(vec![barrier(-1)]);
        cs[1].env = Some(vec![barrier(0)]);
        cs[2].env = Some(vec![barrier(-1)]);
        // d has no priority
    }
    let spec = image_spec(
        "cs-2",
        &[("a", "a:2"), ("b", "b:2"), ("c", "c:2"), ("d", "d:2")],
        0,
    );
    assert!(set_in_place_update_condition(&mut pod, false, now()));
    let adapter = TemplateHashRevisionAdapter::default();
    let mut p = prepare_update(&pod, &spec, &adapter, now()).unwrap();
    assert_eq!(
        [
            image_of(&p, "a"),
            image_of(&p, "b"),
            image_of(&p, "c"),
            image_of(&p, "d")
        ],
        ["a:1", "b:2", "c:1", "d:2"]
    );
    let s = state_of(&p);
    assert_eq!(
        s.next_container_images,
        BTreeMap::from([
            ("a".to_string(), "a:2".to_string()),
            ("c".to_string(), "c:2".to_string())
        ])
    );
    assert_eq!(
        s.pre_check_before_next
            .as_ref()
            .unwrap()
            .containers_required_ready,
        vec!["b", "d"]
    );
    assert_eq!(
        check_update_completed(&p),
        Err("existing containers to in-place update in next batches".into())
    );

    // first batch not running yet: nothing
    assert_eq!(
        refresh(&p, &adapter, now()).unwrap(),
        RefreshAction::Nothing
    );
    kubelet_runs_new_images(&mut p);
    // batch running but b not ready: wait
    p.status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[1]
        .ready = false;
    assert_eq!(
        refresh(&p, &adapter, now()).unwrap(),
        RefreshAction::Nothing
    );
    p.status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[1]
        .ready = true;

    let t2 = ts("2026-03-04T05:08:00Z");
    let RefreshAction::UpdatePod(mut p2) = refresh(&p, &adapter, t2).unwrap() else {
        panic!("next batch expected")
    };
    assert_eq!(
        [
            image_of(&p2, "a"),
            image_of(&p2, "b"),
            image_of(&p2, "c"),
            image_of(&p2, "d")
        ],
        ["a:2", "b:2", "c:2", "d:2"]
    );
    let s2 = state_of(&p2);
    assert!(s2.next_container_images.is_empty());
    assert!(s2.pre_check_before_next.is_none());
    assert_eq!(s2.container_batches_record.len(), 2);
    assert_eq!(s2.container_batches_record[1].containers, vec!["a", "c"]);
    assert_eq!(s2.container_batches_record[1].timestamp, Time(t2));
    assert_eq!(
        s2.last_container_statuses.keys().collect::<Vec<_>>(),
        vec!["a", "b", "c", "d"]
    );
    assert_eq!(
        s2.last_container_statuses["b"].image_id, "idb",
        "first-batch entries are kept"
    );
    assert_eq!(s2.update_timestamp, Time(now()));
    kubelet_runs_new_images(&mut p2);
    assert_eq!(check_update_completed(&p2), Ok(()));
    assert!(matches!(
        refresh(&p2, &adapter, t2).unwrap(),
        RefreshAction::PatchStatus(_)
    ));
}

#[test]
fn shared_metadata_keys_pull_containers_into_the_batch() {
    let mut pod = running_pod(&[
        ("hi", "h:1", "idh"),
        ("lo", "l:1", "idl"),
        ("lo2", "l2:1", "idl2"),
    ]);
    {
        let cs = &mut pod.spec.as_mut().unwrap().containers;
        cs[0].env = Some(vec![barrier(1), env_from("A", "metadata.labels['k']")]);
        cs[1].env = Some(vec![
            barrier(0),
            env_from("B", "metadata.labels['k']"),
            env_from("C", "metadata.annotations['z']"),
        ]);
        cs[2].env = Some(vec![barrier(0), env_from("D", "metadata.annotations['z']")]);
    }
    let meta = |l: &[(&str, &str)], a: &[(&str, &str)]| ObjectMeta {
        labels: (!l.is_empty())
            .then(|| l.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
        annotations: (!a.is_empty())
            .then(|| a.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()),
        ..Default::default()
    };
    let spec = UpdateSpec {
        revision: "cs-2".into(),
        container_ref_metadata: BTreeMap::from([
            ("hi".to_string(), meta(&[("k", "2")], &[])),
            ("lo".to_string(), meta(&[("k", "2")], &[("z", "9")])),
            ("lo2".to_string(), meta(&[], &[("z", "9")])),
        ]),
        update_env_from_metadata: true,
        ..Default::default()
    };
    let out = prepare_update(&pod, &spec, &DefaultRevisionAdapter, now()).unwrap();
    let s = state_of(&out);
    assert!(
        s.next_container_ref_metadata.is_empty(),
        "lo shares k with hi, lo2 shares z with lo"
    );
    assert_eq!(
        s.container_batches_record[0].containers,
        vec!["hi", "lo", "lo2"]
    );
    assert_eq!(out.metadata.labels.as_ref().unwrap()["k"], "2");
    assert_eq!(out.metadata.annotations.as_ref().unwrap()["z"], "9");

    // without sharing, the low-priority container waits for the next batch
    let spec = UpdateSpec {
        container_ref_metadata: BTreeMap::from([
            ("hi".to_string(), meta(&[("k", "2")], &[])),
            ("lo2".to_string(), meta(&[], &[("z", "9")])),
        ]),
        ..spec
    };
    let out = prepare_update(&pod, &spec, &DefaultRevisionAdapter, now()).unwrap();
    let s = state_of(&out);
    assert_eq!(
        s.next_container_ref_metadata.keys().collect::<Vec<_>>(),
        vec!["lo2"]
    );
    assert!(!out.metadata.annotations.as_ref().unwrap().contains_key("z"));
    assert_eq!(
        out.metadata.annotations.as_ref().unwrap()[keys::IN_PLACE_UPDATE_STATE],
        r#"{"revision":"cs-2","updateTimestamp":"2026-03-04T05:06:07Z","lastContainerStatuses":null,"updateEnvFromMetadata":true,"nextContainerRefMetadata":{"lo2":{"creationTimestamp":null,"annotations":{"z":"9"}}},"preCheckBeforeNext":{"containersRequiredReady":["hi"]},"containerBatchesRecord":[{"timestamp":"2026-03-04T05:06:07Z","containers":["hi"]}]}"#
    );
}

#[test]
fn launch_priority_parsing() {
    let mut c = Container {
        name: "c".into(),
        ..Default::default()
    };
    assert_eq!(container_launch_priority(&c), None);
    c.env = Some(vec![barrier(-5)]);
    assert_eq!(container_launch_priority(&c), Some(-5));
    c.env = Some(vec![EnvVar {
        name: keys::CONTAINER_LAUNCH_BARRIER_ENV.into(),
        ..Default::default()
    }]);
    assert_eq!(container_launch_priority(&c), Some(0));
    let mut e = barrier(1);
    e.value_from
        .as_mut()
        .unwrap()
        .config_map_key_ref
        .as_mut()
        .unwrap()
        .key = "px".into();
    c.env = Some(vec![e]);
    assert_eq!(container_launch_priority(&c), Some(0));
}

#[test]
fn readiness_gate_injection_and_helpers() {
    let mut spec = PodSpec::default();
    assert!(inject_readiness_gate(&mut spec));
    assert!(!inject_readiness_gate(&mut spec));
    assert_eq!(
        spec.readiness_gates.unwrap()[0].condition_type,
        "InPlaceUpdateReady"
    );
    assert!(
        UpdateSpec {
            container_resources: BTreeMap::from([("a".into(), Default::default())]),
            ..Default::default()
        }
        .vertical_update_only()
    );
}

#[test]
fn pointer_tokens() {
    assert_eq!(decode_pointer_token("a~1b~0c"), "a/b~c");
    assert_eq!(decode_pointer_token("~01"), "~1");
    assert_eq!(decode_pointer_token("~x~"), "~x~");
    assert_eq!(image_path_index("/spec/containers/12/image"), Some(12));
    assert_eq!(image_path_index("/spec/containers//image"), None);
    assert_eq!(image_path_index("/spec/containers/1/imagePullPolicy"), None);
    assert_eq!(image_path_index("/spec/containers/-1/image"), None);
}

proptest! {
    /// Any set of image changes over any containers is in-place and yields exactly those images;
    /// without priorities one prepare_update applies them all and the kubelet simulation
    /// completes the update.
    #[test]
    fn image_changes_round_trip(changes in proptest::collection::vec(proptest::option::of("[a-z]{1,8}:[0-9]{1,3}"), 1..6)) {
        let names: Vec<String> = (0..changes.len()).map(|i| format!("c{i}")).collect();
        let old_c: Vec<Value> = names.iter().map(|n| container(n, "base:1")).collect();
        let new_c: Vec<Value> = names
            .iter()
            .zip(&changes)
            .map(|(n, ch)| container(n, ch.as_deref().unwrap_or("base:1")))
            .collect();
        let old = rev("cs-1", revision_data(json!({"a":"b"}), json!({}), old_c));
        let new = rev("cs-2", revision_data(json!({"a":"b"}), json!({}), new_c));
        let spec = calculate_update_spec(&old, &new, &opts()).unwrap();
        let expected: BTreeMap<String, String> = names
            .iter()
            .zip(&changes)
            .filter_map(|(n, ch)| ch.as_ref().filter(|c| c.as_str() != "base:1").map(|c| (n.clone(), c.clone())))
            .collect();
        prop_assert_eq!(&spec.container_images, &expected);

        let triples: Vec<(String, String, String)> = names.iter().map(|n| (n.clone(), "base:1".to_string(), format!("id-{n}"))).collect();
        let refs: Vec<(&str, &str, &str)> = triples.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
        let pod = running_pod(&refs);
        let mut out = prepare_update(&pod, &spec, &DefaultRevisionAdapter, now()).unwrap();
        for (n, img) in &expected {
            prop_assert_eq!(image_of(&out, n), img.as_str());
        }
        let state = state_of(&out);
        prop_assert_eq!(state.last_container_statuses.len(), expected.len());
        prop_assert!(state.next_container_images.is_empty());
        if expected.is_empty() {
            prop_assert_eq!(check_update_completed(&out), Ok(()));
        } else {
            prop_assert!(check_update_completed(&out).is_err());
        }
        kubelet_runs_new_images(&mut out);
        prop_assert_eq!(check_update_completed(&out), Ok(()));
    }

    /// The JSON diff is empty exactly for Go-equal documents.
    #[test]
    fn diff_empty_iff_equal(a in arb_json(), b in arb_json()) {
        prop_assert!(jsondiff::create_patch(&a, &a).is_empty());
        prop_assert_eq!(jsondiff::create_patch(&a, &b).is_empty(), jsondiff::go_equal(&a, &b));
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..5).prop_map(|n| json!(n)),
        "[ab]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-c]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn grace_pending_flag() {
    let pod = running_pod(&[("main", "nginx:1", "id1")]);
    assert!(!has_grace_period_pending(&pod));
    let out = prepare_update(
        &pod,
        &image_spec("cs-2", &[("main", "nginx:2")], 5),
        &DefaultRevisionAdapter,
        now(),
    )
    .unwrap();
    assert!(has_grace_period_pending(&out));
    // an empty grace annotation is ignored by refresh (but still blocks completion)
    let mut empty = pod.clone();
    set_annotation(&mut empty, keys::IN_PLACE_UPDATE_GRACE, String::new());
    assert!(!has_grace_period_pending(&empty));
    assert_eq!(
        refresh(&empty, &DefaultRevisionAdapter, now()).unwrap(),
        RefreshAction::Nothing
    );
    assert!(check_update_completed(&empty).is_err());
}
