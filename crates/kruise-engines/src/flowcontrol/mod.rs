//! Pod-deletion flow control (kruise-rs's `PodDeletionFlowControl`, `policy.kruise-rs.io`;
//! `docs/pod-deletion-flow-control.md`) as plain functions: which deletions an object counts,
//! whether its windows have room, recording an admitted deletion, and the status a controller
//! shows. Times are [`jiff::Timestamp`]s; windows are whole seconds.
//!
//! A window is sliding: a deletion admitted at `t` counts in window `w` while `now - t < w`.
//! The log (`status.admitted`) keeps the entries younger than the longest window, oldest first.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kruise_api::rspolicy::v1alpha1::{
    AdmittedDeletion, FlowControlScope, PodDeletionFlowControl, WindowStatus,
};

/// The longest window accepted (7 days): the log it implies stays bounded by the limit.
pub const MAX_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses a window (`30s`, `1m`, `1h30m`, `1d`: integers with unit `s`, `m`, `h` or `d`, as
/// the CRD's pattern requires) with jiff's friendly duration format, days taken as 24 hours.
///
/// # Errors
/// A window that does not parse, is shorter than 1s or longer than [`MAX_WINDOW`], as text
/// naming the value.
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid window {text:?}: want e.g. 30s, 1m, 1h30m or 1d (1s to 7d)");
    if text.is_empty()
        || !text
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, 's' | 'm' | 'h' | 'd'))
    {
        return Err(bad());
    }
    let span: jiff::Span = text.parse().map_err(|_| bad())?;
    let secs = span
        .total((
            jiff::Unit::Second,
            jiff::SpanRelativeTo::days_are_24_hours(),
        ))
        .map_err(|_| bad())?;
    if !(1.0..=MAX_WINDOW.as_secs_f64()).contains(&secs) || secs.fract() != 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(secs as u64))
}

/// One limit of an object, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// The window as written in the spec (for messages and status).
    pub window_text: String,
    /// The window.
    pub window: Duration,
    /// Deletions admitted per window.
    pub max: i32,
}

/// The object's limits, parsed.
///
/// # Errors
/// The first invalid window (see [`parse_window`]) or a negative `maxDeletions`, as text.
pub fn limits(fc: &PodDeletionFlowControl) -> Result<Vec<Limit>, String> {
    fc.spec
        .limits
        .iter()
        .map(|l| {
            if l.max_deletions < 0 {
                return Err(format!(
                    "invalid maxDeletions {} for window {}: must be >= 0",
                    l.max_deletions, l.window
                ));
            }
            Ok(Limit {
                window_text: l.window.clone(),
                window: parse_window(&l.window)?,
                max: l.max_deletions,
            })
        })
        .collect()
}

/// What [`selects`] needs to know of a deletion.
#[derive(Debug, Clone, Copy)]
pub struct Deletion<'a> {
    /// The pod's labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// The apiVersion of the pod's controller owner, if it has one.
    pub controller_api_version: Option<&'a str>,
    /// The labels of the pod's namespace.
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    /// Who asks (the admission request's user).
    pub username: &'a str,
}

fn selector_matches(
    sel: Option<&LabelSelector>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    match sel {
        None => true,
        Some(s) => crate::updatesort::selector_matches(s, labels) == Some(true),
    }
}

/// Whether `fc` counts `deletion`: the pod is in scope (`KruiseWorkloads`: its controller is an
/// `apps.kruise.io` workload; `AllWorkloads`: any pod), its namespace matches
/// `namespaceSelector` and its labels `podSelector` (absent or empty selectors match
/// everything; an invalid one matches nothing), and the user is not exempt.
pub fn selects(fc: &PodDeletionFlowControl, deletion: &Deletion<'_>) -> bool {
    let in_scope = match fc.spec.scope.unwrap_or_default() {
        FlowControlScope::AllWorkloads => true,
        FlowControlScope::KruiseWorkloads => deletion
            .controller_api_version
            .is_some_and(|v| v.starts_with("apps.kruise.io/")),
    };
    let exempt = fc
        .spec
        .exempt
        .as_ref()
        .is_some_and(|e| e.usernames.iter().any(|u| u == deletion.username));
    in_scope
        && !exempt
        && selector_matches(
            fc.spec.namespace_selector.as_ref(),
            deletion.namespace_labels,
        )
        && selector_matches(fc.spec.pod_selector.as_ref(), deletion.labels)
}

fn at(t: &Time) -> Timestamp {
    t.0
}

fn counts_in(entry: &AdmittedDeletion, window: Duration, now: Timestamp) -> bool {
    let age = now.duration_since(at(&entry.time));
    age < jiff::SignedDuration::try_from(window).unwrap_or(jiff::SignedDuration::MAX)
}

