//! `kruise-manager`: the kruise-rs controller manager binary.
//!
//! Start-up mirrors OpenKruise's `main.go`: parse flags and feature gates, build the API client,
//! serve `/metrics` and `/healthz`/`/readyz`, campaign for the `kruise-manager` Lease, and run the
//! controllers while leading. Exit codes: 0 after a SIGTERM/SIGINT shutdown (in-flight
//! reconciles finished, Lease released); 1 on a start-up error, a controller failure, or lost
//! leadership.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{ArgAction, Parser};
use kruise_runtime::features::FeatureGates;
use kruise_runtime::leader::{self, LeaderElectionConfig, LeaderElector};
use kruise_runtime::metrics::Metrics;
use kruise_runtime::process::{LogFormat, init_logging};
use kruise_runtime::runner::{self as runtime, CancellationToken, Context, ControllerConfig};
use kruise_runtime::server;
use tokio::task::JoinHandle;

/// kruise-manager: OpenKruise controllers, rebuilt in Rust.
#[derive(Debug, Parser)]
#[command(name = "kruise-manager", version)]
struct Args {
    /// Path to a kubeconfig. Without it: $KUBECONFIG, ~/.kube/config, then in-cluster config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,

    /// Whether to campaign for the leader Lease before running controllers.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", require_equals = false)]
    enable_leader_election: bool,

    /// Namespace of the leader election Lease.
    #[arg(long, default_value = "kruise-system")]
    leader_election_namespace: String,

    /// Name of the leader election Lease.
    #[arg(long, default_value = "kruise-manager")]
    leader_election_id: String,

    /// Leader election lock kind; only `leases` is supported.
    #[arg(long, default_value = "leases")]
    leader_election_resource_lock: String,

    /// How long a standby waits after the last observed renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_go_duration)]
    leader_election_lease_duration: Duration,

    /// How long the leader retries renewing before giving up.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    leader_election_renew_deadline: Duration,

    /// Interval between leader election attempts.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration)]
    leader_election_retry_period: Duration,

    /// Address of the metrics endpoint (`/metrics`).
    #[arg(long, default_value = ":8080")]
    metrics_addr: String,

    /// Address of the health endpoints (`/healthz`, `/readyz`).
    #[arg(long, default_value = ":8000")]
    health_probe_addr: String,

    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    /// Log verbosity (klog style): 0-1 info, 2-4 debug, 5+ trace. RUST_LOG overrides it.
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    verbosity: u8,

    /// Feature gates, `Name=bool,…` (repeatable). Unknown names are an error.
    #[arg(long)]
    feature_gates: Vec<String>,

    /// `--<controller>-workers` of every controller of the registry that has one (added to the
    /// command by [`command`], read by [`parse_args`]).
    #[arg(skip)]
    workers: std::collections::BTreeMap<&'static str, u16>,

    /// Daemon pods are bound to their node by the scheduler (a `metadata.name` node affinity);
    /// `false` sets `spec.nodeName` instead.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    assign_pods_by_scheduler: bool,

    /// Serve the admission and conversion webhooks and maintain their certificates and
    /// configurations. On by default, as OpenKruise's manager always serves them (its chart
    /// registers them); `--webhook-server=false` runs the controllers only, e.g. beside another
    /// manager that serves the cluster's webhooks.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    webhook_server: bool,

    /// Port of the webhook server (also read from OpenKruise's WEBHOOK_PORT).
    #[arg(long, env = "WEBHOOK_PORT", default_value_t = 9876)]
    webhook_port: u16,

    /// Address the webhook server binds.
    #[arg(long, default_value = "0.0.0.0")]
    webhook_bind_address: String,

    /// Reach the webhook at https://<host>:<port> instead of through Service
    /// kruise-webhook-service (e.g. 127.0.0.1 when the manager runs outside the cluster; also
    /// read from OpenKruise's WEBHOOK_HOST).
    #[arg(long, env = "WEBHOOK_HOST")]
    webhook_host: Option<String>,

    /// Use externally issued certificates (cert-manager style): read Secret
    /// kruise-webhook-certs (tls.crt, tls.key, ca.crt) without ever writing it, keep the webhook
    /// configurations current (webhooks, failure policies, timeouts, the pod webhook's scope)
    /// without touching their caBundle, and check that the injected caBundles match. Same as
    /// the EnableExternalCerts feature gate.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    webhook_external_certs: bool,

    /// failurePolicy of one webhook, `<name>=Fail|Ignore` (repeatable or comma-separated;
    /// default Fail for every webhook — the pod webhook is only called for pods a Kruise
    /// feature acts on, see --pod-webhook-scope).
    #[arg(long, value_delimiter = ',', value_parser = parse_failure_policy)]
    webhook_failure_policy: Vec<(String, String)>,

