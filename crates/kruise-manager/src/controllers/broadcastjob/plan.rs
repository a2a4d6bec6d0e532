//! Pure decisions of the BroadcastJob controller (OpenKruise v1.9.0
//! `pkg/controller/broadcastjob`): the labels its pods carry, which nodes run a pod
//! (`checkNodeFitness`), how pods are counted (`filterPods`), how many pods a pass may start
//! (`parallelism`), when the job is complete, past its deadline or past its TTL, and the
//! conditions it records. No I/O; the caller passes `now`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Affinity, Container, Node, PodSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1beta1::{
    BroadcastJob, JobCondition, completion_policy_type, job_condition_type,
};
use kruise_api::pod::CachedPod;
use kruise_api::validation::quantity::parse_quantity;

use crate::controllers::daemonset::plan as ds;

/// Pod label naming the job (OpenKruise `JobNameLabelKey`).
pub const JOB_NAME_LABEL: &str = "broadcastjob-name";
/// Pod label holding the job's UID (OpenKruise `ControllerUIDLabelKey`).
pub const CONTROLLER_UID_LABEL: &str = "broadcastjob-controller-uid";

/// The labels every pod of `job` carries and is listed by (OpenKruise `labelsAsMap`).
pub fn job_labels(job: &BroadcastJob) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            JOB_NAME_LABEL.to_owned(),
            job.metadata.name.clone().unwrap_or_default(),
        ),
        (
            CONTROLLER_UID_LABEL.to_owned(),
            job.metadata.uid.clone().unwrap_or_default(),
        ),
    ])
}

/// Whether the completion policy is `Never` (the job never finishes).
pub fn never_completes(job: &BroadcastJob) -> bool {
    job.spec
        .completion_policy
        .as_ref()
        .and_then(|c| c.type_.as_deref())
        == Some(completion_policy_type::NEVER)
}

/// OpenKruise `IsJobFinished`: not with completion policy `Never`; else a `Complete` or
/// `Failed` condition that is `True`.
pub fn is_finished(job: &BroadcastJob) -> bool {
    if never_completes(job) {
        return false;
    }
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| {
            (c.type_ == job_condition_type::COMPLETE || c.type_ == job_condition_type::FAILED)
                && c.status == "True"
        })
}

fn seconds_between(from: &Time, now: jiff::Timestamp) -> f64 {
    now.duration_since(from.0).as_secs_f64()
}

/// OpenKruise `pastTTLDeadline`: with `ttlSecondsAfterFinished` and a completion time,
/// `Ok(())` when the TTL has passed, else `Err(left)`; `None` without either.
pub fn ttl_left(job: &BroadcastJob, now: jiff::Timestamp) -> Option<Result<(), Duration>> {
    let ttl = job
        .spec
        .completion_policy
        .as_ref()?
        .ttl_seconds_after_finished?;
    let done = job.status.as_ref()?.completion_time.as_ref()?;
    let left = f64::from(ttl) - seconds_between(done, now);
    Some(if left <= 0.0 {
        Ok(())
    } else {
        Err(Duration::from_secs_f64(left))
    })
}

/// Time left until `activeDeadlineSeconds` (counted from `start`) passes; `None` without a
/// deadline, zero once past (OpenKruise `pastActiveDeadline`).
pub fn deadline_left(job: &BroadcastJob, start: &Time, now: jiff::Timestamp) -> Option<Duration> {
    let ads = job
        .spec
        .completion_policy
        .as_ref()?
        .active_deadline_seconds?;
    let left = ads as f64 - seconds_between(start, now);
    Some(Duration::from_secs_f64(left.max(0.0)))
}

/// OpenKruise `isJobFailed`: with completion policy other than `Never`, the active deadline has
/// passed since `start`: `(reason, message)`.
pub fn deadline_failure(
    job: &BroadcastJob,
    start: &Time,
    now: jiff::Timestamp,
) -> Option<(&'static str, String)> {
    if never_completes(job) {
        return None;
    }
    deadline_left(job, start, now)
        .filter(|d| d.is_zero())
        .map(|_| {
            (
                "DeadlineExceeded",
                format!(
                    "Job {}/{} was active longer than specified deadline",
                    job.metadata.namespace.as_deref().unwrap_or(""),
                    job.metadata.name.as_deref().unwrap_or("")
                ),
            )
        })
}

