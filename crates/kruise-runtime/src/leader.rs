//! Leader election on a `coordination.k8s.io/v1` Lease, following client-go's `leaderelection`
//! semantics (the lock controller-runtime, and therefore OpenKruise, uses).
//!
//! Timing defaults are OpenKruise's: lease duration 15s, renew deadline 10s, retry period 2s.
//!
//! - **Acquire**: every `retry_period` (plus up to 120% jitter) the elector reads the Lease. It
//!   takes the Lease over when it does not exist (create), when its holder is empty (released),
//!   or when the holder's record has not changed for the record's `leaseDurationSeconds` as
//!   measured on *this* process's clock since the record was last seen to change. A takeover sets
//!   `acquireTime` and increments `leaseTransitions`. Writes carry the `resourceVersion` read, so
//!   two candidates racing get one conflict, retried next period.
//! - **Renew**: every `retry_period` the leader updates `renewTime`. A renewal is retried every
//!   `retry_period` until `renew_deadline`; if it cannot succeed by then, leadership is lost and
//!   [`LeaderElector::run`] returns [`Error::LeadershipLost`] (the manager then exits non-zero,
//!   like OpenKruise). Renewals first try the cached Lease (fast path); when that write fails the
//!   Lease is re-read (slow path, counted in `leader_election_slowpath_total`).
//! - **Release**: when the `release` token given to [`LeaderElector::run`] is cancelled while
//!   leading, the Lease is rewritten with an empty holder and `leaseDurationSeconds: 1` (client-go's
//!   `ReleaseOnCancel`), so a standby takes over at its next retry.
//!
//! Whether this process leads is published on a [`tokio::sync::watch`] channel
//! ([`LeaderElector::subscribe`]) and in `kruise_manager_is_leader`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use rand::Rng;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// Errors of leader election.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Lease could not be renewed within the renew deadline; controllers must stop.
    #[error("leader election lost: lease {namespace}/{name} not renewed within {deadline:?}")]
    LeadershipLost {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// The renew deadline that passed.
        deadline: Duration,
    },
    /// The configuration is unusable.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
    /// An API call failed.
    #[error("lease API error: {0}")]
    Kube(#[from] kube::Error),
}

/// Leader election settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease (`--leader-election-namespace`, default `kruise-system`).
    pub namespace: String,
    /// Name of the Lease (`--leader-election-id`, default `kruise-manager`).
    pub name: String,
    /// This candidate's identity, written as `holderIdentity` (see [`default_identity`]).
    pub identity: String,
    /// How long a non-leader waits after the last observed change before taking over (15s).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before giving up (10s).
    pub renew_deadline: Duration,
    /// Interval between acquire/renew attempts (2s).
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// OpenKruise's defaults for `namespace`/`name` with a fresh [`default_identity`].
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks client-go's constraints: `lease_duration > renew_deadline > retry_period * 1.2`,
    /// all positive, non-empty namespace, name and identity.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the violated constraint.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::InvalidConfig(m.to_string()));
        if self.namespace.is_empty() || self.name.is_empty() {
            return bad("lease namespace and name must not be empty");
        }
        if self.identity.is_empty() {
            return bad("identity must not be empty");
        }
        if self.retry_period.is_zero() {
            return bad("retry period must be positive");
        }
        if self.lease_duration <= self.renew_deadline {
            return bad("lease duration must be greater than renew deadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(1.2) {
            return bad("renew deadline must be greater than retry period * 1.2");
        }
        Ok(())
    }
}

/// `<hostname>_<random uuid v4>`, the identity controller-runtime gives a manager.
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kruise-manager".to_string());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

fn secs_i32(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX).max(1)
}

/// What a candidate should do with the current Lease record (pure decision of one attempt).
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Someone else holds a valid lease: do nothing.
    Wait,
    /// Write this spec (renewal when we hold it, takeover otherwise).
    Write(LeaseSpec),
}

