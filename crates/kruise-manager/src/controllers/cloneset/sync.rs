//! The I/O half of one CloneSet sync: reads the caches, asks [`super::plan`] what to do, and
//! performs it (pods, PVCs, revisions, status), recording expectations around every write.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::apps::v1alpha1::{CloneSet, CloneSetStatus, update_strategy_type};
use kruise_api::apps::v1beta1::ImagePullJob;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tracing::{debug, info, warn};

use super::plan::{self, Diffs, PodFacts, UpdateFacts};
use super::{Error, State, pods, predownload, status};
use kruise_engines::lifecycle::LifecycleState;
use kruise_engines::revision;
use kruise_engines::{inplace, podutil, updatesort};
use kruise_runtime::events;
use kruise_runtime::features::Feature;
use kruise_runtime::runner::Context;

use crate::workload::{
    self,
    pods::{Deletion, EventStyle, NewPod, PodControl},
};

/// How many pods one sync refreshes or updates concurrently. OpenKruise does these one after
/// the other; the pods are independent, and bounded concurrency makes large rollouts several
/// times faster without flooding the API server.
const POD_WRITE_CONCURRENCY: usize = 16;

fn is_owned_by(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    uid: &str,
) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

fn labels_of(pod: &CachedPod) -> Option<&BTreeMap<String, String>> {
    pod.metadata.labels.as_ref()
}

fn instance_id(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<&str> {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(keys::CLONESET_INSTANCE_ID))
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

/// Everything one sync works on, read once from the caches.
struct Snapshot {
    pods: Vec<Arc<CachedPod>>,
    pvcs: Vec<Arc<PersistentVolumeClaim>>,
    revisions: Vec<Arc<ControllerRevision>>,
}

fn snapshot(cs: &CloneSet, state: &State) -> Snapshot {
    let ns = cs.metadata.namespace.as_deref();
    let uid = cs.metadata.uid.as_deref().unwrap_or_default();
    let owned = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.namespace.as_deref() == ns && is_owned_by(meta, uid)
    };
    let pods = state
        .pods
        .owned_by(uid)
        .into_iter()
        .filter(|p| owned(&p.metadata) && podutil::is_active(p))
        .collect();
    let pvcs = state
        .pvcs
        .owned_by(uid)
        .into_iter()
        .filter(|p| owned(&p.metadata) && p.metadata.deletion_timestamp.is_none())
        .collect();
    let mut revisions: Vec<Arc<ControllerRevision>> = state
        .revisions
        .owned_by(uid)
        .into_iter()
        .filter(|r| owned(&r.metadata))
        .collect();
    revision::sort_revisions(&mut revisions);
    Snapshot {
        pods,
        pvcs,
        revisions,
    }
}

/// One sync (OpenKruise `doReconcile`): the active revisions, image pre-download, the status
/// (written first), scale and update (`syncCloneSet`), then `truncatePodsToDelete`,
/// `truncateHistory` and when to look again.
pub(super) async fn sync(
    cs: &CloneSet,
    ctx: &Context,
    state: &State,
    key: &str,
) -> Result<Action, Error> {
    let now = jiff::Timestamp::now();
    let snap = snapshot(cs, state);

    // Objects we wrote must be visible in the cache before we decide again.
    for p in &snap.pods {
        if !state.resource_versions.is_satisfied_object(&p.metadata).0 {
            debug!(cloneset = key, pod = %p.name_any(), "waiting for the cache to catch up");
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
    }

    let (current_rev, update_rev, collision_count) =
        get_active_revisions(cs, ctx, &snap.revisions).await?;
    let update_name = update_rev.metadata.name.clone().unwrap_or_default();
    let current_name = current_rev.metadata.name.clone().unwrap_or_default();

    if ctx.gates.enabled(Feature::PreDownloadImageForInPlaceUpdate) {
        pre_download(cs, ctx, state, &current_rev, &update_rev).await;
    }

    let knobs = resolve_knobs(cs, ctx, state).await?;

    // Status, from the pods this sync started with (as OpenKruise's calculateStatus). It is
    // written before any pod is created or deleted: it depends on the snapshot only, and a
    // sync cut short (a crash, a restart, an API error in the middle of a large scale) must
    // still leave a status that tells how many pods exist.
    let pod_refs: Vec<&CachedPod> = snap.pods.iter().map(|p| p.as_ref()).collect();
    let mut new_status = status::calculate_status(
        cs,
        &pod_refs,
        &update_name,
        &current_name,
        collision_count,
        Some(knobs.partition),
        now,
    );
    let deadline_check = status::set_progressing_condition(cs, &mut new_status, now);
    let held = write_status(cs, ctx, state, key, &new_status).await?;

    let control = SyncControl {
        cs,
        ctx,
        state,
        key,
        snap: &snap,
        knobs: &knobs,
        current_rev: &current_rev,
        update_rev: &update_rev,
        now,
    };
    let mut requeue = control.sync_cloneset().await?;

    truncate_pods_to_delete(cs, ctx, &snap).await?;
    truncate_history(cs, ctx, &snap, &current_name, &update_name).await?;

    requeue = shortest(requeue, min_ready_wait(cs, &snap, now));
    requeue = shortest(requeue, deadline_check);
    // A held status write must be written later even when nothing else changes.
    requeue = shortest(requeue, held);
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}

/// OpenKruise `getActiveRevisions`: the current revision (the status's, else the update
/// revision), the update revision (found or created) and the collision count.
async fn get_active_revisions(
    cs: &CloneSet,
    ctx: &Context,
    revisions: &[Arc<ControllerRevision>],
) -> Result<(ControllerRevision, ControllerRevision, i32), Error> {
    let (update_rev, collision_count) = ensure_update_revision(cs, ctx, revisions).await?;
    let current_rev = crate::workload::history::current_revision(
        cs.status
            .as_ref()
            .and_then(|s| s.current_revision.as_deref()),
        revisions,
        &update_rev,
    );
    Ok((current_rev, update_rev, collision_count))
}

/// The scale and update numbers of the spec ([`plan::resolve_knobs`]); invalid ones are
/// reported as a `FailedUpdate` Event and fail the sync.
async fn resolve_knobs(cs: &CloneSet, ctx: &Context, state: &State) -> Result<plan::Knobs, Error> {
    let replicas = cs.spec.replicas.unwrap_or(1);
    let strategy = cs.spec.update_strategy.clone().unwrap_or_default();
    let scale_strategy = cs.spec.scale_strategy.clone().unwrap_or_default();
    let knobs = plan::resolve_knobs(&plan::KnobInputs {
        replicas,
        partition: strategy.partition.as_ref(),
        max_surge: strategy.max_surge.as_ref(),
        max_unavailable: strategy.max_unavailable.as_ref(),
        scale_max_unavailable: scale_strategy.max_unavailable.as_ref(),
        paused: strategy.paused.unwrap_or(false),
        exclude_preparing_delete: state.exclude_preparing_delete
            || cs
                .labels()
                .get(keys::CLONESET_SCALING_EXCLUDE_PREPARING_DELETE)
                .map(String::as_str)
                == Some("true"),
        allow_rollback: ctx.gates.enabled(Feature::CloneSetPartitionRollback),
    });
    match knobs {
        Ok(k) => Ok(k),
        Err(e) => {
            ctx.recorder
                .warning(
                    &events::object_ref(cs),
                    events::FAILED_UPDATE,
                    &e.to_string(),
                )
                .await;
            Err(e.into())
        }
    }
}

/// Pods that are ready but not yet available become available after minReadySeconds: when to
/// look again for them.
fn min_ready_wait(cs: &CloneSet, snap: &Snapshot, now: jiff::Timestamp) -> Option<Duration> {
    let min_ready = cs.spec.min_ready_seconds.unwrap_or(0);
    let waiting = min_ready > 0
        && snap.pods.iter().any(|p| {
            status::is_pod_update_ready(p, 0, now)
                && !status::is_pod_update_ready(p, min_ready, now)
        });
    waiting.then(|| Duration::from_secs(min_ready as u64 + 1))
}

/// What the scale and update steps of one sync work on: the CloneSet, what the sync read, its
/// numbers and revisions (OpenKruise: the arguments of `syncCloneSet`, `Scale` and `Update`).
struct SyncControl<'a> {
    cs: &'a CloneSet,
    ctx: &'a Context,
    state: &'a State,
    key: &'a str,
    snap: &'a Snapshot,
    knobs: &'a plan::Knobs,
    current_rev: &'a ControllerRevision,
    update_rev: &'a ControllerRevision,
    now: jiff::Timestamp,
}

