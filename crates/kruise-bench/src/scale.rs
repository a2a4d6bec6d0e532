//! `scale`: restarts of one or more managers over many CloneSets (`--clonesets` x
//! `--pods-per-cloneset` pods): the time to the first completed reconcile of all, the API
//! requests, the RSS; against a bare LIST of every CloneSet and pod.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kruise_e2e::{TestEnv, TestNamespace, install_crds};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::admission;
use crate::cli::ScaleArgs;
use crate::cluster::{
    cloneset_api, ensure_nodes, generation, observed, pod_uids, status_int, wait_clonesets,
};
use crate::metrics::{Requests, http_client, http_get, scrape_requests};
use crate::process::{
    Manager, is_openkruise, openkruise_cleanup, proc_status_mib, wait_metrics, wait_ready,
};
use crate::report;

/// What one manager's restart measured.
pub(crate) struct ScaleRow {
    pub(crate) label: String,
    /// 1-based round of `--rounds`.
    pub(crate) round: usize,
    /// Start to `/readyz` 200 (caches synced), if seen before all were reconciled.
    pub(crate) readyz: Option<Duration>,
    /// Start to every CloneSet's `observedGeneration == generation`.
    pub(crate) reconciled: Duration,
    /// Requests from start to all reconciled.
    pub(crate) requests_to_reconciled: Requests,
    /// Requests during the whole run (start to the end of the settle period).
    pub(crate) requests: Requests,
    pub(crate) peak_rss_mib: Option<f64>,
    pub(crate) settled_rss_mib: Option<f64>,
}

/// The bare-client baseline: one LIST of CloneSets and one LIST of pods.
pub(crate) struct Baseline {
    /// Median of 3 runs of both LISTs.
    pub(crate) list: Duration,
    pub(crate) clonesets: usize,
    pub(crate) pods: usize,
}

fn default_nodes(pods: usize) -> usize {
    pods.div_ceil(110) + 1
}

/// What a scale run measured, for the report.
pub(crate) struct ScaleOutcome {
    /// `--clonesets` x `--pods-per-cloneset`.
    pub(crate) total_pods: usize,
    /// kwok nodes of the testbed.
    pub(crate) node_count: usize,
    /// Every measured restart, in the order run.
    pub(crate) rows: Vec<ScaleRow>,
    pub(crate) baseline: Baseline,
}

pub(crate) async fn scale(a: ScaleArgs) -> Result<(), String> {
    let creator = check_args(&a)?;
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    let http = http_client()?;
    let total_pods = a.clonesets * a.pods_per_cloneset;
    let node_count = ensure_nodes(&env, a.nodes.unwrap_or(default_nodes(total_pods))).await?;
    install_crds(&env).await.map_err(|e| e.to_string())?;
    admission::ensure_kruise_namespace(&env).await?;
    let ns = env
        .namespace(&a.namespace_prefix)
        .await
        .map_err(|e| e.to_string())?;
    println!("namespace: {}", ns.name());
    // The managers are owned (and so killed on failure) inside `scale_run`, before the namespace
    // goes.
    let result = scale_run(&env, &ns, &a, &creator, &http).await;
    // The managers served the webhooks (as users run them); their configurations fail closed
    // without a manager.
    let cleaned = admission::delete_webhook_configurations(&env).await;
    let result = result.and_then(|r| cleaned.map(|()| r));
    if let Some(go) = a.managers.iter().find(|m| is_openkruise(m)) {
        openkruise_cleanup(go)?;
    }
    let deleted = ns.delete().await;
    let (rows, baseline) = result?;
    deleted.map_err(|e| format!("deleting the namespace: {e}"))?;

    let outcome = ScaleOutcome {
        total_pods,
        node_count,
        rows,
        baseline,
    };
    report::print_scale(&a, &outcome);
    if let Some(path) = &a.json {
        report::write_json(path, &report::scale_json(&a, &outcome))?;
    }
    Ok(())
}

