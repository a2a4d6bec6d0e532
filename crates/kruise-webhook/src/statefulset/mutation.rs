//! Advanced StatefulSet defaulting as OpenKruise v1.9.0's mutating webhook does it
//! (`pkg/webhook/statefulset/mutating`), for both served versions.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use kruise_api::apps::{v1alpha1 as a1, v1beta1 as b1};
use kruise_api::defaults::podspec::{set_defaults_pod_spec, set_defaults_pvc_template};
use kruise_api::defaults::statefulset::{
    StatefulSetDefaultGates, set_defaults_statefulset, set_defaults_statefulset_v1beta1_with_gates,
};

use kruise_runtime::features::{Feature, FeatureGates};

/// Whether template defaults are injected: never with `TemplateNoDefaults`; on create always,
/// on update only when the template changed.
pub fn inject_template_defaults(
    gates: &FeatureGates,
    new: &PodTemplateSpec,
    old: Option<&PodTemplateSpec>,
) -> bool {
    !gates.enabled(Feature::TemplateNoDefaults) && old.is_none_or(|o| o != new)
}

fn default_templates(
    template: &mut PodTemplateSpec,
    claims: Option<&mut Vec<PersistentVolumeClaim>>,
) {
    if let Some(spec) = template.spec.as_mut() {
        set_defaults_pod_spec(spec);
    }
    for pvc in claims.into_iter().flatten() {
        set_defaults_pvc_template(pvc);
    }
}

/// The gates that shape the v1beta1 defaults.
pub fn default_gates(gates: &FeatureGates) -> StatefulSetDefaultGates {
    StatefulSetDefaultGates {
        auto_delete_pvc: gates.enabled(Feature::StatefulSetAutoDeletePVC),
        auto_resize_pvc: gates.enabled(Feature::StatefulSetAutoResizePVCGate),
    }
}

/// A v1beta1 StatefulSet with its defaults filled in and `status` cleared.
pub fn defaulted_v1beta1(
    gates: &FeatureGates,
    new: &b1::StatefulSet,
    old: Option<&b1::StatefulSet>,
) -> b1::StatefulSet {
    let mut out = new.clone();
    set_defaults_statefulset_v1beta1_with_gates(&mut out, default_gates(gates));
    if inject_template_defaults(gates, &new.spec.template, old.map(|o| &o.spec.template)) {
        default_templates(
            &mut out.spec.template,
            out.spec.volume_claim_templates.as_mut(),
        );
    }
    out.status = None;
    out
}

/// A v1alpha1 StatefulSet with its defaults filled in (the v1beta1-only defaults do not exist in
/// this version) and `status` cleared.
pub fn defaulted_v1alpha1(
    gates: &FeatureGates,
    new: &a1::StatefulSet,
    old: Option<&a1::StatefulSet>,
) -> a1::StatefulSet {
    let mut out = new.clone();
    set_defaults_statefulset(&mut out);
    if inject_template_defaults(gates, &new.spec.template, old.map(|o| &o.spec.template)) {
        default_templates(
            &mut out.spec.template,
            out.spec.volume_claim_templates.as_mut(),
        );
    }
    out.status = None;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::{apply_patch, defaults_patch};
    use serde_json::{Value, json};

    fn raw(version: &str) -> Value {
        json!({
            "apiVersion": format!("apps.kruise.io/{version}"), "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
            }
        })
    }

    #[test]
    fn sts_v1beta1_create_defaults_patch() {
        let gates = FeatureGates::default();
        let before: b1::StatefulSet = serde_json::from_value(raw("v1beta1")).unwrap();
        let after = defaulted_v1beta1(&gates, &before, None);
        let patched =
            apply_patch(&raw("v1beta1"), &defaults_patch(&before, &after).unwrap()).unwrap();
        assert_eq!(patched["spec"]["replicas"], 1);
        assert_eq!(patched["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            patched["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"],
            "ReCreate"
        );
        assert_eq!(
            patched["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"],
            "Retain"
        );
        assert_eq!(
            patched["spec"]["template"]["spec"]["restartPolicy"],
            "Always"
        );
        // OpenKruise does not default a claim template's volumeMode (admission corpus).
        assert_eq!(
            patched["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn sts_v1alpha1_create_defaults_patch() {
        let gates = FeatureGates::default();
        let before: a1::StatefulSet = serde_json::from_value(raw("v1alpha1")).unwrap();
        let after = defaulted_v1alpha1(&gates, &before, None);
        let patched =
            apply_patch(&raw("v1alpha1"), &defaults_patch(&before, &after).unwrap()).unwrap();
        assert_eq!(patched["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(patched["spec"]["updateStrategy"]["type"], "RollingUpdate");
        assert!(
            patched["spec"]
                .get("persistentVolumeClaimRetentionPolicy")
                .is_none()
        );
        assert_eq!(
            patched["spec"]["template"]["spec"]["dnsPolicy"],
            "ClusterFirst"
        );
    }

    #[test]
    fn sts_template_defaults_only_on_change_and_without_gate() {
        let gates = FeatureGates::default();
        let obj: b1::StatefulSet = serde_json::from_value(raw("v1beta1")).unwrap();
        let same = defaulted_v1beta1(&gates, &obj, Some(&obj));
        assert_eq!(same.spec.template, obj.spec.template);
        let off = FeatureGates::default().with(Feature::TemplateNoDefaults, true);
        assert_eq!(
            defaulted_v1beta1(&off, &obj, None).spec.template,
            obj.spec.template
        );
        let once = defaulted_v1beta1(&gates, &obj, None);
        assert!(
            defaults_patch(&once, &defaulted_v1beta1(&gates, &once, None))
                .unwrap()
                .0
                .is_empty()
        );
    }
}
