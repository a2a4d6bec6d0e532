//! One pass of the SidecarSet controller (OpenKruise `Processor.UpdateSidecarSet`).

use kruise_api::pod::CachedPod;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use kruise_api::apps::v1beta1::SidecarSet;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;

use kruise_engines::revision as rev;
use kruise_engines::sidecarset::{control, revision, upgrade};
use kruise_engines::updatesort::selector_matches;
use kruise_runtime::events::object_ref;
use kruise_runtime::runner::Context;

use super::{Error, State};
use crate::workload::{history, is_status};

/// How many times a write that conflicts is retried on a fresh read (client-go's
/// `retry.DefaultBackoff` makes 4 attempts).
const CONFLICT_ATTEMPTS: usize = 4;

/// The SidecarSet's matched pods (OpenKruise `getMatchingPods`): selected by `selector` in the
/// namespaces `namespaceSelector` selects (all without one), active, injected by this
/// SidecarSet and holding all its containers. Sorted by namespace and name.
pub fn matching_pods(s: &SidecarSet, state: &State) -> Result<Vec<Arc<CachedPod>>, Error> {
    let Some(selector) = s.spec.selector.as_ref() else {
        return Ok(Vec::new());
    };
    let namespaces: Option<BTreeSet<String>> = s.spec.namespace_selector.as_ref().map(|ns_sel| {
        state
            .namespaces
            .store()
            .state()
            .iter()
            .filter(|n| selector_matches(ns_sel, n.metadata.labels.as_ref()) == Some(true))
            .filter_map(|n| n.metadata.name.clone())
            .collect()
    });
    let candidates: Vec<Arc<CachedPod>> = match &namespaces {
        None => state.pods.store().state(),
        Some(nss) => nss
            .iter()
            .flat_map(|ns| state.pods.in_namespace(ns))
            .collect(),
    };
    if selector_matches(selector, None).is_none() {
        return Err(Error::Other(format!(
            "SidecarSet {} has an invalid selector",
            s.name_any()
        )));
    }
    let mut pods: Vec<Arc<CachedPod>> = candidates
        .into_iter()
        .filter(|p| selector_matches(selector, p.metadata.labels.as_ref()) == Some(true))
        .filter(|p| {
            kruise_engines::podutil::is_active(p)
                && control::is_pod_injected(p.as_ref(), s)
                && control::is_pod_consistent_with_sidecarset(p, s)
        })
        .collect();
    pods.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    Ok(pods)
}

