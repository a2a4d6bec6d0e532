//! Defaults of PodUnavailableBudget (`policy.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for PodUnavailableBudget, so nothing is
//! written into the object on admission: [`set_defaults_podunavailablebudget`] leaves it
//! unchanged. Without the `kruise.io/pub-protect-operations` annotation the webhook guards
//! `DELETE`, `EVICT` and `UPDATE`, but the annotation is not added.

use crate::policy::v1alpha1::PodUnavailableBudget;

/// Applies OpenKruise's admission defaults to a PodUnavailableBudget: there are none, so the
/// object is left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_podunavailablebudget(obj: &mut PodUnavailableBudget) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::v1alpha1::PodUnavailableBudgetSpec;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn podunavailablebudget_empty_object_gets_no_defaults() {
        let mut obj = PodUnavailableBudget::new("pub", PodUnavailableBudgetSpec::default());
        let before = obj.clone();
        set_defaults_podunavailablebudget(&mut obj);
        assert_eq!(obj, before);
        assert!(obj.metadata.annotations.is_none());
    }

    #[test]
    fn podunavailablebudget_explicit_values_kept_and_idempotent() {
        let mut obj = PodUnavailableBudget::new(
            "pub",
            PodUnavailableBudgetSpec {
                max_unavailable: Some(IntOrString::String("25%".into())),
                ..Default::default()
            },
        );
        let before = obj.clone();
        set_defaults_podunavailablebudget(&mut obj);
        set_defaults_podunavailablebudget(&mut obj);
        assert_eq!(obj, before);
    }
}
