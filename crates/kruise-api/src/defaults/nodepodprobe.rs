//! Defaults of NodePodProbe (`apps.kruise.io/v1alpha1`).
//!
//! OpenKruise v1.9.0 registers no webhook at all for NodePodProbe (it is written only by the
//! PodProbeMarker controller and kruise-daemon), so [`set_defaults_nodepodprobe`] leaves the
//! object unchanged.

use crate::apps::v1alpha1::NodePodProbe;

/// Applies OpenKruise's admission defaults to a NodePodProbe: there are none, so the object is
/// left as it is. Provided so that every kind has a defaulting entry point.
pub fn set_defaults_nodepodprobe(obj: &mut NodePodProbe) {
    let _ = obj;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodepodprobe_empty_object_gets_no_defaults() {
        let mut obj = NodePodProbe::new("node-1", Default::default());
        let before = obj.clone();
        set_defaults_nodepodprobe(&mut obj);
        assert_eq!(obj, before);
    }

    #[test]
    fn nodepodprobe_explicit_values_kept_and_idempotent() {
        let mut obj: NodePodProbe = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1alpha1_nodepodprobe.yaml"
        )))
        .unwrap();
        let before = obj.clone();
        set_defaults_nodepodprobe(&mut obj);
        set_defaults_nodepodprobe(&mut obj);
        assert_eq!(obj, before);
    }
}