impl SyncControl<'_> {
    /// OpenKruise `syncCloneSet`: scale, and update when scaling wrote nothing. Returns when to
    /// look again.
    async fn sync_cloneset(&self) -> Result<Option<Duration>, Error> {
        if self.scale().await? {
            return Ok(None);
        }
        self.update().await
    }
}

/// The earlier of two optional wake-ups.
fn shortest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

// ---------------------------------------------------------------------------------------------
// Revisions

/// Finds the revision equal to the CloneSet's current template or creates it (upstream history
/// semantics: an equal older revision is re-used with a bumped revision number; a name clash with
/// different content bumps the collision count). Returns the revision and the collision count.
async fn ensure_update_revision(
    cs: &CloneSet,
    ctx: &Context,
    revisions: &[Arc<ControllerRevision>],
) -> Result<(ControllerRevision, i32), Error> {
    let api: Api<ControllerRevision> =
        Api::namespaced(ctx.client.clone(), &cs.namespace().unwrap_or_default());
    let collision = cs
        .status
        .as_ref()
        .and_then(|s| s.collision_count)
        .unwrap_or(0);
    let data = revision::template_patch(&cs.spec.template)?;
    let next = revision::next_revision(revisions);
    let build = |collision: i32| -> Result<ControllerRevision, revision::RevisionError> {
        let mut r = revision::new_controller_revision(
            &cs.metadata,
            pods::owner_ref(cs),
            cs.spec
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.as_ref()),
            data.clone(),
            next,
            Some(collision),
        );
        r.metadata.annotations = Some(revision::revision_annotations(
            cs.metadata.annotations.as_ref(),
            cs.spec.volume_claim_templates.as_deref().unwrap_or(&[]),
        )?);
        Ok(r)
    };
    Ok(workload::history::ensure_revision(&api, revisions, collision, build).await?)
}

// ---------------------------------------------------------------------------------------------
// Image pre-download

