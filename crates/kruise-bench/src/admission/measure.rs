//! What the admission benchmark measures: histograms and their quantiles from Prometheus
//! expositions (the manager's `/mutate-pod` and `/validate-pod`, the API server's view of
//! `mpod.kb.io`, `vpod.kb.io` and `vpodeviction.kb.io`), CPU time from `/proc`, client-side
//! latencies.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use kruise_e2e::TestEnv;

use super::MUTATE_POD;
use crate::metrics::{Sample, http_get, parse_prometheus};
use crate::process::Manager;

/// One histogram of a Prometheus exposition: cumulative `(le, count)` buckets sorted by `le`
/// (the last one `+Inf`), `_sum` and `_count`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Histogram {
    pub(crate) buckets: Vec<(f64, f64)>,
    pub(crate) sum: f64,
    pub(crate) count: f64,
}

impl Histogram {
    /// The histogram `name` summed over the series `select` keeps (as `sum by (le)`); empty
    /// when absent.
    fn from_samples(samples: &[Sample], name: &str, select: impl Fn(&Sample) -> bool) -> Self {
        let mut h = Self::default();
        let (bucket, sum, count) = (
            format!("{name}_bucket"),
            format!("{name}_sum"),
            format!("{name}_count"),
        );
        for s in samples.iter().filter(|s| select(s)) {
            if s.name == bucket {
                let le = match s.label("le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(v) => match v.parse() {
                        Ok(v) => v,
                        Err(_) => continue,
                    },
                    None => continue,
                };
                match h.buckets.iter_mut().find(|(l, _)| *l == le) {
                    Some((_, c)) => *c += s.value,
                    None => h.buckets.push((le, s.value)),
                }
            } else if s.name == sum {
                h.sum += s.value;
            } else if s.name == count {
                h.count += s.value;
            }
        }
        h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        h
    }

    /// The observations made after `earlier` (same buckets; a missing earlier bucket is 0).
    pub(crate) fn since(&self, earlier: &Self) -> Self {
        let before = |le: f64| {
            earlier
                .buckets
                .iter()
                .find(|(l, _)| *l == le)
                .map_or(0.0, |(_, c)| *c)
        };
        Self {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, c)| (le, (c - before(le)).max(0.0)))
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: (self.count - earlier.count).max(0.0),
        }
    }

    /// Prometheus' `histogram_quantile(q, ...)`: the bucket holding rank `q * count` is found
    /// and the value interpolated linearly inside it (its lower bound 0 for the first bucket);
    /// a rank in the `+Inf` bucket answers the highest finite bound. `None` without
    /// observations (Prometheus: NaN).
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.buckets.len();
        if n < 2 || !self.buckets[n - 1].0.is_infinite() {
            return None;
        }
        let total = self.buckets[n - 1].1;
        if total <= 0.0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = q * total;
        let i = self.buckets[..n - 1]
            .iter()
            .position(|&(_, c)| c >= rank)
            .unwrap_or(n - 1);
        if i == n - 1 {
            return Some(self.buckets[n - 2].0);
        }
        let (end, count) = self.buckets[i];
        if i == 0 && end <= 0.0 {
            return Some(end);
        }
        let (start, prev) = if i == 0 {
            (0.0, 0.0)
        } else {
            self.buckets[i - 1]
        };
        let in_bucket = count - prev;
        if in_bucket <= 0.0 {
            return Some(end);
        }
        Some(start + (end - start) * (rank - prev) / in_bucket)
    }

    /// Share of the observations at most `le` (an exact bucket bound).
    pub(super) fn fraction_le(&self, le: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        let (_, c) = self.buckets.iter().find(|(l, _)| *l == le)?;
        (total > 0.0).then(|| c / total)
    }

    pub(crate) fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}

/// Admissions of one webhook path (`/mutate-pod`, `/validate-pod`) counted by the manager
/// (`controller_runtime_webhook_requests_total`, every code) and its latency histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PodWebhook {
    pub(crate) requests: f64,
    pub(crate) latency: Histogram,
    /// `kruise_webhook_cpu_seconds{webhook="<path>"}`: the handler thread's CPU time per
    /// admission (empty for a manager without it, e.g. OpenKruise's).
    pub(super) cpu: Histogram,
    /// Reconciles per controller (`controller_runtime_reconcile_total`) and the seconds they
    /// took (`controller_runtime_reconcile_time_seconds_sum`): the manager's other work, which
    /// shares its CPU with the webhook.
    pub(super) reconciles: BTreeMap<String, (f64, f64)>,
}