/// Checks the arguments (counts, binaries, `--watch-namespace`); returns the manager that
/// creates the pods.
fn check_args(a: &ScaleArgs) -> Result<PathBuf, String> {
    if a.clonesets == 0 || a.pods_per_cloneset == 0 || a.rounds == 0 {
        return Err("--clonesets, --pods-per-cloneset and --rounds must be positive".into());
    }
    let creator = a
        .creator
        .clone()
        .or_else(|| a.managers.iter().find(|m| !is_openkruise(m)).cloned())
        .ok_or("no kruise-manager to create the pods with: pass --creator")?;
    for m in a.managers.iter().chain([&creator]) {
        if !m.is_file() {
            return Err(format!("manager binary {} not found", m.display()));
        }
    }
    if a.client.watch_namespace && a.managers.iter().any(|m| is_openkruise(m)) {
        return Err("--watch-namespace: OpenKruise v1.9.0 panics with --namespace".into());
    }
    Ok(creator)
}

/// What every step of a scale run works on.
struct ScaleRun<'a> {
    env: &'a TestEnv,
    ns: &'a TestNamespace,
    a: &'a ScaleArgs,
    http: &'a reqwest::Client,
    /// The namespace's CloneSets.
    cs_api: Api<DynamicObject>,
    /// The namespace's pods.
    pods: Api<Pod>,
    /// The CloneSets' names: `cs-0000`, `cs-0001`, ...
    names: Vec<String>,
    /// Timeout of each wait (`--timeout-seconds`).
    timeout: Duration,
}

impl ScaleRun<'_> {
    /// Number of CloneSets.
    fn n(&self) -> usize {
        self.a.clonesets
    }

    /// Pods (replicas) per CloneSet.
    fn m(&self) -> i64 {
        self.a.pods_per_cloneset as i64
    }

    /// The namespace the managers watch (`--watch-namespace`), or `None` for all.
    fn watch_ns(&self) -> Option<&str> {
        self.a.client.watch_namespace.then_some(self.ns.name())
    }
}

async fn scale_run(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &ScaleArgs,
    creator: &Path,
    http: &reqwest::Client,
) -> Result<(Vec<ScaleRow>, Baseline), String> {
    let run = ScaleRun {
        env,
        ns,
        a,
        http,
        cs_api: cloneset_api(env, ns.name()),
        pods: ns.api(),
        names: (0..a.clonesets).map(|i| format!("cs-{i:04}")).collect(),
        timeout: Duration::from_secs(a.timeout_seconds),
    };
    // b. The creator creates every pod, unthrottled.
    create_all(&run, creator).await?;
    // d. Baseline: a bare client lists everything once (median of 3).
    let baseline = list_baseline(&run).await?;
    // c. Each manager in turn (and again for each round), restarted over the same objects with
    //    generations bumped.
    let rows = measure_restarts(&run).await?;
    Ok((rows, baseline))
}

/// Step 2: the creator, unthrottled, creates every CloneSet (and so every pod) and runs until all
/// are ready and observed; then it is stopped and its webhook configurations are deleted.
async fn create_all(run: &ScaleRun<'_>, creator: &Path) -> Result<(), String> {
    let (n, m) = (run.n(), run.m());
    let mut create_args = run.a.manager_args.clone();
    create_args.extend([
        "--rest-config-qps=100000".to_string(),
        "--rest-config-burst=100000".to_string(),
    ]);
    let mut manager = Manager::start(
        creator,
        run.watch_ns(),
        &create_args,
        run.a.client.webhook_port,
        &format!("{}-create.log", run.ns.name()),
    )?;
    println!(
        "creating {n} CloneSets x {m} pods (manager {} pid {}, log {})",
        creator.display(),
        manager.pid,
        manager.log.display()
    );
    // Its webhooks must answer before the first CloneSet is created: a webhook configuration
    // left by an earlier run (failure policy Fail) points at this port already.
    wait_ready(run.http, &mut manager, run.timeout).await?;
    create_clonesets(run).await?;
    let create_time = wait_created(run, &mut manager).await?;
    println!(
        "all {n} CloneSets ready in {:.1}s; stopping the manager",
        create_time.as_secs_f64()
    );
    manager.stop().await;
    drop(manager);
    // The manager served the webhooks (failure policy Fail): without it the generation bumps
    // below would be refused, as users' writes would be.
    admission::delete_webhook_configurations(run.env).await
}

