//! The metadata part of an in-place update: a strategic-merge-patch document
//! `{"metadata": {...}}` computed from the old and new template metadata (as OpenKruise computes
//! a two-way merge patch between two pods that only carry that metadata), and its application to
//! a pod.
//!
//! Covered precisely: `labels` and `annotations` (per-key set / `null` delete, or the whole map
//! set / `null` when it appears / disappears) and `finalizers` (additions, plus the
//! `$deleteFromPrimitiveList/finalizers` directive for removals). Any other metadata field is
//! replaced as a whole (or deleted with `null`) — upstream would merge `ownerReferences` by uid,
//! a field pod templates do not use.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

const FINALIZERS: &str = "finalizers";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

fn is_absent(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

/// Two-way patch of string maps (`labels`, `annotations`): changed/added keys with their new
/// value, removed keys with `null`. `None` when equal.
fn diff_string_map(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in new {
        if old.get(k) != Some(v) {
            out.insert(k.clone(), v.clone());
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            out.insert(k.clone(), Value::Null);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Builds the metadata patch from the old to the new template metadata. Returns `{}` when they
/// are equal, otherwise `{"metadata": {...}}`.
pub(crate) fn two_way_patch(old: &ObjectMeta, new: &ObjectMeta) -> Value {
    let as_map = |m: &ObjectMeta| match serde_json::to_value(m) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let (old, new) = (as_map(old), as_map(new));
    let mut patch = Map::new();
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (o, n) = (old.get(key), new.get(key));
        if is_absent(o) && is_absent(n) {
            continue;
        }
        if o == n {
            continue;
        }
        if is_absent(n) {
            patch.insert(key.clone(), Value::Null);
            continue;
        }
        let n = n.cloned().unwrap_or(Value::Null);
        match (key.as_str(), o) {
            ("labels" | "annotations", Some(Value::Object(om))) => {
                if let Value::Object(nm) = &n
                    && let Some(d) = diff_string_map(om, nm)
                {
                    patch.insert(key.clone(), d);
                }
            }
            (FINALIZERS, Some(Value::Array(ol))) => {
                let Value::Array(nl) = &n else {
                    patch.insert(key.clone(), n.clone());
                    continue;
                };
                let added: Vec<Value> = nl.iter().filter(|v| !ol.contains(v)).cloned().collect();
                let removed: Vec<Value> = ol.iter().filter(|v| !nl.contains(v)).cloned().collect();
                if !added.is_empty() || !removed.is_empty() {
                    patch.insert(format!("{SET_ELEMENT_ORDER}{FINALIZERS}"), n.clone());
                }
                if !added.is_empty() {
                    patch.insert(FINALIZERS.to_string(), Value::Array(added));
                }
                if !removed.is_empty() {
                    patch.insert(
                        format!("{DELETE_FROM_PRIMITIVE_LIST}{FINALIZERS}"),
                        Value::Array(removed),
                    );
                }
            }
            _ => {
                patch.insert(key.clone(), n);
            }
        }
    }
    if patch.is_empty() {
        json!({})
    } else {
        json!({ "metadata": patch })
    }
}

/// Applies a patch produced by [`two_way_patch`] (or by OpenKruise for the same purpose) to
/// `meta`: OpenKruise's `StrategicMergePatch(pod, metaDataPatch, &v1.Pod{})`
/// ([`crate::strategicpatch`]) with only the metadata of the pod. Errors when the patch is not
/// an object, apimachinery refuses it, or the result is not valid metadata.
pub(crate) fn apply(meta: &mut ObjectMeta, patch: &Value) -> Result<(), String> {
    match patch {
        Value::Null => return Ok(()),
        Value::Object(_) => {}
        other => return Err(format!("patch is not an object: {other}")),
    }
    let pod = json!({ "metadata": serde_json::to_value(&*meta).map_err(|e| e.to_string())? });
    let merged = crate::strategicpatch::strategic_merge_patch(
        &pod,
        patch,
        crate::strategicpatch::Schema::Pod,
    )?;
    let Some(m) = merged.get("metadata") else {
        *meta = ObjectMeta::default();
        return Ok(());
    };
    *meta = serde_json::from_value(m.clone()).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn labels_and_annotations_diff() {
        let old = meta(json!({"labels":{"a":"1","b":"2"},"annotations":{"x":"1"}}));
        let new = meta(json!({"labels":{"a":"1","b":"3","c":"4"}}));
        assert_eq!(
            two_way_patch(&old, &new),
            json!({"metadata":{"labels":{"b":"3","c":"4"},"annotations":null}})
        );
        assert_eq!(two_way_patch(&old, &old), json!({}));
        let none = ObjectMeta::default();
        assert_eq!(
            two_way_patch(&none, &old),
            json!({"metadata":{"labels":{"a":"1","b":"2"},"annotations":{"x":"1"}}})
        );
        let removed = meta(json!({"labels":{"a":"1"}}));
        assert_eq!(
            two_way_patch(&old, &removed),
            json!({"metadata":{"labels":{"b":null},"annotations":null}})
        );
    }

    #[test]
    fn finalizers_and_other_fields() {
        let old = meta(json!({"finalizers":["f1","f2"],"generateName":"x-"}));
        let new = meta(json!({"finalizers":["f2","f3"]}));
        let p = two_way_patch(&old, &new);
        assert_eq!(
            p,
            json!({"metadata":{
                "$setElementOrder/finalizers":["f2","f3"],
                "finalizers":["f3"],
                "$deleteFromPrimitiveList/finalizers":["f1"],
                "generateName":null
            }})
        );
        let mut pod_meta =
            meta(json!({"name":"p","generateName":"x-","finalizers":["keep","f1","f2"]}));
        apply(&mut pod_meta, &p).unwrap();
        assert_eq!(
            pod_meta.finalizers,
            Some(vec!["keep".into(), "f2".into(), "f3".into()])
        );
        assert_eq!(pod_meta.generate_name, None);
        assert_eq!(pod_meta.name.as_deref(), Some("p"));
    }

    #[test]
    fn apply_merges_maps() {
        let mut m = meta(json!({"name":"p","labels":{"a":"1","b":"2","keep":"k"}}));
        apply(
            &mut m,
            &json!({"metadata":{"labels":{"b":null,"c":"3"},"annotations":{"n":"v"}}}),
        )
        .unwrap();
        assert_eq!(
            m.labels,
            Some(BTreeMap::from([
                ("a".to_string(), "1".to_string()),
                ("c".to_string(), "3".to_string()),
                ("keep".to_string(), "k".to_string())
            ]))
        );
        assert_eq!(
            m.annotations,
            Some(BTreeMap::from([("n".to_string(), "v".to_string())]))
        );
        apply(&mut m, &json!({"metadata":{"annotations":null}})).unwrap();
        assert_eq!(m.annotations, None);
        apply(&mut m, &json!({})).unwrap();
        apply(&mut m, &Value::Null).unwrap();
        assert!(apply(&mut m, &json!([1])).is_err());
        assert!(apply(&mut m, &json!({"metadata":"x"})).is_err());
        assert!(apply(&mut m, &json!({"metadata":{"labels":{"a":5}}})).is_err());
    }

    #[test]
    fn round_trip_patch_reproduces_new_metadata() {
        let old = meta(json!({"labels":{"a":"1","b":"2"},"annotations":{"x":"1","y":"2"}}));
        let new = meta(json!({"labels":{"a":"9"},"annotations":{"y":"2","z":"3"}}));
        let mut target = old.clone();
        apply(&mut target, &two_way_patch(&old, &new)).unwrap();
        assert_eq!(target, new);
    }
}
