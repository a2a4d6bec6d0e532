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
    let files = kruise_manager::webhooks::controller::manifests();
    let mut stale = Vec::new();
    for (name, yaml) in &files {
        let path = dir.join(name);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(yaml.as_str()) {
                stale.push(path);
            }
            continue;
        }
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            eprintln!("kruise-webhookgen: cannot create {}: {e}", parent.display());
            return ExitCode::FAILURE;
        }
        if let Err(e) = std::fs::write(&path, yaml) {
            eprintln!("kruise-webhookgen: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if check && !stale.is_empty() {
        eprintln!("kruise-webhookgen: webhook manifests are stale; run `make crds` and commit:");
        for f in &stale {
            eprintln!("  {}", f.display());
        }
        return ExitCode::FAILURE;
    }
    let verb = if check {
        "are up to date in"
    } else {
        "written to"
    };
    eprintln!(
        "kruise-webhookgen: {} webhook manifests {verb} {}",
        files.len(),
        dir.display()
    );
    ExitCode::SUCCESS
}
