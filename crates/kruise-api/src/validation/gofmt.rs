//! How Go's `fmt` prints the values OpenKruise's webhooks put into their messages, where a
//! message embeds a Go rendering instead of JSON: `strconv.Quote` (`%q`), the gogo-protobuf
//! `String()` of a `*metav1.LabelSelector`, `%v` of IntOrString pointers and of decoded JSON.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Go's `strconv.Quote` for the strings webhooks see (printable text kept, `"`, `\` and control
/// characters escaped).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `%v` of a `[]string`: `[a b]` (`[]` for none).
pub fn string_slice_v(items: Option<&[String]>) -> String {
    format!("[{}]", items.unwrap_or_default().join(" "))
}

/// `(*metav1.LabelSelector).String()` (gogo-protobuf): `&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[v],},},}`,
/// `nil` for none.
pub fn label_selector_string(sel: Option<&LabelSelector>) -> String {
    let Some(sel) = sel else {
        return "nil".to_owned();
    };
    let mut labels = String::from("map[string]string{");
    for (k, v) in sel.match_labels.iter().flatten() {
        labels.push_str(&format!("{k}: {v},"));
    }
    labels.push('}');
    let mut exprs = String::from("[]LabelSelectorRequirement{");
    for e in sel.match_expressions.iter().flatten() {
        exprs.push_str(&format!(
            "LabelSelectorRequirement{{Key:{},Operator:{},Values:{},}},",
            e.key,
            e.operator,
            string_slice_v(e.values.as_deref())
        ));
    }
    exprs.push('}');
    format!("&LabelSelector{{MatchLabels:{labels},MatchExpressions:{exprs},}}")
}

/// `%v` of a `*intstr.IntOrString` field: its `String()` (`5`, `20%`), `<nil>` for none.
pub fn int_or_string_ptr_v(v: Option<&IntOrString>) -> String {
    match v {
        None => "<nil>".to_owned(),
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
    }
}

/// `%v` of a decoded JSON value as Go holds it (`map[string]interface{}`, `[]interface{}`,
/// `float64`, `string`, `bool`, `nil`): `map[a:1 b:[x y]]` (keys sorted), `<nil>` for null.
pub fn json_value_v(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => float_v(n.as_f64().unwrap_or(0.0)),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(json_value_v).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", json_value_v(&m[k])))
                .collect();
            format!("map[{}]", items.join(" "))
        }
    }
}

/// `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form (`1e+06`, `1.5e-05`) when the decimal exponent is below -4 or at least 6.
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // Shortest round-trip digits and decimal exponent, from Rust's `{:e}` ("1.2345e6").
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // 'g' with the shortest precision decides with precision 6.
    if !(-4..6).contains(&exp) {
        let (sign, digits) = mantissa
            .strip_prefix('-')
            .map_or(("", mantissa), |d| ("-", d));
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{digits}e{esign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// `%#v` of a `[]string`: `[]string{"a", "b"}` (`[]string(nil)` for none).
pub fn string_slice_sharp_v(v: Option<&[String]>) -> String {
    match v {
        None => "[]string(nil)".to_owned(),
        Some(v) => format!(
            "[]string{{{}}}",
            v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `%#v` of a `metav1.LabelSelector` value: `v1.LabelSelector{MatchLabels:map[string]string{…},
/// MatchExpressions:[]v1.LabelSelectorRequirement{…}}` (map keys sorted, as `fmt` prints them;
/// `(nil)` forms for absent fields).
pub fn label_selector_sharp_v(s: &LabelSelector) -> String {
    let labels = match &s.match_labels {
        None => "map[string]string(nil)".to_owned(),
        Some(m) => format!(
            "map[string]string{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let exprs = match &s.match_expressions {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(e) => format!(
            "[]v1.LabelSelectorRequirement{{{}}}",
            e.iter()
                .map(|r| format!(
                    "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                    quote(&r.key),
                    quote(&r.operator),
                    string_slice_sharp_v(r.values.as_deref())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{exprs}}}")
}

/// `%#v` of a `v1alpha1.TargetReference` (the PodUnavailableBudget and PersistentPodState
/// kinds share the Go rendering): `v1alpha1.TargetReference{APIVersion:"…", Kind:"…", Name:"…"}`.
pub fn target_reference_sharp_v(api_version: &str, kind: &str, name: &str) -> String {
    format!(
        "v1alpha1.TargetReference{{APIVersion:{}, Kind:{}, Name:{}}}",
        quote(api_version),
        quote(kind),
        quote(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_print_as_go_prints_them() {
        let sel: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]},
                                 {"key": "e", "operator": "Exists"}]
        }))
        .unwrap();
        assert_eq!(
            label_selector_string(Some(&sel)),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},LabelSelectorRequirement{Key:e,Operator:Exists,Values:[],},},}"
        );
        assert_eq!(label_selector_string(None), "nil");
        assert_eq!(quote("a\"b\\\n\u{1}é"), r#""a\"b\\\n\x01é""#);
        assert_eq!(
            json_value_v(
                &json!({"$patch": "bogus", "b": [1, "x"], "a": {"c": null}, "f": 1.5, "t": true})
            ),
            "map[$patch:bogus a:map[c:<nil>] b:[1 x] f:1.5 t:true]"
        );
        assert_eq!(float_v(1e6), "1e+06");
        assert_eq!(float_v(123456.0), "123456");
        assert_eq!(float_v(123456789.0), "1.23456789e+08");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5), "-2.5");
    }
}
