use super::*;

/// Every case of `vectors.tsv` (Go's `StrategicMergePatch` on
/// `hack/golden/inputs/strategicpatch_inputs.jsonl`): the same document, or the same error.
#[test]
fn matches_apimachinery_on_every_vector() {
    let mut failures = Vec::new();
    let mut n = 0;
    for line in include_str!("vectors.tsv")
        .lines()
        .filter(|l| !l.is_empty())
    {
        n += 1;
        let c: Vec<&str> = line.splitn(4, '\t').collect();
        let [ty, original, patch, want] = c[..] else {
            panic!("bad vector line {line:?}");
        };
        let schema = match ty {
            "Pod" => Schema::Pod,
            "PodTemplateSpec" => Schema::PodTemplateSpec,
            other => panic!("unknown type {other}"),
        };
        let original: Value = serde_json::from_str(original).unwrap();
        let patch_v: Value = serde_json::from_str(patch).unwrap();
        let got = strategic_merge_patch(&original, &patch_v, schema);
        let ok = match (&got, want.strip_prefix("error: ")) {
            (Err(e), Some(w)) => e.replace('\n', " ") == w,
            (Ok(v), None) => {
                as_go_marshals(v.clone()) == serde_json::from_str::<Value>(want).unwrap()
            }
            _ => false,
        };
        if !ok {
            failures.push(format!("patch {patch}\n  go:   {want}\n  rust: {got:?}"));
        }
    }
    assert!(n >= 30, "only {n} vectors");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `v` as Go's `json.Marshal` writes it back: a float64 with an integral value has no fraction
/// (80.0 is written `80`).
fn as_go_marshals(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e21 {
                Value::from(f as i64)
            } else {
                Value::Number(n)
            }
        }
        Value::Array(a) => Value::Array(a.into_iter().map(as_go_marshals).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, as_go_marshals(v))).collect())
        }
        other => other,
    }
}

#[test]
fn schema_table_holds_the_merge_keys_of_pod_lists() {
    let (t, meta) = lookup_slice(Ty::Struct("PodSpec"), "containers").unwrap();
    assert!(matches!(t, Ty::Struct("Container")));
    assert_eq!(meta.merge_key, "name");
    let (_, meta) = lookup_slice(Ty::Struct("PodSpec"), "volumes").unwrap();
    assert_eq!(meta.strategies, vec!["merge", "retainKeys"]);
    let (_, meta) = lookup_slice(Ty::Struct("PodSpec"), "tolerations").unwrap();
    assert_eq!(meta.merge_key, "");
    assert!(lookup_struct(Ty::Struct("PodSpec"), "bogus").is_err());
}

#[test]
fn go_formats_values_as_fmt_does() {
    let v: Value =
        serde_json::from_str(r#"{"b":[1,"x",null],"a":{"c":true},"f":1.5,"g":1e21}"#).unwrap();
    assert_eq!(go_fmt(&v), "map[a:map[c:true] b:[1 x <nil>] f:1.5 g:1e+21]");
}
