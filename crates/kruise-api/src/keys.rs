//! Well-known label, annotation, finalizer, condition and env names of OpenKruise v1.9, in one
//! place. Values are byte-identical to OpenKruise's so objects written by either implementation
//! are understood by the other.

// ---- revisions and pod identity ----

/// Upstream pod label with the revision of a pod. CloneSet writes the full ControllerRevision
/// name (`<cloneset>-<hash>`), or only `<hash>` with the `CloneSetShortHash` gate.
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// Upstream pod label with the short revision hash (CloneSet always writes the short hash).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// UnitedDeployment revision, on subset workloads and their pod templates.
pub const KRUISE_CONTROLLER_REVISION_HASH: &str = "apps.kruise.io/controller-revision-hash";
/// 5-character random id shared by a CloneSet pod and its PVCs.
pub const CLONESET_INSTANCE_ID: &str = "apps.kruise.io/cloneset-instance-id";
/// CloneSet label (v1alpha1). With value `true`, pods in `PreparingDelete` are left out when
/// this CloneSet counts its replicas, so their replacements are created before they go away.
/// v1beta1 has `spec.scaleStrategy.excludePreparingDelete` for this.
pub const CLONESET_SCALING_EXCLUDE_PREPARING_DELETE: &str =
    "apps.kruise.io/cloneset-scaling-exclude-preparing-delete";
/// ControllerRevision annotation: hash of the CloneSet's volumeClaimTemplates.
pub const CLONESET_VOLUME_CLAIM_TEMPLATE_HASH: &str = "kruise.io/cloneset-volumeclaimtemplate-hash";
/// Pod label asking the owning workload to delete the pod (honouring maxUnavailable).
pub const SPECIFIED_DELETE: &str = "apps.kruise.io/specified-delete";
/// Upstream pod annotation: deletion cost (lower is deleted first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// Value the webhook puts into an empty CloneSet `updateStrategy.maxUnavailable`, which is also
/// what the controller assumes when the field is absent.
pub const DEFAULT_CLONESET_MAX_UNAVAILABLE: &str = "20%";

// ---- in-place update ----

/// Readiness gate / pod condition type set False during an in-place update.
pub const IN_PLACE_UPDATE_READY: &str = "InPlaceUpdateReady";
/// Pod annotation holding [`crate::apps::common::InPlaceUpdateState`] as JSON; it describes the
/// pod's latest in-place update.
pub const IN_PLACE_UPDATE_STATE: &str = "apps.kruise.io/inplace-update-state";
/// Legacy key of [`IN_PLACE_UPDATE_STATE`], still read.
pub const IN_PLACE_UPDATE_STATE_OLD: &str = "inplace-update-state";
/// Pod annotation that parks the pending in-place change while `gracePeriodSeconds` runs; the
/// change is applied and the annotation removed when the delay is over.
pub const IN_PLACE_UPDATE_GRACE: &str = "apps.kruise.io/inplace-update-grace";
/// Legacy key of [`IN_PLACE_UPDATE_GRACE`], still read.
pub const IN_PLACE_UPDATE_GRACE_OLD: &str = "inplace-update-grace";
/// Pod annotation written by kruise-daemon: [`crate::apps::common::RuntimeContainerMetaSet`].
pub const RUNTIME_CONTAINERS_META: &str = "apps.kruise.io/runtime-containers-meta";
/// Workload annotation (v1alpha1): image pre-download parallelism.
pub const IMAGE_PRE_DOWNLOAD_PARALLELISM: &str = "apps.kruise.io/image-predownload-parallelism";
/// Workload annotation (v1alpha1): image pre-download timeout in seconds.
pub const IMAGE_PRE_DOWNLOAD_TIMEOUT_SECONDS: &str =
    "apps.kruise.io/image-predownload-timeout-seconds";
/// Workload annotation (v1alpha1): updated-ready pods required before pre-download starts.
pub const IMAGE_PRE_DOWNLOAD_MIN_UPDATED_READY_PODS: &str =
    "apps.kruise.io/image-predownload-min-updated-ready-pods";
