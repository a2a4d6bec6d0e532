//! Defaults of ResourceDistribution (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for ResourceDistribution, so nothing is
//! written into the object on admission: [`set_defaults_resourcedistribution`] leaves it
//! unchanged.

use crate::apps::v1alpha1::ResourceDistribution;

/// Applies OpenKruise's admission defaults to a ResourceDistribution: there are none, so the
/// object is left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_resourcedistribution(obj: &mut ResourceDistribution) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1alpha1::{ResourceDistributionSpec, ResourceDistributionTargets};

    #[test]
    fn resourcedistribution_empty_object_gets_no_defaults() {
        let mut obj = ResourceDistribution::new("rd", ResourceDistributionSpec::default());
        let before = obj.clone();
        set_defaults_resourcedistribution(&mut obj);
        assert_eq!(obj, before);
    }

    #[test]
    fn resourcedistribution_explicit_values_kept_and_idempotent() {
        let mut obj = ResourceDistribution::new(
            "rd",
            ResourceDistributionSpec {
                resource: serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "cm"}}),
                targets: ResourceDistributionTargets {
                    all_namespaces: Some(true),
                    ..Default::default()
                },
            },
        );
        let before = obj.clone();
        set_defaults_resourcedistribution(&mut obj);
        set_defaults_resourcedistribution(&mut obj);
        assert_eq!(obj, before);
    }
}
