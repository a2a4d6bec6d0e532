//! Runs one probe as the kubelet's probers do (OpenKruise v1.9.0 `pkg/daemon/podprobe/prober.go`
//! over `k8s.io/kubernetes/pkg/probe/{exec,http,tcp}` v1.32): `exec` through CRI `ExecSync`,
//! `httpGet` with a GET from the node, `tcpSocket` with a connect. `grpc` is not supported (as in
//! OpenKruise): such a probe is an error and its result is not set.

use std::time::Duration;

use k8s_openapi::api::core::v1::{HTTPGetAction, HTTPHeader, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::probe_state;

use super::plan::{self, ProbeKey};
use crate::cri::{Cri, CriError, ExecOutput};

/// Most of an HTTP response body read (the kubelet's `maxRespBodyLength`, 10 KiB).
pub const MAX_BODY_BYTES: usize = 10 * 1024;

/// Extra time given to the runtime beyond the exec timeout before the call itself is abandoned
/// (the CRI client's default call timeout OpenKruise's daemon uses, 5 s).
const EXEC_CALL_GRACE: Duration = Duration::from_secs(5);

/// The result of one probe action, as `k8s.io/kubernetes/pkg/probe.Result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The probe passed, with its output.
    Success(String),
    /// The probe passed with a warning (an HTTP redirect not followed), with its message.
    Warning(String),
    /// The probe failed, with its output or error.
    Failure(String),
}

impl Outcome {
    /// The probe state (`Succeeded` for success and warning, else `Failed`) and the message,
    /// cut by [`plan::truncate_message`] (OpenKruise `prober.probe`).
    pub fn into_state(self) -> (&'static str, String) {
        match self {
            Outcome::Success(m) | Outcome::Warning(m) => {
                (probe_state::SUCCEEDED, plan::truncate_message(m))
            }
            Outcome::Failure(m) => (probe_state::FAILED, plan::truncate_message(m)),
        }
    }
}

/// Go's `time.Duration.String()` of a whole number of seconds (`1s`, `1m30s`, `1h0m0s`).
pub fn go_seconds(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m{}s", s / 3600, (s % 3600) / 60, s % 60),
    }
}

