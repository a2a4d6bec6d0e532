//! BroadcastJob end to end on the testbed (OpenKruise v1.9.0 `pkg/controller/broadcastjob`):
//! one pod per eligible node and completion, tainted and unselected nodes skipped,
//! `parallelism`, the failure policies, `paused`, `activeDeadlineSeconds`,
//! `ttlSecondsAfterFinished`, a node added while the job runs, and a job over 200 kwok nodes.
//! Each test runs its own `kruise-manager` as users run it (webhooks on, default flags),
//! restricted to the test's namespace.
//!
//! Nodes: every test creates its own kwok nodes, labelled `e2e.kruise-rs.io/bcj=<namespace>` (and,
//! unless a test wants an unselected node, `e2e.kruise-rs.io/bcj-pool=<namespace>`) and tainted
//! `e2e.kruise-rs.io/bcj=<namespace>:NoSchedule`, and its jobs select and tolerate exactly those, so no other workload lands there and no other test's nodes count; they are deleted when
//! the test ends (a drop guard, also on failure) and leftovers of killed runs are removed first.
//! kwok (`--manage-nodes-with-label-selector type=kwok`) makes them Ready and runs their pods;
//! its `pod-complete` stage completes `restartPolicy: Never` pods after ~2 s. Tests that need a
//! pod to fail, or to stay active, hold their pods Pending with a scheduling gate and set their
//! phase themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, TestNamespace, install_crds, kubectl, kwok_node_named, wait_for};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
/// Label and taint key of the nodes a test creates (value: the test's namespace).
const NODE_KEY: &str = "e2e.kruise-rs.io/bcj";
/// Label (value: the test's namespace) of the test's nodes its jobs select.
const POOL_KEY: &str = "e2e.kruise-rs.io/bcj-pool";

struct Fixture {
    env: TestEnv,
    ns: TestNamespace,
    _manager: TestManager,
}

async fn setup(prefix: &str) -> Fixture {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    remove_stale_nodes(&env).await;
    let ns = env.namespace(prefix).await.unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name());
    let manager = TestManager::start(spec, TIMEOUT).await;
    Fixture {
        env,
        ns,
        _manager: manager,
    }
}

/// Deletes the test's nodes (by label) when dropped, also when the test fails.
struct TestNodes(String);

impl Drop for TestNodes {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "delete",
                "nodes",
                "-l",
                &format!("{NODE_KEY}={}", self.0),
                "--ignore-not-found",
                "--wait=false",
            ],
            None,
        );
    }
}

/// Deletes nodes left by killed runs (their namespace no longer exists).
async fn remove_stale_nodes(env: &TestEnv) {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    for node in nodes
        .list(&ListParams::default().labels(NODE_KEY))
        .await
        .unwrap()
        .items
    {
        let owner = node.labels().get(NODE_KEY).cloned().unwrap_or_default();
        if namespaces.get_opt(&owner).await.unwrap().is_none() {
            let _ = nodes
                .delete(&node.name_any(), &DeleteParams::default())
                .await;
        }
    }
}

impl Fixture {
    /// Creates kwok node `<ns>-<suffix>` with the test's label and taint, plus `taints`;
    /// `selected: false` leaves the label the jobs select off.
    async fn node(&self, suffix: &str, selected: bool, taints: Value) -> String {
        let name = format!("{}-{suffix}", self.ns.name());
        let mut node = kwok_node_named(&name, "zone-a");
        let labels = node.metadata.labels.get_or_insert_default();
        labels.insert(NODE_KEY.into(), self.ns.name().into());
        if selected {
            labels.insert(POOL_KEY.into(), self.ns.name().into());
        }
        let mut all =
            vec![json!({"key": NODE_KEY, "value": self.ns.name(), "effect": "NoSchedule"})];
        all.extend(taints.as_array().cloned().unwrap_or_default());
        node.spec = Some(serde_json::from_value(json!({"taints": all})).unwrap());
        let api: Api<Node> = Api::all(self.env.client.clone());
        api.create(&PostParams::default(), &node).await.unwrap();
        name
    }

