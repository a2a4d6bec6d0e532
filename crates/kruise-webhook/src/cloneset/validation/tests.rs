use super::*;
use crate::common::validate_workload_deletion;
use crate::field::aggregate;
use kruise_runtime::features::{Feature, FeatureGates};
use serde_json::{Value, json};

fn base() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "cs-uid"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}
            },
            "updateStrategy": {"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0},
            "revisionHistoryLimit": 10
        }
    })
}

fn with(patch: Value) -> CloneSet {
    let mut v = base();
    json_patch::merge(&mut v, &patch);
    serde_json::from_value(v).unwrap()
}

fn msg(errs: &ErrorList) -> String {
    aggregate(errs).unwrap_or_default()
}

/// Asserts exactly one error whose message is `expected`.
fn assert_one(errs: ErrorList, expected: &str) {
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(msg(&errs), expected);
}

#[test]
fn valid_cloneset_passes() {
    assert_eq!(validate_cloneset(&with(json!({}))), vec![]);
}

#[test]
fn metadata_name_must_be_dns_subdomain() {
    assert_one(
        validate_cloneset(&with(json!({"metadata": {"name": "Bad_Name"}}))),
        "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
}

#[test]
fn replicas_must_be_nonnegative() {
    assert_one(
        validate_cloneset(&with(json!({"spec": {"replicas": -1}}))),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    );
}

#[test]
fn selector_must_not_be_empty() {
    let errs = validate_cloneset(&with(json!({"spec": {"selector": {"matchLabels": null}}})));
    assert_one(
        errs,
        "spec.selector: Invalid value: {}: empty selector is invalid for cloneset",
    );
}

#[test]
fn selector_must_match_template_labels() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"selector": {"matchLabels": {"app": "other"}}}}),
        )),
        "spec.template.metadata.labels: Invalid value: {\"app\":\"demo\"}: `selector` does not match template `labels`",
    );
}

#[test]
fn selector_expressions_are_validated() {
    let cs = with(json!({"spec": {"selector": {"matchExpressions": [
        {"key": "app", "operator": "In"},
        {"key": "x", "operator": "Exists", "values": ["a"]},
        {"key": "y", "operator": "Bogus"}
    ]}}}));
    let m = msg(&validate_cloneset(&cs));
    assert!(
        m.contains("spec.selector.matchExpressions[0].values: Required value"),
        "{m}"
    );
    assert!(
        m.contains("spec.selector.matchExpressions[1].values: Forbidden"),
        "{m}"
    );
    assert!(
        m.contains("spec.selector.matchExpressions[2].operator: Invalid value: \"Bogus\""),
        "{m}"
    );
}

#[test]
fn template_needs_containers() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"template": {"spec": {"containers": []}}}}),
        )),
        "spec.template.spec.containers: Required value",
    );
}

#[test]
fn template_container_name_and_image() {
    let cs = with(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx"},
        {"name": "main", "image": "nginx"},
        {"name": "Bad", "image": "nginx"},
        {"name": "noimage"}
    ]}}}}));
    let m = msg(&validate_cloneset(&cs));
    assert!(
        m.contains("spec.template.spec.containers[1].name: Duplicate value: \"main\""),
        "{m}"
    );
    assert!(
        m.contains("spec.template.spec.containers[2].name: Invalid value: \"Bad\""),
        "{m}"
    );
    assert!(
        m.contains("spec.template.spec.containers[3].image: Required value"),
        "{m}"
    );
}

#[test]
fn template_ports_and_pull_policy() {
    let cs = with(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx", "imagePullPolicy": "Sometimes",
         "ports": [{"containerPort": 0}, {"containerPort": 80, "protocol": "HTTP"}]}
    ]}}}}));
    let m = msg(&validate_cloneset(&cs));
    assert!(
        m.contains(
            "spec.template.spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\""
        ),
        "{m}"
    );
    // Kubernetes reports a zero container port as missing.
    assert!(
        m.contains("spec.template.spec.containers[0].ports[0].containerPort: Required value"),
        "{m}"
    );
    assert!(
        m.contains(
            "spec.template.spec.containers[0].ports[1].protocol: Unsupported value: \"HTTP\""
        ),
        "{m}"
    );
}

#[test]
fn volume_mounts_may_use_volume_claim_templates() {
    let mount = json!({"containers": [{"name": "main", "image": "nginx",
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]});
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"template": {"spec": mount.clone()}}}),
        )),
        "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
    );
    let ok = with(json!({"spec": {
        "template": {"spec": mount},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]
    }}));
    assert_eq!(validate_cloneset(&ok), vec![]);
}

