//! The `apps.kruise.io` group.

pub mod common;
pub mod v1alpha1;
pub mod v1beta1;

/// API group of the workload kinds.
pub const GROUP: &str = "apps.kruise.io";
