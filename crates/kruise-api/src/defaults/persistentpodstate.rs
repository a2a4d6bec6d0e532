//! Defaults of PersistentPodState (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for PersistentPodState, so nothing is
//! written into the object on admission: [`set_defaults_persistentpodstate`] leaves it
//! unchanged. A missing `persistentPodStateRetentionPolicy` is treated as `WhenScaled` by the
//! controller without being stored.

use crate::apps::v1alpha1::PersistentPodState;

/// Applies OpenKruise's admission defaults to a PersistentPodState: there are none, so the
/// object is left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_persistentpodstate(obj: &mut PersistentPodState) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1alpha1::{NodeTopologyTerm, PersistentPodStateSpec, TargetReference};

    #[test]
    fn persistentpodstate_empty_object_gets_no_defaults() {
        let mut obj = PersistentPodState::new("pps", PersistentPodStateSpec::default());
        let before = obj.clone();
        set_defaults_persistentpodstate(&mut obj);
        assert_eq!(obj, before);
        assert_eq!(obj.spec.persistent_pod_state_retention_policy, None);
    }

    #[test]
    fn persistentpodstate_explicit_values_kept_and_idempotent() {
        let mut obj = PersistentPodState::new(
            "pps",
            PersistentPodStateSpec {
                target_reference: TargetReference {
                    api_version: "apps/v1".into(),
                    kind: "StatefulSet".into(),
                    name: "db".into(),
                },
                required_persistent_topology: Some(NodeTopologyTerm {
                    node_topology_keys: vec!["kubernetes.io/hostname".into()],
                }),
                persistent_pod_state_retention_policy: Some("WhenDeleted".into()),
                ..Default::default()
            },
        );
        let before = obj.clone();
        set_defaults_persistentpodstate(&mut obj);
        set_defaults_persistentpodstate(&mut obj);
        assert_eq!(obj, before);
    }
}
