//! Defaults of ImageListPullJob (`apps.kruise.io/v1alpha1` and `v1beta1`), as set by OpenKruise
//! v1.9.0's mutating webhook: `completionPolicy.type` `Always` when empty, and `pullPolicy`
//! created if absent with `timeoutSeconds` 600 and `backoffLimit` 3 when unset. Unlike
//! ImagePullJob, `imagePullPolicy` is not defaulted here (each generated ImagePullJob gets it
//! from its own webhook) and no finalizer is added.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::defaults::imagepulljob::{set_defaults_template, set_defaults_template_v1beta1};

/// Applies the admission defaults to a v1alpha1 ImageListPullJob.
pub fn set_defaults_imagelistpulljob(obj: &mut a1::ImageListPullJob) {
    set_defaults_template(&mut obj.spec.image_pull_job_template, false);
}

/// Applies the admission defaults to a v1beta1 ImageListPullJob.
pub fn set_defaults_imagelistpulljob_v1beta1(obj: &mut b1::ImageListPullJob) {
    set_defaults_template_v1beta1(&mut obj.spec.image_pull_job_template, false);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DEFAULTED_SPEC: &str = r#"{"images":["a"],"pullPolicy":{"timeoutSeconds":600,"backoffLimit":3},"completionPolicy":{"type":"Always"}}"#;

    fn spec_a1() -> a1::ImageListPullJobSpec {
        a1::ImageListPullJobSpec {
            images: vec!["a".into()],
            ..Default::default()
        }
    }

    fn spec_b1() -> b1::ImageListPullJobSpec {
        b1::ImageListPullJobSpec {
            images: vec!["a".into()],
            ..Default::default()
        }
    }

    #[test]
    fn imagelistpulljob_empty_object_gets_openkruise_defaults() {
        let mut a = a1::ImageListPullJob::new("l", spec_a1());
        set_defaults_imagelistpulljob(&mut a);
        assert_eq!(serde_json::to_string(&a.spec).unwrap(), DEFAULTED_SPEC);
        assert!(a.metadata.finalizers.is_none());
        let mut b = b1::ImageListPullJob::new("l", spec_b1());
        set_defaults_imagelistpulljob_v1beta1(&mut b);
        assert_eq!(serde_json::to_string(&b.spec).unwrap(), DEFAULTED_SPEC);
    }

    #[test]
    fn imagelistpulljob_explicit_values_kept_and_idempotent() {
        let spec = json!({
            "images": ["a", "b"],
            "pullPolicy": {"timeoutSeconds": 1, "backoffLimit": 9},
            "completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 3},
            "imagePullPolicy": "Always"
        });
        let mut a = a1::ImageListPullJob::new("l", serde_json::from_value(spec.clone()).unwrap());
        set_defaults_imagelistpulljob(&mut a);
        assert_eq!(serde_json::to_value(&a.spec).unwrap(), spec);
        let mut b = b1::ImageListPullJob::new("l", serde_json::from_value(spec.clone()).unwrap());
        set_defaults_imagelistpulljob_v1beta1(&mut b);
        assert_eq!(serde_json::to_value(&b.spec).unwrap(), spec);

        let mut once = a1::ImageListPullJob::new("l", spec_a1());
        set_defaults_imagelistpulljob(&mut once);
        let mut twice = once.clone();
        set_defaults_imagelistpulljob(&mut twice);
        assert_eq!(once, twice);
        let mut once = b1::ImageListPullJob::new("l", spec_b1());
        set_defaults_imagelistpulljob_v1beta1(&mut once);
        let mut twice = once.clone();
        set_defaults_imagelistpulljob_v1beta1(&mut twice);
        assert_eq!(once, twice);
    }
}
