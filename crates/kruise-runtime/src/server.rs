//! HTTP endpoints of the manager (axum):
//!
//! - metrics server (`--metrics-addr`, default `:8080`): `GET /metrics`, OpenMetrics text;
//! - health server (`--health-probe-addr`, default `:8000`): `GET /healthz` (200 `ok` while the
//!   process serves) and `GET /readyz` (200 `ok` once [`Readiness`] says so, else 500 with the
//!   failing checks listed one per line, controller-runtime style `[-]name failed`).
//!
//! Addresses are written Go-style: `:8080` means every interface, `host:port` a specific one,
//! and port `0` picks a free port ([`bind`] returns the listener so the chosen port is known).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::metrics::{CONTENT_TYPE, Metrics};

/// Errors of the HTTP servers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address is not `[host]:port`.
    #[error("invalid listen address {addr:?}: {reason}")]
    InvalidAddr {
        /// The address as given.
        addr: String,
        /// Why it was rejected.
        reason: String,
    },
    /// Binding or serving failed.
    #[error("http server on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Readiness shared between the manager and `/readyz`. Cheap to clone (shared state).
///
/// Ready means: the base flag is set ([`Readiness::set_ready`], e.g. once leader election runs
/// and this replica either leads or stands by) **and** no registered check is pending
/// ([`Readiness::add_pending`] / [`Readiness::mark_done`], e.g. a controller's caches syncing).
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    inner: Arc<ReadinessInner>,
}

#[derive(Debug, Default)]
struct ReadinessInner {
    base: AtomicBool,
    pending: Mutex<BTreeSet<String>>,
}

impl Readiness {
    /// Not ready, no pending checks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the base flag.
    pub fn set_ready(&self, ready: bool) {
        self.inner.base.store(ready, Ordering::SeqCst);
    }

    /// Registers a check that keeps `/readyz` failing until [`mark_done`](Self::mark_done).
    pub fn add_pending(&self, name: &str) {
        self.pending().insert(name.to_string());
    }

    /// Completes a check registered with [`add_pending`](Self::add_pending) (no-op if unknown).
    pub fn mark_done(&self, name: &str) {
        self.pending().remove(name);
    }

    /// Whether the base flag is set and no check is pending.
    pub fn is_ready(&self) -> bool {
        self.inner.base.load(Ordering::SeqCst) && self.pending().is_empty()
    }

    /// Names of the failing checks (`manager` for the base flag, then pending checks, sorted).
    pub fn failing(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.inner.base.load(Ordering::SeqCst) {
            out.push("manager".to_string());
        }
        out.extend(self.pending().iter().cloned());
        out
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A poisoned set is still a valid set.
        self.inner
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Parses a Go-style listen address: `:8080` → `0.0.0.0:8080`, `host:port` as is
/// (`[::1]:8080` for IPv6).
///
/// # Errors
/// [`Error::InvalidAddr`] when it is not `[host]:port` with a numeric port.
pub fn parse_addr(addr: &str) -> Result<String, Error> {
    let invalid = |reason: &str| Error::InvalidAddr {
        addr: addr.to_string(),
        reason: reason.to_string(),
    };
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| invalid("missing port"))?;
    port.parse::<u16>()
        .map_err(|_| invalid("port is not a number in 0..=65535"))?;
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    Ok(format!("{host}:{port}"))
}

/// Binds a listener on a Go-style address (see [`parse_addr`]).
///
/// # Errors
/// [`Error::InvalidAddr`] or [`Error::Io`] when binding fails.
pub async fn bind(addr: &str) -> Result<TcpListener, Error> {
    let resolved = parse_addr(addr)?;
    TcpListener::bind(&resolved)
        .await
        .map_err(|source| Error::Io {
            addr: addr.to_string(),
            source,
        })
}

/// The router of the metrics server: `GET /metrics`.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .with_state(metrics)
}

async fn metrics_handler(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.encode() {
        Ok(body) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed to encode metrics",
        )
            .into_response(),
    }
}

/// The router of the health server: `GET /healthz` and `GET /readyz`.
pub fn health_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz_handler))
        .with_state(readiness)
}

async fn readyz_handler(State(readiness): State<Readiness>) -> Response {
    let failing = readiness.failing();
    if failing.is_empty() {
        return (StatusCode::OK, "ok").into_response();
    }
    let mut body = String::new();
    for name in failing {
        body.push_str(&format!("[-]{name} failed: not ready\n"));
    }
    body.push_str("readyz check failed\n");
    (StatusCode::INTERNAL_SERVER_ERROR, body).into_response()
}

/// Serves `router` on `listener` until `shutdown` is cancelled (in-flight requests finish).
///
/// # Errors
/// [`Error::Io`] when serving fails.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".to_string());
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(|source| Error::Io { addr, source })
}

/// The local address of a bound listener, for logs and tests.
///
/// # Errors
/// [`Error::Io`] when the socket has no local address.
pub fn local_addr(listener: &TcpListener) -> Result<SocketAddr, Error> {
    listener.local_addr().map_err(|source| Error::Io {
        addr: "listener".to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        let status = buf[9..12].parse().unwrap();
        let body = buf
            .split_once("\r\n\r\n")
            .map(|x| x.1)
            .unwrap_or("")
            .to_string();
        (status, body)
    }

    #[test]
    fn addr_parsing() {
        assert_eq!(parse_addr(":8080").unwrap(), "0.0.0.0:8080");
        assert_eq!(parse_addr("127.0.0.1:0").unwrap(), "127.0.0.1:0");
        assert_eq!(parse_addr("[::1]:8000").unwrap(), "[::1]:8000");
        assert!(parse_addr("8080").is_err());
        assert!(parse_addr(":http").is_err());
        assert!(parse_addr(":70000").is_err());
    }

    #[test]
    fn readiness_flags() {
        let r = Readiness::new();
        assert!(!r.is_ready());
        assert_eq!(r.failing(), ["manager"]);
        r.set_ready(true);
        assert!(r.is_ready());
        r.add_pending("cloneset-cache");
        assert!(!r.is_ready());
        assert_eq!(r.clone().failing(), ["cloneset-cache"]);
        r.mark_done("cloneset-cache");
        r.mark_done("unknown");
        assert!(r.is_ready());
    }

    #[tokio::test]
    async fn endpoints() {
        let shutdown = CancellationToken::new();
        let readiness = Readiness::new();
        let metrics = Arc::new(Metrics::new());
        metrics.set_leader(true);

        let health = bind("127.0.0.1:0").await.unwrap();
        let health_addr = local_addr(&health).unwrap();
        let m = bind("127.0.0.1:0").await.unwrap();
        let m_addr = local_addr(&m).unwrap();
        let h1 = tokio::spawn(serve(
            health,
            health_router(readiness.clone()),
            shutdown.clone(),
        ));
        let h2 = tokio::spawn(serve(m, metrics_router(metrics), shutdown.clone()));

        assert_eq!(get(health_addr, "/healthz").await, (200, "ok".to_string()));
        let (status, body) = get(health_addr, "/readyz").await;
        assert_eq!(status, 500);
        assert!(body.contains("[-]manager failed"), "{body}");
        readiness.set_ready(true);
        assert_eq!(get(health_addr, "/readyz").await, (200, "ok".to_string()));
        assert_eq!(get(health_addr, "/nope").await.0, 404);

        let (status, body) = get(m_addr, "/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("kruise_manager_is_leader 1"), "{body}");

        shutdown.cancel();
        h1.await.unwrap().unwrap();
        h2.await.unwrap().unwrap();
    }
}
