//! SidecarSet conversion between `v1alpha1` and `v1beta1`.
//!
//! Mappings:
//!
//! - Metadata (except the keys below), `selector`, the containers and init containers (all
//!   container fields and the SidecarSet settings), `volumes`, `updateStrategy`,
//!   `injectionStrategy`, `imagePullSecrets`, `revisionHistoryLimit`, `patchPodMetadata` and the
//!   status are copied field by field.
//! - **Custom version.** v1alpha1 keeps it in the label [`SIDECARSET_CUSTOM_VERSION`], v1beta1 in
//!   `spec.customVersion` (as in OpenKruise, the label moves into the field and back). A
//!   v1beta1 object may also carry that label itself, although v1beta1 gives it no meaning;
//!   its value is parked in the v1alpha1 annotation [`CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL`]
//!   so that it cannot be mistaken for the custom version, and restored on the way back.
//! - **Namespace.** v1alpha1 `spec.namespace` (non-empty) becomes, as in OpenKruise, the v1beta1
//!   `namespaceSelector` `{matchLabels: {kubernetes.io/metadata.name: <namespace>}}`, which
//!   takes precedence over a v1alpha1 `namespaceSelector`. To convert back losslessly the
//!   namespace is recorded in the v1beta1 annotation [`CONVERSION_SIDECARSET_NAMESPACE`] and a
//!   displaced v1alpha1 selector, as JSON, in [`CONVERSION_SIDECARSET_NAMESPACE_SELECTOR`].
//!   Converting back restores `namespace` and the original selector only while the v1beta1
//!   selector is still exactly the namespace-derived one; if it was changed in v1beta1 since,
//!   the v1beta1 selector wins and the annotations are left as they are. An explicitly empty
//!   `namespace` (meaning "all namespaces") is recorded as an empty annotation value.
//!
//! Keys under `conversion.apps.kruise.io/` are reserved for the conversion. A label or
//! annotation map that becomes empty when the conversion removes its key is dropped
//! (Kubernetes does not distinguish an empty map from an absent one).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::keys::{
    CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL, CONVERSION_SIDECARSET_NAMESPACE,
    CONVERSION_SIDECARSET_NAMESPACE_SELECTOR, LABEL_METADATA_NAME, SIDECARSET_CUSTOM_VERSION,
};

