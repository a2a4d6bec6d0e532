//! CloneSet end to end on the real testbed. Each test runs its own `kruise-manager` process as
//! users run it — webhook server on, the pod webhook registered, default flags — restricted to
//! the test's namespace (`kruise_e2e::manager`), so tests run in parallel and a test can kill and
//! restart "its" manager.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_e2e::manager::{ManagerProcess, ManagerSpec};
use kruise_e2e::{TestEnv, TestNamespace, install_crds, wait_for, wait_for_list, wait_for_object};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The test's kruise-manager, run as users run it (webhook server and pod webhook on, leader
/// election on, default flags), isolated to the test's namespace ([`ManagerSpec`]). On drop the
/// process is killed, then its webhook configurations are removed.
struct Manager {
    process: ManagerProcess,
    spec: ManagerSpec,
}

impl Manager {
    /// Starts the manager and waits for `/readyz` (caches synced, webhooks configured), so
    /// that what the test creates next goes through the webhooks.
    async fn start(ns: &str) -> Self {
        Self::start_spec(ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns)).await
    }

    async fn start_spec(mut spec: ManagerSpec) -> Self {
        let process = spec.start();
        process.wait_ready(TIMEOUT).await.unwrap();
        Manager { process, spec }
    }

    /// SIGKILL, as a crash would.
    fn kill(&mut self) {
        self.process.kill();
    }

    /// A new process after [`kill`](Self::kill), ready.
    async fn restart(&mut self) {
        self.process.kill();
        self.process = self.spec.start();
        self.process.wait_ready(TIMEOUT).await.unwrap();
    }
}

async fn setup(prefix: &str) -> (TestEnv, TestNamespace, Manager) {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace(prefix).await.unwrap();
    let m = Manager::start(ns.name()).await;
    (env, ns, m)
}

fn cloneset(name: &str, replicas: i32, extra_spec: Value) -> CloneSet {
    let mut spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        },
    });
    merge(&mut spec, extra_spec);
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

/// Ready (Running, Ready) and in-place update finished.
fn available(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
        && condition(pod, "InPlaceUpdateReady").as_deref() != Some("False")
}

fn image_of(pod: &Pod) -> String {
    pod.spec.as_ref().unwrap().containers[0]
        .image
        .clone()
        .unwrap_or_default()
}

fn status_of(cs: &CloneSet) -> kruise_api::apps::v1alpha1::CloneSetStatus {
    cs.status.clone().unwrap_or_default()
}

async fn wait_ready(cs_api: &Api<CloneSet>, name: &str, replicas: i32) -> CloneSet {
    wait_for_object(
        cs_api,
        name,
        &format!("{name}: {replicas} updated ready replicas"),
        TIMEOUT,
        |cs| {
            let s = status_of(cs);
            cs.metadata.generation == s.observed_generation
                && s.replicas == replicas
                && s.ready_replicas == replicas
                && s.updated_ready_replicas == replicas
        },
    )
    .await
    .unwrap()
}

async fn pods_of(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    ns.api::<Pod>()
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

async fn patch_spec(api: &Api<CloneSet>, name: &str, spec: Value) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": spec})),
    )
    .await
    .unwrap();
}

/// Records, from a watch on the namespace's pods, the largest number of pods of `app` that
/// were unavailable at the same time, the largest number of live pods, and, per pod, the
/// sequence of `InPlaceUpdateReady` statuses seen.
#[derive(Default, Debug)]
struct Observed {
    max_unavailable: usize,
    max_pods: usize,
    inplace_ready: BTreeMap<String, Vec<String>>,
    uids: BTreeSet<String>,
    watch_errors: Vec<String>,
}

/// Returns once the watch has delivered its initial list (so nothing that happens afterwards is
/// missed), with the record and the watching task.
async fn observe(
    ns: &TestNamespace,
    app: &str,
) -> (Arc<Mutex<Observed>>, tokio::task::JoinHandle<()>) {
    let obs = Arc::new(Mutex::new(Observed::default()));
    let (listed_tx, listed) = tokio::sync::oneshot::channel::<()>();
    let api = ns.api::<Pod>();
    let cfg = watcher::Config::default().labels(&format!("app={app}"));
    let o = obs.clone();
    let task = tokio::spawn(async move {
        let mut listed_tx = Some(listed_tx);
        // What the watch says exists; a re-list (after a watch error) rebuilds it from scratch,
        // so pods deleted while the watch was down do not linger.
        let mut live: BTreeMap<String, Pod> = BTreeMap::new();
        let mut relist: Option<BTreeMap<String, Pod>> = None;
        let mut stream = watcher(api, cfg).default_backoff().boxed();
        while let Some(ev) = stream.next().await {
            let p = match ev {
                Ok(watcher::Event::Init) => {
                    relist = Some(BTreeMap::new());
                    continue;
                }
                Ok(watcher::Event::InitDone) => {
                    if let Some(fresh) = relist.take() {
                        live = fresh;
                    }
                    if let Some(tx) = listed_tx.take() {
                        let _ = tx.send(());
                    }
                    None
                }
                Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => Some(p),
                Ok(watcher::Event::Delete(p)) => {
                    live.remove(&p.name_any());
                    None
                }
                Err(e) => {
                    o.lock().unwrap().watch_errors.push(e.to_string());
                    continue;
                }
            };
            if let Some(p) = p {
                let name = p.name_any();
                if let Some(s) = condition(&p, "InPlaceUpdateReady") {
                    let mut g = o.lock().unwrap();
                    let seq = g.inplace_ready.entry(name.clone()).or_default();
                    if seq.last() != Some(&s) {
                        seq.push(s);
                    }
                }
                let target = relist.as_mut().unwrap_or(&mut live);
                if p.metadata.deletion_timestamp.is_some() {
                    target.remove(&name);
                } else {
                    o.lock()
                        .unwrap()
                        .uids
                        .insert(p.metadata.uid.clone().unwrap_or_default());
                    target.insert(name, p);
                }
                if relist.is_some() {
                    continue;
                }
            }
            let unavailable = live.values().filter(|p| !available(p)).count();
            let mut g = o.lock().unwrap();
            g.max_unavailable = g.max_unavailable.max(unavailable);
            g.max_pods = g.max_pods.max(live.len());
        }
    });
    tokio::time::timeout(TIMEOUT, listed)
        .await
        .expect("the pod watch lists within the timeout")
        .expect("the watch task is alive");
    (obs, task)
}

