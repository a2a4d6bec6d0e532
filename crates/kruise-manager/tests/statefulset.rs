//! Advanced StatefulSet end to end on the real testbed. Each test runs its own
//! `kruise-manager` as users run it (webhook server and pod webhook on, default flags),
//! restricted to the test's namespace, so tests run in parallel. Each behaviour of OpenKruise
//! v1.9.0's own StatefulSet e2e specs has a test here, plus the issue's own scenarios.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kruise_api::apps::v1beta1::StatefulSet;
use kruise_e2e::manager::TestManager;
use kruise_e2e::{TestEnv, TestNamespace, kubectl, wait_for, wait_for_object};
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(180);
const OLD_IMAGE: &str = "nginx:1.25";
const NEW_IMAGE: &str = "nginx:1.26";

async fn setup(prefix: &str, args: &[&str]) -> (TestEnv, TestNamespace, TestManager) {
    TestManager::setup(
        env!("CARGO_BIN_EXE_kruise-manager"),
        prefix,
        args,
        0,
        TIMEOUT,
    )
    .await
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

fn asts(name: &str, replicas: i32, extra_spec: Value) -> StatefulSet {
    let mut spec = json!({
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "main", "image": OLD_IMAGE}]},
        },
    });
    merge(&mut spec, extra_spec);
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn in_place_spec(extra_rolling: Value) -> Value {
    let mut ru = json!({"podUpdatePolicy": "InPlaceIfPossible"});
    merge(&mut ru, extra_rolling);
    json!({
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": ru},
        "template": {"spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}]}},
    })
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

fn is_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
}

fn image_of(pod: &Pod) -> String {
    pod.spec.as_ref().unwrap().containers[0]
        .image
        .clone()
        .unwrap_or_default()
}

fn revision_of(pod: &Pod) -> String {
    pod.labels()
        .get("controller-revision-hash")
        .cloned()
        .unwrap_or_default()
}

fn ordinal(pod: &Pod) -> i32 {
    pod.name_any()
        .rsplit('-')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

fn status_of(s: &StatefulSet) -> kruise_api::apps::v1beta1::StatefulSetStatus {
    s.status.clone().unwrap_or_default()
}

/// The set's pods that are not being deleted, by ordinal.
async fn active_pods(ns: &TestNamespace, app: &str) -> Vec<Pod> {
    let mut pods: Vec<Pod> = ns
        .api::<Pod>()
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    pods.sort_by_key(ordinal);
    pods
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(ResourceExt::name_any).collect()
}

/// Waits until the set reports `n` replicas, all ready and updated, for its latest generation,
/// and exactly the pods named `expected` exist.
async fn wait_settled(ns: &TestNamespace, name: &str, expected: &[&str]) -> StatefulSet {
    let api = ns.api::<StatefulSet>();
    let n = expected.len() as i32;
    let want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let set = api.get(name).await.unwrap();
        let s = status_of(&set);
        let pods = active_pods(ns, name).await;
        let all = ns
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("app={name}")))
            .await
            .unwrap()
            .items
            .len();
        if set.metadata.generation == s.observed_generation
            && s.replicas == n
            && s.ready_replicas == n
            && s.updated_replicas == n
            && s.current_revision == s.update_revision
            && names(&pods) == want
            && all == expected.len()
            && pods.iter().all(is_ready)
        {
            return set;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: not settled on {want:?} within {TIMEOUT:?}: status {s:?}, pods {:?}",
            names(&pods)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Every change of the namespace's pods, as the watch saw it.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    name: String,
    uid: String,
    deleted: bool,
    terminating: bool,
    ready: bool,
    in_place_ready: Option<String>,
    image: String,
}

#[derive(Clone, Default)]
struct PodLog(Arc<Mutex<Vec<Seen>>>);

impl PodLog {
    /// Starts recording; returns once the watch has delivered its initial list.
    async fn start(ns: &TestNamespace) -> (Self, tokio::task::JoinHandle<()>) {
        let log = PodLog::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let api = ns.api::<Pod>();
        let sink = log.clone();
        let handle = tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let Ok(ev) = ev else { continue };
                let (pods, deleted): (Vec<Pod>, bool) = match ev {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => (vec![p], false),
                    watcher::Event::Delete(p) => (vec![p], true),
                    watcher::Event::InitDone => {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    watcher::Event::Init => continue,
                };
                let mut v = sink.0.lock().unwrap();
                for p in pods {
                    v.push(Seen {
                        at: Instant::now(),
                        name: p.name_any(),
                        uid: p.uid().unwrap_or_default(),
                        deleted,
                        terminating: p.metadata.deletion_timestamp.is_some(),
                        ready: is_ready(&p),
                        in_place_ready: condition(&p, "InPlaceUpdateReady"),
                        image: image_of(&p),
                    });
                }
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(30), rx).await;
        (log, handle)
    }

    fn events(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

async fn patch_set(ns: &TestNamespace, name: &str, patch: Value) {
    ns.api::<StatefulSet>()
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------

/// OrderedReady (the default): pods are created one at a time in ordinal order, each only once
/// the one before is Ready, and removed from the highest ordinal down, one at a time.
#[tokio::test]
async fn ordered_ready_scales_up_and_down_in_order() {
    let (_env, ns, _m) = setup("asts-ordered", &[]).await;
    let (log, watch) = PodLog::start(&ns).await;
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 5, json!({})))
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1", "web-2", "web-3", "web-4"]).await;
    let events = log.events();
    let first_seen = |name: &str| events.iter().find(|e| e.name == name).unwrap().at;
    let first_ready = |name: &str| {
        events
            .iter()
            .find(|e| e.name == name && e.ready)
            .unwrap()
            .at
    };
    for k in 1..5 {
        let (prev, this) = (format!("web-{}", k - 1), format!("web-{k}"));
        assert!(
            first_seen(&this) > first_ready(&prev),
            "{this} was created before {prev} was Ready"
        );
    }

    patch_set(&ns, "web", json!({"spec": {"replicas": 2}})).await;
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    let events = log.events();
    let gone = |name: &str| {
        events
            .iter()
            .find(|e| e.name == name && (e.deleted || e.terminating))
            .unwrap_or_else(|| panic!("{name} never deleted"))
            .at
    };
    let removed = |name: &str| {
        events
            .iter()
            .find(|e| e.name == name && e.deleted)
            .unwrap_or_else(|| panic!("{name} never removed"))
            .at
    };
    assert!(
        gone("web-3") >= removed("web-4"),
        "web-3 deleted before web-4 was gone"
    );
    assert!(
        gone("web-2") >= removed("web-3"),
        "web-2 deleted before web-3 was gone"
    );
    watch.abort();
}

/// Parallel + InPlaceIfPossible + maxUnavailable 2: every pod is updated in place (same UID,
/// new image, one container restart) and never more than 2 are unavailable at once.
#[tokio::test]
async fn parallel_in_place_rollout_respects_max_unavailable() {
    let (_env, ns, _m) = setup("asts-inplace", &[]).await;
    let mut spec = in_place_spec(json!({"maxUnavailable": 2}));
    merge(&mut spec, json!({"podManagementPolicy": "Parallel"}));
    let names6: Vec<String> = (0..6).map(|i| format!("web-{i}")).collect();
    let expected: Vec<&str> = names6.iter().map(String::as_str).collect();
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 6, spec))
        .await
        .unwrap();
    let before = wait_settled(&ns, "web", &expected).await;
    let uids: BTreeMap<String, String> = active_pods(&ns, "web")
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid().unwrap()))
        .collect();

    let (log, watch) = PodLog::start(&ns).await;
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let after = wait_settled(&ns, "web", &expected).await;
    assert_ne!(
        status_of(&before).update_revision,
        status_of(&after).update_revision
    );
    for p in active_pods(&ns, "web").await {
        assert_eq!(
            uids[&p.name_any()],
            p.uid().unwrap(),
            "{} was recreated",
            p.name_any()
        );
        assert_eq!(image_of(&p), NEW_IMAGE);
        let restarts = p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0]
            .restart_count;
        assert_eq!(restarts, 1, "{}", p.name_any());
    }
    // Replay the watch: the pods unavailable at any moment.
    let mut unavailable: BTreeSet<String> = BTreeSet::new();
    let mut worst = 0;
    for e in log.events() {
        if e.ready && e.in_place_ready.as_deref() != Some("False") {
            unavailable.remove(&e.name);
        } else {
            unavailable.insert(e.name.clone());
        }
        worst = worst.max(unavailable.len());
    }
    assert!(
        worst <= 2,
        "{worst} pods were unavailable at once (maxUnavailable 2)"
    );
    assert!(worst >= 1, "the watch saw no pod being updated");
    watch.abort();
}

