//! The in-place update engine shared by CloneSet, Advanced StatefulSet and Advanced DaemonSet
//! (OpenKruise v1.9.0 `pkg/util/inplaceupdate`), as pure functions: the caller owns every API
//! call.
//!
//! # Flow
//!
//! 1. **Decide** — [`calculate_update_spec`] diffs the old and new ControllerRevision data
//!    (`{"spec":{"template":{...}}}`) with RFC 6902 semantics. The update is in-place only when
//!    every operation is a `replace` of `spec.containers[N].image` or touches template
//!    `metadata` (labels/annotations). Anything else returns `None` (recreate).
//! 2. **Take the pod out of endpoints** — if [`needs_unready`], send
//!    [`not_ready_condition_patch`] to the pod `status` subresource (strategic merge patch):
//!    condition `InPlaceUpdateReady=False` (reason `StartInPlaceUpdate`) and, like OpenKruise,
//!    `Ready=False` right away. On conflict, re-read and retry.
//! 3. **Patch the pod** — [`prepare_update`] returns the pod to write with a pod `Update`
//!    (replace, carrying the read `resourceVersion`): revision labels, the
//!    `apps.kruise.io/inplace-update-state` annotation and either the new images/metadata (first
//!    container batch) or, with `gracePeriodSeconds > 0`, the `apps.kruise.io/inplace-update-grace`
//!    annotation (images unchanged until the grace period ends). Workload-specific changes (e.g.
//!    lifecycle state `Updating`) are applied by the caller to the returned pod. Requeue after
//!    `spec.grace_seconds` when it is positive.
//! 4. **Drive to completion** — on every reconcile call [`refresh`] for each pod; it ends the
//!    grace period, starts the next container batch, or (once [`check_update_completed`]-style
//!    checks pass) returns the status patch setting `InPlaceUpdateReady=True`. `refresh` also
//!    initialises the condition to `True` for new pods carrying the readiness gate.
//!
//! # Not covered
//!
//! - In-place vertical scaling (gate `InPlaceWorkloadVerticalScaling`): resource changes are
//!   never in-place here (as in OpenKruise with the gate off). Resources in a grace annotation or
//!   state written by OpenKruise with the gate on are carried but not applied/checked.
//! - The pre-1.31 kubelet container hash (see [`plain_container_hash`]).

mod gohash;
mod jsondiff;
mod metadata;
mod wire;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{
    Container, PodCondition, PodSpec, PodTemplateSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::common::{
    InPlaceUpdateContainerBatch, InPlaceUpdateContainerStatus, InPlaceUpdatePreCheckBeforeNext,
    InPlaceUpdateState, RuntimeContainerMetaSet,
};
use kruise_api::keys;
use kruise_api::pod::{CachedPod, CachedPodCondition, ContainerView};
use serde_json::{Value, json};

use crate::podutil;

pub use gohash::{
    current_env_from_metadata_hash, expected_env_from_metadata_hash,
    is_container_reference_to_meta, plain_container_hash,
};

/// Readiness gate and pod condition type owned by the in-place update engine.
pub const IN_PLACE_UPDATE_READY: &str = keys::IN_PLACE_UPDATE_READY;
/// Reason of the `InPlaceUpdateReady=False` condition written before an in-place update.
pub const REASON_START_IN_PLACE_UPDATE: &str = "StartInPlaceUpdate";
/// Pod label written with the revision (upstream `controller-revision-hash`).
pub const CONTROLLER_REVISION_HASH: &str = keys::CONTROLLER_REVISION_HASH;

/// Errors of the in-place update engine (malformed annotations or patches on a pod).
#[derive(Debug, thiserror::Error)]
pub enum InPlaceError {
    /// An in-place annotation (`key`) of the pod is not valid JSON of the expected shape.
    #[error("invalid {key} annotation: {source}")]
    InvalidAnnotation {
        /// The annotation key.
        key: &'static str,
        /// The decoding error.
        #[source]
        source: serde_json::Error,
    },
    /// The pod has the grace annotation but no state annotation.
    #[error(
        "pod has the {} annotation but no {} annotation",
        keys::IN_PLACE_UPDATE_GRACE,
        keys::IN_PLACE_UPDATE_STATE
    )]
    MissingState,
    /// The metadata patch of the update spec could not be applied to the pod.
    #[error("cannot apply the in-place metadata patch: {0}")]
    MetadataPatch(String),
    /// An annotation value could not be encoded.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The encoding error.
        #[source]
        source: serde_json::Error,
    },
}

/// Options of [`calculate_update_spec`] (OpenKruise `UpdateOptions` plus the feature gates it
/// consults).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateOptions {
    /// Seconds between marking the pod not-ready and patching its spec
    /// (`updateStrategy.inPlaceUpdateStrategy.gracePeriodSeconds`); `<= 0` patches immediately.
    pub grace_period_seconds: i32,
    /// Ignore a change of the revisions' volumeClaimTemplates hash (CloneSet `InPlaceOnly`).
    pub ignore_volume_claim_templates_hash_diff: bool,
    /// Gate `InPlaceUpdateEnvFromMetadata` (OpenKruise turns it off without kruise-daemon):
    /// label/annotation changes consumed by container env `fieldRef`s restart those containers.
    pub env_from_metadata: bool,
    /// Gate `RecreatePodWhenChangeVCTInCloneSetGate`: a changed volumeClaimTemplates hash
    /// (annotation `kruise.io/cloneset-volumeclaimtemplate-hash` on both revisions) is not
    /// in-place.
    pub recreate_pod_when_change_vct: bool,
}

