//! One module per controller, each with the same shape: watch setup (`setup`, which takes its
//! informers from the shared cache), `reconcile`, pure `plan` functions and status computation.

pub mod advancedcronjob;
pub mod autobudget;
pub mod broadcastjob;
pub mod cloneset;
pub mod containerlaunchpriority;
pub mod containerrecreaterequest;
pub mod daemonset;
pub mod ephemeraljob;
pub mod nodepodprobe;
pub mod persistentpodstate;
pub mod poddeletionflowcontrol;
pub mod podprobemarker;
pub mod podreadiness;
pub mod podunavailablebudget;
pub mod resourcedistribution;
pub mod sidecarset;
pub mod sidecarterminator;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workloadspread;

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::PolicyRule;

use kruise_runtime::features::{Feature, FeatureGates};
use kruise_runtime::rbac::{READ, READ_WRITE, rule};
use kruise_runtime::runner::{self as runtime, Context};

/// The future that runs one set-up controller until shutdown.
pub type ControllerFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), runtime::Error>> + Send>>;

/// Controller flags that are not part of [`runtime::ControllerConfig`].
#[derive(Debug, Clone, Default)]
pub struct ControllerFlags {
    /// `--controllers`.
    pub controllers: Vec<String>,
    /// `--cloneset-scaling-exclude-preparing-delete`.
    pub cloneset_scaling_exclude_preparing_delete: bool,
    /// `--<controller>-workers` per controller name (OpenKruise's flags, e.g.
    /// `--cloneset-workers`; 0 is taken as 1); see [`ControllerFlags::workers`].
    pub workers: std::collections::BTreeMap<&'static str, u16>,
    /// `--assign-pods-by-scheduler`: daemon pods are bound by the scheduler (node affinity)
    /// rather than by `spec.nodeName`.
    pub assign_pods_by_scheduler: bool,
}

impl ControllerFlags {
    /// The worker count of controller `name`: its `--<name>-workers` (or its
    /// [`ControllerEntry::workers_flag`]), else the registry's
    /// default for it, else 1.
    pub fn workers(&self, name: &str) -> u16 {
        self.workers.get(name).copied().unwrap_or_else(|| {
            REGISTRY
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.workers)
                .unwrap_or(1)
        })
    }
}

/// One controller of the manager: its `--controllers` name, its set-up function (which starts
/// the informers it reads — before leadership is won — and returns the future that runs it once
/// this replica leads) and the RBAC rules it needs (merged into `config/rbac/role.yaml`).
pub struct ControllerEntry {
    /// Name in `--controllers`, metrics and logs.
    pub name: &'static str,
    /// Set-up.
    pub setup: fn(&Arc<Context>, &ControllerFlags) -> ControllerFuture,
    /// The API access it needs.
    pub rules: fn() -> Vec<PolicyRule>,
    /// The default of its `--<name>-workers` flag (max concurrent reconciles); `None`: no flag
    /// (the controller picks its own count).
    pub workers: Option<u16>,
    /// The name of that flag where OpenKruise's is not `<name>-workers` (ContainerRecreateRequest:
    /// `crr-workers`).
    pub workers_flag: Option<&'static str>,
    /// The Kruise CRDs (`<plural>.<group>`) it reads: a manager running only some controllers
    /// needs only their CRDs installed, and keeps only their conversion webhooks.
    pub crds: &'static [&'static str],
    /// The admission webhooks (names of `kruise_webhook::registry::REGISTRY`) its kinds need:
    /// a manager serves and registers only the webhooks of the controllers it runs.
    pub webhooks: &'static [&'static str],
    /// The feature gates that switch it on: it runs when `--controllers` selects it and, if
    /// this is not empty, any of these gates is enabled (OpenKruise's `Add` functions return
    /// early otherwise, e.g. PodUnavailableBudget's without `PodUnavailableBudgetDeleteGate` or
    /// `PodUnavailableBudgetUpdateGate`).
    pub gates: &'static [Feature],
    /// Feature gates that must all be enabled besides (OpenKruise's NodePodProbe controller
    /// runs only with both `PodProbeMarkerGate` and `KruiseDaemon`).
    pub requires: &'static [Feature],
}

impl ControllerEntry {
    /// Whether `gates` switch this controller on (see [`ControllerEntry::gates`] and
    /// [`ControllerEntry::requires`]).
    pub fn gated_on(&self, gates: &FeatureGates) -> bool {
        (self.gates.is_empty() || self.gates.iter().any(|g| gates.enabled(*g)))
            && self.requires.iter().all(|g| gates.enabled(*g))
    }
}

