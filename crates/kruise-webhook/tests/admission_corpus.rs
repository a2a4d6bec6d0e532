//! Replays the admission-parity corpus (`tests/admission-corpus/*.jsonl`, OpenKruise v1.9.0's
//! recorded verdicts; see `hack/admission-corpus/README.md`) through kruise-rs' admission
//! handlers in-process, with the feature gates the recording ran with (AllAlpha, AllBeta) and
//! the cluster the recording ran on: empty (no pods, no StorageClasses), or for a corpus recorded
//! with objects in the cluster, what `<corpus>.cluster.json` says it held (SidecarSets,
//! ControllerRevisions, ConfigMaps, Namespaces), each request in the namespace the case names.
//!
//! Per case, like the API server: the mutating handler on the object (same verdict; when
//! allowed, the same object after the patch; when denied, the same field paths and the same
//! message), then the validating handler on OpenKruise's mutated object (same verdict, same
//! field paths, same message). Messages are compared byte for byte but for Go's `%#v` of
//! composite values, which kruise-rs writes as JSON ([`denial_diff`]). A case marked
//! `deviation` must still differ (a stale mark fails too). No answer may be a 5xx where
//! OpenKruise's was not. In a mutated pod, the time of injection in the SidecarSet hash
//! annotations is masked on both sides ([`masked_injection_times`]).
//!
//! The recording must be complete and current: every corpus file holds at least its
//! [`MIN_CASES`], and every case the generator (`kruise_corpus::all`) makes today is
//! recorded — a new case kind (e.g. the object-name cases) fails here until it is recorded.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kruise_corpus::{self as corpus, Answer, Record};
use kruise_runtime::features::FeatureGates;
use kruise_webhook::lookup::{FixedCluster, Lookup};
use kruise_webhook::registry::{REGISTRY, WebhookType};
use kruise_webhook::{HandlerContext, Response};
use serde_json::{Value, json};

/// The feature gates the recording ran OpenKruise with (`hack/admission-corpus/record.sh`, as
/// OpenKruise's own e2e does).
const GATES: &str = "AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false";

/// The fewest cases each corpus file may hold (its size when last recorded, rounded down): a
/// truncated or partial recording fails instead of silently replaying less.
const MIN_CASES: &[(&str, usize)] = &[
    ("broadcastjob-v1alpha1", 650),
    ("broadcastjob-v1beta1", 650),
    ("advancedcronjob-v1alpha1", 500),
    ("advancedcronjob-v1beta1", 500),
    ("cloneset", 900),
    ("containerrecreaterequest", 240),
    ("daemonset-v1alpha1", 800),
    ("daemonset-v1beta1", 800),
    ("deletionprotection", 100),
    ("ephemeraljob", 120),
    ("pod", 900),
    ("persistentpodstate", 350),
    ("pod-sidecarset", 570),
    ("pod-workloadspread", 50),
    ("podprobemarker", 310),
    ("podunavailablebudget", 100),
    ("resourcedistribution", 160),
    ("workloadspread", 120),
    ("sidecarset-v1alpha1", 1000),
    ("sidecarset-v1beta1", 1000),
    ("statefulset-v1alpha1", 800),
    ("statefulset-v1beta1", 850),
    ("uniteddeployment", 630),
];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/admission-corpus")
}

/// The AdmissionReview the API server would post, as bytes.
fn review(rec: &Record, operation: &str, object: Option<&Value>) -> Vec<u8> {
    let c = &rec.case;
    let gvk = json!({"group": c.group, "version": c.version, "kind": c.kind});
    let gvr = json!({"group": c.group, "version": c.version, "resource": c.resource});
    let name = object
        .or(c.old_object.as_ref())
        .and_then(|o| o.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-4000-8000-000000000001",
            "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": name, "namespace": c.request_namespace(), "operation": operation,
            "userInfo": {"username": "kruise-admission-corpus"},
            "object": object, "oldObject": c.old_object, "dryRun": c.dry_run
        }
    }))
    .expect("review")
}

