//! Object-metadata and label-selector rules of apimachinery (v0.32):
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation` (labels, label selectors) and
//! `k8s.io/apimachinery/pkg/api/validation` (annotations, `ValidateObjectMeta`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use serde_json::{Value, json};

use super::field::{ErrorList, FieldError, Path};
use super::names::{
    is_dns1123_subdomain, is_qualified_name, is_valid_label_value, name_is_dns_label,
};

/// Total size (keys and values) annotations may have: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * (1 << 10);

/// `ValidateLabelName`: the key must be a qualified name.
pub fn validate_label_name(name: &str, path: &Path) -> ErrorList {
    is_qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(path.clone(), name, m))
        .collect()
}

/// `ValidateLabels`: keys are qualified names, values valid label values; every error is
/// reported on `path` itself.
pub fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in labels.into_iter().flatten() {
        errs.extend(validate_label_name(k, path));
        errs.extend(
            is_valid_label_value(v)
                .into_iter()
                .map(|m| FieldError::invalid(path.clone(), v.as_str(), m)),
        );
    }
    errs
}

/// `ValidateAnnotations`: keys (lower-cased) are qualified names and keys and values together
/// are at most 256 KiB.
pub fn validate_annotations(
    annotations: Option<&BTreeMap<String, String>>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut size = 0usize;
    for (k, v) in annotations.into_iter().flatten() {
        errs.extend(
            is_qualified_name(&k.to_lowercase())
                .into_iter()
                .map(|m| FieldError::invalid(path.clone(), k.as_str(), m)),
        );
        size += k.len() + v.len();
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            path.clone(),
            TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
        ));
    }
    errs
}

/// Options of `ValidateLabelSelector`.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelSelectorValidationOptions {
    /// Do not check the values of `matchExpressions` (`AllowInvalidLabelValueInSelector`).
    pub allow_invalid_label_value_in_selector: bool,
}

/// `ValidateLabelSelectorRequirement`: `In`/`NotIn` need values, `Exists`/`DoesNotExist` take
/// none, other operators are invalid; the key is a qualified name; values are label values
/// (unless allowed otherwise).
pub fn validate_label_selector_requirement(
    req: &LabelSelectorRequirement,
    opts: LabelSelectorValidationOptions,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        op => errs.push(FieldError::invalid(
            path.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(&req.key, &path.child("key")));
    if !opts.allow_invalid_label_value_in_selector {
        for (i, v) in values.iter().enumerate() {
            errs.extend(
                is_valid_label_value(v)
                    .into_iter()
                    .map(|m| FieldError::invalid(path.child("values").index(i), v.as_str(), m)),
            );
        }
    }
    errs
}

/// `ValidateLabelSelector`: `matchLabels` are valid labels and every expression is valid.
pub fn validate_label_selector(
    sel: Option<&LabelSelector>,
    opts: LabelSelectorValidationOptions,
    path: &Path,
) -> ErrorList {
    let Some(sel) = sel else {
        return ErrorList::new();
    };
    let mut errs = validate_labels(sel.match_labels.as_ref(), &path.child("matchLabels"));
    for (i, e) in sel.match_expressions.iter().flatten().enumerate() {
        errs.extend(validate_label_selector_requirement(
            e,
            opts,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}

/// Whether apimachinery's `metav1.LabelSelectorAsSelector` accepts `sel`: every `matchLabels`
/// pair and every expression must make a valid `labels.Requirement` (a qualified-name key,
/// label values, a known operator, at least one value for `In`/`NotIn`, none for
/// `Exists`/`DoesNotExist`).
pub fn label_selector_convertible(sel: &LabelSelector) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| is_qualified_name(k).is_empty() && is_valid_label_value(v).is_empty());
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let arity_ok = match e.operator.as_str() {
            "In" | "NotIn" => !values.is_empty(),
            "Exists" | "DoesNotExist" => values.is_empty(),
            _ => false,
        };
        arity_ok
            && is_qualified_name(&e.key).is_empty()
            && values.iter().all(|v| is_valid_label_value(v).is_empty())
    });
    labels_ok && exprs_ok
}

/// The error of apimachinery's `metav1.LabelSelectorAsSelector(sel)`, worded as Go words it
/// (`"Bogus" is not a valid label selector operator`, or `labels.NewRequirement`'s aggregated
/// field errors such as `key: Invalid value: ...` and `values: Invalid value: ...`); `None` when
/// the selector converts. Of several invalid `matchLabels` pairs Go reports whichever its map
/// iteration meets first; here the first by key.
pub fn label_selector_as_selector_error(sel: &LabelSelector) -> Option<String> {
    fn requirement(key: &str, op: &str, values: &[String]) -> Option<String> {
        let mut errs = ErrorList::new();
        let msgs = is_qualified_name(key);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(Path::new("key"), key, msgs.join("; ")));
        }
        let vp = Path::new("values");
        match op {
            "in" | "notin" if values.is_empty() => errs.push(FieldError::invalid(
                vp.clone(),
                json!(values),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            "=" if values.len() != 1 => errs.push(FieldError::invalid(
                vp.clone(),
                json!(values),
                "exact-match compatibility requires one single value",
            )),
            "exists" | "!" if !values.is_empty() => errs.push(FieldError::invalid(
                vp.clone(),
                json!(values),
                "values set must be empty for exists and does not exist",
            )),
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    vp.index(i),
                    v.as_str(),
                    msgs.join("; "),
                ));
            }
        }
        super::field::aggregate(&errs)
    }
    for (k, v) in sel.match_labels.iter().flatten() {
        if let Some(e) = requirement(k, "=", std::slice::from_ref(v)) {
            return Some(e);
        }
    }
    for e in sel.match_expressions.iter().flatten() {
        let op = match e.operator.as_str() {
            "In" => "in",
            "NotIn" => "notin",
            "Exists" => "exists",
            "DoesNotExist" => "!",
            other => return Some(format!("{other:?} is not a valid label selector operator")),
        };
        if let Some(err) = requirement(&e.key, op, e.values.as_deref().unwrap_or_default()) {
            return Some(err);
        }
    }
    None
}

/// A name rule for [`validate_object_meta`] (apimachinery's `ValidateNameFunc`): the reasons
/// `name` is invalid; `prefix` is true for a `generateName`.
pub type NameFn = fn(name: &str, prefix: bool) -> Vec<String>;

const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// `ValidateObjectMeta` of an object being created (core's variant, which also checks
/// finalizer names): [`validate_object_meta_generic`], then every finalizer must be a standard
/// finalizer name or domain-qualified.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    requires_namespace: bool,
    name_fn: NameFn,
    path: &Path,
) -> ErrorList {
    let mut errs = validate_object_meta_generic(meta, requires_namespace, name_fn, path);
    let fin_path = path.child("finalizers");
    for (i, f) in meta.finalizers.iter().flatten().enumerate() {
        let p = fin_path.index(i);
        errs.extend(
            is_qualified_name(f)
                .into_iter()
                .map(|m| FieldError::invalid(p.clone(), f.as_str(), m)),
        );
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            errs.push(FieldError::invalid(
                p,
                f.as_str(),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// apimachinery's generic `ValidateObjectMeta` (`k8s.io/apimachinery/pkg/api/validation`, what
/// custom resources' webhooks such as OpenKruise's SidecarSet one call): `generateName` and
/// `name` by `name_fn` (a name is required), `namespace` required and a DNS-1123 label when
/// `requires_namespace` (forbidden otherwise), `generation >= 0`, labels, annotations, owner
/// references (version, kind, name and uid set; at most one controller) and finalizers
/// (qualified names; not both `orphan` and `foregroundDeletion`). Managed fields are not checked.
pub fn validate_object_meta_generic(
    meta: &ObjectMeta,
    requires_namespace: bool,
    name_fn: NameFn,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        for m in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                path.child("generateName"),
                generate_name,
                m,
            ));
        }
    }
    let name = meta.name.as_deref().unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for m in name_fn(name, false) {
            errs.push(FieldError::invalid(path.child("name"), name, m));
        }
    }
    let namespace = meta.namespace.as_deref().unwrap_or("");
    if requires_namespace {
        if namespace.is_empty() {
            errs.push(FieldError::required(path.child("namespace"), ""));
        } else {
            for m in name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid(path.child("namespace"), namespace, m));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.generation
        && g < 0
    {
        errs.push(FieldError::invalid(
            path.child("generation"),
            g,
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(meta.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotations(
        meta.annotations.as_ref(),
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        meta.owner_references.as_deref().unwrap_or_default(),
        &path.child("ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        meta.finalizers.as_deref().unwrap_or_default(),
        &path.child("finalizers"),
    ));
    errs
}

/// apimachinery's `ValidateOwnerReferences`: each reference valid, at most one controller.
fn validate_owner_references(refs: &[OwnerReference], refs_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        errs.extend(validate_owner_reference(r, refs_path));
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    refs_path.clone(),
                    json!(refs),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// apimachinery's `validateOwnerReference`: version, kind, name and uid set.
fn validate_owner_reference(r: &OwnerReference, refs_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let (_, version) = match r.api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", r.api_version.as_str()),
    };
    if version.is_empty() {
        errs.push(FieldError::invalid(
            refs_path.child("apiVersion"),
            r.api_version.as_str(),
            "version must not be empty",
        ));
    }
    if r.kind.is_empty() {
        errs.push(FieldError::invalid(
            refs_path.child("kind"),
            r.kind.as_str(),
            "kind must not be empty",
        ));
    }
    if r.name.is_empty() {
        errs.push(FieldError::invalid(
            refs_path.child("name"),
            r.name.as_str(),
            "name must not be empty",
        ));
    }
    if r.uid.is_empty() {
        errs.push(FieldError::invalid(
            refs_path.child("uid"),
            r.uid.as_str(),
            "uid must not be empty",
        ));
    }
    errs
}

/// apimachinery's `ValidateFinalizers`: qualified names, not both `orphan` and
/// `foregroundDeletion`.
fn validate_finalizers(finalizers: &[String], fin_path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for f in finalizers {
        errs.extend(
            is_qualified_name(f)
                .into_iter()
                .map(|m| FieldError::invalid(fin_path.clone(), f.as_str(), m)),
        );
    }
    if finalizers.iter().any(|f| f == "orphan")
        && finalizers.iter().any(|f| f == "foregroundDeletion")
    {
        errs.push(FieldError::invalid(
            fin_path.clone(),
            json!(finalizers),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// apimachinery's `ValidateObjectMetaUpdate` (`ValidateObjectMetaAccessorUpdate`): no new
/// finalizer on an object being deleted, a `resourceVersion`, a `generation` not decremented,
/// name / namespace / uid / creationTimestamp / deletionTimestamp /
/// deletionGracePeriodSeconds unchanged (`field is immutable`), then the labels, annotations
/// and owner references of the new object.
pub fn validate_object_meta_update(new: &ObjectMeta, old: &ObjectMeta, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.deletion_timestamp.is_some() {
        let old_f: Vec<&String> = old.finalizers.iter().flatten().collect();
        for f in new.finalizers.iter().flatten() {
            if !old_f.contains(&f) {
                errs.push(FieldError::forbidden(
                    path.child("finalizers"),
                    format!("no new finalizers can be added if the object is being deleted, found new finalizers [\"{f}\"]"),
                ));
                break;
            }
        }
    }
    let rv = new.resource_version.as_deref().unwrap_or("");
    if rv.is_empty() {
        errs.push(FieldError::invalid(
            path.child("resourceVersion"),
            rv,
            "must be specified for an update",
        ));
    }
    let (g_new, g_old) = (new.generation.unwrap_or(0), old.generation.unwrap_or(0));
    if g_new < g_old {
        errs.push(FieldError::invalid(
            path.child("generation"),
            g_new,
            "must not be decremented",
        ));
    }
    let immutable = |errs: &mut ErrorList, field: &str, a: Value, b: Value| {
        if a != b {
            errs.push(FieldError::invalid(
                path.child(field),
                a,
                "field is immutable",
            ));
        }
    };
    immutable(
        &mut errs,
        "name",
        json!(new.name.as_deref().unwrap_or("")),
        json!(old.name.as_deref().unwrap_or("")),
    );
    immutable(
        &mut errs,
        "namespace",
        json!(new.namespace.as_deref().unwrap_or("")),
        json!(old.namespace.as_deref().unwrap_or("")),
    );
    immutable(
        &mut errs,
        "uid",
        json!(new.uid.as_deref().unwrap_or("")),
        json!(old.uid.as_deref().unwrap_or("")),
    );
    immutable(
        &mut errs,
        "creationTimestamp",
        json!(new.creation_timestamp),
        json!(old.creation_timestamp),
    );
    immutable(
        &mut errs,
        "deletionTimestamp",
        json!(new.deletion_timestamp),
        json!(old.deletion_timestamp),
    );
    immutable(
        &mut errs,
        "deletionGracePeriodSeconds",
        json!(new.deletion_grace_period_seconds),
        json!(old.deletion_grace_period_seconds),
    );
    errs.extend(validate_labels(new.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotations(
        new.annotations.as_ref(),
        &path.child("annotations"),
    ));
    errs
}

/// `IsDNS1123Subdomain` as a [`NameFn`] (`NameIsDNSSubdomain`).
pub fn dns_subdomain_name(name: &str, prefix: bool) -> Vec<String> {
    super::names::name_is_dns_subdomain(name, prefix)
}

/// `IsDNS1123Label` as a [`NameFn`] (`NameIsDNSLabel`; Kubernetes' `ValidateStatefulSetName`,
/// which OpenKruise's Advanced StatefulSet webhook applies: no dots, at most 63 characters).
pub fn dns_label_name(name: &str, prefix: bool) -> Vec<String> {
    super::names::name_is_dns_label(name, prefix)
}

/// Whether `s` is a valid DNS-1123 subdomain (no reasons).
pub fn is_subdomain(s: &str) -> bool {
    is_dns1123_subdomain(s).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn labels_and_annotations() {
        let p = Path::new("spec").child("template").child("labels");
        assert!(validate_labels(Some(&map(&[("app", "demo")])), &p).is_empty());
        let errs = validate_labels(Some(&map(&[("bad key!", "-bad-")])), &p);
        assert_eq!(errs.len(), 2);
        assert!(errs.iter().all(|e| e.path == p));
        let errs = validate_annotations(Some(&map(&[("Example.COM/Key", "v")])), &p);
        assert!(errs.is_empty(), "{errs:?}");
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
        let errs = validate_annotations(Some(&map(&[("k", &big)])), &p);
        assert_eq!(
            errs[0].to_string(),
            "spec.template.labels: Too long: may not be more than 262144 bytes"
        );
    }

    #[test]
    fn selectors() {
        let sel: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"bad key!": "v"},
            "matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k", "operator": "Bogus"}]
        }))
        .unwrap();
        let errs = validate_label_selector(
            Some(&sel),
            LabelSelectorValidationOptions::default(),
            &Path::new("spec").child("selector"),
        );
        let paths: Vec<String> = errs.iter().map(|e| e.path.to_string()).collect();
        assert_eq!(
            paths,
            [
                "spec.selector.matchLabels",
                "spec.selector.matchExpressions[0].values",
                "spec.selector.matchExpressions[1].operator"
            ]
        );
        assert!(!label_selector_convertible(&sel));
    }

    #[test]
    fn object_meta() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "name": "Bad_Name", "finalizers": ["custom", "example.com/f"]
        }))
        .unwrap();
        let errs = validate_object_meta(&meta, true, dns_subdomain_name, &Path::new("metadata"));
        let paths: Vec<String> = errs.iter().map(|e| e.path.to_string()).collect();
        assert_eq!(
            paths,
            [
                "metadata.name",
                "metadata.namespace",
                "metadata.finalizers[0]"
            ]
        );
        let ok: ObjectMeta =
            serde_json::from_value(json!({"generateName": "web-", "namespace": "ns"})).unwrap();
        assert!(
            validate_object_meta(&ok, true, dns_subdomain_name, &Path::new("metadata"))
                .iter()
                .all(|e| e.path.to_string() == "metadata.name")
        );
    }
}
