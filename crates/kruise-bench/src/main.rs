//! `kruise-bench`: benchmarks of kruise-manager on the local testbed (driven by
//! `hack/bench/bench.sh` and `hack/bench/scale.sh`). Every scenario prints its baseline beside
//! it (a bare client doing the minimum work), so figures read as ratios.
//!
//! `rollout` (the default when no subcommand is given): in-place rollout of one CloneSet.
//! 1. Makes sure there are at least `--nodes` kwok nodes (Ready) and the CRDs are installed.
//! 2. Starts the given manager binary cluster-wide (`--namespace` with `--watch-namespace`) with
//!    only flags OpenKruise's manager accepts too (`--kubeconfig`, leader election off,
//!    `--metrics-addr`, `--health-probe-addr`, `--<kind>-workers 3`, `--rest-config-qps/-burst`
//!    from `--qps`/`--burst`, default 30/50 as OpenKruise), and waits for its `/readyz`. The Go
//!    manager runs through `hack/bench/openkruise-manager.sh` (webhooks, certificates, env).
//!    Every manager serves its webhooks as users run it, reached at
//!    `https://127.0.0.1:<--webhook-port>` (env `POD_NAMESPACE=kruise-system`, `WEBHOOK_HOST`,
//!    `WEBHOOK_PORT`, as OpenKruise out of cluster); the webhook configurations are deleted at
//!    the end of the run.
//! 3. Creates a CloneSet of `--pods` pods (InPlaceIfPossible, maxUnavailable 100%) and waits for
//!    all of them to be ready.
//! 4. Changes the image and measures the time until every pod is updated and ready, the API
//!    write requests the manager made (`rest_client_requests_total` POST/PUT/PATCH/DELETE delta)
//!    per updated pod, and the manager's peak RSS (VmHWM).
//! 5. Baseline: patches the image of the same pods directly with a bare client (the physical
//!    limit: one write per pod, kwok simulating the restart) and reports the time ratio.
//! 6. With `--json FILE`, writes the result (times, writes by resource, RSS, baseline) as JSON.
//!
//! `scale`: `--clonesets` CloneSets of `--pods-per-cloneset` pods, one or more manager binaries
//! measured in turn on the same objects (`--rounds` times, interleaved), cluster-wide with the
//! same `--rest-config-qps/-burst` (`--qps`/`--burst`, default 30/50); the Go manager runs
//! through `hack/bench/openkruise-manager.sh` (its webhooks are removed after each of its runs).
//! 1. Nodes (default: enough kwok nodes for 110 pods each, plus one) and CRDs; a fresh namespace.
//!    Managers serve their webhooks as in `rollout`.
//! 2. A kruise-manager (`--creator`, default the first kruise-manager given), unthrottled,
//!    creates every pod; the run waits until every CloneSet is ready and observed; the manager
//!    is stopped.
//! 3. For each manager and round: while it is stopped, every CloneSet's generation is bumped without
//!    touching pods (`spec.revisionHistoryLimit`, which only bounds the pruning of
//!    ControllerRevisions; `minReadySeconds` would change which pods count as available, so a
//!    restart soon after the pods became ready would write statuses again); the manager is
//!    started and the run measures the time until all CloneSets report
//!    `observedGeneration == generation` (the first completed reconcile of each), the API
//!    requests it made (`rest_client_requests_total`, reads = GET/HEAD, i.e. GET, LIST and
//!    WATCH, writes = POST/PUT/PATCH/DELETE), its peak RSS (VmHWM) and its RSS after a settle
//!    period; the restart must create and delete no pod.
//! 4. Baseline: a bare client LISTs every CloneSet and every pod once.
//! 5. A summary per manager (median, min and max over the rounds; ratios to the Go manager's
//!    medians when it was measured); with `--json FILE` every run and the summary as JSON.
//!
//! `admission`: the pod webhook (`/mutate-pod`) — injection latency with SidecarSets installed
//! and the admission calls plain Deployment pods make; see the `admission` module.
//!
//! Prints progress every second and a summary; exits non-zero with a reason on failure.

mod admission;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args, Parser, Subcommand};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::manager::free_port;
use kruise_e2e::{TestEnv, TestNamespace, install_crds, log_file, testbed_kubeconfig};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

/// Benchmarks of kruise-manager on the kruise-rs testbed (hack/testbed/testbed.sh up). Without
/// a subcommand, runs `rollout` with the flags given.
#[derive(Debug, Parser)]
#[command(name = "kruise-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Scenario>,

    #[command(flatten)]
    rollout: RolloutArgs,
}

#[derive(Debug, Subcommand)]
enum Scenario {
    /// In-place image rollout of one CloneSet (maxUnavailable 100%), against a bare client
    /// patching every pod's image.
    Rollout(RolloutArgs),
    /// Restart of one or more managers over many CloneSets: time to the first completed
    /// reconcile of all, API requests, RSS; against a bare LIST of every CloneSet and pod.
    Scale(ScaleArgs),
    /// The pod webhook: pod-create latency through /mutate-pod with SidecarSets installed
    /// against creates without the webhook, manager CPU and RSS (part 1, "injection"); admission
    /// calls and time to Ready of a plain Deployment with no manager, the scoped pod webhook and
    /// OpenKruise's every-pod configuration (part 2, "blast"). Needs a testbed of its own.
    Admission(admission::AdmissionArgs),
}

#[derive(Debug, Clone, Args)]
struct RolloutArgs {
    /// Pods in the CloneSet.
    #[arg(long, default_value_t = 1000)]
    pods: usize,

    /// Minimum number of kwok nodes (missing ones are created).
    #[arg(long, default_value_t = 10)]
    nodes: usize,

    /// The kruise-manager binary to measure.
    #[arg(long, default_value = "target/release/kruise-manager")]
    manager: PathBuf,

    /// Timeout of each wait (scale-up, rollout, baseline), in seconds.
    #[arg(long, default_value_t = 900)]
    timeout_seconds: u64,

    /// The workload rolled out: a CloneSet (`InPlaceIfPossible`, `maxUnavailable: 100%`), an
    /// Advanced StatefulSet (`Parallel`, `InPlaceIfPossible`, `maxUnavailable: 100%`) or an
    /// Advanced DaemonSet (`InPlaceIfPossible`, `maxUnavailable: 100%`; one pod per kwok node,
    /// so `--pods` is ignored and `--nodes` sets the size, e.g. `--nodes 500`).
    #[arg(long, value_enum, default_value_t = Workload::Cloneset)]
    workload: Workload,

    /// Extra flag passed to the manager (repeatable), e.g. --manager-arg=--feature-gates=X=true.
    /// Only flags every measured manager accepts keep the comparison fair.
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    manager_args: Vec<String>,

    #[command(flatten)]
    client: ManagerClientArgs,

    /// How long to wait for the manager's `/readyz` before creating the workload, in seconds.
    #[arg(long, default_value_t = 180)]
    ready_timeout_seconds: u64,

    /// Also write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// How every measured manager is run (rollout and scale alike).
#[derive(Debug, Clone, Args)]
struct ManagerClientArgs {
    /// Client-side QPS of every measured manager (passed as `--rest-config-qps`; OpenKruise's
    /// default 30).
    #[arg(long, default_value_t = 30)]
    qps: u32,

    /// Client-side burst of every measured manager (passed as `--rest-config-burst`;
    /// OpenKruise's default 50).
    #[arg(long, default_value_t = 50)]
    burst: u32,

