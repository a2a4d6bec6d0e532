//! # kruise-engines
//!
//! OpenKruise's workload decisions as pure functions over API objects — no I/O, no clients, no
//! clocks (the caller passes `now`). Every workload controller of the manager uses them, and the
//! node daemon and the kubectl plugin can depend on them without the manager's runtime or
//! webhook stack.
//!
//! - [`revision`]: ControllerRevision names, hashes and data as OpenKruise computes them.
//! - [`inplace`]: in-place update — the spec diff between revisions, what may change in place,
//!   the pod writes and the completion check.
//! - [`lifecycle`]: lifecycle hook states and their transitions.
//! - [`updatesort`]: update and deletion ordering (priority, scatter, ranks).
//! - [`expectations`]: scale / resource-version / update expectations (in-memory bookkeeping).
//! - [`podutil`]: pod readiness and availability.
//! - [`ordinals`]: stateful pod ordinals, reserved ordinals, ordinal ranges.
//! - [`goregex`]: Go's `regexp` syntax on top of the `regex` crate (user patterns OpenKruise
//!   compiles with Go).
//! - [`selector`]: label selectors printed as `status.labelSelector` wants them.
//! - [`intstr`]: IntOrString percentages resolved as apimachinery and OpenKruise do.
//! - [`podunavailablebudget`]: PodUnavailableBudget availability, pending disruptions and status.
//! - [`sidecarset`]: SidecarSet injection, in-place sidecar upgrade, hot upgrade, revisions and the
//!   `resourcesPolicy` expression calculator.

pub mod cron;
pub mod expectations;
pub mod flowcontrol;
pub mod goregex;
pub mod inplace;
pub mod intstr;
pub mod lifecycle;
pub mod ordinals;
pub mod persistentpodstate;
pub mod podunavailablebudget;
pub mod podutil;
pub mod revision;
pub mod selector;
pub mod sidecarset;
pub mod strategicpatch;
pub mod updatesort;
