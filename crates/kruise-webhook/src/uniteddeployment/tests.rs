//! Handler tests of the UnitedDeployment webhooks (messages as OpenKruise's).

use super::*;
use crate::support::testing::request;
use kruise_runtime::features::FeatureGates;
use serde_json::{Value, json};

fn ctx() -> HandlerContext {
    HandlerContext {
        gates: FeatureGates::default(),
        lookup: None,
    }
}

fn ud(subsets: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "ud", "namespace": "ns"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"deploymentTemplate": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}},
            "topology": {"subsets": subsets}
        }
    })
}

async fn validate_message(obj: Value) -> Option<String> {
    let r = validate(
        &request("CREATE", "uniteddeployments", "v1alpha1", Some(obj), None),
        &ctx(),
    )
    .await;
    (!r.allowed).then_some(r.result.message)
}

#[tokio::test]
async fn valid_uniteddeployment_is_allowed() {
    assert_eq!(
        validate_message(ud(json!([{"name": "a"}, {"name": "b"}]))).await,
        None
    );
}

#[tokio::test]
async fn duplicate_and_invalid_subset_names_are_refused() {
    let msg = validate_message(ud(json!([{"name": "a"}, {"name": "a"}])))
        .await
        .unwrap();
    assert!(
        msg.contains(
            "spec.topology.subsets[1].name: Invalid value: \"a\": duplicated subset name a"
        ),
        "{msg}"
    );
    let msg = validate_message(ud(json!([{"name": "A_b"}])))
        .await
        .unwrap();
    assert!(
        msg.contains("spec.topology.subsets[0].name: Invalid value: \"A_b\": invalid subset name"),
        "{msg}"
    );
}

#[tokio::test]
async fn capacity_and_replicas_are_exclusive() {
    let msg = validate_message(ud(
        json!([{"name": "a", "replicas": 1}, {"name": "b", "minReplicas": 1}]),
    ))
    .await
    .unwrap();
    assert!(msg.contains("subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment"), "{msg}");
    let msg = validate_message(ud(
        json!([{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}]),
    ))
    .await
    .unwrap();
    assert!(
        msg.contains("at least one subset.maxReplicas must be empty"),
        "{msg}"
    );
}

#[tokio::test]
async fn unknown_partition_subset_is_refused() {
    let mut obj = ud(json!([{"name": "a"}]));
    obj["spec"]["updateStrategy"] =
        json!({"type": "Manual", "manualUpdate": {"partitions": {"zz": 1}}});
    let msg = validate_message(obj).await.unwrap();
    assert!(
        msg.contains("spec.updateStrategy.partitions: Invalid value:"),
        "{msg}"
    );
    assert!(msg.ends_with("subset zz does not exist"), "{msg}");
}

#[tokio::test]
async fn node_selector_term_is_immutable() {
    let old = ud(
        json!([{"name": "a", "nodeSelectorTerm": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}}]),
    );
    let mut new = ud(
        json!([{"name": "a", "nodeSelectorTerm": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]}}]),
    );
    new["metadata"]["resourceVersion"] = json!("5");
    let r = validate(
        &request(
            "UPDATE",
            "uniteddeployments",
            "v1alpha1",
            Some(new),
            Some(old),
        ),
        &ctx(),
    )
    .await;
    assert_eq!(
        r.result.message,
        "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update"
    );
}

#[tokio::test]
async fn mutate_sets_openkruise_defaults() {
    let obj = ud(json!([{"name": "a", "maxReplicas": 1}, {"name": "b"}]));
    let r = mutate(
        &request(
            "CREATE",
            "uniteddeployments",
            "v1alpha1",
            Some(obj.clone()),
            None,
        ),
        &ctx(),
    )
    .await;
    assert!(r.allowed);
    let patch: json_patch::Patch = serde_json::from_slice(r.patch.as_deref().unwrap()).unwrap();
    let patched = crate::support::apply_patch(&obj, &patch).unwrap();
    assert_eq!(patched["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(patched["spec"]["updateStrategy"]["type"], "Manual");
    assert_eq!(patched["spec"]["topology"]["subsets"][0]["minReplicas"], 0);
    assert_eq!(patched["spec"]["topology"]["subsets"][1]["minReplicas"], 0);
}

#[tokio::test]
async fn elastic_object_is_admitted() {
    let obj = ud(
        json!([{"name": "subset-0", "minReplicas": 1, "maxReplicas": 2},
        {"name": "subset-1", "minReplicas": 1, "maxReplicas": 2}, {"name": "subset-2", "minReplicas": 1}]),
    );
    let r = mutate(
        &request(
            "CREATE",
            "uniteddeployments",
            "v1alpha1",
            Some(obj.clone()),
            None,
        ),
        &ctx(),
    )
    .await;
    assert!(r.allowed);
    assert_eq!(validate_message(obj).await, None);
}
