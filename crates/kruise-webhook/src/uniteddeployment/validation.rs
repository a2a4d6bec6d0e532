//! UnitedDeployment validation (OpenKruise v1.9.0
//! `pkg/webhook/uniteddeployment/validating/uniteddeployment_validation.go`): messages and field
//! paths as OpenKruise's, including its quirks (an Advanced StatefulSet template's label mismatch
//! is reported under `statefulSetTemplate`, a subset's bad `maxReplicas` under `minReplicas`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{Subset, SubsetTemplate, Topology, UnitedDeployment};
use kruise_api::validation::meta::{
    LabelSelectorValidationOptions, label_selector_convertible, validate_label_selector,
    validate_object_meta_update,
};
use kruise_api::validation::names::name_is_dns_label;
use kruise_api::validation::pod::{validate_node_selector_term, validate_tolerations};
use serde_json::{Value, json};

use crate::common::{
    check_nonnegative, selector_is_empty, selector_matches, validate_object_meta,
    validate_statefulset_template, validate_template_with_claims,
};
use crate::field::{ErrorList, FieldError, Path};

/// `validateUnitedDeployment`: metadata (a DNS-1123 subdomain name) and spec.
pub fn validate_uniteddeployment(ud: &UnitedDeployment) -> ErrorList {
    let mut errs = validate_object_meta(&ud.metadata);
    errs.extend(validate_spec(ud, &Path::new("spec")));
    errs
}

fn schedule_adaptive(t: Option<&Topology>) -> (bool, bool) {
    let s = t.and_then(|t| t.schedule_strategy.as_ref());
    (
        s.is_some_and(|s| s.is_adaptive()),
        s.is_some_and(|s| s.should_reserve_unschedulable_pods()),
    )
}

/// `validateUnitedDeploymentSpec`.
fn validate_spec(ud: &UnitedDeployment, path: &Path) -> ErrorList {
    let spec = &ud.spec;
    let mut errs = ErrorList::new();
    if let Some(r) = spec.replicas {
        errs.extend(check_nonnegative(i64::from(r), path.child("replicas")));
    }
    let sel_path = path.child("selector");
    errs.extend(validate_label_selector(
        Some(&spec.selector),
        LabelSelectorValidationOptions::default(),
        &sel_path,
    ));
    if selector_is_empty(&spec.selector) {
        errs.push(FieldError::invalid(
            sel_path.clone(),
            json!(spec.selector),
            "empty selector is invalid for statefulset",
        ));
    }
    let (adaptive, reserve) = schedule_adaptive(spec.topology.as_ref());
    let template = spec.template.clone().unwrap_or_default();
    if reserve
        && (template.advanced_stateful_set_template.is_some()
            || template.stateful_set_template.is_some())
    {
        errs.push(FieldError::invalid(
            path.children(&["topology", "scheduleStrategy"]),
            json!(spec.topology.as_ref().and_then(|t| t.schedule_strategy.as_ref())),
            "only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
        ));
    }
    if label_selector_convertible(&spec.selector) {
        errs.extend(validate_subset_template(
            ud,
            &template,
            &path.child("template"),
        ));
    } else {
        errs.push(FieldError::invalid(sel_path, json!(spec.selector), ""));
    }
    let subsets: &[Subset] = spec
        .topology
        .as_ref()
        .and_then(|t| t.subsets.as_deref())
        .unwrap_or_default();
    let subsets_path = path.children(&["topology", "subsets"]);
    errs.extend(validate_subset_replicas(
        spec.replicas,
        subsets,
        &subsets_path,
    ));
    let mut names = BTreeSet::new();
    for (i, s) in subsets.iter().enumerate() {
        let p = subsets_path.index(i);
        if s.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if names.contains(&s.name) {
            errs.push(FieldError::invalid(
                p.child("name"),
                s.name.as_str(),
                format!("duplicated subset name {}", s.name),
            ));
        }
        names.insert(s.name.clone());
        let bad = name_is_dns_label(&s.name, false);
        if !bad.is_empty() {
            errs.push(FieldError::invalid(
                p.child("name"),
                s.name.as_str(),
                format!("invalid subset name {}", bad.join(", ")),
            ));
        }
        errs.extend(validate_node_selector_term(
            &s.node_selector_term.clone().unwrap_or_default(),
            true,
            &p.child("nodeSelectorTerm"),
        ));
        if let Some(t) = &s.tolerations {
            errs.extend(validate_tolerations(t, &p.child("tolerations")));
        }
        if s.replicas.is_some() && adaptive {
            errs.push(FieldError::forbidden(
                p.child("replicas"),
                "specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
            ));
        }
    }
    if let Some(partitions) = spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.manual_update.as_ref())
        .and_then(|m| m.partitions.as_ref())
    {
        for name in partitions.keys() {
            if !names.contains(name) {
                errs.push(FieldError::invalid(
                    path.children(&["updateStrategy", "partitions"]),
                    json!(partitions),
                    format!("subset {name} does not exist"),
                ));
            }
        }
    }
    errs
}

