//! One pass over a WorkloadSpread (OpenKruise `syncWorkloadSpread`; module docs of [`super`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1alpha1::{
    WorkloadSpread, WorkloadSpreadStatus, WorkloadSpreadSubsetStatus,
};
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::json;
use tracing::info;

use kruise_runtime::events::object_ref;
use kruise_runtime::runner::Context;
use kruise_webhook::pod::workloadspread::{self as ws_util, FAKE_SUBSET_NAME};

use super::plan::{self, Notes};
use super::{Error, State};
use crate::workload::is_status;

/// How many times a status write that conflicts is retried on a fresh read.
const CONFLICT_ATTEMPTS: usize = 4;

/// `IgnorePatchExistingPodsAnnotation`.
const IGNORE_PATCH_EXISTING: &str = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";

/// pods grouped: version → subset → pods.
type Versioned<'a> = BTreeMap<String, BTreeMap<String, Vec<&'a CachedPod>>>;

/// The pass.
pub async fn sync(ws: &WorkloadSpread, ctx: &Context, state: &State) -> Result<Action, Error> {
    let (pods, replicas) = pods_and_replicas(ws, ctx, state).await?;
    let pods: Vec<&CachedPod> = pods.iter().map(Arc::as_ref).collect();
    let mut assigned: BTreeMap<String, String> = BTreeMap::new();
    let versioned = group(ws, &pods, replicas, state, ctx, &mut assigned).await?;
    update_deletion_costs(ws, &versioned, replicas, state, ctx).await?;
    let now = jiff::Timestamp::now();
    let mut notes = Notes::default();
    let mut current = ws.clone();
    let (mut status, mut failed) =
        calculate_status(&current, &versioned, replicas, now, &mut notes);
    // A conflict means the pod webhook recorded a pod in between: recompute on a fresh read.
    for attempt in 1..=CONFLICT_ATTEMPTS {
        let Some(st) = status.clone() else {
            break;
        };
        match write_status(&current, st, ctx).await {
            Ok(()) => break,
            Err(Error::Kube(e)) if is_status(&e, 409) && attempt < CONFLICT_ATTEMPTS => {
                let api: Api<WorkloadSpread> =
                    Api::namespaced(ctx.client.clone(), &ws.namespace().unwrap_or_default());
                let Some(fresh) = api.get_opt(&ws.name_any()).await? else {
                    return Ok(Action::await_change());
                };
                current = fresh;
                notes = Notes::default();
                (status, failed) =
                    calculate_status(&current, &versioned, replicas, now, &mut notes);
            }
            Err(e) => return Err(e),
        }
    }
    let owner = object_ref(ws);
    for w in &notes.warnings {
        let note = match w.reason {
            "CreatePodFailed" => format!(
                "Pod {}/{} was expected to be created but it wasn't",
                ws.namespace().unwrap_or_default(),
                w.pod
            ),
            _ => format!(
                "Pod {}/{} was expected to be deleted but it wasn't",
                ws.namespace().unwrap_or_default(),
                w.pod
            ),
        };
        ctx.recorder.warning(&owner, w.reason, &note).await;
    }
    for (subset, pods) in failed {
        delete_unscheduled(ws, &subset, &pods, ctx).await?;
    }
    Ok(match notes.requeue {
        Some(d) => Action::requeue(d.max(Duration::from_millis(100))),
        None => Action::await_change(),
    })
}

