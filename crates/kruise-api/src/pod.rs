//! [`CachedPod`]: a pod as kruise-rs's shared cache holds it — the fields some controller,
//! engine or webhook reads, in small structs.
//!
//! k8s-openapi's `Pod` keeps every field of the pod inline whether the pod sets it or not:
//! `Pod` is 2,464 bytes before any string, each `Container` 2,336, each `ContainerStatus` 752.
//! At 10,000 cached pods that alone is ~55 MB. `CachedPod` has the same JSON and the same field
//! paths as `Pod` (`pod.metadata.labels`, `pod.spec.as_ref()?.containers[0].image`,
//! `pod.status.as_ref()?.conditions`, …) for the fields it keeps, so code reads it as it reads
//! a `Pod`; a field it does not keep does not compile, which is how the keep-list stays true.
//!
//! It decodes straight from the API server's pod JSON (unknown fields are skipped without being
//! allocated) and serializes to the same JSON for the fields it has, so a JSON patch computed
//! between two `CachedPod`s (kruise-manager's `workload::update_pod`) applies to the full pod
//! and leaves every field it does not hold untouched. Sub-objects that are kept are kept whole
//! as k8s-openapi types (`EnvVar`, `ResourceRequirements`, `PodCondition`, …): a patch never
//! replaces one with a partial copy.
//!
//! It is the Kubernetes `v1/Pod` kind (`Resource` with group `""`, version `v1`, plural
//! `pods`): `Api<CachedPod>` reads and watches pods.

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerStatus, EnvVar, Pod, PodCondition, PodReadinessGate, PodSpec,
    PodStatus, ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A pod as cached: metadata whole (without `managedFields`, which the cache drops), the spec
/// and status fields kruise-rs reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPod {
    /// The pod's metadata, whole but for `managedFields`, which decoding skips
    /// ([`decode::metadata`]).
    #[serde(default, deserialize_with = "decode::metadata")]
    pub metadata: ObjectMeta,
    /// The spec fields kruise-rs reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<CachedPodSpec>,
    /// The status fields kruise-rs reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CachedPodStatus>,
}

/// The pod spec fields kruise-rs reads (names and JSON as `PodSpec`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodSpec {
    /// `spec.containers`.
    #[serde(default)]
    pub containers: Vec<CachedContainer>,
    /// `spec.initContainers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<CachedContainer>>,
    /// `spec.nodeName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// `spec.hostname`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// `spec.subdomain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    /// `spec.readinessGates`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_gates: Option<Vec<PodReadinessGate>>,
    /// `spec.volumes`: the cache keeps only those backed by a `persistentVolumeClaim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// `spec.affinity` (the DaemonSet controller reads a pending pod's target node from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
}

/// The container fields kruise-rs reads (names and JSON as `Container`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedContainer {
    /// `name`.
    pub name: String,
    /// `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// `resources`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// `volumeMounts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// `restartPolicy` (a restartable init container: `Always`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

/// The pod status fields kruise-rs reads (names and JSON as `PodStatus`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodStatus {
    /// `phase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `observedGeneration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `conditions`, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodCondition>>,
    /// `containerStatuses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<CachedContainerStatus>>,
    /// `initContainerStatuses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container_statuses: Option<Vec<CachedContainerStatus>>,
}

/// The container status fields kruise-rs reads (names and JSON as `ContainerStatus`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedContainerStatus {
    /// `name`.
    pub name: String,
    /// `image`.
    #[serde(default)]
    pub image: String,
    /// `imageID`.
    #[serde(default, rename = "imageID")]
    pub image_id: String,
    /// `containerID`.
    #[serde(
        default,
        rename = "containerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<String>,
    /// `ready`.
    #[serde(default)]
    pub ready: bool,
    /// `restartCount`.
    #[serde(default)]
    pub restart_count: i32,
}

/// What the shared cache keeps of a pod's volumes (kruise-runtime's `slim`): only those backed by
/// a `persistentVolumeClaim` (`None` when none is left; the list is shrunk to its length).
pub fn keep_claim_volumes(volumes: &mut Option<Vec<Volume>>) {
    if let Some(mut list) = volumes.take() {
        list.retain(|v| v.persistent_volume_claim.is_some());
        if !list.is_empty() {
            list.shrink_to_fit();
            *volumes = Some(list);
        }
    }
}

/// How a cached pod's metadata is decoded: every `ObjectMeta` field as k8s-openapi decodes it
/// but `metadata.managedFields` (server-side-apply bookkeeping, about 2 KB of nested JSON maps
/// per pod, which nothing in kruise-rs reads), which is skipped without being allocated, as
/// every field `CachedPod` does not hold. Decoding the benchmark's 5.4 KB pod takes about half
/// the time and a third of the allocations it took when `managedFields` was decoded and then
/// dropped (a counting allocator over 2,000 decodes; figures in docs/architecture.md).
pub mod decode {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use serde::de::{Deserialize, Deserializer};
    use std::collections::BTreeMap;

