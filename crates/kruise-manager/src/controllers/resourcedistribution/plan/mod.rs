//! The pure decisions of the ResourceDistribution controller, as OpenKruise v1.9.0's
//! `pkg/controller/resourcedistribution/utils.go` and `resourcedistribution_controller.go`
//! make them: which namespaces are targets (`listNamespacesForDistributor`), which
//! distributions a namespace event concerns (`matchViaTargets`, `matchViaIncludedNamespaces`,
//! `matchViaLabelSelector`), the content hash (`hashResource`), whether a copy is the
//! distribution's (`isControlledByDistributor`) and up to date (`needToUpdate`), the copy to
//! write (`makeResourceObject` with `mergeMetadata`) and the status (`handleErrors`,
//! `calculateNewStatus`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use kruise_api::apps::v1alpha1::{
    ResourceDistribution, ResourceDistributionCondition, ResourceDistributionStatus,
    ResourceDistributionTargets, resource_distribution_condition_type as ct,
};
use kruise_api::keys::{RESOURCE_DISTRIBUTION_FROM, RESOURCE_DISTRIBUTION_HASHCODE};
use kruise_engines::updatesort::selector_matches;
use serde_json::{Map, Value, json};

/// `apiVersion` of the owner reference on every copy.
pub const API_VERSION: &str = "apps.kruise.io/v1alpha1";
/// `kind` of the owner reference on every copy.
pub const KIND: &str = "ResourceDistribution";

/// The kinds a ResourceDistribution distributes (OpenKruise's `supportedGKList`, core group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `v1/Secret`.
    Secret,
    /// `v1/ConfigMap`.
    ConfigMap,
}

impl Kind {
    /// The kind's name as in `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
        }
    }
}

/// `spec.resource` understood: kind and name of the copies.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Secret or ConfigMap.
    pub kind: Kind,
    /// `metadata.name` of every copy.
    pub name: String,
}

/// Why `spec.resource` cannot be distributed (the pass logs it and does not retry, as
/// OpenKruise's `doReconcile` after `DeserializeResource` fails; the webhook refuses such objects).
pub fn parse_resource(resource: &Value) -> Result<Resource, String> {
    let obj = resource
        .as_object()
        .ok_or_else(|| "spec.resource is not an object".to_owned())?;
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err("Object 'Kind' is missing in spec.resource".into());
    }
    let kind = match (api_version, kind) {
        ("v1", "Secret") => Kind::Secret,
        ("v1", "ConfigMap") => Kind::ConfigMap,
        _ => {
            return Err(format!(
                "unknown or unsupported resource {api_version}/{kind}, only v1 Secret and ConfigMap"
            ));
        }
    };
    let name = resource
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Ok(Resource { kind, name })
}

/// OpenKruise's `hashResource`: the hex SHA-256 of `spec.resource`'s raw JSON as the API server
/// sends it (Go's encoding of the decoded object: keys sorted, HTML characters escaped), which
/// is what [`kruise_engines::revision::go_json::to_vec`] reproduces.
pub fn hash_resource(resource: &Value) -> String {
    let bytes = kruise_engines::revision::go_json::to_vec(resource);
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn names(
    list: Option<&kruise_api::apps::v1alpha1::ResourceDistributionTargetNamespaces>,
) -> impl Iterator<Item = &str> {
    list.and_then(|l| l.list.as_ref())
        .into_iter()
        .flatten()
        .map(|n| n.name.as_deref().unwrap_or(""))
}

fn selector_is_empty(sel: Option<&LabelSelector>) -> bool {
    sel.is_none_or(|s| {
        s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
    })
}

/// One existing namespace as the target computation sees it.
#[derive(Debug, Clone, Copy)]
pub struct NamespaceView<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
}

/// OpenKruise's `listNamespacesForDistributor`: `(matched, unmatched)`, both sorted. Matched:
/// every existing namespace when `allNamespaces`, else the `includedNamespaces` (existing or not)
/// and the existing namespaces the non-empty `namespaceLabelSelector` selects; minus the
/// `excludedNamespaces`. Unmatched: the other existing namespaces. An invalid selector is an
/// error (the pass fails and is retried, as in OpenKruise).
pub fn target_namespaces<'a>(
    targets: &ResourceDistributionTargets,
    namespaces: impl Iterator<Item = NamespaceView<'a>> + Clone,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut matched: BTreeSet<String> = BTreeSet::new();
    if targets.all_namespaces == Some(true) {
        matched.extend(namespaces.clone().map(|n| n.name.to_owned()));
    } else {
        matched.extend(names(targets.included_namespaces.as_ref()).map(str::to_owned));
        let sel = targets.namespace_label_selector.as_ref();
        if !selector_is_empty(sel) {
            let sel = sel.expect("not empty");
            for ns in namespaces.clone() {
                match selector_matches(sel, ns.labels) {
                    Some(true) => {
                        matched.insert(ns.name.to_owned());
                    }
                    Some(false) => {}
                    None => return Err("invalid namespaceLabelSelector".into()),
                }
            }
        }
    }
    for ex in names(targets.excluded_namespaces.as_ref()) {
        matched.remove(ex);
    }
    let unmatched = namespaces
        .map(|n| n.name)
        .filter(|n| !matched.contains(*n))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    Ok((matched.into_iter().collect(), unmatched))
}

