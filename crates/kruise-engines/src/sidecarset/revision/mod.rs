//! SidecarSet ControllerRevisions — OpenKruise v1.9.0 `pkg/control/sidecarcontrol/history_control.go`:
//! what a revision records (`getPatch`), how a revision is built (`NewRevision`), which
//! revisions stay (`filterActiveRevisions`, `truncateHistory`) and how a SidecarSet is restored
//! from one for injection (`GetHistorySidecarSet`, `restoreRevisionInfo`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::keys;
use serde_json::{Map, Value, json};

use super::control::{self, SIDECARSET_KIND_NAME};
use crate::revision::go_json::{self, GoType};
use crate::revision::{self as rev, RevisionError};

/// The spec fields a SidecarSet revision records (OpenKruise `copySidecarSetSpecRevision`).
pub const RECORDED_FIELDS: [&str; 5] = [
    "volumes",
    "containers",
    "initContainers",
    "imagePullSecrets",
    "patchPodMetadata",
];

/// The data of the SidecarSet's revision (OpenKruise `getPatch`): the v1beta1 SidecarSet as Go
/// encodes it, reduced to `{"spec": {"$patch": "replace", <RECORDED_FIELDS>}}` — a field the
/// SidecarSet does not set is recorded as `null`, as Go's map copy does.
///
/// # Errors
/// [`RevisionError`] when the SidecarSet cannot be encoded.
pub fn revision_data(s: &SidecarSet) -> Result<Value, RevisionError> {
    let mut v = serde_json::to_value(s).map_err(|source| RevisionError::Encode {
        what: "SidecarSet",
        source,
    })?;
    go_json::normalize(&mut v, GoType::SidecarSetV1beta1);
    let spec = v
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("$patch".to_string(), json!("replace"));
    for f in RECORDED_FIELDS {
        out.insert(f.to_string(), spec.get(f).cloned().unwrap_or(Value::Null));
    }
    Ok(json!({ "spec": out }))
}

/// The owner reference of the SidecarSet's revisions (`apps.kruise.io/v1beta1` SidecarSet,
/// controller).
pub fn owner_reference(
    s: &SidecarSet,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
    rev::controller_ref(
        "apps.kruise.io/v1beta1",
        "SidecarSet",
        control::name(s),
        s.metadata.uid.as_deref().unwrap_or(""),
    )
}

/// OpenKruise `NewRevision`: the revision of the SidecarSet's current spec, numbered
/// `revision`, in `namespace` (the manager's), labelled with the SidecarSet's labels,
/// [`SIDECARSET_KIND_NAME`] and (when set) the custom version, annotated with every SidecarSet
/// annotation (its hashes included), named `<sidecarset>-<hash of data and collision count>`.
///
/// # Errors
/// [`RevisionError`] when the SidecarSet cannot be encoded.
pub fn new_revision(
    s: &SidecarSet,
    namespace: &str,
    revision: i64,
    collision_count: i32,
) -> Result<ControllerRevision, RevisionError> {
    let data = revision_data(s)?;
    let parent = ObjectMeta {
        name: s.metadata.name.clone(),
        namespace: Some(namespace.to_string()),
        ..Default::default()
    };
    let mut r = rev::new_controller_revision(
        &parent,
        owner_reference(s),
        s.metadata.labels.as_ref(),
        data,
        revision,
        Some(collision_count),
    );
    let labels = r.metadata.labels.get_or_insert_with(BTreeMap::new);
    if let Some(v) = s.spec.custom_version.as_deref().filter(|v| !v.is_empty()) {
        labels.insert(keys::SIDECARSET_CUSTOM_VERSION.to_string(), v.to_string());
    }
    labels.insert(
        SIDECARSET_KIND_NAME.to_string(),
        control::name(s).to_string(),
    );
    r.metadata.annotations = Some(s.metadata.annotations.clone().unwrap_or_default());
    Ok(r)
}

/// Whether a revision belongs to the SidecarSet (label [`SIDECARSET_KIND_NAME`] = its name;
/// OpenKruise's revision selector).
pub fn is_revision_of(r: &ControllerRevision, s: &SidecarSet) -> bool {
    r.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SIDECARSET_KIND_NAME))
        .map(String::as_str)
        == Some(control::name(s))
}