/// ControllerRevision label (value `true`) set once image pre-download jobs have been created
/// for that revision. OpenKruise writes it as a label, not an annotation.
pub const IMAGE_PRE_DOWNLOAD_CREATED: &str = "apps.kruise.io/pre-predownload-created";
/// ControllerRevision label (value `true`) set when the controller decides to skip
/// pre-downloading that revision's images (e.g. for a `ReCreate` CloneSet or too few replicas).
pub const IMAGE_PRE_DOWNLOAD_IGNORED: &str = "apps.kruise.io/image-predownload-ignored";

// ---- lifecycle ----

/// Pod label with the lifecycle state (see [`lifecycle_state`]).
pub const LIFECYCLE_STATE: &str = "lifecycle.apps.kruise.io/state";
/// Pod annotation with the RFC3339 time of the last lifecycle state change.
pub const LIFECYCLE_TIMESTAMP: &str = "lifecycle.apps.kruise.io/timestamp";

/// Values of the [`LIFECYCLE_STATE`] label.
pub mod lifecycle_state {
    /// Set at creation; the pod is not available yet. It moves to `Normal` once it carries all
    /// of the `preNormal` markers, or, when there is no `preNormal` hook, once it is scheduled.
    pub const PREPARING_NORMAL: &str = "PreparingNormal";
    /// Steady state. A pod with a lifecycle label must be in this state to count as available.
    pub const NORMAL: &str = "Normal";
    /// Chosen for an in-place update. The pod stays here until none of the `inPlaceUpdate`
    /// markers remain, then moves to `Updating`.
    pub const PREPARING_UPDATE: &str = "PreparingUpdate";
    /// The in-place patch has been applied. Moves on to `Updated` when the update completes.
    pub const UPDATING: &str = "Updating";
    /// Update finished, but not available yet. Returns to `Normal` once all `inPlaceUpdate`
    /// markers are present again.
    pub const UPDATED: &str = "Updated";
    /// Marked for removal. The workload deletes the pod once none of the `preDelete` markers
    /// remain.
    pub const PREPARING_DELETE: &str = "PreparingDelete";
}

// ---- readiness ----

/// Multi-writer pod condition/readiness gate; its message is a JSON list of not-ready keys.
pub const KRUISE_POD_READY: &str = "KruisePodReady";
/// Label prefix: a pod with any such label is treated as unavailable by PUB.
pub const UNAVAILABLE_POD_LABEL_PREFIX: &str = "unavailable-pod.kruise.io/";

// ---- container launch priority ----

/// Env var a user sets on a container to give it an explicit launch priority (an integer;
/// higher starts earlier).
pub const CONTAINER_LAUNCH_PRIORITY_ENV: &str = "KRUISE_CONTAINER_PRIORITY";
/// Env var the pod webhook adds to each container of a pod that uses launch priority. Its value
/// comes from key `p_<priority>` of the `<pod>-barrier` ConfigMap, so the container cannot start
/// until the controller writes that key.
pub const CONTAINER_LAUNCH_BARRIER_ENV: &str = "KRUISE_CONTAINER_BARRIER";
/// Pod annotation; value [`CONTAINER_LAUNCH_ORDERED`] launches containers in order.
pub const CONTAINER_LAUNCH_PRIORITY: &str = "apps.kruise.io/container-launch-priority";
/// Value of [`CONTAINER_LAUNCH_PRIORITY`] for ordered launch.
pub const CONTAINER_LAUNCH_ORDERED: &str = "Ordered";
/// Pod annotation the controller adds after it has written every priority key into the pod's
/// barrier ConfigMap.
pub const CONTAINER_LAUNCH_PRIORITY_COMPLETED: &str =
    "apps.kruise.io/container-launch-priority-completed";

// ---- UnitedDeployment ----

/// Label naming the UnitedDeployment subset that a subset workload (and its pods) belongs to.
pub const SUBSET_NAME: &str = "apps.kruise.io/subset-name";
/// Annotation carrying the patch that a UnitedDeployment subset applies to its workload.
pub const SUBSET_PATCH: &str = "apps.kruise.io/subset-patch";
/// Label of pods reserved by adaptive scheduling.
pub const UNITED_DEPLOYMENT_RESERVED_POD: &str = "apps.kruise.io/united-deployment-reserved-pod";

// ---- SidecarSet ----