/// OpenKruise's `matchViaLabelSelector`: a non-empty, valid selector selects the namespace.
pub fn match_via_label_selector(ns: NamespaceView<'_>, rd: &ResourceDistribution) -> bool {
    let sel = rd.spec.targets.namespace_label_selector.as_ref();
    !selector_is_empty(sel) && sel.and_then(|s| selector_matches(s, ns.labels)) == Some(true)
}

/// OpenKruise's `matchViaIncludedNamespaces`.
pub fn match_via_included(ns: &str, rd: &ResourceDistribution) -> bool {
    names(rd.spec.targets.included_namespaces.as_ref()).any(|n| n == ns)
}

/// OpenKruise's `matchViaTargets` (a namespace was created): not excluded, and all namespaces,
/// listed, or selected.
pub fn match_via_targets(ns: NamespaceView<'_>, rd: &ResourceDistribution) -> bool {
    let t = &rd.spec.targets;
    if names(t.excluded_namespaces.as_ref()).any(|n| n == ns.name) {
        return false;
    }
    t.all_namespaces == Some(true)
        || match_via_included(ns.name, rd)
        || match_via_label_selector(ns, rd)
}

/// OpenKruise's `isControlledByDistributor`: the copy's controller owner reference names this
/// distribution by apiVersion, kind and name (not by UID).
pub fn controlled_by(meta: &ObjectMeta, rd_name: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .is_some_and(|o| o.api_version == API_VERSION && o.kind == KIND && o.name == rd_name)
}

/// OpenKruise's `needToUpdate`: the copy differs from `spec.resource` outside `metadata` and
/// `status`.
pub fn need_to_update(live: &Value, resource: &Value) -> bool {
    let strip = |v: &Value| -> Map<String, Value> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("status");
        m
    };
    strip(live) != strip(resource)
}

/// OpenKruise's `makeResourceObject`: `spec.resource` placed in `namespace`; with the live
/// copy `old`, its labels and annotations the resource does not set and its finalizers are
/// kept (`mergeMetadata`); the distribution's controller reference added unless an owner
/// reference has its UID; the annotations `kruise.io/resourcedistribution.resource.hashcode`
/// (`hash`) and `kruise.io/resourcedistribution.resource.from` (the distribution's name).
/// No `resourceVersion`: the update is unconditional, as OpenKruise's.
pub fn make_copy(
    rd: &ResourceDistribution,
    namespace: &str,
    hash: &str,
    old: Option<&Value>,
) -> Value {
    let mut obj = rd.spec.resource.clone();
    if !obj.is_object() {
        obj = json!({});
    }
    let meta = obj
        .as_object_mut()
        .expect("object")
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let meta = meta.as_object_mut().expect("object");
    if let Some(old_meta) = old.and_then(|o| o.get("metadata")) {
        for key in ["labels", "annotations"] {
            let entry = meta.entry(key).or_insert_with(|| json!({}));
            if !entry.is_object() {
                *entry = json!({});
            }
            let map = entry.as_object_mut().expect("object");
            for (k, v) in old_meta
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                map.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let finalizers: BTreeSet<String> = [meta.get("finalizers"), old_meta.get("finalizers")]
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if finalizers.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), json!(finalizers));
        }
    }
    meta.insert("namespace".into(), json!(namespace));
    let uid = rd.metadata.uid.as_deref().unwrap_or("");
    let owners = meta.entry("ownerReferences").or_insert_with(|| json!([]));
    if !owners.is_array() {
        *owners = json!([]);
    }
    let owners = owners.as_array_mut().expect("array");
    if !owners
        .iter()
        .any(|o| o.get("uid").and_then(Value::as_str) == Some(uid))
    {
        owners.push(json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": rd.metadata.name.as_deref().unwrap_or(""),
            "uid": uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }));
    }
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if !ann.is_object() {
        *ann = json!({});
    }
    let ann = ann.as_object_mut().expect("object");
    ann.insert(RESOURCE_DISTRIBUTION_HASHCODE.into(), json!(hash));
    ann.insert(
        RESOURCE_DISTRIBUTION_FROM.into(),
        json!(rd.metadata.name.as_deref().unwrap_or("")),
    );
    obj
}

