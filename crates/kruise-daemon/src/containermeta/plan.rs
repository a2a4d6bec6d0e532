//! Pure decisions of the containermeta controller (OpenKruise
//! `pkg/daemon/containermeta/container_meta_controller.go`): which pod events need a sync, which
//! running containers' environment must be read, the `apps.kruise.io/runtime-containers-meta`
//! to report and the containers to restart.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, Pod};
use kruise_api::apps::common::{
    RuntimeContainerHashes, RuntimeContainerMeta, RuntimeContainerMetaSet,
};
use kruise_api::keys;
use kruise_engines::inplace::expected_env_from_metadata_hash;

use crate::cri::RuntimeContainer;

/// The pod's `apps.kruise.io/runtime-containers-meta`, `None` when absent or malformed (a
/// malformed value is replaced by the next report, as OpenKruise does).
pub fn meta_set(pod: &Pod) -> Option<RuntimeContainerMetaSet> {
    let raw = pod
        .metadata
        .annotations
        .as_ref()?
        .get(keys::RUNTIME_CONTAINERS_META)?;
    serde_json::from_str(raw).ok()
}

/// Whether the pod is controlled by an `apps.kruise.io` workload or carries a SidecarSet
/// injection (`kruise.io/sidecarset-hash`): the only pods kruise-daemon reports on.
pub fn owned_or_injected(pod: &Pod) -> bool {
    let owned = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|o| o.controller == Some(true))
        .any(|o| o.api_version.split('/').next() == Some("apps.kruise.io"));
    owned
        || pod
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(keys::SIDECARSET_HASH))
}

/// Whether a pod event needs a sync (OpenKruise `eventFilter`, judged on the new pod alone):
/// a Kruise pod whose started containers are not all reported with their current container
/// IDs, or — with `env_from_metadata` (gate `InPlaceUpdateEnvFromMetadata`) — whose reported
/// env hash no longer matches what its labels/annotations imply.
///
/// OpenKruise also compares the old pod's expected env hash with the new one's; a sync for
/// that alone writes nothing (the report already matches the new pod), so the stateless check
/// decides the same syncs that change anything.
pub fn needs_sync(pod: &Pod, env_from_metadata: bool) -> bool {
    if !owned_or_injected(pod) {
        return false;
    }
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default();
    let meta = meta_set(pod);
    for (i, cs) in statuses.iter().enumerate() {
        let id = cs.container_id.as_deref().unwrap_or_default();
        if id.is_empty() {
            continue;
        }
        let Some(meta) = meta
            .as_ref()
            .filter(|m| m.containers.len() == statuses.len())
        else {
            return true;
        };
        let m = &meta.containers[i];
        if m.container_id != id {
            return true;
        }
        if env_from_metadata
            && let Some(c) = pod.spec.as_ref().and_then(|s| s.containers.get(i))
            && expected_env_from_metadata_hash(c, pod) != m.hashes.extracted_env_from_metadata_hash
        {
            return true;
        }
    }
    false
}

/// The spec of container `name` (init containers first, as OpenKruise `util.GetContainer`).
pub fn container_spec<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .find(|c| c.name == name)
}

/// The runtime container the kubelet counts as container `name`: the newest of that name
/// (`PodStatus.FindContainerStatusByName` over statuses sorted newest first).
fn latest<'a>(runtime: &'a [RuntimeContainer], name: &str) -> Option<&'a RuntimeContainer> {
    runtime
        .iter()
        .filter(|c| c.name == name)
        .max_by_key(|c| c.created_at)
}

fn old_entry<'a>(
    old: Option<&'a RuntimeContainerMetaSet>,
    full_id: &str,
) -> Option<&'a RuntimeContainerMeta> {
    old?.containers
        .iter()
        .rev()
        .find(|m| m.container_id == full_id)
}

/// A running container whose environment must be read (with `env` executed in it) before the
/// report can be made: it has no `extractedEnvFromMetadataHash` yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvProbe {
    /// Container name.
    pub name: String,
    /// Runtime ID (no prefix), to exec in.
    pub runtime_id: String,
    /// `<runtime>://<id>`, the key of [`plan`]'s `env_hashes`.
    pub full_id: String,
}

/// The containers [`plan`] needs a current env hash for (gate `InPlaceUpdateEnvFromMetadata`):
/// running, reported in the pod status and in the spec, and without a hash in the previous
/// report for the same container ID.
pub fn env_probes(
    pod: &Pod,
    runtime: &[RuntimeContainer],
    runtime_name: &str,
    old: Option<&RuntimeContainerMetaSet>,
) -> Vec<EnvProbe> {
    status_names(pod)
        .filter_map(|name| {
            let rc = latest(runtime, name)?;
            container_spec(pod, name)?;
            let full_id = format!("{runtime_name}://{}", rc.id);
            let known = old_entry(old, &full_id)
                .is_some_and(|m| m.hashes.extracted_env_from_metadata_hash != 0);
            (rc.running && !known).then(|| EnvProbe {
                name: name.to_owned(),
                runtime_id: rc.id.clone(),
                full_id,
            })
        })
        .collect()
}

