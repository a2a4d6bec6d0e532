//! One pass over one UnitedDeployment (OpenKruise v1.9.0 `ReconcileUnitedDeployment.Reconcile`,
//! `manageSubsets`, `manageSubsetProvision`, the subset control and adapters), see the module
//! documentation of [`super`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise_api::apps::v1alpha1::{CloneSet, UnitedDeployment, UnitedDeploymentStatus};
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_engines::revision;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams,
    PropagationPolicy,
};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use kruise_runtime::events::object_ref;
use kruise_runtime::runner::Context;

use super::plan::{self, Requeue, Subset};
use super::template::{Kind, apply_subset_template};
use super::{Error, State};
use crate::workload::is_status;

/// Retries of a workload or status update on conflict (OpenKruise's `updateRetries`).
const UPDATE_RETRIES: usize = 5;

/// A subset workload as cached, of any of the four kinds.
#[derive(Clone)]
pub enum Workload {
    /// `apps/v1` StatefulSet.
    StatefulSet(Arc<StatefulSet>),
    /// Advanced StatefulSet.
    AdvancedStatefulSet(Arc<AdvancedStatefulSet>),
    /// CloneSet.
    CloneSet(Arc<CloneSet>),
    /// `apps/v1` Deployment.
    Deployment(Arc<Deployment>),
}

impl Workload {
    fn meta(&self) -> &ObjectMeta {
        match self {
            Workload::StatefulSet(w) => w.meta(),
            Workload::AdvancedStatefulSet(w) => w.meta(),
            Workload::CloneSet(w) => w.meta(),
            Workload::Deployment(w) => w.meta(),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Workload::StatefulSet(_) => Kind::StatefulSet,
            Workload::AdvancedStatefulSet(_) => Kind::AdvancedStatefulSet,
            Workload::CloneSet(_) => Kind::CloneSet,
            Workload::Deployment(_) => Kind::Deployment,
        }
    }

    fn to_value(&self) -> Result<Value, Error> {
        let v = match self {
            Workload::StatefulSet(w) => serde_json::to_value(w.as_ref()),
            Workload::AdvancedStatefulSet(w) => serde_json::to_value(w.as_ref()),
            Workload::CloneSet(w) => serde_json::to_value(w.as_ref()),
            Workload::Deployment(w) => serde_json::to_value(w.as_ref()),
        };
        v.map_err(|e| Error::Other(e.to_string()))
    }

    /// `(spec.replicas, status.replicas, status.readyReplicas)`.
    fn counts(&self) -> (i32, i32, i32) {
        match self {
            Workload::StatefulSet(w) => {
                let s = w.status.as_ref();
                (
                    w.spec.replicas.unwrap_or(0),
                    s.map_or(0, |s| s.replicas),
                    s.and_then(|s| s.ready_replicas).unwrap_or(0),
                )
            }
            Workload::AdvancedStatefulSet(w) => {
                let s = w.status.as_ref();
                (
                    w.spec.replicas.unwrap_or(0),
                    s.map_or(0, |s| s.replicas),
                    s.map_or(0, |s| s.ready_replicas),
                )
            }
            Workload::CloneSet(w) => {
                let s = w.status.as_ref();
                (
                    w.spec.replicas.unwrap_or(0),
                    s.map_or(0, |s| s.replicas),
                    s.map_or(0, |s| s.ready_replicas),
                )
            }
            Workload::Deployment(w) => {
                let s = w.status.as_ref();
                (
                    w.spec.replicas.unwrap_or(0),
                    s.and_then(|s| s.replicas).unwrap_or(0),
                    s.and_then(|s| s.ready_replicas).unwrap_or(0),
                )
            }
        }
    }