/// OpenKruise `filterActiveRevisions`: revisions pods were injected from, the pinned injection
/// revision and the newest revision of the pinned custom version.
pub fn active_revisions<'a>(
    s: &SidecarSet,
    pods: impl IntoIterator<Item = &'a kruise_api::pod::CachedPod>,
    sorted: &[&ControllerRevision],
) -> BTreeSet<String> {
    let mut active: BTreeSet<String> = pods
        .into_iter()
        .map(|p| control::pod_sidecarset_controller_revision(p, control::name(s)))
        .filter(|r| !r.is_empty())
        .collect();
    if let Some(pin) = s
        .spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.revision.as_ref())
    {
        if let Some(n) = &pin.revision_name {
            active.insert(n.clone());
        }
        if let Some(cv) = &pin.custom_version
            && let Some(r) = sorted.iter().rev().find(|r| custom_version(r) == Some(cv))
        {
            active.insert(r.metadata.name.clone().unwrap_or_default());
        }
    }
    active
}

fn custom_version(r: &ControllerRevision) -> Option<&String> {
    r.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::SIDECARSET_CUSTOM_VERSION))
}

/// OpenKruise `truncateHistory`: with more than `revisionHistoryLimit` (default 10, at least 1)
/// revisions, the oldest that are not active and not the newest, until the limit is met.
/// Returns the names to delete and whether the limit is met (Go logs an error otherwise).
pub fn history_to_truncate(
    s: &SidecarSet,
    sorted: &[&ControllerRevision],
    active: &BTreeSet<String>,
) -> (Vec<String>, bool) {
    let limit = s.spec.revision_history_limit.map_or(10, |l| l.max(1)) as usize;
    if sorted.len() <= limit {
        return (Vec::new(), true);
    }
    let mut to_delete = sorted.len() - limit;
    let mut out = Vec::new();
    for r in &sorted[..sorted.len() - 1] {
        if to_delete == 0 {
            break;
        }
        let name = r.metadata.name.clone().unwrap_or_default();
        if !active.contains(&name) {
            out.push(name);
            to_delete -= 1;
        }
    }
    (out, to_delete == 0)
}

/// The revision a pinned injection names (OpenKruise `getControllerRevision`): by
/// `revisionName`, else the newest (by revision number) revision of the SidecarSet labelled
/// with `customVersion`. `revisions` are the SidecarSet's, sorted.
pub fn pinned_revision<'a>(
    s: &SidecarSet,
    by_name: impl Fn(&str) -> Option<&'a ControllerRevision>,
    sorted: &[&'a ControllerRevision],
    revision_name: Option<&str>,
    custom: Option<&str>,
) -> Result<Option<&'a ControllerRevision>, String> {
    if let Some(n) = revision_name {
        return by_name(n)
            .map(Some)
            .ok_or_else(|| format!("controllerrevisions.apps \"{n}\" not found"));
    }
    if let Some(cv) = custom {
        return sorted
            .iter()
            .rev()
            .find(|r| is_revision_of(r, s) && custom_version(r).map(String::as_str) == Some(cv))
            .copied()
            .map(Some)
            .ok_or_else(|| format!("ControllerRevision.apps \"{}\" not found", control::name(s)));
    }
    Ok(None)
}

/// OpenKruise `GetHistorySidecarSet`: the SidecarSet with its spec replaced by what the
/// revision records (a strategic merge patch with `$patch: replace`: fields the revision holds
/// as `null` are dropped), its hash annotations from the revision (or recomputed with `hash`
/// when the revision has none) and `status.latestRevision` = the revision's name.
///
/// # Errors
/// When the revision data is not a SidecarSet spec patch.
pub fn restore(
    s: &SidecarSet,
    revision: &ControllerRevision,
    hash: impl Fn(&SidecarSet) -> (String, String),
) -> Result<SidecarSet, String> {
    let spec = revision
        .data
        .0
        .get("spec")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            format!(
                "revision {} has no spec",
                revision.metadata.name.as_deref().unwrap_or("")
            )
        })?;
    let mut new_spec = Map::new();
    for (k, v) in spec {
        if k != "$patch" && !v.is_null() {
            new_spec.insert(k.clone(), v.clone());
        }
    }
    let mut out = s.clone();
    out.spec = serde_json::from_value(Value::Object(new_spec)).map_err(|e| e.to_string())?;
    let ra = revision.metadata.annotations.clone().unwrap_or_default();
    let (with_image, without_image) = hash(&out);
    let anns = out.metadata.annotations.get_or_insert_with(BTreeMap::new);
    anns.insert(
        keys::SIDECARSET_HASH.to_string(),
        ra.get(keys::SIDECARSET_HASH)
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or(with_image),
    );
    anns.insert(
        keys::SIDECARSET_HASH_WITHOUT_IMAGE.to_string(),
        ra.get(keys::SIDECARSET_HASH_WITHOUT_IMAGE)
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or(without_image),
    );
    out.status
        .get_or_insert_with(Default::default)
        .latest_revision = revision.metadata.name.clone();
    Ok(out)
}

#[cfg(test)]
mod tests;
