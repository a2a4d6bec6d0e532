use super::*;
use crate::field::aggregate;
use serde_json::{Value, json};

fn base() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": 3,
            "serviceName": "web",
            "podManagementPolicy": "OrderedReady",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "partition": 0, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate", "minReadySeconds": 0}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "revisionHistoryLimit": 10
        }
    })
}

fn with(patch: Value) -> StatefulSet {
    let mut v = base();
    json_patch::merge(&mut v, &patch);
    serde_json::from_value(v).unwrap()
}

fn assert_one(errs: ErrorList, expected: &str) {
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(aggregate(&errs).unwrap(), expected);
}

fn msg(errs: &ErrorList) -> String {
    aggregate(errs).unwrap_or_default()
}

#[test]
fn sts_valid_passes() {
    assert_eq!(validate_statefulset(&with(json!({}))), vec![]);
}

#[test]
fn sts_pod_management_policy() {
    assert_one(
        validate_statefulset(&with(json!({"spec": {"podManagementPolicy": null}}))),
        "spec.podManagementPolicy: Required value",
    );
    assert_one(
        validate_statefulset(&with(json!({"spec": {"podManagementPolicy": "Random"}}))),
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
    );
}

#[test]
fn sts_reserve_ordinals() {
    assert_eq!(
        validate_statefulset(&with(json!({"spec": {"reserveOrdinals": [1, "3-5"]}}))),
        vec![]
    );
    assert_one(
        validate_statefulset(&with(json!({"spec": {"reserveOrdinals": [-1]}}))),
        "spec: Invalid value: []intstr.IntOrString{intstr.IntOrString{Type:0, IntVal:-1, StrVal:\"\"}}: 0 th reserve ordinal is negative: -1",
    );
    let m = msg(&validate_statefulset(&with(
        json!({"spec": {"reserveOrdinals": ["5-3", "x"]}}),
    )));
    assert!(
        m.contains("0 th reserve ordinal is invalid: 5-3, err = invalid range 5-3"),
        "{m}"
    );
    assert!(
        m.contains("1 th reserve ordinal is not a valid range: x"),
        "{m}"
    );
    assert!(
        m.contains("1 th reserve ordinal is invalid: x, err = invalid range x"),
        "{m}"
    );
}

#[test]
fn sts_max_unavailable_rules() {
    let par = |mu: Value| {
        with(json!({"spec": {"podManagementPolicy": "Parallel",
        "updateStrategy": {"rollingUpdate": {"maxUnavailable": mu}}}}))
    };
    assert_eq!(validate_statefulset(&par(json!("50%"))), vec![]);
    assert_eq!(validate_statefulset(&par(json!(3))), vec![]);
    assert_one(
        validate_statefulset(&par(json!(0))),
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: should not be less than 1",
    );
    let m = msg(&validate_statefulset(&par(json!(-1))));
    assert!(m.contains("spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"), "{m}");
    let m = msg(&validate_statefulset(&par(json!("1.5%"))));
    assert!(
        m.contains("a valid percent string must be a numeric string"),
        "{m}"
    );
    assert!(m.contains("getValueFromIntOrPercent error"), "{m}");
    // Only Parallel may use anything but 1.
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 2}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:2, StrVal:\"\"}: can only work with Parallel PodManagementPolicyType",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": null}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value",
    );
    // The scale strategy's maxUnavailable follows the same rules.
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"scaleStrategy": {"maxUnavailable": 2}}}),
        )),
        "spec.scaleStrategy.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:2, StrVal:\"\"}: can only work with Parallel PodManagementPolicyType",
    );
}

#[test]
fn sts_update_strategy_type() {
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"type": null, "rollingUpdate": null}}}),
        )),
        "spec.updateStrategy: Required value",
    );
    let m = msg(&validate_statefulset(&with(
        json!({"spec": {"updateStrategy": {"type": "Blue"}}}),
    )));
    assert!(
        m.starts_with("spec.updateStrategy: Invalid value: {"),
        "{m}"
    );
    assert!(m.ends_with("must be 'RollingUpdate' or 'OnDelete'"), "{m}");
    let m = msg(&validate_statefulset(&with(
        json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
    )));
    assert!(
        m.contains("spec.updateStrategy.rollingUpdate: Invalid value:")
            && m.ends_with("only allowed for updateStrategy 'RollingUpdate'"),
        "{m}"
    );
    assert_eq!(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}})
        )),
        vec![]
    );
}

#[test]
fn sts_partition_and_min_ready_seconds() {
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": -1}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"minReadySeconds": 301}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.minReadySeconds: Invalid value: 301: must be no more than 300 seconds",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"minReadySeconds": -1}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
    );
}

