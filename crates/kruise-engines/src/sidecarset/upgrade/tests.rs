use super::*;
#[allow(unused_imports)]
use kruise_api::pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodSpec, CachedPodStatus,
};
use serde_json::json;

fn sidecarset(strategy: serde_json::Value) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "ss", "annotations": {
            "kruise.io/sidecarset-hash": "new", "kruise.io/sidecarset-hash-without-image": "w"}},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "containers": [{"name": "sidecar", "image": "busybox:2"}],
                 "updateStrategy": strategy}
    }))
    .unwrap()
}

fn pod(name: &str, hash: &str, ready: bool) -> CachedPod {
    let ann = |h: &str| format!(r#"{{"ss":{{"hash":"{h}","sidecarSetName":"ss"}}}}"#);
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "a"}, "annotations": {
            "kruise.io/sidecarset-hash": ann(hash),
            "kruise.io/sidecarset-hash-without-image": ann("w"),
            "kruise.io/sidecarset-injected-list": "ss"}},
        "spec": {"containers": [{"name": "sidecar", "image": "busybox:1"}, {"name": "main", "image": "nginx"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
            "containerStatuses": [
                {"name": "sidecar", "image": "busybox:1", "imageID": "busybox@sha256:1", "ready": ready, "restartCount": 0},
                {"name": "main", "image": "nginx", "imageID": "nginx@sha256:2", "ready": ready, "restartCount": 0}]}
    }))
    .unwrap()
}

#[test]
fn max_unavailable_and_partition_bound_each_round() {
    let s = sidecarset(json!({"maxUnavailable": 2, "partition": 1}));
    let pods: Vec<CachedPod> = (0..5).map(|i| pod(&format!("p{i}"), "old", true)).collect();
    let refs: Vec<&CachedPod> = pods.iter().collect();
    let next = next_upgrade_pods(&s, &refs);
    assert_eq!(next.upgrade.len(), 2);
    assert!(next.not_upgradable.is_empty());
    // A not-ready pod is always taken and does not use the budget.
    let mut pods = pods;
    pods[4] = pod("p4", "old", false);
    let refs: Vec<&CachedPod> = pods.iter().collect();
    let next = next_upgrade_pods(&s, &refs);
    assert_eq!(next.upgrade.first(), Some(&4));
    assert_eq!(next.upgrade.len(), 3);
}

#[test]
fn changed_non_image_fields_are_not_upgradable() {
    let s = sidecarset(json!({}));
    let mut p = pod("p", "old", true);
    p.metadata.annotations.as_mut().unwrap().insert(
        "kruise.io/sidecarset-hash-without-image".into(),
        r#"{"ss":{"hash":"other"}}"#.into(),
    );
    let next = next_upgrade_pods(&s, &[&p]);
    assert_eq!(next.not_upgradable, vec![0]);
    assert!(next.upgrade.is_empty());
}

#[test]
fn upgrade_moves_the_image_and_records_hash_and_image_id() {
    let s = sidecarset(json!({}));
    let mut p = pod("p", "old", true);
    let now = jiff::Timestamp::from_second(1_764_000_000).unwrap();
    let changed = upgrade_pod(&s, &mut p, now);
    assert_eq!(changed, vec!["sidecar".to_string()]);
    assert_eq!(
        p.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("busybox:2")
    );
    assert!(is_pod_sidecar_updated(&s, &p));
    let states = control::inplace_update_states(&p).unwrap().unwrap();
    assert_eq!(
        states["ss"].last_container_statuses["sidecar"].image_id,
        "busybox@sha256:1"
    );
    // The kubelet has not restarted the container yet: not consistent.
    assert!(!is_pod_state_consistent(&s, &p, &BTreeSet::new()));
}

#[test]
fn star_scatter_terms_expand_to_every_value() {
    let mut a = pod("a", "old", true);
    a.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "z1".into());
    let mut b = pod("b", "old", true);
    b.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("zone".into(), "z2".into());
    let scatter = vec![UpdateScatterTerm {
        key: "zone".into(),
        value: "*".into(),
    }];
    let terms = expand_scatter_terms(&scatter, &[&a, &b, &a]);
    let values: Vec<&str> = terms.iter().map(|t| t.value.as_str()).collect();
    assert_eq!(values, vec!["z1", "z2"]);
}

// ---------------------------------------------------------------------------------------------
// Cases of OpenKruise v1.9.0 `pkg/controller/sidecarset/sidecarset_strategy_test.go`,
// `sidecarset_processor_test.go`, `sidecarset_hotupgrade_test.go` and
// `sidecarset_controller_test.go`, run through this port.

