//! Reads of other objects by admission handlers, from the process's shared informer cache:
//! pods (`podsToDelete`), StorageClasses (volumeClaimTemplates expansion), SidecarSets (their
//! conflicts with each other), ControllerRevisions (a SidecarSet's injection revision) and
//! ConfigMaps (OpenKruise's `kruise-configuration`).
//!
//! As controller-runtime's cache-backed client (which blocks a read until the informer has
//! synced), a lookup never answers from a cache that has not completed its initial list: it
//! waits for the sync at most [`SYNC_WAIT`], then reads live from the API server instead, so a
//! freshly started manager neither gives a wrong verdict nor holds admission up. Objects in a
//! namespace the cache does not watch (`--namespace`) are read live too. ConfigMaps are read
//! only now and then, so their informer starts on the first read (as controller-runtime starts
//! one on a first cache read) and does not hold `/readyz` back.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use k8s_openapi::api::storage::v1::StorageClass;
use kruise_api::apps::v1alpha1::PersistentPodState;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kruise_api::rspolicy::v1alpha1::PodDeletionFlowControl;
use kruise_runtime::cache::{Informer, SharedCache};
use kube::api::ListParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};

/// How long a lookup waits for a cache's initial list before reading live.
pub const SYNC_WAIT: Duration = Duration::from_secs(3);

/// The objects admission handlers look up: pods (`podsToDelete`), StorageClasses
/// (volumeClaimTemplates expansion), SidecarSets, ControllerRevisions and ConfigMaps (SidecarSet
/// validation).
#[derive(Clone)]
pub struct Lookup {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Cache {
        client: Client,
        cache: SharedCache,
        cache_namespace: Option<String>,
        pods: Informer<CachedPod>,
        storage_classes: Informer<StorageClass>,
        /// `None` when the manager serves no SidecarSet feature (its CRD may be absent).
        sidecar_sets: Option<Informer<SidecarSet>>,
        controller_revisions: Informer<ControllerRevision>,
        /// ControllerRevisions of the manager's namespace (SidecarSet revisions), cached even
        /// when the cache is restricted to another namespace.
        kruise_revisions: Informer<ControllerRevision>,
        namespaces: Informer<Namespace>,
        /// `None` when the manager serves no PodUnavailableBudget webhook (its CRD may be
        /// absent).
        budgets: Option<Informer<PodUnavailableBudget>>,
        /// `None` when the manager serves no pod-deletion flow control (its CRD may be
        /// absent).
        flow_controls: Option<Informer<PodDeletionFlowControl>>,
        /// `None` when the manager serves no PersistentPodState feature (its CRD may be
        /// absent).
        persistent_pod_states: Option<Informer<PersistentPodState>>,
    },
    Fixed(Arc<FixedCluster>),
}

/// The cluster a [`Lookup::fixed_cluster`] answers from: exactly these objects exist.
#[derive(Clone, Debug, Default)]
pub struct FixedCluster {
    /// Pods.
    pub pods: Vec<CachedPod>,
    /// StorageClasses.
    pub storage_classes: Vec<StorageClass>,
    /// SidecarSets (as the API server stores them, v1beta1).
    pub sidecar_sets: Vec<SidecarSet>,
    /// ControllerRevisions.
    pub controller_revisions: Vec<ControllerRevision>,
    /// ConfigMaps.
    pub config_maps: Vec<ConfigMap>,
    /// Namespaces.
    pub namespaces: Vec<Namespace>,
    /// PodUnavailableBudgets.
    pub budgets: Vec<PodUnavailableBudget>,
    /// ReplicaSets.
    pub replica_sets: Vec<ReplicaSet>,
    /// PodDeletionFlowControls.
    pub flow_controls: Vec<PodDeletionFlowControl>,
    /// PersistentPodStates.
    pub persistent_pod_states: Vec<PersistentPodState>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Objects of other kinds read by [`Lookup::list_lazy`] / [`Lookup::get_lazy`]
    /// (WorkloadSpreads), as JSON with `apiVersion` and `kind`.
    pub others: Vec<serde_json::Value>,
}

