//! Pure decisions of the PersistentPodState controller (OpenKruise v1.9.0
//! `pkg/controller/persistentpodstate/persistent_pod_state_controller.go`): which pods get a
//! recorded state, what is recorded, which states are dropped on scale-in, and the object a
//! workload's `kruise.io/auto-generate-persistent-pod-state` annotations ask for.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kruise_api::apps::v1alpha1::{
    NodeTopologyTerm, PersistentPodAnnotation, PersistentPodState, PersistentPodStateSpec,
    PersistentPodStateStatus, PodState, PreferredTopologyTerm, TargetReference,
    persistent_pod_state_retention_policy::WHEN_DELETED,
};
use kruise_api::keys;

/// The workload behind a `targetRef`, as the controller reads it (OpenKruise's
/// `ScaleAndSelector` reduced to what it uses).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    /// apiVersion of the reference that found it.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// `spec.replicas` (0 when a StatefulSet-like kind has none).
    pub replicas: i32,
    /// Advanced StatefulSet `spec.reserveOrdinals`, expanded (empty for other kinds).
    pub reserve_ordinals: BTreeSet<i64>,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// Its annotations.
    pub annotations: BTreeMap<String, String>,
}

/// A pod as the pass reads it: name, node, readiness and annotations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodView {
    /// Pod name.
    pub name: String,
    /// `spec.nodeName` (empty: not scheduled).
    pub node_name: String,
    /// `podutil.IsPodReady`.
    pub ready: bool,
    /// The pod's annotations.
    pub annotations: BTreeMap<String, String>,
}

/// The node label keys a PersistentPodState records: the required topology's keys and every
/// preferred term's keys (a sorted set, as Go's `sets.String`).
pub fn topology_keys(spec: &PersistentPodStateSpec) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = spec
        .required_persistent_topology
        .iter()
        .flat_map(|t| t.node_topology_keys.iter().cloned())
        .collect();
    for term in spec.preferred_persistent_topology.iter().flatten() {
        keys.extend(term.preference.node_topology_keys.iter().cloned());
    }
    keys
}

/// The pod annotation keys a PersistentPodState records (`persistentPodAnnotations[*].key`).
pub fn annotation_keys(spec: &PersistentPodStateSpec) -> BTreeSet<String> {
    spec.persistent_pod_annotations
        .iter()
        .flatten()
        .map(|a| a.key.clone())
        .collect()
}

/// Whether `state` already records `pod` on its node with these keys, so it is not rebuilt.
/// As OpenKruise, the recorded annotations are compared by their **values** with the wanted
/// keys (its loop ranges over the map's values), so a state holding annotations is rebuilt on
/// every pass (to the same content).
pub fn already_recorded(
    state: &PodState,
    node_name: &str,
    topology: &BTreeSet<String>,
    annotations: &BTreeSet<String>,
) -> bool {
    let current_keys: BTreeSet<String> = state
        .node_topology_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .collect();
    let current_values: BTreeSet<String> = state
        .annotations
        .iter()
        .flatten()
        .map(|(_, v)| v.clone())
        .collect();
    state.node_name.as_deref().unwrap_or("") == node_name
        && *topology == current_keys
        && *annotations == current_values
}

/// `getPodState`: the node name, the node's labels among `topology` and the pod's annotations
/// among `annotations` (empty maps are left out, as Go's `omitempty` writes them).
pub fn pod_state(
    node_name: &str,
    node_labels: Option<&BTreeMap<String, String>>,
    pod_annotations: &BTreeMap<String, String>,
    topology: &BTreeSet<String>,
    annotations: &BTreeSet<String>,
) -> PodState {
    let labels: BTreeMap<String, String> = topology
        .iter()
        .filter_map(|k| Some((k.clone(), node_labels?.get(k)?.clone())))
        .collect();
    let anns: BTreeMap<String, String> = annotations
        .iter()
        .filter_map(|k| Some((k.clone(), pod_annotations.get(k)?.clone())))
        .collect();
    PodState {
        node_name: (!node_name.is_empty()).then(|| node_name.to_string()),
        node_topology_labels: (!labels.is_empty()).then_some(labels),
        annotations: (!anns.is_empty()).then_some(anns),
    }
}

