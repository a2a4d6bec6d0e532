//! Writes kruise-daemon's ClusterRole (`daemon_role.yaml`, see `kruise_daemon::rbac`) into the
//! directory given as argument (default `config/rbac`). With `--check`, compares instead and
//! exits 1 listing stale files.

fn main() -> std::process::ExitCode {
    kruise_runtime::manifests::generator_main(
        "kruise-daemon-rbacgen",
        "config/rbac",
        &kruise_daemon::rbac::manifests(),
    )
}
