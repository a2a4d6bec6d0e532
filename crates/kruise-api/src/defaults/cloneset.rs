//! CloneSet defaults, as OpenKruise v1.9.0's CloneSet mutating webhook sets them.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::common::InPlaceUpdateStrategy;
use crate::apps::v1alpha1::{CloneSet, update_strategy_type};
use crate::defaults::podspec;

/// Default `updateStrategy.maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: &str = "20%";
/// Default `revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Fills in a CloneSet's defaults:
///
/// - `replicas: 1`, `revisionHistoryLimit: 10`;
/// - `updateStrategy.type: ReCreate` when unset; an empty `inPlaceUpdateStrategy: {}` for the
///   two in-place types;
/// - `updateStrategy.partition: 0`, `maxUnavailable: "20%"`, `maxSurge: 0` when unset;
/// - with `inject_template_defaults` (true unless the `TemplateNoDefaults` gate is on): the pod
///   template defaults of [`podspec::set_defaults_pod_spec`] and, for every volume claim
///   template, [`podspec::set_defaults_pvc_template`].
///
/// Idempotent; explicit values are never changed.
pub fn set_defaults_cloneset(cs: &mut CloneSet, inject_template_defaults: bool) {
    let spec = &mut cs.spec;
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    if inject_template_defaults {
        if let Some(pod_spec) = spec.template.spec.as_mut() {
            podspec::set_defaults_pod_spec(pod_spec);
        }
        for pvc in spec.volume_claim_templates.iter_mut().flatten() {
            podspec::set_defaults_pvc_template(pvc);
        }
    }
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    match strategy.type_.as_deref().unwrap_or("") {
        "" => strategy.type_ = Some(update_strategy_type::RE_CREATE.into()),
        update_strategy_type::IN_PLACE_IF_POSSIBLE | update_strategy_type::IN_PLACE_ONLY => {
            strategy
                .in_place_update_strategy
                .get_or_insert_with(InPlaceUpdateStrategy::default);
        }
        _ => {}
    }
    strategy.partition.get_or_insert(IntOrString::Int(0));
    strategy
        .max_unavailable
        .get_or_insert_with(|| IntOrString::String(DEFAULT_MAX_UNAVAILABLE.into()));
    strategy.max_surge.get_or_insert(IntOrString::Int(0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cloneset(spec: serde_json::Value) -> CloneSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "cs"}, "spec": spec,
        }))
        .unwrap()
    }

    fn minimal() -> serde_json::Value {
        json!({
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}},
                         "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
        })
    }

    #[test]
    fn cloneset_empty_object_gets_openkruise_defaults() {
        let mut cs = cloneset(minimal());
        set_defaults_cloneset(&mut cs, false);
        let got = serde_json::to_value(&cs.spec).unwrap();
        let mut want = minimal();
        want["replicas"] = json!(1);
        want["revisionHistoryLimit"] = json!(10);
        want["updateStrategy"] = json!({
            "type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0,
        });
        assert_eq!(got, want);
    }

    #[test]
    fn cloneset_in_place_types_get_an_in_place_update_strategy() {
        for t in ["InPlaceIfPossible", "InPlaceOnly"] {
            let mut spec = minimal();
            spec["updateStrategy"] = json!({"type": t});
            let mut cs = cloneset(spec);
            set_defaults_cloneset(&mut cs, false);
            let s = cs.spec.update_strategy.unwrap();
            assert_eq!(s.type_.as_deref(), Some(t));
            assert_eq!(
                s.in_place_update_strategy,
                Some(InPlaceUpdateStrategy::default())
            );
        }
        let mut spec = minimal();
        spec["updateStrategy"] = json!({"type": "ReCreate"});
        let mut cs = cloneset(spec);
        set_defaults_cloneset(&mut cs, false);
        assert_eq!(
            cs.spec.update_strategy.unwrap().in_place_update_strategy,
            None
        );
    }

    #[test]
    fn cloneset_explicit_values_kept_and_idempotent() {
        let mut spec = minimal();
        spec["replicas"] = json!(0);
        spec["revisionHistoryLimit"] = json!(3);
        spec["updateStrategy"] = json!({"type": "OnDelete", "partition": "50%",
            "maxUnavailable": 2, "maxSurge": "10%"});
        let mut cs = cloneset(spec.clone());
        set_defaults_cloneset(&mut cs, true);
        let once = cs.clone();
        set_defaults_cloneset(&mut cs, true);
        assert_eq!(cs, once);
        let got = serde_json::to_value(&cs.spec).unwrap();
        for k in ["replicas", "revisionHistoryLimit", "updateStrategy"] {
            assert_eq!(got[k], spec[k], "{k}");
        }
    }

    #[test]
    fn cloneset_template_defaults_only_when_asked() {
        let mut cs = cloneset(minimal());
        set_defaults_cloneset(&mut cs, false);
        let c = &cs.spec.template.spec.as_ref().unwrap().containers[0];
        assert_eq!(c.image_pull_policy, None);
        set_defaults_cloneset(&mut cs, true);
        let ps = cs.spec.template.spec.as_ref().unwrap();
        assert_eq!(
            ps.containers[0].image_pull_policy.as_deref(),
            Some("Always")
        );
        assert_eq!(ps.restart_policy.as_deref(), Some("Always"));
    }
}
