//! Kubernetes Events for the manager's controllers.
//!
//! [`EventRecorder`] wraps [`kube::runtime::events::Recorder`] (events.k8s.io/v1, with
//! client-side series de-duplication) reporting as component [`COMPONENT`]. Like client-go's
//! recorder, publishing is best effort: [`EventRecorder::normal`] and
//! [`EventRecorder::warning`] log a failure instead of returning it, so a reconcile never fails
//! because an Event could not be written. [`EventRecorder::publish`] returns the error for
//! callers that care.
//!
//! Like client-go's `EventCorrelator` (which OpenKruise's recorder goes through), events are
//! rate limited per source and object before they are written ([`spam_allowed`]): 25 at once per
//! (reporting controller, instance, regarding object), then one every 5 minutes; the others are
//! dropped (logged at debug level). A 1,000-pod in-place rollout of one CloneSet thus writes 25
//! `SuccessfulUpdatePodInPlace` Events, as OpenKruise does, instead of 1,000.
//!
//! The reason constants are those OpenKruise's CloneSet controller emits (v1.9.0), with the event
//! type it uses for each noted on the constant.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};

use std::num::NonZeroU32;
use std::sync::OnceLock;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// client-go's `defaultSpamBurst`: events of one source about one object let through at once.
pub const SPAM_BURST: u32 = 25;
/// client-go's `defaultSpamQPS` (1/300): one more event per source and object every 5 minutes.
pub const SPAM_REFILL: Duration = Duration::from_secs(300);

type SpamKey = (String, String, String, String, String, String, String);

/// client-go's `EventSourceObjectSpamFilter` with its defaults (burst [`SPAM_BURST`], refill
/// [`SPAM_REFILL`]), keyed like its `getSpamKey` (source and involved object), for the whole
/// process (controller-runtime has one recorder provider per manager): whether an event of
/// `reporter` about `regarding` may be written now.
pub fn spam_allowed(reporter: &Reporter, regarding: &ObjectReference) -> bool {
    static LIMITER: OnceLock<DefaultKeyedRateLimiter<SpamKey>> = OnceLock::new();
    let limiter = LIMITER.get_or_init(|| {
        RateLimiter::keyed(
            Quota::with_period(SPAM_REFILL)
                .expect("non-zero period")
                .allow_burst(NonZeroU32::new(SPAM_BURST).expect("non-zero burst")),
        )
    });
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    let key = (
        reporter.controller.clone(),
        s(&reporter.instance),
        s(&regarding.kind),
        s(&regarding.namespace),
        s(&regarding.name),
        s(&regarding.uid),
        s(&regarding.api_version),
    );
    limiter.check_key(&key).is_ok()
}

/// The reporting component of every event (`reportingController`).
pub const COMPONENT: &str = "kruise-manager";

/// Maximum size of an event note in bytes (longer notes are cut at a character boundary).
pub const MAX_NOTE_BYTES: usize = 1024;

/// Maximum size of an event reason/action in bytes.
pub const MAX_REASON_BYTES: usize = 128;

/// Normal: a pod was created (`succeed to create pod <name>`).
pub const SUCCESSFUL_CREATE: &str = "SuccessfulCreate";
/// Warning: creating a pod or PVC failed.
pub const FAILED_CREATE: &str = "FailedCreate";
/// Normal: a pod was deleted (`succeed to delete pod <name>`).
pub const SUCCESSFUL_DELETE: &str = "SuccessfulDelete";
/// Warning: deleting a pod or PVC failed.
pub const FAILED_DELETE: &str = "FailedDelete";
/// Warning: updating a pod or PVC failed.
pub const FAILED_UPDATE: &str = "FailedUpdate";
/// Normal: a pod's identity or storage was repaired (Advanced StatefulSet).
pub const SUCCESSFUL_UPDATE: &str = "SuccessfulUpdate";
/// Normal: a pod was updated in place to the update revision.
pub const SUCCESSFUL_UPDATE_POD_IN_PLACE: &str = "SuccessfulUpdatePodInPlace";
/// Warning: an in-place pod update failed.
pub const FAILED_UPDATE_POD_IN_PLACE: &str = "FailedUpdatePodInPlace";
/// Normal: a pod was deleted to be recreated at the update revision.
pub const SUCCESSFUL_UPDATE_POD_RECREATE: &str = "SuccessfulUpdatePodReCreate";
/// Warning: deleting a pod for recreate-update failed.
pub const FAILED_UPDATE_POD_RECREATE: &str = "FailedUpdatePodReCreate";
/// Warning: scale-up was held back by `scaleStrategy.maxUnavailable`.
pub const SCALE_UP_LIMITED: &str = "ScaleUpLimited";
/// Normal: an ImagePullJob was created to pre-download the update revision's image.
pub const CREATED_IMAGE_PULL_JOB: &str = "CreatedImagePullJob";
/// Normal (sic, as upstream): creating an ImagePullJob failed.
pub const FAILED_CREATE_IMAGE_PULL_JOB: &str = "FailedCreateImagePullJob";

