//! The `volumeClaimTemplates` update rule of Advanced StatefulSet (v1.9.0, gate
//! `StatefulSetAutoResizePVCGate`): with `volumeClaimUpdateStrategy.type: OnPodRollingUpdate`,
//! claim templates may not be added, removed, renamed or changed other than in their storage
//! size, and a size change needs a storage class that allows volume expansion.
//!
//! Pure halves: [`vct_update_steps`] walks the templates; [`default_storage_class`] and
//! [`check_expansion`] judge the storage classes the handler looked up.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use kruise_api::apps::v1beta1::{StatefulSet, volume_claim_update_strategy_type};
use kruise_api::validation::quantity::Quantity;
use serde_json::json;

use crate::field::{FieldError, Path};

/// Annotation marking the cluster's default storage class.
pub const DEFAULT_STORAGE_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";

/// One step of the walk over the new claim templates, in order; the handler stops at the
/// first error.
#[derive(Clone, Debug, PartialEq)]
pub enum VctStep {
    /// The template only changed its storage size: its storage class (`None`: the default one)
    /// must allow expansion.
    Resized {
        /// Claim template name.
        name: String,
        /// `spec.storageClassName` of the new template.
        storage_class: Option<String>,
    },
    /// The update is refused.
    Error(FieldError),
}

fn template_path(name: &str) -> Path {
    Path::new("spec").child(&format!("volumeClaimTemplates[{name}]"))
}

/// A storage quantity as a value ([`kruise_api::validation::quantity::Quantity`], compared
/// exactly); absent or malformed counts as zero.
pub fn storage_value(q: Option<&str>) -> Quantity {
    q.and_then(|q| Quantity::parse(q).ok())
        .unwrap_or_else(|| Quantity::parse("0").expect("zero parses"))
}

fn storage(
    pvc: &PersistentVolumeClaim,
    pick: fn(
        &k8s_openapi::api::core::v1::VolumeResourceRequirements,
    ) -> Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
) -> Quantity {
    storage_value(
        pvc.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(pick)
            .and_then(|m| m.get("storage"))
            .map(|q| q.0.as_str()),
    )
}

/// Whether the storage request or limit differs between the two templates.
fn size_changed(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    storage(old, |r| r.requests.as_ref()) != storage(new, |r| r.requests.as_ref())
        || storage(old, |r| r.limits.as_ref()) != storage(new, |r| r.limits.as_ref())
}

/// Same storage class (when both name one) and same access modes in the same order.
fn compatible_without_size(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    let sc = |p: &PersistentVolumeClaim| p.spec.as_ref().and_then(|s| s.storage_class_name.clone());
    if let (Some(a), Some(b)) = (sc(old), sc(new))
        && a != b
    {
        return false;
    }
    let modes = |p: &PersistentVolumeClaim| {
        p.spec
            .as_ref()
            .and_then(|s| s.access_modes.clone())
            .unwrap_or_default()
    };
    modes(old) == modes(new)
}

/// Walks the new claim templates (only with `volumeClaimUpdateStrategy.type` set and not
/// `OnDelete`): a different template count, a template name missing from the old list, or a
/// change other than size is an error step; a size-only change is a [`VctStep::Resized`].
pub fn vct_update_steps(new: &StatefulSet, old: &StatefulSet) -> Vec<VctStep> {
    let strategy = new
        .spec
        .volume_claim_update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("");
    if strategy.is_empty() || strategy == volume_claim_update_strategy_type::ON_DELETE {
        return vec![];
    }
    let new_list = new
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    let old_list = old
        .spec
        .volume_claim_templates
        .as_deref()
        .unwrap_or_default();
    if new_list.len() != old_list.len() {
        return vec![VctStep::Error(FieldError::invalid(
            Path::new("spec").child("volumeClaimTemplates"),
            json!(new_list),
            "volumeClaimTemplate can not be added or deleted when OnRollingUpdate",
        ))];
    }
    let mut steps = Vec::new();
    for t in new_list {
        let name = t.metadata.name.clone().unwrap_or_default();
        let Some(old_t) = old_list
            .iter()
            .find(|o| o.metadata.name.as_deref().unwrap_or("") == name)
        else {
            steps.push(VctStep::Error(FieldError::forbidden(
                template_path(&name).child("name"),
                "volumeClaimTemplate name can not be modified",
            )));
            return steps;
        };
        if !compatible_without_size(old_t, t) {
            steps.push(VctStep::Error(FieldError::invalid(
                template_path(&name),
                json!(t),
                "volumeClaimTemplate can not be modified when OnRollingUpdate",
            )));
            return steps;
        }
        if size_changed(old_t, t) {
            steps.push(VctStep::Resized {
                name,
                storage_class: t.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
            });
        }
    }
    steps
}

/// The default storage class: among classes annotated as default, the most recently created.
pub fn default_storage_class(classes: &[StorageClass]) -> Option<&StorageClass> {
    classes
        .iter()
        .filter(|sc| {
            sc.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DEFAULT_STORAGE_CLASS_ANNOTATION))
                .is_some_and(|v| v == "true")
        })
        .max_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
        })
}

