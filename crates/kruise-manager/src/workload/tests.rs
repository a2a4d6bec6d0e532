//! Error paths of the shared workload controls against a scripted API (no cluster): conflicts
//! retried, partial create failures, expectations rolled back.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim};
use kruise_api::pod::CachedPod;
use kruise_engines::expectations::{
    ExpectationCheck, ResourceVersionExpectations, ScaleAction, ScaleExpectations,
};
use kruise_engines::lifecycle::LifecycleState;
use kruise_runtime::events::EventRecorder;
use kruise_runtime::testing::{Reply, ScriptedApi};
use kube::api::Api;
use serde_json::json;

use super::pods::{Deletion, EventStyle, NewPod, PodControl};
use super::{ControlError, history, lifecycle};

const NS: &str = "ns";
const KEY: &str = "ns/web";
const PODS: &str = "/api/v1/namespaces/ns/pods";
const PVCS: &str = "/api/v1/namespaces/ns/persistentvolumeclaims";
const REVISIONS: &str = "/apis/apps/v1/namespaces/ns/controllerrevisions";

fn pod_json(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                     "resourceVersion": "5",
                     "labels": {"app": "web", "lifecycle.apps.kruise.io/state": "Normal"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]}})
}

fn pod(name: &str) -> CachedPod {
    serde_json::from_value(pod_json(name)).unwrap()
}

/// The same pod whole, as one about to be created.
fn full_pod(name: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(pod_json(name)).unwrap()
}

fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
    .unwrap()
}

fn owner() -> ObjectReference {
    ObjectReference {
        api_version: Some("apps.kruise.io/v1alpha1".into()),
        kind: Some("CloneSet".into()),
        name: Some("web".into()),
        namespace: Some(NS.into()),
        uid: Some("cs-uid".into()),
        ..ObjectReference::default()
    }
}

fn pending(scale: &ScaleExpectations, action: ScaleAction) -> Vec<String> {
    scale
        .satisfied_detail(KEY)
        .pending
        .get(&action)
        .cloned()
        .unwrap_or_default()
}

fn conflict() -> Reply {
    Reply::Status(409, "the object has been modified".into())
}

#[tokio::test]
async fn a_failed_batch_stops_creation_and_withdraws_the_expectations_it_will_not_see() {
    let api = ScriptedApi::new();
    // Slow start: [p0], then [p1, p2] of which p1 fails, so [p3, p4] are never sent.
    api.reply(
        "POST",
        PODS,
        [
            Reply::Default,
            Reply::Status(500, "etcd timeout".into()),
            Reply::Default,
        ],
    );
    let client = api.client();
    let recorder = EventRecorder::new(client.clone());
    let scale = ScaleExpectations::new();
    let owner = owner();
    let control = PodControl {
        client: &client,
        recorder: &recorder,
        owner: &owner,
        namespace: NS,
        key: KEY,
        scale: &scale,
        style: EventStyle::CloneSet,
    };
    let new = (0..5)
        .map(|i| NewPod {
            pod: full_pod(&format!("p{i}")),
            claims: Vec::new(),
        })
        .collect();
    let created = control
        .create_slow_start(new, &BTreeSet::new())
        .await
        .expect("a partial failure is not an error");
    assert_eq!(created, 2);
    let posts = api
        .calls()
        .iter()
        .filter(|c| *c == &format!("POST {PODS}"))
        .count();
    assert_eq!(
        posts,
        3,
        "no batch after the failing one: {:?}",
        api.calls()
    );
    // Still expected: the two created pods, until the informer shows them.
    assert_eq!(pending(&scale, ScaleAction::Create), ["p0", "p2"]);
    scale.observe(KEY, ScaleAction::Create, "p0");
    scale.observe(KEY, ScaleAction::Create, "p2");
    assert!(matches!(
        scale.check(KEY, Duration::from_secs(300)),
        ExpectationCheck::Satisfied
    ));
}

