//! The HTTPS admission server: rustls with a certificate that can be swapped at any time (the
//! certificate loop reloads it without a restart), AdmissionReview v1 on OpenKruise's paths,
//! ConversionReview on `/convert`, and `/healthz`.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionResponse, AdmissionReview};
use kube::core::conversion::{ConversionResponse, ConversionReview};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::certs::CertBundle;
use super::registry::{AdmissionEntry, Selection};
use super::{HandlerContext, Request};

/// Errors of the webhook server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listen address could not be bound.
    #[error("binding webhook server to {addr}: {source}")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The certificate or key could not be loaded.
    #[error("loading webhook certificate: {0}")]
    Cert(String),
}

/// The serving certificate, swappable while the server runs.
#[derive(Clone, Debug, Default)]
pub struct CertStore {
    current: Arc<RwLock<Option<Arc<CertifiedKey>>>>,
}

impl CertStore {
    /// Replaces the serving certificate with the one of `bundle`.
    pub fn load(&self, bundle: &CertBundle) -> Result<(), ServerError> {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(bundle.cert.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| ServerError::Cert(format!("certificate: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(bundle.key.as_bytes())
            .map_err(|e| ServerError::Cert(format!("key: {e}")))?;
        let provider = rustls::crypto::ring::default_provider();
        let certified = CertifiedKey::from_der(certs, key, &provider)
            .map_err(|e| ServerError::Cert(e.to_string()))?;
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(certified));
        Ok(())
    }

    /// Whether a certificate is loaded.
    pub fn is_loaded(&self) -> bool {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

type Shared = Arc<HandlerContext>;

/// Admission metrics with controller-runtime's webhook metric names and labels
/// (`controller_runtime_webhook_requests_total{webhook, code}`,
/// `controller_runtime_webhook_latency_seconds{webhook}` — Prometheus' default buckets plus
/// finer ones below 5 ms, see [`LATENCY_BUCKETS`] —
/// and `controller_runtime_webhook_requests_in_flight{webhook}`; `webhook` is the path).
#[derive(Clone)]
pub struct WebhookMetrics {
    requests: Family<WebhookCodeLabels, Counter>,
    latency: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    cpu: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabels, Gauge>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: String,
    code: String,
}

/// Bounds (seconds) of the admission latency histogram: Prometheus' `DefBuckets` (0.005 … 10),
/// which controller-runtime's webhook latency histogram uses, preceded by 0.25, 0.5, 1, 2, 3
/// and 4 ms. An admission typically takes well under 5 ms, where `DefBuckets` has a single
/// bucket, so a p99 read from it could only be "somewhere in 0–5 ms"; with these a p50/p99
/// near 1–5 ms is resolved to 1 ms. Every `DefBuckets` bound is kept, so a query or dashboard
/// written for controller-runtime's (`le="0.005"`, `histogram_quantile`) reads the same counts.
pub const LATENCY_BUCKETS: [f64; 17] = [
    0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS.iter().copied())
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            cpu: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
        }
    }
}

impl WebhookMetrics {
    /// The metrics, registered in `metrics`' registry.
    pub fn register(metrics: &kruise_runtime::metrics::Metrics) -> Self {
        let m = Self::default();
        metrics.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            m.requests.clone(),
        );
        metrics.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            m.latency.clone(),
        );
        metrics.register(
            "kruise_webhook_cpu_seconds",
            "Histogram of the CPU time the handler thread spent on an admission request (kruise-rs; \
             with controller_runtime_webhook_latency_seconds it tells work from waiting for a CPU)",
            m.cpu.clone(),
        );
        metrics.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            m.in_flight.clone(),
        );
        m
    }

    fn observe(&self, path: &str, code: u16, seconds: f64) {
        let webhook = path.to_owned();
        self.latency
            .get_or_create(&WebhookLabels {
                webhook: webhook.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&WebhookCodeLabels {
                webhook,
                code: code.to_string(),
            })
            .inc();
    }
}

impl std::fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookMetrics").finish_non_exhaustive()
    }
}