/// SidecarSet label (v1alpha1) with the custom version; `spec.customVersion` in v1beta1.
pub const SIDECARSET_CUSTOM_VERSION: &str = "apps.kruise.io/sidecarset-custom-version";
/// Annotation with the SidecarSet's revision hash. It sits on the SidecarSet, and on pods as
/// JSON keyed by SidecarSet name.
pub const SIDECARSET_HASH: &str = "kruise.io/sidecarset-hash";
/// Like [`SIDECARSET_HASH`], but the hash leaves out the sidecar images. Comparing the two
/// tells whether a change touched only images.
pub const SIDECARSET_HASH_WITHOUT_IMAGE: &str = "kruise.io/sidecarset-hash-without-image";
/// Pod annotation: names of the injected SidecarSets.
pub const SIDECARSET_INJECTED_LIST: &str = "kruise.io/sidecarset-injected-list";
/// Pod annotation with the progress of SidecarSet in-place sidecar upgrades on that pod.
pub const SIDECARSET_IN_PLACE_UPDATE_STATE: &str = "kruise.io/sidecarset-inplace-update-state";
/// Pod annotation: JSON map from each hot-upgrade sidecar's name to the container of its pair
/// that is currently serving (e.g. `mesh` → `mesh-1`).
pub const SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER: &str =
    "kruise.io/sidecarset-working-hotupgrade-container";

// ---- DaemonSet ----

/// Advanced DaemonSet annotation (v1alpha1); `spec.scaleStrategy.partitionedScaling` in v1beta1.
pub const PROGRESSIVE_CREATE_POD: &str = "daemonset.kruise.io/progressive-create-pod";

// ---- ContainerRecreateRequest ----

/// CRR label: UID of the target pod.
pub const CRR_POD_UID: &str = "crr.apps.kruise.io/pod-uid";
/// CRR label: node of the target pod.
pub const CRR_NODE_NAME: &str = "crr.apps.kruise.io/node-name";
/// CRR label present while the request is unfinished. It is removed on completion, so
/// kruise-daemon can ignore finished requests in its list/watch.
pub const CRR_ACTIVE: &str = "crr.apps.kruise.io/active";
/// CRR annotation/finalizer recording that the request has forced the pod not-ready; used
/// when the request sets `unreadyGracePeriodSeconds`.
pub const CRR_UNREADY_ACQUIRED: &str = "crr.apps.kruise.io/unready-acquired";
/// CRR annotation with a copy of the pod's container statuses, kept in sync only while the
/// request is in the Recreating phase.
pub const CRR_SYNC_CONTAINER_STATUSES: &str = "crr.apps.kruise.io/sync-container-statuses";

// ---- PodUnavailableBudget and deletion protection ----

/// Label on namespaces/CRDs/workloads: `Always` or `Cascading` deletion protection.
pub const DELETION_PROTECTION: &str = "policy.kruise.io/delete-protection";
/// Value of [`DELETION_PROTECTION`]: never delete while labelled.
pub const DELETION_PROTECTION_ALWAYS: &str = "Always";
/// Value of [`DELETION_PROTECTION`]: no deletion while there are children.
pub const DELETION_PROTECTION_CASCADING: &str = "Cascading";
/// Finalizer used for deletion protection.
pub const DELETION_PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";
/// PUB annotation (v1alpha1): protected operations, comma separated.
pub const PUB_PROTECT_OPERATIONS: &str = "kruise.io/pub-protect-operations";
/// PUB annotation (v1alpha1): total replicas to protect.
pub const PUB_PROTECT_TOTAL_REPLICAS: &str = "pub.kruise.io/protect-total-replicas";
/// Pod annotation (deprecated): bypass PUB.
pub const PUB_NO_PROTECT: &str = "pub.kruise.io/no-protect";
/// Pod annotation: name of the PUB protecting the pod.
pub const PUB_RELATED: &str = "kruise.io/related-pub";
/// kruise-rs workload annotation (not in OpenKruise) on a CloneSet, Advanced StatefulSet,
/// Deployment or StatefulSet: the manager's `autobudget` controller creates and owns a
/// PodUnavailableBudget for the workload. `"true"` takes `maxUnavailable` from the workload's
/// update strategy (CloneSet `updateStrategy.maxUnavailable`, default `20%`; Advanced
/// StatefulSet and StatefulSet `updateStrategy.rollingUpdate.maxUnavailable`, default `1`;
/// Deployment `strategy.rollingUpdate.maxUnavailable`, default `25%`); an integer (`"2"`) or a
/// percentage up to 100 (`"30%"`) is the budget's `maxUnavailable`; absent, empty or `"false"`
/// means no budget, and any other value is reported by a Warning Event on the workload (no
/// budget).
pub const AUTO_BUDGET: &str = "policy.kruise-rs.io/pod-unavailable-budget";
/// kruise-rs label (value `"true"`) on the PodUnavailableBudgets the `autobudget` controller
/// creates for workloads annotated with [`AUTO_BUDGET`].
pub const AUTO_BUDGET_LABEL: &str = "policy.kruise-rs.io/auto-budget";

