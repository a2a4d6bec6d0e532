//! The I/O half of one BroadcastJob pass (OpenKruise `ReconcileBroadcastJob.Reconcile`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kruise_api::apps::v1beta1::{
    BroadcastJob, BroadcastJobStatus, broadcastjob_phase, completion_policy_type,
    failure_policy_type, job_condition_type,
};
use kruise_api::pod::CachedPod;
use kruise_engines::revision;
use kruise_runtime::events;
use kruise_runtime::runner::Context;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use rand::Rng;
use serde_json::json;
use tracing::{info, warn};

use super::plan::{self, PodStates};
use super::{Error, State};
use crate::workload::pods::{EventStyle, NewPod, PodControl};

const API_VERSION: &str = "apps.kruise.io/v1beta1";
const KIND: &str = "BroadcastJob";
/// Alphabet of generated name suffixes (apimachinery's `utilrand.String`).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A name as `generateName: <job>-` gives one (5 characters of apimachinery's alphabet).
fn generated_name(job: &str) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect();
    format!("{job}-{suffix}")
}

struct Pass<'a> {
    job: &'a BroadcastJob,
    ctx: &'a Context,
    state: &'a State,
    key: &'a str,
    ns: String,
    name: String,
    owner: ObjectReference,
    now: jiff::Timestamp,
    /// The template spec (an empty spec when unset), borrowed from the cached job.
    template: &'a PodSpec,
    status: BroadcastJobStatus,
    requeue: Option<Duration>,
}

/// The template spec of a job without one.
static EMPTY_SPEC: std::sync::LazyLock<PodSpec> = std::sync::LazyLock::new(PodSpec::default);

pub(super) async fn sync(
    job: &BroadcastJob,
    ctx: &Context,
    state: &State,
    key: &str,
) -> Result<Action, Error> {
    let now = jiff::Timestamp::now();
    let mut pass = Pass {
        job,
        ctx,
        state,
        key,
        ns: job.namespace().unwrap_or_default(),
        name: job.name_any(),
        owner: events::object_ref(job),
        now,
        template: job.spec.template.spec.as_ref().unwrap_or(&EMPTY_SPEC),
        status: job.status.clone().unwrap_or_default(),
        requeue: None,
    };
    if plan::is_finished(job) {
        return pass.finished().await;
    }
    pass.run().await?;
    Ok(pass
        .requeue
        .map_or_else(Action::await_change, Action::requeue))
}

