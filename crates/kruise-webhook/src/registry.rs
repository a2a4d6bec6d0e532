//! The admission registry: every webhook the server answers, once. The router
//! ([`crate::server::router`]), the Mutating/ValidatingWebhookConfigurations
//! ([`crate::controller::configurations`], also what `kruise-webhookgen` writes to
//! `config/webhook/`) and the pruning of webhooks this build does not serve are all derived from
//! [`REGISTRY`]. Adding a webhook = a handler module + one entry here.

use std::future::Future;
use std::pin::Pin;

use kruise_runtime::features::{Feature, FeatureGates};

use crate::paths;
use crate::{
    HandlerContext, Request, Response, advancedcronjob, broadcastjob, cloneset,
    containerrecreaterequest, daemonset, deletionprotection, ephemeraljob, persistentpodstate, pod,
    podprobemarker, podunavailablebudget, resourcedistribution, sidecarset, statefulset,
    uniteddeployment, workloadspread,
};

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
        name: "madvancedcronjob.kb.io",
        path: paths::MUTATE_ADVANCEDCRONJOB,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "advancedcronjobs",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(advancedcronjob::mutate(r, c)),
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
        name: "mbroadcastjob.kb.io",
        path: paths::MUTATE_BROADCASTJOB,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "broadcastjobs",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(broadcastjob::mutate(r, c)),
    },
    AdmissionEntry {
        name: "mcontainerrecreaterequest.kb.io",
        path: paths::MUTATE_CONTAINERRECREATEREQUEST,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "containerrecreaterequests",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(containerrecreaterequest::mutate(r, c)),
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
        name: "muniteddeployment.kb.io",
        path: paths::MUTATE_UNITEDDEPLOYMENT,
        webhook_type: WebhookType::Mutating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "uniteddeployments",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(uniteddeployment::mutate(r, c)),
    },
    AdmissionEntry {
        name: "vadvancedcronjob.kb.io",
        path: paths::VALIDATE_ADVANCEDCRONJOB,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "advancedcronjobs",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(advancedcronjob::validate(r, c)),
    },
    AdmissionEntry {
        name: "vbuiltindeployment.kb.io",
        path: paths::VALIDATE_DEPLOYMENT,
        webhook_type: WebhookType::Validating,
        api_group: "apps",
        api_versions: &["v1"],
        operations: &["DELETE"],
        resource: "deployments",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(deletionprotection::validate_workload(r, c)),
    },
    AdmissionEntry {
        name: "vbuiltinreplicaset.kb.io",
        path: paths::VALIDATE_REPLICASET,
        webhook_type: WebhookType::Validating,
        api_group: "apps",
        api_versions: &["v1"],
        operations: &["DELETE"],
        resource: "replicasets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(deletionprotection::validate_workload(r, c)),
    },
    AdmissionEntry {
        name: "vbuiltinstatefulset.kb.io",
        path: paths::VALIDATE_BUILTIN_STATEFULSET,
        webhook_type: WebhookType::Validating,
        api_group: "apps",
        api_versions: &["v1"],
        operations: &["DELETE"],
        resource: "statefulsets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(deletionprotection::validate_workload(r, c)),
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
        name: "vcustomresourcedefinition.kb.io",
        path: paths::VALIDATE_CRD,
        webhook_type: WebhookType::Validating,
        api_group: "apiextensions.k8s.io",
        api_versions: &["v1", "v1beta1"],
        operations: &["DELETE"],
        resource: "customresourcedefinitions",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(deletionprotection::validate_crd(r, c)),
    },
    AdmissionEntry {
        name: "vbroadcastjob.kb.io",
        path: paths::VALIDATE_BROADCASTJOB,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1", "v1beta1"],
        operations: &["CREATE", "UPDATE"],
        resource: "broadcastjobs",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(broadcastjob::validate(r, c)),
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
        name: "vephemeraljobs.kb.io",
        path: paths::VALIDATE_EPHEMERALJOB,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "ephemeraljobs",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(ephemeraljob::validate(r, c)),
    },
    AdmissionEntry {
        name: "vingress.kb.io",
        path: paths::VALIDATE_INGRESS,
        webhook_type: WebhookType::Validating,
        api_group: "networking.k8s.io",
        api_versions: &["v1", "v1beta1"],
        operations: &["DELETE"],
        resource: "ingresses",
        skip_control_plane: false,
        gate: Some(Feature::ResourcesDeletionProtection),
        handler: |r, c| Box::pin(deletionprotection::validate_always_only(r, c)),
    },
    AdmissionEntry {
        name: "vnamespace.kb.io",
        path: paths::VALIDATE_NAMESPACE,
        webhook_type: WebhookType::Validating,
        api_group: "",
        api_versions: &["v1"],
        operations: &["DELETE"],
        resource: "namespaces",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(deletionprotection::validate_namespace(r, c)),
    },
    AdmissionEntry {
        name: "vpod.kb.io",
        path: paths::VALIDATE_POD,
        webhook_type: WebhookType::Validating,
        api_group: "",
        api_versions: &["v1"],
        operations: &["UPDATE", "DELETE"],
        resource: "pods",
        skip_control_plane: true,
        gate: Some(Feature::PodWebhook),
        handler: |r, c| Box::pin(pod::validate(r, c)),
    },
    AdmissionEntry {
        name: "vpodeviction.kb.io",
        path: paths::VALIDATE_POD,
        webhook_type: WebhookType::Validating,
        api_group: "",
        api_versions: &["v1"],
        operations: &["CREATE"],
        resource: "pods/eviction",
        skip_control_plane: true,
        gate: Some(Feature::PodWebhook),
        handler: |r, c| Box::pin(pod::validate(r, c)),
    },
    AdmissionEntry {
        name: "vpersistentpodstate.kb.io",
        path: paths::VALIDATE_PERSISTENTPODSTATE,
        webhook_type: WebhookType::Validating,
        api_group: "apps.kruise.io",
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "persistentpodstates",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(persistentpodstate::validate(r, c)),
    },
    AdmissionEntry {
        name: "vpodprobemarker.kb.io",
        path: paths::VALIDATE_PODPROBEMARKER,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "podprobemarkers",
        skip_control_plane: false,
        // Served whatever the gates: with PodProbeMarkerGate or KruiseDaemon off it refuses
        // (403), as OpenKruise's handler does.
        gate: None,
        handler: |r, c| Box::pin(podprobemarker::validate(r, c)),
    },
    AdmissionEntry {
        name: "vpodunavailablebudget.kb.io",
        path: paths::VALIDATE_PODUNAVAILABLEBUDGET,
        webhook_type: WebhookType::Validating,
        api_group: "policy.kruise.io",
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "podunavailablebudgets",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(podunavailablebudget::validate(r, c)),
    },
    AdmissionEntry {
        name: "vresourcedistribution.kb.io",
        path: paths::VALIDATE_RESOURCEDISTRIBUTION,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "resourcedistributions",
        skip_control_plane: false,
        // Served whatever the gates: with ResourceDistributionGate off it refuses (403), as
        // OpenKruise's handler does.
        gate: None,
        handler: |r, c| Box::pin(resourcedistribution::validate(r, c)),
    },
    AdmissionEntry {
        name: "vservice.kb.io",
        path: paths::VALIDATE_SERVICE,
        webhook_type: WebhookType::Validating,
        api_group: "",
        api_versions: &["v1"],
        operations: &["DELETE"],
        resource: "services",
        skip_control_plane: false,
        gate: Some(Feature::ResourcesDeletionProtection),
        handler: |r, c| Box::pin(deletionprotection::validate_always_only(r, c)),
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
    AdmissionEntry {
        name: "vworkloadspread.kb.io",
        path: paths::VALIDATE_WORKLOADSPREAD,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE"],
        resource: "workloadspreads",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(workloadspread::validate(r, c)),
    },
    // Create/update validation and deletion protection. A manager without the UnitedDeployment
    // controller also serves it (deletion protection belongs to no controller): its
    // `matchConditions` then send it deletions only (`scope::united_deployment_condition`).
    AdmissionEntry {
        name: "vuniteddeployment.kb.io",
        path: paths::VALIDATE_UNITEDDEPLOYMENT,
        webhook_type: WebhookType::Validating,
        api_group: KRUISE,
        api_versions: &["v1alpha1"],
        operations: &["CREATE", "UPDATE", "DELETE"],
        resource: "uniteddeployments",
        skip_control_plane: false,
        gate: None,
        handler: |r, c| Box::pin(uniteddeployment::validate(r, c)),
    },
];

