//! Go's answers, recorded with Go's standard library (`encoding/json`, `time`) and a copy of
//! `metav1.Time`'s JSON methods: one JSON array a line,
//! - `["map", input, json.Marshal of the map[string]string decoded, error or ""]`;
//! - `["specs", input, json.Marshal of the map[string]SidecarSetUpgradeSpec decoded or null
//!   when json.Unmarshal errs]`;
//! - `["time", input, metav1.Time's JSON after time.Parse(time.RFC3339, input) or null when
//!   it errs]`.

use super::*;
use crate::sidecarset::control::encode_upgrade_specs;
use serde_json::Value;

const VECTORS: &str = include_str!("go_vectors.jsonl");

fn vectors(kind: &str) -> Vec<Vec<Value>> {
    let all: Vec<Vec<Value>> = VECTORS
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Vec<Value>| v[0] == kind)
        .collect();
    assert!(!all.is_empty());
    all
}

#[test]
fn string_maps_and_errors_as_go() {
    for v in vectors("map") {
        let input = v[1].as_str().unwrap();
        let expected: Option<BTreeMap<String, String>> =
            serde_json::from_str(v[2].as_str().unwrap()).unwrap();
        let error = v[3].as_str().unwrap();
        let (got, err) = string_map(input);
        assert_eq!(got, expected, "{input:?}");
        assert_eq!(err.as_deref().unwrap_or(""), error, "{input:?}");
    }
}

#[test]
fn upgrade_specs_as_go() {
    for v in vectors("specs") {
        let input = v[1].as_str().unwrap();
        let got = upgrade_specs(input)
            .ok()
            .map(|m| m.map_or_else(|| "null".to_string(), |m| encode_upgrade_specs(&m)));
        assert_eq!(got.as_deref(), v[2].as_str(), "{input:?}");
    }
}

#[test]
fn times_as_go() {
    for v in vectors("time") {
        let input = v[1].as_str().unwrap();
        let got = go_time_reformat(input).map(|t| match t {
            Some(t) => format!("\"{t}\""),
            None => "null".to_string(),
        });
        assert_eq!(got.as_deref(), v[2].as_str(), "{input:?}");
    }
}
