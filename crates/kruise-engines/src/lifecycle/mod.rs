//! Pod lifecycle hooks (OpenKruise `pkg/util/lifecycle` and the lifecycle decisions of the
//! CloneSet controller), as pure functions.
//!
//! A pod's state is the label [`keys::LIFECYCLE_STATE`] (see [`LifecycleState`]); every state
//! change also stamps [`keys::LIFECYCLE_TIMESTAMP`] (RFC 3339, UTC, seconds). A hook
//! ([`LifecycleHook`]) holds a pod while it carries the hook's labels or finalizers
//! ([`is_hooked`] / [`is_all_hooked`]). With `markPodNotReady`, entering `PreparingDelete` or
//! `PreparingUpdate` adds a not-ready key to the pod's `KruisePodReady` condition and reaching
//! `Updated` removes it again ([`not_ready_change`], applied with [`readiness`]).
//!
//! To change a state the way OpenKruise's `UpdatePodLifecycle` does, call
//! [`plan_state_change`] (or [`plan_state_change_with_handler`]) and then, in this order,
//! apply its `readiness` change to the pod status (re-reading the pod, retrying on conflict;
//! see [`readiness::add_not_ready_key`]) and send its `patch` as a strategic merge patch.

use std::collections::BTreeMap;

use k8s_openapi::Metadata;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kruise_api::apps::common::{Lifecycle, LifecycleHook};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use serde_json::{Map, Value, json};

pub mod readiness;

pub use readiness::NotReadyMessage;

/// Lifecycle states (values of the [`keys::LIFECYCLE_STATE`] label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LifecycleState {
    /// Created, waiting to become `Normal` (scheduled, or the preNormal hook fully applied).
    PreparingNormal,
    /// Serving normally.
    Normal,
    /// Waiting for the inPlaceUpdate hook to be released before an in-place update.
    PreparingUpdate,
    /// Being updated in place.
    Updating,
    /// Updated in place, waiting for the inPlaceUpdate hook to be applied again.
    Updated,
    /// Waiting for the preDelete hook to be released before deletion.
    PreparingDelete,
}

impl LifecycleState {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        use keys::lifecycle_state as s;
        match self {
            LifecycleState::PreparingNormal => s::PREPARING_NORMAL,
            LifecycleState::Normal => s::NORMAL,
            LifecycleState::PreparingUpdate => s::PREPARING_UPDATE,
            LifecycleState::Updating => s::UPDATING,
            LifecycleState::Updated => s::UPDATED,
            LifecycleState::PreparingDelete => s::PREPARING_DELETE,
        }
    }

    /// The state named by a label value (exact, case-sensitive), `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        use keys::lifecycle_state as s;
        Some(match value {
            s::PREPARING_NORMAL => LifecycleState::PreparingNormal,
            s::NORMAL => LifecycleState::Normal,
            s::PREPARING_UPDATE => LifecycleState::PreparingUpdate,
            s::UPDATING => LifecycleState::Updating,
            s::UPDATED => LifecycleState::Updated,
            s::PREPARING_DELETE => LifecycleState::PreparingDelete,
            _ => return None,
        })
    }
}

impl AsRef<str> for LifecycleState {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for LifecycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Raw value of the pod's state label, `""` when absent (OpenKruise `GetPodLifecycleState`).
pub fn state_label(pod: &CachedPod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::LIFECYCLE_STATE))
        .map_or("", String::as_str)
}

/// The pod's lifecycle state; `None` when the label is absent **or** holds an unknown value
/// (use [`state_label`] to tell them apart).
pub fn pod_state(pod: &CachedPod) -> Option<LifecycleState> {
    LifecycleState::parse(state_label(pod))
}

/// Whether the pod's state label is absent/empty or `Normal` (the condition OpenKruise's CloneSet
/// puts on "available" and "update ready").
pub fn is_normal_or_unset(pod: &CachedPod) -> bool {
    matches!(state_label(pod), "" | keys::lifecycle_state::NORMAL)
}

fn has_finalizer(pod: &CachedPod, finalizer: &str) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

fn label_value<'a>(pod: &'a CachedPod, key: &str) -> &'a str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

/// OpenKruise `IsPodHooked`: the pod carries **any** of the hook's finalizers, or **any** of its
/// labels with the given value (an absent label reads as `""`, so a handler label with an empty
/// value matches a pod without that label). A workload without the hook: [`is_hooked_opt`].
pub fn is_hooked(hook: &LifecycleHook, pod: &CachedPod) -> bool {
    hook.finalizers_handler
        .iter()
        .flatten()
        .any(|f| has_finalizer(pod, f))
        || hook
            .labels_handler
            .iter()
            .flatten()
            .any(|(k, v)| label_value(pod, k) == v)
}

