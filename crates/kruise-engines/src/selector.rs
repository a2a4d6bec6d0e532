//! Label selectors as apimachinery prints and parses them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Formats a label selector as `kubectl`/`metav1.FormatLabelSelector` do (requirements sorted
/// by key; `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`), for `status.labelSelector`.
pub fn format_label_selector(selector: &LabelSelector) -> String {
    let mut reqs: Vec<(String, String)> = Vec::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        reqs.push((k.clone(), format!("{k}={v}")));
    }
    for e in selector.match_expressions.iter().flatten() {
        let mut values = e.values.clone().unwrap_or_default();
        values.sort();
        let text = match e.operator.as_str() {
            "In" => format!("{} in ({})", e.key, values.join(",")),
            "NotIn" => format!("{} notin ({})", e.key, values.join(",")),
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            other => format!("{} {other} ({})", e.key, values.join(",")),
        };
        reqs.push((e.key.clone(), text));
    }
    reqs.sort();
    reqs.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses a label selector string (a `/scale` subresource's `status.selector`, `kubectl -l`) as
/// apimachinery's `metav1.ParseToLabelSelector`: `k=v` and `k==v` go to `matchLabels`;
/// `k!=v` becomes `NotIn [v]`, `k in (a,b)` `In`, `k notin (a,b)` `NotIn`, `k` `Exists`, `!k`
/// `DoesNotExist`; an empty string is the empty selector (matches everything).
///
/// # Errors
/// A requirement without a key, an unclosed or unopened value list, or an unknown operator,
/// with the offending requirement in the message.
pub fn parse_label_selector(text: &str) -> Result<LabelSelector, String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let mut selector = LabelSelector::default();
    let requirement = |key: &str, op: &str, values: Option<Vec<String>>| LabelSelectorRequirement {
        key: key.to_string(),
        operator: op.to_string(),
        values,
    };
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("unbalanced parentheses in selector {text:?}"));
        }
    }
    if depth != 0 {
        return Err(format!("unclosed value list in selector {text:?}"));
    }
    parts.push(&text[start..]);
    if parts.len() == 1 && parts[0].trim().is_empty() {
        return Ok(selector);
    }
    for part in parts {
        let part = part.trim();
        let bad = || format!("invalid requirement {part:?} in selector {text:?}");
        if let Some((key, rest)) = part.split_once('(') {
            let values: Vec<String> = rest
                .strip_suffix(')')
                .ok_or_else(bad)?
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect();
            let mut words = key.split_whitespace();
            let (Some(key), Some(op), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad());
            };
            let op = match op {
                "in" => "In",
                "notin" => "NotIn",
                _ => return Err(bad()),
            };
            selector
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(requirement(key, op, Some(values)));
        } else if let Some((key, value)) = part.split_once("!=") {
            let key = key.trim();
            if key.is_empty() {
                return Err(bad());
            }
            selector
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(requirement(
                    key,
                    "NotIn",
                    Some(vec![value.trim().to_string()]),
                ));
        } else if let Some((key, value)) = part.split_once('=') {
            let key = key.trim();
            let value = value.strip_prefix('=').unwrap_or(value).trim();
            if key.is_empty() {
                return Err(bad());
            }
            selector
                .match_labels
                .get_or_insert_with(BTreeMap::new)
                .insert(key.to_string(), value.to_string());
        } else if let Some(key) = part.strip_prefix('!') {
            let key = key.trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(bad());
            }
            selector
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(requirement(key, "DoesNotExist", None));
        } else {
            if part.is_empty() || part.contains(char::is_whitespace) {
                return Err(bad());
            }
            selector
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(requirement(part, "Exists", None));
        }
    }
    Ok(selector)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parsing undoes [`format_label_selector`] and takes apimachinery's other spellings.
    #[test]
    fn parse_label_selector_round_trips_and_rejects_garbage() {
        for text in [
            "app=web",
            "app=web,tier in (a,b)",
            "env notin (dev),run,!skip",
            "",
        ] {
            let parsed = parse_label_selector(text).unwrap();
            assert_eq!(format_label_selector(&parsed), text);
        }
        let parsed = parse_label_selector(" app == web , x != y ").unwrap();
        assert_eq!(format_label_selector(&parsed), "app=web,x notin (y)");
        for bad in [
            "=web",
            "a in (b",
            "a in b)",
            "a b",
            "a foo (b)",
            "!",
            "a,,b",
        ] {
            assert!(parse_label_selector(bad).is_err(), "{bad:?} parsed");
        }
    }
}
