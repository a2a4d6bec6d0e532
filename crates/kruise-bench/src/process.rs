//! The managers the benchmarks run: started, checked and stopped as processes, their readiness,
//! and what `/proc` says of them (RSS).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kruise_e2e::manager::free_port;
use kruise_e2e::{log_file, testbed_kubeconfig};

use crate::metrics::{http_get, scrape_requests};

/// A kruise-manager started by the benchmark: leader election off, webhooks served at
/// 127.0.0.1 (rollout, scale) or as the admission scenario says, watching one namespace or all,
/// metrics and health on free loopback ports, log in `target/e2e-logs/`. SIGKILLed on drop.
pub(crate) struct Manager {
    child: Option<Child>,
    pub(crate) pid: u32,
    pub(crate) metrics: SocketAddr,
    pub(crate) health: SocketAddr,
    pub(crate) log: PathBuf,
}

impl Manager {
    pub(crate) fn start(
        binary: &Path,
        ns: Option<&str>,
        extra: &[String],
        webhook_port: u16,
        log_name: &str,
    ) -> Result<Self, String> {
        let mut args: Vec<String> = ns
            .iter()
            .flat_map(|ns| ["--namespace".to_string(), ns.to_string()])
            .collect();
        args.extend_from_slice(extra);
        let port = webhook_port.to_string();
        Self::spawn(
            binary,
            &args,
            &[
                ("POD_NAMESPACE", kruise_e2e::manager::KRUISE_NAMESPACE),
                ("WEBHOOK_HOST", "127.0.0.1"),
                ("WEBHOOK_PORT", &port),
                ("OPENKRUISE_WEBHOOK_PORT", &port),
            ],
            log_name,
        )
    }

    /// Starts `binary` with the testbed's kubeconfig, leader election off, metrics and health on
    /// free loopback ports, then `args`, with `envs` added to its environment.
    pub(crate) fn spawn(
        binary: &Path,
        args: &[String],
        envs: &[(&str, &str)],
        log_name: &str,
    ) -> Result<Self, String> {
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (file, log) = log_file(log_name).map_err(|e| format!("log file {log_name}: {e}"))?;
        let stderr = file.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(testbed_kubeconfig())
            .arg("--enable-leader-election=false")
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .arg("--health-probe-addr")
            .arg(health.to_string())
            .args(args)
            .envs(envs.iter().copied())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        Ok(Self {
            pid: child.id(),
            child: Some(child),
            metrics,
            health,
            log,
        })
    }

    /// Fails if the process has exited (with its status and log path).
    pub(crate) fn check_running(&mut self) -> Result<(), String> {
        if let Some(c) = self.child.as_mut()
            && let Ok(Some(status)) = c.try_wait()
        {
            return Err(format!(
                "manager pid {} exited ({status}); log {}",
                self.pid,
                self.log.display()
            ));
        }
        Ok(())
    }

    /// SIGTERM (a clean shutdown), then SIGKILL if it is still running after 40 s.
    pub(crate) async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(40);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Manager {
    /// SIGKILL, as a crash: the process leaves everything (webhook configurations) in place.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A field of `/proc/<pid>/status` in kB (e.g. `VmHWM`, `VmRSS`), as MiB.
pub(crate) fn proc_status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Waits until the manager's `/readyz` answers 200 (caches synced; for OpenKruise also its
/// webhook server), failing if the process exits first.
pub(crate) async fn wait_ready(
    http: &reqwest::Client,
    m: &mut Manager,
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        m.check_running()?;
        if let Ok((200, _)) = http_get(http, m.health, "/readyz").await {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "manager not ready (/readyz) after {timeout:?}; log {}",
                m.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the manager's `/metrics` answers (its servers are up).
pub(crate) async fn wait_metrics(
    http: &reqwest::Client,
    m: &mut Manager,
    timeout: Duration,
) -> Result<(), String> {
    let start = Instant::now();
    loop {
        m.check_running()?;
        match scrape_requests(http, m).await {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() > timeout => {
                return Err(format!("{e} (log {})", m.log.display()));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Whether `binary` is `hack/bench/openkruise-manager.sh`, the Go manager's wrapper: its
/// webhook configurations and CRD conversion must be undone once it has stopped.
pub(crate) fn is_openkruise(binary: &Path) -> bool {
    binary
        .file_name()
        .is_some_and(|n| n == "openkruise-manager.sh")
}

/// `openkruise-manager.sh --cleanup`: the Go manager's webhooks and CRD conversion removed, so
/// the next manager (and the benchmark's own writes) do not call a stopped webhook server.
pub(crate) fn openkruise_cleanup(binary: &Path) -> Result<(), String> {
    let status = Command::new(binary)
        .arg("--cleanup")
        .status()
        .map_err(|e| format!("{} --cleanup: {e}", binary.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} --cleanup: {status}", binary.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openkruise_wrapper_is_recognised_by_file_name() {
        assert!(is_openkruise(Path::new("hack/bench/openkruise-manager.sh")));
        assert!(!is_openkruise(Path::new("target/release/kruise-manager")));
    }
}
