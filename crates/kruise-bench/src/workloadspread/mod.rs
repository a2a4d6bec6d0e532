//! `kruise-bench workloadspread` (issue #37): WorkloadSpread admission latency and the manager's
//! idle CPU with `--workloadspreads` (100) WorkloadSpreads and `--pods` (10,000) pods, for each
//! `--manager` given (kruise-manager, or the Go OpenKruise v1.9.0 manager through
//! `hack/bench/openkruise-manager.sh`) beside a baseline with no manager and no webhook
//! configuration. OpenKruise users reported (openkruise/kruise#1089) that WorkloadSpread made
//! the Go manager burn 150–250 mCPU idle.
//!
//! The run needs a testbed to itself: it installs and deletes the cluster-wide
//! `kruise-*-webhook-configuration`s (and refuses to start while they exist). Every case, in
//! turn (baseline first, then the managers in the order given):
//! 1. `--namespaces` (10) fresh namespaces.
//! 2. The manager is started as users run it: cluster-wide, webhooks on (reached at
//!    `https://127.0.0.1:<--webhook-port>`, `POD_NAMESPACE=kruise-system`, `WEBHOOK_HOST`,
//!    `WEBHOOK_PORT`), leader election off, its default feature gates (WorkloadSpread is Beta,
//!    on by default in both), the same `--rest-config-qps/-burst` (`--qps`/`--burst`, default
//!    OpenKruise's 30/50) and `--manager-arg`s for every manager; the run waits for `/readyz`.
//! 3. The WorkloadSpreads, spread evenly over the namespaces, each with `targetRef` to its own
//!    Deployment (apps/v1) and `requiredNodeSelectorTerm`s over the kwok zones
//!    (`topology.kubernetes.io/zone`): three in four have subsets zone-a (`maxReplicas: 40%`),
//!    zone-b (`40%`) and zone-c (no limit), one in four zone-a (`50%`) and zone-b (no limit);
//!    every other one patches a label into its pods (`bench.kruise-rs.io/subset`). The run
//!    waits until the controller has written every WorkloadSpread's status (its cache holds
//!    them) and the pod webhook's scope covers the namespaces (`mpod.kb.io`'s `matchConditions`
//!    name each of them, or it has none: every pod is sent, as OpenKruise configures it).
//! 4. One Deployment per WorkloadSpread, `--pods / --workloadspreads` (100) replicas each, all
//!    created at once; kube-controller-manager creates the pods (the testbed's client QPS 200),
//!    each through `/mutate-pod`; the run waits until the Deployments report every pod created
//!    and every pod Ready (kwok). Measured over that span: `/mutate-pod` p50/p99/mean from the
//!    manager's `controller_runtime_webhook_latency_seconds` (delta; interpolated inside the
//!    buckets as `histogram_quantile` does, means exact), `mpod.kb.io` CREATE as the API server
//!    timed it (`apiserver_admission_webhook_admission_duration_seconds`), pod CREATE requests as
//!    the API server timed them (`apiserver_request_duration_seconds`, the baseline's too), the
//!    time from the first Deployment create to all pods created and to all Ready, the manager's
//!    CPU seconds (`/proc/<pid>/stat` utime + stime) and API requests, its peak RSS (VmHWM).
//!    Checked: every pod carries `apps.kruise.io/matched-workloadspread` naming its
//!    WorkloadSpread, no subset holds more pods than its `maxReplicas`, every pod runs in its
//!    subset's zone and carries its subset's patch; a violation fails the run (after the report).
//! 5. Settle: until every WorkloadSpread's subset `replicas` add up to its Deployment's replicas
//!    and no WorkloadSpread or pod has changed (resourceVersion) for `--settle-seconds` (10);
//!    then **idle CPU**: the manager's CPU over `--idle-seconds` (60) with nothing changing, as
//!    millicores, its API requests and admissions meanwhile, objects that changed meanwhile, and
//!    its RSS (VmRSS) at the end.
//! 6. Teardown: the manager stopped (the Go one's webhook configurations and CRD conversion
//!    undone by `openkruise-manager.sh --cleanup`), the webhook configurations deleted, the
//!    Deployments and pods deleted, the namespaces deleted and waited for.
//!
//! The baseline runs steps 1, 4 and 6 with no manager. The report prints every figure per case
//! with its ratio to the baseline (where the baseline has one) and kruise-rs / Go when both ran;
//! the JSON (`--json`, default `target/kruise-bench/workloadspread.json`) holds every figure.
//! Kwok nodes are added to hold the pods (default: enough for 200 pods per node in the fullest
//! zone) and removed at the end, as are `kruise-system` and the certificate Secret when the run
//! created them. A failed case is reported and the next one still runs; the exit code is
//! non-zero if any case failed or found a violation.

mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret};
use kruise_api::apps::v1alpha1::{InjectWorkloadSpread, WorkloadSpread};
use kruise_api::keys;
use kruise_e2e::{TestEnv, TestNamespace, install_crds, testbed_kubeconfig};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use crate::admission::measure::{
    ApiserverView, Histogram, PodWebhook, clock_ticks, cpu_seconds, load_average, scrape_apiserver,
    scrape_apiserver_requests, scrape_pod_webhook,
};
use crate::admission::{
    CERT_SECRET, KRUISE_NAMESPACE, delete_pods, delete_webhook_configurations,
    ensure_kruise_namespace, pod_webhook_conditions, webhook_configurations,
};
use crate::cli::ManagerClientArgs;
use crate::cluster::{ensure_nodes, kwok_node_names};
use crate::metrics::{Requests, http_client, scrape_requests};
use crate::process::{Manager, is_openkruise, openkruise_cleanup, proc_status_mib, wait_ready};