#[test]
fn duplicate_volume_names() {
    let cs = with(json!({"spec": {"template": {"spec": {"volumes": [
        {"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}
    ]}}}}));
    assert_one(
        validate_cloneset(&cs),
        "spec.template.spec.volumes[1].name: Duplicate value: \"v\"",
    );
}

#[test]
fn restart_policy_must_be_always() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"template": {"spec": {"restartPolicy": "Never"}}}}),
        )),
        "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
    );
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"template": {"spec": {"restartPolicy": "Always"}}}})
        )),
        vec![]
    );
}

#[test]
fn active_deadline_seconds_forbidden() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"template": {"spec": {"activeDeadlineSeconds": 10}}}}),
        )),
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in cloneset is not Supported",
    );
}

#[test]
fn update_strategy_type_values() {
    for t in ["ReCreate", "InPlaceIfPossible", "InPlaceOnly"] {
        assert_eq!(
            validate_cloneset(&with(
                json!({"spec": {"updateStrategy": {"type": t, "maxUnavailable": 1}}})
            )),
            vec![],
            "{t}"
        );
    }
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"type": "Rolling"}}}),
        )),
        "spec.updateStrategy.type: Invalid value: \"Rolling\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
    );
}

#[test]
fn partition_must_resolve_and_be_nonnegative() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"partition": -1}}}),
        )),
        "spec.updateStrategy.partition: Invalid value: -1: must be greater than or equal to 0",
    );
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"partition": "abc"}}}),
        )),
        "spec.updateStrategy.partition: Invalid value: \"abc\": failed GetScaledValueFromIntOrPercent for partition: invalid type: string is not a percentage",
    );
    // Percentages above 100% are admitted as by v1.9.0 (a partition above replicas: no pod is
    // updated), as the admission corpus recorded.
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"partition": "150%"}}})
        )),
        vec![]
    );
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"partition": "100%"}}})
        )),
        vec![]
    );
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"partition": "33.5%"}}})
        )),
        vec![]
    );
}

#[test]
fn max_unavailable_and_max_surge_must_resolve() {
    let m = msg(&validate_cloneset(&with(
        json!({"spec": {"updateStrategy": {
        "maxUnavailable": "x", "maxSurge": "1"}}}),
    )));
    assert!(m.contains("spec.updateStrategy.maxUnavailable: Invalid value: \"x\": failed GetScaledValueFromIntOrPercent for maxUnavailable: invalid type: string is not a percentage"), "{m}");
    assert!(m.contains("spec.updateStrategy.maxSurge: Invalid value: \"1\": failed GetScaledValueFromIntOrPercent for maxSurge"), "{m}");
}

#[test]
fn max_unavailable_and_max_surge_not_both_below_one() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"maxUnavailable": 0, "maxSurge": 0}}}),
        )),
        "spec.updateStrategy.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: maxUnavailable and maxSurge should not both be less than 1",
    );
    // 0% of 3 rounds to 0; a surge of 1 makes it fine.
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"maxUnavailable": "0%", "maxSurge": 1}}})
        )),
        vec![]
    );
    // 1% of 3 rounds up to 1.
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"maxUnavailable": "1%", "maxSurge": 0}}})
        )),
        vec![]
    );
    // No replicas: no constraint.
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"replicas": 0, "updateStrategy": {"maxUnavailable": 0}}})
        )),
        vec![]
    );
}

#[test]
fn in_place_only_forbids_max_surge() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"type": "InPlaceOnly", "maxSurge": "50%"}}}),
        )),
        "spec.updateStrategy.maxSurge: Invalid value: \"50%\": can not use maxSurge with strategy type InPlaceOnly",
    );
}

#[test]
fn priority_strategy_rules() {
    let cases = [
        (
            json!({"weightPriority": [{"weight": 1, "matchSelector": {"matchLabels": {"a": "b"}}}],
                "orderPriority": [{"orderedKey": "k"}]}),
            "only one of weightPriority and orderPriority can be used",
        ),
        (
            json!({"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"a": "b"}}}]}),
            "weight must be valid number in the range 1-100",
        ),
        (
            json!({"weightPriority": [{"weight": 10, "matchSelector": {}}]}),
            "selector can not be empty",
        ),
        (
            json!({"orderPriority": [{"orderedKey": ""}]}),
            "order key can not be empty",
        ),
    ];
    for (ps, detail) in cases {
        assert_one(
            validate_cloneset(&with(
                json!({"spec": {"updateStrategy": {"priorityStrategy": ps}}}),
            )),
            &format!("spec.updateStrategy.priorityStrategy: Required value: {detail}"),
        );
    }
    let m = msg(&validate_cloneset(&with(
        json!({"spec": {"updateStrategy": {"priorityStrategy":
        {"weightPriority": [{"weight": 10, "matchSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}]}}}}),
    )));
    assert!(
        m.starts_with("spec.updateStrategy.priorityStrategy: Required value: invalid selector"),
        "{m}"
    );
}

#[test]
fn scatter_strategy_rules() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"scatterStrategy": [{"key": "", "value": "x"}]}}}),
        )),
        "spec.updateStrategy.scatterStrategy: Required value: key should not be empty",
    );
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"updateStrategy": {"scatterStrategy": [
            {"key": "k", "value": "v"}, {"key": "k", "value": "v"}]}}}),
        )),
        "spec.updateStrategy.scatterStrategy: Required value: duplicated key=k value=v",
    );
}