#[tokio::test]
async fn a_create_that_fails_entirely_is_an_error_with_nothing_left_expected() {
    let api = ScriptedApi::new();
    api.reply("POST", PODS, [Reply::Status(403, "forbidden".into())]);
    // The PVC exists already from an earlier attempt (409): it is not expected either.
    api.reply("POST", PVCS, [conflict()]);
    let client = api.client();
    let recorder = EventRecorder::new(client.clone());
    let scale = ScaleExpectations::new();
    let owner = owner();
    let control = PodControl {
        client: &client,
        recorder: &recorder,
        owner: &owner,
        namespace: NS,
        key: KEY,
        scale: &scale,
        style: EventStyle::CloneSet,
    };
    let err = control
        .create_slow_start(
            vec![NewPod {
                pod: full_pod("p0"),
                claims: vec![claim("data-p0")],
            }],
            &BTreeSet::new(),
        )
        .await
        .expect_err("nothing created");
    assert!(matches!(err, ControlError::Kube(_)), "{err}");
    let calls = api.calls();
    assert_eq!(
        calls
            .iter()
            .filter(|c| !c.contains("/events"))
            .collect::<Vec<_>>(),
        [&format!("POST {PVCS}"), &format!("POST {PODS}")],
        "PVC first, then the pod"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("POST /apis/events.k8s.io/")),
        "a FailedCreate Event: {calls:?}"
    );
    assert!(matches!(
        scale.check(KEY, Duration::from_secs(300)),
        ExpectationCheck::Satisfied
    ));
}

#[tokio::test]
async fn deleting_a_pod_already_gone_counts_as_deleted_and_deletes_its_claims() {
    let api = ScriptedApi::new();
    api.reply(
        "DELETE",
        &format!("{PODS}/p0"),
        [Reply::Status(404, "not found".into())],
    );
    api.reply(
        "DELETE",
        &format!("{PVCS}/data-p0"),
        [Reply::Status(404, "not found".into())],
    );
    let client = api.client();
    let recorder = EventRecorder::new(client.clone());
    let scale = ScaleExpectations::new();
    let owner = owner();
    let control = PodControl {
        client: &client,
        recorder: &recorder,
        owner: &owner,
        namespace: NS,
        key: KEY,
        scale: &scale,
        style: EventStyle::CloneSet,
    };
    let c = claim("data-p0");
    let done = control
        .delete_or_hold(&pod("p0"), [&c], None, &ResourceVersionExpectations::new())
        .await
        .unwrap();
    assert_eq!(done, Deletion::Deleted);
    assert!(pending(&scale, ScaleAction::Delete).is_empty());
}

#[tokio::test]
async fn a_pod_held_by_the_pre_delete_hook_moves_to_preparing_delete_once() {
    let api = ScriptedApi::new();
    let patched = serde_json::to_value(pod("p0")).unwrap();
    api.reply("PATCH", &format!("{PODS}/p0"), [Reply::Object(patched)]);
    let client = api.client();
    let recorder = EventRecorder::new(client.clone());
    let scale = ScaleExpectations::new();
    let owner = owner();
    let control = PodControl {
        client: &client,
        recorder: &recorder,
        owner: &owner,
        namespace: NS,
        key: KEY,
        scale: &scale,
        style: EventStyle::CloneSet,
    };
    let hook: kruise_api::apps::common::LifecycleHook =
        serde_json::from_value(json!({"labelsHandler": {"app": "web"}})).unwrap();
    let rvs = ResourceVersionExpectations::new();
    let done = control
        .delete_or_hold(&pod("p0"), [], Some(&hook), &rvs)
        .await
        .unwrap();
    assert_eq!(done, Deletion::MovedToPreparingDelete);
    assert_eq!(
        api.calls(),
        [format!("PATCH {PODS}/p0")],
        "a label patch, no delete"
    );
    let mut held = pod("p0");
    held.metadata.labels.as_mut().unwrap().insert(
        "lifecycle.apps.kruise.io/state".into(),
        "PreparingDelete".into(),
    );
    assert_eq!(
        control
            .delete_or_hold(&held, [], Some(&hook), &rvs)
            .await
            .unwrap(),
        Deletion::Held
    );
    assert_eq!(api.calls().len(), 1, "nothing written for a held pod");
}