/// How apimachinery's field error shows a `*intstr.IntOrString` (dereferenced; the value type has
/// no `String()` method, so Go's `%#v`): `intstr.IntOrString{Type:1, IntVal:0, StrVal:"50%"}`;
/// a nil pointer shows as `"null"`.
fn int_or_string_shown(v: Option<&IntOrString>) -> FieldValue {
    match v {
        None => FieldValue::Plain(json!("null")),
        Some(IntOrString::Int(i)) => FieldValue::Go(format!(
            "intstr.IntOrString{{Type:0, IntVal:{i}, StrVal:\"\"}}"
        )),
        Some(IntOrString::String(s)) => FieldValue::Go(format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            kruise_api::validation::gofmt::quote(s)
        )),
    }
}

/// A bad value as a field error shows it: a plain value, or Go's rendering of a typed one.
#[derive(Clone)]
enum FieldValue {
    Plain(Value),
    Go(String),
}

fn invalid_with(path: Path, v: FieldValue, detail: impl Into<String>) -> FieldError {
    match v {
        FieldValue::Plain(v) => FieldError::invalid(path, v, detail),
        FieldValue::Go(t) => FieldError::invalid_stringer(path, t, detail),
    }
}

/// `validateSubsetReplicas`: per subset replicas / min / max parse, exclusivity, and sums.
fn validate_subset_replicas(expected: Option<i32>, subsets: &[Subset], path: &Path) -> ErrorList {
    use kruise_api::apps::v1alpha1::parse_subset_replicas as parse;
    let expected = expected.unwrap_or(-1);
    let mut errs = ErrorList::new();
    let (mut sum, mut sum_min, mut sum_max) = (0i64, 0i64, 0i64);
    let (mut count_replicas, mut count_max) = (0usize, 0usize);
    let (mut has_replicas, mut has_capacity) = (false, false);
    for (i, s) in subsets.iter().enumerate() {
        let p = path.index(i);
        let mut replicas = 0;
        if let Some(r) = &s.replicas {
            count_replicas += 1;
            has_replicas = true;
            match parse(expected, r) {
                Ok(v) => replicas = v,
                Err(e) => errs.push(invalid_with(
                    p.child("replicas"),
                    int_or_string_shown(Some(r)),
                    e,
                )),
            }
        }
        sum += i64::from(replicas);
        let shown_max = int_or_string_shown(s.max_replicas.as_ref());
        let mut min = 0;
        if let Some(m) = &s.min_replicas {
            has_capacity = true;
            match parse(expected, m) {
                Ok(v) => min = v,
                Err(e) => errs.push(invalid_with(p.child("minReplicas"), shown_max.clone(), e)),
            }
        }
        sum_min += i64::from(min);
        let mut max = 1_000_000;
        if let Some(m) = &s.max_replicas {
            count_max += 1;
            has_capacity = true;
            match parse(expected, m) {
                Ok(v) => max = v,
                Err(e) => errs.push(invalid_with(p.child("minReplicas"), shown_max.clone(), e)),
            }
        }
        sum_max += i64::from(max);
        if min > max {
            errs.push(invalid_with(
                p.child("minReplicas"),
                shown_max,
                format!("subset[{i}].minReplicas must be more than or equal to maxReplicas"),
            ));
        }
    }
    if has_replicas && has_capacity {
        errs.push(FieldError::invalid(
            path.clone(),
            json!(subsets),
            "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment",
        ));
        return errs;
    }
    if has_capacity {
        if expected == -1 {
            errs.push(FieldError::invalid(
                path.clone(),
                expected,
                "spec.replicas must be not empty if you set subset.minReplicas/maxReplicas",
            ));
        }
        if count_max >= subsets.len() {
            errs.push(FieldError::invalid(
                path.clone(),
                count_max as i64,
                "at least one subset.maxReplicas must be empty",
            ));
        }
        if sum_min > sum_max {
            errs.push(FieldError::invalid(
                path.clone(),
                sum_min,
                "sum of indicated subset.minReplicas should not be greater than sum of indicated subset.maxReplicas",
            ));
        }
    } else if expected != -1 {
        // OpenKruise formats the *int32 expected replicas with %d: its address.
        if sum > i64::from(expected) {
            errs.push(FieldError::invalid(
                path.clone(),
                sum,
                format!(
                    "sum of indicated subset replicas {sum} should not be greater than UnitedDeployment replicas {}",
                    go_pointer_text()
                ),
            ));
        }
        if count_replicas > 0 && count_replicas == subsets.len() && sum != i64::from(expected) {
            errs.push(FieldError::invalid(
                path.clone(),
                sum,
                format!(
                    "if replicas of all subsets are provided, the sum of indicated subset replicas {sum} should equal UnitedDeployment replicas {}",
                    go_pointer_text()
                ),
            ));
        }
    } else if count_replicas != subsets.len() {
        errs.push(FieldError::invalid(
            path.clone(),
            sum,
            "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided",
        ));
    }
    errs
}

