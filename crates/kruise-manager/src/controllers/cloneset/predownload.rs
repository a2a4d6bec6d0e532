//! Image pre-download for in-place updates, manager side (OpenKruise
//! `pkg/controller/cloneset/cloneset_predownload_image.go` and
//! `pkg/util/imagejob/utilfunction`), with the `PreDownloadImageForInPlaceUpdate` gate on.
//!
//! While a CloneSet has two revisions, once `apps.kruise.io/image-predownload-min-updated-ready-pods`
//! (default 0) updated pods are ready, it gets one ImagePullJob (`apps.kruise.io/v1beta1`) per
//! container whose image changed, named `<update revision>-<container>`, selecting the CloneSet's
//! pods still on another revision, so that kruise-daemon pulls the new images on their nodes
//! before the in-place update restarts them. The update revision is then labelled
//! `apps.kruise.io/pre-predownload-created` — or `apps.kruise.io/image-predownload-ignored` when
//! pre-download makes no sense (ReCreate updates, ≤ 3 replicas, every pod in one batch, a
//! change that cannot be done in place) — so the decision is taken once per revision. When the
//! revisions are one again, the CloneSet's ImagePullJobs are deleted. Pulling is kruise-daemon's
//! job.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::{
    CompletionPolicy, ImagePullJob, ImagePullJobPodSelector, ImagePullJobSpec,
    ImagePullJobTemplate, PullPolicy, SandboxConfig,
};
use kruise_api::keys;

use super::{plan, pods};
use kruise_engines::revision;

/// OpenKruise's `minimumReplicasToPreDownloadImage`: CloneSets with at most this many replicas
/// are not worth a pre-download.
pub const MINIMUM_REPLICAS: i32 = 3;

/// What to do about pre-download for one pair of revisions.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Already decided for this update revision (labelled created or ignored).
    Done,
    /// Not worth it: label the update revision `image-predownload-ignored` (the reason is
    /// logged).
    Ignore(&'static str),
    /// Create these jobs, then label the update revision `pre-predownload-created`.
    Create(Vec<ImagePullJob>),
}

/// Whether the pre-download step runs now for a CloneSet whose revisions differ: the number of
/// updated ready pods (0 when the status is for another update revision) has reached the
/// `image-predownload-min-updated-ready-pods` annotation (an integer or a percentage of
/// `replicas`, rounded up; an unparsable value counts as 0, as OpenKruise logs and goes on).
pub fn min_updated_ready_reached(cs: &CloneSet, update_revision: &str) -> bool {
    let replicas = cs.spec.replicas.unwrap_or(1);
    let min = cs
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::IMAGE_PRE_DOWNLOAD_MIN_UPDATED_READY_PODS))
        .map(|v| {
            let v = match v.parse::<i32>() {
                Ok(i) => IntOrString::Int(i),
                Err(_) => IntOrString::String(v.clone()),
            };
            plan::scaled_value("", &v, replicas, true).unwrap_or(0)
        })
        .unwrap_or(0);
    let status = cs.status.as_ref();
    let updated_ready = match status {
        Some(s) if s.update_revision.as_deref() == Some(update_revision) => {
            s.updated_ready_replicas
        }
        _ => 0,
    };
    min <= updated_ready
}

/// The images that differ from `old` to `new`, by container name (containers new in `new`
/// included); OpenKruise `diffImagesBetweenRevisions`.
pub fn changed_images(
    old: &ControllerRevision,
    new: &ControllerRevision,
) -> BTreeMap<String, String> {
    let (Ok(old), Ok(new)) = (
        revision::template_from_revision(old),
        revision::template_from_revision(new),
    ) else {
        return BTreeMap::new();
    };
    let old_containers = old.spec.map(|s| s.containers).unwrap_or_default();
    let mut out = BTreeMap::new();
    for c in new.spec.map(|s| s.containers).unwrap_or_default() {
        let image = c.image.clone().unwrap_or_default();
        match old_containers.iter().find(|o| o.name == c.name) {
            Some(o) if o.image.as_deref().unwrap_or_default() == image => {}
            _ => {
                out.insert(c.name, image);
            }
        }
    }
    out
}

