//! # kruise-manager
//!
//! The kruise-rs manager: OpenKruise's controllers and admission webhooks in one binary.
//!
//! Layers (each crate depends only on the ones before it):
//! `kruise-api` (types) → `kruise-engines` (pure decisions) → `kruise-runtime` (cache, runner,
//! leader election, metrics, events, feature gates) → `kruise-webhook` (admission) → this crate:
//! [`controllers`] (one module per controller, listed in [`controllers::REGISTRY`]),
//! [`scaffold`] (the shape they share), [`workload`] (the workload controls they share), [`rbac`]
//! (the ClusterRole derived from that registry), [`manifests`] (generator plumbing) and the
//! `kruise-manager` binary.

pub mod controllers;
pub use kruise_runtime::manifests;
pub mod rbac;
pub mod scaffold;
pub mod workload;
