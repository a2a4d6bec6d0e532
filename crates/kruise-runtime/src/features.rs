//! Feature gates of OpenKruise v1.9.0.
//!
//! [`Feature`] lists every gate OpenKruise v1.9.0 registers, each with its v1.9.0 default and
//! maturity ([`PreRelease`]). [`FeatureGates::parse`] reads the value of `--feature-gates` the way
//! Kubernetes' component-base does:
//!
//! - a comma-separated list of `Name=bool` pairs (whitespace around names and values ignored,
//!   empty items skipped, booleans as Go's `strconv.ParseBool` accepts them: `1 t T TRUE true
//!   True 0 f F FALSE false False`);
//! - an unknown name is an error naming it; a pair without `=` or with a bad boolean is an error;
//! - the pseudo-gates `AllAlpha` / `AllBeta` set every alpha / beta gate that the list does not
//!   set explicitly (explicit settings win regardless of their position in the list).
//!
//! After the flag, the dependency rules OpenKruise applies at start-up (its
//! `SetDefaultFeatureGates`) are enforced, in this order:
//!
//! 1. `PodWebhook=false` switches off the gates that need the pod webhook: `KruisePodReadinessGate`,
//!    `PodUnavailableBudgetDeleteGate`, `PodUnavailableBudgetUpdateGate`, `WorkloadSpread`,
//!    `SidecarSetPatchPodMetadataDefaultsAllowed`, `EnhancedLivenessProbe`,
//!    `EnablePodProbeMarkerOnServerless`;
//! 2. `KruiseDaemon=false` switches off the gates that need kruise-daemon:
//!    `PreDownloadImageForInPlaceUpdate`, `DaemonWatchingPod`, `InPlaceUpdateEnvFromMetadata`,
//!    `PreDownloadImageForDaemonSetUpdate`, `PodProbeMarkerGate`, `SidecarTerminator`,
//!    `ImagePullJobGate`, `EnhancedLivenessProbe`;
//! 3. either image pre-download gate switches `ImagePullJobGate` on;
//! 4. `ResourcesDeletionProtection=false` switches off `DeletionProtectionForCRDCascadingGate`.
//!
//! OpenKruise's legacy `CUSTOM_RESOURCE_ENABLE` environment variable is honoured too (see
//! [`FeatureGates::parse_with_env`]): when it is set and does not list `SidecarSet`, the default of
//! `PodWebhook` becomes `false`.

use std::fmt;

/// Maturity of a feature gate (as in component-base).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PreRelease {
    /// Alpha: off by default unless stated; affected by `AllAlpha`.
    Alpha,
    /// Beta: affected by `AllBeta`.
    Beta,
}

macro_rules! features {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $default:literal, $pre:ident; )*) => {
        /// One OpenKruise v1.9.0 feature gate.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Feature {
            $( $(#[$doc])* $variant, )*
        }

        impl Feature {
            /// Every gate, in declaration order.
            pub const ALL: &'static [Feature] = &[ $( Feature::$variant, )* ];

            /// The gate's name as written in `--feature-gates`.
            pub const fn name(self) -> &'static str {
                match self { $( Feature::$variant => $name, )* }
            }

            /// The gate's default in OpenKruise v1.9.0 (before dependency rules).
            pub const fn default_enabled(self) -> bool {
                match self { $( Feature::$variant => $default, )* }
            }

            /// The gate's maturity in OpenKruise v1.9.0.
            pub const fn pre_release(self) -> PreRelease {
                match self { $( Feature::$variant => PreRelease::$pre, )* }
            }
        }
    };
}

