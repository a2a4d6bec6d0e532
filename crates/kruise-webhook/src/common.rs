//! Validation helpers shared by the workload webhooks (CloneSet and Advanced StatefulSet):
//! object metadata, selectors and template labels, OpenKruise's preparation of a template for
//! Kubernetes' pod template validation (which lives in the API layer,
//! [`kruise_api::validation::pod`]), IntOrString percentages, update priority/scatter
//! strategies, the in-place-only template rule and workload deletion protection.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, PodSpec, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::{UpdatePriorityStrategy, UpdateScatterTerm};
use kruise_api::keys;
use kruise_api::validation::meta::{
    LabelSelectorValidationOptions, dns_subdomain_name, label_selector_convertible,
    validate_label_selector,
};
use kruise_api::validation::pod::{PodValidationOptions, validate_pod_template_meta};
use kruise_engines::intstr;
use serde_json::json;

use crate::field::{ErrorList, FieldError, Path};
use kruise_runtime::features::{Feature, FeatureGates};

/// `ValidateObjectMeta(meta, true, NameIsDNSSubdomain)` of a workload being created or updated
/// (name a DNS-1123 subdomain, namespace required, labels, annotations, owner references,
/// finalizers): OpenKruise's CloneSet and Advanced DaemonSet rule.
pub fn validate_object_meta(meta: &ObjectMeta) -> ErrorList {
    validate_object_meta_named(meta, dns_subdomain_name)
}

/// `ValidateObjectMeta(meta, true, name_fn)`: [`validate_object_meta`] with another name rule
/// (Advanced StatefulSet: `ValidateStatefulSetName`, a DNS-1123 label).
pub fn validate_object_meta_named(
    meta: &ObjectMeta,
    name_fn: kruise_api::validation::meta::NameFn,
) -> ErrorList {
    kruise_api::validation::meta::validate_object_meta(meta, true, name_fn, &Path::new("metadata"))
}

/// True when the selector has neither `matchLabels` nor `matchExpressions`.
pub fn selector_is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Whether `labels` satisfy `sel` (an empty selector matches everything); `None` if the selector
/// has an unknown operator.
pub fn selector_matches(
    sel: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<bool> {
    kruise_engines::updatesort::selector_matches(sel, labels)
}

/// The workload selector rules shared by CloneSet and Advanced StatefulSet: a selector
/// (`None`: absent, which Go decodes as nil and refuses as `Required`) that is valid and
/// non-empty (`kind` names the workload in the message, e.g. `cloneset`) and matches the
/// template's labels. Returns the errors and whether the pod template is to be validated at
/// all: as OpenKruise's `validateCloneSetSpec` / `validateSpecSelector`, a selector that
/// `LabelSelectorAsSelector` refuses gives `spec.selector: Invalid value` and the template is
/// not looked at. An absent selector selects nothing (`labels.Nothing()`), so the template's
/// labels never match it.
pub fn validate_selector_and_template_labels(
    sel: Option<&LabelSelector>,
    template: &PodTemplateSpec,
    kind: &str,
    spec_path: &Path,
) -> (ErrorList, bool) {
    let sel_path = spec_path.child("selector");
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let mismatch = || {
        FieldError::invalid(
            spec_path
                .child("template")
                .child("metadata")
                .child("labels"),
            json!(labels),
            "`selector` does not match template `labels`",
        )
    };
    let Some(sel) = sel else {
        return (vec![FieldError::required(sel_path, ""), mismatch()], true);
    };
    let mut errs = validate_label_selector(
        Some(sel),
        LabelSelectorValidationOptions::default(),
        &sel_path,
    );
    if selector_is_empty(sel) {
        errs.push(FieldError::invalid(
            sel_path.clone(),
            json!(sel),
            format!("empty selector is invalid for {kind}"),
        ));
        return (errs, true);
    }
    if !label_selector_convertible(sel) {
        errs.push(FieldError::invalid(sel_path, json!(sel), ""));
        return (errs, false);
    }
    if selector_matches(sel, labels) != Some(true) {
        errs.push(mismatch());
    }
    (errs, true)
}

/// OpenKruise's template validation for a CloneSet (`validateCloneSetSpec`): the template is
/// defaulted as `SetDefaultPodSpec` does (OpenKruise's `ConvertPodTemplateSpec` defaults it
/// before converting), every `volumeClaimTemplates` entry is added as a volume of that name
/// claiming the claim of that name, then Kubernetes' `ValidatePodTemplateSpec` runs with
/// OpenKruise's options.
pub fn validate_template_with_claims(
    template: &PodTemplateSpec,
    claims: &[PersistentVolumeClaim],
    path: &Path,
) -> ErrorList {
    let mut t = template.clone();
    let spec = t.spec.get_or_insert_with(PodSpec::default);
    kruise_api::defaults::podspec::set_defaults_pod_spec(spec);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    for pvc in claims {
        let name = pvc.metadata.name.clone().unwrap_or_default();
        volumes.push(Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: name,
                read_only: Some(false),
            }),
            ..Default::default()
        });
    }
    kruise_api::validation::pod::validate_pod_template_spec(
        &t,
        path,
        &PodValidationOptions::openkruise(),
    )
}