/// Which webhooks a manager serves: those its feature gates enable
/// ([`AdmissionEntry::enabled`]), restricted — when the manager runs only some controllers
/// (`--controllers`) — to the webhooks of those controllers (`only`, webhook names). A webhook
/// not served is neither routed nor written into the configurations, and is pruned from
/// installed ones.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The feature gates.
    pub gates: FeatureGates,
    /// The webhook names allowed (`None`: every webhook the gates enable).
    pub only: Option<std::collections::BTreeSet<&'static str>>,
    /// The CRDs (`<plural>.<group>`) whose conversion webhook this manager keeps pointed at
    /// itself (`None`: every Kruise CRD with `conversion.strategy: Webhook`).
    pub conversion_crds: Option<std::collections::BTreeSet<&'static str>>,
}

impl Selection {
    /// Every webhook the gates enable.
    pub fn all(gates: FeatureGates) -> Self {
        Self {
            gates,
            ..Self::default()
        }
    }

    /// Whether this manager keeps the conversion webhook of CRD `name` (`<plural>.<group>`).
    pub fn converts(&self, name: &str) -> bool {
        self.conversion_crds
            .as_ref()
            .is_none_or(|c| c.contains(name))
    }

    /// Whether `entry` is served.
    pub fn serves(&self, entry: &AdmissionEntry) -> bool {
        entry.enabled(&self.gates) && self.only.as_ref().is_none_or(|o| o.contains(entry.name))
    }