    /// timeoutSeconds of every webhook (1–30; the API server waits at most this long for an
    /// answer).
    #[arg(long, default_value_t = kruise_webhook::controller::DEFAULT_TIMEOUT_SECONDS,
          value_parser = clap::value_parser!(i32).range(1..=30))]
    webhook_timeout_seconds: i32,

    /// Which pods the pod webhook (mpod.kb.io) is called for: `needed` (only pods a Kruise
    /// feature can act on: Kruise-owned, container launch priority, selected by a SidecarSet —
    /// a matchConditions expression kept current as SidecarSets change) or `all` (OpenKruise's
    /// configuration: every pod outside control-plane namespaces).
    #[arg(long, default_value = "needed", value_parser = ["needed", "all"])]
    pod_webhook_scope: String,

    /// Niceness (0–19) of the threads that run controllers, informers and leader election;
    /// admission is served on threads of its own at the process's niceness. A positive value
    /// lets the kernel prefer an admission answer — the API server holds every pod create for
    /// it — over a reconcile pass whenever both want a CPU; the controllers still get all the
    /// CPU admission leaves. 0 runs both at the same priority (kruise-rs's own flag).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i32).range(0..=19))]
    controller_nice: i32,

    /// Apply the webhooks only to this namespace (for tests sharing a cluster).
    #[arg(long, hide = true)]
    webhook_only_namespace: Option<String>,

    /// Append `-<suffix>` to the webhook configuration names (for tests running managers side
    /// by side).
    #[arg(long, hide = true)]
    webhook_configuration_suffix: Option<String>,

    /// Namespace whose objects the controllers watch (default: all namespaces).
    #[arg(long)]
    namespace: Option<String>,

    // Help text listing the controllers of the registry: `controllers_help`.
    #[arg(long, value_delimiter = ',', default_value = "*", help = controllers_help())]
    controllers: Vec<String>,

    /// Whether CloneSet scaling ignores pods in the PreparingDelete lifecycle state when counting
    /// replicas (OpenKruise's `--cloneset-scaling-exclude-preparing-delete`).
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    cloneset_scaling_exclude_preparing_delete: bool,

    /// How long a controller waits for its caches' initial list before the manager exits
    /// (controller-runtime's CacheSyncTimeout; OpenKruise's `--controller-cache-sync-timeout`).
    #[arg(long, alias = "controller-cache-sync-timeout", default_value = "2m", value_parser = parse_go_duration)]
    cache_sync_timeout: Duration,

    /// How the shared cache makes its initial lists: `auto` streams them (Kubernetes' WatchList,
    /// objects one by one, a lower start-up peak) when a probe shows the API server can, else
    /// LISTs from its watch cache; `stream` or `list` force one way.
    #[arg(long, default_value = "auto")]
    cache_initial_list: kruise_runtime::cache::InitialList,

    /// Minimum frequency at which every watched object is reconciled again (OpenKruise's flag,
    /// controller-runtime's SyncPeriod; Go duration). Unset or `0`: no periodic resync, only
    /// changes (OpenKruise's chart passes `--sync-period=0`).
    #[arg(long, value_parser = parse_go_duration)]
    sync_period: Option<Duration>,

    /// klog's `--logtostderr` (OpenKruise's manifests pass `--logtostderr=true`). kruise-manager
    /// always logs to stderr; `false` (klog's log files) is refused.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    logtostderr: bool,

    /// OpenKruise's `--enable-pprof`. kruise-manager has no Go profiler endpoint: `false` is
    /// accepted, `true` is refused.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_pprof: bool,

    /// How long an unsatisfied expectation is trusted before it is treated as leaked.
    #[arg(long, default_value = "5m", value_parser = parse_go_duration)]
    expectation_timeout: Duration,

    /// Client-side rate limit of API requests: sustained requests per second of each API
    /// resource's token bucket (OpenKruise's flag and default; a value <= 0 means
    /// controller-runtime's default 20, as in OpenKruise). Watches are not throttled.
    #[arg(long, default_value_t = 30, allow_negative_numbers = true)]
    rest_config_qps: i32,

    /// Client-side burst of each API resource's token bucket (OpenKruise's flag and default; a
    /// value <= 0 means controller-runtime's default 30, as in OpenKruise).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    rest_config_burst: i32,

    /// How long to wait for in-flight reconciles on shutdown before exiting anyway.
    #[arg(long, default_value = "30s", value_parser = parse_go_duration)]
    graceful_shutdown_timeout: Duration,
}

/// Parses a duration flag: Go's `time.Duration` syntax (a sequence of decimal numbers with
/// units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`: `5m`, `1h30m`, `1.5s`, `300ms`, or `0`), read by
/// jiff's duration parser — which also accepts its friendly spellings (`5 m`, `2 mins`) and ISO
/// 8601 (`PT5M`). Negative durations are refused.
fn parse_go_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let d: jiff::SignedDuration = t
        .parse()
        .map_err(|e| format!("invalid duration {s:?} (expected e.g. 30s, 5m, 1h30m): {e}"))?;
    Duration::try_from(d).map_err(|_| format!("invalid duration {s:?}: must not be negative"))
}

use kruise_manager::controllers::{ControllerFlags, ControllerFuture, REGISTRY as CONTROLLERS};

/// `--controllers`' help: the syntax and every controller of the registry.
fn controllers_help() -> String {
    format!(
        "Controllers to run (kruise-rs extension, kube-controller-manager style): `*` = all, \
         `name` enables, `-name` disables. Known: {}",
        known_controllers().join(", ")
    )
}

/// The flags: [`Args`] plus `--<name>-workers` (max concurrent reconciles) for every
/// controller of the registry with a worker count ([`kruise_manager::controllers::ControllerEntry::workers`]).
fn command() -> clap::Command {
    use clap::CommandFactory;
    CONTROLLERS
        .iter()
        .filter_map(|c| c.workers.map(|default| (c.name, c.workers_flag, default)))
        .fold(Args::command(), |cmd, (name, flag, default)| {
            cmd.arg(
                clap::Arg::new(name)
                    .long(flag.map_or_else(|| format!("{name}-workers"), str::to_owned))
                    .value_parser(clap::value_parser!(u16))
                    .default_value(default.to_string())
                    .help(format!("Max concurrent {name} reconciles")),
            )
        })
}

/// Parses the command line ([`command`]).
fn parse_args<I, T>(argv: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = command().try_get_matches_from(argv)?;
    let mut args = Args::from_arg_matches(&matches)?;
    for c in CONTROLLERS.iter().filter(|c| c.workers.is_some()) {
        if let Some(n) = matches.get_one::<u16>(c.name) {
            args.workers.insert(c.name, *n);
        }
    }
    Ok(args)
}

/// Names accepted by `--controllers`.
fn known_controllers() -> Vec<&'static str> {
    CONTROLLERS.iter().map(|c| c.name).collect()
}

