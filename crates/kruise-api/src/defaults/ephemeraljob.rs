//! Defaults of EphemeralJob (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for EphemeralJob, so nothing is written
//! into the object on admission: [`set_defaults_ephemeraljob`] leaves it unchanged. Absent
//! fields are interpreted by the controller at run time instead (for example a missing
//! `ttlSecondsAfterFinished` behaves as 1800 seconds, a missing `replicas` as "all matched
//! pods"), without being stored.

use crate::apps::v1alpha1::EphemeralJob;

/// Applies OpenKruise's admission defaults to an EphemeralJob: there are none, so the object is
/// left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_ephemeraljob(obj: &mut EphemeralJob) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1alpha1::EphemeralJobSpec;

    #[test]
    fn ephemeraljob_empty_object_gets_no_defaults() {
        let mut obj = EphemeralJob::new("ej", EphemeralJobSpec::default());
        let before = obj.clone();
        set_defaults_ephemeraljob(&mut obj);
        assert_eq!(obj, before);
        assert_eq!(obj.spec.ttl_seconds_after_finished, None);
    }

    #[test]
    fn ephemeraljob_explicit_values_kept_and_idempotent() {
        let mut obj = EphemeralJob::new(
            "ej",
            EphemeralJobSpec {
                replicas: Some(2),
                parallelism: Some(1),
                ttl_seconds_after_finished: Some(0),
                paused: Some(true),
                ..Default::default()
            },
        );
        let before = obj.clone();
        set_defaults_ephemeraljob(&mut obj);
        set_defaults_ephemeraljob(&mut obj);
        assert_eq!(obj, before);
    }
}