// ---- PersistentPodState ----

/// StatefulSet annotation: auto-create a PersistentPodState.
pub const AUTO_GENERATE_PERSISTENT_POD_STATE: &str = "kruise.io/auto-generate-persistent-pod-state";
/// StatefulSet annotation: required persistent topology keys.
pub const REQUIRED_PERSISTENT_TOPOLOGY: &str = "kruise.io/required-persistent-topology";
/// StatefulSet annotation: preferred persistent topology keys.
pub const PREFERRED_PERSISTENT_TOPOLOGY: &str = "kruise.io/preferred-persistent-topology";
/// StatefulSet annotation: annotations to persist.
pub const PERSISTENT_POD_ANNOTATIONS: &str = "kruise.io/persistent-pod-annotations";

// ---- PodProbeMarker and enhanced liveness ----

/// Pod annotation (serverless PPM): JSON list of probes.
pub const POD_PROBE: &str = "kruise.io/podprobe";
/// Pod annotation (serverless PPM): comma-separated names of the PodProbeMarkers applied to
/// the pod.
pub const POD_PROBE_MARKER_LIST: &str = "kruise.io/podprobemarker-list";
/// Pod annotation; with value `true` the pod opts in to the enhanced liveness probe.
pub const USING_ENHANCED_LIVENESS: &str = "apps.kruise.io/using-enhanced-liveness";
/// Pod annotation with the saved liveness probes.
pub const CONTAINER_PROBE_CONTEXT: &str = "apps.kruise.io/container-probe-context";

// ---- jobs ----

/// Annotation on children of an AdvancedCronJob: the scheduled time.
pub const SCHEDULED_AT: &str = "apps.kruise.io/scheduled-at";
/// BroadcastJob pod label: job name.
pub const BROADCASTJOB_NAME: &str = "broadcastjob-name";
/// BroadcastJob pod label: job UID.
pub const BROADCASTJOB_CONTROLLER_UID: &str = "broadcastjob-controller-uid";

// ---- SidecarTerminator ----

/// Container env: kill this sidecar once the job's main containers exit.
pub const TERMINATE_SIDECAR_WHEN_JOB_EXIT_ENV: &str = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT";
/// Container env: terminate the sidecar by an in-place update to this image.
pub const TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE_ENV: &str =
    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE";
/// Container env: with value `true` (any case), the sidecar's exit code is left out when the
/// pod phase is worked out.
pub const TERMINATE_SIDECAR_IGNORE_EXIT_CODE_ENV: &str =
    "KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE";

// ---- WorkloadSpread ----

/// Pod annotation written by the pod webhook: JSON
/// [`crate::apps::v1alpha1::InjectWorkloadSpread`] naming the WorkloadSpread and subset the pod
/// was assigned to.
pub const MATCHED_WORKLOADSPREAD: &str = "apps.kruise.io/matched-workloadspread";
/// WorkloadSpread annotation: do not apply the subsets' patch metadata to pods that already exist.
pub const WORKLOADSPREAD_IGNORE_PATCH_EXISTING_PODS: &str =
    "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";
/// Placeholder subset name under which a WorkloadSpread groups the pods that fit none of its
/// real subsets.
pub const WORKLOADSPREAD_FAKE_SUBSET_NAME: &str = "kruise.io/workloadspread-fake-subset-name";

// ---- ResourceDistribution ----

