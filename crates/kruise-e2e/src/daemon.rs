//! A `kruise-daemon` process for a testbed real node, run as OpenKruise's DaemonSet runs it on
//! each node: `NODE_NAME` set, the node's CRI socket found under its `/var/run` (here the real
//! node's private state directory), default flags otherwise. SIGKILLed on drop.
//!
//! One daemon per node at a time, as in a cluster: tests that start one for the same node in
//! the same test binary must not run at the same time (keep them in one test, or serialize).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::manager::{free_port, http_get};
use crate::{Error, Result, log_file, testbed_kubeconfig, testbed_state_dir, wait_for};

/// The `kruise-manager` binary built beside `daemon_binary` (a kruise-daemon test's
/// `env!("CARGO_BIN_EXE_kruise-daemon")`: `cargo test --workspace` builds both, since
/// kruise-manager's own e2e tests need it).
///
/// # Errors
/// [`Error::Command`] telling how to build it when it is missing.
pub fn manager_binary_beside(daemon_binary: &str) -> Result<PathBuf> {
    let p = Path::new(daemon_binary).with_file_name("kruise-manager");
    if p.exists() {
        Ok(p)
    } else {
        Err(Error::Command(format!(
            "{} not built: run `cargo build -p kruise-manager` (or `cargo test --workspace`)",
            p.display()
        )))
    }
}

/// The directory holding real node `node`'s containerd socket (`containerd/containerd.sock`),
/// the daemon's `--var-run-path`.
pub fn real_node_var_run(node: &str) -> PathBuf {
    testbed_state_dir().join("realnode").join(node)
}

/// A running kruise-daemon.
#[derive(Debug)]
pub struct TestDaemon {
    child: Option<Child>,
    kubeconfig: PathBuf,
    binary: PathBuf,
    node: String,
    started: u32,
    /// Its log file.
    pub log: PathBuf,
    /// Its metrics and health address.
    pub addr: SocketAddr,
    /// The ServiceAccount binding it authenticates with ([`TestDaemon::start_bound`]), deleted
    /// with it.
    bound: Option<crate::rbac::BoundKubeconfig>,
}

impl TestDaemon {
    /// Starts kruise-daemon for real node `node` and waits for `/readyz` (CRI connected, pod
    /// cache synced).
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the log when it is not ready within `timeout`.
    pub async fn start(binary: &Path, node: &str, timeout: Duration) -> Result<Self> {
        Self::start_with_kubeconfig(binary, node, &testbed_kubeconfig(), timeout).await
    }

    /// [`TestDaemon::start`] authenticating with `kubeconfig` (e.g. a ServiceAccount bound to
    /// the generated `kruise-daemon-role` only, see [`crate::rbac::bound_kubeconfig`]).
    ///
    /// # Errors
    /// As [`TestDaemon::start`].
    pub async fn start_with_kubeconfig(
        binary: &Path,
        node: &str,
        kubeconfig: &Path,
        timeout: Duration,
    ) -> Result<Self> {
        let mut d = Self {
            child: None,
            kubeconfig: kubeconfig.to_owned(),
            binary: binary.to_owned(),
            node: node.to_owned(),
            started: 0,
            log: PathBuf::new(),
            addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
            bound: None,
        };
        d.spawn(timeout).await?;
        Ok(d)
    }

    /// [`TestDaemon::start_with_kubeconfig`] as the daemon runs in a cluster: authenticated as
    /// ServiceAccount `kruise-daemon` of namespace `ns`, bound to the generated
    /// `kruise-daemon-role` only (`config/rbac/daemon_role.yaml`); the binding lives as long as
    /// the daemon.
    ///
    /// # Errors
    /// The binding could not be made, or as [`TestDaemon::start`].
    pub async fn start_bound(
        binary: &Path,
        node: &str,
        ns: &str,
        timeout: Duration,
    ) -> Result<Self> {
        let bound = crate::rbac::bound_kubeconfig(
            ns,
            "kruise-daemon",
            "daemon_role.yaml",
            "kruise-daemon-role",
        )?;
        let mut d = Self::start_with_kubeconfig(binary, node, &bound.path, timeout).await?;
        d.bound = Some(bound);
        Ok(d)
    }

    async fn spawn(&mut self, timeout: Duration) -> Result<()> {
        let io = |e: std::io::Error| Error::Command(format!("starting kruise-daemon: {e}"));
        let (file, log) = log_file(&format!(
            "daemon-{}-{}-{}.log",
            self.node,
            std::process::id(),
            self.started
        ))
        .map_err(io)?;
        self.started += 1;
        let child = Command::new(&self.binary)
            .env("NODE_NAME", &self.node)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--var-run-path")
            .arg(real_node_var_run(&self.node))
            .arg("--addr")
            .arg(self.addr.to_string())
            .arg("-v")
            .arg(std::env::var("KRUISE_E2E_DAEMON_V").unwrap_or_else(|_| "2".into()))
            .stdout(Stdio::from(file.try_clone().map_err(io)?))
            .stderr(Stdio::from(file))
            .spawn()
            .map_err(io)?;
        self.child = Some(child);
        self.log = log;
        let addr = self.addr;
        wait_for(
            &format!("kruise-daemon /readyz 200 (log {})", self.log.display()),
            timeout,
            || async { http_get(addr, "/readyz").await.filter(|(s, _)| *s == 200) },
        )
        .await
        .map(|_| ())
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A new process (the old one killed first), ready.
    ///
    /// # Errors
    /// As [`TestDaemon::start`].
    pub async fn restart(&mut self, timeout: Duration) -> Result<()> {
        self.kill();
        self.spawn(timeout).await
    }

    /// The `/metrics` exposition, if the daemon answers.
    pub async fn metrics_text(&self) -> Option<String> {
        let (status, body) = http_get(self.addr, "/metrics").await?;
        (status == 200).then_some(body)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("kruise-daemon log: {}", self.log.display());
        }
    }
}
