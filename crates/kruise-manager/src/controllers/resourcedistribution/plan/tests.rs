use super::*;

fn rd(targets: Value) -> ResourceDistribution {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
        "metadata": {"name": "rd", "uid": "u-1", "generation": 2},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"a": "1"}},
                         "type": "Opaque", "data": {"k": "dg=="}},
            "targets": targets,
        }
    }))
    .unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect()
}

#[test]
fn targets_are_the_union_minus_the_excluded() {
    let l1 = labels(&[("g", "one")]);
    let l2 = labels(&[("g", "two")]);
    let nss = [
        NamespaceView {
            name: "a",
            labels: Some(&l1),
        },
        NamespaceView {
            name: "b",
            labels: Some(&l2),
        },
        NamespaceView {
            name: "c",
            labels: None,
        },
        NamespaceView {
            name: "d",
            labels: Some(&l1),
        },
    ];
    let r = rd(json!({
        "includedNamespaces": {"list": [{"name": "c"}, {"name": "missing"}]},
        "excludedNamespaces": {"list": [{"name": "d"}]},
        "namespaceLabelSelector": {"matchLabels": {"g": "one"}},
    }));
    let (m, u) = target_namespaces(&r.spec.targets, nss.iter().copied()).unwrap();
    assert_eq!(m, ["a", "c", "missing"]);
    assert_eq!(u, ["b", "d"]);
    let all = rd(json!({"allNamespaces": true, "excludedNamespaces": {"list": [{"name": "b"}]}}));
    let (m, u) = target_namespaces(&all.spec.targets, nss.iter().copied()).unwrap();
    assert_eq!(m, ["a", "c", "d"]);
    assert_eq!(u, ["b"]);
    // An empty selector selects nothing (OpenKruise ignores it).
    let none = rd(json!({"namespaceLabelSelector": {}}));
    let (m, u) = target_namespaces(&none.spec.targets, nss.iter().copied()).unwrap();
    assert!(m.is_empty());
    assert_eq!(u.len(), 4);
}

#[test]
fn namespace_events_match_as_openkruise() {
    let l1 = labels(&[("g", "one")]);
    let r = rd(json!({
        "includedNamespaces": {"list": [{"name": "x"}]},
        "excludedNamespaces": {"list": [{"name": "y"}]},
        "namespaceLabelSelector": {"matchLabels": {"g": "one"}},
    }));
    let ns = |name| NamespaceView {
        name,
        labels: Some(&l1),
    };
    assert!(match_via_targets(ns("z"), &r));
    assert!(!match_via_targets(ns("y"), &r));
    assert!(match_via_included("x", &r));
    assert!(!match_via_included("z", &r));
    assert!(match_via_label_selector(ns("z"), &r));
    assert!(!match_via_label_selector(
        NamespaceView {
            name: "z",
            labels: None
        },
        &r
    ));
}

#[test]
fn hash_is_sha256_of_go_json() {
    let v = json!({"b": 1, "a": "<x>"});
    // Go: {"a":"\u003cx\u003e","b":1}
    let expected = {
        let d = ring::digest::digest(&ring::digest::SHA256, br#"{"a":"\u003cx\u003e","b":1}"#);
        d.as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert_eq!(hash_resource(&v), expected);
}

#[test]
fn copies_carry_owner_and_annotations_and_keep_foreign_metadata() {
    let r = rd(json!({}));
    let old = json!({"metadata": {"labels": {"a": "old", "b": "2"}, "annotations": {"x": "y"},
                                  "finalizers": ["f"], "resourceVersion": "7"}});
    let c = make_copy(&r, "ns1", "h", Some(&old));
    assert_eq!(c["metadata"]["namespace"], "ns1");
    assert_eq!(c["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(c["metadata"]["annotations"]["x"], "y");
    assert_eq!(
        c["metadata"]["annotations"][RESOURCE_DISTRIBUTION_HASHCODE],
        "h"
    );
    assert_eq!(
        c["metadata"]["annotations"][RESOURCE_DISTRIBUTION_FROM],
        "rd"
    );
    assert_eq!(c["metadata"]["finalizers"], json!(["f"]));
    assert!(c["metadata"].get("resourceVersion").is_none());
    let owners = c["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0]["uid"], "u-1");
    assert_eq!(owners[0]["controller"], true);
    let meta: ObjectMeta = serde_json::from_value(c["metadata"].clone()).unwrap();
    assert!(controlled_by(&meta, "rd"));
    assert!(!controlled_by(&meta, "other"));
    assert!(!need_to_update(&c, &r.spec.resource));
    let mut edited = c.clone();
    edited["data"]["extra"] = json!("eA==");
    assert!(need_to_update(&edited, &r.spec.resource));
}

#[test]
fn status_lists_six_conditions_and_keeps_transition_times() {
    let mut r = rd(json!({}));
    let t0 = Time("2026-01-01T00:00:00Z".parse().unwrap());
    let t1 = Time("2026-01-02T00:00:00Z".parse().unwrap());
    let s = new_status(&r, &[], 3, 3, &t0);
    assert_eq!(s.desired, Some(3));
    assert_eq!(s.failed, None);
    assert_eq!(s.observed_generation, Some(2));
    let c = s.conditions.clone().unwrap();
    assert_eq!(
        c.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
        CONDITION_TYPES
    );
    assert!(
        c.iter()
            .all(|c| c.status == "False" && c.reason.as_deref() == Some("Succeeded"))
    );
    r.status = Some(s);
    let f = [NamespaceFailure {
        namespace: "gone".into(),
        kind: Failure::NotExist,
        message: NOT_EXIST_MESSAGE.into(),
    }];
    let s2 = new_status(&r, &f, 3, 2, &t1);
    let c2 = s2.conditions.unwrap();
    assert_eq!(c2[0].last_transition_time, Some(t0));
    assert_eq!(c2[5].status, "True");
    assert_eq!(c2[5].last_transition_time, Some(t1));
    assert_eq!(
        c2[5].failed_namespaces.as_deref(),
        Some(&["gone".to_owned()][..])
    );
    assert_eq!(c2[5].reason.as_deref(), Some(NOT_EXIST_MESSAGE));
    assert_eq!(s2.failed, Some(1));
    assert!(!retryable(&f));
    assert!(retryable(&[NamespaceFailure {
        namespace: "n".into(),
        kind: Failure::Create,
        message: "x".into()
    }]));
}

#[test]
fn unsupported_resources_are_refused() {
    assert_eq!(
        parse_resource(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        )
        .unwrap(),
        Resource {
            kind: Kind::ConfigMap,
            name: "c".into()
        }
    );
    assert!(parse_resource(&json!({"apiVersion": "v1", "kind": "Pod"})).is_err());
    assert!(parse_resource(&json!({})).is_err());
}