    /// The adapters' `GetSpecPartition` (0 when absent): a CloneSet's partition scaled to its
    /// replicas (rounded up); a StatefulSet's `rollingUpdate.partition`, or with `OnDelete` the
    /// number of its pods not at its revision; none for a Deployment.
    fn partition(&self, pods: &[Arc<CachedPod>]) -> i32 {
        let on_delete_partition = |meta: &ObjectMeta| {
            let rev = meta
                .labels
                .as_ref()
                .and_then(|l| l.get(keys::KRUISE_CONTROLLER_REVISION_HASH));
            pods.iter()
                .filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(keys::KRUISE_CONTROLLER_REVISION_HASH))
                        != rev
                })
                .count() as i32
        };
        match self {
            Workload::StatefulSet(w) => {
                let us = w.spec.update_strategy.as_ref();
                if us.and_then(|u| u.type_.as_deref()) == Some("OnDelete") {
                    on_delete_partition(&w.metadata)
                } else {
                    us.and_then(|u| u.rolling_update.as_ref())
                        .and_then(|r| r.partition)
                        .unwrap_or(0)
                }
            }
            Workload::AdvancedStatefulSet(w) => {
                let us = w.spec.update_strategy.as_ref();
                if us.and_then(|u| u.type_.as_deref()) == Some("OnDelete") {
                    on_delete_partition(&w.metadata)
                } else {
                    us.and_then(|u| u.rolling_update.as_ref())
                        .and_then(|r| r.partition)
                        .unwrap_or(0)
                }
            }
            Workload::CloneSet(w) => w
                .spec
                .update_strategy
                .as_ref()
                .and_then(|u| u.partition.as_ref())
                .and_then(|p| {
                    kruise_engines::intstr::scaled_value(
                        p,
                        i64::from(w.spec.replicas.unwrap_or(1)),
                        true,
                    )
                    .ok()
                })
                .map_or(0, |v| v as i32),
            Workload::Deployment(_) => 0,
        }
    }
}

fn api_of(ctx: &Context, ns: &str, kind: Kind) -> Api<DynamicObject> {
    let ar = match kind {
        Kind::StatefulSet => ApiResource::erase::<StatefulSet>(&()),
        Kind::AdvancedStatefulSet => ApiResource::erase::<AdvancedStatefulSet>(&()),
        Kind::CloneSet => ApiResource::erase::<CloneSet>(&()),
        Kind::Deployment => ApiResource::erase::<Deployment>(&()),
    };
    Api::namespaced_with(ctx.client.clone(), ns, &ar)
}

/// The workloads of `kind` the UnitedDeployment `uid` controls, from the owner index.
fn owned_workloads(state: &State, kind: Kind, uid: &str) -> Vec<Workload> {
    match kind {
        Kind::StatefulSet => controlled(&state.statefulsets, uid, Workload::StatefulSet),
        Kind::AdvancedStatefulSet => controlled(
            &state.advanced_statefulsets,
            uid,
            Workload::AdvancedStatefulSet,
        ),
        Kind::CloneSet => controlled(&state.clonesets, uid, Workload::CloneSet),
        Kind::Deployment => controlled(&state.deployments, uid, Workload::Deployment),
    }
}

/// The objects of `informer` whose controller is `uid`, wrapped as subset workloads.
fn controlled<K: kruise_runtime::cache::Cached>(
    informer: &kruise_runtime::cache::Informer<K>,
    uid: &str,
    wrap: fn(Arc<K>) -> Workload,
) -> Vec<Workload> {
    informer
        .owned_by(uid)
        .into_iter()
        .filter(|w| crate::workload::claim::controller_uid(w.meta()) == Some(uid))
        .map(wrap)
        .collect()
}

/// The pods a subset workload controls (a Deployment's through its ReplicaSets).
fn workload_pods(state: &State, w: &Workload) -> Vec<Arc<CachedPod>> {
    let uid = w.meta().uid.as_deref().unwrap_or_default();
    let controlled = |p: &Arc<CachedPod>, owner: &str| {
        crate::workload::claim::controller_uid(&p.metadata) == Some(owner)
    };
    match w {
        Workload::Deployment(_) => state
            .replicasets
            .owned_by(uid)
            .iter()
            .filter(|rs| crate::workload::claim::controller_uid(&rs.metadata) == Some(uid))
            .flat_map(|rs| {
                let rs_uid = rs.metadata.uid.clone().unwrap_or_default();
                state
                    .pods
                    .owned_by(&rs_uid)
                    .into_iter()
                    .filter(move |p| controlled(p, &rs_uid))
            })
            .collect(),
        _ => state
            .pods
            .owned_by(uid)
            .into_iter()
            .filter(|p| controlled(p, uid))
            .collect(),
    }
}

/// What one pass works with.
struct Pass<'a> {
    ud: &'a UnitedDeployment,
    ctx: &'a Context,
    state: &'a State,
    ns: String,
    kind: Kind,
    now: jiff::Timestamp,
    requeue: Requeue,
}

