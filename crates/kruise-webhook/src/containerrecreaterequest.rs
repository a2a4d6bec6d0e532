//! ContainerRecreateRequest admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/containerrecreaterequest/mutating` (`ContainerRecreateRequestHandler.Handle`), one
//! mutating webhook that both checks and defaults:
//!
//! - with gate `KruiseDaemon` off every request is refused (403, no daemon would act on it);
//! - **update**: the spec, the labels `crr.apps.kruise.io/pod-uid` and `…/node-name`, and the
//!   annotation `crr.apps.kruise.io/unready-acquired` once set are immutable (403);
//! - **create**: `podName` and `containers` are required, `activeDeadlineSeconds` ≥ 3,
//!   `terminationGracePeriodSeconds` and `unreadyGracePeriodSeconds` ≥ 0, `failurePolicy` `Fail`
//!   (the default) or `Ignore` (400); the pod must exist, be active (or its sidecars be stopped by
//!   the SidecarTerminator: condition `SidecarTerminated`) and be scheduled, its node must
//!   exist; then the request gets the labels `…/active`, `…/node-name`, `…/pod-uid` (and the
//!   virtual-kubelet `type` label), the pod's grace period, and per container the pod's
//!   `preStop` (with the container's `ports` for an `httpGet` handler) and `statusContext`
//!   (`kruise_api::defaults::containerrecreaterequest`).
//!
//! The pod and the node are read from the shared cache ([`crate::lookup::Lookup`]), never listed.

use kruise_api::apps::v1alpha1::{
    ContainerRecreateRequest, container_recreate_request_failure_policy,
};
use kruise_api::defaults::containerrecreaterequest::{
    inject_pod_into_containerrecreaterequest, set_defaults_containerrecreaterequest,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::revision::go_json::GoType;
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;

use crate::support::{
    CODE_BAD_REQUEST, CODE_FORBIDDEN, CODE_INTERNAL, allow, decode_workload_object,
    decode_workload_old_object, errored, patch_from_raw, patch_response,
};
use crate::{HandlerContext, Request, Response};

/// The smallest `activeDeadlineSeconds` accepted (OpenKruise's `minDeadlineSeconds`).
pub const MIN_DEADLINE_SECONDS: i64 = 3;

/// Pod condition the SidecarTerminator sets on a completed pod whose sidecars it stops
/// (OpenKruise `sidecarterminator.SidecarTerminated`): such a pod may still get requests.
pub const SIDECAR_TERMINATED: &str = "SidecarTerminated";

/// `/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest` (see the module documentation).
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    if !ctx.gates.enabled(Feature::KruiseDaemon) {
        return errored(
            req,
            CODE_FORBIDDEN,
            "feature-gate KruiseDaemon is not enabled",
        );
    }
    let obj: ContainerRecreateRequest = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    match req.operation {
        Operation::Update => {
            let old: ContainerRecreateRequest = match decode_workload_old_object(req) {
                Ok(Some(o)) => o,
                Ok(None) => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
                Err(e) => return errored(req, CODE_BAD_REQUEST, e),
            };
            match check_update(&obj, &old) {
                Ok(()) => allow(req),
                Err(msg) => errored(req, CODE_FORBIDDEN, msg),
            }
        }
        Operation::Create => create(req, ctx, obj).await,
        _ => allow(req),
    }
}

/// The update rules: what a request may not change once created.
///
/// # Errors
/// The denial message.
pub fn check_update(
    obj: &ContainerRecreateRequest,
    old: &ContainerRecreateRequest,
) -> Result<(), String> {
    if obj.spec != old.spec {
        return Err("spec of ContainerRecreateRequest is immutable".into());
    }
    let label = |o: &ContainerRecreateRequest, k: &str| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(k))
            .cloned()
            .unwrap_or_default()
    };
    for key in [keys::CRR_POD_UID, keys::CRR_NODE_NAME] {
        if label(obj, key) != label(old, key) {
            return Err(format!("not allowed to update immutable label {key}"));
        }
    }
    let annotation = |o: &ContainerRecreateRequest| {
        o.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::CRR_UNREADY_ACQUIRED))
            .cloned()
            .unwrap_or_default()
    };
    let was = annotation(old);
    if !was.is_empty() && annotation(obj) != was {
        return Err(format!(
            "not allowed to update immutable annotation {}",
            keys::CRR_UNREADY_ACQUIRED
        ));
    }
    Ok(())
}

