//! The WorkloadSpread steps of the pod webhooks (OpenKruise v1.9.0
//! `pkg/webhook/pod/mutating/workloadspread.go`, `pkg/webhook/pod/validating/workloadspread.go`
//! and `pkg/util/workloadspread/workloadspread.go`).
//!
//! At pod CREATE ([`mutate`], gate `WorkloadSpread`, after the readiness gate and before the
//! SidecarSet step, as OpenKruise's order): a pod whose controller is a workload kind
//! WorkloadSpread knows (Deployment, ReplicaSet, CloneSet, Job, StatefulSet of either group, and
//! the kinds of the `kruise-configuration` whitelist) and that a WorkloadSpread of its namespace
//! targets (directly, or through its controller's controller: a Deployment's ReplicaSet) and
//! selects (`targetFilter`) is assigned the first schedulable subset with room
//! (`missingReplicas > 0` or unlimited), the assignment recorded in the WorkloadSpread's status
//! (`creatingPods`, `missingReplicas - 1`, under a per-WorkloadSpread lock, conflicts retried on
//! a fresh read); the subset's tolerations, node affinity terms and patch are applied and the
//! `apps.kruise.io/matched-workloadspread` annotation written. For a StatefulSet target the
//! subset follows the pod's ordinal (`[0, max0)` the first subset, ...), with no status write.
//!
//! At pod DELETE and eviction ([`validate`]): a pod assigned to a subset with a limit is recorded
//! in `deletingPods` and its subset's `missingReplicas + 1`, so a replacement can be created in
//! the same subset before the controller sees the pod go.
//!
//! The subset patch is applied with [`kruise_engines::strategicpatch`] (apimachinery's strategic
//! merge patch with the `Pod` schema, as OpenKruise applies it); a patch it refuses fails the
//! admission with apimachinery's message, as OpenKruise's does.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, NodeAffinity, NodeSelector, NodeSelectorTerm, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    InjectWorkloadSpread, TargetFilter, TargetReference, WorkloadSpread, WorkloadSpreadSubset,
    WorkloadSpreadSubsetStatus,
};
use kruise_api::keys;
use kruise_engines::strategicpatch::{Schema, strategic_merge_patch};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::admission::Operation as AdmissionOp;
use serde_json::Value;

use crate::lookup::Lookup;
use crate::support::decode;
use crate::{HandlerContext, Request};

/// `PodDeletionCostPositive`: the deletion cost step of a pod within its subset's limit.
pub const DELETION_COST_POSITIVE: i64 = 100;
/// `PodDeletionCostNegative`: the deletion cost step of a pod beyond its subset's limit.
pub const DELETION_COST_NEGATIVE: i64 = -100;
/// `VersionIgnored`: the version of pods whose workload has no versioned subset status.
pub const VERSION_IGNORED: &str = "versionIgnored";
/// `FakeSubsetName`: the pods of no subset.
pub const FAKE_SUBSET_NAME: &str = "kruise.io/workloadspread-fake-subset-name";
/// The `kruise-configuration` key holding the custom workload whitelist.
pub const WHITELIST_KEY: &str = "WorkloadSpread_Watch_Custom_Workload_WhiteList";
/// The ConfigMap of OpenKruise's configuration (in the manager's namespace).
pub const CONFIGURATION_NAME: &str = "kruise-configuration";

/// Why a pod reaches the bookkeeping (`Operation` in OpenKruise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Pod CREATE.
    Create,
    /// Pod DELETE.
    Delete,
    /// `pods/eviction` CREATE.
    Eviction,
}

/// One group/version/kind of the whitelist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gvk {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// A custom workload of the `kruise-configuration` whitelist (`CustomWorkload`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomWorkload {
    /// The workload's kind.
    pub gvk: Gvk,
    /// Kinds it creates pods through (e.g. its ReplicaSets).
    pub sub_resources: Vec<Gvk>,
    /// Dotted path of its replicas (`spec.replicas`).
    pub replicas_path: String,
}

/// Reads Go's `json.Unmarshal` of a struct field: the exact key, else a key equal ignoring case.
fn field<'a>(m: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a Value> {
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

