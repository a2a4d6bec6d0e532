//! A `kruise-manager` process for e2e tests, run the way users run it: webhook server on, the
//! pod webhook registered, default flags — only isolated so that tests can share the testbed.
//!
//! Isolation (every test that runs a manager gets its own namespace `ns`):
//! * `--namespace ns`: the controllers watch only the test's namespace;
//! * `--leader-election-namespace ns`: the Lease is per test (leader election stays on unless
//!   a test passes `--enable-leader-election=false`);
//! * `POD_NAMESPACE=kruise-system` (created if missing), as deployed: the certificate Secret is
//!   shared by every test's manager, as by the replicas of one deployment, and the test's
//!   namespace is not the manager's own (whose pods the pod webhook leaves alone);
//! * `--webhook-only-namespace ns` and `--webhook-configuration-suffix ns`: the webhook
//!   configurations are the test's own (`kruise-*-webhook-configuration-<ns>`) and apply to its
//!   namespace only; they are deleted when the test's [`ManagerSpec`] is dropped (keep it for
//!   the whole test; drop the processes first).
//!
//! The webhook server listens on 127.0.0.1 at a port chosen once per [`ManagerSpec`], so a
//! restarted manager (same spec) serves at the same address.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Result, fresh_log_file, kubectl, testbed_kubeconfig, wait_for};

/// The manager's own namespace (`POD_NAMESPACE`), as OpenKruise installs it.
pub const KRUISE_NAMESPACE: &str = "kruise-system";

/// Sum of the `controller_runtime_reconcile_total{controller="<controller>",...}` samples (all
/// `result`s) of a manager's metrics exposition (OpenMetrics text).
pub fn reconciles(metrics: &str, controller: &str) -> f64 {
    let label = format!("controller=\"{controller}\"");
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("controller_runtime_reconcile_total{"))
        .filter_map(|rest| {
            let (labels, value) = rest.split_once('}')?;
            labels.split(',').any(|kv| kv == label).then_some(())?;
            value.split_whitespace().next()?.parse::<f64>().ok()
        })
        .sum()
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `GET path` over HTTP/1.0: `(status, body)`, or `None` if nothing answers within 10 s.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let get = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.ok()?;
        let status = buf.get(9..12)?.parse().ok()?;
        let body = buf.split_once("\r\n\r\n")?.1.to_string();
        Some((status, body))
    };
    tokio::time::timeout(Duration::from_secs(10), get)
        .await
        .ok()
        .flatten()
}

/// How to start the managers of one test.
#[derive(Debug, Clone)]
pub struct ManagerSpec {
    binary: PathBuf,
    ns: String,
    webhooks: bool,
    webhook_port: u16,
    extra: Vec<String>,
    started: usize,
    kubeconfig: Option<PathBuf>,
    pod_namespace: String,
}