/// `getPodsForWorkloadSpread` + `filterWorkload`: the target's pods (any state) and replicas.
async fn pods_and_replicas(
    ws: &WorkloadSpread,
    ctx: &Context,
    state: &State,
) -> Result<(Vec<Arc<CachedPod>>, i32), Error> {
    let t = &ws.spec.target_reference;
    let ns = ws.namespace().unwrap_or_default();
    let (mut pods, mut replicas) =
        if t.kind == "Job" && ws_util::group_of(&t.api_version) == Some("batch") {
            match state.jobs.store().get(&ObjectRef::new(&t.name).within(&ns)) {
                None => (Vec::new(), 0),
                Some(job) => {
                    let uid = job.metadata.uid.clone().unwrap_or_default();
                    let pods = state.pods.owned_by(&uid);
                    (
                        pods,
                        job.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1),
                    )
                }
            }
        } else {
            state
                .finder
                .pods_for_ref(&state.pods, &t.api_version, &t.kind, &ns, &t.name, false)
                .await
                .map_err(|e| Error::Other(e.to_string()))?
        };
    // Replicas from paths (targetFilter.replicasPathList, or a whitelisted kind's replicasPath).
    let wants_path = ws
        .spec
        .target_filter
        .as_ref()
        .and_then(|f| f.replicas_path_list.as_ref())
        .is_some_and(|l| !l.is_empty());
    let builtin = matches!(
        t.kind.as_str(),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "CloneSet" | "Job"
    );
    if wants_path || !builtin {
        let lookup = kruise_webhook::lookup::Lookup::new(
            ctx.client.clone(),
            &ctx.cache,
            ctx.config.namespace.clone(),
            false,
        );
        let whitelist = ws_util::whitelist(&lookup).await;
        let has_path = whitelist.iter().any(|w| {
            Some(w.gvk.group.as_str()) == ws_util::group_of(&t.api_version)
                && w.gvk.kind == t.kind
                && !w.replicas_path.is_empty()
        });
        if wants_path || has_path {
            match ws_util::get_workload(&lookup, &t.api_version, &t.kind, &ns, &t.name).await {
                Ok(Some(obj)) => {
                    replicas = ws_util::replicas_of(&obj.to_json(), ws, &whitelist);
                }
                Ok(None) => {}
                Err(e) => return Err(Error::Other(e)),
            }
        }
    }
    if let Some(f) = ws
        .spec
        .target_filter
        .as_ref()
        .filter(|f| f.selector.is_some())
    {
        pods.retain(|p| {
            ws_util::is_pod_selected(Some(f), p.metadata.labels.as_ref()) == Some(true)
        });
    }
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok((pods, replicas))
}

fn owner_kind(p: &CachedPod) -> Option<&str> {
    crate::workload::finder::controller_ref(&p.metadata).map(|o| o.kind.as_str())
}

/// `groupVersionedPods` / `groupPodBySubset`: pods by version and subset; a pod without this
/// WorkloadSpread's annotation that runs on a node some subset fits is assigned there (the
/// annotation and the patch's metadata written to it).
async fn group<'a>(
    ws: &WorkloadSpread,
    pods: &[&'a CachedPod],
    replicas: i32,
    state: &State,
    ctx: &Context,
    assigned: &mut BTreeMap<String, String>,
) -> Result<Versioned<'a>, Error> {
    let mut by_version: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
    for p in pods {
        by_version
            .entry(ws_util::pod_version(
                owner_kind(p),
                p.metadata.labels.as_ref(),
            ))
            .or_default()
            .push(p);
    }
    let mut out = Versioned::new();
    for (version, vpods) in by_version {
        let mut missing = plan::missing_by_subset(ws, &vpods, replicas);
        let mut map: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
        map.insert(FAKE_SUBSET_NAME.to_string(), Vec::new());
        for s in &ws.spec.subsets {
            map.insert(s.name.clone(), Vec::new());
        }
        for p in vpods {
            let subset = match plan::annotated_subset(ws, p) {
                Some(s) => s,
                None => match suitable_subset(ws, p, &mut missing, state, ctx).await? {
                    Some(s) => {
                        assigned.insert(p.metadata.name.clone().unwrap_or_default(), s.clone());
                        s
                    }
                    None => FAKE_SUBSET_NAME.to_string(),
                },
            };
            map.entry(subset).or_default().push(p);
        }
        out.insert(version, map);
    }
    Ok(out)
}