/// Decides one acquire/renew attempt.
///
/// `current` is the Lease's spec, `identity` ours, `record_valid` whether the current holder's
/// record is still within its lease duration as observed locally, `now` the timestamp to write,
/// `lease_duration` the duration we advertise.
pub fn decide(
    current: &LeaseSpec,
    identity: &str,
    record_valid: bool,
    now: Timestamp,
    lease_duration: Duration,
) -> Decision {
    let holder = current.holder_identity.as_deref().unwrap_or("");
    let ours = holder == identity;
    if !holder.is_empty() && !ours && record_valid {
        return Decision::Wait;
    }
    let transitions = current.lease_transitions.unwrap_or(0);
    let (acquire_time, lease_transitions) = if ours {
        (
            current.acquire_time.clone().or(Some(MicroTime(now))),
            transitions,
        )
    } else {
        (Some(MicroTime(now)), transitions.saturating_add(1))
    };
    Decision::Write(LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(secs_i32(lease_duration)),
        acquire_time,
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(lease_transitions),
        ..LeaseSpec::default()
    })
}

/// The spec written on release: empty holder, `leaseDurationSeconds: 1`, transitions kept.
pub fn released_spec(current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: current.lease_transitions,
        ..LeaseSpec::default()
    }
}

/// A Lease-based leader elector. See the module docs.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    metrics: Option<Arc<Metrics>>,
    tx: watch::Sender<bool>,
    /// Last Lease we read or wrote.
    cached: Option<Lease>,
    /// The holder record last observed and when it was first seen (local clock).
    observed: Option<(LeaseSpec, Instant)>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("leading", &*self.tx.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `config.namespace/config.name`, not yet leading.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (see [`LeaderElectionConfig::validate`]).
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, Error> {
        config.validate()?;
        let (tx, _) = watch::channel(false);
        Ok(Self {
            api: Api::namespaced(client, &config.namespace),
            config,
            metrics: None,
            tx,
            cached: None,
            observed: None,
        })
    }

    /// Reports leadership in `kruise_manager_is_leader` and slow paths in
    /// `leader_election_slowpath_total`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The settings in use.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// A receiver that reads `true` while this process leads.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    /// Whether this process currently leads.
    pub fn is_leader(&self) -> bool {
        *self.tx.borrow()
    }

    fn set_leading(&self, leading: bool) {
        self.tx.send_replace(leading);
        if let Some(m) = &self.metrics {
            m.set_leader(leading);
        }
    }

    /// Campaigns, leads, and renews until `release` is cancelled or leadership is lost.
    ///
    /// Returns `Ok(())` after `release` is cancelled (having released the Lease when leading),
    /// or [`Error::LeadershipLost`] when a renewal missed the renew deadline.
    ///
    /// # Errors
    /// [`Error::LeadershipLost`]; API errors during campaigning are logged and retried.
    pub async fn run(mut self, release: CancellationToken) -> Result<(), Error> {
        // Acquire.
        loop {
            if release.is_cancelled() {
                return Ok(());
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(err) => tracing::warn!(error = %err, "error acquiring leader lease"),
            }
            let jitter = self
                .config
                .retry_period
                .mul_f64(rand::rng().random_range(0.0..1.2));
            tokio::select! {
                () = release.cancelled() => return Ok(()),
                () = tokio::time::sleep(self.config.retry_period + jitter) => {}
            }
        }
        tracing::info!(
            lease = %format!("{}/{}", self.config.namespace, self.config.name),
            identity = %self.config.identity,
            "successfully acquired lease"
        );
        self.set_leading(true);

        // Renew.
        loop {
            tokio::select! {
                () = release.cancelled() => {
                    if let Err(err) = self.release().await {
                        tracing::warn!(error = %err, "failed to release leader lease");
                    }
                    return Ok(());
                }
                () = tokio::time::sleep(self.config.retry_period) => {}
            }
            let deadline = self.config.renew_deadline;
            let retry = self.config.retry_period;
            let renewed = tokio::time::timeout(deadline, async {
                loop {
                    match self.try_acquire_or_renew().await {
                        Ok(true) => return,
                        Ok(false) => {}
                        Err(err) => tracing::warn!(error = %err, "error renewing leader lease"),
                    }
                    tokio::time::sleep(retry).await;
                }
            })
            .await;
            if renewed.is_err() || !self.holds_cached() {
                self.set_leading(false);
                tracing::error!(
                    lease = %format!("{}/{}", self.config.namespace, self.config.name),
                    "failed to renew lease, leadership lost"
                );
                return Err(Error::LeadershipLost {
                    namespace: self.config.namespace.clone(),
                    name: self.config.name.clone(),
                    deadline,
                });
            }
        }
    }

    fn holds_cached(&self) -> bool {
        self.cached
            .as_ref()
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.config.identity.as_str())
    }

    fn record_valid(&self, spec: &LeaseSpec) -> bool {
        let Some((_, seen)) = &self.observed else {
            return false;
        };
        let secs = spec
            .lease_duration_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(self.config.lease_duration);
        seen.elapsed() < secs
    }

    fn observe(&mut self, spec: &LeaseSpec) {
        let changed = self.observed.as_ref().is_none_or(|(s, _)| s != spec);
        if changed {
            self.observed = Some((spec.clone(), Instant::now()));
        }
    }

    /// One acquire-or-renew attempt. Returns whether this process holds the Lease afterwards.
    ///
    /// # Errors
    /// API errors other than conflicts/already-exists (which yield `Ok(false)`).
    pub async fn try_acquire_or_renew(&mut self) -> Result<bool, Error> {
        let now = Timestamp::now();

        // Fast path: we lead and have the Lease we last wrote.
        if self.is_leader()
            && let Some(mut lease) = self.cached.clone()
            && self.holds_cached()
        {
            let current = lease.spec.clone().unwrap_or_default();
            if let Decision::Write(spec) = decide(
                &current,
                &self.config.identity,
                true,
                now,
                self.config.lease_duration,
            ) {
                lease.spec = Some(spec);
                match self
                    .api
                    .replace(&self.config.name, &PostParams::default(), &lease)
                    .await
                {
                    Ok(written) => {
                        if let Some(s) = &written.spec {
                            self.observe(s);
                        }
                        self.cached = Some(written);
                        return Ok(true);
                    }
                    Err(err) => {
                        tracing::debug!(error = %err, "lease fast-path renewal failed");
                        if let Some(m) = &self.metrics {
                            m.leader_slowpath(&self.config.name);
                        }
                    }
                }
            }
        }

        // Slow path: read the Lease.
        let existing = match self.api.get_opt(&self.config.name).await? {
            Some(lease) => lease,
            None => {
                let spec = match decide(
                    &LeaseSpec::default(),
                    &self.config.identity,
                    false,
                    now,
                    self.config.lease_duration,
                ) {
                    Decision::Write(spec) => spec,
                    Decision::Wait => return Ok(false),
                };
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(created) => {
                        if let Some(s) = &created.spec {
                            self.observe(s);
                        }
                        self.cached = Some(created);
                        Ok(true)
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                    Err(e) => Err(e.into()),
                };
            }
        };
        let current = existing.spec.clone().unwrap_or_default();
        self.observe(&current);
        self.cached = Some(existing.clone());
        let valid = self.record_valid(&current);
        let spec = match decide(
            &current,
            &self.config.identity,
            valid,
            now,
            self.config.lease_duration,
        ) {
            Decision::Wait => return Ok(false),
            Decision::Write(spec) => spec,
        };
        let mut lease = existing;
        lease.spec = Some(spec);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                if let Some(s) = &written.spec {
                    self.observe(s);
                }
                self.cached = Some(written);
                Ok(true)
            }
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives the Lease up if this process holds it (empty holder, duration 1s) and stops
    /// reporting leadership. Returns whether a release was written.
    ///
    /// # Errors
    /// API errors of the read or the write.
    pub async fn release(&mut self) -> Result<bool, Error> {
        self.set_leading(false);
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            return Ok(false);
        };
        let current = lease.spec.clone().unwrap_or_default();
        if current.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(false);
        }
        lease.spec = Some(released_spec(&current, Timestamp::now()));
        let written = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await?;
        self.cached = Some(written);
        tracing::info!(
            lease = %format!("{}/{}", self.config.namespace, self.config.name),
            "released leader lease"
        );
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn held_by(holder: &str, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(ts(100))),
            renew_time: Some(MicroTime(ts(110))),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn decide_table() {
        let d = Duration::from_secs(15);
        let now = ts(200);
        // Fresh lease: take it, transitions 0 -> 1.
        let Decision::Write(s) = decide(&LeaseSpec::default(), "me", false, now, d) else {
            panic!()
        };
        assert_eq!(s.holder_identity.as_deref(), Some("me"));
        assert_eq!(s.lease_transitions, Some(1));
        assert_eq!(s.lease_duration_seconds, Some(15));
        assert_eq!(s.acquire_time, Some(MicroTime(now)));

        // Other holder, valid: wait.
        assert_eq!(
            decide(&held_by("other", 3), "me", true, now, d),
            Decision::Wait
        );
        // Other holder, expired: take over.
        let Decision::Write(s) = decide(&held_by("other", 3), "me", false, now, d) else {
            panic!()
        };
        assert_eq!(s.lease_transitions, Some(4));
        assert_eq!(s.acquire_time, Some(MicroTime(now)));
        // Released (empty holder) even if "valid": take over.
        let mut released = held_by("", 3);
        released.holder_identity = None;
        assert!(matches!(
            decide(&released, "me", true, now, d),
            Decision::Write(_)
        ));
        // Ours: renew, keep acquire time and transitions.
        let Decision::Write(s) = decide(&held_by("me", 3), "me", true, now, d) else {
            panic!()
        };
        assert_eq!(s.lease_transitions, Some(3));
        assert_eq!(s.acquire_time, Some(MicroTime(ts(100))));
        assert_eq!(s.renew_time, Some(MicroTime(now)));
    }

    #[test]
    fn release_spec() {
        let s = released_spec(&held_by("me", 7), ts(300));
        assert_eq!(s.holder_identity, None);
        assert_eq!(s.lease_duration_seconds, Some(1));
        assert_eq!(s.lease_transitions, Some(7));
    }

    #[test]
    fn config_validation() {
        let c = LeaderElectionConfig::new("kruise-system", "kruise-manager");
        c.validate().unwrap();
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        let mut bad = c.clone();
        bad.renew_deadline = Duration::from_secs(20);
        assert!(bad.validate().is_err());
        let mut bad = c.clone();
        bad.retry_period = Duration::from_secs(9);
        assert!(bad.validate().is_err());
        let mut bad = c;
        bad.identity.clear();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn identity_shape() {
        let id = default_identity();
        let (host, uuid) = id.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert_ne!(default_identity(), id);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn decide_properties(
                holder in proptest::option::of(prop_oneof![Just("me"), Just("other"), Just("")]),
                transitions in proptest::option::of(0i32..1000),
                valid in any::<bool>(),
                now in 0i64..4_000_000_000,
            ) {
                let current = LeaseSpec {
                    holder_identity: holder.map(str::to_string),
                    lease_transitions: transitions,
                    acquire_time: Some(MicroTime(ts(1))),
                    ..LeaseSpec::default()
                };
                let d = decide(&current, "me", valid, ts(now), Duration::from_secs(15));
                let held_by_other = holder == Some("other");
                match d {
                    Decision::Wait => prop_assert!(held_by_other && valid),
                    Decision::Write(s) => {
                        prop_assert!(!(held_by_other && valid));
                        prop_assert_eq!(s.holder_identity.as_deref(), Some("me"));
                        prop_assert_eq!(s.renew_time, Some(MicroTime(ts(now))));
                        let before = transitions.unwrap_or(0);
                        let after = s.lease_transitions.unwrap_or(0);
                        if holder == Some("me") {
                            prop_assert_eq!(after, before);
                            prop_assert_eq!(s.acquire_time, Some(MicroTime(ts(1))));
                        } else {
                            prop_assert_eq!(after, before + 1);
                            prop_assert_eq!(s.acquire_time, Some(MicroTime(ts(now))));
                        }
                    }
                }
            }
        }
    }
}
