//! SidecarSet end to end on the real testbed: injection by `/mutate-pod` at pod creation, the
//! controller's in-place sidecar upgrades, hot upgrade, history and pinned revisions. Each test
//! runs its own `kruise-manager` as users run it (webhook server and pod webhook on, default
//! flags), restricted to the test's namespace; its SidecarSets pin that namespace with
//! `namespaceSelector` (a namespaced manager manages only those). Every behaviour of OpenKruise
//! v1.9.0's own SidecarSet e2e specs (`test/e2e/apps/v1beta1/sidecarset*.go`) has a test here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment};
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_e2e::manager::{KRUISE_NAMESPACE, ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, TestNamespace, install_crds, wait_for};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);

struct Fixture {
    env: TestEnv,
    ns: TestNamespace,
    manager: TestManager,
    sidecarsets: Api<SidecarSet>,
    created: Vec<String>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SidecarSets are cluster-scoped: remove the test's own.
        for name in &self.created {
            let _ = kruise_e2e::kubectl(
                &[
                    "delete",
                    "sidecarset",
                    name,
                    "--ignore-not-found",
                    "--wait=false",
                ],
                None,
            );
        }
    }
}

async fn setup(prefix: &str, args: &[&str]) -> Fixture {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace(prefix).await.unwrap();
    let spec = ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name()).args(args);
    let manager = TestManager::start(spec, TIMEOUT).await;
    let sidecarsets = Api::all(env.client.clone());
    Fixture {
        env,
        ns,
        manager,
        sidecarsets,
        created: Vec::new(),
    }
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

impl Fixture {
    fn name(&self, base: &str) -> String {
        format!("{}-{base}", self.ns.name())
    }

    /// Creates a SidecarSet pinned to the test namespace, selecting `app: <app>`.
    async fn sidecarset(&mut self, base: &str, app: &str, extra_spec: Value) -> SidecarSet {
        let name = self.name(base);
        let mut spec = json!({
            "selector": {"matchLabels": {"app": app}},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.ns.name()}},
            "containers": [{"name": "nginx-sidecar", "image": "nginx:alpine",
                "podInjectPolicy": "BeforeAppContainer"}],
        });
        merge(&mut spec, extra_spec);
        let s: SidecarSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        self.created.push(name.clone());
        let created = self
            .sidecarsets
            .create(&PostParams::default(), &s)
            .await
            .expect("create SidecarSet");
        // The controller has written its first status (and the revision) before pods come.
        wait_for("the SidecarSet's first status", TIMEOUT, || async {
            let s = self.sidecarsets.get(&name).await.ok()?;
            let st = s.status.as_ref()?;
            (st.observed_generation == s.metadata.generation && st.latest_revision.is_some())
                .then_some(())
        })
        .await
        .unwrap();
        // The pod webhook is called only for pods a SidecarSet selects: wait until its
        // configuration includes this one, as a user's pods would reach it a moment later.
        let config = format!("kruise-mutating-webhook-configuration-{}", self.ns.name());
        let (want_ns, want_app) = (format!("['{}']", self.ns.name()), format!("'{app}'"));
        wait_for(
            "the pod webhook to cover the SidecarSet",
            TIMEOUT,
            || async {
                let out = kruise_e2e::kubectl(
                    &["get", "mutatingwebhookconfiguration", &config, "-o", "json"],
                    None,
                )
                .ok()?;
                (out.stdout.contains(&want_ns) && out.stdout.contains(&want_app)).then_some(())
            },
        )
        .await
        .unwrap();
        created
    }

    async fn deployment(&self, app: &str, replicas: i32, extra_pod_spec: Value) -> Vec<Pod> {
        let mut pod_spec = json!({
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "busybox:1.34", "command": ["sleep", "3600"]}],
        });
        merge(&mut pod_spec, extra_pod_spec);
        let d: Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": app},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"labels": {"app": app}}, "spec": pod_spec}},
        }))
        .unwrap();
        self.ns
            .api::<Deployment>()
            .create(&PostParams::default(), &d)
            .await
            .expect("create Deployment");
        self.ready_pods(app, replicas as usize).await
    }

    async fn ready_pods(&self, app: &str, n: usize) -> Vec<Pod> {
        let pods = self.ns.api::<Pod>();
        wait_for(&format!("{n} ready pods of {app}"), TIMEOUT, || async {
            let list = pods
                .list(&ListParams::default().labels(&format!("app={app}")))
                .await
                .ok()?;
            let ready: Vec<Pod> = list
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
                .collect();
            (ready.len() == n).then_some(ready)
        })
        .await
        .unwrap()
    }

    async fn pods(&self, app: &str) -> Vec<Pod> {
        self.ns
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect()
    }

    async fn patch_spec(&self, name: &str, spec: Value) {
        self.sidecarsets
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            )
            .await
            .expect("patch SidecarSet");
    }

    /// Waits until the status observed the current generation and `check` holds.
    async fn wait_status(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&kruise_api::apps::v1beta1::SidecarSetStatus) -> bool,
    ) -> SidecarSet {
        wait_for(what, TIMEOUT, || async {
            let s = self.sidecarsets.get(name).await.ok()?;
            let st = s.status.as_ref()?;
            (st.observed_generation == s.metadata.generation && check(st)).then_some(s.clone())
        })
        .await
        .unwrap()
    }

    async fn revisions(&self, name: &str) -> Vec<ControllerRevision> {
        let api: Api<ControllerRevision> =
            Api::namespaced(self.env.client.clone(), KRUISE_NAMESPACE);
        let mut list = api
            .list(&ListParams::default().labels(&format!("kruise.io/sidecarset-name={name}")))
            .await
            .unwrap()
            .items;
        list.sort_by_key(|r| r.revision);
        list
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

fn is_ready(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && condition(pod, "Ready").as_deref() == Some("True")
}

fn containers(pod: &Pod) -> Vec<(String, String)> {
    pod.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect()
}

fn image(pod: &Pod, name: &str) -> String {
    containers(pod)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, i)| i)
        .unwrap_or_default()
}

