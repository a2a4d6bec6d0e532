//! `apps.kruise.io/v1beta1`: the storage version of the kinds OpenKruise v1.9.0 serves in two versions.

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod daemonset;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod nodeimage;
pub mod sidecarset;
pub mod statefulset;

pub use advancedcronjob::*;
pub use broadcastjob::*;
pub use daemonset::*;
pub use imagelistpulljob::*;
pub use imagepulljob::*;
pub use nodeimage::*;
pub use sidecarset::*;
pub use statefulset::*;