/// Creates the CloneSets of `--pods-per-cloneset` replicas each (16 at a time).
async fn create_clonesets(run: &ScaleRun<'_>) -> Result<(), String> {
    let m = run.m();
    let created: Vec<Result<DynamicObject, kube::Error>> = futures::stream::iter(run.names.iter())
        .map(|name| {
            let api = run.cs_api.clone();
            let cs: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": name},
                "spec": {
                    "replicas": m,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                }
            }))
            .expect("valid CloneSet");
            async move { api.create(&PostParams::default(), &cs).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    if let Some(Err(e)) = created.into_iter().find(|r| r.is_err()) {
        return Err(format!("creating CloneSets: {e}"));
    }
    Ok(())
}

/// Waits until every CloneSet is observed with all its replicas ready, failing early if the
/// manager dies meanwhile; returns the time waited.
async fn wait_created(run: &ScaleRun<'_>, manager: &mut Manager) -> Result<Duration, String> {
    let (n, m) = (run.n(), run.m());
    let all_ready = |list: &[DynamicObject]| {
        list.len() == n
            && list.iter().all(|cs| {
                observed(cs)
                    && status_int(cs, "readyReplicas") == m
                    && status_int(cs, "replicas") == m
            })
    };
    let progress = |list: &[DynamicObject]| {
        let ready_cs = list
            .iter()
            .filter(|cs| observed(cs) && status_int(cs, "readyReplicas") == m)
            .count();
        let ready_pods: i64 = list.iter().map(|cs| status_int(cs, "readyReplicas")).sum();
        let observed_cs = list.iter().filter(|cs| observed(cs)).count();
        format!(
            "CloneSets ready {ready_cs}/{n}, observed {observed_cs}/{n}, ready pods {ready_pods}/{}",
            n as i64 * m
        )
    };
    let mut waited = std::pin::pin!(wait_clonesets(
        &run.cs_api,
        "create",
        run.timeout,
        all_ready,
        progress
    ));
    // Fail early if the manager dies while pods are being created.
    let (create_time, _) = loop {
        tokio::select! {
            r = &mut waited => break r?,
            _ = tokio::time::sleep(Duration::from_secs(1)) => manager.check_running()?,
        }
    };
    Ok(create_time)
}

/// Step 4, the baseline: a bare client LISTs every CloneSet and every pod, 3 times; the median.
async fn list_baseline(run: &ScaleRun<'_>) -> Result<Baseline, String> {
    let mut runs = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..3 {
        let start = Instant::now();
        let c = run
            .cs_api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("baseline LIST CloneSets: {e}"))?
            .items
            .len();
        let p = run
            .pods
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("baseline LIST pods: {e}"))?
            .items
            .len();
        runs.push(start.elapsed());
        counts = (c, p);
    }
    runs.sort();
    let baseline = Baseline {
        list: runs[1],
        clonesets: counts.0,
        pods: counts.1,
    };
    println!(
        "baseline: LIST {} CloneSets + {} pods in {:.3}s (median of 3)",
        baseline.clonesets,
        baseline.pods,
        baseline.list.as_secs_f64()
    );
    Ok(baseline)
}

