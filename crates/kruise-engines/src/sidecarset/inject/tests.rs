//! The injection cases of OpenKruise v1.9.0's `pkg/webhook/pod/mutating/sidecarset_test.go`,
//! `sidecarset_hotupgrade_test.go` and `sidecarset_resources_test.go` (`applyResourcesPolicy` and
//! `getTargetContainers` as injection applies them), run against [`inject`], `build_sidecars` and
//! `merge_sidecar_containers`; then the behaviours those tests leave open.
//!
//! Go runs most cases through `sidecarsetMutatingPod` with a fake client holding the
//! SidecarSets; every SidecarSet there matches the pod and pins no revision, so the matched
//! list is those SidecarSets (by name, the order the webhook step uses). Matching and revision
//! cases are in `kruise-webhook`'s `pod::sidecarset` tests.
//!
//! Expected values are written out as OpenKruise computes them (whole containers, volumes and
//! annotations), where the Go tests often check only a part.

use super::*;
use serde_json::{Value, json};

/// The clock of every injection here, and the `updateTimestamp` Go writes for it.
const NOW: i64 = 1_700_000_000;
const TS: &str = "2023-11-14T22:13:20Z";

const HASH: &str = "kruise.io/sidecarset-hash";
const HASH_WITHOUT_IMAGE: &str = "kruise.io/sidecarset-hash-without-image";
const LIST: &str = "kruise.io/sidecarset-injected-list";
const WORKING: &str = "kruise.io/sidecarset-working-hotupgrade-container";

fn set(mut v: Value) -> SidecarSet {
    v["apiVersion"] = json!("apps.kruise.io/v1beta1");
    v["kind"] = json!("SidecarSet");
    serde_json::from_value(v).unwrap()
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn to_json<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

fn opts() -> InjectOptions {
    InjectOptions {
        sort_containers_by_name: false,
        now: jiff::Timestamp::from_second(NOW).unwrap(),
    }
}

/// `sidecarsetMutatingPod` on a create once the SidecarSets are matched: the pod and `skip`.
fn run(p: &Pod, sets: &[SidecarSet]) -> (Pod, bool) {
    let mut out = p.clone();
    let skip = inject(&mut out, sets, opts()).unwrap();
    (out, skip)
}

fn annotations(p: &Pod) -> BTreeMap<String, String> {
    p.metadata.annotations.clone().unwrap_or_default()
}

/// One entry of Go's upgrade-spec annotation, written from the Go struct's field order.
struct Spec<'a> {
    name: &'a str,
    hash: &'a str,
    list: &'a [&'a str],
    revision: &'a str,
}

/// `json.Marshal(map[string]SidecarSetUpgradeSpec)` for entries stamped with [`TS`].
fn upgrade_specs(entries: &[Spec<'_>]) -> String {
    let mut sorted: Vec<&Spec<'_>> = entries.iter().collect();
    sorted.sort_by_key(|s| s.name);
    let body: Vec<String> = sorted
        .iter()
        .map(|s| {
            let list: Vec<String> = s.list.iter().map(|n| format!("\"{n}\"")).collect();
            let revision = if s.revision.is_empty() {
                String::new()
            } else {
                format!(",\"controllerRevision\":\"{}\"", s.revision)
            };
            format!(
                "\"{}\":{{\"updateTimestamp\":\"{TS}\",\"hash\":\"{}\",\"sidecarSetName\":\"{}\",\"sidecarList\":[{}]{revision}}}",
                s.name,
                s.hash,
                s.name,
                list.join(",")
            )
        })
        .collect();
    format!("{{{}}}", body.join(","))
}

fn is_injected() -> Value {
    json!({"name": "IS_INJECTED", "value": "true"})
}

fn version_env(container: &str) -> [Value; 2] {
    [
        json!({"name": "SIDECARSET_VERSION", "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.annotations['version.sidecarset.kruise.io/{container}']")}}}),
        json!({"name": "SIDECARSET_VERSION_ALT", "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.annotations['versionalt.sidecarset.kruise.io/{container}']")}}}),
    ]
}

// ---------------------------------------------------------------------------------------------
// The Go fixtures (package variables of sidecarset_test.go).

fn sidecar_set1() -> Value {
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

fn sidecar_set_with_init_container() -> Value {
    json!({
        "metadata": {"name": "sidecarset", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "c4k2dbb95d"}},
        "spec": {
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "initContainers": [
                {"name": "dns-e", "image": "dns-e-image:1.0",
                 "volumeMounts": [{"name": "volume-1", "mountPath": ""}],
                 "transferEnv": [{"sourceContainerName": "nginx", "envName": "hello2"}]}
            ],
            "volumes": [{"name": "volume-1"}]
        }
    })
}

fn sidecarset_with_transfer_env() -> Value {
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

fn sidecar_set_with_staragent() -> Value {
    json!({
        "metadata": {"name": "sidecarset3", "labels": {},
            "annotations": {"kruise.io/sidecarset-hash": "gm967682cm"}},
        "spec": {
            "selector": {"matchLabels": {"app": "suxing-test"}},
            "initContainers": [
                {"name": "dns-e", "image": "dns-e-image:1.0",
                 "volumeMounts": [
                     {"name": "volume-3", "mountPath": "/g/h/i"},
                     {"name": "volume-4", "mountPath": "/j/k/l"},
                     {"name": "volume-staragent", "mountPath": "/staragent"}],
                 "podInjectPolicy": "BeforeAppContainer",
                 "shareVolumePolicy": {"type": "enabled"}}
            ],
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0",
                 "volumeMounts": [
                     {"name": "volume-1", "mountPath": "/a/b/c"},
                     {"name": "volume-2", "mountPath": "/d/e/f"},
                     {"name": "volume-staragent", "mountPath": "/staragent"}],
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "enabled"}},
                {"name": "staragent", "image": "staragent-image:1.0",
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "enabled"}},
                {"name": "log-agent", "image": "log-agent-image:1.0",
                 "podInjectPolicy": "AfterAppContainer",
                 "shareVolumePolicy": {"type": "disabled"}}
            ],
            "volumes": [
                {"name": "volume-1"}, {"name": "volume-2"}, {"name": "volume-staragent"},
                {"name": "volume-3"}, {"name": "volume-4"}
            ]
        }
    })
}

fn nginx() -> Value {
    json!({
        "name": "nginx", "image": "nginx:1.15.1",
        "env": [{"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"}],
        "volumeMounts": [
            {"name": "volume-a", "mountPath": "/a/b"},
            {"name": "volume-b", "mountPath": "/e/f"}
        ]
    })
}

fn pod1() -> Value {
    json!({
        "metadata": {"name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"}},
        "spec": {
            "initContainers": [{"name": "init-0", "image": "busybox:1.0.0"}],
            "containers": [nginx()],
            "volumes": [{"name": "volume-a"}, {"name": "volume-b"}]
        }
    })
}

fn pod_with_staragent() -> Value {
    let mut app = nginx();
    app["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "volume-staragent", "mountPath": "/staragent"}));
    json!({
        "metadata": {"name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"}},
        "spec": {
            "containers": [app],
            "volumes": [{"name": "volume-a"}, {"name": "volume-b"}, {"name": "volume-staragent"}]
        }
    })
}

// ---------------------------------------------------------------------------------------------
// TestMergeSidecarSecrets

