//! Container hashes compatible with the ones kruise-daemon writes into the
//! `apps.kruise.io/runtime-containers-meta` annotation.
//!
//! Both hashes are 32-bit FNV-1a over the text Kubernetes' `hashutil.DeepHashObject` produces for
//! a byte slice holding Go `encoding/json` output, i.e. `([]uint8)[b0 b1 ...]` with the bytes in
//! decimal. To get identical input bytes the JSON is produced here with Go's string escaping
//! (`<`, `>`, `&`, U+2028 and U+2029 are escaped as `\u00XX`/`\u20XX`).

use k8s_openapi::Metadata;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::pod::ContainerView;

/// Environment variables that never count as "env from metadata" (SidecarSet versions).
const EXCLUDED_ENVS: [&str; 2] = ["SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"];

/// 32-bit FNV-1a.
fn fnv32a(bytes: impl IntoIterator<Item = u8>) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Hash of a JSON document the way `DeepHashObject(fnv32a, jsonBytes)` computes it.
pub(crate) fn hash_json_bytes(json: &[u8]) -> u64 {
    let mut text = String::with_capacity(json.len() * 4 + 12);
    text.push_str("([]uint8)[");
    for (i, b) in json.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        text.push_str(&b.to_string());
    }
    text.push(']');
    u64::from(fnv32a(text.into_bytes()))
}

/// Appends `s` as a JSON string literal with Go `encoding/json` escaping.
pub(crate) fn push_go_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{0}'..='\u{1f}' => {
                let b = ch as u32 as u8;
                out.push_str("\\u00");
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0xf)] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Splits `metadata.labels['key']` into (`metadata.labels`, `key`), as upstream
/// `fieldpath.SplitMaybeSubscriptedPath` does; `None` when the path has no subscript.
pub(crate) fn split_subscripted_path(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (head, key) = inner.split_once("['")?;
    if head.is_empty() {
        return None;
    }
    Some((head, key))
}

/// The `(env name, field path, subscript)` of every env var of `c` that takes its value from a
/// subscripted `fieldRef` (literal values, other sources and the SidecarSet version envs are
/// skipped), in declaration order.
fn field_ref_envs(c: &impl ContainerView) -> impl Iterator<Item = (&str, &str, &str)> {
    c.env().iter().filter_map(|e| {
        if e.value.as_deref().is_some_and(|v| !v.is_empty()) {
            return None;
        }
        if EXCLUDED_ENVS.contains(&e.name.as_str()) {
            return None;
        }
        let field_ref = e.value_from.as_ref()?.field_ref.as_ref()?;
        let (path, key) = split_subscripted_path(&field_ref.field_path)?;
        Some((e.name.as_str(), path, key))
    })
}

/// Whether container `c` reads `metadata.labels['key']` (`path` = `"metadata.labels"`) or
/// `metadata.annotations['key']` (`path` = `"metadata.annotations"`) through an env `fieldRef`
/// (OpenKruise `containermeta.IsContainerReferenceToMeta`).
pub fn is_container_reference_to_meta(c: &impl ContainerView, path: &str, key: &str) -> bool {
    field_ref_envs(c).any(|(_, p, k)| p == path && k == key)
}

/// The hash kruise-daemon reports as `extractedEnvFromMetadataHash` once the container runs with
/// the env values that the pod's current labels/annotations imply: the env vars taken from
/// `metadata.labels[...]`/`metadata.annotations[...]`, resolved against the pod's metadata,
/// sorted by name, JSON-encoded as `[{"name":..,"value":..}]` (`null` when there are none)
/// (OpenKruise `envFromMetadataHasher.GetExpectHash`).
pub fn expected_env_from_metadata_hash(
    c: &impl ContainerView,
    pod: &impl Metadata<Ty = ObjectMeta>,
) -> u64 {
    let meta = pod.metadata();
    let envs = field_ref_envs(c)
        .filter_map(|(name, path, key)| {
            let map = match path {
                "metadata.labels" => meta.labels.as_ref(),
                "metadata.annotations" => meta.annotations.as_ref(),
                _ => return None,
            };
            let value = map
                .and_then(|m| m.get(key))
                .map(String::as_str)
                .unwrap_or("");
            Some((name, value))
        })
        .collect();
    hash_envs(envs)
}

