//! The rules of OpenKruise v1.9.0's `pkg/webhook/advancedcronjob/validating` (on the v1beta1
//! form of either version).

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kruise_api::apps::v1beta1 as b1;
use kruise_api::apps::v1beta1::advancedcronjob::concurrency_policy;
use kruise_api::validation::meta::{validate_object_meta_generic, validate_object_meta_update};
use kruise_api::validation::names::{max_len_error, regex_error};
use kruise_api::validation::pod::{PodValidationOptions, validate_pod_template_spec};
use kruise_engines::cron::{self, ParseError};
use serde_json::json;

use crate::common::check_nonnegative;
use crate::field::{ErrorList, FieldError, Path};

/// `AdvancedCronJobNameMaxLen`.
pub const NAME_MAX_LEN: usize = 63;
const NAME_MSG: &str = "AdvancedCronJob name must consist of alphanumeric characters or '-'";
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";
/// `MaxActiveDeadLineSeconds` of an ImageListPullJob template: one day.
pub const MAX_ACTIVE_DEADLINE_SECONDS: i64 = 3600 * 24;

/// `validateAdvancedCronJobName`.
fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !ok {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

/// `validateAdvancedCronJob` (create).
pub fn validate_advancedcronjob(obj: &b1::AdvancedCronJob) -> ErrorList {
    let mut errs =
        validate_object_meta_generic(&obj.metadata, true, validate_name, &Path::new("metadata"));
    errs.extend(validate_spec(&obj.spec, &Path::new("spec")));
    errs
}

/// `validateAdvancedCronJobUpdate`: metadata update rules, the spec, and only `schedule`,
/// `concurrencyPolicy`, the history limits, `startingDeadlineSeconds`, `paused`, `timeZone`
/// and an existing `imageListPullJobTemplate` may change.
pub fn validate_advancedcronjob_update(
    obj: &b1::AdvancedCronJob,
    old: &b1::AdvancedCronJob,
) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&obj.metadata, &old.metadata, &Path::new("metadata"));
    errs.extend(validate_spec(&obj.spec, &Path::new("spec")));
    let mut spec = obj.spec.clone();
    spec.schedule = old.spec.schedule.clone();
    spec.concurrency_policy = old.spec.concurrency_policy.clone();
    spec.successful_jobs_history_limit = old.spec.successful_jobs_history_limit;
    spec.failed_jobs_history_limit = old.spec.failed_jobs_history_limit;
    spec.starting_deadline_seconds = old.spec.starting_deadline_seconds;
    spec.paused = old.spec.paused;
    spec.time_zone = old.spec.time_zone.clone();
    if old.spec.template.image_list_pull_job_template.is_some() {
        spec.template.image_list_pull_job_template =
            old.spec.template.image_list_pull_job_template.clone();
    }
    if spec != old.spec {
        errs.push(FieldError::forbidden(
            Path::new("spec"),
            "updates to advancedcronjob spec for fields other than 'imageListPullJobTemplate', 'schedule', 'concurrencyPolicy', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden",
        ));
    }
    errs
}

/// `validateAdvancedCronJobSpec`.
fn validate_spec(spec: &b1::AdvancedCronJobSpec, p: &Path) -> ErrorList {
    let mut errs = validate_schedule(spec, p);
    errs.extend(validate_template(spec, p));
    if let Some(v) = spec.starting_deadline_seconds {
        errs.extend(check_nonnegative(v, p.child("startingDeadlineSeconds")));
    }
    if let Some(v) = spec.successful_jobs_history_limit {
        errs.extend(check_nonnegative(
            i64::from(v),
            p.child("successfulJobsHistoryLimit"),
        ));
    }
    if let Some(v) = spec.failed_jobs_history_limit {
        errs.extend(check_nonnegative(
            i64::from(v),
            p.child("failedJobsHistoryLimit"),
        ));
    }
    errs.extend(validate_time_zone(
        spec.time_zone.as_deref(),
        &p.child("timeZone"),
    ));
    errs
}

/// `validateAdvancedCronJobSpecSchedule`: robfig/cron's `ParseStandard` verdict (a panic
/// reported as `invalid cron schedule: …`), and not both a zone prefix and `timeZone`.
fn validate_schedule(spec: &b1::AdvancedCronJobSpec, p: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = p.child("schedule");
    let s = spec.schedule.as_str();
    if s.is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            s,
            "schedule cannot be empty, please provide valid cron schedule.",
        ));
    }
    match cron::parse_standard(s) {
        Ok(_) => {}
        Err(ParseError::Invalid(m)) => errs.push(FieldError::invalid(path.clone(), s, m)),
        Err(ParseError::Panic(m)) => errs.push(FieldError::invalid(
            path.clone(),
            s,
            format!("invalid cron schedule: {m}"),
        )),
    }
    if s.contains("TZ") && spec.time_zone.is_some() {
        errs.push(FieldError::invalid(
            path,
            s,
            "cannot use both timeZone field and TZ or CRON_TZ in schedule",
        ));
    }
    errs
}

/// `validateTimeZone`.
fn validate_time_zone(tz: Option<&str>, p: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(tz) = tz else {
        return errs;
    };
    if tz.is_empty() {
        errs.push(FieldError::invalid(
            p.clone(),
            tz,
            "timeZone must be nil or non-empty string",
        ));
        return errs;
    }
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            p.clone(),
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = cron::load_location(tz) {
        errs.push(FieldError::invalid(p.clone(), tz, e));
    }
    errs
}

