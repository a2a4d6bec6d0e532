//! The I/O half of one Advanced StatefulSet pass: reads the shared cache, asks [`super::plan`]
//! and the shared engines what to do and performs it through the shared workload controls.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSetCondition};
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolumeClaim};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    StatefulSet, StatefulSetStatus, pod_management_policy_type, pod_update_strategy_type,
    statefulset_condition_type,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::lifecycle::{self, LifecycleState};
use kruise_engines::{inplace, intstr, podutil, revision};
use kruise_runtime::events;
use kruise_runtime::features::Feature;
use kruise_runtime::runner::Context;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::Selector;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tracing::{debug, info};

use super::plan::{self, REVISION_LABEL};
use super::{Error, State};
use crate::workload::{
    self,
    inplace::{InPlaceOutcome, PodUpdater},
    pods::{Deletion, EventStyle, PodControl},
};

const API_VERSION: &str = "apps.kruise.io/v1beta1";
const KIND: &str = "StatefulSet";
/// Retries of a pod write that conflicts (OpenKruise: `retry.DefaultBackoff`, 4 steps).
const CONFLICT_RETRIES: u32 = 4;

/// A slot's pod this pass: one the cache shows, or one about to be created.
enum SlotPod {
    Existing(Arc<CachedPod>),
    /// The full pod to create and its cached view (what the pass reads).
    New(Box<(Pod, CachedPod)>),
}

impl SlotPod {
    fn pod(&self) -> &CachedPod {
        match self {
            SlotPod::Existing(p) => p,
            SlotPod::New(p) => &p.1,
        }
    }
}

/// The smallest positive wake-up asked for during a pass (OpenKruise's `durationStore`).
#[derive(Default)]
struct Requeue(Option<Duration>);

impl Requeue {
    fn push(&mut self, d: Option<Duration>) {
        if let Some(d) = d.filter(|d| !d.is_zero()) {
            self.0 = Some(self.0.map_or(d, |x| x.min(d)));
        }
    }
}

/// The pods of a pass by ordinal (OpenKruise `updateStatefulSet`'s `replicas` and `condemned`).
struct Partition {
    /// Per slot of the ordinal range, its pod (`None`: a reserved ordinal).
    replicas: Vec<Option<SlotPod>>,
    /// The pods outside the range or on reserved ordinals, highest ordinal first.
    condemned: Vec<Arc<CachedPod>>,
}

/// The unavailable replicas of a rolling update and how many there may be (OpenKruise
/// `unavailablePods` and `maxUnavailable`).
struct Unavailable {
    pods: BTreeSet<String>,
    max: i64,
}

impl Unavailable {
    /// Whether the pod `name`, not counted unavailable, must wait: the budget is used up.
    fn blocks(&self, name: &str) -> bool {
        self.pods.len() as i64 >= self.max && !self.pods.contains(name)
    }
}

/// Everything one pass needs besides the set.
struct Pass<'a> {
    set: &'a StatefulSet,
    ctx: &'a Context,
    state: &'a State,
    key: &'a str,
    ns: String,
    set_name: String,
    owner: ObjectReference,
    now: jiff::Timestamp,
    auto_delete_pvc: bool,
    /// Gate StatefulSetAutoResizePVCGate and `volumeClaimUpdateStrategy.type: OnPodRollingUpdate`.
    resize_claims: bool,
    pod_index_label: bool,
    range: kruise_engines::ordinals::OrdinalRange,
    min_ready: i32,
    requeue: Requeue,
    conditions: Vec<StatefulSetCondition>,
}