/// In-place update with `inPlaceUpdateStrategy.gracePeriodSeconds`: the pod leaves Ready
/// (InPlaceUpdateReady False) at once, but its image changes only after the grace period.
#[tokio::test]
async fn in_place_update_waits_for_the_grace_period() {
    let (_env, ns, _m) = setup("asts-grace", &[]).await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts(
                "web",
                1,
                in_place_spec(json!({"inPlaceUpdateStrategy": {"gracePeriodSeconds": 5}})),
            ),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0"]).await;
    let uid = active_pods(&ns, "web").await[0].uid();
    let (log, watch) = PodLog::start(&ns).await;
    let started = Instant::now();
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    wait_settled(&ns, "web", &["web-0"]).await;
    let pod = &active_pods(&ns, "web").await[0];
    assert_eq!(pod.uid(), uid);
    assert_eq!(image_of(pod), NEW_IMAGE);
    let events = log.events();
    let not_ready = events
        .iter()
        .find(|e| e.in_place_ready.as_deref() == Some("False"))
        .expect("InPlaceUpdateReady False")
        .at;
    let new_image = events
        .iter()
        .find(|e| e.image == NEW_IMAGE)
        .expect("new image")
        .at;
    assert!(
        new_image.duration_since(not_ready) >= Duration::from_secs(4),
        "image changed {:?} after the pod left Ready (grace period 5 s)",
        new_image.duration_since(not_ready)
    );
    assert!(new_image.duration_since(started) < Duration::from_secs(60));
    watch.abort();
}