/// Converts a v1alpha1 SidecarSet to v1beta1.
pub fn to_v1beta1(obj: &a1::SidecarSet) -> b1::SidecarSet {
    let mut metadata = obj.metadata.clone();
    let s = &obj.spec;

    // Custom version: label → field; a parked label of the v1beta1 object comes back.
    let custom_version = take_key(&mut metadata.labels, SIDECARSET_CUSTOM_VERSION);
    if let Some(own) = take_key(
        &mut metadata.annotations,
        CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL,
    ) {
        put_key(&mut metadata.labels, SIDECARSET_CUSTOM_VERSION, own);
    }

    // Namespace: folded into the namespace selector.
    let namespace_selector = match &s.namespace {
        Some(ns) if !ns.is_empty() => {
            put_key(
                &mut metadata.annotations,
                CONVERSION_SIDECARSET_NAMESPACE,
                ns.clone(),
            );
            match &s.namespace_selector {
                Some(sel) => put_key(
                    &mut metadata.annotations,
                    CONVERSION_SIDECARSET_NAMESPACE_SELECTOR,
                    serde_json::to_string(sel).expect("a label selector always serializes"),
                ),
                None => {
                    take_key(
                        &mut metadata.annotations,
                        CONVERSION_SIDECARSET_NAMESPACE_SELECTOR,
                    );
                }
            }
            Some(namespace_selector_for(ns))
        }
        Some(_) => {
            put_key(
                &mut metadata.annotations,
                CONVERSION_SIDECARSET_NAMESPACE,
                String::new(),
            );
            s.namespace_selector.clone()
        }
        None => s.namespace_selector.clone(),
    };

    b1::SidecarSet {
        metadata,
        spec: b1::SidecarSetSpec {
            selector: s.selector.clone(),
            namespace_selector,
            init_containers: s
                .init_containers
                .as_ref()
                .map(|cs| cs.iter().map(container_to_v1beta1).collect()),
            containers: s
                .containers
                .as_ref()
                .map(|cs| cs.iter().map(container_to_v1beta1).collect()),
            volumes: s.volumes.clone(),
            update_strategy: s
                .update_strategy
                .as_ref()
                .map(|u| b1::SidecarSetUpdateStrategy {
                    type_: u.type_.clone(),
                    paused: u.paused,
                    selector: u.selector.clone(),
                    partition: u.partition.clone(),
                    max_unavailable: u.max_unavailable.clone(),
                    priority_strategy: u.priority_strategy.clone(),
                    scatter_strategy: u.scatter_strategy.clone(),
                }),
            injection_strategy: s.injection_strategy.as_ref().map(|i| {
                b1::SidecarSetInjectionStrategy {
                    paused: i.paused,
                    revision: i.revision.as_ref().map(|r| b1::SidecarSetInjectRevision {
                        custom_version: r.custom_version.clone(),
                        revision_name: r.revision_name.clone(),
                        policy: r.policy.clone(),
                    }),
                }
            }),
            image_pull_secrets: s.image_pull_secrets.clone(),
            revision_history_limit: s.revision_history_limit,
            patch_pod_metadata: s.patch_pod_metadata.as_ref().map(|ps| {
                ps.iter()
                    .map(|p| b1::SidecarSetPatchPodMetadata {
                        annotations: p.annotations.clone(),
                        patch_policy: p.patch_policy.clone(),
                    })
                    .collect()
            }),
            custom_version,
        },
        status: obj.status.as_ref().map(|st| b1::SidecarSetStatus {
            observed_generation: st.observed_generation,
            matched_pods: st.matched_pods,
            updated_pods: st.updated_pods,
            ready_pods: st.ready_pods,
            updated_ready_pods: st.updated_ready_pods,
            latest_revision: st.latest_revision.clone(),
            collision_count: st.collision_count,
            uninjected_pods: st.uninjected_pods,
            injection_paused_time: st.injection_paused_time.clone(),
            injection_resumed_time: st.injection_resumed_time.clone(),
        }),
    }
}

