//! Reads of other objects by admission handlers, from the process's shared informer cache.
//!
//! As controller-runtime's cache-backed client (which blocks a read until the informer has
//! synced), a lookup never answers from a cache that has not completed its initial list: it
//! waits for the sync at most [`SYNC_WAIT`], then reads live from the API server instead, so a
//! freshly started manager neither gives a wrong verdict nor holds admission up. Objects in a
//! namespace the cache does not watch (`--namespace`) are read live too.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::StorageClass;
use kruise_runtime::cache::{Informer, SharedCache};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client};

/// How long a lookup waits for a cache's initial list before reading live.
pub const SYNC_WAIT: Duration = Duration::from_secs(3);

/// The objects admission handlers look up: pods (`podsToDelete`) and StorageClasses
/// (volumeClaimTemplates expansion).
#[derive(Clone)]
pub struct Lookup {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Cache {
        client: Client,
        cache_namespace: Option<String>,
        pods: Informer<Pod>,
        storage_classes: Informer<StorageClass>,
    },
    Fixed {
        pods: Arc<Vec<Arc<Pod>>>,
        storage_classes: Arc<Vec<Arc<StorageClass>>>,
    },
}

impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookup").finish_non_exhaustive()
    }
}

async fn synced<K: kruise_runtime::cache::Cached>(informer: &Informer<K>) -> bool {
    kruise_runtime::cache::read_synced(informer, SYNC_WAIT).await
}

impl Lookup {
    /// Lookups through `cache` (its pod and StorageClass informers start now, so they fill
    /// before the first request; `/readyz` waits for them); `client` reads live when a cache
    /// cannot answer. Call inside a Tokio runtime.
    pub fn new(client: Client, cache: &SharedCache, cache_namespace: Option<String>) -> Self {
        Self {
            source: Source::Cache {
                client,
                cache_namespace,
                pods: cache.informer::<Pod>(),
                storage_classes: cache.cluster_informer::<StorageClass>(),
            },
        }
    }

    /// Lookups answered from a fixed set of objects, as if the cluster held exactly these (the
    /// admission corpus replays with none: the cluster OpenKruise's verdicts were recorded on).
    pub fn fixed(pods: Vec<Pod>, storage_classes: Vec<StorageClass>) -> Self {
        Self {
            source: Source::Fixed {
                pods: Arc::new(pods.into_iter().map(Arc::new).collect()),
                storage_classes: Arc::new(storage_classes.into_iter().map(Arc::new).collect()),
            },
        }
    }

    /// Pod `namespace/name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Arc<Pod>>, String> {
        let (client, cache_namespace, pods) = match &self.source {
            Source::Fixed { pods, .. } => {
                return Ok(pods
                    .iter()
                    .find(|p| {
                        p.metadata.namespace.as_deref() == Some(namespace)
                            && p.metadata.name.as_deref() == Some(name)
                    })
                    .cloned());
            }
            Source::Cache {
                client,
                cache_namespace,
                pods,
                ..
            } => (client, cache_namespace, pods),
        };
        let watched = cache_namespace.as_deref().is_none_or(|ns| ns == namespace);
        if watched && synced(pods).await {
            return Ok(pods.store().get(&ObjectRef::new(name).within(namespace)));
        }
        Api::<Pod>::namespaced(client.clone(), namespace)
            .get_opt(name)
            .await
            .map(|p| p.map(Arc::new))
            .map_err(|e| e.to_string())
    }

    /// StorageClass `name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn storage_class(&self, name: &str) -> Result<Option<Arc<StorageClass>>, String> {
        let (client, informer) = match &self.source {
            Source::Fixed {
                storage_classes, ..
            } => {
                return Ok(storage_classes
                    .iter()
                    .find(|s| s.metadata.name.as_deref() == Some(name))
                    .cloned());
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
            Source::Fixed {
                storage_classes, ..
            } => return Ok(storage_classes.as_ref().clone()),
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
}
