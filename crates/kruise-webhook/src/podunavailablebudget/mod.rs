//! PodUnavailableBudget admission (`policy.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/podunavailablebudget/validating` (`/validate-policy-kruise-io-podunavailablebudget`,
//! CREATE and UPDATE): the protect-operations and protect-total-replicas annotations, exactly
//! one of `selector` / `targetRef`, exactly one of `maxUnavailable` / `minAvailable` (a positive
//! number or a percentage up to 100%), `selector` and `targetRef` immutable, and no other budget
//! of the namespace covering the same workload (same `targetRef` group, kind and name) or an
//! overlapping selector (OpenKruise's `IsSelectorLooseOverlap`). Denials carry code 400 and the
//! aggregated field errors, as OpenKruise's `admission.Errored(http.StatusBadRequest, ...)`.
//! Without either PodUnavailableBudget gate every request is refused, as OpenKruise does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kruise_api::keys;
use kruise_api::policy::v1alpha1::{PodUnavailableBudget, TargetReference, pub_operation};
use kruise_api::validation::field::{ErrorList, FieldError, Path};
use kruise_api::validation::gofmt;
use kruise_api::validation::intstr::{
    is_not_more_than_100_percent, validate_positive_int_or_percent,
};
use kruise_api::validation::meta::{
    LabelSelectorValidationOptions, label_selector_as_selector_error, validate_label_selector,
};
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, allow, decode_workload_object, decode_workload_old_object, errored,
};
use crate::{HandlerContext, Request, Response};

/// `/validate-policy-kruise-io-podunavailablebudget` (see the module docs).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    if !ctx.gates.enabled(Feature::PodUnavailableBudgetDeleteGate)
        && !ctx.gates.enabled(Feature::PodUnavailableBudgetUpdateGate)
    {
        return errored(
            req,
            CODE_BAD_REQUEST,
            "feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)",
        );
    }
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj: PodUnavailableBudget = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<PodUnavailableBudget> = if req.operation == Operation::Update {
        match decode_workload_old_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let mut errs = validate_budget(&obj, old.as_ref());
    let ns = obj
        .metadata
        .namespace
        .as_deref()
        .or(req.namespace.as_deref())
        .unwrap_or("");
    if let Some(lookup) = &ctx.lookup {
        match lookup.budgets_in(ns).await {
            Ok(others) => errs.extend(validate_conflicts(
                &obj,
                others.iter().map(|b| b.as_ref()),
                &Path::new("spec"),
            )),
            Err(e) => errs.push(FieldError::internal(
                Path::new(""),
                format!("query other podUnavailableBudget failed, err: {e}"),
            )),
        }
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_BAD_REQUEST, msg),
        None => allow(req),
    }
}

/// `validatingPodUnavailableBudgetFn` without the conflict check against other budgets.
pub fn validate_budget(
    obj: &PodUnavailableBudget,
    old: Option<&PodUnavailableBudget>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let annotations = obj.metadata.annotations.as_ref();
    if let Some(value) = annotations.and_then(|a| a.get(keys::PUB_PROTECT_OPERATIONS)) {
        let known = [
            pub_operation::UPDATE,
            pub_operation::DELETE,
            pub_operation::EVICT,
            pub_operation::RESIZE,
        ];
        for op in value.split(',') {
            if !known.contains(&op) {
                errs.push(FieldError::internal(
                    Path::new("metadata"),
                    format!("annotation[{}] is invalid", keys::PUB_PROTECT_OPERATIONS),
                ));
            }
        }
    }
    if let Some(value) = annotations.and_then(|a| a.get(keys::PUB_PROTECT_TOTAL_REPLICAS))
        && !is_go_int32(value)
    {
        errs.push(FieldError::internal(
            Path::new("metadata"),
            format!(
                "annotation[{}] is invalid",
                keys::PUB_PROTECT_TOTAL_REPLICAS
            ),
        ));
    }
    let spec_path = Path::new("spec");
    errs.extend(validate_spec(obj, &spec_path));
    if let Some(old) = old
        && (obj.spec.selector != old.spec.selector
            || obj.spec.target_reference != old.spec.target_reference)
    {
        errs.push(FieldError::required(
            spec_path.child("selector, targetRef"),
            "selector and targetRef cannot be modified",
        ));
    }
    errs
}

/// Go's `strconv.ParseInt(value, 10, 32)` succeeds: an optional sign, decimal digits (`_`
/// not allowed in base 10), within `int32`.
fn is_go_int32(v: &str) -> bool {
    let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && v.parse::<i32>().is_ok()
}

