//! NodePodProbe controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/nodepodprobe`, gates `PodProbeMarkerGate` and `KruiseDaemon`): keeps one
//! NodePodProbe per ready node (named after it) and turns the probe results kruise-daemon
//! writes into its status into pod conditions, labels and annotations.
//!
//! Same shape as every controller: [`setup`] (watches: nodes that need a NodePodProbe created
//! or deleted; NodePodProbes and the pods leaving them mapped to their node, from the shared
//! cache), [`reconcile`] (one pass per node), the pure decisions in [`plan`]; no status of its
//! own. One pass:
//!
//! - a ready node (not virtual-kubelet) without a NodePodProbe gets an empty one; a node being
//!   deleted loses its NodePodProbe, and so does a NodePodProbe whose node is gone (OpenKruise
//!   deletes it when its pass finds no node; the primary object here is the node, so a
//!   watcher of node deletions and of NodePodProbes without a node does it);
//! - the pods that are gone or no longer active leave the spec;
//! - for each pod in the status, the results become the marker's `podConditionType` condition
//!   and its `markerPolicy` labels and annotations, written in one JSON patch of `pods/status`
//!   bound to the cached pod's resourceVersion (OpenKruise's `UpdateStatus` of the pod with its
//!   metadata changed, openkruise/kruise#1597).

pub mod plan;

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::{info, warn};

use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::runner::{self as runtime, Context};

use self::plan::NodeStep;
use super::podprobemarker::plan::is_virtual_kubelet;
use crate::scaffold;
use crate::workload::{is_status, update_pod_status_and_marks};

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "nodepodprobe";

/// The CRDs it reads.
pub const CRDS: &[&str] = &[
    "nodepodprobes.apps.kruise.io",
    "podprobemarkers.apps.kruise.io",
];

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// Nodes (the primary objects: a NodePodProbe is named after its node).
    pub nodes: Informer<Node>,
    /// NodePodProbes.
    pub probes: Informer<NodePodProbe>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// PodProbeMarkers.
    pub markers: Informer<PodProbeMarker>,
}