/// Converts a v1beta1 SidecarSet to v1alpha1.
pub fn to_v1alpha1(obj: &b1::SidecarSet) -> a1::SidecarSet {
    let mut metadata = obj.metadata.clone();
    let s = &obj.spec;

    // Custom version: field → label; a label the v1beta1 object carries itself is parked.
    if let Some(own) = take_key(&mut metadata.labels, SIDECARSET_CUSTOM_VERSION) {
        put_key(
            &mut metadata.annotations,
            CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL,
            own,
        );
    }
    if let Some(cv) = &s.custom_version {
        put_key(&mut metadata.labels, SIDECARSET_CUSTOM_VERSION, cv.clone());
    }

    // Namespace: restored while the selector is still the one derived from it.
    let recorded = metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONVERSION_SIDECARSET_NAMESPACE))
        .cloned();
    let (namespace, namespace_selector) = match recorded {
        Some(ns) if ns.is_empty() => {
            take_key(&mut metadata.annotations, CONVERSION_SIDECARSET_NAMESPACE);
            (Some(ns), s.namespace_selector.clone())
        }
        Some(ns) if s.namespace_selector.as_ref() == Some(&namespace_selector_for(&ns)) => {
            let displaced = metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CONVERSION_SIDECARSET_NAMESPACE_SELECTOR))
                .map(|raw| serde_json::from_str::<LabelSelector>(raw));
            match displaced {
                None => {
                    take_key(&mut metadata.annotations, CONVERSION_SIDECARSET_NAMESPACE);
                    (Some(ns), None)
                }
                Some(Ok(sel)) => {
                    take_key(&mut metadata.annotations, CONVERSION_SIDECARSET_NAMESPACE);
                    take_key(
                        &mut metadata.annotations,
                        CONVERSION_SIDECARSET_NAMESPACE_SELECTOR,
                    );
                    (Some(ns), Some(sel))
                }
                // Not written by this conversion: keep everything as it is.
                Some(Err(_)) => (None, s.namespace_selector.clone()),
            }
        }
        _ => (None, s.namespace_selector.clone()),
    };

    a1::SidecarSet {
        metadata,
        spec: a1::SidecarSetSpec {
            selector: s.selector.clone(),
            namespace,
            namespace_selector,
            init_containers: s
                .init_containers
                .as_ref()
                .map(|cs| cs.iter().map(container_to_v1alpha1).collect()),
            containers: s
                .containers
                .as_ref()
                .map(|cs| cs.iter().map(container_to_v1alpha1).collect()),
            volumes: s.volumes.clone(),
            update_strategy: s
                .update_strategy
                .as_ref()
                .map(|u| a1::SidecarSetUpdateStrategy {
                    type_: u.type_.clone(),
                    paused: u.paused,
                    selector: u.selector.clone(),
                    partition: u.partition.clone(),
                    max_unavailable: u.max_unavailable.clone(),
                    priority_strategy: u.priority_strategy.clone(),
                    scatter_strategy: u.scatter_strategy.clone(),
                }),
            injection_strategy: s.injection_strategy.as_ref().map(|i| {
                a1::SidecarSetInjectionStrategy {
                    paused: i.paused,
                    revision: i.revision.as_ref().map(|r| a1::SidecarSetInjectRevision {
                        custom_version: r.custom_version.clone(),
                        revision_name: r.revision_name.clone(),
                        policy: r.policy.clone(),
                    }),
                }
            }),
            image_pull_secrets: s.image_pull_secrets.clone(),
            revision_history_limit: s.revision_history_limit,
            patch_pod_metadata: s.patch_pod_metadata.as_ref().map(|ps| {
                ps.iter()
                    .map(|p| a1::SidecarSetPatchPodMetadata {
                        annotations: p.annotations.clone(),
                        patch_policy: p.patch_policy.clone(),
                    })
                    .collect()
            }),
        },
        status: obj.status.as_ref().map(|st| a1::SidecarSetStatus {
            observed_generation: st.observed_generation,
            matched_pods: st.matched_pods,
            updated_pods: st.updated_pods,
            ready_pods: st.ready_pods,
            updated_ready_pods: st.updated_ready_pods,
            latest_revision: st.latest_revision.clone(),
            collision_count: st.collision_count,
            uninjected_pods: st.uninjected_pods,
            injection_paused_time: st.injection_paused_time.clone(),
            injection_resumed_time: st.injection_resumed_time.clone(),
        }),
    }
}

/// The v1beta1 namespace selector equivalent to the v1alpha1 `spec.namespace: <ns>`.
pub fn namespace_selector_for(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([(
            LABEL_METADATA_NAME.to_string(),
            namespace.to_string(),
        )])),
        match_expressions: None,
    }
}

fn container_to_v1beta1(c: &a1::SidecarContainer) -> b1::SidecarContainer {
    b1::SidecarContainer {
        container: c.container.clone(),
        pod_inject_policy: c.pod_inject_policy.clone(),
        upgrade_strategy: c.upgrade_strategy.as_ref().map(|u| {
            b1::SidecarContainerUpgradeStrategy {
                upgrade_type: u.upgrade_type.clone(),
                hot_upgrade_empty_image: u.hot_upgrade_empty_image.clone(),
            }
        }),
        share_volume_policy: c
            .share_volume_policy
            .as_ref()
            .map(|p| b1::ShareVolumePolicy {
                type_: p.type_.clone(),
            }),
        share_volume_device_policy: c.share_volume_device_policy.as_ref().map(|p| {
            b1::ShareVolumePolicy {
                type_: p.type_.clone(),
            }
        }),
        transfer_env: c.transfer_env.as_ref().map(|envs| {
            envs.iter()
                .map(|e| b1::TransferEnvVar {
                    source_container_name: e.source_container_name.clone(),
                    source_container_name_from: e.source_container_name_from.as_ref().map(|f| {
                        b1::SourceContainerNameSource {
                            field_ref: f.field_ref.clone(),
                        }
                    }),
                    env_name: e.env_name.clone(),
                    env_names: e.env_names.clone(),
                })
                .collect()
        }),
        resources_policy: c.resources_policy.as_ref().map(|p| b1::ResourcesPolicy {
            target_containers_mode: p.target_containers_mode.clone(),
            target_containers_name_regex: p.target_containers_name_regex.clone(),
            resources_expr: b1::ResourcesExpr {
                limits: p
                    .resources_expr
                    .limits
                    .as_ref()
                    .map(|l| b1::ResourceExprLimits {
                        cpu: l.cpu.clone(),
                        memory: l.memory.clone(),
                    }),
                requests: p
                    .resources_expr
                    .requests
                    .as_ref()
                    .map(|r| b1::ResourceExprRequests {
                        cpu: r.cpu.clone(),
                        memory: r.memory.clone(),
                    }),
            },
        }),
    }
}

