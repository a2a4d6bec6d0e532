//! Building the pods and PVCs a CloneSet creates (pure functions).
//!
//! A CloneSet pod is named `<cloneset>-<instance-id>` where the instance id is 5 characters from
//! Kubernetes' random-string alphabet (or the id of a free PVC that is reused). It carries the
//! template's labels and annotations plus `controller-revision-hash`, `pod-template-hash`,
//! `apps.kruise.io/cloneset-instance-id` and lifecycle state `PreparingNormal`, a controller
//! owner reference to the CloneSet, the `InPlaceUpdateReady` readiness gate, and one
//! `persistentVolumeClaim` volume per volume claim template, pointing at
//! `<claim>-<cloneset>-<instance-id>`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, PodReadinessGate, PodTemplateSpec,
    Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::keys;
use rand::Rng;

use kruise_engines::lifecycle::{self, LifecycleState};
use kruise_engines::revision;

/// Length of a generated instance id.
pub const INSTANCE_ID_LEN: usize = 5;
/// Kubernetes' `rand.String` alphabet (no vowels, no ambiguous characters).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A random instance id.
pub fn random_instance_id<R: Rng + ?Sized>(rng: &mut R) -> String {
    (0..INSTANCE_ID_LEN)
        .map(|_| ALPHANUMS[rng.random_range(0..ALPHANUMS.len())] as char)
        .collect()
}

/// `num` instance ids for new pods: first the ids of PVCs whose pod is gone (so the new pod
/// reuses the claim), in sorted order, then fresh random ids that no pod or PVC uses
/// (OpenKruise `getOrGenAvailableIDs`).
pub fn available_ids<R: Rng + ?Sized>(
    num: usize,
    pod_ids: &BTreeSet<String>,
    pvc_ids: &BTreeSet<String>,
    rng: &mut R,
) -> Vec<String> {
    let mut free: Vec<String> = pvc_ids.difference(pod_ids).cloned().collect();
    free.truncate(num);
    let mut taken: BTreeSet<String> = pod_ids.union(pvc_ids).cloned().collect();
    while free.len() < num {
        let id = random_instance_id(rng);
        if taken.insert(id.clone()) {
            free.push(id);
        }
    }
    free
}

/// The owner reference pods, PVCs and revisions of `cs` carry.
pub fn owner_ref(cs: &CloneSet) -> OwnerReference {
    revision::controller_ref(
        "apps.kruise.io/v1alpha1",
        "CloneSet",
        cs.metadata.name.as_deref().unwrap_or_default(),
        cs.metadata.uid.as_deref().unwrap_or_default(),
    )
}

/// Name of the PVC of claim template `claim` for instance `id`.
pub fn claim_name(claim: &str, cloneset: &str, id: &str) -> String {
    format!("{claim}-{cloneset}-{id}")
}

/// The PVCs of the pod with instance `id`: one per volume claim template, named
/// [`claim_name`], labelled with the selector's `matchLabels` and the instance id, owned by the
/// CloneSet. Keyed by template name.
pub fn claims_for(cs: &CloneSet, id: &str) -> BTreeMap<String, PersistentVolumeClaim> {
    let name = cs.metadata.name.as_deref().unwrap_or_default();
    let mut out = BTreeMap::new();
    for t in cs.spec.volume_claim_templates.iter().flatten() {
        let template_name = t.metadata.name.clone().unwrap_or_default();
        let mut claim = t.clone();
        claim.metadata.name = Some(claim_name(&template_name, name, id));
        claim.metadata.namespace = cs.metadata.namespace.clone();
        let labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
        if let Some(ml) = &cs.spec.selector.match_labels {
            labels.extend(ml.clone());
        }
        labels.insert(keys::CLONESET_INSTANCE_ID.into(), id.into());
        claim
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(owner_ref(cs));
        // A template's status (e.g. the defaulted `phase: Pending`) is not part of a new claim.
        claim.status = None;
        out.insert(template_name, claim);
    }
    out
}

