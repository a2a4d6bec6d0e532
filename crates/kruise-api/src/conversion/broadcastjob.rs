//! BroadcastJob conversion between `v1alpha1` and `v1beta1`.
//!
//! Both versions have exactly the same fields, so every field maps to the field of the same
//! name in the other version: metadata, spec (`parallelism`, `template`, `completionPolicy`,
//! `paused`, `failurePolicy`) and status (conditions, times, counters, phase) are copied
//! unchanged and only `apiVersion` changes. No annotation is involved and the conversion is
//! lossless in both directions.
//!
//! The spec and completion-policy mappings are public because AdvancedCronJob (BroadcastJob
//! templates) and the image pull jobs (`completionPolicy`) embed the same types.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;

/// Converts a v1alpha1 BroadcastJob to v1beta1.
pub fn to_v1beta1(obj: &a1::BroadcastJob) -> b1::BroadcastJob {
    b1::BroadcastJob {
        metadata: obj.metadata.clone(),
        spec: spec_to_v1beta1(&obj.spec),
        status: obj.status.as_ref().map(status_to_v1beta1),
    }
}

/// Converts a v1beta1 BroadcastJob to v1alpha1.
pub fn to_v1alpha1(obj: &b1::BroadcastJob) -> a1::BroadcastJob {
    a1::BroadcastJob {
        metadata: obj.metadata.clone(),
        spec: spec_to_v1alpha1(&obj.spec),
        status: obj.status.as_ref().map(status_to_v1alpha1),
    }
}

/// Maps a v1alpha1 BroadcastJob spec to v1beta1 (field by field).
pub fn spec_to_v1beta1(spec: &a1::BroadcastJobSpec) -> b1::BroadcastJobSpec {
    b1::BroadcastJobSpec {
        parallelism: spec.parallelism.clone(),
        template: spec.template.clone(),
        completion_policy: spec
            .completion_policy
            .as_ref()
            .map(completion_policy_to_v1beta1),
        paused: spec.paused,
        failure_policy: spec.failure_policy.as_ref().map(|f| b1::FailurePolicy {
            type_: f.type_.clone(),
            restart_limit: f.restart_limit,
        }),
    }
}

/// Maps a v1beta1 BroadcastJob spec to v1alpha1 (field by field).
pub fn spec_to_v1alpha1(spec: &b1::BroadcastJobSpec) -> a1::BroadcastJobSpec {
    a1::BroadcastJobSpec {
        parallelism: spec.parallelism.clone(),
        template: spec.template.clone(),
        completion_policy: spec
            .completion_policy
            .as_ref()
            .map(completion_policy_to_v1alpha1),
        paused: spec.paused,
        failure_policy: spec.failure_policy.as_ref().map(|f| a1::FailurePolicy {
            type_: f.type_.clone(),
            restart_limit: f.restart_limit,
        }),
    }
}

/// Maps a v1alpha1 completion policy to v1beta1 (field by field).
pub fn completion_policy_to_v1beta1(p: &a1::CompletionPolicy) -> b1::CompletionPolicy {
    b1::CompletionPolicy {
        type_: p.type_.clone(),
        active_deadline_seconds: p.active_deadline_seconds,
        ttl_seconds_after_finished: p.ttl_seconds_after_finished,
    }
}

/// Maps a v1beta1 completion policy to v1alpha1 (field by field).
pub fn completion_policy_to_v1alpha1(p: &b1::CompletionPolicy) -> a1::CompletionPolicy {
    a1::CompletionPolicy {
        type_: p.type_.clone(),
        active_deadline_seconds: p.active_deadline_seconds,
        ttl_seconds_after_finished: p.ttl_seconds_after_finished,
    }
}

