//! ResourceDistribution controller end to end on the testbed (OpenKruise v1.9.0
//! `pkg/controller/resourcedistribution`): copies of a Secret or ConfigMap follow the targets
//! (listed, label-selected and excluded namespaces, namespaces created and relabelled), carry
//! OpenKruise's owner reference and annotations, are restored when edited or deleted, are
//! updated when the distribution changes and removed when it goes; conflicts and missing
//! namespaces show in the status conditions.
//!
//! ResourceDistributions are cluster-scoped and the controller reads Secrets and ConfigMaps of
//! every namespace, so each test runs its own manager cluster-wide (only this controller, its
//! gate on, no webhook server) and the tests take turns (`TURN`): a distribution is never seen
//! by another test's manager. Every namespace a test uses is its own (random name) and is
//! deleted at the end, as is every distribution (also when the test fails).

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kruise_api::apps::v1alpha1::ResourceDistribution;
use kruise_e2e::manager::{free_port, http_get};
use kruise_e2e::{
    TestEnv, TestNamespace, install_crds, testbed_kubeconfig, wait_for, wait_for_object,
};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(60);
const HASH: &str = "kruise.io/resourcedistribution.resource.hashcode";
const FROM: &str = "kruise.io/resourcedistribution.resource.from";

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A cluster-wide manager running only the ResourceDistribution controller; killed on drop.
struct Manager {
    _child: tokio::process::Child,
    log: std::path::PathBuf,
}

impl Manager {
    async fn start(lease_ns: &str) -> Manager {
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let health = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let (file, log) =
            kruise_e2e::fresh_log_file(&format!("{lease_ns}-manager.log")).expect("log file");
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
            .arg(format!("--kubeconfig={}", testbed_kubeconfig().display()))
            .arg(format!("--leader-election-namespace={lease_ns}"))
            .arg(format!("--metrics-addr={metrics}"))
            .arg(format!("--health-probe-addr={health}"))
            .arg("--controllers=resourcedistribution")
            .arg("--feature-gates=ResourceDistributionGate=true")
            .arg("--webhook-server=false")
            .args(["-v", "2"])
            .stdout(Stdio::from(file.try_clone().expect("log file")))
            .stderr(Stdio::from(file))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn kruise-manager");
        wait_for("manager ready", TIMEOUT, || async {
            matches!(http_get(health, "/readyz").await, Some((200, _))).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e}; log {}", log.display()));
        Manager { _child: child, log }
    }
}

/// Deletes the distribution when the test ends, pass or fail (own thread and runtime).
struct RdGuard {
    config: kube::Config,
    name: String,
}

impl Drop for RdGuard {
    fn drop(&mut self) {
        let (config, name) = (self.config.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let Ok(client) = Client::try_from(config) else {
                    return;
                };
                let api: Api<ResourceDistribution> = Api::all(client);
                let _ = tokio::time::timeout(
                    Duration::from_secs(10),
                    api.delete(&name, &DeleteParams::background()),
                )
                .await;
            });
        })
        .join();
    }
}

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, Manager) {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let home = env.namespace(prefix).await.unwrap();
    let manager = Manager::start(home.name()).await;
    (env, home, manager)
}

async fn create_rd(env: &TestEnv, name: &str, resource: Value, targets: Value) -> RdGuard {
    let rd: ResourceDistribution = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
        "metadata": {"name": name},
        "spec": {"resource": resource, "targets": targets},
    }))
    .unwrap();
    Api::<ResourceDistribution>::all(env.client.clone())
        .create(&PostParams::default(), &rd)
        .await
        .unwrap();
    RdGuard {
        config: env.config.clone(),
        name: name.to_owned(),
    }
}

async fn label_ns(env: &TestEnv, ns: &str, labels: Value) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    api.patch(
        ns,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": labels}})),
    )
    .await
    .unwrap();
}

fn secret(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": {"from": "rd"}},
           "type": "Opaque", "data": {"k": value}})
}