fn env_of(pod: &Pod, container: &str) -> BTreeMap<String, String> {
    pod.spec
        .as_ref()
        .unwrap()
        .containers
        .iter()
        .find(|c| c.name == container)
        .and_then(|c| c.env.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.name, e.value.unwrap_or_default()))
        .collect()
}

/// "pods don't have matched sidecarSet" and "sidecarSet inject pod sidecar container":
/// matching pods get the sidecars before/after the app container with `IS_INJECTED`, the
/// injected list and hashes; others are left alone.
#[tokio::test]
async fn injects_matching_pods_and_leaves_others_alone() {
    let mut f = setup("ss-inject", &[]).await;
    let name = f
        .sidecarset(
            "inject",
            "web",
            json!({"containers": [
                {"name": "nginx-sidecar", "image": "nginx:alpine", "podInjectPolicy": "BeforeAppContainer"},
                {"name": "busybox-sidecar", "image": "busybox:1.34", "command": ["sleep", "999"],
                 "podInjectPolicy": "AfterAppContainer"}]}),
        )
        .await
        .name_any();
    let pods = f.deployment("web", 1, json!({})).await;
    let names: Vec<String> = containers(&pods[0]).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["nginx-sidecar", "main", "busybox-sidecar"]);
    assert_eq!(
        env_of(&pods[0], "nginx-sidecar")
            .get("IS_INJECTED")
            .map(String::as_str),
        Some("true")
    );
    let a = pods[0].annotations();
    assert_eq!(a["kruise.io/sidecarset-injected-list"], name);
    let hashes: Value = serde_json::from_str(&a["kruise.io/sidecarset-hash"]).unwrap();
    let s = f.sidecarsets.get(&name).await.unwrap();
    assert_eq!(
        hashes[&name]["hash"],
        s.annotations()["kruise.io/sidecarset-hash"].as_str()
    );
    assert_eq!(
        hashes[&name]["sidecarList"],
        json!(["busybox-sidecar", "nginx-sidecar"])
    );
    // Other pods are not touched.
    let other = f.deployment("other", 1, json!({})).await;
    assert_eq!(containers(&other[0]).len(), 1);
    // The status counts the injected pod.
    f.wait_status(&name, "matchedPods 1, readyPods 1", |st| {
        st.matched_pods == 1 && st.ready_pods == 1 && st.updated_pods == 1
    })
    .await;
}

/// "sidecarSet inject pod sidecar container volumeMounts" and "…SubPathExpr with expanded
/// subpath": with `shareVolumePolicy: enabled` the sidecar gets the app's mounts and the env
/// vars its `subPathExpr` uses; the SidecarSet's volumes are added, the pod's own win.
#[tokio::test]
async fn shared_volume_mounts_and_subpath_env() {
    let mut f = setup("ss-volumes", &[]).await;
    f.sidecarset(
        "volumes",
        "vol",
        json!({
            "containers": [{"name": "nginx-sidecar", "image": "nginx:alpine",
                "shareVolumePolicy": {"type": "enabled"},
                "volumeMounts": [{"name": "sidecar-vol", "mountPath": "/sidecar"},
                                 {"name": "shared", "mountPath": "/shared-by-sidecar"}]}],
            "volumes": [{"name": "sidecar-vol", "emptyDir": {}},
                        {"name": "shared", "hostPath": {"path": "/sidecarset-loses"}}],
        }),
    )
    .await;
    let pods = f
        .deployment(
            "vol",
            1,
            json!({
                "containers": [{"name": "main", "image": "busybox:1.34", "command": ["sleep", "3600"],
                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "ODD", "value": "odd"}],
                    "volumeMounts": [{"name": "shared", "mountPath": "/data", "subPathExpr": "$(ODD)/$(POD_NAME)"}]}],
                "volumes": [{"name": "shared", "emptyDir": {}}],
            }),
        )
        .await;
    let spec = pods[0].spec.clone().unwrap();
    let sidecar = spec
        .containers
        .iter()
        .find(|c| c.name == "nginx-sidecar")
        .unwrap();
    let mounts: Vec<&str> = sidecar
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.as_str())
        .collect();
    // The app's mounts include the service account token the API server mounted before the
    // webhook ran; OpenKruise shares it too.
    assert_eq!(
        mounts,
        [
            "/sidecar",
            "/shared-by-sidecar",
            "/data",
            "/var/run/secrets/kubernetes.io/serviceaccount"
        ]
    );
    let env: BTreeSet<&str> = sidecar
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert!(env.contains("POD_NAME") && env.contains("ODD"), "{env:?}");
    let shared = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "shared")
        .unwrap();
    assert!(shared.empty_dir.is_some(), "the pod's own volume wins");
    assert!(
        spec.volumes
            .iter()
            .flatten()
            .any(|v| v.name == "sidecar-vol")
    );
}

/// "sidecarSet inject pod sidecar container transfer Envs" (with downward API by labels and
/// annotations): env vars are copied from the named source container.
#[tokio::test]
async fn transfer_env_from_named_and_referenced_containers() {
    let mut f = setup("ss-env", &[]).await;
    f.sidecarset(
        "env",
        "env",
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:alpine", "transferEnv": [
            {"sourceContainerName": "main", "envName": "TZ"},
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['source']"}}, "envNames": ["A"]},
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.annotations['source']"}}, "envNames": ["B"]}
        ]}]}),
    )
    .await;
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "env"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "env"}},
            "template": {"metadata": {"labels": {"app": "env", "source": "second"},
                                      "annotations": {"source": "main"}},
                "spec": {"containers": [
                    {"name": "main", "image": "busybox:1.34", "env": [
                        {"name": "TZ", "value": "Asia/Shanghai"}, {"name": "B", "value": "from-annotation"}]},
                    {"name": "second", "image": "busybox:1.34", "env": [{"name": "A", "value": "from-label"}]}
                ]}}},
    }))
    .unwrap();
    f.ns.api::<Deployment>()
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    let pods = f.ready_pods("env", 1).await;
    let env = env_of(&pods[0], "nginx-sidecar");
    assert_eq!(env.get("TZ").map(String::as_str), Some("Asia/Shanghai"));
    assert_eq!(env.get("A").map(String::as_str), Some("from-label"));
    assert_eq!(env.get("B").map(String::as_str), Some("from-annotation"));
}