/// OpenKruise `IsPodHooked` with an optional hook: `false` without a hook.
pub fn is_hooked_opt(hook: Option<&LifecycleHook>, pod: &CachedPod) -> bool {
    hook.is_some_and(|h| is_hooked(h, pod))
}

/// OpenKruise `IsPodAllHooked`: the pod carries **all** of the hook's finalizers and labels
/// (absent label = `""`); `true` for a hook with no handlers. A workload without the hook:
/// [`is_all_hooked_opt`].
pub fn is_all_hooked(hook: &LifecycleHook, pod: &CachedPod) -> bool {
    hook.finalizers_handler
        .iter()
        .flatten()
        .all(|f| has_finalizer(pod, f))
        && hook
            .labels_handler
            .iter()
            .flatten()
            .all(|(k, v)| label_value(pod, k) == v)
}

/// OpenKruise `IsPodAllHooked` with an optional hook: **`false` without a hook** (so, e.g., a
/// CloneSet with a lifecycle but no inPlaceUpdate hook still passes through `Updated`).
pub fn is_all_hooked_opt(hook: Option<&LifecycleHook>, pod: &CachedPod) -> bool {
    hook.is_some_and(|h| is_all_hooked(h, pod))
}

/// Whether the hook asks to mark pods not-ready (`markPodNotReady`, default false).
pub fn is_hook_mark_pod_not_ready(hook: Option<&LifecycleHook>) -> bool {
    hook.and_then(|h| h.mark_pod_not_ready).unwrap_or(false)
}

/// OpenKruise `IsLifecycleMarkPodNotReady`: the preDelete or inPlaceUpdate hook marks pods
/// not-ready. CloneSet then never moves a `PreparingDelete` pod back to `PreparingNormal`.
pub fn is_lifecycle_mark_pod_not_ready(lifecycle: Option<&Lifecycle>) -> bool {
    lifecycle.is_some_and(|l| {
        is_hook_mark_pod_not_ready(l.pre_delete.as_ref())
            || is_hook_mark_pod_not_ready(l.in_place_update.as_ref())
    })
}

// ---------------------------------------------------------------------------------------------
// State changes

/// [`keys::LIFECYCLE_TIMESTAMP`] value for `now`: RFC 3339 in UTC with whole seconds
/// (`2024-05-06T07:08:09Z`), like Go's `time.Now().Format(time.RFC3339)` in a UTC process.
pub fn format_timestamp(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Strategic-merge (and JSON-merge compatible) patch setting the state label and timestamp:
/// `{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":…},"annotations":{"lifecycle.apps.kruise.io/timestamp":…}}}`.
pub fn label_patch(state: impl AsRef<str>, now: Timestamp) -> Value {
    json!({
        "metadata": {
            "labels": {keys::LIFECYCLE_STATE: state.as_ref()},
            "annotations": {keys::LIFECYCLE_TIMESTAMP: format_timestamp(now)},
        }
    })
}

/// The pod patch of OpenKruise `UpdatePodLifecycle(pod, new_state, markPodNotReady)`: always
/// [`label_patch`] (OpenKruise skips the call when the pod is already in `new_state`; see
/// [`plan_state_change`], which also says so).
///
/// `mark_not_ready` cannot be expressed in this patch: the `KruisePodReady` change lives in the
/// pod **status** and must be written first, through `pods/status`, with
/// [`readiness::apply_not_ready_change`] on [`not_ready_change`]`(new_state, mark_not_ready)` —
/// [`plan_state_change`] returns both parts. The parameter is kept so that the two calls read
/// alike.
pub fn state_patch(
    pod: &CachedPod,
    new_state: impl AsRef<str>,
    now: Timestamp,
    mark_not_ready: bool,
) -> Value {
    let _ = (pod, mark_not_ready);
    label_patch(new_state, now)
}

/// Strategic merge patch of OpenKruise `UpdatePodLifecycleWithHandler`: [`label_patch`] plus the
/// hook's handler labels and a `finalizers` list with its handler finalizers (merged into the
/// existing finalizers by the strategic merge; the list is present even when empty).
pub fn state_patch_with_handler(
    state: LifecycleState,
    now: Timestamp,
    hook: &LifecycleHook,
) -> Value {
    let mut labels = Map::new();
    for (k, v) in hook.labels_handler.iter().flatten() {
        labels.insert(k.clone(), Value::String(v.clone()));
    }
    labels.insert(
        keys::LIFECYCLE_STATE.to_owned(),
        Value::String(state.as_str().to_owned()),
    );
    let finalizers: Vec<Value> = hook
        .finalizers_handler
        .iter()
        .flatten()
        .map(|f| Value::String(f.clone()))
        .collect();
    json!({
        "metadata": {
            "labels": labels,
            "annotations": {keys::LIFECYCLE_TIMESTAMP: format_timestamp(now)},
            "finalizers": finalizers,
        }
    })
}

/// Sets the state label and timestamp on a pod object in place (OpenKruise `SetPodLifecycle`,
/// used on pods about to be created and inside in-place update writes).
pub fn set_pod_lifecycle(
    pod: &mut impl Metadata<Ty = ObjectMeta>,
    state: LifecycleState,
    now: Timestamp,
) {
    let meta = pod.metadata_mut();
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(keys::LIFECYCLE_STATE.to_owned(), state.as_str().to_owned());
    meta.annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(keys::LIFECYCLE_TIMESTAMP.to_owned(), format_timestamp(now));
}

/// Change to the `KruisePodReady` not-ready keys that goes with a state change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotReadyChange {
    /// Add the key (see [`readiness::add_not_ready_key`]).
    Add(NotReadyMessage),
    /// Remove the key (see [`readiness::remove_not_ready_key`]).
    Remove(NotReadyMessage),
}

