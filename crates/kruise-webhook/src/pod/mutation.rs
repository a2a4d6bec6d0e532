//! The pure parts of OpenKruise v1.9.0's pod mutating webhook that kruise-rs implements so far:
//! the `KruisePodReady` readiness gate and container launch priority
//! (`pkg/webhook/pod/mutating/pod_readiness.go`, `container_launch_priority_initialization.go`).

use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, EnvVar, EnvVarSource, Pod, PodReadinessGate,
};
use kruise_api::keys;
use rand::Rng;

use kruise_runtime::features::{Feature, FeatureGates};

/// The API group whose controllers count as Kruise workloads.
const KRUISE_APPS_GROUP: &str = "apps.kruise.io";
/// Whether the pod's controller owner is in `apps.kruise.io` (any version).
pub fn is_owned_by_kruise(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .is_some_and(|o| {
            o.api_version.split('/').next() == Some(KRUISE_APPS_GROUP)
                && o.api_version.contains('/')
        })
}

/// On pod creation, adds the `KruisePodReady` readiness gate (once) to pods controlled by a
/// Kruise workload, or to every pod with the `KruisePodReadinessGate` gate. Returns whether the
/// pod was changed.
pub fn inject_readiness_gate(gates: &FeatureGates, pod: &mut Pod) -> bool {
    if !is_owned_by_kruise(pod) && !gates.enabled(Feature::KruisePodReadinessGate) {
        return false;
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    let list = spec.readiness_gates.get_or_insert_with(Vec::new);
    if !list
        .iter()
        .any(|g| g.condition_type == keys::KRUISE_POD_READY)
    {
        list.push(PodReadinessGate {
            condition_type: keys::KRUISE_POD_READY.to_owned(),
        });
    }
    // OpenKruise reports the pod as changed even when the gate was already there.
    true
}

/// Errors of the container launch priority step.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LaunchPriorityError {
    /// A `KRUISE_CONTAINER_PRIORITY` env value is not an integer.
    #[error("strconv.Atoi: parsing {value:?}: invalid syntax")]
    NotAnInteger {
        /// The env value.
        value: String,
    },
}

/// The per-container launch priorities, or `None` when no priority is needed: with the
/// `apps.kruise.io/container-launch-priority: Ordered` annotation, `0, -1, -2, …` in container
/// order; otherwise the `KRUISE_CONTAINER_PRIORITY` env values (0 when absent), unless they are
/// all equal. A single-container pod never needs one.
pub fn launch_priorities(pod: &Pod) -> Result<Option<Vec<i64>>, LaunchPriorityError> {
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    if containers.len() <= 1 {
        return Ok(None);
    }
    let ordered = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::CONTAINER_LAUNCH_PRIORITY))
        .is_some_and(|v| v == keys::CONTAINER_LAUNCH_ORDERED);
    if ordered {
        return Ok(Some((0..containers.len() as i64).map(|i| -i).collect()));
    }
    let mut any_nonzero = false;
    let mut priorities = Vec::with_capacity(containers.len());
    for c in containers {
        let mut p = 0;
        for e in c.env.iter().flatten() {
            if e.name == keys::CONTAINER_LAUNCH_PRIORITY_ENV {
                let value = e.value.clone().unwrap_or_default();
                p = value
                    .trim_start_matches('+')
                    .parse::<i64>()
                    .ok()
                    .filter(|_| !value.is_empty())
                    .ok_or(LaunchPriorityError::NotAnInteger { value })?;
                any_nonzero |= p != 0;
            }
        }
        priorities.push(p);
    }
    let all_equal = priorities.iter().all(|p| *p == priorities[0]);
    Ok((any_nonzero && !all_equal).then_some(priorities))
}

