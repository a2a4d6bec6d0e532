//! PodUnavailableBudget cases (`podunavailablebudget`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/podunavailablebudget/validating` — the protect-operations and
//! protect-total-replicas annotations, `selector` / `targetRef` (exactly one, valid, non-empty),
//! `maxUnavailable` / `minAvailable` (exactly one, positive number or percentage up to 100%),
//! immutable `selector` and `targetRef` on update, and conflicts with the budgets of
//! [`cluster`] (same workload, loosely overlapping selectors).

use serde_json::{Value, json};

use super::{Builder, Case, NAMESPACE, int_or_percent, selectors};

fn budget(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec
    })
}

/// Budgets the new ones may conflict with: one over CloneSet `taken` (by `targetRef`), one over
/// `app: taken` (by selector), one over `tier In (db, cache)`.
pub fn cluster() -> Vec<Value> {
    vec![
        budget(
            "corpus-by-ref",
            json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "taken"},
                   "maxUnavailable": 1}),
        ),
        budget(
            "corpus-by-label",
            json!({"selector": {"matchLabels": {"app": "taken"}}, "maxUnavailable": "25%"}),
        ),
        budget(
            "corpus-by-expr",
            json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "cache"]}]},
                   "minAvailable": 2}),
        ),
    ]
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "podunavailablebudget",
        group: "policy.kruise.io",
        version: "v1alpha1",
        kind: "PodUnavailableBudget",
        resource: "podunavailablebudgets",
        cases: Vec::new(),
    };
    let valid = budget(
        "pub",
        json!({"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": 1}),
    );
    b.create("valid", valid.clone());

    // Annotations.
    for (i, ops) in [
        "DELETE",
        "UPDATE,EVICT",
        "DELETE,UPDATE,EVICT,RESIZE",
        "",
        "delete",
        "DELETE,",
        "KILL",
        "DELETE,KILL,UPDATE",
        " DELETE",
    ]
    .iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["metadata"]["annotations"] = json!({"kruise.io/pub-protect-operations": ops});
        b.create(&format!("protect-operations-{i}"), o);
    }
    for (i, total) in [
        "10",
        "0",
        "-1",
        "",
        "abc",
        "1.5",
        "2147483647",
        "2147483648",
        "+3",
        "0x10",
        " 5",
    ]
    .iter()
    .enumerate()
    {
        let mut o = valid.clone();
        o["metadata"]["annotations"] = json!({"pub.kruise.io/protect-total-replicas": total});
        b.create(&format!("protect-total-replicas-{i}"), o);
    }

    // Selector and targetRef.
    for (i, sel) in selectors().into_iter().enumerate() {
        let mut o = valid.clone();
        o["spec"]["selector"] = sel;
        b.create(&format!("selector-{i}"), o);
    }
    let refs = [
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}),
        json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "web"}),
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web"}),
        json!({"apiVersion": "", "kind": "CloneSet", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "", "name": "web"}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": ""}),
        json!({"kind": "Deployment", "name": "web"}),
        json!({"apiVersion": "a/b/c", "kind": "Deployment", "name": "web"}),
        json!({"apiVersion": "/v1", "kind": "Deployment", "name": "web"}),
        json!({}),
        // Conflicts with the cluster's budgets (any version of the same group).
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "taken"}),
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet", "name": "taken"}),
        json!({"apiVersion": "apps/v1", "kind": "CloneSet", "name": "taken"}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet", "name": "taken"}),
    ];
    for (i, r) in refs.iter().enumerate() {
        let o = budget("pub", json!({"targetRef": r, "maxUnavailable": 1}));
        b.create(&format!("target-ref-{i}"), o);
    }
    b.create(
        "selector-and-target-ref",
        budget(
            "pub",
            json!({"selector": {"matchLabels": {"app": "demo"}}, "targetRef": refs[0], "maxUnavailable": 1}),
        ),
    );
    b.create("neither", budget("pub", json!({"maxUnavailable": 1})));

    // Selector conflicts (OpenKruise's loose overlap).
    for (i, sel) in [
        json!({"matchLabels": {"app": "taken"}}),
        json!({"matchLabels": {"app": "taken", "extra": "x"}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["taken", "other"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["taken"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}),
        json!({"matchLabels": {"tier": "db"}}),
        json!({"matchLabels": {"tier": "web"}}),
        json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}),
        json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db", "cache"]}]}),
        json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
    ]
    .into_iter()
    .enumerate()
    {
        b.create(
            &format!("selector-conflict-{i}"),
            budget("pub", json!({"selector": sel, "maxUnavailable": 1})),
        );
    }
    // A budget conflicting only with itself (same name) is no conflict.
    b.create(
        "same-name-as-existing",
        budget(
            "corpus-by-label",
            json!({"selector": {"matchLabels": {"app": "taken"}}, "maxUnavailable": 1}),
        ),
    );

    // maxUnavailable / minAvailable.
    for (i, v) in int_or_percent().into_iter().enumerate() {
        let o = budget(
            "pub",
            json!({"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": v}),
        );
        b.create(&format!("max-unavailable-{i}"), o);
        let o = budget(
            "pub",
            json!({"selector": {"matchLabels": {"app": "demo"}}, "minAvailable": v}),
        );
        b.create(&format!("min-available-{i}"), o);
    }
    b.create(
        "max-and-min",
        budget(
            "pub",
            json!({"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": 1, "minAvailable": 1}),
        ),
    );
    b.create(
        "no-max-no-min",
        budget("pub", json!({"selector": {"matchLabels": {"app": "demo"}}})),
    );
    b.create(
        "everything-wrong",
        budget(
            "pub",
            json!({"selector": {}, "targetRef": {}, "maxUnavailable": "150%", "minAvailable": -1}),
        ),
    );

    // Updates.
    let by_ref = budget("pub", json!({"targetRef": refs[0], "maxUnavailable": 1}));
    let mut edits: Vec<(&str, Value, Value)> = Vec::new();
    let mut v = valid.clone();
    v["spec"]["maxUnavailable"] = json!("50%");
    edits.push(("max-unavailable-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
    edits.push(("selector-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["selector"] = json!({"matchLabels": {"app": "demo"}, "matchExpressions": []});
    edits.push(("selector-empty-expressions-added", valid.clone(), v));
    let mut v = by_ref.clone();
    v["spec"]["targetRef"]["name"] = json!("other");
    edits.push(("target-ref-changed", by_ref.clone(), v));
    let mut v = by_ref.clone();
    v["spec"]["targetRef"]["apiVersion"] = json!("apps.kruise.io/v1beta1");
    edits.push(("target-ref-version-changed", by_ref.clone(), v));
    let mut v = by_ref.clone();
    v["metadata"]["annotations"] = json!({"kruise.io/pub-protect-operations": "EVICT"});
    edits.push(("annotation-added", by_ref.clone(), v));
    let mut v = valid.clone();
    v["spec"] = json!({"targetRef": refs[0], "maxUnavailable": 1});
    edits.push(("selector-to-target-ref", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["maxUnavailable"] = json!(-3);
    edits.push(("invalid-and-selector-changed", valid, {
        let mut w = v;
        w["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        w
    }));
    for (label, old, new) in edits {
        b.update(label, old, new);
    }
    b.cases
}
