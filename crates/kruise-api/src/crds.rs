//! The CustomResourceDefinitions of every kind, generated from the Rust types.
//!
//! `kube-derive` produces one CRD per (kind, version); this module merges the versions of a kind
//! (v1beta1 is the storage version wherever OpenKruise v1.9.0 has it) and then normalizes the
//! schemas so they look like OpenKruise's controller-gen output:
//!
//! - `nullable: true` (emitted by schemars for `Option` fields) is removed: OpenKruise's schemas
//!   never allow `null`, and an absent field is what `Option::None` serializes to anyway.
//! - `default:` values that schemars derives from `#[serde(default)]` are removed, because
//!   they are Rust deserialization conveniences, not API defaults. A field that has a real
//!   schema default in OpenKruise (`+kubebuilder:default`) carries
//!   `#[schemars(extend("example" = ...))]`, which becomes `default:` here. (`example` is used as
//!   the carrier because kube-derive converts schemas to `JSONSchemaProps`, which drops unknown
//!   keys; no OpenKruise CRD uses `example` itself.)
//! - `title` keywords are removed, `names.listKind` is set to `<Kind>List`, and the root schema
//!   gets OpenKruise's `apiVersion`, `kind` and `metadata` properties.
//!
//! One deliberate difference: the root schema keeps `required: [spec]` (the Rust types require a
//! spec; OpenKruise's Go types tolerate a missing one, which no real object relies on).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use serde_json::{Map, Value, json};

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::policy::v1alpha1 as p1;
use crate::rspolicy::v1alpha1 as rp1;

/// The storage version of every kind served in two versions.
pub const STORAGE_VERSION_MULTI: &str = "v1beta1";

/// Every CRD, normalized, in a stable order (by name).
///
/// # Panics
/// Never on the types of this crate; a panic here means two versions of a kind disagree on
/// group, kind, names or scope, which the unit tests catch.
pub fn all() -> Vec<CustomResourceDefinition> {
    let mut crds: Vec<CustomResourceDefinition> = vec![
        single(a1::CloneSet::crd()),
        // Kinds served as v1alpha1 and v1beta1 (storage).
        merged(vec![a1::StatefulSet::crd(), b1::StatefulSet::crd()]),
        merged(vec![a1::DaemonSet::crd(), b1::DaemonSet::crd()]),
        merged(vec![a1::SidecarSet::crd(), b1::SidecarSet::crd()]),
        merged(vec![a1::BroadcastJob::crd(), b1::BroadcastJob::crd()]),
        merged(vec![a1::AdvancedCronJob::crd(), b1::AdvancedCronJob::crd()]),
        merged(vec![a1::ImagePullJob::crd(), b1::ImagePullJob::crd()]),
        merged(vec![
            a1::ImageListPullJob::crd(),
            b1::ImageListPullJob::crd(),
        ]),
        merged(vec![a1::NodeImage::crd(), b1::NodeImage::crd()]),
        // Kinds served as v1alpha1 only.
        single(a1::UnitedDeployment::crd()),
        single(a1::WorkloadSpread::crd()),
        single(a1::ContainerRecreateRequest::crd()),
        single(a1::ResourceDistribution::crd()),
        single(a1::PersistentPodState::crd()),
        single(a1::EphemeralJob::crd()),
        single(a1::PodProbeMarker::crd()),
        single(a1::NodePodProbe::crd()),
        single(p1::PodUnavailableBudget::crd()),
        // kruise-rs's own kinds (policy.kruise-rs.io).
        single(rp1::PodDeletionFlowControl::crd()),
    ];
    crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    crds
}

/// The CRD of one kind by its plural (`"clonesets"`), if this crate defines it.
pub fn by_plural(plural: &str) -> Option<CustomResourceDefinition> {
    all().into_iter().find(|c| c.spec.names.plural == plural)
}

/// Normalizes a single-version CRD.
fn single(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    normalize(crd)
}

/// Merges the per-version CRDs of one kind (storage: [`STORAGE_VERSION_MULTI`]) and normalizes.
#[allow(dead_code)]
fn merged(crds: Vec<CustomResourceDefinition>) -> CustomResourceDefinition {
    let crd = kube::core::crd::merge_crds(crds, STORAGE_VERSION_MULTI)
        .expect("versions of one kind must agree on group, names and scope");
    normalize(crd)
}

fn normalize(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    // OpenKruise lists versions oldest first (v1alpha1, v1beta1).
    crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    for version in &mut crd.spec.versions {
        let Some(validation) = version.schema.as_mut() else {
            continue;
        };
        let Some(root) = validation.open_api_v3_schema.take() else {
            continue;
        };
        let mut value = serde_json::to_value(root).expect("a schema always serializes");
        clean_schema(&mut value);
        mark_upstream_list_and_map_types(&mut value, "");
        add_root_properties(&mut value);
        validation.open_api_v3_schema =
            Some(serde_json::from_value::<JSONSchemaProps>(value).expect("cleaned schema parses"));
    }
    crd
}