/// What Kubernetes validates of an Advanced StatefulSet's template
/// (`ValidatePodTemplateSpecForStatefulSet`, besides the selector match): labels, annotations
/// and the pod-specific annotations — not the pod spec.
pub fn validate_statefulset_template(template: &PodTemplateSpec, path: &Path) -> ErrorList {
    validate_pod_template_meta(template, path, &PodValidationOptions::openkruise())
}

const RESTART_POLICY_ALWAYS: &str = "Always";

/// Workload pods must restart `Always` (or leave it unset) and may not set
/// `activeDeadlineSeconds`; `kind` names the workload in the message (`cloneset`, `StatefulSet`).
pub fn validate_restart_and_deadline(
    template: &PodTemplateSpec,
    kind: &str,
    spec_path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(spec) = template.spec.as_ref() else {
        return errs;
    };
    let p = spec_path.child("template").child("spec");
    if let Some(rp) = spec.restart_policy.as_deref()
        && !rp.is_empty()
        && rp != RESTART_POLICY_ALWAYS
    {
        errs.push(FieldError::not_supported(
            p.child("restartPolicy"),
            rp,
            &[RESTART_POLICY_ALWAYS],
        ));
    }
    if spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            p.child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// `ValidateNonnegativeField`: an error when `v < 0`.
pub fn check_nonnegative(v: i64, path: Path) -> Option<FieldError> {
    (v < 0).then(|| FieldError::invalid(path, v, "must be greater than or equal to 0"))
}

/// The text form of an IntOrString (`5`, `"20%"` → `20%`), as Go's `IntOrString.String()`
/// ([`intstr::text`]).
pub fn int_or_string_text(v: &IntOrString) -> String {
    intstr::text(v)
}

/// OpenKruise's `util.GetScaledValueFromIntOrPercent` ([`intstr::scaled_value_fractional`]):
/// the error as Go's text.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i64, String> {
    intstr::scaled_value_fractional(v, i64::from(total), round_up).map_err(|e| e.to_string())
}

/// `UpdatePriorityStrategy.FieldsValidation`: not both weight and order terms; weights within
/// `[0, 100]`; weight selectors non-empty and valid; order keys non-empty.
pub fn validate_priority_strategy(s: Option<&UpdatePriorityStrategy>) -> Result<(), String> {
    let Some(s) = s else { return Ok(()) };
    let weights = s.weight_priority.as_deref().unwrap_or_default();
    let orders = s.order_priority.as_deref().unwrap_or_default();
    if !weights.is_empty() && !orders.is_empty() {
        return Err("only one of weightPriority and orderPriority can be used".into());
    }
    for w in weights {
        if !(0..=100).contains(&w.weight) {
            return Err("weight must be valid number in the range 1-100".into());
        }
        if selector_is_empty(&w.match_selector) {
            return Err("selector can not be empty".into());
        }
        if let Some(e) =
            kruise_api::validation::meta::label_selector_as_selector_error(&w.match_selector)
        {
            return Err(format!("invalid selector {e}"));
        }
    }
    if orders.iter().any(|o| o.ordered_key.is_empty()) {
        return Err("order key can not be empty".into());
    }
    Ok(())
}

/// `UpdateScatterStrategy.FieldsValidation`: keys non-empty and no key/value pair repeated.
pub fn validate_scatter_strategy(terms: Option<&[UpdateScatterTerm]>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for t in terms.unwrap_or_default() {
        if t.key.is_empty() {
            return Err("key should not be empty".into());
        }
        if !seen.insert((t.key.as_str(), t.value.as_str())) {
            return Err(format!("duplicated key={} value={}", t.key, t.value));
        }
    }
    Ok(())
}