/// Judges the storage class of a resized template. `lookup` is what the handler found: for a
/// named class, `Err` when the get failed; for the default class (`named` is `None`), `Err` when
/// listing failed and `Ok(None)` when there is no default (then nothing is checked).
pub fn check_expansion(
    template: &str,
    named: Option<&str>,
    lookup: Result<Option<&StorageClass>, ()>,
) -> Option<FieldError> {
    let sc_path = template_path(template)
        .child("spec")
        .child("storageClassName");
    let sc = match (named, lookup) {
        (None, Err(())) => {
            return Some(FieldError::invalid(
                sc_path,
                "nil",
                "can not list storage class",
            ));
        }
        (None, Ok(None)) => return None,
        (Some(n), Err(()) | Ok(None)) => {
            return Some(FieldError::invalid(sc_path, n, "can not get sc"));
        }
        (_, Ok(Some(sc))) => sc,
    };
    (sc.allow_volume_expansion == Some(false)).then(|| {
        FieldError::forbidden(
            template_path(template)
                .child("spec")
                .child("resources")
                .child("requests")
                .child("storage"),
            format!(
                "storage class {} does not support volume expansion",
                sc.metadata.name.as_deref().unwrap_or("")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn sts(strategy: Option<&str>, vcts: Value) -> StatefulSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "web"},
            "spec": {"selector": {}, "template": {}, "volumeClaimTemplates": vcts,
                     "volumeClaimUpdateStrategy": {"type": strategy}}
        }))
        .unwrap()
    }

    fn vct(name: &str, size: &str, sc: Option<&str>) -> Value {
        json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
            "storageClassName": sc, "resources": {"requests": {"storage": size}}}})
    }

    #[test]
    fn vct_quantities() {
        assert_eq!(storage_value(Some("1024Mi")), storage_value(Some("1Gi")));
        assert!(storage_value(Some("1.5k")) > storage_value(Some("1k")));
        assert_eq!(storage_value(Some("bad")), storage_value(None));
    }

    #[test]
    fn vct_rules_only_with_rolling_strategy() {
        let old = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "1Gi", None)]),
        );
        for s in [None, Some("OnDelete")] {
            let new = sts(s, json!([]));
            assert!(vct_update_steps(&new, &old).is_empty());
        }
    }

    #[test]
    fn vct_add_delete_rename_modify_resize() {
        let old = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "1Gi", Some("fast"))]),
        );
        let added = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "1Gi", Some("fast")), vct("x", "1Gi", None)]),
        );
        match &vct_update_steps(&added, &old)[..] {
            [VctStep::Error(e)] => {
                assert!(e.to_string().ends_with(
                    "volumeClaimTemplate can not be added or deleted when OnRollingUpdate"
                ))
            }
            other => panic!("{other:?}"),
        }
        let renamed = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("logs", "1Gi", Some("fast"))]),
        );
        match &vct_update_steps(&renamed, &old)[..] {
            [VctStep::Error(e)] => assert_eq!(
                e.to_string(),
                "spec.volumeClaimTemplates[logs].name: Forbidden: volumeClaimTemplate name can not be modified"
            ),
            other => panic!("{other:?}"),
        }
        let other_sc = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "1Gi", Some("slow"))]),
        );
        match &vct_update_steps(&other_sc, &old)[..] {
            [VctStep::Error(e)] => assert!(
                e.to_string()
                    .ends_with("volumeClaimTemplate can not be modified when OnRollingUpdate")
            ),
            other => panic!("{other:?}"),
        }
        let same = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "1024Mi", Some("fast"))]),
        );
        assert!(vct_update_steps(&same, &old).is_empty());
        let bigger = sts(
            Some("OnPodRollingUpdate"),
            json!([vct("data", "2Gi", Some("fast"))]),
        );
        assert_eq!(
            vct_update_steps(&bigger, &old),
            vec![VctStep::Resized {
                name: "data".into(),
                storage_class: Some("fast".into())
            }]
        );
    }

    #[test]
    fn vct_storage_class_expansion() {
        let sc = |name: &str, default: bool, expand: Option<bool>, created: &str| -> StorageClass {
            serde_json::from_value(json!({"metadata": {"name": name, "creationTimestamp": created,
                "annotations": if default { json!({DEFAULT_STORAGE_CLASS_ANNOTATION: "true"}) } else { json!({}) }},
                "provisioner": "p", "allowVolumeExpansion": expand})).unwrap()
        };
        let classes = [
            sc("old-default", true, Some(true), "2024-01-01T00:00:00Z"),
            sc("new-default", true, Some(false), "2025-01-01T00:00:00Z"),
            sc("plain", false, None, "2026-01-01T00:00:00Z"),
        ];
        let d = default_storage_class(&classes).unwrap();
        assert_eq!(d.metadata.name.as_deref(), Some("new-default"));
        assert_eq!(
            check_expansion("data", None, Ok(Some(d)))
                .unwrap()
                .to_string(),
            "spec.volumeClaimTemplates[data].spec.resources.requests.storage: Forbidden: storage class new-default does not support volume expansion"
        );
        assert_eq!(check_expansion("data", None, Ok(None)), None);
        assert_eq!(
            check_expansion("data", Some("plain"), Ok(Some(&classes[2]))),
            None
        );
        assert_eq!(
            check_expansion("data", Some("gone"), Err(()))
                .unwrap()
                .to_string(),
            "spec.volumeClaimTemplates[data].spec.storageClassName: Invalid value: \"gone\": can not get sc"
        );
        assert_eq!(
            check_expansion("data", None, Err(())).unwrap().to_string(),
            "spec.volumeClaimTemplates[data].spec.storageClassName: Invalid value: \"nil\": can not list storage class"
        );
    }
}