/// The pre-download step of one sync (see [`predownload`]); like OpenKruise, its failures are
/// logged (and reported as Events) but do not fail the sync.
async fn pre_download(
    cs: &CloneSet,
    ctx: &Context,
    state: &State,
    current: &ControllerRevision,
    update: &ControllerRevision,
) {
    let ns = cs.namespace().unwrap_or_default();
    let jobs_api: Api<ImagePullJob> = Api::namespaced(ctx.client.clone(), &ns);
    let update_name = update.name_any();
    if current.name_any() == update_name {
        // One revision again: the CloneSet's jobs are done with.
        let uid = cs.metadata.uid.as_deref().unwrap_or_default();
        let Some(store) = &state.image_pull_jobs else {
            return;
        };
        for job in store.state().iter().filter(|j| {
            j.metadata.namespace.as_deref() == Some(ns.as_str()) && is_owned_by(&j.metadata, uid)
        }) {
            let name = job.name_any();
            info!(cloneset = %cs.name_any(), job = %name, "deleting ImagePullJob of the finished update");
            if let Err(e) = jobs_api.delete(&name, &DeleteParams::default()).await {
                warn!(cloneset = %cs.name_any(), job = %name, error = %e, "failed to delete ImagePullJob");
            }
        }
        return;
    }
    if !predownload::min_updated_ready_reached(cs, &update_name) {
        return;
    }
    let in_place = inplace_spec(cs, ctx, current, update).is_some();
    let label = match predownload::decide(cs, current, update, in_place) {
        predownload::Decision::Done => return,
        predownload::Decision::Ignore(reason) => {
            debug!(cloneset = %cs.name_any(), revision = %update_name, reason, "skipped creating ImagePullJobs");
            keys::IMAGE_PRE_DOWNLOAD_IGNORED
        }
        predownload::Decision::Create(jobs) => {
            let cs_ref = events::object_ref(cs);
            for job in jobs {
                let name = job.name_any();
                let image = job.spec.image.clone();
                match jobs_api.create(&PostParams::default(), &job).await {
                    Ok(_) => {
                        ctx.recorder
                            .normal(
                                &cs_ref,
                                "CreatedImagePullJob",
                                &format!("created ImagePullJob {name} for image: {image}"),
                            )
                            .await;
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => {
                        warn!(cloneset = %cs.name_any(), job = %name, error = %e, "failed to create ImagePullJob");
                        ctx.recorder
                            .normal(
                                &cs_ref,
                                "FailedCreateImagePullJob",
                                &format!("failed to create ImagePullJob {name}: {e}"),
                            )
                            .await;
                    }
                }
            }
            keys::IMAGE_PRE_DOWNLOAD_CREATED
        }
    };
    let revs: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &ns);
    let patch = json!({"metadata": {"labels": {label: "true"}}});
    match revs
        .patch(
            &update_name,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
    {
        Ok(written) => state.resource_versions.expect_object(&written.metadata),
        Err(e) => {
            warn!(cloneset = %cs.name_any(), revision = %update_name, error = %e, "failed to label the revision")
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scale

fn is_specified_delete(cs: &CloneSet, pod: &CachedPod) -> bool {
    labels_of(pod)
        .and_then(|l| l.get(keys::SPECIFIED_DELETE))
        .is_some()
        || cs
            .spec
            .scale_strategy
            .as_ref()
            .and_then(|s| s.pods_to_delete.as_ref())
            .is_some_and(|names| {
                names
                    .iter()
                    .any(|n| Some(n.as_str()) == pod.metadata.name.as_deref())
            })
}

fn pod_facts(
    cs: &CloneSet,
    pod: &CachedPod,
    update_name: &str,
    preparing_update_as_update: bool,
    now: jiff::Timestamp,
) -> PodFacts {
    let state = status::lifecycle_state(pod);
    let updated = revision::equal_to_revision_hash(labels_of(pod), update_name)
        || (preparing_update_as_update && state == "PreparingUpdate");
    PodFacts {
        updated,
        preparing_delete: state == "PreparingDelete",
        specified_delete: is_specified_delete(cs, pod),
        available: status::is_pod_available(pod, cs.spec.min_ready_seconds.unwrap_or(0), now),
    }
}

/// OpenKruise `getPlannedDeletedPods`: the pods specified for deletion, the pods in
/// PreparingDelete, and how many pods these are together.
fn get_planned_deleted_pods<'p>(
    cs: &CloneSet,
    pods: &[&'p CachedPod],
) -> (Vec<&'p CachedPod>, Vec<&'p CachedPod>, i32) {
    let specified: Vec<&CachedPod> = pods
        .iter()
        .copied()
        .filter(|p| is_specified_delete(cs, p))
        .collect();
    let pre_deleting: Vec<&CachedPod> = pods
        .iter()
        .copied()
        .filter(|p| status::lifecycle_state(p) == "PreparingDelete")
        .collect();
    let planned: BTreeSet<&str> = specified
        .iter()
        .chain(pre_deleting.iter())
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let num_to_delete = planned.len() as i32;
    (specified, pre_deleting, num_to_delete)
}

/// The pods of `pods`, in order, that may be deleted now: unavailable ones, and available ones
/// while `ready_limit` (OpenKruise `deleteReadyLimit`, shared by the steps of `Scale`) lasts.
fn pods_can_delete<'p>(
    pods: Vec<&'p CachedPod>,
    ready_limit: &mut i32,
    now: jiff::Timestamp,
) -> Vec<&'p CachedPod> {
    pods.into_iter()
        .filter(|pod| {
            if !status::is_pod_available(pod, 0, now) {
                true
            } else if *ready_limit > 0 {
                *ready_limit -= 1;
                true
            } else {
                false
            }
        })
        .collect()
}

impl SyncControl<'_> {
    /// OpenKruise `Scale`: PreparingDelete pods back to normal when pods lack, then at most one
    /// of: scale out, delete pods in PreparingDelete, specified deletes, scale in. Returns
    /// whether anything was written.
    async fn scale(&self) -> Result<bool, Error> {
        let (cs, ctx) = (self.cs, self.ctx);
        let update_name = self.update_rev.name_any();
        let current_name = self.current_rev.name_any();
        let pods: Vec<&CachedPod> = self.snap.pods.iter().map(|p| p.as_ref()).collect();

        // 1. Pods planned for deletion; cancel PreparingDelete when scaled back up.
        let (specified, pre_deleting, num_to_delete) = get_planned_deleted_pods(cs, &pods);
        if self
            .manage_preparing_delete(&pods, &pre_deleting, num_to_delete)
            .await?
        {
            return Ok(true);
        }

        // 2. The numbers.
        let gate_pu = ctx.gates.enabled(Feature::PreparingUpdateAsUpdate);
        let facts: Vec<PodFacts> = pods
            .iter()
            .map(|p| pod_facts(cs, p, &update_name, gate_pu, self.now))
            .collect();
        let diffs = plan::calculate_diffs(self.knobs, &facts, current_name == update_name);
        debug!(cloneset = self.key, ?diffs, "scale plan");
        if diffs.scale_up_num > diffs.scale_up_limit {
            ctx.recorder
                .warning(
                    &events::object_ref(cs),
                    events::SCALE_UP_LIMITED,
                    &format!(
                        "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: {}",
                        diffs.scale_up_limit
                    ),
                )
                .await;
        }

        // 3. Scale out.
        if diffs.scale_up_num > 0 {
            return self.scale_out(&pods, &diffs).await;
        }

        // 4. Delete pods already in PreparingDelete (hooks released).
        if !pre_deleting.is_empty() && self.delete_pods(&pre_deleting).await? {
            return Ok(true);
        }

        // 5. Specified deletes, limited for ready pods by maxUnavailable.
        let mut ready_limit = diffs.delete_ready_limit;
        let specified_only: Vec<&CachedPod> = specified
            .iter()
            .copied()
            .filter(|p| {
                !pre_deleting
                    .iter()
                    .any(|q| q.metadata.name == p.metadata.name)
            })
            .collect();
        if !specified_only.is_empty() {
            let deletable = pods_can_delete(specified_only, &mut ready_limit, self.now);
            if self.delete_pods(&deletable).await? {
                return Ok(true);
            }
        }

        // 6. Scale in: old-revision pods first, each group in deletion order.
        if diffs.scale_down_num > 0 {
            if num_to_delete > 0 {
                return Ok(false);
            }
            let chosen = self.choose_pods_to_delete(&pods, &diffs).await;
            let deletable = pods_can_delete(chosen, &mut ready_limit, self.now);
            return self.delete_pods(&deletable).await;
        }
        Ok(false)
    }

    /// OpenKruise `managePreparingDelete`: unless the preDelete hook marks pods not ready, pods
    /// in PreparingDelete (not specified for deletion) go back to PreparingNormal while the
    /// CloneSet lacks pods. Returns whether any pod was written.
    async fn manage_preparing_delete(
        &self,
        pods: &[&CachedPod],
        pre_deleting: &[&CachedPod],
        num_to_delete: i32,
    ) -> Result<bool, Error> {
        let mark_not_ready_pre_delete = self
            .cs
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_delete.as_ref())
            .and_then(|h| h.mark_pod_not_ready)
            .unwrap_or(false);
        if mark_not_ready_pre_delete {
            return Ok(false);
        }
        let mut diff = self.knobs.replicas - pods.len() as i32 + num_to_delete;
        let mut modified = false;
        for pod in pre_deleting {
            if diff <= 0 {
                break;
            }
            if is_specified_delete(self.cs, pod) {
                continue;
            }
            set_lifecycle(
                self.ctx,
                self.state,
                pod,
                LifecycleState::PreparingNormal,
                false,
            )
            .await?;
            modified = true;
            diff -= 1;
        }
        Ok(modified)
    }

    /// The scale out of OpenKruise `Scale` and `createPods`: `scaleUpLimit` new pods, the first
    /// `scaleUpNumOldRevision` of them of the current revision, on free instance ids (those
    /// of claims left behind first). Returns whether any pod was created.
    async fn scale_out(&self, pods: &[&CachedPod], diffs: &Diffs) -> Result<bool, Error> {
        let (cs, ctx) = (self.cs, self.ctx);
        let update_name = self.update_rev.name_any();
        let current_name = self.current_rev.name_any();
        let creations = diffs.scale_up_limit.max(0) as usize;
        let current_creations = diffs.scale_up_num_old_revision.max(0) as usize;
        let pod_ids: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| instance_id(&p.metadata))
            .map(str::to_owned)
            .collect();
        let pvc_ids: BTreeSet<String> = self
            .snap
            .pvcs
            .iter()
            .filter_map(|p| instance_id(&p.metadata))
            .map(str::to_owned)
            .collect();
        let ids = pods::available_ids(creations, &pod_ids, &pvc_ids, &mut rand::rng());
        let existing_pvcs: BTreeSet<String> = self.snap.pvcs.iter().map(|p| p.name_any()).collect();
        let current_template = revision::template_from_revision(self.current_rev)
            .unwrap_or_else(|_| cs.spec.template.clone());
        let short = ctx.gates.enabled(Feature::CloneSetShortHash);
        let created_at = jiff::Timestamp::now();
        let new_pods: Vec<k8s_openapi::api::core::v1::Pod> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                if i < current_creations {
                    pods::new_pod(cs, &current_template, &current_name, id, short, created_at)
                } else {
                    pods::new_pod(cs, &cs.spec.template, &update_name, id, short, created_at)
                }
            })
            .collect();
        self.create_pods(new_pods, &existing_pvcs).await
    }

    /// OpenKruise `choosePodsToDelete`: `scaleDownNum` pods to scale in, old-revision pods
    /// first, each group in deletion order.
    async fn choose_pods_to_delete<'p>(
        &self,
        pods: &[&'p CachedPod],
        diffs: &Diffs,
    ) -> Vec<&'p CachedPod> {
        let update_name = self.update_rev.name_any();
        let (old, new): (Vec<&CachedPod>, Vec<&CachedPod>) = pods
            .iter()
            .copied()
            .partition(|p| !revision::equal_to_revision_hash(labels_of(p), &update_name));
        let (n_old, n_new) = plan::split_scale_down(
            diffs.scale_down_num,
            diffs.scale_down_num_old_revision,
            old.len(),
            new.len(),
        );
        let min_ready = self.cs.spec.min_ready_seconds.unwrap_or(0);
        let constraints = spread_constraints(self.cs);
        let node_labels = if constraints.is_empty() {
            std::collections::HashMap::new()
        } else {
            node_labels_of(self.ctx, pods).await
        };
        let ranking = Ranking {
            constraints: &constraints,
            node_labels: &node_labels,
            now: self.now,
            min_ready,
        };
        let mut chosen = choose_for_deletion(&old, n_old, &ranking);
        chosen.extend(choose_for_deletion(&new, n_new, &ranking));
        chosen
    }

    /// OpenKruise `createPods`' writes: the pods and their missing claims, in slow-start
    /// batches. Returns whether any pod was created.
    async fn create_pods(
        &self,
        new_pods: Vec<k8s_openapi::api::core::v1::Pod>,
        existing_pvcs: &BTreeSet<String>,
    ) -> Result<bool, Error> {
        let cs = self.cs;
        let new: Vec<NewPod> = new_pods
            .into_iter()
            .map(|pod| {
                let id = instance_id(&pod.metadata).unwrap_or_default().to_string();
                NewPod {
                    claims: pods::claims_for(cs, &id).into_values().collect(),
                    pod,
                }
            })
            .collect();
        let owner = events::object_ref(cs);
        let created = pod_control(cs, self.ctx, self.state, self.key, &owner)
            .create_slow_start(new, existing_pvcs)
            .await?;
        Ok(created > 0)
    }

    /// OpenKruise `deletePods`: deletes `targets` (or moves them to PreparingDelete when the
    /// preDelete hook holds them) and the PVCs with the same instance id. Returns whether
    /// anything was written.
    async fn delete_pods(&self, targets: &[&CachedPod]) -> Result<bool, Error> {
        let cs = self.cs;
        let pre_delete = cs
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_delete.as_ref());
        let owner = events::object_ref(cs);
        let control = pod_control(cs, self.ctx, self.state, self.key, &owner);
        let mut modified = false;
        for pod in targets {
            let id = instance_id(&pod.metadata);
            let mut claims: Vec<&PersistentVolumeClaim> = Vec::new();
            for c in &self.snap.pvcs {
                if id.is_some() && instance_id(&c.metadata) == id {
                    claims.push(c);
                }
            }
            let done = control
                .delete_or_hold(pod, claims, pre_delete, &self.state.resource_versions)
                .await?;
            modified |= done != Deletion::Held;
        }
        Ok(modified)
    }
}

