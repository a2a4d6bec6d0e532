//! Client-side throttling of the API requests of a process: client-go's token bucket
//! (`flowcontrol.NewTokenBucketRateLimiter(qps, burst)`), configured as OpenKruise configures it
//! from `--rest-config-qps` / `--rest-config-burst`.
//!
//! What OpenKruise v1.9.0 does (checked in its source, controller-runtime v0.20.2 and client-go
//! v0.32), and what [`ClientThrottle`] and [`ThrottleLayer`] do alike:
//!
//! - **Flags.** OpenKruise's `main.go` copies `--rest-config-qps` (default 30) and
//!   `--rest-config-burst` (default 50) into `rest.Config` only when they are `> 0`; otherwise
//!   the config keeps controller-runtime's `GetConfig` defaults, QPS 20 and burst 30.
//!   ([`ClientThrottle::from_flags`].) client-go on its own would read QPS 0 as its default 5
//!   (burst 0 as 10) and a negative QPS as "no rate limiter", but OpenKruise never hands it those
//!   values, so neither does kruise-rs: a run without throttling passes a QPS far above what the
//!   API server can take (the benchmarks use 100000 for both managers).
//! - **Buckets.** controller-runtime creates one REST client per GroupVersionKind, and each
//!   REST client gets its own token bucket; subresources (`pods/status`, `clonesets/status`)
//!   go through their kind's client. A [`ThrottleLayer`] keeps one bucket per API group,
//!   version and resource (the key read from the request path, [`ApiPath`]) for the client it
//!   is part of, so a client's pod writes share one budget of `qps` per second while its
//!   CloneSet status writes, Events and Leases have their own, as in OpenKruise. And as
//!   OpenKruise builds a client per controller (`NewClientFromManager(mgr, name)`) beside the
//!   manager's own and its informers', kruise-manager builds one per controller, one for
//!   admission and one for the cache and leader election
//!   ([`crate::process::ApiClients`]): two controllers writing pods at once each have their own
//!   budget, as there.
//! - **Which requests.** Every request waits for a token before it is sent, except watches
//!   (client-go's `Request.Watch` bypasses the limiter). The wait is recorded in
//!   `rest_client_rate_limiter_duration_seconds{verb,host}` (client-go's histogram and buckets;
//!   `verb` is the HTTP method, as client-go records it), and a wait above 50 ms is logged at
//!   debug level as client-go logs it at `-v=3`.
//!
//! The bucket is governor's GCRA limiter, which is a token bucket: `burst` requests at once
//! from a full bucket, then one every `1/qps` seconds.

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::Request;
use tower::buffer::Buffer;
use tower::{BoxError, Layer, Service, ServiceExt as _};

use crate::metrics::Metrics;
use crate::restmetrics::{ApiPath, is_watch};

/// controller-runtime's default QPS when `--rest-config-qps` is not positive.
pub const CONTROLLER_RUNTIME_DEFAULT_QPS: f64 = 20.0;
/// controller-runtime's default burst when `--rest-config-burst` is not positive.
pub const CONTROLLER_RUNTIME_DEFAULT_BURST: u32 = 30;
/// client-go logs a throttled request that waited longer than this.
const LONG_THROTTLE_LATENCY: Duration = Duration::from_millis(50);

/// The rate every bucket allows: `qps` requests per second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientThrottle {
    /// Sustained requests per second of one bucket.
    pub qps: f64,
    /// Requests a full bucket lets through at once.
    pub burst: u32,
}

impl ClientThrottle {
    /// The limits OpenKruise ends up with for `--rest-config-qps` / `--rest-config-burst`:
    /// each positive value as given, each other value controller-runtime's default (20 / 30).
    pub fn from_flags(qps: i32, burst: i32) -> Self {
        Self {
            qps: if qps > 0 {
                f64::from(qps)
            } else {
                CONTROLLER_RUNTIME_DEFAULT_QPS
            },
            burst: u32::try_from(burst)
                .ok()
                .filter(|b| *b > 0)
                .unwrap_or(CONTROLLER_RUNTIME_DEFAULT_BURST),
        }
    }