/// What Go's `%d` of a `*int32` prints: the pointer's address as a decimal integer, different
/// on every call; kruise-rs prints a fixed address of the same shape.
fn go_pointer_text() -> &'static str {
    "824634769416"
}

fn template_labels_match(
    ud: &UnitedDeployment,
    meta_labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    selector_matches(&ud.spec.selector, meta_labels) == Some(true)
}

/// `validateSubsetTemplate`: exactly one template; for the StatefulSet, Advanced StatefulSet
/// and Deployment templates the selector matches the workload's labels, the template's own
/// `replicas`/`partition` are refused, and the pod template is validated as Kubernetes
/// validates a StatefulSet's (labels and annotations) or a ReplicaSet's (the whole pod).
fn validate_subset_template(ud: &UnitedDeployment, t: &SubsetTemplate, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let count = [
        t.stateful_set_template.is_some(),
        t.advanced_stateful_set_template.is_some(),
        t.clone_set_template.is_some(),
        t.deployment_template.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if count < 1 {
        errs.push(FieldError::required(
            path.clone(),
            "should provide one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",
        ));
    } else if count > 1 {
        errs.push(FieldError::invalid(
            path.clone(),
            json!(t),
            "should provide only one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate",
        ));
    }
    let mismatch = |p: Path, labels: Option<&std::collections::BTreeMap<String, String>>| {
        FieldError::invalid(
            p,
            json!(labels),
            "`selector` does not match template `labels`",
        )
    };
    // The two StatefulSet kinds are different types with the same field names.
    macro_rules! stateful_fields {
        ($s:expr) => {{
            let us = $s.spec.update_strategy.as_ref();
            StatefulFields {
                labels: $s.metadata.as_ref().and_then(|m| m.labels.as_ref()),
                replicas: $s.spec.replicas,
                strategy: us.and_then(|u| u.type_.as_deref()),
                partition: us
                    .and_then(|u| u.rolling_update.as_ref())
                    .and_then(|r| r.partition),
                template: &$s.spec.template,
            }
        }};
    }
    // OpenKruise names the statefulSetTemplate path for a label mismatch of either kind.
    let labels_path = path.children(&["statefulSetTemplate", "metadata", "labels"]);
    if let Some(s) = &t.stateful_set_template {
        errs.extend(stateful_set_template(
            ud,
            path,
            "statefulSetTemplate",
            labels_path,
            stateful_fields!(s),
        ));
    } else if let Some(s) = &t.advanced_stateful_set_template {
        errs.extend(stateful_set_template(
            ud,
            path,
            "advancedStatefulSetTemplate",
            labels_path,
            stateful_fields!(s),
        ));
    } else if let Some(d) = &t.deployment_template {
        let labels = d.metadata.as_ref().and_then(|m| m.labels.as_ref());
        let p = path.child("deploymentTemplate");
        if !template_labels_match(ud, labels) {
            errs.push(mismatch(p.children(&["metadata", "labels"]), labels));
        }
        if let Some(r) = d.spec.replicas {
            errs.push(FieldError::invalid(
                p.children(&["spec", "replicas"]),
                r,
                "replicas in deploymentTemplate will not be used",
            ));
        }
        errs.extend(replicaset_pod_template(
            ud,
            &d.spec.template,
            &p.children(&["spec", "template"]),
        ));
    }
    errs
}

/// What `validateSubsetTemplate` checks of a StatefulSet or Advanced StatefulSet template.
struct StatefulFields<'a> {
    labels: Option<&'a std::collections::BTreeMap<String, String>>,
    replicas: Option<i32>,
    strategy: Option<&'a str>,
    partition: Option<i32>,
    template: &'a PodTemplateSpec,
}

