//! A testbed of a test's own: `hack/testbed/testbed.sh up` with its state under a temporary
//! directory and its own block of ports, so a test can change cluster-wide state (CRDs, webhook
//! configurations, a Helm release in `kruise-system`) without touching the shared testbed the
//! other tests use. Stopped and wiped when dropped.
//!
//! Ports: `base` .. `base + 10 + 2 * real_nodes` (see `testbed.sh`; the shared testbed uses
//! 16440). Real nodes of two instances coexist on one host (`realnode.sh`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::{Error, Result, repo_root};

/// A running testbed instance owned by one test.
pub struct OwnTestbed {
    dir: PathBuf,
    base: u16,
}

impl OwnTestbed {
    /// Starts an instance named `name` (its state directory is `<tmp>/kruise-rs-<name>-<pid>`)
    /// on the ports from `base`, with `kwok_nodes` fake and `real_nodes` real nodes.
    ///
    /// Errors: `testbed.sh up` failed (its stderr in the message).
    pub fn up(name: &str, base: u16, kwok_nodes: u32, real_nodes: u32) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("kruise-rs-{name}-{}", std::process::id()));
        let tb = Self { dir, base };
        let out = tb.script(&[
            "up",
            "--nodes",
            &kwok_nodes.to_string(),
            "--real-nodes",
            &real_nodes.to_string(),
        ]);
        if !out.status.success() {
            return Err(Error::Command(format!(
                "testbed {name} (port base {base}) did not start: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(tb)
    }

    /// Runs `hack/testbed/testbed.sh ARGS` for this instance.
    pub fn script(&self, args: &[&str]) -> Output {
        Command::new(repo_root().join("hack/testbed/testbed.sh"))
            .args(args)
            .env("KRUISE_TESTBED_DIR", &self.dir)
            .env("KRUISE_TESTBED_PORT_BASE", self.base.to_string())
            .output()
            .expect("hack/testbed/testbed.sh runs")
    }

    /// The instance's state directory (`KRUISE_TESTBED_DIR`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The first port of its block (`KRUISE_TESTBED_PORT_BASE`).
    pub fn base(&self) -> u16 {
        self.base
    }

    /// Its admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The value of `export NAME=...` in `testbed.sh env` (e.g. `KRUISE_TESTBED_REGISTRY`,
    /// `KRUISE_TESTBED_APISERVER_HOST`).
    pub fn env_var(&self, name: &str) -> Result<String> {
        let out = self.script(&["env"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let prefix = format!("export {name}=");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(str::to_owned)
            .ok_or_else(|| Error::Command(format!("testbed.sh env prints no {name}:\n{text}")))
    }

    /// Runs kubectl against this instance with `stdin`; returns stdout.
    ///
    /// Errors: kubectl exited non-zero (its stderr in the message).
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let out = crate::kubectl_with(&self.kubeconfig(), args, stdin)?;
        if !out.success {
            return Err(Error::Command(format!("kubectl {args:?}: {}", out.stderr)));
        }
        Ok(out.stdout)
    }

    /// An admin client of this instance.
    pub async fn client(&self) -> Result<kube::Client> {
        let path = self.kubeconfig();
        let kubeconfig = Kubeconfig::read_from(&path)
            .map_err(|e| Error::TestbedUnavailable(format!("{}: {e}", path.display())))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| Error::TestbedUnavailable(format!("{}: {e}", path.display())))?;
        kube::Client::try_from(config).map_err(|e| Error::TestbedUnavailable(e.to_string()))
    }
}

impl Drop for OwnTestbed {
    fn drop(&mut self) {
        let _ = self.script(&["down", "--wipe"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
