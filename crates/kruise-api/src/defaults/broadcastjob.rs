//! Defaults of BroadcastJob, as OpenKruise's mutating webhook
//! (`/mutate-apps-kruise-io-broadcastjob`) fills them in: completion type `Always`,
//! unbounded parallelism (`2147483647`) and failure type `FailFast`.
//!
//! OpenKruise defaults a v1alpha1 object by converting it to v1beta1, defaulting that and
//! converting back; [`set_defaults_broadcastjob`] does the same (the versions have the same
//! fields, so the result equals defaulting the v1alpha1 fields directly).
//!
//! Not reproduced here: the pod template defaults (`SetDefaultPodSpec`), which the webhook
//! applies on create and when the template changes unless the `TemplateNoDefaults` gate is on,
//! and the webhook's reset of `status`.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::conversion::broadcastjob::{to_v1alpha1, to_v1beta1};

/// Default of `spec.parallelism`: no limit (the largest `int32`).
pub const DEFAULT_PARALLELISM: i32 = i32::MAX;

/// Fills in the defaults of a v1alpha1 BroadcastJob.
pub fn set_defaults_broadcastjob(obj: &mut a1::BroadcastJob) {
    let mut b = to_v1beta1(obj);
    set_defaults_broadcastjob_v1beta1(&mut b);
    *obj = to_v1alpha1(&b);
}

/// Fills in the defaults of a v1beta1 BroadcastJob.
pub fn set_defaults_broadcastjob_v1beta1(obj: &mut b1::BroadcastJob) {
    set_defaults_spec_v1beta1(&mut obj.spec);
}

/// Fills in the defaults of a v1beta1 BroadcastJob spec.
pub fn set_defaults_spec_v1beta1(spec: &mut b1::BroadcastJobSpec) {
    let completion = spec.completion_policy.get_or_insert_with(Default::default);
    if completion.type_.as_deref().unwrap_or_default().is_empty() {
        completion.type_ = Some(b1::completion_policy_type::ALWAYS.to_string());
    }
    if spec.parallelism.is_none() {
        spec.parallelism = Some(IntOrString::Int(DEFAULT_PARALLELISM));
    }
    let failure = spec.failure_policy.get_or_insert_with(Default::default);
    if failure.type_.as_deref().unwrap_or_default().is_empty() {
        failure.type_ = Some(b1::failure_policy_type::FAIL_FAST.to_string());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn empty_v1beta1() -> b1::BroadcastJob {
        b1::BroadcastJob::new("job", b1::BroadcastJobSpec::default())
    }

    #[test]
    fn broadcastjob_v1beta1_empty_object_gets_openkruise_defaults() {
        let mut obj = empty_v1beta1();
        set_defaults_broadcastjob_v1beta1(&mut obj);
        assert_eq!(
            serde_json::to_value(&obj.spec).unwrap(),
            json!({
                "parallelism": 2147483647,
                "template": {},
                "completionPolicy": {"type": "Always"},
                "failurePolicy": {"type": "FailFast"},
            })
        );
    }

    #[test]
    fn broadcastjob_v1alpha1_empty_object_gets_openkruise_defaults() {
        let mut obj = a1::BroadcastJob::new("job", a1::BroadcastJobSpec::default());
        set_defaults_broadcastjob(&mut obj);
        let mut expected = empty_v1beta1();
        set_defaults_broadcastjob_v1beta1(&mut expected);
        assert_eq!(
            serde_json::to_value(&obj.spec).unwrap(),
            serde_json::to_value(&expected.spec).unwrap()
        );
        assert_eq!(obj.metadata.name.as_deref(), Some("job"));
    }

    #[test]
    fn broadcastjob_explicit_values_are_kept() {
        let mut obj = empty_v1beta1();
        obj.spec.parallelism = Some(IntOrString::String("50%".into()));
        obj.spec.completion_policy = Some(b1::CompletionPolicy {
            type_: Some(b1::completion_policy_type::NEVER.into()),
            active_deadline_seconds: Some(60),
            ttl_seconds_after_finished: None,
        });
        obj.spec.failure_policy = Some(b1::FailurePolicy {
            type_: Some(b1::failure_policy_type::PAUSE.into()),
            restart_limit: Some(2),
        });
        let before = obj.clone();
        set_defaults_broadcastjob_v1beta1(&mut obj);
        assert_eq!(obj, before);
    }

    #[test]
    fn broadcastjob_empty_types_are_defaulted_inside_existing_policies() {
        let mut obj = empty_v1beta1();
        obj.spec.completion_policy = Some(b1::CompletionPolicy {
            type_: Some(String::new()),
            ttl_seconds_after_finished: Some(30),
            ..Default::default()
        });
        obj.spec.failure_policy = Some(b1::FailurePolicy {
            type_: None,
            restart_limit: Some(4),
        });
        set_defaults_broadcastjob_v1beta1(&mut obj);
        let c = obj.spec.completion_policy.as_ref().unwrap();
        assert_eq!(c.type_.as_deref(), Some("Always"));
        assert_eq!(c.ttl_seconds_after_finished, Some(30));
        let f = obj.spec.failure_policy.as_ref().unwrap();
        assert_eq!(
            (f.type_.as_deref(), f.restart_limit),
            (Some("FailFast"), Some(4))
        );
    }

    #[test]
    fn broadcastjob_defaulting_is_idempotent() {
        let mut b = empty_v1beta1();
        set_defaults_broadcastjob_v1beta1(&mut b);
        let once = b.clone();
        set_defaults_broadcastjob_v1beta1(&mut b);
        assert_eq!(b, once);

        let mut a = a1::BroadcastJob::new("job", a1::BroadcastJobSpec::default());
        set_defaults_broadcastjob(&mut a);
        let once = a.clone();
        set_defaults_broadcastjob(&mut a);
        assert_eq!(a, once);
    }
}