/// `validatePodUnavailableBudgetSpec`.
fn validate_spec(obj: &PodUnavailableBudget, path: &Path) -> ErrorList {
    let spec = &obj.spec;
    let mut errs = ErrorList::new();
    let both = path.child("selector, targetRef");
    match (&spec.selector, &spec.target_reference) {
        (None, None) => errs.push(FieldError::required(
            both,
            "no selector or targetRef defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            both,
            "selector and targetRef are mutually exclusive",
        )),
        (None, Some(r)) => {
            let field = path.child("TargetReference");
            let empty = |v: &Option<String>| v.as_deref().unwrap_or("").is_empty();
            if empty(&r.api_version) || empty(&r.name) || empty(&r.kind) {
                errs.push(FieldError::invalid_stringer(
                    field.clone(),
                    target_reference_sharp_v(r),
                    "empty TargetReference is not valid for PodUnavailableBudget.",
                ));
            }
            let api_version = r.api_version.as_deref().unwrap_or("");
            if api_version.matches('/').count() > 1 {
                errs.push(FieldError::invalid_stringer(
                    field,
                    target_reference_sharp_v(r),
                    format!("unexpected GroupVersion string: {api_version}"),
                ));
            }
        }
        (Some(sel), None) => {
            let field = path.child("selector");
            errs.extend(validate_label_selector(
                Some(sel),
                LabelSelectorValidationOptions::default(),
                &field,
            ));
            let n = sel.match_labels.as_ref().map_or(0, |m| m.len())
                + sel.match_expressions.as_ref().map_or(0, |e| e.len());
            if n == 0 {
                errs.push(FieldError::invalid_stringer(
                    field.clone(),
                    gofmt::label_selector_sharp_v(sel),
                    "empty selector is not valid for PodUnavailableBudget.",
                ));
            }
            if label_selector_as_selector_error(sel).is_some() {
                errs.push(FieldError::invalid_stringer(
                    field,
                    gofmt::label_selector_sharp_v(sel),
                    "",
                ));
            }
        }
    }
    let both = path.child("maxUnavailable, minAvailable");
    match (&spec.max_unavailable, &spec.min_available) {
        (None, None) => errs.push(FieldError::required(
            both,
            "no maxUnavailable or minAvailable defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            both,
            "maxUnavailable and minAvailable are mutually exclusive",
        )),
        (Some(v), None) => {
            let p = path.child("maxUnavailable");
            errs.extend(validate_positive_int_or_percent(v, &p));
            errs.extend(is_not_more_than_100_percent(v, &p));
        }
        (None, Some(v)) => {
            let p = path.child("minAvailable");
            errs.extend(validate_positive_int_or_percent(v, &p));
            errs.extend(is_not_more_than_100_percent(v, &p));
        }
    }
    errs
}

/// `validatePubConflict`: the first other budget of the namespace covering the same workload
/// (both with `targetRef`: same group, kind and name) or an overlapping selector (both with
/// `selector`).
pub fn validate_conflicts<'a>(
    obj: &PodUnavailableBudget,
    others: impl Iterator<Item = &'a PodUnavailableBudget>,
    path: &Path,
) -> ErrorList {
    let name = obj.metadata.name.as_deref().unwrap_or("");
    for other in others {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name {
            continue;
        }
        match (
            (&obj.spec.target_reference, &other.spec.target_reference),
            (&obj.spec.selector, &other.spec.selector),
        ) {
            ((Some(cur), Some(theirs)), _) => {
                let group = |r: &TargetReference| {
                    let v = r.api_version.as_deref().unwrap_or("");
                    match v.split_once('/') {
                        Some((g, rest)) if !rest.contains('/') => g.to_string(),
                        Some(_) => String::new(),
                        None => String::new(),
                    }
                };
                if group(cur) == group(theirs) && cur.kind == theirs.kind && cur.name == theirs.name
                {
                    return vec![FieldError::invalid_stringer(
                        path.child("targetReference"),
                        target_reference_sharp_v(cur),
                        format!(
                            "pub.spec.targetReference is in conflict with other PodUnavailableBudget {other_name}"
                        ),
                    )];
                }
            }
            (_, (Some(cur), Some(theirs))) if is_selector_loose_overlap(cur, theirs) => {
                return vec![FieldError::invalid_stringer(
                    path.child("selector"),
                    gofmt::label_selector_sharp_v(cur),
                    format!(
                        "pub.spec.selector is in conflict with other PodUnavailableBudget {other_name}"
                    ),
                )];
            }
            _ => {}
        }
    }
    ErrorList::new()
}

