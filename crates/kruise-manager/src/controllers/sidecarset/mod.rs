//! SidecarSet controller (`apps.kruise.io/v1beta1` SidecarSet, cluster-scoped; OpenKruise v1.9.0
//! `pkg/controller/sidecarset`, reference §3.4).
//!
//! Same shape as every controller: [`setup`] (watches: SidecarSets, pods, namespaces and the
//! SidecarSet revisions in the manager's namespace, all from the shared cache), [`reconcile`]
//! (one pass, in `sync`), pure decisions in `kruise_engines::sidecarset`.
//!
//! One pass, as OpenKruise's `UpdateSidecarSet`: the matched pods (selected by `selector` in the
//! namespaces `namespaceSelector` selects, active, injected by this SidecarSet and holding all
//! its containers); the latest revision found or created (ControllerRevisions in the manager's
//! namespace, history truncated to `revisionHistoryLimit`); the status written
//! (`matchedPods`, `updatedPods`, `readyPods`, `updatedReadyPods`, `latestRevision`,
//! `collisionCount`); once every pod this controller updated shows the update, unless the
//! strategy is `NotUpdate` or paused: hot-upgrade pairs whose new container is ready get their
//! old container reset to the empty image, else the next batch (`updateStrategy`: selector,
//! partition, maxUnavailable, priority, scatter) has its sidecar images updated in place, and
//! pods whose sidecars changed in more than images get `SidecarSetUpgradable` False.
//!
//! With `--namespace`, the manager manages only the SidecarSets that can select pods in that
//! namespace alone (`namespaceSelector` pinning `kubernetes.io/metadata.name`): the others are
//! cluster-wide and belong to a cluster-wide manager.

pub mod repair;
mod sync;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Namespace;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::expectations::{ResourceVersionExpectations, UpdateExpectations};
use kruise_engines::sidecarset::control;
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use crate::scaffold;
use kruise_runtime::triggers::{Coalescer, unless_only_status_changed};

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "sidecarset";

/// Label every namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

pub use crate::scaffold::Error;

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// SidecarSets.
    pub sidecarsets: Informer<SidecarSet>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Namespaces (for `namespaceSelector`).
    pub namespaces: Informer<Namespace>,
    /// ControllerRevisions of the manager's namespace.
    pub revisions: Informer<ControllerRevision>,
    /// The manager's namespace (`POD_NAMESPACE`), where revisions live.
    pub kruise_namespace: String,
    /// `--namespace`, when the manager is restricted to one namespace.
    pub only_namespace: Option<String>,
    /// Pods whose sidecars this controller updated, per SidecarSet, until the cache shows them.
    pub updates: UpdateExpectations,
    /// Minimum resourceVersions the cache must show for pods this controller wrote.
    pub resource_versions: ResourceVersionExpectations,
    /// Reports and replaces pods running without their sidecars ([`repair`]).
    pub repair: repair::Repair,
}

/// Whether a manager restricted to `only` manages SidecarSet `s` (see the module docs).
pub fn manages(s: &SidecarSet, only: Option<&str>) -> bool {
    let Some(ns) = only else {
        return true;
    };
    s.spec
        .namespace_selector
        .as_ref()
        .and_then(|sel| sel.match_labels.as_ref())
        .and_then(|l| l.get(NAMESPACE_NAME_LABEL))
        .is_some_and(|v| v == ns)
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--sidecarset-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let kruise_namespace = kruise_runtime::kruise_namespace();
    let sidecarsets = ctx.cache.cluster_informer::<SidecarSet>();
    let state = State {
        sidecarsets: sidecarsets.clone(),
        pods: ctx.cache.informer::<CachedPod>(),
        namespaces: ctx.cache.cluster_informer::<Namespace>(),
        revisions: ctx
            .cache
            .informer_in::<ControllerRevision>(&kruise_namespace),
        kruise_namespace,
        only_namespace: ctx.config.namespace.clone(),
        updates: UpdateExpectations::new(),
        resource_versions: ResourceVersionExpectations::new(),
        repair: repair::Repair::new(&ctx),
    };
    let caches = vec![
        sidecarsets.synced(),
        state.pods.synced(),
        state.namespaces.synced(),
        state.revisions.synced(),
    ];
    let (triggers, trigger_rx) = Coalescer::<SidecarSet>::new(POD_TRIGGER_WINDOW);
    let pods_state = state.clone();
    // OpenKruise's pod event handler: a pod maps to the SidecarSets named in its
    // `kruise.io/sidecarset-injected-list` that exist and whose containers it holds.
    let pods = state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        // A pod a SidecarSet selects but did not inject (reported by the repair).
        if let CacheEvent::Apply(p) = &event {
            let injected = control::injected_list(p.as_ref());
            for s in pods_state.sidecarsets.store().state() {
                let name = control::name(&s);
                if !injected.contains(name)
                    && s.spec.selector.as_ref().is_some_and(|sel| {
                        kruise_engines::updatesort::selector_matches(
                            sel,
                            p.metadata.labels.as_ref(),
                        ) == Some(true)
                    })
                {
                    triggers.trigger(ObjectRef::new(name));
                }
            }
        }
        for name in control::injected_list(pod.as_ref()) {
            let Some(s) = pods_state
                .sidecarsets
                .store()
                .get(&ObjectRef::<SidecarSet>::new(&name))
            else {
                continue;
            };
            if !control::is_pod_consistent_with_sidecarset(pod, &s) {
                continue;
            }
            match &event {
                CacheEvent::Apply(_) => triggers.trigger(ObjectRef::new(&name)),
                CacheEvent::Delete(o) => {
                    pods_state.updates.delete_object(&name, &o.metadata);
                }
            }
        }
        crate::workload::forget_deleted(&pods_state.resource_versions, &event);
        std::future::ready(())
    });
    let triggers = runtime::Triggers::new(
        // A status write — this controller's own after each pass that changed a count —
        // triggers no further pass: what the pass computes does not depend on the status it
        // wrote (pod events trigger passes). OpenKruise's watch has the predicate `UpdateFunc:
        // generation changed`; the metadata a pass reads (hash annotations, the repair opt-in)
        // also triggers one.
        unless_only_status_changed(sidecarsets.applied_objects()),
        sidecarsets.store().clone(),
    )
    .reconcile_on(trigger_rx);
    let controller = scaffold::Controller::new(CONTROLLER_NAME, workers, triggers, caches);
    scaffold::run(ctx, controller, pods, state, reconcile)
}

/// How often pod events trigger a pass of one SidecarSet at most ([`Coalescer`]): a pass reads
/// every pod the SidecarSet selects from the cache, and during a burst of pod creates every
/// create changes `matchedPods` of each SidecarSet the pod has.
const POD_TRIGGER_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

/// One pass over one SidecarSet (see the module documentation).
pub async fn reconcile(
    s: Arc<SidecarSet>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    if !manages(&s, state.only_namespace.as_deref()) {
        return Ok(Action::await_change());
    }
    let key = s.name_any();
    crate::workload::bounded_pass(&key, sync::sync(&s, &ctx, &state), Error::Other).await
}