    /// `ObjectMeta`'s fields but `managedFields` (skipped unallocated, as every unknown field).
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        annotations: Option<BTreeMap<String, String>>,
        creation_timestamp: Option<Time>,
        deletion_grace_period_seconds: Option<i64>,
        deletion_timestamp: Option<Time>,
        finalizers: Option<Vec<String>>,
        generate_name: Option<String>,
        generation: Option<i64>,
        labels: Option<BTreeMap<String, String>>,
        name: Option<String>,
        namespace: Option<String>,
        owner_references: Option<Vec<OwnerReference>>,
        resource_version: Option<String>,
        self_link: Option<String>,
        uid: Option<String>,
    }

    /// A pod's `metadata`: every `ObjectMeta` field but `managedFields` (left `None`).
    ///
    /// # Errors
    /// The deserializer's, when a field has the wrong type.
    pub fn metadata<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
        let Meta {
            annotations,
            creation_timestamp,
            deletion_grace_period_seconds,
            deletion_timestamp,
            finalizers,
            generate_name,
            generation,
            labels,
            name,
            namespace,
            owner_references,
            resource_version,
            self_link,
            uid,
        } = Meta::deserialize(d)?;
        // Every field named: a field k8s-openapi adds to `ObjectMeta` fails to compile here.
        Ok(ObjectMeta {
            annotations,
            creation_timestamp,
            deletion_grace_period_seconds,
            deletion_timestamp,
            finalizers,
            generate_name,
            generation,
            labels,
            managed_fields: None,
            name,
            namespace,
            owner_references,
            resource_version,
            self_link,
            uid,
        })
    }
}