/// OpenKruise's `hashResource` of the distribution as the API server returns it (the e2e spec
/// computes it the same way from `spec.resource`'s raw bytes): SHA-256 of Go's JSON.
fn expected_hash(rd: &ResourceDistribution) -> String {
    kruise_manager::controllers::resourcedistribution::plan::hash_resource(&rd.spec.resource)
}

fn rd_name(prefix: &str, home: &TestNamespace) -> String {
    format!("{prefix}-{}", home.name().rsplit('-').next().unwrap_or("x"))
}

async fn wait_secret<P: FnMut(&Secret) -> bool>(
    env: &TestEnv,
    ns: &str,
    name: &str,
    what: &str,
    p: P,
) -> Secret {
    let api: Api<Secret> = Api::namespaced(env.client.clone(), ns);
    wait_for_object(&api, name, what, TIMEOUT, p).await.unwrap()
}

async fn wait_gone<K>(api: &Api<K>, name: &str, what: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, TIMEOUT, || async {
        api.get_opt(name)
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await
    .unwrap();
}

async fn wait_status<P: FnMut(&ResourceDistribution) -> bool>(
    env: &TestEnv,
    name: &str,
    what: &str,
    p: P,
) -> ResourceDistribution {
    let api: Api<ResourceDistribution> = Api::all(env.client.clone());
    wait_for_object(&api, name, what, TIMEOUT, p).await.unwrap()
}

fn condition<'a>(
    rd: &'a ResourceDistribution,
    t: &str,
) -> &'a kruise_api::apps::v1alpha1::ResourceDistributionCondition {
    rd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == t))
        .expect("condition")
}

#[tokio::test]
#[allow(
    clippy::await_holding_lock,
    reason = "the tests take turns (module docs); each runs on its own thread"
)]
async fn copies_follow_listed_selected_excluded_created_and_relabelled_namespaces() {
    let _turn = turn();
    let (env, home, manager) = setup("rd-targets").await;
    let listed = env.namespace("rd-listed").await.unwrap();
    let selected = env.namespace("rd-selected").await.unwrap();
    let excluded = env.namespace("rd-excluded").await.unwrap();
    let group = format!("g-{}", home.name().rsplit('-').next().unwrap());
    label_ns(&env, selected.name(), json!({"rd-e2e-group": group})).await;
    label_ns(&env, excluded.name(), json!({"rd-e2e-group": group})).await;
    let name = rd_name("targets", &home);
    let _guard = create_rd(
        &env,
        &name,
        secret("shared", "djE="),
        json!({
            "includedNamespaces": {"list": [{"name": listed.name()}]},
            "excludedNamespaces": {"list": [{"name": excluded.name()}]},
            "namespaceLabelSelector": {"matchLabels": {"rd-e2e-group": group}},
        }),
    )
    .await;

    let rd = wait_status(&env, &name, "2 copies in sync", |rd| {
        rd.status
            .as_ref()
            .is_some_and(|s| s.desired == Some(2) && s.succeeded == Some(2))
    })
    .await;
    let st = rd.status.clone().unwrap();
    assert_eq!(st.failed, None);
    assert_eq!(st.observed_generation, rd.metadata.generation);
    let types: Vec<_> = st
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_deref()))
        .collect();
    assert_eq!(
        types,
        [
            ("GetResourceFailed", "False", Some("Succeeded")),
            ("CreateResourceFailed", "False", Some("Succeeded")),
            ("UpdateResourceFailed", "False", Some("Succeeded")),
            ("DeleteResourceFailed", "False", Some("Succeeded")),
            ("ConflictOccurred", "False", Some("Succeeded")),
            ("NamespaceNotExists", "False", Some("Succeeded")),
        ]
    );
    let hash = expected_hash(&rd);
    for ns in [listed.name(), selected.name()] {
        let s = wait_secret(&env, ns, "shared", "copy", |_| true).await;
        assert_eq!(s.annotations().get(HASH), Some(&hash), "hash in {ns}");
        assert_eq!(s.annotations().get(FROM), Some(&name));
        assert_eq!(s.labels().get("from").map(String::as_str), Some("rd"));
        let owner = &s.owner_references()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str()
            ),
            (
                "apps.kruise.io/v1alpha1",
                "ResourceDistribution",
                name.as_str()
            )
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(owner.uid, rd.uid().unwrap());
    }
    let excluded_api: Api<Secret> = Api::namespaced(env.client.clone(), excluded.name());
    assert!(
        excluded_api.get_opt("shared").await.unwrap().is_none(),
        "no copy in the excluded namespace"
    );

    // A namespace created with the label gets a copy; one relabelled away loses it.
    let created = env.namespace("rd-created").await.unwrap();
    label_ns(&env, created.name(), json!({"rd-e2e-group": group})).await;
    wait_secret(
        &env,
        created.name(),
        "shared",
        "copy in the relabelled-in namespace",
        |_| true,
    )
    .await;
    label_ns(&env, selected.name(), json!({"rd-e2e-group": null})).await;
    let selected_api: Api<Secret> = Api::namespaced(env.client.clone(), selected.name());
    wait_gone(
        &selected_api,
        "shared",
        "copy removed from the relabelled-out namespace",
    )
    .await;

    // A new resource content reaches every copy with the new hash.
    let rds: Api<ResourceDistribution> = Api::all(env.client.clone());
    rds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"resource": secret("shared", "djI=")}})),
    )
    .await
    .unwrap();
    let rd = wait_status(&env, &name, "new generation observed", |rd| {
        rd.status.as_ref().and_then(|s| s.observed_generation) == rd.metadata.generation
    })
    .await;
    let hash2 = expected_hash(&rd);
    assert_ne!(hash, hash2);
    for ns in [listed.name(), created.name()] {
        wait_secret(&env, ns, "shared", "updated copy", |s| {
            s.annotations().get(HASH) == Some(&hash2)
                && s.data
                    .as_ref()
                    .and_then(|d| d.get("k"))
                    .map(|b| b.0.as_slice())
                    == Some(b"v2")
        })
        .await;
    }
    drop(manager);
    for ns in [listed, selected, excluded, created, home] {
        ns.delete().await.unwrap();
    }
}

