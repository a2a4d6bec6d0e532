//! Pods a SidecarSet selects that run without its sidecars (kruise-rs extension, not in
//! OpenKruise): created while the pod webhook did not answer and its failure policy let the
//! create through (`--webhook-failure-policy mpod.kb.io=Ignore`), or created before the
//! SidecarSet existed. OpenKruise leaves them silently wrong; kruise-rs reports them —
//! `status.uninjectedPods`, a `SidecarNotInjected` Warning Event on each pod (once) and on the
//! SidecarSet (when the count changes), the gauge `kruise_sidecarset_uninjected_pods` — and,
//! when the SidecarSet opts in with the annotation [`RECREATE_ANNOTATION`]`: "true"`, replaces
//! them through their workload: each is evicted (the Eviction API, so PodDisruptionBudgets hold)
//! once its workload can lose one more pod within its `maxUnavailable`, and the workload's
//! replacement goes through the pod webhook.

use jiff::Timestamp;
use kruise_api::pod::CachedPod;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::SidecarSet;
use kube::ResourceExt;
use kube::api::{Api, EvictParams};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use kruise_engines::podutil;
use kruise_engines::sidecarset::control;
use kruise_engines::updatesort::selector_matches;
use kruise_runtime::events::object_ref;
use kruise_runtime::runner::Context;

use super::{Error, State};
use crate::workload::is_status;

/// SidecarSet annotation opting in to replacing uninjected pods (value `"true"`).
pub const RECREATE_ANNOTATION: &str = "sidecarset.kruise-rs.io/recreate-uninjected-pods";

/// Event reason on pods and SidecarSets.
pub const REASON: &str = "SidecarNotInjected";

/// Label of the gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SidecarSetLabels {
    /// SidecarSet name.
    pub sidecarset: String,
}

/// What the repair remembers between passes.
#[derive(Clone)]
pub struct Repair {
    /// `kruise_sidecarset_uninjected_pods{sidecarset}`.
    pub gauge: Family<SidecarSetLabels, Gauge>,
    /// `(SidecarSet, pod UID)` pairs already reported on the pod.
    reported: Arc<Mutex<BTreeSet<(String, String)>>>,
    /// The count last reported on each SidecarSet.
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Repair {
    /// A repair whose gauge is registered in `ctx`'s metrics.
    pub fn new(ctx: &Context) -> Self {
        let gauge = Family::<SidecarSetLabels, Gauge>::default();
        ctx.metrics.register(
            "kruise_sidecarset_uninjected_pods",
            "Pods a SidecarSet selects that run without its sidecars (created while the pod webhook did not inject them, or before the SidecarSet existed)",
            gauge.clone(),
        );
        Self {
            gauge,
            reported: Arc::default(),
            counts: Arc::default(),
        }
    }
}

/// Whether pods of `namespace` never reach the pod webhook (the manager's own namespace,
/// namespaces labelled `control-plane`): they are not expected to carry sidecars.
fn exempt(namespace: &str, state: &State) -> bool {
    if namespace == state.kruise_namespace {
        return true;
    }
    state
        .namespaces
        .store()
        .get(&kube::runtime::reflector::ObjectRef::new(namespace))
        .is_some_and(|n| {
            n.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("control-plane"))
        })
}

/// The window in which the SidecarSet's injection was paused, as the status records it:
/// `(injectionPausedTime, injectionResumedTime)`.
pub type PauseWindow = (Option<Timestamp>, Option<Timestamp>);

/// The pause window to record now (pure): `paused` is `injectionStrategy.paused`, `recorded` the
/// window in the stored status. While paused the window is open (`since` kept from an earlier
/// pause, so it only widens; `until` cleared); on the first pass that sees injection resumed
/// after a pause it is closed at `now`; otherwise it stays as recorded.
pub fn pause_window(paused: bool, recorded: PauseWindow, now: Timestamp) -> PauseWindow {
    let (since, until) = recorded;
    match (paused, since, until) {
        (true, since, _) => (Some(since.unwrap_or(now)), None),
        (false, Some(since), None) => (Some(since), Some(now)),
        (false, since, until) => (since, until),
    }
}

/// Whether a pod created at `created` was created while injection was paused (inside the
/// `window`, open at its end while still paused): the webhook skipped the SidecarSet on
/// purpose (OpenKruise injects only at creation), so the pod is not a missed injection.
pub fn created_while_paused(created: Option<Timestamp>, window: PauseWindow) -> bool {
    let (Some(created), (Some(since), until)) = (created, window) else {
        return false;
    };
    created >= since && until.is_none_or(|until| created <= until)
}