#[tokio::test]
async fn scale_up_then_down_honours_pods_to_delete() {
    let (_env, ns, _m) = setup("cs-scale").await;
    let api = ns.api::<CloneSet>();
    api.create(&PostParams::default(), &cloneset("web", 0, json!({})))
        .await
        .unwrap();
    wait_for_object(&api, "web", "status observed", TIMEOUT, |cs| {
        cs.status
            .as_ref()
            .is_some_and(|s| s.observed_generation == cs.metadata.generation)
    })
    .await
    .unwrap();
    assert!(pods_of(&ns, "web").await.is_empty());

    patch_spec(&api, "web", json!({"replicas": 5})).await;
    wait_ready(&api, "web", 5).await;
    let pods = pods_of(&ns, "web").await;
    assert_eq!(pods.len(), 5);
    for p in &pods {
        let labels = p.labels();
        assert!(p.name_any().starts_with("web-") && p.name_any().len() == "web-".len() + 5);
        assert_eq!(
            labels["apps.kruise.io/cloneset-instance-id"],
            p.name_any()["web-".len()..]
        );
        assert!(labels["controller-revision-hash"].starts_with("web-"));
        assert_eq!(
            labels["pod-template-hash"],
            labels["controller-revision-hash"]["web-".len()..]
        );
        assert_eq!(labels["lifecycle.apps.kruise.io/state"], "Normal");
    }

    let mut names: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    names.sort();
    let doomed: Vec<String> = names[..3].to_vec();
    let kept: BTreeSet<String> = names[3..].iter().cloned().collect();
    patch_spec(
        &api,
        "web",
        json!({"replicas": 2, "scaleStrategy": {"podsToDelete": doomed}}),
    )
    .await;
    wait_for_list(
        &ns.api::<Pod>(),
        &ListParams::default().labels("app=web"),
        "the 2 kept pods only",
        TIMEOUT,
        |ps| {
            let names: BTreeSet<String> = ps.iter().map(|p| p.name_any()).collect();
            names == kept
        },
    )
    .await
    .unwrap();
    let cs = wait_ready(&api, "web", 2).await;
    // The list is truncated once the pods are gone.
    wait_for_object(&api, "web", "podsToDelete truncated", TIMEOUT, |cs| {
        cs.spec
            .scale_strategy
            .as_ref()
            .and_then(|s| s.pods_to_delete.as_ref())
            .is_none_or(|v| v.is_empty())
    })
    .await
    .unwrap();
    assert_eq!(status_of(&cs).label_selector.as_deref(), Some("app=web"));
}

#[tokio::test]
async fn in_place_image_update_keeps_pods_and_respects_max_unavailable() {
    let (_env, ns, _m) = setup("cs-inplace").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        5,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 2}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 5).await;
    let before: BTreeMap<String, (String, String)> = pods_of(&ns, "web")
        .await
        .iter()
        .map(|p| {
            let st = &p
                .status
                .as_ref()
                .unwrap()
                .container_statuses
                .as_ref()
                .unwrap()[0];
            (
                p.name_any(),
                (p.metadata.uid.clone().unwrap(), st.image_id.clone()),
            )
        })
        .collect();
    let (obs, task) = observe(&ns, "web").await;

    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    let cs = wait_ready(&api, "web", 5).await;
    assert_eq!(status_of(&cs).updated_replicas, 5);
    let after = pods_of(&ns, "web").await;
    assert_eq!(after.len(), 5);
    for p in &after {
        let (uid, old_image_id) = &before[&p.name_any()];
        assert_eq!(
            p.metadata.uid.as_ref(),
            Some(uid),
            "{} was recreated",
            p.name_any()
        );
        assert_eq!(image_of(p), "nginx:1.26");
        let st = &p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert_ne!(&st.image_id, old_image_id);
        assert_eq!(st.restart_count, 1);
        let state: Value =
            serde_json::from_str(&p.annotations()["apps.kruise.io/inplace-update-state"]).unwrap();
        assert_eq!(
            state["revision"],
            status_of(&cs).update_revision.clone().unwrap()
        );
        assert!(state["lastContainerStatuses"]["main"]["imageID"].is_string());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    task.abort();
    let obs = obs.lock().unwrap();
    assert!(
        obs.max_unavailable <= 2,
        "at most maxUnavailable=2 unavailable at once: {obs:?}"
    );
    assert!(obs.max_unavailable >= 1, "the update was observed: {obs:?}");
    for name in before.keys() {
        let seq = obs.inplace_ready.get(name).cloned().unwrap_or_default();
        let s = seq.join(",");
        assert!(
            s.contains("False,True"),
            "{name}: InPlaceUpdateReady went {s}"
        );
    }
}

#[tokio::test]
async fn partition_sixty_percent_updates_forty_percent_and_stops() {
    let (_env, ns, _m) = setup("cs-partition").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        5,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "partition": "60%", "maxUnavailable": 5}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 5).await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_for_object(&api, "web", "2 of 5 updated and ready", TIMEOUT, |cs| {
        let s = status_of(cs);
        s.updated_ready_replicas == 2
            && s.ready_replicas == 5
            && s.expected_updated_replicas == Some(2)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods = pods_of(&ns, "web").await;
    let updated = pods.iter().filter(|p| image_of(p) == "nginx:1.26").count();
    assert_eq!(updated, 2, "exactly 40% updated");
    let cs = api.get("web").await.unwrap();
    assert_eq!(status_of(&cs).updated_replicas, 2);
    assert_ne!(
        status_of(&cs).current_revision,
        status_of(&cs).update_revision
    );
}

#[tokio::test]
async fn non_in_place_change_recreates_pods_under_in_place_if_possible() {
    let (_env, ns, _m) = setup("cs-recreate").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        3,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 1}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 3).await;
    let uids: BTreeSet<String> = pods_of(&ns, "web")
        .await
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25", "env": [{"name": "MODE", "value": "b"}]}]}}}),
    )
    .await;
    wait_for("all 3 pods recreated and ready", TIMEOUT, || async {
        let pods = pods_of(&ns, "web").await;
        let cs = api.get("web").await.ok()?;
        let s = status_of(&cs);
        (pods.len() == 3
            && pods
                .iter()
                .all(|p| !uids.contains(p.metadata.uid.as_deref().unwrap_or("")))
            && s.updated_ready_replicas == 3)
            .then_some(())
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn in_place_only_refuses_a_non_in_place_change() {
    // Webhooks off: the validating webhook denies such an update (see
    // `in_place_only_non_image_change_is_denied_by_the_webhook`); this checks that the
    // controller still refuses one that got past a webhook that was down.
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("cs-inplaceonly").await.unwrap();
    let _m = Manager::start_spec(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).without_webhooks(),
    )
    .await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset("web", 2, json!({"updateStrategy": {"type": "InPlaceOnly"}}));
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    let uids: BTreeSet<String> = pods_of(&ns, "web")
        .await
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25", "env": [{"name": "MODE", "value": "b"}]}]}}}),
    )
    .await;
    let events = ns.api::<Event>();
    wait_for("a warning event about InPlaceOnly", TIMEOUT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| {
            e.type_.as_deref() == Some("Warning")
                && e.message.as_deref().unwrap_or("").contains("InPlaceOnly")
        })
    })
    .await
    .unwrap();
    let now: BTreeSet<String> = pods_of(&ns, "web")
        .await
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    assert_eq!(now, uids, "no pod may be recreated under InPlaceOnly");
}

