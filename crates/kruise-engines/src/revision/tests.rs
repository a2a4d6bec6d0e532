use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

/// (collision count, data bytes, hash) computed with upstream `history.HashControllerRevision`
/// (k8s.io/kubernetes v1.37.2).
const HASH_VECTORS: &[(Option<i32>, &str, &str)] = &[
    (None, "{}", "5894b84845"),
    (Some(0), "{}", "cccc864bc"),
    (Some(1), "{}", "cccc864bb"),
    (Some(-5), r#"{"a":1}"#, "7f9b79549f"),
    (None, "", "65bb57b6b5"),
    (Some(2147483647), r#"{"x":"<&>"}"#, "59fb8fff95"),
    (
        Some(7),
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.25","name":"main","resources":{}}]}}}}"#,
        "85c96489c",
    ),
];

#[test]
fn hash_matches_upstream_vectors() {
    for (count, data, want) in HASH_VECTORS {
        assert_eq!(
            hash_revision_bytes(data.as_bytes(), *count),
            *want,
            "{data} {count:?}"
        );
    }
}

#[test]
fn safe_encode_uses_upstream_alphabet() {
    assert_eq!(safe_encode_string("0123456789"), "456789bcdf");
    assert_eq!(safe_encode_string(""), "");
}

/// (pod template as a user writes it, Go OpenKruise v1.9 revision data, hash with collision
/// count 0, hash with collision count 3) — the data produced by OpenKruise's `getPatch` logic run
/// with k8s.io/api v0.32.10 and Go's encoding/json; hashes by upstream `HashControllerRevision`.
const TEMPLATE_VECTORS: &[(&str, &str, &str, &str)] = &[
    (
        r#"{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"name":"main","image":"nginx:1.25"}]}}"#,
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.25","name":"main","resources":{}}]}}}}"#,
        "85c9648b6",
        "85c9648b5",
    ),
    (
        r#"{"metadata":{"labels":{"app":"web","tier":"fe"},"annotations":{"note":"<a&b>","empty":""}},"spec":{"containers":[{"name":"main","image":"nginx:1.25","imagePullPolicy":"IfNotPresent","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m"}},"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},{"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu"}}}],"readinessProbe":{"httpGet":{"path":"/","port":80},"periodSeconds":5},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","securityContext":{}}],"initContainers":[{"name":"init","image":"busybox","command":["sh","-c","true"]}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler","securityContext":{},"readinessGates":[{"conditionType":"InPlaceUpdateReady"}],"nodeSelector":{},"tolerations":[],"hostNetwork":false,"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1}]}},"volumes":[{"name":"cfg","configMap":{"name":"cfg","defaultMode":420}},{"name":"scratch","emptyDir":{}},{"name":"eph","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"]}}}}]}}"#,
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"empty":"","note":"\u003ca\u0026b\u003e"},"creationTimestamp":null,"labels":{"app":"web","tier":"fe"}},"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"preference":{},"weight":1}]}},"containers":[{"env":[{"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}},{"name":"CPU","valueFrom":{"resourceFieldRef":{"divisor":"0","resource":"limits.cpu"}}}],"image":"nginx:1.25","imagePullPolicy":"IfNotPresent","name":"main","ports":[{"containerPort":80,"protocol":"TCP"}],"readinessProbe":{"httpGet":{"path":"/","port":80},"periodSeconds":5},"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m"}},"securityContext":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","initContainers":[{"command":["sh","-c","true"],"image":"busybox","name":"init","resources":{}}],"readinessGates":[{"conditionType":"InPlaceUpdateReady"}],"restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30,"volumes":[{"configMap":{"defaultMode":420,"name":"cfg"},"name":"cfg"},{"emptyDir":{},"name":"scratch"},{"ephemeral":{"volumeClaimTemplate":{"metadata":{"creationTimestamp":null},"spec":{"accessModes":["ReadWriteOnce"],"resources":{}}}},"name":"eph"}]}}}}"#,
        "675dddffc7",
        "675dddffc8",
    ),
    (
        r#"{"spec":{"containers":[{"name":"c","image":"busybox","args":[],"stdin":false,"ports":[{"containerPort":8080,"hostPort":0}],"lifecycle":{"preStop":{"sleep":{"seconds":5}}}}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]}}"#,
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null},"spec":{"containers":[{"image":"busybox","lifecycle":{"preStop":{"sleep":{"seconds":5}}},"name":"c","ports":[{"containerPort":8080}],"resources":{}}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]}}}}"#,
        "6bf9598499",
        "6bf9598496",
    ),
    (
        r#"{"metadata":{"labels":{"app":"ü"}},"spec":{"containers":[{"name":"main","image":"nginx","env":[{"name":"X","value":"line\nbreak\ttab \u2028 \"q\" \\"}]}]}}"#,
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"ü"}},"spec":{"containers":[{"env":[{"name":"X","value":"line\nbreak\ttab \u2028 \"q\" \\"}],"image":"nginx","name":"main","resources":{}}]}}}}"#,
        "6bd68bbc4d",
        "6bd68bbc55",
    ),
];

