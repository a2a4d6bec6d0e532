//! The multi-writer `KruisePodReady` condition (OpenKruise `pkg/util/podreadiness`).
//!
//! Several writers (lifecycle hooks, ContainerRecreateRequest, …) can hold a pod not-ready. Each
//! puts a key `{userAgent, key}` into the condition's `message`, a JSON list sorted by
//! `(userAgent, key)`, e.g. `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`. The condition
//! is `False` while the list is non-empty and goes back to `True` when its last key is removed.
//! Only pods that list the `KruisePodReady` readiness gate are touched.
//!
//! The functions here mutate a freshly read pod and say whether its status must be written
//! (`UpdateStatus` / replace of `pods/status`, retried on conflict by re-reading the pod and
//! calling the function again).

use k8s_openapi::api::core::v1::PodCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kruise_api::keys;
use kruise_api::pod::{CachedPod, CachedPodCondition};
use serde::{Deserialize, Serialize};

use crate::podutil;
use crate::revision::go_json;

/// One not-ready key in the `KruisePodReady` message.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NotReadyMessage {
    /// Who holds the pod not-ready (e.g. `Lifecycle`).
    #[serde(rename = "userAgent", default)]
    pub user_agent: String,
    /// Why (e.g. `preDeleteHook`).
    #[serde(default)]
    pub key: String,
}

impl NotReadyMessage {
    /// A key held by `user_agent`.
    pub fn new(user_agent: &str, key: &str) -> Self {
        Self {
            user_agent: user_agent.to_owned(),
            key: key.to_owned(),
        }
    }
}

/// Parses a condition message into keys. An empty or unparsable message yields no keys (as Go,
/// which ignores the decoding error).
pub fn parse_messages(message: &str) -> Vec<NotReadyMessage> {
    if message.is_empty() {
        return Vec::new();
    }
    serde_json::from_str(message).unwrap_or_default()
}

/// Condition message for `messages`: sorted by `(userAgent, key)`, compact JSON with Go's field
/// order and escaping (`[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`), `[]` when empty.
pub fn dump_messages(messages: &mut [NotReadyMessage]) -> String {
    messages.sort();
    let mut out = String::from("[");
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"userAgent\":");
        out.push_str(&go_json::quote(&m.user_agent));
        out.push_str(",\"key\":");
        out.push_str(&go_json::quote(&m.key));
        out.push('}');
    }
    out.push(']');
    out
}

/// Whether the pod lists the `KruisePodReady` readiness gate.
pub fn contains_readiness_gate(pod: &CachedPod) -> bool {
    podutil::has_readiness_gate(pod, keys::KRUISE_POD_READY)
}

/// The pod's `KruisePodReady` condition, if any.
pub fn readiness_condition(pod: &CachedPod) -> Option<&CachedPodCondition> {
    podutil::get_condition(pod, keys::KRUISE_POD_READY)
}

fn readiness_condition_mut(pod: &mut CachedPod) -> Option<&mut CachedPodCondition> {
    pod.status
        .as_mut()?
        .conditions
        .as_mut()?
        .iter_mut()
        .find(|c| c.type_ == keys::KRUISE_POD_READY)
}

/// Whether the pod is already held not-ready by `msg`: the condition exists, is not `True`, and
/// its message lists `msg` (OpenKruise `alreadyHasKey`; a cheap pre-check on a cached pod).
pub fn already_has_key(pod: &CachedPod, msg: &NotReadyMessage) -> bool {
    let Some(c) = readiness_condition(pod) else {
        return false;
    };
    let message = c.message.as_deref().unwrap_or_default();
    if c.status == podutil::CONDITION_TRUE || message.is_empty() {
        return false;
    }
    parse_messages(message).contains(msg)
}

/// Whether [`add_not_ready_key`] would change this (cached) pod: it has the readiness gate and not
/// yet the key. When false, OpenKruise skips the status write entirely.
pub fn needs_add_not_ready_key(pod: &CachedPod, msg: &NotReadyMessage) -> bool {
    contains_readiness_gate(pod) && !already_has_key(pod, msg)
}

/// OpenKruise `AddNotReadyKey` on a freshly read pod. Without the readiness gate nothing changes.
/// Without the condition, one is appended with the message `[msg]`, transition time `now` and
/// **empty status** (as OpenKruise writes it). Otherwise, if `msg` is new, the condition becomes
/// `False` with `msg` added and transition time `now`. After a change the pod's `Ready` condition
/// is recomputed from the readiness gates ([`podutil::set_pod_ready_condition`]), taking the pod
/// out of Service endpoints at once. Returns whether the status must be written.
pub fn add_not_ready_key(pod: &mut CachedPod, msg: &NotReadyMessage, now: Timestamp) -> bool {
    if !contains_readiness_gate(pod) {
        return false;
    }
    match readiness_condition_mut(pod) {
        None => {
            let mut messages = vec![msg.clone()];
            let condition = PodCondition {
                type_: keys::KRUISE_POD_READY.to_owned(),
                status: String::new(),
                message: Some(dump_messages(&mut messages)),
                last_transition_time: Some(Time(now)),
                ..PodCondition::default()
            };
            pod.status
                .get_or_insert_with(Default::default)
                .conditions
                .get_or_insert_with(Vec::new)
                .push(condition.into());
        }
        Some(condition) => {
            let mut messages = parse_messages(condition.message.as_deref().unwrap_or_default());
            if messages.contains(msg) {
                return false;
            }
            messages.push(msg.clone());
            condition.status = podutil::CONDITION_FALSE.into();
            condition.message = Some(dump_messages(&mut messages).into());
            condition.last_transition_time = Some(Time(now));
        }
    }
    podutil::set_pod_ready_condition(pod, now);
    true
}

/// OpenKruise `RemoveNotReadyKey` on a freshly read pod. Nothing changes without the readiness
/// gate, without the condition, or when `msg` is not listed. Otherwise `msg` is removed, the
/// condition becomes `True` if no key is left (the message is then `[]`), and its transition
/// time is `now`. The `Ready` condition is left to the kubelet. Returns whether the status must
/// be written.
pub fn remove_not_ready_key(pod: &mut CachedPod, msg: &NotReadyMessage, now: Timestamp) -> bool {
    if !contains_readiness_gate(pod) {
        return false;
    }
    let Some(condition) = readiness_condition_mut(pod) else {
        return false;
    };
    let messages = parse_messages(condition.message.as_deref().unwrap_or_default());
    let before = messages.len();
    let mut kept: Vec<NotReadyMessage> = messages.into_iter().filter(|m| m != msg).collect();
    if kept.len() == before {
        return false;
    }
    if kept.is_empty() {
        condition.status = podutil::CONDITION_TRUE.into();
    }
    condition.message = Some(dump_messages(&mut kept).into());
    condition.last_transition_time = Some(Time(now));
    true
}

/// Applies a [`super::NotReadyChange`] to a freshly read pod; returns whether the status must be
/// written.
pub fn apply_not_ready_change(
    pod: &mut CachedPod,
    change: &super::NotReadyChange,
    now: Timestamp,
) -> bool {
    match change {
        super::NotReadyChange::Add(msg) => add_not_ready_key(pod, msg, now),
        super::NotReadyChange::Remove(msg) => remove_not_ready_key(pod, msg, now),
    }
}