#[tokio::test]
#[allow(
    clippy::await_holding_lock,
    reason = "the tests take turns (module docs); each runs on its own thread"
)]
async fn edited_copies_are_restored_and_deleted_copies_recreated() {
    let _turn = turn();
    let (env, home, manager) = setup("rd-restore").await;
    let target = env.namespace("rd-restore-t").await.unwrap();
    let name = rd_name("restore", &home);
    let _guard = create_rd(&env, &name,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}),
        json!({"includedNamespaces": {"list": [{"name": target.name()}]}})).await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), target.name());
    wait_for_object(&api, "settings", "copy", TIMEOUT, |_| true)
        .await
        .unwrap();

    // Someone edits the data and adds a label: the data comes back, the label stays.
    api.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"labels": {"added-by": "user"}}, "data": {"a": "changed", "b": "2"}
        })),
    )
    .await
    .unwrap();
    let cm = wait_for_object(
        &api,
        "settings",
        "data restored",
        TIMEOUT,
        |c: &ConfigMap| {
            c.data
                .as_ref()
                .is_some_and(|d| d.len() == 1 && d.get("a").map(String::as_str) == Some("1"))
        },
    )
    .await
    .unwrap();
    assert_eq!(
        cm.labels().get("added-by").map(String::as_str),
        Some("user")
    );

    // Someone deletes it: it is created again.
    let uid = cm.uid().unwrap();
    api.delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    wait_for_object(
        &api,
        "settings",
        "copy recreated",
        TIMEOUT,
        |c: &ConfigMap| c.uid().as_deref() != Some(uid.as_str()),
    )
    .await
    .unwrap();
    drop(manager);
    for ns in [target, home] {
        ns.delete().await.unwrap();
    }
}

