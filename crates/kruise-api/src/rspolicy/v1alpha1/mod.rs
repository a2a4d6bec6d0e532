//! `policy.kruise-rs.io/v1alpha1`.

pub mod poddeletionflowcontrol;

pub use poddeletionflowcontrol::*;
