//! ContainerRecreateRequests on the testbed's real node: kruise-manager (webhook on, its
//! ContainerRecreateRequest controller) and kruise-daemon (its generated ClusterRole only), as
//! OpenKruise's e2e "ContainerRecreateRequest" specs use them:
//!
//! - the webhook fills a request in (labels, grace period, `preStop`, `statusContext`) and
//!   refuses what OpenKruise refuses (a missing pod, a changed spec);
//! - the daemon stops the requested containers as the kubelet would (the `preStop` hook first),
//!   the kubelet recreates them, and the request succeeds once the new containers are ready and
//!   have run `minStartedSeconds`; `orderedRecreate` waits for each container in turn;
//! - with `unreadyGracePeriodSeconds` the pod is not ready (`KruisePodReady` False, the request's
//!   key) during the recreation and ready again after it, and the request's finalizer is gone;
//! - a finished request loses its `active` label and is deleted after `ttlSecondsAfterFinished`;
//! - a request past `activeDeadlineSeconds` is completed by the manager with OpenKruise's message;
//! - the SidecarTerminator (gate on) stops the sidecar of a job pod whose main container exited,
//!   through a request the daemon carries out, and the pod completes.
//!
//! One test: one kruise-daemon per node, as in a cluster.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1alpha1::ContainerRecreateRequest;
use kruise_api::keys;
use kruise_e2e::daemon::{TestDaemon, manager_binary_beside};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds, on_real_node, real_node, wait_for_object};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

fn status<'a>(pod: &'a Pod, name: &str) -> Option<&'a k8s_openapi::api::core::v1::ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn kruise_pod_ready(pod: &Pod) -> Option<(String, String)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == keys::KRUISE_POD_READY)
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

fn completed(c: &ContainerRecreateRequest) -> bool {
    c.status
        .as_ref()
        .is_some_and(|s| s.completion_time.is_some())
}

fn states(c: &ContainerRecreateRequest) -> serde_json::Value {
    json!(
        c.status
            .as_ref()
            .and_then(|s| s.container_recreate_states.clone())
    )
}

async fn create(
    api: &Api<ContainerRecreateRequest>,
    body: serde_json::Value,
) -> Result<ContainerRecreateRequest, kube::Error> {
    let crr: ContainerRecreateRequest = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &crr).await
}

