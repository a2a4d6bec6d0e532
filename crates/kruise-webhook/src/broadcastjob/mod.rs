//! BroadcastJob admission (`apps.kruise.io` v1alpha1 and v1beta1), as OpenKruise v1.9.0's
//! `pkg/webhook/broadcastjob`: the mutating handler converts a v1alpha1 object to v1beta1, fills
//! in the defaults (the pod template's on create and when the template changed, unless the
//! `TemplateNoDefaults` gate is on), resets the status and answers in the request's version
//! (without a patch when nothing changed); the validating handler checks create and update
//! alike.

mod validation;

use k8s_openapi::api::core::v1::PodSpec;
use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::conversion::broadcastjob::{to_v1alpha1, to_v1beta1};
use kruise_api::defaults::broadcastjob::set_defaults_broadcastjob_v1beta1;
use kruise_api::defaults::podspec::set_defaults_pod_spec;
use kruise_engines::revision::go_json::GoType;
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;

pub use validation::{validate_broadcastjob, validate_broadcastjob_name};

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

fn is_v1alpha1(req: &Request) -> bool {
    req.resource.version == "v1alpha1"
}

/// The request's object (and, on update, old object) as v1beta1, whatever its version.
fn decode_v1beta1(
    req: &Request,
    old: bool,
) -> Result<(b1::BroadcastJob, Option<b1::BroadcastJob>), String> {
    if is_v1alpha1(req) {
        let new: a1::BroadcastJob = decode_workload_object(req)?;
        let old = if old {
            decode_workload_old_object::<a1::BroadcastJob>(req)?.map(|o| to_v1beta1(&o))
        } else {
            None
        };
        Ok((to_v1beta1(&new), old))
    } else {
        let new: b1::BroadcastJob = decode_workload_object(req)?;
        let old = if old {
            decode_workload_old_object::<b1::BroadcastJob>(req)?
        } else {
            None
        };
        Ok((new, old))
    }
}

/// OpenKruise's mutating `Handle` on a v1beta1 object: `SetDefaultsBroadcastJob` (with the pod
/// template defaults when `inject_template`), then the status reset to its zero value. Returns
/// the result and whether it differs from `obj` (OpenKruise compares against the decoded
/// object, whose absent status is the zero status).
pub fn defaulted(obj: &b1::BroadcastJob, inject_template: bool) -> (b1::BroadcastJob, bool) {
    let mut after = obj.clone();
    if inject_template {
        set_defaults_pod_spec(
            after
                .spec
                .template
                .spec
                .get_or_insert_with(PodSpec::default),
        );
    }
    set_defaults_broadcastjob_v1beta1(&mut after);
    after.status = Some(b1::BroadcastJobStatus::default());
    let mut before = obj.clone();
    before.status = Some(before.status.unwrap_or_default());
    let changed = after != before;
    (after, changed)
}

/// `/mutate-apps-kruise-io-broadcastjob`: defaults on create and update (see the module
/// documentation); undecodable objects are refused with code 400.
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    let update = match req.operation {
        Operation::Create => false,
        Operation::Update => true,
        _ => return allow(req),
    };
    let (obj, old) = match decode_v1beta1(
        req,
        update && !ctx.gates.enabled(Feature::TemplateNoDefaults),
    ) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let inject = !ctx.gates.enabled(Feature::TemplateNoDefaults)
        && old
            .as_ref()
            .is_none_or(|o| o.spec.template != obj.spec.template);
    let (after, changed) = defaulted(&obj, inject);
    if !changed {
        return allow(req);
    }
    if is_v1alpha1(req) {
        let after = to_v1alpha1(&after);
        patch_response(
            req,
            patch_from_raw(req, &after, GoType::BroadcastJobV1alpha1),
        )
    } else {
        patch_response(
            req,
            patch_from_raw(req, &after, GoType::BroadcastJobV1beta1),
        )
    }
}

/// `/validate-apps-kruise-io-broadcastjob`: create and update run [`validate_broadcastjob`] on
/// the new object (as v1beta1); denials carry the field errors (code 422: OpenKruise answers 500
/// with the same message).
pub async fn validate(req: &Request, _ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let (obj, _) = match decode_v1beta1(req, false) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    match aggregate(&validate_broadcastjob(&obj)) {
        None => allow(req),
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
    }
}
