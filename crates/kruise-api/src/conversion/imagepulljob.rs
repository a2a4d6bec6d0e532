//! ImagePullJob conversion between `v1alpha1` and `v1beta1`.
//!
//! The two versions have the same fields, so every field maps to the field of the same name:
//! metadata (labels, annotations, finalizers, ...) is copied as is, the spec (`image` and the
//! inlined template: `pullSecrets`, `selector` with `names` and its label selector,
//! `podSelector`, `parallelism`, `pullPolicy`, `completionPolicy`, `sandboxConfig`,
//! `imagePullPolicy`) and the status (times, counters, `message`, `failedNodes`) are copied
//! unchanged; only `apiVersion` changes. No annotation is involved, and absent optional fields
//! stay absent (OpenKruise's Go conversion does the same, up to nil-versus-empty maps).
//!
//! The template mapping is public because ImageListPullJob shares it.

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;
use crate::conversion::broadcastjob::{
    completion_policy_to_v1alpha1, completion_policy_to_v1beta1,
};

/// Converts a v1alpha1 ImagePullJob to v1beta1.
pub fn to_v1beta1(obj: &a1::ImagePullJob) -> b1::ImagePullJob {
    b1::ImagePullJob {
        metadata: obj.metadata.clone(),
        spec: b1::ImagePullJobSpec {
            image: obj.spec.image.clone(),
            image_pull_job_template: template_to_v1beta1(&obj.spec.image_pull_job_template),
        },
        status: obj.status.as_ref().map(|s| b1::ImagePullJobStatus {
            start_time: s.start_time.clone(),
            completion_time: s.completion_time.clone(),
            desired: s.desired,
            active: s.active,
            succeeded: s.succeeded,
            failed: s.failed,
            message: s.message.clone(),
            failed_nodes: s.failed_nodes.clone(),
        }),
    }
}

/// Converts a v1beta1 ImagePullJob to v1alpha1.
pub fn to_v1alpha1(obj: &b1::ImagePullJob) -> a1::ImagePullJob {
    a1::ImagePullJob {
        metadata: obj.metadata.clone(),
        spec: a1::ImagePullJobSpec {
            image: obj.spec.image.clone(),
            image_pull_job_template: template_to_v1alpha1(&obj.spec.image_pull_job_template),
        },
        status: obj.status.as_ref().map(|s| a1::ImagePullJobStatus {
            start_time: s.start_time.clone(),
            completion_time: s.completion_time.clone(),
            desired: s.desired,
            active: s.active,
            succeeded: s.succeeded,
            failed: s.failed,
            message: s.message.clone(),
            failed_nodes: s.failed_nodes.clone(),
        }),
    }
}

/// Maps the shared image-job template from v1alpha1 to v1beta1 (field by field).
pub fn template_to_v1beta1(t: &a1::ImagePullJobTemplate) -> b1::ImagePullJobTemplate {
    b1::ImagePullJobTemplate {
        pull_secrets: t.pull_secrets.clone(),
        selector: t.selector.as_ref().map(|s| b1::ImagePullJobNodeSelector {
            names: s.names.clone(),
            label_selector: s.label_selector.clone(),
        }),
        pod_selector: t
            .pod_selector
            .as_ref()
            .map(|s| b1::ImagePullJobPodSelector {
                label_selector: s.label_selector.clone(),
            }),
        parallelism: t.parallelism.clone(),
        pull_policy: t.pull_policy.as_ref().map(|p| b1::PullPolicy {
            timeout_seconds: p.timeout_seconds,
            backoff_limit: p.backoff_limit,
        }),
        completion_policy: completion_policy_to_v1beta1(&t.completion_policy),
        sandbox_config: t.sandbox_config.as_ref().map(sandbox_config_to_v1beta1),
        image_pull_policy: t.image_pull_policy.clone(),
    }
}

/// Maps the shared image-job template from v1beta1 to v1alpha1 (field by field).
pub fn template_to_v1alpha1(t: &b1::ImagePullJobTemplate) -> a1::ImagePullJobTemplate {
    a1::ImagePullJobTemplate {
        pull_secrets: t.pull_secrets.clone(),
        selector: t.selector.as_ref().map(|s| a1::ImagePullJobNodeSelector {
            names: s.names.clone(),
            label_selector: s.label_selector.clone(),
        }),
        pod_selector: t
            .pod_selector
            .as_ref()
            .map(|s| a1::ImagePullJobPodSelector {
                label_selector: s.label_selector.clone(),
            }),
        parallelism: t.parallelism.clone(),
        pull_policy: t.pull_policy.as_ref().map(|p| a1::PullPolicy {
            timeout_seconds: p.timeout_seconds,
            backoff_limit: p.backoff_limit,
        }),
        completion_policy: completion_policy_to_v1alpha1(&t.completion_policy),
        sandbox_config: t.sandbox_config.as_ref().map(sandbox_config_to_v1alpha1),
        image_pull_policy: t.image_pull_policy.clone(),
    }
}

