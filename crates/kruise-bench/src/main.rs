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
//! `admission`: the pod webhooks (`/mutate-pod`, `/validate-pod`) — injection latency with
//! SidecarSets installed, the admission calls plain Deployment pods make (and what a killed
//! manager does to their evictions and deletion), and pod-DELETE latency with 1,000
//! PodUnavailableBudgets; see the `admission` module.
//!
//! `broadcastjob`: one BroadcastJob over `--nodes` (500) kwok nodes run to completion by each
//! manager given, time and API writes per pod, against a bare client creating one pod per
//! node; see the `broadcastjob` module.
//!
//! `workloadspread`: WorkloadSpread admission latency (`/mutate-pod`) and the manager's idle CPU
//! with 100 WorkloadSpreads and 10,000 Deployment pods, for kruise-manager and the Go manager
//! beside a baseline with no manager; see the `workloadspread` module.
//!
//! Prints progress every second and a summary; exits non-zero with a reason on failure.

mod admission;
mod broadcastjob;
mod cli;
mod cluster;
mod metrics;
mod process;
mod report;
mod rollout;
mod scale;
mod workloadspread;

use clap::Parser;

use cli::{Cli, Scenario};

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        None => rollout::rollout(cli.rollout).await,
        Some(Scenario::Rollout(a)) => rollout::rollout(a).await,
        Some(Scenario::Scale(a)) => scale::scale(a).await,
        Some(Scenario::Admission(a)) => admission::admission(a).await,
        Some(Scenario::Broadcastjob(a)) => broadcastjob::broadcastjob(a).await,
        Some(Scenario::Workloadspread(a)) => workloadspread::workloadspread(a).await,
    };
    if let Err(e) = result {
        eprintln!("kruise-bench: FAILED: {e}");
        std::process::exit(1);
    }
}
