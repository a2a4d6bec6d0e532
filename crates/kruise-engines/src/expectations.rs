//! Expectations: what a controller has just written and must see in its cache before it trusts
//! the cache again (OpenKruise `pkg/util/expectations`).
//!
//! - [`ScaleExpectations`]: per controller key (`namespace/name`), the names of objects (pods,
//!   PVCs) the controller created or deleted and has not yet observed through its watch.
//! - [`ResourceVersionExpectations`]: per object UID, the minimum `resourceVersion` the cache must
//!   reach after the controller updated the object.
//! - [`UpdateExpectations`]: per controller key, the pods the controller moved to a revision and
//!   has not yet seen on it (Advanced StatefulSet / DaemonSet, SidecarSet).
//!
//! All are cheap to clone (shared state behind an `Arc<Mutex<_>>`) and safe to use from event
//! handlers and reconcilers at once. As in OpenKruise, the clock of an unsatisfied expectation
//! starts at the first check that finds it unsatisfied, and the caller decides what to do once it
//! has been unsatisfied for longer than the timeout (`--expectation-timeout`, default
//! [`DEFAULT_EXPECTATION_TIMEOUT`]); [`ExpectationCheck`] classifies a check result against a
//! timeout.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Default of `--expectation-timeout`: 5 minutes.
pub const DEFAULT_EXPECTATION_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What a check of an expectation means for a reconcile, given the timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectationCheck {
    /// Nothing is pending: go on.
    Satisfied,
    /// Still pending and within the timeout: skip this reconcile and requeue after
    /// `requeue_after` (= timeout − time unsatisfied), as OpenKruise does.
    Waiting {
        /// Time left until the timeout.
        requeue_after: Duration,
    },
    /// Pending for at least the timeout: the caller logs/counts a leak and either drops the
    /// expectation or keeps waiting (OpenKruise CloneSet: scale expectations are only dropped with
    /// the `ForceDeleteTimeoutExpectationGate` gate; a revision's resourceVersion expectation is
    /// dropped).
    TimedOut {
        /// How long it has been unsatisfied.
        unsatisfied_for: Duration,
    },
}

impl ExpectationCheck {
    /// Classifies the `(satisfied, unsatisfied_for)` result of a check against `timeout`.
    pub fn classify(satisfied: bool, unsatisfied_for: Duration, timeout: Duration) -> Self {
        if satisfied {
            ExpectationCheck::Satisfied
        } else if unsatisfied_for >= timeout {
            ExpectationCheck::TimedOut { unsatisfied_for }
        } else {
            ExpectationCheck::Waiting {
                requeue_after: timeout - unsatisfied_for,
            }
        }
    }

    /// True for [`ExpectationCheck::Satisfied`].
    pub fn is_satisfied(&self) -> bool {
        matches!(self, ExpectationCheck::Satisfied)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep using it.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Scale expectations

/// Kind of scale operation a name is expected for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScaleAction {
    /// The object was created and must appear in the cache.
    Create,
    /// The object was deleted and must disappear from the cache.
    Delete,
}

impl ScaleAction {
    /// OpenKruise's name of the action (`create` / `delete`), e.g. for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ScaleAction::Create => "create",
            ScaleAction::Delete => "delete",
        }
    }
}

#[derive(Debug, Default)]
struct ControllerScale {
    names: BTreeMap<ScaleAction, BTreeSet<String>>,
    first_unsatisfied: Option<Instant>,
}

/// Result of [`ScaleExpectations::satisfied_detail`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScaleSatisfaction {
    /// No name is pending.
    pub satisfied: bool,
    /// Time since the first check that found the key unsatisfied (zero when satisfied).
    pub unsatisfied_for: Duration,
    /// Pending names per action (empty when satisfied).
    pub pending: BTreeMap<ScaleAction, Vec<String>>,
}

