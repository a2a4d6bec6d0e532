//! `kruise-daemon`: kruise-rs' node agent (see the library docs). Runs one per node, as
//! OpenKruise's DaemonSet does; `NODE_NAME` (or `--node-name`) names the node.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{ArgAction, Parser};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{ContainerRecreateRequest, NodePodProbe};
use kruise_daemon::containermeta::{self, ContainerMeta, Restarter};
use kruise_daemon::containerrecreate::{self, ContainerRecreate};
use kruise_daemon::cri::{Cri, detect_socket};
use kruise_daemon::podprobe::{self, PodProbe};
use kruise_runtime::features::{Feature, FeatureGates};
use kruise_runtime::process::{LogFormat, init_logging};
use kruise_runtime::runner::{Context, ControllerConfig};
use kruise_runtime::server;

/// kruise-daemon: OpenKruise's node agent, rebuilt in Rust.
#[derive(Debug, Parser)]
#[command(name = "kruise-daemon", version)]
struct Args {
    /// Path to a kubeconfig. Without it: $KUBECONFIG, ~/.kube/config, then in-cluster config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,

    /// The node this daemon serves (OpenKruise reads `NODE_NAME`, set from `spec.nodeName`).
    #[arg(long, env = "NODE_NAME")]
    node_name: String,

    /// Address of the metrics and health endpoint (`/metrics`, `/healthz`, `/readyz`).
    #[arg(long, default_value = ":10221")]
    addr: String,

    /// Name of the CRI socket file under --var-run-path; without it the socket is detected
    /// (containerd.sock, containerd/containerd.sock, crio.sock, ... as OpenKruise).
    #[arg(long, default_value = "")]
    socket_file: String,

    /// Where the host's /var/run is (OpenKruise's DaemonSet mounts it at /hostvarrun).
    #[arg(long, default_value = "/hostvarrun")]
    var_run_path: PathBuf,

    /// Client-side QPS per API resource; 0 or less uses the default (20).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    rest_config_qps: i32,

    /// Client-side burst per API resource; 0 or less uses the default (30).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    rest_config_burst: i32,

    /// Feature gates, `Name=bool,…` (repeatable). Unknown names are an error.
    #[arg(long)]
    feature_gates: Vec<String>,

    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    /// Log verbosity (klog style): 0-1 info, 2-4 debug, 5+ trace. RUST_LOG overrides it.
    #[arg(short = 'v', long = "v", default_value_t = 0)]
    verbosity: u8,

    /// OpenKruise's Go pprof endpoint; kruise-daemon has none, so only `false` is accepted.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_pprof: bool,
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.enable_pprof {
        anyhow::bail!("unsupported --enable-pprof=true: kruise-daemon has no Go pprof endpoint");
    }
    if args.node_name.is_empty() {
        anyhow::bail!("no node name: set NODE_NAME or --node-name");
    }
    let gates = FeatureGates::parse_with_env(&args.feature_gates.join(","), None)
        .context("invalid --feature-gates")?;
    tracing::info!(node = %args.node_name, feature_gates = %gates, "starting kruise-daemon");

    let socket = detect_socket(&args.var_run_path, Some(&args.socket_file))
        .map_err(|e| anyhow::anyhow!(e))?;
    let cri = Cri::connect(&socket).await?;

    let throttle = kruise_runtime::throttle::ClientThrottle::from_flags(
        args.rest_config_qps,
        args.rest_config_burst,
    );
    let metrics = Arc::new(kruise_runtime::metrics::Metrics::new());
    kruise_runtime::features::warn_unimplemented(&gates, &metrics);
    let client =
        kruise_runtime::process::api_client(args.kubeconfig.as_deref(), metrics.clone(), throttle)
            .await?;
    let mut ctx = Context::new(client.clone(), gates, ControllerConfig::default());
    ctx.metrics = metrics.clone();
    ctx.recorder = kruise_runtime::events::EventRecorder::for_component(
        client.clone(),
        containermeta::NAME,
        Some(args.node_name.clone()),
    );
    let ctx = Arc::new(ctx);
    ctx.readiness.set_ready(true);