/// Removes `nullable`, derived `default`s and `title`s from a schema node and its children, and
/// turns `example` (the carrier of explicit defaults) into `default`.
fn clean_schema(node: &mut Value) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    obj.remove("nullable");
    obj.remove("title");
    obj.remove("default");
    if let Some(d) = obj.remove("example") {
        obj.insert("default".into(), d);
    }
    // k8s-openapi's IntOrString schema carries only the extension; controller-gen also spells
    // out the alternatives.
    if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        obj.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for child in props.values_mut() {
            clean_schema(child);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = obj.get_mut(key) {
            clean_schema(child);
        }
    }
    for key in ["anyOf", "allOf", "oneOf"] {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            for child in list {
                clean_schema(child);
            }
        }
    }
}

/// Adds the `x-kubernetes-map-type` / `x-kubernetes-list-type` markers that the upstream Go
/// types carry (`+structType=atomic`, `+listType=atomic`) but k8s-openapi's schemas do not:
/// label selectors, node selector terms and their requirement lists, `fieldRef`, object and
/// owner references, `imagePullSecrets` entries, and exec/HTTP probe lists.
fn mark_upstream_list_and_map_types(node: &mut Value, name: &str) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let prop_names: Vec<String> = match obj.get("properties") {
        Some(Value::Object(p)) => p.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let has = |k: &str| prop_names.iter().any(|p| p == k);
    let only = |allowed: &[&str]| {
        !prop_names.is_empty() && prop_names.iter().all(|p| allowed.contains(&p.as_str()))
    };
    let atomic_struct = only(&["matchLabels", "matchExpressions"])
        || only(&["matchExpressions", "matchFields"])
        || (name == "fieldRef" && only(&["apiVersion", "fieldPath"]))
        || (has("fieldPath") && has("resourceVersion") && has("uid"))
        || (has("blockOwnerDeletion") && has("controller") && has("uid"))
        || (name == "imagePullSecrets[]" && only(&["name"]));
    if atomic_struct && obj.get("type") == Some(&json!("object")) {
        obj.insert("x-kubernetes-map-type".into(), json!("atomic"));
    }
    let atomic_list = matches!(
        name,
        "matchExpressions" | "matchFields" | "values" | "command" | "httpHeaders"
    );
    if atomic_list && obj.get("type") == Some(&json!("array")) {
        obj.insert("x-kubernetes-list-type".into(), json!("atomic"));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (child_name, child) in props.iter_mut() {
            mark_upstream_list_and_map_types(child, child_name);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        mark_upstream_list_and_map_types(items, &format!("{name}[]"));
    }
    if let Some(additional) = obj.get_mut("additionalProperties") {
        mark_upstream_list_and_map_types(additional, &format!("{name}{{}}"));
    }
}

fn add_root_properties(root: &mut Value) {
    let Some(obj) = root.as_object_mut() else {
        return;
    };
    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(props) = props {
        props.entry("apiVersion").or_insert_with(|| {
            json!({
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers convert recognized schemas to the latest internal value, and may reject unrecognized values.",
                "type": "string",
            })
        });
        props.entry("kind").or_insert_with(|| {
            json!({
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer it from the endpoint the client submits requests to. In CamelCase.",
                "type": "string",
            })
        });
        props
            .entry("metadata")
            .or_insert_with(|| json!({ "type": "object" }));
    }
}

/// Serializes a CRD as YAML with a leading `---` document marker.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    Ok(format!("---\n{}", serde_yaml_ng::to_string(crd)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    out.push(k.as_str());
                    walk(child, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }

    #[test]
    fn every_crd_is_normalized() {
        for crd in all() {
            let name = crd.metadata.name.clone().unwrap_or_default();
            assert_eq!(
                crd.spec.names.list_kind.as_deref(),
                Some(format!("{}List", crd.spec.names.kind).as_str()),
                "{name}"
            );
            let storage: Vec<_> = crd.spec.versions.iter().filter(|v| v.storage).collect();
            assert_eq!(
                storage.len(),
                1,
                "{name} must have exactly one storage version"
            );
            if crd.spec.versions.len() > 1 {
                assert_eq!(storage[0].name, STORAGE_VERSION_MULTI, "{name}");
            }
            for v in &crd.spec.versions {
                let schema = serde_json::to_value(
                    v.schema
                        .as_ref()
                        .unwrap()
                        .open_api_v3_schema
                        .as_ref()
                        .unwrap(),
                )
                .unwrap();
                let mut keys = Vec::new();
                walk(&schema, &mut keys);
                assert!(
                    !keys.contains(&"nullable"),
                    "{name}/{}: nullable left",
                    v.name
                );
                assert!(!keys.contains(&"example"), "{name}/{}", v.name);
                for p in ["apiVersion", "kind", "metadata", "spec"] {
                    assert!(
                        schema["properties"][p].is_object(),
                        "{name}/{}: {p}",
                        v.name
                    );
                }
            }
        }
    }

    #[test]
    fn explicit_defaults_survive_and_derived_ones_do_not() {
        let mut v = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 0, "nullable": true},
                "b": {"type": "string", "example": ".*"},
                "c": {"type": "array", "items": {"type": "object", "title": "X",
                      "properties": {"d": {"default": "", "type": "string"}}}},
            }
        });
        clean_schema(&mut v);
        assert_eq!(
            v,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": "string", "default": ".*"},
                    "c": {"type": "array", "items": {"type": "object",
                          "properties": {"d": {"type": "string"}}}},
                }
            })
        );
    }
}
