//! Part 3, budget: pod DELETE latency through `/validate-pod` (`vpod.kb.io`) with 1,000
//! PodUnavailableBudgets in the cluster, against the same deletes with no webhook
//! configuration.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kruise_e2e::{TestEnv, TestNamespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use super::AdmissionArgs;
use super::cluster::{delete_pods, start_manager, stop_manager};
use super::injection::{idle_cpu, paced};
use super::measure::{
    ApiserverView, Latencies, PodWebhook, clock_ticks, cpu_seconds, load_average, ms, ms_f,
    scrape_apiserver_for, scrape_webhook,
};
use crate::cluster::kwok_node_names;
use crate::process::{Manager, proc_status_mib};

pub(super) const VALIDATE_POD: &str = "/validate-pod";
/// Label `app` of the measured pods, selected by the budget `bench-pub`.
const APP: &str = "bench-pub";
/// Pods of the measured workload never deleted: the budget's `minAvailable`, so that its
/// `desiredAvailable` stays above 0 (a budget wanting nothing available is not consulted) and
/// every measured delete spends one unit of `unavailableAllowed` (a status write).
const KEEP: usize = 10;

/// What part 3 measured.
pub(super) struct BudgetRun {
    pub(super) nodes: usize,
    pub(super) namespaces: usize,
    /// Budgets by kind: (selecting the measured pods, other selectors, targetRef).
    pub(super) budgets: (usize, usize, usize),
    pub(super) pods: usize,
    pub(super) baseline: Latencies,
    pub(super) baseline_rate: f64,
    pub(super) webhook: Latencies,
    pub(super) webhook_rate: f64,
    /// Delta of the manager's `/validate-pod` metrics over the measured deletes.
    pub(super) server: PodWebhook,
    /// Delta of the API server's view of `vpod.kb.io` DELETE over the measured deletes.
    pub(super) apiserver: ApiserverView,
    pub(super) cpu_seconds: Option<f64>,
    pub(super) cpu_window: Duration,
    pub(super) idle_cpu: Option<f64>,
    pub(super) peak_rss_mib: Option<f64>,
    /// The budget's `unavailableAllowed` before the measured deletes and after them.
    pub(super) allowed: (i32, i32),
    /// Load average (1 min) when the baseline and the webhook deletes started.
    pub(super) load: (Option<f64>, Option<f64>),
}

/// A measured pod: labelled for the budget, bound to `node`, the default grace period (a
/// `kubectl delete pod` leaves it Terminating until kwok removes it).
fn budget_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": APP}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "nginx:1.25"}]},
    }))
    .expect("valid pod")
}

/// Budget `i` of namespace `ns_index` (`per_ns` per namespace): in the first namespace budget
/// 0 (`bench-pub`) selects the measured pods (`minAvailable` [`KEEP`]); of the others, two in
/// three select labels no pod carries (`matchLabels`, or a `matchExpressions` `In`) and one in
/// three names a workload by `targetRef` (a CloneSet, Deployment or StatefulSet that does not
/// exist).
fn budget(ns_index: usize, i: usize, per_ns: usize) -> PodUnavailableBudget {
    let n = ns_index * per_ns + i;
    let (name, spec) = if n == 0 {
        (
            "bench-pub".to_string(),
            json!({"selector": {"matchLabels": {"app": APP}}, "minAvailable": KEEP}),
        )
    } else {
        let name = format!("other-{n:04}");
        let spec = match n % 3 {
            0 => {
                let (api_version, kind) = [
                    ("apps.kruise.io/v1alpha1", "CloneSet"),
                    ("apps/v1", "Deployment"),
                    ("apps/v1", "StatefulSet"),
                ][(n / 3) % 3];
                json!({"targetRef": {"apiVersion": api_version, "kind": kind, "name": name},
                       "maxUnavailable": "25%"})
            }
            1 => json!({"selector": {"matchLabels": {"app": name}}, "maxUnavailable": 1}),
            _ => json!({"selector": {"matchExpressions": [
                            {"key": "app", "operator": "In", "values": [name]}]},
                        "minAvailable": "50%"}),
        };
        (name, spec)
    };
    serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("valid budget")
}

/// Budgets by kind among `total` ([`budget`]): (selecting the measured pods, other selectors,
/// targetRef).
fn budget_kinds(total: usize) -> (usize, usize, usize) {
    let target_ref = (1..total).filter(|n| n % 3 == 0).count();
    (1, total - 1 - target_ref, target_ref)
}