const SIDECARSET: &str = "test-sidecarset";
const TEST_IMAGE_V1_ID: &str = "docker-pullable://test-image@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
const TEST_IMAGE_V2_ID: &str = "docker-pullable://test-image@sha256:f7988fb6c02e0ce69257d9bd9cf37ae20a60f1df7563c3a2a6abe24160306b8d";
const NGINX_ID: &str = "docker-pullable://nginx@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d";
const HOT_EMPTY_IMAGE: &str = "hotupgrade:empty";
const HOT_EMPTY_IMAGE_ID: &str = "docker-pullable://hotupgrade@sha256:91873971hhf0981293480lhhhgsfgs09809085024lddd092jjj44k4h4vv44";

fn now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_764_000_000).unwrap()
}

fn status_mut(p: &mut CachedPod, i: usize) -> &mut CachedContainerStatus {
    &mut p
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[i]
}

fn spec_image(p: &CachedPod, name: &str) -> String {
    podutil::get_container(p, name)
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn labels_mut(p: &mut CachedPod) -> &mut BTreeMap<String, String> {
    p.metadata.labels.get_or_insert_with(Default::default)
}

/// strategy_test.go `createFactorySidecarSet`.
fn factory_sidecarset(hash: &str, without_image: &str, strategy: serde_json::Value) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": SIDECARSET, "labels": {}, "annotations": {
            "kruise.io/sidecarset-hash": hash,
            "kruise.io/sidecarset-hash-without-image": without_image}},
        "spec": {"containers": [{"name": "test-sidecar", "image": "test-image:v2"}],
                 "selector": {"matchLabels": {"app": "sidecar"}},
                 "updateStrategy": strategy,
                 "revisionHistoryLimit": 10}
    }))
    .unwrap()
}

/// strategy_test.go `factorySidecarSet` with the test's `updateStrategy`.
fn strategy_sidecarset(strategy: serde_json::Value) -> SidecarSet {
    factory_sidecarset("bbb", "without-aaa", strategy)
}

/// strategy_test.go `factoryPodsCommon`: `count` pods created one after the other (`pod-0`
/// oldest), the first `upgraded` of them upgraded to the SidecarSet.
fn factory_pods_common(count: usize, upgraded: usize, s: &SidecarSet) -> Vec<CachedPod> {
    let mut pods: Vec<CachedPod> = (0..count)
        .map(|i| {
            let created = jiff::Timestamp::from_second(1_700_000_000 + i as i64).unwrap();
            serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i}"), "labels": {"app": "sidecar"},
                    "creationTimestamp": created.to_string(),
                    "annotations": {
                        "kruise.io/sidecarset-hash": r#"{"test-sidecarset":{"hash":"aaa","sidecarList":["test-sidecar"]}}"#,
                        "kruise.io/sidecarset-hash-without-image": r#"{"test-sidecarset":{"hash":"without-aaa","sidecarList":["test-sidecar"]}}"#}},
                "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.15.1"},
                    {"name": "test-sidecar", "image": "test-image:v1"}]},
                "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [
                        {"name": "nginx", "image": "nginx:1.15.1", "imageID": NGINX_ID, "ready": true, "restartCount": 0},
                        {"name": "test-sidecar", "image": "test-image:v1", "imageID": TEST_IMAGE_V1_ID, "ready": true, "restartCount": 0}]}
            }))
            .unwrap()
        })
        .collect();
    for p in pods.iter_mut().take(upgraded) {
        p.spec.as_mut().unwrap().containers[1].image = Some("test-image:v2".into());
        control::update_pod_sidecarset_hash(p, s, now());
        control::record_inplace_update_state(s, p, &["test-sidecar".to_string()], now());
    }
    pods
}

/// strategy_test.go `factoryPods`: the first `upgraded_and_ready` upgraded pods also report
/// the new image.
fn factory_pods(count: usize, upgraded: usize, upgraded_and_ready: usize) -> Vec<CachedPod> {
    let s = strategy_sidecarset(json!({}));
    let mut pods = factory_pods_common(count, upgraded, &s);
    for p in pods.iter_mut().take(upgraded_and_ready) {
        let st = status_mut(p, 1);
        st.image = "test-image:v2".into();
        st.image_id = TEST_IMAGE_V2_ID.into();
    }
    pods
}