/// What to change in place (OpenKruise `UpdateSpec`; also the JSON of the grace annotation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateSpec {
    /// Revision written onto the pod (the new ControllerRevision's name for CloneSet/ASTS).
    pub revision: String,
    /// New image by container name.
    pub container_images: BTreeMap<String, String>,
    /// Labels/annotations consumed by each container's env (env-from-metadata), by container.
    pub container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// New resources by container (vertical scaling; never produced here, see module docs).
    pub container_resources: BTreeMap<String, ResourceRequirements>,
    /// Strategic merge patch `{"metadata":{...}}` for the template labels/annotations not
    /// consumed by env (`None` when the metadata did not change).
    pub meta_data_patch: Option<Value>,
    /// Whether some container env depends on changed metadata.
    pub update_env_from_metadata: bool,
    /// Grace period in seconds (from [`UpdateOptions::grace_period_seconds`]).
    pub grace_seconds: i32,
    /// Old template (only carried for compatibility with OpenKruise-written specs).
    pub old_template: Option<PodTemplateSpec>,
    /// New template (only carried for compatibility with OpenKruise-written specs).
    pub new_template: Option<PodTemplateSpec>,
}

impl UpdateSpec {
    /// Only resources change (OpenKruise `VerticalUpdateOnly`).
    pub fn vertical_update_only(&self) -> bool {
        !self.container_resources.is_empty()
            && self.container_images.is_empty()
            && !self.update_env_from_metadata
    }

    /// The JSON OpenKruise stores in the `apps.kruise.io/inplace-update-grace` annotation.
    pub fn to_annotation(&self) -> Result<String, InPlaceError> {
        wire::encode_spec(self).map_err(|source| InPlaceError::Encode {
            what: "update spec",
            source,
        })
    }

    /// Parses the `apps.kruise.io/inplace-update-grace` annotation value.
    pub fn from_annotation(s: &str) -> Result<Self, InPlaceError> {
        wire::decode_spec(s).map_err(|source| InPlaceError::InvalidAnnotation {
            key: keys::IN_PLACE_UPDATE_GRACE,
            source,
        })
    }
}

/// How a workload records and compares the revision of a pod (OpenKruise `revisionadapter`).
pub trait RevisionAdapter {
    /// Whether the pod is labelled with `revision`.
    fn equal_to_revision_hash(&self, pod: &CachedPod, revision: &str) -> bool;
    /// Labels the pod with `revision`.
    fn write_revision_hash(&self, pod: &mut CachedPod, revision: &str);
}

/// Advanced StatefulSet / DaemonSet: the `controller-revision-hash` label holds the revision
/// verbatim.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultRevisionAdapter;

impl RevisionAdapter for DefaultRevisionAdapter {
    fn equal_to_revision_hash(&self, pod: &CachedPod, revision: &str) -> bool {
        label(pod, CONTROLLER_REVISION_HASH) == Some(revision)
    }

    fn write_revision_hash(&self, pod: &mut CachedPod, revision: &str) {
        pod.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(CONTROLLER_REVISION_HASH.to_string(), revision.to_string());
    }
}

/// OpenKruise's `revisionadapter.NewDefaultImpl()` (CloneSet and every workload without its own
/// adapter): `controller-revision-hash` holds the full revision name (`<workload>-<hash>`), or
/// only the hash with gate `CloneSetShortHash`; `pod-template-hash` always holds the short hash.
/// Revisions compare equal when the labels match exactly or their short hashes match. Delegates
/// to [`crate::revision::write_revision_hash`] / [`crate::revision::equal_to_revision_hash`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TemplateHashRevisionAdapter {
    /// Gate `CloneSetShortHash`.
    pub short_hash: bool,
}

impl RevisionAdapter for TemplateHashRevisionAdapter {
    fn equal_to_revision_hash(&self, pod: &CachedPod, revision: &str) -> bool {
        crate::revision::equal_to_revision_hash(pod.metadata.labels.as_ref(), revision)
    }

    fn write_revision_hash(&self, pod: &mut CachedPod, revision: &str) {
        let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
        crate::revision::write_revision_hash(labels, revision, self.short_hash);
    }
}

fn label<'a>(pod: &'a CachedPod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn annotation<'a>(pod: &'a CachedPod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

// ---------------------------------------------------------------------------------------------
// readiness gate and condition
// ---------------------------------------------------------------------------------------------

/// Adds the `InPlaceUpdateReady` readiness gate to a pod (template) spec unless present
/// (OpenKruise `InjectReadinessGate`; CloneSet does it for every new pod). Returns whether the
/// spec changed.
pub fn inject_readiness_gate(spec: &mut PodSpec) -> bool {
    podutil::inject_readiness_gate(spec, IN_PLACE_UPDATE_READY)
}

/// Whether the pod has the `InPlaceUpdateReady` readiness gate.
pub fn has_readiness_gate(pod: &CachedPod) -> bool {
    podutil::has_readiness_gate(pod, IN_PLACE_UPDATE_READY)
}

/// The pod's `InPlaceUpdateReady` condition (OpenKruise `inplaceupdate.GetCondition`).
pub fn get_condition(pod: &CachedPod) -> Option<&CachedPodCondition> {
    podutil::get_condition(pod, IN_PLACE_UPDATE_READY)
}