/// The pause window of `s` now: [`pause_window`] over its spec and stored status.
pub fn current_pause_window(s: &SidecarSet, now: Timestamp) -> PauseWindow {
    let paused = s
        .spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.paused)
        .unwrap_or(false);
    let st = s.status.as_ref();
    let recorded = (
        st.and_then(|st| st.injection_paused_time.as_ref())
            .map(|t| t.0),
        st.and_then(|st| st.injection_resumed_time.as_ref())
            .map(|t| t.0),
    );
    pause_window(paused, recorded, now)
}

/// The active pods the SidecarSet selects (namespace and labels) that it did not inject:
/// not in their `kruise.io/sidecarset-injected-list`, in a namespace the pod webhook serves,
/// and not created while its injection was paused (`window`, see [`created_while_paused`]).
pub fn uninjected_pods(s: &SidecarSet, state: &State, window: PauseWindow) -> Vec<Arc<CachedPod>> {
    let Some(selector) = s.spec.selector.as_ref() else {
        return Vec::new();
    };
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        return Vec::new();
    }
    let namespace_ok = |ns: &str| match &s.spec.namespace_selector {
        None => true,
        Some(sel) => {
            let labels = state
                .namespaces
                .store()
                .get(&kube::runtime::reflector::ObjectRef::new(ns))
                .and_then(|n| n.metadata.labels.clone());
            selector_matches(sel, labels.as_ref()) == Some(true)
        }
    };
    let mut pods: Vec<Arc<CachedPod>> = state
        .pods
        .store()
        .state()
        .into_iter()
        .filter(|p| {
            let ns = p.metadata.namespace.as_deref().unwrap_or("");
            podutil::is_active(p)
                && p.metadata.deletion_timestamp.is_none()
                && selector_matches(selector, p.metadata.labels.as_ref()) == Some(true)
                && !control::is_pod_injected(p.as_ref(), s)
                && !exempt(ns, state)
                && namespace_ok(ns)
                && !created_while_paused(
                    p.metadata.creation_timestamp.as_ref().map(|t| t.0),
                    window,
                )
        })
        .collect();
    pods.sort_by(|a, b| {
        (a.metadata.namespace.as_deref(), a.metadata.name.as_deref())
            .cmp(&(b.metadata.namespace.as_deref(), b.metadata.name.as_deref()))
    });
    pods
}

/// Reports the uninjected pods (gauge, Events) and, with the opt-in, replaces what the
/// workloads' budgets allow. Returns their number, for `status.uninjectedPods`, and whether
/// pods remain to be replaced (the caller requeues).
pub async fn run(
    s: &SidecarSet,
    ctx: &Context,
    state: &State,
    repair: &Repair,
    window: PauseWindow,
) -> Result<(usize, bool), Error> {
    let name = s.name_any();
    // With `PodWebhook=false` nothing injects sidecars (OpenKruise's gate): no pod is a missed
    // injection.
    let pods = if ctx
        .gates
        .enabled(kruise_runtime::features::Feature::PodWebhook)
    {
        uninjected_pods(s, state, window)
    } else {
        Vec::new()
    };
    repair
        .gauge
        .get_or_create(&SidecarSetLabels {
            sidecarset: name.clone(),
        })
        .set(pods.len() as i64);
    let changed = {
        let mut counts = repair.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.insert(name.clone(), pods.len()) != Some(pods.len())
    };
    if changed && !pods.is_empty() {
        ctx.recorder
            .warning(
                &object_ref(s),
                REASON,
                &format!(
                    "{} pod(s) selected by this SidecarSet run without its sidecars (created while the pod webhook did not inject them, or before the SidecarSet existed)",
                    pods.len()
                ),
            )
            .await;
    }
    for pod in &pods {
        let key = (name.clone(), pod.uid().unwrap_or_default());
        let first = repair
            .reported
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key);
        if first {
            ctx.recorder
                .warning(
                    &object_ref(pod.as_ref()),
                    REASON,
                    &format!(
                        "pod runs without the sidecars of SidecarSet {name}: it was created while the pod webhook did not inject them, or before the SidecarSet existed"
                    ),
                )
                .await;
        }
    }
    let opted_in = s
        .annotations()
        .get(RECREATE_ANNOTATION)
        .is_some_and(|v| v == "true");
    if !opted_in || pods.is_empty() {
        return Ok((pods.len(), false));
    }
    let mut evicted_owners = BTreeSet::new();
    for pod in &pods {
        let Some(owner) = pod
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
        else {
            continue;
        };
        if !evicted_owners.insert(owner.uid.clone()) {
            continue;
        }
        let siblings = state.pods.owned_by(&owner.uid);
        let unavailable = siblings
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some() || !podutil::is_pod_ready(p))
            .count() as i64;
        let allowed = allowed_unavailable(ctx, pod, owner).await?;
        if unavailable + 1 > allowed {
            tracing::debug!(pod = %pod.name_any(), unavailable, allowed, "replacement waits for the workload's budget");
            continue;
        }
        let api: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
        match api.evict(&pod.name_any(), &EvictParams::default()).await {
            Ok(_) => {
                ctx.recorder
                    .normal(
                        &object_ref(pod.as_ref()),
                        "SidecarNotInjectedEvicted",
                        &format!(
                            "evicted so that its workload recreates it with the sidecars of SidecarSet {name}"
                        ),
                    )
                    .await;
            }
            // A PodDisruptionBudget says not now, or the pod is gone.
            Err(e) if is_status(&e, 429) || is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((pods.len(), true))
}

