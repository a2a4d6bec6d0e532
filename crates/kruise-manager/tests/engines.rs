//! The shared engines against the real API server: ControllerRevisions built by
//! `revision` survive a round trip (name, hash, data, template), lifecycle patches merge as
//! OpenKruise relies on (labels, timestamp, finalizers), and the `KruisePodReady` not-ready keys
//! written through `pods/status` are accepted and read back.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::jiff::Timestamp;
use kruise_api::apps::common::LifecycleHook;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_e2e::{TestEnv, wait_for};
use kruise_engines::lifecycle::{self, LifecycleState, NotReadyMessage, readiness};
use kruise_engines::revision;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn env() -> TestEnv {
    TestEnv::connect().await.expect("testbed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_revision_round_trip() {
    let env = env().await;
    let ns = env.namespace("engines-rev").await.expect("namespace");
    let api: Api<ControllerRevision> = ns.api();
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "web"}, "annotations": {"note": "<a&b>"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25", "env": [{"name": "X", "value": "1"}]}],
                 "nodeSelector": {}, "tolerations": []}
    }))
    .unwrap();
    let data = revision::template_patch(&template).unwrap();
    let parent = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        name: Some("web".into()),
        namespace: Some(ns.name().into()),
        uid: Some("00000000-0000-0000-0000-000000000001".into()),
        ..Default::default()
    };
    // An owner that does not exist would be garbage collected; use no owner for the test.
    let mut rev = revision::new_controller_revision(
        &parent,
        revision::controller_ref("apps.kruise.io/v1alpha1", "CloneSet", "web", "uid"),
        template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
        data.clone(),
        1,
        Some(0),
    );
    rev.metadata.owner_references = None;
    let created = api
        .create(&PostParams::default(), &rev)
        .await
        .expect("create revision");
    let got = api.get(&created.name_any()).await.expect("get revision");
    let hash = revision::hash_revision(&got.data.0, Some(0));
    assert_eq!(got.name_any(), format!("web-{hash}"));
    assert_eq!(got.labels()[revision::CONTROLLER_REVISION_HASH_LABEL], hash);
    assert_eq!(got.labels()["app"], "web");
    assert!(revision::equal_revision(&got, &rev));
    assert_eq!(got.revision, Some(1));
    let back = revision::template_from_revision(&got).unwrap();
    assert_eq!(revision::template_patch(&back).unwrap(), data);
    // A second revision with the same data is found equal; a collision gets another name.
    let (other_name, _) = revision::revision_name_for("web", &got.data.0, Some(1));
    assert_ne!(other_name, got.name_any());
    let list = api.list(&Default::default()).await.unwrap().items;
    assert_eq!(revision::find_equal_revisions(&list, &rev), vec![0]);
    assert_eq!(revision::next_revision(&list), 2);
}

fn test_pod(name: &str, gate: bool) -> Pod {
    let mut spec = json!({
        "containers": [{"name": "main", "image": "busybox"}],
        "nodeName": "kwok-node-0",
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
    });
    if gate {
        spec["readinessGates"] = json!([{"conditionType": keys::KRUISE_POD_READY}]);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "engines"}, "finalizers": ["example.com/existing"]},
        "spec": spec,
    }))
    .unwrap()
}

