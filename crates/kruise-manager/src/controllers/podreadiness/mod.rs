//! Pod-readiness controller (OpenKruise `pkg/controller/podreadiness`).
//!
//! The pod webhook gives pods owned by Kruise workloads (every pod with the
//! `KruisePodReadinessGate` gate) the `KruisePodReady` readiness gate. Kubernetes keeps such a
//! pod NotReady until a condition of that type is `True`, so this controller sets it: for every
//! live pod that lists the gate and has no `KruisePodReady` condition yet, it writes the
//! condition `True` (a strategic-merge patch of the status, as OpenKruise). From then on the
//! condition belongs to the writers of not-ready keys — lifecycle hooks with `markPodNotReady`
//! and ContainerRecreateRequests — which turn it `False` while a key is present and back to
//! `True` when the last key is removed ([`kruise_engines::lifecycle::readiness`]); this controller never
//! touches a pod that already has the condition.
//!
//! Shape: watches = the shared pod informer, filtered to pods that need the condition
//! ([`needs_condition`], OpenKruise's create/update predicates); [`reconcile`] = one status patch;
//! plan = [`needs_condition`] and [`condition_patch`]; no status of its own.

use kruise_api::pod::CachedPod;
use std::sync::Arc;

use kruise_api::keys;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use kruise_engines::lifecycle::readiness;
use kruise_runtime::runner::{self as runtime, Context};

/// Name of the controller in metrics, logs and `--controllers`.
pub const CONTROLLER_NAME: &str = "podreadiness";

/// Concurrent reconciles (OpenKruise: 3).
pub const WORKERS: u16 = 3;

/// Whether `pod` needs its `KruisePodReady` condition created: it is not being deleted, lists
/// the readiness gate and has no condition of that type (OpenKruise's predicates and the checks
/// at the top of its `Reconcile`).
pub fn needs_condition(pod: &CachedPod) -> bool {
    pod.meta().deletion_timestamp.is_none()
        && readiness::contains_readiness_gate(pod)
        && readiness::readiness_condition(pod).is_none()
}

/// The strategic-merge patch of the pod status that creates the condition `True` with
/// `lastTransitionTime` = `now` (RFC 3339, truncated to whole seconds, as Go's `metav1.Time`
/// serializes it).
pub fn condition_patch(now: jiff::Timestamp) -> Value {
    let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
    json!({"status": {"conditions": [{
        "type": keys::KRUISE_POD_READY,
        "status": "True",
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }]}})
}

/// Sets the controller up (its pod informer starts filling the shared cache now) and returns the
/// future that runs it; no reconcile before the pod cache has synced.
pub fn setup(
    ctx: &Arc<Context>,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    crate::scaffold::pod_controller(ctx, CONTROLLER_NAME, WORKERS, needs_condition, reconcile)
}

/// Creates the `KruisePodReady` condition of one pod if it still needs it.
///
/// # Errors
/// The API error of the status patch (retried with backoff); a pod that is gone is not an error.
pub async fn reconcile(pod: Arc<CachedPod>, ctx: Arc<Context>) -> Result<Action, kube::Error> {
    if !needs_condition(&pod) {
        return Ok(Action::await_change());
    }
    let api: Api<CachedPod> =
        Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    let patch = condition_patch(jiff::Timestamp::now());
    match api
        .patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::await_change()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> CachedPod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_gated_pods_without_the_condition_need_it() {
        let gated = json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "readinessGates": [{"conditionType": "KruisePodReady"}]}});
        assert!(needs_condition(&pod(gated.clone())));

        let mut has = gated.clone();
        has["status"] = json!({"conditions": [{"type": "KruisePodReady", "status": "False",
            "message": "[{\"userAgent\":\"Lifecycle\",\"key\":\"PreDelete\"}]"}]});
        assert!(
            !needs_condition(&pod(has)),
            "a held-not-ready pod is left alone"
        );

        let mut deleting = gated.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!needs_condition(&pod(deleting)));

        let other = json!({"metadata": {"name": "p"},
            "spec": {"containers": [], "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]}});
        assert!(!needs_condition(&pod(other)));
        assert!(!needs_condition(&pod(json!({"metadata": {"name": "p"}}))));
    }

    #[test]
    fn patch_creates_a_true_condition() {
        let now: jiff::Timestamp = "2026-11-25T07:15:04.6Z".parse().unwrap();
        assert_eq!(
            condition_patch(now),
            json!({"status": {"conditions": [{"type": "KruisePodReady", "status": "True",
                "lastTransitionTime": "2026-11-25T07:15:04Z"}]}})
        );
    }
}