/// The create checks that need no other object, in OpenKruise's order.
///
/// # Errors
/// The denial message (answered with 400).
pub fn check_create(obj: &ContainerRecreateRequest) -> Result<(), String> {
    let spec = &obj.spec;
    if spec.pod_name.is_empty() {
        return Err("podName can not be empty".into());
    }
    if spec.containers.is_empty() {
        return Err("containers list can not be null".into());
    }
    if spec
        .active_deadline_seconds
        .is_some_and(|d| d < MIN_DEADLINE_SECONDS)
    {
        return Err(format!(
            "activeDeadlineSeconds can not be less than {MIN_DEADLINE_SECONDS}s"
        ));
    }
    let strategy = spec.strategy.as_ref();
    if strategy
        .and_then(|s| s.termination_grace_period_seconds)
        .is_some_and(|s| s < 0)
    {
        return Err("terminationGracePeriodSeconds must be non-negative integer".into());
    }
    if strategy
        .and_then(|s| s.unready_grace_period_seconds)
        .is_some_and(|s| s < 0)
    {
        return Err("unreadyGracePeriodSeconds must be non-negative integer".into());
    }
    match strategy
        .and_then(|s| s.failure_policy.as_deref())
        .unwrap_or("")
    {
        ""
        | container_recreate_request_failure_policy::FAIL
        | container_recreate_request_failure_policy::IGNORE => Ok(()),
        other => Err(format!("unknown failurePolicy {other}")),
    }
}

/// Whether a pod is active (`IsPodActive`: not Succeeded, not Failed, not being deleted) or
/// had its sidecars stopped by the SidecarTerminator.
fn may_recreate_in(pod: &CachedPod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
    let active =
        phase != "Succeeded" && phase != "Failed" && pod.metadata.deletion_timestamp.is_none();
    active
        || status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == SIDECAR_TERMINATED))
}