/// The StatefulSet and Advanced StatefulSet branches of `validateSubsetTemplate`: the selector
/// matches the template's labels (reported at `labels_path`), the template's own `replicas` and
/// RollingUpdate `partition` are refused ("... in <name> will not be used"), and the pod template
/// is validated as a StatefulSet's. `name` is the template's field under `path`.
fn stateful_set_template(
    ud: &UnitedDeployment,
    path: &Path,
    name: &str,
    labels_path: Path,
    f: StatefulFields<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = path.child(name);
    if !template_labels_match(ud, f.labels) {
        errs.push(FieldError::invalid(
            labels_path,
            json!(f.labels),
            "`selector` does not match template `labels`",
        ));
    }
    if let Some(r) = f.replicas {
        errs.push(FieldError::invalid(
            p.children(&["spec", "replicas"]),
            r,
            format!("replicas in {name} will not be used"),
        ));
    }
    if f.strategy == Some("RollingUpdate")
        && let Some(part) = f.partition
    {
        errs.push(FieldError::invalid(
            p.children(&["spec", "updateStrategy", "rollingUpdate", "partition"]),
            part,
            format!("partition in {name} will not be used"),
        ));
    }
    errs.extend(statefulset_pod_template(
        ud,
        f.template.clone(),
        &p.children(&["spec", "template"]),
    ));
    errs
}

