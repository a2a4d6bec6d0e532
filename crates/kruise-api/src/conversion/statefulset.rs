//! Advanced StatefulSet: `apps.kruise.io/v1alpha1` ⇄ `apps.kruise.io/v1beta1` (the hub).
//!
//! Mapping:
//!
//! - **Common fields** (metadata; spec `replicas`, `selector`, `template`,
//!   `volumeClaimTemplates`, `serviceName`, `podManagementPolicy`, `updateStrategy` with every
//!   `rollingUpdate` field, `revisionHistoryLimit`; status `observedGeneration`, the five
//!   replica counters, both revisions, `collisionCount`, `conditions`, `labelSelector`) are
//!   copied unchanged, as OpenKruise does. Only `apiVersion` changes.
//! - **v1beta1-only spec fields** (`volumeClaimUpdateStrategy`, `reserveOrdinals`, `lifecycle`,
//!   `scaleStrategy`, `persistentVolumeClaimRetentionPolicy`, `ordinals`) have no place in
//!   v1alpha1. OpenKruise drops them; here, when any of them is set, they are written as one
//!   JSON object (v1beta1 field names, absent fields omitted) into the v1alpha1 annotation
//!   [`keys::CONVERSION_STATEFULSET_SPEC`], and `to_v1beta1` moves them back into the spec and
//!   removes the annotation.
//! - **v1beta1-only status fields** (`updatedReadyReplicas`, `updatedAvailableReplicas`,
//!   `volumeClaims`) travel the same way in [`keys::CONVERSION_STATEFULSET_STATUS`] (only
//!   when the object has a status).
//!
//! An annotation that is removed leaves `metadata.annotations` absent rather than empty (the
//! apiserver never returns an empty annotation map). A stash annotation that does not parse,
//! or a status stash on an object without status, is not consumed: it stays an ordinary
//! annotation, so nothing is lost. Keys under `conversion.apps.kruise.io/` are reserved;
//! objects that set them themselves are not guaranteed a lossless round trip.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::apps::common::Lifecycle;
use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::keys;

/// The v1beta1 spec fields v1alpha1 lacks, as carried in [`keys::CONVERSION_STATEFULSET_SPEC`].
#[derive(Serialize, Deserialize, Default, PartialEq, Debug)]
#[serde(rename_all = "camelCase")]
struct SpecOnlyInV1beta1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    volume_claim_update_strategy: Option<b1::VolumeClaimUpdateStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reserve_ordinals: Option<Vec<IntOrString>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lifecycle: Option<Lifecycle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scale_strategy: Option<b1::StatefulSetScaleStrategy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    persistent_volume_claim_retention_policy:
        Option<b1::StatefulSetPersistentVolumeClaimRetentionPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ordinals: Option<b1::StatefulSetOrdinals>,
}

/// The v1beta1 status fields v1alpha1 lacks, as carried in
/// [`keys::CONVERSION_STATEFULSET_STATUS`].
#[derive(Serialize, Deserialize, Default, PartialEq, Debug)]
#[serde(rename_all = "camelCase")]
struct StatusOnlyInV1beta1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_ready_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_available_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    volume_claims: Option<Vec<b1::VolumeClaimStatus>>,
}

/// Removes `key` from `annotations` and parses it, if present and valid JSON of `T`; an
/// invalid value is left in place. Leaves `None` instead of an emptied map.
pub(crate) fn take_json_annotation<T: DeserializeOwned>(
    annotations: &mut Option<BTreeMap<String, String>>,
    key: &str,
) -> Option<T> {
    let map = annotations.as_mut()?;
    let parsed = serde_json::from_str::<T>(map.get(key)?).ok()?;
    map.remove(key);
    if map.is_empty() {
        *annotations = None;
    }
    Some(parsed)
}

/// Sets `key` to `value` in `annotations`, creating the map when absent.
pub(crate) fn set_annotation(
    annotations: &mut Option<BTreeMap<String, String>>,
    key: &str,
    value: String,
) {
    annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.to_owned(), value);
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("conversion stash types always serialize")
}