features! {
    /// Pod mutating/validating webhook of kruise-manager.
    PodWebhook = "PodWebhook", true, Beta;
    /// kruise-daemon (the per-node agent) is deployed.
    KruiseDaemon = "KruiseDaemon", true, Beta;
    /// kruise-daemon watches pods on its node.
    DaemonWatchingPod = "DaemonWatchingPod", true, Beta;
    /// CloneSet pods get the short revision hash label.
    CloneSetShortHash = "CloneSetShortHash", false, Alpha;
    /// Pods created by Kruise workloads get the `KruisePodReady` readiness gate.
    KruisePodReadinessGate = "KruisePodReadinessGate", false, Alpha;
    /// Images of a new revision are pre-pulled before an in-place update.
    PreDownloadImageForInPlaceUpdate = "PreDownloadImageForInPlaceUpdate", false, Alpha;
    /// CloneSet partition may roll pods back to the old revision.
    CloneSetPartitionRollback = "CloneSetPartitionRollback", false, Alpha;
    /// Deletion protection webhook for namespaces, CRDs and workloads.
    ResourcesDeletionProtection = "ResourcesDeletionProtection", false, Beta;
    /// PodUnavailableBudget guards pod deletion/eviction.
    PodUnavailableBudgetDeleteGate = "PodUnavailableBudgetDeleteGate", true, Beta;
    /// PodUnavailableBudget guards in-place pod updates.
    PodUnavailableBudgetUpdateGate = "PodUnavailableBudgetUpdateGate", false, Alpha;
    /// WorkloadSpread controller and webhook.
    WorkloadSpread = "WorkloadSpread", true, Beta;
    /// Workload pod templates are not defaulted by the webhook.
    TemplateNoDefaults = "TemplateNoDefaults", false, Alpha;
    /// Env vars sourced from pod metadata can be updated in place.
    InPlaceUpdateEnvFromMetadata = "InPlaceUpdateEnvFromMetadata", true, Beta;
    /// Advanced StatefulSet PVC retention policy.
    StatefulSetAutoDeletePVC = "StatefulSetAutoDeletePVC", true, Beta;
    /// SidecarSet `patchPodMetadata` may use the default allowed annotations.
    SidecarSetPatchPodMetadataDefaultsAllowed = "SidecarSetPatchPodMetadataDefaultsAllowed", false, Alpha;
    /// Sidecar containers of completed job pods are terminated.
    SidecarTerminator = "SidecarTerminator", false, Alpha;
    /// PodProbeMarker controller.
    PodProbeMarkerGate = "PodProbeMarkerGate", true, Beta;
    /// Images are pre-pulled before an Advanced DaemonSet update.
    PreDownloadImageForDaemonSetUpdate = "PreDownloadImageForDaemonSetUpdate", false, Alpha;
    /// CloneSet pod event handler only enqueues on relevant changes.
    CloneSetEventHandlerOptimization = "CloneSetEventHandlerOptimization", false, Alpha;
    /// Pods in the `PreparingUpdate` lifecycle state count as updating.
    PreparingUpdateAsUpdate = "PreparingUpdateAsUpdate", false, Alpha;
    /// ImagePullJob / NodeImage controllers.
    ImagePullJobGate = "ImagePullJobGate", false, Alpha;
    /// ResourceDistribution controller.
    ResourceDistributionGate = "ResourceDistributionGate", false, Alpha;
    /// Deletion protection also covers cascading CRD deletion.
    DeletionProtectionForCRDCascadingGate = "DeletionProtectionForCRDCascadingGate", false, Alpha;
    /// Enhanced liveness probe handled by kruise-daemon.
    EnhancedLivenessProbe = "EnhancedLivenessProbe", false, Alpha;
    /// CloneSet recreates pods when volumeClaimTemplates change.
    RecreatePodWhenChangeVCTInCloneSetGate = "RecreatePodWhenChangeVCTInCloneSetGate", false, Alpha;
    /// Advanced StatefulSet `ordinals.start`.
    StatefulSetStartOrdinal = "StatefulSetStartOrdinal", false, Alpha;
    /// Pods get a pod-index label.
    PodIndexLabel = "PodIndexLabel", true, Beta;
    /// Webhook certificates are provided externally.
    EnableExternalCerts = "EnableExternalCerts", false, Alpha;
    /// Advanced StatefulSet resizes PVCs when volumeClaimTemplates grow.
    StatefulSetAutoResizePVCGate = "StatefulSetAutoResizePVCGate", false, Alpha;
    /// Expectations that time out are force-deleted instead of only reported.
    ForceDeleteTimeoutExpectationGate = "ForceDeleteTimeoutExpectationGate", false, Alpha;
    /// Workloads may resize pod resources in place.
    InPlaceWorkloadVerticalScaling = "InPlaceWorkloadVerticalScaling", false, Alpha;
    /// PodProbeMarker on serverless (virtual-kubelet) pods.
    EnablePodProbeMarkerOnServerless = "EnablePodProbeMarkerOnServerless", false, Alpha;
    /// Sidecar containers are ordered by name.
    EnableSortSidecarContainerByName = "EnableSortSidecarContainerByName", false, Alpha;
    /// In-place pod vertical scaling (resource resize).
    InPlacePodVerticalScaling = "InPlacePodVerticalScaling", false, Alpha;
}

