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
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_api::apps::v1beta1::SidecarSet;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use kruise_engines::expectations::{ResourceVersionExpectations, UpdateExpectations};
use kruise_engines::sidecarset::control;
use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "sidecarset";

/// Label every namespace carries with its own name.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Errors of one pass. Every variant is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A revision could not be built.
    #[error("revision: {0}")]
    Revision(#[from] kruise_engines::revision::RevisionError),
    /// A shared workload control failed.
    #[error(transparent)]
    Control(#[from] crate::workload::ControlError),
    /// Anything else (messages as OpenKruise's).
    #[error("{0}")]
    Other(String),
}

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// SidecarSets.
    pub sidecarsets: Informer<SidecarSet>,
    /// Pods.
    pub pods: Informer<Pod>,
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
        pods: ctx.cache.informer::<Pod>(),
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
    let (trigger_tx, trigger_rx) = futures::channel::mpsc::unbounded();
    let triggers = Throttle::new(trigger_tx, POD_TRIGGER_WINDOW);
    let pods_state = state.clone();
    // OpenKruise's pod event handler: a pod maps to the SidecarSets named in its
    // `kruise.io/sidecarset-injected-list` that exist and whose containers it holds.
    let pods = state.pods.subscribe().for_each(move |event| {
        let pod = event.object();
        // A pod a SidecarSet selects but did not inject (reported by the repair).
        if let CacheEvent::Apply(p) = &event {
            let injected = control::injected_list(p);
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
                    triggers.trigger(name);
                }
            }
        }
        for name in control::injected_list(pod) {
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
                CacheEvent::Apply(o) => {
                    pods_state.resource_versions.observe_object(&o.metadata);
                    triggers.trigger(&name);
                }
                CacheEvent::Delete(o) => {
                    pods_state.updates.delete_object(&name, &o.metadata);
                    pods_state.resource_versions.delete_object(&o.metadata);
                }
            }
        }
        std::future::ready(())
    });
    let shutdown = ctx.shutdown.clone();
    let observers = tokio::spawn(async move {
        tokio::select! {
            () = pods => {},
            () = shutdown.cancelled() => {},
        }
    });
    let controller = runtime::Triggers::new(
        spec_changes(sidecarsets.applied_objects()),
        sidecarsets.store().clone(),
    )
    .reconcile_on(trigger_rx);
    async move {
        let result = runtime::run_controller(
            ctx,
            CONTROLLER_NAME,
            workers,
            controller,
            caches,
            move |s, ctx| {
                let state = state.clone();
                async move { reconcile(s, ctx, state).await }
            },
        )
        .await;
        observers.abort();
        result
    }
}

/// How often pod events trigger a pass of one SidecarSet at most (see [`Throttle`]).
const POD_TRIGGER_WINDOW: std::time::Duration = std::time::Duration::from_millis(200);

/// Pod events → SidecarSet passes, at most one pass per SidecarSet per `window`: the first
/// event after a quiet `window` triggers at once; events within `window` of the last trigger
/// are merged into one trigger at the end of that window. A pass reads every pod the SidecarSet
/// selects from the cache, so one pass covers every event merged into it; during a burst of
/// pod creates (every create changes `matchedPods` of each SidecarSet the pod has) this bounds
/// the passes — and the CPU they take from admission — without delaying an isolated event.
#[derive(Clone)]
struct Throttle {
    tx: futures::channel::mpsc::UnboundedSender<ObjectRef<SidecarSet>>,
    window: std::time::Duration,
    /// Per SidecarSet: when its window ends and whether a trigger is due then.
    slots: Arc<std::sync::Mutex<std::collections::HashMap<String, (tokio::time::Instant, bool)>>>,
}

