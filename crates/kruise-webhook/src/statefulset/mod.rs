//! Advanced StatefulSet admission (`apps.kruise.io` v1alpha1 and v1beta1): the mutating handler
//! fills in defaults as a JSON patch in the request's own version; the validating handler
//! converts v1alpha1 objects to v1beta1 and enforces OpenKruise v1.9.0's rules
//! ([`validation`]), plus deletion protection on delete.

pub mod mutation;
pub mod validation;
pub mod volumeclaims;

use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::conversion::statefulset::to_v1beta1;
use kruise_engines::revision::go_json::GoType;
use kube::core::admission::Operation;

use crate::common::validate_workload_deletion;
use crate::field::FieldError;
use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, CODE_FORBIDDEN, CODE_UNPROCESSABLE, allow, decode_workload,
    decode_workload_object, decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};
use kruise_runtime::features::Feature;

fn is_v1alpha1(req: &Request) -> bool {
    req.resource.version == "v1alpha1"
}

/// Mutating webhook for both versions: answers with the patch of the defaults (template
/// defaults on create or when the template changed, unless `TemplateNoDefaults`).
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let update = req.operation == Operation::Update;
    if is_v1alpha1(req) {
        let new: a1::StatefulSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        let old: Option<a1::StatefulSet> = if update {
            match decode_workload_old_object(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            }
        } else {
            None
        };
        let after = mutation::defaulted_v1alpha1(&ctx.gates, &new, old.as_ref());
        patch_response(
            req,
            patch_from_raw(req, &after, GoType::StatefulSetV1alpha1),
        )
    } else {
        let new: b1::StatefulSet = match decode_workload_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        };
        let old: Option<b1::StatefulSet> = if update {
            match decode_workload_old_object(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            }
        } else {
            None
        };
        let after = mutation::defaulted_v1beta1(&ctx.gates, &new, old.as_ref());
        patch_response(req, patch_from_raw(req, &after, GoType::StatefulSetV1beta1))
    }
}

/// Decodes an object of either version into v1beta1.
fn as_v1beta1(req: &Request, obj: &kube::core::DynamicObject) -> Result<b1::StatefulSet, String> {
    if is_v1alpha1(req) {
        decode_workload::<a1::StatefulSet>(obj).map(|o| to_v1beta1(&o))
    } else {
        decode_workload(obj)
    }
}

/// Validating webhook for both versions: create runs [`validation::validate_statefulset`];
/// update adds [`validation::validate_statefulset_update`] and then the in-place-only template
/// rule (all refused with code 422); delete applies deletion protection (code 403).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    match req.operation {
        Operation::Create | Operation::Update | Operation::Delete => {}
        Operation::Connect => return allow(req),
    }
    let old = match req
        .old_object
        .as_ref()
        .map(|o| as_v1beta1(req, o))
        .transpose()
    {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    if req.operation == Operation::Delete {
        let Some(old) = old else { return allow(req) };
        return match validate_workload_deletion(&ctx.gates, &old.metadata, old.spec.replicas) {
            Ok(()) => allow(req),
            Err(msg) => {
                crate::deletionprotection::count_workload_refusal(req, &old.metadata);
                errored(req, CODE_FORBIDDEN, msg)
            }
        };
    }
    let new = match req.object.as_ref().map(|o| as_v1beta1(req, o)) {
        Some(Ok(o)) => o,
        Some(Err(e)) => return errored(req, CODE_BAD_REQUEST, e),
        None => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
    };
    let mut errs = validation::validate_statefulset(&new);
    if req.operation == Operation::Update {
        let Some(old) = old.as_ref() else {
            return errored(req, CODE_BAD_REQUEST, "there is no old object to decode");
        };
        errs.extend(validation::validate_statefulset_update(&new, old));
        if let Some(msg) = aggregate(&errs) {
            return errored(req, CODE_UNPROCESSABLE, msg);
        }
        if ctx.gates.enabled(Feature::StatefulSetAutoResizePVCGate)
            && let Some(err) = check_volume_claim_templates(ctx, &new, old).await
        {
            return errored(req, CODE_UNPROCESSABLE, err.to_string());
        }
        if let Err(msg) = validation::validate_in_place_only_update(&new, old) {
            return errored(req, CODE_UNPROCESSABLE, msg);
        }
        return allow(req);
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
        None => allow(req),
    }
}

/// The `volumeClaimTemplates` update rule ([`volumeclaims`]) with the storage class lookups;
/// the first error, if any. Without an API client the storage classes are not checked.
async fn check_volume_claim_templates(
    ctx: &HandlerContext,
    new: &b1::StatefulSet,
    old: &b1::StatefulSet,
) -> Option<FieldError> {
    use k8s_openapi::api::storage::v1::StorageClass;
    for step in volumeclaims::vct_update_steps(new, old) {
        let (name, storage_class) = match step {
            volumeclaims::VctStep::Error(e) => return Some(e),
            volumeclaims::VctStep::Resized {
                name,
                storage_class,
            } => (name, storage_class),
        };
        let lookup = ctx.lookup.as_ref()?;
        let verdict = match storage_class.as_deref() {
            Some(sc) => {
                let got = lookup.storage_class(sc).await.ok().flatten();
                volumeclaims::check_expansion(&name, Some(sc), got.as_deref().map(Some).ok_or(()))
            }
            None => match lookup.storage_classes().await {
                Err(_) => volumeclaims::check_expansion(&name, None, Err(())),
                Ok(list) => {
                    let items: Vec<StorageClass> = list.iter().map(|c| (**c).clone()).collect();
                    volumeclaims::check_expansion(
                        &name,
                        None,
                        Ok(volumeclaims::default_storage_class(&items)),
                    )
                }
            },
        };
        if verdict.is_some() {
            return verdict;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::{apply_patch, testing::request};
    use kruise_runtime::features::FeatureGates;
    use serde_json::{Value, json};

    fn sts(version: &str) -> Value {
        json!({
            "apiVersion": format!("apps.kruise.io/{version}"), "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}
            }
        })
    }

    fn ctx() -> HandlerContext {
        HandlerContext {
            gates: FeatureGates::default(),
            lookup: None,
        }
    }

    #[tokio::test]
    async fn sts_handler_mutate_then_validate_both_versions() {
        for version in ["v1alpha1", "v1beta1"] {
            let req = request("CREATE", "statefulsets", version, Some(sts(version)), None);
            let resp = mutate(&req, &ctx()).await;
            assert!(resp.allowed, "{version}");
            let patch: json_patch::Patch =
                serde_json::from_slice(resp.patch.as_deref().unwrap()).unwrap();
            let defaulted = apply_patch(&sts(version), &patch).unwrap();
            // Without defaults the object is invalid (podManagementPolicy required) ...
            let req = request("CREATE", "statefulsets", version, Some(sts(version)), None);
            let resp = validate(&req, &ctx()).await;
            assert!(!resp.allowed, "{version}");
            assert!(
                resp.result
                    .message
                    .contains("spec.podManagementPolicy: Required value"),
                "{}",
                resp.result.message
            );
            // ... and valid with them.
            let req = request("CREATE", "statefulsets", version, Some(defaulted), None);
            let resp = validate(&req, &ctx()).await;
            assert!(resp.allowed, "{version}: {}", resp.result.message);
        }
    }
}