/// The pre-download decision (pure). `can_update_in_place` is whether the change from `current`
/// to `update` can be done in place.
pub fn decide(
    cs: &CloneSet,
    current: &ControllerRevision,
    update: &ControllerRevision,
    can_update_in_place: bool,
) -> Decision {
    let labels = update.metadata.labels.as_ref();
    if labels.is_some_and(|l| {
        l.contains_key(keys::IMAGE_PRE_DOWNLOAD_CREATED)
            || l.contains_key(keys::IMAGE_PRE_DOWNLOAD_IGNORED)
    }) {
        return Decision::Done;
    }
    let strategy = cs.spec.update_strategy.as_ref();
    if strategy.and_then(|s| s.type_.as_deref()) == Some("ReCreate") {
        return Decision::Ignore("update type is ReCreate");
    }
    let replicas = cs.spec.replicas.unwrap_or(1);
    if replicas <= MINIMUM_REPLICAS {
        return Decision::Ignore("replicas less than or equal to the minimum threshold");
    }
    let partition = plan::partition_replicas(strategy.and_then(|s| s.partition.as_ref()), replicas)
        .unwrap_or(0);
    let max_unavailable = strategy
        .and_then(|s| s.max_unavailable.clone())
        .unwrap_or_else(|| IntOrString::String("20%".into()));
    let max_unavailable = plan::scaled_value("", &max_unavailable, replicas, false).unwrap_or(0);
    if partition == 0 && max_unavailable >= replicas {
        return Decision::Ignore("all Pods update in one batch");
    }
    if !can_update_in_place {
        return Decision::Ignore("in-place update was not possible");
    }
    Decision::Create(jobs(cs, current, update))
}