    /// Run the managers with `--namespace <the benchmark's namespace>` instead of cluster-wide
    /// (kruise-rs only: OpenKruise v1.9.0 panics with `--namespace` in its DaemonSet controller).
    #[arg(long)]
    watch_namespace: bool,

    /// Port of the managers' webhook server at 127.0.0.1 (`WEBHOOK_PORT`; the Go manager's
    /// script reads it as `OPENKRUISE_WEBHOOK_PORT`).
    #[arg(long, default_value_t = 9876)]
    webhook_port: u16,
}

impl ManagerClientArgs {
    /// `--rest-config-qps` / `--rest-config-burst` with these settings.
    fn rest_config_flags(&self) -> [String; 2] {
        [
            format!("--rest-config-qps={}", self.qps),
            format!("--rest-config-burst={}", self.burst),
        ]
    }
}

/// The workload kind of the rollout benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Workload {
    /// `apps.kruise.io/v1alpha1` CloneSet.
    Cloneset,
    /// `apps.kruise.io/v1beta1` StatefulSet (Advanced StatefulSet).
    Statefulset,
    /// `apps.kruise.io/v1beta1` DaemonSet (Advanced DaemonSet) on every kwok node.
    Daemonset,
}

impl Workload {
    fn resource(self) -> ApiResource {
        match self {
            Workload::Cloneset => cloneset_resource(),
            Workload::Statefulset => ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "StatefulSet"),
                "statefulsets",
            ),
            Workload::Daemonset => ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "DaemonSet"),
                "daemonsets",
            ),
        }
    }

    /// The object of `pods` replicas.
    fn object(self, pods: usize) -> serde_json::Value {
        let template = json!({"metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}});
        match self {
            Workload::Cloneset => json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": "bench"},
                "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "bench"}},
                         "template": template,
                         "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "100%"}}}),
            Workload::Statefulset => {
                let mut template = template;
                template["spec"]["readinessGates"] =
                    json!([{"conditionType": "InPlaceUpdateReady"}]);
                json!({
                    "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                    "metadata": {"name": "bench"},
                    "spec": {"replicas": pods, "serviceName": "bench", "podManagementPolicy": "Parallel",
                             "selector": {"matchLabels": {"app": "bench"}}, "template": template,
                             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                                 "podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": "100%"}}}})
            }
            Workload::Daemonset => {
                let mut template = template;
                template["spec"]["nodeSelector"] = json!({"type": "kwok"});
                template["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
                json!({
                    "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
                    "metadata": {"name": "bench"},
                    "spec": {"selector": {"matchLabels": {"app": "bench"}}, "template": template,
                             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                                 "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": "100%"}}}})
            }
        }
    }

    /// The merge patch that pauses the rollout.
    fn pause(self) -> serde_json::Value {
        match self {
            Workload::Cloneset => json!({"spec": {"updateStrategy": {"paused": true}}}),
            Workload::Statefulset | Workload::Daemonset => {
                json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}}}})
            }
        }
    }

    fn flags(self) -> [String; 2] {
        match self {
            Workload::Cloneset => ["--cloneset-workers".into(), "3".into()],
            Workload::Statefulset => ["--statefulset-workers".into(), "3".into()],
            Workload::Daemonset => ["--daemonset-workers".into(), "3".into()],
        }
    }
}

#[derive(Debug, Clone, Args)]
struct ScaleArgs {
    /// Number of CloneSets.
    #[arg(long, default_value_t = 100)]
    clonesets: usize,

    /// Pods (replicas) per CloneSet.
    #[arg(long, default_value_t = 100)]
    pods_per_cloneset: usize,

    /// Minimum number of kwok nodes (missing ones are created); default
    /// ceil(clonesets * pods-per-cloneset / 110) + 1.
    #[arg(long)]
    nodes: Option<usize>,

    /// A kruise-manager binary to measure; repeat it (or give a comma-separated list) to measure
    /// several builds in turn on the same objects, e.g. "before" and "after". The first one also
    /// creates the pods. Each is labelled by its path.
    #[arg(long = "manager", visible_alias = "managers", value_name = "PATH",
          value_delimiter = ',', action = ArgAction::Append,
          default_value = "target/release/kruise-manager")]
    managers: Vec<PathBuf>,

    /// Extra flag passed to every manager (repeatable), e.g. --manager-arg=--cloneset-workers=8.
    /// Every binary gets the same flags, so figures compare.
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    manager_args: Vec<String>,

    #[command(flatten)]
    client: ManagerClientArgs,

    /// Prefix of the benchmark's namespace (`e2e-<prefix>-<random>`, deleted at the end).
    #[arg(long, default_value = "bench-scale")]
    namespace_prefix: String,

    /// Seconds the manager keeps running after all CloneSets are reconciled, before its RSS is
    /// read ("RSS settled") and it is stopped.
    #[arg(long, default_value_t = 10)]
    settle_seconds: u64,

    /// Timeout of each wait (creation of all pods, reconcile of all CloneSets), in seconds.
    #[arg(long, default_value_t = 1800)]
    timeout_seconds: u64,

    /// The kruise-manager that creates the pods before the measured restarts (default: the
    /// first `--manager` that is not `openkruise-manager.sh`). It runs unthrottled
    /// (`--rest-config-qps/-burst` 100000) so the set-up takes the API server's time only.
    #[arg(long, value_name = "PATH")]
    creator: Option<PathBuf>,

    /// Measure the managers this many times, interleaved (a, b, a, b, ...), for a spread.
    #[arg(long, default_value_t = 1)]
    rounds: usize,

    /// Also write the result (every row, the baseline, medians and ranges) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

// ---------------------------------------------------------------------------------------------
// Pods and CloneSets

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

fn status_image_matches(p: &Pod, want: &str) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .is_some_and(|c| c.image == want)
}

fn cloneset_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    )
}

fn cloneset_api(env: &TestEnv, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(env.client.clone(), ns, &cloneset_resource())
}

/// `metadata.generation` of a CloneSet.
fn generation(cs: &DynamicObject) -> i64 {
    cs.metadata.generation.unwrap_or(0)
}

/// An integer field of a CloneSet's status (0 when absent).
fn status_int(cs: &DynamicObject, field: &str) -> i64 {
    cs.data
        .get("status")
        .and_then(|s| s.get(field))
        .and_then(|v| v.as_i64())
        .unwrap_or(0)
}

fn observed(cs: &DynamicObject) -> bool {
    status_int(cs, "observedGeneration") == generation(cs)
}