    /// `n` selected nodes `<ns>-<prefix><i>`, once kwok has made them Ready.
    async fn nodes(&self, prefix: &str, n: usize) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for i in 0..n {
            out.insert(self.node(&format!("{prefix}{i}"), true, json!([])).await);
        }
        self.wait_ready(n).await;
        out
    }

    /// Waits until `n` of the test's nodes report allocatable resources and Ready (kwok's
    /// node-initialize stage): OpenKruise's fitness check counts a node without allocatable
    /// `pods` as full.
    async fn wait_ready(&self, n: usize) {
        let api: Api<Node> = Api::all(self.env.client.clone());
        let selector = format!("{NODE_KEY}={}", self.ns.name());
        let selector = &selector;
        wait_for("the test's nodes Ready", TIMEOUT, || {
            let api = api.clone();
            async move {
                let nodes = api
                    .list(&ListParams::default().labels(selector))
                    .await
                    .ok()?;
                let ready = nodes
                    .items
                    .iter()
                    .filter(|n| {
                        n.status
                            .as_ref()
                            .and_then(|s| s.conditions.as_ref())
                            .is_some_and(|c| {
                                c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                            })
                    })
                    .count();
                (ready >= n).then_some(())
            }
        })
        .await
        .unwrap();
    }

    fn guard(&self) -> TestNodes {
        TestNodes(self.ns.name().to_owned())
    }

    /// A v1beta1 BroadcastJob selecting and tolerating the test's nodes; `extra` is merged into
    /// its spec, `pod_annotations` into its template's annotations.
    async fn create_job(
        &self,
        name: &str,
        extra: Value,
        pod_annotations: Value,
    ) -> Api<BroadcastJob> {
        let mut spec = json!({
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": pod_annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {POOL_KEY: self.ns.name()},
                    "tolerations": [{"key": NODE_KEY, "operator": "Equal",
                        "value": self.ns.name(), "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                },
            },
        });
        merge(&mut spec, extra);
        let job: BroadcastJob = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        let api: Api<BroadcastJob> = self.ns.api();
        api.create(&PostParams::default(), &job).await.unwrap();
        api
    }

    async fn pods(&self, job: &str) -> Vec<Pod> {
        self.ns
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("broadcastjob-name={job}")))
            .await
            .unwrap()
            .items
    }

    /// Waits until the job's status satisfies `ok`, returning the job.
    async fn wait_job(
        &self,
        name: &str,
        what: &str,
        ok: impl Fn(&BroadcastJob) -> bool,
    ) -> BroadcastJob {
        let api: Api<BroadcastJob> = self.ns.api();
        let ok = &ok;
        wait_for(what, TIMEOUT, || {
            let api = api.clone();
            async move { api.get_opt(name).await.ok().flatten().filter(|j| ok(j)) }
        })
        .await
        .unwrap()
    }

    async fn wait_pods(&self, job: &str, what: &str, ok: impl Fn(&[Pod]) -> bool) -> Vec<Pod> {
        let ok = &ok;
        wait_for(what, TIMEOUT, || async move {
            let pods = self.pods(job).await;
            ok(&pods).then_some(pods)
        })
        .await
        .unwrap()
    }

    /// Sets a pod's phase (what a kubelet reports when its containers exit), for pods that
    /// [`held`] keeps from being scheduled.
    async fn set_phase(&self, pod: &str, phase: &str) {
        self.ns
            .api::<Pod>()
            .patch_status(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": phase}})),
            )
            .await
            .unwrap();
    }

    async fn fail_pod(&self, pod: &str) {
        self.set_phase(pod, "Failed").await;
    }

    async fn event_reasons(&self, job: &str) -> BTreeSet<String> {
        self.ns
            .api::<Event>()
            .list(&ListParams::default().fields(&format!("involvedObject.name={job}")))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|e| e.reason)
            .collect()
    }
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

fn phase(job: &BroadcastJob) -> &str {
    job.status.as_ref().map_or("", |s| s.phase.as_str())
}

