//! The end-to-end test support library of kruise-rs, used by every crate's `tests/` (and by
//! kruise-bench's benchmarks).
//!
//! Every e2e test runs against the real testbed (`hack/testbed/testbed.sh up`): a kube-apiserver,
//! controller-manager and scheduler with kwok fake nodes. This crate gives tests:
//!
//! - [`TestEnv::connect`]: a client for the testbed's admin kubeconfig (path from
//!   `KRUISE_TESTBED_KUBECONFIG`, else the testbed's fixed path), failing with instructions when
//!   the testbed is not running;
//! - [`TestNamespace`]: a throwaway namespace per test, deleted when dropped;
//! - [`wait_for`] and [`wait_for_object`]: polling with a timeout and a failure message that says
//!   what was awaited and what was last seen;
//! - [`kubectl`]: runs the testbed's kubectl against the same cluster;
//! - [`ensure_kwok_nodes`]: makes sure enough kwok fake nodes exist and are Ready;
//! - [`real_node`], [`on_real_node`], [`testbed_registry`], [`registry_digest`]: the testbed's
//!   real nodes (containerd + runc + kubelet, `hack/testbed/realnode.sh`) and its local registry;
//! - [`manager`] and [`daemon`]: kruise-manager and kruise-daemon processes run as users run
//!   them, isolated per test; [`rbac`]: a kubeconfig limited to a generated ClusterRole;
//! - [`testbed::OwnTestbed`]: a testbed instance of a test's own (cluster-wide changes);
//!   [`install`]: kruise-rs installed in it from images and the Helm chart.
//!
//! The admission-parity corpus is the `kruise-corpus` crate; the benchmarks are `kruise-bench`.

pub mod argocd;
pub mod daemon;
pub mod install;
pub mod manager;
pub mod rbac;
pub mod testbed;

use std::fmt::Debug;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

/// Errors of the e2e helpers. Tests usually `.expect()` them; the messages are written for that.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The testbed kubeconfig is missing or the apiserver does not answer.
    #[error(
        "the kruise-rs testbed is not reachable ({0}); start it with `make testbed-up` \
         (hack/testbed/testbed.sh up) or point KRUISE_TESTBED_KUBECONFIG at a kubeconfig"
    )]
    TestbedUnavailable(String),
    /// A wait timed out.
    #[error("timed out after {timeout:?} waiting for {what}; last observed: {last}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The timeout.
        timeout: Duration,
        /// Debug rendering of the last observation.
        last: String,
    },
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A command failed.
    #[error("{0}")]
    Command(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The state directory of the testbed (same rule as `hack/testbed/testbed.sh`).
pub fn testbed_state_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("KRUISE_TESTBED_DIR") {
        return PathBuf::from(dir);
    }
    let state = std::env::var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| home().join(".local/state"));
    state.join("kruise-rs/testbed")
}

/// The admin kubeconfig of the testbed: `$KRUISE_TESTBED_KUBECONFIG` or `<state dir>/kubeconfig`.
pub fn testbed_kubeconfig() -> PathBuf {
    std::env::var("KRUISE_TESTBED_KUBECONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|_| testbed_state_dir().join("kubeconfig"))
}

fn home() -> PathBuf {
    std::env::var("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/root"))
}

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root exists")
}

/// Opens `target/e2e-logs/<name>` for appending (creating the directory and file), for the
/// output of processes a test starts (e.g. a kruise-manager). Returns the file and its path.
pub fn log_file(name: &str) -> std::io::Result<(std::fs::File, PathBuf)> {
    open_log(name, false)
}

/// [`log_file`], emptied first: for a log a test reads back, which must hold only this run's
/// output (not an earlier run's under the same name).
pub fn fresh_log_file(name: &str) -> std::io::Result<(std::fs::File, PathBuf)> {
    open_log(name, true)
}

