//! OpenKruise v1.9.0's SidecarSet mutating webhook
//! (`pkg/webhook/sidecarset/mutating/sidecarset_create_update_handler.go`): on create and update
//! the object is decoded in the request's version, defaulted (`SetDefaultsSidecarSet[V1beta1]`,
//! [`kruise_api::defaults::sidecarset`]) and given the hash annotations
//! (`SetHashSidecarSet[V1beta1]`); if that changed nothing the request is allowed without a
//! patch, else the answer is the patch from the request's raw object to the object as Go writes
//! it.

use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::defaults::sidecarset::{set_defaults_sidecarset, set_defaults_sidecarset_v1beta1};
use kruise_api::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use kruise_engines::revision::go_json::{self, GoType};
use kruise_engines::sidecarset::hash::{self, Version};
use kube::core::admission::Operation;
use serde_json::Value;

use crate::support::{
    CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload_object, errored, patch_from_raw,
    patch_response,
};
use crate::{Request, Response};

/// The first sidecar whose `transferEnv` has a `sourceContainerNameFrom` without `fieldRef`,
/// as a path: OpenKruise's defaulting dereferences that `fieldRef` and the request fails (its
/// webhook recovers the panic and answers 500); kruise-rs refuses such an object.
fn missing_field_ref(obj: &Value) -> Option<String> {
    for list in ["initContainers", "containers"] {
        let containers = obj
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let envs = c.get("transferEnv").and_then(Value::as_array);
            for (j, e) in envs.into_iter().flatten().enumerate() {
                let from = e.get("sourceContainerNameFrom");
                if from.is_some_and(Value::is_object)
                    && from
                        .and_then(|f| f.get("fieldRef"))
                        .is_none_or(Value::is_null)
                {
                    return Some(format!(
                        "spec.{list}[{i}].transferEnv[{j}].sourceContainerNameFrom.fieldRef: Required value: a source container name taken from a field needs the field"
                    ));
                }
            }
        }
    }
    None
}

/// Both hashes of the defaulted object `go_form` (the object as Go writes it): a list that was
/// sent empty (`[]`, which Go holds as an empty, not a nil, list) is hashed as such although Go's
/// encoding leaves it out.
fn hashes(go_form: &Value, raw: &Value, version: Version) -> (String, String) {
    let mut v = go_form.clone();
    for key in ["containers", "initContainers"] {
        let sent_empty = raw
            .pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        if sent_empty && let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry(key).or_insert(Value::Array(Vec::new()));
        }
    }
    (
        hash::sidecarset_hash(&v, version),
        hash::sidecarset_hash_without_image(&v, version),
    )
}

/// The object as Go's `json.Marshal` writes the typed `after` decoded from `raw`.
fn go_form<T: serde::Serialize>(after: &T, raw: &Value, ty: GoType) -> Value {
    let mut v = serde_json::to_value(after).unwrap_or(Value::Null);
    go_json::normalize_decoded(&mut v, raw, ty);
    v
}

fn set_hash_annotations(
    annotations: &mut Option<std::collections::BTreeMap<String, String>>,
    (with_image, without_image): (String, String),
) {
    let a = annotations.get_or_insert_with(Default::default);
    a.insert(SIDECARSET_HASH.to_owned(), with_image);
    a.insert(SIDECARSET_HASH_WITHOUT_IMAGE.to_owned(), without_image);
}

/// The mutating handler (see the module documentation). Undecodable objects are refused with
/// code 400; an unsupported version too.
pub fn mutate(req: &Request) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let raw = match req.object.as_ref().map(serde_json::to_value) {
        Some(Ok(v)) => v,
        _ => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
    };
    match req.resource.version.as_str() {
        "v1beta1" => {
            let obj: b1::SidecarSet = match decode_workload_object(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            };
            if let Some(msg) = missing_field_ref(&serde_json::to_value(&obj).unwrap_or_default()) {
                return errored(req, CODE_UNPROCESSABLE, msg);
            }
            let mut after = obj.clone();
            set_defaults_sidecarset_v1beta1(&mut after);
            let h = hashes(
                &go_form(&after, &raw, GoType::SidecarSetV1beta1),
                &raw,
                Version::V1beta1,
            );
            set_hash_annotations(&mut after.metadata.annotations, h);
            if after == obj {
                return allow(req);
            }
            patch_response(req, patch_from_raw(req, &after, GoType::SidecarSetV1beta1))
        }
        "v1alpha1" => {
            let obj: a1::SidecarSet = match decode_workload_object(req) {
                Ok(o) => o,
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            };
            if let Some(msg) = missing_field_ref(&serde_json::to_value(&obj).unwrap_or_default()) {
                return errored(req, CODE_UNPROCESSABLE, msg);
            }
            let mut after = obj.clone();
            set_defaults_sidecarset(&mut after);
            let h = hashes(
                &go_form(&after, &raw, GoType::SidecarSetV1alpha1),
                &raw,
                Version::V1alpha1,
            );
            set_hash_annotations(&mut after.metadata.annotations, h);
            if after == obj {
                return allow(req);
            }
            patch_response(req, patch_from_raw(req, &after, GoType::SidecarSetV1alpha1))
        }
        other => errored(
            req,
            CODE_BAD_REQUEST,
            format!("unsupported version: {other}"),
        ),
    }
}
