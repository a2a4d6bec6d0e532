//! AdvancedCronJob controller end to end on the testbed (OpenKruise v1.9.0
//! `pkg/controller/advancedcronjob`): a schedule fires and its Job runs to completion
//! (kube-controller-manager's Job controller, kwok completes the pods), successful history is
//! kept to its limit, the concurrency policies (Allow, Forbid, Replace), `paused`, a
//! BroadcastJob template, the webhook's refusal of a bad schedule, and a run that falls due
//! while the manager is down is created exactly once after its restart. Each test runs its own
//! `kruise-manager` (webhooks on) restricted to its namespace; schedules are `@every` a few
//! seconds (robfig/cron's descriptor, which OpenKruise accepts) to keep the wall time small.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kruise_api::apps::v1beta1::{AdvancedCronJob, BroadcastJob};
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, wait_for, wait_for_object};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const SCHEDULED_AT: &str = "apps.kruise.io/scheduled-at";

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, TestManager) {
    setup_with(prefix, &[]).await
}

async fn setup_with(prefix: &str, args: &[&str]) -> (TestEnv, TestNamespace, TestManager) {
    TestManager::setup(
        env!("CARGO_BIN_EXE_kruise-manager"),
        prefix,
        args,
        3,
        TIMEOUT,
    )
    .await
}

/// A Job template whose pod completes (kwok's `pod-complete` stage); `suspend` keeps the Job
/// active forever (it creates no pod and never completes).
fn job_template(suspend: bool) -> Value {
    json!({"jobTemplate": {
        "metadata": {"labels": {"acj-test": "yes"}, "annotations": {"note": "from-template"}},
        "spec": {
            "suspend": suspend,
            "template": {"spec": {
                "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
                "restartPolicy": "Never",
            }},
        },
    }})
}

async fn create_acj(ns: &TestNamespace, name: &str, spec: Value) -> Api<AdvancedCronJob> {
    let api: Api<AdvancedCronJob> = ns.api();
    let obj: AdvancedCronJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    api
}

/// The Jobs of the namespace, by scheduled time (the annotation, parsed).
async fn jobs(api: &Api<Job>) -> BTreeMap<jiff::Timestamp, Job> {
    let mut out = BTreeMap::new();
    for j in api.list(&ListParams::default()).await.unwrap().items {
        let at: jiff::Timestamp = j.annotations()[SCHEDULED_AT].parse().unwrap();
        assert!(
            out.insert(at, j).is_none(),
            "two jobs for one scheduled time"
        );
    }
    out
}

