use super::*;
use cel::{Context, Program, Value as CelValue};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Evaluates `expr` as the API server would for a pod CREATE in `namespace`.
fn eval(expr: &str, pod: &Value, namespace: &str) -> bool {
    let program = Program::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut ctx = Context::default();
    ctx.add_variable("object", pod.clone()).unwrap();
    ctx.add_variable("request", json!({"namespace": namespace}))
        .unwrap();
    match program.execute(&ctx) {
        Ok(CelValue::Bool(b)) => b,
        other => panic!("{expr} on {pod}: {other:?}"),
    }
}

fn pod(labels: &BTreeMap<String, String>) -> Value {
    let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
    if !labels.is_empty() {
        p["metadata"]["labels"] = json!(labels);
    }
    p
}

fn sidecarset(v: Value) -> SidecarSet {
    serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": v})).unwrap()
}

#[test]
fn strings_are_escaped() {
    assert_eq!(cel_string("a'b\\c"), r"'a\'b\\c'");
    assert_eq!(cel_string("x\ny"), r"'x\x0ay'");
    let expr = format!("{} == 'it\\'s'", cel_string("it's"));
    assert!(eval(&expr, &json!({}), "ns"));
}

#[test]
fn the_condition_calls_for_kruise_pods_launch_priority_and_selected_pods() {
    let sets = vec![
        sidecarset(json!({"selector": {"matchLabels": {"app": "web"}}})),
        sidecarset(json!({"selector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prod"}}})),
        sidecarset(json!({"selector": {"matchLabels": {"app": "paused"}},
            "injectionStrategy": {"paused": true}})),
    ];
    let cond = pod_webhook_condition(&sets, false).unwrap();
    let plain = json!({"metadata": {"name": "p", "labels": {"app": "other"}},
        "spec": {"containers": [{"name": "c"}]}});
    assert!(!eval(&cond, &plain, "default"));
    let mut owned = plain.clone();
    owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet", "name": "cs", "uid": "u", "controller": true}]);
    assert!(eval(&cond, &owned, "default"));
    let mut rs_owned = plain.clone();
    rs_owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
        "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]);
    assert!(!eval(&cond, &rs_owned, "default"));
    let mut prio = plain.clone();
    prio["spec"]["containers"][0]["env"] =
        json!([{"name": "KRUISE_CONTAINER_PRIORITY", "value": "1"}]);
    assert!(eval(&cond, &prio, "default"));
    let mut ordered = plain.clone();
    ordered["metadata"]["annotations"] =
        json!({"apps.kruise.io/container-launch-priority": "Ordered"});
    assert!(eval(&cond, &ordered, "default"));
    let web = pod(&BTreeMap::from([("app".into(), "web".into())]));
    assert!(eval(&cond, &web, "anywhere"));
    let db = pod(&BTreeMap::from([("app".into(), "db".into())]));
    assert!(eval(&cond, &db, "prod"));
    assert!(!eval(&cond, &db, "dev"), "pinned to namespace prod");
    let paused = pod(&BTreeMap::from([("app".into(), "paused".into())]));
    assert!(!eval(&cond, &paused, "default"));
    // Every pod: the readiness-gate gate on, or a selector CEL cannot express.
    assert!(pod_webhook_condition(&sets, true).is_none());
    let odd = sidecarset(
        json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}}),
    );
    assert!(pod_webhook_condition(&[odd], false).is_none());
}

fn arb_labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_string),
        prop::sample::select(vec!["1", "2", "x'y"]).prop_map(str::to_string),
        0..3,
    )
}

fn arb_selector() -> impl Strategy<Value = LabelSelector> {
    let key = prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_string);
    let value = prop::sample::select(vec!["1", "2", "x'y"]).prop_map(str::to_string);
    let req = (
        key.clone(),
        prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]),
        prop::collection::vec(value.clone(), 0..3),
    )
        .prop_map(|(key, op, values)| LabelSelectorRequirement {
            key,
            operator: op.to_string(),
            values: (!matches!(op, "Exists" | "DoesNotExist")).then_some(values),
        });
    (
        prop::collection::btree_map(key, value, 0..2),
        prop::collection::vec(req, 0..3),
    )
        .prop_map(|(labels, exprs)| LabelSelector {
            match_labels: (!labels.is_empty()).then_some(labels),
            match_expressions: (!exprs.is_empty()).then_some(exprs),
        })
}