/// "sidecarSet upgrade cold sidecar container image only": an image change is rolled out in
/// place (same pod UIDs, the sidecar restarted) and the status follows; "(more than image
/// field), no pod should be updated": a command change updates no pod and marks it
/// `SidecarSetUpgradable` False.
#[tokio::test]
async fn image_changes_upgrade_in_place_other_changes_do_not() {
    let mut f = setup("ss-upgrade", &[]).await;
    let name = f.sidecarset("upgrade", "up", json!({})).await.name_any();
    let before = f.deployment("up", 2, json!({})).await;
    let uids: BTreeSet<String> = before.iter().filter_map(|p| p.uid()).collect();
    f.patch_spec(
        &name,
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:mainline-alpine"}]}),
    )
    .await;
    f.wait_status(&name, "2 updated ready pods", |st| {
        st.matched_pods == 2 && st.updated_pods == 2 && st.updated_ready_pods == Some(2)
    })
    .await;
    let after = f.ready_pods("up", 2).await;
    assert_eq!(
        after
            .iter()
            .filter_map(|p| p.uid())
            .collect::<BTreeSet<_>>(),
        uids
    );
    for p in &after {
        assert_eq!(image(p, "nginx-sidecar"), "nginx:mainline-alpine");
        let restarts = p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.name == "nginx-sidecar")
            .unwrap()
            .restart_count;
        assert_eq!(restarts, 1);
    }
    // More than the image: nothing is updated, the pods say why.
    f.patch_spec(
        &name,
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:alpine", "command": ["/bin/sh", "-c", "sleep 1000"]}]}),
    )
    .await;
    f.wait_status(&name, "0 updated pods", |st| {
        st.matched_pods == 2 && st.updated_pods == 0
    })
    .await;
    wait_for(
        "SidecarSetUpgradable False on both pods",
        TIMEOUT,
        || async {
            let pods = f.pods("up").await;
            (pods.len() == 2
                && pods
                    .iter()
                    .all(|p| condition(p, "SidecarSetUpgradable").as_deref() == Some("False")))
            .then_some(())
        },
    )
    .await
    .unwrap();
    for p in f.pods("up").await {
        assert_eq!(image(&p, "nginx-sidecar"), "nginx:mainline-alpine");
    }
}

/// "…and paused", "…and selector", "…and partition": the strategy limits which pods are
/// upgraded.
#[tokio::test]
async fn paused_selector_and_partition_limit_the_upgrade() {
    let mut f = setup("ss-strategy", &[]).await;
    let name = f
        .sidecarset(
            "strategy",
            "st",
            json!({"updateStrategy": {"paused": true}}),
        )
        .await
        .name_any();
    f.deployment("st", 4, json!({})).await;
    let new_image =
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:mainline-alpine"}]});
    f.patch_spec(&name, new_image.clone()).await;
    f.wait_status(&name, "paused: 0 updated", |st| {
        st.matched_pods == 4 && st.updated_pods == 0
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        f.pods("st")
            .await
            .iter()
            .all(|p| image(p, "nginx-sidecar") == "nginx:alpine")
    );
    // Partition 2 of 4: two stay old.
    f.patch_spec(
        &name,
        json!({"updateStrategy": {"paused": false, "partition": 2, "maxUnavailable": 4}}),
    )
    .await;
    f.wait_status(&name, "partition 2: 2 updated", |st| {
        st.updated_pods == 2 && st.updated_ready_pods == Some(2)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let n_new = f
        .pods("st")
        .await
        .iter()
        .filter(|p| image(p, "nginx-sidecar") == "nginx:mainline-alpine")
        .count();
    assert_eq!(n_new, 2);
    // A selector: only the labelled pod moves on.
    let old = f
        .pods("st")
        .await
        .into_iter()
        .find(|p| image(p, "nginx-sidecar") == "nginx:alpine")
        .unwrap();
    f.ns.api::<Pod>()
        .patch(
            &old.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"canary": "true"}}})),
        )
        .await
        .unwrap();
    f.patch_spec(
        &name,
        json!({"updateStrategy": {"partition": null, "selector": {"matchLabels": {"canary": "true"}}}}),
    )
    .await;
    f.wait_status(&name, "selector: 3 updated", |st| st.updated_pods == 3)
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        f.sidecarsets
            .get(&name)
            .await
            .unwrap()
            .status
            .unwrap()
            .updated_pods,
        3
    );
    assert_eq!(
        image(
            &f.ns.api::<Pod>().get(&old.name_any()).await.unwrap(),
            "nginx-sidecar"
        ),
        "nginx:mainline-alpine"
    );
}