/// OpenKruise `newCondition`: a `True` condition of `type_` whose reason is the type.
pub fn condition(type_: &str, message: String, now: jiff::Timestamp) -> JobCondition {
    JobCondition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
        reason: Some(type_.to_owned()),
        message: Some(message),
    }
}

// ---------------------------------------------------------------------------------------------
// Pods

fn phase(p: &CachedPod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_ref())
        .map_or("", |w| w.as_str())
}

/// OpenKruise `isPodFailed`: an `OnFailure` pod whose containers (init and regular) restarted
/// more than `restart_limit` times in all.
pub fn restarted_too_often(restart_limit: i32, p: &CachedPod) -> bool {
    if p.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) != Some("OnFailure") {
        return false;
    }
    let Some(st) = p.status.as_ref() else {
        return false;
    };
    let count: i64 = st
        .init_container_statuses
        .iter()
        .chain(st.container_statuses.iter())
        .flatten()
        .map(|c| i64::from(c.restart_count))
        .sum();
    count > i64::from(restart_limit)
}

/// Upstream `IsPodActive`: neither Succeeded nor Failed, and not being deleted.
pub fn is_active(p: &CachedPod) -> bool {
    let ph = phase(p);
    ph != "Succeeded" && ph != "Failed" && p.metadata.deletion_timestamp.is_none()
}

/// The job's pods by state (OpenKruise `filterPods`).
#[derive(Debug, Default)]
pub struct PodStates<'a> {
    /// Running or pending and not being deleted, not restarted too often.
    pub active: Vec<&'a CachedPod>,
    /// Failed, or restarted more than `restartLimit` times.
    pub failed: Vec<&'a CachedPod>,
    /// Succeeded.
    pub succeeded: Vec<&'a CachedPod>,
}

/// OpenKruise `filterPods`: pods being deleted (and neither Succeeded nor Failed) count nowhere.
pub fn filter_pods<'a>(restart_limit: i32, pods: &[&'a CachedPod]) -> PodStates<'a> {
    let mut out = PodStates::default();
    for &p in pods {
        match phase(p) {
            "Succeeded" => out.succeeded.push(p),
            "Failed" => out.failed.push(p),
            _ if p.metadata.deletion_timestamp.is_none() => {
                if restarted_too_often(restart_limit, p) {
                    out.failed.push(p);
                } else {
                    out.active.push(p);
                }
            }
            _ => {}
        }
    }
    out
}

/// OpenKruise `getAssignedNode`: `spec.nodeName`, else the single `metadata.name In` value of
/// the required node affinity; empty when neither.
pub fn assigned_node(p: &CachedPod) -> String {
    ds::target_node(p).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Node fitness (checkNodeFitness)

/// Why a pod does not fit on a node (the scheduler plugins' reasons OpenKruise logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    /// `spec.nodeName` names another node.
    NodeName,
    /// Node selector or required node affinity do not match.
    Affinity,
    /// A NoSchedule/NoExecute taint is not tolerated: `(key, value)`.
    Taint(String, String),
    /// The node is unschedulable and the pod does not tolerate it.
    Unschedulable,
    /// The node lacks allocatable resources: the scheduler's reasons (`Too many pods`,
    /// `Insufficient cpu`, …).
    Resources(Vec<String>),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NodeName => f.write_str("node(s) didn't match the requested node name"),
            Unfit::Affinity => f.write_str("node(s) didn't match Pod's node affinity/selector"),
            Unfit::Taint(k, v) => write!(
                f,
                "node(s) had taint {{{k}: {v}}}, that the pod didn't tolerate"
            ),
            Unfit::Unschedulable => f.write_str("node(s) were unschedulable"),
            Unfit::Resources(r) => f.write_str(&r.join(", ")),
        }
    }
}

