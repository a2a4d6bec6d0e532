//! Kubernetes' strategic merge patch, as OpenKruise v1.9.0 applies it with apimachinery v0.32.10's
//! `strategicpatch.StrategicMergePatch(original, patch, &corev1.Pod{})` (WorkloadSpread subset
//! patches: `pkg/util/workloadspread/workloadspread.go`, the controller's and the validating
//! webhook's copies) and `&corev1.PodTemplateSpec{}` (UnitedDeployment subset patches,
//! `pkg/controller/uniteddeployment/adapter/*_adapter.go`).
//!
//! The patch meta (`patchStrategy`, `patchMergeKey` and the type of every field of the structs
//! reachable from `Pod` and `PodTemplateSpec`) is the table `patch_meta_v1_32.tsv`, generated
//! from k8s.io/api v0.32.10 by `hack/golden` (`patchMetaTable`); `vectors.tsv` holds Go's results
//! for `hack/golden/inputs/strategicpatch_inputs.jsonl` and the tests compare against them.
//!
//! What is reproduced (`mergeMap` with `MergeParallelList` and `IgnoreUnmatchedNulls`): maps merge
//! key by key, `null` deletes (and is dropped where the original has nothing), a value of another
//! type replaces; lists of a field with `patchStrategy: merge` merge their items by
//! `patchMergeKey` (scalars: union without duplicates), keeping the patch's order for its items
//! and the original's for the rest (`normalizeElementOrder`); other lists are replaced; the
//! directives `$patch` (`replace`, `delete`; `merge` is refused as Go refuses it),
//! `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`. Numbers
//! compare as Go's `util/json` decodes them: integers as `int64`, anything else as `float64`
//! (80 and 80.0 are different merge keys). Error texts are Go's.
//!
//! Not reproduced: Go's slice aliasing when a scalar merge list of the original holds duplicates
//! (Go may then reorder; duplicates there do not occur in objects a typed client wrote).

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

/// The Go type a patch is applied against (`dataStruct`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `corev1.Pod`.
    Pod,
    /// `corev1.PodTemplateSpec`.
    PodTemplateSpec,
}

/// `StrategicMergePatch(original, patch, schema)`: the patched document.
///
/// # Errors
/// What apimachinery returns, as its text (e.g. `map: map[image:nginx] does not contain declared
/// merge key: name`); a patch or original that is not a JSON object: `invalid JSON document`.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: Schema,
) -> Result<Value, String> {
    let (Some(o), Some(p)) = (as_doc(original), as_doc(patch)) else {
        return Err("invalid JSON document".into());
    };
    let root = Ty::Struct(match schema {
        Schema::Pod => "Pod",
        Schema::PodTemplateSpec => "PodTemplateSpec",
    });
    merge_map(Some(o), p, root).map(Value::Object)
}

/// A document: an object (`null` is read as `{}`, as `handleUnmarshal` reads nil).
fn as_doc(v: &Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m.clone()),
        Value::Null => Some(Map::new()),
        _ => None,
    }
}

const TABLE: &str = include_str!("patch_meta_v1_32.tsv");

/// One field of a Go struct: its kind after pointers, the struct its value (or a map's values,
/// or a list's items) has, `patchStrategy` and `patchMergeKey`.
struct Field {
    kind: &'static str,
    elem: &'static str,
    strategy: &'static str,
    merge_key: &'static str,
}

static FIELDS: LazyLock<HashMap<&'static str, Vec<(&'static str, Field)>>> = LazyLock::new(|| {
    let mut m: HashMap<&str, Vec<(&str, Field)>> = HashMap::new();
    for line in TABLE.lines().filter(|l| !l.is_empty()) {
        let c: Vec<&str> = line.split('\t').collect();
        let [owner, name, kind, elem, strategy, merge_key] = c[..] else {
            panic!("patch_meta_v1_32.tsv: bad line {line:?}");
        };
        m.entry(owner).or_default().push((
            name,
            Field {
                kind,
                elem,
                strategy,
                merge_key,
            },
        ));
    }
    m
});