/// Label (key and value) of the run's WorkloadSpreads, Deployments and pods.
const LABEL: (&str, &str) = ("kruise-bench", "workloadspread");
/// Label the patched subsets add to their pods (value: the subset's zone letter).
const PATCH_LABEL: &str = "bench.kruise-rs.io/subset";
const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// Pods per kwok node (of 250) the default node count plans for, in the fullest zone.
const PODS_PER_NODE: usize = 200;

#[derive(Debug, Clone, Args)]
pub(crate) struct WorkloadSpreadArgs {
    /// A manager to measure (repeatable; measured in the order given, after the baseline).
    /// `hack/bench/openkruise-manager.sh` runs the Go manager (OPENKRUISE_MANAGER,
    /// OPENKRUISE_SRC). Default: target/release/kruise-manager.
    #[arg(long = "manager", value_name = "PATH")]
    pub(crate) managers: Vec<PathBuf>,

    /// Skip the baseline case (no manager, no webhook configuration).
    #[arg(long)]
    pub(crate) no_baseline: bool,

    /// WorkloadSpreads (one Deployment each), spread evenly over --namespaces.
    #[arg(long, default_value_t = 100)]
    pub(crate) workloadspreads: usize,

    /// Fresh namespaces per case.
    #[arg(long, default_value_t = 10)]
    pub(crate) namespaces: usize,

    /// Pods in all (--pods / --workloadspreads replicas per Deployment).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) pods: usize,

    /// Minimum number of kwok nodes (missing ones are created, and deleted at the end); default:
    /// 3 x enough for 200 pods per node in the fullest zone.
    #[arg(long)]
    pub(crate) nodes: Option<usize>,

    /// Seconds the idle manager's CPU is measured, once everything has settled.
    #[arg(long, default_value_t = 60)]
    pub(crate) idle_seconds: u64,

    /// Seconds without any change to a WorkloadSpread or pod (and with every WorkloadSpread's
    /// subsets adding up to its replicas) that count as settled.
    #[arg(long, default_value_t = 10)]
    pub(crate) settle_seconds: u64,

    /// Extra flag passed to every manager (repeatable), e.g.
    /// --manager-arg=--feature-gates=AllAlpha=true. Every manager gets the same flags.
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) manager_args: Vec<String>,

    #[command(flatten)]
    pub(crate) client: ManagerClientArgs,

    /// Timeout of each wait (all Ready, settled, namespaces gone), in seconds.
    #[arg(long, default_value_t = 1800)]
    pub(crate) timeout_seconds: u64,

    /// Where the machine-readable result is written (JSON; relative paths from the repository
    /// root). Written on failure too, with each case's `error`.
    #[arg(long, default_value = "target/kruise-bench/workloadspread.json")]
    pub(crate) json: PathBuf,
}

// ---------------------------------------------------------------------------------------------
// The objects

/// One subset of a WorkloadSpread: its zone, `maxReplicas` as a percentage (None: no limit) and
/// whether it patches the subset label into its pods.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subset {
    pub(crate) name: String,
    pub(crate) zone: String,
    pub(crate) max_percent: Option<usize>,
    pub(crate) patched: bool,
}

impl Subset {
    /// `maxReplicas` of `replicas` (rounded up, as OpenKruise's
    /// `GetScaledValueFromIntOrPercent(..., true)`); None: no limit.
    pub(crate) fn limit(&self, replicas: usize) -> Option<usize> {
        self.max_percent.map(|p| (p * replicas).div_ceil(100))
    }
}

/// One WorkloadSpread and its Deployment (`app-<k>`, pods labelled `app: app-<k>`).
#[derive(Debug, Clone)]
pub(crate) struct Spread {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) deployment: String,
    pub(crate) subsets: Vec<Subset>,
}

/// The subsets of the `j`-th WorkloadSpread (see the module doc).
pub(crate) fn subsets(j: usize) -> Vec<Subset> {
    let patched = j % 2 == 1;
    let s = |letter: &str, max_percent| Subset {
        name: format!("subset-{letter}"),
        zone: format!("zone-{letter}"),
        max_percent,
        patched,
    };
    if j % 4 == 3 {
        vec![s("a", Some(50)), s("b", None)]
    } else {
        vec![s("a", Some(40)), s("b", Some(40)), s("c", None)]
    }
}

/// The pods each subset gets when they are assigned in order, each subset up to its limit
/// (what the webhook does with every subset schedulable): the expected distribution.
pub(crate) fn expected_counts(subsets: &[Subset], replicas: usize) -> Vec<usize> {
    let mut left = replicas;
    subsets
        .iter()
        .map(|s| {
            let n = s.limit(replicas).map_or(left, |l| l.min(left));
            left -= n;
            n
        })
        .collect()
}

/// The default node count: three zones, each with enough nodes for its expected pods at
/// [`PODS_PER_NODE`] per node (kwok nodes take 250), at least 10.
fn default_nodes(workloadspreads: usize, replicas: usize) -> usize {
    let mut per_zone: BTreeMap<String, usize> = BTreeMap::new();
    for j in 0..workloadspreads {
        let subsets = subsets(j);
        for (s, n) in subsets.iter().zip(expected_counts(&subsets, replicas)) {
            *per_zone.entry(s.zone.clone()).or_default() += n;
        }
    }
    let fullest = per_zone.values().copied().max().unwrap_or(0);
    (3 * fullest.div_ceil(PODS_PER_NODE)).max(10)
}