async fn create(
    req: &Request,
    ctx: &HandlerContext,
    mut obj: ContainerRecreateRequest,
) -> Response {
    if let Err(msg) = check_create(&obj) {
        return errored(req, CODE_BAD_REQUEST, msg);
    }
    set_defaults_containerrecreaterequest(&mut obj);
    let Some(lookup) = ctx.lookup.as_ref() else {
        return errored(req, CODE_INTERNAL, "no object lookup configured");
    };
    // The object's namespace, as OpenKruise reads it (the API server always sets it).
    let namespace = obj.metadata.namespace.clone().unwrap_or_default();
    let pod = match lookup.pod(&namespace, &obj.spec.pod_name).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return errored(
                req,
                CODE_BAD_REQUEST,
                format!("no found Pod named {}", obj.spec.pod_name),
            );
        }
        Err(e) => {
            return errored(
                req,
                CODE_INTERNAL,
                format!("failed to find Pod {}: {e}", obj.spec.pod_name),
            );
        }
    };
    if !may_recreate_in(&pod) {
        return errored(
            req,
            CODE_BAD_REQUEST,
            "not allowed to recreate containers in an inactive Pod",
        );
    }
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    if node_name.is_empty() {
        return errored(
            req,
            CODE_BAD_REQUEST,
            "not allowed to recreate containers in a pending Pod",
        );
    }
    let node = match lookup.node(&node_name).await {
        Ok(Some(n)) => n,
        Ok(None) => {
            return errored(
                req,
                CODE_BAD_REQUEST,
                // controller-runtime's cache names the kind in its NotFound error.
                format!("failed to get Node {node_name}: Node \"{node_name}\" not found"),
            );
        }
        Err(e) => {
            return errored(
                req,
                CODE_INTERNAL,
                format!("failed to get Node {node_name}: {e}"),
            );
        }
    };
    if let Err(e) = inject_pod_into_containerrecreaterequest(&mut obj, &pod, Some(&node)) {
        return errored(req, CODE_BAD_REQUEST, e.to_string());
    }
    patch_response(
        req,
        patch_from_raw(req, &obj, GoType::ContainerRecreateRequest),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1alpha1::{
        ContainerRecreateRequestContainer, ContainerRecreateRequestSpec,
        ContainerRecreateRequestStrategy,
    };
    use std::collections::BTreeMap;

    fn crr() -> ContainerRecreateRequest {
        ContainerRecreateRequest::new(
            "r",
            ContainerRecreateRequestSpec {
                pod_name: "p".into(),
                containers: vec![ContainerRecreateRequestContainer {
                    name: "app".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
    }

    #[test]
    fn create_checks_follow_openkruise_order_and_words() {
        assert_eq!(check_create(&crr()), Ok(()));
        let mut c = crr();
        c.spec.pod_name.clear();
        c.spec.containers.clear();
        assert_eq!(check_create(&c).unwrap_err(), "podName can not be empty");
        c.spec.pod_name = "p".into();
        assert_eq!(
            check_create(&c).unwrap_err(),
            "containers list can not be null"
        );
        let mut c = crr();
        c.spec.active_deadline_seconds = Some(2);
        assert_eq!(
            check_create(&c).unwrap_err(),
            "activeDeadlineSeconds can not be less than 3s"
        );
        c.spec.active_deadline_seconds = Some(3);
        c.spec.strategy = Some(ContainerRecreateRequestStrategy {
            termination_grace_period_seconds: Some(-1),
            unready_grace_period_seconds: Some(-1),
            failure_policy: Some("Never".into()),
            ..Default::default()
        });
        assert_eq!(
            check_create(&c).unwrap_err(),
            "terminationGracePeriodSeconds must be non-negative integer"
        );
        c.spec
            .strategy
            .as_mut()
            .unwrap()
            .termination_grace_period_seconds = Some(0);
        assert_eq!(
            check_create(&c).unwrap_err(),
            "unreadyGracePeriodSeconds must be non-negative integer"
        );
        c.spec
            .strategy
            .as_mut()
            .unwrap()
            .unready_grace_period_seconds = Some(0);
        assert_eq!(check_create(&c).unwrap_err(), "unknown failurePolicy Never");
        c.spec.strategy.as_mut().unwrap().failure_policy = Some("Ignore".into());
        assert_eq!(check_create(&c), Ok(()));
    }

    #[test]
    fn update_keeps_spec_identity_labels_and_the_unready_stamp() {
        let mut old = crr();
        old.metadata.labels = Some(BTreeMap::from([
            (keys::CRR_POD_UID.to_string(), "u".to_string()),
            (keys::CRR_NODE_NAME.to_string(), "n".to_string()),
            (keys::CRR_ACTIVE.to_string(), "true".to_string()),
        ]));
        let mut new = old.clone();
        new.metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(keys::CRR_ACTIVE);
        assert_eq!(check_update(&new, &old), Ok(()), "the active label may go");
        new.spec.active_deadline_seconds = Some(9);
        assert_eq!(
            check_update(&new, &old).unwrap_err(),
            "spec of ContainerRecreateRequest is immutable"
        );
        let mut new = old.clone();
        new.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(keys::CRR_NODE_NAME.into(), "m".into());
        assert_eq!(
            check_update(&new, &old).unwrap_err(),
            "not allowed to update immutable label crr.apps.kruise.io/node-name"
        );
        let mut new = old.clone();
        new.metadata.annotations = Some(BTreeMap::from([(
            keys::CRR_UNREADY_ACQUIRED.to_string(),
            "t1".to_string(),
        )]));
        assert_eq!(check_update(&new, &old), Ok(()), "set once");
        let mut old2 = new.clone();
        old2.metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(keys::CRR_UNREADY_ACQUIRED.into(), "t0".into());
        assert_eq!(
            check_update(&new, &old2).unwrap_err(),
            "not allowed to update immutable annotation crr.apps.kruise.io/unready-acquired"
        );
    }

    #[test]
    fn a_completed_pod_takes_requests_only_after_the_sidecar_terminator() {
        let mut pod: CachedPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "status": {"phase": "Succeeded"}}))
        .unwrap();
        assert!(!may_recreate_in(&pod));
        pod.status.as_mut().unwrap().conditions = Some(vec![
            serde_json::from_value(
                serde_json::json!({"type": "SidecarTerminated", "status": "True"}),
            )
            .unwrap(),
        ]);
        assert!(may_recreate_in(&pod));
        let running: CachedPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "status": {"phase": "Running"}}))
        .unwrap();
        assert!(may_recreate_in(&running));
    }
}