/// `validateAdvancedCronJobSpecTemplate`: exactly one template; the pod template of a Job or
/// BroadcastJob template is validated as Kubernetes' `ValidatePodTemplateSpec` at
/// `spec.template`.
fn validate_template(spec: &b1::AdvancedCronJobSpec, p: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let t = &spec.template;
    let mut count = 0;
    let opts = PodValidationOptions::openkruise();
    if let Some(job) = &t.job_template {
        count += 1;
        let template = job
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        errs.extend(validate_pod_template_spec(
            &template,
            &p.child("template"),
            &opts,
        ));
    }
    if let Some(bj) = &t.broadcast_job_template {
        count += 1;
        let template: PodTemplateSpec = bj
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        errs.extend(validate_pod_template_spec(
            &template,
            &p.child("template"),
            &opts,
        ));
    }
    if let Some(ilpj) = &t.image_list_pull_job_template {
        count += 1;
        let policy = spec.concurrency_policy.as_deref().unwrap_or("");
        if policy != concurrency_policy::REPLACE && policy != concurrency_policy::FORBID {
            errs.push(FieldError::invalid(
                p.child("spec").child("concurrencyPolicy"),
                policy,
                format!(
                    "concurrencyPolicy should be Replace or Forbid, but current value is: {policy}"
                ),
            ));
        }
        errs.extend(validate_image_list_pull_job_template(
            ilpj,
            &p.child("template").child("imageListPullJobTemplate"),
        ));
    }
    if count == 0 {
        errs.push(FieldError::forbidden(
            p.child("template"),
            "spec must have one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided",
        ));
    } else if count > 1 {
        errs.push(FieldError::forbidden(
            p.child("template"),
            "spec can have only one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided",
        ));
    }
    errs
}

/// `validateImageListPullJobTemplateSpec`: the first failing rule only, as OpenKruise returns
/// at each. Image references are not normalised (`NormalizeImageRef`) here.
fn validate_image_list_pull_job_template(
    t: &b1::ImageListPullJobTemplateSpec,
    p: &Path,
) -> ErrorList {
    let default_spec = b1::ImageListPullJobSpec::default();
    let spec = t.spec.as_ref().unwrap_or(&default_spec);
    let sp = p.child("spec");
    let job = &spec.image_pull_job_template;
    let one = |e: FieldError| vec![e];
    if let Some(sel) = &job.selector {
        let ls = &sel.label_selector;
        if ls.match_labels.is_some() || ls.match_expressions.is_some() {
            if sel.names.is_some() {
                return one(FieldError::invalid(
                    sp.child("selector"),
                    json!(sel),
                    "can not set both names and labelSelector in this spec.selector",
                ));
            }
            if let Some(e) = kruise_api::validation::meta::label_selector_as_selector_error(ls) {
                return one(FieldError::invalid(
                    sp.child("selector").child("labelSelector"),
                    json!(ls),
                    format!("invalid selector: {e}"),
                ));
            }
        }
        if let Some(names) = &sel.names {
            let set: std::collections::BTreeSet<&String> = names.iter().collect();
            if set.len() != names.len() {
                return one(FieldError::invalid(
                    sp.child("selector").child("names"),
                    json!(names),
                    "duplicated name in selector names",
                ));
            }
        }
    }
    if let Some(ps) = &job.pod_selector {
        if job.selector.is_some() {
            return one(FieldError::invalid(
                sp.clone(),
                json!(spec),
                "can not set both selector and podSelector",
            ));
        }
        if let Some(e) =
            kruise_api::validation::meta::label_selector_as_selector_error(&ps.label_selector)
        {
            return one(FieldError::invalid(
                sp.child("podSelector").child("labelSelector"),
                json!(ps.label_selector),
                format!("invalid selector: {e}"),
            ));
        }
    }
    let images = &spec.images;
    // Go's `%#v` of a `[]string`.
    let images_v = || {
        let items: Vec<String> = images.iter().map(|i| format!("{i:?}")).collect();
        format!("[]string{{{}}}", items.join(", "))
    };
    let images_path = sp.child("images");
    if images.is_empty() {
        return one(FieldError::invalid_stringer(
            images_path,
            images_v(),
            "image can not be empty",
        ));
    }
    if images.len() > 255 {
        return one(FieldError::invalid_stringer(
            images_path,
            images_v(),
            "the maximum number of images cannot > 255",
        ));
    }
    let distinct: std::collections::BTreeSet<&String> = images.iter().collect();
    if distinct.len() != images.len() {
        return one(FieldError::invalid_stringer(
            images_path,
            images_v(),
            "images cannot have duplicate values",
        ));
    }
    let cp = &job.completion_policy;
    let cpp = sp.child("completionPolicy");
    match cp.type_.as_deref().unwrap_or("") {
        "Always" => {
            if let Some(ads) = cp.active_deadline_seconds {
                if ads > MAX_ACTIVE_DEADLINE_SECONDS {
                    return one(FieldError::invalid(
                        cpp.child("activeDeadlineSeconds"),
                        ads,
                        format!(
                            "activeDeadlineSeconds must be less than {MAX_ACTIVE_DEADLINE_SECONDS}, current value is: {ads}"
                        ),
                    ));
                }
                if let Some(timeout) = job.pull_policy.as_ref().and_then(|p| p.timeout_seconds)
                    && i64::from(timeout) > ads
                {
                    return one(FieldError::invalid(
                        cpp.child("activeDeadlineSeconds"),
                        ads,
                        format!(
                            "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds({timeout})"
                        ),
                    ));
                }
            }
            if let Some(ttl) = cp.ttl_seconds_after_finished {
                return one(FieldError::invalid(
                    cpp.child("ttlSecondsAfterFinished"),
                    ttl,
                    "ttlSecondsAfterFinished is not supported in advancedCronJob",
                ));
            }
            ErrorList::new()
        }
        other => one(FieldError::invalid(
            cpp.child("type"),
            other,
            format!("completionPolicy should be Always, but current value is: {other}"),
        )),
    }
}
