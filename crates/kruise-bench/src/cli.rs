//! The command line: `rollout` (also the default, with its flags at the top level), `scale`,
//! `admission`, `broadcastjob` and `workloadspread`.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::admission;

/// Benchmarks of kruise-manager on the kruise-rs testbed (hack/testbed/testbed.sh up). Without
/// a subcommand, runs `rollout` with the flags given.
#[derive(Debug, Parser)]
#[command(name = "kruise-bench", version, args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Scenario>,

    #[command(flatten)]
    pub(crate) rollout: RolloutArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Scenario {
    /// In-place image rollout of one CloneSet (maxUnavailable 100%), against a bare client
    /// patching every pod's image.
    Rollout(RolloutArgs),
    /// Restart of one or more managers over many CloneSets: time to the first completed
    /// reconcile of all, API requests, RSS; against a bare LIST of every CloneSet and pod.
    Scale(ScaleArgs),
    /// The pod webhooks: pod-create latency through /mutate-pod with SidecarSets installed
    /// against creates without the webhook, manager CPU and RSS (part 1, "injection"); admission
    /// calls and time to Ready of a plain Deployment with no manager, the scoped pod webhook and
    /// OpenKruise's every-pod configuration, then evictions and its deletion with the manager
    /// killed (part 2, "blast"); pod-DELETE latency through /validate-pod with 1,000
    /// PodUnavailableBudgets against deletes without the webhook, manager CPU and RSS (part 3,
    /// "budget"). Needs a testbed of its own.
    Admission(admission::AdmissionArgs),
    /// One BroadcastJob over `--nodes` kwok nodes of its own, run to completion by each
    /// manager given (time, API writes per pod, one pod per node checked), against a bare client
    /// creating one pod per node.
    Broadcastjob(crate::broadcastjob::BroadcastJobArgs),
    /// 100 WorkloadSpreads and 10,000 Deployment pods created through /mutate-pod, for each
    /// manager given beside a baseline with no manager: admission p50/p99/mean (manager and API
    /// server), time to all created and Ready, manager CPU, idle millicores once settled, RSS;
    /// every pod's subset checked (annotation, maxReplicas, zone, patch). Needs a testbed of its
    /// own.
    Workloadspread(crate::workloadspread::WorkloadSpreadArgs),
}

#[derive(Debug, Clone, Args)]
pub(crate) struct RolloutArgs {
    /// Pods in the CloneSet.
    #[arg(long, default_value_t = 1000)]
    pub(crate) pods: usize,

    /// Minimum number of kwok nodes (missing ones are created).
    #[arg(long, default_value_t = 10)]
    pub(crate) nodes: usize,

    /// The kruise-manager binary to measure.
    #[arg(long, default_value = "target/release/kruise-manager")]
    pub(crate) manager: PathBuf,

    /// Timeout of each wait (scale-up, rollout, baseline), in seconds.
    #[arg(long, default_value_t = 900)]
    pub(crate) timeout_seconds: u64,

    /// The workload rolled out: a CloneSet (`InPlaceIfPossible`, `maxUnavailable: 100%`), an
    /// Advanced StatefulSet (`Parallel`, `InPlaceIfPossible`, `maxUnavailable: 100%`) or an
    /// Advanced DaemonSet (`InPlaceIfPossible`, `maxUnavailable: 100%`; one pod per kwok node,
    /// so `--pods` is ignored and `--nodes` sets the size, e.g. `--nodes 500`).
    #[arg(long, value_enum, default_value_t = Workload::Cloneset)]
    pub(crate) workload: Workload,

    /// Extra flag passed to the manager (repeatable), e.g. --manager-arg=--feature-gates=X=true.
    /// Only flags every measured manager accepts keep the comparison fair.
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) manager_args: Vec<String>,

    #[command(flatten)]
    pub(crate) client: ManagerClientArgs,

    /// How long to wait for the manager's `/readyz` before creating the workload, in seconds.
    #[arg(long, default_value_t = 180)]
    pub(crate) ready_timeout_seconds: u64,

    /// Also write the result as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
}

/// How every measured manager is run (rollout and scale alike).
#[derive(Debug, Clone, Args)]
pub(crate) struct ManagerClientArgs {
    /// Client-side QPS of every measured manager (passed as `--rest-config-qps`; OpenKruise's
    /// default 30).
    #[arg(long, default_value_t = 30)]
    pub(crate) qps: u32,

    /// Client-side burst of every measured manager (passed as `--rest-config-burst`;
    /// OpenKruise's default 50).
    #[arg(long, default_value_t = 50)]
    pub(crate) burst: u32,