#[tokio::test]
async fn in_place_only_non_image_change_is_denied_by_the_webhook() {
    let (_env, ns, _m) = setup("cs-inplaceonly-wh").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset("web", 1, json!({"updateStrategy": {"type": "InPlaceOnly"}}));
    api.create(&PostParams::default(), &cs).await.unwrap();
    let err = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:1.25", "env": [{"name": "MODE", "value": "b"}]}]}}}})),
        )
        .await
        .expect_err("denied");
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(
                e.message.contains("vcloneset.kb.io")
                    && e.message
                        .contains("spec: Forbidden: only allowed to update images"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    // An image change is allowed.
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
}

#[tokio::test]
async fn max_surge_adds_pods_during_update_then_converges() {
    let (_env, ns, _m) = setup("cs-surge").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        3,
        json!({"updateStrategy": {"type": "ReCreate", "maxSurge": 1, "maxUnavailable": 0}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 3).await;
    let (obs, task) = observe(&ns, "web").await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_ready(&api, "web", 3).await;
    wait_for("back to exactly 3 pods", TIMEOUT, || async {
        (pods_of(&ns, "web").await.len() == 3).then_some(())
    })
    .await
    .unwrap();
    task.abort();
    let max_pods = obs.lock().unwrap().max_pods;
    assert_eq!(max_pods, 4, "one surge pod above replicas");
    assert!(
        pods_of(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:1.26")
    );
}

#[tokio::test]
async fn paused_stops_the_rollout_and_resuming_finishes_it() {
    let (_env, ns, _m) = setup("cs-paused").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        3,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "paused": true}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 3).await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_for_object(&api, "web", "new revision observed", TIMEOUT, |cs| {
        let s = status_of(cs);
        s.observed_generation == cs.metadata.generation && s.update_revision != s.current_revision
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        status_of(&api.get("web").await.unwrap()).updated_replicas,
        0
    );
    assert!(
        pods_of(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:1.25")
    );
    patch_spec(&api, "web", json!({"updateStrategy": {"paused": false}})).await;
    wait_ready(&api, "web", 3).await;
    assert!(
        pods_of(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:1.26")
    );
}

#[tokio::test]
async fn pre_delete_hook_blocks_deletion_until_the_label_is_removed() {
    let (_env, ns, _m) = setup("cs-predelete").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        2,
        json!({
            "template": {"metadata": {"labels": {"app": "web", "example.com/block": "true"}}},
            "lifecycle": {"preDelete": {"labelsHandler": {"example.com/block": "true"}}},
        }),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    patch_spec(&api, "web", json!({"replicas": 1})).await;
    let pods = ns.api::<Pod>();
    let held = wait_for("a pod in PreparingDelete", TIMEOUT, || async {
        pods_of(&ns, "web").await.into_iter().find(|p| {
            p.labels()
                .get("lifecycle.apps.kruise.io/state")
                .map(String::as_str)
                == Some("PreparingDelete")
        })
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = pods.get(&held.name_any()).await.unwrap();
    assert!(
        still.metadata.deletion_timestamp.is_none(),
        "the hook must hold the pod"
    );
    assert_eq!(pods_of(&ns, "web").await.len(), 2);

    pods.patch(
        &held.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"example.com/block": null}}})),
    )
    .await
    .unwrap();
    wait_for("the held pod deleted", TIMEOUT, || async {
        match pods.get_opt(&held.name_any()).await.ok()? {
            None => Some(()),
            Some(p) if p.metadata.deletion_timestamp.is_some() => Some(()),
            Some(_) => None,
        }
    })
    .await
    .unwrap();
    wait_ready(&api, "web", 1).await;
}

fn kruise_pod_ready(p: &Pod) -> Option<(String, String)> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "KruisePodReady")
        .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()))
}

fn has_gate(p: &Pod, gate: &str) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == gate))
}

fn lifecycle_state(p: &Pod) -> Option<&str> {
    p.labels()
        .get("lifecycle.apps.kruise.io/state")
        .map(String::as_str)
}

/// The pod webhook gives Kruise-owned pods the `KruisePodReady` readiness gate; the pod-readiness
/// controller makes it `True` so the pods become Ready; a hook with `markPodNotReady` holds a pod
/// NotReady (its key in the condition's message) for as long as the hook holds it — preDelete
/// on scale-in, inPlaceUpdate during an update.
#[tokio::test]
async fn kruise_pod_ready_gate_follows_not_ready_keys_of_hooks() {
    let (_env, ns, _m) = setup("cs-podready").await;
    let api = ns.api::<CloneSet>();
    let pods = ns.api::<Pod>();
    let cs = cloneset(
        "web",
        2,
        json!({
            "template": {"metadata": {"labels": {"app": "web", "example.com/hold": "true"}}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 1},
            "lifecycle": {
                "preDelete": {"labelsHandler": {"example.com/hold": "true"}, "markPodNotReady": true},
                "inPlaceUpdate": {"labelsHandler": {"example.com/hold": "true"}, "markPodNotReady": true},
            },
        }),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    for p in pods_of(&ns, "web").await {
        assert!(
            has_gate(&p, "KruisePodReady"),
            "gate injected: {:?}",
            p.spec
        );
        assert_eq!(
            kruise_pod_ready(&p).map(|c| c.0).as_deref(),
            Some("True"),
            "KruisePodReady set by the pod-readiness controller"
        );
        assert_eq!(condition(&p, "Ready").as_deref(), Some("True"));
    }

    // preDelete: scale in; the held pod is NotReady with the PreDelete key while it waits.
    patch_spec(&api, "web", json!({"replicas": 1})).await;
    let held = wait_for(
        "a pod held NotReady in PreparingDelete",
        TIMEOUT,
        || async {
            pods_of(&ns, "web").await.into_iter().find(|p| {
                lifecycle_state(p) == Some("PreparingDelete")
                    && kruise_pod_ready(p)
                        .is_some_and(|(s, m)| s == "False" && m.contains("preDeleteHook"))
                    && condition(p, "Ready").as_deref() == Some("False")
            })
        },
    )
    .await
    .unwrap();
    pods.patch(
        &held.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"example.com/hold": null}}})),
    )
    .await
    .unwrap();
    wait_ready(&api, "web", 1).await;

    // inPlaceUpdate: the hook holds the pod in PreparingUpdate, NotReady with its key.
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    let updating = wait_for(
        "a pod held NotReady in PreparingUpdate",
        TIMEOUT,
        || async {
            pods_of(&ns, "web").await.into_iter().find(|p| {
                lifecycle_state(p) == Some("PreparingUpdate")
                    && kruise_pod_ready(p)
                        .is_some_and(|(s, m)| s == "False" && m.contains("preUpdateHook"))
                    && condition(p, "Ready").as_deref() == Some("False")
            })
        },
    )
    .await
    .unwrap();
    assert_eq!(image_of(&updating), "nginx:1.25", "held before the update");
    pods.patch(
        &updating.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"example.com/hold": null}}})),
    )
    .await
    .unwrap();
    // Released: updated in place (same pod), Ready again with KruisePodReady True.
    let done = wait_for("the pod updated in place and Ready", TIMEOUT, || async {
        let p = pods.get(&updating.name_any()).await.ok()?;
        (image_of(&p) == "nginx:1.26"
            && kruise_pod_ready(&p).is_some_and(|(s, _)| s == "True")
            && condition(&p, "Ready").as_deref() == Some("True"))
        .then_some(p)
    })
    .await
    .unwrap();
    assert_eq!(done.metadata.uid, updating.metadata.uid, "in place");
}

