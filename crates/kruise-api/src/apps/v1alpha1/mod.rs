//! `apps.kruise.io/v1alpha1`: every apps kind of OpenKruise v1.9.0 (the storage version of the kinds that have no v1beta1).

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod cloneset;
pub mod containerrecreaterequest;
pub mod daemonset;
pub mod ephemeraljob;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod nodeimage;
pub mod nodepodprobe;
pub mod persistentpodstate;
pub mod podprobemarker;
pub mod resourcedistribution;
pub mod sidecarset;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workloadspread;

pub use advancedcronjob::*;
pub use broadcastjob::*;
pub use cloneset::*;
pub use containerrecreaterequest::*;
pub use daemonset::*;
pub use ephemeraljob::*;
pub use imagelistpulljob::*;
pub use imagepulljob::*;
pub use nodeimage::*;
pub use nodepodprobe::*;
pub use persistentpodstate::*;
pub use podprobemarker::*;
pub use resourcedistribution::*;
pub use sidecarset::*;
pub use statefulset::*;
pub use uniteddeployment::*;
pub use workloadspread::*;