    fn quota(self) -> Quota {
        // One token every 1/qps s (at least 1 ns, so that any qps gives a valid quota).
        let period = Duration::from_secs_f64(1.0 / self.qps.max(1e-9)).max(Duration::from_nanos(1));
        let burst = NonZeroU32::new(self.burst.max(1)).unwrap_or(NonZeroU32::MIN);
        Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst)
    }
}

/// The bucket of a request: (API group, version, resource).
type BucketKey = (String, String, String);

/// Layer adding [`Throttle`] around the client's service (whose request body type is `B`).
pub struct ThrottleLayer<B> {
    limiter: Arc<DefaultKeyedRateLimiter<BucketKey>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
    body: std::marker::PhantomData<fn(B)>,
}

impl<B> Clone for ThrottleLayer<B> {
    fn clone(&self) -> Self {
        Self {
            limiter: self.limiter.clone(),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            body: std::marker::PhantomData,
        }
    }
}

impl<B> ThrottleLayer<B> {
    /// Throttles with `throttle` per resource and records waits into `metrics`; `host` labels
    /// requests whose URI carries no host (the client's requests are relative to the cluster URL
    /// at this point of the stack).
    pub fn new(throttle: ClientThrottle, metrics: Arc<Metrics>, host: &str) -> Self {
        Self {
            limiter: Arc::new(RateLimiter::keyed(throttle.quota())),
            metrics,
            host: host.into(),
            body: std::marker::PhantomData,
        }
    }
}

