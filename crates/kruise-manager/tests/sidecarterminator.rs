//! SidecarTerminator on the kwok testbed (manager started with
//! `--feature-gates SidecarTerminator=true`).
//!
//! kwok's `pod-complete` stage ends a job pod whole (every container terminated at once), so a
//! job pod on a kwok node never has a finished main container beside a running sidecar. The
//! tests therefore bind their pods to nodes of their own that no kubelet or kwok manages (not
//! labelled `type=kwok`) and write the pod statuses a kubelet would: main container exited,
//! sidecar running. What they check is the manager's half: the ContainerRecreateRequest
//! (`sidecar-termination-<pod UID>`, owned by the pod, `forceRecreate`, failure policy
//! `Ignore`, labelled by the mutating webhook), the in-place image update on a virtual-kubelet
//! node, and the `SidecarTerminated` condition and phase for ignore-exit-code sidecars. No
//! kruise-daemon runs, so nothing stops the containers.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kruise_api::apps::v1alpha1::ContainerRecreateRequest;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, ensure_kwok_nodes, install_crds, wait_for, wait_for_object};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);
const TERMINATE: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
const WITH_IMAGE: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
const IGNORE: &str = "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";
const EXIT_QUICKLY: &str = "exit-quickly:latest";

/// Deletes the test's nodes when dropped.
struct Nodes(Client, Vec<String>);

impl Drop for Nodes {
    fn drop(&mut self) {
        let (client, names) = (self.0.clone(), std::mem::take(&mut self.1));
        let _ = std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(async move {
                    let api: Api<Node> = Api::all(client);
                    for n in names {
                        let _ = api.delete(&n, &DeleteParams::default()).await;
                    }
                })
        })
        .join();
    }
}

async fn unmanaged_node(client: &Client, name: &str, vk: bool) {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if vk {
        labels["type"] = json!("virtual-kubelet");
    }
    let node: Node =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    let api: Api<Node> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
    wait_for("old node gone", TIMEOUT, || {
        let api = api.clone();
        async move { api.get_opt(name).await.ok()?.is_none().then_some(()) }
    })
    .await
    .unwrap();
    api.create(&PostParams::default(), &node).await.unwrap();
}

/// A job pod bound to `node` (tolerating the taints of a node without kubelet).
fn job_pod(name: &str, node: &str, containers: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": containers,
        },
    }))
    .unwrap()
}

fn container(name: &str, env: Value) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "env": env})
}

fn exited(name: &str, code: i32) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "imageID": "", "ready": false,
           "restartCount": 0, "containerID": format!("containerd://{name}-id"),
           "state": {"terminated": {"exitCode": code, "reason": "Completed",
                     "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z",
                     "containerID": format!("containerd://{name}-id")}}})
}

fn running(name: &str) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "imageID": "", "ready": true,
           "restartCount": 0, "started": true, "containerID": format!("containerd://{name}-id"),
           "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})
}