/// The cluster a corpus was recorded on: `<stem>.cluster.json` when the recorder wrote one, else
/// an empty cluster.
fn recorded_cluster(stem: &str) -> FixedCluster {
    let file = corpus_dir().join(format!("{stem}.cluster.json"));
    let Ok(text) = std::fs::read_to_string(&file) else {
        return FixedCluster::default();
    };
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    fn decode<T: serde::de::DeserializeOwned>(v: &Value, key: &str) -> Vec<T> {
        v[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| serde_json::from_value(o.clone()).unwrap_or_else(|e| panic!("{key}: {e}")))
            .collect()
    }
    FixedCluster {
        sidecar_sets: decode(&v, "sidecarSets"),
        controller_revisions: decode(&v, "controllerRevisions"),
        config_maps: decode(&v, "configMaps"),
        namespaces: decode(&v, "namespaces"),
        budgets: decode(&v, "podUnavailableBudgets"),
        persistent_pod_states: decode(&v, "persistentPodStates"),
        others: decode(&v, "workloadSpreads"),
        pods: decode(&v, "pods"),
        nodes: decode(&v, "nodes"),
        ..FixedCluster::default()
    }
}

/// Posts the case to the registry entry serving it, through the server's own entry point
/// ([`kruise_webhook::server::answer`]).
async fn call(
    rec: &Record,
    ty: WebhookType,
    object: Option<&Value>,
    lookup: &Lookup,
) -> Option<Response> {
    let c = &rec.case;
    let entry = REGISTRY.iter().find(|e| {
        e.webhook_type == ty
            && e.api_group == c.group
            && e.resource == c.resource
            && e.api_versions.contains(&c.version.as_str())
            && e.operations.contains(&c.operation.as_str())
    })?;
    let ctx = HandlerContext {
        gates: FeatureGates::parse(GATES).expect("gates"),
        lookup: Some(lookup.clone()),
    };
    let review =
        kruise_webhook::server::answer(&ctx, &review(rec, &c.operation, object), entry).await;
    let response = review.response.expect("a response");
    assert_eq!(
        response.uid, "00000000-0000-4000-8000-000000000001",
        "{}: the answer must carry the request's uid",
        c.id
    );
    Some(response)
}

fn message(r: &Response) -> String {
    r.result.message.clone()
}

fn patched(object: Option<&Value>, r: &Response) -> Value {
    let mut obj = object.cloned().unwrap_or(Value::Null);
    if let Some(p) = r.patch.as_deref() {
        let patch: json_patch::Patch = serde_json::from_slice(p).expect("our patch is JSON");
        json_patch::patch(&mut obj, &patch).expect("our patch applies");
    }
    obj
}