fn gvk_of(v: &Value) -> Gvk {
    let s = |k: &str| {
        v.as_object()
            .and_then(|m| field(m, k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Gvk {
        group: s("Group"),
        version: s("Version"),
        kind: s("Kind"),
    }
}

/// `GetWSWatchCustomWorkloadWhiteList`: the whitelist of ConfigMap `cm` (empty without the key).
///
/// # Errors
/// The JSON error when the value does not parse.
pub fn parse_whitelist(cm: Option<&ConfigMap>) -> Result<Vec<CustomWorkload>, String> {
    let Some(raw) = cm
        .and_then(|c| c.data.as_ref())
        .and_then(|d| d.get(WHITELIST_KEY))
    else {
        return Ok(Vec::new());
    };
    let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let workloads = v
        .as_object()
        .and_then(|m| field(m, "workloads"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(workloads
        .iter()
        .map(|w| CustomWorkload {
            gvk: gvk_of(w),
            sub_resources: w
                .as_object()
                .and_then(|m| field(m, "subResources"))
                .and_then(Value::as_array)
                .map(|a| a.iter().map(gvk_of).collect())
                .unwrap_or_default(),
            replicas_path: w
                .as_object()
                .and_then(|m| field(m, "replicasPath"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
        .collect())
}

/// The group of an apiVersion (`schema.ParseGroupVersion`); `None` when malformed.
pub fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None if api_version.is_empty() => Some(""),
        None => Some(""),
        Some((g, v)) if !v.contains('/') => Some(g),
        Some(_) => None,
    }
}

/// The built-in kinds (`workloads`): kind and groups.
const BUILTIN: &[(&str, &[&str])] = &[
    ("Deployment", &["apps"]),
    ("CloneSet", &["apps.kruise.io"]),
    ("ReplicaSet", &["apps"]),
    ("Job", &["batch"]),
    ("StatefulSet", &["apps", "apps.kruise.io"]),
];

/// `matchReference`: whether an owner of `api_version`/`kind` is a workload kind WorkloadSpread
/// knows (built in, or in `whitelist` with its sub-resources).
pub fn is_known_workload(api_version: &str, kind: &str, whitelist: &[CustomWorkload]) -> bool {
    let Some(group) = group_of(api_version) else {
        return false;
    };
    BUILTIN
        .iter()
        .any(|(k, gs)| *k == kind && gs.contains(&group))
        || whitelist.iter().any(|w| {
            (w.gvk.kind == kind && w.gvk.group == group)
                || w.sub_resources
                    .iter()
                    .any(|s| s.kind == kind && s.group == group)
        })
}

/// `IsPodSelected`: whether `filter` selects `labels` (no filter: every pod; an invalid
/// selector: `None`).
pub fn is_pod_selected(
    filter: Option<&TargetFilter>,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<bool> {
    let Some(f) = filter else {
        return Some(true);
    };
    let Some(sel) = &f.selector else {
        // `ValidatedLabelSelectorAsSelector(nil)` selects nothing.
        return Some(false);
    };
    kruise_engines::updatesort::selector_matches(sel, labels)
}

/// The pod's `apps.kruise.io/matched-workloadspread` annotation, parsed.
pub fn injected(annotations: Option<&BTreeMap<String, String>>) -> Option<InjectWorkloadSpread> {
    let raw = annotations?.get(keys::MATCHED_WORKLOADSPREAD)?;
    if raw.is_empty() {
        return None;
    }
    serde_json::from_str(raw).ok()
}

/// `enableVersionedStatus` + `GetPodVersion`: pods of a ReplicaSet or Deployment (the default
/// `--ws-enabled-versioned-status`) are versioned by `pod-template-hash` (or the short
/// `controller-revision-hash`); others by [`VERSION_IGNORED`].
pub fn pod_version(owner_kind: Option<&str>, labels: Option<&BTreeMap<String, String>>) -> String {
    let versioned = owner_kind.is_some_and(|k| {
        let k = k.to_ascii_lowercase();
        k == "replicaset" || k == "deployment"
    });
    if !versioned {
        return VERSION_IGNORED.to_string();
    }
    if let Some(v) = labels.and_then(|l| l.get("pod-template-hash")) {
        return v.clone();
    }
    if let Some(v) = labels.and_then(|l| l.get("controller-revision-hash")) {
        return short_hash(v).to_string();
    }
    VERSION_IGNORED.to_string()
}

/// CloneSet's `GetShortHash`: the part after the last `-`.
pub fn short_hash(h: &str) -> &str {
    h.rsplit('-').next().unwrap_or(h)
}

/// `intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)`; `None` for a malformed value (a
/// string without `%` is taken as the integer it spells, as apimachinery does).
pub fn scaled(v: &IntOrString, total: i32, round_up: bool) -> Option<i64> {
    match v {
        IntOrString::Int(i) => Some(i64::from(*i)),
        IntOrString::String(s) => {
            let Some(p) = s.strip_suffix('%') else {
                return s.parse::<i32>().ok().map(i64::from);
            };
            let p: i64 = p.parse::<i32>().ok()?.into();
            let n = p * i64::from(total);
            Some(if round_up {
                (n + 99).div_euclid(100)
            } else {
                n.div_euclid(100)
            })
        }
    }
}

/// Whether a subset's `maxReplicas` is a percentage (`hasPercentSubset`).
pub fn has_percent_subset(ws: &WorkloadSpread) -> bool {
    ws.spec
        .subsets
        .iter()
        .any(|s| matches!(&s.max_replicas, Some(IntOrString::String(v)) if v.ends_with('%')))
}

/// `initializedSubsetStatuses`: one status per subset, `missingReplicas` its limit (−1: none).
pub fn initial_statuses(ws: &WorkloadSpread, replicas: i32) -> Vec<WorkloadSpreadSubsetStatus> {
    ws.spec
        .subsets
        .iter()
        .map(|s| WorkloadSpreadSubsetStatus {
            name: s.name.clone(),
            missing_replicas: match &s.max_replicas {
                None => -1,
                Some(m) => scaled(m, replicas, true).unwrap_or(0) as i32,
            },
            ..Default::default()
        })
        .collect()
}

fn schedulable(s: &WorkloadSpreadSubsetStatus) -> bool {
    !s.conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Schedulable" && c.status == "False")
}

fn recorded(statuses: &[WorkloadSpreadSubsetStatus], key: &str) -> Option<usize> {
    statuses.iter().position(|s| {
        s.creating_pods
            .as_ref()
            .is_some_and(|m| m.contains_key(key))
            || s.deleting_pods
                .as_ref()
                .is_some_and(|m| m.contains_key(key))
    })
}

/// What [`update_subset_for_pod`] decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubsetChoice {
    /// Whether the WorkloadSpread's status changed (to be written).
    pub changed: bool,
    /// The subset chosen (create) or the pod's subset (delete).
    pub subset: Option<String>,
    /// The identifier recorded for a pod created without a name.
    pub generated_uid: String,
}

/// The pod [`update_subset_for_pod`] books.
#[derive(Debug, Clone, Copy)]
pub struct PodEntry<'a> {
    /// Its version ([`pod_version`]).
    pub version: &'a str,
    /// The workload's replicas (for percentages when the statuses are initialised).
    pub replicas: i32,
    /// Its name; empty for a pod created with `generateName`.
    pub name: &'a str,
    /// Its subset (delete/eviction).
    pub subset: Option<&'a str>,
}

/// `updateSubsetForPod`: the pure bookkeeping of one pod on `ws.status` (its
/// `versionedSubsetStatuses[version]`, initialised from the subsets when absent). A pod created
/// without a name gets the identifier `new_uid` makes.
pub fn update_subset_for_pod(
    ws: &mut WorkloadSpread,
    pod: PodEntry<'_>,
    operation: Operation,
    now: Time,
    new_uid: impl FnOnce() -> String,
) -> SubsetChoice {
    let PodEntry {
        version,
        replicas,
        name: pod_name,
        subset,
    } = pod;
    let status = ws.status.get_or_insert_with(Default::default);
    let versioned = status
        .versioned_subset_statuses
        .get_or_insert_with(Default::default);
    if versioned.get(version).is_none_or(|v| v.is_empty()) {
        let init = {
            let tmp = WorkloadSpread {
                metadata: Default::default(),
                spec: ws.spec.clone(),
                status: None,
            };
            initial_statuses(&tmp, replicas)
        };
        versioned.insert(version.to_string(), init);
    }
    let statuses = versioned.get_mut(version).expect("inserted above");
    let mut choice = SubsetChoice::default();
    match operation {
        Operation::Create => {
            if !pod_name.is_empty()
                && let Some(i) = recorded(statuses, pod_name)
            {
                choice.subset = Some(statuses[i].name.clone());
                return choice;
            }
            let Some(s) = statuses
                .iter_mut()
                .find(|s| schedulable(s) && (s.missing_replicas > 0 || s.missing_replicas == -1))
            else {
                return choice;
            };
            choice.subset = Some(s.name.clone());
            if s.missing_replicas == -1 {
                return choice;
            }
            let key = if pod_name.is_empty() {
                choice.generated_uid = new_uid();
                choice.generated_uid.clone()
            } else {
                pod_name.to_string()
            };
            s.creating_pods
                .get_or_insert_with(Default::default)
                .insert(key, now);
            if s.missing_replicas > 0 {
                s.missing_replicas -= 1;
            }
            choice.changed = true;
        }
        Operation::Delete | Operation::Eviction => {
            if recorded(statuses, pod_name).is_some() {
                return choice;
            }
            let Some(s) = statuses
                .iter_mut()
                .find(|s| Some(s.name.as_str()) == subset)
            else {
                return choice;
            };
            choice.subset = Some(s.name.clone());
            if s.missing_replicas == -1 {
                return choice;
            }
            s.deleting_pods
                .get_or_insert_with(Default::default)
                .insert(pod_name.to_string(), now);
            if s.missing_replicas >= 0 {
                s.missing_replicas += 1;
            }
            choice.changed = true;
        }
    }
    choice
}

/// `getParentNameAndOrdinal`'s ordinal: the trailing `-<n>` of the pod's name, −1 without.
pub fn ordinal(name: &str) -> i64 {
    match name.rsplit_once('-') {
        Some((parent, n))
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !parent.is_empty() =>
        {
            n.parse::<i32>().map(i64::from).unwrap_or(-1)
        }
        // Go's regex `(.*)-([0-9]+)$` also matches an empty parent.
        Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            n.parse::<i32>().map(i64::from).unwrap_or(-1)
        }
        _ => -1,
    }
}

/// The StatefulSet branch of `acquireSuitableSubset`: subsets take consecutive ordinal ranges of
/// their `maxReplicas` (unlimited: the rest), skipping unschedulable ones.
pub fn statefulset_subset(ws: &WorkloadSpread, pod_name: &str) -> Option<String> {
    let ord = ordinal(pod_name);
    let statuses = ws.status.as_ref().and_then(|s| s.subset_statuses.as_ref());
    let mut threshold: i64 = 0;
    for subset in &ws.spec.subsets {
        let unschedulable = statuses
            .and_then(|ss| ss.iter().find(|s| s.name == subset.name))
            .is_some_and(|s| !schedulable(s));
        if unschedulable {
            continue;
        }
        let limit = match &subset.max_replicas {
            None => i64::from(i32::MAX),
            Some(IntOrString::Int(i)) => i64::from(*i),
            // `IntValue()` of a string: its integer parse, 0 when it is not one.
            Some(IntOrString::String(s)) => s.parse::<i64>().unwrap_or(0),
        };
        threshold += limit;
        if ord < threshold {
            return Some(subset.name.clone());
        }
    }
    None
}

/// `injectWorkloadSpreadIntoPod`: the subset's tolerations, preferred and required node terms
/// and patch applied to `pod`, and the annotation written.
///
/// # Errors
/// The patch cannot be applied (apimachinery's message), or the patched pod does not decode as
/// a pod.
pub fn inject(
    ws_name: &str,
    subset: &WorkloadSpreadSubset,
    pod: &mut Pod,
    generated_uid: &str,
) -> Result<(), String> {
    let spec = pod.spec.get_or_insert_with(Default::default);
    if let Some(t) = subset.tolerations.as_ref().filter(|t| !t.is_empty()) {
        spec.tolerations
            .get_or_insert_with(Vec::new)
            .extend(t.iter().cloned());
    }
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    if let Some(p) = subset
        .preferred_node_selector_terms
        .as_ref()
        .filter(|p| !p.is_empty())
    {
        na.preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .extend(p.iter().cloned());
    }
    if let Some(req) = &subset.required_node_selector_term {
        let sel = na
            .required_during_scheduling_ignored_during_execution
            .get_or_insert_with(NodeSelector::default);
        if sel.node_selector_terms.is_empty() {
            sel.node_selector_terms = vec![req.clone()];
        } else {
            for term in &mut sel.node_selector_terms {
                append_term(term, req);
            }
        }
    }
    if let Some(patch) = subset.patch.as_ref().filter(|p| !p.is_null()) {
        let before_class = spec.priority_class_name.clone();
        let v = serde_json::to_value(&*pod).map_err(|e| e.to_string())?;
        let v = strategic_merge_patch(&v, patch, Schema::Pod)?;
        let mut patched: Pod = serde_json::from_value(v).map_err(|e| e.to_string())?;
        if let Some(s) = patched.spec.as_mut()
            && s.priority_class_name != before_class
        {
            // The priority admission plugin runs again after the webhook.
            s.priority = None;
        }
        *pod = patched;
    }
    let inject = InjectWorkloadSpread {
        name: ws_name.to_string(),
        subset: subset.name.clone(),
        uid: generated_uid.to_string(),
    };
    pod.metadata.labels.get_or_insert_with(Default::default);
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            keys::MATCHED_WORKLOADSPREAD.to_string(),
            serde_json::to_string(&inject).map_err(|e| e.to_string())?,
        );
    Ok(())
}

fn append_term(term: &mut NodeSelectorTerm, add: &NodeSelectorTerm) {
    if let Some(e) = add.match_expressions.as_ref() {
        term.match_expressions
            .get_or_insert_with(Vec::new)
            .extend(e.iter().cloned());
    }
    if let Some(f) = add.match_fields.as_ref() {
        term.match_fields
            .get_or_insert_with(Vec::new)
            .extend(f.iter().cloned());
    }
}

// ---- state shared with the controller (OpenKruise's `GlobalCache` and `GlobalKeyedMutex`) ----

type Locks = Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

fn locks() -> &'static Locks {
    static L: std::sync::OnceLock<Locks> = std::sync::OnceLock::new();
    L.get_or_init(Default::default)
}

fn written() -> &'static Mutex<HashMap<String, Arc<WorkloadSpread>>> {
    static W: std::sync::OnceLock<Mutex<HashMap<String, Arc<WorkloadSpread>>>> =
        std::sync::OnceLock::new();
    W.get_or_init(Default::default)
}

/// The lock of WorkloadSpread `uid` (`GlobalKeyedMutex`): status writes of the webhook and the
/// controller of one process are serialised.
pub fn lock_of(uid: &str) -> Arc<tokio::sync::Mutex<()>> {
    locks()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(uid.to_string())
        .or_default()
        .clone()
}

/// Records a status this process wrote (`GlobalCache.Add`), so the next read does not start
/// from an older cached copy.
pub fn remember(ws: WorkloadSpread) {
    let key = format!(
        "{}/{}",
        ws.metadata.namespace.as_deref().unwrap_or(""),
        ws.metadata.name.as_deref().unwrap_or("")
    );
    written()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, Arc::new(ws));
}

/// Forgets a deleted WorkloadSpread (`GlobalCache.Delete`).
pub fn forget(namespace: &str, name: &str) {
    written()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&format!("{namespace}/{name}"));
}