impl<S, B> Layer<S> for ThrottleLayer<B>
where
    S: Service<Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + Send + Sync,
    B: Send + 'static,
{
    type Service = Throttle<S, B>;

    fn layer(&self, inner: S) -> Self::Service {
        Throttle {
            // The waiting happens before the request enters the inner stack, which is not
            // `Clone` (kube's boxed service): a buffer gives each waiting request its own handle.
            inner: Buffer::new(inner, 1024),
            limiter: self.limiter.clone(),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// Service waiting for a token of the request's resource bucket before sending the request.
pub struct Throttle<S, B>
where
    S: Service<Request<B>>,
{
    inner: Buffer<Request<B>, S::Future>,
    limiter: Arc<DefaultKeyedRateLimiter<BucketKey>>,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl<S, B> Clone for Throttle<S, B>
where
    S: Service<Request<B>>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            limiter: self.limiter.clone(),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

impl<S, B> Service<Request<B>> for Throttle<S, B>
where
    S: Service<Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Into<BoxError> + Send + Sync,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each call readies its own buffer handle after the wait.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        if is_watch(req.uri()) {
            return Box::pin(inner.oneshot(req));
        }
        let path = ApiPath::parse(req.uri().path());
        let key = (path.group, path.version, path.resource);
        let verb = req.method().as_str().to_owned();
        let host = req.uri().host().unwrap_or(&self.host).to_owned();
        let limiter = self.limiter.clone();
        let metrics = self.metrics.clone();
        Box::pin(async move {
            let start = Instant::now();
            limiter.until_key_ready(&key).await;
            let waited = start.elapsed();
            metrics.rest_client_rate_limiter_wait(&verb, &host, waited);
            if waited > LONG_THROTTLE_LATENCY {
                tracing::debug!(
                    ?waited,
                    %verb,
                    uri = %req.uri(),
                    "waited due to client-side throttling, not priority and fairness"
                );
            }
            inner.oneshot(req).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn flags_map_as_openkruise() {
        assert_eq!(
            ClientThrottle::from_flags(30, 50),
            ClientThrottle {
                qps: 30.0,
                burst: 50
            }
        );
        for (qps, burst) in [(0, 0), (-1, -1)] {
            assert_eq!(
                ClientThrottle::from_flags(qps, burst),
                ClientThrottle {
                    qps: 20.0,
                    burst: 30
                }
            );
        }
        assert_eq!(
            ClientThrottle::from_flags(100000, 0),
            ClientThrottle {
                qps: 100000.0,
                burst: 30
            }
        );
    }

    async fn send(svc: &mut Throttle<impl ServiceShape, ()>, uri: &str) {
        let req = Request::builder().uri(uri).body(()).unwrap();
        svc.ready().await.unwrap().call(req).await.unwrap();
    }

    trait ServiceShape:
        Service<
            Request<()>,
            Response = http::Response<()>,
            Error = Infallible,
            Future: Send + 'static,
        > + Send
        + 'static
    {
    }
    impl<T> ServiceShape for T where
        T: Service<
                Request<()>,
                Response = http::Response<()>,
                Error = Infallible,
                Future: Send + 'static,
            > + Send
            + 'static
    {
    }

    fn ok_service() -> impl ServiceShape {
        tower::service_fn(|_req: Request<()>| async move {
            Ok::<_, Infallible>(http::Response::new(()))
        })
    }

    #[tokio::test]
    async fn burst_per_resource_and_watches_free() {
        let metrics = Arc::new(Metrics::new());
        let layer = ThrottleLayer::new(
            ClientThrottle {
                qps: 10.0,
                burst: 5,
            },
            metrics.clone(),
            "api",
        );
        let mut svc = layer.layer(ok_service());
        // The burst goes through at once.
        let start = Instant::now();
        for i in 0..5 {
            send(&mut svc, &format!("/api/v1/namespaces/ns/pods/p-{i}")).await;
        }
        // Watches and other resources are not held back by the pods bucket.
        send(&mut svc, "/api/v1/namespaces/ns/pods?watch=true").await;
        send(
            &mut svc,
            "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/c/status",
        )
        .await;
        assert!(
            start.elapsed() < Duration::from_millis(80),
            "{:?}",
            start.elapsed()
        );
        // Watches are not recorded either: 5 pods + 1 CloneSet status.
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                r#"rest_client_rate_limiter_duration_seconds_count{verb="GET",host="api"} 6"#
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn sustained_rate_is_qps() {
        let metrics = Arc::new(Metrics::new());
        let layer = ThrottleLayer::new(
            ClientThrottle {
                qps: 50.0,
                burst: 5,
            },
            metrics.clone(),
            "api",
        );
        let mut svc = layer.layer(ok_service());
        let start = Instant::now();
        // 5 at once, then 20 more at 50/s: at least 0.38 s (20 tokens, 20 ms apart, the first
        // one 20 ms after the burst).
        for i in 0..25 {
            send(
                &mut svc,
                &format!("/api/v1/namespaces/ns/pods/p-{i}/status"),
            )
            .await;
        }
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(380), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        // Another resource still has its full burst.
        let other = Instant::now();
        for i in 0..5 {
            send(
                &mut svc,
                &format!("/apis/events.k8s.io/v1/namespaces/ns/events/e-{i}"),
            )
            .await;
        }
        assert!(other.elapsed() < Duration::from_millis(100));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                r#"rest_client_rate_limiter_duration_seconds_count{verb="GET",host="api"} 30"#
            ),
            "{text}"
        );
    }

    /// Two clients (one per controller, [`crate::process::ApiClients`]) have buckets of their
    /// own: a client that spent its pods burst does not hold back another client's pod writes.
    #[tokio::test]
    async fn every_client_has_buckets_of_its_own() {
        let metrics = Arc::new(Metrics::new());
        let throttle = ClientThrottle { qps: 1.0, burst: 3 };
        let mut first = ThrottleLayer::new(throttle, metrics.clone(), "api").layer(ok_service());
        let mut second = ThrottleLayer::new(throttle, metrics.clone(), "api").layer(ok_service());
        let start = Instant::now();
        for i in 0..3 {
            send(&mut first, &format!("/api/v1/namespaces/ns/pods/a-{i}")).await;
        }
        for i in 0..3 {
            send(&mut second, &format!("/api/v1/namespaces/ns/pods/b-{i}")).await;
        }
        // With one bucket for both, the second client's pods would wait 3 s (1 per second).
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "{:?}",
            start.elapsed()
        );
        // The first client's bucket is empty: its next pod write waits for a token.
        let held = Instant::now();
        send(&mut first, "/api/v1/namespaces/ns/pods/a-3").await;
        assert!(
            held.elapsed() >= Duration::from_millis(500),
            "{:?}",
            held.elapsed()
        );
    }
}