pub(super) async fn budget_run(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
) -> Result<BudgetRun, String> {
    if a.budgets == 0 || a.budget_namespaces == 0 || a.deletes == 0 || a.delete_rate <= 0.0 {
        return Err(
            "part budget needs --budgets > 0, --budget-namespaces > 0, --deletes > 0, --delete-rate > 0"
                .into(),
        );
    }
    let nodes: Vec<String> = kwok_node_names(env).await?.into_iter().collect();
    let pods = a.warmup + a.deletes + KEEP;
    println!();
    println!(
        "== part 3: budget: {} pod DELETEs at {}/s ({} in flight) with {} PodUnavailableBudgets in {} namespaces ==",
        a.deletes, a.delete_rate, a.concurrency, a.budgets, a.budget_namespaces
    );
    let timeout = Duration::from_secs(a.timeout_seconds);

    // Baseline: no manager, no webhook configuration.
    println!(
        "baseline: {} DELETEs (+{} warm-up) of {pods} pods with no webhook configuration",
        a.deletes, a.warmup
    );
    let ns = env
        .namespace("bench-adm-pub-base")
        .await
        .map_err(|e| e.to_string())?;
    let base_load = load_average();
    let r = async {
        create_pods(&ns, &nodes, pods, a).await?;
        wait_pods_ready(&ns, pods, false, timeout).await?;
        deletes(&ns.api(), 0, a.warmup, a, "warm-up").await?;
        deletes(&ns.api(), a.warmup, a.deletes, a, "sent").await
    }
    .await;
    let cleaned = delete_pods(&ns.api(), timeout).await;
    let _ = ns.delete().await;
    let (base_latencies, base_elapsed) = r?;
    cleaned?;
    let baseline = Latencies::of(&base_latencies);
    let baseline_rate = a.deletes as f64 / base_elapsed.as_secs_f64();
    println!(
        "  p50 {}, p99 {}, {:.0} deletes/s",
        ms(baseline.p50),
        ms(baseline.p99),
        baseline_rate
    );

    // Through the webhook.
    println!("with the webhook: starting the manager");
    let mut manager = start_manager(
        a,
        &[],
        &format!("bench-admission-budget-{}.log", std::process::id()),
        http,
    )
    .await?;
    let mut namespaces = Vec::new();
    let r = async {
        for _ in 0..a.budget_namespaces {
            namespaces.push(
                env.namespace("bench-adm-pub")
                    .await
                    .map_err(|e| e.to_string())?,
            );
        }
        measure(env, a, http, &mut manager, &namespaces, &nodes, pods).await
    }
    .await;
    let peak_rss_mib = proc_status_mib(manager.pid, "VmHWM");
    // The remaining pods are protected: the configurations go first.
    let stopped = stop_manager(env, &mut manager).await;
    let mut cleaned = Ok(());
    for ns in namespaces {
        if let Err(e) = delete_pods(&ns.api(), timeout).await {
            cleaned = Err(e);
        }
        let _ = ns.delete().await;
    }
    let mut run = r?;
    stopped?;
    cleaned?;
    run.nodes = nodes.len();
    run.baseline = baseline;
    run.baseline_rate = baseline_rate;
    run.peak_rss_mib = peak_rss_mib;
    run.load.0 = base_load;
    Ok(run)
}

