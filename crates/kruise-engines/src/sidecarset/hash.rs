//! The SidecarSet hashes OpenKruise v1.9.0 writes into the annotations `kruise.io/sidecarset-hash`
//! and `kruise.io/sidecarset-hash-without-image` of a SidecarSet and of every pod it injects into
//! (`pkg/control/sidecarcontrol/hash.go`: `SidecarSetHash`, `SidecarSetHashWithoutImage` and their
//! v1beta1 twins).
//!
//! A hash is `rand.SafeEncodeString` of the hex SHA-256 of Go's `json.Marshal` of
//! `map[string]interface{}{"containers": spec.containers}`, plus `"initContainers":
//! spec.initContainers` (all of them) when at least one init container has `restartPolicy:
//! Always`. The containers are encoded as the Go `SidecarContainer` structs: fields in
//! declaration order, `omitempty` zero values left out, struct fields always written, fields Go
//! does not know dropped, quantities as Go writes them, HTML-safe string escapes. A nil list
//! (`spec.containers` absent or `null`) encodes as `null`, an empty one as `[]`, so the two hash
//! differently, as in Go. The pod controller compares the image-less hash of a pod with the
//! SidecarSet's to decide whether only images changed (an in-place upgrade), so a hash that is
//! off by one byte stops every upgrade of pods injected by OpenKruise.
//!
//! The inputs are SidecarSets as JSON (what a client sends or the API server stores); Go's
//! decoding of that JSON into its typed object is reproduced by
//! [`crate::revision::go_json`]. The JSON must be one Go decodes
//! ([`crate::revision::go_json::check_decodable`]). Checked against vectors produced by
//! OpenKruise's own functions (`hash_vectors.tsv`, `make golden`).

use k8s_openapi::api::core::v1::Container;
use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use serde_json::Value;

use crate::revision::go_json::{self, GoType};

/// The SidecarSet API version whose Go types encode the containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `apps.kruise.io/v1alpha1` (`SidecarSetHash`, `SidecarSetHashWithoutImage`).
    V1alpha1,
    /// `apps.kruise.io/v1beta1` (`SidecarSetHashV1beta1`, `SidecarSetHashWithoutImageV1beta1`).
    V1beta1,
}

impl Version {
    fn go_type(self) -> GoType {
        match self {
            Version::V1alpha1 => GoType::SidecarSetV1alpha1,
            Version::V1beta1 => GoType::SidecarSetV1beta1,
        }
    }
}

/// OpenKruise `sidecarcontrol.IsSidecarContainer`: an init container with `restartPolicy:
/// Always` (a Kubernetes native sidecar).
pub fn is_sidecar_container(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn restart_policy_always(container: &Value) -> bool {
    container.get("restartPolicy").and_then(Value::as_str) == Some("Always")
}

/// apimachinery's `rand.SafeEncodeString`: every byte mapped onto an alphabet without vowels
/// (so no words appear) and without look-alike characters.
fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.chars()
        .map(|c| char::from(ALPHANUMS[c as usize % ALPHANUMS.len()]))
        .collect()
}

