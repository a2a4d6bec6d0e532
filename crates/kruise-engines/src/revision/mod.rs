//! ControllerRevision handling shared by the workloads (CloneSet first), reproducing upstream
//! `controller/history` and OpenKruise's revision conventions byte for byte, so that revisions
//! written by Go OpenKruise are recognised as equal and keep their names:
//!
//! - [`hash_revision`]: upstream `HashControllerRevision` (32-bit FNV-1 over the data bytes, then
//!   the decimal collision count, printed in decimal and passed through `SafeEncodeString`);
//! - [`template_patch`]: CloneSet revision data `{"spec":{"template":{…,"$patch":"replace"}}}`,
//!   with the exact bytes Go OpenKruise produces (see [`go_json`]);
//! - [`new_controller_revision`], [`equal_revision`], [`find_equal_revisions`],
//!   [`sort_revisions`], [`next_revision`], [`live_revisions`], [`history_to_truncate`];
//! - pod revision labels: [`write_revision_hash`], [`short_hash`], [`equal_to_revision_hash`].

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kruise_api::keys;
use serde_json::{Map, Value};

pub mod go_json;

/// `controller-revision-hash`: on a ControllerRevision, its hash (set by
/// [`new_controller_revision`]); on a pod, its revision (see [`write_revision_hash`]).
pub const CONTROLLER_REVISION_HASH_LABEL: &str = keys::CONTROLLER_REVISION_HASH;
/// Pod label with the short revision hash (always the short form).
pub const POD_TEMPLATE_HASH_LABEL: &str = keys::POD_TEMPLATE_HASH;
/// ControllerRevision annotation with the hash of a CloneSet's volumeClaimTemplates.
pub const VCT_HASH_ANNOTATION: &str = keys::CLONESET_VOLUME_CLAIM_TEMPLATE_HASH;
/// History kept when a workload does not set `revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
/// Longest parent-name prefix kept in a revision name (upstream `ControllerRevisionName`).
pub const MAX_REVISION_NAME_PREFIX: usize = 223;

/// Errors reading or building revision data.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The revision has no `data`.
    #[error("ControllerRevision {name} has no data")]
    MissingData {
        /// Revision name.
        name: String,
    },
    /// The data has no `spec.template` object.
    #[error("ControllerRevision {name} data has no spec.template object")]
    MissingTemplate {
        /// Revision name.
        name: String,
    },
    /// `spec.template` is not a valid pod template.
    #[error("ControllerRevision {name}: invalid pod template: {source}")]
    InvalidTemplate {
        /// Revision name.
        name: String,
        /// Decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// An object could not be turned into JSON.
    #[error("cannot encode {what} as JSON: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// Encoding error.
        #[source]
        source: serde_json::Error,
    },
}

// ---------------------------------------------------------------------------------------------
// Hashing and names

const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

fn fnv1_32(mut hash: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        hash = hash.wrapping_mul(FNV32_PRIME);
        hash ^= u32::from(b);
    }
    hash
}

