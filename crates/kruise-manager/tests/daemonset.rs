//! Advanced DaemonSet end to end on the real testbed. Each test runs its own `kruise-manager` as
//! users run it (webhook server and pod webhook on, default flags), restricted to the test's
//! namespace; every behaviour of OpenKruise v1.9.0's own DaemonSet e2e specs
//! (`test/e2e/apps/v1beta1/daemonset.go`) has a test here, plus the issue's own scenarios.
//!
//! Daemon pods go to every node, so the tests share the cluster's nodes: tests that add, taint or
//! remove nodes hold [`NODES`] exclusively, all others hold it shared. Node labels a test sets use
//! a key naming the test's namespace, so they never affect another test, and are removed after.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kruise_api::apps::v1beta1::{DaemonSet, DaemonSetStatus};
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{
    TestEnv, TestNamespace, ensure_kwok_nodes, install_crds, kubectl, kwok_node_named, wait_for,
};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::RwLock;

const TIMEOUT: Duration = Duration::from_secs(180);
const OLD_IMAGE: &str = "nginx:1.25";
const NEW_IMAGE: &str = "nginx:1.26";
const HASH: &str = "controller-revision-hash";
/// Label (value: the owning test namespace) on nodes a test creates, so leftovers of a killed
/// run can be found and removed.
const TEST_NODE_LABEL: &str = "e2e.kruise-rs.io/test-node";

/// Tests that add, taint or delete nodes take this exclusively; every other test shares it.
static NODES: RwLock<()> = RwLock::const_new(());

struct Fixture {
    env: TestEnv,
    ns: TestNamespace,
    manager: TestManager,
}

async fn setup(prefix: &str, args: &[&str]) -> Fixture {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    ensure_kwok_nodes(&env, 6).await.expect("6 kwok nodes");
    let ns = env.namespace(prefix).await.unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(args);
    let manager = TestManager::start(spec, TIMEOUT).await;
    Fixture { env, ns, manager }
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

/// A DaemonSet for the kwok nodes (`nodeSelector: {type: kwok}`) whose pods tolerate every
/// taint (as OpenKruise's e2e template), `terminationGracePeriodSeconds: 3`, one container.
fn daemonset(name: &str, extra_spec: Value) -> DaemonSet {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "nodeSelector": {"type": "kwok"},
                "tolerations": [{"operator": "Exists"}],
                "terminationGracePeriodSeconds": 3,
                "containers": [{"name": "main", "image": OLD_IMAGE}],
            },
        },
    });
    merge(&mut spec, extra_spec);
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn in_place(max_unavailable: Value) -> Value {
    json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
        "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": max_unavailable}}})
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

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
}

fn image_of(pod: &Pod) -> String {
    pod.spec.as_ref().unwrap().containers[0]
        .image
        .clone()
        .unwrap_or_default()
}

