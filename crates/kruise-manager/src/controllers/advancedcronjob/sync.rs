//! One pass over one AdvancedCronJob (OpenKruise's `reconcileJob` / `reconcileBroadcastJob`),
//! the same steps for both kinds of child through [`ChildKind`].

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1beta1::advancedcronjob::template_kind;
use kruise_api::apps::v1beta1::{AdvancedCronJob, BroadcastJob};
use kruise_api::keys;
use kruise_engines::cron;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::{debug, info, warn};

use kruise_runtime::cache::{Cached, Informer};
use kruise_runtime::runner::Context;

use super::plan::{self, Child, Finished, Run};
use super::{Error, State};
use crate::workload::is_status;

/// A kind of child an AdvancedCronJob creates from its template.
pub trait ChildKind:
    Cached
    + Serialize
    + DeserializeOwned
    + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
{
    /// `status.type` of a cron job with this template.
    const TEMPLATE_KIND: &'static str;
    /// What the plan reads of it.
    fn child(&self) -> Child;
    /// The child for `meta` from the cron job's template (`constructJobForCronJob`).
    fn from_template(cronjob: &AdvancedCronJob, meta: ObjectMeta) -> Self;
    /// The template's labels and annotations.
    fn template_meta(cronjob: &AdvancedCronJob) -> Option<&ObjectMeta>;
}

fn scheduled_at(meta: &ObjectMeta) -> Option<jiff::Timestamp> {
    let raw = meta.annotations.as_ref()?.get(keys::SCHEDULED_AT)?;
    let parsed = plan::parse_scheduled_at(raw);
    if parsed.is_none() {
        warn!(child = %meta.name.as_deref().unwrap_or(""), value = %raw,
            "unable to parse schedule time for child job");
    }
    parsed
}

/// What the plan reads of a child of either kind: its name, whether its conditions
/// (`(type, status)` pairs) say it finished, its scheduled-at annotation and its start time.
fn child_of<'a, K: Resource>(
    child: &K,
    conditions: impl Iterator<Item = (&'a str, &'a str)>,
    start_time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Child {
    Child {
        name: child.name_any(),
        finished: plan::finished(conditions),
        scheduled_at: scheduled_at(child.meta()),
        start_time: start_time.map(|t| t.0),
    }
}

impl ChildKind for Job {
    const TEMPLATE_KIND: &'static str = template_kind::JOB;
    fn child(&self) -> Child {
        let status = self.status.as_ref();
        let conditions = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten();
        child_of(
            self,
            conditions.map(|c| (c.type_.as_str(), c.status.as_str())),
            status.and_then(|s| s.start_time.as_ref()),
        )
    }
    fn from_template(cronjob: &AdvancedCronJob, metadata: ObjectMeta) -> Self {
        Job {
            metadata,
            spec: cronjob
                .spec
                .template
                .job_template
                .as_ref()
                .and_then(|t| t.spec.clone()),
            status: None,
        }
    }
    fn template_meta(cronjob: &AdvancedCronJob) -> Option<&ObjectMeta> {
        cronjob
            .spec
            .template
            .job_template
            .as_ref()?
            .metadata
            .as_ref()
    }
}

impl ChildKind for BroadcastJob {
    const TEMPLATE_KIND: &'static str = template_kind::BROADCAST_JOB;
    fn child(&self) -> Child {
        let status = self.status.as_ref();
        let conditions = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten();
        child_of(
            self,
            conditions.map(|c| (c.type_.as_str(), c.status.as_str())),
            status.and_then(|s| s.start_time.as_ref()),
        )
    }
    fn from_template(cronjob: &AdvancedCronJob, metadata: ObjectMeta) -> Self {
        let spec = cronjob
            .spec
            .template
            .broadcast_job_template
            .as_ref()
            .and_then(|t| t.spec.clone())
            .unwrap_or_default();
        let mut job = BroadcastJob::new(metadata.name.as_deref().unwrap_or(""), spec);
        job.metadata = metadata;
        job
    }
    fn template_meta(cronjob: &AdvancedCronJob) -> Option<&ObjectMeta> {
        cronjob
            .spec
            .template
            .broadcast_job_template
            .as_ref()?
            .metadata
            .as_ref()
    }
}