#[tokio::test]
async fn a_status_conflict_in_a_lifecycle_write_is_retried_on_a_fresh_read() {
    let api = ScriptedApi::new();
    let status_path = format!("{PODS}/p0/status");
    // A pod with the KruisePodReady gate: the not-ready key goes into its condition.
    let mut gated = serde_json::to_value(pod("p0")).unwrap();
    gated["spec"]["readinessGates"] = json!([{"conditionType": "KruisePodReady"}]);
    gated["status"] = json!({"conditions": [{"type": "KruisePodReady", "status": "True"}]});
    api.reply(
        "GET",
        &status_path,
        [Reply::Object(gated.clone()), Reply::Object(gated.clone())],
    );
    // The status is written as a JSON patch bound to the read's resourceVersion (the cached
    // pod type does not hold the whole status a PUT would need).
    api.reply(
        "PATCH",
        &status_path,
        [conflict(), Reply::Object(gated.clone())],
    );
    let patched = serde_json::to_value(pod("p0")).unwrap();
    api.reply("PATCH", &format!("{PODS}/p0"), [Reply::Object(patched)]);
    let rvs = ResourceVersionExpectations::new();
    lifecycle::set_state(
        &api.client(),
        &rvs,
        &serde_json::from_value(gated).unwrap(),
        LifecycleState::PreparingUpdate,
        true,
    )
    .await
    .expect("the conflict is retried");
    assert_eq!(
        api.calls(),
        [
            format!("GET {status_path}"),
            format!("PATCH {status_path}"),
            format!("GET {status_path}"),
            format!("PATCH {status_path}"),
            format!("PATCH {PODS}/p0"),
        ]
    );
}

fn revision(name: &str, data: serde_json::Value, number: i64) -> ControllerRevision {
    serde_json::from_value(
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": NS}, "data": data, "revision": number}),
    )
    .unwrap()
}

#[tokio::test]
async fn a_revision_name_clash_with_other_content_bumps_the_collision_count() {
    let api = ScriptedApi::new();
    api.reply("POST", REVISIONS, [conflict(), Reply::Default]);
    api.reply(
        "GET",
        &format!("{REVISIONS}/web-0"),
        [Reply::Object(
            serde_json::to_value(revision("web-0", json!({"other": true}), 1)).unwrap(),
        )],
    );
    let revisions: Api<ControllerRevision> = Api::namespaced(api.client(), NS);
    let (written, collision) = history::ensure_revision(&revisions, &[], 0, |c| {
        Ok(revision(&format!("web-{c}"), json!({"spec": "x"}), 1))
    })
    .await
    .unwrap();
    assert_eq!(collision, 1);
    assert_eq!(written.metadata.name.as_deref(), Some("web-1"));

    // A clash with equal content reuses the existing revision.
    let api = ScriptedApi::new();
    api.reply("POST", REVISIONS, [conflict()]);
    api.reply(
        "GET",
        &format!("{REVISIONS}/web-0"),
        [Reply::Object(
            serde_json::to_value(revision("web-0", json!({"spec": "x"}), 1)).unwrap(),
        )],
    );
    let revisions: Api<ControllerRevision> = Api::namespaced(api.client(), NS);
    let (written, collision) = history::ensure_revision(&revisions, &[], 0, |c| {
        Ok(revision(&format!("web-{c}"), json!({"spec": "x"}), 1))
    })
    .await
    .unwrap();
    assert_eq!(
        (written.metadata.name.as_deref(), collision),
        (Some("web-0"), 0)
    );
}