/// Waits until `done(pods)`; prints `label: <progress(pods)>` every second.
async fn wait_pods(
    pods: &Api<Pod>,
    selector: &str,
    label: &str,
    timeout: Duration,
    done: impl Fn(&[Pod]) -> bool,
    progress: impl Fn(&[Pod]) -> String,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last_print = Instant::now() - Duration::from_secs(2);
    loop {
        let list = pods
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| format!("listing pods: {e}"))?
            .items;
        if done(&list) {
            println!(
                "  {label}: {} (done in {:.1}s)",
                progress(&list),
                start.elapsed().as_secs_f64()
            );
            return Ok(start.elapsed());
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  {label}: {} ({:.0}s)",
                progress(&list),
                start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{label}: not done within {timeout:?}: {}",
                progress(&list)
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until `done(clonesets)`; prints `label: <progress(clonesets)>` every second. Returns
/// the time waited and the last list.
async fn wait_clonesets(
    api: &Api<DynamicObject>,
    label: &str,
    timeout: Duration,
    done: impl Fn(&[DynamicObject]) -> bool,
    progress: impl Fn(&[DynamicObject]) -> String,
) -> Result<(Duration, Vec<DynamicObject>), String> {
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing CloneSets: {e}"))?
            .items;
        let elapsed = start.elapsed();
        if done(&list) {
            println!(
                "  {label}: {} (done in {:.1}s)",
                progress(&list),
                elapsed.as_secs_f64()
            );
            return Ok((elapsed, list));
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  {label}: {} ({:.0}s)",
                progress(&list),
                elapsed.as_secs_f64()
            );
            last_print = Instant::now();
        }
        if elapsed > timeout {
            return Err(format!(
                "{label}: not done within {timeout:?}: {}",
                progress(&list)
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Manager processes, /proc and /metrics

/// A kruise-manager started by the benchmark: leader election off, webhooks served at
/// 127.0.0.1 (rollout, scale) or as the admission scenario says, watching one namespace or all,
/// metrics and health on free loopback ports, log in `target/e2e-logs/`. SIGKILLed on drop.
struct Manager {
    child: Option<Child>,
    pid: u32,
    metrics: SocketAddr,
    health: SocketAddr,
    log: PathBuf,
}

impl Manager {
    fn start(
        binary: &Path,
        ns: Option<&str>,
        extra: &[String],
        webhook_port: u16,
        log_name: &str,
    ) -> Result<Self, String> {
        let mut args: Vec<String> = ns
            .iter()
            .flat_map(|ns| ["--namespace".to_string(), ns.to_string()])
            .collect();
        args.extend_from_slice(extra);
        let port = webhook_port.to_string();
        Self::spawn(
            binary,
            &args,
            &[
                ("POD_NAMESPACE", kruise_e2e::manager::KRUISE_NAMESPACE),
                ("WEBHOOK_HOST", "127.0.0.1"),
                ("WEBHOOK_PORT", &port),
                ("OPENKRUISE_WEBHOOK_PORT", &port),
            ],
            log_name,
        )
    }

    /// Starts `binary` with the testbed's kubeconfig, leader election off, metrics and health on
    /// free loopback ports, then `args`, with `envs` added to its environment.
    fn spawn(
        binary: &Path,
        args: &[String],
        envs: &[(&str, &str)],
        log_name: &str,
    ) -> Result<Self, String> {
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (file, log) = log_file(log_name).map_err(|e| format!("log file {log_name}: {e}"))?;
        let stderr = file.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(testbed_kubeconfig())
            .arg("--enable-leader-election=false")
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .arg("--health-probe-addr")
            .arg(health.to_string())
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        Ok(Self {
            pid: child.id(),
            child: Some(child),
            metrics,
            health,
            log,
        })
    }

    /// Fails if the process has exited (with its status and log path).
    fn check_running(&mut self) -> Result<(), String> {
        if let Some(c) = self.child.as_mut()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Err(format!(
                "manager pid {} exited ({status}); log {}",
                self.pid,
                self.log.display()
            ));
        }
        Ok(())
    }

    /// SIGTERM (a clean shutdown), then SIGKILL if it is still running after 40 s.
    async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(40);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A field of `/proc/<pid>/status` in kB (e.g. `VmHWM`, `VmRSS`), as MiB.
fn proc_status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// One sample of the Prometheus text exposition format.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the samples of a Prometheus text exposition (comments, blank and malformed lines are
/// skipped; a trailing timestamp is ignored).
fn parse_prometheus(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_sample).collect()
}

fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = line[..name_end].to_string();
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            // Skip separators, then either `}` or `key="value"`.
            while chars
                .next_if(|(_, c)| *c == ',' || c.is_whitespace())
                .is_some()
            {}
            let (i, c) = chars.next()?;
            if c == '}' {
                rest = &body[i + 1..];
                break;
            }
            let mut key = String::from(c);
            loop {
                let (_, c) = chars.next()?;
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if chars.next()?.1 != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    other => value.push(other),
                }
            }
            labels.push((key.trim().to_string(), value));
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// The manager's API requests (`rest_client_requests_total`, every code and host) by kind of
/// HTTP method: reads are GET/HEAD (get, list and watch), writes POST/PUT/PATCH/DELETE.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Requests {
    reads: u64,
    writes: u64,
    other: u64,
}

impl Requests {
    fn from_metrics(text: &str) -> Self {
        let mut r = Self::default();
        for s in parse_prometheus(text) {
            if s.name != "rest_client_requests_total" {
                continue;
            }
            let n = s.value as u64;
            match s.label("method").unwrap_or("") {
                "GET" | "HEAD" => r.reads += n,
                "POST" | "PUT" | "PATCH" | "DELETE" => r.writes += n,
                _ => r.other += n,
            }
        }
        r
    }

    fn total(&self) -> u64 {
        self.reads + self.writes + self.other
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            other: self.other.saturating_sub(earlier.other),
        }
    }
}

/// The manager's writes by what they wrote (`kruise_rest_client_writes_total`): key
/// `group/resource[/subresource] verb code`.
fn writes_by_resource(text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for s in parse_prometheus(text) {
        if s.name != "kruise_rest_client_writes_total" {
            continue;
        }
        let group = s.label("group").unwrap_or("");
        let resource = s.label("resource").unwrap_or("");
        let sub = s.label("subresource").unwrap_or("");
        let mut key = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        if !sub.is_empty() {
            key = format!("{key}/{sub}");
        }
        let key = format!(
            "{key} {} {}",
            s.label("verb").unwrap_or(""),
            s.label("code").unwrap_or("")
        );
        *out.entry(key).or_default() += s.value as u64;
    }
    out
}

/// The manager's `/metrics` text.
async fn scrape_text(http: &reqwest::Client, m: &Manager) -> Result<String, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(body),
        (status, body) => Err(format!(
            "manager /metrics answered {status}: {}",
            body.chars().take(200).collect::<String>()
        )),
    }
}

/// `GET http://<addr><path>`: status and body.
async fn http_get(
    http: &reqwest::Client,
    addr: SocketAddr,
    path: &str,
) -> Result<(u16, String), String> {
    let url = format!("http://{addr}{path}");
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status().as_u16();
    let body = resp.text().await.map_err(|e| format!("GET {url}: {e}"))?;
    Ok((status, body))
}

/// The manager's request counters from its `/metrics`.
async fn scrape_requests(http: &reqwest::Client, m: &Manager) -> Result<Requests, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(Requests::from_metrics(&body)),
        (status, body) => Err(format!(
            "manager /metrics answered {status}: {}",
            body.chars().take(200).collect::<String>()
        )),
    }
}