/// "…and maxUnavailable" (and the issue's watch): a sidecar rollout over 20 pods with
/// `maxUnavailable: 2` never has more than 2 pods unavailable.
#[tokio::test]
async fn rollout_never_exceeds_max_unavailable() {
    let mut f = setup("ss-maxunavail", &[]).await;
    let name = f
        .sidecarset(
            "maxunavail",
            "mu",
            json!({"updateStrategy": {"maxUnavailable": 2}}),
        )
        .await
        .name_any();
    f.deployment("mu", 20, json!({})).await;
    let seen_max = Arc::new(Mutex::new(0usize));
    let state: Arc<Mutex<BTreeMap<String, bool>>> = Arc::default();
    let watch = {
        let pods = f.ns.api::<Pod>();
        let seen_max = seen_max.clone();
        let state = state.clone();
        tokio::spawn(async move {
            let mut stream = watcher(pods, watcher::Config::default().labels("app=mu")).boxed();
            while let Some(Ok(ev)) = stream.next().await {
                let mut s = state.lock().unwrap();
                match ev {
                    watcher::Event::Apply(p) | watcher::Event::InitApply(p) => {
                        s.insert(p.name_any(), is_ready(&p));
                    }
                    watcher::Event::Delete(p) => {
                        s.remove(&p.name_any());
                    }
                    _ => {}
                }
                let down = s.values().filter(|r| !**r).count();
                let mut m = seen_max.lock().unwrap();
                *m = (*m).max(down);
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    *seen_max.lock().unwrap() = 0;
    f.patch_spec(
        &name,
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:mainline-alpine"}]}),
    )
    .await;
    f.wait_status(&name, "20 updated ready pods", |st| {
        st.updated_pods == 20 && st.updated_ready_pods == Some(20)
    })
    .await;
    watch.abort();
    let max = *seen_max.lock().unwrap();
    assert!(max <= 2, "{max} pods unavailable at once");
    assert!(max >= 1, "the watch saw no sidecar restart at all");
}

/// "sidecarSet history revision checker" and "…data checker": one revision per distinct spec in
/// the manager's namespace, at most `revisionHistoryLimit` (10), an old spec reused by moving its
/// revision to the head; each revision records the five spec fields.
#[tokio::test]
async fn history_keeps_ten_revisions_and_reuses_equal_ones() {
    let mut f = setup(
        "ss-history",
        &[
            "--feature-gates",
            "SidecarSetPatchPodMetadataDefaultsAllowed=true",
        ],
    )
    .await;
    let name = f
        .sidecarset(
            "history",
            "none",
            json!({"imagePullSecrets": [{"name": "secret-1"}],
                   "patchPodMetadata": [{"annotations": {"sidecarset.kruise.io/test": "version-1"}}]}),
        )
        .await
        .name_any();
    let revs = f.revisions(&name).await;
    assert_eq!(revs.len(), 1);
    let spec = revs[0].data.0["spec"].as_object().unwrap().clone();
    for k in [
        "volumes",
        "containers",
        "initContainers",
        "imagePullSecrets",
        "patchPodMetadata",
    ] {
        assert!(spec.contains_key(k), "revision data lacks {k}");
    }
    assert_eq!(
        spec["patchPodMetadata"][0]["annotations"]["sidecarset.kruise.io/test"],
        "version-1"
    );
    for i in 2..=15 {
        f.patch_spec(
            &name,
            json!({"imagePullSecrets": [{"name": format!("secret-{i}")}]}),
        )
        .await;
        f.wait_status(&name, "observed", |_| true).await;
    }
    let revs = f.revisions(&name).await;
    assert_eq!(
        revs.iter()
            .map(|r| r.revision.unwrap_or_default())
            .collect::<Vec<i64>>(),
        (6..=15).collect::<Vec<i64>>()
    );
    f.patch_spec(&name, json!({"imagePullSecrets": [{"name": "secret-12"}]}))
        .await;
    f.wait_status(&name, "observed", |_| true).await;
    let revs = f.revisions(&name).await;
    assert_eq!(
        revs.iter()
            .map(|r| r.revision.unwrap_or_default())
            .collect::<Vec<i64>>(),
        vec![6, 7, 8, 9, 10, 11, 13, 14, 15, 16]
    );
}

/// "sidecarSet InjectionStrategy.Revision checker": pinned to a custom version, new pods get
/// that version's sidecar while the latest spec differs.
#[tokio::test]
async fn injection_pinned_to_a_custom_version() {
    let mut f = setup("ss-pinned", &[]).await;
    let name = f
        .sidecarset("pinned", "pin", json!({"customVersion": "v1"}))
        .await
        .name_any();
    f.patch_spec(
        &name,
        json!({"customVersion": "v2",
               "containers": [{"name": "nginx-sidecar", "image": "nginx:mainline-alpine"}],
               "injectionStrategy": {"revision": {"customVersion": "v1", "policy": "Always"}},
               "updateStrategy": {"paused": true}}),
    )
    .await;
    f.wait_status(&name, "two revisions", |_| true).await;
    wait_for("revisions v1 and v2", TIMEOUT, || async {
        let versions: BTreeSet<String> = f
            .revisions(&name)
            .await
            .iter()
            .filter_map(|r| {
                r.labels()
                    .get("apps.kruise.io/sidecarset-custom-version")
                    .cloned()
            })
            .collect();
        (versions.len() == 2).then_some(())
    })
    .await
    .unwrap();
    let pods = f.deployment("pin", 1, json!({})).await;
    assert_eq!(image(&pods[0], "nginx-sidecar"), "nginx:alpine");
}

/// "sidecarSet patch pod metadata": `patchPodMetadata` is applied at injection, with the
/// gate that allows it without a whitelist.
#[tokio::test]
async fn patch_pod_metadata_at_injection() {
    let mut f = setup(
        "ss-metadata",
        &[
            "--feature-gates",
            "SidecarSetPatchPodMetadataDefaultsAllowed=true",
        ],
    )
    .await;
    f.sidecarset(
        "metadata",
        "meta",
        json!({"patchPodMetadata": [
            {"annotations": {"oom-score": "{\"log-agent\":1}"}, "patchPolicy": "MergePatchJson"},
            {"annotations": {"cpu-quota": "2"}, "patchPolicy": "Retain"}]}),
    )
    .await;
    let pods = f.deployment("meta", 1, json!({})).await;
    let a = pods[0].annotations();
    assert_eq!(a["oom-score"], "{\"log-agent\":1}");
    assert_eq!(a["cpu-quota"], "2");
}

/// "sidecarSet inject pod hot upgrade sidecar container" and "…upgrade hot sidecar container
/// image": a pair is injected; an upgrade starts the idle container on the new image, then,
/// once it is ready, the old one is reset to the empty image and becomes the idle one.
#[tokio::test]
async fn hot_upgrade_injects_a_pair_and_flips_it() {
    let mut f = setup("ss-hot", &[]).await;
    let name = f
        .sidecarset(
            "hot",
            "hot",
            json!({"containers": [{"name": "mesh", "image": "nginx:alpine",
                "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:1.34"}}]}),
        )
        .await
        .name_any();
    let pods = f.deployment("hot", 1, json!({})).await;
    let p = &pods[0];
    assert_eq!(image(p, "mesh-1"), "nginx:alpine");
    assert_eq!(image(p, "mesh-2"), "busybox:1.34");
    assert_eq!(
        p.annotations()["kruise.io/sidecarset-working-hotupgrade-container"],
        r#"{"mesh":"mesh-1"}"#
    );
    f.patch_spec(
        &name,
        json!({"containers": [{"name": "mesh", "image": "nginx:mainline-alpine",
            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "busybox:1.34"}}]}),
    )
    .await;
    wait_for(
        "mesh-2 working on the new image, mesh-1 reset",
        TIMEOUT,
        || async {
            let pods = f.pods("hot").await;
            let p = pods.first()?;
            (image(p, "mesh-2") == "nginx:mainline-alpine"
                && image(p, "mesh-1") == "busybox:1.34"
                && p.annotations()["kruise.io/sidecarset-working-hotupgrade-container"]
                    == r#"{"mesh":"mesh-2"}"#)
                .then_some(())
        },
    )
    .await
    .unwrap();
    f.wait_status(&name, "1 updated ready pod", |st| {
        st.updated_pods == 1 && st.updated_ready_pods == Some(1)
    })
    .await;
    let p = f.pods("hot").await.remove(0);
    assert_eq!(p.uid(), pods[0].uid());
}

/// The issue's fixture: a pod injected by OpenKruise (its annotations as OpenKruise writes
/// them, older map format included) is upgraded in place by kruise-rs.
#[tokio::test]
async fn pods_injected_by_openkruise_are_upgraded() {
    let mut f = setup("ss-adopt", &[]).await;
    let s = f.sidecarset("adopt", "adopt", json!({})).await;
    let name = s.name_any();
    let hash = s.annotations()["kruise.io/sidecarset-hash"].clone();
    let without = s.annotations()["kruise.io/sidecarset-hash-without-image"].clone();
    // A bare pod written as OpenKruise injects it (created with the webhook of this test
    // namespace out of the way: its own annotations are what OpenKruise would have written).
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "legacy", "labels": {"app": "other"},
            "annotations": {
                "kruise.io/sidecarset-hash": format!("{{\"{name}\":\"{hash}\"}}"),
                "kruise.io/sidecarset-hash-without-image": format!("{{\"{name}\":\"{without}\"}}"),
                "kruise.io/sidecarset-injected-list": name}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [
            {"name": "nginx-sidecar", "image": "nginx:alpine", "env": [{"name": "IS_INJECTED", "value": "true"}]},
            {"name": "main", "image": "busybox:1.34"}]}
    }))
    .unwrap();
    let pods = f.ns.api::<Pod>();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // Now it matches the SidecarSet.
    pods.patch(
        "legacy",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "adopt"}}})),
    )
    .await
    .unwrap();
    f.ready_pods("adopt", 1).await;
    f.wait_status(&name, "the legacy pod matched", |st| {
        st.matched_pods == 1 && st.updated_pods == 1
    })
    .await;
    f.patch_spec(
        &name,
        json!({"containers": [{"name": "nginx-sidecar", "image": "nginx:mainline-alpine"}]}),
    )
    .await;
    f.wait_status(&name, "the legacy pod upgraded", |st| {
        st.updated_ready_pods == Some(1)
    })
    .await;
    let p = pods.get("legacy").await.unwrap();
    assert_eq!(image(&p, "nginx-sidecar"), "nginx:mainline-alpine");
    let spec: Value = serde_json::from_str(&p.annotations()["kruise.io/sidecarset-hash"]).unwrap();
    assert_eq!(spec[&name]["sidecarSetName"], name.as_str());
    let _ = pods.delete("legacy", &DeleteParams::default()).await;
}