fn workloadspread_object(s: &Spread) -> Result<WorkloadSpread, String> {
    let subsets: Vec<serde_json::Value> = s
        .subsets
        .iter()
        .map(|sub| {
            let mut v = json!({
                "name": sub.name,
                "requiredNodeSelectorTerm": {"matchExpressions": [
                    {"key": ZONE_KEY, "operator": "In", "values": [sub.zone]}]},
            });
            if let Some(p) = sub.max_percent {
                v["maxReplicas"] = json!(format!("{p}%"));
            }
            if sub.patched {
                let letter = sub.zone.trim_start_matches("zone-");
                v["patch"] = json!({"metadata": {"labels": {PATCH_LABEL: letter}}});
            }
            v
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": s.name, "labels": {LABEL.0: LABEL.1}},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": s.deployment},
            "subsets": subsets,
        },
    }))
    .map_err(|e| format!("WorkloadSpread {}: {e}", s.name))
}

fn deployment_object(name: &str, replicas: usize) -> Result<Deployment, String> {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {LABEL.0: LABEL.1}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, LABEL.0: LABEL.1}},
                "spec": {"terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "main", "image": "nginx:1.25"}]},
            },
        },
    }))
    .map_err(|e| format!("Deployment {name}: {e}"))
}

fn selector() -> String {
    format!("{}={}", LABEL.0, LABEL.1)
}

// ---------------------------------------------------------------------------------------------
// What a case measures

/// What the correctness check found (manager cases).
#[derive(Debug, Clone, Default)]
pub(crate) struct Check {
    pub(crate) pods: usize,
    /// Pods without `apps.kruise.io/matched-workloadspread` (or with an unreadable one).
    pub(crate) unannotated: usize,
    /// Pods whose annotation names another WorkloadSpread or a subset it does not have.
    pub(crate) wrong_spread: usize,
    /// Subsets holding more pods than their `maxReplicas` (`ns/ws/subset: n > max`).
    pub(crate) over_max: Vec<String>,
    /// Pods on a node outside their subset's zone (or on no node).
    pub(crate) outside_zone: usize,
    /// Pods of a patched subset without the patch's label.
    pub(crate) unpatched: usize,
    /// Pods per subset name, and what the in-order assignment would give.
    pub(crate) per_subset: BTreeMap<String, (usize, usize)>,
    /// A few examples of the violations.
    pub(crate) examples: Vec<String>,
}

impl Check {
    pub(crate) fn violations(&self) -> usize {
        self.unannotated
            + self.wrong_spread
            + self.over_max.len()
            + self.outside_zone
            + self.unpatched
    }
}

/// One case: the baseline (no manager) or a manager.
#[derive(Debug, Clone, Default)]
pub(crate) struct Case {
    pub(crate) label: String,
    pub(crate) manager: Option<PathBuf>,
    pub(crate) error: Option<String>,
    pub(crate) nodes: usize,
    /// Manager start to `/readyz` 200.
    pub(crate) ready_manager: Option<Duration>,
    /// WorkloadSpreads created to all observed and in the pod webhook's scope.
    pub(crate) scope_wait: Option<Duration>,
    /// First Deployment create to all pods created / all Ready.
    pub(crate) created: Option<Duration>,
    pub(crate) ready: Option<Duration>,
    /// The manager's `/mutate-pod` over the creates (delta).
    pub(crate) webhook: Option<PodWebhook>,
    /// `mpod.kb.io` CREATE as the API server saw it over the creates.
    pub(crate) apiserver: Option<ApiserverView>,
    /// Pod CREATE requests as the API server timed them over the creates.
    pub(crate) pod_creates: Option<Histogram>,
    /// Manager CPU seconds and API requests from the first create to all Ready.
    pub(crate) cpu_creates: Option<f64>,
    pub(crate) requests_creates: Option<Requests>,
    pub(crate) load: Option<f64>,
    pub(crate) check: Option<Check>,
    /// All Ready to the start of the quiet window (the last change seen); None: not settled.
    pub(crate) settled: Option<Duration>,
    /// CPU seconds over the idle window, its length, and what happened meanwhile.
    pub(crate) idle_cpu: Option<f64>,
    pub(crate) idle_window: Option<Duration>,
    pub(crate) idle_requests: Option<Requests>,
    pub(crate) idle_admissions: Option<f64>,
    pub(crate) idle_changes: Option<usize>,
    pub(crate) peak_rss_mib: Option<f64>,
    pub(crate) idle_rss_mib: Option<f64>,
}