/// The pass (see the module documentation of [`super`]).
pub async fn sync(ud: &UnitedDeployment, ctx: &Context, state: &State) -> Result<Action, Error> {
    let Some(kind) = Kind::of(ud) else {
        warn!(ud = %scaffold_key(ud), "UnitedDeployment has no subset template");
        return Ok(Action::await_change());
    };
    let mut pass = Pass {
        ud,
        ctx,
        state,
        ns: ud.namespace().unwrap_or_default(),
        kind,
        now: jiff::Timestamp::now(),
        requeue: Requeue::default(),
    };
    let old_status = ud.status.clone().unwrap_or_default();
    let mut status = old_status.clone();
    plan::init_status(ud, &mut status, pass.now);

    let (current, update, collision) = match Box::pin(pass.revisions(&status)).await {
        Ok(r) => r,
        Err(e) => {
            pass.warn("FailedRevisionProvision", &e.to_string()).await;
            return Err(e);
        }
    };
    let current_name = current.name_any();
    let expected = update.name_any();
    plan::set_updated_condition(&mut status, &current_name, &expected, pass.now);

    let mut existing = match Box::pin(pass.existing_subsets(&expected)).await {
        Ok(e) => e,
        Err(e) => {
            pass.warn("Failed FindSubsets", &e.to_string()).await;
            return Err(e);
        }
    };

    if plan::is_adaptive(ud) {
        let names: Vec<String> = existing.keys().cloned().collect();
        for name in names {
            let Some(subset) = existing.get_mut(&name) else {
                continue;
            };
            if plan::reserves(ud) {
                let patches = plan::reserved_adaptive_status(
                    ud,
                    &name,
                    subset,
                    &mut status,
                    pass.now,
                    &mut pass.requeue,
                );
                pass.patch_reserved(&patches).await?;
            } else {
                plan::default_adaptive_status(
                    ud,
                    &name,
                    subset,
                    &mut status,
                    pass.now,
                    &mut pass.requeue,
                );
            }
        }
    }

    let next_replicas = match plan::allocate(ud, &existing) {
        Ok(r) => r,
        Err(e) => {
            pass.warn(
                "Failed SpecifySubsetReplicas",
                &format!("Specified subset replicas is ineffective: {e}"),
            )
            .await;
            return Err(Error::Other(e));
        }
    };
    if plan::reserves(ud) {
        for (name, subset) in &existing {
            plan::reserved_post_process(
                name,
                subset,
                &mut status,
                next_replicas.get(name).copied().unwrap_or(0),
                pass.now,
            );
        }
    }
    let next_partitions = plan::next_partitions(ud, &next_replicas);

    if let Err(e) = Box::pin(pass.manage_subsets(
        &mut status,
        &existing,
        &next_replicas,
        &next_partitions,
        &expected,
    ))
    .await
    {
        pass.warn("FailedUpdateSubset", &e.to_string()).await;
        return Err(e);
    }

    let mut selector = kruise_engines::selector::format_label_selector(&ud.spec.selector);
    if plan::reserves(ud) {
        selector.push_str(&format!(",{}=false", keys::UNITED_DEPLOYMENT_RESERVED_POD));
    }
    status.label_selector = Some(selector);
    if collision > 0 || status.collision_count.is_some() {
        status.collision_count = Some(collision);
    }
    for subset in existing.values_mut() {
        subset.updated_revision = expected.clone();
    }
    plan::calculate_status(
        &mut status,
        &existing,
        &next_replicas,
        &next_partitions,
        &current_name,
        &expected,
    );
    plan::remove_condition(&mut status, "SubsetFailure");
    Box::pin(pass.write_status(&old_status, status)).await?;
    Ok(match pass.requeue.0 {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

fn scaffold_key(ud: &UnitedDeployment) -> String {
    crate::scaffold::key(ud)
}

impl Pass<'_> {
    async fn warn(&self, reason: &str, note: &str) {
        self.ctx
            .recorder
            .warning(&object_ref(self.ud), reason, note)
            .await;
    }

    async fn normal(&self, reason: &str, note: &str) {
        self.ctx
            .recorder
            .normal(&object_ref(self.ud), reason, note)
            .await;
    }

    /// `constructUnitedDeploymentRevisions`: the current and update revisions and the
    /// collision count (history over `revisionHistoryLimit` truncated first).
    async fn revisions(
        &self,
        status: &UnitedDeploymentStatus,
    ) -> Result<(ControllerRevision, ControllerRevision, i32), Error> {
        let uid = self.ud.metadata.uid.as_deref().unwrap_or_default();
        let mut revisions: Vec<Arc<ControllerRevision>> = self
            .state
            .revisions
            .owned_by(uid)
            .into_iter()
            .filter(|r| crate::workload::claim::controller_uid(&r.metadata) == Some(uid))
            .collect();
        revision::sort_revisions(&mut revisions);
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let limit = self.ud.spec.revision_history_limit.unwrap_or(10).max(0) as usize;
        if revisions.len() > limit {
            let exceed = revisions.len() - limit;
            let mut live = BTreeSet::new();
            live.insert(status.current_revision.clone());
            if let Some(u) = status
                .update_status
                .as_ref()
                .and_then(|u| u.updated_revision.clone())
            {
                live.insert(u);
            }
            let doomed: Vec<String> = revisions[..exceed]
                .iter()
                .map(|r| r.name_any())
                .filter(|n| !live.contains(n))
                .collect();
            crate::workload::history::truncate(&api, &doomed).await?;
            revisions.drain(..exceed);
        }
        let data = revision_data(self.ud)?;
        let labels = template_labels(self.ud);
        let owner = revision::controller_ref(
            "apps.kruise.io/v1alpha1",
            "UnitedDeployment",
            self.ud.metadata.name.as_deref().unwrap_or_default(),
            uid,
        );
        let next = revision::next_revision(&revisions);
        let build = |collision: i32| -> Result<ControllerRevision, revision::RevisionError> {
            Ok(revision::new_controller_revision(
                &self.ud.metadata,
                owner.clone(),
                labels.as_ref(),
                data.clone(),
                next,
                Some(collision),
            ))
        };
        let collision = status.collision_count.unwrap_or(0);
        let (update, collision) = Box::pin(crate::workload::history::ensure_revision(
            &api, &revisions, collision, build,
        ))
        .await?;
        let current = crate::workload::history::current_revision(
            Some(status.current_revision.as_str()).filter(|s| !s.is_empty()),
            &revisions,
            &update,
        );
        Ok((current, update, collision))
    }

    /// `SubsetControl.GetAllSubsets`: the workloads of the template's kind that match the
    /// UnitedDeployment's selector, claimed by `RefManager.ClaimOwnedObjects` — its own are
    /// kept, orphans of its namespace adopted (a UnitedDeployment re-created after a delete with
    /// `--cascade=orphan` takes its subsets back instead of creating new ones). Owned workloads
    /// that no longer match are not listed, so they are neither subsets nor released, as in
    /// OpenKruise. Unlike OpenKruise (which lists every namespace), only the UnitedDeployment's
    /// namespace is searched: an owner reference across namespaces would have the garbage
    /// collector delete the workload.
    async fn claimed_workloads(&self) -> Result<Vec<Workload>, Error> {
        let Some(selector) = crate::workload::claim::compile_selector(&self.ud.spec.selector)
        else {
            return Ok(Vec::new());
        };
        let owner = crate::workload::claim::Owner {
            api_version: "apps.kruise.io/v1alpha1",
            kind: "UnitedDeployment",
            name: self.ud.metadata.name.as_deref().unwrap_or_default(),
            uid: self.ud.metadata.uid.as_deref().unwrap_or_default(),
            namespace: &self.ns,
            deleting: self.ud.metadata.deletion_timestamp.is_some(),
        };
        match self.kind {
            Kind::StatefulSet => {
                self.claim(
                    &self.state.statefulsets,
                    &selector,
                    &owner,
                    Workload::StatefulSet,
                )
                .await
            }
            Kind::AdvancedStatefulSet => {
                self.claim(
                    &self.state.advanced_statefulsets,
                    &selector,
                    &owner,
                    Workload::AdvancedStatefulSet,
                )
                .await
            }
            Kind::CloneSet => {
                self.claim(&self.state.clonesets, &selector, &owner, Workload::CloneSet)
                    .await
            }
            Kind::Deployment => {
                self.claim(
                    &self.state.deployments,
                    &selector,
                    &owner,
                    Workload::Deployment,
                )
                .await
            }
        }
    }

    async fn claim<K>(
        &self,
        informer: &kruise_runtime::cache::Informer<K>,
        selector: &kube::core::Selector,
        owner: &crate::workload::claim::Owner<'_>,
        wrap: fn(Arc<K>) -> Workload,
    ) -> Result<Vec<Workload>, Error>
    where
        K: kruise_runtime::cache::Cached
            + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let candidates: Vec<Arc<K>> = informer
            .in_namespace(&self.ns)
            .into_iter()
            .filter(|w| crate::workload::claim::selects(selector, w.meta().labels.as_ref()))
            .collect();
        let api: Api<K> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let claimed = crate::workload::claim::claim(
            &api,
            owner,
            candidates,
            |_| true,
            || crate::workload::claim::can_adopt::<UnitedDeployment>(&self.ctx.client, owner),
            &self.state.versions,
        )
        .await
        .map_err(Error::Other)?;
        Ok(claimed.into_iter().map(wrap).collect())
    }

    /// `getExistingSubsets`: the subset workloads of the template's kind by subset name;
    /// duplicates (all but the oldest) are deleted.
    async fn existing_subsets(&self, expected: &str) -> Result<BTreeMap<String, Subset>, Error> {
        let mut by_name: BTreeMap<String, Vec<Workload>> = BTreeMap::new();
        for w in self.claimed_workloads().await? {
            let Some(name) = w
                .meta()
                .labels
                .as_ref()
                .and_then(|l| l.get(keys::SUBSET_NAME))
                .filter(|n| !n.is_empty())
                .cloned()
            else {
                continue;
            };
            by_name.entry(name).or_default().push(w);
        }
        let mut out = BTreeMap::new();
        for (name, mut list) in by_name {
            list.sort_by(|a, b| {
                let key = |w: &Workload| {
                    (
                        w.meta().creation_timestamp.as_ref().map(|t| t.0),
                        w.meta().name.clone(),
                    )
                };
                key(a).cmp(&key(b))
            });
            for dup in list.iter().skip(1) {
                info!(subset = %name, workload = %dup.meta().name.as_deref().unwrap_or(""),
                    "deleting duplicated subset");
                self.delete_workload(dup).await.map_err(|e| {
                    Error::Other(format!(
                        "fail to manage duplicate Subset of UnitedDeployment {}/{}: {e}",
                        self.ns,
                        self.ud.name_any()
                    ))
                })?;
            }
            let w = list.swap_remove(0);
            out.insert(name.clone(), self.to_subset(&name, &w, expected));
        }
        Ok(out)
    }

    /// `convertToSubset`.
    fn to_subset(&self, name: &str, w: &Workload, expected: &str) -> Subset {
        let pods = workload_pods(self.state, w);
        let (spec_replicas, replicas, ready) = w.counts();
        let (updated, updated_ready) = plan::updated_replicas(&pods, expected);
        Subset {
            subset_name: name.to_owned(),
            workload: w.meta().name.clone().unwrap_or_default(),
            labels: w.meta().labels.clone().unwrap_or_default(),
            annotations: w.meta().annotations.clone().unwrap_or_default(),
            spec_replicas,
            partition: w.partition(&pods),
            replicas,
            ready_replicas: ready,
            updated_replicas: updated,
            updated_ready_replicas: updated_ready,
            updated_revision: expected.to_owned(),
            pods,
            unschedulable: Default::default(),
        }
    }

    async fn delete_workload(&self, w: &Workload) -> Result<(), kube::Error> {
        let api = api_of(self.ctx, &self.ns, w.kind());
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        match api
            .delete(w.meta().name.as_deref().unwrap_or_default(), &dp)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `patchReservedStatusChangedPods`: the reserved label of each pod.
    async fn patch_reserved(&self, patches: &[(String, bool)]) -> Result<(), Error> {
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        for (pod, reserved) in patches {
            let patch = json!({"metadata": {"labels": {
                keys::UNITED_DEPLOYMENT_RESERVED_POD: if *reserved { "true" } else { "false" }
            }}});
            match api
                .patch(pod, &PatchParams::default(), &Patch::Strategic(patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// `manageSubsets`: provision (create, delete, clean other kinds), then update the
    /// subsets whose revision, replicas, partition or patch changed or that are still
    /// updating. Conditions `SubsetProvisioned` and `SubsetUpdated` are set in `status`.
    async fn manage_subsets(
        &mut self,
        status: &mut UnitedDeploymentStatus,
        existing: &BTreeMap<String, Subset>,
        next_replicas: &BTreeMap<String, i32>,
        next_partitions: &BTreeMap<String, i32>,
        expected: &str,
    ) -> Result<(), Error> {
        let provisioned = match Box::pin(self.provision(
            existing,
            next_replicas,
            next_partitions,
            expected,
        ))
        .await
        {
            Ok(p) => p,
            Err(e) => {
                plan::set_condition(
                    status,
                    plan::condition("SubsetProvisioned", "False", "Error", &e, self.now),
                );
                return Err(Error::Other(format!(
                    "fail to manage Subset provision: {e}"
                )));
            }
        };
        if provisioned {
            plan::set_condition(
                status,
                plan::condition("SubsetProvisioned", "True", "", "", self.now),
            );
        }
        let specs: BTreeMap<&str, &kruise_api::apps::v1alpha1::Subset> = self
            .ud
            .spec
            .topology
            .iter()
            .flat_map(|t| t.subsets.iter().flatten())
            .map(|s| (s.name.as_str(), s))
            .collect();
        let mut need = Vec::new();
        for (name, subset) in existing {
            let Some(spec) = specs.get(name.as_str()) else {
                continue;
            };
            let replicas = next_replicas.get(name).copied().unwrap_or(0);
            let partition = next_partitions.get(name).copied().unwrap_or(0);
            let patch = plan::patch_text(spec);
            if let Some(why) = plan::update_reason(subset, expected, replicas, partition, &patch) {
                debug!(subset = %name, reason = why, "subset needs update");
                need.push(name.clone());
            }
        }
        let this = &*self;
        let result = crate::workload::do_slowly(need.clone(), 1, |name: String| async move {
            let subset = &existing[&name];
            let replicas = next_replicas.get(&name).copied().unwrap_or(0);
            let partition = next_partitions.get(&name).copied().unwrap_or(0);
            let r = Box::pin(this.update_subset(subset, expected, replicas, partition)).await;
            if let Err(e) = &r {
                this.warn(
                    "FailedUpdateSubset",
                    &format!(
                        "Error updating PodSet ({}) {} when updating: {e}",
                        this.kind.type_name(),
                        subset.workload
                    ),
                )
                .await;
            }
            r
        })
        .await;
        match result {
            Ok(_) => {
                plan::set_condition(
                    status,
                    plan::condition("SubsetUpdated", "True", "", "", self.now),
                );
                Ok(())
            }
            Err(e) => {
                let created = need.iter().any(|n| {
                    existing[n].spec_replicas < next_replicas.get(n).copied().unwrap_or(0)
                });
                if plan::is_adaptive(self.ud) && created {
                    self.requeue.push(plan::reschedule_critical(self.ud));
                }
                plan::set_condition(
                    status,
                    plan::condition("SubsetUpdated", "False", "Error", &e.to_string(), self.now),
                );
                Err(e)
            }
        }
    }

    /// `manageSubsetProvision`: creates missing subsets, deletes removed ones and every
    /// workload of another kind; whether anything was done.
    async fn provision(
        &mut self,
        existing: &BTreeMap<String, Subset>,
        next_replicas: &BTreeMap<String, i32>,
        next_partitions: &BTreeMap<String, i32>,
        revision: &str,
    ) -> Result<bool, String> {
        let expected: BTreeSet<String> = self
            .ud
            .spec
            .topology
            .iter()
            .flat_map(|t| t.subsets.iter().flatten())
            .map(|s| s.name.clone())
            .collect();
        let got: BTreeSet<String> = existing.keys().cloned().collect();
        let creates: Vec<String> = expected.difference(&got).cloned().collect();
        let deletes: Vec<String> = got.difference(&expected).cloned().collect();
        let type_name = self.kind.type_name();
        let mut errs = Vec::new();
        if !creates.is_empty() {
            let this = &*self;
            let created =
                crate::workload::do_slowly(creates.clone(), 1, |name: String| async move {
                    let replicas = next_replicas.get(&name).copied().unwrap_or(0);
                    let partition = next_partitions.get(&name).copied().unwrap_or(0);
                    Box::pin(this.create_subset(&name, revision, replicas, partition))
                        .await
                        .map_err(|e| format!("fail to create Subset ({type_name}) {name}: {e}"))
                })
                .await;
            match created {
                Ok(n) => {
                    if plan::is_adaptive(self.ud) {
                        self.requeue.push(plan::reschedule_critical(self.ud));
                    }
                    self.normal(
                        "SuccessfulUpdateSubset",
                        &format!("Create {n} Subset ({type_name})"),
                    )
                    .await;
                }
                Err(e) => errs.push(e),
            }
        }
        if !deletes.is_empty() {
            let mut delete_errs = Vec::new();
            for name in &deletes {
                let s = &existing[name];
                let api = api_of(self.ctx, &self.ns, self.kind);
                let dp = DeleteParams {
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..Default::default()
                };
                match api.delete(&s.workload, &dp).await {
                    Ok(_) => {}
                    Err(e) if is_status(&e, 404) => {}
                    Err(e) => delete_errs.push(format!(
                        "fail to delete Subset ({type_name}) {}/{} for {name}: {e}",
                        self.ns, s.workload
                    )),
                }
            }
            if delete_errs.is_empty() {
                self.normal(
                    "SuccessfulUpdateSubset",
                    &format!("Delete {} Subset ({type_name})", deletes.len()),
                )
                .await;
            } else {
                errs.extend(delete_errs);
            }
        }
        let uid = self.ud.metadata.uid.clone().unwrap_or_default();
        let mut cleaned = false;
        for other in Kind::ALL.into_iter().filter(|k| *k != self.kind) {
            for w in owned_workloads(self.state, other, &uid) {
                cleaned = true;
                if let Err(e) = self.delete_workload(&w).await {
                    errs.push(format!(
                        "fail to delete Subset {} of other type {} for UnitedDeployment {}/{}: {e}",
                        w.meta().name.as_deref().unwrap_or(""),
                        other.type_name(),
                        self.ns,
                        self.ud.name_any()
                    ));
                }
            }
        }
        if !errs.is_empty() {
            return Err(aggregate(&errs));
        }
        Ok(!creates.is_empty() || !deletes.is_empty() || cleaned)
    }

    async fn create_subset(
        &self,
        name: &str,
        revision: &str,
        replicas: i32,
        partition: i32,
    ) -> Result<(), String> {
        let mut obj = json!({});
        apply_subset_template(
            self.ud, self.kind, name, revision, replicas, partition, &mut obj,
        )?;
        let obj: DynamicObject = serde_json::from_value(obj).map_err(|e| e.to_string())?;
        let api = api_of(self.ctx, &self.ns, self.kind);
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 504) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `SubsetControl.UpdateSubset` then the adapter's `PostUpdate`.
    async fn update_subset(
        &self,
        subset: &Subset,
        revision: &str,
        replicas: i32,
        partition: i32,
    ) -> Result<(), Error> {
        let api = api_of(self.ctx, &self.ns, self.kind);
        let uid = self.ud.metadata.uid.clone().unwrap_or_default();
        let mut current: Option<Value> = owned_workloads(self.state, self.kind, &uid)
            .into_iter()
            .find(|w| w.meta().name.as_deref() == Some(subset.workload.as_str()))
            .map(|w| w.to_value())
            .transpose()?;
        let mut last = None;
        for _ in 0..UPDATE_RETRIES {
            let mut obj = match current.take() {
                Some(v) => v,
                None => serde_json::to_value(api.get(&subset.workload).await?)
                    .map_err(|e| Error::Other(e.to_string()))?,
            };
            apply_subset_template(
                self.ud,
                self.kind,
                &subset.subset_name,
                revision,
                replicas,
                partition,
                &mut obj,
            )
            .map_err(Error::Other)?;
            if subset.unschedulable.unschedulable && plan::reserves(self.ud) {
                let max_unavailable = subset.spec_replicas - subset.ready_replicas
                    + subset.unschedulable.update_timeout_pods;
                set_max_unavailable(&mut obj, self.kind, max_unavailable);
            }
            let body: DynamicObject =
                serde_json::from_value(obj).map_err(|e| Error::Other(e.to_string()))?;
            match api
                .replace(&subset.workload, &PostParams::default(), &body)
                .await
            {
                Ok(_) => {
                    last = None;
                    break;
                }
                Err(e) if is_status(&e, 409) => last = Some(e),
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(e) = last {
            return Err(e.into());
        }
        if self.kind == Kind::StatefulSet {
            self.delete_stuck_pods(subset, revision, partition).await?;
        }
        Ok(())
    }

    /// The StatefulSet adapter's `deleteStuckPods` (kubernetes#67250): with `RollingUpdate`,
    /// a pod at or above the partition, not at the revision and not ready is deleted.
    async fn delete_stuck_pods(
        &self,
        subset: &Subset,
        revision: &str,
        partition: i32,
    ) -> Result<(), Error> {
        let on_delete = self
            .ud
            .spec
            .template
            .as_ref()
            .and_then(|t| t.stateful_set_template.as_ref())
            .and_then(|t| t.spec.update_strategy.as_ref())
            .and_then(|u| u.type_.as_deref())
            == Some("OnDelete");
        if on_delete {
            return Ok(());
        }
        let api: Api<Pod> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        for p in &subset.pods {
            let name = p.metadata.name.as_deref().unwrap_or_default();
            let ordinal = name
                .rsplit_once('-')
                .and_then(|(_, o)| o.parse::<i32>().ok())
                .unwrap_or(-1);
            let at_revision = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(keys::KRUISE_CONTROLLER_REVISION_HASH))
                .map(String::as_str)
                == Some(revision);
            if ordinal < partition || at_revision || kruise_engines::podutil::is_pod_ready(p) {
                continue;
            }
            info!(pod = %name, "deleting pod stuck in rolling update");
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// `updateStatus`: written (PUT `/status`, conflicts retried on a fresh read) only when it
    /// changed or the generation is new; the written resourceVersion is expected before the
    /// next pass.
    async fn write_status(
        &self,
        old: &UnitedDeploymentStatus,
        mut status: UnitedDeploymentStatus,
    ) -> Result<(), Error> {
        let generation = self.ud.metadata.generation.unwrap_or(0);
        status.observed_generation = old.observed_generation;
        if *old == status && old.observed_generation.unwrap_or(0) == generation {
            return Ok(());
        }
        status.observed_generation = (generation != 0).then_some(generation);
        let api: Api<UnitedDeployment> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let name = self.ud.name_any();
        let mut obj = self.ud.clone();
        for i in 0..=UPDATE_RETRIES {
            obj.status = Some(status.clone());
            match api
                .replace_status(&name, &PostParams::default(), &obj)
                .await
            {
                Ok(written) => {
                    self.state.versions.expect_object(&written.metadata);
                    return Ok(());
                }
                Err(e) if is_status(&e, 409) && i < UPDATE_RETRIES => {
                    obj = api.get(&name).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// The adapters' `SetMaxUnavailable`.
fn set_max_unavailable(obj: &mut Value, kind: Kind, value: i32) {
    let path: &[&str] = match kind {
        Kind::CloneSet => &["spec", "updateStrategy"],
        Kind::StatefulSet | Kind::AdvancedStatefulSet => {
            &["spec", "updateStrategy", "rollingUpdate"]
        }
        Kind::Deployment => &["spec", "strategy", "rollingUpdate"],
    };
    let mut cur = obj;
    for p in path {
        if !cur.is_object() {
            *cur = json!({});
        }
        cur = cur
            .as_object_mut()
            .expect("an object")
            .entry(p.to_string())
            .or_insert_with(|| json!({}));
    }
    if !cur.is_object() {
        *cur = json!({});
    }
    cur["maxUnavailable"] = json!(value);
}

/// `utilerrors.NewAggregate(errs).Error()`.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

/// `getUnitedDeploymentPatch`: `{"spec":{"template":{…,"$patch":"replace"}}}`, byte for byte as
/// OpenKruise writes it ([`revision::united_deployment_patch`]), so a swapped manager keeps the
/// revision names.
fn revision_data(ud: &UnitedDeployment) -> Result<Value, Error> {
    revision::united_deployment_patch(ud.spec.template.as_ref())
        .map_err(|e| Error::Other(e.to_string()))
}

/// The labels of the revision: the template's metadata labels (none for a CloneSet template,
/// as OpenKruise's `newRevision`).
fn template_labels(ud: &UnitedDeployment) -> Option<BTreeMap<String, String>> {
    let t = ud.spec.template.as_ref()?;
    let meta = if let Some(s) = &t.stateful_set_template {
        s.metadata.as_ref()
    } else if let Some(s) = &t.advanced_stateful_set_template {
        s.metadata.as_ref()
    } else if let Some(d) = &t.deployment_template {
        d.metadata.as_ref()
    } else {
        None
    };
    meta.and_then(|m| m.labels.clone())
}
