//! One pass over a PodUnavailableBudget (OpenKruise `syncPodUnavailableBudget`).

use std::sync::Arc;

use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;
use tracing::{debug, info};

use kruise_engines::podunavailablebudget as engine;
use kruise_engines::updatesort::selector_matches;
use kruise_runtime::events::object_ref;
use kruise_runtime::runner::Context;

use super::{Error, State};
use crate::workload::is_status;

/// How many times a status write that conflicts is retried on a fresh read (OpenKruise's
/// `ConflictRetry`: 4 steps).
const CONFLICT_ATTEMPTS: usize = 4;

/// The pass (module docs of [`super`]).
pub async fn sync(
    budget: &PodUnavailableBudget,
    ctx: &Context,
    state: &State,
) -> Result<Action, Error> {
    let (pods, expected) = covered_pods(budget, state).await?;
    let pods: Vec<&CachedPod> = pods.iter().map(Arc::as_ref).collect();
    let owner = object_ref(budget);
    if pods.is_empty() {
        ctx.recorder
            .normal(&owner, "NoPods", "No matching pods found")
            .await;
    } else {
        annotate_related(budget, &pods, ctx).await?;
    }
    debug!(pub_ = %crate::scaffold::key(budget), pods = pods.len(), expected, "covered pods");

    let mut current = budget.clone();
    let api: Api<PodUnavailableBudget> = Api::namespaced(
        ctx.client.clone(),
        budget.namespace().as_deref().unwrap_or(""),
    );
    for attempt in 1..=CONFLICT_ATTEMPTS {
        let plan = match engine::plan_status(&current, &pods, expected, jiff::Timestamp::now()) {
            Ok(p) => p,
            Err(e) => {
                ctx.recorder
                    .warning(
                        &owner,
                        "CalculateExpectedPodCountFailed",
                        &format!("Failed to calculate the number of expected pods: {e}"),
                    )
                    .await;
                return Err(Error::Other(e.to_string()));
            }
        };
        for name in &plan.not_deleted {
            if let Some(pod) = pods
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
            {
                let note = format!(
                    "Pod was expected by PUB {}/{} to be deleted but it wasn't",
                    budget.namespace().unwrap_or_default(),
                    budget.name_any()
                );
                ctx.recorder
                    .warning(&object_ref(*pod), "NotDeleted", &note)
                    .await;
            }
        }
        let requeue = plan.recheck_at.map(|at| {
            let wait = at.duration_since(jiff::Timestamp::now());
            Action::requeue(wait.try_into().unwrap_or_default())
        });
        if !plan.changed {
            return Ok(requeue.unwrap_or_else(Action::await_change));
        }
        current.status = Some(plan.status.clone());
        match api
            .replace_status(&current.name_any(), &PostParams::default(), &current)
            .await
        {
            Ok(_) => {
                info!(
                    pub_ = %crate::scaffold::key(budget),
                    desired = plan.status.desired_available,
                    current = plan.status.current_available,
                    allowed = plan.status.unavailable_allowed,
                    total = plan.status.total_replicas,
                    "status updated"
                );
                return Ok(requeue.unwrap_or_else(Action::await_change));
            }
            Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                current = api.get(&budget.name_any()).await?;
            }
            Err(e) if is_status(&e, 404) => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Action::await_change())
}

/// `GetPodsForPub`: the covered active pods and the number of pods expected (see the module
/// docs of [`super`]). A budget with neither `targetRef` nor a valid selector covers nothing.
async fn covered_pods(
    budget: &PodUnavailableBudget,
    state: &State,
) -> Result<(Vec<Arc<CachedPod>>, i32), Error> {
    let ns = budget.namespace().unwrap_or_default();
    let total_override = budget
        .annotations()
        .get(keys::PUB_PROTECT_TOTAL_REPLICAS)
        .filter(|v| !v.is_empty())
        // Go's `strconv.ParseInt(value, 10, 32)` with the error ignored: 0 when unparsable.
        .map(|v| v.parse::<i32>().unwrap_or(0));
    let finder_error = |e: crate::workload::finder::FinderError| Error::Other(e.to_string());
    if let Some(r) = &budget.spec.target_reference {
        let (pods, expected) = state
            .finder
            .pods_for_ref(
                &state.pods,
                r.api_version.as_deref().unwrap_or(""),
                r.kind.as_deref().unwrap_or(""),
                &ns,
                r.name.as_deref().unwrap_or(""),
                true,
            )
            .await
            .map_err(finder_error)?;
        return Ok((pods, total_override.unwrap_or(expected)));
    }
    let Some(selector) = &budget.spec.selector else {
        info!(pub_ = %crate::scaffold::key(budget), "spec.selector could not be empty");
        return Ok((Vec::new(), 0));
    };
    let mut pods = Vec::new();
    for p in state.pods.in_namespace(&ns) {
        match selector_matches(selector, p.metadata.labels.as_ref()) {
            None => {
                info!(pub_ = %crate::scaffold::key(budget), "invalid selector");
                return Ok((Vec::new(), 0));
            }
            Some(true) if kruise_engines::podutil::is_active(&p) => pods.push(p),
            Some(_) => {}
        }
    }
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let expected = match total_override {
        Some(n) => n,
        None => {
            let refs: Vec<&CachedPod> = pods.iter().map(Arc::as_ref).collect();
            state
                .finder
                .expected_scale_for_pods(&refs)
                .await
                .map_err(finder_error)?
        }
    };
    Ok((pods, expected))
}

/// `patchRelatedPubAnnotationInPod`: `kruise.io/related-pub: <budget>` on every covered pod
/// that has no such annotation yet (a strategic-merge patch, as OpenKruise).
async fn annotate_related(
    budget: &PodUnavailableBudget,
    pods: &[&CachedPod],
    ctx: &Context,
) -> Result<(), Error> {
    let name = budget.name_any();
    let patch = json!({"metadata": {"annotations": {keys::PUB_RELATED: name}}});
    for pod in pods {
        let has = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(keys::PUB_RELATED))
            .is_some_and(|v| !v.is_empty());
        if has {
            continue;
        }
        let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(
            ctx.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or(""),
        );
        match api
            .patch(
                pod.metadata.name.as_deref().unwrap_or(""),
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
