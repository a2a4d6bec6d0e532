//! The testbed's real node (containerd + runc + kubelet, `hack/testbed/realnode.sh`) and its
//! local registry of stand-in images: pods there run real processes on this host. Each test
//! opts in with [`on_real_node`] (the node is tainted while kwok nodes exist), and one checks
//! that pods which do not opt in stay on the kwok nodes.
//!
//! The tests look at the host directly (they run as root on the testbed's machine): container
//! processes are found in `/proc` by a unique `sleep` argument, and cgroup limits are read from
//! the container's cgroup v1 files.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStatus, Node, Pod};
use kruise_e2e::{
    REAL_NODE_LABEL, REAL_NODE_TAINT, TestEnv, TestNamespace, kubectl, on_real_node, real_node,
    registry_digest, wait_for, wait_for_list, wait_for_object,
};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// Pulls from the local registry and container starts take seconds, not milliseconds.
const TIMEOUT: Duration = Duration::from_secs(90);

struct Fixture {
    ns: TestNamespace,
    node: String,
}

async fn setup(prefix: &str) -> Fixture {
    let env = TestEnv::connect().await.expect("testbed");
    let node = real_node(&env).await.expect("a real node");
    let ns = env.namespace(prefix).await.unwrap();
    Fixture { ns, node }
}

impl Fixture {
    /// Creates pod `name` with `spec` (JSON), placed on the real node.
    async fn create_pod(&self, name: &str, mut spec: Value) -> Pod {
        on_real_node(&mut spec, &self.node);
        if spec.get("terminationGracePeriodSeconds").is_none() {
            spec["terminationGracePeriodSeconds"] = json!(2);
        }
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
        self.ns
            .api::<Pod>()
            .create(&PostParams::default(), &pod)
            .await
            .unwrap()
    }

    async fn wait_pod(&self, name: &str, what: &str, predicate: impl FnMut(&Pod) -> bool) -> Pod {
        wait_for_object(&self.ns.api::<Pod>(), name, what, TIMEOUT, predicate)
            .await
            .unwrap()
    }

    /// `kubectl exec` of a shell script in container `container`; returns stdout.
    fn exec(&self, pod: &str, container: &str, script: &str) -> String {
        let out = kubectl(
            &[
                "-n",
                self.ns.name(),
                "exec",
                pod,
                "-c",
                container,
                "--",
                "sh",
                "-c",
                script,
            ],
            None,
        )
        .unwrap();
        assert!(
            out.success,
            "kubectl exec {pod} -c {container} -- sh -c {script:?} failed: {}",
            out.stderr
        );
        out.stdout
    }
}

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn ready(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
}

fn status_of(pod: &Pod, container: &str) -> Option<ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|s| s.name == container)
        .cloned()
}

fn running(cs: &ContainerStatus) -> bool {
    cs.state.as_ref().and_then(|s| s.running.as_ref()).is_some()
}

/// A number no other test uses, for `sleep <n>`: the container process is then found in /proc.
fn unique_sleep() -> u64 {
    rand::random_range(100_000_000..999_999_999)
}

/// Host pid of the process whose command line is exactly `sleep <secs>`.
fn host_pid_of_sleep(secs: u64) -> Option<u32> {
    let wanted = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
        })
}

/// The cgroup v1 directory of `pid` for `controller` (e.g. `memory`, `cpu`).
fn cgroup_dir(pid: u32, controller: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let path = text
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == controller)
                .then(|| path.to_string())
        })
        .unwrap_or_else(|| panic!("no {controller} cgroup in /proc/{pid}/cgroup: {text}"));
    format!("/sys/fs/cgroup/{controller}{path}")
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .to_string()
}

fn sleeper(secs: u64) -> Value {
    json!({"name": "main", "image": "busybox:1.36", "command": ["sleep", secs.to_string()]})
}