#[tokio::test]
#[allow(
    clippy::await_holding_lock,
    reason = "the tests take turns (module docs); each runs on its own thread"
)]
async fn conflicts_and_missing_namespaces_show_in_conditions() {
    let _turn = turn();
    let (env, home, manager) = setup("rd-conflict").await;
    let taken = env.namespace("rd-taken").await.unwrap();
    let missing = format!("{}-later", home.name());
    let own: Api<Secret> = Api::namespaced(env.client.clone(), taken.name());
    let mine: Secret =
        serde_json::from_value(json!({"metadata": {"name": "shared"}, "stringData": {"x": "y"}}))
            .unwrap();
    own.create(&PostParams::default(), &mine).await.unwrap();
    let name = rd_name("conflict", &home);
    let _guard = create_rd(
        &env,
        &name,
        secret("shared", "djE="),
        json!({
            "includedNamespaces": {"list": [{"name": taken.name()}, {"name": missing}]},
        }),
    )
    .await;
    let rd = wait_status(
        &env,
        &name,
        "conflict and missing namespace reported",
        |rd| {
            rd.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "ConflictOccurred" && c.status == "True")
                        && c.iter()
                            .any(|c| c.type_ == "NamespaceNotExists" && c.status == "True")
                })
        },
    )
    .await;
    let st = rd.status.clone().unwrap();
    assert_eq!(
        (st.desired, st.succeeded, st.failed),
        (Some(2), None, Some(2))
    );
    let conflict = condition(&rd, "ConflictOccurred");
    assert_eq!(
        conflict.failed_namespaces.as_deref(),
        Some(&[taken.name().to_owned()][..])
    );
    assert_eq!(
        conflict.reason.as_deref(),
        Some(
            "conflict with existing resources because of the same namespace, group, version, kind and name"
        )
    );
    let not_exists = condition(&rd, "NamespaceNotExists");
    assert_eq!(
        not_exists.failed_namespaces.as_deref(),
        Some(&[missing.clone()][..])
    );
    assert_eq!(
        not_exists.reason.as_deref(),
        Some("namespace not found or is terminating")
    );
    // The user's secret is left alone.
    let s = own.get("shared").await.unwrap();
    assert!(s.owner_references().is_empty());
    assert!(s.annotations().get(HASH).is_none());

    // The listed namespace appears: it gets its copy and the condition clears.
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": missing}})).unwrap();
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    ns_api.create(&PostParams::default(), &ns).await.unwrap();
    wait_secret(
        &env,
        &missing,
        "shared",
        "copy in the new namespace",
        |_| true,
    )
    .await;
    let rd = wait_status(&env, &name, "missing namespace cleared", |rd| {
        rd.status.as_ref().is_some_and(|s| s.succeeded == Some(1))
            && condition(rd, "NamespaceNotExists").status == "False"
    })
    .await;
    assert_eq!(condition(&rd, "ConflictOccurred").status, "True");
    drop(manager);
    let _ = ns_api.delete(&missing, &DeleteParams::background()).await;
    for ns in [taken, home] {
        ns.delete().await.unwrap();
    }
}

#[tokio::test]
#[allow(
    clippy::await_holding_lock,
    reason = "the tests take turns (module docs); each runs on its own thread"
)]
async fn copies_go_with_the_distribution_and_all_namespaces_honours_exclusions() {
    let _turn = turn();
    let (env, home, manager) = setup("rd-all").await;
    let a = env.namespace("rd-all-a").await.unwrap();
    let name = rd_name("all", &home);
    let secret_name = format!("all-{}", home.name().rsplit('-').next().unwrap());
    let guard = create_rd(
        &env,
        &name,
        secret(&secret_name, "djE="),
        json!({
            "allNamespaces": true,
            "excludedNamespaces": {"list": [{"name": home.name()}]},
        }),
    )
    .await;
    wait_secret(
        &env,
        a.name(),
        &secret_name,
        "copy under allNamespaces",
        |_| true,
    )
    .await;
    // Every namespace is a target but the excluded one; namespaces of earlier tests that are
    // still terminating count as failed (`NamespaceNotExists`), all others succeed.
    let rd = wait_status(&env, &name, "all namespaces counted", |rd| {
        let Some(st) = rd.status.as_ref() else {
            return false;
        };
        let not_existing = condition(rd, "NamespaceNotExists")
            .failed_namespaces
            .as_ref()
            .map_or(0, Vec::len);
        st.desired.is_some()
            && st.succeeded.unwrap_or(0) + i32::try_from(not_existing).unwrap()
                == st.desired.unwrap()
    })
    .await;
    let st = rd.status.clone().unwrap();
    // default, kube-system, kube-public, kube-node-lease, kruise-system and a at least.
    assert!(st.succeeded.unwrap() >= 6, "{st:?}");
    let not_existing = condition(&rd, "NamespaceNotExists");
    assert!(
        !not_existing
            .failed_namespaces
            .iter()
            .flatten()
            .any(|n| n == a.name() || n == home.name())
    );
    let home_api: Api<Secret> = Api::namespaced(env.client.clone(), home.name());
    assert!(
        home_api.get_opt(&secret_name).await.unwrap().is_none(),
        "excluded namespace has no copy"
    );

    // Deleting the distribution removes its copies (garbage collection of the owner reference).
    drop(guard);
    let a_api: Api<Secret> = Api::namespaced(env.client.clone(), a.name());
    wait_gone(&a_api, &secret_name, "copy removed with its distribution").await;
    let _ = &manager.log;
    drop(manager);
    for ns in [a, home] {
        ns.delete().await.unwrap();
    }
}

