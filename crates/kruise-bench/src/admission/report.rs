//! What the admission benchmark prints (a table per part) and the JSON it writes.

use std::time::Duration;

use serde_json::json;

use super::AdmissionArgs;
use super::blast::BlastRow;
use super::budget::BudgetRun;
use super::injection::{Injection, Measured};
use super::measure::{Histogram, Latencies, ms, ms_f, ratio};

pub(super) fn print_injection(a: &AdmissionArgs, r: &Injection) {
    let m = &r.measured;
    println!();
    println!(
        "== kruise-bench admission, part 1: injection latency: {} SidecarSets ({} select the pods, {} pin the namespace), {} bare pods at {}/s ({} in flight) on {} kwok nodes ==",
        a.sidecarsets, a.matching, m.pinned, a.pods, a.rate, a.concurrency, r.nodes
    );
    print_create_latencies(a, r);
    print_admission_latencies(m);
    print_manager_use(a, r);
}

/// The client-side create latencies with the webhook and without (the baseline), and their
/// ratios.
fn print_create_latencies(a: &AdmissionArgs, r: &Injection) {
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
}

/// `/mutate-pod` latencies as the API server and the manager saw them (and the handler's CPU
/// time when the manager reports it), with what the histograms are.
fn print_admission_latencies(m: &Measured) {
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
}

