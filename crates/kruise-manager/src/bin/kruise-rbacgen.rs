//! Writes the manager's ClusterRole (`role.yaml`, derived from the controller registry, see
//! `kruise_manager::rbac`) into the directory given as argument (default `config/rbac`). With
//! `--check`, compares instead and exits 1 listing stale files.

fn main() -> std::process::ExitCode {
    kruise_manager::manifests::generator_main(
        "kruise-rbacgen",
        "config/rbac",
        &kruise_manager::rbac::manifests(),
    )
}