/// Answers one AdmissionReview posted to `entry`'s path: the review decoded, the handler run,
/// the response wrapped in a review. A body that is not a decodable AdmissionReview (e.g. an
/// object whose `metadata` is not an object) is denied with code 400 naming the field, keeping
/// the request's `uid` when it can be read, so the API server takes the answer.
pub async fn answer(
    ctx: &HandlerContext,
    body: &[u8],
    entry: &AdmissionEntry,
) -> AdmissionReview<DynamicObject> {
    let parsed: Result<Request, String> =
        super::support::decode_slice::<AdmissionReview<DynamicObject>>(body).and_then(|r| {
            r.try_into()
                .map_err(|e: kube::core::admission::ConvertAdmissionReviewError| e.to_string())
        });
    let response = match parsed {
        Err(e) => {
            let doc = serde_json::from_slice::<serde_json::Value>(body).ok();
            let uid = doc
                .as_ref()
                .and_then(|v| v.pointer("/request/uid")?.as_str().map(str::to_owned))
                .unwrap_or_default();
            // What OpenKruise's decoder says of the object (Go's JSON error, e.g. an object
            // whose `metadata` is a string); else name the object's own field, as a handler's
            // decoding would.
            let e = doc
                .as_ref()
                .and_then(super::support::go_decoding_error)
                .unwrap_or_else(|| {
                    e.strip_prefix("request.object.")
                        .map(str::to_owned)
                        .unwrap_or(e)
                });
            let mut r = AdmissionResponse::invalid(e);
            r.uid = uid;
            r.result.code = super::support::CODE_BAD_REQUEST;
            r
        }
        Ok(req) => (entry.handler)(&req, ctx).await,
    };
    if !response.allowed {
        debug!(webhook = entry.name, uid = %response.uid, message = %response.result.message, "admission denied");
    }
    response.into_review()
}

fn convert(body: &[u8]) -> axum::Json<ConversionReview> {
    match serde_json::from_slice::<ConversionReview>(body) {
        Ok(r) => axum::Json(super::conversion::review(r)),
        Err(e) => axum::Json(
            ConversionResponse::invalid(kube::core::Status::failure(
                &format!("invalid ConversionReview: {e}"),
                "BadRequest",
            ))
            .into_review(),
        ),
    }
}

/// The CPU time of the current thread across an admission: the handler's own work, without
/// the time it waited for a CPU. Only reported when the request stayed on one thread (the
/// handler's awaits on a synced cache complete without yielding); after a move to another
/// worker thread the two readings are of different clocks, and nothing is reported.
struct HandlerCpu {
    thread: std::thread::ThreadId,
    /// The thread's CPU clock at the start (`ThreadTime` itself is not `Send`).
    at: Option<std::time::Duration>,
}

impl HandlerCpu {
    fn start() -> Self {
        Self {
            thread: std::thread::current().id(),
            at: thread_cpu(),
        }
    }

    fn seconds(&self) -> Option<f64> {
        if std::thread::current().id() != self.thread {
            return None;
        }
        Some(thread_cpu()?.checked_sub(self.at?)?.as_secs_f64())
    }
}

fn thread_cpu() -> Option<std::time::Duration> {
    cpu_time::ThreadTime::try_now()
        .ok()
        .map(|t| t.as_duration())
}

/// The router: every admission webhook of the [`crate::registry::REGISTRY`] that `webhooks` serves (a webhook
/// not served answers 404), `/convert` and `/healthz`; each admission request counted and timed
/// in `metrics`.
pub fn router(ctx: Shared, webhooks: &Selection, metrics: WebhookMetrics) -> Router {
    let mut router = Router::new().route("/healthz", get(|| async { "ok" }));
    let mut routed: Vec<&str> = Vec::new();
    for entry in webhooks.entries() {
        // Webhooks sharing a path (`vpod.kb.io`, `vpodeviction.kb.io`) share its handler.
        if routed.contains(&entry.path) {
            continue;
        }
        routed.push(entry.path);
        let metrics = metrics.clone();
        router = router.route(
            entry.path,
            post(
                move |State(c): State<Shared>, body: axum::body::Bytes| async move {
                    let labels = WebhookLabels {
                        webhook: entry.path.to_owned(),
                    };
                    metrics.in_flight.get_or_create(&labels).inc();
                    let started = std::time::Instant::now();
                    let cpu = HandlerCpu::start();
                    let review = answer(&c, &body, entry).await;
                    if let Some(seconds) = cpu.seconds() {
                        metrics.cpu.get_or_create(&labels).observe(seconds);
                    }
                    metrics.in_flight.get_or_create(&labels).dec();
                    // The HTTP status is always 200: the verdict travels in the review.
                    metrics.observe(entry.path, 200, started.elapsed().as_secs_f64());
                    axum::Json(review)
                },
            ),
        );
    }
    router
        .route(
            crate::paths::CONVERT,
            post(|body: axum::body::Bytes| async move { convert(&body) }),
        )
        .with_state(ctx)
}

