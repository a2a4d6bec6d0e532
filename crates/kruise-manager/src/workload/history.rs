//! ControllerRevision history of a workload (OpenKruise `pkg/util/history` as used by CloneSet
//! and Advanced StatefulSet `getActiveRevisions`/`truncateHistory`).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_engines::revision;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{ControlError, is_status};

/// [`ensure_revision`] for a workload whose revisions record its pod template (OpenKruise's
/// `newRevision` of Advanced StatefulSet and Advanced DaemonSet): data
/// `{"spec":{"template":…,"$patch":"replace"}}` ([`revision::template_patch`]), the template's
/// labels and every annotation of the workload (`meta`) on the revision, owned (controller
/// reference `api_version`/`kind`) by the workload.
///
/// # Errors
/// As [`ensure_revision`]; [`ControlError::Revision`] when the template cannot be encoded.
pub async fn ensure_template_revision(
    api: &Api<ControllerRevision>,
    revisions: &[Arc<ControllerRevision>],
    collision: i32,
    (api_version, kind): (&str, &str),
    meta: &ObjectMeta,
    template: &PodTemplateSpec,
) -> Result<(ControllerRevision, i32), ControlError> {
    let data = revision::template_patch(template)?;
    let next = revision::next_revision(revisions);
    let owner = revision::controller_ref(
        api_version,
        kind,
        meta.name.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
    );
    let build = |collision: i32| -> Result<ControllerRevision, revision::RevisionError> {
        let mut r = revision::new_controller_revision(
            meta,
            owner.clone(),
            template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
            data.clone(),
            next,
            Some(collision),
        );
        r.metadata.annotations = meta.annotations.clone();
        Ok(r)
    };
    ensure_revision(api, revisions, collision, build).await
}

/// Finds the revision equal to the workload's current template or creates it, as upstream
/// `history` does: `revisions` is the workload's history (sorted by revision number, oldest
/// first); `build(collision_count)` builds the candidate revision (name = owner + hash of the
/// data and collision count, revision number = [`revision::next_revision`]).
///
/// - An equal revision at the head is returned as is; an equal older one is moved to the head
///   (its `revision` patched to the next number). Without a byte-equal one, a revision that
///   records the same template in another encoding counts as equal
///   ([`revision::equivalent_template_revision`]).
/// - Otherwise the candidate is created; a name clash with different content increments the
///   collision count and tries again (a clash with equal content reuses the existing one).
///
/// Returns the revision and the collision count to write into the workload's status.
///
/// # Errors
/// API errors other than the create conflict; [`ControlError::Revision`] from `build`.
pub async fn ensure_revision(
    api: &Api<ControllerRevision>,
    revisions: &[Arc<ControllerRevision>],
    mut collision: i32,
    build: impl Fn(i32) -> Result<ControllerRevision, revision::RevisionError>,
) -> Result<(ControllerRevision, i32), ControlError> {
    let next = revision::next_revision(revisions);
    let mut candidate = build(collision)?;
    let mut equal = revision::find_equal_revisions(revisions, &candidate);
    if equal.is_empty() {
        // A revision another writer encoded differently (e.g. adopted from a native
        // StatefulSet on a newer Kubernetes) that records the same template.
        equal = revisions
            .iter()
            .enumerate()
            .filter(|(_, r)| revision::equivalent_template_revision(r, &candidate))
            .map(|(i, _)| i)
            .collect();
    }
    if let Some(&idx) = equal.last() {
        let found = &revisions[idx];
        if idx + 1 == revisions.len() {
            return Ok(((**found).clone(), collision));
        }
        let patched = api
            .patch(
                &found.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"revision": next})),
            )
            .await?;
        return Ok((patched, collision));
    }
    loop {
        match api.create(&PostParams::default(), &candidate).await {
            Ok(created) => return Ok((created, collision)),
            Err(e) if is_status(&e, 409) => {
                let existing = api.get(&candidate.name_any()).await?;
                if revision::equal_revision(&existing, &candidate) {
                    return Ok((existing, collision));
                }
                collision += 1;
                candidate = build(collision)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Deletes the revisions named in `doomed` (from [`revision::history_to_truncate`]); one
/// already gone is not an error.
///
/// # Errors
/// The first other API error.
pub async fn truncate(
    api: &Api<ControllerRevision>,
    doomed: &[String],
) -> Result<(), ControlError> {
    for name in doomed {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The current revision of a workload: the revision its status names as current
/// (`status.currentRevision`), else — a new workload, or one whose current revision is gone —
/// the update revision (OpenKruise's `getActiveRevisions`).
pub fn current_revision(
    status_current: Option<&str>,
    revisions: &[Arc<ControllerRevision>],
    update: &ControllerRevision,
) -> ControllerRevision {
    status_current
        .and_then(|name| {
            revisions
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some(name))
        })
        .map(|r| (**r).clone())
        .unwrap_or_else(|| update.clone())
}
