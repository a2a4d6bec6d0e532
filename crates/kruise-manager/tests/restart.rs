//! Restarting the manager must never create or delete pods.
//!
//! A restarted manager that reconciles before its pod cache is filled sees a CloneSet with no
//! pods and creates `replicas` new ones (once, with a 1,000-pod CloneSet, 1,000 duplicates).
//! These tests kill `kruise-manager` with SIGKILL, as a crash or an OOM kill would, start a new
//! one and check, from a pod watch that runs the whole time ([`Recorder`]), that no pod was
//! created or deleted that should not have been:
//!
//! - [`restart_three_times_keeps_the_same_1000_pods`]: three restarts of a settled 1,000-pod
//!   CloneSet (leader election on, as deployed);
//! - [`chaos_kill_every_5s_during_inplace_rollout`]: a kill every 5 s during an in-place rollout,
//!   which must still converge without recreating pods and within `maxUnavailable`;
//! - [`surplus_pods_are_scaled_in_in_openkruise_order`]: 300 surplus pods added while the manager
//!   is down are exactly the ones removed (old revision first, then unscheduled ones).
//!
//! Each test runs its managers restricted to its own namespace (`--namespace`, and the leader
//! Lease in that namespace too), so they never touch other tests' objects. The three tests are
//! heavy (1,000 pods) and hold a process-wide lock so only one runs at a time; each deletes its
//! namespace at the end and waits for it to go. Needs the testbed (`hack/testbed/testbed.sh up`).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::manager::{ManagerProcess, ManagerSpec};
use kruise_e2e::{TestEnv, TestNamespace, ensure_kwok_nodes, install_crds, wait_for};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

/// How long a manager gets to become ready, to resync, or to converge after a restart.
const TIMEOUT: Duration = Duration::from_secs(120);
/// How long the rest of an in-place rollout of 1,000 pods may take after the last kill (it is
/// limited by maxUnavailable and by kwok's readiness stages; on a loaded two-core runner it takes
/// minutes, and what the test checks is that no pod is created or deleted, not the speed).
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(420);
/// How long the initial scale-up (up to 1,000 pods, before anything is measured) may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the reconcile counter must stay unchanged for a resync to count as finished.
const QUIET: Duration = Duration::from_secs(5);
/// The heavy tests run one at a time (the testbed has 2 cores).
static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// Label of the recorder's barrier pods (see [`Recorder::catch_up`]); they are not counted.
const BARRIER_LABEL: &str = "kruise-rs/e2e-barrier";
/// A node selector no node satisfies: pods with it stay Pending, unscheduled.
const NO_SUCH_NODE: &str = "kruise-rs/e2e-no-such-node";
/// The CloneSet of every test.
const NAME: &str = "web";

// ---- the manager process ----

/// One `kruise-manager` process of a test, run as users run it (webhooks on, default flags)
/// and isolated to the test's namespace ([`ManagerSpec`]).
struct Manager {
    process: ManagerProcess,
}

impl Manager {
    /// SIGKILL, as a crash would; waits for the process to be gone.
    fn kill(&mut self) {
        self.process.kill();
    }

