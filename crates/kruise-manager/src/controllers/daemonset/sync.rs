//! The I/O half of one Advanced DaemonSet pass (OpenKruise `syncDaemonSet`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::core::v1::{Node, ObjectReference, PodReadinessGate, PodSpec};
use kruise_api::apps::v1beta1::{DaemonSet, DaemonSetStatus, rolling_update_type};
use kruise_api::pod::CachedPod;
use kruise_engines::{inplace, intstr, podutil, revision};
use kruise_runtime::events;
use kruise_runtime::features::Feature;
use kruise_runtime::runner::Context;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Action;
use rand::Rng;
use serde_json::json;
use tracing::{debug, info};

use super::plan::{self, HASH_LABEL, IN_PLACE_UPDATE_READY};
use super::{Error, State};
use crate::workload::{
    self,
    pods::{Deletion, EventStyle, NewPod, PodControl},
};

const API_VERSION: &str = "apps.kruise.io/v1beta1";
const KIND: &str = "DaemonSet";
/// Alphabet of generated name suffixes (apimachinery's `utilrand.String`).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

struct Pass<'a> {
    ds: &'a DaemonSet,
    ctx: &'a Context,
    state: &'a State,
    key: &'a str,
    ns: String,
    name: String,
    owner: ObjectReference,
    now: jiff::Timestamp,
    min_ready: i32,
    requeue: Option<Duration>,
}

impl Pass<'_> {
    fn push_requeue(&mut self, d: Option<Duration>) {
        if let Some(d) = d.filter(|d| !d.is_zero()) {
            self.requeue = Some(self.requeue.map_or(d, |x| x.min(d)));
        }
    }
}

pub(super) async fn sync(
    ds: &DaemonSet,
    ctx: &Context,
    state: &State,
    key: &str,
) -> Result<Action, Error> {
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let mut pass = Pass {
        ds,
        ctx,
        state,
        key,
        ns: ds.namespace().unwrap_or_default(),
        name: ds.name_any(),
        owner: events::object_ref(ds),
        now: jiff::Timestamp::now(),
        min_ready: ds.spec.min_ready_seconds.unwrap_or(0),
        requeue: None,
    };
    if kruise_webhook::common::selector_is_empty(&ds.spec.selector) {
        ctx.recorder
            .warning(
                &pass.owner,
                "SelectingAll",
                "This DaemonSet is selecting all pods. A non-empty selector is required.",
            )
            .await;
        return Ok(Action::await_change());
    }
    let Some(selector) = compile_selector(ds) else {
        info!(daemonset = key, "invalid selector; not reconciled");
        return Ok(Action::await_change());
    };
    let nodes: Vec<Arc<Node>> = state.nodes.store().state();
    let (current, old) = pass.construct_history(&selector).await?;
    let hash = current
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(HASH_LABEL))
        .cloned()
        .unwrap_or_else(|| current.name_any());

    let pods = pass.claim_pods(&selector).await?;
    for p in &pods {
        if !state.resource_versions.is_satisfied_object(&p.metadata).0 {
            debug!(daemonset = key, pod = %p.name_any(), "waiting for the cache to catch up");
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
    }
    if ctx
        .gates
        .enabled(Feature::PreDownloadImageForDaemonSetUpdate)
        && !old.is_empty()
        && state
            .predownload_logged
            .lock()
            .map(|mut l| l.insert(format!("{key}/{hash}")))
            .unwrap_or(false)
    {
        info!(
            daemonset = key,
            revision = %hash,
            "PreDownloadImageForDaemonSetUpdate: image pre-download needs kruise-daemon, which kruise-rs does not have yet; no ImagePullJob is created"
        );
    }

    // Simulated daemon pod and eligibility per node.
    let mut simulated: PodSpec = ds.spec.template.spec.clone().unwrap_or_default();
    plan::add_daemon_tolerations(&mut simulated);
    let eligibility: Vec<(Arc<Node>, bool, bool)> = nodes
        .iter()
        .map(|n| {
            let (run, cont) = plan::should_run(n, &simulated);
            (n.clone(), run, cont)
        })
        .collect();

    // manage
    let wrote = pass.manage(&pods, &eligibility, &hash).await?;
    if wrote {
        pass.write_status(&eligibility, &hash, false).await?;
        return Ok(pass.action());
    }

    // Refresh in-place states (InPlaceUpdateReady back to True once updated).
    for pod in &pods {
        let api: Api<CachedPod> = Api::namespaced(ctx.client.clone(), &pass.ns);
        let (written, delay) =
            workload::inplace::refresh(&api, pod, &inplace::DefaultRevisionAdapter, pass.now)
                .await?;
        if let Some(w) = written {
            state.resource_versions.expect_object(&w.metadata);
        }
        pass.push_requeue(delay);
    }

    let paused = plan::rolling(ds).is_some_and(|r| r.paused == Some(true));
    if !paused && plan::rolling(ds).is_some() {
        pass.rolling_update(&pods, &eligibility, &current, &old, &hash)
            .await?;
    }
    pass.cleanup_history(&pods, &old).await?;
    pass.write_status(&eligibility, &hash, true).await?;
    Ok(pass.action())
}