/// What the scale-in order depends on besides the pods.
struct Ranking<'r> {
    /// Topology keys of the template's `topologySpreadConstraints` (empty: same-node ranking).
    constraints: &'r [updatesort::SpreadConstraint],
    /// Labels of the nodes the pods run on.
    node_labels: &'r std::collections::HashMap<String, BTreeMap<String, String>>,
    now: jiff::Timestamp,
    min_ready: i32,
}

/// The template's topology spread constraints as OpenKruise's `GetPodSpreadConstraint`: one
/// entry per constraint, its topology key only.
fn spread_constraints(cs: &CloneSet) -> Vec<updatesort::SpreadConstraint> {
    cs.spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| updatesort::SpreadConstraint {
                    topology_key: c.topology_key.clone(),
                    limited_values: Vec::new(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Labels of every node one of `pods` is bound to; nodes that cannot be read are left out (their
/// pods are then not ranked by topology, as in OpenKruise).
async fn node_labels_of(
    ctx: &Context,
    pods: &[&CachedPod],
) -> std::collections::HashMap<String, BTreeMap<String, String>> {
    use k8s_openapi::api::core::v1::Node;
    let nodes: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()))
        .filter(|n| !n.is_empty())
        .collect();
    let mut out = std::collections::HashMap::new();
    // Nodes come from the shared cache, started on the first scale-in that needs them (as
    // OpenKruise's cache-backed Get); until its initial list is complete, read them live.
    let cache = ctx.cache.lazy_cluster_informer::<Node>();
    if kruise_runtime::cache::read_synced(&cache, NODE_CACHE_WAIT).await {
        for name in nodes {
            if let Some(node) = cache.store().get(&ObjectRef::new(name)) {
                out.insert(
                    name.to_owned(),
                    node.metadata.labels.clone().unwrap_or_default(),
                );
            }
        }
        return out;
    }
    let api: Api<Node> = Api::all(ctx.client.clone());
    let fetched = futures::future::join_all(nodes.iter().map(|n| api.get_opt(n))).await;
    for (name, node) in nodes.into_iter().zip(fetched) {
        match node {
            Ok(Some(node)) => {
                out.insert(name.to_owned(), node.metadata.labels.unwrap_or_default());
            }
            Ok(None) => {}
            Err(e) => debug!(node = name, error = %e, "cannot read node for scale-in ranking"),
        }
    }
    out
}

/// How long a scale-in waits for the node cache's initial list before reading nodes live.
const NODE_CACHE_WAIT: Duration = Duration::from_secs(3);

/// The `n` pods of `pods` to delete first (OpenKruise `choosePodsToDelete`): spread-constraint
/// ranks when the template has topology spread constraints, same-node ranks otherwise, and
/// availability with the CloneSet's `minReadySeconds`.
fn choose_for_deletion<'a>(
    pods: &[&'a CachedPod],
    n: usize,
    r: &Ranking<'_>,
) -> Vec<&'a CachedPod> {
    if n == 0 {
        return Vec::new();
    }
    if n >= pods.len() {
        return pods.to_vec();
    }
    let ranks = if r.constraints.is_empty() {
        updatesort::same_node_ranks(pods)
    } else {
        updatesort::spread_constraint_ranks(pods, r.constraints, r.node_labels)
    };
    let available = |p: &CachedPod| updatesort::available_in_lifecycle(p, r.min_ready, r.now);
    let order = updatesort::sort_for_deletion_with(pods, &ranks, Some(&available));
    order.into_iter().take(n).map(|i| pods[i]).collect()
}

/// The shared pod control for `cs`'s writes.
fn pod_control<'a>(
    cs: &'a CloneSet,
    ctx: &'a Context,
    state: &'a State,
    key: &'a str,
    owner: &'a k8s_openapi::api::core::v1::ObjectReference,
) -> PodControl<'a> {
    PodControl {
        client: &ctx.client,
        recorder: &ctx.recorder,
        owner,
        namespace: cs.metadata.namespace.as_deref().unwrap_or_default(),
        key,
        scale: &state.scale,
        style: EventStyle::CloneSet,
    }
}

