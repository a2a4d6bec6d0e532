//! `broadcastjob`: one BroadcastJob over `--nodes` kwok nodes of the benchmark's own (labelled
//! and tainted `bench.kruise-rs.io/bcj`, so no other workload lands there), run to completion by
//! each manager given in turn (the same `--rest-config-qps/-burst`): the time from the job's
//! creation to `status.phase: completed`, the manager's API writes per pod (in total and by
//! resource), and a check that every node ran exactly one pod; against a bare client creating
//! one pod per node (bound by `spec.nodeName`) and waiting for all to succeed. The nodes are
//! deleted at the end.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_api::apps::v1beta1::BroadcastJob;
use kruise_e2e::{TestEnv, TestNamespace, install_crds, kwok_node_named};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use crate::admission;
use crate::cli::ManagerClientArgs;
use crate::metrics::{http_client, scrape_requests, scrape_text, writes_by_resource};
use crate::process::{Manager, is_openkruise, openkruise_cleanup, wait_ready};

/// Label and taint key of the benchmark's nodes.
const NODE_KEY: &str = "bench.kruise-rs.io/bcj";

#[derive(Debug, Clone, Args)]
pub(crate) struct BroadcastJobArgs {
    /// kwok nodes of the benchmark (created, and deleted at the end).
    #[arg(long, default_value_t = 500)]
    pub(crate) nodes: usize,

    /// A manager binary to measure (repeatable; `hack/bench/openkruise-manager.sh` runs the Go
    /// manager). Default: target/release/kruise-manager.
    #[arg(long = "manager")]
    pub(crate) managers: Vec<PathBuf>,

    #[command(flatten)]
    pub(crate) client: ManagerClientArgs,

    /// Timeout of each wait, in seconds.
    #[arg(long, default_value_t = 900)]
    pub(crate) timeout_seconds: u64,
}

/// What one manager's run measured.
struct Row {
    label: String,
    took: Duration,
    writes: u64,
    by_resource: BTreeMap<String, u64>,
}

pub(crate) async fn broadcastjob(mut a: BroadcastJobArgs) -> Result<(), String> {
    if a.managers.is_empty() {
        a.managers
            .push(PathBuf::from("target/release/kruise-manager"));
    }
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    install_crds(&env).await.map_err(|e| e.to_string())?;
    admission::ensure_kruise_namespace(&env).await?;
    let result = measure(&env, &a).await;
    let cleaned = delete_nodes(&env).await;
    let webhooks = admission::delete_webhook_configurations(&env).await;
    let (rows, baseline) = result?;
    cleaned?;
    webhooks?;
    println!(
        "\nBroadcastJob over {} kwok nodes (qps {}, burst {}):",
        a.nodes, a.client.qps, a.client.burst
    );
    println!(
        "  {:<50} {:>9} {:>9} {:>12}",
        "manager", "time", "writes", "writes/pod"
    );
    for r in &rows {
        println!(
            "  {:<50} {:>8.1}s {:>9} {:>12.2}",
            r.label,
            r.took.as_secs_f64(),
            r.writes,
            r.writes as f64 / a.nodes as f64
        );
        for (k, v) in &r.by_resource {
            println!("      {k}: {v}");
        }
    }
    println!(
        "  {:<50} {:>8.1}s {:>9} {:>12.2}",
        "baseline (bare client: one POST per pod)",
        baseline.as_secs_f64(),
        a.nodes,
        1.0
    );
    Ok(())
}

async fn measure(env: &TestEnv, a: &BroadcastJobArgs) -> Result<(Vec<Row>, Duration), String> {
    create_nodes(env, a.nodes, Duration::from_secs(a.timeout_seconds)).await?;
    let http = http_client()?;
    let mut rows = Vec::new();
    for binary in &a.managers {
        let ns = env
            .namespace("bench-bcj")
            .await
            .map_err(|e| e.to_string())?;
        let mut extra = vec!["--broadcastjob-workers".to_owned(), "3".to_owned()];
        extra.extend(a.client.rest_config_flags());
        let mut manager = Manager::start(
            binary,
            a.client.watch_namespace.then_some(ns.name()),
            &extra,
            a.client.webhook_port,
            &format!("{}-manager.log", ns.name()),
        )?;
        println!("manager {} pid {}", binary.display(), manager.pid);
        let run = async {
            wait_ready(&http, &mut manager, Duration::from_secs(180)).await?;
            let w0 = scrape_requests(&http, &manager).await?;
            let r0 = writes_by_resource(&scrape_text(&http, &manager).await?);
            let took = run_job(&ns, a).await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let writes = scrape_requests(&http, &manager).await?.since(&w0).writes;
            let mut by_resource = writes_by_resource(&scrape_text(&http, &manager).await?);
            for (k, v) in by_resource.iter_mut() {
                *v = v.saturating_sub(r0.get(k).copied().unwrap_or(0));
            }
            by_resource.retain(|_, v| *v > 0);
            Ok::<_, String>(Row {
                label: binary.display().to_string(),
                took,
                writes,
                by_resource,
            })
        }
        .await;
        manager.stop().await;
        if is_openkruise(binary) {
            openkruise_cleanup(binary)?;
        }
        ns.delete().await.map_err(|e| e.to_string())?;
        rows.push(run?);
    }
    let ns = env
        .namespace("bench-bcj-base")
        .await
        .map_err(|e| e.to_string())?;
    let baseline = baseline(env, &ns, a).await;
    ns.delete().await.map_err(|e| e.to_string())?;
    Ok((rows, baseline?))
}