impl k8s_openapi::Resource for CachedPod {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Pod as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for CachedPod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl From<&Container> for CachedContainer {
    fn from(c: &Container) -> Self {
        Self {
            name: c.name.clone(),
            image: c.image.clone(),
            env: c.env.clone(),
            resources: c.resources.clone(),
            volume_mounts: c.volume_mounts.clone(),
            restart_policy: c.restart_policy.clone(),
        }
    }
}

impl From<&ContainerStatus> for CachedContainerStatus {
    fn from(c: &ContainerStatus) -> Self {
        Self {
            name: c.name.clone(),
            image: c.image.clone(),
            image_id: c.image_id.clone(),
            container_id: c.container_id.clone(),
            ready: c.ready,
            restart_count: c.restart_count,
        }
    }
}

impl From<&PodSpec> for CachedPodSpec {
    fn from(s: &PodSpec) -> Self {
        let containers = |v: &[Container]| v.iter().map(CachedContainer::from).collect();
        Self {
            containers: containers(&s.containers),
            init_containers: s.init_containers.as_deref().map(containers),
            node_name: s.node_name.clone(),
            hostname: s.hostname.clone(),
            subdomain: s.subdomain.clone(),
            readiness_gates: s.readiness_gates.clone(),
            volumes: s.volumes.clone(),
            affinity: s.affinity.clone(),
        }
    }
}

impl From<&PodStatus> for CachedPodStatus {
    fn from(s: &PodStatus) -> Self {
        let statuses = |v: &[ContainerStatus]| v.iter().map(CachedContainerStatus::from).collect();
        Self {
            phase: s.phase.clone(),
            reason: s.reason.clone(),
            message: s.message.clone(),
            observed_generation: s.observed_generation,
            conditions: s.conditions.clone(),
            container_statuses: s.container_statuses.as_deref().map(statuses),
            init_container_statuses: s.init_container_statuses.as_deref().map(statuses),
        }
    }
}

/// The cached view of a full pod (an admission request's, a GET's): the fields `CachedPod`
/// keeps, cloned (metadata without `managedFields`, as decoding). Volumes are kept whole here;
/// the cache drops the non-claim ones.
impl From<&Pod> for CachedPod {
    fn from(p: &Pod) -> Self {
        Self {
            metadata: ObjectMeta {
                managed_fields: None,
                ..p.metadata.clone()
            },
            spec: p.spec.as_ref().map(CachedPodSpec::from),
            status: p.status.as_ref().map(CachedPodStatus::from),
        }
    }
}

impl From<Pod> for CachedPod {
    fn from(p: Pod) -> Self {
        Self::from(&p)
    }
}

/// The container fields read both on a pod's containers and on a template's: lets one function
/// serve a full `Container` (a template, an admission request's pod) and a cached one.
pub trait ContainerView {
    /// `name`.
    fn name(&self) -> &str;
    /// `image`.
    fn image(&self) -> Option<&str>;
    /// `env` (empty when absent).
    fn env(&self) -> &[EnvVar];
}

impl ContainerView for Container {
    fn name(&self) -> &str {
        &self.name
    }
    fn image(&self) -> Option<&str> {
        self.image.as_deref()
    }
    fn env(&self) -> &[EnvVar] {
        self.env.as_deref().unwrap_or_default()
    }
}

impl ContainerView for CachedContainer {
    fn name(&self) -> &str {
        &self.name
    }
    fn image(&self) -> Option<&str> {
        self.image.as_deref()
    }
    fn env(&self) -> &[EnvVar] {
        self.env.as_deref().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod as the API server sends it, with fields the type keeps and fields it does not.
    fn server_pod() -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "uid": "u", "resourceVersion": "9",
                "labels": {"app": "a"}, "annotations": {"k": "v"}, "finalizers": ["f"],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                    "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}],
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                    "name": "cs", "uid": "o", "controller": true}]},
            "spec": {"nodeName": "n1", "hostname": "h", "subdomain": "s",
                "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name",
                        "operator": "In", "values": ["n1"]}]}]}}},
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}],
                "initContainers": [{"name": "init", "image": "b", "restartPolicy": "Always"}],
                "containers": [{"name": "c", "image": "i:1", "imagePullPolicy": "IfNotPresent",
                    "env": [{"name": "E", "value": "1"}],
                    "resources": {"limits": {"cpu": "1"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                    "ports": [{"containerPort": 80}]}]},
            "status": {"phase": "Running", "reason": "R", "message": "M", "observedGeneration": 2,
                "podIP": "10.0.0.1", "qosClass": "Burstable",
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "c", "image": "i:1", "imageID": "i@sha256:1",
                    "containerID": "containerd://1", "ready": true, "restartCount": 3,
                    "started": true, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}})
    }

    /// What `CachedPod` keeps of [`server_pod`]: its JSON, field for field.
    fn kept() -> serde_json::Value {
        let mut want = server_pod();
        for (path, field) in [
            ("", "apiVersion"),
            ("", "kind"),
            ("spec", "dnsPolicy"),
            ("spec", "schedulerName"),
            ("spec", "tolerations"),
            ("status", "podIP"),
            ("status", "qosClass"),
        ] {
            let obj = if path.is_empty() {
                &mut want
            } else {
                &mut want[path]
            };
            obj.as_object_mut().unwrap().remove(field);
        }
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let c = want["spec"]["containers"][0].as_object_mut().unwrap();
        c.remove("imagePullPolicy");
        c.remove("ports");
        let s = want["status"]["containerStatuses"][0]
            .as_object_mut()
            .unwrap();
        s.remove("started");
        s.remove("state");
        want
    }

    #[test]
    fn a_decoded_pod_keeps_exactly_the_fields_kruise_reads_with_the_same_json() {
        let pod: CachedPod = serde_json::from_value(server_pod()).unwrap();
        assert_eq!(serde_json::to_value(&pod).unwrap(), kept());
        assert_eq!(
            pod.spec.as_ref().unwrap().containers[0].image.as_deref(),
            Some("i:1")
        );
    }

    #[test]
    fn the_view_of_a_full_pod_equals_the_decoded_one() {
        let full: Pod = serde_json::from_value(server_pod()).unwrap();
        let decoded: CachedPod = serde_json::from_value(server_pod()).unwrap();
        assert_eq!(CachedPod::from(&full), decoded);
    }

    #[test]
    fn null_lists_and_metadata_fields_decode_as_absent() {
        let pod: CachedPod = serde_json::from_value(json!({
            "metadata": {"name": "p", "labels": null, "ownerReferences": null, "managedFields": null},
            "spec": {"containers": [], "volumes": null},
            "status": {"conditions": null}}))
        .unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("p"));
        assert!(pod.metadata.owner_references.is_none() && pod.metadata.labels.is_none());
        assert!(pod.spec.as_ref().unwrap().volumes.is_none());
        assert!(pod.status.as_ref().unwrap().conditions.is_none());
        let bad = serde_json::from_value::<CachedPod>(json!({"metadata": {"ownerReferences": {}}}));
        assert!(
            bad.is_err(),
            "an owner reference list that is not a list is refused"
        );
    }

    #[test]
    fn a_pod_without_metadata_spec_or_status_decodes() {
        let pod: CachedPod = serde_json::from_value(json!({})).unwrap();
        assert_eq!(pod, CachedPod::default());
    }

    #[test]
    fn container_view_reads_full_and_cached_containers_alike() {
        let full: Pod = serde_json::from_value(server_pod()).unwrap();
        let c = &full.spec.as_ref().unwrap().containers[0];
        let cached = CachedContainer::from(c);
        for v in [c as &dyn ContainerView, &cached as &dyn ContainerView] {
            assert_eq!(v.name(), "c");
            assert_eq!(v.image(), Some("i:1"));
            assert_eq!(v.env().len(), 1);
        }
    }
}