/// Upstream `rand.SafeEncodeString`: maps every byte of `s` onto an alphabet without vowels and
/// easily confused characters (`bcdfghjklmnpqrstvwxz2456789`), by byte value modulo 27.
pub fn safe_encode_string(s: &str) -> String {
    const ALPHANUMS: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// Upstream `HashControllerRevision` over raw data bytes: 32-bit FNV-1 (Go `fnv.New32`, not
/// FNV-1a) of `data`, then of the decimal `collision_count` when given; the sum in decimal, passed
/// through [`safe_encode_string`]. Example: `{}` with collision count 0 hashes to `cccc864bc`.
pub fn hash_revision_bytes(data: &[u8], collision_count: Option<i32>) -> String {
    let mut hash = fnv1_32(FNV32_OFFSET, data);
    if let Some(count) = collision_count {
        hash = fnv1_32(hash, count.to_string().as_bytes());
    }
    safe_encode_string(&hash.to_string())
}

/// [`hash_revision_bytes`] over the Go encoding of `data` ([`go_json::to_vec`]), which is the
/// byte string Go controllers store for generic revision data.
pub fn hash_revision(data: &Value, collision_count: Option<i32>) -> String {
    hash_revision_bytes(&go_json::to_vec(data), collision_count)
}

/// Revision name `<parent>-<hash>`, the parent name cut to its first
/// [`MAX_REVISION_NAME_PREFIX`] bytes (upstream `ControllerRevisionName`).
pub fn revision_name(parent: &str, hash: &str) -> String {
    let mut end = parent.len().min(MAX_REVISION_NAME_PREFIX);
    while !parent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{}", &parent[..end], hash)
}

// ---------------------------------------------------------------------------------------------
// Revision data

/// CloneSet (and Advanced StatefulSet / DaemonSet) revision data for a pod template:
/// `{"spec":{"template":{<template>,"$patch":"replace"}}}`, with the template normalised the way
/// Go OpenKruise encodes it ([`go_json::normalize`]: `metadata.creationTimestamp: null`,
/// `resources: {}` on containers, empty `omitempty` fields dropped, …). Hashing the result with
/// [`hash_revision`] gives the name Go OpenKruise gives the same template.
///
/// Errors: [`RevisionError::Encode`] if the template cannot be serialised (not expected).
pub fn template_patch(template: &PodTemplateSpec) -> Result<Value, RevisionError> {
    let mut tpl = serde_json::to_value(template).map_err(|source| RevisionError::Encode {
        what: "pod template",
        source,
    })?;
    go_json::normalize(&mut tpl, go_json::GoType::PodTemplateSpec);
    if let Value::Object(map) = &mut tpl {
        map.insert("$patch".to_owned(), Value::String("replace".to_owned()));
    }
    let mut spec = Map::new();
    spec.insert("template".to_owned(), tpl);
    let mut root = Map::new();
    root.insert("spec".to_owned(), Value::Object(spec));
    Ok(Value::Object(root))
}

/// UnitedDeployment revision data: `{"spec":{"template":{<spec.template>,"$patch":"replace"}}}`,
/// the subset template (`None`: Go's zero `SubsetTemplate`, `{}`) normalised as Go OpenKruise
/// encodes a `UnitedDeployment`'s `spec.template` ([`go_json::normalize_field`]: zero values of
/// non-`omitempty` fields written, empty `omitempty` ones dropped), so [`hash_revision`] of the
/// result names the revision as OpenKruise v1.9.0's `getUnitedDeploymentPatch` +
/// `HashControllerRevision` do (pkg/controller/uniteddeployment/revision.go) and a manager swap
/// keeps every subset's revision.
///
/// Errors: [`RevisionError::Encode`] if the template cannot be serialised (not expected).
pub fn united_deployment_patch(
    template: Option<&kruise_api::apps::v1alpha1::SubsetTemplate>,
) -> Result<Value, RevisionError> {
    let mut tpl = serde_json::to_value(template).map_err(|source| RevisionError::Encode {
        what: "UnitedDeployment template",
        source,
    })?;
    if !tpl.is_object() {
        tpl = Value::Object(Map::new());
    }
    // k8s-openapi writes `apiVersion`/`kind` on every PersistentVolumeClaim; Go's typed claims
    // in a template carry none unless the user wrote them (which the typed object cannot tell).
    for kind in ["statefulSetTemplate", "advancedStatefulSetTemplate"] {
        let path = format!("/{kind}/spec/volumeClaimTemplates");
        if let Some(Value::Array(claims)) = tpl.pointer_mut(&path) {
            for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
                claim.remove("apiVersion");
                claim.remove("kind");
            }
        }
    }
    go_json::normalize_field(
        &mut tpl,
        go_json::GoType::UnitedDeployment,
        &["spec", "template"],
    );
    if let Value::Object(map) = &mut tpl {
        map.insert("$patch".to_owned(), Value::String("replace".to_owned()));
    }
    let mut spec = Map::new();
    spec.insert("template".to_owned(), tpl);
    let mut root = Map::new();
    root.insert("spec".to_owned(), Value::Object(spec));
    Ok(Value::Object(root))
}

/// The pod template stored in a revision made by [`template_patch`] (or by Go OpenKruise): applying
/// the data replaces the whole template, so the template is `data.spec.template` without the
/// `$patch` directive.
///
/// Errors: [`RevisionError::MissingData`], [`RevisionError::MissingTemplate`],
/// [`RevisionError::InvalidTemplate`].
pub fn template_from_revision(
    revision: &ControllerRevision,
) -> Result<PodTemplateSpec, RevisionError> {
    let name = revision.metadata.name.clone().unwrap_or_default();
    if revision.data.0.is_null() {
        return Err(RevisionError::MissingData { name });
    }
    template_from_data(&name, &revision.data.0)
}

