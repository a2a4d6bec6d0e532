//! `/convert`: the CRD conversion webhook. Converts every kind that OpenKruise v1.9.0 serves in
//! both `v1alpha1` and `v1beta1` with the lossless functions of [`kruise_api::conversion`].
//!
//! The API server requires a conversion to leave `metadata` untouched except for labels and
//! annotations; so the converted object always carries the original `metadata` with only the
//! labels and annotations the conversion produced (v1alpha1 stashes v1beta1-only fields in
//! annotations).

use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::conversion as conv;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `apps.kruise.io/v1alpha1`.
pub const V1ALPHA1: &str = "apps.kruise.io/v1alpha1";
/// `apps.kruise.io/v1beta1`.
pub const V1BETA1: &str = "apps.kruise.io/v1beta1";

/// Kinds served in two versions, which `/convert` handles.
pub const CONVERTIBLE_KINDS: &[&str] = &[
    "AdvancedCronJob",
    "BroadcastJob",
    "DaemonSet",
    "ImageListPullJob",
    "ImagePullJob",
    "NodeImage",
    "SidecarSet",
    "StatefulSet",
];

fn via<A: DeserializeOwned, B: Serialize>(obj: &Value, f: fn(&A) -> B) -> Result<Value, String> {
    let typed: A = crate::support::decode_value(obj.clone())?;
    serde_json::to_value(f(&typed)).map_err(|e| e.to_string())
}

/// Converts one object to `desired` (`apps.kruise.io/v1alpha1` or `apps.kruise.io/v1beta1`).
/// An object already in `desired` is returned unchanged. Errors name the kind and cause:
/// unknown kind or version, or an object that does not decode.
pub fn convert_object(obj: &Value, desired: &str) -> Result<Value, String> {
    let from = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    if from == desired {
        return Ok(obj.clone());
    }
    let converted = match (kind, from, desired) {
        ("StatefulSet", V1ALPHA1, V1BETA1) => {
            via::<a1::StatefulSet, _>(obj, conv::statefulset::to_v1beta1)
        }
        ("StatefulSet", V1BETA1, V1ALPHA1) => {
            via::<b1::StatefulSet, _>(obj, conv::statefulset::to_v1alpha1)
        }
        ("DaemonSet", V1ALPHA1, V1BETA1) => {
            via::<a1::DaemonSet, _>(obj, conv::daemonset::to_v1beta1)
        }
        ("DaemonSet", V1BETA1, V1ALPHA1) => {
            via::<b1::DaemonSet, _>(obj, conv::daemonset::to_v1alpha1)
        }
        ("SidecarSet", V1ALPHA1, V1BETA1) => {
            via::<a1::SidecarSet, _>(obj, conv::sidecarset::to_v1beta1)
        }
        ("SidecarSet", V1BETA1, V1ALPHA1) => {
            via::<b1::SidecarSet, _>(obj, conv::sidecarset::to_v1alpha1)
        }
        ("BroadcastJob", V1ALPHA1, V1BETA1) => {
            via::<a1::BroadcastJob, _>(obj, conv::broadcastjob::to_v1beta1)
        }
        ("BroadcastJob", V1BETA1, V1ALPHA1) => {
            via::<b1::BroadcastJob, _>(obj, conv::broadcastjob::to_v1alpha1)
        }
        ("AdvancedCronJob", V1ALPHA1, V1BETA1) => {
            via::<a1::AdvancedCronJob, _>(obj, conv::advancedcronjob::to_v1beta1)
        }
        ("AdvancedCronJob", V1BETA1, V1ALPHA1) => {
            via::<b1::AdvancedCronJob, _>(obj, conv::advancedcronjob::to_v1alpha1)
        }
        ("ImagePullJob", V1ALPHA1, V1BETA1) => {
            via::<a1::ImagePullJob, _>(obj, conv::imagepulljob::to_v1beta1)
        }
        ("ImagePullJob", V1BETA1, V1ALPHA1) => {
            via::<b1::ImagePullJob, _>(obj, conv::imagepulljob::to_v1alpha1)
        }
        ("ImageListPullJob", V1ALPHA1, V1BETA1) => {
            via::<a1::ImageListPullJob, _>(obj, conv::imagelistpulljob::to_v1beta1)
        }
        ("ImageListPullJob", V1BETA1, V1ALPHA1) => {
            via::<b1::ImageListPullJob, _>(obj, conv::imagelistpulljob::to_v1alpha1)
        }
        ("NodeImage", V1ALPHA1, V1BETA1) => {
            via::<a1::NodeImage, _>(obj, conv::nodeimage::to_v1beta1)
        }
        ("NodeImage", V1BETA1, V1ALPHA1) => {
            via::<b1::NodeImage, _>(obj, conv::nodeimage::to_v1alpha1)
        }
        _ => {
            return Err(format!(
                "cannot convert {kind:?} from {from:?} to {desired:?}: unsupported kind or version"
            ));
        }
    }
    .map_err(|e| format!("converting {kind} from {from} to {desired}: {e}"))?;
    Ok(keep_metadata(obj, converted))
}

