//! Deletion protection of built-in kinds (OpenKruise v1.9.0 `pkg/webhook/util/deletionprotection`
//! and the handlers of `pkg/webhook/{builtinworkloads,namespace,customresourcedefinition,service,
//! ingress}`), with gate `ResourcesDeletionProtection`: an object labelled
//! `policy.kruise.io/delete-protection: Always` cannot be deleted; `Cascading` forbids deleting
//! a Deployment, ReplicaSet or StatefulSet while `spec.replicas > 0`, a Namespace while it holds
//! active pods or Bound PersistentVolumeClaims, a CustomResourceDefinition while objects of it
//! exist (with gate `DeletionProtectionForCRDCascadingGate`). Services and Ingresses only know
//! `Always`. Refusals carry code 403 and OpenKruise's message (`forbidden by
//! ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always`) and count in
//! OpenKruise's `workload_deletion_protection`, `namespace_deletion_protection` and
//! `crd_deletion_protection` metrics. CloneSets and Advanced StatefulSets are protected by their
//! own validating webhooks ([`crate::common::validate_workload_deletion`]). UnitedDeployments
//! (`vuniteddeployment.kb.io`, [`validate_united_deployment`]) are protected here too, as
//! `Deployment`s are; the same webhook validates their creates and updates
//! ([`crate::uniteddeployment::validate`]) where the UnitedDeployment controller runs.
//!
//! The webhooks are called only for objects carrying the label (`scope::deletion_condition`),
//! so with the manager down nothing else is refused.

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::keys;
use kruise_runtime::features::Feature;
use kruise_runtime::metrics::UntypedCounter;
use kube::core::admission::Operation;
use prometheus_client::metrics::family::Family;
use serde_json::Value;

use crate::common::validate_workload_deletion;
use crate::support::{CODE_BAD_REQUEST, CODE_FORBIDDEN, allow, decode_old_object, errored};
use crate::{HandlerContext, Request, Response};

/// The deletion-protection webhooks of built-in kinds (in OpenKruise's order): they belong to
/// no controller and are served by every manager.
pub const WEBHOOKS: &[&str] = &[
    "vbuiltindeployment.kb.io",
    "vbuiltinreplicaset.kb.io",
    "vbuiltinstatefulset.kb.io",
    "vcustomresourcedefinition.kb.io",
    "vingress.kb.io",
    "vnamespace.kb.io",
    "vservice.kb.io",
    "vuniteddeployment.kb.io",
];

/// Labels `{kind_namespace_name, username}` of `workload_deletion_protection`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct WorkloadLabels {
    /// `<kind>_<namespace>_<name>`.
    pub kind_namespace_name: String,
    /// The request's user.
    pub username: String,
}

/// Labels `{name, username}` of `namespace_deletion_protection` and `crd_deletion_protection`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct NameLabels {
    /// The object's name.
    pub name: String,
    /// The request's user.
    pub username: String,
}

/// OpenKruise's `workload_deletion_protection` (refused deletions of Deployments, ReplicaSets,
/// StatefulSets, UnitedDeployments).
pub static WORKLOAD_REFUSALS: LazyLock<Family<WorkloadLabels, UntypedCounter>> =
    LazyLock::new(Default::default);
/// OpenKruise's `namespace_deletion_protection`.
pub static NAMESPACE_REFUSALS: LazyLock<Family<NameLabels, UntypedCounter>> =
    LazyLock::new(Default::default);
/// OpenKruise's `crd_deletion_protection`.
pub static CRD_REFUSALS: LazyLock<Family<NameLabels, UntypedCounter>> =
    LazyLock::new(Default::default);

/// The request when it is a deletion OpenKruise's handlers judge (not of a subresource, with
/// the old object): `None` admits.
fn deletion(req: &Request) -> bool {
    req.operation == Operation::Delete
        && req.sub_resource.as_deref().unwrap_or("").is_empty()
        && req.old_object.is_some()
}

/// One more refused deletion of workload `meta` in `workload_deletion_protection` (labels
/// `<kind>_<namespace>_<name>` and the request's user, as every OpenKruise workload handler
/// counts it: built-in kinds, CloneSets, Advanced StatefulSets, UnitedDeployments).
pub fn count_workload_refusal(req: &Request, meta: &ObjectMeta) {
    WORKLOAD_REFUSALS
        .get_or_create(&WorkloadLabels {
            kind_namespace_name: format!(
                "{}_{}_{}",
                req.kind.kind,
                meta.namespace.as_deref().unwrap_or(""),
                meta.name.as_deref().unwrap_or("")
            ),
            username: username(req),
        })
        .inc();
}