fn open_log(name: &str, truncate: bool) -> std::io::Result<(std::fs::File, PathBuf)> {
    let dir = repo_root().join("target/e2e-logs");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if truncate {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    Ok((options.open(&path)?, path))
}

/// A connection to the testbed.
#[derive(Clone)]
pub struct TestEnv {
    /// Admin client.
    pub client: Client,
    /// The configuration the client was built from (to build clients on other runtimes).
    pub config: kube::Config,
}

impl TestEnv {
    /// Connects to the testbed and checks that the apiserver answers.
    pub async fn connect() -> Result<Self> {
        let path = testbed_kubeconfig();
        let kubeconfig = Kubeconfig::read_from(&path)
            .map_err(|e| Error::TestbedUnavailable(format!("{}: {e}", path.display())))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| Error::TestbedUnavailable(format!("{}: {e}", path.display())))?;
        let client = Client::try_from(config.clone())
            .map_err(|e| Error::TestbedUnavailable(format!("client: {e}")))?;
        client
            .apiserver_version()
            .await
            .map_err(|e| Error::TestbedUnavailable(format!("apiserver: {e}")))?;
        Ok(Self { client, config })
    }

    /// Creates a throwaway namespace `e2e-<prefix>-<random>`.
    pub async fn namespace(&self, prefix: &str) -> Result<TestNamespace> {
        TestNamespace::create(self.client.clone(), self.config.clone(), prefix).await
    }
}

/// A namespace that lives for one test. Dropping it deletes the namespace (and so everything in
/// it, through the namespace controller), without waiting for the deletion to finish.
pub struct TestNamespace {
    client: Client,
    config: kube::Config,
    name: String,
    deleted: bool,
}

impl TestNamespace {
    async fn create(client: Client, config: kube::Config, prefix: &str) -> Result<Self> {
        let suffix: String = (0..6)
            .map(|_| {
                let n = rand::random_range(0..36u8);
                char::from(if n < 10 { b'0' + n } else { b'a' + n - 10 })
            })
            .collect();
        let prefix: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        let name = format!("e2e-{prefix}-{suffix}");
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"kruise-rs/e2e": "true"}}
        }))
        .expect("valid namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        // Pods need the namespace's default ServiceAccount (created asynchronously).
        let sa_api: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(client.clone(), &name);
        wait_for(
            &format!("ServiceAccount default in namespace {name}"),
            Duration::from_secs(30),
            || async { sa_api.get_opt("default").await.ok().flatten() },
        )
        .await?;
        Ok(Self {
            client,
            config,
            name,
            deleted: false,
        })
    }

    /// The namespace name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A namespaced API of this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Deletes the namespace now.
    pub async fn delete(mut self) -> Result<()> {
        self.deleted = true;
        Api::<Namespace>::all(self.client.clone())
            .delete(&self.name, &DeleteParams::background())
            .await?;
        Ok(())
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if self.deleted || std::env::var_os("KRUISE_E2E_KEEP_NAMESPACES").is_some() {
            return;
        }
        let config = self.config.clone();
        let name = self.name.clone();
        // Drop cannot be async and may run inside the test's (current-thread) runtime, which is
        // blocked here: delete from a separate thread with its own runtime and its own client
        // (a clone of the test's client would need the blocked runtime to make progress), and
        // wait for the request, not for the namespace to go.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let Ok(client) = Client::try_from(config) else {
                    return;
                };
                let api = Api::<Namespace>::all(client);
                let params = DeleteParams::background();
                let delete = api.delete(&name, &params);
                // Never hang a test run on cleanup (e.g. when the apiserver is gone).
                let _ = tokio::time::timeout(Duration::from_secs(10), delete).await;
            });
        })
        .join();
    }
}

/// Read-modify-write of `name` the way a client must do it while a controller writes the same
/// object (status writes bump its resourceVersion): gets the latest object, applies `change`, and
/// replaces it, retrying up to 20 times on `409 Conflict`. Any other error (e.g. a webhook denial)
/// is returned as it came, so tests can assert on it.
pub async fn replace_latest<K>(
    api: &Api<K>,
    name: &str,
    mut change: impl FnMut(&mut K),
) -> std::result::Result<K, kube::Error>
where
    K: Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let mut attempt = 0;
    loop {
        let mut object = api.get(name).await?;
        change(&mut object);
        match api.replace(name, &PostParams::default(), &object).await {
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 20 => attempt += 1,
            other => return other,
        }
    }
}

