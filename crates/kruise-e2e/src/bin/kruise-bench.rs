//! `kruise-bench`: in-place rollout benchmark on the local testbed (driven by `hack/bench/bench.sh`).
//!
//! 1. Makes sure there are at least `--nodes` kwok nodes (Ready) and the CRDs are installed.
//! 2. Starts the given kruise-manager binary (cluster-wide, leader election off).
//! 3. Creates a CloneSet of `--pods` pods (InPlaceIfPossible, maxUnavailable 100%) and waits for
//!    all of them to be ready.
//! 4. Changes the image and measures the time until every pod is updated and ready, the API
//!    write requests the manager made (`rest_client_requests_total` POST/PUT/PATCH/DELETE delta)
//!    per updated pod, and the manager's peak RSS (VmHWM).
//! 5. Baseline: patches the image of the same pods directly with a bare client (the physical
//!    limit: one write per pod, kwok simulating the restart) and reports the time ratio.
//!
//! Prints progress every second and a summary; exits non-zero with a reason on failure.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::{TestEnv, install_crds, testbed_kubeconfig};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

struct Args {
    pods: usize,
    nodes: usize,
    manager: PathBuf,
    timeout: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        pods: 1000,
        nodes: 10,
        manager: PathBuf::from("target/release/kruise-manager"),
        timeout: Duration::from_secs(900),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--pods" => a.pods = val()?.parse().map_err(|e| format!("--pods: {e}"))?,
            "--nodes" => a.nodes = val()?.parse().map_err(|e| format!("--nodes: {e}"))?,
            "--manager" => a.manager = PathBuf::from(val()?),
            "--timeout-seconds" => {
                a.timeout = Duration::from_secs(
                    val()?
                        .parse()
                        .map_err(|e| format!("--timeout-seconds: {e}"))?,
                )
            }
            "-h" | "--help" => {
                println!(
                    "usage: kruise-bench [--pods N] [--nodes N] [--manager PATH] [--timeout-seconds S]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn image(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or("")
}

fn status_image_matches(p: &Pod, want: &str) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .is_some_and(|c| c.image == want)
}

/// Waits until `done(pods)`; prints `label: <progress(pods)>` every second.
async fn wait_pods(
    pods: &Api<Pod>,
    selector: &str,
    label: &str,
    timeout: Duration,
    done: impl Fn(&[Pod]) -> bool,
    progress: impl Fn(&[Pod]) -> String,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut last_print = Instant::now() - Duration::from_secs(2);
    loop {
        let list = pods
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| format!("listing pods: {e}"))?
            .items;
        if done(&list) {
            println!(
                "  {label}: {} (done in {:.1}s)",
                progress(&list),
                start.elapsed().as_secs_f64()
            );
            return Ok(start.elapsed());
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  {label}: {} ({:.0}s)",
                progress(&list),
                start.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{label}: not done within {timeout:?}: {}",
                progress(&list)
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn manager_writes(port: u16) -> Result<u64, String> {
    let body = reqwest_get(port).await?;
    let mut total = 0u64;
    for line in body.lines() {
        if !line.starts_with("rest_client_requests_total{") {
            continue;
        }
        if ["\"POST\"", "\"PUT\"", "\"PATCH\"", "\"DELETE\""]
            .iter()
            .any(|m| line.contains(m))
        {
            let v: f64 = line
                .rsplit(' ')
                .next()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0.0);
            total += v as u64;
        }
    }
    Ok(total)
}

async fn reqwest_get(port: u16) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("metrics endpoint: {e}"))?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out)
        .await
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