/// Whether controller `name` runs under `--controllers` (kube-controller-manager semantics:
/// `*` enables every controller, `foo` enables foo, `-foo` disables foo; the last word wins
/// over `*`).
fn controller_enabled(spec: &[String], name: &str) -> bool {
    let words = || spec.iter().flat_map(|s| s.split(',')).map(str::trim);
    if words().any(|w| w.strip_prefix('-') == Some(name)) {
        return false;
    }
    words().any(|w| w == name || w == "*")
}

/// Rejects names in `--controllers` that are not controllers.
fn validate_controllers(spec: &[String]) -> anyhow::Result<()> {
    let known = known_controllers();
    for word in spec.iter().flat_map(|s| s.split(',')).map(str::trim) {
        let name = word.strip_prefix('-').unwrap_or(word);
        if !(name == "*" || name.is_empty() || known.contains(&name)) {
            bail!("--controllers: {name:?} is not a known controller (known: {known:?})");
        }
    }
    Ok(())
}

/// Sets up every enabled controller: their informers start filling the shared cache at once
/// (controller-runtime starts caches before leader election too), their workers only when the
/// returned futures are run. Each controller writes through a client of its own from `clients`
/// (its own token buckets, as OpenKruise's `NewClientFromManager(mgr, name)`); everything else
/// in its context is the process's (cache, metrics, Event recorder, readiness, shutdown).
///
/// # Errors
/// A controller's client could not be built.
fn setup_controllers(
    ctx: &Arc<Context>,
    flags: &ControllerFlags,
    clients: &kruise_runtime::process::ApiClients,
) -> anyhow::Result<Vec<ControllerFuture>> {
    CONTROLLERS
        .iter()
        .filter(|c| controller_enabled(&flags.controllers, c.name) && c.gated_on(&ctx.gates))
        .map(|c| {
            let client = clients
                .client()
                .with_context(|| format!("building the API client of controller {}", c.name))?;
            let own = Arc::new(Context {
                client,
                ..Context::clone(ctx)
            });
            Ok((c.setup)(&own, flags))
        })
        .collect()
}

/// Runs the set-up controllers until `ctx.shutdown` is cancelled. Returns the first controller
/// error.
async fn run_controllers(
    ctx: Arc<Context>,
    controllers: Vec<ControllerFuture>,
) -> Result<(), runtime::Error> {
    if controllers.is_empty() {
        tracing::warn!("no controllers enabled; idling until shutdown");
        ctx.shutdown.cancelled().await;
        return Ok(());
    }
    futures::future::try_join_all(controllers).await.map(|_| ())
}

