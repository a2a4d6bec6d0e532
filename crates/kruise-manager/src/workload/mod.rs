//! Workload controls shared by every workload controller — the I/O halves of OpenKruise's
//! `pkg/util` (history, pod control with slow start, lifecycle control, in-place update
//! control). The decisions come from `kruise-engines`; these functions perform them against the
//! API server, record expectations around every write and report Events on the owner. A
//! controller calls them with its own objects; nothing here knows a workload kind.
//!
//! - [`history`]: find or create the revision of the current template (collision counts, an
//!   older equal revision moved to the head), delete revisions beyond the history limit.
//! - [`pods`]: create pods (and their PVCs) in slow-start batches; delete pods (and their PVCs)
//!   with a UID precondition, or move them to `PreparingDelete` while a preDelete hook holds them.
//! - [`lifecycle`]: lifecycle state writes (`KruisePodReady` not-ready keys first, then the state
//!   label and `lifecycle.apps.kruise.io/timestamp`).
//! - [`inplace`]: in-place update writes (start an update, refresh grace periods and completion).

pub mod history;
pub mod inplace;
pub mod lifecycle;
pub mod pods;

#[cfg(test)]
mod tests;

/// Errors of the workload controls.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// An API call failed (conflicts are retried inside the control where that is safe).
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A revision could not be built or read.
    #[error("revision: {0}")]
    Revision(#[from] kruise_engines::revision::RevisionError),
    /// An engine refused the object (e.g. a malformed in-place update state annotation).
    #[error("{0}")]
    Invalid(String),
}

/// Whether a kube error is the API server's `code`.
pub(crate) fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}
