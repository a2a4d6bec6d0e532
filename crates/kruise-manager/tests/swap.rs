//! The live swap (#34 item 4): a cluster running a Kruise manager with ≥ 300 pods of CloneSets,
//! Advanced StatefulSets, Advanced DaemonSets and a SidecarSet switches its manager to
//! kruise-rs, rolls every workload out in place, switches back and rolls out again. Watches on
//! the pods and the ControllerRevisions record everything that happens; a swap itself must
//! create, delete and restart no pod, create and delete no ControllerRevision and change no hash
//! label or annotation, and the rollouts after it must complete in place (the same pods).
//!
//! The other side is chosen by `KRUISE_SWAP_OPENKRUISE_SRC`:
//! - set (`hack/swap/swap.sh`): an OpenKruise v1.9.0 source tree; OpenKruise's manager and daemon
//!   are built from it into the testbed registry and installed with its own `config/default`
//!   (`hack/swap/openkruise.sh`); the swap deletes its Deployment, DaemonSet and webhook
//!   configurations and `helm install --take-ownership`s kruise-rs' chart; back: `helm
//!   uninstall` (the chart keeps the CRDs) and OpenKruise's manifests applied again.
//! - unset (`make test`: the Go module proxy has no copy of the v1.9.0 tag, see
//!   hack/swap/openkruise.sh): kruise-rs on both sides — uninstall and install the chart (the
//!   CRDs and every workload stay), i.e. a cold start of a new installation over running
//!   workloads, twice.
//!
//! Figures (pods and revisions per phase, timings) are printed; run with `--nocapture`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kruise_e2e::install::{
    ImageKind, helm, openkruise_image, openkruise_manifest, push_images, testbed_values,
};
use kruise_e2e::testbed::OwnTestbed;
use kruise_e2e::{dynamic_api, dynamic_object, pod_ready, wait_for, wait_for_list};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// Port block of this test's testbed (16440 shared, 23440 modular.rs, 24440 incluster.rs).
const BASE: u16 = 25440;
const TIMEOUT: Duration = Duration::from_secs(300);
const SYSTEM: &str = "kruise-system";
const NS: &str = "swap";
/// How long a newly installed manager is watched doing nothing before the swap's books close.
const SETTLE: Duration = Duration::from_secs(30);
const CLONESET_REPLICAS: i64 = 200;
const ASTS_REPLICAS: i64 = 100;

/// A manager installation.
#[derive(Clone)]
enum Side {
    /// OpenKruise from a v1.9.0 source tree, with its own manifests.
    OpenKruise(PathBuf),
    /// kruise-rs' chart with these values.
    KruiseRs(PathBuf),
}

impl Side {
    fn name(&self) -> &'static str {
        match self {
            Side::OpenKruise(_) => "OpenKruise v1.9.0",
            Side::KruiseRs(_) => "kruise-rs",
        }
    }

    async fn install(&self, tb: &OwnTestbed, client: &Client) {
        let t = Instant::now();
        match self {
            Side::OpenKruise(src) => {
                let manifest = openkruise_manifest(tb, src).expect("OpenKruise's manifests");
                // The kruise-system Namespace of a just-uninstalled chart may still terminate.
                wait_for("OpenKruise's manifests applied", TIMEOUT, || async {
                    tb.kubectl(
                        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
                        Some(&manifest),
                    )
                    .map_err(|e| println!("apply: {e}"))
                    .ok()
                })
                .await
                .expect("apply");
                let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
                for (selector, n) in [
                    ("control-plane=controller-manager", 2),
                    ("control-plane=daemon", 1),
                ] {
                    wait_for_list(
                        &pods,
                        &ListParams::default().labels(selector),
                        selector,
                        TIMEOUT,
                        |p| {
                            p.len() == n
                                && p.iter().all(|p| {
                                    p.metadata.deletion_timestamp.is_none() && pod_ready(p)
                                })
                        },
                    )
                    .await
                    .expect("OpenKruise's pods Ready");
                }
            }
            Side::KruiseRs(values) => {
                helm(
                    tb,
                    &[
                        "install",
                        "kruise",
                        "charts/kruise-rs",
                        "-f",
                        values.to_str().expect("path"),
                        "--take-ownership",
                        "--wait",
                        "--timeout",
                        "5m",
                    ],
                )
                .expect("helm install");
            }
        }
        wait_webhooks(client).await;
        println!(
            "{} installed and answering admission in {:.0} s",
            self.name(),
            t.elapsed().as_secs_f64()
        );
    }

    async fn remove(&self, tb: &OwnTestbed, client: &Client) {
        match self {
            Side::OpenKruise(_) => {
                // What a user does to leave OpenKruise without deleting its CRDs: the webhook
                // configurations first (nothing answers them once the manager is gone), then
                // the manager and the daemon.
                for kind in [
                    "mutatingwebhookconfiguration/kruise-mutating-webhook-configuration",
                    "validatingwebhookconfiguration/kruise-validating-webhook-configuration",
                ] {
                    tb.kubectl(&["delete", kind, "--wait"], None)
                        .expect("delete webhook configuration");
                }
                tb.kubectl(
                    &[
                        "-n",
                        SYSTEM,
                        "delete",
                        "deployment/kruise-controller-manager",
                        "daemonset/kruise-daemon",
                        "--wait",
                    ],
                    None,
                )
                .expect("delete OpenKruise's manager and daemon");
                let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
                wait_for_list(
                    &pods,
                    &ListParams::default(),
                    "OpenKruise's pods gone",
                    TIMEOUT,
                    |p| p.is_empty(),
                )
                .await
                .expect("pods gone");
            }
            Side::KruiseRs(_) => {
                helm(tb, &["uninstall", "kruise", "--wait", "--timeout", "5m"])
                    .expect("helm uninstall");
            }
        }
    }
}