/// The `extractedEnvFromMetadataHash` of a running container (OpenKruise
/// `envFromMetadataHasher.GetCurrentHash`, computed by kruise-daemon): the same encoding as
/// [`expected_env_from_metadata_hash`], with each env var's value as the running process sees
/// it — `running_env(name)`, e.g. from the output of `env` executed in the container; `None`
/// (not set) counts as empty.
pub fn current_env_from_metadata_hash<'a>(
    c: &'a impl ContainerView,
    running_env: impl Fn(&str) -> Option<&'a str>,
) -> u64 {
    let envs = field_ref_envs(c)
        .filter(|(_, path, _)| matches!(*path, "metadata.labels" | "metadata.annotations"))
        .map(|(name, _, _)| (name, running_env(name).unwrap_or("")))
        .collect();
    hash_envs(envs)
}

/// Go's `hashEnvs`: the env vars sorted by name (stable), `json.Marshal`ed as `[]v1.EnvVar`
/// (an empty value is omitted; none at all is `null`), hashed by [`hash_json_bytes`].
fn hash_envs(mut envs: Vec<(&str, &str)>) -> u64 {
    envs.sort_by(|a, b| a.0.cmp(b.0));
    let mut json = String::new();
    if envs.is_empty() {
        json.push_str("null");
    } else {
        json.push('[');
        for (i, (name, value)) in envs.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str("{\"name\":");
            push_go_json_string(&mut json, name);
            if !value.is_empty() {
                json.push_str(",\"value\":");
                push_go_json_string(&mut json, value);
            }
            json.push('}');
        }
        json.push(']');
    }
    hash_json_bytes(json.as_bytes())
}

