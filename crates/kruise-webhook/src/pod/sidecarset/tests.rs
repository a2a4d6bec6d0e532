use super::*;
use serde_json::{Value, json};

fn ss(v: Value) -> Arc<SidecarSet> {
    Arc::new(serde_json::from_value(v).unwrap())
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn opts() -> inject::InjectOptions {
    inject::InjectOptions {
        sort_containers_by_name: false,
        now: jiff::Timestamp::from_second(1_764_100_000).unwrap(),
    }
}

fn base_sidecarset(name: &str) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name, "annotations": {
            "kruise.io/sidecarset-hash": format!("{name}-hash"),
            "kruise.io/sidecarset-hash-without-image": format!("{name}-w")}},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "containers": [
                {"name": "before", "image": "busybox", "podInjectPolicy": "BeforeAppContainer",
                 "volumeMounts": [{"name": "v1", "mountPath": "/v1"}]},
                {"name": "after", "image": "busybox", "podInjectPolicy": "AfterAppContainer"}
            ],
            "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "unused", "emptyDir": {}}],
            "imagePullSecrets": [{"name": "s1"}, {"name": "shared"}]
        },
        "status": {"latestRevision": format!("{name}-rev"), "matchedPods": 0, "updatedPods": 0, "readyPods": 0}
    })
}

fn app_pod() -> Pod {
    pod(json!({
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "nginx"}},
        "spec": {
            "containers": [{"name": "main", "image": "nginx"}],
            "volumes": [{"name": "v1", "hostPath": {"path": "/pod-wins"}}],
            "imagePullSecrets": [{"name": "shared"}]
        }
    }))
}

#[test]
fn injects_containers_volumes_secrets_and_annotations() {
    let view = SidecarSetView {
        sidecarsets: vec![ss(base_sidecarset("ss"))],
        namespace_labels: Some(BTreeMap::new()),
        revisions: vec![],
    };
    let mut p = app_pod();
    assert!(!mutate(&mut p, &view, opts(), &mut || 0.5).unwrap());
    let spec = p.spec.as_ref().unwrap();
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["before", "main", "after"]);
    let env = spec.containers[0].env.as_ref().unwrap();
    assert_eq!(env[0].name, "IS_INJECTED");
    assert_eq!(env[0].value.as_deref(), Some("true"));
    // The pod's own volume of the same name wins; unused SidecarSet volumes are not added.
    let vols = spec.volumes.as_ref().unwrap();
    assert_eq!(vols.len(), 1);
    assert!(vols[0].host_path.is_some());
    let secrets: Vec<&str> = spec
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(secrets, ["shared", "s1"]);
    let a = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(a["kruise.io/sidecarset-injected-list"], "ss");
    assert_eq!(
        a["kruise.io/sidecarset-hash"],
        r#"{"ss":{"updateTimestamp":"2025-11-25T19:46:40Z","hash":"ss-hash","sidecarSetName":"ss","sidecarList":["after","before"],"controllerRevision":"ss-rev"}}"#
    );
    assert_eq!(
        a["kruise.io/sidecarset-hash-without-image"],
        r#"{"ss":{"updateTimestamp":"2025-11-25T19:46:40Z","hash":"ss-w","sidecarSetName":"ss","sidecarList":["after","before"]}}"#
    );
}

#[test]
fn namespace_selector_and_paused_injection_keep_pods_untouched() {
    let mut pinned = base_sidecarset("pinned");
    pinned["spec"]["namespaceSelector"] =
        json!({"matchLabels": {"kubernetes.io/metadata.name": "other"}});
    let mut labelled = base_sidecarset("labelled");
    labelled["spec"]["namespaceSelector"] = json!({"matchLabels": {"env": "prod"}});
    let mut paused = base_sidecarset("paused");
    paused["spec"]["injectionStrategy"] = json!({"paused": true});
    let view = SidecarSetView {
        sidecarsets: vec![ss(pinned), ss(labelled), ss(paused)],
        namespace_labels: Some(BTreeMap::from([("env".into(), "dev".into())])),
        revisions: vec![],
    };
    let mut p = app_pod();
    let before = p.clone();
    assert!(mutate(&mut p, &view, opts(), &mut || 0.5).unwrap());
    assert_eq!(p, before);
}

