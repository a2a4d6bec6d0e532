//! Admission webhooks (OpenKruise v1.9 paths and rules).
//!
//! Handlers are plain async functions `fn(&Request, &HandlerContext) -> Response` per kind:
//! [`cloneset`] (`/mutate-apps-kruise-io-v1alpha1-cloneset`,
//! `/validate-apps-kruise-io-v1alpha1-cloneset`), [`statefulset`]
//! (`/mutate-apps-kruise-io-statefulset`, `/validate-apps-kruise-io-statefulset`) and [`pod`]
//! (`/mutate-pod`), [`sidecarset`] (`/mutate-apps-kruise-io-sidecarset`,
//! `/validate-apps-kruise-io-sidecarset`); [`conversion`] answers `/convert` for every kind served in two versions. Mutating handlers answer with a JSON patch; denials name the field and the
//! reason the way Kubernetes field errors read.

/// An admission request carrying any object.
pub type Request = kube::core::admission::AdmissionRequest<kube::core::DynamicObject>;
/// An admission response.
pub type Response = kube::core::admission::AdmissionResponse;

/// What handlers may consult.
pub struct HandlerContext {
    /// Effective feature gates.
    pub gates: kruise_runtime::features::FeatureGates,
    /// Where handlers look other objects up (pods named in `podsToDelete`, StorageClasses,
    /// SidecarSets, ControllerRevisions, ConfigMaps):
    /// the shared cache once synced ([`lookup::Lookup`]); `None` in unit tests (nothing is
    /// looked up).
    pub lookup: Option<lookup::Lookup>,
}

pub use kruise_runtime::kruise_namespace;

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod certs;
pub mod cloneset;
pub mod common;
pub mod containerrecreaterequest;
pub mod controller;
pub mod conversion;
pub mod daemonset;
pub mod deletionprotection;
pub mod ephemeraljob;
pub mod field;
pub mod lookup;
pub mod paths;
pub mod persistentpodstate;
pub mod pod;
pub mod podprobemarker;
pub mod podunavailablebudget;
pub mod registry;
pub mod resourcedistribution;
pub mod scope;
pub mod server;
pub mod sidecarset;
pub mod statefulset;
pub mod support;
pub mod uniteddeployment;
pub mod workloadspread;
