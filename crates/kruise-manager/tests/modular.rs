//! A modular manager (#34): `--controllers` selects controllers, and a manager running only
//! some of them needs only their CRDs. On a control plane of its own (a second testbed: etcd,
//! kube-apiserver, controller manager, scheduler and one kwok node) where only the CloneSet CRD
//! is installed, `--controllers=cloneset` starts, becomes ready, registers only the CloneSet
//! webhooks (no pod webhook, nothing for the kinds whose CRDs are absent) and runs CloneSets
//! as usual.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{kubectl_path, repo_root, wait_for_object};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);

/// A testbed of its own (state under a temporary directory, its own block of ports), stopped
/// and wiped on drop.
struct OwnTestbed {
    dir: PathBuf,
    base: u16,
}

impl OwnTestbed {
    fn script(&self, args: &[&str]) -> std::process::Output {
        Command::new(repo_root().join("hack/testbed/testbed.sh"))
            .args(args)
            .env("KRUISE_TESTBED_DIR", &self.dir)
            .env("KRUISE_TESTBED_PORT_BASE", self.base.to_string())
            .output()
            .expect("testbed.sh")
    }

    fn up(base: u16) -> Self {
        let dir = std::env::temp_dir().join(format!("kruise-rs-modular-{}", std::process::id()));
        let tb = Self { dir, base };
        let out = tb.script(&["up", "--nodes", "1", "--real-nodes", "0"]);
        assert!(
            out.status.success(),
            "second testbed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tb
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    fn kubectl(&self, args: &[&str], stdin: Option<&str>) {
        use std::io::Write;
        let mut child = Command::new(kubectl_path().expect("kubectl"))
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl");
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write");
        }
        let out = child.wait_with_output().expect("kubectl");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    async fn client(&self) -> kube::Client {
        let kubeconfig = Kubeconfig::read_from(self.kubeconfig()).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("config");
        kube::Client::try_from(config).expect("client")
    }
}

impl Drop for OwnTestbed {
    fn drop(&mut self) {
        let _ = self.script(&["down", "--wipe"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
    let tb = OwnTestbed::up(23440);
    let client = tb.client().await;
    let ns = "modular";
    tb.kubectl(&["create", "namespace", "kruise-system"], None);
    tb.kubectl(&["create", "namespace", ns], None);
    let crd = repo_root().join("config/crd/bases/apps.kruise.io_clonesets.yaml");
    tb.kubectl(
        &["apply", "--server-side", "-f", crd.to_str().expect("path")],
        None,
    );
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
    assert_eq!(
        webhook_names(serde_json::to_value(v).unwrap()),
        ["vcloneset.kb.io"]
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