fn hash_of(pod: &Pod) -> String {
    pod.labels().get(HASH).cloned().unwrap_or_default()
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

fn status_of(ds: &DaemonSet) -> DaemonSetStatus {
    ds.status.clone().unwrap_or_default()
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().filter_map(|p| p.uid()).collect()
}

/// Every pod of the set (also terminating ones).
async fn all_pods(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    ns.api::<Pod>()
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
}

/// The kwok nodes whose labels contain `labels`.
async fn kwok_nodes(env: &TestEnv, labels: &[(&str, &str)]) -> BTreeSet<String> {
    let mut selector = String::from("type=kwok");
    for (k, v) in labels {
        selector.push_str(&format!(",{k}={v}"));
    }
    Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels(&selector))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

/// What [`settled`] checks, for its failure message.
fn settle_problems(ds: &DaemonSet, pods: &[Pod], nodes: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let s = status_of(ds);
    let n = nodes.len() as i32;
    if s.observed_generation != ds.metadata.generation {
        problems.push(format!(
            "observedGeneration {:?} != generation {:?}",
            s.observed_generation, ds.metadata.generation
        ));
    }
    let counts = [
        ("desiredNumberScheduled", s.desired_number_scheduled),
        ("currentNumberScheduled", s.current_number_scheduled),
        ("numberReady", s.number_ready),
        ("updatedNumberScheduled", s.updated_number_scheduled),
        ("numberAvailable", s.number_available.unwrap_or(0)),
    ];
    for (field, v) in counts {
        if v != n {
            problems.push(format!("{field} {v} != {n}"));
        }
    }
    if s.number_misscheduled != 0 || s.number_unavailable.unwrap_or(0) != 0 {
        problems.push(format!(
            "numberMisscheduled {} numberUnavailable {:?}",
            s.number_misscheduled, s.number_unavailable
        ));
    }
    let revision = s.update_revision.clone().unwrap_or_default();
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in pods {
        if p.metadata.deletion_timestamp.is_some() {
            problems.push(format!("{} terminating", p.name_any()));
            continue;
        }
        let node = node_of(p).unwrap_or_default();
        if !nodes.contains(&node) {
            problems.push(format!(
                "{} on {node:?}, not an eligible node",
                p.name_any()
            ));
        }
        *per_node.entry(node).or_default() += 1;
        if !is_ready(p) {
            problems.push(format!("{} not ready", p.name_any()));
        }
        if hash_of(p) != revision {
            problems.push(format!(
                "{} at revision {} not {revision}",
                p.name_any(),
                hash_of(p)
            ));
        }
    }
    for node in nodes {
        match per_node.get(node) {
            Some(1) => {}
            other => problems.push(format!("{node}: {} pods", other.copied().unwrap_or(0))),
        }
    }
    problems
}

/// Waits until the set runs exactly one Ready pod at its update revision on each kwok node
/// whose labels contain `labels` (the node list re-read each time, as OpenKruise's
/// `CheckRunningOnAllNodes`) and nowhere else, and its status says so for its latest generation.
async fn settled(
    f: &Fixture,
    name: &str,
    labels: &[(&str, &str)],
) -> (DaemonSet, Vec<Pod>, BTreeSet<String>) {
    let api = f.ns.api::<DaemonSet>();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let nodes = kwok_nodes(&f.env, labels).await;
        let ds = api.get(name).await.unwrap();
        let pods = all_pods(&f.ns, name).await;
        let problems = settle_problems(&ds, &pods, &nodes);
        if problems.is_empty() {
            return (ds, pods, nodes);
        }
        assert!(
            Instant::now() < deadline,
            "{name}: not settled on {} nodes within {TIMEOUT:?}: {problems:?}; status {:?}",
            nodes.len(),
            status_of(&ds)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn patch_ds(ns: &TestNamespace, name: &str, patch: Value) {
    ns.api::<DaemonSet>()
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

fn image_patch(image: &str) -> Value {
    json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}})
}

/// Waits until `probe` holds for the set's pods.
async fn wait_pods<F>(f: &Fixture, name: &str, what: &str, probe: F) -> Vec<Pod>
where
    F: Fn(&[Pod]) -> bool,
{
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let pods = all_pods(&f.ns, name).await;
        if probe(&pods) {
            return pods;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {what} not reached within {TIMEOUT:?}; pods: {:?}",
            pods.iter()
                .map(|p| (p.name_any(), node_of(p), hash_of(p), is_ready(p)))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Labels on nodes, removed again on drop (also when the test fails).
struct NodeLabels {
    key: String,
    nodes: Mutex<BTreeSet<String>>,
}

impl NodeLabels {
    /// A key of the test's own (`e2e.kruise-rs.io/<namespace>`).
    fn new(ns: &TestNamespace) -> Self {
        Self {
            key: format!("e2e.kruise-rs.io/{}", ns.name()),
            nodes: Mutex::default(),
        }
    }

    fn set(&self, node: &str, value: &str) {
        self.nodes.lock().unwrap().insert(node.to_owned());
        let out = kubectl(
            &[
                "label",
                "node",
                node,
                &format!("{}={value}", self.key),
                "--overwrite",
            ],
            None,
        )
        .unwrap();
        assert!(out.success, "labelling {node}: {}", out.stderr);
    }
}

impl Drop for NodeLabels {
    fn drop(&mut self) {
        for node in self.nodes.lock().unwrap().iter() {
            let _ = kubectl(&["label", "node", node, &format!("{}-", self.key)], None);
        }
    }
}

/// Nodes a test created, deleted on drop (also when the test fails).
struct TestNodes(Vec<String>);

impl Drop for TestNodes {
    fn drop(&mut self) {
        for node in &self.0 {
            let _ = kubectl(
                &["delete", "node", node, "--ignore-not-found", "--wait=false"],
                None,
            );
        }
    }
}

/// Deletes nodes left by killed runs of node tests (their namespace no longer exists).
async fn remove_stale_test_nodes(env: &TestEnv) {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    for node in nodes
        .list(&ListParams::default().labels(TEST_NODE_LABEL))
        .await
        .unwrap()
        .items
    {
        let owner = node
            .labels()
            .get(TEST_NODE_LABEL)
            .cloned()
            .unwrap_or_default();
        if namespaces.get_opt(&owner).await.unwrap().is_none() {
            let _ = nodes
                .delete(&node.name_any(), &DeleteParams::default())
                .await;
        }
    }
}

/// One change of a pod, as a watch of the namespace saw it.
#[derive(Clone)]
struct Seen {
    pod: Pod,
    deleted: bool,
}

/// Records every pod change of a namespace from the moment [`PodLog::start`] returns.
#[derive(Clone, Default)]
struct PodLog {
    events: Arc<Mutex<Vec<Seen>>>,
    /// Number of events that made up the initial list.
    initial: Arc<Mutex<usize>>,
}

impl PodLog {
    async fn start(ns: &TestNamespace) -> (Self, tokio::task::JoinHandle<()>) {
        let log = PodLog::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let api = ns.api::<Pod>();
        let sink = log.clone();
        let handle = tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let Ok(ev) = ev else { continue };
                let (pod, deleted) = match ev {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => (p, false),
                    watcher::Event::Delete(p) => (p, true),
                    watcher::Event::InitDone => {
                        if let Some(tx) = tx.take() {
                            *sink.initial.lock().unwrap() = sink.events.lock().unwrap().len();
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    watcher::Event::Init => continue,
                };
                sink.events.lock().unwrap().push(Seen { pod, deleted });
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(30), rx).await;
        (log, handle)
    }

    fn events(&self) -> Vec<Seen> {
        self.events.lock().unwrap().clone()
    }

    /// Replays the log: `check` sees the pods (by UID) after every change that followed the
    /// initial list.
    fn replay(&self, mut check: impl FnMut(&HashMap<String, Pod>)) {
        let initial = *self.initial.lock().unwrap();
        let mut pods: HashMap<String, Pod> = HashMap::new();
        for (i, e) in self.events().into_iter().enumerate() {
            let uid = e.pod.uid().unwrap_or_default();
            if e.deleted {
                pods.remove(&uid);
            } else {
                pods.insert(uid, e.pod);
            }
            if i + 1 >= initial {
                check(&pods);
            }
        }
    }

    /// UIDs of pods created after the log started.
    fn created(&self) -> BTreeSet<String> {
        let initial = *self.initial.lock().unwrap();
        let before: BTreeSet<String> = self.events()[..initial]
            .iter()
            .filter_map(|e| e.pod.uid())
            .collect();
        self.events()
            .iter()
            .filter_map(|e| e.pod.uid())
            .filter(|u| !before.contains(u))
            .collect()
    }

    /// UIDs of pods deleted (deletion started) after the log started.
    fn deleted(&self) -> BTreeSet<String> {
        let initial = *self.initial.lock().unwrap();
        self.events()[initial..]
            .iter()
            .filter(|e| e.deleted || e.pod.metadata.deletion_timestamp.is_some())
            .filter_map(|e| e.pod.uid())
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// OpenKruise v1.9.0 `test/e2e/apps/v1beta1/daemonset.go` behaviours

/// "should run and stop simple daemon": one Ready pod per node, bound through the scheduler by
/// a `metadata.name` node affinity, with the daemon tolerations; status, revision; a deleted
/// pod is replaced on its node.
#[tokio::test]
async fn runs_one_pod_per_node_and_replaces_a_deleted_one() {
    let _nodes = NODES.read().await;
    let f = setup("ds-simple", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(&PostParams::default(), &daemonset("web", json!({})))
        .await
        .unwrap();
    let (ds, pods, nodes) = settled(&f, "web", &[]).await;
    assert!(nodes.len() >= 6);
    let revision = status_of(&ds).update_revision.unwrap();

    // Go `omitempty`: a zero numberUnavailable is absent, not 0.
    let raw = serde_json::to_value(f.ns.api::<DaemonSet>().get("web").await.unwrap()).unwrap();
    assert!(raw["status"].get("numberUnavailable").is_none(), "{raw}");
    assert!(raw["status"].get("daemonSetHash").is_none(), "{raw}");

    for p in &pods {
        let spec = p.spec.as_ref().unwrap();
        let owner = p.metadata.owner_references.as_ref().unwrap();
        assert!(
            owner.iter().any(|o| o.controller == Some(true)
                && o.kind == "DaemonSet"
                && o.api_version == "apps.kruise.io/v1beta1"
                && o.name == "web"),
            "{owner:?}"
        );
        let terms = &spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .expect("required node affinity")
            .node_selector_terms;
        let fields = terms[0].match_fields.as_ref().expect("matchFields");
        assert_eq!(fields[0].key, "metadata.name");
        assert_eq!(
            fields[0].values.as_deref(),
            Some(&[node_of(p).unwrap()][..])
        );
        let tolerations = spec.tolerations.as_ref().unwrap();
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/unschedulable",
        ] {
            assert!(
                tolerations.iter().any(|t| t.key.as_deref() == Some(key)),
                "{key} missing from {tolerations:?}"
            );
        }
        assert!(p.metadata.name.as_ref().unwrap().starts_with("web-"));
    }
    let revisions =
        f.ns.api::<ControllerRevision>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
    assert_eq!(revisions.len(), 1, "one ControllerRevision");
    assert_eq!(revisions[0].labels().get(HASH), Some(&revision));
    assert_eq!(revisions[0].revision, Some(1));

    let victim = pods[0].clone();
    let node = node_of(&victim).unwrap();
    f.ns.api::<Pod>()
        .delete(&victim.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    let (_, after, _) = settled(&f, "web", &[]).await;
    let replacement = after
        .iter()
        .find(|p| node_of(p).as_deref() == Some(node.as_str()))
        .unwrap();
    assert_ne!(replacement.uid(), victim.uid());
    assert_eq!(
        uids(&after).intersection(&uids(&pods)).count(),
        pods.len() - 1
    );
}

/// "should run and stop complex daemon": a template node selector; a node labelled to match
/// gets a pod, relabelled away loses it; a new node selector in the template moves the set.
#[tokio::test]
async fn node_selector_follows_node_labels() {
    let _nodes = NODES.read().await;
    let f = setup("ds-complex", &[]).await;
    let labels = NodeLabels::new(&f.ns);
    let key = labels.key.clone();
    let node = kwok_nodes(&f.env, &[]).await.into_iter().next().unwrap();
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset(
                "web",
                json!({"template": {"spec": {"nodeSelector": {key.as_str(): "blue"}}}}),
            ),
        )
        .await
        .unwrap();
    let (ds, _, _) = settled(&f, "web", &[(&key, "blue")]).await;
    assert_eq!(status_of(&ds).desired_number_scheduled, 0);

    labels.set(&node, "blue");
    let (_, pods, nodes) = settled(&f, "web", &[(&key, "blue")]).await;
    assert_eq!(nodes, BTreeSet::from([node.clone()]));
    let first = pods[0].uid();

    labels.set(&node, "green");
    let (ds, pods, _) = settled(&f, "web", &[(&key, "blue")]).await;
    assert!(pods.is_empty());
    assert_eq!(status_of(&ds).desired_number_scheduled, 0);

    let before = status_of(&ds).update_revision;
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"template": {"spec": {"nodeSelector": {key.as_str(): "green"}}},
                        "updateStrategy": {"type": "RollingUpdate"}}}),
    )
    .await;
    let (ds, pods, _) = settled(&f, "web", &[(&key, "green")]).await;
    assert_eq!(pods.len(), 1);
    assert_ne!(pods[0].uid(), first);
    assert_ne!(status_of(&ds).update_revision, before);
}

/// "should retry creating failed daemon pods": a pod whose phase turns Failed is deleted by the
/// controller (Warning `FailedDaemonPod`) and replaced.
#[tokio::test]
async fn failed_pod_is_deleted_and_replaced() {
    let _nodes = NODES.read().await;
    let f = setup("ds-failed", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(&PostParams::default(), &daemonset("web", json!({})))
        .await
        .unwrap();
    let (_, pods, _) = settled(&f, "web", &[]).await;
    let mut failed = pods[0].clone();
    let node = node_of(&failed).unwrap();
    failed.metadata.resource_version = None;
    failed.status.as_mut().unwrap().phase = Some("Failed".into());
    f.ns.api::<Pod>()
        .replace_status(&failed.name_any(), &PostParams::default(), &failed)
        .await
        .unwrap();
    let name = failed.name_any();
    let pods_api = f.ns.api::<Pod>();
    wait_for("the failed pod to be deleted", TIMEOUT, || {
        let pods_api = pods_api.clone();
        let name = name.clone();
        async move {
            pods_api
                .get_opt(&name)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await
    .unwrap();
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert!(
        after
            .iter()
            .any(|p| node_of(p).as_deref() == Some(node.as_str()) && p.uid() != failed.uid())
    );
    let events = f.ns.api::<Event>();
    let want = format!(
        "Found failed daemon pod {}/{name} on node {node}, will try to kill it",
        f.ns.name()
    );
    wait_for("the FailedDaemonPod event", TIMEOUT, || {
        let events = events.clone();
        let want = want.clone();
        async move {
            events
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .iter()
                .any(|e| {
                    e.reason.as_deref() == Some("FailedDaemonPod")
                        && e.type_.as_deref() == Some("Warning")
                        && e.message.as_deref() == Some(want.as_str())
                })
                .then_some(())
        }
    })
    .await
    .unwrap();
}

/// "should only inplace image if update daemonset image with inplace update strategy": pods
/// carry the InPlaceUpdateReady gate; an image change updates every pod in place (same UIDs,
/// same names, nothing created or deleted).
#[tokio::test]
async fn image_update_in_place_keeps_every_pod() {
    let _nodes = NODES.read().await;
    let f = setup("ds-inplace", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset("web", in_place(json!(5))),
        )
        .await
        .unwrap();
    let (ds, before, _) = settled(&f, "web", &[]).await;
    for p in &before {
        let gates = p
            .spec
            .as_ref()
            .unwrap()
            .readiness_gates
            .clone()
            .unwrap_or_default();
        assert!(
            gates
                .iter()
                .any(|g| g.condition_type == "InPlaceUpdateReady"),
            "{} without the InPlaceUpdateReady gate",
            p.name_any()
        );
        assert_eq!(condition(p, "InPlaceUpdateReady").as_deref(), Some("True"));
    }
    let (log, watch) = PodLog::start(&f.ns).await;
    patch_ds(&f.ns, "web", image_patch(NEW_IMAGE)).await;
    let (after_ds, after, _) = settled(&f, "web", &[]).await;
    assert_ne!(
        status_of(&ds).update_revision,
        status_of(&after_ds).update_revision
    );
    assert_eq!(uids(&before), uids(&after), "pods were recreated");
    assert!(after.iter().all(|p| image_of(p) == NEW_IMAGE));
    assert!(
        after
            .iter()
            .all(|p| condition(p, "InPlaceUpdateReady").as_deref() == Some("True"))
    );
    assert!(log.created().is_empty() && log.deleted().is_empty());
    watch.abort();
}

/// "Should upgrade inplace if update image and recreate if update others": with
/// InPlaceIfPossible an image change is in place, an env change recreates every pod (the new
/// pods again with the readiness gate).
#[tokio::test]
async fn image_change_is_in_place_env_change_recreates() {
    let _nodes = NODES.read().await;
    let f = setup("ds-recreate", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset("web", in_place(json!(20))),
        )
        .await
        .unwrap();
    let (_, first, _) = settled(&f, "web", &[]).await;
    patch_ds(&f.ns, "web", image_patch(NEW_IMAGE)).await;
    let (_, second, _) = settled(&f, "web", &[]).await;
    assert_eq!(uids(&first), uids(&second));
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "main", "image": NEW_IMAGE, "env": [{"name": "foo", "value": "bar"}]}]}}}}),
    )
    .await;
    let (_, third, _) = settled(&f, "web", &[]).await;
    assert!(
        uids(&third).is_disjoint(&uids(&second)),
        "an env change must recreate every pod"
    );
    for p in &third {
        let c = &p.spec.as_ref().unwrap().containers[0];
        assert_eq!(c.env.as_ref().unwrap()[0].name, "foo");
        assert!(
            p.spec
                .as_ref()
                .unwrap()
                .readiness_gates
                .iter()
                .flatten()
                .any(|g| g.condition_type == "InPlaceUpdateReady")
        );
    }
}