/// Moves a pod to lifecycle `new_state` through the shared lifecycle control (not-ready key
/// first with `mark_not_ready`, then the state label and timestamp).
async fn set_lifecycle(
    ctx: &Context,
    state: &State,
    pod: &CachedPod,
    new_state: LifecycleState,
    mark_not_ready: bool,
) -> Result<(), Error> {
    Ok(workload::lifecycle::set_state(
        &ctx.client,
        &state.resource_versions,
        pod,
        new_state,
        mark_not_ready,
    )
    .await?)
}

// ---------------------------------------------------------------------------------------------
// Update

/// Step 3 of OpenKruise `Update`: the pods waiting for the update (not at the update revision,
/// or at it when rolling back), less those in PreparingDelete and those still in an in-place
/// grace period.
fn wait_update_indexes(pods: &[&CachedPod], diffs: &Diffs, update_name: &str) -> Vec<usize> {
    let mut wait: Vec<usize> = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let at_update = revision::equal_to_revision_hash(labels_of(pod), update_name);
        let wait_update = if diffs.update_num > 0 {
            !at_update
        } else {
            at_update
        };
        if !wait_update {
            continue;
        }
        match status::lifecycle_state(pod) {
            "PreparingDelete" => {}
            "Updated" => wait.push(i),
            _ => {
                if !inplace::has_grace_period_pending(pod) {
                    wait.push(i);
                }
            }
        }
    }
    wait
}

