//! PodProbeMarker admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/podprobemarker/validating` (`PodProbeMarkerCreateUpdateHandler.Handle`,
//! `/validate-apps-kruise-io-podprobemarker`, CREATE and UPDATE):
//!
//! - the object is decoded first (a Go decoding error: 400), then gate `PodProbeMarkerGate`,
//!   then gate `KruiseDaemon` must be on (403 `feature-gate <name> is not enabled`);
//! - [`validate_spec`]: a non-empty, valid selector; at least one probe; per probe (stopping at
//!   the first naming problem) a name without `#`, a name, a container name, a name that is not
//!   a built-in readiness condition, unique names; the probe's handler and timing fields; a
//!   `podConditionType` or a `markerPolicy`; unique, qualified condition types; per marker
//!   policy a unique state `Succeeded`/`Failed` and valid labels/annotations;
//! - on UPDATE the selector is immutable ([`validate_update`]).
//!
//! Denials carry code 400 and the aggregated field errors. Nothing is read from the cluster.

mod url;

pub use url::go_url_parses;

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{HTTPGetAction, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{PodProbeMarker, ProbeMarkerPolicy, probe_state};
use kruise_api::keys;
use kruise_api::validation::field::{ErrorList, FieldError, Path};
use kruise_api::validation::meta::{
    LabelSelectorValidationOptions, label_selector_convertible, validate_label_name,
    validate_label_selector, validate_object_meta_generic,
};
use kruise_api::validation::names::{
    is_http_header_name, is_valid_port_name, is_valid_port_num, max_len_error, regex_error,
};
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;
use serde_json::Value;

use crate::field::aggregate;
use crate::support::{CODE_BAD_REQUEST, CODE_FORBIDDEN, allow, decode_workload_value, errored};
use crate::{HandlerContext, Request, Response};

/// Pod condition types a probe may not be named after: Kubernetes' own (`PodScheduled`,
/// `Initialized`, `Ready`, `ContainersReady`) and Kruise's readiness conditions.
pub const RESERVED_CONDITIONS: [&str; 6] = [
    "PodScheduled",
    "Initialized",
    "Ready",
    "ContainersReady",
    keys::KRUISE_POD_READY,
    keys::IN_PLACE_UPDATE_READY,
];

/// A decoded PodProbeMarker and whether its `spec.selector` was given (Go's `*LabelSelector`
/// is `nil` when absent or `null`; the Rust type then holds an empty selector).
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// The object.
    pub ppm: PodProbeMarker,
    /// `false` when `spec.selector` was absent or `null`.
    pub has_selector: bool,
}

impl Decoded {
    /// The selector as Go sees it (`None` for `nil`).
    pub fn selector(&self) -> Option<&LabelSelector> {
        self.has_selector.then_some(&self.ppm.spec.selector)
    }
}

/// Decodes a PodProbeMarker as OpenKruise's decoder does (Go's decoding errors word for word).
///
/// # Errors
/// Go's `json.Unmarshal` error.
pub fn decode(mut v: Value) -> Result<Decoded, String> {
    let has_selector = v.pointer("/spec/selector").is_some_and(|s| !s.is_null());
    if !has_selector && let Some(root) = v.as_object_mut() {
        // An absent or `null` spec decodes in Go as the zero spec (a nil selector).
        let spec = root
            .entry("spec")
            .and_modify(|s| {
                if s.is_null() {
                    *s = Value::Object(Default::default());
                }
            })
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("selector".into(), Value::Object(Default::default()));
        }
    }
    let ppm = decode_workload_value(v)?;
    Ok(Decoded { ppm, has_selector })
}

/// `/validate-apps-kruise-io-podprobemarker` (see the module documentation).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    let Some(obj) = req.object.as_ref() else {
        return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
    };
    let obj = match serde_json::to_value(obj)
        .map_err(|e| e.to_string())
        .and_then(decode)
    {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    for gate in [Feature::PodProbeMarkerGate, Feature::KruiseDaemon] {
        if !ctx.gates.enabled(gate) {
            return errored(
                req,
                CODE_FORBIDDEN,
                format!("feature-gate {} is not enabled", gate.name()),
            );
        }
    }
    let old = if req.operation == Operation::Update {
        let Some(old) = req.old_object.as_ref() else {
            return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
        };
        match serde_json::to_value(old)
            .map_err(|e| e.to_string())
            .and_then(decode)
        {
            Ok(o) => Some(o),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let mut errs = validate_spec(&obj, &Path::new("spec"));
    if let Some(old) = &old {
        errs.extend(validate_update(&obj, old));
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_BAD_REQUEST, msg),
        None => allow(req),
    }
}

/// The update rule: the selector may not change (Go's `reflect.DeepEqual` of the two
/// `*LabelSelector`s; the error names path `selector`, not `spec.selector`).
pub fn validate_update(obj: &Decoded, old: &Decoded) -> ErrorList {
    if obj.selector() == old.selector() {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        Path::new("selector"),
        json_of(obj.selector()),
        "selector must be immutable",
    )]
}

