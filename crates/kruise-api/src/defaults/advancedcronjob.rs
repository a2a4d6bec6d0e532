//! Defaults of AdvancedCronJob, as OpenKruise's mutating webhook
//! (`/mutate-apps-kruise-io-advancedcronjob`) fills them in:
//!
//! - `concurrencyPolicy`: `Allow`, or `Replace` when the template is an ImageListPullJob
//!   (running two image pulls at once is pointless);
//! - `paused`: false; `successfulJobsHistoryLimit`: 3; `failedJobsHistoryLimit`: 1;
//! - for an ImageListPullJob template whose `completionPolicy.type` is empty: that type
//!   `Always`, and (only then, as in OpenKruise) `pullPolicy.timeoutSeconds` 600,
//!   `pullPolicy.backoffLimit` 3 and `imagePullPolicy` `IfNotPresent` where unset.
//!
//! OpenKruise defaults a v1alpha1 object by converting it to v1beta1, defaulting that and
//! converting back; [`set_defaults_advancedcronjob`] does the same, so an ImageListPullJob
//! template carried by the conversion annotation is defaulted too.
//!
//! Not reproduced here: the pod template defaults (`SetDefaultPodSpec` on the Job and
//! BroadcastJob templates), which the webhook applies on create and when the template changes
//! unless the `TemplateNoDefaults` gate is on, and the webhook's reset of `status`.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::conversion::advancedcronjob::{to_v1alpha1, to_v1beta1};

/// Default of `spec.successfulJobsHistoryLimit`.
pub const DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: i32 = 3;
/// Default of `spec.failedJobsHistoryLimit`.
pub const DEFAULT_FAILED_JOBS_HISTORY_LIMIT: i32 = 1;
/// Default `pullPolicy.timeoutSeconds` of an ImageListPullJob template.
pub const DEFAULT_IMAGE_LIST_PULL_TIMEOUT_SECONDS: i32 = 600;
/// Default `pullPolicy.backoffLimit` of an ImageListPullJob template.
pub const DEFAULT_IMAGE_LIST_PULL_BACKOFF_LIMIT: i32 = 3;

