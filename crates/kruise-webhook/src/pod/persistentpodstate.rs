//! The PersistentPodState step of pod creation (OpenKruise v1.9.0
//! `pkg/webhook/pod/mutating/persistent_pod_state.go`, `persistentPodStateMutatingPod`): a pod
//! whose controller is a StatefulSet (or a whitelisted kind) targeted by a PersistentPodState
//! that recorded node topology for the pod's name gets that topology back as node affinity —
//! the required topology's recorded labels merged into `nodeSelector`, one preferred
//! scheduling term per preferred topology appended — and the
//! `kruise.io/injected-persistent-pod-state` annotation naming the PersistentPodState.

use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, Pod};
use kruise_api::apps::v1alpha1::TargetReference;
use kruise_api::keys;
use kruise_engines::persistentpodstate as engine;

use crate::lookup::Lookup;

/// Applies the step to `pod` (being created); `Ok(true)` when it changed the pod.
///
/// # Errors
/// The whitelist or the PersistentPodStates could not be read (the handler answers 500, as
/// OpenKruise).
pub async fn mutate(lookup: &Lookup, pod: &mut Pod) -> Result<bool, String> {
    let whitelist = lookup.pps_whitelist().await?;
    let Some(owner) = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    else {
        return Ok(false);
    };
    if !whitelist.allows(&owner.api_version, &owner.kind) {
        return Ok(false);
    }
    let reference = TargetReference {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
        name: owner.name.clone(),
    };
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    // OpenKruise logs a failed list and goes on without a PersistentPodState.
    let candidates = lookup
        .persistent_pod_states_in(&ns)
        .await
        .unwrap_or_default();
    let Some(pps) = engine::select(&candidates, &reference) else {
        return Ok(false);
    };
    let Some(states) = pps
        .status
        .as_ref()
        .and_then(|s| s.pod_states.as_ref())
        .filter(|s| !s.is_empty())
    else {
        return Ok(false);
    };
    let name = pod.metadata.name.as_deref().unwrap_or("");
    let Some(state) = states.get(name).filter(|s| {
        s.node_topology_labels
            .as_ref()
            .is_some_and(|l| !l.is_empty())
    }) else {
        return Ok(false);
    };
    let (required, preferred) = engine::create_node_affinity(&pps.spec, state);
    let required = required.filter(|r| !r.is_empty());
    if required.is_none() && preferred.is_empty() {
        return Ok(false);
    }
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            keys::INJECTED_PERSISTENT_POD_STATE.to_string(),
            pps.metadata.name.clone().unwrap_or_default(),
        );
    let spec = pod.spec.get_or_insert_with(Default::default);
    if let Some(required) = required {
        spec.node_selector
            .get_or_insert_with(Default::default)
            .extend(required);
    }
    if !preferred.is_empty() {
        spec.affinity
            .get_or_insert_with(Affinity::default)
            .node_affinity
            .get_or_insert_with(NodeAffinity::default)
            .preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .extend(preferred);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::FixedCluster;
    use serde_json::json;

    fn cluster(states: serde_json::Value) -> Lookup {
        let pps = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
                "requiredPersistentTopology": {"nodeTopologyKeys": ["os"]},
                "preferredPersistentTopology": [{"weight": 100, "preference": {"nodeTopologyKeys": ["host"]}}]},
            "status": {"observedGeneration": 1, "podStates": states}});
        Lookup::fixed_cluster(FixedCluster {
            persistent_pod_states: vec![serde_json::from_value(pps).unwrap()],
            ..Default::default()
        })
    }

    fn pod(name: &str, owner_kind: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns",
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": owner_kind, "name": "web", "uid": "u", "controller": true}]},
            "spec": {"nodeSelector": {"zone": "a"}, "containers": [{"name": "c"}]}}))
        .unwrap()
    }

    #[tokio::test]
    async fn a_recorded_pod_gets_its_topology_back() {
        let lookup = cluster(
            json!({"web-0": {"nodeName": "n1", "nodeTopologyLabels": {"os": "linux", "host": "n1"}}}),
        );
        let mut p = pod("web-0", "StatefulSet");
        assert!(mutate(&lookup, &mut p).await.unwrap());
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v["metadata"]["annotations"][keys::INJECTED_PERSISTENT_POD_STATE],
            "web"
        );
        assert_eq!(
            v["spec"]["nodeSelector"],
            json!({"zone": "a", "os": "linux"})
        );
        assert_eq!(
            v["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            json!([{"weight": 100, "preference": {"matchExpressions": [{"key": "host", "operator": "In", "values": ["n1"]}]}}])
        );
    }

    #[tokio::test]
    async fn unrecorded_pods_and_other_owners_are_left_alone() {
        let lookup =
            cluster(json!({"web-0": {"nodeName": "n1", "nodeTopologyLabels": {"os": "linux"}}}));
        let mut p = pod("web-1", "StatefulSet");
        assert!(!mutate(&lookup, &mut p).await.unwrap());
        let mut p = pod("web-0", "CloneSet");
        assert!(!mutate(&lookup, &mut p).await.unwrap());
        let lookup = cluster(json!({"web-0": {"nodeName": "n1"}}));
        let mut p = pod("web-0", "StatefulSet");
        assert!(!mutate(&lookup, &mut p).await.unwrap());
    }
}