impl SyncControl<'_> {
    /// OpenKruise `Update`: unless `OnDelete`, refresh every pod; unless one was written or the
    /// update is paused, update the pods the numbers allow, towards the update revision (or
    /// back to the current one). Returns when to look again.
    async fn update(&self) -> Result<Option<Duration>, Error> {
        let strategy = self.cs.spec.update_strategy.clone().unwrap_or_default();
        let type_ = strategy
            .type_
            .as_deref()
            .unwrap_or(update_strategy_type::RE_CREATE);
        if type_ == update_strategy_type::ON_DELETE {
            return Ok(None);
        }
        let update_name = self.update_rev.name_any();
        let current_name = self.current_rev.name_any();
        let pods: Vec<&CachedPod> = self.snap.pods.iter().map(|p| p.as_ref()).collect();

        // 1. Refresh every pod (in-place completion, lifecycle transitions).
        let (modified, action) = self.refresh_pod_states(&pods, &update_name).await?;
        if modified || strategy.paused.unwrap_or(false) {
            return Ok(action);
        }

        // 2. How many to update, and towards which revision.
        let facts: Vec<PodFacts> = pods
            .iter()
            .map(|p| pod_facts(self.cs, p, &update_name, false, self.now))
            .collect();
        let diffs: Diffs = plan::calculate_diffs(self.knobs, &facts, current_name == update_name);
        if diffs.update_num == 0 {
            return Ok(action);
        }
        let target = if diffs.update_num > 0 {
            self.update_rev
        } else {
            self.current_rev
        };

        // 3. Candidates.
        let wait = wait_update_indexes(&pods, &diffs, &update_name);
        // 4. Order: default, priority, scatter, PreparingUpdate first.
        let wait = updatesort::sort_update_indexes(
            &pods,
            wait,
            strategy.priority_strategy.as_ref(),
            strategy.scatter_strategy.as_ref(),
        );
        // 5. Limit by |updateNum| and maxUnavailable.
        let chosen = self.limit_update_indexes(&pods, &diffs, wait, &target.name_any());

        // 6. Update them — each first checked against its PodUnavailableBudget; the first one
        //    refused ends the step, which is tried again in a second.
        let (admitted, refused) = self
            .admitted_by_budgets(chosen.into_iter().map(|i| pods[i]))
            .await?;
        self.update_pods(type_, target, admitted.into_iter())
            .await?;
        Ok(if refused {
            shortest(action, Some(Duration::from_secs(1)))
        } else {
            action
        })
    }

    /// OpenKruise's PodUnavailableBudget check in `Update` (with gate
    /// `PodUnavailableBudgetUpdateGate`): the pods, in order, up to the first one its budget
    /// refuses to let become unavailable (each admitted one spends a unit and is recorded in
    /// the budget's `unavailablePods`, so the pod webhook lets its update through), and whether
    /// one was refused.
    async fn admitted_by_budgets<'p>(
        &self,
        chosen: impl Iterator<Item = &'p CachedPod>,
    ) -> Result<(Vec<&'p CachedPod>, bool), Error> {
        let Some(budgets) = &self.state.budgets else {
            return Ok((chosen.collect(), false));
        };
        let mut admitted = Vec::new();
        for pod in chosen {
            let related = pod
                .annotations()
                .get(kruise_api::keys::PUB_RELATED)
                .filter(|n| !n.is_empty());
            let budget = related.and_then(|name| {
                budgets.store().get(
                    &kube::runtime::reflector::ObjectRef::new(name)
                        .within(&pod.namespace().unwrap_or_default()),
                )
            });
            if let Some(budget) = budget
                && kruise_webhook::pod::budget::counts_against_budget(pod)
            {
                let verdict = kruise_webhook::pod::budget::admit(
                    Some(&self.ctx.client),
                    &budget,
                    pod,
                    &kruise_webhook::pod::budget::Disruption {
                        operation: kruise_engines::podunavailablebudget::Operation::Update,
                        in_place_vertical_scaling: self
                            .ctx
                            .gates
                            .enabled(Feature::InPlacePodVerticalScaling),
                        username: "kruise-manager",
                        dry_run: false,
                    },
                )
                .await
                .map_err(Error::Other)?;
                if verdict.is_some() {
                    return Ok((admitted, true));
                }
            }
            admitted.push(pod);
        }
        Ok((admitted, false))
    }

    /// Step 1 of OpenKruise `Update` (`refreshPodState` of every pod). Pods are independent:
    /// they are refreshed concurrently (bounded), then the first error is reported. Returns
    /// whether any pod was written and when to look again.
    async fn refresh_pod_states(
        &self,
        pods: &[&CachedPod],
        update_name: &str,
    ) -> Result<(bool, Option<Duration>), Error> {
        let mut requeue: Option<Duration> = None;
        let mut modified = false;
        let refreshes: Vec<_> = pods
            .iter()
            .map(|pod| self.refresh_pod(pod, update_name))
            .collect();
        let results: Vec<Result<(bool, Option<Duration>), Error>> =
            futures::stream::iter(refreshes)
                .buffer_unordered(POD_WRITE_CONCURRENCY)
                .collect()
                .await;
        let mut first_error = None;
        for r in results {
            match r {
                Ok((m, delay)) => {
                    modified |= m;
                    requeue = shortest(requeue, delay);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        Ok((modified, requeue))
    }

    /// OpenKruise `limitUpdateIndexes`: the candidates, in order, that `|updateNum|` and
    /// `maxUnavailable` allow to update now.
    fn limit_update_indexes(
        &self,
        pods: &[&CachedPod],
        diffs: &Diffs,
        wait: Vec<usize>,
        target_name: &str,
    ) -> Vec<usize> {
        let min_ready = self.cs.spec.min_ready_seconds.unwrap_or(0);
        let ufacts: Vec<UpdateFacts> = pods
            .iter()
            .map(|p| UpdateFacts {
                available: status::is_pod_available(p, min_ready, self.now),
                at_target: revision::equal_to_revision_hash(labels_of(p), target_name),
            })
            .collect();
        plan::limit_update_indexes(diffs, wait, &ufacts)
    }

    /// Step 6 of OpenKruise `Update`: `updatePod` for each chosen pod, concurrently (bounded);
    /// the first error is reported.
    async fn update_pods<'p>(
        &self,
        type_: &str,
        target: &ControllerRevision,
        chosen: impl Iterator<Item = &'p CachedPod>,
    ) -> Result<(), Error> {
        let updates: Vec<_> = chosen
            .map(|pod| self.update_pod(type_, target, pod))
            .collect();
        let results: Vec<Result<(), Error>> = futures::stream::iter(updates)
            .buffer_unordered(POD_WRITE_CONCURRENCY)
            .collect()
            .await;
        results.into_iter().collect::<Result<Vec<()>, Error>>()?;
        Ok(())
    }

    /// OpenKruise `refreshPodState`, through the shared [`workload::inplace::PodUpdater`]:
    /// in-place update completion and lifecycle transitions. Returns whether the pod was
    /// written and when to look again (grace periods).
    async fn refresh_pod(
        &self,
        pod: &CachedPod,
        update_name: &str,
    ) -> Result<(bool, Option<Duration>), Error> {
        let adapter = inplace::TemplateHashRevisionAdapter {
            short_hash: self.ctx.gates.enabled(Feature::CloneSetShortHash),
        };
        let owner = events::object_ref(self.cs);
        let updater = pod_updater(self.cs, self.ctx, self.state, &owner, &adapter);
        Ok(updater
            .refresh_pod_state(pod, update_name, self.now)
            .await?)
    }

    /// OpenKruise `updatePod`: in place when the strategy and the revisions allow it (an
    /// `InPlaceOnly` pod that cannot be is an error), else marked for recreation with the
    /// `apps.kruise.io/specified-delete` label (the next scale deletes and replaces it).
    async fn update_pod(
        &self,
        type_: &str,
        target: &ControllerRevision,
        pod: &CachedPod,
    ) -> Result<(), Error> {
        let (cs, ctx, state) = (self.cs, self.ctx, self.state);
        let ns = pod.namespace().unwrap_or_default();
        let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &ns);
        let target_name = target.name_any();
        let name = pod.name_any();
        let regarding = events::object_ref(cs);
        if type_ == update_strategy_type::IN_PLACE_IF_POSSIBLE
            || type_ == update_strategy_type::IN_PLACE_ONLY
        {
            let old_rev = self
                .snap
                .revisions
                .iter()
                .map(|r| r.as_ref())
                .find(|r| revision::equal_to_revision_hash(labels_of(pod), &r.name_any()));
            let spec = old_rev.and_then(|old| inplace_spec(cs, ctx, old, target));
            if let Some(spec) = spec {
                let adapter = inplace::TemplateHashRevisionAdapter {
                    short_hash: ctx.gates.enabled(Feature::CloneSetShortHash),
                };
                pod_updater(cs, ctx, state, &regarding, &adapter)
                    .update_pod_in_place(pod, &spec, &target_name)
                    .await?;
                return Ok(());
            }
            if type_ == update_strategy_type::IN_PLACE_ONLY {
                let msg = format!(
                    "find Pod {name} update strategy is InPlaceOnly but can not update in-place"
                );
                ctx.recorder
                    .warning(&regarding, events::FAILED_UPDATE, &msg)
                    .await;
                return Err(Error::Other(msg));
            }
            info!(pod = %name, "cannot update in place; falling back to recreate");
        }
        // Recreate: mark the pod; the next scale pass deletes it and creates its replacement.
        if labels_of(pod)
            .and_then(|l| l.get(keys::SPECIFIED_DELETE))
            .is_none()
        {
            let patch = json!({"metadata": {"labels": {keys::SPECIFIED_DELETE: "true"}}});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
            {
                Ok(written) => state.resource_versions.expect_object(&written.metadata),
                Err(e) => {
                    ctx.recorder
                        .warning(
                            &regarding,
                            events::FAILED_UPDATE_POD_RECREATE,
                            &format!("failed to patch pod specified-delete {name} for update(revision {target_name}): {e}"),
                        )
                        .await;
                    return Err(e.into());
                }
            }
        }
        ctx.recorder
            .normal(
                &regarding,
                events::SUCCESSFUL_UPDATE_POD_RECREATE,
                &format!(
                    "successfully patch pod {name} specified-delete for update(revision {target_name})"
                ),
            )
            .await;
        Ok(())
    }
}

