//! NodeImage conversion between `v1alpha1` and `v1beta1`.
//!
//! Mappings:
//!
//! - metadata, the status (counts, `imageStatuses`, `firstSyncStatus`) and every spec field
//!   except one are copied unchanged, field by field; only `apiVersion` changes.
//! - `spec.images[<image>].pullSecrets[i].mode` exists only in v1beta1. OpenKruise's own
//!   conversion drops it; here it travels in the v1alpha1 annotation
//!   [`keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES`] so that a round trip loses nothing. The value is a
//!   JSON object mapping each image that has at least one mode to a list aligned with its
//!   `pullSecrets` (`null` for no mode), e.g. `{"nginx":["batch",null]}`, with keys in sorted
//!   order (the encoding is canonical).
//!   - v1beta1 → v1alpha1 writes the annotation when some mode is set (replacing any value
//!     already there) and otherwise leaves the annotations alone.
//!   - v1alpha1 → v1beta1 restores the modes and removes the annotation (and an annotation map
//!     left empty by that) when the annotation is exactly what the v1alpha1 object would get
//!     back: valid JSON, naming existing images with lists as long as their `pullSecrets`, in
//!     canonical form. Any other value is kept as an ordinary annotation and no mode is set.
//!
//! An empty annotation map and an absent one are treated as the same (as the apiserver does).

use std::collections::BTreeMap;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::conversion::imagepulljob::{sandbox_config_to_v1alpha1, sandbox_config_to_v1beta1};
use crate::keys;

/// Per image, the `mode` of each pull secret (index-aligned with `pullSecrets`).
type Modes = BTreeMap<String, Vec<Option<String>>>;

/// Converts a v1alpha1 NodeImage to v1beta1.
pub fn to_v1beta1(obj: &a1::NodeImage) -> b1::NodeImage {
    let mut metadata = obj.metadata.clone();
    let mut spec = b1::NodeImageSpec {
        images: obj.spec.images.as_ref().map(|images| {
            images
                .iter()
                .map(|(name, image)| (name.clone(), image_spec_to_v1beta1(image)))
                .collect()
        }),
    };
    let restored = metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES))
        .and_then(|text| restore_modes(&spec, text));
    if let Some(restored) = restored {
        spec = restored;
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.remove(keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES);
            if annotations.is_empty() {
                metadata.annotations = None;
            }
        }
    }
    b1::NodeImage {
        metadata,
        spec,
        status: obj.status.as_ref().map(status_to_v1beta1),
    }
}

/// Converts a v1beta1 NodeImage to v1alpha1.
pub fn to_v1alpha1(obj: &b1::NodeImage) -> a1::NodeImage {
    let mut metadata = obj.metadata.clone();
    if let Some(text) = encode_modes(&obj.spec) {
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(
                keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES.to_string(),
                text,
            );
    }
    a1::NodeImage {
        metadata,
        spec: a1::NodeImageSpec {
            images: obj.spec.images.as_ref().map(|images| {
                images
                    .iter()
                    .map(|(name, image)| (name.clone(), image_spec_to_v1alpha1(image)))
                    .collect()
            }),
        },
        status: obj.status.as_ref().map(status_to_v1alpha1),
    }
}

/// The canonical annotation value for the modes of a v1beta1 spec, or `None` if no pull secret
/// has a mode.
fn encode_modes(spec: &b1::NodeImageSpec) -> Option<String> {
    let modes: Modes = spec
        .images
        .iter()
        .flatten()
        .filter_map(|(name, image)| {
            let secrets = image.pull_secrets.as_ref()?;
            secrets.iter().any(|s| s.mode.is_some()).then(|| {
                (
                    name.clone(),
                    secrets.iter().map(|s| s.mode.clone()).collect(),
                )
            })
        })
        .collect();
    (!modes.is_empty()).then(|| serde_json::to_string(&modes).expect("string maps serialize"))
}