impl ManagerSpec {
    /// Managers of `binary` (pass `env!("CARGO_BIN_EXE_kruise-manager")`) for namespace `ns`,
    /// with the webhook server on.
    pub fn new(binary: impl AsRef<Path>, ns: &str) -> Self {
        let out = kubectl(
            &["apply", "-f", "-"],
            Some(&format!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {KRUISE_NAMESPACE}\n"
            )),
        )
        .expect("kubectl");
        assert!(
            out.success,
            "creating namespace {KRUISE_NAMESPACE}: {}",
            out.stderr
        );
        Self {
            binary: binary.as_ref().to_owned(),
            ns: ns.to_owned(),
            webhooks: true,
            webhook_port: free_port(),
            extra: Vec::new(),
            started: 0,
            kubeconfig: None,
            pod_namespace: KRUISE_NAMESPACE.to_owned(),
        }
    }

    /// Runs the manager as if deployed in `namespace` (`POD_NAMESPACE`; default
    /// [`KRUISE_NAMESPACE`]).
    pub fn pod_namespace(mut self, namespace: &str) -> Self {
        self.pod_namespace = namespace.to_owned();
        self
    }

    /// The port its webhook server listens on (127.0.0.1), the same for every process of this
    /// spec.
    pub fn webhook_port(&self) -> u16 {
        self.webhook_port
    }

    /// Extra flags.
    pub fn args(mut self, extra: &[&str]) -> Self {
        self.extra.extend(extra.iter().map(|s| s.to_string()));
        self
    }

    /// Connects with this kubeconfig instead of the testbed's admin one.
    pub fn kubeconfig(mut self, path: impl AsRef<Path>) -> Self {
        self.kubeconfig = Some(path.as_ref().to_owned());
        self
    }

    /// Turns the webhook server off (the caller says why in its test).
    pub fn without_webhooks(mut self) -> Self {
        self.webhooks = false;
        self
    }

    /// Starts one manager process. Its log goes to `target/e2e-logs/<ns>-manager-<n>.log`
    /// (emptied first: tests read it back).
    pub fn start(&mut self) -> ManagerProcess {
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (file, log) =
            fresh_log_file(&format!("{}-manager-{}.log", self.ns, self.started)).expect("log file");
        self.started += 1;
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--kubeconfig")
            .arg(self.kubeconfig.clone().unwrap_or_else(testbed_kubeconfig))
            .args(["--namespace", &self.ns])
            .args(["--leader-election-namespace", &self.ns])
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .arg("--health-probe-addr")
            .arg(health.to_string())
            .arg("-v")
            .arg(std::env::var("KRUISE_E2E_MANAGER_V").unwrap_or_else(|_| "1".into()));
        if self.webhooks {
            cmd.env("POD_NAMESPACE", &self.pod_namespace)
                .args(["--webhook-host", "127.0.0.1"])
                .args(["--webhook-bind-address", "127.0.0.1"])
                .args(["--webhook-port", &self.webhook_port.to_string()])
                .args(["--webhook-only-namespace", &self.ns])
                .args(["--webhook-configuration-suffix", &self.ns]);
        } else {
            cmd.arg("--webhook-server=false");
        }
        let child = cmd
            .args(&self.extra)
            .stdout(Stdio::from(file.try_clone().expect("log file")))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("start kruise-manager");
        ManagerProcess {
            child: Some(child),
            log,
            metrics,
            health,
        }
    }
}

/// A running manager; SIGKILLed on drop.
#[derive(Debug)]
pub struct ManagerProcess {
    child: Option<Child>,
    /// Its log file.
    pub log: PathBuf,
    /// Its metrics address.
    pub metrics: SocketAddr,
    /// Its health-probe address.
    pub health: SocketAddr,
}

impl ManagerProcess {
    /// SIGKILL, as a crash would; waits for the process to be gone. The webhook
    /// configurations stay (as after a real crash).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits until `/readyz` answers 200: caches synced and, with webhooks, the certificate
    /// and configurations in place.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let health = self.health;
        let log = self.log.display().to_string();
        wait_for(
            &format!("manager /readyz 200 (log {log})"),
            timeout,
            || async {
                http_get(health, "/readyz")
                    .await
                    .filter(|(status, _)| *status == 200)
            },
        )
        .await
        .map(|_| ())
    }

    /// The `/metrics` exposition, if the manager answers.
    pub async fn metrics_text(&self) -> Option<String> {
        let (status, body) = http_get(self.metrics, "/metrics").await?;
        (status == 200).then_some(body)
    }

    /// The admission requests served at webhook path `path` (e.g. `/validate-pod`), every
    /// code: the sum of `controller_runtime_webhook_requests_total{webhook="<path>"}`; `None`
    /// when the manager does not answer.
    pub async fn webhook_requests(&self, path: &str) -> Option<f64> {
        let text = self.metrics_text().await?;
        let label = format!("webhook=\"{path}\"");
        Some(
            text.lines()
                .filter(|l| {
                    l.starts_with("controller_runtime_webhook_requests_total{")
                        && l.contains(&label)
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum(),
        )
    }
}

impl Drop for ManagerProcess {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("manager log: {}", self.log.display());
        }
    }
}