/// Publishes Events as [`COMPONENT`]. Cheap to clone (shares the client and dedup cache).
#[derive(Clone)]
pub struct EventRecorder {
    inner: Recorder,
    reporter: Reporter,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.reporter)
            .finish()
    }
}

/// The reference of `obj` to attach an event to (kind, apiVersion, namespace, name, uid, …).
pub fn object_ref<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    obj.object_ref(&())
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Builds the event published for (`type_`, `reason`, `note`): `action` = `reason`, reason cut to
/// [`MAX_REASON_BYTES`], note cut to [`MAX_NOTE_BYTES`].
pub fn build_event(type_: EventType, reason: &str, note: &str) -> Event {
    let reason = truncate(reason, MAX_REASON_BYTES).to_string();
    Event {
        type_,
        action: reason.clone(),
        reason,
        note: Some(truncate(note, MAX_NOTE_BYTES).to_string()),
        secondary: None,
    }
}

impl EventRecorder {
    /// A recorder reporting as [`COMPONENT`]; the instance is `$POD_NAME`, else the host name.
    pub fn new(client: Client) -> Self {
        let instance = std::env::var("POD_NAME").ok().or_else(|| {
            hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .filter(|h| !h.is_empty())
        });
        Self::with_instance(client, instance)
    }

    /// A recorder reporting as [`COMPONENT`] with an explicit `reportingInstance`.
    pub fn with_instance(client: Client, instance: Option<String>) -> Self {
        Self::for_component(client, COMPONENT, instance)
    }

    /// A recorder reporting as `component` (e.g. kruise-daemon's
    /// `kruise-daemon-containermeta`) from `instance` (e.g. the node name).
    pub fn for_component(client: Client, component: &str, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: component.to_string(),
            instance,
        };
        Self {
            inner: Recorder::new(client, reporter.clone()),
            reporter,
        }
    }

    /// The reporter identity used for every event.
    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// Publishes one event about `regarding`.
    ///
    /// # Errors
    /// The API error when the Event (or its series update) is rejected.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
    ) -> Result<(), kube::Error> {
        if !spam_allowed(&self.reporter, regarding) {
            tracing::debug!(
                kind = regarding.kind.as_deref().unwrap_or_default(),
                namespace = regarding.namespace.as_deref().unwrap_or_default(),
                name = regarding.name.as_deref().unwrap_or_default(),
                reason,
                "event dropped by the spam filter (client-go's: 25 per object, then 1 per 5 minutes)"
            );
            return Ok(());
        }
        self.inner
            .publish(&build_event(type_, reason, note), regarding)
            .await
    }

    /// Publishes a `Normal` event; failures are logged, not returned.
    pub async fn normal(&self, regarding: &ObjectReference, reason: &str, note: &str) {
        self.best_effort(regarding, EventType::Normal, reason, note)
            .await;
    }

    /// Publishes a `Warning` event; failures are logged, not returned.
    pub async fn warning(&self, regarding: &ObjectReference, reason: &str, note: &str) {
        self.best_effort(regarding, EventType::Warning, reason, note)
            .await;
    }

    async fn best_effort(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
    ) {
        if let Err(err) = self.publish(regarding, type_, reason, note).await {
            tracing::warn!(
                kind = regarding.kind.as_deref().unwrap_or_default(),
                namespace = regarding.namespace.as_deref().unwrap_or_default(),
                name = regarding.name.as_deref().unwrap_or_default(),
                reason,
                error = %err,
                "failed to record event"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_event_truncates() {
        let long = "é".repeat(600); // 1200 bytes
        let ev = build_event(EventType::Warning, FAILED_CREATE, &long);
        let note = ev.note.unwrap();
        assert!(note.len() <= MAX_NOTE_BYTES);
        assert_eq!(note.len(), 1024);
        assert_eq!(ev.reason, "FailedCreate");
        assert_eq!(ev.action, "FailedCreate");
        assert_eq!(ev.type_, EventType::Warning);

        let ev = build_event(EventType::Normal, &"R".repeat(200), "x");
        assert_eq!(ev.reason.len(), MAX_REASON_BYTES);
        assert_eq!(ev.note.as_deref(), Some("x"));
    }

    #[test]
    fn spam_filter_lets_25_through_per_object_as_client_go() {
        let reporter = Reporter {
            controller: COMPONENT.to_string(),
            instance: Some("spam-test".into()),
        };
        let obj = |name: &str| ObjectReference {
            kind: Some("CloneSet".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        };
        let allowed = (0..100)
            .filter(|_| spam_allowed(&reporter, &obj("a")))
            .count();
        assert_eq!(allowed, SPAM_BURST as usize);
        // Another object has its own budget.
        assert!(spam_allowed(&reporter, &obj("b")));
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("", 0), "");
    }
}
