//! UnitedDeployment admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/uniteddeployment`:
//!
//! - `muniteddeployment.kb.io` ([`mutate`]): `SetDefaultsUnitedDeployment` (history limit 10,
//!   `Manual` update strategy with `manualUpdate: {}`, `minReplicas: 0` for capacity subsets and,
//!   for a `statefulSetTemplate` on create or when the template changed and unless
//!   `TemplateNoDefaults` is on, the pod spec's and the claim templates' defaults), the status
//!   reset, answered as a patch of what Go's `json.Marshal` writes;
//! - `vuniteddeployment.kb.io` ([`validate`]): create and update validation
//!   (`validateUnitedDeployment`, `ValidateUnitedDeploymentUpdate`, code 422 with the field
//!   errors) and deletion protection ([`crate::deletionprotection::validate_united_deployment`]).

mod validation;

use k8s_openapi::api::core::v1::PodSpec;
use kruise_api::apps::v1alpha1::{UnitedDeployment, UnitedDeploymentStatus};
use kruise_api::defaults::podspec::{set_defaults_pod_spec, set_defaults_pvc_template};
use kruise_api::defaults::uniteddeployment::set_defaults_uniteddeployment;
use kruise_engines::revision::go_json::GoType;
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;

pub use validation::{validate_uniteddeployment, validate_uniteddeployment_update};

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

/// OpenKruise's mutating `Handle` on a decoded UnitedDeployment: the defaults (with the
/// StatefulSet template's pod and claim defaults when `inject_template`), then the zero status.
/// Returns the result and whether it differs from `obj`.
pub fn defaulted(obj: &UnitedDeployment, inject_template: bool) -> (UnitedDeployment, bool) {
    let mut after = obj.clone();
    set_defaults_uniteddeployment(&mut after);
    if inject_template
        && let Some(t) = after
            .spec
            .template
            .as_mut()
            .and_then(|t| t.stateful_set_template.as_mut())
    {
        set_defaults_pod_spec(t.spec.template.spec.get_or_insert_with(PodSpec::default));
        for pvc in t.spec.volume_claim_templates.iter_mut().flatten() {
            set_defaults_pvc_template(pvc);
        }
    }
    after.status = Some(UnitedDeploymentStatus::default());
    let mut before = obj.clone();
    before.status = Some(before.status.clone().unwrap_or_default());
    let changed = after != before;
    (after, changed)
}

/// `/mutate-apps-kruise-io-v1alpha1-uniteddeployment`: defaults on create and update (see the
/// module documentation); undecodable objects are refused with code 400.
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    let update = match req.operation {
        Operation::Create => false,
        Operation::Update => true,
        _ => return allow(req),
    };
    let obj: UnitedDeployment = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let no_defaults = ctx.gates.enabled(Feature::TemplateNoDefaults);
    let inject = if no_defaults {
        false
    } else if update {
        match decode_workload_old_object::<UnitedDeployment>(req) {
            Ok(old) => old.is_none_or(|o| o.spec.template != obj.spec.template),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        true
    };
    let (after, changed) = defaulted(&obj, inject);
    if !changed {
        return allow(req);
    }
    patch_response(req, patch_from_raw(req, &after, GoType::UnitedDeployment))
}

/// `/validate-apps-kruise-io-v1alpha1-uniteddeployment`: create and update validation (code
/// 422 with the field errors), deletion protection on DELETE.
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    match req.operation {
        Operation::Create | Operation::Update => {}
        Operation::Delete => {
            return crate::deletionprotection::validate_united_deployment(req, ctx).await;
        }
        Operation::Connect => return allow(req),
    }
    let obj: UnitedDeployment = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let mut errs = validate_uniteddeployment(&obj);
    if req.operation == Operation::Update {
        let old: UnitedDeployment = match decode_workload_old_object(req) {
            Ok(Some(o)) => o,
            Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        errs.extend(validate_uniteddeployment_update(&obj, &old));
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
        None => allow(req),
    }
}

#[cfg(test)]
mod tests;