/// With `PreDownloadImageForInPlaceUpdate`, an in-place update creates one ImagePullJob per
/// changed image for the pods still to update (OpenKruise's "pre-download for new image"), marks
/// the revision, and deletes the job once the CloneSet is on one revision again.
#[tokio::test]
async fn pre_download_creates_an_image_pull_job_for_the_new_image() {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    use kruise_api::apps::v1beta1::ImagePullJob;
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("cs-predownload").await.unwrap();
    let _m = Manager::start_spec(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
            .args(&["--feature-gates", "PreDownloadImageForInPlaceUpdate=true"]),
    )
    .await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        5,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "partition": 5}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 5).await;
    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"annotations": {"apps.kruise.io/image-predownload-parallelism": "2"}},
            "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}},
        })),
    )
    .await
    .unwrap();
    let jobs = ns.api::<ImagePullJob>();
    let job =
        wait_for("an ImagePullJob owned by the CloneSet", TIMEOUT, || async {
            jobs.list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|j| {
                    j.metadata.owner_references.iter().flatten().any(|o| {
                        o.controller == Some(true) && o.kind == "CloneSet" && o.name == "web"
                    })
                })
        })
        .await
        .unwrap();
    // The job can be created before the status write that reports the new update revision.
    let cs = wait_for(
        "the status to observe the template change",
        TIMEOUT,
        || async {
            let cs = api.get("web").await.ok()?;
            let s = status_of(&cs);
            (s.observed_generation == cs.metadata.generation).then_some(cs)
        },
    )
    .await
    .unwrap();
    let update_rev = status_of(&cs).update_revision.unwrap_or_default();
    assert_eq!(
        job.metadata.name.as_deref(),
        Some(format!("{update_rev}-main").as_str())
    );
    assert_eq!(job.spec.image, "nginx:1.26");
    assert_eq!(
        job.spec.image_pull_job_template.parallelism,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2))
    );
    let revs = ns.api::<ControllerRevision>();
    let rev = revs.get(&update_rev).await.unwrap();
    assert_eq!(
        rev.labels()
            .get("apps.kruise.io/pre-predownload-created")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        jobs.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    // Finish the update: one revision again, so the job goes.
    patch_spec(&api, "web", json!({"updateStrategy": {"partition": 0}})).await;
    wait_ready(&api, "web", 5).await;
    wait_for("the ImagePullJob deleted", TIMEOUT, || async {
        jobs.list(&ListParams::default())
            .await
            .ok()
            .filter(|l| {
                l.items
                    .iter()
                    .all(|j| j.metadata.deletion_timestamp.is_some())
            })
            .map(|_| ())
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn killing_the_manager_mid_rollout_converges_without_extra_pods() {
    let (_env, ns, mut m) = setup("cs-restart").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        5,
        json!({"updateStrategy": {"type": "ReCreate", "maxUnavailable": 1}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 5).await;
    let (obs, task) = observe(&ns, "web").await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_for_object(&api, "web", "rollout under way", TIMEOUT, |cs| {
        status_of(cs).updated_replicas >= 1
    })
    .await
    .unwrap();
    m.kill();
    tokio::time::sleep(Duration::from_secs(2)).await;
    m.restart().await;
    wait_ready(&api, "web", 5).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    task.abort();
    let pods = pods_of(&ns, "web").await;
    assert_eq!(pods.len(), 5);
    assert!(pods.iter().all(|p| image_of(p) == "nginx:1.26"));
    let obs = obs.lock().unwrap();
    assert!(
        obs.max_pods <= 5,
        "never more than replicas pods with maxSurge 0: {obs:?}"
    );
    // 5 original + 5 replacements, nothing more.
    assert_eq!(obs.uids.len(), 10, "{obs:?}");
}

/// A stand-in for kruise-daemon's container-meta reporting and restarts (kruise-rs has no node
/// daemon yet, and kwok has no container runtime): for every pod of the namespace it reports
/// `apps.kruise.io/runtime-containers-meta` (kubelet-style plain hash and env-from-metadata
/// hash per container, with the containerID) and, when a container's env-from-metadata hash
/// no longer matches what it "runs", restarts that container only (restartCount + 1, new
/// containerID) — what kruise-daemon does through CRI.
fn fake_daemon(ns: &TestNamespace) -> tokio::task::JoinHandle<()> {
    use kruise_api::apps::common::{
        RuntimeContainerHashes, RuntimeContainerMeta, RuntimeContainerMetaSet,
    };
    use kruise_engines::inplace;
    let api = ns.api::<Pod>();
    tokio::spawn(async move {
        loop {
            let Ok(list) = api.list(&ListParams::default()).await else {
                continue;
            };
            for pod in list.items {
                let name = pod.name_any();
                let Some(spec) = pod.spec.as_ref() else {
                    continue;
                };
                let Some(statuses) = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.clone())
                else {
                    continue;
                };
                if statuses.iter().any(|s| s.container_id.is_none())
                    || pod.metadata.deletion_timestamp.is_some()
                {
                    continue;
                }
                let old =
                    inplace::get_runtime_container_meta(&kruise_api::pod::CachedPod::from(&pod))
                        .ok()
                        .flatten();
                let mut restart: Vec<String> = Vec::new();
                let mut metas = Vec::new();
                for c in &spec.containers {
                    let st = statuses.iter().find(|s| s.name == c.name).unwrap();
                    let env_hash = inplace::expected_env_from_metadata_hash(c, &pod);
                    let prev = old
                        .as_ref()
                        .and_then(|m| m.containers.iter().find(|m| m.name == c.name));
                    if let Some(prev) = prev
                        && prev.hashes.extracted_env_from_metadata_hash != env_hash
                    {
                        restart.push(c.name.clone());
                    }
                    metas.push((c, st.clone(), env_hash));
                }
                let mut new_statuses = statuses.clone();
                if !restart.is_empty() {
                    for s in new_statuses
                        .iter_mut()
                        .filter(|s| restart.contains(&s.name))
                    {
                        s.restart_count += 1;
                        s.container_id = Some(format!(
                            "containerd://fake-daemon-{}-{}",
                            s.name, s.restart_count
                        ));
                    }
                    let mut p = pod.clone();
                    p.status.as_mut().unwrap().container_statuses = Some(new_statuses.clone());
                    if api
                        .replace_status(&name, &PostParams::default(), &p)
                        .await
                        .is_err()
                    {
                        continue;
                    }
                }
                let set = RuntimeContainerMetaSet {
                    containers: metas
                        .iter()
                        .map(|(c, _, env_hash)| {
                            let st = new_statuses.iter().find(|s| s.name == c.name).unwrap();
                            RuntimeContainerMeta {
                                name: c.name.clone(),
                                container_id: st.container_id.clone().unwrap_or_default(),
                                restart_count: st.restart_count,
                                hashes: RuntimeContainerHashes {
                                    plain_hash: inplace::plain_container_hash(*c),
                                    extracted_env_from_metadata_hash: *env_hash,
                                },
                            }
                        })
                        .collect(),
                };
                let value = serde_json::to_string(&set).unwrap();
                if pod
                    .annotations()
                    .get("apps.kruise.io/runtime-containers-meta")
                    != Some(&value)
                {
                    let patch = json!({"metadata": {"annotations": {"apps.kruise.io/runtime-containers-meta": value}}});
                    let _ = api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
}

#[tokio::test]
async fn env_from_annotation_change_restarts_only_the_consuming_container() {
    let (_env, ns, _m) = setup("cs-envmeta").await;
    let daemon = fake_daemon(&ns);
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        2,
        json!({
            "updateStrategy": {"type": "InPlaceIfPossible"},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"app-version": "v1"}},
                "spec": {"containers": [
                    {"name": "main", "image": "nginx:1.25",
                     "env": [{"name": "VERSION", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['app-version']"}}}]},
                    {"name": "sidecar", "image": "busybox:1.36"},
                ]},
            },
        }),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    // The fake daemon has reported every container.
    wait_for("runtime-containers-meta on both pods", TIMEOUT, || async {
        let pods = pods_of(&ns, "web").await;
        (pods.len() == 2
            && pods.iter().all(|p| {
                p.annotations()
                    .contains_key("apps.kruise.io/runtime-containers-meta")
            }))
        .then_some(())
    })
    .await
    .unwrap();
    let before: BTreeMap<String, String> = pods_of(&ns, "web")
        .await
        .iter()
        .map(|p| (p.name_any(), p.metadata.uid.clone().unwrap()))
        .collect();

    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"template": {"metadata": {"annotations": {"app-version": "v2"}}}}}),
        ),
    )
    .await
    .unwrap();
    wait_for_object(
        &api,
        "web",
        "2 pods updated in place and ready",
        TIMEOUT,
        |cs| {
            let s = status_of(cs);
            s.observed_generation == cs.metadata.generation
                && s.updated_ready_replicas == 2
                && s.ready_replicas == 2
        },
    )
    .await
    .unwrap();
    daemon.abort();
    for p in pods_of(&ns, "web").await {
        assert_eq!(
            p.metadata.uid.as_ref(),
            before.get(&p.name_any()),
            "{} was recreated",
            p.name_any()
        );
        assert_eq!(p.annotations()["app-version"], "v2");
        let statuses = p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap();
        let restarts = |n: &str| statuses.iter().find(|s| s.name == n).unwrap().restart_count;
        assert_eq!(
            restarts("main"),
            1,
            "{}: the consuming container restarts",
            p.name_any()
        );
        assert_eq!(
            restarts("sidecar"),
            0,
            "{}: the other container does not",
            p.name_any()
        );
        let state: Value =
            serde_json::from_str(&p.annotations()["apps.kruise.io/inplace-update-state"]).unwrap();
        assert_eq!(state["updateEnvFromMetadata"], true);
        assert_eq!(condition(&p, "InPlaceUpdateReady").as_deref(), Some("True"));
    }
}

fn progressing(cs: &CloneSet) -> Option<(String, String)> {
    status_of(cs)
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Progressing")
        .map(|c| (c.status, c.reason.unwrap_or_default()))
}

#[tokio::test]
async fn progressing_condition_reports_available_paused_and_deadline_exceeded() {
    let (_env, ns, _m) = setup("cs-progress").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        2,
        json!({"progressDeadlineSeconds": 5, "updateStrategy": {"type": "ReCreate", "maxUnavailable": 1}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    let want = |status: &'static str, reason: &'static str| {
        move |cs: &CloneSet| progressing(cs) == Some((status.to_owned(), reason.to_owned()))
    };
    wait_for_object(
        &api,
        "web",
        "Progressing True/CloneSetAvailable",
        TIMEOUT,
        want("True", "CloneSetAvailable"),
    )
    .await
    .unwrap();

    // A paused rollout to a template whose pods can never be scheduled.
    patch_spec(
        &api,
        "web",
        json!({"updateStrategy": {"paused": true},
               "template": {"spec": {"nodeSelector": {"kruise-rs.test/no-such-node": "true"}}}}),
    )
    .await;
    wait_for_object(
        &api,
        "web",
        "Progressing True/CloneSetPaused",
        TIMEOUT,
        want("True", "CloneSetPaused"),
    )
    .await
    .unwrap();

    // Resumed: the rollout stalls on the unschedulable pod and, 5 s later, the deadline is
    // reported (the controller wakes itself up for it).
    patch_spec(&api, "web", json!({"updateStrategy": {"paused": false}})).await;
    let exceeded = wait_for_object(
        &api,
        "web",
        "Progressing False/ProgressDeadlineExceeded",
        TIMEOUT,
        want("False", "ProgressDeadlineExceeded"),
    )
    .await
    .unwrap();
    let c = status_of(&exceeded)
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    let rev = status_of(&exceeded).update_revision.unwrap_or_default();
    assert_eq!(
        c.message.as_deref(),
        Some(format!("CloneSet revision {rev} has timed out progressing").as_str())
    );
}

#[tokio::test]
async fn scale_in_keeps_zones_balanced_under_topology_spread_constraints() {
    let (env, ns, _m) = setup("cs-spread").await;
    let api = ns.api::<CloneSet>();
    let cs = cloneset(
        "web",
        6,
        json!({"template": {"spec": {"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]}}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 6).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.client.clone());
    let zone_of = |node: &k8s_openapi::api::core::v1::Node| {
        node.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("topology.kubernetes.io/zone").cloned())
            .unwrap_or_default()
    };
    let zones: BTreeMap<String, String> = nodes
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| (n.name_any(), zone_of(n)))
        .collect();
    let per_zone = |pods: &[Pod]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for p in pods {
            let node = p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            *m.entry(zones.get(&node).cloned().unwrap_or_default())
                .or_default() += 1;
        }
        m
    };
    let before = per_zone(&pods_of(&ns, "web").await);
    assert!(
        before.values().all(|&n| n == 2),
        "scheduler did not spread: {before:?}"
    );

    patch_spec(&api, "web", json!({"replicas": 3})).await;
    wait_ready(&api, "web", 3).await;
    let after = per_zone(
        &wait_for_list(
            &ns.api::<Pod>(),
            &ListParams::default().labels("app=web"),
            "3 pods of web",
            TIMEOUT,
            |pods: &[Pod]| {
                pods.iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .count()
                    == 3
            },
        )
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect::<Vec<_>>(),
    );
    assert_eq!(after.len(), 3, "scale-in emptied a zone: {after:?}");
    assert!(after.values().all(|&n| n == 1), "{after:?}");
}

/// The generated ClusterRole (`config/rbac/role.yaml`) is all the manager needs: a manager whose
/// kubeconfig is a ServiceAccount bound to that role only runs the CloneSet and webhook flows
/// (admission, defaulting, pod readiness, scale, in-place update) without a single forbidden
/// request.
#[tokio::test]
async fn manager_runs_with_the_generated_cluster_role_only() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("cs-rbac").await.unwrap();
    let bound = kruise_e2e::rbac::bound_kubeconfig(
        ns.name(),
        "kruise-manager",
        "role.yaml",
        "kruise-manager-role",
    )
    .expect("ServiceAccount bound to the generated role");
    let path = bound.path.clone();

    let m = Manager::start_spec(
        // Installed in its own namespace: what it reads there (kruise-configuration, its
        // certificate) is this test's, not what other runs left in kruise-system.
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
            .kubeconfig(&path)
            .pod_namespace(ns.name()),
    )
    .await;
    let api = ns.api::<CloneSet>();
    // Admission: a denial naming the field, and defaulting.
    let err = api
        .create(&PostParams::default(), &cloneset("bad", -1, json!({})))
        .await
        .expect_err("replicas -1 denied");
    assert!(err.to_string().contains("spec.replicas"), "{err}");
    let created = api
        .create(&PostParams::default(), &cloneset("web", 3, json!({})))
        .await
        .unwrap();
    assert!(
        created.spec.update_strategy.is_some(),
        "defaulted by the mutating webhook"
    );
    wait_ready(&api, "web", 3).await;
    patch_spec(
        &api,
        "web",
        json!({"replicas": 2, "updateStrategy": {"type": "InPlaceIfPossible"}}),
    )
    .await;
    wait_ready(&api, "web", 2).await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_ready(&api, "web", 2).await;
    assert!(
        pods_of(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:1.26")
    );
    let log = std::fs::read_to_string(&m.process.log).unwrap();
    let forbidden: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("forbidden") || l.contains("Forbidden") && l.contains("cannot"))
        .collect();
    assert!(
        forbidden.is_empty(),
        "forbidden requests:\n{}",
        forbidden.join("\n")
    );
}

/// OpenKruise's "regard preparing-update pod as update when scaling" (gate
/// `PreparingUpdateAsUpdate`): a pod held in PreparingUpdate by an inPlaceUpdate hook counts as
/// updated when pods are split by revision for scaling, so a replaced or added pod goes to the
/// current revision while partition allows only one updated pod.
#[tokio::test]
async fn preparing_update_pod_counts_as_updated_when_scaling() {
    use k8s_openapi::api::core::v1::Pod as P;
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("cs-prepupdate").await.unwrap();
    let _m = Manager::start_spec(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
            .args(&["--feature-gates", "PreparingUpdateAsUpdate=true"]),
    )
    .await;
    let api = ns.api::<CloneSet>();
    let pods = ns.api::<P>();
    let cs = cloneset(
        "web",
        2,
        json!({
            "template": {"metadata": {"labels": {"app": "web", "preparing-update-hook": "true"}}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "50%", "partition": "99%"},
            "lifecycle": {"inPlaceUpdate": {"labelsHandler": {"preparing-update-hook": "true"}}},
        }),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    // (updated, current, preparing-update) by the CloneSet's update revision.
    let groups = || async {
        let cs = api.get("web").await.unwrap();
        let update = status_of(&cs).update_revision.unwrap_or_default();
        let live = pods_of(&ns, "web").await;
        let updated = live
            .iter()
            .filter(|p| p.labels().get("controller-revision-hash") == Some(&update))
            .count();
        let preparing = live
            .iter()
            .filter(|p| lifecycle_state(p) == Some("PreparingUpdate"))
            .count();
        (updated, live.len() - updated, preparing, live)
    };
    let (_, _, _, live) = wait_for("one pod held in PreparingUpdate", TIMEOUT, || async {
        let g = groups().await;
        (g.0 == 0 && g.1 == 2 && g.2 == 1).then_some(g)
    })
    .await
    .unwrap();

    // Rebuild the pod that is not preparing: it comes back on the current revision.
    let other = live
        .iter()
        .find(|p| lifecycle_state(p) != Some("PreparingUpdate"))
        .unwrap();
    pods.delete(&other.name_any(), &Default::default())
        .await
        .unwrap();
    wait_for(
        "the rebuilt pod on the current revision",
        TIMEOUT,
        || async {
            let g = groups().await;
            (g.3.len() == 2
                && !g.3.iter().any(|p| p.metadata.uid == other.metadata.uid)
                && g.0 == 0
                && g.1 == 2
                && g.2 == 1)
                .then_some(())
        },
    )
    .await
    .unwrap();

    // Scale to 3: the new pod is on the current revision too.
    patch_spec(&api, "web", json!({"replicas": 3})).await;
    let (_, _, _, live) = wait_for("3 pods, none updated, one preparing", TIMEOUT, || async {
        let g = groups().await;
        (g.3.len() == 3 && g.0 == 0 && g.1 == 3 && g.2 == 1).then_some(g)
    })
    .await
    .unwrap();

    // Release the hook: that pod is updated in place.
    let held = live
        .iter()
        .find(|p| lifecycle_state(p) == Some("PreparingUpdate"))
        .unwrap();
    pods.patch(
        &held.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"preparing-update-hook": null}}})),
    )
    .await
    .unwrap();
    wait_for(
        "one updated, two current, none preparing",
        TIMEOUT,
        || async {
            let g = groups().await;
            (g.0 == 1 && g.1 == 2 && g.2 == 0).then_some(())
        },
    )
    .await
    .unwrap();
}

/// One lifecycle state seen on a pod by a watch: the state label, the
/// `lifecycle.apps.kruise.io/timestamp` annotation, and when the watch saw it.
#[derive(Debug, Clone)]
struct SeenState {
    pod: String,
    state: String,
    stamp: Option<String>,
    seen_at: jiff::Timestamp,
}

/// Every lifecycle state change of `app`'s pods, in the order a watch saw them. Returns once the
/// watch has delivered its initial list, so no later change is missed.
async fn record_lifecycle(
    ns: &TestNamespace,
    app: &str,
) -> (Arc<Mutex<Vec<SeenState>>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::<SeenState>::new()));
    let api = ns.api::<Pod>();
    let cfg = watcher::Config::default().labels(&format!("app={app}"));
    let out = seen.clone();
    let (listed_tx, listed) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut listed_tx = Some(listed_tx);
        let mut stream = watcher(api, cfg).default_backoff().boxed();
        while let Some(ev) = stream.next().await {
            let p = match ev {
                Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => p,
                Ok(watcher::Event::InitDone) => {
                    if let Some(tx) = listed_tx.take() {
                        let _ = tx.send(());
                    }
                    continue;
                }
                _ => continue,
            };
            let Some(state) = lifecycle_state(&p).map(str::to_owned) else {
                continue;
            };
            let pod = p.name_any();
            let mut g = out.lock().unwrap();
            if g.iter().rev().find(|s| s.pod == pod).map(|s| &s.state) == Some(&state) {
                continue;
            }
            g.push(SeenState {
                pod,
                state,
                stamp: p
                    .annotations()
                    .get("lifecycle.apps.kruise.io/timestamp")
                    .cloned(),
                seen_at: jiff::Timestamp::now(),
            });
        }
    });
    tokio::time::timeout(TIMEOUT, listed)
        .await
        .expect("the pod watch lists within the timeout")
        .expect("the watch task is alive");
    (seen, task)
}