/// How many pods of the pod's workload may be unavailable at once: the Deployment's (through
/// its ReplicaSet) or CloneSet's `maxUnavailable` over its replicas (Deployment 25% rounded
/// down, CloneSet 20% rounded up, as those controllers resolve them); 1 for other workloads.
async fn allowed_unavailable(
    ctx: &Context,
    pod: &CachedPod,
    owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
) -> Result<i64, Error> {
    let ns = pod.namespace().unwrap_or_default();
    let resolve = |v: Option<&IntOrString>, default: &str, total: i64, round_up: bool| {
        let d = IntOrString::String(default.to_owned());
        kruise_engines::intstr::scaled_value(v.unwrap_or(&d), total, round_up).unwrap_or(1)
    };
    match (owner.api_version.as_str(), owner.kind.as_str()) {
        ("apps/v1", "ReplicaSet") => {
            let rs = Api::<ReplicaSet>::namespaced(ctx.client.clone(), &ns)
                .get_opt(&owner.name)
                .await?;
            let deployment = rs.as_ref().and_then(|rs| {
                rs.owner_references()
                    .iter()
                    .find(|o| o.controller == Some(true) && o.kind == "Deployment")
                    .cloned()
            });
            let Some(d) = deployment else {
                return Ok(1);
            };
            let Some(d) = Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
                .get_opt(&d.name)
                .await?
            else {
                return Ok(1);
            };
            let spec = d.spec;
            let replicas = i64::from(spec.replicas.unwrap_or(1));
            let rolling = spec.strategy.and_then(|s| s.rolling_update);
            Ok(resolve(
                rolling.as_ref().and_then(|r| r.max_unavailable.as_ref()),
                "25%",
                replicas,
                false,
            ))
        }
        (v, "CloneSet") if v.starts_with("apps.kruise.io/") => {
            let Some(cs) = Api::<CloneSet>::namespaced(ctx.client.clone(), &ns)
                .get_opt(&owner.name)
                .await?
            else {
                return Ok(1);
            };
            let replicas = i64::from(cs.spec.replicas.unwrap_or(1));
            Ok(resolve(
                cs.spec
                    .update_strategy
                    .as_ref()
                    .and_then(|u| u.max_unavailable.as_ref()),
                "20%",
                replicas,
                true,
            ))
        }
        _ => Ok(1),
    }
}

#[cfg(test)]
mod pause_tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn the_pause_window_opens_closes_and_only_widens() {
        // Never paused: no window.
        assert_eq!(pause_window(false, (None, None), t(10)), (None, None));
        // First seen paused: opens at now; stays open with the same start.
        let open = pause_window(true, (None, None), t(10));
        assert_eq!(open, (Some(t(10)), None));
        assert_eq!(pause_window(true, open, t(20)), open);
        // First seen resumed: closes at now; stays closed.
        let closed = pause_window(false, open, t(30));
        assert_eq!(closed, (Some(t(10)), Some(t(30))));
        assert_eq!(pause_window(false, closed, t(40)), closed);
        // Paused again: reopens from the first start.
        assert_eq!(pause_window(true, closed, t(50)), (Some(t(10)), None));
    }

    #[test]
    fn pods_created_inside_the_window_are_not_missed_injections() {
        let open = (Some(t(10)), None);
        let closed = (Some(t(10)), Some(t(30)));
        assert!(!created_while_paused(Some(t(5)), open));
        assert!(created_while_paused(Some(t(10)), open));
        assert!(created_while_paused(Some(t(1000)), open));
        assert!(created_while_paused(Some(t(20)), closed));
        assert!(created_while_paused(Some(t(30)), closed));
        assert!(!created_while_paused(Some(t(31)), closed));
        assert!(!created_while_paused(Some(t(5)), closed));
        assert!(!created_while_paused(None, open));
        assert!(!created_while_paused(Some(t(20)), (None, None)));
    }
}