fn is_unset(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

/// Fills in the defaults of a v1alpha1 AdvancedCronJob.
pub fn set_defaults_advancedcronjob(obj: &mut a1::AdvancedCronJob) {
    let mut b = to_v1beta1(obj);
    set_defaults_advancedcronjob_v1beta1(&mut b);
    *obj = to_v1alpha1(&b);
}

/// Fills in the defaults of a v1beta1 AdvancedCronJob.
pub fn set_defaults_advancedcronjob_v1beta1(obj: &mut b1::AdvancedCronJob) {
    let spec = &mut obj.spec;
    if let Some(template) = spec.template.image_list_pull_job_template.as_mut() {
        let job = template.spec.get_or_insert_with(Default::default);
        let t = &mut job.image_pull_job_template;
        if is_unset(&t.completion_policy.type_) {
            t.completion_policy.type_ = Some(b1::completion_policy_type::ALWAYS.to_string());
            let pull = t.pull_policy.get_or_insert_with(Default::default);
            pull.timeout_seconds
                .get_or_insert(DEFAULT_IMAGE_LIST_PULL_TIMEOUT_SECONDS);
            pull.backoff_limit
                .get_or_insert(DEFAULT_IMAGE_LIST_PULL_BACKOFF_LIMIT);
            if is_unset(&t.image_pull_policy) {
                t.image_pull_policy = Some(b1::image_pull_policy::IF_NOT_PRESENT.to_string());
            }
        }
    }
    if is_unset(&spec.concurrency_policy) {
        let policy = if spec.template.image_list_pull_job_template.is_some() {
            b1::concurrency_policy::REPLACE
        } else {
            b1::concurrency_policy::ALLOW
        };
        spec.concurrency_policy = Some(policy.to_string());
    }
    spec.paused.get_or_insert(false);
    spec.successful_jobs_history_limit
        .get_or_insert(DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT);
    spec.failed_jobs_history_limit
        .get_or_insert(DEFAULT_FAILED_JOBS_HISTORY_LIMIT);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn v1beta1(template: serde_json::Value) -> b1::AdvancedCronJob {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "AdvancedCronJob",
            "metadata": {"name": "acj", "namespace": "default"},
            "spec": {"schedule": "*/1 * * * *", "template": template},
        }))
        .unwrap()
    }

    #[test]
    fn advancedcronjob_v1beta1_empty_object_gets_openkruise_defaults() {
        let mut obj = v1beta1(json!({"jobTemplate": {}}));
        set_defaults_advancedcronjob_v1beta1(&mut obj);
        assert_eq!(
            serde_json::to_value(&obj.spec).unwrap(),
            json!({
                "schedule": "*/1 * * * *",
                "concurrencyPolicy": "Allow",
                "paused": false,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 1,
                "template": {"jobTemplate": {}},
            })
        );
    }

    #[test]
    fn advancedcronjob_v1beta1_image_list_pull_job_template_defaults() {
        let mut obj = v1beta1(json!({"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1.25"],
            "completionPolicy": {},
        }}}));
        set_defaults_advancedcronjob_v1beta1(&mut obj);
        let spec = serde_json::to_value(&obj.spec).unwrap();
        assert_eq!(spec["concurrencyPolicy"], "Replace");
        assert_eq!(
            spec["template"]["imageListPullJobTemplate"]["spec"],
            json!({
                "images": ["nginx:1.25"],
                "completionPolicy": {"type": "Always"},
                "pullPolicy": {"timeoutSeconds": 600, "backoffLimit": 3},
                "imagePullPolicy": "IfNotPresent",
            })
        );
    }

    #[test]
    fn advancedcronjob_pull_defaults_only_with_empty_completion_type() {
        // OpenKruise only fills the pull settings when it also fills the completion type.
        let mut obj = v1beta1(json!({"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1.25"],
            "completionPolicy": {"type": "Never"},
        }}}));
        set_defaults_advancedcronjob_v1beta1(&mut obj);
        let spec = serde_json::to_value(&obj.spec).unwrap();
        assert_eq!(
            spec["template"]["imageListPullJobTemplate"]["spec"],
            json!({"images": ["nginx:1.25"], "completionPolicy": {"type": "Never"}})
        );
        assert_eq!(spec["concurrencyPolicy"], "Replace");
    }

    #[test]
    fn advancedcronjob_v1alpha1_empty_object_gets_openkruise_defaults() {
        let mut obj: a1::AdvancedCronJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "AdvancedCronJob",
            "metadata": {"name": "acj", "namespace": "default"},
            "spec": {"schedule": "0 * * * *", "template": {"broadcastJobTemplate": {}}},
        }))
        .unwrap();
        set_defaults_advancedcronjob(&mut obj);
        assert_eq!(obj.spec.concurrency_policy.as_deref(), Some("Allow"));
        assert_eq!(obj.spec.paused, Some(false));
        assert_eq!(obj.spec.successful_jobs_history_limit, Some(3));
        assert_eq!(obj.spec.failed_jobs_history_limit, Some(1));
        // The BroadcastJob template itself is left to the BroadcastJob webhook.
        assert_eq!(
            obj.spec.template.broadcast_job_template,
            Some(a1::BroadcastJobTemplateSpec::default())
        );
        assert_eq!(obj.metadata.annotations, None);
    }

    #[test]
    fn advancedcronjob_explicit_values_are_kept() {
        let mut obj = v1beta1(json!({"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1.25"],
            "completionPolicy": {"type": ""},
            "pullPolicy": {"timeoutSeconds": 30, "backoffLimit": 0},
            "imagePullPolicy": "Always",
        }}}));
        obj.spec.concurrency_policy = Some("Forbid".into());
        obj.spec.paused = Some(true);
        obj.spec.successful_jobs_history_limit = Some(0);
        obj.spec.failed_jobs_history_limit = Some(7);
        set_defaults_advancedcronjob_v1beta1(&mut obj);
        let spec = serde_json::to_value(&obj.spec).unwrap();
        assert_eq!(spec["concurrencyPolicy"], "Forbid");
        assert_eq!(spec["paused"], true);
        assert_eq!(spec["successfulJobsHistoryLimit"], 0);
        assert_eq!(spec["failedJobsHistoryLimit"], 7);
        assert_eq!(
            spec["template"]["imageListPullJobTemplate"]["spec"],
            json!({
                "images": ["nginx:1.25"],
                "completionPolicy": {"type": "Always"},
                "pullPolicy": {"timeoutSeconds": 30, "backoffLimit": 0},
                "imagePullPolicy": "Always",
            })
        );
    }

    #[test]
    fn advancedcronjob_defaulting_is_idempotent() {
        let mut b = v1beta1(json!({"imageListPullJobTemplate": {"spec": {
            "images": ["nginx:1.25"], "completionPolicy": {},
        }}}));
        set_defaults_advancedcronjob_v1beta1(&mut b);
        let once = b.clone();
        set_defaults_advancedcronjob_v1beta1(&mut b);
        assert_eq!(b, once);

        let mut a = crate::conversion::advancedcronjob::to_v1alpha1(&b);
        let before = a.clone();
        set_defaults_advancedcronjob(&mut a);
        assert_eq!(a, before);
    }
}