    /// Waits until `/readyz` answers 200 (caches synced, webhooks configured; a standby that
    /// waits for the Lease is ready too).
    async fn wait_ready(&self) {
        self.process
            .wait_ready(TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    async fn try_reconciles(&self) -> Option<f64> {
        Some(kruise_e2e::manager::reconciles(
            &self.process.metrics_text().await?,
            "cloneset",
        ))
    }

    /// CloneSet reconciles this process has finished (0 if `/metrics` does not answer).
    async fn reconciles(&self) -> f64 {
        self.try_reconciles().await.unwrap_or(0.0)
    }

    /// Waits for a full resync: at least one CloneSet reconcile (each test namespace has exactly
    /// one CloneSet), then no further reconcile for [`QUIET`]. Returns the reconcile count.
    async fn wait_resync(&self) -> f64 {
        let deadline = Instant::now() + TIMEOUT;
        let mut last: Option<(f64, Instant)> = None;
        loop {
            match self.try_reconciles().await {
                Some(v) if v >= 1.0 => match last {
                    Some((prev, since)) if prev == v => {
                        if since.elapsed() >= QUIET {
                            return v;
                        }
                    }
                    _ => last = Some((v, Instant::now())),
                },
                _ => last = None,
            }
            if Instant::now() >= deadline {
                panic!(
                    "no quiet resync within {TIMEOUT:?} (cloneset reconciles {:?}, must be >= 1 \
                     and unchanged for {QUIET:?}); manager log: {}",
                    last.map(|(v, _)| v),
                    self.process.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Every manager a test started (the current one last), so that every log is reported on failure.
/// The processes drop (are killed) before the spec (which removes the webhook configurations).
struct Managers {
    all: Vec<Manager>,
    spec: ManagerSpec,
}

impl Managers {
    fn new(ns: &TestNamespace, extra: &[&str]) -> Self {
        Managers {
            all: Vec::new(),
            spec: ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(extra),
        }
    }

    /// Starts a new manager (the previous one must have been killed).
    fn start(&mut self) -> &Manager {
        let process = self.spec.start();
        self.all.push(Manager { process });
        self.current()
    }

    fn current(&self) -> &Manager {
        self.all.last().expect("a manager was started")
    }

    /// SIGKILLs the current manager.
    fn kill(&mut self) {
        self.all.last_mut().expect("a manager was started").kill();
    }
}

// ---- the pod recorder ----

#[derive(Debug, Default)]
struct RecState {
    /// Set at the first InitDone; events before are the initial list.
    started: bool,
    /// UIDs of the initial list.
    initial: BTreeSet<String>,
    /// UIDs in the initial list already being deleted: their deletion is not counted.
    deleting_at_start: BTreeSet<String>,
    /// Every UID ever seen.
    seen: BTreeSet<String>,
    /// Pod names by UID (for messages).
    names: BTreeMap<String, String>,
    /// Live pods (no deletionTimestamp): UID → Ready.
    live: BTreeMap<String, bool>,
    /// Pods created after the initial list.
    created: BTreeSet<String>,
    /// Pods deleted (deletionTimestamp set, or gone) after the initial list.
    deleted: BTreeSet<String>,
    /// Most live pods whose Ready condition was not True at the same time.
    max_not_ready: usize,
    /// Most live pods at the same time.
    max_live: usize,
    /// Barrier pods seen (by name).
    barriers: BTreeSet<String>,
    /// Re-lists after the first (each one follows a watch error).
    relists: usize,
    watch_errors: Vec<String>,
}

fn is_barrier(p: &Pod) -> bool {
    p.labels().contains_key(BARRIER_LABEL)
}

impl RecState {
    fn first_sight(&mut self, uid: &str, name: String) {
        if self.seen.insert(uid.to_owned()) && self.started {
            self.created.insert(uid.to_owned());
        }
        self.names.insert(uid.to_owned(), name);
    }

    fn gone(&mut self, uid: &str) {
        self.live.remove(uid);
        if !self.deleting_at_start.contains(uid) {
            self.deleted.insert(uid.to_owned());
        }
    }

    /// A pod as the watch (outside of a list) reports it.
    fn apply(&mut self, p: &Pod) {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        self.first_sight(&uid, p.name_any());
        if p.metadata.deletion_timestamp.is_some() {
            self.gone(&uid);
        } else {
            self.live.insert(uid, ready(p));
        }
    }

    fn delete(&mut self, p: &Pod) {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        self.first_sight(&uid, p.name_any());
        self.gone(&uid);
    }

    /// A complete list (`pods` by UID): the first one is the baseline; a later one (a re-list
    /// after a watch error) counts live pods missing from it as deleted and unseen ones as
    /// created.
    fn listed(&mut self, pods: BTreeMap<String, Pod>) {
        if !self.started {
            for (uid, p) in &pods {
                self.initial.insert(uid.clone());
                self.seen.insert(uid.clone());
                self.names.insert(uid.clone(), p.name_any());
                if p.metadata.deletion_timestamp.is_some() {
                    self.deleting_at_start.insert(uid.clone());
                } else {
                    self.live.insert(uid.clone(), ready(p));
                }
            }
            self.started = true;
            return;
        }
        self.relists += 1;
        let vanished: Vec<String> = self
            .live
            .keys()
            .filter(|uid| !pods.contains_key(*uid))
            .cloned()
            .collect();
        for uid in vanished {
            self.gone(&uid);
        }
        for p in pods.values() {
            self.apply(p);
        }
    }

    fn sample(&mut self) {
        let not_ready = self.live.values().filter(|r| !**r).count();
        self.max_not_ready = self.max_not_ready.max(not_ready);
        self.max_live = self.max_live.max(self.live.len());
    }

    fn names_of(&self, uids: &BTreeSet<String>) -> Vec<&str> {
        uids.iter()
            .take(10)
            .map(|u| self.names.get(u).map_or("?", String::as_str))
            .collect()
    }
}

/// Records, from a watch on all pods of a namespace started before the action under test,
/// every pod created or deleted (by UID) and the most pods not Ready at once.
struct Recorder {
    state: Arc<Mutex<RecState>>,
    task: tokio::task::JoinHandle<()>,
    api: Api<Pod>,
    barriers: AtomicUsize,
}

impl Recorder {
    /// Starts the watch and returns once its initial list is complete (the watch is then
    /// established: nothing that happens afterwards is missed).
    async fn start(ns: &TestNamespace) -> Recorder {
        let api = ns.api::<Pod>();
        let state = Arc::new(Mutex::new(RecState::default()));
        let (init_tx, init_rx) = tokio::sync::oneshot::channel::<()>();
        let task = {
            let state = state.clone();
            let api = api.clone();
            tokio::spawn(async move {
                let mut init_tx = Some(init_tx);
                let mut listing: Option<BTreeMap<String, Pod>> = None;
                let mut stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while let Some(ev) = stream.next().await {
                    let mut s = state.lock().unwrap();
                    match ev {
                        Ok(watcher::Event::Init) => listing = Some(BTreeMap::new()),
                        Ok(watcher::Event::InitApply(p)) => {
                            if is_barrier(&p) {
                                s.barriers.insert(p.name_any());
                            } else if let Some(l) = listing.as_mut() {
                                l.insert(p.metadata.uid.clone().unwrap_or_default(), p);
                            }
                        }
                        Ok(watcher::Event::InitDone) => {
                            s.listed(listing.take().unwrap_or_default());
                            s.sample();
                            if let Some(tx) = init_tx.take() {
                                let _ = tx.send(());
                            }
                        }
                        Ok(watcher::Event::Apply(p)) => {
                            if is_barrier(&p) {
                                s.barriers.insert(p.name_any());
                            } else {
                                s.apply(&p);
                                s.sample();
                            }
                        }
                        Ok(watcher::Event::Delete(p)) => {
                            if !is_barrier(&p) {
                                s.delete(&p);
                                s.sample();
                            }
                        }
                        Err(e) => s.watch_errors.push(e.to_string()),
                    }
                }
            })
        };
        if tokio::time::timeout(Duration::from_secs(60), init_rx)
            .await
            .is_err()
        {
            panic!(
                "pod watch: no initial list within 60s; watch errors: {:?}",
                state.lock().unwrap().watch_errors
            );
        }
        Recorder {
            state,
            task,
            api,
            barriers: AtomicUsize::new(0),
        }
    }

    /// Waits until the watch has delivered everything that happened before this call: creates
    /// a (never scheduled, uncounted) barrier pod and waits for the watch to report it, since a
    /// watch delivers a namespace's pod events in order.
    async fn catch_up(&self) {
        let name = format!(
            "e2e-barrier-{}",
            self.barriers.fetch_add(1, Ordering::SeqCst)
        );
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {BARRIER_LABEL: "true"}},
            "spec": {
                "containers": [{"name": "main", "image": "nginx:1.25"}],
                "nodeSelector": {NO_SUCH_NODE: "true"},
                "terminationGracePeriodSeconds": 0,
            },
        }))
        .unwrap();
        self.api
            .create(&PostParams::default(), &pod)
            .await
            .expect("barrier pod");
        wait_for(
            &format!("the pod watch to see {name}"),
            Duration::from_secs(60),
            || async {
                self.state
                    .lock()
                    .unwrap()
                    .barriers
                    .contains(&name)
                    .then_some(())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}; recorder: {}", self.summary()));
        let _ = self
            .api
            .delete(&name, &DeleteParams::default().grace_period(0))
            .await;
    }

    fn initial(&self) -> BTreeSet<String> {
        self.state.lock().unwrap().initial.clone()
    }

    fn created(&self) -> BTreeSet<String> {
        self.state.lock().unwrap().created.clone()
    }

    fn deleted(&self) -> BTreeSet<String> {
        self.state.lock().unwrap().deleted.clone()
    }

    fn live(&self) -> BTreeSet<String> {
        self.state.lock().unwrap().live.keys().cloned().collect()
    }

    fn max_not_ready(&self) -> usize {
        self.state.lock().unwrap().max_not_ready
    }

    /// Counts, a few names of created and deleted pods, and watch errors.
    fn summary(&self) -> String {
        let s = self.state.lock().unwrap();
        format!(
            "initial={} live={} created={} {:?} deleted={} {:?} max_live={} max_not_ready={} \
             relists={} watch_errors={:?}",
            s.initial.len(),
            s.live.len(),
            s.created.len(),
            s.names_of(&s.created),
            s.deleted.len(),
            s.names_of(&s.deleted),
            s.max_live,
            s.max_not_ready,
            s.relists,
            s.watch_errors,
        )
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ---- helpers ----

/// Makes sure of 10 Ready kwok nodes and the CRDs, and creates the test's namespace. (Tests take
/// [`LOCK`] before calling it, in a binding of their own declared first, so it is released last.)
async fn setup(prefix: &str) -> (TestEnv, TestNamespace) {
    let env = TestEnv::connect().await.expect("testbed");
    ensure_kwok_nodes(&env, 10).await.expect("10 kwok nodes");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace(prefix).await.expect("namespace");
    (env, ns)
}

/// Deletes the namespace and waits (up to 5 minutes, without failing the test) until it is
/// gone, so the next heavy test does not share the testbed with 1,000 terminating pods.
async fn cleanup(env: &TestEnv, ns: TestNamespace) {
    let name = ns.name().to_owned();
    ns.delete().await.expect("delete namespace");
    let api: Api<Namespace> = Api::all(env.client.clone());
    let gone = wait_for(
        &format!("namespace {name} gone"),
        Duration::from_secs(300),
        || async { matches!(api.get_opt(&name).await, Ok(None)).then_some(()) },
    )
    .await;
    if let Err(e) = gone {
        eprintln!("warning: {e}");
    }
}

fn cloneset(name: &str, replicas: usize, extra_spec: Value) -> CloneSet {
    let mut spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        },
    });
    merge(&mut spec, extra_spec);
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
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

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn image(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or("")
}

/// The image the (kwok) runtime reports for the first container.
fn status_image(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map_or("", |c| c.image.as_str())
}

fn uid(p: &Pod) -> String {
    p.metadata.uid.clone().unwrap_or_default()
}

fn uids(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter().map(uid).collect()
}

fn status_of(cs: &CloneSet) -> kruise_api::apps::v1alpha1::CloneSetStatus {
    cs.status.clone().unwrap_or_default()
}

/// Pods of `app` without a deletionTimestamp.
async fn live_pods(pods: &Api<Pod>, app: &str) -> Result<Vec<Pod>, String> {
    Ok(pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .map_err(|e| format!("listing pods: {e}"))?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Polls `probe` every `every` until it returns `Ok`; panics after `timeout` with the last
/// `Err` (a description of what was seen).
async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, every: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let start = Instant::now();
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(last) if start.elapsed() >= timeout => {
                panic!("timed out after {timeout:?} waiting for {what}; last observed: {last}")
            }
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}

/// Waits until the CloneSet reports `n` replicas, all ready and updated-ready (for its current
/// generation), and exactly `n` live pods exist, all Ready. Returns the pods.
async fn wait_all_ready(
    cs_api: &Api<CloneSet>,
    pods: &Api<Pod>,
    n: usize,
    timeout: Duration,
) -> Vec<Pod> {
    let n32 = i32::try_from(n).unwrap();
    wait_until(
        &format!("{NAME}: {n} ready and updated pods"),
        timeout,
        Duration::from_secs(1),
        || async {
            let cs = cs_api.get(NAME).await.map_err(|e| e.to_string())?;
            let s = status_of(&cs);
            if cs.metadata.generation != s.observed_generation
                || s.replicas != n32
                || s.ready_replicas != n32
                || s.updated_ready_replicas != n32
            {
                return Err(format!(
                    "generation {:?} observed {:?} replicas {} ready {} updatedReady {}",
                    cs.metadata.generation,
                    s.observed_generation,
                    s.replicas,
                    s.ready_replicas,
                    s.updated_ready_replicas
                ));
            }
            let live = live_pods(pods, NAME).await?;
            let ready_n = live.iter().filter(|p| ready(p)).count();
            if live.len() == n && ready_n == n {
                Ok(live)
            } else {
                Err(format!("{} live pods, {ready_n} Ready", live.len()))
            }
        },
    )
    .await
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a count: {e}")),
        Err(_) => default,
    }
}

fn image_patch(image: &str) -> Patch<Value> {
    Patch::Merge(json!({"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": image}]}}}}))
}