/// `userAgent` of the lifecycle not-ready keys.
pub const NOT_READY_USER_AGENT: &str = "Lifecycle";
/// Not-ready key while a pod is `PreparingDelete`.
pub const PRE_DELETE_HOOK_KEY: &str = "preDeleteHook";
/// Not-ready key while a pod is `PreparingUpdate` (removed at `Updated`).
pub const PRE_UPDATE_HOOK_KEY: &str = "preUpdateHook";

fn lifecycle_message(key: &str) -> NotReadyMessage {
    NotReadyMessage {
        user_agent: NOT_READY_USER_AGENT.to_owned(),
        key: key.to_owned(),
    }
}

/// OpenKruise's markPodNotReady policy for entering `state`: `PreparingDelete` adds
/// `{Lifecycle, preDeleteHook}`, `PreparingUpdate` adds `{Lifecycle, preUpdateHook}`, `Updated`
/// removes `{Lifecycle, preUpdateHook}`; nothing otherwise or when `mark_not_ready` is false.
pub fn not_ready_change(state: LifecycleState, mark_not_ready: bool) -> Option<NotReadyChange> {
    if !mark_not_ready {
        return None;
    }
    match state {
        LifecycleState::PreparingDelete => {
            Some(NotReadyChange::Add(lifecycle_message(PRE_DELETE_HOOK_KEY)))
        }
        LifecycleState::PreparingUpdate => {
            Some(NotReadyChange::Add(lifecycle_message(PRE_UPDATE_HOOK_KEY)))
        }
        LifecycleState::Updated => Some(NotReadyChange::Remove(lifecycle_message(
            PRE_UPDATE_HOOK_KEY,
        ))),
        _ => None,
    }
}

/// What OpenKruise's `UpdatePodLifecycle` does for one pod, as data.
#[derive(Clone, Debug, PartialEq)]
pub struct StateChange {
    /// Readiness change to apply first (even when the state does not change).
    pub readiness: Option<NotReadyChange>,
    /// Strategic merge patch for the pod; `None` when the pod is already in the state (then the
    /// call reports "not updated").
    pub patch: Option<Value>,
}

impl StateChange {
    /// Whether the pod object itself gets patched (OpenKruise's `updated` result).
    pub fn updates_pod(&self) -> bool {
        self.patch.is_some()
    }
}

/// Plan of OpenKruise `UpdatePodLifecycle(pod, state, markPodNotReady)`: the readiness change of
/// [`not_ready_change`] and, unless the pod is already in `state`, a [`label_patch`].
pub fn plan_state_change(
    pod: &CachedPod,
    state: LifecycleState,
    mark_not_ready: bool,
    now: Timestamp,
) -> StateChange {
    StateChange {
        readiness: not_ready_change(state, mark_not_ready),
        patch: (state_label(pod) != state.as_str()).then(|| label_patch(state, now)),
    }
}

