//! Prometheus metrics of the manager, named and labelled like controller-runtime's so existing
//! OpenKruise dashboards and alerts keep working.
//!
//! | metric (as exposed)                                   | type      | labels                   |
//! |-------------------------------------------------------|-----------|--------------------------|
//! | `controller_runtime_reconcile_total`                  | counter   | `controller`, `result`   |
//! | `controller_runtime_reconcile_errors_total`           | counter   | `controller`             |
//! | `controller_runtime_reconcile_panics_total`           | counter   | `controller`             |
//! | `controller_runtime_reconcile_time_seconds`           | histogram | `controller`             |
//! | `controller_runtime_max_concurrent_reconciles`        | gauge     | `controller`             |
//! | `controller_runtime_active_workers`                   | gauge     | `controller`             |
//! | `workqueue_depth`                                     | gauge     | `name`                   |
//! | `workqueue_adds_total`                                | counter   | `name`                   |
//! | `workqueue_retries_total`                             | counter   | `name`                   |
//! | `workqueue_queue_duration_seconds`                    | histogram | `name`                   |
//! | `kruise_manager_is_leader`                            | gauge     | —                        |
//! | `leader_election_slowpath_total`                      | counter   | `name`                   |
//! | `rest_client_requests_total`                          | counter   | `code`, `host`, `method` |
//! | `rest_client_rate_limiter_duration_seconds`           | histogram | `verb`, `host`           |
//! | `kruise_rest_client_writes_total`                     | counter   | `group`, `resource`, `subresource`, `verb`, `code` |
//!
//! `result` is one of `success`, `error`, `requeue`, `requeue_after` ([`ReconcileResult`]).
//! Controllers add their own families with [`Metrics::register`] (CloneSet:
//! `cloneset_scale_expectation_leakage`, an [`UntypedCounter`] because OpenKruise registers it
//! without the `_total` suffix; OpenMetrics reserves counters for `_total` names).
//!
//! The exposition is the OpenMetrics text format ([`Metrics::encode`], content type
//! [`CONTENT_TYPE`]), which Prometheus scrapes natively.

use std::time::Duration;

use std::fmt::Write as _;

use prometheus_client::encoding::{
    EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder, MetricEncoder,
};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

/// HTTP `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Buckets of `controller_runtime_reconcile_time_seconds`, in seconds (controller-runtime's).
pub const RECONCILE_TIME_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// Outcome of one reconcile, the `result` label of `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReconcileResult {
    /// Finished; wait for the next event.
    Success,
    /// The reconcile function failed.
    Error,
    /// Finished but asked for a rate-limited retry.
    Requeue,
    /// Finished and asked to run again after a fixed delay.
    RequeueAfter,
}

impl ReconcileResult {
    /// Every result, in label order.
    pub const ALL: [ReconcileResult; 4] = [
        ReconcileResult::Success,
        ReconcileResult::Error,
        ReconcileResult::Requeue,
        ReconcileResult::RequeueAfter,
    ];

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }
}

impl EncodeLabelValue for ReconcileResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: ReconcileResult,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct NameLabels {
    name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RestLabels {
    code: String,
    host: String,
    method: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RestWriteLabels {
    group: String,
    resource: String,
    subresource: String,
    verb: String,
    code: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerbHostLabels {
    verb: String,
    host: String,
}

/// Buckets of client-go's `rest_client_rate_limiter_duration_seconds`, in seconds.
pub const RATE_LIMITER_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

fn rate_limiter_histogram() -> Histogram {
    Histogram::new(RATE_LIMITER_BUCKETS.iter().copied())
}

/// Labels `{namespace, name}` of a per-object metric (e.g. OpenKruise's
/// `cloneset_scale_expectation_leakage`), for families registered with [`Metrics::register`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ObjectLabels {
    /// The object's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

/// A monotonically increasing count exposed without the `_total` suffix (OpenMetrics type
/// `unknown`), for metrics whose upstream name lacks it.
#[derive(Debug, Clone, Default)]
pub struct UntypedCounter(Counter);

impl UntypedCounter {
    /// Adds one; returns the previous value.
    pub fn inc(&self) -> u64 {
        self.0.inc()
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

impl TypedMetric for UntypedCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for UntypedCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Unknown
    }
}

/// Buckets of `workqueue_queue_duration_seconds` (client-go's: 10ns × 10^0..11).
fn queue_duration_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1e-8, 10.0, 12,
    ))
}

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS.iter().copied())
}