/// [`template_from_revision`] on bare revision data; `name` only labels errors.
pub fn template_from_data(name: &str, data: &Value) -> Result<PodTemplateSpec, RevisionError> {
    let Some(Value::Object(tpl)) = data.get("spec").and_then(|s| s.get("template")) else {
        return Err(RevisionError::MissingTemplate {
            name: name.to_owned(),
        });
    };
    let mut tpl = tpl.clone();
    tpl.remove("$patch");
    serde_json::from_value(Value::Object(tpl)).map_err(|source| RevisionError::InvalidTemplate {
        name: name.to_owned(),
        source,
    })
}

/// A controller owner reference (`controller: true`, `blockOwnerDeletion: true`), as upstream
/// `metav1.NewControllerRef` builds it.
pub fn controller_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Upstream `NewControllerRevision`: a revision of `parent` owned through `owner` (a controller
/// reference, see [`controller_ref`]), labelled with a copy of `template_labels` plus
/// [`CONTROLLER_REVISION_HASH_LABEL`]` = <hash>`, named [`revision_name`]`(parent, hash)` where
/// hash = [`hash_revision`]`(data, collision_count)`, in the parent's namespace.
///
/// Workload-specific annotations (CloneSet copies its own annotations and adds
/// [`VCT_HASH_ANNOTATION`], see [`revision_annotations`]) are the caller's business.
pub fn new_controller_revision(
    parent: &ObjectMeta,
    owner: OwnerReference,
    template_labels: Option<&BTreeMap<String, String>>,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let hash = hash_revision(&data, collision_count);
    let mut labels = template_labels.cloned().unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_owned(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(
                parent.name.as_deref().unwrap_or_default(),
                &hash,
            )),
            namespace: parent.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: RawExtension(data),
        revision: Some(revision),
    }
}

/// Name and hash a revision gets when created with `collision_count` (what the history `Create`
/// loop retries with after a name clash, bumping the collision count): returns
/// `(name, hash)`.
pub fn revision_name_for(
    parent_name: &str,
    data: &Value,
    collision_count: Option<i32>,
) -> (String, String) {
    let hash = hash_revision(data, collision_count);
    (revision_name(parent_name, &hash), hash)
}

/// Annotations of a new revision of a workload with volumeClaimTemplates (OpenKruise CloneSet's
/// `NewRevision`): the workload's own annotations plus [`VCT_HASH_ANNOTATION`] = [`vct_hash`] of the volumeClaimTemplates (empty
/// string when there are none).
pub fn revision_annotations(
    owner_annotations: Option<&BTreeMap<String, String>>,
    volume_claim_templates: &[PersistentVolumeClaim],
) -> Result<BTreeMap<String, String>, RevisionError> {
    let mut annotations = owner_annotations.cloned().unwrap_or_default();
    let hash = if volume_claim_templates.is_empty() {
        String::new()
    } else {
        vct_hash(volume_claim_templates)?.to_string()
    };
    annotations.insert(VCT_HASH_ANNOTATION.to_owned(), hash);
    Ok(annotations)
}

/// OpenKruise's hash of volumeClaimTemplates (`kruise.io/cloneset-volumeclaimtemplate-hash`): the
/// templates reduced to `{metadata: {name}, spec}`, stably sorted by name, encoded as Go does, and
/// hashed with 32-bit FNV-1a over the Go debug rendering of that byte slice
/// (`([]uint8)[…]` — the form upstream `DeepHashObject` feeds the hasher).
///
/// Errors: [`RevisionError::Encode`] if a template cannot be serialised (not expected).
pub fn vct_hash(templates: &[PersistentVolumeClaim]) -> Result<u32, RevisionError> {
    let mut reduced: Vec<(String, Value)> = Vec::with_capacity(templates.len());
    for t in templates {
        let name = t.metadata.name.clone().unwrap_or_default();
        let pvc = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: t.metadata.name.clone(),
                ..ObjectMeta::default()
            },
            spec: t.spec.clone(),
            status: None,
        };
        let mut v = serde_json::to_value(&pvc).map_err(|source| RevisionError::Encode {
            what: "volume claim template",
            source,
        })?;
        // The Go objects carry no type meta.
        if let Value::Object(map) = &mut v {
            map.remove("kind");
            map.remove("apiVersion");
        }
        go_json::normalize(&mut v, go_json::GoType::PersistentVolumeClaim);
        reduced.push((name, v));
    }
    reduced.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    // Typed Go encoding: struct field order, not sorted keys.
    let mut bytes = vec![b'['];
    for (i, (_, v)) in reduced.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        bytes.extend(go_json::to_vec_typed(
            v,
            go_json::GoType::PersistentVolumeClaim,
        ));
    }
    bytes.push(b']');
    let mut rendering = String::with_capacity(bytes.len() * 4 + 16);
    rendering.push_str("([]uint8)[");
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            rendering.push(' ');
        }
        rendering.push_str(&b.to_string());
    }
    rendering.push(']');
    let mut hash: u32 = FNV32_OFFSET;
    for &b in rendering.as_bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(FNV32_PRIME);
    }
    Ok(hash)
}