/// Plan of OpenKruise `UpdatePodLifecycleWithHandler(pod, state, hook)` (used to move an
/// `Updated` pod back to `PreparingUpdate` and re-apply the inPlaceUpdate hook): nothing without a
/// hook; otherwise the readiness change of the hook's `markPodNotReady` and, unless the pod is
/// already in `state`, a [`state_patch_with_handler`].
pub fn plan_state_change_with_handler(
    pod: &CachedPod,
    state: LifecycleState,
    hook: Option<&LifecycleHook>,
    now: Timestamp,
) -> StateChange {
    let Some(hook) = hook else {
        return StateChange {
            readiness: None,
            patch: None,
        };
    };
    StateChange {
        readiness: not_ready_change(state, is_hook_mark_pod_not_ready(Some(hook))),
        patch: (state_label(pod) != state.as_str())
            .then(|| state_patch_with_handler(state, now, hook)),
    }
}

/// Folds a planned [`StateChange`] into a `pods/status` strategic merge patch (e.g.
/// `InPlaceUpdateReady=True` from the in-place engine's refresh), so that both land in one
/// request: the `pods/status` endpoint writes `metadata.labels` and `metadata.annotations` too
/// (only spec, ownerReferences and deletionTimestamp are kept from the stored pod). Only a plain
/// state change folds: no `KruisePodReady` readiness change (that one re-reads and replaces the
/// status) and a patch of labels/annotations only (a handler patch adds finalizers, which the
/// status endpoint also writes, but OpenKruise re-applies them through the pod itself).
/// Returns whether the change was folded; if not, `status_patch` is untouched and the change
/// must be applied on its own.
///
/// OpenKruise's CloneSet `refreshPodState` sends the two writes back to back in the same call
/// (`inplaceControl.Refresh`, then `UpdatePodLifecycle`); the end state is the same, reached
/// atomically.
pub fn fold_into_status_patch(status_patch: &mut Value, change: &StateChange) -> bool {
    if change.readiness.is_some() {
        return false;
    }
    let Some(Value::Object(patch)) = &change.patch else {
        return false;
    };
    let Some(Value::Object(meta)) = patch.get("metadata") else {
        return false;
    };
    if patch.len() != 1
        || meta
            .iter()
            .any(|(k, v)| (k != "labels" && k != "annotations") || !v.is_object())
    {
        return false;
    }
    let Some(target) = status_patch.as_object_mut() else {
        return false;
    };
    let mergeable = match target.get("metadata") {
        None => true,
        Some(Value::Object(m)) => meta
            .keys()
            .all(|field| m.get(field).is_none_or(Value::is_object)),
        Some(_) => false,
    };
    if !mergeable {
        return false;
    }
    let target_meta = target
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("checked: an object");
    for (field, values) in meta {
        let entry = target_meta
            .entry(field.clone())
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("checked: an object");
        for (k, v) in values.as_object().expect("checked: an object") {
            entry.insert(k.clone(), v.clone());
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// CloneSet decisions

/// `PreparingNormal → Normal`: without a preNormal hook once the pod is scheduled (has a
/// `spec.nodeName`; moving earlier trips old kube-schedulers), with one once the pod is
/// [`is_all_hooked`] by it (OpenKruise CloneSet `refreshPodState`).
pub fn should_transition_pre_normal_to_normal(
    lifecycle: Option<&Lifecycle>,
    pod: &CachedPod,
) -> bool {
    match lifecycle.and_then(|l| l.pre_normal.as_ref()) {
        None => pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty()),
        Some(hook) => is_all_hooked(hook, pod),
    }
}

/// State an in-place update ends in: `Updated` when the workload has a lifecycle and the pod is
/// not [`is_all_hooked`] by the inPlaceUpdate hook (note: a lifecycle **without** an inPlaceUpdate
/// hook also yields `Updated`, as in OpenKruise; the next refresh then moves it to `Normal`),
/// otherwise `Normal`.
pub fn state_after_update(lifecycle: Option<&Lifecycle>, pod: &CachedPod) -> LifecycleState {
    match lifecycle {
        Some(l) if !is_all_hooked_opt(l.in_place_update.as_ref(), pod) => LifecycleState::Updated,
        _ => LifecycleState::Normal,
    }
}

/// The state OpenKruise CloneSet's `refreshPodState` moves a pod to, if any:
/// - `PreparingNormal` → `Normal` per [`should_transition_pre_normal_to_normal`];
/// - `PreparingUpdate` → [`state_after_update`] if the pod is already on `update_revision`
///   (the update was rolled back while the pod waited for its hook);
/// - `Updating` → [`state_after_update`] once `update_completed` (the in-place update check
///   passed);
/// - `Updated` → `Normal` without a lifecycle or inPlaceUpdate hook, or once the pod is
///   [`is_all_hooked`] again.
///
/// Apply it with [`plan_state_change`] and `mark_not_ready` = the inPlaceUpdate hook's
/// `markPodNotReady` ([`refresh_mark_not_ready`]).
pub fn refresh_target_state(
    lifecycle: Option<&Lifecycle>,
    pod: &CachedPod,
    update_revision: &str,
    update_completed: bool,
) -> Option<LifecycleState> {
    match pod_state(pod)? {
        LifecycleState::PreparingNormal => {
            should_transition_pre_normal_to_normal(lifecycle, pod).then_some(LifecycleState::Normal)
        }
        LifecycleState::PreparingUpdate => {
            crate::revision::equal_to_revision_hash(pod.metadata.labels.as_ref(), update_revision)
                .then(|| state_after_update(lifecycle, pod))
        }
        LifecycleState::Updating => update_completed.then(|| state_after_update(lifecycle, pod)),
        LifecycleState::Updated => {
            let hook = lifecycle.and_then(|l| l.in_place_update.as_ref());
            (hook.is_none() || is_all_hooked_opt(hook, pod)).then_some(LifecycleState::Normal)
        }
        LifecycleState::Normal | LifecycleState::PreparingDelete => None,
    }
}

/// `markPodNotReady` used by CloneSet when refreshing states: the inPlaceUpdate hook's.
pub fn refresh_mark_not_ready(lifecycle: Option<&Lifecycle>) -> bool {
    is_hook_mark_pod_not_ready(lifecycle.and_then(|l| l.in_place_update.as_ref()))
}

/// What CloneSet does with the lifecycle before updating a pod in place (OpenKruise
/// `updatePod`, once the in-place update is possible).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InPlaceUpdateGate {
    /// Move the pod to `PreparingUpdate` ([`plan_state_change`] with `mark_not_ready`) and stop
    /// here for this round: state unset/`PreparingNormal`/`Normal` and the pod is
    /// [`is_hooked`] by the inPlaceUpdate hook.
    ToPreparingUpdate {
        /// The inPlaceUpdate hook's `markPodNotReady`.
        mark_not_ready: bool,
    },
    /// Move an `Updated` pod to `PreparingUpdate` re-applying the hook's labels and finalizers
    /// ([`plan_state_change_with_handler`] with the inPlaceUpdate hook), and stop here.
    ToPreparingUpdateWithHandler,
    /// `PreparingUpdate` and still hooked: wait for the hook to be released.
    Wait,
    /// Go on with the in-place update, setting the state to `Updating` with the update.
    Update,
    /// State that does not allow an in-place update (`PreparingDelete`, or an unknown label
    /// value): OpenKruise reports an error.
    NotAllowed(String),
}

/// Decision of [`InPlaceUpdateGate`] for a pod.
pub fn in_place_update_gate(lifecycle: Option<&Lifecycle>, pod: &CachedPod) -> InPlaceUpdateGate {
    let hook = lifecycle.and_then(|l| l.in_place_update.as_ref());
    let label = state_label(pod);
    match LifecycleState::parse(label) {
        None if label.is_empty() => pre_update_gate(hook, pod),
        Some(LifecycleState::PreparingNormal | LifecycleState::Normal) => {
            pre_update_gate(hook, pod)
        }
        Some(LifecycleState::Updated) => InPlaceUpdateGate::ToPreparingUpdateWithHandler,
        Some(LifecycleState::PreparingUpdate) if is_hooked_opt(hook, pod) => {
            InPlaceUpdateGate::Wait
        }
        Some(LifecycleState::PreparingUpdate | LifecycleState::Updating) => {
            InPlaceUpdateGate::Update
        }
        Some(LifecycleState::PreparingDelete) | None => {
            InPlaceUpdateGate::NotAllowed(label.to_owned())
        }
    }
}

fn pre_update_gate(hook: Option<&LifecycleHook>, pod: &CachedPod) -> InPlaceUpdateGate {
    if is_hooked_opt(hook, pod) {
        InPlaceUpdateGate::ToPreparingUpdate {
            mark_not_ready: is_hook_mark_pod_not_ready(hook),
        }
    } else {
        InPlaceUpdateGate::Update
    }
}

/// Scale-in of a pod: `Some(mark_not_ready)` when the pod is [`is_hooked`] by the preDelete hook,
/// meaning "move it to `PreparingDelete` ([`plan_state_change`]) instead of deleting it";
/// `None` means delete it (OpenKruise CloneSet `deletePods`).
pub fn pre_delete_hooked(lifecycle: Option<&Lifecycle>, pod: &CachedPod) -> Option<bool> {
    let hook = lifecycle.and_then(|l| l.pre_delete.as_ref());
    is_hooked_opt(hook, pod).then(|| is_hook_mark_pod_not_ready(hook))
}

#[cfg(test)]
mod tests;