/// `partition` = number of pods kept on the old revision (v1.9): with 5 pods and partition 3
/// only web-3 and web-4 are updated; a deleted web-0 comes back on the current revision; then
/// partition 0 finishes the rollout and the update revision becomes current.
#[tokio::test]
async fn partition_keeps_pods_on_the_old_revision() {
    let (_env, ns, _m) = setup("asts-partition", &[]).await;
    let all = ["web-0", "web-1", "web-2", "web-3", "web-4"];
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts("web", 5, json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}})),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &all).await;
    let before: BTreeMap<String, String> = active_pods(&ns, "web")
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid().unwrap()))
        .collect();
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let api = ns.api::<StatefulSet>();
    let set = wait_for_object(&api, "web", "2 pods updated and ready", TIMEOUT, |s| {
        let st = status_of(s);
        st.observed_generation == s.metadata.generation
            && st.updated_replicas == 2
            && st.updated_ready_replicas == Some(2)
            && st.ready_replicas == 5
    })
    .await
    .unwrap();
    let st = status_of(&set);
    assert_ne!(st.current_revision, st.update_revision);
    let update_rev = st.update_revision.clone().unwrap();
    let current_rev = st.current_revision.clone().unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    for p in active_pods(&ns, "web").await {
        if ordinal(&p) >= 3 {
            assert_eq!(revision_of(&p), update_rev, "{}", p.name_any());
            assert_eq!(image_of(&p), NEW_IMAGE);
        } else {
            assert_eq!(revision_of(&p), current_rev, "{}", p.name_any());
            assert_eq!(
                before[&p.name_any()],
                p.uid().unwrap(),
                "{} was touched",
                p.name_any()
            );
        }
    }

    ns.api::<Pod>()
        .delete("web-0", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let web0 = wait_for("web-0 recreated and ready", TIMEOUT, || async {
        active_pods(&ns, "web").await.into_iter().find(|p| {
            p.name_any() == "web-0" && p.uid() != Some(before["web-0"].clone()) && is_ready(p)
        })
    })
    .await
    .unwrap();
    assert_eq!(revision_of(&web0), current_rev);
    assert_eq!(image_of(&web0), OLD_IMAGE);

    patch_set(
        &ns,
        "web",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
    )
    .await;
    let done = wait_settled(&ns, "web", &all).await;
    assert_eq!(
        status_of(&done).current_revision.as_deref(),
        Some(update_rev.as_str())
    );
    assert!(
        active_pods(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == NEW_IMAGE)
    );
}