fn rv(ws: &WorkloadSpread) -> u64 {
    ws.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The newer of `cached` and what this process last wrote (`tryToGetTheLatestMatchedWS`).
pub fn newest(cached: Arc<WorkloadSpread>) -> Arc<WorkloadSpread> {
    let key = format!(
        "{}/{}",
        cached.metadata.namespace.as_deref().unwrap_or(""),
        cached.metadata.name.as_deref().unwrap_or("")
    );
    let mine = written()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        .cloned();
    match mine {
        Some(m) if m.metadata.uid == cached.metadata.uid && rv(&m) > rv(&cached) => m,
        _ => cached,
    }
}

// ---- the webhook steps ----

/// The whitelist of the manager's `kruise-configuration` (empty when absent or unreadable, as
/// OpenKruise ignores the error).
pub async fn whitelist(lookup: &Lookup) -> Vec<CustomWorkload> {
    match lookup
        .config_map(&crate::kruise_namespace(), CONFIGURATION_NAME)
        .await
    {
        Ok(cm) => parse_whitelist(cm.as_deref()).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// `dryrun.IsDryRun` of the request's options (`CreateOptions`/`DeleteOptions.dryRun`), which is
/// what OpenKruise's handler reads (not the request's `dryRun`).
fn options_dry_run(
    options: Option<&k8s_openapi::apimachinery::pkg::runtime::RawExtension>,
) -> bool {
    options
        .and_then(|o| o.0.get("dryRun"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

fn pod_is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

fn controller_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))
}

/// `isReferenceEqual`: whether `target` names `owner` (group, kind, name) or, for an owner of a
/// known workload kind, the owner's own controller, recursively.
async fn reference_equal(
    lookup: &Lookup,
    target: &TargetReference,
    owner: &OwnerReference,
    namespace: &str,
    whitelist: &[CustomWorkload],
) -> Result<bool, LookupError> {
    let mut owner = owner.clone();
    for _ in 0..8 {
        let tg = group_of(&target.api_version).ok_or(LookupError::Other(format!(
            "unexpected GroupVersion string: {}",
            target.api_version
        )))?;
        let og = group_of(&owner.api_version).ok_or(LookupError::Other(format!(
            "unexpected GroupVersion string: {}",
            owner.api_version
        )))?;
        if tg == og && target.kind == owner.kind && target.name == owner.name {
            return Ok(true);
        }
        if !is_known_workload(&owner.api_version, &owner.kind, whitelist) {
            return Ok(false);
        }
        let meta = object_meta(lookup, &owner, namespace).await?;
        match meta.as_ref().and_then(controller_of) {
            Some(next) => owner = next.clone(),
            None => return Ok(false),
        }
    }
    Ok(false)
}

/// Why a lookup of the webhook failed.
#[derive(Debug)]
enum LookupError {
    /// The object does not exist (Go's `IsNotFound`).
    NotFound(String),
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::NotFound(m) | LookupError::Other(m) => f.write_str(m),
        }
    }
}

/// The metadata of `owner` in `namespace` (`getObjectOf`, see [`get_workload`]).
async fn object_meta(
    lookup: &Lookup,
    owner: &OwnerReference,
    namespace: &str,
) -> Result<Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>, LookupError> {
    // OpenKruise's NotFound from its client: `<Kind>.<group>` for the typed kinds
    // (`GenerateEmptyWorkloadObject`), `<plural>.<group>` for others (unstructured).
    let not_found = || {
        let group = group_of(&owner.api_version).unwrap_or("");
        let typed = BUILTIN
            .iter()
            .any(|(k, gs)| *k == owner.kind && gs.contains(&group));
        let resource = if typed {
            owner.kind.clone()
        } else {
            format!("{}s", owner.kind.to_lowercase())
        };
        let resource = match group {
            "" => resource,
            g => format!("{resource}.{g}"),
        };
        LookupError::NotFound(format!("{resource} \"{}\" not found", owner.name))
    };
    match get_workload(
        lookup,
        &owner.api_version,
        &owner.kind,
        namespace,
        &owner.name,
    )
    .await
    {
        Ok(Some(o)) => Ok(Some(o.meta().clone())),
        Ok(None) => Err(not_found()),
        Err(e) => Err(LookupError::Other(e)),
    }
}

/// A workload WorkloadSpread reads (a pod's owner, a target): the built-in and Kruise kinds from
/// the shared cache (their informers start on the first read), any other kind read live.
pub enum Workload {
    /// `apps/v1` Deployment.
    Deployment(Arc<k8s_openapi::api::apps::v1::Deployment>),
    /// `apps/v1` ReplicaSet.
    ReplicaSet(Arc<k8s_openapi::api::apps::v1::ReplicaSet>),
    /// `apps/v1` StatefulSet.
    StatefulSet(Arc<k8s_openapi::api::apps::v1::StatefulSet>),
    /// `batch/v1` Job.
    Job(Arc<k8s_openapi::api::batch::v1::Job>),
    /// CloneSet.
    CloneSet(Arc<kruise_api::apps::v1alpha1::CloneSet>),
    /// Advanced StatefulSet (either served version).
    AdvancedStatefulSet(Arc<kruise_api::apps::v1beta1::StatefulSet>),
    /// Any other kind (a whitelisted custom workload), read live.
    Dynamic(Box<DynamicObject>),
}

impl Workload {
    /// Its metadata.
    pub fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        match self {
            Workload::Deployment(o) => &o.metadata,
            Workload::ReplicaSet(o) => &o.metadata,
            Workload::StatefulSet(o) => &o.metadata,
            Workload::Job(o) => &o.metadata,
            Workload::CloneSet(o) => &o.metadata,
            Workload::AdvancedStatefulSet(o) => &o.metadata,
            Workload::Dynamic(o) => &o.metadata,
        }
    }

    /// Its JSON (for replica paths and pod templates; a copy, made only where one is read).
    pub fn to_json(&self) -> Value {
        let v = match self {
            Workload::Deployment(o) => serde_json::to_value(&**o),
            Workload::ReplicaSet(o) => serde_json::to_value(&**o),
            Workload::StatefulSet(o) => serde_json::to_value(&**o),
            Workload::Job(o) => serde_json::to_value(&**o),
            Workload::CloneSet(o) => serde_json::to_value(&**o),
            Workload::AdvancedStatefulSet(o) => serde_json::to_value(&**o),
            Workload::Dynamic(o) => serde_json::to_value(&**o),
        };
        v.unwrap_or(Value::Null)
    }
}