/// `getAndUpdateSuitableSubsetName`: the best subset for a scheduled pod (see
/// [`plan::matches_subset`]), patched onto the pod.
async fn suitable_subset(
    ws: &WorkloadSpread,
    pod: &CachedPod,
    missing: &mut BTreeMap<String, i64>,
    state: &State,
    ctx: &Context,
) -> Result<Option<String>, Error> {
    let Some(node_name) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    let Some(node) = state.nodes.store().get(&ObjectRef::new(node_name)) else {
        return Ok(None);
    };
    let mut best: Option<(i64, &kruise_api::apps::v1alpha1::WorkloadSpreadSubset)> = None;
    for s in &ws.spec.subsets {
        let m = missing.get(&s.name).copied().unwrap_or(0);
        if let Some(score) = plan::matches_subset(pod, &node, s, m)
            && best.is_none_or(|(b, _)| score > b)
        {
            best = Some((score, s));
        }
    }
    let Some((_, subset)) = best else {
        return Ok(None);
    };
    let mut metadata = serde_json::Map::new();
    let ignore = ws
        .annotations()
        .get(IGNORE_PATCH_EXISTING)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if !ignore
        && let Some(m) = subset
            .patch
            .as_ref()
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.as_object())
    {
        metadata = m.clone();
    }
    let inject = serde_json::to_string(&kruise_api::apps::v1alpha1::InjectWorkloadSpread {
        name: ws.name_any(),
        subset: subset.name.clone(),
        uid: String::new(),
    })
    .map_err(|e| Error::Other(e.to_string()))?;
    let ann = metadata.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = ann.as_object_mut() {
        a.insert(keys::MATCHED_WORKLOADSPREAD.to_string(), json!(inject));
    } else {
        *ann = json!({keys::MATCHED_WORKLOADSPREAD: inject});
    }
    let api: Api<Pod> = Api::namespaced(
        ctx.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or(""),
    );
    match api
        .patch(
            pod.metadata.name.as_deref().unwrap_or(""),
            &PatchParams::default(),
            &Patch::Strategic(&json!({"metadata": metadata})),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    if let Some(v) = missing.get_mut(&subset.name) {
        *v -= 1;
    }
    Ok(Some(subset.name.clone()))
}

/// `updateDeletionCost`: for CloneSet, Deployment and ReplicaSet targets.
async fn update_deletion_costs(
    ws: &WorkloadSpread,
    versioned: &Versioned<'_>,
    replicas: i32,
    state: &State,
    ctx: &Context,
) -> Result<(), Error> {
    let t = &ws.spec.target_reference;
    if !matches!(t.kind.as_str(), "ReplicaSet" | "Deployment" | "CloneSet") {
        return Ok(());
    }
    let latest = latest_version(ws, state);
    let n = ws.spec.subsets.len();
    for (version, map) in versioned {
        let reverse = latest.as_deref() != Some(version.as_str());
        let idx = |i: usize| if reverse { n - i - 1 } else { i };
        let mut costs = Vec::new();
        for (i, s) in ws.spec.subsets.iter().enumerate() {
            let pods = map.get(&s.name).map(Vec::as_slice).unwrap_or_default();
            costs.extend(plan::subset_deletion_costs(
                Some(s),
                idx(i),
                n,
                pods,
                replicas,
            ));
        }
        if let Some(fake) = map.get(FAKE_SUBSET_NAME).filter(|f| !f.is_empty()) {
            costs.extend(plan::subset_deletion_costs(None, n, n, fake, replicas));
        }
        for (pod, cost) in costs {
            patch_cost(ws, pod, &cost, ctx).await?;
        }
    }
    Ok(())
}

/// `getWorkloadLatestVersion`: a Deployment's current ReplicaSet's `pod-template-hash`, a
/// ReplicaSet's own; other targets are not versioned.
fn latest_version(ws: &WorkloadSpread, state: &State) -> Option<String> {
    let t = &ws.spec.target_reference;
    let ns = ws.namespace().unwrap_or_default();
    match t.kind.as_str() {
        "Deployment" => {
            state
                .finder
                .deployments()
                .store()
                .get(&ObjectRef::new(&t.name).within(&ns))?;
            let mut best: Option<(i64, String)> = None;
            // Without a ReplicaSet informer here, the newest pod-template-hash among the
            // Deployment's pods stands for its current version.
            for p in state.pods.in_namespace(&ns) {
                let owned = crate::workload::finder::controller_ref(&p.metadata).is_some_and(|o| {
                    o.kind == "ReplicaSet" && o.name.starts_with(&format!("{}-", t.name))
                });
                if !owned {
                    continue;
                }
                let created = p
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or(0, |c| c.0.as_second());
                if let Some(h) = p
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("pod-template-hash"))
                    && best.as_ref().is_none_or(|(c, _)| created > *c)
                {
                    best = Some((created, h.clone()));
                }
            }
            best.map(|(_, h)| h)
        }
        "ReplicaSet" => None,
        _ => Some(ws_util::VERSION_IGNORED.to_string()),
    }
}

