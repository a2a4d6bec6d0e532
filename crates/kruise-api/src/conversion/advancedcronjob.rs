//! AdvancedCronJob conversion between `v1alpha1` and `v1beta1`.
//!
//! Mappings:
//!
//! - Metadata, `schedule`, `timeZone`, `startingDeadlineSeconds`, `concurrencyPolicy`, `paused`,
//!   the history limits, `template.jobTemplate` and the status (`type`, `active`,
//!   `lastScheduleTime`) are copied unchanged; `template.broadcastJobTemplate` is copied with
//!   the BroadcastJob spec mapping of [`super::broadcastjob`].
//! - `spec.template.imageListPullJobTemplate` exists only in v1beta1. OpenKruise refuses to
//!   convert an object that uses it; here it travels instead, as JSON, in the v1alpha1
//!   annotation [`crate::keys::CONVERSION_ADVANCEDCRONJOB_IMAGE_LIST_PULL_JOB_TEMPLATE`] and
//!   is restored (and the annotation removed) when converting back. An annotation that does
//!   not parse as a template is left alone as an ordinary annotation.
//!
//! Keys under `conversion.apps.kruise.io/` are reserved for the conversion. An annotation map
//! that becomes empty when the conversion removes its key is dropped (Kubernetes does not
//! distinguish an empty map from an absent one).

use std::collections::BTreeMap;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::keys::CONVERSION_ADVANCEDCRONJOB_IMAGE_LIST_PULL_JOB_TEMPLATE as ILPJ_TEMPLATE;

use super::broadcastjob::{spec_to_v1alpha1 as bcj_to_v1alpha1, spec_to_v1beta1 as bcj_to_v1beta1};

/// Converts a v1alpha1 AdvancedCronJob to v1beta1, restoring an ImageListPullJob template
/// carried in the annotation.
pub fn to_v1beta1(obj: &a1::AdvancedCronJob) -> b1::AdvancedCronJob {
    let mut metadata = obj.metadata.clone();
    let image_list_pull_job_template = metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ILPJ_TEMPLATE))
        .and_then(|raw| serde_json::from_str::<b1::ImageListPullJobTemplateSpec>(raw).ok());
    if image_list_pull_job_template.is_some() {
        remove_key(&mut metadata.annotations, ILPJ_TEMPLATE);
    }
    let s = &obj.spec;
    b1::AdvancedCronJob {
        metadata,
        spec: b1::AdvancedCronJobSpec {
            schedule: s.schedule.clone(),
            time_zone: s.time_zone.clone(),
            starting_deadline_seconds: s.starting_deadline_seconds,
            concurrency_policy: s.concurrency_policy.clone(),
            paused: s.paused,
            successful_jobs_history_limit: s.successful_jobs_history_limit,
            failed_jobs_history_limit: s.failed_jobs_history_limit,
            template: b1::CronJobTemplate {
                job_template: s.template.job_template.clone(),
                broadcast_job_template: s.template.broadcast_job_template.as_ref().map(|t| {
                    b1::BroadcastJobTemplateSpec {
                        metadata: t.metadata.clone(),
                        spec: t.spec.as_ref().map(bcj_to_v1beta1),
                    }
                }),
                image_list_pull_job_template,
            },
        },
        status: obj.status.as_ref().map(|st| b1::AdvancedCronJobStatus {
            type_: st.type_.clone(),
            active: st.active.clone(),
            last_schedule_time: st.last_schedule_time.clone(),
        }),
    }
}

/// Converts a v1beta1 AdvancedCronJob to v1alpha1; an ImageListPullJob template is stored in
/// the annotation.
pub fn to_v1alpha1(obj: &b1::AdvancedCronJob) -> a1::AdvancedCronJob {
    let mut metadata = obj.metadata.clone();
    let s = &obj.spec;
    if let Some(t) = &s.template.image_list_pull_job_template {
        let raw = serde_json::to_string(t)
            .expect("a template has string map keys only and always serializes");
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ILPJ_TEMPLATE.to_string(), raw);
    }
    a1::AdvancedCronJob {
        metadata,
        spec: a1::AdvancedCronJobSpec {
            schedule: s.schedule.clone(),
            time_zone: s.time_zone.clone(),
            starting_deadline_seconds: s.starting_deadline_seconds,
            concurrency_policy: s.concurrency_policy.clone(),
            paused: s.paused,
            successful_jobs_history_limit: s.successful_jobs_history_limit,
            failed_jobs_history_limit: s.failed_jobs_history_limit,
            template: a1::CronJobTemplate {
                job_template: s.template.job_template.clone(),
                broadcast_job_template: s.template.broadcast_job_template.as_ref().map(|t| {
                    a1::BroadcastJobTemplateSpec {
                        metadata: t.metadata.clone(),
                        spec: t.spec.as_ref().map(bcj_to_v1alpha1),
                    }
                }),
            },
        },
        status: obj.status.as_ref().map(|st| a1::AdvancedCronJobStatus {
            type_: st.type_.clone(),
            active: st.active.clone(),
            last_schedule_time: st.last_schedule_time.clone(),
        }),
    }
}

