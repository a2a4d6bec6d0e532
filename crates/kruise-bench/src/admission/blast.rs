//! Part 2, blast radius: a Deployment of plain pods with no manager, with the pod webhook
//! scoped to the pods it may change, and with OpenKruise's every-pod configuration; then, with
//! the manager killed, evictions of its pods and its deletion.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kruise_e2e::{TestEnv, TestNamespace};
use kube::api::{Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::AdmissionArgs;
use super::cluster::{
    delete_pods, delete_webhook_configurations, pod_webhook_conditions, sidecarset_names,
    start_manager, stop_manager,
};
use super::measure::{
    ApiserverView, PodWebhook, load_average, ms_f, scrape_apiserver, scrape_apiserver_for,
    scrape_pod_webhook,
};
use crate::process::{Manager, proc_status_mib};

/// One case of part 2.
pub(super) struct BlastRow {
    pub(super) label: &'static str,
    /// `/mutate-pod` metrics delta over the Deployment's creation (None: no manager).
    pub(super) server: Option<PodWebhook>,
    /// The API server's view of `mpod.kb.io` over the same time.
    pub(super) apiserver: ApiserverView,
    pub(super) created: Duration,
    pub(super) ready: Duration,
    pub(super) peak_rss_mib: Option<f64>,
    pub(super) load: Option<f64>,
    /// Evictions and the Deployment's deletion with the manager down.
    pub(super) down: Down,
}

/// What happened to evictions and deletions of the Deployment's pods with the manager down
/// (killed, its webhook configurations left in place; none in the baseline).
#[derive(Debug, Clone, Default)]
pub(super) struct Down {
    pub(super) evictions: usize,
    /// Evictions the client saw refused (any error).
    pub(super) evictions_refused: usize,
    /// The API server's view of `vpodeviction.kb.io` over the evictions.
    pub(super) eviction_view: ApiserverView,
    /// The API server's view of `vpod.kb.io` DELETE over the Deployment's deletion.
    pub(super) delete_view: ApiserverView,
    /// From the Deployment's DELETE to no pod left, if within `--delete-wait-seconds`.
    pub(super) all_deleted: Option<Duration>,
    /// Pods left when the wait ended.
    pub(super) left: usize,
    /// Why the Deployment's own DELETE (`kubectl delete deployment`, after the scale-in) was
    /// refused, if it was.
    pub(super) deployment_delete: Option<String>,
}

fn plain_deployment(replicas: usize) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "plain"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "plain"}},
                 "template": {"metadata": {"labels": {"app": "plain"}},
                              "spec": {"terminationGracePeriodSeconds": 0,
                                       "containers": [{"name": "main", "image": "nginx:1.25"}]}}}
    }))
    .expect("valid Deployment")
}

