//! EphemeralJob admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/ephemeraljob/validating` (`/validate-apps-kruise-io-v1alpha1-ephemeraljob`,
//! CREATE and UPDATE; OpenKruise has no mutating webhook for the kind): the template's
//! ephemeral containers are checked with OpenKruise's rules
//! ([`validate_ephemeral_job_containers`], errors under `ephemeralContainers[i]`, as
//! OpenKruise names them). Denials carry code 400 and the aggregated field errors
//! (`admission.Errored(http.StatusBadRequest, ...)`); an object that does not decode is refused
//! with 400 too.

use kruise_api::apps::v1alpha1::EphemeralJob;
use kruise_api::validation::field::Path;
use kruise_api::validation::pod::{PodValidationOptions, validate_ephemeral_job_containers};
use kube::core::admission::Operation;

use crate::field::aggregate;
use crate::support::{CODE_BAD_REQUEST, allow, decode_object, errored};
use crate::{HandlerContext, Request, Response};

/// The options OpenKruise validates with: Kubernetes' zero `PodValidationOptions`, privileged
/// containers allowed (`--allow-privileged`, default true).
fn options() -> PodValidationOptions {
    PodValidationOptions {
        allow_privileged: true,
        ..PodValidationOptions::default()
    }
}

/// `/validate-apps-kruise-io-v1alpha1-ephemeraljob` (see the module docs).
pub async fn validate(req: &Request, _ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj: EphemeralJob = match decode_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let errs = validate_ephemeral_job_containers(
        &obj.spec.template.ephemeral_containers,
        &Path::new("ephemeralContainers"),
        &options(),
    );
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_BAD_REQUEST, msg),
        None => allow(req),
    }
}
