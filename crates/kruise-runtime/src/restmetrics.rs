//! A tower layer for the API client that counts every request in
//! `rest_client_requests_total{code,host,method}` (client-go's metric name), so the number of
//! API calls the manager makes — e.g. writes per updated pod in `hack/bench` — is observable
//! on `/metrics`; and every write (POST, PUT, PATCH, DELETE) once more in
//! `kruise_rest_client_writes_total{group,resource,subresource,verb,code}`, so that writes can be
//! attributed to what they wrote (`pods` / `status` / `patch`, …). [`ApiPath`] reads those names
//! from a request path as the API server's request-info parser does. At trace level (`-v 5`)
//! every write is also logged with its path and response code.

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
        // Writes are attributed to the resource they write.
        let write = write_verb(req.method(), req.uri()).map(|verb| {
            let path = ApiPath::parse(req.uri().path());
            // The whole path only for the trace line below (no copy unless it is logged).
            let full =
                tracing::enabled!(tracing::Level::TRACE).then(|| req.uri().path().to_owned());
            (verb, path, full)
        });
        let metrics = self.metrics.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let code = match &res {
                Ok(r) => r.status().as_u16().to_string(),
                Err(_) => "<error>".to_owned(),
            };
            metrics.rest_client_request(&code, &host, &method);
            if let Some((verb, path, full)) = write {
                // Each write, by object (`-v 5`): attributes the counters below to pods.
                if let Some(full) = full {
                    tracing::trace!(verb, path = %full, code = %code, "API write");
                }
                metrics.rest_client_write(
                    &path.group,
                    &path.resource,
                    &path.subresource,
                    verb,
                    &code,
                );
            }
            res
        })
    }
}

/// The Kubernetes verb of a write request (`create`, `update`, `patch`, `delete`,
/// `deletecollection`), `None` for reads (GET, HEAD: get, list, watch).
pub fn write_verb(method: &http::Method, uri: &http::Uri) -> Option<&'static str> {
    Some(match *method {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => {
            if ApiPath::parse(uri.path()).name.is_empty() {
                "deletecollection"
            } else {
                "delete"
            }
        }
        _ => return None,
    })
}

/// Whether a request is a watch (`?watch=true` or `?watch=1`), which client-go never throttles.
pub fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|kv| matches!(kv, "watch=true" | "watch=1" | "watch=True" | "watch=TRUE"))
    })
}

/// What an API request path names, read as the API server's `RequestInfoFactory` reads it:
/// `/api/v1/namespaces/ns/pods/name/status` is group `""`, version `v1`, resource `pods`, name
/// `name`, subresource `status`. A path outside `/api` and `/apis` (e.g. `/version`), or a
/// discovery path without a resource, has an empty resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ApiPath {
    /// API group (`""` for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource (plural), empty for non-resource paths.
    pub resource: String,
    /// Object name, empty for collections.
    pub name: String,
    /// Subresource (`status`, `scale`, `eviction`, …), empty for the object itself.
    pub subresource: String,
}