fn container_to_v1alpha1(c: &b1::SidecarContainer) -> a1::SidecarContainer {
    a1::SidecarContainer {
        container: c.container.clone(),
        pod_inject_policy: c.pod_inject_policy.clone(),
        upgrade_strategy: c.upgrade_strategy.as_ref().map(|u| {
            a1::SidecarContainerUpgradeStrategy {
                upgrade_type: u.upgrade_type.clone(),
                hot_upgrade_empty_image: u.hot_upgrade_empty_image.clone(),
            }
        }),
        share_volume_policy: c
            .share_volume_policy
            .as_ref()
            .map(|p| a1::ShareVolumePolicy {
                type_: p.type_.clone(),
            }),
        share_volume_device_policy: c.share_volume_device_policy.as_ref().map(|p| {
            a1::ShareVolumePolicy {
                type_: p.type_.clone(),
            }
        }),
        transfer_env: c.transfer_env.as_ref().map(|envs| {
            envs.iter()
                .map(|e| a1::TransferEnvVar {
                    source_container_name: e.source_container_name.clone(),
                    source_container_name_from: e.source_container_name_from.as_ref().map(|f| {
                        a1::SourceContainerNameSource {
                            field_ref: f.field_ref.clone(),
                        }
                    }),
                    env_name: e.env_name.clone(),
                    env_names: e.env_names.clone(),
                })
                .collect()
        }),
        resources_policy: c.resources_policy.as_ref().map(|p| a1::ResourcesPolicy {
            target_containers_mode: p.target_containers_mode.clone(),
            target_containers_name_regex: p.target_containers_name_regex.clone(),
            resources_expr: a1::ResourcesExpr {
                limits: p
                    .resources_expr
                    .limits
                    .as_ref()
                    .map(|l| a1::ResourceExprLimits {
                        cpu: l.cpu.clone(),
                        memory: l.memory.clone(),
                    }),
                requests: p
                    .resources_expr
                    .requests
                    .as_ref()
                    .map(|r| a1::ResourceExprRequests {
                        cpu: r.cpu.clone(),
                        memory: r.memory.clone(),
                    }),
            },
        }),
    }
}

/// Removes `key` from an optional map and returns its value; drops the map when it becomes
/// empty.
fn take_key(map: &mut Option<BTreeMap<String, String>>, key: &str) -> Option<String> {
    let m = map.as_mut()?;
    let value = m.remove(key);
    if value.is_some() && m.is_empty() {
        *map = None;
    }
    value
}

