//! kruise-rs installed the way users install it: container images in the testbed's registry
//! (`hack/image/build.sh`) and the Helm chart `charts/kruise-rs` (`hack/chart/helm.sh`), the
//! manager and the daemon running as pods on the real nodes of an [`OwnTestbed`].

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::testbed::OwnTestbed;
use crate::{Error, Result, repo_root};

/// Which binaries the images hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// The debug binaries the test suite builds anyway (`build.sh --dev`, tag `<version>-dev`):
    /// seconds to package.
    Dev,
    /// The static release binaries `make image` ships (minutes to build on two cores).
    Release,
}

impl ImageKind {
    /// `Release` when `KRUISE_E2E_RELEASE_IMAGES=1`, else `Dev`.
    pub fn from_env() -> Self {
        match std::env::var("KRUISE_E2E_RELEASE_IMAGES").as_deref() {
            Ok("1") | Ok("true") => Self::Release,
            _ => Self::Dev,
        }
    }
}

/// Builds the kruise-manager and kruise-daemon images and pushes them to `registry`
/// (`127.0.0.1:<port>`); returns their tag.
///
/// Errors: `hack/image/build.sh` failed (its output in the message).
pub fn push_images(registry: &str, kind: ImageKind) -> Result<String> {
    let version = env!("CARGO_PKG_VERSION");
    let tag = match kind {
        ImageKind::Dev => format!("{version}-dev"),
        ImageKind::Release => version.to_string(),
    };
    let mut cmd = Command::new(repo_root().join("hack/image/build.sh"));
    cmd.args(["--registry", registry, "--tag", &tag])
        .current_dir(repo_root());
    if kind == ImageKind::Dev {
        cmd.arg("--dev");
    }
    let out = cmd
        .output()
        .map_err(|e| Error::Command(format!("hack/image/build.sh: {e}")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "hack/image/build.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(tag)
}

/// Runs `hack/chart/helm.sh ARGS` against `tb` (Helm's own state in the testbed's directory);
/// returns stdout.
///
/// Errors: helm exited non-zero (its stderr in the message).
pub fn helm(tb: &OwnTestbed, args: &[&str]) -> Result<String> {
    let home = tb.dir().join("helm");
    let out = Command::new(repo_root().join("hack/chart/helm.sh"))
        .args(args)
        .current_dir(repo_root())
        .env("KUBECONFIG", tb.kubeconfig())
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .map_err(|e| Error::Command(format!("helm: {e}")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "helm {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Chart values that run kruise-rs from the testbed registry's images tagged `tag` on the real
/// nodes of `tb`, written by `hack/chart/testbed-values.sh` (what the README's install uses):
/// manager and daemon on the real nodes, reaching the API server at the host's address, the
/// daemon on each node's own containerd socket. Returns the values file's path.
///
/// Errors: the script failed (e.g. the instance has no real node).
pub fn testbed_values(tb: &OwnTestbed, tag: &str) -> Result<PathBuf> {
    let out = Command::new(repo_root().join("hack/chart/testbed-values.sh"))
        .arg(tag)
        .env("KRUISE_TESTBED_DIR", tb.dir())
        .env("KRUISE_TESTBED_PORT_BASE", tb.base().to_string())
        .output()
        .map_err(|e| Error::Command(format!("hack/chart/testbed-values.sh: {e}")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "hack/chart/testbed-values.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let path = tb.dir().join("values-testbed.yaml");
    std::fs::write(&path, &out.stdout).map_err(|e| Error::Command(format!("values: {e}")))?;
    Ok(path)
}

/// Runs `hack/swap/openkruise.sh ARGS --src src` for `tb`; returns stdout.
fn openkruise_script(tb: &OwnTestbed, args: &[&str], src: &Path) -> Result<String> {
    let out = Command::new(repo_root().join("hack/swap/openkruise.sh"))
        .args(args)
        .arg("--src")
        .arg(src)
        .current_dir(repo_root())
        .env("KRUISE_TESTBED_DIR", tb.dir())
        .env("KRUISE_TESTBED_PORT_BASE", tb.base().to_string())
        .output()
        .map_err(|e| Error::Command(format!("hack/swap/openkruise.sh: {e}")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "hack/swap/openkruise.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds OpenKruise's manager and daemon from the source tree `src` (tag v1.9.0) into one
/// image in `tb`'s registry (`openkruise/kruise-manager:v1.9.0`, as OpenKruise's Dockerfile).
///
/// Errors: the Go build or the push failed.
pub fn openkruise_image(tb: &OwnTestbed, src: &Path) -> Result<()> {
    openkruise_script(tb, &["image"], src).map(|_| ())
}

/// OpenKruise's own `config/default` from `src`, set up for `tb`'s real nodes (see
/// `hack/swap/openkruise.sh`): the manifests to `kubectl apply`.
///
/// Errors: kustomize failed, or `tb` has not exactly one real node.
pub fn openkruise_manifest(tb: &OwnTestbed, src: &Path) -> Result<String> {
    openkruise_script(tb, &["manifest"], src)
}
