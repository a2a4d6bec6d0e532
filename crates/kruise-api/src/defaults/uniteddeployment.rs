//! Defaults of UnitedDeployment (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's mutating
//! webhook applies them:
//!
//! - `revisionHistoryLimit` := 10;
//! - `updateStrategy.type` := `Manual` when absent or empty, and with `Manual` an absent
//!   `updateStrategy.manualUpdate` becomes `{}`;
//! - when some subset has `minReplicas` or `maxReplicas` and no subset has `replicas`
//!   (capacity-based allocation), every subset without `minReplicas` gets `minReplicas: 0`.
//!
//! Not reproduced here: for a `statefulSetTemplate`, OpenKruise also fills in the defaults of
//! the embedded pod spec and of the volume claim templates (the upstream `SetDefaults_*`
//! functions for PodSpec and PersistentVolumeClaim), unless the `TemplateNoDefaults` gate is on.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::v1alpha1::{
    ManualUpdate, UnitedDeployment, UnitedDeploymentUpdateStrategy,
    united_deployment_update_strategy_type,
};

/// Default of `spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Fills in the defaults OpenKruise's UnitedDeployment webhook sets (see the module docs).
/// Idempotent.
pub fn set_defaults_uniteddeployment(obj: &mut UnitedDeployment) {
    let spec = &mut obj.spec;
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);

    let strategy = spec
        .update_strategy
        .get_or_insert_with(UnitedDeploymentUpdateStrategy::default);
    if strategy.type_.as_deref().unwrap_or_default().is_empty() {
        strategy.type_ = Some(united_deployment_update_strategy_type::MANUAL.to_string());
    }
    if strategy.type_.as_deref() == Some(united_deployment_update_strategy_type::MANUAL) {
        strategy
            .manual_update
            .get_or_insert_with(ManualUpdate::default);
    }

    let Some(subsets) = spec.topology.as_mut().and_then(|t| t.subsets.as_mut()) else {
        return;
    };
    let has_replicas = subsets.iter().any(|s| s.replicas.is_some());
    let has_capacity = subsets
        .iter()
        .any(|s| s.min_replicas.is_some() || s.max_replicas.is_some());
    if has_capacity && !has_replicas {
        for subset in subsets.iter_mut() {
            subset.min_replicas.get_or_insert(IntOrString::Int(0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1alpha1::{Subset, Topology, UnitedDeploymentSpec};

    fn subset(name: &str) -> Subset {
        Subset {
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn uniteddeployment_empty_object_gets_openkruise_defaults() {
        let mut obj = UnitedDeployment::new("ud", UnitedDeploymentSpec::default());
        set_defaults_uniteddeployment(&mut obj);
        assert_eq!(obj.spec.revision_history_limit, Some(10));
        assert_eq!(
            obj.spec.update_strategy,
            Some(UnitedDeploymentUpdateStrategy {
                type_: Some("Manual".into()),
                manual_update: Some(ManualUpdate::default()),
            })
        );
        assert_eq!(obj.spec.replicas, None);
        assert_eq!(obj.spec.topology, None);
        assert_eq!(
            serde_json::to_value(&obj.spec).unwrap(),
            serde_json::json!({
                "selector": {},
                "updateStrategy": {"type": "Manual", "manualUpdate": {}},
                "revisionHistoryLimit": 10
            })
        );
    }

    #[test]
    fn uniteddeployment_empty_strategy_type_becomes_manual() {
        let mut obj = UnitedDeployment::new(
            "ud",
            UnitedDeploymentSpec {
                update_strategy: Some(UnitedDeploymentUpdateStrategy {
                    type_: Some(String::new()),
                    manual_update: None,
                }),
                ..Default::default()
            },
        );
        set_defaults_uniteddeployment(&mut obj);
        let s = obj.spec.update_strategy.unwrap();
        assert_eq!(s.type_.as_deref(), Some("Manual"));
        assert_eq!(s.manual_update, Some(ManualUpdate::default()));
    }

    #[test]
    fn uniteddeployment_capacity_subsets_get_min_replicas_zero() {
        let mut a = subset("a");
        a.max_replicas = Some(IntOrString::Int(3));
        let mut b = subset("b");
        b.min_replicas = Some(IntOrString::String("10%".into()));
        let mut obj = UnitedDeployment::new(
            "ud",
            UnitedDeploymentSpec {
                topology: Some(Topology {
                    subsets: Some(vec![a, b, subset("c")]),
                    schedule_strategy: None,
                }),
                ..Default::default()
            },
        );
        set_defaults_uniteddeployment(&mut obj);
        let subsets = obj.spec.topology.unwrap().subsets.unwrap();
        assert_eq!(subsets[0].min_replicas, Some(IntOrString::Int(0)));
        assert_eq!(
            subsets[1].min_replicas,
            Some(IntOrString::String("10%".into()))
        );
        assert_eq!(subsets[2].min_replicas, Some(IntOrString::Int(0)));
        assert_eq!(subsets[2].max_replicas, None);
    }

    #[test]
    fn uniteddeployment_replica_subsets_get_no_min_replicas() {
        let mut a = subset("a");
        a.replicas = Some(IntOrString::Int(2));
        for subsets in [vec![a, subset("b")], vec![subset("a"), subset("b")]] {
            let mut obj = UnitedDeployment::new(
                "ud",
                UnitedDeploymentSpec {
                    topology: Some(Topology {
                        subsets: Some(subsets.clone()),
                        schedule_strategy: None,
                    }),
                    ..Default::default()
                },
            );
            set_defaults_uniteddeployment(&mut obj);
            assert_eq!(obj.spec.topology.unwrap().subsets.unwrap(), subsets);
        }
    }

    #[test]
    fn uniteddeployment_explicit_values_kept() {
        let strategy = UnitedDeploymentUpdateStrategy {
            type_: Some("Manual".into()),
            manual_update: Some(ManualUpdate {
                partitions: Some([("a".to_string(), 2)].into()),
            }),
        };
        let mut obj = UnitedDeployment::new(
            "ud",
            UnitedDeploymentSpec {
                replicas: Some(4),
                revision_history_limit: Some(3),
                update_strategy: Some(strategy.clone()),
                ..Default::default()
            },
        );
        set_defaults_uniteddeployment(&mut obj);
        assert_eq!(obj.spec.replicas, Some(4));
        assert_eq!(obj.spec.revision_history_limit, Some(3));
        assert_eq!(obj.spec.update_strategy, Some(strategy));
    }

    #[test]
    fn uniteddeployment_unknown_strategy_type_gets_no_manual_update() {
        let mut obj = UnitedDeployment::new(
            "ud",
            UnitedDeploymentSpec {
                update_strategy: Some(UnitedDeploymentUpdateStrategy {
                    type_: Some("Other".into()),
                    manual_update: None,
                }),
                ..Default::default()
            },
        );
        set_defaults_uniteddeployment(&mut obj);
        assert_eq!(obj.spec.update_strategy.unwrap().manual_update, None);
    }

    #[test]
    fn uniteddeployment_defaults_are_idempotent() {
        let mut a = subset("a");
        a.max_replicas = Some(IntOrString::Int(1));
        let mut obj = UnitedDeployment::new(
            "ud",
            UnitedDeploymentSpec {
                topology: Some(Topology {
                    subsets: Some(vec![a, subset("b")]),
                    schedule_strategy: None,
                }),
                ..Default::default()
            },
        );
        set_defaults_uniteddeployment(&mut obj);
        let once = obj.clone();
        set_defaults_uniteddeployment(&mut obj);
        assert_eq!(obj, once);
    }
}