/// The six condition kinds in OpenKruise's order (`GetConditionID` … `NotExistConditionID`):
/// the status always lists all six in this order.
pub const CONDITION_TYPES: [&str; 6] = [
    ct::GET_RESOURCE_FAILED,
    ct::CREATE_RESOURCE_FAILED,
    ct::UPDATE_RESOURCE_FAILED,
    ct::DELETE_RESOURCE_FAILED,
    ct::CONFLICT_OCCURRED,
    ct::NAMESPACE_NOT_EXISTS,
];

/// Index into [`CONDITION_TYPES`] of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Reading the copy failed.
    Get = 0,
    /// Creating it failed.
    Create = 1,
    /// Updating it failed.
    Update = 2,
    /// Deleting it failed.
    Delete = 3,
    /// A same-named object not controlled by the distribution is in the way.
    Conflict = 4,
    /// The namespace does not exist or is terminating.
    NotExist = 5,
}

/// OpenKruise's message for [`Failure::Conflict`].
pub const CONFLICT_MESSAGE: &str =
    "conflict with existing resources because of the same namespace, group, version, kind and name";
/// OpenKruise's message for [`Failure::NotExist`].
pub const NOT_EXIST_MESSAGE: &str = "namespace not found or is terminating";
/// OpenKruise's reason of a condition without failures.
pub const OPERATION_SUCCEEDED: &str = "Succeeded";

/// One failed namespace: what failed and the error's text.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceFailure {
    /// The namespace.
    pub namespace: String,
    /// What failed.
    pub kind: Failure,
    /// The error (the condition's reason is the last one of its kind).
    pub message: String,
}

/// OpenKruise's `handleErrors` + `calculateNewStatus`: the status after a pass over `desired`
/// target namespaces of which `succeeded` are in sync, with `failures` (distribution failures
/// first, then clean-up failures, each in namespace order). A condition is `True` with the
/// failed namespaces and the last error as reason, else `False` / `Succeeded`; its
/// `lastTransitionTime` is kept from the current status while its status stays. Zero counts are
/// left out, as Go's `omitempty` writes them.
pub fn new_status(
    rd: &ResourceDistribution,
    failures: &[NamespaceFailure],
    desired: i32,
    succeeded: i32,
    now: &Time,
) -> ResourceDistributionStatus {
    let old = rd.status.as_ref().and_then(|s| s.conditions.as_ref());
    let conditions = CONDITION_TYPES
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mine: Vec<&NamespaceFailure> =
                failures.iter().filter(|f| f.kind as usize == i).collect();
            let status = if mine.is_empty() { "False" } else { "True" };
            let old_same = old.and_then(|o| o.get(i)).filter(|c| {
                c.status == status && old.is_some_and(|o| o.len() == CONDITION_TYPES.len())
            });
            ResourceDistributionCondition {
                type_: (*t).to_owned(),
                status: status.to_owned(),
                last_transition_time: Some(
                    old_same
                        .and_then(|c| c.last_transition_time.clone())
                        .unwrap_or_else(|| now.clone()),
                ),
                reason: Some(
                    mine.last()
                        .map_or(OPERATION_SUCCEEDED.to_owned(), |f| f.message.clone()),
                ),
                failed_namespaces: (!mine.is_empty())
                    .then(|| mine.iter().map(|f| f.namespace.clone()).collect()),
            }
        })
        .collect();
    let nz32 = |v: i32| (v != 0).then_some(v);
    ResourceDistributionStatus {
        desired: nz32(desired),
        succeeded: nz32(succeeded),
        failed: nz32(desired - succeeded),
        observed_generation: rd.metadata.generation.filter(|g| *g != 0),
        conditions: Some(conditions),
    }
}

/// Whether the failures make the pass fail (and be retried): every kind but conflicts and
/// missing namespaces, as OpenKruise's `handleErrors`.
pub fn retryable(failures: &[NamespaceFailure]) -> bool {
    failures
        .iter()
        .any(|f| !matches!(f.kind, Failure::Conflict | Failure::NotExist))
}

#[cfg(test)]
mod tests;