fn status_names(pod: &Pod) -> impl Iterator<Item = &str> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|cs| cs.name.as_str())
}

/// What a sync does.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The report: one entry per container status of the pod that the runtime and the spec
    /// know, in status order.
    pub meta: RuntimeContainerMetaSet,
    /// `<runtime>://<id>` of running containers to restart: an in-place update is in progress
    /// (`InPlaceUpdateReady` is `False`) and the container's env from metadata differs from
    /// what the pod's labels/annotations now say.
    pub restart: Vec<String>,
}

/// The report and restarts for `pod` given its runtime containers (OpenKruise
/// `manageContainerMetaSet`): an entry keeps the previous report's entry for the same
/// container ID (so hashes survive), else starts from the runtime's name, ID, restart count and
/// the kubelet's hash (`plainHash`); with `env_from_metadata`, a missing env hash is taken from
/// `env_hashes` (keyed by `<runtime>://<id>`, see [`env_probes`]) and the restart rule applies.
pub fn plan(
    pod: &Pod,
    runtime: &[RuntimeContainer],
    runtime_name: &str,
    old: Option<&RuntimeContainerMetaSet>,
    env_hashes: &HashMap<String, u64>,
    env_from_metadata: bool,
) -> Plan {
    let updating = in_place_update_ready_false(pod);
    let mut meta = RuntimeContainerMetaSet::default();
    let mut restart = Vec::new();
    for name in status_names(pod) {
        let Some(rc) = latest(runtime, name) else {
            continue;
        };
        let Some(spec) = container_spec(pod, name) else {
            continue;
        };
        let full_id = format!("{runtime_name}://{}", rc.id);
        let mut entry = old_entry(old, &full_id)
            .cloned()
            .unwrap_or_else(|| RuntimeContainerMeta {
                name: rc.name.clone(),
                container_id: full_id.clone(),
                restart_count: rc.restart_count,
                hashes: RuntimeContainerHashes {
                    plain_hash: rc.hash,
                    extracted_env_from_metadata_hash: 0,
                },
            });
        if env_from_metadata {
            if entry.hashes.extracted_env_from_metadata_hash == 0
                && rc.running
                && let Some(h) = env_hashes.get(&full_id)
            {
                entry.hashes.extracted_env_from_metadata_hash = *h;
            }
            let current = entry.hashes.extracted_env_from_metadata_hash;
            if updating && current > 0 && current != expected_env_from_metadata_hash(spec, pod) {
                restart.push(full_id);
            }
        }
        meta.containers.push(entry);
    }
    Plan { meta, restart }
}

fn in_place_update_ready_false(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == keys::IN_PLACE_UPDATE_READY))
        .is_some_and(|c| c.status == "False")
}

