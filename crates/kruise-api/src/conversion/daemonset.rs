//! Advanced DaemonSet: `apps.kruise.io/v1alpha1` ⇄ `apps.kruise.io/v1beta1` (the hub).
//!
//! Mapping:
//!
//! - **Common fields** (metadata, `selector`, `template`, `updateStrategy`, `minReadySeconds`,
//!   `burstReplicas`, `revisionHistoryLimit`, `lifecycle`, and the status counters,
//!   `collisionCount` and `conditions`) are copied unchanged. Only `apiVersion` changes.
//! - **Renamed status field**: v1alpha1 `status.daemonSetHash` is v1beta1
//!   `status.updateRevision`.
//! - **Partitioned scaling moved**: the v1alpha1 annotation
//!   [`keys::PROGRESSIVE_CREATE_POD`]` = "true"` becomes v1beta1
//!   `spec.scaleStrategy.partitionedScaling: true` (the annotation is removed), and back: a
//!   v1beta1 object whose scale strategy is exactly `{partitionedScaling: true}` gets the
//!   annotation. Any other annotation value is left alone and gives no scale strategy (as in
//!   OpenKruise). A v1beta1 state the annotation cannot express (`partitionedScaling` false
//!   or absent in a present `scaleStrategy`, or a v1beta1 object that carries the annotation
//!   itself) is kept as JSON in [`keys::CONVERSION_DAEMONSET_SCALE_STRATEGY`] instead and
//!   restored from there.
//! - **Deprecated `Surging`**: v1alpha1 `rollingUpdateType: Surging` becomes `Standard` in
//!   v1beta1, as OpenKruise converts it, and the v1beta1 object gets
//!   [`keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE`]` = "Surging"` so that v1alpha1 gets
//!   `Surging` back. A v1beta1 object that literally says `Surging` converts to `Surging`
//!   with the same annotation on the v1alpha1 side, which tells `to_v1beta1` to keep it.
//!
//! Emptied annotation maps become absent; keys under `conversion.apps.kruise.io/` are reserved
//! (see [`crate::conversion::statefulset`]).

use std::collections::BTreeMap;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1alpha1::rolling_update_type::{STANDARD, SURGING};
use crate::apps::v1beta1 as b1;
use crate::conversion::statefulset::{set_annotation, take_json_annotation};
use crate::keys;

const TRUE: &str = "true";

fn annotation<'a>(annotations: &'a Option<BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    annotations.as_ref()?.get(key).map(String::as_str)
}

fn remove_annotation(annotations: &mut Option<BTreeMap<String, String>>, key: &str) {
    if let Some(map) = annotations.as_mut() {
        map.remove(key);
        if map.is_empty() {
            *annotations = None;
        }
    }
}

