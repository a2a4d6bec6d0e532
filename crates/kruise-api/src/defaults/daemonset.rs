//! Defaults of Advanced DaemonSet, as OpenKruise's mutating webhook
//! (`/mutate-apps-kruise-io-daemonset`) fills them in. Each version is defaulted on its own
//! (no round trip through the hub), and the webhook injects no pod-template defaults for this
//! kind.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1alpha1::rolling_update_type::{STANDARD, SURGING};
use crate::apps::v1beta1 as b1;
use crate::apps::v1beta1::daemonset_update_strategy_type::ROLLING_UPDATE;

/// Default of `spec.burstReplicas`.
pub const DEFAULT_BURST_REPLICAS: i32 = 250;
/// Default of `spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

fn is_empty(s: &Option<String>) -> bool {
    s.as_deref().unwrap_or_default().is_empty()
}

/// Fills in the defaults of a v1alpha1 Advanced DaemonSet.
///
/// `burstReplicas: 250`; `updateStrategy.type: RollingUpdate`; for a rolling update, the
/// deprecated `rollingUpdateType: Surging` first gets `maxSurge: 1` and `maxUnavailable: 0`
/// where unset and then, like an empty type, becomes `Standard`; when neither `maxUnavailable`
/// nor `maxSurge` is set they become 1 and 0; `revisionHistoryLimit: 10`.
pub fn set_defaults_daemonset(obj: &mut a1::DaemonSet) {
    let spec = &mut obj.spec;
    if spec.burst_replicas.is_none() {
        spec.burst_replicas = Some(IntOrString::Int(DEFAULT_BURST_REPLICAS));
    }
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    if is_empty(&strategy.type_) {
        strategy.type_ = Some(ROLLING_UPDATE.to_owned());
    }
    if strategy.type_.as_deref() == Some(ROLLING_UPDATE) {
        let ru = strategy.rolling_update.get_or_insert_with(Default::default);
        let surging = ru.type_.as_deref() == Some(SURGING);
        if surging {
            ru.max_surge.get_or_insert(IntOrString::Int(1));
            ru.max_unavailable.get_or_insert(IntOrString::Int(0));
        }
        if surging || is_empty(&ru.type_) {
            ru.type_ = Some(STANDARD.to_owned());
        }
        if ru.max_unavailable.is_none() && ru.max_surge.is_none() {
            ru.max_unavailable = Some(IntOrString::Int(1));
            ru.max_surge = Some(IntOrString::Int(0));
        }
    }
    if spec.revision_history_limit.is_none() {
        spec.revision_history_limit = Some(DEFAULT_REVISION_HISTORY_LIMIT);
    }
}

