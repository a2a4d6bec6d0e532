//! `policy.kruise.io/v1alpha1`.

pub mod podunavailablebudget;

pub use podunavailablebudget::*;
