//! The scenarios of OpenKruise v1.9.0's `sidecar_terminator_controller_test.go`,
//! `utils_test.go` and `sidecar_terminator_pod_event_handler_test.go`, on the pure plan.

use super::*;
use serde_json::{Value, json};

const EXIT_QUICKLY: &str = "exit-quickly:latest";
const TERMINATE: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
const WITH_IMAGE: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
const IGNORE: &str = "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";

fn main_c(name: &str) -> Value {
    json!({"name": name, "image": "main-container:latest"})
}

/// Go's `sidecarContainerFactory`: both envs, the first with `strategy`.
fn sidecar_c(name: &str, strategy: &str) -> Value {
    json!({"name": name, "image": "sidecar-container-images", "env": [
        {"name": TERMINATE, "value": strategy},
        {"name": WITH_IMAGE, "value": EXIT_QUICKLY},
    ]})
}

fn with_ignore(mut c: Value) -> Value {
    c["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": IGNORE, "value": "true"}));
    c
}

fn succeeded(name: &str) -> Value {
    json!({"name": name, "state": {"terminated": {"exitCode": 0}}})
}
fn failed(name: &str) -> Value {
    json!({"name": name, "state": {"terminated": {"exitCode": 137}}})
}
fn uncompleted(name: &str) -> Value {
    json!({"name": name, "state": {}})
}
fn running(name: &str) -> Value {
    json!({"name": name, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})
}

fn pod(policy: &str, phase: &str, containers: Vec<Value>, statuses: Vec<Value>) -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"namespace": "test-sidecar-terminator", "name": "job-generate-rand-str",
                     "uid": "87076677", "resourceVersion": "1"},
        "spec": {"nodeName": "normal-node", "restartPolicy": policy, "containers": containers},
        "status": {"phase": phase, "containerStatuses": statuses},
    }))
    .unwrap()
}

/// Go's `podDemo` (main + one sidecar with both envs, restartPolicy Never, Running) with the
/// given container statuses.
fn demo(policy: &str, phase: &str, main: Value, sidecar: Value) -> CachedPod {
    pod(
        policy,
        phase,
        vec![main_c("main"), sidecar_c("sidecar", "true")],
        vec![main, sidecar],
    )
}

fn names(n: &[&str]) -> Names {
    n.iter().map(|s| (*s).to_owned()).collect()
}

fn kill(n: &[&str]) -> Step {
    Step::KillContainers(names(n))
}

// ---- TestKruiseDaemonStrategy (normal node) ----

#[test]
fn normal_node_restart_never() {
    // main containers have not completed
    let p = demo("Never", "Running", uncompleted("main"), running("sidecar"));
    assert!(plan(&p, false).is_empty());
    // main failed, sidecar running: a request
    let p = demo("Never", "Running", failed("main"), running("sidecar"));
    assert_eq!(plan(&p, false), [kill(&["sidecar"])]);
    // main failed, sidecar failed: nothing (pod Failed already)
    let p = demo("Never", "Failed", failed("main"), failed("sidecar"));
    assert!(plan(&p, false).is_empty());
    // main succeeded, sidecar running
    let p = demo("Never", "Running", succeeded("main"), running("sidecar"));
    assert_eq!(plan(&p, false), [kill(&["sidecar"])]);
}

#[test]
fn normal_node_restart_on_failure() {
    let p = demo(
        "OnFailure",
        "Running",
        uncompleted("main"),
        running("sidecar"),
    );
    assert!(plan(&p, false).is_empty());
    // main failed (OnFailure restarts it), sidecar succeeded
    let p = demo("OnFailure", "Running", failed("main"), succeeded("sidecar"));
    assert!(plan(&p, false).is_empty());
    let p = demo(
        "OnFailure",
        "Succeeded",
        succeeded("main"),
        succeeded("sidecar"),
    );
    assert!(plan(&p, false).is_empty());
}