/// The first JSON-patch operation between the old and new pod spec that is not an image
/// replacement, as `(op, path)`, or `None` when only container images changed.
///
/// With `anchored` the path must be exactly `/containers/<i>/image` (CloneSet); without, it only
/// has to contain `/containers/<i>/image` (Advanced StatefulSet's unanchored expression, which
/// also lets e.g. `/containers/0/imagePullPolicy` through).
pub fn first_non_image_change(
    old: Option<&PodSpec>,
    new: Option<&PodSpec>,
    anchored: bool,
) -> Option<(String, String)> {
    let old = serde_json::to_value(old).unwrap_or_default();
    let new = serde_json::to_value(new).unwrap_or_default();
    let patch = json_patch::diff(&old, &new);
    patch.0.iter().find_map(|op| {
        let (name, path) = match op {
            json_patch::PatchOperation::Replace(r) => ("replace", r.path.to_string()),
            json_patch::PatchOperation::Add(a) => ("add", a.path.to_string()),
            json_patch::PatchOperation::Remove(r) => ("remove", r.path.to_string()),
            json_patch::PatchOperation::Move(m) => ("move", m.path.to_string()),
            json_patch::PatchOperation::Copy(c) => ("copy", c.path.to_string()),
            json_patch::PatchOperation::Test(t) => ("test", t.path.to_string()),
        };
        let ok = name == "replace" && is_image_path(&path, anchored);
        (!ok).then(|| (name.to_owned(), path))
    })
}

fn is_image_path(path: &str, anchored: bool) -> bool {
    let matches_at = |rest: &str| -> bool {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with("/image")
    };
    if anchored {
        path.strip_prefix("/containers/").is_some_and(|rest| {
            matches_at(rest)
                && rest.bytes().filter(|b| *b == b'/').count() == 1
                && rest.ends_with("/image")
        })
    } else {
        path.match_indices("/containers/")
            .any(|(i, m)| matches_at(&path[i + m.len()..]))
    }
}

/// OpenKruise's `ValidateWorkloadDeletion`: with the `ResourcesDeletionProtection` gate on and
/// the object not already being deleted, label `policy.kruise.io/delete-protection=Always`
/// forbids deletion, and `=Cascading` forbids it while `replicas > 0`. The error text is the
/// denial message.
pub fn validate_workload_deletion(
    gates: &FeatureGates,
    meta: &ObjectMeta,
    replicas: Option<i32>,
) -> Result<(), String> {
    if !gates.enabled(Feature::ResourcesDeletionProtection) || meta.deletion_timestamp.is_some() {
        return Ok(());
    }
    let value = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::DELETION_PROTECTION))
        .map(String::as_str);
    match value {
        Some(v @ keys::DELETION_PROTECTION_ALWAYS) => Err(format!(
            "forbidden by ResourcesProtectionDeletion for {}={v}",
            keys::DELETION_PROTECTION
        )),
        Some(v @ keys::DELETION_PROTECTION_CASCADING) => match replicas {
            Some(r) if r > 0 => Err(format!(
                "forbidden by ResourcesProtectionDeletion for {}={v} and replicas {r}>0",
                keys::DELETION_PROTECTION
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_values_like_openkruise() {
        let s = |v: &str| IntOrString::String(v.into());
        assert_eq!(scaled_value(&IntOrString::Int(-3), 10, true), Ok(-3));
        assert_eq!(scaled_value(&s("25%"), 3, true), Ok(1));
        assert_eq!(scaled_value(&s("25%"), 3, false), Ok(0));
        assert_eq!(scaled_value(&s("33.4%"), 3, true), Ok(2));
        assert_eq!(scaled_value(&s("150%"), 4, true), Ok(6));
        assert!(scaled_value(&s("5"), 4, true).is_err());
        assert!(scaled_value(&s("x%"), 4, true).is_err());
    }

    #[test]
    fn image_patch_paths() {
        assert!(is_image_path("/containers/0/image", true));
        assert!(is_image_path("/containers/12/image", true));
        assert!(!is_image_path("/containers/0/imagePullPolicy", true));
        assert!(!is_image_path("/initContainers/0/image", true));
        assert!(!is_image_path("/containers/x/image", true));
        // Unanchored (Advanced StatefulSet): a match anywhere in the path.
        assert!(is_image_path("/containers/0/imagePullPolicy", false));
        assert!(!is_image_path("/initContainers/0/image", false));
    }

    proptest::proptest! {
        #[test]
        fn integer_percentages_round_like_integer_arithmetic(pct in 0i64..=1000, total in 0i32..=10_000) {
            let v = IntOrString::String(format!("{pct}%"));
            let product = pct * i64::from(total);
            proptest::prop_assert_eq!(scaled_value(&v, total, true), Ok((product + 99) / 100));
            proptest::prop_assert_eq!(scaled_value(&v, total, false), Ok(product / 100));
        }
    }
}