fn compile_selector(ds: &DaemonSet) -> Option<Selector> {
    workload::claim::compile_selector(&ds.spec.selector)
}

use workload::claim::selects;

/// A name as `generateName: <set>-` gives one (5 characters of apimachinery's alphabet).
fn generated_name(set: &str) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect();
    format!("{set}-{suffix}")
}

impl Pass<'_> {
    fn action(&self) -> Action {
        self.requeue
            .map_or_else(Action::await_change, Action::requeue)
    }

    fn pods_api(&self) -> Api<CachedPod> {
        Api::namespaced(self.ctx.client.clone(), &self.ns)
    }

    fn pod_control(&self) -> PodControl<'_> {
        PodControl {
            client: &self.ctx.client,
            recorder: &self.ctx.recorder,
            owner: &self.owner,
            namespace: &self.ns,
            key: self.key,
            scale: &self.state.scale,
            style: EventStyle::DaemonSet,
        }
    }

    fn owner_info(&self) -> workload::claim::Owner<'_> {
        workload::claim::Owner {
            api_version: API_VERSION,
            kind: KIND,
            name: &self.name,
            uid: self.ds.metadata.uid.as_deref().unwrap_or_default(),
            namespace: &self.ns,
            deleting: self.ds.metadata.deletion_timestamp.is_some(),
        }
    }

    async fn can_adopt(&self) -> Result<(), String> {
        workload::claim::can_adopt::<DaemonSet>(&self.ctx.client, &self.owner_info()).await
    }

    async fn claim_pods(&self, selector: &Selector) -> Result<Vec<Arc<CachedPod>>, Error> {
        workload::claim::claim(
            &self.pods_api(),
            &self.owner_info(),
            self.state.pods.in_namespace(&self.ns),
            |p| selects(selector, p.metadata.labels.as_ref()),
            || self.can_adopt(),
            &self.state.resource_versions,
        )
        .await
        .map_err(Error::Other)
    }

    // -----------------------------------------------------------------------------------------
    // History (daemonset_history.go)

    /// OpenKruise `constructHistory`: the revision of the current template (found by its data,
    /// created when missing, moved to the head after a rollback) and the others.
    async fn construct_history(
        &self,
        selector: &Selector,
    ) -> Result<(ControllerRevision, Vec<Arc<ControllerRevision>>), Error> {
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let mut revisions = workload::claim::claim(
            &api,
            &self.owner_info(),
            self.state.revisions.in_namespace(&self.ns),
            |r| selects(selector, r.metadata.labels.as_ref()),
            || self.can_adopt(),
            &self.state.resource_versions,
        )
        .await
        .map_err(Error::Other)?;
        revision::sort_revisions(&mut revisions);
        let collision = self
            .ds
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let (current, _) = workload::history::ensure_template_revision(
            &api,
            &revisions,
            collision,
            (API_VERSION, KIND),
            &self.ds.metadata,
            &self.ds.spec.template,
        )
        .await?;
        let current_name = current.name_any();
        let old = revisions
            .into_iter()
            .filter(|r| r.metadata.name.as_deref() != Some(current_name.as_str()))
            .collect();
        Ok((current, old))
    }

    /// OpenKruise `cleanupHistory`: old revisions no pod carries, beyond
    /// `revisionHistoryLimit`, lowest revision first.
    async fn cleanup_history(
        &self,
        pods: &[Arc<CachedPod>],
        old: &[Arc<ControllerRevision>],
    ) -> Result<(), Error> {
        let limit = self.ds.spec.revision_history_limit.unwrap_or(10).max(0) as usize;
        if old.len() <= limit {
            return Ok(());
        }
        let live: BTreeSet<&str> = pods.iter().map(|p| plan::pod_hash(p)).collect();
        let mut to_kill = old.len() - limit;
        let mut doomed = Vec::new();
        for r in old {
            if to_kill == 0 {
                break;
            }
            let h = r
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(HASH_LABEL))
                .map_or("", String::as_str);
            if live.contains(h) {
                continue;
            }
            doomed.push(r.name_any());
            to_kill -= 1;
        }
        let api: Api<ControllerRevision> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        Ok(workload::history::truncate(&api, &doomed).await?)
    }

    // -----------------------------------------------------------------------------------------
    // manage

    fn node_pods<'p>(&self, pods: &'p [Arc<CachedPod>]) -> BTreeMap<String, Vec<&'p CachedPod>> {
        let mut map: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
        for p in pods {
            if let Some(node) = plan::target_node(p) {
                map.entry(node).or_default().push(p);
            }
        }
        map
    }

    /// `burstReplicas` resolved against the desired count (OpenKruise scales a percentage
    /// against the last written status).
    fn burst(&self) -> usize {
        let desired = self
            .ds
            .status
            .as_ref()
            .map_or(0, |s| s.desired_number_scheduled);
        let v = self
            .ds
            .spec
            .burst_replicas
            .clone()
            .unwrap_or(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(250));
        intstr::scaled_value(&v, i64::from(desired), false)
            .unwrap_or(0)
            .max(0) as usize
    }

    /// OpenKruise `manage`: creates and deletes so that each eligible node runs one pod.
    /// Returns whether anything was written.
    async fn manage(
        &mut self,
        pods: &[Arc<CachedPod>],
        eligibility: &[(Arc<Node>, bool, bool)],
        hash: &str,
    ) -> Result<bool, Error> {
        let node_pods = self.node_pods(pods);
        let surge = plan::allows_surge(self.ds);
        let uid = self.ds.metadata.uid.clone().unwrap_or_default();
        let generation = self
            .ds
            .status
            .as_ref()
            .and_then(|s| s.observed_generation)
            .unwrap_or(0);
        let mut needing: Vec<String> = Vec::new();
        let mut delete: Vec<String> = Vec::new();
        let mut desired = 0i64;
        let mut new_count = 0i64;
        let none: Vec<&CachedPod> = Vec::new();
        let now = Instant::now();
        for (node, run, cont) in eligibility {
            let node_name = node.name_any();
            let here = node_pods.get(&node_name).unwrap_or(&none);
            let backoff_key = format!("{uid}/{generation}/{node_name}");
            let plan = plan::plan_node(
                here,
                &plan::NodeInputs {
                    should_run: *run,
                    should_continue: *cont,
                    surge,
                    hash,
                    min_ready_seconds: self.min_ready,
                    now: self.now,
                    backoff: self.state.backoff.waiting(&backoff_key, now),
                },
            );
            if *run {
                desired += 1;
            }
            if matches!(plan::updated_pods_on_node(here, hash), Some((Some(_), _))) {
                new_count += 1;
            }
            if plan.create {
                needing.push(node_name.clone());
            }
            for failed in &plan.failed {
                self.state.backoff.next(&backoff_key, now);
                self.ctx
                    .recorder
                    .warning(
                        &self.owner,
                        "FailedDaemonPod",
                        &format!(
                            "Found failed daemon pod {}/{failed} on node {node_name}, will try to kill it",
                            self.ns
                        ),
                    )
                    .await;
            }
            delete.extend(plan.failed);
            delete.extend(plan.delete);
            self.push_requeue(plan.backoff_wait);
            self.push_requeue(plan.wait);
        }
        // Pods for nodes that no longer exist and never got one: deleted.
        let known: BTreeSet<String> = eligibility.iter().map(|(n, _, _)| n.name_any()).collect();
        for (node, here) in &node_pods {
            if known.contains(node) {
                continue;
            }
            for p in here {
                let unscheduled = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_none_or(str::is_empty);
                if unscheduled && !podutil::is_terminating(p) {
                    delete.extend(p.metadata.name.clone());
                }
            }
        }
        if let Some(ru) = plan::rolling(self.ds)
            && let Some(partition) = ru.partition.as_ref()
        {
            let stale_desired = self
                .ds
                .status
                .as_ref()
                .map_or(0, |s| s.desired_number_scheduled);
            if let Ok(p) = intstr::scaled_value(partition, i64::from(stale_desired), false)
                && p != 0
            {
                let partitioned = self
                    .ds
                    .spec
                    .scale_strategy
                    .as_ref()
                    .and_then(|s| s.partitioned_scaling)
                    .unwrap_or(false);
                needing = plan::nodes_needing_pods(new_count, desired, p, partitioned, needing);
            }
        }
        let _ = desired;
        self.sync_nodes(pods, delete, needing, hash).await
    }

    /// OpenKruise `syncNodes`: deletes (the preDelete hook holding some in `PreparingDelete`)
    /// and creates, at most `burstReplicas` of each, creates in slow-start batches. Returns
    /// whether anything was written.
    async fn sync_nodes(
        &mut self,
        pods: &[Arc<CachedPod>],
        delete: Vec<String>,
        create_on: Vec<String>,
        hash: &str,
    ) -> Result<bool, Error> {
        let burst = self.burst();
        let mut wrote = false;
        let hook = self
            .ds
            .spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_delete.as_ref());
        let by_name: BTreeMap<&str, &Arc<CachedPod>> = pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref().map(|n| (n, p)))
            .collect();
        let mut deleted = 0;
        for name in delete {
            if deleted >= burst {
                break;
            }
            let Some(pod) = by_name.get(name.as_str()) else {
                continue;
            };
            let done = self
                .pod_control()
                .delete_or_hold(pod, std::iter::empty(), hook, &self.state.resource_versions)
                .await?;
            if done != Deletion::Held {
                wrote = true;
                deleted += 1;
            }
        }
        if create_on.is_empty() || burst == 0 {
            return Ok(wrote);
        }
        let template = self.pod_template(hash);
        let new: Vec<NewPod> = create_on
            .iter()
            .take(burst)
            .map(|node| {
                let mut pod = template.clone();
                pod.metadata.name = Some(generated_name(&self.name));
                plan::bind_to_node(
                    pod.spec.get_or_insert_with(Default::default),
                    node,
                    self.state.assign_by_scheduler,
                );
                NewPod {
                    pod,
                    claims: Vec::new(),
                }
            })
            .collect();
        let created = self
            .pod_control()
            .create_slow_start(new, &BTreeSet::new())
            .await?;
        Ok(wrote || created > 0)
    }

    /// The pod of revision `hash` (upstream `CreatePodTemplate`): the template with the hash
    /// label, the daemon tolerations and, for in-place updates, the InPlaceUpdateReady gate.
    fn pod_template(&self, hash: &str) -> Pod {
        let t = &self.ds.spec.template;
        let meta = t.metadata.clone().unwrap_or_default();
        let mut labels = meta.labels.unwrap_or_default();
        labels.insert(HASH_LABEL.to_owned(), hash.to_owned());
        let mut spec = t.spec.clone().unwrap_or_default();
        plan::add_daemon_tolerations(&mut spec);
        let in_place = plan::rolling(self.ds)
            .is_some_and(|r| r.type_.as_deref() == Some(rolling_update_type::IN_PLACE_IF_POSSIBLE));
        if in_place {
            spec.readiness_gates
                .get_or_insert_with(Vec::new)
                .push(PodReadinessGate {
                    condition_type: IN_PLACE_UPDATE_READY.to_owned(),
                });
        }
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                namespace: Some(self.ns.clone()),
                labels: Some(labels),
                annotations: meta.annotations,
                finalizers: meta.finalizers,
                owner_references: Some(vec![revision::controller_ref(
                    API_VERSION,
                    KIND,
                    &self.name,
                    self.ds.metadata.uid.as_deref().unwrap_or_default(),
                )]),
                ..Default::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Rolling update (daemonset_update.go)

    async fn rolling_update(
        &mut self,
        pods: &[Arc<CachedPod>],
        eligibility: &[(Arc<Node>, bool, bool)],
        current: &ControllerRevision,
        old: &[Arc<ControllerRevision>],
        hash: &str,
    ) -> Result<(), Error> {
        let Some(ru) = plan::rolling(self.ds) else {
            return Ok(());
        };
        let mut node_pods = self.node_pods(pods);
        let known: BTreeSet<String> = eligibility.iter().map(|(n, _, _)| n.name_any()).collect();
        node_pods.retain(|n, _| known.contains(n));
        let mut desired = 0i64;
        for (node, run, _) in eligibility {
            if *run {
                desired += 1;
                node_pods.entry(node.name_any()).or_default();
            }
        }
        let scaled = |v: Option<&k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
                      what: &str|
         -> Result<i64, Error> {
            match v {
                None => Ok(0),
                Some(v) => intstr::scaled_value(v, desired, true).map_err(|e| {
                    Error::Other(format!(
                        "couldn't get unavailable numbers: invalid value for {what}: {e}"
                    ))
                }),
            }
        };
        let mut max_unavailable = scaled(ru.max_unavailable.as_ref(), "MaxUnavailable")?;
        let max_surge = scaled(ru.max_surge.as_ref(), "MaxSurge")?;
        if desired > 0 && max_unavailable == 0 && max_surge == 0 {
            max_unavailable = 1;
        }
        let partition = match ru.partition.as_ref() {
            None => 0,
            Some(p) => {
                let stale = self
                    .ds
                    .status
                    .as_ref()
                    .map_or(0, |s| s.desired_number_scheduled);
                intstr::scaled_value(p, i64::from(stale), false).map_err(|e| {
                    Error::Other(format!(
                        "failed to filterDaemonPodsToUpdate: failed to get partition value: {e}"
                    ))
                })?
            }
        };
        let node_selector = ru.selector.as_ref().and_then(|s| {
            let mut s = s.clone();
            for expr in s.match_expressions.iter_mut().flatten() {
                if matches!(expr.operator.as_str(), "In" | "NotIn") {
                    expr.values.get_or_insert_with(Vec::new);
                }
            }
            Selector::try_from(s).ok()
        });
        let node_labels: BTreeMap<String, BTreeMap<String, String>> = eligibility
            .iter()
            .map(|(n, _, _)| (n.name_any(), n.metadata.labels.clone().unwrap_or_default()))
            .collect();
        let matcher = |node: &str| {
            node_selector
                .as_ref()
                .is_some_and(|s| s.matches(node_labels.get(node).unwrap_or(&BTreeMap::new())))
        };
        let selector_fn: Option<&dyn Fn(&str) -> bool> = node_selector
            .as_ref()
            .map(|_| &matcher as &dyn Fn(&str) -> bool);
        let nodes = plan::nodes_to_update(&node_pods, hash, partition, selector_fn);

        if max_surge == 0 {
            let mut replace = plan::old_pods_to_replace(
                &nodes,
                &node_pods,
                hash,
                max_unavailable,
                self.min_ready,
                self.now,
            );
            if ru.type_.as_deref() == Some(rolling_update_type::IN_PLACE_IF_POSSIBLE) {
                replace = self.in_place_update(pods, replace, current, old).await?;
            }
            self.sync_nodes(pods, replace, Vec::new(), hash).await?;
        } else {
            let (delete, create) = plan::surge_plan(
                &nodes,
                &node_pods,
                hash,
                max_surge,
                self.min_ready,
                self.now,
            );
            self.sync_nodes(pods, delete, create, hash).await?;
        }
        Ok(())
    }

    /// OpenKruise `inPlaceUpdatePods`: the pods that can be updated in place (they have the
    /// InPlaceUpdateReady gate and only images/metadata changed since their revision) are, up
    /// to `burstReplicas`; returns those to delete instead.
    async fn in_place_update(
        &mut self,
        pods: &[Arc<CachedPod>],
        names: Vec<String>,
        current: &ControllerRevision,
        old: &[Arc<ControllerRevision>],
    ) -> Result<Vec<String>, Error> {
        let by_name: BTreeMap<&str, &Arc<CachedPod>> = pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref().map(|n| (n, p)))
            .collect();
        let hash_of = |r: &ControllerRevision| {
            r.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(HASH_LABEL))
                .cloned()
                .unwrap_or_else(|| r.name_any())
        };
        let current_hash = hash_of(current);
        let opts = inplace::UpdateOptions {
            env_from_metadata: self
                .ctx
                .gates
                .enabled(Feature::InPlaceUpdateEnvFromMetadata),
            ..inplace::UpdateOptions::default()
        };
        let mut to_delete = Vec::new();
        let mut in_place = Vec::new();
        for name in names {
            let Some(pod) = by_name.get(name.as_str()) else {
                to_delete.push(name);
                continue;
            };
            let gated = pod
                .spec
                .as_ref()
                .and_then(|s| s.readiness_gates.as_ref())
                .is_some_and(|g| g.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY));
            let pod_hash = plan::pod_hash(pod);
            let from = old.iter().find(|r| {
                let h = hash_of(r);
                h == pod_hash || h.rsplit('-').next() == pod_hash.rsplit('-').next()
            });
            let spec = from.and_then(|from| {
                inplace::calculate_update_spec_with_revision(from, current, &current_hash, &opts)
            });
            match (gated, spec) {
                (true, Some(spec)) => in_place.push((pod, spec)),
                _ => to_delete.push(name),
            }
        }
        let burst = self.burst();
        let api = self.pods_api();
        for (pod, spec) in in_place.into_iter().take(burst) {
            let name = pod.name_any();
            match workload::inplace::update(&api, pod, &spec, &inplace::DefaultRevisionAdapter)
                .await
            {
                Ok(written) => {
                    self.state
                        .resource_versions
                        .expect_object(&written.metadata);
                    self.ctx
                        .recorder
                        .normal(
                            &self.owner,
                            events::SUCCESSFUL_UPDATE_POD_IN_PLACE,
                            &format!("successfully update pod {name} in-place"),
                        )
                        .await;
                }
                Err(e) => {
                    self.ctx
                        .recorder
                        .warning(
                            &self.owner,
                            events::FAILED_UPDATE_POD_IN_PLACE,
                            &format!(
                                "failed to update pod {name} in-place(revision {}): {e}",
                                current.name_any()
                            ),
                        )
                        .await;
                    return Err(e.into());
                }
            }
        }
        Ok(to_delete)
    }

    // -----------------------------------------------------------------------------------------
    // Status

    async fn write_status(
        &mut self,
        eligibility: &[(Arc<Node>, bool, bool)],
        hash: &str,
        observed: bool,
    ) -> Result<(), Error> {
        // Fresh pods from the cache, as OpenKruise re-lists them for the status.
        let uid = self.ds.metadata.uid.as_deref().unwrap_or_default();
        let pods: Vec<Arc<CachedPod>> = self
            .state
            .pods
            .owned_by(uid)
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(self.ns.as_str()))
            .collect();
        let node_pods = self.node_pods(&pods);
        let nodes: Vec<(String, bool)> = eligibility
            .iter()
            .map(|(n, run, _)| (n.name_any(), *run))
            .collect();
        let mut status = plan::status_counts(&nodes, &node_pods, hash, self.min_ready, self.now);
        let old = self.ds.status.clone().unwrap_or_default();
        status.collision_count = old.collision_count;
        status.conditions = old.conditions.clone();
        status.observed_generation = if observed {
            self.ds.metadata.generation
        } else {
            old.observed_generation
        };
        if status.number_ready != status.number_available.unwrap_or(0) && self.min_ready > 0 {
            self.push_requeue(Some(Duration::from_secs(self.min_ready as u64)));
        }
        let (status, old) = (go_omitempty(status), go_omitempty(old));
        if status == old {
            return Ok(());
        }
        let api: Api<DaemonSet> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let body = json!({"status": status_json(&status)});
        match api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(Error::Other(format!(
                "error storing status for DaemonSet {}: {e}",
                self.name
            ))),
        }
    }
}