/// Annotation on each distributed copy: name of the ResourceDistribution it comes from.
pub const RESOURCE_DISTRIBUTION_FROM: &str = "kruise.io/resourcedistribution.resource.from";
/// Annotation on each distributed copy: hash of the distributed resource content.
pub const RESOURCE_DISTRIBUTION_HASHCODE: &str = "kruise.io/resourcedistribution.resource.hashcode";

// ---- PodUnavailableBudget (continued) ----

// ---- PersistentPodState (continued) ----

/// Pod annotation set by the pod webhook when it injected recorded PersistentPodState topology
/// or annotations into the pod.
pub const INJECTED_PERSISTENT_POD_STATE: &str = "kruise.io/injected-persistent-pod-state";

// ---- EphemeralJob ----

/// Env var set on every ephemeral container an EphemeralJob injects; its value is the job's UID.
pub const EPHEMERAL_JOB_ID_ENV: &str = "KRUISE_EJOB_ID";
/// Finalizer on an EphemeralJob until its ephemeral containers have been accounted for.
pub const EPHEMERAL_CONTAINERS_CLEANUP_FINALIZER: &str =
    "apps.kruise.io/ephemeralcontainers-cleanup";

// ---- v1alpha1 ⇄ v1beta1 conversion (Advanced StatefulSet, Advanced DaemonSet) ----
//
// Keys under `conversion.apps.kruise.io/` are written only by `crate::conversion` to carry
// data that one API version cannot express through the other one; they are reserved and
// removed again by the reverse conversion.

/// v1alpha1 StatefulSet annotation: JSON object with the v1beta1-only spec fields
/// (`volumeClaimUpdateStrategy`, `reserveOrdinals`, `lifecycle`, `scaleStrategy`,
/// `persistentVolumeClaimRetentionPolicy`, `ordinals`) of the v1beta1 object it was converted from.
pub const CONVERSION_STATEFULSET_SPEC: &str = "conversion.apps.kruise.io/statefulset-spec";
/// v1alpha1 StatefulSet annotation: JSON object with the v1beta1-only status fields
/// (`updatedReadyReplicas`, `updatedAvailableReplicas`, `volumeClaims`).
pub const CONVERSION_STATEFULSET_STATUS: &str = "conversion.apps.kruise.io/statefulset-status";
/// v1alpha1 DaemonSet annotation: JSON of the v1beta1 `spec.scaleStrategy` (`null` when
/// absent), written when [`PROGRESSIVE_CREATE_POD`] alone cannot represent it.
pub const CONVERSION_DAEMONSET_SCALE_STRATEGY: &str =
    "conversion.apps.kruise.io/daemonset-scale-strategy";
/// DaemonSet annotation (either version) with value `Surging`: the other version's
/// `rollingUpdateType` was the deprecated `Surging` (v1alpha1 `Surging` becomes `Standard` in
/// v1beta1, as in OpenKruise; a literal v1beta1 `Surging` is marked the same way in v1alpha1).
pub const CONVERSION_DAEMONSET_ROLLING_UPDATE_TYPE: &str =
    "conversion.apps.kruise.io/daemonset-rolling-update-type";

// ---- v1alpha1 ⇄ v1beta1 conversion (SidecarSet, AdvancedCronJob) ----

/// Label that Kubernetes 1.21 and later puts on every namespace, with the namespace's name as
/// its value. Conversion turns a v1alpha1 SidecarSet `spec.namespace` into a v1beta1
/// `namespaceSelector` on this label.
pub const LABEL_METADATA_NAME: &str = "kubernetes.io/metadata.name";
/// v1beta1 SidecarSet annotation: the v1alpha1 `spec.namespace` that was turned into the
/// `namespaceSelector` (may be empty, recording an explicitly empty namespace).
pub const CONVERSION_SIDECARSET_NAMESPACE: &str = "conversion.apps.kruise.io/sidecarset-namespace";
/// v1beta1 SidecarSet annotation: JSON of the v1alpha1 `spec.namespaceSelector` that the
/// namespace-derived selector replaced.
pub const CONVERSION_SIDECARSET_NAMESPACE_SELECTOR: &str =
    "conversion.apps.kruise.io/sidecarset-namespace-selector";