/// Whether the pod must be marked not-ready before the update: it has the readiness gate
/// (OpenKruise's resize-only exemption does not apply, vertical scaling being unsupported).
pub fn needs_unready(pod: &CachedPod, _spec: &UpdateSpec) -> bool {
    has_readiness_gate(pod)
}

/// Applies the `InPlaceUpdateReady` condition to `pod` in memory exactly as OpenKruise's
/// `updateCondition` does before writing the status: [`podutil::set_condition`] semantics
/// (replace only on a status change), and when `ready` is false also
/// [`podutil::set_pod_ready_condition`]. `False` carries reason `StartInPlaceUpdate`; both carry
/// transition time `now`. Returns whether the pod changed.
pub fn set_in_place_update_condition(
    pod: &mut CachedPod,
    ready: bool,
    now: jiff::Timestamp,
) -> bool {
    let condition = PodCondition {
        type_: IN_PLACE_UPDATE_READY.to_string(),
        status: if ready {
            podutil::CONDITION_TRUE
        } else {
            podutil::CONDITION_FALSE
        }
        .to_string(),
        reason: (!ready).then(|| REASON_START_IN_PLACE_UPDATE.to_string()),
        last_transition_time: Some(Time(now)),
        ..Default::default()
    };
    let mut changed = podutil::set_condition(pod, condition);
    if !ready {
        changed |= podutil::set_pod_ready_condition(pod, now);
    }
    changed
}

/// A condition as a strategic-merge-patch list item: every field present, `null` for the unset
/// ones, so that the stored condition ends up exactly equal to `c`.
fn condition_patch_item(c: &CachedPodCondition) -> Value {
    json!({
        "type": c.type_,
        "status": c.status,
        "reason": c.reason,
        "message": c.message,
        "lastProbeTime": c.last_probe_time,
        "lastTransitionTime": c.last_transition_time,
        "observedGeneration": c.observed_generation,
    })
}

/// Strategic merge patch for the pod `status` subresource turning `pod`'s conditions into those
/// of `updated` (only changed conditions are listed; merged by `type`). `None` when nothing
/// changed. With `bind_resource_version`, the patch carries `metadata.resourceVersion` so the
/// API server rejects it (409) if the pod changed since it was read.
fn status_condition_patch(pod: &CachedPod, updated: &CachedPod) -> Option<Value> {
    let items: Vec<Value> = podutil::conditions(updated)
        .iter()
        .filter(|c| podutil::get_condition(pod, &c.type_) != Some(*c))
        .map(condition_patch_item)
        .collect();
    if items.is_empty() {
        return None;
    }
    Some(json!({ "status": { "conditions": items } }))
}

/// Step 2 of the flow: the status patch (strategic merge, `pods/status`) setting
/// `InPlaceUpdateReady=False` with reason `StartInPlaceUpdate` and recomputing `Ready` like
/// OpenKruise (`Ready=False`, reason `ReadinessGatesNotReady`, when the pod has `Ready` and
/// `ContainersReady=True`). `None` when the pod already has `InPlaceUpdateReady=False` (the
/// existing condition is kept, as OpenKruise does). Not bound to the resource version: the patch
/// only ever moves the pod towards not-ready; OpenKruise re-reads the pod and retries on conflict.
pub fn not_ready_condition_patch(pod: &CachedPod, now: jiff::Timestamp) -> Option<Value> {
    let mut updated = pod.clone();
    set_in_place_update_condition(&mut updated, false, now);
    status_condition_patch(pod, &updated)
}

/// The status patch setting `InPlaceUpdateReady=True` (empty reason/message, transition time
/// `now`). `None` when the pod has no readiness gate or the condition is already `True` with no
/// reason and message.
///
/// Not bound to the resource version. OpenKruise writes the whole status of the pod version it
/// checked (`UpdatePodStatus` of the cached pod) and loses the write on a conflict, which the
/// kubelet's own status updates right after a container restart make frequent (about one
/// updated pod in four on the testbed, each a wasted request and a later retry). The strategic
/// merge of `status.conditions` by type cannot undo the kubelet's writes, and what the decision
/// rests on cannot be reverted by them: completion is judged against the pod's in-place update
/// state, which only this manager's next in-place update changes, and that update is sequenced
/// after this write by the resourceVersion expectations.
pub fn ready_condition_patch(pod: &CachedPod, now: jiff::Timestamp) -> Option<Value> {
    if !has_readiness_gate(pod) {
        return None;
    }
    if let Some(c) = get_condition(pod)
        && c.status == podutil::CONDITION_TRUE
        && c.reason.as_deref().unwrap_or("").is_empty()
        && c.message.as_deref().unwrap_or("").is_empty()
    {
        return None;
    }
    let mut updated = pod.clone();
    set_in_place_update_condition(&mut updated, true, now);
    status_condition_patch(pod, &updated)
}

// ---------------------------------------------------------------------------------------------
// annotations
// ---------------------------------------------------------------------------------------------

/// The raw in-place state annotation (`apps.kruise.io/inplace-update-state`, or the legacy
/// `inplace-update-state`).
pub fn state_annotation(pod: &CachedPod) -> Option<&str> {
    annotation(pod, keys::IN_PLACE_UPDATE_STATE)
        .or_else(|| annotation(pod, keys::IN_PLACE_UPDATE_STATE_OLD))
}