/// strategy_test.go `Random`, with a fixed seed (a Fisher–Yates shuffle driven by an LCG).
fn shuffle(mut pods: Vec<CachedPod>, seed: u64) -> Vec<CachedPod> {
    let mut x = seed;
    for i in (1..pods.len()).rev() {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = ((x >> 33) % (i as u64 + 1)) as usize;
        pods.swap(i, j);
    }
    pods
}

const SEEDS: [u64; 3] = [1, 42, 20_251_125];

#[test]
fn go_get_next_upgrade_pods() {
    let not_upgradable = |strategy| factory_sidecarset("bbb", "without-bbb", strategy);
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        &str,
        Box<dyn Fn() -> Vec<CachedPod>>,
        SidecarSet,
        usize,
        usize,
    )> = vec![
        (
            "only maxUnavailable(int=10), and pods(count=100, upgraded=30, upgradedAndReady=26)",
            Box::new(|| factory_pods(100, 30, 26)),
            strategy_sidecarset(json!({"maxUnavailable": 10})),
            6,
            0,
        ),
        (
            "only maxUnavailable(string=10%), and pods(count=1000, upgraded=300, upgradedAndReady=260)",
            Box::new(|| factory_pods(1000, 300, 260)),
            strategy_sidecarset(json!({"maxUnavailable": "10%"})),
            60,
            0,
        ),
        (
            "only maxUnavailable(string=5%), and pods(count=1000, upgraded=300, upgradedAndReady=250)",
            Box::new(|| factory_pods(1000, 300, 250)),
            strategy_sidecarset(json!({"maxUnavailable": "5%"})),
            0,
            0,
        ),
        (
            "only maxUnavailable(int=100), and pods(count=100, upgraded=30, upgradedAndReady=27)",
            Box::new(|| factory_pods(100, 30, 27)),
            strategy_sidecarset(json!({"maxUnavailable": 100})),
            70,
            0,
        ),
        (
            "partition(int=180) maxUnavailable(int=100), and pods(count=1000, upgraded=800, upgradedAndReady=760)",
            Box::new(|| factory_pods(1000, 800, 760)),
            strategy_sidecarset(json!({"maxUnavailable": 100, "partition": 180})),
            20,
            0,
        ),
        (
            "partition(int=100) maxUnavailable(int=100), and pods(count=1000, upgraded=800, upgradedAndReady=760)",
            Box::new(|| factory_pods(1000, 800, 760)),
            strategy_sidecarset(json!({"maxUnavailable": 100, "partition": 100})),
            60,
            0,
        ),
        (
            "partition(string=18%) maxUnavailable(int=100), and pods(count=1000, upgraded=800, upgradedAndReady=760)",
            Box::new(|| factory_pods(1000, 800, 760)),
            strategy_sidecarset(json!({"maxUnavailable": 100, "partition": "18%"})),
            20,
            0,
        ),
        (
            "partition(string=10%) maxUnavailable(int=100), and pods(count=1000, upgraded=800, upgradedAndReady=760)",
            Box::new(|| factory_pods(1000, 800, 760)),
            strategy_sidecarset(json!({"maxUnavailable": 100, "partition": "10%"})),
            60,
            0,
        ),
        (
            "selector(app=test, count=30) maxUnavailable(int=100), and pods(count=1000, upgraded=0, upgradedAndReady=0)",
            Box::new(|| {
                let mut pods = factory_pods(1000, 0, 0);
                for p in pods.iter_mut().take(30) {
                    labels_mut(p).insert("app".into(), "test".into());
                }
                pods
            }),
            strategy_sidecarset(
                json!({"maxUnavailable": 100, "selector": {"matchLabels": {"app": "test"}}}),
            ),
            30,
            0,
        ),
        (
            "not upgradable sidecarset, maxUnavailable(int=100), and pods(count=100, upgraded=0, upgradedAndReady=0)",
            Box::new(|| factory_pods(100, 0, 0)),
            not_upgradable(json!({"maxUnavailable": 100})),
            0,
            100,
        ),
        (
            "only maxUnavailable(5%), and pods(count=5, upgraded=0, upgradedAndReady=0)",
            Box::new(|| factory_pods(5, 0, 0)),
            strategy_sidecarset(json!({"maxUnavailable": "5%"})),
            1,
            0,
        ),
        (
            "maxUnavailable(5) partition(99%), and pods(count=5, upgraded=0, upgradedAndReady=0)",
            Box::new(|| factory_pods(5, 0, 0)),
            strategy_sidecarset(json!({"maxUnavailable": 5, "partition": "99%"})),
            1,
            0,
        ),
        (
            "maxUnavailable(5) partition(1%), and pods(count=5, upgraded=0, upgradedAndReady=0)",
            Box::new(|| factory_pods(5, 0, 0)),
            strategy_sidecarset(json!({"maxUnavailable": 5, "partition": "1%"})),
            4,
            0,
        ),
    ];
    for (name, pods, s, want_upgrade, want_not_upgradable) in &cases {
        for seed in SEEDS {
            let pods = shuffle(pods(), seed);
            let refs: Vec<&CachedPod> = pods.iter().collect();
            let next = next_upgrade_pods(s, &refs);
            assert_eq!(next.upgrade.len(), *want_upgrade, "{name} (seed {seed})");
            assert_eq!(
                next.not_upgradable.len(),
                *want_not_upgradable,
                "{name} (seed {seed})"
            );
        }
    }
}