#[test]
fn pods_to_delete_duplicates() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"scaleStrategy": {"podsToDelete": ["a", "b", "a"]}}}),
        )),
        "spec.scaleStrategy.podsToDelete: Invalid value: [\"a\",\"b\",\"a\"]: duplicated items [a]",
    );
}

#[test]
fn pods_to_delete_only_new_names_are_checked() {
    let s = |names: &[&str]| CloneSetScaleStrategy {
        pods_to_delete: Some(names.iter().map(|s| (*s).to_owned()).collect()),
        ..Default::default()
    };
    assert_eq!(
        pods_to_delete_to_check(Some(&s(&["c", "a", "b"])), Some(&s(&["b"]))),
        ["a", "c"]
    );
    assert_eq!(pods_to_delete_to_check(Some(&s(&["a"])), None), ["a"]);
    assert!(pods_to_delete_to_check(Some(&s(&["a", "a"])), None).is_empty());
    assert!(pods_to_delete_to_check(None, Some(&s(&["a"]))).is_empty());
}

#[test]
fn pod_to_delete_must_exist_be_alive_and_owned() {
    let pod = |v: Value| -> kruise_api::pod::CachedPod { serde_json::from_value(v).unwrap() };
    let owned = pod(json!({"metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "demo", "uid": "cs-uid", "controller": true}]}}));
    assert_eq!(check_pod_to_delete("p", Ok(&owned), Some("cs-uid")), None);
    assert_eq!(
        check_pod_to_delete("p", Ok(&owned), Some("other"))
            .unwrap()
            .to_string(),
        "spec.scaleStrategy.podsToDelete: Invalid value: \"p\": find pod p owner is not this CloneSet"
    );
    let orphan = pod(json!({"metadata": {"name": "p"}}));
    assert!(check_pod_to_delete("p", Ok(&orphan), Some("cs-uid")).is_some());
    let dying =
        pod(json!({"metadata": {"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"}}));
    assert_eq!(
        check_pod_to_delete("p", Ok(&dying), Some("cs-uid"))
            .unwrap()
            .to_string(),
        "spec.scaleStrategy.podsToDelete: Invalid value: \"p\": find pod p already terminating"
    );
    assert_eq!(
        check_pod_to_delete("p", Err("pods \"p\" not found".into()), Some("cs-uid"))
            .unwrap()
            .to_string(),
        "spec.scaleStrategy.podsToDelete: Invalid value: \"p\": find pod p failed: pods \"p\" not found"
    );
}

#[test]
fn progress_deadline_seconds_rules() {
    assert_one(
        validate_cloneset(&with(
            json!({"spec": {"progressDeadlineSeconds": 5, "minReadySeconds": 10}}),
        )),
        "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
    );
    assert_eq!(
        validate_cloneset(&with(
            json!({"spec": {"progressDeadlineSeconds": 2147483647, "minReadySeconds": 10}})
        )),
        vec![]
    );
    let m = msg(&validate_cloneset(&with(
        json!({"spec": {"progressDeadlineSeconds": -1}}),
    )));
    assert!(
        m.contains(
            "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"
        ),
        "{m}"
    );
}

#[test]
fn update_selector_is_immutable() {
    let old = with(json!({}));
    let new = with(json!({"spec": {
        "selector": {"matchLabels": {"app": "demo", "x": "y"}},
        "template": {"metadata": {"labels": {"app": "demo", "x": "y"}}}
    }}));
    assert_one(
        validate_cloneset_update(&new, &old),
        "spec: Forbidden: updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and 'revisionHistoryLimit' are forbidden",
    );
}

#[test]
fn update_of_mutable_fields_is_allowed() {
    let old = with(json!({}));
    let new = with(json!({"spec": {
        "replicas": 5, "minReadySeconds": 3, "revisionHistoryLimit": 2, "progressDeadlineSeconds": 60,
        "lifecycle": {"preDelete": {"finalizersHandler": ["x/y"]}},
        "scaleStrategy": {"maxUnavailable": 1},
        "updateStrategy": {"partition": 2, "paused": true},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26", "env": [{"name": "A", "value": "1"}]}]}}
    }}));
    assert_eq!(validate_cloneset_update(&new, &old), vec![]);
    // An explicitly empty matchLabels map equals an absent one semantically.
    let mut a = with(json!({"spec": {"selector": {"matchLabels": null,
        "matchExpressions": [{"key": "app", "operator": "Exists"}]}}}));
    let b = a.clone();
    a.spec.selector.match_labels = Some(Default::default());
    a.spec.selector.match_expressions.as_mut().unwrap()[0].values = Some(vec![]);
    assert_eq!(validate_cloneset_update(&a, &b), vec![]);
}

#[test]
fn in_place_only_allows_only_image_changes() {
    let old =
        with(json!({"spec": {"updateStrategy": {"type": "InPlaceOnly", "maxUnavailable": 1}}}));
    let images = with(
        json!({"spec": {"updateStrategy": {"type": "InPlaceOnly", "maxUnavailable": 1},
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}}),
    );
    assert_eq!(validate_cloneset_update(&images, &old), vec![]);
    let env = with(
        json!({"spec": {"updateStrategy": {"type": "InPlaceOnly", "maxUnavailable": 1},
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}]}]}}}}),
    );
    assert_one(
        validate_cloneset_update(&env, &old),
        "spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found add /containers/0/env",
    );
    // Labels in the template metadata are not part of the spec and may change.
    let labels = with(
        json!({"spec": {"updateStrategy": {"type": "InPlaceOnly", "maxUnavailable": 1},
        "template": {"metadata": {"labels": {"app": "demo", "v": "2"}}}}}),
    );
    assert_eq!(validate_cloneset_update(&labels, &old), vec![]);
    // Other strategy types may change anything in the template.
    let recreate = with(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}]}]}}}}));
    assert_eq!(
        validate_cloneset_update(&recreate, &with(json!({}))),
        vec![]
    );
}