#[tokio::test]
async fn a_real_pod_runs_a_process_with_exec_and_logs() {
    let f = setup("rn-exec").await;
    let secs = unique_sleep();
    let script = format!("echo hello from $(hostname); exec sleep {secs}");
    f.create_pod(
        "p",
        json!({"containers": [{"name": "main", "image": "busybox:1.36",
            "command": ["sh", "-c", script]}]}),
    )
    .await;
    let pod = f.wait_pod("p", "pod p Running and Ready", ready).await;
    assert_eq!(
        pod.spec.as_ref().unwrap().node_name.as_deref(),
        Some(f.node.as_str())
    );
    let status = pod.status.as_ref().unwrap();
    assert!(status.pod_ip.is_some(), "the CNI bridge gave an IP");

    // A real process on this host, in the node's cgroups.
    let pid = wait_for(
        "the container's sleep process on the host",
        TIMEOUT,
        || async { host_pid_of_sleep(secs) },
    )
    .await
    .unwrap();
    assert!(
        cgroup_dir(pid, "memory").contains("/kubepods/"),
        "pid {pid} runs in a pod cgroup"
    );

    let out = f.exec(
        "p",
        "main",
        "echo $((6 * 7)); tr '\\0' ' ' < /proc/1/cmdline",
    );
    assert_eq!(out, format!("42\nsleep {secs} "), "exec output");

    let logs = kubectl(&["-n", f.ns.name(), "logs", "p", "-c", "main"], None).unwrap();
    assert!(logs.success, "{}", logs.stderr);
    assert_eq!(logs.stdout, "hello from p\n");
}

#[tokio::test]
async fn an_exec_readiness_probe_makes_the_pod_ready_and_not_ready() {
    let f = setup("rn-probe").await;
    let mut c = sleeper(unique_sleep());
    c["readinessProbe"] = json!({"exec": {"command": ["cat", "/tmp/ready"]},
        "periodSeconds": 1, "failureThreshold": 1, "successThreshold": 1});
    f.create_pod("p", json!({"containers": [c]})).await;
    f.wait_pod("p", "container main running", |p| {
        status_of(p, "main").is_some_and(|cs| running(&cs))
    })
    .await;
    // The probe fails (no file): running but not Ready, for several probe periods.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pod = f.ns.api::<Pod>().get("p").await.unwrap();
    assert_eq!(
        condition(&pod, "Ready").as_deref(),
        Some("False"),
        "{:?}",
        pod.status
    );
    assert!(!status_of(&pod, "main").unwrap().ready);

    f.exec("p", "main", "touch /tmp/ready");
    f.wait_pod("p", "pod Ready once the probe passes", ready)
        .await;

    f.exec("p", "main", "rm /tmp/ready");
    let pod = f
        .wait_pod("p", "pod NotReady once the probe fails again", |p| {
            condition(p, "Ready").as_deref() == Some("False")
        })
        .await;
    let cs = status_of(&pod, "main").unwrap();
    assert!(
        running(&cs) && cs.restart_count == 0,
        "not restarted: {cs:?}"
    );
}

/// Patches the image of container `web` of pod `p` and waits for the container to run again
/// with `restartCount` `restarts`.
async fn patch_image(f: &Fixture, image: &str, restarts: i32) -> Pod {
    f.ns.api::<Pod>()
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/spec/containers/0/image", "value": image}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    f.wait_pod("p", &format!("container web restarted with {image}"), |p| {
        ready(p)
            && status_of(p, "web")
                .is_some_and(|cs| cs.restart_count == restarts && running(&cs) && cs.ready)
    })
    .await
}

#[tokio::test]
async fn an_in_place_image_patch_restarts_the_container_with_the_registry_digest() {
    let f = setup("rn-image").await;
    f.create_pod(
        "p",
        json!({"containers": [{"name": "web", "image": "nginx:1.25",
            "readinessProbe": {"httpGet": {"port": 80, "path": "/"}, "periodSeconds": 1}}]}),
    )
    .await;
    let before = f.wait_pod("p", "pod p Ready", ready).await;
    let old = status_of(&before, "web").unwrap();
    let digest_125 = registry_digest("library/nginx", "1.25").await.unwrap();
    let digest_126 = registry_digest("library/nginx", "1.26").await.unwrap();
    assert_ne!(digest_125, digest_126);
    assert_eq!(old.image, "docker.io/library/nginx:1.25");
    assert_eq!(
        old.image_id,
        format!("docker.io/library/nginx@{digest_125}")
    );
    assert_eq!(old.restart_count, 0);

    let after = patch_image(&f, "nginx:1.26", 1).await;
    let new = status_of(&after, "web").unwrap();
    assert_eq!(after.uid(), before.uid(), "same pod");
    assert_eq!(new.image, "docker.io/library/nginx:1.26");
    assert_eq!(
        new.image_id,
        format!("docker.io/library/nginx@{digest_126}")
    );
    assert_ne!(new.container_id, old.container_id, "a new container");
    let terminated = new
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("the old container's termination is recorded");
    assert_eq!(terminated.container_id, old.container_id);
    assert!(
        f.exec("p", "web", "wget -qO- 127.0.0.1:80")
            .contains("Welcome to nginx!")
    );
}