/// Maps a CRI sandbox config from v1alpha1 to v1beta1 (shared with NodeImage).
pub fn sandbox_config_to_v1beta1(c: &a1::SandboxConfig) -> b1::SandboxConfig {
    b1::SandboxConfig {
        labels: c.labels.clone(),
        annotations: c.annotations.clone(),
    }
}

/// Maps a CRI sandbox config from v1beta1 to v1alpha1 (shared with NodeImage).
pub fn sandbox_config_to_v1alpha1(c: &b1::SandboxConfig) -> a1::SandboxConfig {
    a1::SandboxConfig {
        labels: c.labels.clone(),
        annotations: c.annotations.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector, LabelSelectorRequirement, ObjectMeta, Time,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use k8s_openapi::jiff::Timestamp;
    use proptest::prelude::*;

    use super::*;

    pub(crate) fn arb_time() -> impl Strategy<Value = Time> {
        (0i64..4_000_000_000).prop_map(|s| Time(Timestamp::from_second(s).unwrap()))
    }

    fn arb_string_map() -> impl Strategy<Value = BTreeMap<String, String>> {
        proptest::collection::btree_map("[a-z]{1,6}", "[a-z0-9]{0,6}", 0..3)
    }

    pub(crate) fn arb_metadata() -> impl Strategy<Value = ObjectMeta> {
        (
            "[a-z]{1,10}",
            proptest::option::of("[a-z]{1,6}"),
            proptest::option::of(arb_string_map()),
            proptest::option::of(arb_string_map()),
            proptest::option::of(proptest::collection::vec("[a-z./-]{1,12}", 0..2)),
        )
            .prop_map(
                |(name, namespace, labels, annotations, finalizers)| ObjectMeta {
                    name: Some(name),
                    namespace,
                    labels,
                    annotations,
                    finalizers,
                    ..Default::default()
                },
            )
    }

    fn arb_label_selector() -> impl Strategy<Value = LabelSelector> {
        (
            proptest::option::of(arb_string_map()),
            proptest::option::of(proptest::collection::vec(
                (
                    "[a-z]{1,6}",
                    prop_oneof![
                        Just("In"),
                        Just("NotIn"),
                        Just("Exists"),
                        Just("DoesNotExist")
                    ],
                    proptest::option::of(proptest::collection::vec("[a-z]{1,4}", 0..3)),
                ),
                0..3,
            )),
        )
            .prop_map(|(match_labels, exprs)| LabelSelector {
                match_labels,
                match_expressions: exprs.map(|es| {
                    es.into_iter()
                        .map(|(key, op, values)| LabelSelectorRequirement {
                            key,
                            operator: op.to_string(),
                            values,
                        })
                        .collect()
                }),
            })
    }

    fn arb_opt_string() -> impl Strategy<Value = Option<String>> {
        proptest::option::of("[A-Za-z]{0,8}")
    }

    prop_compose! {
        /// Every field of the v1alpha1 image-job template.
        pub(crate) fn arb_template_v1alpha1()(
            pull_secrets in proptest::option::of(proptest::collection::vec("[a-z-]{1,10}", 0..3)),
            selector in proptest::option::of((
                proptest::option::of(proptest::collection::vec("[a-z0-9-]{1,10}", 0..3)),
                arb_label_selector(),
            )),
            pod_selector in proptest::option::of(arb_label_selector()),
            parallelism in proptest::option::of(prop_oneof![
                any::<i32>().prop_map(IntOrString::Int),
                "[0-9]{1,2}%?".prop_map(IntOrString::String),
            ]),
            pull_policy in proptest::option::of((
                proptest::option::of(any::<i32>()),
                proptest::option::of(any::<i32>()),
            )),
            completion in (
                arb_opt_string(),
                proptest::option::of(any::<i64>()),
                proptest::option::of(any::<i32>()),
            ),
            sandbox in proptest::option::of((
                proptest::option::of(arb_string_map()),
                proptest::option::of(arb_string_map()),
            )),
            image_pull_policy in arb_opt_string(),
        ) -> a1::ImagePullJobTemplate {
            a1::ImagePullJobTemplate {
                pull_secrets,
                selector: selector.map(|(names, label_selector)| a1::ImagePullJobNodeSelector {
                    names,
                    label_selector,
                }),
                pod_selector: pod_selector
                    .map(|label_selector| a1::ImagePullJobPodSelector { label_selector }),
                parallelism,
                pull_policy: pull_policy.map(|(timeout_seconds, backoff_limit)| a1::PullPolicy {
                    timeout_seconds,
                    backoff_limit,
                }),
                completion_policy: a1::CompletionPolicy {
                    type_: completion.0,
                    active_deadline_seconds: completion.1,
                    ttl_seconds_after_finished: completion.2,
                },
                sandbox_config: sandbox.map(|(labels, annotations)| a1::SandboxConfig {
                    labels,
                    annotations,
                }),
                image_pull_policy,
            }
        }
    }

    prop_compose! {
        fn arb_status_v1alpha1()(
            start_time in proptest::option::of(arb_time()),
            completion_time in proptest::option::of(arb_time()),
            counts in (any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()),
            message in arb_opt_string(),
            failed_nodes in proptest::option::of(proptest::collection::vec("[a-z0-9-]{1,8}", 0..3)),
        ) -> a1::ImagePullJobStatus {
            a1::ImagePullJobStatus {
                start_time,
                completion_time,
                desired: counts.0,
                active: counts.1,
                succeeded: counts.2,
                failed: counts.3,
                message,
                failed_nodes,
            }
        }
    }

    prop_compose! {
        fn arb_v1alpha1()(
            metadata in arb_metadata(),
            image in "[a-z/]{1,12}(:[a-z0-9.]{1,5})?",
            template in arb_template_v1alpha1(),
            status in proptest::option::of(arb_status_v1alpha1()),
        ) -> a1::ImagePullJob {
            a1::ImagePullJob {
                metadata,
                spec: a1::ImagePullJobSpec { image, image_pull_job_template: template },
                status,
            }
        }
    }

    fn arb_v1beta1() -> impl Strategy<Value = b1::ImagePullJob> {
        // Same fields in both versions: build the v1beta1 object from the JSON of a generated
        // v1alpha1 one (independent of the mapping under test).
        arb_v1alpha1().prop_map(|a| {
            let mut json = serde_json::to_value(&a).unwrap();
            json["apiVersion"] = "apps.kruise.io/v1beta1".into();
            serde_json::from_value(json).unwrap()
        })
    }

    proptest! {
        #[test]
        fn round_trip_from_v1alpha1(obj in arb_v1alpha1()) {
            prop_assert_eq!(to_v1alpha1(&to_v1beta1(&obj)), obj);
        }

        #[test]
        fn round_trip_from_v1beta1(obj in arb_v1beta1()) {
            prop_assert_eq!(to_v1beta1(&to_v1alpha1(&obj)), obj);
        }

        #[test]
        fn json_is_identical_apart_from_api_version(obj in arb_v1alpha1()) {
            let mut a = serde_json::to_value(&obj).unwrap();
            let b = serde_json::to_value(to_v1beta1(&obj)).unwrap();
            a["apiVersion"] = "apps.kruise.io/v1beta1".into();
            prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn every_field_is_carried_over() {
        let json = serde_json::json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "ImagePullJob",
            "metadata": {"name": "j", "namespace": "ns", "annotations": {"a": "b"},
                         "finalizers": ["apps.kruise.io/deletion-protection"]},
            "spec": {
                "image": "nginx:1.25",
                "pullSecrets": ["s"],
                "selector": {"names": ["n1"], "matchLabels": {"k": "v"}},
                "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                "parallelism": 3,
                "pullPolicy": {"timeoutSeconds": 60, "backoffLimit": 1},
                "completionPolicy": {"type": "Never", "activeDeadlineSeconds": 100, "ttlSecondsAfterFinished": 5},
                "sandboxConfig": {"labels": {"l": "1"}, "annotations": {"a": "2"}},
                "imagePullPolicy": "Always"
            },
            "status": {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:10:00Z",
                       "desired": 3, "active": 1, "succeeded": 1, "failed": 1,
                       "message": "m", "failedNodes": ["n3"]}
        });
        let a: a1::ImagePullJob = serde_json::from_value(json.clone()).unwrap();
        let b = to_v1beta1(&a);
        let mut expected = json;
        expected["apiVersion"] = "apps.kruise.io/v1beta1".into();
        assert_eq!(serde_json::to_value(&b).unwrap(), expected);
        assert_eq!(to_v1alpha1(&b), a);
    }
}