impl Feature {
    /// What is missing for this gate to do what OpenKruise v1.9.0's does, or `None` when
    /// kruise-rs implements it. The manager and kruise-daemon warn once at start-up for every
    /// enabled gate with something missing ([`warn_unimplemented`]) and export it as the gauge
    /// `kruise_feature_gate_unimplemented{name}`; a test checks that every other gate is read by
    /// code, so a new gate cannot be accepted silently.
    pub const fn unimplemented(self) -> Option<&'static str> {
        use Feature::*;
        match self {
            EnablePodProbeMarkerOnServerless => Some(
                "the pod webhook's PodProbeMarker step for serverless pods is not implemented: pods on virtual-kubelet nodes get no kruise.io/podprobe annotation",
            ),
            ImagePullJobGate => Some(
                "ImagePullJob, ImageListPullJob and NodeImage are not implemented: no image is pulled",
            ),
            PreDownloadImageForInPlaceUpdate => Some(
                "image pre-download needs kruise-daemon's image puller, which is not implemented: CloneSet creates its ImagePullJobs but nothing pulls the images",
            ),
            PreDownloadImageForDaemonSetUpdate => Some(
                "Advanced DaemonSet image pre-download needs kruise-daemon's image puller, which is not implemented: updates proceed without pre-pulling",
            ),
            EnhancedLivenessProbe => {
                Some("the enhanced liveness probe (NodePodProbe-based) is not implemented")
            }
            InPlaceWorkloadVerticalScaling | InPlacePodVerticalScaling => Some(
                "in-place resource resize is not implemented: a resources change recreates pods",
            ),
            CloneSetEventHandlerOptimization => Some(
                "not implemented: the CloneSet controller reconciles on every pod change (same results, more reconciles)",
            ),
            _ => None,
        }
    }

    /// Looks a gate up by its exact (case-sensitive) name.
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.iter().copied().find(|f| f.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The pseudo-gate enabling/disabling every alpha gate not set explicitly.
pub const ALL_ALPHA: &str = "AllAlpha";
/// The pseudo-gate enabling/disabling every beta gate not set explicitly.
pub const ALL_BETA: &str = "AllBeta";

/// Errors of parsing `--feature-gates`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// A name that is neither a known gate nor `AllAlpha`/`AllBeta`.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
    /// An item without `=`.
    #[error("missing bool value for feature gate {0}")]
    MissingValue(String),
    /// A value that is not a boolean.
    #[error("invalid value of feature gate {name}={value}: not a boolean")]
    InvalidValue {
        /// The gate.
        name: String,
        /// The offending value.
        value: String,
    },
}

/// The effective state of every [`Feature`].
#[derive(Clone, PartialEq, Eq)]
pub struct FeatureGates {
    enabled: Vec<bool>,
}

impl Default for FeatureGates {
    /// OpenKruise v1.9.0 defaults with the dependency rules applied.
    fn default() -> Self {
        // An empty flag cannot fail to parse.
        Self::parse("").unwrap_or_else(|_| Self::from_defaults(false))
    }
}

impl fmt::Debug for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FeatureGates({self})")
    }
}

impl fmt::Display for FeatureGates {
    /// `Name=true,Name=false,…` for every gate, in declaration order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, feature) in Feature::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", feature.name(), self.enabled(*feature))?;
        }
        Ok(())
    }
}

