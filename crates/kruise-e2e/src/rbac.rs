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
    wait_effective(&guard.path, &manifest, account)?;
    Ok(guard)
}

/// Waits (up to a minute) until every rule of the ClusterRole in `manifest` is granted to the
/// kubeconfig's user: the API server authorizes from informers of roles and bindings, so a
/// binding just created can still be refused for a moment, and a component started right away
/// would log transient `forbidden` errors that are not a gap in the role. One `kubectl auth
/// can-i` per rule (its first verb on its first concrete resource, in every namespace).
///
/// # Errors
/// [`Error::Command`] naming the rule still refused after a minute.
fn wait_effective(kubeconfig: &std::path::Path, manifest: &str, account: &str) -> Result<()> {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use serde::Deserialize;
    let mut checks: Vec<Vec<String>> = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(manifest) {
        let Ok(role) = ClusterRole::deserialize(doc) else {
            continue;
        };
        for rule in role.rules.unwrap_or_default() {
            let group = rule
                .api_groups
                .as_ref()
                .and_then(|g| g.first())
                .filter(|g| g.as_str() != "*");
            let resource = rule
                .resources
                .as_ref()
                .and_then(|r| r.iter().find(|r| !r.contains('*')));
            let (Some(group), Some(resource), Some(verb)) = (
                group,
                resource,
                rule.verbs.iter().find(|v| v.as_str() != "*"),
            ) else {
                continue;
            };
            let (resource, sub) = match resource.split_once('/') {
                Some((r, s)) => (r, Some(s)),
                None => (resource.as_str(), None),
            };
            let name = if group.is_empty() {
                resource.to_owned()
            } else {
                format!("{resource}.{group}")
            };
            let mut args = vec![
                "auth".into(),
                "can-i".into(),
                verb.clone(),
                name,
                "-A".into(),
            ];
            if let Some(sub) = sub {
                args.extend(["--subresource".into(), sub.to_owned()]);
            }
            checks.push(args);
        }
    }
    if checks.is_empty() {
        return Err(Error::Command(format!(
            "no rule of the ClusterRole for {account} could be checked (manifest not a ClusterRole?)"
        )));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for args in &checks {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        loop {
            if crate::kubectl_with(kubeconfig, &args, None)?.success {
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err(Error::Command(format!(
                    "ServiceAccount {account} is still refused `kubectl {}` a minute after binding",
                    args.join(" ")
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    Ok(())
}