impl Pass<'_> {
    fn push_requeue(&mut self, d: Duration) {
        let d = d.max(Duration::from_millis(100));
        self.requeue = Some(self.requeue.map_or(d, |x| x.min(d)));
    }

    /// A finished job: deleted once its TTL has passed, else looked at again then.
    async fn finished(&mut self) -> Result<Action, Error> {
        match plan::ttl_left(self.job, self.now) {
            Some(Ok(())) => {
                info!(
                    broadcastjob = self.key,
                    "deleting BroadcastJob past its TTL"
                );
                let api: Api<BroadcastJob> = Api::namespaced(self.ctx.client.clone(), &self.ns);
                let params = DeleteParams {
                    preconditions: Some(kube::api::Preconditions {
                        uid: self.job.metadata.uid.clone(),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(&self.name, &params).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => {
                        warn!(broadcastjob = self.key, error = %e, "failed to delete BroadcastJob");
                        return Err(e.into());
                    }
                }
                Ok(Action::await_change())
            }
            Some(Err(left)) => Ok(Action::requeue(left)),
            None => Ok(Action::await_change()),
        }
    }

    /// The job's pods (OpenKruise lists them by the job's labels and keeps those whose
    /// controller is this job).
    fn pods(&self) -> Vec<Arc<CachedPod>> {
        let labels = plan::job_labels(self.job);
        let uid = self.job.metadata.uid.as_deref().unwrap_or_default();
        self.state
            .pods
            .owned_by(uid)
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(self.ns.as_str()))
            .filter(|p| {
                let own = p.metadata.labels.as_ref();
                labels
                    .iter()
                    .all(|(k, v)| own.and_then(|l| l.get(k)) == Some(v))
            })
            .collect()
    }

    async fn run(&mut self) -> Result<(), Error> {
        let start = match self.status.start_time.clone() {
            Some(t) => t,
            None => {
                let t = Time(self.now);
                self.status.start_time = Some(t.clone());
                t
            }
        };
        let always = self
            .job
            .spec
            .completion_policy
            .as_ref()
            .and_then(|c| c.type_.as_deref())
            == Some(completion_policy_type::ALWAYS);
        if always && let Some(left) = plan::deadline_left(self.job, &start, self.now) {
            // OpenKruise requeues at the deadline after the first pass; every pass does here,
            // so a restarted manager still fails the job on time.
            if !left.is_zero() {
                self.push_requeue(left);
            }
        }
        if self.status.phase.is_empty() {
            self.status.phase = broadcastjob_phase::RUNNING.to_owned();
        }

        let pods = self.pods();
        let refs: Vec<&CachedPod> = pods.iter().map(Arc::as_ref).collect();
        let by_node = self.node_to_pod(&refs).await;
        let nodes: Vec<Arc<Node>> = self.state.nodes.store().state();
        let node_refs: Vec<&Node> = nodes.iter().map(Arc::as_ref).collect();
        let restart_limit = self
            .job
            .spec
            .failure_policy
            .as_ref()
            .and_then(|f| f.restart_limit)
            .unwrap_or(0);
        let states: PodStates<'_> = plan::filter_pods(restart_limit, &refs);
        let mut active = states.active.len() as i32;
        let mut failed = states.failed.len() as i32;
        let succeeded = states.succeeded.len() as i32;
        let nodes_plan = plan::nodes_to_run(self.template, &node_refs, &by_node);
        let desired = nodes_plan.desired.len() as i32;
        info!(
            broadcastjob = self.key,
            rest = nodes_plan.rest.len(),
            desired,
            active,
            failed,
            "reconciling BroadcastJob"
        );
        self.status.active = active;
        self.status.failed = failed;
        self.status.succeeded = succeeded;
        self.status.desired = desired;

        if self.status.phase == broadcastjob_phase::FAILED {
            return self.write_status().await;
        }
        let paused = self.job.spec.paused == Some(true);
        let phase = self.status.phase.clone();
        if paused && (phase == broadcastjob_phase::RUNNING || phase == broadcastjob_phase::PAUSED) {
            self.status.phase = broadcastjob_phase::PAUSED.to_owned();
            return self.write_status().await;
        }
        if !paused && phase == broadcastjob_phase::PAUSED {
            self.status.phase = broadcastjob_phase::RUNNING.to_owned();
            self.normal("Continue", "continue to process job").await;
        }

        let policy = self
            .job
            .spec
            .failure_policy
            .as_ref()
            .and_then(|f| f.type_.as_deref())
            .unwrap_or("");
        let mut failure: Option<(&'static str, String)> = None;
        if failed > 0 {
            if policy == failure_policy_type::PAUSE {
                self.warning("Paused", "job is paused, due to failed pod")
                    .await;
                self.status.phase = broadcastjob_phase::PAUSED.to_owned();
                return self.write_status().await;
            }
            if policy == failure_policy_type::FAIL_FAST {
                let (reason, message) = (
                    "failed pod is found",
                    "failure policy is FailurePolicyTypeFailFast and failed pod is found"
                        .to_owned(),
                );
                self.warning(
                    reason,
                    &format!("{message}: {succeeded} pods succeeded, {failed} pods failed"),
                )
                .await;
                failure = Some((reason, message));
            }
        }
        if failure.is_none() {
            failure = plan::deadline_failure(self.job, &start, self.now);
        }

        let mut first_error: Option<Error> = None;
        if let Some((reason, message)) = failure {
            // The job failed: its active pods go.
            let (f, a, err) = self.delete_pods(&states.active, failed, active).await;
            (failed, active) = (f, a);
            first_error = err;
            self.status.phase = broadcastjob_phase::FAILED.to_owned();
            self.finish(job_condition_type::FAILED, message.clone());
            self.warning(
                reason,
                &format!("{message}: {succeeded} pods succeeded, {failed} pods failed"),
            )
            .await;
        } else {
            if !nodes_plan.to_delete.is_empty() {
                let (f, a, err) = self
                    .delete_pods(&nodes_plan.to_delete, failed, active)
                    .await;
                (failed, active) = (f, a);
                first_error = err;
            }
            if self.job.metadata.deletion_timestamp.is_none() && !nodes_plan.rest.is_empty() {
                match self.start_pods(&nodes_plan.rest, active, desired).await {
                    Ok(started) => active += started,
                    Err(e) => {
                        warn!(broadcastjob = self.key, error = %e, "failed to create pods");
                        first_error.get_or_insert(e);
                    }
                }
            }
            if plan::is_complete(self.job, &nodes_plan.desired) {
                self.status.phase = broadcastjob_phase::COMPLETED.to_owned();
                self.finish(
                    job_condition_type::COMPLETE,
                    format!("Job completed, {succeeded} pods succeeded, {failed} pods failed"),
                );
                let note = format!(
                    "Job {}/{} is completed, {succeeded} pods succeeded, {failed} pods failed",
                    self.ns, self.name
                );
                self.normal("JobComplete", &note).await;
            }
        }
        self.status.failed = failed;
        self.status.active = active;
        let written = self.write_status().await;
        match first_error {
            Some(e) => Err(e),
            None => written,
        }
    }

    /// OpenKruise `getNodeToPodMap`: pods by their assigned node; a second pod on a node is
    /// reported (`DuplicatePodCreatedOnSameNode`) and the later one in the list kept.
    async fn node_to_pod<'p>(&self, pods: &[&'p CachedPod]) -> HashMap<String, &'p CachedPod> {
        let mut map: HashMap<String, &CachedPod> = HashMap::new();
        for &p in pods {
            let node = plan::assigned_node(p);
            if map.contains_key(&node) {
                let note = format!("Duplicated pod {} found on same node {node}", p.name_any());
                self.warning("DuplicatePodCreatedOnSameNode", &note).await;
            }
            map.insert(node, p);
        }
        map
    }

    /// OpenKruise `finishJob`: the condition, the completion time, and a look again just after
    /// the TTL.
    fn finish(&mut self, type_: &str, message: String) {
        self.status
            .conditions
            .get_or_insert_with(Vec::new)
            .push(plan::condition(type_, message, self.now));
        self.status.completion_time = Some(Time(self.now));
        self.requeue = None;
        if let Some(ttl) = self
            .job
            .spec
            .completion_policy
            .as_ref()
            .and_then(|c| c.ttl_seconds_after_finished)
        {
            self.push_requeue(Duration::from_secs(ttl.max(0) as u64 + 1));
        }
    }

    fn pod_control(&self) -> PodControl<'_> {
        PodControl {
            client: &self.ctx.client,
            recorder: &self.ctx.recorder,
            owner: &self.owner,
            namespace: &self.ns,
            key: self.key,
            scale: &self.state.scale,
            style: EventStyle::BroadcastJob,
        }
    }

    /// OpenKruise `deleteJobPods`: deletes `pods`, each deletion counting one more failed and
    /// one less active pod; returns the counts and the first error.
    async fn delete_pods(
        &self,
        pods: &[&CachedPod],
        mut failed: i32,
        mut active: i32,
    ) -> (i32, i32, Option<Error>) {
        let control = self.pod_control();
        let rvs = kruise_engines::expectations::ResourceVersionExpectations::new();
        let results = futures::future::join_all(
            pods.iter()
                .map(|p| control.delete_or_hold(p, std::iter::empty(), None, &rvs)),
        )
        .await;
        let mut first = None;
        for r in results {
            match r {
                Ok(_) => {
                    failed += 1;
                    active -= 1;
                }
                Err(e) => {
                    first.get_or_insert(Error::from(e));
                }
            }
        }
        (failed, active, first)
    }

    /// OpenKruise `reconcilePods`: starts pods on the first nodes of `rest` within the
    /// parallelism, in slow-start batches; returns how many were created.
    async fn start_pods(&self, rest: &[String], active: i32, desired: i32) -> Result<i32, Error> {
        let count = match plan::pods_to_start(self.job, active, desired, rest.len()) {
            Ok(Some(n)) => n,
            Ok(None) => {
                self.warning(
                    "TooManyActivePods",
                    "Number of active pods exceed parallelism limit",
                )
                .await;
                return Ok(0);
            }
            Err(e) => return Err(Error::Other(e)),
        };
        if count == 0 {
            return Ok(0);
        }
        let new: Vec<NewPod> = rest[..count]
            .iter()
            .map(|node| NewPod {
                pod: self.new_pod(node),
                claims: Vec::new(),
            })
            .collect();
        let created = self
            .pod_control()
            .create_slow_start(new, &Default::default())
            .await?;
        Ok(created as i32)
    }

    /// The pod for `node` (upstream `GetPodFromTemplate` with the job's labels, bound by
    /// `ReplaceDaemonSetPodNodeNameNodeAffinity`, OpenKruise's default
    /// `--assign-bcj-pods-by-scheduler`).
    fn new_pod(&self, node: &str) -> Pod {
        let t = self.job.spec.template.metadata.clone().unwrap_or_default();
        let mut labels = t.labels.unwrap_or_default();
        labels.extend(plan::job_labels(self.job));
        let mut spec = self.template.clone();
        crate::controllers::daemonset::plan::bind_to_node(&mut spec, node, true);
        Pod {
            metadata: ObjectMeta {
                name: Some(generated_name(&self.name)),
                namespace: Some(self.ns.clone()),
                labels: Some(labels),
                annotations: t.annotations,
                finalizers: t.finalizers,
                owner_references: Some(vec![revision::controller_ref(
                    API_VERSION,
                    KIND,
                    &self.name,
                    self.job.metadata.uid.as_deref().unwrap_or_default(),
                )]),
                ..Default::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    async fn normal(&self, reason: &str, note: &str) {
        self.ctx.recorder.normal(&self.owner, reason, note).await;
    }

    async fn warning(&self, reason: &str, note: &str) {
        self.ctx.recorder.warning(&self.owner, reason, note).await;
    }

    /// Writes the status when it changed (a merge patch of the whole status, as OpenKruise's
    /// `UpdateStatus` leaves it).
    async fn write_status(&self) -> Result<(), Error> {
        if self.job.status.as_ref() == Some(&self.status) {
            return Ok(());
        }
        let api: Api<BroadcastJob> = Api::namespaced(self.ctx.client.clone(), &self.ns);
        let mut status = serde_json::to_value(&self.status).unwrap_or_default();
        if let Some(m) = status.as_object_mut() {
            for k in ["conditions", "startTime", "completionTime"] {
                m.entry(k).or_insert(serde_json::Value::Null);
            }
        }
        match api
            .patch_status(
                &self.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(Error::Other(format!(
                "failed to update BroadcastJob {} status: {e}",
                self.key
            ))),
        }
    }
}