/// The kubelet's container hash since Kubernetes 1.31 (`HashContainer`, which hashes only
/// `{"image":..,"name":..}`), reported by kruise-daemon as `plainHash`.
///
/// The pre-1.31 kubelet algorithm hashed the Go JSON of the whole container; it is not
/// reproduced (a mismatch only makes the completion check fall back to image IDs).
pub fn plain_container_hash(c: &impl ContainerView) -> u64 {
    let mut json = String::from("{\"image\":");
    push_go_json_string(&mut json, c.image().unwrap_or(""));
    json.push_str(",\"name\":");
    push_go_json_string(&mut json, c.name());
    json.push('}');
    hash_json_bytes(json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector};
    use kruise_api::pod::CachedPod;
    use std::collections::BTreeMap;

    fn field_env(name: &str, path: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // Expected values below were computed with Go (encoding/json + go-spew ForHash config +
    // hash/fnv), i.e. the same inputs kruise-daemon and the kubelet hash.
    #[test]
    fn plain_hash_matches_go() {
        let c = Container {
            name: "main".into(),
            image: Some("nginx:1.25".into()),
            ..Default::default()
        };
        assert_eq!(plain_container_hash(&c), 436018172);
        let c = Container {
            name: "sidecar".into(),
            image: Some("busybox".into()),
            ..Default::default()
        };
        assert_eq!(plain_container_hash(&c), 287817012);
    }

    #[test]
    fn env_hash_matches_go() {
        let pod = CachedPod::default();
        let c = Container {
            name: "c".into(),
            ..Default::default()
        };
        assert_eq!(expected_env_from_metadata_hash(&c, &pod), 86995377);

        let mut pod = CachedPod::default();
        pod.metadata.labels = Some(BTreeMap::from([("la".to_string(), "x".to_string())]));
        let c = Container {
            name: "c".into(),
            env: Some(vec![
                field_env("B", "metadata.annotations['missing']"),
                field_env("A", "metadata.labels['la']"),
                field_env("SIDECARSET_VERSION", "metadata.labels['la']"),
                field_env("N", "metadata.name"),
                EnvVar {
                    name: "L".into(),
                    value: Some("lit".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        assert_eq!(expected_env_from_metadata_hash(&c, &pod), 297544401);

        pod.metadata.labels = Some(BTreeMap::from([(
            "e".to_string(),
            "<a&b>\"q\"\\ \n\t\u{1}\u{2028} é 中".to_string(),
        )]));
        let c = Container {
            name: "c".into(),
            env: Some(vec![field_env("E", "metadata.labels['e']")]),
            ..Default::default()
        };
        assert_eq!(expected_env_from_metadata_hash(&c, &pod), 3064329125);
    }

    #[test]
    fn current_env_hash_equals_expected_when_the_process_sees_the_pod_metadata() {
        let mut pod = CachedPod::default();
        pod.metadata.labels = Some(BTreeMap::from([("la".to_string(), "x".to_string())]));
        let c = Container {
            name: "c".into(),
            env: Some(vec![
                field_env("B", "metadata.annotations['missing']"),
                field_env("A", "metadata.labels['la']"),
                field_env("SIDECARSET_VERSION", "metadata.labels['la']"),
                field_env("N", "metadata.name"),
            ]),
            ..Default::default()
        };
        // The process sees A=x and no B, as the kubelet resolved them at start.
        let running = |name: &str| match name {
            "A" => Some("x"),
            "SIDECARSET_VERSION" => Some("ignored"),
            "N" => Some("pod-name"),
            _ => None,
        };
        assert_eq!(current_env_from_metadata_hash(&c, running), 297544401);
        assert_eq!(
            current_env_from_metadata_hash(&c, running),
            expected_env_from_metadata_hash(&c, &pod)
        );
        // After the label changed, the running process still has the old value.
        pod.metadata.labels = Some(BTreeMap::from([("la".to_string(), "y".to_string())]));
        assert_ne!(
            current_env_from_metadata_hash(&c, running),
            expected_env_from_metadata_hash(&c, &pod)
        );
        // A container without such envs hashes `null` either way.
        let plain = Container {
            name: "p".into(),
            ..Default::default()
        };
        assert_eq!(current_env_from_metadata_hash(&plain, |_| None), 86995377);
    }

    #[test]
    fn go_string_escaping() {
        let mut s = String::new();
        push_go_json_string(
            &mut s,
            "<a&b>\"q\"\\ \n\t\u{1}\u{2028} é 中\u{8}\u{c}\u{7f}",
        );
        assert_eq!(
            s,
            "\"\\u003ca\\u0026b\\u003e\\\"q\\\"\\\\ \\n\\t\\u0001\\u2028 é 中\\b\\f\u{7f}\""
        );
    }

    #[test]
    fn subscripted_paths() {
        assert_eq!(
            split_subscripted_path("metadata.labels['a/b']"),
            Some(("metadata.labels", "a/b"))
        );
        assert_eq!(split_subscripted_path("metadata.labels"), None);
        assert_eq!(split_subscripted_path("['x']"), None);
        assert_eq!(split_subscripted_path("metadata.labels'x']"), None);
        assert_eq!(
            split_subscripted_path("metadata.annotations['a['b']"),
            Some(("metadata.annotations", "a['b"))
        );
    }

    #[test]
    fn reference_to_meta() {
        let c = Container {
            name: "c".into(),
            env: Some(vec![
                field_env("A", "metadata.labels['k']"),
                field_env("SIDECARSET_VERSION", "metadata.annotations['v']"),
                EnvVar {
                    value: Some("set".into()),
                    ..field_env("B", "metadata.annotations['lit']")
                },
            ]),
            ..Default::default()
        };
        assert!(is_container_reference_to_meta(&c, "metadata.labels", "k"));
        assert!(!is_container_reference_to_meta(
            &c,
            "metadata.annotations",
            "k"
        ));
        assert!(!is_container_reference_to_meta(
            &c,
            "metadata.annotations",
            "v"
        ));
        assert!(!is_container_reference_to_meta(
            &c,
            "metadata.annotations",
            "lit"
        ));
    }
}