proptest! {
    /// The CEL of a selector selects exactly the pods Go's selector matching selects.
    #[test]
    fn selector_cel_agrees_with_selector_matching(sel in arb_selector(), labels in arb_labels()) {
        let expr = selector_expression(&sel).unwrap();
        let want = kruise_engines::updatesort::selector_matches(&sel, Some(&labels)).unwrap();
        prop_assert_eq!(eval(&expr, &pod(&labels), "ns"), want);
    }
}

#[test]
fn sidecarsets_pinned_to_a_namespace() {
    let e = sidecarset_pinned_to("ns1");
    let v1beta1 = json!({"spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}}});
    let v1alpha1 = json!({"spec": {"namespace": "ns1"}});
    let other = json!({"spec": {"namespaceSelector": {"matchLabels": {"env": "x"}}}});
    let none = json!({"spec": {}});
    assert!(eval(&e, &v1beta1, ""));
    assert!(eval(&e, &v1alpha1, ""));
    assert!(!eval(&e, &other, ""));
    assert!(!eval(&e, &none, ""));
}

/// Evaluates `expr` for a pod DELETE or UPDATE: `oldObject` / `object` as the API server binds
/// them (`object` is null on a DELETE).
fn eval_op(expr: &str, operation: &str, object: Value, old: Value) -> bool {
    let program = Program::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut ctx = Context::default();
    ctx.add_variable("object", object).unwrap();
    ctx.add_variable("oldObject", old).unwrap();
    ctx.add_variable(
        "request",
        json!({"namespace": "ns", "operation": operation}),
    )
    .unwrap();
    match program.execute(&ctx) {
        Ok(CelValue::Bool(b)) => b,
        other => panic!("{expr}: {other:?}"),
    }
}

#[test]
fn pod_validating_webhooks_are_called_only_for_pods_naming_a_budget() {
    let plain = json!({"metadata": {"name": "p"}});
    let covered = json!({"metadata": {"name": "p", "annotations": {"kruise.io/related-pub": "b"}}});
    let both = budget_condition("vpod.kb.io", true, true, None, None)
        .unwrap()
        .unwrap();
    assert!(eval_op(&both, "DELETE", Value::Null, covered.clone()));
    assert!(!eval_op(&both, "DELETE", Value::Null, plain.clone()));
    assert!(eval_op(&both, "UPDATE", covered.clone(), plain.clone()));
    assert!(!eval_op(&both, "UPDATE", plain.clone(), covered.clone()));
    // Default gates (delete only): updates never call it.
    let delete = budget_condition("vpod.kb.io", true, false, None, None)
        .unwrap()
        .unwrap();
    assert!(!eval_op(
        &delete,
        "UPDATE",
        covered.clone(),
        covered.clone()
    ));
    assert!(eval_op(&delete, "DELETE", Value::Null, covered.clone()));
    assert_eq!(
        budget_condition("vpod.kb.io", false, false, None, None),
        Some(Some("false".to_string()))
    );
    // Evictions do not carry the pod: by namespace — every one until the budgets are known,
    // none without a budget, those of namespaces holding one.
    assert_eq!(
        budget_condition("vpodeviction.kb.io", true, false, None, None),
        Some(None)
    );
    assert_eq!(
        budget_condition("vpodeviction.kb.io", true, false, Some(&[]), None),
        Some(Some("false".to_string()))
    );
    assert_eq!(
        budget_condition("vpodeviction.kb.io", false, true, None, None),
        Some(Some("false".to_string()))
    );
    let nss = ["a".to_string(), "b".to_string()];
    let some = budget_condition("vpodeviction.kb.io", true, false, Some(&nss), None)
        .unwrap()
        .unwrap();
    assert!(eval(&some, &json!({}), "b"));
    assert!(!eval(&some, &json!({}), "c"));
    assert_eq!(budget_condition("mpod.kb.io", true, true, None, None), None);
}

/// Evaluates `expr` for a request with `operation`, `namespace`, user `username` and the old
/// object `old` (`object` null, as on a DELETE).
fn eval_request(expr: &str, operation: &str, namespace: &str, username: &str, old: Value) -> bool {
    let program = Program::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut ctx = Context::default();
    ctx.add_variable("object", Value::Null).unwrap();
    ctx.add_variable("oldObject", old).unwrap();
    ctx.add_variable(
        "request",
        json!({"namespace": namespace, "operation": operation,
               "userInfo": {"username": username}}),
    )
    .unwrap();
    match program.execute(&ctx) {
        Ok(CelValue::Bool(b)) => b,
        other => panic!("{expr}: {other:?}"),
    }
}

fn flow_control(name: &str, spec: Value) -> PodDeletionFlowControl {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

#[test]
fn flow_control_adds_the_deletions_it_may_count_and_nothing_else() {
    let kruise_pod = json!({"metadata": {"name": "p", "labels": {"app": "web"},
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                             "name": "web", "uid": "u", "controller": true}]}});
    let deployment_pod = json!({"metadata": {"name": "p", "labels": {"app": "web"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                             "uid": "u", "controller": true}]}});
    let bare = json!({"metadata": {"name": "p"}});
    assert_eq!(flow_control_terms(&[]), None);
    let objects = [
        flow_control(
            "kruise",
            json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "a"}},
                   "limits": [{"window": "1m", "maxDeletions": 1}],
                   "exempt": {"usernames": ["drainer"]}}),
        ),
        flow_control(
            "all",
            json!({"scope": "AllWorkloads",
                   "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                         "operator": "In", "values": ["b"]}]},
                   "podSelector": {"matchLabels": {"app": "web"}},
                   "limits": [{"window": "1m", "maxDeletions": 1}]}),
        ),
    ];
    let terms = flow_control_terms(&objects).unwrap();
    // With PodUnavailableBudget's delete gate off, only flow control calls the webhook.
    let vpod = budget_condition("vpod.kb.io", false, false, None, Some(&terms))
        .unwrap()
        .unwrap();
    let del =
        |ns: &str, user: &str, pod: &Value| eval_request(&vpod, "DELETE", ns, user, pod.clone());
    assert!(del("a", "alice", &kruise_pod));
    assert!(!del("a", "drainer", &kruise_pod), "exempt user");
    assert!(!del("a", "alice", &deployment_pod), "KruiseWorkloads only");
    assert!(!del("c", "alice", &kruise_pod), "namespace not selected");
    assert!(del("b", "alice", &deployment_pod), "AllWorkloads in b");
    assert!(!del("b", "alice", &bare), "podSelector");
    assert!(!eval_request(
        &vpod,
        "UPDATE",
        "a",
        "alice",
        kruise_pod.clone()
    ));
    // Evictions: by namespace and user.
    let evict = budget_condition("vpodeviction.kb.io", true, false, Some(&[]), Some(&terms))
        .unwrap()
        .unwrap();
    let ev = |ns: &str, user: &str| eval_request(&evict, "CREATE", ns, user, Value::Null);
    assert!(ev("a", "alice") && ev("b", "alice"));
    assert!(!ev("a", "drainer") && !ev("c", "alice"));
    // An object with an unpinned namespace selector: every eviction; before the objects are
    // known: no condition at all.
    let wide = flow_control_terms(&[flow_control(
        "wide",
        json!({"namespaceSelector": {"matchLabels": {"team": "x"}},
               "limits": [{"window": "1m", "maxDeletions": 1}]}),
    )])
    .unwrap();
    assert_eq!(
        budget_condition("vpodeviction.kb.io", true, false, Some(&[]), Some(&wide)),
        Some(None)
    );
    assert_eq!(
        budget_condition(
            "vpodeviction.kb.io",
            false,
            false,
            None,
            Some(&FlowTerms::every())
        ),
        Some(None)
    );
    let vpod_wide = budget_condition("vpod.kb.io", false, false, None, Some(&wide))
        .unwrap()
        .unwrap();
    assert!(eval_request(
        &vpod_wide,
        "DELETE",
        "zzz",
        "u",
        kruise_pod.clone()
    ));
    assert!(!eval_request(
        &vpod_wide,
        "DELETE",
        "zzz",
        "u",
        deployment_pod.clone()
    ));
}