#[test]
fn hot_upgrade_sidecars_are_injected_as_a_pair() {
    let mut s = base_sidecarset("hot");
    s["spec"]["containers"] = json!([{"name": "mesh", "image": "mesh:1",
        "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}]);
    let view = SidecarSetView {
        sidecarsets: vec![ss(s)],
        namespace_labels: Some(BTreeMap::new()),
        revisions: vec![],
    };
    let mut p = app_pod();
    mutate(&mut p, &view, opts(), &mut || 0.5).unwrap();
    let spec = p.spec.as_ref().unwrap();
    let c: Vec<(&str, &str)> = spec
        .containers
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or("")))
        .collect();
    // No podInjectPolicy (the SidecarSet webhook's default is not applied here): after the app.
    assert_eq!(
        c,
        [
            ("main", "nginx"),
            ("mesh-1", "mesh:1"),
            ("mesh-2", "empty:1")
        ]
    );
    let env: Vec<&str> = spec.containers[2]
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        env,
        [
            "IS_INJECTED",
            "SIDECARSET_VERSION",
            "SIDECARSET_VERSION_ALT"
        ]
    );
    let a = p.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        a["kruise.io/sidecarset-working-hotupgrade-container"],
        r#"{"mesh":"mesh-1"}"#
    );
    assert_eq!(a["version.sidecarset.kruise.io/mesh-1"], "1");
    assert_eq!(a["versionalt.sidecarset.kruise.io/mesh-2"], "1");
}

#[test]
fn a_pinned_custom_version_injects_that_revision() {
    let mut old = base_sidecarset("cv");
    old["spec"]["containers"][0]["image"] = json!("busybox:old");
    old["spec"]["customVersion"] = json!("v1");
    let old: SidecarSet = serde_json::from_value(old).unwrap();
    let rev = Arc::new(revision::new_revision(&old, "kruise-system", 1, 0).unwrap());
    let mut cur = base_sidecarset("cv");
    cur["spec"]["injectionStrategy"] =
        json!({"revision": {"customVersion": "v1", "policy": "Always"}});
    let view = SidecarSetView {
        sidecarsets: vec![ss(cur.clone())],
        namespace_labels: Some(BTreeMap::new()),
        revisions: vec![rev.clone()],
    };
    let mut p = app_pod();
    mutate(&mut p, &view, opts(), &mut || 0.5).unwrap();
    assert_eq!(
        p.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("busybox:old")
    );
    let spec = control::pod_upgrade_spec(&p, "cv", "kruise.io/sidecarset-hash");
    assert_eq!(spec.controller_revision, rev.metadata.name.clone().unwrap());
    // Pinned to a version that has no revision: the create is refused.
    cur["spec"]["injectionStrategy"] = json!({"revision": {"customVersion": "v9"}});
    let view = SidecarSetView {
        sidecarsets: vec![ss(cur)],
        namespace_labels: Some(BTreeMap::new()),
        revisions: vec![rev],
    };
    let err = mutate(&mut app_pod(), &view, opts(), &mut || 0.5).unwrap_err();
    assert_eq!(err, "ControllerRevision.apps \"cv\" not found");
}

#[test]
fn partial_policy_draws_against_the_partition() {
    let mut old = base_sidecarset("pp");
    old["spec"]["containers"][0]["image"] = json!("busybox:old");
    let old: SidecarSet = serde_json::from_value(old).unwrap();
    let rev = Arc::new(revision::new_revision(&old, "kruise-system", 1, 0).unwrap());
    let mut cur = base_sidecarset("pp");
    cur["spec"]["injectionStrategy"] = json!({"revision": {
        "revisionName": rev.metadata.name.clone().unwrap(), "policy": "Partial"}});
    cur["spec"]["updateStrategy"] = json!({"partition": "30%"});
    let view = SidecarSetView {
        sidecarsets: vec![ss(cur)],
        namespace_labels: Some(BTreeMap::new()),
        revisions: vec![rev],
    };
    let image = |draw: f64| {
        let mut p = app_pod();
        mutate(&mut p, &view, opts(), &mut || draw).unwrap();
        p.spec.unwrap().containers[0].image.clone().unwrap()
    };
    assert_eq!(image(0.2), "busybox:old");
    assert_eq!(image(0.5), "busybox");
}