/// `reserveOrdinals`: replicas 3 with [1] runs web-0, web-2, web-3; reserving 3 too deletes
/// web-3 and creates web-4; a range "5-6" is skipped as well.
#[tokio::test]
async fn reserve_ordinals_are_skipped_and_newly_reserved_pods_replaced() {
    let (_env, ns, _m) = setup("asts-reserve", &[]).await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts(
                "web",
                3,
                json!({"podManagementPolicy": "Parallel", "reserveOrdinals": [1]}),
            ),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-2", "web-3"]).await;
    let web2 = active_pods(&ns, "web").await[1].uid();
    patch_set(&ns, "web", json!({"spec": {"reserveOrdinals": [1, 3]}})).await;
    wait_settled(&ns, "web", &["web-0", "web-2", "web-4"]).await;
    assert_eq!(
        active_pods(&ns, "web").await[1].uid(),
        web2,
        "web-2 was touched"
    );
    patch_set(
        &ns,
        "web",
        json!({"spec": {"reserveOrdinals": [1, 3, "4-5"], "replicas": 4}}),
    )
    .await;
    wait_settled(&ns, "web", &["web-0", "web-2", "web-6", "web-7"]).await;
}

/// `ordinals.start` (gate StatefulSetStartOrdinal): pods from web-10; moving the start to 12
/// with 3 replicas leaves exactly web-12..web-14; removing it goes back to web-0.
#[tokio::test]
async fn start_ordinal_moves_the_pods() {
    let (_env, ns, _m) = setup(
        "asts-start",
        &["--feature-gates", "StatefulSetStartOrdinal=true"],
    )
    .await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts("web", 2, json!({"ordinals": {"start": 10}})),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-10", "web-11"]).await;
    patch_set(
        &ns,
        "web",
        json!({"spec": {"ordinals": {"start": 12}, "replicas": 3}}),
    )
    .await;
    wait_settled(&ns, "web", &["web-12", "web-13", "web-14"]).await;
    patch_set(&ns, "web", json!({"spec": {"ordinals": {"start": 11}}})).await;
    wait_settled(&ns, "web", &["web-11", "web-12", "web-13"]).await;
    patch_set(
        &ns,
        "web",
        json!({"spec": {"ordinals": null, "replicas": 2}}),
    )
    .await;
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
}