/// Per-controller expected creations and deletions, by object name (OpenKruise
/// `ScaleExpectations`). Cloning shares the state.
#[derive(Clone, Debug, Default)]
pub struct ScaleExpectations {
    inner: Arc<Mutex<HashMap<String, ControllerScale>>>,
}

impl ScaleExpectations {
    /// Empty expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `name` was created/deleted for controller `key` and must be observed.
    pub fn expect(&self, key: &str, action: ScaleAction, name: &str) {
        let mut map = lock(&self.inner);
        map.entry(key.to_owned())
            .or_default()
            .names
            .entry(action)
            .or_default()
            .insert(name.to_owned());
    }

    /// Records that the cache now shows `name` created/deleted; once nothing is pending for `key`
    /// the key is forgotten (including its unsatisfied clock).
    pub fn observe(&self, key: &str, action: ScaleAction, name: &str) {
        let mut map = lock(&self.inner);
        let Some(entry) = map.get_mut(key) else {
            return;
        };
        let Some(names) = entry.names.get_mut(&action) else {
            return;
        };
        names.remove(name);
        if entry.names.values().all(BTreeSet::is_empty) {
            map.remove(key);
        }
    }

    /// `(satisfied, unsatisfied_for)` for `key` now; see [`Self::satisfied_detail_at`].
    pub fn satisfied(&self, key: &str) -> (bool, Duration) {
        let d = self.satisfied_detail_at(key, Instant::now());
        (d.satisfied, d.unsatisfied_for)
    }

    /// [`Self::satisfied_detail_at`] now.
    pub fn satisfied_detail(&self, key: &str) -> ScaleSatisfaction {
        self.satisfied_detail_at(key, Instant::now())
    }

    /// Whether every expected name of `key` has been observed. An unsatisfied key starts its
    /// clock at the first such check (later checks report the time since then); a satisfied key
    /// is forgotten.
    pub fn satisfied_detail_at(&self, key: &str, now: Instant) -> ScaleSatisfaction {
        let mut map = lock(&self.inner);
        let Some(entry) = map.get_mut(key) else {
            return ScaleSatisfaction {
                satisfied: true,
                ..ScaleSatisfaction::default()
            };
        };
        let pending: BTreeMap<ScaleAction, Vec<String>> = entry
            .names
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(action, names)| (*action, names.iter().cloned().collect()))
            .collect();
        if pending.is_empty() {
            map.remove(key);
            return ScaleSatisfaction {
                satisfied: true,
                ..ScaleSatisfaction::default()
            };
        }
        let since = *entry.first_unsatisfied.get_or_insert(now);
        ScaleSatisfaction {
            satisfied: false,
            unsatisfied_for: now.saturating_duration_since(since),
            pending,
        }
    }

    /// [`Self::satisfied_detail`] classified against `timeout`.
    pub fn check(&self, key: &str, timeout: Duration) -> ExpectationCheck {
        let (ok, for_) = self.satisfied(key);
        ExpectationCheck::classify(ok, for_, timeout)
    }

    /// Forgets everything about `key` (controller deleted, or a timed-out expectation dropped).
    pub fn delete(&self, key: &str) {
        lock(&self.inner).remove(key);
    }

    /// A copy of the pending names of `key`, `None` if nothing is recorded.
    pub fn get(&self, key: &str) -> Option<BTreeMap<ScaleAction, BTreeSet<String>>> {
        lock(&self.inner).get(key).map(|e| e.names.clone())
    }
}

// ---------------------------------------------------------------------------------------------
// Resource version expectations

/// OpenKruise's comparison of resource versions: true if `new` is at least `old`. An empty or
/// non-numeric `old` is always superseded; a non-numeric `new` never supersedes a numeric `old`.
/// Both are compared as unsigned 64-bit decimal numbers.
pub fn is_resource_version_newer(old: &str, new: &str) -> bool {
    if old.is_empty() {
        return true;
    }
    let Ok(old) = parse_go_uint(old) else {
        return true;
    };
    let Ok(new) = parse_go_uint(new) else {
        return false;
    };
    new >= old
}