fn four(statuses: [Value; 2]) -> CachedPod {
    let [s1, s2] = statuses;
    pod(
        "OnFailure",
        "Running",
        vec![
            main_c("main-1"),
            main_c("main-2"),
            sidecar_c("sidecar-1", "true"),
            sidecar_c("sidecar-2", "true"),
        ],
        vec![succeeded("main-1"), succeeded("main-2"), s1, s2],
    )
}

#[test]
fn normal_node_two_mains_two_sidecars() {
    let p = four([uncompleted("sidecar-1"), uncompleted("sidecar-2")]);
    assert_eq!(plan(&p, false), [kill(&["sidecar-1", "sidecar-2"])]);
    let p = four([running("sidecar-1"), running("sidecar-2")]);
    assert_eq!(plan(&p, false), [kill(&["sidecar-1", "sidecar-2"])]);
    let p = four([succeeded("sidecar-1"), uncompleted("sidecar-2")]);
    assert_eq!(plan(&p, false), [kill(&["sidecar-2"])]);
    // one main container not completed
    let p = pod(
        "OnFailure",
        "Running",
        vec![
            main_c("main-1"),
            main_c("main-2"),
            sidecar_c("sidecar-1", "true"),
            sidecar_c("sidecar-2", "true"),
        ],
        vec![
            succeeded("main-1"),
            uncompleted("main-2"),
            succeeded("sidecar-1"),
            uncompleted("sidecar-2"),
        ],
    );
    assert!(plan(&p, false).is_empty());
}

fn five(statuses: [Value; 3]) -> CachedPod {
    let [s1, s2, s3] = statuses;
    pod(
        "OnFailure",
        "Running",
        vec![
            main_c("main-1"),
            main_c("main-2"),
            sidecar_c("sidecar-1", "true"),
            sidecar_c("sidecar-2", "true"),
            with_ignore(sidecar_c("sidecar-3", "true")),
        ],
        vec![succeeded("main-1"), succeeded("main-2"), s1, s2, s3],
    )
}

#[test]
fn ignore_exit_code_sidecars_wait_for_the_others_then_the_pod_is_terminated() {
    // the ignore-exit-code sidecar waits while the normal ones run
    let p = five([
        uncompleted("sidecar-1"),
        uncompleted("sidecar-2"),
        uncompleted("sidecar-3"),
    ]);
    assert_eq!(plan(&p, false), [kill(&["sidecar-1", "sidecar-2"])]);
    // the normal ones completed: pod Succeeded first, then its request
    let p = five([
        succeeded("sidecar-1"),
        succeeded("sidecar-2"),
        uncompleted("sidecar-3"),
    ]);
    assert_eq!(
        plan(&p, false),
        [Step::MarkTerminated("Succeeded"), kill(&["sidecar-3"])]
    );
    // a failed main container: Failed (restartPolicy Never)
    let mut p = five([
        succeeded("sidecar-1"),
        failed("sidecar-2"),
        running("sidecar-3"),
    ]);
    p.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    p.status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0] = serde_json::from_value(failed("main-1")).unwrap();
    assert_eq!(
        plan(&p, false),
        [Step::MarkTerminated("Failed"), kill(&["sidecar-3"])]
    );
    // already terminal: only the request
    p.status.as_mut().unwrap().phase = Some("Failed".into());
    assert_eq!(plan(&p, false), [kill(&["sidecar-3"])]);
}

#[test]
fn a_pod_with_a_missing_status_is_not_terminated() {
    // containersCompleted needs one status per container, even for an empty set
    let p = pod(
        "Never",
        "Running",
        vec![
            main_c("main"),
            with_ignore(json!({"name": "s", "env": [{"name": TERMINATE, "value": "TRUE"}]})),
            main_c("other"),
        ],
        vec![succeeded("main"), running("s")],
    );
    assert!(!is_interesting(&p));
}

// ---- TestInPlaceUpdateStrategy (virtual-kubelet node) ----

fn in_place(n: &[&str]) -> Step {
    Step::InPlaceUpdate(names(n))
}

