//! The generated CRDs (config/crd/bases) on the real testbed: every CRD is accepted and becomes
//! Established, every sample in config/samples is accepted in its version and reads back equal,
//! and `kubectl get <shortName>` prints OpenKruise v1.9's columns.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruise_e2e::{TestEnv, kubectl, repo_root};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::Value;

fn samples() -> Vec<(String, Value)> {
    let dir = repo_root().join("config/samples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("config/samples") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let v: Value = serde_yaml_ng::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((path.file_name().unwrap().to_string_lossy().into_owned(), v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Installs the CRDs (idempotent) and checks there are OpenKruise's 18 plus kruise-rs's own
/// PodDeletionFlowControl (`policy.kruise-rs.io`).
async fn install_crds(env: &TestEnv) -> Vec<CustomResourceDefinition> {
    let crds = kruise_e2e::install_crds(env)
        .await
        .expect("installing CRDs");
    assert_eq!(
        crds.len(),
        19,
        "OpenKruise v1.9 has 18 CRDs; kruise-rs adds PodDeletionFlowControl"
    );
    crds
}

fn crd_for<'a>(
    crds: &'a [CustomResourceDefinition],
    group: &str,
    kind: &str,
) -> &'a CustomResourceDefinition {
    crds.iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == kind)
        .unwrap_or_else(|| panic!("no CRD for {group}/{kind}"))
}

#[tokio::test]
async fn all_crds_become_established_with_openkruise_versions() {
    let env = TestEnv::connect().await.expect("testbed");
    let crds = install_crds(&env).await;
    let api: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap();
        let live = api.get(&name).await.unwrap();
        let status = live.status.unwrap();
        let stored = status.stored_versions.unwrap_or_default();
        let storage = crd.spec.versions.iter().find(|v| v.storage).unwrap();
        assert!(
            stored.contains(&storage.name),
            "{name}: stored versions {stored:?}"
        );
        let served: Vec<&str> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
        if served.len() == 2 {
            assert_eq!(served, ["v1alpha1", "v1beta1"], "{name}");
            assert_eq!(storage.name, "v1beta1", "{name}");
        } else {
            assert_eq!(served, ["v1alpha1"], "{name}");
        }
    }
}

#[tokio::test]
async fn every_sample_is_accepted_in_its_version_and_reads_back_equal() {
    let env = TestEnv::connect().await.expect("testbed");
    let crds = install_crds(&env).await;
    let ns = env.namespace("samples").await.unwrap();
    let suffix = ns.name().rsplit('-').next().unwrap().to_string();
    let mut covered: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, sample) in samples() {
        let api_version = sample["apiVersion"].as_str().unwrap();
        let kind = sample["kind"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap();
        let crd = crd_for(&crds, group, kind);
        assert!(
            crd.spec
                .versions
                .iter()
                .any(|v| v.name == version && v.served),
            "{file}: {version} is not served"
        );
        covered
            .entry(crd.metadata.name.clone().unwrap())
            .or_default()
            .push(version.to_string());
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            &crd.spec.names.plural,
        );
        let namespaced = crd.spec.scope == "Namespaced";
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(env.client.clone(), ns.name(), &ar)
        } else {
            Api::all_with(env.client.clone(), &ar)
        };
        let mut obj: DynamicObject = serde_json::from_value(sample.clone()).unwrap();
        // The samples of both versions of a kind share a name, and cluster-scoped objects are
        // shared with other runs: make each name unique.
        let base = obj.metadata.name.take().unwrap();
        obj.metadata.name = Some(if namespaced {
            format!("{base}-{version}")
        } else {
            format!("{base}-{version}-{suffix}")
        });
        let name = obj.metadata.name.clone().unwrap();
        api.create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{file}: create rejected: {e}"));
        let back = api.get(&name).await.unwrap();
        let back = serde_json::to_value(&back).unwrap();
        assert_eq!(back["apiVersion"], api_version, "{file}");
        for (key, want) in sample.as_object().unwrap() {
            match key.as_str() {
                "apiVersion" | "kind" | "status" => {}
                "metadata" => {
                    for m in ["labels", "annotations"] {
                        if let Some(w) = want.get(m) {
                            assert_eq!(&back["metadata"][m], w, "{file}: metadata.{m}");
                        }
                    }
                }
                _ => assert_eq!(
                    &back[key], want,
                    "{file}: .{key} read back differs from the sample"
                ),
            }
        }
        if !namespaced {
            api.delete(&name, &DeleteParams::default()).await.unwrap();
        }
    }
    // Every kind has a sample in every served version.
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap();
        let mut want: Vec<String> = crd.spec.versions.iter().map(|v| v.name.clone()).collect();
        want.sort();
        let mut got = covered.get(&name).cloned().unwrap_or_default();
        got.sort();
        assert_eq!(got, want, "{name}: samples per served version");
    }
}

