//! `kruise-bench admission`: the pod webhook (`/mutate-pod`) with the manager run as users run
//! it (webhook server on, `--webhook-host 127.0.0.1`, `POD_NAMESPACE=kruise-system`, watching
//! every namespace; leader election off), on a testbed the benchmark has to itself (it installs
//! and deletes the cluster-wide `kruise-*-webhook-configuration`s, and refuses to start while
//! they exist).
//!
//! Part 1, **injection latency** (issue #14):
//! 1. Baseline: no manager, no webhook configuration. `--pods` bare pods (`spec.nodeName` of a
//!    kwok node, round robin) are created in a fresh namespace, paced at `--rate` per second
//!    (create `i` starts no earlier than `i / rate` after the first, at most `--concurrency` in
//!    flight), after `--warmup` unmeasured ones; the bench times every create request.
//! 2. The manager is started; `--sidecarsets` SidecarSets are installed, `--matching` of them
//!    selecting the benchmark's pods (one sidecar container each; half by `matchLabels`, half by
//!    a `matchExpressions` `In`; half of each pinning the benchmark's namespace by
//!    `namespaceSelector`), the others selecting labels no pod carries (half pinning the
//!    namespace too). Once the pod webhook's `matchConditions` names every SidecarSet and a probe
//!    pod comes back injected, the same creates run again, in a fresh namespace.
//! 3. Reported: client-side create latency (p50/p99/mean/max) with and without the webhook;
//!    `/mutate-pod` latency from the manager's own `controller_runtime_webhook_latency_seconds`
//!    (delta over the measured creates; p50/p99 interpolated inside its buckets — 0.25, 0.5, 1,
//!    2, 3, 4 ms, then Prometheus' defaults from 5 ms — as `histogram_quantile` does, plus the
//!    exact mean from `_sum / _count` and the share of admissions ≤ 5 ms, the target); the
//!    `mpod.kb.io` calls as the API server timed them; manager CPU seconds (`/proc/<pid>/stat`
//!    utime + stime, `getconf CLK_TCK`) from the first measured create to 2 s after the last,
//!    as cores used, and its peak RSS (VmHWM). Every created pod must come back with all its sidecars.
//!
//! Part 2, **blast radius** (issue #21): no SidecarSet; a Deployment of `--deployment-pods`
//! plain pods (no Kruise owner, no launch priority) in a fresh namespace, three times: with no
//! manager and no webhook configuration (baseline), with the manager (`--pod-webhook-scope
//! needed`, the default) and with `--pod-webhook-scope all` (OpenKruise's configuration, every
//! pod calls the webhook), otherwise the same flags. Reported: `/mutate-pod` admission calls the
//! manager received (`controller_runtime_webhook_requests_total` delta; target 0 with `needed`),
//! their p99, and the time from the Deployment's creation to all pods created and to all Ready
//! (Deployment status), with the ratio to the baseline.
//!
//! The result is printed as tables and written as JSON (`--json`, default
//! `target/kruise-bench/admission.json`).
//!
//! Everything the run creates is deleted at the end: namespaces, SidecarSets, the webhook
//! configurations, the certificate Secret (and `kruise-system`) if it created them, kwok nodes it
//! added.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::DeleteParams;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::*;

/// The manager's own namespace (`POD_NAMESPACE`), as OpenKruise installs it.
const KRUISE_NAMESPACE: &str = kruise_e2e::manager::KRUISE_NAMESPACE;
const MUTATING: &str = "kruise-mutating-webhook-configuration";
const VALIDATING: &str = "kruise-validating-webhook-configuration";
const CERT_SECRET: &str = "kruise-webhook-certs";
const MUTATE_POD: &str = "/mutate-pod";
/// Label of every SidecarSet the run creates (deleted by it at the end).
const SIDECARSET_LABEL: &str = "kruise-bench";
const SIDECARSET_LABEL_VALUE: &str = "admission";
/// Labels of the injection benchmark's pods.
const POD_APP: &str = "bench-admission";
const POD_MESH: &str = "on";

#[derive(Debug, Clone, Args)]
pub(crate) struct AdmissionArgs {
    /// The kruise-manager binary to measure.
    #[arg(long, default_value = "target/release/kruise-manager")]
    manager: PathBuf,

    /// Port of the manager's webhook server (`--webhook-port`; the API server calls
    /// https://127.0.0.1:<port>).
    #[arg(long, default_value_t = 9876)]
    webhook_port: u16,

    /// Extra flag passed to every manager (repeatable), e.g. --manager-arg=-v=2. Every manager
    /// of the run gets the same flags (part 2 adds `--pod-webhook-scope all` to its last one).
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    manager_args: Vec<String>,

    /// Which part to run.
    #[arg(long, value_enum, default_value_t = Part::Both)]
    part: Part,

    /// Minimum number of kwok nodes (missing ones are created, and deleted at the end).
    #[arg(long, default_value_t = 10)]
    nodes: usize,

    /// Part 1: SidecarSets installed.
    #[arg(long, default_value_t = 50)]
    sidecarsets: usize,

    /// Part 1: how many of them select the benchmark's pods (one sidecar each).
    #[arg(long, default_value_t = 10)]
    matching: usize,

    /// Part 1: pods created (measured) per case.
    #[arg(long, default_value_t = 2000)]
    pods: usize,

    /// Part 1: target create rate (pods per second).
    #[arg(long, default_value_t = 200.0)]
    rate: f64,

    /// Part 1: creates in flight at most.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,

    /// Part 1: unmeasured creates before the measured ones (connections, caches), per case.
    #[arg(long, default_value_t = 50)]
    warmup: usize,

    /// Part 1: seconds the manager's CPU use is measured with nothing happening, before the
    /// measured creates (its background use, reported beside the run's).
    #[arg(long, default_value_t = 5)]
    idle_seconds: u64,

    /// Part 2: replicas of the plain Deployment.
    #[arg(long, default_value_t = 1000)]
    deployment_pods: usize,

    /// Timeout of each wait, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_seconds: u64,

    /// Where the machine-readable result is written (JSON; relative paths from the repository
    /// root). Written on failure too, with `error` set.
    #[arg(long, default_value = "target/kruise-bench/admission.json")]
    json: PathBuf,
}

/// The parts of the admission benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Part {
    /// Injection latency with SidecarSets installed (issue #14).
    Injection,
    /// Admission calls and time to Ready for plain Deployment pods (issue #21).
    Blast,
    /// Both, injection first.
    Both,
}

// ---------------------------------------------------------------------------------------------
// Measurements: histograms, quantiles, CPU

/// One histogram of a Prometheus exposition: cumulative `(le, count)` buckets sorted by `le`
/// (the last one `+Inf`), `_sum` and `_count`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Histogram {
    buckets: Vec<(f64, f64)>,
    sum: f64,
    count: f64,
}

