//! Schema helpers used with `#[schemars(schema_with = "...")]` so that generated CRD schemas
//! match OpenKruise's controller-gen output where plain derivation would differ.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A schemaless value (`x-kubernetes-preserve-unknown-fields: true`, no `type`), which is what
/// controller-gen writes for fields marked `+kubebuilder:validation:Schemaless` +
/// `+kubebuilder:pruning:PreserveUnknownFields`. OpenKruise does this for pod templates and
/// `volumeClaimTemplates`: the apiserver neither describes nor prunes them and the webhooks
/// validate them instead, which keeps the CRDs small enough for client-side apply.
pub fn schemaless(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// An object whose contents are not described or pruned (`type: object`,
/// `x-kubernetes-preserve-unknown-fields: true`), for fields OpenKruise marks
/// `+kubebuilder:pruning:PreserveUnknownFields` without `Schemaless`.
pub fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Any JSON value (an embedded `runtime.RawExtension`): `x-kubernetes-preserve-unknown-fields`
/// without a type, as controller-gen emits for `RawExtension` fields.
pub fn raw_extension(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// An `IntOrString` (`x-kubernetes-int-or-string: true`), as controller-gen writes it.
pub fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true,
    })
}

/// A list of `IntOrString` values.
pub fn int_or_string_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        },
    })
}

/// A resource quantity map (`map[ResourceName]resource.Quantity`).
pub fn quantity_map(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": true,
        },
    })
}

/// A complete embedded Kubernetes object (`type: object`, `x-kubernetes-embedded-resource: true`,
/// `x-kubernetes-preserve-unknown-fields: true`), as controller-gen writes for a `RawExtension`
/// marked `+kubebuilder:validation:EmbeddedResource` (ResourceDistribution's `spec.resource`).
/// The apiserver then requires `apiVersion` and `kind` inside and validates its `metadata`.
pub fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A list of upstream workload conditions (`apps/v1` `StatefulSetCondition`,
/// `DaemonSetCondition`, ...) with `status` and `type` listed as required in each item, as
/// controller-gen writes them. k8s-openapi's schemas of these condition types omit the
/// `required` list although the Go fields have no `omitempty`.
pub fn conditions_requiring_status_and_type<T: schemars::JsonSchema>(
    generator: &mut SchemaGenerator,
) -> Schema {
    let mut item = T::json_schema(generator);
    item.insert("required".into(), serde_json::json!(["status", "type"]));
    json_schema!({
        "type": "array",
        "items": item,
    })
}

/// Serde helper: reads JSON `null` as the type's default (Go's `encoding/json` writes `null` for
/// a nil map or slice, e.g. `"lastContainerStatuses":null` in the in-place update state).
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    use serde::Deserialize;
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