/// Polls `probe` every 200 ms until it returns `Some`, or fails after `timeout` with a message
/// naming `what`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe().await {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout,
                last: "(condition never held)".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls the object `name` until `predicate` holds; on timeout the error shows the last object
/// seen (or that it did not exist).
pub async fn wait_for_object<K, P>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    mut predicate: P,
) -> Result<K>
where
    K: Clone + DeserializeOwned + Debug,
    P: FnMut(&K) -> bool,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = api.get_opt(name).await?;
        match &last {
            Some(obj) if predicate(obj) => return Ok(obj.clone()),
            _ => {}
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: format!("{what} (object {name})"),
                timeout,
                last: match last {
                    Some(obj) => format!("{obj:#?}"),
                    None => "object does not exist".into(),
                },
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls a list until `predicate` holds for the whole list; on timeout shows the last list's names.
pub async fn wait_for_list<K, P>(
    api: &Api<K>,
    params: &kube::api::ListParams,
    what: &str,
    timeout: Duration,
    mut predicate: P,
) -> Result<Vec<K>>
where
    K: Clone + DeserializeOwned + Debug + Resource,
    P: FnMut(&[K]) -> bool,
{
    let deadline = Instant::now() + timeout;
    loop {
        let items = api.list(params).await?.items;
        if predicate(&items) {
            return Ok(items);
        }
        if Instant::now() >= deadline {
            let names: Vec<String> = items
                .iter()
                .map(|o| o.meta().name.clone().unwrap_or_default())
                .collect();
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout,
                last: format!("{} objects: {names:?}", items.len()),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Path of the testbed's kubectl (built by `hack/testbed/build.sh`), found through
/// `hack/testbed/testbed.sh env`.
pub fn kubectl_path() -> Result<PathBuf> {
    let out = std::process::Command::new("bash")
        .arg(repo_root().join("hack/testbed/testbed.sh"))
        .arg("env")
        .output()
        .map_err(|e| Error::Command(format!("testbed.sh env: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = text
        .lines()
        .find_map(|l| l.strip_prefix("export PATH="))
        .and_then(|p| p.split(':').next())
        .ok_or_else(|| Error::Command(format!("unexpected testbed.sh env output: {text}")))?;
    Ok(PathBuf::from(dir).join("kubectl"))
}

/// Output of a kubectl run.
#[derive(Debug)]
pub struct KubectlOutput {
    /// Whether kubectl exited 0.
    pub success: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs the testbed's kubectl with `args` (and `stdin` if given) against the testbed.
pub fn kubectl(args: &[&str], stdin: Option<&str>) -> Result<KubectlOutput> {
    kubectl_with(&testbed_kubeconfig(), args, stdin)
}

/// Runs the testbed's kubectl with `args` (and `stdin` if given) against the cluster of
/// `kubeconfig`.
///
/// Errors: kubectl could not be started or fed; a non-zero exit is in [`KubectlOutput`].
pub fn kubectl_with(
    kubeconfig: &std::path::Path,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<KubectlOutput> {
    use std::io::Write;
    let mut cmd = std::process::Command::new(kubectl_path()?);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::Command(format!("kubectl {args:?}: {e}")))?;
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(input.as_bytes())
            .map_err(|e| Error::Command(format!("kubectl stdin: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::Command(format!("kubectl {args:?}: {e}")))?;
    Ok(KubectlOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Reads every CRD in `config/crd/bases` (the generated, checked-in CRDs).
pub fn load_crds() -> Result<Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>>{
    let dir = repo_root().join("config/crd/bases");
    let mut crds = Vec::new();
    let entries =
        std::fs::read_dir(&dir).map_err(|e| Error::Command(format!("{}: {e}", dir.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::Command(format!("{}: {e}", path.display())))?;
            let crd = serde_yaml_ng::from_str(&text)
                .map_err(|e| Error::Command(format!("{}: {e}", path.display())))?;
            crds.push(crd);
        }
    }
    crds.sort_by(|a: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition, b| {
        a.metadata.name.cmp(&b.metadata.name)
    });
    Ok(crds)
}

/// Server-side applies every CRD of `config/crd/bases` (idempotent), turns off any conversion
/// webhook a previous run or experiment left on (`spec.conversion` back to `None`: a CRD that
/// still points at a stopped manager's `/convert` fails every request for that kind), and waits
/// until all are Established.
pub async fn install_crds(
    env: &TestEnv,
) -> Result<Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>>{
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};
    let api: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crds = load_crds()?;
    let pp = PatchParams::apply("kruise-e2e").force();
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let applied = api.patch(&name, &pp, &Patch::Apply(crd)).await?;
        let strategy = applied
            .spec
            .conversion
            .as_ref()
            .map(|c| c.strategy.as_str());
        if strategy.is_some_and(|s| s != "None") {
            let reset =
                serde_json::json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&reset))
                .await?;
        }
    }
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        wait_crd_established(&api, &name, Duration::from_secs(60)).await?;
    }
    Ok(crds)
}

/// Waits until CustomResourceDefinition `name` is `Established` (its kind is served).
pub async fn wait_crd_established(
    api: &Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
    name: &str,
    timeout: Duration,
) -> Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
> {
    wait_for_object(
        api,
        name,
        &format!("CRD {name} Established"),
        timeout,
        |c| {
            c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        },
    )
    .await
}

/// Zones the kwok nodes are spread over, round robin by node index (as `hack/testbed/testbed.sh`).
const KWOK_ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

/// The kwok node `kwok-node-<i>`, labelled and annotated as `hack/testbed/testbed.sh` creates
/// them (kwok manages nodes labelled `type=kwok`).
fn kwok_node(i: usize) -> Node {
    kwok_node_named(&format!("kwok-node-{i}"), KWOK_ZONES[i % KWOK_ZONES.len()])
}

/// A kwok node named `name` in `zone`, labelled and annotated like the testbed's (`type=kwok`,
/// so kwok makes it Ready and runs its pods); for tests that add and remove nodes of their own.
pub fn kwok_node_named(name: &str, zone: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {
            "type": "kwok", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "node-role.kubernetes.io/worker": "",
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": "local"},
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {},
    }))
    .expect("valid node")
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Makes sure at least `n` kwok nodes (label `type=kwok`) exist: creates the missing ones as
/// `kwok-node-<i>` (the lowest free indexes; zones round robin over zone-a/b/c), tolerating
/// `AlreadyExists` (another test creating the same node at the same time), then waits up to
/// 90 s until at least `n` of them report `Ready=True` (kwok must be running).
pub async fn ensure_kwok_nodes(env: &TestEnv, n: usize) -> Result<()> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let kwok = ListParams::default().labels("type=kwok");
    let existing: std::collections::BTreeSet<String> = nodes
        .list(&kwok)
        .await?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let mut count = existing.len();
    let mut i = 0;
    while count < n {
        let name = format!("kwok-node-{i}");
        if !existing.contains(&name) {
            match nodes.create(&PostParams::default(), &kwok_node(i)).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            count += 1;
        }
        i += 1;
    }
    let timeout = Duration::from_secs(90);
    let deadline = Instant::now() + timeout;
    loop {
        let list = nodes.list(&kwok).await?.items;
        let ready = list.iter().filter(|n| node_ready(n)).count();
        if ready >= n {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let not_ready: Vec<String> = list
                .iter()
                .filter(|n| !node_ready(n))
                .filter_map(|n| n.metadata.name.clone())
                .collect();
            return Err(Error::Timeout {
                what: format!("{n} kwok nodes (type=kwok) Ready (is kwok running?)"),
                timeout,
                last: format!(
                    "{ready} of {} kwok nodes Ready; not Ready: {not_ready:?}",
                    list.len()
                ),
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Label of the testbed's real nodes (`type=real`; kwok nodes have `type=kwok`).
pub const REAL_NODE_LABEL: (&str, &str) = ("type", "real");

/// Taint of the real nodes while kwok nodes are there (`kruise-rs.io/real-node=true:NoSchedule`):
/// pods must tolerate it to run on a real node.
pub const REAL_NODE_TAINT: &str = "kruise-rs.io/real-node";

/// The name of a Ready real node (label `type=real`), failing with instructions when the testbed
/// has none (started with `--real-nodes 0`, or by a script that predates real nodes).
pub async fn real_node(env: &TestEnv) -> Result<String> {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let selector = format!("{}={}", REAL_NODE_LABEL.0, REAL_NODE_LABEL.1);
    let list = nodes
        .list(&ListParams::default().labels(&selector))
        .await?
        .items;
    list.iter()
        .filter(|n| node_ready(n))
        .filter_map(|n| n.metadata.name.clone())
        .min()
        .ok_or_else(|| {
            Error::TestbedUnavailable(format!(
                "no Ready real node ({selector}) among {} real node(s); restart the testbed \
                 with real nodes: `hack/testbed/testbed.sh down && hack/testbed/testbed.sh up` \
                 (default --real-nodes 1; needs root)",
                list.len()
            ))
        })
}

/// Makes the pod spec `spec` (JSON) run on the real node `node`: the real-node nodeSelector, a
/// node affinity on its name (real nodes beside kwok nodes carry no `kubernetes.io/hostname`
/// label) and a toleration of [`REAL_NODE_TAINT`].
pub fn on_real_node(spec: &mut serde_json::Value, node: &str) {
    spec["nodeSelector"] = serde_json::json!({REAL_NODE_LABEL.0: REAL_NODE_LABEL.1});
    spec["affinity"] = serde_json::json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
    tolerations.push(serde_json::json!({"key": REAL_NODE_TAINT, "operator": "Exists"}));
    spec["tolerations"] = serde_json::Value::Array(tolerations);
}

/// Address (`127.0.0.1:<port>`) of the testbed's local image registry, which every real node's
/// containerd uses for all registries (`<state dir>/registry/address`, written by `up`).
pub fn testbed_registry() -> Result<String> {
    if let Ok(addr) = std::env::var("KRUISE_TESTBED_REGISTRY") {
        return Ok(addr);
    }
    let path = testbed_state_dir().join("registry/address");
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .map_err(|e| Error::TestbedUnavailable(format!("registry address {}: {e}", path.display())))
}

/// The manifest digest (`sha256:...`) the local registry serves for `repository:tag`
/// (repository path inside the registry, e.g. `library/nginx`); the kubelet reports it in
/// `imageID` as `docker.io/library/nginx@sha256:...`.
pub async fn registry_digest(repository: &str, tag: &str) -> Result<String> {
    let url = format!(
        "http://{}/v2/{repository}/manifests/{tag}",
        testbed_registry()?
    );
    let response = reqwest::Client::new()
        .head(&url)
        .header(
            "Accept",
            "application/vnd.oci.image.manifest.v1+json, \
             application/vnd.docker.distribution.manifest.v2+json, \
             application/vnd.oci.image.index.v1+json",
        )
        .send()
        .await
        .map_err(|e| Error::Command(format!("HEAD {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(Error::Command(format!("HEAD {url}: {}", response.status())));
    }
    response
        .headers()
        .get("Docker-Content-Digest")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| Error::Command(format!("HEAD {url}: no Docker-Content-Digest")))
}

/// An API of `gvk` = (group, version, kind) with resource `plural`, in namespace `ns` (all
/// namespaces / cluster-scoped when `None`), for objects handled as JSON.
pub fn dynamic_api(
    client: &Client,
    ns: Option<&str>,
    gvk: (&str, &str, &str),
    plural: &str,
) -> Api<kube::api::DynamicObject> {
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2),
        plural,
    );
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// `v` (a whole object with apiVersion, kind and metadata) as a [`kube::api::DynamicObject`].
///
/// Panics when `v` has no metadata: test input.
pub fn dynamic_object(v: serde_json::Value) -> kube::api::DynamicObject {
    serde_json::from_value(v).expect("an object with apiVersion, kind and metadata")
}

/// Whether the pod's `Ready` condition is `True`.
pub fn pod_ready(p: &k8s_openapi::api::core::v1::Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
