//! The rules of OpenKruise v1.9.0's `pkg/webhook/daemonset/validating` for both versions.

use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::rolling_update_type as a1_rut;
use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use serde_json::json;

use crate::common::{check_nonnegative, validate_object_meta, validate_template_with_claims};
use crate::field::{ErrorList, FieldError, Path};

/// The parts both versions share.
struct SpecView<'a> {
    selector: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    template: &'a PodTemplateSpec,
    min_ready_seconds: i32,
    revision_history_limit: Option<i32>,
    in_place_update_hook: bool,
}

/// OpenKruise `validateDaemonSetSpec[V1beta1]` minus the update strategy.
fn validate_spec_common(v: &SpecView<'_>, sp: &Path) -> ErrorList {
    // Unlike CloneSet's and StatefulSet's, the DaemonSet rules add nothing for a selector that
    // cannot be converted (the label match is just skipped) and always check the template.
    let sel_path = sp.child("selector");
    let mut errs = kruise_api::validation::meta::validate_label_selector(
        Some(v.selector),
        Default::default(),
        &sel_path,
    );
    let labels = v.template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if kruise_api::validation::meta::label_selector_convertible(v.selector)
        && crate::common::selector_matches(v.selector, labels) == Some(false)
    {
        errs.push(FieldError::invalid(
            sp.child("template").child("metadata").child("labels"),
            json!(labels),
            "`selector` does not match template `labels`",
        ));
    }
    if crate::common::selector_is_empty(v.selector) {
        errs.push(FieldError::invalid(
            sel_path,
            json!(v.selector),
            "empty selector is invalid for daemonset",
        ));
    }
    errs.extend(validate_template_with_claims(
        v.template,
        &[],
        &sp.child("template"),
    ));
    // `ConvertPodTemplateSpec` defaults the template in place before these two checks.
    let mut spec = v.template.spec.clone().unwrap_or_default();
    kruise_api::defaults::podspec::set_defaults_pod_spec(&mut spec);
    errs.extend(validate_restart_and_deadline(&spec, sp));
    errs.extend(check_nonnegative(
        i64::from(v.min_ready_seconds),
        sp.child("minReadySeconds"),
    ));
    if let Some(limit) = v.revision_history_limit {
        errs.extend(check_nonnegative(
            i64::from(limit),
            sp.child("revisionHistoryLimit"),
        ));
    }
    if v.in_place_update_hook {
        errs.push(FieldError::forbidden(
            sp.child("lifecycle").child("inPlaceUpdate"),
            "inPlaceUpdate hook has not supported yet",
        ));
    }
    errs
}

fn validate_restart_and_deadline(spec: &PodSpec, sp: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let tp = sp.child("template").child("spec");
    let rp = spec.restart_policy.as_deref().unwrap_or("");
    if rp != "Always" {
        errs.push(FieldError::not_supported(
            tp.child("restartPolicy"),
            rp,
            &["Always"],
        ));
    }
    if spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            tp.child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    errs
}

/// The update strategy fields both versions share.
struct StrategyView<'a> {
    type_: &'a str,
    rolling: Option<RollingView<'a>>,
}

struct RollingView<'a> {
    type_: &'a str,
    max_unavailable: Option<&'a IntOrString>,
    max_surge: Option<&'a IntOrString>,
    partition: Option<&'a IntOrString>,
    /// The rolling update types this version accepts (v1alpha1 also `Surging`).
    supported: &'a [&'a str],
}

use kruise_api::validation::intstr::{
    is_not_more_than_100_percent as not_more_than_100_percent, percent_value,
    validate_positive_int_or_percent,
};

/// OpenKruise `getIntOrPercentValue`: the percent number, else `IntValue()` (a string that is
/// not a percent parses as an integer, 0 when it is not one).
fn int_or_percent_value(v: &IntOrString) -> i64 {
    match v {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(s) => percent_value(v).unwrap_or_else(|| s.parse().unwrap_or(0)),
    }
}