fn pod_updater<'a>(
    cs: &'a CloneSet,
    ctx: &'a Context,
    state: &'a State,
    owner: &'a k8s_openapi::api::core::v1::ObjectReference,
    adapter: &'a inplace::TemplateHashRevisionAdapter,
) -> workload::inplace::PodUpdater<'a, inplace::TemplateHashRevisionAdapter> {
    workload::inplace::PodUpdater {
        client: &ctx.client,
        recorder: &ctx.recorder,
        owner,
        rvs: &state.resource_versions,
        lifecycle: cs.spec.lifecycle.as_ref(),
        adapter,
    }
}

/// The in-place update from `old` to `new`, if the difference allows one.
fn inplace_spec(
    cs: &CloneSet,
    ctx: &Context,
    old: &ControllerRevision,
    new: &ControllerRevision,
) -> Option<inplace::UpdateSpec> {
    let strategy = cs.spec.update_strategy.as_ref();
    let opts = inplace::UpdateOptions {
        grace_period_seconds: strategy
            .and_then(|s| s.in_place_update_strategy.as_ref())
            .and_then(|s| s.grace_period_seconds)
            .unwrap_or(0),
        env_from_metadata: ctx.gates.enabled(Feature::InPlaceUpdateEnvFromMetadata),
        // OpenKruise's defaultCalculateInPlaceUpdateSpec: with the gate, revisions whose
        // `kruise.io/cloneset-volumeclaimtemplate-hash` differ are not updated in place, so the
        // recreated pod gets claims of the new templates.
        recreate_pod_when_change_vct: ctx
            .gates
            .enabled(Feature::RecreatePodWhenChangeVCTInCloneSetGate),
        ..inplace::UpdateOptions::default()
    };
    inplace::calculate_update_spec(old, new, &opts)
}

// ---------------------------------------------------------------------------------------------
// Status and housekeeping

/// Writes the CloneSet's status when it changed; a change of replica counts only, within
/// [`crate::workload::STATUS_COUNTS_INTERVAL`] of this CloneSet's last status write, is held
/// back instead: returns when to reconcile again to write it.
async fn write_status(
    cs: &CloneSet,
    ctx: &Context,
    state: &State,
    key: &str,
    new_status: &CloneSetStatus,
) -> Result<Option<Duration>, Error> {
    if !status::status_changed(cs.status.as_ref(), new_status) {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    if status::only_counts_changed(cs.status.as_ref(), new_status)
        && let Some(wait) = state.status_writes.hold(key, started)
    {
        debug!(
            cloneset = key,
            ?wait,
            "replica counts changed; status write held back"
        );
        return Ok(Some(wait));
    }
    let ns = cs.namespace().unwrap_or_default();
    let api: Api<CloneSet> = Api::namespaced(ctx.client.clone(), &ns);
    let patch = json!({"status": new_status});
    api.patch_status(
        &cs.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    state.status_writes.wrote(key, started);
    Ok(None)
}

async fn truncate_pods_to_delete(
    cs: &CloneSet,
    ctx: &Context,
    snap: &Snapshot,
) -> Result<(), Error> {
    let Some(names) = cs
        .spec
        .scale_strategy
        .as_ref()
        .and_then(|s| s.pods_to_delete.as_ref())
    else {
        return Ok(());
    };
    let existing: BTreeSet<&str> = snap
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    let kept: Vec<&String> = names
        .iter()
        .filter(|n| existing.contains(n.as_str()))
        .collect();
    if kept.len() == names.len() {
        return Ok(());
    }
    let ns = cs.namespace().unwrap_or_default();
    let api: Api<CloneSet> = Api::namespaced(ctx.client.clone(), &ns);
    // Guarded by resourceVersion: a concurrent user edit wins and we retry on the next sync.
    let patch = json!({
        "metadata": {"resourceVersion": cs.resource_version()},
        "spec": {"scaleStrategy": {"podsToDelete": kept}},
    });
    match api
        .patch(
            &cs.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn truncate_history(
    cs: &CloneSet,
    ctx: &Context,
    snap: &Snapshot,
    current: &str,
    update: &str,
) -> Result<(), Error> {
    let all_pods: Vec<Arc<CachedPod>> = snap.pods.clone();
    let live = revision::live_revisions(
        &snap.revisions,
        current,
        update,
        all_pods.iter().map(|p| labels_of(p)),
    );
    let doomed =
        revision::history_to_truncate(&snap.revisions, &live, cs.spec.revision_history_limit);
    if doomed.is_empty() {
        return Ok(());
    }
    let api: Api<ControllerRevision> =
        Api::namespaced(ctx.client.clone(), &cs.namespace().unwrap_or_default());
    Ok(workload::history::truncate(&api, &doomed).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_pod(name: &str, node: &str) -> CachedPod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}]},
        }))
        .unwrap()
    }

    /// Zone a: three pods on three nodes; zone b: two pods on one node. Without constraints the
    /// crowded node loses a pod; with a zone constraint the crowded zone does.
    #[test]
    fn scale_in_ranks_by_topology_when_the_template_spreads() {
        let pods = [
            running_pod("a1", "n1"),
            running_pod("a2", "n2"),
            running_pod("a3", "n5"),
            running_pod("b1", "n3"),
            running_pod("b2", "n3"),
        ];
        let refs: Vec<&CachedPod> = pods.iter().collect();
        let zone =
            |z: &str| BTreeMap::from([("topology.kubernetes.io/zone".to_owned(), z.to_owned())]);
        let node_labels = std::collections::HashMap::from([
            ("n1".to_owned(), zone("a")),
            ("n2".to_owned(), zone("a")),
            ("n5".to_owned(), zone("a")),
            ("n3".to_owned(), zone("b")),
        ]);
        let now: jiff::Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let none: Vec<updatesort::SpreadConstraint> = Vec::new();
        let plain = Ranking {
            constraints: &none,
            node_labels: &node_labels,
            now,
            min_ready: 0,
        };
        let chosen = choose_for_deletion(&refs, 1, &plain);
        assert!(
            chosen[0].name_any().starts_with('b'),
            "same-node ranking: {}",
            chosen[0].name_any()
        );

        let zones = [updatesort::SpreadConstraint {
            topology_key: "topology.kubernetes.io/zone".into(),
            limited_values: Vec::new(),
        }];
        let spread = Ranking {
            constraints: &zones,
            ..plain
        };
        let chosen = choose_for_deletion(&refs, 1, &spread);
        assert!(
            chosen[0].name_any().starts_with('a'),
            "zone ranking: {}",
            chosen[0].name_any()
        );
        assert_eq!(choose_for_deletion(&refs, 9, &spread).len(), 5);
    }

    #[test]
    fn spread_constraints_take_the_topology_keys_of_the_template() {
        let cs: CloneSet = serde_json::from_value(json!({
            "metadata": {"name": "cs"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [], "topologySpreadConstraints": [
                {"topologyKey": "topology.kubernetes.io/zone", "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"},
                {"topologyKey": "kubernetes.io/hostname", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}}},
        }))
        .unwrap();
        let keys: Vec<String> = spread_constraints(&cs)
            .into_iter()
            .map(|c| c.topology_key)
            .collect();
        assert_eq!(
            keys,
            ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
        );
    }
}