/// Binds `addr` with `SO_REUSEPORT`, so that a second manager process on the same host can
/// take over the port before the first one stops (a restart without refused admissions when the
/// API server reaches the webhook at a host URL; the API server retries requests whose
/// connection was reset).
fn bind_shared(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Binds `addr` (see [`bind_shared`]) and serves [`router`] over TLS with the certificate in `certs` until `shutdown`.
/// Connections arriving before a certificate is loaded fail their TLS handshake.
pub async fn serve(
    addr: SocketAddr,
    certs: CertStore,
    ctx: Shared,
    webhooks: &Selection,
    metrics: WebhookMetrics,
    shutdown: CancellationToken,
) -> Result<(), ServerError> {
    let listener = bind_shared(addr).map_err(|source| ServerError::Bind { addr, source })?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| ServerError::Cert(e.to_string()))?
    .with_no_client_auth()
    .with_cert_resolver(Arc::new(certs));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let app = router(ctx, webhooks, metrics);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "webhook accept failed");
                    continue;
                }
            },
        };
        // Answers are small writes (TLS records of HTTP/2 frames): without TCP_NODELAY, Nagle's
        // algorithm can hold one until the API server's delayed ACK (up to 40 ms on Linux) —
        // tens of milliseconds on an admission that takes one or two. Go, the API server's
        // side, sets it on every connection.
        if let Err(e) = tcp.set_nodelay(true) {
            debug!(%peer, error = %e, "webhook TCP_NODELAY not set");
        }
        let acceptor = acceptor.clone();
        let app = app.clone();
        // Taken before the handshake so that a shutdown during it still drains this connection.
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(t) => t,
                Err(e) => {
                    debug!(%peer, error = %e, "webhook TLS handshake failed");
                    return;
                }
            };
            let service = TowerToHyperService::new(app);
            let conn = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .into_owned();
            if let Err(e) = watcher.watch(conn).await {
                debug!(%peer, error = %e, "webhook connection ended with an error");
            }
        });
    }
    // Stop accepting (connections still queued on this socket are reset, which the API server
    // retries), then drain: HTTP/2 connections get a GOAWAY, idle HTTP/1 keep-alives are
    // closed, and requests already received are answered before the connection closes, so no
    // admission request in flight during a restart ends in "unexpected EOF".
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(
            timeout = ?DRAIN_TIMEOUT,
            "webhook connections still open after the drain timeout; closing them"
        );
    }
    Ok(())
}

/// How long [`serve`] waits, after `shutdown`, for open connections to finish their requests:
/// the API server's default webhook timeout (10s).
pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_keep_controller_runtimes_bounds_and_resolve_milliseconds() {
        // Prometheus' DefBuckets, controller-runtime's webhook latency buckets.
        let def = [
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        assert!(def.iter().all(|b| LATENCY_BUCKETS.contains(b)));
        assert!(LATENCY_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        let below_5ms = LATENCY_BUCKETS.iter().filter(|&&b| b < 0.005).count();
        assert!(below_5ms >= 5, "1 ms resolution up to 5 ms");

        let m = WebhookMetrics::default();
        m.observe("/mutate-pod", 200, 0.0015);
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("lat", "h", m.latency.clone());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        // 1.5 ms falls between the 1 and 2 ms bounds (DefBuckets alone: only "≤ 5 ms").
        let bucket = |le: &str| {
            text.lines()
                .find(|l| l.starts_with("lat_bucket{") && l.contains(&format!("le=\"{le}\"")))
                .and_then(|l| l.rsplit(' ').next())
                .map(str::to_owned)
        };
        assert_eq!(bucket("0.001").as_deref(), Some("0"), "{text}");
        assert_eq!(bucket("0.002").as_deref(), Some("1"), "{text}");
        assert_eq!(bucket("0.005").as_deref(), Some("1"), "{text}");
    }
}
