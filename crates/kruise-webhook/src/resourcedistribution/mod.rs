//! ResourceDistribution admission (`apps.kruise.io/v1alpha1`, CREATE and UPDATE), as OpenKruise
//! v1.9.0's `pkg/webhook/resourcedistribution/validating`: refused with 403 while the
//! `ResourceDistributionGate` is off (the webhook is always served, as OpenKruise's); else
//! `ValidateObjectMeta` (cluster-scoped, a DNS subdomain name), `spec.resource` decoded as
//! `unstructured` (`DeserializeResource`), only a core Secret or ConfigMap, its apiVersion, kind
//! and name immutable on update, and a server-side dry-run create of the resource in the
//! manager's namespace (errors other than AlreadyExists refuse); `spec.targets`' namespace names
//! (DNS labels), no namespace both included and excluded, a convertible label selector. Denials
//! are code 422 with apimachinery's aggregated field errors, values rendered as Go's `%#v`
//! renders them.

mod gofmt;

use kruise_api::apps::v1alpha1::{ResourceDistribution, ResourceDistributionTargets};
use kruise_api::validation::meta::validate_object_meta_generic;
use kruise_api::validation::names::{
    is_dns1123_label, is_qualified_name, is_valid_label_value, name_is_dns_subdomain,
};
use kruise_runtime::features::Feature;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::admission::Operation;
use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path, aggregate};
use crate::support::{
    CODE_BAD_REQUEST, CODE_FORBIDDEN, CODE_UNPROCESSABLE, allow, decode_object, decode_old_object,
    errored,
};
use crate::{HandlerContext, Request, Response};

/// OpenKruise's `supportedGKList` as its `%v` prints it.
const SUPPORTED: &str = "[Secret ConfigMap]";

/// `spec.resource` decoded as Go's `unstructured` decoder decodes it: `Ok(None)` when empty,
/// the decoding error's text otherwise (`DeserializeResource`).
fn deserialize(resource: &Value) -> Result<Option<&serde_json::Map<String, Value>>, String> {
    match resource {
        Value::Null => Ok(None),
        Value::Object(m) => {
            if m.get("kind")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                let raw = serde_json::to_string(resource).unwrap_or_default();
                Err(format!("Object 'Kind' is missing in '{raw}'"))
            } else {
                Ok(Some(m))
            }
        }
        other => Err(format!(
            "json: cannot unmarshal {} into Go value of type struct {{ Items json.RawMessage \"json:\\\"items\\\"\" }}",
            match other {
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "array",
            }
        )),
    }
}

/// `DeserializeResource`'s errors at `spec` (empty or undecodable resource).
fn deserialize_errors<'a>(
    resource: &'a Value,
    path: &Path,
) -> (Option<&'a serde_json::Map<String, Value>>, ErrorList) {
    match deserialize(resource) {
        Ok(Some(m)) => (Some(m), Vec::new()),
        Ok(None) => (
            None,
            vec![FieldError::invalid(
                path.clone(),
                "null",
                "empty resource is not allowed",
            )],
        ),
        Err(e) => (
            None,
            vec![FieldError::internal(
                path.clone(),
                format!("failed to deserialize resource, please check your spec.resource, err {e}"),
            )],
        ),
    }
}

fn group_kind(m: &serde_json::Map<String, Value>) -> (String, String) {
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = match api_version.split_once('/') {
        Some((g, _)) => g.to_owned(),
        None => String::new(),
    };
    (
        group,
        m.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    )
}