fn complete(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

/// Sleeps until wall-clock time `t` (a schedule's due time; not a synchronisation on state).
async fn until(t: jiff::Timestamp) {
    let wait = jiff::Timestamp::now().duration_until(t);
    if wait.is_positive() {
        tokio::time::sleep(wait.unsigned_abs()).await;
    }
}

#[tokio::test]
async fn job_template_runs_to_completion_and_history_is_limited() {
    let (_env, ns, _m) = setup("acj-run").await;
    let acjs = create_acj(
        &ns,
        "runner",
        json!({"schedule": "@every 4s", "successfulJobsHistoryLimit": 2,
               "template": job_template(false)}),
    )
    .await;
    let job_api: Api<Job> = ns.api();
    // The first run: named `<name>-<unix time>`, the template's labels and annotations, the
    // scheduled-at annotation, controlled by the cron job; it runs to completion.
    let first = wait_for("a completed job", TIMEOUT, || async {
        jobs(&job_api).await.into_iter().find(|(_, j)| complete(j))
    })
    .await
    .unwrap();
    let (at, job) = first;
    assert_eq!(job.name_any(), format!("runner-{}", at.as_second()));
    assert_eq!(job.labels()["acj-test"], "yes");
    assert_eq!(job.annotations()["note"], "from-template");
    let owner = &job.owner_references()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        ("apps.kruise.io/v1beta1", "AdvancedCronJob", "runner")
    );
    assert_eq!(owner.controller, Some(true));
    let acj = wait_for_object(&acjs, "runner", "status type Job", TIMEOUT, |a| {
        a.status
            .as_ref()
            .is_some_and(|s| s.type_.as_deref() == Some("Job") && s.last_schedule_time.is_some())
    })
    .await
    .unwrap();
    assert!(acj.status.unwrap().last_schedule_time.unwrap().0 >= at);
    // Runs go on; completed ones beyond the limit of 2 are deleted, oldest first.
    let later = at + jiff::SignedDuration::from_secs(12);
    wait_for(
        "3 more runs, at most 2 succeeded jobs kept",
        TIMEOUT,
        || async {
            let js = jobs(&job_api).await;
            let done: Vec<_> = js.iter().filter(|(_, j)| complete(j)).collect();
            (js.keys().any(|t| *t >= later) && done.len() == 2 && !js.contains_key(&at))
                .then_some(())
        },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn concurrency_policies_allow_forbid_replace() {
    let (_env, ns, _m) = setup("acj-conc").await;
    let job_api: Api<Job> = ns.api();
    let of =
        |owner: &'static str| move |j: &&Job| j.owner_references().iter().any(|o| o.name == owner);
    for (name, policy) in [
        ("allow", "Allow"),
        ("forbid", "Forbid"),
        ("replace", "Replace"),
    ] {
        create_acj(
            &ns,
            name,
            json!({"schedule": "@every 3s", "concurrencyPolicy": policy,
                   "template": job_template(true)}),
        )
        .await;
    }
    // Allow: a second run beside the still-active first one.
    wait_for("two active allow jobs", TIMEOUT, || async {
        let js = job_api.list(&ListParams::default()).await.unwrap().items;
        (js.iter().filter(of("allow")).count() >= 2).then_some(())
    })
    .await
    .unwrap();
    // Replace: the next run's job replaces the active one.
    let acjs: Api<AdvancedCronJob> = ns.api();
    wait_for(
        "replace: a later run replaced the first",
        TIMEOUT,
        || async {
            let js = job_api.list(&ListParams::default()).await.unwrap().items;
            let live: Vec<_> = js
                .iter()
                .filter(of("replace"))
                .filter(|j| j.metadata.deletion_timestamp.is_none())
                .collect();
            let acj = acjs.get("replace").await.ok()?;
            let last = acj.status?.last_schedule_time?.0;
            let first = acj.metadata.creation_timestamp?.0;
            (live.len() == 1 && last >= first + jiff::SignedDuration::from_secs(6)).then_some(())
        },
    )
    .await
    .unwrap();
    // Forbid: the first job is active, so no later run is made. Wait for three due times.
    let first = wait_for("forbid's first job", TIMEOUT, || async {
        let js = job_api.list(&ListParams::default()).await.unwrap().items;
        js.iter().find(of("forbid")).cloned()
    })
    .await
    .unwrap();
    let at: jiff::Timestamp = first.annotations()[SCHEDULED_AT].parse().unwrap();
    until(at + jiff::SignedDuration::from_secs(10)).await;
    let js = job_api.list(&ListParams::default()).await.unwrap().items;
    let forbid: Vec<_> = js
        .iter()
        .filter(of("forbid"))
        .map(|j| j.name_any())
        .collect();
    assert_eq!(forbid, vec![first.name_any()], "Forbid made another run");
    let acj = acjs.get("forbid").await.unwrap();
    let active = acj.status.unwrap().active.unwrap_or_default();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].name.as_deref(), Some(first.name_any().as_str()));
    assert_eq!(active[0].kind.as_deref(), Some("Job"));
}

#[tokio::test]
async fn paused_cron_job_runs_nothing_until_resumed() {
    let (_env, ns, _m) = setup("acj-pause").await;
    let acjs = create_acj(
        &ns,
        "sleeper",
        json!({"schedule": "@every 2s", "paused": true, "template": job_template(true)}),
    )
    .await;
    // The status is written while paused (type), but no run is made over several due times.
    let acj = wait_for_object(&acjs, "sleeper", "status type", TIMEOUT, |a| {
        a.status.as_ref().and_then(|s| s.type_.as_deref()) == Some("Job")
    })
    .await
    .unwrap();
    let created = acj.metadata.creation_timestamp.unwrap().0;
    until(created + jiff::SignedDuration::from_secs(7)).await;
    let job_api: Api<Job> = ns.api();
    assert!(
        job_api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "a paused cron job ran"
    );
    acjs.patch(
        "sleeper",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"paused": false}})),
    )
    .await
    .unwrap();
    // Resumed: the latest missed run is made (one job, not one per missed time).
    let js = wait_for("a run after resuming", TIMEOUT, || async {
        let js = jobs(&job_api).await;
        (!js.is_empty()).then_some(js)
    })
    .await
    .unwrap();
    let (first, _) = js.first_key_value().unwrap();
    assert!(*first >= created + jiff::SignedDuration::from_secs(6));
}