async fn clear_finalizers(api: &Api<CachedPod>, name: &str) {
    let _ = api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_patches_merge_on_a_real_pod() {
    let env = env().await;
    let ns = env.namespace("engines-lc").await.expect("namespace");
    let full: Api<Pod> = ns.api();
    let pod = CachedPod::from(
        full.create(&PostParams::default(), &test_pod("p", false))
            .await
            .expect("pod"),
    );
    let api: Api<CachedPod> = ns.api();
    let now: Timestamp = "2024-05-06T07:08:09Z".parse().unwrap();

    let plan = lifecycle::plan_state_change(&pod, LifecycleState::PreparingNormal, false, now);
    let patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(plan.patch.unwrap()),
        )
        .await
        .expect("state patch");
    assert_eq!(
        lifecycle::pod_state(&patched),
        Some(LifecycleState::PreparingNormal)
    );
    assert_eq!(
        patched.annotations()[keys::LIFECYCLE_TIMESTAMP],
        "2024-05-06T07:08:09Z"
    );
    assert_eq!(patched.labels()["app"], "engines");

    let hook = LifecycleHook {
        labels_handler: Some([("hold".to_owned(), "true".to_owned())].into()),
        finalizers_handler: Some(vec!["example.com/hook".to_owned()]),
        mark_pod_not_ready: None,
    };
    let plan = lifecycle::plan_state_change_with_handler(
        &patched,
        LifecycleState::PreparingUpdate,
        Some(&hook),
        now,
    );
    let patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(plan.patch.unwrap()),
        )
        .await
        .expect("handler patch");
    assert_eq!(
        lifecycle::pod_state(&patched),
        Some(LifecycleState::PreparingUpdate)
    );
    assert!(lifecycle::is_all_hooked(&hook, &patched));
    // Strategic merge adds the hook finalizer and keeps the existing one.
    let mut finalizers = patched.finalizers().to_vec();
    finalizers.sort();
    assert_eq!(finalizers, ["example.com/existing", "example.com/hook"]);
    // Already in the state: nothing to patch.
    assert!(
        !lifecycle::plan_state_change(&patched, LifecycleState::PreparingUpdate, false, now)
            .updates_pod()
    );
    clear_finalizers(&api, "p").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kruise_pod_ready_keys_through_pod_status() {
    let env = env().await;
    let ns = env.namespace("engines-ready").await.expect("namespace");
    let full: Api<Pod> = ns.api();
    full.create(&PostParams::default(), &test_pod("p", true))
        .await
        .expect("pod");
    let api: Api<CachedPod> = ns.api();
    // kwok reports the pod running; wait for its status so our write races less with it.
    wait_for("pod running", Duration::from_secs(60), || async {
        api.get("p")
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await
    .expect("running");

    let msg = NotReadyMessage::new(
        lifecycle::NOT_READY_USER_AGENT,
        lifecycle::PRE_DELETE_HOOK_KEY,
    );
    let other = NotReadyMessage::new("ContainerRecreateRequest", "crr");
    for m in [&msg, &other] {
        write_status(&api, |pod, now| readiness::add_not_ready_key(pod, m, now)).await;
    }
    let got = api.get_status("p").await.unwrap();
    let c = readiness::readiness_condition(&got)
        .cloned()
        .expect("condition");
    assert_eq!(
        c.message.as_deref(),
        Some(
            r#"[{"userAgent":"ContainerRecreateRequest","key":"crr"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#
        )
    );
    assert_ne!(c.status, "True");
    assert!(readiness::already_has_key(&got, &other) || c.status.is_empty());

    for m in [&msg, &other] {
        write_status(&api, |pod, now| {
            readiness::remove_not_ready_key(pod, m, now)
        })
        .await;
    }
    let got = api.get_status("p").await.unwrap();
    let c = readiness::readiness_condition(&got)
        .cloned()
        .expect("condition");
    assert_eq!(c.status, "True");
    assert_eq!(c.message.as_deref(), Some("[]"));
    clear_finalizers(&api, "p").await;
}

/// Re-reads the pod, applies `change`, and writes its status (the manager's
/// `update_pod_status`: a JSON patch bound to the read's resourceVersion), retrying on conflict.
async fn write_status(api: &Api<CachedPod>, change: impl Fn(&mut CachedPod, Timestamp) -> bool) {
    for _ in 0..10 {
        let base = api.get_status("p").await.unwrap();
        let mut pod = base.clone();
        if !change(&mut pod, Timestamp::now()) {
            return;
        }
        match kruise_manager::workload::update_pod_status(api, &base, &pod).await {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => panic!("replace status: {e}"),
        }
    }
    panic!("status write kept conflicting");
}