/// What OpenKruise's `checkNodeFitness` reads of a pod: its template's spec (node selector,
/// tolerations, requests), and the node name and affinity it has — for the mock pod of a node
/// without one (`NewMockPod`) the node's name and the template's affinity, for an existing pod
/// its own (its required affinity is the single `metadata.name In [node]` term the controller
/// wrote; the other fields Kubernetes does not let change, so the template's are the pod's
/// unless the template changed since). Borrowed, so checking costs no copy of the template.
#[derive(Clone, Copy, Debug)]
pub struct FitPod<'a> {
    /// The job's template spec.
    pub template: &'a PodSpec,
    /// `spec.nodeName` (empty: unset).
    pub node_name: &'a str,
    /// `spec.affinity`.
    pub affinity: Option<&'a Affinity>,
}

impl<'a> FitPod<'a> {
    /// OpenKruise `NewMockPod`: the template bound to `node` by `spec.nodeName`.
    pub fn mock(template: &'a PodSpec, node: &'a str) -> Self {
        Self {
            template,
            node_name: node,
            affinity: template.affinity.as_ref(),
        }
    }

    /// An existing pod of the job (see [`FitPod`]).
    pub fn existing(template: &'a PodSpec, pod: &'a CachedPod) -> Self {
        let own = pod.spec.as_ref();
        Self {
            template,
            node_name: own.and_then(|s| s.node_name.as_deref()).unwrap_or(""),
            affinity: own.and_then(|s| s.affinity.as_deref()),
        }
    }
}

/// OpenKruise `checkNodeFitness` of `pod` on `node`: node name, node selector and required
/// affinity, NoSchedule/NoExecute taints against the tolerations, `unschedulable` (tolerated
/// with the `node.kubernetes.io/unschedulable` NoSchedule taint), and the pod's resource
/// requests against the node's allocatable resources as if the node ran nothing else
/// (OpenKruise's `NodeInfo` holds no pods: a node without allocatable `pods` fits no pod).
pub fn node_fits(pod: FitPod<'_>, node: &Node) -> Result<(), Unfit> {
    let name = node.metadata.name.as_deref().unwrap_or("");
    if !pod.node_name.is_empty() && pod.node_name != name {
        return Err(Unfit::NodeName);
    }
    let spec = pod.template;
    if !ds::selector_and_affinity_match(spec.node_selector.as_ref(), pod.affinity, node) {
        return Err(Unfit::Affinity);
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or_default();
    let node_spec = node.spec.as_ref();
    if let Some(t) = node_spec
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|tol| ds::tolerates(tol, t)))
    {
        return Err(Unfit::Taint(
            t.key.clone(),
            t.value.clone().unwrap_or_default(),
        ));
    }
    let unschedulable_taint = Taint {
        key: "node.kubernetes.io/unschedulable".to_owned(),
        effect: "NoSchedule".to_owned(),
        ..Default::default()
    };
    if node_spec.and_then(|s| s.unschedulable) == Some(true)
        && !tolerations
            .iter()
            .any(|t| ds::tolerates(t, &unschedulable_taint))
    {
        return Err(Unfit::Unschedulable);
    }
    let missing = insufficient_resources(spec, node);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Unfit::Resources(missing))
    }
}

/// A resource amount as the scheduler's `Resource` holds it: milli-units for `cpu`, units for
/// everything else (`Quantity.Value()`, rounded up).
fn amount(resource: &str, q: &str) -> i128 {
    let scale = if resource == "cpu" { -3 } else { 0 };
    parse_quantity(q)
        .ok()
        .and_then(|q| q.scaled_value(scale))
        .unwrap_or(0)
}

fn add_requests(into: &mut HashMap<String, i128>, c: &Container) {
    let requests = c.resources.as_ref().and_then(|r| r.requests.as_ref());
    for (k, v) in requests.into_iter().flatten() {
        *into.entry(k.clone()).or_default() += amount(k, &v.0);
    }
}

