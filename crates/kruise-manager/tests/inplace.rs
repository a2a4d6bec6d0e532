//! End-to-end tests of the in-place update engine (`kruise_engines::inplace`) against the testbed:
//! the status patches it produces are accepted by a real apiserver (strategic merge on
//! `pods/status`, resourceVersion binding), the pod objects it prepares are valid pod updates,
//! and the completion check recognises the (kwok-simulated) kubelet restarting containers on
//! their new images — including the grace period and container launch-priority batches.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_e2e::{TestEnv, TestNamespace, wait_for};
use kruise_engines::inplace::{self, RefreshAction, TemplateHashRevisionAdapter, UpdateOptions};
use kruise_engines::podutil;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const ADAPTER: TemplateHashRevisionAdapter = TemplateHashRevisionAdapter { short_hash: false };

async fn env() -> TestEnv {
    TestEnv::connect().await.expect("testbed")
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

fn barrier_env(pod: &str, priority: i32) -> Value {
    json!([{"name": keys::CONTAINER_LAUNCH_BARRIER_ENV, "valueFrom": {"configMapKeyRef": {
        "name": format!("{pod}-barrier"), "key": format!("p_{priority}")}}}])
}

/// A pod of revision `demo-1` with the `InPlaceUpdateReady` readiness gate.
fn pod(name: &str, containers: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {
            "app": "demo", "v": "1",
            "controller-revision-hash": "demo-1", "pod-template-hash": "1"}},
        "spec": {
            "containers": containers,
            "readinessGates": [{"conditionType": inplace::IN_PLACE_UPDATE_READY}],
            "terminationGracePeriodSeconds": 0
        }
    }))
    .expect("pod")
}

/// ControllerRevision data for a template with the given label `v` and container images.
fn revision(name: &str, v: &str, images: &[(&str, &str)]) -> ControllerRevision {
    let containers: Vec<Value> = images
        .iter()
        .map(|(n, i)| json!({"name": n, "image": i, "resources": {}}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "revision": 1,
        "data": {"spec": {"template": {"$patch": "replace",
            "metadata": {"labels": {"app": "demo", "v": v}},
            "spec": {"containers": containers}}}}
    }))
    .expect("revision")
}

async fn create_running(ns: &TestNamespace, p: Pod) -> CachedPod {
    let api: Api<CachedPod> = ns.api();
    let full: Api<Pod> = ns.api();
    let name = p.metadata.name.clone().expect("name");
    full.create(&PostParams::default(), &p)
        .await
        .expect("create pod");
    wait_for(
        &format!("pod {name} running with ready containers"),
        Duration::from_secs(60),
        || async {
            let p = api.get(&name).await.ok()?;
            (podutil::phase(&p) == "Running" && podutil::is_condition_true(&p, "ContainersReady"))
                .then_some(p)
        },
    )
    .await
    .expect("pod running")
}

/// Calls `refresh` on the latest pod until it asks for something other than `Nothing`/`Wait`, and
/// returns that action with the pod it was computed on.
async fn refresh_until_action(api: &Api<CachedPod>, name: &str) -> (RefreshAction, CachedPod) {
    wait_for(
        &format!("a refresh action for pod {name}"),
        Duration::from_secs(60),
        || async {
            let p = api.get(name).await.ok()?;
            match inplace::refresh(&p, &ADAPTER, now()).expect("refresh") {
                RefreshAction::Nothing | RefreshAction::Wait(_) => None,
                a => Some((a, p)),
            }
        },
    )
    .await
    .expect("refresh action")
}