#[test]
fn template_patch_matches_go_openkruise_bytes_and_hashes() {
    for (input, want_data, want0, want3) in TEMPLATE_VECTORS {
        let template: PodTemplateSpec = serde_json::from_str(input).unwrap();
        let data = template_patch(&template).unwrap();
        assert_eq!(go_json::to_string(&data), *want_data);
        assert_eq!(hash_revision(&data, Some(0)), *want0);
        assert_eq!(hash_revision(&data, Some(3)), *want3);
        // Go's bytes read back (as a client would read an existing revision) hash the same.
        let stored: Value = serde_json::from_str(want_data).unwrap();
        assert_eq!(hash_revision(&stored, Some(0)), *want0);
        assert_eq!(stored, data);
    }
}

#[test]
fn template_round_trips_through_revision() {
    for (input, ..) in TEMPLATE_VECTORS {
        let template: PodTemplateSpec = serde_json::from_str(input).unwrap();
        let rev = new_controller_revision(
            &parent(),
            controller_ref("apps.kruise.io/v1alpha1", "CloneSet", "web", "uid-1"),
            None,
            template_patch(&template).unwrap(),
            1,
            Some(0),
        );
        let back = template_from_revision(&rev).unwrap();
        // The Go normalisation only adds zero values and drops empty ones.
        assert_eq!(
            template_patch(&back).unwrap(),
            template_patch(&template).unwrap()
        );
        assert_eq!(
            back.spec.as_ref().unwrap().containers[0].name,
            template.spec.as_ref().unwrap().containers[0].name
        );
    }
}

#[test]
fn template_from_revision_errors() {
    let mut rev = ControllerRevision {
        metadata: ObjectMeta {
            name: Some("r".into()),
            ..Default::default()
        },
        data: RawExtension::default(),
        revision: Some(1),
    };
    assert!(matches!(
        template_from_revision(&rev),
        Err(RevisionError::MissingData { .. })
    ));
    rev.data = RawExtension(json!({"spec": {}}));
    assert!(matches!(
        template_from_revision(&rev),
        Err(RevisionError::MissingTemplate { .. })
    ));
    rev.data = RawExtension(json!({"spec": {"template": {"spec": {"containers": 5}}}}));
    assert!(matches!(
        template_from_revision(&rev),
        Err(RevisionError::InvalidTemplate { .. })
    ));
}

fn parent() -> ObjectMeta {
    ObjectMeta {
        name: Some("web".into()),
        namespace: Some("ns".into()),
        uid: Some("uid-1".into()),
        ..Default::default()
    }
}

#[test]
fn new_controller_revision_names_labels_and_owns() {
    let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
    let data: Value = serde_json::from_str(TEMPLATE_VECTORS[0].1).unwrap();
    let owner = controller_ref("apps.kruise.io/v1alpha1", "CloneSet", "web", "uid-1");
    let rev = new_controller_revision(
        &parent(),
        owner.clone(),
        Some(&labels),
        data.clone(),
        4,
        Some(0),
    );
    assert_eq!(rev.metadata.name.as_deref(), Some("web-85c9648b6"));
    assert_eq!(rev.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(rev.revision, Some(4));
    let l = rev.metadata.labels.as_ref().unwrap();
    assert_eq!(l["app"], "web");
    assert_eq!(l[CONTROLLER_REVISION_HASH_LABEL], "85c9648b6");
    assert_eq!(rev.metadata.owner_references, Some(vec![owner]));
    assert_eq!(rev.data.0, data);
    // A collision bumps the hash.
    let (name, hash) = revision_name_for("web", &data, Some(3));
    assert_eq!(
        (name.as_str(), hash.as_str()),
        ("web-85c9648b5", "85c9648b5")
    );
    // Without labels only the hash label is set; a nil collision count hashes differently.
    let rev = new_controller_revision(
        &parent(),
        controller_ref("a", "K", "web", "u"),
        None,
        json!({}),
        1,
        None,
    );
    assert_eq!(rev.metadata.name.as_deref(), Some("web-5894b84845"));
    assert_eq!(rev.metadata.labels.unwrap().len(), 1);
}

#[test]
fn revision_name_truncates_prefix() {
    let long = "a".repeat(300);
    let name = revision_name(&long, "h");
    assert_eq!(name.len(), 223 + 2);
    assert!(name.ends_with("a-h"));
    assert_eq!(revision_name("cs", "abc"), "cs-abc");
}

fn rev(name: &str, revision: i64, data: Value) -> ControllerRevision {
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: RawExtension(data),
        revision: Some(revision),
    }
}