#[test]
fn virtual_kubelet_node_updates_sidecars_in_place_and_never_creates_requests() {
    let p = demo(
        "Never",
        "Running",
        uncompleted("main"),
        uncompleted("sidecar"),
    );
    assert!(plan(&p, true).is_empty());
    // only the image env (no KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT)
    let p = pod(
        "Never",
        "Running",
        vec![
            main_c("main"),
            json!({"name": "sidecar", "image": "s", "env": [{"name": WITH_IMAGE, "value": EXIT_QUICKLY}]}),
        ],
        vec![failed("main"), uncompleted("sidecar")],
    );
    assert_eq!(plan(&p, true), [in_place(&["sidecar"])]);
    let p = demo(
        "Never",
        "Running",
        succeeded("main"),
        uncompleted("sidecar"),
    );
    assert_eq!(plan(&p, true), [in_place(&["sidecar"])]);
    let p = demo(
        "OnFailure",
        "Running",
        uncompleted("main"),
        uncompleted("sidecar"),
    );
    assert!(plan(&p, true).is_empty());
    let p = demo(
        "OnFailure",
        "Running",
        failed("main"),
        uncompleted("sidecar"),
    );
    assert!(plan(&p, true).is_empty());
    let p = demo(
        "OnFailure",
        "Running",
        succeeded("main"),
        uncompleted("sidecar"),
    );
    assert_eq!(plan(&p, true), [in_place(&["sidecar"])]);
    let p = four([uncompleted("sidecar-1"), uncompleted("sidecar-2")]);
    assert_eq!(plan(&p, true), [in_place(&["sidecar-1", "sidecar-2"])]);
    let p = four([succeeded("sidecar-1"), uncompleted("sidecar-2")]);
    assert_eq!(plan(&p, true), [in_place(&["sidecar-2"])]);
    // the ignore-exit-code sidecar is updated in place like the others on a vk node
    let p = five([
        uncompleted("sidecar-1"),
        succeeded("sidecar-2"),
        uncompleted("sidecar-3"),
    ]);
    assert_eq!(plan(&p, true), [in_place(&["sidecar-1", "sidecar-3"])]);
}

#[test]
fn in_place_update_sets_the_env_image_where_it_differs() {
    let mut cs: Vec<k8s_openapi::api::core::v1::Container> = serde_json::from_value(json!([
        main_c("main"),
        sidecar_c("sidecar-1", "true"),
        sidecar_c("sidecar-2", "true"),
    ]))
    .unwrap();
    cs[2].image = Some(EXIT_QUICKLY.into());
    assert!(update_images_in_place(
        &mut cs,
        &names(&["sidecar-1", "sidecar-2"])
    ));
    let images: Vec<_> = cs.iter().map(|c| c.image.as_deref().unwrap()).collect();
    assert_eq!(
        images,
        ["main-container:latest", EXIT_QUICKLY, EXIT_QUICKLY]
    );
    assert!(!update_images_in_place(&mut cs, &names(&["sidecar-1"])));
}

// ---- utils_test.go ----

