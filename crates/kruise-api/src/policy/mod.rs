//! The `policy.kruise.io` group.

pub mod v1alpha1;

/// API group of PodUnavailableBudget.
pub const GROUP: &str = "policy.kruise.io";
