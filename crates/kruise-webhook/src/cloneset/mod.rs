//! CloneSet admission: the mutating handler fills in defaults (as a JSON patch) and the
//! validating handler enforces OpenKruise v1.9.0's CloneSet rules on create and update and
//! deletion protection on delete. The decisions are the pure functions of [`validation`] and
//! [`mutation`]; this file only decodes requests, does the API lookups and builds responses.
//!
//! Submodules [`field`], [`common`] and [`support`] are shared with the other workload handlers.

pub mod mutation;
pub mod validation;

use kruise_api::apps::v1alpha1::CloneSet;
use kruise_engines::revision::go_json::GoType;
use kube::core::admission::Operation;

use crate::field::{ErrorList, aggregate};
use crate::support::{
    CODE_BAD_REQUEST, CODE_FORBIDDEN, CODE_UNPROCESSABLE, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

/// `/mutate-apps-kruise-io-v1alpha1-cloneset`: on create and update, answers with the JSON patch
/// that fills in the CloneSet defaults (template defaults on create or when the template changed,
/// unless the `TemplateNoDefaults` gate is on). Undecodable objects are refused with code 400.
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let new: CloneSet = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<CloneSet> = if req.operation == Operation::Update {
        match decode_workload_old_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let after = mutation::defaulted_cloneset(&ctx.gates, &new, old.as_ref());
    patch_response(req, patch_from_raw(req, &after, GoType::CloneSet))
}

/// `/validate-apps-kruise-io-v1alpha1-cloneset`: create and update run every rule of
/// [`validation`] (refused with code 422 and the field errors as message); newly listed
/// `podsToDelete` are looked up when the context has a client; delete is refused with code 403
/// under deletion protection.
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    match req.operation {
        Operation::Create | Operation::Update => {}
        Operation::Delete => return validate_delete(req, ctx),
        Operation::Connect => return allow(req),
    }
    let new: CloneSet = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<CloneSet> = if req.operation == Operation::Update {
        match decode_workload_old_object(req) {
            Ok(Some(o)) => Some(o),
            Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no old object to decode"),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let mut errs = match old.as_ref() {
        Some(o) => validation::validate_cloneset_update(&new, o),
        None => validation::validate_cloneset(&new),
    };
    errs.extend(check_pods_to_delete(req, ctx, &new, old.as_ref()).await);
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
        None => allow(req),
    }
}

fn validate_delete(req: &Request, ctx: &HandlerContext) -> Response {
    let old: CloneSet = match decode_workload_old_object(req) {
        Ok(Some(o)) => o,
        // No old object (very old API servers): nothing to judge.
        Ok(None) => return allow(req),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    match crate::common::validate_workload_deletion(&ctx.gates, &old.metadata, old.spec.replicas) {
        Ok(()) => allow(req),
        Err(msg) => {
            crate::deletionprotection::count_workload_refusal(req, &old.metadata);
            errored(req, CODE_FORBIDDEN, msg)
        }
    }
}

/// Looks up every pod newly named in `scaleStrategy.podsToDelete` and judges it; nothing is
/// checked when the context has no API client.
async fn check_pods_to_delete(
    req: &Request,
    ctx: &HandlerContext,
    new: &CloneSet,
    old: Option<&CloneSet>,
) -> ErrorList {
    let names = validation::pods_to_delete_to_check(
        new.spec.scale_strategy.as_ref(),
        old.and_then(|o| o.spec.scale_strategy.as_ref()),
    );
    let Some(lookup) = &ctx.lookup else {
        return ErrorList::new();
    };
    if names.is_empty() {
        return ErrorList::new();
    }
    let ns = new
        .metadata
        .namespace
        .clone()
        .or_else(|| req.namespace.clone())
        .unwrap_or_default();
    let uid = new.metadata.uid.as_deref();
    let mut errs = ErrorList::new();
    for name in names {
        let found = match lookup.pod(&ns, &name).await {
            Ok(Some(pod)) => Ok(pod),
            // controller-runtime's cache reader: NotFound for the kind, `Pod "x" not found`.
            Ok(None) => Err(format!("Pod \"{name}\" not found")),
            Err(e) => Err(e),
        };
        errs.extend(validation::check_pod_to_delete(
            &name,
            found.as_deref().map_err(Clone::clone),
            uid,
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::testing::request;
    use kruise_runtime::features::{Feature, FeatureGates};
    use serde_json::{Value, json};

    fn ctx(gates: FeatureGates) -> HandlerContext {
        HandlerContext {
            gates,
            lookup: None,
        }
    }

    fn cs(replicas: i64, labels: Value) -> Value {
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo", "namespace": "ns", "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {"metadata": {"labels": {"app": "demo"}},
                             "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}
            }
        })
    }

    #[tokio::test]
    async fn handler_mutate_returns_patch() {
        let req = request(
            "CREATE",
            "clonesets",
            "v1alpha1",
            Some(cs(2, json!({}))),
            None,
        );
        let resp = mutate(&req, &ctx(FeatureGates::default())).await;
        assert!(resp.allowed);
        let patch: json_patch::Patch =
            serde_json::from_slice(resp.patch.as_deref().unwrap()).unwrap();
        let patched = crate::support::apply_patch(&cs(2, json!({})), &patch).unwrap();
        assert_eq!(patched["spec"]["updateStrategy"]["maxUnavailable"], "20%");
    }

    #[tokio::test]
    async fn handler_validate_denies_with_field_message() {
        let mut bad = cs(-1, json!({}));
        bad["spec"]["updateStrategy"] =
            json!({"type": "ReCreate", "partition": 0, "maxUnavailable": 1});
        let req = request("CREATE", "clonesets", "v1alpha1", Some(bad), None);
        let resp = validate(&req, &ctx(FeatureGates::default())).await;
        assert!(!resp.allowed);
        assert_eq!(resp.result.code, 422);
        assert_eq!(
            resp.result.message,
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[tokio::test]
    async fn handler_validate_update_and_delete() {
        let mut ok = cs(
            2,
            json!({"policy.kruise.io/delete-protection": "Cascading"}),
        );
        ok["spec"]["updateStrategy"] =
            json!({"type": "ReCreate", "partition": 0, "maxUnavailable": 1});
        let gates = FeatureGates::default().with(Feature::ResourcesDeletionProtection, true);
        let req = request(
            "UPDATE",
            "clonesets",
            "v1alpha1",
            Some(ok.clone()),
            Some(ok.clone()),
        );
        assert!(validate(&req, &ctx(gates.clone())).await.allowed);
        let req = request("DELETE", "clonesets", "v1alpha1", None, Some(ok));
        let resp = validate(&req, &ctx(gates.clone())).await;
        assert!(!resp.allowed);
        assert_eq!(resp.result.code, 403);
        let req = request("DELETE", "clonesets", "v1alpha1", None, None);
        assert!(validate(&req, &ctx(gates)).await.allowed);
    }

    #[tokio::test]
    async fn undecodable_object_is_refused_naming_the_path() {
        let mut bad = cs(1, json!({}));
        // `app: y` in YAML is the boolean true, which no label may be.
        bad["spec"]["template"]["metadata"]["labels"] = json!({"app": true});
        let req = request("CREATE", "clonesets", "v1alpha1", Some(bad), None);
        let resp = mutate(&req, &ctx(FeatureGates::default())).await;
        assert!(!resp.allowed);
        assert_eq!(resp.result.code, 400);
        // Go's decoder names the map field (not the key) and the map's type.
        assert_eq!(
            resp.result.message,
            "json: cannot unmarshal bool into Go struct field ObjectMeta.spec.template.metadata.labels of type string"
        );
    }
}