/// Go `strconv.ParseUint(s, 10, 64)`: ASCII digits only (no sign), fitting in u64.
fn parse_go_uint(s: &str) -> Result<u64, ()> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    s.parse::<u64>().map_err(|_| ())
}

#[derive(Debug, Default)]
struct VersionEntry {
    version: String,
    first_unsatisfied: Option<Instant>,
}

/// Per-object (UID) minimum resourceVersion the cache must reach (OpenKruise
/// `ResourceVersionExpectation`). Cloning shares the state.
#[derive(Clone, Debug, Default)]
pub struct ResourceVersionExpectations {
    inner: Arc<Mutex<HashMap<String, VersionEntry>>>,
}

impl ResourceVersionExpectations {
    /// Empty expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Expects the cache to reach `resource_version` for `uid` (only raises the expected version,
    /// per [`is_resource_version_newer`]).
    pub fn expect(&self, uid: &str, resource_version: &str) {
        let mut map = lock(&self.inner);
        let entry = map.entry(uid.to_owned()).or_default();
        if is_resource_version_newer(&entry.version, resource_version) {
            entry.version = resource_version.to_owned();
        }
    }

    /// The cache showed `resource_version` for `uid`: forgets the expectation if that reaches the
    /// expected version. Call it with the object a decision reads (as [`Self::is_satisfied`]
    /// does), not from a cache event handler: a sync whose snapshot predates the event would
    /// then find the expectation gone and decide on the object as it was before the write.
    pub fn observe(&self, uid: &str, resource_version: &str) {
        let mut map = lock(&self.inner);
        if let Some(entry) = map.get(uid)
            && is_resource_version_newer(&entry.version, resource_version)
        {
            map.remove(uid);
        }
    }

    /// `(satisfied, unsatisfied_for)` for `uid` whose cached version is `resource_version`, now.
    pub fn is_satisfied(&self, uid: &str, resource_version: &str) -> (bool, Duration) {
        self.is_satisfied_at(uid, resource_version, Instant::now())
    }

    /// Whether the cached `resource_version` of `uid` reaches the expected one (then the
    /// expectation is forgotten). When not, the clock starts at the first such check and the
    /// time since then is returned.
    pub fn is_satisfied_at(
        &self,
        uid: &str,
        resource_version: &str,
        now: Instant,
    ) -> (bool, Duration) {
        let mut map = lock(&self.inner);
        let Some(entry) = map.get_mut(uid) else {
            return (true, Duration::ZERO);
        };
        if is_resource_version_newer(&entry.version, resource_version) {
            map.remove(uid);
            return (true, Duration::ZERO);
        }
        let since = *entry.first_unsatisfied.get_or_insert(now);
        (false, now.saturating_duration_since(since))
    }

    /// [`Self::is_satisfied`] classified against `timeout`.
    pub fn check(&self, uid: &str, resource_version: &str, timeout: Duration) -> ExpectationCheck {
        let (ok, for_) = self.is_satisfied(uid, resource_version);
        ExpectationCheck::classify(ok, for_, timeout)
    }

    /// Forgets the expectation of `uid`.
    pub fn delete(&self, uid: &str) {
        lock(&self.inner).remove(uid);
    }

    /// The expected version of `uid`, if any.
    pub fn expected(&self, uid: &str) -> Option<String> {
        lock(&self.inner).get(uid).map(|e| e.version.clone())
    }

    /// [`Self::expect`] with an object's `metadata.uid` / `metadata.resourceVersion` (missing
    /// values count as empty strings, as in Go).
    pub fn expect_object(&self, meta: &ObjectMeta) {
        self.expect(uid_of(meta), rv_of(meta));
    }