    /// Run the managers with `--namespace <the benchmark's namespace>` instead of cluster-wide
    /// (kruise-rs only: OpenKruise v1.9.0 panics with `--namespace` in its DaemonSet controller).
    #[arg(long)]
    pub(crate) watch_namespace: bool,

    /// Port of the managers' webhook server at 127.0.0.1 (`WEBHOOK_PORT`; the Go manager's
    /// script reads it as `OPENKRUISE_WEBHOOK_PORT`).
    #[arg(long, default_value_t = 9876)]
    pub(crate) webhook_port: u16,
}

impl ManagerClientArgs {
    /// `--rest-config-qps` / `--rest-config-burst` with these settings.
    pub(crate) fn rest_config_flags(&self) -> [String; 2] {
        [
            format!("--rest-config-qps={}", self.qps),
            format!("--rest-config-burst={}", self.burst),
        ]
    }
}

/// The workload kind of the rollout benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Workload {
    /// `apps.kruise.io/v1alpha1` CloneSet.
    Cloneset,
    /// `apps.kruise.io/v1beta1` StatefulSet (Advanced StatefulSet).
    Statefulset,
    /// `apps.kruise.io/v1beta1` DaemonSet (Advanced DaemonSet) on every kwok node.
    Daemonset,
}

#[derive(Debug, Clone, Args)]
pub(crate) struct ScaleArgs {
    /// Number of CloneSets.
    #[arg(long, default_value_t = 100)]
    pub(crate) clonesets: usize,

    /// Pods (replicas) per CloneSet.
    #[arg(long, default_value_t = 100)]
    pub(crate) pods_per_cloneset: usize,

    /// Minimum number of kwok nodes (missing ones are created); default
    /// ceil(clonesets * pods-per-cloneset / 110) + 1.
    #[arg(long)]
    pub(crate) nodes: Option<usize>,

    /// A kruise-manager binary to measure; repeat it (or give a comma-separated list) to measure
    /// several builds in turn on the same objects, e.g. "before" and "after". The first one also
    /// creates the pods. Each is labelled by its path.
    #[arg(long = "manager", visible_alias = "managers", value_name = "PATH",
          value_delimiter = ',', action = ArgAction::Append,
          default_value = "target/release/kruise-manager")]
    pub(crate) managers: Vec<PathBuf>,

    /// Extra flag passed to every manager (repeatable), e.g. --manager-arg=--cloneset-workers=8.
    /// Every binary gets the same flags, so figures compare.
    #[arg(long = "manager-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(crate) manager_args: Vec<String>,

    #[command(flatten)]
    pub(crate) client: ManagerClientArgs,

    /// Prefix of the benchmark's namespace (`e2e-<prefix>-<random>`, deleted at the end).
    #[arg(long, default_value = "bench-scale")]
    pub(crate) namespace_prefix: String,

    /// Seconds the manager keeps running after all CloneSets are reconciled, before its RSS is
    /// read ("RSS settled") and it is stopped.
    #[arg(long, default_value_t = 10)]
    pub(crate) settle_seconds: u64,

    /// Timeout of each wait (creation of all pods, reconcile of all CloneSets), in seconds.
    #[arg(long, default_value_t = 1800)]
    pub(crate) timeout_seconds: u64,

    /// The kruise-manager that creates the pods before the measured restarts (default: the
    /// first `--manager` that is not `openkruise-manager.sh`). It runs unthrottled
    /// (`--rest-config-qps/-burst` 100000) so the set-up takes the API server's time only.
    #[arg(long, value_name = "PATH")]
    pub(crate) creator: Option<PathBuf>,

    /// Measure the managers this many times, interleaved (a, b, a, b, ...), for a spread.
    #[arg(long, default_value_t = 1)]
    pub(crate) rounds: usize,

    /// Also write the result (every row, the baseline, medians and ranges) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn cli_parses_workloadspread() {
        let cli = Cli::try_parse_from([
            "kruise-bench",
            "workloadspread",
            "--manager",
            "a",
            "--manager",
            "hack/bench/openkruise-manager.sh",
            "--webhook-port",
            "19470",
        ])
        .unwrap();
        let Some(Scenario::Workloadspread(w)) = cli.command else {
            panic!("workloadspread expected");
        };
        assert_eq!(w.managers.len(), 2);
        assert_eq!(
            (w.workloadspreads, w.namespaces, w.pods, w.idle_seconds),
            (100, 10, 10_000, 60)
        );
        assert_eq!(
            (w.client.qps, w.client.burst, w.client.webhook_port),
            (30, 50, 19470)
        );
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
