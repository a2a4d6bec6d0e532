//! Test support: a scripted Kubernetes API for reconcile-level unit tests (no cluster).
//!
//! [`ScriptedApi`] answers the requests a kube [`Client`] sends with canned lists per resource
//! path, optionally after a delay or never (to model a slow or stuck initial list); watches
//! stay open without events, and streamed lists (`sendInitialEvents=true`) are refused with 422
//! as by an API server with the WatchList gate off, so the cache LISTs; writes (POST/PUT/PATCH/DELETE) are recorded and answered by
//! echoing the request body (or the first listed object of that path for PATCH/DELETE).
//! [`ScriptedApi::reply`] scripts the answers to one method and path, in order (a conflict, a
//! failure, a fresh object for a GET), for reconcile error-path tests.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use kube::Client;
use serde_json::{Value, json};

/// How a list of one resource path is answered.
#[derive(Debug, Clone)]
pub enum ListReply {
    /// At once, with these items.
    Now(Vec<Value>),
    /// After the delay, with these items.
    After(Duration, Vec<Value>),
    /// Never (the request hangs).
    Never,
}

/// One request the scripted API received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Whether it was a watch.
    pub watch: bool,
    /// When it arrived, relative to [`ScriptedApi::new`].
    pub at: Duration,
    /// When its answer was sent (lists only).
    pub answered: Option<Duration>,
}

/// A scripted answer to one request ([`ScriptedApi::reply`]).
#[derive(Debug, Clone)]
pub enum Reply {
    /// What the API would answer without a script (echo for writes).
    Default,
    /// This HTTP status with a Kubernetes `Status` body carrying `message` (e.g. 409 conflict).
    Status(u16, String),
    /// 200 with this object.
    Object(Value),
}

#[derive(Default)]
struct Script {
    lists: HashMap<String, ListReply>,
    replies: HashMap<(String, String), std::collections::VecDeque<Reply>>,
    seen: Vec<Seen>,
}

/// A scripted API server; clone it to inspect what it saw.
#[derive(Clone)]
pub struct ScriptedApi {
    start: Instant,
    script: Arc<Mutex<Script>>,
}

type Body = BoxBody<Bytes, Infallible>;

fn full(v: &Value) -> Body {
    BoxBody::new(Full::new(Bytes::from(v.to_string())))
}

impl ScriptedApi {
    /// An API that answers every list with an empty list at once until told otherwise.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            script: Arc::new(Mutex::new(Script::default())),
        }
    }

    /// How lists of `path` (e.g. `/api/v1/pods`) are answered.
    pub fn list(&self, path: &str, reply: ListReply) -> &Self {
        self.lock().lists.insert(path.to_owned(), reply);
        self
    }

    /// Answers the next requests `method path` (path without query, e.g.
    /// `/api/v1/namespaces/ns/pods`) with `replies`, one each, in order; afterwards the default
    /// behaviour applies again.
    pub fn reply(
        &self,
        method: &str,
        path: &str,
        replies: impl IntoIterator<Item = Reply>,
    ) -> &Self {
        self.lock()
            .replies
            .entry((method.to_owned(), path.to_owned()))
            .or_default()
            .extend(replies);
        self
    }

    /// The `method path` of every request so far, watches excluded, in arrival order.
    pub fn calls(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter(|s| !s.watch)
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    /// The writes (non-GET requests) so far.
    #[allow(dead_code)]
    pub fn writes(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method != "GET")
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A client talking to this API.
    pub fn client(&self) -> Client {
        let api = self.clone();
        let svc = tower::service_fn(move |req: Request<kube::client::Body>| {
            let api = api.clone();
            async move { Ok::<_, Infallible>(api.answer(req).await) }
        });
        Client::new(svc, "default")
    }

    async fn answer(&self, req: Request<kube::client::Body>) -> Response<Body> {
        let method = req.method().to_string();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or_default().to_owned();
        let watch = query
            .split('&')
            .any(|kv| kv == "watch=true" || kv == "watch=1");
        let idx = {
            let mut s = self.lock();
            s.seen.push(Seen {
                method: method.clone(),
                path: path.clone(),
                watch,
                at: self.start.elapsed(),
                answered: None,
            });
            s.seen.len() - 1
        };
        let scripted = if watch {
            None
        } else {
            self.lock()
                .replies
                .get_mut(&(method.clone(), path.clone()))
                .and_then(std::collections::VecDeque::pop_front)
        };
        match scripted {
            Some(Reply::Status(code, message)) => return status_response(code, &message),
            Some(Reply::Object(obj)) => return Response::new(full(&obj)),
            Some(Reply::Default) | None => {}
        }
        if watch && query.split('&').any(|kv| kv == "sendInitialEvents=true") {
            return status_response(
                422,
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            );
        }
        if watch {
            // Open, never an event: the informer stays on its initial list.
            let pending = futures::stream::pending::<Result<http_body::Frame<Bytes>, Infallible>>();
            return Response::new(BoxBody::new(StreamBody::new(pending)));
        }
        if method == "GET" {
            let reply = self
                .lock()
                .lists
                .get(&path)
                .cloned()
                .unwrap_or(ListReply::Now(Vec::new()));
            let items = match reply {
                ListReply::Now(items) => items,
                ListReply::After(d, items) => {
                    tokio::time::sleep(d).await;
                    items
                }
                ListReply::Never => std::future::pending().await,
            };
            self.lock().seen[idx].answered = Some(self.start.elapsed());
            let list = json!({"kind": "List", "apiVersion": "v1",
                "metadata": {"resourceVersion": "10"}, "items": items});
            return Response::new(full(&list));
        }
        // A write: echo the object with server-set metadata.
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut obj: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !obj.is_object() || obj.get("kind").is_none() {
            // PATCH/DELETE: answer with the listed object the path names.
            let trimmed = path.strip_suffix("/status").unwrap_or(&path);
            let name = trimmed.rsplit('/').next().unwrap_or_default();
            let lists = self.lock().lists.clone();
            obj = lists
                .values()
                .flat_map(|r| match r {
                    ListReply::Now(i) | ListReply::After(_, i) => i.clone(),
                    ListReply::Never => Vec::new(),
                })
                .find(|o| o["metadata"]["name"].as_str() == Some(name))
                .unwrap_or_else(
                    || json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                );
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.entry("uid").or_insert_with(|| json!("uid-scripted"));
            meta.insert("resourceVersion".into(), json!("11"));
        }
        let mut resp = Response::new(full(&obj));
        *resp.status_mut() = if method == "POST" {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        resp
    }
}

/// A failure `Status` answer with HTTP status `code`.
fn status_response(code: u16, message: &str) -> Response<Body> {
    let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": message, "reason": reason_of(code), "code": code});
    let mut resp = Response::new(full(&status));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp
}

/// The `reason` of a Kubernetes `Status` for an HTTP code.
fn reason_of(code: u16) -> &'static str {
    match code {
        404 => "NotFound",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        _ => "Unknown",
    }
}

impl Default for ScriptedApi {
    fn default() -> Self {
        Self::new()
    }
}
