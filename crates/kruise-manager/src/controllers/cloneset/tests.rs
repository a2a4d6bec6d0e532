//! The CloneSet controller after a restart, against a scripted API whose pod list is slow: it
//! must create and delete nothing before its pod cache holds the CloneSet's pods.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use kruise_runtime::features::FeatureGates;
use kruise_runtime::runner::{Context, ControllerConfig};
use kruise_runtime::testing::{ListReply, ScriptedApi};

pub(super) fn cloneset(replicas: i32) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "cs-uid",
            "resourceVersion": "5", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "updateStrategy": {"paused": true},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}})
}

pub(super) fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "resourceVersion": "7",
            "labels": {"app": "web", "apps.kruise.io/cloneset-instance-id": name},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "name": "web", "uid": "cs-uid", "controller": true}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "nginx"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
}

#[tokio::test]
async fn restarted_controller_creates_no_pod_before_its_pods_are_listed() {
    let slow = Duration::from_millis(1500);
    let api = ScriptedApi::new();
    api.list(
        "/apis/apps.kruise.io/v1alpha1/clonesets",
        ListReply::Now(vec![cloneset(3)]),
    );
    api.list(
        "/api/v1/pods",
        ListReply::After(slow, vec![pod("web-a"), pod("web-b"), pod("web-c")]),
    );
    let ctx = Arc::new(Context::new(
        api.client(),
        FeatureGates::default(),
        ControllerConfig::default(),
    ));
    let run = tokio::spawn(super::setup(&ctx, 3, false));
    // Long enough for a reconcile after the sync to write (revision, status).
    tokio::time::sleep(slow + Duration::from_secs(2)).await;
    ctx.shutdown.cancel();
    run.await.unwrap().unwrap();

    let seen = api.seen();
    let pods_listed = seen
        .iter()
        .find(|s| s.path == "/api/v1/pods" && !s.watch && s.method == "GET")
        .and_then(|s| s.answered)
        .expect("pods listed");
    let writes: Vec<_> = seen.iter().filter(|s| s.method != "GET").collect();
    assert!(
        !writes.is_empty(),
        "the controller never reconciled after the caches synced: {seen:?}"
    );
    for w in &writes {
        assert!(
            w.at >= pods_listed,
            "{} {} at {:?}, before the pod list was answered at {pods_listed:?}",
            w.method,
            w.path,
            w.at
        );
        assert!(
            !w.path.contains("/pods"),
            "a pod write with all 3 pods present: {} {}",
            w.method,
            w.path
        );
    }
}
