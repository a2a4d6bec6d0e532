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
//! and leaves every field it does not hold untouched. Sub-objects that are kept are kept whole,
//! as k8s-openapi types (`EnvVar`, `ResourceRequirements`, …) or, for conditions, as
//! [`CachedPodCondition`] (every `PodCondition` field, short texts as [`Word`]s): a patch never
//! replaces one with a partial copy.
//!
//! It is the Kubernetes `v1/Pod` kind (`Resource` with group `""`, version `v1`, plural
//! `pods`): `Api<CachedPod>` reads and watches pods.

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, ContainerState, ContainerStatus, EnvVar,
    EphemeralContainer, Lifecycle, Pod, PodCondition, PodReadinessGate, PodSpec, PodStatus,
    ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};
use std::fmt;

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
    /// Boxed: most pods have none, and an unset `Affinity` inline is 144 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Box<Affinity>>,
    /// `spec.restartPolicy` (the BroadcastJob controller counts an `OnFailure` pod restarted
    /// more than `restartLimit` times as failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// `spec.ephemeralContainers`, whole (the EphemeralJob controller reads their names and
    /// `KRUISE_EJOB_ID` env; few pods have any, so an absent list costs only the `Option`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_containers: Option<Vec<EphemeralContainer>>,
    /// `spec.terminationGracePeriodSeconds` (the ContainerRecreateRequest webhook copies it into
    /// a request that sets none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
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
    /// `lifecycle`, whole (the ContainerRecreateRequest webhook copies its `preStop` into a
    /// request). Boxed: most containers have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Box<Lifecycle>>,
    /// `ports`: the cache keeps all of them for a container whose `preStop` is an `httpGet`
    /// handler (the ContainerRecreateRequest webhook copies them into a request, for a handler
    /// that names its port) and the named ones of other containers (PodProbeMarker's named
    /// probe ports); see [`keep_read_ports`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
}

/// The pod status fields kruise-rs reads (names and JSON as `PodStatus`'s).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodStatus {
    /// `phase` (the five phases are held without an allocation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Word>,
    /// `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `observedGeneration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `podIP` (the PodProbeMarker controller copies it into the node's NodePodProbe, where
    /// kruise-daemon's HTTP and TCP probes connect to it).
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// `conditions`, whole (every `PodCondition` field, in a smaller struct).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<CachedPodCondition>>,
    /// `containerStatuses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<CachedContainerStatus>>,
    /// `initContainerStatuses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container_statuses: Option<Vec<CachedContainerStatus>>,
    /// `ephemeralContainerStatuses`, whole (the EphemeralJob controller reads their states; few
    /// pods have any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_container_statuses: Option<Vec<ContainerStatus>>,
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
    /// `state`, whole (the ContainerRecreateRequest controller reads when a running container
    /// started; inline, as a running container's state holds no string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
}

/// A pod condition as cached: every field of `PodCondition`, with its JSON, in 128 bytes
/// instead of 160 plus two heap strings — `type` and `status` are [`Word`]s (no allocation for
/// the values Kubernetes and OpenKruise write), `reason` and `message` boxed strings. Kept whole,
/// so a JSON patch computed between two cached pods never replaces a condition with a partial
/// copy. Convert with `From` both ways (constructors build a `PodCondition` and convert).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodCondition {
    /// `lastProbeTime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// `lastTransitionTime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<str>>,
    /// `observedGeneration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Box<str>>,
    /// `status` (`True`, `False`, `Unknown`; OpenKruise also writes `""`).
    #[serde(default)]
    pub status: Word,
    /// `type`.
    #[serde(default, rename = "type")]
    pub type_: Word,
}

impl From<&PodCondition> for CachedPodCondition {
    fn from(c: &PodCondition) -> Self {
        Self {
            last_probe_time: c.last_probe_time.clone(),
            last_transition_time: c.last_transition_time.clone(),
            message: c.message.as_deref().map(Box::from),
            observed_generation: c.observed_generation,
            reason: c.reason.as_deref().map(Box::from),
            status: Word::from(c.status.as_str()),
            type_: Word::from(c.type_.as_str()),
        }
    }
}

impl From<PodCondition> for CachedPodCondition {
    fn from(c: PodCondition) -> Self {
        Self::from(&c)
    }
}