/// `PatchMetaFromStruct.T` reduced to what the merge asks of it.
#[derive(Debug, Clone, Copy)]
enum Ty {
    /// A struct of the table (or a type with its own JSON encoding: no fields).
    Struct(&'static str),
    /// A map; its values' struct, if any.
    Map,
    /// A list; its items' struct (empty for scalars).
    Slice(&'static str),
    /// Anything else (`string`, `int32`, ...).
    Other(&'static str),
}

impl Ty {
    /// `reflect.Kind.String()` of the type (`Name()`).
    fn kind(self) -> &'static str {
        match self {
            Ty::Struct(_) => "struct",
            Ty::Map => "map",
            Ty::Slice(_) => "slice",
            Ty::Other(k) => k,
        }
    }

    fn of(f: &Field) -> Ty {
        match f.kind {
            "struct" => Ty::Struct(f.elem),
            "map" => Ty::Map,
            "slice" => Ty::Slice(f.elem),
            k if k.starts_with("custom:") => Ty::Struct(&k["custom:".len()..]),
            k => Ty::Other(k),
        }
    }
}

/// `PatchMeta`: the strategies (`patchStrategy` split at commas) and the merge key.
struct Meta {
    strategies: Vec<&'static str>,
    merge_key: &'static str,
}

/// `LookupPatchMetadataForStruct`: the type of field `key` of `t` and its patch meta (exact
/// name first, then a case-insensitive match, as encoding/json).
fn lookup_struct(t: Ty, key: &str) -> Result<(Ty, Meta), String> {
    let Ty::Struct(name) = t else {
        return Err(format!(
            "merging an object in json but data type is not struct, instead is: {}",
            t.kind()
        ));
    };
    let fields = FIELDS.get(name).map(Vec::as_slice).unwrap_or_default();
    let found = fields
        .iter()
        .find(|(n, _)| *n == key)
        .or_else(|| fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(key)));
    match found {
        Some((_, f)) => Ok((
            Ty::of(f),
            Meta {
                strategies: f.strategy.split(',').collect(),
                merge_key: f.merge_key,
            },
        )),
        None => Err(format!(
            "unable to find api field in struct {name} for the json field {}",
            go_quote(key)
        )),
    }
}

/// `LookupPatchMetadataForSlice`: the type of the items of list field `key` of `t`.
fn lookup_slice(t: Ty, key: &str) -> Result<(Ty, Meta), String> {
    let (field, meta) = lookup_struct(t, key)?;
    match field {
        // Items of scalars (strings, in every merge list of Pod) or of a struct.
        Ty::Slice("") => Ok((Ty::Other("string"), meta)),
        Ty::Slice(elem) => Ok((Ty::Struct(elem), meta)),
        _ => Err(format!(
            "expected slice or array type, but got: {}",
            t.kind()
        )),
    }
}

/// `extractRetainKeysPatchStrategy`: the strategy besides `retainKeys`.
fn other_strategy(strategies: &[&'static str]) -> Result<&'static str, String> {
    const RETAIN: &str = "retainKeys";
    match strategies {
        [] => Ok(""),
        [s] if *s == RETAIN => Ok(""),
        [s] => Ok(s),
        [a, b] if *a == RETAIN => Ok(b),
        [a, b] if *b == RETAIN => Ok(a),
        _ => Err(format!(
            "unexpected patch strategy: [{}]",
            strategies.join(" ")
        )),
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// `mergeMap`.
fn merge_map(
    original: Option<Map<String, Value>>,
    mut patch: Map<String, Value>,
    schema: Ty,
) -> Result<Map<String, Value>, String> {
    if let Some(d) = patch.get(DIRECTIVE).cloned() {
        return directive_in_map(&d, patch);
    }
    let mut original = original.unwrap_or_default();
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, schema)?;
    let keys: Vec<String> = patch.keys().cloned().collect();
    for key in keys {
        let Some(patch_v) = patch.remove(&key) else {
            continue;
        };
        let (k, is_delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => match rest.strip_prefix('/') {
                Some(k) => (k.to_owned(), true),
                None => return Err("invalid patch format of primitive list".into()),
            },
            None => (key, false),
        };
        if patch_v.is_null() {
            original.remove(&k);
            continue;
        }
        // Absent from the original, or of another type: the patch's value is taken (without
        // its nulls and directives); a deletion list then has nothing to delete from.
        if original
            .get(&k)
            .is_none_or(|o| go_type(o) != go_type(&patch_v))
        {
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                match remove_directives(v) {
                    Some(v) => original.insert(k, v),
                    None => original.remove(&k),
                };
            }
            continue;
        }
        match patch_v {
            Value::Object(p) => {
                let (sub, meta) = lookup_struct(schema, &k)?;
                let strategy = other_strategy(&meta.strategies)?;
                let Some(Value::Object(o)) = original.remove(&k) else {
                    unreachable!("same type")
                };
                let merged = if strategy != "replace" {
                    merge_map(Some(o), p, sub)?
                } else {
                    p
                };
                original.insert(k, Value::Object(merged));
            }
            Value::Array(p) => {
                let (sub, meta) = lookup_slice(schema, &k)?;
                let strategy = other_strategy(&meta.strategies)?;
                let Some(Value::Array(o)) = original.remove(&k) else {
                    unreachable!("same type")
                };
                let merged = if strategy == "merge" || is_delete_list {
                    merge_slice(o, p, sub, meta.merge_key, is_delete_list)?
                } else {
                    p
                };
                original.insert(k, Value::Array(merged));
            }
            other => match remove_directives(other) {
                Some(v) => {
                    original.insert(k, v);
                }
                None => {
                    original.remove(&k);
                }
            },
        }
    }
    Ok(original)
}

/// `handleDirectiveInMergeMap`.
fn directive_in_map(
    directive: &Value,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    match directive.as_str() {
        Some("replace") => {
            patch.remove(DIRECTIVE);
            Ok(patch)
        }
        Some("delete") => Ok(Map::new()),
        _ => Err(bad_patch_type(directive, &patch)),
    }
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> String {
    format!(
        "unknown patch type: {} in map: {}",
        go_fmt_s(directive),
        go_fmt(&Value::Object(m.clone()))
    )
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(m: &Map<String, Value>, key: &str) -> String {
    format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt(&Value::Object(m.clone()))
    )
}

/// `applyRetainKeysDirective` (merging, not combining patches).
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), String> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    const BAD: &str = "invalid patch format of retainKeys";
    let Value::Array(list) = retain else {
        return Err(BAD.into());
    };
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !list.iter().any(|x| x.as_str() == Some(k)) {
            return Err(BAD.into());
        }
    }
    original.retain(|k, _| list.iter().any(|x| x.as_str() == Some(k)));
    Ok(())
}

/// `mergePatchIntoOriginal`: each `$setElementOrder/<field>` with its list, merged and ordered
/// as the directive says (directive > patch > live order).
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Ty,
) -> Result<(), String> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let Some(field) = key
            .strip_prefix(SET_ELEMENT_ORDER)
            .and_then(|r| r.strip_prefix('/'))
            .map(str::to_owned)
        else {
            return Err("invalid patch format of setElementOrder list".into());
        };
        let original_list = match original.get(&field) {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            None => None,
        };
        let patch_list = match patch.get(&field) {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            None => None,
        };
        let (sub, meta) = lookup_slice(schema, &field)?;
        let strategy = other_strategy(&meta.strategies)?;
        validate_set_order(
            patch_list.as_deref().unwrap_or_default(),
            &order,
            meta.merge_key,
        )?;
        let merged = match (original_list.clone(), patch_list.clone()) {
            (Some(o), None) => o,
            (None, Some(p)) => match remove_directives(Value::Array(p)) {
                Some(Value::Array(v)) => v,
                _ => continue,
            },
            (Some(o), Some(p)) => {
                if strategy == "merge" {
                    merge_slice(o, p, sub, meta.merge_key, false)?
                } else {
                    p
                }
            }
            (None, None) => continue,
        };
        let (patch_items, server_only) = if meta.merge_key.is_empty() {
            partition_scalars(merged, &order)
        } else {
            partition_maps(merged, &order, meta.merge_key)?
        };
        let original_list = original_list.unwrap_or_default();
        let kind = element_type(&[&original_list, patch_list.as_deref().unwrap_or_default()])?;
        let both = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &original_list,
            meta.merge_key,
            kind,
        )?;
        original.insert(field.clone(), Value::Array(both));
        patch.remove(&field);
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`.
fn validate_set_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), String> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch.iter().collect()
    } else {
        let mut v = Vec::new();
        for item in patch {
            let Value::Object(m) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
                v.push(item);
            }
        }
        v
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if contains_directive(non_delete[pi]) {
            pi += 1;
            continue;
        }
        if merge_key_equal(non_delete[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_fmt(&Value::Array(patch.to_vec())),
            go_fmt(&Value::Array(order.to_vec()))
        ));
    }
    Ok(())
}

fn contains_directive(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE))
}

/// `mergeKeyValueEqual`.
fn merge_key_equal(left: &Value, right: &Value, key: &str) -> Result<bool, String> {
    if key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg_type("map[string]interface {}", left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg_type("map[string]interface {}", right));
    };
    let Some(lv) = l.get(key) else {
        return Err(no_merge_key(l, key));
    };
    let Some(rv) = r.get(key) else {
        return Err(no_merge_key(r, key));
    };
    Ok(lv == rv)
}

/// `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: Ty,
    merge_key: &str,
    is_delete_list: bool,
) -> Result<Vec<Value>, String> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_type(&[&original, &patch])?;
    let (original, patch, merged) = if kind != GoType::Map {
        if is_delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        (original, patch, dedup_scalars(both))
    } else {
        if merge_key.is_empty() {
            return Err(format!(
                "cannot merge lists without merge key for {}",
                schema.kind()
            ));
        }
        let (original, patch) = special_elements(original, patch, merge_key)?;
        let merged = merge_items(original.clone(), &patch, merge_key, schema)?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_scalars(merged, &patch)
    } else {
        partition_maps(merged, &patch, merge_key)?
    };
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)
}

