//! Running a component with only its generated ClusterRole: a ServiceAccount bound to the role
//! from `config/rbac/<file>`, and a kubeconfig using its token.

use std::path::PathBuf;

use crate::{Error, Result, kubectl, repo_root, testbed_kubeconfig};

/// A kubeconfig whose user is a ServiceAccount bound (by a ClusterRoleBinding) to nothing but a
/// generated ClusterRole. The binding is deleted on drop.
#[derive(Debug)]
pub struct BoundKubeconfig {
    /// The kubeconfig file (under `target/e2e-logs`).
    pub path: PathBuf,
    binding: String,
}

impl Drop for BoundKubeconfig {
    fn drop(&mut self) {
        let _ = kubectl(
            &[
                "delete",
                "clusterrolebinding",
                &self.binding,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

fn check(out: crate::KubectlOutput, what: &str) -> Result<crate::KubectlOutput> {
    if out.success {
        Ok(out)
    } else {
        Err(Error::Command(format!("{what}: {}", out.stderr)))
    }
}

/// Applies `config/rbac/<role_file>` (ClusterRole `role`), creates ServiceAccount `account` in
/// namespace `ns` bound to it, and writes a kubeconfig authenticating with a 2-hour token of
/// that account.
///
/// # Errors
/// [`Error::Command`] naming the step that failed.
pub fn bound_kubeconfig(
    ns: &str,
    account: &str,
    role_file: &str,
    role: &str,
) -> Result<BoundKubeconfig> {
    let manifest = std::fs::read_to_string(repo_root().join("config/rbac").join(role_file))
        .map_err(|e| Error::Command(format!("reading config/rbac/{role_file}: {e}")))?;
    check(
        kubectl(
            &["apply", "--server-side", "--force-conflicts", "-f", "-"],
            Some(&manifest),
        )?,
        "applying the ClusterRole",
    )?;
    let binding = format!("kruise-e2e-{ns}-{account}");
    let objects = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {account}\n  namespace: {ns}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {binding}\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\n\
         subjects:\n- kind: ServiceAccount\n  name: {account}\n  namespace: {ns}\n"
    );
    check(
        kubectl(&["apply", "-f", "-"], Some(&objects))?,
        "binding the ServiceAccount",
    )?;
    let guard = BoundKubeconfig {
        path: repo_root().join(format!("target/e2e-logs/{ns}-{account}-kubeconfig.yaml")),
        binding,
    };
    let token = check(
        kubectl(
            &["create", "token", account, "-n", ns, "--duration", "2h"],
            None,
        )?,
        "creating a token",
    )?;
    let admin = kube::config::Kubeconfig::read_from(testbed_kubeconfig())
        .map_err(|e| Error::Command(format!("reading the testbed kubeconfig: {e}")))?;
    let cluster = admin
        .clusters
        .first()
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| Error::Command("testbed kubeconfig has no cluster".into()))?;
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "testbed", "cluster": {
            "server": cluster.server,
            "certificate-authority": cluster.certificate_authority,
            "certificate-authority-data": cluster.certificate_authority_data}}],
        "users": [{"name": account, "user": {"token": token.stdout.trim()}}],
        "contexts": [{"name": "sa", "context": {"cluster": "testbed", "user": account}}],
        "current-context": "sa",
    });
    let yaml = serde_yaml_ng::to_string(&kubeconfig)
        .map_err(|e| Error::Command(format!("encoding the kubeconfig: {e}")))?;
    std::fs::write(&guard.path, yaml)
        .map_err(|e| Error::Command(format!("writing {}: {e}", guard.path.display())))?;
    Ok(guard)
}