/// Sets `key` in an optional map, creating the map if needed.
fn put_key(map: &mut Option<BTreeMap<String, String>>, key: &str, value: String) {
    map.get_or_insert_with(BTreeMap::new)
        .insert(key.to_string(), value);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Container, EmptyDirVolumeSource, LocalObjectReference, ObjectFieldSelector, Volume,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use proptest::prelude::*;

    use super::*;
    use crate::apps::common::{
        UpdatePriorityStrategy, UpdatePriorityWeightTerm, UpdateScatterTerm,
    };

    fn sample_v1alpha1() -> a1::SidecarSet {
        serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_sidecarset.yaml"
        )))
        .unwrap()
    }

    fn sample_v1beta1() -> b1::SidecarSet {
        serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1beta1_sidecarset.yaml"
        )))
        .unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn custom_version_label_becomes_field_and_back() {
        let a = sample_v1alpha1();
        let b = to_v1beta1(&a);
        assert_eq!(b.spec.custom_version.as_deref(), Some("v2"));
        assert_eq!(b.metadata.labels, None);
        assert_eq!(to_v1alpha1(&b), a);
    }

    #[test]
    fn own_custom_version_label_of_v1beta1_is_parked() {
        let mut b = sample_v1beta1();
        b.metadata.labels = labels(&[(SIDECARSET_CUSTOM_VERSION, "stale"), ("team", "infra")]);
        let a = to_v1alpha1(&b);
        assert_eq!(
            a.metadata.labels,
            labels(&[(SIDECARSET_CUSTOM_VERSION, "v2"), ("team", "infra")])
        );
        assert_eq!(
            a.metadata.annotations.as_ref().unwrap()[CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL],
            "stale"
        );
        assert_eq!(to_v1beta1(&a), b);

        // Without a custom version the label does not turn into one.
        b.spec.custom_version = None;
        let a = to_v1alpha1(&b);
        assert_eq!(a.metadata.labels, labels(&[("team", "infra")]));
        assert_eq!(to_v1beta1(&a), b);
    }

    #[test]
    fn namespace_becomes_selector_like_openkruise() {
        // The v1alpha1 sample selects its namespace by label; use the `namespace` field here.
        let mut a = sample_v1alpha1();
        a.spec.namespace = Some("default".into());
        a.spec.namespace_selector = None;
        let b = to_v1beta1(&a);
        assert_eq!(
            b.spec.namespace_selector,
            Some(namespace_selector_for("default"))
        );
        assert_eq!(
            b.spec.namespace_selector,
            sample_v1beta1().spec.namespace_selector,
            "the samples describe the same object"
        );
        assert_eq!(
            b.metadata.annotations,
            labels(&[(CONVERSION_SIDECARSET_NAMESPACE, "default")])
        );
        let back = to_v1alpha1(&b);
        assert_eq!(back.spec.namespace.as_deref(), Some("default"));
        assert_eq!(back.spec.namespace_selector, None);
        assert_eq!(back, a);
    }

    #[test]
    fn displaced_namespace_selector_is_restored() {
        let mut a = sample_v1alpha1();
        a.spec.namespace = Some("default".into());
        let sel = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "env".into(),
                operator: "In".into(),
                values: Some(vec!["prod".into()]),
            }]),
            match_labels: None,
        };
        a.spec.namespace_selector = Some(sel.clone());
        let b = to_v1beta1(&a);
        assert_eq!(
            b.spec.namespace_selector,
            Some(namespace_selector_for("default"))
        );
        let back = to_v1alpha1(&b);
        assert_eq!(back.spec.namespace_selector, Some(sel));
        assert_eq!(back, a);
    }

    #[test]
    fn selector_changed_in_v1beta1_wins() {
        let a = sample_v1alpha1();
        let mut b = to_v1beta1(&a);
        let edited = namespace_selector_for("other");
        b.spec.namespace_selector = Some(edited.clone());
        let back = to_v1alpha1(&b);
        assert_eq!(back.spec.namespace, None);
        assert_eq!(back.spec.namespace_selector, Some(edited));
        assert_eq!(to_v1beta1(&back), b);
    }

    #[test]
    fn empty_namespace_is_recorded() {
        let mut a = sample_v1alpha1();
        a.spec.namespace = Some(String::new());
        a.spec.namespace_selector = Some(namespace_selector_for("x"));
        let b = to_v1beta1(&a);
        assert_eq!(b.spec.namespace_selector, a.spec.namespace_selector);
        assert_eq!(to_v1alpha1(&b), a);
    }

    #[test]
    fn v1beta1_sample_converts_back_and_forth() {
        let b = sample_v1beta1();
        let a = to_v1alpha1(&b);
        assert_eq!(a.spec.namespace, None);
        assert_eq!(a.spec.namespace_selector, b.spec.namespace_selector);
        assert_eq!(
            a.metadata.labels,
            labels(&[(SIDECARSET_CUSTOM_VERSION, "v2")])
        );
        assert_eq!(to_v1beta1(&a), b);
        // Containers keep every container field and SidecarSet setting.
        assert_eq!(
            serde_json::to_value(&a.spec.containers).unwrap(),
            serde_json::to_value(&b.spec.containers).unwrap()
        );
    }

    // ---- property tests ----

    fn arb_map(
        reserved_free_keys: bool,
    ) -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
        let key = if reserved_free_keys {
            "[a-z]{1,6}(\\.io/[a-z]{1,6})?"
        } else {
            "[a-z]{1,6}"
        };
        proptest::option::of(proptest::collection::btree_map(key, "[a-z0-9]{0,6}", 1..3))
    }

    fn arb_selector() -> impl Strategy<Value = LabelSelector> {
        prop_oneof![
            arb_map(false).prop_map(|m| LabelSelector {
                match_labels: m,
                match_expressions: None
            }),
            "[a-z]{1,5}".prop_map(|ns| namespace_selector_for(&ns)),
            (
                "[a-z]{1,5}",
                proptest::option::of(proptest::collection::vec("[a-z]{1,5}", 0..3))
            )
                .prop_map(|(key, values)| LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![LabelSelectorRequirement {
                        key,
                        operator: "In".into(),
                        values,
                    }]),
                }),
        ]
    }

    fn arb_str() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[a-zA-Z0-9]{0,6}")
    }

    fn arb_container() -> impl Strategy<Value = a1::SidecarContainer> {
        (
            (
                "[a-z]{1,6}",
                arb_str(),
                proptest::option::of(proptest::collection::vec("[a-z]{1,4}", 0..3)),
            ),
            arb_str(),
            proptest::option::of((arb_str(), arb_str())),
            proptest::option::of(arb_str()),
            proptest::option::of(arb_str()),
            proptest::option::of(proptest::collection::vec(
                (
                    arb_str(),
                    proptest::option::of("[a-z.]{1,12}"),
                    arb_str(),
                    proptest::option::of(proptest::collection::vec("[A-Z]{1,4}", 0..3)),
                ),
                0..3,
            )),
            proptest::option::of((
                prop_oneof![Just("sum".to_string()), Just("max".to_string())],
                arb_str(),
                proptest::option::of((arb_str(), arb_str())),
                proptest::option::of((arb_str(), arb_str())),
            )),
        )
            .prop_map(
                |((name, image, command), inject, upgrade, share, share_dev, envs, policy)| {
                    a1::SidecarContainer {
                        container: Container {
                            name,
                            image,
                            command,
                            ..Default::default()
                        },
                        pod_inject_policy: inject,
                        upgrade_strategy: upgrade.map(|(upgrade_type, hot_upgrade_empty_image)| {
                            a1::SidecarContainerUpgradeStrategy {
                                upgrade_type,
                                hot_upgrade_empty_image,
                            }
                        }),
                        share_volume_policy: share.map(|type_| a1::ShareVolumePolicy { type_ }),
                        share_volume_device_policy: share_dev
                            .map(|type_| a1::ShareVolumePolicy { type_ }),
                        transfer_env: envs.map(|es| {
                            es.into_iter()
                                .map(|(source, field, env_name, env_names)| a1::TransferEnvVar {
                                    source_container_name: source,
                                    source_container_name_from: field.map(|f| {
                                        a1::SourceContainerNameSource {
                                            field_ref: Some(ObjectFieldSelector {
                                                api_version: None,
                                                field_path: f,
                                            }),
                                        }
                                    }),
                                    env_name,
                                    env_names,
                                })
                                .collect()
                        }),
                        resources_policy: policy.map(|(mode, regex, limits, requests)| {
                            a1::ResourcesPolicy {
                                target_containers_mode: mode,
                                target_containers_name_regex: regex,
                                resources_expr: a1::ResourcesExpr {
                                    limits: limits.map(|(cpu, memory)| a1::ResourceExprLimits {
                                        cpu,
                                        memory,
                                    }),
                                    requests: requests.map(|(cpu, memory)| {
                                        a1::ResourceExprRequests { cpu, memory }
                                    }),
                                },
                            }
                        }),
                    }
                },
            )
    }

    fn arb_int_or_string() -> impl Strategy<Value = IntOrString> {
        prop_oneof![
            (0..100i32).prop_map(IntOrString::Int),
            (0..100u8).prop_map(|p| IntOrString::String(format!("{p}%"))),
        ]
    }

    fn arb_update_strategy() -> impl Strategy<Value = a1::SidecarSetUpdateStrategy> {
        (
            arb_str(),
            proptest::option::of(any::<bool>()),
            proptest::option::of(arb_selector()),
            proptest::option::of(arb_int_or_string()),
            proptest::option::of(arb_int_or_string()),
            proptest::option::of((1..100i32, arb_selector())),
            proptest::option::of(proptest::collection::vec(
                ("[a-z]{1,4}", "[a-z]{0,4}"),
                0..3,
            )),
        )
            .prop_map(
                |(type_, paused, selector, partition, max_unavailable, weight, scatter)| {
                    a1::SidecarSetUpdateStrategy {
                        type_,
                        paused,
                        selector,
                        partition,
                        max_unavailable,
                        priority_strategy: weight.map(|(weight, match_selector)| {
                            UpdatePriorityStrategy {
                                order_priority: None,
                                weight_priority: Some(vec![UpdatePriorityWeightTerm {
                                    weight,
                                    match_selector,
                                }]),
                            }
                        }),
                        scatter_strategy: scatter.map(|terms| {
                            terms
                                .into_iter()
                                .map(|(key, value)| UpdateScatterTerm { key, value })
                                .collect()
                        }),
                    }
                },
            )
    }

    fn arb_injection_strategy() -> impl Strategy<Value = a1::SidecarSetInjectionStrategy> {
        (
            proptest::option::of(any::<bool>()),
            proptest::option::of((arb_str(), arb_str(), arb_str())),
        )
            .prop_map(|(paused, revision)| a1::SidecarSetInjectionStrategy {
                paused,
                revision: revision.map(|(custom_version, revision_name, policy)| {
                    a1::SidecarSetInjectRevision {
                        custom_version,
                        revision_name,
                        policy,
                    }
                }),
            })
    }

    fn arb_status() -> impl Strategy<Value = a1::SidecarSetStatus> {
        (
            proptest::option::of(any::<i64>()),
            any::<(i32, i32, i32)>(),
            proptest::option::of(any::<i32>()),
            arb_str(),
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i32>()),
            proptest::option::of(0i64..4_000_000_000),
            proptest::option::of(0i64..4_000_000_000),
        )
            .prop_map(
                |(
                    observed_generation,
                    (m, u, r),
                    updated_ready_pods,
                    latest_revision,
                    collision_count,
                    uninjected_pods,
                    paused,
                    resumed,
                )| {
                    let time = |secs: i64| {
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                            k8s_openapi::jiff::Timestamp::from_second(secs).expect("in range"),
                        )
                    };
                    a1::SidecarSetStatus {
                        observed_generation,
                        matched_pods: m,
                        updated_pods: u,
                        ready_pods: r,
                        updated_ready_pods,
                        latest_revision,
                        collision_count,
                        uninjected_pods,
                        injection_paused_time: paused.map(time),
                        injection_resumed_time: resumed.map(time),
                    }
                },
            )
    }

    fn arb_spec_common() -> impl Strategy<Value = a1::SidecarSetSpec> {
        (
            proptest::option::of(arb_selector()),
            proptest::option::of(proptest::collection::vec(arb_container(), 0..2)),
            proptest::option::of(proptest::collection::vec(arb_container(), 0..3)),
            proptest::option::of(proptest::collection::vec("[a-z]{1,5}", 0..2)),
            proptest::option::of(arb_update_strategy()),
            proptest::option::of(arb_injection_strategy()),
            proptest::option::of(proptest::collection::vec("[a-z]{0,5}", 0..2)),
            proptest::option::of(any::<i32>()),
            proptest::option::of(proptest::collection::vec((arb_map(true), arb_str()), 0..2)),
        )
            .prop_map(
                |(
                    selector,
                    init,
                    containers,
                    volumes,
                    update,
                    injection,
                    secrets,
                    limit,
                    patches,
                )| {
                    a1::SidecarSetSpec {
                        selector,
                        namespace: None,
                        namespace_selector: None,
                        init_containers: init,
                        containers,
                        volumes: volumes.map(|names| {
                            names
                                .into_iter()
                                .map(|name| Volume {
                                    name,
                                    empty_dir: Some(EmptyDirVolumeSource::default()),
                                    ..Default::default()
                                })
                                .collect()
                        }),
                        update_strategy: update,
                        injection_strategy: injection,
                        image_pull_secrets: secrets.map(|names| {
                            names
                                .into_iter()
                                .map(|name| LocalObjectReference { name })
                                .collect()
                        }),
                        revision_history_limit: limit,
                        patch_pod_metadata: patches.map(|ps| {
                            ps.into_iter()
                                .map(
                                    |(annotations, patch_policy)| a1::SidecarSetPatchPodMetadata {
                                        annotations,
                                        patch_policy,
                                    },
                                )
                                .collect()
                        }),
                    }
                },
            )
    }

    /// Labels (sometimes with the custom-version label) and annotations without reserved keys.
    fn arb_meta() -> impl Strategy<Value = ObjectMeta> {
        (
            "[a-z]{1,8}",
            arb_map(true),
            proptest::option::of("[a-z0-9]{0,4}"),
            arb_map(true),
        )
            .prop_map(|(name, mut labels, custom_version, annotations)| {
                if let Some(cv) = custom_version {
                    put_key(&mut labels, SIDECARSET_CUSTOM_VERSION, cv);
                }
                ObjectMeta {
                    name: Some(name),
                    labels,
                    annotations,
                    ..Default::default()
                }
            })
    }

    fn arb_v1alpha1() -> impl Strategy<Value = a1::SidecarSet> {
        (
            arb_meta(),
            arb_spec_common(),
            proptest::option::of(prop_oneof![Just(String::new()), "[a-z]{1,6}"]),
            proptest::option::of(arb_selector()),
            proptest::option::of(arb_status()),
        )
            .prop_map(
                |(metadata, mut spec, namespace, namespace_selector, status)| {
                    spec.namespace = namespace;
                    spec.namespace_selector = namespace_selector;
                    a1::SidecarSet {
                        metadata,
                        spec,
                        status,
                    }
                },
            )
    }

    fn arb_v1beta1() -> impl Strategy<Value = b1::SidecarSet> {
        (
            arb_meta(),
            arb_spec_common(),
            proptest::option::of(arb_selector()),
            proptest::option::of("[a-z0-9]{0,4}"),
            proptest::option::of(arb_status()),
        )
            .prop_map(
                |(metadata, spec, namespace_selector, custom_version, status)| {
                    // Re-type the common fields (identical JSON shape) as v1beta1.
                    let mut v = serde_json::to_value(a1::SidecarSet {
                        metadata,
                        spec,
                        status,
                    })
                    .unwrap();
                    v["apiVersion"] = "apps.kruise.io/v1beta1".into();
                    let mut b: b1::SidecarSet = serde_json::from_value(v).unwrap();
                    b.spec.namespace_selector = namespace_selector;
                    b.spec.custom_version = custom_version;
                    b
                },
            )
    }

    proptest! {
        #[test]
        fn round_trip_from_v1alpha1(a in arb_v1alpha1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&a)), a);
        }

        #[test]
        fn round_trip_from_v1beta1(b in arb_v1beta1()) {
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&b)), b);
        }

        #[test]
        fn v1beta1_selects_the_v1alpha1_namespace(a in arb_v1alpha1()) {
            let b = to_v1beta1(&a);
            match a.spec.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => {
                    prop_assert_eq!(b.spec.namespace_selector, Some(namespace_selector_for(ns)))
                }
                _ => prop_assert_eq!(b.spec.namespace_selector, a.spec.namespace_selector),
            }
        }
    }
}
