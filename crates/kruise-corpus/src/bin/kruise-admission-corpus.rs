//! `kruise-admission-corpus`: records OpenKruise v1.9.0's admission verdicts for the cases of
//! [`kruise_corpus`] into `tests/admission-corpus/<corpus>.jsonl` (how to run the Go
//! manager for it: `hack/admission-corpus/README.md`).
//!
//! `record` posts every case as an AdmissionReview (admission.k8s.io/v1) straight to the
//! manager's webhook server, the way the API server would: the mutating webhook first, its JSON
//! patch applied, then the validating webhook on the mutated object. For UPDATE cases the old
//! object is first sent through the mutating webhook as a CREATE (what the API server would have
//! stored). Existing `deviation` marks are kept by case id. `list` prints the case counts.
//!
//! A corpus that needs objects in the cluster ([`corpus::Corpus::cluster`], e.g. other
//! SidecarSets) gets them created through the API server (so OpenKruise's webhooks and
//! controllers see them) before its first case and deleted after its last; what the cluster
//! then held (SidecarSets with their status, ConfigMap `kruise-configuration`, the
//! ControllerRevisions of the manager's namespace, and when the corpus declares Namespaces those
//! and the namespaces its cases name; volatile metadata removed) is written to
//! `<corpus>.cluster.json` for the replay. Each request names the case's namespace. The API
//! server is the one `KUBECONFIG` names.
//!
//! Exits non-zero with a reason when the manager cannot be reached or answers malformed JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand};
use kruise_corpus::{self as corpus, Answer, Case, Record};
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(name = "kruise-admission-corpus", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print each corpus and its number of cases.
    List,
    /// Filter OpenKruise's rendered manifests (`kubectl kustomize config/default`, on stdin) to
    /// what an out-of-cluster manager needs (Namespace, CustomResourceDefinition, webhook
    /// configurations, ClusterRole) with every webhook called by URL at `--url`; YAML on stdout.
    Manifests {
        /// Base URL the API server calls the webhooks at.
        #[arg(long, default_value = "https://127.0.0.1:9876")]
        url: String,
    },
    /// Send every case through a running OpenKruise manager's webhook server and write the
    /// recorded verdicts.
    Record {
        /// Base URL of the manager's webhook server.
        #[arg(long, default_value = "https://127.0.0.1:9876")]
        url: String,
        /// CA certificate (PEM) the serving certificate is signed by (the manager's
        /// WEBHOOK_CERT_DIR/ca-cert.pem).
        #[arg(long)]
        ca: PathBuf,
        /// Output directory.
        #[arg(long, default_value = "tests/admission-corpus")]
        out: PathBuf,
        /// Record only these corpora (default: all).
        #[arg(long = "only")]
        only: Vec<String>,
    },
}

fn paths(group: &str, kind: &str) -> (Option<&'static str>, Option<&'static str>) {
    match (group, kind) {
        ("apps", "Deployment") => (None, Some("/validate-apps-deployment")),
        ("apps", "ReplicaSet") => (None, Some("/validate-apps-replicaset")),
        ("apps", "StatefulSet") => (None, Some("/validate-apps-statefulset")),
        ("apps.kruise.io", "UnitedDeployment") => (
            None,
            Some("/validate-apps-kruise-io-v1alpha1-uniteddeployment"),
        ),
        ("", "Namespace") => (None, Some("/validate-namespace")),
        ("", "Service") => (None, Some("/validate-service")),
        ("networking.k8s.io", "Ingress") => (None, Some("/validate-ingress")),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            (None, Some("/validate-customresourcedefinition"))
        }
        _ => paths_of_kind(kind),
    }
}

