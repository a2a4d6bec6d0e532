//! Defaults of Advanced StatefulSet, as OpenKruise's mutating webhook
//! (`/mutate-apps-kruise-io-statefulset`) fills them in.
//!
//! OpenKruise defaults a v1alpha1 object by converting it to v1beta1, defaulting that, and
//! converting back; the v1beta1-only defaults (PVC retention policy, volume claim update
//! strategy) are therefore dropped for v1alpha1 objects, which is what
//! [`set_defaults_statefulset`] reproduces directly on the v1alpha1 fields.
//!
//! Not reproduced here: the pod template and claim template defaults (`SetDefaultPodSpec`,
//! the upstream `SetDefaults_PersistentVolumeClaim`, ...), which the webhook injects on create
//! and when the template changes unless the `TemplateNoDefaults` gate is on; and the webhook's
//! reset of `status` (the apiserver ignores status on main-resource writes anyway).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::apps::v1beta1::{
    persistent_volume_claim_retention_policy_type as retention, pod_management_policy_type,
    pod_update_strategy_type, statefulset_update_strategy_type, volume_claim_update_strategy_type,
};

/// Default of `spec.replicas`.
pub const DEFAULT_REPLICAS: i32 = 1;
/// Default of `spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// The OpenKruise feature gates that change the StatefulSet defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatefulSetDefaultGates {
    /// `StatefulSetAutoDeletePVC` (default on): default the PVC retention policy to
    /// `Retain`/`Retain`.
    pub auto_delete_pvc: bool,
    /// `StatefulSetAutoResizePVCGate` (default off): default `volumeClaimUpdateStrategy.type`
    /// to `OnDelete`.
    pub auto_resize_pvc: bool,
}

impl Default for StatefulSetDefaultGates {
    /// The gate defaults of OpenKruise v1.9.0.
    fn default() -> Self {
        Self {
            auto_delete_pvc: true,
            auto_resize_pvc: false,
        }
    }
}

fn set_if_none<T>(slot: &mut Option<T>, value: impl FnOnce() -> T) {
    if slot.is_none() {
        *slot = Some(value());
    }
}

/// Fills in the defaults of a v1alpha1 Advanced StatefulSet.
///
/// `podManagementPolicy: OrderedReady`, `updateStrategy.type: RollingUpdate`, and for a
/// rolling update `partition: 0`, `maxUnavailable: 1`, `podUpdatePolicy: ReCreate`,
/// `minReadySeconds: 0`; `replicas: 1`, `revisionHistoryLimit: 10`.
pub fn set_defaults_statefulset(obj: &mut a1::StatefulSet) {
    let spec = &mut obj.spec;
    if spec
        .pod_management_policy
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        spec.pod_management_policy = Some(pod_management_policy_type::ORDERED_READY.to_owned());
    }
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    if strategy.type_.as_deref().unwrap_or_default().is_empty() {
        strategy.type_ = Some(statefulset_update_strategy_type::ROLLING_UPDATE.to_owned());
    }
    if strategy.type_.as_deref() == Some(statefulset_update_strategy_type::ROLLING_UPDATE) {
        let ru = strategy.rolling_update.get_or_insert_with(Default::default);
        set_if_none(&mut ru.partition, || 0);
        set_if_none(&mut ru.max_unavailable, || IntOrString::Int(1));
        if ru
            .pod_update_policy
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            ru.pod_update_policy = Some(pod_update_strategy_type::RECREATE.to_owned());
        }
        set_if_none(&mut ru.min_ready_seconds, || 0);
    }
    set_if_none(&mut spec.replicas, || DEFAULT_REPLICAS);
    set_if_none(&mut spec.revision_history_limit, || {
        DEFAULT_REVISION_HISTORY_LIMIT
    });
}

/// Fills in the defaults of a v1beta1 Advanced StatefulSet with OpenKruise's default feature
/// gates (see [`set_defaults_statefulset_v1beta1_with_gates`]).
pub fn set_defaults_statefulset_v1beta1(obj: &mut b1::StatefulSet) {
    set_defaults_statefulset_v1beta1_with_gates(obj, StatefulSetDefaultGates::default());
}