#[test]
fn go_parse_update_scatter_terms() {
    let term = |k: &str, v: &str| UpdateScatterTerm {
        key: k.into(),
        value: v.into(),
    };
    let regular = vec![
        term("key-1", "value-1"),
        term("key-2", "value-2"),
        term("key-3", "value-3"),
    ];
    let mut with_star = regular.clone();
    with_star.push(term("key-4", "*"));
    let mut expanded = regular.clone();
    expanded.extend([
        term("key-4", "value-4-0"),
        term("key-4", "value-4-1"),
        term("key-4", "value-4-2"),
        term("key-4", "value-4"),
    ]);

    let plain = factory_pods(100, 0, 0);
    let mut labelled = factory_pods(100, 0, 0);
    for (i, v) in [
        "value-4-0",
        "value-4-1",
        "value-4-2",
        "value-4",
        "value-4",
        "value-4",
    ]
    .into_iter()
    .enumerate()
    {
        labels_mut(&mut labelled[i]).insert("key-4".into(), v.into());
    }
    let cases = [
        ("only scatter terms", &plain, &regular, &regular),
        (
            "regular and scatter terms",
            &labelled,
            &with_star,
            &expanded,
        ),
    ];
    for (name, pods, scatter, want) in cases {
        let refs: Vec<&CachedPod> = pods.iter().collect();
        assert_eq!(&expand_scatter_terms(scatter, &refs), want, "{name}");
    }
}

fn set_ready(p: &mut CachedPod, ready: bool) {
    for c in p.status.as_mut().unwrap().conditions.as_mut().unwrap() {
        if c.type_ == "Ready" {
            c.status = if ready { "True" } else { "False" }.into();
        }
    }
}

#[test]
fn go_sort_next_upgrade_pods() {
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, Box<dyn Fn() -> Vec<CachedPod>>, SidecarSet, Vec<&str>)> = vec![
        (
            "sort by pod.CreationTimestamp, maxUnavailable(int=10) and pods(count=20, upgraded=10, upgradedAndReady=5)",
            Box::new(|| factory_pods(20, 10, 5)),
            strategy_sidecarset(json!({"maxUnavailable": 10})),
            vec!["pod-19", "pod-18", "pod-17", "pod-16", "pod-15"],
        ),
        (
            "not ready priority, maxUnavailable(int=10) and pods(count=20, upgraded=10, upgradedAndReady=5)",
            Box::new(|| {
                let mut pods = factory_pods(20, 10, 5);
                set_ready(&mut pods[10], false);
                set_ready(&mut pods[13], false);
                pods
            }),
            strategy_sidecarset(json!({"maxUnavailable": 10})),
            vec![
                "pod-13", "pod-10", "pod-19", "pod-18", "pod-17", "pod-16", "pod-15",
            ],
        ),
        (
            "with weight priority strategy, maxUnavailable(int=10) and pods(count=20, upgraded=10, upgradedAndReady=2)",
            Box::new(|| {
                let mut pods = factory_pods(20, 10, 2);
                labels_mut(&mut pods[15]).insert("test-key".into(), "bar".into());
                labels_mut(&mut pods[16]).insert("test-key".into(), "foo".into());
                pods
            }),
            strategy_sidecarset(
                json!({"maxUnavailable": 10, "priorityStrategy": {"weightPriority": [
                {"weight": 50, "matchSelector": {"matchLabels": {"test-key": "foo"}}},
                {"weight": 30, "matchSelector": {"matchLabels": {"test-key": "bar"}}}]}}),
            ),
            vec!["pod-16", "pod-15"],
        ),
        (
            "with order priority strategy, maxUnavailable(int=10) and pods(count=20, upgraded=10, upgradedAndReady=2)",
            Box::new(|| {
                let mut pods = factory_pods(20, 10, 2);
                for p in pods.iter_mut() {
                    labels_mut(p).insert("key1".into(), "5".into());
                }
                labels_mut(&mut pods[17]).insert("key1".into(), "10".into());
                labels_mut(&mut pods[18]).insert("key1".into(), "20".into());
                pods
            }),
            strategy_sidecarset(
                json!({"maxUnavailable": 10, "priorityStrategy": {"orderPriority": [
                {"orderedKey": "key1"}]}}),
            ),
            vec!["pod-18", "pod-17"],
        ),
    ];
    for (name, pods, s, want) in &cases {
        for seed in SEEDS {
            let pods = shuffle(pods(), seed);
            let refs: Vec<&CachedPod> = pods.iter().collect();
            let got: Vec<&str> = next_upgrade_pods(s, &refs)
                .upgrade
                .iter()
                .map(|&i| pods[i].metadata.name.as_deref().unwrap())
                .collect();
            assert_eq!(&got, want, "{name} (seed {seed})");
        }
    }
}

