//! `rollout`: the in-place image rollout of one workload (CloneSet, Advanced StatefulSet or
//! Advanced DaemonSet, `maxUnavailable: 100%`) by the measured manager, against a bare client
//! patching every pod's image.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::{TestEnv, TestNamespace, install_crds};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::json;

use crate::admission;
use crate::cli::{RolloutArgs, Workload};
use crate::cluster::{
    cloneset_resource, ensure_nodes, image, kwok_node_names, ready, status_image_matches, wait_pods,
};
use crate::metrics::{http_client, scrape_requests, scrape_text, writes_by_resource};
use crate::process::{Manager, proc_status_mib, wait_ready};
use crate::report;

impl Workload {
    fn resource(self) -> ApiResource {
        match self {
            Workload::Cloneset => cloneset_resource(),
            Workload::Statefulset => ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "StatefulSet"),
                "statefulsets",
            ),
            Workload::Daemonset => ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "DaemonSet"),
                "daemonsets",
            ),
        }
    }

    /// The object of `pods` replicas.
    fn object(self, pods: usize) -> serde_json::Value {
        let template = json!({"metadata": {"labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}});
        match self {
            Workload::Cloneset => json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": "bench"},
                "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "bench"}},
                         "template": template,
                         "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "100%"}}}),
            Workload::Statefulset => {
                let mut template = template;
                template["spec"]["readinessGates"] =
                    json!([{"conditionType": "InPlaceUpdateReady"}]);
                json!({
                    "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                    "metadata": {"name": "bench"},
                    "spec": {"replicas": pods, "serviceName": "bench", "podManagementPolicy": "Parallel",
                             "selector": {"matchLabels": {"app": "bench"}}, "template": template,
                             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                                 "podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": "100%"}}}})
            }
            Workload::Daemonset => {
                let mut template = template;
                template["spec"]["nodeSelector"] = json!({"type": "kwok"});
                template["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
                json!({
                    "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
                    "metadata": {"name": "bench"},
                    "spec": {"selector": {"matchLabels": {"app": "bench"}}, "template": template,
                             "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                                 "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": "100%"}}}})
            }
        }
    }

    /// The merge patch that pauses the rollout.
    fn pause(self) -> serde_json::Value {
        match self {
            Workload::Cloneset => json!({"spec": {"updateStrategy": {"paused": true}}}),
            Workload::Statefulset | Workload::Daemonset => {
                json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}}}})
            }
        }
    }

    fn flags(self) -> [String; 2] {
        match self {
            Workload::Cloneset => ["--cloneset-workers".into(), "3".into()],
            Workload::Statefulset => ["--statefulset-workers".into(), "3".into()],
            Workload::Daemonset => ["--daemonset-workers".into(), "3".into()],
        }
    }
}

/// What a rollout measured.
pub(crate) struct Rollout {
    /// The image change to every pod updated and ready.
    pub(crate) rollout: Duration,
    /// The manager's API writes during the rollout.
    pub(crate) writes: u64,
    /// Those writes by what they wrote (`group/resource[/subresource] verb code`).
    pub(crate) by_resource: BTreeMap<String, u64>,
    /// The bare client's patches of every pod to all updated and ready.
    pub(crate) baseline: Duration,
    /// Pods of the workload.
    pub(crate) pods: usize,
}

pub(crate) async fn rollout(mut a: RolloutArgs) -> Result<(), String> {
    let env = TestEnv::connect().await.map_err(|e| e.to_string())?;
    let http = http_client()?;

    // 1. Nodes and CRDs. A DaemonSet has one pod per node (the kwok nodes).
    let before = kwok_node_names(&env).await?;
    let node_count = ensure_nodes(&env, a.nodes).await?;
    if a.workload == Workload::Daemonset {
        a.pods = node_count;
    }
    install_crds(&env).await.map_err(|e| e.to_string())?;
    admission::ensure_kruise_namespace(&env).await?;
    let mut result = rollout_measure(&env, &a, &http, node_count).await;
    // The manager served the webhooks (as users run it); their configurations fail closed
    // without it.
    let cleaned = admission::delete_webhook_configurations(&env).await;
    result = result.and(cleaned);
    // Nodes this run added are removed again, so that later tests see the usual testbed.
    let added: Vec<String> = kwok_node_names(&env)
        .await?
        .difference(&before)
        .cloned()
        .collect();
    if !added.is_empty() {
        println!("removing the {} kwok nodes this run added", added.len());
        let nodes: Api<Node> = Api::all(env.client.clone());
        for name in &added {
            nodes
                .delete(name, &Default::default())
                .await
                .map_err(|e| format!("deleting node {name}: {e}"))?;
        }
    }
    result
}