#[test]
fn deletion_protection_webhooks_are_called_only_for_labelled_objects() {
    let labelled = json!({"metadata": {"name": "w",
        "labels": {"policy.kruise.io/delete-protection": "Cascading"}}, "spec": {}});
    let other = json!({"metadata": {"name": "w", "labels": {"app": "x"}}, "spec": {}});
    let bare = json!({"metadata": {"name": "w"}, "spec": {}});
    assert!(crate::deletionprotection::WEBHOOKS.contains(&"vuniteddeployment.kb.io"));
    for webhook in crate::deletionprotection::WEBHOOKS {
        let on = deletion_condition(webhook, true).expect(webhook);
        assert!(eval_op(&on, "DELETE", Value::Null, labelled.clone()));
        assert!(!eval_op(&on, "DELETE", Value::Null, other.clone()));
        assert!(!eval_op(&on, "DELETE", Value::Null, bare.clone()));
        // Gate off: never called.
        let off = deletion_condition(webhook, false).expect(webhook);
        assert!(!eval_op(&off, "DELETE", Value::Null, labelled.clone()));
    }
    assert_eq!(deletion_condition("vcloneset.kb.io", true), None);
    assert_eq!(deletion_condition("mpod.kb.io", true), None);
}

#[test]
fn persistent_pod_states_call_for_the_pods_of_their_targets_in_their_namespace() {
    let pps = |ns: &str, api_version: &str, kind: &str, name: &str| {
        let mut p = kruise_api::apps::v1alpha1::PersistentPodState::new(
            "p",
            kruise_api::apps::v1alpha1::PersistentPodStateSpec {
                target_reference: kruise_api::apps::v1alpha1::TargetReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: name.into(),
                },
                ..Default::default()
            },
        );
        p.metadata.namespace = Some(ns.into());
        std::sync::Arc::new(p)
    };
    assert_eq!(
        persistent_pod_state_expression::<
            std::sync::Arc<kruise_api::apps::v1alpha1::PersistentPodState>,
        >(&[]),
        None
    );
    let expr = persistent_pod_state_expression(&[
        pps("a", "apps/v1", "StatefulSet", "web"),
        pps("b", "x.io/v1", "Like", "l"),
    ])
    .unwrap();
    let owned = |api_version: &str, kind: &str, name: &str| {
        json!({"metadata": {"name": "p", "ownerReferences": [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "c"}]}})
    };
    assert!(eval(&expr, &owned("apps/v1", "StatefulSet", "web"), "a"));
    assert!(!eval(&expr, &owned("apps/v1", "StatefulSet", "web"), "b"));
    assert!(!eval(&expr, &owned("apps/v1", "StatefulSet", "other"), "a"));
    assert!(!eval(
        &expr,
        &owned("apps.kruise.io/v1beta1", "StatefulSet", "web"),
        "a"
    ));
    assert!(eval(&expr, &owned("x.io/v2", "Like", "l"), "b"));
    let bare = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
    assert!(!eval(&expr, &bare, "a"));
}