/// Step 3: each manager in turn, `--rounds` times: every CloneSet's generation bumped while no
/// manager runs, then the manager restarted and measured.
async fn measure_restarts(run: &ScaleRun<'_>) -> Result<Vec<ScaleRow>, String> {
    let (n, m) = (run.n(), run.m());
    let mut measured_args = run.a.client.rest_config_flags().to_vec();
    measured_args.extend(run.a.manager_args.iter().cloned());
    let schedule: Vec<(usize, &PathBuf)> = (1..=run.a.rounds)
        .flat_map(|round| run.a.managers.iter().map(move |m| (round, m)))
        .collect();
    let mut rows = Vec::new();
    for (i, (round, binary)) in schedule.iter().copied().enumerate() {
        // A spec change that changes no pod, no revision and no availability.
        let history_limit = 20 + i as i64;
        println!();
        println!(
            "[{}/{}] round {round}: {}: bumping every CloneSet's generation (spec.revisionHistoryLimit = {history_limit})",
            i + 1,
            schedule.len(),
            binary.display()
        );
        bump_generations(run, history_limit).await?;
        let before = pod_uids(&run.pods).await?;
        if before.len() != n * m as usize {
            return Err(format!(
                "{} pods before the restart, expected {}",
                before.len(),
                n * m as usize
            ));
        }
        let log_name = format!("{}-manager-{i}.log", run.ns.name());
        rows.push(restart(run, &measured_args, binary, round, &log_name, &before).await?);
    }
    Ok(rows)
}