impl From<&CachedPodCondition> for PodCondition {
    fn from(c: &CachedPodCondition) -> Self {
        Self {
            last_probe_time: c.last_probe_time.clone(),
            last_transition_time: c.last_transition_time.clone(),
            message: c.message.as_deref().map(String::from),
            observed_generation: c.observed_generation,
            reason: c.reason.as_deref().map(String::from),
            status: c.status.to_string(),
            type_: c.type_.to_string(),
        }
    }
}

impl From<CachedPodCondition> for PodCondition {
    fn from(c: CachedPodCondition) -> Self {
        Self::from(&c)
    }
}

/// A short status string of a cached pod: a condition's `type` or `status`, the pod's `phase`.
/// One of [`Word::KNOWN`] (what Kubernetes and OpenKruise write) is held as its index, without an
/// allocation; any other text as a boxed string. 16 bytes, against a `String`'s 24 bytes plus a
/// 32-byte heap chunk. It reads as a `&str` (`Deref`), compares with `str`, `&str` and `String`,
/// and prints, hashes, orders and serializes as its text.
#[derive(Clone)]
pub struct Word(WordRepr);

#[derive(Clone)]
enum WordRepr {
    Known(u8),
    Other(Box<str>),
}

impl Word {
    /// The texts held without an allocation: condition statuses (and OpenKruise's empty one),
    /// pod phases, and the condition types of Kubernetes and OpenKruise.
    pub const KNOWN: [&'static str; 22] = [
        "",
        "True",
        "False",
        "Unknown",
        "Pending",
        "Running",
        "Succeeded",
        "Failed",
        "PodScheduled",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodReadyToStartContainers",
        "DisruptionTarget",
        "PodResizePending",
        "PodResizeInProgress",
        "InPlaceUpdateReady",
        "KruisePodReady",
        "SidecarSetUpgradable",
        "ContainersPriorityReady",
        "PodPreparingUpdate",
        "PodUpdated",
    ];

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            WordRepr::Known(i) => Self::KNOWN[usize::from(*i)],
            WordRepr::Other(s) => s,
        }
    }

    fn known(s: &str) -> Option<Self> {
        Self::KNOWN
            .iter()
            .position(|k| *k == s)
            .and_then(|i| u8::try_from(i).ok())
            .map(|i| Self(WordRepr::Known(i)))
    }
}

impl Default for Word {
    fn default() -> Self {
        Self(WordRepr::Known(0))
    }
}

impl From<&str> for Word {
    fn from(s: &str) -> Self {
        Self::known(s).unwrap_or_else(|| Self(WordRepr::Other(Box::from(s))))
    }
}

impl From<String> for Word {
    fn from(s: String) -> Self {
        Self::known(&s).unwrap_or_else(|| Self(WordRepr::Other(s.into_boxed_str())))
    }
}

