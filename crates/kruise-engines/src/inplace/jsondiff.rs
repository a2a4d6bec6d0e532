//! RFC 6902 diff of two JSON documents with the same operation shapes as the Go library
//! OpenKruise v1.9.0 uses (`github.com/appscode/jsonpatch` `CreatePatch`), so that the in-place
//! decision (which looks at each operation's kind and path) is the same:
//!
//! - objects are compared key by key (`add` for new keys, `remove` for dropped ones);
//! - a value that was `null` and is now set is an `add`; a change of JSON type is a `replace`;
//! - numbers compare by their `f64` value (Go decodes them all as `float64`);
//! - arrays are compared index by index, except "simple" arrays (see [`is_simple_array`]),
//!   which get a Levenshtein edit script (`remove`/`add`/`replace` at indices).
//!
//! Only the operation kind and path matter to callers; values are carried for convenience.

use serde_json::Value;

/// Kind of a JSON-patch operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    Add,
    Remove,
    Replace,
}

/// One JSON-patch operation (`value` is `Null` for `remove`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Op {
    pub kind: OpKind,
    pub path: String,
    pub value: Value,
}

impl Op {
    fn new(kind: OpKind, path: String, value: Value) -> Self {
        Op { kind, path, value }
    }
}

/// The operations turning `a` into `b`.
pub(crate) fn create_patch(a: &Value, b: &Value) -> Vec<Op> {
    let mut out = Vec::new();
    handle_values(a, b, "", &mut out);
    out
}

/// Appends one reference token (escaped per RFC 6901) to a JSON pointer.
fn make_path(path: &str, token: &str) -> String {
    let token = token.replace('~', "~0").replace('/', "~1");
    if path.is_empty() {
        format!("/{token}")
    } else if path.ends_with('/') {
        format!("{path}{token}")
    } else {
        format!("{path}/{token}")
    }
}

/// Discriminant of a JSON value's Go type.
fn kind_of(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn is_basic(v: &Value) -> bool {
    matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_))
}

/// Deep equality with Go semantics for numbers (compared as `f64`).
pub(crate) fn go_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| go_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| go_equal(xv, yv)))
        }
        _ => a == b,
    }
}

/// An array is "simple" when its elements are scalars; the first object element found decides
/// for the rest of the array (it is simple when all its values are scalars or `null`). Any other
/// element (`null`, an array) makes the array non-simple. This mirrors the Go library.
fn is_simple_array(arr: &[Value]) -> bool {
    for v in arr {
        match v {
            Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
            Value::Object(m) => return m.values().all(|v| v.is_null() || is_basic(v)),
            _ => return false,
        }
    }
    true
}

fn diff_objects(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
    path: &str,
    out: &mut Vec<Op>,
) {
    for (key, bv) in b {
        let p = make_path(path, key);
        match a.get(key) {
            None => out.push(Op::new(OpKind::Add, p, bv.clone())),
            Some(av) => handle_values(av, bv, &p, out),
        }
    }
    for key in a.keys() {
        if !b.contains_key(key) {
            out.push(Op::new(OpKind::Remove, make_path(path, key), Value::Null));
        }
    }
}

fn handle_values(a: &Value, b: &Value, path: &str, out: &mut Vec<Op>) {
    match (a, b) {
        (Value::Null, Value::Null) => {}
        (Value::Null, _) => out.push(Op::new(OpKind::Add, path.to_string(), b.clone())),
        _ if kind_of(a) != kind_of(b) => {
            out.push(Op::new(OpKind::Replace, path.to_string(), b.clone()))
        }
        (Value::Object(x), Value::Object(y)) => diff_objects(x, y, path, out),
        (Value::Array(x), Value::Array(y)) => {
            if is_simple_array(x) && is_simple_array(y) {
                edit_distance_ops(x, y, path, out);
            } else {
                let n = x.len().min(y.len());
                for i in (n..x.len()).rev() {
                    out.push(Op::new(
                        OpKind::Remove,
                        make_path(path, &i.to_string()),
                        Value::Null,
                    ));
                }
                for (i, item) in y.iter().enumerate().skip(n) {
                    out.push(Op::new(
                        OpKind::Add,
                        make_path(path, &i.to_string()),
                        item.clone(),
                    ));
                }
                for i in 0..n {
                    handle_values(&x[i], &y[i], &make_path(path, &i.to_string()), out);
                }
            }
        }
        _ => {
            if !go_equal(a, b) {
                out.push(Op::new(OpKind::Replace, path.to_string(), b.clone()));
            }
        }
    }
}

