//! The rules of OpenKruise v1.9.0's `pkg/webhook/broadcastjob/validating`
//! (`validateBroadcastJob`), on the v1beta1 object (a v1alpha1 one is converted first).

use kruise_api::apps::v1beta1::{self as b1, completion_policy_type};
use kruise_api::validation::names::{max_len_error, regex_error};
use serde_json::json;

use crate::common::{validate_object_meta_named, validate_template_with_claims};
use crate::field::{ErrorList, FieldError, Path};

const NAME_MAX_LEN: usize = 63;
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";
const NAME_MSG: &str = "BroadcastJob name must consist of alphanumeric characters or '-'";
/// Pod labels the controller sets, which a template may not preset.
const JOB_NAME_LABEL: &str = "broadcastjob-name";
const CONTROLLER_UID_LABEL: &str = "broadcastjob-controller-uid";

/// OpenKruise `validateBroadcastJobName`: alphanumerics and `-`, at most 63 characters.
pub fn validate_broadcastjob_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

/// OpenKruise `validateBroadcastJob`: the metadata (with [`validate_broadcastjob_name`]), no
/// `ttlSecondsAfterFinished` or `activeDeadlineSeconds` with completion policy `Never`, a
/// (defaulted) template `restartPolicy` of `Never` or `OnFailure`, none of the controller's pod
/// labels preset, and Kubernetes' pod template validation.
pub fn validate_broadcastjob(obj: &b1::BroadcastJob) -> ErrorList {
    let mut errs = validate_object_meta_named(&obj.metadata, validate_broadcastjob_name);
    let sp = Path::new("spec");
    let spec = &obj.spec;
    let completion = spec.completion_policy.clone().unwrap_or_default();
    if completion.type_.as_deref() == Some(completion_policy_type::NEVER) {
        let cp = sp.child("completionPolicy");
        if let Some(ttl) = completion.ttl_seconds_after_finished {
            errs.push(FieldError::invalid(
                cp.child("ttlSecondsAfterFinished"),
                json!(ttl),
                "ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
            ));
        }
        if let Some(ads) = completion.active_deadline_seconds {
            errs.push(FieldError::invalid(
                cp.child("activeDeadlineSeconds"),
                json!(ads),
                "activeDeadlineSeconds can just work with Always CompletionPolicyType",
            ));
        }
    }
    // `ConvertPodTemplateSpec` defaults the template in place before these checks.
    let mut template_spec = spec.template.spec.clone().unwrap_or_default();
    kruise_api::defaults::podspec::set_defaults_pod_spec(&mut template_spec);
    let rp = template_spec.restart_policy.as_deref().unwrap_or("");
    if rp != "OnFailure" && rp != "Never" {
        errs.push(FieldError::invalid(
            sp.child("template").child("spec").child("restartPolicy"),
            json!(rp),
            "pod restartPolicy can only be Never or OnFailure",
        ));
    }
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref());
    if let Some(labels) = labels {
        let preset = |k: &str| labels.get(k).is_some_and(|v| !v.is_empty());
        if preset(JOB_NAME_LABEL) || preset(CONTROLLER_UID_LABEL) {
            errs.push(FieldError::invalid(
                sp.child("template").child("metadata").child("labels"),
                json!(labels),
                format!(
                    "\"{JOB_NAME_LABEL}\" and \"{CONTROLLER_UID_LABEL}\" are not allowed to preset in pod labels"
                ),
            ));
        }
    }
    errs.extend(validate_template_with_claims(
        &spec.template,
        &[],
        &sp.child("template"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(v: serde_json::Value) -> b1::BroadcastJob {
        serde_json::from_value(v).unwrap()
    }

    fn base(spec_extra: serde_json::Value) -> serde_json::Value {
        let mut v = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
            "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}},
                "completionPolicy": {"type": "Always"}}});
        if let (Some(s), Some(e)) = (v["spec"].as_object_mut(), spec_extra.as_object()) {
            for (k, x) in e {
                s.insert(k.clone(), x.clone());
            }
        }
        v
    }

    fn messages(v: serde_json::Value) -> String {
        crate::field::aggregate(&validate_broadcastjob(&job(v))).unwrap_or_default()
    }

    #[test]
    fn a_valid_job_passes() {
        assert_eq!(messages(base(json!({}))), "");
    }

    #[test]
    fn never_forbids_ttl_and_deadline() {
        let m = messages(base(json!({"completionPolicy": {"type": "Never",
            "ttlSecondsAfterFinished": 5, "activeDeadlineSeconds": 7}})));
        assert!(m.contains("spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 5: ttlSecondsAfterFinished can just work with Always CompletionPolicyType"), "{m}");
        assert!(
            m.contains("spec.completionPolicy.activeDeadlineSeconds: Invalid value: 7"),
            "{m}"
        );
    }

    #[test]
    fn restart_policy_defaults_to_always_and_is_refused() {
        let mut v = base(json!({}));
        v["spec"]["template"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("restartPolicy");
        let m = messages(v);
        assert!(m.contains("spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure"), "{m}");
    }

    #[test]
    fn preset_job_labels_and_bad_names_are_refused() {
        let mut v = base(json!({}));
        v["spec"]["template"]["metadata"] = json!({"labels": {"broadcastjob-name": "x"}});
        v["metadata"]["name"] = json!("a.b");
        let m = messages(v);
        assert!(m.contains("are not allowed to preset in pod labels"), "{m}");
        assert!(
            m.contains("BroadcastJob name must consist of alphanumeric characters or '-'"),
            "{m}"
        );
    }
}
