//! Paths served, as in OpenKruise v1.9.0's webhook manifests.

/// CloneSet defaults.
pub const MUTATE_CLONESET: &str = "/mutate-apps-kruise-io-v1alpha1-cloneset";
/// CloneSet validation.
pub const VALIDATE_CLONESET: &str = "/validate-apps-kruise-io-v1alpha1-cloneset";
/// ContainerRecreateRequest checks and defaults.
pub const MUTATE_CONTAINERRECREATEREQUEST: &str =
    "/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest";
/// Advanced StatefulSet defaults.
pub const MUTATE_STATEFULSET: &str = "/mutate-apps-kruise-io-statefulset";
/// Advanced DaemonSet defaults (both versions).
pub const MUTATE_DAEMONSET: &str = "/mutate-apps-kruise-io-daemonset";
/// Advanced DaemonSet validation (both versions).
pub const VALIDATE_DAEMONSET: &str = "/validate-apps-kruise-io-daemonset";
/// Advanced StatefulSet validation.
pub const VALIDATE_STATEFULSET: &str = "/validate-apps-kruise-io-statefulset";
/// BroadcastJob defaults (both versions).
pub const MUTATE_BROADCASTJOB: &str = "/mutate-apps-kruise-io-broadcastjob";
/// BroadcastJob validation (both versions).
pub const VALIDATE_BROADCASTJOB: &str = "/validate-apps-kruise-io-broadcastjob";
/// SidecarSet defaults and hash annotations (both versions).
pub const MUTATE_SIDECARSET: &str = "/mutate-apps-kruise-io-sidecarset";
/// SidecarSet validation (both versions).
pub const VALIDATE_SIDECARSET: &str = "/validate-apps-kruise-io-sidecarset";
/// Deletion protection of Deployments.
pub const VALIDATE_DEPLOYMENT: &str = "/validate-apps-deployment";
/// Deletion protection of ReplicaSets.
pub const VALIDATE_REPLICASET: &str = "/validate-apps-replicaset";
/// Deletion protection of StatefulSets (`apps/v1`).
pub const VALIDATE_BUILTIN_STATEFULSET: &str = "/validate-apps-statefulset";
/// Deletion protection of CustomResourceDefinitions.
pub const VALIDATE_CRD: &str = "/validate-customresourcedefinition";
/// Deletion protection of Namespaces.
pub const VALIDATE_NAMESPACE: &str = "/validate-namespace";
/// Deletion protection of Services.
pub const VALIDATE_SERVICE: &str = "/validate-service";
/// Deletion protection of Ingresses.
pub const VALIDATE_INGRESS: &str = "/validate-ingress";
/// UnitedDeployment validation (`vuniteddeployment.kb.io`): create/update validation and
/// deletion protection.
pub const VALIDATE_UNITEDDEPLOYMENT: &str = "/validate-apps-kruise-io-v1alpha1-uniteddeployment";
/// UnitedDeployment defaults (`muniteddeployment.kb.io`).
pub const MUTATE_UNITEDDEPLOYMENT: &str = "/mutate-apps-kruise-io-v1alpha1-uniteddeployment";
/// AdvancedCronJob defaults (both versions).
pub const MUTATE_ADVANCEDCRONJOB: &str = "/mutate-apps-kruise-io-advancedcronjob";
/// AdvancedCronJob validation (both versions).
pub const VALIDATE_ADVANCEDCRONJOB: &str = "/validate-apps-kruise-io-advancedcronjob";
/// PodUnavailableBudget validation.
pub const VALIDATE_PODUNAVAILABLEBUDGET: &str = "/validate-policy-kruise-io-podunavailablebudget";
/// PersistentPodState validation.
pub const VALIDATE_PERSISTENTPODSTATE: &str = "/validate-apps-kruise-io-persistentpodstate";
/// PodProbeMarker validation (`vpodprobemarker.kb.io`).
pub const VALIDATE_PODPROBEMARKER: &str = "/validate-apps-kruise-io-podprobemarker";
/// EphemeralJob validation.
pub const VALIDATE_EPHEMERALJOB: &str = "/validate-apps-kruise-io-v1alpha1-ephemeraljob";
/// WorkloadSpread validation.
pub const VALIDATE_WORKLOADSPREAD: &str = "/validate-apps-kruise-io-v1alpha1-workloadspread";
/// Pod mutation.
pub const MUTATE_POD: &str = "/mutate-pod";
/// Pod validation: deletions, evictions and updates held to PodUnavailableBudgets (webhooks
/// `vpod.kb.io` and `vpodeviction.kb.io` share it, as in OpenKruise).
pub const VALIDATE_POD: &str = "/validate-pod";
/// CRD conversion (ConversionReview).
pub const CONVERT: &str = "/convert";
/// ResourceDistribution validation (OpenKruise v1.9.0's path, with the version).
pub const VALIDATE_RESOURCEDISTRIBUTION: &str =
    "/validate-apps-kruise-io-v1alpha1-resourcedistribution";
