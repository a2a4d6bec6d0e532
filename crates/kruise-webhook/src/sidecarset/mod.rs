//! SidecarSet admission (`apps.kruise.io` v1alpha1 and v1beta1), as OpenKruise v1.9.0's
//! `pkg/webhook/sidecarset`:
//!
//! - `/mutate-apps-kruise-io-sidecarset` (`msidecarset.kb.io`) fills in the defaults in the
//!   request's own version and writes the hash annotations `kruise.io/sidecarset-hash` and
//!   `kruise.io/sidecarset-hash-without-image` (byte-exact Go hashes,
//!   [`kruise_engines::sidecarset::hash`]); an object that already holds all of it is allowed
//!   without a patch ([`mutation`]).
//! - `/validate-apps-kruise-io-sidecarset` (`vsidecarset.kb.io`) converts a v1alpha1 object to
//!   v1beta1 as OpenKruise does and checks every rule of [`validation`]; what the rules read from
//!   the cluster (the injection revision's ControllerRevision, ConfigMap `kruise-configuration`,
//!   the other SidecarSets) comes from [`crate::lookup::Lookup`], the process's shared cache.
//!
//! OpenKruise answers a refused SidecarSet with code 500 (its handler returns the field errors as
//! an internal error); kruise-rs answers 422 with the same message, and keeps 5xx for failures
//! of the webhook itself.

pub mod mutation;
pub mod validation;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_engines::revision::go_json::{self, GoType};
use kube::core::admission::Operation;
use serde_json::Value;

use crate::field::aggregate;
use crate::lookup::Lookup;
use crate::support::{CODE_BAD_REQUEST, CODE_UNPROCESSABLE, allow, decode_workload, errored};
use crate::{HandlerContext, Request, Response};

/// Label of a SidecarSet's ControllerRevisions naming the SidecarSet (OpenKruise
/// `sidecarcontrol.SidecarSetKindName`).
pub const SIDECARSET_NAME_LABEL: &str = "kruise.io/sidecarset-name";

/// `/mutate-apps-kruise-io-sidecarset`: see [`mutation`].
pub async fn mutate(req: &Request, _ctx: &HandlerContext) -> Response {
    mutation::mutate(req)
}

/// OpenKruise `SidecarSet.ConvertTo` (v1alpha1 → v1beta1) as the validating webhook uses it:
/// the metadata as it is but for the custom-version label, which becomes `spec.customVersion`;
/// a non-empty `spec.namespace` becomes the namespace selector
/// `{matchLabels: {kubernetes.io/metadata.name: <namespace>}}`; the rest field by field.
pub fn convert_to_v1beta1(obj: &a1::SidecarSet) -> b1::SidecarSet {
    let mut out = kruise_api::conversion::sidecarset::to_v1beta1(obj);
    out.metadata = obj.metadata.clone();
    out.status = None;
    let label = out
        .metadata
        .labels
        .as_mut()
        .and_then(|l| l.remove(kruise_api::keys::SIDECARSET_CUSTOM_VERSION));
    out.spec.custom_version = label.filter(|v| !v.is_empty());
    out
}

fn decode_v1beta1(
    req: &Request,
    obj: &kube::core::DynamicObject,
) -> Result<b1::SidecarSet, String> {
    if req.resource.version == "v1alpha1" {
        decode_workload::<a1::SidecarSet>(obj).map(|o| convert_to_v1beta1(&o))
    } else {
        decode_workload::<b1::SidecarSet>(obj)
    }
}

/// `/validate-apps-kruise-io-sidecarset`: create and update run every rule of [`validation`]
/// (the conflicts with other SidecarSets only when nothing else is wrong, as in OpenKruise);
/// denials carry code 422 and the field errors.
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    let update = match req.operation {
        Operation::Create => false,
        Operation::Update => true,
        _ => return allow(req),
    };
    let Some(object) = req.object.as_ref() else {
        return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
    };
    let new = match decode_v1beta1(req, object) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old = if update {
        let Some(old) = req.old_object.as_ref() else {
            return errored(req, CODE_BAD_REQUEST, "there is no content to decode");
        };
        match decode_v1beta1(req, old) {
            Ok(o) => Some(o),
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let empty;
    let lookup = match ctx.lookup.as_ref() {
        Some(l) => l,
        None => {
            empty = Lookup::fixed(Vec::new(), Vec::new());
            &empty
        }
    };
    let lookups = spec_lookups(lookup, &new).await;
    let mut errs = validation::validate_sidecarset(&new, old.as_ref(), &ctx.gates, &lookups);
    if errs.is_empty() {
        let others = lookup.sidecar_sets().await;
        errs = validation::validate_conflicts(&new, others.as_deref().map_err(Clone::clone));
    }
    match aggregate(&errs) {
        None => allow(req),
        Some(msg) => errored(req, CODE_UNPROCESSABLE, msg),
    }
}

/// Fetches what [`validation::validate_sidecarset`] reads from the cluster.
async fn spec_lookups(lookup: &Lookup, set: &b1::SidecarSet) -> validation::SpecLookups {
    let namespace = crate::kruise_namespace();
    let mut out = validation::SpecLookups::default();
    if let Some(info) = set
        .spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.revision.as_ref())
        && (info.revision_name.is_some() || info.custom_version.is_some())
    {
        out.revision = Some(history_revision(lookup, &namespace, set, info).await);
    }
    if set
        .spec
        .patch_pod_metadata
        .as_ref()
        .is_some_and(|p| !p.is_empty())
    {
        out.kruise_configuration = Some(
            lookup
                .config_map(&namespace, validation::KRUISE_CONFIGURATION)
                .await
                .map(|cm| cm.map(|c| c.data.clone().unwrap_or_default())),
        );
    }
    out
}