fn template() -> serde_json::Value {
    json!({
        "metadata": {"labels": {"app": "bench-bcj"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {NODE_KEY: "true"},
            "tolerations": [{"key": NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox:1.36"}],
        },
    })
}

/// Creates the job and waits until it completed; checks one pod per node.
async fn run_job(ns: &TestNamespace, a: &BroadcastJobArgs) -> Result<Duration, String> {
    let api: Api<BroadcastJob> = ns.api();
    let job: BroadcastJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": "bench"}, "spec": {"template": template()},
    }))
    .map_err(|e| e.to_string())?;
    let start = Instant::now();
    api.create(&PostParams::default(), &job)
        .await
        .map_err(|e| format!("creating the BroadcastJob: {e}"))?;
    let timeout = Duration::from_secs(a.timeout_seconds);
    let mut last = Instant::now();
    loop {
        let j = api.get("bench").await.map_err(|e| e.to_string())?;
        let st = j.status.unwrap_or_default();
        if st.phase == "completed" {
            break;
        }
        if last.elapsed() >= Duration::from_secs(1) {
            println!(
                "  job: phase={} desired={} active={} succeeded={} ({:.0}s)",
                st.phase,
                st.desired,
                st.active,
                st.succeeded,
                start.elapsed().as_secs_f64()
            );
            last = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!("the job did not complete within {timeout:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let took = start.elapsed();
    let pods: Vec<Pod> = ns
        .api::<Pod>()
        .list(&ListParams::default().labels("broadcastjob-name=bench"))
        .await
        .map_err(|e| e.to_string())?
        .items;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for p in &pods {
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
        *per_node.entry(node.unwrap_or_default()).or_default() += 1;
    }
    if pods.len() != a.nodes || per_node.len() != a.nodes || per_node.values().any(|&n| n != 1) {
        return Err(format!(
            "expected one pod on each of {} nodes, found {} pods on {} nodes",
            a.nodes,
            pods.len(),
            per_node.len()
        ));
    }
    println!(
        "  completed in {:.1}s, one pod per node",
        took.as_secs_f64()
    );
    Ok(took)
}

/// A bare client creates one pod per node (bound by `spec.nodeName`, 32 at a time) and waits
/// until every one has succeeded.
async fn baseline(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &BroadcastJobArgs,
) -> Result<Duration, String> {
    let nodes = node_names(env).await?;
    let pods: Api<Pod> = ns.api();
    println!("baseline: a bare client creates one pod per node");
    let start = Instant::now();
    let results: Vec<Result<Pod, kube::Error>> = futures::stream::iter(nodes.iter().enumerate())
        .map(|(i, node)| {
            let pods = pods.clone();
            let mut t = template();
            t["spec"]["nodeName"] = json!(node);
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("base-{i}"), "labels": t["metadata"]["labels"]},
                "spec": t["spec"],
            }))
            .expect("valid pod");
            async move { pods.create(&PostParams::default(), &pod).await }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        return Err(format!("baseline create: {e}"));
    }
    let n = nodes.len();
    crate::cluster::wait_pods(
        &pods,
        "app=bench-bcj",
        "baseline",
        Duration::from_secs(a.timeout_seconds),
        |ps| {
            ps.len() == n
                && ps.iter().all(|p| {
                    p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
                })
        },
        |ps| format!("pods={}", ps.len()),
    )
    .await?;
    Ok(start.elapsed())
}

async fn node_names(env: &TestEnv) -> Result<Vec<String>, String> {
    let api: Api<Node> = Api::all(env.client.clone());
    Ok(api
        .list(&ListParams::default().labels(NODE_KEY))
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect())
}

/// Creates `n` labelled, tainted kwok nodes and waits until kwok has made them Ready.
async fn create_nodes(env: &TestEnv, n: usize, timeout: Duration) -> Result<(), String> {
    let api: Api<Node> = Api::all(env.client.clone());
    println!("creating {n} kwok nodes ({NODE_KEY})");
    let results: Vec<Result<(), String>> = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let mut node = kwok_node_named(&format!("bench-bcj-{i}"), "zone-c");
            node.metadata
                .labels
                .get_or_insert_default()
                .insert(NODE_KEY.into(), "true".into());
            node.spec = serde_json::from_value(json!({"taints": [
                {"key": NODE_KEY, "value": "true", "effect": "NoSchedule"}]}))
            .ok();
            async move {
                match api.create(&PostParams::default(), &node).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                    Err(e) => Err(e.to_string()),
                }
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    results.into_iter().collect::<Result<Vec<()>, String>>()?;
    let start = Instant::now();
    loop {
        let ready = api
            .list(&ListParams::default().labels(NODE_KEY))
            .await
            .map_err(|e| e.to_string())?
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if ready >= n {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(format!("{ready} of {n} nodes Ready within {timeout:?}"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn delete_nodes(env: &TestEnv) -> Result<(), String> {
    let api: Api<Node> = Api::all(env.client.clone());
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels(NODE_KEY),
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("deleting the benchmark's nodes: {e}"))
}
