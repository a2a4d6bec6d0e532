//! Advanced StatefulSet validation as OpenKruise v1.9.0's validating webhook does it
//! (`pkg/webhook/statefulset/validating`), on the v1beta1 form (v1alpha1 objects are converted
//! first).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::{
    MAX_MIN_READY_SECONDS, StatefulSet, StatefulSetSpec,
    persistent_volume_claim_retention_policy_type as retention, pod_management_policy_type,
    pod_update_strategy_type, statefulset_update_strategy_type,
};
use kruise_api::keys;
use serde_json::json;

use crate::common::{
    check_nonnegative, first_non_image_change, validate_object_meta_named,
    validate_priority_strategy, validate_restart_and_deadline,
    validate_selector_and_template_labels, validate_statefulset_template,
};
use crate::field::{ErrorList, FieldError, Path};

fn spec_path() -> Path {
    Path::new("spec")
}

/// `podManagementPolicy` is required and must be `OrderedReady` or `Parallel`.
pub fn validate_pod_management_policy(spec: &StatefulSetSpec) -> ErrorList {
    let p = spec_path().child("podManagementPolicy");
    match spec.pod_management_policy.as_deref().unwrap_or("") {
        "" => vec![FieldError::required(p, "")],
        pod_management_policy_type::ORDERED_READY | pod_management_policy_type::PARALLEL => vec![],
        other => vec![FieldError::invalid(
            p,
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )],
    }
}

use kruise_engines::ordinals::parse_range;

/// `reserveOrdinals`: integers must be `>= 0`; strings must be ranges `"a-b"` with `a <= b`. The
/// errors are reported on `spec` with the whole list as value, as v1.9.0 does.
pub fn validate_reserve_ordinals(spec: &StatefulSetSpec) -> ErrorList {
    let mut errs = ErrorList::new();
    let list = spec.reserve_ordinals.as_deref().unwrap_or_default();
    // Go passes the whole `[]intstr.IntOrString`, printed with `%#v`.
    let value = kruise_api::validation::intstr::go_sharp_v_slice(Some(list));
    for (i, elem) in list.iter().enumerate() {
        match elem {
            IntOrString::String(s) => {
                let shaped = s.split_once('-').is_some_and(|(a, b)| {
                    !a.is_empty()
                        && !b.is_empty()
                        && a.bytes().all(|c| c.is_ascii_digit())
                        && b.bytes().all(|c| c.is_ascii_digit())
                });
                if !shaped {
                    errs.push(FieldError::invalid_stringer(
                        spec_path(),
                        value.clone(),
                        format!("{i} th reserve ordinal is not a valid range: {s}"),
                    ));
                }
                if let Err(e) = parse_range(s) {
                    errs.push(FieldError::invalid_stringer(
                        spec_path(),
                        value.clone(),
                        format!("{i} th reserve ordinal is invalid: {s}, err = {e}"),
                    ));
                }
            }
            IntOrString::Int(n) if *n < 0 => errs.push(FieldError::invalid_stringer(
                spec_path(),
                value.clone(),
                format!("{i} th reserve ordinal is negative: {n}"),
            )),
            IntOrString::Int(_) => {}
        }
    }
    errs
}

fn is_parallel(spec: &StatefulSetSpec) -> bool {
    spec.pod_management_policy.as_deref() == Some(pod_management_policy_type::PARALLEL)
}

/// Rules for a `maxUnavailable` (rolling update or scale strategy): a non-negative integer or a
/// `N%` percentage; resolving against 1 (rounded up) gives at least 1; anything but the integer
/// 1 needs `podManagementPolicy: Parallel`.
pub fn validate_max_unavailable(v: &IntOrString, spec: &StatefulSetSpec, path: &Path) -> ErrorList {
    let mut errs = kruise_api::validation::intstr::validate_positive_int_or_percent(v, path);
    match resolve_against_one(v) {
        Err(e) => errs.push(FieldError::invalid(
            path.clone(),
            0,
            format!("getValueFromIntOrPercent error: {e}"),
        )),
        Ok(n) if n < 1 => errs.push(FieldError::invalid(
            path.clone(),
            n,
            "should not be less than 1",
        )),
        Ok(_) => {}
    }
    if !is_parallel(spec) && *v != IntOrString::Int(1) {
        errs.push(kruise_api::validation::intstr::invalid(
            path.clone(),
            v,
            "can only work with Parallel PodManagementPolicyType",
        ));
    }
    errs
}

/// `maxUnavailable` resolved against 1 replica, rounded up; the error as Go's text.
fn resolve_against_one(v: &IntOrString) -> Result<i64, String> {
    // Kubernetes' deprecated `intstr.GetValueFromIntOrPercent(v, 1, true)`, which OpenKruise
    // calls here: every `%` is dropped and the rest must be an integer (`"3"` is 3%).
    match v {
        IntOrString::Int(n) => Ok(i64::from(*n)),
        IntOrString::String(s) => {
            let digits = s.replace('%', "");
            let n = go_atoi(&digits).map_err(|e| {
                format!(
                    "invalid value for IntOrString: invalid value {}: {e}",
                    kruise_api::validation::gofmt::quote(s)
                )
            })?;
            // math.Ceil(float64(n) * 1 / 100)
            Ok((n as f64 / 100.0).ceil() as i64)
        }
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits.
fn go_atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let quoted = kruise_api::validation::gofmt::quote(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {quoted}: invalid syntax"));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {quoted}: value out of range"))
}