fn pod_phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn node_of(p: &Pod) -> String {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn condition<'a>(
    job: &'a BroadcastJob,
    type_: &str,
) -> Option<&'a kruise_api::apps::v1beta1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// A template spec whose pods stay Pending (a scheduling gate nobody removes): kwok never
/// runs them, so the test decides their outcome with [`Fixture::set_phase`].
fn held() -> Value {
    json!({"template": {"spec": {"schedulingGates": [{"name": "e2e.kruise-rs.io/hold"}]}}})
}

/// Pending, not being deleted.
fn is_held(p: &Pod) -> bool {
    pod_phase(p) == "Pending" && p.metadata.deletion_timestamp.is_none()
}

/// Every eligible node gets exactly one pod carrying the job's labels and owner; nodes without
/// the selected label, or with a taint the template does not tolerate, get none; the job
/// completes when every pod has succeeded, with the status and Events OpenKruise writes.
#[tokio::test]
async fn one_pod_per_eligible_node_then_complete() {
    let f = setup("bcj-basic").await;
    let _nodes = f.guard();
    let eligible = f.nodes("ok", 3).await;
    f.node("unselected", false, json!([])).await;
    f.node(
        "tainted",
        true,
        json!([{"key": "e2e.kruise-rs.io/other", "value": "x", "effect": "NoExecute"}]),
    )
    .await;
    // A PreferNoSchedule taint is not a predicate.
    let soft = f
        .node(
            "soft",
            true,
            json!([{"key": "e2e.kruise-rs.io/soft", "effect": "PreferNoSchedule"}]),
        )
        .await;
    let mut eligible = eligible;
    eligible.insert(soft);
    f.wait_ready(6).await;
    f.create_job("web", json!({}), json!({})).await;
    let job = f
        .wait_job("web", "the job completed", |j| phase(j) == "completed")
        .await;
    let st = job.status.clone().unwrap();
    assert_eq!(
        (st.desired, st.succeeded, st.failed, st.active),
        (4, 4, 0, 0)
    );
    assert!(st.start_time.is_some() && st.completion_time.is_some());
    let c = condition(&job, "Complete").expect("Complete condition");
    assert_eq!(c.status, "True");
    assert_eq!(c.reason.as_deref(), Some("Complete"));
    assert_eq!(
        c.message.as_deref(),
        Some("Job completed, 4 pods succeeded, 0 pods failed")
    );
    let pods = f.pods("web").await;
    let nodes: BTreeSet<String> = pods.iter().map(node_of).collect();
    assert_eq!(pods.len(), 4, "one pod per eligible node");
    assert_eq!(nodes, eligible);
    let uid = job.uid().unwrap();
    for p in &pods {
        assert!(p.name_any().starts_with("web-"));
        assert_eq!(p.labels()["broadcastjob-name"], "web");
        assert_eq!(p.labels()["broadcastjob-controller-uid"], uid);
        assert_eq!(p.labels()["app"], "web");
        let owner = &p.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("BroadcastJob", uid.as_str(), Some(true))
        );
        // Bound by node affinity, as OpenKruise's default `--assign-bcj-pods-by-scheduler`.
        let term = &p
            .spec
            .as_ref()
            .unwrap()
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms[0];
        assert_eq!(
            term.match_fields.as_ref().unwrap()[0]
                .values
                .as_ref()
                .unwrap()[0],
            node_of(p)
        );
    }
    let reasons = f.event_reasons("web").await;
    assert!(reasons.contains("SuccessfulCreate"), "{reasons:?}");
    assert!(reasons.contains("JobComplete"), "{reasons:?}");
}