impl ApiPath {
    /// Parses a request path (without query).
    pub fn parse(path: &str) -> Self {
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version) = match parts.first().copied() {
            Some("api") if parts.len() >= 2 => {
                let v = parts[1];
                parts.drain(..2);
                ("", v)
            }
            Some("apis") if parts.len() >= 3 => {
                let (g, v) = (parts[1], parts[2]);
                parts.drain(..3);
                (g, v)
            }
            _ => return Self::default(),
        };
        // `namespaces/<ns>/<resource>...`, except the namespace object's own subresources.
        if parts.first() == Some(&"namespaces")
            && parts.len() > 2
            && !matches!(parts[2], "status" | "finalize")
        {
            parts.drain(..2);
        }
        let at = |i: usize| parts.get(i).copied().unwrap_or_default().to_owned();
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: at(0),
            name: at(1),
            subresource: at(2),
        }
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

    #[tokio::test]
    async fn attributes_writes_to_resources() {
        let metrics = Arc::new(Metrics::new());
        let svc = tower::service_fn(|req: Request<()>| async move {
            let status = if req.method() == http::Method::PUT {
                409
            } else {
                200
            };
            Ok::<_, Infallible>(Response::builder().status(status).body(()).unwrap())
        });
        let mut svc = CountRequestsLayer::new(metrics.clone(), "api").layer(svc);
        let calls = [
            (http::Method::PATCH, "/api/v1/namespaces/ns/pods/p-1/status"),
            (http::Method::PATCH, "/api/v1/namespaces/ns/pods/p-2/status"),
            (http::Method::PUT, "/api/v1/namespaces/ns/pods/p-1"),
            (
                http::Method::PATCH,
                "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/cs/status",
            ),
            (
                http::Method::POST,
                "/apis/events.k8s.io/v1/namespaces/ns/events",
            ),
            (http::Method::GET, "/api/v1/namespaces/ns/pods/p-1"),
            (http::Method::DELETE, "/api/v1/namespaces/ns/pods"),
        ];
        for (m, uri) in calls {
            let req = Request::builder().method(m).uri(uri).body(()).unwrap();
            svc.call(req).await.unwrap();
        }
        let text = metrics.encode().unwrap();
        for want in [
            r#"kruise_rest_client_writes_total{group="",resource="pods",subresource="status",verb="patch",code="200"} 2"#,
            r#"kruise_rest_client_writes_total{group="",resource="pods",subresource="",verb="update",code="409"} 1"#,
            r#"kruise_rest_client_writes_total{group="apps.kruise.io",resource="clonesets",subresource="status",verb="patch",code="200"} 1"#,
            r#"kruise_rest_client_writes_total{group="events.k8s.io",resource="events",subresource="",verb="create",code="200"} 1"#,
            r#"kruise_rest_client_writes_total{group="",resource="pods",subresource="",verb="deletecollection",code="200"} 1"#,
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
        assert!(!text.contains(r#"verb="get""#), "{text}");
    }

    #[test]
    fn api_paths() {
        let p = |s: &str| {
            let a = ApiPath::parse(s);
            (a.group, a.version, a.resource, a.name, a.subresource)
        };
        let t = |g: &str, v: &str, r: &str, n: &str, s: &str| {
            (g.into(), v.into(), r.into(), n.into(), s.into())
        };
        assert_eq!(
            p("/api/v1/namespaces/ns/pods/x/status"),
            t("", "v1", "pods", "x", "status")
        );
        assert_eq!(p("/api/v1/namespaces/ns/pods"), t("", "v1", "pods", "", ""));
        assert_eq!(p("/api/v1/pods"), t("", "v1", "pods", "", ""));
        assert_eq!(p("/api/v1/nodes/n1"), t("", "v1", "nodes", "n1", ""));
        assert_eq!(
            p("/api/v1/namespaces/ns"),
            t("", "v1", "namespaces", "ns", "")
        );
        assert_eq!(
            p("/api/v1/namespaces/ns/status"),
            t("", "v1", "namespaces", "ns", "status")
        );
        assert_eq!(p("/api/v1/namespaces"), t("", "v1", "namespaces", "", ""));
        assert_eq!(
            p("/apis/apps.kruise.io/v1beta1/namespaces/ns/statefulsets/s/scale"),
            t("apps.kruise.io", "v1beta1", "statefulsets", "s", "scale")
        );
        assert_eq!(
            p("/apis/apps.kruise.io/v1beta1/sidecarsets/s"),
            t("apps.kruise.io", "v1beta1", "sidecarsets", "s", "")
        );
        assert_eq!(p("/version"), t("", "", "", "", ""));
        assert_eq!(p("/apis/apps/v1"), t("apps", "v1", "", "", ""));
        assert_eq!(p("/apis"), t("", "", "", "", ""));
        assert!(is_watch(
            &"/api/v1/pods?watch=true&resourceVersion=1".parse().unwrap()
        ));
        assert!(!is_watch(&"/api/v1/pods?limit=500".parse().unwrap()));
        assert!(!is_watch(&"/api/v1/pods".parse().unwrap()));
    }
}