fn name_of(m: &serde_json::Map<String, Value>) -> &str {
    m.get("metadata")
        .and_then(|md| md.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The rules that need no API server (everything but the dry-run): the errors so far, and
/// whether the resource passed to the dry-run (`Some(resource)`).
pub fn validate_static<'a>(
    obj: &'a ResourceDistribution,
    old: Option<&ResourceDistribution>,
) -> (ErrorList, Option<&'a Value>) {
    let mut errs = validate_object_meta_generic(
        &obj.metadata,
        false,
        name_is_dns_subdomain,
        &Path::new("metadata"),
    );
    let spec = Path::new("spec");
    let (resource, mut e) = deserialize_errors(&obj.spec.resource, &spec);
    errs.append(&mut e);
    let Some(resource) = resource else {
        return (errs, None);
    };
    let old_resource = old.and_then(|o| {
        let (r, mut e) = deserialize_errors(&o.spec.resource, &spec);
        errs.append(&mut e);
        r
    });
    let rpath = spec.child("resource");
    let (group, kind) = group_kind(resource);
    let mut dry_run = None;
    if !(group.is_empty() && (kind == "Secret" || kind == "ConfigMap")) {
        errs.push(FieldError::invalid_stringer(
            rpath,
            gofmt::unstructured(&obj.spec.resource),
            format!("unknown or unsupported resource GroupKind, only support {SUPPORTED}"),
        ));
    } else if old_resource.is_some_and(|o| {
        o.get("apiVersion") != resource.get("apiVersion")
            || o.get("kind") != resource.get("kind")
            || name_of(o) != name_of(resource)
    }) {
        errs.push(FieldError::invalid(
            rpath,
            "null",
            "resource apiVersion, kind, and name are immutable",
        ));
    } else {
        dry_run = Some(&obj.spec.resource);
    }
    errs.extend(validate_targets(&obj.spec.targets, &spec.child("targets")));
    (errs, dry_run)
}

/// `validateResourceDistributionSpecTargets`.
pub fn validate_targets(t: &ResourceDistributionTargets, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let names = |l: Option<&kruise_api::apps::v1alpha1::ResourceDistributionTargetNamespaces>| -> Vec<String> {
        l.and_then(|l| l.list.as_ref())
            .into_iter()
            .flatten()
            .map(|n| n.name.clone().unwrap_or_default())
            .collect()
    };
    let included = names(t.included_namespaces.as_ref());
    let excluded = names(t.excluded_namespaces.as_ref());
    for n in &included {
        for m in is_dns1123_label(n) {
            errs.push(FieldError::invalid_stringer(
                path.child("includedNamespaces"),
                gofmt::target_namespaces(t.included_namespaces.as_ref()),
                m,
            ));
        }
    }
    let mut conflicted = Vec::new();
    for n in &excluded {
        for m in is_dns1123_label(n) {
            errs.push(FieldError::invalid_stringer(
                path.child("excludedNamespaces"),
                gofmt::target_namespaces(t.excluded_namespaces.as_ref()),
                m,
            ));
        }
        if included.contains(n) {
            conflicted.push(n.clone());
        }
    }
    if !conflicted.is_empty() {
        errs.push(FieldError::invalid_stringer(
            path.clone(),
            gofmt::targets(t),
            format!(
                "ambiguous targets because namespace [{}] is in both IncludedNamespaces.List and ExcludedNamespaces.List",
                conflicted.join(" ")
            ),
        ));
    }
    let selector = t.namespace_label_selector.clone().unwrap_or_default();
    if let Some(e) = label_selector_as_selector_error(&selector) {
        errs.push(FieldError::invalid_stringer(
            path.child("namespaceLabelSelector"),
            gofmt::label_selector(&selector),
            format!("labelSelectorAsSelector error: {e}"),
        ));
    }
    errs
}

/// The error of apimachinery v0.32's `metav1.LabelSelectorAsSelector` (the version OpenKruise
/// v1.9.0 builds with) as `err.Error()` words it: an unknown operator, or the aggregated field
/// errors of `labels.NewRequirement` (key, value count with the values as `%#v`, each value at
/// `values[i][key]`); match labels first (one pair each), then the expressions.
fn label_selector_as_selector_error(
    sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Option<String> {
    fn requirement(key: &str, op: &str, values: Option<&[String]>) -> Option<String> {
        let mut errs = ErrorList::new();
        let msgs = is_qualified_name(key);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(Path::new("key"), key, msgs.join("; ")));
        }
        let vp = Path::new("values");
        let n = values.map_or(0, <[String]>::len);
        let shown = || match values {
            Some(v) if !v.is_empty() => gofmt::string_slice(Some(v)),
            _ => "[]string(nil)".to_owned(),
        };
        match op {
            "in" | "notin" if n == 0 => errs.push(FieldError::invalid_stringer(
                vp.clone(),
                shown(),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            "=" if n != 1 => errs.push(FieldError::invalid_stringer(
                vp.clone(),
                shown(),
                "exact-match compatibility requires one single value",
            )),
            "exists" | "!" if n != 0 => errs.push(FieldError::invalid_stringer(
                vp.clone(),
                shown(),
                "values set must be empty for exists and does not exist",
            )),
            _ => {}
        }
        for (i, v) in values.into_iter().flatten().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    vp.index(i).key(key),
                    v.as_str(),
                    msgs.join("; "),
                ));
            }
        }
        aggregate(&errs)
    }
    for (k, v) in sel.match_labels.iter().flatten() {
        if let Some(e) = requirement(k, "=", Some(std::slice::from_ref(v))) {
            return Some(e);
        }
    }
    for e in sel.match_expressions.iter().flatten() {
        let op = match e.operator.as_str() {
            "In" => "in",
            "NotIn" => "notin",
            "Exists" => "exists",
            "DoesNotExist" => "!",
            other => {
                return Some(format!(
                    "{} is not a valid label selector operator",
                    kruise_api::validation::gofmt::quote(other)
                ));
            }
        };
        if let Some(err) = requirement(&e.key, op, e.values.as_deref()) {
            return Some(err);
        }
    }
    None
}