impl Histogram {
    /// The histogram `name` summed over the series `select` keeps (as `sum by (le)`); empty
    /// when absent.
    fn from_samples(samples: &[Sample], name: &str, select: impl Fn(&Sample) -> bool) -> Self {
        let mut h = Self::default();
        let (bucket, sum, count) = (
            format!("{name}_bucket"),
            format!("{name}_sum"),
            format!("{name}_count"),
        );
        for s in samples.iter().filter(|s| select(s)) {
            if s.name == bucket {
                let le = match s.label("le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(v) => match v.parse() {
                        Ok(v) => v,
                        Err(_) => continue,
                    },
                    None => continue,
                };
                match h.buckets.iter_mut().find(|(l, _)| *l == le) {
                    Some((_, c)) => *c += s.value,
                    None => h.buckets.push((le, s.value)),
                }
            } else if s.name == sum {
                h.sum += s.value;
            } else if s.name == count {
                h.count += s.value;
            }
        }
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        h
    }

    /// The observations made after `earlier` (same buckets; a missing earlier bucket is 0).
    fn since(&self, earlier: &Self) -> Self {
        let before = |le: f64| {
            earlier
                .buckets
                .iter()
                .find(|(l, _)| *l == le)
                .map_or(0.0, |(_, c)| *c)
        };
        Self {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, c)| (le, (c - before(le)).max(0.0)))
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: (self.count - earlier.count).max(0.0),
        }
    }

    /// Prometheus' `histogram_quantile(q, ...)`: the bucket holding rank `q * count` is found
    /// and the value interpolated linearly inside it (its lower bound 0 for the first bucket);
    /// a rank in the `+Inf` bucket answers the highest finite bound. `None` without
    /// observations (Prometheus: NaN).
    fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.buckets.len();
        if n < 2 || !self.buckets[n - 1].0.is_infinite() {
            return None;
        }
        let total = self.buckets[n - 1].1;
        if total <= 0.0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * total;
        let i = self.buckets[..n - 1]
            .iter()
            .position(|&(_, c)| c >= rank)
            .unwrap_or(n - 1);
        if i == n - 1 {
            return Some(self.buckets[n - 2].0);
        }
        let (end, count) = self.buckets[i];
        if i == 0 && end <= 0.0 {
            return Some(end);
        }
        let (start, prev) = if i == 0 {
            (0.0, 0.0)
        } else {
            self.buckets[i - 1]
        };
        let in_bucket = count - prev;
        if in_bucket <= 0.0 {
            return Some(end);
        }
        Some(start + (end - start) * (rank - prev) / in_bucket)
    }

    /// Share of the observations at most `le` (an exact bucket bound).
    fn fraction_le(&self, le: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        let (_, c) = self.buckets.iter().find(|(l, _)| *l == le)?;
        (total > 0.0).then(|| c / total)
    }

    fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}

/// `/mutate-pod` admissions counted by the manager (`controller_runtime_webhook_requests_total`,
/// every code) and its latency histogram.
#[derive(Debug, Clone, Default, PartialEq)]
struct PodWebhook {
    requests: f64,
    latency: Histogram,
    /// `kruise_webhook_cpu_seconds{webhook="/mutate-pod"}`: the handler thread's CPU time per
    /// admission (empty for a manager without it, e.g. OpenKruise's).
    cpu: Histogram,
    /// Reconciles per controller (`controller_runtime_reconcile_total`) and the seconds they
    /// took (`controller_runtime_reconcile_time_seconds_sum`): the manager's other work, which
    /// shares its CPU with the webhook.
    reconciles: BTreeMap<String, (f64, f64)>,
}

