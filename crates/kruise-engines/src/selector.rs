//! Label selectors as apimachinery prints them.

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