/// One pass (see the module documentation of the controller).
pub async fn sync(s: &SidecarSet, ctx: &Context, state: &State) -> Result<Action, Error> {
    let name = s.name_any();
    let pods = matching_pods(s, state)?;
    let refs: Vec<&CachedPod> = pods.iter().map(|p| p.as_ref()).collect();

    let (latest, collision) = register_latest_revision(s, ctx, state, &refs).await?;
    let window = super::repair::current_pause_window(s, jiff::Timestamp::now());
    let (uninjected, replacing) = super::repair::run(s, ctx, state, &state.repair, window).await?;
    let mut status = upgrade::calculate_status(s, &refs);
    status.latest_revision = latest.metadata.name.clone();
    status.collision_count = Some(collision);
    status.uninjected_pods = (uninjected > 0).then_some(uninjected as i32);
    let time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    status.injection_paused_time = window.0.map(time);
    status.injection_resumed_time = window.1.map(time);
    // Uninjected pods being replaced: look again once their workloads have moved on.
    let after = if replacing {
        Action::requeue(Duration::from_secs(5))
    } else {
        Action::await_change()
    };
    update_status(s, ctx, &status).await?;
    let mut s = s.clone();
    s.status = Some(status.clone());

    let hash = control::sidecarset_revision(&s).to_string();
    for pod in &refs {
        let on = control::pod_sidecarset_revision(*pod, &name) == hash;
        state
            .updates
            .observe_updated(&name, &hash, &pod.metadata, on);
        // Satisfied (and then forgotten) only by the pod this sync read.
        let (ok, _) = state.resource_versions.is_satisfied_object(&pod.metadata);
        if !ok {
            tracing::debug!(sidecarset = %name, pod = %pod.name_any(), "pod update in flight");
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
    }
    let (all, _, inflight) = state.updates.satisfied(&name, &hash);
    if !all {
        tracing::debug!(sidecarset = %name, ?inflight, "sidecar updates in flight");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let strategy = s.spec.update_strategy.clone().unwrap_or_default();
    if strategy.type_.as_deref() == Some("NotUpdate") || strategy.paused == Some(true) {
        return Ok(after);
    }
    if upgrade::has_hot_upgrade(&s) {
        let flips: Vec<&CachedPod> = refs
            .iter()
            .copied()
            .filter(|p| upgrade::needs_hot_upgrade_flip(&s, p))
            .collect();
        if !flips.is_empty() {
            for pod in flips {
                flip_pod(&s, ctx, state, pod).await?;
            }
            return Ok(after);
        }
    }
    if status.updated_pods >= status.matched_pods {
        return Ok(after);
    }
    update_pods(&s, ctx, state, &refs).await?;
    Ok(after)
}

/// OpenKruise `registerLatestRevision`: the revision of the current spec found (an older equal
/// one moved to the head) or created, the custom version label kept current, history truncated.
async fn register_latest_revision(
    s: &SidecarSet,
    ctx: &Context,
    state: &State,
    pods: &[&CachedPod],
) -> Result<(ControllerRevision, i32), Error> {
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &state.kruise_namespace);
    let mut revisions: Vec<Arc<ControllerRevision>> = state
        .revisions
        .in_namespace(&state.kruise_namespace)
        .into_iter()
        .filter(|r| revision::is_revision_of(r, s))
        .collect();
    rev::sort_revisions(&mut revisions);
    let collision = s
        .status
        .as_ref()
        .and_then(|st| st.collision_count)
        .unwrap_or(0);
    let next = rev::next_revision(&revisions);
    let ns = state.kruise_namespace.clone();
    let (mut latest, collision) = history::ensure_revision(&api, &revisions, collision, |c| {
        revision::new_revision(s, &ns, next, c)
    })
    .await?;
    if let Some(cv) = s.spec.custom_version.as_deref().filter(|v| !v.is_empty()) {
        let have = latest
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(kruise_api::keys::SIDECARSET_CUSTOM_VERSION));
        if have.map(String::as_str) != Some(cv) {
            latest = api
                .patch(
                    &latest.name_any(),
                    &PatchParams::default(),
                    &Patch::Strategic(json!({"metadata": {"labels": {
                        kruise_api::keys::SIDECARSET_CUSTOM_VERSION: cv}}})),
                )
                .await?;
        }
    }
    // The history as it is now: the cached revisions with `latest` in its place.
    let latest_name = latest.name_any();
    let mut all: Vec<ControllerRevision> = revisions
        .iter()
        .filter(|r| r.name_any() != latest_name)
        .map(|r| (**r).clone())
        .collect();
    all.push(latest.clone());
    rev::sort_revisions(&mut all);
    let sorted: Vec<&ControllerRevision> = all.iter().collect();
    let active = revision::active_revisions(s, pods.iter().copied(), &sorted);
    let (doomed, met) = revision::history_to_truncate(s, &sorted, &active);
    if let Err(e) = history::truncate(&api, &doomed).await {
        tracing::error!(sidecarset = %s.name_any(), error = %e, "failed to truncate history");
    } else if !met {
        tracing::error!(
            sidecarset = %s.name_any(),
            "failed to limit the number of stored revisions: every older revision is in use"
        );
    }
    Ok((latest, collision))
}

/// Writes the status when it changed (OpenKruise `updateSidecarSetStatus`), conflicts retried
/// on a fresh read.
async fn update_status(
    s: &SidecarSet,
    ctx: &Context,
    status: &kruise_api::apps::v1beta1::SidecarSetStatus,
) -> Result<(), Error> {
    if !upgrade::status_changed(s.status.as_ref(), status) {
        return Ok(());
    }
    let api: Api<SidecarSet> = Api::all(ctx.client.clone());
    let mut current = s.clone();
    for attempt in 1..=CONFLICT_ATTEMPTS {
        let mut st = status.clone();
        st.observed_generation = current.metadata.generation;
        current.status = Some(st);
        match api
            .replace_status(&current.name_any(), &PostParams::default(), &current)
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                current = api.get(&s.name_any()).await?;
            }
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// OpenKruise `updatePods`: marks the pods that cannot be upgraded in place, then upgrades the
/// next batch.
async fn update_pods(
    s: &SidecarSet,
    ctx: &Context,
    state: &State,
    pods: &[&CachedPod],
) -> Result<(), Error> {
    let name = s.name_any();
    let next = upgrade::next_upgrade_pods(s, pods);
    for &i in &next.not_upgradable {
        set_upgradable_condition(ctx, &name, pods[i], false).await?;
    }
    if !next.not_upgradable.is_empty() {
        ctx.recorder
            .normal(
                &object_ref(s),
                "NotUpgradablePods",
                &format!(
                    "SidecarSet in-place update detected {} not upgradable pod(s) in this round, will skip them.",
                    next.not_upgradable.len()
                ),
            )
            .await;
    }
    let hash = control::sidecarset_revision(s).to_string();
    for &i in &next.upgrade {
        let pod = pods[i];
        upgrade_pod(s, ctx, state, pod).await?;
        state.updates.expect_updated(&name, &hash, &pod.metadata);
    }
    if !next.upgrade.is_empty() {
        let names: Vec<String> = next.upgrade.iter().map(|&i| pods[i].name_any()).collect();
        tracing::info!(sidecarset = %name, pods = %names.join(","), "updated sidecars in place");
    }
    Ok(())
}

/// OpenKruise `updatePodSidecarAndHash`: on a fresh read of the pod, the sidecar images and
/// hash annotations moved to the SidecarSet's, the injected list filled in when missing, the
/// pod metadata patched; written as a JSON patch bound to the read's resourceVersion
/// (`workload::update_pod`), conflicts retried; then `SidecarSetUpgradable` True.
async fn upgrade_pod(
    s: &SidecarSet,
    ctx: &Context,
    state: &State,
    pod: &CachedPod,
) -> Result<(), Error> {
    let ns = pod.namespace().unwrap_or_default();
    let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &ns);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let Some(base) = api.get_opt(&pod.name_any()).await? else {
            return Ok(());
        };
        let mut fresh = base.clone();
        upgrade::upgrade_pod(s, &mut fresh, jiff::Timestamp::now());
        let listed = fresh
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(kruise_api::keys::SIDECARSET_INJECTED_LIST))
            .is_some_and(|v| !v.is_empty());
        if !listed {
            let names = matched_sidecarset_names(&fresh, state);
            fresh
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(
                    kruise_api::keys::SIDECARSET_INJECTED_LIST.to_string(),
                    names,
                );
        }
        let patches = s.spec.patch_pod_metadata.clone().unwrap_or_default();
        control::patch_pod_metadata(&mut fresh, &patches)
            .map_err(|e| Error::Other(e.to_string()))?;
        match crate::workload::update_pod(&api, &base, &fresh).await {
            Ok(updated) => {
                state.resource_versions.expect_object(&updated.metadata);
                break;
            }
            Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
    set_upgradable_condition(ctx, &s.name_any(), pod, true).await
}

