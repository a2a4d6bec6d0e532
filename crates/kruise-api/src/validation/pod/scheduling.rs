//! Scheduling rules of `ValidatePodSpec`: affinity, tolerations and topology spread
//! constraints, Kubernetes v1.32.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    Affinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinityTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::super::field::{ErrorList, FieldError, Path};
use super::super::meta::{
    LabelSelectorValidationOptions, validate_label_name, validate_label_selector,
};
use super::super::names::{is_valid_label_value, name_is_dns_label, name_is_dns_subdomain};
use super::{PodValidationOptions, opt};

/// `ValidateNodeSelectorRequirement`.
fn validate_node_selector_requirement(
    rq: &NodeSelectorRequirement,
    allow_invalid_label_value: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = rq.values.as_deref().unwrap_or_default();
    match rq.operator.as_str() {
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
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        op => errs.push(FieldError::invalid(
            path.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(&rq.key, &path.child("key")));
    if !allow_invalid_label_value {
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

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with `In`/`NotIn` and one value.
fn validate_node_field_selector_requirement(
    rq: &NodeSelectorRequirement,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = rq.values.as_deref().unwrap_or_default();
    match rq.operator.as_str() {
        "In" | "NotIn" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        op => errs.push(FieldError::invalid(
            path.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    if rq.key != "metadata.name" {
        errs.push(FieldError::invalid(
            path.child("key"),
            rq.key.as_str(),
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in values.iter().enumerate() {
            errs.extend(
                name_is_dns_subdomain(v, false)
                    .into_iter()
                    .map(|m| FieldError::invalid(path.child("values").index(i), v.as_str(), m)),
            );
        }
    }
    errs
}

/// `ValidateNodeSelectorTerm` (`allow_invalid`: `allowInvalidLabelValueInRequiredNodeAffinity`).
pub fn validate_node_selector_term(
    term: &NodeSelectorTerm,
    allow_invalid: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (j, r) in term.match_expressions.iter().flatten().enumerate() {
        errs.extend(validate_node_selector_requirement(
            r,
            allow_invalid,
            &path.child("matchExpressions").index(j),
        ));
    }
    for (j, r) in term.match_fields.iter().flatten().enumerate() {
        errs.extend(validate_node_field_selector_requirement(
            r,
            &path.child("matchFields").index(j),
        ));
    }
    errs
}

fn validate_node_selector(sel: &NodeSelector, path: &Path) -> ErrorList {
    let tp = path.child("nodeSelectorTerms");
    if sel.node_selector_terms.is_empty() {
        return vec![FieldError::required(
            tp,
            "must have at least one node selector term",
        )];
    }
    sel.node_selector_terms
        .iter()
        .enumerate()
        .flat_map(|(i, t)| validate_node_selector_term(t, true, &tp.index(i)))
        .collect()
}

/// `validateMatchLabelKeysAndMismatchLabelKeys` of a pod affinity term.
fn validate_match_label_keys(
    path: &Path,
    match_keys: &[String],
    mismatch_keys: &[String],
    sel: Option<&LabelSelector>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (keys, child) in [
        (match_keys, "matchLabelKeys"),
        (mismatch_keys, "mismatchLabelKeys"),
    ] {
        if keys.is_empty() {
            continue;
        }
        let p = path.child(child);
        if sel.is_none() {
            errs.push(FieldError::forbidden(
                p,
                "must not be specified when labelSelector is not set",
            ));
            continue;
        }
        for (i, k) in keys.iter().enumerate() {
            errs.extend(validate_label_name(k, &p.index(i)));
        }
    }
    if let Some(sel) = sel {
        let mut selector_keys: BTreeSet<&str> = sel
            .match_labels
            .iter()
            .flat_map(|m| m.keys().map(String::as_str))
            .collect();
        for e in sel.match_expressions.iter().flatten() {
            if let Some(i) = match_keys.iter().rposition(|k| *k == e.key)
                && selector_keys.contains(e.key.as_str())
            {
                errs.push(FieldError::invalid(
                    path.index(i),
                    e.key.as_str(),
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            selector_keys.insert(e.key.as_str());
        }
    }
    let mismatch: BTreeSet<&str> = mismatch_keys.iter().map(String::as_str).collect();
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch.contains(k.as_str()) {
            errs.push(FieldError::invalid(
                path.child("matchLabelKeys").index(i),
                k.as_str(),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    errs
}

fn validate_pod_affinity_term(
    term: &PodAffinityTerm,
    allow_invalid: bool,
    path: &Path,
) -> ErrorList {
    let opts = LabelSelectorValidationOptions {
        allow_invalid_label_value_in_selector: allow_invalid,
    };
    let mut errs = validate_label_selector(
        term.label_selector.as_ref(),
        opts,
        &path.child("labelSelector"),
    );
    errs.extend(validate_label_selector(
        term.namespace_selector.as_ref(),
        opts,
        &path.child("namespaceSelector"),
    ));
    for ns in term.namespaces.iter().flatten() {
        errs.extend(
            name_is_dns_label(ns, false)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("namespace"), ns.as_str(), m)),
        );
    }
    errs.extend(validate_match_label_keys(
        path,
        term.match_label_keys.as_deref().unwrap_or_default(),
        term.mismatch_label_keys.as_deref().unwrap_or_default(),
        term.label_selector.as_ref(),
    ));
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(
            path.child("topologyKey"),
            "can not be empty",
        ));
    }
    errs.extend(validate_label_name(
        &term.topology_key,
        &path.child("topologyKey"),
    ));
    errs
}

fn validate_pod_affinity_terms(
    terms: &[PodAffinityTerm],
    allow_invalid: bool,
    path: &Path,
) -> ErrorList {
    terms
        .iter()
        .enumerate()
        .flat_map(|(i, t)| validate_pod_affinity_term(t, allow_invalid, &path.index(i)))
        .collect()
}

fn validate_weighted_terms(
    terms: &[WeightedPodAffinityTerm],
    allow_invalid: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (j, t) in terms.iter().enumerate() {
        if t.weight <= 0 || t.weight > 100 {
            errs.push(FieldError::invalid(
                path.index(j).child("weight"),
                t.weight,
                "must be in the range 1-100",
            ));
        }
        errs.extend(validate_pod_affinity_term(
            &t.pod_affinity_term,
            allow_invalid,
            &path.index(j).child("podAffinityTerm"),
        ));
    }
    errs
}

/// `validateAffinity`: node affinity (at least one required term; preferred weights 1-100),
/// pod affinity and anti-affinity terms.
pub(crate) fn validate_affinity(
    a: Option<&Affinity>,
    opts: &PodValidationOptions,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(a) = a else {
        return errs;
    };
    if let Some(na) = a.node_affinity.as_ref() {
        let p = path.child("nodeAffinity");
        if let Some(r) = na
            .required_during_scheduling_ignored_during_execution
            .as_ref()
        {
            errs.extend(validate_node_selector(
                r,
                &p.child("requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let pp = p.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in na
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            if t.weight <= 0 || t.weight > 100 {
                errs.push(FieldError::invalid(
                    pp.index(i).child("weight"),
                    t.weight,
                    "must be in the range 1-100",
                ));
            }
            errs.extend(validate_node_selector_term(
                &t.preference,
                true,
                &pp.index(i).child("preference"),
            ));
        }
    }
    let allow = opts.allow_invalid_label_value_in_selector;
    for (aff, child) in [
        (
            a.pod_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
            "podAffinity",
        ),
        (
            a.pod_anti_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
            "podAntiAffinity",
        ),
    ] {
        let Some((required, preferred)) = aff else {
            continue;
        };
        let p = path.child(child);
        if let Some(r) = required {
            errs.extend(validate_pod_affinity_terms(
                r,
                allow,
                &p.child("requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        if let Some(w) = preferred {
            errs.extend(validate_weighted_terms(
                w,
                allow,
                &p.child("preferredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
    }
    errs
}

/// `ValidateTolerations`.
pub fn validate_tolerations(tolerations: &[Toleration], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let key = opt(&t.key);
        let op = opt(&t.operator);
        let effect = opt(&t.effect);
        let value = opt(&t.value);
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &p.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                p.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                p.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        p.child("operator"),
                        value,
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        p.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                p.child("operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
        {
            errs.push(FieldError::not_supported(
                p.child("effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

/// `validateTopologySpreadConstraints`.
pub(crate) fn validate_topology_spread_constraints(
    constraints: &[TopologySpreadConstraint],
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, c) in constraints.iter().enumerate() {
        let p = path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                p.child("maxSkew"),
                c.max_skew,
                "must be greater than zero",
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                p.child("topologyKey"),
                "can not be empty",
            ));
        }
        let when = c.when_unsatisfiable.as_str();
        if when != "DoNotSchedule" && when != "ScheduleAnyway" {
            errs.push(FieldError::not_supported(
                p.child("whenUnsatisfiable"),
                when,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                p.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{}, {}}}", c.topology_key, when),
            ));
        }
        if let Some(m) = c.min_domains {
            let mp = p.child("minDomains");
            if m <= 0 {
                errs.push(FieldError::invalid(
                    mp.clone(),
                    m,
                    "must be greater than zero",
                ));
            }
            if when != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    mp,
                    m,
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"
                    ),
                ));
            }
        }
        for (policy, child) in [
            (c.node_affinity_policy.as_deref(), "nodeAffinityPolicy"),
            (c.node_taints_policy.as_deref(), "nodeTaintsPolicy"),
        ] {
            if let Some(v) = policy
                && v != "Honor"
                && v != "Ignore"
            {
                errs.push(FieldError::not_supported(
                    p.child(child),
                    v,
                    &["Honor", "Ignore"],
                ));
            }
        }
        let keys = c.match_label_keys.as_deref().unwrap_or_default();
        if !keys.is_empty() {
            let kp = p.child("matchLabelKeys");
            let mut selector_keys: BTreeSet<&str> = BTreeSet::new();
            match c.label_selector.as_ref() {
                Some(sel) => {
                    selector_keys.extend(
                        sel.match_labels
                            .iter()
                            .flat_map(|m| m.keys().map(String::as_str)),
                    );
                    selector_keys.extend(
                        sel.match_expressions
                            .iter()
                            .flatten()
                            .map(|e| e.key.as_str()),
                    );
                }
                None => errs.push(FieldError::forbidden(
                    kp.clone(),
                    "must not be specified when labelSelector is not set",
                )),
            }
            for (j, k) in keys.iter().enumerate() {
                errs.extend(validate_label_name(k, &kp.index(j)));
                if selector_keys.contains(k.as_str()) {
                    errs.push(FieldError::invalid(
                        kp.index(j),
                        k.as_str(),
                        "exists in both matchLabelKeys and labelSelector",
                    ));
                }
            }
        }
        if !opts.allow_invalid_topology_spread_constraint_label_selector {
            errs.extend(validate_label_selector(
                c.label_selector.as_ref(),
                LabelSelectorValidationOptions::default(),
                &p.child("labelSelector"),
            ));
        }
    }
    errs
}
