//! Defaults of ImagePullJob (`apps.kruise.io/v1alpha1` and `v1beta1`), as set by OpenKruise
//! v1.9.0's mutating webhook:
//!
//! - `completionPolicy.type`: `Always` when empty,
//! - `pullPolicy`: created if absent, `timeoutSeconds` 600 and `backoffLimit` 3 when unset,
//! - `imagePullPolicy`: `IfNotPresent` when empty,
//! - v1alpha1 only, on creation: the finalizer [`keys::IMAGE_PULL_JOB_PROTECTION_FINALIZER`]
//!   ([`set_defaults_imagepulljob_on_create`]). The webhook passes the same flag to its v1beta1
//!   defaulting function, which ignores it, so v1beta1 objects never get the finalizer.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::keys;

/// Default pull timeout of one node's pull task, in seconds.
pub const DEFAULT_PULL_TIMEOUT_SECONDS: i32 = 600;
/// Default number of retries of one node's pull task.
pub const DEFAULT_PULL_BACKOFF_LIMIT: i32 = 3;

/// Applies the admission defaults to a v1alpha1 ImagePullJob (any operation).
pub fn set_defaults_imagepulljob(obj: &mut a1::ImagePullJob) {
    set_defaults_template(&mut obj.spec.image_pull_job_template, true);
}

/// Applies the defaults of a v1alpha1 ImagePullJob being created: those of
/// [`set_defaults_imagepulljob`] plus the protection finalizer (added once).
pub fn set_defaults_imagepulljob_on_create(obj: &mut a1::ImagePullJob) {
    set_defaults_imagepulljob(obj);
    let finalizers = obj.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers
        .iter()
        .any(|f| f == keys::IMAGE_PULL_JOB_PROTECTION_FINALIZER)
    {
        finalizers.push(keys::IMAGE_PULL_JOB_PROTECTION_FINALIZER.to_string());
    }
}

/// Applies the admission defaults to a v1beta1 ImagePullJob (any operation, creation included).
pub fn set_defaults_imagepulljob_v1beta1(obj: &mut b1::ImagePullJob) {
    set_defaults_template_v1beta1(&mut obj.spec.image_pull_job_template, true);
}

fn is_empty(v: Option<&String>) -> bool {
    v.is_none_or(|s| s.is_empty())
}

/// Defaults of the v1alpha1 template shared with ImageListPullJob; `image_pull_policy` says
/// whether `imagePullPolicy` is defaulted too (it is for ImagePullJob, not for
/// ImageListPullJob).
pub(crate) fn set_defaults_template(t: &mut a1::ImagePullJobTemplate, image_pull_policy: bool) {
    if is_empty(t.completion_policy.type_.as_ref()) {
        t.completion_policy.type_ = Some(a1::completion_policy_type::ALWAYS.to_string());
    }
    let pull = t.pull_policy.get_or_insert_with(Default::default);
    pull.timeout_seconds
        .get_or_insert(DEFAULT_PULL_TIMEOUT_SECONDS);
    pull.backoff_limit.get_or_insert(DEFAULT_PULL_BACKOFF_LIMIT);
    if image_pull_policy && is_empty(t.image_pull_policy.as_ref()) {
        t.image_pull_policy = Some(a1::image_pull_policy::IF_NOT_PRESENT.to_string());
    }
}