// ---------------------------------------------------------------------------------------------
// resourcesPolicy: OpenKruise's "SidecarResourcesPolicy" stories (sidecarset_resources_policy.go)

fn res(cpu: &str, mem: &str) -> Value {
    let mut m = serde_json::Map::new();
    if !cpu.is_empty() {
        m.insert("cpu".into(), json!(cpu));
    }
    if !mem.is_empty() {
        m.insert("memory".into(), json!(mem));
    }
    Value::Object(m)
}

fn app(name: &str, limits: Value, requests: Value) -> Value {
    json!({"name": name, "image": "nginx:alpine",
        "resources": {"limits": limits, "requests": requests}})
}

fn policy(mode: &str, regex: &str, limits: (&str, &str), requests: (&str, &str)) -> Value {
    json!({"targetContainersMode": mode, "targetContainersNameRegex": regex,
        "resourcesExpr": {"limits": {"cpu": limits.0, "memory": limits.1},
                          "requests": {"cpu": requests.0, "memory": requests.1}}})
}

fn quantity_eq(got: Option<&str>, want: &str) -> bool {
    use kruise_api::validation::quantity::Quantity;
    match (got, want) {
        (None, "") => true,
        (Some(g), w) if !w.is_empty() => Quantity::parse(g)
            .ok()
            .zip(Quantity::parse(w).ok())
            .is_some_and(|(g, w)| g.compare(&w) == std::cmp::Ordering::Equal),
        _ => false,
    }
}

/// Creates the SidecarSet and a one-pod Deployment, then checks the resources of `container`
/// (an init container when `init`): limits and requests `(cpu, memory)`, `""` = absent.
async fn resources_story(
    prefix: &str,
    sidecarset_spec: Value,
    pod_spec: Value,
    (container, init): (&str, bool),
    limits: (&str, &str),
    requests: (&str, &str),
) {
    let mut f = setup(prefix, &[]).await;
    f.sidecarset("policy", "story", sidecarset_spec).await;
    let pods = f.deployment("story", 1, pod_spec).await;
    let spec = pods[0].spec.clone().unwrap();
    let list = if init {
        spec.init_containers.unwrap_or_default()
    } else {
        spec.containers
    };
    let c = list
        .iter()
        .find(|c| c.name == container)
        .unwrap_or_else(|| panic!("{container} not injected"));
    let r = c.resources.clone().unwrap_or_default();
    let get =
        |m: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         k: &str| m.as_ref().and_then(|m| m.get(k)).map(|q| q.0.clone());
    for (what, got, want) in [
        ("limits.cpu", get(&r.limits, "cpu"), limits.0),
        ("limits.memory", get(&r.limits, "memory"), limits.1),
        ("requests.cpu", get(&r.requests, "cpu"), requests.0),
        ("requests.memory", get(&r.requests, "memory"), requests.1),
    ] {
        assert!(
            quantity_eq(got.as_deref(), want),
            "{container} {what}: got {got:?}, want {want:?}"
        );
    }
}