/// v1alpha1 SidecarSet annotation: the value of a [`SIDECARSET_CUSTOM_VERSION`] label that the
/// v1beta1 object carried itself (in v1alpha1 that label stands for `spec.customVersion`).
pub const CONVERSION_SIDECARSET_CUSTOM_VERSION_LABEL: &str =
    "conversion.apps.kruise.io/sidecarset-custom-version-label";
/// v1alpha1 AdvancedCronJob annotation: JSON of the v1beta1
/// `spec.template.imageListPullJobTemplate`, which v1alpha1 cannot express.
pub const CONVERSION_ADVANCEDCRONJOB_IMAGE_LIST_PULL_JOB_TEMPLATE: &str =
    "conversion.apps.kruise.io/advancedcronjob-imagelistpulljob-template";

// ---- ImagePullJob, NodeImage and their conversion ----

/// Namespace into which kruise-manager copies the pull secrets of image jobs, and from which
/// kruise-daemon reads them.
pub const KRUISE_DAEMON_CONFIG_NAMESPACE: &str = "kruise-daemon-config";
/// Annotation on a pull-secret copy in [`KRUISE_DAEMON_CONFIG_NAMESPACE`]: the
/// `<namespace>/<name>` of the user's secret it was copied from.
pub const IMAGE_PULL_JOB_SECRET_SOURCE_KEY: &str = "imagepulljobs.kruise.io/source-key";
/// Label on a copied pull secret (deprecated, no longer written): UID of the source secret.
pub const IMAGE_PULL_JOB_SECRET_SOURCE_UID: &str = "imagepulljobs.kruise.io/source-uid";
/// Annotation on a pull-secret copy: comma-separated `<namespace>/<name>` of every ImagePullJob
/// that still needs it. When the list becomes empty the copy is removed.
pub const IMAGE_PULL_JOB_SECRET_REFERENCES: &str = "imagepulljobs.kruise.io/references";
/// Annotation on a copied pull secret marking the shared-copy scheme (NodeImage pull secrets
/// referencing such copies have `mode: batch` in v1beta1).
pub const IMAGE_PULL_JOB_SECRET_MODE: &str = "imagepulljobs.kruise.io/mode";
/// Annotation in the CRI pod sandbox config of a `PullImage` call: who asked for the pull.
pub const PULLING_IMAGE_BY: &str = "apps.kruise.io/pulling-image-by";
/// NodeImage label for tests. With it (any value), the NodeImage controller keeps the object
/// even though no Node of that name exists.
pub const FAKE_NODE_IMAGE: &str = "apps.kruise.io/fake-nodeimage";
/// Finalizer the v1alpha1 ImagePullJob webhook adds on creation (same value as
/// [`DELETION_PROTECTION_FINALIZER`]) so that the controller can clean up NodeImage tags and
/// secret copies first.
pub const IMAGE_PULL_JOB_PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";
/// v1alpha1 NodeImage annotation: JSON object mapping image names to the v1beta1
/// `pullSecrets[].mode` values of that image (index-aligned, `null` for none), which v1alpha1
/// cannot express. Written only when some mode is set.
pub const CONVERSION_NODEIMAGE_PULL_SECRET_MODES: &str =
    "conversion.apps.kruise.io/nodeimage-pull-secret-modes";

// ---- ContainerRecreateRequest (more) ----

/// Node label key that marks virtual-kubelet nodes when set to
/// [`VIRTUAL_KUBELET_LABEL_VALUE`]. The CRR webhook copies it onto requests for pods running on
/// such nodes.
pub const VIRTUAL_KUBELET_LABEL: &str = "type";
/// The [`VIRTUAL_KUBELET_LABEL`] value that identifies a virtual-kubelet node.
pub const VIRTUAL_KUBELET_LABEL_VALUE: &str = "virtual-kubelet";
/// `userAgent` that a CRR uses in the [`KRUISE_POD_READY`] not-ready message while it holds the
/// pod not-ready (`unreadyGracePeriodSeconds`).
pub const CRR_POD_READY_USER_AGENT: &str = "ContainerRecreateRequest";

// ---- PodProbeMarker ----

/// Finalizer that keeps a PodProbeMarker around until the controller has taken its probes out
/// of every NodePodProbe spec.
pub const POD_PROBE_MARKER_FINALIZER: &str = "kruise.io/node-pod-probe-cleanup";
