//! PodUnavailableBudget controller (`policy.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/podunavailablebudget`, `pkg/control/pubcontrol`).
//!
//! Same shape as every controller: [`setup`] (watches: budgets, pods, and the replica counts of
//! Deployments, StatefulSets, CloneSets and Advanced StatefulSets, all from the shared cache),
//! [`reconcile`] (one pass, in `sync`), pure decisions in
//! `kruise_engines::podunavailablebudget`, status written when it changed.
//!
//! One pass, as OpenKruise's `syncPodUnavailableBudget`: the covered pods and the number
//! expected (`targetRef`: the workload's pods and replicas through
//! [`crate::workload::finder`]; `selector`: the active pods it selects and the replicas of
//! their controllers; the `pub.kruise.io/protect-total-replicas` annotation overrides the
//! count); every covered pod without `kruise.io/related-pub` gets it (the pod webhook looks
//! budgets up by it); then `status` (desiredAvailable, currentAvailable, unavailableAllowed,
//! totalReplicas, the still-pending `disruptedPods` / `unavailablePods`) is written, a
//! conflict retried on a fresh read, and the pass comes back when the earliest pending entry
//! expires.
//!
//! Runs when `PodUnavailableBudgetDeleteGate` or `PodUnavailableBudgetUpdateGate` is on (its
//! registry entry), as OpenKruise's `Add`.
//!
//! Differences from OpenKruise, each a superset of its triggers: a pod without the
//! `kruise.io/related-pub` annotation (created before the budget, or while the pod webhook was
//! off) triggers the budgets of its namespace that can cover it, not none; a pod starting to
//! terminate triggers a pass at once rather than 5 s later; a workload whose replicas changed
//! triggers the budgets that cover it, and no request for an empty name when none does.

mod sync;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::{PodUnavailableBudget, TargetReference};
use kube::Resource;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::podunavailablebudget as engine;
use kruise_runtime::cache::{CacheEvent, Cached, Informer};
use kruise_runtime::runner::{self as runtime, Context};
use kruise_runtime::triggers::Coalescer;

use crate::scaffold;
use crate::workload::finder::Finder;

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "podunavailablebudget";

/// How often pod and workload events trigger a pass of one budget at most ([`Coalescer`]).
const TRIGGER_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// Budgets.
    pub budgets: Informer<PodUnavailableBudget>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Workloads behind references and pods.
    pub finder: Finder,
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--podunavailablebudget-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        budgets: ctx.cache.informer::<PodUnavailableBudget>(),
        pods: ctx.cache.informer::<CachedPod>(),
        finder: Finder::new(&ctx),
    };
    let mut caches = vec![state.budgets.synced(), state.pods.synced()];
    caches.extend(state.finder.caches());
    let (triggers, trigger_rx) = Coalescer::<PodUnavailableBudget>::new(TRIGGER_WINDOW);
    let observers = futures::future::join5(
        observe_pods(&state, triggers.clone()),
        observe_replicas(&state, state.finder.deployments(), triggers.clone(), |d| {
            d.spec.replicas
        }),
        observe_replicas(&state, state.finder.statefulsets(), triggers.clone(), |s| {
            s.spec.replicas
        }),
        observe_replicas(&state, state.finder.clonesets(), triggers.clone(), |c| {
            c.spec.replicas
        }),
        observe_replicas(
            &state,
            state.finder.advanced_statefulsets(),
            triggers,
            |s| s.spec.replicas,
        ),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.budgets).reconcile_on(trigger_rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one budget (see the module documentation).
pub async fn reconcile(
    budget: Arc<PodUnavailableBudget>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if budget.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let key = scaffold::key(budget.as_ref());
    crate::workload::bounded_pass(&key, sync::sync(&budget, &ctx, &state), Error::Other).await
}

/// OpenKruise's pod event handler, widened (module docs): a pod maps to the budget its
/// `kruise.io/related-pub` names, else to the budgets of its namespace that can cover it. A
/// pass is triggered when a pod appears or goes, or when it turns available or unavailable
/// (ready and consistent) or starts terminating; the last state is kept only for pods some
/// budget covers.
fn observe_pods(
    state: &State,
    triggers: Coalescer<PodUnavailableBudget>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let state = state.clone();
    let seen = Mutex::new(HashMap::<String, (bool, bool)>::new());
    state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        let budgets = budgets_of_pod(&state, pod);
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = match &event {
            _ if budgets.is_empty() => seen.remove(&uid).is_some(),
            CacheEvent::Delete(_) => {
                seen.remove(&uid);
                true
            }
            CacheEvent::Apply(p) => {
                let now = (
                    engine::is_pod_available(p),
                    p.metadata.deletion_timestamp.is_some(),
                );
                seen.insert(uid, now) != Some(now)
            }
        };
        if changed {
            for b in budgets {
                triggers.trigger(b);
            }
        }
        std::future::ready(())
    })
}