/// Starts the admission webhook server and its certificate/configuration controller (every
/// replica serves webhooks, leader or not, as OpenKruise does). `/readyz` waits for the first
/// certificate sync.
async fn start_webhooks(
    args: &Args,
    ctx: &Arc<Context>,
    admission_client: kube::Client,
    stop: CancellationToken,
) -> anyhow::Result<JoinHandle<Result<(), server::Error>>> {
    use kruise_webhook::{HandlerContext, controller, server as wserver};
    let namespace = kruise_webhook::kruise_namespace();
    let webhooks = webhook_selection(&args.controllers, &ctx.gates);
    // SidecarSets are read (pod webhook scope, injection, validation) only when this manager
    // serves SidecarSets: otherwise their CRD may not even be installed.
    let serves_sidecarsets = webhooks.serves_name("vsidecarset.kb.io");
    let sidecarsets = serves_sidecarsets.then(|| {
        ctx.cache
            .cluster_informer::<kruise_api::apps::v1beta1::SidecarSet>()
    });
    // PersistentPodStates, for their validation and the pod webhook's injection and scope.
    let serves_pps = webhooks.serves_name("vpersistentpodstate.kb.io");
    let persistent_pod_states = serves_pps.then(|| {
        ctx.cache
            .informer::<kruise_api::apps::v1alpha1::PersistentPodState>()
    });
    // And WorkloadSpreads, when this manager serves them (the pod webhooks' scope).
    let workload_spreads = webhooks.serves_name("vworkloadspread.kb.io").then(|| {
        ctx.cache
            .informer::<kruise_api::apps::v1alpha1::WorkloadSpread>()
    });
    // So are PodUnavailableBudgets, for the eviction webhook's scope.
    let budgets = webhooks.serves_name("vpodeviction.kb.io").then(|| {
        ctx.cache
            .informer::<kruise_api::policy::v1alpha1::PodUnavailableBudget>()
    });
    // And PodDeletionFlowControls, when this manager runs their controller, serves the pod
    // validating webhooks, and the CRD is installed (it is kruise-rs's own: a cluster with
    // OpenKruise's CRDs only has none, and flow control is off rather than a cache that never
    // syncs).
    use kruise_manager::controllers::poddeletionflowcontrol as flow;
    let flow_controls = if controller_enabled(&args.controllers, flow::CONTROLLER_NAME)
        && webhooks.serves_name("vpod.kb.io")
        && flow::served(&ctx.client).await
    {
        Some(
            ctx.cache
                .cluster_informer::<kruise_api::rspolicy::v1alpha1::PodDeletionFlowControl>(),
        )
    } else {
        None
    };
    let endpoint = match &args.webhook_host {
        Some(host) => controller::Endpoint::Url {
            host: host.clone(),
            port: args.webhook_port,
        },
        None => controller::Endpoint::Service {
            name: std::env::var("SERVICE_NAME")
                .unwrap_or_else(|_| controller::DEFAULT_SERVICE.to_owned()),
            namespace: namespace.clone(),
        },
    };
    let settings = controller::WebhookSettings {
        namespace,
        secret_name: std::env::var("SECRET_NAME")
            .unwrap_or_else(|_| controller::DEFAULT_SECRET.to_owned()),
        endpoint,
        renew_before: jiff::SignedDuration::from_hours(
            24 * kruise_webhook::certs::DEFAULT_RENEW_BEFORE_DAYS,
        ),
        external_certs: args.webhook_external_certs
            || ctx
                .gates
                .enabled(kruise_runtime::features::Feature::EnableExternalCerts),
        only_namespace: args.webhook_only_namespace.clone(),
        name_suffix: args.webhook_configuration_suffix.clone(),
        failure_policies: args.webhook_failure_policy.iter().cloned().collect(),
        timeout_seconds: Some(args.webhook_timeout_seconds),
        pod_scope: if args.pod_webhook_scope == "all" {
            controller::PodScope::Every
        } else {
            controller::PodScope::Needed {
                sidecarsets: sidecarsets.clone(),
                budgets: budgets.clone(),
                flow_controls: flow_controls.clone(),
                persistent_pod_states: persistent_pod_states.clone(),
                every_pod: ctx
                    .gates
                    .enabled(kruise_runtime::features::Feature::KruisePodReadinessGate),
                workload_spreads: workload_spreads.clone(),
            }
        },
        webhooks: webhooks.clone(),
    };
    let addr: std::net::SocketAddr = format!("{}:{}", args.webhook_bind_address, args.webhook_port)
        .parse()
        .with_context(|| {
            format!(
                "invalid webhook address {}:{}",
                args.webhook_bind_address, args.webhook_port
            )
        })?;
    let store = wserver::CertStore::default();
    let hctx = Arc::new(HandlerContext {
        gates: ctx.gates.clone(),
        lookup: Some({
            let lookup = kruise_webhook::lookup::Lookup::new(
                admission_client,
                &ctx.cache,
                ctx.config.namespace.clone(),
                serves_sidecarsets,
            );
            // PodUnavailableBudgets are read by the pod webhooks only when this manager serves
            // their checks: otherwise the CRD may not be installed.
            let lookup = if webhooks.serves_name("vpod.kb.io") {
                lookup.with_budgets()
            } else {
                lookup
            };
            let lookup = if serves_pps {
                lookup.with_persistent_pod_states()
            } else {
                lookup
            };
            if flow_controls.is_some() {
                lookup.with_flow_controls()
            } else {
                lookup
            }
        }),
    });
    let webhook_metrics = wserver::WebhookMetrics::register(&ctx.metrics);
    {
        use kruise_webhook::pod::flowcontrol as fc;
        ctx.metrics.register(
            "kruise_pod_deletion_flow_control_remaining",
            "Pod deletions each PodDeletionFlowControl window has room for",
            fc::REMAINING.clone(),
        );
        ctx.metrics.register(
            "kruise_pod_deletion_flow_control_refusals",
            "Pod deletions and evictions refused by PodDeletionFlowControls",
            fc::REFUSALS.clone(),
        );
    }
    ctx.metrics.register(
        "pod_unavailable_budget",
        "Pod Unavailable Budget Metrics",
        kruise_webhook::pod::budget::REFUSALS.clone(),
    );
    {
        use kruise_webhook::deletionprotection as dp;
        ctx.metrics.register(
            "namespace_deletion_protection",
            "Namespace Deletion Protection",
            dp::NAMESPACE_REFUSALS.clone(),
        );
        ctx.metrics.register(
            "crd_deletion_protection",
            "CustomResourceDefinition Deletion Protection",
            dp::CRD_REFUSALS.clone(),
        );
        ctx.metrics.register(
            "workload_deletion_protection",
            "Workload Deletion Protection",
            dp::WORKLOAD_REFUSALS.clone(),
        );
    }
    let served = admission_runtime()?.spawn({
        let store = store.clone();
        let stop = stop.clone();
        async move {
            if let Err(e) =
                wserver::serve(addr, store, hctx, &webhooks, webhook_metrics, stop).await
            {
                tracing::error!(error = %e, "webhook server failed");
            }
            Ok(())
        }
    });
    tracing::info!(%addr, "serving admission webhooks");
    ctx.readiness.add_pending("webhook");
    let readiness = ctx.readiness.clone();
    // The pod webhook's scope follows the SidecarSets: resync on every change.
    let wake = Arc::new(tokio::sync::Notify::new());
    if let Some(sidecarsets) = sidecarsets {
        follow(sidecarsets, wake.clone(), stop.clone());
    }
    if let Some(budgets) = budgets {
        follow(budgets, wake.clone(), stop.clone());
    }
    if let Some(spreads) = workload_spreads {
        follow(spreads, wake.clone(), stop.clone());
    }
    if let Some(flow_controls) = flow_controls {
        follow(flow_controls, wake.clone(), stop.clone());
    }
    if let Some(ppss) = persistent_pod_states {
        follow(ppss, wake.clone(), stop.clone());
    }
    tokio::spawn(controller::run(
        ctx.client.clone(),
        settings,
        store,
        move || readiness.mark_done("webhook"),
        stop,
        wake,
    ));
    Ok(served)
}

/// Wakes the webhook controller (`wake`) when the objects a pod webhook's scope derives from
/// (SidecarSets, PodUnavailableBudgets) are first known and on every change of one, so the
/// scope follows them at once.
fn follow<K: kruise_runtime::cache::Cached>(
    informer: kruise_runtime::cache::Informer<K>,
    wake: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    let mut changes = informer.subscribe();
    let synced = informer.synced();
    tokio::spawn(async move {
        use futures::StreamExt;
        // The scope narrows once the SidecarSets are known (every pod until then).
        if synced.wait().await {
            wake.notify_one();
        }
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                ev = changes.next() => match ev {
                    Some(_) => wake.notify_one(),
                    None => return,
                },
            }
        }
    });
}

/// The webhooks this manager serves: those the feature gates enable, of the controllers
/// `--controllers` enables (each controller's registry entry names its webhooks and CRDs), and
/// the conversion webhooks of those controllers' CRDs.
fn webhook_selection(spec: &[String], gates: &FeatureGates) -> kruise_webhook::registry::Selection {
    let enabled = |name: &str| controller_enabled(spec, name);
    kruise_webhook::registry::Selection {
        gates: gates.clone(),
        only: Some(kruise_manager::controllers::webhooks_of(enabled)),
        conversion_crds: Some(kruise_manager::controllers::crds_of(enabled)),
    }
}

