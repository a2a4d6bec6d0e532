//! Lossless conversion between `v1alpha1` and `v1beta1` for every kind served in both versions.
//!
//! Each module offers `to_v1beta1` / `to_v1alpha1` (plain functions, no I/O) used by the
//! `/convert` webhook; fields that exist only in one version travel in annotations so that a
//! round trip through the other version loses nothing.

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod daemonset;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod nodeimage;
pub mod sidecarset;
pub mod statefulset;
