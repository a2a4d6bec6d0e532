//! Adoption and release of objects by their owner (upstream `ControllerRefManager.ClaimObject`
//! as `ClaimPods` / `ClaimControllerRevisions` use it, shared by Advanced StatefulSet and
//! Advanced DaemonSet).

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_engines::expectations::ResourceVersionExpectations;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::is_status;

/// The owner claiming objects.
pub struct Owner<'a> {
    /// `apiVersion` of the owner reference (`apps.kruise.io/v1beta1`).
    pub api_version: &'a str,
    /// `kind` of the owner reference.
    pub kind: &'a str,
    /// Name.
    pub name: &'a str,
    /// UID.
    pub uid: &'a str,
    /// Namespace (only objects of this namespace are adopted).
    pub namespace: &'a str,
    /// Whether the owner is being deleted (it then adopts and releases nothing).
    pub deleting: bool,
}

/// The controller UID of an object (its owner reference with `controller: true`).
pub fn controller_uid(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

/// Claims `objects` for `owner` as upstream's ref manager does: owned objects that still
/// `matches` are kept; owned ones that stopped matching are released (a strategic-merge patch
/// deleting the owner reference; not while the owner is being deleted); matching orphans that
/// are not being deleted are adopted (a patch adding the controller reference) once
/// `can_adopt` — a live check that the owner still exists as itself — said yes (asked at most
/// once). Written objects' resourceVersions are expected in `rvs`. Returns the claimed objects.
///
/// # Errors
/// Every failed patch (other than the object being gone) and a refused adoption, aggregated
/// as Go's `NewAggregate` prints them; nothing is claimed partially hidden: the caller does not
/// sync on an error.
pub async fn claim<K, F, Fut>(
    api: &Api<K>,
    owner: &Owner<'_>,
    objects: Vec<Arc<K>>,
    matches: impl Fn(&K) -> bool,
    can_adopt: F,
    rvs: &ResourceVersionExpectations,
) -> Result<Vec<Arc<K>>, String>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let mut claimed = Vec::new();
    let mut can_adopt = Some(can_adopt);
    let mut adopt_ok: Option<bool> = None;
    let mut errors = Vec::new();
    for obj in objects {
        let meta = obj.meta();
        let is_match = matches(&obj);
        match controller_uid(meta) {
            Some(uid) if uid == owner.uid => {
                if is_match {
                    claimed.push(obj);
                    continue;
                }
                if owner.deleting {
                    continue;
                }
                let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner.uid}], "uid": meta.uid}});
                match api
                    .patch(
                        &obj.name_any(),
                        &PatchParams::default(),
                        &Patch::Strategic(patch),
                    )
                    .await
                {
                    Ok(written) => rvs.expect_object(written.meta()),
                    Err(e) if is_status(&e, 404) || is_status(&e, 422) => {}
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Some(_) => {}
            None => {
                if owner.deleting
                    || !is_match
                    || meta.deletion_timestamp.is_some()
                    || meta.namespace.as_deref() != Some(owner.namespace)
                {
                    continue;
                }
                if adopt_ok.is_none() {
                    let check = can_adopt.take().map(|f| f());
                    adopt_ok = Some(match check {
                        Some(fut) => match fut.await {
                            Ok(()) => true,
                            Err(e) => {
                                errors.push(format!(
                                    "can't adopt {} {}/{} ({}): {e}",
                                    K::kind(&()),
                                    owner.namespace,
                                    obj.name_any(),
                                    meta.uid.as_deref().unwrap_or_default()
                                ));
                                false
                            }
                        },
                        None => false,
                    });
                }
                if adopt_ok != Some(true) {
                    continue;
                }
                let patch = json!({"metadata": {"ownerReferences": [{
                    "apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
                    "uid": owner.uid, "controller": true, "blockOwnerDeletion": true,
                }], "uid": meta.uid}});
                match api
                    .patch(
                        &obj.name_any(),
                        &PatchParams::default(),
                        &Patch::Strategic(patch),
                    )
                    .await
                {
                    Ok(written) => {
                        rvs.expect_object(written.meta());
                        claimed.push(obj);
                    }
                    Err(e) if is_status(&e, 404) => {}
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
    }
    match errors.len() {
        0 => Ok(claimed),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}