/// A pod update built on a cached (slimmed) pod, applied to the pod as the server holds it,
/// changes exactly what the update changed and keeps what the cache dropped; the patch carries
/// the cached resourceVersion as precondition and no status.
#[test]
fn pod_update_patch_applies_to_the_full_pod_and_keeps_what_the_cache_dropped() {
    let server = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d", "resourceVersion": "7", "uid": "u",
            "labels": {"a": "1", "gone": "x"}, "annotations": {"k": "v"},
            "finalizers": ["f1"],
            "managedFields": [{"manager": "kubelet", "operation": "Update"}]},
        "spec": {"nodeName": "n",
            "containers": [
                {"name": "c", "image": "i:1", "volumeMounts": [
                    {"name": "kube-api-access-x", "mountPath": "/s"},
                    {"name": "data", "mountPath": "/d"}]},
                {"name": "side", "image": "s:1"}],
            "volumes": [
                {"name": "kube-api-access-x", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-p"}}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "qosClass": "BestEffort",
            "conditions": [{"type": "Ready", "status": "True"}]}});
    let mut cached: CachedPod = serde_json::from_value(server.clone()).unwrap();
    // What the shared cache keeps of it (kruise-runtime's slim).
    cached.metadata.managed_fields = None;
    let spec = cached.spec.as_mut().unwrap();
    spec.volumes.as_mut().unwrap().remove(0);
    // (`CachedPod` holds no `qosClass`: the status it keeps is the slim one.)
    assert!(
        serde_json::to_value(&cached).unwrap()["status"]
            .get("qosClass")
            .is_none()
    );

    let mut updated = cached.clone();
    updated.spec.as_mut().unwrap().containers[1].image = Some("s:2".into());
    let labels = updated.metadata.labels.as_mut().unwrap();
    labels.remove("gone");
    labels.insert("b/c~d".into(), "2".into());
    updated
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("k".into(), "w".into());
    updated.metadata.finalizers = Some(vec!["f1".into(), "f2".into()]);
    // A status change on the copy is not the update's business.
    updated.status.as_mut().unwrap().phase = Some("Failed".into());

    let patch = super::pod_update_patch(&cached, &updated).unwrap();
    let ops = serde_json::to_value(&patch).unwrap();
    assert_eq!(
        ops[0],
        json!({"op": "replace", "path": "/metadata/resourceVersion", "value": "7"})
    );
    assert!(
        ops.as_array().unwrap().iter().all(|op| !op["path"]
            .as_str()
            .unwrap()
            .starts_with("/status")
            && !op["path"].as_str().unwrap().starts_with("/spec/volumes")),
        "{ops}"
    );

    let mut got = server.clone();
    json_patch::patch(&mut got, &patch).unwrap();
    let mut want = server;
    want["spec"]["containers"][1]["image"] = json!("s:2");
    want["metadata"]["labels"] = json!({"a": "1", "b/c~d": "2"});
    want["metadata"]["annotations"]["k"] = json!("w");
    want["metadata"]["finalizers"] = json!(["f1", "f2"]);
    assert_eq!(got, want);

    // Nothing changed: only the precondition.
    let same = super::pod_update_patch(&cached, &cached).unwrap();
    assert_eq!(same.0.len(), 1);
}

#[test]
fn count_only_status_changes_wait_out_the_interval_since_the_last_write() {
    use super::{STATUS_COUNTS_INTERVAL, StatusWrites, hold_for};
    use std::time::Instant;
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    assert_eq!(hold_for(None, t0, ms(1000)), None);
    assert_eq!(hold_for(Some(t0), t0 + ms(300), ms(1000)), Some(ms(700)));
    assert_eq!(hold_for(Some(t0), t0 + ms(1000), ms(1000)), None);
    // A clock read before the write (another worker) holds for the whole interval, no panic.
    assert_eq!(hold_for(Some(t0 + ms(5)), t0, ms(1000)), Some(ms(1000)));

    let writes = StatusWrites::default();
    assert_eq!(writes.hold("ns/a", t0), None);
    writes.wrote("ns/a", t0);
    assert_eq!(
        writes.hold("ns/a", t0 + ms(400)),
        Some(STATUS_COUNTS_INTERVAL - ms(400))
    );
    assert_eq!(writes.hold("ns/b", t0 + ms(400)), None, "per workload");
    assert_eq!(writes.hold("ns/a", t0 + STATUS_COUNTS_INTERVAL), None);
    // Old entries are dropped when others are written.
    writes.wrote("ns/b", t0 + STATUS_COUNTS_INTERVAL * 2);
    assert_eq!(writes.last.lock().unwrap().len(), 1);
}