#[test]
fn deletion_protection() {
    let gates = FeatureGates::default().with(Feature::ResourcesDeletionProtection, true);
    let meta = |label: Option<&str>| {
        let mut cs = with(json!({}));
        if let Some(l) = label {
            cs.metadata.labels = Some(
                [(
                    "policy.kruise.io/delete-protection".to_owned(),
                    l.to_owned(),
                )]
                .into(),
            );
        }
        cs.metadata
    };
    assert_eq!(
        validate_workload_deletion(&gates, &meta(Some("Always")), Some(0)).unwrap_err(),
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always"
    );
    assert_eq!(
        validate_workload_deletion(&gates, &meta(Some("Cascading")), Some(2)).unwrap_err(),
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 2>0"
    );
    assert!(validate_workload_deletion(&gates, &meta(Some("Cascading")), Some(0)).is_ok());
    assert!(validate_workload_deletion(&gates, &meta(None), Some(2)).is_ok());
    // Gate off: nothing is protected.
    let off = FeatureGates::default().with(Feature::ResourcesDeletionProtection, false);
    assert!(validate_workload_deletion(&off, &meta(Some("Always")), Some(2)).is_ok());
    // Already being deleted: allowed.
    let mut dying = meta(Some("Always"));
    dying.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2024-01-01T00:00:00Z".parse().unwrap(),
    ));
    assert!(validate_workload_deletion(&gates, &dying, Some(2)).is_ok());
}

#[test]
fn template_env_names_and_resources() {
    let cs = with(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx",
         "env": [{"name": ""}, {"name": "A=B"}, {"name": "ok.name-1"}],
         "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m", "memory": "-1Mi"}}}
    ]}}}}));
    let m = msg(&validate_cloneset(&cs));
    assert!(
        m.contains("spec.template.spec.containers[0].env[0].name: Required value"),
        "{m}"
    );
    assert!(
        m.contains("spec.template.spec.containers[0].env[1].name: Invalid value: \"A=B\""),
        "{m}"
    );
    assert!(!m.contains("env[2]"), "{m}");
    // Kubernetes reports a request over its limit on `requests` itself, canonical quantities.
    assert!(m.contains("spec.template.spec.containers[0].resources.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit of 1"), "{m}");
    assert!(m.contains("spec.template.spec.containers[0].resources.requests[memory]: Invalid value: \"-1Mi\": must be greater than or equal to 0"), "{m}");
}