/// Defaults of the v1beta1 template shared with ImageListPullJob (see [`set_defaults_template`]).
pub(crate) fn set_defaults_template_v1beta1(
    t: &mut b1::ImagePullJobTemplate,
    image_pull_policy: bool,
) {
    if is_empty(t.completion_policy.type_.as_ref()) {
        t.completion_policy.type_ = Some(b1::completion_policy_type::ALWAYS.to_string());
    }
    let pull = t.pull_policy.get_or_insert_with(Default::default);
    pull.timeout_seconds
        .get_or_insert(DEFAULT_PULL_TIMEOUT_SECONDS);
    pull.backoff_limit.get_or_insert(DEFAULT_PULL_BACKOFF_LIMIT);
    if image_pull_policy && is_empty(t.image_pull_policy.as_ref()) {
        t.image_pull_policy = Some(b1::image_pull_policy::IF_NOT_PRESENT.to_string());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn empty_v1alpha1() -> a1::ImagePullJob {
        a1::ImagePullJob::new(
            "j",
            a1::ImagePullJobSpec {
                image: "nginx".into(),
                ..Default::default()
            },
        )
    }

    fn empty_v1beta1() -> b1::ImagePullJob {
        b1::ImagePullJob::new(
            "j",
            b1::ImagePullJobSpec {
                image: "nginx".into(),
                ..Default::default()
            },
        )
    }

    const DEFAULTED_SPEC: &str = r#"{"image":"nginx","pullPolicy":{"timeoutSeconds":600,"backoffLimit":3},"completionPolicy":{"type":"Always"},"imagePullPolicy":"IfNotPresent"}"#;

    #[test]
    fn imagepulljob_empty_object_gets_openkruise_defaults() {
        let mut a = empty_v1alpha1();
        set_defaults_imagepulljob(&mut a);
        assert_eq!(serde_json::to_string(&a.spec).unwrap(), DEFAULTED_SPEC);
        assert!(a.metadata.finalizers.is_none());

        let mut b = empty_v1beta1();
        set_defaults_imagepulljob_v1beta1(&mut b);
        assert_eq!(serde_json::to_string(&b.spec).unwrap(), DEFAULTED_SPEC);
        assert!(b.metadata.finalizers.is_none());
    }

    #[test]
    fn imagepulljob_on_create_adds_protection_finalizer_once() {
        let mut a = empty_v1alpha1();
        a.metadata.finalizers = Some(vec!["other".into()]);
        set_defaults_imagepulljob_on_create(&mut a);
        set_defaults_imagepulljob_on_create(&mut a);
        assert_eq!(
            a.metadata.finalizers.as_deref().unwrap(),
            [
                "other".to_string(),
                "apps.kruise.io/deletion-protection".to_string()
            ]
        );
    }

    #[test]
    fn imagepulljob_explicit_values_kept_and_idempotent() {
        let spec = json!({
            "image": "nginx",
            "pullPolicy": {"timeoutSeconds": 30, "backoffLimit": 0},
            "completionPolicy": {"type": "Never"},
            "imagePullPolicy": "Always"
        });
        let mut a = empty_v1alpha1();
        a.spec = serde_json::from_value(spec.clone()).unwrap();
        set_defaults_imagepulljob(&mut a);
        assert_eq!(serde_json::to_value(&a.spec).unwrap(), spec);
        let mut b = empty_v1beta1();
        b.spec = serde_json::from_value(spec.clone()).unwrap();
        set_defaults_imagepulljob_v1beta1(&mut b);
        assert_eq!(serde_json::to_value(&b.spec).unwrap(), spec);

        let mut once = empty_v1alpha1();
        set_defaults_imagepulljob_on_create(&mut once);
        let mut twice = once.clone();
        set_defaults_imagepulljob_on_create(&mut twice);
        assert_eq!(once, twice);
        let mut once = empty_v1beta1();
        set_defaults_imagepulljob_v1beta1(&mut once);
        let mut twice = once.clone();
        set_defaults_imagepulljob_v1beta1(&mut twice);
        assert_eq!(once, twice);
    }

    #[test]
    fn imagepulljob_partial_pull_policy_is_completed() {
        let mut a = empty_v1alpha1();
        a.spec.image_pull_job_template.pull_policy = Some(a1::PullPolicy {
            timeout_seconds: Some(10),
            backoff_limit: None,
        });
        a.spec.image_pull_job_template.image_pull_policy = Some(String::new());
        set_defaults_imagepulljob(&mut a);
        let t = &a.spec.image_pull_job_template;
        assert_eq!(t.pull_policy.as_ref().unwrap().timeout_seconds, Some(10));
        assert_eq!(t.pull_policy.as_ref().unwrap().backoff_limit, Some(3));
        assert_eq!(t.image_pull_policy.as_deref(), Some("IfNotPresent"));
    }
}
