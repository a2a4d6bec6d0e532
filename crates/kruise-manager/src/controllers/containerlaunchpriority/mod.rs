//! Container launch priority controller (OpenKruise
//! `pkg/controller/containerlaunchpriority/container_launch_priority_controller.go`).
//!
//! For a pod that uses launch priority (annotation `apps.kruise.io/container-launch-priority:
//! Ordered`, or containers with the `KRUISE_CONTAINER_PRIORITY` env), the pod webhook gives each
//! container the env `KRUISE_CONTAINER_BARRIER` from key `p_<priority>` of ConfigMap
//! `<pod>-barrier`. The kubelet cannot start a container whose env names a missing ConfigMap
//! key, so containers start only as this controller writes the keys:
//! 1. it creates the barrier ConfigMap (owned by the pod, so it goes with it; no data);
//! 2. each time the pod changes it takes the priorities of the containers that are not Ready
//!    (sorted ascending) and writes the key of the highest one (`{"data":{"p_<n>":"true"}}`,
//!    a strategic-merge patch) — the next container starts once all higher ones are Ready;
//! 3. when the lowest not-Ready priority's key is written (or none is left) it marks the pod
//!    `apps.kruise.io/container-launch-priority-completed: "true"` and never looks at it again.
//!
//! Pods whose containers are all Ready (`ContainersReady` True) and completed pods are skipped,
//! as in OpenKruise's predicates.
//!
//! Shape: watches = the shared pod informer, filtered by [`wants_reconcile`]; [`reconcile`] = a
//! read of the barrier ConfigMap (only pods still launching reach it) and at most one write each
//! to the ConfigMap and the pod; plan = [`next_priorities`] and [`plan`]; no status.
//!
//! Differences from OpenKruise, all about malformed input it panics on: a barrier env without a
//! `configMapKeyRef`, or with a key shorter than two characters, counts as no priority.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kruise_api::keys;
use kruise_api::pod::{CachedPod, ContainerView};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::json;

use kruise_runtime::runner::{self as runtime, Context};

/// Name of the controller in metrics, logs and `--controllers`.
pub const CONTROLLER_NAME: &str = "containerlaunchpriority";

/// Concurrent reconciles (OpenKruise: 4).
pub const WORKERS: u16 = 4;

/// The launch priority a container waits for: the integer after `p_` in its
/// `KRUISE_CONTAINER_BARRIER` env's ConfigMap key (OpenKruise `GetContainerPriority`), parsed as
/// Go's `strconv.Atoi`: a syntax error gives 0, a value out of the int64 range the nearest
/// bound. `None` if the container has no barrier env.
pub fn container_priority(c: &impl ContainerView) -> Option<i64> {
    let env = c
        .env()
        .iter()
        .find(|e| e.name == keys::CONTAINER_LAUNCH_BARRIER_ENV)?;
    let key = &env.value_from.as_ref()?.config_map_key_ref.as_ref()?.key;
    let digits = key.get(2..)?;
    Some(go_atoi(digits))
}

/// Go's `strconv.Atoi` on 64-bit platforms, errors mapped to the value Go returns with them.
fn go_atoi(s: &str) -> i64 {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    match s.parse::<i64>() {
        Ok(v) => v,
        Err(_) if neg => i64::MIN,
        Err(_) => i64::MAX,
    }
}

/// The barrier key of `priority` (`p_<priority>`, OpenKruise `GetKey`).
pub fn barrier_key(priority: i64) -> String {
    format!("p_{priority}")
}

/// The name of a pod's barrier ConfigMap.
pub fn barrier_name(pod: &str) -> String {
    format!("{pod}-barrier")
}

/// The priorities of the pod's containers that are not Ready and wait on a barrier, ascending
/// (OpenKruise `findNextPriorities`).
pub fn next_priorities(pod: &CachedPod) -> Vec<i64> {
    let ready: Vec<&str> = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| {
            cs.iter()
                .filter(|c| c.ready)
                .map(|c| c.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut priorities: Vec<i64> = pod
        .spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .filter(|c| !ready.contains(&c.name.as_str()))
                .filter_map(container_priority)
                .collect()
        })
        .unwrap_or_default();
    priorities.sort_unstable();
    priorities
}