/// Resources found by discovery, by `group/version/kind` (kinds a whitelist names rarely
/// change; a kind not found is looked up again next time).
static DISCOVERED: std::sync::LazyLock<Mutex<HashMap<String, kube::api::ApiResource>>> =
    std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));

/// Workload `apiVersion`/`kind` `namespace/name` (OpenKruise's `getObjectOf` through its cached
/// client): Deployments, ReplicaSets, StatefulSets, Jobs, CloneSets and Advanced StatefulSets
/// from the shared cache; other kinds by a live read, their resource found once by discovery.
/// `None` when it (or its kind) does not exist, or for a fixed cluster without a client.
///
/// # Errors
/// A live read failed.
pub async fn get_workload(
    lookup: &Lookup,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Workload>, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    match (group, version, kind) {
        ("apps", "v1", "ReplicaSet") => {
            return Ok(lookup
                .replica_set(namespace, name)
                .await?
                .map(Workload::ReplicaSet));
        }
        ("apps", "v1", "Deployment") => {
            return Ok(lookup
                .get_lazy(namespace, name)
                .await?
                .map(Workload::Deployment));
        }
        ("apps", "v1", "StatefulSet") => {
            return Ok(lookup
                .get_lazy(namespace, name)
                .await?
                .map(Workload::StatefulSet));
        }
        ("batch", "v1", "Job") => {
            return Ok(lookup.get_lazy(namespace, name).await?.map(Workload::Job));
        }
        ("apps.kruise.io", "v1alpha1", "CloneSet") => {
            return Ok(lookup
                .get_lazy(namespace, name)
                .await?
                .map(Workload::CloneSet));
        }
        ("apps.kruise.io", "v1alpha1" | "v1beta1", "StatefulSet") => {
            return Ok(lookup
                .get_lazy(namespace, name)
                .await?
                .map(Workload::AdvancedStatefulSet));
        }
        _ => {}
    }
    let Some(client) = lookup.client() else {
        return Ok(None);
    };
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let key = format!("{group}/{version}/{kind}");
    let known = DISCOVERED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        .cloned();
    let ar = match known {
        Some(ar) => ar,
        None => match kube::discovery::pinned_kind(client, &gvk).await {
            Ok((ar, _)) => {
                DISCOVERED
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key, ar.clone());
                ar
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e.to_string()),
        },
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &ar);
    api.get_opt(name)
        .await
        .map(|o| o.map(|o| Workload::Dynamic(Box::new(o))))
        .map_err(|e| e.to_string())
}

