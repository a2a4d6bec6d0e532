//! # kruise-manager
//!
//! The kruise-rs manager: OpenKruise's controllers (and, later, webhooks) in one binary.
//!
//! Platform: [`features`] (feature gates), [`metrics`] (controller-runtime compatible
//! Prometheus metrics), [`leader`] (Lease leader election), [`server`] (`/healthz`, `/readyz`,
//! `/metrics`), [`events`] (Kubernetes Events), [`cache`] (the shared informer cache, gated on
//! sync), [`runtime`] (controller runner glue).
//!
//! Shared engines, written once and used by every workload: [`revision`] (ControllerRevisions),
//! [`expectations`], [`inplace`] (in-place update), [`lifecycle`] (lifecycle hooks),
//! [`updatesort`] (update/deletion ordering), [`podutil`] (pod readiness/availability).

pub mod cache;
pub mod controllers;
pub mod events;
pub mod expectations;
pub mod features;
pub mod inplace;
pub mod leader;
pub mod lifecycle;
pub mod manifests;
pub mod metrics;
pub mod podutil;
pub mod rbac;
pub mod restmetrics;
pub mod revision;
pub mod runtime;
pub mod server;
#[cfg(test)]
pub(crate) mod testing;
pub mod updatesort;
pub mod webhooks;