/// Whether a pod change is worth a reconcile: not marked completed, its containers not all Ready,
/// and some not-Ready container waits on a barrier (OpenKruise's `shouldEnqueue`, without its
/// cache read of the ConfigMap — [`plan`] makes the same decision from the ConfigMap).
pub fn wants_reconcile(pod: &CachedPod) -> bool {
    if pod
        .annotations()
        .get(keys::CONTAINER_LAUNCH_PRIORITY_COMPLETED)
        .is_some_and(|v| v == "true")
    {
        return false;
    }
    let containers_ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "ContainersReady"))
        .is_some_and(|c| c.status == "True");
    !containers_ready && !next_priorities(pod).is_empty()
}

/// What one reconcile of a pod with an existing barrier writes (OpenKruise `handle`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The key to add to the barrier ConfigMap, if any.
    pub release: Option<String>,
    /// Whether to mark the pod `container-launch-priority-completed`.
    pub complete: bool,
}

/// Decides the writes for `pod` given the keys its barrier already has.
pub fn plan(pod: &CachedPod, barrier: &ConfigMap) -> Plan {
    let has = |p: i64| {
        barrier
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key(&barrier_key(p)))
    };
    let next = next_priorities(pod);
    let (Some(&lowest), Some(&highest)) = (next.first(), next.last()) else {
        return Plan {
            release: None,
            complete: true,
        };
    };
    if has(lowest) {
        return Plan {
            release: None,
            complete: true,
        };
    }
    Plan {
        release: (!has(highest)).then(|| barrier_key(highest)),
        complete: highest == lowest,
    }
}

/// Sets the controller up (its pod informer starts filling the shared cache now) and returns the
/// future that runs it; no reconcile before the pod cache has synced.
pub fn setup(
    ctx: &Arc<Context>,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    crate::scaffold::pod_controller(ctx, CONTROLLER_NAME, WORKERS, wants_reconcile, reconcile)
}