/// The raw grace annotation (`apps.kruise.io/inplace-update-grace`, or the legacy
/// `inplace-update-grace`).
pub fn grace_annotation(pod: &CachedPod) -> Option<&str> {
    annotation(pod, keys::IN_PLACE_UPDATE_GRACE)
        .or_else(|| annotation(pod, keys::IN_PLACE_UPDATE_GRACE_OLD))
}

/// Whether the pod is in the grace period of an in-place update (a non-empty grace annotation):
/// OpenKruise does not pick such pods for another update and [`refresh`] finishes them.
pub fn has_grace_period_pending(pod: &CachedPod) -> bool {
    grace_annotation(pod).is_some_and(|g| !g.is_empty())
}

/// The pod's parsed in-place state (`None` when the pod was never updated in place).
pub fn get_state(pod: &CachedPod) -> Result<Option<InPlaceUpdateState>, InPlaceError> {
    state_annotation(pod)
        .map(|s| {
            wire::decode_state(s).map_err(|source| InPlaceError::InvalidAnnotation {
                key: keys::IN_PLACE_UPDATE_STATE,
                source,
            })
        })
        .transpose()
}

/// Encodes a state as the annotation value OpenKruise writes.
pub fn encode_state(state: &InPlaceUpdateState) -> Result<String, InPlaceError> {
    wire::encode_state(state).map_err(|source| InPlaceError::Encode {
        what: "in-place update state",
        source,
    })
}

/// The pod's parsed `apps.kruise.io/runtime-containers-meta` (written by kruise-daemon).
pub fn get_runtime_container_meta(
    pod: &CachedPod,
) -> Result<Option<RuntimeContainerMetaSet>, InPlaceError> {
    annotation(pod, keys::RUNTIME_CONTAINERS_META)
        .map(|s| {
            serde_json::from_str(s).map_err(|source| InPlaceError::InvalidAnnotation {
                key: keys::RUNTIME_CONTAINERS_META,
                source,
            })
        })
        .transpose()
}

fn set_annotation(pod: &mut CachedPod, key: &str, value: String) {
    pod.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value);
}

fn remove_annotation(pod: &mut CachedPod, key: &str) {
    if let Some(a) = pod.metadata.annotations.as_mut() {
        a.remove(key);
    }
}

fn remove_grace(pod: &mut CachedPod) {
    remove_annotation(pod, keys::IN_PLACE_UPDATE_GRACE);
    remove_annotation(pod, keys::IN_PLACE_UPDATE_GRACE_OLD);
}

// ---------------------------------------------------------------------------------------------
// decide
// ---------------------------------------------------------------------------------------------

/// The pod template inside ControllerRevision data (`{"spec":{"template":{...}}}`); an absent
/// template is the empty template. Unknown members (e.g. `$patch`) are ignored.
pub fn template_from_revision_data(data: &Value) -> Result<PodTemplateSpec, serde_json::Error> {
    match data.pointer("/spec/template") {
        None | Some(Value::Null) => Ok(PodTemplateSpec::default()),
        Some(t) => serde_json::from_value(t.clone()),
    }
}

fn revision_data(rev: &ControllerRevision) -> &Value {
    &rev.data.0
}

fn vct_hash(rev: &ControllerRevision) -> Option<&str> {
    rev.metadata
        .annotations
        .as_ref()?
        .get(keys::CLONESET_VOLUME_CLAIM_TEMPLATE_HASH)
        .map(String::as_str)
}

/// Whether the in-place update from `old` to `new` is possible (OpenKruise `CanUpdateInPlace`).
pub fn can_update_in_place(
    old: &ControllerRevision,
    new: &ControllerRevision,
    opts: &UpdateOptions,
) -> bool {
    calculate_update_spec(old, new, opts).is_some()
}

/// OpenKruise `defaultCalculateInPlaceUpdateSpec` with the new revision's name as the revision.
/// See [`calculate_update_spec_with_revision`].
pub fn calculate_update_spec(
    old: &ControllerRevision,
    new: &ControllerRevision,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    let revision = new.metadata.name.as_deref().unwrap_or("");
    calculate_update_spec_with_revision(old, new, revision, opts)
}

/// The in-place update spec from `old` to `new`, or `None` when the change cannot be done in
/// place. `revision` is what gets written to the pod (Advanced DaemonSet passes the revision's
/// `controller-revision-hash` label instead of its name).
///
/// With [`UpdateOptions::recreate_pod_when_change_vct`] (and not
/// [`UpdateOptions::ignore_volume_claim_templates_hash_diff`]), differing volumeClaimTemplates
/// hashes make it `None`; a hash missing on either revision does not.
pub fn calculate_update_spec_with_revision(
    old: &ControllerRevision,
    new: &ControllerRevision,
    revision: &str,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    if opts.recreate_pod_when_change_vct
        && !opts.ignore_volume_claim_templates_hash_diff
        && let (Some(o), Some(n)) = (vct_hash(old), vct_hash(new))
        && o != n
    {
        return None;
    }
    calculate_update_spec_from_data(revision_data(old), revision_data(new), revision, opts)
}

/// Matches `/spec/containers/<N>/image` and returns N.
fn image_path_index(path: &str) -> Option<usize> {
    let idx = path
        .strip_prefix("/spec/containers/")?
        .strip_suffix("/image")?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    idx.parse().ok()
}

