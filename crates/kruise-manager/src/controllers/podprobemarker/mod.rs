//! PodProbeMarker controller (`apps.kruise.io/v1alpha1`; OpenKruise v1.9.0
//! `pkg/controller/podprobemarker`, gate `PodProbeMarkerGate`): puts a marker's custom probes
//! into the NodePodProbe of every node its pods run on, where kruise-daemon runs them
//! (`kruise_daemon::podprobe`); the NodePodProbe controller (`super::nodepodprobe`) turns the
//! results into pod conditions, labels and annotations.
//!
//! Same shape as every controller: [`setup`] (watches: markers; pods and NodePodProbes mapped
//! to the markers that still have to list a pod, from the shared cache), [`reconcile`] (one
//! pass), the pure decisions in [`plan`], and the status (`observedGeneration`,
//! `matchedPods`). One pass:
//!
//! - the marker's pods are the active, initialized, scheduled pods its selector selects in its
//!   namespace, split by node: normal nodes, virtual-kubelet nodes (serverless), and nodes not
//!   in the cache (left out);
//! - a marker being deleted has its probes (`<marker>#<probe>`) removed from the NodePodProbes
//!   of its pods' nodes, then loses finalizer `kruise.io/node-pod-probe-cleanup`; any other
//!   marker gets that finalizer;
//! - with gate `EnablePodProbeMarkerOnServerless`, serverless pods get the `markerPolicy`
//!   labels and annotations that match their own conditions (the probes run elsewhere);
//! - every normal pod is added to its node's NodePodProbe with the marker's probes (named ports
//!   resolved against the container); a node without a NodePodProbe is skipped (the
//!   NodePodProbe controller creates one per ready node, and its creation triggers the marker
//!   again);
//! - the status counts the matched pods of both kinds.

pub mod plan;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::Node;
use kruise_api::apps::v1alpha1::{NodePodProbe, PodProbeMarker};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::{debug, info};

use kruise_runtime::cache::{CacheEvent, Informer};
use kruise_runtime::features::Feature;
use kruise_runtime::runner::{self as runtime, Context};

use self::plan::NodeKind;
use crate::scaffold;
use crate::workload::{is_status, write_finalizer};

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "podprobemarker";

/// The CRDs it reads.
pub const CRDS: &[&str] = &[
    "podprobemarkers.apps.kruise.io",
    "nodepodprobes.apps.kruise.io",
];

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// PodProbeMarkers.
    pub markers: Informer<PodProbeMarker>,
    /// Pods.
    pub pods: Informer<CachedPod>,
    /// Nodes.
    pub nodes: Informer<Node>,
    /// NodePodProbes.
    pub probes: Informer<NodePodProbe>,
}