/// `deduplicateScalars`, with its reordering.
fn dedup_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

/// `mergeSliceWithSpecialElements`: `$patch: delete` items remove theirs from the original,
/// `$patch: replace` makes the patch's other items the list.
fn special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let mut rest = Vec::new();
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            unreachable!("items of one type: maps")
        };
        match m.get(DIRECTIVE) {
            None => rest.push(v),
            Some(d) => match d.as_str() {
                Some("delete") => {
                    let Some(value) = m.get(merge_key) else {
                        return Err(no_merge_key(m, merge_key));
                    };
                    while let Some(i) = find_by_key(&original, merge_key, value)? {
                        original.remove(i);
                    }
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err("merging lists cannot yet be specified in the patch".into());
                }
                _ => return Err(bad_patch_type(d, m)),
            },
        }
    }
    if replace {
        return Ok((rest, Vec::new()));
    }
    Ok((original, rest))
}

/// `findMapInSliceBasedOnKeyValue`: the index of the first map whose `key` is `value`.
fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, String> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(format!("value for key {i} is not a map"));
        };
        if m.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `mergeSliceWithoutSpecialElements`: each patch item merged into the original's item with its
/// key, or appended.
fn merge_items(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    schema: Ty,
) -> Result<Vec<Value>, String> {
    for v in patch {
        let Value::Object(m) = v else {
            unreachable!("items of one type: maps")
        };
        let Some(value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        match find_by_key(&original, merge_key, value)? {
            Some(i) => {
                let Value::Object(o) = std::mem::take(&mut original[i]) else {
                    unreachable!("find_by_key checked")
                };
                original[i] = Value::Object(merge_map(Some(o), m.clone(), schema)?);
            }
            None => original.push(v.clone()),
        }
    }
    Ok(original)
}

/// `partitionPrimitivesByPresentInList`.
fn partition_scalars(list: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    list.into_iter().partition(|v| by.contains(v))
}

/// `partitionMapsByPresentInList`.
fn partition_maps(
    list: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for v in list {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        let Some(value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        if find_by_key(by, merge_key, value)?.is_some() {
            inside.push(v);
        } else {
            outside.push(v);
        }
    }
    Ok((inside, outside))
}

/// `normalizeElementOrder`: the patch's items in `patch_order`, the others in `server_order`,
/// interleaved by `mergeSortedSlice`.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, String> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted(
        server_only,
        patch,
        server_order,
        merge_key,
        kind,
    ))
}