/// One `Processor.UpdateSidecarSet` pass over `pods` with this port, as the Go tests drive it
/// through a fake client: the matching pods (selector, active, injected, consistent), their
/// status, then either the hot-upgrade flip of the pods that finished a hot upgrade or, unless
/// every pod is updated, the in-place upgrade of the next pods. Returns the status.
fn update_sidecarset(s: &SidecarSet, pods: &mut [CachedPod]) -> SidecarSetStatus {
    let selector = s.spec.selector.clone().unwrap_or_default();
    let matched: Vec<usize> = (0..pods.len())
        .filter(|&i| {
            let p = &pods[i];
            updatesort::selector_matches(&selector, p.metadata.labels.as_ref()) == Some(true)
                && podutil::is_active(p)
                && control::is_pod_injected(p, s)
                && control::is_pod_consistent_with_sidecarset(p, s)
        })
        .collect();
    let refs: Vec<&CachedPod> = matched.iter().map(|&i| &pods[i]).collect();
    let status = calculate_status(s, &refs);
    let flip: Vec<usize> = if has_hot_upgrade(s) {
        matched
            .iter()
            .copied()
            .filter(|&i| needs_hot_upgrade_flip(s, &pods[i]))
            .collect()
    } else {
        Vec::new()
    };
    let upgrade: Vec<usize> = if !flip.is_empty() || status.updated_pods >= status.matched_pods {
        Vec::new()
    } else {
        next_upgrade_pods(s, &refs)
            .upgrade
            .into_iter()
            .map(|k| matched[k])
            .collect()
    };
    for i in flip {
        flip_hot_upgrade(s, &mut pods[i], now());
    }
    for i in upgrade {
        upgrade_pod(s, &mut pods[i], now());
    }
    status
}

/// `[matchedPods, updatedPods, readyPods, updatedReadyPods]`, as the Go tests list them.
fn counts(st: &SidecarSetStatus) -> [i32; 4] {
    [
        st.matched_pods,
        st.updated_pods,
        st.ready_pods,
        st.updated_ready_pods.unwrap_or(0),
    ]
}

/// sidecarset_controller_test.go `sidecarSetDemo`.
fn controller_sidecarset(strategy: serde_json::Value) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": SIDECARSET, "labels": {},
                     "annotations": {"kruise.io/sidecarset-hash": "bbb"}},
        "spec": {"containers": [{"name": "test-sidecar", "image": "test-image:v2"}],
                 "selector": {"matchLabels": {"app": "nginx"}},
                 "updateStrategy": strategy,
                 "revisionHistoryLimit": 10}
    }))
    .unwrap()
}

/// sidecarset_controller_test.go `podDemo`.
fn controller_pod() -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"name": "test-pod-1", "namespace": "default", "labels": {"app": "nginx"},
            "annotations": {
                "kruise.io/sidecarset-hash": r#"{"test-sidecarset":{"hash":"aaa","sidecarList":["test-sidecar"]}}"#,
                "kruise.io/sidecarset-injected-list": SIDECARSET}},
        "spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.15.1",
             "env": [{"name": "nginx-env", "value": "value-1"}],
             "volumeMounts": [{"name": "nginx-volume", "mountPath": "/data/nginx"}]},
            {"name": "test-sidecar", "image": "test-image:v1",
             "env": [{"name": "IS_INJECTED", "value": "true"}]}],
            "volumes": [{"name": "nginx-volume"}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "nginx", "image": "nginx:1.15.1", "imageID": NGINX_ID, "ready": true, "restartCount": 0},
                {"name": "test-sidecar", "image": "test-image:v1", "imageID": TEST_IMAGE_V1_ID, "ready": true, "restartCount": 0}]}
    }))
    .unwrap()
}