// ---------------------------------------------------------------------------------------------
// The matching and revision cases of OpenKruise v1.9.0's
// `pkg/webhook/pod/mutating/sidecarset_test.go`. Go's fake client holds the SidecarSets and
// ControllerRevisions and no Namespace (so a `namespaceSelector` never matches); the view here
// holds the same. Injection itself is checked case by case in
// `kruise_engines::sidecarset::inject`'s tests.

/// The namespace OpenKruise's webhook reads revisions from (`webhookutil.GetNamespace()`).
const KRUISE_NS: &str = "kruise-system";

fn go_view(sets: Vec<Value>, revisions: Vec<Value>) -> SidecarSetView {
    SidecarSetView {
        sidecarsets: sets
            .into_iter()
            .map(|mut v| {
                v["apiVersion"] = json!("apps.kruise.io/v1beta1");
                v["kind"] = json!("SidecarSet");
                ss(v)
            })
            .collect(),
        namespace_labels: None,
        revisions: revisions
            .into_iter()
            .map(|v| Arc::new(serde_json::from_value(v).unwrap()))
            .collect(),
    }
}

fn go_sidecar_set1() -> Value {
    json!({
        "metadata": {"name": "sidecarset1", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "c4k2dbb95d"}},
        "spec": {
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "initContainers": [
                {"name": "init-2", "image": "busybox:1.0.0"},
                {"name": "init-1", "image": "busybox:1.0.0"}
            ],
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0", "podInjectPolicy": "BeforeAppContainer",
                 "shareVolumePolicy": {"type": "disabled"}},
                {"name": "log-agent", "image": "log-agent-image:1.0", "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "disabled"}}
            ]
        }
    })
}

fn go_sidecarset_with_transfer_env() -> Value {
    json!({
        "metadata": {"name": "sidecarset2", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "c4k2dbb95d"}},
        "spec": {
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "initContainers": [
                {"name": "dns-e", "image": "dns-e-image:1.0",
                 "volumeMounts": [{"name": "volume-1", "mountPath": ""}],
                 "podInjectPolicy": "BeforeAppContainer",
                 "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}
            ],
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0",
                 "volumeMounts": [{"name": "volume-1", "mountPath": ""}],
                 "podInjectPolicy": "BeforeAppContainer",
                 "shareVolumePolicy": {"type": "disabled"},
                 "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}
            ],
            "volumes": [{"name": "volume-1"}, {"name": "volume-2"}]
        }
    })
}

fn go_sidecar_set3() -> Value {
    json!({
        "metadata": {"name": "sidecarset3", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "gm967682cm"}},
        "spec": {
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0",
                 "volumeMounts": [
                     {"name": "volume-1", "mountPath": "/a/b/c"},
                     {"name": "volume-2", "mountPath": "/d/e/f"}],
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "enabled"}},
                {"name": "log-agent", "image": "log-agent-image:1.0",
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "disabled"}}
            ],
            "volumes": [{"name": "volume-1"}, {"name": "volume-2"}]
        }
    })
}

fn go_pod1() -> Pod {
    pod(json!({
        "metadata": {"name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"}},
        "spec": {
            "initContainers": [{"name": "init-0", "image": "busybox:1.0.0"}],
            "containers": [{
                "name": "nginx", "image": "nginx:1.15.1",
                "env": [{"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"}],
                "volumeMounts": [
                    {"name": "volume-a", "mountPath": "/a/b"},
                    {"name": "volume-b", "mountPath": "/e/f"}
                ]
            }],
            "volumes": [{"name": "volume-a"}, {"name": "volume-b"}]
        }
    }))
}

fn names(containers: Option<&Vec<k8s_openapi::api::core::v1::Container>>) -> Vec<String> {
    containers
        .into_iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect()
}

/// A SidecarSet ControllerRevision in the manager's namespace, as Go's tests write them.
fn go_revision(name: &str, owner: &str, custom_version: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"namespace": KRUISE_NS, "name": name, "labels": {
            "kruise.io/sidecarset-name": owner,
            "apps.kruise.io/sidecarset-custom-version": custom_version}},
        "data": {"spec": spec},
        "revision": 0
    })
}

#[test]
fn go_pod_has_no_matched_sidecarset() {
    let view = go_view(vec![go_sidecar_set1()], vec![]);
    let mut p = go_pod1();
    p.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("app".into(), "doesnt-match".into());
    let before = p.clone();
    assert!(mutate(&mut p, &view, opts(), &mut || 0.5).unwrap());
    assert_eq!(p, before);
}

