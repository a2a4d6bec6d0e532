//! What OpenKruise's `pkg/control/sidecarcontrol` decides about one SidecarSet and one pod:
//! the upgrade-spec annotations pods carry (`kruise.io/sidecarset-hash`,
//! `kruise.io/sidecarset-hash-without-image`, `kruise.io/sidecarset-injected-list`,
//! `kruise.io/sidecarset-inplace-update-state`), whether a pod is injected, consistent,
//! upgraded, ready and upgradable, hot-upgrade container pairs, shared volume mounts and
//! transferred env vars, and pod metadata patches.
//!
//! Every annotation is read and written in the byte format OpenKruise v1.9.0 uses, so pods
//! injected by OpenKruise keep upgrading under kruise-rs and the other way round.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, ObjectFieldSelector, Pod, VolumeDevice, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::common::{InPlaceUpdateContainerStatus, InPlaceUpdateState};
use kruise_api::apps::v1beta1::{SidecarContainer, SidecarSet};
use kruise_api::keys;
use kruise_api::pod::{CachedContainer, CachedPod, ContainerView};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::podutil;

mod go_decode;

/// Label on a SidecarSet's ControllerRevisions naming the SidecarSet.
pub const SIDECARSET_KIND_NAME: &str = "kruise.io/sidecarset-name";
/// Env var marking a container as injected by a SidecarSet (value `"true"`).
pub const SIDECAR_ENV_KEY: &str = "IS_INJECTED";
/// Pod condition telling whether every SidecarSet of the pod can upgrade it in place.
pub const SIDECARSET_UPGRADABLE: &str = "SidecarSetUpgradable";
/// Env var of a hot-upgrade container: the value of its version annotation.
pub const SIDECARSET_VERSION_ENV: &str = "SIDECARSET_VERSION";
/// Env var of a hot-upgrade container: the value of its alternate version annotation.
pub const SIDECARSET_VERSION_ALT_ENV: &str = "SIDECARSET_VERSION_ALT";
/// Upgrade type of a sidecar upgraded through a pair of containers.
pub const HOT_UPGRADE: &str = "HotUpgrade";

/// One SidecarSet's entry in the pod annotations `kruise.io/sidecarset-hash` and
/// `kruise.io/sidecarset-hash-without-image` (OpenKruise `SidecarSetUpgradeSpec`). Field order
/// and names are Go's: the annotation is `json.Marshal` of a map from SidecarSet name to this.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SidecarSetUpgradeSpec {
    /// When the pod was injected or upgraded (`metav1.Time`, RFC 3339, seconds, UTC).
    #[serde(rename = "updateTimestamp", default)]
    pub update_timestamp: Option<String>,
    /// The SidecarSet's hash (with or without images, by annotation).
    #[serde(rename = "hash", default)]
    pub hash: String,
    /// The SidecarSet's name.
    #[serde(rename = "sidecarSetName", default)]
    pub sidecar_set_name: String,
    /// Names of the sidecar containers (and native-sidecar init containers); `null` in the
    /// older format Go converts.
    #[serde(rename = "sidecarList", default)]
    pub sidecar_list: Option<Vec<String>>,
    /// Name of the SidecarSet ControllerRevision the pod was injected from.
    #[serde(
        rename = "controllerRevision",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub controller_revision: String,
}

/// Go's `metav1.Time` JSON of `now` (whole seconds, UTC, `Z`).
pub fn go_time(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Annotations of a pod (empty map when absent).
fn annotations(pod: &impl Metadata<Ty = ObjectMeta>) -> Option<&BTreeMap<String, String>> {
    pod.metadata().annotations.as_ref()
}

fn annotation<'a>(pod: &'a impl Metadata<Ty = ObjectMeta>, key: &str) -> Option<&'a str> {
    annotations(pod)
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Error decoding a SidecarSet hash annotation in neither of its formats.
#[derive(Debug, thiserror::Error)]
#[error("invalid annotations[{key}] value {value}, unmarshal failed: {message}")]
pub struct AnnotationError {
    /// The annotation key.
    pub key: String,
    /// Its value.
    pub value: String,
    /// The decoder's message.
    pub message: String,
}

/// Decodes a hash annotation as OpenKruise's webhook does (`buildSidecars`): Go's
/// `map[name]SidecarSetUpgradeSpec`, else the older `map[name]hash` format, turned into specs
/// holding only the hash and the name. An empty or absent annotation is an empty map; `null`
/// leaves Go's map nil, which is `Ok(None)` (writing into it panics in Go).
///
/// Decoding follows Go's `encoding/json` (case-insensitive field names, `null` members, the
/// `updateTimestamp` as `metav1.Time` reads and writes it); see `go_decode`.
///
/// # Errors
/// Neither format decodes; the message is Go's for the older format.
pub fn parse_upgrade_specs(
    value: Option<&str>,
    key: &str,
) -> Result<Option<BTreeMap<String, SidecarSetUpgradeSpec>>, AnnotationError> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(Some(BTreeMap::new()));
    };
    if let Ok(m) = go_decode::upgrade_specs(value) {
        return Ok(m);
    }
    match go_decode::string_map(value) {
        (old, None) => Ok(Some(
            old.unwrap_or_default()
                .into_iter()
                .map(|(k, v)| {
                    let spec = SidecarSetUpgradeSpec {
                        hash: v,
                        sidecar_set_name: k.clone(),
                        ..Default::default()
                    };
                    (k, spec)
                })
                .collect(),
        )),
        (_, Some(message)) => Err(AnnotationError {
            key: key.to_string(),
            value: value.to_string(),
            message,
        }),
    }
}