fn report_new_image(p: &mut CachedPod, i: usize, image: &str, id: &str) {
    let st = status_mut(p, i);
    st.image = image.into();
    st.image_id = id.into();
}

#[test]
fn go_update_cold_upgrade_sidecar() {
    let s = controller_sidecarset(json!({}));
    let mut pod1 = controller_pod();
    {
        let c = &mut pod1.spec.as_mut().unwrap().containers[1];
        c.env = Some(vec![k8s_openapi::api::core::v1::EnvVar {
            name: "nginx-env".into(),
            value: Some("nginx-value".into()),
            value_from: None,
        }]);
        c.volume_mounts = Some(vec![k8s_openapi::api::core::v1::VolumeMount {
            mount_path: "/data/nginx".into(),
            ..Default::default()
        }]);
    }
    let mut pod2 = pod1.clone();
    pod2.metadata.name = Some("test-pod-2".into());
    let mut pods = vec![pod1, pod2];
    // (case, sidecar image of test-pod-1 and test-pod-2 afterwards, status, the pod whose
    // kubelet then reports the new image)
    let cases = [
        (
            "sidecarset update pod test-pod-1",
            ["test-image:v2", "test-image:v1"],
            [2, 0, 2, 0],
            None,
        ),
        (
            "pod test-pod-1 is upgrading",
            ["test-image:v2", "test-image:v1"],
            [2, 1, 1, 0],
            Some(0),
        ),
        (
            "pod test-pod-1 upgrade complete, and start update pod test-pod-2",
            ["test-image:v2", "test-image:v2"],
            [2, 1, 2, 1],
            None,
        ),
        (
            "pod test-pod-2 is upgrading",
            ["test-image:v2", "test-image:v2"],
            [2, 2, 1, 1],
            Some(1),
        ),
        (
            "pod test-pod-2 upgrade complete",
            ["test-image:v2", "test-image:v2"],
            [2, 2, 2, 2],
            None,
        ),
    ];
    for (name, images, want, reported) in cases {
        let st = update_sidecarset(&s, &mut pods);
        for (p, image) in pods.iter().zip(images) {
            let c = &p.spec.as_ref().unwrap().containers[1];
            assert_eq!(c.image.as_deref(), Some(image), "{name}");
            if image == "test-image:v2" {
                assert!(
                    c.env.iter().flatten().any(|e| e.name == "nginx-env"),
                    "{name}"
                );
                assert!(
                    c.volume_mounts
                        .iter()
                        .flatten()
                        .any(|m| m.mount_path == "/data/nginx"),
                    "{name}"
                );
                assert_eq!(
                    p.metadata.annotations.as_ref().unwrap()[keys::SIDECARSET_INJECTED_LIST],
                    SIDECARSET,
                    "{name}"
                );
            }
        }
        assert_eq!(counts(&st), want, "{name}");
        if let Some(i) = reported {
            report_new_image(&mut pods[i], 1, "test-image:v2", TEST_IMAGE_V2_ID);
        }
    }
}