/// OpenKruise `HistoryControl.GetHistorySidecarSet`: the revision named by `revisionName` (in
/// the manager's namespace), else the newest revision of this SidecarSet labelled with
/// `customVersion`, restored onto the SidecarSet; `Err` with the reason it cannot be.
async fn history_revision(
    lookup: &Lookup,
    namespace: &str,
    set: &b1::SidecarSet,
    info: &b1::SidecarSetInjectRevision,
) -> Result<(), String> {
    let revision: Arc<ControllerRevision> = if let Some(name) = &info.revision_name {
        lookup
            .controller_revision(namespace, name)
            .await?
            // controller-runtime's cache reader: NotFound for the kind.
            .ok_or_else(|| format!("ControllerRevision.apps \"{name}\" not found"))?
    } else {
        let set_name = set.metadata.name.clone().unwrap_or_default();
        let labels: BTreeMap<String, String> = [
            (SIDECARSET_NAME_LABEL.to_owned(), set_name.clone()),
            (
                kruise_api::keys::SIDECARSET_CUSTOM_VERSION.to_owned(),
                info.custom_version.clone().unwrap_or_default(),
            ),
        ]
        .into();
        let mut revisions = lookup.controller_revisions(namespace, &labels).await?;
        // history.SortControllerRevisions: by revision, creation time, name.
        revisions.sort_by(|a, b| {
            (a.revision, &a.metadata.creation_timestamp, &a.metadata.name).cmp(&(
                b.revision,
                &b.metadata.creation_timestamp,
                &b.metadata.name,
            ))
        });
        revisions
            .pop()
            .ok_or_else(|| format!("ControllerRevision.apps \"{set_name}\" not found"))?
    };
    restore_from_revision(set, Some(&revision.data.0))
}

/// Whether OpenKruise restores a SidecarSet from revision data: the data is a strategic merge
/// patch of the SidecarSet (what the controller records is `{"spec": {"$patch": "replace",
/// ...}}`), applied and decoded again. Not a JSON object → `invalid JSON document`; the result
/// must decode as a SidecarSet. Strategic-merge list merging by key is approximated by replacing
/// lists (OpenKruise's own revisions replace the whole spec).
fn restore_from_revision(set: &b1::SidecarSet, data: Option<&Value>) -> Result<(), String> {
    let patch = match data {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(p)) => p,
        Some(_) => return Err("invalid JSON document".into()),
    };
    let mut merged = serde_json::to_value(set).map_err(|e| e.to_string())?;
    strategic_merge(&mut merged, patch)?;
    // Go's `json.Unmarshal` of the patched SidecarSet: its error word for word.
    go_json::check_decodable(&merged, GoType::SidecarSetV1beta1).map_err(|m| m.message)
}

fn strategic_merge(
    target: &mut Value,
    patch: &serde_json::Map<String, Value>,
) -> Result<(), String> {
    match patch.get("$patch").and_then(Value::as_str) {
        None | Some("merge") => {}
        Some("replace") => {
            let mut replaced = patch.clone();
            replaced.retain(|k, _| !k.starts_with('$'));
            *target = Value::Object(replaced);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        // apimachinery's `mergepatch.ErrBadPatchType`: the type and the patch map, as Go's %v.
        Some(other) => {
            return Err(format!(
                "unknown patch type: {other} in map: {}",
                kruise_api::validation::gofmt::json_value_v(&Value::Object(patch.clone()))
            ));
        }
    }
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Some(map) = target.as_object_mut() else {
        return Ok(());
    };
    for (k, v) in patch {
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                map.remove(k);
            }
            Value::Object(p) => {
                let slot = map.entry(k.clone()).or_insert(Value::Null);
                strategic_merge(slot, p)?;
            }
            other => {
                map.insert(k.clone(), other.clone());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