/// Decodes an RFC 6901 reference token (`~1` → `/`, `~0` → `~`).
fn decode_pointer_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// [`calculate_update_spec_with_revision`] on raw revision data (no volumeClaimTemplates check).
///
/// Rules (OpenKruise v1.9.0): the JSON diff of the two documents is taken; the `/spec/template`
/// prefix is dropped from each path; then every operation must be either
/// - under `/metadata/` (template labels, annotations, …) — collected into
///   [`UpdateSpec::meta_data_patch`]; with [`UpdateOptions::env_from_metadata`], an `add`/
///   `replace` of `/metadata/labels/<k>` or `/metadata/annotations/<k>` that a container of the
///   new template reads through `env[].valueFrom.fieldRef` (`metadata.labels['k']`) is recorded
///   in that container's [`UpdateSpec::container_ref_metadata`] instead, or
/// - a `replace` of `/spec/containers/<N>/image` (N indexes the old template's containers).
///
/// Any other operation (including a change of `/metadata` as a whole) yields `None`.
pub fn calculate_update_spec_from_data(
    old_data: &Value,
    new_data: &Value,
    revision: &str,
    opts: &UpdateOptions,
) -> Option<UpdateSpec> {
    let ops = jsondiff::create_patch(old_data, new_data);
    let mut old_t = template_from_revision_data(old_data).ok()?;
    let mut new_t = template_from_revision_data(new_data).ok()?;
    let old_containers: &[Container] = old_t
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or(&[]);

    let mut spec = UpdateSpec {
        revision: revision.to_string(),
        grace_seconds: opts.grace_period_seconds,
        ..Default::default()
    };
    let mut metadata_ops = Vec::new();
    for op in ops {
        let path = op.path.replacen("/spec/template", "", 1);
        if !path.starts_with("/spec/") {
            if path.starts_with("/metadata/") {
                metadata_ops.push((op.kind, path, op.value));
                continue;
            }
            return None;
        }
        if op.kind != jsondiff::OpKind::Replace {
            return None;
        }
        let idx = image_path_index(&path)?;
        let container = old_containers.get(idx)?;
        let image = op.value.as_str()?;
        spec.container_images
            .insert(container.name.clone(), image.to_string());
    }

    if metadata_ops.is_empty() {
        return Some(spec);
    }
    if opts.env_from_metadata {
        let new_containers: Vec<Container> = new_t
            .spec
            .as_ref()
            .map(|s| s.containers.clone())
            .unwrap_or_default();
        for (kind, path, value) in &metadata_ops {
            if !matches!(kind, jsondiff::OpKind::Add | jsondiff::OpKind::Replace) {
                continue;
            }
            let words: Vec<&str> = path.splitn(4, '/').collect();
            if words.len() != 4 || (words[2] != "labels" && words[2] != "annotations") {
                continue;
            }
            let is_labels = words[2] == "labels";
            let key = decode_pointer_token(words[3]);
            let field = if is_labels {
                "metadata.labels"
            } else {
                "metadata.annotations"
            };
            for c in &new_containers {
                if !is_container_reference_to_meta(c, field, &key) {
                    continue;
                }
                let value = value.as_str()?.to_string();
                let meta = spec
                    .container_ref_metadata
                    .entry(c.name.clone())
                    .or_default();
                let target = if is_labels {
                    &mut meta.labels
                } else {
                    &mut meta.annotations
                };
                target
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key.clone(), value);
                for t in [&mut old_t.metadata, &mut new_t.metadata] {
                    let t = t.get_or_insert_with(ObjectMeta::default);
                    let map = if is_labels {
                        &mut t.labels
                    } else {
                        &mut t.annotations
                    };
                    if let Some(m) = map.as_mut() {
                        m.remove(&key);
                    }
                }
                spec.update_env_from_metadata = true;
            }
        }
    }
    spec.meta_data_patch = Some(metadata::two_way_patch(
        &old_t.metadata.unwrap_or_default(),
        &new_t.metadata.unwrap_or_default(),
    ));
    Some(spec)
}

// ---------------------------------------------------------------------------------------------
// patch
// ---------------------------------------------------------------------------------------------

/// Launch priority of a container: the integer after `p_` in the
/// `KRUISE_CONTAINER_BARRIER` env's `configMapKeyRef.key` (e.g. `p_-1` → -1). `None` when the
/// container has no such env; a malformed key counts as priority 0 (OpenKruise ignores the parse
/// error the same way).
pub fn container_launch_priority(c: &impl ContainerView) -> Option<i64> {
    let env = c
        .env()
        .iter()
        .find(|e| e.name == keys::CONTAINER_LAUNCH_BARRIER_ENV)?;
    let key = env
        .value_from
        .as_ref()
        .and_then(|v| v.config_map_key_ref.as_ref())
        .map(|r| r.key.as_str())
        .unwrap_or("");
    Some(key.get(2..).and_then(|p| p.parse().ok()).unwrap_or(0))
}

/// Adds to `to_update` every container sharing a changed label/annotation key with a container
/// already in it (transitively), so a shared key never gets two values in one pod.
fn add_metadata_shared_containers(
    to_update: &mut BTreeSet<String>,
    ref_meta: &BTreeMap<String, ObjectMeta>,
) {
    let mut labels = BTreeSet::new();
    let mut annotations = BTreeSet::new();
    let mut frontier: Vec<String> = to_update.iter().cloned().collect();
    while !frontier.is_empty() {
        for name in &frontier {
            if let Some(m) = ref_meta.get(name) {
                labels.extend(m.labels.iter().flatten().map(|(k, _)| k.clone()));
                annotations.extend(m.annotations.iter().flatten().map(|(k, _)| k.clone()));
            }
        }
        frontier.clear();
        for (name, m) in ref_meta {
            if to_update.contains(name) {
                continue;
            }
            let shares = m.labels.iter().flatten().any(|(k, _)| labels.contains(k))
                || m.annotations
                    .iter()
                    .flatten()
                    .any(|(k, _)| annotations.contains(k));
            if shares {
                to_update.insert(name.clone());
                frontier.push(name.clone());
            }
        }
    }
}

