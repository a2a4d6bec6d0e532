//! Go's `%#v` of the values OpenKruise's ResourceDistribution webhook puts into field errors
//! (apimachinery v0.32 prints a struct value that has no `String()` method that way).

use kruise_api::apps::v1alpha1::{
    ResourceDistributionTargetNamespaces, ResourceDistributionTargets,
};
use kruise_api::validation::gofmt::{float_v, quote};
pub use kruise_api::validation::gofmt::{
    label_selector_sharp_v as label_selector, string_slice_sharp_v as string_slice,
};
use serde_json::Value;

/// `%#v` of a value of an `unstructured` object's map (`map[string]interface {}`,
/// `[]interface {}`, `int64` for integers, `float64`, `string`, `bool`, `nil`).
fn interface(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => float_v(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => quote(s),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(interface).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", quote(k), interface(&m[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", items.join(", "))
        }
    }
}

/// `%#v` of an `unstructured.Unstructured` holding `obj`.
pub fn unstructured(obj: &Value) -> String {
    format!("unstructured.Unstructured{{Object:{}}}", interface(obj))
}

/// `%#v` of a `v1alpha1.ResourceDistributionTargetNamespaces` value.
pub fn target_namespaces(t: Option<&ResourceDistributionTargetNamespaces>) -> String {
    let list = match t.and_then(|t| t.list.as_ref()) {
        None => "[]v1alpha1.ResourceDistributionNamespace(nil)".to_owned(),
        Some(l) => format!(
            "[]v1alpha1.ResourceDistributionNamespace{{{}}}",
            l.iter()
                .map(|n| format!(
                    "v1alpha1.ResourceDistributionNamespace{{Name:{}}}",
                    quote(n.name.as_deref().unwrap_or(""))
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("v1alpha1.ResourceDistributionTargetNamespaces{{List:{list}}}")
}

/// `%#v` of a `v1alpha1.ResourceDistributionTargets` value.
pub fn targets(t: &ResourceDistributionTargets) -> String {
    format!(
        "v1alpha1.ResourceDistributionTargets{{AllNamespaces:{}, ExcludedNamespaces:{}, IncludedNamespaces:{}, NamespaceLabelSelector:{}}}",
        t.all_namespaces.unwrap_or(false),
        target_namespaces(t.excluded_namespaces.as_ref()),
        target_namespaces(t.included_namespaces.as_ref()),
        label_selector(&t.namespace_label_selector.clone().unwrap_or_default())
    )
}