pub(super) async fn sync(
    set: &StatefulSet,
    ctx: &Context,
    state: &State,
    key: &str,
) -> Result<Action, Error> {
    if set.metadata.deletion_timestamp.is_some() {
        // Pods, claims and revisions go through garbage collection.
        return Ok(Action::await_change());
    }
    let Some(selector) = compile_selector(set) else {
        // As OpenKruise: an invalid selector is not retried (the webhook refuses them).
        info!(statefulset = key, "invalid selector; not reconciled");
        return Ok(Action::await_change());
    };
    let mut pass = Pass {
        set,
        ctx,
        state,
        key,
        ns: set.namespace().unwrap_or_default(),
        set_name: set.name_any(),
        owner: events::object_ref(set),
        now: jiff::Timestamp::now(),
        auto_delete_pvc: ctx.gates.enabled(Feature::StatefulSetAutoDeletePVC),
        resize_claims: ctx.gates.enabled(Feature::StatefulSetAutoResizePVCGate)
            && set
                .spec
                .volume_claim_update_strategy
                .as_ref()
                .and_then(|s| s.type_.as_deref())
                == Some(kruise_api::apps::v1beta1::volume_claim_update_strategy_type::ON_POD_ROLLING_UPDATE),
        pod_index_label: ctx.gates.enabled(Feature::PodIndexLabel),
        range: plan::ordinal_range(set, ctx.gates.enabled(Feature::StatefulSetStartOrdinal)),
        min_ready: plan::min_ready_seconds(set),
        requeue: Requeue::default(),
        conditions: Vec::new(),
    };

    if pass.adopt_orphan_revisions(&selector).await? {
        // Decide on revisions once the cache shows the adopted ones (else a new revision
        // would be made beside an adopted equal one).
        return Ok(Action::requeue(Duration::from_millis(500)));
    }
    let pods = pass.claim_pods(&selector).await?;
    for p in &pods {
        if !state.resource_versions.is_satisfied_object(&p.metadata).0 {
            debug!(statefulset = key, pod = %p.name_any(), "waiting for the cache to catch up");
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
    }

    let uid = set.metadata.uid.as_deref().unwrap_or_default();
    let mut revisions: Vec<Arc<ControllerRevision>> = state
        .revisions
        .owned_by(uid)
        .into_iter()
        .filter(|r| r.metadata.namespace.as_deref() == Some(pass.ns.as_str()))
        .collect();
    revision::sort_revisions(&mut revisions);
    let (update_rev, collision) = pass.ensure_update_revision(&revisions).await?;
    let update_name = update_rev.name_any();
    let current_rev = crate::workload::history::current_revision(
        set.status
            .as_ref()
            .and_then(|s| s.current_revision.as_deref()),
        &revisions,
        &update_rev,
    );
    let current_name = current_rev.name_any();

    for p in &pods {
        state.updates.observe_updated(
            key,
            &update_name,
            &p.metadata,
            plan::pod_revision(p) == update_name,
        );
    }

    if ctx.gates.enabled(Feature::PreDownloadImageForInPlaceUpdate) && current_name != update_name {
        debug!(
            statefulset = key,
            "image pre-download for Advanced StatefulSet needs kruise-daemon, which kruise-rs does not have yet: no ImagePullJob created"
        );
    }

    let result = pass
        .update_statefulset(&pods, &revisions, &current_rev, &update_rev, collision)
        .await;
    let history = pass
        .truncate_history(&pods, &revisions, &current_name, &update_name)
        .await;
    let mut status = match result {
        Ok(s) => s,
        Err((Some(s), e)) => {
            // As OpenKruise: the status of a failed pass is written too.
            pass.write_status(s).await?;
            return Err(e);
        }
        Err((None, e)) => return Err(e),
    };
    status.conditions = (!pass.conditions.is_empty()).then(|| pass.conditions.clone());
    pass.write_status(status).await?;
    history?;
    Ok(pass
        .requeue
        .0
        .map_or_else(Action::await_change, Action::requeue))
}

/// The set's selector compiled once (an empty selector selects everything; `None` if invalid).
fn compile_selector(set: &StatefulSet) -> Option<Selector> {
    workload::claim::compile_selector(&set.spec.selector)
}

fn selects(
    selector: &Selector,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> bool {
    workload::claim::selects(selector, meta.labels.as_ref())
}

use workload::claim::controller_uid;

type PassResult = Result<StatefulSetStatus, (Option<StatefulSetStatus>, Error)>;

impl Pass<'_> {
    fn pods_api(&self) -> Api<CachedPod> {
        Api::namespaced(self.ctx.client.clone(), &self.ns)
    }

    fn pvcs_api(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.ctx.client.clone(), &self.ns)
    }

    fn controller_ref(&self) -> serde_json::Value {
        json!({
            "apiVersion": API_VERSION, "kind": KIND, "name": self.set_name,
            "uid": self.set.metadata.uid, "controller": true, "blockOwnerDeletion": true,
        })
    }

    fn pod_control(&self) -> PodControl<'_> {
        PodControl {
            client: &self.ctx.client,
            recorder: &self.ctx.recorder,
            owner: &self.owner,
            namespace: &self.ns,
            key: self.key,
            scale: &self.state.scale,
            style: EventStyle::StatefulSet(&self.set_name),
        }
    }

    fn claim(&self, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.state
            .pvcs
            .store()
            .get(&ObjectRef::new(name).within(&self.ns))
    }

    // -----------------------------------------------------------------------------------------
    // Adoption

    /// OpenKruise `adoptOrphanRevisions`: revisions matching the selector without a controller
    /// get this set as controller (after a live check that the set is still this one). Returns
    /// whether any was adopted.
    async fn adopt_orphan_revisions(&self, selector: &Selector) -> Result<bool, Error> {
        let orphans: Vec<Arc<ControllerRevision>> = self
            .state
            .revisions
            .in_namespace(&self.ns)
            .into_iter()
            .filter(|r| controller_uid(&r.metadata).is_none() && selects(selector, &r.metadata))
            .collect();
        if orphans.is_empty() {
            return Ok(false);
        }
        self.check_can_adopt().await?;
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        for r in orphans {
            let patch = json!({"metadata": {"ownerReferences": [self.controller_ref()], "uid": r.metadata.uid}});
            api.patch(
                &r.name_any(),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await?;
        }
        Ok(true)
    }

    /// Live read of the set: adoption only while it is the same object and not being deleted.
    async fn check_can_adopt(&self) -> Result<(), Error> {
        workload::claim::can_adopt::<StatefulSet>(&self.ctx.client, &self.owner())
            .await
            .map_err(Error::Other)
    }

    fn owner(&self) -> workload::claim::Owner<'_> {
        workload::claim::Owner {
            api_version: API_VERSION,
            kind: KIND,
            name: &self.set_name,
            uid: self.set.metadata.uid.as_deref().unwrap_or_default(),
            namespace: &self.ns,
            deleting: self.set.metadata.deletion_timestamp.is_some(),
        }
    }

    /// OpenKruise `getPodsForStatefulSet` (`ClaimPods`): owned pods that still match stay,
    /// owned pods that no longer match (selector or name) are released, matching orphans of
    /// the namespace are adopted. Returns the claimed pods.
    async fn claim_pods(&self, selector: &Selector) -> Result<Vec<Arc<CachedPod>>, Error> {
        workload::claim::claim(
            &self.pods_api(),
            &self.owner(),
            self.state.pods.in_namespace(&self.ns),
            |pod| selects(selector, &pod.metadata) && plan::is_member_of(&self.set_name, pod),
            || async { self.check_can_adopt().await.map_err(|e| e.to_string()) },
            &self.state.resource_versions,
        )
        .await
        .map_err(Error::Other)
    }

    // -----------------------------------------------------------------------------------------
    // Revisions

    async fn ensure_update_revision(
        &self,
        revisions: &[Arc<ControllerRevision>],
    ) -> Result<(ControllerRevision, i32), Error> {
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let collision = self
            .set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        Ok(workload::history::ensure_template_revision(
            &api,
            revisions,
            collision,
            (API_VERSION, KIND),
            &self.set.metadata,
            &self.set.spec.template,
        )
        .await?)
    }

    /// OpenKruise `truncateHistory`: revisions no pod is on, beyond `revisionHistoryLimit`,
    /// oldest first.
    async fn truncate_history(
        &self,
        pods: &[Arc<CachedPod>],
        revisions: &[Arc<ControllerRevision>],
        current: &str,
        update: &str,
    ) -> Result<(), Error> {
        let mut live: BTreeSet<String> = [current.to_owned(), update.to_owned()].into();
        live.extend(pods.iter().map(|p| plan::pod_revision(p).to_owned()));
        let doomed =
            revision::history_to_truncate(revisions, &live, self.set.spec.revision_history_limit);
        if doomed.is_empty() {
            return Ok(());
        }
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        Ok(workload::history::truncate(&api, &doomed).await?)
    }

    // -----------------------------------------------------------------------------------------
    // The pass (OpenKruise updateStatefulSet)

    /// OpenKruise `updateStatefulSet`: slots and condemned pods, scaling, the status counts,
    /// then the rolling update unless the strategy is `OnDelete`.
    async fn update_statefulset(
        &mut self,
        pods: &[Arc<CachedPod>],
        revisions: &[Arc<ControllerRevision>],
        current_rev: &ControllerRevision,
        update_rev: &ControllerRevision,
        collision: i32,
    ) -> PassResult {
        let set = self.set;
        let current_name = current_rev.name_any();
        let update_name = update_rev.name_any();
        let current_template =
            revision::template_from_revision(current_rev).map_err(|e| (None, e.into()))?;
        let update_template =
            revision::template_from_revision(update_rev).map_err(|e| (None, e.into()))?;

        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            current_revision: Some(current_name.clone()),
            update_revision: Some(update_name.clone()),
            collision_count: Some(collision),
            label_selector: Some(kruise_engines::selector::format_label_selector(
                &set.spec.selector,
            )),
            ..StatefulSetStatus::default()
        };

        let Partition {
            replicas,
            condemned,
        } = self
            .partition_pods(
                pods,
                (&current_template, &current_name),
                (&update_template, &update_name),
            )
            .map_err(|e| (None, e))?;
        let scaled = self.scale_pods(&replicas, &condemned, &update_name).await;
        // Whether the scaling stopped the pass, failed or went through, the counts are taken now.
        self.finish_status(
            &mut status,
            &replicas,
            &condemned,
            &current_name,
            &update_name,
        );
        match scaled {
            Err(e) => return Err((Some(status), e)),
            Ok(true) => return Ok(status),
            Ok(false) => {}
        }
        if plan::rolling_update(set).is_none()
            && set
                .spec
                .update_strategy
                .as_ref()
                .and_then(|s| s.type_.as_deref())
                == Some(kruise_api::apps::v1beta1::statefulset_update_strategy_type::ON_DELETE)
        {
            return Ok(status);
        }
        match self
            .rolling_update(
                status.clone(),
                pods,
                revisions,
                &replicas,
                current_rev,
                update_rev,
            )
            .await
        {
            Ok(s) => Ok(s),
            Err(e) => Err((Some(status), e)),
        }
    }

    /// The partition of OpenKruise `updateStatefulSet`: each pod in its ordinal's slot or
    /// condemned (highest ordinal first), and a new pod (`newVersionedStatefulSetPod`, of the
    /// current or update revision by `partition`) for each empty slot that is not reserved.
    fn partition_pods(
        &self,
        pods: &[Arc<CachedPod>],
        current: (&PodTemplateSpec, &str),
        update: (&PodTemplateSpec, &str),
    ) -> Result<Partition, Error> {
        let update_name = update.1;
        let pod_refs: Vec<&CachedPod> = pods.iter().map(|p| p.as_ref()).collect();
        let assignment = plan::assign(&pod_refs, &self.range);
        let n = assignment.slots.len();
        let preparing_as_update = self.ctx.gates.enabled(Feature::PreparingUpdateAsUpdate);
        let mut filled: Vec<Option<bool>> = assignment
            .slots
            .iter()
            .map(|s| {
                s.map(|i| plan::is_pod_update(pods[i].as_ref(), update_name, preparing_as_update))
            })
            .collect();
        let mut replicas: Vec<Option<SlotPod>> = Vec::with_capacity(n);
        for slot in 0..n {
            let ordinal = self.range.start + slot as i32;
            if let Some(i) = assignment.slots[slot] {
                replicas.push(Some(SlotPod::Existing(pods[i].clone())));
                continue;
            }
            if self.range.is_reserved(ordinal) {
                replicas.push(None);
                continue;
            }
            let use_current = plan::is_current_revision_needed(self.set, slot, ordinal, &filled);
            let (template, rev_name) = if use_current { current } else { update };
            filled[slot] = Some(!use_current);
            let pod = self.new_pod(template, rev_name, ordinal)?;
            let view = CachedPod::from(&pod);
            replicas.push(Some(SlotPod::New(Box::new((pod, view)))));
        }
        let condemned: Vec<Arc<CachedPod>> = assignment
            .condemned
            .iter()
            .map(|&i| pods[i].clone())
            .collect();
        Ok(Partition {
            replicas,
            condemned,
        })
    }

    /// The scaling of OpenKruise `updateStatefulSet`: every replica slot (`processReplica`),
    /// the claims of condemned pods (`fixPodClaim`), then the condemned pods
    /// (`processCondemned`). `Ok(true)` when the pass stops here (Go: `shouldExit`).
    async fn scale_pods(
        &mut self,
        replicas: &[Option<SlotPod>],
        condemned: &[Arc<CachedPod>],
        update_name: &str,
    ) -> Result<bool, Error> {
        let first_unhealthy = first_unhealthy_pod(replicas, condemned);
        let monotonic = self.set.spec.pod_management_policy.as_deref()
            != Some(pod_management_policy_type::PARALLEL);
        let mut budget = get_scale_max_unavailable(self.set)?;

        // 1. Replicas, ascending.
        if self
            .process_replicas(replicas, monotonic, &mut budget, update_name)
            .await?
        {
            return Ok(true);
        }

        // 2. Claims of condemned pods follow the retention policy before the pods go.
        if self.auto_delete_pvc {
            for pod in condemned {
                self.fix_claims_retention(pod).await?;
            }
        }

        // 3. Condemned pods, highest ordinal first.
        for pod in condemned {
            if self
                .process_condemned(pod, first_unhealthy.as_deref(), monotonic)
                .await?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// OpenKruise `runForAllWithBreak` over `processReplica`: the slots in ascending order until
    /// one breaks the loop. `Ok(true)` when a monotonic pass stops at a slot.
    async fn process_replicas(
        &mut self,
        replicas: &[Option<SlotPod>],
        monotonic: bool,
        budget: &mut Option<i64>,
        update_name: &str,
    ) -> Result<bool, Error> {
        for entry in replicas.iter().flatten() {
            let (exit, brk, err) = match entry {
                SlotPod::New(pod) => self.process_new(pod, monotonic, budget).await,
                SlotPod::Existing(pod) => {
                    self.process_existing(pod, monotonic, budget, update_name)
                        .await
                }
            };
            if let Some(e) = err {
                return Err(e);
            }
            if monotonic && exit {
                return Ok(true);
            }
            if brk {
                break;
            }
        }
        Ok(false)
    }

    /// OpenKruise `processCondemned` for one condemned pod: `Ok(true)` when a monotonic pass
    /// stops here (the pod terminates, is not yet available, or was just deleted).
    async fn process_condemned(
        &mut self,
        pod: &CachedPod,
        first_unhealthy: Option<&str>,
        monotonic: bool,
    ) -> Result<bool, Error> {
        if podutil::is_terminating(pod) {
            return Ok(monotonic);
        }
        let is_first_unhealthy = first_unhealthy == pod.metadata.name.as_deref();
        if monotonic && !is_first_unhealthy {
            let (avail, wait) = plan::running_and_available(pod, self.min_ready, self.now);
            if !plan::is_running_and_ready(pod) || !avail {
                // (OpenKruise files this wait under the pod's key, where it is lost.)
                self.requeue.push(wait);
                return Ok(true);
            }
        }
        let (modified, _) = self.delete_pod(pod).await?;
        Ok(monotonic && modified)
    }

    /// The status counts of a pass: claims per template over the replica slots, replica counts
    /// over slots and condemned pods (pods about to be created count nowhere).
    fn finish_status(
        &self,
        status: &mut StatefulSetStatus,
        replicas: &[Option<SlotPod>],
        condemned: &[Arc<CachedPod>],
        current: &str,
        update: &str,
    ) {
        let existing: Vec<&CachedPod> = replicas
            .iter()
            .flatten()
            .filter_map(|s| match s {
                SlotPod::Existing(p) => Some(p.as_ref()),
                SlotPod::New(_) => None,
            })
            .collect();
        let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> = existing
            .iter()
            .flat_map(|p| {
                let ord = plan::ordinal_of(p);
                plan::claims_for(self.set, ord)
                    .into_iter()
                    .filter_map(|c| {
                        let name = c.name_any();
                        self.claim(&name).map(|found| (name, found))
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        status.volume_claims = plan::volume_claim_status(self.set, &existing, |name| {
            claims.get(name).map(|c| c.as_ref())
        });
        let mut all = existing;
        all.extend(condemned.iter().map(|p| p.as_ref()));
        plan::count_replicas(status, &all, self.min_ready, current, update, self.now);
    }

    fn new_pod(
        &self,
        template: &PodTemplateSpec,
        revision_name: &str,
        ordinal: i32,
    ) -> Result<Pod, Error> {
        let meta = template.metadata.clone().unwrap_or_default();
        let mut pod = Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                labels: meta.labels,
                annotations: meta.annotations,
                finalizers: meta.finalizers,
                generate_name: Some(format!("{}-", self.set_name)),
                owner_references: Some(vec![revision::controller_ref(
                    API_VERSION,
                    KIND,
                    &self.set_name,
                    self.set.metadata.uid.as_deref().unwrap_or_default(),
                )]),
                ..Default::default()
            },
            spec: template.spec.clone(),
            status: None,
        };
        // The identity, storage and lifecycle edits are the ones repairs make to cached pods.
        crate::workload::edit_as_cached(&mut pod, |pod| {
            plan::update_identity(self.set, pod, ordinal, self.pod_index_label);
            let spec = pod.spec.get_or_insert_with(Default::default);
            spec.hostname = pod.metadata.name.clone();
            if let Some(svc) = self
                .set
                .spec
                .service_name
                .as_ref()
                .filter(|s| !s.is_empty())
            {
                spec.subdomain = Some(svc.clone());
            }
            plan::update_storage(self.set, pod, ordinal);
            pod.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(REVISION_LABEL.to_owned(), revision_name.to_owned());
            let state = if lifecycle::should_transition_pre_normal_to_normal(
                self.set.spec.lifecycle.as_ref(),
                pod,
            ) {
                LifecycleState::Normal
            } else {
                LifecycleState::PreparingNormal
            };
            lifecycle::set_pod_lifecycle(pod, state, self.now);
        })?;
        Ok(pod)
    }

    /// OpenKruise `processReplica` for a slot whose pod does not exist yet: create it (unless
    /// its claims still belong to a deleted pod of the same name).
    async fn process_new(
        &mut self,
        new: &(Pod, CachedPod),
        monotonic: bool,
        budget: &mut Option<i64>,
    ) -> (bool, bool, Option<Error>) {
        let (full, pod) = new;
        let name = pod.name_any();
        if self.auto_delete_pvc {
            let stale = plan::claims_for(self.set, plan::ordinal_of(pod))
                .iter()
                .filter_map(|c| self.claim(&c.name_any()))
                .any(|c| plan::claim_is_stale(self.set, &name, &c));
            if stale {
                debug!(statefulset = self.key, pod = %name, "a claim still belongs to the previous pod; waiting for its garbage collection");
                self.requeue.push(Some(Duration::from_secs(1)));
                return (true, false, None);
            }
        }
        if let Err(e) = self.create_pod(full, pod).await {
            self.set_condition(
                statefulset_condition_type::FAILED_CREATE_POD,
                format!("StatefulPodControl failed to create Pod error: {e}"),
            );
            return (true, false, Some(e));
        }
        if monotonic {
            (true, false, None)
        } else if decrease_and_check_max_unavailable(budget) {
            (false, true, None)
        } else {
            (false, false, None)
        }
    }

    /// OpenKruise `processReplica` for an existing pod.
    async fn process_existing(
        &mut self,
        pod: &CachedPod,
        monotonic: bool,
        budget: &mut Option<i64>,
        update_name: &str,
    ) -> (bool, bool, Option<Error>) {
        if podutil::is_terminal(pod) {
            if decrease_and_check_max_unavailable(budget) {
                return (false, true, None);
            }
            if !podutil::is_terminating(pod)
                && let Err(e) = self.delete_pod(pod).await
            {
                return (true, false, Some(e));
            }
            return (true, false, None);
        }
        if podutil::phase(pod) == podutil::PHASE_PENDING
            && let Err(e) = self.create_claims(pod, plan::ordinal_of(pod)).await
        {
            return (true, false, Some(e));
        }
        if podutil::is_terminating(pod) {
            if monotonic {
                return (true, false, None);
            }
            if decrease_and_check_max_unavailable(budget) {
                return (false, true, None);
            }
        }
        match self.refresh(pod, update_name).await {
            Ok((_, delay)) => self.requeue.push(delay),
            Err(e) => return (true, false, Some(e)),
        }
        if monotonic || budget.is_some() {
            let (avail, wait) = plan::running_and_available(pod, self.min_ready, self.now);
            if !avail && monotonic {
                self.requeue.push(wait);
                return (true, false, None);
            }
            if !avail && decrease_and_check_max_unavailable(budget) {
                self.requeue.push(wait);
                return (false, true, None);
            }
        }
        let retention_match = !self.auto_delete_pvc || self.claims_match_retention(pod);
        if plan::identity_matches(self.set, pod)
            && plan::storage_matches(self.set, pod)
            && retention_match
        {
            return (false, false, None);
        }
        if let Err(e) = self.update_stateful_pod(pod).await {
            self.set_condition(
                statefulset_condition_type::FAILED_UPDATE_POD,
                format!("StatefulPodControl failed to update Pod error: {e}"),
            );
            return (true, false, Some(e));
        }
        (false, false, None)
    }

    fn set_condition(&mut self, type_: &str, message: String) {
        self.conditions
            .retain(|c| c.type_.as_deref() != Some(type_));
        self.conditions.push(StatefulSetCondition {
            type_: Some(type_.to_owned()),
            status: Some("True".to_owned()),
            last_transition_time: Some(Time(self.now)),
            reason: None,
            message: Some(message),
        });
    }

    // -----------------------------------------------------------------------------------------
    // Pod and claim writes

    /// OpenKruise `CreateStatefulPod`: the pod's claims (from the cache, missing ones
    /// created), the pod, then the claims' owner references for the retention policy.
    async fn create_pod(&self, full: &Pod, pod: &CachedPod) -> Result<(), Error> {
        let ordinal = plan::ordinal_of(pod);
        self.create_claims(pod, ordinal).await?;
        let created = self.pod_control().create_pod(full).await?;
        self.state
            .resource_versions
            .expect_object(&created.metadata);
        if self.auto_delete_pvc
            && let Err(e) = self.fix_claims_retention(&created).await
        {
            self.ctx
                .recorder
                .warning(
                    &self.owner,
                    events::FAILED_UPDATE,
                    &EventStyle::StatefulSet(&self.set_name).pod_note(
                        "update",
                        &created.name_any(),
                        Some(&e),
                    ),
                )
                .await;
            return Err(e);
        }
        Ok(())
    }

    /// OpenKruise `createPersistentVolumeClaims`: every claim of the pod that the cache does
    /// not show is created (one the API server already has is fine); a claim being deleted is
    /// an error.
    async fn create_claims(&self, pod: &CachedPod, ordinal: i32) -> Result<(), Error> {
        let pod_name = pod.name_any();
        let mut errors = Vec::new();
        for claim in plan::claims_for(self.set, ordinal) {
            let name = claim.name_any();
            match self.claim(&name) {
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {name} is to be deleted"));
                }
                Some(_) => {}
                None => match self.pvcs_api().create(&PostParams::default(), &claim).await {
                    Ok(_) => {
                        self.ctx
                            .recorder
                            .normal(
                                &self.owner,
                                events::SUCCESSFUL_CREATE,
                                &format!(
                                    "create Claim {name} Pod {pod_name} in StatefulSet {} success",
                                    self.set_name
                                ),
                            )
                            .await;
                    }
                    Err(e) if is_status(&e, 409) => {}
                    Err(e) => {
                        self.ctx
                            .recorder
                            .warning(
                                &self.owner,
                                events::FAILED_CREATE,
                                &format!(
                                    "create Claim {name} for Pod {pod_name} in StatefulSet {} failed error: {e}",
                                    self.set_name
                                ),
                            )
                            .await;
                        errors.push(format!("failed to create PVC {name}: {e}"));
                    }
                },
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Other(aggregate(&errors)))
        }
    }

    fn claims_match_retention(&self, pod: &CachedPod) -> bool {
        let scaled_down = !self.range.contains(plan::ordinal_of(pod));
        plan::claims_for(self.set, plan::ordinal_of(pod))
            .iter()
            .filter_map(|c| self.claim(&c.name_any()))
            .all(|c| plan::claim_owner_matches(self.set, pod, &c, scaled_down))
    }

    /// OpenKruise `UpdatePodClaimForRetentionPolicy`: rewrites the owner references of the
    /// pod's existing claims the retention policy wants otherwise.
    async fn fix_claims_retention(&self, pod: &CachedPod) -> Result<(), Error> {
        let scaled_down = !self.range.contains(plan::ordinal_of(pod));
        for claim in plan::claims_for(self.set, plan::ordinal_of(pod)) {
            let Some(existing) = self.claim(&claim.name_any()) else {
                continue;
            };
            let mut fixed = (*existing).clone();
            if !plan::fix_claim_owners(self.set, pod, &mut fixed, scaled_down) {
                continue;
            }
            match self
                .pvcs_api()
                .replace(&fixed.name_any(), &PostParams::default(), &fixed)
                .await
            {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => {
                    return Err(Error::Other(format!(
                        "Could not update claim {} for delete policy ownerRefs: {e}",
                        fixed.name_any()
                    )));
                }
            }
        }
        Ok(())
    }

    /// OpenKruise `UpdateStatefulPod`: repairs identity (name labels), storage (claim volumes,
    /// creating claims) and claim owner references, writing the pod when any changed.
    async fn update_stateful_pod(&self, pod: &CachedPod) -> Result<(), Error> {
        let api = self.pods_api();
        let name = pod.name_any();
        let ordinal = plan::ordinal_of(pod);
        // The cached pod lacks its volumes other than claims (see the cache's slimming): a
        // storage repair, which adds claim volumes, starts from the pod as the server has it.
        let mut base = if plan::storage_matches(self.set, pod) {
            pod.clone()
        } else {
            api.get(&name).await?
        };
        let mut attempt = 0;
        let result = loop {
            let mut p = base.clone();
            let mut dirty = false;
            if !plan::identity_matches(self.set, &p) {
                plan::update_identity(self.set, &mut p, ordinal, self.pod_index_label);
                dirty = true;
            }
            if !plan::storage_matches(self.set, &p) {
                plan::update_storage(self.set, &mut p, ordinal);
                self.create_claims(&p, ordinal).await?;
                dirty = true;
            }
            if self.auto_delete_pvc && !self.claims_match_retention(&p) {
                self.fix_claims_retention(&p).await?;
                dirty = true;
            }
            if !dirty {
                return Ok(());
            }
            match workload::update_pod(&api, &base, &p).await {
                Ok(written) => {
                    self.state
                        .resource_versions
                        .expect_object(&written.metadata);
                    break Ok(());
                }
                Err(e) if is_status(&e, 409) && attempt < CONFLICT_RETRIES => {
                    attempt += 1;
                    base = api.get(&name).await?;
                }
                Err(e) => break Err(e),
            }
        };
        let note = EventStyle::StatefulSet(&self.set_name);
        match result {
            Ok(()) => {
                self.ctx
                    .recorder
                    .normal(
                        &self.owner,
                        events::SUCCESSFUL_UPDATE,
                        &note.pod_note("update", &name, None),
                    )
                    .await;
                Ok(())
            }
            Err(e) => {
                self.ctx
                    .recorder
                    .warning(
                        &self.owner,
                        events::FAILED_UPDATE,
                        &note.pod_note("update", &name, Some(&e)),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    /// OpenKruise `deletePod`: the preDelete hook moves the pod to `PreparingDelete` instead.
    /// Returns `(modified, actually deleting)`.
    async fn delete_pod(&self, pod: &CachedPod) -> Result<(bool, bool), Error> {
        let hook = self
            .set
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_delete.as_ref());
        let done = self
            .pod_control()
            .delete_or_hold(pod, std::iter::empty(), hook, &self.state.resource_versions)
            .await?;
        Ok(match done {
            Deletion::Deleted => (true, true),
            Deletion::MovedToPreparingDelete => (true, false),
            Deletion::Held => (false, false),
        })
    }

    fn updater(&self) -> PodUpdater<'_, inplace::DefaultRevisionAdapter> {
        PodUpdater {
            client: &self.ctx.client,
            recorder: &self.ctx.recorder,
            owner: &self.owner,
            rvs: &self.state.resource_versions,
            lifecycle: self.set.spec.lifecycle.as_ref(),
            adapter: &inplace::DefaultRevisionAdapter,
        }
    }

    async fn refresh(
        &self,
        pod: &CachedPod,
        update_name: &str,
    ) -> Result<(bool, Option<Duration>), Error> {
        Ok(self
            .updater()
            .refresh_pod_state(pod, update_name, self.now)
            .await?)
    }

    // -----------------------------------------------------------------------------------------
    // Claim expansion (OpenKruise statefulset_resize_pvc.go)

    /// The pod's claims the cache shows (not being deleted), with their templates.
    fn pod_claims(
        &self,
        pod: &CachedPod,
    ) -> Vec<(Arc<PersistentVolumeClaim>, PersistentVolumeClaim)> {
        let ordinal = plan::ordinal_of(pod);
        self.set
            .spec
            .volume_claim_templates
            .iter()
            .flatten()
            .filter_map(|t| {
                let name = plan::claim_name(
                    t.metadata.name.as_deref().unwrap_or(""),
                    &self.set_name,
                    ordinal,
                );
                let claim = self.claim(&name)?;
                claim
                    .metadata
                    .deletion_timestamp
                    .is_none()
                    .then(|| (claim, t.clone()))
            })
            .collect()
    }

    /// OpenKruise `TryPatchPVC`: every claim of the pod smaller than its template is expanded
    /// to the template's resources (its StorageClass must allow expansion) and marked
    /// `apps.kruise.io/owned-by-asts`; a claim that differs in more than size is an error the
    /// user resolves by deleting it.
    async fn expand_claims(&self, pod: &CachedPod) -> Result<(), Error> {
        let pod_name = pod.name_any();
        for (claim, template) in self.pod_claims(pod) {
            let name = claim.name_any();
            match plan::claim_match(&claim, &template) {
                Some(true) => continue,
                Some(false) => {}
                None => {
                    self.ctx
                        .recorder
                        .warning(
                            &self.owner,
                            "FailedUpdatePVC",
                            &format!("failed to update pvc {name}: contains diff other than spec resource, wait pvc to be deleted"),
                        )
                        .await;
                    return Err(Error::Other(format!(
                        "can not patch pvc {name}: contains diff other than spec resource, wait pvc to be deleted"
                    )));
                }
            }
            if let Some(sc) = claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref())
            {
                let scs: Api<k8s_openapi::api::storage::v1::StorageClass> =
                    Api::all(self.ctx.client.clone());
                let found = scs.get_opt(sc).await.map_err(|e| {
                    Error::Other(format!(
                        "could not get sc {sc} for {pod_name} when checking PVC spec: {e}"
                    ))
                })?;
                let Some(found) = found else {
                    return Err(Error::Other(format!(
                        "could not get sc {sc} for {pod_name} when checking PVC spec"
                    )));
                };
                if found.allow_volume_expansion != Some(true) {
                    return Err(Error::Other(format!(
                        "storage class {sc} for {pod_name} does not support volume expansion"
                    )));
                }
            }
            let mut resized = (*claim).clone();
            resized
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(plan::PVC_OWNED_BY_ASTS.to_owned(), self.set_name.clone());
            if let (Some(spec), Some(t)) = (resized.spec.as_mut(), template.spec.as_ref()) {
                spec.resources = t.resources.clone();
            }
            let result = self
                .pvcs_api()
                .replace(&name, &PostParams::default(), &resized)
                .await;
            match &result {
                Ok(_) => {
                    self.ctx
                        .recorder
                        .normal(
                            &self.owner,
                            "SuccessfulResize",
                            &format!(
                                "resize Claim {name} Pod {pod_name} in StatefulSet {} success",
                                self.set_name
                            ),
                        )
                        .await;
                }
                Err(e) => {
                    self.ctx
                        .recorder
                        .warning(
                            &self.owner,
                            "FailedResize",
                            &format!(
                                "resize Claim {name} for Pod {pod_name} in StatefulSet {} failed error: {e}",
                                self.set_name
                            ),
                        )
                        .await;
                }
            }
            result.map_err(|e| Error::Other(format!("could not update claim {name}: {e}")))?;
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Rolling update (OpenKruise rollingUpdateStatefulsetPods)

    /// OpenKruise `rollingUpdateStatefulsetPods`: once in-place updates are seen and no pod
    /// needed a refresh, specified deletes, then the pods to update in `sortPodsToUpdate`
    /// order, within `maxUnavailable`.
    async fn rolling_update(
        &mut self,
        mut status: StatefulSetStatus,
        pods: &[Arc<CachedPod>],
        revisions: &[Arc<ControllerRevision>],
        replicas: &[Option<SlotPod>],
        current_rev: &ControllerRevision,
        update_rev: &ControllerRevision,
    ) -> Result<StatefulSetStatus, Error> {
        let set = self.set;
        let update_name = update_rev.name_any();
        let current_name = current_rev.name_any();
        if !self.state.updates.satisfied(self.key, &update_name).0 {
            debug!(
                statefulset = self.key,
                "in-place updates not yet seen in the cache"
            );
            return Ok(status);
        }
        if self.refresh_pod_states(pods, &update_name).await? {
            return Ok(status);
        }
        let Some(max_unavailable) = rolling_max_unavailable(set)? else {
            // Paused.
            return Ok(status);
        };
        let mut unavailable = Unavailable {
            pods: self.unavailable_pods(replicas),
            max: max_unavailable,
        };
        let specified = self
            .handle_specified_deleted_pods(
                &mut status,
                replicas,
                &mut unavailable,
                &current_name,
                &update_name,
            )
            .await?;

        let slots: Vec<Option<&CachedPod>> = replicas
            .iter()
            .map(|e| e.as_ref().map(SlotPod::pod))
            .collect();
        let order = plan::sort_pods_to_update(
            plan::rolling_update(set),
            &update_name,
            set.spec.replicas.unwrap_or(1),
            &slots,
            self.ctx.gates.enabled(Feature::PreparingUpdateAsUpdate),
        );
        for target in order {
            let Some(SlotPod::Existing(pod)) = &replicas[target] else {
                continue;
            };
            let claims_match = !self.resize_claims
                || self
                    .pod_claims(pod)
                    .iter()
                    .all(|(c, t)| plan::claim_match(c, t) == Some(true));
            if plan::pod_revision(pod) == update_name && claims_match {
                continue;
            }
            let name = pod.name_any();
            if unavailable.blocks(&name) {
                debug!(statefulset = self.key, pod = %name, unavailable = unavailable.pods.len(), max_unavailable = unavailable.max, "waiting for unavailable pods before updating");
                return Ok(status);
            }
            if self.resize_claims && !self.resize_claims_of(pod, claims_match).await? {
                // The claims are being expanded: the pod counts as unavailable and waits.
                unavailable.pods.insert(name);
                continue;
            }
            if specified.contains(&name) || podutil::is_terminating(pod) {
                continue;
            }
            let inplacing = self.in_place_update(pod, revisions, update_rev).await?;
            let need_decrease = if inplacing {
                true
            } else {
                self.delete_pod(pod).await?.1
            };
            unavailable.pods.insert(name);
            if need_decrease && plan::pod_revision(pod) == current_name {
                status.current_replicas -= 1;
            }
        }
        Ok(status)
    }

    /// The pod refresh of OpenKruise `rollingUpdateStatefulsetPods` (`refreshPodState` of every
    /// pod): whether any pod was written.
    async fn refresh_pod_states(
        &mut self,
        pods: &[Arc<CachedPod>],
        update_name: &str,
    ) -> Result<bool, Error> {
        let mut refreshed = false;
        for pod in pods {
            let (written, delay) = self.refresh(pod, update_name).await?;
            self.requeue.push(delay);
            refreshed |= written;
        }
        Ok(refreshed)
    }

    /// The unavailable replicas of OpenKruise `rollingUpdateStatefulsetPods`: unhealthy, in
    /// place update not completed, not yet available (the first wait is asked for), or claims
    /// not yet resized.
    fn unavailable_pods(&mut self, replicas: &[Option<SlotPod>]) -> BTreeSet<String> {
        let mut unavailable: BTreeSet<String> = BTreeSet::new();
        let mut min_wait = Duration::from_secs(300);
        for entry in replicas.iter().flatten() {
            let pod = entry.pod();
            let name = pod.name_any();
            if !plan::is_healthy(pod) || inplace::check_update_completed(pod).is_err() {
                unavailable.insert(name);
                continue;
            }
            let (avail, wait) = plan::running_and_available(pod, self.min_ready, self.now);
            if !avail {
                unavailable.insert(name);
                if let Some(w) = wait.filter(|w| *w <= min_wait) {
                    min_wait = w;
                    self.requeue.push(Some(w));
                }
                continue;
            }
            if self.resize_claims
                && !self
                    .pod_claims(pod)
                    .iter()
                    .all(|(c, _)| plan::claim_ready(c))
            {
                unavailable.insert(name);
            }
        }
        unavailable
    }

    /// OpenKruise `handleSpecifiedDeletedPods`: pods labelled `apps.kruise.io/specified-delete`,
    /// highest slot first, deleted unless available ones would exceed `maxUnavailable`; the
    /// count of a really deleted pod's revision drops. Returns their names.
    async fn handle_specified_deleted_pods(
        &self,
        status: &mut StatefulSetStatus,
        replicas: &[Option<SlotPod>],
        unavailable: &mut Unavailable,
        current_name: &str,
        update_name: &str,
    ) -> Result<BTreeSet<String>, Error> {
        let mut specified: BTreeSet<String> = BTreeSet::new();
        for entry in replicas.iter().rev().flatten() {
            let SlotPod::Existing(pod) = entry else {
                continue;
            };
            let labelled = pod
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(keys::SPECIFIED_DELETE));
            if !labelled {
                continue;
            }
            let name = pod.name_any();
            if unavailable.blocks(&name) {
                continue;
            }
            specified.insert(name.clone());
            let (_, deleting) = self.delete_pod(pod).await?;
            if deleting {
                let rev = plan::pod_revision(pod);
                if rev == current_name {
                    status.current_replicas -= 1;
                } else if rev == update_name {
                    status.updated_replicas -= 1;
                }
            }
            unavailable.pods.insert(name);
        }
        Ok(specified)
    }

    /// The claim resize of OpenKruise `rollingUpdateStatefulsetPods` (`TryPatchPVC` unless the
    /// claims match, then `IsOwnedPVCsCompleted`): whether every claim is resized.
    async fn resize_claims_of(&self, pod: &CachedPod, claims_match: bool) -> Result<bool, Error> {
        if !claims_match {
            self.expand_claims(pod).await?;
        }
        Ok(self
            .pod_claims(pod)
            .iter()
            .all(|(c, t)| plan::claim_patch_completed(c, t)))
    }

    /// OpenKruise `inPlaceUpdatePod`: `Ok(true)` when the pod is being updated in place (or
    /// held for the inPlaceUpdate hook), `Ok(false)` when it must be recreated.
    async fn in_place_update(
        &mut self,
        pod: &CachedPod,
        revisions: &[Arc<ControllerRevision>],
        update_rev: &ControllerRevision,
    ) -> Result<bool, Error> {
        let Some(ru) = plan::rolling_update(self.set) else {
            return Ok(false);
        };
        let policy = ru
            .pod_update_policy
            .as_deref()
            .unwrap_or(pod_update_strategy_type::RECREATE);
        if policy != pod_update_strategy_type::IN_PLACE_IF_POSSIBLE
            && policy != pod_update_strategy_type::IN_PLACE_ONLY
        {
            return Ok(false);
        }
        let old = revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(plan::pod_revision(pod)));
        let grace = ru
            .in_place_update_strategy
            .as_ref()
            .and_then(|s| s.grace_period_seconds)
            .unwrap_or(0);
        let opts = inplace::UpdateOptions {
            grace_period_seconds: grace,
            env_from_metadata: self
                .ctx
                .gates
                .enabled(Feature::InPlaceUpdateEnvFromMetadata),
            ..inplace::UpdateOptions::default()
        };
        let spec = old.and_then(|old| inplace::calculate_update_spec(old, update_rev, &opts));
        let update_name = update_rev.name_any();
        if let Some(spec) = spec {
            let outcome = self
                .updater()
                .update_pod_in_place(pod, &spec, &update_name)
                .await?;
            if outcome == InPlaceOutcome::Updated {
                self.state
                    .updates
                    .expect_updated(self.key, &update_name, &pod.metadata);
                if grace > 0 {
                    self.requeue.push(Some(Duration::from_secs(grace as u64)));
                }
            }
            return Ok(true);
        }
        if policy == pod_update_strategy_type::IN_PLACE_ONLY {
            return Err(Error::Other(format!(
                "find strategy is InPlaceOnly but Pod {} can not update in-place",
                pod.name_any()
            )));
        }
        Ok(false)
    }

    // -----------------------------------------------------------------------------------------
    // Status

    async fn write_status(&self, mut status: StatefulSetStatus) -> Result<(), Error> {
        plan::complete_rolling_update(self.set, &mut status);
        if !plan::status_changed(self.set.status.as_ref(), &status) {
            return Ok(());
        }
        let mut value = serde_json::to_value(&status).map_err(|e| Error::Other(e.to_string()))?;
        if let Some(m) = value.as_object_mut() {
            // A merge patch keeps what it does not name: clear what this status does not have.
            for key in ["conditions", "volumeClaims"] {
                m.entry(key).or_insert(serde_json::Value::Null);
            }
        }
        let api: Api<StatefulSet> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        match api
            .patch_status(
                &self.set_name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": value })),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// Several errors as Go's `utilerrors.NewAggregate(...).Error()`: one alone, else `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// OpenKruise `updateStatefulSet`'s `firstUnhealthyPod`: the unhealthy pod of lowest ordinal
/// among the replicas and the condemned pods.
fn first_unhealthy_pod(
    replicas: &[Option<SlotPod>],
    condemned: &[Arc<CachedPod>],
) -> Option<String> {
    replicas
        .iter()
        .flatten()
        .map(SlotPod::pod)
        .chain(condemned.iter().map(|p| p.as_ref()))
        .filter(|p| !plan::is_healthy(p))
        .min_by_key(|p| plan::ordinal_of(p))
        .and_then(|p| p.metadata.name.clone())
}

/// OpenKruise `getScaleMaxUnavailable`: `scaleStrategy.maxUnavailable` scaled on the replicas,
/// at least 1 (`None`: scaling is not limited).
fn get_scale_max_unavailable(set: &StatefulSet) -> Result<Option<i64>, Error> {
    let Some(v) = set
        .spec
        .scale_strategy
        .as_ref()
        .and_then(|s| s.max_unavailable.as_ref())
    else {
        return Ok(None);
    };
    let replicas = set.spec.replicas.unwrap_or(1);
    match intstr::scaled_value(v, i64::from(replicas), false) {
        Ok(n) => Ok(Some(n.max(1))),
        Err(e) => Err(Error::Other(e.to_string())),
    }
}

/// OpenKruise `decreaseAndCheckMaxUnavailable`: takes one from the scale budget and tells
/// whether it is used up (never, without a budget).
fn decrease_and_check_max_unavailable(budget: &mut Option<i64>) -> bool {
    match budget {
        None => false,
        Some(n) => {
            *n -= 1;
            *n <= 0
        }
    }
}

/// `maxUnavailable` of OpenKruise `rollingUpdateStatefulsetPods`: the rolling update's, scaled
/// on the replicas, at least 1 (1 without `rollingUpdate`); `None` while the update is paused.
fn rolling_max_unavailable(set: &StatefulSet) -> Result<Option<i64>, Error> {
    let Some(ru) = plan::rolling_update(set) else {
        return Ok(Some(1));
    };
    if ru.paused.unwrap_or(false) {
        return Ok(None);
    }
    let v = ru
        .max_unavailable
        .clone()
        .unwrap_or(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1));
    let n = intstr::scaled_value(&v, i64::from(set.spec.replicas.unwrap_or(1)), false)
        .map_err(|e| Error::Other(e.to_string()))?;
    Ok(Some(n.max(1)))
}