// ---------------------------------------------------------------------------------------------
// Revision lists

fn go_parse_hash_label(revision: &ControllerRevision) -> Option<u32> {
    let value = revision
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)?;
    value.parse::<i32>().ok().map(|v| v as u32)
}

/// Upstream `EqualRevision`: false when both revisions carry a numeric
/// [`CONTROLLER_REVISION_HASH_LABEL`] and the numbers differ (a legacy check; safe-encoded hashes
/// are rarely numeric), otherwise true iff the data encode to the same bytes (Go encoding, see
/// [`go_json::to_vec`]; a missing `revision` number counts as 0, missing data as `null`).
pub fn equal_revision(lhs: &ControllerRevision, rhs: &ControllerRevision) -> bool {
    if let (Some(l), Some(r)) = (go_parse_hash_label(lhs), go_parse_hash_label(rhs))
        && l != r
    {
        return false;
    }
    let (l, r) = (&lhs.data.0, &rhs.data.0);
    l == r || go_json::to_vec(l) == go_json::to_vec(r)
}

/// Indexes (in order) of the revisions [`equal_revision`] to `needle` (upstream
/// `FindEqualRevisions`).
pub fn find_equal_revisions<R: Borrow<ControllerRevision>>(
    revisions: &[R],
    needle: &ControllerRevision,
) -> Vec<usize> {
    revisions
        .iter()
        .enumerate()
        .filter(|(_, r)| equal_revision((*r).borrow(), needle))
        .map(|(i, _)| i)
        .collect()
}

/// Whether two revisions hold the same pod template although their bytes differ: both data are
/// `{"spec": {"template": …, "$patch": "replace"}}` patches whose templates, written as Go
/// (`k8s.io/api` v0.32) writes a `PodTemplateSpec` ([`go_json::normalize`]), are equal. A
/// revision written by another Go version (e.g. a native StatefulSet's on Kubernetes 1.33+,
/// which no longer writes `metadata.creationTimestamp: null`) then still matches the template
/// it records, so its pods are not taken for out of date. Not part of upstream `EqualRevision`;
/// callers use it only when no revision is byte-equal.
pub fn equivalent_template_revision(lhs: &ControllerRevision, rhs: &ControllerRevision) -> bool {
    fn template(data: &Value) -> Option<Value> {
        let spec = data.get("spec")?.as_object()?;
        if spec.len() != 1 || data.as_object()?.len() != 1 {
            return None;
        }
        let mut tpl = spec.get("template")?.clone();
        let obj = tpl.as_object_mut()?;
        if obj.remove("$patch").as_ref().and_then(Value::as_str) != Some("replace") {
            return None;
        }
        go_json::normalize(&mut tpl, go_json::GoType::PodTemplateSpec);
        Some(tpl)
    }
    match (template(&lhs.data.0), template(&rhs.data.0)) {
        (Some(l), Some(r)) => l == r,
        _ => false,
    }
}

