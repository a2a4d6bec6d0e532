//! A modular manager (#34): `--controllers` selects controllers, and a manager running only
//! some of them needs only their CRDs. On a control plane of its own (a second testbed: etcd,
//! kube-apiserver, controller manager, scheduler and one kwok node) where only the CloneSet CRD
//! is installed, `--controllers=cloneset` starts, becomes ready, registers only the CloneSet
//! webhooks (no pod webhook, nothing for the kinds whose CRDs are absent) and runs CloneSets
//! as usual.

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::testbed::OwnTestbed;
use kruise_e2e::{repo_root, wait_for_object};
use kube::api::{Api, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

fn webhook_names(value: serde_json::Value) -> Vec<String> {
    value["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn only_the_cloneset_crd_and_controllers_cloneset() {
    let tb = OwnTestbed::up("modular", 23440, 1, 0).expect("second testbed");
    let client = tb.client().await.expect("client");
    let ns = "modular";
    tb.kubectl(&["create", "namespace", "kruise-system"], None)
        .expect("kubectl");
    tb.kubectl(&["create", "namespace", ns], None)
        .expect("kubectl");
    let crd = repo_root().join("config/crd/bases/apps.kruise.io_clonesets.yaml");
    tb.kubectl(
        &["apply", "--server-side", "-f", crd.to_str().expect("path")],
        None,
    )
    .expect("kubectl");
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns)
        .kubeconfig(tb.kubeconfig())
        .args(&["--controllers", "cloneset"]);
    // Ready means: caches synced, certificates and configurations written.
    let manager = TestManager::start(spec, TIMEOUT).await;

    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let m = mutating
        .get(&format!("kruise-mutating-webhook-configuration-{ns}"))
        .await
        .expect("mutating configuration");
    let v = validating
        .get(&format!("kruise-validating-webhook-configuration-{ns}"))
        .await
        .expect("validating configuration");
    assert_eq!(
        webhook_names(serde_json::to_value(m).unwrap()),
        ["mcloneset.kb.io"]
    );
    // And deletion protection (built-in kinds, UnitedDeployments), which belongs to no controller
    // (`vservice`/`vingress` only with gate ResourcesDeletionProtection, off here).
    assert_eq!(
        webhook_names(serde_json::to_value(v).unwrap()),
        [
            "vbuiltindeployment.kb.io",
            "vbuiltinreplicaset.kb.io",
            "vbuiltinstatefulset.kb.io",
            "vcloneset.kb.io",
            "vcustomresourcedefinition.kb.io",
            "vnamespace.kb.io",
            "vuniteddeployment.kb.io"
        ]
    );

    let api: Api<CloneSet> = Api::namespaced(client.clone(), ns);
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &cs).await.unwrap();
    // Defaulted by the manager's mutating webhook.
    assert_eq!(
        created
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref()),
        Some("ReCreate")
    );
    wait_for_object(&api, "web", "2 ready replicas", TIMEOUT, |cs| {
        cs.status.as_ref().is_some_and(|s| s.ready_replicas == 2)
    })
    .await
    .expect("the CloneSet runs");
    let log = std::fs::read_to_string(&manager.process.log).unwrap_or_default();
    assert!(
        !log.contains("sidecarsets"),
        "the manager touched SidecarSets"
    );
    drop(manager);
}
