//! Shaping what triggers a reconcile, for any controller: [`Coalescer`] merges bursts of
//! triggers for the same object into one per window, and [`unless_only_status_changed`] is the
//! watch predicate that drops updates of nothing but an object's status (a controller's own
//! status write) — controller-runtime's `GenerationChangedPredicate`, widened to the metadata
//! a reconcile reads. Both feed [`crate::runner::Triggers`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use tokio::time::Instant;

/// Per object: when its window ends and whether a trigger is due then.
type Slots<K> = HashMap<ObjectRef<K>, (Instant, bool)>;

/// Triggers → reconciles, at most one reconcile of an object per `window`: the first trigger
/// after a quiet `window` is sent at once; triggers within `window` of the last one sent are
/// merged into one, sent at the end of that window. For controllers whose reconcile reads
/// everything it needs from the cache (so one pass covers every event merged into it) and that
/// are triggered by events of many other objects — e.g. a SidecarSet by every pod it selects,
/// during a burst of pod creates: this bounds the passes (and the CPU they take from admission)
/// without delaying an isolated event. Cheap to clone (shared state); needs a tokio runtime.
pub struct Coalescer<K: Resource> {
    tx: UnboundedSender<ObjectRef<K>>,
    window: Duration,
    slots: Arc<Mutex<Slots<K>>>,
}

impl<K: Resource> Clone for Coalescer<K> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            window: self.window,
            slots: self.slots.clone(),
        }
    }
}

impl<K> Coalescer<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    /// A coalescer with its `window`, and the stream of references it sends (for
    /// [`crate::runner::Triggers::reconcile_on`]).
    pub fn new(window: Duration) -> (Self, UnboundedReceiver<ObjectRef<K>>) {
        let (tx, rx) = unbounded();
        let this = Self {
            tx,
            window,
            slots: Arc::default(),
        };
        (this, rx)
    }

    fn lock(&self) -> MutexGuard<'_, Slots<K>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks for a reconcile of `object` (sent now, or merged into the one due at the end of
    /// its window). Sending never blocks; after the receiver is dropped triggers are ignored.
    pub fn trigger(&self, object: ObjectRef<K>) {
        let now = Instant::now();
        let mut slots = self.lock();
        match slots.get_mut(&object) {
            Some((_, true)) => {}
            Some((until, due)) if now < *until => {
                *due = true;
                let until = *until;
                let this = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(until).await;
                    this.lock()
                        .insert(object.clone(), (Instant::now() + this.window, false));
                    let _ = this.tx.unbounded_send(object);
                });
            }
            _ => {
                slots.insert(object.clone(), (now + self.window, false));
                let _ = self.tx.unbounded_send(object);
            }
        }
    }
}

/// What a reconcile reads of an object besides its spec and status.
#[derive(PartialEq)]
struct Watched {
    uid: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    deleting: bool,
    finalizers: Option<Vec<String>>,
}

impl Watched {
    fn of<K: Resource>(o: &K) -> Self {
        let m = o.meta();
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

/// The objects of `objects` (an informer's applied objects) worth a reconcile: every object
/// when first seen, then only when more than its status changed — its `generation` (the spec),
/// uid (re-created under the same name), labels, annotations, finalizers or deletion. A
/// controller whose reconcile does not depend on the status it writes uses it so that its own
/// status write triggers no further pass. For objects with a status subresource (`generation`
/// moves with the spec only).
pub fn unless_only_status_changed<K: Resource + Send + Sync + 'static>(
    objects: impl Stream<Item = Arc<K>> + Send + 'static,
) -> impl Stream<Item = Arc<K>> + Send + 'static {
    let seen = Mutex::new(HashMap::<(Option<String>, String), Watched>::new());
    objects.filter(move |o| {
        let key = (
            o.meta().namespace.clone(),
            o.meta().name.clone().unwrap_or_default(),
        );
        let now = Watched::of(o.as_ref());
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = seen.get(&key) != Some(&now);
        if changed {
            seen.insert(key, now);
        }
        std::future::ready(changed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn deployment(uid: &str, generation: i64, annotation: &str, replicas: i32) -> Arc<Deployment> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "d", "namespace": "n", "uid": uid, "generation": generation,
                             "annotations": {"a": annotation}},
                "status": {"replicas": replicas},
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn status_writes_trigger_no_reconcile() {
        let objects = vec![
            deployment("u1", 1, "x", 0),
            // Status only: dropped.
            deployment("u1", 1, "x", 5),
            deployment("u1", 1, "x", 6),
            // New generation, annotation change, re-created under the same name: passed.
            deployment("u1", 2, "x", 6),
            deployment("u1", 2, "y", 6),
            deployment("u2", 2, "y", 6),
        ];
        let passed: Vec<(String, i64, String, i32)> =
            unless_only_status_changed(futures::stream::iter(objects))
                .map(|d| {
                    (
                        d.metadata.uid.clone().unwrap(),
                        d.metadata.generation.unwrap(),
                        d.metadata.annotations.as_ref().unwrap()["a"].clone(),
                        d.status.as_ref().unwrap().replicas.unwrap(),
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
    async fn triggers_are_merged_within_the_window() {
        let window = Duration::from_millis(300);
        let (t, mut rx) = Coalescer::<ConfigMap>::new(window);
        let r = |name: &str| ObjectRef::<ConfigMap>::new(name).within("n");
        // The first trigger is sent at once.
        t.trigger(r("a"));
        assert_eq!(rx.try_recv().unwrap().name, "a");
        // A burst within the window: one trigger, at its end.
        for _ in 0..10 {
            t.trigger(r("a"));
        }
        // Another object is not held back by the first one's window.
        t.trigger(r("b"));
        assert_eq!(rx.try_recv().unwrap().name, "b");
        assert!(
            rx.try_recv().is_err(),
            "nothing more before the window ends"
        );
        let merged = tokio::time::timeout(2 * window, rx.next()).await.unwrap();
        assert_eq!(merged.unwrap().name, "a");
        assert!(rx.try_recv().is_err(), "the burst gave one trigger");
        // Quiet for a window: the next trigger is sent at once again.
        tokio::time::sleep(window + Duration::from_millis(50)).await;
        t.trigger(r("a"));
        assert_eq!(rx.try_recv().unwrap().name, "a");
    }
}