#[tokio::test]
async fn broadcastjob_template_creates_a_broadcastjob() {
    let (_env, ns, _m) = setup("acj-bcj").await;
    let acjs = create_acj(
        &ns,
        "bcast",
        json!({"schedule": "@every 2s", "concurrencyPolicy": "Forbid", "template": {
            "broadcastJobTemplate": {
                "spec": {
                    "template": {"spec": {
                        "containers": [{"name": "main", "image": "busybox:1.36"}],
                        "restartPolicy": "Never",
                    }},
                    "completionPolicy": {"type": "Always"},
                },
            },
        }}),
    )
    .await;
    let bcjs: Api<BroadcastJob> = ns.api();
    let bj = wait_for("a BroadcastJob", TIMEOUT, || async {
        bcjs.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .next()
    })
    .await
    .unwrap();
    let at: jiff::Timestamp = bj.annotations()[SCHEDULED_AT].parse().unwrap();
    assert_eq!(bj.name_any(), format!("bcast-{}", at.as_second()));
    // (The CRD schema of `broadcastJobTemplate.metadata` is a bare object, as OpenKruise's:
    // the API server prunes labels given there, so there are none to copy.)
    let owner = &bj.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("AdvancedCronJob", "bcast", Some(true))
    );
    wait_for_object(
        &acjs,
        "bcast",
        "status lists the BroadcastJob",
        TIMEOUT,
        |a| {
            a.status.as_ref().is_some_and(|s| {
                s.type_.as_deref() == Some("BroadcastJob")
                    && s.active.as_ref().is_some_and(|a| {
                        a.iter().any(|r| {
                            r.kind.as_deref() == Some("BroadcastJob")
                                && r.name.as_deref() == Some(bj.name_any().as_str())
                        })
                    })
            })
        },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn webhook_refuses_a_bad_schedule_and_fills_defaults() {
    let (_env, ns, _m) = setup("acj-hook").await;
    let api: Api<AdvancedCronJob> = ns.api();
    let bad: AdvancedCronJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
        "metadata": {"name": "bad"},
        "spec": {"schedule": "61 * * * *", "template": job_template(true)},
    }))
    .unwrap();
    let err = api
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("spec.schedule"), "{err}");
    let acjs = create_acj(
        &ns,
        "good",
        json!({"schedule": "0 0 1 1 *", "template": job_template(true)}),
    )
    .await;
    let good = acjs.get("good").await.unwrap();
    assert_eq!(good.spec.concurrency_policy.as_deref(), Some("Allow"));
    assert_eq!(good.spec.paused, Some(false));
    assert_eq!(good.spec.successful_jobs_history_limit, Some(3));
    assert_eq!(good.spec.failed_jobs_history_limit, Some(1));
}

/// A run that falls due while the manager is down is made once after the restart: the missed
/// time is found from the last run's annotation, and the child's name is the same whichever
/// pass makes it.
#[tokio::test]
async fn run_due_during_a_manager_restart_is_made_exactly_once() {
    // A short Lease: the restarted manager leads a few seconds after the killed one's Lease
    // expires, well before the run after the missed one (with the default 15 s it could lead
    // after that, and then only the most recent missed run is made, as OpenKruise does).
    let (_env, ns, mut manager) = setup_with(
        "acj-restart",
        &[
            "--leader-election-lease-duration=4s",
            "--leader-election-renew-deadline=3s",
            "--leader-election-retry-period=1s",
        ],
    )
    .await;
    create_acj(
        &ns,
        "restart",
        json!({"schedule": "@every 20s", "template": job_template(true)}),
    )
    .await;
    let job_api: Api<Job> = ns.api();
    let first = wait_for("the first run", TIMEOUT, || async {
        jobs(&job_api).await.into_keys().next()
    })
    .await
    .unwrap();
    manager.kill();
    let due = first + jiff::SignedDuration::from_secs(20);
    assert!(
        jiff::Timestamp::now() < due,
        "killed only after the next due time"
    );
    until(due + jiff::SignedDuration::from_secs(2)).await;
    assert_eq!(
        jobs(&job_api).await.len(),
        1,
        "a run was made while the manager was down"
    );
    manager.restart(TIMEOUT).await;
    let js = wait_for("the missed run", TIMEOUT, || async {
        let js = jobs(&job_api).await;
        js.contains_key(&due).then_some(js)
    })
    .await
    .unwrap();
    // Exactly the first run and the missed one up to the missed time (`jobs` refuses two jobs
    // for one time); a slow restart may already have made the next run, 20 s after it.
    assert_eq!(
        js.keys().copied().filter(|t| *t <= due).collect::<Vec<_>>(),
        vec![first, due]
    );
    assert_eq!(js[&due].name_any(), format!("restart-{}", due.as_second()));
}