/// Stable sort by `revision`, ties broken by creation time (older first, missing first) and then
/// by name (upstream `SortControllerRevisions`).
pub fn sort_revisions<R: Borrow<ControllerRevision>>(revisions: &mut [R]) {
    revisions.sort_by(|a, b| {
        let (a, b) = (a.borrow(), b.borrow());
        a.revision
            .unwrap_or_default()
            .cmp(&b.revision.unwrap_or_default())
            .then_with(|| {
                let ta = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
                let tb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
                ta.cmp(&tb)
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// Next revision number: 1 for an empty history, else the last revision's number plus one
/// (`revisions` sorted by [`sort_revisions`]; OpenKruise `NextRevision`).
pub fn next_revision<R: Borrow<ControllerRevision>>(sorted: &[R]) -> i64 {
    sorted.last().map_or(1, |r| {
        r.borrow().revision.unwrap_or_default().saturating_add(1)
    })
}

/// Names of the live revisions: `current`, `update`, and every revision some pod is on according
/// to [`equal_to_revision_hash`] (OpenKruise CloneSet `truncateHistory`).
pub fn live_revisions<'a, R, I>(
    revisions: &[R],
    current: &str,
    update: &str,
    pod_labels: I,
) -> BTreeSet<String>
where
    R: Borrow<ControllerRevision>,
    I: IntoIterator<Item = Option<&'a BTreeMap<String, String>>>,
{
    let mut live: BTreeSet<String> = [current.to_owned(), update.to_owned()].into();
    let pods: Vec<Option<&BTreeMap<String, String>>> = pod_labels.into_iter().collect();
    for r in revisions {
        let name = r.borrow().metadata.name.as_deref().unwrap_or_default();
        if !live.contains(name)
            && pods
                .iter()
                .any(|labels| equal_to_revision_hash(*labels, name))
        {
            live.insert(name.to_owned());
        }
    }
    live
}

/// Names of the revisions to delete so that at most `limit` non-live revisions remain (default
/// [`DEFAULT_REVISION_HISTORY_LIMIT`] when `None`; a negative limit counts as 0): the oldest
/// non-live ones, in the order of `revisions` (which must be sorted by [`sort_revisions`]).
pub fn history_to_truncate<R: Borrow<ControllerRevision>>(
    revisions: &[R],
    live: &BTreeSet<String>,
    limit: Option<i32>,
) -> Vec<String> {
    let non_live: Vec<String> = revisions
        .iter()
        .filter_map(|r| r.borrow().metadata.name.clone())
        .filter(|name| !live.contains(name))
        .collect();
    let limit =
        usize::try_from(limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT).max(0)).unwrap_or(0);
    let excess = non_live.len().saturating_sub(limit);
    non_live.into_iter().take(excess).collect()
}

// ---------------------------------------------------------------------------------------------
// Pod revision labels

/// Short form of a revision: the part after the last `-` (the hash of `<parent>-<hash>`); the
/// whole string if it has no `-` (OpenKruise `GetShortHash`).
pub fn short_hash(revision: &str) -> &str {
    revision.rsplit('-').next().unwrap_or(revision)
}

/// Value of the pod's [`CONTROLLER_REVISION_HASH_LABEL`] for `revision` (a revision name): the
/// full name, or only [`short_hash`] with the `CloneSetShortHash` gate.
pub fn revision_label_value(revision: &str, short_hash_gate: bool) -> &str {
    if short_hash_gate {
        short_hash(revision)
    } else {
        revision
    }
}

/// OpenKruise `WriteRevisionHash`: sets [`CONTROLLER_REVISION_HASH_LABEL`] (see
/// [`revision_label_value`]) and [`POD_TEMPLATE_HASH_LABEL`] = [`short_hash`] on `labels`.
pub fn write_revision_hash(
    labels: &mut BTreeMap<String, String>,
    revision: &str,
    short_hash_gate: bool,
) {
    labels.insert(
        CONTROLLER_REVISION_HASH_LABEL.to_owned(),
        revision_label_value(revision, short_hash_gate).to_owned(),
    );
    labels.insert(
        POD_TEMPLATE_HASH_LABEL.to_owned(),
        short_hash(revision).to_owned(),
    );
}

/// OpenKruise `EqualToRevisionHash`: whether a pod (its labels) is on `revision` (a revision name
/// or hash). True if the pod's [`CONTROLLER_REVISION_HASH_LABEL`] equals `revision`, or if both
/// short forms are equal — so full-name and short-hash labels both match. A pod without the label
/// matches only a `revision` whose short form is empty.
pub fn equal_to_revision_hash(
    pod_labels: Option<&BTreeMap<String, String>>,
    revision: &str,
) -> bool {
    let pod_hash = pod_labels
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
        .map_or("", String::as_str);
    pod_hash == revision || short_hash(pod_hash) == short_hash(revision)
}

#[cfg(test)]
mod tests;