/// PVC retention (`persistentVolumeClaimRetentionPolicy.whenScaled`): scaling in deletes the
/// claim of the removed ordinal with Delete and keeps it with Retain; claims are created per
/// ordinal from `volumeClaimTemplates` and bound by the testbed's default StorageClass.
#[tokio::test]
async fn when_scaled_delete_removes_the_claim_retain_keeps_it() {
    let (_env, ns, _m) = setup("asts-pvc", &[]).await;
    let vct = |policy: &str| {
        json!({
            "podManagementPolicy": "Parallel",
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": policy},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
            "template": {"spec": {"containers": [{"name": "main", "image": OLD_IMAGE,
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
        })
    };
    let api = ns.api::<StatefulSet>();
    api.create(&PostParams::default(), &asts("keep", 2, vct("Retain")))
        .await
        .unwrap();
    api.create(&PostParams::default(), &asts("drop", 2, vct("Delete")))
        .await
        .unwrap();
    wait_settled(&ns, "keep", &["keep-0", "keep-1"]).await;
    wait_settled(&ns, "drop", &["drop-0", "drop-1"]).await;
    let pvcs = ns.api::<PersistentVolumeClaim>();
    for name in ["data-keep-0", "data-keep-1", "data-drop-0", "data-drop-1"] {
        let c = pvcs.get(name).await.unwrap();
        // Claim labels: the template's plus the selector's matchLabels.
        assert_eq!(c.labels().get("app").map(String::as_str), Some(&name[5..9]));
        let pod = ns.api::<Pod>().get(&name[5..]).await.unwrap();
        let claim = pod
            .spec
            .unwrap()
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "data")
            .unwrap();
        assert_eq!(claim.persistent_volume_claim.unwrap().claim_name, name);
    }
    patch_set(&ns, "keep", json!({"spec": {"replicas": 1}})).await;
    patch_set(&ns, "drop", json!({"spec": {"replicas": 1}})).await;
    wait_settled(&ns, "keep", &["keep-0"]).await;
    wait_settled(&ns, "drop", &["drop-0"]).await;
    wait_for("data-drop-1 deleted", TIMEOUT, || async {
        match pvcs.get_opt("data-drop-1").await.unwrap() {
            None => Some(()),
            Some(c) if c.metadata.deletion_timestamp.is_some() => Some(()),
            Some(_) => None,
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let kept = pvcs.get("data-keep-1").await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "Retain deleted the claim"
    );
    assert!(
        pvcs.get("data-drop-0")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
}

/// The manager killed twice in the middle of a recreate rollout: the rollout finishes, every
/// pod is recreated exactly once and never is a pod created beyond that.
#[tokio::test]
async fn manager_killed_mid_rollout_converges_without_extra_pods() {
    let (_env, ns, mut m) = setup("asts-chaos", &[]).await;
    let all = ["web-0", "web-1", "web-2", "web-3", "web-4"];
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 5, json!({})))
        .await
        .unwrap();
    wait_settled(&ns, "web", &all).await;
    let (log, watch) = PodLog::start(&ns).await;
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        m.kill();
        tokio::time::sleep(Duration::from_millis(500)).await;
        m.restart(TIMEOUT).await;
    }
    wait_settled(&ns, "web", &all).await;
    assert!(
        active_pods(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == NEW_IMAGE)
    );
    let created: BTreeSet<String> = log.events().iter().map(|e| e.uid.clone()).collect();
    // 5 original pods (seen in the initial list) + 5 replacements, nothing more.
    assert_eq!(created.len(), 10, "pods seen: {created:?}");
    watch.abort();
}

/// Migration from a native `apps/v1` StatefulSet: deleted with `--cascade=orphan` and replaced
/// by an Advanced StatefulSet with the same name, selector and template, its pods (and
/// revisions) are adopted and keep running — no pod is recreated. (The template names
/// `imagePullPolicy`: Kubernetes and OpenKruise default it differently — `IfNotPresent` vs
/// `Always` — so a template relying on the default changes on migration, with OpenKruise too.
/// The native revision, written by Kubernetes 1.37 without `creationTimestamp: null`, still
/// counts as the same template.)
#[tokio::test]
async fn native_statefulset_pods_are_adopted() {
    let (_env, ns, _m) = setup("asts-adopt", &[]).await;
    let native: k8s_openapi::api::apps::v1::StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": OLD_IMAGE, "imagePullPolicy": "IfNotPresent"}]}}},
    }))
    .unwrap();
    let native_api = ns.api::<k8s_openapi::api::apps::v1::StatefulSet>();
    native_api
        .create(&PostParams::default(), &native)
        .await
        .unwrap();
    wait_for("3 native pods ready", TIMEOUT, || async {
        let pods = active_pods(&ns, "web").await;
        (pods.len() == 3 && pods.iter().all(is_ready)).then_some(())
    })
    .await
    .unwrap();
    let uids: BTreeSet<String> = active_pods(&ns, "web")
        .await
        .iter()
        .map(|p| p.uid().unwrap())
        .collect();
    native_api
        .delete(
            "web",
            &DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    wait_for("native set gone", TIMEOUT, || async {
        native_api
            .get_opt("web")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await
    .unwrap();
    let (log, watch) = PodLog::start(&ns).await;
    let same_template = json!({"template": {"spec": {"containers": [
        {"name": "main", "image": OLD_IMAGE, "imagePullPolicy": "IfNotPresent"}]}}});
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 3, same_template))
        .await
        .unwrap();
    let set = wait_settled(&ns, "web", &["web-0", "web-1", "web-2"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods = active_pods(&ns, "web").await;
    let now: BTreeSet<String> = pods.iter().map(|p| p.uid().unwrap()).collect();
    assert_eq!(now, uids, "pods were recreated");
    for p in &pods {
        let owner = p
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
            .unwrap();
        assert_eq!(owner.api_version, "apps.kruise.io/v1beta1");
        assert_eq!(owner.uid, set.uid().unwrap());
    }
    assert!(
        log.events().iter().all(|e| !e.deleted && !e.terminating),
        "a pod was deleted"
    );
    watch.abort();
}

/// The `apps.kruise.io/specified-delete` label: the controller deletes that pod and recreates
/// it with the same name; the other pods are left alone.
#[tokio::test]
async fn specified_delete_recreates_the_labelled_pod() {
    let (_env, ns, _m) = setup("asts-specified", &[]).await;
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 3, json!({})))
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1", "web-2"]).await;
    let before: BTreeMap<String, String> = active_pods(&ns, "web")
        .await
        .iter()
        .map(|p| (p.name_any(), p.uid().unwrap()))
        .collect();
    ns.api::<Pod>()
        .patch(
            "web-1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"apps.kruise.io/specified-delete": "true"}}}),
            ),
        )
        .await
        .unwrap();
    wait_for("web-1 recreated", TIMEOUT, || async {
        active_pods(&ns, "web").await.into_iter().find(|p| {
            p.name_any() == "web-1" && p.uid() != Some(before["web-1"].clone()) && is_ready(p)
        })
    })
    .await
    .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1", "web-2"]).await;
    let after = active_pods(&ns, "web").await;
    assert_eq!(after[0].uid().unwrap(), before["web-0"]);
    assert_eq!(after[2].uid().unwrap(), before["web-2"]);
    assert!(
        !after[1]
            .labels()
            .contains_key("apps.kruise.io/specified-delete")
    );
}