#[test]
fn sts_pod_update_policy() {
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"podUpdatePolicy": null}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.podUpdatePolicy: Required value",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "Magic"}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.podUpdatePolicy: Invalid value: \"Magic\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}}}}),
        )),
        "spec.template.spec.readinessGates: Invalid value: null: must contains InPlaceUpdateReady when podUpdatePolicy is InPlaceIfPossible",
    );
    assert_eq!(
        validate_statefulset(&with(json!({"spec": {
            "updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}},
            "template": {"spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}]}}}}))),
        vec![]
    );
}

#[test]
fn sts_unordered_update() {
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"unorderedUpdate": {}}}}}),
        )),
        "spec.updateStrategy.rollingUpdate.unorderedUpdate: Required value: unorderedUpdate can only work with Parallel PodManagementPolicyType",
    );
    assert_one(
        validate_statefulset(&with(json!({"spec": {"podManagementPolicy": "Parallel",
            "updateStrategy": {"rollingUpdate": {"unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": ""}]}}}}}}))),
        "spec.updateStrategy.rollingUpdate.unorderedUpdate.priorityStrategy: Required value: order key can not be empty",
    );
}

#[test]
fn sts_retention_policy() {
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Keep"}}}),
        )),
        "spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
    );
}

#[test]
fn sts_replicas_selector_template() {
    assert_one(
        validate_statefulset(&with(json!({"spec": {"replicas": -2}}))),
        "spec.replicas: Invalid value: -2: must be greater than or equal to 0",
    );
    assert_one(
        validate_statefulset(&with(json!({"spec": {"selector": {"matchLabels": null}}}))),
        "spec.selector: Invalid value: {}: empty selector is invalid for statefulset",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"selector": {"matchLabels": {"app": "x"}}}}),
        )),
        "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"template": {"spec": {"restartPolicy": "OnFailure"}}}}),
        )),
        "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
    );
    assert_one(
        validate_statefulset(&with(
            json!({"spec": {"template": {"spec": {"activeDeadlineSeconds": 5}}}}),
        )),
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported",
    );
}

#[test]
fn sts_update_immutable_fields() {
    let old = with(json!({}));
    for patch in [
        json!({"spec": {"serviceName": "other"}}),
        json!({"spec": {"podManagementPolicy": "Parallel"}}),
        json!({"spec": {"selector": {"matchLabels": {"app": "web", "b": "c"}}}}),
    ] {
        let errs = validate_statefulset_update(&with(patch.clone()), &old);
        assert_eq!(errs.len(), 1, "{patch}");
        assert!(
            errs[0]
                .to_string()
                .starts_with("spec: Forbidden: updates to statefulset spec for fields other than"),
            "{patch}"
        );
    }
    let ok = with(
        json!({"spec": {"replicas": 5, "reserveOrdinals": [1], "ordinals": {"start": 2},
        "revisionHistoryLimit": 3, "lifecycle": {}, "volumeClaimTemplates": [],
        "updateStrategy": {"rollingUpdate": {"partition": 1}},
        "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"},
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}}),
    );
    assert_eq!(validate_statefulset_update(&ok, &old), vec![]);
}

#[test]
fn sts_in_place_only_template_changes() {
    let ip = json!({"spec": {"updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}},
        "template": {"spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}]}}}});
    let old = with(ip.clone());
    let mut img = ip.clone();
    img["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "main", "image": "nginx:1.26"}]);
    assert_eq!(validate_in_place_only_update(&with(img), &old), Ok(()));
    let mut env = ip.clone();
    env["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "main", "image": "nginx:1.25", "env": [{"name": "A"}]}]);
    assert_eq!(
        validate_in_place_only_update(&with(env), &old).unwrap_err(),
        "invalid template modified with InPlaceOnly strategy: add /containers/0/env, currently only image update is allowed for InPlaceOnly"
    );
    // The unanchored v1.9.0 expression lets imagePullPolicy changes through.
    let mut pull = ip.clone();
    pull["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "main", "image": "nginx:1.25", "imagePullPolicy": "Always"}]);
    let old_pull = {
        let mut v = ip;
        v["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "main", "image": "nginx:1.25", "imagePullPolicy": "Never"}]);
        with(v)
    };
    assert_eq!(
        validate_in_place_only_update(&with(pull), &old_pull),
        Ok(())
    );
    // Not InPlaceOnly: anything goes.
    let recreate_env = with(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx:1.25", "env": [{"name": "A"}]}]}}}}));
    assert_eq!(
        validate_in_place_only_update(&recreate_env, &with(json!({}))),
        Ok(())
    );
}
