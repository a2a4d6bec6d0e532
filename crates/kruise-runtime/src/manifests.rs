//! Writing and checking generated manifests (`make crds` / `make crds-check`).

use std::path::Path;

/// Writes `files` (`(relative path, content)`) under `dir`, or with `check` compares them and
/// fails listing the stale ones. `tool` names the generator in messages.
///
/// # Errors
/// A message for an I/O failure or, with `check`, for stale files.
pub fn write_or_check(
    tool: &str,
    dir: &Path,
    files: &[(String, String)],
    check: bool,
) -> Result<String, String> {
    let mut stale = Vec::new();
    for (name, content) in files {
        let path = dir.join(name);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
                stale.push(path.display().to_string());
            }
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("{tool}: cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, content)
            .map_err(|e| format!("{tool}: cannot write {}: {e}", path.display()))?;
    }
    if !stale.is_empty() {
        return Err(format!(
            "{tool}: generated manifests are stale; run `make crds` and commit:\n  {}",
            stale.join("\n  ")
        ));
    }
    let verb = if check {
        "are up to date in"
    } else {
        "written to"
    };
    Ok(format!(
        "{tool}: {} manifests {verb} {}",
        files.len(),
        dir.display()
    ))
}

/// The `main` of a manifest generator: `TOOL [--check] [DIR]` (DIR defaults to `default_dir`)
/// writes `files` under DIR, or with `--check` fails listing stale ones.
pub fn generator_main(
    tool: &str,
    default_dir: &str,
    files: &[(String, String)],
) -> std::process::ExitCode {
    let mut check = false;
    let mut dir = std::path::PathBuf::from(default_dir);
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                eprintln!("usage: {tool} [--check] [DIR]   (DIR defaults to {default_dir})");
                return std::process::ExitCode::SUCCESS;
            }
            other => dir = std::path::PathBuf::from(other),
        }
    }
    match write_or_check(tool, &dir, files, check) {
        Ok(msg) => {
            eprintln!("{msg}");
            std::process::ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("{msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