/// Parses a boolean like Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    fn from_defaults(pod_webhook_off_by_env: bool) -> Self {
        let mut enabled: Vec<bool> = Feature::ALL.iter().map(|f| f.default_enabled()).collect();
        if pod_webhook_off_by_env {
            enabled[Feature::PodWebhook.index()] = false;
        }
        Self { enabled }
    }

    /// Parses the value of `--feature-gates` on top of the v1.9.0 defaults and applies the
    /// dependency rules. An empty string yields the defaults.
    ///
    /// # Errors
    /// [`FeatureGateError`] for an unknown gate, an item without `=`, or a non-boolean value.
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        Self::parse_with_env(spec, None)
    }

    /// Like [`parse`](Self::parse), also honouring the legacy `CUSTOM_RESOURCE_ENABLE` value
    /// (a comma-separated list of enabled kinds): when it is given, non-blank, and lacks
    /// `SidecarSet`, `PodWebhook` defaults to `false`.
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn parse_with_env(
        spec: &str,
        custom_resource_enable: Option<&str>,
    ) -> Result<Self, FeatureGateError> {
        let webhook_off = custom_resource_enable
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .is_some_and(|s| !s.split(',').any(|kind| kind == "SidecarSet"));
        let mut gates = Self::from_defaults(webhook_off);

        let mut explicit: Vec<Option<bool>> = vec![None; Feature::ALL.len()];
        let mut all_alpha = None;
        let mut all_beta = None;
        for item in spec.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((name, value)) = item.split_once('=') else {
                return Err(FeatureGateError::MissingValue(item.to_string()));
            };
            let (name, value) = (name.trim(), value.trim());
            let parsed = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
                name: name.to_string(),
                value: value.to_string(),
            })?;
            match name {
                ALL_ALPHA => all_alpha = Some(parsed),
                ALL_BETA => all_beta = Some(parsed),
                _ => {
                    let feature = Feature::from_name(name)
                        .ok_or_else(|| FeatureGateError::Unknown(name.to_string()))?;
                    explicit[feature.index()] = Some(parsed);
                }
            }
        }

        for feature in Feature::ALL {
            let i = feature.index();
            let blanket = match feature.pre_release() {
                PreRelease::Alpha => all_alpha,
                PreRelease::Beta => all_beta,
            };
            if let Some(v) = explicit[i].or(blanket) {
                gates.enabled[i] = v;
            }
        }
        gates.apply_dependencies();
        Ok(gates)
    }

    /// Applies OpenKruise's start-up dependency rules (see the module docs) in place.
    pub fn apply_dependencies(&mut self) {
        use Feature::*;
        if !self.enabled(PodWebhook) {
            for f in [
                KruisePodReadinessGate,
                PodUnavailableBudgetDeleteGate,
                PodUnavailableBudgetUpdateGate,
                WorkloadSpread,
                SidecarSetPatchPodMetadataDefaultsAllowed,
                EnhancedLivenessProbe,
                EnablePodProbeMarkerOnServerless,
            ] {
                self.set(f, false);
            }
        }
        if !self.enabled(KruiseDaemon) {
            for f in [
                PreDownloadImageForInPlaceUpdate,
                DaemonWatchingPod,
                InPlaceUpdateEnvFromMetadata,
                PreDownloadImageForDaemonSetUpdate,
                PodProbeMarkerGate,
                SidecarTerminator,
                ImagePullJobGate,
                EnhancedLivenessProbe,
            ] {
                self.set(f, false);
            }
        }
        if self.enabled(PreDownloadImageForInPlaceUpdate)
            || self.enabled(PreDownloadImageForDaemonSetUpdate)
        {
            self.set(ImagePullJobGate, true);
        }
        if !self.enabled(ResourcesDeletionProtection) {
            self.set(DeletionProtectionForCRDCascadingGate, false);
        }
    }

    /// Whether `feature` is enabled.
    pub fn enabled(&self, feature: Feature) -> bool {
        self.enabled.get(feature.index()).copied().unwrap_or(false)
    }

    /// Forces `feature` to `value` (no dependency rules re-applied). Meant for tests and for
    /// code that builds a gate set programmatically.
    pub fn set(&mut self, feature: Feature, value: bool) {
        if let Some(slot) = self.enabled.get_mut(feature.index()) {
            *slot = value;
        }
    }

    /// Builder form of [`set`](Self::set).
    #[must_use]
    pub fn with(mut self, feature: Feature, value: bool) -> Self {
        self.set(feature, value);
        self
    }
}

/// The enabled gates whose feature kruise-rs lacks ([`Feature::unimplemented`]), with what is
/// missing, in declaration order.
pub fn enabled_unimplemented(gates: &FeatureGates) -> Vec<(Feature, &'static str)> {
    Feature::ALL
        .iter()
        .filter(|f| gates.enabled(**f))
        .filter_map(|f| f.unimplemented().map(|why| (*f, why)))
        .collect()
}