/// "should upgrade one by one on steps if there is pre-delete hook": with maxUnavailable 1 a
/// recreate rollout marks one pod `PreparingDelete` and deletes nothing while the hook label
/// holds it; released, it is deleted, its node gets a new pod, and the next pod is held.
#[tokio::test]
async fn pre_delete_hook_holds_each_pod_until_released() {
    let _nodes = NODES.read().await;
    let f = setup("ds-predelete", &[]).await;
    let mut spec = in_place(json!(1));
    merge(
        &mut spec,
        json!({"lifecycle": {"preDelete": {"labelsHandler": {"my-pre-delete": "true"}}},
               "template": {"metadata": {"labels": {"app": "web", "my-pre-delete": "true"}},
                            "spec": {"containers": [{"name": "main", "image": OLD_IMAGE,
                                     "resources": {"requests": {"cpu": "100m"}}}]}}}),
    );
    f.ns.api::<DaemonSet>()
        .create(&PostParams::default(), &daemonset("web", spec))
        .await
        .unwrap();
    let (_, before, _) = settled(&f, "web", &[]).await;
    let names = |pods: &[Pod]| -> BTreeSet<String> { pods.iter().map(|p| p.name_any()).collect() };
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": OLD_IMAGE,
            "resources": {"requests": {"cpu": "120m"}}, "env": [{"name": "test", "value": "test"}]}]}}}}),
    )
    .await;
    let ds_api = f.ns.api::<DaemonSet>();
    let ds = wait_for("observedGeneration 2", TIMEOUT, || {
        let ds_api = ds_api.clone();
        async move {
            let ds = ds_api.get("web").await.unwrap();
            (status_of(&ds).observed_generation == Some(2)).then_some(ds)
        }
    })
    .await
    .unwrap();
    let new_hash = status_of(&ds).update_revision.unwrap();
    let preparing = |p: &Pod| {
        p.labels()
            .get("lifecycle.apps.kruise.io/state")
            .map(String::as_str)
            == Some("PreparingDelete")
    };
    let held = wait_pods(&f, "web", "one pod PreparingDelete", |pods| {
        pods.iter().filter(|p| preparing(p)).count() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let now = all_pods(&f.ns, "web").await;
    assert_eq!(
        names(&now),
        names(&before),
        "a pod was deleted or created while hooked"
    );
    assert_eq!(now.iter().filter(|p| preparing(p)).count(), 1);
    let held = held.into_iter().find(|p| preparing(p)).unwrap();
    f.ns.api::<Pod>()
        .patch(
            &held.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"my-pre-delete": null}}})),
        )
        .await
        .unwrap();
    let pods_api = f.ns.api::<Pod>();
    let held_name = held.name_any();
    wait_for("the released pod to be gone", TIMEOUT, || {
        let pods_api = pods_api.clone();
        let held_name = held_name.clone();
        async move {
            pods_api
                .get_opt(&held_name)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await
    .unwrap();
    // Its node gets a new-revision pod; once that is available the next old pod is held, so
    // exactly one pod is updated.
    let pods = wait_pods(&f, "web", "one updated pod and the next one held", |pods| {
        pods.iter()
            .filter(|p| hash_of(p) == new_hash && is_ready(p))
            .count()
            == 1
            && pods.iter().filter(|p| preparing(p)).count() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = all_pods(&f.ns, "web").await;
    assert_eq!(names(&later), names(&pods));
    assert_eq!(later.iter().filter(|p| hash_of(p) == new_hash).count(), 1);
}

/// "should successfully surging update daemonset with minReadySeconds": maxSurge 100% with
/// maxUnavailable 0 starts a new pod beside every old one at once; each old pod is deleted only
/// once its node's new pod has been Ready for minReadySeconds (10 s).
#[tokio::test]
async fn full_surge_waits_min_ready_seconds_before_deleting_old_pods() {
    let _nodes = NODES.read().await;
    let f = setup("ds-surge100", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset(
                "web",
                json!({"minReadySeconds": 10, "updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}}}),
            ),
        )
        .await
        .unwrap();
    let (_, before, nodes) = settled(&f, "web", &[]).await;
    let (log, watch) = PodLog::start(&f.ns).await;
    patch_ds(&f.ns, "web", image_patch(NEW_IMAGE)).await;
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert!(uids(&after).is_disjoint(&uids(&before)));
    // At some moment every node ran its old and its new pod (none of them terminating).
    let mut max_doubled = 0;
    log.replay(|pods| {
        let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
        for p in pods
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            *per_node.entry(node_of(p).unwrap_or_default()).or_default() += 1;
        }
        max_doubled = max_doubled.max(per_node.values().filter(|&&n| n >= 2).count());
    });
    assert_eq!(
        max_doubled,
        nodes.len(),
        "new pods were not all surged at once"
    );
    // Old pods go only after the node's new pod has been Ready for 10 s (API timestamps).
    let events = log.events();
    for old in &before {
        let node = node_of(old).unwrap();
        let deleted_at = events
            .iter()
            .filter(|e| e.pod.uid() == old.uid())
            .find_map(|e| e.pod.metadata.deletion_timestamp.clone())
            .expect("old pod deleted")
            .0;
        let new = after
            .iter()
            .find(|p| node_of(p).as_deref() == Some(node.as_str()))
            .unwrap();
        let ready_at = new
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .and_then(|c| c.last_transition_time.clone())
            .unwrap()
            .0;
        let waited = deleted_at.duration_since(ready_at);
        assert!(
            waited.as_secs() >= 10,
            "{} deleted {waited:?} after {} became Ready",
            old.name_any(),
            new.name_any()
        );
    }
    watch.abort();
}

// ---------------------------------------------------------------------------------------------
// The issue's own scenarios

/// maxSurge 1 with maxUnavailable 0: during a recreate rollout every node always has a Ready
/// pod (checked after every pod change a watch saw), and at most one node at a time has a
/// not-yet-ready new pod beside its old one.
#[tokio::test]
async fn surge_one_never_leaves_a_node_without_a_ready_pod() {
    let _nodes = NODES.read().await;
    let f = setup("ds-surge1", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset(
                "web",
                json!({"updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}),
            ),
        )
        .await
        .unwrap();
    let (_, before, nodes) = settled(&f, "web", &[]).await;
    let (log, watch) = PodLog::start(&f.ns).await;
    patch_ds(&f.ns, "web", image_patch(NEW_IMAGE)).await;
    let (ds, after, _) = settled(&f, "web", &[]).await;
    assert!(uids(&after).is_disjoint(&uids(&before)));
    let new_hash = status_of(&ds).update_revision.unwrap();
    let mut violations = Vec::new();
    let mut max_surging = 0;
    log.replay(|pods| {
        let mut ready: BTreeMap<String, usize> = BTreeMap::new();
        let mut surging = 0;
        let mut per_node: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        for p in pods.values() {
            let node = node_of(p).unwrap_or_default();
            if is_ready(p) {
                *ready.entry(node.clone()).or_default() += 1;
            }
            per_node.entry(node).or_default().push(p);
        }
        for list in per_node.values() {
            let old_running = list
                .iter()
                .any(|p| hash_of(p) != new_hash && p.metadata.deletion_timestamp.is_none());
            let new_unready = list.iter().any(|p| hash_of(p) == new_hash && !is_ready(p));
            if old_running && new_unready {
                surging += 1;
            }
        }
        max_surging = max_surging.max(surging);
        for node in &nodes {
            if ready.get(node).copied().unwrap_or(0) == 0 {
                violations.push(node.clone());
            }
        }
    });
    assert!(
        violations.is_empty(),
        "nodes without a ready pod: {violations:?}"
    );
    assert_eq!(
        max_surging, 1,
        "at most (and at some point) one node surging"
    );
    assert_eq!(log.created().len(), nodes.len());
    watch.abort();
}

/// `partition: 50%` keeps half of the nodes (rounded down) on the old revision; lowering the
/// partition to 0 finishes the rollout.
#[tokio::test]
async fn partition_50_percent_keeps_half_old() {
    let _nodes = NODES.read().await;
    let f = setup("ds-partition", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset("web", in_place(json!("100%"))),
        )
        .await
        .unwrap();
    let (ds, _, nodes) = settled(&f, "web", &[]).await;
    let old_hash = status_of(&ds).update_revision.unwrap();
    let n = nodes.len();
    let kept = n / 2;
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": "50%"}},
                        "template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let ds_api = f.ns.api::<DaemonSet>();
    wait_for("updatedNumberScheduled = n - 50%", TIMEOUT, || {
        let ds_api = ds_api.clone();
        async move {
            let s = status_of(&ds_api.get("web").await.unwrap());
            (s.updated_number_scheduled as usize == n - kept && s.number_ready as usize == n)
                .then_some(())
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods = all_pods(&f.ns, "web").await;
    assert_eq!(pods.len(), n);
    assert_eq!(pods.iter().filter(|p| hash_of(p) == old_hash).count(), kept);
    assert_eq!(
        pods.iter().filter(|p| image_of(p) == OLD_IMAGE).count(),
        kept
    );
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
    )
    .await;
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert_eq!(
        uids(&after),
        uids(&pods),
        "the in-place rollout recreated pods"
    );
}

/// `rollingUpdate.selector` limits the rollout to the nodes it selects; dropping it rolls the
/// rest.
#[tokio::test]
async fn rollout_selector_limits_the_nodes_updated() {
    let _nodes = NODES.read().await;
    let f = setup("ds-rollsel", &[]).await;
    let labels = NodeLabels::new(&f.ns);
    let key = labels.key.clone();
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset("web", in_place(json!("100%"))),
        )
        .await
        .unwrap();
    let (_, _, nodes) = settled(&f, "web", &[]).await;
    let chosen: BTreeSet<String> = nodes.iter().take(2).cloned().collect();
    for node in &chosen {
        labels.set(node, "canary");
    }
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"selector": {"matchLabels": {key.as_str(): "canary"}}}},
                        "template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let ds_api = f.ns.api::<DaemonSet>();
    wait_for("two nodes updated", TIMEOUT, || {
        let ds_api = ds_api.clone();
        async move {
            let s = status_of(&ds_api.get("web").await.unwrap());
            (s.updated_number_scheduled == 2).then_some(())
        }
    })
    .await
    .unwrap();
    let pods = wait_pods(&f, "web", "the canary pods ready", |pods| {
        pods.iter()
            .filter(|p| image_of(p) == NEW_IMAGE && is_ready(p))
            .count()
            == 2
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods_now = all_pods(&f.ns, "web").await;
    let updated: BTreeSet<String> = pods_now
        .iter()
        .filter(|p| image_of(p) == NEW_IMAGE)
        .filter_map(node_of)
        .collect();
    assert_eq!(updated, chosen);
    assert_eq!(uids(&pods_now), uids(&pods));
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"selector": null}}}}),
    )
    .await;
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert!(after.iter().all(|p| image_of(p) == NEW_IMAGE));
}

/// `paused` holds the rollout (status still observed); `OnDelete` updates only pods the user
/// deletes.
#[tokio::test]
async fn paused_and_on_delete_hold_the_rollout() {
    let _nodes = NODES.read().await;
    let f = setup("ds-paused", &[]).await;
    let api = f.ns.api::<DaemonSet>();
    api.create(
        &PostParams::default(),
        &daemonset("web", in_place(json!("100%"))),
    )
    .await
    .unwrap();
    let (_, before, n) = settled(&f, "web", &[]).await;
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}},
                        "template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let api2 = api.clone();
    wait_for("the paused generation observed", TIMEOUT, || {
        let api = api2.clone();
        async move {
            let ds = api.get("web").await.unwrap();
            (status_of(&ds).observed_generation == ds.metadata.generation).then_some(())
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ds = api.get("web").await.unwrap();
    assert_eq!(status_of(&ds).updated_number_scheduled, 0);
    assert!(
        all_pods(&f.ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == OLD_IMAGE)
    );
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": false}}}}),
    )
    .await;
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert_eq!(uids(&after), uids(&before));

    // OnDelete: a new template changes nothing until a pod is deleted.
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null},
                        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods = all_pods(&f.ns, "web").await;
    assert_eq!(uids(&pods), uids(&after));
    assert!(pods.iter().all(|p| image_of(p) == NEW_IMAGE));
    let victim = pods[0].clone();
    f.ns.api::<Pod>()
        .delete(&victim.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    let pods = wait_pods(
        &f,
        "web",
        "the deleted pod replaced at the new revision",
        |pods| {
            pods.len() == n.len()
                && pods.iter().all(is_ready)
                && pods.iter().filter(|p| image_of(p) == "nginx:1.27").count() == 1
        },
    )
    .await;
    let replaced = pods.iter().find(|p| image_of(p) == "nginx:1.27").unwrap();
    assert_eq!(node_of(replaced), node_of(&victim));
}

/// The manager killed twice in the middle of a recreate rollout: the rollout finishes with
/// exactly one pod per node, each pod replaced exactly once, never two live pods on a node; a
/// restart of the settled manager then creates and deletes nothing.
#[tokio::test]
async fn manager_killed_mid_rollout_converges_with_one_pod_per_node() {
    let _nodes = NODES.read().await;
    let mut f = setup("ds-chaos", &[]).await;
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset(
                "web",
                json!({"updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 2}}}),
            ),
        )
        .await
        .unwrap();
    let (_, _, nodes) = settled(&f, "web", &[]).await;
    let (log, watch) = PodLog::start(&f.ns).await;
    patch_ds(&f.ns, "web", image_patch(NEW_IMAGE)).await;
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        f.manager.kill();
        tokio::time::sleep(Duration::from_millis(500)).await;
        f.manager.restart(TIMEOUT).await;
    }
    let (_, after, _) = settled(&f, "web", &[]).await;
    assert!(after.iter().all(|p| image_of(p) == NEW_IMAGE));
    assert_eq!(
        log.created().len(),
        nodes.len(),
        "each pod replaced exactly once"
    );
    let mut doubled = Vec::new();
    log.replay(|pods| {
        let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
        for p in pods
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            if let Some(node) = node_of(p) {
                *per_node.entry(node).or_default() += 1;
            }
        }
        doubled.extend(
            per_node
                .into_iter()
                .filter(|(_, n)| *n > 1)
                .map(|(node, _)| node),
        );
    });
    assert!(doubled.is_empty(), "two live pods on {doubled:?}");
    watch.abort();

    // Restarting the settled manager writes no pod.
    let (log, watch) = PodLog::start(&f.ns).await;
    f.manager.restart(TIMEOUT).await;
    let manager = &f.manager;
    wait_for(
        "a daemonset reconcile after the restart",
        TIMEOUT,
        || async move {
            let text = manager.process.metrics_text().await?;
            text.lines()
                .any(|l| {
                    l.starts_with("controller_runtime_reconcile_total{")
                        && l.contains("controller=\"daemonset\"")
                        && l.contains("result=\"success\"")
                        && !l.ends_with(" 0")
                })
                .then_some(())
        },
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(log.created().is_empty(), "restart created pods");
    assert!(log.deleted().is_empty(), "restart deleted pods");
    settled(&f, "web", &[]).await;
    watch.abort();
}

/// Nodes come and go: a node added later gets a pod, a node tainted NoExecute (not tolerated)
/// loses it, a node relabelled out of the template's affinity loses it — each without
/// touching the other nodes' pods.
#[tokio::test]
async fn nodes_added_tainted_and_relabelled() {
    let _nodes = NODES.write().await;
    let f = setup("ds-nodes", &[]).await;
    remove_stale_test_nodes(&f.env).await;
    let labels = NodeLabels::new(&f.ns);
    let excluded = labels.key.clone();
    let mut ds = daemonset(
        "web",
        json!({"template": {"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": excluded.as_str(), "operator": "DoesNotExist"}]}]}}}}}}),
    );
    // Only the daemon tolerations, so that a NoExecute taint counts.
    ds.spec.template.spec.as_mut().unwrap().tolerations = None;
    f.ns.api::<DaemonSet>()
        .create(&PostParams::default(), &ds)
        .await
        .unwrap();
    let untainted = |env: &TestEnv| {
        let nodes: Api<Node> = Api::all(env.client.clone());
        async move {
            nodes
                .list(&ListParams::default().labels("type=kwok"))
                .await
                .unwrap()
                .items
                .into_iter()
                .filter(|n| {
                    n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_none_or(|t| t.is_empty())
                })
                .map(|n| n.name_any())
                .collect::<BTreeSet<String>>()
        }
    };
    let (_, first, nodes) = settled(&f, "web", &[]).await;
    assert_eq!(
        nodes,
        untainted(&f.env).await,
        "a leftover tainted kwok node"
    );

    // A node added later gets a pod.
    let extra = format!("kwok-{}", f.ns.name());
    let mut node = kwok_node_named(&extra, "zone-a");
    node.metadata
        .labels
        .get_or_insert_default()
        .insert(TEST_NODE_LABEL.into(), f.ns.name().into());
    let _cleanup = TestNodes(vec![extra.clone()]);
    let node_api: Api<Node> = Api::all(f.env.client.clone());
    node_api
        .create(&PostParams::default(), &node)
        .await
        .unwrap();
    let (_, with_extra, _) = settled(&f, "web", &[]).await;
    assert!(
        with_extra
            .iter()
            .any(|p| node_of(p).as_deref() == Some(extra.as_str()))
    );
    assert!(uids(&first).is_subset(&uids(&with_extra)));

    // Tainted NoExecute: its pod goes and is not replaced.
    let out = kubectl(
        &[
            "taint",
            "node",
            &extra,
            "e2e.kruise-rs.io/evict=true:NoExecute",
        ],
        None,
    )
    .unwrap();
    assert!(out.success, "{}", out.stderr);
    let pods = wait_pods(&f, "web", "no pod on the tainted node", |pods| {
        !pods
            .iter()
            .any(|p| node_of(p).as_deref() == Some(extra.as_str()))
    })
    .await;
    assert_eq!(uids(&pods), uids(&first));

    // Relabelled out of the affinity: its pod goes.
    let leaving = nodes.iter().next().unwrap().clone();
    labels.set(&leaving, "true");
    let pods = wait_pods(&f, "web", "no pod on the relabelled node", |pods| {
        pods.len() == first.len() - 1
            && !pods
                .iter()
                .any(|p| node_of(p).as_deref() == Some(leaving.as_str()))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = all_pods(&f.ns, "web").await;
    assert_eq!(
        uids(&later),
        uids(&pods),
        "pods changed after the node left"
    );
    let ds = f.ns.api::<DaemonSet>().get("web").await.unwrap();
    assert_eq!(
        status_of(&ds).desired_number_scheduled as usize,
        first.len() - 1
    );
}

/// `scaleStrategy.partitionedScaling` with a partition: pods are created only while the
/// updated nodes stay within `desired - partition` (none at all while `partition >= desired`;
/// a node added later only lifts the limit by one); without it partition never keeps a node
/// empty.
#[tokio::test]
async fn partitioned_scaling_leaves_a_new_node_empty() {
    let _nodes = NODES.write().await;
    let f = setup("ds-pscale", &[]).await;
    remove_stale_test_nodes(&f.env).await;
    let pool_key = format!("e2e.kruise-rs.io/pool-{}", f.ns.name());
    let names: Vec<String> = (0..3)
        .map(|i| format!("kwok-{}-{i}", f.ns.name()))
        .collect();
    let _cleanup = TestNodes(names.clone());
    let node_api: Api<Node> = Api::all(f.env.client.clone());
    let add = |name: &str| {
        let mut node = kwok_node_named(name, "zone-b");
        let l = node.metadata.labels.get_or_insert_default();
        l.insert(TEST_NODE_LABEL.into(), f.ns.name().into());
        l.insert(pool_key.clone(), "true".into());
        node
    };
    for name in &names[..2] {
        node_api
            .create(&PostParams::default(), &add(name))
            .await
            .unwrap();
    }
    f.ns.api::<DaemonSet>()
        .create(
            &PostParams::default(),
            &daemonset(
                "web",
                json!({"template": {"spec": {"nodeSelector": {pool_key.as_str(): "true"}}},
                       "scaleStrategy": {"partitionedScaling": true},
                       "updateStrategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"partition": 2, "maxUnavailable": 1}}}),
            ),
        )
        .await
        .unwrap();
    // desired 2, partition 2: no pod may be created at all.
    let ds_api = f.ns.api::<DaemonSet>();
    wait_for("desired 2 observed", TIMEOUT, || {
        let ds_api = ds_api.clone();
        async move {
            let s = status_of(&ds_api.get("web").await.unwrap());
            (s.desired_number_scheduled == 2 && s.observed_generation == Some(1)).then_some(())
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(all_pods(&f.ns, "web").await.is_empty());
    // partition 1: one node gets its pod; with a third node, desired 3 - partition 1 = 2.
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}}),
    )
    .await;
    wait_pods(&f, "web", "one pod", |pods| {
        pods.len() == 1 && pods.iter().all(is_ready)
    })
    .await;
    node_api
        .create(&PostParams::default(), &add(&names[2]))
        .await
        .unwrap();
    wait_for("desired 3", TIMEOUT, || {
        let ds_api = ds_api.clone();
        async move {
            let s = status_of(&ds_api.get("web").await.unwrap());
            (s.desired_number_scheduled == 3).then_some(())
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        all_pods(&f.ns, "web").await.len(),
        2,
        "desired 3 - partition 1 = 2 pods"
    );
    // Without partitionedScaling every node gets its pod.
    patch_ds(
        &f.ns,
        "web",
        json!({"spec": {"scaleStrategy": {"partitionedScaling": false}}}),
    )
    .await;
    settled(&f, "web", &[(&pool_key, "true")]).await;
}