impl Throttle {
    fn new(
        tx: futures::channel::mpsc::UnboundedSender<ObjectRef<SidecarSet>>,
        window: std::time::Duration,
    ) -> Self {
        Self {
            tx,
            window,
            slots: Arc::default(),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (tokio::time::Instant, bool)>>
    {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Asks for a pass of SidecarSet `name`.
    fn trigger(&self, name: &str) {
        let now = tokio::time::Instant::now();
        let mut slots = self.lock();
        match slots.get_mut(name) {
            Some((_, true)) => {}
            Some((until, due)) if now < *until => {
                *due = true;
                let until = *until;
                let this = self.clone();
                let name = name.to_owned();
                tokio::spawn(async move {
                    tokio::time::sleep_until(until).await;
                    let mut slots = this.lock();
                    slots.insert(
                        name.clone(),
                        (tokio::time::Instant::now() + this.window, false),
                    );
                    let _ = this.tx.unbounded_send(ObjectRef::new(&name));
                });
            }
            _ => {
                slots.insert(name.to_owned(), (now + self.window, false));
                let _ = self.tx.unbounded_send(ObjectRef::new(name));
            }
        }
    }
}

/// What a pass reads from a SidecarSet besides its status: a change of anything else
/// triggers a pass.
#[derive(PartialEq)]
struct Watched {
    uid: Option<String>,
    generation: Option<i64>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    annotations: Option<std::collections::BTreeMap<String, String>>,
    deleting: bool,
    finalizers: Option<Vec<String>>,
}

impl Watched {
    fn of(s: &SidecarSet) -> Self {
        let m = &s.metadata;
        Self {
            uid: m.uid.clone(),
            generation: m.generation,
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
            deleting: m.deletion_timestamp.is_some(),
            finalizers: m.finalizers.clone(),
        }
    }
}

/// The SidecarSets to reconcile from the informer's applied objects: every SidecarSet when it
/// is first seen, then only when more than its status changed. OpenKruise's watch has the
/// predicate `UpdateFunc: generation changed`; kruise-rs also passes metadata changes (a
/// pass reads the hash annotations and the repair opt-in annotation). A status write — this
/// controller's own after each pass that changed a count — triggers no further pass: what
/// the pass computes does not depend on the status it wrote (pod events trigger passes).
fn spec_changes(
    objects: impl futures::Stream<Item = Arc<SidecarSet>> + Send + 'static,
) -> impl futures::Stream<Item = Arc<SidecarSet>> + Send + 'static {
    let seen = std::sync::Mutex::new(std::collections::HashMap::<String, Watched>::new());
    objects.filter(move |s| {
        let now = Watched::of(s);
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = seen.get(&s.name_any()) != Some(&now);
        if changed {
            seen.insert(s.name_any(), now);
        }
        std::future::ready(changed)
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sidecarset(uid: &str, generation: i64, annotation: &str, matched: i32) -> Arc<SidecarSet> {
        let mut s: SidecarSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "s", "uid": uid, "generation": generation,
                         "annotations": {"a": annotation}},
            "spec": {},
        }))
        .unwrap();
        s.status = Some(kruise_api::apps::v1beta1::SidecarSetStatus {
            matched_pods: matched,
            ..Default::default()
        });
        Arc::new(s)
    }

    #[tokio::test]
    async fn status_writes_trigger_no_pass() {
        let objects = vec![
            sidecarset("u1", 1, "x", 0),
            // Status only: no pass.
            sidecarset("u1", 1, "x", 5),
            sidecarset("u1", 1, "x", 6),
            // New generation, annotation change, re-created under the same name: passes.
            sidecarset("u1", 2, "x", 6),
            sidecarset("u1", 2, "y", 6),
            sidecarset("u2", 2, "y", 6),
        ];
        let passed: Vec<(String, i64, String, i32)> = spec_changes(futures::stream::iter(objects))
            .map(|s| {
                (
                    s.metadata.uid.clone().unwrap(),
                    s.metadata.generation.unwrap(),
                    s.annotations()["a"].clone(),
                    s.status.as_ref().unwrap().matched_pods,
                )
            })
            .collect()
            .await;
        let want = [
            ("u1", 1, "x", 0),
            ("u1", 2, "x", 6),
            ("u1", 2, "y", 6),
            ("u2", 2, "y", 6),
        ];
        let want: Vec<(String, i64, String, i32)> = want
            .iter()
            .map(|(u, g, a, m)| ((*u).to_owned(), *g, (*a).to_owned(), *m))
            .collect();
        assert_eq!(passed, want);
    }

    #[tokio::test]
    async fn pod_triggers_are_merged_within_the_window() {
        let window = Duration::from_millis(300);
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let t = Throttle::new(tx, window);
        // The first event triggers at once.
        t.trigger("a");
        assert_eq!(rx.try_recv().unwrap().name, "a");
        // A burst within the window: one trigger, at its end.
        for _ in 0..10 {
            t.trigger("a");
        }
        // Another SidecarSet is not held back by the first one's window.
        t.trigger("b");
        assert_eq!(rx.try_recv().unwrap().name, "b");
        assert!(
            rx.try_recv().is_err(),
            "nothing more before the window ends"
        );
        let merged = tokio::time::timeout(2 * window, rx.next()).await.unwrap();
        assert_eq!(merged.unwrap().name, "a");
        assert!(rx.try_recv().is_err(), "the burst gave one trigger");
        // Quiet for a window: the next event triggers at once again.
        tokio::time::sleep(window + Duration::from_millis(50)).await;
        t.trigger("a");
        assert_eq!(rx.try_recv().unwrap().name, "a");
    }
}
