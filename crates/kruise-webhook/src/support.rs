//! Glue between the admission types and the pure decision functions, shared by the CloneSet,
//! Advanced StatefulSet and pod handlers: decoding the request's objects into typed values and
//! building allow / deny / patch responses the way controller-runtime's helpers answer.

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

/// Decodes a JSON value into `T`; the error reads `cannot decode object: <path>: <cause>`.
pub fn decode_value<T: DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path.is_empty() || path == "." {
            format!("cannot decode object: {inner}")
        } else {
            format!("cannot decode object: {path}: {inner}")
        }
    })
}

/// The request's `object`, decoded; `Err` with a message when absent or malformed.
pub fn decode_object<T: DeserializeOwned>(req: &Request) -> Result<T, String> {
    let obj = req
        .object
        .as_ref()
        .ok_or_else(|| "there is no content to decode".to_owned())?;
    decode(obj)
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
pub fn defaults_patch<T: Serialize>(before: &T, after: &T) -> Result<json_patch::Patch, String> {
    let b = serde_json::to_value(before).map_err(|e| e.to_string())?;
    let a = serde_json::to_value(after).map_err(|e| e.to_string())?;
    Ok(json_patch::diff(&b, &a))
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