/// Fills in the defaults of a v1beta1 Advanced StatefulSet.
///
/// Those of [`set_defaults_statefulset`], plus `persistentVolumeClaimRetentionPolicy`
/// `whenDeleted`/`whenScaled: Retain` (gate `StatefulSetAutoDeletePVC`) and
/// `volumeClaimUpdateStrategy.type: OnDelete` (gate `StatefulSetAutoResizePVCGate`).
pub fn set_defaults_statefulset_v1beta1_with_gates(
    obj: &mut b1::StatefulSet,
    gates: StatefulSetDefaultGates,
) {
    let spec = &mut obj.spec;
    if spec
        .pod_management_policy
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        spec.pod_management_policy = Some(pod_management_policy_type::ORDERED_READY.to_owned());
    }
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    if strategy.type_.as_deref().unwrap_or_default().is_empty() {
        strategy.type_ = Some(statefulset_update_strategy_type::ROLLING_UPDATE.to_owned());
    }
    if strategy.type_.as_deref() == Some(statefulset_update_strategy_type::ROLLING_UPDATE) {
        let ru = strategy.rolling_update.get_or_insert_with(Default::default);
        set_if_none(&mut ru.partition, || 0);
        set_if_none(&mut ru.max_unavailable, || IntOrString::Int(1));
        if ru
            .pod_update_policy
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            ru.pod_update_policy = Some(pod_update_strategy_type::RECREATE.to_owned());
        }
        set_if_none(&mut ru.min_ready_seconds, || 0);
    }
    if gates.auto_delete_pvc {
        let policy = spec
            .persistent_volume_claim_retention_policy
            .get_or_insert_with(Default::default);
        if policy
            .when_deleted
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            policy.when_deleted = Some(retention::RETAIN.to_owned());
        }
        if policy.when_scaled.as_deref().unwrap_or_default().is_empty() {
            policy.when_scaled = Some(retention::RETAIN.to_owned());
        }
    }
    if gates.auto_resize_pvc {
        let vcus = spec
            .volume_claim_update_strategy
            .get_or_insert_with(Default::default);
        if vcus.type_.as_deref().unwrap_or_default().is_empty() {
            vcus.type_ = Some(volume_claim_update_strategy_type::ON_DELETE.to_owned());
        }
    }
    set_if_none(&mut spec.replicas, || DEFAULT_REPLICAS);
    set_if_none(&mut spec.revision_history_limit, || {
        DEFAULT_REVISION_HISTORY_LIMIT
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statefulset_v1alpha1_empty_object_gets_openkruise_defaults() {
        let mut sts = a1::StatefulSet::new("web", Default::default());
        set_defaults_statefulset(&mut sts);
        assert_eq!(
            serde_json::to_value(&sts.spec).unwrap(),
            json!({
                "replicas": 1,
                "selector": {},
                "template": {},
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {
                        "partition": 0,
                        "maxUnavailable": 1,
                        "podUpdatePolicy": "ReCreate",
                        "minReadySeconds": 0,
                    },
                },
                "revisionHistoryLimit": 10,
            })
        );
        assert_eq!(sts.metadata.annotations, None);
    }

    #[test]
    fn statefulset_v1beta1_empty_object_gets_openkruise_defaults() {
        let mut sts = b1::StatefulSet::new("web", Default::default());
        set_defaults_statefulset_v1beta1(&mut sts);
        assert_eq!(
            serde_json::to_value(&sts.spec).unwrap(),
            json!({
                "replicas": 1,
                "selector": {},
                "template": {},
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {
                        "partition": 0,
                        "maxUnavailable": 1,
                        "podUpdatePolicy": "ReCreate",
                        "minReadySeconds": 0,
                    },
                },
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {
                    "whenDeleted": "Retain",
                    "whenScaled": "Retain",
                },
            })
        );
    }

    #[test]
    fn statefulset_v1beta1_gates_control_pvc_defaults() {
        let mut sts = b1::StatefulSet::new("web", Default::default());
        set_defaults_statefulset_v1beta1_with_gates(
            &mut sts,
            StatefulSetDefaultGates {
                auto_delete_pvc: false,
                auto_resize_pvc: true,
            },
        );
        assert_eq!(sts.spec.persistent_volume_claim_retention_policy, None);
        assert_eq!(
            sts.spec.volume_claim_update_strategy,
            Some(b1::VolumeClaimUpdateStrategy {
                type_: Some("OnDelete".into())
            })
        );
    }

    #[test]
    fn statefulset_explicit_values_are_kept() {
        let mut sts: b1::StatefulSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 0,
                "selector": {},
                "template": {},
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "partition": 3, "maxUnavailable": "50%", "podUpdatePolicy": "InPlaceOnly",
                    "minReadySeconds": 30}},
                "revisionHistoryLimit": 0,
                "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"},
                "volumeClaimUpdateStrategy": {"type": "OnPodRollingUpdate"},
            }
        }))
        .unwrap();
        let before = serde_json::to_value(&sts).unwrap();
        set_defaults_statefulset_v1beta1_with_gates(
            &mut sts,
            StatefulSetDefaultGates {
                auto_delete_pvc: true,
                auto_resize_pvc: true,
            },
        );
        let mut expected = before;
        expected["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] = json!("Retain");
        assert_eq!(serde_json::to_value(&sts).unwrap(), expected);
    }

    #[test]
    fn statefulset_on_delete_strategy_gets_no_rolling_update() {
        let mut sts = a1::StatefulSet::new("web", Default::default());
        sts.spec.update_strategy = Some(a1::StatefulSetUpdateStrategy {
            type_: Some("OnDelete".into()),
            rolling_update: None,
        });
        set_defaults_statefulset(&mut sts);
        assert_eq!(
            sts.spec.update_strategy,
            Some(a1::StatefulSetUpdateStrategy {
                type_: Some("OnDelete".into()),
                rolling_update: None
            })
        );
    }

    #[test]
    fn statefulset_empty_strings_are_defaulted_like_go_zero_values() {
        let mut sts = a1::StatefulSet::new("web", Default::default());
        sts.spec.update_strategy = Some(a1::StatefulSetUpdateStrategy {
            type_: Some(String::new()),
            rolling_update: Some(a1::RollingUpdateStatefulSetStrategy {
                pod_update_policy: Some(String::new()),
                ..Default::default()
            }),
        });
        set_defaults_statefulset(&mut sts);
        let ru = sts.spec.update_strategy.as_ref().unwrap();
        assert_eq!(ru.type_.as_deref(), Some("RollingUpdate"));
        assert_eq!(
            ru.rolling_update
                .as_ref()
                .unwrap()
                .pod_update_policy
                .as_deref(),
            Some("ReCreate")
        );
    }

    #[test]
    fn statefulset_defaults_are_idempotent() {
        let mut alpha = a1::StatefulSet::new("web", Default::default());
        set_defaults_statefulset(&mut alpha);
        let once = alpha.clone();
        set_defaults_statefulset(&mut alpha);
        assert_eq!(alpha, once);

        let mut beta = b1::StatefulSet::new("web", Default::default());
        let all = StatefulSetDefaultGates {
            auto_delete_pvc: true,
            auto_resize_pvc: true,
        };
        set_defaults_statefulset_v1beta1_with_gates(&mut beta, all);
        let once = beta.clone();
        set_defaults_statefulset_v1beta1_with_gates(&mut beta, all);
        assert_eq!(beta, once);
    }

    #[test]
    fn statefulset_v1alpha1_defaults_match_defaulting_through_v1beta1() {
        // OpenKruise defaults v1alpha1 objects through the hub version.
        let mut alpha = a1::StatefulSet::new("web", Default::default());
        let mut beta = crate::conversion::statefulset::to_v1beta1(&alpha);
        set_defaults_statefulset_v1beta1_with_gates(
            &mut beta,
            StatefulSetDefaultGates {
                auto_delete_pvc: false,
                auto_resize_pvc: false,
            },
        );
        set_defaults_statefulset(&mut alpha);
        assert_eq!(crate::conversion::statefulset::to_v1alpha1(&beta), alpha);
    }
}
