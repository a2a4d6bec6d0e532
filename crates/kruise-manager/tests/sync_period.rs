//! `--sync-period` (OpenKruise's flag, controller-runtime's SyncPeriod): with a period every
//! watched object is reconciled again although nothing changed; with `0` (what OpenKruise's helm
//! chart passes) only changes are.

use std::time::Duration;

use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds};
use kube::api::PostParams;
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

/// Reconciles of the one idle CloneSet in a quiet `window`, with `--sync-period=<period>`.
async fn idle_reconciles(prefix: &str, period: &str, window: Duration) -> f64 {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace(prefix).await.unwrap();
    let cs: CloneSet = serde_json::from_value(json!({
        "metadata": {"name": "idle"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "idle"}},
                 "template": {"metadata": {"labels": {"app": "idle"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}},
    }))
    .unwrap();
    ns.api::<CloneSet>()
        .create(&PostParams::default(), &cs)
        .await
        .unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(&[
        "--controllers",
        "cloneset",
        &format!("--sync-period={period}"),
    ]);
    let manager = TestManager::start(spec, TIMEOUT).await;
    let count = || async {
        kruise_e2e::manager::reconciles(
            &manager.process.metrics_text().await.unwrap_or_default(),
            "cloneset",
        )
    };
    // Let the first reconcile and its status write settle.
    let mut last = count().await;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = count().await;
        if now > 0.0 && now == last {
            break;
        }
        last = now;
    }
    let before = count().await;
    tokio::time::sleep(window).await;
    count().await - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_period_reconciles_unchanged_objects_again() {
    let n = idle_reconciles("sync-3s", "3s", Duration::from_secs(10)).await;
    assert!(
        (2.0..=5.0).contains(&n),
        "{n} reconciles of an unchanged CloneSet in 10 s with --sync-period=3s (expected ~3)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_period_zero_reconciles_on_changes_only() {
    let n = idle_reconciles("sync-0", "0", Duration::from_secs(8)).await;
    assert_eq!(
        n, 0.0,
        "an unchanged CloneSet was reconciled with --sync-period=0"
    );
}
