//! What the WorkloadSpread benchmark prints (progress summaries per case, then one table with
//! every case side by side and the ratios) and the JSON it writes.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::{Case, WorkloadSpreadArgs};
use crate::admission::measure::{Histogram, ms_f, ratio};
use crate::metrics::Requests;
use crate::process::is_openkruise;

fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

/// After the creates: the case's figures so far.
pub(super) fn print_creates(c: &Case) {
    let h = |h: Option<&Histogram>| {
        h.map_or("n/a".to_string(), |h| {
            format!(
                "{} calls, p50 {}, p99 {}, mean {}",
                h.count,
                ms_f(h.quantile(0.5)),
                ms_f(h.quantile(0.99)),
                ms_f(h.mean())
            )
        })
    };
    if let Some(w) = &c.webhook {
        println!("  /mutate-pod (manager): {}", h(Some(&w.latency)));
    }
    if let Some(v) = &c.apiserver
        && v.calls.count > 0.0
    {
        println!("  mpod.kb.io CREATE (API server): {}", h(Some(&v.calls)));
    }
    println!("  pod CREATE (API server): {}", h(c.pod_creates.as_ref()));
    if let (Some(cpu), Some(r)) = (c.cpu_creates, c.ready) {
        println!(
            "  manager CPU from the first create to all Ready: {cpu:.2} s ({:.0}% of one core)",
            cpu / r.as_secs_f64() * 100.0
        );
    }
}

/// The correctness check of a manager case.
pub(super) fn print_check(c: &Case) {
    let Some(ch) = &c.check else {
        return;
    };
    println!(
        "  check: {} pods; without annotation {}, wrong WorkloadSpread/subset {}, subsets over maxReplicas {}, outside their zone {}, without their patch {}",
        ch.pods,
        ch.unannotated,
        ch.wrong_spread,
        ch.over_max.len(),
        ch.outside_zone,
        ch.unpatched
    );
    let dist: Vec<String> = ch
        .per_subset
        .iter()
        .map(|(s, (n, want))| format!("{s} {n} (in-order fill {want})"))
        .collect();
    println!("  pods per subset: {}", dist.join(", "));
    for e in ch.over_max.iter().take(10).chain(ch.examples.iter()) {
        println!("    violation: {e}");
    }
}

pub(super) fn print_idle(c: &Case) {
    if let Some(mc) = c.idle_millicores() {
        println!(
            "  idle: {mc:.1} mCPU over {:.0}s; API requests {}; admissions {}; objects changed {}; RSS {}",
            c.idle_window.map_or(0.0, |w| w.as_secs_f64()),
            c.idle_requests.map_or("n/a".into(), |r| format!(
                "{} ({} writes)",
                r.total(),
                r.writes
            )),
            c.idle_admissions.map_or("n/a".into(), |n| n.to_string()),
            c.idle_changes.map_or("n/a".into(), |n| n.to_string()),
            c.idle_rss_mib
                .map_or("n/a".into(), |v| format!("{v:.1} MiB"))
        );
    }
}

/// How a row's values are shown.
#[derive(Clone, Copy)]
enum Unit {
    Ms,
    S,
    Count,
    MiB,
    MilliCpu,
}

fn show(v: Option<f64>, unit: Unit) -> String {
    match v {
        None => "-".into(),
        Some(v) => match unit {
            Unit::Ms => format!("{:.2} ms", v * 1000.0),
            Unit::S => format!("{v:.1} s"),
            Unit::Count => format!("{v:.0}"),
            Unit::MiB => format!("{v:.1} MiB"),
            Unit::MilliCpu => format!("{v:.1} m"),
        },
    }
}

/// One figure of every case.
struct Row {
    label: String,
    unit: Unit,
    values: Vec<Option<f64>>,
}

fn quantile(h: Option<&Histogram>, q: f64) -> Option<f64> {
    h.and_then(|h| h.quantile(q))
}