#[tokio::test]
async fn container_recreate_requests_recreate_containers_on_a_real_node() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let node = real_node(&env).await.expect("a real node");
    let ns = env.namespace("crr").await.unwrap();
    let daemon_bin = env!("CARGO_BIN_EXE_kruise-daemon");
    let manager_bin = manager_binary_beside(daemon_bin).expect("kruise-manager binary");
    let spec = ManagerSpec::new(&manager_bin, ns.name())
        .args(&["--feature-gates", "SidecarTerminator=true"]);
    let _manager = TestManager::start(spec, TIMEOUT).await;
    let _daemon =
        TestDaemon::start_bound(std::path::Path::new(daemon_bin), &node, ns.name(), TIMEOUT)
            .await
            .expect("kruise-daemon ready");

    let mut spec = json!({
        "terminationGracePeriodSeconds": 7,
        "readinessGates": [{"conditionType": "KruisePodReady"}],
        "containers": [
            {"name": "app", "image": "nginx:alpine",
             "lifecycle": {"preStop": {"exec": {"command": ["sleep", "3"]}}}},
            {"name": "side", "image": "busybox:1.36", "command": ["sleep", "3600"]}]});
    on_real_node(&mut spec, &node);
    let pods = ns.api::<Pod>();
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let before = wait_for_object(
        &pods,
        "p",
        "pod p ready (KruisePodReady set by the manager)",
        TIMEOUT,
        |p| {
            ready(p)
                && status(p, "app").is_some_and(|c| c.ready)
                && status(p, "side").is_some_and(|c| c.ready)
        },
    )
    .await
    .unwrap();
    let app_id = status(&before, "app")
        .unwrap()
        .container_id
        .clone()
        .unwrap();
    let side_id = status(&before, "side")
        .unwrap()
        .container_id
        .clone()
        .unwrap();
    let crrs = ns.api::<ContainerRecreateRequest>();

    // Admission: OpenKruise's refusals.
    let err = create(
        &crrs,
        json!({"metadata": {"name": "nopod"},
        "spec": {"podName": "missing", "containers": [{"name": "app"}]}}),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("no found Pod named missing"),
        "{err}"
    );

    // 1. One container, the pod held not ready for 2 s, a TTL.
    let created = create(
        &crrs,
        json!({"metadata": {"name": "r1"},
        "spec": {"podName": "p", "containers": [{"name": "app"}], "ttlSecondsAfterFinished": 5,
            "strategy": {"minStartedSeconds": 2, "unreadyGracePeriodSeconds": 2}}}),
    )
    .await
    .unwrap();
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get(keys::CRR_POD_UID), before.metadata.uid.as_ref());
    assert_eq!(
        labels.get(keys::CRR_NODE_NAME).map(String::as_str),
        Some(node.as_str())
    );
    assert_eq!(
        labels.get(keys::CRR_ACTIVE).map(String::as_str),
        Some("true")
    );
    let strategy = created.spec.strategy.clone().unwrap();
    assert_eq!(strategy.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(
        strategy.termination_grace_period_seconds,
        Some(7),
        "the pod's grace period"
    );
    let c0 = &created.spec.containers[0];
    assert_eq!(c0.status_context.as_ref().unwrap().container_id, app_id);
    assert!(
        c0.pre_stop.as_ref().and_then(|p| p.exec.as_ref()).is_some(),
        "preStop copied"
    );
    // The spec is immutable.
    let err = crrs
        .patch(
            "r1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"activeDeadlineSeconds": 60}})),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("spec of ContainerRecreateRequest is immutable"),
        "{err}"
    );

    let unready = wait_for_object(
        &pods,
        "p",
        "KruisePodReady False with the request's key",
        TIMEOUT,
        |p| {
            kruise_pod_ready(p)
                .is_some_and(|(s, m)| s == "False" && m.contains("ContainerRecreateRequest"))
        },
    )
    .await
    .unwrap();
    assert!(
        kruise_pod_ready(&unready)
            .unwrap()
            .1
            .contains(&format!("{}/r1", ns.name()))
    );
    let done = wait_for_object(&crrs, "r1", "r1 completed", TIMEOUT, completed)
        .await
        .unwrap();
    let st = done.status.clone().unwrap();
    assert_eq!(st.phase, "Completed");
    assert_eq!(
        states(&done),
        json!([{"name": "app", "phase": "Succeeded", "isKilled": true}])
    );
    assert!(st.message.is_none(), "{:?}", st.message);
    let after = pods.get("p").await.unwrap();
    let app = status(&after, "app").unwrap();
    assert_eq!(app.restart_count, 1);
    assert_ne!(app.container_id.as_ref(), Some(&app_id));
    assert_eq!(
        status(&after, "side").unwrap().restart_count,
        0,
        "only the requested container"
    );
    // The preStop hook (sleep 3) ran before the stop: the old container ran at least 3 s after
    // the request was created.
    let finished = app
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.clone())
        .unwrap();
    let created_at = done.metadata.creation_timestamp.clone().unwrap();
    assert!(
        finished.0.duration_since(created_at.0).as_secs() >= 3,
        "preStop ran: {finished:?} vs {created_at:?}"
    );
    let started = app
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.clone())
        .unwrap();
    assert!(
        st.completion_time
            .unwrap()
            .0
            .duration_since(started.0)
            .as_secs()
            >= 2,
        "minStartedSeconds"
    );
    wait_for_object(&pods, "p", "KruisePodReady True again", TIMEOUT, |p| {
        kruise_pod_ready(p).is_some_and(|(s, _)| s == "True") && ready(p)
    })
    .await
    .unwrap();
    let inactive = wait_for_object(
        &crrs,
        "r1",
        "r1 without the active label and finalizer",
        TIMEOUT,
        |c| {
            !c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(keys::CRR_ACTIVE))
                && c.metadata.finalizers.as_ref().is_none_or(Vec::is_empty)
        },
    )
    .await
    .unwrap();
    assert!(
        inactive
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(keys::CRR_UNREADY_ACQUIRED)
    );
    let events: Api<Event> = ns.api();
    let killing = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .any(|e| {
            e.reason.as_deref() == Some("Killing")
                && e.message.as_deref()
                    == Some("Stopping container app by ContainerRecreateRequest r1")
        });
    assert!(killing, "Killing Event of the daemon");
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while crrs.get_opt("r1").await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "r1 not deleted after its TTL"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // 2. Both containers in order.
    create(
        &crrs,
        json!({"metadata": {"name": "r2"},
        "spec": {"podName": "p", "containers": [{"name": "side"}, {"name": "app"}],
            "strategy": {"orderedRecreate": true, "terminationGracePeriodSeconds": 2}}}),
    )
    .await
    .unwrap();
    let done = wait_for_object(&crrs, "r2", "r2 completed", TIMEOUT, completed)
        .await
        .unwrap();
    assert_eq!(
        states(&done),
        json!([{"name": "side", "phase": "Succeeded", "isKilled": true},
               {"name": "app", "phase": "Succeeded", "isKilled": true}])
    );
    let after = wait_for_object(&pods, "p", "pod ready after r2", TIMEOUT, ready)
        .await
        .unwrap();
    let side = status(&after, "side").unwrap();
    let app = status(&after, "app").unwrap();
    assert_eq!((side.restart_count, app.restart_count), (1, 2));
    assert_ne!(side.container_id.as_ref(), Some(&side_id));
    // Ordered: the app container stopped only after the new side container was running.
    let side_started = side
        .state
        .as_ref()
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.clone())
        .unwrap();
    let app_finished = app
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.clone())
        .unwrap();
    assert!(
        app_finished.0 >= side_started.0,
        "ordered: {app_finished:?} before {side_started:?}"
    );

    // 3. Past activeDeadlineSeconds: the manager completes it (the preStop hook takes 3 s of
    //    a 3 s deadline, and the request then waits 30 s of minStartedSeconds).
    create(
        &crrs,
        json!({"metadata": {"name": "r3"},
        "spec": {"podName": "p", "containers": [{"name": "app"}], "activeDeadlineSeconds": 3,
            "strategy": {"minStartedSeconds": 30}}}),
    )
    .await
    .unwrap();
    let done = wait_for_object(
        &crrs,
        "r3",
        "r3 completed by its deadline",
        TIMEOUT,
        completed,
    )
    .await
    .unwrap();
    assert_eq!(
        done.status.unwrap().message.as_deref(),
        Some("recreating has exceeded the activeDeadlineSeconds")
    );

    // 4. SidecarTerminator: a job pod whose main container exits; its sidecar keeps running
    //    until the manager's request is carried out by the daemon.
    let mut job = json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 2,
        "containers": [
            {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3"]},
            {"name": "sidecar", "image": "nginx:alpine",
             "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "value": "true"}]}]});
    on_real_node(&mut job, &node);
    let job: Pod =
        serde_json::from_value(json!({"metadata": {"name": "job"}, "spec": job})).unwrap();
    pods.create(&PostParams::default(), &job).await.unwrap();
    let done = wait_for_object(
        &pods,
        "job",
        "job pod completed with its sidecar stopped",
        TIMEOUT,
        |p| {
            p.status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|ph| ph == "Succeeded" || ph == "Failed")
        },
    )
    .await
    .unwrap();
    let sidecar = status(&done, "sidecar").unwrap();
    assert!(
        sidecar
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some(),
        "sidecar stopped: {sidecar:?}"
    );
    let requests = crrs.list(&ListParams::default()).await.unwrap().items;
    let by_terminator = requests
        .iter()
        .find(|c| c.spec.pod_name == "job")
        .expect("the SidecarTerminator's request");
    assert_eq!(by_terminator.spec.containers[0].name, "sidecar");
}