#[tokio::test]
async fn an_image_patch_to_a_tag_of_the_same_digest_keeps_the_image_id() {
    // OpenKruise's "in-place update images with the same imageID": nginx:alpine and
    // nginx:mainline-alpine are one image in the registry.
    let f = setup("rn-sameid").await;
    f.create_pod(
        "p",
        json!({"containers": [{"name": "web", "image": "nginx:alpine"}]}),
    )
    .await;
    let before = f.wait_pod("p", "pod p Ready", ready).await;
    let old = status_of(&before, "web").unwrap();
    let digest = registry_digest("library/nginx", "alpine").await.unwrap();
    assert_eq!(
        registry_digest("library/nginx", "mainline-alpine")
            .await
            .unwrap(),
        digest
    );
    assert_eq!(old.image_id, format!("docker.io/library/nginx@{digest}"));

    let after = patch_image(&f, "nginx:mainline-alpine", 1).await;
    let new = status_of(&after, "web").unwrap();
    assert_eq!(after.uid(), before.uid());
    assert_eq!(new.image_id, old.image_id, "same imageID");
    assert_ne!(new.container_id, old.container_id, "but a new container");
    // One image with two tags: containerd (1.6 and 2.x alike) names a container's image by the
    // first of the image's tags in sorted order, not by the tag the pod names, so the status
    // keeps nginx:alpine. OpenKruise's in-place check (spec image = status image when the imageID
    // is unchanged) therefore never completes here without kruise-daemon's
    // `apps.kruise.io/runtime-containers-meta`, which is how its "same imageID" spec passes.
    assert_eq!(new.image, "docker.io/library/nginx:alpine");
}

#[tokio::test]
async fn a_resize_changes_the_cgroup_limits_without_a_restart() {
    let f = setup("rn-resize").await;
    let secs = unique_sleep();
    let mut c = sleeper(secs);
    c["resources"] = json!({"requests": {"cpu": "100m", "memory": "32Mi"},
        "limits": {"cpu": "200m", "memory": "64Mi"}});
    f.create_pod("p", json!({"containers": [c]})).await;
    f.wait_pod("p", "pod p Ready", ready).await;
    let pid = wait_for("the sleep process", TIMEOUT, || async {
        host_pid_of_sleep(secs)
    })
    .await
    .unwrap();
    let memory = format!("{}/memory.limit_in_bytes", cgroup_dir(pid, "memory"));
    let quota = format!("{}/cpu.cfs_quota_us", cgroup_dir(pid, "cpu"));
    assert_eq!(read_trimmed(&memory), (64 * 1024 * 1024).to_string());
    assert_eq!(read_trimmed(&quota), "20000", "200m of a 100 ms period");

    let out = kubectl(
        &[
            "-n",
            f.ns.name(),
            "patch",
            "pod",
            "p",
            "--subresource",
            "resize",
            "-p",
            r#"{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"100m","memory":"32Mi"},"limits":{"cpu":"300m","memory":"96Mi"}}}]}}"#,
        ],
        None,
    )
    .unwrap();
    assert!(
        out.success,
        "kubectl patch --subresource resize: {}",
        out.stderr
    );

    let pod = f
        .wait_pod("p", "the resize applied to the container status", |p| {
            status_of(p, "main")
                .and_then(|cs| cs.resources)
                .and_then(|r| r.limits)
                .and_then(|l| l.get("memory").cloned())
                .is_some_and(|q| q.0 == "96Mi")
        })
        .await;
    wait_for("the new cgroup limits", TIMEOUT, || {
        let (memory, quota) = (memory.clone(), quota.clone());
        async move {
            (read_trimmed(&memory) == (96 * 1024 * 1024).to_string()
                && read_trimmed(&quota) == "30000")
                .then_some(())
        }
    })
    .await
    .unwrap();
    let cs = status_of(&pod, "main").unwrap();
    assert_eq!(cs.restart_count, 0, "no restart: {cs:?}");
    assert_eq!(host_pid_of_sleep(secs), Some(pid), "the same process");
}