impl PodWebhook {
    /// The metrics of webhook path `path` (e.g. `/mutate-pod`) in an exposition.
    fn from_metrics(text: &str, path: &str) -> Self {
        let samples = parse_prometheus(text);
        Self {
            requests: samples
                .iter()
                .filter(|s| {
                    s.name == "controller_runtime_webhook_requests_total"
                        && s.label("webhook") == Some(path)
                })
                .map(|s| s.value)
                .sum(),
            latency: Histogram::from_samples(
                &samples,
                "controller_runtime_webhook_latency_seconds",
                |s| s.label("webhook") == Some(path),
            ),
            cpu: Histogram::from_samples(&samples, "kruise_webhook_cpu_seconds", |s| {
                s.label("webhook") == Some(path)
            }),
            reconciles: {
                let mut r: BTreeMap<String, (f64, f64)> = BTreeMap::new();
                for s in &samples {
                    let Some(c) = s.label("controller") else {
                        continue;
                    };
                    if s.name == "controller_runtime_reconcile_total" {
                        r.entry(c.to_owned()).or_default().0 += s.value;
                    } else if s.name == "controller_runtime_reconcile_time_seconds_sum" {
                        r.entry(c.to_owned()).or_default().1 += s.value;
                    }
                }
                r
            },
        }
    }

    pub(crate) fn since(&self, earlier: &Self) -> Self {
        Self {
            requests: (self.requests - earlier.requests).max(0.0),
            latency: self.latency.since(&earlier.latency),
            cpu: self.cpu.since(&earlier.cpu),
            reconciles: self
                .reconciles
                .iter()
                .map(|(c, &(n, t))| {
                    let (n0, t0) = earlier.reconciles.get(c).copied().unwrap_or_default();
                    (c.clone(), ((n - n0).max(0.0), (t - t0).max(0.0)))
                })
                .filter(|(_, (n, _))| *n > 0.0)
                .collect(),
        }
    }

