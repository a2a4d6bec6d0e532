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
    client: Client,
    cache_namespace: Option<String>,
    pods: Informer<Pod>,
    storage_classes: Informer<StorageClass>,
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
            client,
            cache_namespace,
            pods: cache.informer::<Pod>(),
            storage_classes: cache.cluster_informer::<StorageClass>(),
        }
    }

    /// Pod `namespace/name`, or `None` if it does not exist.
    ///
    /// # Errors
    /// The API error of a live read, as text.
    pub async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Arc<Pod>>, String> {
        let watched = self
            .cache_namespace
            .as_deref()
            .is_none_or(|ns| ns == namespace);
        if watched && synced(&self.pods).await {
            return Ok(self
                .pods
                .store()
                .get(&ObjectRef::new(name).within(namespace)));
        }
        Api::<Pod>::namespaced(self.client.clone(), namespace)
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
        if synced(&self.storage_classes).await {
            return Ok(self.storage_classes.store().get(&ObjectRef::new(name)));
        }
        Api::<StorageClass>::all(self.client.clone())
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
        if synced(&self.storage_classes).await {
            return Ok(self.storage_classes.store().state());
        }
        Api::<StorageClass>::all(self.client.clone())
            .list(&Default::default())
            .await
            .map(|l| l.items.into_iter().map(Arc::new).collect())
            .map_err(|e| e.to_string())
    }
}
