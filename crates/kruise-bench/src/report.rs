//! What the rollout and scale benchmarks print, and the JSON they write with `--json`.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::cli::{RolloutArgs, ScaleArgs};
use crate::metrics::Requests;
use crate::process::is_openkruise;
use crate::rollout::Rollout;
use crate::scale::{Baseline, ScaleOutcome, ScaleRow};

/// Writes `out` (pretty-printed) to `path` and says so.
pub(crate) fn write_json(path: &Path, out: &serde_json::Value) -> Result<(), String> {
    std::fs::write(path, format!("{out:#}\n"))
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("result written to {}", path.display());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// rollout

/// The rollout's summary: times, the manager's writes (per updated pod and by resource), its
/// peak RSS, the baseline and the ratio to it.
pub(crate) fn print_rollout(a: &RolloutArgs, node_count: usize, r: &Rollout, peak: Option<f64>) {
    let pods = r.pods;
    println!();
    println!(
        "== kruise-bench rollout: {:?} of {pods} pods on {node_count} kwok nodes, client QPS {} burst {} ==",
        a.workload, a.client.qps, a.client.burst
    );
    println!("manager: {}", a.manager.display());
    println!(
        "in-place rollout (maxUnavailable 100%): {:.1}s to all updated and ready",
        r.rollout.as_secs_f64()
    );
    println!(
        "manager API writes during the rollout: {} ({:.2} per updated pod)",
        r.writes,
        r.writes as f64 / pods as f64
    );
    for (key, n) in &r.by_resource {
        println!(
            "  {key}: {n} ({:.2} per updated pod)",
            *n as f64 / pods as f64
        );
    }
    match peak {
        Some(mb) => println!("manager peak RSS (VmHWM): {mb:.1} MiB"),
        None => println!("manager peak RSS: unavailable"),
    }
    println!(
        "baseline (bare client patches each pod once): {:.1}s",
        r.baseline.as_secs_f64()
    );
    println!(
        "ratio rollout / baseline: {:.2}",
        r.rollout.as_secs_f64() / r.baseline.as_secs_f64().max(0.001)
    );
}

/// The rollout's result as JSON (`--json`).
pub(crate) fn rollout_json(
    a: &RolloutArgs,
    node_count: usize,
    ready: Duration,
    r: &Rollout,
    peak: Option<f64>,
) -> serde_json::Value {
    json!({
        "scenario": "rollout",
        "workload": format!("{:?}", a.workload),
        "manager": a.manager.display().to_string(),
        "pods": r.pods,
        "nodes": node_count,
        "qps": a.client.qps,
        "burst": a.client.burst,
        "clusterWide": !a.client.watch_namespace,
        "readySeconds": ready.as_secs_f64(),
        "rolloutSeconds": r.rollout.as_secs_f64(),
        "writes": r.writes,
        "writesPerPod": r.writes as f64 / r.pods as f64,
        "writesByResource": r.by_resource,
        "peakRssMiB": peak,
        "baselineSeconds": r.baseline.as_secs_f64(),
        "ratioToBaseline": r.rollout.as_secs_f64() / r.baseline.as_secs_f64().max(0.001),
    })
}

// ---------------------------------------------------------------------------------------------
// scale: medians and ranges

/// Median, minimum and maximum of `values` (`None` when empty).
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}

fn spread_json(values: &[f64]) -> serde_json::Value {
    match spread(values) {
        Some((median, min, max)) => json!({"median": median, "min": min, "max": max}),
        None => serde_json::Value::Null,
    }
}

/// `median [min–max]` with `unit`, or `n/a`.
fn spread_text(values: &[f64], unit: &str, decimals: usize) -> String {
    match spread(values) {
        Some((m, lo, hi)) if values.len() > 1 => {
            format!("{m:.decimals$}{unit} [{lo:.decimals$}–{hi:.decimals$}]")
        }
        Some((m, _, _)) => format!("{m:.decimals$}{unit}"),
        None => "n/a".into(),
    }
}

/// Per manager (in the order given): its rows' reconcile times, peak and settled RSS.
struct ScaleSummary {
    label: String,
    reconciled: Vec<f64>,
    peak: Vec<f64>,
    settled: Vec<f64>,
    writes_to_reconciled: Vec<f64>,
}

