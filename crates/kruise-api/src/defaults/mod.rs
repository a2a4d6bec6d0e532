//! The defaults OpenKruise's mutating webhooks fill in, as plain functions (`set_defaults_<kind>`)
//! that mutate an object in place and are idempotent.

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
pub mod podspec;
pub mod podunavailablebudget;
pub mod resourcedistribution;
pub mod sidecarset;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workloadspread;
