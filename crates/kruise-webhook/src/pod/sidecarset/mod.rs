//! The SidecarSet step of `/mutate-pod` (OpenKruise v1.9.0 `sidecarsetMutatingPod` and
//! `getSuitableRevisionSidecarSet`): which SidecarSets match a pod being created, which revision
//! of each is injected, then [`kruise_engines::sidecarset::inject::inject`].
//!
//! What the step reads (SidecarSets, the pod's namespace, SidecarSet revisions) comes in a
//! [`SidecarSetView`] the handler fills from the shared cache, so this module is pure.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_engines::podutil;
use kruise_engines::sidecarset::resources::go_quote;
use kruise_engines::sidecarset::{control, hash, inject, revision};
use kruise_engines::updatesort::selector_matches;

/// Label every namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// What the SidecarSet step reads.
#[derive(Debug, Clone, Default)]
pub struct SidecarSetView {
    /// Every SidecarSet (v1beta1).
    pub sidecarsets: Vec<Arc<SidecarSet>>,
    /// Labels of the pod's namespace; `None` when the namespace cannot be read (a SidecarSet
    /// with a `namespaceSelector` then does not match, as OpenKruise's failed `Get`).
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// ControllerRevisions of the manager's namespace (SidecarSet revisions among them).
    pub revisions: Vec<Arc<ControllerRevision>>,
}

/// OpenKruise's field index of SidecarSets by namespace (`IndexSidecarSetV1Beta1`): the
/// namespace(s) a `namespaceSelector` pins by `kubernetes.io/metadata.name` (`matchLabels`,
/// else an `In` expression), else `None` (cluster scope).
fn index_namespaces(s: &SidecarSet) -> Option<Vec<String>> {
    let sel = s.spec.namespace_selector.as_ref()?;
    if let Some(v) = sel
        .match_labels
        .as_ref()
        .and_then(|m| m.get(NAMESPACE_NAME_LABEL))
    {
        return Some(vec![v.clone()]);
    }
    sel.match_expressions
        .iter()
        .flatten()
        .find(|e| e.key == NAMESPACE_NAME_LABEL && e.operator == "In")
        .map(|e| e.values.clone().unwrap_or_default())
}

fn is_empty_selector(sel: &LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

/// The error OpenKruise's `util.ValidatedLabelSelectorAsSelector` gives for a selector: its
/// only check is the operator of each `matchExpressions` entry.
fn selector_error(sel: &LabelSelector) -> Option<String> {
    sel.match_expressions
        .iter()
        .flatten()
        .find(|e| {
            !matches!(
                e.operator.as_str(),
                "In" | "NotIn" | "Exists" | "DoesNotExist"
            )
        })
        .map(|e| {
            format!(
                "{} is not a valid pod selector operator",
                go_quote(&e.operator)
            )
        })
}

/// OpenKruise `PodMatchedSidecarSet`: the namespace's labels match `namespaceSelector` (when
/// set), and the non-empty `selector` matches the pod's labels.
///
/// # Errors
/// An invalid `selector` (Go's text: an unknown operator).
pub fn pod_matches(
    pod: &Pod,
    s: &SidecarSet,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, String> {
    if let Some(ns_sel) = &s.spec.namespace_selector {
        let Some(labels) = namespace_labels else {
            return Ok(false);
        };
        if selector_matches(ns_sel, Some(labels)) != Some(true) {
            return Ok(false);
        }
    }
    let Some(sel) = s.spec.selector.as_ref() else {
        return Ok(false);
    };
    if let Some(e) = selector_error(sel) {
        return Err(e);
    }
    Ok(
        !is_empty_selector(sel)
            && selector_matches(sel, pod.metadata.labels.as_ref()) == Some(true),
    )
}

/// The SidecarSets OpenKruise lists for a pod, in its order: those pinned to the pod's
/// namespace (field index `namespace`), then cluster-scoped ones; by name within each (the
/// cache lists an index entry in no particular order).
fn candidates(pod: &Pod, view: &SidecarSetView) -> Vec<Arc<SidecarSet>> {
    let ns = pod
        .metadata
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let mut pinned = Vec::new();
    let mut cluster = Vec::new();
    for s in &view.sidecarsets {
        match index_namespaces(s) {
            Some(list) if list.iter().any(|n| n == ns) => pinned.push(s.clone()),
            Some(_) => {}
            None => cluster.push(s.clone()),
        }
    }
    pinned.sort_by(|a, b| control::name(a).cmp(control::name(b)));
    cluster.sort_by(|a, b| control::name(a).cmp(control::name(b)));
    pinned.append(&mut cluster);
    pinned
}

fn injection_paused(s: &SidecarSet) -> bool {
    s.spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.paused)
        .unwrap_or(false)
}

/// The SidecarSets matching a pod being created, in OpenKruise's order ([`candidates`]),
/// paused injections skipped.
///
/// # Errors
/// An invalid selector of a candidate SidecarSet.
pub fn matching_sidecarsets(
    pod: &Pod,
    view: &SidecarSetView,
) -> Result<Vec<Arc<SidecarSet>>, String> {
    let mut out = Vec::new();
    for s in candidates(pod, view) {
        if !injection_paused(&s) && pod_matches(pod, &s, view.namespace_labels.as_ref())? {
            out.push(s);
        }
    }
    Ok(out)
}

/// OpenKruise `getSuitableRevisionSidecarSet` for a create: the SidecarSet itself, or, when
/// `injectionStrategy.revision` pins a revision (by name or custom version), that revision —
/// always while the update is paused or with policy `Always`; with `Partial`, for pods outside
/// `updateStrategy.selector`, and otherwise with the probability the `partition` percentage
/// gives (`draw` gives a uniform number in [0, 1), called once when the partition is a
/// percentage, as Go's `rand.Float64()`). Borrowed when it is the SidecarSet itself (no copy of
/// the cached object per admission).
///
/// # Errors
/// The pinned revision does not exist (Go's NotFound texts), or cannot be restored; under the
/// Partial policy, an invalid `updateStrategy.selector` or a partition that is not a number.
pub fn suitable_revision<'a>(
    s: &'a SidecarSet,
    pod: &Pod,
    revisions: &[Arc<ControllerRevision>],
    draw: &mut dyn FnMut() -> f64,
) -> Result<Cow<'a, SidecarSet>, String> {
    let Some(pin) = s
        .spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.revision.as_ref())
        .filter(|p| p.revision_name.is_some() || p.custom_version.is_some())
    else {
        return Ok(Cow::Borrowed(s));
    };
    let mut mine: Vec<&ControllerRevision> = revisions
        .iter()
        .map(|r| r.as_ref())
        .filter(|r| revision::is_revision_of(r, s))
        .collect();
    kruise_engines::revision::sort_revisions(&mut mine);
    let by_name = |n: &str| {
        revisions
            .iter()
            .map(|r| r.as_ref())
            .find(|r| r.metadata.name.as_deref() == Some(n))
    };
    let found = revision::pinned_revision(
        s,
        by_name,
        &mine,
        pin.revision_name.as_deref(),
        pin.custom_version.as_deref(),
    )?;
    let history = match found {
        Some(r) => Cow::Owned(revision::restore(s, r, hash::hashes_v1beta1)?),
        None => Cow::Borrowed(s),
    };
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    if strategy.paused == Some(true) {
        return Ok(history);
    }
    if pin.policy.as_deref() == Some("Partial") {
        if let Some(sel) = &strategy.selector {
            if let Some(e) = selector_error(sel) {
                return Err(e);
            }
            if selector_matches(sel, pod.metadata.labels.as_ref()) != Some(true) {
                return Ok(history);
            }
        }
        return select_randomly(history, Cow::Borrowed(s), strategy.partition.as_ref(), draw);
    }
    Ok(history)
}