    let listener = server::bind(&args.addr).await?;
    tracing::info!(addr = %server::local_addr(&listener)?, "serving metrics and health");
    let router =
        server::metrics_router(metrics).merge(server::health_router(ctx.readiness.clone()));
    let http = tokio::spawn(server::serve(listener, router, ctx.shutdown.clone()));

    kruise_runtime::process::spawn_heap_release(ctx.shutdown.clone());
    let shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        shutdown.cancel();
    });

    let mut controllers = Vec::new();
    if ctx.gates.enabled(Feature::DaemonWatchingPod) {
        let pods = ctx
            .cache
            .informer_with_fields::<Pod>(&format!("spec.nodeName={}", args.node_name));
        let restarter = Restarter::new(cri.clone(), ctx.recorder.clone());
        let cm = ContainerMeta::new(cri.clone(), restarter);
        controllers.push(tokio::spawn(cm.run(ctx.clone(), pods)));
        tracing::info!(controller = containermeta::NAME, "started");
    } else {
        tracing::info!("DaemonWatchingPod is off: no pod is watched, containermeta does not run");
    }
    {
        let requests = ctx.cache.informer_with_labels::<ContainerRecreateRequest>(
            &containerrecreate::selector(&args.node_name),
        );
        let recorder = kruise_runtime::events::EventRecorder::for_component(
            client.clone(),
            containerrecreate::NAME,
            Some(args.node_name.clone()),
        );
        let crr = ContainerRecreate::new(client.clone(), cri.clone(), recorder);
        controllers.push(tokio::spawn(crr.run(ctx.clone(), requests)));
        tracing::info!(controller = containerrecreate::NAME, "started");
    }
    if ctx.gates.enabled(Feature::PodProbeMarkerGate) {
        let probes = ctx
            .cache
            .cluster_informer_with_fields::<NodePodProbe>(&podprobe::selector(&args.node_name));
        let recorder = kruise_runtime::events::EventRecorder::for_component(
            client.clone(),
            podprobe::NAME,
            Some(args.node_name.clone()),
        );
        let prober = PodProbe::new(client.clone(), cri.clone(), recorder, &args.node_name)
            .context("failed to build the pod prober")?;
        controllers.push(tokio::spawn(prober.run(ctx.clone(), probes)));
        tracing::info!(controller = podprobe::NAME, "started");
    } else {
        tracing::info!("PodProbeMarkerGate is off: NodePodProbes are not probed");
    }

    let mut failed = false;
    for c in controllers {
        match c.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "controller stopped");
                failed = true;
            }
            Err(e) => {
                tracing::error!(error = %e, "controller task failed");
                failed = true;
            }
        }
    }
    ctx.shutdown.cancel();
    if let Ok(Err(e)) = http.await {
        tracing::error!(error = %e, "metrics server failed");
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    init_logging(args.log_format, args.verbosity);
    match run(args).await {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("kruise-daemon: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_openkruise() {
        let a = Args::try_parse_from(["kruise-daemon", "--node-name", "n1"]).unwrap();
        assert_eq!(a.addr, ":10221");
        assert_eq!(a.var_run_path, PathBuf::from("/hostvarrun"));
        assert_eq!(a.socket_file, "");
        assert!(!a.enable_pprof);
        let a = Args::try_parse_from([
            "kruise-daemon",
            "--node-name=n1",
            "--socket-file=containerd/containerd.sock",
            "--feature-gates=InPlaceUpdateEnvFromMetadata=false",
            "-v",
            "4",
        ])
        .unwrap();
        assert_eq!(a.socket_file, "containerd/containerd.sock");
        assert_eq!(a.verbosity, 4);
        assert!(Args::try_parse_from(["kruise-daemon", "--node-name=n", "--bogus"]).is_err());
    }
}