fn engines(v8_limits: Value) -> Value {
    json!({"containers": [
        app("large-engine-v4", res("200m", "200Mi"), res("50m", "100Mi")),
        app("large-engine-v8", v8_limits, res("100m", "200Mi"))]})
}

fn sidecar_with(policy: Value) -> Value {
    json!({"containers": [{"name": "sidecar1", "image": "busybox:1.34",
        "command": ["/bin/sh", "-c", "sleep 10000000"], "resourcesPolicy": policy}]})
}

/// "Story 1 - ResourcesPolicy with specific container name regex".
#[tokio::test]
async fn resources_policy_targets_containers_by_name_regex() {
    let p = policy(
        "sum",
        "^large-engine-v4$",
        ("max(cpu*50%, 50m)", "200Mi"),
        ("max(cpu*50%, 50m)", "100Mi"),
    );
    resources_story(
        "ssrp-regex",
        sidecar_with(p),
        engines(res("200m", "200Mi")),
        ("sidecar1", false),
        ("100m", "200Mi"),
        ("50m", "100Mi"),
    )
    .await;
}

/// "Story 2 - ResourcesPolicy with sum mode".
#[tokio::test]
async fn resources_policy_sums_the_targets() {
    let p = policy(
        "sum",
        "^large-engine-v.*$",
        ("max(cpu*50%, 50m)", "200Mi"),
        ("max(cpu*50%, 50m)", "100Mi"),
    );
    resources_story(
        "ssrp-sum",
        sidecar_with(p),
        engines(res("400m", "400Mi")),
        ("sidecar1", false),
        ("300m", "200Mi"),
        ("75m", "100Mi"),
    )
    .await;
}

/// "Story 3 - ResourcesPolicy with max mode".
#[tokio::test]
async fn resources_policy_takes_the_largest_target() {
    let p = policy(
        "max",
        "^large-engine-v.*$",
        ("max(cpu*50%, 50m)", "200Mi"),
        ("max(cpu*50%, 50m)", "100Mi"),
    );
    resources_story(
        "ssrp-max",
        sidecar_with(p),
        engines(res("400m", "400Mi")),
        ("sidecar1", false),
        ("200m", "200Mi"),
        ("50m", "100Mi"),
    )
    .await;
}

/// "Story 4 - ResourcesPolicy with unlimited resources": a target without a CPU limit leaves
/// the sidecar's CPU limit unset.
#[tokio::test]
async fn resources_policy_keeps_unlimited_targets_unlimited() {
    let p = policy(
        "max",
        "^large-engine-v.*$",
        ("max(cpu*50%, 50m)", "200Mi"),
        ("max(cpu*50%, 50m)", "100Mi"),
    );
    resources_story(
        "ssrp-unlimited",
        sidecar_with(p),
        engines(res("", "400Mi")),
        ("sidecar1", false),
        ("", "200Mi"),
        ("50m", "100Mi"),
    )
    .await;
}

/// "Story 5 - ResourcesPolicy with complex linear expression".
#[tokio::test]
async fn resources_policy_evaluates_linear_expressions() {
    let p = policy(
        "sum",
        ".*",
        ("cpu*50% + 100m", "max(memory*20% + 100Mi, 200Mi)"),
        ("cpu*30% + 50m", "memory*15% + 50Mi"),
    );
    let pod = json!({"containers": [
        app("app1", res("200m", "400Mi"), res("100m", "200Mi")),
        app("app2", res("400m", "600Mi"), res("200m", "300Mi"))]});
    resources_story(
        "ssrp-linear",
        sidecar_with(p),
        pod,
        ("sidecar1", false),
        ("400m", "300Mi"),
        ("140m", "125Mi"),
    )
    .await;
}

/// "Story 6 - Init-container (Native Sidecar) with ResourcesPolicy".
#[tokio::test]
async fn resources_policy_on_a_native_sidecar_init_container() {
    let p = policy(
        "sum",
        "^app.*$",
        ("max(cpu*30%, 50m)", "max(memory*25%, 100Mi)"),
        ("cpu*20%", "memory*15%"),
    );
    let ss = json!({"updateStrategy": {"type": "NotUpdate"}, "containers": [], "initContainers": [{"name": "init-sidecar",
        "image": "busybox:1.34", "restartPolicy": "Always",
        "command": ["/bin/sh", "-c", "sleep 10000000"], "resourcesPolicy": p}]});
    let pod = json!({"containers": [
        app("app1", res("400m", "800Mi"), res("200m", "400Mi")),
        app("app2", res("600m", "1200Mi"), res("300m", "600Mi"))]});
    resources_story(
        "ssrp-native",
        ss,
        pod,
        ("init-sidecar", true),
        ("300m", "500Mi"),
        ("100m", "150Mi"),
    )
    .await;
}

/// "Filtering non-native sidecar init-containers": a plain init container is no target.
#[tokio::test]
async fn resources_policy_ignores_plain_init_containers() {
    let p = policy(
        "sum",
        ".*",
        ("cpu*50%", "memory*50%"),
        ("cpu*40%", "memory*40%"),
    );
    let pod = json!({
        "initContainers": [{"name": "plain-init", "image": "busybox:1.34", "command": ["true"],
            "resources": {"limits": res("100m", "100Mi"), "requests": res("50m", "50Mi")}}],
        "containers": [app("app1", res("200m", "200Mi"), res("100m", "100Mi"))]});
    resources_story(
        "ssrp-plaininit",
        sidecar_with(p),
        pod,
        ("sidecar1", false),
        ("100m", "100Mi"),
        ("40m", "40Mi"),
    )
    .await;
}