/// OpenKruise `defaultPatchUpdateSpecToPod`: applies the metadata patch, then the images and
/// ref metadata of the current container batch, recording the rest in `state.next*`, the
/// before-update image IDs, the pre-check and the batch record; writes the state annotation.
///
/// Batching (container launch priority): containers without a priority are always in the batch;
/// of the prioritized containers only those with the highest priority are; containers sharing a
/// changed env-consumed key with a batch member join it.
fn patch_spec_to_pod(
    mut pod: CachedPod,
    spec: &UpdateSpec,
    state: &mut InPlaceUpdateState,
    now: jiff::Timestamp,
) -> Result<CachedPod, InPlaceError> {
    state.next_container_images.clear();
    state.next_container_ref_metadata.clear();
    state.next_container_resources.clear();

    if let Some(p) = &spec.meta_data_patch {
        metadata::apply(&mut pod.metadata, p).map_err(InPlaceError::MetadataPatch)?;
    }
    pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    pod.metadata.annotations.get_or_insert_with(BTreeMap::new);

    let mut to_update = BTreeSet::new();
    let mut highest: Option<(i64, Vec<String>)> = None;
    for c in podutil::containers(&pod) {
        let touched = spec.container_images.contains_key(&c.name)
            || spec.container_ref_metadata.contains_key(&c.name)
            || spec.container_resources.contains_key(&c.name);
        if !touched {
            continue;
        }
        match (container_launch_priority(c), &mut highest) {
            (None, _) => {
                to_update.insert(c.name.clone());
            }
            (Some(p), Some((h, names))) if p == *h => names.push(c.name.clone()),
            (Some(p), Some((h, _))) if p < *h => {}
            (Some(p), _) => highest = Some((p, vec![c.name.clone()])),
        }
    }
    if let Some((_, names)) = highest {
        to_update.extend(names);
    }
    add_metadata_shared_containers(&mut to_update, &spec.container_ref_metadata);

    let mut image_changed = BTreeSet::new();
    if let Some(pod_spec) = pod.spec.as_mut() {
        for c in &mut pod_spec.containers {
            let Some(image) = spec.container_images.get(&c.name) else {
                continue;
            };
            if to_update.contains(&c.name) {
                c.image = Some(image.clone());
                image_changed.insert(c.name.clone());
            } else {
                state
                    .next_container_images
                    .insert(c.name.clone(), image.clone());
            }
        }
    }
    for cs in podutil::container_statuses(&pod) {
        if image_changed.contains(&cs.name) {
            state
                .last_container_statuses
                .entry(cs.name.clone())
                .or_insert_with(|| InPlaceUpdateContainerStatus {
                    image_id: cs.image_id.clone(),
                });
        }
    }

    for (name, meta) in &spec.container_ref_metadata {
        if to_update.contains(name) {
            for (target, source) in [
                (&mut pod.metadata.labels, &meta.labels),
                (&mut pod.metadata.annotations, &meta.annotations),
            ] {
                let target = target.get_or_insert_with(BTreeMap::new);
                for (k, v) in source.iter().flatten() {
                    target.insert(k.clone(), v.clone());
                }
            }
        } else {
            state
                .next_container_ref_metadata
                .insert(name.clone(), meta.clone());
        }
    }

    let batch: Vec<String> = to_update.into_iter().collect();
    state.pre_check_before_next = if state.next_container_images.is_empty()
        && state.next_container_ref_metadata.is_empty()
        && state.next_container_resources.is_empty()
    {
        None
    } else {
        Some(InPlaceUpdatePreCheckBeforeNext {
            containers_required_ready: batch.clone(),
        })
    };
    state
        .container_batches_record
        .push(InPlaceUpdateContainerBatch {
            timestamp: Time(now),
            containers: batch,
        });
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_STATE, encode_state(state)?);
    Ok(pod)
}