/// OpenKruise's dry-run create of `resource` in the manager's namespace: the error text when
/// the API server refuses it (AlreadyExists counts as valid); nothing when no API server is at
/// hand (unit tests and the corpus replay).
async fn dry_run(resource: &Value, ctx: &HandlerContext) -> Option<String> {
    let client = ctx.lookup.as_ref()?.client()?.clone();
    let mut obj = resource.clone();
    if let Some(md) = obj
        .as_object_mut()
        .map(|o| {
            o.entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()))
        })
        .and_then(Value::as_object_mut)
    {
        md.insert("namespace".into(), Value::String(crate::kruise_namespace()));
    }
    let obj: DynamicObject = match serde_json::from_value(obj) {
        Ok(o) => o,
        Err(e) => return Some(e.to_string()),
    };
    let (group, kind) = obj
        .types
        .as_ref()
        .map(|t| (t.api_version.clone(), t.kind.clone()))
        .unwrap_or_default();
    let gvk = kube::core::GroupVersionKind::try_from(&kube::core::TypeMeta {
        api_version: group,
        kind,
    })
    .ok()?;
    let ar = kube::core::ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = Api::namespaced_with(client, &crate::kruise_namespace(), &ar);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match api.create(&pp, &obj).await {
        Ok(_) => None,
        Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => None,
        Err(kube::Error::Api(s)) => Some(s.message),
        Err(e) => Some(e.to_string()),
    }
}

/// The label that pins a ResourceDistribution to the webhook of the test manager of namespace
/// `<value>` (`--webhook-only-namespace`: a namespace selector does not restrict cluster-scoped
/// kinds, so each test's manager judges only the distributions labelled for it).
pub const E2E_NAMESPACE_LABEL: &str = "kruise-rs.io/e2e-namespace";

/// CEL true for a ResourceDistribution labelled [`E2E_NAMESPACE_LABEL`]` = ns` (see there).
pub fn pinned_to(ns: &str) -> String {
    format!(
        "has(object.metadata.labels) && '{E2E_NAMESPACE_LABEL}' in object.metadata.labels && \
         object.metadata.labels['{E2E_NAMESPACE_LABEL}'] == '{}'",
        ns.replace(['\\', '\''], "")
    )
}

/// `/validate-apps-kruise-io-v1alpha1-resourcedistribution` (module documentation).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj: ResourceDistribution = match decode_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<ResourceDistribution> = if req.operation == Operation::Update {
        match decode_old_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    if !ctx.gates.enabled(Feature::ResourceDistributionGate) {
        return errored(
            req,
            CODE_FORBIDDEN,
            "feature-gate ResourceDistributionGate is not enabled",
        );
    }
    let (mut errs, resource) = validate_static(&obj, old.as_ref());
    if let Some(resource) = resource
        && let Some(e) = dry_run(resource, ctx).await
    {
        // Reported right after the resource checks, before the targets' errors.
        let at = errs
            .iter()
            .position(|f| f.to_string().starts_with("spec.targets"))
            .unwrap_or(errs.len());
        errs.insert(
            at,
            FieldError::internal(
                Path::new("spec").child("resource"),
                format!("failed to dry-run to validate spec.resource, error: {e}"),
            ),
        );
    }
    match aggregate(&errs) {
        None => allow(req),
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
    }
}

#[cfg(test)]
mod tests;