/// OnDelete: a template change updates nothing by itself; a pod the user deletes comes back on
/// the update revision.
#[tokio::test]
async fn on_delete_recreates_deleted_pods_at_the_update_revision() {
    let (_env, ns, _m) = setup("asts-ondelete", &[]).await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts("web", 2, json!({"updateStrategy": {"type": "OnDelete"}})),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    let before = active_pods(&ns, "web").await;
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": NEW_IMAGE}]}}}}),
    )
    .await;
    let api = ns.api::<StatefulSet>();
    let set = wait_for_object(&api, "web", "new update revision", TIMEOUT, |s| {
        let st = status_of(s);
        st.observed_generation == s.metadata.generation && st.update_revision != st.current_revision
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(names(&active_pods(&ns, "web").await), names(&before));
    assert!(
        active_pods(&ns, "web")
            .await
            .iter()
            .all(|p| image_of(p) == OLD_IMAGE)
    );
    ns.api::<Pod>()
        .delete("web-0", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let web0 = wait_for("web-0 recreated", TIMEOUT, || async {
        active_pods(&ns, "web")
            .await
            .into_iter()
            .find(|p| p.name_any() == "web-0" && p.uid() != before[0].uid() && is_ready(p))
    })
    .await
    .unwrap();
    assert_eq!(image_of(&web0), NEW_IMAGE);
    assert_eq!(Some(revision_of(&web0)), status_of(&set).update_revision);
    let web1 = ns.api::<Pod>().get("web-1").await.unwrap();
    assert_eq!(web1.uid(), before[1].uid());
}

/// InPlaceIfPossible with a change that cannot be made in place (resources, QoS class): the
/// pods are recreated, one at a time.
#[tokio::test]
async fn resource_change_recreates_pods_under_in_place_if_possible() {
    let (_env, ns, _m) = setup("asts-qos", &[]).await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts("web", 2, in_place_spec(json!({}))),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    let before: BTreeSet<String> = active_pods(&ns, "web")
        .await
        .iter()
        .map(|p| p.uid().unwrap())
        .collect();
    patch_set(
        &ns,
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": OLD_IMAGE,
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}}]}}}}),
    )
    .await;
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    for p in active_pods(&ns, "web").await {
        assert!(
            !before.contains(&p.uid().unwrap()),
            "{} was not recreated",
            p.name_any()
        );
        let restarts = p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0]
            .restart_count;
        assert_eq!(restarts, 0);
    }
}