async fn rollout_measure(
    env: &TestEnv,
    a: &RolloutArgs,
    http: &reqwest::Client,
    node_count: usize,
) -> Result<(), String> {
    // 2. The manager, cluster-wide unless --watch-namespace (flags both managers accept), and
    //    its readiness before the workload exists.
    let ns = env.namespace("bench").await.map_err(|e| e.to_string())?;
    let (mut manager, started) = start_measured_manager(a, &ns)?;
    let result = match wait_ready(
        http,
        &mut manager,
        Duration::from_secs(a.ready_timeout_seconds),
    )
    .await
    {
        Ok(()) => {
            let ready = started.elapsed();
            println!(
                "manager ready (/readyz 200) after {:.1}s",
                ready.as_secs_f64()
            );
            rollout_run(env, &ns, a, http, &mut manager)
                .await
                .map(|r| (ready, r))
        }
        Err(e) => Err(e),
    };
    let peak = proc_status_mib(manager.pid, "VmHWM");
    manager.stop().await;
    let (ready, rolled) = result?;
    report::print_rollout(a, node_count, &rolled, peak);
    if let Some(path) = &a.json {
        report::write_json(
            path,
            &report::rollout_json(a, node_count, ready, &rolled, peak),
        )?;
    }
    ns.delete().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// Starts the measured manager with the workload's flags, the client settings and
/// `--manager-arg`s; returns it and when it was started.
fn start_measured_manager(
    a: &RolloutArgs,
    ns: &TestNamespace,
) -> Result<(Manager, Instant), String> {
    let mut extra = a.workload.flags().to_vec();
    extra.extend(a.client.rest_config_flags());
    extra.extend(a.manager_args.iter().cloned());
    let started = Instant::now();
    let manager = Manager::start(
        &a.manager,
        a.client.watch_namespace.then_some(ns.name()),
        &extra,
        a.client.webhook_port,
        &format!("{}-manager.log", ns.name()),
    )?;
    println!(
        "manager {} pid {} (log {}), flags {}",
        a.manager.display(),
        manager.pid,
        manager.log.display(),
        extra.join(" ")
    );
    Ok((manager, started))
}

/// Steps 3 to 5 of the scenario, with the manager ready: the workload scaled up, the measured
/// rollout, the baseline.
async fn rollout_run(
    env: &TestEnv,
    ns: &TestNamespace,
    a: &RolloutArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
) -> Result<Rollout, String> {
    let timeout = Duration::from_secs(a.timeout_seconds);
    let pods: Api<Pod> = ns.api();
    let cs_api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns.name(), &a.workload.resource());
    scale_up(a, &cs_api, &pods, manager, timeout).await?;
    let (rollout, writes, by_resource) =
        roll_out(a, http, manager, &cs_api, &pods, timeout).await?;
    let baseline = baseline(a, &cs_api, &pods, timeout).await?;
    Ok(Rollout {
        rollout,
        writes,
        by_resource,
        baseline,
        pods: a.pods,
    })
}

/// A pod's progress towards image `want`: pods, updated, updated and ready.
fn progress(want: &'static str) -> impl Fn(&[Pod]) -> String {
    move |ps: &[Pod]| {
        let upd = ps.iter().filter(|p| image(p) == want).count();
        let rdy = ps.iter().filter(|p| updated_and_ready(p, want)).count();
        format!("pods={} updated={upd} updatedReady={rdy}", ps.len())
    }
}

/// Whether the pod runs image `want` (spec and status) and is ready.
fn updated_and_ready(p: &Pod, want: &str) -> bool {
    image(p) == want && ready(p) && status_image_matches(p, want)
}

/// Step 3: creates the workload of `--pods` pods and waits until all of them are ready.
async fn scale_up(
    a: &RolloutArgs,
    cs_api: &Api<DynamicObject>,
    pods: &Api<Pod>,
    manager: &Manager,
    timeout: Duration,
) -> Result<(), String> {
    let cs: DynamicObject =
        serde_json::from_value(a.workload.object(a.pods)).map_err(|e| e.to_string())?;
    cs_api
        .create(&PostParams::default(), &cs)
        .await
        .map_err(|e| format!("creating the {:?}: {e}", a.workload))?;
    let n = a.pods;
    println!("scale up to {n} pods (manager pid {})", manager.pid);
    wait_pods(
        pods,
        "app=bench",
        "create",
        timeout,
        |ps| ps.len() == n && ps.iter().all(ready),
        progress("nginx:1.25"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(())
}

/// Step 4: the measured in-place rollout (nginx:1.25 -> nginx:1.26): the time until every pod is
/// updated and ready, and the manager's API writes meanwhile, in total and by resource.
async fn roll_out(
    a: &RolloutArgs,
    http: &reqwest::Client,
    manager: &mut Manager,
    cs_api: &Api<DynamicObject>,
    pods: &Api<Pod>,
    timeout: Duration,
) -> Result<(Duration, u64, BTreeMap<String, u64>), String> {
    println!("in-place rollout nginx:1.25 -> nginx:1.26");
    manager.check_running()?;
    let w0 = scrape_requests(http, manager).await?;
    let r0 = writes_by_resource(&scrape_text(http, manager).await?);
    cs_api
        .patch("bench", &PatchParams::default(), &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}})))
        .await
        .map_err(|e| format!("patching the {:?}: {e}", a.workload))?;
    let want = "nginx:1.26";
    let n = a.pods;
    let rollout = wait_pods(
        pods,
        "app=bench",
        "rollout",
        timeout,
        |ps| ps.len() == n && ps.iter().all(|p| updated_and_ready(p, want)),
        progress("nginx:1.26"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = scrape_requests(http, manager).await?.since(&w0).writes;
    let mut by_resource = writes_by_resource(&scrape_text(http, manager).await?);
    for (k, v) in by_resource.iter_mut() {
        *v = v.saturating_sub(r0.get(k).copied().unwrap_or(0));
    }
    by_resource.retain(|_, v| *v > 0);
    Ok((rollout, writes, by_resource))
}

/// Step 5, the baseline: the same pods' image patched to nginx:1.27 directly by a bare client (the
/// rollout paused, so that the manager does not interfere), until all are updated and ready.
async fn baseline(
    a: &RolloutArgs,
    cs_api: &Api<DynamicObject>,
    pods: &Api<Pod>,
    timeout: Duration,
) -> Result<Duration, String> {
    cs_api
        .patch(
            "bench",
            &PatchParams::default(),
            &Patch::Merge(a.workload.pause()),
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
    let remaining = timeout.saturating_sub(start.elapsed());
    wait_pods(
        pods,
        "app=bench",
        "baseline",
        remaining,
        |ps| ps.iter().all(|p| updated_and_ready(p, "nginx:1.27")),
        progress("nginx:1.27"),
    )
    .await?;
    Ok(start.elapsed())
}