#[test]
fn edits_of_the_cached_view_apply_to_the_full_pod_and_keep_the_rest() {
    let mut full: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "web-0", "labels": {"app": "web"}},
        "spec": {"dnsPolicy": "ClusterFirst",
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "containers": [{"name": "main", "image": "nginx", "ports": [{"containerPort": 80}]}],
            "volumes": [{"name": "cfg", "configMap": {"name": "c"}}]}}))
    .unwrap();
    let before = serde_json::to_value(&full).unwrap();
    super::edit_as_cached(&mut full, |pod| {
        pod.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("statefulset.kubernetes.io/pod-name".into(), "web-0".into());
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.hostname = Some("web-0".into());
        let claim: k8s_openapi::api::core::v1::Volume = serde_json::from_value(
            json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}),
        )
        .unwrap();
        spec.volumes.get_or_insert_with(Vec::new).insert(0, claim);
    })
    .unwrap();
    let mut want = before;
    want["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = json!("web-0");
    want["spec"]["hostname"] = json!("web-0");
    want["spec"]["volumes"] = json!([
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
        {"name": "cfg", "configMap": {"name": "c"}}]);
    assert_eq!(serde_json::to_value(&full).unwrap(), want);

    // No edit, no change.
    let same = full.clone();
    super::edit_as_cached(&mut full, |_| {}).unwrap();
    assert_eq!(full, same);
}

fn pod_at(name: &str, resource_version: &str) -> std::sync::Arc<CachedPod> {
    let mut p = pod(name);
    p.metadata.resource_version = Some(resource_version.to_owned());
    std::sync::Arc::new(p)
}

#[test]
fn a_cache_event_leaves_expectations_to_the_sync_that_reads_the_pod() {
    use kruise_runtime::cache::CacheEvent;
    let rvs = ResourceVersionExpectations::new();
    // A sync read the pod at 5 and wrote it: the API server answered 9.
    let snapshot = pod_at("a", "5");
    rvs.expect_object(&pod_at("a", "9").metadata);
    // The cache reaches 9 while the next sync still holds the snapshot it took before.
    super::forget_deleted(&rvs, &CacheEvent::Apply(pod_at("a", "9")));
    assert_eq!(rvs.expected("uid-a").as_deref(), Some("9"));
    assert!(
        !rvs.is_satisfied_object(&snapshot.metadata).0,
        "a snapshot older than the write must not be decided on"
    );
    // The first snapshot at or past the write satisfies (and clears) the expectation.
    assert!(rvs.is_satisfied_object(&pod_at("a", "9").metadata).0);
    assert_eq!(rvs.expected("uid-a"), None);

    // A deleted pod's expectation is forgotten: nothing will ever show its new version.
    rvs.expect_object(&pod_at("a", "12").metadata);
    super::forget_deleted(&rvs, &CacheEvent::Delete(pod_at("a", "10")));
    assert_eq!(rvs.expected("uid-a"), None);
}

#[tokio::test]
async fn do_slowly_doubles_batches_and_stops_after_a_failing_batch() {
    use std::sync::Mutex;
    let calls = Mutex::new(Vec::new());
    // Items 0..10, item 4 fails: batches [0], [1, 2], [3, 4, 5, 6] run, then it stops.
    let r = super::do_slowly((0..10).collect(), 1, |i: i32| {
        calls.lock().unwrap().push(i);
        async move {
            if i == 4 {
                Err(format!("item {i}"))
            } else {
                Ok(())
            }
        }
    })
    .await;
    assert_eq!(r, Err("item 4".to_string()));
    let mut seen = calls.into_inner().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3, 4, 5, 6]);
    let ok = super::do_slowly(vec![1, 2, 3], 1, |_| async { Ok::<(), String>(()) }).await;
    assert_eq!(ok, Ok(3));
    let none = super::do_slowly(Vec::<i32>::new(), 1, |_| async { Ok::<(), String>(()) }).await;
    assert_eq!(none, Ok(0));
}