/// Parses `--webhook-failure-policy` items (`<webhook name>=Fail|Ignore`).
fn parse_failure_policy(v: &str) -> Result<(String, String), String> {
    let (name, policy) = v
        .split_once('=')
        .ok_or_else(|| format!("{v:?}: expected <webhook name>=Fail|Ignore"))?;
    if !kruise_webhook::registry::REGISTRY
        .iter()
        .any(|e| e.name == name)
    {
        let known: Vec<&str> = kruise_webhook::registry::REGISTRY
            .iter()
            .map(|e| e.name)
            .collect();
        return Err(format!(
            "unknown webhook {name:?} (known: {})",
            known.join(", ")
        ));
    }
    match policy {
        "Fail" | "Ignore" => Ok((name.to_owned(), policy.to_owned())),
        other => Err(format!(
            "{name}: failurePolicy {other:?} is not Fail or Ignore"
        )),
    }
}

/// Resolves on the first SIGTERM or SIGINT.
async fn shutdown_signal() -> anyhow::Result<&'static str> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing SIGTERM handler")?;
    tokio::select! {
        _ = term.recv() => Ok("SIGTERM"),
        res = tokio::signal::ctrl_c() => res.map(|()| "SIGINT").context("waiting for SIGINT"),
    }
}

async fn spawn_servers(
    args: &Args,
    metrics: Arc<Metrics>,
    readiness: server::Readiness,
    stop: CancellationToken,
) -> anyhow::Result<Vec<JoinHandle<Result<(), server::Error>>>> {
    let m = server::bind(&args.metrics_addr).await?;
    let h = server::bind(&args.health_probe_addr).await?;
    tracing::info!(addr = %server::local_addr(&m)?, "serving metrics");
    tracing::info!(addr = %server::local_addr(&h)?, "serving health probes");
    Ok(vec![
        tokio::spawn(server::serve(
            m,
            server::metrics_router(metrics),
            stop.clone(),
        )),
        tokio::spawn(server::serve(h, server::health_router(readiness), stop)),
    ])
}

/// Stops the controllers and waits for in-flight reconciles, at most `timeout` and only until a
/// second SIGTERM/SIGINT. Returns whether they stopped cleanly.
async fn drain_controllers(
    ctx: &Context,
    controllers: &mut JoinHandle<Result<(), runtime::Error>>,
    timeout: Duration,
) -> bool {
    ctx.shutdown.cancel();
    let drained = tokio::select! {
        res = tokio::time::timeout(timeout, controllers) => res,
        _ = shutdown_signal() => {
            tracing::warn!("second signal: not waiting for in-flight reconciles");
            return false;
        }
    };
    match drained {
        Ok(Ok(Ok(()))) => true,
        Ok(Ok(Err(err))) => {
            tracing::error!(error = %err, "controller failed during shutdown");
            false
        }
        Ok(Err(err)) => {
            tracing::error!(error = %err, "controller task panicked");
            false
        }
        Err(_) => {
            tracing::error!(
                ?timeout,
                "controllers did not stop within the graceful shutdown timeout"
            );
            false
        }
    }
}

/// The manager, as OpenKruise's `main.go`: flags and gates checked, the API client, the
/// servers (metrics, health, webhooks), the controllers set up (their informers start at once),
/// then — with leader election — run while leading, else at once; stopped by a signal.
async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let gates = check_flags(&args)?;
    let metrics = Arc::new(kruise_runtime::metrics::Metrics::new());
    kruise_runtime::features::warn_unimplemented(&gates, &metrics);
    let (clients, client) = connect(&args, &metrics).await?;
    let ctx = Context::new(
        client.clone(),
        gates,
        ControllerConfig {
            expectation_timeout: args.expectation_timeout,
            namespace: args.namespace.clone().filter(|n| !n.is_empty()),
            cache_sync_timeout: args.cache_sync_timeout,
            sync_period: args.sync_period.filter(|d| !d.is_zero()),
            initial_list: args.cache_initial_list,
        },
    );
    let ctx = Arc::new(Context { metrics, ..ctx });
    let flags = ControllerFlags {
        controllers: args.controllers.clone(),
        cloneset_scaling_exclude_preparing_delete: args.cloneset_scaling_exclude_preparing_delete,
        workers: args.workers.clone(),
        assign_pods_by_scheduler: args.assign_pods_by_scheduler,
    };
    let servers_stop = CancellationToken::new();
    // Freed heap goes back to the system every few seconds (the Go runtime's scavenger).
    kruise_runtime::process::spawn_heap_release(servers_stop.clone());
    let mut servers = spawn_servers(
        &args,
        ctx.metrics.clone(),
        ctx.readiness.clone(),
        servers_stop.clone(),
    )
    .await?;
    if args.webhook_server {
        let admission_client = clients
            .client()
            .context("building the admission webhooks' API client")?;
        servers.push(start_webhooks(&args, &ctx, admission_client, servers_stop.clone()).await?);
    }
    // Informers start now; /readyz fails until they have synced.
    let controllers = setup_controllers(&ctx, &flags, &clients)?;
    let signal = tokio::spawn(shutdown_signal());
    let code = if args.enable_leader_election {
        run_leading(&args, client, &ctx, controllers, signal).await?
    } else {
        run_unelected(&args, &ctx, controllers, signal).await
    };
    finish(servers_stop, servers, code).await
}

