//! Part 1, injection latency: paced bare-pod creates without the webhook (the baseline) and
//! through `/mutate-pod` with SidecarSets installed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise_e2e::{TestEnv, TestNamespace};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::cluster::{
    delete_pods, delete_sidecarsets, pod_webhook_conditions, sidecarset_api, start_manager,
    stop_manager,
};
use super::measure::{
    ApiserverView, Latencies, PodWebhook, clock_ticks, cpu_seconds, load_average, ms, ms_f,
    scrape_apiserver, scrape_pod_webhook,
};
use super::{AdmissionArgs, POD_APP, POD_MESH, SIDECARSET_LABEL, SIDECARSET_LABEL_VALUE};
use crate::cluster::kwok_node_names;
use crate::process::{Manager, proc_status_mib};

/// One set of paced creates.
struct Creates {
    /// Client-side latency of each create request.
    latencies: Vec<Duration>,
    /// Container names of each created pod, as the API server answered the create.
    containers: Vec<Vec<String>>,
    /// First create sent to last answer received.
    elapsed: Duration,
}

/// Runs `op(0)`, ..., `op(n - 1)`: request `i` starts no earlier than `i / rate` seconds after
/// the first (a schedule a late request catches up on), at most `concurrency` in flight,
/// progress printed every 2 s as `<i>/<n> <what>`. Returns each request's client-side latency
/// and result, and the time from the first sent to the last answered.
pub(super) async fn paced<T, F, Fut>(
    n: usize,
    rate: f64,
    concurrency: usize,
    what: &str,
    op: F,
) -> Result<(Vec<Duration>, Vec<Result<T, String>>, Duration), String>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    let start = tokio::time::Instant::now();
    let mut last_print = Instant::now();
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!(
                "    {i}/{n} {what} ({:.0}/s)",
                i as f64 / start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let request = op(i);
        tasks.spawn(async move {
            let sent = Instant::now();
            let r = request.await;
            let latency = sent.elapsed();
            drop(permit);
            (i, latency, r)
        });
    }
    let mut latencies = vec![Duration::ZERO; n];
    let mut results: Vec<Option<Result<T, String>>> = (0..n).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        let (i, latency, r) = joined.map_err(|e| e.to_string())?;
        latencies[i] = latency;
        results[i] = Some(r);
    }
    let elapsed = start.elapsed();
    let results = results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect();
    Ok((latencies, results, elapsed))
}