/// Go's `json.Marshal` of a map of upgrade specs (keys sorted, fields in Go's order).
pub fn encode_upgrade_specs(specs: &BTreeMap<String, SidecarSetUpgradeSpec>) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in specs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&crate::revision::go_json::quote(k));
        out.push(':');
        out.push_str(&encode_upgrade_spec(v));
    }
    out.push('}');
    out
}

fn encode_upgrade_spec(s: &SidecarSetUpgradeSpec) -> String {
    use crate::revision::go_json::quote;
    let ts = match &s.update_timestamp {
        Some(t) => quote(t),
        None => "null".to_string(),
    };
    let list = match &s.sidecar_list {
        Some(l) => format!(
            "[{}]",
            l.iter().map(|n| quote(n)).collect::<Vec<_>>().join(",")
        ),
        None => "null".to_string(),
    };
    let mut out = format!(
        "{{\"updateTimestamp\":{ts},\"hash\":{},\"sidecarSetName\":{},\"sidecarList\":{list}",
        quote(&s.hash),
        quote(&s.sidecar_set_name)
    );
    if !s.controller_revision.is_empty() {
        out.push_str(&format!(
            ",\"controllerRevision\":{}",
            quote(&s.controller_revision)
        ));
    }
    out.push('}');
    out
}

/// The upgrade spec of SidecarSet `name` recorded in the pod annotation `key` (empty when
/// absent or unreadable, only the hash in the older format: OpenKruise
/// `GetPodSidecarSetUpgradeSpecInAnnotations`).
pub fn pod_upgrade_spec(
    pod: &impl Metadata<Ty = ObjectMeta>,
    name: &str,
    key: &str,
) -> SidecarSetUpgradeSpec {
    let Some(value) = annotation(pod, key).filter(|v| !v.is_empty()) else {
        return SidecarSetUpgradeSpec::default();
    };
    upgrade_specs_memo::get(value, decode_pod_upgrade_specs)
        .get(name)
        .cloned()
        .unwrap_or_default()
}

/// What [`pod_upgrade_spec`] reads from an annotation value: every SidecarSet's entry (in the
/// older `map[name]hash` format, only the hash), empty when the value is unreadable.
fn decode_pod_upgrade_specs(value: &str) -> BTreeMap<String, SidecarSetUpgradeSpec> {
    if let Ok(specs) = go_decode::upgrade_specs(value) {
        return specs.unwrap_or_default();
    }
    match go_decode::string_map(value) {
        (Some(old), None) => old
            .into_iter()
            .map(|(name, hash)| {
                let spec = SidecarSetUpgradeSpec {
                    hash,
                    ..Default::default()
                };
                (name, spec)
            })
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// Decoded hash annotations, by value. A SidecarSet pass reads the annotation of every pod it
/// selects several times, and every SidecarSet of a pod reads the same value; pods injected in
/// the same second by the same SidecarSets carry byte-identical values. Decoding is pure, so
/// remembering a bounded number of recent values changes no answer, only its cost.
mod upgrade_specs_memo {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::{Arc, Mutex, OnceLock};

    use super::SidecarSetUpgradeSpec;

    type Specs = Arc<BTreeMap<String, SidecarSetUpgradeSpec>>;

    /// Values remembered at most (then forgotten all at once).
    const CAPACITY: usize = 1024;

    /// Keyed by the whole annotation value (kilobytes for a pod with several SidecarSets),
    /// hashed with foldhash (seeded per process): SipHash over such keys cost more than the
    /// decoding it saves.
    type Memo = HashMap<Box<str>, Specs, foldhash::fast::RandomState>;

    fn memo() -> &'static Mutex<Memo> {
        static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
        MEMO.get_or_init(Mutex::default)
    }

    /// `decode(value)`, remembered.
    pub(super) fn get(
        value: &str,
        decode: fn(&str) -> BTreeMap<String, SidecarSetUpgradeSpec>,
    ) -> Specs {
        if let Some(hit) = memo()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(value)
        {
            return hit.clone();
        }
        let specs = Arc::new(decode(value));
        let mut m = memo()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if m.len() >= CAPACITY {
            m.clear();
        }
        m.insert(value.into(), specs.clone());
        specs
    }
}

/// The SidecarSet hash the pod was injected or last upgraded with (`GetPodSidecarSetRevision`).
pub fn pod_sidecarset_revision(pod: &impl Metadata<Ty = ObjectMeta>, name: &str) -> String {
    pod_upgrade_spec(pod, name, keys::SIDECARSET_HASH).hash
}

/// The ControllerRevision name the pod was injected from (`GetPodSidecarSetControllerRevision`).
pub fn pod_sidecarset_controller_revision(
    pod: &impl Metadata<Ty = ObjectMeta>,
    name: &str,
) -> String {
    pod_upgrade_spec(pod, name, keys::SIDECARSET_HASH).controller_revision
}

/// The image-less SidecarSet hash the pod carries (`GetPodSidecarSetWithoutImageRevision`).
pub fn pod_sidecarset_without_image_revision(
    pod: &impl Metadata<Ty = ObjectMeta>,
    name: &str,
) -> String {
    pod_upgrade_spec(pod, name, keys::SIDECARSET_HASH_WITHOUT_IMAGE).hash
}

/// The SidecarSet's own hash annotation (`GetSidecarSetRevision`).
pub fn sidecarset_revision(s: &SidecarSet) -> &str {
    s.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::SIDECARSET_HASH))
        .map(String::as_str)
        .unwrap_or("")
}

/// The SidecarSet's image-less hash annotation (`GetSidecarSetWithoutImageRevision`).
pub fn sidecarset_without_image_revision(s: &SidecarSet) -> &str {
    s.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::SIDECARSET_HASH_WITHOUT_IMAGE))
        .map(String::as_str)
        .unwrap_or("")
}

