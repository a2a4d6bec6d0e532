//! A tower layer for the API client that counts every request in
//! `rest_client_requests_total{code,host,method}` (client-go's metric name), so the number of
//! API calls the manager makes — e.g. writes per updated pod in `hack/bench` — is observable
//! on `/metrics`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower::{Layer, Service};

use crate::metrics::Metrics;

/// Layer adding [`CountRequests`] around the client's service.
#[derive(Clone)]
pub struct CountRequestsLayer {
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl CountRequestsLayer {
    /// Counts into `metrics`; `host` labels requests whose URI carries no host (the client's
    /// requests are relative to the cluster URL at this point of the stack).
    pub fn new(metrics: Arc<Metrics>, host: &str) -> Self {
        Self {
            metrics,
            host: host.into(),
        }
    }
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountRequests {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// Service counting requests by method, host and response status.
#[derive(Clone)]
pub struct CountRequests<S> {
    inner: S,
    metrics: Arc<Metrics>,
    host: Arc<str>,
}

impl<S, B, RB> Service<Request<B>> for CountRequests<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().as_str().to_owned();
        let host = req.uri().host().unwrap_or(&self.host).to_owned();
        let metrics = self.metrics.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let code = match &res {
                Ok(r) => r.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            metrics.rest_client_request(&code, &host, &method);
            res
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[tokio::test]
    async fn counts_requests_by_method_and_code() {
        let metrics = Arc::new(Metrics::new());
        let svc = tower::service_fn(|req: Request<()>| async move {
            let status = if req.method() == http::Method::DELETE {
                404
            } else {
                200
            };
            Ok::<_, Infallible>(Response::builder().status(status).body(()).unwrap())
        });
        let mut svc = CountRequestsLayer::new(metrics.clone(), "fallback").layer(svc);
        for m in [http::Method::GET, http::Method::PATCH, http::Method::DELETE] {
            let req = Request::builder()
                .method(m)
                .uri("https://api:6443/x")
                .body(())
                .unwrap();
            svc.call(req).await.unwrap();
        }
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(r#"rest_client_requests_total{code="200",host="api",method="PATCH"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"rest_client_requests_total{code="404",host="api",method="DELETE"} 1"#),
            "{text}"
        );
    }
}