/// The status write of a sync against a scripted API, with the shared cache's informers.
#[cfg(test)]
mod status_write_tests {
    use super::*;
    use kruise_runtime::features::FeatureGates;
    use kruise_runtime::runner::ControllerConfig;
    use kruise_runtime::testing::{ListReply, Reply, ScriptedApi};

    use crate::controllers::cloneset::tests::{cloneset, pod as ready_pod};

    /// A count-only change right after this CloneSet's last status write is held — and the
    /// sync asks to run again within the interval, so the held write is made even when nothing
    /// else changes (the requeue must survive the rest of the sync).
    #[tokio::test]
    async fn a_held_count_only_status_change_is_requeued_not_dropped() {
        let api = ScriptedApi::new();
        api.list(
            "/api/v1/pods",
            ListReply::Now(vec![
                ready_pod("web-a"),
                ready_pod("web-b"),
                ready_pod("web-c"),
            ]),
        );
        let ctx = Arc::new(Context::new(
            api.client(),
            FeatureGates::default(),
            ControllerConfig::default(),
        ));
        let pods = ctx.cache.informer::<CachedPod>();
        let pvcs = ctx.cache.informer::<PersistentVolumeClaim>();
        let revisions = ctx.cache.informer::<ControllerRevision>();
        kruise_runtime::cache::wait_for_cache_sync(
            &[pods.synced(), pvcs.synced(), revisions.synced()],
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        let state = State {
            pods: pods.clone(),
            pvcs,
            revisions,
            scale: Default::default(),
            resource_versions: Default::default(),
            status_writes: Default::default(),
            exclude_preparing_delete: false,
            image_pull_jobs: None,
            budgets: None,
            expectation_leakage: Default::default(),
        };
        let mut cs: CloneSet = serde_json::from_value(cloneset(3)).unwrap();
        // The cached status: what this sync computes, but one ready pod short.
        let (rev, collision) = ensure_update_revision(&cs, &ctx, &[]).await.unwrap();
        let rev_name = rev.metadata.name.clone().unwrap();
        let cached = pods.in_namespace("default");
        let refs: Vec<&CachedPod> = cached.iter().map(|p| p.as_ref()).collect();
        let mut old = status::calculate_status(
            &cs,
            &refs,
            &rev_name,
            &rev_name,
            collision,
            Some(0),
            jiff::Timestamp::now(),
        );
        status::set_progressing_condition(&cs, &mut old, jiff::Timestamp::now());
        assert_eq!(old.ready_replicas, 3);
        old.ready_replicas = 2;
        old.available_replicas = 2;
        cs.status = Some(old);

        let status_path = "/apis/apps.kruise.io/v1alpha1/namespaces/default/clonesets/web/status";
        let written = Reply::Object(serde_json::to_value(&cs).unwrap());
        api.reply("PATCH", status_path, [written.clone(), written]);
        let status_writes = || {
            api.writes()
                .iter()
                .filter(|w| w.path == status_path)
                .count()
        };
        // First sync: written at once (no write yet within the interval).
        let first = sync(&cs, &ctx, &state, "default/web").await.unwrap();
        assert_eq!(status_writes(), 1);
        assert_eq!(first, Action::await_change(), "nothing else to wait for");
        // Same change again (the cache has not shown the write): held, and requeued.
        let second = sync(&cs, &ctx, &state, "default/web").await.unwrap();
        assert_eq!(status_writes(), 1, "held, not written");
        assert_ne!(second, Action::await_change(), "a held write was dropped");
        let wait = format!("{second:?}");
        assert!(
            wait.contains("requeue_after: Some("),
            "held write must be retried after the interval: {wait}"
        );
        // After the interval it is written.
        tokio::time::sleep(crate::workload::STATUS_COUNTS_INTERVAL).await;
        sync(&cs, &ctx, &state, "default/web").await.unwrap();
        assert_eq!(status_writes(), 2);
        ctx.shutdown.cancel();
    }
}