/// The webhook case on the running manager: the budgets, the measured pods, the warm-up, the
/// manager's idle CPU, then the measured deletes with the metrics and CPU time around them.
async fn measure(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
    namespaces: &[TestNamespace],
    nodes: &[String],
    pods: usize,
) -> Result<BudgetRun, String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    create_budgets(a, manager, namespaces).await?;
    wait_budgets_computed(env, manager, a.budgets, timeout).await?;
    let ns = &namespaces[0];
    create_pods(ns, nodes, pods, a).await?;
    wait_pods_ready(ns, pods, true, timeout).await?;
    let budgets: Api<PodUnavailableBudget> = ns.api();
    let allowed = |b: &PodUnavailableBudget| b.status.as_ref().map_or(0, |s| s.unavailable_allowed);
    let start = Instant::now();
    loop {
        manager.check_running()?;
        let b = budgets.get("bench-pub").await.map_err(|e| e.to_string())?;
        let s = b.status.clone().unwrap_or_default();
        if s.current_available == pods as i32 && s.desired_available == KEEP as i32 {
            println!(
                "  budget bench-pub: {} available, {} desired, {} may be disrupted",
                s.current_available, s.desired_available, s.unavailable_allowed
            );
            break;
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "budget bench-pub: {} available, {} desired after {timeout:?}; want {pods} and {KEEP}",
                s.current_available, s.desired_available
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "  {} DELETEs (+{} warm-up) through /validate-pod",
        a.deletes, a.warmup
    );
    deletes(&ns.api(), 0, a.warmup, a, "warm-up").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ticks = clock_ticks();
    let idle = idle_cpu(manager.pid, ticks, a.idle_seconds).await;
    let before_allowed = allowed(&budgets.get("bench-pub").await.map_err(|e| e.to_string())?);
    let load = load_average();
    let before = scrape_webhook(http, manager, VALIDATE_POD).await?;
    let api_before = scrape_apiserver_for(env, "vpod.kb.io", "DELETE").await?;
    let cpu0 = cpu_seconds(manager.pid, ticks);
    let t0 = Instant::now();
    let (latencies, elapsed) = deletes(&ns.api(), a.warmup, a.deletes, a, "sent").await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu1 = cpu_seconds(manager.pid, ticks);
    let window = t0.elapsed();
    let server = scrape_webhook(http, manager, VALIDATE_POD)
        .await?
        .since(&before);
    let apiserver = scrape_apiserver_for(env, "vpod.kb.io", "DELETE")
        .await?
        .since(&api_before);
    manager.check_running()?;
    let after_allowed = allowed(&budgets.get("bench-pub").await.map_err(|e| e.to_string())?);
    if server.requests < a.deletes as f64 {
        return Err(format!(
            "/validate-pod counted {} admissions for {} DELETEs of covered pods (log {})",
            server.requests,
            a.deletes,
            manager.log.display()
        ));
    }
    let webhook = Latencies::of(&latencies);
    let webhook_rate = a.deletes as f64 / elapsed.as_secs_f64();
    println!(
        "  p50 {}, p99 {}, {:.0} deletes/s; manager: {} admissions, p99 {}; unavailableAllowed {before_allowed} -> {after_allowed}",
        ms(webhook.p50),
        ms(webhook.p99),
        webhook_rate,
        server.requests,
        ms_f(server.latency.quantile(0.99))
    );
    Ok(BudgetRun {
        nodes: 0,
        namespaces: namespaces.len(),
        budgets: budget_kinds(a.budgets),
        pods,
        baseline: Latencies::default(),
        baseline_rate: 0.0,
        webhook,
        webhook_rate,
        server,
        apiserver,
        cpu_seconds: cpu0.zip(cpu1).map(|(a, b)| b - a),
        cpu_window: window,
        idle_cpu: idle,
        peak_rss_mib: None,
        allowed: (before_allowed, after_allowed),
        load: (None, load),
    })
}

/// Creates the `--budgets` budgets, spread evenly over `namespaces` ([`budget`]), 8 at a time.
async fn create_budgets(
    a: &AdmissionArgs,
    manager: &mut Manager,
    namespaces: &[TestNamespace],
) -> Result<(), String> {
    let per_ns = a.budgets.div_ceil(namespaces.len());
    let all: Vec<(Api<PodUnavailableBudget>, PodUnavailableBudget)> = (0..a.budgets)
        .map(|n| {
            let (k, i) = (n / per_ns, n % per_ns);
            (namespaces[k].api(), budget(k, i, per_ns))
        })
        .collect();
    let start = Instant::now();
    let (_, results, _) = paced(all.len(), 1e9, 8, "budgets created", |i| {
        let (api, b) = all[i].clone();
        async move {
            api.create(&PostParams::default(), &b)
                .await
                .map(|_| ())
                .map_err(|e| {
                    format!(
                        "creating budget {}: {e}",
                        b.metadata.name.unwrap_or_default()
                    )
                })
        }
    })
    .await?;
    manager.check_running()?;
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        return Err(e);
    }
    let (matching, selectors, target_refs) = budget_kinds(a.budgets);
    println!(
        "  {} budgets created in {:.1}s over {} namespaces ({matching} selecting the measured pods, {selectors} other selectors, {target_refs} targetRef)",
        a.budgets,
        start.elapsed().as_secs_f64(),
        namespaces.len()
    );
    Ok(())
}

