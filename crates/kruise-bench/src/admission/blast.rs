//! Part 2, blast radius: a Deployment of plain pods with no manager, with the pod webhook
//! scoped to the pods it may change, and with OpenKruise's every-pod configuration.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kruise_e2e::TestEnv;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use super::AdmissionArgs;
use super::cluster::{
    delete_pods, delete_webhook_configurations, pod_webhook_conditions, sidecarset_names,
    start_manager, stop_manager,
};
use super::measure::{
    ApiserverView, PodWebhook, load_average, ms_f, scrape_apiserver, scrape_pod_webhook,
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

/// Creates the plain Deployment in a fresh namespace and measures the time to all pods created
/// and all Ready (Deployment status), then deletes it all.
async fn deployment_case(
    env: &TestEnv,
    a: &AdmissionArgs,
    label: &str,
    mut manager: Option<&mut Manager>,
) -> Result<(Duration, Duration), String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let n = a.deployment_pods as i32;
    let ns = env
        .namespace("bench-adm-blast")
        .await
        .map_err(|e| e.to_string())?;
    let deployments: Api<Deployment> = ns.api();
    let r = async {
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
    .await;
    // Cleanup: the Deployment (its ReplicaSet goes with it), then every pod at once.
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
    let r = r?;
    deleted?;
    Ok(r)
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
    let (created, ready) = deployment_case(env, a, "no manager", None).await?;
    rows.push(BlastRow {
        label: "no manager (no webhook configuration)",
        server: None,
        apiserver: scrape_apiserver(env).await?.since(&api_before),
        created,
        ready,
        peak_rss_mib: None,
        load,
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
            let (created, ready) = deployment_case(env, a, scope, Some(&mut m)).await?;
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
            Ok::<_, String>((created, ready, server, apiserver, load))
        }
        .await;
        let peak_rss_mib = proc_status_mib(m.pid, "VmHWM");
        let stopped = stop_manager(env, &mut m).await;
        let (created, ready, server, apiserver, load) = r?;
        stopped?;
        rows.push(BlastRow {
            label,
            server: Some(server),
            apiserver,
            created,
            ready,
            peak_rss_mib,
            load,
        });
    }
    Ok(rows)
}
