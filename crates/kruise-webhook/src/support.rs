//! Glue between the admission types and the pure decision functions, shared by the CloneSet,
//! Advanced StatefulSet and pod handlers: decoding the request's objects into typed values and
//! building allow / deny / patch responses the way controller-runtime's helpers answer.

use kruise_engines::revision::go_json::{self, GoType};
use kube::core::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Request, Response};

/// HTTP-style status code of a request that could not be decoded.
pub const CODE_BAD_REQUEST: u16 = 400;
/// Status code of a deletion refused by deletion protection.
pub const CODE_FORBIDDEN: u16 = 403;
/// Status code of a validation failure (field errors).
pub const CODE_UNPROCESSABLE: u16 = 422;
/// Status code of an internal failure (e.g. a patch that cannot be serialised).
pub const CODE_INTERNAL: u16 = 500;

/// Decodes an admission object into `T` (e.g. a CloneSet). The error text names the JSON path
/// and the cause.
pub fn decode<T: DeserializeOwned>(obj: &DynamicObject) -> Result<T, String> {
    decode_value(serde_json::to_value(obj).map_err(|e| e.to_string())?)
}

/// Decodes a JSON value into `T`. The error names the field the way Kubernetes' field errors
/// do ([`decode_error`]).
pub fn decode_value<T: DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(&v).map_err(|e| {
        let path = e.path().to_string();
        decode_error(&path, &e.into_inner().to_string(), &v)
    })
}

/// Decodes a JSON document (bytes) into `T`, with the errors of [`decode_value`]. Decoded
/// straight from the bytes; only a document that does not decode so (invalid, or e.g. with a
/// repeated key, which Go's decoder and a [`Value`] take as the last one) goes through a
/// [`Value`] first, for the field-naming error or the lenient result.
pub fn decode_slice<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    if let Ok(t) = serde_json::from_slice(body) {
        return Ok(t);
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    decode_value(v)
}

/// A decoding failure as a field error at `path` (serde's `a.b[0].c`, which is Kubernetes'
/// path syntax): a missing field → `<path>.<field>: Required value`; an unknown enum value →
/// `<path>: Unsupported value: "<v>": supported values: ...`; a wrong type or value →
/// `<path>: Invalid value: <the JSON value there>: <serde's reason>`. OpenKruise's decoder
/// answers these with Go's `json: cannot unmarshal ... Go struct field T.<path>`; kruise-rs
/// names the same field in the form `kubectl` users read elsewhere.
pub fn decode_error(path: &str, cause: &str, root: &Value) -> String {
    let path = if path == "." { "" } else { path };
    if let Some(rest) = cause.strip_prefix("missing field `")
        && let Some(field) = rest.split('`').next()
    {
        let full = if path.is_empty() {
            field.to_owned()
        } else {
            format!("{path}.{field}")
        };
        return format!("{full}: Required value");
    }
    let shown = if path.is_empty() { "<object>" } else { path };
    if let Some(rest) = cause.strip_prefix("unknown variant `")
        && let Some((value, expected)) = rest.split_once('`')
    {
        let supported: Vec<String> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|s| format!("{s:?}"))
            .collect();
        return format!(
            "{shown}: Unsupported value: {value:?}: supported values: {}",
            supported.join(", ")
        );
    }
    let value = value_at(root, path)
        .map(crate::field::render_value)
        .unwrap_or_else(|| "null".to_owned());
    format!("{shown}: Invalid value: {value}: {cause}")
}