/// Parses the output of `env` (`NAME=value` lines) into a map; lines without `=` are skipped
/// and surrounding whitespace trimmed, as OpenKruise's `wrapEnvGetter`.
pub fn parse_env_output(stdout: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(stdout)
        .trim()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_engines::inplace::{current_env_from_metadata_hash, plain_container_hash};
    use serde_json::json;

    fn pod(labels: serde_json::Value, ready_false: bool, meta: Option<&str>) -> Pod {
        let mut annotations = serde_json::Map::new();
        if let Some(m) = meta {
            annotations.insert(keys::RUNTIME_CONTAINERS_META.into(), json!(m));
        }
        let conditions = if ready_false {
            json!([{"type": "InPlaceUpdateReady", "status": "False"}])
        } else {
            json!([{"type": "InPlaceUpdateReady", "status": "True"}])
        };
        serde_json::from_value(json!({
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1",
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                    "name": "cs", "uid": "o1", "controller": true}],
            },
            "spec": {"containers": [
                {"name": "main", "image": "nginx:alpine",
                 "env": [{"name": "LABEL_E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['e']"}}}]},
                {"name": "side", "image": "busybox"},
            ]},
            "status": {
                "conditions": conditions,
                "containerStatuses": [
                    {"name": "main", "containerID": "containerd://a1", "image": "", "imageID": "",
                     "ready": true, "restartCount": 0},
                    {"name": "side", "containerID": "containerd://b1", "image": "", "imageID": "",
                     "ready": true, "restartCount": 0},
                ],
            },
        }))
        .unwrap()
    }

    fn rc(id: &str, name: &str, created: i64, running: bool) -> RuntimeContainer {
        RuntimeContainer {
            id: id.into(),
            name: name.into(),
            hash: 0xabc,
            restart_count: 1,
            running,
            exited: !running,
            created_at: created,
        }
    }

    #[test]
    fn only_kruise_pods_are_reported() {
        let mut p = pod(json!({"e": "1"}), false, None);
        assert!(owned_or_injected(&p));
        assert!(needs_sync(&p, true));
        p.metadata.owner_references.as_mut().unwrap()[0].api_version = "apps/v1".into();
        assert!(!owned_or_injected(&p));
        assert!(!needs_sync(&p, true));
        p.metadata
            .annotations
            .get_or_insert_default()
            .insert(keys::SIDECARSET_HASH.into(), "{}".into());
        assert!(needs_sync(&p, true));
    }

    #[test]
    fn a_first_report_carries_runtime_ids_hashes_and_the_env_hash() {
        let p = pod(json!({"e": "1"}), false, None);
        let runtime = [
            rc("a0", "main", 1, false),
            rc("a1", "main", 2, true),
            rc("b1", "side", 3, true),
        ];
        let probes = env_probes(&p, &runtime, "containerd", None);
        assert_eq!(
            probes
                .iter()
                .map(|e| e.full_id.as_str())
                .collect::<Vec<_>>(),
            ["containerd://a1", "containerd://b1"]
        );
        let main = container_spec(&p, "main").unwrap();
        let side = container_spec(&p, "side").unwrap();
        let hashes = HashMap::from([
            (
                "containerd://a1".to_owned(),
                current_env_from_metadata_hash(main, |n| (n == "LABEL_E").then_some("1")),
            ),
            (
                "containerd://b1".to_owned(),
                current_env_from_metadata_hash(side, |_| None),
            ),
        ]);
        let plan = plan(&p, &runtime, "containerd", None, &hashes, true);
        assert!(plan.restart.is_empty());
        let m = &plan.meta.containers;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].container_id, "containerd://a1");
        assert_eq!(m[0].hashes.plain_hash, 0xabc);
        assert_eq!(m[0].restart_count, 1);
        assert_eq!(
            m[0].hashes.extracted_env_from_metadata_hash,
            expected_env_from_metadata_hash(main, &p)
        );
        // With that report on the pod nothing is left to sync.
        let reported = pod(
            json!({"e": "1"}),
            false,
            Some(&serde_json::to_string(&plan.meta).unwrap()),
        );
        assert!(!needs_sync(&reported, true));
        assert!(
            env_probes(
                &reported,
                &runtime,
                "containerd",
                meta_set(&reported).as_ref()
            )
            .is_empty()
        );
        // A new container ID (the kubelet restarted it) needs a new report.
        let mut restarted = reported.clone();
        restarted
            .status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[0]
            .container_id = Some("containerd://a2".into());
        assert!(needs_sync(&restarted, true));
    }

    #[test]
    fn a_label_change_during_an_in_place_update_restarts_only_the_container_reading_it() {
        let old_labels = pod(json!({"e": "1"}), false, None);
        let main = container_spec(&old_labels, "main").unwrap().clone();
        let side = container_spec(&old_labels, "side").unwrap().clone();
        let meta = RuntimeContainerMetaSet {
            containers: vec![
                RuntimeContainerMeta {
                    name: "main".into(),
                    container_id: "containerd://a1".into(),
                    restart_count: 0,
                    hashes: RuntimeContainerHashes {
                        plain_hash: plain_container_hash(&main),
                        extracted_env_from_metadata_hash: expected_env_from_metadata_hash(
                            &main,
                            &old_labels,
                        ),
                    },
                },
                RuntimeContainerMeta {
                    name: "side".into(),
                    container_id: "containerd://b1".into(),
                    restart_count: 0,
                    hashes: RuntimeContainerHashes {
                        plain_hash: plain_container_hash(&side),
                        extracted_env_from_metadata_hash: expected_env_from_metadata_hash(
                            &side,
                            &old_labels,
                        ),
                    },
                },
            ],
        };
        let raw = serde_json::to_string(&meta).unwrap();
        let runtime = [rc("a1", "main", 2, true), rc("b1", "side", 3, true)];
        // The manager changed the label and set InPlaceUpdateReady=False.
        let updating = pod(json!({"e": "2"}), true, Some(&raw));
        assert!(needs_sync(&updating, true));
        assert!(!needs_sync(&updating, false));
        let plan1 = plan(
            &updating,
            &runtime,
            "containerd",
            meta_set(&updating).as_ref(),
            &HashMap::new(),
            true,
        );
        assert_eq!(plan1.restart, ["containerd://a1"]);
        assert_eq!(plan1.meta, meta, "the report itself is unchanged");
        // Without the update in progress (condition True) nothing is restarted.
        let settled = pod(json!({"e": "2"}), false, Some(&raw));
        let plan2 = plan(
            &settled,
            &runtime,
            "containerd",
            meta_set(&settled).as_ref(),
            &HashMap::new(),
            true,
        );
        assert!(plan2.restart.is_empty());
        // Nor with the gate off.
        let plan3 = plan(
            &updating,
            &runtime,
            "containerd",
            meta_set(&updating).as_ref(),
            &HashMap::new(),
            false,
        );
        assert!(plan3.restart.is_empty());
    }

    #[test]
    fn env_output_is_parsed_like_openkruise() {
        let env = parse_env_output(b"PATH=/bin\nLABEL_E=a=b\n  X=1  \nnoequals\n\n");
        assert_eq!(env["PATH"], "/bin");
        assert_eq!(env["LABEL_E"], "a=b");
        assert_eq!(env["X"], "1");
        assert_eq!(env.len(), 3);
    }
}
