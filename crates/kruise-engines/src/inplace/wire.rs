//! Wire formats of the two in-place annotations:
//!
//! - `apps.kruise.io/inplace-update-state`: [`InPlaceUpdateState`], written with Go's field order
//!   and omission rules (including `"lastContainerStatuses":null` for an empty map and
//!   `"creationTimestamp":null` inside each `nextContainerRefMetadata` entry, as Go's
//!   `metav1.ObjectMeta` marshals), and read leniently (`null` accepted wherever Go may write it).
//! - `apps.kruise.io/inplace-update-grace`: [`UpdateSpec`] with `metaDataPatch` as base64 of the
//!   patch JSON (Go encodes `[]byte` that way).
//!
//! Strings are escaped by serde_json, which — unlike Go — does not escape `<`, `>`, `&`, U+2028
//! and U+2029; the documents are otherwise byte-identical to OpenKruise's.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::common::{
    InPlaceUpdateContainerBatch, InPlaceUpdateContainerStatus, InPlaceUpdatePreCheckBeforeNext,
    InPlaceUpdateState,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::UpdateSpec;

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// A container's ref metadata as Go marshals `metav1.ObjectMeta` holding only labels/annotations.
#[derive(Serialize)]
struct RefMetaOut<'a> {
    #[serde(rename = "creationTimestamp")]
    creation_timestamp: (),
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a BTreeMap<String, String>>,
}

fn ref_meta_out(m: &BTreeMap<String, ObjectMeta>) -> BTreeMap<&str, RefMetaOut<'_>> {
    m.iter()
        .map(|(k, v)| {
            (
                k.as_str(),
                RefMetaOut {
                    creation_timestamp: (),
                    labels: v.labels.as_ref().filter(|l| !l.is_empty()),
                    annotations: v.annotations.as_ref().filter(|a| !a.is_empty()),
                },
            )
        })
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateOut<'a> {
    revision: &'a str,
    update_timestamp: &'a Time,
    last_container_statuses: Option<&'a BTreeMap<String, InPlaceUpdateContainerStatus>>,
    #[serde(skip_serializing_if = "is_false")]
    update_env_from_metadata: bool,
    #[serde(skip_serializing_if = "is_false")]
    update_resources: bool,
    #[serde(skip_serializing_if = "is_false")]
    update_images: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    next_container_images: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    next_container_ref_metadata: BTreeMap<&'a str, RefMetaOut<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    next_container_resources: &'a BTreeMap<String, ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_check_before_next: Option<&'a InPlaceUpdatePreCheckBeforeNext>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    container_batches_record: &'a Vec<InPlaceUpdateContainerBatch>,
}

/// Encodes the state annotation value.
pub(crate) fn encode_state(s: &InPlaceUpdateState) -> Result<String, serde_json::Error> {
    serde_json::to_string(&StateOut {
        revision: &s.revision,
        update_timestamp: &s.update_timestamp,
        last_container_statuses: (!s.last_container_statuses.is_empty())
            .then_some(&s.last_container_statuses),
        update_env_from_metadata: s.update_env_from_metadata,
        update_resources: s.update_resources,
        update_images: s.update_images,
        next_container_images: &s.next_container_images,
        next_container_ref_metadata: ref_meta_out(&s.next_container_ref_metadata),
        next_container_resources: &s.next_container_resources,
        pre_check_before_next: s.pre_check_before_next.as_ref(),
        container_batches_record: &s.container_batches_record,
    })
}

/// Removes `null` members of a JSON object (Go writes `null` for nil maps and slices).
fn strip_nulls(v: &mut Value) {
    if let Value::Object(m) = v {
        m.retain(|_, v| !v.is_null());
    }
}

