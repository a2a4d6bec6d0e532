//! Defaults of WorkloadSpread (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for WorkloadSpread itself (the pod
//! mutating webhook changes pods, not the WorkloadSpread spec), so nothing is written into the
//! object on admission: [`set_defaults_workloadspread`] leaves it unchanged. A missing
//! `scheduleStrategy.type` is treated as `Fixed` without being stored.

use crate::apps::v1alpha1::WorkloadSpread;

/// Applies OpenKruise's admission defaults to a WorkloadSpread: there are none, so the object
/// is left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_workloadspread(obj: &mut WorkloadSpread) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::v1alpha1::{
        WorkloadSpreadScheduleStrategy, WorkloadSpreadSpec, WorkloadSpreadSubset,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn workloadspread_empty_object_gets_no_defaults() {
        let mut obj = WorkloadSpread::new("ws", WorkloadSpreadSpec::default());
        let before = obj.clone();
        set_defaults_workloadspread(&mut obj);
        assert_eq!(obj, before);
        assert_eq!(obj.spec.schedule_strategy, None);
    }

    #[test]
    fn workloadspread_explicit_values_kept_and_idempotent() {
        let mut obj = WorkloadSpread::new(
            "ws",
            WorkloadSpreadSpec {
                subsets: vec![WorkloadSpreadSubset {
                    name: "a".into(),
                    max_replicas: Some(IntOrString::Int(3)),
                    ..Default::default()
                }],
                schedule_strategy: Some(WorkloadSpreadScheduleStrategy {
                    type_: Some("Adaptive".into()),
                    adaptive: None,
                }),
                ..Default::default()
            },
        );
        let before = obj.clone();
        set_defaults_workloadspread(&mut obj);
        set_defaults_workloadspread(&mut obj);
        assert_eq!(obj, before);
    }
}