    /// [`Self::observe`] with an object's metadata.
    pub fn observe_object(&self, meta: &ObjectMeta) {
        self.observe(uid_of(meta), rv_of(meta));
    }

    /// [`Self::is_satisfied`] with an object's metadata.
    pub fn is_satisfied_object(&self, meta: &ObjectMeta) -> (bool, Duration) {
        self.is_satisfied(uid_of(meta), rv_of(meta))
    }

    /// [`Self::delete`] with an object's metadata.
    pub fn delete_object(&self, meta: &ObjectMeta) {
        self.delete(uid_of(meta));
    }
}

fn uid_of(meta: &ObjectMeta) -> &str {
    meta.uid.as_deref().unwrap_or_default()
}

fn rv_of(meta: &ObjectMeta) -> &str {
    meta.resource_version.as_deref().unwrap_or_default()
}

/// Per-controller pods updated to a revision and not yet observed on it (OpenKruise
/// `UpdateExpectations`). Only one revision is tracked per controller: expecting another
/// revision starts over. Cloning shares the state.
#[derive(Clone, Debug, Default)]
pub struct UpdateExpectations {
    inner: Arc<Mutex<HashMap<String, UpdateEntry>>>,
}

#[derive(Debug, Default)]
struct UpdateEntry {
    revision: String,
    updated: BTreeSet<String>,
    first_unsatisfied: Option<Instant>,
}

/// `namespace/name` of an object (OpenKruise `getKey`).
fn object_key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

impl UpdateExpectations {
    /// Empty expectations.
    pub fn new() -> Self {
        Self::default()
    }

    /// The controller `key` updated the object to `revision` (`ExpectUpdated`).
    pub fn expect_updated(&self, key: &str, revision: &str, meta: &ObjectMeta) {
        let mut map = lock(&self.inner);
        let entry = map.entry(key.to_owned()).or_default();
        if entry.revision != revision {
            *entry = UpdateEntry {
                revision: revision.to_owned(),
                ..UpdateEntry::default()
            };
        }
        entry.updated.insert(object_key(meta));
    }

    /// The cache shows the object; `on_revision` = whether it carries `revision` (the
    /// workload's revision adapter decides; OpenKruise `ObserveUpdated`). The expectation of
    /// the object is met when it is on the expected revision; the controller's entry is dropped
    /// once empty or when `revision` is not the one expected.
    pub fn observe_updated(&self, key: &str, revision: &str, meta: &ObjectMeta, on_revision: bool) {
        let mut map = lock(&self.inner);
        let Some(entry) = map.get_mut(key) else {
            return;
        };
        if entry.revision == revision && on_revision {
            entry.updated.remove(&object_key(meta));
        }
        if entry.revision != revision || entry.updated.is_empty() {
            map.remove(key);
        }
    }

    /// The object is gone: nothing to wait for (`DeleteObject`).
    pub fn delete_object(&self, key: &str, meta: &ObjectMeta) {
        if let Some(entry) = lock(&self.inner).get_mut(key) {
            entry.updated.remove(&object_key(meta));
        }
    }

    /// Whether every update of `key` to `revision` has been observed, for how long it has not
    /// been, and the objects still awaited (`SatisfiedExpectations`). Expectations for another
    /// revision count as satisfied.
    pub fn satisfied(&self, key: &str, revision: &str) -> (bool, Duration, Vec<String>) {
        self.satisfied_at(key, revision, Instant::now())
    }

    /// [`satisfied`](Self::satisfied) at `now` (for tests).
    pub fn satisfied_at(
        &self,
        key: &str,
        revision: &str,
        now: Instant,
    ) -> (bool, Duration, Vec<String>) {
        let mut map = lock(&self.inner);
        let Some(entry) = map.get_mut(key) else {
            return (true, Duration::ZERO, Vec::new());
        };
        if entry.revision != revision {
            entry.first_unsatisfied = None;
            return (true, Duration::ZERO, Vec::new());
        }
        if entry.updated.is_empty() {
            entry.first_unsatisfied = None;
            return (true, Duration::ZERO, Vec::new());
        }
        let since = *entry.first_unsatisfied.get_or_insert(now);
        (
            false,
            now.saturating_duration_since(since),
            entry.updated.iter().cloned().collect(),
        )
    }