/// A new pod of `cs` at `revision` (a ControllerRevision name) from `template` (the template of
/// that revision), with instance id `id`, in lifecycle state PreparingNormal stamped `now`
/// (OpenKruise `SetPodLifecycle(PreparingNormal)` before `createOnePod`). See the module
/// documentation for what it carries.
pub fn new_pod(
    cs: &CloneSet,
    template: &PodTemplateSpec,
    revision_name: &str,
    id: &str,
    short_hash_gate: bool,
    now: jiff::Timestamp,
) -> Pod {
    let cs_name = cs.metadata.name.as_deref().unwrap_or_default();
    let tmeta = template.metadata.clone().unwrap_or_default();
    let mut labels = tmeta.labels.unwrap_or_default();
    revision::write_revision_hash(&mut labels, revision_name, short_hash_gate);
    labels.insert(keys::CLONESET_INSTANCE_ID.into(), id.into());
    let mut spec = template.spec.clone().unwrap_or_default();
    let gates = spec.readiness_gates.get_or_insert_with(Vec::new);
    if !gates
        .iter()
        .any(|g| g.condition_type == keys::IN_PLACE_UPDATE_READY)
    {
        gates.push(PodReadinessGate {
            condition_type: keys::IN_PLACE_UPDATE_READY.into(),
        });
    }
    let claims = claims_for(cs, id);
    if !claims.is_empty() {
        let mut volumes: Vec<Volume> = claims
            .iter()
            .map(|(template_name, claim)| Volume {
                name: template_name.clone(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.metadata.name.clone().unwrap_or_default(),
                    read_only: Some(false),
                }),
                ..Volume::default()
            })
            .collect();
        for v in spec.volumes.take().unwrap_or_default() {
            if !claims.contains_key(&v.name) {
                volumes.push(v);
            }
        }
        spec.volumes = Some(volumes);
    }
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(format!("{cs_name}-{id}")),
            namespace: cs.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![owner_ref(cs)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    };
    lifecycle::set_pod_lifecycle(&mut pod, LifecycleState::PreparingNormal, now);
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        "2024-05-06T07:08:09.5Z".parse().unwrap()
    }

    fn cloneset() -> CloneSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u-1"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx:1"}],
                                      "volumes": [{"name": "data", "emptyDir": {}},
                                                  {"name": "cfg", "emptyDir": {}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}},
                    "status": {"phase": "Pending"}}],
            }
        }))
        .unwrap()
    }

    #[test]
    fn new_pod_carries_openkruise_labels_gate_owner_and_claims() {
        let cs = cloneset();
        let pod = new_pod(&cs, &cs.spec.template, "web-7d9c8b", "x4k2z", false, now());
        let v = serde_json::to_value(&pod).unwrap();
        assert_eq!(v["metadata"]["name"], "web-x4k2z");
        assert_eq!(v["metadata"]["namespace"], "ns");
        assert_eq!(
            v["metadata"]["labels"],
            json!({"app": "web", "controller-revision-hash": "web-7d9c8b",
                   "pod-template-hash": "7d9c8b",
                   "apps.kruise.io/cloneset-instance-id": "x4k2z",
                   "lifecycle.apps.kruise.io/state": "PreparingNormal"})
        );
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"a": "b", "lifecycle.apps.kruise.io/timestamp": "2024-05-06T07:08:09Z"})
        );
        assert_eq!(v["metadata"]["ownerReferences"][0]["kind"], "CloneSet");
        assert_eq!(v["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            v["spec"]["readinessGates"],
            json!([{"conditionType": "InPlaceUpdateReady"}])
        );
        assert_eq!(
            v["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim":
                        {"claimName": "data-web-x4k2z", "readOnly": false}},
                   {"name": "cfg", "emptyDir": {}}])
        );
    }

    #[test]
    fn short_hash_gate_shortens_the_revision_label() {
        let cs = cloneset();
        let pod = new_pod(&cs, &cs.spec.template, "web-7d9c8b", "a", true, now());
        let l = pod.metadata.labels.unwrap();
        assert_eq!(l["controller-revision-hash"], "7d9c8b");
        assert_eq!(l["pod-template-hash"], "7d9c8b");
    }

    #[test]
    fn claims_are_labelled_owned_and_statusless() {
        let cs = cloneset();
        let claims = claims_for(&cs, "abcde");
        let c = &claims["data"];
        assert_eq!(c.metadata.name.as_deref(), Some("data-web-abcde"));
        let labels = c.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["app"], "web");
        assert_eq!(labels[keys::CLONESET_INSTANCE_ID], "abcde");
        assert_eq!(c.metadata.owner_references.as_ref().unwrap()[0].uid, "u-1");
        assert!(c.status.is_none());
    }

    #[test]
    fn ids_reuse_free_claims_first_then_fresh_unique_ones() {
        let mut rng = rand::rng();
        let pods: BTreeSet<String> = ["aaaaa".into()].into();
        let pvcs: BTreeSet<String> = ["aaaaa".into(), "bbbbb".into(), "ccccc".into()].into();
        let ids = available_ids(4, &pods, &pvcs, &mut rng);
        assert_eq!(&ids[..2], ["bbbbb", "ccccc"]);
        assert_eq!(ids.len(), 4);
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), 4);
        for id in &ids[2..] {
            assert_eq!(id.len(), INSTANCE_ID_LEN);
            assert!(id.bytes().all(|b| ALPHANUMS.contains(&b)));
            assert!(!pods.contains(id) && !pvcs.contains(id));
        }
        assert_eq!(
            available_ids(1, &pods, &pvcs, &mut rng),
            vec!["bbbbb".to_string()]
        );
    }
}