impl std::ops::Deref for Word {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Word {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Word {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Word {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Word {}

impl std::hash::Hash for Word {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for Word {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Word {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialEq<str> for Word {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Word {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Word {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Word> for str {
    fn eq(&self, other: &Word) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Word> for &str {
    fn eq(&self, other: &Word) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Word> for String {
    fn eq(&self, other: &Word) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for Word {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Word {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Word;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Word, E> {
                Ok(Word::from(v))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Word, E> {
                Ok(Word::from(v))
            }
        }
        d.deserialize_str(Visitor)
    }
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

/// What the shared cache keeps of a container's `ports` (kruise-runtime's `slim`): all of them
/// for a container whose `preStop` handler is an `httpGet`, which the ContainerRecreateRequest
/// webhook copies into a request (OpenKruise's `injectPodIntoContainerRecreateRequest`; the
/// daemon resolves a named port from them); of other containers only the named ports, which the
/// PodProbeMarker controller resolves a probe's named `httpGet` / `tcpSocket` port against
/// (OpenKruise's `util.ExtractPort`). Nothing reads an unnamed port of other containers.
pub fn keep_read_ports(containers: &mut [CachedContainer]) {
    for c in containers {
        let http_pre_stop = c
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_stop.as_ref())
            .is_some_and(|h| h.http_get.is_some());
        if http_pre_stop {
            continue;
        }
        if let Some(ports) = c.ports.as_mut() {
            ports.retain(|p| p.name.as_deref().is_some_and(|n| !n.is_empty()));
            if ports.is_empty() {
                c.ports = None;
            } else {
                ports.shrink_to_fit();
            }
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
            lifecycle: c.lifecycle.clone().map(Box::new),
            ports: c.ports.clone(),
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
            state: c.state.clone(),
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
            affinity: s.affinity.clone().map(Box::new),
            restart_policy: s.restart_policy.clone(),
            ephemeral_containers: s.ephemeral_containers.clone(),
            termination_grace_period_seconds: s.termination_grace_period_seconds,
        }
    }
}

impl From<&PodStatus> for CachedPodStatus {
    fn from(s: &PodStatus) -> Self {
        let statuses = |v: &[ContainerStatus]| v.iter().map(CachedContainerStatus::from).collect();
        Self {
            phase: s.phase.as_deref().map(Word::from),
            reason: s.reason.clone(),
            message: s.message.clone(),
            observed_generation: s.observed_generation,
            pod_ip: s.pod_ip.clone(),
            conditions: s
                .conditions
                .as_deref()
                .map(|v| v.iter().map(CachedPodCondition::from).collect()),
            container_statuses: s.container_statuses.as_deref().map(statuses),
            init_container_statuses: s.init_container_statuses.as_deref().map(statuses),
            ephemeral_container_statuses: s.ephemeral_container_statuses.clone(),
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
        // `ports` decode; the shared cache's slim drops those nothing reads
        // (`keep_read_ports`).
        c.remove("imagePullPolicy");
        let s = want["status"]["containerStatuses"][0]
            .as_object_mut()
            .unwrap();
        s.remove("started");
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

    #[test]
    fn words_hold_known_texts_inline_and_compare_as_text() {
        assert_eq!(std::mem::size_of::<Word>(), 16);
        for k in Word::KNOWN {
            let w = Word::from(k);
            assert!(matches!(w.0, WordRepr::Known(_)), "{k:?} allocated");
            assert_eq!(w.as_str(), k);
            assert_eq!(Word::from(k.to_string()), w);
        }
        let other = Word::from("MyGate");
        assert!(matches!(other.0, WordRepr::Other(_)));
        assert_eq!(other, "MyGate");
        assert_eq!("MyGate", other);
        assert_eq!(other, String::from("MyGate"));
        assert_ne!(other, Word::from("True"));
        assert_eq!(other.to_string(), "MyGate");
        assert_eq!(format!("{other:?}"), "\"MyGate\"");
        assert_eq!(Word::default(), "");
        // Hash and Borrow agree with str: a set of words is searched by text.
        let set: std::collections::HashSet<Word> =
            ["Ready".into(), "MyGate".into()].into_iter().collect();
        assert!(set.contains("MyGate") && set.contains("Ready") && !set.contains("True"));
        let mut sorted = vec![Word::from("b"), Word::from("True"), Word::from("a")];
        sorted.sort();
        assert_eq!(sorted, ["True", "a", "b"]);
    }

    #[test]
    fn cached_conditions_have_pod_conditions_json_in_fewer_bytes() {
        assert!(
            std::mem::size_of::<CachedPodCondition>() <= 128,
            "{}",
            std::mem::size_of::<CachedPodCondition>()
        );
        let full = json!({"type": "KruisePodReady", "status": "False", "reason": "R",
            "message": "[\"m\"]", "observedGeneration": 3,
            "lastProbeTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-02T00:00:00Z"});
        let minimal = json!({"type": "MyGate", "status": ""});
        for v in [full, minimal] {
            let c: CachedPodCondition = serde_json::from_value(v.clone()).unwrap();
            let p: PodCondition = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), v);
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
            assert_eq!(CachedPodCondition::from(&p), c);
            assert_eq!(PodCondition::from(&c), p);
        }
        let c: CachedPodCondition =
            serde_json::from_value(json!({"type": "Ready", "status": "True", "reason": null}))
                .unwrap();
        assert!(c.reason.is_none() && c.type_ == "Ready" && c.status == "True");
        assert!(serde_json::from_value::<CachedPodCondition>(json!({"type": 1})).is_err());
    }
}
