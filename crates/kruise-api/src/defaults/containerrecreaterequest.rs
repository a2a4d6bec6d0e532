//! Defaults of ContainerRecreateRequest (`apps.kruise.io/v1alpha1`), as set by OpenKruise
//! v1.9.0's mutating webhook when a request is created (updates are only checked, never
//! changed):
//!
//! - [`set_defaults_containerrecreaterequest`]: the object-only part: an empty `strategy` when
//!   absent, `strategy.failurePolicy` `Fail` when empty, and the label
//!   [`keys::CRR_ACTIVE`]` = "true"`.
//! - [`inject_pod_into_containerrecreaterequest`]: the part that needs the target pod (and its
//!   node): the labels [`keys::CRR_NODE_NAME`] and [`keys::CRR_POD_UID`], the virtual-kubelet
//!   label when the node has it, `strategy.terminationGracePeriodSeconds` from the pod when
//!   unset, and per container the read-only `preStop`, `ports` (only for an HTTP preStop) and
//!   `statusContext`. It fails where the webhook rejects the request.
//!
//! The webhook's validation (non-empty `podName` and `containers`, deadline of at least 3
//! seconds, non-negative grace periods, known failure policy, active and scheduled pod) is not
//! part of defaulting.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use crate::apps::v1alpha1::{
    ContainerRecreateRequest, ContainerRecreateRequestContainerContext, ProbeHandler,
    container_recreate_request_failure_policy,
};
use crate::keys;
use crate::pod::CachedPod;

/// Applies the object-only creation defaults to a ContainerRecreateRequest.
pub fn set_defaults_containerrecreaterequest(obj: &mut ContainerRecreateRequest) {
    obj.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(keys::CRR_ACTIVE.to_string(), "true".to_string());
    let strategy = obj.spec.strategy.get_or_insert_with(Default::default);
    if strategy.failure_policy.as_deref().is_none_or(str::is_empty) {
        strategy.failure_policy = Some(container_recreate_request_failure_policy::FAIL.to_string());
    }
}

/// Why the pod-dependent part of the defaults cannot be applied (the webhook rejects the
/// request in these cases).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InjectPodError {
    /// A read-only container field was set by the client.
    #[error("preStop, ports, statusContext in container are ready-only fields")]
    ReadOnlyFieldSet,
    /// The container is not in the pod spec.
    #[error("container {0} not found in Pod")]
    ContainerNotFound(String),
    /// The container has no status in the pod.
    #[error("not found {0} containerStatus in Pod Status")]
    ContainerStatusNotFound(String),
    /// The container's status has no container ID yet.
    #[error("no containerID in {0} containerStatus, maybe the container has not been initialized")]
    NoContainerId(String),
}