fn rolling_update_to_v1beta1(
    r: &a1::RollingUpdateStatefulSetStrategy,
) -> b1::RollingUpdateStatefulSetStrategy {
    b1::RollingUpdateStatefulSetStrategy {
        partition: r.partition,
        max_unavailable: r.max_unavailable.clone(),
        pod_update_policy: r.pod_update_policy.clone(),
        paused: r.paused,
        unordered_update: r
            .unordered_update
            .as_ref()
            .map(|u| b1::UnorderedUpdateStrategy {
                priority_strategy: u.priority_strategy.clone(),
            }),
        in_place_update_strategy: r.in_place_update_strategy.clone(),
        min_ready_seconds: r.min_ready_seconds,
    }
}

fn rolling_update_to_v1alpha1(
    r: &b1::RollingUpdateStatefulSetStrategy,
) -> a1::RollingUpdateStatefulSetStrategy {
    a1::RollingUpdateStatefulSetStrategy {
        partition: r.partition,
        max_unavailable: r.max_unavailable.clone(),
        pod_update_policy: r.pod_update_policy.clone(),
        paused: r.paused,
        unordered_update: r
            .unordered_update
            .as_ref()
            .map(|u| a1::UnorderedUpdateStrategy {
                priority_strategy: u.priority_strategy.clone(),
            }),
        in_place_update_strategy: r.in_place_update_strategy.clone(),
        min_ready_seconds: r.min_ready_seconds,
    }
}

/// Converts a v1alpha1 Advanced StatefulSet to v1beta1, restoring the v1beta1-only fields
/// carried in the conversion annotations.
pub fn to_v1beta1(obj: &a1::StatefulSet) -> b1::StatefulSet {
    let mut metadata = obj.metadata.clone();
    let extra_spec: SpecOnlyInV1beta1 =
        take_json_annotation(&mut metadata.annotations, keys::CONVERSION_STATEFULSET_SPEC)
            .unwrap_or_default();
    let status = obj.status.as_ref().map(|s| {
        let extra: StatusOnlyInV1beta1 = take_json_annotation(
            &mut metadata.annotations,
            keys::CONVERSION_STATEFULSET_STATUS,
        )
        .unwrap_or_default();
        b1::StatefulSetStatus {
            observed_generation: s.observed_generation,
            replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            current_replicas: s.current_replicas,
            updated_replicas: s.updated_replicas,
            updated_ready_replicas: extra.updated_ready_replicas,
            updated_available_replicas: extra.updated_available_replicas,
            current_revision: s.current_revision.clone(),
            update_revision: s.update_revision.clone(),
            collision_count: s.collision_count,
            conditions: s.conditions.clone(),
            label_selector: s.label_selector.clone(),
            volume_claims: extra.volume_claims,
        }
    });
    let s = &obj.spec;
    let spec = b1::StatefulSetSpec {
        replicas: s.replicas,
        selector: s.selector.clone(),
        template: s.template.clone(),
        volume_claim_templates: s.volume_claim_templates.clone(),
        volume_claim_update_strategy: extra_spec.volume_claim_update_strategy,
        service_name: s.service_name.clone(),
        pod_management_policy: s.pod_management_policy.clone(),
        update_strategy: s
            .update_strategy
            .as_ref()
            .map(|u| b1::StatefulSetUpdateStrategy {
                type_: u.type_.clone(),
                rolling_update: u.rolling_update.as_ref().map(rolling_update_to_v1beta1),
            }),
        revision_history_limit: s.revision_history_limit,
        reserve_ordinals: extra_spec.reserve_ordinals,
        lifecycle: extra_spec.lifecycle,
        scale_strategy: extra_spec.scale_strategy,
        persistent_volume_claim_retention_policy: extra_spec
            .persistent_volume_claim_retention_policy,
        ordinals: extra_spec.ordinals,
    };
    b1::StatefulSet {
        metadata,
        spec,
        status,
    }
}