fn max_into(into: &mut HashMap<String, i128>, other: &HashMap<String, i128>) {
    for (k, v) in other {
        let e = into.entry(k.clone()).or_default();
        *e = (*e).max(*v);
    }
}

/// Upstream `resourcehelper.PodRequests`: the containers' requests summed (with the sidecar
/// init containers, `restartPolicy: Always`), at least any init container's (plus the sidecars
/// started before it), plus the pod overhead.
pub fn pod_requests(spec: &PodSpec) -> HashMap<String, i128> {
    let mut reqs = HashMap::new();
    for c in &spec.containers {
        add_requests(&mut reqs, c);
    }
    let mut init_max = HashMap::new();
    let mut sidecars = HashMap::new();
    for c in spec.init_containers.iter().flatten() {
        if c.restart_policy.as_deref() == Some("Always") {
            add_requests(&mut reqs, c);
            add_requests(&mut sidecars, c);
            max_into(&mut init_max, &sidecars);
        } else {
            let mut tmp = sidecars.clone();
            add_requests(&mut tmp, c);
            max_into(&mut init_max, &tmp);
        }
    }
    max_into(&mut reqs, &init_max);
    for (k, v) in spec.overhead.iter().flatten() {
        *reqs.entry(k.clone()).or_default() += amount(k, &v.0);
    }
    reqs
}

/// Upstream `noderesources.Fits` against an empty node: the reasons the node's allocatable
/// resources cannot take the pod (empty: it fits).
pub fn insufficient_resources(spec: &PodSpec, node: &Node) -> Vec<String> {
    let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
    let alloc = |r: &str| {
        allocatable
            .and_then(|a| a.get(r))
            .map_or(0, |q| amount(r, &q.0))
    };
    let mut out = Vec::new();
    if alloc("pods") < 1 {
        out.push("Too many pods".to_owned());
    }
    let reqs = pod_requests(spec);
    let mut names: Vec<&String> = reqs.keys().filter(|k| *k != "pods").collect();
    names.sort_by_key(|k| match k.as_str() {
        "cpu" => (0, ""),
        "memory" => (1, ""),
        "ephemeral-storage" => (2, ""),
        other => (3, other),
    });
    for r in names {
        let want = reqs[r];
        if want > 0 && want > alloc(r) {
            out.push(format!("Insufficient {r}"));
        }
    }
    out
}

/// OpenKruise `getNodesToRunPod`'s answer.
#[derive(Debug, Default)]
pub struct NodePlan<'a> {
    /// Nodes that should run a pod, with their pod if they have one.
    pub desired: BTreeMap<String, Option<&'a CachedPod>>,
    /// Nodes (in the order given) that should run a pod and have none yet.
    pub rest: Vec<String>,
    /// Pods (not being deleted) on nodes that no longer fit them.
    pub to_delete: Vec<&'a CachedPod>,
}

/// OpenKruise `getNodesToRunPod`: per node, an existing pod (`by_node`) is kept while it still
/// fits and deleted otherwise; a node without one gets a pod when the template fits there.
pub fn nodes_to_run<'a>(
    template: &PodSpec,
    nodes: &[&Node],
    by_node: &HashMap<String, &'a CachedPod>,
) -> NodePlan<'a> {
    let mut out = NodePlan::default();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(&pod) = by_node.get(&name) {
            let fits = node_fits(FitPod::existing(template, pod), node);
            if fits.is_err() && pod.metadata.deletion_timestamp.is_none() {
                out.to_delete.push(pod);
                continue;
            }
            out.desired.insert(name, Some(pod));
        } else if node_fits(FitPod::mock(template, &name), node).is_ok() {
            out.desired.insert(name.clone(), None);
            out.rest.push(name);
        }
    }
    out
}

/// OpenKruise `isJobComplete`: never with completion policy `Never`, nor without desired
/// nodes; else when every desired node has a pod that is no longer active.
pub fn is_complete(job: &BroadcastJob, desired: &BTreeMap<String, Option<&CachedPod>>) -> bool {
    if never_completes(job) || desired.is_empty() {
        return false;
    }
    desired.values().all(|p| p.is_some_and(|p| !is_active(p)))
}

