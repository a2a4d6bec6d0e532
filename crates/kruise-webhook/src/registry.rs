//! The admission registry: every webhook the server answers, once. The router
//! ([`crate::server::router`]), the Mutating/ValidatingWebhookConfigurations
//! ([`crate::controller::configurations`], also what `kruise-webhookgen` writes to
//! `config/webhook/`) and the pruning of webhooks this build does not serve are all derived from
//! [`REGISTRY`]. Adding a webhook = a handler module + one entry here.

use std::future::Future;
use std::pin::Pin;

use kruise_runtime::features::{Feature, FeatureGates};

use crate::paths;
use crate::{HandlerContext, Request, Response, cloneset, daemonset, pod, sidecarset, statefulset};

/// An admission handler: `(request, context) → response` (never an error: denials are responses).
pub type Handler = for<'a> fn(
    &'a Request,
    &'a HandlerContext,
) -> Pin<Box<dyn Future<Output = Response> + Send + 'a>>;

/// Which configuration a webhook belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookType {
    /// `MutatingWebhookConfiguration` (answers with a JSON patch).
    Mutating,
    /// `ValidatingWebhookConfiguration`.
    Validating,
}

/// One admission webhook as OpenKruise v1.9.0's manifests declare it.
pub struct AdmissionEntry {
    /// Webhook name in the configuration (e.g. `mcloneset.kb.io`).
    pub name: &'static str,
    /// URL path the API server posts AdmissionReviews to.
    pub path: &'static str,
    /// Mutating or validating.
    pub webhook_type: WebhookType,
    /// Rule: API group (`""` for core).
    pub api_group: &'static str,
    /// Rule: API versions.
    pub api_versions: &'static [&'static str],
    /// Rule: operations.
    pub operations: &'static [&'static str],
    /// Rule: resource (plural).
    pub resource: &'static str,
    /// Skip namespaces labelled `control-plane` (OpenKruise's selector of the pod webhooks).
    pub skip_control_plane: bool,
    /// Served only while this feature gate is on (OpenKruise's `addHandlersWithGate`: the pod
    /// webhook needs `PodWebhook`); `None`: always served. A webhook that is not served is
    /// neither routed nor written into the configurations, and is pruned from installed ones.
    pub gate: Option<Feature>,
    /// The handler.
    pub handler: Handler,
}

impl AdmissionEntry {
    /// Whether this webhook is served under `gates`.
    pub fn enabled(&self, gates: &FeatureGates) -> bool {
        self.gate.is_none_or(|g| gates.enabled(g))
    }
}

impl std::fmt::Debug for AdmissionEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionEntry")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

const KRUISE: &str = "apps.kruise.io";

/// Every admission webhook served, in the order of OpenKruise's configurations.
pub const REGISTRY: &[AdmissionEntry] = &[
    AdmissionEntry {
        name: "mpod.kb.io",
        path: paths::MUTATE_POD,
        webhook_type: WebhookType::Mutating,
        api_group: "",
        api_versions: &["v1"],
        operations: &["CREATE"],
        resource: "pods",
        skip_control_plane: true,
        gate: Some(Feature::PodWebhook),
        handler: |r, c| Box::pin(pod::mutate(r, c)),
    },
    AdmissionEntry {
        name: "mcloneset.kb.io",
        path: paths::MUTATE_CLONESET,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "clonesets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(cloneset::mutate(r, c)),
    },
    AdmissionEntry {
        name: "mdaemonset.kb.io",
        path: paths::MUTATE_DAEMONSET,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "daemonsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(daemonset::mutate(r, c)),
    },
    AdmissionEntry {
        name: "msidecarset.kb.io",
        path: paths::MUTATE_SIDECARSET,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "sidecarsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(sidecarset::mutate(r, c)),
    },
    AdmissionEntry {
        name: "mstatefulset.kb.io",
        path: paths::MUTATE_STATEFULSET,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "statefulsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(statefulset::mutate(r, c)),
    },
    AdmissionEntry {
        name: "vcloneset.kb.io",
        path: paths::VALIDATE_CLONESET,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE", "DELETE"],
        resource: "clonesets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(cloneset::validate(r, c)),
    },
    AdmissionEntry {
        name: "vdaemonset.kb.io",
        path: paths::VALIDATE_DAEMONSET,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "daemonsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(daemonset::validate(r, c)),
    },
    AdmissionEntry {
        name: "vsidecarset.kb.io",
        path: paths::VALIDATE_SIDECARSET,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "sidecarsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(sidecarset::validate(r, c)),
    },
    AdmissionEntry {
        name: "vstatefulset.kb.io",
        path: paths::VALIDATE_STATEFULSET,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE", "DELETE"],
        resource: "statefulsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(statefulset::validate(r, c)),
    },
];

/// The webhooks served under `gates` ([`AdmissionEntry::enabled`]), in registry order.
pub fn enabled(gates: &FeatureGates) -> impl Iterator<Item = &'static AdmissionEntry> + '_ {
    REGISTRY.iter().filter(move |e| e.enabled(gates))
}

/// Every admission path served under `gates`.
pub fn served_paths(gates: &FeatureGates) -> Vec<&'static str> {
    enabled(gates).map(|e| e.path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_are_unique() {
        let mut names: Vec<_> = REGISTRY.iter().map(|e| e.name).collect();
        let mut paths: Vec<_> = served_paths(&FeatureGates::default());
        names.sort_unstable();
        paths.sort_unstable();
        names.dedup();
        paths.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        assert_eq!(paths.len(), REGISTRY.len());
    }

    #[test]
    fn pod_webhook_false_turns_the_pod_webhook_off() {
        let off = FeatureGates::parse("PodWebhook=false").expect("gates");
        assert!(!served_paths(&off).contains(&paths::MUTATE_POD));
        assert_eq!(served_paths(&off).len(), REGISTRY.len() - 1);
        assert!(served_paths(&FeatureGates::default()).contains(&paths::MUTATE_POD));
    }
}