/// `status` with Go's `omitempty` zero values as absent, so that a status read back from the
/// API server compares equal to the one computed.
fn go_omitempty(mut s: DaemonSetStatus) -> DaemonSetStatus {
    s.number_available = s.number_available.filter(|&n| n != 0);
    s.number_unavailable = s.number_unavailable.filter(|&n| n != 0);
    s.collision_count = s.collision_count.filter(|&n| n != 0);
    s.observed_generation = s.observed_generation.filter(|&n| n != 0);
    s.update_revision = s.update_revision.filter(|r| !r.is_empty());
    s.conditions = s.conditions.filter(|c| !c.is_empty());
    s
}

/// The status as a merge patch that leaves the stored object as OpenKruise's full `UpdateStatus`
/// would: Go's `omitempty` fields (`numberAvailable`, `numberUnavailable`, `collisionCount`,
/// `observedGeneration`, `updateRevision`, `conditions`) are removed (`null`) when zero or empty
/// rather than written as `0` or left at an old value.
fn status_json(s: &DaemonSetStatus) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        for key in [
            "numberAvailable",
            "numberUnavailable",
            "collisionCount",
            "observedGeneration",
            "updateRevision",
            "conditions",
        ] {
            let empty = match m.get(key) {
                None | Some(serde_json::Value::Null) => true,
                Some(serde_json::Value::Number(n)) => n.as_i64() == Some(0),
                Some(serde_json::Value::String(s)) => s.is_empty(),
                Some(serde_json::Value::Array(a)) => a.is_empty(),
                Some(_) => false,
            };
            if empty {
                m.insert(key.to_owned(), serde_json::Value::Null);
            }
        }
    }
    v
}
