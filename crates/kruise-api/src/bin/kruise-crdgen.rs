//! Writes every CRD as YAML, one file per CRD named `<group>_<plural>.yaml`, into the directory
//! given as the first argument (default `config/crd/bases`). With `--check`, compares instead
//! of writing and exits 1 listing the stale files.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut check = false;
    let mut dir = PathBuf::from("config/crd/bases");
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                eprintln!(
                    "usage: kruise-crdgen [--check] [DIR]   (DIR defaults to config/crd/bases)"
                );
                return ExitCode::SUCCESS;
            }
            other => dir = PathBuf::from(other),
        }
    }
    if !check && let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("kruise-crdgen: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut stale = Vec::new();
    let crds = kruise_api::crds::all();
    for crd in &crds {
        let file = dir.join(format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural));
        let yaml = match kruise_api::crds::to_yaml(crd) {
            Ok(y) => y,
            Err(e) => {
                eprintln!("kruise-crdgen: cannot serialize {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        };
        if check {
            if std::fs::read_to_string(&file).ok().as_deref() != Some(yaml.as_str()) {
                stale.push(file);
            }
        } else if let Err(e) = std::fs::write(&file, yaml) {
            eprintln!("kruise-crdgen: cannot write {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    }
    if check {
        // A checked-in file for a CRD that no longer exists is stale too.
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let p = e.path();
                let known = crds.iter().any(|c| {
                    p.file_name().and_then(|n| n.to_str())
                        == Some(&format!("{}_{}.yaml", c.spec.group, c.spec.names.plural))
                });
                if !known && p.extension().is_some_and(|x| x == "yaml") {
                    stale.push(p);
                }
            }
        }
        if !stale.is_empty() {
            eprintln!("kruise-crdgen: generated CRDs are stale; run `make crds` and commit:");
            for f in &stale {
                eprintln!("  {}", f.display());
            }
            return ExitCode::FAILURE;
        }
        eprintln!(
            "kruise-crdgen: {} CRDs in {} are up to date",
            crds.len(),
            dir.display()
        );
    } else {
        eprintln!(
            "kruise-crdgen: wrote {} CRDs to {}",
            crds.len(),
            dir.display()
        );
    }
    ExitCode::SUCCESS
}