/// Waits until the manager's `/metrics` answers (its servers are up).
async fn wait_metrics(
    http: &reqwest::Client,
    m: &mut Manager,
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        m.check_running()?;
        match scrape_requests(http, m).await {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() > timeout => {
                return Err(format!("{e} (log {})", m.log.display()));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

async fn ensure_nodes(env: &TestEnv, n: usize) -> Result<usize, String> {
    kruise_e2e::ensure_kwok_nodes(env, n)
        .await
        .map_err(|e| format!("kwok nodes: {e}"))?;
    let count = Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .len();
    println!("nodes: {count} kwok nodes");
    Ok(count)
}

// ---------------------------------------------------------------------------------------------
// rollout

async fn rollout(mut a: RolloutArgs) -> Result<(), String> {
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    let http = http_client()?;

    // 1. Nodes and CRDs. A DaemonSet has one pod per node (the kwok nodes).
    let before = kwok_node_names(&env).await?;
    let node_count = ensure_nodes(&env, a.nodes).await?;
    if a.workload == Workload::Daemonset {
        a.pods = node_count;
    }
    install_crds(&env).await.map_err(|e| e.to_string())?;
    admission::ensure_kruise_namespace(&env).await?;
    let mut result = rollout_measure(&env, &a, &http, node_count).await;
    // The manager served the webhooks (as users run it); their configurations fail closed
    // without it.
    let cleaned = admission::delete_webhook_configurations(&env).await;
    result = result.and(cleaned);
    // Nodes this run added are removed again, so that later tests see the usual testbed.
    let added: Vec<String> = kwok_node_names(&env)
        .await?
        .difference(&before)
        .cloned()
        .collect();
    if !added.is_empty() {
        println!("removing the {} kwok nodes this run added", added.len());
        let nodes: Api<Node> = Api::all(env.client.clone());
        for name in &added {
            nodes
                .delete(name, &Default::default())
                .await
                .map_err(|e| format!("deleting node {name}: {e}"))?;
        }
    }
    result
}

/// Names of the kwok nodes (`type=kwok`).
async fn kwok_node_names(env: &TestEnv) -> Result<BTreeSet<String>, String> {
    Ok(Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .map_err(|e| format!("listing nodes: {e}"))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect())
}

async fn rollout_measure(
    env: &TestEnv,
    a: &RolloutArgs,
    http: &reqwest::Client,
    node_count: usize,
) -> Result<(), String> {
    let (env, http) = (env, http);

    // 2. The manager, cluster-wide unless --watch-namespace (flags both managers accept), and
    //    its readiness before the workload exists.
    let ns = env.namespace("bench").await.map_err(|e| e.to_string())?;
    let mut extra = a.workload.flags().to_vec();
    extra.extend(a.client.rest_config_flags());
    extra.extend(a.manager_args.iter().cloned());
    let started = Instant::now();
    let mut manager = Manager::start(
        &a.manager,
        a.client.watch_namespace.then_some(ns.name()),
        &extra,
        a.client.webhook_port,
        &format!("{}-manager.log", ns.name()),
    )?;
    println!(
        "manager {} pid {} (log {}), flags {}",
        a.manager.display(),
        manager.pid,
        manager.log.display(),
        extra.join(" ")
    );
    let result = match wait_ready(
        http,
        &mut manager,
        Duration::from_secs(a.ready_timeout_seconds),
    )
    .await
    {
        Ok(()) => {
            let ready = started.elapsed();
            println!(
                "manager ready (/readyz 200) after {:.1}s",
                ready.as_secs_f64()
            );
            rollout_run(env, &ns, a, http, &mut manager)
                .await
                .map(|r| (ready, r))
        }
        Err(e) => Err(e),
    };
    let peak = proc_status_mib(manager.pid, "VmHWM");
    manager.stop().await;
    let (ready, (rollout, writes, by_resource, baseline, pods)) = result?;
    println!();
    println!(
        "== kruise-bench rollout: {:?} of {pods} pods on {node_count} kwok nodes, client QPS {} burst {} ==",
        a.workload, a.client.qps, a.client.burst
    );
    println!("manager: {}", a.manager.display());
    println!(
        "in-place rollout (maxUnavailable 100%): {:.1}s to all updated and ready",
        rollout.as_secs_f64()
    );
    println!(
        "manager API writes during the rollout: {writes} ({:.2} per updated pod)",
        writes as f64 / pods as f64
    );
    for (key, n) in &by_resource {
        println!(
            "  {key}: {n} ({:.2} per updated pod)",
            *n as f64 / pods as f64
        );
    }
    match peak {
        Some(mb) => println!("manager peak RSS (VmHWM): {mb:.1} MiB"),
        None => println!("manager peak RSS: unavailable"),
    }
    println!(
        "baseline (bare client patches each pod once): {:.1}s",
        baseline.as_secs_f64()
    );
    println!(
        "ratio rollout / baseline: {:.2}",
        rollout.as_secs_f64() / baseline.as_secs_f64().max(0.001)
    );
    if let Some(path) = &a.json {
        let out = json!({
            "scenario": "rollout",
            "workload": format!("{:?}", a.workload),
            "manager": a.manager.display().to_string(),
            "pods": pods,
            "nodes": node_count,
            "qps": a.client.qps,
            "burst": a.client.burst,
            "clusterWide": !a.client.watch_namespace,
            "readySeconds": ready.as_secs_f64(),
            "rolloutSeconds": rollout.as_secs_f64(),
            "writes": writes,
            "writesPerPod": writes as f64 / pods as f64,
            "writesByResource": by_resource,
            "peakRssMiB": peak,
            "baselineSeconds": baseline.as_secs_f64(),
            "ratioToBaseline": rollout.as_secs_f64() / baseline.as_secs_f64().max(0.001),
        });
        std::fs::write(path, format!("{out:#}\n"))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("result written to {}", path.display());
    }
    ns.delete().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Waits until the manager's `/readyz` answers 200 (caches synced; for OpenKruise also its
/// webhook server), failing if the process exits first.
async fn wait_ready(
    http: &reqwest::Client,
    m: &mut Manager,
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        m.check_running()?;
        if let Ok((200, _)) = http_get(http, m.health, "/readyz").await {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "manager not ready (/readyz) after {timeout:?}; log {}",
                m.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn rollout_run(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &RolloutArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
) -> Result<
    (
        Duration,
        u64,
        std::collections::BTreeMap<String, u64>,
        Duration,
        usize,
    ),
    String,
> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let pods: Api<Pod> = ns.api();
    let cs_api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns.name(), &a.workload.resource());
    let cs: DynamicObject =
        serde_json::from_value(a.workload.object(a.pods)).map_err(|e| e.to_string())?;
    cs_api
        .create(&PostParams::default(), &cs)
        .await
        .map_err(|e| format!("creating the {:?}: {e}", a.workload))?;
    let n = a.pods;
    let progress = |want: &'static str| {
        move |ps: &[Pod]| {
            let upd = ps.iter().filter(|p| image(p) == want).count();
            let rdy = ps
                .iter()
                .filter(|p| image(p) == want && ready(p) && status_image_matches(p, want))
                .count();
            format!("pods={} updated={upd} updatedReady={rdy}", ps.len())
        }
    };
    println!("scale up to {n} pods (manager pid {})", manager.pid);
    wait_pods(
        &pods,
        "app=bench",
        "create",
        timeout,
        |ps| ps.len() == n && ps.iter().all(ready),
        progress("nginx:1.25"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    println!("in-place rollout nginx:1.25 -> nginx:1.26");
    manager.check_running()?;
    let w0 = scrape_requests(http, manager).await?;
    let r0 = writes_by_resource(&scrape_text(http, manager).await?);
    cs_api
        .patch("bench", &PatchParams::default(), &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}})))
        .await
        .map_err(|e| format!("patching the {:?}: {e}", a.workload))?;
    let want = "nginx:1.26";
    let rollout = wait_pods(
        &pods,
        "app=bench",
        "rollout",
        timeout,
        |ps| {
            ps.len() == n
                && ps
                    .iter()
                    .all(|p| image(p) == want && ready(p) && status_image_matches(p, want))
        },
        progress("nginx:1.26"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = scrape_requests(http, manager).await?.since(&w0).writes;
    let mut by_resource = writes_by_resource(&scrape_text(http, manager).await?);
    for (k, v) in by_resource.iter_mut() {
        *v = v.saturating_sub(r0.get(k).copied().unwrap_or(0));
    }
    by_resource.retain(|_, v| *v > 0);

    // Baseline: the same pods, patched directly (manager paused so it does not interfere).
    cs_api
        .patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(a.workload.pause()),
        )
        .await
        .map_err(|e| e.to_string())?;
    println!("baseline: a bare client patches each pod's image to nginx:1.27");
    let names: Vec<String> = pods
        .list(&ListParams::default().labels("app=bench"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    let start = Instant::now();
    let patch = Patch::Strategic(
        json!({"spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}),
    );
    let results: Vec<Result<Pod, kube::Error>> = futures::stream::iter(names.iter())
        .map(|name| {
            let pods = pods.clone();
            let patch = patch.clone();
            async move { pods.patch(name, &PatchParams::default(), &patch).await }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        return Err(format!("baseline patch: {e}"));
    }
    let remaining = timeout.saturating_sub(start.elapsed());
    wait_pods(
        &pods,
        "app=bench",
        "baseline",
        remaining,
        |ps| {
            ps.iter().all(|p| {
                image(p) == "nginx:1.27" && ready(p) && status_image_matches(p, "nginx:1.27")
            })
        },
        progress("nginx:1.27"),
    )
    .await?;
    let baseline = start.elapsed();
    Ok((rollout, writes, by_resource, baseline, n))
}

// ---------------------------------------------------------------------------------------------
// scale

/// What one manager's restart measured.
struct ScaleRow {
    label: String,
    /// 1-based round of `--rounds`.
    round: usize,
    /// Start to `/readyz` 200 (caches synced), if seen before all were reconciled.
    readyz: Option<Duration>,
    /// Start to every CloneSet's `observedGeneration == generation`.
    reconciled: Duration,
    /// Requests from start to all reconciled.
    requests_to_reconciled: Requests,
    /// Requests during the whole run (start to the end of the settle period).
    requests: Requests,
    peak_rss_mib: Option<f64>,
    settled_rss_mib: Option<f64>,
}

/// The bare-client baseline: one LIST of CloneSets and one LIST of pods.
struct Baseline {
    /// Median of 3 runs of both LISTs.
    list: Duration,
    clonesets: usize,
    pods: usize,
}

fn default_nodes(pods: usize) -> usize {
    pods.div_ceil(110) + 1
}

/// Whether `binary` is `hack/bench/openkruise-manager.sh`, the Go manager's wrapper: its
/// webhook configurations and CRD conversion must be undone once it has stopped.
fn is_openkruise(binary: &Path) -> bool {
    binary
        .file_name()
        .is_some_and(|n| n == "openkruise-manager.sh")
}

/// `openkruise-manager.sh --cleanup`: the Go manager's webhooks and CRD conversion removed, so
/// the next manager (and the benchmark's own writes) do not call a stopped webhook server.
fn openkruise_cleanup(binary: &Path) -> Result<(), String> {
    let status = Command::new(binary)
        .arg("--cleanup")
        .status()
        .map_err(|e| format!("{} --cleanup: {e}", binary.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} --cleanup: {status}", binary.display()))
    }
}

/// Median, minimum and maximum of `values` (`None` when empty).
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}

fn spread_json(values: &[f64]) -> serde_json::Value {
    match spread(values) {
        Some((median, min, max)) => json!({"median": median, "min": min, "max": max}),
        None => serde_json::Value::Null,
    }
}

/// `median [min–max]` with `unit`, or `n/a`.
fn spread_text(values: &[f64], unit: &str, decimals: usize) -> String {
    match spread(values) {
        Some((m, lo, hi)) if values.len() > 1 => {
            format!("{m:.decimals$}{unit} [{lo:.decimals$}–{hi:.decimals$}]")
        }
        Some((m, _, _)) => format!("{m:.decimals$}{unit}"),
        None => "n/a".into(),
    }
}

/// Per manager (in the order given): its rows' reconcile times, peak and settled RSS.
struct ScaleSummary {
    label: String,
    reconciled: Vec<f64>,
    peak: Vec<f64>,
    settled: Vec<f64>,
    writes_to_reconciled: Vec<f64>,
}

fn summarize(rows: &[ScaleRow]) -> Vec<ScaleSummary> {
    let mut out: Vec<ScaleSummary> = Vec::new();
    for r in rows {
        let i = match out.iter().position(|s| s.label == r.label) {
            Some(i) => i,
            None => {
                out.push(ScaleSummary {
                    label: r.label.clone(),
                    reconciled: vec![],
                    peak: vec![],
                    settled: vec![],
                    writes_to_reconciled: vec![],
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.reconciled.push(r.reconciled.as_secs_f64());
        s.peak.extend(r.peak_rss_mib);
        s.settled.extend(r.settled_rss_mib);
        s.writes_to_reconciled
            .push(r.requests_to_reconciled.writes as f64);
    }
    out
}

/// `a / b` of two medians, as text.
fn ratio_text(a: &[f64], b: &[f64]) -> String {
    match (spread(a), spread(b)) {
        (Some((a, _, _)), Some((b, _, _))) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "n/a".into(),
    }
}

fn ratio_value(a: &[f64], b: &[f64]) -> serde_json::Value {
    match (spread(a), spread(b)) {
        (Some((a, _, _)), Some((b, _, _))) if b > 0.0 => json!(a / b),
        _ => serde_json::Value::Null,
    }
}

async fn scale(a: ScaleArgs) -> Result<(), String> {
    if a.clonesets == 0 || a.pods_per_cloneset == 0 || a.rounds == 0 {
        return Err("--clonesets, --pods-per-cloneset and --rounds must be positive".into());
    }
    let creator = a
        .creator
        .clone()
        .or_else(|| a.managers.iter().find(|m| !is_openkruise(m)).cloned())
        .ok_or("no kruise-manager to create the pods with: pass --creator")?;
    for m in a.managers.iter().chain([&creator]) {
        if !m.is_file() {
            return Err(format!("manager binary {} not found", m.display()));
        }
    }
    if a.client.watch_namespace && a.managers.iter().any(|m| is_openkruise(m)) {
        return Err("--watch-namespace: OpenKruise v1.9.0 panics with --namespace".into());
    }
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    let http = http_client()?;
    let total_pods = a.clonesets * a.pods_per_cloneset;
    let node_count = ensure_nodes(&env, a.nodes.unwrap_or(default_nodes(total_pods))).await?;
    install_crds(&env).await.map_err(|e| e.to_string())?;
    admission::ensure_kruise_namespace(&env).await?;
    let ns = env
        .namespace(&a.namespace_prefix)
        .await
        .map_err(|e| e.to_string())?;
    println!("namespace: {}", ns.name());
    // The managers are owned (and so killed on failure) inside `scale_run`, before the namespace
    // goes.
    let result = scale_run(&env, &ns, &a, &creator, &http).await;
    // The managers served the webhooks (as users run them); their configurations fail closed
    // without a manager.
    let cleaned = admission::delete_webhook_configurations(&env).await;
    let result = result.and_then(|r| cleaned.map(|()| r));
    if a.managers.iter().any(|m| is_openkruise(m)) {
        let go = a
            .managers
            .iter()
            .find(|m| is_openkruise(m))
            .expect("checked");
        openkruise_cleanup(go)?;
    }
    let deleted = ns.delete().await;
    let (rows, baseline) = result?;
    deleted.map_err(|e| format!("deleting the namespace: {e}"))?;

    println!();
    println!(
        "== kruise-bench scale: {} CloneSets x {} pods = {total_pods} pods on {node_count} kwok nodes, client QPS {} burst {}, {} ==",
        a.clonesets,
        a.pods_per_cloneset,
        a.client.qps,
        a.client.burst,
        if a.client.watch_namespace {
            "one namespace"
        } else {
            "cluster-wide"
        }
    );
    println!(
        "baseline: a bare client LISTs {} CloneSets + {} pods once: {:.3}s (median of 3)",
        baseline.clonesets,
        baseline.pods,
        baseline.list.as_secs_f64()
    );
    println!(
        "per run: start with every CloneSet's generation bumped, until all reconciled; requests until the end of a {}s settle",
        a.settle_seconds
    );
    const BASELINE: &str = "baseline (bare LIST of all)";
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .chain([BASELINE.len()])
        .max()
        .unwrap_or_default();
    let widths = [width, 5, 8, 13, 8, 9, 7, 7, 10, 11];
    let line = |cells: [String; 10]| {
        let mut out = format!("{:<width$}", cells[0]);
        for (cell, w) in cells.iter().zip(widths).skip(1) {
            out.push_str(&format!("  {cell:>w$}"));
        }
        out.trim_end().to_string()
    };
    let secs = |d: Duration| format!("{:.3}s", d.as_secs_f64());
    let mib = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1} MiB"));
    let header = line(
        [
            "manager",
            "round",
            "readyz",
            "reconcile all",
            "x LIST",
            "requests",
            "reads",
            "writes",
            "peak RSS",
            "RSS settled",
        ]
        .map(String::from),
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for r in &rows {
        println!(
            "{}",
            line([
                r.label.clone(),
                r.round.to_string(),
                r.readyz.map_or("n/a".to_string(), secs),
                secs(r.reconciled),
                format!(
                    "{:.1}x",
                    r.reconciled.as_secs_f64() / baseline.list.as_secs_f64().max(0.001)
                ),
                r.requests.total().to_string(),
                r.requests.reads.to_string(),
                r.requests.writes.to_string(),
                mib(r.peak_rss_mib),
                mib(r.settled_rss_mib),
            ])
        );
    }
    println!(
        "{}",
        line([
            BASELINE.to_string(),
            String::new(),
            String::new(),
            secs(baseline.list),
            "1.0x".into(),
            "2".into(),
            "2".into(),
            "0".into(),
            String::new(),
            String::new(),
        ])
    );
    for r in &rows {
        let q = r.requests_to_reconciled;
        println!(
            "{} (round {}): until all reconciled {} requests ({} reads, {} writes; {:.2} writes per CloneSet)",
            r.label,
            r.round,
            q.total(),
            q.reads,
            q.writes,
            q.writes as f64 / a.clonesets as f64
        );
    }

    // Medians and ranges per manager, and ratios to the Go manager when it was measured.
    let summary = summarize(&rows);
    let reference = summary.iter().find(|s| is_openkruise(Path::new(&s.label)));
    println!();
    println!(
        "summary (median [min–max] of {} round(s)){}:",
        a.rounds,
        reference.map_or(String::new(), |r| format!("; ratios to {}", r.label))
    );
    for s in &summary {
        let ratios = match reference {
            Some(r) if r.label != s.label => format!(
                "; ratio to Go: reconcile all {}, peak RSS {}, settled RSS {}",
                ratio_text(&s.reconciled, &r.reconciled),
                ratio_text(&s.peak, &r.peak),
                ratio_text(&s.settled, &r.settled)
            ),
            _ => String::new(),
        };
        println!(
            "  {}: reconcile all {} ({} the bare LIST), peak RSS {}, settled RSS {}{ratios}",
            s.label,
            spread_text(&s.reconciled, "s", 2),
            ratio_text(&s.reconciled, &[baseline.list.as_secs_f64()]),
            spread_text(&s.peak, " MiB", 1),
            spread_text(&s.settled, " MiB", 1),
        );
    }

    if let Some(path) = &a.json {
        let req = |q: &Requests| json!({"reads": q.reads, "writes": q.writes, "total": q.total()});
        let runs: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "manager": r.label,
                    "round": r.round,
                    "readyzSeconds": r.readyz.map(|d| d.as_secs_f64()),
                    "reconcileAllSeconds": r.reconciled.as_secs_f64(),
                    "ratioToBaseline": r.reconciled.as_secs_f64() / baseline.list.as_secs_f64().max(0.001),
                    "requestsToReconciled": req(&r.requests_to_reconciled),
                    "requests": req(&r.requests),
                    "peakRssMiB": r.peak_rss_mib,
                    "settledRssMiB": r.settled_rss_mib,
                })
            })
            .collect();
        let summaries: Vec<serde_json::Value> = summary
            .iter()
            .map(|s| {
                let mut v = json!({
                    "manager": s.label,
                    "runs": s.reconciled.len(),
                    "reconcileAllSeconds": spread_json(&s.reconciled),
                    "peakRssMiB": spread_json(&s.peak),
                    "settledRssMiB": spread_json(&s.settled),
                    "writesToReconciled": spread_json(&s.writes_to_reconciled),
                });
                if let Some(r) = reference {
                    v["ratioToReference"] = json!({
                        "reconcileAll": ratio_value(&s.reconciled, &r.reconciled),
                        "peakRss": ratio_value(&s.peak, &r.peak),
                        "settledRss": ratio_value(&s.settled, &r.settled),
                    });
                }
                v
            })
            .collect();
        let out = json!({
            "scenario": "scale",
            "clonesets": a.clonesets,
            "podsPerCloneSet": a.pods_per_cloneset,
            "pods": total_pods,
            "nodes": node_count,
            "qps": a.client.qps,
            "burst": a.client.burst,
            "clusterWide": !a.client.watch_namespace,
            "rounds": a.rounds,
            "settleSeconds": a.settle_seconds,
            "managerArgs": a.manager_args,
            "baseline": {
                "listSeconds": baseline.list.as_secs_f64(),
                "clonesets": baseline.clonesets,
                "pods": baseline.pods,
            },
            "reference": reference.map(|r| r.label.clone()),
            "runs": runs,
            "summary": summaries,
        });
        std::fs::write(path, format!("{out:#}\n"))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("result written to {}", path.display());
    }
    Ok(())
}

async fn scale_run(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &ScaleArgs,
    creator: &Path,
    http: &reqwest::Client,
) -> Result<(Vec<ScaleRow>, Baseline), String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let cs_api = cloneset_api(env, ns.name());
    let pods: Api<Pod> = ns.api();
    let n = a.clonesets;
    let m = a.pods_per_cloneset as i64;
    let names: Vec<String> = (0..n).map(|i| format!("cs-{i:04}")).collect();
    let watch_ns = a.client.watch_namespace.then_some(ns.name());

    // b. The creator creates every pod, unthrottled.
    let mut create_args = a.manager_args.clone();
    create_args.extend([
        "--rest-config-qps=100000".to_string(),
        "--rest-config-burst=100000".to_string(),
    ]);
    let mut manager = Manager::start(
        creator,
        watch_ns,
        &create_args,
        a.client.webhook_port,
        &format!("{}-create.log", ns.name()),
    )?;
    println!(
        "creating {n} CloneSets x {m} pods (manager {} pid {}, log {})",
        creator.display(),
        manager.pid,
        manager.log.display()
    );
    // Its webhooks must answer before the first CloneSet is created: a webhook configuration
    // left by an earlier run (failure policy Fail) points at this port already.
    wait_ready(http, &mut manager, timeout).await?;
    let created: Vec<Result<DynamicObject, kube::Error>> = futures::stream::iter(names.iter())
        .map(|name| {
            let api = cs_api.clone();
            let cs: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": name},
                "spec": {
                    "replicas": m,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                }
            }))
            .expect("valid CloneSet");
            async move { api.create(&PostParams::default(), &cs).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    if let Some(Err(e)) = created.into_iter().find(|r| r.is_err()) {
        return Err(format!("creating CloneSets: {e}"));
    }
    let all_ready = |list: &[DynamicObject]| {
        list.len() == n
            && list.iter().all(|cs| {
                observed(cs)
                    && status_int(cs, "readyReplicas") == m
                    && status_int(cs, "replicas") == m
            })
    };
    let progress = |list: &[DynamicObject]| {
        let ready_cs = list
            .iter()
            .filter(|cs| observed(cs) && status_int(cs, "readyReplicas") == m)
            .count();
        let ready_pods: i64 = list.iter().map(|cs| status_int(cs, "readyReplicas")).sum();
        let observed_cs = list.iter().filter(|cs| observed(cs)).count();
        format!(
            "CloneSets ready {ready_cs}/{n}, observed {observed_cs}/{n}, ready pods {ready_pods}/{}",
            n as i64 * m
        )
    };
    let mut waited = std::pin::pin!(wait_clonesets(
        &cs_api, "create", timeout, all_ready, progress
    ));
    // Fail early if the manager dies while pods are being created.
    let (create_time, _) = loop {
        tokio::select! {
            r = &mut waited => break r?,
            _ = tokio::time::sleep(Duration::from_secs(1)) => manager.check_running()?,
        }
    };
    println!(
        "all {n} CloneSets ready in {:.1}s; stopping the manager",
        create_time.as_secs_f64()
    );
    manager.stop().await;
    drop(manager);
    // The manager served the webhooks (failure policy Fail): without it the generation bumps
    // below would be refused, as users' writes would be.
    admission::delete_webhook_configurations(env).await?;

    // d. Baseline: a bare client lists everything once (median of 3).
    let mut runs = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..3 {
        let start = Instant::now();
        let c = cs_api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("baseline LIST CloneSets: {e}"))?
            .items
            .len();
        let p = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("baseline LIST pods: {e}"))?
            .items
            .len();
        runs.push(start.elapsed());
        counts = (c, p);
    }
    runs.sort();
    let baseline = Baseline {
        list: runs[1],
        clonesets: counts.0,
        pods: counts.1,
    };
    println!(
        "baseline: LIST {} CloneSets + {} pods in {:.3}s (median of 3)",
        baseline.clonesets,
        baseline.pods,
        baseline.list.as_secs_f64()
    );

    // c. Each manager in turn (and again for each round), restarted over the same objects with
    //    generations bumped.
    let mut measured_args = a.client.rest_config_flags().to_vec();
    measured_args.extend(a.manager_args.iter().cloned());
    let schedule: Vec<(usize, &PathBuf)> = (1..=a.rounds)
        .flat_map(|round| a.managers.iter().map(move |m| (round, m)))
        .collect();
    let mut rows = Vec::new();
    for (i, (round, binary)) in schedule.iter().copied().enumerate() {
        // A spec change that changes no pod, no revision and no availability.
        let history_limit = 20 + i as i64;
        println!();
        println!(
            "[{}/{}] round {round}: {}: bumping every CloneSet's generation (spec.revisionHistoryLimit = {history_limit})",
            i + 1,
            schedule.len(),
            binary.display()
        );
        let patch = Patch::Merge(json!({"spec": {"revisionHistoryLimit": history_limit}}));
        let patched: Vec<Result<DynamicObject, kube::Error>> = futures::stream::iter(names.iter())
            .map(|name| {
                let api = cs_api.clone();
                let patch = patch.clone();
                async move { api.patch(name, &PatchParams::default(), &patch).await }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        for r in patched {
            let cs = r.map_err(|e| format!("patching CloneSets: {e}"))?;
            if observed(&cs) {
                return Err(format!(
                    "CloneSet {} generation {} not bumped by the patch",
                    cs.metadata.name.as_deref().unwrap_or(""),
                    generation(&cs)
                ));
            }
        }
        let before = pod_uids(&pods).await?;
        if before.len() != n * m as usize {
            return Err(format!(
                "{} pods before the restart, expected {}",
                before.len(),
                n * m as usize
            ));
        }

        let log_name = format!("{}-manager-{i}.log", ns.name());
        let start = Instant::now();
        let mut manager = Manager::start(
            binary,
            watch_ns,
            &measured_args,
            a.client.webhook_port,
            &log_name,
        )?;
        println!(
            "  started pid {} (log {})",
            manager.pid,
            manager.log.display()
        );
        let row = scale_measure(
            a,
            http,
            &cs_api,
            &pods,
            &mut manager,
            binary,
            round,
            start,
            &before,
        )
        .await;
        manager.stop().await;
        drop(manager);
        if is_openkruise(binary) {
            openkruise_cleanup(binary)?;
        } else {
            admission::delete_webhook_configurations(env).await?;
        }
        rows.push(row?);
    }
    Ok((rows, baseline))
}

/// One measured restart: waits for every CloneSet's first reconcile, settles, reads RSS and
/// requests, and checks that no pod was created or deleted.
#[allow(clippy::too_many_arguments)]
async fn scale_measure(
    a: &ScaleArgs,
    http: &reqwest::Client,
    cs_api: &Api<DynamicObject>,
    pods: &Api<Pod>,
    manager: &mut Manager,
    binary: &Path,
    round: usize,
    start: Instant,
    before: &BTreeSet<String>,
) -> Result<ScaleRow, String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let n = a.clonesets;
    let m = a.pods_per_cloneset as i64;
    let mut readyz = None;
    let mut last_print = Instant::now();
    let reconciled = loop {
        manager.check_running()?;
        if readyz.is_none()
            && let Ok((200, _)) = http_get(http, manager.health, "/readyz").await
        {
            readyz = Some(start.elapsed());
        }
        let list = cs_api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing CloneSets: {e}"))?
            .items;
        let elapsed = start.elapsed();
        let done = list.iter().filter(|cs| observed(cs)).count();
        if list.len() == n && done == n {
            println!(
                "  reconciled {done}/{n} (done in {:.2}s)",
                elapsed.as_secs_f64()
            );
            break elapsed;
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  reconciled {done}/{n}, readyz {} ({:.0}s)",
                if readyz.is_some() { "200" } else { "not yet" },
                elapsed.as_secs_f64()
            );
            last_print = Instant::now();
        }
        if elapsed > timeout {
            return Err(format!(
                "{}: {done}/{n} CloneSets reconciled within {timeout:?} (log {})",
                binary.display(),
                manager.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let requests_to_reconciled = match scrape_requests(http, manager).await {
        Ok(r) => r,
        Err(_) => {
            // The metrics server may come up after the first reconciles on a tiny run.
            wait_metrics(http, manager, Duration::from_secs(30)).await?;
            scrape_requests(http, manager).await?
        }
    };
    println!("  settling {}s", a.settle_seconds);
    tokio::time::sleep(Duration::from_secs(a.settle_seconds)).await;
    manager.check_running()?;
    let settled_rss_mib = proc_status_mib(manager.pid, "VmRSS");
    let peak_rss_mib = proc_status_mib(manager.pid, "VmHWM");
    let requests = scrape_requests(http, manager).await?;

    // The restart must not have touched any pod.
    let after = pod_uids(pods).await?;
    if &after != before {
        let created = after.difference(before).count();
        let deleted = before.difference(&after).count();
        return Err(format!(
            "{}: the restart created {created} and deleted {deleted} pods (before {}, after {}); log {}",
            binary.display(),
            before.len(),
            after.len(),
            manager.log.display()
        ));
    }
    let list = cs_api
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing CloneSets: {e}"))?
        .items;
    let all_ready = list.len() == n
        && list.iter().all(|cs| {
            observed(cs) && status_int(cs, "readyReplicas") == m && status_int(cs, "replicas") == m
        });
    if !all_ready {
        return Err(format!(
            "{}: after the settle period not every CloneSet is observed with {m} ready replicas",
            binary.display(),
        ));
    }
    println!(
        "  pods unchanged ({}); requests {} (reads {}, writes {}); peak RSS {}, settled {}",
        after.len(),
        requests.total(),
        requests.reads,
        requests.writes,
        peak_rss_mib.map_or("n/a".into(), |v| format!("{v:.1} MiB")),
        settled_rss_mib.map_or("n/a".into(), |v| format!("{v:.1} MiB")),
    );
    Ok(ScaleRow {
        label: binary.display().to_string(),
        round,
        readyz,
        reconciled,
        requests_to_reconciled,
        requests,
        peak_rss_mib,
        settled_rss_mib,
    })
}

/// The UIDs of the namespace's pods that are not being deleted; fails if any is being deleted.
async fn pod_uids(pods: &Api<Pod>) -> Result<BTreeSet<String>, String> {
    let list = pods
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing pods: {e}"))?
        .items;
    let deleting = list
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .count();
    if deleting > 0 {
        return Err(format!("{deleting} pods are being deleted"));
    }
    Ok(list.into_iter().filter_map(|p| p.metadata.uid).collect())
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        None => rollout(cli.rollout).await,
        Some(Scenario::Rollout(a)) => rollout(a).await,
        Some(Scenario::Scale(a)) => scale(a).await,
        Some(Scenario::Admission(a)) => admission::admission(a).await,
    };
    if let Err(e) = result {
        eprintln!("kruise-bench: FAILED: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_samples_with_labels_escapes_and_timestamps() {
        let text = "# HELP rest_client_requests Number of HTTP requests.\n\
            # TYPE rest_client_requests counter\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"GET\"} 12\n\
            rest_client_requests_total{code=\"201\",host=\"api\",method=\"POST\"} 3 1700000000000\n\
            weird{a=\"x\\\"y,}\", b=\"\\\\\"} 1.5e2\n\
            up 1\n\
            \n\
            broken{a=\"x\" 1\n";
        let s = parse_prometheus(text);
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0].name, "rest_client_requests_total");
        assert_eq!(s[0].label("method"), Some("GET"));
        assert_eq!(s[0].value, 12.0);
        assert_eq!(s[1].value, 3.0);
        assert_eq!(s[2].label("a"), Some("x\"y,}"));
        assert_eq!(s[2].label("b"), Some("\\"));
        assert_eq!(s[2].value, 150.0);
        assert_eq!(
            s[3],
            Sample {
                name: "up".into(),
                labels: vec![],
                value: 1.0
            }
        );
    }

    #[test]
    fn requests_split_reads_and_writes() {
        let text = "rest_client_requests_total{code=\"200\",host=\"api\",method=\"GET\"} 10\n\
            rest_client_requests_total{code=\"404\",host=\"api\",method=\"GET\"} 2\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"PATCH\"} 4\n\
            rest_client_requests_total{code=\"201\",host=\"api\",method=\"POST\"} 1\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"DELETE\"} 1\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"PUT\"} 2\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"OPTIONS\"} 1\n\
            controller_runtime_reconcile_total{controller=\"cloneset\"} 99\n";
        let r = Requests::from_metrics(text);
        assert_eq!(
            r,
            Requests {
                reads: 12,
                writes: 8,
                other: 1
            }
        );
        assert_eq!(r.total(), 21);
        let later = Requests {
            reads: 20,
            writes: 9,
            other: 1,
        };
        assert_eq!(
            later.since(&r),
            Requests {
                reads: 8,
                writes: 1,
                other: 0
            }
        );
    }

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[3.0]), Some((3.0, 3.0, 3.0)));
        assert_eq!(spread(&[5.0, 1.0, 3.0]), Some((3.0, 1.0, 5.0)));
        assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread_text(&[2.0, 1.0], " MiB", 1), "1.5 MiB [1.0–2.0]");
        assert_eq!(spread_text(&[2.0], "s", 2), "2.00s");
        assert_eq!(ratio_text(&[1.0, 3.0], &[4.0]), "0.50x");
    }

    #[test]
    fn openkruise_wrapper_is_recognised_by_file_name() {
        assert!(is_openkruise(Path::new("hack/bench/openkruise-manager.sh")));
        assert!(!is_openkruise(Path::new("target/release/kruise-manager")));
    }

    #[test]
    fn default_nodes_fit_110_pods_each_plus_one() {
        assert_eq!(default_nodes(10_000), 92);
        assert_eq!(default_nodes(15), 2);
        assert_eq!(default_nodes(110), 2);
    }

    #[test]
    fn cli_keeps_rollout_flags_at_top_level_and_parses_scale() {
        let cli = Cli::try_parse_from(["kruise-bench", "--pods", "20", "--manager", "m"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.rollout.pods, 20);
        assert_eq!(cli.rollout.manager, PathBuf::from("m"));
        assert_eq!(cli.rollout.nodes, 10);

        let cli = Cli::try_parse_from([
            "kruise-bench",
            "scale",
            "--manager",
            "a",
            "--managers",
            "b,c",
            "--manager-arg=--cloneset-workers=8",
        ])
        .unwrap();
        let Some(Scenario::Scale(s)) = cli.command else {
            panic!("scale expected");
        };
        assert_eq!(s.managers, ["a", "b", "c"].map(PathBuf::from));
        assert_eq!(s.manager_args, ["--cloneset-workers=8"]);
        assert_eq!(
            (s.clonesets, s.pods_per_cloneset, s.nodes),
            (100, 100, None)
        );

        let cli = Cli::try_parse_from(["kruise-bench", "scale"]).unwrap();
        let Some(Scenario::Scale(s)) = cli.command else {
            panic!("scale expected");
        };
        assert_eq!(s.managers, [PathBuf::from("target/release/kruise-manager")]);
        assert_eq!(
            (
                s.client.qps,
                s.client.burst,
                s.rounds,
                s.client.watch_namespace
            ),
            (30, 50, 1, false)
        );
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
