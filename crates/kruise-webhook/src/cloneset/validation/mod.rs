//! CloneSet validation as OpenKruise v1.9.0's validating webhook does it
//! (`pkg/webhook/cloneset/validating`), as pure functions over the typed objects.
//!
//! The one rule that needs the API — every pod newly named in `scaleStrategy.podsToDelete`
//! must exist, not be terminating and be controlled by this CloneSet — is split in two pure
//! halves: [`pods_to_delete_to_check`] picks the names, [`check_pod_to_delete`] judges one
//! looked-up pod; the handler does the lookups in between.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kruise_api::apps::v1alpha1::{
    CloneSet, CloneSetScaleStrategy, CloneSetSpec, CloneSetUpdateStrategy, update_strategy_type,
};
use kruise_api::pod::CachedPod;
use serde_json::json;

use crate::common::{
    check_nonnegative, first_non_image_change, int_or_string_text, scaled_value,
    validate_object_meta, validate_priority_strategy, validate_restart_and_deadline,
    validate_scatter_strategy, validate_selector_and_template_labels,
    validate_template_with_claims,
};
use crate::field::{ErrorList, FieldError, Path};

/// `progressDeadlineSeconds` value meaning "no deadline" (Go's `math.MaxInt32`).
const NO_PROGRESS_DEADLINE: i32 = i32::MAX;

/// The replicas the rules use: `spec.replicas`, or the default 1 when the mutating webhook did
/// not run.
fn replicas_of(spec: &CloneSetSpec) -> i32 {
    spec.replicas.unwrap_or(1)
}

/// Validates a CloneSet being created, or the new state of one being updated (the existence
/// checks of `podsToDelete` are separate, see [`pods_to_delete_to_check`]): metadata;
/// `replicas >= 0`; non-empty valid selector matching the template labels; the pod template
/// (Kubernetes' `ValidatePodTemplateSpec` on the defaulted template, volume claim templates
/// counting as volumes; not when the selector cannot be converted); `restartPolicy` Always and
/// no `activeDeadlineSeconds`; no duplicate `podsToDelete`; update strategy
/// ([`validate_update_strategy`]); `progressDeadlineSeconds >= 0` and greater than
/// `minReadySeconds` unless it is `2147483647`.
pub fn validate_cloneset(cs: &CloneSet) -> ErrorList {
    validate_cloneset_with_selector(cs, Some(&cs.spec.selector))
}