/// Fills in the defaults of a v1beta1 Advanced DaemonSet.
///
/// `burstReplicas: 250`; `updateStrategy.type: RollingUpdate`; for a rolling update an empty
/// `rollingUpdateType` becomes `Standard`, and when neither `maxUnavailable` nor `maxSurge`
/// is set they become 1 and 0; `revisionHistoryLimit: 10`. (`Surging` is not special here.)
pub fn set_defaults_daemonset_v1beta1(obj: &mut b1::DaemonSet) {
    let spec = &mut obj.spec;
    if spec.burst_replicas.is_none() {
        spec.burst_replicas = Some(IntOrString::Int(DEFAULT_BURST_REPLICAS));
    }
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    if is_empty(&strategy.type_) {
        strategy.type_ = Some(ROLLING_UPDATE.to_owned());
    }
    if strategy.type_.as_deref() == Some(ROLLING_UPDATE) {
        let ru = strategy.rolling_update.get_or_insert_with(Default::default);
        if is_empty(&ru.type_) {
            ru.type_ = Some(STANDARD.to_owned());
        }
        if ru.max_unavailable.is_none() && ru.max_surge.is_none() {
            ru.max_unavailable = Some(IntOrString::Int(1));
            ru.max_surge = Some(IntOrString::Int(0));
        }
    }
    if spec.revision_history_limit.is_none() {
        spec.revision_history_limit = Some(DEFAULT_REVISION_HISTORY_LIMIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expected_empty_spec() -> serde_json::Value {
        json!({
            "selector": {},
            "template": {},
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "rollingUpdateType": "Standard",
                    "maxUnavailable": 1,
                    "maxSurge": 0,
                },
            },
            "burstReplicas": 250,
            "revisionHistoryLimit": 10,
        })
    }

    #[test]
    fn daemonset_v1alpha1_empty_object_gets_openkruise_defaults() {
        let mut ds = a1::DaemonSet::new("agent", Default::default());
        set_defaults_daemonset(&mut ds);
        assert_eq!(
            serde_json::to_value(&ds.spec).unwrap(),
            expected_empty_spec()
        );
    }

    #[test]
    fn daemonset_v1beta1_empty_object_gets_openkruise_defaults() {
        let mut ds = b1::DaemonSet::new("agent", Default::default());
        set_defaults_daemonset_v1beta1(&mut ds);
        assert_eq!(
            serde_json::to_value(&ds.spec).unwrap(),
            expected_empty_spec()
        );
        assert_eq!(ds.spec.scale_strategy, None);
    }

    #[test]
    fn daemonset_v1alpha1_surging_becomes_standard_with_surge() {
        let mut ds = a1::DaemonSet::new("agent", Default::default());
        ds.spec.update_strategy = Some(a1::DaemonSetUpdateStrategy {
            type_: None,
            rolling_update: Some(a1::RollingUpdateDaemonSet {
                type_: Some(SURGING.into()),
                ..Default::default()
            }),
        });
        set_defaults_daemonset(&mut ds);
        let ru = ds.spec.update_strategy.unwrap().rolling_update.unwrap();
        assert_eq!(ru.type_.as_deref(), Some("Standard"));
        assert_eq!(ru.max_surge, Some(IntOrString::Int(1)));
        assert_eq!(ru.max_unavailable, Some(IntOrString::Int(0)));
    }

    #[test]
    fn daemonset_v1alpha1_surging_keeps_explicit_limits() {
        let mut ds = a1::DaemonSet::new("agent", Default::default());
        ds.spec.update_strategy = Some(a1::DaemonSetUpdateStrategy {
            type_: Some(ROLLING_UPDATE.into()),
            rolling_update: Some(a1::RollingUpdateDaemonSet {
                type_: Some(SURGING.into()),
                max_surge: Some(IntOrString::String("30%".into())),
                ..Default::default()
            }),
        });
        set_defaults_daemonset(&mut ds);
        let ru = ds.spec.update_strategy.unwrap().rolling_update.unwrap();
        assert_eq!(ru.max_surge, Some(IntOrString::String("30%".into())));
        assert_eq!(ru.max_unavailable, Some(IntOrString::Int(0)));
    }

    #[test]
    fn daemonset_explicit_values_are_kept() {
        let v = json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {},
                "template": {},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "rollingUpdateType": "InPlaceIfPossible", "maxSurge": 0}},
                "burstReplicas": "10%",
                "revisionHistoryLimit": 0,
                "minReadySeconds": 3,
            }
        });
        let mut ds: b1::DaemonSet = serde_json::from_value(v.clone()).unwrap();
        set_defaults_daemonset_v1beta1(&mut ds);
        assert_eq!(serde_json::to_value(&ds).unwrap(), v);

        let mut on_delete = b1::DaemonSet::new("agent", Default::default());
        on_delete.spec.update_strategy = Some(b1::DaemonSetUpdateStrategy {
            type_: Some("OnDelete".into()),
            rolling_update: None,
        });
        set_defaults_daemonset_v1beta1(&mut on_delete);
        assert_eq!(on_delete.spec.update_strategy.unwrap().rolling_update, None);
    }

    #[test]
    fn daemonset_defaults_are_idempotent() {
        let mut alpha = a1::DaemonSet::new("agent", Default::default());
        alpha.spec.update_strategy = Some(a1::DaemonSetUpdateStrategy {
            type_: None,
            rolling_update: Some(a1::RollingUpdateDaemonSet {
                type_: Some(SURGING.into()),
                ..Default::default()
            }),
        });
        set_defaults_daemonset(&mut alpha);
        let once = alpha.clone();
        set_defaults_daemonset(&mut alpha);
        assert_eq!(alpha, once);

        let mut beta = b1::DaemonSet::new("agent", Default::default());
        set_defaults_daemonset_v1beta1(&mut beta);
        let once = beta.clone();
        set_defaults_daemonset_v1beta1(&mut beta);
        assert_eq!(beta, once);
    }
}