/// `getWorkloadReplicas`: the target's replicas when a subset is a percentage (else 0):
/// `targetFilter.replicasPathList` summed, `spec.parallelism` of a Job, a whitelisted kind's
/// `replicasPath`, else `spec.replicas`.
async fn workload_replicas(
    lookup: &Lookup,
    ws: &WorkloadSpread,
    whitelist: &[CustomWorkload],
) -> Result<i32, String> {
    if !has_percent_subset(ws) {
        return Ok(0);
    }
    let t = &ws.spec.target_reference;
    let ns = ws.metadata.namespace.as_deref().unwrap_or("");
    let Some(obj) = get_workload(lookup, &t.api_version, &t.kind, ns, &t.name).await? else {
        return Ok(0);
    };
    Ok(replicas_of(&obj.to_json(), ws, whitelist))
}

/// The replicas of a target (as JSON) for WorkloadSpread (see `workload_replicas`).
pub fn replicas_of(data: &Value, ws: &WorkloadSpread, whitelist: &[CustomWorkload]) -> i32 {
    let t = &ws.spec.target_reference;
    if let Some(paths) = ws
        .spec
        .target_filter
        .as_ref()
        .and_then(|f| f.replicas_path_list.as_ref())
        .filter(|p| !p.is_empty())
    {
        return paths.iter().map(|p| replicas_at(data, p)).sum();
    }
    let group = group_of(&t.api_version).unwrap_or("");
    let builtin = BUILTIN
        .iter()
        .any(|(k, gs)| *k == t.kind && gs.contains(&group));
    if t.kind == "Job" && group == "batch" {
        return replicas_at(data, "spec.parallelism");
    }
    if builtin {
        return replicas_at(data, "spec.replicas");
    }
    whitelist
        .iter()
        .find(|w| w.gvk.group == group && w.gvk.kind == t.kind)
        .map(|w| replicas_at(data, &w.replicas_path))
        .unwrap_or(0)
}