    /// Forgets the controller `key` (`DeleteExpectations`).
    pub fn delete(&self, key: &str) {
        lock(&self.inner).remove(key);
    }
}

#[cfg(test)]
mod update_tests {
    use super::*;

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn updates_are_awaited_until_seen_on_the_revision() {
        let e = UpdateExpectations::new();
        let t0 = Instant::now();
        assert_eq!(
            e.satisfied_at("ns/sts", "r2", t0),
            (true, Duration::ZERO, vec![])
        );
        e.expect_updated("ns/sts", "r2", &meta("p0"));
        e.expect_updated("ns/sts", "r2", &meta("p1"));
        let (ok, _, pending) = e.satisfied_at("ns/sts", "r2", t0);
        assert!(!ok);
        assert_eq!(pending, ["ns/p0", "ns/p1"]);
        // Waiting time counts from the first unsatisfied check.
        let later = t0 + Duration::from_secs(3);
        assert_eq!(
            e.satisfied_at("ns/sts", "r2", later).1,
            Duration::from_secs(3)
        );
        // Seen, but not yet on the revision: still awaited.
        e.observe_updated("ns/sts", "r2", &meta("p0"), false);
        assert!(!e.satisfied("ns/sts", "r2").0);
        e.observe_updated("ns/sts", "r2", &meta("p0"), true);
        assert_eq!(e.satisfied("ns/sts", "r2").2, ["ns/p1"]);
        // Another revision's check is satisfied (only one revision is tracked).
        assert!(e.satisfied("ns/sts", "r3").0);
        e.delete_object("ns/sts", &meta("p1"));
        assert!(e.satisfied("ns/sts", "r2").0);
    }

