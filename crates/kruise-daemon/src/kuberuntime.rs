//! Stopping a container the way the kubelet does (OpenKruise `pkg/daemon/kuberuntime`,
//! `genericRuntimeManager.KillContainer` with the kubelet's lifecycle handler runner), shared by
//! the containermeta restarter and ContainerRecreateRequests.
//!
//! The steps: an Event `Killing` on the pod (field path `spec.containers{<name>}`), the
//! `preStop` handler when there is one and grace left — `exec` through CRI `ExecSync`, `sleep`,
//! or `httpGet` — cut short when the grace period runs out, then CRI `StopContainer` with what
//! is left of the grace period, never less than 2 seconds. A failing handler gets a Warning
//! Event `FailedPreStopHook` and the container is stopped anyway. The kubelet then starts the
//! container again per the pod's restart policy.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ContainerPort, LifecycleHandler, ObjectReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cri::{Cri, CriError};

/// The shortest grace period a container is stopped with (the kubelet's
/// `minimumGracePeriodInSeconds`).
pub const MIN_GRACE_SECONDS: i64 = 2;

/// What is needed to stop one container as the kubelet would.
#[derive(Debug, Clone, Default)]
pub struct KillSpec {
    /// The pod's namespace (Events).
    pub pod_namespace: String,
    /// The pod's name (Events).
    pub pod_name: String,
    /// The pod's UID (Events).
    pub pod_uid: String,
    /// The container's name in the pod spec.
    pub container_name: String,
    /// The pod's deletion grace period if set, else its termination grace period; `None`:
    /// [`MIN_GRACE_SECONDS`].
    pub grace_period_seconds: Option<i64>,
    /// The container's `preStop` handler.
    pub pre_stop: Option<LifecycleHandler>,
    /// The container's ports (a named `httpGet` port is looked up in them).
    pub ports: Vec<ContainerPort>,
    /// The `Killing` Event's message.
    pub message: String,
}

impl KillSpec {
    fn regarding(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(self.pod_namespace.clone()),
            name: Some(self.pod_name.clone()),
            uid: Some(self.pod_uid.clone()),
            field_path: Some(format!("spec.containers{{{}}}", self.container_name)),
            ..Default::default()
        }
    }
}

/// Stops container `id` (runtime ID, without `<runtime>://`) as described in the module
/// documentation, recording Events with `recorder`.
///
/// # Errors
/// The `StopContainer` error (a failing handler is not an error).
pub async fn kill_container(
    cri: &Cri,
    recorder: &kruise_runtime::events::EventRecorder,
    id: &str,
    spec: &KillSpec,
) -> Result<(), CriError> {
    let regarding = spec.regarding();
    recorder.normal(&regarding, "Killing", &spec.message).await;
    let mut grace = spec.grace_period_seconds.unwrap_or(MIN_GRACE_SECONDS);
    if let Some(handler) = spec.pre_stop.as_ref().filter(|_| grace > 0) {
        let started = Instant::now();
        let budget = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
        match tokio::time::timeout(budget, run_handler(cri, id, spec, handler, budget)).await {
            Ok(Ok(())) => tracing::debug!(container_id = id, "preStop hook completed"),
            Ok(Err(msg)) => {
                tracing::warn!(container_id = id, message = %msg, "preStop hook failed");
                recorder
                    .warning(&regarding, "FailedPreStopHook", &msg)
                    .await;
            }
            Err(_) => tracing::info!(
                container_id = id,
                grace_seconds = grace,
                "preStop hook did not complete in time"
            ),
        }
        grace -= i64::try_from(started.elapsed().as_secs()).unwrap_or(i64::MAX);
    }
    grace = grace.max(MIN_GRACE_SECONDS);
    tracing::info!(
        container_id = id,
        grace_seconds = grace,
        "killing container with grace period"
    );
    cri.stop_container(id, grace).await
}