// ---- the tests ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_three_times_keeps_the_same_1000_pods() {
    const PODS: usize = 1000;
    let _lock = LOCK.lock().await;
    let (env, ns) = setup("restart-1000").await;
    let cs_api = ns.api::<CloneSet>();
    let pods = ns.api::<Pod>();
    // Default flags (leader election on), only isolated to this test's namespace.
    let mut managers = Managers::new(&ns, &[]);
    // Ready first: what the test creates must go through the webhooks.
    managers.start().wait_ready().await;
    cs_api
        .create(&PostParams::default(), &cloneset(NAME, PODS, json!({})))
        .await
        .unwrap();
    let t = Instant::now();
    let before = wait_all_ready(&cs_api, &pods, PODS, SETUP_TIMEOUT).await;
    println!("{PODS} pods ready in {:.1}s", t.elapsed().as_secs_f64());
    let recorded = uids(&before);
    let rec = Recorder::start(&ns).await;
    assert_eq!(
        rec.initial(),
        recorded,
        "the recorder starts from the same pods"
    );

    for round in 1..=3 {
        managers.kill();
        let t = Instant::now();
        let m = managers.start();
        m.wait_ready().await;
        let ready_after = t.elapsed();
        let reconciles = m.wait_resync().await;
        println!(
            "restart {round}: ready after {:.1}s, resynced (quiet {QUIET:?}) after {:.1}s, \
             {reconciles} CloneSet reconciles; recorder: {}",
            ready_after.as_secs_f64(),
            t.elapsed().as_secs_f64(),
            rec.summary()
        );
    }

    rec.catch_up().await;
    let after = live_pods(&pods, NAME).await.unwrap();
    let live = uids(&after);
    let cs = cs_api.get(NAME).await.unwrap();
    let s = status_of(&cs);
    println!(
        "after 3 restarts: created={} deleted={} live={} (same as before: {}) \
         status.replicas={} readyReplicas={} last manager reconciles={}",
        rec.created().len(),
        rec.deleted().len(),
        live.len(),
        live == recorded,
        s.replicas,
        s.ready_replicas,
        managers.current().reconciles().await
    );
    assert!(
        rec.created().is_empty(),
        "restarts created pods: {}",
        rec.summary()
    );
    assert!(
        rec.deleted().is_empty(),
        "restarts deleted pods: {}",
        rec.summary()
    );
    assert_eq!(rec.live(), recorded, "the watch sees the same pods");
    assert_eq!(live, recorded, "the same {PODS} pods (by UID) are live");
    assert_eq!(s.replicas, 1000, "status.replicas");
    assert_eq!(s.ready_replicas, 1000, "status.readyReplicas");

    drop(rec);
    drop(managers);
    cleanup(&env, ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kill_every_5s_during_inplace_rollout() {
    let n = env_usize("KRUISE_CHAOS_PODS", 1000);
    let kills = env_usize("KRUISE_CHAOS_KILLS", 10);
    // OpenKruise rounds a maxUnavailable percentage down, with a minimum of 1.
    let max_unavailable = (n * 20 / 100).max(1);
    let _lock = LOCK.lock().await;
    let (env, ns) = setup("restart-chaos").await;
    let cs_api = ns.api::<CloneSet>();
    let pods = ns.api::<Pod>();
    // A restart every 5 s could never re-acquire a Lease held by the killed process.
    let mut managers = Managers::new(&ns, &["--enable-leader-election=false"]);
    // Ready first: what the test creates must go through the webhooks.
    managers.start().wait_ready().await;
    cs_api
        .create(
            &PostParams::default(),
            &cloneset(
                NAME,
                n,
                json!({"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "20%"}}),
            ),
        )
        .await
        .unwrap();
    let before = wait_all_ready(&cs_api, &pods, n, SETUP_TIMEOUT).await;
    let recorded = uids(&before);
    let rec = Recorder::start(&ns).await;
    assert_eq!(
        rec.initial(),
        recorded,
        "the recorder starts from the same pods"
    );

    cs_api
        .patch(NAME, &PatchParams::default(), &image_patch("nginx:1.26"))
        .await
        .unwrap();
    let rollout_start = Instant::now();
    let mut kills_mid_rollout = 0;
    for k in 1..=kills {
        tokio::time::sleep(Duration::from_secs(5)).await;
        managers.kill();
        managers.start();
        let updated = cs_api
            .get(NAME)
            .await
            .map(|cs| status_of(&cs).updated_ready_replicas)
            .unwrap_or(-1);
        if updated < i32::try_from(n).unwrap() {
            kills_mid_rollout += 1;
        }
        println!(
            "kill {k}/{kills} at {:.1}s: status.updatedReadyReplicas={updated}; recorder: {}",
            rollout_start.elapsed().as_secs_f64(),
            rec.summary()
        );
    }
    let last_start = Instant::now();

    let n32 = i32::try_from(n).unwrap();
    wait_until(
        &format!("all {n} pods on nginx:1.26, Ready, and the CloneSet updated"),
        ROLLOUT_TIMEOUT,
        Duration::from_secs(1),
        || async {
            let cs = cs_api.get(NAME).await.map_err(|e| e.to_string())?;
            let s = status_of(&cs);
            let live = live_pods(&pods, NAME).await?;
            let done = live
                .iter()
                .filter(|p| image(p) == "nginx:1.26" && status_image(p) == "nginx:1.26" && ready(p))
                .count();
            if cs.metadata.generation == s.observed_generation
                && s.replicas == n32
                && s.updated_ready_replicas == n32
                && live.len() == n
                && done == n
            {
                Ok(())
            } else {
                Err(format!(
                    "generation {:?} observed {:?} replicas {} updatedReady {}; {} live pods, \
                     {done} updated and Ready",
                    cs.metadata.generation,
                    s.observed_generation,
                    s.replicas,
                    s.updated_ready_replicas,
                    live.len()
                ))
            }
        },
    )
    .await;
    let converged = last_start.elapsed();
    let reconciles = managers.current().wait_resync().await;
    rec.catch_up().await;
    let live = uids(&live_pods(&pods, NAME).await.unwrap());
    println!(
        "chaos: {n} pods, {kills} kills; converged {:.1}s after the last start ({:.1}s after \
         the image change); max not-Ready pods {} (limit {max_unavailable}); created={} \
         deleted={} same pods: {}; last manager reconciles={reconciles}",
        converged.as_secs_f64(),
        rollout_start.elapsed().as_secs_f64(),
        rec.max_not_ready(),
        rec.created().len(),
        rec.deleted().len(),
        live == recorded
    );
    assert!(
        rec.created().is_empty(),
        "restarts created pods: {}",
        rec.summary()
    );
    assert!(
        rec.deleted().is_empty(),
        "restarts deleted pods: {}",
        rec.summary()
    );
    assert_eq!(live, recorded, "the same {n} pods (by UID) are live");
    assert!(
        rec.max_not_ready() <= max_unavailable,
        "more than maxUnavailable=20% ({max_unavailable}) pods not Ready at once: {}",
        rec.summary()
    );
    println!("{kills_mid_rollout} of {kills} kills landed before the rollout was complete");
    assert!(
        kills_mid_rollout >= kills.min(3),
        "only {kills_mid_rollout} kills landed while the rollout was in progress: the test did \
         not exercise restarts mid-rollout"
    );
    assert!(
        rec.max_not_ready() >= 1,
        "the in-place rollout was observed (pods go not-Ready while updating): {}",
        rec.summary()
    );

    drop(rec);
    drop(managers);
    cleanup(&env, ns).await;
}

/// 5 random lowercase letters not in `taken` (which it is added to).
fn instance_id(taken: &mut BTreeSet<String>) -> String {
    loop {
        let id: String = (0..5)
            .map(|_| char::from(b'a' + rand::random_range(0..26u8)))
            .collect();
        if taken.insert(id.clone()) {
            return id;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn surplus_pods_are_scaled_in_in_openkruise_order() {
    const PODS: usize = 1000;
    const OLD: usize = 150;
    const PENDING: usize = 150;
    let _lock = LOCK.lock().await;
    let (env, ns) = setup("restart-surplus").await;
    let cs_api = ns.api::<CloneSet>();
    let pods = ns.api::<Pod>();
    let mut managers = Managers::new(&ns, &[]);
    // Ready first: what the test creates must go through the webhooks.
    managers.start().wait_ready().await;
    cs_api
        .create(&PostParams::default(), &cloneset(NAME, PODS, json!({})))
        .await
        .unwrap();
    let before = wait_all_ready(&cs_api, &pods, PODS, SETUP_TIMEOUT).await;
    let recorded = uids(&before);
    let cs = cs_api.get(NAME).await.unwrap();
    let update_revision = status_of(&cs)
        .update_revision
        .expect("status.updateRevision");
    let cs_uid = cs.metadata.uid.clone().expect("CloneSet uid");
    managers.kill();
    // With the manager down its pod webhook (failurePolicy Fail, as OpenKruise's) rejects pod
    // creation in this namespace; a user who makes pods now has to take the configuration away
    // first, and so does this test. The restarted manager puts it back.
    let out = kruise_e2e::kubectl(
        &[
            "delete",
            "mutatingwebhookconfiguration",
            &format!("kruise-mutating-webhook-configuration-{}", ns.name()),
            "--ignore-not-found",
        ],
        None,
    )
    .expect("kubectl");
    assert!(out.success, "{}", out.stderr);

    // 300 surplus pods owned by the CloneSet, made while no manager runs.
    let mut taken: BTreeSet<String> = before
        .iter()
        .filter_map(|p| {
            p.labels()
                .get("apps.kruise.io/cloneset-instance-id")
                .cloned()
        })
        .collect();
    let old_revision = format!("{NAME}-oldrev0");
    let extra = |id: &str, revision: &str, unschedulable: bool| -> Pod {
        let hash = revision.rsplit('-').next().unwrap_or(revision);
        let mut spec = json!({"containers": [{"name": "main", "image": "nginx:1.25"}]});
        if unschedulable {
            spec["nodeSelector"] = json!({NO_SUCH_NODE: "true"});
        }
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("{NAME}-{id}"),
                "labels": {
                    "app": NAME,
                    "apps.kruise.io/cloneset-instance-id": id,
                    "controller-revision-hash": revision,
                    "pod-template-hash": hash,
                },
                "ownerReferences": [{
                    "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                    "name": NAME, "uid": cs_uid,
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        }))
        .unwrap()
    };
    let mut extras: Vec<(Pod, bool)> = Vec::new();
    for _ in 0..OLD {
        extras.push((extra(&instance_id(&mut taken), &old_revision, false), true));
    }
    for _ in 0..PENDING {
        extras.push((
            extra(&instance_id(&mut taken), &update_revision, true),
            false,
        ));
    }
    let created: Vec<(Result<Pod, kube::Error>, bool)> = futures::stream::iter(extras)
        .map(|(p, old)| {
            let pods = pods.clone();
            async move { (pods.create(&PostParams::default(), &p).await, old) }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut extra_old = BTreeSet::new();
    let mut extra_pending = BTreeSet::new();
    for (res, old) in created {
        let p = res.expect("create surplus pod");
        if old {
            extra_old.insert(uid(&p));
        } else {
            extra_pending.insert(uid(&p));
        }
    }
    let extras: BTreeSet<String> = extra_old.union(&extra_pending).cloned().collect();
    assert_eq!(extras.len(), OLD + PENDING);

    // The old-revision extras run and are Ready (so they are not picked just for being
    // unready); the others stay unscheduled.
    wait_until(
        &format!("the {OLD} old-revision surplus pods Ready"),
        TIMEOUT,
        Duration::from_secs(1),
        || async {
            let list = pods
                .list(
                    &ListParams::default()
                        .labels(&format!("controller-revision-hash={old_revision}")),
                )
                .await
                .map_err(|e| e.to_string())?
                .items;
            let ready_n = list.iter().filter(|p| ready(p)).count();
            (ready_n == OLD)
                .then_some(())
                .ok_or(format!("{} pods, {ready_n} Ready", list.len()))
        },
    )
    .await;
    let all = live_pods(&pods, NAME).await.unwrap();
    let scheduled_pending = all
        .iter()
        .filter(|p| extra_pending.contains(&uid(p)))
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .count();
    assert_eq!(
        scheduled_pending, 0,
        "the pending surplus pods stay unscheduled"
    );
    assert_eq!(all.len(), PODS + OLD + PENDING);

    let rec = Recorder::start(&ns).await;
    assert_eq!(
        rec.initial(),
        recorded.union(&extras).cloned().collect::<BTreeSet<_>>(),
        "the recorder starts from the {PODS} pods and the surplus"
    );
    let t = Instant::now();
    managers.start();
    let n32 = i32::try_from(PODS).unwrap();
    let converge = || async {
        let live = live_pods(&pods, NAME).await?;
        let cs = cs_api.get(NAME).await.map_err(|e| e.to_string())?;
        let s = status_of(&cs);
        if live.len() == PODS && s.replicas == n32 {
            Ok(live)
        } else {
            Err(format!(
                "{} live pods, status.replicas {}",
                live.len(),
                s.replicas
            ))
        }
    };
    wait_until(
        &format!("exactly {PODS} live pods and status.replicas {PODS}"),
        TIMEOUT,
        Duration::from_secs(1),
        converge,
    )
    .await;
    let converged = t.elapsed();
    managers.current().wait_ready().await;
    let reconciles = managers.current().wait_resync().await;
    // Still so after the manager went quiet.
    let after = converge()
        .await
        .unwrap_or_else(|e| panic!("no longer converged after the resync: {e}"));
    rec.catch_up().await;
    let live = uids(&after);
    let deleted = rec.deleted();
    println!(
        "surplus: converged {:.1}s after the start; deleted={} (old-revision surplus {}, \
         pending surplus {}, others {}); created={}; live={}; last manager reconciles={reconciles}",
        converged.as_secs_f64(),
        deleted.len(),
        deleted.intersection(&extra_old).count(),
        deleted.intersection(&extra_pending).count(),
        deleted.difference(&extras).count(),
        rec.created().len(),
        live.len()
    );
    assert!(
        rec.created().is_empty(),
        "the restart created pods: {}",
        rec.summary()
    );
    assert_eq!(
        deleted,
        extras,
        "exactly the surplus pods are deleted (old revision first, then unscheduled): {}",
        rec.summary()
    );
    assert_eq!(live, recorded, "the original {PODS} pods (by UID) remain");
    let s = status_of(&cs_api.get(NAME).await.unwrap());
    assert_eq!(s.replicas, n32, "status.replicas");

    drop(rec);
    drop(managers);
    cleanup(&env, ns).await;
}

/// The metric parser against the manager's own exposition (so a renamed metric or label fails
/// here, without a testbed).
#[test]
fn reconcile_counter_is_read_from_the_managers_metrics() {
    use kruise_runtime::metrics::{Metrics, ReconcileResult};
    let m = Metrics::new();
    m.register_controller("cloneset", 3);
    m.register_controller("other", 1);
    assert_eq!(
        kruise_e2e::manager::reconciles(&m.encode().unwrap(), "cloneset"),
        0.0
    );
    m.observe_reconcile(
        "cloneset",
        ReconcileResult::Success,
        Duration::from_millis(3),
    );
    m.observe_reconcile("cloneset", ReconcileResult::Error, Duration::from_millis(3));
    m.observe_reconcile("cloneset", ReconcileResult::RequeueAfter, Duration::ZERO);
    m.observe_reconcile("other", ReconcileResult::Success, Duration::ZERO);
    assert_eq!(
        kruise_e2e::manager::reconciles(&m.encode().unwrap(), "cloneset"),
        3.0
    );
}

/// PVCs and ControllerRevisions survive restarts too: a CloneSet with a volumeClaimTemplate
/// keeps exactly its per-instance PVCs and its one revision (same UIDs) over three `kill -9`
/// restarts, and its revision history gains nothing. (The testbed has no provisioner, so the
/// claims stay Pending and the pods unscheduled — which is what this test needs: objects that
/// exist, not running pods.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_keep_the_same_pvcs_and_revisions() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    const PODS: usize = 30;
    let (env, ns) = setup("restart-pvc").await;
    let cs_api = ns.api::<CloneSet>();
    let pod_api = ns.api::<Pod>();
    let pvc_api = ns.api::<PersistentVolumeClaim>();
    let rev_api = ns.api::<ControllerRevision>();
    let mut managers = Managers::new(&ns, &["--enable-leader-election=false"]);
    // Ready first: what the test creates must go through the webhooks.
    managers.start().wait_ready().await;
    let vct = json!({"volumeClaimTemplates": [{"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}}]});
    cs_api
        .create(&PostParams::default(), &cloneset(NAME, PODS, vct))
        .await
        .unwrap();
    let uids_of =
        |items: Vec<(String, String)>| -> BTreeMap<String, String> { items.into_iter().collect() };
    let snapshot = || async {
        let pods = live_pods(&pod_api, NAME).await?;
        let pvcs = pvc_api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        let revs = rev_api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items;
        let named = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            (
                m.name.clone().unwrap_or_default(),
                m.uid.clone().unwrap_or_default(),
            )
        };
        Ok::<_, String>((
            uids_of(pods.iter().map(|p| named(&p.metadata)).collect()),
            uids_of(pvcs.iter().map(|p| named(&p.metadata)).collect()),
            uids_of(revs.iter().map(|r| named(&r.metadata)).collect()),
        ))
    };
    let before = wait_until(
        &format!("{PODS} pods, {PODS} PVCs and one revision"),
        TIMEOUT,
        Duration::from_secs(1),
        || async {
            let (pods, pvcs, revs) = snapshot().await?;
            let cs = cs_api.get(NAME).await.map_err(|e| e.to_string())?;
            let s = status_of(&cs);
            if pods.len() == PODS
                && pvcs.len() == PODS
                && revs.len() == 1
                && s.replicas == PODS as i32
            {
                Ok((pods, pvcs, revs))
            } else {
                Err(format!(
                    "{} pods, {} PVCs, {} revisions, status.replicas {}",
                    pods.len(),
                    pvcs.len(),
                    revs.len(),
                    s.replicas
                ))
            }
        },
    )
    .await;
    for round in 1..=3 {
        managers.kill();
        let m = managers.start();
        m.wait_ready().await;
        m.wait_resync().await;
        let now = snapshot().await.unwrap();
        println!(
            "restart {round}: {} pods, {} PVCs, {} revisions",
            now.0.len(),
            now.1.len(),
            now.2.len()
        );
        assert_eq!(
            now.0, before.0,
            "restart {round}: the same pods (name → UID)"
        );
        assert_eq!(
            now.1, before.1,
            "restart {round}: the same PVCs (name → UID)"
        );
        assert_eq!(now.2, before.2, "restart {round}: the same revisions");
    }
    drop(managers);
    cleanup(&env, ns).await;
}