/// `parseStsPodIndex`: the ordinal after the pod name's last `-`.
pub fn pod_index(pod_name: &str) -> Option<i64> {
    let suffix = match pod_name.rfind('-') {
        Some(i) => &pod_name[i + 1..],
        None => pod_name,
    };
    go_atoi(suffix)
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits, nothing else.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `isInStatefulSetReplicas`: whether ordinal `index` is one of the first `replicas` ordinals
/// not reserved by `reserve_ordinals`.
pub fn in_replicas(index: i64, replicas: i32, reserve_ordinals: &BTreeSet<i64>) -> bool {
    let mut counted = 0;
    let mut ordinal = 0i64;
    while counted < replicas {
        if !reserve_ordinals.contains(&ordinal) {
            if ordinal == index {
                return true;
            }
            counted += 1;
        }
        ordinal += 1;
    }
    false
}

/// The status a pass writes for `pps` (OpenKruise's `Reconcile` after the lookups): `None`
/// workload (gone, or being deleted) clears every state; otherwise each ready, scheduled pod
/// not already recorded gets its state (`node_labels` answers a node's labels, `None` when
/// the node cannot be read: the pod is skipped), and unless the retention policy is
/// `WhenDeleted`, states of ordinals outside the replicas whose pod no longer exists are
/// dropped.
pub fn next_status(
    pps: &PersistentPodState,
    workload: Option<&Workload>,
    pods: &[PodView],
    node_labels: &mut dyn FnMut(&str) -> Option<BTreeMap<String, String>>,
) -> PersistentPodStateStatus {
    let generation = pps.metadata.generation.unwrap_or(0);
    let Some(workload) = workload.filter(|w| !w.deleting) else {
        return PersistentPodStateStatus {
            observed_generation: generation,
            pod_states: None,
        };
    };
    let mut states = pps
        .status
        .as_ref()
        .and_then(|s| s.pod_states.clone())
        .unwrap_or_default();
    let topology = topology_keys(&pps.spec);
    let annotations = annotation_keys(&pps.spec);
    for pod in pods {
        if !pod.ready || pod.node_name.is_empty() {
            continue;
        }
        if let Some(state) = states.get(&pod.name)
            && already_recorded(state, &pod.node_name, &topology, &annotations)
        {
            continue;
        }
        let Some(labels) = node_labels(&pod.node_name) else {
            continue;
        };
        let state = pod_state(
            &pod.node_name,
            Some(&labels),
            &pod.annotations,
            &topology,
            &annotations,
        );
        states.insert(pod.name.clone(), state);
    }
    if pps.spec.persistent_pod_state_retention_policy.as_deref() != Some(WHEN_DELETED) {
        states.retain(|name, _| {
            let Some(index) = pod_index(name) else {
                return true;
            };
            in_replicas(index, workload.replicas, &workload.reserve_ordinals)
                || pods.iter().any(|p| &p.name == name)
        });
    }
    PersistentPodStateStatus {
        observed_generation: generation,
        pod_states: (!states.is_empty()).then_some(states),
    }
}

/// Whether a workload's annotations ask for a generated PersistentPodState
/// (`auto-generate-persistent-pod-state: "true"` and a required or preferred topology), as
/// OpenKruise's workload event handlers test on create.
pub fn wants_generated(annotations: &BTreeMap<String, String>) -> bool {
    let get = |k: &str| annotations.get(k).map(String::as_str).unwrap_or("");
    get(keys::AUTO_GENERATE_PERSISTENT_POD_STATE) == "true"
        && (!get(keys::REQUIRED_PERSISTENT_TOPOLOGY).is_empty()
            || !get(keys::PREFERRED_PERSISTENT_TOPOLOGY).is_empty())
}

/// Whether an update of a workload's annotations concerns its generated PersistentPodState
/// (the auto-generate, required or preferred topology annotation changed).
pub fn generation_annotations_changed(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> bool {
    [
        keys::AUTO_GENERATE_PERSISTENT_POD_STATE,
        keys::REQUIRED_PERSISTENT_TOPOLOGY,
        keys::PREFERRED_PERSISTENT_TOPOLOGY,
    ]
    .iter()
    .any(|k| old.get(*k) != new.get(*k))
}

/// What to do with a workload's generated PersistentPodState (`autoGeneratePersistentPodState`).
#[derive(Debug, Clone, PartialEq)]
pub enum Generated {
    /// Nothing (annotation incomplete, or not asked and none exists).
    Nothing,
    /// The object it should be (create it, or update the spec of the existing one if it
    /// differs).
    Ensure(Box<PersistentPodState>),
    /// Delete the existing object of the workload's name.
    Delete,
}

/// `autoGeneratePersistentPodState`'s decision for `workload`, given whether a
/// PersistentPodState of its name exists.
pub fn generated(workload: &Workload, exists: bool) -> Generated {
    let get = |k: &str| {
        workload
            .annotations
            .get(k)
            .map(String::as_str)
            .unwrap_or("")
    };
    if get(keys::AUTO_GENERATE_PERSISTENT_POD_STATE) == "true" {
        if get(keys::REQUIRED_PERSISTENT_TOPOLOGY).is_empty()
            && get(keys::PREFERRED_PERSISTENT_TOPOLOGY).is_empty()
        {
            return Generated::Nothing;
        }
        return Generated::Ensure(Box::new(generated_object(workload)));
    }
    if exists {
        Generated::Delete
    } else {
        Generated::Nothing
    }
}

/// `newStatefulSetPersistentPodState`: named as the workload, controlled by it, its topology
/// and annotation keys split from the workload's annotations at `,`.
pub fn generated_object(workload: &Workload) -> PersistentPodState {
    let get = |k: &str| {
        workload
            .annotations
            .get(k)
            .map(String::as_str)
            .unwrap_or("")
    };
    let split = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    let required = get(keys::REQUIRED_PERSISTENT_TOPOLOGY);
    let preferred = get(keys::PREFERRED_PERSISTENT_TOPOLOGY);
    let annotations = get(keys::PERSISTENT_POD_ANNOTATIONS);
    let spec = PersistentPodStateSpec {
        target_reference: TargetReference {
            api_version: workload.api_version.clone(),
            kind: workload.kind.clone(),
            name: workload.name.clone(),
        },
        persistent_pod_annotations: (!annotations.is_empty()).then(|| {
            split(annotations)
                .into_iter()
                .map(|key| PersistentPodAnnotation { key })
                .collect()
        }),
        required_persistent_topology: (!required.is_empty()).then(|| NodeTopologyTerm {
            node_topology_keys: split(required),
        }),
        preferred_persistent_topology: (!preferred.is_empty()).then(|| {
            vec![PreferredTopologyTerm {
                weight: 100,
                preference: NodeTopologyTerm {
                    node_topology_keys: split(preferred),
                },
            }]
        }),
        persistent_pod_state_retention_policy: None,
    };
    PersistentPodState {
        metadata: ObjectMeta {
            name: Some(workload.name.clone()),
            namespace: Some(workload.namespace.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: workload.api_version.clone(),
                kind: workload.kind.clone(),
                name: workload.name.clone(),
                uid: workload.uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            }]),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

/// Go's `reflect.DeepEqual` of two specs as OpenKruise compares the generated spec with the
/// existing one (an empty list and an absent one differ in Go only when one is `nil`: the
/// API server drops empty lists, so absent and empty are taken as equal here).
pub fn same_spec(a: &PersistentPodStateSpec, b: &PersistentPodStateSpec) -> bool {
    fn norm(s: &PersistentPodStateSpec) -> PersistentPodStateSpec {
        let mut s = s.clone();
        if s.persistent_pod_annotations
            .as_ref()
            .is_some_and(Vec::is_empty)
        {
            s.persistent_pod_annotations = None;
        }
        if s.preferred_persistent_topology
            .as_ref()
            .is_some_and(Vec::is_empty)
        {
            s.preferred_persistent_topology = None;
        }
        if s.persistent_pod_state_retention_policy.as_deref() == Some("") {
            s.persistent_pod_state_retention_policy = None;
        }
        s
    }
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(required: &[&str], preferred: &[&str], anns: &[&str]) -> PersistentPodStateSpec {
        let w = Workload {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "s".into(),
            namespace: "ns".into(),
            annotations: [
                (keys::AUTO_GENERATE_PERSISTENT_POD_STATE, "true".to_string()),
                (keys::REQUIRED_PERSISTENT_TOPOLOGY, required.join(",")),
                (keys::PREFERRED_PERSISTENT_TOPOLOGY, preferred.join(",")),
                (keys::PERSISTENT_POD_ANNOTATIONS, anns.join(",")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            ..Default::default()
        };
        generated_object(&w).spec
    }

    fn pps(spec: PersistentPodStateSpec, states: &[(&str, PodState)]) -> PersistentPodState {
        let mut p = PersistentPodState::new("s", spec);
        p.metadata.generation = Some(3);
        if !states.is_empty() {
            p.status = Some(PersistentPodStateStatus {
                observed_generation: 2,
                pod_states: Some(
                    states
                        .iter()
                        .map(|(n, s)| (n.to_string(), s.clone()))
                        .collect(),
                ),
            });
        }
        p
    }

    fn pod(name: &str, node: &str, ready: bool) -> PodView {
        PodView {
            name: name.into(),
            node_name: node.into(),
            ready,
            annotations: [("ip".to_string(), format!("ip-{name}"))].into(),
        }
    }

    fn labels(node: &str) -> Option<BTreeMap<String, String>> {
        Some(
            [
                ("kubernetes.io/hostname".to_string(), node.to_string()),
                ("kubernetes.io/os".to_string(), "linux".to_string()),
                ("other".to_string(), "x".to_string()),
            ]
            .into(),
        )
    }

    fn workload(replicas: i32) -> Workload {
        Workload {
            replicas,
            ..Default::default()
        }
    }

    #[test]
    fn generated_object_splits_annotations_and_is_controlled_by_the_workload() {
        let w = Workload {
            api_version: "apps.kruise.io/v1beta1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            namespace: "ns".into(),
            uid: "u1".into(),
            annotations: [
                (keys::AUTO_GENERATE_PERSISTENT_POD_STATE, "true"),
                (keys::PREFERRED_PERSISTENT_TOPOLOGY, "a,b"),
                (keys::PERSISTENT_POD_ANNOTATIONS, "ip"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            ..Default::default()
        };
        let Generated::Ensure(obj) = generated(&w, false) else {
            panic!("expected an object");
        };
        let v = serde_json::to_value(&*obj).unwrap();
        assert_eq!(
            v["metadata"]["ownerReferences"],
            serde_json::json!([{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                "name": "web", "uid": "u1", "controller": true}])
        );
        assert_eq!(
            v["spec"],
            serde_json::json!({
                "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
                "persistentPodAnnotations": [{"key": "ip"}],
                "preferredPersistentTopology": [{"weight": 100, "preference": {"nodeTopologyKeys": ["a", "b"]}}]
            })
        );
    }

    #[test]
    fn generation_needs_a_topology_and_removal_deletes_only_an_existing_object() {
        let mut w = workload(1);
        w.annotations.insert(
            keys::AUTO_GENERATE_PERSISTENT_POD_STATE.into(),
            "true".into(),
        );
        assert_eq!(generated(&w, true), Generated::Nothing);
        assert!(!wants_generated(&w.annotations));
        w.annotations.insert(
            keys::AUTO_GENERATE_PERSISTENT_POD_STATE.into(),
            "false".into(),
        );
        assert_eq!(generated(&w, true), Generated::Delete);
        assert_eq!(generated(&w, false), Generated::Nothing);
    }

    #[test]
    fn only_the_generation_annotations_count_as_a_change() {
        let a: BTreeMap<String, String> = [
            (
                keys::AUTO_GENERATE_PERSISTENT_POD_STATE.to_string(),
                "true".to_string(),
            ),
            (
                keys::PREFERRED_PERSISTENT_TOPOLOGY.to_string(),
                "h".to_string(),
            ),
        ]
        .into();
        assert!(wants_generated(&a));
        let mut b = a.clone();
        b.insert("other".into(), "x".into());
        b.insert(keys::PERSISTENT_POD_ANNOTATIONS.into(), "ip".into());
        assert!(!generation_annotations_changed(&a, &b));
        b.insert(keys::REQUIRED_PERSISTENT_TOPOLOGY.into(), "os".into());
        assert!(generation_annotations_changed(&a, &b));
        b.remove(keys::AUTO_GENERATE_PERSISTENT_POD_STATE);
        assert!(!wants_generated(&b));
    }

    #[test]
    fn ready_scheduled_pods_are_recorded_with_the_wanted_keys_only() {
        let p = pps(
            spec(&["kubernetes.io/os"], &["kubernetes.io/hostname"], &["ip"]),
            &[],
        );
        let pods = [
            pod("s-0", "n0", true),
            pod("s-1", "n1", false),
            pod("s-2", "", true),
        ];
        let st = next_status(&p, Some(&workload(3)), &pods, &mut |n| labels(n));
        assert_eq!(st.observed_generation, 3);
        let states = st.pod_states.unwrap();
        assert_eq!(states.len(), 1);
        let s0 = &states["s-0"];
        assert_eq!(s0.node_name.as_deref(), Some("n0"));
        assert_eq!(s0.node_topology_labels.as_ref().unwrap().len(), 2);
        assert_eq!(s0.annotations.as_ref().unwrap()["ip"], "ip-s-0");
    }

    #[test]
    fn an_unreadable_node_skips_the_pod() {
        let p = pps(spec(&["kubernetes.io/os"], &[], &[]), &[]);
        let st = next_status(
            &p,
            Some(&workload(1)),
            &[pod("s-0", "n0", true)],
            &mut |_| None,
        );
        assert_eq!(st.pod_states, None);
    }

    #[test]
    fn scale_in_drops_states_of_gone_pods_outside_the_replicas_unless_when_deleted() {
        let recorded = pod_state(
            "n4",
            labels("n4").as_ref(),
            &BTreeMap::new(),
            &topology_keys(&spec(&["kubernetes.io/os"], &[], &[])),
            &BTreeSet::new(),
        );
        let mut p = pps(
            spec(&["kubernetes.io/os"], &[], &[]),
            &[
                ("s-0", recorded.clone()),
                ("s-4", recorded.clone()),
                ("odd", recorded.clone()),
            ],
        );
        let st = next_status(&p, Some(&workload(1)), &[], &mut |n| labels(n));
        let names: Vec<_> = st.pod_states.unwrap().into_keys().collect();
        assert_eq!(names, ["odd", "s-0"]);
        // Still existing (terminating) pod of a removed ordinal: kept.
        let st = next_status(&p, Some(&workload(1)), &[pod("s-4", "", false)], &mut |n| {
            labels(n)
        });
        assert!(st.pod_states.unwrap().contains_key("s-4"));
        p.spec.persistent_pod_state_retention_policy = Some(WHEN_DELETED.into());
        let st = next_status(&p, Some(&workload(1)), &[], &mut |n| labels(n));
        assert_eq!(st.pod_states.unwrap().len(), 3);
    }

    #[test]
    fn a_gone_or_deleting_workload_clears_the_states() {
        let p = pps(spec(&["a"], &[], &[]), &[("s-0", PodState::default())]);
        assert_eq!(
            next_status(&p, None, &[], &mut |n| labels(n)).pod_states,
            None
        );
        let mut w = workload(3);
        w.deleting = true;
        assert_eq!(
            next_status(&p, Some(&w), &[], &mut |n| labels(n)).pod_states,
            None
        );
    }

    #[test]
    fn recorded_states_are_compared_as_openkruise_does() {
        let topology: BTreeSet<String> = ["a".to_string()].into();
        let state = PodState {
            node_name: Some("n".into()),
            node_topology_labels: Some([("a".to_string(), "1".to_string())].into()),
            annotations: None,
        };
        assert!(already_recorded(&state, "n", &topology, &BTreeSet::new()));
        assert!(!already_recorded(&state, "m", &topology, &BTreeSet::new()));
        // Annotations are compared by value: a state with annotations is never "recorded".
        let mut with = state.clone();
        with.annotations = Some([("ip".to_string(), "1.2.3.4".to_string())].into());
        assert!(!already_recorded(
            &with,
            "n",
            &topology,
            &["ip".to_string()].into()
        ));
    }

    #[test]
    fn replicas_skip_reserved_ordinals_and_indexes_parse_as_atoi() {
        let reserved: BTreeSet<i64> = [1].into();
        assert!(in_replicas(0, 2, &reserved));
        assert!(!in_replicas(1, 2, &reserved));
        assert!(in_replicas(2, 2, &reserved));
        assert!(!in_replicas(3, 2, &reserved));
        assert!(!in_replicas(0, -1, &BTreeSet::new()));
        assert_eq!(pod_index("web-12"), Some(12));
        assert_eq!(pod_index("web-x"), None);
        assert_eq!(pod_index("web-"), None);
    }
}