/// Waits until the controller has computed every budget (status for its generation): its
/// passes over 1,000 budgets are not part of the measured deletes.
async fn wait_budgets_computed(
    env: &TestEnv,
    manager: &mut Manager,
    total: usize,
    timeout: Duration,
) -> Result<(), String> {
    let api: Api<PodUnavailableBudget> = Api::all(env.client.clone());
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        manager.check_running()?;
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing budgets: {e}"))?;
        let done = list
            .items
            .iter()
            .filter(|b| {
                b.status
                    .as_ref()
                    .is_some_and(|s| Some(s.observed_generation) == b.metadata.generation)
            })
            .count();
        if done >= total {
            println!(
                "  the controller computed all {total} budgets after {:.1}s",
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!("    {done}/{total} budgets computed");
            last_print = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{done}/{total} budgets computed after {timeout:?} (log {})",
                manager.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Creates the measured pods `pod-00000`... in `ns`, `--concurrency` at a time.
async fn create_pods(
    ns: &TestNamespace,
    nodes: &[String],
    n: usize,
    a: &AdmissionArgs,
) -> Result<(), String> {
    let api: Api<Pod> = ns.api();
    let (_, results, elapsed) = paced(n, 1e9, a.concurrency, "pods created", |i| {
        let api = api.clone();
        let pod = budget_pod(&format!("pod-{i:05}"), &nodes[i % nodes.len()]);
        async move {
            api.create(&PostParams::default(), &pod)
                .await
                .map(|_| ())
                .map_err(|e| format!("creating a pod: {e}"))
        }
    })
    .await?;
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        return Err(e);
    }
    println!("  {n} pods created in {:.1}s", elapsed.as_secs_f64());
    Ok(())
}

/// Waits until `n` pods of `ns` are Ready (and, with `annotated`, carry
/// `kruise.io/related-pub`).
async fn wait_pods_ready(
    ns: &TestNamespace,
    n: usize,
    annotated: bool,
    timeout: Duration,
) -> Result<(), String> {
    let api: Api<Pod> = ns.api();
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing pods: {e}"))?;
        let ready = list
            .items
            .iter()
            .filter(|p| crate::cluster::ready(p))
            .filter(|p| {
                !annotated
                    || p.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key("kruise.io/related-pub"))
            })
            .count();
        if ready >= n {
            println!(
                "  {n} pods Ready{} after {:.1}s",
                if annotated {
                    " with kruise.io/related-pub"
                } else {
                    ""
                },
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!("    {ready}/{n} pods Ready");
            last_print = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!("{ready}/{n} pods Ready after {timeout:?}"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// DELETEs (default options, as `kubectl delete pod`) of pods `pod-<first>`...
/// `pod-<first + n - 1>`, paced at `--delete-rate`; fails if one is refused. Returns the
/// client-side latencies and the time from the first sent to the last answered.
async fn deletes(
    api: &Api<Pod>,
    first: usize,
    n: usize,
    a: &AdmissionArgs,
    what: &str,
) -> Result<(Vec<Duration>, Duration), String> {
    let (latencies, results, elapsed) = paced(n, a.delete_rate, a.concurrency, what, |i| {
        let api = api.clone();
        let name = format!("pod-{:05}", first + i);
        async move {
            api.delete(&name, &DeleteParams::default())
                .await
                .map(|_| ())
                .map_err(|e| format!("DELETE {name}: {e}"))
        }
    })
    .await?;
    let failed: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if let Some(e) = failed.first() {
        return Err(format!(
            "{} of {n} DELETEs failed; first: {e}",
            failed.len()
        ));
    }
    Ok((latencies, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_budget_selects_the_measured_pods_the_others_nothing() {
        let per_ns = 100;
        let all: Vec<PodUnavailableBudget> = (0..1000)
            .map(|n| budget(n / per_ns, n % per_ns, per_ns))
            .collect();
        let selecting: Vec<&PodUnavailableBudget> = all
            .iter()
            .filter(|b| {
                b.spec
                    .selector
                    .as_ref()
                    .and_then(|s| s.match_labels.as_ref())
                    .is_some_and(|l| l.get("app").map(String::as_str) == Some(APP))
            })
            .collect();
        assert_eq!(selecting.len(), 1);
        assert_eq!(selecting[0].metadata.name.as_deref(), Some("bench-pub"));
        let target_refs = all
            .iter()
            .filter(|b| b.spec.target_reference.is_some())
            .count();
        assert_eq!(budget_kinds(1000), (1, 1000 - 1 - target_refs, target_refs));
        assert_eq!(target_refs, 333);
        let names: std::collections::BTreeSet<_> =
            all.iter().map(|b| b.metadata.name.clone()).collect();
        assert_eq!(names.len(), 1000);
    }
}