#[test]
fn go_can_upgrade_pods() {
    let s = factory_sidecarset("bbb", "without-bbb", json!({"maxUnavailable": "50%"}));
    let mut pods = factory_pods_common(100, 0, &s);
    for (i, p) in pods.iter_mut().enumerate() {
        let a = p.metadata.annotations.as_mut().unwrap();
        a.insert(keys::SIDECARSET_INJECTED_LIST.into(), SIDECARSET.into());
        let without = if i < 50 { "without-aaa" } else { "without-bbb" };
        a.insert(
            keys::SIDECARSET_HASH_WITHOUT_IMAGE.into(),
            format!(r#"{{"test-sidecarset":{{"hash":"{without}"}}}}"#),
        );
    }
    update_sidecarset(&s, &mut pods);
    for (i, p) in pods.iter().enumerate() {
        let want = if i < 50 {
            "test-image:v1"
        } else {
            "test-image:v2"
        };
        assert_eq!(spec_image(p, "test-sidecar"), want, "pod {i}");
    }
}

#[test]
fn go_update_when_max_unavailable_not_zero() {
    let s = controller_sidecarset(json!({}));
    let mut pods = vec![controller_pod()];
    pods[0].status.as_mut().unwrap().phase = Some("Pending".into());
    update_sidecarset(&s, &mut pods);
    assert_eq!(spec_image(&pods[0], "test-sidecar"), "test-image:v2");
}

#[test]
fn go_update_when_partition_finished() {
    let s = controller_sidecarset(json!({"partition": 1}));
    let mut pods = vec![controller_pod()];
    update_sidecarset(&s, &mut pods);
    assert_eq!(spec_image(&pods[0], "test-sidecar"), "test-image:v1");
}

/// sidecarset_hotupgrade_test.go `sidecarSetHotUpgrade`.
fn hot_upgrade_sidecarset() -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"generation": 123, "name": SIDECARSET, "resourceVersion": "22", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "bbb",
                            "kruise.io/sidecarset-hash-without-image": "111111111"}},
        "spec": {"containers": [{"name": "test-sidecar", "image": "test-image:v2",
                    "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": HOT_EMPTY_IMAGE}}],
                 "selector": {"matchLabels": {"app": "nginx"}},
                 "updateStrategy": {},
                 "revisionHistoryLimit": 10}
    }))
    .unwrap()
}

/// sidecarset_hotupgrade_test.go `podHotUpgrade` (named `liheng-test` by the test).
fn hot_upgrade_pod() -> CachedPod {
    let version_env = |c: &str| {
        json!([{"name": "SIDECARSET_VERSION", "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.annotations['version.sidecarset.kruise.io/{c}']")}}}])
    };
    serde_json::from_value(json!({
        "metadata": {"name": "liheng-test", "namespace": "default", "labels": {"app": "nginx"},
            "annotations": {
                "kruise.io/sidecarset-injected-list": SIDECARSET,
                "kruise.io/sidecarset-hash": r#"{"test-sidecarset":{"hash":"aaa","sidecarList":["test-sidecar"]}}"#,
                "kruise.io/sidecarset-hash-without-image": r#"{"test-sidecarset":{"hash":"111111111"}}"#,
                "version.sidecarset.kruise.io/test-sidecar-1": "1",
                "version.sidecarset.kruise.io/test-sidecar-2": "1",
                "kruise.io/sidecarset-working-hotupgrade-container": r#"{"test-sidecar":"test-sidecar-1"}"#}},
        "spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.15.1"},
            {"name": "test-sidecar-1", "image": "test-image:v1", "env": version_env("test-sidecar-1")},
            {"name": "test-sidecar-2", "image": HOT_EMPTY_IMAGE, "env": version_env("test-sidecar-2")}]},
        "status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "nginx", "image": "nginx:1.15.1", "imageID": NGINX_ID, "ready": true, "restartCount": 0},
                {"name": "test-sidecar-1", "image": "test-image:v1", "imageID": TEST_IMAGE_V1_ID, "ready": true, "restartCount": 0},
                {"name": "test-sidecar-2", "image": HOT_EMPTY_IMAGE, "imageID": HOT_EMPTY_IMAGE_ID, "ready": true, "restartCount": 0}]}
    }))
    .unwrap()
}