/// Logs one warning per enabled gate whose feature kruise-rs lacks, and registers the gauge
/// `kruise_feature_gate_unimplemented{name}` in `registry`: 1 for each such enabled gate, 0 for
/// the other gates kruise-rs lacks. Start-up goes on: OpenKruise's chart defaults and
/// `AllAlpha`/`AllBeta` must keep working.
pub fn warn_unimplemented(gates: &FeatureGates, registry: &crate::metrics::Metrics) {
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct GateLabel {
        name: String,
    }
    let gauge = Family::<GateLabel, Gauge>::default();
    for f in Feature::ALL.iter().filter(|f| f.unimplemented().is_some()) {
        gauge
            .get_or_create(&GateLabel {
                name: f.name().to_owned(),
            })
            .set(i64::from(gates.enabled(*f)));
    }
    registry.register(
        "kruise_feature_gate_unimplemented",
        "1 for an enabled feature gate whose feature kruise-rs does not implement yet (0: such a gate, disabled)",
        gauge,
    );
    for (f, why) in enabled_unimplemented(gates) {
        tracing::warn!(gate = f.name(), "feature gate {}=true: {why}", f.name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Feature::*;

    /// Every gate kruise-rs claims to implement is read somewhere: `Feature::<Name>` in the
    /// workspace's sources outside this file, or a dependency rule of
    /// [`FeatureGates::apply_dependencies`] that reads it (`self.enabled(<Name>)`). A new gate
    /// is therefore either wired to code or listed in [`Feature::unimplemented`].
    #[test]
    fn every_gate_is_read_by_code_or_listed_as_unimplemented() {
        fn sources(dir: &std::path::Path, out: &mut String) {
            for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
                let p = entry.path();
                if p.is_dir() {
                    sources(&p, out);
                } else if p.extension().is_some_and(|e| e == "rs")
                    && !p.ends_with("kruise-runtime/src/features.rs")
                {
                    out.push_str(&std::fs::read_to_string(&p).expect("read source"));
                }
            }
        }
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut text = String::new();
        for krate in std::fs::read_dir(&crates).expect("crates").flatten() {
            let src = krate.path().join("src");
            if src.is_dir() {
                sources(&src, &mut text);
            }
        }
        let own = include_str!("features.rs");
        let rules = own
            .split("pub fn apply_dependencies")
            .nth(1)
            .and_then(|r| r.split("pub fn enabled(").next())
            .expect("apply_dependencies");
        let mut silent = Vec::new();
        for f in Feature::ALL {
            let read = text.contains(&format!("Feature::{}", f.name()))
                || rules.contains(&format!("self.enabled({})", f.name()));
            if f.unimplemented().is_none() && !read {
                silent.push(f.name());
            }
        }
        assert!(
            silent.is_empty(),
            "gates neither read by code nor listed in Feature::unimplemented: {silent:?}"
        );
    }

    #[test]
    fn openkruise_defaults_and_the_e2e_gates_list_what_is_missing() {
        let defaults: Vec<_> = enabled_unimplemented(&FeatureGates::default())
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        assert_eq!(defaults, []);
        let all = FeatureGates::parse("AllAlpha=true,AllBeta=true").expect("parse");
        let missing = enabled_unimplemented(&all);
        assert!(missing.iter().any(|(f, _)| *f == ImagePullJobGate));
        assert!(missing.iter().all(|(_, why)| !why.is_empty()));
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        for f in Feature::ALL {
            assert_eq!(Feature::from_name(f.name()), Some(*f));
        }
        let mut names: Vec<_> = Feature::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Feature::ALL.len());
        assert_eq!(Feature::ALL.len(), 34);
        assert_eq!(EnhancedLivenessProbe.name(), "EnhancedLivenessProbe");
        assert_eq!(
            ForceDeleteTimeoutExpectationGate.name(),
            "ForceDeleteTimeoutExpectationGate"
        );
    }

    #[test]
    fn v190_defaults() {
        let g = FeatureGates::default();
        let on = [
            PodWebhook,
            KruiseDaemon,
            DaemonWatchingPod,
            PodUnavailableBudgetDeleteGate,
            WorkloadSpread,
            InPlaceUpdateEnvFromMetadata,
            StatefulSetAutoDeletePVC,
            PodProbeMarkerGate,
            PodIndexLabel,
        ];
        for f in Feature::ALL {
            assert_eq!(g.enabled(*f), on.contains(f), "{f}");
        }
    }

    #[test]
    fn parse_table() {
        let cases: &[(&str, &[(Feature, bool)])] = &[
            ("", &[(CloneSetShortHash, false)]),
            ("CloneSetShortHash=true", &[(CloneSetShortHash, true)]),
            (
                " CloneSetShortHash = T , PodIndexLabel=0 ,",
                &[(CloneSetShortHash, true), (PodIndexLabel, false)],
            ),
            ("PodIndexLabel=False", &[(PodIndexLabel, false)]),
            // last occurrence wins
            (
                "CloneSetShortHash=true,CloneSetShortHash=false",
                &[(CloneSetShortHash, false)],
            ),
            // AllAlpha sets alphas, not betas; explicit settings win in any order
            (
                "CloneSetShortHash=false,AllAlpha=true",
                &[
                    (CloneSetShortHash, false),
                    (CloneSetPartitionRollback, true),
                    (PodIndexLabel, true),
                ],
            ),
            (
                "AllBeta=false,KruiseDaemon=true",
                &[
                    (KruiseDaemon, true),
                    (PodWebhook, false),
                    (WorkloadSpread, false),
                    (CloneSetShortHash, false),
                ],
            ),
        ];
        for (spec, expect) in cases {
            let g = FeatureGates::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            for (f, v) in *expect {
                assert_eq!(g.enabled(*f), *v, "{spec}: {f}");
            }
        }
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            FeatureGates::parse("NoSuchGate=true"),
            Err(FeatureGateError::Unknown("NoSuchGate".into()))
        );
        let err = FeatureGates::parse("CloneSetShortHash=true,Bogus=false").unwrap_err();
        assert!(err.to_string().contains("Bogus"), "{err}");
        assert_eq!(
            FeatureGates::parse("CloneSetShortHash"),
            Err(FeatureGateError::MissingValue("CloneSetShortHash".into()))
        );
        assert!(matches!(
            FeatureGates::parse("CloneSetShortHash=yes"),
            Err(FeatureGateError::InvalidValue { .. })
        ));
        // names are case-sensitive
        assert!(FeatureGates::parse("cloneSetShortHash=true").is_err());
    }

    #[test]
    fn kruise_daemon_off_disables_dependents() {
        let g = FeatureGates::parse(
            "KruiseDaemon=false,PreDownloadImageForInPlaceUpdate=true,ImagePullJobGate=true,SidecarTerminator=true",
        )
        .unwrap();
        for f in [
            PreDownloadImageForInPlaceUpdate,
            DaemonWatchingPod,
            InPlaceUpdateEnvFromMetadata,
            PreDownloadImageForDaemonSetUpdate,
            PodProbeMarkerGate,
            SidecarTerminator,
            ImagePullJobGate,
            EnhancedLivenessProbe,
        ] {
            assert!(!g.enabled(f), "{f}");
        }
        assert!(g.enabled(PodWebhook));
    }

    #[test]
    fn pod_webhook_off_disables_dependents() {
        let g = FeatureGates::parse("PodWebhook=false,KruisePodReadinessGate=true").unwrap();
        for f in [
            KruisePodReadinessGate,
            PodUnavailableBudgetDeleteGate,
            PodUnavailableBudgetUpdateGate,
            WorkloadSpread,
            SidecarSetPatchPodMetadataDefaultsAllowed,
            EnhancedLivenessProbe,
            EnablePodProbeMarkerOnServerless,
        ] {
            assert!(!g.enabled(f), "{f}");
        }
        assert!(g.enabled(KruiseDaemon));
    }

    #[test]
    fn pre_download_turns_on_image_pull_jobs() {
        let g = FeatureGates::parse("PreDownloadImageForInPlaceUpdate=true").unwrap();
        assert!(g.enabled(ImagePullJobGate));
        let g =
            FeatureGates::parse("PreDownloadImageForDaemonSetUpdate=true,ImagePullJobGate=false")
                .unwrap();
        assert!(g.enabled(ImagePullJobGate));
    }

    #[test]
    fn deletion_protection_cascading_needs_protection() {
        let g = FeatureGates::parse("DeletionProtectionForCRDCascadingGate=true").unwrap();
        assert!(!g.enabled(DeletionProtectionForCRDCascadingGate));
        let g = FeatureGates::parse(
            "DeletionProtectionForCRDCascadingGate=true,ResourcesDeletionProtection=true",
        )
        .unwrap();
        assert!(g.enabled(DeletionProtectionForCRDCascadingGate));
    }

    #[test]
    fn custom_resource_enable_env() {
        let g = FeatureGates::parse_with_env("", Some("CloneSet,BroadcastJob")).unwrap();
        assert!(!g.enabled(PodWebhook));
        assert!(!g.enabled(WorkloadSpread));
        let g = FeatureGates::parse_with_env("", Some("CloneSet,SidecarSet")).unwrap();
        assert!(g.enabled(PodWebhook));
        let g = FeatureGates::parse_with_env("PodWebhook=true", Some("CloneSet")).unwrap();
        assert!(g.enabled(PodWebhook));
        let g = FeatureGates::parse_with_env("", Some("  ")).unwrap();
        assert!(g.enabled(PodWebhook));
    }

    #[test]
    fn display_lists_every_gate() {
        let s = FeatureGates::default().to_string();
        assert_eq!(s.split(',').count(), Feature::ALL.len());
        assert!(s.contains("KruiseDaemon=true"));
        assert!(s.contains("CloneSetShortHash=false"));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn spec_strategy() -> impl Strategy<Value = Vec<(usize, bool)>> {
            proptest::collection::vec((0..Feature::ALL.len(), any::<bool>()), 0..20)
        }

        fn render(items: &[(usize, bool)], all_alpha: Option<bool>) -> String {
            let mut parts: Vec<String> = items
                .iter()
                .map(|(i, v)| format!("{}={v}", Feature::ALL[*i].name()))
                .collect();
            if let Some(v) = all_alpha {
                parts.push(format!("AllAlpha={v}"));
            }
            parts.join(",")
        }

        fn invariants_hold(g: &FeatureGates) -> bool {
            let daemon_deps = [
                PreDownloadImageForInPlaceUpdate,
                DaemonWatchingPod,
                InPlaceUpdateEnvFromMetadata,
                PreDownloadImageForDaemonSetUpdate,
                PodProbeMarkerGate,
                SidecarTerminator,
                ImagePullJobGate,
                EnhancedLivenessProbe,
            ];
            let webhook_deps = [
                KruisePodReadinessGate,
                PodUnavailableBudgetDeleteGate,
                PodUnavailableBudgetUpdateGate,
                WorkloadSpread,
                SidecarSetPatchPodMetadataDefaultsAllowed,
                EnhancedLivenessProbe,
                EnablePodProbeMarkerOnServerless,
            ];
            (g.enabled(KruiseDaemon) || daemon_deps.iter().all(|f| !g.enabled(*f)))
                && (g.enabled(PodWebhook) || webhook_deps.iter().all(|f| !g.enabled(*f)))
                && (g.enabled(ResourcesDeletionProtection)
                    || !g.enabled(DeletionProtectionForCRDCascadingGate))
                && (!(g.enabled(PreDownloadImageForInPlaceUpdate)
                    || g.enabled(PreDownloadImageForDaemonSetUpdate))
                    || g.enabled(ImagePullJobGate))
        }

        proptest! {
            #[test]
            fn parse_is_consistent(items in spec_strategy(), all_alpha in proptest::option::of(any::<bool>())) {
                let g = FeatureGates::parse(&render(&items, all_alpha)).unwrap();
                // Dependency rules always hold afterwards.
                prop_assert!(invariants_hold(&g));
                // The rendered state parses back to itself (rules are idempotent).
                prop_assert_eq!(FeatureGates::parse(&g.to_string()).unwrap(), g.clone());
                // Gates untouched by the rules keep the last explicit value.
                let ruled = [
                    KruisePodReadinessGate, PodUnavailableBudgetDeleteGate,
                    PodUnavailableBudgetUpdateGate, WorkloadSpread,
                    SidecarSetPatchPodMetadataDefaultsAllowed, EnhancedLivenessProbe,
                    EnablePodProbeMarkerOnServerless, PreDownloadImageForInPlaceUpdate,
                    DaemonWatchingPod, InPlaceUpdateEnvFromMetadata,
                    PreDownloadImageForDaemonSetUpdate, PodProbeMarkerGate, SidecarTerminator,
                    ImagePullJobGate, DeletionProtectionForCRDCascadingGate,
                ];
                for (i, _) in &items {
                    let f = Feature::ALL[*i];
                    let last = items.iter().rev().find(|(j, _)| j == i).map(|(_, v)| *v);
                    if !ruled.contains(&f) {
                        prop_assert_eq!(Some(g.enabled(f)), last, "{}", f);
                    }
                }
            }
        }
    }
}