/// Name of a SidecarSet (`""` when unnamed).
pub fn name(s: &SidecarSet) -> &str {
    s.metadata.name.as_deref().unwrap_or("")
}

/// Whether the pod runs the SidecarSet's latest hash (`IsPodSidecarUpdated`).
pub fn is_pod_sidecar_updated(s: &SidecarSet, pod: &CachedPod) -> bool {
    sidecarset_revision(s) == pod_sidecarset_revision(pod, name(s))
}

/// The SidecarSet's sidecar containers (empty when absent).
pub fn containers(s: &SidecarSet) -> &[SidecarContainer] {
    s.spec.containers.as_deref().unwrap_or(&[])
}

/// The SidecarSet's init containers (empty when absent).
pub fn init_containers(s: &SidecarSet) -> &[SidecarContainer] {
    s.spec.init_containers.as_deref().unwrap_or(&[])
}

/// Whether a sidecar is upgraded through a hot-upgrade container pair (`IsHotUpgradeContainer`).
pub fn is_hot_upgrade(c: &SidecarContainer) -> bool {
    c.upgrade_strategy
        .as_ref()
        .and_then(|u| u.upgrade_type.as_deref())
        == Some(HOT_UPGRADE)
}

/// The hot-upgrade empty image of a sidecar (`""` when unset).
pub fn hot_upgrade_empty_image(c: &SidecarContainer) -> &str {
    c.upgrade_strategy
        .as_ref()
        .and_then(|u| u.hot_upgrade_empty_image.as_deref())
        .unwrap_or("")
}

/// Whether an init container is a native sidecar (`restartPolicy: Always`).
pub fn is_native_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// The pair of container names of a hot-upgrade sidecar: `<name>-1`, `<name>-2`.
pub fn hot_upgrade_names(name: &str) -> (String, String) {
    (format!("{name}-1"), format!("{name}-2"))
}

/// Pod annotation holding a hot-upgrade container's version.
pub fn version_annotation(container: &str) -> String {
    format!("version.sidecarset.kruise.io/{container}")
}

/// Pod annotation holding a hot-upgrade container's alternate version.
pub fn version_alt_annotation(container: &str) -> String {
    format!("versionalt.sidecarset.kruise.io/{container}")
}

/// The pod's map from hot-upgrade sidecar name to its working container
/// (`GetPodHotUpgradeInfoInAnnotations`): empty when absent or not JSON; after a type error,
/// what Go's decoder had filled in (mismatched members as `""`).
pub fn hot_upgrade_info(pod: &impl Metadata<Ty = ObjectMeta>) -> BTreeMap<String, String> {
    hot_upgrade_info_or_nil(pod).unwrap_or_default()
}

/// [`hot_upgrade_info`], `None` when the annotation is `null` (Go's map is then nil, and the
/// webhook panics when it records a hot-upgrade sidecar in it).
pub fn hot_upgrade_info_or_nil(
    pod: &impl Metadata<Ty = ObjectMeta>,
) -> Option<BTreeMap<String, String>> {
    match annotation(pod, keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER) {
        None => Some(BTreeMap::new()),
        Some(v) => go_decode::string_map(v).0,
    }
}

/// Go's `json.Marshal` of a `map[string]string`.
pub fn encode_string_map(m: &BTreeMap<String, String>) -> String {
    let v = serde_json::to_value(m).unwrap_or(Value::Null);
    crate::revision::go_json::to_string(&v)
}

/// `(working, other)` container of hot-upgrade sidecar `sidecar` in the pod
/// (`GetPodHotUpgradeContainers`): the working one is named in the annotation, `<name>-2`
/// unless the annotation says `<name>-1`.
pub fn pod_hot_upgrade_containers(sidecar: &str, pod: &CachedPod) -> (String, String) {
    let info = hot_upgrade_info(pod);
    let (n1, n2) = hot_upgrade_names(sidecar);
    if info.get(sidecar) == Some(&n1) {
        (n1, n2)
    } else {
        (n2, n1)
    }
}

/// Names of the pod containers a SidecarSet owns: its sidecars, both containers of a
/// hot-upgrade pair (`GetSidecarContainersInPod`).
pub fn sidecar_containers_in_pod(s: &SidecarSet) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for c in containers(s) {
        if is_hot_upgrade(c) {
            let (a, b) = hot_upgrade_names(&c.container.name);
            names.insert(a);
            names.insert(b);
        } else {
            names.insert(c.container.name.clone());
        }
    }
    names
}

/// Names listed as the sidecars of the SidecarSet in the pod's upgrade spec: native-sidecar
/// init containers and sidecar containers (`listSidecarNameInSidecarSet`), sorted.
pub fn sidecar_names(s: &SidecarSet) -> Vec<String> {
    let mut names = BTreeSet::new();
    for c in init_containers(s) {
        if is_native_sidecar(&c.container) {
            names.insert(c.container.name.clone());
        }
    }
    for c in containers(s) {
        names.insert(c.container.name.clone());
    }
    names.into_iter().collect()
}

/// Whether the SidecarSet's name is in the pod's `kruise.io/sidecarset-injected-list`
/// (`IsPodInjectedSidecarSet`).
pub fn is_pod_injected(pod: &impl Metadata<Ty = ObjectMeta>, s: &SidecarSet) -> bool {
    // `injected_list(pod).contains(name(s))`, without building the set.
    let name = name(s);
    annotation(pod, keys::SIDECARSET_INJECTED_LIST)
        .filter(|v| !v.is_empty())
        .is_some_and(|v| v.split(',').any(|n| n == name))
}