/// One pass: OpenKruise's `FindTemplateKind` picks the kind of child.
pub async fn sync(
    cronjob: &AdvancedCronJob,
    ctx: &Context,
    state: &State,
) -> Result<Action, Error> {
    let t = &cronjob.spec.template;
    if t.job_template.is_some() {
        sync_kind::<Job>(cronjob, ctx, &state.jobs).await
    } else if t.image_list_pull_job_template.is_some() {
        // Not run by kruise-rs (module documentation).
        write_status(cronjob, ctx, template_kind::IMAGE_LIST_PULL_JOB, None, None).await?;
        ctx.recorder
            .warning(
                &kruise_runtime::events::object_ref(cronjob),
                "UnsupportedTemplate",
                "spec.template.imageListPullJobTemplate is not supported by kruise-rs: no ImageListPullJob is created",
            )
            .await;
        Ok(Action::await_change())
    } else {
        sync_kind::<BroadcastJob>(cronjob, ctx, &state.broadcastjobs).await
    }
}

/// The reference `status.active` holds (`ref.GetReference`).
fn reference<K: ChildKind>(obj: &K) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: obj.meta().name.clone(),
        namespace: obj.meta().namespace.clone(),
        uid: obj.meta().uid.clone(),
        resource_version: obj.meta().resource_version.clone(),
        ..ObjectReference::default()
    }
}

async fn sync_kind<K: ChildKind>(
    cronjob: &AdvancedCronJob,
    ctx: &Context,
    informer: &Informer<K>,
) -> Result<Action, Error> {
    let uid = cronjob.metadata.uid.as_deref().unwrap_or("");
    let ns = cronjob.namespace().unwrap_or_default();
    let owned: Vec<_> = informer
        .owned_by(uid)
        .into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(ns.as_str()))
        .collect();
    let children: Vec<Child> = owned.iter().map(|o| o.child()).collect();
    let active: Vec<ObjectReference> = owned
        .iter()
        .zip(&children)
        .filter(|(_, c)| c.finished == Finished::Active)
        .map(|(o, _)| reference(o.as_ref()))
        .collect();
    let last = plan::last_schedule_time(&children);
    debug!(cronjob = %cronjob.name_any(), children = children.len(), active = active.len(), "child count");
    write_status(cronjob, ctx, K::TEMPLATE_KIND, Some(active), last).await?;

    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ns);
    let spec = &cronjob.spec;
    for (state, limit) in [
        (Finished::Failed, spec.failed_jobs_history_limit),
        (Finished::Succeeded, spec.successful_jobs_history_limit),
    ] {
        for name in plan::history_to_delete(&children, state, limit) {
            // Best effort, as OpenKruise: a failure does not fail the pass.
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {
                    info!(cronjob = %cronjob.name_any(), child = %name, ?state, "deleted old finished job")
                }
                Err(e) if is_status(&e, 404) => {}
                Err(e) => {
                    warn!(cronjob = %cronjob.name_any(), child = %name, error = %e, "unable to delete old finished job")
                }
            }
        }
    }

    if spec.paused == Some(true) {
        debug!(cronjob = %cronjob.name_any(), "paused, skipping");
        return Ok(Action::await_change());
    }
    schedule_run::<K>(cronjob, ctx, &api, &children, last).await
}