fn paths_of_kind(kind: &str) -> (Option<&'static str>, Option<&'static str>) {
    match kind {
        "CloneSet" => (
            Some("/mutate-apps-kruise-io-v1alpha1-cloneset"),
            Some("/validate-apps-kruise-io-v1alpha1-cloneset"),
        ),
        "StatefulSet" => (
            Some("/mutate-apps-kruise-io-statefulset"),
            Some("/validate-apps-kruise-io-statefulset"),
        ),
        "DaemonSet" => (
            Some("/mutate-apps-kruise-io-daemonset"),
            Some("/validate-apps-kruise-io-daemonset"),
        ),
        "Pod" => (Some("/mutate-pod"), None),
        "ContainerRecreateRequest" => (
            Some("/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest"),
            None,
        ),
        "SidecarSet" => (
            Some("/mutate-apps-kruise-io-sidecarset"),
            Some("/validate-apps-kruise-io-sidecarset"),
        ),
        "BroadcastJob" => (
            Some("/mutate-apps-kruise-io-broadcastjob"),
            Some("/validate-apps-kruise-io-broadcastjob"),
        ),
        "PodUnavailableBudget" => (
            None,
            Some("/validate-policy-kruise-io-podunavailablebudget"),
        ),
        "AdvancedCronJob" => (
            Some("/mutate-apps-kruise-io-advancedcronjob"),
            Some("/validate-apps-kruise-io-advancedcronjob"),
        ),
        "EphemeralJob" => (None, Some("/validate-apps-kruise-io-v1alpha1-ephemeraljob")),
        "PersistentPodState" => (None, Some("/validate-apps-kruise-io-persistentpodstate")),
        "PodProbeMarker" => (None, Some("/validate-apps-kruise-io-podprobemarker")),
        "ResourceDistribution" => (
            None,
            Some("/validate-apps-kruise-io-v1alpha1-resourcedistribution"),
        ),
        "WorkloadSpread" => (
            None,
            Some("/validate-apps-kruise-io-v1alpha1-workloadspread"),
        ),
        _ => (None, None),
    }
}

struct Recorder {
    http: reqwest::Client,
    url: String,
    seq: u64,
}

impl Recorder {
    async fn post(
        &mut self,
        path: &str,
        case: &Case,
        operation: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Answer> {
        self.seq += 1;
        let name = object
            .or(old)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let gvk = json!({"group": case.group, "version": case.version, "kind": case.kind});
        let gvr = json!({"group": case.group, "version": case.version, "resource": case.resource});
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": format!("00000000-0000-4000-8000-{:012}", self.seq),
                "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
                "name": name, "namespace": case.request_namespace(), "operation": operation,
                "userInfo": {"username": "kruise-admission-corpus"},
                "object": object, "oldObject": old, "dryRun": case.dry_run,
                "options": if operation == "DELETE" { json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}) }
                           else if operation == "UPDATE" { json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}) }
                           else { json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}) }
            }
        });
        let resp = self
            .http
            .post(format!("{}{path}", self.url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&review)?)
            .send()
            .await
            .with_context(|| format!("POST {path} for case {}", case.id))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .with_context(|| format!("case {}: reading the answer of {path}", case.id))?;
        let body: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("case {}: answer of {path} is not JSON", case.id))?;
        if !status.is_success() {
            bail!("case {}: {path} answered HTTP {status}: {body}", case.id);
        }
        let r = body
            .get("response")
            .ok_or_else(|| anyhow!("case {}: no response in {body}", case.id))?;
        let allowed = r.get("allowed").and_then(Value::as_bool).unwrap_or(false);
        let code = r
            .pointer("/status/code")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u16;
        let message = r
            .pointer("/status/message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut patched = None;
        if allowed && path.starts_with("/mutate") {
            let mut obj = object.cloned().unwrap_or(Value::Null);
            if let Some(p) = r.get("patch").and_then(Value::as_str) {
                use base64::Engine as _;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .with_context(|| format!("case {}: patch is not base64", case.id))?;
                let patch: json_patch::Patch = serde_json::from_slice(&raw)
                    .with_context(|| format!("case {}: patch is not a JSON patch", case.id))?;
                json_patch::patch(&mut obj, &patch).with_context(|| {
                    format!(
                        "case {}: patch does not apply: {}",
                        case.id,
                        String::from_utf8_lossy(&raw)
                    )
                })?;
            }
            patched = Some(obj);
        }
        let message = corpus::without_pointer_addresses(&message);
        Ok(Answer {
            allowed,
            code,
            paths: if allowed {
                Vec::new()
            } else {
                corpus::paths_in_message(&message)
            },
            message,
            patched,
        })
    }

    async fn record(&mut self, case: &Case) -> Result<Option<Record>> {
        let (mutate, validate) = paths(&case.group, &case.kind);
        let mut case = case.clone();
        if case.operation == "UPDATE"
            && let (Some(m), Some(old)) = (mutate, case.old_object.clone())
        {
            let stored = self.post(m, &case, "CREATE", Some(&old), None).await?;
            match stored.patched {
                Some(o) if stored.allowed => case.old_object = Some(o),
                _ => return Ok(None),
            }
            // The new object made from the stored one (values the case cannot know, such as a
            // pod's UID, stay as the webhook wrote them).
            if let (Some(patch), Some(stored)) =
                (case.merge_into_stored.take(), case.old_object.as_ref())
            {
                let mut object = stored.clone();
                json_patch::merge(&mut object, &patch);
                case.object = Some(object);
            }
        }
        let mut rec = Record {
            case: case.clone(),
            mutation: None,
            validation: None,
            deviation: None,
        };
        let mut object = case.object.clone();
        if case.operation != "DELETE"
            && let Some(m) = mutate
        {
            let a = self
                .post(
                    m,
                    &case,
                    &case.operation,
                    object.as_ref(),
                    case.old_object.as_ref(),
                )
                .await?;
            if !a.allowed {
                rec.mutation = Some(a);
                return Ok(Some(rec));
            }
            object = a.patched.clone();
            rec.mutation = Some(a);
        }
        if let Some(v) = validate {
            let obj = if case.operation == "DELETE" {
                None
            } else {
                object.as_ref()
            };
            rec.validation = Some(
                self.post(v, &case, &case.operation, obj, case.old_object.as_ref())
                    .await?,
            );
        }
        Ok(Some(rec))
    }
}

