//! Validation helpers shared by the workload webhooks (CloneSet and Advanced StatefulSet):
//! names and labels, label selectors, the pure subset of Kubernetes' pod template validation,
//! IntOrString percentages, update priority/scatter strategies, the in-place-only template
//! rule and workload deletion protection.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::common::{UpdatePriorityStrategy, UpdateScatterTerm};
use kruise_api::keys;
use kruise_engines::intstr;
use serde_json::json;

use crate::field::{ErrorList, FieldError, Path};
use crate::statefulset::volumeclaims::parse_quantity;
use kruise_runtime::features::{Feature, FeatureGates};

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A DNS-1123 label: at most 63 lowercase alphanumerics or `-`, starting and ending with an
/// alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= DNS1123_LABEL_MAX
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(is_lower_alnum)
        && s.ends_with(is_lower_alnum)
}

/// A DNS-1123 subdomain: at most 253 characters, DNS-1123 labels joined by `.`.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= DNS1123_SUBDOMAIN_MAX
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.chars().all(|c| is_lower_alnum(c) || c == '-')
                && part.starts_with(is_lower_alnum)
                && part.ends_with(is_lower_alnum)
        })
}

fn is_name_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// A qualified name (label or annotation key): an optional DNS-1123 subdomain prefix and `/`,
/// then a name of at most 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// A label value: empty, or at most 63 characters shaped like a qualified name's name part.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// Label keys must be qualified names and values valid label values.
pub fn validate_labels(labels: Option<&BTreeMap<String, String>>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in labels.into_iter().flatten() {
        if !is_qualified_name(k) {
            errs.push(FieldError::invalid(
                path.clone(),
                k.as_str(),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (optionally prefixed by a DNS subdomain and '/')",
            ));
        }
        if !is_label_value(v) {
            errs.push(FieldError::invalid(
                path.clone(),
                v.as_str(),
                "a valid label must be an empty string or consist of at most 63 alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            ));
        }
    }
    errs
}

/// Annotation keys must be qualified names (lower-cased, as apimachinery checks them).
pub fn validate_annotation_keys(
    annotations: Option<&BTreeMap<String, String>>,
    path: &Path,
) -> ErrorList {
    annotations
        .into_iter()
        .flatten()
        .filter(|(k, _)| !is_qualified_name(&k.to_lowercase()))
        .map(|(k, _)| FieldError::invalid(path.clone(), k.as_str(), "must be a qualified name"))
        .collect()
}

/// Object metadata of a new workload: a name (or generateName) that is a DNS-1123 subdomain,
/// valid labels and annotation keys.
pub fn validate_object_meta(meta: &ObjectMeta) -> ErrorList {
    let path = Path::new("metadata");
    let mut errs = ErrorList::new();
    match meta.name.as_deref().unwrap_or("") {
        "" if meta.generate_name.as_deref().unwrap_or("").is_empty() => {
            errs.push(FieldError::required(
                path.child("name"),
                "name or generateName is required",
            ));
        }
        "" => {}
        name if !is_dns1123_subdomain(name) => errs.push(FieldError::invalid(
            path.child("name"),
            name,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )),
        _ => {}
    }
    errs.extend(validate_labels(meta.labels.as_ref(), &path.child("labels")));
    errs.extend(validate_annotation_keys(
        meta.annotations.as_ref(),
        &path.child("annotations"),
    ));
    errs
}

/// True when the selector has neither `matchLabels` nor `matchExpressions`.
pub fn selector_is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Label selector validation (apimachinery `ValidateLabelSelector`): operators are
/// `In`/`NotIn` (values required) or `Exists`/`DoesNotExist` (values forbidden); keys are
/// qualified names; `matchLabels` are valid labels.
pub fn validate_label_selector(sel: &LabelSelector, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, expr) in sel.match_expressions.iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let nvalues = expr.values.as_ref().map_or(0, Vec::len);
        match expr.operator.as_str() {
            "In" | "NotIn" => {
                if nvalues == 0 {
                    errs.push(FieldError::required(
                        p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if nvalues > 0 {
                    errs.push(FieldError::forbidden(
                        p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => errs.push(FieldError::invalid(
                p.child("operator"),
                op,
                "not a valid selector operator",
            )),
        }
        if !is_qualified_name(&expr.key) {
            errs.push(FieldError::invalid(
                p.child("key"),
                expr.key.as_str(),
                "must be a qualified name",
            ));
        }
    }
    errs.extend(validate_labels(
        sel.match_labels.as_ref(),
        &path.child("matchLabels"),
    ));
    errs
}

/// Whether `labels` satisfy `sel` (an empty selector matches everything); `None` if the selector
/// has an unknown operator.
pub fn selector_matches(
    sel: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<bool> {
    kruise_engines::updatesort::selector_matches(sel, labels)
}

/// Whether apimachinery's `metav1.LabelSelectorAsSelector` accepts `sel`: every `matchLabels`
/// pair and every expression must make a valid `labels.Requirement` (a qualified-name key,
/// label values, a known operator, at least one value for `In`/`NotIn`, none for
/// `Exists`/`DoesNotExist`).
pub fn selector_convertible(sel: &LabelSelector) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| is_qualified_name(k) && is_label_value(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let arity_ok = match e.operator.as_str() {
            "In" | "NotIn" => !values.is_empty(),
            "Exists" | "DoesNotExist" => values.is_empty(),
            _ => false,
        };
        arity_ok && is_qualified_name(&e.key) && values.iter().all(|v| is_label_value(v))
    });
    labels_ok && exprs_ok
}

/// The workload selector rules shared by CloneSet and Advanced StatefulSet: a valid, non-empty
/// selector (`kind` names the workload in the message, e.g. `cloneset`) that matches the
/// template's labels. Returns the errors and whether the pod template is to be validated at
/// all: as OpenKruise's `validateCloneSetSpec` / `validateStatefulSetSpec`, a selector that
/// `LabelSelectorAsSelector` refuses gives `spec.selector: Invalid value` and the template is
/// not looked at.
pub fn validate_selector_and_template_labels(
    sel: &LabelSelector,
    template: &PodTemplateSpec,
    kind: &str,
    spec_path: &Path,
) -> (ErrorList, bool) {
    let sel_path = spec_path.child("selector");
    let mut errs = validate_label_selector(sel, &sel_path);
    if selector_is_empty(sel) {
        errs.push(FieldError::invalid(
            sel_path.clone(),
            json!(sel),
            format!("empty selector is invalid for {kind}"),
        ));
        return (errs, true);
    }
    if !selector_convertible(sel) {
        errs.push(FieldError::invalid(sel_path, json!(sel), ""));
        return (errs, false);
    }
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    if selector_matches(sel, labels) != Some(true) {
        errs.push(FieldError::invalid(
            spec_path
                .child("template")
                .child("metadata")
                .child("labels"),
            json!(labels),
            "`selector` does not match template `labels`",
        ));
    }
    (errs, true)
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

fn validate_container(
    c: &Container,
    path: &Path,
    volumes: &BTreeSet<&str>,
    names: &mut BTreeSet<String>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if c.name.is_empty() {
        errs.push(FieldError::required(path.child("name"), ""));
    } else if !is_dns1123_label(&c.name) {
        errs.push(FieldError::invalid(
            path.child("name"),
            c.name.as_str(),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    } else if !names.insert(c.name.clone()) {
        errs.push(FieldError::duplicate(path.child("name"), c.name.as_str()));
    }
    if c.image.as_deref().unwrap_or("").trim().is_empty() {
        errs.push(FieldError::required(path.child("image"), ""));
    }
    if let Some(policy) = c.image_pull_policy.as_deref()
        && !["Always", "IfNotPresent", "Never"].contains(&policy)
    {
        errs.push(FieldError::not_supported(
            path.child("imagePullPolicy"),
            policy,
            &["Always", "IfNotPresent", "Never"],
        ));
    }
    let mut port_names = BTreeSet::new();
    for (i, port) in c.ports.iter().flatten().enumerate() {
        let pp = path.child("ports").index(i);
        if !(1..=65535).contains(&port.container_port) {
            errs.push(FieldError::invalid(
                pp.child("containerPort"),
                port.container_port,
                "must be between 1 and 65535, inclusive",
            ));
        }
        if let Some(hp) = port.host_port
            && !(0..=65535).contains(&hp)
        {
            errs.push(FieldError::invalid(
                pp.child("hostPort"),
                hp,
                "must be between 1 and 65535, inclusive",
            ));
        }
        if let Some(proto) = port.protocol.as_deref()
            && !["TCP", "UDP", "SCTP"].contains(&proto)
        {
            errs.push(FieldError::not_supported(
                pp.child("protocol"),
                proto,
                &["SCTP", "TCP", "UDP"],
            ));
        }
        if let Some(name) = port.name.as_deref()
            && !name.is_empty()
            && !port_names.insert(name)
        {
            errs.push(FieldError::duplicate(pp.child("name"), name));
        }
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        let ep = path.child("env").index(i).child("name");
        if e.name.is_empty() {
            errs.push(FieldError::required(ep, ""));
        } else if !e
            .name
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'=')
        {
            errs.push(FieldError::invalid(
                ep,
                e.name.as_str(),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
    }
    if let Some(res) = c.resources.as_ref() {
        let rp = path.child("resources");
        let limits = res.limits.as_ref();
        for (kind, map) in [("limits", limits), ("requests", res.requests.as_ref())] {
            for (name, q) in map.into_iter().flatten() {
                let qp = rp.child(kind).key(name);
                match parse_quantity(&q.0) {
                    None => errs.push(FieldError::invalid(qp, q.0.as_str(), "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")),
                    Some(v) if v < 0.0 => errs.push(FieldError::invalid(qp, q.0.as_str(), "must be greater than or equal to 0")),
                    Some(v) if kind == "requests" => {
                        if let Some(limit) = limits.and_then(|l| l.get(name))
                            && parse_quantity(&limit.0).is_some_and(|l| v > l)
                        {
                            errs.push(FieldError::invalid(
                                qp,
                                q.0.as_str(),
                                format!("must be less than or equal to {name} limit of {}", limit.0),
                            ));
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let mp = path.child("volumeMounts").index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(mp.child("name"), ""));
        } else if !volumes.contains(m.name.as_str()) {
            errs.push(FieldError::not_found(mp.child("name"), m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(mp.child("mountPath"), ""));
        }
    }
    errs
}

/// The pure part of Kubernetes' `ValidatePodTemplateSpec` that kruise-rs reproduces: template
/// labels and annotation keys; volume names (DNS-1123 labels, unique); at least one container;
/// container names (DNS-1123 labels, unique across init and app containers), images,
/// `imagePullPolicy`, ports (range, protocol, unique names), env var names, resource quantities
/// (well formed, non-negative, requests within limits) and volume mounts (name of a declared
/// volume, a mount path); `terminationGracePeriodSeconds >= 0`; `dnsPolicy` values.
///
/// `extra_volumes` are names that count as volumes although the template does not declare them
/// (a CloneSet's `volumeClaimTemplates`).
pub fn validate_pod_template(
    template: &PodTemplateSpec,
    extra_volumes: &[&str],
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(meta) = template.metadata.as_ref() {
        let mp = path.child("metadata");
        errs.extend(validate_labels(meta.labels.as_ref(), &mp.child("labels")));
        errs.extend(validate_annotation_keys(
            meta.annotations.as_ref(),
            &mp.child("annotations"),
        ));
    }
    let sp = path.child("spec");
    let Some(spec) = template.spec.as_ref() else {
        errs.push(FieldError::required(sp.child("containers"), ""));
        return errs;
    };
    errs.extend(validate_pod_spec(spec, extra_volumes, &sp));
    errs
}

fn validate_pod_spec(spec: &PodSpec, extra_volumes: &[&str], sp: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut volumes: BTreeSet<&str> = BTreeSet::new();
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        let vp = sp.child("volumes").index(i).child("name");
        if v.name.is_empty() {
            errs.push(FieldError::required(vp, ""));
        } else if !is_dns1123_label(&v.name) {
            errs.push(FieldError::invalid(
                vp,
                v.name.as_str(),
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            ));
        } else if !volumes.insert(v.name.as_str()) {
            errs.push(FieldError::duplicate(vp, v.name.as_str()));
        }
    }
    volumes.extend(extra_volumes.iter().copied());
    let mut names = BTreeSet::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        errs.extend(validate_container(
            c,
            &sp.child("initContainers").index(i),
            &volumes,
            &mut names,
        ));
    }
    if spec.containers.is_empty() {
        errs.push(FieldError::required(sp.child("containers"), ""));
    }
    for (i, c) in spec.containers.iter().enumerate() {
        errs.extend(validate_container(
            c,
            &sp.child("containers").index(i),
            &volumes,
            &mut names,
        ));
    }
    if let Some(g) = spec.termination_grace_period_seconds {
        errs.extend(check_nonnegative(
            g,
            sp.child("terminationGracePeriodSeconds"),
        ));
    }
    if let Some(dns) = spec.dns_policy.as_deref()
        && !["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"].contains(&dns)
    {
        errs.push(FieldError::not_supported(
            sp.child("dnsPolicy"),
            dns,
            &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
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
        let errs = validate_label_selector(&w.match_selector, &Path::new("matchSelector"));
        if let Some(first) = errs.first() {
            return Err(format!("invalid selector {first}"));
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
    fn names_and_labels() {
        assert!(is_dns1123_label("web-0"));
        assert!(!is_dns1123_label("Web"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(is_qualified_name("app.kubernetes.io/name"));
        assert!(is_qualified_name("App_1.x"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("NoUppercaseOrSpecialCharsLike=Equals"));
        assert!(is_label_value(""));
        assert!(!is_label_value("a b"));
    }

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

    #[test]
    fn selector_validation() {
        let sel: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"bad key!": "v"}}))
        .unwrap();
        let errs = validate_label_selector(&sel, &Path::new("spec").child("selector"));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .to_string()
                .starts_with("spec.selector.matchLabels: Invalid value: \"bad key!\"")
        );
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
