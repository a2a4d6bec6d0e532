//! `kruise-bench admission`: the pod webhooks (`/mutate-pod`, `/validate-pod`) with the manager
//! run as users run it (webhook server on, `--webhook-host 127.0.0.1`, `POD_NAMESPACE=kruise-system`, watching
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
//! (Deployment status), with the ratio to the baseline. Then, with the manager **killed** (its
//! webhook configurations left in place, failing closed as after a crash), in the same
//! namespace, which holds no budget: `--evictions` of the pods are evicted (client side: how
//! many were refused; the API server's `vpodeviction.kb.io` calls, exclusions, refusals) and
//! the Deployment is scaled to 0 (the ReplicaSet controller deletes every pod): the API
//! server's `vpod.kb.io` DELETE calls, exclusions and refusals
//! (`apiserver_admission_webhook_rejection_count`, the controller's retries included), and the
//! time to no pod left — at most `--delete-wait-seconds`, then the pods left; then the
//! Deployment itself is deleted (`kubectl delete deployment`): admitted or refused.
//! The baseline runs the same with no configuration.
//!
//! Part 3, **budget** (issue #35): the pod DELETE path through `/validate-pod` with
//! `--budgets` PodUnavailableBudgets spread over `--budget-namespaces` fresh namespaces: one
//! (`bench-pub`, `minAvailable: 10`) selects the measured pods, two in three of the others
//! select labels no pod carries (`matchLabels` or `matchExpressions`), one in three names a
//! CloneSet, Deployment or StatefulSet that does not exist by `targetRef`. The controller has
//! computed every budget before the measurement. `--warmup` + `--deletes` + 10 bare pods
//! (kwok nodes, the default grace period) are created in the first namespace, Ready and
//! carrying `kruise.io/related-pub`; the warm-up ones, then `--deletes` of them are deleted
//! (default options, as `kubectl delete pod`) at `--delete-rate`, `--concurrency` in flight;
//! every delete is admitted and spends one unit of the budget (a status write). Baseline: the
//! same pods and deletes with no manager and no webhook configuration. Reported: client-side
//! DELETE latency (p50/p99/mean/max) with and without the webhook, `/validate-pod` from the
//! manager's `controller_runtime_webhook_latency_seconds` (and its handler CPU time) and
//! `vpod.kb.io` as the API server timed it, the manager's CPU seconds over the deletes (idle
//! use beside it) and peak RSS.
//!
//! The result is printed as tables and written as JSON (`--json`, default
//! `target/kruise-bench/admission.json`).
//!
//! Everything the run creates is deleted at the end: namespaces, SidecarSets, the webhook
//! configurations, the certificate Secret (and `kruise-system`) if it created them, kwok nodes it
//! added.

mod blast;
mod budget;
mod cluster;
mod injection;
pub(crate) mod measure;
mod report;

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Args;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kruise_e2e::{TestEnv, install_crds, testbed_kubeconfig};
use kube::api::{Api, DeleteParams};

use crate::cluster::{ensure_nodes, kwok_node_names};
use crate::metrics::http_client;

use blast::blast_run;
use budget::budget_run;
use cluster::delete_sidecarsets;
pub(crate) use cluster::{
    delete_pods, delete_webhook_configurations, ensure_kruise_namespace, pod_webhook_conditions,
    webhook_configurations,
};
use injection::injection_run;
use report::{print_blast, print_budget, print_injection, result_json};

/// The manager's own namespace (`POD_NAMESPACE`), as OpenKruise installs it.
pub(crate) const KRUISE_NAMESPACE: &str = kruise_e2e::manager::KRUISE_NAMESPACE;
const MUTATING: &str = "kruise-mutating-webhook-configuration";
const VALIDATING: &str = "kruise-validating-webhook-configuration";
pub(crate) const CERT_SECRET: &str = "kruise-webhook-certs";
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

    /// Parts 1 and 3: creates (deletes) in flight at most.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,

    /// Parts 1 and 3: unmeasured creates (deletes) before the measured ones (connections,
    /// caches), per case.
    #[arg(long, default_value_t = 50)]
    warmup: usize,

    /// Parts 1 and 3: seconds the manager's CPU use is measured with nothing happening, before
    /// the measured creates (deletes) (its background use, reported beside the run's).
    #[arg(long, default_value_t = 5)]
    idle_seconds: u64,

    /// Part 2: replicas of the plain Deployment.
    #[arg(long, default_value_t = 1000)]
    deployment_pods: usize,

    /// Part 2: pods evicted with the manager down (each case).
    #[arg(long, default_value_t = 20)]
    evictions: usize,

    /// Part 2: how long to wait, with the manager down, for the deleted Deployment's pods to be
    /// gone before counting those left (seconds).
    #[arg(long, default_value_t = 60)]
    delete_wait_seconds: u64,

    /// Part 3: PodUnavailableBudgets installed (one selects the measured pods).
    #[arg(long, default_value_t = 1000)]
    budgets: usize,

    /// Part 3: namespaces they are spread over (the measured pods live in the first).
    #[arg(long, default_value_t = 10)]
    budget_namespaces: usize,

    /// Part 3: pod DELETEs measured per case (after --warmup unmeasured ones).
    #[arg(long, default_value_t = 500)]
    deletes: usize,

    /// Part 3: target DELETE rate (per second; --concurrency in flight at most).
    #[arg(long, default_value_t = 50.0)]
    delete_rate: f64,

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
    /// Admission calls and time to Ready for plain Deployment pods (issue #21), then evictions
    /// and the Deployment's deletion with the manager down (issue #35).
    Blast,
    /// Pod DELETE latency through /validate-pod with 1,000 PodUnavailableBudgets (issue #35).
    Budget,
    /// Injection and blast, injection first.
    Both,
    /// All three: injection, blast, budget.
    All,
}

// ---------------------------------------------------------------------------------------------
// The run

/// What the run found and must restore.
struct Owned {
    created_kruise_namespace: bool,
    secret_existed: bool,
    nodes_before: BTreeSet<String>,
}

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
    let mut budget = None;
    let mut result = Ok(());
    if matches!(a.part, Part::Injection | Part::Both | Part::All) {
        match injection_run(&env, &a, &http).await {
            Ok(r) => injection = Some(r),
            Err(e) => result = Err(e),
        }
    }
    if result.is_ok() && matches!(a.part, Part::Blast | Part::Both | Part::All) {
        match blast_run(&env, &a, &http).await {
            Ok(r) => blast = Some(r),
            Err(e) => result = Err(e),
        }
    }
    if result.is_ok() && matches!(a.part, Part::Budget | Part::All) {
        match budget_run(&env, &a, &http).await {
            Ok(r) => budget = Some(r),
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
    if let Some(r) = &budget {
        print_budget(&a, r);
    }
    let result = result.and(cleaned);
    let doc = result_json(
        &a,
        injection.as_ref(),
        blast.as_deref(),
        budget.as_ref(),
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
    crate::cluster::delete_added_kwok_nodes(env, &owned.nodes_before, &mut note).await;
    match first_error {
        None => {
            println!("  done: namespaces, SidecarSets, webhook configurations, nodes removed");
            Ok(())
        }
        Some(e) => Err(e),
    }
}