/// Decodes the state annotation value, accepting `null` for any optional member.
pub(crate) fn decode_state(s: &str) -> Result<InPlaceUpdateState, serde_json::Error> {
    let mut v: Value = serde_json::from_str(s)?;
    strip_nulls(&mut v);
    if let Some(Value::Array(batches)) = v.get_mut("containerBatchesRecord") {
        batches.iter_mut().for_each(strip_nulls);
    }
    if let Some(pre) = v.get_mut("preCheckBeforeNext") {
        strip_nulls(pre);
    }
    serde_json::from_value(v)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecOut<'a> {
    revision: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    container_images: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    container_ref_metadata: BTreeMap<&'a str, RefMetaOut<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    container_resources: &'a BTreeMap<String, ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    meta_data_patch: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    update_env_from_metadata: bool,
    #[serde(skip_serializing_if = "is_zero")]
    grace_seconds: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_template: Option<&'a PodTemplateSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_template: Option<&'a PodTemplateSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecIn {
    #[serde(default)]
    revision: String,
    #[serde(default)]
    container_images: BTreeMap<String, String>,
    #[serde(default)]
    container_ref_metadata: BTreeMap<String, ObjectMeta>,
    #[serde(default)]
    container_resources: BTreeMap<String, ResourceRequirements>,
    #[serde(default)]
    meta_data_patch: Option<String>,
    #[serde(default)]
    update_env_from_metadata: bool,
    #[serde(default)]
    grace_seconds: i32,
    #[serde(default)]
    old_template: Option<PodTemplateSpec>,
    #[serde(default)]
    new_template: Option<PodTemplateSpec>,
}

/// Encodes the grace annotation value.
pub(crate) fn encode_spec(s: &UpdateSpec) -> Result<String, serde_json::Error> {
    let patch = match &s.meta_data_patch {
        Some(p) => Some(base64_encode(&serde_json::to_vec(p)?)),
        None => None,
    };
    serde_json::to_string(&SpecOut {
        revision: &s.revision,
        container_images: &s.container_images,
        container_ref_metadata: ref_meta_out(&s.container_ref_metadata),
        container_resources: &s.container_resources,
        meta_data_patch: patch,
        update_env_from_metadata: s.update_env_from_metadata,
        grace_seconds: s.grace_seconds,
        old_template: s.old_template.as_ref(),
        new_template: s.new_template.as_ref(),
    })
}

/// Decodes the grace annotation value.
pub(crate) fn decode_spec(s: &str) -> Result<UpdateSpec, serde_json::Error> {
    use serde::de::Error as _;
    let mut v: Value = serde_json::from_str(s)?;
    strip_nulls(&mut v);
    let raw: SpecIn = serde_json::from_value(v)?;
    let meta_data_patch = match raw.meta_data_patch {
        None => None,
        Some(b64) => {
            let bytes = base64_decode(&b64)
                .ok_or_else(|| serde_json::Error::custom("metaDataPatch is not valid base64"))?;
            Some(serde_json::from_slice(&bytes)?)
        }
    };
    Ok(UpdateSpec {
        revision: raw.revision,
        container_images: raw.container_images,
        container_ref_metadata: raw.container_ref_metadata,
        container_resources: raw.container_resources,
        meta_data_patch,
        update_env_from_metadata: raw.update_env_from_metadata,
        grace_seconds: raw.grace_seconds,
        old_template: raw.old_template,
        new_template: raw.new_template,
    })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (Go `encoding/base64.StdEncoding`).
pub(crate) fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` on invalid input.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    if bits >= 6 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn base64_round_trip() {
        for s in [
            "",
            "f",
            "fo",
            "foo",
            "foob",
            "fooba",
            "foobar",
            "{\"metadata\":{}}",
        ] {
            let e = base64_encode(s.as_bytes());
            assert_eq!(base64_decode(&e).unwrap(), s.as_bytes());
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert!(base64_decode("Z").is_none());
        assert!(base64_decode("Z!==").is_none());
    }

    #[test]
    fn fresh_state_is_encoded_like_go() {
        let s = InPlaceUpdateState {
            revision: "cs-abc".into(),
            update_timestamp: t("2026-01-02T03:04:05Z"),
            last_container_statuses: BTreeMap::new(),
            update_env_from_metadata: false,
            update_resources: false,
            update_images: true,
            next_container_images: BTreeMap::new(),
            next_container_ref_metadata: BTreeMap::new(),
            next_container_resources: BTreeMap::new(),
            pre_check_before_next: None,
            container_batches_record: vec![],
        };
        assert_eq!(
            encode_state(&s).unwrap(),
            r#"{"revision":"cs-abc","updateTimestamp":"2026-01-02T03:04:05Z","lastContainerStatuses":null,"updateImages":true}"#
        );
        assert_eq!(decode_state(&encode_state(&s).unwrap()).unwrap(), s);
    }

    #[test]
    fn full_state_round_trip_and_go_shapes() {
        let s = InPlaceUpdateState {
            revision: "cs-abc".into(),
            update_timestamp: t("2026-01-02T03:04:05Z"),
            last_container_statuses: BTreeMap::from([(
                "main".into(),
                InPlaceUpdateContainerStatus {
                    image_id: "sha256:1".into(),
                },
            )]),
            update_env_from_metadata: true,
            update_resources: false,
            update_images: true,
            next_container_images: BTreeMap::from([("side".into(), "img:2".into())]),
            next_container_ref_metadata: BTreeMap::from([(
                "side".into(),
                ObjectMeta {
                    labels: Some(BTreeMap::from([("k".into(), "v".into())])),
                    ..Default::default()
                },
            )]),
            next_container_resources: BTreeMap::new(),
            pre_check_before_next: Some(InPlaceUpdatePreCheckBeforeNext {
                containers_required_ready: vec!["main".into()],
            }),
            container_batches_record: vec![InPlaceUpdateContainerBatch {
                timestamp: t("2026-01-02T03:04:05Z"),
                containers: vec!["main".into()],
            }],
        };
        let enc = encode_state(&s).unwrap();
        assert_eq!(
            enc,
            r#"{"revision":"cs-abc","updateTimestamp":"2026-01-02T03:04:05Z","lastContainerStatuses":{"main":{"imageID":"sha256:1"}},"updateEnvFromMetadata":true,"updateImages":true,"nextContainerImages":{"side":"img:2"},"nextContainerRefMetadata":{"side":{"creationTimestamp":null,"labels":{"k":"v"}}},"preCheckBeforeNext":{"containersRequiredReady":["main"]},"containerBatchesRecord":[{"timestamp":"2026-01-02T03:04:05Z","containers":["main"]}]}"#
        );
        assert_eq!(decode_state(&enc).unwrap(), s);
    }

    #[test]
    fn decode_state_accepts_go_nulls() {
        let go = r#"{"revision":"r","updateTimestamp":"2026-01-02T03:04:05Z","lastContainerStatuses":null,"containerBatchesRecord":[{"timestamp":"2026-01-02T03:04:05Z","containers":null}],"preCheckBeforeNext":{"containersRequiredReady":null}}"#;
        let s = decode_state(go).unwrap();
        assert!(s.last_container_statuses.is_empty());
        assert!(s.container_batches_record[0].containers.is_empty());
        assert!(decode_state("{").is_err());
        assert!(
            decode_state("{}").is_err(),
            "revision and timestamp are required"
        );
    }

    #[test]
    fn spec_round_trip_and_go_shape() {
        let spec = UpdateSpec {
            revision: "cs-2".into(),
            container_images: BTreeMap::from([("main".into(), "nginx:2".into())]),
            meta_data_patch: Some(json!({"metadata":{"labels":{"a":"b"}}})),
            grace_seconds: 5,
            ..Default::default()
        };
        let enc = encode_spec(&spec).unwrap();
        assert_eq!(
            enc,
            format!(
                r#"{{"revision":"cs-2","containerImages":{{"main":"nginx:2"}},"metaDataPatch":"{}","graceSeconds":5}}"#,
                base64_encode(br#"{"metadata":{"labels":{"a":"b"}}}"#)
            )
        );
        assert_eq!(decode_spec(&enc).unwrap(), spec);
        // Go-written document with nulls and unknown members
        let go = r#"{"revision":"x","containerRefMetadata":{"c":{"creationTimestamp":null,"annotations":{"k":"v"}}},"oldTemplate":null,"updateEnvFromMetadata":true}"#;
        let d = decode_spec(go).unwrap();
        assert!(d.update_env_from_metadata);
        assert_eq!(
            d.container_ref_metadata["c"].annotations.as_ref().unwrap()["k"],
            "v"
        );
        assert!(decode_spec(r#"{"revision":"x","metaDataPatch":"!!"}"#).is_err());
    }
}