/// Writes the status a kubelet would report: Running with these container statuses.
async fn report(pods: &Api<Pod>, name: &str, statuses: Value) {
    let body = json!({"status": {"phase": "Running", "containerStatuses": statuses}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap();
}

fn request_name(pod: &Pod) -> String {
    format!("sidecar-termination-{}", pod.uid().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecars_of_completed_job_pods_are_terminated() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("sidecar-term").await.unwrap();
    let plain = format!("{}-node", ns.name());
    let vk = format!("{}-vk", ns.name());
    let _nodes = Nodes(env.client.clone(), vec![plain.clone(), vk.clone()]);
    unmanaged_node(&env.client, &plain, false).await;
    unmanaged_node(&env.client, &vk, true).await;
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
        .args(&["--feature-gates", "SidecarTerminator=true"]);
    let _manager = TestManager::start(spec, TIMEOUT).await;

    let pods = ns.api::<Pod>();
    let crrs = ns.api::<ContainerRecreateRequest>();
    let sidecar_env = json!([{"name": TERMINATE, "value": "true"}]);

    // 1. A normal node: main exited, the sidecar runs → the request, as OpenKruise's.
    let p = pods
        .create(
            &PostParams::default(),
            &job_pod(
                "job",
                &plain,
                json!([
                    container("main", json!([])),
                    container("sidecar", sidecar_env.clone())
                ]),
            ),
        )
        .await
        .unwrap();
    // Main still running: nothing yet.
    report(&pods, "job", json!([running("main"), running("sidecar")])).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(crrs.get_opt(&request_name(&p)).await.unwrap().is_none());
    report(&pods, "job", json!([exited("main", 1), running("sidecar")])).await;
    let crr = wait_for_object(
        &crrs,
        &request_name(&p),
        "the sidecar's request",
        TIMEOUT,
        |_| true,
    )
    .await
    .unwrap();
    let owner = &crr.owner_references()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        (
            "v1",
            "Pod",
            "job",
            p.uid().unwrap().as_str(),
            Some(true),
            Some(true)
        )
    );
    assert_eq!(crr.spec.pod_name, "job");
    let names: Vec<_> = crr
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["sidecar"]);
    let strategy = crr.spec.strategy.clone().unwrap();
    assert_eq!(strategy.force_recreate, Some(true));
    assert_eq!(strategy.failure_policy.as_deref(), Some("Ignore"));
    let labels = crr.labels();
    assert_eq!(
        labels.get("crr.apps.kruise.io/pod-uid"),
        p.uid().as_ref(),
        "{labels:?}"
    );
    assert_eq!(labels.get("crr.apps.kruise.io/node-name"), Some(&plain));
    let events: Api<Event> = ns.api();
    wait_for("the SidecarTerminator event", TIMEOUT, || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("SidecarTerminator")
                        && e.involved_object.name.as_deref() == Some("job")
                        && e.message.as_deref()
                            == Some("Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using crr")
                })
                .then_some(())
        }
    })
    .await
    .unwrap();

    // 2. A virtual-kubelet node: the sidecar is updated in place to its env's image; no request.
    let p = pods
        .create(
            &PostParams::default(),
            &job_pod(
                "vk-job",
                &vk,
                json!([
                    container("main", json!([])),
                    container(
                        "sidecar",
                        json!([{"name": WITH_IMAGE, "value": EXIT_QUICKLY}])
                    )
                ]),
            ),
        )
        .await
        .unwrap();
    report(
        &pods,
        "vk-job",
        json!([exited("main", 0), running("sidecar")]),
    )
    .await;
    wait_for_object(&pods, "vk-job", "the sidecar's exit image", TIMEOUT, |p| {
        p.spec.as_ref().unwrap().containers[1].image.as_deref() == Some(EXIT_QUICKLY)
    })
    .await
    .unwrap();
    assert!(crrs.get_opt(&request_name(&p)).await.unwrap().is_none());

    // 3. Ignore-exit-code sidecar: once the normal sidecar has completed, the pod is marked
    //    Succeeded (main exited 0) with condition SidecarTerminated, then the request is made
    //    (the webhook accepts it for the terminated pod).
    let ignore_env =
        json!([{"name": TERMINATE, "value": "true"}, {"name": IGNORE, "value": "TRUE"}]);
    let p = pods
        .create(
            &PostParams::default(),
            &job_pod(
                "ignore-job",
                &plain,
                json!([
                    container("main", json!([])),
                    container("sidecar", sidecar_env.clone()),
                    container("ignored", ignore_env)
                ]),
            ),
        )
        .await
        .unwrap();
    report(
        &pods,
        "ignore-job",
        json!([exited("main", 0), running("sidecar"), running("ignored")]),
    )
    .await;
    let crr = wait_for_object(
        &crrs,
        &request_name(&p),
        "the normal sidecar's request",
        TIMEOUT,
        |_| true,
    )
    .await
    .unwrap();
    let names: Vec<_> = crr
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["sidecar"], "the ignore-exit-code sidecar waits");
    assert_eq!(
        pods.get("ignore-job")
            .await
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Running")
    );
    // The normal sidecar stopped (what kruise-daemon would do) and its request gone.
    crrs.delete(&request_name(&p), &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the first request gone", TIMEOUT, || {
        let (crrs, name) = (crrs.clone(), request_name(&p));
        async move { crrs.get_opt(&name).await.ok()?.is_none().then_some(()) }
    })
    .await
    .unwrap();
    report(
        &pods,
        "ignore-job",
        json!([
            exited("main", 0),
            exited("sidecar", 137),
            running("ignored")
        ]),
    )
    .await;
    let done = wait_for_object(
        &pods,
        "ignore-job",
        "phase Succeeded and SidecarTerminated",
        TIMEOUT,
        |p| {
            let st = p.status.as_ref().unwrap();
            st.phase.as_deref() == Some("Succeeded")
                && st.conditions.as_ref().is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_ == "SidecarTerminated"
                            && c.status == "True"
                            && c.message.as_deref() == Some("Terminated by Sidecar Terminator")
                    })
                })
        },
    )
    .await
    .unwrap();
    assert!(done.metadata.deletion_timestamp.is_none());
    let crr = wait_for_object(
        &crrs,
        &request_name(&p),
        "the ignore-exit-code sidecar's request",
        TIMEOUT,
        |_| true,
    )
    .await
    .unwrap();
    let names: Vec<_> = crr
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["ignored"]);

    // 4. On a kwok node the pod completes whole (kwok's pod-complete stage ends every
    //    container): the sidecar is already terminated, no request is made.
    ensure_kwok_nodes(&env, 1).await.unwrap();
    let mut kwok_pod = job_pod(
        "kwok-job",
        "",
        json!([
            container("main", json!([])),
            container("sidecar", sidecar_env)
        ]),
    );
    let spec = kwok_pod.spec.as_mut().unwrap();
    spec.node_name = None;
    spec.node_selector = Some([("type".to_owned(), "kwok".to_owned())].into());
    let p = pods
        .create(&PostParams::default(), &kwok_pod)
        .await
        .unwrap();
    wait_for_object(
        &pods,
        "kwok-job",
        "kwok completes the job pod",
        TIMEOUT,
        |p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(crrs.get_opt(&request_name(&p)).await.unwrap().is_none());

    ns.delete().await.unwrap();
}