/// Converts a v1beta1 Advanced StatefulSet to v1alpha1, keeping the v1beta1-only fields in
/// the conversion annotations.
pub fn to_v1alpha1(obj: &b1::StatefulSet) -> a1::StatefulSet {
    let mut metadata = obj.metadata.clone();
    let s = &obj.spec;
    let extra_spec = SpecOnlyInV1beta1 {
        volume_claim_update_strategy: s.volume_claim_update_strategy.clone(),
        reserve_ordinals: s.reserve_ordinals.clone(),
        lifecycle: s.lifecycle.clone(),
        scale_strategy: s.scale_strategy.clone(),
        persistent_volume_claim_retention_policy: s
            .persistent_volume_claim_retention_policy
            .clone(),
        ordinals: s.ordinals.clone(),
    };
    if extra_spec != SpecOnlyInV1beta1::default() {
        set_annotation(
            &mut metadata.annotations,
            keys::CONVERSION_STATEFULSET_SPEC,
            to_json(&extra_spec),
        );
    }
    let status = obj.status.as_ref().map(|st| {
        let extra = StatusOnlyInV1beta1 {
            updated_ready_replicas: st.updated_ready_replicas,
            updated_available_replicas: st.updated_available_replicas,
            volume_claims: st.volume_claims.clone(),
        };
        if extra != StatusOnlyInV1beta1::default() {
            set_annotation(
                &mut metadata.annotations,
                keys::CONVERSION_STATEFULSET_STATUS,
                to_json(&extra),
            );
        }
        a1::StatefulSetStatus {
            observed_generation: st.observed_generation,
            replicas: st.replicas,
            ready_replicas: st.ready_replicas,
            available_replicas: st.available_replicas,
            current_replicas: st.current_replicas,
            updated_replicas: st.updated_replicas,
            current_revision: st.current_revision.clone(),
            update_revision: st.update_revision.clone(),
            collision_count: st.collision_count,
            conditions: st.conditions.clone(),
            label_selector: st.label_selector.clone(),
        }
    });
    let spec = a1::StatefulSetSpec {
        replicas: s.replicas,
        selector: s.selector.clone(),
        template: s.template.clone(),
        volume_claim_templates: s.volume_claim_templates.clone(),
        service_name: s.service_name.clone(),
        pod_management_policy: s.pod_management_policy.clone(),
        update_strategy: s
            .update_strategy
            .as_ref()
            .map(|u| a1::StatefulSetUpdateStrategy {
                type_: u.type_.clone(),
                rolling_update: u.rolling_update.as_ref().map(rolling_update_to_v1alpha1),
            }),
        revision_history_limit: s.revision_history_limit,
    };
    a1::StatefulSet {
        metadata,
        spec,
        status,
    }
}

/// proptest strategies shared by the conversion tests of StatefulSet and DaemonSet.
#[cfg(test)]
pub(crate) mod strategies {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use proptest::collection::{btree_map, vec};
    use proptest::option::of;
    use proptest::prelude::*;

    use crate::apps::common::{
        InPlaceUpdateStrategy, Lifecycle, LifecycleHook, UpdatePriorityOrderTerm,
        UpdatePriorityStrategy, UpdatePriorityWeightTerm,
    };

    pub fn int_or_string() -> impl Strategy<Value = IntOrString> {
        prop_oneof![
            (-5i32..500).prop_map(IntOrString::Int),
            "[0-9]{1,3}%".prop_map(IntOrString::String),
            "[0-9]-[0-9]{1,2}".prop_map(IntOrString::String),
        ]
    }