/// `GetReplicasFromObject`: the integer at dotted `path` (list indexes allowed), 0 when absent.
pub fn replicas_at(data: &Value, path: &str) -> i32 {
    if path.is_empty() {
        return 0;
    }
    let mut cur = data;
    for part in path.split('.') {
        cur = match cur {
            Value::Object(m) => match m.get(part) {
                Some(v) => v,
                None => return 0,
            },
            Value::Array(a) => match part.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => v,
                None => return 0,
            },
            _ => return 0,
        };
    }
    cur.as_i64().map(|n| n as i32).unwrap_or(0)
}

/// The latest copy of WorkloadSpread `namespace/name` (`refresh`: a live read).
async fn latest(
    lookup: &Lookup,
    namespace: &str,
    name: &str,
    refresh: bool,
) -> Result<Option<Arc<WorkloadSpread>>, String> {
    if refresh && let Some(client) = lookup.client() {
        let api: Api<WorkloadSpread> = Api::namespaced(client.clone(), namespace);
        return api
            .get_opt(name)
            .await
            .map(|o| o.map(Arc::new))
            .map_err(|e| e.to_string());
    }
    Ok(lookup
        .get_lazy::<WorkloadSpread>(namespace, name)
        .await?
        .map(newest))
}

/// `acquireSuitableSubset`: the subset of `pod` and the identifier recorded for it.
async fn acquire_subset(
    lookup: &Lookup,
    ws: &WorkloadSpread,
    pod: &Pod,
    inject: Option<&InjectWorkloadSpread>,
    operation: Operation,
    whitelist: &[CustomWorkload],
) -> Result<(Option<String>, String), String> {
    if ws.spec.subsets.len() == 1 && ws.spec.subsets[0].max_replicas.is_none() {
        return Ok((Some(ws.spec.subsets[0].name.clone()), String::new()));
    }
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    if ws.spec.target_reference.kind == "StatefulSet" {
        return Ok((statefulset_subset(ws, &pod_name), String::new()));
    }
    let ns = ws.metadata.namespace.clone().unwrap_or_default();
    let name = ws.metadata.name.clone().unwrap_or_default();
    let owner_kind = controller_of(&pod.metadata).map(|o| o.kind.clone());
    let version = pod_version(owner_kind.as_deref(), pod.metadata.labels.as_ref());
    let lock = lock_of(ws.metadata.uid.as_deref().unwrap_or(&name));
    let mut refresh = false;
    let mut last_err = String::new();
    // `retry.RetryOnConflict(retry.DefaultBackoff, ...)`: 4 attempts, 10 ms growing ×5.
    let mut delay = std::time::Duration::from_millis(10);
    for attempt in 0..4 {
        if attempt > 0 {
            tokio::time::sleep(delay).await;
            delay *= 5;
        }
        let _guard = lock.lock().await;
        let Some(current) = latest(lookup, &ns, &name, refresh).await? else {
            return Ok((None, String::new()));
        };
        let mut clone = (*current).clone();
        let replicas = workload_replicas(lookup, &clone, whitelist).await?;
        let entry = PodEntry {
            version: &version,
            replicas,
            name: &pod_name,
            subset: inject.map(|i| i.subset.as_str()),
        };
        let choice = update_subset_for_pod(
            &mut clone,
            entry,
            operation,
            Time(jiff::Timestamp::now()),
            || uuid::Uuid::new_v4().to_string(),
        );
        if !choice.changed {
            return Ok((choice.subset, choice.generated_uid));
        }
        let Some(client) = lookup.client() else {
            return Ok((choice.subset, choice.generated_uid));
        };
        let api: Api<WorkloadSpread> = Api::namespaced(client.clone(), &ns);
        match api
            .replace_status(&name, &PostParams::default(), &clone)
            .await
        {
            Ok(written) => {
                remember(written);
                return Ok((choice.subset, choice.generated_uid));
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                refresh = true;
                last_err = e.message;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(last_err)
}

/// The mutating step (`workloadSpreadMutatingPod` / `HandlePodCreation`): `Ok(true)` when the
/// pod changed. Not for subresources or dry runs.
///
/// # Errors
/// A lookup or status write failed (the request is refused with code 500, as OpenKruise).
pub async fn mutate(req: &Request, ctx: &HandlerContext, pod: &mut Pod) -> Result<bool, String> {
    if req.operation != AdmissionOp::Create
        || req.sub_resource.as_deref().is_some_and(|s| !s.is_empty())
        || req.resource.resource != "pods"
        || options_dry_run(req.options.as_ref())
    {
        return Ok(false);
    }
    let Some(lookup) = &ctx.lookup else {
        return Ok(false);
    };
    if !pod_is_active(pod) {
        return Ok(false);
    }
    let Some(owner) = controller_of(&pod.metadata).cloned() else {
        return Ok(false);
    };
    let whitelist = whitelist(lookup).await;
    if !is_known_workload(&owner.api_version, &owner.kind, &whitelist) {
        tracing::debug!(kind = %owner.kind, "pod owner kind not known to WorkloadSpread");
        return Ok(false);
    }
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let spreads = lookup.list_lazy::<WorkloadSpread>(&ns).await?;
    let mut sorted: Vec<&Arc<WorkloadSpread>> = spreads.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut matched = None;
    for ws in sorted {
        if ws.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let equal =
            match reference_equal(lookup, &ws.spec.target_reference, &owner, &ns, &whitelist).await
            {
                Ok(e) => e,
                Err(LookupError::NotFound(e)) => return Err(e),
                Err(LookupError::Other(_)) => continue,
            };
        let selected =
            is_pod_selected(ws.spec.target_filter.as_ref(), pod.metadata.labels.as_ref());
        if equal && selected == Some(true) {
            matched = Some(ws.clone());
            break;
        }
    }
    let Some(ws) = matched else {
        tracing::debug!(namespace = %ns, owner = %owner.name, spreads = spreads.len(), "pod matches no WorkloadSpread");
        return Ok(false);
    };
    let (subset, uid) =
        acquire_subset(lookup, &ws, pod, None, Operation::Create, &whitelist).await?;
    tracing::debug!(namespace = %ns, owner = %owner.name, ?subset, "WorkloadSpread subset");
    let Some(subset) = subset else {
        // Changed: OpenKruise reports a matched pod as changed even without a subset.
        return Ok(true);
    };
    if let Some(s) = ws.spec.subsets.iter().find(|s| s.name == subset) {
        inject(ws.metadata.name.as_deref().unwrap_or(""), s, pod, &uid)?;
    }
    Ok(true)
}

/// The validating step (`workloadSpreadValidatingPod` / `HandlePodDeletion`): a pod DELETE or
/// eviction of a pod assigned to a subset is recorded in its WorkloadSpread's status.
///
/// # Errors
/// A decoding error, a lookup or a status write failed (refused with code 400 as OpenKruise).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Result<(), String> {
    let Some(lookup) = &ctx.lookup else {
        return Ok(());
    };
    let sub = req.sub_resource.as_deref().unwrap_or("");
    let (pod, operation): (Pod, Operation) = match req.operation {
        AdmissionOp::Delete => {
            if !sub.is_empty() {
                return Ok(());
            }
            let Some(old) = req.old_object.as_ref() else {
                return Ok(());
            };
            let pod: Pod = decode(old)?;
            if options_dry_run(req.options.as_ref()) {
                return Ok(());
            }
            (pod, Operation::Delete)
        }
        AdmissionOp::Create => {
            if sub != "eviction" {
                return Ok(());
            }
            // The Eviction's own `deleteOptions.dryRun`.
            let eviction = req
                .object
                .as_ref()
                .and_then(|o| o.data.get("deleteOptions"));
            if eviction
                .and_then(|d| d.get("dryRun"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            {
                return Ok(());
            }
            let ns = req.namespace.as_deref().unwrap_or("");
            let Some(cached) = lookup.pod(ns, &req.name).await? else {
                return Err(format!("pods \"{}\" not found", req.name));
            };
            let pod: Pod = serde_json::to_value(cached.as_ref())
                .and_then(serde_json::from_value)
                .map_err(|e| e.to_string())?;
            (pod, Operation::Eviction)
        }
        _ => return Ok(()),
    };
    let Some(inject) = injected(pod.metadata.annotations.as_ref()) else {
        return Ok(());
    };
    if !pod_is_active(&pod) || controller_of(&pod.metadata).is_none() {
        return Ok(());
    }
    let ns = pod
        .metadata
        .namespace
        .clone()
        .or_else(|| req.namespace.clone())
        .unwrap_or_default();
    let Some(ws) = lookup.get_lazy::<WorkloadSpread>(&ns, &inject.name).await? else {
        return Ok(());
    };
    let whitelist = whitelist(lookup).await;
    acquire_subset(lookup, &ws, &pod, Some(&inject), operation, &whitelist)
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws(subsets: Value) -> WorkloadSpread {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
                "subsets": subsets}
        }))
        .unwrap()
    }

    fn now() -> Time {
        Time(jiff::Timestamp::UNIX_EPOCH)
    }

    fn e<'a>(name: &'a str, subset: Option<&'a str>) -> PodEntry<'a> {
        PodEntry {
            version: VERSION_IGNORED,
            replicas: 0,
            name,
            subset,
        }
    }

    #[test]
    fn create_takes_the_first_subset_with_room_and_records_the_pod() {
        let mut w = ws(json!([{"name": "a", "maxReplicas": 1}, {"name": "b"}]));
        let c = update_subset_for_pod(&mut w, e("p1", None), Operation::Create, now(), || {
            "u".into()
        });
        assert_eq!(c.subset.as_deref(), Some("a"));
        assert!(c.changed);
        let st = &w
            .status
            .as_ref()
            .unwrap()
            .versioned_subset_statuses
            .as_ref()
            .unwrap()[VERSION_IGNORED];
        assert_eq!(st[0].missing_replicas, 0);
        assert!(st[0].creating_pods.as_ref().unwrap().contains_key("p1"));
        // Full now: the unlimited subset, no status change.
        let c = update_subset_for_pod(&mut w, e("", None), Operation::Create, now(), || {
            "u2".into()
        });
        assert_eq!(c.subset.as_deref(), Some("b"));
        assert!(!c.changed);
        assert!(c.generated_uid.is_empty());
        // Already recorded: its subset again, unchanged.
        let c = update_subset_for_pod(&mut w, e("p1", None), Operation::Create, now(), || {
            "x".into()
        });
        assert_eq!((c.subset.as_deref(), c.changed), (Some("a"), false));
    }

    #[test]
    fn a_pod_without_name_is_recorded_by_a_generated_uid() {
        let mut w = ws(json!([{"name": "a", "maxReplicas": 2}]));
        let c = update_subset_for_pod(&mut w, e("", None), Operation::Create, now(), || {
            "gen".into()
        });
        assert_eq!(c.generated_uid, "gen");
        let st = &w
            .status
            .as_ref()
            .unwrap()
            .versioned_subset_statuses
            .as_ref()
            .unwrap()[VERSION_IGNORED];
        assert!(st[0].creating_pods.as_ref().unwrap().contains_key("gen"));
        assert_eq!(st[0].missing_replicas, 1);
    }

    #[test]
    fn delete_gives_the_room_back_once() {
        let mut w = ws(json!([{"name": "a", "maxReplicas": 1}]));
        update_subset_for_pod(&mut w, e("p", None), Operation::Create, now(), String::new);
        // The controller later clears creatingPods; simulate it.
        let st = w
            .status
            .as_mut()
            .unwrap()
            .versioned_subset_statuses
            .as_mut()
            .unwrap();
        st.get_mut(VERSION_IGNORED).unwrap()[0].creating_pods = None;
        let c = update_subset_for_pod(
            &mut w,
            e("p", Some("a")),
            Operation::Delete,
            now(),
            String::new,
        );
        assert!(c.changed);
        let c = update_subset_for_pod(
            &mut w,
            e("p", Some("a")),
            Operation::Eviction,
            now(),
            String::new,
        );
        assert!(!c.changed);
        let st = &w
            .status
            .as_ref()
            .unwrap()
            .versioned_subset_statuses
            .as_ref()
            .unwrap()[VERSION_IGNORED];
        assert_eq!(st[0].missing_replicas, 1);
    }

    #[test]
    fn unschedulable_subsets_are_skipped() {
        let mut w = ws(json!([{"name": "a", "maxReplicas": 3}, {"name": "b"}]));
        w.status = Some(
            serde_json::from_value(json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "missingReplicas": 3, "replicas": 0,
             "conditions": [{"type": "Schedulable", "status": "False"}]},
            {"name": "b", "missingReplicas": -1, "replicas": 0}]}}))
            .unwrap(),
        );
        let c = update_subset_for_pod(&mut w, e("p", None), Operation::Create, now(), String::new);
        assert_eq!(c.subset.as_deref(), Some("b"));
    }

    #[test]
    fn percentages_scale_with_the_workload() {
        let w =
            ws(json!([{"name": "a", "maxReplicas": "50%"}, {"name": "b", "maxReplicas": "50%"}]));
        let st = initial_statuses(&w, 5);
        assert_eq!(st[0].missing_replicas, 3);
        assert!(has_percent_subset(&w));
    }

    #[test]
    fn statefulset_pods_follow_their_ordinal() {
        let w = ws(
            json!([{"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 1}, {"name": "c"}]),
        );
        assert_eq!(statefulset_subset(&w, "sts-0").as_deref(), Some("a"));
        assert_eq!(statefulset_subset(&w, "sts-1").as_deref(), Some("a"));
        assert_eq!(statefulset_subset(&w, "sts-2").as_deref(), Some("b"));
        assert_eq!(statefulset_subset(&w, "sts-9").as_deref(), Some("c"));
        assert_eq!(ordinal("web"), -1);
    }

    #[test]
    fn inject_applies_terms_patch_and_annotation() {
        let w = ws(json!([{"name": "a",
            "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            "tolerations": [{"key": "t", "operator": "Exists"}],
            "patch": {"metadata": {"annotations": {"subset": "a"}}}}]));
        let mut pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "x", "operator": "Exists"}]}]}}}}}))
        .unwrap();
        inject("ws", &w.spec.subsets[0], &mut pod, "").unwrap();
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["metadata"]["annotations"]["subset"], "a");
        assert_eq!(
            v["metadata"]["annotations"][keys::MATCHED_WORKLOADSPREAD],
            r#"{"name":"ws","subset":"a"}"#
        );
        let terms = &v["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"];
        assert_eq!(terms[0]["matchExpressions"].as_array().unwrap().len(), 2);
        assert_eq!(v["spec"]["tolerations"][0]["key"], "t");
    }

    #[test]
    fn whitelist_reads_go_field_names_ignoring_case() {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "kruise-configuration"},
            "data": {WHITELIST_KEY: r#"{"workloads":[{"Group":"kubeflow.org","Version":"v1","Kind":"TFJob","ReplicasPath":"spec.tfReplicaSpecs.MASTER.replicas"},{"Group":"apps.kruise.io","Version":"v1alpha1","Kind":"DaemonSet"}]}"#}})).unwrap();
        let wl = parse_whitelist(Some(&cm)).unwrap();
        assert_eq!(wl[0].replicas_path, "spec.tfReplicaSpecs.MASTER.replicas");
        assert!(is_known_workload("kubeflow.org/v1", "TFJob", &wl));
        assert!(is_known_workload("apps/v1", "ReplicaSet", &wl));
        assert!(!is_known_workload("v1", "ReplicationController", &wl));
        let tf = json!({"spec": {"tfReplicaSpecs": {"MASTER": {"replicas": 3}}}});
        assert_eq!(replicas_at(&tf, &wl[0].replicas_path), 3);
    }

    #[test]
    fn versions_follow_the_template_hash_of_deployment_pods() {
        let labels: BTreeMap<String, String> =
            [("pod-template-hash".to_string(), "abc".to_string())].into();
        assert_eq!(pod_version(Some("ReplicaSet"), Some(&labels)), "abc");
        assert_eq!(
            pod_version(Some("CloneSet"), Some(&labels)),
            VERSION_IGNORED
        );
    }
}