/// Applies the pod-dependent creation defaults: what the webhook copies from the target `pod`
/// (as the shared cache holds it: `lifecycle`, and `ports` where the `preStop` is an `httpGet`)
/// and its `node` into the request. Call after [`set_defaults_containerrecreaterequest`]. On
/// error the request may be partly filled in (the webhook discards it then).
pub fn inject_pod_into_containerrecreaterequest(
    obj: &mut ContainerRecreateRequest,
    pod: &CachedPod,
    node: Option<&Node>,
) -> Result<(), InjectPodError> {
    let pod_spec = pod.spec.as_ref();
    let labels = obj.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(
        keys::CRR_NODE_NAME.to_string(),
        pod_spec
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
    );
    labels.insert(
        keys::CRR_POD_UID.to_string(),
        pod.metadata.uid.clone().unwrap_or_default(),
    );
    let on_virtual_kubelet = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(keys::VIRTUAL_KUBELET_LABEL))
        .is_some_and(|v| v == keys::VIRTUAL_KUBELET_LABEL_VALUE);
    if on_virtual_kubelet {
        labels.insert(
            keys::VIRTUAL_KUBELET_LABEL.to_string(),
            keys::VIRTUAL_KUBELET_LABEL_VALUE.to_string(),
        );
    }

    let strategy = obj.spec.strategy.get_or_insert_with(Default::default);
    if strategy.termination_grace_period_seconds.is_none() {
        strategy.termination_grace_period_seconds =
            pod_spec.and_then(|s| s.termination_grace_period_seconds);
    }

    // OpenKruise declares a "can not recreate <name> multi times" check, but its set of names is
    // never filled: a container listed twice is accepted (and filled in twice), as here.
    for c in &mut obj.spec.containers {
        if c.pre_stop.is_some() || c.ports.is_some() || c.status_context.is_some() {
            return Err(InjectPodError::ReadOnlyFieldSet);
        }
        let container = pod_spec
            .and_then(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .chain(s.containers.iter())
                    .find(|pc| pc.name == c.name)
            })
            .ok_or_else(|| InjectPodError::ContainerNotFound(c.name.clone()))?;
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|l| l.iter().find(|cs| cs.name == c.name))
            .ok_or_else(|| InjectPodError::ContainerStatusNotFound(c.name.clone()))?;
        let container_id = status
            .container_id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| InjectPodError::NoContainerId(c.name.clone()))?;

        if let Some(pre_stop) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_stop.as_ref())
        {
            c.pre_stop = Some(ProbeHandler {
                exec: pre_stop.exec.clone(),
                http_get: pre_stop.http_get.clone(),
                tcp_socket: pre_stop.tcp_socket.clone(),
            });
        }
        if c.pre_stop.as_ref().is_some_and(|p| p.http_get.is_some()) {
            c.ports = container.ports.clone();
        }
        c.status_context = Some(ContainerRecreateRequestContainerContext {
            container_id,
            restart_count: status.restart_count,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, ContainerStatus, ExecAction, HTTPGetAction, Lifecycle,
        LifecycleHandler, Pod, PodSpec, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use serde_json::json;

    use super::*;
    use crate::apps::v1alpha1::{
        ContainerRecreateRequestContainer, ContainerRecreateRequestSpec,
        ContainerRecreateRequestStrategy,
    };

    fn request(containers: &[&str]) -> ContainerRecreateRequest {
        ContainerRecreateRequest::new(
            "r",
            ContainerRecreateRequestSpec {
                pod_name: "p".into(),
                containers: containers
                    .iter()
                    .map(|n| ContainerRecreateRequestContainer {
                        name: n.to_string(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
        )
    }

    fn pod() -> Pod {
        let status = |name: &str, id: Option<&str>| ContainerStatus {
            name: name.into(),
            container_id: id.map(String::from),
            restart_count: 2,
            ..Default::default()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                uid: Some("uid-1".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node-a".into()),
                termination_grace_period_seconds: Some(45),
                containers: vec![
                    Container {
                        name: "app".into(),
                        ports: Some(vec![ContainerPort {
                            container_port: 8080,
                            name: Some("http".into()),
                            ..Default::default()
                        }]),
                        lifecycle: Some(Lifecycle {
                            pre_stop: Some(LifecycleHandler {
                                http_get: Some(HTTPGetAction {
                                    path: Some("/stop".into()),
                                    port: IntOrString::String("http".into()),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    Container {
                        name: "side".into(),
                        ports: Some(vec![ContainerPort {
                            container_port: 9090,
                            ..Default::default()
                        }]),
                        lifecycle: Some(Lifecycle {
                            pre_stop: Some(LifecycleHandler {
                                exec: Some(ExecAction {
                                    command: Some(vec!["sleep".into(), "5".into()]),
                                }),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    Container {
                        name: "plain".into(),
                        ..Default::default()
                    },
                    Container {
                        name: "fresh".into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }),
            status: Some(PodStatus {
                container_statuses: Some(vec![
                    status("app", Some("containerd://a")),
                    status("side", Some("containerd://s")),
                    status("plain", Some("containerd://p")),
                    status("fresh", Some("")),
                ]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn containerrecreaterequest_empty_object_gets_openkruise_defaults() {
        let mut crr = request(&["app"]);
        set_defaults_containerrecreaterequest(&mut crr);
        assert_eq!(
            serde_json::to_value(&crr.metadata.labels).unwrap(),
            json!({"crr.apps.kruise.io/active": "true"})
        );
        assert_eq!(
            serde_json::to_value(&crr.spec.strategy).unwrap(),
            json!({"failurePolicy": "Fail"})
        );
    }

    #[test]
    fn containerrecreaterequest_explicit_values_kept_and_idempotent() {
        let mut crr = request(&["app"]);
        crr.metadata.labels = Some(BTreeMap::from([("x".to_string(), "y".to_string())]));
        crr.spec.strategy = Some(ContainerRecreateRequestStrategy {
            failure_policy: Some("Ignore".into()),
            ordered_recreate: Some(true),
            min_started_seconds: Some(3),
            ..Default::default()
        });
        let strategy = crr.spec.strategy.clone();
        set_defaults_containerrecreaterequest(&mut crr);
        assert_eq!(crr.spec.strategy, strategy);
        assert_eq!(crr.metadata.labels.as_ref().unwrap().len(), 2);
        let once = crr.clone();
        set_defaults_containerrecreaterequest(&mut crr);
        assert_eq!(crr, once);
    }

    #[test]
    fn containerrecreaterequest_inject_pod() {
        let mut crr = request(&["app", "side", "plain"]);
        set_defaults_containerrecreaterequest(&mut crr);
        inject_pod_into_containerrecreaterequest(&mut crr, &CachedPod::from(&pod()), None).unwrap();
        let labels = crr.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[keys::CRR_NODE_NAME], "node-a");
        assert_eq!(labels[keys::CRR_POD_UID], "uid-1");
        assert!(!labels.contains_key(keys::VIRTUAL_KUBELET_LABEL));
        let strategy = crr.spec.strategy.as_ref().unwrap();
        assert_eq!(strategy.termination_grace_period_seconds, Some(45));
        let c = &crr.spec.containers;
        assert_eq!(
            serde_json::to_value(&c[0]).unwrap(),
            json!({"name": "app",
                   "preStop": {"httpGet": {"path": "/stop", "port": "http"}},
                   "ports": [{"containerPort": 8080, "name": "http"}],
                   "statusContext": {"containerID": "containerd://a", "restartCount": 2}})
        );
        assert_eq!(
            serde_json::to_value(&c[1]).unwrap(),
            json!({"name": "side",
                   "preStop": {"exec": {"command": ["sleep", "5"]}},
                   "statusContext": {"containerID": "containerd://s", "restartCount": 2}})
        );
        assert_eq!(
            serde_json::to_value(&c[2]).unwrap(),
            json!({"name": "plain",
                   "statusContext": {"containerID": "containerd://p", "restartCount": 2}})
        );
    }

    #[test]
    fn containerrecreaterequest_inject_keeps_explicit_grace_and_marks_virtual_kubelet() {
        let mut crr = request(&["plain"]);
        crr.spec.strategy = Some(ContainerRecreateRequestStrategy {
            termination_grace_period_seconds: Some(0),
            ..Default::default()
        });
        let node = Node {
            metadata: ObjectMeta {
                labels: Some(BTreeMap::from([(
                    "type".to_string(),
                    "virtual-kubelet".to_string(),
                )])),
                ..Default::default()
            },
            ..Default::default()
        };
        inject_pod_into_containerrecreaterequest(&mut crr, &CachedPod::from(&pod()), Some(&node))
            .unwrap();
        assert_eq!(
            crr.spec
                .strategy
                .as_ref()
                .unwrap()
                .termination_grace_period_seconds,
            Some(0)
        );
        assert_eq!(
            crr.metadata.labels.as_ref().unwrap()["type"],
            "virtual-kubelet"
        );
    }

    #[test]
    fn containerrecreaterequest_inject_errors() {
        let err = |names: &[&str]| {
            let mut crr = request(names);
            inject_pod_into_containerrecreaterequest(&mut crr, &CachedPod::from(&pod()), None)
                .unwrap_err()
        };
        // Listed twice: accepted, as OpenKruise (its duplicate check never fires).
        let mut twice = request(&["app", "app"]);
        inject_pod_into_containerrecreaterequest(&mut twice, &CachedPod::from(&pod()), None)
            .unwrap();
        assert!(
            twice
                .spec
                .containers
                .iter()
                .all(|c| c.status_context.is_some())
        );
        assert_eq!(
            err(&["nope"]),
            InjectPodError::ContainerNotFound("nope".into())
        );
        assert_eq!(
            err(&["fresh"]),
            InjectPodError::NoContainerId("fresh".into())
        );
        let mut crr = request(&["app"]);
        crr.spec.containers[0].ports = Some(vec![]);
        assert_eq!(
            inject_pod_into_containerrecreaterequest(&mut crr, &CachedPod::from(&pod()), None)
                .unwrap_err(),
            InjectPodError::ReadOnlyFieldSet
        );
        let mut p = pod();
        p.status = None;
        let mut crr = request(&["app"]);
        assert_eq!(
            inject_pod_into_containerrecreaterequest(&mut crr, &CachedPod::from(&p), None)
                .unwrap_err(),
            InjectPodError::ContainerStatusNotFound("app".into())
        );
    }
}