/// `persistentVolumeClaimRetentionPolicy.whenDeleted` / `whenScaled` must be `Retain` or `Delete`.
pub fn validate_retention_policy(spec: &StatefulSetSpec) -> ErrorList {
    let Some(policy) = spec.persistent_volume_claim_retention_policy.as_ref() else {
        return vec![];
    };
    let p = spec_path().child("persistentVolumeClaimRetentionPolicy");
    let mut errs = ErrorList::new();
    for (name, v) in [
        ("whenDeleted", policy.when_deleted.as_deref()),
        ("whenScaled", policy.when_scaled.as_deref()),
    ] {
        let v = v.unwrap_or("");
        if v != retention::RETAIN && v != retention::DELETE {
            errs.push(FieldError::not_supported(
                p.child(name),
                v,
                &[retention::RETAIN, retention::DELETE],
            ));
        }
    }
    errs
}

/// Update strategy rules: `type` required, `RollingUpdate` or `OnDelete`; `rollingUpdate` only
/// with `RollingUpdate`; then partition and `minReadySeconds` (0..=300) non-negative,
/// `maxUnavailable` required and valid, `podUpdatePolicy` required (`ReCreate`,
/// `InPlaceIfPossible`, `InPlaceOnly`; the in-place ones need the `InPlaceUpdateReady` readiness
/// gate), `unorderedUpdate` only with `Parallel` and a well-formed priority strategy.
pub fn validate_update_strategy(spec: &StatefulSetSpec) -> ErrorList {
    let sp = spec_path();
    let usp = sp.child("updateStrategy");
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let mut errs = ErrorList::new();
    match strategy.type_.as_deref().unwrap_or("") {
        "" => errs.push(FieldError::required(usp, "")),
        statefulset_update_strategy_type::ON_DELETE => {
            if let Some(ru) = strategy.rolling_update.as_ref() {
                errs.push(FieldError::invalid(
                    usp.child("rollingUpdate"),
                    json!(ru),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        statefulset_update_strategy_type::ROLLING_UPDATE => {
            let Some(ru) = strategy.rolling_update.as_ref() else {
                return errs;
            };
            let rp = usp.child("rollingUpdate");
            errs.extend(check_nonnegative(
                i64::from(ru.partition.unwrap_or(0)),
                rp.child("partition"),
            ));
            let mrs = ru.min_ready_seconds.unwrap_or(0);
            errs.extend(check_nonnegative(
                i64::from(mrs),
                rp.child("minReadySeconds"),
            ));
            if mrs > MAX_MIN_READY_SECONDS {
                errs.push(FieldError::invalid(
                    rp.child("minReadySeconds"),
                    mrs,
                    "must be no more than 300 seconds",
                ));
            }
            match ru.max_unavailable.as_ref() {
                None => errs.push(FieldError::required(rp.child("maxUnavailable"), "")),
                Some(v) => errs.extend(validate_max_unavailable(
                    v,
                    spec,
                    &rp.child("maxUnavailable"),
                )),
            }
            let policy = ru.pod_update_policy.as_deref().unwrap_or("");
            match policy {
                "" => errs.push(FieldError::required(rp.child("podUpdatePolicy"), "")),
                pod_update_strategy_type::RECREATE => {}
                pod_update_strategy_type::IN_PLACE_IF_POSSIBLE
                | pod_update_strategy_type::IN_PLACE_ONLY => {
                    let gates = spec
                        .template
                        .spec
                        .as_ref()
                        .and_then(|s| s.readiness_gates.as_ref());
                    let has_gate = gates
                        .into_iter()
                        .flatten()
                        .any(|g| g.condition_type == keys::IN_PLACE_UPDATE_READY);
                    if !has_gate {
                        errs.push(FieldError::invalid(
                            sp.child("template").child("spec").child("readinessGates"),
                            json!(gates),
                            format!(
                                "must contains {} when podUpdatePolicy is {policy}",
                                keys::IN_PLACE_UPDATE_READY
                            ),
                        ));
                    }
                }
                other => errs.push(FieldError::invalid(
                    rp.child("podUpdatePolicy"),
                    other,
                    "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
                )),
            }
            if let Some(unordered) = ru.unordered_update.as_ref() {
                let up = rp.child("unorderedUpdate");
                if !is_parallel(spec) {
                    errs.push(FieldError::required(
                        up.clone(),
                        "unorderedUpdate can only work with Parallel PodManagementPolicyType",
                    ));
                }
                if let Err(e) = validate_priority_strategy(unordered.priority_strategy.as_ref()) {
                    errs.push(FieldError::required(up.child("priorityStrategy"), e));
                }
            }
        }
        _ => errs.push(FieldError::invalid(
            usp,
            json!(strategy),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    errs
}

/// Validates a StatefulSet being created or the new state of one being updated: metadata;
/// pod management policy; reserve ordinals; `scaleStrategy.maxUnavailable`; update strategy;
/// PVC retention policy; `replicas >= 0`; a valid non-empty selector matching the template
/// labels, and then what Kubernetes validates of a StatefulSet template (labels, annotations
/// and pod-specific annotations, not the pod spec: `ValidatePodTemplateSpecForStatefulSet`);
/// `restartPolicy` Always and no `activeDeadlineSeconds`.
pub fn validate_statefulset(sts: &StatefulSet) -> ErrorList {
    validate_statefulset_with_selector(sts, Some(&sts.spec.selector))
}

/// [`validate_statefulset`] with the selector given separately: `None` for a StatefulSet whose
/// `spec.selector` is absent (Go decodes it as nil; kruise-rs' type needs one).
pub fn validate_statefulset_with_selector(
    sts: &StatefulSet,
    selector: Option<&LabelSelector>,
) -> ErrorList {
    let spec = &sts.spec;
    let sp = spec_path();
    // OpenKruise's `validateStatefulSet`: `ValidateObjectMeta(.., ValidateStatefulSetName)`,
    // a DNS-1123 label (pod names and hostnames derive from it).
    let mut errs =
        validate_object_meta_named(&sts.metadata, kruise_api::validation::meta::dns_label_name);
    errs.extend(validate_pod_management_policy(spec));
    errs.extend(validate_reserve_ordinals(spec));
    if let Some(v) = spec
        .scale_strategy
        .as_ref()
        .and_then(|s| s.max_unavailable.as_ref())
    {
        errs.extend(validate_max_unavailable(
            v,
            spec,
            &sp.child("scaleStrategy").child("maxUnavailable"),
        ));
    }
    errs.extend(validate_update_strategy(spec));
    errs.extend(validate_retention_policy(spec));
    errs.extend(check_nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        sp.child("replicas"),
    ));
    let (selector_errs, check_template) =
        validate_selector_and_template_labels(selector, &spec.template, "statefulset", &sp);
    errs.extend(selector_errs);
    if check_template {
        errs.extend(validate_statefulset_template(
            &spec.template,
            &sp.child("template"),
        ));
    }
    errs.extend(validate_restart_and_deadline(
        &spec.template,
        "StatefulSet",
        &sp,
    ));
    errs
}

fn normalized_selector(sel: &LabelSelector) -> serde_json::Value {
    let mut v = json!(sel);
    if let Some(obj) = v.as_object_mut() {
        obj.retain(|_, x| {
            !(x.as_object().is_some_and(|o| o.is_empty())
                || x.as_array().is_some_and(|a| a.is_empty()))
        });
    }
    v
}

/// Update rules: only `replicas`, `ordinals`, `template`, `reserveOrdinals`, `lifecycle`,
/// `revisionHistoryLimit`, `persistentVolumeClaimRetentionPolicy`, `volumeClaimTemplates`,
/// `volumeClaimUpdateStrategy`, `scaleStrategy` and `updateStrategy` may change (so `selector`,
/// `serviceName` and `podManagementPolicy` are immutable); `replicas >= 0`; valid retention
/// policy.
pub fn validate_statefulset_update(new: &StatefulSet, old: &StatefulSet) -> ErrorList {
    let mut errs = ErrorList::new();
    let immutable_changed = normalized_selector(&new.spec.selector)
        != normalized_selector(&old.spec.selector)
        || new.spec.service_name.as_deref().unwrap_or("")
            != old.spec.service_name.as_deref().unwrap_or("")
        || new.spec.pod_management_policy.as_deref().unwrap_or("")
            != old.spec.pod_management_policy.as_deref().unwrap_or("");
    if immutable_changed {
        errs.push(FieldError::forbidden(
            spec_path(),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', `volumeClaimTemplates`, `VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden",
        ));
    }
    errs.extend(check_nonnegative(
        i64::from(new.spec.replicas.unwrap_or(1)),
        spec_path().child("replicas"),
    ));
    errs.extend(validate_retention_policy(&new.spec));
    errs
}

/// With `podUpdatePolicy: InPlaceOnly`, the template spec may only change container images:
/// `Err` with the denial message naming the first other change.
pub fn validate_in_place_only_update(new: &StatefulSet, old: &StatefulSet) -> Result<(), String> {
    let policy = new
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.pod_update_policy.as_deref());
    if policy != Some(pod_update_strategy_type::IN_PLACE_ONLY) {
        return Ok(());
    }
    match first_non_image_change(
        old.spec.template.spec.as_ref(),
        new.spec.template.spec.as_ref(),
        false,
    ) {
        None => Ok(()),
        Some((op, path)) => Err(format!(
            "invalid template modified with InPlaceOnly strategy: {op} {path}, currently only image update is allowed for InPlaceOnly"
        )),
    }
}

#[cfg(test)]
mod tests;