/// How many pods the pass may start (OpenKruise `reconcilePods`): the parallelism (an int, or a
/// percentage of `desired` rounded up; unlimited when unset) less the active pods, at most the
/// nodes still without a pod. `None` when more pods are active than the parallelism allows
/// (OpenKruise's `TooManyActivePods` Warning). An unparsable percentage is an error.
pub fn pods_to_start(
    job: &BroadcastJob,
    active: i32,
    desired: i32,
    rest: usize,
) -> Result<Option<usize>, String> {
    let parallelism = match job.spec.parallelism.as_ref() {
        None => i64::from(i32::MAX),
        Some(v) => kruise_engines::intstr::scaled_value(v, i64::from(desired), true)
            .map_err(|e| e.to_string())?,
    };
    let active = i64::from(active);
    if active > parallelism {
        return Ok(None);
    }
    Ok(Some(((parallelism - active).max(0) as usize).min(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn node(name: &str, extra: Value) -> Node {
        let mut v = json!({"metadata": {"name": name, "labels": {"pool": "a"}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
        merge(&mut v, extra);
        serde_json::from_value(v).unwrap()
    }

    fn merge(base: &mut Value, extra: Value) {
        match (base, extra) {
            (Value::Object(b), Value::Object(e)) => {
                for (k, v) in e {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, e) => *b = e,
        }
    }

    fn spec(v: Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    fn job(spec: Value) -> BroadcastJob {
        serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1",
            "kind": "BroadcastJob", "metadata": {"name": "j", "namespace": "ns", "uid": "u1"},
            "spec": spec}))
        .unwrap()
    }

    fn pod(phase: &str, node: &str, extra: Value) -> CachedPod {
        let mut v = json!({"metadata": {"name": format!("p-{node}"), "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}], "nodeName": node},
            "status": {"phase": phase}});
        merge(&mut v, extra);
        serde_json::from_value(v).unwrap()
    }

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn fitness_follows_selector_taints_unschedulable_and_resources() {
        let t = spec(json!({"containers": [{"name": "c"}], "nodeSelector": {"pool": "a"}}));
        let n = node("n1", json!({}));
        assert_eq!(node_fits(FitPod::mock(&t, "n1"), &n), Ok(()));
        assert_eq!(
            node_fits(
                FitPod::mock(&t, "n1"),
                &node("n1", json!({"metadata": {"labels": {"pool": "b"}}}))
            ),
            Err(Unfit::Affinity)
        );
        assert_eq!(node_fits(FitPod::mock(&t, "n2"), &n), Err(Unfit::NodeName));
        let tainted = node(
            "n1",
            json!({"spec": {"taints": [
            {"key": "k", "value": "v", "effect": "NoSchedule"}]}}),
        );
        let e = node_fits(FitPod::mock(&t, "n1"), &tainted).unwrap_err();
        assert_eq!(
            e.to_string(),
            "node(s) had taint {k: v}, that the pod didn't tolerate"
        );
        // PreferNoSchedule is not a predicate; a toleration lets the pod in.
        let soft = node(
            "n1",
            json!({"spec": {"taints": [{"key": "k", "effect": "PreferNoSchedule"}]}}),
        );
        assert_eq!(node_fits(FitPod::mock(&t, "n1"), &soft), Ok(()));
        let tol = spec(json!({"containers": [{"name": "c"}],
            "tolerations": [{"key": "k", "operator": "Exists"}]}));
        assert_eq!(node_fits(FitPod::mock(&tol, "n1"), &tainted), Ok(()));
        let cordoned = node("n1", json!({"spec": {"unschedulable": true}}));
        assert_eq!(
            node_fits(FitPod::mock(&t, "n1"), &cordoned),
            Err(Unfit::Unschedulable)
        );
        let tol_u = spec(json!({"containers": [{"name": "c"}], "tolerations": [
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}));
        assert_eq!(node_fits(FitPod::mock(&tol_u, "n1"), &cordoned), Ok(()));
        let big = spec(
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "5", "memory": "1Gi"}}}]}),
        );
        assert_eq!(
            node_fits(FitPod::mock(&big, "n1"), &n),
            Err(Unfit::Resources(vec!["Insufficient cpu".into()]))
        );
        // No allocatable pods: no pod fits (OpenKruise's NodeInfo of the node alone).
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
        assert_eq!(
            node_fits(FitPod::mock(&t, "n1"), &bare),
            Err(Unfit::Affinity)
        );
        let any = spec(json!({"containers": [{"name": "c"}]}));
        assert_eq!(
            node_fits(FitPod::mock(&any, "n1"), &bare),
            Err(Unfit::Resources(vec!["Too many pods".into()]))
        );
    }

    #[test]
    fn pod_requests_take_init_containers_sidecars_and_overhead() {
        let s = spec(json!({
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}},
                           {"name": "b", "resources": {"requests": {"cpu": "200m", "memory": "1Mi"}}}],
            "initContainers": [
                {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                {"name": "init", "resources": {"requests": {"cpu": "1", "memory": "1k"}}}],
            "overhead": {"cpu": "10m"}}));
        let r = pod_requests(&s);
        // max(100+200+50, 1000+50) + 10
        assert_eq!(r["cpu"], 1060);
        assert_eq!(r["memory"], 1024 * 1024);
    }

    #[test]
    fn pods_are_counted_as_openkruise_filters_them() {
        let running = pod("Running", "n1", json!({}));
        let done = pod("Succeeded", "n2", json!({}));
        let failed = pod("Failed", "n3", json!({}));
        let deleting = pod(
            "Running",
            "n4",
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
        );
        let restarted = pod(
            "Running",
            "n5",
            json!({"spec": {"restartPolicy": "OnFailure"},
            "status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 3}]}}),
        );
        let all = [&running, &done, &failed, &deleting, &restarted];
        let s = filter_pods(2, &all);
        assert_eq!(
            (s.active.len(), s.failed.len(), s.succeeded.len()),
            (1, 2, 1)
        );
        let s = filter_pods(3, &all);
        assert_eq!(
            (s.active.len(), s.failed.len(), s.succeeded.len()),
            (2, 1, 1)
        );
        assert!(!is_active(&deleting));
    }

    #[test]
    fn nodes_plan_keeps_fitting_pods_and_deletes_the_rest() {
        let t = spec(json!({"containers": [{"name": "c"}], "nodeSelector": {"pool": "a"}}));
        let n1 = node("n1", json!({}));
        let n2 = node("n2", json!({"metadata": {"labels": {"pool": "b"}}}));
        let n3 = node("n3", json!({}));
        let n4 = node(
            "n4",
            json!({"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}}),
        );
        let p1 = pod("Running", "n1", json!({}));
        let p2 = pod("Running", "n2", json!({}));
        let by_node = HashMap::from([("n1".to_owned(), &p1), ("n2".to_owned(), &p2)]);
        let plan = nodes_to_run(&t, &[&n1, &n2, &n3, &n4], &by_node);
        assert_eq!(plan.desired.keys().collect::<Vec<_>>(), ["n1", "n3"]);
        assert_eq!(plan.rest, ["n3"]);
        assert_eq!(plan.to_delete.len(), 1);
        assert_eq!(plan.to_delete[0].metadata.name.as_deref(), Some("p-n2"));
    }

    #[test]
    fn completion_needs_every_desired_node_finished() {
        let j = job(json!({"template": {}, "completionPolicy": {"type": "Always"}}));
        let done = pod("Succeeded", "n1", json!({}));
        let failed = pod("Failed", "n2", json!({}));
        let running = pod("Running", "n3", json!({}));
        let mut desired = BTreeMap::from([
            ("n1".to_owned(), Some(&done)),
            ("n2".to_owned(), Some(&failed)),
        ]);
        assert!(is_complete(&j, &desired));
        assert!(
            !is_complete(&j, &BTreeMap::new()),
            "no desired node: pending"
        );
        desired.insert("n3".into(), Some(&running));
        assert!(!is_complete(&j, &desired));
        desired.insert("n3".into(), None);
        assert!(!is_complete(&j, &desired), "a node without its pod yet");
        let never = job(json!({"template": {}, "completionPolicy": {"type": "Never"}}));
        desired.remove("n3");
        assert!(!is_complete(&never, &desired));
    }

    #[test]
    fn parallelism_int_percent_and_unset() {
        let unset = job(json!({"template": {}}));
        assert_eq!(pods_to_start(&unset, 0, 10, 10), Ok(Some(10)));
        let two = job(json!({"template": {}, "parallelism": 2}));
        assert_eq!(pods_to_start(&two, 1, 10, 9), Ok(Some(1)));
        assert_eq!(pods_to_start(&two, 2, 10, 8), Ok(Some(0)));
        assert_eq!(pods_to_start(&two, 3, 10, 7), Ok(None), "TooManyActivePods");
        let pct = job(json!({"template": {}, "parallelism": "25%"}));
        // 25% of 10 rounded up: 3.
        assert_eq!(pods_to_start(&pct, 0, 10, 10), Ok(Some(3)));
        assert_eq!(pods_to_start(&pct, 0, 10, 2), Ok(Some(2)));
        let bad = job(json!({"template": {}, "parallelism": "x%"}));
        assert!(pods_to_start(&bad, 0, 10, 10).is_err());
    }

    #[test]
    fn deadline_ttl_and_finished() {
        let j = job(
            json!({"template": {}, "completionPolicy": {"type": "Always",
            "activeDeadlineSeconds": 10, "ttlSecondsAfterFinished": 5}}),
        );
        let start = Time(ts("2026-01-01T00:00:00Z"));
        assert_eq!(
            deadline_left(&j, &start, ts("2026-01-01T00:00:04Z")),
            Some(Duration::from_secs(6))
        );
        assert!(deadline_failure(&j, &start, ts("2026-01-01T00:00:09Z")).is_none());
        let (reason, msg) = deadline_failure(&j, &start, ts("2026-01-01T00:00:10Z")).unwrap();
        assert_eq!(reason, "DeadlineExceeded");
        assert_eq!(msg, "Job ns/j was active longer than specified deadline");
        assert!(!is_finished(&j));
        assert_eq!(
            ttl_left(&j, ts("2026-01-01T00:00:10Z")),
            None,
            "no completion time"
        );
        let mut done = j.clone();
        done.status = Some(kruise_api::apps::v1beta1::BroadcastJobStatus {
            completion_time: Some(Time(ts("2026-01-01T00:00:10Z"))),
            conditions: Some(vec![condition(
                "Complete",
                "m".into(),
                ts("2026-01-01T00:00:10Z"),
            )]),
            ..Default::default()
        });
        assert!(is_finished(&done));
        assert_eq!(
            ttl_left(&done, ts("2026-01-01T00:00:12Z")),
            Some(Err(Duration::from_secs(3)))
        );
        assert_eq!(ttl_left(&done, ts("2026-01-01T00:00:15Z")), Some(Ok(())));
        let mut never = done.clone();
        never.spec.completion_policy.as_mut().unwrap().type_ = Some("Never".into());
        assert!(!is_finished(&never));
        assert!(deadline_failure(&never, &start, ts("2026-01-01T01:00:00Z")).is_none());
    }

    #[test]
    fn job_labels_and_assigned_node() {
        let j = job(json!({"template": {}}));
        let l = job_labels(&j);
        assert_eq!(l[JOB_NAME_LABEL], "j");
        assert_eq!(l[CONTROLLER_UID_LABEL], "u1");
        let bound = pod(
            "Pending",
            "",
            json!({"spec": {"nodeName": null, "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}]}}}}}),
        );
        assert_eq!(assigned_node(&bound), "n9");
    }
}