/// Printer column names of OpenKruise v1.9.0's CRDs (storage version), with `NAME` first, and
/// the resource name used with `kubectl get` (the shortName where one exists and is not shadowed
/// by a built-in kind; `sts` and `daemon`/`ds` are, so `asts`/`ads`).
const COLUMNS: &[(&str, &str, &[&str])] = &[
    (
        "AdvancedCronJob",
        "acj",
        &["NAME", "Schedule", "Type", "LastScheduleTime", "AGE"],
    ),
    (
        "BroadcastJob",
        "bcj",
        &["NAME", "Desired", "Active", "Succeeded", "Failed", "AGE"],
    ),
    (
        "CloneSet",
        "clone",
        &[
            "NAME",
            "DESIRED",
            "UPDATED",
            "UPDATED_READY",
            "UPDATED_AVAILABLE",
            "READY",
            "TOTAL",
            "AGE",
        ],
    ),
    (
        "ContainerRecreateRequest",
        "crr",
        &["NAME", "PHASE", "POD", "NODE", "AGE"],
    ),
    (
        "DaemonSet",
        "ads",
        &[
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
        ],
    ),
    (
        "EphemeralJob",
        "ejob",
        &[
            "NAME", "STATUS", "MATCH", "SUCCEED", "FAILED", "RUNNING", "WAITING", "AGE",
        ],
    ),
    (
        "ImageListPullJob",
        "imagelistpulljobs.apps.kruise.io",
        &["NAME", "TOTAL", "SUCCEEDED", "COMPLETED", "AGE"],
    ),
    (
        "ImagePullJob",
        "imagepulljobs.apps.kruise.io",
        &["NAME", "TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE"],
    ),
    (
        "NodeImage",
        "nodeimages.apps.kruise.io",
        &["NAME", "DESIRED", "PULLING", "SUCCEED", "FAILED", "AGE"],
    ),
    (
        "NodePodProbe",
        "nodepodprobes.apps.kruise.io",
        &["NAME", "AGE"],
    ),
    (
        "PersistentPodState",
        "persistentpodstates.apps.kruise.io",
        &["NAME", "AGE"],
    ),
    (
        "PodProbeMarker",
        "podprobemarkers.apps.kruise.io",
        &["NAME", "AGE"],
    ),
    (
        "ResourceDistribution",
        "distributor",
        &["NAME", "TOTAL", "SUCCEED", "FAILED"],
    ),
    (
        "SidecarSet",
        "sidecarsets.apps.kruise.io",
        &["NAME", "MATCHED", "UPDATED", "READY", "AGE"],
    ),
    (
        "StatefulSet",
        "asts",
        &["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"],
    ),
    (
        "UnitedDeployment",
        "ud",
        &["NAME", "DESIRED", "CURRENT", "UPDATED", "READY", "AGE"],
    ),
    (
        "WorkloadSpread",
        "ws",
        &["NAME", "WorkloadName", "WorkloadKind", "Adaptive", "Age"],
    ),
    (
        "PodUnavailableBudget",
        "pub",
        &["NAME", "Allowed", "Current", "Desired", "Total"],
    ),
    // kruise-rs's own kind (not in OpenKruise).
    (
        "PodDeletionFlowControl",
        "pdfc",
        &["NAME", "Scope", "Windows", "Age"],
    ),
];

#[tokio::test]
async fn kubectl_get_prints_openkruise_columns() {
    let env = TestEnv::connect().await.expect("testbed");
    let crds = install_crds(&env).await;
    let ns = env.namespace("columns").await.unwrap();
    let suffix = ns.name().rsplit('-').next().unwrap().to_string();
    assert_eq!(COLUMNS.len(), crds.len());
    for (kind, resource, columns) in COLUMNS {
        let crd = crds.iter().find(|c| c.spec.names.kind == *kind).unwrap();
        // Create the storage-version sample so that `kubectl get` has a row to print.
        let storage = crd.spec.versions.iter().find(|v| v.storage).unwrap();
        let file = format!(
            "{}_{}_{}.yaml",
            crd.spec.group,
            storage.name,
            kind.to_lowercase()
        );
        let text = std::fs::read_to_string(repo_root().join("config/samples").join(&file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut sample: Value = serde_yaml_ng::from_str(&text).unwrap();
        let namespaced = crd.spec.scope == "Namespaced";
        let name = if namespaced {
            sample["metadata"]["name"].as_str().unwrap().to_string()
        } else {
            format!(
                "{}-cols-{suffix}",
                sample["metadata"]["name"].as_str().unwrap()
            )
        };
        sample["metadata"]["name"] = Value::String(name.clone());
        let yaml = serde_yaml_ng::to_string(&sample).unwrap();
        let mut create = vec!["create", "-f", "-"];
        if namespaced {
            create.extend(["-n", ns.name()]);
        }
        let out = kubectl(&create, Some(&yaml)).unwrap();
        assert!(out.success, "kubectl create {file}: {}", out.stderr);

        let mut get = vec!["get", resource, name.as_str()];
        if namespaced {
            get.extend(["-n", ns.name()]);
        }
        let out = kubectl(&get, None).unwrap();
        assert!(out.success, "kubectl get {resource}: {}", out.stderr);
        let header: Vec<&str> = out
            .stdout
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        // kubectl upper-cases the CRD's column names.
        let want: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
        assert_eq!(header, want, "kubectl get {resource} columns");
        assert!(
            out.stdout
                .lines()
                .nth(1)
                .is_some_and(|l| l.starts_with(&name)),
            "{}",
            out.stdout
        );
        if !namespaced {
            let out = kubectl(&["delete", resource, &name, "--wait=false"], None).unwrap();
            assert!(out.success, "{}", out.stderr);
        }
    }
}
