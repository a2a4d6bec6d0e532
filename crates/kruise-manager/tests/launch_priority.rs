//! Container launch priority on the testbed's real node: the pod webhook gives an `Ordered` pod's
//! containers barrier envs from ConfigMap `<pod>-barrier`, the kubelet holds back a container
//! whose key is missing, and the `containerlaunchpriority` controller writes the keys one
//! priority at a time as the higher containers become Ready (OpenKruise's container launch
//! priority; its CloneSet e2e "with priorities" specs wait on the same barrier).
//!
//! Runs on the real node because kwok does not resolve ConfigMap env references: there every
//! container starts at once, which shows nothing about the order.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ContainerStatus, Pod};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds, kubectl, on_real_node, real_node, wait_for_object};
use kube::ResourceExt;
use kube::api::PostParams;
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(90);

fn status<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

fn waiting_reason(pod: &Pod, name: &str) -> Option<String> {
    status(pod, name)?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

fn running(pod: &Pod, name: &str) -> bool {
    status(pod, name)
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some())
}

fn barrier_keys(cm: &ConfigMap) -> Vec<String> {
    cm.data
        .as_ref()
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_containers_start_one_priority_at_a_time() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let node = real_node(&env).await.expect("a real node");
    let ns = env.namespace("launch-prio").await.unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let _manager = TestManager::start(spec, TIMEOUT).await;

    // `first` becomes Ready only when the test creates /tmp/ready in it; `second` must not
    // start before that.
    let mut pod_spec = json!({
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {"name": "first", "image": "busybox:1.36", "command": ["sleep", "3600"],
             "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]},
                                "periodSeconds": 1, "failureThreshold": 1}},
            {"name": "second", "image": "busybox:1.36", "command": ["sleep", "3600"]},
        ],
    });
    on_real_node(&mut pod_spec, &node);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ordered",
                     "annotations": {"apps.kruise.io/container-launch-priority": "Ordered"}},
        "spec": pod_spec,
    }))
    .unwrap();
    let pods = ns.api::<Pod>();
    let cms = ns.api::<ConfigMap>();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();

    // The barrier exists, owned by the pod, with only the first priority released; `first`
    // runs and `second` waits on the missing key.
    let pod = wait_for_object(
        &pods,
        "ordered",
        "first running, second held back by the barrier",
        TIMEOUT,
        |p| {
            running(p, "first")
                && waiting_reason(p, "second").as_deref() == Some("CreateContainerConfigError")
        },
    )
    .await
    .unwrap();
    let barrier = cms.get("ordered-barrier").await.unwrap();
    assert_eq!(barrier_keys(&barrier), vec!["p_0".to_string()]);
    let owner = &barrier.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), Some(&owner.uid)),
        ("Pod", "ordered", created.uid().as_ref())
    );
    assert!(
        !pod.annotations()
            .contains_key("apps.kruise.io/container-launch-priority-completed")
    );
    // Held for a while: nothing releases `second` while `first` is not Ready.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pod = pods.get("ordered").await.unwrap();
    assert!(!running(&pod, "second"), "{:?}", pod.status);
    assert_eq!(
        barrier_keys(&cms.get("ordered-barrier").await.unwrap()),
        vec!["p_0".to_string()]
    );

    // `first` Ready → the next priority is released, `second` starts, the pod is completed.
    let out = kubectl(
        &[
            "-n",
            ns.name(),
            "exec",
            "ordered",
            "-c",
            "first",
            "--",
            "touch",
            "/tmp/ready",
        ],
        None,
    )
    .unwrap();
    assert!(out.success, "kubectl exec: {}", out.stderr);
    let pod = wait_for_object(
        &pods,
        "ordered",
        "second running and the pod marked completed",
        TIMEOUT,
        |p| {
            running(p, "second")
                && p.annotations()
                    .get("apps.kruise.io/container-launch-priority-completed")
                    .is_some_and(|v| v == "true")
        },
    )
    .await
    .unwrap();
    let mut keys = barrier_keys(&cms.get("ordered-barrier").await.unwrap());
    keys.sort();
    assert_eq!(keys, vec!["p_-1".to_string(), "p_0".to_string()]);
    let started = |name: &str| {
        status(&pod, name)
            .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.clone())
            .unwrap()
            .0
    };
    assert!(
        started("second") > started("first"),
        "second started {:?}, first {:?}",
        started("second"),
        started("first")
    );
}