#[test]
fn go_injection_strategy_paused() {
    let mut s = go_sidecar_set1();
    s["spec"]["injectionStrategy"] = json!({"paused": true});
    let view = go_view(vec![s], vec![]);
    let mut p = go_pod1();
    let before = p.clone();
    assert!(mutate(&mut p, &view, opts(), &mut || 0.5).unwrap());
    assert_eq!(p, before);
}

#[test]
fn go_injection_strategy_revision() {
    let mut s = go_sidecar_set1();
    s["spec"]["injectionStrategy"] =
        json!({"revision": {"customVersion": "sidecarset1-12345", "policy": "Always"}});
    // json.Marshal of Go's []SidecarContainer: `resources`, `upgradeStrategy` and
    // `shareVolumePolicy` are always written.
    let recorded = json!({
        "$patch": "replace",
        "initContainers": [{"name": "init-2", "image": "busybox:1.0.0", "resources": {},
            "upgradeStrategy": {}, "shareVolumePolicy": {}}],
        "containers": [{"name": "dns-f", "image": "dns-f-image:1.0", "resources": {},
            "podInjectPolicy": "BeforeAppContainer", "upgradeStrategy": {},
            "shareVolumePolicy": {"type": "disabled"}}]
    });
    let view = go_view(
        vec![s],
        vec![go_revision(
            "sidecarset1-12345",
            "sidecarset1",
            "sidecarset1-12345",
            recorded,
        )],
    );
    let mut p = go_pod1();
    assert!(!mutate(&mut p, &view, opts(), &mut || 0.5).unwrap());
    // The revision's one init container and one container, not the SidecarSet's two and two.
    let spec = p.spec.as_ref().unwrap();
    assert_eq!(names(spec.init_containers.as_ref()), ["init-0", "init-2"]);
    assert_eq!(names(Some(&spec.containers)), ["dns-f", "nginx"]);
    let upgrade = control::pod_upgrade_spec(&p, "sidecarset1", "kruise.io/sidecarset-hash");
    assert_eq!(upgrade.controller_revision, "sidecarset1-12345");
    assert_eq!(upgrade.sidecar_list, Some(vec!["dns-f".to_string()]));
    // The revision has no hash annotations: the hash is the restored SidecarSet's own.
    assert_ne!(upgrade.hash, "c4k2dbb95d");
    assert!(!upgrade.hash.is_empty());
}

/// (name, canary pod, SidecarSet, history present, Ok(image) / Err(message))
type CanaryCase = (
    &'static str,
    bool,
    Value,
    bool,
    Result<&'static str, &'static str>,
);