fn strip_indices(paths: &[String]) -> Vec<String> {
    let mut v: Vec<String> = paths
        .iter()
        .map(|p| {
            let mut out = String::new();
            let mut chars = p.chars().peekable();
            while let Some(ch) = chars.next() {
                if ch == '[' {
                    let rest: String = chars.clone().take_while(|c| *c != ']').collect();
                    if rest.chars().all(|c| c.is_ascii_digit()) {
                        for _ in 0..=rest.len() {
                            chars.next();
                        }
                        continue;
                    }
                }
                out.push(ch);
            }
            out
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The pod annotations holding SidecarSet upgrade specs, whose `updateTimestamp` is the time of
/// injection.
const HASH_ANNOTATIONS: [&str; 2] = [
    "kruise.io/sidecarset-hash",
    "kruise.io/sidecarset-hash-without-image",
];

/// The earliest `updateTimestamp` that is masked: no case carries one at or after it
/// (`kruise_corpus` tests that), so such a timestamp was written by the webhook.
const INJECTION_TIME_FLOOR: &str = "2025-01-01T00:00:00Z";

/// `obj` with every time of injection in its SidecarSet hash annotations replaced by
/// `<injection time>`: in `metadata.annotations["kruise.io/sidecarset-hash"]` and
/// `["kruise.io/sidecarset-hash-without-image"]` (JSON maps of SidecarSet name to upgrade
/// spec), each entry's `updateTimestamp` that is an RFC 3339 UTC time to the second
/// (`2026-11-25T21:30:02Z`, what Go's `metav1.Time` writes) at or after
/// [`INJECTION_TIME_FLOOR`]. The replacement is made in the annotation's text, so the rest of
/// it (entries, field order, the timestamps a pod already carried) is still compared byte for
/// byte.
fn masked_injection_times(obj: &Value) -> Value {
    let mut obj = obj.clone();
    for key in HASH_ANNOTATIONS {
        let Some(Value::String(text)) =
            obj.pointer_mut(&format!("/metadata/annotations/{}", key.replace('/', "~1")))
        else {
            continue;
        };
        let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let mut masked = text.clone();
        for spec in entries.values() {
            let Some(ts) = spec.get("updateTimestamp").and_then(Value::as_str) else {
                continue;
            };
            let go_utc_seconds =
                ts.len() == 20 && ts.ends_with('Z') && ts.parse::<jiff::Timestamp>().is_ok();
            if go_utc_seconds && ts >= INJECTION_TIME_FLOOR {
                masked = masked.replace(
                    &format!("\"updateTimestamp\":\"{ts}\""),
                    "\"updateTimestamp\":\"<injection time>\"",
                );
            }
        }
        *text = masked;
    }
    obj
}

/// What the API server would store either way, removed before objects are compared: Go writes
/// `creationTimestamp: null` for every unset ObjectMeta timestamp (the API server sets
/// `metadata.creationTimestamp` itself and prunes nulls of non-nullable CRD fields), and the
/// top-level `status` (reset on create and ignored on update by the status subresource).
fn stored_form(v: &Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if m.get("creationTimestamp").is_some_and(Value::is_null) {
                    m.remove("creationTimestamp");
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    strip(&mut v);
    v
}

/// The `openAPIV3Schema` of the CRD serving `c`'s kind and version (`config/crd/bases`, which
/// carries OpenKruise's `required` lists), or `None` for built-in kinds.
fn crd_schema(c: &corpus::Case) -> Option<Value> {
    if c.group.is_empty() {
        return None;
    }
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/crd/bases")
        .join(format!("{}_{}.yaml", c.group, c.resource));
    let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&file).ok()?).ok()?;
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v["name"] == c.version.as_str())?
        .pointer("/schema/openAPIV3Schema")
        .cloned()
}

/// Paths of the fields the CRD schema requires that `obj` lacks or holds as `null`, walking the
/// object's properties (not into lists or maps).
fn schema_required_missing(c: &corpus::Case, obj: &Value) -> Vec<String> {
    fn walk(schema: &Value, obj: &Value, path: &str, out: &mut Vec<String>) {
        let Some(map) = obj.as_object() else { return };
        for req in schema["required"].as_array().into_iter().flatten() {
            let key = req.as_str().unwrap_or_default();
            if map.get(key).is_none_or(Value::is_null) {
                out.push(if path.is_empty() {
                    key.to_owned()
                } else {
                    format!("{path}.{key}")
                });
            }
        }
        for (key, sub) in schema["properties"].as_object().into_iter().flatten() {
            if let Some(v) = map.get(key) {
                let p = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                walk(sub, v, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(schema) = crd_schema(c) {
        walk(&schema, obj, "", &mut out);
    }
    out.sort();
    out
}

fn is_decode_error(message: &str) -> bool {
    message.contains("cannot unmarshal") || message.starts_with("json: ")
}

/// Whether the field paths of two denials agree. Go's JSON decoding errors name a field without
/// list indices and stop at a map (`metadata.labels` for a bad value of one label), so there
/// kruise-rs' path must equal Go's or extend it by a map key. A denial whose message names no
/// field in OpenKruise (`quantities must match the regular expression ...`) only needs the
/// verdict.
fn paths_agree(theirs: &Answer, ours: &[String]) -> bool {
    if theirs.paths.is_empty() {
        return true;
    }
    if !is_decode_error(&theirs.message) {
        return theirs.paths == ours;
    }
    let want = strip_indices(&theirs.paths);
    let got = strip_indices(ours);
    want.len() == got.len()
        && want
            .iter()
            .zip(&got)
            .all(|(w, g)| g == w || (g.starts_with(w.as_str()) && g[w.len()..].starts_with('.')))
}

/// Differences between two denials of the same webhook: the field paths must agree
/// ([`paths_agree`]); where both name the same fields (or none), the whole message must be
/// OpenKruise's too — Go's JSON decoding errors included — byte for byte but for pointer
/// addresses ([`corpus::without_pointer_addresses`]) and the rendering of composite offending
/// values, which Go prints in its own `%#v` syntax (`v1.LabelSelector{MatchLabels:...}`) and
/// kruise-rs as JSON ([`with_composite_values_masked`]).
fn denial_diff(what: &str, theirs: &Answer, ours: &Response) -> Option<String> {
    let ours_message = corpus::without_pointer_addresses(&message(ours));
    let ours_paths = corpus::paths_in_message(&ours_message);
    if !paths_agree(theirs, &ours_paths) {
        return Some(format!(
            "{what}: OpenKruise names {:?} ({}), kruise-rs names {ours_paths:?} ({ours_message})",
            theirs.paths, theirs.message,
        ));
    }
    let same_fields = theirs.paths == ours_paths;
    let differs = with_composite_values_masked(&theirs.message)
        != with_composite_values_masked(&ours_message);
    (same_fields && differs).then(|| {
        format!(
            "{what}: same fields {:?}, other message:\n      OpenKruise: {}\n      kruise-rs:  {ours_message}",
            theirs.paths, theirs.message
        )
    })
}

/// The field-error markers after which apimachinery writes the offending value
/// (`field.Error.ErrorBody`).
const VALUE_MARKERS: [&str; 4] = [
    ": Invalid value: ",
    ": Unsupported value: ",
    ": Duplicate value: ",
    ": Not found: ",
];

/// The length of the composite value at the start of `s`, if it is one: Go's `%#v` of a struct,
/// map, slice or nil map/slice (`v1.LabelSelector{...}`, `map[string]string(nil)`,
/// `[]string{"a"}`, `intstr.IntOrString{Type:0, ...}`), or kruise-rs' JSON of one (`{...}`,
/// `[...]`, `null`). Scalars (quoted strings, numbers, booleans) are not composite.
fn composite_len(s: &str) -> Option<usize> {
    if s.starts_with("null") {
        return Some(4);
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    // A Go type expression before the literal: identifiers, dots, `*`, and bracketed parts.
    while i < bytes.len() {
        match bytes[i] {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'*' => i += 1,
            b'[' if bytes.get(i + 1) != Some(&b'"') && bytes.get(i + 1) != Some(&b'{') => {
                let close = s[i..].find(']')?;
                i += close + 1;
            }
            _ => break,
        }
    }
    let typed = i > 0;
    if typed && !matches!(bytes.get(i), Some(b'{') | Some(b'(')) {
        return None; // a bare number, boolean or word
    }
    if !typed && !matches!(bytes.first(), Some(b'{') | Some(b'[')) {
        return None;
    }
    // A balanced group, skipping quoted strings.
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (j, &c) in bytes.iter().enumerate().skip(i) {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `message` with every composite offending value replaced by `<value>`: Go renders them with
/// `%#v` (its own syntax for structs and maps), kruise-rs as JSON; everything else — paths,
/// error types, scalar values, details, order — stays as it is.
fn with_composite_values_masked(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some((pos, marker)) = VALUE_MARKERS
        .iter()
        .filter_map(|m| rest.find(m).map(|p| (p, *m)))
        .min_by_key(|(p, _)| *p)
    {
        let value_at = pos + marker.len();
        out.push_str(&rest[..value_at]);
        rest = &rest[value_at..];
        if let Some(n) = composite_len(rest) {
            out.push_str("<value>");
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

/// [`denial_diff`] across layers (kruise-rs' mutating webhook against OpenKruise's validating
/// webhook or the API server's schema check): the same fields, whatever the wording.
fn denial_paths_diff(what: &str, theirs: &Answer, ours: &Response) -> Option<String> {
    let ours_paths = corpus::paths_in_message(&message(ours));
    (!paths_agree(theirs, &ours_paths)).then(|| {
        format!(
            "{what}: OpenKruise names {:?} ({}), kruise-rs names {ours_paths:?} ({})",
            theirs.paths,
            theirs.message,
            message(ours)
        )
    })
}

fn verdict_diff(what: &str, theirs: &Answer, ours: &Response) -> String {
    format!(
        "{what}: OpenKruise {} ({}), kruise-rs {} ({})",
        if theirs.allowed { "allows" } else { "denies" },
        theirs.message,
        if ours.allowed { "allows" } else { "denies" },
        message(ours)
    )
}

/// Differences between OpenKruise's answers and ours for one case, as text (empty when they
/// agree). Like the API server: the mutating webhook, then the validating webhook on the
/// mutated object (OpenKruise's, so a mutation difference is reported once). A kruise-rs
/// mutating webhook that denies what OpenKruise's validating webhook denies, naming the same
/// fields, gives the user the same answer and agrees (e.g. a missing `spec.selector`, which
/// OpenKruise decodes and then refuses, and kruise-rs refuses while decoding).
async fn replay(rec: &Record, lookup: &Lookup) -> Vec<String> {
    let mut diffs = Vec::new();
    let c = &rec.case;
    let mut validated_object = c.object.clone();
    if let Some(theirs) = &rec.mutation {
        let Some(ours) = call(rec, WebhookType::Mutating, c.object.as_ref(), lookup).await else {
            return vec!["mutation: kruise-rs serves no mutating webhook here".into()];
        };
        if ours.result.code >= 500 && theirs.code < 500 {
            diffs.push(format!(
                "mutation: we answered {} ({})",
                ours.result.code,
                message(&ours)
            ));
        }
        match (theirs.allowed, ours.allowed) {
            (true, true) => {
                let want = masked_injection_times(&stored_form(
                    theirs.patched.as_ref().unwrap_or(&Value::Null),
                ));
                let got = masked_injection_times(&stored_form(&patched(c.object.as_ref(), &ours)));
                if got != want {
                    diffs.push(format!(
                        "mutation: mutated object differs (patch from OpenKruise's to ours: {})",
                        serde_json::to_string(&json_patch::diff(&want, &got)).unwrap_or_default()
                    ));
                }
            }
            (false, false) => diffs.extend(denial_diff("mutation", theirs, &ours)),
            (true, false) => {
                // What the API server does next with OpenKruise's mutated object: its CRD
                // schema check refuses a required field that is absent or null (nulls of
                // non-nullable fields are pruned) before any validating webhook runs.
                let missing = theirs
                    .patched
                    .as_ref()
                    .map(|o| schema_required_missing(c, o))
                    .unwrap_or_default();
                if !missing.is_empty() {
                    let api_server = Answer {
                        allowed: false,
                        message: format!("CRD schema: {} Required value", missing.join(", ")),
                        paths: missing,
                        ..theirs.clone()
                    };
                    diffs.extend(denial_paths_diff(
                        "mutation (vs. the API server's CRD schema check)",
                        &api_server,
                        &ours,
                    ));
                    return diffs;
                }
                // Same answer to the user only if OpenKruise's validation refuses the same fields.
                match rec.validation.as_ref().filter(|v| !v.allowed) {
                    Some(v) => diffs.extend(denial_paths_diff(
                        "mutation (vs. OpenKruise's validation)",
                        v,
                        &ours,
                    )),
                    None => diffs.push(verdict_diff("mutation", theirs, &ours)),
                }
                return diffs;
            }
            (false, true) => {
                diffs.push(verdict_diff("mutation", theirs, &ours));
                return diffs;
            }
        }
        validated_object = theirs.patched.clone();
    }
    if let Some(theirs) = &rec.validation {
        let obj = if c.operation == "DELETE" {
            None
        } else {
            validated_object.as_ref()
        };
        let Some(ours) = call(rec, WebhookType::Validating, obj, lookup).await else {
            diffs.push("validation: kruise-rs serves no validating webhook here".into());
            return diffs;
        };
        if ours.result.code >= 500 && theirs.code < 500 {
            diffs.push(format!(
                "validation: we answered {} ({})",
                ours.result.code,
                message(&ours)
            ));
        }
        if theirs.allowed != ours.allowed {
            diffs.push(verdict_diff("validation", theirs, &ours));
        } else if !theirs.allowed {
            diffs.extend(denial_diff("validation", theirs, &ours));
        }
    }
    diffs
}

/// Whether OpenKruise injected SidecarSets into the pod of `rec` (its mutated pod's
/// `kruise.io/sidecarset-hash` differs from the one sent).
fn sidecars_injected(rec: &Record) -> bool {
    let hash = |o: Option<&Value>| {
        o.and_then(|o| o.pointer("/metadata/annotations/kruise.io~1sidecarset-hash"))
            .cloned()
    };
    rec.case.kind == "Pod"
        && rec.mutation.as_ref().is_some_and(|m| {
            m.allowed && hash(m.patched.as_ref()) != hash(rec.case.object.as_ref())
        })
}

#[tokio::test]
async fn kruise_rs_answers_every_recorded_case_as_openkruise_does() {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    let mut failures: Vec<String> = Vec::new();
    let mut summary: BTreeMap<String, (usize, usize, usize, usize)> = BTreeMap::new();
    let mut injected: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(file).expect("read corpus");
        let lookup = Lookup::fixed_cluster(recorded_cluster(&stem));
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let rec: Record = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 1));
            let s = summary.entry(stem.clone()).or_default();
            s.0 += 1;
            if rec.allowed() {
                s.1 += 1;
                if sidecars_injected(&rec) {
                    *injected.entry(stem.clone()).or_default() += 1;
                }
            } else {
                s.2 += 1;
            }
            let diffs = replay(&rec, &lookup).await;
            match (&rec.deviation, diffs.is_empty()) {
                (None, true) => {}
                (None, false) => {
                    failures.push(format!("{} ({stem}:{}):\n    {}", rec.case.id, n + 1, diffs.join("\n    ")))
                }
                (Some(_), false) => s.3 += 1,
                (Some(reason), true) => failures.push(format!(
                    "{} ({stem}:{}): marked deviation \"{reason}\" but kruise-rs now answers as OpenKruise: remove the mark",
                    rec.case.id,
                    n + 1
                )),
            }
        }
    }
    // Complete and current: the minimum per file, and every generated case recorded.
    for (stem, min) in MIN_CASES {
        let have = summary.get(*stem).map_or(0, |s| s.0);
        if have < *min {
            failures.push(format!(
                "{stem}: {have} recorded cases, fewer than {min} (truncated or partial recording?)"
            ));
        }
    }
    for c in corpus::all() {
        assert!(
            MIN_CASES.iter().any(|(stem, _)| *stem == c.name),
            "corpus {} has no minimum in MIN_CASES",
            c.name
        );
        let text =
            std::fs::read_to_string(dir.join(format!("{}.jsonl", c.name))).unwrap_or_default();
        let recorded: std::collections::BTreeSet<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Record>(l).ok())
            .map(|r| r.case.id)
            .collect();
        let missing: Vec<&str> = c
            .cases
            .iter()
            .map(|case| case.id.as_str())
            .filter(|id| !recorded.contains(*id))
            .collect();
        if !missing.is_empty() {
            failures.push(format!(
                "{}: {} generated cases are not recorded (re-record with hack/admission-corpus/record.sh), e.g. {:?}",
                c.name,
                missing.len(),
                &missing[..missing.len().min(5)]
            ));
        }
    }
    for (k, (cases, admitted, denied, deviations)) in &summary {
        let injected = match injected.get(k) {
            Some(n) => format!(", {n} with SidecarSets injected"),
            None => String::new(),
        };
        eprintln!(
            "[corpus] {k}: {cases} cases ({denied} denied, {admitted} admitted{injected}), {deviations} marked deviations"
        );
    }
    assert!(
        failures.is_empty(),
        "{} cases differ from OpenKruise v1.9.0:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn only_times_of_injection_are_masked() {
    let hash = r#"{"a":{"updateTimestamp":"2026-11-25T21:30:02Z","hash":"h"},"b":{"updateTimestamp":"2024-01-02T03:04:05Z","hash":"o"},"c":{"updateTimestamp":"2026-11-25T21:30:02.5Z"}}"#;
    let pod = json!({"metadata": {"annotations": {
        "kruise.io/sidecarset-hash": hash,
        "kruise.io/sidecarset-hash-without-image": "not json",
        "other": r#"{"a":{"updateTimestamp":"2026-11-25T21:30:02Z"}}"#,
    }}});
    let masked = masked_injection_times(&pod);
    assert_eq!(
        masked["metadata"]["annotations"]["kruise.io/sidecarset-hash"],
        r#"{"a":{"updateTimestamp":"<injection time>","hash":"h"},"b":{"updateTimestamp":"2024-01-02T03:04:05Z","hash":"o"},"c":{"updateTimestamp":"2026-11-25T21:30:02.5Z"}}"#
    );
    assert_eq!(
        masked["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"],
        "not json"
    );
    assert_eq!(
        masked["metadata"]["annotations"]["other"],
        pod["metadata"]["annotations"]["other"]
    );
}

#[test]
fn composite_values_are_masked_scalars_are_not() {
    let go = r#"[spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", Operator:"In", Values:[]string(nil)}}}, spec.x: Invalid value: map[string]string(nil): bad, spec.y: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"0%"}: both, spec.z: Invalid value: "0%": q, spec.n: Invalid value: 5: n]"#;
    let rs = r#"[spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"In"}]}, spec.x: Invalid value: null: bad, spec.y: Invalid value: "0%": both, spec.z: Invalid value: "0%": q, spec.n: Invalid value: 5: n]"#;
    let want = r#"[spec.selector: Invalid value: <value>, spec.x: Invalid value: <value>: bad, spec.y: Invalid value: <value>: both, spec.z: Invalid value: "0%": q, spec.n: Invalid value: 5: n]"#;
    assert_eq!(with_composite_values_masked(go), want);
    // A scalar where Go printed a struct still differs.
    assert_ne!(with_composite_values_masked(rs), want);
    assert_eq!(
        with_composite_values_masked(
            "metadata.name: Invalid value: \"a.b\": must not contain dots"
        ),
        "metadata.name: Invalid value: \"a.b\": must not contain dots"
    );
}