/// The spec with the modes of `text` applied, if `text` is a canonical, applicable encoding.
fn restore_modes(spec: &b1::NodeImageSpec, text: &str) -> Option<b1::NodeImageSpec> {
    let modes: Modes = serde_json::from_str(text).ok()?;
    let mut restored = spec.clone();
    for (name, list) in &modes {
        let secrets = restored
            .images
            .as_mut()?
            .get_mut(name)?
            .pull_secrets
            .as_mut()?;
        if secrets.len() != list.len() {
            return None;
        }
        for (secret, mode) in secrets.iter_mut().zip(list) {
            secret.mode = mode.clone();
        }
    }
    (encode_modes(&restored).as_deref() == Some(text)).then_some(restored)
}

fn image_spec_to_v1beta1(s: &a1::ImageSpec) -> b1::ImageSpec {
    b1::ImageSpec {
        pull_secrets: s.pull_secrets.as_ref().map(|l| {
            l.iter()
                .map(|r| b1::ReferenceObject {
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                    mode: None,
                })
                .collect()
        }),
        tags: s
            .tags
            .iter()
            .map(|t| b1::ImageTagSpec {
                tag: t.tag.clone(),
                created_at: t.created_at.clone(),
                pull_policy: t.pull_policy.as_ref().map(|p| b1::ImageTagPullPolicy {
                    timeout_seconds: p.timeout_seconds,
                    backoff_limit: p.backoff_limit,
                    ttl_seconds_after_finished: p.ttl_seconds_after_finished,
                    active_deadline_seconds: p.active_deadline_seconds,
                }),
                owner_references: t.owner_references.clone(),
                version: t.version,
                image_pull_policy: t.image_pull_policy.clone(),
            })
            .collect(),
        sandbox_config: s.sandbox_config.as_ref().map(sandbox_config_to_v1beta1),
    }
}

fn image_spec_to_v1alpha1(s: &b1::ImageSpec) -> a1::ImageSpec {
    a1::ImageSpec {
        pull_secrets: s.pull_secrets.as_ref().map(|l| {
            l.iter()
                .map(|r| a1::ReferenceObject {
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                })
                .collect()
        }),
        tags: s
            .tags
            .iter()
            .map(|t| a1::ImageTagSpec {
                tag: t.tag.clone(),
                created_at: t.created_at.clone(),
                pull_policy: t.pull_policy.as_ref().map(|p| a1::ImageTagPullPolicy {
                    timeout_seconds: p.timeout_seconds,
                    backoff_limit: p.backoff_limit,
                    ttl_seconds_after_finished: p.ttl_seconds_after_finished,
                    active_deadline_seconds: p.active_deadline_seconds,
                }),
                owner_references: t.owner_references.clone(),
                version: t.version,
                image_pull_policy: t.image_pull_policy.clone(),
            })
            .collect(),
        sandbox_config: s.sandbox_config.as_ref().map(sandbox_config_to_v1alpha1),
    }
}

fn status_to_v1beta1(s: &a1::NodeImageStatus) -> b1::NodeImageStatus {
    b1::NodeImageStatus {
        desired: s.desired,
        succeeded: s.succeeded,
        failed: s.failed,
        pulling: s.pulling,
        waiting: s.waiting,
        image_statuses: s.image_statuses.as_ref().map(|m| {
            m.iter()
                .map(|(name, st)| {
                    let tags = st
                        .tags
                        .iter()
                        .map(|t| b1::ImageTagStatus {
                            tag: t.tag.clone(),
                            phase: t.phase.clone(),
                            progress: t.progress,
                            start_time: t.start_time.clone(),
                            completion_time: t.completion_time.clone(),
                            version: t.version,
                            image_id: t.image_id.clone(),
                            message: t.message.clone(),
                        })
                        .collect();
                    (name.clone(), b1::ImageStatus { tags })
                })
                .collect()
        }),
        first_sync_status: s.first_sync_status.as_ref().map(|f| b1::SyncStatus {
            sync_at: f.sync_at.clone(),
            status: f.status.clone(),
            message: f.message.clone(),
        }),
    }
}