/// `patchPodDeletionCost`: a strategic-merge patch of the annotation when it differs (a 0 cost
/// is not written to a pod without one).
async fn patch_cost(
    ws: &WorkloadSpread,
    pod: &CachedPod,
    cost: &str,
    ctx: &Context,
) -> Result<(), Error> {
    let old = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::POD_DELETION_COST));
    if old.map(String::as_str) == Some(cost) || (old.is_none() && cost == "0") {
        return Ok(());
    }
    let api: Api<Pod> = Api::namespaced(
        ctx.client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or(""),
    );
    let body = json!({"metadata": {"annotations": {keys::POD_DELETION_COST: cost}}});
    match api
        .patch(
            pod.metadata.name.as_deref().unwrap_or(""),
            &PatchParams::default(),
            &Patch::Strategic(&body),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => {
            ctx.recorder
                .warning(
                    &object_ref(ws),
                    "PatchPodDeletionCostFailed",
                    &format!(
                        "WorkloadSpread {}/{} failed to patch deletion-cost annotation to {} for Pod {}/{}",
                        ws.namespace().unwrap_or_default(),
                        ws.name_any(),
                        cost,
                        pod.metadata.namespace.as_deref().unwrap_or(""),
                        pod.metadata.name.as_deref().unwrap_or("")
                    ),
                )
                .await;
            Err(e.into())
        }
    }
}

/// The subsets' pods that failed to schedule, by subset.
type Failed<'a> = Vec<(String, Vec<&'a CachedPod>)>;

/// `calculateWorkloadSpreadStatus`: the new status (`None` when a limit is malformed) and the
/// pods to reschedule.
fn calculate_status<'a>(
    ws: &WorkloadSpread,
    versioned: &Versioned<'a>,
    replicas: i32,
    now: jiff::Timestamp,
    notes: &mut Notes,
) -> (Option<WorkloadSpreadStatus>, Failed<'a>) {
    let old = ws.status.clone().unwrap_or_default();
    let mut all: BTreeMap<String, Vec<&CachedPod>> = BTreeMap::new();
    for map in versioned.values() {
        for (s, pods) in map {
            all.entry(s.clone())
                .or_default()
                .extend(pods.iter().copied());
        }
    }
    let mut failed = Failed::new();
    let Some(subset_statuses) = subset_statuses(
        ws,
        old.subset_statuses.as_deref().unwrap_or_default(),
        &all,
        replicas,
        now,
        notes,
        Some(&mut failed),
    ) else {
        return (None, Vec::new());
    };
    let mut versioned_statuses = BTreeMap::new();
    let old_versioned = old.versioned_subset_statuses.clone().unwrap_or_default();
    let mut scratch = Notes::default();
    for (version, map) in versioned {
        let olds = old_versioned
            .get(version)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(s) = subset_statuses_quiet(ws, olds, map, replicas, now, notes) {
            versioned_statuses.insert(version.clone(), s);
        }
    }
    for (version, olds) in &old_versioned {
        if versioned.contains_key(version) {
            continue;
        }
        if let Some(s) =
            subset_statuses_quiet(ws, olds, &BTreeMap::new(), replicas, now, &mut scratch)
            && !plan::is_empty(&s)
        {
            versioned_statuses.insert(version.clone(), s);
        }
    }
    let status = WorkloadSpreadStatus {
        observed_generation: ws.metadata.generation,
        subset_statuses: Some(subset_statuses),
        versioned_subset_statuses: Some(versioned_statuses),
    };
    (Some(status), failed)
}

fn subset_statuses_quiet(
    ws: &WorkloadSpread,
    olds: &[WorkloadSpreadSubsetStatus],
    map: &BTreeMap<String, Vec<&CachedPod>>,
    replicas: i32,
    now: jiff::Timestamp,
    notes: &mut Notes,
) -> Option<Vec<WorkloadSpreadSubsetStatus>> {
    let mut local = Notes::default();
    let r = subset_statuses(ws, olds, map, replicas, now, &mut local, None);
    if let Some(d) = local.requeue {
        notes.requeue = Some(notes.requeue.map_or(d, |r| r.min(d)));
    }
    r
}