/// The objects of kind `K` in `namespace` among a fixed cluster's `others`.
fn others_of<K>(objects: &[serde_json::Value], namespace: &str) -> Vec<Arc<K>>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    objects
        .iter()
        .filter(|o| o["kind"].as_str() == Some(K::kind(&()).as_ref()))
        .filter(|o| o.pointer("/metadata/namespace").and_then(|n| n.as_str()) == Some(namespace))
        .filter_map(|o| serde_json::from_value(o.clone()).ok())
        .map(Arc::new)
        .collect()
}

impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookup").finish_non_exhaustive()
    }
}

async fn synced<K: kruise_runtime::cache::Cached>(informer: &Informer<K>) -> bool {
    kruise_runtime::cache::read_synced(informer, SYNC_WAIT).await
}

fn named<'a, K: kube::Resource>(
    objects: &'a [K],
    namespace: Option<&str>,
    name: &str,
) -> Option<&'a K> {
    objects.iter().find(|o| {
        let m = o.meta();
        m.namespace.as_deref() == namespace && m.name.as_deref() == Some(name)
    })
}

/// The objects of `objects` in `namespace`.
fn in_namespace<K: kube::Resource + Clone>(objects: &[K], namespace: &str) -> Vec<Arc<K>> {
    objects
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .cloned()
        .map(Arc::new)
        .collect()
}

/// The objects of `namespace` from `informer` once it has synced (when the cache watches that
/// namespace), else from a live list.
async fn list_in<K>(
    client: &Client,
    cache_namespace: &Option<String>,
    informer: &Informer<K>,
    namespace: &str,
) -> Result<Vec<Arc<K>>, String>
where
    K: kruise_runtime::cache::Cached + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    if Lookup::watched(cache_namespace, namespace) && synced(informer).await {
        return Ok(informer.in_namespace(namespace));
    }
    Api::<K>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map(|l| l.items.into_iter().map(Arc::new).collect())
        .map_err(|e| e.to_string())
}

/// Object `namespace/name` of a kind read only now and then: from its informer, started on this
/// first read (as controller-runtime starts one), once synced; else a live read.
async fn lazy_get<K>(
    client: &Client,
    cache: &SharedCache,
    cache_namespace: &Option<String>,
    namespace: &str,
    name: &str,
) -> Result<Option<Arc<K>>, String>
where
    K: kruise_runtime::cache::Cached + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    if Lookup::watched(cache_namespace, namespace) {
        let informer = cache.lazy_informer::<K>();
        if synced(&informer).await {
            return Ok(informer
                .store()
                .get(&ObjectRef::new(name).within(namespace)));
        }
    }
    Api::<K>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map(|o| o.map(Arc::new))
        .map_err(|e| e.to_string())
}