/// Creates `pods` through `api`, paced ([`paced`]); fails if a create fails.
async fn paced_creates(
    api: &Api<Pod>,
    pods: Vec<Pod>,
    rate: f64,
    concurrency: usize,
) -> Result<Creates, String> {
    let n = pods.len();
    let (latencies, results, elapsed) = paced(n, rate, concurrency, "sent", |i| {
        let api = api.clone();
        let pod = pods[i].clone();
        async move {
            api.create(&PostParams::default(), &pod)
                .await
                .map_err(|e| e.to_string())
        }
    })
    .await?;
    let mut containers = vec![Vec::new(); n];
    let mut errors = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(p) => {
                containers[i] = p
                    .spec
                    .map(|s| s.containers.into_iter().map(|c| c.name).collect())
                    .unwrap_or_default()
            }
            Err(e) => errors.push(e),
        }
    }
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
pub(super) fn bench_pod(name: &str, node: &str) -> Pod {
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
pub(super) struct Injection {
    pub(super) nodes: usize,
    pub(super) baseline: Latencies,
    pub(super) baseline_rate: f64,
    pub(super) webhook: Latencies,
    pub(super) webhook_rate: f64,
    /// What the manager and the API server counted during the measured creates.
    pub(super) measured: Measured,
    pub(super) peak_rss_mib: Option<f64>,
    pub(super) injected: usize,
    /// Load average (1 min) when the baseline and the webhook creates started.
    pub(super) load: (Option<f64>, Option<f64>),
}

pub(super) async fn injection_run(
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
    let (baseline, baseline_rate, base_load) = injection_baseline(env, a, &nodes, timeout).await?;
    let (measured, peak_rss_mib) = injection_with_webhook(env, a, http, &nodes, timeout).await?;
    let webhook = &measured.creates;
    let injected = count_injected(a, webhook)?;
    let lat = Latencies::of(&webhook.latencies);
    let webhook_rate = a.pods as f64 / webhook.elapsed.as_secs_f64();
    let load = (base_load, measured.load);
    Ok(Injection {
        nodes: nodes.len(),
        baseline,
        baseline_rate,
        webhook: lat,
        webhook_rate,
        measured,
        peak_rss_mib,
        injected,
        load,
    })
}

/// Step 1, the baseline: the creates with no webhook configuration and no manager, in a namespace of
/// their own. Returns their latencies, the rate achieved and the load average at the start.
async fn injection_baseline(
    env: &TestEnv,
    a: &AdmissionArgs,
    nodes: &[String],
    timeout: Duration,
) -> Result<(Latencies, f64, Option<f64>), String> {
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
            bench_pods("warm", a.warmup, nodes),
            a.rate,
            a.concurrency,
        )
        .await?;
        paced_creates(
            &pods,
            bench_pods("pod", a.pods, nodes),
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
    Ok((base, baseline_rate, base_load))
}

/// Step 2: the creates through the webhook: the manager started, the SidecarSets installed and the
/// creates measured ([`injection_measure`]), then all of it removed again. Returns the
/// measurement and the manager's peak RSS.
async fn injection_with_webhook(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
    nodes: &[String],
    timeout: Duration,
) -> Result<(Measured, Option<f64>), String> {
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
    let r = injection_measure(env, a, http, &mut manager, &ns, nodes).await;
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
    Ok((measured, peak_rss_mib))
}

/// How many of the measured pods came back with the sidecar of every matching SidecarSet;
/// fails unless all of them did.
fn count_injected(a: &AdmissionArgs, webhook: &Creates) -> Result<usize, String> {
    let want: Vec<String> = (a.sidecarsets - a.matching..a.sidecarsets)
        .map(|i| format!("sidecar-{i:02}"))
        .collect();
    let all_sidecars =
        |c: &Vec<String>| c.len() == 1 + a.matching && want.iter().all(|w| c.contains(w));
    let injected = webhook
        .containers
        .iter()
        .filter(|c| all_sidecars(c))
        .count();
    if injected != a.pods {
        let bad = webhook.containers.iter().find(|c| !all_sidecars(c));
        return Err(format!(
            "only {injected} of {} pods were created with their {} sidecars; e.g. containers {bad:?}",
            a.pods, a.matching
        ));
    }
    Ok(injected)
}

/// The webhook case of part 1.
pub(super) struct Measured {
    creates: Creates,
    /// Delta of the manager's `/mutate-pod` metrics over the measured creates.
    pub(super) server: PodWebhook,
    /// Delta of the API server's view of `mpod.kb.io` over the measured creates.
    pub(super) apiserver: ApiserverView,
    pub(super) cpu_seconds: Option<f64>,
    pub(super) cpu_window: Duration,
    /// CPU seconds per second while nothing happened, before the creates.
    pub(super) idle_cpu: Option<f64>,
    /// SidecarSets pinning the namespace.
    pub(super) pinned: usize,
    pub(super) load: Option<f64>,
}

/// The webhook case's measurement, on the running manager: the SidecarSets created, the pod
/// webhook seen to follow them, then the warm-up, the manager's idle CPU, and the measured
/// creates with the metrics and CPU time around them.
async fn injection_measure(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
    ns: &TestNamespace,
    nodes: &[String],
) -> Result<Measured, String> {
    let (sets, pinned) = create_sidecarsets(env, a, ns).await?;
    wait_match_conditions(env, manager, &sets).await?;
    let pods: Api<Pod> = ns.api();
    probe_injection(a, &pods, nodes).await?;
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
    let idle_cpu = idle_cpu(manager.pid, ticks, a.idle_seconds).await;
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

/// Creates the `--sidecarsets` SidecarSets ([`sidecarset`]); returns them and how many pin the
/// namespace.
async fn create_sidecarsets(
    env: &TestEnv,
    a: &AdmissionArgs,
    ns: &TestNamespace,
) -> Result<(Vec<(String, serde_json::Value)>, usize), String> {
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
    Ok((sets, pinned))
}

/// Waits until the pod webhook's `matchConditions`, which follow the SidecarSets (resynced on
/// every change), name every one of `sets`.
async fn wait_match_conditions(
    env: &TestEnv,
    manager: &mut Manager,
    sets: &[(String, serde_json::Value)],
) -> Result<(), String> {
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
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "mpod.kb.io matchConditions still miss {missing} SidecarSets after 120 s (log {})",
                manager.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates probe pods until one comes back injected: the API server calls the webhook and the
/// handler sees every SidecarSet.
async fn probe_injection(
    a: &AdmissionArgs,
    pods: &Api<Pod>,
    nodes: &[String],
) -> Result<(), String> {
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
    Ok(())
}

/// The manager's CPU use, in cores, over `seconds` of nothing happening.
pub(super) async fn idle_cpu(pid: u32, ticks: f64, seconds: u64) -> Option<f64> {
    let idle0 = cpu_seconds(pid, ticks);
    let idle_start = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    cpu_seconds(pid, ticks)
        .zip(idle0)
        .map(|(b, a)| (b - a) / idle_start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

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