/// `calculateWorkloadSpreadSubsetStatuses`.
fn subset_statuses<'a>(
    ws: &WorkloadSpread,
    olds: &[WorkloadSpreadSubsetStatus],
    map: &BTreeMap<String, Vec<&'a CachedPod>>,
    replicas: i32,
    now: jiff::Timestamp,
    notes: &mut Notes,
    mut failed: Option<&mut Failed<'a>>,
) -> Option<Vec<WorkloadSpreadSubsetStatus>> {
    let strategy = ws.spec.schedule_strategy.as_ref();
    let critical = strategy
        .filter(|s| s.type_.as_deref() == Some("Adaptive"))
        .and_then(|s| s.adaptive.as_ref())
        .and_then(|a| a.reschedule_critical_seconds)
        .unwrap_or(0);
    let n = ws.spec.subsets.len();
    let mut out = Vec::with_capacity(n);
    for (i, subset) in ws.spec.subsets.iter().enumerate() {
        let old = olds.iter().find(|o| o.name == subset.name);
        let pods = map.get(&subset.name).map(Vec::as_slice).unwrap_or_default();
        let mut st = plan::subset_status(subset, pods, old, replicas, now, notes)?;
        if critical > 0 {
            if i != n - 1 {
                let (f, _recovered) = plan::reschedule_subset(
                    pods,
                    Duration::from_secs(critical as u64),
                    &mut st,
                    old,
                    now,
                    notes,
                );
                if let Some(failed) = failed.as_deref_mut() {
                    failed.push((subset.name.clone(), f));
                }
            } else {
                if let Some(c) = old
                    .and_then(|o| o.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == plan::SCHEDULABLE))
                {
                    plan::set_condition(&mut st, c.clone());
                }
                plan::set_condition(&mut st, plan::new_condition("True", now));
            }
        } else if let Some(c) = st.conditions.as_mut() {
            c.retain(|c| c.type_ != plan::SCHEDULABLE);
        }
        out.push(st);
    }
    Some(out)
}

/// Whether two statuses are equal as the API stores them (empty maps and lists as absent).
fn normalized(s: &WorkloadSpreadStatus) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|_, x| {
                    strip(x);
                    !(x.is_null()
                        || x.as_object().is_some_and(|o| o.is_empty())
                        || x.as_array().is_some_and(|a| a.is_empty()))
                });
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(s).unwrap_or_default();
    strip(&mut v);
    v
}

/// `UpdateWorkloadSpreadStatus`: written when it changed, under the WorkloadSpread's lock
/// shared with the pod webhook (a conflict is returned: the caller recomputes on a fresh read).
async fn write_status(
    ws: &WorkloadSpread,
    status: WorkloadSpreadStatus,
    ctx: &Context,
) -> Result<(), Error> {
    if normalized(&status) == normalized(&ws.status.clone().unwrap_or_default()) {
        return Ok(());
    }
    let lock = ws_util::lock_of(ws.metadata.uid.as_deref().unwrap_or(""));
    let _guard = lock.lock().await;
    let api: Api<WorkloadSpread> =
        Api::namespaced(ctx.client.clone(), &ws.namespace().unwrap_or_default());
    let mut current = ws.clone();
    current.status = Some(status);
    match api
        .replace_status(&ws.name_any(), &PostParams::default(), &current)
        .await
    {
        Ok(written) => {
            info!(workloadspread = %crate::scaffold::key(ws), "status updated");
            ws_util::remember(written);
            Ok(())
        }
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `deletePodsForSubset`: deletes the pods that failed to schedule (UID precondition).
async fn delete_unscheduled(
    ws: &WorkloadSpread,
    subset: &str,
    pods: &[&CachedPod],
    ctx: &Context,
) -> Result<(), Error> {
    for pod in pods {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        let api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(name, &dp).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
            Err(e) => {
                ctx.recorder
                    .warning(
                        &object_ref(ws),
                        "DeletePodFailed",
                        &format!(
                            "Failed to delete unschedulabe Pod {ns}/{name} in Subset {subset} of WorkloadSpread {}/{}",
                            ws.namespace().unwrap_or_default(),
                            ws.name_any()
                        ),
                    )
                    .await;
                return Err(e.into());
            }
        }
    }
    Ok(())
}
