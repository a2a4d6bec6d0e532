//! PodDeletionFlowControl controller (kruise-rs's `policy.kruise-rs.io/v1alpha1`,
//! `docs/pod-deletion-flow-control.md`): keeps `status.windows` (used and remaining per limit),
//! `status.summary` and `observedGeneration` current as time passes, prunes `status.admitted`
//! past the longest window, and exports `kruise_pod_deletion_flow_control_remaining`. The
//! admissions themselves are counted by the pod webhooks
//! (`kruise_webhook::pod::flowcontrol`), which write the same status bound to its
//! resourceVersion; a write of this controller on a stale copy conflicts and is retried.
//!
//! Same shape as every controller: [`setup`] (watches: the objects, from the shared cache),
//! [`reconcile`] (one pass), pure decisions in `kruise_engines::flowcontrol` ([`plan`]), status
//! written when it changed; the pass comes back when the next admitted deletion leaves a
//! window.
//!
//! The kind is kruise-rs's own: in a cluster whose CRDs are OpenKruise's only (a manager swapped
//! in without kruise-rs's chart), its CRD is absent, and the controller logs that and stays
//! idle instead of waiting for a cache that can never sync.

use std::sync::Arc;
use std::time::Duration;

use kruise_api::rspolicy::v1alpha1::{PodDeletionFlowControl, PodDeletionFlowControlStatus};
use kruise_engines::flowcontrol as engine;
use kruise_runtime::runner::{self as runtime, Context};
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use tracing::info;

use crate::scaffold;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "poddeletionflowcontrol";

/// The CRD this controller and the webhooks' flow control need.
pub const CRD: &str = "poddeletionflowcontrols.policy.kruise-rs.io";

/// State shared by all passes.
#[derive(Clone)]
pub struct State {}

/// Whether the API server serves PodDeletionFlowControls (their CRD is installed).
pub async fn served(client: &kube::Client) -> bool {
    let api: Api<PodDeletionFlowControl> = Api::all(client.clone());
    match api
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => false,
        // Anything else (RBAC, a flaky API server): assume it is there, so a misconfiguration
        // shows as an unsynced cache rather than silently switching flow control off.
        Err(_) => true,
    }
}

/// Sets the controller up and returns the future that runs it with `workers`
/// (`--poddeletionflowcontrol-workers`) once its cache has synced; idle when the CRD is not
/// installed (module docs).
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    async move {
        if !served(&ctx.client).await {
            info!(
                crd = CRD,
                "CRD not installed: pod-deletion flow control is off"
            );
            ctx.shutdown.cancelled().await;
            return Ok(());
        }
        let objects = ctx.cache.cluster_informer::<PodDeletionFlowControl>();
        let controller = scaffold::Controller::new(
            CONTROLLER_NAME,
            workers,
            runtime::Triggers::from_informer(&objects),
            vec![objects.synced()],
        );
        scaffold::run(
            ctx,
            controller,
            std::future::pending::<()>(),
            State {},
            reconcile,
        )
        .await
    }
}

/// What one pass writes and when it comes back.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The status to write (`None`: unchanged).
    pub status: Option<PodDeletionFlowControlStatus>,
    /// When to pass again (the next admitted deletion leaving a window).
    pub requeue: Option<Duration>,
    /// A spec error to report (an invalid window).
    pub invalid: Option<String>,
}

/// The pass's decision for `fc` at `now` (pure).
pub fn plan(fc: &PodDeletionFlowControl, now: jiff::Timestamp) -> Plan {
    let current = fc.status.clone().unwrap_or_default();
    let limits = match engine::limits(fc) {
        Ok(l) => l,
        Err(e) => {
            return Plan {
                status: None,
                requeue: None,
                invalid: Some(e),
            };
        }
    };
    let admitted = engine::pruned(&limits, &current.admitted, now);
    let windows = engine::windows(&limits, &admitted, now);
    let next = PodDeletionFlowControlStatus {
        observed_generation: fc.metadata.generation,
        summary: Some(engine::summary(&limits, &windows)),
        windows,
        admitted,
    };
    let requeue = engine::next_change(&limits, &next.admitted, now).map(|t| {
        let secs = t.duration_since(now).as_secs_f64().max(0.0);
        // A moment past the change, so the entry has left the window when the pass runs.
        Duration::from_secs_f64(secs) + Duration::from_millis(200)
    });
    Plan {
        status: (next != current).then_some(next),
        requeue,
        invalid: None,
    }
}