/// "Filtering Kruise sidecar containers and init-containers": the SidecarSets' own containers
/// are no targets.
#[tokio::test]
async fn resources_policy_ignores_kruise_sidecars() {
    let p = policy(
        "sum",
        ".*",
        ("cpu*50%", "memory*50%"),
        ("cpu*40%", "memory*40%"),
    );
    let ss = json!({
        "updateStrategy": {"type": "NotUpdate"},
        "initContainers": [{"name": "kruise-init-sidecar", "image": "busybox:1.34",
            "restartPolicy": "Always", "command": ["/bin/sh", "-c", "sleep 10000000"],
            "resources": {"limits": res("300m", "300Mi"), "requests": res("150m", "150Mi")}}],
        "containers": [
            {"name": "kruise-sidecar", "image": "busybox:1.34", "command": ["/bin/sh", "-c", "sleep 10000000"],
             "resources": {"limits": res("400m", "400Mi"), "requests": res("200m", "200Mi")}},
            {"name": "policy-sidecar", "image": "busybox:1.34", "command": ["/bin/sh", "-c", "sleep 10000000"],
             "resourcesPolicy": p}]});
    let pod = json!({"containers": [app("app1", res("200m", "200Mi"), res("100m", "100Mi"))]});
    resources_story(
        "ssrp-kruise",
        ss,
        pod,
        ("policy-sidecar", false),
        ("100m", "100Mi"),
        ("40m", "40Mi"),
    )
    .await;
}

/// "multi sidecarSet upgrade sidecar container, check pod condition": a SidecarSet whose
/// change cannot be rolled out in place keeps `SidecarSetUpgradable` False on its pods while
/// another SidecarSet upgrades them; once it can roll out too, the condition turns True.
#[tokio::test]
async fn two_sidecarsets_and_the_upgradable_condition() {
    let mut f = setup("ss-multi", &[]).await;
    let a = f
        .sidecarset(
            "multi-a",
            "multi",
            json!({"containers": [{"name": "sidecar-a",
            "image": "nginx:alpine", "command": ["tail", "-f", "/dev/null"]}]}),
        )
        .await
        .name_any();
    let b = f
        .sidecarset(
            "multi-b",
            "multi",
            json!({"containers": [{"name": "sidecar-b",
            "image": "nginx:alpine"}]}),
        )
        .await
        .name_any();
    f.deployment("multi", 2, json!({})).await;
    f.patch_spec(
        &a,
        json!({"containers": [{"name": "sidecar-a", "image": "nginx:alpine",
        "command": ["sleep", "1000"]}]}),
    )
    .await;
    f.wait_status(&a, "a: 0 updated", |st| {
        st.matched_pods == 2 && st.updated_pods == 0 && st.ready_pods == 2
    })
    .await;
    f.patch_spec(
        &b,
        json!({"containers": [{"name": "sidecar-b", "image": "nginx:mainline-alpine"}]}),
    )
    .await;
    f.wait_status(&b, "b: 2 updated ready", |st| {
        st.updated_pods == 2 && st.updated_ready_pods == Some(2)
    })
    .await;
    for p in f.pods("multi").await {
        assert_eq!(
            condition(&p, "SidecarSetUpgradable").as_deref(),
            Some("False")
        );
    }
    f.patch_spec(
        &a,
        json!({"containers": [{"name": "sidecar-a", "image": "nginx:mainline-alpine",
        "command": ["tail", "-f", "/dev/null"]}]}),
    )
    .await;
    f.wait_status(&a, "a: 2 updated ready", |st| {
        st.updated_pods == 2 && st.updated_ready_pods == Some(2)
    })
    .await;
    wait_for(
        "SidecarSetUpgradable True on both pods",
        TIMEOUT,
        || async {
            let pods = f.pods("multi").await;
            pods.iter()
                .all(|p| condition(p, "SidecarSetUpgradable").as_deref() == Some("True"))
                .then_some(())
        },
    )
    .await
    .unwrap();
}

/// "sidecarSet update init sidecar container, and don't upgrade": init containers (not native
/// sidecars) are injected at creation only, so changing them changes no hash.
#[tokio::test]
async fn init_container_changes_do_not_change_the_hash() {
    let mut f = setup("ss-init", &[]).await;
    let s = f
        .sidecarset(
            "init",
            "init",
            json!({"initContainers": [{"name": "init-sidecar",
            "image": "busybox:1.34", "command": ["true"]}]}),
        )
        .await;
    assert_eq!(
        s.spec.init_containers.as_ref().unwrap()[0]
            .pod_inject_policy
            .as_deref(),
        Some("AfterAppContainer")
    );
    assert_eq!(
        s.spec.containers.as_ref().unwrap()[0]
            .pod_inject_policy
            .as_deref(),
        Some("BeforeAppContainer")
    );
    let pods = f.deployment("init", 1, json!({})).await;
    let inits: Vec<String> = pods[0]
        .spec
        .as_ref()
        .unwrap()
        .init_containers
        .iter()
        .flatten()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(inits, ["init-sidecar"]);
    let name = s.name_any();
    let hash =
        f.sidecarsets.get(&name).await.unwrap().annotations()["kruise.io/sidecarset-hash"].clone();
    f.patch_spec(
        &name,
        json!({"initContainers": [{"name": "init-sidecar",
        "image": "busybox:does-not-exist", "command": ["true"]}]}),
    )
    .await;
    f.wait_status(&name, "observed", |st| st.updated_pods == 1)
        .await;
    let after =
        f.sidecarsets.get(&name).await.unwrap().annotations()["kruise.io/sidecarset-hash"].clone();
    assert_eq!(hash, after);
}