fn status_to_v1alpha1(s: &b1::NodeImageStatus) -> a1::NodeImageStatus {
    a1::NodeImageStatus {
        desired: s.desired,
        succeeded: s.succeeded,
        failed: s.failed,
        pulling: s.pulling,
        waiting: s.waiting,
        image_statuses: s.image_statuses.as_ref().map(|m| {
            m.iter()
                .map(|(name, st)| {
                    let tags = st
                        .tags
                        .iter()
                        .map(|t| a1::ImageTagStatus {
                            tag: t.tag.clone(),
                            phase: t.phase.clone(),
                            progress: t.progress,
                            start_time: t.start_time.clone(),
                            completion_time: t.completion_time.clone(),
                            version: t.version,
                            image_id: t.image_id.clone(),
                            message: t.message.clone(),
                        })
                        .collect();
                    (name.clone(), a1::ImageStatus { tags })
                })
                .collect()
        }),
        first_sync_status: s.first_sync_status.as_ref().map(|f| a1::SyncStatus {
            sync_at: f.sync_at.clone(),
            status: f.status.clone(),
            message: f.message.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::conversion::imagepulljob::tests::arb_time;

    fn arb_opt_string() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[A-Za-z]{0,6}")
    }

    fn arb_string_map() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-z]{1,6}", "[a-z0-9]{0,6}", 0..3)
    }

    /// Metadata whose annotation map, when present, is not empty and never holds the
    /// conversion annotation (an empty map and an absent one are the same to the apiserver).
    fn arb_metadata() -> impl Strategy<Value = ObjectMeta> {
        (
            "[a-z0-9-]{1,10}",
            proptest::option::of(arb_string_map()),
            proptest::option::of(proptest::collection::btree_map(
                "[a-z./]{1,8}",
                "[a-z0-9]{0,6}",
                1..3,
            )),
        )
            .prop_map(|(name, labels, annotations)| ObjectMeta {
                name: Some(name),
                labels,
                annotations,
                ..Default::default()
            })
    }

    fn arb_mode() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            2 => Just(None),
            2 => Just(Some("batch".to_string())),
            1 => Just(Some(String::new())),
            1 => "[a-z]{1,5}".prop_map(Some),
        ]
    }

    prop_compose! {
        fn arb_tag()(
            tag in "[a-z0-9.]{1,6}",
            created_at in proptest::option::of(arb_time()),
            pull_policy in proptest::option::of((
                proptest::option::of(any::<i32>()),
                proptest::option::of(any::<i32>()),
                proptest::option::of(any::<i32>()),
                proptest::option::of(any::<i64>()),
            )),
            owners in proptest::option::of(proptest::collection::vec(("[a-z]{1,6}", "[a-z0-9-]{1,8}"), 0..2)),
            version in proptest::option::of(any::<i64>()),
            image_pull_policy in arb_opt_string(),
        ) -> b1::ImageTagSpec {
            b1::ImageTagSpec {
                tag,
                created_at,
                pull_policy: pull_policy.map(|p| b1::ImageTagPullPolicy {
                    timeout_seconds: p.0,
                    backoff_limit: p.1,
                    ttl_seconds_after_finished: p.2,
                    active_deadline_seconds: p.3,
                }),
                owner_references: owners.map(|l| {
                    l.into_iter()
                        .map(|(name, uid)| ObjectReference {
                            api_version: Some("apps.kruise.io/v1beta1".into()),
                            kind: Some("ImagePullJob".into()),
                            name: Some(name),
                            namespace: Some("default".into()),
                            uid: Some(uid),
                            ..Default::default()
                        })
                        .collect()
                }),
                version,
                image_pull_policy,
            }
        }
    }

    prop_compose! {
        fn arb_image_spec()(
            secrets in proptest::option::of(proptest::collection::vec(
                (arb_opt_string(), arb_opt_string(), arb_mode()), 0..3)),
            tags in proptest::collection::vec(arb_tag(), 0..3),
            sandbox in proptest::option::of((
                proptest::option::of(arb_string_map()),
                proptest::option::of(arb_string_map()),
            )),
        ) -> b1::ImageSpec {
            b1::ImageSpec {
                pull_secrets: secrets.map(|l| {
                    l.into_iter()
                        .map(|(namespace, name, mode)| b1::ReferenceObject { namespace, name, mode })
                        .collect()
                }),
                tags,
                sandbox_config: sandbox.map(|(labels, annotations)| b1::SandboxConfig {
                    labels,
                    annotations,
                }),
            }
        }
    }

    prop_compose! {
        fn arb_tag_status()(
            tag in "[a-z0-9.]{1,6}",
            phase in prop_oneof![Just("Waiting"), Just("Pulling"), Just("Succeeded"), Just("Failed")],
            progress in proptest::option::of(0..=100i32),
            start_time in proptest::option::of(arb_time()),
            completion_time in proptest::option::of(arb_time()),
            version in proptest::option::of(any::<i64>()),
            image_id in arb_opt_string(),
            message in arb_opt_string(),
        ) -> b1::ImageTagStatus {
            b1::ImageTagStatus {
                tag,
                phase: phase.to_string(),
                progress,
                start_time,
                completion_time,
                version,
                image_id,
                message,
            }
        }
    }

    prop_compose! {
        fn arb_status()(
            counts in (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()),
            image_statuses in proptest::option::of(proptest::collection::btree_map(
                "[a-z/]{1,8}",
                proptest::collection::vec(arb_tag_status(), 0..3)
                    .prop_map(|tags| b1::ImageStatus { tags }),
                0..3,
            )),
            first in proptest::option::of((proptest::option::of(arb_time()), arb_opt_string(), arb_opt_string())),
        ) -> b1::NodeImageStatus {
            b1::NodeImageStatus {
                desired: counts.0,
                succeeded: counts.1,
                failed: counts.2,
                pulling: counts.3,
                waiting: counts.4,
                image_statuses,
                first_sync_status: first.map(|(sync_at, status, message)| b1::SyncStatus {
                    sync_at,
                    status,
                    message,
                }),
            }
        }
    }

    prop_compose! {
        /// Every field of a v1beta1 NodeImage, including pull-secret modes.
        fn arb_v1beta1()(
            metadata in arb_metadata(),
            images in proptest::option::of(proptest::collection::btree_map("[a-z/]{1,8}", arb_image_spec(), 0..4)),
            status in proptest::option::of(arb_status()),
        ) -> b1::NodeImage {
            b1::NodeImage { metadata, spec: b1::NodeImageSpec { images }, status }
        }
    }

    /// Every field of a v1alpha1 NodeImage, with no conversion annotation (the generated v1beta1
    /// object minus the modes, built from JSON independently of the mapping).
    fn arb_v1alpha1() -> impl Strategy<Value = a1::NodeImage> {
        arb_v1beta1().prop_map(|b| {
            let mut json = serde_json::to_value(&b).unwrap();
            json["apiVersion"] = "apps.kruise.io/v1alpha1".into();
            if let Some(images) = json["spec"]["images"].as_object_mut() {
                for image in images.values_mut() {
                    if let Some(secrets) = image["pullSecrets"].as_array_mut() {
                        for s in secrets {
                            s.as_object_mut().unwrap().remove("mode");
                        }
                    }
                }
            }
            serde_json::from_value(json).unwrap()
        })
    }

    proptest! {
        #[test]
        fn round_trip_from_v1alpha1(obj in arb_v1alpha1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&obj)), obj);
        }

        #[test]
        fn round_trip_from_v1beta1(obj in arb_v1beta1()) {
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&obj)), obj);
        }

        #[test]
        fn round_trip_from_v1alpha1_carrying_modes(obj in arb_v1beta1()) {
            let a = to_v1alpha1(&obj);
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&a)), a);
        }

        #[test]
        fn annotation_present_exactly_when_some_mode_is_set(obj in arb_v1beta1()) {
            let any_mode = obj.spec.images.iter().flatten()
                .flat_map(|(_, i)| i.pull_secrets.iter().flatten())
                .any(|s| s.mode.is_some());
            let a = to_v1alpha1(&obj);
            let has = a.metadata.annotations.as_ref()
                .is_some_and(|m| m.contains_key(keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES));
            prop_assert_eq!(any_mode, has);
        }
    }

    fn sample_v1beta1() -> b1::NodeImage {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "NodeImage",
            "metadata": {"name": "node-1"},
            "spec": {"images": {
                "nginx": {
                    "pullSecrets": [
                        {"namespace": "kruise-daemon-config", "name": "a", "mode": "batch"},
                        {"namespace": "kruise-daemon-config", "name": "b"}
                    ],
                    "tags": [{"tag": "1.25", "createdAt": "2026-01-01T00:00:00Z",
                              "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3,
                                             "ttlSecondsAfterFinished": 300, "activeDeadlineSeconds": 900},
                              "ownerReferences": [{"kind": "ImagePullJob", "name": "j", "uid": "u"}],
                              "version": 2, "imagePullPolicy": "Always"}],
                    "sandboxConfig": {"labels": {"l": "1"}}
                },
                "busybox": {"pullSecrets": [{"name": "c"}], "tags": []}
            }},
            "status": {"desired": 1, "succeeded": 1, "failed": 0, "pulling": 0, "waiting": 0,
                       "imageStatuses": {"nginx": {"tags": [{"tag": "1.25", "phase": "Succeeded",
                           "progress": 100, "version": 2, "imageID": "sha256:1", "message": "ok"}]}},
                       "firstSyncStatus": {"syncAt": "2026-01-01T00:01:00Z", "status": "Succeeded"}}
        }))
        .unwrap()
    }

    #[test]
    fn modes_travel_in_the_annotation() {
        let b = sample_v1beta1();
        let a = to_v1alpha1(&b);
        assert_eq!(
            a.metadata.annotations.as_ref().unwrap()[keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES],
            r#"{"nginx":["batch",null]}"#
        );
        let mut expected = serde_json::to_value(&b).unwrap();
        expected["apiVersion"] = "apps.kruise.io/v1alpha1".into();
        expected["metadata"]["annotations"] =
            json!({keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES: r#"{"nginx":["batch",null]}"#});
        expected["spec"]["images"]["nginx"]["pullSecrets"][0]
            .as_object_mut()
            .unwrap()
            .remove("mode");
        assert_eq!(serde_json::to_value(&a).unwrap(), expected);
        let back = to_v1beta1(&a);
        assert!(back.metadata.annotations.is_none());
        assert_eq!(back, b);
    }

    #[test]
    fn no_modes_no_annotation() {
        let mut b = sample_v1beta1();
        for image in b.spec.images.as_mut().unwrap().values_mut() {
            for s in image.pull_secrets.iter_mut().flatten() {
                s.mode = None;
            }
        }
        let a = to_v1alpha1(&b);
        assert!(a.metadata.annotations.is_none());
        assert_eq!(to_v1beta1(&a), b);
    }

    #[test]
    fn other_annotations_are_kept() {
        let mut b = sample_v1beta1();
        b.metadata.annotations = Some(BTreeMap::from([("x".to_string(), "y".to_string())]));
        let a = to_v1alpha1(&b);
        assert_eq!(a.metadata.annotations.as_ref().unwrap().len(), 2);
        assert_eq!(to_v1beta1(&a), b);
    }

    #[test]
    fn unusable_annotation_is_kept_verbatim() {
        let base = to_v1alpha1(&sample_v1beta1());
        for bad in [
            "not json",
            r#"{"missing":["batch"]}"#,
            r#"{"nginx":["batch"]}"#,
            r#"{"nginx":[null,null]}"#,
            r#"{ "nginx":["batch",null]}"#,
        ] {
            let mut a = base.clone();
            a.metadata.annotations.as_mut().unwrap().insert(
                keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES.to_string(),
                bad.to_string(),
            );
            let b = to_v1beta1(&a);
            assert_eq!(
                b.metadata.annotations.as_ref().unwrap()
                    [keys::CONVERSION_NODEIMAGE_PULL_SECRET_MODES],
                bad
            );
            let modes: Vec<_> = b
                .spec
                .images
                .iter()
                .flatten()
                .flat_map(|(_, i)| i.pull_secrets.iter().flatten())
                .map(|s| s.mode.clone())
                .collect();
            assert!(modes.iter().all(Option::is_none), "{bad}");
            assert_eq!(to_v1alpha1(&b), a, "{bad}");
        }
    }
}