/// `validatePodProbeMarkerSpec`, the spec rules in OpenKruise's order (see the module docs).
pub fn validate_spec(obj: &Decoded, path: &Path) -> ErrorList {
    let spec = &obj.ppm.spec;
    let mut errs = ErrorList::new();
    let sel_path = path.child("selector");
    match obj.selector() {
        None => errs.push(FieldError::invalid(
            sel_path,
            NIL_POINTER,
            "empty Selector is not valid for PodProbeMarker.",
        )),
        Some(sel) => errs.extend(validate_selector(sel, &sel_path)),
    }
    let probes_path = path.child("probes");
    if spec.probes.is_empty() {
        errs.push(FieldError::invalid(
            probes_path,
            Value::Null,
            "empty probes is not valid for PodProbeMarker.",
        ));
        return errs;
    }
    let mut names = BTreeSet::new();
    let mut condition_types = BTreeSet::new();
    for probe in &spec.probes {
        let name = probe.name.as_str();
        let naming = if name.contains('#') {
            Some((name, "probe name can't contains '#'.".to_owned()))
        } else if name.is_empty() {
            Some((
                name,
                "probe name can't be empty in PodProbeMarker.".to_owned(),
            ))
        } else if probe.container_name.is_empty() {
            Some((
                "",
                "probe containerName can't be empty in PodProbeMarker.".to_owned(),
            ))
        } else if RESERVED_CONDITIONS.contains(&name) {
            Some((name, format!("probe name can't be {name}")))
        } else if names.contains(name) {
            Some((
                name,
                "probe name must be unique in PodProbeMarker.".to_owned(),
            ))
        } else {
            None
        };
        if let Some((value, detail)) = naming {
            errs.push(FieldError::invalid(probes_path.clone(), value, detail));
            return errs;
        }
        names.insert(name);
        errs.extend(validate_probe(&probe.probe.probe, &path.child("probe")));
        let condition = probe.pod_condition_type.as_deref().unwrap_or("");
        let policies = probe.marker_policy.as_deref().unwrap_or_default();
        if condition.is_empty() && policies.is_empty() {
            errs.push(FieldError::invalid(
                probes_path.clone(),
                serde_json::to_value(probe).unwrap_or_default(),
                "podConditionType and markerPolicy cannot be empty at the same time",
            ));
            return errs;
        }
        if !condition.is_empty() {
            if !condition_types.insert(condition) {
                errs.push(FieldError::invalid(
                    probes_path.clone(),
                    condition,
                    format!("podConditionType {condition} must be unique in podProbeMarker"),
                ));
                return errs;
            }
            errs.extend(validate_label_name(condition, path));
        }
        let policy_path = path.child("markerPolicy");
        let mut states = BTreeSet::new();
        for policy in policies {
            if !states.insert(policy.state.as_str()) {
                errs.push(FieldError::invalid(
                    policy_path,
                    policy.state.as_str(),
                    "marker policy state must be unique.",
                ));
                return errs;
            }
            errs.extend(validate_marker_policy(policy, &policy_path));
        }
    }
    errs
}

/// `validateSelector`: apimachinery's label-selector rules, then non-empty, then convertible
/// (that error names `<path>.selector` with no detail).
pub fn validate_selector(sel: &LabelSelector, path: &Path) -> ErrorList {
    let mut errs =
        validate_label_selector(Some(sel), LabelSelectorValidationOptions::default(), path);
    let terms = sel.match_labels.as_ref().map_or(0, |m| m.len())
        + sel.match_expressions.as_ref().map_or(0, Vec::len);
    if terms == 0 {
        errs.push(FieldError::invalid(
            path.clone(),
            json_of(Some(sel)),
            "empty selector is not valid for podProbeMarker.",
        ));
    }
    if !label_selector_convertible(sel) {
        errs.push(FieldError::invalid(
            path.child("selector"),
            json_of(Some(sel)),
            "",
        ));
    }
    errs
}

/// `validateProbe`: the handler, then `initialDelaySeconds`, `timeoutSeconds`,
/// `periodSeconds`, `successThreshold`, `failureThreshold` each ≥ 0 (absent = 0).
pub fn validate_probe(probe: &Probe, path: &Path) -> ErrorList {
    let mut errs = validate_handler(probe, path);
    for (field, value) in [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ] {
        let v = value.unwrap_or(0);
        if v < 0 {
            errs.push(FieldError::invalid(
                path.child(field),
                i64::from(v),
                "must be greater than or equal to 0",
            ));
        }
    }
    errs
}

