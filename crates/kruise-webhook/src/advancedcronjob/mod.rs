//! AdvancedCronJob admission (`apps.kruise.io` v1alpha1 and v1beta1), as OpenKruise v1.9.0's
//! `pkg/webhook/advancedcronjob`: both handlers work on the v1beta1 form (a v1alpha1 request is
//! converted, `kruise_api::conversion::advancedcronjob`). The mutating handler fills in the
//! defaults (`kruise_api::defaults::advancedcronjob`; the pod template defaults of a Job or
//! BroadcastJob template on create and when the template changed, unless `TemplateNoDefaults`
//! is on), empties `status`, and answers in the request's version without a patch when nothing
//! changed; the validating handler checks create and update (`validation`).

mod validation;

use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::conversion::advancedcronjob::{to_v1alpha1, to_v1beta1};
use kruise_api::defaults::advancedcronjob::set_defaults_advancedcronjob_v1beta1;
use kruise_api::defaults::podspec::set_defaults_pod_spec;
use kruise_engines::revision::go_json::GoType;
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;

pub use validation::{validate_advancedcronjob, validate_advancedcronjob_update};

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

fn is_v1alpha1(req: &Request) -> bool {
    req.resource.version == "v1alpha1"
}

/// The request's object (`old`: its old object) as v1beta1, converted from v1alpha1 where
/// the request is v1alpha1 (OpenKruise's `ConvertTo`).
fn decode_v1beta1(req: &Request, old: bool) -> Result<Option<b1::AdvancedCronJob>, String> {
    if is_v1alpha1(req) {
        let obj: Option<a1::AdvancedCronJob> = if old {
            decode_workload_old_object(req)?
        } else {
            Some(decode_workload_object(req)?)
        };
        Ok(obj.as_ref().map(to_v1beta1))
    } else if old {
        decode_workload_old_object(req)
    } else {
        decode_workload_object(req).map(Some)
    }
}

/// `SetDefaultPodSpec` on the Job or BroadcastJob template's pod spec (Go's value types: an
/// absent spec is defaulted as an empty one).
fn set_template_pod_defaults(obj: &mut b1::AdvancedCronJob) {
    let t = &mut obj.spec.template;
    if let Some(job) = t.job_template.as_mut() {
        let spec = job.spec.get_or_insert_with(Default::default);
        set_defaults_pod_spec(spec.template.spec.get_or_insert_with(Default::default));
    }
    if let Some(bj) = t.broadcast_job_template.as_mut() {
        let spec = bj.spec.get_or_insert_with(Default::default);
        set_defaults_pod_spec(spec.template.spec.get_or_insert_with(Default::default));
    }
}

/// A status equal to Go's zero value reads as absent.
fn normalized(mut obj: b1::AdvancedCronJob) -> b1::AdvancedCronJob {
    if obj.status.as_ref() == Some(&b1::AdvancedCronJobStatus::default()) {
        obj.status = None;
    }
    obj
}

/// `/mutate-apps-kruise-io-advancedcronjob` (see the module documentation).
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj = match decode_v1beta1(req, false) {
        Ok(Some(o)) => o,
        Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let mut inject = false;
    if !ctx.gates.enabled(Feature::TemplateNoDefaults) {
        if req.operation == Operation::Update {
            let old = match decode_v1beta1(req, true) {
                Ok(o) => o.unwrap_or_default(),
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            };
            inject = obj.spec.template != old.spec.template;
        } else {
            inject = true;
        }
    }
    let before = normalized(obj.clone());
    let mut after = obj;
    if inject {
        set_template_pod_defaults(&mut after);
    }
    set_defaults_advancedcronjob_v1beta1(&mut after);
    after.status = None;
    if after == before {
        return allow(req);
    }
    if is_v1alpha1(req) {
        patch_response(
            req,
            patch_from_raw(req, &to_v1alpha1(&after), GoType::AdvancedCronJobV1alpha1),
        )
    } else {
        patch_response(
            req,
            patch_from_raw(req, &after, GoType::AdvancedCronJobV1beta1),
        )
    }
}

/// `/validate-apps-kruise-io-advancedcronjob`: create runs [`validate_advancedcronjob`],
/// update [`validate_advancedcronjob_update`], on the v1beta1 form; denials carry code 422 and
/// the field errors.
pub async fn validate(req: &Request, _ctx: &HandlerContext) -> Response {
    let update = match req.operation {
        Operation::Create => false,
        Operation::Update => true,
        _ => return allow(req),
    };
    let new = match decode_v1beta1(req, false) {
        Ok(Some(o)) => o,
        Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let errs = if update {
        let old = match decode_v1beta1(req, true) {
            Ok(Some(o)) => o,
            Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        validate_advancedcronjob_update(&new, &old)
    } else {
        validate_advancedcronjob(&new)
    };
    match aggregate(&errs) {
        None => allow(req),
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
    }
}