/// OpenKruise `validateDaemonSetUpdateStrategy[V1beta1]`.
fn validate_strategy(
    s: &StrategyView<'_>,
    strategy_value: serde_json::Value,
    p: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    match s.type_ {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = s.rolling.as_ref() else {
                errs.push(FieldError::required(p.child("rollingUpdate"), ""));
                return errs;
            };
            let rp = p.child("rollingUpdate");
            let has_unavailable = ru
                .max_unavailable
                .is_some_and(|v| int_or_percent_value(v) != 0);
            let has_surge = ru.max_surge.is_some_and(|v| int_or_percent_value(v) != 0);
            if has_unavailable && let Some(v) = ru.max_unavailable {
                errs.extend(validate_positive_int_or_percent(
                    v,
                    &rp.child("maxUnavailable"),
                ));
                errs.extend(not_more_than_100_percent(v, &rp.child("maxUnavailable")));
            }
            if has_surge && let Some(v) = ru.max_surge {
                errs.extend(validate_positive_int_or_percent(v, &rp.child("maxSurge")));
                errs.extend(not_more_than_100_percent(v, &rp.child("maxSurge")));
            }
            if has_unavailable && has_surge {
                if let Some(v) = ru.max_surge {
                    errs.push(kruise_api::validation::intstr::invalid(
                        rp.child("maxSurge"),
                        v,
                        "may not be set when maxUnavailable is non-zero",
                    ));
                }
            } else if !has_unavailable && !has_surge {
                errs.push(FieldError::required(
                    rp.child("maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                ));
            }
            match ru.type_ {
                "" | a1_rut::STANDARD => {}
                a1_rut::IN_PLACE_IF_POSSIBLE => {
                    if has_surge {
                        errs.push(FieldError::required(
                            rp.child("maxSurge"),
                            "must be 0 for InPlaceIfPossible type",
                        ));
                    }
                }
                a1_rut::SURGING if ru.supported.contains(&a1_rut::SURGING) => {
                    if has_unavailable {
                        errs.push(FieldError::required(
                            rp.child("maxUnavailable"),
                            "must be 0 for Surging type",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    rp.child("rollingUpdate").child("type"),
                    other,
                    ru.supported,
                )),
            }
            if let Some(v) = ru.partition {
                let pp = rp.child("rollingUpdate").child("partition");
                match v {
                    IntOrString::String(_) => errs.extend(validate_positive_int_or_percent(v, &pp)),
                    IntOrString::Int(n) => {
                        errs.extend(check_nonnegative(i64::from(*n), pp.clone()))
                    }
                }
                errs.extend(not_more_than_100_percent(v, &pp));
            }
        }
        _ => errs.push(FieldError::not_supported(
            p.clone(),
            strategy_value,
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs
}

/// Validates a v1beta1 Advanced DaemonSet (OpenKruise `validateDaemonSetV1beta1`): metadata,
/// a valid non-empty selector matching the template labels, Kubernetes' pod template
/// validation, `restartPolicy: Always`, no `activeDeadlineSeconds`, `minReadySeconds` and
/// `revisionHistoryLimit` non-negative, the update strategy, no inPlaceUpdate hook.
pub fn validate_daemonset(ds: &b1::DaemonSet) -> ErrorList {
    let mut errs = validate_object_meta(&ds.metadata);
    errs.extend(validate_spec_v1beta1(&ds.spec));
    errs
}

fn validate_spec_v1beta1(spec: &b1::DaemonSetSpec) -> ErrorList {
    let sp = Path::new("spec");
    let mut errs = validate_spec_common(
        &SpecView {
            selector: &spec.selector,
            template: &spec.template,
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            revision_history_limit: spec.revision_history_limit,
            in_place_update_hook: spec
                .lifecycle
                .as_ref()
                .is_some_and(|l| l.in_place_update.is_some()),
        },
        &sp,
    );
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let view = StrategyView {
        type_: strategy.type_.as_deref().unwrap_or(""),
        rolling: strategy.rolling_update.as_ref().map(|r| RollingView {
            type_: r.type_.as_deref().unwrap_or(""),
            max_unavailable: r.max_unavailable.as_ref(),
            max_surge: r.max_surge.as_ref(),
            partition: r.partition.as_ref(),
            supported: &[a1_rut::STANDARD, a1_rut::IN_PLACE_IF_POSSIBLE],
        }),
    };
    errs.extend(validate_strategy(
        &view,
        serde_json::to_value(&strategy).unwrap_or_default(),
        &sp.child("updateStrategy"),
    ));
    errs
}

pub(super) fn validate_v1alpha1(ds: &a1::DaemonSet) -> ErrorList {
    let mut errs = validate_object_meta(&ds.metadata);
    errs.extend(validate_spec_v1alpha1(&ds.spec));
    errs
}

fn validate_spec_v1alpha1(spec: &a1::DaemonSetSpec) -> ErrorList {
    let sp = Path::new("spec");
    let mut errs = validate_spec_common(
        &SpecView {
            selector: &spec.selector,
            template: &spec.template,
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            revision_history_limit: spec.revision_history_limit,
            in_place_update_hook: spec
                .lifecycle
                .as_ref()
                .is_some_and(|l| l.in_place_update.is_some()),
        },
        &sp,
    );
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let view = StrategyView {
        type_: strategy.type_.as_deref().unwrap_or(""),
        rolling: strategy.rolling_update.as_ref().map(|r| RollingView {
            type_: r.type_.as_deref().unwrap_or(""),
            max_unavailable: r.max_unavailable.as_ref(),
            max_surge: r.max_surge.as_ref(),
            partition: r.partition.as_ref(),
            supported: &[
                a1_rut::STANDARD,
                a1_rut::SURGING,
                a1_rut::IN_PLACE_IF_POSSIBLE,
            ],
        }),
    };
    errs.extend(validate_strategy(
        &view,
        serde_json::to_value(&strategy).unwrap_or_default(),
        &sp.child("updateStrategy"),
    ));
    errs
}

/// The spec fields an update may change (OpenKruise `validateDaemonSetUpdate[V1beta1]`):
/// everything else must stay equal.
const IMMUTABLE_MESSAGE_V1BETA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";
const IMMUTABLE_MESSAGE_V1ALPHA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', 'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";

/// Validates an update of a v1beta1 Advanced DaemonSet: metadata update rules, only the
/// mutable spec fields changed, then [`validate_daemonset`]'s spec rules on the new object.
pub fn validate_daemonset_update(new: &b1::DaemonSet, old: &b1::DaemonSet) -> ErrorList {
    let mut errs = kruise_api::validation::meta::validate_object_meta_update(
        &new.metadata,
        &old.metadata,
        &Path::new("metadata"),
    );
    let mut frozen = new.spec.clone();
    frozen.template = old.spec.template.clone();
    frozen.update_strategy = old.spec.update_strategy.clone();
    frozen.lifecycle = old.spec.lifecycle.clone();
    frozen.burst_replicas = old.spec.burst_replicas.clone();
    frozen.min_ready_seconds = old.spec.min_ready_seconds;
    frozen.revision_history_limit = old.spec.revision_history_limit;
    frozen.scale_strategy = old.spec.scale_strategy.clone();
    if !semantic_equal(&frozen, &old.spec) {
        errs.push(FieldError::forbidden(
            Path::new("spec"),
            IMMUTABLE_MESSAGE_V1BETA1,
        ));
    }
    errs.extend(validate_spec_v1beta1(&new.spec));
    errs
}

pub(super) fn validate_update_v1alpha1(new: &a1::DaemonSet, old: &a1::DaemonSet) -> ErrorList {
    let mut errs = kruise_api::validation::meta::validate_object_meta_update(
        &new.metadata,
        &old.metadata,
        &Path::new("metadata"),
    );
    let mut frozen = new.spec.clone();
    frozen.template = old.spec.template.clone();
    frozen.update_strategy = old.spec.update_strategy.clone();
    frozen.lifecycle = old.spec.lifecycle.clone();
    frozen.burst_replicas = old.spec.burst_replicas.clone();
    frozen.min_ready_seconds = old.spec.min_ready_seconds;
    frozen.revision_history_limit = old.spec.revision_history_limit;
    if !semantic_equal(&frozen, &old.spec) {
        errs.push(FieldError::forbidden(
            Path::new("spec"),
            IMMUTABLE_MESSAGE_V1ALPHA1,
        ));
    }
    errs.extend(validate_spec_v1alpha1(&new.spec));
    errs
}

/// apimachinery's `Semantic.DeepEqual` for the spec as kruise-rs holds it: equal JSON once
/// absent values and Go zero values are treated alike.
fn semantic_equal<T: serde::Serialize>(a: &T, b: &T) -> bool {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.values_mut().for_each(strip);
                m.retain(|_, v| {
                    !(v.is_null()
                        || v.as_str() == Some("")
                        || v.as_array().is_some_and(Vec::is_empty)
                        || v.as_object().is_some_and(serde_json::Map::is_empty)
                        || v.as_bool() == Some(false)
                        || v.as_i64() == Some(0))
                });
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let (mut x, mut y) = (
        serde_json::to_value(a).unwrap_or_default(),
        serde_json::to_value(b).unwrap_or_default(),
    );
    strip(&mut x);
    strip(&mut y);
    x == y
}