fn summarize(rows: &[ScaleRow]) -> Vec<ScaleSummary> {
    let mut out: Vec<ScaleSummary> = Vec::new();
    for r in rows {
        let i = match out.iter().position(|s| s.label == r.label) {
            Some(i) => i,
            None => {
                out.push(ScaleSummary {
                    label: r.label.clone(),
                    reconciled: vec![],
                    peak: vec![],
                    settled: vec![],
                    writes_to_reconciled: vec![],
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.reconciled.push(r.reconciled.as_secs_f64());
        s.peak.extend(r.peak_rss_mib);
        s.settled.extend(r.settled_rss_mib);
        s.writes_to_reconciled
            .push(r.requests_to_reconciled.writes as f64);
    }
    out
}

/// `a / b` of two medians, as text.
fn ratio_text(a: &[f64], b: &[f64]) -> String {
    match (spread(a), spread(b)) {
        (Some((a, _, _)), Some((b, _, _))) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "n/a".into(),
    }
}

fn ratio_value(a: &[f64], b: &[f64]) -> serde_json::Value {
    match (spread(a), spread(b)) {
        (Some((a, _, _)), Some((b, _, _))) if b > 0.0 => json!(a / b),
        _ => serde_json::Value::Null,
    }
}

// ---------------------------------------------------------------------------------------------
// scale: the report

/// Label of the baseline's row in the scale table.
const BASELINE: &str = "baseline (bare LIST of all)";
/// Widths of the scale table's columns after the first (the manager's).
const WIDTHS: [usize; 9] = [5, 8, 13, 8, 9, 7, 7, 10, 11];

/// The scale run's report: every row, the baseline, the requests until all were reconciled and
/// a summary per manager.
pub(crate) fn print_scale(a: &ScaleArgs, o: &ScaleOutcome) {
    let (total_pods, node_count, baseline) = (o.total_pods, o.node_count, &o.baseline);
    println!();
    println!(
        "== kruise-bench scale: {} CloneSets x {} pods = {total_pods} pods on {node_count} kwok nodes, client QPS {} burst {}, {} ==",
        a.clonesets,
        a.pods_per_cloneset,
        a.client.qps,
        a.client.burst,
        if a.client.watch_namespace {
            "one namespace"
        } else {
            "cluster-wide"
        }
    );
    println!(
        "baseline: a bare client LISTs {} CloneSets + {} pods once: {:.3}s (median of 3)",
        baseline.clonesets,
        baseline.pods,
        baseline.list.as_secs_f64()
    );
    println!(
        "per run: start with every CloneSet's generation bumped, until all reconciled; requests until the end of a {}s settle",
        a.settle_seconds
    );
    print_scale_table(&o.rows, baseline);
    for r in &o.rows {
        let q = r.requests_to_reconciled;
        println!(
            "{} (round {}): until all reconciled {} requests ({} reads, {} writes; {:.2} writes per CloneSet)",
            r.label,
            r.round,
            q.total(),
            q.reads,
            q.writes,
            q.writes as f64 / a.clonesets as f64
        );
    }
    print_scale_summary(a, &o.rows, baseline);
}

/// One line of the scale table: the first cell left-aligned in `width`, the others
/// right-aligned in their columns, trailing blanks trimmed.
fn table_line(width: usize, cells: [String; 10]) -> String {
    let mut out = format!("{:<width$}", cells[0]);
    for (cell, w) in cells.iter().skip(1).zip(WIDTHS) {
        out.push_str(&format!("  {cell:>w$}"));
    }
    out.trim_end().to_string()
}

/// The table of every measured restart, with the baseline's row last.
fn print_scale_table(rows: &[ScaleRow], baseline: &Baseline) {
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .chain([BASELINE.len()])
        .max()
        .unwrap_or_default();
    let line = |cells: [String; 10]| table_line(width, cells);
    let secs = |d: Duration| format!("{:.3}s", d.as_secs_f64());
    let mib = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.1} MiB"));
    let header = line(
        [
            "manager",
            "round",
            "readyz",
            "reconcile all",
            "x LIST",
            "requests",
            "reads",
            "writes",
            "peak RSS",
            "RSS settled",
        ]
        .map(String::from),
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for r in rows {
        println!(
            "{}",
            line([
                r.label.clone(),
                r.round.to_string(),
                r.readyz.map_or("n/a".to_string(), secs),
                secs(r.reconciled),
                format!(
                    "{:.1}x",
                    r.reconciled.as_secs_f64() / baseline.list.as_secs_f64().max(0.001)
                ),
                r.requests.total().to_string(),
                r.requests.reads.to_string(),
                r.requests.writes.to_string(),
                mib(r.peak_rss_mib),
                mib(r.settled_rss_mib),
            ])
        );
    }
    println!(
        "{}",
        line([
            BASELINE.to_string(),
            String::new(),
            String::new(),
            secs(baseline.list),
            "1.0x".into(),
            "2".into(),
            "2".into(),
            "0".into(),
            String::new(),
            String::new(),
        ])
    );
}

/// The Go manager's summary, the reference of the ratios, when it was measured.
fn reference(summary: &[ScaleSummary]) -> Option<&ScaleSummary> {
    summary.iter().find(|s| is_openkruise(Path::new(&s.label)))
}

/// Medians and ranges per manager, and ratios to the Go manager when it was measured.
fn print_scale_summary(a: &ScaleArgs, rows: &[ScaleRow], baseline: &Baseline) {
    let summary = summarize(rows);
    let reference = reference(&summary);
    println!();
    println!(
        "summary (median [min–max] of {} round(s)){}:",
        a.rounds,
        reference.map_or(String::new(), |r| format!("; ratios to {}", r.label))
    );
    for s in &summary {
        let ratios = match reference {
            Some(r) if r.label != s.label => format!(
                "; ratio to Go: reconcile all {}, peak RSS {}, settled RSS {}",
                ratio_text(&s.reconciled, &r.reconciled),
                ratio_text(&s.peak, &r.peak),
                ratio_text(&s.settled, &r.settled)
            ),
            _ => String::new(),
        };
        println!(
            "  {}: reconcile all {} ({} the bare LIST), peak RSS {}, settled RSS {}{ratios}",
            s.label,
            spread_text(&s.reconciled, "s", 2),
            ratio_text(&s.reconciled, &[baseline.list.as_secs_f64()]),
            spread_text(&s.peak, " MiB", 1),
            spread_text(&s.settled, " MiB", 1),
        );
    }
}

/// The scale run's result as JSON (`--json`): the parameters, every run, the baseline, the
/// summary per manager.
pub(crate) fn scale_json(a: &ScaleArgs, o: &ScaleOutcome) -> serde_json::Value {
    let summary = summarize(&o.rows);
    let reference = reference(&summary);
    let baseline = &o.baseline;
    json!({
        "scenario": "scale",
        "clonesets": a.clonesets,
        "podsPerCloneSet": a.pods_per_cloneset,
        "pods": o.total_pods,
        "nodes": o.node_count,
        "qps": a.client.qps,
        "burst": a.client.burst,
        "clusterWide": !a.client.watch_namespace,
        "rounds": a.rounds,
        "settleSeconds": a.settle_seconds,
        "managerArgs": a.manager_args,
        "baseline": {
            "listSeconds": baseline.list.as_secs_f64(),
            "clonesets": baseline.clonesets,
            "pods": baseline.pods,
        },
        "reference": reference.map(|r| r.label.clone()),
        "runs": runs_json(&o.rows, baseline),
        "summary": summary_json(&summary, reference),
    })
}

/// Every measured restart as JSON.
fn runs_json(rows: &[ScaleRow], baseline: &Baseline) -> Vec<serde_json::Value> {
    let req = |q: &Requests| json!({"reads": q.reads, "writes": q.writes, "total": q.total()});
    rows.iter()
        .map(|r| {
            json!({
                "manager": r.label,
                "round": r.round,
                "readyzSeconds": r.readyz.map(|d| d.as_secs_f64()),
                "reconcileAllSeconds": r.reconciled.as_secs_f64(),
                "ratioToBaseline": r.reconciled.as_secs_f64() / baseline.list.as_secs_f64().max(0.001),
                "requestsToReconciled": req(&r.requests_to_reconciled),
                "requests": req(&r.requests),
                "peakRssMiB": r.peak_rss_mib,
                "settledRssMiB": r.settled_rss_mib,
            })
        })
        .collect()
}

/// The summary per manager as JSON, with ratios to `reference` when there is one.
fn summary_json(
    summary: &[ScaleSummary],
    reference: Option<&ScaleSummary>,
) -> Vec<serde_json::Value> {
    summary
        .iter()
        .map(|s| {
            let mut v = json!({
                "manager": s.label,
                "runs": s.reconciled.len(),
                "reconcileAllSeconds": spread_json(&s.reconciled),
                "peakRssMiB": spread_json(&s.peak),
                "settledRssMiB": spread_json(&s.settled),
                "writesToReconciled": spread_json(&s.writes_to_reconciled),
            });
            if let Some(r) = reference {
                v["ratioToReference"] = json!({
                    "reconcileAll": ratio_value(&s.reconciled, &r.reconciled),
                    "peakRss": ratio_value(&s.peak, &r.peak),
                    "settledRss": ratio_value(&s.settled, &r.settled),
                });
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[3.0]), Some((3.0, 3.0, 3.0)));
        assert_eq!(spread(&[5.0, 1.0, 3.0]), Some((3.0, 1.0, 5.0)));
        assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(spread_text(&[2.0, 1.0], " MiB", 1), "1.5 MiB [1.0–2.0]");
        assert_eq!(spread_text(&[2.0], "s", 2), "2.00s");
        assert_eq!(ratio_text(&[1.0, 3.0], &[4.0]), "0.50x");
    }
}