/// The manager's CPU (during the creates and idle), its reconciles meanwhile, its peak RSS,
/// the pods injected and the machine's load.
fn print_manager_use(a: &AdmissionArgs, r: &Injection) {
    let m = &r.measured;
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

pub(super) fn print_blast(a: &AdmissionArgs, rows: &[BlastRow]) {
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
    print_blast_down(a, rows);
}

/// The second table of part 2: evictions and the Deployment's deletion with the manager down.
fn print_blast_down(a: &AdmissionArgs, rows: &[BlastRow]) {
    println!();
    println!(
        "-- then with the manager killed (configurations left in place), in the same namespace (no budget): {} evictions, the Deployment scaled to 0, then deleted --",
        a.evictions
    );
    let header = format!(
        "{:<38}  {:>9}  {:>10}  {:>10}  {:>10}  {:>10}  {:>9}  {:>15}  {:>6}  {:>9}  {:>14}",
        "case",
        "evicted",
        "evict API*",
        "DEL calls*",
        "DEL refused",
        "DEL excl.",
        "pods left",
        "all deleted",
        "x base",
        "evict excl.",
        "Deployment DEL"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let base = rows.first().and_then(|r| r.down.all_deleted);
    for r in rows {
        let d = &r.down;
        let (deleted, x) = match d.all_deleted {
            Some(t) => (
                format!("{:.1}s", t.as_secs_f64()),
                base.map_or("n/a".into(), |b| ratio(t.as_secs_f64(), b.as_secs_f64())),
            ),
            None => (format!("not in {} s", a.delete_wait_seconds), "-".into()),
        };
        println!(
            "{:<38}  {:>9}  {:>10}  {:>10}  {:>10}  {:>10}  {:>9}  {deleted:>15}  {x:>6}  {:>9}  {:>14}",
            r.label,
            format!("{}/{}", d.evictions - d.evictions_refused, d.evictions),
            d.eviction_view.calls.count,
            d.delete_view.calls.count,
            d.delete_view.rejected,
            d.delete_view.excluded,
            d.left,
            d.eviction_view.excluded,
            if d.deployment_delete.is_some() {
                "refused"
            } else {
                "admitted"
            },
        );
    }
    println!(
        "* evicted: evictions that succeeded (client side); evict API: vpodeviction.kb.io calls the API server made; \
         DEL calls / refused / excl.: vpod.kb.io calls for pod DELETEs, DELETEs it refused \
         (apiserver_admission_webhook_rejection_count: a failed call under failurePolicy Fail; the ReplicaSet \
         controller's retries included) and DELETEs its matchConditions kept from calling; all deleted: from \
         the scale to 0 to no pod left, waited for at most {} s; evict excl.: evictions vpodeviction.kb.io's \
         matchConditions kept from calling; Deployment DEL: `kubectl delete deployment` afterwards.",
        a.delete_wait_seconds
    );
}

pub(super) fn print_budget(a: &AdmissionArgs, r: &BudgetRun) {
    let (matching, selectors, target_refs) = r.budgets;
    println!();
    println!(
        "== kruise-bench admission, part 3: budget: {} pod DELETEs at {}/s ({} in flight) of {} bare pods covered by one budget, {} PodUnavailableBudgets ({matching} selecting the pods, {selectors} other selectors, {target_refs} targetRef) in {} namespaces, {} kwok nodes ==",
        a.deletes, a.delete_rate, a.concurrency, r.pods, a.budgets, r.namespaces, r.nodes
    );
    let header = format!(
        "{:<58}  {:>10}  {:>10}  {:>10}  {:>10}  {:>9}",
        "latency", "p50", "p99", "mean", "max", "deletes/s"
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
        "DELETE, client side, through /validate-pod (budget spent)",
        &r.webhook,
        r.webhook_rate,
    );
    row(
        "DELETE, client side, baseline (no webhook)",
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
            "vpod.kb.io DELETE seen by the API server* ({} calls)",
            r.apiserver.calls.count
        ),
        &r.apiserver.calls,
    );
    hist_row(
        format!(
            "/validate-pod handler in the manager** ({} admissions)",
            r.server.requests
        ),
        &r.server.latency,
    );
    if r.server.cpu.count > 0.0 {
        hist_row(
            format!(
                "/validate-pod handler's CPU time ({} admissions)",
                r.server.cpu.count
            ),
            &r.server.cpu,
        );
    }
    println!(
        "p50/p99 from histograms are interpolated inside the bucket holding the rank, as histogram_quantile does; means exact.\n\
         *  apiserver_admission_webhook_admission_duration_seconds{{name=\"vpod.kb.io\",operation=\"DELETE\"}} (buckets 5, 25, 100, 500 ms, ...); {} refused.\n\
         ** controller_runtime_webhook_latency_seconds{{webhook=\"/validate-pod\"}} (buckets 0.25, 0.5, 1, 2, 3, 4, 5, 10, 25 ms, ...): \
         an admission reads the budget from the cache and writes its status (resourceVersion-bound); {:.2}% took <= 5 ms.",
        r.apiserver.rejected,
        r.server.latency.fraction_le(0.005).unwrap_or(0.0) * 100.0
    );
    println!(
        "budget bench-pub unavailableAllowed before / after the measured deletes: {} / {}",
        r.allowed.0, r.allowed.1
    );
    match r.cpu_seconds {
        Some(cpu) => println!(
            "manager CPU (utime+stime) from the first DELETE to 2 s after the last: {cpu:.2} s in {:.1} s \
             ({:.0}% of one core; {:.2} ms per DELETE){}",
            r.cpu_window.as_secs_f64(),
            cpu / r.cpu_window.as_secs_f64() * 100.0,
            cpu / a.deletes as f64 * 1000.0,
            r.idle_cpu.map_or(String::new(), |idle| format!(
                "; idle before ({} s): {:.1}% of one core",
                a.idle_seconds,
                idle * 100.0
            ))
        ),
        None => println!("manager CPU: unavailable"),
    }
    println!(
        "manager reconciles during that time (controller count (seconds)): {}",
        r.server.reconciles_text()
    );
    match r.peak_rss_mib {
        Some(mb) => println!("manager peak RSS (VmHWM): {mb:.1} MiB"),
        None => println!("manager peak RSS: unavailable"),
    }
    let load = |l: Option<f64>| l.map_or("n/a".into(), |l| format!("{l:.2}"));
    println!(
        "machine load average (1 min) at the start of the baseline / webhook deletes: {} / {} ({} CPUs)",
        load(r.load.0),
        load(r.load.1),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
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
pub(super) fn result_json(
    a: &AdmissionArgs,
    injection: Option<&Injection>,
    blast: Option<&[BlastRow]>,
    budget: Option<&BudgetRun>,
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
                    "manager_down": {
                        "evictions": r.down.evictions,
                        "evictions_refused": r.down.evictions_refused,
                        "vpodeviction_calls_apiserver": r.down.eviction_view.calls.count,
                        "vpodeviction_excluded": r.down.eviction_view.excluded,
                        "vpodeviction_refused": r.down.eviction_view.rejected,
                        "vpod_delete_calls_apiserver": r.down.delete_view.calls.count,
                        "vpod_delete_refused": r.down.delete_view.rejected,
                        "vpod_delete_excluded": r.down.delete_view.excluded,
                        "all_deleted_seconds": r.down.all_deleted.map(|d| d.as_secs_f64()),
                        "pods_left": r.down.left,
                        "deployment_delete_refused": r.down.deployment_delete,
                        "wait_seconds": a.delete_wait_seconds,
                    },
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
        "budget": budget.map(|r| budget_json(a, r)),
    })
}

fn budget_json(a: &AdmissionArgs, r: &BudgetRun) -> serde_json::Value {
    let window = r.cpu_window.as_secs_f64();
    let (matching, selectors, target_refs) = r.budgets;
    json!({
        "budgets": a.budgets, "namespaces": r.namespaces,
        "budgets_selecting_the_pods": matching, "budgets_other_selectors": selectors,
        "budgets_target_ref": target_refs,
        "pods": r.pods, "deletes": a.deletes, "target_rate": a.delete_rate,
        "concurrency": a.concurrency, "kwok_nodes": r.nodes,
        "baseline_no_webhook": {"delete": latencies_json(&r.baseline),
                                "achieved_rate": r.baseline_rate, "load_average": r.load.0},
        "with_webhook": {"delete": latencies_json(&r.webhook),
                         "achieved_rate": r.webhook_rate, "load_average": r.load.1},
        "validate_pod_manager": histogram_json(&r.server.latency),
        "validate_pod_manager_cpu": histogram_json(&r.server.cpu),
        "validate_pod_manager_requests": r.server.requests,
        "vpod_delete_apiserver": histogram_json(&r.apiserver.calls),
        "vpod_delete_refused": r.apiserver.rejected,
        "unavailable_allowed_before_after": [r.allowed.0, r.allowed.1],
        "manager_cpu": {
            "seconds": r.cpu_seconds, "window_seconds": window,
            "cores": r.cpu_seconds.map(|c| c / window),
            "idle_cores": r.idle_cpu,
            "ms_per_delete": r.cpu_seconds.map(|c| c / a.deletes as f64 * 1000.0),
        },
        "manager_peak_rss_mib": r.peak_rss_mib,
        "manager_reconciles": r.server.reconciles.iter().map(|(c, (n, t))|
            (c.clone(), json!({"count": n, "seconds": t}))).collect::<serde_json::Map<_, _>>(),
    })
}