/// OpenKruise `selectRevisionRandomly`: the old revision with the probability of the
/// `partition` percentage; an integer or no partition always picks the new one.
fn select_randomly<'a>(
    old: Cow<'a, SidecarSet>,
    new: Cow<'a, SidecarSet>,
    partition: Option<&IntOrString>,
    draw: &mut dyn FnMut() -> f64,
) -> Result<Cow<'a, SidecarSet>, String> {
    let Some(IntOrString::String(p)) = partition else {
        return Ok(new);
    };
    let number = p
        .strip_suffix('%')
        .ok_or_else(|| "invalid type: string is not a percentage".to_string())?;
    let parsed = number.parse::<f64>().map_err(|_| {
        format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            go_quote(number)
        )
    })?;
    // Go refuses a finite number too large for a float64 (a long run of digits passes the
    // SidecarSet webhook's `^[0-9]+%$`); only a spelled-out infinity is infinite.
    let spelled_inf = number
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    if parsed.is_infinite() && !spelled_inf {
        return Err(format!(
            "strconv.ParseFloat: parsing {}: value out of range",
            go_quote(number)
        ));
    }
    let probability = parsed / 100.0;
    Ok(if draw() <= probability { old } else { new })
}

/// The SidecarSet step on a pod being created: `Ok(true)` when nothing was injected or patched
/// (OpenKruise's `skip`). Each candidate SidecarSet is matched and resolved to its revision in
/// turn, as OpenKruise does, so the first failing one gives the error.
///
/// # Errors
/// The text of the 500 answer OpenKruise gives: an invalid selector, a missing pinned
/// revision, an injection error.
pub fn mutate(
    pod: &mut Pod,
    view: &SidecarSetView,
    opts: inject::InjectOptions,
    draw: &mut dyn FnMut() -> f64,
) -> Result<bool, String> {
    // Upstream `controller.IsPodActive` on the admission request's (full) pod.
    let terminal = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| matches!(p, podutil::PHASE_SUCCEEDED | podutil::PHASE_FAILED));
    if terminal || pod.metadata.deletion_timestamp.is_some() {
        return Ok(true);
    }
    let candidates = candidates(pod, view);
    let mut resolved = Vec::new();
    for s in &candidates {
        if injection_paused(s) || !pod_matches(pod, s, view.namespace_labels.as_ref())? {
            continue;
        }
        resolved.push(suitable_revision(s, pod, &view.revisions, draw)?);
    }
    if resolved.is_empty() {
        return Ok(true);
    }
    inject::inject(pod, &resolved, opts).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
