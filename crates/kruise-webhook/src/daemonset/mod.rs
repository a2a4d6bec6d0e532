//! Advanced DaemonSet admission (`apps.kruise.io` v1alpha1 and v1beta1), as OpenKruise v1.9.0's
//! `pkg/webhook/daemonset`: the mutating handler fills in the defaults in the request's own
//! version (no pod-template defaults for this kind) and answers without a patch when nothing
//! changed; the validating handler checks create and update in the request's version.

mod validation;

use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::defaults::daemonset::{set_defaults_daemonset, set_defaults_daemonset_v1beta1};
use kruise_engines::revision::go_json::GoType;
use kube::core::admission::Operation;

pub use validation::{validate_daemonset, validate_daemonset_update};
use validation::{validate_update_v1alpha1, validate_v1alpha1};

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

fn is_v1alpha1(req: &Request) -> bool {
    req.resource.version == "v1alpha1"
}

/// `/mutate-apps-kruise-io-daemonset`: defaults (`kruise_api::defaults::daemonset`) on create
/// and update; an object the defaults leave unchanged is allowed without a patch.
pub async fn mutate(req: &Request, _ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    if is_v1alpha1(req) {
        let obj: a1::DaemonSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        let mut after = obj.clone();
        set_defaults_daemonset(&mut after);
        if after == obj {
            return allow(req);
        }
        patch_response(req, patch_from_raw(req, &after, GoType::DaemonSetV1alpha1))
    } else {
        let obj: b1::DaemonSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        let mut after = obj.clone();
        set_defaults_daemonset_v1beta1(&mut after);
        if after == obj {
            return allow(req);
        }
        patch_response(req, patch_from_raw(req, &after, GoType::DaemonSetV1beta1))
    }
}

/// `/validate-apps-kruise-io-daemonset`: create runs [`validate_daemonset`], update
/// [`validate_daemonset_update`]; denials carry code 422 and the field errors.
pub async fn validate(req: &Request, _ctx: &HandlerContext) -> Response {
    let update = match req.operation {
        Operation::Create => false,
        Operation::Update => true,
        _ => return allow(req),
    };
    let errs = if is_v1alpha1(req) {
        let new: a1::DaemonSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        if update {
            let Some(old) = (match decode_workload_old_object::<a1::DaemonSet>(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            }) else {
                return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
            };
            validate_update_v1alpha1(&new, &old)
        } else {
            validate_v1alpha1(&new)
        }
    } else {
        let new: b1::DaemonSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        if update {
            let Some(old) = (match decode_workload_old_object::<b1::DaemonSet>(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            }) else {
                return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
            };
            validate_daemonset_update(&new, &old)
        } else {
            validate_daemonset(&new)
        }
    };
    // OpenKruise answers a refused create with code 500 (its validation function returns the
    // errors as an error); kruise-rs answers 422 for create and update alike — the verdict and
    // the message are the same, and a 5xx is kept for failures of the webhook itself.
    match aggregate(&errs) {
        None => allow(req),
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
    }
}