/// Names of the SidecarSets matching the pod, comma-separated (OpenKruise
/// `listMatchedSidecarSets`).
fn matched_sidecarset_names(pod: &CachedPod, state: &State) -> String {
    let ns = pod.namespace().unwrap_or_default();
    let ns_labels = state
        .namespaces
        .store()
        .get(&kube::runtime::reflector::ObjectRef::new(&ns))
        .and_then(|n| n.metadata.labels.clone());
    let mut names: Vec<String> = state
        .sidecarsets
        .store()
        .state()
        .iter()
        .filter(|s| {
            let ns_ok = match &s.spec.namespace_selector {
                None => true,
                Some(sel) => selector_matches(sel, ns_labels.as_ref()) == Some(true),
            };
            let sel = s.spec.selector.as_ref();
            ns_ok
                && sel.is_some_and(|sel| {
                    !is_empty_selector(sel)
                        && selector_matches(sel, pod.metadata.labels.as_ref()) == Some(true)
                })
        })
        .map(|s| s.name_any())
        .collect();
    names.sort();
    names.join(",")
}

fn is_empty_selector(sel: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector) -> bool {
    sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty())
}

/// OpenKruise `updatePodSidecarSetUpgradableCondition`: a strategic-merge patch of the pod
/// status when the condition changes.
async fn set_upgradable_condition(
    ctx: &Context,
    sidecarset: &str,
    pod: &CachedPod,
    upgradable: bool,
) -> Result<(), Error> {
    let Some(cond) =
        upgrade::upgradable_condition(pod, sidecarset, upgradable, jiff::Timestamp::now())
    else {
        return Ok(());
    };
    let api: Api<CachedPod> =
        Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    let patch = json!({"status": {"conditions": [cond]}});
    match api
        .patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// OpenKruise `flipPodSidecarContainer`: the old containers of finished hot upgrades reset to
/// the empty image, with Events on the pod.
async fn flip_pod(
    s: &SidecarSet,
    ctx: &Context,
    state: &State,
    pod: &CachedPod,
) -> Result<(), Error> {
    let api: Api<CachedPod> =
        Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    let mut base = pod.clone();
    let mut attempt = 0;
    let result = loop {
        attempt += 1;
        let mut current = base.clone();
        upgrade::flip_hot_upgrade(s, &mut current, jiff::Timestamp::now());
        match crate::workload::update_pod(&api, &base, &current).await {
            Ok(updated) => {
                state.resource_versions.expect_object(&updated.metadata);
                break Ok(());
            }
            Err(e) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                match api.get_opt(&pod.name_any()).await? {
                    Some(p) => base = p,
                    None => break Ok(()),
                }
            }
            Err(e) => break Err(e),
        }
    };
    let r = object_ref(pod);
    match result {
        Ok(()) => {
            ctx.recorder
                .normal(
                    &r,
                    "ResetContainerSucceed",
                    "reset sidecar container image empty successfully",
                )
                .await;
            Ok(())
        }
        Err(e) => {
            ctx.recorder
                .warning(
                    &r,
                    "ResetContainerFailed",
                    &format!("reset sidecar container image empty failed: {e}"),
                )
                .await;
            Err(e.into())
        }
    }
}
