//! EphemeralJob controller end to end on the testbed (OpenKruise v1.9.0
//! `pkg/controller/ephemeraljob`): which pods a job targets (selector, `replicas`, pods holding
//! another job's container of the same name), `parallelism` held by running containers, the
//! active deadline and the TTL after finishing, the finalizer, and — on the testbed's real node
//! — ephemeral containers the kubelet really runs, the job's status following the pods'
//! `ephemeralContainerStatuses` to success and to failure. Each test runs its own
//! `kruise-manager` (webhooks on, default flags), restricted to the test's namespace.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::EphemeralJob;
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, on_real_node, real_node, wait_for, wait_for_object};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);
const FINALIZER: &str = "apps.kruise.io/ephemeralcontainers-cleanup";

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, TestManager) {
    TestManager::setup(
        env!("CARGO_BIN_EXE_kruise-manager"),
        prefix,
        &[],
        3,
        TIMEOUT,
    )
    .await
}

/// Creates pod `name` labelled `app=<app>` (on a kwok node unless `spec` says otherwise) and
/// waits until it runs.
async fn create_pod(ns: &TestNamespace, name: &str, app: &str, spec: Value) -> Pod {
    let pods: Api<Pod> = ns.api();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": spec,
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    wait_for_object(&pods, name, "pod running", TIMEOUT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await
    .unwrap()
}

fn kwok_spec() -> Value {
    json!({"containers": [{"name": "main", "image": "nginx:alpine"}]})
}

fn container(name: &str, command: &[&str]) -> Value {
    json!({"name": name, "image": "busybox:1.36", "command": command,
           "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"})
}

async fn create_job(ns: &TestNamespace, name: &str, spec: Value) -> EphemeralJob {
    let api: Api<EphemeralJob> = ns.api();
    let job: EphemeralJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "EphemeralJob",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &job).await.unwrap()
}

/// The names of the pods of `ns` holding an ephemeral container `container` whose
/// `KRUISE_EJOB_ID` is `uid`, sorted.
async fn injected(ns: &TestNamespace, container: &str, uid: &str) -> Vec<String> {
    let pods: Api<Pod> = ns.api();
    let mut names: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.ephemeral_containers.as_ref())
                .is_some_and(|ecs| {
                    ecs.iter().any(|c| {
                        c.name == container
                            && c.env.iter().flatten().any(|e| {
                                e.name == "KRUISE_EJOB_ID" && e.value.as_deref() == Some(uid)
                            })
                    })
                })
        })
        .map(|p| p.name_any())
        .collect();
    names.sort();
    names
}

async fn wait_injected(ns: &TestNamespace, container: &str, uid: &str, want: &[&str]) {
    wait_for(
        &format!("{container} of {uid} injected into {want:?}"),
        TIMEOUT,
        || async { (injected(ns, container, uid).await == want).then_some(()) },
    )
    .await
    .unwrap();
}

fn phase(j: &EphemeralJob) -> &str {
    j.status.as_ref().map_or("", |s| s.phase.as_str())
}

fn condition_reason<'a>(j: &'a EphemeralJob, type_: &str) -> Option<&'a str> {
    j.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)?
        .reason
        .as_deref()
}