/// "sidecarSet inject pod sidecar during canary upgrades": with the Partial injection policy
/// pinned to the stable version and `updateStrategy.selector` on canary pods, new stable pods
/// get the stable sidecar and new canary pods get either (by the partition's probability —
/// with no partition: the new one).
#[tokio::test]
async fn canary_injection_with_the_partial_policy() {
    let mut f = setup("ss-canary", &[]).await;
    let name = f
        .sidecarset(
            "canary",
            "canary",
            json!({"customVersion": "0",
            "containers": [{"name": "nginx-sidecar", "image": "nginx:1.20.1"}]}),
        )
        .await
        .name_any();
    f.patch_spec(
        &name,
        json!({
        "customVersion": "1",
        "containers": [{"name": "nginx-sidecar", "image": "nginx:1.21.1",
            "env": [{"name": "SOME_ENV", "value": "SOME_VAL"}]}],
        "updateStrategy": {"selector": {"matchLabels": {"version": "canary"}}},
        "injectionStrategy": {"revision": {"customVersion": "0", "policy": "Partial"}}}),
    )
    .await;
    f.wait_status(&name, "observed", |_| true).await;
    for (track, want) in [("stable", "nginx:1.20.1"), ("canary", "nginx:1.21.1")] {
        let d: Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": track},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "canary", "version": track}},
                "template": {"metadata": {"labels": {"app": "canary", "version": track}},
                    "spec": {"terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "main", "image": "busybox:1.34"}]}}}}))
        .unwrap();
        f.ns.api::<Deployment>()
            .create(&PostParams::default(), &d)
            .await
            .unwrap();
        let pods = f.ns.api::<Pod>();
        let pod = wait_for(&format!("the {track} pod"), TIMEOUT, || async {
            pods.list(&ListParams::default().labels(&format!("version={track}")))
                .await
                .ok()?
                .items
                .into_iter()
                .next()
        })
        .await
        .unwrap();
        assert_eq!(image(&pod, "nginx-sidecar"), want, "{track}");
    }
}

/// "sidecarset with volumes.downwardAPI": a SidecarSet with a downward API volume is admitted
/// and its volume injected.
#[tokio::test]
async fn downward_api_volumes_are_admitted_and_injected() {
    let mut f = setup("ss-downward", &[]).await;
    f.sidecarset(
        "downward",
        "downward",
        json!({
        "volumes": [{"name": "podinfo", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "annotations", "fieldRef": {"fieldPath": "metadata.annotations"}}]}}],
        "containers": [{"name": "nginx-sidecar", "image": "nginx:alpine",
            "volumeMounts": [{"name": "podinfo", "mountPath": "/etc/podinfo"}]}]}),
    )
    .await;
    let pods = f.deployment("downward", 1, json!({})).await;
    let vols = pods[0]
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .clone()
        .unwrap_or_default();
    assert!(
        vols.iter()
            .any(|v| v.name == "podinfo" && v.downward_api.is_some())
    );
}

/// The v1alpha1 specs: a SidecarSet written as v1alpha1 (`spec.namespace`) is converted and
/// injects into the pods of that namespace only.
#[tokio::test]
async fn v1alpha1_sidecarsets_inject_through_conversion() {
    let mut f = setup("ss-v1alpha1", &[]).await;
    // v1alpha1 objects need the conversion webhook (the install's crd-conversion patch); the
    // manager points it at itself.
    let patch =
        kruise_e2e::repo_root().join("config/webhook/crd-conversion/webhook_in_sidecarsets.yaml");
    let out = kruise_e2e::kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager=kruise-conversion",
            "--force-conflicts",
            "-f",
            &patch.display().to_string(),
        ],
        None,
    )
    .unwrap();
    assert!(out.success, "{}", out.stderr);
    wait_for(
        "the conversion webhook to point at the manager",
        TIMEOUT,
        || async {
            let out = kruise_e2e::kubectl(
                &[
                    "get",
                    "crd",
                    "sidecarsets.apps.kruise.io",
                    "-o",
                    "jsonpath={.spec.conversion.webhook.clientConfig.url}",
                ],
                None,
            )
            .ok()?;
            out.stdout.contains("127.0.0.1").then_some(())
        },
    )
    .await
    .unwrap();
    let name = f.name("alpha");
    let s = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {"namespace": f.ns.name(), "selector": {"matchLabels": {"app": "alpha"}},
            "containers": [{"name": "nginx-sidecar", "image": "nginx:alpine"}]}});
    f.created.push(name.clone());
    // The API server takes the CRD's new client config into its serving storage asynchronously,
    // so the first write can still go to the install's `service`: retried until it converts.
    let mut last = String::new();
    let applied = wait_for("the v1alpha1 SidecarSet to be converted", TIMEOUT, || {
        let out = kruise_e2e::kubectl(&["apply", "-f", "-"], Some(&s.to_string())).unwrap();
        if !out.success {
            last = out.stderr;
        }
        async move { out.success.then_some(()) }
    })
    .await;
    assert!(applied.is_ok(), "{last}");
    f.wait_status(&name, "first status", |st| st.latest_revision.is_some())
        .await;
    let pods = f.deployment("alpha", 1, json!({})).await;
    assert_eq!(image(&pods[0], "nginx-sidecar"), "nginx:alpine");
    let stored = f.sidecarsets.get(&name).await.unwrap();
    assert_eq!(
        stored
            .spec
            .namespace_selector
            .unwrap()
            .match_labels
            .unwrap()["kubernetes.io/metadata.name"],
        f.ns.name()
    );
    let _ = kruise_e2e::kubectl(
        &[
            "patch",
            "crd",
            "sidecarsets.apps.kruise.io",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"conversion":{"strategy":"None","webhook":null}}}"#,
        ],
        None,
    );
}

/// The issue's restart scenario: pods a SidecarSet selects, created continuously while the
/// manager is killed and started again, are either injected or refused — never created
/// without their sidecar (the pod webhook fails closed for them).
#[tokio::test]
async fn pods_created_across_a_restart_are_injected_or_refused() {
    let mut f = setup("ss-restart", &[]).await;
    f.sidecarset("restart", "restart", json!({})).await;
    let pods = f.ns.api::<Pod>();
    let creator = {
        let pods = pods.clone();
        tokio::spawn(async move {
            let (mut ok, mut refused) = (0, 0);
            for i in 0..60 {
                let p: Pod = serde_json::from_value(json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": format!("p{i}"), "labels": {"app": "restart"}},
                    "spec": {"terminationGracePeriodSeconds": 1,
                        "containers": [{"name": "main", "image": "busybox:1.34"}]}}))
                .unwrap();
                match pods.create(&PostParams::default(), &p).await {
                    Ok(_) => ok += 1,
                    Err(_) => refused += 1,
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (ok, refused)
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    f.manager.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    f.manager.restart(TIMEOUT).await;
    let (ok, refused) = creator.await.unwrap();
    assert!(refused > 0, "no create hit the killed manager");
    assert!(ok > 0);
    let list = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(list.len(), ok);
    for p in &list {
        assert!(
            containers(p).iter().any(|(n, _)| n == "nginx-sidecar"),
            "{} was created without its sidecar",
            p.name_any()
        );
    }
}