/// `vresourcedistribution.kb.io` with an API server at hand: OpenKruise's dry-run create of the
/// resource refuses what Kubernetes refuses, besides the rules the admission corpus replays
/// (`tests/admission-corpus/resourcedistribution.jsonl`). The distributions are pinned to this
/// test's manager (`kruise-rs.io/e2e-namespace`) and created as dry runs, so nothing is stored.
#[tokio::test]
#[allow(
    clippy::await_holding_lock,
    reason = "the tests take turns (module docs); each runs on its own thread"
)]
async fn webhook_refuses_as_openkruise() {
    let _turn = turn();
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("rd-webhook").await.unwrap();
    let spec =
        kruise_e2e::manager::ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
            .args(&["--feature-gates=ResourceDistributionGate=true"]);
    let manager = kruise_e2e::manager::TestManager::start(spec, TIMEOUT).await;
    let api: Api<ResourceDistribution> = Api::all(env.client.clone());
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let rd = |resource: Value, targets: Value| -> ResourceDistribution {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ResourceDistribution",
            "metadata": {"name": "rd-webhook", "labels": {"kruise-rs.io/e2e-namespace": ns.name()}},
            "spec": {"resource": resource, "targets": targets},
        }))
        .unwrap()
    };
    let denial = |r: Result<ResourceDistribution, kube::Error>| match r {
        Err(kube::Error::Api(s)) => s.message,
        other => panic!("expected a denial, got {other:?}"),
    };
    // A Secret Kubernetes refuses (a data key with a space): OpenKruise's dry-run reports it.
    let bad_key = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a b": "x"}});
    let msg = denial(api.create(&dry, &rd(bad_key, json!({}))).await);
    assert!(
        msg.contains(r#"denied the request: spec.resource: Internal error: failed to dry-run to validate spec.resource, error: Secret "s" is invalid: "#)
            && msg.contains(r#"Invalid value: "a b": a valid config key must consist of alphanumeric characters"#),
        "{msg}"
    );
    // The rules without the API server, as recorded from OpenKruise.
    let msg = denial(
        api.create(
            &dry,
            &rd(
                secret("s", "djE="),
                json!({"includedNamespaces": {"list": [{"name": "a"}]}, "excludedNamespaces": {"list": [{"name": "a"}]}}),
            ),
        )
        .await,
    );
    assert!(msg.ends_with("ambiguous targets because namespace [a] is in both IncludedNamespaces.List and ExcludedNamespaces.List"), "{msg}");
    // A valid one passes (and, a dry run, is not stored).
    api.create(
        &dry,
        &rd(secret("s", "djE="), json!({"allNamespaces": true})),
    )
    .await
    .expect("a valid ResourceDistribution is admitted");
    assert!(
        manager
            .process
            .webhook_requests("/validate-apps-kruise-io-v1alpha1-resourcedistribution")
            .await
            .unwrap_or(0.0)
            >= 3.0,
        "the requests went through this manager's webhook"
    );
    drop(manager);
    ns.delete().await.unwrap();
}