/// Levenshtein script between two simple arrays, walked back from the end as the Go library
/// does (deletions preferred, then insertions, then substitutions).
fn edit_distance_ops(s: &[Value], t: &[Value], path: &str, out: &mut Vec<Op>) {
    let (m, n) = (s.len(), t.len());
    let mut d = vec![vec![0usize; n + 1]; m + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for j in 1..=n {
        for i in 1..=m {
            d[i][j] = if go_equal(&s[i - 1], &t[j - 1]) {
                d[i - 1][j - 1]
            } else {
                (d[i - 1][j - 1] + 1)
                    .min(d[i][j - 1] + 1)
                    .min(d[i - 1][j] + 1)
            };
        }
    }
    let (mut i, mut j) = (m, n);
    loop {
        if i > 0 && d[i - 1][j] + 1 == d[i][j] {
            out.push(Op::new(
                OpKind::Remove,
                make_path(path, &(i - 1).to_string()),
                Value::Null,
            ));
            i -= 1;
        } else if j > 0 && d[i][j - 1] + 1 == d[i][j] {
            out.push(Op::new(
                OpKind::Add,
                make_path(path, &i.to_string()),
                t[j - 1].clone(),
            ));
            j -= 1;
        } else if i > 0 && j > 0 && d[i - 1][j - 1] + 1 == d[i][j] {
            let p = make_path(path, &(i - 1).to_string());
            if is_basic(&s[0]) {
                out.push(Op::new(OpKind::Replace, p, t[j - 1].clone()));
            } else {
                // The Go library compares s[j-1] (not s[i-1]) with t[j-1] here; the two agree on
                // the diagonal, which is where same-length edits land.
                match s.get(j - 1) {
                    Some(old) => handle_values(old, &t[j - 1], &p, out),
                    None => out.push(Op::new(OpKind::Replace, p, t[j - 1].clone())),
                }
            }
            i -= 1;
            j -= 1;
        } else if i > 0 && j > 0 && d[i - 1][j - 1] == d[i][j] {
            i -= 1;
            j -= 1;
        } else {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(a: Value, b: Value) -> Vec<(OpKind, String)> {
        let mut v: Vec<_> = create_patch(&a, &b)
            .into_iter()
            .map(|o| (o.kind, o.path))
            .collect();
        v.sort_by(|x, y| x.1.cmp(&y.1));
        v
    }

    use OpKind::*;

    #[test]
    fn objects_and_scalars() {
        assert_eq!(ops(json!({"a":1}), json!({"a":1.0})), vec![]);
        assert_eq!(
            ops(json!({"a":1}), json!({"a":2})),
            vec![(Replace, "/a".into())]
        );
        assert_eq!(
            ops(json!({"a":1}), json!({"a":"1"})),
            vec![(Replace, "/a".into())]
        );
        assert_eq!(
            ops(json!({"a":null}), json!({"a":"x"})),
            vec![(Add, "/a".into())]
        );
        assert_eq!(
            ops(json!({"a":"x"}), json!({"a":null})),
            vec![(Replace, "/a".into())]
        );
        assert_eq!(
            ops(
                json!({"a":1,"b":{"c":true}}),
                json!({"b":{"c":false},"d":[]})
            ),
            vec![
                (Remove, "/a".into()),
                (Replace, "/b/c".into()),
                (Add, "/d".into())
            ]
        );
        assert_eq!(
            ops(json!({"m":{"a/b~c":"1"}}), json!({"m":{"a/b~c":"2"}})),
            vec![(Replace, "/m/a~1b~0c".into())]
        );
    }

    #[test]
    fn container_image_change_is_a_replace_both_for_simple_and_complex_arrays() {
        // complex containers (resources object) -> index-wise
        let a = json!({"containers":[{"name":"a","image":"x","resources":{}},{"name":"b","image":"y","resources":{}}]});
        let b = json!({"containers":[{"name":"a","image":"x2","resources":{}},{"name":"b","image":"y","resources":{}}]});
        assert_eq!(ops(a, b), vec![(Replace, "/containers/0/image".into())]);
        // simple containers -> edit distance, same result
        let a = json!({"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"},{"name":"c","image":"z"}]});
        let b = json!({"containers":[{"name":"a","image":"x2"},{"name":"b","image":"y"},{"name":"c","image":"z2"}]});
        assert_eq!(
            ops(a, b),
            vec![
                (Replace, "/containers/0/image".into()),
                (Replace, "/containers/2/image".into())
            ]
        );
    }

    #[test]
    fn arrays_growing_and_shrinking() {
        let a = json!({"l":[{"x":[1]},{"x":[2]}]});
        let b = json!({"l":[{"x":[1]}]});
        assert_eq!(ops(a.clone(), b.clone()), vec![(Remove, "/l/1".into())]);
        assert_eq!(ops(b, a), vec![(Add, "/l/1".into())]);
        // simple arrays of strings
        assert_eq!(
            ops(json!(["a", "b"]), json!(["a", "c"])),
            vec![(Replace, "/1".into())]
        );
        assert_eq!(
            ops(json!(["a", "b"]), json!(["b"])),
            vec![(Remove, "/0".into())]
        );
        assert_eq!(
            ops(json!(["a"]), json!(["a", "b"])),
            vec![(Add, "/1".into())]
        );
    }

    #[test]
    fn simple_array_rule_uses_first_object() {
        assert!(is_simple_array(&[json!({"a":"b"}), json!({"c":{"d":1}})]));
        assert!(!is_simple_array(&[json!({"c":{"d":1}}), json!({"a":"b"})]));
        assert!(!is_simple_array(&[json!(null)]));
        assert!(!is_simple_array(&[json!("a"), json!([1])]));
        assert!(is_simple_array(&[]));
    }

    #[test]
    fn unequal_simple_object_arrays_do_not_panic() {
        let a = json!([{"n":"a"}]);
        let b = json!([{"n":"b"},{"n":"c"},{"n":"d"}]);
        assert!(!create_patch(&a, &b).is_empty());
        assert!(!create_patch(&b, &a).is_empty());
    }
}
