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
    assert!(!mutate(&mut p, &view, opts(), 0.5).unwrap());
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
    assert!(mutate(&mut p, &view, opts(), 0.5).unwrap());
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
    mutate(&mut p, &view, opts(), 0.5).unwrap();
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
    mutate(&mut p, &view, opts(), 0.5).unwrap();
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
    let err = mutate(&mut app_pod(), &view, opts(), 0.5).unwrap_err();
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
        mutate(&mut p, &view, opts(), draw).unwrap();
        p.spec.unwrap().containers[0].image.clone().unwrap()
    };
    assert_eq!(image(0.2), "busybox:old");
    assert_eq!(image(0.5), "busybox");
}