/// The budgets a pod event concerns (see [`observe_pods`]).
fn budgets_of_pod(state: &State, pod: &CachedPod) -> Vec<ObjectRef<PodUnavailableBudget>> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    if let Some(name) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::PUB_RELATED))
        .filter(|n| !n.is_empty())
    {
        let r = ObjectRef::new(name).within(ns);
        return state
            .budgets
            .store()
            .get(&r)
            .map(|_| r)
            .into_iter()
            .collect();
    }
    state
        .budgets
        .in_namespace(ns)
        .into_iter()
        .filter(|b| {
            b.spec.target_reference.is_some() || engine::selects(b, pod.metadata.labels.as_ref())
        })
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

/// OpenKruise's `SetEnqueueRequestForPUB` with its predicate: a workload added, deleted, or
/// whose `spec.replicas` changed triggers the budgets that cover it (a `targetRef` to it, or
/// a selector selecting its pod template's labels).
fn observe_replicas<K>(
    state: &State,
    workloads: &Informer<K>,
    triggers: Coalescer<PodUnavailableBudget>,
    replicas: fn(&K) -> Option<i32>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K>
where
    K: Cached + WithTemplate,
{
    let budgets = state.budgets.clone();
    let seen = Mutex::new(HashMap::<String, Option<i32>>::new());
    workloads.subscribe().for_each(move |event| {
        let w = event.object();
        let meta = w.meta();
        let uid = meta.uid.clone().unwrap_or_default();
        let changed = {
            let mut seen = seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match &event {
                CacheEvent::Delete(_) => {
                    seen.remove(&uid);
                    true
                }
                CacheEvent::Apply(o) => {
                    let now = replicas(o);
                    seen.insert(uid, now).is_none_or(|before| before != now)
                }
            }
        };
        if changed {
            for b in budgets_of_workload(
                &budgets,
                meta,
                K::api_version(&()).as_ref(),
                K::kind(&()).as_ref(),
                w.template_labels(),
            ) {
                triggers.trigger(b);
            }
        }
        std::future::ready(())
    })
}

/// The budgets in the workload's namespace whose `targetRef` names it or whose selector selects
/// its template labels.
fn budgets_of_workload(
    budgets: &Informer<PodUnavailableBudget>,
    meta: &ObjectMeta,
    api_version: &str,
    kind: &str,
    template_labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Vec<ObjectRef<PodUnavailableBudget>> {
    let ns = meta.namespace.as_deref().unwrap_or("");
    let me = TargetReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        name: meta.name.clone(),
    };
    budgets
        .in_namespace(ns)
        .into_iter()
        .filter(|b| match &b.spec.target_reference {
            Some(r) => engine::is_reference_equal(&me, r),
            None => engine::selects(b, template_labels),
        })
        .map(|b| ObjectRef::from_obj(b.as_ref()))
        .collect()
}

/// Workloads with a pod template (for selector-based budgets).
pub trait WithTemplate {
    /// The labels of the pod template.
    fn template_labels(&self) -> Option<&std::collections::BTreeMap<String, String>>;
}

impl WithTemplate for k8s_openapi::api::apps::v1::Deployment {
    fn template_labels(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.spec.template.metadata.as_ref()?.labels.as_ref()
    }
}

impl WithTemplate for k8s_openapi::api::apps::v1::StatefulSet {
    fn template_labels(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.spec.template.metadata.as_ref()?.labels.as_ref()
    }
}

impl WithTemplate for kruise_api::apps::v1alpha1::CloneSet {
    fn template_labels(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.spec.template.metadata.as_ref()?.labels.as_ref()
    }
}

impl WithTemplate for kruise_api::apps::v1beta1::StatefulSet {
    fn template_labels(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.spec.template.metadata.as_ref()?.labels.as_ref()
    }
}
