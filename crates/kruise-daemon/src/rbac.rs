//! kruise-daemon's least-privilege ClusterRole, derived from the controllers it runs;
//! `kruise-daemon-rbacgen` writes it to `config/rbac/daemon_role.yaml` (CI fails when stale).

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kruise_runtime::rbac::{READ, cluster_role, rule};

/// Name of the ClusterRole (OpenKruise's chart: `kruise-daemon-role`).
pub const CLUSTER_ROLE: &str = "kruise-daemon-role";

/// What the containermeta controller needs: the node's pods (informer), its report written
/// through `pods/status`, and the `Killing` Events of its restarts.
pub fn containermeta_rules() -> Vec<PolicyRule> {
    vec![
        rule("", &["pods"], READ),
        rule("", &["pods/status"], &["get", "patch", "update"]),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
        rule("", &["events"], &["create", "patch"]),
    ]
}

/// What the ContainerRecreateRequest controller needs: its node's requests (informer), their
/// status, and the `Killing` / `FailedPreStopHook` Events.
pub fn containerrecreate_rules() -> Vec<PolicyRule> {
    vec![
        rule("apps.kruise.io", &["containerrecreaterequests"], READ),
        rule(
            "apps.kruise.io",
            &["containerrecreaterequests/status"],
            &["get", "patch", "update"],
        ),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
        rule("", &["events"], &["create", "patch"]),
    ]
}

/// What the pod prober needs: its node's NodePodProbe (informer), its status, and the
/// `KruiseProbeSucceeded` / `KruiseProbeFailed` Events on pods.
pub fn podprobe_rules() -> Vec<PolicyRule> {
    vec![
        rule("apps.kruise.io", &["nodepodprobes"], READ),
        rule(
            "apps.kruise.io",
            &["nodepodprobes/status"],
            &["get", "patch", "update"],
        ),
        rule("events.k8s.io", &["events"], &["create", "patch"]),
        rule("", &["events"], &["create", "patch"]),
    ]
}

/// The daemon's ClusterRole: every controller it runs.
pub fn daemon_cluster_role() -> ClusterRole {
    cluster_role(
        CLUSTER_ROLE,
        containermeta_rules()
            .into_iter()
            .chain(containerrecreate_rules())
            .chain(podprobe_rules()),
    )
}

/// `config/rbac/daemon_role.yaml`.
pub fn manifests() -> Vec<(String, String)> {
    vec![kruise_runtime::rbac::manifest(
        "daemon_role.yaml",
        "kruise-daemon-rbacgen",
        &daemon_cluster_role(),
    )]
}