/// Whether the log already holds this pod (by UID, else by `<namespace>/<name>`) in any
/// window: a repeated deletion of one pod counts once.
pub fn is_recorded(admitted: &[AdmittedDeletion], pod: &str, uid: Option<&str>) -> bool {
    admitted.iter().any(|e| match (uid, e.uid.as_deref()) {
        (Some(u), Some(v)) => u == v,
        _ => e.pod == pod,
    })
}

/// The verdict on one more deletion now: `Ok(())` when every limit has room, else the denial
/// naming the object, the window, the count and when the next deletion is allowed:
/// `pod deletion flow control <name>: 20 deletions in the last 1m (limit 20); the next is
/// allowed in 23s`.
///
/// # Errors
/// The denial, as text (also for an object whose limits are invalid).
pub fn judge(
    fc: &PodDeletionFlowControl,
    admitted: &[AdmittedDeletion],
    now: Timestamp,
) -> Result<(), String> {
    let name = fc.metadata.name.as_deref().unwrap_or("");
    let limits = limits(fc).map_err(|e| format!("pod deletion flow control {name}: {e}"))?;
    for l in &limits {
        let mut inside: Vec<Timestamp> = admitted
            .iter()
            .filter(|e| counts_in(e, l.window, now))
            .map(|e| at(&e.time))
            .collect();
        let used = i32::try_from(inside.len()).unwrap_or(i32::MAX);
        if used < l.max {
            continue;
        }
        if l.max == 0 {
            return Err(format!(
                "pod deletion flow control {name}: no deletions are allowed (limit 0 per {})",
                l.window_text
            ));
        }
        inside.sort();
        // The window has room once `used - max + 1` of its entries have left it.
        let k = usize::try_from(used - l.max).unwrap_or(0);
        let leaves = inside[k] + jiff::SignedDuration::try_from(l.window).unwrap_or_default();
        let wait = leaves.duration_since(now).as_secs().max(0) + 1;
        return Err(format!(
            "pod deletion flow control {name}: {used} deletions in the last {} (limit {}); the \
             next is allowed in {wait}s",
            l.window_text, l.max
        ));
    }
    Ok(())
}

/// The log with entries older than the longest window (as of `now`) removed, oldest first.
pub fn pruned(
    limits: &[Limit],
    admitted: &[AdmittedDeletion],
    now: Timestamp,
) -> Vec<AdmittedDeletion> {
    let longest = limits.iter().map(|l| l.window).max().unwrap_or_default();
    let mut kept: Vec<AdmittedDeletion> = admitted
        .iter()
        .filter(|e| counts_in(e, longest, now))
        .cloned()
        .collect();
    kept.sort_by_key(|e| at(&e.time));
    kept
}

/// The log after admitting one deletion of `pod` (`<namespace>/<name>`, with its UID) at
/// `now`: pruned, then the entry appended.
pub fn record(
    limits: &[Limit],
    admitted: &[AdmittedDeletion],
    pod: &str,
    uid: Option<&str>,
    now: Timestamp,
) -> Vec<AdmittedDeletion> {
    let mut log = pruned(limits, admitted, now);
    log.push(AdmittedDeletion {
        pod: pod.to_string(),
        uid: uid.map(str::to_string),
        time: Time(now),
    });
    log
}

/// Per limit: used and remaining as of `now`.
pub fn windows(
    limits: &[Limit],
    admitted: &[AdmittedDeletion],
    now: Timestamp,
) -> Vec<WindowStatus> {
    limits
        .iter()
        .map(|l| {
            let used = admitted
                .iter()
                .filter(|e| counts_in(e, l.window, now))
                .count();
            let used = i32::try_from(used).unwrap_or(i32::MAX);
            WindowStatus {
                window: l.window_text.clone(),
                used,
                remaining: (l.max - used).max(0),
            }
        })
        .collect()
}

/// `windows` in one line: `1m:7/20 1h:150/200` (used/limit).
pub fn summary(limits: &[Limit], windows: &[WindowStatus]) -> String {
    limits
        .iter()
        .zip(windows)
        .map(|(l, w)| format!("{}:{}/{}", l.window_text, w.used, l.max))
        .collect::<Vec<_>>()
        .join(" ")
}

/// When the windows next change without any new deletion: the earliest moment an entry leaves
/// a window it counts in; `None` when the log is empty.
pub fn next_change(
    limits: &[Limit],
    admitted: &[AdmittedDeletion],
    now: Timestamp,
) -> Option<Timestamp> {
    limits
        .iter()
        .flat_map(|l| {
            let w = jiff::SignedDuration::try_from(l.window).unwrap_or_default();
            admitted
                .iter()
                .filter(move |e| counts_in(e, l.window, now))
                .map(move |e| at(&e.time) + w)
        })
        .min()
}

#[cfg(test)]
mod tests;
