//! Defaults of PodProbeMarker (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers only a validating webhook for PodProbeMarker, so nothing is
//! written into the object on admission: [`set_defaults_podprobemarker`] leaves it unchanged.
//! (The apiserver itself fills in the CRD schema default `probe.grpc.service: ""` when a gRPC
//! probe is given; that is not webhook defaulting.)

use crate::apps::v1alpha1::PodProbeMarker;

/// Applies OpenKruise's admission defaults to a PodProbeMarker: there are none, so the object is
/// left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_podprobemarker(obj: &mut PodProbeMarker) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn podprobemarker_empty_object_gets_no_defaults() {
        let mut obj = PodProbeMarker::new("m", Default::default());
        let before = obj.clone();
        set_defaults_podprobemarker(&mut obj);
        assert_eq!(obj, before);
    }

    #[test]
    fn podprobemarker_explicit_values_kept_and_idempotent() {
        let mut obj: PodProbeMarker = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_podprobemarker.yaml"
        )))
        .unwrap();
        let before = obj.clone();
        set_defaults_podprobemarker(&mut obj);
        set_defaults_podprobemarker(&mut obj);
        assert_eq!(obj, before);
    }
}