#[test]
fn go_merge_sidecar_secrets() {
    let secrets = |names: &[&str]| -> Value { names.iter().map(|n| json!({"name": n})).collect() };
    // (secrets of the SidecarSet, of the pod, merged): Go checks the count only.
    type Case<'a> = (&'a [&'a str], Option<&'a [&'a str]>, &'a [&'a str]);
    let cases: [Case<'_>; 4] = [
        (
            &["s0", "s1", "s2"],
            Some(&["s2", "s3", "s3"]),
            &["s2", "s3", "s0", "s1"],
        ),
        (
            &["s0", "s1", "s2"],
            Some(&["s3", "s4", "s5"]),
            &["s3", "s4", "s5", "s0", "s1", "s2"],
        ),
        (&["s0", "s1", "s2"], None, &["s0", "s1", "s2"]),
        (&[], Some(&["s3", "s4", "s5"]), &["s3", "s4", "s5"]),
    ];
    for (sidecar, in_pod, merged) in cases {
        let mut s = sidecar_set1();
        if !sidecar.is_empty() {
            s["spec"]["imagePullSecrets"] = secrets(sidecar);
        }
        let mut p = pod1();
        if let Some(in_pod) = in_pod {
            p["spec"]["imagePullSecrets"] = secrets(in_pod);
        }
        let (out, _) = run(&pod(p), &[set(s)]);
        assert_eq!(
            to_json(&out.spec.unwrap().image_pull_secrets),
            secrets(merged),
            "{sidecar:?} {in_pod:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// TestInjectMetadata

#[test]
fn go_inject_metadata() {
    let mut demo1 = sidecar_set1();
    demo1["spec"]["patchPodMetadata"] = json!([
        {"patchPolicy": "MergePatchJson", "annotations": {"key1": "{\"log-agent\":1}"}},
        {"patchPolicy": "Retain", "annotations": {"key": "envoy=1,log=2"}}
    ]);
    let mut demo2 = sidecar_set1();
    demo2["metadata"]["name"] = json!("sidecarset2");
    demo2["spec"]["patchPodMetadata"] = json!([
        {"patchPolicy": "MergePatchJson", "annotations": {"key1": "{\"envoy\":2}"}}
    ]);
    // The fake client's order is not the point: either order gives the same annotations.
    for sets in [
        [set(demo1.clone()), set(demo2.clone())],
        [set(demo2), set(demo1)],
    ] {
        let (out, skip) = run(&pod(pod1()), &sets);
        assert!(!skip);
        let a = annotations(&out);
        assert_eq!(a["key1"], r#"{"envoy":2,"log-agent":1}"#);
        assert_eq!(a["key"], "envoy=1,log=2");
        assert_eq!(a[LIST], "sidecarset1,sidecarset2");
    }
}

// ---------------------------------------------------------------------------------------------
// TestSidecarSetPodInjectPolicy

#[test]
fn go_sidecarset_pod_inject_policy() {
    let (out, skip) = run(&pod(pod1()), &[set(sidecar_set1())]);
    assert!(!skip);
    let sidecars: &[&str] = &["dns-f", "log-agent"];
    let expected = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"},
            "annotations": {
                HASH: upgrade_specs(&[Spec {name: "sidecarset1", hash: "c4k2dbb95d", list: sidecars, revision: ""}]),
                HASH_WITHOUT_IMAGE: upgrade_specs(&[Spec {name: "sidecarset1", hash: "", list: sidecars, revision: ""}]),
                LIST: "sidecarset1"
            }
        },
        "spec": {
            // Injected init containers are sorted by name, after the pod's.
            "initContainers": [
                {"name": "init-0", "image": "busybox:1.0.0"},
                {"name": "init-1", "image": "busybox:1.0.0", "env": [is_injected()]},
                {"name": "init-2", "image": "busybox:1.0.0", "env": [is_injected()]}
            ],
            "containers": [
                {"name": "dns-f", "image": "dns-f-image:1.0", "env": [is_injected()]},
                nginx(),
                {"name": "log-agent", "image": "log-agent-image:1.0", "env": [is_injected()]}
            ],
            "volumes": [{"name": "volume-a"}, {"name": "volume-b"}]
        }
    });
    assert_eq!(to_json(&out), expected);
}

// ---------------------------------------------------------------------------------------------
// TestSidecarVolumesAppend, TestSidecarSetTransferEnv

#[test]
fn go_sidecar_volumes_append() {
    let (out, _) = run(&pod(pod1()), &[set(sidecarset_with_transfer_env())]);
    let injected_env = json!([is_injected(), {"name": "hello2", "value": "world2"}]);
    let expected_spec = json!({
        // podInjectPolicy applies to init containers too: dns-e goes before the pod's.
        "initContainers": [
            {"name": "dns-e", "image": "dns-e-image:1.0",
             "volumeMounts": [{"name": "volume-1", "mountPath": ""}], "env": injected_env},
            {"name": "init-0", "image": "busybox:1.0.0"}
        ],
        "containers": [
            {"name": "dns-f", "image": "dns-f-image:1.0",
             "volumeMounts": [{"name": "volume-1", "mountPath": ""}], "env": injected_env},
            nginx()
        ],
        // volume-1 once (both sidecars mount it), volume-2 not at all (no sidecar mounts it).
        "volumes": [{"name": "volume-a"}, {"name": "volume-b"}, {"name": "volume-1"}]
    });
    assert_eq!(to_json(&out.spec), expected_spec);
    let a = annotations(&out);
    let sidecars: &[&str] = &["dns-f"];
    assert_eq!(
        a[HASH],
        upgrade_specs(&[Spec {
            name: "sidecarset2",
            hash: "c4k2dbb95d",
            list: sidecars,
            revision: ""
        }])
    );
    assert_eq!(a[LIST], "sidecarset2");
}

#[test]
fn go_sidecarset_transfer_env() {
    let mut s = sidecarset_with_transfer_env();
    s["spec"]["initContainers"][0]["podInjectPolicy"] = json!("");
    let (out, _) = run(&pod(pod1()), &[set(s)]);
    let spec = out.spec.unwrap();
    let init = spec.init_containers.unwrap();
    assert_eq!(init[0].name, "init-0");
    assert_eq!(
        to_json(&init[1].env),
        json!([is_injected(), {"name": "hello2", "value": "world2"}])
    );
    assert_eq!(
        to_json(&spec.containers[0].env),
        json!([is_injected(), {"name": "hello2", "value": "world2"}])
    );
}

// ---------------------------------------------------------------------------------------------
// TestPodSidecarSetHashCompatibility

#[test]
fn go_pod_sidecarset_hash_compatibility() {
    let mut p = pod1();
    p["metadata"]["annotations"] = json!({
        HASH: r#"{"sidecarset-test":"bv6d2fbw97wz8xx5x4v4wddwbd5z744wcf7c786dd4dvxvd5w6w424df7vx47989"}"#,
        HASH_WITHOUT_IMAGE: r#"{"sidecarset-test":"54x5977vf9zz4248w7v44456zf655b8bcffv7x74w88f6dwb994fw48b8f9b8959"}"#
    });
    let built = build_sidecars(&pod(p), &[], opts()).unwrap();
    // The older map[name]hash format is rewritten in the current one (no time, no list).
    let expected = BTreeMap::from([
        (
            HASH.to_string(),
            r#"{"sidecarset-test":{"updateTimestamp":null,"hash":"bv6d2fbw97wz8xx5x4v4wddwbd5z744wcf7c786dd4dvxvd5w6w424df7vx47989","sidecarSetName":"sidecarset-test","sidecarList":null}}"#.to_string(),
        ),
        (
            HASH_WITHOUT_IMAGE.to_string(),
            r#"{"sidecarset-test":{"updateTimestamp":null,"hash":"54x5977vf9zz4248w7v44456zf655b8bcffv7x74w88f6dwb994fw48b8f9b8959","sidecarSetName":"sidecarset-test","sidecarList":null}}"#.to_string(),
        ),
        (LIST.to_string(), String::new()),
    ]);
    assert_eq!(built.annotations, expected);
}

// ---------------------------------------------------------------------------------------------
// TestPodVolumeMountsAppend

#[test]
fn go_pod_volume_mounts_append() {
    let mut s = sidecar_set_with_staragent();
    // Only dns-f: /a/b/c, /d/e/f, /staragent.
    s["spec"]["containers"].as_array_mut().unwrap().truncate(1);
    let s = set(s);
    let shared = || {
        vec![
            json!({"name": "volume-a", "mountPath": "/a/b"}),
            json!({"name": "volume-b", "mountPath": "/e/f"}),
        ]
    };
    // (name, extra mount of the app, extra env of the app, env the sidecars get)
    let expansion = |expr: &str| json!({"name": "volume-expansion", "mountPath": "/e/expansion", "subPathExpr": expr});
    let cases = [
        ("append normal volumeMounts", None, vec![], vec![]),
        (
            "append volumeMounts SubPathExpr, volumes with expanded subpath",
            Some(expansion("foo/$(POD_NAME)/$(OD_NAME)/conf")),
            vec![
                json!({"name": "POD_NAME", "value": "bar"}),
                json!({"name": "OD_NAME", "value": "od_name"}),
            ],
            vec![
                json!({"name": "POD_NAME", "value": "bar"}),
                json!({"name": "OD_NAME", "value": "od_name"}),
            ],
        ),
        (
            "append volumeMounts SubPathExpr, subpath with no expansion",
            Some(expansion("foo")),
            vec![],
            vec![],
        ),
        (
            "append volumeMounts SubPathExpr, volumes expanded with empty subpath",
            Some(expansion("")),
            vec![],
            vec![],
        ),
    ];
    for (name, extra_mount, extra_env, sidecar_env) in cases {
        let mut p = pod_with_staragent();
        if let Some(m) = &extra_mount {
            p["spec"]["containers"][0]["volumeMounts"]
                .as_array_mut()
                .unwrap()
                .push(m.clone());
        }
        p["spec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .extend(extra_env);
        let app = p["spec"]["containers"][0].clone();
        let (out, _) = run(&pod(p), std::slice::from_ref(&s));
        // The app's mounts follow the sidecar's own; /staragent is not mounted twice.
        let mut init_mounts = vec![
            json!({"name": "volume-3", "mountPath": "/g/h/i"}),
            json!({"name": "volume-4", "mountPath": "/j/k/l"}),
            json!({"name": "volume-staragent", "mountPath": "/staragent"}),
        ];
        init_mounts.extend(shared());
        init_mounts.extend(extra_mount.clone());
        let mut mounts = vec![
            json!({"name": "volume-1", "mountPath": "/a/b/c"}),
            json!({"name": "volume-2", "mountPath": "/d/e/f"}),
            json!({"name": "volume-staragent", "mountPath": "/staragent"}),
        ];
        mounts.extend(shared());
        mounts.extend(extra_mount);
        let mut env = vec![is_injected()];
        env.extend(sidecar_env);
        let expected = json!({
            "initContainers": [
                {"name": "dns-e", "image": "dns-e-image:1.0", "volumeMounts": init_mounts, "env": env}
            ],
            "containers": [
                app,
                {"name": "dns-f", "image": "dns-f-image:1.0", "volumeMounts": mounts, "env": env}
            ],
            // The pod's volumes, then the SidecarSet's its sidecars mount, init container first.
            "volumes": [
                {"name": "volume-a"}, {"name": "volume-b"}, {"name": "volume-staragent"},
                {"name": "volume-3"}, {"name": "volume-4"}, {"name": "volume-1"}, {"name": "volume-2"}
            ]
        });
        assert_eq!(to_json(&out.spec), expected, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// TestMergeSidecarContainers, TestInjectInitContainerSort

fn named(names: &[&str]) -> Vec<Container> {
    names
        .iter()
        .map(|n| Container {
            name: (*n).to_string(),
            ..Default::default()
        })
        .collect()
}

fn sidecar(name: &str, policy: Option<&str>) -> SidecarContainer {
    SidecarContainer {
        container: Container {
            name: name.to_string(),
            ..Default::default()
        },
        pod_inject_policy: policy.map(str::to_string),
        ..Default::default()
    }
}

/// (name, the pod's containers, the injected ones, the merged names)
type MergeCase<'a> = (
    &'a str,
    &'a [&'a str],
    &'a [SidecarContainer],
    &'a [&'a str],
);

/// Go's test: the injected containers sorted by name (stable), then merged.
fn merged(origins: &[&str], injected: &[SidecarContainer]) -> Vec<String> {
    let mut injected = injected.to_vec();
    injected.sort_by(|a, b| a.container.name.cmp(&b.container.name));
    merge_sidecar_containers(named(origins), &injected)
        .into_iter()
        .map(|c| c.name)
        .collect()
}

#[test]
fn go_merge_sidecar_containers() {
    let pod_containers = ["sidecar-1", "app-container", "sidecar-2"];
    let sidecars = [
        sidecar("sidecar-2", Some("AfterAppContainer")),
        sidecar("sidecar-1", Some("AfterAppContainer")),
        sidecar("new-sidecar-1", Some("BeforeAppContainer")),
    ];
    let cases: [MergeCase<'_>; 6] = [
        (
            "origins not sidecar, and inject new sidecar",
            &pod_containers[1..2],
            &sidecars,
            &["new-sidecar-1", "app-container", "sidecar-1", "sidecar-2"],
        ),
        (
            "origins not sidecar, and inject new sidecar, only before app container",
            &pod_containers[1..2],
            &sidecars[2..],
            &["new-sidecar-1", "app-container"],
        ),
        (
            "origins not sidecar, and inject new sidecar, only after app container",
            &pod_containers[1..2],
            &sidecars[..2],
            &["app-container", "sidecar-1", "sidecar-2"],
        ),
        (
            "origin have sidecars, sidecar no new containers",
            &pod_containers,
            &sidecars[..2],
            &["sidecar-1", "app-container", "sidecar-2"],
        ),
        (
            "origin have sidecars, sidecar have new containers",
            &pod_containers,
            &sidecars,
            &["new-sidecar-1", "sidecar-1", "app-container", "sidecar-2"],
        ),
        (
            "origin no sidecar, sidecar have new containers",
            &[],
            &sidecars,
            &["new-sidecar-1", "sidecar-1", "sidecar-2"],
        ),
    ];
    for (name, origins, injected, expected) in cases {
        assert_eq!(merged(origins, injected), expected, "{name}");
    }
}

#[test]
fn go_inject_init_container_sort() {
    let unset = [
        sidecar("a-init", None),
        sidecar("c-init", None),
        sidecar("b-init", None),
    ];
    let placed = [
        sidecar("a-init", Some("AfterAppContainer")),
        sidecar("c-init", Some("BeforeAppContainer")),
        sidecar("b-init", Some("BeforeAppContainer")),
    ];
    let cases: [MergeCase<'_>; 3] = [
        (
            "origins nil, inject containers(a, b, c)",
            &[],
            &unset,
            &["a-init", "b-init", "c-init"],
        ),
        (
            "origin init, inject containers(a, b, c)",
            &["app1-init", "app2-init"],
            &unset,
            &["app1-init", "app2-init", "a-init", "b-init", "c-init"],
        ),
        (
            "origins nil, inject containers(a, b, c)-2",
            &["app1-init", "app2-init"],
            &placed,
            &["b-init", "c-init", "app1-init", "app2-init", "a-init"],
        ),
    ];
    for (name, origins, injected, expected) in cases {
        assert_eq!(merged(origins, injected), expected, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// TestInjectInitContainer

#[test]
fn go_inject_init_container() {
    let mut obj1 = sidecar_set_with_init_container();
    obj1["metadata"]["name"] = json!("sidecarset-1");
    obj1["metadata"]["annotations"] = json!({
        HASH: "sidecarset-1-hash", HASH_WITHOUT_IMAGE: "sidecarset-1-without-image-hash"});
    obj1["spec"]["initContainers"][0]["name"] = json!("init-1");
    obj1["spec"]["initContainers"][0]["restartPolicy"] = json!("Always");
    let mut obj2 = sidecar_set_with_init_container();
    obj2["metadata"]["name"] = json!("sidecarset-2");
    obj2["metadata"]["annotations"] = json!({
        HASH: "sidecarset-2-hash", HASH_WITHOUT_IMAGE: "sidecarset-2-without-image-hash"});
    obj2["spec"]["initContainers"][0]["name"] = json!("hot-init");
    obj2["spec"]["initContainers"][0]["restartPolicy"] = json!("Always");
    obj2["spec"]["initContainers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:v1"});
    let (out, _) = run(&pod(pod1()), &[set(obj1), set(obj2)]);

    let init1: &[&str] = &["init-1"];
    let hot: &[&str] = &["hot-init"];
    let expected_annotations = BTreeMap::from([
        (
            HASH.to_string(),
            upgrade_specs(&[
                Spec {
                    name: "sidecarset-1",
                    hash: "sidecarset-1-hash",
                    list: init1,
                    revision: "",
                },
                Spec {
                    name: "sidecarset-2",
                    hash: "sidecarset-2-hash",
                    list: hot,
                    revision: "",
                },
            ]),
        ),
        (
            HASH_WITHOUT_IMAGE.to_string(),
            upgrade_specs(&[
                Spec {
                    name: "sidecarset-1",
                    hash: "sidecarset-1-without-image-hash",
                    list: init1,
                    revision: "",
                },
                Spec {
                    name: "sidecarset-2",
                    hash: "sidecarset-2-without-image-hash",
                    list: hot,
                    revision: "",
                },
            ]),
        ),
        (LIST.to_string(), "sidecarset-1,sidecarset-2".to_string()),
        (
            WORKING.to_string(),
            r#"{"hot-init":"hot-init-1"}"#.to_string(),
        ),
        (
            "version.sidecarset.kruise.io/hot-init-1".to_string(),
            "1".to_string(),
        ),
        (
            "versionalt.sidecarset.kruise.io/hot-init-1".to_string(),
            "0".to_string(),
        ),
        (
            "version.sidecarset.kruise.io/hot-init-2".to_string(),
            "0".to_string(),
        ),
        (
            "versionalt.sidecarset.kruise.io/hot-init-2".to_string(),
            "1".to_string(),
        ),
    ]);
    assert_eq!(annotations(&out), expected_annotations);

    let world2 = json!({"name": "hello2", "value": "world2"});
    let [v1, alt1] = version_env("hot-init-1");
    let [v2, alt2] = version_env("hot-init-2");
    let mounts = json!([{"name": "volume-1", "mountPath": ""}]);
    let expected_spec = json!({
        "initContainers": [
            {"name": "init-0", "image": "busybox:1.0.0"},
            {"name": "hot-init-1", "image": "dns-e-image:1.0", "restartPolicy": "Always",
             "volumeMounts": mounts, "env": [is_injected(), world2, v1, alt1]},
            {"name": "hot-init-2", "image": "empty:v1", "restartPolicy": "Always",
             "volumeMounts": mounts, "env": [is_injected(), world2, v2, alt2]},
            {"name": "init-1", "image": "dns-e-image:1.0", "restartPolicy": "Always",
             "volumeMounts": mounts, "env": [is_injected(), world2]}
        ],
        "containers": [nginx()],
        "volumes": [{"name": "volume-a"}, {"name": "volume-b"}, {"name": "volume-1"}]
    });
    assert_eq!(to_json(&out.spec), expected_spec);
}

// ---------------------------------------------------------------------------------------------
// TestPodVolumeDevicesAppend

#[test]
fn go_pod_volume_devices_append() {
    let origin_devices = json!([
        {"name": "origin-pvc-1", "devicePath": "/origin-1"},
        {"name": "origin-pvc-share", "devicePath": "/share"}
    ]);
    let device_pod = || {
        let mut p = pod_with_staragent();
        p["spec"]["containers"][0]["volumeDevices"] = origin_devices.clone();
        let vols = p["spec"]["volumes"].as_array_mut().unwrap();
        vols.push(json!({"name": "origin-pvc-1"}));
        vols.push(json!({"name": "origin-pvc-share"}));
        pod(p)
    };
    let base = || {
        let mut s = sidecar_set_with_staragent();
        s["spec"]["containers"].as_array_mut().unwrap().truncate(1);
        s["spec"]["initContainers"][0]["volumeDevices"] =
            json!([{"name": "disk0", "devicePath": "/dev/nvme0"}]);
        s["spec"]["initContainers"][0]["shareVolumePolicy"] = json!({});
        s["spec"]["containers"][0]["volumeDevices"] =
            json!([{"name": "disk0", "devicePath": "/dev/nvme1"}]);
        s["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("volumeMounts");
        s["spec"]["containers"][0]["shareVolumePolicy"] = json!({});
        s
    };

    // ShareVolumeDevicePolicy unset: only the sidecars' own devices.
    let mut disabled = base();
    disabled["spec"]["initContainers"][0]
        .as_object_mut()
        .unwrap()
        .remove("volumeMounts");
    disabled["spec"]["volumes"] = json!([{"name": "disk0"}]);
    // ShareVolumeDevicePolicy enabled: the app's devices follow.
    let mut enabled = base();
    enabled["spec"]["initContainers"][0]["shareVolumeDevicePolicy"] = json!({"type": "enabled"});
    enabled["spec"]["containers"][0]["shareVolumeDevicePolicy"] = json!({"type": "enabled"});
    enabled["spec"]["volumes"] = json!([
        {"name": "volume-3"}, {"name": "volume-4"}, {"name": "volume-staragent"}, {"name": "disk0"}
    ]);
    let with_origin = |own: Value| {
        let mut v = vec![own];
        v.extend(origin_devices.as_array().unwrap().iter().cloned());
        Value::Array(v)
    };
    let pod_volumes = || {
        vec![
            json!({"name": "volume-a"}),
            json!({"name": "volume-b"}),
            json!({"name": "volume-staragent"}),
            json!({"name": "origin-pvc-1"}),
            json!({"name": "origin-pvc-share"}),
        ]
    };
    let cases = [
        (
            "append normal volumeDevices, ShareVolumeDevicePolicy=disable",
            disabled,
            json!([{"name": "disk0", "devicePath": "/dev/nvme0"}]),
            json!([{"name": "disk0", "devicePath": "/dev/nvme1"}]),
            [pod_volumes(), vec![json!({"name": "disk0"})]].concat(),
        ),
        (
            "append normal volumeDevices, ShareVolumeDevicePolicy=enable",
            enabled,
            with_origin(json!({"name": "disk0", "devicePath": "/dev/nvme0"})),
            with_origin(json!({"name": "disk0", "devicePath": "/dev/nvme1"})),
            [
                pod_volumes(),
                vec![
                    json!({"name": "volume-3"}),
                    json!({"name": "volume-4"}),
                    json!({"name": "disk0"}),
                ],
            ]
            .concat(),
        ),
    ];
    for (name, s, init_devices, devices, volumes) in cases {
        let (out, _) = run(&device_pod(), &[set(s)]);
        let spec = out.spec.unwrap();
        assert_eq!(
            to_json(&spec.init_containers.unwrap()[0].volume_devices),
            init_devices,
            "{name}"
        );
        assert_eq!(
            to_json(&spec.containers[1].volume_devices),
            devices,
            "{name}"
        );
        assert_eq!(to_json(&spec.volumes), Value::Array(volumes), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// TestBuildSidecarVolumes_WithDifferentVolumeScenarios

#[test]
fn go_build_sidecar_volumes_with_different_volume_scenarios() {
    let mut missing = sidecar_set_with_staragent();
    missing["spec"]["volumes"] =
        json!([{"name": "volume-a1"}, {"name": "volume-b2"}, {"name": "volume-c3"}]);
    missing["spec"]["initContainers"][0]["volumeDevices"] =
        json!([{"name": "disk0", "devicePath": "/dev/nvme0"}]);
    missing["spec"]["containers"][0]["volumeDevices"] =
        json!([{"name": "disk0", "devicePath": "/dev/nvme1"}]);

    let mut existing = sidecar_set_with_staragent();
    existing["spec"]["initContainers"][0]["volumeMounts"] = json!([
        {"name": "volume-1", "mountPath": "/a/b"}, {"name": "volume-2", "mountPath": "/c/d"}]);
    existing["spec"]["containers"][0]["volumeMounts"] = json!([
        {"name": "volume-3", "mountPath": "/a/b"}, {"name": "volume-4", "mountPath": "/c/d"}]);
    existing["spec"]["initContainers"][0]["volumeDevices"] =
        json!([{"name": "disk0", "devicePath": "/dev/nvme0"}]);
    existing["spec"]["containers"][0]["volumeDevices"] =
        json!([{"name": "disk1", "devicePath": "/dev/nvme1"}]);
    existing["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .extend([json!({"name": "disk0"}), json!({"name": "disk1"})]);

    let cases = [
        ("missing volume in sidecarSet", missing, json!([])),
        (
            "existing volumes in sidecarSet",
            existing,
            json!([
                {"name": "volume-1"}, {"name": "volume-2"}, {"name": "disk0"},
                {"name": "volume-3"}, {"name": "volume-4"}, {"name": "disk1"}
            ]),
        ),
    ];
    for (name, s, expected) in cases {
        let built = build_sidecars(&pod(pod1()), &[&set(s)], opts()).unwrap();
        assert_eq!(to_json(&built.volumes), expected, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// TestInjectHotUpgradeSidecar (sidecarset_hotupgrade_test.go)

#[test]
fn go_inject_hot_upgrade_sidecar() {
    let mut s = sidecar_set1();
    s["metadata"]["annotations"][HASH_WITHOUT_IMAGE] = json!("without-c4k2dbb95d");
    s["spec"]["containers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busy:hotupgrade-empty"});
    let (out, _) = run(&pod(pod1()), &[set(s)]);
    let [v1, alt1] = version_env("dns-f-1");
    let [v2, alt2] = version_env("dns-f-2");
    let expected_spec = json!({
        "initContainers": [
            {"name": "init-0", "image": "busybox:1.0.0"},
            {"name": "init-1", "image": "busybox:1.0.0", "env": [is_injected()]},
            {"name": "init-2", "image": "busybox:1.0.0", "env": [is_injected()]}
        ],
        "containers": [
            {"name": "dns-f-1", "image": "dns-f-image:1.0", "env": [is_injected(), v1, alt1]},
            {"name": "dns-f-2", "image": "busy:hotupgrade-empty", "env": [is_injected(), v2, alt2]},
            nginx(),
            {"name": "log-agent", "image": "log-agent-image:1.0", "env": [is_injected()]}
        ],
        "volumes": [{"name": "volume-a"}, {"name": "volume-b"}]
    });
    assert_eq!(to_json(&out.spec), expected_spec);
    // The upgrade specs list the sidecar by its SidecarSet name, not the pair's.
    let sidecars: &[&str] = &["dns-f", "log-agent"];
    let expected_annotations = BTreeMap::from([
        (
            HASH.to_string(),
            upgrade_specs(&[Spec {
                name: "sidecarset1",
                hash: "c4k2dbb95d",
                list: sidecars,
                revision: "",
            }]),
        ),
        (
            HASH_WITHOUT_IMAGE.to_string(),
            upgrade_specs(&[Spec {
                name: "sidecarset1",
                hash: "without-c4k2dbb95d",
                list: sidecars,
                revision: "",
            }]),
        ),
        (LIST.to_string(), "sidecarset1".to_string()),
        (WORKING.to_string(), r#"{"dns-f":"dns-f-1"}"#.to_string()),
        (
            "version.sidecarset.kruise.io/dns-f-1".to_string(),
            "1".to_string(),
        ),
        (
            "versionalt.sidecarset.kruise.io/dns-f-1".to_string(),
            "0".to_string(),
        ),
        (
            "version.sidecarset.kruise.io/dns-f-2".to_string(),
            "0".to_string(),
        ),
        (
            "versionalt.sidecarset.kruise.io/dns-f-2".to_string(),
            "1".to_string(),
        ),
    ]);
    assert_eq!(annotations(&out), expected_annotations);
}

// ---------------------------------------------------------------------------------------------
// TestApplyResourcesPolicy, TestGetTargetContainers (sidecarset_resources_test.go), as the
// injection applies the policy to the injected sidecar.

fn resources(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Value {
    let mut r = json!({});
    if !limits.is_empty() {
        r["limits"] = limits
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
    }
    if !requests.is_empty() {
        r["requests"] = requests
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect();
    }
    r
}

fn app(name: &str, limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Value {
    json!({"name": name, "image": "nginx:1.14.2", "resources": resources(limits, requests)})
}

fn policy(
    mode: &str,
    regex: &str,
    limits: Option<[&str; 2]>,
    requests: Option<[&str; 2]>,
) -> Value {
    let mut expr = json!({});
    if let Some([cpu, memory]) = limits {
        expr["limits"] = json!({"cpu": cpu, "memory": memory});
    }
    if let Some([cpu, memory]) = requests {
        expr["requests"] = json!({"cpu": cpu, "memory": memory});
    }
    json!({"targetContainersMode": mode, "targetContainersNameRegex": regex, "resourcesExpr": expr})
}

/// A SidecarSet injecting `sidecar` (with `policy`) as a container, or as an init container.
fn policy_set(sidecar: &str, policy: Value, as_init: bool) -> SidecarSet {
    let c = json!({"name": sidecar, "image": "sidecar:latest", "resourcesPolicy": policy});
    let key = if as_init {
        "initContainers"
    } else {
        "containers"
    };
    set(json!({
        "metadata": {"name": "resources"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, key: [c]}
    }))
}

/// (name, pod spec, policy, as an init container, Ok(resources) / Err(message))
type ResourcesCase = (
    &'static str,
    Value,
    Value,
    bool,
    Result<Value, &'static str>,
);

fn injected_resources(out: &Pod, name: &str) -> Value {
    let spec = out.spec.as_ref().unwrap();
    let c = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .find(|c| c.name == name)
        .unwrap();
    to_json(&c.resources)
}

#[test]
fn go_apply_resources_policy() {
    let two_apps = |a: &str, b: &str| {
        json!([
            app(
                a,
                &[("cpu", "200m"), ("memory", "200Mi")],
                &[("cpu", "50m"), ("memory", "100Mi")]
            ),
            app(
                b,
                &[("cpu", "400m"), ("memory", "400Mi")],
                &[("cpu", "100m"), ("memory", "200Mi")]
            )
        ])
    };
    let max_half = Some(["max(cpu*50%, 50m)", "200Mi"]);
    let max_half_req = Some(["max(cpu*50%, 50m)", "100Mi"]);
    let cases: Vec<ResourcesCase> = vec![
        (
            "sum mode with percentage - basic",
            json!({"containers": two_apps("app1", "app2")}),
            policy(
                "sum",
                ".*",
                Some(["cpu*50%", "200Mi"]),
                Some(["cpu*50%", "100Mi"]),
            ),
            false,
            Ok(resources(
                &[("cpu", "300m"), ("memory", "200Mi")],
                &[("cpu", "75m"), ("memory", "100Mi")],
            )),
        ),
        (
            "max mode with expression",
            json!({"containers": two_apps("large.engine.v4", "large.engine.v8")}),
            policy("max", "^large.engine.v.*$", max_half, max_half_req),
            false,
            Ok(resources(
                &[("cpu", "200m"), ("memory", "200Mi")],
                &[("cpu", "50m"), ("memory", "100Mi")],
            )),
        ),
        (
            "regex filter - specific container",
            json!({"containers": two_apps("large.engine.v4", "large.engine.v8")}),
            policy("sum", "^large.engine.v4$", max_half, max_half_req),
            false,
            Ok(resources(
                &[("cpu", "100m"), ("memory", "200Mi")],
                &[("cpu", "50m"), ("memory", "100Mi")],
            )),
        ),
        (
            "no matching containers - should error",
            json!({"containers": [app("app1", &[("cpu", "200m")], &[])]}),
            json!({"targetContainersMode": "sum", "targetContainersNameRegex": "^nonexistent$",
                   "resourcesExpr": {"limits": {"cpu": "cpu*50%"}}}),
            false,
            Err(r#"no containers match the regex pattern "^nonexistent$""#),
        ),
        (
            "sum mode - one container without CPU limit (unlimited)",
            json!({"containers": [
                app("app1", &[("cpu", "200m"), ("memory", "200Mi")], &[("cpu", "100m"), ("memory", "100Mi")]),
                app("app2", &[("memory", "400Mi")], &[("cpu", "50m"), ("memory", "200Mi")])
            ]}),
            policy(
                "sum",
                ".*",
                Some(["cpu*50%", "memory*30%"]),
                Some(["cpu*30%", "memory*20%"]),
            ),
            false,
            Ok(resources(
                &[("memory", "180Mi")],
                &[("cpu", "45m"), ("memory", "60Mi")],
            )),
        ),
        (
            "max mode - one container without Memory limit (unlimited)",
            json!({"containers": [
                app("app1", &[("cpu", "200m"), ("memory", "200Mi")], &[("cpu", "100m"), ("memory", "100Mi")]),
                app("app2", &[("cpu", "400m")], &[("cpu", "200m")])
            ]}),
            policy(
                "max",
                ".*",
                Some(["cpu*40%", "memory*30%"]),
                Some(["cpu*25%", "memory*20%"]),
            ),
            false,
            Ok(resources(
                &[("cpu", "160m")],
                &[("cpu", "50m"), ("memory", "20Mi")],
            )),
        ),
        (
            "sum mode - container without requests (treated as 0)",
            json!({"containers": [
                app("app1", &[("cpu", "200m"), ("memory", "200Mi")], &[("cpu", "100m"), ("memory", "100Mi")]),
                app("app2", &[("cpu", "400m"), ("memory", "400Mi")], &[])
            ]}),
            policy(
                "sum",
                ".*",
                Some(["cpu*50%", "memory*30%"]),
                Some(["cpu*30%", "memory*20%"]),
            ),
            false,
            Ok(resources(
                &[("cpu", "300m"), ("memory", "180Mi")],
                &[("cpu", "30m"), ("memory", "20Mi")],
            )),
        ),
        (
            "init-container with resource policy (native sidecar)",
            json!({
                "initContainers": [
                    {"name": "app1", "image": "nginx:1.14.2", "restartPolicy": "Always",
                     "resources": resources(&[("cpu", "400m"), ("memory", "800Mi")], &[("cpu", "200m"), ("memory", "400Mi")])},
                    app("app2", &[("cpu", "400m"), ("memory", "800Mi")], &[("cpu", "200m"), ("memory", "400Mi")])
                ],
                "containers": [
                    app("app2", &[("cpu", "600m"), ("memory", "1200Mi")], &[("cpu", "300m"), ("memory", "600Mi")])
                ]
            }),
            policy(
                "sum",
                "^app.*$",
                Some(["max(cpu*30%, 50m)", "max(memory*25%, 100Mi)"]),
                Some(["cpu*20%", "memory*15%"]),
            ),
            true,
            Ok(resources(
                &[("cpu", "300m"), ("memory", "500Mi")],
                &[("cpu", "100m"), ("memory", "150Mi")],
            )),
        ),
    ];
    for (name, spec, policy, as_init, expected) in cases {
        let sidecar = if as_init { "init-sidecar" } else { "sidecar1" };
        let p = pod(json!({"metadata": {"name": "p"}, "spec": spec}));
        let mut out = p.clone();
        let got = inject(&mut out, &[policy_set(sidecar, policy, as_init)], opts());
        match expected {
            Ok(r) => {
                assert!(!got.unwrap(), "{name}");
                assert_eq!(injected_resources(&out, sidecar), r, "{name}");
            }
            Err(message) => assert_eq!(got.unwrap_err().to_string(), message, "{name}"),
        }
    }
}

#[test]
fn go_get_target_containers() {
    // Go's mock SidecarSet: its init container and container are never targets, nor is a plain
    // init container; a native sidecar and the app containers are. Each pod container requests
    // a distinct CPU, so the sum names the targets: sidecar-container + app1 + app2.
    let cpu = |name: &str, m: &str| json!({"name": name, "resources": {"requests": {"cpu": m}}});
    let mut native = cpu("sidecar-container", "100m");
    native["restartPolicy"] = json!("Always");
    let p = pod(json!({
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [cpu("init-sidecar1", "1000m"), cpu("plain-init-container", "2000m"), native],
            "containers": [cpu("app1", "10m"), cpu("app2", "1m"), cpu("sidecar1", "500m")]
        }
    }));
    let mock = set(json!({
        "metadata": {"name": "test-sidecarset"},
        "spec": {
            "initContainers": [{"name": "init-sidecar1"}],
            "containers": [{"name": "sidecar1", "resourcesPolicy": policy("sum", "^.*$", None, Some(["cpu", ""]))}]
        }
    }));
    let (out, _) = run(&p, std::slice::from_ref(&mock));
    assert_eq!(
        injected_resources(&out, "sidecar1"),
        json!({"requests": {"cpu": "111m"}})
    );
    // The containers of every matched SidecarSet are excluded, not only the policy's own.
    let other = set(json!({
        "metadata": {"name": "other"},
        "spec": {"containers": [{"name": "app2"}]}
    }));
    let (out, _) = run(&p, &[mock, other]);
    assert_eq!(
        injected_resources(&out, "sidecar1"),
        json!({"requests": {"cpu": "110m"}})
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours the Go tests leave open, as OpenKruise's code has them.

fn app_pod(annotations: Value) -> Value {
    json!({
        "metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}
    })
}

#[test]
fn env_and_mounts_merge_in_gos_order() {
    // The sidecar's own env, IS_INJECTED, then the transferred env (entry by entry, names
    // sorted within an entry), then the env the shared subPathExpr mounts reference; a name
    // already present is skipped. Shared mounts come from every container not injected before,
    // a mount path already used is skipped. transferEnv reads every container, injected or not.
    let p = pod(json!({
        "metadata": {"name": "p", "namespace": "ns", "labels": {"src": "nginx"}},
        "spec": {"containers": [
            {"name": "nginx", "image": "nginx",
             "env": [{"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"},
                     {"name": "POD_NAME", "value": "bar"}, {"name": "ZZ", "value": "zz"},
                     {"name": "FROM_LABEL", "value": "y"}],
             "volumeMounts": [
                 {"name": "volume-a", "mountPath": "/a/b"},
                 {"name": "volume-dup", "mountPath": "/own"},
                 {"name": "volume-x", "mountPath": "/x", "subPathExpr": "$(POD_NAME)/$(hello1)/$(ZZ)/$(NOPE)"}
             ]},
            {"name": "old-sidecar", "image": "old",
             "env": [{"name": "IS_INJECTED", "value": "true"}, {"name": "OLD", "value": "1"}],
             "volumeMounts": [{"name": "volume-old", "mountPath": "/old"}]}
        ]}
    }));
    let s = set(json!({
        "metadata": {"name": "order"},
        "spec": {"containers": [{
            "name": "sidecar", "image": "sidecar:1",
            "env": [{"name": "A", "value": "1"}, {"name": "hello2", "value": "own"}],
            "volumeMounts": [{"name": "own", "mountPath": "/own"}],
            "shareVolumePolicy": {"type": "enabled"},
            "transferEnv": [
                {"sourceContainerName": "nginx", "envNames": ["hello2", "hello1", "hello2"]},
                {"sourceContainerName": "nginx", "envName": "POD_NAME"},
                {"sourceContainerName": "old-sidecar", "envName": "OLD"},
                {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['src']"}},
                 "envName": "FROM_LABEL"},
                {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                 "envName": "hello1"},
                {"sourceContainerName": "missing", "envName": "hello1"}
            ]
        }]}
    }));
    let (out, _) = run(&p, &[s]);
    let sidecar = &out.spec.unwrap().containers[2];
    assert_eq!(
        to_json(&sidecar.env),
        json!([
            {"name": "A", "value": "1"}, {"name": "hello2", "value": "own"}, is_injected(),
            {"name": "hello1", "value": "world1"}, {"name": "POD_NAME", "value": "bar"},
            {"name": "OLD", "value": "1"}, {"name": "FROM_LABEL", "value": "y"},
            {"name": "ZZ", "value": "zz"}
        ])
    );
    assert_eq!(
        to_json(&sidecar.volume_mounts),
        json!([
            {"name": "own", "mountPath": "/own"},
            {"name": "volume-a", "mountPath": "/a/b"},
            {"name": "volume-x", "mountPath": "/x", "subPathExpr": "$(POD_NAME)/$(hello1)/$(ZZ)/$(NOPE)"}
        ])
    );
}

#[test]
fn hot_upgrade_pairs_native_init_containers_only() {
    // A HotUpgrade init container is paired only when it is a native sidecar; the working
    // container annotation keeps the pod's entries and gathers every pair.
    let s = set(json!({
        "metadata": {"name": "hot", "annotations": {HASH: "h", HASH_WITHOUT_IMAGE: "w"}},
        "spec": {
            "initContainers": [
                {"name": "plain-init", "image": "plain:1",
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:0"}},
                {"name": "mesh-init", "image": "mesh:1", "restartPolicy": "Always",
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:1"}}
            ],
            "containers": [
                {"name": "envoy", "image": "envoy:1",
                 "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:2"}}
            ]
        }
    }));
    let p = pod(app_pod(json!({WORKING: r#"{"old":"old-2"}"#})));
    let (out, _) = run(&p, &[s]);
    let spec = out.spec.as_ref().unwrap();
    let images = |cs: &[Container]| -> Vec<(String, String)> {
        cs.iter()
            .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
            .collect()
    };
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
            .collect()
    };
    assert_eq!(
        images(spec.init_containers.as_ref().unwrap()),
        pairs(&[
            ("mesh-init-1", "mesh:1"),
            ("mesh-init-2", "empty:1"),
            ("plain-init", "plain:1")
        ])
    );
    assert_eq!(
        images(&spec.containers),
        pairs(&[
            ("app", "app:1"),
            ("envoy-1", "envoy:1"),
            ("envoy-2", "empty:2")
        ])
    );
    let a = annotations(&out);
    assert_eq!(
        a[WORKING],
        r#"{"envoy":"envoy-1","mesh-init":"mesh-init-1","old":"old-2"}"#
    );
    let versions: Vec<(&str, &str)> = a
        .iter()
        .filter(|(k, _)| k.contains("sidecarset.kruise.io/"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        versions,
        [
            ("version.sidecarset.kruise.io/envoy-1", "1"),
            ("version.sidecarset.kruise.io/envoy-2", "0"),
            ("version.sidecarset.kruise.io/mesh-init-1", "1"),
            ("version.sidecarset.kruise.io/mesh-init-2", "0"),
            ("versionalt.sidecarset.kruise.io/envoy-1", "0"),
            ("versionalt.sidecarset.kruise.io/envoy-2", "1"),
            ("versionalt.sidecarset.kruise.io/mesh-init-1", "0"),
            ("versionalt.sidecarset.kruise.io/mesh-init-2", "1"),
        ]
    );
    // The plain init container is injected but not listed as a sidecar.
    let listed: &[&str] = &["envoy", "mesh-init"];
    assert_eq!(
        a[HASH],
        upgrade_specs(&[Spec {
            name: "hot",
            hash: "h",
            list: listed,
            revision: ""
        }])
    );
}

#[test]
fn annotations_when_nothing_is_injected() {
    let empty = json!({"metadata": {"name": "empty"}, "spec": {}});
    // A matched SidecarSet without containers: the pod is untouched (no empty annotations).
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}}));
    let (out, skip) = run(&p, &[set(empty.clone())]);
    assert!(skip);
    assert_eq!(out, p);
    // With a metadata patch, only the patch is applied: no hash or list annotations.
    let mut patching = empty.clone();
    patching["spec"]["patchPodMetadata"] = json!([{"annotations": {"k": "v"}}]);
    let (out, skip) = run(&p, &[set(patching)]);
    assert!(!skip);
    assert_eq!(
        annotations(&out),
        BTreeMap::from([("k".to_string(), "v".to_string())])
    );
    assert_eq!(out.spec, p.spec);
    // Next to a SidecarSet that injects, it is listed but has no upgrade spec.
    let (out, _) = run(&pod(pod1()), &[set(empty), set(sidecar_set1())]);
    let a = annotations(&out);
    assert_eq!(a[LIST], "empty,sidecarset1");
    let sidecars: &[&str] = &["dns-f", "log-agent"];
    assert_eq!(
        a[HASH],
        upgrade_specs(&[Spec {
            name: "sidecarset1",
            hash: "c4k2dbb95d",
            list: sidecars,
            revision: ""
        }])
    );
}

#[test]
fn annotations_of_the_pod_are_kept_and_extended() {
    // Entries of other SidecarSets stay as they are; the injected list is a sorted union.
    let other = r#"{"updateTimestamp":"2021-01-01T00:00:00Z","hash":"o","sidecarSetName":"other","sidecarList":["x"],"controllerRevision":"other-1"}"#;
    let p = pod(app_pod(json!({
        HASH: format!(r#"{{"other":{other}}}"#),
        LIST: "zeta,other"
    })));
    let mut s = sidecar_set1();
    s["status"] = json!({"latestRevision": "sidecarset1-abc", "matchedPods": 0, "updatedPods": 0, "readyPods": 0});
    let (out, _) = run(&p, &[set(s)]);
    let a = annotations(&out);
    let sidecars: &[&str] = &["dns-f", "log-agent"];
    let mine = upgrade_specs(&[Spec {
        name: "sidecarset1",
        hash: "c4k2dbb95d",
        list: sidecars,
        revision: "sidecarset1-abc",
    }]);
    assert_eq!(a[HASH], format!(r#"{{"other":{other},{}"#, &mine[1..]));
    assert_eq!(a[LIST], "other,sidecarset1,zeta");
    // The image-less spec never records the revision.
    assert_eq!(
        a[HASH_WITHOUT_IMAGE],
        upgrade_specs(&[Spec {
            name: "sidecarset1",
            hash: "",
            list: sidecars,
            revision: ""
        }])
    );
}

#[test]
fn refusals_carry_gos_texts() {
    let bad = pod(app_pod(json!({HASH: "{not json"})));
    let err = inject(&mut bad.clone(), &[set(sidecar_set1())], opts()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pod(ns/p) invalid annotations[kruise.io/sidecarset-hash] value {not json, unmarshal \
         failed: invalid character 'n' looking for beginning of object key string"
    );
    // Neither format: Go reports the older format's first type error.
    let mixed = pod(app_pod(
        json!({HASH_WITHOUT_IMAGE: r#"{"a":"h","b":{"hash":"x"}}"#}),
    ));
    let err = inject(&mut mixed.clone(), &[set(sidecar_set1())], opts()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "pod(ns/p) invalid annotations[kruise.io/sidecarset-hash-without-image] value \
         {\"a\":\"h\",\"b\":{\"hash\":\"x\"}}, unmarshal failed: json: cannot unmarshal \
         object into Go value of type string"
    );
    let mut patching = sidecar_set1();
    patching["spec"]["patchPodMetadata"] =
        json!([{"patchPolicy": "MergePatchJson", "annotations": {"k": "{\"a\":1}"}}]);
    let not_json = pod(app_pod(json!({"k": "plain"})));
    let err = inject(&mut not_json.clone(), &[set(patching)], opts()).unwrap_err();
    assert_eq!(err.to_string(), "Invalid JSON Document");
}

#[test]
fn sort_gate_orders_sidecars_by_name_before_placing_them() {
    let s = set(json!({
        "metadata": {"name": "sorted"},
        "spec": {"containers": [
            {"name": "z", "podInjectPolicy": "BeforeAppContainer"},
            {"name": "m"},
            {"name": "a", "podInjectPolicy": "BeforeAppContainer"}
        ]}
    }));
    let p = pod(app_pod(json!({})));
    let order = |sort: bool| -> Vec<String> {
        let mut out = p.clone();
        let o = InjectOptions {
            sort_containers_by_name: sort,
            ..opts()
        };
        inject(&mut out, std::slice::from_ref(&s), o).unwrap();
        out.spec
            .unwrap()
            .containers
            .into_iter()
            .map(|c| c.name)
            .collect()
    };
    assert_eq!(order(false), ["z", "a", "app", "m"]);
    assert_eq!(order(true), ["a", "z", "app", "m"]);
}

#[test]
fn pod_annotations_are_read_as_gos_decoder_reads_them() {
    // Another SidecarSet's entry goes through Go's types: keys match case-insensitively, the
    // time is rewritten in UTC seconds, absent fields are written with their zero values.
    let p = pod(app_pod(json!({
        HASH: r#"{"other":{"HASH":"o","updateTimestamp":"2021-01-01T08:00:00.5+08:00","extra":1},"gone":null}"#,
        WORKING: r#"{"mesh":"mesh-2","bad":5}"#
    })));
    let (out, _) = run(&p, &[set(sidecar_set1())]);
    let a = annotations(&out);
    let sidecars: &[&str] = &["dns-f", "log-agent"];
    let mine = upgrade_specs(&[Spec {
        name: "sidecarset1",
        hash: "c4k2dbb95d",
        list: sidecars,
        revision: "",
    }]);
    assert_eq!(
        a[HASH],
        format!(
            "{{{},{},{}",
            r#""gone":{"updateTimestamp":null,"hash":"","sidecarSetName":"","sidecarList":null}"#,
            r#""other":{"updateTimestamp":"2021-01-01T00:00:00Z","hash":"o","sidecarSetName":"","sidecarList":null}"#,
            &mine[1..]
        )
    );
    // No hot-upgrade sidecar: the working-container annotation is left as it is.
    assert_eq!(a[WORKING], r#"{"mesh":"mesh-2","bad":5}"#);
    // With one, what Go decoded (a mismatched member as "") is written back.
    let mut hot = sidecar_set1();
    hot["spec"]["containers"][0]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty"});
    let (out, _) = run(&p, &[set(hot)]);
    assert_eq!(
        annotations(&out)[WORKING],
        r#"{"bad":"","dns-f":"dns-f-1","mesh":"mesh-2"}"#
    );
}

#[test]
fn null_annotations_make_gos_webhook_panic_when_it_writes_into_them() {
    let panic = "panic: assignment to entry in nil map [recovered]";
    for key in [HASH, HASH_WITHOUT_IMAGE] {
        let p = pod(app_pod(json!({key: "null"})));
        let err = inject(&mut p.clone(), &[set(sidecar_set1())], opts()).unwrap_err();
        assert_eq!(err.to_string(), panic, "{key}");
        // Nothing to inject: nothing is written, no panic.
        let empty = set(json!({"metadata": {"name": "empty"}, "spec": {}}));
        assert!(inject(&mut p.clone(), &[empty], opts()).unwrap());
    }
    // A `null` working-container map only matters to a hot-upgrade sidecar.
    let p = pod(app_pod(json!({WORKING: "null"})));
    let (out, _) = run(&p, &[set(sidecar_set1())]);
    assert_eq!(annotations(&out)[WORKING], "null");
    let mut hot = sidecar_set1();
    hot["spec"]["containers"][1]["upgradeStrategy"] =
        json!({"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty"});
    let err = inject(&mut p.clone(), &[set(hot)], opts()).unwrap_err();
    assert_eq!(err.to_string(), panic);
}