/// Converts a v1alpha1 Advanced DaemonSet to v1beta1.
pub fn to_v1beta1(obj: &a1::DaemonSet) -> b1::DaemonSet {
    let mut metadata = obj.metadata.clone();
    let ann = &mut metadata.annotations;

    let scale_strategy = match take_json_annotation::<Option<b1::DaemonSetScaleStrategy>>(
        ann,
        keys::CONVERSION_DAEMONSET_SCALE_STRATEGY,
    ) {
        Some(stashed) => stashed,
        None if annotation(ann, keys::PROGRESSIVE_CREATE_POD) == Some(TRUE) => {
            remove_annotation(ann, keys::PROGRESSIVE_CREATE_POD);
            Some(b1::DaemonSetScaleStrategy {
                partitioned_scaling: Some(true),
            })
        }
        None => None,
    };

    let update_strategy = obj.spec.update_strategy.as_ref().map(|u| {
        let rolling_update = u.rolling_update.as_ref().map(|r| {
            let type_ = if r.type_.as_deref() == Some(SURGING) {
                if annotation(ann, keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE) == Some(SURGING)
                {
                    // The v1beta1 object itself said Surging.
                    remove_annotation(ann, keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE);
                    Some(SURGING.to_owned())
                } else {
                    set_annotation(
                        ann,
                        keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE,
                        SURGING.to_owned(),
                    );
                    Some(STANDARD.to_owned())
                }
            } else {
                r.type_.clone()
            };
            b1::RollingUpdateDaemonSet {
                type_,
                max_unavailable: r.max_unavailable.clone(),
                max_surge: r.max_surge.clone(),
                selector: r.selector.clone(),
                partition: r.partition.clone(),
                paused: r.paused,
            }
        });
        b1::DaemonSetUpdateStrategy {
            type_: u.type_.clone(),
            rolling_update,
        }
    });

    let s = &obj.spec;
    b1::DaemonSet {
        metadata,
        spec: b1::DaemonSetSpec {
            selector: s.selector.clone(),
            template: s.template.clone(),
            update_strategy,
            min_ready_seconds: s.min_ready_seconds,
            burst_replicas: s.burst_replicas.clone(),
            revision_history_limit: s.revision_history_limit,
            lifecycle: s.lifecycle.clone(),
            scale_strategy,
        },
        status: obj.status.as_ref().map(|st| b1::DaemonSetStatus {
            current_number_scheduled: st.current_number_scheduled,
            number_misscheduled: st.number_misscheduled,
            desired_number_scheduled: st.desired_number_scheduled,
            number_ready: st.number_ready,
            observed_generation: st.observed_generation,
            updated_number_scheduled: st.updated_number_scheduled,
            number_available: st.number_available,
            number_unavailable: st.number_unavailable,
            collision_count: st.collision_count,
            conditions: st.conditions.clone(),
            update_revision: st.daemon_set_hash.clone(),
        }),
    }
}