/// All metrics of the manager plus the registry that exposes them. Cheap to share behind an
/// `Arc`; every method takes `&self`.
pub struct Metrics {
    registry: std::sync::Mutex<Registry>,
    reconcile_total: Family<ReconcileLabels, Counter>,
    reconcile_errors_total: Family<ControllerLabels, Counter>,
    reconcile_panics_total: Family<ControllerLabels, Counter>,
    reconcile_time_seconds: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    max_concurrent_reconciles: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    workqueue_depth: Family<NameLabels, Gauge>,
    workqueue_adds_total: Family<NameLabels, Counter>,
    workqueue_retries_total: Family<NameLabels, Counter>,
    workqueue_queue_duration_seconds: Family<NameLabels, Histogram, fn() -> Histogram>,
    is_leader: Gauge,
    leader_slowpath_total: Family<NameLabels, Counter>,
    rest_client_requests_total: Family<RestLabels, Counter>,
    rest_client_writes_total: Family<RestWriteLabels, Counter>,
    rest_client_rate_limiter_duration_seconds: Family<VerbHostLabels, Histogram, fn() -> Histogram>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Registers `metric` under `name` in `registry` and returns it (a metric is a handle: the
/// registry and the caller share its series).
fn registered<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

impl Metrics {
    /// A fresh registry with every metric registered (and no series yet). Counters are
    /// registered without `_total`: the encoder appends it.
    pub fn new() -> Self {
        let mut r = Registry::default();
        let histogram = |f: fn() -> Histogram| {
            Family::<ControllerLabels, Histogram, fn() -> Histogram>::new_with_constructor(f)
        };
        Self {
            reconcile_total: registered(
                &mut r,
                "controller_runtime_reconcile",
                "Total number of reconciliations per controller",
                Family::default(),
            ),
            reconcile_errors_total: registered(
                &mut r,
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                Family::default(),
            ),
            reconcile_panics_total: registered(
                &mut r,
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                Family::default(),
            ),
            reconcile_time_seconds: registered(
                &mut r,
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                histogram(reconcile_histogram),
            ),
            max_concurrent_reconciles: registered(
                &mut r,
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                Family::default(),
            ),
            active_workers: registered(
                &mut r,
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                Family::default(),
            ),
            workqueue_depth: registered(
                &mut r,
                "workqueue_depth",
                "Current depth of workqueue",
                Family::default(),
            ),
            workqueue_adds_total: registered(
                &mut r,
                "workqueue_adds",
                "Total number of adds handled by workqueue",
                Family::default(),
            ),
            workqueue_retries_total: registered(
                &mut r,
                "workqueue_retries",
                "Total number of retries handled by workqueue",
                Family::default(),
            ),
            workqueue_queue_duration_seconds: registered(
                &mut r,
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                Family::<NameLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                    queue_duration_histogram,
                ),
            ),
            is_leader: registered(
                &mut r,
                "kruise_manager_is_leader",
                "Gauge the leader of kruise-manager",
                Gauge::default(),
            ),
            leader_slowpath_total: registered(
                &mut r,
                "leader_election_slowpath",
                "Total number of slow path exercised in renewing leader leases, by lease name",
                Family::default(),
            ),
            rest_client_requests_total: registered(
                &mut r,
                "rest_client_requests",
                "Number of HTTP requests to the API server, partitioned by status code, method, and host",
                Family::default(),
            ),
            rest_client_writes_total: registered(
                &mut r,
                "kruise_rest_client_writes",
                "Number of write requests (POST, PUT, PATCH, DELETE) to the API server, partitioned by \
                 API group, resource, subresource, Kubernetes verb and status code",
                Family::default(),
            ),
            rest_client_rate_limiter_duration_seconds: registered(
                &mut r,
                "rest_client_rate_limiter_duration_seconds",
                "Client side rate limiter latency in seconds. Broken down by verb, and host.",
                Family::<VerbHostLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                    rate_limiter_histogram,
                ),
            ),
            registry: std::sync::Mutex::new(r),
        }
    }

    /// Counts one write request (`kruise_rest_client_writes_total{group,resource,subresource,
    /// verb,code}`): what it wrote (from its path), its Kubernetes verb and HTTP status.
    pub fn rest_client_write(
        &self,
        group: &str,
        resource: &str,
        subresource: &str,
        verb: &str,
        code: &str,
    ) {
        self.rest_client_writes_total
            .get_or_create(&RestWriteLabels {
                group: group.to_owned(),
                resource: resource.to_owned(),
                subresource: subresource.to_owned(),
                verb: verb.to_owned(),
                code: code.to_owned(),
            })
            .inc();
    }