#[test]
fn go_canary_sidecarset_injection() {
    const STABLE: &str = "sidecar-image:stable";
    const CANARY: &str = "sidecar-image:canary";
    let sidecarset = || {
        json!({
            "metadata": {"name": "sidecarset1"},
            "spec": {
                "selector": {"matchLabels": {"app": "demo"}},
                "containers": [{"name": "sidecar", "image": CANARY}],
                "updateStrategy": {"selector": {"matchLabels": {"canary": "true"}}},
                "injectionStrategy": {"revision": {
                    "customVersion": "sidecarset1-12345", "policy": "Partial"}}
            }
        })
    };
    let revision = go_revision(
        "sidecarset1-12345",
        "sidecarset1",
        "sidecarset1-12345",
        json!({"$patch": "replace", "containers": [{"name": "sidecar", "image": STABLE,
            "resources": {}, "upgradeStrategy": {}, "shareVolumePolicy": {}}]}),
    );
    let app_pod = |canary: bool| {
        let mut labels = json!({"app": "demo"});
        if canary {
            labels["canary"] = json!("true");
        }
        pod(json!({
            "metadata": {"name": "test-pod", "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "demo"}]}
        }))
    };
    let with_strategy = |f: fn(&mut Value)| {
        let mut s = sidecarset();
        f(&mut s["spec"]["updateStrategy"]);
        s
    };
    let cases: Vec<CanaryCase> = vec![
        ("stable pod", false, sidecarset(), true, Ok(STABLE)),
        (
            "canary without partition",
            true,
            sidecarset(),
            true,
            Ok(CANARY),
        ),
        (
            "canary with partition 100%",
            true,
            with_strategy(|u| u["partition"] = json!("100%")),
            true,
            Ok(STABLE),
        ),
        (
            "canary with partition 0%",
            true,
            with_strategy(|u| u["partition"] = json!("0%")),
            true,
            Ok(CANARY),
        ),
        (
            "canary with bad partition",
            true,
            with_strategy(|u| u["partition"] = json!("abc%")),
            true,
            Err(r#"strconv.ParseFloat: parsing "abc": invalid syntax"#),
        ),
        (
            "canary no history",
            true,
            sidecarset(),
            false,
            Err(r#"ControllerRevision.apps "sidecarset1" not found"#),
        ),
        (
            "canary with bad selector",
            true,
            with_strategy(|u| {
                u["selector"] =
                    json!({"matchExpressions": [{"key": "somekey", "operator": "badOp"}]})
            }),
            true,
            Err(r#""badOp" is not a valid pod selector operator"#),
        ),
        (
            "canary paused",
            true,
            with_strategy(|u| {
                u["partition"] = json!("0%");
                u["paused"] = json!(true);
            }),
            true,
            Ok(STABLE),
        ),
    ];
    for (name, canary, s, history, expected) in cases {
        let revisions = if history {
            vec![revision.clone()]
        } else {
            vec![]
        };
        let view = go_view(vec![s], revisions);
        // Go draws rand.Float64(): every draw in (0, 1) gives the same answer here.
        for draw in [1e-9, 0.5, 0.999_999] {
            let mut p = app_pod(canary);
            match (mutate(&mut p, &view, opts(), &mut || draw), expected) {
                (Ok(_), Ok(image)) => {
                    let containers = &p.spec.as_ref().unwrap().containers;
                    assert_eq!(containers.len(), 2, "{name}");
                    assert_eq!(containers[1].image.as_deref(), Some(image), "{name}");
                }
                (Err(e), Err(message)) => assert_eq!(e, message, "{name}"),
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
    }
}

#[test]
fn go_sidecarset_hash_inject() {
    let mut s1 = go_sidecar_set1();
    s1["spec"]["selector"]["matchLabels"]["app"] = json!("doesnt-match");
    let view = go_view(
        vec![s1, go_sidecarset_with_transfer_env(), go_sidecar_set3()],
        vec![],
    );
    let mut p = go_pod1();
    mutate(&mut p, &view, opts(), &mut || 0.5).unwrap();
    assert_eq!(
        control::pod_sidecarset_revision(&p, "sidecarset2"),
        "c4k2dbb95d"
    );
    assert_eq!(
        control::pod_sidecarset_revision(&p, "sidecarset3"),
        "gm967682cm"
    );
    assert_eq!(control::pod_sidecarset_revision(&p, "sidecarset1"), "");
    assert_eq!(
        p.metadata.annotations.as_ref().unwrap()["kruise.io/sidecarset-injected-list"],
        "sidecarset2,sidecarset3"
    );
}

#[test]
fn go_sidecarset_name_inject() {
    let view = go_view(vec![go_sidecar_set1(), go_sidecar_set3()], vec![]);
    let mut p = go_pod1();
    mutate(&mut p, &view, opts(), &mut || 0.5).unwrap();
    assert_eq!(
        p.metadata.annotations.as_ref().unwrap()["kruise.io/sidecarset-injected-list"],
        "sidecarset1,sidecarset3"
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours the Go tests leave open.

#[test]
fn each_sidecarset_is_matched_then_resolved_in_turn() {
    // OpenKruise resolves a matching SidecarSet's revision before it looks at the next one, and
    // lists SidecarSets pinned to the pod's namespace before cluster-scoped ones: the pinned
    // SidecarSet's missing revision is the error, not the later one's invalid selector.
    let mut pinned = go_sidecar_set1();
    pinned["metadata"]["name"] = json!("z-pinned");
    pinned["spec"]["namespaceSelector"] =
        json!({"matchLabels": {"kubernetes.io/metadata.name": "default"}});
    pinned["spec"]["injectionStrategy"] = json!({"revision": {"revisionName": "missing"}});
    let mut broken = go_sidecar_set1();
    broken["metadata"]["name"] = json!("a-broken");
    broken["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "in"}]});
    let mut view = go_view(vec![broken, pinned], vec![]);
    view.namespace_labels = Some(BTreeMap::from([(
        "kubernetes.io/metadata.name".to_string(),
        "default".to_string(),
    )]));
    let err = mutate(&mut go_pod1(), &view, opts(), &mut || 0.5).unwrap_err();
    assert_eq!(err, r#"controllerrevisions.apps "missing" not found"#);
    // Without the pinned one, the invalid selector is reported in Go's words (`%q`).
    view.sidecarsets.retain(|s| control::name(s) == "a-broken");
    let err = mutate(&mut go_pod1(), &view, opts(), &mut || 0.5).unwrap_err();
    assert_eq!(err, r#""in" is not a valid pod selector operator"#);
    let mut odd = go_sidecar_set1();
    odd["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "é\t"}]});
    let err = mutate(
        &mut go_pod1(),
        &go_view(vec![odd], vec![]),
        opts(),
        &mut || 0.5,
    )
    .unwrap_err();
    assert_eq!(err, "\"é\\t\" is not a valid pod selector operator");
}

#[test]
fn every_partial_sidecarset_draws_once() {
    // Two SidecarSets under a Partial policy with a percentage each draw their own number (Go
    // calls rand.Float64() per SidecarSet); an integer partition draws nothing.
    let make = |name: &str, partition: Value| {
        let mut old = base_sidecarset(name);
        old["spec"]["containers"][0]["image"] = json!("busybox:old");
        let old: SidecarSet = serde_json::from_value(old).unwrap();
        let rev = revision::new_revision(&old, KRUISE_NS, 1, 0).unwrap();
        let mut cur = base_sidecarset(name);
        cur["spec"]["injectionStrategy"] = json!({"revision": {
            "revisionName": rev.metadata.name.clone().unwrap(), "policy": "Partial"}});
        cur["spec"]["updateStrategy"] = json!({"partition": partition});
        (cur, serde_json::to_value(rev).unwrap())
    };
    let (a, ra) = make("a", json!("50%"));
    let (b, rb) = make("b", json!("50%"));
    let (c, rc) = make("c", json!(1));
    let mut view = go_view(vec![a, b, c], vec![ra, rb, rc]);
    // base_sidecarset selects app=nginx.
    view.namespace_labels = Some(BTreeMap::new());
    let mut draws = vec![0.8, 0.2].into_iter();
    let mut calls = 0;
    let mut p = app_pod();
    mutate(&mut p, &view, opts(), &mut || {
        calls += 1;
        draws.next().unwrap()
    })
    .unwrap();
    assert_eq!(calls, 2);
    let images: Vec<(&str, &str)> = p
        .spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .filter(|c| c.name == "before")
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap()))
        .collect();
    // a: 0.8 > 50% → latest; b: 0.2 ≤ 50% → pinned; c: integer partition → latest.
    assert_eq!(
        images,
        [
            ("before", "busybox"),
            ("before", "busybox:old"),
            ("before", "busybox")
        ]
    );
}

#[test]
fn partition_percentages_parse_as_gos_parse_float() {
    let pinned = |partition: &str| {
        let mut s = go_sidecar_set1();
        s["spec"]["injectionStrategy"] =
            json!({"revision": {"revisionName": "r", "policy": "Partial"}});
        s["spec"]["updateStrategy"] = json!({"partition": partition});
        s["apiVersion"] = json!("apps.kruise.io/v1beta1");
        s["kind"] = json!("SidecarSet");
        serde_json::from_value::<SidecarSet>(s).unwrap()
    };
    let rev: Arc<ControllerRevision> = Arc::new(
        serde_json::from_value(go_revision(
            "r",
            "sidecarset1",
            "",
            json!({"$patch": "replace"}),
        ))
        .unwrap(),
    );
    let resolve = |partition: &str| {
        suitable_revision(
            &pinned(partition),
            &go_pod1(),
            std::slice::from_ref(&rev),
            &mut || 0.5,
        )
        .map(|s| s.into_owned().status.and_then(|st| st.latest_revision))
    };
    // 60% > 0.5: the pinned revision; 40%: the latest.
    assert_eq!(resolve("60%"), Ok(Some("r".to_string())));
    assert_eq!(resolve("40%"), Ok(None));
    assert_eq!(resolve("Infinity%"), Ok(Some("r".to_string())));
    let nines = "9".repeat(400);
    assert_eq!(
        resolve(&format!("{nines}%")),
        Err(format!(
            "strconv.ParseFloat: parsing \"{nines}\": value out of range"
        ))
    );
    assert_eq!(
        resolve("60"),
        Err("invalid type: string is not a percentage".to_string())
    );
}