/// The names in the pod's `kruise.io/sidecarset-injected-list`.
pub fn injected_list(pod: &impl Metadata<Ty = ObjectMeta>) -> BTreeSet<String> {
    annotation(pod, keys::SIDECARSET_INJECTED_LIST)
        .filter(|v| !v.is_empty())
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

/// The pod's init or regular container named `name`, init containers first
/// (`util.GetContainer`).
pub fn get_container<'a>(pod: &'a CachedPod, name: &str) -> Option<&'a CachedContainer> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .find(|c| c.name == name)
}

/// Whether the pod has every container of the SidecarSet (`IsPodConsistentWithSidecarSet`):
/// a hot-upgrade sidecar needs its working-container entry and both containers of the pair.
pub fn is_pod_consistent_with_sidecarset(pod: &CachedPod, s: &SidecarSet) -> bool {
    let info = hot_upgrade_info(pod);
    containers(s).iter().all(|c| {
        let n = &c.container.name;
        if is_hot_upgrade(c) {
            let (a, b) = hot_upgrade_names(n);
            info.contains_key(n)
                && get_container(pod, &a).is_some()
                && get_container(pod, &b).is_some()
        } else {
            get_container(pod, n).is_some()
        }
    })
}

/// Whether a pod container carries the `IS_INJECTED=true` env var.
pub fn is_injected_container(c: &impl ContainerView) -> bool {
    c.env()
        .iter()
        .find(|e| e.name == SIDECAR_ENV_KEY)
        .is_some_and(|e| e.value.as_deref() == Some("true"))
}

fn share_enabled(p: Option<&kruise_api::apps::v1beta1::ShareVolumePolicy>) -> bool {
    p.and_then(|p| p.type_.as_deref()) == Some("enabled")
}

