//! PodProbeMarker, PPM (`apps.kruise.io/v1alpha1`, the only version in OpenKruise v1.9.0):
//! custom probes that kruise-daemon runs against the containers of the selected pods, whose
//! results become pod conditions and/or label and annotation patches.
//!
//! The PPM controller copies the probes of every matching pod into the
//! [`NodePodProbe`](super::NodePodProbe) of the pod's node; the NodePodProbe controller turns the
//! daemon's results back into pod changes. For serverless pods the probes travel in the pod
//! annotation [`crate::keys::POD_PROBE`] instead.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// The desired state of a PodProbeMarker.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PodProbeMarker",
    plural = "podprobemarkers",
    singular = "podprobemarker",
    namespaced,
    status = "PodProbeMarkerStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A PodProbeMarker defines custom container probes for the selected pods and how their results mark the pods."
)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerSpec {
    /// Label query over the pods (in the PPM's namespace) that get the probes. Required,
    /// non-empty and immutable.
    pub selector: LabelSelector,

    /// The probes (merged by `name` in strategic patches). The result of each becomes the pod
    /// condition `podConditionType` (True on success, False on failure) and/or the
    /// `markerPolicy` patches.
    pub probes: Vec<PodContainerProbe>,
}

/// One custom probe of a container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodContainerProbe {
    /// Name of the probe, unique within the pod across all containers (and without `#`).
    pub name: String,

    /// Name of the container the probe runs against.
    pub container_name: String,

    /// What to run and how often (exec, tcpSocket or httpGet plus the usual timing fields).
    pub probe: ContainerProbeSpec,

    /// Labels and annotations to put on the pod depending on the result (merged by `state` in
    /// strategic patches). At least one of `markerPolicy` and `podConditionType` is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker_policy: Option<Vec<ProbeMarkerPolicy>>,

    /// Pod condition type that records the result, e.g. `game.kruise.io/healthy` (True on
    /// success, False on failure). Must not be one of the built-in/Kruise readiness conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_condition_type: Option<String>,
}

/// A Kubernetes container probe ([`Probe`], inlined in JSON) used as a custom probe.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ContainerProbeSpec {
    /// The probe: action plus `initialDelaySeconds`, `timeoutSeconds`, `periodSeconds`,
    /// `successThreshold`, `failureThreshold` and `terminationGracePeriodSeconds`.
    #[serde(flatten)]
    pub probe: Probe,
}

impl JsonSchema for ContainerProbeSpec {
    fn schema_name() -> Cow<'static, str> {
        "ContainerProbeSpec".into()
    }

    fn inline_schema() -> bool {
        true
    }

    /// The schema of [`Probe`] made to match OpenKruise v1.9.0's CRD, which was generated from
    /// an older Kubernetes API: `grpc.service` gets the Go type's `default: ""` (k8s-openapi
    /// omits it), and the fields added by later Kubernetes versions (`grpc.mode`,
    /// `httpGet.protocol`) are left out, so the apiserver prunes them as it does for OpenKruise.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = generator.subschema_for::<Probe>();
        if let Some(service) = schema
            .pointer_mut("/properties/grpc/properties/service")
            .and_then(serde_json::Value::as_object_mut)
        {
            service.insert("example".into(), "".into());
        }
        for (parent, field) in [("grpc", "mode"), ("httpGet", "protocol")] {
            if let Some(props) = schema
                .pointer_mut(&format!("/properties/{parent}/properties"))
                .and_then(serde_json::Value::as_object_mut)
            {
                props.remove(field);
            }
        }
        schema.insert(
            "description".into(),
            "A container probe (action and timing) used as a custom probe.".into(),
        );
        schema
    }
}

/// Labels and annotations patched onto the pod when the probe is in a given state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ProbeMarkerPolicy {
    /// `Succeeded` or `Failed` (see [`super::probe_state`]). When the probe fails and no
    /// `Failed` policy exists, the keys of the `Succeeded` policy are removed from the pod.
    pub state: String,

    /// Labels to set on the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations to set on the pod (e.g. `controller.kubernetes.io/pod-deletion-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The observed state of a PodProbeMarker.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerStatus {
    /// The `metadata.generation` the controller last acted on.
    pub observed_generation: i64,

    /// Number of pods the selector currently matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched_pods: Option<i64>,
}

/// One element of the JSON list in the pod annotation [`crate::keys::POD_PROBE`] (serverless
/// pods): a probe of the pod, as the pod webhook compiled it from the matching PodProbeMarkers
/// (only probes with a `podConditionType`, and with `markerPolicy` left out).
pub type PodProbeAnnotationEntry = PodContainerProbe;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const SAMPLE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/samples/apps.kruise.io_v1alpha1_podprobemarker.yaml"
    ));

    #[test]
    fn sample_round_trips() {
        let raw: Value = serde_yaml_ng::from_str(SAMPLE).unwrap();
        let ppm: PodProbeMarker = serde_yaml_ng::from_str(SAMPLE).unwrap();
        assert!(ppm.spec.probes[0].probe.probe.exec.is_some());
        assert_eq!(serde_json::to_value(&ppm).unwrap(), raw);
    }

    #[test]
    fn absent_optional_fields_stay_absent() {
        let raw = json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "PodProbeMarker",
            "metadata": {"name": "m", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "probes": [{"name": "p", "containerName": "c",
                            "probe": {"tcpSocket": {"port": 80}},
                            "markerPolicy": [{"state": "Succeeded"}]}]
            },
            "status": {"observedGeneration": 1}
        });
        let ppm: PodProbeMarker = serde_json::from_value(raw.clone()).unwrap();
        let p = &ppm.spec.probes[0];
        assert!(p.pod_condition_type.is_none());
        assert!(p.probe.probe.period_seconds.is_none());
        assert_eq!(serde_json::to_value(&ppm).unwrap(), raw);
    }

    #[test]
    fn pod_probe_annotation_format() {
        let text = r#"[{"name":"healthy","containerName":"main","probe":{"exec":{"command":["bash","/data/probe.sh"]}},"podConditionType":"game.kruise.io/healthy"}]"#;
        let list: Vec<PodProbeAnnotationEntry> = serde_json::from_str(text).unwrap();
        assert_eq!(
            list[0].pod_condition_type.as_deref(),
            Some("game.kruise.io/healthy")
        );
        assert_eq!(serde_json::to_string(&list).unwrap(), text);
    }

    #[test]
    fn probe_schema_matches_openkruise() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(PodProbeMarker::crd()).unwrap();
        let probe = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["probes"]["items"]["properties"]["probe"];
        assert!(probe["properties"]["exec"].is_object());
        assert!(probe["properties"]["grpc"]["properties"]["service"].is_object());
        assert!(
            probe["properties"]["grpc"]["properties"]
                .get("mode")
                .is_none()
        );
        assert!(
            probe["properties"]["httpGet"]["properties"]
                .get("protocol")
                .is_none()
        );
    }
}