/// The API resource of a cluster object of a corpus (the kinds [`corpus::Corpus::cluster`] uses).
fn api_resource(obj: &Value) -> Result<(kube::api::ApiResource, bool)> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let (plural, namespaced) = match kind {
        "SidecarSet" => ("sidecarsets", false),
        "Namespace" => ("namespaces", false),
        "ConfigMap" => ("configmaps", true),
        "ControllerRevision" => ("controllerrevisions", true),
        "PodUnavailableBudget" => ("podunavailablebudgets", true),
        "PersistentPodState" => ("persistentpodstates", true),
        "WorkloadSpread" => ("workloadspreads", true),
        "Pod" => ("pods", true),
        "Node" => ("nodes", false),
        other => bail!("no API resource known for cluster object kind {other}"),
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok((
        kube::api::ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
        },
        namespaced,
    ))
}

fn dynamic_api(client: &kube::Client, obj: &Value) -> Result<kube::Api<kube::core::DynamicObject>> {
    let (ar, namespaced) = api_resource(obj)?;
    Ok(if namespaced {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        kube::Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        kube::Api::all_with(client.clone(), &ar)
    })
}

fn name_of(obj: &Value) -> String {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

const SIDECARSET_NAME_LABEL: &str = "kruise.io/sidecarset-name";

/// Deletes the objects (and the ControllerRevisions OpenKruise's controller recorded for the
/// SidecarSets among them) and waits until they are gone.
async fn delete_cluster_objects(client: &kube::Client, objects: &[Value]) -> Result<()> {
    let revisions: kube::Api<k8s_openapi::api::apps::v1::ControllerRevision> =
        kube::Api::namespaced(client.clone(), corpus::KRUISE_NAMESPACE);
    for obj in objects.iter().rev() {
        let api = dynamic_api(client, obj)?;
        match api.delete(&name_of(obj), &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e).context(format!("deleting {}", name_of(obj))),
        }
        if obj["kind"] == "SidecarSet" {
            let lp = kube::api::ListParams::default()
                .labels(&format!("{SIDECARSET_NAME_LABEL}={}", name_of(obj)));
            let _ = revisions.delete_collection(&Default::default(), &lp).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    for obj in objects {
        let api = dynamic_api(client, obj)?;
        while api.get_opt(&name_of(obj)).await?.is_some() {
            if Instant::now() > deadline {
                bail!("{} was not deleted within 120 s", name_of(obj));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Creates a corpus's cluster objects, waits until OpenKruise's SidecarSet controller has
/// processed the SidecarSets (and its webhook's cache holds everything), and returns what the
/// cluster then holds.
async fn set_up_cluster(
    client: &kube::Client,
    objects: &[Value],
    case_namespaces: &[String],
) -> Result<Value> {
    delete_cluster_objects(client, objects).await?;
    // SidecarSets are cluster-scoped: one left by anything else (an interrupted e2e test)
    // would be judged against by OpenKruise's webhook and land in the recorded cluster.
    let set = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet"});
    let ours: Vec<String> = objects
        .iter()
        .filter(|o| o["kind"] == "SidecarSet")
        .map(name_of)
        .collect();
    let foreign: Vec<String> = dynamic_api(client, &set)?
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .filter(|n| !ours.contains(n))
        .collect();
    if !foreign.is_empty() {
        bail!(
            "the cluster holds SidecarSets this corpus does not declare: {foreign:?}; delete them (kubectl delete sidecarsets {}) and record again",
            foreign.join(" ")
        );
    }
    for obj in objects {
        let api = dynamic_api(client, obj)?;
        let dynamic: kube::core::DynamicObject = serde_json::from_value(obj.clone())?;
        set_up_object(&api, obj, &dynamic).await?;
    }
    finish_set_up(client, objects, case_namespaces).await
}

/// Creates one cluster object; a pod's `status` (which a create drops) is then written through
/// `pods/status`, as a kubelet would have written it.
async fn set_up_object(
    api: &kube::Api<kube::core::DynamicObject>,
    obj: &Value,
    dynamic: &kube::core::DynamicObject,
) -> Result<()> {
    // OpenKruise's SidecarSet webhook reads the revisions a SidecarSet pins from its cache,
    // which may not hold a revision created a moment ago yet: retry a refused create.
    let mut tries = 0;
    loop {
        match api.create(&Default::default(), dynamic).await {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 400 && tries < 10 => {
                tries += 1;
                eprintln!(
                    "[corpus] creating {} refused ({}), retrying",
                    name_of(obj),
                    e.message
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                return Err(e).context(format!("creating cluster object {}", name_of(obj)));
            }
        }
    }
    if obj["kind"] == "Pod"
        && let Some(status) = obj.get("status")
    {
        api.patch_status(
            &name_of(obj),
            &Default::default(),
            &kube::api::Patch::Merge(json!({"status": status})),
        )
        .await
        .with_context(|| format!("writing the status of pod {}", name_of(obj)))?;
    }
    Ok(())
}

/// Waits until OpenKruise has processed the SidecarSets among `objects`, then snapshots the
/// cluster (see [`snapshot`]).
async fn finish_set_up(
    client: &kube::Client,
    objects: &[Value],
    case_namespaces: &[String],
) -> Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    for obj in objects.iter().filter(|o| o["kind"] == "SidecarSet") {
        let api = dynamic_api(client, obj)?;
        let revisions: kube::Api<k8s_openapi::api::apps::v1::ControllerRevision> =
            kube::Api::namespaced(client.clone(), corpus::KRUISE_NAMESPACE);
        let lp = kube::api::ListParams::default()
            .labels(&format!("{SIDECARSET_NAME_LABEL}={}", name_of(obj)));
        loop {
            let current = serde_json::to_value(api.get(&name_of(obj)).await?)?;
            let observed = current
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64);
            let generation = current
                .pointer("/metadata/generation")
                .and_then(Value::as_i64);
            let recorded = !revisions.list(&lp).await?.items.is_empty();
            let latest = current
                .pointer("/status/latestRevision")
                .and_then(Value::as_str)
                .is_some_and(|r| !r.is_empty());
            if observed.is_some() && observed == generation && recorded && latest {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "OpenKruise's controller did not process SidecarSet {} within 120 s",
                    name_of(obj)
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    // The webhook reads through the manager's informers: give them time to see everything.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The namespaces a case's pod may be in, when the corpus declares Namespaces (the pod
    // webhook matches their labels against SidecarSets' namespace selectors).
    let mut namespaces: Vec<String> = Vec::new();
    if objects.iter().any(|o| o["kind"] == "Namespace") {
        namespaces.extend(
            objects
                .iter()
                .filter(|o| o["kind"] == "Namespace")
                .map(name_of),
        );
        namespaces.extend(case_namespaces.iter().cloned());
        namespaces.sort();
        namespaces.dedup();
    }
    snapshot(client, &namespaces).await
}

/// What the replay's lookups need of the cluster, with the metadata that differs from run to
/// run removed: every SidecarSet (v1beta1, with its status: the pod webhook writes
/// `status.latestRevision` into the pods it injects; no pod exists, so its counters are 0),
/// ConfigMap `kruise-configuration`, every
/// ControllerRevision of the manager's namespace, the PodUnavailableBudgets of the corpus
/// namespace, and those of `namespaces` that exist (key
/// `namespaces`, only when `namespaces` is not empty), sorted by name.
async fn snapshot(client: &kube::Client, namespaces: &[String]) -> Result<Value> {
    fn clean(mut v: Value) -> Value {
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "generation",
                "selfLink",
            ] {
                m.remove(k);
            }
            for r in m
                .get_mut("ownerReferences")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(r) = r.as_object_mut() {
                    r.remove("uid");
                }
            }
        }
        if let Some(m) = v.as_object_mut() {
            m.remove("status");
        }
        v
    }
    fn sorted(mut items: Vec<Value>) -> Value {
        items.sort_by_key(name_of);
        Value::Array(items.into_iter().map(clean).collect())
    }
    // Every object of a kind, as a typed client would send it (apiVersion and kind set): in
    // `namespace`, or in every namespace (cluster-scoped kinds: all of them).
    async fn list_as(
        client: &kube::Client,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>> {
        let (ar, namespaced) = api_resource(&json!({"apiVersion": api_version, "kind": kind}))?;
        let api = match namespace {
            Some(ns) if namespaced => {
                kube::Api::<kube::core::DynamicObject>::namespaced_with(client.clone(), ns, &ar)
            }
            _ => kube::Api::all_with(client.clone(), &ar),
        };
        Ok(api
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .map(|o| {
                let mut v = serde_json::to_value(o).unwrap_or_default();
                v["apiVersion"] = json!(api_version);
                v["kind"] = json!(kind);
                v
            })
            .collect())
    }
    let sets = list_as(client, "apps.kruise.io/v1beta1", "SidecarSet", None).await?;
    let statuses: BTreeMap<String, Value> = sets
        .iter()
        .filter_map(|s| Some((name_of(s), s.get("status")?.clone())))
        .collect();
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), corpus::KRUISE_NAMESPACE);
    let config_maps: Vec<Value> = cms
        .get_opt("kruise-configuration")
        .await?
        .into_iter()
        .map(|c| {
            let mut v = serde_json::to_value(c).unwrap_or_default();
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("ConfigMap");
            v
        })
        .collect();
    let revisions = list_as(
        client,
        "apps/v1",
        "ControllerRevision",
        Some(corpus::KRUISE_NAMESPACE),
    )
    .await?;
    let mut sidecar_sets = sorted(sets);
    for s in sidecar_sets.as_array_mut().into_iter().flatten() {
        if let Some(status) = statuses.get(&name_of(s)) {
            s["status"] = status.clone();
        }
    }
    let budgets = list_as(
        client,
        "policy.kruise.io/v1alpha1",
        "PodUnavailableBudget",
        Some(corpus::NAMESPACE),
    )
    .await?;
    let ppss = list_as(
        client,
        "apps.kruise.io/v1alpha1",
        "PersistentPodState",
        Some(corpus::NAMESPACE),
    )
    .await?;
    let spreads = list_as(client, "apps.kruise.io/v1alpha1", "WorkloadSpread", None).await?;
    // Pods of the corpus namespace and the nodes named `corpus-*` (the ContainerRecreateRequest
    // webhook reads them): kept with their UIDs, which the webhook copies, and pods with their
    // status.
    let pods: Vec<Value> = list_as(client, "v1", "Pod", Some(corpus::NAMESPACE))
        .await?
        .into_iter()
        .map(|p| {
            let uid = p.pointer("/metadata/uid").cloned();
            let status = p.get("status").cloned();
            let mut p = clean(p);
            p["metadata"]["uid"] = uid.unwrap_or(Value::Null);
            if let Some(st) = status {
                p["status"] = st;
            }
            p
        })
        .collect();
    let nodes: Vec<Value> = list_as(client, "v1", "Node", None)
        .await?
        .into_iter()
        .filter(|n| name_of(n).starts_with("corpus-"))
        .collect();
    let mut pods = pods;
    pods.sort_by_key(name_of);
    let mut out = json!({
        "pods": pods,
        "nodes": sorted(nodes),
        "persistentPodStates": sorted(ppss),
        "workloadSpreads": sorted(spreads),
        "sidecarSets": sidecar_sets,
        "configMaps": sorted(config_maps),
        "controllerRevisions": sorted(revisions),
        "podUnavailableBudgets": sorted(budgets),
    });
    if !namespaces.is_empty() {
        let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
        let mut found = Vec::new();
        for n in namespaces {
            if let Some(ns) = api.get_opt(n).await? {
                let mut v = serde_json::to_value(ns).unwrap_or_default();
                v["apiVersion"] = json!("v1");
                v["kind"] = json!("Namespace");
                found.push(v);
            }
        }
        out["namespaces"] = sorted(found);
    }
    Ok(out)
}

fn existing_deviations(file: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .filter_map(|r| r.deviation.map(|d| (r.case.id, d)))
        .collect()
}

/// See [`Command::Manifests`].
fn manifests(url: &str) -> Result<()> {
    use serde::Deserialize as _;
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)?;
    const KEEP: &[&str] = &[
        "Namespace",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterRole",
    ];
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&input) {
        let mut v = Value::deserialize(doc).context("manifests on stdin are not YAML")?;
        let kind = v
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !KEEP.contains(&kind.as_str()) {
            continue;
        }
        if kind.ends_with("WebhookConfiguration") {
            if let Some(a) = v
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove("template");
            }
            for wh in v
                .get_mut("webhooks")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let path = wh
                    .pointer("/clientConfig/service/path")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_owned();
                wh["clientConfig"] = json!({"url": format!("{url}{path}")});
            }
        }
        out.push(serde_yaml_ng::to_string(&v)?);
    }
    if out.is_empty() {
        bail!("no manifests on stdin (expected the output of kubectl kustomize config/default)");
    }
    print!("{}", out.join("---\n"));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            for c in corpus::all() {
                println!("{}\t{}", c.name, c.cases.len());
            }
            Ok(())
        }
        Command::Manifests { url } => manifests(&url),
        Command::Record { url, ca, out, only } => {
            let pem = std::fs::read(&ca).with_context(|| format!("reading {}", ca.display()))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .with_context(|| format!("{} is not a PEM certificate", ca.display()))?;
            let http = reqwest::Client::builder()
                .add_root_certificate(cert)
                .timeout(Duration::from_secs(30))
                .build()?;
            let mut rec = Recorder { http, url, seq: 0 };
            std::fs::create_dir_all(&out)?;
            for c in corpus::all() {
                if !only.is_empty() && !only.iter().any(|o| o == c.name) {
                    continue;
                }
                let file = out.join(format!("{}.jsonl", c.name));
                let deviations = existing_deviations(&file);
                let client = if c.cluster.is_empty() {
                    None
                } else {
                    let client = kube::Client::try_default()
                        .await
                        .context("a kube client (KUBECONFIG) for the corpus's cluster objects")?;
                    eprintln!(
                        "[corpus] {}: creating {} cluster objects",
                        c.name,
                        c.cluster.len()
                    );
                    let mut case_namespaces: Vec<String> = c
                        .cases
                        .iter()
                        .map(|k| k.request_namespace().to_owned())
                        .collect();
                    case_namespaces.sort();
                    case_namespaces.dedup();
                    let snap = set_up_cluster(&client, &c.cluster, &case_namespaces).await?;
                    let snap_file = out.join(format!("{}.cluster.json", c.name));
                    std::fs::write(&snap_file, serde_json::to_string_pretty(&snap)? + "\n")
                        .with_context(|| format!("writing {}", snap_file.display()))?;
                    Some(client)
                };
                let started = Instant::now();
                let mut lines = Vec::new();
                let (mut denied, mut admitted, mut skipped) = (0, 0, 0);
                for (i, case) in c.cases.iter().enumerate() {
                    match rec.record(case).await? {
                        Some(mut r) => {
                            r.deviation = deviations.get(&r.case.id).cloned();
                            if r.allowed() {
                                admitted += 1;
                            } else {
                                denied += 1;
                            }
                            lines.push(serde_json::to_string(&r)?);
                        }
                        None => skipped += 1,
                    }
                    if (i + 1) % 100 == 0 {
                        eprintln!(
                            "[corpus] {}: {}/{} cases sent ({:.1}s)",
                            c.name,
                            i + 1,
                            c.cases.len(),
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                std::fs::write(&file, lines.join("\n") + "\n")
                    .with_context(|| format!("writing {}", file.display()))?;
                if let Some(client) = client {
                    delete_cluster_objects(&client, &c.cluster).await?;
                }
                eprintln!(
                    "[corpus] {}: {} recorded ({denied} denied, {admitted} admitted; {skipped} updates skipped because their old object was denied) -> {}",
                    c.name,
                    lines.len(),
                    file.display()
                );
            }
            Ok(())
        }
    }
}