impl State {
    fn step(&self, node: &Node) -> NodeStep {
        let has = self
            .probes
            .store()
            .get(&ObjectRef::new(&node.name_any()))
            .is_some();
        plan::node_step(node, has, is_virtual_kubelet(node.metadata.labels.as_ref()))
    }
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--nodepodprobe-workers`, 3 as OpenKruise) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        nodes: ctx.cache.cluster_informer(),
        probes: ctx.cache.cluster_informer(),
        pods: ctx.cache.informer(),
        markers: ctx.cache.informer(),
    };
    let caches = vec![
        state.nodes.synced(),
        state.probes.synced(),
        state.pods.synced(),
        state.markers.synced(),
    ];
    let (tx, rx) = unbounded::<ObjectRef<Node>>();
    let observers = futures::future::join3(
        nodes_of_probes(state.clone(), ctx.clone(), tx.clone()),
        nodes_of_pods(state.clone(), tx),
        orphans_of_deleted_nodes(state.clone(), ctx.clone()),
    );
    let s = state.clone();
    let nodes = state.nodes.applied_objects().filter(move |n| {
        std::future::ready(matches!(s.step(n), NodeStep::Create | NodeStep::Delete))
    });
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::new(nodes, state.nodes.store().clone()).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// Every NodePodProbe change asks a pass of its node; a NodePodProbe whose node is not in the
/// (synced) node cache is deleted here.
async fn nodes_of_probes(state: State, ctx: Arc<Context>, tx: UnboundedSender<ObjectRef<Node>>) {
    let mut events = state.probes.subscribe();
    if !(state.nodes.synced().wait().await && state.probes.synced().wait().await) {
        return;
    }
    while let Some(ev) = events.next().await {
        let CacheEvent::Apply(npp) = ev else {
            continue;
        };
        let name = npp.name_any();
        if state.nodes.store().get(&ObjectRef::new(&name)).is_none() {
            delete_probe(&ctx, &name).await;
        } else if tx.unbounded_send(ObjectRef::new(&name)).is_err() {
            return;
        }
    }
}

/// A node deleted takes its NodePodProbe with it.
async fn orphans_of_deleted_nodes(state: State, ctx: Arc<Context>) {
    let mut events = state.nodes.subscribe();
    while let Some(ev) = events.next().await {
        let CacheEvent::Delete(node) = ev else {
            continue;
        };
        let name = node.name_any();
        if state.probes.store().get(&ObjectRef::new(&name)).is_some() {
            delete_probe(&ctx, &name).await;
        }
    }
}

/// A pod deleted or no longer active asks a pass of its node when the node's NodePodProbe
/// lists it.
async fn nodes_of_pods(state: State, tx: UnboundedSender<ObjectRef<Node>>) {
    let mut events = state.pods.subscribe();
    while let Some(ev) = events.next().await {
        let (pod, deleted) = match &ev {
            CacheEvent::Apply(p) => (p, false),
            CacheEvent::Delete(p) => (p, true),
        };
        let node = super::podprobemarker::plan::node_name(pod);
        if node.is_empty() {
            continue;
        }
        let Some(npp) = state.probes.store().get(&ObjectRef::new(node)) else {
            continue;
        };
        if plan::pod_leaves(pod, deleted, &npp.spec)
            && tx.unbounded_send(ObjectRef::new(node)).is_err()
        {
            return;
        }
    }
}

/// Deletes NodePodProbe `name` (gone already: done), logging a failure (the next change of
/// the NodePodProbe, or a restart, tries again).
async fn delete_probe(ctx: &Context, name: &str) {
    let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => info!(
            nodepodprobe = name,
            "deleted the NodePodProbe of a node that is gone"
        ),
        Err(e) if is_status(&e, 404) => {}
        Err(e) => {
            warn!(nodepodprobe = name, error = %e, "failed to delete the NodePodProbe of a node that is gone")
        }
    }
}

/// One pass over one node (see the module documentation).
pub async fn reconcile(node: Arc<Node>, ctx: Arc<Context>, state: State) -> Result<Action, Error> {
    let name = node.name_any();
    let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
    match state.step(&node) {
        NodeStep::Nothing => Ok(Action::await_change()),
        NodeStep::Create => {
            let npp = NodePodProbe {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                spec: Default::default(),
                status: None,
            };
            match api.create(&PostParams::default(), &npp).await {
                Ok(_) => info!(nodepodprobe = name, "created the node's NodePodProbe"),
                Err(e) if is_status(&e, 409) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(Action::await_change())
        }
        NodeStep::Delete => {
            delete_probe(&ctx, &name).await;
            Ok(Action::await_change())
        }
        NodeStep::Sync => {
            let Some(npp) = state.probes.store().get(&ObjectRef::new(&name)) else {
                return Ok(Action::await_change());
            };
            sync(&ctx, &state, &npp).await?;
            Ok(Action::await_change())
        }
    }
}

async fn sync(ctx: &Context, state: &State, npp: &NodePodProbe) -> Result<(), Error> {
    let pod = |ns: &str, name: &str| state.pods.store().get(&ObjectRef::new(name).within(ns));
    let (spec, live) = plan::live_spec(&npp.spec, pod);
    if spec != npp.spec {
        let mut updated = npp.clone();
        updated.spec = spec;
        let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
        match api
            .replace(&npp.name_any(), &PostParams::default(), &updated)
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    for status in npp
        .status
        .iter()
        .flat_map(|s| s.pod_probe_statuses.iter().flatten())
    {
        if !live.contains(&status.uid) {
            continue;
        }
        let Some(p) = pod(&status.namespace, &status.name) else {
            continue;
        };
        let marker = |m: &str| {
            state
                .markers
                .store()
                .get(&ObjectRef::new(m).within(&status.namespace))
        };
        let marks = plan::pod_marks(&p, status, marker);
        if marks.is_empty() {
            continue;
        }
        let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &status.namespace);
        match update_pod_status_and_marks(&api, &p, &marks.apply(&p)).await {
            Ok(_) => {
                info!(namespace = %status.namespace, pod = %status.name, marks = ?marks, "NodePodProbe updated the pod's metadata and conditions");
            }
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