#[test]
fn united_deployment_webhook_sees_writes_only_with_the_controller() {
    let labelled = json!({"metadata": {"name": "w",
        "labels": {"policy.kruise.io/delete-protection": "Always"}}, "spec": {}});
    let bare = json!({"metadata": {"name": "w"}, "spec": {}});
    let with = united_deployment_condition(true, true);
    assert!(eval_op(&with, "CREATE", bare.clone(), Value::Null));
    assert!(eval_op(&with, "UPDATE", bare.clone(), bare.clone()));
    assert!(eval_op(&with, "DELETE", Value::Null, labelled.clone()));
    assert!(!eval_op(&with, "DELETE", Value::Null, bare.clone()));
    let without = united_deployment_condition(true, false);
    assert!(!eval_op(&without, "CREATE", bare.clone(), Value::Null));
    assert!(!eval_op(
        &without,
        "UPDATE",
        labelled.clone(),
        labelled.clone()
    ));
    assert!(eval_op(&without, "DELETE", Value::Null, labelled.clone()));
    assert!(!eval_op(&without, "DELETE", Value::Null, bare.clone()));
    let gate_off = united_deployment_condition(false, true);
    assert!(eval_op(&gate_off, "CREATE", bare.clone(), Value::Null));
    assert!(!eval_op(&gate_off, "DELETE", Value::Null, labelled.clone()));
    assert!(!eval_op(
        &united_deployment_condition(false, false),
        "DELETE",
        Value::Null,
        labelled
    ));
}
