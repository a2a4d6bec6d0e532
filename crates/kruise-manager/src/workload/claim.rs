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

/// The patch that changes an object's owner references: a strategic merge patch of the one
/// reference (`strategic`) for built-in kinds; for custom resources, which take no strategic
/// merge patch, a merge patch of the whole list (`whole`) guarded by the resourceVersion read
/// (a conflict is an error: the next pass claims again). Both carry the object's uid, so a
/// re-created object of the same name is never claimed.
fn owner_patch<K: Resource<DynamicType = ()>>(
    meta: &ObjectMeta,
    strategic: serde_json::Value,
    whole: serde_json::Value,
) -> Patch<serde_json::Value> {
    if K::group(&()).ends_with("kruise.io") {
        Patch::Merge(
            json!({"metadata": {"ownerReferences": whole, "uid": meta.uid,
            "resourceVersion": meta.resource_version}}),
        )
    } else {
        Patch::Strategic(json!({"metadata": {"ownerReferences": strategic, "uid": meta.uid}}))
    }
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
                let kept: Vec<_> = meta
                    .owner_references
                    .iter()
                    .flatten()
                    .filter(|r| r.uid != owner.uid)
                    .collect();
                let patch = owner_patch::<K>(
                    meta,
                    json!([{"$patch": "delete", "uid": owner.uid}]),
                    json!(kept),
                );
                match api
                    .patch(&obj.name_any(), &PatchParams::default(), &patch)
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
                let reference = json!({
                    "apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
                    "uid": owner.uid, "controller": true, "blockOwnerDeletion": true,
                });
                let mut all: Vec<serde_json::Value> = meta
                    .owner_references
                    .iter()
                    .flatten()
                    .filter_map(|r| serde_json::to_value(r).ok())
                    .collect();
                all.push(reference.clone());
                let patch = owner_patch::<K>(meta, json!([reference]), json!(all));
                match api
                    .patch(&obj.name_any(), &PatchParams::default(), &patch)
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

/// A label selector compiled once (OpenKruise's `LabelSelectorAsSelector`: `In`/`NotIn` with no
/// values are kept as written); `None` when it is not valid.
pub fn compile_selector(
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) -> Option<kube::core::Selector> {
    let mut sel = selector.clone();
    for expr in sel.match_expressions.iter_mut().flatten() {
        if matches!(expr.operator.as_str(), "In" | "NotIn") {
            expr.values.get_or_insert_with(Vec::new);
        }
    }
    kube::core::Selector::try_from(sel).ok()
}

/// Whether `selector` selects objects with `labels`.
pub fn selects(
    selector: &kube::core::Selector,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    use kube::core::SelectorExt;
    let empty = std::collections::BTreeMap::new();
    selector.matches(labels.unwrap_or(&empty))
}

/// `RefManager.canAdopt`: a live read of the owner (kind `K`); adoption only while it is the
/// same object (`owner.uid`) and not being deleted. The messages are upstream's.
///
/// # Errors
/// The read failed, the owner was re-created, or it is being deleted.
pub async fn can_adopt<K>(client: &kube::Client, owner: &Owner<'_>) -> Result<(), String>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), owner.namespace);
    let fresh = api.get(owner.name).await.map_err(|e| e.to_string())?;
    let meta = fresh.meta();
    if meta.uid.as_deref() != Some(owner.uid) {
        return Err(format!(
            "original {} {}/{} is gone: got uid {}, wanted {}",
            owner.kind,
            owner.namespace,
            owner.name,
            meta.uid.as_deref().unwrap_or_default(),
            owner.uid
        ));
    }
    if let Some(t) = &meta.deletion_timestamp {
        return Err(format!(
            "{}/{} has just been deleted at {}",
            owner.namespace, owner.name, t.0
        ));
    }
    Ok(())
}
