//! ImageListPullJob conversion between `v1alpha1` and `v1beta1`.
//!
//! The two versions have the same fields, so every field maps to the field of the same name:
//! metadata is copied as is, the spec (`images` plus the inlined image-job template, mapped by
//! [`super::imagepulljob::template_to_v1beta1`] / [`super::imagepulljob::template_to_v1alpha1`])
//! and the status (times, counters, `failedImageStatuses`) are copied unchanged; only
//! `apiVersion` changes. No annotation is involved, and absent optional fields stay absent.
//!
//! The spec mapping is public because the v1beta1 AdvancedCronJob embeds ImageListPullJob specs.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::conversion::imagepulljob::{template_to_v1alpha1, template_to_v1beta1};

/// Converts a v1alpha1 ImageListPullJob to v1beta1.
pub fn to_v1beta1(obj: &a1::ImageListPullJob) -> b1::ImageListPullJob {
    b1::ImageListPullJob {
        metadata: obj.metadata.clone(),
        spec: spec_to_v1beta1(&obj.spec),
        status: obj.status.as_ref().map(|s| b1::ImageListPullJobStatus {
            start_time: s.start_time.clone(),
            completion_time: s.completion_time.clone(),
            desired: s.desired,
            active: s.active,
            completed: s.completed,
            succeeded: s.succeeded,
            failed_image_statuses: s.failed_image_statuses.as_ref().map(|l| {
                l.iter()
                    .map(|f| b1::FailedImageStatus {
                        image_pull_job: f.image_pull_job.clone(),
                        name: f.name.clone(),
                        message: f.message.clone(),
                    })
                    .collect()
            }),
        }),
    }
}

/// Converts a v1beta1 ImageListPullJob to v1alpha1.
pub fn to_v1alpha1(obj: &b1::ImageListPullJob) -> a1::ImageListPullJob {
    a1::ImageListPullJob {
        metadata: obj.metadata.clone(),
        spec: spec_to_v1alpha1(&obj.spec),
        status: obj.status.as_ref().map(|s| a1::ImageListPullJobStatus {
            start_time: s.start_time.clone(),
            completion_time: s.completion_time.clone(),
            desired: s.desired,
            active: s.active,
            completed: s.completed,
            succeeded: s.succeeded,
            failed_image_statuses: s.failed_image_statuses.as_ref().map(|l| {
                l.iter()
                    .map(|f| a1::FailedImageStatus {
                        image_pull_job: f.image_pull_job.clone(),
                        name: f.name.clone(),
                        message: f.message.clone(),
                    })
                    .collect()
            }),
        }),
    }
}

/// Maps a v1alpha1 ImageListPullJob spec to v1beta1 (field by field).
pub fn spec_to_v1beta1(spec: &a1::ImageListPullJobSpec) -> b1::ImageListPullJobSpec {
    b1::ImageListPullJobSpec {
        images: spec.images.clone(),
        image_pull_job_template: template_to_v1beta1(&spec.image_pull_job_template),
    }
}

/// Maps a v1beta1 ImageListPullJob spec to v1alpha1 (field by field).
pub fn spec_to_v1alpha1(spec: &b1::ImageListPullJobSpec) -> a1::ImageListPullJobSpec {
    a1::ImageListPullJobSpec {
        images: spec.images.clone(),
        image_pull_job_template: template_to_v1alpha1(&spec.image_pull_job_template),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::conversion::imagepulljob::tests::{arb_metadata, arb_template_v1alpha1, arb_time};

    fn arb_opt_string() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[A-Za-z ]{0,8}")
    }

    prop_compose! {
        fn arb_status_v1alpha1()(
            start_time in proptest::option::of(arb_time()),
            completion_time in proptest::option::of(arb_time()),
            counts in (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()),
            failed in proptest::option::of(proptest::collection::vec(
                (arb_opt_string(), arb_opt_string(), arb_opt_string()), 0..3)),
        ) -> a1::ImageListPullJobStatus {
            a1::ImageListPullJobStatus {
                start_time,
                completion_time,
                desired: counts.0,
                active: counts.1,
                completed: counts.2,
                succeeded: counts.3,
                failed_image_statuses: failed.map(|l| {
                    l.into_iter()
                        .map(|(image_pull_job, name, message)| a1::FailedImageStatus {
                            image_pull_job,
                            name,
                            message,
                        })
                        .collect()
                }),
            }
        }
    }

    prop_compose! {
        fn arb_v1alpha1()(
            metadata in arb_metadata(),
            images in proptest::collection::vec("[a-z/]{1,10}(:[0-9.]{1,4})?", 0..4),
            template in arb_template_v1alpha1(),
            status in proptest::option::of(arb_status_v1alpha1()),
        ) -> a1::ImageListPullJob {
            a1::ImageListPullJob {
                metadata,
                spec: a1::ImageListPullJobSpec { images, image_pull_job_template: template },
                status,
            }
        }
    }

    fn arb_v1beta1() -> impl Strategy<Value = b1::ImageListPullJob> {
        // Same fields in both versions: build the v1beta1 object from the JSON of a generated
        // v1alpha1 one (independent of the mapping under test).
        arb_v1alpha1().prop_map(|a| {
            let mut json = serde_json::to_value(&a).unwrap();
            json["apiVersion"] = "apps.kruise.io/v1beta1".into();
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
        fn json_is_identical_apart_from_api_version(obj in arb_v1alpha1()) {
            let mut a = serde_json::to_value(&obj).unwrap();
            let b = serde_json::to_value(to_v1beta1(&obj)).unwrap();
            a["apiVersion"] = "apps.kruise.io/v1beta1".into();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn every_field_is_carried_over() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "ImageListPullJob",
            "metadata": {"name": "l", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {
                "images": ["nginx:1.25", "busybox"],
                "selector": {"matchLabels": {"k": "v"}},
                "parallelism": "2",
                "pullPolicy": {"timeoutSeconds": 60},
                "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 5},
                "imagePullPolicy": "IfNotPresent"
            },
            "status": {"startTime": "2026-01-01T00:00:00Z", "desired": 2, "active": 1,
                       "completed": 1, "succeeded": 0,
                       "failedImageStatuses": [{"imagePullJob": "l-x", "name": "busybox", "message": "m"}]}
        });
        let b: b1::ImageListPullJob = serde_json::from_value(json.clone()).unwrap();
        let a = to_v1alpha1(&b);
        let mut expected = json;
        expected["apiVersion"] = "apps.kruise.io/v1alpha1".into();
        assert_eq!(serde_json::to_value(&a).unwrap(), expected);
        assert_eq!(to_v1beta1(&a), b);
    }
}