fn rows(a: &WorkloadSpreadArgs, cases: &[Case]) -> Vec<Row> {
    let row = |label: &str, unit: Unit, f: &dyn Fn(&Case) -> Option<f64>| Row {
        label: label.to_string(),
        unit,
        values: cases.iter().map(f).collect(),
    };
    let web = |c: &Case| c.webhook.as_ref().map(|w| w.latency.clone());
    let api = |c: &Case| {
        c.apiserver
            .as_ref()
            .filter(|v| v.calls.count > 0.0)
            .map(|v| v.calls.clone())
    };
    let req = |r: Option<Requests>, f: fn(&Requests) -> u64| r.map(|r| f(&r) as f64);
    vec![
        row("/mutate-pod admissions (manager)", Unit::Count, &|c| {
            c.webhook.as_ref().map(|w| w.requests)
        }),
        row("/mutate-pod p50 (manager histogram)", Unit::Ms, &|c| {
            quantile(web(c).as_ref(), 0.5)
        }),
        row("/mutate-pod p99 (manager histogram)", Unit::Ms, &|c| {
            quantile(web(c).as_ref(), 0.99)
        }),
        row("/mutate-pod mean (manager histogram)", Unit::Ms, &|c| {
            web(c).and_then(|h| h.mean())
        }),
        row("mpod.kb.io CREATE calls (API server)", Unit::Count, &|c| {
            c.apiserver.as_ref().map(|v| v.calls.count)
        }),
        row("mpod.kb.io CREATE p50 (API server)", Unit::Ms, &|c| {
            quantile(api(c).as_ref(), 0.5)
        }),
        row("mpod.kb.io CREATE p99 (API server)", Unit::Ms, &|c| {
            quantile(api(c).as_ref(), 0.99)
        }),
        row("mpod.kb.io CREATE mean (API server)", Unit::Ms, &|c| {
            api(c).and_then(|h| h.mean())
        }),
        row("mpod.kb.io refused (API server)", Unit::Count, &|c| {
            c.apiserver.as_ref().map(|v| v.rejected)
        }),
        row("pod CREATE requests (API server)", Unit::Count, &|c| {
            c.pod_creates.as_ref().map(|h| h.count)
        }),
        row("pod CREATE p50 (API server)", Unit::Ms, &|c| {
            quantile(c.pod_creates.as_ref(), 0.5)
        }),
        row("pod CREATE p99 (API server)", Unit::Ms, &|c| {
            quantile(c.pod_creates.as_ref(), 0.99)
        }),
        row("pod CREATE mean (API server)", Unit::Ms, &|c| {
            c.pod_creates.as_ref().and_then(|h| h.mean())
        }),
        row(
            "first Deployment create -> all pods created",
            Unit::S,
            &|c| secs(c.created),
        ),
        row("first Deployment create -> all pods Ready", Unit::S, &|c| {
            secs(c.ready)
        }),
        row("manager CPU, first create -> all Ready", Unit::S, &|c| {
            c.cpu_creates
        }),
        row(
            "manager API reads, first create -> all Ready",
            Unit::Count,
            &|c| req(c.requests_creates, |r| r.reads),
        ),
        row(
            "manager API writes, first create -> all Ready",
            Unit::Count,
            &|c| req(c.requests_creates, |r| r.writes),
        ),
        row("all Ready -> settled (last change)", Unit::S, &|c| {
            secs(c.settled)
        }),
        row(
            &format!("idle CPU over {} s", a.idle_seconds),
            Unit::MilliCpu,
            &|c| c.idle_millicores(),
        ),
        row("API requests while idle", Unit::Count, &|c| {
            req(c.idle_requests, Requests::total)
        }),
        row("API writes while idle", Unit::Count, &|c| {
            req(c.idle_requests, |r| r.writes)
        }),
        row("/mutate-pod admissions while idle", Unit::Count, &|c| {
            c.idle_admissions
        }),
        row(
            "WorkloadSpreads and pods changed while idle",
            Unit::Count,
            &|c| c.idle_changes.map(|n| n as f64),
        ),
        row("manager peak RSS (VmHWM)", Unit::MiB, &|c| c.peak_rss_mib),
        row("manager RSS idle (VmRSS)", Unit::MiB, &|c| c.idle_rss_mib),
        row(
            "violations (annotation, maxReplicas, zone, patch)",
            Unit::Count,
            &|c| c.check.as_ref().map(|ch| ch.violations() as f64),
        ),
    ]
}