async fn apply(api: &Api<CachedPod>, base: &CachedPod, action: RefreshAction) -> CachedPod {
    let name = base.metadata.name.as_deref().expect("name");
    match action {
        RefreshAction::UpdatePod(p) => kruise_manager::workload::update_pod(api, base, &p)
            .await
            .expect("update pod"),
        RefreshAction::PatchStatus(patch) => api
            .patch_status(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .expect("patch status"),
        other => panic!("nothing to apply: {other:?}"),
    }
}

fn image(p: &CachedPod, c: &str) -> String {
    podutil::get_container(p, c)
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn condition_status(p: &CachedPod, t: &str) -> Option<String> {
    podutil::get_condition(p, t).map(|c| c.status.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_and_metadata_update_in_place_completes() {
    let env = env().await;
    let ns = env.namespace("inplace").await.expect("namespace");
    let api: Api<CachedPod> = ns.api();
    let created = create_running(
        &ns,
        pod("p1", json!([{"name": "main", "image": "nginx:1.25"}, {"name": "side", "image": "busybox:1.36"}])),
    )
    .await;

    // A new pod with the gate: refresh initialises InPlaceUpdateReady=True, then it gets Ready.
    let RefreshAction::PatchStatus(init) =
        inplace::refresh(&created, &ADAPTER, now()).expect("refresh")
    else {
        panic!("a new gated pod needs its condition initialised")
    };
    let p = api
        .patch_status("p1", &PatchParams::default(), &Patch::Strategic(init))
        .await
        .expect("init condition");
    assert_eq!(
        condition_status(&p, inplace::IN_PLACE_UPDATE_READY).as_deref(),
        Some("True")
    );
    let ready = wait_for("pod p1 Ready", Duration::from_secs(30), || async {
        let p = api.get("p1").await.ok()?;
        podutil::is_pod_ready(&p).then_some(p)
    })
    .await
    .expect("ready");
    assert_eq!(
        inplace::refresh(&ready, &ADAPTER, now()).expect("refresh"),
        RefreshAction::Nothing
    );

    // Decide.
    let old = revision(
        "demo-1",
        "1",
        &[("main", "nginx:1.25"), ("side", "busybox:1.36")],
    );
    let new = revision(
        "demo-2",
        "2",
        &[("main", "nginx:1.26"), ("side", "busybox:1.36")],
    );
    let spec =
        inplace::calculate_update_spec(&old, &new, &UpdateOptions::default()).expect("in-place");
    assert_eq!(
        spec.container_images,
        BTreeMap::from([("main".to_string(), "nginx:1.26".to_string())])
    );
    assert!(inplace::needs_unready(&ready, &spec));

    // Step 2: not-ready first; the apiserver applies both conditions.
    let patch = inplace::not_ready_condition_patch(&ready, now()).expect("condition changes");
    let p = api
        .patch_status("p1", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("not-ready patch");
    let c = inplace::get_condition(&p).expect("condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("False", Some("StartInPlaceUpdate"))
    );
    assert_eq!(condition_status(&p, "Ready").as_deref(), Some("False"));
    assert_eq!(
        podutil::get_condition(&p, "Ready")
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some("ReadinessGatesNotReady")
    );
    assert!(inplace::not_ready_condition_patch(&p, now()).is_none());

    // Step 3: the pod update.
    let latest = api.get("p1").await.expect("get");
    let before_ids: BTreeMap<String, String> = podutil::container_statuses(&latest)
        .iter()
        .map(|s| (s.name.clone(), s.image_id.clone()))
        .collect();
    let updated = inplace::prepare_update(&latest, &spec, &ADAPTER, now()).expect("prepare");
    let written = kruise_manager::workload::update_pod(&api, &latest, &updated)
        .await
        .expect("update pod");
    assert_eq!(image(&written, "main"), "nginx:1.26");
    assert_eq!(image(&written, "side"), "busybox:1.36");
    let labels = written.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels["controller-revision-hash"], "demo-2");
    assert_eq!(labels["pod-template-hash"], "2");
    assert_eq!(labels["v"], "2");
    let state = inplace::get_state(&written)
        .expect("state")
        .expect("state present");
    assert_eq!(state.revision, "demo-2");
    assert_eq!(
        state.last_container_statuses["main"].image_id,
        before_ids["main"]
    );
    assert!(inplace::check_update_completed(&written).is_err());

    // Step 4: once the kubelet (kwok) restarted `main`, refresh flips the condition back.
    let (action, seen) = refresh_until_action(&api, "p1").await;
    assert!(
        matches!(action, RefreshAction::PatchStatus(_)),
        "{action:?}"
    );
    assert_eq!(inplace::check_update_completed(&seen), Ok(()));
    let main = podutil::get_container_status(&seen, "main").expect("main status");
    assert_ne!(main.image_id, before_ids["main"]);
    let side = podutil::get_container_status(&seen, "side").expect("side status");
    assert_eq!(side.image_id, before_ids["side"], "side was not restarted");
    apply(&api, &seen, action).await;
    wait_for("pod p1 Ready again", Duration::from_secs(30), || async {
        let p = api.get("p1").await.ok()?;
        (podutil::is_pod_ready(&p)
            && condition_status(&p, inplace::IN_PLACE_UPDATE_READY).as_deref() == Some("True"))
        .then_some(())
    })
    .await
    .expect("ready again");
}

/// A pod written from the shared cache's slimmed copy (no volumes but claims, status trimmed):
/// `workload::update_pod` sends a JSON patch bound to the cached resourceVersion, so the API
/// server changes only what the controller changed — the volumes the cache dropped stay — and a
/// stale cached pod gets 409 Conflict, as a PUT would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_of_slimmed_cached_pods_keep_what_the_cache_dropped_and_conflict_when_stale() {
    use kruise_runtime::cache::{SharedCache, wait_for_cache_sync};
    use kruise_runtime::server::Readiness;
    use tokio_util::sync::CancellationToken;

    let env = env().await;
    let ns = env.namespace("inplace-slim").await.expect("namespace");
    let api: Api<CachedPod> = ns.api();
    let mut p = pod(
        "p4",
        json!([{"name": "main", "image": "nginx:1.25",
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}]),
    );
    p.spec.as_mut().expect("spec").volumes = Some(vec![
        serde_json::from_value(json!({"name": "scratch", "emptyDir": {}})).expect("volume"),
    ]);
    let created = create_running(&ns, p).await;
    let server_volumes = created
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .expect("volumes");
    assert!(server_volumes.iter().any(|v| v.name == "scratch"));

    let stop = CancellationToken::new();
    let cache = SharedCache::new(
        env.client.clone(),
        Some(ns.name().to_owned()),
        Readiness::new(),
        stop.clone(),
    );
    let pods = cache.informer::<CachedPod>();
    wait_for_cache_sync(&[pods.synced()], Duration::from_secs(30))
        .await
        .expect("pod cache synced");
    let cached = wait_for("p4 in the cache", Duration::from_secs(20), || async {
        pods.in_namespace(ns.name())
            .into_iter()
            .find(|c| c.metadata.name.as_deref() == Some("p4"))
    })
    .await
    .expect("cached pod");
    assert!(
        cached.spec.as_ref().expect("spec").volumes.is_none(),
        "the cache keeps claim volumes only"
    );

    let mut updated = (*cached).clone();
    updated.spec.as_mut().expect("spec").containers[0].image = Some("nginx:1.26".into());
    updated
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("v".into(), "2".into());
    let written = kruise_manager::workload::update_pod(&api, &cached, &updated)
        .await
        .expect("update from the cached pod");
    assert_eq!(image(&written, "main"), "nginx:1.26");
    assert_eq!(
        written
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("v"))
            .map(String::as_str),
        Some("2")
    );
    assert_eq!(
        written.spec.as_ref().and_then(|s| s.volumes.clone()),
        Some(server_volumes),
        "the volumes the cache dropped are kept"
    );

    // The cached copy is now stale: a second update built on it conflicts.
    let mut again = (*cached).clone();
    again
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("v".into(), "3".into());
    match kruise_manager::workload::update_pod(&api, &cached, &again).await {
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        other => panic!("a stale base must conflict, got {other:?}"),
    }
    let now_pod = api.get("p4").await.expect("get");
    assert_eq!(
        now_pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("v"))
            .map(String::as_str),
        Some("2"),
        "the conflicting update wrote nothing"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_patch_and_lifecycle_state_land_over_concurrent_status_writes() {
    use kruise_engines::lifecycle::{self, LifecycleState};
    let env = env().await;
    let ns = env.namespace("inplace-rv").await.expect("namespace");
    let api: Api<CachedPod> = ns.api();
    let p = create_running(
        &ns,
        pod("p2", json!([{"name": "main", "image": "nginx:1.25"}])),
    )
    .await;
    // One instant for the whole test: the timestamp annotation is compared below, and two
    // `now()` calls can straddle a second boundary.
    let at = now();
    let mut patch = inplace::ready_condition_patch(&p, at).expect("condition missing");
    assert!(
        patch.get("metadata").is_none(),
        "not bound to a resourceVersion: {patch}"
    );
    // The lifecycle state change that follows rides on the same pods/status write.
    let change = lifecycle::plan_state_change(&p, LifecycleState::Normal, false, at);
    assert!(lifecycle::fold_into_status_patch(&mut patch, &change));
    // The kubelet writes the pod status in between (another condition): the patch still applies
    // and keeps the kubelet's condition.
    api.patch_status(
        "p2",
        &PatchParams::default(),
        &Patch::Strategic(json!({"status": {"conditions": [
            {"type": "example.com/probe", "status": "True"}]}})),
    )
    .await
    .expect("kubelet-like status write");
    let written = api
        .patch_status("p2", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch");
    assert_eq!(
        condition_status(&written, inplace::IN_PLACE_UPDATE_READY).as_deref(),
        Some("True")
    );
    assert_eq!(
        condition_status(&written, "example.com/probe").as_deref(),
        Some("True")
    );
    // pods/status wrote the state label and timestamp annotation too.
    assert_eq!(lifecycle::state_label(&written), "Normal");
    assert_eq!(
        written
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::LIFECYCLE_TIMESTAMP))
            .map(String::as_str),
        Some(lifecycle::format_timestamp(at).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grace_period_then_launch_priority_batches() {
    let env = env().await;
    let ns = env.namespace("inplace-grace").await.expect("namespace");
    let api: Api<CachedPod> = ns.api();
    let p = create_running(
        &ns,
        pod(
            "p3",
            json!([
                {"name": "main", "image": "nginx:1.25", "env": barrier_env("p3", 0)},
                {"name": "side", "image": "busybox:1.36", "env": barrier_env("p3", -1)}
            ]),
        ),
    )
    .await;

    let old = revision(
        "demo-1",
        "1",
        &[("main", "nginx:1.25"), ("side", "busybox:1.36")],
    );
    let new = revision(
        "demo-2",
        "1",
        &[("main", "nginx:1.26"), ("side", "busybox:1.37")],
    );
    let opts = UpdateOptions {
        grace_period_seconds: 2,
        ..UpdateOptions::default()
    };
    let spec = inplace::calculate_update_spec(&old, &new, &opts).expect("in-place");
    if let Some(patch) = inplace::not_ready_condition_patch(&p, now()) {
        api.patch_status("p3", &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .expect("not-ready");
    }
    let latest = api.get("p3").await.expect("get");
    let updated = inplace::prepare_update(&latest, &spec, &ADAPTER, now()).expect("prepare");
    let written = kruise_manager::workload::update_pod(&api, &latest, &updated)
        .await
        .expect("update");
    assert!(inplace::has_grace_period_pending(&written));
    assert_eq!(
        image(&written, "main"),
        "nginx:1.25",
        "nothing changes during the grace period"
    );
    match inplace::refresh(&written, &ADAPTER, now()).expect("refresh") {
        RefreshAction::Wait(d) => {
            assert!(d <= Duration::from_secs(2) && d > Duration::ZERO, "{d:?}")
        }
        other => panic!("expected a wait, got {other:?}"),
    }

    // Grace over: first batch = the highest priority (main) only.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (action, seen) = refresh_until_action(&api, "p3").await;
    let p = apply(&api, &seen, action).await;
    assert!(!inplace::has_grace_period_pending(&p));
    assert_eq!(image(&p, "main"), "nginx:1.26");
    assert_eq!(image(&p, "side"), "busybox:1.36");
    let state = inplace::get_state(&p).expect("state").expect("present");
    assert_eq!(
        state.next_container_images,
        BTreeMap::from([("side".to_string(), "busybox:1.37".to_string())])
    );

    // Once main runs its new image and is ready: the next batch.
    let (action, seen) = refresh_until_action(&api, "p3").await;
    let p = apply(&api, &seen, action).await;
    assert_eq!(image(&p, "side"), "busybox:1.37");
    let state = inplace::get_state(&p).expect("state").expect("present");
    assert!(state.next_container_images.is_empty());
    assert_eq!(state.container_batches_record.len(), 2);

    // Then completion.
    let (action, seen) = refresh_until_action(&api, "p3").await;
    assert!(
        matches!(action, RefreshAction::PatchStatus(_)),
        "{action:?}"
    );
    assert_eq!(inplace::check_update_completed(&seen), Ok(()));
    let p = apply(&api, &seen, action).await;
    assert_eq!(
        condition_status(&p, inplace::IN_PLACE_UPDATE_READY).as_deref(),
        Some("True")
    );
}