/// Creates the pod's barrier ConfigMap if missing, releases the next priority and marks the pod
/// completed when nothing is left to release.
///
/// # Errors
/// API errors of the reads and writes (retried with backoff); a pod or ConfigMap that is gone,
/// or a ConfigMap another writer created first, is not an error.
pub async fn reconcile(pod: Arc<CachedPod>, ctx: Arc<Context>) -> Result<Action, kube::Error> {
    if !wants_reconcile(&pod) || pod.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let barrier = match cms.get_opt(&barrier_name(&name)).await? {
        Some(cm) => cm,
        None => {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": {
                    "name": barrier_name(&name),
                    "namespace": ns,
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Pod",
                        "name": name, "uid": pod.uid().unwrap_or_default(),
                    }],
                },
            }))
            .map_err(kube::Error::SerdeError)?;
            match cms.create(&PostParams::default(), &cm).await {
                Ok(created) => created,
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    return Ok(Action::requeue(std::time::Duration::ZERO));
                }
                Err(e) => return Err(e),
            }
        }
    };
    let plan = plan(&pod, &barrier);
    if let Some(key) = &plan.release {
        let patch = json!({"data": {key: "true"}});
        match cms
            .patch(
                &barrier_name(&name),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {
                return Ok(Action::requeue(std::time::Duration::ZERO));
            }
            Err(e) => return Err(e),
        }
    }
    if plan.complete {
        let pods: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &ns);
        let patch = json!({"metadata": {"annotations": {
            keys::CONTAINER_LAUNCH_PRIORITY_COMPLETED: "true"}}});
        match pods
            .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Container;
    use serde_json::Value;

    fn barrier_env(key: &str) -> Value {
        json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {
            "name": "p-barrier", "key": key}}})
    }

    /// A pod whose containers (name, barrier key, ready) are given.
    fn pod(containers: &[(&str, &str, bool)]) -> CachedPod {
        let specs: Vec<Value> = containers
            .iter()
            .map(|(n, k, _)| json!({"name": n, "env": [barrier_env(k)]}))
            .collect();
        let statuses: Vec<Value> = containers
            .iter()
            .map(|(n, _, r)| {
                json!({"name": n, "ready": r, "restartCount": 0, "image": "x",
                "imageID": ""})
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "p"},
            "spec": {"containers": specs}, "status": {"containerStatuses": statuses}}))
        .unwrap()
    }

    fn cm(keys: &[&str]) -> ConfigMap {
        let data: serde_json::Map<String, Value> = keys
            .iter()
            .map(|k| (k.to_string(), json!("true")))
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "p-barrier"}, "data": data})).unwrap()
    }

    #[test]
    fn priorities_parse_as_go_atoi() {
        let c = |k: &str| -> Container {
            serde_json::from_value(json!({"name": "c", "env": [barrier_env(k)]})).unwrap()
        };
        assert_eq!(container_priority(&c("p_5")), Some(5));
        assert_eq!(container_priority(&c("p_-3")), Some(-3));
        assert_eq!(container_priority(&c("p_+7")), Some(7));
        assert_eq!(container_priority(&c("p_x")), Some(0));
        assert_eq!(container_priority(&c("p_")), Some(0));
        assert_eq!(
            container_priority(&c("p_99999999999999999999")),
            Some(i64::MAX)
        );
        assert_eq!(
            container_priority(&c("p_-99999999999999999999")),
            Some(i64::MIN)
        );
        assert_eq!(container_priority(&c("p")), None, "Go panics on this key");
        let plain: Container = serde_json::from_value(
            json!({"name": "c", "env": [{"name": "KRUISE_CONTAINER_BARRIER", "value": "1"}]}),
        )
        .unwrap();
        assert_eq!(container_priority(&plain), None, "Go panics on this env");
        let none: Container = serde_json::from_value(json!({"name": "c"})).unwrap();
        assert_eq!(container_priority(&none), None);
    }

    #[test]
    fn next_priorities_skip_ready_containers_and_sort() {
        let p = pod(&[
            ("a", "p_1", false),
            ("b", "p_10", true),
            ("c", "p_-1", false),
        ]);
        assert_eq!(next_priorities(&p), vec![-1, 1]);
    }

    #[test]
    fn releases_the_highest_waiting_priority_then_completes_with_the_last() {
        // Three containers 2 > 1 > 0, none ready, empty barrier: release p_2.
        let p = pod(&[
            ("a", "p_0", false),
            ("b", "p_1", false),
            ("c", "p_2", false),
        ]);
        assert_eq!(
            plan(&p, &cm(&[])),
            Plan {
                release: Some("p_2".into()),
                complete: false
            }
        );
        // p_2 written, container c not yet ready: nothing to do.
        assert_eq!(
            plan(&p, &cm(&["p_2"])),
            Plan {
                release: None,
                complete: false
            }
        );
        // c ready: release p_1.
        let p = pod(&[("a", "p_0", false), ("b", "p_1", false), ("c", "p_2", true)]);
        assert_eq!(
            plan(&p, &cm(&["p_2"])),
            Plan {
                release: Some("p_1".into()),
                complete: false
            }
        );
        // b ready: the last priority is released and the pod completed in the same pass.
        let p = pod(&[("a", "p_0", false), ("b", "p_1", true), ("c", "p_2", true)]);
        assert_eq!(
            plan(&p, &cm(&["p_2", "p_1"])),
            Plan {
                release: Some("p_0".into()),
                complete: true
            }
        );
        // The lowest already released (a container went unready again): completed.
        let p = pod(&[("a", "p_0", false), ("b", "p_1", false), ("c", "p_2", true)]);
        assert_eq!(
            plan(&p, &cm(&["p_2", "p_1", "p_0"])),
            Plan {
                release: None,
                complete: true
            }
        );
        // Everything ready: completed.
        let p = pod(&[("a", "p_0", true)]);
        assert_eq!(
            plan(&p, &cm(&[])),
            Plan {
                release: None,
                complete: true
            }
        );
    }

    #[test]
    fn completed_or_ready_pods_are_not_reconciled() {
        let p = pod(&[("a", "p_0", false)]);
        assert!(wants_reconcile(&p));
        let mut done = p.clone();
        done.metadata.annotations = Some(
            [(
                keys::CONTAINER_LAUNCH_PRIORITY_COMPLETED.to_string(),
                "true".to_string(),
            )]
            .into(),
        );
        assert!(!wants_reconcile(&done));
        let mut ready = p.clone();
        ready.status.as_mut().unwrap().conditions = Some(vec![
            serde_json::from_value(json!({"type": "ContainersReady", "status": "True"})).unwrap(),
        ]);
        assert!(!wants_reconcile(&ready));
        let plain: CachedPod =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a"}]}}))
            .unwrap();
        assert!(!wants_reconcile(&plain));
    }
}