impl PodWebhook {
    fn from_metrics(text: &str) -> Self {
        let samples = parse_prometheus(text);
        Self {
            requests: samples
                .iter()
                .filter(|s| {
                    s.name == "controller_runtime_webhook_requests_total"
                        && s.label("webhook") == Some(MUTATE_POD)
                })
                .map(|s| s.value)
                .sum(),
            latency: Histogram::from_samples(
                &samples,
                "controller_runtime_webhook_latency_seconds",
                |s| s.label("webhook") == Some(MUTATE_POD),
            ),
            cpu: Histogram::from_samples(&samples, "kruise_webhook_cpu_seconds", |s| {
                s.label("webhook") == Some(MUTATE_POD)
            }),
            reconciles: {
                let mut r: BTreeMap<String, (f64, f64)> = BTreeMap::new();
                for s in &samples {
                    let Some(c) = s.label("controller") else {
                        continue;
                    };
                    if s.name == "controller_runtime_reconcile_total" {
                        r.entry(c.to_owned()).or_default().0 += s.value;
                    } else if s.name == "controller_runtime_reconcile_time_seconds_sum" {
                        r.entry(c.to_owned()).or_default().1 += s.value;
                    }
                }
                r
            },
        }
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            requests: (self.requests - earlier.requests).max(0.0),
            latency: self.latency.since(&earlier.latency),
            cpu: self.cpu.since(&earlier.cpu),
            reconciles: self
                .reconciles
                .iter()
                .map(|(c, &(n, t))| {
                    let (n0, t0) = earlier.reconciles.get(c).copied().unwrap_or_default();
                    (c.clone(), ((n - n0).max(0.0), (t - t0).max(0.0)))
                })
                .filter(|(_, (n, _))| *n > 0.0)
                .collect(),
        }
    }

    /// `controller N (T s)` for each controller that reconciled, or `none`.
    fn reconciles_text(&self) -> String {
        if self.reconciles.is_empty() {
            return "none".into();
        }
        self.reconciles
            .iter()
            .map(|(c, (n, t))| format!("{c} {n} ({t:.2} s)"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The pod webhook as the API server sees it: `mpod.kb.io` CREATE calls
/// (`apiserver_admission_webhook_admission_duration_seconds`: network, TLS, HTTP and the
/// manager's queueing included; buckets 5, 25, 100, 500 ms, 1, 2.5, 10, 25 s) and the pods its
/// `matchConditions` kept from calling it (`apiserver_admission_match_condition_exclusions_total`).
#[derive(Debug, Clone, Default, PartialEq)]
struct ApiserverView {
    calls: Histogram,
    excluded: f64,
}

impl ApiserverView {
    fn from_metrics(text: &str) -> Self {
        let samples = parse_prometheus(text);
        let pod_webhook = |s: &Sample| {
            s.label("name") == Some("mpod.kb.io") && s.label("operation") == Some("CREATE")
        };
        Self {
            calls: Histogram::from_samples(
                &samples,
                "apiserver_admission_webhook_admission_duration_seconds",
                pod_webhook,
            ),
            excluded: samples
                .iter()
                .filter(|s| {
                    s.name == "apiserver_admission_match_condition_exclusions_total"
                        && pod_webhook(s)
                })
                .map(|s| s.value)
                .sum(),
        }
    }

    fn since(&self, earlier: &Self) -> Self {
        Self {
            calls: self.calls.since(&earlier.calls),
            excluded: (self.excluded - earlier.excluded).max(0.0),
        }
    }
}

async fn scrape_apiserver(env: &TestEnv) -> Result<ApiserverView, String> {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let text = env
        .client
        .request_text(req)
        .await
        .map_err(|e| format!("API server /metrics: {e}"))?;
    Ok(ApiserverView::from_metrics(&text))
}

/// The 1-minute load average of the machine (`/proc/loadavg`).
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

async fn scrape_pod_webhook(http: &reqwest::Client, m: &Manager) -> Result<PodWebhook, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(PodWebhook::from_metrics(&body)),
        (status, _) => Err(format!("manager /metrics answered {status}")),
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux' usual value, if it cannot be run).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|t: &f64| *t > 0.0)
        .unwrap_or(100.0)
}

/// CPU seconds (user + system, `utime` and `stime` of `/proc/<pid>/stat`) a process used.
fn cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|t| t / ticks)
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line, in ticks; the command name
/// (field 2, in parentheses) may contain spaces and parentheses.
fn parse_cpu_ticks(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts with field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Client-side latencies of one set of creates.
#[derive(Debug, Clone, Copy, Default)]
struct Latencies {
    p50: Duration,
    p99: Duration,
    mean: Duration,
    max: Duration,
}

impl Latencies {
    /// Nearest-rank quantiles of `samples`.
    fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut s = samples.to_vec();
        s.sort();
        let at = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        Self {
            p50: at(0.50),
            p99: at(0.99),
            mean: s.iter().sum::<Duration>() / s.len() as u32,
            max: s[s.len() - 1],
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn ms_f(seconds: Option<f64>) -> String {
    seconds.map_or("n/a".into(), |s| format!("{:.2} ms", s * 1000.0))
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "n/a".into()
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster state the run owns

/// What the run found and must restore.
struct Owned {
    created_kruise_namespace: bool,
    secret_existed: bool,
    nodes_before: BTreeSet<String>,
}

async fn webhook_configurations(env: &TestEnv) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    if m.get_opt(MUTATING)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        found.push(format!("mutatingwebhookconfiguration {MUTATING}"));
    }
    let v: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    if v.get_opt(VALIDATING)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        found.push(format!("validatingwebhookconfiguration {VALIDATING}"));
    }
    Ok(found)
}

/// Makes sure namespace `kruise-system` (the manager's own, `POD_NAMESPACE`) exists; true when
/// this call created it. A namespace being deleted (e.g. by the previous run's cleanup) is waited
/// for: a manager started meanwhile could not write its certificate Secret into it.
pub(crate) async fn ensure_kruise_namespace(env: &TestEnv) -> Result<bool, String> {
    let ns_api: Api<Namespace> = Api::all(env.client.clone());
    let start = Instant::now();
    let created = loop {
        match ns_api
            .get_opt(KRUISE_NAMESPACE)
            .await
            .map_err(|e| e.to_string())?
        {
            None => break true,
            Some(ns) if ns.metadata.deletion_timestamp.is_none() => break false,
            Some(_) if start.elapsed() > Duration::from_secs(120) => {
                return Err(format!(
                    "namespace {KRUISE_NAMESPACE} still terminating after 120 s"
                ));
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    if created {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": KRUISE_NAMESPACE}})).unwrap();
        ns_api
            .create(&PostParams::default(), &ns)
            .await
            .map_err(|e| format!("creating namespace {KRUISE_NAMESPACE}: {e}"))?;
    }
    Ok(created)
}

/// Deletes both webhook configurations (they fail closed without a manager), then waits until
/// they are gone.
pub(crate) async fn delete_webhook_configurations(env: &TestEnv) -> Result<(), String> {
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    let v: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    for r in [
        m.delete(MUTATING, &DeleteParams::default())
            .await
            .map(|_| ()),
        v.delete(VALIDATING, &DeleteParams::default())
            .await
            .map(|_| ()),
    ] {
        match r {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("deleting a webhook configuration: {e}")),
        }
    }
    let start = Instant::now();
    while !webhook_configurations(env).await?.is_empty() {
        if start.elapsed() > Duration::from_secs(30) {
            return Err("webhook configurations not gone after 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The `matchConditions` expressions of `mpod.kb.io` (empty: none, every pod is sent);
/// `None` when the configuration or the webhook is absent.
async fn pod_webhook_conditions(env: &TestEnv) -> Result<Option<Vec<String>>, String> {
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    let Some(cfg) = m.get_opt(MUTATING).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    Ok(cfg
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .find(|w| w.name == "mpod.kb.io")
        .map(|w| {
            w.match_conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.expression)
                .collect()
        }))
}

fn sidecarset_api(env: &TestEnv) -> Api<DynamicObject> {
    Api::all_with(
        env.client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "SidecarSet"),
            "sidecarsets",
        ),
    )
}

async fn sidecarset_names(env: &TestEnv, selector: Option<&str>) -> Result<Vec<String>, String> {
    let mut lp = ListParams::default();
    if let Some(s) = selector {
        lp = lp.labels(s);
    }
    Ok(sidecarset_api(env)
        .list(&lp)
        .await
        .map_err(|e| format!("listing SidecarSets: {e}"))?
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect())
}

/// Deletes the SidecarSets the run created and waits until they are gone.
async fn delete_sidecarsets(env: &TestEnv) -> Result<(), String> {
    let selector = format!("{SIDECARSET_LABEL}={SIDECARSET_LABEL_VALUE}");
    let api = sidecarset_api(env);
    for name in sidecarset_names(env, Some(&selector)).await? {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("deleting SidecarSet {name}: {e}")),
        }
    }
    let start = Instant::now();
    while !sidecarset_names(env, Some(&selector)).await?.is_empty() {
        if start.elapsed() > Duration::from_secs(60) {
            return Err("SidecarSets not gone after 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Deletes every pod of `api`'s namespace at once (grace period 0) and waits until none is left.
/// A failed request is retried until `timeout` (a collection delete of thousands of pods on a
/// busy API server can outlast the client's timeout while it goes on in the server).
async fn delete_pods(api: &Api<Pod>, timeout: Duration) -> Result<(), String> {
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let start = Instant::now();
    let mut last_error = String::new();
    loop {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(l) if l.items.is_empty() => return Ok(()),
            Ok(_) => {
                if let Err(e) = api.delete_collection(&dp, &ListParams::default()).await {
                    last_error = format!("deleting pods: {e}");
                }
            }
            Err(e) => last_error = format!("listing pods: {e}"),
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "pods not deleted within {timeout:?} (last error: {last_error})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A manager as users run it (webhook server on, reached at https://127.0.0.1:<port>,
/// `POD_NAMESPACE=kruise-system`, every namespace), plus `extra`; waits for `/readyz` (caches
/// synced, certificate and webhook configurations in place).
async fn start_manager(
    a: &AdmissionArgs,
    extra: &[&str],
    log_name: &str,
    http: &reqwest::Client,
) -> Result<Manager, String> {
    let mut args: Vec<String> = [
        "--webhook-server",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-bind-address",
        "127.0.0.1",
        "--webhook-port",
    ]
    .map(String::from)
    .to_vec();
    args.push(a.webhook_port.to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(a.manager_args.iter().cloned());
    let mut m = Manager::spawn(
        &a.manager,
        &args,
        &[("POD_NAMESPACE", KRUISE_NAMESPACE)],
        log_name,
    )?;
    println!(
        "  manager pid {} {} (log {})",
        m.pid,
        args.join(" "),
        m.log.display()
    );
    let start = Instant::now();
    loop {
        m.check_running()?;
        if let Ok((200, _)) = http_get(http, m.health, "/readyz").await {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "manager not ready within 120 s (log {})",
                m.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("  ready in {:.1}s", start.elapsed().as_secs_f64());
    Ok(m)
}

/// Stops the manager (SIGTERM) and removes the webhook configurations it left (they fail
/// closed).
async fn stop_manager(env: &TestEnv, m: &mut Manager) -> Result<(), String> {
    m.stop().await;
    delete_webhook_configurations(env).await
}

// ---------------------------------------------------------------------------------------------
// The run

pub(crate) async fn admission(a: AdmissionArgs) -> Result<(), String> {
    if !a.manager.is_file() {
        return Err(format!("manager binary {} not found", a.manager.display()));
    }
    if a.matching > a.sidecarsets || a.pods == 0 || a.rate <= 0.0 || a.concurrency == 0 {
        return Err(
            "need --matching <= --sidecarsets, --pods > 0, --rate > 0, --concurrency > 0".into(),
        );
    }
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    println!("testbed: {}", testbed_kubeconfig().display());
    let present = webhook_configurations(&env).await?;
    if !present.is_empty() {
        return Err(format!(
            "{} already exist: another kruise-manager serves this testbed's webhooks cluster-wide \
             (the demo's? hack/demo/demo.sh stop). The benchmark runs its own manager \
             cluster-wide and deletes these configurations at the end, so it needs a testbed to \
             itself (KRUISE_TESTBED_DIR=... KRUISE_TESTBED_PORT_BASE=... hack/testbed/testbed.sh \
             up); delete them if a previous run left them",
            present.join(" and ")
        ));
    }
    let http = http_client()?;
    let nodes_before = kwok_node_names(&env).await?;
    ensure_nodes(&env, a.nodes).await?;
    install_crds(&env).await.map_err(|e| e.to_string())?;
    let created_kruise_namespace = ensure_kruise_namespace(&env).await?;
    let secret_existed = Api::<Secret>::namespaced(env.client.clone(), KRUISE_NAMESPACE)
        .get_opt(CERT_SECRET)
        .await
        .map_err(|e| e.to_string())?
        .is_some();
    let owned = Owned {
        created_kruise_namespace,
        secret_existed,
        nodes_before,
    };

    let mut injection = None;
    let mut blast = None;
    let mut result = Ok(());
    if matches!(a.part, Part::Injection | Part::Both) {
        match injection_run(&env, &a, &http).await {
            Ok(r) => injection = Some(r),
            Err(e) => result = Err(e),
        }
    }
    if result.is_ok() && matches!(a.part, Part::Blast | Part::Both) {
        match blast_run(&env, &a, &http).await {
            Ok(r) => blast = Some(r),
            Err(e) => result = Err(e),
        }
    }
    let cleaned = cleanup(&env, &owned).await;
    if let Some(r) = &injection {
        print_injection(&a, r);
    }
    if let Some(r) = &blast {
        print_blast(&a, r);
    }
    let result = result.and(cleaned);
    let doc = result_json(
        &a,
        injection.as_ref(),
        blast.as_deref(),
        result.as_ref().err(),
    );
    let path = if a.json.is_absolute() {
        a.json.clone()
    } else {
        kruise_e2e::repo_root().join(&a.json)
    };
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&doc).expect("JSON") + "\n",
            )
        });
    match written {
        Ok(()) => println!("\nresult (JSON): {}", path.display()),
        Err(e) => eprintln!("writing {}: {e}", path.display()),
    }
    result
}

fn secs_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn latencies_json(l: &Latencies) -> serde_json::Value {
    json!({"p50_ms": secs_ms(l.p50), "p99_ms": secs_ms(l.p99), "mean_ms": secs_ms(l.mean),
           "max_ms": secs_ms(l.max)})
}

fn histogram_json(h: &Histogram) -> serde_json::Value {
    let ms = |v: Option<f64>| v.map(|s| s * 1000.0);
    json!({"count": h.count, "p50_ms": ms(h.quantile(0.5)), "p99_ms": ms(h.quantile(0.99)),
           "mean_ms": ms(h.mean()),
           "buckets": h.buckets.iter().map(|(le, c)| json!([
               if le.is_finite() { json!(le) } else { json!("+Inf") }, c])).collect::<Vec<_>>()})
}

/// The machine-readable result: the parameters, what each part measured (latencies in
/// milliseconds, times in seconds), the error if the run failed.
fn result_json(
    a: &AdmissionArgs,
    injection: Option<&Injection>,
    blast: Option<&[BlastRow]>,
    error: Option<&String>,
) -> serde_json::Value {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let injection = injection.map(|r| {
        let m = &r.measured;
        let window = m.cpu_window.as_secs_f64();
        json!({
            "sidecarsets": a.sidecarsets, "matching": a.matching, "pinned_to_namespace": m.pinned,
            "pods": a.pods, "target_rate": a.rate, "concurrency": a.concurrency,
            "kwok_nodes": r.nodes,
            "baseline_no_webhook": {"create": latencies_json(&r.baseline),
                                    "achieved_rate": r.baseline_rate, "load_average": r.load.0},
            "with_webhook": {"create": latencies_json(&r.webhook),
                             "achieved_rate": r.webhook_rate, "load_average": r.load.1},
            "mutate_pod_manager": histogram_json(&m.server.latency),
            "mutate_pod_manager_cpu": histogram_json(&m.server.cpu),
            "mutate_pod_manager_requests": m.server.requests,
            "mutate_pod_apiserver": histogram_json(&m.apiserver.calls),
            "p99_target_ms": 5.0,
            "share_at_most_5ms": m.server.latency.fraction_le(0.005),
            "manager_cpu": {
                "seconds": m.cpu_seconds, "window_seconds": window,
                "cores": m.cpu_seconds.map(|c| c / window),
                "idle_cores": m.idle_cpu,
                "ms_per_pod": m.cpu_seconds.map(|c| c / a.pods as f64 * 1000.0),
            },
            "manager_peak_rss_mib": r.peak_rss_mib,
            "manager_reconciles": m.server.reconciles.iter().map(|(c, (n, t))|
                (c.clone(), json!({"count": n, "seconds": t}))).collect::<serde_json::Map<_, _>>(),
            "pods_with_all_sidecars": r.injected,
        })
    });
    let blast = blast.map(|rows| {
        let base = rows.first().map(|r| (r.created, r.ready));
        rows.iter()
            .map(|r| {
                let (bc, br) = base.unwrap_or((r.created, r.ready));
                json!({
                    "case": r.label,
                    "mutate_pod_calls_manager": r.server.as_ref().map(|s| s.requests),
                    "mutate_pod_manager": r.server.as_ref().map(|s| histogram_json(&s.latency)),
                    "mutate_pod_calls_apiserver": r.apiserver.calls.count,
                    "mutate_pod_apiserver": histogram_json(&r.apiserver.calls),
                    "excluded_by_match_conditions": r.apiserver.excluded,
                    "all_created_seconds": r.created.as_secs_f64(),
                    "all_ready_seconds": r.ready.as_secs_f64(),
                    "created_ratio_to_baseline": r.created.as_secs_f64() / bc.as_secs_f64(),
                    "ready_ratio_to_baseline": r.ready.as_secs_f64() / br.as_secs_f64(),
                    "manager_peak_rss_mib": r.peak_rss_mib,
                    "load_average": r.load,
                })
            })
            .collect::<Vec<_>>()
    });
    json!({
        "benchmark": "kruise-bench admission",
        "unix_time": unix,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "manager": a.manager.display().to_string(),
        "manager_args": a.manager_args,
        "ok": error.is_none(),
        "error": error,
        "injection": injection,
        "blast": blast.map(|rows| json!({"deployment_pods": a.deployment_pods, "cases": rows})),
    })
}

/// Removes what the run created (whatever happened before).
async fn cleanup(env: &TestEnv, owned: &Owned) -> Result<(), String> {
    println!();
    println!("cleanup");
    let mut first_error = None;
    let mut note = |r: Result<(), String>| {
        if let Err(e) = r {
            eprintln!("  cleanup: {e}");
            first_error.get_or_insert(e);
        }
    };
    note(delete_webhook_configurations(env).await);
    note(delete_sidecarsets(env).await);
    if owned.created_kruise_namespace {
        let api: Api<Namespace> = Api::all(env.client.clone());
        note(
            api.delete(KRUISE_NAMESPACE, &DeleteParams::background())
                .await
                .map(|_| ())
                .map_err(|e| format!("deleting namespace {KRUISE_NAMESPACE}: {e}")),
        );
    } else if !owned.secret_existed {
        let api: Api<Secret> = Api::namespaced(env.client.clone(), KRUISE_NAMESPACE);
        match api.delete(CERT_SECRET, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => note(Err(format!("deleting Secret {CERT_SECRET}: {e}"))),
        }
    }
    match kwok_node_names(env).await {
        Ok(now) => {
            let nodes: Api<Node> = Api::all(env.client.clone());
            for name in now.difference(&owned.nodes_before) {
                println!("  deleting kwok node {name} (added by this run)");
                note(
                    nodes
                        .delete(name, &DeleteParams::default())
                        .await
                        .map(|_| ())
                        .map_err(|e| format!("deleting node {name}: {e}")),
                );
            }
        }
        Err(e) => note(Err(e)),
    }
    match first_error {
        None => {
            println!("  done: namespaces, SidecarSets, webhook configurations, nodes removed");
            Ok(())
        }
        Some(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// Part 1: injection latency

/// One set of paced creates.
struct Creates {
    /// Client-side latency of each create request.
    latencies: Vec<Duration>,
    /// Container names of each created pod, as the API server answered the create.
    containers: Vec<Vec<String>>,
    /// First create sent to last answer received.
    elapsed: Duration,
}

/// Creates `pods` through `api`: create `i` starts no earlier than `i / rate` seconds after the
/// first (a schedule a late create catches up on), at most `concurrency` in flight.
async fn paced_creates(
    api: &Api<Pod>,
    pods: Vec<Pod>,
    rate: f64,
    concurrency: usize,
) -> Result<Creates, String> {
    let n = pods.len();
    let permits = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    let start = tokio::time::Instant::now();
    let mut last_print = Instant::now();
    for (i, pod) in pods.into_iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!(
                "    {i}/{n} sent ({:.0}/s)",
                i as f64 / start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let api = api.clone();
        tasks.spawn(async move {
            let sent = Instant::now();
            let r = api.create(&PostParams::default(), &pod).await;
            let latency = sent.elapsed();
            drop(permit);
            (i, latency, r)
        });
    }
    let mut latencies = vec![Duration::ZERO; n];
    let mut containers = vec![Vec::new(); n];
    let mut errors = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (i, latency, r) = joined.map_err(|e| e.to_string())?;
        latencies[i] = latency;
        match r {
            Ok(p) => {
                containers[i] = p
                    .spec
                    .map(|s| s.containers.into_iter().map(|c| c.name).collect())
                    .unwrap_or_default()
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let elapsed = start.elapsed();
    if let Some(e) = errors.first() {
        return Err(format!(
            "{} of {n} creates failed; first: {e}",
            errors.len()
        ));
    }
    Ok(Creates {
        latencies,
        containers,
        elapsed,
    })
}

/// The benchmark's pod `name`, bound to `node`.
fn bench_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": POD_APP, "mesh": POD_MESH}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": "nginx:1.25"}]},
    }))
    .expect("valid pod")
}

fn bench_pods(prefix: &str, n: usize, nodes: &[String]) -> Vec<Pod> {
    (0..n)
        .map(|i| bench_pod(&format!("{prefix}-{i:05}"), &nodes[i % nodes.len()]))
        .collect()
}

/// SidecarSet `i` of `total`: the first `total - matching` select labels no pod carries
/// (`app: bench-adm-other-<i>`), the last `matching` select the benchmark's pods (by
/// `matchLabels` or by a `matchExpressions` `In`, alternating in pairs so that every
/// combination occurs); every other one of each group pins `ns` by `namespaceSelector`.
fn sidecarset(i: usize, total: usize, matching: usize, ns: &str) -> (String, serde_json::Value) {
    let selects = i >= total - matching;
    // Index within its group (non-matching or matching).
    let j = if selects { i - (total - matching) } else { i };
    let name = if selects {
        format!("bench-adm-match-{i:02}")
    } else {
        format!("bench-adm-other-{i:02}")
    };
    let selector = match (selects, j % 4) {
        (false, _) => json!({"matchLabels": {"app": name}}),
        (true, 1 | 2) => {
            json!({"matchExpressions": [{"key": "mesh", "operator": "In", "values": [POD_MESH]}]})
        }
        (true, _) => json!({"matchLabels": {"app": POD_APP}}),
    };
    let mut spec = json!({
        "selector": selector,
        "containers": [{"name": format!("sidecar-{i:02}"), "image": "busybox:1.36",
                        "command": ["sleep", "infinity"]}],
    });
    if j % 2 == 0 {
        spec["namespaceSelector"] = json!({"matchLabels": {"kubernetes.io/metadata.name": ns}});
    }
    let obj = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": name, "labels": {SIDECARSET_LABEL: SIDECARSET_LABEL_VALUE}},
        "spec": spec,
    });
    (name, obj)
}

/// What part 1 measured.
struct Injection {
    nodes: usize,
    baseline: Latencies,
    baseline_rate: f64,
    webhook: Latencies,
    webhook_rate: f64,
    /// What the manager and the API server counted during the measured creates.
    measured: Measured,
    peak_rss_mib: Option<f64>,
    injected: usize,
    /// Load average (1 min) when the baseline and the webhook creates started.
    load: (Option<f64>, Option<f64>),
}

async fn injection_run(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
) -> Result<Injection, String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let nodes: Vec<String> = kwok_node_names(env).await?.into_iter().collect();
    println!();
    println!(
        "== part 1: injection latency ({} SidecarSets, {} selecting the pods; {} pods at {}/s, {} in flight) ==",
        a.sidecarsets, a.matching, a.pods, a.rate, a.concurrency
    );

    // 1. Baseline: no webhook configuration, no manager.
    println!(
        "baseline: {} pods (+{} warm-up) with no webhook configuration",
        a.pods, a.warmup
    );
    let ns = env
        .namespace("bench-adm-base")
        .await
        .map_err(|e| e.to_string())?;
    let pods: Api<Pod> = ns.api();
    let base_load = load_average();
    let r = async {
        paced_creates(
            &pods,
            bench_pods("warm", a.warmup, &nodes),
            a.rate,
            a.concurrency,
        )
        .await?;
        paced_creates(
            &pods,
            bench_pods("pod", a.pods, &nodes),
            a.rate,
            a.concurrency,
        )
        .await
    }
    .await;
    let deleted = delete_pods(&pods, timeout).await;
    let _ = ns.delete().await;
    let baseline = r?;
    deleted?;
    if let Some(c) = baseline.containers.iter().find(|c| c.len() != 1) {
        return Err(format!(
            "baseline: a pod was mutated without a webhook: {c:?}"
        ));
    }
    let base = Latencies::of(&baseline.latencies);
    let baseline_rate = a.pods as f64 / baseline.elapsed.as_secs_f64();
    println!(
        "  p50 {}, p99 {}, {:.0} creates/s",
        ms(base.p50),
        ms(base.p99),
        baseline_rate
    );

    // 2. The manager and the SidecarSets.
    println!("with the webhook: starting the manager");
    let mut manager = start_manager(
        a,
        &[],
        &format!("bench-admission-injection-{}.log", std::process::id()),
        http,
    )
    .await?;
    let ns = env
        .namespace("bench-adm-hook")
        .await
        .map_err(|e| e.to_string())?;
    let r = injection_measure(env, a, http, &mut manager, &ns, &nodes).await;
    let peak_rss_mib = proc_status_mib(manager.pid, "VmHWM");
    let pods: Api<Pod> = ns.api();
    let deleted = delete_pods(&pods, timeout).await;
    let _ = ns.delete().await;
    let sidecarsets_deleted = delete_sidecarsets(env).await;
    let stopped = stop_manager(env, &mut manager).await;
    let measured = r?;
    deleted?;
    sidecarsets_deleted?;
    stopped?;

    let want: Vec<String> = (a.sidecarsets - a.matching..a.sidecarsets)
        .map(|i| format!("sidecar-{i:02}"))
        .collect();
    let webhook = &measured.creates;
    let injected = webhook
        .containers
        .iter()
        .filter(|c| c.len() == 1 + a.matching && want.iter().all(|w| c.contains(w)))
        .count();
    let lat = Latencies::of(&webhook.latencies);
    if injected != a.pods {
        let bad = webhook
            .containers
            .iter()
            .find(|c| !(c.len() == 1 + a.matching && want.iter().all(|w| c.contains(w))));
        return Err(format!(
            "only {injected} of {} pods were created with their {} sidecars; e.g. containers {bad:?}",
            a.pods, a.matching
        ));
    }
    let webhook_rate = a.pods as f64 / webhook.elapsed.as_secs_f64();
    let load = (base_load, measured.load);
    Ok(Injection {
        nodes: nodes.len(),
        baseline: base,
        baseline_rate,
        webhook: lat,
        webhook_rate,
        measured,
        peak_rss_mib,
        injected,
        load,
    })
}

/// The webhook case of part 1.
struct Measured {
    creates: Creates,
    /// Delta of the manager's `/mutate-pod` metrics over the measured creates.
    server: PodWebhook,
    /// Delta of the API server's view of `mpod.kb.io` over the measured creates.
    apiserver: ApiserverView,
    cpu_seconds: Option<f64>,
    cpu_window: Duration,
    /// CPU seconds per second while nothing happened, before the creates.
    idle_cpu: Option<f64>,
    /// SidecarSets pinning the namespace.
    pinned: usize,
    load: Option<f64>,
}

async fn injection_measure(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
    ns: &TestNamespace,
    nodes: &[String],
) -> Result<Measured, String> {
    let api = sidecarset_api(env);
    // Non-matching first, then the matching ones: once the last is visible, all are.
    let sets: Vec<(String, serde_json::Value)> = (0..a.sidecarsets)
        .map(|i| sidecarset(i, a.sidecarsets, a.matching, ns.name()))
        .collect();
    let pinned = sets
        .iter()
        .filter(|(_, o)| o["spec"].get("namespaceSelector").is_some())
        .count();
    for (name, obj) in &sets {
        let obj: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        api.create(&PostParams::default(), &obj)
            .await
            .map_err(|e| format!("creating SidecarSet {name}: {e}"))?;
    }
    println!(
        "  {} SidecarSets created ({} pin the namespace {})",
        sets.len(),
        pinned,
        ns.name()
    );
    // The pod webhook's matchConditions follows the SidecarSets (resynced on every change).
    let start = Instant::now();
    loop {
        manager.check_running()?;
        let conditions = pod_webhook_conditions(env).await?.unwrap_or_default();
        let text = conditions.join("\n");
        let missing = sets
            .iter()
            .filter(|(n, _)| n.starts_with("bench-adm-other-"))
            .filter(|(n, _)| !text.contains(&format!("'{n}'")))
            .count();
        if !conditions.is_empty() && missing == 0 && text.contains(&format!("'{POD_APP}'")) {
            println!(
                "  mpod.kb.io matchConditions name every SidecarSet ({} characters of CEL) after {:.1}s",
                text.len(),
                start.elapsed().as_secs_f64()
            );
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "mpod.kb.io matchConditions still miss {missing} SidecarSets after 120 s (log {})",
                manager.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A probe pod proves the API server calls the webhook and the handler sees every SidecarSet.
    let pods: Api<Pod> = ns.api();
    let start = Instant::now();
    for i in 0.. {
        let p = pods
            .create(
                &PostParams::default(),
                &bench_pod(&format!("probe-{i:03}"), &nodes[0]),
            )
            .await
            .map_err(|e| format!("creating a probe pod: {e}"))?;
        let n = p.spec.map_or(0, |s| s.containers.len());
        if n == 1 + a.matching {
            println!(
                "  probe pod injected with {} sidecars after {:.1}s",
                a.matching,
                start.elapsed().as_secs_f64()
            );
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            return Err(format!(
                "probe pods still get {} containers after 60 s, not {}",
                n,
                1 + a.matching
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "  {} pods (+{} warm-up) through /mutate-pod",
        a.pods, a.warmup
    );
    paced_creates(
        &pods,
        bench_pods("warm", a.warmup, nodes),
        a.rate,
        a.concurrency,
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ticks = clock_ticks();
    let idle0 = cpu_seconds(manager.pid, ticks);
    let idle_start = Instant::now();
    tokio::time::sleep(Duration::from_secs(a.idle_seconds)).await;
    let idle_cpu = cpu_seconds(manager.pid, ticks)
        .zip(idle0)
        .map(|(b, a)| (b - a) / idle_start.elapsed().as_secs_f64());
    let load = load_average();
    let before = scrape_pod_webhook(http, manager).await?;
    let api_before = scrape_apiserver(env).await?;
    let cpu0 = cpu_seconds(manager.pid, ticks);
    let t0 = Instant::now();
    let creates = paced_creates(
        &pods,
        bench_pods("pod", a.pods, nodes),
        a.rate,
        a.concurrency,
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu1 = cpu_seconds(manager.pid, ticks);
    let window = t0.elapsed();
    let after = scrape_pod_webhook(http, manager).await?;
    let apiserver = scrape_apiserver(env).await?.since(&api_before);
    manager.check_running()?;
    let server = after.since(&before);
    let cpu = cpu0.zip(cpu1).map(|(a, b)| b - a);
    let lat = Latencies::of(&creates.latencies);
    println!(
        "  p50 {}, p99 {}, {:.0} creates/s; manager: {} admissions, p99 {}",
        ms(lat.p50),
        ms(lat.p99),
        a.pods as f64 / creates.elapsed.as_secs_f64(),
        server.requests,
        ms_f(server.latency.quantile(0.99))
    );
    Ok(Measured {
        creates,
        server,
        apiserver,
        cpu_seconds: cpu,
        cpu_window: window,
        idle_cpu,
        pinned,
        load,
    })
}

fn print_injection(a: &AdmissionArgs, r: &Injection) {
    let m = &r.measured;
    println!();
    println!(
        "== kruise-bench admission, part 1: injection latency: {} SidecarSets ({} select the pods, {} pin the namespace), {} bare pods at {}/s ({} in flight) on {} kwok nodes ==",
        a.sidecarsets, a.matching, m.pinned, a.pods, a.rate, a.concurrency, r.nodes
    );
    let header = format!(
        "{:<58}  {:>10}  {:>10}  {:>10}  {:>10}  {:>9}",
        "latency", "p50", "p99", "mean", "max", "creates/s"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let row = |label: &str, l: &Latencies, rate: f64| {
        println!(
            "{label:<58}  {:>10}  {:>10}  {:>10}  {:>10}  {rate:>9.0}",
            ms(l.p50),
            ms(l.p99),
            ms(l.mean),
            ms(l.max)
        )
    };
    row(
        &format!(
            "create request, client side, {} sidecars injected",
            a.matching
        ),
        &r.webhook,
        r.webhook_rate,
    );
    row(
        "create request, client side, baseline (no webhook)",
        &r.baseline,
        r.baseline_rate,
    );
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "{:<58}  {:>10}  {:>10}  {:>10}  {:>10}",
        "  ratio to the baseline",
        ratio(s(r.webhook.p50), s(r.baseline.p50)),
        ratio(s(r.webhook.p99), s(r.baseline.p99)),
        ratio(s(r.webhook.mean), s(r.baseline.mean)),
        ratio(s(r.webhook.max), s(r.baseline.max)),
    );
    let hist_row = |label: String, h: &Histogram| {
        println!(
            "{label:<58}  {:>10}  {:>10}  {:>10}",
            ms_f(h.quantile(0.5)),
            ms_f(h.quantile(0.99)),
            ms_f(h.mean()),
        )
    };
    hist_row(
        format!(
            "mpod.kb.io call seen by the API server* ({} calls)",
            m.apiserver.calls.count
        ),
        &m.apiserver.calls,
    );
    hist_row(
        format!(
            "/mutate-pod handler in the manager** ({} admissions)",
            m.server.requests
        ),
        &m.server.latency,
    );
    if m.server.cpu.count > 0.0 {
        hist_row(
            format!(
                "/mutate-pod handler's CPU time*** ({} admissions)",
                m.server.cpu.count
            ),
            &m.server.cpu,
        );
    }
    let under_5ms = m.server.latency.fraction_le(0.005).unwrap_or(0.0);
    println!(
        "p50/p99 from histograms are interpolated linearly inside the bucket holding the rank, as Prometheus' histogram_quantile does; means are exact (_sum/_count).\n\
         *  apiserver_admission_webhook_admission_duration_seconds{{name=\"mpod.kb.io\"}}: network, TLS, HTTP and waiting for the manager included (buckets 5, 25, 100, 500 ms, ...).\n\
         ** controller_runtime_webhook_latency_seconds{{webhook=\"/mutate-pod\"}} (buckets 0.25, 0.5, 1, 2, 3, 4 ms, then Prometheus' defaults 5, 10, 25, 50 ms, ...): {:.2}% of the admissions took <= 5 ms, so p99 <= 5 ms is {}.",
        under_5ms * 100.0,
        if under_5ms >= 0.99 { "met" } else { "missed" }
    );
    if m.server.cpu.count > 0.0 {
        println!(
            "*** kruise_webhook_cpu_seconds{{webhook=\"/mutate-pod\"}}: CPU time of the handler's thread over the same span (same buckets); \
             the handler's latency minus this is time spent waiting for a CPU: {:.2}% of the admissions used <= 5 ms of CPU.",
            m.server.cpu.fraction_le(0.005).unwrap_or(0.0) * 100.0
        );
    }
    match m.cpu_seconds {
        Some(cpu) => println!(
            "manager CPU (utime+stime) from the first create to 2 s after the last: {cpu:.2} s in {:.1} s \
             ({:.0}% of one core; {:.2} ms per pod)",
            m.cpu_window.as_secs_f64(),
            cpu / m.cpu_window.as_secs_f64() * 100.0,
            cpu / a.pods as f64 * 1000.0
        ),
        None => println!("manager CPU: unavailable"),
    }
    if let (Some(idle), Some(cpu)) = (m.idle_cpu, m.cpu_seconds) {
        let net = (cpu - idle * m.cpu_window.as_secs_f64()).max(0.0);
        println!(
            "manager CPU while idle ({} s before the creates): {:.1}% of one core; the run net of it: \
             {net:.2} s ({:.2} ms per pod)",
            a.idle_seconds,
            idle * 100.0,
            net / a.pods as f64 * 1000.0
        );
    }
    println!(
        "manager reconciles during that time (controller count (seconds)): {}",
        m.server.reconciles_text()
    );
    match r.peak_rss_mib {
        Some(mb) => println!("manager peak RSS (VmHWM): {mb:.1} MiB"),
        None => println!("manager peak RSS: unavailable"),
    }
    println!(
        "sidecars: {}/{} pods created with all {} sidecars ({} containers)",
        r.injected,
        a.pods,
        a.matching,
        a.matching + 1
    );
    let load = |l: Option<f64>| l.map_or("n/a".into(), |l| format!("{l:.2}"));
    println!(
        "machine load average (1 min) at the start of the baseline / webhook creates: {} / {} ({} CPUs)",
        load(r.load.0),
        load(r.load.1),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}

// ---------------------------------------------------------------------------------------------
// Part 2: blast radius

/// One case of part 2.
struct BlastRow {
    label: &'static str,
    /// `/mutate-pod` metrics delta over the Deployment's creation (None: no manager).
    server: Option<PodWebhook>,
    /// The API server's view of `mpod.kb.io` over the same time.
    apiserver: ApiserverView,
    created: Duration,
    ready: Duration,
    peak_rss_mib: Option<f64>,
    load: Option<f64>,
}

fn plain_deployment(replicas: usize) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "plain"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "plain"}},
                 "template": {"metadata": {"labels": {"app": "plain"}},
                              "spec": {"terminationGracePeriodSeconds": 0,
                                       "containers": [{"name": "main", "image": "nginx:1.25"}]}}}
    }))
    .expect("valid Deployment")
}

/// Creates the plain Deployment in a fresh namespace and measures the time to all pods created
/// and all Ready (Deployment status), then deletes it all.
async fn deployment_case(
    env: &TestEnv,
    a: &AdmissionArgs,
    label: &str,
    mut manager: Option<&mut Manager>,
) -> Result<(Duration, Duration), String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let n = a.deployment_pods as i32;
    let ns = env
        .namespace("bench-adm-blast")
        .await
        .map_err(|e| e.to_string())?;
    let deployments: Api<Deployment> = ns.api();
    let r = async {
        let start = Instant::now();
        deployments
            .create(&PostParams::default(), &plain_deployment(a.deployment_pods))
            .await
            .map_err(|e| format!("creating the Deployment: {e}"))?;
        let mut created = None;
        let mut last_print = Instant::now();
        loop {
            if let Some(m) = manager.as_deref_mut() {
                m.check_running()?;
            }
            let d = deployments
                .get("plain")
                .await
                .map_err(|e| format!("reading the Deployment: {e}"))?;
            let st = d.status.unwrap_or_default();
            let (replicas, ready) = (st.replicas.unwrap_or(0), st.ready_replicas.unwrap_or(0));
            if created.is_none() && replicas >= n {
                created = Some(start.elapsed());
            }
            if ready >= n {
                let ready_at = start.elapsed();
                println!(
                    "  {label}: {n} created in {:.1}s, Ready in {:.1}s",
                    created.unwrap_or(ready_at).as_secs_f64(),
                    ready_at.as_secs_f64()
                );
                return Ok((created.unwrap_or(ready_at), ready_at));
            }
            if last_print.elapsed() >= Duration::from_secs(2) {
                println!(
                    "  {label}: pods {replicas}/{n}, Ready {ready}/{n} ({:.0}s)",
                    start.elapsed().as_secs_f64()
                );
                last_print = Instant::now();
            }
            if start.elapsed() > timeout {
                return Err(format!(
                    "{label}: {ready}/{n} Ready after {timeout:?} (pods {replicas})"
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    .await;
    // Cleanup: the Deployment (its ReplicaSet goes with it), then every pod at once.
    let _ = deployments
        .delete("plain", &DeleteParams::background())
        .await;
    let rs: Api<ReplicaSet> = ns.api();
    let start = Instant::now();
    while rs
        .list(&ListParams::default())
        .await
        .map(|l| !l.items.is_empty())
        .unwrap_or(false)
        && start.elapsed() < timeout
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deleted = delete_pods(&ns.api(), timeout).await;
    let _ = ns.delete().await;
    let r = r?;
    deleted?;
    Ok(r)
}

async fn blast_run(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
) -> Result<Vec<BlastRow>, String> {
    println!();
    println!(
        "== part 2: blast radius: a Deployment of {} plain pods, no SidecarSet ==",
        a.deployment_pods
    );
    let others = sidecarset_names(env, None).await?;
    if !others.is_empty() {
        return Err(format!(
            "SidecarSets exist on this testbed ({}); part 2 measures a cluster without any",
            others.join(", ")
        ));
    }
    let mut rows = Vec::new();

    // Baseline: no manager, no webhook configuration.
    delete_webhook_configurations(env).await?;
    let load = load_average();
    let api_before = scrape_apiserver(env).await?;
    let (created, ready) = deployment_case(env, a, "no manager", None).await?;
    rows.push(BlastRow {
        label: "no manager (no webhook configuration)",
        server: None,
        apiserver: scrape_apiserver(env).await?.since(&api_before),
        created,
        ready,
        peak_rss_mib: None,
        load,
    });

    for (label, scope) in [
        ("manager, --pod-webhook-scope needed", "needed"),
        ("manager, --pod-webhook-scope all", "all"),
    ] {
        println!("{label}:");
        let mut m = start_manager(
            a,
            &["--pod-webhook-scope", scope],
            &format!("bench-admission-blast-{scope}-{}.log", std::process::id()),
            http,
        )
        .await?;
        let r = async {
            let conditions = pod_webhook_conditions(env)
                .await?
                .ok_or("mpod.kb.io is not configured")?;
            println!(
                "  mpod.kb.io: {}",
                if conditions.is_empty() {
                    "no matchConditions (every pod outside control-plane namespaces)".to_string()
                } else {
                    format!("matchConditions {}", conditions.join(" && "))
                }
            );
            let load = load_average();
            let before = scrape_pod_webhook(http, &m).await?;
            let api_before = scrape_apiserver(env).await?;
            let (created, ready) = deployment_case(env, a, scope, Some(&mut m)).await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let server = scrape_pod_webhook(http, &m).await?.since(&before);
            let apiserver = scrape_apiserver(env).await?.since(&api_before);
            println!(
                "  /mutate-pod admissions: {} (p99 {}); API server: {} calls, {} pods excluded by matchConditions",
                server.requests,
                ms_f(server.latency.quantile(0.99)),
                apiserver.calls.count,
                apiserver.excluded
            );
            Ok::<_, String>((created, ready, server, apiserver, load))
        }
        .await;
        let peak_rss_mib = proc_status_mib(m.pid, "VmHWM");
        let stopped = stop_manager(env, &mut m).await;
        let (created, ready, server, apiserver, load) = r?;
        stopped?;
        rows.push(BlastRow {
            label,
            server: Some(server),
            apiserver,
            created,
            ready,
            peak_rss_mib,
            load,
        });
    }
    Ok(rows)
}

fn print_blast(a: &AdmissionArgs, rows: &[BlastRow]) {
    println!();
    println!(
        "== kruise-bench admission, part 2: blast radius: a Deployment of {} plain pods (no Kruise owner, no SidecarSet) ==",
        a.deployment_pods
    );
    let header = format!(
        "{:<38}  {:>9}  {:>9}  {:>9}  {:>13}  {:>11}  {:>6}  {:>9}  {:>6}  {:>8}  {:>4}",
        "case",
        "calls*",
        "API calls",
        "excluded",
        "admission p99",
        "all created",
        "x base",
        "all Ready",
        "x base",
        "peak RSS",
        "load"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let base = rows.first().map(|r| (r.created, r.ready));
    for r in rows {
        let (calls, p99) = match &r.server {
            None => ("-".to_string(), "-".to_string()),
            Some(s) => (
                format!("{}", s.requests),
                if s.requests > 0.0 {
                    ms_f(s.latency.quantile(0.99))
                } else {
                    "n/a".into()
                },
            ),
        };
        let (bc, br) = base.unwrap_or((r.created, r.ready));
        println!(
            "{:<38}  {calls:>9}  {:>9}  {:>9}  {p99:>13}  {:>11}  {:>6}  {:>9}  {:>6}  {:>8}  {:>4}",
            r.label,
            r.apiserver.calls.count,
            r.apiserver.excluded,
            format!("{:.1}s", r.created.as_secs_f64()),
            ratio(r.created.as_secs_f64(), bc.as_secs_f64()),
            format!("{:.1}s", r.ready.as_secs_f64()),
            ratio(r.ready.as_secs_f64(), br.as_secs_f64()),
            r.peak_rss_mib.map_or("-".into(), |v| format!("{v:.0} MiB")),
            r.load.map_or("-".into(), |l| format!("{l:.1}")),
        );
    }
    println!(
        "* /mutate-pod admissions the manager counted (controller_runtime_webhook_requests_total delta); \
         API calls: mpod.kb.io calls the API server made, excluded: pods its matchConditions kept from \
         calling (apiserver_admission_webhook_admission_duration_seconds_count, \
         apiserver_admission_match_condition_exclusions_total); admission p99: the manager's histogram, \
         interpolated as histogram_quantile does; times from the Deployment's create to status.replicas \
         and status.readyReplicas = {}; load: 1-min load average at the start of the case.",
        a.deployment_pods
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(buckets: &[(f64, f64)]) -> Histogram {
        Histogram {
            buckets: buckets.to_vec(),
            sum: 0.0,
            count: buckets.last().map_or(0.0, |b| b.1),
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantile_interpolates_like_histogram_quantile() {
        // 100 observations: 90 ≤ 5 ms, 9 in (5, 10] ms, 1 in (10, 25] ms.
        let h = hist(&[(0.005, 90.0), (0.01, 99.0), (0.025, 100.0), (INF, 100.0)]);
        // rank 50 in the first bucket: 0 + 5 ms * 50/90.
        assert!((h.quantile(0.5).unwrap() - 0.005 * 50.0 / 90.0).abs() < 1e-12);
        // rank 99 at the top of the second bucket: 10 ms.
        assert!((h.quantile(0.99).unwrap() - 0.01).abs() < 1e-12);
        // rank 99.5: 10 ms + 15 ms * 0.5 / 1.
        assert!((h.quantile(0.995).unwrap() - 0.0175).abs() < 1e-12);
        assert_eq!(h.fraction_le(0.005), Some(0.9));
        // A rank in +Inf answers the highest finite bound.
        let h = hist(&[(0.005, 1.0), (0.01, 1.0), (INF, 10.0)]);
        assert_eq!(h.quantile(0.99), Some(0.01));
        // No observations: NaN in Prometheus, None here.
        assert_eq!(hist(&[(0.005, 0.0), (INF, 0.0)]).quantile(0.5), None);
        assert_eq!(hist(&[]).quantile(0.5), None);
    }

    #[test]
    fn histogram_is_read_from_the_exposition_and_differenced() {
        let text = "# TYPE controller_runtime_webhook_latency_seconds histogram\n\
            controller_runtime_webhook_latency_seconds_sum{webhook=\"/mutate-pod\"} 0.5\n\
            controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/mutate-pod\"} 190\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.01\",webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"+Inf\",webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/other\"} 7\n\
            controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"200\"} 199\n\
            controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"500\"} 1\n\
            controller_runtime_webhook_requests_total{webhook=\"/other\",code=\"200\"} 5\n";
        let after = PodWebhook::from_metrics(text);
        assert_eq!(after.requests, 200.0);
        assert_eq!(
            after.latency.buckets,
            vec![(0.005, 190.0), (0.01, 200.0), (INF, 200.0)]
        );
        assert_eq!(after.latency.mean(), Some(0.0025));
        let before = PodWebhook::from_metrics(
            "controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_bucket{le=\"0.01\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_bucket{le=\"+Inf\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"200\"} 100\n",
        );
        let d = after.since(&before);
        assert_eq!(d.requests, 100.0);
        assert_eq!(
            d.latency.buckets,
            vec![(0.005, 90.0), (0.01, 100.0), (INF, 100.0)]
        );
        assert_eq!(d.latency.fraction_le(0.005), Some(0.9));
        // Nothing scraped (no admission yet): an empty histogram.
        assert_eq!(
            PodWebhook::from_metrics("")
                .since(&PodWebhook::default())
                .requests,
            0.0
        );
    }

    #[test]
    fn apiserver_view_sums_series_of_the_pod_webhook() {
        let text = "apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\",le=\"0.005\"} 3\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\",le=\"+Inf\"} 4\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\",le=\"0.005\"} 0\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\",le=\"+Inf\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"} 4\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"msidecarset.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"} 9\n\
            apiserver_admission_match_condition_exclusions_total{kind=\"webhook\",name=\"mpod.kb.io\",operation=\"CREATE\",type=\"admit\"} 100\n";
        let v = ApiserverView::from_metrics(text);
        assert_eq!(v.calls.count, 5.0);
        assert_eq!(v.calls.buckets, vec![(0.005, 3.0), (INF, 5.0)]);
        assert_eq!(v.excluded, 100.0);
        assert_eq!(v.since(&v).excluded, 0.0);
    }

    #[test]
    fn cpu_ticks_skip_a_command_with_spaces_and_parentheses() {
        let stat = "4242 (kruise (mgr) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 12 0 1234 100000 2000 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(325.0));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert!(clock_ticks() > 0.0);
    }

    #[test]
    fn latencies_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latencies::of(&samples);
        assert_eq!(l.p50, Duration::from_millis(50));
        assert_eq!(l.p99, Duration::from_millis(99));
        assert_eq!(l.max, Duration::from_millis(100));
        assert_eq!(l.mean, Duration::from_micros(50_500));
    }

    #[test]
    fn sidecarsets_mix_matching_selectors_and_namespace_pins() {
        let sets: Vec<serde_json::Value> = (0..50).map(|i| sidecarset(i, 50, 10, "ns").1).collect();
        let matching: Vec<&serde_json::Value> = sets
            .iter()
            .filter(|s| {
                s["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .starts_with("bench-adm-match-")
            })
            .collect();
        assert_eq!(matching.len(), 10);
        let pinned = |v: &[&serde_json::Value]| {
            v.iter()
                .filter(|s| s["spec"].get("namespaceSelector").is_some())
                .count()
        };
        assert_eq!(pinned(&matching), 5);
        assert_eq!(pinned(&sets.iter().collect::<Vec<_>>()), 25);
        let by_expression = matching
            .iter()
            .filter(|s| s["spec"]["selector"].get("matchExpressions").is_some())
            .count();
        assert_eq!(by_expression, 5);
        let names: BTreeSet<&str> = sets
            .iter()
            .map(|s| s["spec"]["containers"][0]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 50);
    }
}