/// `parallelism: 2` over 5 nodes: never more than 2 pods run at once, and the job completes.
#[tokio::test]
async fn parallelism_bounds_running_pods() {
    let f = setup("bcj-par").await;
    let _nodes = f.guard();
    f.nodes("n", 5).await;
    f.create_job("par", json!({"parallelism": 2}), json!({}))
        .await;
    let api: Api<BroadcastJob> = f.ns.api();
    let max_active = std::cell::Cell::new(0usize);
    let max_status_active = std::cell::Cell::new(0i32);
    wait_for("the job completed", TIMEOUT, || {
        let api = api.clone();
        let (f, max_active, max_status_active) = (&f, &max_active, &max_status_active);
        async move {
            let pods = f.pods("par").await;
            let active = pods
                .iter()
                .filter(|p| !matches!(pod_phase(p), "Succeeded" | "Failed"))
                .count();
            max_active.set(max_active.get().max(active));
            let job = api.get("par").await.ok()?;
            let a = job.status.as_ref()?.active;
            max_status_active.set(max_status_active.get().max(a));
            (phase(&job) == "completed").then_some(())
        }
    })
    .await
    .unwrap();
    let (max_active, max_status_active) = (max_active.get(), max_status_active.get());
    assert!(max_active <= 2, "{max_active} pods were active at once");
    assert!(
        max_status_active <= 2,
        "status.active reached {max_status_active}"
    );
    let pods = f.pods("par").await;
    assert_eq!(pods.len(), 5);
    assert!(pods.iter().all(|p| pod_phase(p) == "Succeeded"));
}

/// `failurePolicy: FailFast` (the default): a failed pod fails the job, with condition and
/// Events, and the job's other (active) pods are deleted.
#[tokio::test]
async fn fail_fast_fails_the_job_and_deletes_active_pods() {
    let f = setup("bcj-ff").await;
    let _nodes = f.guard();
    f.nodes("n", 2).await;
    f.create_job("ff", held(), json!({})).await;
    let pods = f
        .wait_pods("ff", "2 pending pods", |p| {
            p.len() == 2 && p.iter().all(is_held)
        })
        .await;
    f.fail_pod(&pods[0].name_any()).await;
    let job = f
        .wait_job("ff", "the job failed", |j| phase(j) == "failed")
        .await;
    let c = condition(&job, "Failed").expect("Failed condition");
    assert_eq!(
        c.message.as_deref(),
        Some("failure policy is FailurePolicyTypeFailFast and failed pod is found")
    );
    assert!(job.status.as_ref().unwrap().completion_time.is_some());
    f.wait_pods("ff", "the active pod deleted", |p| {
        p.len() == 1 && pod_phase(&p[0]) == "Failed"
    })
    .await;
    let reasons = f.event_reasons("ff").await;
    assert!(reasons.contains("failed pod is found"), "{reasons:?}");
    assert!(reasons.contains("SuccessfulDelete"), "{reasons:?}");
}

/// `failurePolicy: Continue`: a failed pod is counted and the job still completes.
#[tokio::test]
async fn continue_counts_failures_and_completes() {
    let f = setup("bcj-cont").await;
    let _nodes = f.guard();
    f.nodes("n", 2).await;
    let mut spec = held();
    merge(&mut spec, json!({"failurePolicy": {"type": "Continue"}}));
    f.create_job("cont", spec, json!({})).await;
    let pods = f
        .wait_pods("cont", "2 pending pods", |p| {
            p.len() == 2 && p.iter().all(is_held)
        })
        .await;
    f.fail_pod(&pods[0].name_any()).await;
    f.wait_job("cont", "one failure counted, still running", |j| {
        phase(j) == "running"
            && j.status
                .as_ref()
                .is_some_and(|s| s.failed == 1 && s.active == 1)
    })
    .await;
    f.set_phase(&pods[1].name_any(), "Succeeded").await;
    let job = f
        .wait_job("cont", "the job completed", |j| phase(j) == "completed")
        .await;
    let st = job.status.unwrap();
    assert_eq!((st.succeeded, st.failed, st.desired), (1, 1, 2));
}

/// `failurePolicy: Pause` with `parallelism: 1`: the first pod fails, the job is paused and no
/// pod is started on the second node.
#[tokio::test]
async fn pause_policy_stops_creating_pods() {
    let f = setup("bcj-pause").await;
    let _nodes = f.guard();
    f.nodes("n", 2).await;
    let mut spec = held();
    merge(
        &mut spec,
        json!({"parallelism": 1, "failurePolicy": {"type": "Pause"}}),
    );
    f.create_job("pz", spec, json!({})).await;
    let pods = f
        .wait_pods("pz", "1 pending pod", |p| {
            p.len() == 1 && p.iter().all(is_held)
        })
        .await;
    f.fail_pod(&pods[0].name_any()).await;
    let job = f
        .wait_job("pz", "the job paused", |j| {
            phase(j) == "paused" && j.status.as_ref().is_some_and(|s| s.failed == 1)
        })
        .await;
    assert!(condition(&job, "Failed").is_none());
    // Absence can only be checked over time: a pass after the failure would have created it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(f.pods("pz").await.len(), 1, "no pod started while paused");
    assert!(f.event_reasons("pz").await.contains("Paused"));
}