/// Index of the baseline case, of the Go case and of the first other manager case.
fn roles(cases: &[Case]) -> (Option<usize>, Option<usize>, Option<usize>) {
    let base = cases.iter().position(|c| c.manager.is_none());
    let go = cases
        .iter()
        .position(|c| c.manager.as_deref().is_some_and(is_openkruise));
    let rs = cases
        .iter()
        .position(|c| c.manager.as_deref().is_some_and(|m| !is_openkruise(m)));
    (base, go, rs)
}

fn ratio_of(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => ratio(a, b),
        _ => "-".into(),
    }
}

/// Every case side by side: each manager's value with its ratio to the baseline, and
/// kruise-rs / Go when both ran.
pub(super) fn print(a: &WorkloadSpreadArgs, cases: &[Case]) {
    let (base, go, rs) = roles(cases);
    println!();
    println!(
        "== kruise-bench workloadspread: {} WorkloadSpreads over {} namespaces, {} Deployments x {} = {} pods, {} kwok nodes, client QPS {} burst {} ==",
        a.workloadspreads,
        a.namespaces,
        a.workloadspreads,
        a.pods / a.workloadspreads,
        a.pods,
        cases.first().map_or(0, |c| c.nodes),
        a.client.qps,
        a.client.burst
    );
    for c in cases {
        println!(
            "{}: {}{}",
            c.label,
            c.manager
                .as_ref()
                .map_or("no manager, no webhook configuration".into(), |m| m
                    .display()
                    .to_string()),
            c.error
                .as_ref()
                .map_or(String::new(), |e| format!(" -- FAILED: {e}"))
        );
    }
    let rows = rows(a, cases);
    let width = rows.iter().map(|r| r.label.len()).max().unwrap_or(0);
    let mut header = format!("{:<width$}", "figure");
    for (i, c) in cases.iter().enumerate() {
        header.push_str(&format!("  {:>14}", c.label));
        if Some(i) != base && base.is_some() {
            header.push_str(&format!("  {:>7}", "x base"));
        }
    }
    let both = go.zip(rs);
    if both.is_some() {
        header.push_str(&format!("  {:>8}", "rs / Go"));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for r in &rows {
        if r.values.iter().all(Option::is_none) {
            continue;
        }
        let mut line = format!("{:<width$}", r.label);
        for (i, v) in r.values.iter().enumerate() {
            line.push_str(&format!("  {:>14}", show(*v, r.unit)));
            if let Some(b) = base
                && i != b
            {
                line.push_str(&format!("  {:>7}", ratio_of(*v, r.values[b])));
            }
        }
        if let Some((g, s)) = both {
            line.push_str(&format!("  {:>8}", ratio_of(r.values[s], r.values[g])));
        }
        println!("{}", line.trim_end());
    }
    println!(
        "/mutate-pod: controller_runtime_webhook_latency_seconds{{webhook=\"/mutate-pod\"}} of each manager (its own buckets: kruise-rs 0.25, 0.5, 1, 2, 3, 4 ms, then 5, 10, 25, 50 ms, ...; \
         OpenKruise controller-runtime's); mpod.kb.io: apiserver_admission_webhook_admission_duration_seconds (buckets 5, 25, 100, 500 ms, ...; network, TLS and queueing included); \
         pod CREATE: apiserver_request_duration_seconds{{verb=\"POST\",resource=\"pods\"}} (every pod create, admission included). p50/p99 interpolated inside the bucket holding the rank \
         as histogram_quantile does; means exact (_sum/_count). CPU: utime+stime of /proc/<pid>/stat. Settled: every WorkloadSpread's subset replicas add up to its Deployment's and \
         no WorkloadSpread or pod changed for {} s; idle: the {} s after that.",
        a.settle_seconds, a.idle_seconds
    );
    for c in cases {
        if let Some(l) = c.load {
            println!(
                "{}: machine load average (1 min) at the first create {l:.2} ({} CPUs)",
                c.label,
                std::thread::available_parallelism().map_or(0, |n| n.get())
            );
        }
    }
}

fn hist_json(h: Option<&Histogram>) -> serde_json::Value {
    match h {
        None => serde_json::Value::Null,
        Some(h) => json!({
            "count": h.count,
            "p50Seconds": h.quantile(0.5),
            "p99Seconds": h.quantile(0.99),
            "meanSeconds": h.mean(),
            "buckets": h.buckets.iter().map(|(le, n)| json!([if le.is_finite() { json!(le) } else { json!("+Inf") }, n])).collect::<Vec<_>>(),
        }),
    }
}

fn req_json(r: Option<Requests>) -> serde_json::Value {
    r.map_or(
        serde_json::Value::Null,
        |r| json!({"reads": r.reads, "writes": r.writes, "total": r.total()}),
    )
}

/// The run as JSON: parameters, every case's figures, and the table's ratios.
pub(super) fn json(a: &WorkloadSpreadArgs, cases: &[Case]) -> serde_json::Value {
    let (base, go, rs) = roles(cases);
    let rows = rows(a, cases);
    let ratios = |to: Option<usize>, of: usize| -> serde_json::Value {
        let Some(t) = to else {
            return serde_json::Value::Null;
        };
        rows.iter()
            .filter_map(|r| match (r.values[of], r.values[t]) {
                (Some(x), Some(y)) if y > 0.0 => Some((r.label.clone(), json!(x / y))),
                _ => None,
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let case_json = |(i, c): (usize, &Case)| {
        json!({
            "label": c.label,
            "manager": c.manager.as_deref().map(Path::display).map(|d| d.to_string()),
            "error": c.error,
            "managerReadySeconds": secs(c.ready_manager),
            "scopeWaitSeconds": secs(c.scope_wait),
            "createdSeconds": secs(c.created),
            "readySeconds": secs(c.ready),
            "mutatePod": c.webhook.as_ref().map(|w| json!({
                "admissions": w.requests,
                "latency": hist_json(Some(&w.latency)),
            })),
            "mpodApiserver": c.apiserver.as_ref().map(|v| json!({
                "calls": hist_json(Some(&v.calls)),
                "excluded": v.excluded,
                "rejected": v.rejected,
            })),
            "podCreateApiserver": hist_json(c.pod_creates.as_ref()),
            "cpuSecondsCreates": c.cpu_creates,
            "requestsCreates": req_json(c.requests_creates),
            "loadAverage": c.load,
            "check": c.check.as_ref().map(|ch| json!({
                "pods": ch.pods,
                "unannotated": ch.unannotated,
                "wrongWorkloadSpread": ch.wrong_spread,
                "overMaxReplicas": ch.over_max,
                "outsideZone": ch.outside_zone,
                "unpatched": ch.unpatched,
                "violations": ch.violations(),
                "perSubset": ch.per_subset.iter().map(|(s, (n, want))|
                    (s.clone(), json!({"pods": n, "inOrderFill": want}))).collect::<serde_json::Map<_, _>>(),
                "examples": ch.examples,
            })),
            "settledSeconds": secs(c.settled),
            "settled": c.settled.is_some(),
            "idleSeconds": secs(c.idle_window),
            "idleCpuSeconds": c.idle_cpu,
            "idleMillicores": c.idle_millicores(),
            "idleRequests": req_json(c.idle_requests),
            "idleAdmissions": c.idle_admissions,
            "idleChangedObjects": c.idle_changes,
            "peakRssMiB": c.peak_rss_mib,
            "idleRssMiB": c.idle_rss_mib,
            "ratioToBaseline": if Some(i) == base { serde_json::Value::Null } else { ratios(base, i) },
        })
    };
    json!({
        "scenario": "workloadspread",
        "workloadspreads": a.workloadspreads,
        "namespaces": a.namespaces,
        "pods": a.pods,
        "replicasPerDeployment": a.pods / a.workloadspreads,
        "nodes": cases.first().map(|c| c.nodes),
        "qps": a.client.qps,
        "burst": a.client.burst,
        "idleSecondsAsked": a.idle_seconds,
        "settleSeconds": a.settle_seconds,
        "managerArgs": a.manager_args,
        "cases": cases.iter().enumerate().map(case_json).collect::<Vec<_>>(),
        "ratioRsToGo": match (rs, go) {
            (Some(r), Some(_)) => ratios(go, r),
            _ => serde_json::Value::Null,
        },
    })
}
