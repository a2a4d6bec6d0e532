//! The cluster state the admission run owns: the webhook configurations, namespace
//! `kruise-system`, its SidecarSets and pods, and the managers it starts.

use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise_e2e::TestEnv;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::json;

use super::{
    AdmissionArgs, KRUISE_NAMESPACE, MUTATING, SIDECARSET_LABEL, SIDECARSET_LABEL_VALUE, VALIDATING,
};
use crate::metrics::http_get;
use crate::process::Manager;

pub(crate) async fn webhook_configurations(env: &TestEnv) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    if m.get_opt(MUTATING)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        found.push(format!("mutatingwebhookconfiguration {MUTATING}"));
    }
    let v: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    if v.get_opt(VALIDATING)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        found.push(format!("validatingwebhookconfiguration {VALIDATING}"));
    }
    Ok(found)
}

/// Makes sure namespace `kruise-system` (the manager's own, `POD_NAMESPACE`) exists; true when
/// this call created it. A namespace being deleted (e.g. by the previous run's cleanup) is waited
/// for: a manager started meanwhile could not write its certificate Secret into it.
pub(crate) async fn ensure_kruise_namespace(env: &TestEnv) -> Result<bool, String> {
    let ns_api: Api<Namespace> = Api::all(env.client.clone());
    let start = Instant::now();
    let created = loop {
        match ns_api
            .get_opt(KRUISE_NAMESPACE)
            .await
            .map_err(|e| e.to_string())?
        {
            None => break true,
            Some(ns) if ns.metadata.deletion_timestamp.is_none() => break false,
            Some(_) if start.elapsed() > Duration::from_secs(120) => {
                return Err(format!(
                    "namespace {KRUISE_NAMESPACE} still terminating after 120 s"
                ));
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    if created {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": KRUISE_NAMESPACE}})).unwrap();
        ns_api
            .create(&PostParams::default(), &ns)
            .await
            .map_err(|e| format!("creating namespace {KRUISE_NAMESPACE}: {e}"))?;
    }
    Ok(created)
}

/// Deletes both webhook configurations (they fail closed without a manager), then waits until
/// they are gone.
pub(crate) async fn delete_webhook_configurations(env: &TestEnv) -> Result<(), String> {
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    let v: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    for r in [
        m.delete(MUTATING, &DeleteParams::default())
            .await
            .map(|_| ()),
        v.delete(VALIDATING, &DeleteParams::default())
            .await
            .map(|_| ()),
    ] {
        match r {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("deleting a webhook configuration: {e}")),
        }
    }
    let start = Instant::now();
    while !webhook_configurations(env).await?.is_empty() {
        if start.elapsed() > Duration::from_secs(30) {
            return Err("webhook configurations not gone after 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The `matchConditions` expressions of `mpod.kb.io` (empty: none, every pod is sent);
/// `None` when the configuration or the webhook is absent.
pub(crate) async fn pod_webhook_conditions(env: &TestEnv) -> Result<Option<Vec<String>>, String> {
    let m: Api<MutatingWebhookConfiguration> = Api::all(env.client.clone());
    let Some(cfg) = m.get_opt(MUTATING).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    Ok(cfg
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .find(|w| w.name == "mpod.kb.io")
        .map(|w| {
            w.match_conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.expression)
                .collect()
        }))
}

pub(super) fn sidecarset_api(env: &TestEnv) -> Api<DynamicObject> {
    Api::all_with(
        env.client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps.kruise.io", "v1beta1", "SidecarSet"),
            "sidecarsets",
        ),
    )
}

pub(super) async fn sidecarset_names(
    env: &TestEnv,
    selector: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut lp = ListParams::default();
    if let Some(s) = selector {
        lp = lp.labels(s);
    }
    Ok(sidecarset_api(env)
        .list(&lp)
        .await
        .map_err(|e| format!("listing SidecarSets: {e}"))?
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect())
}

/// Deletes the SidecarSets the run created and waits until they are gone.
pub(super) async fn delete_sidecarsets(env: &TestEnv) -> Result<(), String> {
    let selector = format!("{SIDECARSET_LABEL}={SIDECARSET_LABEL_VALUE}");
    let api = sidecarset_api(env);
    for name in sidecarset_names(env, Some(&selector)).await? {
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("deleting SidecarSet {name}: {e}")),
        }
    }
    let start = Instant::now();
    while !sidecarset_names(env, Some(&selector)).await?.is_empty() {
        if start.elapsed() > Duration::from_secs(60) {
            return Err("SidecarSets not gone after 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Deletes every pod of `api`'s namespace at once (grace period 0) and waits until none is left.
/// A failed request is retried until `timeout` (a collection delete of thousands of pods on a
/// busy API server can outlast the client's timeout while it goes on in the server).
pub(crate) async fn delete_pods(api: &Api<Pod>, timeout: Duration) -> Result<(), String> {
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let start = Instant::now();
    let mut last_error = String::new();
    loop {
        match api.list(&ListParams::default().limit(1)).await {
            Ok(l) if l.items.is_empty() => return Ok(()),
            Ok(_) => {
                if let Err(e) = api.delete_collection(&dp, &ListParams::default()).await {
                    last_error = format!("deleting pods: {e}");
                }
            }
            Err(e) => last_error = format!("listing pods: {e}"),
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "pods not deleted within {timeout:?} (last error: {last_error})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A manager as users run it (webhook server on, reached at https://127.0.0.1:<port>,
/// `POD_NAMESPACE=kruise-system`, every namespace), plus `extra`; waits for `/readyz` (caches
/// synced, certificate and webhook configurations in place).
pub(super) async fn start_manager(
    a: &AdmissionArgs,
    extra: &[&str],
    log_name: &str,
    http: &reqwest::Client,
) -> Result<Manager, String> {
    let mut args: Vec<String> = [
        "--webhook-server",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-bind-address",
        "127.0.0.1",
        "--webhook-port",
    ]
    .map(String::from)
    .to_vec();
    args.push(a.webhook_port.to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(a.manager_args.iter().cloned());
    let mut m = Manager::spawn(
        &a.manager,
        &args,
        &[("POD_NAMESPACE", KRUISE_NAMESPACE)],
        log_name,
    )?;
    println!(
        "  manager pid {} {} (log {})",
        m.pid,
        args.join(" "),
        m.log.display()
    );
    let start = Instant::now();
    loop {
        m.check_running()?;
        if let Ok((200, _)) = http_get(http, m.health, "/readyz").await {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "manager not ready within 120 s (log {})",
                m.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("  ready in {:.1}s", start.elapsed().as_secs_f64());
    Ok(m)
}

/// Stops the manager (SIGTERM) and removes the webhook configurations it left (they fail
/// closed).
pub(super) async fn stop_manager(env: &TestEnv, m: &mut Manager) -> Result<(), String> {
    m.stop().await;
    delete_webhook_configurations(env).await
}
