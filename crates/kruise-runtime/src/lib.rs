//! # kruise-runtime
//!
//! What every controller and webhook of a kruise-rs process shares:
//! [`cache`] (one informer per resource type, indexes, sync gate), [`runner`] (the [`Context`]
//! and [`run_controller`](runner::run_controller): workers, metrics, retries, WaitForCacheSync),
//! [`leader`] (Lease leader election), [`metrics`] (controller-runtime compatible Prometheus
//! metrics), [`restmetrics`] (client-go's request metrics), [`throttle`] (client-side rate
//! limiting of API requests), [`events`] (Kubernetes Events),
//! [`features`] (OpenKruise feature gates), [`server`] (`/healthz`, `/readyz`, `/metrics`) and
//! [`process`] (the API client and logging every binary sets up the same way), [`rbac`] and
//! [`manifests`] (generated ClusterRoles and the `make crds` writers).

pub mod cache;
pub mod events;
pub mod features;
pub mod leader;
pub mod manifests;
pub mod metrics;
pub mod process;
pub mod rbac;
pub mod restmetrics;
pub mod runner;
pub mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod throttle;
pub mod triggers;

pub use runner::Context;

/// Namespace kruise-manager runs in (`POD_NAMESPACE`, default `kruise-system`, as OpenKruise's
/// `webhookutil.GetNamespace`): where its certificate Secret and SidecarSet revisions live,
/// and whose pods `/mutate-pod` leaves alone.
pub fn kruise_namespace() -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "kruise-system".to_owned())
}