#[test]
fn interesting_pods() {
    // test1: Never, main exited 127, sidecar running
    let p = demo("Never", "Running", failed("main"), running("sidecar"));
    assert!(is_interesting(&p));
    // test2: OnFailure, no phase, normal sidecar done, ignore-exit-code sidecar running
    let p: CachedPod = serde_json::from_value(json!({
        "spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "main"},
            {"name": "normal-sidecar1", "env": [{"name": TERMINATE, "value": "true"}]},
            {"name": "ignore-sidecar1", "env": [{"name": TERMINATE, "value": "true"}, {"name": IGNORE, "value": "true"}]},
        ]},
        "status": {"containerStatuses": [succeeded("main"), succeeded("normal-sidecar1"), running("ignore-sidecar1")]},
    }))
    .unwrap();
    assert!(is_interesting(&p));
    // test3: an in-place-update sidecar still running
    let p: CachedPod = serde_json::from_value(json!({
        "spec": {"restartPolicy": "OnFailure", "containers": [
            {"name": "main"},
            {"name": "normal-sidecar1", "env": [{"name": TERMINATE, "value": "true"}]},
            {"name": "inplace-update-sidecar1", "env": [{"name": WITH_IMAGE, "value": "inplace-update/image"}]},
        ]},
        "status": {"containerStatuses": [succeeded("main"), succeeded("normal-sidecar1"), running("inplace-update-sidecar1")]},
    }))
    .unwrap();
    assert!(is_interesting(&p));
    // not: pending, Always, no sidecar, being deleted, sidecars all done
    let p = demo("Never", "Pending", succeeded("main"), running("sidecar"));
    assert!(!is_interesting(&p));
    let p = demo("Always", "Running", succeeded("main"), running("sidecar"));
    assert!(!is_interesting(&p));
    let p = pod(
        "Never",
        "Running",
        vec![main_c("main"), main_c("b")],
        vec![succeeded("main"), running("b")],
    );
    assert!(!is_interesting(&p));
    let mut p = demo("Never", "Running", succeeded("main"), running("sidecar"));
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::UNIX_EPOCH,
    ));
    assert!(!is_interesting(&p));
    let p = demo("Never", "Running", succeeded("main"), failed("sidecar"));
    assert!(!is_interesting(&p));
    // an env value other than true (any case) is no sidecar
    let p = pod(
        "Never",
        "Running",
        vec![
            main_c("main"),
            json!({"name": "s", "env": [{"name": TERMINATE, "value": "false"}]}),
        ],
        vec![succeeded("main"), running("s")],
    );
    assert!(!is_interesting(&p));
}

#[test]
fn sidecar_names_by_node_kind() {
    let p: CachedPod = serde_json::from_value(json!({"spec": {"containers": [
        {"name": "main"},
        {"name": "normal-sidecar1", "env": [{"name": TERMINATE, "value": "true"}, {"name": WITH_IMAGE, "value": "true"}]},
        {"name": "ignore-sidecar1", "env": [{"name": TERMINATE, "value": "true"}, {"name": IGNORE, "value": "true"}]},
    ]}}))
    .unwrap();
    assert_eq!(
        sidecar_names(&p, false),
        (
            names(&["normal-sidecar1"]),
            names(&["ignore-sidecar1"]),
            names(&[])
        )
    );
    let p: CachedPod = serde_json::from_value(json!({"spec": {"containers": [
        {"name": "main"},
        {"name": "vk-sidecar1", "env": [{"name": TERMINATE, "value": "true"}, {"name": WITH_IMAGE, "value": "true"}]},
        {"name": "ignore-sidecar1", "env": [{"name": TERMINATE, "value": "true"}, {"name": IGNORE, "value": "true"}]},
    ]}}))
    .unwrap();
    assert_eq!(
        sidecar_names(&p, true),
        (names(&[]), names(&[]), names(&["vk-sidecar1"]))
    );
    // IGNORE without TERMINATE is nothing; TRUE counts
    let p: CachedPod = serde_json::from_value(json!({"spec": {"containers": [
        {"name": "a", "env": [{"name": IGNORE, "value": "true"}]},
        {"name": "b", "env": [{"name": TERMINATE, "value": "True"}, {"name": IGNORE, "value": "TRUE"}]},
    ]}}))
    .unwrap();
    assert_eq!(
        sidecar_names(&p, false),
        (names(&[]), names(&["b"]), names(&[]))
    );
}

// ---- sidecar_terminator_pod_event_handler_test.go ----

fn rv(mut p: CachedPod, v: &str) -> CachedPod {
    p.metadata.resource_version = Some(v.into());
    p
}