/// The scale subresource (`kubectl scale asts`) and the printer columns of `kubectl get asts`.
#[tokio::test]
async fn scale_subresource_and_printer_columns() {
    let (_env, ns, _m) = setup("asts-scale", &[]).await;
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 1, json!({})))
        .await
        .unwrap();
    let set = wait_settled(&ns, "web", &["web-0"]).await;
    assert_eq!(status_of(&set).label_selector.as_deref(), Some("app=web"));
    let out = kubectl(
        &["-n", ns.name(), "scale", "asts", "web", "--replicas", "2"],
        None,
    )
    .unwrap();
    assert!(out.success, "{}", out.stderr);
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    let out = kubectl(&["-n", ns.name(), "get", "asts", "web"], None).unwrap();
    assert!(out.success, "{}", out.stderr);
    let header: Vec<&str> = out
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"]
    );
    let row: Vec<&str> = out
        .stdout
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..5], ["web", "2", "2", "2", "2"]);
}

/// A preDelete lifecycle hook holds a pod being scaled away in `PreparingDelete` until the hook
/// label is removed.
#[tokio::test]
async fn pre_delete_hook_holds_the_pod_until_released() {
    let (_env, ns, _m) = setup("asts-predelete", &[]).await;
    ns.api::<StatefulSet>()
        .create(
            &PostParams::default(),
            &asts(
                "web",
                2,
                json!({"lifecycle": {"preDelete": {"labelsHandler": {"hold": "true"}}},
                       "template": {"metadata": {"labels": {"app": "web", "hold": "true"}}}}),
            ),
        )
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1"]).await;
    patch_set(&ns, "web", json!({"spec": {"replicas": 1}})).await;
    let pods = ns.api::<Pod>();
    wait_for_object(&pods, "web-1", "web-1 PreparingDelete", TIMEOUT, |p| {
        p.labels()
            .get("lifecycle.apps.kruise.io/state")
            .map(String::as_str)
            == Some("PreparingDelete")
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let held = pods.get("web-1").await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_none(),
        "deleted while hooked"
    );
    pods.patch(
        "web-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"hold": null}}})),
    )
    .await
    .unwrap();
    wait_settled(&ns, "web", &["web-0"]).await;
}

/// `whenDeleted: Delete`: every claim carries the set as owner, so deleting the set deletes its
/// claims (garbage collection), also the claim of a pod the user had orphaned.
#[tokio::test]
async fn when_deleted_delete_removes_the_claims_with_the_set() {
    let (_env, ns, _m) = setup("asts-whendeleted", &[]).await;
    let spec = json!({
        "podManagementPolicy": "Parallel",
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
        "volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        "template": {"spec": {"containers": [{"name": "main", "image": OLD_IMAGE,
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
    });
    let set = ns
        .api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 3, spec))
        .await
        .unwrap();
    wait_settled(&ns, "web", &["web-0", "web-1", "web-2"]).await;
    let pvcs = ns.api::<PersistentVolumeClaim>();
    for i in 0..3 {
        let c = pvcs.get(&format!("data-web-{i}")).await.unwrap();
        let owners: Vec<(String, String)> = c
            .owner_references()
            .iter()
            .map(|o| (o.kind.clone(), o.uid.clone()))
            .collect();
        assert_eq!(
            owners,
            vec![("StatefulSet".to_owned(), set.uid().unwrap())],
            "data-web-{i}"
        );
    }
    // Orphan web-2, then delete the set.
    ns.api::<Pod>()
        .patch(
            "web-2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": null}})),
        )
        .await
        .unwrap();
    ns.api::<StatefulSet>()
        .delete("web", &DeleteParams::background())
        .await
        .unwrap();
    wait_for("every claim deleted", TIMEOUT, || async {
        let left: Vec<String> = pvcs
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .map(|c| c.name_any())
            .collect();
        left.is_empty().then_some(())
    })
    .await
    .unwrap();
}