/// Admission webhooks that belong to no controller and are served whatever `--controllers`
/// selects: the deletion protection of built-in kinds (their handlers read only the request).
pub const ALWAYS_SERVED: &[&str] = kruise_webhook::deletionprotection::WEBHOOKS;

/// The webhook names of the controllers `enabled` selects (a name may be claimed by several),
/// and [`ALWAYS_SERVED`].
pub fn webhooks_of(enabled: impl Fn(&str) -> bool) -> std::collections::BTreeSet<&'static str> {
    REGISTRY
        .iter()
        .filter(|c| enabled(c.name))
        .flat_map(|c| c.webhooks.iter().copied())
        .chain(ALWAYS_SERVED.iter().copied())
        .collect()
}

/// The CRDs of the controllers `enabled` selects.
pub fn crds_of(enabled: impl Fn(&str) -> bool) -> std::collections::BTreeSet<&'static str> {
    REGISTRY
        .iter()
        .filter(|c| enabled(c.name))
        .flat_map(|c| c.crds.iter().copied())
        .collect()
}

/// The controller registry: adding a controller is one module and one entry here; the
/// `--controllers` flag, the start-up and the generated ClusterRole follow from it.
pub const REGISTRY: &[ControllerEntry] = &[
    ControllerEntry {
        name: cloneset::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(cloneset::setup(
                ctx,
                flags.workers(cloneset::CONTROLLER_NAME),
                flags.cloneset_scaling_exclude_preparing_delete,
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["clonesets"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["clonesets/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps.kruise.io", &["clonesets/finalizers"], &["update"]),
                rule("apps.kruise.io", &["imagepulljobs"], READ_WRITE),
                rule("", &["pods", "persistentvolumeclaims"], READ_WRITE),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("apps", &["controllerrevisions"], READ_WRITE),
                rule("", &["nodes"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["clonesets.apps.kruise.io"],
        webhooks: &["mcloneset.kb.io", "vcloneset.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: statefulset::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(statefulset::setup(
                ctx,
                flags.workers(statefulset::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["statefulsets"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["statefulsets/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps.kruise.io", &["statefulsets/finalizers"], &["update"]),
                rule("", &["pods", "persistentvolumeclaims"], READ_WRITE),
                rule("storage.k8s.io", &["storageclasses"], READ),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("apps", &["controllerrevisions"], READ_WRITE),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["statefulsets.apps.kruise.io"],
        webhooks: &["mstatefulset.kb.io", "vstatefulset.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: daemonset::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(daemonset::setup(
                ctx,
                flags.workers(daemonset::CONTROLLER_NAME),
                flags.assign_pods_by_scheduler,
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["daemonsets"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["daemonsets/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps.kruise.io", &["daemonsets/finalizers"], &["update"]),
                rule("", &["pods"], READ_WRITE),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("", &["nodes"], READ),
                rule("apps", &["controllerrevisions"], READ_WRITE),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["daemonsets.apps.kruise.io"],
        webhooks: &["mdaemonset.kb.io", "vdaemonset.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: broadcastjob::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(broadcastjob::setup(
                ctx,
                flags.workers(broadcastjob::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["broadcastjobs"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["broadcastjobs/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps.kruise.io", &["broadcastjobs/finalizers"], &["update"]),
                rule("", &["pods"], READ_WRITE),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("", &["nodes"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["broadcastjobs.apps.kruise.io"],
        webhooks: &["mbroadcastjob.kb.io", "vbroadcastjob.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: containerrecreaterequest::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(containerrecreaterequest::setup(
                ctx,
                flags.workers(containerrecreaterequest::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["containerrecreaterequests"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["containerrecreaterequests/status"],
                    &["get", "patch", "update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["containerrecreaterequests/finalizers"],
                    &["update"],
                ),
                rule("", &["pods"], READ),
                rule("", &["pods/status"], &["get", "patch", "update"]),
            ]
        },
        workers: Some(3),
        workers_flag: Some("crr-workers"),
        crds: containerrecreaterequest::CRDS,
        webhooks: &["mcontainerrecreaterequest.kb.io"],
        gates: &[Feature::KruiseDaemon],
        requires: &[],
    },
    ControllerEntry {
        name: sidecarterminator::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(sidecarterminator::setup(
                ctx,
                flags.workers(sidecarterminator::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                // `update`: the in-place image update of sidecars on virtual-kubelet nodes.
                rule("", &["pods"], &["get", "list", "watch", "update"]),
                rule("", &["pods/status"], &["patch", "update"]),
                rule(
                    "apps.kruise.io",
                    &["containerrecreaterequests"],
                    &["create", "get", "list", "watch"],
                ),
                rule("", &["nodes"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: sidecarterminator::CRDS,
        webhooks: &["mcontainerrecreaterequest.kb.io"],
        gates: &[Feature::SidecarTerminator],
        requires: &[],
    },
    ControllerEntry {
        name: podprobemarker::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(podprobemarker::setup(
                ctx,
                flags.workers(podprobemarker::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["podprobemarkers"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["podprobemarkers/status"],
                    &["get", "patch", "update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["podprobemarkers/finalizers"],
                    &["update"],
                ),
                rule("apps.kruise.io", &["nodepodprobes"], READ_WRITE),
                // `patch`: the marks on serverless pods (gate EnablePodProbeMarkerOnServerless).
                rule("", &["pods"], &["get", "list", "watch", "patch"]),
                rule("", &["nodes"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: podprobemarker::CRDS,
        webhooks: &["vpodprobemarker.kb.io"],
        gates: &[Feature::PodProbeMarkerGate],
        requires: &[],
    },
    ControllerEntry {
        name: nodepodprobe::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(nodepodprobe::setup(
                ctx,
                flags.workers(nodepodprobe::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["nodepodprobes"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["nodepodprobes/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps.kruise.io", &["podprobemarkers"], READ),
                rule("", &["pods"], READ),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("", &["nodes"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: nodepodprobe::CRDS,
        webhooks: &[],
        gates: &[Feature::PodProbeMarkerGate],
        requires: &[Feature::KruiseDaemon],
    },
    ControllerEntry {
        name: sidecarset::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(sidecarset::setup(
                ctx,
                flags.workers(sidecarset::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["sidecarsets"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["sidecarsets/status"],
                    &["get", "patch", "update"],
                ),
                rule("", &["pods"], &["get", "list", "patch", "update", "watch"]),
                rule("", &["pods/status"], &["get", "patch", "update"]),
                rule("", &["namespaces"], READ),
                rule("apps", &["controllerrevisions"], READ_WRITE),
                // Replacing pods created without their sidecars (opt-in, `repair`).
                rule("", &["pods/eviction"], &["create"]),
                rule("apps", &["replicasets", "deployments"], &["get"]),
                rule("apps.kruise.io", &["clonesets"], &["get"]),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["sidecarsets.apps.kruise.io"],
        webhooks: &["msidecarset.kb.io", "vsidecarset.kb.io", "mpod.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: podunavailablebudget::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(podunavailablebudget::setup(
                ctx,
                flags.workers(podunavailablebudget::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "policy.kruise.io",
                    &["podunavailablebudgets"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "policy.kruise.io",
                    &["podunavailablebudgets/status"],
                    &["get", "patch", "update"],
                ),
                rule("", &["pods"], &["get", "list", "patch", "watch"]),
                rule("", &["replicationcontrollers"], READ),
                rule(
                    "apps",
                    &["deployments", "replicasets", "statefulsets"],
                    READ,
                ),
                rule("apps.kruise.io", &["clonesets", "statefulsets"], READ),
                // Workloads of other kinds, through their scale subresource (OpenKruise's
                // `*/scale` rule).
                rule("*", &["*/scale"], &["get", "list", "watch"]),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["podunavailablebudgets.policy.kruise.io"],
        webhooks: &[
            "vpodunavailablebudget.kb.io",
            "vpod.kb.io",
            "vpodeviction.kb.io",
            "mpod.kb.io",
        ],
        gates: &[
            Feature::PodUnavailableBudgetDeleteGate,
            Feature::PodUnavailableBudgetUpdateGate,
        ],
        requires: &[],
    },
    ControllerEntry {
        name: poddeletionflowcontrol::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(poddeletionflowcontrol::setup(
                ctx,
                flags.workers(poddeletionflowcontrol::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    kruise_api::rspolicy::GROUP,
                    &["poddeletionflowcontrols"],
                    &["get", "list", "watch"],
                ),
                rule(
                    kruise_api::rspolicy::GROUP,
                    &["poddeletionflowcontrols/status"],
                    &["get", "patch", "update"],
                ),
            ]
        },
        workers: Some(1),
        workers_flag: None,
        crds: &[poddeletionflowcontrol::CRD],
        webhooks: &["vpod.kb.io", "vpodeviction.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: autobudget::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(autobudget::setup(
                ctx,
                flags.workers(autobudget::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("policy.kruise.io", &["podunavailablebudgets"], READ_WRITE),
                rule("apps", &["deployments", "statefulsets"], READ),
                rule("apps.kruise.io", &["clonesets", "statefulsets"], READ),
                // Owner references with `blockOwnerDeletion` to the workloads (checked by
                // the OwnerReferencesPermissionEnforcement admission plugin where enabled).
                rule(
                    "apps",
                    &["deployments/finalizers", "statefulsets/finalizers"],
                    &["update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["clonesets/finalizers", "statefulsets/finalizers"],
                    &["update"],
                ),
            ]
        },
        workers: Some(1),
        workers_flag: None,
        crds: &[
            "podunavailablebudgets.policy.kruise.io",
            "clonesets.apps.kruise.io",
            "statefulsets.apps.kruise.io",
        ],
        webhooks: &["vpodunavailablebudget.kb.io"],
        gates: &[
            Feature::PodUnavailableBudgetDeleteGate,
            Feature::PodUnavailableBudgetUpdateGate,
        ],
        requires: &[],
    },
    ControllerEntry {
        name: advancedcronjob::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(advancedcronjob::setup(
                ctx,
                flags.workers(advancedcronjob::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["advancedcronjobs"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["advancedcronjobs/status"],
                    &["get", "patch", "update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["advancedcronjobs/finalizers"],
                    &["update"],
                ),
                rule("batch", &["jobs"], READ_WRITE),
                rule("apps.kruise.io", &["broadcastjobs"], READ_WRITE),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: advancedcronjob::CRDS,
        webhooks: &["madvancedcronjob.kb.io", "vadvancedcronjob.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: resourcedistribution::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(resourcedistribution::setup(
                ctx,
                flags.workers(resourcedistribution::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["resourcedistributions"],
                    &["get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["resourcedistributions/status"],
                    &["get", "patch", "update"],
                ),
                rule("", &["secrets", "configmaps"], READ_WRITE),
                rule("", &["namespaces"], READ),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: resourcedistribution::CRDS,
        webhooks: &["vresourcedistribution.kb.io"],
        gates: &[Feature::ResourceDistributionGate],
        requires: &[],
    },
    ControllerEntry {
        name: podreadiness::CONTROLLER_NAME,
        setup: |ctx, _| Box::pin(podreadiness::setup(ctx)),
        rules: || {
            vec![
                rule("", &["pods"], READ),
                rule("", &["pods/status"], &["get", "patch", "update"]),
            ]
        },
        workers: None,
        workers_flag: None,
        crds: &[],
        webhooks: &["mpod.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: containerlaunchpriority::CONTROLLER_NAME,
        setup: |ctx, _| Box::pin(containerlaunchpriority::setup(ctx)),
        rules: || {
            vec![
                rule("", &["pods"], &["get", "list", "watch", "patch"]),
                rule("", &["configmaps"], &["get", "create", "patch"]),
            ]
        },
        workers: None,
        workers_flag: None,
        crds: &[],
        webhooks: &["mpod.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: ephemeraljob::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(ephemeraljob::setup(
                ctx,
                flags.workers(ephemeraljob::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule(
                    "apps.kruise.io",
                    &["ephemeraljobs"],
                    &["delete", "get", "list", "patch", "update", "watch"],
                ),
                rule(
                    "apps.kruise.io",
                    &["ephemeraljobs/status", "ephemeraljobs/finalizers"],
                    &["get", "patch", "update"],
                ),
                rule("", &["pods"], &["get", "list", "watch"]),
                rule(
                    "",
                    &["pods/ephemeralcontainers"],
                    &["get", "patch", "update"],
                ),
            ]
        },
        workers: Some(10),
        workers_flag: None,
        crds: &["ephemeraljobs.apps.kruise.io"],
        webhooks: &["vephemeraljobs.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: persistentpodstate::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(persistentpodstate::setup(
                ctx,
                flags.workers(persistentpodstate::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["persistentpodstates"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["persistentpodstates/status"],
                    &["get", "patch", "update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["persistentpodstates/finalizers"],
                    &["update"],
                ),
                rule("", &["pods"], READ),
                rule("", &["nodes"], READ),
                rule("", &["configmaps"], READ),
                rule("", &["replicationcontrollers"], READ),
                rule(
                    "apps",
                    &["deployments", "replicasets", "statefulsets"],
                    READ,
                ),
                rule("apps.kruise.io", &["clonesets", "statefulsets"], READ),
                rule("*", &["*/scale"], &["get", "list", "watch"]),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["persistentpodstates.apps.kruise.io"],
        webhooks: &["vpersistentpodstate.kb.io", "mpod.kb.io"],
        gates: &[],
        requires: &[],
    },
    ControllerEntry {
        name: workloadspread::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(workloadspread::setup(
                ctx,
                flags.workers(workloadspread::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["workloadspreads"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["workloadspreads/status"],
                    &["get", "patch", "update"],
                ),
                rule("", &["pods"], &["get", "list", "patch", "watch", "delete"]),
                rule("", &["nodes", "replicationcontrollers"], READ),
                rule("", &["configmaps"], READ),
                rule(
                    "apps",
                    &["deployments", "replicasets", "statefulsets"],
                    READ,
                ),
                rule("batch", &["jobs"], READ),
                rule("apps.kruise.io", &["clonesets", "statefulsets"], READ),
                // Whitelisted custom workloads, and others through their scale subresource.
                rule("*", &["*/scale"], &["get", "list", "watch"]),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: &["workloadspreads.apps.kruise.io"],
        webhooks: &[
            "vworkloadspread.kb.io",
            "mpod.kb.io",
            "vpod.kb.io",
            "vpodeviction.kb.io",
        ],
        gates: &[Feature::WorkloadSpread],
        requires: &[],
    },
    ControllerEntry {
        name: uniteddeployment::CONTROLLER_NAME,
        setup: |ctx, flags| {
            Box::pin(uniteddeployment::setup(
                ctx,
                flags.workers(uniteddeployment::CONTROLLER_NAME),
            ))
        },
        rules: || {
            vec![
                rule("apps.kruise.io", &["uniteddeployments"], READ_WRITE),
                rule(
                    "apps.kruise.io",
                    &["uniteddeployments/status"],
                    &["get", "patch", "update"],
                ),
                rule(
                    "apps.kruise.io",
                    &["uniteddeployments/finalizers"],
                    &["update"],
                ),
                rule("apps", &["statefulsets", "deployments"], READ_WRITE),
                rule(
                    "apps",
                    &["statefulsets/status", "deployments/status"],
                    &["get", "patch", "update"],
                ),
                rule("apps", &["replicasets"], READ),
                rule("apps.kruise.io", &["clonesets", "statefulsets"], READ_WRITE),
                rule("apps", &["controllerrevisions"], READ_WRITE),
                rule("", &["pods"], &["get", "list", "watch", "patch", "delete"]),
            ]
        },
        workers: Some(3),
        workers_flag: None,
        crds: uniteddeployment::CRDS,
        webhooks: &["muniteddeployment.kb.io", "vuniteddeployment.kb.io"],
        gates: &[],
        requires: &[],
    },
];

#[cfg(test)]
mod registry_tests {
    use super::*;

    /// Every admission webhook is served by some controller's entry, every name an entry claims
    /// is a webhook, and every CRD an entry names is one kruise-rs installs.
    #[test]
    fn controllers_claim_every_webhook_and_name_real_crds() {
        let all = webhooks_of(|_| true);
        for e in kruise_webhook::registry::REGISTRY {
            assert!(all.contains(e.name), "no controller serves {}", e.name);
        }
        for name in &all {
            assert!(
                kruise_webhook::registry::REGISTRY
                    .iter()
                    .any(|e| e.name == *name),
                "{name} is not a webhook"
            );
        }
        let bases = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/bases");
        for crd in crds_of(|_| true) {
            let (plural, group) = crd.split_once('.').expect("plural.group");
            assert!(
                bases.join(format!("{group}_{plural}.yaml")).is_file(),
                "{crd} is not in config/crd/bases"
            );
        }
        // One controller alone serves only its own webhooks (and those of no controller).
        let cloneset = webhooks_of(|n| n == "cloneset");
        let own: Vec<_> = cloneset
            .into_iter()
            .filter(|w| !ALWAYS_SERVED.contains(w))
            .collect();
        assert_eq!(own, ["mcloneset.kb.io", "vcloneset.kb.io"]);
    }
}
