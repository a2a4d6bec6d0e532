//! The Argo CD resource-health scripts of `config/argocd/<group>/<Kind>/health.lua` (Argo CD's
//! `resource_customizations` layout: copy one into `argocd-cm` as
//! `resource.customizations.health.<group>_<Kind>`), run by a Lua 5.1 interpreter as Argo CD
//! runs them (gopher-lua is Lua 5.1): the object as the global `obj` (JSON `null` as `nil`), the
//! script returning `{status, message}`.
//!
//! The unit tests run every case of each kind's `health_test.yaml` (Argo CD's test format: an
//! object in `testdata/` and the health it must get); e2e tests run the same scripts against
//! live objects during rollouts (`crates/kruise-manager/tests`).

use std::path::PathBuf;

use mlua::{Lua, LuaSerdeExt, SerializeOptions, Table};
use serde_json::Value;

/// The kinds with a health script (`config/argocd/apps.kruise.io/<Kind>/health.lua`).
pub const KINDS: [&str; 4] = ["CloneSet", "StatefulSet", "DaemonSet", "SidecarSet"];

/// `config/argocd/apps.kruise.io/<kind>`.
pub fn kind_dir(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/argocd/apps.kruise.io")
        .join(kind)
}

/// What Argo CD reports for `obj`: `(status, message)` of `script`.
///
/// # Panics
/// When the script fails or returns something other than a table.
pub fn run(script: &str, obj: &Value) -> (String, String) {
    let lua = Lua::new();
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let value = lua.to_value_with(obj, options).expect("object into Lua");
    lua.globals().set("obj", value).expect("obj global");
    let hs: Table = lua
        .load(script)
        .eval()
        .expect("the script runs and returns a table");
    let text = |k: &str| hs.get::<Option<String>>(k).expect(k).unwrap_or_default();
    (text("status"), text("message"))
}

/// [`run`] with the script of `kind` (an object's `kind`).
///
/// # Panics
/// When there is no script for `kind`, or it fails.
pub fn health(kind: &str, obj: &Value) -> (String, String) {
    let path = kind_dir(kind).join("health.lua");
    let script =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    run(&script, obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn yaml(path: &Path) -> Value {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn every_kind_has_a_health_script_whose_cases_hold() {
        let mut failures = Vec::new();
        let mut statuses = std::collections::BTreeSet::new();
        for kind in KINDS {
            let dir = kind_dir(kind);
            let tests = yaml(&dir.join("health_test.yaml"));
            let cases = tests["tests"].as_array().expect("tests");
            assert!(cases.len() >= 5, "{kind}: too few cases");
            for case in cases {
                let input = case["inputPath"].as_str().expect("inputPath");
                let obj = yaml(&dir.join(input));
                assert_eq!(obj["kind"], kind, "{kind}/{input}: wrong kind");
                let field = |k: &str| {
                    case["healthStatus"][k]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                };
                let want = (field("status"), field("message"));
                let got = health(kind, &obj);
                statuses.insert(got.0.clone());
                if got != want {
                    failures.push(format!("{kind}/{input}: want {want:?}, got {got:?}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        for s in ["Healthy", "Progressing", "Suspended", "Degraded"] {
            assert!(statuses.contains(s), "no case reaches {s}");
        }
    }

    /// Healthy needs the spec observed: a done rollout whose generation moves ahead (a new spec
    /// not yet seen) is Progressing again, whatever its counts; so is one without a status.
    #[test]
    fn a_new_generation_is_never_healthy_until_observed() {
        for kind in KINDS {
            let mut obj = yaml(&kind_dir(kind).join("testdata/done.yaml"));
            assert_eq!(health(kind, &obj).0, "Healthy", "{kind}");
            let generation = obj["metadata"]["generation"].as_i64().expect("generation");
            obj["metadata"]["generation"] = Value::from(generation + 1);
            assert_eq!(health(kind, &obj).0, "Progressing", "{kind}");
            obj["status"] = Value::Null;
            assert_eq!(health(kind, &obj).0, "Progressing", "{kind} without status");
        }
    }
}
