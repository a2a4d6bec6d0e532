//! Pods, CloneSets and kwok nodes of the testbed: what the scenarios read from them and wait for.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_e2e::TestEnv;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

pub(crate) fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub(crate) fn image(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or("")
}

pub(crate) fn status_image_matches(p: &Pod, want: &str) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .is_some_and(|c| c.image == want)
}

pub(crate) fn cloneset_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    )
}

pub(crate) fn cloneset_api(env: &TestEnv, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(env.client.clone(), ns, &cloneset_resource())
}

/// `metadata.generation` of a CloneSet.
pub(crate) fn generation(cs: &DynamicObject) -> i64 {
    cs.metadata.generation.unwrap_or(0)
}

/// An integer field of a CloneSet's status (0 when absent).
pub(crate) fn status_int(cs: &DynamicObject, field: &str) -> i64 {
    cs.data
        .get("status")
        .and_then(|s| s.get(field))
        .and_then(|v| v.as_i64())
        .unwrap_or(0)
}

pub(crate) fn observed(cs: &DynamicObject) -> bool {
    status_int(cs, "observedGeneration") == generation(cs)
}

/// Waits until `done(pods)`; prints `label: <progress(pods)>` every second.
pub(crate) async fn wait_pods(
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

/// Waits until `done(clonesets)`; prints `label: <progress(clonesets)>` every second. Returns
/// the time waited and the last list.
pub(crate) async fn wait_clonesets(
    api: &Api<DynamicObject>,
    label: &str,
    timeout: Duration,
    done: impl Fn(&[DynamicObject]) -> bool,
    progress: impl Fn(&[DynamicObject]) -> String,
) -> Result<(Duration, Vec<DynamicObject>), String> {
    let start = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing CloneSets: {e}"))?
            .items;
        let elapsed = start.elapsed();
        if done(&list) {
            println!(
                "  {label}: {} (done in {:.1}s)",
                progress(&list),
                elapsed.as_secs_f64()
            );
            return Ok((elapsed, list));
        }
        if last_print.elapsed() >= Duration::from_secs(1) {
            println!(
                "  {label}: {} ({:.0}s)",
                progress(&list),
                elapsed.as_secs_f64()
            );
            last_print = Instant::now();
        }
        if elapsed > timeout {
            return Err(format!(
                "{label}: not done within {timeout:?}: {}",
                progress(&list)
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn ensure_nodes(env: &TestEnv, n: usize) -> Result<usize, String> {
    kruise_e2e::ensure_kwok_nodes(env, n)
        .await
        .map_err(|e| format!("kwok nodes: {e}"))?;
    let count = Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .map_err(|e| e.to_string())?
        .items
        .len();
    println!("nodes: {count} kwok nodes");
    Ok(count)
}

/// Names of the kwok nodes (`type=kwok`).
pub(crate) async fn kwok_node_names(env: &TestEnv) -> Result<BTreeSet<String>, String> {
    Ok(Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels("type=kwok"))
        .await
        .map_err(|e| format!("listing nodes: {e}"))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect())
}

/// Deletes the kwok nodes a run added (those not in `before`), each with a progress line;
/// every failure is passed to `note` (the run's cleanup goes on).
pub(crate) async fn delete_added_kwok_nodes(
    env: &TestEnv,
    before: &BTreeSet<String>,
    mut note: impl FnMut(Result<(), String>),
) {
    match kwok_node_names(env).await {
        Ok(now) => {
            let nodes: Api<Node> = Api::all(env.client.clone());
            for name in now.difference(before) {
                println!("  deleting kwok node {name} (added by this run)");
                note(
                    nodes
                        .delete(name, &kube::api::DeleteParams::default())
                        .await
                        .map(|_| ())
                        .map_err(|e| format!("deleting node {name}: {e}")),
                );
            }
        }
        Err(e) => note(Err(e)),
    }
}

/// The UIDs of the namespace's pods that are not being deleted; fails if any is being deleted.
pub(crate) async fn pod_uids(pods: &Api<Pod>) -> Result<BTreeSet<String>, String> {
    let list = pods
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing pods: {e}"))?
        .items;
    let deleting = list
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .count();
    if deleting > 0 {
        return Err(format!("{deleting} pods are being deleted"));
    }
    Ok(list.into_iter().filter_map(|p| p.metadata.uid).collect())
}