impl Drop for ManagerSpec {
    fn drop(&mut self) {
        if !self.webhooks || self.started == 0 {
            return;
        }
        for (kind, which) in [
            ("mutatingwebhookconfiguration", "mutating"),
            ("validatingwebhookconfiguration", "validating"),
        ] {
            let name = format!("kruise-{which}-webhook-configuration-{}", self.ns);
            let _ = kubectl(&["delete", kind, &name, "--ignore-not-found"], None);
        }
    }
}

/// A test's kruise-manager: started from a [`ManagerSpec`] and ready, can be killed (as a
/// crash) and restarted. SIGKILLed on drop.
pub struct TestManager {
    /// The running process.
    pub process: ManagerProcess,
    spec: ManagerSpec,
}

impl TestManager {
    /// What an e2e test of one controller starts with: the testbed (every CRD installed and
    /// Established, at least `kwok_nodes` kwok nodes — 0: whatever is there), a fresh namespace
    /// named from `prefix`, and a ready manager (`binary`, e.g.
    /// `env!("CARGO_BIN_EXE_kruise-manager")`) watching that namespace with the extra `args`.
    ///
    /// # Panics
    /// When the testbed is unreachable, the CRDs or nodes cannot be applied, or the manager does
    /// not become ready within `timeout`.
    pub async fn setup(
        binary: impl AsRef<Path>,
        prefix: &str,
        args: &[&str],
        kwok_nodes: usize,
        timeout: Duration,
    ) -> (crate::TestEnv, crate::TestNamespace, Self) {
        let env = crate::TestEnv::connect().await.expect("testbed");
        crate::install_crds(&env).await.expect("CRDs");
        if kwok_nodes > 0 {
            crate::ensure_kwok_nodes(&env, kwok_nodes)
                .await
                .expect("kwok nodes");
        }
        let ns = env.namespace(prefix).await.expect("test namespace");
        let spec = ManagerSpec::new(binary, ns.name()).args(args);
        let manager = Self::start(spec, timeout).await;
        (env, ns, manager)
    }

    /// Starts a manager and waits for `/readyz` (caches synced, webhooks configured).
    ///
    /// # Panics
    /// When it does not become ready within `timeout`.
    pub async fn start(mut spec: ManagerSpec, timeout: Duration) -> Self {
        let process = spec.start();
        process.wait_ready(timeout).await.expect("manager ready");
        Self { process, spec }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Waits until webhook `webhook` (e.g. `vpodeviction.kb.io`) of this manager's own
    /// configurations has a `matchConditions` expression containing `needle` — the scope the
    /// manager derives from the cluster's objects (a budget, a SidecarSet) has reached the
    /// configuration object. (The API server's own view may lag it a moment more: a test that
    /// needs the call itself also watches [`ManagerProcess::webhook_requests`].)
    ///
    /// Errors: the timeout passed first.
    pub async fn wait_webhook_condition(
        &self,
        webhook: &str,
        needle: &str,
        timeout: Duration,
    ) -> Result<()> {
        let ns = self.spec.ns.clone();
        wait_for(
            &format!("{webhook}'s matchConditions to mention {needle}"),
            timeout,
            || async {
                ["mutating", "validating"]
                    .iter()
                    .any(|which| {
                        let name = format!("kruise-{which}-webhook-configuration-{ns}");
                        let kind = format!("{which}webhookconfiguration");
                        let Ok(out) = kubectl(&["get", &kind, &name, "-o", "json"], None) else {
                            return false;
                        };
                        let Ok(cfg) = serde_json::from_str::<serde_json::Value>(&out.stdout) else {
                            return false;
                        };
                        cfg["webhooks"].as_array().into_iter().flatten().any(|h| {
                            h["name"] == webhook
                                && h["matchConditions"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .any(|c| {
                                        c["expression"].as_str().is_some_and(|e| e.contains(needle))
                                    })
                        })
                    })
                    .then_some(())
            },
        )
        .await
    }

    /// A new process (the old one killed first), ready.
    ///
    /// # Panics
    /// When it does not become ready within `timeout`.
    pub async fn restart(&mut self, timeout: Duration) {
        self.process.kill();
        self.process = self.spec.start();
        self.process
            .wait_ready(timeout)
            .await
            .expect("manager ready");
    }
}