#[tokio::test]
async fn selector_replicas_and_foreign_containers_choose_the_targets() {
    let (_env, ns, _manager) = setup("ejob-targets").await;
    for name in ["web-0", "web-1", "web-2", "web-3"] {
        create_pod(&ns, name, "web", kwok_spec()).await;
    }
    create_pod(&ns, "db-0", "db", kwok_spec()).await;

    let first = create_job(
        &ns,
        "first",
        json!({"selector": {"matchLabels": {"app": "web"}}, "replicas": 3, "parallelism": 3,
               "template": {"ephemeralContainers": [container("dbg", &["sleep", "1"])]}}),
    )
    .await;
    let first_uid = first.uid().unwrap();
    // The three oldest web pods, never the fourth nor the db pod.
    wait_injected(&ns, "dbg", &first_uid, &["web-0", "web-1", "web-2"]).await;
    let jobs: Api<EphemeralJob> = ns.api();
    let first = wait_for_object(&jobs, "first", "3 matched, started", TIMEOUT, |j| {
        j.status
            .as_ref()
            .is_some_and(|s| s.matches == 3 && s.start_time.is_some())
    })
    .await
    .unwrap();
    assert!(first.finalizers().iter().any(|f| f == FINALIZER));
    assert_eq!(condition_reason(&first, "Initialized"), Some("Initialized"));
    // No kubelet reports the containers on kwok: neither running nor waiting.
    assert_eq!(phase(&first), "Unknown");

    // A second job with the same container name: the pods holding the first job's `dbg` are
    // not its targets; the one pod left is.
    let second = create_job(
        &ns,
        "second",
        json!({"selector": {"matchLabels": {"app": "web"}}, "parallelism": 5,
               "template": {"ephemeralContainers": [container("dbg", &["sleep", "1"])]}}),
    )
    .await;
    let second_uid = second.uid().unwrap();
    wait_injected(&ns, "dbg", &second_uid, &["web-3"]).await;
    wait_for_object(&jobs, "second", "1 matched", TIMEOUT, |j| {
        j.status.as_ref().is_some_and(|s| s.matches == 1)
    })
    .await
    .unwrap();
    assert_eq!(
        injected(&ns, "dbg", &first_uid).await,
        ["web-0", "web-1", "web-2"]
    );

    // Deleting a job lets it go (its finalizer removed); its containers stay in the pods,
    // which Kubernetes cannot remove them from.
    jobs.delete("first", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("first deleted", TIMEOUT, || async {
        jobs.get_opt("first").await.unwrap().is_none().then_some(())
    })
    .await
    .unwrap();
    assert_eq!(
        injected(&ns, "dbg", &first_uid).await,
        ["web-0", "web-1", "web-2"]
    );
}

/// Sets the status of ephemeral container `name` of pod `pod` (the kubelet's job; there is no
/// kubelet on kwok nodes).
async fn report(ns: &TestNamespace, pod: &str, name: &str, state: Value) {
    let pods: Api<Pod> = ns.api();
    let patch = json!({"status": {"ephemeralContainerStatuses": [
        {"name": name, "image": "busybox:1.36", "imageID": "", "ready": false,
         "restartCount": 0, "state": state}]}});
    pods.patch_status(pod, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .unwrap();
}

#[tokio::test]
async fn parallelism_holds_injection_while_containers_run() {
    let (_env, ns, _manager) = setup("ejob-parallel").await;
    create_pod(&ns, "a", "web", kwok_spec()).await;
    create_pod(&ns, "b", "other", kwok_spec()).await;
    let job = create_job(
        &ns,
        "one-at-a-time",
        json!({"selector": {"matchLabels": {"app": "web"}}, "replicas": 2, "parallelism": 1,
               "template": {"ephemeralContainers": [container("dbg", &["sleep", "1"])]}}),
    )
    .await;
    let uid = job.uid().unwrap();
    wait_injected(&ns, "dbg", &uid, &["a"]).await;
    report(
        &ns,
        "a",
        "dbg",
        json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}),
    )
    .await;
    let jobs: Api<EphemeralJob> = ns.api();
    wait_for_object(&jobs, "one-at-a-time", "a running", TIMEOUT, |j| {
        j.status.as_ref().is_some_and(|s| s.running == 1) && phase(j) == "Running"
    })
    .await
    .unwrap();

    // b joins the selector while a's container runs: matched, not injected.
    let pods: Api<Pod> = ns.api();
    let relabel = json!({"metadata": {"labels": {"app": "web"}}});
    pods.patch("b", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    wait_for_object(&jobs, "one-at-a-time", "2 matched", TIMEOUT, |j| {
        j.status.as_ref().is_some_and(|s| s.matches == 2)
    })
    .await
    .unwrap();
    assert_eq!(injected(&ns, "dbg", &uid).await, ["a"]);

    // a's container ends: b gets its turn.
    report(
        &ns,
        "a",
        "dbg",
        json!({"terminated": {"exitCode": 0, "startedAt": "2026-01-01T00:00:00Z",
                              "finishedAt": "2026-01-01T00:00:01Z"}}),
    )
    .await;
    wait_injected(&ns, "dbg", &uid, &["a", "b"]).await;
    let done = wait_for_object(&jobs, "one-at-a-time", "1 succeeded", TIMEOUT, |j| {
        j.status.as_ref().is_some_and(|s| s.succeeded == 1)
    })
    .await
    .unwrap();
    assert!(done.status.unwrap().completion_time.is_none());
}

#[tokio::test]
async fn active_deadline_fails_the_job_and_ttl_deletes_it() {
    let (_env, ns, _manager) = setup("ejob-deadline").await;
    create_pod(&ns, "a", "web", kwok_spec()).await;
    let jobs: Api<EphemeralJob> = ns.api();
    create_job(
        &ns,
        "short",
        json!({"selector": {"matchLabels": {"app": "web"}}, "replicas": 1,
               "activeDeadlineSeconds": 2, "ttlSecondsAfterFinished": 3,
               "template": {"ephemeralContainers": [container("dbg", &["sleep", "999"])]}}),
    )
    .await;
    let failed = wait_for_object(&jobs, "short", "failed on its deadline", TIMEOUT, |j| {
        phase(j) == "Failed"
    })
    .await
    .unwrap();
    assert_eq!(
        condition_reason(&failed, "JobFailed"),
        Some("DeadlineExceeded")
    );
    let st = failed.status.clone().unwrap();
    let (start, done) = (st.start_time.unwrap().0, st.completion_time.unwrap().0);
    let ran = done.duration_since(start).as_secs_f64();
    assert!((2.0..10.0).contains(&ran), "failed after {ran} s");
    wait_for("short deleted by its TTL", TIMEOUT, || async {
        jobs.get_opt("short").await.unwrap().is_none().then_some(())
    })
    .await
    .unwrap();

    // Paused: matched, never injected, phase Paused (and no deadline ends it).
    let paused = create_job(
        &ns,
        "paused",
        json!({"selector": {"matchLabels": {"app": "web"}}, "paused": true,
               "template": {"ephemeralContainers": [container("dbg2", &["sleep", "1"])]}}),
    )
    .await;
    wait_for_object(&jobs, "paused", "paused, 1 matched", TIMEOUT, |j| {
        phase(j) == "Paused" && j.status.as_ref().is_some_and(|s| s.matches == 1)
    })
    .await
    .unwrap();
    assert!(
        injected(&ns, "dbg2", &paused.uid().unwrap())
            .await
            .is_empty()
    );
}

fn ephemeral_exit(p: &Pod, name: &str) -> Option<i32> {
    p.status
        .as_ref()?
        .ephemeral_container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == name)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

#[tokio::test]
async fn ephemeral_containers_run_on_a_real_kubelet() {
    let (env, ns, _manager) = setup("ejob-real").await;
    let node = real_node(&env).await.expect("a real node");
    let mut spec = json!({"terminationGracePeriodSeconds": 1, "containers": [
        {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}]});
    on_real_node(&mut spec, &node);
    create_pod(&ns, "ok", "ok", spec.clone()).await;
    create_pod(&ns, "bad", "bad", spec).await;
    let jobs: Api<EphemeralJob> = ns.api();
    create_job(
        &ns,
        "succeeds",
        json!({"selector": {"matchLabels": {"app": "ok"}}, "replicas": 1,
               "template": {"ephemeralContainers": [
                   container("check", &["sh", "-c", "sleep 1; exit 0"])]}}),
    )
    .await;
    create_job(
        &ns,
        "fails",
        json!({"selector": {"matchLabels": {"app": "bad"}}, "replicas": 1,
               "template": {"ephemeralContainers": [container("check", &["sh", "-c", "exit 3"])]}}),
    )
    .await;
    let ok = wait_for_object(&jobs, "succeeds", "succeeded", TIMEOUT, |j| {
        phase(j) == "Succeeded"
    })
    .await
    .unwrap();
    let st = ok.status.clone().unwrap();
    assert_eq!((st.matches, st.succeeded, st.failed), (1, 1, 0));
    assert!(st.completion_time.is_some());
    assert_eq!(condition_reason(&ok, "JobSucceeded"), Some("JobSucceeded"));
    let bad = wait_for_object(&jobs, "fails", "failed", TIMEOUT, |j| phase(j) == "Failed")
        .await
        .unwrap();
    let st = bad.status.clone().unwrap();
    assert_eq!((st.matches, st.succeeded, st.failed), (1, 0, 1));
    // The status follows what the kubelet reported.
    let pods: Api<Pod> = ns.api();
    assert_eq!(
        ephemeral_exit(&pods.get("ok").await.unwrap(), "check"),
        Some(0)
    );
    assert_eq!(
        ephemeral_exit(&pods.get("bad").await.unwrap(), "check"),
        Some(3)
    );
}