/// `ValidatePodTemplateSpecForStatefulSet` after OpenKruise's conversion (which defaults the
/// pod spec): the selector matches the template's labels; labels and annotations.
fn statefulset_pod_template(ud: &UnitedDeployment, t: PodTemplateSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let labels = t.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if !selector_is_empty(&ud.spec.selector) && !template_labels_match(ud, labels) {
        errs.push(FieldError::invalid(
            path.children(&["metadata", "labels"]),
            json!(labels),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_statefulset_template(&t, path));
    errs
}

/// `ValidatePodTemplateSpecForReplicaSet(template, selector, 0, …)` after OpenKruise's
/// conversion: the selector matches the labels, Kubernetes' pod template validation, restart
/// policy `Always`, no `activeDeadlineSeconds`.
fn replicaset_pod_template(ud: &UnitedDeployment, t: &PodTemplateSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let labels = t.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if !selector_is_empty(&ud.spec.selector) && !template_labels_match(ud, labels) {
        errs.push(FieldError::invalid(
            path.children(&["metadata", "labels"]),
            json!(labels),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_template_with_claims(t, &[], path));
    let spec = t.spec.clone().unwrap_or_default();
    // Validated after OpenKruise's conversion, which defaults an empty policy to `Always`.
    let rp = spec
        .restart_policy
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or("Always");
    if rp != "Always" {
        errs.push(FieldError::not_supported(
            path.children(&["spec", "restartPolicy"]),
            rp,
            &["Always"],
        ));
    }
    if spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            path.children(&["spec", "activeDeadlineSeconds"]),
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
    errs
}

/// `ValidateUnitedDeploymentUpdate`: metadata update rules, template update rules (a
/// StatefulSet template may only change `template`, `updateStrategy` and `replicas`), subsets'
/// `nodeSelectorTerm` and `tolerations` immutable, `spec.replicas` non-negative.
pub fn validate_uniteddeployment_update(
    new: &UnitedDeployment,
    old: &UnitedDeployment,
) -> ErrorList {
    let mut errs =
        validate_object_meta_update(&new.metadata, &old.metadata, &Path::new("metadata"));
    let spec = Path::new("spec");
    let (t, ot) = (
        new.spec.template.clone().unwrap_or_default(),
        old.spec.template.clone().unwrap_or_default(),
    );
    let tp = spec.child("template");
    if let (Some(n), Some(o)) = (&t.stateful_set_template, &ot.stateful_set_template) {
        let mut a = n.spec.clone();
        a.replicas = o.spec.replicas;
        a.template = o.spec.template.clone();
        a.update_strategy = o.spec.update_strategy.clone();
        if !semantic_eq(&json!(a), &json!(o.spec)) {
            errs.push(FieldError::forbidden(
                tp.children(&["statefulSetTemplate", "spec"]),
                "updates to statefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden",
            ));
        }
        if let Some(r) = n.spec.replicas {
            errs.extend(check_nonnegative(
                i64::from(r),
                tp.children(&["statefulSetTemplate", "spec", "replicas"]),
            ));
        }
    } else if let (Some(n), Some(o)) = (
        &t.advanced_stateful_set_template,
        &ot.advanced_stateful_set_template,
    ) {
        let mut a = n.spec.clone();
        a.replicas = o.spec.replicas;
        a.template = o.spec.template.clone();
        a.update_strategy = o.spec.update_strategy.clone();
        if !semantic_eq(&json!(a), &json!(o.spec)) {
            errs.push(FieldError::forbidden(
                tp.children(&["advancedStatefulSetTemplate", "spec"]),
                "updates to advancedStatefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden",
            ));
        }
        if let Some(r) = n.spec.replicas {
            errs.extend(check_nonnegative(
                i64::from(r),
                tp.children(&["advancedStatefulSetTemplate", "spec", "replicas"]),
            ));
        }
    } else if let (Some(n), Some(_)) = (&t.deployment_template, &ot.deployment_template)
        && let Some(r) = n.spec.replicas
    {
        errs.extend(check_nonnegative(
            i64::from(r),
            tp.children(&["deploymentTemplate", "spec", "replicas"]),
        ));
    }
    let subsets = |u: &UnitedDeployment| -> Vec<Subset> {
        u.spec
            .topology
            .as_ref()
            .and_then(|t| t.subsets.clone())
            .unwrap_or_default()
    };
    let old_subsets = subsets(old);
    let new_subsets = subsets(new);
    let sp = spec.children(&["topology", "subsets"]);
    let find = |name: &str| old_subsets.iter().rev().find(|s| s.name == name);
    for (i, s) in new_subsets.iter().enumerate() {
        if let Some(o) = find(&s.name) {
            if !semantic_eq(&json!(o.node_selector_term), &json!(s.node_selector_term)) {
                errs.push(FieldError::forbidden(
                    sp.index(i).child("nodeSelectorTerm"),
                    "may not be changed in an update",
                ));
            }
            if !semantic_eq(&json!(o.tolerations), &json!(s.tolerations)) {
                errs.push(FieldError::forbidden(
                    sp.index(i).child("tolerations"),
                    "may not be changed in an update",
                ));
            }
        }
    }
    if let Some(r) = new.spec.replicas {
        errs.extend(check_nonnegative(i64::from(r), spec.child("replicas")));
    }
    errs
}

/// `apiequality.Semantic.DeepEqual` on JSON: absent, `null`, empty lists and empty maps are
/// equal (Go's nil and empty slices/maps and zero structs).
fn semantic_eq(a: &Value, b: &Value) -> bool {
    fn norm(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let m: serde_json::Map<String, Value> = m
                    .iter()
                    .map(|(k, v)| (k.clone(), norm(v)))
                    .filter(|(_, v)| !is_empty(v))
                    .collect();
                Value::Object(m)
            }
            Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
            other => other.clone(),
        }
    }
    fn is_empty(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty(),
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
        }
    }
    let (a, b) = (norm(a), norm(b));
    (is_empty(&a) && is_empty(&b)) || a == b
}