fn with_hash_label(mut r: ControllerRevision, hash: &str) -> ControllerRevision {
    r.metadata.labels = Some([(CONTROLLER_REVISION_HASH_LABEL.to_owned(), hash.to_owned())].into());
    r
}

#[test]
fn equal_revision_compares_data_and_numeric_hash_labels() {
    let a = rev("a", 1, json!({"x": 1, "y": "<"}));
    let b = rev("b", 2, json!({"y": "<", "x": 1.0}));
    let c = rev("c", 3, json!({"x": 2}));
    assert!(equal_revision(&a, &b));
    assert!(!equal_revision(&a, &c));
    // safe-encoded hashes are not numeric: ignored
    assert!(equal_revision(
        &with_hash_label(a.clone(), "abc"),
        &with_hash_label(b.clone(), "def")
    ));
    // numeric hashes must agree
    assert!(!equal_revision(
        &with_hash_label(a.clone(), "245"),
        &with_hash_label(b.clone(), "246")
    ));
    assert!(equal_revision(
        &with_hash_label(a.clone(), "245"),
        &with_hash_label(b.clone(), "+245")
    ));
    // only one numeric: ignored
    assert!(equal_revision(&with_hash_label(a.clone(), "245"), &b));
    let mut none = a.clone();
    none.data = RawExtension::default();
    assert!(!equal_revision(&none, &a));
    assert!(equal_revision(&none, &none.clone()));
    let revisions = vec![a.clone(), c.clone(), b.clone()];
    assert_eq!(find_equal_revisions(&revisions, &a), vec![0, 2]);
    let arcs: Vec<std::sync::Arc<ControllerRevision>> =
        revisions.into_iter().map(std::sync::Arc::new).collect();
    assert_eq!(find_equal_revisions(&arcs, &c), vec![1]);
}

fn ts(secs: i64) -> Time {
    Time(jiff::Timestamp::from_second(secs).unwrap())
}

#[test]
fn sort_and_next_revision() {
    let mut r1 = rev("z", 2, json!({}));
    r1.metadata.creation_timestamp = Some(ts(100));
    let mut r2 = rev("b", 2, json!({}));
    r2.metadata.creation_timestamp = Some(ts(100));
    let mut r3 = rev("a", 2, json!({}));
    r3.metadata.creation_timestamp = Some(ts(200));
    let r4 = rev("y", 2, json!({}));
    let r5 = rev("x", 1, json!({}));
    let mut revs = vec![r1, r2, r3, r4, r5];
    sort_revisions(&mut revs);
    let names: Vec<_> = revs
        .iter()
        .map(|r| r.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["x", "y", "b", "z", "a"]);
    assert_eq!(next_revision(&revs), 3);
    assert_eq!(next_revision::<ControllerRevision>(&[]), 1);
}

fn labels(hash: &str) -> BTreeMap<String, String> {
    [(CONTROLLER_REVISION_HASH_LABEL.to_owned(), hash.to_owned())].into()
}