    /// Whether the webhook named `name` is served.
    pub fn serves_name(&self, name: &str) -> bool {
        REGISTRY.iter().any(|e| e.name == name && self.serves(e))
    }

    /// The webhooks served, in registry order.
    pub fn entries(&self) -> impl Iterator<Item = &'static AdmissionEntry> + '_ {
        REGISTRY.iter().filter(move |e| self.serves(e))
    }

    /// Every admission path served, each once (webhooks may share a path: `vpod.kb.io` and
    /// `vpodeviction.kb.io` both post to `/validate-pod`).
    pub fn paths(&self) -> Vec<&'static str> {
        let mut paths: Vec<&'static str> = Vec::new();
        for e in self.entries() {
            if !paths.contains(&e.path) {
                paths.push(e.path);
            }
        }
        paths
    }
}

/// Every admission path served under `gates` (all controllers).
pub fn served_paths(gates: &FeatureGates) -> Vec<&'static str> {
    Selection::all(gates.clone()).paths()
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
        assert_eq!(names.len(), REGISTRY.len());
        // Only the two pod validating webhooks share a path (one handler, as in OpenKruise).
        for e in REGISTRY {
            let sharing: Vec<&str> = REGISTRY
                .iter()
                .filter(|o| o.path == e.path)
                .map(|o| o.name)
                .collect();
            assert!(
                sharing.len() == 1 || sharing == ["vpod.kb.io", "vpodeviction.kb.io"],
                "{sharing:?} share {}",
                e.path
            );
        }
        let unique = paths.len();
        paths.dedup();
        assert_eq!(paths.len(), unique, "paths() lists each path once");
    }

    #[test]
    fn a_selection_serves_only_the_named_webhooks_the_gates_allow() {
        let only = Selection {
            gates: FeatureGates::default(),
            only: Some(["mcloneset.kb.io", "vcloneset.kb.io", "mpod.kb.io"].into()),
            conversion_crds: Some(["clonesets.apps.kruise.io"].into()),
        };
        assert!(only.converts("clonesets.apps.kruise.io"));
        assert!(!only.converts("statefulsets.apps.kruise.io"));
        assert_eq!(
            only.paths(),
            [
                paths::MUTATE_POD,
                paths::MUTATE_CLONESET,
                paths::VALIDATE_CLONESET
            ]
        );
        let no_pod = Selection {
            gates: FeatureGates::parse("PodWebhook=false").expect("gates"),
            ..only
        };
        assert!(!no_pod.serves_name("mpod.kb.io"));
        assert!(no_pod.serves_name("vcloneset.kb.io"));
    }

    #[test]
    fn pod_webhook_false_turns_the_pod_webhook_off() {
        let off = FeatureGates::parse("PodWebhook=false").expect("gates");
        assert!(!served_paths(&off).contains(&paths::MUTATE_POD));
        assert!(!served_paths(&off).contains(&paths::VALIDATE_POD));
        assert_eq!(
            served_paths(&off).len(),
            served_paths(&FeatureGates::default()).len() - 2
        );
        assert!(served_paths(&FeatureGates::default()).contains(&paths::MUTATE_POD));
    }
}