/// Whole seconds, as the annotation carries them.
fn floor_secs(t: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.as_second()).unwrap()
}

/// Waits until the wall clock is at least two whole seconds past `t`, so that a stamp written
/// after now cannot equal one written before `t`.
async fn let_two_seconds_pass(t: jiff::Timestamp) {
    while jiff::Timestamp::now().as_second() < t.as_second() + 2 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// OpenKruise writes `lifecycle.apps.kruise.io/timestamp` with the state label on every lifecycle
/// transition (`lifecycle.SetPodLifecycle`, the lifecycle control's patches): on creation
/// (PreparingNormal), Normal, PreparingUpdate, Updating, Updated and PreparingDelete. Each state
/// the watch sees carries a stamp taken no earlier than the step that caused it.
#[tokio::test]
async fn every_lifecycle_transition_stamps_the_timestamp_annotation() {
    let (_env, ns, _m) = setup("cs-lc-stamp").await;
    let api = ns.api::<CloneSet>();
    let pods = ns.api::<Pod>();
    let (seen, recorder) = record_lifecycle(&ns, "web").await;
    let hold = json!({"metadata": {"labels": {"example.com/hold": "true"}}});
    let release = |name: String| {
        let pods = pods.clone();
        async move {
            pods.patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"example.com/hold": null}}})),
            )
            .await
            .unwrap();
        }
    };

    // Create: PreparingNormal, then Normal.
    let created = jiff::Timestamp::now();
    let cs = cloneset(
        "web",
        2,
        json!({
            "template": {"metadata": {"labels": {"app": "web", "example.com/hold": "true"}}},
            "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 2},
            "lifecycle": {
                "preDelete": {"labelsHandler": {"example.com/hold": "true"}},
                "inPlaceUpdate": {"labelsHandler": {"example.com/hold": "true"}},
            },
        }),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;

    // Update: both pods held in PreparingUpdate; released after two seconds, they go through
    // Updating and Updated to Normal, each stamped at or after the release.
    let_two_seconds_pass(created).await;
    let update_requested = jiff::Timestamp::now();
    patch_spec(
        &api,
        "web",
        json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    let preparing = wait_for("both pods in PreparingUpdate", TIMEOUT, || async {
        let p = pods_of(&ns, "web").await;
        (p.len() == 2
            && p.iter()
                .all(|p| lifecycle_state(p) == Some("PreparingUpdate")))
        .then_some(p)
    })
    .await
    .unwrap();
    let_two_seconds_pass(update_requested).await;
    let released = jiff::Timestamp::now();
    for p in &preparing {
        release(p.name_any()).await;
    }
    wait_for("both pods updated in place, Updated", TIMEOUT, || async {
        let p = pods_of(&ns, "web").await;
        (p.len() == 2
            && p.iter()
                .all(|p| image_of(p) == "nginx:1.26" && lifecycle_state(p) == Some("Updated")))
        .then_some(())
    })
    .await
    .unwrap();

    // Hooked again: Updated → Normal. The hook label also holds the scale-in below.
    let_two_seconds_pass(released).await;
    let rehooked = jiff::Timestamp::now();
    for p in &preparing {
        pods.patch(&p.name_any(), &PatchParams::default(), &Patch::Merge(&hold))
            .await
            .unwrap();
    }
    wait_for("both pods Normal", TIMEOUT, || async {
        let p = pods_of(&ns, "web").await;
        (p.len() == 2 && p.iter().all(|p| lifecycle_state(p) == Some("Normal"))).then_some(())
    })
    .await
    .unwrap();

    // Scale in: one pod held in PreparingDelete.
    let_two_seconds_pass(rehooked).await;
    let scaled_in = jiff::Timestamp::now();
    patch_spec(&api, "web", json!({"replicas": 1})).await;
    let deleting = wait_for("a pod in PreparingDelete", TIMEOUT, || async {
        pods_of(&ns, "web")
            .await
            .into_iter()
            .find(|p| lifecycle_state(p) == Some("PreparingDelete"))
    })
    .await
    .unwrap();
    release(deleting.name_any()).await;
    wait_ready(&api, "web", 1).await;
    recorder.abort();

    let seen = seen.lock().unwrap().clone();
    let states: BTreeSet<&str> = seen.iter().map(|s| s.state.as_str()).collect();
    for expected in [
        "PreparingNormal",
        "Normal",
        "PreparingUpdate",
        "Updating",
        "Updated",
        "PreparingDelete",
    ] {
        assert!(
            states.contains(expected),
            "state {expected} never seen: {seen:#?}"
        );
    }
    for s in &seen {
        let stamp: jiff::Timestamp = s
            .stamp
            .as_deref()
            .unwrap_or_else(|| {
                panic!(
                    "{} entered {} without a timestamp: {seen:#?}",
                    s.pod, s.state
                )
            })
            .parse()
            .unwrap_or_else(|e| panic!("{s:?}: timestamp is not RFC 3339: {e}"));
        let caused_by = match s.state.as_str() {
            "PreparingNormal" => created,
            "PreparingUpdate" => update_requested,
            "Updating" | "Updated" => released,
            "PreparingDelete" => scaled_in,
            // Normal follows creation and, later, the re-hook after the update.
            _ if s.seen_at > rehooked => rehooked,
            _ => created,
        };
        assert!(
            stamp >= floor_secs(caused_by),
            "{} entered {} stamped {stamp}, before the step that caused it ({caused_by}): {seen:#?}",
            s.pod,
            s.state
        );
        assert!(stamp <= s.seen_at, "{s:?}: stamped after it was seen");
    }
}

/// Static PersistentVolumes for a test's claims (no provisioner on the testbed): `count`
/// volumes of 10Gi named after the namespace, deleted on drop.
struct Volumes(Vec<String>);

impl Volumes {
    async fn create(env: &TestEnv, ns: &str, count: usize) -> Self {
        use k8s_openapi::api::core::v1::PersistentVolume;
        let api: Api<PersistentVolume> = Api::all(env.client.clone());
        let mut names = Vec::new();
        for i in 0..count {
            let name = format!("{ns}-pv-{i}");
            let pv: PersistentVolume = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Delete",
                    "hostPath": {"path": format!("/tmp/{name}")}},
            }))
            .unwrap();
            api.create(&PostParams::default(), &pv).await.unwrap();
            names.push(name);
        }
        Volumes(names)
    }
}

