//! CloneSet defaulting as OpenKruise v1.9.0's mutating webhook does it
//! (`pkg/webhook/cloneset/mutating`).

use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::defaults::cloneset::set_defaults_cloneset;

use kruise_runtime::features::{Feature, FeatureGates};

/// Whether pod template defaults are injected: never with the `TemplateNoDefaults` gate; else
/// always on create (`old` is `None`) and on update only when the template changed.
pub fn inject_template_defaults(
    gates: &FeatureGates,
    new: &CloneSet,
    old: Option<&CloneSet>,
) -> bool {
    !gates.enabled(Feature::TemplateNoDefaults)
        && old.is_none_or(|o| o.spec.template != new.spec.template)
}

/// The CloneSet with its defaults filled in (see
/// [`kruise_api::defaults::cloneset::set_defaults_cloneset`]).
pub fn defaulted_cloneset(
    gates: &FeatureGates,
    new: &CloneSet,
    old: Option<&CloneSet>,
) -> CloneSet {
    let mut out = new.clone();
    set_defaults_cloneset(&mut out, inject_template_defaults(gates, new, old));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::{apply_patch, defaults_patch};
    use serde_json::{Value, json};

    fn raw() -> Value {
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "demo", "namespace": "ns", "annotations": {"x": "y"}},
            "spec": {
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {"metadata": {"labels": {"app": "demo"}},
                             "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                "unknownField": "kept"
            }
        })
    }

    fn cs(v: &Value) -> CloneSet {
        serde_json::from_value(v.clone()).unwrap()
    }

    #[test]
    fn create_gets_spec_and_template_defaults_as_patch() {
        let gates = FeatureGates::default();
        let before = cs(&raw());
        let after = defaulted_cloneset(&gates, &before, None);
        let patch = defaults_patch(&before, &after).unwrap();
        let patched = apply_patch(&raw(), &patch).unwrap();
        assert_eq!(patched["spec"]["replicas"], 1);
        assert_eq!(patched["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(
            patched["spec"]["updateStrategy"],
            json!({"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0})
        );
        let c = &patched["spec"]["template"]["spec"]["containers"][0];
        // OpenKruise defaults app containers to `Always` whatever the tag.
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(
            patched["spec"]["template"]["spec"]["restartPolicy"],
            "Always"
        );
        // Fields unknown to the type are not touched by the patch.
        assert_eq!(patched["spec"]["unknownField"], "kept");
        assert_eq!(patched["metadata"]["annotations"], json!({"x": "y"}));
    }

    #[test]
    fn defaulting_is_idempotent() {
        let gates = FeatureGates::default();
        let once = defaulted_cloneset(&gates, &cs(&raw()), None);
        let twice = defaulted_cloneset(&gates, &once, None);
        assert!(defaults_patch(&once, &twice).unwrap().0.is_empty());
    }

    #[test]
    fn template_defaults_only_when_template_changed_on_update() {
        let gates = FeatureGates::default();
        let old = cs(&raw());
        let same = cs(&raw());
        assert!(!inject_template_defaults(&gates, &same, Some(&old)));
        let after = defaulted_cloneset(&gates, &same, Some(&old));
        assert!(
            after
                .spec
                .template
                .spec
                .as_ref()
                .unwrap()
                .restart_policy
                .is_none()
        );
        assert_eq!(after.spec.replicas, Some(1));
        let mut changed = raw();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
        assert!(inject_template_defaults(&gates, &cs(&changed), Some(&old)));
    }

    #[test]
    fn template_no_defaults_gate_skips_template_defaults() {
        let gates = FeatureGates::default().with(Feature::TemplateNoDefaults, true);
        let before = cs(&raw());
        assert!(!inject_template_defaults(&gates, &before, None));
        let after = defaulted_cloneset(&gates, &before, None);
        assert_eq!(after.spec.template, before.spec.template);
        assert_eq!(after.spec.replicas, Some(1));
    }

    proptest::proptest! {
        /// The patch applied to the request object gives exactly the defaulted object, and
        /// defaulting that again changes nothing.
        #[test]
        fn patch_reproduces_defaulted_object(
            replicas in proptest::option::of(0i32..50),
            strategy in proptest::option::of(proptest::sample::select(vec!["ReCreate", "InPlaceIfPossible", "InPlaceOnly"])),
            partition in proptest::option::of(0i32..10),
            pull in proptest::option::of(proptest::sample::select(vec!["Always", "Never"])),
        ) {
            let mut v = raw();
            if let Some(r) = replicas { v["spec"]["replicas"] = json!(r); }
            if let Some(t) = strategy { v["spec"]["updateStrategy"] = json!({"type": t}); }
            if let Some(p) = partition {
                v["spec"]["updateStrategy"]["partition"] = json!(p);
            }
            if let Some(p) = pull { v["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!(p); }
            let gates = FeatureGates::default();
            let before = cs(&v);
            let after = defaulted_cloneset(&gates, &before, None);
            let patched = apply_patch(&v, &defaults_patch(&before, &after).unwrap()).unwrap();
            let mut expected = serde_json::to_value(&after).unwrap();
            expected["spec"]["unknownField"] = json!("kept");
            proptest::prop_assert_eq!(&patched, &expected);
            let again = defaulted_cloneset(&gates, &after, None);
            proptest::prop_assert!(defaults_patch(&after, &again).unwrap().0.is_empty());
        }
    }
}