/// Parses `--feature-gates` (and `CUSTOM_RESOURCE_ENABLE`) and refuses the flags kruise-manager
/// accepts only with OpenKruise's values.
fn check_flags(args: &Args) -> anyhow::Result<FeatureGates> {
    let gates = FeatureGates::parse_with_env(
        &args.feature_gates.join(","),
        std::env::var("CUSTOM_RESOURCE_ENABLE").ok().as_deref(),
    )
    .context("invalid --feature-gates")?;
    validate_controllers(&args.controllers)?;
    if args.leader_election_resource_lock != "leases" {
        bail!(
            "unsupported --leader-election-resource-lock {:?}: only \"leases\" is supported",
            args.leader_election_resource_lock
        );
    }
    if !args.logtostderr {
        bail!(
            "unsupported --logtostderr=false: kruise-manager logs to stderr only (no klog log files)"
        );
    }
    if args.enable_pprof {
        bail!("unsupported --enable-pprof=true: kruise-manager has no Go pprof endpoint");
    }
    tracing::info!(feature_gates = %gates, "feature gates");
    Ok(gates)
}

/// The process's API clients (each throttled per API resource as `--rest-config-qps` /
/// `--rest-config-burst` say, with buckets of its own, its requests counted in `metrics`) and
/// the client of the shared cache and leader election, checked by asking the API server's
/// version.
async fn connect(
    args: &Args,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<(kruise_runtime::process::ApiClients, kube::Client)> {
    let throttle = kruise_runtime::throttle::ClientThrottle::from_flags(
        args.rest_config_qps,
        args.rest_config_burst,
    );
    tracing::info!(
        qps = throttle.qps,
        burst = throttle.burst,
        "client-side rate limit per API resource, per controller"
    );
    let clients = kruise_runtime::process::ApiClients::load(
        args.kubeconfig.as_deref(),
        metrics.clone(),
        throttle,
    )
    .await?;
    let client = clients.client()?;
    let version = client
        .apiserver_version()
        .await
        .context("contacting the API server")?;
    tracing::info!(version = %version.git_version, "connected to API server");
    Ok((clients, client))
}

/// The signal task of [`shutdown_signal`].
type Signal = JoinHandle<anyhow::Result<&'static str>>;

/// Without leader election: ready at once, the controllers run until a signal (finishing
/// in-flight reconciles) or until one fails.
async fn run_unelected(
    args: &Args,
    ctx: &Arc<Context>,
    controllers: Vec<ControllerFuture>,
    mut signal: Signal,
) -> ExitCode {
    ctx.readiness.set_ready(true);
    let mut controllers = tokio::spawn(run_controllers(ctx.clone(), controllers));
    tokio::select! {
        sig = &mut signal => {
            tracing::info!(signal = ?sig.ok().and_then(Result::ok), "shutdown requested; finishing in-flight reconciles");
            if drain_controllers(ctx, &mut controllers, args.graceful_shutdown_timeout).await {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        res = &mut controllers => {
            log_controllers_ended(res);
            ctx.shutdown.cancel();
            ExitCode::FAILURE
        }
    }
}

/// Why the controllers' task ended on its own (always a failure: they run until shutdown).
fn log_controllers_ended(res: Result<Result<(), runtime::Error>, tokio::task::JoinError>) {
    match res {
        Ok(Ok(())) => tracing::error!("controllers stopped unexpectedly"),
        Ok(Err(err)) => tracing::error!(error = %err, "controller failed"),
        Err(err) => tracing::error!(error = %err, "controller task panicked"),
    }
}

/// With leader election (controller-runtime's `LeaderElection`): a standby is ready and serves
/// while it campaigns for the Lease; once leading, the controllers run until a signal (the
/// Lease released after in-flight reconciles finish), a lost Lease (stop at once) or a failed
/// controller.
async fn run_leading(
    args: &Args,
    client: kube::Client,
    ctx: &Arc<Context>,
    controllers: Vec<ControllerFuture>,
    mut signal: Signal,
) -> anyhow::Result<ExitCode> {
    let mut config =
        LeaderElectionConfig::new(&args.leader_election_namespace, &args.leader_election_id);
    config.lease_duration = args.leader_election_lease_duration;
    config.renew_deadline = args.leader_election_renew_deadline;
    config.retry_period = args.leader_election_retry_period;
    let elector = LeaderElector::new(client, config)?.with_metrics(ctx.metrics.clone());
    tracing::info!(
        lease = %format!("{}/{}", args.leader_election_namespace, args.leader_election_id),
        identity = %elector.config().identity,
        "attempting to acquire leader lease"
    );
    let mut leading = elector.subscribe();
    let release = CancellationToken::new();
    let mut election = tokio::spawn(elector.run(release.clone()));
    // A standby replica is ready: it serves and waits for the Lease.
    ctx.readiness.set_ready(true);
    tokio::select! {
        res = leading.wait_for(|l| *l) => {
            if res.is_err() {
                tracing::error!("leader election stopped before leading");
                return Ok(ExitCode::FAILURE);
            }
        }
        sig = &mut signal => {
            tracing::info!(signal = ?sig.ok().and_then(Result::ok), "shutting down before leading");
            release.cancel();
            let _ = election.await;
            return Ok(ExitCode::SUCCESS);
        }
        res = &mut election => {
            tracing::error!(result = ?res, "leader election ended before leading");
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut controllers = tokio::spawn(run_controllers(ctx.clone(), controllers));
    Ok(tokio::select! {
        sig = &mut signal => {
            tracing::info!(signal = ?sig.ok().and_then(Result::ok), "shutdown requested; finishing in-flight reconciles");
            let clean = drain_controllers(ctx, &mut controllers, args.graceful_shutdown_timeout).await;
            release.cancel();
            match election.await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::error!(error = %err, "leader election"),
                Err(err) => tracing::error!(error = %err, "leader election task panicked"),
            }
            if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        res = &mut election => {
            // Lost the Lease: stop at once, like controller-runtime ("leader election lost").
            ctx.shutdown.cancel();
            match res {
                Ok(Err(leader::Error::LeadershipLost { .. })) | Ok(Ok(())) =>
                    tracing::error!("leader election lost"),
                Ok(Err(err)) => tracing::error!(error = %err, "leader election failed"),
                Err(err) => tracing::error!(error = %err, "leader election task panicked"),
            }
            ExitCode::FAILURE
        }
        res = &mut controllers => {
            log_controllers_ended(res);
            ctx.shutdown.cancel();
            release.cancel();
            let _ = election.await;
            ExitCode::FAILURE
        }
    })
}

async fn finish(
    stop: CancellationToken,
    servers: Vec<JoinHandle<Result<(), server::Error>>>,
    code: ExitCode,
) -> anyhow::Result<ExitCode> {
    stop.cancel();
    for s in servers {
        // Servers only wait for in-flight requests (the webhook server drains for at most its
        // own DRAIN_TIMEOUT); do not hang on a stuck client.
        let limit = kruise_webhook::server::DRAIN_TIMEOUT + Duration::from_secs(1);
        match tokio::time::timeout(limit, s).await {
            Ok(Ok(Err(err))) => tracing::warn!(error = %err, "http server"),
            Ok(Err(err)) => tracing::warn!(error = %err, "http server task panicked"),
            Ok(Ok(Ok(()))) | Err(_) => {}
        }
    }
    tracing::info!(
        success = (code == ExitCode::SUCCESS),
        "kruise-manager exiting"
    );
    Ok(code)
}

/// The runtime that serves admission requests: its own OS threads, so controller passes
/// (CPU-bound between their awaits) on the main runtime's workers never hold an admission
/// answer back — the API server waits on every pod create for it, and the kernel, not tokio's
/// cooperative scheduling, shares the CPU between the two. It reads the same shared cache and
/// client as the controllers. Created once, lives until the process exits.
///
/// # Errors
/// The OS refused to create its threads.
fn admission_runtime() -> anyhow::Result<tokio::runtime::Handle> {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt.handle().clone());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("admission")
        .enable_all()
        .build()
        .context("starting the admission runtime")?;
    Ok(RUNTIME.get_or_init(|| rt).handle().clone())
}

/// Lowers the calling thread's scheduling priority to niceness `nice` (Linux: niceness is per
/// thread, `setpriority(PRIO_PROCESS, tid)`). Raising niceness needs no privilege; a failure
/// (e.g. a seccomp profile refusing the call) is logged once per thread and otherwise ignored:
/// the thread keeps the process's priority, which is only slower under contention.
fn lower_thread_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: gettid and setpriority take plain integers and touch no memory of ours.
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            nice,
            "could not lower a controller thread's priority"
        );
    }
}

/// The main runtime: tokio's default multi-thread runtime (a worker per CPU) whose threads —
/// and the thread driving `run` — run at niceness `nice` (see `--controller-nice`).
fn main_runtime(nice: i32) -> std::io::Result<tokio::runtime::Runtime> {
    lower_thread_priority(nice);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(move || lower_thread_priority(nice))
        .build()
}

fn main() -> ExitCode {
    let args = parse_args(std::env::args_os()).unwrap_or_else(|e| e.exit());
    init_logging(args.log_format, args.verbosity);
    // The admission runtime first: threads inherit their creator's niceness, and only a
    // privileged process could take the main runtime's back.
    if let Err(err) = admission_runtime() {
        tracing::error!(error = format!("{err:#}"), "kruise-manager failed");
        return ExitCode::FAILURE;
    }
    let rt = match main_runtime(args.controller_nice) {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(error = %err, "kruise-manager failed: starting the runtime");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(code) => code,
        Err(err) => {
            tracing::error!(error = format!("{err:#}"), "kruise-manager failed");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_help_lists_every_registered_controller() {
        let cmd = command();
        let help = cmd
            .get_arguments()
            .find(|a| a.get_id() == "controllers")
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        for c in CONTROLLERS {
            assert!(help.contains(c.name), "{} missing from {help:?}", c.name);
        }
    }

    #[test]
    fn go_durations() {
        let ok = [
            ("0", Duration::ZERO),
            ("5m", Duration::from_secs(300)),
            ("1h30m", Duration::from_secs(5400)),
            ("1.5s", Duration::from_millis(1500)),
            ("300ms", Duration::from_millis(300)),
            ("2s500ms", Duration::from_millis(2500)),
            ("10us", Duration::from_micros(10)),
        ];
        for (s, want) in ok {
            assert_eq!(parse_go_duration(s), Ok(want), "{s}");
        }
        for bad in ["", "5", "m", "-5s", "5x", "1..5s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }

    /// Niceness of the calling thread, from `/proc/thread-self/stat` (field 19).
    fn thread_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The command name may hold spaces; the fields after its closing parenthesis do not.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn main_runtime_threads_run_below_the_admission_threads() {
        // In threads of their own: niceness is per thread and cannot be lowered back.
        std::thread::spawn(|| {
            let before = thread_nice();
            let admission = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let rt = main_runtime(5).unwrap();
            assert_eq!(
                thread_nice(),
                (before + 5).min(19),
                "the thread driving run()"
            );
            let worker =
                rt.block_on(async { tokio::spawn(async { thread_nice() }).await.unwrap() });
            assert_eq!(worker, (before + 5).min(19), "a main runtime worker");
            let served =
                admission.block_on(async { tokio::spawn(async { thread_nice() }).await.unwrap() });
            assert_eq!(served, before, "an admission worker built before");
        })
        .join()
        .unwrap();
        std::thread::spawn(|| {
            let before = thread_nice();
            let rt = main_runtime(0).unwrap();
            let worker =
                rt.block_on(async { tokio::spawn(async { thread_nice() }).await.unwrap() });
            assert_eq!(
                (thread_nice(), worker),
                (before, before),
                "--controller-nice 0"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn flag_defaults() {
        let a = parse_args(["kruise-manager"]).unwrap();
        assert!(a.enable_leader_election);
        assert_eq!(a.leader_election_namespace, "kruise-system");
        assert_eq!(a.leader_election_id, "kruise-manager");
        assert_eq!(a.metrics_addr, ":8080");
        assert_eq!(a.health_probe_addr, ":8000");
        assert_eq!(a.controller_nice, 5);
        assert_eq!(a.log_format, LogFormat::Text);
        assert_eq!(a.verbosity, 0);
        for c in ["cloneset", "statefulset", "daemonset", "sidecarset"] {
            assert_eq!(a.workers.get(c), Some(&3), "--{c}-workers");
        }
        assert_eq!(a.workers.get("podreadiness"), None, "no flag");
        let a = parse_args(["kruise-manager", "--sidecarset-workers", "7"]).unwrap();
        assert_eq!(a.workers.get("sidecarset"), Some(&7));
        assert!(parse_args(["kruise-manager", "--podreadiness-workers", "2"]).is_err());
        // OpenKruise's spelling of the ContainerRecreateRequest controller's flag.
        let a = parse_args(["kruise-manager", "--crr-workers", "5"]).unwrap();
        assert_eq!(a.workers.get("containerrecreaterequest"), Some(&5));
        let a = parse_args(["kruise-manager", "--sidecarterminator-workers", "4"]).unwrap();
        assert_eq!(a.workers.get("sidecarterminator"), Some(&4));
        assert_eq!(a.expectation_timeout, Duration::from_secs(300));
        assert_eq!(a.rest_config_qps, 30);
        assert_eq!(a.rest_config_burst, 50);
        assert_eq!(a.leader_election_lease_duration, Duration::from_secs(15));
        assert!(!a.cloneset_scaling_exclude_preparing_delete);
        assert_eq!(
            a.cache_initial_list,
            kruise_runtime::cache::InitialList::Auto
        );
        let a = Args::try_parse_from(["kruise-manager", "--cache-initial-list", "list"]).unwrap();
        assert_eq!(
            a.cache_initial_list,
            kruise_runtime::cache::InitialList::List
        );
        assert!(Args::try_parse_from(["kruise-manager", "--cache-initial-list", "watch"]).is_err());
    }

    #[test]
    fn flag_forms() {
        let a = Args::try_parse_from([
            "kruise-manager",
            "--enable-leader-election=false",
            "--feature-gates=CloneSetShortHash=true",
            "--feature-gates",
            "PodWebhook=false",
            "-v",
            "4",
            "--log-format",
            "json",
            "--expectation-timeout=90s",
        ])
        .unwrap();
        assert!(!a.enable_leader_election);
        assert_eq!(
            a.feature_gates.join(","),
            "CloneSetShortHash=true,PodWebhook=false"
        );
        assert_eq!(a.verbosity, 4);
        assert_eq!(a.log_format, LogFormat::Json);
        assert_eq!(a.expectation_timeout, Duration::from_secs(90));
        let a =
            Args::try_parse_from(["kruise-manager", "--v=2", "--enable-leader-election"]).unwrap();
        assert_eq!(a.verbosity, 2);
        assert!(a.enable_leader_election);
        let a = Args::try_parse_from([
            "kruise-manager",
            "--rest-config-qps",
            "-1",
            "--rest-config-burst=0",
        ])
        .unwrap();
        assert_eq!((a.rest_config_qps, a.rest_config_burst), (-1, 0));
        assert_eq!(
            kruise_runtime::throttle::ClientThrottle::from_flags(
                a.rest_config_qps,
                a.rest_config_burst
            ),
            kruise_runtime::throttle::ClientThrottle {
                qps: 20.0,
                burst: 30
            }
        );
    }

    /// The manager's arguments in OpenKruise's helm chart and config/manager/manager.yaml parse,
    /// so swapping the image needs no manifest change.
    #[test]
    fn openkruise_manifest_arguments_are_accepted() {
        let a = Args::try_parse_from([
            "kruise-manager",
            "--enable-leader-election",
            "--metrics-addr=:8080",
            "--health-probe-addr=:8000",
            "--logtostderr=true",
            "--leader-election-namespace=kruise-system",
            "--v=4",
            "--feature-gates=AllAlpha=true,AllBeta=true,EnableExternalCerts=false,TemplateNoDefaults=false",
            "--sync-period=0",
            "--controller-cache-sync-timeout=3m",
            "--enable-pprof=false",
        ])
        .unwrap();
        assert!(a.logtostderr && !a.enable_pprof);
        assert_eq!(a.sync_period, Some(Duration::ZERO));
        assert_eq!(a.cache_sync_timeout, Duration::from_secs(180));
        let a = Args::try_parse_from(["kruise-manager", "--sync-period", "10h"]).unwrap();
        assert_eq!(a.sync_period, Some(Duration::from_secs(36_000)));
        assert!(Args::try_parse_from(["kruise-manager", "--sync-period", "often"]).is_err());
    }

    #[test]
    fn controllers_flag() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(controller_enabled(&v(&["*"]), "cloneset"));
        assert!(controller_enabled(&v(&["cloneset"]), "cloneset"));
        assert!(!controller_enabled(&v(&["*", "-cloneset"]), "cloneset"));
        assert!(!controller_enabled(&v(&["-cloneset"]), "cloneset"));
        assert!(!controller_enabled(&v(&[""]), "cloneset"));
        assert!(validate_controllers(&v(&["*", "-cloneset"])).is_ok());
        assert!(validate_controllers(&v(&["nope"])).is_err());
        let a = Args::try_parse_from(["kruise-manager", "--controllers=*,-cloneset"]).unwrap();
        assert_eq!(a.controllers, v(&["*", "-cloneset"]));
        let a = Args::try_parse_from(["kruise-manager"]).unwrap();
        assert_eq!(a.controllers, v(&["*"]));
    }
}