#[test]
fn update_events() {
    let old = || {
        demo(
            "Never",
            "Running",
            uncompleted("main"),
            uncompleted("sidecar"),
        )
    };
    let cases: Vec<(&str, CachedPod, CachedPod, bool)> = vec![
        (
            "pod not running",
            old(),
            demo(
                "Never",
                "Pending",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
        (
            "restartPolicy Always",
            old(),
            demo(
                "Always",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
        (
            "main uncompleted -> completed, sidecar uncompleted",
            old(),
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            true,
        ),
        (
            "main completed -> completed, sidecar uncompleted",
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            true,
        ),
        (
            "main uncompleted -> completed, sidecar completed",
            old(),
            demo("Never", "Running", succeeded("main"), succeeded("sidecar")),
            false,
        ),
        (
            "main completed -> completed, sidecar completed",
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            demo("Never", "Running", succeeded("main"), succeeded("sidecar")),
            false,
        ),
        (
            "sidecar completed, pod succeeded",
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            demo(
                "Never",
                "Succeeded",
                succeeded("main"),
                succeeded("sidecar"),
            ),
            false,
        ),
        (
            "sidecar failed, pod succeeded",
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            demo("Never", "Succeeded", succeeded("main"), failed("sidecar")),
            false,
        ),
        (
            "main completed -> uncompleted, sidecar completed",
            demo("Never", "Running", succeeded("main"), succeeded("sidecar")),
            demo(
                "Never",
                "Running",
                uncompleted("main"),
                succeeded("sidecar"),
            ),
            false,
        ),
        (
            "main completed -> uncompleted, sidecar uncompleted",
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            demo(
                "Never",
                "Running",
                uncompleted("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
        (
            "main uncompleted, sidecar uncompleted -> completed",
            old(),
            demo(
                "Never",
                "Running",
                uncompleted("main"),
                succeeded("sidecar"),
            ),
            false,
        ),
    ];
    for (name, old, new, want) in cases {
        assert_eq!(
            wanted_on_update(&rv(old, "1"), &rv(new, "2")),
            want,
            "{name}"
        );
    }
    // the same resourceVersion is no change
    let p = demo(
        "Never",
        "Running",
        succeeded("main"),
        uncompleted("sidecar"),
    );
    assert!(!wanted_on_update(&p, &p));
}

#[test]
fn create_events() {
    let cases = [
        (
            demo(
                "Never",
                "Pending",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
        (
            demo(
                "Always",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
        (
            demo(
                "Never",
                "Running",
                succeeded("main"),
                uncompleted("sidecar"),
            ),
            true,
        ),
        (
            demo(
                "Never",
                "Succeeded",
                succeeded("main"),
                succeeded("sidecar"),
            ),
            false,
        ),
        (
            demo("Never", "Succeeded", succeeded("main"), failed("sidecar")),
            false,
        ),
        (
            demo(
                "Never",
                "Running",
                uncompleted("main"),
                succeeded("sidecar"),
            ),
            false,
        ),
        (
            demo(
                "Never",
                "Running",
                uncompleted("main"),
                uncompleted("sidecar"),
            ),
            false,
        ),
    ];
    for (i, (p, want)) in cases.into_iter().enumerate() {
        assert_eq!(is_interesting(&p), want, "case {i}");
    }
}

// ---- the writes ----

#[test]
fn the_request_is_named_owned_and_shaped_as_openkruise_s() {
    let p = demo("Never", "Running", succeeded("main"), running("sidecar"));
    let crr = kill_request(&p, &names(&["sidecar"]));
    assert_eq!(
        serde_json::to_value(&crr).unwrap(),
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "ContainerRecreateRequest",
            "metadata": {
                "name": "sidecar-termination-87076677",
                "namespace": "test-sidecar-terminator",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                    "name": "job-generate-rand-str", "uid": "87076677",
                    "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {
                "podName": "job-generate-rand-str",
                "containers": [{"name": "sidecar"}],
                "strategy": {"forceRecreate": true, "failurePolicy": "Ignore"},
            },
        })
    );
    assert_eq!(go_list(&names(&["b", "a"])), "[a b]");
}

#[test]
fn the_terminated_patch_is_go_s_pod_status() {
    let now: jiff::Timestamp = "2026-03-04T05:06:07.89Z".parse().unwrap();
    assert_eq!(
        terminated_status_patch("Succeeded", now),
        json!({"status": {"phase": "Succeeded", "conditions": [{
            "type": "SidecarTerminated", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": "2026-03-04T05:06:07Z",
            "message": "Terminated by Sidecar Terminator"}]}})
    );
}