/// OpenKruise `util.IsSelectorLooseOverlap`: both selectors constrain exactly the same keys
/// (`matchLabels` taken as `In [value]`, overriding an expression of the same key), and each
/// key's requirements can hold together (OpenKruise's `isMatchExpOverlap`, both ways).
pub fn is_selector_loose_overlap(a: &LabelSelector, b: &LabelSelector) -> bool {
    use std::collections::BTreeMap;
    fn by_key(s: &LabelSelector) -> BTreeMap<String, LabelSelectorRequirement> {
        let mut m = BTreeMap::new();
        for e in s.match_expressions.iter().flatten() {
            m.insert(e.key.clone(), e.clone());
        }
        for (k, v) in s.match_labels.iter().flatten() {
            m.insert(
                k.clone(),
                LabelSelectorRequirement {
                    key: String::new(),
                    operator: "In".into(),
                    values: Some(vec![v.clone()]),
                },
            );
        }
        m
    }
    let (ea, eb) = (by_key(a), by_key(b));
    let covered = |x: &BTreeMap<String, LabelSelectorRequirement>,
                   y: &BTreeMap<String, LabelSelectorRequirement>| {
        x.iter()
            .all(|(k, e1)| y.get(k).is_some_and(|e2| exp_overlap(e1, e2)))
    };
    covered(&ea, &eb) && covered(&eb, &ea)
}

fn exp_overlap(e1: &LabelSelectorRequirement, e2: &LabelSelectorRequirement) -> bool {
    let v1 = e1.values.as_deref().unwrap_or_default();
    let v2 = e2.values.as_deref().unwrap_or_default();
    let overlaps = |a: &[String], b: &[String]| b.iter().any(|x| a.contains(x));
    let contains = |a: &[String], b: &[String]| b.iter().all(|x| a.contains(x));
    match (e1.operator.as_str(), e2.operator.as_str()) {
        ("In", "Exists") => true,
        ("In", "In") => overlaps(v2, v1),
        ("In", "NotIn") => !contains(v2, v1),
        ("Exists", "In" | "NotIn" | "Exists") => true,
        ("NotIn", "Exists" | "DoesNotExist" | "NotIn") => true,
        ("NotIn", "In") => !contains(v1, v2),
        ("DoesNotExist", "DoesNotExist" | "NotIn") => true,
        _ => false,
    }
}

/// Go's `%#v` of a `v1alpha1.TargetReference`.
fn target_reference_sharp_v(r: &TargetReference) -> String {
    let s = |v: &Option<String>| v.as_deref().unwrap_or("").to_owned();
    gofmt::target_reference_sharp_v(&s(&r.api_version), &s(&r.kind), &s(&r.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn sel(labels: &[(&str, &str)], exprs: &[(&str, &str, &[&str])]) -> LabelSelector {
        LabelSelector {
            match_labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            }),
            match_expressions: (!exprs.is_empty()).then(|| {
                exprs
                    .iter()
                    .map(|(k, op, v)| LabelSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: Some(v.iter().map(|s| s.to_string()).collect()),
                    })
                    .collect()
            }),
        }
    }

    /// Cases of OpenKruise's `IsSelectorLooseOverlap` documentation.
    #[test]
    fn loose_overlap_as_openkruise_documents_it() {
        let a_in_bc = sel(&[], &[("a", "In", &["b", "c"])]);
        assert!(is_selector_loose_overlap(
            &a_in_bc,
            &sel(&[], &[("a", "Exists", &[])])
        ));
        assert!(is_selector_loose_overlap(
            &a_in_bc,
            &sel(&[("a", "b")], &[])
        ));
        assert!(!is_selector_loose_overlap(
            &a_in_bc,
            &sel(&[("a", "x")], &[])
        ));
        assert!(is_selector_loose_overlap(
            &a_in_bc,
            &sel(&[], &[("a", "NotIn", &["b"])])
        ));
        assert!(!is_selector_loose_overlap(
            &a_in_bc,
            &sel(&[], &[("a", "NotIn", &["b", "c", "e"])])
        ));
        // Different keys never overlap loosely.
        assert!(!is_selector_loose_overlap(
            &sel(&[("a", "b")], &[]),
            &sel(&[("c", "d")], &[])
        ));
        assert!(!is_selector_loose_overlap(
            &sel(&[("a", "b"), ("x", "y")], &[]),
            &sel(&[("a", "b")], &[])
        ));
        assert!(is_selector_loose_overlap(
            &sel(&[], &[("a", "DoesNotExist", &[])]),
            &sel(&[], &[("a", "NotIn", &["z"])])
        ));
    }

    #[test]
    fn go_renderings() {
        assert_eq!(
            gofmt::label_selector_sharp_v(&sel(&[("app", "web")], &[])),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        assert_eq!(
            target_reference_sharp_v(&TargetReference {
                api_version: Some("apps/v1".into()),
                kind: None,
                name: Some("x".into()),
            }),
            r#"v1alpha1.TargetReference{APIVersion:"apps/v1", Kind:"", Name:"x"}"#
        );
        assert!(is_go_int32("12") && is_go_int32("-3") && is_go_int32("+4"));
        assert!(
            !is_go_int32("")
                && !is_go_int32("1_0")
                && !is_go_int32("abc")
                && !is_go_int32("3000000000")
        );
    }
}