#[test]
fn go_update_hot_upgrade_sidecar() {
    let s = hot_upgrade_sidecarset();
    let mut pods = vec![hot_upgrade_pod()];
    // (case, images of test-sidecar-1 and test-sidecar-2 afterwards, status, the container
    // status then reporting its new image)
    let cases = [
        (
            "sidecarset hot update test-sidecar container test-image:v2",
            ["test-image:v1", "test-image:v2"],
            [1, 0, 1, 0],
            None,
        ),
        (
            "test-sidecar-2 container is upgrading",
            ["test-image:v1", "test-image:v2"],
            [1, 1, 0, 0],
            Some((2, "test-image:v2", TEST_IMAGE_V2_ID)),
        ),
        (
            "test-sidecar-2 container upgrade complete, and reset test-sidecar-1 empty image",
            [HOT_EMPTY_IMAGE, "test-image:v2"],
            [1, 1, 0, 0],
            Some((1, HOT_EMPTY_IMAGE, HOT_EMPTY_IMAGE_ID)),
        ),
        (
            "sidecarset hot update test-sidecar container test-image:v2 complete",
            [HOT_EMPTY_IMAGE, "test-image:v2"],
            [1, 1, 1, 1],
            None,
        ),
    ];
    for (step, (name, [image1, image2], want, reported)) in cases.into_iter().enumerate() {
        let st = update_sidecarset(&s, &mut pods);
        assert_eq!(spec_image(&pods[0], "test-sidecar-1"), image1, "{name}");
        assert_eq!(spec_image(&pods[0], "test-sidecar-2"), image2, "{name}");
        assert_eq!(counts(&st), want, "{name}");
        // The annotations updatePodSidecarContainer and flipPodSidecarContainerDo write.
        let a = pods[0].metadata.annotations.as_ref().unwrap();
        let ann = |k: &str| a.get(k).map(String::as_str);
        assert_eq!(
            ann(keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER),
            Some(r#"{"test-sidecar":"test-sidecar-2"}"#),
            "{name}"
        );
        assert_eq!(
            ann("version.sidecarset.kruise.io/test-sidecar-2"),
            Some("22"),
            "{name}"
        );
        assert_eq!(
            ann("versionalt.sidecarset.kruise.io/test-sidecar-1"),
            Some("22"),
            "{name}"
        );
        let flipped = step >= 2;
        assert_eq!(
            ann("version.sidecarset.kruise.io/test-sidecar-1"),
            Some(if flipped { "0" } else { "1" }),
            "{name}"
        );
        assert_eq!(
            ann("versionalt.sidecarset.kruise.io/test-sidecar-2"),
            Some(if flipped { "0" } else { "1" }),
            "{name}"
        );
        if let Some((i, image, id)) = reported {
            report_new_image(&mut pods[0], i, image, id);
        }
    }
}

#[test]
fn a_sidecar_named_as_an_init_container_is_upgraded_there_as_go_util_get_container() {
    let s = controller_sidecarset(json!({}));
    let mut p = controller_pod();
    let spec = p.spec.as_mut().unwrap();
    let sidecar = spec.containers.remove(1);
    spec.init_containers = Some(vec![sidecar]);
    let changed = upgrade_pod(&s, &mut p, now());
    assert_eq!(changed, vec!["test-sidecar".to_string()]);
    assert_eq!(
        p.spec.as_ref().unwrap().init_containers.as_ref().unwrap()[0]
            .image
            .as_deref(),
        Some("test-image:v2")
    );
}

#[test]
fn a_missing_hot_upgrade_container_is_never_ready_as_go_zero_container() {
    let s = hot_upgrade_sidecarset();
    let sidecar = &control::containers(&s)[0];
    let mut p = hot_upgrade_pod();
    p.metadata.annotations.as_mut().unwrap().insert(
        keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER.into(),
        r#"{"test-sidecar":"test-sidecar-2"}"#.into(),
    );
    // test-sidecar-1 is gone from the spec (its status stays, ready); test-sidecar-2 is busy
    // and not ready.
    let spec = p.spec.as_mut().unwrap();
    spec.containers.remove(1);
    spec.containers[1].image = Some("test-image:v1".into());
    let statuses = p
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap();
    statuses.remove(2);
    // Go looks the status of the zero container up by its empty name: not ready, so neither
    // is ready and the idle one by the annotation is chosen.
    assert_eq!(
        find_container_to_hot_upgrade(&s, sidecar, &p),
        ("test-sidecar-1".to_string(), "test-sidecar-2".to_string())
    );
}

#[test]
fn upgradable_condition_keeps_every_message_value_as_go_map_of_interfaces() {
    let with_message = |m: &str| -> CachedPod {
        serde_json::from_value(json!({"status": {"conditions": [
            {"type": "SidecarSetUpgradable", "status": "True", "message": m}]}}))
        .unwrap()
    };
    let c = upgradable_condition(
        &with_message(r#"{"b":true,"other":"x","n":1.50}"#),
        SIDECARSET,
        true,
        now(),
    )
    .unwrap();
    assert_eq!(c.status, "True");
    assert_eq!(
        c.message.as_deref(),
        Some(r#"{"b":true,"n":1.5,"other":"x","test-sidecarset":true}"#)
    );
    let c = upgradable_condition(&with_message(r#"{"b":false}"#), SIDECARSET, true, now()).unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("False", Some("UpdateImmutableField"))
    );
    // GetMessageKvFromCondition fails: no patch.
    assert!(upgradable_condition(&with_message("not json"), SIDECARSET, true, now()).is_none());
    // A new condition.
    let c = upgradable_condition(&CachedPod::default(), SIDECARSET, false, now()).unwrap();
    assert_eq!(
        (c.status.as_str(), c.message.as_deref()),
        ("False", Some(r#"{"test-sidecarset":false}"#))
    );
}