/// Until a dry-run CloneSet create comes back defaulted (the mutating webhook answered).
async fn wait_webhooks(client: &Client) {
    let api = dynamic_api(
        client,
        Some(NS),
        ("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    );
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let probe = dynamic_object(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "webhook-probe"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}},
            "template": {"metadata": {"labels": {"app": "probe"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    }));
    wait_for("the webhooks answer", TIMEOUT, || async {
        api.create(&pp, &probe)
            .await
            .ok()
            .filter(|o| o.data["spec"]["updateStrategy"]["type"] == "ReCreate")
    })
    .await
    .expect("webhooks");
}

/// What the watches saw, with the time they saw it.
#[derive(Debug, Clone)]
enum Seen {
    PodCreated(String),
    PodDeleted(String),
    /// Restart counts or container IDs changed.
    PodRestarted(String, String),
    /// The spec's container images changed (an in-place update).
    PodUpdated(String),
    /// A label or annotation whose key names a hash (`controller-revision-hash`,
    /// `kruise.io/sidecarset-hash`, ...) changed.
    PodHashChanged(String, String),
    /// Any other label or annotation changed (printed, not asserted).
    PodMetadata(String, String),
    RevisionCreated(String),
    RevisionDeleted(String),
}

#[derive(Default)]
struct Log {
    events: Vec<(Instant, Seen)>,
    /// The watch broke (410 Gone, ...): the record is incomplete.
    broken: Option<String>,
}

/// The part of a pod the watches compare.
#[derive(Clone, PartialEq)]
struct PodState {
    restarts: BTreeMap<String, (i32, Option<String>)>,
    images: Vec<Option<String>>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

impl PodState {
    fn of(p: &Pod) -> Self {
        let mut restarts = BTreeMap::new();
        if let Some(s) = &p.status {
            for c in s.container_statuses.iter().flatten() {
                restarts.insert(c.name.clone(), (c.restart_count, c.container_id.clone()));
            }
        }
        Self {
            restarts,
            images: p
                .spec
                .iter()
                .flat_map(|s| s.containers.iter().map(|c| c.image.clone()))
                .collect(),
            labels: p.labels().clone(),
            annotations: p.annotations().clone(),
        }
    }
}

fn metadata_changes(name: &str, old: &PodState, new: &PodState, out: &mut Vec<Seen>) {
    for (what, a, b) in [
        ("label", &old.labels, &new.labels),
        ("annotation", &old.annotations, &new.annotations),
    ] {
        let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
        for k in keys {
            if a.get(k) != b.get(k) {
                let d = format!("{what} {k}: {:?} -> {:?}", a.get(k), b.get(k));
                out.push(if k.contains("hash") {
                    Seen::PodHashChanged(name.to_string(), d)
                } else {
                    Seen::PodMetadata(name.to_string(), d)
                });
            }
        }
    }
}

/// Watches the pods and ControllerRevisions of [`NS`] from the state of `pods` / the lists'
/// resource versions until dropped.
struct Recorder {
    log: Arc<Mutex<Log>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Recorder {
    async fn start(client: &Client) -> Self {
        let log = Arc::new(Mutex::new(Log::default()));
        let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
        let list = pods.list(&ListParams::default()).await.expect("pods");
        let mut known: HashMap<String, PodState> = list
            .items
            .iter()
            .map(|p| (p.uid().unwrap_or_default(), PodState::of(p)))
            .collect();
        let mut rv = list.metadata.resource_version.expect("resourceVersion");
        let l = log.clone();
        let pod_task = tokio::spawn(async move {
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = match pods.watch(&wp, &rv).await {
                    Ok(s) => s.boxed(),
                    Err(e) => {
                        l.lock().unwrap().broken = Some(format!("pod watch: {e}"));
                        return;
                    }
                };
                while let Some(ev) = stream.try_next().await.ok().flatten() {
                    let mut seen = Vec::new();
                    match ev {
                        WatchEvent::Added(p) | WatchEvent::Modified(p) => {
                            rv = p.resource_version().unwrap_or_default();
                            let uid = p.uid().unwrap_or_default();
                            let name = p.name_any();
                            let new = PodState::of(&p);
                            match known.insert(uid, new.clone()) {
                                None => seen.push(Seen::PodCreated(name)),
                                Some(old) if old != new => {
                                    if old.restarts != new.restarts
                                        && old.restarts.keys().eq(new.restarts.keys())
                                    {
                                        seen.push(Seen::PodRestarted(
                                            name.clone(),
                                            format!("{:?} -> {:?}", old.restarts, new.restarts),
                                        ));
                                    }
                                    if old.images != new.images {
                                        seen.push(Seen::PodUpdated(name.clone()));
                                    }
                                    metadata_changes(&name, &old, &new, &mut seen);
                                }
                                Some(_) => {}
                            }
                        }
                        WatchEvent::Deleted(p) => {
                            rv = p.resource_version().unwrap_or_default();
                            known.remove(&p.uid().unwrap_or_default());
                            seen.push(Seen::PodDeleted(p.name_any()));
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(e) => {
                            l.lock().unwrap().broken = Some(format!("pod watch: {e:?}"));
                            return;
                        }
                    }
                    let now = Instant::now();
                    l.lock()
                        .unwrap()
                        .events
                        .extend(seen.into_iter().map(|s| (now, s)));
                }
            }
        });
        let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), NS);
        let list = revisions
            .list(&ListParams::default())
            .await
            .expect("revisions");
        let mut rv = list.metadata.resource_version.expect("resourceVersion");
        let l = log.clone();
        let revision_task = tokio::spawn(async move {
            loop {
                let wp = WatchParams::default().timeout(290);
                let mut stream = match revisions.watch(&wp, &rv).await {
                    Ok(s) => s.boxed(),
                    Err(e) => {
                        l.lock().unwrap().broken = Some(format!("revision watch: {e}"));
                        return;
                    }
                };
                while let Some(ev) = stream.try_next().await.ok().flatten() {
                    let seen = match ev {
                        WatchEvent::Added(r) => {
                            rv = r.resource_version().unwrap_or_default();
                            Some(Seen::RevisionCreated(r.name_any()))
                        }
                        WatchEvent::Modified(r) => {
                            rv = r.resource_version().unwrap_or_default();
                            None
                        }
                        WatchEvent::Deleted(r) => {
                            rv = r.resource_version().unwrap_or_default();
                            Some(Seen::RevisionDeleted(r.name_any()))
                        }
                        WatchEvent::Bookmark(b) => {
                            rv = b.metadata.resource_version;
                            None
                        }
                        WatchEvent::Error(e) => {
                            l.lock().unwrap().broken = Some(format!("revision watch: {e:?}"));
                            return;
                        }
                    };
                    if let Some(s) = seen {
                        l.lock().unwrap().events.push((Instant::now(), s));
                    }
                }
            }
        });
        Self {
            log,
            tasks: vec![pod_task, revision_task],
        }
    }

    /// Everything seen since `since`.
    fn since(&self, since: Instant) -> Vec<Seen> {
        let log = self.log.lock().unwrap();
        assert!(log.broken.is_none(), "the watch broke: {:?}", log.broken);
        log.events
            .iter()
            .filter(|(t, _)| *t >= since)
            .map(|(_, s)| s.clone())
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Counts of a phase: created, deleted, restarted, updated pods, hash changes, revisions
/// created and deleted, other metadata changes.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    pods_created: usize,
    pods_deleted: usize,
    pods_restarted: usize,
    pods_updated: usize,
    hash_changes: usize,
    revisions_created: usize,
    revisions_deleted: usize,
    other_metadata: usize,
}

fn tally(phase: &str, seen: &[Seen]) -> Tally {
    let mut t = Tally::default();
    let mut samples: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in seen {
        let (key, sample) = match s {
            Seen::PodCreated(n) => {
                t.pods_created += 1;
                ("created", n.clone())
            }
            Seen::PodDeleted(n) => {
                t.pods_deleted += 1;
                ("deleted", n.clone())
            }
            Seen::PodRestarted(n, d) => {
                t.pods_restarted += 1;
                ("restarted", format!("{n}: {d}"))
            }
            Seen::PodUpdated(n) => {
                t.pods_updated += 1;
                ("updated", n.clone())
            }
            Seen::PodHashChanged(n, d) => {
                t.hash_changes += 1;
                ("hash", format!("{n}: {d}"))
            }
            Seen::PodMetadata(n, d) => {
                t.other_metadata += 1;
                ("metadata", format!("{n}: {d}"))
            }
            Seen::RevisionCreated(n) => {
                t.revisions_created += 1;
                ("revision created", n.clone())
            }
            Seen::RevisionDeleted(n) => {
                t.revisions_deleted += 1;
                ("revision deleted", n.clone())
            }
        };
        let v = samples.entry(key).or_default();
        if v.len() < 3 {
            v.push(sample);
        }
    }
    println!("{phase}: {t:?}");
    for (k, v) in samples {
        println!("  {k}, e.g. {v:?}");
    }
    t
}

struct Workloads {
    cloneset: Api<DynamicObject>,
    asts: Api<DynamicObject>,
    ads: Api<DynamicObject>,
    sidecarset: Api<DynamicObject>,
}

impl Workloads {
    fn new(client: &Client) -> Self {
        Self {
            cloneset: dynamic_api(
                client,
                Some(NS),
                ("apps.kruise.io", "v1alpha1", "CloneSet"),
                "clonesets",
            ),
            asts: dynamic_api(
                client,
                Some(NS),
                ("apps.kruise.io", "v1beta1", "StatefulSet"),
                "statefulsets",
            ),
            ads: dynamic_api(
                client,
                Some(NS),
                ("apps.kruise.io", "v1alpha1", "DaemonSet"),
                "daemonsets",
            ),
            sidecarset: dynamic_api(
                client,
                None,
                ("apps.kruise.io", "v1alpha1", "SidecarSet"),
                "sidecarsets",
            ),
        }
    }

    async fn create(&self) {
        let pp = PostParams::default();
        let kwok = json!({"type": "kwok"});
        self.sidecarset
            .create(&pp, &dynamic_object(json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
                "metadata": {"name": "swap-agent"},
                "spec": {"selector": {"matchLabels": {"swap-sidecar": "agent"}},
                    "namespace": NS,
                    "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": "50%"},
                    "containers": [{"name": "agent", "image": "busybox:1.36", "command": ["sleep", "3600"]}]},
            })))
            .await
            .expect("SidecarSet");
        self.cloneset
            .create(&pp, &dynamic_object(json!({
                "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                "metadata": {"name": "web"},
                "spec": {"replicas": CLONESET_REPLICAS, "selector": {"matchLabels": {"app": "web"}},
                    "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": "50%"},
                    "template": {"metadata": {"labels": {"app": "web", "swap-sidecar": "agent"}},
                        "spec": {"nodeSelector": kwok,
                            "containers": [{"name": "main", "image": "nginx:1.25"}]}}},
            })))
            .await
            .expect("CloneSet");
        self.asts
            .create(&pp, &dynamic_object(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                "metadata": {"name": "db"},
                "spec": {"replicas": ASTS_REPLICAS, "serviceName": "db", "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": {"app": "db"}},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                        "podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": "50%"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                        "spec": {"nodeSelector": kwok,
                            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                            "containers": [{"name": "main", "image": "nginx:1.25"}]}}},
            })))
            .await
            .expect("Advanced StatefulSet");
        self.ads
            .create(
                &pp,
                &dynamic_object(json!({
                    "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
                    "metadata": {"name": "node-agent"},
                    "spec": {"selector": {"matchLabels": {"app": "node-agent"}},
                        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                            "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1}},
                        "template": {"metadata": {"labels": {"app": "node-agent"}},
                            "spec": {"nodeSelector": kwok,
                                "containers": [{"name": "main", "image": "nginx:1.25"}]}}},
                })),
            )
            .await
            .expect("Advanced DaemonSet");
    }

    /// Waits until every workload has observed its generation and has all pods updated and
    /// ready.
    async fn rolled_out(&self, what: &str) {
        let t0 = Instant::now();
        let done = |o: &DynamicObject, replicas: i64| {
            let s = &o.data["status"];
            s["observedGeneration"].as_i64() == o.metadata.generation
                && s["readyReplicas"].as_i64() == Some(replicas)
                && s["updatedReplicas"].as_i64() == Some(replicas)
                && s["updatedReadyReplicas"].as_i64() == Some(replicas)
                && s["updateRevision"] == s["currentRevision"]
        };
        wait_for(&format!("{what}: CloneSet web"), TIMEOUT, || async {
            self.cloneset
                .get("web")
                .await
                .ok()
                .filter(|o| done(o, CLONESET_REPLICAS))
        })
        .await
        .expect("CloneSet rolled out");
        println!(
            "  {what}: CloneSet done after {:.0} s",
            t0.elapsed().as_secs_f64()
        );
        wait_for(
            &format!("{what}: Advanced StatefulSet db"),
            TIMEOUT,
            || async {
                self.asts
                    .get("db")
                    .await
                    .ok()
                    .filter(|o| done(o, ASTS_REPLICAS))
            },
        )
        .await
        .expect("Advanced StatefulSet rolled out");
        println!(
            "  {what}: Advanced StatefulSet done after {:.0} s",
            t0.elapsed().as_secs_f64()
        );
        wait_for(
            &format!("{what}: Advanced DaemonSet node-agent"),
            TIMEOUT,
            || async {
                self.ads.get("node-agent").await.ok().filter(|o| {
                    let s = &o.data["status"];
                    let desired = s["desiredNumberScheduled"].as_i64().unwrap_or(0);
                    desired > 0
                        && s["observedGeneration"].as_i64() == o.metadata.generation
                        && s["numberReady"].as_i64() == Some(desired)
                        && s["updatedNumberScheduled"].as_i64() == Some(desired)
                })
            },
        )
        .await
        .expect("Advanced DaemonSet rolled out");
        println!(
            "  {what}: Advanced DaemonSet done after {:.0} s",
            t0.elapsed().as_secs_f64()
        );
        wait_for(
            &format!("{what}: SidecarSet swap-agent"),
            TIMEOUT,
            || async {
                self.sidecarset.get("swap-agent").await.ok().filter(|o| {
                    let s = &o.data["status"];
                    s["observedGeneration"].as_i64() == o.metadata.generation
                        && s["matchedPods"].as_i64() == Some(CLONESET_REPLICAS)
                        && s["updatedPods"].as_i64() == Some(CLONESET_REPLICAS)
                        && s["updatedReadyPods"].as_i64() == Some(CLONESET_REPLICAS)
                })
            },
        )
        .await
        .expect("SidecarSet rolled out");
        println!(
            "  {what}: SidecarSet done after {:.0} s",
            t0.elapsed().as_secs_f64()
        );
    }

    /// The revisions the workloads' status names (compared across a swap).
    async fn revisions(&self) -> Vec<(String, Value)> {
        let cs = self.cloneset.get("web").await.expect("web");
        let st = self.asts.get("db").await.expect("db");
        let ds = self.ads.get("node-agent").await.expect("node-agent");
        let sc = self.sidecarset.get("swap-agent").await.expect("swap-agent");
        vec![
            (
                "CloneSet updateRevision".into(),
                cs.data["status"]["updateRevision"].clone(),
            ),
            (
                "CloneSet currentRevision".into(),
                cs.data["status"]["currentRevision"].clone(),
            ),
            (
                "StatefulSet updateRevision".into(),
                st.data["status"]["updateRevision"].clone(),
            ),
            (
                "StatefulSet currentRevision".into(),
                st.data["status"]["currentRevision"].clone(),
            ),
            (
                "DaemonSet daemonSetHash".into(),
                ds.data["status"]["daemonSetHash"].clone(),
            ),
            (
                "SidecarSet hash".into(),
                sc.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kruise.io/sidecarset-hash"))
                    .map(|h| json!(h))
                    .unwrap_or_default(),
            ),
        ]
    }

    /// An in-place rollout of every workload: image `nginx` for the apps' container, `busybox`
    /// for the sidecar.
    async fn update(&self, nginx: &str, busybox: &str) {
        let pp = PatchParams::default();
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": nginx}]}}}});
        self.cloneset
            .patch("web", &pp, &Patch::Merge(image.clone()))
            .await
            .expect("CloneSet");
        self.asts
            .patch("db", &pp, &Patch::Merge(image.clone()))
            .await
            .expect("StatefulSet");
        self.ads
            .patch("node-agent", &pp, &Patch::Merge(image))
            .await
            .expect("DaemonSet");
        let sc = self.sidecarset.get("swap-agent").await.expect("SidecarSet");
        let mut containers = sc.data["spec"]["containers"].clone();
        containers[0]["image"] = json!(busybox);
        self.sidecarset
            .patch(
                "swap-agent",
                &pp,
                &Patch::Merge(json!({"spec": {"containers": containers}})),
            )
            .await
            .expect("SidecarSet");
    }
}