/// Steps 5–7 of `reconcileJob`: the next times, the due run and its creation.
async fn schedule_run<K: ChildKind>(
    cronjob: &AdvancedCronJob,
    ctx: &Context,
    api: &Api<K>,
    children: &[Child],
    last: Option<jiff::Timestamp>,
) -> Result<Action, Error> {
    let spec = &cronjob.spec;
    let regarding = kruise_runtime::events::object_ref(cronjob);
    let formatted = cron::format_schedule(&spec.schedule, spec.time_zone.as_deref());
    let schedule = match cron::parse_standard(&formatted) {
        Ok(s) => s,
        Err(e) => {
            let msg = format!("unparsable schedule {:?}: {e}", spec.schedule);
            warn!(cronjob = %cronjob.name_any(), "{msg}");
            ctx.recorder
                .warning(
                    &regarding,
                    "UnparseableSchedule",
                    &format!("spec.schedule: {msg}"),
                )
                .await;
            return Ok(Action::await_change());
        }
    };
    let now = jiff::Timestamp::now();
    let created = cronjob
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let times = match plan::next_schedule(
        &schedule,
        created,
        last,
        spec.starting_deadline_seconds,
        now,
    ) {
        Ok(t) => t,
        Err(msg) => {
            warn!(cronjob = %cronjob.name_any(), "{msg}");
            ctx.recorder
                .warning(&regarding, "TooManyMissedTimes", msg)
                .await;
            return Ok(Action::await_change());
        }
    };
    let requeue = match times.next {
        Some(next) => {
            let wait = now.duration_until(next).unsigned_abs();
            Action::requeue(wait)
        }
        None => Action::await_change(),
    };
    match plan::decide_run(
        times.missed,
        spec.starting_deadline_seconds,
        spec.concurrency_policy.as_deref(),
        children,
        now,
    ) {
        Run::NothingDue => Ok(requeue),
        Run::TooLate(at) => {
            debug!(cronjob = %cronjob.name_any(), %at, "missed starting deadline for last run");
            Ok(requeue)
        }
        Run::Forbidden(at) => {
            debug!(cronjob = %cronjob.name_any(), %at, "concurrency policy blocks concurrent runs");
            Ok(requeue)
        }
        Run::Create { at, replace } => {
            for name in replace {
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {
                        info!(cronjob = %cronjob.name_any(), child = %name, "deleted active job (Replace)")
                    }
                    Err(e) if is_status(&e, 404) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            create_child::<K>(cronjob, api, at, &schedule.time_zone()).await?;
            Ok(requeue)
        }
    }
}

/// `constructJobForCronJob` and its creation.
async fn create_child<K: ChildKind>(
    cronjob: &AdvancedCronJob,
    api: &Api<K>,
    at: jiff::Timestamp,
    tz: &jiff::tz::TimeZone,
) -> Result<(), Error> {
    let name = plan::child_name(&cronjob.name_any(), at);
    let template = K::template_meta(cronjob);
    let mut annotations: BTreeMap<String, String> = template
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        keys::SCHEDULED_AT.to_string(),
        plan::scheduled_at_text(at, tz),
    );
    let labels = template
        .and_then(|m| m.labels.clone())
        .filter(|l| !l.is_empty());
    let meta = ObjectMeta {
        name: Some(name.clone()),
        namespace: cronjob.namespace(),
        labels,
        annotations: Some(annotations),
        owner_references: Some(vec![OwnerReference {
            api_version: AdvancedCronJob::api_version(&()).into_owned(),
            kind: AdvancedCronJob::kind(&()).into_owned(),
            name: cronjob.name_any(),
            uid: cronjob.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]),
        ..ObjectMeta::default()
    };
    let child = K::from_template(cronjob, meta);
    match api.create(&PostParams::default(), &child).await {
        Ok(_) => {
            info!(cronjob = %cronjob.name_any(), child = %name, "created job for AdvancedCronJob run");
            Ok(())
        }
        // Created by an earlier pass the cache does not show yet: the run is made.
        Err(e) if is_status(&e, 409) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes `status` (`type`, `active`, `lastScheduleTime`) when it differs from the cached one
/// (OpenKruise's `updateAdvancedJobStatus`, which writes it every pass).
async fn write_status(
    cronjob: &AdvancedCronJob,
    ctx: &Context,
    kind: &str,
    active: Option<Vec<ObjectReference>>,
    last: Option<jiff::Timestamp>,
) -> Result<(), Error> {
    let active = active.filter(|a| !a.is_empty());
    let want = kruise_api::apps::v1beta1::AdvancedCronJobStatus {
        type_: Some(kind.to_string()),
        active,
        last_schedule_time: last.map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
    };
    if cronjob.status.as_ref() == Some(&want) {
        return Ok(());
    }
    let api: Api<AdvancedCronJob> =
        Api::namespaced(ctx.client.clone(), &cronjob.namespace().unwrap_or_default());
    let patch = json!({
        "status": {
            "type": want.type_,
            "active": want.active,
            "lastScheduleTime": want.last_schedule_time,
        }
    });
    api.patch_status(
        &cronjob.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}