/// Step 3 of the flow (OpenKruise `updatePodInPlace`, minus the API call): the pod object to
/// write with a pod `Update`.
///
/// On a copy of `pod`: writes the revision through `revision`, replaces the state annotation
/// with a fresh [`InPlaceUpdateState`] (revision, `updateTimestamp` = `now`, `updateImages`,
/// `updateEnvFromMetadata`, `updateResources`), drops the legacy state key, and then
/// - `spec.grace_seconds <= 0`: applies the first container batch (images, metadata patch, ref
///   metadata), records each updated container's current `imageID` in `lastContainerStatuses`,
///   the remaining batches in `next*`, the batch in `containerBatchesRecord`, and removes any
///   grace annotation;
/// - otherwise: stores `spec` in `apps.kruise.io/inplace-update-grace` and leaves the containers
///   alone; [`refresh`] applies them once the grace period is over.
///
/// Errors when the metadata patch cannot be applied.
pub fn prepare_update(
    pod: &CachedPod,
    spec: &UpdateSpec,
    revision: &dyn RevisionAdapter,
    now: jiff::Timestamp,
) -> Result<CachedPod, InPlaceError> {
    let mut pod = pod.clone();
    revision.write_revision_hash(&mut pod, &spec.revision);
    let mut state = InPlaceUpdateState {
        revision: spec.revision.clone(),
        update_timestamp: Time(now),
        last_container_statuses: BTreeMap::new(),
        update_env_from_metadata: spec.update_env_from_metadata,
        update_resources: !spec.container_resources.is_empty(),
        update_images: !spec.container_images.is_empty(),
        next_container_images: BTreeMap::new(),
        next_container_ref_metadata: BTreeMap::new(),
        next_container_resources: BTreeMap::new(),
        pre_check_before_next: None,
        container_batches_record: Vec::new(),
    };
    set_annotation(&mut pod, keys::IN_PLACE_UPDATE_STATE, encode_state(&state)?);
    remove_annotation(&mut pod, keys::IN_PLACE_UPDATE_STATE_OLD);
    if spec.grace_seconds <= 0 {
        pod = patch_spec_to_pod(pod, spec, &mut state, now)?;
        remove_grace(&mut pod);
    } else {
        set_annotation(&mut pod, keys::IN_PLACE_UPDATE_GRACE, spec.to_annotation()?);
    }
    Ok(pod)
}

// ---------------------------------------------------------------------------------------------
// refresh and completion
// ---------------------------------------------------------------------------------------------

/// What [`refresh`] asks the caller to do.
#[derive(Clone, Debug, PartialEq)]
pub enum RefreshAction {
    /// Nothing to write.
    Nothing,
    /// The pod is in its grace period: requeue after this long (whole seconds, rounded up).
    Wait(Duration),
    /// Write this pod with a pod `Update` (grace period over, stale grace spec dropped, or the
    /// next container batch). Build it from a freshly read pod; on conflict re-read and refresh
    /// again.
    UpdatePod(Box<CachedPod>),
    /// Send this strategic merge patch to the pod `status` subresource (sets
    /// `InPlaceUpdateReady=True`; see [`ready_condition_patch`]).
    PatchStatus(Value),
}

/// Requirements of `preCheckBeforeNext`: every listed container has a status and is ready.
fn pre_check_before_next(
    pod: &CachedPod,
    pre: Option<&InPlaceUpdatePreCheckBeforeNext>,
) -> Result<(), String> {
    let Some(pre) = pre else { return Ok(()) };
    for name in &pre.containers_required_ready {
        match podutil::get_container_status(pod, name) {
            None => return Err(format!("not found container {name} in pod status")),
            Some(cs) if !cs.ready => return Err(format!("waiting container {name} to be ready")),
            Some(_) => {}
        }
    }
    Ok(())
}

/// OpenKruise `Refresh`, without API calls; call it for every pod of the workload on each
/// reconcile, with the revision adapter of the workload.
///
/// 1. Grace annotation present: if the pod's revision is no longer the spec's, drop the grace
///    annotation ([`RefreshAction::UpdatePod`]); if the grace period (from the state's
///    `updateTimestamp`) has not elapsed, [`RefreshAction::Wait`]; otherwise apply the
///    spec's first batch and drop the annotation ([`RefreshAction::UpdatePod`]).
/// 2. State annotation present: while the containers updated so far are not done
///    ([`check_containers_update_completed`]) → [`RefreshAction::Nothing`]. If later batches
///    remain, wait until the previous batch's containers are ready, then patch the next batch
///    ([`RefreshAction::UpdatePod`]).
/// 3. With the readiness gate and `InPlaceUpdateReady` not already plainly `True`:
///    [`RefreshAction::PatchStatus`] with [`ready_condition_patch`].
///
/// Errors on malformed annotations or metadata patches (OpenKruise silently stops on a malformed
/// state during the grace period; here it is reported).
pub fn refresh(
    pod: &CachedPod,
    revision: &dyn RevisionAdapter,
    now: jiff::Timestamp,
) -> Result<RefreshAction, InPlaceError> {
    if let Some(grace) = grace_annotation(pod).filter(|g| !g.is_empty()) {
        let spec = UpdateSpec::from_annotation(grace)?;
        let mut state = get_state(pod)?.ok_or(InPlaceError::MissingState)?;
        let mut updated = pod.clone();
        if !revision.equal_to_revision_hash(pod, &spec.revision) {
            remove_grace(&mut updated);
            return Ok(RefreshAction::UpdatePod(Box::new(updated)));
        }
        let grace = jiff::SignedDuration::from_secs(i64::from(spec.grace_seconds));
        let elapsed = now.duration_since(state.update_timestamp.0);
        if elapsed < grace {
            let remaining = grace - elapsed;
            let mut secs = remaining.as_secs().max(0) as u64;
            if remaining.subsec_nanos() > 0 {
                secs += 1;
            }
            return Ok(RefreshAction::Wait(Duration::from_secs(secs)));
        }
        let mut updated = patch_spec_to_pod(updated, &spec, &mut state, now)?;
        remove_grace(&mut updated);
        return Ok(RefreshAction::UpdatePod(Box::new(updated)));
    }

    if let Some(state) = get_state(pod)? {
        if check_containers_update_completed(pod, &state).is_err() {
            return Ok(RefreshAction::Nothing);
        }
        let has_next = !state.next_container_images.is_empty()
            || !state.next_container_ref_metadata.is_empty()
            || !state.next_container_resources.is_empty();
        if has_next {
            if pre_check_before_next(pod, state.pre_check_before_next.as_ref()).is_err() {
                return Ok(RefreshAction::Nothing);
            }
            if !state.next_container_images.is_empty()
                || !state.next_container_ref_metadata.is_empty()
            {
                let spec = UpdateSpec {
                    container_images: state.next_container_images.clone(),
                    container_ref_metadata: state.next_container_ref_metadata.clone(),
                    container_resources: state.next_container_resources.clone(),
                    update_env_from_metadata: state.update_env_from_metadata,
                    ..Default::default()
                };
                let mut state = state;
                let updated = patch_spec_to_pod(pod.clone(), &spec, &mut state, now)?;
                return Ok(RefreshAction::UpdatePod(Box::new(updated)));
            }
        }
    }

    Ok(match ready_condition_patch(pod, now) {
        Some(p) => RefreshAction::PatchStatus(p),
        None => RefreshAction::Nothing,
    })
}