/// [`validate_cloneset`] with the selector given separately: `None` for a CloneSet whose
/// `spec.selector` is absent (Go decodes it as nil; kruise-rs' type needs one, so the handler
/// fills in an empty one and says so).
pub fn validate_cloneset_with_selector(
    cs: &CloneSet,
    selector: Option<&LabelSelector>,
) -> ErrorList {
    let mut errs = validate_object_meta(&cs.metadata);
    let spec = &cs.spec;
    let sp = Path::new("spec");
    let replicas = replicas_of(spec);
    errs.extend(check_nonnegative(i64::from(replicas), sp.child("replicas")));
    let (selector_errs, check_template) =
        validate_selector_and_template_labels(selector, &spec.template, "cloneset", &sp);
    errs.extend(selector_errs);
    if check_template {
        errs.extend(validate_template_with_claims(
            &spec.template,
            spec.volume_claim_templates.as_deref().unwrap_or_default(),
            &sp.child("template"),
        ));
    }
    errs.extend(validate_restart_and_deadline(
        &spec.template,
        "cloneset",
        &sp,
    ));
    errs.extend(validate_scale_strategy(
        spec.scale_strategy.as_ref(),
        &sp.child("scaleStrategy"),
    ));
    let default_strategy = CloneSetUpdateStrategy::default();
    errs.extend(validate_update_strategy(
        spec.update_strategy.as_ref().unwrap_or(&default_strategy),
        replicas,
        &sp.child("updateStrategy"),
    ));
    if let Some(pds) = spec.progress_deadline_seconds {
        let p = sp.child("progressDeadlineSeconds");
        errs.extend(check_nonnegative(i64::from(pds), p.clone()));
        if pds != NO_PROGRESS_DEADLINE && pds <= spec.min_ready_seconds.unwrap_or(0) {
            errs.push(FieldError::invalid(
                p,
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// The pure part of the scale strategy rule: `podsToDelete` may not list a pod twice.
pub fn validate_scale_strategy(s: Option<&CloneSetScaleStrategy>, path: &Path) -> ErrorList {
    let names = s
        .and_then(|s| s.pods_to_delete.as_deref())
        .unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    let mut dups: Vec<&str> = Vec::new();
    for n in names {
        if !seen.insert(n.as_str()) && !dups.contains(&n.as_str()) {
            dups.push(n.as_str());
        }
    }
    if dups.is_empty() {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        path.child("podsToDelete"),
        json!(names),
        format!("duplicated items [{}]", dups.join(" ")),
    )]
}

/// Names in the new `podsToDelete` that were not in the old one, sorted and deduplicated: the
/// pods the handler must look up. Empty when the list has duplicates (that is already an error).
pub fn pods_to_delete_to_check(
    new: Option<&CloneSetScaleStrategy>,
    old: Option<&CloneSetScaleStrategy>,
) -> Vec<String> {
    let list = |s: Option<&CloneSetScaleStrategy>| -> Vec<String> {
        s.and_then(|s| s.pods_to_delete.clone()).unwrap_or_default()
    };
    let new = list(new);
    let old = list(old);
    let set: std::collections::BTreeSet<&String> = new.iter().collect();
    if set.len() != new.len() {
        return Vec::new();
    }
    set.into_iter()
        .filter(|n| !old.contains(n))
        .cloned()
        .collect()
}

/// Judges one pod named in `podsToDelete`, given what the lookup returned: `Err(text)` when the
/// get failed (e.g. `pods "x" not found`), or the pod. The pod must not be terminating and must
/// be controlled by the CloneSet with `owner_uid`.
pub fn check_pod_to_delete(
    name: &str,
    lookup: Result<&CachedPod, String>,
    owner_uid: Option<&str>,
) -> Option<FieldError> {
    let path = Path::new("spec")
        .child("scaleStrategy")
        .child("podsToDelete");
    let detail = match lookup {
        Err(e) => format!("find pod {name} failed: {e}"),
        Ok(pod) if pod.metadata.deletion_timestamp.is_some() => {
            format!("find pod {name} already terminating")
        }
        Ok(pod) => {
            let controller_uid = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| o.uid.as_str());
            match (controller_uid, owner_uid) {
                (Some(c), Some(o)) if c == o => return None,
                _ => format!("find pod {name} owner is not this CloneSet"),
            }
        }
    };
    Some(FieldError::invalid(path, name, detail))
}

/// Update strategy rules: `type` is `ReCreate`, `InPlaceIfPossible` or `InPlaceOnly`;
/// `partition` resolves (percentages against `replicas`, rounded up) to a value `>= 0` and a
/// percentage is at most `100%` (stricter than v1.9.0, which clamps larger ones);
/// priority and scatter strategies are well formed; `maxUnavailable` / `maxSurge` resolve;
/// `maxSurge > 0` is refused with `InPlaceOnly`; with `replicas > 0`, `maxUnavailable` and
/// `maxSurge` may not both be below 1.
pub fn validate_update_strategy(
    s: &CloneSetUpdateStrategy,
    replicas: i32,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let type_ = s.type_.as_deref().unwrap_or("");
    if ![
        update_strategy_type::RE_CREATE,
        update_strategy_type::IN_PLACE_IF_POSSIBLE,
        update_strategy_type::IN_PLACE_ONLY,
    ]
    .contains(&type_)
    {
        errs.push(FieldError::invalid(
            path.child("type"),
            type_,
            "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
        ));
    }

    let pp = path.child("partition");
    let partition = match s.partition.as_ref() {
        None => Err(("<nil>".to_owned(), "nil value for IntOrString".to_owned())),
        Some(v) => scaled_value(v, replicas, true).map_err(|e| (int_or_string_text(v), e)),
    };
    match partition {
        Ok(p) => errs.extend(check_nonnegative(p, pp)),
        Err((text, e)) => errs.push(FieldError::invalid(
            pp,
            text,
            format!("failed GetScaledValueFromIntOrPercent for partition: {e}"),
        )),
    }

    if let Err(e) = validate_priority_strategy(s.priority_strategy.as_ref()) {
        errs.push(FieldError::required(path.child("priorityStrategy"), e));
    }
    if let Err(e) = validate_scatter_strategy(s.scatter_strategy.as_deref()) {
        errs.push(FieldError::required(path.child("scatterStrategy"), e));
    }

    let mut max_unavailable = 0;
    if let Some(v) = s.max_unavailable.as_ref() {
        match scaled_value(v, replicas, true) {
            Ok(n) => max_unavailable = n,
            Err(e) => errs.push(FieldError::invalid(
                path.child("maxUnavailable"),
                int_or_string_text(v),
                format!("failed GetScaledValueFromIntOrPercent for maxUnavailable: {e}"),
            )),
        }
    }
    let mut max_surge = 0;
    if let Some(v) = s.max_surge.as_ref() {
        match scaled_value(v, replicas, true) {
            Ok(n) => max_surge = n,
            Err(e) => errs.push(FieldError::invalid(
                path.child("maxSurge"),
                int_or_string_text(v),
                format!("failed GetScaledValueFromIntOrPercent for maxSurge: {e}"),
            )),
        }
        if type_ == update_strategy_type::IN_PLACE_ONLY && max_surge > 0 {
            errs.push(FieldError::invalid(
                path.child("maxSurge"),
                int_or_string_text(v),
                "can not use maxSurge with strategy type InPlaceOnly",
            ));
        }
    }
    if replicas > 0 && max_unavailable < 1 && max_surge < 1 {
        errs.push(match &s.max_unavailable {
            Some(v) => kruise_api::validation::intstr::invalid(
                path.child("maxUnavailable"),
                v,
                "maxUnavailable and maxSurge should not both be less than 1",
            ),
            None => FieldError::invalid(
                path.child("maxUnavailable"),
                serde_json::Value::Null,
                "maxUnavailable and maxSurge should not both be less than 1",
            ),
        });
    }
    errs
}

/// A label selector with empty lists/maps treated as absent, so that comparisons follow
/// apimachinery's semantic equality.
fn normalized_selector(sel: &LabelSelector) -> LabelSelector {
    let mut s = sel.clone();
    if s.match_labels.as_ref().is_some_and(|m| m.is_empty()) {
        s.match_labels = None;
    }
    if let Some(exprs) = s.match_expressions.as_mut() {
        for e in exprs.iter_mut() {
            if e.values.as_ref().is_some_and(Vec::is_empty) {
                e.values = None;
            }
        }
    }
    if s.match_expressions.as_ref().is_some_and(Vec::is_empty) {
        s.match_expressions = None;
    }
    s
}

/// Validates an update: only `replicas`, `template`, `lifecycle`, `scaleStrategy`,
/// `updateStrategy`, `minReadySeconds`, `progressDeadlineSeconds`, `volumeClaimTemplates` and
/// `revisionHistoryLimit` may change (so the selector is immutable); with `InPlaceOnly` the
/// template spec may only change container images; then every rule of [`validate_cloneset`].
pub fn validate_cloneset_update(new: &CloneSet, old: &CloneSet) -> ErrorList {
    validate_cloneset_update_with_selector(new, Some(&new.spec.selector), old)
}

/// [`validate_cloneset_update`] with the new selector given separately (`None`: absent).
pub fn validate_cloneset_update_with_selector(
    new: &CloneSet,
    selector: Option<&LabelSelector>,
    old: &CloneSet,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if normalized_selector(&new.spec.selector) != normalized_selector(&old.spec.selector) {
        errs.push(FieldError::forbidden(
            Path::new("spec"),
            "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden",
        ));
    }
    let type_ = new
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref());
    if type_ == Some(update_strategy_type::IN_PLACE_ONLY)
        && let Some((op, path)) = first_non_image_change(
            old.spec.template.spec.as_ref(),
            new.spec.template.spec.as_ref(),
            true,
        )
    {
        errs.push(FieldError::forbidden(
            Path::new("spec"),
            format!("only allowed to update images in spec for InPlaceOnly, but found {op} {path}"),
        ));
    }
    errs.extend(validate_cloneset_with_selector(new, selector));
    errs
}

#[cfg(test)]
mod tests;