impl Case {
    /// Idle CPU in millicores.
    pub(crate) fn idle_millicores(&self) -> Option<f64> {
        match (self.idle_cpu, self.idle_window) {
            (Some(c), Some(w)) if w.as_secs_f64() > 0.0 => Some(c / w.as_secs_f64() * 1000.0),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The run

pub(crate) async fn workloadspread(mut a: WorkloadSpreadArgs) -> Result<(), String> {
    if a.managers.is_empty() {
        a.managers
            .push(PathBuf::from("target/release/kruise-manager"));
    }
    if a.workloadspreads == 0
        || a.namespaces == 0
        || !a.workloadspreads.is_multiple_of(a.namespaces)
        || !a.pods.is_multiple_of(a.workloadspreads)
    {
        return Err(
            "need --workloadspreads a multiple of --namespaces and --pods a multiple of --workloadspreads"
                .into(),
        );
    }
    if a.client.watch_namespace {
        return Err("--watch-namespace: the WorkloadSpread benchmark runs managers cluster-wide, as users do".into());
    }
    for m in &a.managers {
        if !m.is_file() {
            return Err(format!("manager {} not found", m.display()));
        }
    }
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    println!("testbed: {}", testbed_kubeconfig().display());
    let present = webhook_configurations(&env).await?;
    if !present.is_empty() {
        return Err(format!(
            "{} already exist: another manager serves this testbed's webhooks cluster-wide. The \
             benchmark runs its own managers cluster-wide and deletes these configurations, so it \
             needs a testbed to itself (KRUISE_TESTBED_DIR=... KRUISE_TESTBED_PORT_BASE=... \
             hack/testbed/testbed.sh up); delete them if a previous run left them",
            present.join(" and ")
        ));
    }
    let http = http_client()?;
    let replicas = a.pods / a.workloadspreads;
    let nodes_before = kwok_node_names(&env).await?;
    let nodes = ensure_nodes(
        &env,
        a.nodes
            .unwrap_or_else(|| default_nodes(a.workloadspreads, replicas)),
    )
    .await?;
    install_crds(&env).await.map_err(|e| e.to_string())?;
    let created_kruise_namespace = ensure_kruise_namespace(&env).await?;
    let secret_existed = Api::<Secret>::namespaced(env.client.clone(), KRUISE_NAMESPACE)
        .get_opt(CERT_SECRET)
        .await
        .map_err(|e| e.to_string())?
        .is_some();

    let non_go = a.managers.iter().filter(|m| !is_openkruise(m)).count();
    let mut plan: Vec<(String, Option<PathBuf>)> = Vec::new();
    if !a.no_baseline {
        plan.push(("baseline".into(), None));
    }
    for m in &a.managers {
        let label = if is_openkruise(m) {
            "Go OpenKruise".to_string()
        } else if non_go == 1 {
            "kruise-rs".to_string()
        } else {
            m.display().to_string()
        };
        plan.push((label, Some(m.clone())));
    }
    let mut cases = Vec::new();
    let mut teardown_error = None;
    for (label, manager) in plan {
        let mut case = Case {
            label,
            manager,
            nodes,
            ..Case::default()
        };
        let torn_down = run_case(&env, &a, &http, &mut case).await;
        if let Some(e) = &case.error {
            eprintln!("case {}: FAILED: {e}", case.label);
        }
        cases.push(case);
        if let Err(e) = torn_down {
            // The testbed is in an unknown state: no further case.
            eprintln!("teardown: {e}");
            teardown_error = Some(e);
            break;
        }
    }
    let cleaned = cleanup(
        &env,
        created_kruise_namespace,
        secret_existed,
        &nodes_before,
    )
    .await;

    report::print(&a, &cases);
    let doc = report::json(&a, &cases);
    let path = if a.json.is_absolute() {
        a.json.clone()
    } else {
        kruise_e2e::repo_root().join(&a.json)
    };
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, format!("{doc:#}\n")));
    match written {
        Ok(()) => println!("\nresult (JSON): {}", path.display()),
        Err(e) => eprintln!("writing {}: {e}", path.display()),
    }

    let mut problems: Vec<String> = cases
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("{}: {e}", c.label)))
        .collect();
    for c in &cases {
        if let Some(ch) = &c.check
            && ch.violations() > 0
        {
            problems.push(format!(
                "{}: {} WorkloadSpread violations (see the report)",
                c.label,
                ch.violations()
            ));
        }
    }
    problems.extend(teardown_error);
    if let Err(e) = cleaned {
        problems.push(format!("cleanup: {e}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Runs one case and tears it down. A failure of the case is recorded in `case.error`; the
/// result is the teardown's.
async fn run_case(
    env: &TestEnv,
    a: &WorkloadSpreadArgs,
    http: &reqwest::Client,
    case: &mut Case,
) -> Result<(), String> {
    println!();
    println!(
        "== case: {}{} ==",
        case.label,
        case.manager.as_ref().map_or(
            " (no manager, no webhook configuration)".to_string(),
            |m| format!(" ({})", m.display())
        )
    );
    let mut namespaces = Vec::new();
    let mut manager: Option<Manager> = None;
    let body = async {
        for _ in 0..a.namespaces {
            namespaces.push(
                env.namespace("bench-ws")
                    .await
                    .map_err(|e| format!("creating a namespace: {e}"))?,
            );
        }
        case_body(env, a, http, &namespaces, &mut manager, case).await
    }
    .await;
    if let Err(e) = body {
        case.error = Some(e);
    }
    teardown(env, a, case.manager.as_deref(), manager, namespaces).await
}

async fn case_body(
    env: &TestEnv,
    a: &WorkloadSpreadArgs,
    http: &reqwest::Client,
    namespaces: &[TestNamespace],
    manager: &mut Option<Manager>,
    case: &mut Case,
) -> Result<(), String> {
    let replicas = a.pods / a.workloadspreads;
    let per_ns = a.workloadspreads / a.namespaces;
    let spreads: Vec<Spread> = namespaces
        .iter()
        .enumerate()
        .flat_map(|(i, ns)| {
            (0..per_ns).map(move |k| Spread {
                namespace: ns.name().to_string(),
                name: format!("spread-{k}"),
                deployment: format!("app-{k}"),
                subsets: subsets(i * per_ns + k),
            })
        })
        .collect();

    if let Some(binary) = case.manager.clone() {
        let mut extra = case_flags(a);
        extra.extend(a.manager_args.iter().cloned());
        let started = Instant::now();
        let m = manager.insert(Manager::start(
            &binary,
            None,
            &extra,
            a.client.webhook_port,
            &format!(
                "bench-ws-{}-{}.log",
                std::process::id(),
                case.label.replace(' ', "-")
            ),
        )?);
        println!(
            "  manager pid {} (log {}), flags {}",
            m.pid,
            m.log.display(),
            extra.join(" ")
        );
        wait_ready(http, m, Duration::from_secs(180)).await?;
        case.ready_manager = Some(started.elapsed());
        println!(
            "  ready (/readyz) in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        create_spreads(env, &spreads).await?;
        wait_observed(env, m, &spreads, Duration::from_secs(180)).await?;
        wait_scope(env, m, namespaces, Duration::from_secs(180)).await?;
        case.scope_wait = Some(t.elapsed());
    }

    // 4. The Deployments, measured.
    let ticks = clock_ticks();
    let web0 = match manager.as_ref() {
        Some(m) => Some(scrape_pod_webhook(http, m).await?),
        None => None,
    };
    let req0 = match manager.as_ref() {
        Some(m) => Some(scrape_requests(http, m).await?),
        None => None,
    };
    let api0 = scrape_apiserver(env).await?;
    let creates0 = scrape_apiserver_requests(env, "POST", "pods").await?;
    case.load = load_average();
    let cpu0 = manager.as_ref().and_then(|m| cpu_seconds(m.pid, ticks));
    let (created, ready, cpu1) =
        create_deployments(env, a, &spreads, replicas, manager.as_mut(), ticks).await?;
    let ready_at = Instant::now();
    case.created = Some(created);
    case.ready = Some(ready);
    if let (Some(c0), Some(c1)) = (cpu0, cpu1) {
        case.cpu_creates = Some(c1 - c0);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    case.apiserver = Some(scrape_apiserver(env).await?.since(&api0));
    case.pod_creates = Some(
        scrape_apiserver_requests(env, "POST", "pods")
            .await?
            .since(&creates0),
    );
    if let Some(m) = manager.as_ref() {
        if let Some(w0) = &web0 {
            case.webhook = Some(scrape_pod_webhook(http, m).await?.since(w0));
        }
        if let Some(r0) = &req0 {
            case.requests_creates = Some(scrape_requests(http, m).await?.since(r0));
        }
        case.peak_rss_mib = proc_status_mib(m.pid, "VmHWM");
    }
    report::print_creates(case);

    let Some(m) = manager.as_mut() else {
        return Ok(());
    };
    case.check = Some(check(env, &spreads, replicas).await?);
    report::print_check(case);

    // 5. Settle, then idle.
    let timeout = Duration::from_secs(a.timeout_seconds);
    let (settled, fingerprint) = settle(env, a, m, &spreads, replicas, timeout, ready_at).await?;
    case.settled = settled;
    let req0 = scrape_requests(http, m).await?;
    let web0 = scrape_pod_webhook(http, m).await?;
    let cpu0 = cpu_seconds(m.pid, ticks);
    let start = Instant::now();
    println!(
        "  idle: measuring the manager's CPU for {} s",
        a.idle_seconds
    );
    let idle = Duration::from_secs(a.idle_seconds);
    while start.elapsed() < idle {
        let left = idle.saturating_sub(start.elapsed());
        tokio::time::sleep(left.min(Duration::from_secs(15))).await;
        m.check_running()?;
        if let Some(c) = cpu_seconds(m.pid, ticks).zip(cpu0).map(|(c, c0)| c - c0) {
            println!(
                "  idle: {:.0}s, {:.0} mCPU so far",
                start.elapsed().as_secs_f64(),
                c / start.elapsed().as_secs_f64() * 1000.0
            );
        }
    }
    let cpu1 = cpu_seconds(m.pid, ticks);
    case.idle_window = Some(start.elapsed());
    case.idle_cpu = cpu1.zip(cpu0).map(|(c1, c0)| c1 - c0);
    case.idle_rss_mib = proc_status_mib(m.pid, "VmRSS");
    case.peak_rss_mib = proc_status_mib(m.pid, "VmHWM");
    case.idle_requests = Some(scrape_requests(http, m).await?.since(&req0));
    case.idle_admissions = Some(scrape_pod_webhook(http, m).await?.since(&web0).requests);
    let after = fingerprint_of(env).await?;
    case.idle_changes = Some(changed(&fingerprint, &after));
    report::print_idle(case);
    Ok(())
}

/// The flags every manager gets: client QPS and burst.
fn case_flags(a: &WorkloadSpreadArgs) -> Vec<String> {
    a.client.rest_config_flags().to_vec()
}

async fn create_spreads(env: &TestEnv, spreads: &[Spread]) -> Result<(), String> {
    for s in spreads {
        let api: Api<WorkloadSpread> = Api::namespaced(env.client.clone(), &s.namespace);
        api.create(&PostParams::default(), &workloadspread_object(s)?)
            .await
            .map_err(|e| format!("creating WorkloadSpread {}/{}: {e}", s.namespace, s.name))?;
    }
    println!("  {} WorkloadSpreads created", spreads.len());
    Ok(())
}

/// Waits until the controller has written every WorkloadSpread's status (observedGeneration,
/// one status per subset): the manager's cache holds them.
async fn wait_observed(
    env: &TestEnv,
    m: &mut Manager,
    spreads: &[Spread],
    timeout: Duration,
) -> Result<(), String> {
    let api: Api<WorkloadSpread> = Api::all(env.client.clone());
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        m.check_running()?;
        let list = api
            .list(&ListParams::default().labels(&selector()))
            .await
            .map_err(|e| format!("listing WorkloadSpreads: {e}"))?
            .items;
        let observed = list
            .iter()
            .filter(|w| {
                w.status.as_ref().is_some_and(|s| {
                    s.observed_generation == w.metadata.generation
                        && s.subset_statuses.as_ref().map_or(0, Vec::len) == w.spec.subsets.len()
                })
            })
            .count();
        if observed == spreads.len() {
            println!(
                "  every WorkloadSpread's status written in {:.1}s",
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{observed}/{} WorkloadSpreads have a status after {timeout:?} (log {})",
                spreads.len(),
                m.log.display()
            ));
        }
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!("  WorkloadSpread statuses: {observed}/{}", spreads.len());
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until `mpod.kb.io` would be called for the pods of every namespace: its
/// `matchConditions` name each namespace, or it has none (OpenKruise's configuration).
async fn wait_scope(
    env: &TestEnv,
    m: &mut Manager,
    namespaces: &[TestNamespace],
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        m.check_running()?;
        let missing = match pod_webhook_conditions(env).await? {
            None => namespaces.len(),
            Some(c) if c.is_empty() => {
                println!("  mpod.kb.io has no matchConditions: every pod is sent");
                return Ok(());
            }
            Some(c) => {
                let text = c.join("\n");
                namespaces
                    .iter()
                    .filter(|ns| !text.contains(&format!("'{}'", ns.name())))
                    .count()
            }
        };
        if missing == 0 {
            println!(
                "  mpod.kb.io's matchConditions name every namespace after {:.1}s",
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "mpod.kb.io does not cover {missing} namespaces after {timeout:?} (log {})",
                m.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Creates every Deployment (16 requests in flight) and waits until their statuses report all
/// pods created and all Ready. Returns both times from the first create, and the manager's CPU
/// seconds when all were Ready.
async fn create_deployments(
    env: &TestEnv,
    a: &WorkloadSpreadArgs,
    spreads: &[Spread],
    replicas: usize,
    mut manager: Option<&mut Manager>,
    ticks: f64,
) -> Result<(Duration, Duration, Option<f64>), String> {
    let total = (replicas * spreads.len()) as i64;
    println!(
        "  creating {} Deployments x {replicas} replicas = {total} pods",
        spreads.len()
    );
    let start = Instant::now();
    let results: Vec<Result<(), String>> = futures::stream::iter(spreads)
        .map(|s| {
            let api: Api<Deployment> = Api::namespaced(env.client.clone(), &s.namespace);
            async move {
                api.create(
                    &PostParams::default(),
                    &deployment_object(&s.deployment, replicas)?,
                )
                .await
                .map(|_| ())
                .map_err(|e| format!("creating Deployment {}/{}: {e}", s.namespace, s.deployment))
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    let api: Api<Deployment> = Api::all(env.client.clone());
    let timeout = Duration::from_secs(a.timeout_seconds);
    let mut created = None;
    let mut last_print = Instant::now();
    loop {
        if let Some(m) = manager.as_deref_mut() {
            m.check_running()?;
        }
        let list = api
            .list(&ListParams::default().labels(&selector()))
            .await
            .map_err(|e| format!("listing Deployments: {e}"))?
            .items;
        let (mut have, mut ready) = (0i64, 0i64);
        for d in &list {
            let st = d.status.clone().unwrap_or_default();
            have += i64::from(st.replicas.unwrap_or(0));
            ready += i64::from(st.ready_replicas.unwrap_or(0));
        }
        let now = start.elapsed();
        if created.is_none() && have >= total {
            created = Some(now);
            println!("  all {total} pods created in {:.1}s", now.as_secs_f64());
        }
        if ready >= total {
            let cpu = manager.as_deref().and_then(|m| cpu_seconds(m.pid, ticks));
            println!("  all {total} pods Ready in {:.1}s", now.as_secs_f64());
            return Ok((created.unwrap_or(now), now, cpu));
        }
        if now > timeout {
            return Err(format!(
                "{ready}/{total} pods Ready after {timeout:?} ({have} created)"
            ));
        }
        if last_print.elapsed() >= Duration::from_secs(5) {
            println!(
                "  pods created {have}/{total}, Ready {ready}/{total} ({:.0}s)",
                now.as_secs_f64()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Checks every pod against its WorkloadSpread (see [`Check`]).
async fn check(env: &TestEnv, spreads: &[Spread], replicas: usize) -> Result<Check, String> {
    let zones: BTreeMap<String, String> = Api::<Node>::all(env.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing nodes: {e}"))?
        .items
        .into_iter()
        .filter_map(|n| {
            let zone = n.metadata.labels.as_ref()?.get(ZONE_KEY)?.clone();
            Some((n.metadata.name?, zone))
        })
        .collect();
    let pods = Api::<Pod>::all(env.client.clone())
        .list(&ListParams::default().labels(&selector()))
        .await
        .map_err(|e| format!("listing pods: {e}"))?
        .items;
    let by_app: BTreeMap<(&str, &str), &Spread> = spreads
        .iter()
        .map(|s| ((s.namespace.as_str(), s.deployment.as_str()), s))
        .collect();
    let mut c = Check::default();
    let mut counts: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let example = |c: &mut Check, e: String| {
        if c.examples.len() < 10 {
            c.examples.push(e);
        }
    };
    for p in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        c.pods += 1;
        let ns = p.metadata.namespace.as_deref().unwrap_or("");
        let name = p.metadata.name.as_deref().unwrap_or("");
        let labels = p.metadata.labels.clone().unwrap_or_default();
        let Some(spread) = labels
            .get("app")
            .and_then(|app| by_app.get(&(ns, app.as_str())))
        else {
            continue;
        };
        let injected: Option<InjectWorkloadSpread> = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::MATCHED_WORKLOADSPREAD))
            .and_then(|v| serde_json::from_str(v).ok());
        let Some(injected) = injected else {
            c.unannotated += 1;
            example(
                &mut c,
                format!("{ns}/{name}: no {}", keys::MATCHED_WORKLOADSPREAD),
            );
            continue;
        };
        let Some(subset) = spread.subsets.iter().find(|s| s.name == injected.subset) else {
            c.wrong_spread += 1;
            example(
                &mut c,
                format!("{ns}/{name}: unknown subset {}", injected.subset),
            );
            continue;
        };
        if injected.name != spread.name {
            c.wrong_spread += 1;
            example(
                &mut c,
                format!("{ns}/{name}: assigned to {}", injected.name),
            );
            continue;
        }
        *counts
            .entry((ns.to_string(), spread.name.clone(), subset.name.clone()))
            .or_default() += 1;
        let node_zone = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .and_then(|n| zones.get(n));
        if node_zone != Some(&subset.zone) {
            c.outside_zone += 1;
            example(
                &mut c,
                format!(
                    "{ns}/{name}: subset {} on a node of zone {node_zone:?}",
                    subset.name
                ),
            );
        }
        let letter = subset.zone.trim_start_matches("zone-");
        if subset.patched && labels.get(PATCH_LABEL).map(String::as_str) != Some(letter) {
            c.unpatched += 1;
            example(
                &mut c,
                format!("{ns}/{name}: no label {PATCH_LABEL}={letter}"),
            );
        }
    }
    for s in spreads {
        let expected = expected_counts(&s.subsets, replicas);
        for (sub, want) in s.subsets.iter().zip(expected) {
            let n = counts
                .get(&(s.namespace.clone(), s.name.clone(), sub.name.clone()))
                .copied()
                .unwrap_or(0);
            let e = c.per_subset.entry(sub.name.clone()).or_default();
            e.0 += n;
            e.1 += want;
            if let Some(max) = sub.limit(replicas)
                && n > max
            {
                c.over_max.push(format!(
                    "{}/{}/{}: {n} > {max}",
                    s.namespace, s.name, sub.name
                ));
            }
        }
    }
    Ok(c)
}

/// `namespace/name -> resourceVersion` of the run's WorkloadSpreads and pods.
type Fingerprint = BTreeMap<String, String>;

async fn fingerprint_of(env: &TestEnv) -> Result<Fingerprint, String> {
    let lp = ListParams::default().labels(&selector());
    let mut out = Fingerprint::new();
    let ws = Api::<WorkloadSpread>::all(env.client.clone())
        .list_metadata(&lp)
        .await
        .map_err(|e| format!("listing WorkloadSpreads: {e}"))?;
    let pods = Api::<Pod>::all(env.client.clone())
        .list_metadata(&lp)
        .await
        .map_err(|e| format!("listing pods: {e}"))?;
    let metas = ws
        .items
        .into_iter()
        .map(|o| ("ws", o.metadata))
        .chain(pods.items.into_iter().map(|o| ("pod", o.metadata)));
    for (kind, m) in metas {
        out.insert(
            format!(
                "{kind}/{}/{}",
                m.namespace.unwrap_or_default(),
                m.name.unwrap_or_default()
            ),
            m.resource_version.unwrap_or_default(),
        );
    }
    Ok(out)
}

/// Objects added, removed or changed between two fingerprints.
fn changed(a: &Fingerprint, b: &Fingerprint) -> usize {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).count()
}

/// How many WorkloadSpreads report subset replicas adding up to `replicas` (and have observed
/// their generation).
async fn spreads_complete(env: &TestEnv, replicas: usize) -> Result<usize, String> {
    Ok(Api::<WorkloadSpread>::all(env.client.clone())
        .list(&ListParams::default().labels(&selector()))
        .await
        .map_err(|e| format!("listing WorkloadSpreads: {e}"))?
        .items
        .iter()
        .filter(|w| {
            w.status.as_ref().is_some_and(|s| {
                s.observed_generation == w.metadata.generation
                    && s.subset_statuses
                        .as_ref()
                        .map_or(0, |ss| ss.iter().map(|x| x.replicas.max(0) as usize).sum())
                        == replicas
            })
        })
        .count())
}

/// Waits until every WorkloadSpread's subsets add up to `replicas` and no WorkloadSpread or pod
/// has changed for `--settle-seconds`. Returns the time from `ready_at` (all pods Ready) to the
/// start of the quiet window (None if it did not settle within `timeout`: the idle figures are then taken anyway,
/// and say so) and the last fingerprint.
async fn settle(
    env: &TestEnv,
    a: &WorkloadSpreadArgs,
    m: &mut Manager,
    spreads: &[Spread],
    replicas: usize,
    timeout: Duration,
    ready_at: Instant,
) -> Result<(Option<Duration>, Fingerprint), String> {
    let start = Instant::now();
    let quiet = Duration::from_secs(a.settle_seconds);
    let mut since: Option<(Duration, Fingerprint)> = None;
    let mut last_print = Instant::now();
    loop {
        m.check_running()?;
        let complete = spreads_complete(env, replicas).await?;
        let fp = fingerprint_of(env).await?;
        let now = ready_at.elapsed();
        if complete == spreads.len() {
            match &since {
                Some((t, f)) if *f == fp => {
                    if now - *t >= quiet {
                        println!(
                            "  settled: statuses complete, nothing changed for {}s (last change {:.1}s after all Ready)",
                            a.settle_seconds,
                            t.as_secs_f64()
                        );
                        return Ok((Some(*t), fp));
                    }
                }
                Some((_, f)) => {
                    let n = changed(f, &fp);
                    since = Some((now, fp.clone()));
                    if last_print.elapsed() >= Duration::from_secs(5) {
                        println!(
                            "  settling: {n} objects changed ({:.0}s)",
                            now.as_secs_f64()
                        );
                        last_print = Instant::now();
                    }
                }
                None => since = Some((now, fp.clone())),
            }
        } else {
            since = None;
            if last_print.elapsed() >= Duration::from_secs(5) {
                println!(
                    "  settling: {complete}/{} WorkloadSpread statuses add up to {replicas} ({:.0}s)",
                    spreads.len(),
                    now.as_secs_f64()
                );
                last_print = Instant::now();
            }
        }
        if start.elapsed() > timeout {
            println!(
                "  NOT settled after {timeout:?} ({complete}/{} statuses complete); idle measured anyway",
                spreads.len()
            );
            return Ok((None, fp));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Stops the manager (the Go one's configurations and CRD conversion undone), removes the
/// webhook configurations, then the Deployments, pods and namespaces, and waits until the
/// namespaces are gone.
async fn teardown(
    env: &TestEnv,
    a: &WorkloadSpreadArgs,
    binary: Option<&Path>,
    manager: Option<Manager>,
    namespaces: Vec<TestNamespace>,
) -> Result<(), String> {
    println!("  teardown");
    if let Some(mut m) = manager {
        m.stop().await;
    }
    if let Some(b) = binary.filter(|b| is_openkruise(b)) {
        openkruise_cleanup(b)?;
    }
    delete_webhook_configurations(env).await?;
    let timeout = Duration::from_secs(a.timeout_seconds);
    let names: Vec<String> = namespaces.iter().map(|n| n.name().to_string()).collect();
    for ns in namespaces {
        let deployments: Api<Deployment> = ns.api();
        deployments
            .delete_collection(&DeleteParams::background(), &ListParams::default())
            .await
            .map_err(|e| format!("deleting Deployments in {}: {e}", ns.name()))?;
        delete_pods(&ns.api(), timeout).await?;
        ns.delete()
            .await
            .map_err(|e| format!("deleting a namespace: {e}"))?;
    }
    let api: Api<Namespace> = Api::all(env.client.clone());
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let mut left = 0;
        for n in &names {
            if api.get_opt(n).await.map_err(|e| e.to_string())?.is_some() {
                left += 1;
            }
        }
        if left == 0 {
            println!("  namespaces gone in {:.1}s", start.elapsed().as_secs_f64());
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!("{left} namespaces not gone after {timeout:?}"));
        }
        if last_print.elapsed() >= Duration::from_secs(10) {
            println!(
                "  {left} namespaces terminating ({:.0}s)",
                start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Removes what the run added: webhook configurations, `kruise-system` or the certificate
/// Secret if it created them, the kwok nodes it added.
async fn cleanup(
    env: &TestEnv,
    created_kruise_namespace: bool,
    secret_existed: bool,
    nodes_before: &BTreeSet<String>,
) -> Result<(), String> {
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
    if created_kruise_namespace {
        let api: Api<Namespace> = Api::all(env.client.clone());
        note(
            api.delete(KRUISE_NAMESPACE, &DeleteParams::background())
                .await
                .map(|_| ())
                .map_err(|e| format!("deleting namespace {KRUISE_NAMESPACE}: {e}")),
        );
    } else if !secret_existed {
        let api: Api<Secret> = Api::namespaced(env.client.clone(), KRUISE_NAMESPACE);
        match api.delete(CERT_SECRET, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => note(Err(format!("deleting Secret {CERT_SECRET}: {e}"))),
        }
    }
    crate::cluster::delete_added_kwok_nodes(env, nodes_before, &mut note).await;
    match first_error {
        None => {
            println!("  done");
            Ok(())
        }
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_alternate_limits_and_patches() {
        let s0 = subsets(0);
        assert_eq!(s0.len(), 3);
        assert_eq!(
            s0.iter().map(|s| s.max_percent).collect::<Vec<_>>(),
            [Some(40), Some(40), None]
        );
        assert!(s0.iter().all(|s| !s.patched));
        assert!(subsets(1).iter().all(|s| s.patched));
        let s3 = subsets(3);
        assert_eq!(
            s3.iter()
                .map(|s| (s.zone.as_str(), s.max_percent))
                .collect::<Vec<_>>(),
            [("zone-a", Some(50)), ("zone-b", None)]
        );
    }

    #[test]
    fn expected_counts_fill_subsets_in_order() {
        assert_eq!(expected_counts(&subsets(0), 100), [40, 40, 20]);
        assert_eq!(expected_counts(&subsets(3), 100), [50, 50]);
        // 40% of 7 rounds up to 3.
        assert_eq!(expected_counts(&subsets(0), 7), [3, 3, 1]);
        assert_eq!(expected_counts(&subsets(0), 1), [1, 0, 0]);
    }

    #[test]
    fn default_nodes_hold_the_fullest_zone() {
        // 75 x 40 + 25 x 50 = 4,250 pods in zone-a: 22 nodes of 200 per zone.
        assert_eq!(default_nodes(100, 100), 66);
        assert_eq!(default_nodes(4, 10), 10);
    }

    #[test]
    fn workloadspread_object_has_zones_limits_and_patches() {
        let s = Spread {
            namespace: "ns".into(),
            name: "spread-1".into(),
            deployment: "app-1".into(),
            subsets: subsets(1),
        };
        let v = serde_json::to_value(workloadspread_object(&s).unwrap()).unwrap();
        assert_eq!(v["spec"]["targetRef"]["name"], "app-1");
        assert_eq!(v["spec"]["targetRef"]["kind"], "Deployment");
        let sub = &v["spec"]["subsets"][0];
        assert_eq!(sub["maxReplicas"], "40%");
        assert_eq!(
            sub["requiredNodeSelectorTerm"]["matchExpressions"][0]["values"][0],
            "zone-a"
        );
        assert_eq!(sub["patch"]["metadata"]["labels"][PATCH_LABEL], "a");
        assert!(v["spec"]["subsets"][2].get("maxReplicas").is_none());
    }

    #[test]
    fn changed_counts_added_removed_and_modified() {
        let a: Fingerprint = [("x", "1"), ("y", "2")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let b: Fingerprint = [("x", "1"), ("y", "3"), ("z", "1")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        assert_eq!(changed(&a, &a), 0);
        assert_eq!(changed(&a, &b), 2);
    }
}