#[tokio::test]
async fn a_missing_image_fails_to_pull() {
    let f = setup("rn-missing").await;
    f.create_pod(
        "p",
        json!({"containers": [
            {"name": "main", "image": "registry.k8s.io/e2e-test-images/no-such-image:1.0"}]}),
    )
    .await;
    let pod = f
        .wait_pod("p", "container main waiting with ErrImagePull", |p| {
            status_of(p, "main")
                .and_then(|cs| cs.state?.waiting)
                .is_some_and(|w| {
                    let message = w.message.unwrap_or_default();
                    w.reason.as_deref() == Some("ErrImagePull")
                        || (w.reason.as_deref() == Some("ImagePullBackOff")
                            && message.contains("ErrImagePull"))
                })
        })
        .await;
    let waiting = status_of(&pod, "main")
        .unwrap()
        .state
        .unwrap()
        .waiting
        .unwrap();
    assert!(
        waiting
            .message
            .as_deref()
            .unwrap_or("")
            .contains("not found"),
        "the registry does not have it: {waiting:?}"
    );
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
}

#[tokio::test]
async fn deleting_the_pod_stops_its_container() {
    let f = setup("rn-delete").await;
    let secs = unique_sleep();
    f.create_pod("p", json!({"containers": [sleeper(secs)]}))
        .await;
    f.wait_pod("p", "pod p Ready", ready).await;
    let pid = wait_for("the sleep process", TIMEOUT, || async {
        host_pid_of_sleep(secs)
    })
    .await
    .unwrap();
    let cgroup = cgroup_dir(pid, "memory");
    assert!(std::path::Path::new(&cgroup).exists());

    f.ns.api::<Pod>()
        .delete("p", &DeleteParams::default().grace_period(1))
        .await
        .unwrap();
    let pods = f.ns.api::<Pod>();
    wait_for("pod p gone from the API", TIMEOUT, || async {
        pods.get_opt("p").await.unwrap().is_none().then_some(())
    })
    .await
    .unwrap();
    wait_for("the process and its cgroup gone", TIMEOUT, || async {
        (!std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::path::Path::new(&cgroup).exists())
        .then_some(())
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn pods_that_do_not_opt_in_stay_on_the_kwok_nodes() {
    let env = TestEnv::connect().await.expect("testbed");
    let real = real_node(&env).await.expect("a real node");
    let nodes: Api<Node> = Api::all(env.client.clone());
    let kwok = nodes
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|n| {
            let spec = n.spec.clone().unwrap_or_default();
            spec.taints.is_none_or(|t| t.is_empty()) && spec.unschedulable != Some(true)
        })
        .collect::<Vec<_>>();
    if kwok.is_empty() {
        eprintln!("no kwok nodes: every schedulable node is real (nothing to check)");
        return;
    }
    let node = nodes.get(&real).await.unwrap();
    assert_eq!(
        node.labels().get(REAL_NODE_LABEL.0).map(String::as_str),
        Some(REAL_NODE_LABEL.1)
    );
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    assert!(
        taints
            .iter()
            .any(|t| t.key == REAL_NODE_TAINT && t.effect == "NoSchedule"),
        "{taints:?}"
    );
    assert!(
        !node.labels().contains_key("kubernetes.io/hostname"),
        "no hostname label: not a topology domain"
    );

    // A hostname spread (maxSkew 1, DoNotSchedule) over all kwok nodes, two pods each: a
    // tainted node counted as an empty domain would leave pods Pending.
    let ns = env.namespace("rn-kwok-only").await.unwrap();
    let replicas = 2 * kwok.len() as i32;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "web", "image": "nginx:1.25"}],
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]}},
        }
    }))
    .unwrap();
    ns.api::<Deployment>()
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let pods = wait_for_list(
        &ns.api::<Pod>(),
        &ListParams::default().labels("app=web"),
        "all pods Ready",
        TIMEOUT,
        |pods| pods.len() == replicas as usize && pods.iter().all(ready),
    )
    .await
    .unwrap();
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in &pods {
        *per_node
            .entry(p.spec.as_ref().unwrap().node_name.clone().unwrap())
            .or_default() += 1;
    }
    assert!(!per_node.contains_key(&real), "{per_node:?}");
    assert!(per_node.values().all(|&n| n == 2), "{per_node:?}");
}