fn username(req: &Request) -> String {
    req.user_info.username.clone().unwrap_or_default()
}

/// `/validate-apps-deployment`, `/validate-apps-replicaset`, `/validate-apps-statefulset`
/// (`vbuiltin{deployment,replicaset,statefulset}.kb.io`).
pub async fn validate_workload(req: &Request, ctx: &HandlerContext) -> Response {
    if !deletion(req) {
        return allow(req);
    }
    judge_workload(
        req,
        ctx,
        Some(&["Deployment", "ReplicaSet", "StatefulSet"]),
        |_| Ok(()),
    )
}

/// The DELETE part of `/validate-apps-kruise-io-v1alpha1-uniteddeployment`
/// (`vuniteddeployment.kb.io`, [`crate::uniteddeployment::validate`]): OpenKruise's handler judges a deletion with `ValidateWorkloadDeletion(oldObj,
/// oldObj.Spec.Replicas)` (`Cascading` refuses only while `spec.replicas` is set and `> 0`; an
/// absent `spec.replicas`, which OpenKruise's defaulting leaves absent, is not refused) and counts
/// a refusal in `workload_deletion_protection` as `UnitedDeployment_<ns>_<name>`.
pub async fn validate_united_deployment(req: &Request, ctx: &HandlerContext) -> Response {
    if req.operation != Operation::Delete || req.old_object.is_none() {
        return allow(req);
    }
    judge_workload(req, ctx, None, |old| {
        // OpenKruise decodes the old object into its Go type: a `spec.replicas` that is not an
        // int32 fails there (the API server's schema never lets one be stored).
        match old.pointer("/spec/replicas") {
            None | Some(Value::Null) => Ok(()),
            Some(v) if v.as_i64().is_some_and(|r| i32::try_from(r).is_ok()) => Ok(()),
            Some(v) => Err(format!(
                "json: cannot unmarshal {} into Go struct field UnitedDeploymentSpec.spec.replicas of type int32",
                go_json_type(v)
            )),
        }
    })
}

/// What Go's `encoding/json` calls the JSON value `v` in an unmarshal error.
fn go_json_type(v: &Value) -> String {
    match v {
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Number(n) => format!("number {n}"),
        Value::Null => "null".into(),
    }
}

/// `ValidateWorkloadDeletion(oldObj, oldObj.Spec.Replicas)` on the request's old object, after
/// `decodable` accepts it (else code 400 with its error), for a request of one of `kinds` (all
/// when `None`; others are admitted); a refusal is counted in [`WORKLOAD_REFUSALS`] as
/// `<kind>_<namespace>_<name>` and answered with code 403.
fn judge_workload(
    req: &Request,
    ctx: &HandlerContext,
    kinds: Option<&[&str]>,
    decodable: impl Fn(&Value) -> Result<(), String>,
) -> Response {
    let old: Value = match decode_old_object(req) {
        Ok(Some(v)) => v,
        Ok(None) => return allow(req),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    if kinds.is_some_and(|k| !k.contains(&req.kind.kind.as_str())) {
        return allow(req);
    }
    if let Err(e) = decodable(&old) {
        return errored(req, CODE_BAD_REQUEST, e);
    }
    let meta: ObjectMeta = match serde_json::from_value(old["metadata"].clone()) {
        Ok(m) => m,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e.to_string()),
    };
    let replicas = old
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .map(|r| r as i32);
    match validate_workload_deletion(&ctx.gates, &meta, replicas) {
        Ok(()) => allow(req),
        Err(msg) => {
            count_workload_refusal(req, &meta);
            errored(req, CODE_FORBIDDEN, msg)
        }
    }
}

/// The value of the protection label unless the gate is off or the object is being deleted.
fn protection<'a>(ctx: &HandlerContext, meta: &'a ObjectMeta) -> Option<&'a str> {
    if !ctx.gates.enabled(Feature::ResourcesDeletionProtection) || meta.deletion_timestamp.is_some()
    {
        return None;
    }
    meta.labels
        .as_ref()
        .and_then(|l| l.get(keys::DELETION_PROTECTION))
        .map(String::as_str)
}

fn always(value: &str) -> String {
    format!(
        "forbidden by ResourcesProtectionDeletion for {}={value}",
        keys::DELETION_PROTECTION
    )
}

