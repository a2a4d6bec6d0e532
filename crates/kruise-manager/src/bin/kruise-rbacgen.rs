//! Writes the manager's ClusterRole (`role.yaml`, derived from the controller registry, see
//! `kruise_manager::rbac`) into the directory given as argument (default `config/rbac`). With
//! `--check`, compares instead and exits 1 listing stale files.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = PathBuf::from("config/rbac");
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                eprintln!("usage: kruise-rbacgen [--check] [DIR]   (DIR defaults to config/rbac)");
                return ExitCode::SUCCESS;
            }
            other => dir = PathBuf::from(other),
        }
    }
    match kruise_manager::manifests::write_or_check(
        "kruise-rbacgen",
        &dir,
        &kruise_manager::rbac::manifests(),
        check,
    ) {
        Ok(msg) => {
            eprintln!("{msg}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("{msg}");
            ExitCode::FAILURE
        }
    }
}
