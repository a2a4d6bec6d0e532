//! The `policy.kruise-rs.io` group: policy kinds kruise-rs adds beyond OpenKruise v1.9 (from
//! OpenKruise's roadmap). A group of its own, so they never collide with a future OpenKruise
//! API and a cluster swapped back to OpenKruise simply ignores them.

pub mod v1alpha1;

/// API group of the kruise-rs policy kinds.
pub const GROUP: &str = "policy.kruise-rs.io";