/// One pass over one object (module docs).
pub async fn reconcile(
    fc: Arc<PodDeletionFlowControl>,
    ctx: Arc<Context>,
    _state: State,
) -> Result<Action, Error> {
    if fc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = fc.metadata.name.clone().unwrap_or_default();
    let plan = plan(&fc, jiff::Timestamp::now());
    if let Some(e) = plan.invalid {
        ctx.recorder
            .warning(
                &kruise_runtime::events::object_ref(fc.as_ref()),
                "InvalidLimits",
                &e,
            )
            .await;
        return Ok(Action::await_change());
    }
    if let Some(status) = plan.status {
        let mut next = (*fc).clone();
        next.status = Some(status);
        let api: Api<PodDeletionFlowControl> = Api::all(ctx.client.clone());
        match api
            .replace_status(&name, &PostParams::default(), &next)
            .await
        {
            Ok(written) => {
                if let Some(s) = &written.status {
                    kruise_webhook::pod::flowcontrol::export_remaining(&name, s);
                }
            }
            // The webhook recorded a deletion meanwhile: the informer brings the new copy.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Action::requeue(Duration::from_millis(500)));
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    } else if let Some(s) = &fc.status {
        kruise_webhook::pod::flowcontrol::export_remaining(&name, s);
    }
    Ok(plan
        .requeue
        .map_or_else(Action::await_change, Action::requeue))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;
    use serde_json::json;

    fn fc(status: serde_json::Value) -> PodDeletionFlowControl {
        serde_json::from_value(json!({
            "apiVersion": "policy.kruise-rs.io/v1alpha1", "kind": "PodDeletionFlowControl",
            "metadata": {"name": "fc", "generation": 3},
            "spec": {"limits": [{"window": "1m", "maxDeletions": 2}, {"window": "5m", "maxDeletions": 4}]},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn plan_prunes_counts_and_comes_back_when_an_entry_leaves_a_window() {
        let now: jiff::Timestamp = "2026-11-29T05:00:00Z".parse().unwrap();
        let ago = |s: i64| (now - SignedDuration::from_secs(s)).to_string();
        let f = fc(json!({"admitted": [
            {"pod": "ns/old", "time": ago(400)},
            {"pod": "ns/a", "time": ago(100)},
            {"pod": "ns/b", "time": ago(30)},
        ]}));
        let p = plan(&f, now);
        let s = p.status.expect("a status to write");
        assert_eq!(s.observed_generation, Some(3));
        assert_eq!(s.summary.as_deref(), Some("1m:1/2 5m:2/4"));
        assert_eq!(s.admitted.len(), 2);
        assert_eq!((s.windows[0].used, s.windows[0].remaining), (1, 1));
        // ns/b leaves the minute in 30 s.
        let r = p.requeue.unwrap();
        assert!(
            r >= Duration::from_secs(30) && r < Duration::from_secs(31),
            "{r:?}"
        );
        // Written again at once: nothing changes.
        let again = fc(serde_json::to_value(&s).unwrap());
        assert_eq!(plan(&again, now).status, None);
    }

    #[test]
    fn an_invalid_window_is_reported_not_written() {
        let mut f = fc(json!({}));
        f.spec.limits[0].window = "1w".into();
        let p = plan(&f, jiff::Timestamp::now());
        assert!(p.invalid.unwrap().contains("invalid window"));
        assert_eq!(p.status, None);
    }
}
