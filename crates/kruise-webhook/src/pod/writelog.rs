//! What the pod webhooks' status-spending checks (PodUnavailableBudgets, pod-deletion flow
//! control) share: the objects this process wrote last and one admission at a time per object
//! (OpenKruise's `GlobalCache` and `GlobalKeyedMutex` of `pkg/control/pubcontrol`).
//!
//! An admission reads the newer (by resourceVersion) of its own last write and the informer's
//! copy, so back-to-back admissions do not conflict on a cache that has not caught up.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The last writes and the per-object locks, by UID.
pub struct WriteLog<K> {
    last: Mutex<HashMap<String, Arc<K>>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for WriteLog<K> {
    fn default() -> Self {
        Self {
            last: Mutex::default(),
            locks: Mutex::default(),
        }
    }
}

fn uid<K: kube::Resource>(o: &K) -> String {
    o.meta().uid.clone().unwrap_or_default()
}

fn rv<K: kube::Resource>(o: &K) -> u64 {
    o.meta()
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl<K: kube::Resource> WriteLog<K> {
    /// The lock of object `o` (one admission at a time per object in this process).
    pub fn lock(&self, o: &K) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(uid(o)).or_default().clone()
    }

    /// The newer of this process's last write of the object and `informer`'s copy.
    pub fn newer(&self, informer: Arc<K>) -> Arc<K> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        match last.get(&uid(informer.as_ref())) {
            Some(mine) if rv(mine.as_ref()) > rv(informer.as_ref()) => mine.clone(),
            _ => informer,
        }
    }

    /// Remembers `written` (what the API server answered a write with).
    pub fn remember(&self, written: K) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.insert(uid(&written), Arc::new(written));
    }
}