/// The outcome of an `exec` probe from what `ExecSync` returned (the kubelet's exec prober over
/// the CRI client): exit 0 → success with stdout; a non-zero exit → failure with stderr; a
/// timeout (gRPC `DeadlineExceeded`) → failure `command timed out: "<cmd>" timed out after
/// <timeout>`.
///
/// # Errors
/// Any other runtime error (the result is then not set).
pub fn exec_outcome(
    res: Result<ExecOutput, CriError>,
    cmd: &[String],
    timeout: Duration,
) -> Result<Outcome, String> {
    match res {
        Ok(out) => Ok(Outcome::Success(
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )),
        Err(CriError::ExitCode { stderr, .. }) => Ok(Outcome::Failure(stderr)),
        Err(CriError::Call { status, .. }) if status.code() == tonic::Code::DeadlineExceeded => {
            Ok(Outcome::Failure(format!(
                "command timed out: {:?} timed out after {}",
                cmd.join(" "),
                go_seconds(timeout)
            )))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The port number of an `IntOrString` (`IntValue`: a string that is not a number is 0).
pub fn port_number(port: &IntOrString) -> i32 {
    match port {
        IntOrString::Int(p) => *p,
        IntOrString::String(s) => s.parse().unwrap_or(0),
    }
}

/// `host:port`, the host bracketed when it is an IPv6 address (Go `net.JoinHostPort`).
pub fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The URL an `httpGet` probe requests (OpenKruise `newRequestForHTTPGetAction`): scheme (default
/// `http`, lower-cased), host (default the pod IP), port, path.
///
/// # Errors
/// `invalid port number: <n>` for a port outside 1..65535.
pub fn http_url(action: &HTTPGetAction, pod_ip: &str) -> Result<String, String> {
    let scheme = action
        .scheme
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("http")
        .to_ascii_lowercase();
    let host = action
        .host
        .as_deref()
        .filter(|h| !h.is_empty())
        .unwrap_or(pod_ip);
    let port = port_number(&action.port);
    if port <= 0 || port >= 65536 {
        return Err(format!("invalid port number: {port}"));
    }
    let path = action.path.as_deref().unwrap_or("");
    let sep = if path.is_empty() || path.starts_with('/') {
        ""
    } else {
        "/"
    };
    Ok(format!(
        "{scheme}://{}{sep}{path}",
        join_host_port(host, port)
    ))
}

/// The request headers of an `httpGet` probe (OpenKruise `newProbeRequest`): the probe's headers,
/// plus `User-Agent: kube-probe` and `Accept: */*` unless set; an `Accept` set to "" is removed.
/// Names compare case-insensitively.
pub fn http_headers(headers: &[HTTPHeader]) -> Vec<(String, String)> {
    let has = |name: &str| headers.iter().any(|h| h.name.eq_ignore_ascii_case(name));
    let mut out: Vec<(String, String)> = headers
        .iter()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    if !has("User-Agent") {
        out.push(("User-Agent".into(), "kube-probe".into()));
    }
    match headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("Accept"))
    {
        None => out.push(("Accept".into(), "*/*".into())),
        Some(first) if first.value.is_empty() => {
            out.retain(|(n, _)| !n.eq_ignore_ascii_case("Accept"));
        }
        Some(_) => {}
    }
    out
}

/// The outcome of an HTTP response (the kubelet's `DoHTTPProbe`): 2xx → success with the body;
/// 3xx (a redirect not followed) → warning `Probe terminated redirects, Response body: <body>`;
/// anything else → failure `HTTP probe failed with statuscode: <code>`.
pub fn http_outcome(status: u16, body: &str) -> Outcome {
    match status {
        200..300 => Outcome::Success(body.to_owned()),
        300..400 => Outcome::Warning(format!("Probe terminated redirects, Response body: {body}")),
        _ => Outcome::Failure(format!("HTTP probe failed with statuscode: {status}")),
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// Runs probes; cheap to clone.
#[derive(Clone, Debug)]
pub struct Prober {
    cri: Cri,
    http: HttpProber,
}

impl Prober {
    /// A prober executing through `cri`, with an [`HttpProber`].
    ///
    /// # Errors
    /// When the HTTP client cannot be built (TLS backend initialisation).
    pub fn new(cri: Cri) -> Result<Self, reqwest::Error> {
        Ok(Self {
            cri,
            http: HttpProber::new()?,
        })
    }

    /// Runs `probe` for `key` against runtime container `container_id`: the state and the
    /// message (OpenKruise `prober.probe`).
    ///
    /// # Errors
    /// No supported action (`missing probe handler for <container>`), an invalid `httpGet`
    /// port, or a runtime error other than a non-zero exit or a timeout.
    pub async fn probe(
        &self,
        probe: &Probe,
        key: &ProbeKey,
        container_id: &str,
    ) -> Result<(&'static str, String), String> {
        Ok(self.run(probe, key, container_id).await?.into_state())
    }

    async fn run(
        &self,
        probe: &Probe,
        key: &ProbeKey,
        container_id: &str,
    ) -> Result<Outcome, String> {
        let timeout = plan::timeout(probe);
        if let Some(exec) = &probe.exec {
            let cmd = exec.command.clone().unwrap_or_default();
            let res = match tokio::time::timeout(
                timeout + EXEC_CALL_GRACE,
                self.cri.exec_sync(container_id, &cmd, timeout),
            )
            .await
            {
                Ok(res) => res,
                Err(_) => Err(CriError::Call {
                    call: "ExecSync",
                    status: Box::new(tonic::Status::deadline_exceeded(
                        "context deadline exceeded",
                    )),
                }),
            };
            return exec_outcome(res, &cmd, timeout);
        }
        if let Some(action) = &probe.http_get {
            let url = http_url(action, &key.pod_ip)?;
            let headers = http_headers(action.http_headers.as_deref().unwrap_or_default());
            tracing::debug!(%url, ?timeout, "HTTP probe");
            return Ok(self.http.probe(&url, &headers, timeout).await);
        }
        if let Some(tcp) = &probe.tcp_socket {
            let host = tcp
                .host
                .as_deref()
                .filter(|h| !h.is_empty())
                .unwrap_or(&key.pod_ip);
            let addr = join_host_port(host, port_number(&tcp.port));
            tracing::debug!(%addr, ?timeout, "TCP probe");
            return Ok(tcp_probe(&addr, timeout).await);
        }
        Err(format!("missing probe handler for {}", key.container_name))
    }
}

/// The HTTP client of `httpGet` probes, as the kubelet's: no proxy, TLS certificates not
/// verified, no keep-alive, redirects followed only on the same host (at most 10).
#[derive(Clone, Debug)]
pub struct HttpProber {
    client: reqwest::Client,
}

impl HttpProber {
    /// Builds the client.
    ///
    /// # Errors
    /// When the client cannot be built (TLS backend initialisation).
    pub fn new() -> Result<Self, reqwest::Error> {
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt
                .previous()
                .first()
                .and_then(|u| u.host_str().map(str::to_owned));
            if attempt.url().host_str().map(str::to_owned) != first {
                attempt.stop()
            } else if attempt.previous().len() >= 10 {
                attempt.error("stopped after 10 redirects")
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .redirect(redirects)
            .no_proxy()
            .danger_accept_invalid_certs(true)
            .pool_max_idle_per_host(0)
            .build()?;
        Ok(Self { client })
    }

    /// GETs `url` with `headers` within `timeout` and maps the answer with [`http_outcome`];
    /// a request that fails (connection, timeout, too many redirects) is a failure
    /// `Get "<url>": <error>`, a body that cannot be read a failure without message.
    pub async fn probe(
        &self,
        url: &str,
        headers: &[(String, String)],
        timeout: Duration,
    ) -> Outcome {
        let fail = |e: String| Outcome::Failure(format!("Get {url:?}: {e}"));
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            let name = match reqwest::header::HeaderName::from_bytes(name.as_bytes()) {
                Ok(n) => n,
                Err(_) => return fail(format!("net/http: invalid header field name {name:?}")),
            };
            let value = match reqwest::header::HeaderValue::from_str(value) {
                Ok(v) => v,
                Err(_) => {
                    return fail(format!(
                        "net/http: invalid header field value for {:?}",
                        name.as_str()
                    ));
                }
            };
            map.append(name, value);
        }
        let resp = match self
            .client
            .get(url)
            .headers(map)
            .timeout(timeout)
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return fail(
                    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                        .into(),
                );
            }
            Err(e) => {
                let msg = std::error::Error::source(&e).map_or_else(|| e.to_string(), error_chain);
                return fail(msg);
            }
        };
        let status = resp.status().as_u16();
        let mut resp = resp;
        let mut body = Vec::new();
        while body.len() < MAX_BODY_BYTES {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = MAX_BODY_BYTES - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                Err(_) => return Outcome::Failure(String::new()),
            }
        }
        http_outcome(status, &String::from_utf8_lossy(&body))
    }
}

/// A TCP probe of `addr` (`host:port`): success when a connection opens within `timeout`, else
/// failure `dial tcp <addr>: <error>` (the kubelet's `DoTCPProbe`).
pub async fn tcp_probe(addr: &str, timeout: Duration) -> Outcome {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_conn)) => Outcome::Success(String::new()),
        Ok(Err(e)) => Outcome::Failure(format!("dial tcp {addr}: {e}")),
        Err(_) => Outcome::Failure(format!("dial tcp {addr}: i/o timeout")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, value: &str) -> HTTPHeader {
        HTTPHeader {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn exec_results_map_as_the_kubelet_exec_prober() {
        let cmd = vec!["sh".to_owned(), "-c".to_owned(), "exit 1".to_owned()];
        let ok = ExecOutput {
            stdout: b"fine".to_vec(),
            stderr: b"ignored".to_vec(),
        };
        assert_eq!(
            exec_outcome(Ok(ok), &cmd, Duration::from_secs(1)),
            Ok(Outcome::Success("fine".into()))
        );
        let exit = CriError::ExitCode {
            cmd: cmd.clone(),
            container: "c".into(),
            exit_code: 1,
            stderr: "boom".into(),
        };
        assert_eq!(
            exec_outcome(Err(exit), &cmd, Duration::from_secs(1)),
            Ok(Outcome::Failure("boom".into()))
        );
        let timeout = CriError::Call {
            call: "ExecSync",
            status: Box::new(tonic::Status::deadline_exceeded("x")),
        };
        assert_eq!(
            exec_outcome(Err(timeout), &cmd, Duration::from_secs(90)),
            Ok(Outcome::Failure(
                "command timed out: \"sh -c exit 1\" timed out after 1m30s".into()
            ))
        );
        let other = CriError::Call {
            call: "ExecSync",
            status: Box::new(tonic::Status::not_found("no such container")),
        };
        assert!(exec_outcome(Err(other), &cmd, Duration::from_secs(1)).is_err());
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_seconds(Duration::from_secs(1)), "1s");
        assert_eq!(go_seconds(Duration::from_secs(60)), "1m0s");
        assert_eq!(go_seconds(Duration::from_secs(3661)), "1h1m1s");
    }

    #[test]
    fn http_urls_default_scheme_and_host_and_check_the_port() {
        let mut a = HTTPGetAction {
            port: IntOrString::Int(8080),
            path: Some("/healthz?x=1".into()),
            ..Default::default()
        };
        assert_eq!(
            http_url(&a, "10.0.0.1").unwrap(),
            "http://10.0.0.1:8080/healthz?x=1"
        );
        a.scheme = Some("HTTPS".into());
        a.host = Some("fd00::1".into());
        a.path = Some("ready".into());
        assert_eq!(
            http_url(&a, "10.0.0.1").unwrap(),
            "https://[fd00::1]:8080/ready"
        );
        a.path = None;
        a.port = IntOrString::String("443".into());
        assert_eq!(http_url(&a, "x").unwrap(), "https://[fd00::1]:443");
        a.port = IntOrString::String("http".into());
        assert_eq!(http_url(&a, "x").unwrap_err(), "invalid port number: 0");
        a.port = IntOrString::Int(65536);
        assert_eq!(http_url(&a, "x").unwrap_err(), "invalid port number: 65536");
    }

    #[test]
    fn http_headers_add_user_agent_and_accept() {
        assert_eq!(
            http_headers(&[header("X-A", "1")]),
            vec![
                ("X-A".to_owned(), "1".to_owned()),
                ("User-Agent".to_owned(), "kube-probe".to_owned()),
                ("Accept".to_owned(), "*/*".to_owned()),
            ]
        );
        assert_eq!(
            http_headers(&[header("user-agent", "me"), header("accept", "")]),
            vec![("user-agent".to_owned(), "me".to_owned())]
        );
        assert_eq!(
            http_headers(&[header("Accept", "text/plain")]),
            vec![
                ("Accept".to_owned(), "text/plain".to_owned()),
                ("User-Agent".to_owned(), "kube-probe".to_owned()),
            ]
        );
    }

    #[test]
    fn http_status_codes_map_as_the_kubelet_http_prober() {
        assert_eq!(http_outcome(200, "ok"), Outcome::Success("ok".into()));
        assert_eq!(http_outcome(299, ""), Outcome::Success(String::new()));
        assert_eq!(
            http_outcome(302, "moved"),
            Outcome::Warning("Probe terminated redirects, Response body: moved".into())
        );
        assert_eq!(
            http_outcome(400, "secret body"),
            Outcome::Failure("HTTP probe failed with statuscode: 400".into())
        );
        assert_eq!(
            http_outcome(199, ""),
            Outcome::Failure("HTTP probe failed with statuscode: 199".into())
        );
        assert_eq!(http_outcome(302, "").into_state().0, probe_state::SUCCEEDED);
        assert_eq!(http_outcome(500, "").into_state().0, probe_state::FAILED);
    }

    #[test]
    fn outcomes_truncate_long_messages() {
        let (state, msg) = Outcome::Success("é".repeat(1100)).into_state();
        assert_eq!(state, probe_state::SUCCEEDED);
        assert_eq!(msg.len(), 1024);
        assert_eq!(msg.chars().count(), 512);
    }

    #[tokio::test]
    async fn tcp_probe_connects_or_fails() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        assert_eq!(
            tcp_probe(&addr, Duration::from_secs(1)).await,
            Outcome::Success(String::new())
        );
        drop(listener);
        match tcp_probe(&addr, Duration::from_secs(1)).await {
            Outcome::Failure(m) => assert!(m.starts_with(&format!("dial tcp {addr}: ")), "{m}"),
            o => panic!("expected a failure, got {o:?}"),
        }
    }

    #[tokio::test]
    async fn http_probe_reads_status_and_body_from_a_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            for resp in [
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/\r\nContent-Length: 1\r\nConnection: close\r\n\r\nm",
                "HTTP/1.1 503 Unavailable\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy",
            ] {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap();
                let req = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                assert!(req.contains("user-agent: kube-probe"), "{req}");
                s.write_all(resp.as_bytes()).await.unwrap();
            }
        });
        let http = HttpProber::new().unwrap();
        let url = format!("http://{addr}/healthz");
        let headers = http_headers(&[]);
        let t = Duration::from_secs(2);
        assert_eq!(
            http.probe(&url, &headers, t).await,
            Outcome::Success("ok".into())
        );
        assert_eq!(
            http.probe(&url, &headers, t).await,
            Outcome::Warning("Probe terminated redirects, Response body: m".into())
        );
        assert_eq!(
            http.probe(&url, &headers, t).await,
            Outcome::Failure("HTTP probe failed with statuscode: 503".into())
        );
    }
}