    /// `controller N (T s)` for each controller that reconciled, or `none`.
    pub(super) fn reconciles_text(&self) -> String {
        if self.reconciles.is_empty() {
            return "none".into();
        }
        self.reconciles
            .iter()
            .map(|(c, (n, t))| format!("{c} {n} ({t:.2} s)"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One webhook as the API server sees it, for one operation (by default `mpod.kb.io` CREATE):
/// its calls (`apiserver_admission_webhook_admission_duration_seconds`: network, TLS, HTTP and
/// the manager's queueing included — failed calls too; buckets 5, 25, 100, 500 ms, 1, 2.5, 10,
/// 25 s), the requests its `matchConditions` kept from calling it
/// (`apiserver_admission_match_condition_exclusions_total`) and the requests it refused
/// (`apiserver_admission_webhook_rejection_count`: a denial, or a failed call under
/// `failurePolicy: Fail`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ApiserverView {
    pub(crate) calls: Histogram,
    pub(crate) excluded: f64,
    pub(crate) rejected: f64,
}

impl ApiserverView {
    fn from_metrics(text: &str, webhook: &str, operation: &str) -> Self {
        let samples = parse_prometheus(text);
        let this = |s: &Sample| {
            s.label("name") == Some(webhook) && s.label("operation") == Some(operation)
        };
        let total = |name: &str| -> f64 {
            samples
                .iter()
                .filter(|s| s.name == name && this(s))
                .map(|s| s.value)
                .sum()
        };
        Self {
            calls: Histogram::from_samples(
                &samples,
                "apiserver_admission_webhook_admission_duration_seconds",
                this,
            ),
            excluded: total("apiserver_admission_match_condition_exclusions_total"),
            rejected: total("apiserver_admission_webhook_rejection_count"),
        }
    }

    pub(crate) fn since(&self, earlier: &Self) -> Self {
        Self {
            calls: self.calls.since(&earlier.calls),
            excluded: (self.excluded - earlier.excluded).max(0.0),
            rejected: (self.rejected - earlier.rejected).max(0.0),
        }
    }
}

/// The API server's view of `mpod.kb.io` pod CREATEs.
pub(crate) async fn scrape_apiserver(env: &TestEnv) -> Result<ApiserverView, String> {
    scrape_apiserver_for(env, "mpod.kb.io", "CREATE").await
}

/// The API server's view of `webhook` for `operation` (e.g. `vpod.kb.io`, `DELETE`).
pub(super) async fn scrape_apiserver_for(
    env: &TestEnv,
    webhook: &str,
    operation: &str,
) -> Result<ApiserverView, String> {
    let text = apiserver_metrics(env).await?;
    Ok(ApiserverView::from_metrics(&text, webhook, operation))
}

/// The API server's `/metrics` text.
async fn apiserver_metrics(env: &TestEnv) -> Result<String, String> {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    env.client
        .request_text(req)
        .await
        .map_err(|e| format!("API server /metrics: {e}"))
}

/// The API server's own timing of `verb` requests (e.g. `POST`) on `resource` (no
/// subresource), every scope and code: `apiserver_request_duration_seconds` (admission,
/// webhooks and storage included; buckets 5, 25, 50, 100, 200, 400, 600, 800 ms, 1 s, ...).
pub(crate) async fn scrape_apiserver_requests(
    env: &TestEnv,
    verb: &str,
    resource: &str,
) -> Result<Histogram, String> {
    let text = apiserver_metrics(env).await?;
    Ok(request_duration(&text, verb, resource))
}

fn request_duration(text: &str, verb: &str, resource: &str) -> Histogram {
    Histogram::from_samples(
        &parse_prometheus(text),
        "apiserver_request_duration_seconds",
        |s| {
            s.label("verb") == Some(verb)
                && s.label("resource") == Some(resource)
                && s.label("subresource").unwrap_or("").is_empty()
        },
    )
}

/// The 1-minute load average of the machine (`/proc/loadavg`).
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The manager's `/mutate-pod` metrics.
pub(crate) async fn scrape_pod_webhook(
    http: &reqwest::Client,
    m: &Manager,
) -> Result<PodWebhook, String> {
    scrape_webhook(http, m, MUTATE_POD).await
}

/// The manager's metrics of webhook path `path`.
pub(super) async fn scrape_webhook(
    http: &reqwest::Client,
    m: &Manager,
    path: &str,
) -> Result<PodWebhook, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(PodWebhook::from_metrics(&body, path)),
        (status, _) => Err(format!("manager /metrics answered {status}")),
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux' usual value, if it cannot be run).
pub(crate) fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|t: &f64| *t > 0.0)
        .unwrap_or(100.0)
}

/// CPU seconds (user + system, `utime` and `stime` of `/proc/<pid>/stat`) a process used.
pub(crate) fn cpu_seconds(pid: u32, ticks: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|t| t / ticks)
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line, in ticks; the command name
/// (field 2, in parentheses) may contain spaces and parentheses.
fn parse_cpu_ticks(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts with field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Client-side latencies of one set of creates.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Latencies {
    pub(super) p50: Duration,
    pub(super) p99: Duration,
    pub(super) mean: Duration,
    pub(super) max: Duration,
}

impl Latencies {
    /// Nearest-rank quantiles of `samples`.
    pub(super) fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut s = samples.to_vec();
        s.sort();
        let at = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
        Self {
            p50: at(0.50),
            p99: at(0.99),
            mean: s.iter().sum::<Duration>() / s.len() as u32,
            max: s[s.len() - 1],
        }
    }
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

pub(crate) fn ms_f(seconds: Option<f64>) -> String {
    seconds.map_or("n/a".into(), |s| format!("{:.2} ms", s * 1000.0))
}

pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "n/a".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(buckets: &[(f64, f64)]) -> Histogram {
        Histogram {
            buckets: buckets.to_vec(),
            sum: 0.0,
            count: buckets.last().map_or(0.0, |b| b.1),
        }
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantile_interpolates_like_histogram_quantile() {
        // 100 observations: 90 ≤ 5 ms, 9 in (5, 10] ms, 1 in (10, 25] ms.
        let h = hist(&[(0.005, 90.0), (0.01, 99.0), (0.025, 100.0), (INF, 100.0)]);
        // rank 50 in the first bucket: 0 + 5 ms * 50/90.
        assert!((h.quantile(0.5).unwrap() - 0.005 * 50.0 / 90.0).abs() < 1e-12);
        // rank 99 at the top of the second bucket: 10 ms.
        assert!((h.quantile(0.99).unwrap() - 0.01).abs() < 1e-12);
        // rank 99.5: 10 ms + 15 ms * 0.5 / 1.
        assert!((h.quantile(0.995).unwrap() - 0.0175).abs() < 1e-12);
        assert_eq!(h.fraction_le(0.005), Some(0.9));
        // A rank in +Inf answers the highest finite bound.
        let h = hist(&[(0.005, 1.0), (0.01, 1.0), (INF, 10.0)]);
        assert_eq!(h.quantile(0.99), Some(0.01));
        // No observations: NaN in Prometheus, None here.
        assert_eq!(hist(&[(0.005, 0.0), (INF, 0.0)]).quantile(0.5), None);
        assert_eq!(hist(&[]).quantile(0.5), None);
    }

    #[test]
    fn histogram_is_read_from_the_exposition_and_differenced() {
        let text = "# TYPE controller_runtime_webhook_latency_seconds histogram\n\
            controller_runtime_webhook_latency_seconds_sum{webhook=\"/mutate-pod\"} 0.5\n\
            controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/mutate-pod\"} 190\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.01\",webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"+Inf\",webhook=\"/mutate-pod\"} 200\n\
            controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/other\"} 7\n\
            controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"200\"} 199\n\
            controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"500\"} 1\n\
            controller_runtime_webhook_requests_total{webhook=\"/other\",code=\"200\"} 5\n";
        let after = PodWebhook::from_metrics(text, MUTATE_POD);
        assert_eq!(after.requests, 200.0);
        assert_eq!(
            after.latency.buckets,
            vec![(0.005, 190.0), (0.01, 200.0), (INF, 200.0)]
        );
        assert_eq!(after.latency.mean(), Some(0.0025));
        let before = PodWebhook::from_metrics(
            "controller_runtime_webhook_latency_seconds_bucket{le=\"0.005\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_bucket{le=\"0.01\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_bucket{le=\"+Inf\",webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-pod\"} 100\n\
             controller_runtime_webhook_requests_total{webhook=\"/mutate-pod\",code=\"200\"} 100\n",
            MUTATE_POD,
        );
        let d = after.since(&before);
        assert_eq!(d.requests, 100.0);
        assert_eq!(
            d.latency.buckets,
            vec![(0.005, 90.0), (0.01, 100.0), (INF, 100.0)]
        );
        assert_eq!(d.latency.fraction_le(0.005), Some(0.9));
        // Nothing scraped (no admission yet): an empty histogram.
        assert_eq!(
            PodWebhook::from_metrics("", MUTATE_POD)
                .since(&PodWebhook::default())
                .requests,
            0.0
        );
    }

    #[test]
    fn apiserver_view_sums_series_of_the_pod_webhook() {
        let text = "apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\",le=\"0.005\"} 3\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\",le=\"+Inf\"} 4\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\",le=\"0.005\"} 0\n\
            apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\",le=\"+Inf\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"} 4\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"mpod.kb.io\",operation=\"CREATE\",rejected=\"true\",type=\"admit\"} 1\n\
            apiserver_admission_webhook_admission_duration_seconds_count{name=\"msidecarset.kb.io\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"} 9\n\
            apiserver_admission_match_condition_exclusions_total{kind=\"webhook\",name=\"mpod.kb.io\",operation=\"CREATE\",type=\"admit\"} 100\n";
        let v = ApiserverView::from_metrics(text, "mpod.kb.io", "CREATE");
        assert_eq!(v.calls.count, 5.0);
        assert_eq!(v.calls.buckets, vec![(0.005, 3.0), (INF, 5.0)]);
        assert_eq!(v.excluded, 100.0);
        assert_eq!(v.since(&v).excluded, 0.0);
        let text = "apiserver_admission_webhook_rejection_count{error_type=\"calling_webhook_error\",name=\"vpod.kb.io\",operation=\"DELETE\",rejection_code=\"0\",type=\"validating\"} 7\n\
            apiserver_admission_webhook_rejection_count{error_type=\"no_error\",name=\"vpod.kb.io\",operation=\"DELETE\",rejection_code=\"403\",type=\"validating\"} 2\n\
            apiserver_admission_webhook_rejection_count{error_type=\"calling_webhook_error\",name=\"vpod.kb.io\",operation=\"UPDATE\",rejection_code=\"0\",type=\"validating\"} 5\n";
        assert_eq!(
            ApiserverView::from_metrics(text, "vpod.kb.io", "DELETE").rejected,
            9.0
        );
    }

    #[test]
    fn request_duration_keeps_the_verb_and_resource_without_subresource() {
        let text = "apiserver_request_duration_seconds_bucket{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\",le=\"0.005\"} 7\n\
            apiserver_request_duration_seconds_bucket{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\",le=\"+Inf\"} 10\n\
            apiserver_request_duration_seconds_sum{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 0.1\n\
            apiserver_request_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 10\n\
            apiserver_request_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"eviction\",verb=\"POST\",version=\"v1\"} 3\n\
            apiserver_request_duration_seconds_count{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"PATCH\",version=\"v1\"} 5\n";
        let h = request_duration(text, "POST", "pods");
        assert_eq!(h.count, 10.0);
        assert_eq!(h.buckets, vec![(0.005, 7.0), (INF, 10.0)]);
        assert_eq!(h.mean(), Some(0.01));
    }

    #[test]
    fn cpu_ticks_skip_a_command_with_spaces_and_parentheses() {
        let stat = "4242 (kruise (mgr) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 12 0 1234 100000 2000 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Some(325.0));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert!(clock_ticks() > 0.0);
    }

    #[test]
    fn latencies_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latencies::of(&samples);
        assert_eq!(l.p50, Duration::from_millis(50));
        assert_eq!(l.p99, Duration::from_millis(99));
        assert_eq!(l.max, Duration::from_millis(100));
        assert_eq!(l.mean, Duration::from_micros(50_500));
    }
}