/// One ImagePullJob per changed container image (OpenKruise `CreateJobForWorkload`).
fn jobs(
    cs: &CloneSet,
    current: &ControllerRevision,
    update: &ControllerRevision,
) -> Vec<ImagePullJob> {
    let template = &cs.spec.template;
    let update_name = update.metadata.name.clone().unwrap_or_default();
    let update_hash = update
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(keys::CONTROLLER_REVISION_HASH))
        .cloned()
        .unwrap_or_default();
    let mut selector: LabelSelector = cs.spec.selector.clone();
    selector
        .match_expressions
        .get_or_insert_default()
        .push(LabelSelectorRequirement {
            key: keys::CONTROLLER_REVISION_HASH.to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(vec![update_name.clone(), update_hash.clone()]),
        });
    let mut labels: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(keys::CONTROLLER_REVISION_HASH.to_owned(), update_hash);
    let annotations: BTreeMap<String, String> = template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    let pull_secrets: Vec<String> = template
        .spec
        .as_ref()
        .and_then(|s| s.image_pull_secrets.as_ref())
        .map(|s| s.iter().map(|r| r.name.clone()).collect())
        .unwrap_or_default();
    let owner_annotation = |key: &str| {
        cs.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
    };
    let timeout = owner_annotation(keys::IMAGE_PRE_DOWNLOAD_TIMEOUT_SECONDS)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(300);
    let parallelism = owner_annotation(keys::IMAGE_PRE_DOWNLOAD_PARALLELISM)
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(1);
    changed_images(current, update)
        .into_iter()
        .map(|(container, image)| {
            let mut job = ImagePullJob::new(
                &format!("{update_name}-{container}"),
                ImagePullJobSpec {
                    image,
                    image_pull_job_template: ImagePullJobTemplate {
                        pull_secrets: (!pull_secrets.is_empty()).then(|| pull_secrets.clone()),
                        pod_selector: Some(ImagePullJobPodSelector {
                            label_selector: selector.clone(),
                        }),
                        parallelism: Some(IntOrString::Int(parallelism)),
                        pull_policy: Some(PullPolicy {
                            backoff_limit: Some(1),
                            timeout_seconds: Some(timeout),
                        }),
                        completion_policy: CompletionPolicy {
                            type_: Some("Always".to_owned()),
                            ttl_seconds_after_finished: Some(600),
                            ..CompletionPolicy::default()
                        },
                        sandbox_config: Some(SandboxConfig {
                            labels: Some(labels.clone()),
                            annotations: Some(annotations.clone()),
                        }),
                        ..ImagePullJobTemplate::default()
                    },
                },
            );
            job.metadata.namespace = cs.metadata.namespace.clone();
            job.metadata.labels = Some(labels.clone());
            job.metadata.owner_references = Some(vec![pods::owner_ref(cs)]);
            job
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cs(extra: serde_json::Value) -> CloneSet {
        let mut v = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                "annotations": {"apps.kruise.io/image-predownload-parallelism": "2"}},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                "updateStrategy": {"type": "InPlaceIfPossible", "partition": 1},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:new"}]}}}});
        if let (Some(base), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
            for (k, val) in extra {
                base.insert(k.clone(), val.clone());
            }
        }
        serde_json::from_value(v).unwrap()
    }

    fn rev(name: &str, image: &str, labels: serde_json::Value) -> ControllerRevision {
        let mut l = json!({"controller-revision-hash": name});
        if let (Some(base), Some(extra)) = (l.as_object_mut(), labels.as_object()) {
            for (k, v) in extra {
                base.insert(k.clone(), v.clone());
            }
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": l}, "revision": 1,
            "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]}}}}}))
        .unwrap()
    }

    #[test]
    fn creates_one_job_per_changed_image_as_openkruise() {
        let cs = cs(json!({}));
        let cur = rev("web-old", "nginx:old", json!({}));
        let upd = rev("web-new", "nginx:new", json!({}));
        let Decision::Create(jobs) = decide(&cs, &cur, &upd, true) else {
            panic!("expected jobs");
        };
        assert_eq!(jobs.len(), 1);
        let j = serde_json::to_value(&jobs[0]).unwrap();
        assert_eq!(j["apiVersion"], "apps.kruise.io/v1beta1");
        assert_eq!(j["metadata"]["name"], "web-new-main");
        assert_eq!(j["metadata"]["namespace"], "ns");
        assert_eq!(j["metadata"]["ownerReferences"][0]["kind"], "CloneSet");
        assert_eq!(j["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            j["metadata"]["labels"],
            json!({"app": "web", "controller-revision-hash": "web-new"})
        );
        assert_eq!(j["spec"]["image"], "nginx:new");
        assert_eq!(j["spec"]["parallelism"], 2);
        assert_eq!(
            j["spec"]["pullPolicy"],
            json!({"backoffLimit": 1, "timeoutSeconds": 300})
        );
        assert_eq!(
            j["spec"]["completionPolicy"],
            json!({"type": "Always", "ttlSecondsAfterFinished": 600})
        );
        assert_eq!(
            j["spec"]["podSelector"],
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "controller-revision-hash", "operator": "NotIn",
                 "values": ["web-new", "web-new"]}]})
        );
    }

    #[test]
    fn ignored_when_not_worth_it_and_decided_once() {
        let cur = rev("web-old", "nginx:old", json!({}));
        let upd = rev("web-new", "nginx:new", json!({}));
        assert_eq!(
            decide(&cs(json!({"replicas": 3})), &cur, &upd, true),
            Decision::Ignore("replicas less than or equal to the minimum threshold")
        );
        assert_eq!(
            decide(
                &cs(json!({"updateStrategy": {"type": "ReCreate"}})),
                &cur,
                &upd,
                true
            ),
            Decision::Ignore("update type is ReCreate")
        );
        assert_eq!(
            decide(
                &cs(json!({"updateStrategy": {"maxUnavailable": "100%"}})),
                &cur,
                &upd,
                true
            ),
            Decision::Ignore("all Pods update in one batch")
        );
        assert_eq!(
            decide(&cs(json!({})), &cur, &upd, false),
            Decision::Ignore("in-place update was not possible")
        );
        let done = rev(
            "web-new",
            "nginx:new",
            json!({"apps.kruise.io/pre-predownload-created": "true"}),
        );
        assert_eq!(decide(&cs(json!({})), &cur, &done, true), Decision::Done);
    }

    #[test]
    fn waits_for_min_updated_ready_pods() {
        let mut c = cs(json!({}));
        assert!(min_updated_ready_reached(&c, "web-new"));
        c.metadata.annotations.get_or_insert_default().insert(
            keys::IMAGE_PRE_DOWNLOAD_MIN_UPDATED_READY_PODS.into(),
            "40%".into(),
        );
        assert!(!min_updated_ready_reached(&c, "web-new"));
        c.status = Some(
            serde_json::from_value(json!({"replicas": 5, "readyReplicas": 5,
            "availableReplicas": 5, "updatedReplicas": 2, "updateRevision": "web-new",
            "updatedReadyReplicas": 2}))
            .unwrap(),
        );
        assert!(min_updated_ready_reached(&c, "web-new"));
        assert!(
            !min_updated_ready_reached(&c, "web-newer"),
            "status of another revision"
        );
    }
}