/// `validateHandler`: exactly one of `exec`, `httpGet`, `tcpSocket` (a `grpc` action counts
/// for nothing); the first one set is validated, the others are forbidden.
pub fn validate_handler(probe: &Probe, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut handlers = 0;
    let more = "may not specify more than 1 handler type";
    if let Some(exec) = &probe.exec {
        handlers += 1;
        if exec.command.as_ref().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(
                path.child("exec").child("command"),
                "",
            ));
        }
    }
    if let Some(http) = &probe.http_get {
        if handlers > 0 {
            errs.push(FieldError::forbidden(path.child("httpGet"), more));
        } else {
            handlers += 1;
            errs.extend(validate_http_get(http, &path.child("httpGet")));
        }
    }
    if let Some(tcp) = &probe.tcp_socket {
        if handlers > 0 {
            errs.push(FieldError::forbidden(path.child("tcpSocket"), more));
        } else {
            handlers += 1;
            errs.extend(validate_tcp_socket(tcp, &path.child("tcpSocket")));
        }
    }
    if handlers == 0 {
        errs.push(FieldError::required(
            path.clone(),
            "must specify a handler type",
        ));
    }
    errs
}

fn validate_tcp_socket(tcp: &TCPSocketAction, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(host) = tcp.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(
            path.child("host"),
            host,
            "host field in probes is not allowed",
        ));
    }
    errs.extend(validate_port_num_or_name(&tcp.port, &path.child("port")));
    errs
}

fn validate_http_get(http: &HTTPGetAction, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let p = http.path.as_deref().unwrap_or("");
    if p.is_empty() {
        errs.push(FieldError::required(path.child("path"), ""));
    }
    if let Some(host) = http.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(
            path.child("host"),
            host,
            "host field in probes is not allowed",
        ));
    }
    if !go_url_parses(p) {
        errs.push(FieldError::invalid(
            path.child("path"),
            p,
            "must be a valid URL path",
        ));
    }
    errs.extend(validate_port_num_or_name(&http.port, &path.child("port")));
    let scheme = http.scheme.as_deref().unwrap_or("");
    if scheme != "HTTP" && scheme != "HTTPS" {
        errs.push(FieldError::not_supported(
            path.child("scheme"),
            scheme,
            &["HTTP", "HTTPS"],
        ));
    }
    for header in http.http_headers.iter().flatten() {
        for msg in is_http_header_name(&header.name) {
            errs.push(FieldError::invalid(
                path.child("httpHeaders"),
                header.name.as_str(),
                msg,
            ));
        }
    }
    errs
}

/// `ValidatePortNumOrName`: a number 1–65535 or an IANA service name.
pub fn validate_port_num_or_name(port: &IntOrString, path: &Path) -> ErrorList {
    match port {
        IntOrString::Int(n) => is_valid_port_num(i64::from(*n))
            .into_iter()
            .map(|m| FieldError::invalid(path.clone(), i64::from(*n), m))
            .collect(),
        IntOrString::String(s) => is_valid_port_name(s)
            .into_iter()
            .map(|m| FieldError::invalid(path.clone(), s.as_str(), m))
            .collect(),
    }
}

/// `validateProbeMarkerPolicy`: state `Succeeded` or `Failed`, labels or annotations, and those
/// valid as object metadata (apimachinery's `ValidateObjectMeta` of an object named
/// `fake-name`: errors under `<path>.labels` / `<path>.annotations`).
pub fn validate_marker_policy(policy: &ProbeMarkerPolicy, path: &Path) -> ErrorList {
    if policy.state != probe_state::SUCCEEDED && policy.state != probe_state::FAILED {
        return vec![FieldError::required(
            path.child("state"),
            "marker policy state must be 'True' or 'False'",
        )];
    }
    let empty = |m: &Option<std::collections::BTreeMap<String, String>>| {
        m.as_ref().is_none_or(|m| m.is_empty())
    };
    if empty(&policy.labels) && empty(&policy.annotations) {
        return vec![FieldError::required(
            path.clone(),
            "marker policy annotations or labels can't be both empty",
        )];
    }
    let meta = ObjectMeta {
        name: Some("fake-name".into()),
        labels: policy.labels.clone(),
        annotations: policy.annotations.clone(),
        ..ObjectMeta::default()
    };
    validate_object_meta_generic(&meta, false, validate_name, path)
}

/// `validatePodProbeMarkerName`: letters, digits and `-`, at most 63 characters.
fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
        errs.push(regex_error(
            "podProbeMarker name must consist of alphanumeric characters or '-'",
            r"^[a-zA-Z0-9\-]+$",
            &["example-com"],
        ));
    }
    if name.len() > 63 {
        errs.push(max_len_error(63));
    }
    errs
}

/// How apimachinery prints a nil pointer as a field error's value: the string `"null"`, quoted.
const NIL_POINTER: &str = "null";

/// A selector as a field error's value: its JSON (Go prints the struct with `%#v`), a nil one
/// as [`NIL_POINTER`].
fn json_of(sel: Option<&LabelSelector>) -> Value {
    sel.and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| NIL_POINTER.into())
}

#[cfg(test)]
mod tests;