fn sha256_hex(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// OpenKruise `encodeSidecarSet[V1beta1]`: the bytes that are hashed. `without_image` clears every
/// container's and init container's `image` first (`SidecarSetHashWithoutImage`).
pub fn encode(set: &Value, version: Version, without_image: bool) -> Vec<u8> {
    let ty = version.go_type();
    let list = |key: &str| -> Value {
        let mut v = set
            .get("spec")
            .and_then(|s| s.get(key))
            .cloned()
            .unwrap_or(Value::Null);
        go_json::normalize_field(&mut v, ty, &["spec", key]);
        if without_image && let Value::Array(items) = &mut v {
            for c in items.iter_mut().filter_map(Value::as_object_mut) {
                // Go sets `Image = ""`, which `omitempty` then leaves out.
                c.remove("image");
            }
        }
        v
    };
    let containers = list("containers");
    let init = list("initContainers");
    let mut out = b"{\"containers\":".to_vec();
    out.extend(
        go_json::to_vec_typed_field(&containers, ty, &["spec", "containers"]).unwrap_or_default(),
    );
    let counted = init
        .as_array()
        .is_some_and(|items| items.iter().any(restart_policy_always));
    if counted {
        out.extend_from_slice(b",\"initContainers\":");
        out.extend(
            go_json::to_vec_typed_field(&init, ty, &["spec", "initContainers"]).unwrap_or_default(),
        );
    }
    out.push(b'}');
    out
}

/// OpenKruise `SidecarSetHash` (v1alpha1) / `SidecarSetHashV1beta1` of the SidecarSet Go decodes
/// from `set`: the value of the `kruise.io/sidecarset-hash` annotation.
pub fn sidecarset_hash(set: &Value, version: Version) -> String {
    safe_encode(&sha256_hex(&encode(set, version, false)))
}

/// OpenKruise `SidecarSetHashWithoutImage` (v1alpha1) / `SidecarSetHashWithoutImageV1beta1`: the
/// hash with every image cleared, the value of `kruise.io/sidecarset-hash-without-image`.
pub fn sidecarset_hash_without_image(set: &Value, version: Version) -> String {
    safe_encode(&sha256_hex(&encode(set, version, true)))
}

/// Both hashes of a typed v1beta1 SidecarSet (e.g. one read from the API server): `(hash,
/// hash without image)`. An absent container list is Go's nil list, an empty one an empty list.
pub fn hashes_v1beta1(set: &b1::SidecarSet) -> (String, String) {
    let v = serde_json::to_value(set).unwrap_or(Value::Null);
    (
        sidecarset_hash(&v, Version::V1beta1),
        sidecarset_hash_without_image(&v, Version::V1beta1),
    )
}

/// [`hashes_v1beta1`] of a typed v1alpha1 SidecarSet.
pub fn hashes_v1alpha1(set: &a1::SidecarSet) -> (String, String) {
    let v = serde_json::to_value(set).unwrap_or(Value::Null);
    (
        sidecarset_hash(&v, Version::V1alpha1),
        sidecarset_hash_without_image(&v, Version::V1alpha1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTORS: &str = include_str!("hash_vectors.tsv");

    /// Every vector of `hash_vectors.tsv`: OpenKruise's `SidecarSetHash[V1beta1]` and
    /// `SidecarSetHashWithoutImage[V1beta1]` of the object Go decodes from the input.
    #[test]
    fn hashes_match_openkruise_go() {
        let mut n = 0;
        for line in VECTORS.lines() {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 5, "{line}");
            let obj: Value = serde_json::from_str(cols[0]).unwrap();
            let version = match obj["apiVersion"].as_str() {
                Some("apps.kruise.io/v1alpha1") => Version::V1alpha1,
                _ => Version::V1beta1,
            };
            assert_eq!(
                sidecarset_hash(&obj, version),
                cols[1],
                "hash of {}\n  encoded: {}",
                cols[0],
                String::from_utf8_lossy(&encode(&obj, version, false))
            );
            assert_eq!(
                sidecarset_hash_without_image(&obj, version),
                cols[2],
                "hash without image of {}\n  encoded: {}",
                cols[0],
                String::from_utf8_lossy(&encode(&obj, version, true))
            );
            n += 1;
        }
        assert!(n >= 50, "only {n} vectors");
    }

    #[test]
    fn typed_sets_hash_like_their_json() {
        let line = VECTORS
            .lines()
            .find(|l| l.contains("apps.kruise.io/v1beta1") && l.contains("\"resources\""))
            .unwrap();
        let cols: Vec<&str> = line.split('\t').collect();
        let typed: b1::SidecarSet = serde_json::from_str(cols[0]).unwrap();
        assert_eq!(
            hashes_v1beta1(&typed),
            (cols[1].to_owned(), cols[2].to_owned())
        );
    }

    #[test]
    fn safe_encoding_and_native_sidecars() {
        assert_eq!(safe_encode("0af"), "4v4");
        let c: Container =
            serde_json::from_value(serde_json::json!({"name": "a", "restartPolicy": "Always"}))
                .unwrap();
        assert!(is_sidecar_container(&c));
        assert!(!is_sidecar_container(&Container::default()));
    }
}
