//! Property tests of every admission handler, through the server's own entry point
//! ([`kruise_webhook::server::answer`]): whatever JSON arrives — a valid object with any field
//! replaced by any JSON value, or any JSON value at all — the answer is a well-formed
//! AdmissionReview response for the request's uid, never a panic and never a 5xx; a patch that
//! comes back applies to the object (as the API server sends objects: with apiVersion, kind and
//! metadata); and a CloneSet that is admitted cannot make its controller
//! write invalid objects (every claim template has a name the claims can be named after — the
//! regression where unnamed `volumeClaimTemplates` were admitted and the controller retried
//! invalid PVC names forever).

use kruise_runtime::features::FeatureGates;
use kruise_webhook::registry::{AdmissionEntry, REGISTRY};
use kruise_webhook::{HandlerContext, lookup::Lookup};
use proptest::prelude::*;
use serde_json::{Value, json};

const UID: &str = "11111111-2222-4333-8444-555555555555";

fn ctx() -> HandlerContext {
    HandlerContext {
        gates: FeatureGates::parse("AllAlpha=true,AllBeta=true").expect("gates"),
        lookup: Some(Lookup::fixed(Vec::new(), Vec::new())),
    }
}

/// A valid object for each kind the webhooks serve.
fn base(entry: &AdmissionEntry) -> Value {
    let template = json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25",
            "resources": {"requests": {"cpu": "100m"}}, "ports": [{"containerPort": 80}]}],
            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]},
    });
    match entry.resource {
        "clonesets" => json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "cs", "namespace": "ns"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "demo"}}, "template": template,
                     "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
                     "updateStrategy": {"type": "InPlaceIfPossible", "partition": 1, "maxUnavailable": "50%"}}}),
        "statefulsets" => json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "sts", "namespace": "ns"},
            "spec": {"replicas": 3, "serviceName": "sts", "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "demo"}}, "template": template,
                     "reserveOrdinals": [1, "3-4"],
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1,
                        "maxUnavailable": 2, "podUpdatePolicy": "InPlaceIfPossible"}}}}),
        _ => json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1",
                "kind": "CloneSet", "name": "cs", "uid": "u", "controller": true}]},
            "spec": template["spec"].clone()}),
    }
}

fn review(entry: &AdmissionEntry, object: &Value, old: Option<&Value>) -> Vec<u8> {
    let version = if entry.resource == "statefulsets" {
        "v1beta1"
    } else {
        entry.api_versions[0]
    };
    let gvk = json!({"group": entry.api_group, "version": version, "kind": object.get("kind").cloned().unwrap_or(json!("X"))});
    let gvr = json!({"group": entry.api_group, "version": version, "resource": entry.resource});
    let operation = if old.is_some() { "UPDATE" } else { "CREATE" };
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": UID, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
            "name": "x", "namespace": "ns", "operation": operation,
            "userInfo": {"username": "proptest"}, "object": object, "oldObject": old, "dryRun": false}
    }))
    .unwrap()
}

/// Any JSON value (bounded depth and size).
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("150%"),
            Just("-1"),
            Just("1Gi"),
            Just("abc"),
            Just(""),
            Just("99999999999999%")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every path (JSON pointer) of `v`.
fn pointers(v: &Value, prefix: String, out: &mut Vec<String>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, c)| pointers(c, format!("{prefix}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| pointers(c, format!("{prefix}/{i}"), out)),
        _ => {}
    }
}

fn replaced(base: &Value, pick: usize, with: Value) -> Value {
    let mut paths = Vec::new();
    pointers(base, String::new(), &mut paths);
    let path = &paths[pick % paths.len()];
    let mut v = base.clone();
    if path.is_empty() {
        return with;
    }
    if let Some(slot) = v.pointer_mut(path) {
        *slot = with;
    }
    v
}

fn check(
    entry: &'static AdmissionEntry,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = review(entry, object, old);
    let answer = rt.block_on(kruise_webhook::server::answer(&ctx(), &body, entry));
    let response = answer
        .response
        .ok_or_else(|| TestCaseError::fail("no response"))?;
    prop_assert_eq!(response.uid.as_str(), UID, "{}: uid not echoed", entry.path);
    prop_assert!(
        response.result.code < 500,
        "{}: answered {} ({}) for {}",
        entry.path,
        response.result.code,
        response.result.message,
        object
    );
    // The API server always sends an object with apiVersion, kind and metadata (it decoded
    // it); patches are checked against such objects.
    let api_server_shaped = ["apiVersion", "kind"]
        .iter()
        .all(|k| object.get(k).is_some_and(Value::is_string))
        && object.get("metadata").is_some_and(Value::is_object);
    if let Some(patch) = response.patch.as_deref().filter(|_| api_server_shaped) {
        let patch: json_patch::Patch = serde_json::from_slice(patch)
            .map_err(|e| TestCaseError::fail(format!("{}: patch is not JSON: {e}", entry.path)))?;
        let mut patched = object.clone();
        json_patch::patch(&mut patched, &patch).map_err(|e| {
            TestCaseError::fail(format!("{}: patch does not apply: {e}", entry.path))
        })?;
    }
    if response.allowed && entry.resource == "clonesets" && entry.path.starts_with("/validate") {
        for t in object
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = t
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            prop_assert!(
                kruise_api::validation::names::is_dns1123_label(name).is_empty(),
                "admitted a claim template named {name:?}: its PVCs could never be created"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// A valid object with one field (at any depth) replaced by any JSON value, sent to every
    /// handler as a CREATE and as an UPDATE of the valid object.
    #[test]
    fn every_handler_answers_any_edited_object(pick in any::<usize>(), with in any_json()) {
        for entry in REGISTRY.iter() {
            let b = base(entry);
            let obj = replaced(&b, pick, with.clone());
            check(entry, &obj, None)?;
            if entry.operations.contains(&"UPDATE") {
                check(entry, &obj, Some(&b))?;
            }
        }
    }

    /// Any JSON value as the whole object.
    #[test]
    fn every_handler_answers_any_json(obj in any_json()) {
        for entry in REGISTRY.iter() {
            check(entry, &obj, None)?;
        }
    }
}

/// The regression behind the claim-name property: a CloneSet whose claim template has no name
/// is refused naming the field (OpenKruise's validation of the template with the claims mocked
/// in as volumes).
#[test]
fn unnamed_claim_templates_are_refused() {
    let entry = REGISTRY
        .iter()
        .find(|e| e.resource == "clonesets" && e.path.starts_with("/validate"))
        .unwrap();
    let mut cs = base(entry);
    cs["spec"]["volumeClaimTemplates"] = json!([{"spec": {"accessModes": ["ReadWriteOnce"]}}]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = rt.block_on(kruise_webhook::server::answer(
        &ctx(),
        &review(entry, &cs, None),
        entry,
    ));
    let response = answer.response.unwrap();
    assert!(
        !response.allowed,
        "admitted a claim template without a name"
    );
    assert!(
        response
            .result
            .message
            .contains("spec.template.spec.volumes[0].name: Required value"),
        "{}",
        response.result.message
    );
}