/// `paused: true`: no pod until the job is resumed; then it runs to completion.
#[tokio::test]
async fn paused_job_starts_when_resumed() {
    let f = setup("bcj-paused").await;
    let _nodes = f.guard();
    f.nodes("n", 2).await;
    let api = f.create_job("pd", json!({"paused": true}), json!({})).await;
    // The manager may see a node's allocatable resources a moment after the test does; the
    // node's change wakes the job, which then counts it.
    f.wait_job("pd", "the job paused with desired 2", |j| {
        phase(j) == "paused" && j.status.as_ref().is_some_and(|s| s.desired == 2)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(f.pods("pd").await.is_empty(), "no pod while paused");
    api.patch(
        "pd",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": false}})),
    )
    .await
    .unwrap();
    f.wait_job("pd", "the job completed", |j| phase(j) == "completed")
        .await;
    assert!(f.event_reasons("pd").await.contains("Continue"));
    assert_eq!(f.pods("pd").await.len(), 2);
}

/// `activeDeadlineSeconds`: a job still running after the deadline fails
/// (`DeadlineExceeded`) and its pods are deleted.
#[tokio::test]
async fn active_deadline_fails_the_job() {
    let f = setup("bcj-ads").await;
    let _nodes = f.guard();
    f.nodes("n", 1).await;
    let mut spec = held();
    merge(
        &mut spec,
        json!({"completionPolicy": {"type": "Always", "activeDeadlineSeconds": 4}}),
    );
    f.create_job("ads", spec, json!({})).await;
    f.wait_pods("ads", "a pending pod", |p| {
        p.len() == 1 && p.iter().all(is_held)
    })
    .await;
    let job = f
        .wait_job("ads", "the job failed", |j| phase(j) == "failed")
        .await;
    let c = condition(&job, "Failed").unwrap();
    assert_eq!(
        c.message.as_deref(),
        Some(
            format!(
                "Job {}/ads was active longer than specified deadline",
                f.ns.name()
            )
            .as_str()
        )
    );
    let st = job.status.as_ref().unwrap();
    let took = st
        .completion_time
        .as_ref()
        .unwrap()
        .0
        .duration_since(st.start_time.as_ref().unwrap().0);
    assert!(took.as_secs_f64() >= 4.0, "failed after {took:?}");
    f.wait_pods("ads", "its pod deleted", |p| p.is_empty())
        .await;
    assert!(f.event_reasons("ads").await.contains("DeadlineExceeded"));
}

/// `ttlSecondsAfterFinished`: a finished job is deleted (with its pods, by the garbage
/// collector) once the TTL has passed.
#[tokio::test]
async fn ttl_deletes_the_finished_job() {
    let f = setup("bcj-ttl").await;
    let _nodes = f.guard();
    f.nodes("n", 1).await;
    let api = f
        .create_job(
            "ttl",
            json!({"completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 3}}),
            json!({}),
        )
        .await;
    let uid = api.get("ttl").await.unwrap().uid().unwrap();
    let uid = &uid;
    wait_for("the job deleted", TIMEOUT, || {
        let api = api.clone();
        async move {
            match api.get_opt("ttl").await {
                Ok(None) => Some(()),
                Ok(Some(j)) if j.uid().as_deref() != Some(uid.as_str()) => Some(()),
                _ => None,
            }
        }
    })
    .await
    .unwrap();
}

/// Completion policy `Never`: the job keeps running; a node added later (and one whose taint is
/// removed) gets its pod, and `desired` follows.
#[tokio::test]
async fn a_node_added_while_running_gets_its_pod() {
    let f = setup("bcj-new").await;
    let _nodes = f.guard();
    f.nodes("a", 1).await;
    f.create_job(
        "nv",
        json!({"completionPolicy": {"type": "Never"}}),
        json!({}),
    )
    .await;
    f.wait_job("nv", "desired 1 and one success", |j| {
        j.status
            .as_ref()
            .is_some_and(|s| s.desired == 1 && s.succeeded == 1)
    })
    .await;
    let added = f.node("b0", true, json!([])).await;
    let tainted = f
        .node(
            "c0",
            true,
            json!([{"key": "e2e.kruise-rs.io/later", "effect": "NoSchedule"}]),
        )
        .await;
    let job = f
        .wait_job("nv", "desired 2 and two successes", |j| {
            j.status
                .as_ref()
                .is_some_and(|s| s.desired == 2 && s.succeeded == 2)
        })
        .await;
    assert_eq!(phase(&job), "running");
    let nodes: BTreeSet<String> = f.pods("nv").await.iter().map(node_of).collect();
    assert!(nodes.contains(&added) && !nodes.contains(&tainted));
    // The taint goes: the node becomes eligible and gets its pod.
    let nodes_api: Api<Node> = Api::all(f.env.client.clone());
    let mut node = nodes_api.get(&tainted).await.unwrap();
    let spec = node.spec.as_mut().unwrap();
    spec.taints
        .as_mut()
        .unwrap()
        .retain(|t| t.key != "e2e.kruise-rs.io/later");
    nodes_api
        .replace(&tainted, &PostParams::default(), &node)
        .await
        .unwrap();
    f.wait_pods("nv", "a pod on the untainted node", |p| {
        p.iter().any(|p| node_of(p) == tainted)
    })
    .await;
    f.wait_job("nv", "desired 3", |j| {
        j.status
            .as_ref()
            .is_some_and(|s| s.desired == 3 && s.succeeded == 3)
    })
    .await;
    assert_eq!(
        phase(&f.ns.api::<BroadcastJob>().get("nv").await.unwrap()),
        "running"
    );
}

/// A BroadcastJob over 200 kwok nodes finishes with exactly one pod per node.
#[tokio::test]
async fn two_hundred_nodes_one_pod_each() {
    let f = setup("bcj-200").await;
    let _nodes = f.guard();
    let api: Api<Node> = Api::all(f.env.client.clone());
    let names: Vec<String> = (0..200).map(|i| format!("{}-n{i}", f.ns.name())).collect();
    let creates = names.iter().map(|name| {
        let mut node = kwok_node_named(name, "zone-b");
        let labels = node.metadata.labels.get_or_insert_default();
        labels.insert(NODE_KEY.into(), f.ns.name().into());
        labels.insert(POOL_KEY.into(), f.ns.name().into());
        node.spec = Some(
            serde_json::from_value(json!({"taints": [
                {"key": NODE_KEY, "value": f.ns.name(), "effect": "NoSchedule"}]}))
            .unwrap(),
        );
        let api = api.clone();
        async move { api.create(&PostParams::default(), &node).await.map(|_| ()) }
    });
    for r in futures::future::join_all(creates).await {
        r.unwrap();
    }
    f.create_job("big", json!({}), json!({})).await;
    let api: Api<BroadcastJob> = f.ns.api();
    let job = wait_for("the job completed", Duration::from_secs(300), || {
        let api = api.clone();
        async move {
            let j = api.get("big").await.ok()?;
            (phase(&j) == "completed").then_some(j)
        }
    })
    .await
    .unwrap();
    let st = job.status.unwrap();
    assert_eq!((st.desired, st.succeeded, st.failed), (200, 200, 0));
    let pods = f.pods("big").await;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in &pods {
        *per_node.entry(node_of(p)).or_default() += 1;
    }
    assert_eq!(pods.len(), 200);
    assert_eq!(per_node.len(), 200);
    assert!(per_node.values().all(|&n| n == 1));
    let expected: BTreeSet<&String> = names.iter().collect();
    assert_eq!(per_node.keys().collect::<BTreeSet<_>>(), expected);
}