#[test]
fn truncate_history_keeps_limit_non_live() {
    let revs: Vec<ControllerRevision> = (1..=6)
        .map(|i| rev(&format!("cs-h{i}"), i, json!({})))
        .collect();
    let pod_a = labels("cs-h2");
    let pod_b = labels("h3"); // short-hash label
    let live = live_revisions(&revs, "cs-h5", "cs-h6", [Some(&pod_a), Some(&pod_b), None]);
    let want: BTreeSet<String> = ["cs-h2", "cs-h3", "cs-h5", "cs-h6"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(live, want);
    // non-live: h1, h4
    assert_eq!(
        history_to_truncate(&revs, &live, Some(0)),
        ["cs-h1", "cs-h4"]
    );
    assert_eq!(history_to_truncate(&revs, &live, Some(1)), ["cs-h1"]);
    assert!(history_to_truncate(&revs, &live, Some(2)).is_empty());
    assert!(history_to_truncate(&revs, &live, None).is_empty());
    assert_eq!(
        history_to_truncate(&revs, &live, Some(-3)),
        ["cs-h1", "cs-h4"]
    );
    let many: Vec<ControllerRevision> = (1..=13)
        .map(|i| rev(&format!("cs-{i}"), i, json!({})))
        .collect();
    let live = live_revisions(&many, "cs-13", "cs-13", std::iter::empty());
    assert_eq!(history_to_truncate(&many, &live, None), ["cs-1", "cs-2"]);
}

#[test]
fn revision_labels_and_matching() {
    assert_eq!(short_hash("web-5f7b8c"), "5f7b8c");
    assert_eq!(short_hash("my-web-5f7b8c"), "5f7b8c");
    assert_eq!(short_hash("5f7b8c"), "5f7b8c");
    assert_eq!(short_hash(""), "");

    let mut l = BTreeMap::new();
    write_revision_hash(&mut l, "web-abc", false);
    assert_eq!(l[CONTROLLER_REVISION_HASH_LABEL], "web-abc");
    assert_eq!(l[POD_TEMPLATE_HASH_LABEL], "abc");
    write_revision_hash(&mut l, "web-def", true);
    assert_eq!(l[CONTROLLER_REVISION_HASH_LABEL], "def");
    assert_eq!(l[POD_TEMPLATE_HASH_LABEL], "def");

    let cases: &[(Option<&str>, &str, bool)] = &[
        (Some("web-abc"), "web-abc", true),
        (Some("abc"), "web-abc", true),
        (Some("web-abc"), "abc", true),
        (Some("other-abc"), "web-abc", true),
        (Some("web-abd"), "web-abc", false),
        (None, "web-abc", false),
        (None, "", true),
        (Some(""), "web-abc", false),
    ];
    for (label, revision, want) in cases {
        let l = label.map(labels);
        assert_eq!(
            equal_to_revision_hash(l.as_ref(), revision),
            *want,
            "{label:?} {revision}"
        );
    }
}

#[test]
fn vct_hash_matches_go_openkruise() {
    let cases: &[(&str, u32)] = &[
        (
            r#"[{"metadata":{"name":"b"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}},{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{"storageClassName":"fast"}}]"#,
            2799088304,
        ),
        (
            r#"[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]"#,
            3636919212,
        ),
        (
            r#"[{"metadata":{"name":"data","annotations":{"a":"b"}},"spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"","volumeMode":"Filesystem","resources":{"requests":{"storage":"20Gi"},"limits":{}}}},{"metadata":{"name":"cache"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]"#,
            2076782764,
        ),
    ];
    for (input, want) in cases {
        let templates: Vec<PersistentVolumeClaim> = serde_json::from_str(input).unwrap();
        assert_eq!(vct_hash(&templates).unwrap(), *want, "{input}");
    }
    let ann = revision_annotations(
        Some(&[("k".to_owned(), "v".to_owned())].into()),
        &serde_json::from_str::<Vec<PersistentVolumeClaim>>(cases[1].0).unwrap(),
    )
    .unwrap();
    assert_eq!(ann["k"], "v");
    assert_eq!(ann[VCT_HASH_ANNOTATION], "3636919212");
    let ann = revision_annotations(None, &[]).unwrap();
    assert_eq!(ann[VCT_HASH_ANNOTATION], "");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z<>&\"\\\\\u{2028}é\n ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[$a-zA-Z<]{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn go_encoding_round_trips_and_is_canonical(v in json_value()) {
            let bytes = go_json::to_vec(&v);
            let back: Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(go_json::to_vec(&back), bytes.clone());
            // no raw HTML characters survive
            let text = String::from_utf8(bytes).unwrap();
            prop_assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        }

        #[test]
        fn hashes_use_the_safe_alphabet(data in prop::collection::vec(any::<u8>(), 0..64), count in proptest::option::of(any::<i32>())) {
            let h = hash_revision_bytes(&data, count);
            prop_assert!(!h.is_empty() && h.len() <= 10);
            prop_assert!(h.bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
        }

        #[test]
        fn normalize_is_idempotent(v in json_value()) {
            let mut tpl = json!({"metadata": v.clone(), "spec": {"containers": [v.clone()], "volumes": [{"name": "x", "ephemeral": v}]}});
            go_json::normalize(&mut tpl, go_json::GoType::PodTemplateSpec);
            let once = tpl.clone();
            go_json::normalize(&mut tpl, go_json::GoType::PodTemplateSpec);
            prop_assert_eq!(tpl, once);
        }

        #[test]
        fn truncation_keeps_limit_and_live(n in 0usize..20, live_mask in any::<u32>(), limit in -2i32..15) {
            let revs: Vec<ControllerRevision> = (0..n).map(|i| rev(&format!("cs-{i}"), i as i64 + 1, json!({}))).collect();
            let live: BTreeSet<String> = (0..n).filter(|i| live_mask & (1 << i) != 0).map(|i| format!("cs-{i}")).collect();
            let doomed = history_to_truncate(&revs, &live, Some(limit));
            let non_live = n - live.len();
            prop_assert_eq!(doomed.len(), non_live.saturating_sub(limit.max(0) as usize));
            prop_assert!(doomed.iter().all(|d| !live.contains(d)));
            // the oldest non-live go first
            let expected: Vec<String> = (0..n).map(|i| format!("cs-{i}")).filter(|s| !live.contains(s)).take(doomed.len()).collect();
            prop_assert_eq!(doomed, expected);
        }
    }
}
