//! Writes the webhook manifests (`manifests.yaml`: both webhook configurations and the
//! `kruise-webhook-service` Service; `crd-conversion/webhook_in_<plural>.yaml`: the CRD patches
//! turning the conversion webhook on) into the directory given as argument (default
//! `config/webhook`). With `--check`, compares instead and exits 1 listing stale files.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = PathBuf::from("config/webhook");
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                eprintln!(
                    "usage: kruise-webhookgen [--check] [DIR]   (DIR defaults to config/webhook)"
                );
                return ExitCode::SUCCESS;
            }
            other => dir = PathBuf::from(other),
        }
    }
    match kruise_manager::manifests::write_or_check(
        "kruise-webhookgen",
        &dir,
        &kruise_manager::webhooks::controller::manifests(),
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