impl State {
    fn node_kind(&self, name: &str) -> NodeKind {
        match self.nodes.store().get(&ObjectRef::new(name)) {
            None => NodeKind::Missing,
            Some(n) if plan::is_virtual_kubelet(n.metadata.labels.as_ref()) => NodeKind::Serverless,
            Some(_) => NodeKind::Normal,
        }
    }
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--podprobemarker-workers`, 3 as OpenKruise) once every cache it reads has
/// synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        markers: ctx.cache.informer(),
        pods: ctx.cache.informer(),
        nodes: ctx.cache.cluster_informer(),
        probes: ctx.cache.cluster_informer(),
    };
    let caches = vec![
        state.markers.synced(),
        state.pods.synced(),
        state.nodes.synced(),
        state.probes.synced(),
    ];
    let (tx, rx) = unbounded::<ObjectRef<PodProbeMarker>>();
    let serverless = ctx.gates.enabled(Feature::EnablePodProbeMarkerOnServerless);
    let observers = futures::future::join(
        markers_of_pods(state.clone(), serverless, tx.clone()),
        markers_of_node_probes(state.clone(), tx),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        runtime::Triggers::from_informer(&state.markers).reconcile_on(rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// The markers a pod change asks a pass of: for a probed pod on a normal node, those that apply
/// to it and have not yet put it (with its IP and their probes) into its node's NodePodProbe;
/// with `serverless` (gate `EnablePodProbeMarkerOnServerless`), for a pod on a virtual-kubelet
/// node, those whose marks its conditions call for and it lacks.
fn markers_for_pod(
    state: &State,
    pod: &CachedPod,
    serverless: bool,
) -> Vec<ObjectRef<PodProbeMarker>> {
    if !plan::probed(pod) {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
    let node = plan::node_name(pod);
    let kind = state.node_kind(node);
    let npp = state.probes.store().get(&ObjectRef::new(node));
    let spec = npp.as_deref().map(|n| &n.spec);
    state
        .markers
        .in_namespace(namespace)
        .into_iter()
        .filter(|ppm| plan::applies_to(ppm, pod))
        .filter(|ppm| match kind {
            NodeKind::Missing => false,
            NodeKind::Normal => plan::pod_needs_pass(pod, spec, ppm),
            NodeKind::Serverless => {
                serverless && plan::serverless_marks(pod, &plan::markers(ppm)).is_some()
            }
        })
        .map(|ppm| ObjectRef::from_obj(ppm.as_ref()))
        .collect()
}

async fn markers_of_pods(
    state: State,
    serverless: bool,
    tx: UnboundedSender<ObjectRef<PodProbeMarker>>,
) {
    let mut events = state.pods.subscribe();
    while let Some(ev) = events.next().await {
        let CacheEvent::Apply(pod) = ev else {
            continue;
        };
        for r in markers_for_pod(&state, &pod, serverless) {
            if tx.unbounded_send(r).is_err() {
                return;
            }
        }
    }
}

/// A NodePodProbe created (or changed) asks a pass of the markers whose pods on its node it
/// does not list yet (OpenKruise waits for the next pod or marker change).
async fn markers_of_node_probes(state: State, tx: UnboundedSender<ObjectRef<PodProbeMarker>>) {
    let mut events = state.probes.subscribe();
    while let Some(ev) = events.next().await {
        let CacheEvent::Apply(npp) = ev else {
            continue;
        };
        let mut wanted = std::collections::HashSet::new();
        for pod in state.pods.on_node(&npp.name_any()) {
            wanted.extend(markers_for_pod(&state, &pod, false));
        }
        for r in wanted {
            if tx.unbounded_send(r).is_err() {
                return;
            }
        }
    }
}

/// One pass over one marker (see the module documentation).
pub async fn reconcile(
    ppm: Arc<PodProbeMarker>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let namespace = ppm.namespace().unwrap_or_default();
    let name = ppm.name_any();
    let pods = state.pods.in_namespace(&namespace);
    let (normal, serverless) = plan::matching_pods(&ppm, &pods, |n| state.node_kind(n));
    let api: Api<PodProbeMarker> = Api::namespaced(ctx.client.clone(), &namespace);
    let has_finalizer = ppm
        .finalizers()
        .iter()
        .any(|f| f == keys::POD_PROBE_MARKER_FINALIZER);

    if ppm.meta().deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        let nodes: BTreeSet<&str> = normal.iter().map(|p| plan::node_name(p)).collect();
        for node in nodes {
            let Some(npp) = state.probes.store().get(&ObjectRef::new(node)) else {
                continue;
            };
            let spec = plan::remove_probes(&npp.spec, &namespace, &name);
            if spec != npp.spec {
                replace_spec(&ctx, &npp, spec).await?;
                info!(nodepodprobe = node, podprobemarker = %format!("{namespace}/{name}"), "removed the PodProbeMarker's probes from the NodePodProbe");
            }
        }
        write_finalizer(&api, ppm.as_ref(), keys::POD_PROBE_MARKER_FINALIZER, false).await?;
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        write_finalizer(&api, ppm.as_ref(), keys::POD_PROBE_MARKER_FINALIZER, true).await?;
    }

    let markers = plan::markers(&ppm);
    if ctx.gates.enabled(Feature::EnablePodProbeMarkerOnServerless) && !markers.is_empty() {
        for pod in &serverless {
            if let Some((labels, annotations)) = plan::serverless_marks(pod, &markers) {
                mark_pod(&ctx, pod, labels, annotations).await?;
            }
        }
    }

    let mut by_node: BTreeMap<&str, Vec<&CachedPod>> = BTreeMap::new();
    for pod in &normal {
        by_node.entry(plan::node_name(pod)).or_default().push(pod);
    }
    for (node, pods) in by_node {
        let Some(npp) = state.probes.store().get(&ObjectRef::new(node)) else {
            info!(nodepodprobe = node, podprobemarker = %format!("{namespace}/{name}"), "NodePodProbe not found: the node's pods are left for its creation");
            continue;
        };
        let mut spec = npp.spec.clone();
        if plan::add_probes(&mut spec, &ppm, &pods) {
            replace_spec(&ctx, &npp, spec).await?;
            debug!(nodepodprobe = node, podprobemarker = %format!("{namespace}/{name}"), "updated the NodePodProbe");
        }
    }

    let matched = (normal.len() + serverless.len()) as i64;
    let generation = ppm.metadata.generation.unwrap_or(0);
    let status = ppm.status.as_ref();
    let observed = status.map_or(0, |s| s.observed_generation);
    let counted = status.and_then(|s| s.matched_pods).unwrap_or(0);
    if observed != generation || counted != matched {
        let body = json!({"status": {
            "observedGeneration": generation,
            "matchedPods": (matched != 0).then_some(matched),
        }});
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Action::await_change())
}

/// Writes a NodePodProbe's new spec, bound to the cached resourceVersion (a conflict fails the
/// pass, which is retried on the newer object).
async fn replace_spec(
    ctx: &Context,
    npp: &NodePodProbe,
    spec: kruise_api::apps::v1alpha1::NodePodProbeSpec,
) -> Result<(), Error> {
    let mut updated = npp.clone();
    updated.spec = spec;
    let api: Api<NodePodProbe> = Api::all(ctx.client.clone());
    match api
        .replace(&npp.name_any(), &PostParams::default(), &updated)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Puts marks on a serverless pod (a merge patch of its labels and annotations).
async fn mark_pod(
    ctx: &Context,
    pod: &CachedPod,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> Result<(), Error> {
    let mut meta = serde_json::Map::new();
    if !labels.is_empty() {
        meta.insert("labels".into(), json!(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), json!(annotations));
    }
    let api: Api<CachedPod> =
        Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    match api
        .patch(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": meta })),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