async fn pod_uids(client: &Client) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let mut uids: Vec<_> = pods
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
        .iter()
        .map(|p| p.uid().unwrap_or_default())
        .collect();
    uids.sort();
    uids
}

/// Waits until a current pod of kruise-system holds the manager's Lease.
async fn leader_elected(client: &Client) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), SYSTEM);
    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
    wait_for(
        "a leader among the running manager pods",
        TIMEOUT,
        || async {
            let lease = leases.get_opt("kruise-manager").await.ok()??;
            let holder = lease.spec?.holder_identity?;
            let pod = holder.split_once('_').map_or(holder.as_str(), |h| h.0);
            let p = pods.get_opt(pod).await.ok()??;
            p.metadata.deletion_timestamp.is_none().then_some(holder)
        },
    )
    .await
    .expect("leader");
}

/// The leader's client-side throttling so far: (requests, seconds waited), summed over verbs,
/// from `rest_client_rate_limiter_duration_seconds` on its metrics port (the chart's 8080; pod
/// addresses on the real nodes are reachable from the host). `None` when not scraped.
async fn throttle_totals(client: &Client) -> Option<(f64, f64)> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), SYSTEM);
    let pods: Api<Pod> = Api::namespaced(client.clone(), SYSTEM);
    let holder = leases
        .get("kruise-manager")
        .await
        .ok()?
        .spec?
        .holder_identity?;
    let pod = pods.get(holder.split_once('_')?.0).await.ok()?;
    let ip = pod.status?.pod_ip?;
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            "--max-time",
            "5",
            &format!("http://{ip}:8080/metrics"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut count, mut sum) = (0.0, 0.0);
    for line in text.lines() {
        let value = || line.rsplit(' ').next()?.parse::<f64>().ok();
        if line.starts_with("rest_client_rate_limiter_duration_seconds_count") {
            count += value()?;
        } else if line.starts_with("rest_client_rate_limiter_duration_seconds_sum") {
            sum += value()?;
        }
    }
    Some((count, sum))
}