/// The env var that makes a container wait on key `p_<priority>` of ConfigMap
/// `<pod name>-barrier`.
pub fn barrier_env(priority: i64, pod_name: &str) -> EnvVar {
    EnvVar {
        name: keys::CONTAINER_LAUNCH_BARRIER_ENV.to_owned(),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: format!("{pod_name}-barrier"),
                key: format!("p_{priority}"),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Characters of apiserver-generated name suffixes (no vowels, no confusable digits).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A random 5-character suffix like the apiserver's name generator.
pub fn random_name_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect()
}

/// Appends the barrier env to each container according to `priorities`. A pod with only
/// `generateName` first gets its name (generateName, cut to 58 characters, plus `suffix`) so the
/// ConfigMap name is known.
pub fn apply_launch_priorities(pod: &mut Pod, priorities: &[i64], suffix: &str) {
    if pod.metadata.name.as_deref().unwrap_or("").is_empty()
        && let Some(base) = pod
            .metadata
            .generate_name
            .as_deref()
            .filter(|g| !g.is_empty())
    {
        let base: String = base.chars().take(58).collect();
        pod.metadata.name = Some(format!("{base}{suffix}"));
    }
    let name = pod.metadata.name.clone().unwrap_or_default();
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    for (c, p) in spec.containers.iter_mut().zip(priorities) {
        c.env
            .get_or_insert_with(Vec::new)
            .push(barrier_env(*p, &name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn owned_by(api_version: &str) -> Pod {
        pod(json!({"metadata": {"name": "p", "ownerReferences": [
            {"apiVersion": api_version, "kind": "CloneSet", "name": "cs", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "a", "image": "x"}]}}))
    }

    #[test]
    fn pod_readiness_gate_for_kruise_owned_pods() {
        let gates = FeatureGates::default();
        let mut p = owned_by("apps.kruise.io/v1alpha1");
        assert!(inject_readiness_gate(&gates, &mut p));
        assert!(inject_readiness_gate(&gates, &mut p));
        let rg = p.spec.unwrap().readiness_gates.unwrap();
        assert_eq!(rg.len(), 1);
        assert_eq!(rg[0].condition_type, "KruisePodReady");
        let mut other = owned_by("apps/v1");
        assert!(!inject_readiness_gate(&gates, &mut other));
        assert!(other.spec.unwrap().readiness_gates.is_none());
    }

    #[test]
    fn pod_readiness_gate_for_all_pods_with_gate() {
        let gates = FeatureGates::default().with(Feature::KruisePodReadinessGate, true);
        let mut p = owned_by("apps/v1");
        assert!(inject_readiness_gate(&gates, &mut p));
        assert_eq!(p.spec.unwrap().readiness_gates.unwrap().len(), 1);
    }

    fn two_containers(annotations: Value, env_a: Value, env_b: Value) -> Pod {
        pod(
            json!({"metadata": {"name": "p", "annotations": annotations},
            "spec": {"containers": [
                {"name": "a", "image": "x", "env": env_a},
                {"name": "b", "image": "x", "env": env_b}]}}),
        )
    }

    #[test]
    fn pod_launch_priority_ordered_annotation() {
        let p = two_containers(
            json!({"apps.kruise.io/container-launch-priority": "Ordered"}),
            json!([]),
            json!([]),
        );
        assert_eq!(launch_priorities(&p).unwrap(), Some(vec![0, -1]));
    }

    #[test]
    fn pod_launch_priority_from_env() {
        let env = |v: &str| json!([{"name": "KRUISE_CONTAINER_PRIORITY", "value": v}]);
        let p = two_containers(json!({}), env("10"), json!([]));
        assert_eq!(launch_priorities(&p).unwrap(), Some(vec![10, 0]));
        let same = two_containers(json!({}), env("5"), env("5"));
        assert_eq!(launch_priorities(&same).unwrap(), None);
        let none = two_containers(json!({}), json!([]), json!([]));
        assert_eq!(launch_priorities(&none).unwrap(), None);
        let bad = two_containers(json!({}), env("high"), json!([]));
        assert_eq!(
            launch_priorities(&bad).unwrap_err().to_string(),
            "strconv.Atoi: parsing \"high\": invalid syntax"
        );
        let single = pod(
            json!({"metadata": {"annotations": {"apps.kruise.io/container-launch-priority": "Ordered"}},
            "spec": {"containers": [{"name": "a", "image": "x"}]}}),
        );
        assert_eq!(launch_priorities(&single).unwrap(), None);
    }

    #[test]
    fn pod_launch_priority_env_and_generated_name() {
        let mut p = pod(json!({"metadata": {"generateName": "web-"},
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}}));
        apply_launch_priorities(&mut p, &[0, -1], "abcde");
        assert_eq!(p.metadata.name.as_deref(), Some("web-abcde"));
        let v = serde_json::to_value(&p.spec.unwrap().containers[1].env).unwrap();
        assert_eq!(
            v,
            json!([{"name": "KRUISE_CONTAINER_BARRIER", "valueFrom":
            {"configMapKeyRef": {"name": "web-abcde-barrier", "key": "p_-1"}}}])
        );
        let s = random_name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|b| NAME_ALPHABET.contains(&b)));
    }
}