/// `normalizeSliceOrder`: `to_sort` stably sorted by position in `order` (items `$patch:
/// delete` last).
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>, String> {
    let (mut keep, delete) = if kind == GoType::Map {
        for item in to_sort.iter().chain(order) {
            let Value::Object(m) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        to_sort
            .into_iter()
            .partition::<Vec<_>, _>(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
    } else {
        (to_sort, Vec::new())
    };
    // Every item is found in `order` on the paths that reach here, so Go's comparator (which
    // answers "less" for an item it cannot place) is a strict order and any stable sort agrees.
    keep.sort_by_key(|v| index_of(order, v, merge_key, kind).unwrap_or(usize::MAX));
    keep.extend(delete);
    Ok(keep)
}

/// `index`: the position of `v` in `list` (by merge key for maps).
fn index_of(list: &[Value], v: &Value, merge_key: &str, kind: GoType) -> Option<usize> {
    let key = |x: &Value| -> Value {
        if kind == GoType::Map {
            x.get(merge_key).cloned().unwrap_or(Value::Null)
        } else {
            x.clone()
        }
    };
    let wanted = key(v);
    list.iter().position(|x| key(x) == wanted)
}

/// `mergeSortedSlice`: the server-only items (`left`) inserted among the patch's (`right`)
/// where the live order puts them.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Vec<Value> {
    let less = |l: &Value, r: &Value| -> (bool, bool) {
        match (
            index_of(server_order, l, merge_key, kind),
            index_of(server_order, r, merge_key, kind),
        ) {
            (Some(li), Some(ri)) => (li < ri, true),
            _ => (false, false),
        }
    };
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if i >= left.len() {
            out.push(right[j].clone());
            j += 1;
        } else if j >= right.len() {
            out.push(left[i].clone());
            i += 1;
        } else {
            let (lt, both) = less(&left[i], &right[j]);
            if both && lt {
                out.push(left[i].clone());
                i += 1;
            } else {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    out
}

/// The Go type `util/json` decodes a value to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    Int64,
    Float64,
    String,
    Slice,
    Map,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_i64() => GoType::Int64,
        Value::Number(_) => GoType::Float64,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// `sliceElementType`: the one type of every item of `lists`.
fn element_type(lists: &[&[Value]]) -> Result<GoType, String> {
    let mut prev = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let t = go_type(v);
        match prev {
            None => {
                if t == GoType::Slice {
                    return Err("lists of lists are not supported".into());
                }
                prev = Some(t);
            }
            Some(p) if p != t => {
                let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                return Err(format!(
                    "list element types are not identical: {}",
                    go_fmt(&Value::Array(all))
                ));
            }
            Some(_) => {}
        }
    }
    prev.ok_or_else(|| "no elements in any of the given slices".to_owned())
}

/// `removeDirectives`: `None` when `v` itself is a `$patch` map; else `v` without them.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `discardNullValuesFromPatch`.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `mergepatch.ErrBadArgType`: Go's `reflect.TypeOf` names of the expected and received values.
fn bad_arg_type(expected: &str, actual: &Value) -> String {
    let actual = match go_type(actual) {
        GoType::Nil => "%!s(<nil>)",
        GoType::Bool => "bool",
        GoType::Int64 => "int64",
        GoType::Float64 => "float64",
        GoType::String => "string",
        GoType::Slice => "[]interface {}",
        GoType::Map => "map[string]interface {}",
    };
    format!("expected a {expected}, but received a {actual}")
}

/// Go's `%q` of a string (enough for field names).
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Go's `%s` of an interface holding `v` (a string prints bare).
fn go_fmt_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => format!("%!s({})", go_fmt(other)),
    }
}

/// Go's `%v` of the value `util/json` decodes `v` to: `map[k:v ...]` with sorted keys, `[a b]`,
/// strings bare, `<nil>`.
pub(crate) fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            format!(
                "map[{}]",
                keys.iter()
                    .map(|k| format!("{k}:{}", go_fmt(&m[*k])))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    }
}

/// `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): shortest digits, an exponent
/// below 1e-4 or from 1e21.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor() as i32;
    if !(-4..21).contains(&exp) {
        let s = format!("{f:e}");
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", e.abs())
    } else {
        format!("{f}")
    }
}