/// Sets every CloneSet's `spec.revisionHistoryLimit` to `history_limit` (which changes no pod,
/// no revision and no availability) and checks that each generation was bumped.
async fn bump_generations(run: &ScaleRun<'_>, history_limit: i64) -> Result<(), String> {
    let patch = Patch::Merge(json!({"spec": {"revisionHistoryLimit": history_limit}}));
    let patched: Vec<Result<DynamicObject, kube::Error>> = futures::stream::iter(run.names.iter())
        .map(|name| {
            let api = run.cs_api.clone();
            let patch = patch.clone();
            async move { api.patch(name, &PatchParams::default(), &patch).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for r in patched {
        let cs = r.map_err(|e| format!("patching CloneSets: {e}"))?;
        if observed(&cs) {
            return Err(format!(
                "CloneSet {} generation {} not bumped by the patch",
                cs.metadata.name.as_deref().unwrap_or(""),
                generation(&cs)
            ));
        }
    }
    Ok(())
}

/// One measured restart: which manager, in which round, since when, over which pods.
struct Restart<'a> {
    binary: &'a Path,
    /// 1-based round of `--rounds`.
    round: usize,
    /// When the manager was started.
    start: Instant,
    /// The UIDs of the pods before the restart, which must create and delete none.
    before: &'a BTreeSet<String>,
}

/// Starts `binary` with `args` over the bumped CloneSets, measures it ([`scale_measure`]), stops
/// it and removes the webhook configurations it served.
async fn restart(
    run: &ScaleRun<'_>,
    args: &[String],
    binary: &Path,
    round: usize,
    log_name: &str,
    before: &BTreeSet<String>,
) -> Result<ScaleRow, String> {
    let start = Instant::now();
    let mut manager = Manager::start(
        binary,
        run.watch_ns(),
        args,
        run.a.client.webhook_port,
        log_name,
    )?;
    println!(
        "  started pid {} (log {})",
        manager.pid,
        manager.log.display()
    );
    let restart = Restart {
        binary,
        round,
        start,
        before,
    };
    let row = scale_measure(run, &mut manager, &restart).await;
    manager.stop().await;
    drop(manager);
    if is_openkruise(binary) {
        openkruise_cleanup(binary)?;
    } else {
        admission::delete_webhook_configurations(run.env).await?;
    }
    row
}

/// One measured restart: waits for every CloneSet's first reconcile, settles, reads RSS and
/// requests, and checks that no pod was created or deleted.
async fn scale_measure(
    run: &ScaleRun<'_>,
    manager: &mut Manager,
    restart: &Restart<'_>,
) -> Result<ScaleRow, String> {
    let (reconciled, readyz) = wait_reconciled(run, manager, restart).await?;
    let requests_to_reconciled = match scrape_requests(run.http, manager).await {
        Ok(r) => r,
        Err(_) => {
            // The metrics server may come up after the first reconciles on a tiny run.
            wait_metrics(run.http, manager, Duration::from_secs(30)).await?;
            scrape_requests(run.http, manager).await?
        }
    };
    println!("  settling {}s", run.a.settle_seconds);
    tokio::time::sleep(Duration::from_secs(run.a.settle_seconds)).await;
    manager.check_running()?;
    let settled_rss_mib = proc_status_mib(manager.pid, "VmRSS");
    let peak_rss_mib = proc_status_mib(manager.pid, "VmHWM");
    let requests = scrape_requests(run.http, manager).await?;
    let pods = check_pods_unchanged(run, manager, restart).await?;
    check_all_ready(run, restart.binary).await?;
    println!(
        "  pods unchanged ({pods}); requests {} (reads {}, writes {}); peak RSS {}, settled {}",
        requests.total(),
        requests.reads,
        requests.writes,
        peak_rss_mib.map_or("n/a".into(), |v| format!("{v:.1} MiB")),
        settled_rss_mib.map_or("n/a".into(), |v| format!("{v:.1} MiB")),
    );
    Ok(ScaleRow {
        label: restart.binary.display().to_string(),
        round: restart.round,
        readyz,
        reconciled,
        requests_to_reconciled,
        requests,
        peak_rss_mib,
        settled_rss_mib,
    })
}

/// Waits until every CloneSet is observed (`observedGeneration == generation`), noting when
/// `/readyz` first answered 200; returns both times since the start.
async fn wait_reconciled(
    run: &ScaleRun<'_>,
    manager: &mut Manager,
    restart: &Restart<'_>,
) -> Result<(Duration, Option<Duration>), String> {
    let n = run.n();
    let mut readyz = None;
    let mut last_print = Instant::now();
    loop {
        manager.check_running()?;
        if readyz.is_none()
            && let Ok((200, _)) = http_get(run.http, manager.health, "/readyz").await
        {
            readyz = Some(restart.start.elapsed());
        }
        let list = run
            .cs_api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing CloneSets: {e}"))?
            .items;
        let elapsed = restart.start.elapsed();
        let done = list.iter().filter(|cs| observed(cs)).count();
        if list.len() == n && done == n {
            println!(
                "  reconciled {done}/{n} (done in {:.2}s)",
                elapsed.as_secs_f64()
            );
            return Ok((elapsed, readyz));
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  reconciled {done}/{n}, readyz {} ({:.0}s)",
                if readyz.is_some() { "200" } else { "not yet" },
                elapsed.as_secs_f64()
            );
            last_print = Instant::now();
        }
        if elapsed > run.timeout {
            return Err(format!(
                "{}: {done}/{n} CloneSets reconciled within {:?} (log {})",
                restart.binary.display(),
                run.timeout,
                manager.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks that the restart created and deleted no pod; returns the number of pods.
async fn check_pods_unchanged(
    run: &ScaleRun<'_>,
    manager: &Manager,
    restart: &Restart<'_>,
) -> Result<usize, String> {
    let (before, after) = (restart.before, pod_uids(&run.pods).await?);
    if &after != before {
        let created = after.difference(before).count();
        let deleted = before.difference(&after).count();
        return Err(format!(
            "{}: the restart created {created} and deleted {deleted} pods (before {}, after {}); log {}",
            restart.binary.display(),
            before.len(),
            after.len(),
            manager.log.display()
        ));
    }
    Ok(after.len())
}

/// Checks that after the settle period every CloneSet is observed with all its replicas ready.
async fn check_all_ready(run: &ScaleRun<'_>, binary: &Path) -> Result<(), String> {
    let (n, m) = (run.n(), run.m());
    let list = run
        .cs_api
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing CloneSets: {e}"))?
        .items;
    let all_ready = list.len() == n
        && list.iter().all(|cs| {
            observed(cs) && status_int(cs, "readyReplicas") == m && status_int(cs, "replicas") == m
        });
    if !all_ready {
        return Err(format!(
            "{}: after the settle period not every CloneSet is observed with {m} ready replicas",
            binary.display(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_nodes_fit_110_pods_each_plus_one() {
        assert_eq!(default_nodes(10_000), 92);
        assert_eq!(default_nodes(15), 2);
        assert_eq!(default_nodes(110), 2);
    }
}