/// Removes `key` from an optional map, dropping the map when it becomes empty.
fn remove_key(map: &mut Option<BTreeMap<String, String>>, key: &str) {
    if let Some(m) = map {
        m.remove(key);
        if m.is_empty() {
            *map = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::conversion::broadcastjob::tests::{arb_pod_template, arb_spec_v1alpha1, arb_time};

    fn sample_v1beta1() -> b1::AdvancedCronJob {
        serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1beta1_advancedcronjob.yaml"
        )))
        .unwrap()
    }

    fn sample_v1alpha1() -> a1::AdvancedCronJob {
        serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_advancedcronjob.yaml"
        )))
        .unwrap()
    }

    #[test]
    fn image_list_pull_job_template_travels_in_an_annotation() {
        let b = sample_v1beta1();
        let a = to_v1alpha1(&b);
        let raw = &a.metadata.annotations.as_ref().unwrap()[ILPJ_TEMPLATE];
        let carried: serde_json::Value = serde_json::from_str(raw).unwrap();
        assert_eq!(
            carried["spec"]["images"],
            json!(["nginx:1.25", "busybox:1.36"])
        );
        assert_eq!(a.spec.template.job_template, None);
        assert_eq!(a.spec.template.broadcast_job_template, None);
        let back = to_v1beta1(&a);
        assert_eq!(back, b);
        assert_eq!(back.metadata.annotations, None);
    }

    #[test]
    fn broadcast_job_template_is_copied() {
        let a = sample_v1alpha1();
        let b = to_v1beta1(&a);
        let mut av = serde_json::to_value(&a).unwrap();
        let mut bv = serde_json::to_value(&b).unwrap();
        av.as_object_mut().unwrap().remove("apiVersion");
        bv.as_object_mut().unwrap().remove("apiVersion");
        assert_eq!(av, bv);
        assert_eq!(to_v1alpha1(&b), a);
    }

    #[test]
    fn unparsable_annotation_is_left_alone() {
        let mut a = sample_v1alpha1();
        a.metadata.annotations = Some(BTreeMap::from([(
            ILPJ_TEMPLATE.to_string(),
            "not json".to_string(),
        )]));
        let b = to_v1beta1(&a);
        assert_eq!(b.spec.template.image_list_pull_job_template, None);
        assert_eq!(b.metadata.annotations, a.metadata.annotations);
        assert_eq!(to_v1alpha1(&b), a);
    }

    #[test]
    fn status_is_copied() {
        let mut b = sample_v1beta1();
        b.status = Some(b1::AdvancedCronJobStatus {
            type_: Some(b1::template_kind::IMAGE_LIST_PULL_JOB.into()),
            active: Some(vec![ObjectReference {
                kind: Some("ImageListPullJob".into()),
                name: Some("sample-advancedcronjob-1".into()),
                ..Default::default()
            }]),
            last_schedule_time: None,
        });
        let a = to_v1alpha1(&b);
        assert_eq!(
            a.status.as_ref().unwrap().type_.as_deref(),
            Some("ImageListPullJob")
        );
        assert_eq!(to_v1beta1(&a), b);
    }

    fn arb_annotations() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
        // Keys outside the reserved `conversion.apps.kruise.io/` prefix.
        proptest::option::of(proptest::collection::btree_map(
            "[a-z]{1,6}(/[a-z]{1,6})?",
            ".{0,8}",
            1..3,
        ))
    }

    fn arb_meta() -> impl Strategy<Value = ObjectMeta> {
        ("[a-z]{1,10}", arb_annotations()).prop_map(|(name, annotations)| ObjectMeta {
            name: Some(name),
            namespace: Some("default".into()),
            annotations,
            ..Default::default()
        })
    }

    fn arb_string_opt() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[a-z]{0,6}")
    }

    prop_compose! {
        fn arb_common()(
            schedule in "[0-9*/ ]{0,12}",
            time_zone in arb_string_opt(),
            starting_deadline_seconds in proptest::option::of(any::<i64>()),
            concurrency_policy in proptest::option::of(prop_oneof![
                Just("Allow".to_string()), Just("Forbid".to_string()), Just("Replace".to_string())
            ]),
            paused in proptest::option::of(any::<bool>()),
            successful in proptest::option::of(any::<i32>()),
            failed in proptest::option::of(any::<i32>()),
        ) -> a1::AdvancedCronJobSpec {
            a1::AdvancedCronJobSpec {
                schedule,
                time_zone,
                starting_deadline_seconds,
                concurrency_policy,
                paused,
                successful_jobs_history_limit: successful,
                failed_jobs_history_limit: failed,
                template: a1::CronJobTemplate::default(),
            }
        }
    }

    fn arb_job_template() -> impl Strategy<Value = JobTemplateSpec> {
        (arb_pod_template(), proptest::option::of(0..10i32)).prop_map(|(template, backoff)| {
            JobTemplateSpec {
                metadata: None,
                spec: Some(JobSpec {
                    template,
                    backoff_limit: backoff,
                    ..Default::default()
                }),
            }
        })
    }

    fn arb_bcj_template() -> impl Strategy<Value = a1::BroadcastJobTemplateSpec> {
        (arb_meta(), proptest::option::of(arb_spec_v1alpha1())).prop_map(|(meta, spec)| {
            a1::BroadcastJobTemplateSpec {
                metadata: Some(meta),
                spec,
            }
        })
    }

    fn arb_ilpj_template() -> impl Strategy<Value = b1::ImageListPullJobTemplateSpec> {
        (
            proptest::collection::vec("[a-z]{1,6}:[0-9]", 1..3),
            proptest::option::of(1..20i32),
            proptest::option::of(proptest::collection::vec("[a-z]{1,6}", 1..3)),
            proptest::option::of(1..1000i32),
            arb_annotations(),
        )
            .prop_map(|(images, parallelism, secrets, timeout, labels)| {
                let mut spec = json!({
                    "images": images,
                    "completionPolicy": {"type": "Always"},
                });
                if let Some(p) = parallelism {
                    spec["parallelism"] = json!(p);
                }
                if let Some(s) = secrets {
                    spec["pullSecrets"] = json!(s);
                }
                if let Some(t) = timeout {
                    spec["pullPolicy"] = json!({"timeoutSeconds": t});
                }
                let mut t = json!({ "spec": spec });
                if let Some(labels) = labels {
                    t["metadata"] = json!({ "labels": labels });
                }
                serde_json::from_value(t).unwrap()
            })
    }

    prop_compose! {
        fn arb_status()(
            type_ in proptest::option::of(prop_oneof![
                Just("Job".to_string()), Just("BroadcastJob".to_string()), Just("ImageListPullJob".to_string())
            ]),
            active in proptest::option::of(proptest::collection::vec("[a-z]{1,6}", 0..3)),
            last_schedule_time in proptest::option::of(arb_time()),
        ) -> a1::AdvancedCronJobStatus {
            a1::AdvancedCronJobStatus {
                type_,
                active: active.map(|names| names.into_iter().map(|n| ObjectReference {
                    kind: Some("Job".into()),
                    name: Some(n),
                    namespace: Some("default".into()),
                    ..Default::default()
                }).collect()),
                last_schedule_time,
            }
        }
    }

    prop_compose! {
        fn arb_v1alpha1()(
            meta in arb_meta(),
            mut spec in arb_common(),
            job in proptest::option::of(arb_job_template()),
            bcj in proptest::option::of(arb_bcj_template()),
            status in proptest::option::of(arb_status()),
        ) -> a1::AdvancedCronJob {
            spec.template = a1::CronJobTemplate { job_template: job, broadcast_job_template: bcj };
            a1::AdvancedCronJob { metadata: meta, spec, status }
        }
    }

    prop_compose! {
        fn arb_v1beta1()(
            a in arb_v1alpha1(),
            ilpj in proptest::option::of(arb_ilpj_template()),
        ) -> b1::AdvancedCronJob {
            // A v1alpha1 object without reserved annotations is converted field by field.
            let mut b = to_v1beta1(&a);
            b.spec.template.image_list_pull_job_template = ilpj;
            b
        }
    }

    proptest! {
        #[test]
        fn round_trip_from_v1alpha1(a in arb_v1alpha1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&a)), a);
        }

        #[test]
        fn round_trip_from_v1beta1(b in arb_v1beta1()) {
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&b)), b);
        }
    }
}