/// OpenKruise `DefaultCheckInPlaceUpdateCompleted`: `Ok` when the pod is not in the middle of an
/// in-place update. Not completed while the grace annotation exists or later container batches
/// remain; otherwise [`check_containers_update_completed`]. A pod without state is completed.
pub fn check_update_completed(pod: &CachedPod) -> Result<(), String> {
    if grace_annotation(pod).is_some() {
        return Err("still in grace period of in-place update".to_string());
    }
    let state = match get_state(pod) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    if !state.next_container_images.is_empty()
        || !state.next_container_ref_metadata.is_empty()
        || !state.next_container_resources.is_empty()
    {
        return Err("existing containers to in-place update in next batches".to_string());
    }
    check_containers_update_completed(pod, &state)
}

#[derive(Clone, Copy)]
enum HashKind {
    Plain,
    EnvFromMetadata,
}

/// Every spec container has a status and a runtime meta entry with the same container ID, and
/// the meta hash equals the one expected from the spec.
fn all_containers_hash_consistent(
    pod: &CachedPod,
    meta: &RuntimeContainerMetaSet,
    kind: HashKind,
) -> bool {
    podutil::containers(pod).iter().all(|c| {
        let Some(status) = podutil::get_container_status(pod, &c.name) else {
            return false;
        };
        let Some(m) = meta.containers.iter().rev().find(|m| m.name == c.name) else {
            return false;
        };
        if m.container_id != status.container_id.as_deref().unwrap_or("") {
            return false;
        }
        match kind {
            HashKind::Plain => m.hashes.plain_hash == plain_container_hash(c),
            HashKind::EnvFromMetadata => {
                m.hashes.extracted_env_from_metadata_hash == expected_env_from_metadata_hash(c, pod)
            }
        }
    })
}

/// OpenKruise `defaultCheckContainersInPlaceUpdateCompleted`: whether the containers updated so
/// far run their new spec.
///
/// - Env-from-metadata updates (`updateEnvFromMetadata`) need kruise-daemon: the
///   `apps.kruise.io/runtime-containers-meta` annotation must exist and every container's
///   `extractedEnvFromMetadataHash` must equal [`expected_env_from_metadata_hash`]. Without the
///   daemon such an update never completes — which is why OpenKruise turns the
///   `InPlaceUpdateEnvFromMetadata` gate off when kruise-daemon is disabled (pass
///   [`UpdateOptions::env_from_metadata`] = false then, and metadata changes complete at once).
/// - If the runtime meta exists and every container's `plainHash` matches
///   [`plain_container_hash`] with the same container ID, the update is complete.
/// - Otherwise every container in `lastContainerStatuses` must have a status whose `imageID`
///   differs from the recorded one, or whose `image` equals the spec image (`:latest` appended
///   to a spec image without any `:`).
pub fn check_containers_update_completed(
    pod: &CachedPod,
    state: &InPlaceUpdateState,
) -> Result<(), String> {
    let meta = get_runtime_container_meta(pod).map_err(|e| e.to_string())?;
    if state.update_env_from_metadata {
        let Some(meta) = &meta else {
            return Err(
                "waiting for all containers hash consistent, but runtime-container-meta not found"
                    .to_string(),
            );
        };
        if !all_containers_hash_consistent(pod, meta, HashKind::EnvFromMetadata) {
            return Err("waiting for all containers hash consistent".to_string());
        }
    }
    if let Some(meta) = &meta
        && all_containers_hash_consistent(pod, meta, HashKind::Plain)
    {
        return Ok(());
    }

    let spec_images: BTreeMap<&str, String> = podutil::containers(pod)
        .iter()
        .map(|c| {
            let image = c.image.as_deref().unwrap_or("");
            let image = if image.contains(':') {
                image.to_string()
            } else {
                format!("{image}:latest")
            };
            (c.name.as_str(), image)
        })
        .collect();
    let mut remaining: BTreeSet<&str> = state
        .last_container_statuses
        .keys()
        .map(String::as_str)
        .collect();
    for cs in podutil::container_statuses(pod) {
        if let Some(old) = state.last_container_statuses.get(&cs.name) {
            if old.image_id == cs.image_id
                && spec_images
                    .get(cs.name.as_str())
                    .map(String::as_str)
                    .unwrap_or("")
                    != cs.image
            {
                return Err(format!("container {} imageID not changed", cs.name));
            }
            remaining.remove(cs.name.as_str());
        }
    }
    if !remaining.is_empty() {
        return Err(format!("not found statuses of containers {remaining:?}"));
    }
    Ok(())
}