/// A pod that stays Pending (no scheduler serves its `schedulerName`) and whose claim was
/// deleted gets the claim back: every pass re-creates missing claims of pending pods (OpenKruise
/// `createMissingPersistentVolumeClaims`). A claim deletion itself triggers no pass (OpenKruise
/// neither); the pod's next change does.
#[tokio::test]
async fn a_pending_pods_missing_claim_is_recreated() {
    let (_env, ns, _m) = setup("asts-pvc-recreate", &[]).await;
    let spec = json!({
        "volumeClaimTemplates": [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        "template": {"spec": {
            "schedulerName": "kruise-rs-e2e-no-such-scheduler",
            "containers": [{"name": "main", "image": OLD_IMAGE, "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
    });
    ns.api::<StatefulSet>()
        .create(&PostParams::default(), &asts("web", 1, spec))
        .await
        .unwrap();
    let pods = ns.api::<Pod>();
    wait_for_object(&pods, "web-0", "web-0 created and Pending", TIMEOUT, |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending")
    })
    .await
    .unwrap();
    let pvcs = ns.api::<PersistentVolumeClaim>();
    let old_claim = wait_for("data-web-0 created", TIMEOUT, || async {
        pvcs.get_opt("data-web-0").await.ok()?.and_then(|c| c.uid())
    })
    .await
    .unwrap();
    pvcs.delete("data-web-0", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("data-web-0 gone", TIMEOUT, || async {
        pvcs.get_opt("data-web-0")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await
    .unwrap();
    // The pod changes (as the scheduler's next attempt would change its status).
    pods.patch(
        "web-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"e2e/touch": "1"}}})),
    )
    .await
    .unwrap();
    wait_for("data-web-0 re-created", TIMEOUT, || async {
        let c = pvcs.get_opt("data-web-0").await.ok()??;
        (c.uid() != Some(old_claim.clone()) && c.metadata.deletion_timestamp.is_none())
            .then_some(())
    })
    .await
    .unwrap();
    let web0 = pods.get("web-0").await.unwrap();
    assert_eq!(
        web0.status.and_then(|s| s.phase).as_deref(),
        Some("Pending"),
        "the pod itself was left alone"
    );
}