    #[test]
    fn a_new_revision_starts_over_and_an_observation_of_another_revision_drops_the_entry() {
        let e = UpdateExpectations::new();
        e.expect_updated("k", "r1", &meta("a"));
        e.expect_updated("k", "r2", &meta("b"));
        assert_eq!(e.satisfied("k", "r2").2, ["ns/b"], "r1's pods forgotten");
        e.observe_updated("k", "r1", &meta("b"), true);
        assert!(
            e.satisfied("k", "r2").0,
            "an observation with another revision drops the entry"
        );
        e.expect_updated("k", "r2", &meta("c"));
        e.delete("k");
        assert!(e.satisfied("k", "r2").0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_expectations_lifecycle() {
        let e = ScaleExpectations::new();
        let t0 = Instant::now();
        assert!(e.satisfied_detail_at("ns/a", t0).satisfied);
        e.expect("ns/a", ScaleAction::Create, "p1");
        e.expect("ns/a", ScaleAction::Create, "p2");
        e.expect("ns/a", ScaleAction::Delete, "p0");
        let d = e.satisfied_detail_at("ns/a", t0);
        assert!(!d.satisfied);
        assert_eq!(d.unsatisfied_for, Duration::ZERO);
        assert_eq!(d.pending[&ScaleAction::Create], ["p1", "p2"]);
        assert_eq!(d.pending[&ScaleAction::Delete], ["p0"]);
        // clock started at first unsatisfied check
        let d = e.satisfied_detail_at("ns/a", t0 + Duration::from_secs(7));
        assert_eq!(d.unsatisfied_for, Duration::from_secs(7));
        // new expectations keep the clock
        e.expect("ns/a", ScaleAction::Create, "p3");
        assert_eq!(
            e.satisfied_detail_at("ns/a", t0 + Duration::from_secs(9))
                .unsatisfied_for,
            Duration::from_secs(9)
        );
        // observing unknown names / keys / actions is harmless
        e.observe("ns/a", ScaleAction::Delete, "zzz");
        e.observe("ns/x", ScaleAction::Create, "p1");
        e.observe("ns/a", ScaleAction::Create, "p1");
        e.observe("ns/a", ScaleAction::Create, "p2");
        e.observe("ns/a", ScaleAction::Create, "p3");
        assert!(!e.satisfied("ns/a").0);
        e.observe("ns/a", ScaleAction::Delete, "p0");
        // all observed: key forgotten, clock reset
        assert!(e.get("ns/a").is_none());
        assert_eq!(e.satisfied("ns/a"), (true, Duration::ZERO));
        e.expect("ns/a", ScaleAction::Create, "p4");
        assert_eq!(
            e.satisfied_detail_at("ns/a", t0 + Duration::from_secs(100))
                .unsatisfied_for,
            Duration::ZERO
        );
        e.delete("ns/a");
        assert!(e.satisfied("ns/a").0);
    }

    #[test]
    fn scale_expectations_are_per_key_and_shared_by_clones() {
        let e = ScaleExpectations::new();
        let c = e.clone();
        c.expect("ns/a", ScaleAction::Create, "p1");
        assert!(!e.satisfied("ns/a").0);
        assert!(e.satisfied("ns/b").0);
        assert_eq!(
            e.get("ns/a").unwrap()[&ScaleAction::Create],
            BTreeSet::from(["p1".to_owned()])
        );
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let e = e.clone();
                std::thread::spawn(move || {
                    for j in 0..100 {
                        let name = format!("p{i}-{j}");
                        e.expect("ns/t", ScaleAction::Create, &name);
                        e.observe("ns/t", ScaleAction::Create, &name);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(e.satisfied("ns/t").0);
    }

    #[test]
    fn check_classifies_against_timeout() {
        let t = Duration::from_secs(300);
        assert_eq!(
            ExpectationCheck::classify(true, Duration::from_secs(999), t),
            ExpectationCheck::Satisfied
        );
        assert_eq!(
            ExpectationCheck::classify(false, Duration::from_secs(100), t),
            ExpectationCheck::Waiting {
                requeue_after: Duration::from_secs(200)
            }
        );
        assert_eq!(
            ExpectationCheck::classify(false, t, t),
            ExpectationCheck::TimedOut { unsatisfied_for: t }
        );
        let e = ScaleExpectations::new();
        assert!(e.check("k", t).is_satisfied());
        e.expect("k", ScaleAction::Delete, "p");
        assert!(matches!(e.check("k", t), ExpectationCheck::Waiting { .. }));
        assert!(matches!(
            e.check("k", Duration::ZERO),
            ExpectationCheck::TimedOut { .. }
        ));
        assert_eq!(DEFAULT_EXPECTATION_TIMEOUT, Duration::from_secs(300));
        assert_eq!(ScaleAction::Create.as_str(), "create");
        assert_eq!(ScaleAction::Delete.as_str(), "delete");
    }

    #[test]
    fn resource_version_comparison() {
        let cases: &[(&str, &str, bool)] = &[
            ("", "5", true),
            ("", "", true),
            ("abc", "1", true),
            ("5", "5", true),
            ("5", "6", true),
            ("10", "9", false),
            ("10", "abc", false),
            ("10", "", false),
            ("9", "10", true),
            ("18446744073709551615", "18446744073709551615", true),
            ("18446744073709551616", "1", true),
            ("+5", "1", true),
            ("5", "+6", false),
        ];
        for (old, new, want) in cases {
            assert_eq!(is_resource_version_newer(old, new), *want, "{old} -> {new}");
        }
    }

    #[test]
    fn resource_version_expectations_lifecycle() {
        let e = ResourceVersionExpectations::new();
        let t0 = Instant::now();
        assert_eq!(e.is_satisfied_at("u1", "1", t0), (true, Duration::ZERO));
        e.expect("u1", "10");
        e.expect("u1", "8"); // never lowers
        assert_eq!(e.expected("u1").as_deref(), Some("10"));
        e.observe("u1", "9");
        assert_eq!(e.is_satisfied_at("u1", "9", t0), (false, Duration::ZERO));
        assert_eq!(
            e.is_satisfied_at("u1", "9", t0 + Duration::from_secs(3)),
            (false, Duration::from_secs(3))
        );
        e.expect("u1", "12");
        assert_eq!(e.expected("u1").as_deref(), Some("12"));
        // a satisfied check forgets the expectation
        assert_eq!(e.is_satisfied_at("u1", "12", t0), (true, Duration::ZERO));
        assert!(e.expected("u1").is_none());
        e.expect("u1", "20");
        e.observe("u1", "21");
        assert!(e.expected("u1").is_none());
        e.expect("u2", "5");
        e.delete("u2");
        assert!(e.is_satisfied("u2", "1").0);
        // unknown uid: observe is a no-op
        e.observe("u3", "1");
        assert!(e.expected("u3").is_none());
    }

    #[test]
    fn resource_version_object_helpers_and_check() {
        let e = ResourceVersionExpectations::new();
        let meta = ObjectMeta {
            uid: Some("u".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        };
        e.expect_object(&meta);
        let old = ObjectMeta {
            resource_version: Some("6".into()),
            ..meta.clone()
        };
        e.observe_object(&old);
        assert!(!e.is_satisfied_object(&old).0);
        assert!(matches!(
            e.check("u", "6", Duration::from_secs(60)),
            ExpectationCheck::Waiting { .. }
        ));
        assert!(matches!(
            e.check("u", "6", Duration::ZERO),
            ExpectationCheck::TimedOut { .. }
        ));
        e.observe_object(&meta);
        assert!(e.is_satisfied_object(&old).0);
        e.expect_object(&meta);
        e.delete_object(&meta);
        assert!(e.expected("u").is_none());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Any sequence of expect/observe on a few keys: a key is satisfied exactly when every
            /// name expected since it was last forgotten has been observed.
            #[test]
            fn scale_matches_a_set_model(ops in prop::collection::vec((0u8..2, any::<bool>(), any::<bool>(), 0u8..4), 0..40)) {
                let e = ScaleExpectations::new();
                let mut model: HashMap<String, BTreeSet<(ScaleAction, String)>> = HashMap::new();
                for (key, expect, create, name) in ops {
                    let key = format!("ns/k{key}");
                    let action = if create { ScaleAction::Create } else { ScaleAction::Delete };
                    let name = format!("p{name}");
                    let entry = model.entry(key.clone()).or_default();
                    if expect {
                        e.expect(&key, action, &name);
                        entry.insert((action, name));
                    } else {
                        e.observe(&key, action, &name);
                        entry.remove(&(action, name));
                    }
                    for (k, pending) in &model {
                        prop_assert_eq!(e.satisfied(k).0, pending.is_empty());
                    }
                }
            }

            /// Resource versions: satisfied exactly when the observed version reaches the highest
            /// expected one (numeric versions).
            #[test]
            fn resource_versions_match_a_max_model(ops in prop::collection::vec((any::<bool>(), 1u64..50), 0..30)) {
                let e = ResourceVersionExpectations::new();
                let mut expected: Option<u64> = None;
                for (expect, rv) in ops {
                    let rv_s = rv.to_string();
                    if expect {
                        e.expect("u", &rv_s);
                        expected = Some(expected.map_or(rv, |x| x.max(rv)));
                    } else {
                        let (ok, _) = e.is_satisfied("u", &rv_s);
                        prop_assert_eq!(ok, expected.is_none_or(|x| rv >= x));
                        if ok {
                            expected = None;
                        }
                    }
                }
            }
        }
    }
}