/// `converted` with `original`'s metadata, except labels and annotations taken from `converted`.
fn keep_metadata(original: &Value, mut converted: Value) -> Value {
    let mut meta = original
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    for key in ["labels", "annotations"] {
        let produced = converted.pointer(&format!("/metadata/{key}")).cloned();
        if let Some(m) = meta.as_object_mut() {
            match produced {
                Some(v) if !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()) => {
                    m.insert(key.to_owned(), v);
                }
                _ => {
                    m.remove(key);
                }
            }
        }
    }
    if let Some(o) = converted.as_object_mut() {
        o.insert("metadata".to_owned(), meta);
    }
    converted
}

/// Answers a ConversionReview: every object converted, or a `Failure` result naming the first
/// object that could not be.
pub fn review(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(r) => r,
        Err(_) => {
            return ConversionResponse::invalid(Status::failure(
                "ConversionReview has no request",
                "BadRequest",
            ))
            .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<Value>, String> = request
        .objects
        .iter()
        .map(|o| convert_object(o, &desired))
        .collect();
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => response.success(objects),
        Err(message) => {
            tracing::warn!(%message, "conversion failed");
            response.failure(Status::failure(&message, "BadRequest"))
        }
    }
    .into_review()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn asts_v1beta1() -> Value {
        json!({
            "apiVersion": V1BETA1, "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                         "generation": 2, "creationTimestamp": "2026-01-02T03:04:05Z",
                         "labels": {"app": "web"}},
            "spec": {
                "replicas": 3, "serviceName": "web",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}},
                "reserveOrdinals": [1],
                "updateStrategy": {"type": "RollingUpdate",
                                   "rollingUpdate": {"partition": 1, "podUpdatePolicy": "InPlaceIfPossible"}},
            },
        })
    }

    #[test]
    fn statefulset_round_trips_through_v1alpha1_without_loss() {
        let b = asts_v1beta1();
        let a = convert_object(&b, V1ALPHA1).unwrap();
        assert_eq!(a["apiVersion"], V1ALPHA1);
        assert!(
            a["spec"].get("reserveOrdinals").is_none(),
            "v1alpha1 has no reserveOrdinals"
        );
        assert_eq!(a["metadata"]["uid"], "u1");
        assert_eq!(a["metadata"]["resourceVersion"], "7");
        let back = convert_object(&a, V1BETA1).unwrap();
        assert_eq!(back["spec"]["reserveOrdinals"], json!([1]));
        assert_eq!(back["metadata"], b["metadata"]);
        assert_eq!(back["spec"]["updateStrategy"], b["spec"]["updateStrategy"]);
    }

    #[test]
    fn metadata_other_than_labels_and_annotations_is_kept_verbatim() {
        let mut b = asts_v1beta1();
        b["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Update",
            "apiVersion": V1BETA1, "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
        let a = convert_object(&b, V1ALPHA1).unwrap();
        let mut am = a["metadata"].clone();
        am.as_object_mut().unwrap().remove("annotations");
        assert_eq!(am, b["metadata"]);
    }

    #[test]
    fn same_version_is_returned_unchanged() {
        let b = asts_v1beta1();
        assert_eq!(convert_object(&b, V1BETA1).unwrap(), b);
    }

    #[test]
    fn every_convertible_kind_round_trips_its_samples() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/samples");
        for kind in CONVERTIBLE_KINDS {
            for (from, to) in [("v1alpha1", V1BETA1), ("v1beta1", V1ALPHA1)] {
                let file = dir.join(format!(
                    "apps.kruise.io_{from}_{}.yaml",
                    kind.to_lowercase()
                ));
                let text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let obj: Value = serde_yaml_ng::from_str(&text).unwrap();
                let other =
                    convert_object(&obj, to).unwrap_or_else(|e| panic!("{kind} {from}: {e}"));
                assert_eq!(other["apiVersion"], to, "{kind} {from}");
                let back = convert_object(&other, obj["apiVersion"].as_str().unwrap()).unwrap();
                assert_eq!(
                    back, obj,
                    "{kind} {from} did not survive a round trip through {to}"
                );
            }
        }
    }

    #[test]
    fn unknown_kind_and_bad_objects_fail_with_a_reason() {
        let e = convert_object(
            &json!({"apiVersion": V1ALPHA1, "kind": "CloneSet"}),
            V1BETA1,
        )
        .unwrap_err();
        assert!(e.contains("CloneSet") && e.contains("unsupported"), "{e}");
        let mut b = asts_v1beta1();
        b["spec"]["replicas"] = json!("three");
        let e = convert_object(&b, V1ALPHA1).unwrap_err();
        assert!(e.contains("spec.replicas"), "{e}");
    }

    #[test]
    fn review_answers_success_and_failure() {
        let ok: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "r1", "desiredAPIVersion": V1ALPHA1, "objects": [asts_v1beta1()]},
        }))
        .unwrap();
        let out = serde_json::to_value(review(ok)).unwrap();
        assert_eq!(out["response"]["uid"], "r1");
        assert_eq!(out["response"]["result"]["status"], "Success");
        assert_eq!(
            out["response"]["convertedObjects"][0]["apiVersion"],
            V1ALPHA1
        );

        let bad: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "r2", "desiredAPIVersion": "apps.kruise.io/v2", "objects": [asts_v1beta1()]},
        }))
        .unwrap();
        let out = serde_json::to_value(review(bad)).unwrap();
        assert_eq!(out["response"]["result"]["status"], "Failure");
        assert!(
            out["response"]["result"]["message"]
                .as_str()
                .unwrap()
                .contains("v2")
        );
    }
}