    /// Records how long a request waited for the client-side rate limiter
    /// (`rest_client_rate_limiter_duration_seconds{verb,host}`, client-go's histogram; `verb` is
    /// the HTTP method).
    pub fn rest_client_rate_limiter_wait(&self, verb: &str, host: &str, waited: Duration) {
        self.rest_client_rate_limiter_duration_seconds
            .get_or_create(&VerbHostLabels {
                verb: verb.to_owned(),
                host: host.to_owned(),
            })
            .observe(waited.as_secs_f64());
    }

    /// Counts one API request (`rest_client_requests_total{code,host,method}`, client-go's
    /// metric): `code` is the HTTP status, or `<error>` when no response arrived.
    pub fn rest_client_request(&self, code: &str, host: &str, method: &str) {
        self.rest_client_requests_total
            .get_or_create(&RestLabels {
                code: code.to_owned(),
                host: host.to_owned(),
                method: method.to_owned(),
            })
            .inc();
    }

    /// Registers a metric of one controller or webhook (its own families, e.g. OpenKruise's
    /// `cloneset_scale_expectation_leakage`) beside the shared ones; it is exposed from then on.
    /// Counters are registered without `_total` (the encoder appends it); see [`UntypedCounter`]
    /// for upstream counters whose name lacks it.
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .register(name, help, metric);
    }

    /// Renders every metric in the OpenMetrics text format (ends with `# EOF`).
    ///
    /// # Errors
    /// Only if formatting fails, which writing to a `String` does not.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// Announces a controller: sets `max_concurrent_reconciles` to `workers`, and creates its
    /// reconcile counters (at zero), active-worker gauge and workqueue series, as
    /// controller-runtime does when a controller starts.
    pub fn register_controller(&self, controller: &str, workers: u16) {
        let c = ControllerLabels {
            controller: controller.to_string(),
        };
        self.max_concurrent_reconciles
            .get_or_create(&c)
            .set(i64::from(workers));
        self.active_workers.get_or_create(&c).set(0);
        self.reconcile_errors_total.get_or_create_owned(&c);
        for result in ReconcileResult::ALL {
            self.reconcile_total.get_or_create_owned(&ReconcileLabels {
                controller: controller.to_string(),
                result,
            });
        }
        let n = NameLabels {
            name: controller.to_string(),
        };
        self.workqueue_depth.get_or_create_owned(&n);
        self.workqueue_adds_total.get_or_create_owned(&n);
        self.workqueue_retries_total.get_or_create_owned(&n);
        self.workqueue_queue_duration_seconds
            .get_or_create_owned(&n);
    }

    /// Records one finished reconcile: `reconcile_total{result}` +1, `reconcile_errors_total`
    /// +1 when `result` is [`ReconcileResult::Error`], and `elapsed` into the time histogram.
    pub fn observe_reconcile(&self, controller: &str, result: ReconcileResult, elapsed: Duration) {
        self.reconcile_total
            .get_or_create(&ReconcileLabels {
                controller: controller.to_string(),
                result,
            })
            .inc();
        let c = ControllerLabels {
            controller: controller.to_string(),
        };
        if result == ReconcileResult::Error {
            self.reconcile_errors_total.get_or_create(&c).inc();
        }
        self.reconcile_time_seconds
            .get_or_create(&c)
            .observe(elapsed.as_secs_f64());
    }

    /// Records a reconcile that panicked (controller-runtime's `RecoverPanic`):
    /// `reconcile_panics_total` +1; the caller records the reconcile itself as an error.
    pub fn observe_panic(&self, controller: &str) {
        self.reconcile_panics_total
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .inc();
    }

    /// The `controller_runtime_active_workers` gauge of `controller` (a shared handle).
    pub fn active_workers(&self, controller: &str) -> Gauge {
        self.active_workers.get_or_create_owned(&ControllerLabels {
            controller: controller.to_string(),
        })
    }

    /// The `workqueue_depth` gauge of queue `name` (a shared handle).
    pub fn workqueue_depth(&self, name: &str) -> Gauge {
        self.workqueue_depth.get_or_create_owned(&NameLabels {
            name: name.to_string(),
        })
    }

    /// The `workqueue_adds_total` counter of queue `name` (a shared handle).
    pub fn workqueue_adds(&self, name: &str) -> Counter {
        self.workqueue_adds_total.get_or_create_owned(&NameLabels {
            name: name.to_string(),
        })
    }

    /// The `workqueue_queue_duration_seconds` histogram of queue `name` (a shared handle).
    pub fn workqueue_queue_duration(&self, name: &str) -> Histogram {
        self.workqueue_queue_duration_seconds
            .get_or_create_owned(&NameLabels {
                name: name.to_string(),
            })
    }

    /// `workqueue_adds_total{name}` +1.
    pub fn workqueue_add(&self, name: &str) {
        self.workqueue_adds_total
            .get_or_create(&NameLabels {
                name: name.to_string(),
            })
            .inc();
    }

    /// `workqueue_retries_total{name}` +1.
    pub fn workqueue_retry(&self, name: &str) {
        self.workqueue_retries_total
            .get_or_create(&NameLabels {
                name: name.to_string(),
            })
            .inc();
    }

    /// Sets `kruise_manager_is_leader` to 1 (leading) or 0.
    pub fn set_leader(&self, leading: bool) {
        self.is_leader.set(i64::from(leading));
    }

    /// Whether `kruise_manager_is_leader` currently reads 1.
    pub fn is_leader(&self) -> bool {
        self.is_leader.get() == 1
    }

    /// `leader_election_slowpath_total{name}` +1: a renewal had to re-read the lock from the
    /// API server instead of updating the cached copy.
    pub fn leader_slowpath(&self, lease_name: &str) {
        self.leader_slowpath_total
            .get_or_create(&NameLabels {
                name: lease_name.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_value(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn controller_runtime_names_and_labels() {
        let m = Metrics::new();
        m.register_controller("cloneset", 3);
        m.observe_reconcile(
            "cloneset",
            ReconcileResult::Success,
            Duration::from_millis(3),
        );
        m.observe_reconcile(
            "cloneset",
            ReconcileResult::Error,
            Duration::from_millis(30),
        );
        m.observe_reconcile(
            "cloneset",
            ReconcileResult::RequeueAfter,
            Duration::from_secs(2),
        );
        m.workqueue_add("cloneset");
        m.workqueue_retry("cloneset");
        m.workqueue_depth("cloneset").set(4);
        m.active_workers("cloneset").inc();
        m.set_leader(true);
        m.leader_slowpath("kruise-manager");
        let leakage = Family::<ObjectLabels, UntypedCounter>::default();
        m.register(
            "cloneset_scale_expectation_leakage",
            "a controller's own family",
            leakage.clone(),
        );
        let key = ObjectLabels {
            namespace: "ns1".into(),
            name: "cs1".into(),
        };
        leakage.get_or_create(&key).inc();
        leakage.get_or_create(&key).inc();
        let text = m.encode().unwrap();

        let expect = [
            (
                r#"controller_runtime_reconcile_total{controller="cloneset",result="success"}"#,
                1.0,
            ),
            (
                r#"controller_runtime_reconcile_total{controller="cloneset",result="error"}"#,
                1.0,
            ),
            (
                r#"controller_runtime_reconcile_total{controller="cloneset",result="requeue"}"#,
                0.0,
            ),
            (
                r#"controller_runtime_reconcile_total{controller="cloneset",result="requeue_after"}"#,
                1.0,
            ),
            (
                r#"controller_runtime_reconcile_errors_total{controller="cloneset"}"#,
                1.0,
            ),
            (
                r#"controller_runtime_reconcile_time_seconds_count{controller="cloneset"}"#,
                3.0,
            ),
            (
                r#"controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="cloneset"}"#,
                1.0,
            ),
            (
                r#"controller_runtime_max_concurrent_reconciles{controller="cloneset"}"#,
                3.0,
            ),
            (
                r#"controller_runtime_active_workers{controller="cloneset"}"#,
                1.0,
            ),
            (r#"workqueue_depth{name="cloneset"}"#, 4.0),
            (r#"workqueue_adds_total{name="cloneset"}"#, 1.0),
            (r#"workqueue_retries_total{name="cloneset"}"#, 1.0),
            ("kruise_manager_is_leader", 1.0),
            (
                r#"leader_election_slowpath_total{name="kruise-manager"}"#,
                1.0,
            ),
            (
                r#"cloneset_scale_expectation_leakage{namespace="ns1",name="cs1"}"#,
                2.0,
            ),
        ];
        for (series, value) in expect {
            assert_eq!(line_value(&text, series), Some(value), "{series}\n{text}");
        }
        assert!(text.contains("# TYPE controller_runtime_reconcile_time_seconds histogram"));
        assert!(text.trim_end().ends_with("# EOF"));
        assert!(m.is_leader());
    }

    #[test]
    fn result_labels() {
        let labels: Vec<_> = ReconcileResult::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels, ["success", "error", "requeue", "requeue_after"]);
    }
}