/// One direction: `from` is removed, `to` installed; asserts the swap changed nothing, then
/// rolls everything out in place under `to`.
async fn swap(
    tb: &OwnTestbed,
    client: &Client,
    recorder: &Recorder,
    workloads: &Workloads,
    from: &Side,
    to: &Side,
    images: (&str, &str),
) {
    let uids = pod_uids(client).await;
    let revisions = workloads.revisions().await;
    let t0 = Instant::now();
    from.remove(tb, client).await;
    to.install(tb, client).await;
    leader_elected(client).await;
    tokio::time::sleep(SETTLE).await;
    workloads
        .rolled_out(&format!("after the swap to {}", to.name()))
        .await;
    let phase = format!("swap {} -> {}", from.name(), to.name());
    let t = tally(&phase, &recorder.since(t0));
    println!("{phase}: {:.0} s", t0.elapsed().as_secs_f64());
    assert_eq!(
        (
            t.pods_created,
            t.pods_deleted,
            t.pods_restarted,
            t.pods_updated
        ),
        (0, 0, 0, 0),
        "{phase}: pods created, deleted, restarted, updated"
    );
    assert_eq!(
        (t.revisions_created, t.revisions_deleted, t.hash_changes),
        (0, 0, 0),
        "{phase}: revisions created, deleted, hash labels changed"
    );
    assert_eq!(pod_uids(client).await, uids, "{phase}: the same pods");
    assert_eq!(
        workloads.revisions().await,
        revisions,
        "{phase}: the workloads' revisions"
    );

    // Rollouts under the new manager, in place.
    let t1 = Instant::now();
    let kruise_rs = matches!(to, Side::KruiseRs(_));
    let throttle_before = if kruise_rs {
        throttle_totals(client).await
    } else {
        None
    };
    workloads.update(images.0, images.1).await;
    workloads
        .rolled_out(&format!("in-place rollout under {}", to.name()))
        .await;
    let phase = format!("rollout under {}", to.name());
    let t = tally(&phase, &recorder.since(t1));
    println!("{phase}: {:.0} s", t1.elapsed().as_secs_f64());
    if let (Some(a), Some(b)) = (throttle_before, throttle_totals(client).await) {
        println!(
            "{phase}: the leader's client throttle: {:.0} requests, {:.1} s waited in all",
            b.0 - a.0,
            b.1 - a.1
        );
    }
    assert_eq!(
        (t.pods_created, t.pods_deleted),
        (0, 0),
        "{phase}: in place, no pod created or deleted"
    );
    // Each of CloneSet, StatefulSet and DaemonSet records one new revision.
    assert_eq!(
        (t.revisions_created, t.revisions_deleted),
        (3, 0),
        "{phase}: revisions"
    );
    assert_eq!(pod_uids(client).await, uids, "{phase}: the same pods");
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    for p in pods.list(&ListParams::default()).await.expect("pods").items {
        for c in &p.spec.as_ref().expect("spec").containers {
            let want = if c.name == "agent" {
                images.1
            } else {
                images.0
            };
            assert_eq!(
                c.image.as_deref(),
                Some(want),
                "{}/{}",
                p.name_any(),
                c.name
            );
        }
    }
}

