use super::*;
use serde_json::json;

fn rd(spec: Value) -> ResourceDistribution {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
        "metadata": {"name": "rd"}, "spec": spec,
    }))
    .unwrap()
}

fn messages(obj: &ResourceDistribution, old: Option<&ResourceDistribution>) -> Option<String> {
    aggregate(&validate_static(obj, old).0)
}

#[test]
fn valid_objects_pass_and_reach_the_dry_run() {
    let r = rd(
        json!({"resource": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
                      "targets": {"allNamespaces": true}}),
    );
    let (errs, dry) = validate_static(&r, None);
    assert!(errs.is_empty(), "{errs:?}");
    assert!(dry.is_some());
}

#[test]
fn resource_errors_are_worded_as_openkruise() {
    let r = rd(
        json!({"resource": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "n": 1}, "targets": {}}),
    );
    assert_eq!(
        messages(&r, None).unwrap(),
        r#"spec.resource: Invalid value: unstructured.Unstructured{Object:map[string]interface {}{"apiVersion":"v1", "kind":"Pod", "metadata":map[string]interface {}{"name":"p"}, "n":1}}: unknown or unsupported resource GroupKind, only support [Secret ConfigMap]"#
    );
    let r = rd(json!({"resource": {"metadata": {"name": "x"}}, "targets": {}}));
    assert_eq!(
        messages(&r, None).unwrap(),
        r#"spec: Internal error: failed to deserialize resource, please check your spec.resource, err Object 'Kind' is missing in '{"metadata":{"name":"x"}}'"#
    );
    let old = rd(
        json!({"resource": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}, "targets": {}}),
    );
    let new = rd(
        json!({"resource": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}, "targets": {}}),
    );
    assert_eq!(
        messages(&new, Some(&old)).unwrap(),
        r#"spec.resource: Invalid value: "null": resource apiVersion, kind, and name are immutable"#
    );
}

#[test]
fn target_errors_are_worded_as_openkruise() {
    let t: ResourceDistributionTargets = serde_json::from_value(json!({
        "includedNamespaces": {"list": [{"name": "a"}, {"name": "B"}]},
        "excludedNamespaces": {"list": [{"name": "a"}]},
        "namespaceLabelSelector": {"matchLabels": {"$x": "y"}},
    }))
    .unwrap();
    let errs = validate_targets(&t, &Path::new("spec").child("targets"));
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 3, "{text:?}");
    assert!(text[0].starts_with(r#"spec.targets.includedNamespaces: Invalid value: v1alpha1.ResourceDistributionTargetNamespaces{List:[]v1alpha1.ResourceDistributionNamespace{v1alpha1.ResourceDistributionNamespace{Name:"a"}, v1alpha1.ResourceDistributionNamespace{Name:"B"}}}: a lowercase RFC 1123 label"#), "{}", text[0]);
    assert!(text[1].starts_with("spec.targets: Invalid value: v1alpha1.ResourceDistributionTargets{AllNamespaces:false, ExcludedNamespaces:"), "{}", text[1]);
    assert!(text[1].ends_with("ambiguous targets because namespace [a] is in both IncludedNamespaces.List and ExcludedNamespaces.List"));
    assert!(text[2].starts_with(r#"spec.targets.namespaceLabelSelector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"$x":"y"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: labelSelectorAsSelector error: "#), "{}", text[2]);
}