/// Whether `labels` hold every pair of `wanted` (a `matchLabels` selector).
fn has_labels(
    labels: Option<&BTreeMap<String, String>>,
    wanted: &BTreeMap<String, String>,
) -> bool {
    wanted
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

fn label_selector(wanted: &BTreeMap<String, String>) -> String {
    wanted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Lookup {
    /// Lookups through `cache` (its pod, StorageClass, SidecarSet and ControllerRevision
    /// informers start now, so they fill before the first request; `/readyz` waits for them; the
    /// ConfigMap informer starts on the first ConfigMap read); `client` reads live when a cache
    /// cannot answer. Without `sidecarsets` (a manager that serves no SidecarSet webhook: the
    /// CRD may not be installed) there is no SidecarSet informer and no SidecarSet exists for
    /// the handlers. Call inside a Tokio runtime.
    pub fn new(
        client: Client,
        cache: &SharedCache,
        cache_namespace: Option<String>,
        sidecarsets: bool,
    ) -> Self {
        Self {
            source: Source::Cache {
                client,
                cache: cache.clone(),
                cache_namespace,
                pods: cache.informer::<CachedPod>(),
                storage_classes: cache.cluster_informer::<StorageClass>(),
                sidecar_sets: sidecarsets.then(|| cache.cluster_informer::<SidecarSet>()),
                controller_revisions: cache.informer::<ControllerRevision>(),
                kruise_revisions: cache
                    .informer_in::<ControllerRevision>(&kruise_runtime::kruise_namespace()),
                namespaces: cache.cluster_informer::<Namespace>(),
                budgets: None,
                flow_controls: None,
                persistent_pod_states: None,
            },
        }
    }

    /// Also looks PodUnavailableBudgets up (their informer starts now and gates `/readyz`): for
    /// a manager serving the PodUnavailableBudget checks of the pod webhooks.
    pub fn with_budgets(mut self) -> Self {
        if let Source::Cache { cache, budgets, .. } = &mut self.source {
            *budgets = Some(cache.informer::<PodUnavailableBudget>());
        }
        self
    }

    /// Also looks PodDeletionFlowControls up (their informer starts now and gates `/readyz`):
    /// for a manager serving pod-deletion flow control in the pod webhooks.
    pub fn with_flow_controls(mut self) -> Self {
        if let Source::Cache {
            cache,
            flow_controls,
            ..
        } = &mut self.source
        {
            *flow_controls = Some(cache.cluster_informer::<PodDeletionFlowControl>());
        }
        self
    }

    /// Also looks PersistentPodStates up (their informer starts now and gates `/readyz`): for a
    /// manager serving PersistentPodState (validation and the pod webhook's injection).
    pub fn with_persistent_pod_states(mut self) -> Self {
        if let Source::Cache {
            cache,
            persistent_pod_states,
            ..
        } = &mut self.source
        {
            *persistent_pod_states = Some(cache.informer::<PersistentPodState>());
        }
        self
    }

    /// The PersistentPodStates of `namespace` (none when they are not looked up), in the
    /// order a namespaced list returns them (by name).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn persistent_pod_states_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PersistentPodState>>, String> {
        let mut out = match &self.source {
            Source::Fixed(c) => in_namespace(&c.persistent_pod_states, namespace),
            Source::Cache {
                client,
                cache_namespace,
                persistent_pod_states: Some(i),
                ..
            } => list_in(client, cache_namespace, i, namespace).await?,
            Source::Cache { .. } => Vec::new(),
        };
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(out)
    }

    /// The PersistentPodState whitelist of custom workload kinds, from ConfigMap
    /// `kruise-configuration` of the manager's namespace (`GetPPSWatchCustomWorkloadWhiteList`).
    ///
    /// # Errors
    /// The API error of a live read, or the whitelist's decode error, as text.
    pub async fn pps_whitelist(
        &self,
    ) -> Result<kruise_engines::persistentpodstate::WhiteList, String> {
        let cm = self
            .config_map(&kruise_runtime::kruise_namespace(), "kruise-configuration")
            .await?;
        kruise_engines::persistentpodstate::WhiteList::from_data(
            cm.as_ref().and_then(|c| c.data.as_ref()),
        )
    }

    /// Every PodDeletionFlowControl (none when they are not looked up).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn flow_controls(&self) -> Result<Vec<Arc<PodDeletionFlowControl>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(c.flow_controls.iter().cloned().map(Arc::new).collect());
            }
            Source::Cache {
                client,
                flow_controls: Some(i),
                ..
            } => (client, i),
            Source::Cache { .. } => return Ok(Vec::new()),
        };
        if synced(informer).await {
            return Ok(informer.store().state());
        }
        Api::<PodDeletionFlowControl>::all(client.clone())
            .list(&Default::default())
            .await
            .map(|l| l.items.into_iter().map(Arc::new).collect())
            .map_err(|e| e.to_string())
    }

    /// The API client live reads and writes go through (`None` for a fixed cluster).
    pub fn client(&self) -> Option<&Client> {
        match &self.source {
            Source::Cache { client, .. } => Some(client),
            Source::Fixed(_) => None,
        }
    }

    /// The PodUnavailableBudgets of `namespace` (none when budgets are not looked up).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn budgets_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<PodUnavailableBudget>>, String> {
        match &self.source {
            Source::Fixed(c) => Ok(in_namespace(&c.budgets, namespace)),
            Source::Cache {
                client,
                cache_namespace,
                budgets: Some(budgets),
                ..
            } => list_in(client, cache_namespace, budgets, namespace).await,
            Source::Cache { .. } => Ok(Vec::new()),
        }
    }

    /// PodUnavailableBudget `namespace/name`, or `None` if it does not exist (or budgets are
    /// not looked up).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn budget(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<PodUnavailableBudget>>, String> {
        Ok(self
            .budgets_in(namespace)
            .await?
            .into_iter()
            .find(|b| b.metadata.name.as_deref() == Some(name)))
    }

    /// The pods of `namespace`.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn pods_in(&self, namespace: &str) -> Result<Vec<Arc<CachedPod>>, String> {
        match &self.source {
            Source::Fixed(c) => Ok(in_namespace(&c.pods, namespace)),
            Source::Cache {
                client,
                cache_namespace,
                pods,
                ..
            } => list_in(client, cache_namespace, pods, namespace).await,
        }
    }

    /// The PersistentVolumeClaims of `namespace` (their informer starts on the first read).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn pvcs_in(
        &self,
        namespace: &str,
    ) -> Result<Vec<Arc<k8s_openapi::api::core::v1::PersistentVolumeClaim>>, String> {
        match &self.source {
            Source::Fixed(_) => Ok(Vec::new()),
            Source::Cache {
                client,
                cache,
                cache_namespace,
                ..
            } => {
                let informer = cache.lazy_informer();
                list_in(client, cache_namespace, &informer, namespace).await
            }
        }
    }

    /// ReplicaSet `namespace/name` (read only when a pod's owner is one: its informer starts on
    /// the first read), or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn replica_set(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<ReplicaSet>>, String> {
        match &self.source {
            Source::Fixed(c) => Ok(named(&c.replica_sets, Some(namespace), name)
                .cloned()
                .map(Arc::new)),
            Source::Cache {
                client,
                cache,
                cache_namespace,
                ..
            } => lazy_get(client, cache, cache_namespace, namespace, name).await,
        }
    }

    /// The objects of a kind read by few handlers (WorkloadSpreads) in `namespace`: from its
    /// informer, started on the first read, once synced; else a live list. None for a fixed
    /// cluster.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn list_lazy<K>(&self, namespace: &str) -> Result<Vec<Arc<K>>, String>
    where
        K: kruise_runtime::cache::Cached
            + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match &self.source {
            Source::Fixed(c) => Ok(others_of(&c.others, namespace)),
            Source::Cache {
                client,
                cache,
                cache_namespace,
                ..
            } => {
                let informer = cache.lazy_informer::<K>();
                list_in(client, cache_namespace, &informer, namespace).await
            }
        }
    }

    /// Object `namespace/name` of a kind read by few handlers (as [`Lookup::list_lazy`]).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn get_lazy<K>(&self, namespace: &str, name: &str) -> Result<Option<Arc<K>>, String>
    where
        K: kruise_runtime::cache::Cached
            + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match &self.source {
            Source::Fixed(c) => Ok(others_of::<K>(&c.others, namespace)
                .into_iter()
                .find(|o| kube::Resource::meta(o.as_ref()).name.as_deref() == Some(name))),
            Source::Cache {
                client,
                cache,
                cache_namespace,
                ..
            } => lazy_get(client, cache, cache_namespace, namespace, name).await,
        }
    }

    /// Lookups answered from a fixed set of pods and StorageClasses, as if the cluster held
    /// exactly these (the admission corpus replays with none: the cluster OpenKruise's verdicts
    /// were recorded on).
    pub fn fixed(pods: Vec<CachedPod>, storage_classes: Vec<StorageClass>) -> Self {
        Self::fixed_cluster(FixedCluster {
            pods,
            storage_classes,
            ..FixedCluster::default()
        })
    }

    /// Lookups answered from `cluster`, as if the cluster held exactly those objects (tests,
    /// and the admission corpus replays of a recording made with objects in the cluster).
    pub fn fixed_cluster(cluster: FixedCluster) -> Self {
        Self {
            source: Source::Fixed(Arc::new(cluster)),
        }
    }

    /// Whether the cache watches `namespace` (it may be restricted by `--namespace`).
    fn watched(cache_namespace: &Option<String>, namespace: &str) -> bool {
        cache_namespace.as_deref().is_none_or(|ns| ns == namespace)
    }

    /// Pod `namespace/name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Arc<CachedPod>>, String> {
        let (client, cache_namespace, pods) = match &self.source {
            Source::Fixed(c) => {
                return Ok(named(&c.pods, Some(namespace), name).cloned().map(Arc::new));
            }
            Source::Cache {
                client,
                cache_namespace,
                pods,
                ..
            } => (client, cache_namespace, pods),
        };
        if Self::watched(cache_namespace, namespace) && synced(pods).await {
            return Ok(pods.store().get(&ObjectRef::new(name).within(namespace)));
        }
        Api::<CachedPod>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .map(|p| p.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// Node `name`, or `None` if it does not exist: from the node informer (started on the first
    /// read and shared with the controllers that read nodes, as controller-runtime's cache) once
    /// synced, else a live read.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn node(&self, name: &str) -> Result<Option<Arc<Node>>, String> {
        let (client, cache) = match &self.source {
            Source::Fixed(c) => return Ok(named(&c.nodes, None, name).cloned().map(Arc::new)),
            Source::Cache { client, cache, .. } => (client, cache),
        };
        let informer = cache.lazy_cluster_informer::<Node>();
        if synced(&informer).await {
            return Ok(informer.store().get(&ObjectRef::new(name)));
        }
        Api::<Node>::all(client.clone())
            .get_opt(name)
            .await
            .map(|n| n.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// StorageClass `name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn storage_class(&self, name: &str) -> Result<Option<Arc<StorageClass>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(named(&c.storage_classes, None, name).cloned().map(Arc::new));
            }
            Source::Cache {
                client,
                storage_classes,
                ..
            } => (client, storage_classes),
        };
        if synced(informer).await {
            return Ok(informer.store().get(&ObjectRef::new(name)));
        }
        Api::<StorageClass>::all(client.clone())
            .get_opt(name)
            .await
            .map(|p| p.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// Every StorageClass.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn storage_classes(&self) -> Result<Vec<Arc<StorageClass>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(c.storage_classes.iter().cloned().map(Arc::new).collect());
            }
            Source::Cache {
                client,
                storage_classes,
                ..
            } => (client, storage_classes),
        };
        if synced(informer).await {
            return Ok(informer.store().state());
        }
        Api::<StorageClass>::all(client.clone())
            .list(&Default::default())
            .await
            .map(|l| l.items.into_iter().map(Arc::new).collect())
            .map_err(|e| e.to_string())
    }

    /// Every SidecarSet (v1beta1, the storage version), as OpenKruise's SidecarSet webhook lists
    /// them through its cache.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn sidecar_sets(&self) -> Result<Vec<Arc<SidecarSet>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed(c) => return Ok(c.sidecar_sets.iter().cloned().map(Arc::new).collect()),
            Source::Cache {
                client,
                sidecar_sets: Some(sidecar_sets),
                ..
            } => (client, sidecar_sets),
            Source::Cache { .. } => return Ok(Vec::new()),
        };
        if synced(informer).await {
            return Ok(informer.store().state());
        }
        Api::<SidecarSet>::all(client.clone())
            .list(&Default::default())
            .await
            .map(|l| l.items.into_iter().map(Arc::new).collect())
            .map_err(|e| e.to_string())
    }

    /// ControllerRevision `namespace/name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn controller_revision(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<ControllerRevision>>, String> {
        let (client, cache_namespace, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(named(&c.controller_revisions, Some(namespace), name)
                    .cloned()
                    .map(Arc::new));
            }
            Source::Cache {
                client,
                cache_namespace,
                controller_revisions,
                kruise_revisions,
                ..
            } => {
                if namespace == kruise_runtime::kruise_namespace() {
                    (client, &None, kruise_revisions)
                } else {
                    (client, cache_namespace, controller_revisions)
                }
            }
        };
        if Self::watched(cache_namespace, namespace) && synced(informer).await {
            return Ok(informer
                .store()
                .get(&ObjectRef::new(name).within(namespace)));
        }
        Api::<ControllerRevision>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .map(|p| p.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// The ControllerRevisions in `namespace` carrying every label of `labels` (a `matchLabels`
    /// selector).
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn controller_revisions(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Arc<ControllerRevision>>, String> {
        let (client, cache_namespace, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(c
                    .controller_revisions
                    .iter()
                    .filter(|r| {
                        r.metadata.namespace.as_deref() == Some(namespace)
                            && has_labels(r.metadata.labels.as_ref(), labels)
                    })
                    .cloned()
                    .map(Arc::new)
                    .collect());
            }
            Source::Cache {
                client,
                cache_namespace,
                controller_revisions,
                kruise_revisions,
                ..
            } => {
                if namespace == kruise_runtime::kruise_namespace() {
                    (client, &None, kruise_revisions)
                } else {
                    (client, cache_namespace, controller_revisions)
                }
            }
        };
        if Self::watched(cache_namespace, namespace) && synced(informer).await {
            return Ok(informer
                .in_namespace(namespace)
                .into_iter()
                .filter(|r| has_labels(r.metadata.labels.as_ref(), labels))
                .collect());
        }
        Api::<ControllerRevision>::namespaced(client.clone(), namespace)
            .list(&ListParams::default().labels(&label_selector(labels)))
            .await
            .map(|l| l.items.into_iter().map(Arc::new).collect())
            .map_err(|e| e.to_string())
    }

    /// Namespace `name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn namespace(&self, name: &str) -> Result<Option<Arc<Namespace>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed(c) => {
                return Ok(named(&c.namespaces, None, name).cloned().map(Arc::new));
            }
            Source::Cache {
                client, namespaces, ..
            } => (client, namespaces),
        };
        if synced(informer).await {
            return Ok(informer.store().get(&ObjectRef::new(name)));
        }
        Api::<Namespace>::all(client.clone())
            .get_opt(name)
            .await
            .map(|n| n.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// ConfigMap `namespace/name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<ConfigMap>>, String> {
        match &self.source {
            Source::Fixed(c) => Ok(named(&c.config_maps, Some(namespace), name)
                .cloned()
                .map(Arc::new)),
            Source::Cache {
                client,
                cache,
                cache_namespace,
                ..
            } => lazy_get(client, cache, cache_namespace, namespace, name).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fixed_cluster_answers_lookups() {
        let rev = |name: &str, ns: &str, labels: serde_json::Value| -> ControllerRevision {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": ns, "labels": labels}, "revision": 1
            }))
            .unwrap()
        };
        let lookup = Lookup::fixed_cluster(FixedCluster {
            controller_revisions: vec![
                rev(
                    "a",
                    "kruise-system",
                    serde_json::json!({"x": "1", "y": "2"}),
                ),
                rev("b", "kruise-system", serde_json::json!({"x": "1"})),
                rev("c", "other", serde_json::json!({"x": "1", "y": "2"})),
            ],
            config_maps: vec![
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"}
                }))
                .unwrap(),
            ],
            ..FixedCluster::default()
        });
        let wanted: BTreeMap<String, String> = [
            ("x".to_owned(), "1".to_owned()),
            ("y".to_owned(), "2".to_owned()),
        ]
        .into();
        let found = lookup
            .controller_revisions("kruise-system", &wanted)
            .await
            .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].metadata.name.as_deref(), Some("a"));
        assert!(
            lookup
                .controller_revision("other", "c")
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            lookup
                .controller_revision("other", "a")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            lookup
                .config_map("kruise-system", "kruise-configuration")
                .await
                .unwrap()
                .is_some()
        );
        assert!(lookup.sidecar_sets().await.unwrap().is_empty());
        assert_eq!(label_selector(&wanted), "x=1,y=2");
    }
}