    pub fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
        btree_map("[a-z]{1,6}(\\.io/[a-z]{1,4})?", "[a-z0-9]{0,5}", 1..3)
    }

    pub fn selector() -> impl Strategy<Value = LabelSelector> {
        of(label_map()).prop_map(|match_labels| LabelSelector {
            match_labels,
            match_expressions: None,
        })
    }

    pub fn template() -> impl Strategy<Value = PodTemplateSpec> {
        (of(label_map()), of("[a-z]{1,8}:[0-9]\\.[0-9]")).prop_map(|(labels, image)| {
            PodTemplateSpec {
                metadata: labels.map(|labels| ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: image.map(|image| PodSpec {
                    containers: vec![Container {
                        name: "main".into(),
                        image: Some(image),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            }
        })
    }

    /// Metadata whose annotations (absent or non-empty) are drawn from `annotation_keys`
    /// (plus random keys) with values from `annotation_values` (plus random values).
    pub fn metadata(
        annotation_keys: Vec<&'static str>,
        annotation_values: Vec<&'static str>,
    ) -> impl Strategy<Value = ObjectMeta> {
        let key = prop_oneof![
            proptest::sample::select(if annotation_keys.is_empty() {
                vec!["example.com/a"]
            } else {
                annotation_keys
            })
            .prop_map(String::from),
            "[a-z]{1,6}\\.io/[a-z]{1,6}",
        ];
        let value = prop_oneof![
            proptest::sample::select(if annotation_values.is_empty() {
                vec!["x"]
            } else {
                annotation_values
            })
            .prop_map(String::from),
            "[a-z0-9]{0,6}",
        ];
        (
            "[a-z][a-z0-9-]{0,10}",
            of("[a-z]{1,8}"),
            of(label_map()),
            of(btree_map(key, value, 1..4)),
            of(1i64..100),
        )
            .prop_map(
                |(name, namespace, labels, annotations, generation)| ObjectMeta {
                    name: Some(name),
                    namespace,
                    labels,
                    annotations,
                    generation,
                    ..ObjectMeta::default()
                },
            )
    }

    pub fn lifecycle_hook() -> impl Strategy<Value = LifecycleHook> {
        (
            of(label_map()),
            of(vec("[a-z]{1,5}\\.io/[a-z]{1,5}", 0..3)),
            of(any::<bool>()),
        )
            .prop_map(|(labels_handler, finalizers_handler, mark_pod_not_ready)| {
                LifecycleHook {
                    labels_handler,
                    finalizers_handler,
                    mark_pod_not_ready,
                }
            })
    }

    pub fn lifecycle() -> impl Strategy<Value = Lifecycle> {
        (
            of(lifecycle_hook()),
            of(lifecycle_hook()),
            of(lifecycle_hook()),
        )
            .prop_map(|(pre_delete, in_place_update, pre_normal)| Lifecycle {
                pre_delete,
                in_place_update,
                pre_normal,
            })
    }

    pub fn priority_strategy() -> impl Strategy<Value = UpdatePriorityStrategy> {
        (
            of(vec(
                "[a-z]{1,6}".prop_map(|ordered_key| UpdatePriorityOrderTerm { ordered_key }),
                0..3,
            )),
            of(vec(
                (1i32..=100, selector()).prop_map(|(weight, match_selector)| {
                    UpdatePriorityWeightTerm {
                        weight,
                        match_selector,
                    }
                }),
                0..3,
            )),
        )
            .prop_map(|(order_priority, weight_priority)| UpdatePriorityStrategy {
                order_priority,
                weight_priority,
            })
    }

    pub fn in_place_update_strategy() -> impl Strategy<Value = InPlaceUpdateStrategy> {
        of(0i32..60).prop_map(|grace_period_seconds| InPlaceUpdateStrategy {
            grace_period_seconds,
        })
    }

    pub fn enum_string(values: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::sample::select(values).prop_map(String::from),
            1 => "[A-Za-z]{0,8}",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::*;
    use super::*;
    use k8s_openapi::api::apps::v1::StatefulSetCondition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::collection::vec;
    use proptest::option::of;
    use proptest::prelude::*;
    use serde_json::json;

    use crate::apps::common::LifecycleHook;
    use crate::apps::v1beta1::{
        persistent_volume_claim_retention_policy_type as retention,
        pod_management_policy_type as pmp, pod_update_strategy_type as pup,
        statefulset_update_strategy_type as ust, volume_claim_update_strategy_type as vcu,
    };

    fn beta_base() -> b1::StatefulSet {
        let mut sts = b1::StatefulSet::new(
            "web",
            b1::StatefulSetSpec {
                replicas: Some(3),
                service_name: Some("web".into()),
                ..Default::default()
            },
        );
        sts.metadata.namespace = Some("default".into());
        sts
    }

    #[test]
    fn statefulset_common_fields_convert_without_annotations() {
        let mut beta = beta_base();
        beta.spec.update_strategy = Some(b1::StatefulSetUpdateStrategy {
            type_: Some(ust::ROLLING_UPDATE.into()),
            rolling_update: Some(b1::RollingUpdateStatefulSetStrategy {
                partition: Some(1),
                max_unavailable: Some(IntOrString::String("50%".into())),
                pod_update_policy: Some(pup::IN_PLACE_IF_POSSIBLE.into()),
                paused: Some(false),
                unordered_update: Some(b1::UnorderedUpdateStrategy::default()),
                in_place_update_strategy: None,
                min_ready_seconds: Some(5),
            }),
        });
        let alpha = to_v1alpha1(&beta);
        assert_eq!(alpha.metadata, beta.metadata);
        assert_eq!(alpha.spec.replicas, Some(3));
        let ru = alpha
            .spec
            .update_strategy
            .as_ref()
            .unwrap()
            .rolling_update
            .as_ref()
            .unwrap();
        assert_eq!(ru.partition, Some(1));
        assert_eq!(ru.pod_update_policy.as_deref(), Some("InPlaceIfPossible"));
        assert_eq!(
            ru.unordered_update,
            Some(a1::UnorderedUpdateStrategy::default())
        );
        assert_eq!(to_v1beta1(&alpha), beta);
        let v = serde_json::to_value(&alpha).unwrap();
        assert_eq!(v["apiVersion"], "apps.kruise.io/v1alpha1");
        assert_eq!(
            serde_json::to_value(&beta).unwrap()["apiVersion"],
            "apps.kruise.io/v1beta1"
        );
    }

    #[test]
    fn statefulset_v1beta1_only_spec_fields_travel_in_an_annotation() {
        let mut beta = beta_base();
        beta.spec.reserve_ordinals =
            Some(vec![IntOrString::Int(1), IntOrString::String("3-5".into())]);
        beta.spec.ordinals = Some(b1::StatefulSetOrdinals { start: Some(2) });
        beta.spec.persistent_volume_claim_retention_policy =
            Some(b1::StatefulSetPersistentVolumeClaimRetentionPolicy {
                when_deleted: Some(retention::RETAIN.into()),
                when_scaled: Some(retention::DELETE.into()),
            });
        beta.spec.volume_claim_update_strategy = Some(b1::VolumeClaimUpdateStrategy {
            type_: Some(vcu::ON_POD_ROLLING_UPDATE.into()),
        });
        beta.spec.scale_strategy = Some(b1::StatefulSetScaleStrategy {
            max_unavailable: Some(IntOrString::Int(2)),
        });
        beta.spec.lifecycle = Some(Lifecycle {
            pre_delete: Some(LifecycleHook {
                finalizers_handler: Some(vec!["example.com/hook".into()]),
                ..Default::default()
            }),
            ..Default::default()
        });
        let alpha = to_v1alpha1(&beta);
        let ann = alpha.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann.len(), 1);
        let stash: serde_json::Value =
            serde_json::from_str(&ann[keys::CONVERSION_STATEFULSET_SPEC]).unwrap();
        assert_eq!(
            stash,
            json!({
                "volumeClaimUpdateStrategy": {"type": "OnPodRollingUpdate"},
                "reserveOrdinals": [1, "3-5"],
                "lifecycle": {"preDelete": {"finalizersHandler": ["example.com/hook"]}},
                "scaleStrategy": {"maxUnavailable": 2},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"},
                "ordinals": {"start": 2},
            })
        );
        let back = to_v1beta1(&alpha);
        assert_eq!(back, beta);
        assert_eq!(back.metadata.annotations, None);
    }

    #[test]
    fn statefulset_stash_keeps_other_annotations_and_empty_structs() {
        let mut beta = beta_base();
        beta.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
        beta.spec.ordinals = Some(b1::StatefulSetOrdinals { start: None });
        let alpha = to_v1alpha1(&beta);
        let ann = alpha.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann["a"], "b");
        assert_eq!(ann[keys::CONVERSION_STATEFULSET_SPEC], r#"{"ordinals":{}}"#);
        assert_eq!(to_v1beta1(&alpha), beta);
    }

    #[test]
    fn statefulset_v1beta1_only_status_fields_travel_in_an_annotation() {
        let mut beta = beta_base();
        beta.status = Some(b1::StatefulSetStatus {
            replicas: 3,
            ready_replicas: 2,
            available_replicas: 2,
            current_replicas: 1,
            updated_replicas: 2,
            updated_ready_replicas: Some(2),
            updated_available_replicas: Some(1),
            update_revision: Some("web-7d9f".into()),
            conditions: Some(vec![StatefulSetCondition {
                type_: Some("FailedCreatePod".into()),
                status: Some("True".into()),
                ..Default::default()
            }]),
            volume_claims: Some(vec![b1::VolumeClaimStatus {
                volume_claim_name: "data".into(),
                compatible_replicas: 3,
                compatible_ready_replicas: 2,
            }]),
            ..Default::default()
        });
        let alpha = to_v1alpha1(&beta);
        let st = alpha.status.as_ref().unwrap();
        assert_eq!((st.replicas, st.updated_replicas), (3, 2));
        assert_eq!(
            st.conditions.as_ref().unwrap()[0].type_.as_deref(),
            Some("FailedCreatePod")
        );
        let ann = alpha.metadata.annotations.as_ref().unwrap();
        assert!(!ann.contains_key(keys::CONVERSION_STATEFULSET_SPEC));
        let stash: serde_json::Value =
            serde_json::from_str(&ann[keys::CONVERSION_STATEFULSET_STATUS]).unwrap();
        assert_eq!(
            stash,
            json!({"updatedReadyReplicas": 2, "updatedAvailableReplicas": 1,
                   "volumeClaims": [{"volumeClaimName": "data", "compatibleReplicas": 3,
                                     "compatibleReadyReplicas": 2}]})
        );
        assert_eq!(to_v1beta1(&alpha), beta);
    }

    #[test]
    fn statefulset_alpha_without_stash_gets_no_v1beta1_only_fields() {
        let alpha = a1::StatefulSet::new(
            "web",
            a1::StatefulSetSpec {
                pod_management_policy: Some(pmp::PARALLEL.into()),
                ..Default::default()
            },
        );
        let beta = to_v1beta1(&alpha);
        assert_eq!(beta.spec.pod_management_policy.as_deref(), Some("Parallel"));
        assert_eq!(beta.spec.reserve_ordinals, None);
        assert_eq!(beta.spec.lifecycle, None);
        assert_eq!(beta.spec.ordinals, None);
        assert_eq!(beta.metadata.annotations, None);
        assert_eq!(to_v1alpha1(&beta), alpha);
    }

    #[test]
    fn statefulset_invalid_stash_is_kept_as_a_plain_annotation() {
        let mut alpha = a1::StatefulSet::new("web", Default::default());
        alpha.metadata.annotations = Some(
            [(
                keys::CONVERSION_STATEFULSET_SPEC.to_string(),
                "not json".to_string(),
            )]
            .into(),
        );
        let beta = to_v1beta1(&alpha);
        assert_eq!(beta.metadata.annotations, alpha.metadata.annotations);
        assert_eq!(beta.spec.reserve_ordinals, None);
        assert_eq!(to_v1alpha1(&beta), alpha);
    }

    #[test]
    fn statefulset_status_stash_without_status_is_not_consumed() {
        let mut alpha = a1::StatefulSet::new("web", Default::default());
        alpha.metadata.annotations = Some(
            [(
                keys::CONVERSION_STATEFULSET_STATUS.to_string(),
                "{\"updatedReadyReplicas\":1}".to_string(),
            )]
            .into(),
        );
        let beta = to_v1beta1(&alpha);
        assert_eq!(beta.status, None);
        assert_eq!(beta.metadata.annotations, alpha.metadata.annotations);
        assert_eq!(to_v1alpha1(&beta), alpha);
    }

    #[test]
    fn statefulset_samples_convert_both_ways() {
        let beta: b1::StatefulSet = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1beta1_statefulset.yaml"
        )))
        .unwrap();
        assert_eq!(to_v1beta1(&to_v1alpha1(&beta)), beta);
        let alpha: a1::StatefulSet = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_statefulset.yaml"
        )))
        .unwrap();
        let converted = to_v1beta1(&alpha);
        assert_eq!(converted.metadata, alpha.metadata);
        assert_eq!(to_v1alpha1(&converted), alpha);
    }

    // ---- proptest strategies ----

    fn rolling_update_b1() -> impl Strategy<Value = b1::RollingUpdateStatefulSetStrategy> {
        (
            of(0i32..10),
            of(int_or_string()),
            of(enum_string(&[
                pup::RECREATE,
                pup::IN_PLACE_IF_POSSIBLE,
                pup::IN_PLACE_ONLY,
            ])),
            of(any::<bool>()),
            of(of(priority_strategy())),
            of(in_place_update_strategy()),
            of(0i32..=300),
        )
            .prop_map(
                |(partition, max_unavailable, pod_update_policy, paused, unordered, ipu, mrs)| {
                    b1::RollingUpdateStatefulSetStrategy {
                        partition,
                        max_unavailable,
                        pod_update_policy,
                        paused,
                        unordered_update: unordered.map(|priority_strategy| {
                            b1::UnorderedUpdateStrategy { priority_strategy }
                        }),
                        in_place_update_strategy: ipu,
                        min_ready_seconds: mrs,
                    }
                },
            )
    }

    fn rolling_update_a1() -> impl Strategy<Value = a1::RollingUpdateStatefulSetStrategy> {
        rolling_update_b1().prop_map(|r| rolling_update_to_v1alpha1(&r))
    }

    fn conditions() -> impl Strategy<Value = Vec<StatefulSetCondition>> {
        vec(
            (
                enum_string(&["FailedCreatePod", "FailedUpdatePod"]),
                enum_string(&["True", "False", "Unknown"]),
                of("[A-Za-z]{1,8}"),
                of("[a-z ]{0,12}"),
            )
                .prop_map(|(type_, status, reason, message)| StatefulSetCondition {
                    type_: Some(type_),
                    status: Some(status),
                    reason,
                    message,
                    last_transition_time: None,
                }),
            0..3,
        )
    }

    fn status_b1() -> impl Strategy<Value = b1::StatefulSetStatus> {
        (
            (
                of(0i64..50),
                0i32..10,
                0i32..10,
                0i32..10,
                0i32..10,
                0i32..10,
            ),
            (
                of(0i32..10),
                of(0i32..10),
                of("[a-z0-9-]{1,10}"),
                of("[a-z0-9-]{1,10}"),
            ),
            (
                of(0i32..5),
                of(conditions()),
                of("[a-z]{1,5}=[a-z]{1,5}"),
                of(vec(
                    ("[a-z]{1,6}", 0i32..5, 0i32..5).prop_map(|(n, c, r)| b1::VolumeClaimStatus {
                        volume_claim_name: n,
                        compatible_replicas: c,
                        compatible_ready_replicas: r,
                    }),
                    0..3,
                )),
            ),
        )
            .prop_map(
                |((og, r, rr, ar, cr, ur), (urr, uar, crev, urev), (cc, cond, ls, vc))| {
                    b1::StatefulSetStatus {
                        observed_generation: og,
                        replicas: r,
                        ready_replicas: rr,
                        available_replicas: ar,
                        current_replicas: cr,
                        updated_replicas: ur,
                        updated_ready_replicas: urr,
                        updated_available_replicas: uar,
                        current_revision: crev,
                        update_revision: urev,
                        collision_count: cc,
                        conditions: cond,
                        label_selector: ls,
                        volume_claims: vc,
                    }
                },
            )
    }

    fn statefulset_b1() -> impl Strategy<Value = b1::StatefulSet> {
        let common = (
            metadata(
                vec!["kruise.io/auto-generate-persistent-pod-state"],
                vec!["true"],
            ),
            of(0i32..10),
            selector(),
            template(),
            of("[a-z]{1,8}"),
            of(enum_string(&[pmp::ORDERED_READY, pmp::PARALLEL])),
            of((
                of(enum_string(&[ust::ROLLING_UPDATE, ust::ON_DELETE])),
                of(rolling_update_b1()),
            )),
            of(0i32..20),
        );
        let beta_only = (
            of(of(enum_string(&[
                vcu::ON_DELETE,
                vcu::ON_POD_ROLLING_UPDATE,
            ]))),
            of(vec(int_or_string(), 0..4)),
            of(lifecycle()),
            of(of(int_or_string())),
            of((
                of(enum_string(&[retention::RETAIN, retention::DELETE])),
                of(enum_string(&[retention::RETAIN, retention::DELETE])),
            )),
            of(of(-2i32..5)),
        );
        (common, beta_only, of(status_b1())).prop_map(
            |(
                (metadata, replicas, selector, template, svc, pmp, us, rhl),
                (vcus, ro, lc, ss, pvc, ord),
                status,
            )| {
                b1::StatefulSet {
                    metadata,
                    spec: b1::StatefulSetSpec {
                        replicas,
                        selector,
                        template,
                        volume_claim_templates: None,
                        volume_claim_update_strategy: vcus
                            .map(|type_| b1::VolumeClaimUpdateStrategy { type_ }),
                        service_name: svc,
                        pod_management_policy: pmp,
                        update_strategy: us.map(|(type_, rolling_update)| {
                            b1::StatefulSetUpdateStrategy {
                                type_,
                                rolling_update,
                            }
                        }),
                        revision_history_limit: rhl,
                        reserve_ordinals: ro,
                        lifecycle: lc,
                        scale_strategy: ss.map(|max_unavailable| b1::StatefulSetScaleStrategy {
                            max_unavailable,
                        }),
                        persistent_volume_claim_retention_policy: pvc.map(
                            |(when_deleted, when_scaled)| {
                                b1::StatefulSetPersistentVolumeClaimRetentionPolicy {
                                    when_deleted,
                                    when_scaled,
                                }
                            },
                        ),
                        ordinals: ord.map(|start| b1::StatefulSetOrdinals { start }),
                    },
                    status,
                }
            },
        )
    }

    fn statefulset_a1() -> impl Strategy<Value = a1::StatefulSet> {
        (
            metadata(
                vec!["kruise.io/auto-generate-persistent-pod-state"],
                vec!["true"],
            ),
            (
                of(0i32..10),
                selector(),
                template(),
                of("[a-z]{1,8}"),
                of(enum_string(&[pmp::ORDERED_READY, pmp::PARALLEL])),
                of((
                    of(enum_string(&[ust::ROLLING_UPDATE, ust::ON_DELETE])),
                    of(rolling_update_a1()),
                )),
                of(0i32..20),
            ),
            of(status_b1()),
        )
            .prop_map(
                |(metadata, (replicas, selector, template, svc, pmp, us, rhl), status)| {
                    a1::StatefulSet {
                        metadata,
                        spec: a1::StatefulSetSpec {
                            replicas,
                            selector,
                            template,
                            volume_claim_templates: None,
                            service_name: svc,
                            pod_management_policy: pmp,
                            update_strategy: us.map(|(type_, rolling_update)| {
                                a1::StatefulSetUpdateStrategy {
                                    type_,
                                    rolling_update,
                                }
                            }),
                            revision_history_limit: rhl,
                        },
                        status: status.map(|st| a1::StatefulSetStatus {
                            observed_generation: st.observed_generation,
                            replicas: st.replicas,
                            ready_replicas: st.ready_replicas,
                            available_replicas: st.available_replicas,
                            current_replicas: st.current_replicas,
                            updated_replicas: st.updated_replicas,
                            current_revision: st.current_revision,
                            update_revision: st.update_revision,
                            collision_count: st.collision_count,
                            conditions: st.conditions,
                            label_selector: st.label_selector,
                        }),
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn statefulset_v1beta1_round_trip(beta in statefulset_b1()) {
            let alpha = to_v1alpha1(&beta);
            prop_assert_eq!(to_v1beta1(&alpha), beta);
        }

        #[test]
        fn statefulset_v1alpha1_round_trip(alpha in statefulset_a1()) {
            let beta = to_v1beta1(&alpha);
            prop_assert_eq!(beta.metadata.annotations.clone(), alpha.metadata.annotations.clone());
            prop_assert_eq!(to_v1alpha1(&beta), alpha);
        }

        #[test]
        fn statefulset_v1alpha1_from_v1beta1_round_trip(beta in statefulset_b1()) {
            // v1alpha1 objects that carry stash annotations (as written by to_v1alpha1)
            let alpha = to_v1alpha1(&beta);
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&alpha)), alpha);
        }

        #[test]
        fn statefulset_json_survives_conversion(beta in statefulset_b1()) {
            // The converted object also survives serialization (what the webhook sends).
            let alpha = to_v1alpha1(&beta);
            let wire: a1::StatefulSet =
                serde_json::from_value(serde_json::to_value(&alpha).unwrap()).unwrap();
            prop_assert_eq!(to_v1beta1(&wire), beta);
        }
    }

    #[test]
    fn statefulset_metadata_is_carried_over() {
        let mut beta = beta_base();
        beta.metadata = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("prod".into()),
            uid: Some("0b1c".into()),
            resource_version: Some("42".into()),
            generation: Some(7),
            finalizers: Some(vec!["example.com/f".into()]),
            ..Default::default()
        };
        let alpha = to_v1alpha1(&beta);
        assert_eq!(alpha.metadata, beta.metadata);
    }
}