async fn run(a: Args) -> Result<(), String> {
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    let client = env.client.clone();

    // 1. Nodes and CRDs.
    kruise_e2e::ensure_kwok_nodes(&env, a.nodes)
        .await
        .map_err(|e| format!("kwok nodes: {e}"))?;
    let node_count = Api::<Node>::all(client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .len();
    println!("nodes: {node_count} kwok nodes");
    install_crds(&env).await.map_err(|e| e.to_string())?;

    // 2. The manager, watching only the benchmark's namespace (other tests may share the testbed).
    let ns = env.namespace("bench").await.map_err(|e| e.to_string())?;
    let port = 18390;
    let mut child = Command::new(&a.manager)
        .arg("--kubeconfig")
        .arg(testbed_kubeconfig())
        .args([
            "--enable-leader-election=false",
            "--metrics-addr",
            "127.0.0.1:18390",
            "--health-probe-addr",
            "127.0.0.1:18391",
        ])
        .args(["--cloneset-workers", "3", "--namespace", ns.name()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", a.manager.display()))?;
    let pid = child.id();
    let result = bench(&env, &ns, &a, port, pid).await;
    let peak = peak_rss_mb(pid);
    let _ = child.kill();
    let _ = child.wait();
    let (rollout, writes, baseline, pods) = result?;
    println!();
    println!("== kruise-bench: {pods} pods on {node_count} kwok nodes ==");
    println!(
        "in-place rollout (maxUnavailable 100%): {:.1}s to all updated and ready",
        rollout.as_secs_f64()
    );
    println!(
        "manager API writes during the rollout: {writes} ({:.2} per updated pod)",
        writes as f64 / pods as f64
    );
    match peak {
        Some(mb) => println!("manager peak RSS (VmHWM): {mb:.1} MiB"),
        None => println!("manager peak RSS: unavailable"),
    }
    println!(
        "baseline (bare client patches each pod once): {:.1}s",
        baseline.as_secs_f64()
    );
    println!(
        "ratio rollout / baseline: {:.2}",
        rollout.as_secs_f64() / baseline.as_secs_f64().max(0.001)
    );
    Ok(())
}

async fn bench(
    env: &TestEnv,
    ns: &kruise_e2e::TestNamespace,
    a: &Args,
    port: u16,
    pid: u32,
) -> Result<(Duration, u64, Duration, usize), String> {
    let pods: Api<Pod> = ns.api();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    );
    let cs_api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), ns.name(), &ar);
    let cs: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": a.pods,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {"metadata": {"labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "100%"},
        }
    }))
    .map_err(|e| e.to_string())?;
    cs_api
        .create(&PostParams::default(), &cs)
        .await
        .map_err(|e| format!("creating CloneSet: {e}"))?;
    let n = a.pods;
    let progress = |want: &'static str| {
        move |ps: &[Pod]| {
            let upd = ps.iter().filter(|p| image(p) == want).count();
            let rdy = ps
                .iter()
                .filter(|p| image(p) == want && ready(p) && status_image_matches(p, want))
                .count();
            format!("pods={} updated={upd} updatedReady={rdy}", ps.len())
        }
    };
    println!("scale up to {n} pods (manager pid {pid})");
    wait_pods(
        &pods,
        "app=bench",
        "create",
        a.timeout,
        |ps| ps.len() == n && ps.iter().all(ready),
        progress("nginx:1.25"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    println!("in-place rollout nginx:1.25 -> nginx:1.26");
    let w0 = manager_writes(port).await?;
    cs_api
        .patch("bench", &PatchParams::default(), &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}})))
        .await
        .map_err(|e| format!("patching CloneSet: {e}"))?;
    let want = "nginx:1.26";
    let rollout = wait_pods(
        &pods,
        "app=bench",
        "rollout",
        a.timeout,
        |ps| {
            ps.len() == n
                && ps
                    .iter()
                    .all(|p| image(p) == want && ready(p) && status_image_matches(p, want))
        },
        progress("nginx:1.26"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = manager_writes(port).await? - w0;

    // Baseline: the same pods, patched directly (manager paused so it does not interfere).
    cs_api
        .patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"updateStrategy": {"paused": true}}})),
        )
        .await
        .map_err(|e| e.to_string())?;
    println!("baseline: a bare client patches each pod's image to nginx:1.27");
    let names: Vec<String> = pods
        .list(&ListParams::default().labels("app=bench"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    let start = Instant::now();
    let patch = Patch::Strategic(
        json!({"spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}),
    );
    let results: Vec<Result<Pod, kube::Error>> = futures::stream::iter(names.iter())
        .map(|name| {
            let pods = pods.clone();
            let patch = patch.clone();
            async move { pods.patch(name, &PatchParams::default(), &patch).await }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
        return Err(format!("baseline patch: {e}"));
    }
    let remaining = a.timeout.saturating_sub(start.elapsed());
    wait_pods(
        &pods,
        "app=bench",
        "baseline",
        remaining,
        |ps| {
            ps.iter().all(|p| {
                image(p) == "nginx:1.27" && ready(p) && status_image_matches(p, "nginx:1.27")
            })
        },
        progress("nginx:1.27"),
    )
    .await?;
    let baseline = start.elapsed();
    Ok((rollout, writes, baseline, n))
}

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("kruise-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("kruise-bench: FAILED: {e}");
        std::process::exit(1);
    }
}