fn status_to_v1beta1(s: &a1::BroadcastJobStatus) -> b1::BroadcastJobStatus {
    b1::BroadcastJobStatus {
        conditions: s.conditions.as_ref().map(|cs| {
            cs.iter()
                .map(|c| b1::JobCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    last_probe_time: c.last_probe_time.clone(),
                    last_transition_time: c.last_transition_time.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect()
        }),
        start_time: s.start_time.clone(),
        completion_time: s.completion_time.clone(),
        active: s.active,
        succeeded: s.succeeded,
        failed: s.failed,
        desired: s.desired,
        phase: s.phase.clone(),
    }
}

fn status_to_v1alpha1(s: &b1::BroadcastJobStatus) -> a1::BroadcastJobStatus {
    a1::BroadcastJobStatus {
        conditions: s.conditions.as_ref().map(|cs| {
            cs.iter()
                .map(|c| a1::JobCondition {
                    type_: c.type_.clone(),
                    status: c.status.clone(),
                    last_probe_time: c.last_probe_time.clone(),
                    last_transition_time: c.last_transition_time.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect()
        }),
        start_time: s.start_time.clone(),
        completion_time: s.completion_time.clone(),
        active: s.active,
        succeeded: s.succeeded,
        failed: s.failed,
        desired: s.desired,
        phase: s.phase.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use k8s_openapi::jiff::Timestamp;
    use proptest::prelude::*;

    use super::*;

    /// A small pod template with a generated image (shared with the AdvancedCronJob tests).
    pub(crate) fn arb_pod_template() -> impl Strategy<Value = PodTemplateSpec> {
        ("[a-z]{1,8}", proptest::option::of("[a-z]{1,5}")).prop_map(|(image, label)| {
            PodTemplateSpec {
                metadata: label.map(|l| ObjectMeta {
                    labels: Some(BTreeMap::from([("app".to_string(), l)])),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "main".into(),
                        image: Some(image),
                        ..Default::default()
                    }],
                    restart_policy: Some("Never".into()),
                    ..Default::default()
                }),
            }
        })
    }

    pub(crate) fn arb_int_or_string() -> impl Strategy<Value = IntOrString> {
        prop_oneof![
            (0..1000i32).prop_map(IntOrString::Int),
            (0..100u8).prop_map(|p| IntOrString::String(format!("{p}%"))),
        ]
    }

    pub(crate) fn arb_time() -> impl Strategy<Value = Time> {
        (0i64..4_000_000_000).prop_map(|s| Time(Timestamp::from_second(s).unwrap()))
    }

    prop_compose! {
        /// Every field of a v1alpha1 BroadcastJob spec.
        pub(crate) fn arb_spec_v1alpha1()(
            parallelism in proptest::option::of(arb_int_or_string()),
            template in arb_pod_template(),
            completion in proptest::option::of((
                proptest::option::of(prop_oneof![Just("Always".to_string()), Just("Never".to_string())]),
                proptest::option::of(any::<i64>()),
                proptest::option::of(any::<i32>()),
            )),
            paused in proptest::option::of(any::<bool>()),
            failure in proptest::option::of((
                proptest::option::of(prop_oneof![
                    Just("FailFast".to_string()), Just("Continue".to_string()), Just("Pause".to_string())
                ]),
                proptest::option::of(any::<i32>()),
            )),
        ) -> a1::BroadcastJobSpec {
            a1::BroadcastJobSpec {
                parallelism,
                template,
                completion_policy: completion.map(|(type_, active_deadline_seconds, ttl_seconds_after_finished)| {
                    a1::CompletionPolicy { type_, active_deadline_seconds, ttl_seconds_after_finished }
                }),
                paused,
                failure_policy: failure.map(|(type_, restart_limit)| a1::FailurePolicy { type_, restart_limit }),
            }
        }
    }

    prop_compose! {
        fn arb_condition()(
            type_ in prop_oneof![Just("Complete".to_string()), Just("Failed".to_string())],
            status in prop_oneof![Just("True".to_string()), Just("False".to_string())],
            last_probe_time in proptest::option::of(arb_time()),
            last_transition_time in proptest::option::of(arb_time()),
            reason in proptest::option::of("[A-Za-z]{0,8}"),
            message in proptest::option::of(".{0,12}"),
        ) -> a1::JobCondition {
            a1::JobCondition { type_, status, last_probe_time, last_transition_time, reason, message }
        }
    }

    prop_compose! {
        fn arb_status()(
            conditions in proptest::option::of(proptest::collection::vec(arb_condition(), 0..3)),
            start_time in proptest::option::of(arb_time()),
            completion_time in proptest::option::of(arb_time()),
            counters in any::<(i32, i32, i32, i32)>(),
            phase in prop_oneof![Just(String::new()), Just("running".to_string()), Just("completed".to_string())],
        ) -> a1::BroadcastJobStatus {
            a1::BroadcastJobStatus {
                conditions,
                start_time,
                completion_time,
                active: counters.0,
                succeeded: counters.1,
                failed: counters.2,
                desired: counters.3,
                phase,
            }
        }
    }

    prop_compose! {
        fn arb_v1alpha1()(
            name in "[a-z]{1,10}",
            labels in proptest::option::of(proptest::collection::btree_map("[a-z]{1,5}", "[a-z]{0,5}", 1..3)),
            spec in arb_spec_v1alpha1(),
            status in proptest::option::of(arb_status()),
        ) -> a1::BroadcastJob {
            let mut obj = a1::BroadcastJob::new(&name, spec);
            obj.metadata.namespace = Some("default".into());
            obj.metadata.labels = labels;
            obj.status = status;
            obj
        }
    }

    fn sample() -> a1::BroadcastJob {
        serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_broadcastjob.yaml"
        )))
        .unwrap()
    }

    #[test]
    fn fields_are_copied_and_api_version_changes() {
        let a = sample();
        let b = to_v1beta1(&a);
        let mut av = serde_json::to_value(&a).unwrap();
        let mut bv = serde_json::to_value(&b).unwrap();
        assert_eq!(bv["apiVersion"], "apps.kruise.io/v1beta1");
        av.as_object_mut().unwrap().remove("apiVersion");
        bv.as_object_mut().unwrap().remove("apiVersion");
        assert_eq!(av, bv);
        assert_eq!(to_v1alpha1(&b), a);
    }

    #[test]
    fn status_is_carried() {
        let mut a = sample();
        a.status = Some(a1::BroadcastJobStatus {
            active: 2,
            desired: 3,
            phase: a1::broadcastjob_phase::RUNNING.into(),
            conditions: Some(vec![a1::JobCondition {
                type_: a1::job_condition_type::FAILED.into(),
                status: "True".into(),
                reason: Some("BackoffLimitExceeded".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let b = to_v1beta1(&a);
        let s = b.status.as_ref().unwrap();
        assert_eq!((s.active, s.desired, s.phase.as_str()), (2, 3, "running"));
        assert_eq!(s.conditions.as_ref().unwrap()[0].type_, "Failed");
        assert_eq!(to_v1alpha1(&b), a);
    }

    proptest! {
        #[test]
        fn round_trip_from_v1alpha1(a in arb_v1alpha1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&a)), a);
        }

        #[test]
        fn round_trip_from_v1beta1(a in arb_v1alpha1()) {
            // Both versions have the same shape: re-type a generated object as v1beta1.
            let b: b1::BroadcastJob = {
                let mut v = serde_json::to_value(&a).unwrap();
                v["apiVersion"] = "apps.kruise.io/v1beta1".into();
                serde_json::from_value(v).unwrap()
            };
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&b)), b);
        }
    }
}