/// Creates the plain Deployment in `ns` and measures the time to all pods created and all Ready
/// (Deployment status).
async fn create_deployment(
    ns: &TestNamespace,
    a: &AdmissionArgs,
    label: &str,
    mut manager: Option<&mut Manager>,
) -> Result<(Duration, Duration), String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let n = a.deployment_pods as i32;
    let deployments: Api<Deployment> = ns.api();
    let start = Instant::now();
    deployments
        .create(&PostParams::default(), &plain_deployment(a.deployment_pods))
        .await
        .map_err(|e| format!("creating the Deployment: {e}"))?;
    let mut created = None;
    let mut last_print = Instant::now();
    loop {
        if let Some(m) = manager.as_deref_mut() {
            m.check_running()?;
        }
        let d = deployments
            .get("plain")
            .await
            .map_err(|e| format!("reading the Deployment: {e}"))?;
        let st = d.status.unwrap_or_default();
        let (replicas, ready) = (st.replicas.unwrap_or(0), st.ready_replicas.unwrap_or(0));
        if created.is_none() && replicas >= n {
            created = Some(start.elapsed());
        }
        if ready >= n {
            let ready_at = start.elapsed();
            println!(
                "  {label}: {n} created in {:.1}s, Ready in {:.1}s",
                created.unwrap_or(ready_at).as_secs_f64(),
                ready_at.as_secs_f64()
            );
            return Ok((created.unwrap_or(ready_at), ready_at));
        }
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!(
                "  {label}: pods {replicas}/{n}, Ready {ready}/{n} ({:.0}s)",
                start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{label}: {ready}/{n} Ready after {timeout:?} (pods {replicas})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// With the manager down (or none): `--evictions` of the Deployment's pods evicted, then the
/// Deployment scaled to 0 (the ReplicaSet controller deletes every pod) and the pods watched
/// until none is left or `--delete-wait-seconds` have passed; then the Deployment itself is
/// deleted (`kubectl delete deployment`, background propagation).
async fn manager_down(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &AdmissionArgs,
    label: &str,
) -> Result<Down, String> {
    let pods: Api<Pod> = ns.api();
    let names: Vec<String> = pods
        .list_metadata(&ListParams::default().limit(a.evictions as u32))
        .await
        .map_err(|e| format!("listing pods: {e}"))?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    let before = scrape_apiserver_for(env, "vpodeviction.kb.io", "CREATE").await?;
    let results = futures::future::join_all(names.iter().map(|n| {
        let pods = pods.clone();
        async move { pods.evict(n, &EvictParams::default()).await }
    }))
    .await;
    let eviction_view = scrape_apiserver_for(env, "vpodeviction.kb.io", "CREATE")
        .await?
        .since(&before);
    let evictions_refused = results.iter().filter(|r| r.is_err()).count();
    println!(
        "  {label}: {} of {} evictions refused{}",
        evictions_refused,
        names.len(),
        results
            .iter()
            .find_map(|r| r.as_ref().err())
            .map_or(String::new(), |e| format!(" (first: {e})"))
    );

    // Scale-in to 0: the ReplicaSet controller deletes every pod.
    let before = scrape_apiserver_for(env, "vpod.kb.io", "DELETE").await?;
    let deployments: Api<Deployment> = ns.api();
    let start = Instant::now();
    deployments
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .map_err(|e| format!("scaling the Deployment to 0: {e}"))?;
    let wait = Duration::from_secs(a.delete_wait_seconds);
    let mut last_print = Instant::now();
    let (all_deleted, left) = loop {
        let left = pods
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| format!("listing pods: {e}"))?
            .items
            .len();
        if left == 0 {
            break (Some(start.elapsed()), 0);
        }
        if start.elapsed() > wait {
            break (None, left);
        }
        if last_print.elapsed() >= Duration::from_secs(2) {
            println!(
                "  {label}: {left} pods left ({:.0}s)",
                start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let delete_view = scrape_apiserver_for(env, "vpod.kb.io", "DELETE")
        .await?
        .since(&before);
    match all_deleted {
        Some(t) => println!(
            "  {label}: scaled to 0, all pods gone in {:.1}s; vpod.kb.io: {} calls, {} refused, {} excluded",
            t.as_secs_f64(),
            delete_view.calls.count,
            delete_view.rejected,
            delete_view.excluded
        ),
        None => println!(
            "  {label}: scaled to 0, {left} pods still there after {wait:?}; vpod.kb.io: {} calls, {} refused, {} excluded",
            delete_view.calls.count, delete_view.rejected, delete_view.excluded
        ),
    }
    // `kubectl delete deployment`.
    let deployment_delete = match deployments
        .delete("plain", &DeleteParams::background())
        .await
    {
        Ok(_) => None,
        Err(kube::Error::Api(e)) => Some(e.message),
        Err(e) => Some(e.to_string()),
    };
    println!(
        "  {label}: DELETE of the Deployment {}",
        deployment_delete
            .as_deref()
            .map_or("admitted".to_string(), |e| format!("refused: {e}"))
    );
    Ok(Down {
        evictions: names.len(),
        evictions_refused,
        eviction_view,
        delete_view,
        all_deleted,
        left,
        deployment_delete,
    })
}

/// Removes the case's namespace: the Deployment and its ReplicaSet, then every pod at once
/// (the webhook configurations must be gone: they fail closed).
async fn remove_case(ns: TestNamespace, a: &AdmissionArgs) -> Result<(), String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let deployments: Api<Deployment> = ns.api();
    let _ = deployments
        .delete("plain", &DeleteParams::background())
        .await;
    let rs: Api<ReplicaSet> = ns.api();
    let start = Instant::now();
    while rs
        .list(&ListParams::default())
        .await
        .map(|l| !l.items.is_empty())
        .unwrap_or(false)
        && start.elapsed() < timeout
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let deleted = delete_pods(&ns.api(), timeout).await;
    let _ = ns.delete().await;
    deleted
}

pub(super) async fn blast_run(
    env: &TestEnv,
    a: &AdmissionArgs,
    http: &reqwest::Client,
) -> Result<Vec<BlastRow>, String> {
    println!();
    println!(
        "== part 2: blast radius: a Deployment of {} plain pods, no SidecarSet ==",
        a.deployment_pods
    );
    let others = sidecarset_names(env, None).await?;
    if !others.is_empty() {
        return Err(format!(
            "SidecarSets exist on this testbed ({}); part 2 measures a cluster without any",
            others.join(", ")
        ));
    }
    let mut rows = Vec::new();

    // Baseline: no manager, no webhook configuration.
    delete_webhook_configurations(env).await?;
    let load = load_average();
    let api_before = scrape_apiserver(env).await?;
    let ns = env
        .namespace("bench-adm-blast")
        .await
        .map_err(|e| e.to_string())?;
    let r = async {
        let (created, ready) = create_deployment(&ns, a, "no manager", None).await?;
        let apiserver = scrape_apiserver(env).await?.since(&api_before);
        let down = manager_down(env, &ns, a, "no configuration").await?;
        Ok::<_, String>((created, ready, apiserver, down))
    }
    .await;
    let removed = remove_case(ns, a).await;
    let (created, ready, apiserver, down) = r?;
    removed?;
    rows.push(BlastRow {
        label: "no manager (no webhook configuration)",
        server: None,
        apiserver,
        created,
        ready,
        peak_rss_mib: None,
        load,
        down,
    });

    for (label, scope) in [
        ("manager, --pod-webhook-scope needed", "needed"),
        ("manager, --pod-webhook-scope all", "all"),
    ] {
        println!("{label}:");
        let mut m = start_manager(
            a,
            &["--pod-webhook-scope", scope],
            &format!("bench-admission-blast-{scope}-{}.log", std::process::id()),
            http,
        )
        .await?;
        let ns = env
            .namespace("bench-adm-blast")
            .await
            .map_err(|e| e.to_string())?;
        let r = async {
            let conditions = pod_webhook_conditions(env)
                .await?
                .ok_or("mpod.kb.io is not configured")?;
            println!(
                "  mpod.kb.io: {}",
                if conditions.is_empty() {
                    "no matchConditions (every pod outside control-plane namespaces)".to_string()
                } else {
                    format!("matchConditions {}", conditions.join(" && "))
                }
            );
            let load = load_average();
            let before = scrape_pod_webhook(http, &m).await?;
            let api_before = scrape_apiserver(env).await?;
            let (created, ready) = create_deployment(&ns, a, scope, Some(&mut m)).await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let server = scrape_pod_webhook(http, &m).await?.since(&before);
            let apiserver = scrape_apiserver(env).await?.since(&api_before);
            println!(
                "  /mutate-pod admissions: {} (p99 {}); API server: {} calls, {} pods excluded by matchConditions",
                server.requests,
                ms_f(server.latency.quantile(0.99)),
                apiserver.calls.count,
                apiserver.excluded
            );
            let peak_rss_mib = proc_status_mib(m.pid, "VmHWM");
            // A crash: the configurations stay, failing closed.
            m.kill();
            println!("  manager killed (pid {}), its webhook configurations left in place", m.pid);
            let down = manager_down(env, &ns, a, &format!("{scope}, manager down")).await?;
            Ok::<_, String>((created, ready, server, apiserver, load, peak_rss_mib, down))
        }
        .await;
        let stopped = stop_manager(env, &mut m).await;
        let removed = remove_case(ns, a).await;
        let (created, ready, server, apiserver, load, peak_rss_mib, down) = r?;
        stopped?;
        removed?;
        rows.push(BlastRow {
            label,
            server: Some(server),
            apiserver,
            created,
            ready,
            peak_rss_mib,
            load,
            down,
        });
    }
    Ok(rows)
}