/// `$(NAME)` references in a `subPathExpr` (OpenKruise `SubPathExprEnvReg`).
fn subpath_env_names(expr: &str) -> Vec<&str> {
    let bytes = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'$' && bytes[i + 1] == b'(' {
            let start = i + 2;
            let mut j = start;
            let ok_first = |b: u8| b == b'-' || b == b'.' || b == b'_' || b.is_ascii_alphabetic();
            if j < bytes.len() && ok_first(bytes[j]) {
                j += 1;
                while j < bytes.len() && (ok_first(bytes[j]) || bytes[j].is_ascii_digit()) {
                    j += 1;
                }
                if j < bytes.len() && bytes[j] == b')' {
                    out.push(&expr[start..j]);
                    i = j + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// Volume mounts of the pod's (non-injected) containers that a sidecar with
/// `shareVolumePolicy: enabled` also gets, and the env vars their `subPathExpr` references
/// (OpenKruise `GetInjectedVolumeMountsAndEnvs`). Empty without the policy.
pub fn injected_volume_mounts_and_envs(
    sidecar: &SidecarContainer,
    pod: &Pod,
) -> (Vec<VolumeMount>, Vec<EnvVar>) {
    if !share_enabled(sidecar.share_volume_policy.as_ref()) {
        return (Vec::new(), Vec::new());
    }
    let mut mounts = Vec::new();
    let mut envs = Vec::new();
    for app in full_containers(pod) {
        if is_injected_container(app) {
            continue;
        }
        for m in app.volume_mounts.iter().flatten() {
            mounts.push(m.clone());
            for env in subpath_env_names(m.sub_path_expr.as_deref().unwrap_or("")) {
                if let Some(e) = app.env.iter().flatten().find(|e| e.name == env) {
                    envs.push(e.clone());
                }
            }
        }
    }
    (mounts, envs)
}

/// Volume devices of the pod's (non-injected) containers a sidecar with
/// `shareVolumeDevicePolicy: enabled` also gets (`GetInjectedVolumeDevices`).
pub fn injected_volume_devices(sidecar: &SidecarContainer, pod: &Pod) -> Vec<VolumeDevice> {
    if !share_enabled(sidecar.share_volume_device_policy.as_ref()) {
        return Vec::new();
    }
    full_containers(pod)
        .iter()
        .filter(|c| !is_injected_container(*c))
        .flat_map(|c| c.volume_devices.iter().flatten().cloned())
        .collect()
}

/// The regular containers of a full pod (an admission request's).
fn full_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
}

/// Splits `metadata.labels['key']` into (`metadata.labels`, `key`) (`SplitMaybeSubscriptedPath`).
fn split_subscripted(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_suffix("']")?;
    let open = rest.find("['").filter(|&i| i > 0)?;
    Some((&rest[..open], &rest[open + 2..]))
}

/// The source container name a `transferEnv.sourceContainerNameFrom.fieldRef` points at
/// (`ExtractContainerNameFromFieldPath`): a pod label or annotation.
///
/// # Errors
/// Go's texts for an invalid key, a path that takes no subscript, an unsupported path.
pub fn container_name_from_field_path(
    fs: &ObjectFieldSelector,
    pod: &impl Metadata<Ty = ObjectMeta>,
) -> Result<String, String> {
    let path = fs.field_path.as_str();
    let Some((p, key)) = split_subscripted(path) else {
        return Err(format!("unsupported fieldPath: {path}"));
    };
    let invalid =
        |errs: Vec<String>| format!("invalid key subscript in {path}: {}", errs.join(";"));
    match p {
        "metadata.annotations" => {
            let errs = kruise_api::validation::names::is_qualified_name(&key.to_lowercase());
            if !errs.is_empty() {
                return Err(invalid(errs));
            }
            Ok(annotation(pod, key).unwrap_or("").to_string())
        }
        "metadata.labels" => {
            let errs = kruise_api::validation::names::is_qualified_name(key);
            if !errs.is_empty() {
                return Err(invalid(errs));
            }
            Ok(pod
                .metadata()
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .cloned()
                .unwrap_or_default())
        }
        _ => Err(format!("fieldPath {path:?} does not support subscript")),
    }
}

/// Env vars copied into a sidecar from the pod's containers (`GetSidecarTransferEnvs`): per
/// `transferEnv` entry, the names `envName` and `envNames` (sorted, deduplicated) looked up in
/// the source container; missing ones are skipped.
pub fn transfer_envs(sidecar: &SidecarContainer, pod: &Pod) -> Vec<EnvVar> {
    let mut in_pod: BTreeMap<String, &EnvVar> = BTreeMap::new();
    for c in full_containers(pod) {
        for e in c.env.iter().flatten() {
            in_pod.insert(format!("{}/{}", c.name, e.name), e);
        }
    }
    let mut out = Vec::new();
    for t in sidecar.transfer_env.iter().flatten() {
        let mut names = BTreeSet::new();
        if let Some(n) = t.env_name.as_deref().filter(|n| !n.is_empty()) {
            names.insert(n.to_string());
        }
        for n in t.env_names.iter().flatten() {
            names.insert(n.clone());
        }
        let mut source = t.source_container_name.clone().unwrap_or_default();
        if let Some(fr) = t
            .source_container_name_from
            .as_ref()
            .and_then(|f| f.field_ref.as_ref())
        {
            match container_name_from_field_path(fr, pod) {
                Ok(n) => source = n,
                Err(_) => continue,
            }
        }
        for n in &names {
            if let Some(e) = in_pod.get(&format!("{source}/{n}")) {
                out.push((*e).clone());
            }
        }
    }
    out
}

/// OpenKruise `util.MergeEnvVar`: `additional` vars whose name is not yet present, appended.
pub fn merge_env(original: &mut Vec<EnvVar>, additional: &[EnvVar]) {
    let mut names: BTreeSet<String> = original.iter().map(|e| e.name.clone()).collect();
    for e in additional {
        if names.insert(e.name.clone()) {
            original.push(e.clone());
        }
    }
}

/// OpenKruise `util.MergeVolumeMounts`: `additional` mounts whose path is used by no mount or
/// device of the container yet, appended.
pub fn merge_volume_mounts(c: &mut Container, additional: &[VolumeMount]) {
    let mut points: BTreeSet<String> = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.clone())
        .chain(
            c.volume_devices
                .iter()
                .flatten()
                .map(|d| d.device_path.clone()),
        )
        .collect();
    for m in additional {
        if points.insert(m.mount_path.clone()) {
            c.volume_mounts.get_or_insert_with(Vec::new).push(m.clone());
        }
    }
}

/// OpenKruise `util.MergeVolumeDevices`: `additional` devices whose path is used by no device or
/// mount of the container yet, appended.
pub fn merge_volume_devices(c: &mut Container, additional: &[VolumeDevice]) {
    let mut points: BTreeSet<String> = c
        .volume_devices
        .iter()
        .flatten()
        .map(|d| d.device_path.clone())
        .chain(
            c.volume_mounts
                .iter()
                .flatten()
                .map(|m| m.mount_path.clone()),
        )
        .collect();
    for d in additional {
        if points.insert(d.device_path.clone()) {
            c.volume_devices
                .get_or_insert_with(Vec::new)
                .push(d.clone());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Images

/// An image reference split as docker/distribution's `reference.Parse` splits it (no
/// normalisation: `busybox` stays `busybox`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRef {
    /// Repository (domain and path).
    pub repo: String,
    /// Tag, `""` if none.
    pub tag: String,
    /// Digest (`algorithm:hex`), `""` if none.
    pub digest: String,
}

fn is_path_component(s: &str) -> bool {
    // [a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*
    let b = s.as_bytes();
    if b.is_empty() || !is_lower_alnum(b[0]) || !is_lower_alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_lower_alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !is_lower_alnum(b[i]) {
            i += 1;
        }
        let sep = &s[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|c| c == b'-')) {
            return false;
        }
    }
    true
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_domain(s: &str) -> bool {
    // host (labels of [a-zA-Z0-9-]), optional :port
    let (host, port) = match s.rfind(':') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    !host.is_empty()
        && host.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        })
}

fn is_tag(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.' || *c == b'-')
}

fn is_digest(s: &str) -> bool {
    let Some((alg, hex)) = s.split_once(':') else {
        return false;
    };
    let len = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// docker/distribution `reference.Parse`: `None` for a string that is not a reference
/// (including upper-case repository names and names over 255 characters).
pub fn parse_image(image: &str) -> Option<ImageRef> {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => {
            if !is_digest(d) {
                return None;
            }
            (r, d.to_string())
        }
        None => (image, String::new()),
    };
    // A tag is after the last ':' that follows the last '/'.
    let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => {
            let t = &rest[last_slash + i + 1..];
            if !is_tag(t) {
                return None;
            }
            (&rest[..last_slash + i], t.to_string())
        }
        None => (rest, String::new()),
    };
    if name.is_empty() || name.len() > 255 {
        return None;
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    let first_is_domain = parts.len() > 1 && is_domain(parts[0]);
    if first_is_domain {
        parts.remove(0);
    }
    if parts.is_empty() || !parts.iter().all(|p| is_path_component(p)) {
        return None;
    }
    Some(ImageRef {
        repo: name.to_string(),
        tag,
        digest,
    })
}

/// Whether the image names a digest (`util.IsImageDigest`).
pub fn is_image_digest(image: &str) -> bool {
    parse_image(image).is_some_and(|r| !r.digest.is_empty())
}

/// OpenKruise `util.IsContainerImageEqual`: two digest images are equal by repository and
/// digest, otherwise by repository and tag; unparsable images are never equal.
pub fn is_container_image_equal(a: &str, b: &str) -> bool {
    let (Some(ra), Some(rb)) = (parse_image(a), parse_image(b)) else {
        return false;
    };
    if !ra.digest.is_empty() && !rb.digest.is_empty() {
        return ra.repo == rb.repo && ra.digest == rb.digest;
    }
    ra.repo == rb.repo && ra.tag == rb.tag
}

/// Container image IDs of the pod by container name, without a `scheme://` prefix
/// (`util.GetPodContainerImageIDs`).
pub fn pod_container_image_ids(pod: &CachedPod) -> BTreeMap<String, String> {
    podutil::container_statuses(pod)
        .iter()
        .map(|s| {
            let id = match s.image_id.split_once("://") {
                Some((_, rest)) => rest.split("://").next().unwrap_or(rest).to_string(),
                None => s.image_id.clone(),
            };
            (s.name.clone(), id)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Upgrade state

/// The pod's `kruise.io/sidecarset-inplace-update-state` annotation, by SidecarSet name.
///
/// # Errors
/// When the annotation exists but is not valid JSON of that shape.
pub fn inplace_update_states(
    pod: &CachedPod,
) -> Result<Option<BTreeMap<String, InPlaceUpdateState>>, serde_json::Error> {
    match annotation(pod, keys::SIDECARSET_IN_PLACE_UPDATE_STATE) {
        None => Ok(None),
        Some(v) => serde_json::from_str(v).map(Some),
    }
}

/// OpenKruise `IsSidecarContainerUpdateCompleted`: no container of `containers` still reports
/// the image ID recorded before the in-place update of one of `sidecarsets` while its spec
/// image differs from its status image. No state annotation means complete; an unreadable one
/// means not complete.
pub fn is_sidecar_container_update_completed(
    pod: &CachedPod,
    sidecarsets: &BTreeSet<String>,
    containers: &BTreeSet<String>,
) -> bool {
    let states = match inplace_update_states(pod) {
        Ok(None) => return true,
        Ok(Some(s)) => s,
        Err(_) => return false,
    };
    let mut last: BTreeMap<&str, &InPlaceUpdateContainerStatus> = BTreeMap::new();
    for s in sidecarsets {
        if let Some(state) = states.get(s) {
            for (n, st) in &state.last_container_statuses {
                last.insert(n, st);
            }
        }
    }
    let images: BTreeMap<&str, &str> = podutil::containers(pod)
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or("")))
        .collect();
    for cs in podutil::container_statuses(pod) {
        if !containers.contains(&cs.name) {
            continue;
        }
        if let Some(old) = last.get(cs.name.as_str())
            && old.image_id == cs.image_id
            && images.get(cs.name.as_str()).copied().unwrap_or("") != cs.image
        {
            return false;
        }
    }
    true
}

/// OpenKruise `IsPodStateConsistent` for the SidecarSet's sidecars (or `only`, when not
/// empty): the spec and status of those containers agree — by image digest when every sidecar
/// image is a digest, else by the in-place update state.
pub fn is_pod_state_consistent(s: &SidecarSet, pod: &CachedPod, only: &BTreeSet<String>) -> bool {
    if podutil::containers(pod).len() != podutil::container_statuses(pod).len() {
        return false;
    }
    let sidecars = if only.is_empty() {
        sidecar_containers_in_pod(s)
    } else {
        only.clone()
    };
    let ids = pod_container_image_ids(pod);
    let mut all_digest = true;
    for c in podutil::containers(pod) {
        if !sidecars.contains(&c.name) {
            continue;
        }
        let image = c.image.as_deref().unwrap_or("");
        if !is_image_digest(image) {
            all_digest = false;
            break;
        }
        let Some(id) = ids.get(&c.name) else {
            return false;
        };
        if !is_container_image_equal(image, id) {
            return false;
        }
    }
    if all_digest {
        return true;
    }
    is_sidecar_container_update_completed(pod, &BTreeSet::from([name(s).to_string()]), &sidecars)
}

/// OpenKruise `commonControl.IsPodReady`: every hot-upgrade pair's idle container runs the
/// empty image, and the pod is running, Ready and not being deleted.
pub fn is_pod_ready(s: &SidecarSet, pod: &CachedPod) -> bool {
    let mut empty: BTreeMap<String, &str> = BTreeMap::new();
    for c in containers(s) {
        if is_hot_upgrade(c) {
            let (_, idle) = pod_hot_upgrade_containers(&c.container.name, pod);
            empty.insert(idle, hot_upgrade_empty_image(c));
        }
    }
    for c in podutil::containers(pod) {
        if let Some(img) = empty.get(&c.name)
            && !img.is_empty()
            && c.image.as_deref().unwrap_or("") != *img
        {
            return false;
        }
    }
    podutil::is_running_and_ready(pod)
}

/// OpenKruise `IsSidecarSetUpgradable`: `(can upgrade, consistent)`. Only a pod with the
/// SidecarSet's image-less hash can be upgraded (only images changed); a ready sidecar whose
/// spec and status disagree is an upgrade still in progress (not consistent).
pub fn is_sidecarset_upgradable(s: &SidecarSet, pod: &CachedPod) -> (bool, bool) {
    if pod_sidecarset_without_image_revision(pod, name(s)) != sidecarset_without_image_revision(s) {
        return (false, false);
    }
    let ready: BTreeMap<&str, bool> = podutil::container_statuses(pod)
        .iter()
        .map(|c| (c.name.as_str(), c.ready))
        .collect();
    for sidecar in sidecar_containers_in_pod(s) {
        if ready.get(sidecar.as_str()).copied().unwrap_or(false)
            && !is_pod_state_consistent(s, pod, &BTreeSet::from([sidecar.clone()]))
        {
            return (true, false);
        }
    }
    (true, true)
}

/// Records in the pod's `kruise.io/sidecarset-inplace-update-state` the image IDs the
/// `changed` containers report now, before their update (`UpdatePodAnnotationsInUpgrade`); the
/// SidecarSet's entry is created with its hash and `now` when missing.
pub fn record_inplace_update_state(
    s: &SidecarSet,
    pod: &mut CachedPod,
    changed: &[String],
    now: jiff::Timestamp,
) {
    let mut states = inplace_update_states(pod)
        .ok()
        .flatten()
        .unwrap_or_default();
    let state = states
        .entry(name(s).to_string())
        .or_insert_with(|| InPlaceUpdateState {
            revision: sidecarset_revision(s).to_string(),
            update_timestamp: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
            last_container_statuses: BTreeMap::new(),
            update_env_from_metadata: false,
            update_resources: false,
            update_images: false,
            next_container_images: BTreeMap::new(),
            next_container_ref_metadata: BTreeMap::new(),
            next_container_resources: BTreeMap::new(),
            pre_check_before_next: None,
            container_batches_record: Vec::new(),
        });
    let ids: BTreeMap<&str, &str> = podutil::container_statuses(pod)
        .iter()
        .map(|c| (c.name.as_str(), c.image_id.as_str()))
        .collect();
    for c in changed {
        state.last_container_statuses.insert(
            c.clone(),
            InPlaceUpdateContainerStatus {
                image_id: ids.get(c.as_str()).copied().unwrap_or("").to_string(),
            },
        );
    }
    let v = serde_json::to_string(&states).unwrap_or_default();
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(keys::SIDECARSET_IN_PLACE_UPDATE_STATE.to_string(), v);
}

/// Records in the pod's hash annotations that it runs the SidecarSet's latest hash
/// (`UpdatePodSidecarSetHash`), converting annotations of the older `map[name]hash` format.
pub fn update_pod_sidecarset_hash(pod: &mut CachedPod, s: &SidecarSet, now: jiff::Timestamp) {
    let ts = go_time(now);
    let anns = pod
        .metadata_mut()
        .annotations
        .get_or_insert_with(Default::default);
    let current = anns.get(keys::SIDECARSET_HASH).cloned().unwrap_or_default();
    let mut hashes: BTreeMap<String, SidecarSetUpgradeSpec> = match serde_json::from_str(&current) {
        Ok(m) => m,
        Err(_) => {
            let mut m = BTreeMap::new();
            let mut older = BTreeMap::new();
            if let Ok(old) = serde_json::from_str::<BTreeMap<String, String>>(&current) {
                for (k, v) in &old {
                    m.insert(
                        k.clone(),
                        SidecarSetUpgradeSpec {
                            update_timestamp: Some(ts.clone()),
                            hash: v.clone(),
                            sidecar_set_name: name(s).to_string(),
                            ..Default::default()
                        },
                    );
                }
                older = old;
            }
            let without = anns
                .get(keys::SIDECARSET_HASH_WITHOUT_IMAGE)
                .cloned()
                .unwrap_or_default();
            if let Ok(old) = serde_json::from_str::<BTreeMap<String, String>>(&without) {
                older.extend(old);
                let converted: BTreeMap<String, SidecarSetUpgradeSpec> = older
                    .into_iter()
                    .map(|(k, v)| {
                        (
                            k,
                            SidecarSetUpgradeSpec {
                                update_timestamp: Some(ts.clone()),
                                hash: v,
                                sidecar_set_name: name(s).to_string(),
                                ..Default::default()
                            },
                        )
                    })
                    .collect();
                anns.insert(
                    keys::SIDECARSET_HASH_WITHOUT_IMAGE.to_string(),
                    encode_upgrade_specs(&converted),
                );
            }
            m
        }
    };
    hashes.insert(
        name(s).to_string(),
        SidecarSetUpgradeSpec {
            update_timestamp: Some(ts),
            hash: sidecarset_revision(s).to_string(),
            sidecar_set_name: name(s).to_string(),
            sidecar_list: Some(sidecar_names(s)),
            controller_revision: s
                .status
                .as_ref()
                .and_then(|st| st.latest_revision.clone())
                .unwrap_or_default(),
        },
    );
    anns.insert(
        keys::SIDECARSET_HASH.to_string(),
        encode_upgrade_specs(&hashes),
    );
}

// ---------------------------------------------------------------------------------------------
// Pod metadata

/// Error of a `MergePatchJson` pod metadata patch (the pod's value is not a JSON document).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PatchMetadataError(pub String);

/// Applies `patchPodMetadata` to the pod's annotations (OpenKruise `PatchPodMetadata`):
/// `Retain` (or unset) adds missing keys, `Overwrite` sets every key, `MergePatchJson` JSON
/// merge-patches the pod's value with the SidecarSet's (or sets it when the pod has none).
/// Returns whether the annotations are unchanged (`skip`).
///
/// # Errors
/// A `MergePatchJson` value or pod value that is not JSON.
pub fn patch_pod_metadata(
    pod: &mut impl Metadata<Ty = ObjectMeta>,
    patches: &[kruise_api::apps::v1beta1::SidecarSetPatchPodMetadata],
) -> Result<bool, PatchMetadataError> {
    let anns = pod
        .metadata_mut()
        .annotations
        .get_or_insert_with(Default::default);
    let before = anns.clone();
    for p in patches {
        let entries = p.annotations.iter().flatten();
        match p.patch_policy.as_deref().unwrap_or("") {
            "Retain" | "" => {
                for (k, v) in entries {
                    anns.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            "Overwrite" => {
                for (k, v) in entries {
                    anns.insert(k.clone(), v.clone());
                }
            }
            "MergePatchJson" => {
                for (k, patch) in entries {
                    match anns.get(k).filter(|o| !o.is_empty()) {
                        Some(origin) => {
                            let merged = merge_patch_json(origin, patch)?;
                            anns.insert(k.clone(), merged);
                        }
                        None => {
                            anns.insert(k.clone(), patch.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(*anns == before)
}

/// evanphx/json-patch v5.6.0 `MergePatch` of two JSON documents, written as Go writes the
/// result: objects the merge reads are written with sorted keys, every other value as it was
/// written, compacted.
fn merge_patch_json(origin: &str, patch: &str) -> Result<String, PatchMetadataError> {
    let bad_doc = || PatchMetadataError("Invalid JSON Document".to_string());
    let bad_patch = || PatchMetadataError("Invalid JSON Patch".to_string());
    if serde_json::from_str::<serde::de::IgnoredAny>(origin).is_err() {
        return Err(bad_doc());
    }
    if serde_json::from_str::<serde::de::IgnoredAny>(patch).is_err() {
        return Err(bad_patch());
    }
    if origin.trim() == "null" {
        return Err(bad_doc());
    }
    if patch.trim() == "null" {
        return Err(bad_patch());
    }
    let mut out = String::new();
    match (split_object(origin), split_object(patch)) {
        (Some(mut doc), Some(p)) => {
            merge_docs(&mut doc, p);
            Lazy::Doc(doc).write(&mut out);
        }
        (None, Some(p)) => {
            let mut p = Lazy::Doc(p);
            p.prune_nulls();
            p.write(&mut out);
        }
        (_, None) => {
            let mut p = Lazy::Ary(split_array(patch).ok_or_else(bad_patch)?);
            p.prune_nulls();
            p.write(&mut out);
        }
    }
    Ok(out)
}

type LazyDoc = BTreeMap<String, Option<Lazy>>;

/// A JSON value as evanphx/json-patch's `lazyNode` holds it: its text until it is read as an
/// object or an array (`null` members are `None`).
enum Lazy {
    Raw(String),
    Doc(LazyDoc),
    Ary(Vec<Option<Lazy>>),
}

impl Lazy {
    fn doc_mut(&mut self) -> Option<&mut LazyDoc> {
        if let Lazy::Raw(text) = self
            && let Some(doc) = split_object(text)
        {
            *self = Lazy::Doc(doc);
        }
        match self {
            Lazy::Doc(doc) => Some(doc),
            _ => None,
        }
    }

    fn ary_mut(&mut self) -> Option<&mut Vec<Option<Lazy>>> {
        if let Lazy::Raw(text) = self
            && let Some(ary) = split_array(text)
        {
            *self = Lazy::Ary(ary);
        }
        match self {
            Lazy::Ary(ary) => Some(ary),
            _ => None,
        }
    }

    fn prune_nulls(&mut self) {
        if let Some(doc) = self.doc_mut() {
            doc.retain(|_, v| v.is_some());
            doc.values_mut().flatten().for_each(Lazy::prune_nulls);
        } else if let Some(ary) = self.ary_mut() {
            ary.iter_mut().flatten().for_each(Lazy::prune_nulls);
        }
    }

    fn write(&self, out: &mut String) {
        let write = |v: &Option<Lazy>, out: &mut String| match v {
            Some(v) => v.write(out),
            None => out.push_str("null"),
        };
        match self {
            Lazy::Raw(text) => compact_go(text, out),
            Lazy::Doc(doc) => {
                out.push('{');
                for (i, (k, v)) in doc.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&crate::revision::go_json::quote(k));
                    out.push(':');
                    write(v, out);
                }
                out.push('}');
            }
            Lazy::Ary(ary) => {
                out.push('[');
                for (i, v) in ary.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
        }
    }
}

fn merge_docs(doc: &mut LazyDoc, patch: LazyDoc) {
    for (k, v) in patch {
        let Some(mut v) = v else {
            doc.remove(&k);
            continue;
        };
        let merged = match doc.remove(&k).flatten() {
            Some(cur) => merge_lazy(cur, v),
            None => {
                v.prune_nulls();
                v
            }
        };
        doc.insert(k, Some(merged));
    }
}

fn merge_lazy(mut cur: Lazy, mut patch: Lazy) -> Lazy {
    let Some(doc) = cur.doc_mut() else {
        patch.prune_nulls();
        return patch;
    };
    match patch.doc_mut() {
        Some(p) => {
            merge_docs(doc, std::mem::take(p));
            cur
        }
        None => patch,
    }
}

/// Go's `json.Compact` with HTML escaping of a valid JSON text.
fn compact_go(text: &str, out: &mut String) {
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if !in_string {
            match c {
                ' ' | '\t' | '\n' | '\r' => {}
                '"' => {
                    in_string = true;
                    out.push(c);
                }
                _ => out.push(c),
            }
            continue;
        }
        if escaped {
            escaped = false;
            out.push(c);
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                out.push(c);
            }
            '"' => {
                in_string = false;
                out.push(c);
            }
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    loop {
        match b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

fn value_end(b: &[u8], mut i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while !matches!(
                b.get(i),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The members of a valid JSON text that is an object (later duplicates win), `None` for any
/// other value.
fn split_object(text: &str) -> Option<LazyDoc> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut doc = LazyDoc::new();
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(doc);
    }
    loop {
        let key_end = string_end(b, i)?;
        let key: String = serde_json::from_str(&text[i..key_end]).ok()?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = value_end(b, i)?;
        let raw = &text[i..end];
        doc.insert(key, (raw != "null").then(|| Lazy::Raw(raw.to_string())));
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(doc),
            _ => return None,
        }
    }
}

/// The elements of a valid JSON text that is an array, `None` for any other value.
fn split_array(text: &str) -> Option<Vec<Option<Lazy>>> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut ary = Vec::new();
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(ary);
    }
    loop {
        let end = value_end(b, i)?;
        let raw = &text[i..end];
        ary.push((raw != "null").then(|| Lazy::Raw(raw.to_string())));
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(ary),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests;