#[tokio::test]
async fn swap_managers_with_running_workloads() {
    let tb = OwnTestbed::up("swap", BASE, 3, 1).expect("testbed");
    let client = tb.client().await.expect("client");
    let registry = tb.env_var("KRUISE_TESTBED_REGISTRY").expect("registry");
    let tag = push_images(&registry, ImageKind::from_env()).expect("kruise-rs images");
    let kruise_rs = Side::KruiseRs(testbed_values(&tb, &tag).expect("values"));
    let other = match std::env::var_os("KRUISE_SWAP_OPENKRUISE_SRC") {
        Some(src) => {
            let src = PathBuf::from(src);
            let t = Instant::now();
            openkruise_image(&tb, &src).expect("OpenKruise image");
            println!(
                "OpenKruise image from {} in {:.0} s",
                src.display(),
                t.elapsed().as_secs_f64()
            );
            Side::OpenKruise(src)
        }
        None => kruise_rs.clone(),
    };
    tb.kubectl(&["create", "namespace", NS], None)
        .expect("namespace");
    other.install(&tb, &client).await;

    let workloads = Workloads::new(&client);
    let t = Instant::now();
    workloads.create().await;
    workloads
        .rolled_out(&format!("created under {}", other.name()))
        .await;
    let pods = pod_uids(&client).await.len();
    println!(
        "{pods} pods up under {} in {:.0} s",
        other.name(),
        t.elapsed().as_secs_f64()
    );
    assert!(pods >= 300, "{pods} pods");

    let recorder = Recorder::start(&client).await;
    swap(
        &tb,
        &client,
        &recorder,
        &workloads,
        &other,
        &kruise_rs,
        ("nginx:1.26", "busybox:1.37"),
    )
    .await;
    swap(
        &tb,
        &client,
        &recorder,
        &workloads,
        &kruise_rs,
        &other,
        ("nginx:1.27", "busybox:1.38"),
    )
    .await;

    // Leave the instance clean for a KEEP run: the workloads first, then the manager.
    for (api, name) in [
        (&workloads.cloneset, "web"),
        (&workloads.asts, "db"),
        (&workloads.ads, "node-agent"),
    ] {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    workloads
        .sidecarset
        .delete("swap-agent", &DeleteParams::default())
        .await
        .expect("delete");
}