/// `/validate-service` and `/validate-ingress` (`vservice.kb.io`, `vingress.kb.io`): `Always`
/// only.
pub async fn validate_always_only(req: &Request, ctx: &HandlerContext) -> Response {
    if !deletion(req) {
        return allow(req);
    }
    let meta: ObjectMeta = match decode_old_object::<Value>(req) {
        Ok(Some(v)) => match serde_json::from_value(v["metadata"].clone()) {
            Ok(m) => m,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e.to_string()),
        },
        Ok(None) => return allow(req),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    match protection(ctx, &meta) {
        Some(v @ keys::DELETION_PROTECTION_ALWAYS) => errored(req, CODE_FORBIDDEN, always(v)),
        _ => allow(req),
    }
}

/// `/validate-namespace` (`vnamespace.kb.io`): `Cascading` counts the namespace's active pods
/// and Bound PersistentVolumeClaims from the shared cache.
pub async fn validate_namespace(req: &Request, ctx: &HandlerContext) -> Response {
    if !deletion(req) {
        return allow(req);
    }
    let ns: Namespace = match decode_old_object(req) {
        Ok(Some(n)) => n,
        Ok(None) => return allow(req),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let name = ns.metadata.name.clone().unwrap_or_default();
    let refusal = match protection(ctx, &ns.metadata) {
        Some(v @ keys::DELETION_PROTECTION_ALWAYS) => Some(always(v)),
        Some(v @ keys::DELETION_PROTECTION_CASCADING) => {
            match namespace_children(ctx, &name).await {
                Err(e) => Some(e),
                Ok((pods, _)) if pods > 0 => Some(format!(
                    "forbidden by ResourcesProtectionDeletion for {}={v} and active pods {pods}>0",
                    keys::DELETION_PROTECTION
                )),
                Ok((_, bound)) if bound > 0 => Some(format!(
                    "forbidden by ResourcesProtectionDeletion for {}={v} and \"Bound\" status pvc {bound}>0",
                    keys::DELETION_PROTECTION
                )),
                Ok(_) => None,
            }
        }
        _ => None,
    };
    answer(req, refusal, &NAMESPACE_REFUSALS, name)
}

/// Admits, or refuses with `msg` counting the refusal in `family` under the object's `name`.
fn answer(
    req: &Request,
    refusal: Option<String>,
    family: &Family<NameLabels, UntypedCounter>,
    name: String,
) -> Response {
    match refusal {
        None => allow(req),
        Some(msg) => {
            family
                .get_or_create(&NameLabels {
                    name,
                    username: username(req),
                })
                .inc();
            errored(req, CODE_FORBIDDEN, msg)
        }
    }
}

/// Active pods and Bound PVCs of namespace `ns`.
async fn namespace_children(ctx: &HandlerContext, ns: &str) -> Result<(usize, usize), String> {
    let Some(lookup) = &ctx.lookup else {
        return Ok((0, 0));
    };
    let pods = lookup.pods_in(ns).await.map_err(|e| {
        format!("forbidden by ResourcesProtectionDeletion for list pods error: {e}")
    })?;
    let active = pods
        .iter()
        .filter(|p| kruise_engines::podutil::is_active(p))
        .count();
    let pvcs = lookup
        .pvcs_in(ns)
        .await
        .map_err(|e| format!("forbidden by ResourcesProtectionDeletion for list pvc error: {e}"))?;
    let bound = pvcs
        .iter()
        .filter(|c: &&std::sync::Arc<PersistentVolumeClaim>| {
            c.metadata.deletion_timestamp.is_none()
                && c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
        })
        .count();
    Ok((active, bound))
}

/// `/validate-customresourcedefinition` (`vcustomresourcedefinition.kb.io`): `Cascading`
/// (with gate `DeletionProtectionForCRDCascadingGate`) counts the objects of the CRD's storage
/// version that are not being deleted.
pub async fn validate_crd(req: &Request, ctx: &HandlerContext) -> Response {
    if !deletion(req) {
        return allow(req);
    }
    if !matches!(req.kind.version.as_str(), "v1" | "v1beta1") {
        return allow(req);
    }
    // Both versions carry the fields read here under the same names.
    let crd: CustomResourceDefinition = match decode_old_object(req) {
        Ok(Some(c)) => c,
        Ok(None) => return allow(req),
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let name = crd.metadata.name.clone().unwrap_or_default();
    let refusal = match protection(ctx, &crd.metadata) {
        Some(v @ keys::DELETION_PROTECTION_ALWAYS) => Some(always(v)),
        Some(v @ keys::DELETION_PROTECTION_CASCADING) => {
            if !ctx
                .gates
                .enabled(Feature::DeletionProtectionForCRDCascadingGate)
            {
                Some("feature-gate DeletionProtectionForCRDCascadingGate is not enabled".into())
            } else {
                match active_custom_resources(ctx, &crd).await {
                    Err(e) => Some(e),
                    Ok(n) if n > 0 => Some(format!(
                        "forbidden by ResourcesProtectionDeletion for {}={v} and active CRs {n}>0",
                        keys::DELETION_PROTECTION
                    )),
                    Ok(_) => None,
                }
            }
        }
        _ => None,
    };
    answer(req, refusal, &CRD_REFUSALS, name)
}

/// Objects of the CRD's storage version, in every namespace, not being deleted (a live list,
/// as OpenKruise's unstructured list).
async fn active_custom_resources(
    ctx: &HandlerContext,
    crd: &CustomResourceDefinition,
) -> Result<usize, String> {
    let Some(client) = ctx.lookup.as_ref().and_then(|l| l.client()) else {
        return Ok(0);
    };
    let Some(version) = crd.spec.versions.iter().find(|v| v.storage) else {
        return Ok(0);
    };
    let gvk =
        kube::core::GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind);
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client.clone(), &ar);
    let list = api.list(&Default::default()).await.map_err(|e| {
        format!(
            "failed to list CRs of {}/{}, Kind={}List: {e}",
            crd.spec.group, version.name, crd.spec.names.kind
        )
    })?;
    Ok(list
        .items
        .iter()
        .filter(|o| o.metadata.deletion_timestamp.is_none())
        .count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::testing::request;
    use kruise_runtime::features::FeatureGates;
    use serde_json::json;

    fn ud(name: &str, label: Option<&str>, replicas: Option<Value>) -> Value {
        let mut o = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {}});
        if let Some(v) = label {
            o["metadata"]["labels"] = json!({keys::DELETION_PROTECTION: v});
        }
        if let Some(r) = replicas {
            o["spec"]["replicas"] = r;
        }
        o
    }

    async fn delete(gates: &FeatureGates, old: Value) -> Response {
        let mut req = request("DELETE", "uniteddeployments", "v1alpha1", None, Some(old));
        req.kind.kind = "UnitedDeployment".into();
        let ctx = HandlerContext {
            gates: gates.clone(),
            lookup: None,
        };
        validate_united_deployment(&req, &ctx).await
    }

    fn refusals(name: &str) -> u64 {
        WORKLOAD_REFUSALS
            .get_or_create(&WorkloadLabels {
                kind_namespace_name: format!("UnitedDeployment_ns_{name}"),
                username: "tester".into(),
            })
            .get()
    }

    #[tokio::test]
    async fn united_deployments_are_judged_like_workloads() {
        let on = FeatureGates::default().with(Feature::ResourcesDeletionProtection, true);
        let r = delete(&on, ud("always", Some("Always"), Some(json!(0)))).await;
        assert_eq!((r.allowed, r.result.code), (false, 403));
        assert_eq!(
            r.result.message,
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"
        );
        assert_eq!(refusals("always"), 1);
        let r = delete(&on, ud("cascading", Some("Cascading"), Some(json!(2)))).await;
        assert_eq!(
            r.result.message,
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 2>0"
        );
        assert_eq!(refusals("cascading"), 1);
        // Cascading without replicas (absent or null) or with 0, no label, gate off: admitted.
        for old in [
            ud("a", Some("Cascading"), None),
            ud("b", Some("Cascading"), Some(Value::Null)),
            ud("c", Some("Cascading"), Some(json!(0))),
            ud("d", None, Some(json!(3))),
        ] {
            assert!(delete(&on, old).await.allowed);
        }
        let off = FeatureGates::default().with(Feature::ResourcesDeletionProtection, false);
        assert!(delete(&off, ud("e", Some("Always"), None)).await.allowed);
        // What Go cannot decode into the typed object.
        let r = delete(&on, ud("f", None, Some(json!("3")))).await;
        assert_eq!((r.allowed, r.result.code), (false, 400));
        assert_eq!(
            r.result.message,
            "json: cannot unmarshal string into Go struct field UnitedDeploymentSpec.spec.replicas of type int32"
        );
        // Creates and updates are not judged yet.
        let req = request(
            "CREATE",
            "uniteddeployments",
            "v1alpha1",
            Some(ud("g", Some("Always"), None)),
            None,
        );
        let ctx = HandlerContext {
            gates: on,
            lookup: None,
        };
        assert!(validate_united_deployment(&req, &ctx).await.allowed);
    }
}