/// The value at a serde path (`spec.containers[0].image`) inside `root`.
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = root;
    if path.is_empty() {
        return Some(cur);
    }
    for part in path.split('.') {
        let (key, rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            cur = cur.get(key)?;
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            let i: usize = idx.trim_end_matches(']').parse().ok()?;
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// The request's `object`, decoded; `Err` with a message when absent or malformed.
pub fn decode_object<T: DeserializeOwned>(req: &Request) -> Result<T, String> {
    let obj = req
        .object
        .as_ref()
        .ok_or_else(|| "there is no content to decode".to_owned())?;
    decode(obj)
}

/// Go's decoding error for the object (then the old object) of an AdmissionReview `review`
/// (JSON), as OpenKruise's handler for its kind and version would report it; `None` when the
/// kind is not one whose Go type kruise-rs knows, or Go would decode it.
pub fn go_decoding_error(review: &serde_json::Value) -> Option<String> {
    let kind = review.pointer("/request/kind")?;
    let text = |k: &str| {
        kind.get(k)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    let ty = match (text("group"), text("version"), text("kind")) {
        ("", "v1", "Pod") => GoType::Pod,
        ("apps.kruise.io", "v1alpha1", "CloneSet") => GoType::CloneSet,
        ("apps.kruise.io", "v1alpha1", "StatefulSet") => GoType::StatefulSetV1alpha1,
        ("apps.kruise.io", "v1beta1", "StatefulSet") => GoType::StatefulSetV1beta1,
        ("apps.kruise.io", "v1alpha1", "DaemonSet") => GoType::DaemonSetV1alpha1,
        ("apps.kruise.io", "v1beta1", "DaemonSet") => GoType::DaemonSetV1beta1,
        ("apps.kruise.io", "v1alpha1", "SidecarSet") => GoType::SidecarSetV1alpha1,
        ("apps.kruise.io", "v1beta1", "SidecarSet") => GoType::SidecarSetV1beta1,
        ("policy.kruise.io", "v1alpha1", "PodUnavailableBudget") => GoType::PodUnavailableBudget,
        ("apps.kruise.io", "v1alpha1", "AdvancedCronJob") => GoType::AdvancedCronJobV1alpha1,
        ("apps.kruise.io", "v1beta1", "AdvancedCronJob") => GoType::AdvancedCronJobV1beta1,
        _ => return None,
    };
    ["/request/object", "/request/oldObject"]
        .iter()
        .filter_map(|p| review.pointer(p))
        .find_map(|obj| go_json::check_decodable(obj, ty).err())
        .map(|m| m.message)
}

/// A type an OpenKruise webhook decodes (a workload, a pod) and the Go type it decodes it into.
pub trait GoShaped: DeserializeOwned {
    /// The Go type (OpenKruise v1.9.0) whose decoding this type's decoding reproduces.
    const GO_TYPE: GoType;
}

impl GoShaped for k8s_openapi::api::core::v1::Pod {
    const GO_TYPE: GoType = GoType::Pod;
}
impl GoShaped for kruise_api::apps::v1alpha1::CloneSet {
    const GO_TYPE: GoType = GoType::CloneSet;
}
impl GoShaped for kruise_api::apps::v1alpha1::StatefulSet {
    const GO_TYPE: GoType = GoType::StatefulSetV1alpha1;
}
impl GoShaped for kruise_api::apps::v1beta1::StatefulSet {
    const GO_TYPE: GoType = GoType::StatefulSetV1beta1;
}
impl GoShaped for kruise_api::apps::v1alpha1::DaemonSet {
    const GO_TYPE: GoType = GoType::DaemonSetV1alpha1;
}
impl GoShaped for kruise_api::apps::v1beta1::DaemonSet {
    const GO_TYPE: GoType = GoType::DaemonSetV1beta1;
}
impl GoShaped for kruise_api::apps::v1alpha1::SidecarSet {
    const GO_TYPE: GoType = GoType::SidecarSetV1alpha1;
}
impl GoShaped for kruise_api::apps::v1beta1::SidecarSet {
    const GO_TYPE: GoType = GoType::SidecarSetV1beta1;
}
impl GoShaped for kruise_api::apps::v1alpha1::BroadcastJob {
    const GO_TYPE: GoType = GoType::BroadcastJobV1alpha1;
}
impl GoShaped for kruise_api::apps::v1beta1::BroadcastJob {
    const GO_TYPE: GoType = GoType::BroadcastJobV1beta1;
}
impl GoShaped for kruise_api::apps::v1alpha1::UnitedDeployment {
    const GO_TYPE: GoType = GoType::UnitedDeployment;
}
impl GoShaped for kruise_api::policy::v1alpha1::PodUnavailableBudget {
    const GO_TYPE: GoType = GoType::PodUnavailableBudget;
}
impl GoShaped for kruise_api::apps::v1alpha1::ContainerRecreateRequest {
    const GO_TYPE: GoType = GoType::ContainerRecreateRequest;
}
impl GoShaped for kruise_api::apps::v1alpha1::PodProbeMarker {
    const GO_TYPE: GoType = GoType::PodProbeMarker;
}
impl GoShaped for kruise_api::apps::v1alpha1::PersistentPodState {
    const GO_TYPE: GoType = GoType::PersistentPodState;
}
impl GoShaped for kruise_api::apps::v1alpha1::AdvancedCronJob {
    const GO_TYPE: GoType = GoType::AdvancedCronJobV1alpha1;
}
impl GoShaped for kruise_api::apps::v1beta1::AdvancedCronJob {
    const GO_TYPE: GoType = GoType::AdvancedCronJobV1beta1;
}

/// Decodes a workload as OpenKruise's webhook does: refused where Go's `json.Unmarshal` into
/// the Go type refuses ([`go_json::check_decodable`], e.g. a struct given as an array, a
/// malformed quantity), then decoded like [`decode`]. The error is Go's decoding error
/// (`json: cannot unmarshal string into Go struct field CloneSetSpec.spec.replicas of type
/// int32`).
pub fn decode_workload<T: GoShaped>(obj: &DynamicObject) -> Result<T, String> {
    decode_workload_value(serde_json::to_value(obj).map_err(|e| e.to_string())?)
}

/// [`decode_workload`] of an object already written as JSON (`v`, consumed).
pub fn decode_workload_value<T: GoShaped>(mut v: Value) -> Result<T, String> {
    if let Err(m) = go_json::check_decodable(&v, T::GO_TYPE) {
        // What OpenKruise's decoder answers: Go's `json.Unmarshal` error, word for word.
        return Err(m.message);
    }
    go_json::fill_go_zero_values(&mut v, T::GO_TYPE);
    decode_value(v)
}

/// The request's `object` decoded with [`decode_workload`].
pub fn decode_workload_object<T: GoShaped>(req: &Request) -> Result<T, String> {
    let obj = req
        .object
        .as_ref()
        .ok_or_else(|| "there is no content to decode".to_owned())?;
    decode_workload(obj)
}

/// The request's `oldObject` decoded with [`decode_workload`]; `Ok(None)` when absent.
pub fn decode_workload_old_object<T: GoShaped>(req: &Request) -> Result<Option<T>, String> {
    req.old_object.as_ref().map(decode_workload).transpose()
}

/// The request's `oldObject`, decoded; `Ok(None)` when absent.
pub fn decode_old_object<T: DeserializeOwned>(req: &Request) -> Result<Option<T>, String> {
    req.old_object.as_ref().map(decode).transpose()
}

/// An allowing response.
pub fn allow(req: &Request) -> Response {
    Response::from(req)
}

/// A refusing response with an HTTP-style `code` and `message` (what `kubectl` prints after
/// `admission webhook "…" denied the request:`).
pub fn errored(req: &Request, code: u16, message: impl Into<String>) -> Response {
    let mut resp = Response::from(req).deny(message.into());
    resp.result.code = code;
    resp
}

/// The JSON patch that turns `before` into `after`: both are the typed object serialised, so
/// the patch only touches what defaulting changed and leaves fields unknown to the type alone.
/// (Tests of the defaulting handlers; the handlers answer with [`patch_from_raw`].)
#[cfg(test)]
pub fn defaults_patch<T: Serialize>(before: &T, after: &T) -> Result<json_patch::Patch, String> {
    let b = serde_json::to_value(before).map_err(|e| e.to_string())?;
    let a = serde_json::to_value(after).map_err(|e| e.to_string())?;
    Ok(json_patch::diff(&b, &a))
}

/// The patch of a handler that changed a typed object (OpenKruise's pod webhook:
/// `PatchResponseFromRaw(marshal(original), marshal(modified))`): the diff of the two typed
/// forms `before` and `after` (already serialised), which touches only what the handler
/// changed. The API server applies it to the request's raw object `raw`, though, which may lack
/// what the typed form always has (a pod without `spec`): when the patch would not apply there,
/// the patch from `raw` to `after` instead, so the answer never carries a patch the API server
/// cannot apply. `raw` is consumed by the check (applied in place; a failed patch leaves it as
/// it was).
pub fn change_patch(raw: Option<Value>, before: &Value, after: &Value) -> json_patch::Patch {
    let patch = json_patch::diff(before, after);
    let Some(mut raw) = raw else {
        return patch;
    };
    if json_patch::patch(&mut raw, &patch).is_ok() {
        return patch;
    }
    json_patch::diff(&raw, after)
}

/// The JSON patch from the request's object as sent to `after` serialised: as OpenKruise's
/// workload mutating webhooks (`admission.PatchResponseFromRaw(req.Object.Raw, marshalled)`),
/// so what the typed object drops on the way (fields unknown to the kind, `null`s) is removed
/// and what it normalises (a quantity given as a number) is rewritten, as the Go encoding does.
/// The API server would prune unknown fields of a structural CRD anyway. `after` is written as
/// Go writes the typed OpenKruise object `ty` decoded from the request
/// ([`kruise_engines::revision::go_json::normalize_decoded`]): `omitempty` zero values dropped,
/// struct fields always present, fields Go decoded as `nil` written as `null`.
pub fn patch_from_raw<T: Serialize>(
    req: &Request,
    after: &T,
    ty: GoType,
) -> Result<json_patch::Patch, String> {
    let raw = match req.object.as_ref() {
        Some(o) => serde_json::to_value(o).map_err(|e| e.to_string())?,
        None => return Err("there is no content to decode".to_owned()),
    };
    let mut a = serde_json::to_value(after).map_err(|e| e.to_string())?;
    keep_embedded_type_meta(&raw, &mut a);
    go_json::normalize_decoded(&mut a, &raw, ty);
    Ok(json_patch::diff(&raw, &a))
}

/// k8s-openapi writes `apiVersion` and `kind` for every top-level resource type, also where one
/// is embedded (a `volumeClaimTemplates` entry is a `PersistentVolumeClaim`); Go's encoding only
/// keeps the `TypeMeta` it decoded. Removes them from `after`'s claim templates whose request
/// counterpart had none, so the patch adds nothing the user did not write.
fn keep_embedded_type_meta(raw: &Value, after: &mut Value) {
    let Some(templates) = after
        .pointer_mut("/spec/volumeClaimTemplates")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (i, t) in templates.iter_mut().enumerate() {
        let before = raw.pointer(&format!("/spec/volumeClaimTemplates/{i}"));
        if let Some(m) = t.as_object_mut() {
            for key in ["apiVersion", "kind"] {
                if before.and_then(|b| b.get(key)).is_none() {
                    m.remove(key);
                }
            }
        }
    }
}

/// Allows the request, carrying `patch` unless it is empty.
pub fn patch_response(req: &Request, patch: Result<json_patch::Patch, String>) -> Response {
    match patch {
        Err(e) => errored(req, CODE_INTERNAL, e),
        Ok(p) if p.0.is_empty() => allow(req),
        Ok(p) => match allow(req).with_patch(p) {
            Ok(r) => r,
            Err(e) => errored(req, CODE_INTERNAL, e.to_string()),
        },
    }
}

/// Applies `patch` to a copy of `raw` (used by tests to check that a patch fits the original
/// request object).
#[cfg(test)]
pub fn apply_patch(raw: &Value, patch: &json_patch::Patch) -> Result<Value, String> {
    let mut v = raw.clone();
    json_patch::patch(&mut v, patch).map_err(|e| e.to_string())?;
    Ok(v)
}

/// Builds admission requests for handler tests.
#[cfg(test)]
pub mod testing {
    use serde_json::{Value, json};

    use crate::Request;

    /// A request for `operation` (`CREATE`, `UPDATE`, `DELETE`) on `resource` of
    /// `apps.kruise.io/<version>` (or core `v1` pods when `resource` is `pods`).
    pub fn request(
        operation: &str,
        resource: &str,
        version: &str,
        object: Option<Value>,
        old: Option<Value>,
    ) -> Request {
        let group = if resource == "pods" {
            ""
        } else {
            "apps.kruise.io"
        };
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "req-uid",
                "kind": {"group": group, "version": version, "kind": "X"},
                "resource": {"group": group, "version": version, "resource": resource},
                "name": "x", "namespace": "ns",
                "operation": operation,
                "userInfo": {"username": "tester"},
                "object": object, "oldObject": old, "dryRun": false
            }
        });
        let review: kube::core::admission::AdmissionReview<kube::core::DynamicObject> =
            serde_json::from_value(review).expect("valid review");
        review.try_into().expect("request present")
    }
}