/// Converts a v1beta1 Advanced DaemonSet to v1alpha1.
pub fn to_v1alpha1(obj: &b1::DaemonSet) -> a1::DaemonSet {
    let mut metadata = obj.metadata.clone();
    let ann = &mut metadata.annotations;

    let partitioned_only = Some(b1::DaemonSetScaleStrategy {
        partitioned_scaling: Some(true),
    });
    let progressive = annotation(ann, keys::PROGRESSIVE_CREATE_POD);
    if obj.spec.scale_strategy == partitioned_only && progressive.is_none() {
        set_annotation(ann, keys::PROGRESSIVE_CREATE_POD, TRUE.to_owned());
    } else if obj.spec.scale_strategy.is_some() || progressive == Some(TRUE) {
        let json = serde_json::to_string(&obj.spec.scale_strategy)
            .expect("a scale strategy always serializes");
        set_annotation(ann, keys::CONVERSION_DAEMONSET_SCALE_STRATEGY, json);
    }

    let update_strategy = obj.spec.update_strategy.as_ref().map(|u| {
        let rolling_update = u.rolling_update.as_ref().map(|r| {
            let type_ = match r.type_.as_deref() {
                Some(STANDARD)
                    if annotation(ann, keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE)
                        == Some(SURGING) =>
                {
                    remove_annotation(ann, keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE);
                    Some(SURGING.to_owned())
                }
                Some(SURGING) => {
                    set_annotation(
                        ann,
                        keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE,
                        SURGING.to_owned(),
                    );
                    Some(SURGING.to_owned())
                }
                _ => r.type_.clone(),
            };
            a1::RollingUpdateDaemonSet {
                type_,
                max_unavailable: r.max_unavailable.clone(),
                max_surge: r.max_surge.clone(),
                selector: r.selector.clone(),
                partition: r.partition.clone(),
                paused: r.paused,
            }
        });
        a1::DaemonSetUpdateStrategy {
            type_: u.type_.clone(),
            rolling_update,
        }
    });

    let s = &obj.spec;
    a1::DaemonSet {
        metadata,
        spec: a1::DaemonSetSpec {
            selector: s.selector.clone(),
            template: s.template.clone(),
            update_strategy,
            min_ready_seconds: s.min_ready_seconds,
            burst_replicas: s.burst_replicas.clone(),
            revision_history_limit: s.revision_history_limit,
            lifecycle: s.lifecycle.clone(),
        },
        status: obj.status.as_ref().map(|st| a1::DaemonSetStatus {
            current_number_scheduled: st.current_number_scheduled,
            number_misscheduled: st.number_misscheduled,
            desired_number_scheduled: st.desired_number_scheduled,
            number_ready: st.number_ready,
            observed_generation: st.observed_generation,
            updated_number_scheduled: st.updated_number_scheduled,
            number_available: st.number_available,
            number_unavailable: st.number_unavailable,
            collision_count: st.collision_count,
            conditions: st.conditions.clone(),
            daemon_set_hash: st.update_revision.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1beta1::{daemonset_update_strategy_type as ust, rolling_update_type as rut};
    use crate::conversion::statefulset::strategies::*;
    use k8s_openapi::api::apps::v1::DaemonSetCondition;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use proptest::collection::vec;
    use proptest::option::of;
    use proptest::prelude::*;

    fn alpha_with_annotations(pairs: &[(&str, &str)]) -> a1::DaemonSet {
        let mut ds = a1::DaemonSet::new("agent", Default::default());
        if !pairs.is_empty() {
            ds.metadata.annotations = Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
        ds
    }

    fn rolling(type_: &str) -> Option<a1::DaemonSetUpdateStrategy> {
        Some(a1::DaemonSetUpdateStrategy {
            type_: Some(ust::ROLLING_UPDATE.into()),
            rolling_update: Some(a1::RollingUpdateDaemonSet {
                type_: Some(type_.into()),
                ..Default::default()
            }),
        })
    }

    fn beta_rolling_type(ds: &b1::DaemonSet) -> Option<&str> {
        ds.spec
            .update_strategy
            .as_ref()?
            .rolling_update
            .as_ref()?
            .type_
            .as_deref()
    }

    #[test]
    fn daemonset_progressive_annotation_moves_to_partitioned_scaling() {
        let alpha = alpha_with_annotations(&[(keys::PROGRESSIVE_CREATE_POD, "true"), ("a", "b")]);
        let beta = to_v1beta1(&alpha);
        assert_eq!(
            beta.spec.scale_strategy,
            Some(b1::DaemonSetScaleStrategy {
                partitioned_scaling: Some(true)
            })
        );
        assert_eq!(
            beta.metadata.annotations,
            Some([("a".to_string(), "b".to_string())].into())
        );
        assert_eq!(to_v1alpha1(&beta), alpha);
    }

    #[test]
    fn daemonset_partitioned_scaling_becomes_the_annotation() {
        let mut beta = b1::DaemonSet::new("agent", Default::default());
        beta.spec.scale_strategy = Some(b1::DaemonSetScaleStrategy {
            partitioned_scaling: Some(true),
        });
        let alpha = to_v1alpha1(&beta);
        assert_eq!(
            alpha.metadata.annotations,
            Some([(keys::PROGRESSIVE_CREATE_POD.to_string(), "true".to_string())].into())
        );
        let back = to_v1beta1(&alpha);
        assert_eq!(back, beta);
        assert_eq!(back.metadata.annotations, None);
    }

    #[test]
    fn daemonset_other_progressive_values_are_plain_annotations() {
        for value in ["false", "True", ""] {
            let alpha = alpha_with_annotations(&[(keys::PROGRESSIVE_CREATE_POD, value)]);
            let beta = to_v1beta1(&alpha);
            assert_eq!(beta.spec.scale_strategy, None, "{value}");
            assert_eq!(beta.metadata.annotations, alpha.metadata.annotations);
            assert_eq!(to_v1alpha1(&beta), alpha);
        }
    }

    #[test]
    fn daemonset_inexpressible_scale_strategies_use_the_stash() {
        let cases = [
            (
                Some(b1::DaemonSetScaleStrategy {
                    partitioned_scaling: Some(false),
                }),
                None,
                r#"{"partitionedScaling":false}"#,
            ),
            (
                Some(b1::DaemonSetScaleStrategy {
                    partitioned_scaling: None,
                }),
                None,
                "{}",
            ),
            (None, Some("true"), "null"),
            (
                Some(b1::DaemonSetScaleStrategy {
                    partitioned_scaling: Some(true),
                }),
                Some("true"),
                r#"{"partitionedScaling":true}"#,
            ),
            (
                Some(b1::DaemonSetScaleStrategy {
                    partitioned_scaling: Some(true),
                }),
                Some("no"),
                r#"{"partitionedScaling":true}"#,
            ),
        ];
        for (scale_strategy, progressive, stash) in cases {
            let mut beta = b1::DaemonSet::new("agent", Default::default());
            beta.spec.scale_strategy = scale_strategy;
            if let Some(p) = progressive {
                beta.metadata.annotations =
                    Some([(keys::PROGRESSIVE_CREATE_POD.to_string(), p.to_string())].into());
            }
            let alpha = to_v1alpha1(&beta);
            let ann = alpha.metadata.annotations.as_ref().unwrap();
            assert_eq!(ann[keys::CONVERSION_DAEMONSET_SCALE_STRATEGY], stash);
            assert_eq!(
                ann.get(keys::PROGRESSIVE_CREATE_POD).map(String::as_str),
                progressive
            );
            assert_eq!(to_v1beta1(&alpha), beta, "{stash}");
        }
    }

    #[test]
    fn daemonset_surging_becomes_standard_and_comes_back() {
        let mut alpha = alpha_with_annotations(&[]);
        alpha.spec.update_strategy = rolling(SURGING);
        let beta = to_v1beta1(&alpha);
        assert_eq!(beta_rolling_type(&beta), Some(rut::STANDARD));
        assert_eq!(
            beta.metadata.annotations,
            Some(
                [(
                    keys::CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE.to_string(),
                    "Surging".to_string()
                )]
                .into()
            )
        );
        let back = to_v1alpha1(&beta);
        assert_eq!(back, alpha);
        assert_eq!(back.metadata.annotations, None);
    }

    #[test]
    fn daemonset_literal_v1beta1_surging_is_kept() {
        let mut beta = b1::DaemonSet::new("agent", Default::default());
        beta.spec.update_strategy = Some(b1::DaemonSetUpdateStrategy {
            type_: None,
            rolling_update: Some(b1::RollingUpdateDaemonSet {
                type_: Some(SURGING.into()),
                ..Default::default()
            }),
        });
        let alpha = to_v1alpha1(&beta);
        let ru = alpha
            .spec
            .update_strategy
            .as_ref()
            .unwrap()
            .rolling_update
            .as_ref()
            .unwrap();
        assert_eq!(ru.type_.as_deref(), Some(SURGING));
        assert_eq!(to_v1beta1(&alpha), beta);
    }

    #[test]
    fn daemonset_other_rolling_update_types_are_copied() {
        for t in [rut::STANDARD, rut::IN_PLACE_IF_POSSIBLE, "Custom"] {
            let mut alpha = alpha_with_annotations(&[]);
            alpha.spec.update_strategy = rolling(t);
            let beta = to_v1beta1(&alpha);
            assert_eq!(beta_rolling_type(&beta), Some(t));
            assert_eq!(beta.metadata.annotations, None);
            assert_eq!(to_v1alpha1(&beta), alpha);
        }
    }

    #[test]
    fn daemonset_hash_is_update_revision() {
        let mut alpha = alpha_with_annotations(&[]);
        alpha.status = Some(a1::DaemonSetStatus {
            current_number_scheduled: 3,
            desired_number_scheduled: 3,
            number_ready: 2,
            updated_number_scheduled: 1,
            number_available: Some(2),
            daemon_set_hash: Some("6b7c9d".into()),
            ..Default::default()
        });
        let beta = to_v1beta1(&alpha);
        let st = beta.status.as_ref().unwrap();
        assert_eq!(st.update_revision.as_deref(), Some("6b7c9d"));
        assert_eq!((st.current_number_scheduled, st.number_ready), (3, 2));
        assert_eq!(to_v1alpha1(&beta), alpha);
        let json = serde_json::to_value(&beta).unwrap();
        assert_eq!(json["status"]["updateRevision"], "6b7c9d");
        assert!(json["status"].get("daemonSetHash").is_none());
    }

    #[test]
    fn daemonset_samples_convert_both_ways() {
        let beta: b1::DaemonSet = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1beta1_daemonset.yaml"
        )))
        .unwrap();
        let alpha = to_v1alpha1(&beta);
        assert_eq!(
            annotation(&alpha.metadata.annotations, keys::PROGRESSIVE_CREATE_POD),
            Some("true")
        );
        assert_eq!(to_v1beta1(&alpha), beta);
        let alpha: a1::DaemonSet = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_daemonset.yaml"
        )))
        .unwrap();
        let beta = to_v1beta1(&alpha);
        assert!(beta.spec.scale_strategy.is_some());
        assert_eq!(to_v1alpha1(&beta), alpha);
    }

    // ---- proptest strategies ----

    fn rolling_update_b1() -> impl Strategy<Value = b1::RollingUpdateDaemonSet> {
        (
            of(enum_string(&[
                rut::STANDARD,
                rut::IN_PLACE_IF_POSSIBLE,
                SURGING,
            ])),
            of(int_or_string()),
            of(int_or_string()),
            of(selector()),
            of(int_or_string()),
            of(any::<bool>()),
        )
            .prop_map(
                |(type_, max_unavailable, max_surge, selector, partition, paused)| {
                    b1::RollingUpdateDaemonSet {
                        type_,
                        max_unavailable,
                        max_surge,
                        selector,
                        partition,
                        paused,
                    }
                },
            )
    }

    fn conditions() -> impl Strategy<Value = Vec<DaemonSetCondition>> {
        vec(
            (
                "[A-Za-z]{1,8}",
                enum_string(&["True", "False", "Unknown"]),
                of("[A-Za-z]{1,8}"),
            )
                .prop_map(|(type_, status, reason)| DaemonSetCondition {
                    type_: Some(type_),
                    status: Some(status),
                    reason,
                    message: None,
                    last_transition_time: None,
                }),
            0..3,
        )
    }

    fn status_b1() -> impl Strategy<Value = b1::DaemonSetStatus> {
        (
            (0i32..9, 0i32..9, 0i32..9, 0i32..9, of(0i64..9), 0i32..9),
            (
                of(0i32..9),
                of(0i32..9),
                of(0i32..9),
                of(conditions()),
                of("[a-z0-9]{1,10}"),
            ),
        )
            .prop_map(
                |((cur, mis, des, rdy, og, upd), (avail, unavail, cc, cond, rev))| {
                    b1::DaemonSetStatus {
                        current_number_scheduled: cur,
                        number_misscheduled: mis,
                        desired_number_scheduled: des,
                        number_ready: rdy,
                        observed_generation: og,
                        updated_number_scheduled: upd,
                        number_available: avail,
                        number_unavailable: unavail,
                        collision_count: cc,
                        conditions: cond,
                        update_revision: rev,
                    }
                },
            )
    }

    fn daemonset_b1() -> impl Strategy<Value = b1::DaemonSet> {
        (
            metadata(vec![keys::PROGRESSIVE_CREATE_POD], vec!["true", "false"]),
            selector(),
            template(),
            of((
                of(enum_string(&[ust::ROLLING_UPDATE, ust::ON_DELETE])),
                of(rolling_update_b1()),
            )),
            (
                of(0i32..30),
                of(int_or_string()),
                of(0i32..20),
                of(lifecycle()),
            ),
            of(of(any::<bool>())),
            of(status_b1()),
        )
            .prop_map(
                |(metadata, selector, template, us, (mrs, burst, rhl, lc), ss, status)| {
                    b1::DaemonSet {
                        metadata,
                        spec: b1::DaemonSetSpec {
                            selector,
                            template,
                            update_strategy: us.map(|(type_, rolling_update)| {
                                b1::DaemonSetUpdateStrategy {
                                    type_,
                                    rolling_update,
                                }
                            }),
                            min_ready_seconds: mrs,
                            burst_replicas: burst,
                            revision_history_limit: rhl,
                            lifecycle: lc,
                            scale_strategy: ss.map(|partitioned_scaling| {
                                b1::DaemonSetScaleStrategy {
                                    partitioned_scaling,
                                }
                            }),
                        },
                        status,
                    }
                },
            )
    }

    /// v1alpha1 objects without conversion annotations: the v1beta1 strategy with the
    /// v1beta1-only field dropped and the status field renamed.
    fn daemonset_a1() -> impl Strategy<Value = a1::DaemonSet> {
        daemonset_b1().prop_map(|b| {
            let s = b.spec;
            a1::DaemonSet {
                metadata: b.metadata,
                spec: a1::DaemonSetSpec {
                    selector: s.selector,
                    template: s.template,
                    update_strategy: s.update_strategy.map(|u| a1::DaemonSetUpdateStrategy {
                        type_: u.type_,
                        rolling_update: u.rolling_update.map(|r| a1::RollingUpdateDaemonSet {
                            type_: r.type_,
                            max_unavailable: r.max_unavailable,
                            max_surge: r.max_surge,
                            selector: r.selector,
                            partition: r.partition,
                            paused: r.paused,
                        }),
                    }),
                    min_ready_seconds: s.min_ready_seconds,
                    burst_replicas: s.burst_replicas,
                    revision_history_limit: s.revision_history_limit,
                    lifecycle: s.lifecycle,
                },
                status: b.status.map(|st| a1::DaemonSetStatus {
                    current_number_scheduled: st.current_number_scheduled,
                    number_misscheduled: st.number_misscheduled,
                    desired_number_scheduled: st.desired_number_scheduled,
                    number_ready: st.number_ready,
                    observed_generation: st.observed_generation,
                    updated_number_scheduled: st.updated_number_scheduled,
                    number_available: st.number_available,
                    number_unavailable: st.number_unavailable,
                    collision_count: st.collision_count,
                    conditions: st.conditions,
                    daemon_set_hash: st.update_revision,
                }),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn daemonset_v1beta1_round_trip(beta in daemonset_b1()) {
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&beta)), beta);
        }

        #[test]
        fn daemonset_v1alpha1_round_trip(alpha in daemonset_a1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&alpha)), alpha);
        }

        #[test]
        fn daemonset_v1alpha1_from_v1beta1_round_trip(beta in daemonset_b1()) {
            let alpha = to_v1alpha1(&beta);
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&alpha)), alpha);
        }

        #[test]
        fn daemonset_v1beta1_from_v1alpha1_round_trip(alpha in daemonset_a1()) {
            let beta = to_v1beta1(&alpha);
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&beta)), beta);
        }
    }

    #[test]
    fn daemonset_int_or_string_fields_are_copied() {
        let mut alpha = alpha_with_annotations(&[]);
        alpha.spec.burst_replicas = Some(IntOrString::String("10%".into()));
        alpha.spec.min_ready_seconds = Some(0);
        let beta = to_v1beta1(&alpha);
        assert_eq!(
            beta.spec.burst_replicas,
            Some(IntOrString::String("10%".into()))
        );
        assert_eq!(beta.spec.min_ready_seconds, Some(0));
    }
}