impl Drop for Volumes {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = kruise_e2e::kubectl(
                &["delete", "pv", name, "--wait=false", "--ignore-not-found"],
                None,
            );
        }
    }
}

/// Gate `RecreatePodWhenChangeVCTInCloneSetGate` (#32; OpenKruise's
/// `defaultCalculateInPlaceUpdateSpec`): without it, an image change that comes with a change
/// of `volumeClaimTemplates` is done in place (same pods); with it, pods whose revision has
/// another `kruise.io/cloneset-volumeclaimtemplate-hash` are recreated.
#[tokio::test]
async fn volume_claim_template_changes_recreate_pods_only_with_the_gate() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("cs-vct").await.unwrap();
    let _volumes = Volumes::create(&env, ns.name(), 6).await;
    let mut m = Manager::start(ns.name()).await;
    let api = ns.api::<CloneSet>();
    let vct = |size: &str| {
        json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "storageClassName": "", "resources": {"requests": {"storage": size}}}}])
    };
    let cs = cloneset(
        "web",
        2,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 1},
               "volumeClaimTemplates": vct("1Gi")}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    wait_ready(&api, "web", 2).await;
    let uids = |pods: &[Pod]| -> BTreeSet<String> {
        pods.iter().filter_map(|p| p.metadata.uid.clone()).collect()
    };
    let first = uids(&pods_of(&ns, "web").await);

    // Without the gate: in place.
    patch_spec(
        &api,
        "web",
        json!({"volumeClaimTemplates": vct("2Gi"),
               "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    wait_for("2 pods updated in place", TIMEOUT, || async {
        let cs = api.get("web").await.ok()?;
        let pods = pods_of(&ns, "web").await;
        (status_of(&cs).updated_ready_replicas == 2
            && cs.metadata.generation == status_of(&cs).observed_generation
            && pods.iter().all(|p| image_of(p) == "nginx:1.26"))
        .then_some(())
    })
    .await
    .unwrap();
    assert_eq!(
        uids(&pods_of(&ns, "web").await),
        first,
        "recreated without the gate"
    );

    // With the gate: recreated.
    m.kill();
    drop(m);
    let mut m = Manager::start_spec(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(&[
            "--feature-gates",
            "RecreatePodWhenChangeVCTInCloneSetGate=true",
        ]),
    )
    .await;
    patch_spec(
        &api,
        "web",
        json!({"volumeClaimTemplates": vct("3Gi"),
               "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}),
    )
    .await;
    wait_for("2 pods recreated with the new image", TIMEOUT, || async {
        let cs = api.get("web").await.ok()?;
        let pods = pods_of(&ns, "web").await;
        (pods.len() == 2
            && status_of(&cs).updated_ready_replicas == 2
            && cs.metadata.generation == status_of(&cs).observed_generation
            && pods.iter().all(|p| image_of(p) == "nginx:1.27")
            && uids(&pods).is_disjoint(&first))
        .then_some(())
    })
    .await
    .unwrap();
    m.kill();
}

/// The Argo CD health script of `config/argocd` (#34) against a live CloneSet: Healthy once
/// ready; Suspended while paused with an image change pending; Healthy and "Partitioned" when
/// the partition's pods are updated; Progressing while the rest roll; Healthy at the end, only
/// once every pod is updated, ready and the generation observed.
#[tokio::test]
async fn argocd_health_follows_a_live_rollout() {
    let (_env, ns, _m) = setup("cs-argocd").await;
    let api = ns.api::<CloneSet>();
    let health =
        |cs: &CloneSet| kruise_e2e::argocd::health("CloneSet", &serde_json::to_value(cs).unwrap());
    let cs = cloneset(
        "web",
        3,
        json!({"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 1}}),
    );
    api.create(&PostParams::default(), &cs).await.unwrap();
    let ready = wait_ready(&api, "web", 3).await;
    assert_eq!(health(&ready).0, "Healthy", "{:?}", health(&ready));

    patch_spec(
        &api,
        "web",
        json!({"updateStrategy": {"paused": true},
               "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}),
    )
    .await;
    let paused = wait_for_object(&api, "web", "paused spec observed", TIMEOUT, |cs| {
        cs.metadata.generation == status_of(cs).observed_generation
    })
    .await
    .unwrap();
    assert_eq!(
        health(&paused),
        ("Suspended".into(), "CloneSet is paused".into())
    );

    patch_spec(
        &api,
        "web",
        json!({"updateStrategy": {"paused": false, "partition": 2}}),
    )
    .await;
    let partitioned = wait_for_object(&api, "web", "the partition's pod updated", TIMEOUT, |cs| {
        let s = status_of(cs);
        cs.metadata.generation == s.observed_generation
            && s.updated_ready_replicas == 1
            && s.available_replicas == 3
    })
    .await
    .unwrap();
    assert_eq!(
        health(&partitioned),
        ("Healthy".into(), "Partitioned: 1 of 3 pods updated".into())
    );

    patch_spec(&api, "web", json!({"updateStrategy": {"partition": 0}})).await;
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let done = wait_for("the rollout done and Healthy", TIMEOUT, || {
        let (api, seen) = (api.clone(), seen.clone());
        async move {
            let cs = api.get("web").await.ok()?;
            let (status, message) = health(&cs);
            seen.lock().unwrap().insert(status.clone());
            let s = status_of(&cs);
            let all_updated = s.updated_ready_replicas == 3
                && s.available_replicas == 3
                && cs.metadata.generation == s.observed_generation;
            // Healthy is never reported before the rollout is really done.
            assert!(
                status != "Healthy" || all_updated,
                "Healthy too early: {message} {s:?}"
            );
            (all_updated && status == "Healthy").then_some(message)
        }
    })
    .await
    .unwrap();
    assert_eq!(done, "3 of 3 pods updated and available");
    assert!(
        seen.lock().unwrap().contains("Progressing"),
        "no Progressing seen during the rollout: {:?}",
        seen.lock().unwrap()
    );
}