/// Runs one lifecycle handler (the kubelet's `HandlerRunner.Run`); the error is the Event
/// message.
async fn run_handler(
    cri: &Cri,
    id: &str,
    spec: &KillSpec,
    handler: &LifecycleHandler,
    budget: Duration,
) -> Result<(), String> {
    if let Some(exec) = handler.exec.as_ref() {
        let cmd = exec.command.clone().unwrap_or_default();
        return match cri.exec_sync(id, &cmd, budget).await {
            Ok(_) => Ok(()),
            Err(e) => Err(format!(
                "Exec lifecycle hook ({cmd:?}) for Container {:?} in Pod \"{}_{}({})\" failed - error: {e}",
                spec.container_name, spec.pod_name, spec.pod_namespace, spec.pod_uid
            )),
        };
    }
    if let Some(sleep) = handler.sleep.as_ref() {
        tokio::time::sleep(Duration::from_secs(
            u64::try_from(sleep.seconds).unwrap_or(0),
        ))
        .await;
        return Ok(());
    }
    if let Some(get) = handler.http_get.as_ref() {
        return http_get(get, &spec.ports).await.map_err(|e| {
            format!(
                "HTTP lifecycle hook ({}) for Container {:?} in Pod \"{}_{}({})\" failed - error: {e}",
                get.path.as_deref().unwrap_or(""),
                spec.container_name,
                spec.pod_name,
                spec.pod_namespace,
                spec.pod_uid
            )
        });
    }
    Err("invalid handler".to_owned())
}

/// The port of an `httpGet` handler: its number, or the container port of that name.
fn resolve_port(port: &IntOrString, ports: &[ContainerPort]) -> Result<i32, String> {
    match port {
        IntOrString::Int(p) => Ok(*p),
        IntOrString::String(name) => match name.parse::<i32>() {
            Ok(p) => Ok(p),
            Err(_) => ports
                .iter()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| p.container_port)
                .ok_or_else(|| format!("couldn't find port: {name}")),
        },
    }
}

/// An HTTP `GET` of the handler's host (kruise-daemon has no pod IP: a handler without `host`
/// fails, as OpenKruise's daemon fails to find the pod's network), port and path; any answer
/// counts as done, as the kubelet's lifecycle handler (it only logs the status).
async fn http_get(
    get: &k8s_openapi::api::core::v1::HTTPGetAction,
    ports: &[ContainerPort],
) -> Result<(), String> {
    let host = get
        .host
        .as_deref()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| "failed to find networking container: no host in the handler and no pod IP on the node agent".to_owned())?;
    if get
        .scheme
        .as_deref()
        .is_some_and(|s| s.eq_ignore_ascii_case("HTTPS"))
    {
        return Err("HTTPS lifecycle handlers are not supported by kruise-daemon".to_owned());
    }
    let port = resolve_port(&get.port, ports)?;
    let path = get.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("/");
    let mut stream =
        tokio::net::TcpStream::connect((host, u16::try_from(port).map_err(|e| e.to_string())?))
            .await
            .map_err(|e| e.to_string())?;
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: kube-lifecycle/1.32\r\n"
    );
    for h in get.http_headers.iter().flatten() {
        request.push_str(&format!("{}: {}\r\n", h.name, h.value));
    }
    request.push_str("Connection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut first = [0u8; 12];
    stream
        .read_exact(&mut first)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_ports_resolve_from_the_container() {
        let ports = vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            ..Default::default()
        }];
        assert_eq!(resolve_port(&IntOrString::Int(80), &ports), Ok(80));
        assert_eq!(
            resolve_port(&IntOrString::String("http".into()), &ports),
            Ok(8080)
        );
        assert_eq!(
            resolve_port(&IntOrString::String("9090".into()), &ports),
            Ok(9090)
        );
        assert!(resolve_port(&IntOrString::String("metrics".into()), &ports).is_err());
    }

    #[tokio::test]
    async fn http_get_calls_the_handler_and_needs_a_host() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        let get = k8s_openapi::api::core::v1::HTTPGetAction {
            host: Some("127.0.0.1".into()),
            path: Some("/quit".into()),
            port: IntOrString::Int(i32::from(port)),
            ..Default::default()
        };
        http_get(&get, &[]).await.unwrap();
        assert!(server.await.unwrap().starts_with("GET /quit HTTP/1.1\r\n"));
        let no_host = k8s_openapi::api::core::v1::HTTPGetAction { host: None, ..get };
        assert!(
            http_get(&no_host, &[])
                .await
                .unwrap_err()
                .contains("failed to find networking container")
        );
    }
}
