//! PersistentPodState decisions shared by the controller and the pod webhook (OpenKruise
//! v1.9.0 `pkg/webhook/pod/mutating/persistent_pod_state.go`, `pkg/util/configuration`):
//! which workload kinds a PersistentPodState may target (StatefulSet of `apps` or
//! `apps.kruise.io`, and the kinds of the `kruise-configuration` ConfigMap's
//! `PPS_Watch_Custom_Workload_WhiteList`), which PersistentPodState belongs to a workload, and
//! the node affinity a recreated pod gets from its recorded state.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
};
use kruise_api::apps::v1alpha1::{
    PersistentPodState, PersistentPodStateSpec, PodState, TargetReference,
};

/// Key of the whitelist in ConfigMap `kruise-configuration`.
pub const WHITELIST_KEY: &str = "PPS_Watch_Custom_Workload_WhiteList";

/// One whitelisted kind (Go's `schema.GroupVersionKind`, whose JSON fields are `Group`,
/// `Version`, `Kind`, matched case-insensitively as Go's decoder does).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// `CustomWorkloadWhiteList`: the custom kinds a PersistentPodState may target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WhiteList {
    /// The kinds.
    pub workloads: Vec<Gvk>,
}

impl WhiteList {
    /// `GetPPSWatchCustomWorkloadWhiteList`: the whitelist from the ConfigMap's data (empty
    /// when the ConfigMap or the key is missing).
    ///
    /// # Errors
    /// The key's value is not the JSON Go decodes (the message of the decode error).
    pub fn from_data(data: Option<&BTreeMap<String, String>>) -> Result<Self, String> {
        let Some(raw) = data.and_then(|d| d.get(WHITELIST_KEY)) else {
            return Ok(Self::default());
        };
        let v: serde_json::Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        let field = |obj: &serde_json::Map<String, serde_json::Value>, name: &str| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut out = Self::default();
        let serde_json::Value::Object(top) = v else {
            return Err("json: cannot unmarshal into Go value of type configuration.CustomWorkloadWhiteList".into());
        };
        if let Some(serde_json::Value::Array(items)) = field(&top, "workloads") {
            for item in items {
                let serde_json::Value::Object(o) = item else {
                    continue;
                };
                let s = |n: &str| {
                    field(&o, n)
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                };
                out.workloads.push(Gvk {
                    group: s("group"),
                    version: s("version"),
                    kind: s("kind"),
                });
            }
        }
        Ok(out)
    }

    /// `ValidateAPIVersionAndKind`: StatefulSet of `apps` or `apps.kruise.io`, or a
    /// whitelisted group and kind (any version). An unparsable apiVersion is refused.
    pub fn allows(&self, api_version: &str, kind: &str) -> bool {
        let Some(group) = group_of(api_version) else {
            return false;
        };
        if is_default_support(group, kind) {
            return true;
        }
        self.workloads
            .iter()
            .any(|w| w.group == group && w.kind == kind)
    }
}

/// `IsDefaultSupport`: StatefulSets of `apps` and `apps.kruise.io`.
pub fn is_default_support(group: &str, kind: &str) -> bool {
    (group == "apps" || group == "apps.kruise.io") && kind == "StatefulSet"
}

/// The group of an apiVersion as Go's `schema.ParseGroupVersion` (`""` for `v1`); `None` when
/// it has more than one `/`.
pub fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((g, v)) if !v.contains('/') => Some(g),
        Some(_) => None,
    }
}

/// `util.IsReferenceEqual`: the same group (any version), kind and name.
pub fn is_reference_equal(a: &TargetReference, b: &TargetReference) -> bool {
    match (group_of(&a.api_version), group_of(&b.api_version)) {
        (Some(ga), Some(gb)) => ga == gb && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

/// `SelectorPersistentPodState`: the first PersistentPodState of `candidates` (the namespace's,
/// in the order given) not being deleted whose `targetRef` is `reference`.
pub fn select<'a, P: AsRef<PersistentPodState>>(
    candidates: &'a [P],
    reference: &TargetReference,
) -> Option<&'a PersistentPodState> {
    candidates
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .find(|p| is_reference_equal(reference, &p.spec.target_reference))
}

/// `createNodeAffinity`: the required node selector (the required topology keys the state
/// recorded; `None` without a required topology) and one preferred term per preferred topology
/// (weight kept; `In` the recorded value for each key it recorded).
pub fn create_node_affinity(
    spec: &PersistentPodStateSpec,
    state: &PodState,
) -> (
    Option<BTreeMap<String, String>>,
    Vec<PreferredSchedulingTerm>,
) {
    let recorded = state.node_topology_labels.clone().unwrap_or_default();
    let required = spec.required_persistent_topology.as_ref().map(|t| {
        t.node_topology_keys
            .iter()
            .filter_map(|k| Some((k.clone(), recorded.get(k)?.clone())))
            .collect::<BTreeMap<_, _>>()
    });
    let preferred = spec
        .preferred_persistent_topology
        .iter()
        .flatten()
        .map(|term| {
            let exprs: Vec<NodeSelectorRequirement> = term
                .preference
                .node_topology_keys
                .iter()
                .filter_map(|k| {
                    Some(NodeSelectorRequirement {
                        key: k.clone(),
                        operator: "In".into(),
                        values: Some(vec![recorded.get(k)?.clone()]),
                    })
                })
                .collect();
            PreferredSchedulingTerm {
                weight: term.weight,
                preference: NodeSelectorTerm {
                    match_expressions: (!exprs.is_empty()).then_some(exprs),
                    match_fields: None,
                },
            }
        })
        .collect();
    (required, preferred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1alpha1::{NodeTopologyTerm, PreferredTopologyTerm};

    fn r(api_version: &str, kind: &str, name: &str) -> TargetReference {
        TargetReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    #[test]
    fn whitelist_decodes_go_field_names_case_insensitively() {
        let data: BTreeMap<String, String> = [(
            WHITELIST_KEY.to_string(),
            r#"{"workloads":[{"Group":"apps.kruise.io","Version":"v1beta1","Kind":"StatefulSetLikeTest"},{"group":"x.io","kind":"Y"}]}"#.to_string(),
        )]
        .into();
        let w = WhiteList::from_data(Some(&data)).unwrap();
        assert_eq!(w.workloads.len(), 2);
        assert!(w.allows("apps.kruise.io/v1beta1", "StatefulSetLikeTest"));
        assert!(w.allows("x.io/v9", "Y"));
        assert!(!w.allows("x.io/v9", "Z"));
        assert!(w.allows("apps/v1", "StatefulSet"));
        assert!(w.allows("apps.kruise.io/v1alpha1", "StatefulSet"));
        assert!(!w.allows("apps/v1", "Deployment"));
        assert!(!w.allows("a/b/c", "StatefulSet"));
        assert!(WhiteList::from_data(None).unwrap().workloads.is_empty());
        let bad: BTreeMap<String, String> = [(WHITELIST_KEY.to_string(), "{".to_string())].into();
        assert!(WhiteList::from_data(Some(&bad)).is_err());
    }

    #[test]
    fn references_compare_by_group_kind_and_name() {
        assert!(is_reference_equal(
            &r("apps.kruise.io/v1alpha1", "StatefulSet", "a"),
            &r("apps.kruise.io/v1beta1", "StatefulSet", "a")
        ));
        assert!(!is_reference_equal(
            &r("apps/v1", "StatefulSet", "a"),
            &r("apps.kruise.io/v1beta1", "StatefulSet", "a")
        ));
        let mut deleting = PersistentPodState::new(
            "d",
            PersistentPodStateSpec {
                target_reference: r("apps/v1", "StatefulSet", "a"),
                ..Default::default()
            },
        );
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let live = PersistentPodState::new(
            "l",
            PersistentPodStateSpec {
                target_reference: r("apps/v1", "StatefulSet", "a"),
                ..Default::default()
            },
        );
        let all = [std::sync::Arc::new(deleting), std::sync::Arc::new(live)];
        assert_eq!(
            select(&all, &r("apps/v2", "StatefulSet", "a"))
                .and_then(|p| p.metadata.name.as_deref()),
            Some("l")
        );
        assert!(select(&all, &r("apps/v1", "StatefulSet", "b")).is_none());
    }

    #[test]
    fn node_affinity_takes_the_recorded_values_of_each_term() {
        let spec = PersistentPodStateSpec {
            required_persistent_topology: Some(NodeTopologyTerm {
                node_topology_keys: vec!["os".into(), "missing".into()],
            }),
            preferred_persistent_topology: Some(vec![
                PreferredTopologyTerm {
                    weight: 100,
                    preference: NodeTopologyTerm {
                        node_topology_keys: vec!["host".into()],
                    },
                },
                PreferredTopologyTerm {
                    weight: 5,
                    preference: NodeTopologyTerm {
                        node_topology_keys: vec!["none".into()],
                    },
                },
            ]),
            ..Default::default()
        };
        let state = PodState {
            node_name: Some("n".into()),
            node_topology_labels: Some(
                [
                    ("os".to_string(), "linux".to_string()),
                    ("host".to_string(), "n".to_string()),
                ]
                .into(),
            ),
            annotations: None,
        };
        let (required, preferred) = create_node_affinity(&spec, &state);
        assert_eq!(
            required,
            Some([("os".to_string(), "linux".to_string())].into())
        );
        assert_eq!(
            serde_json::to_value(&preferred).unwrap(),
            serde_json::json!([
                {"weight": 100, "preference": {"matchExpressions": [{"key": "host", "operator": "In", "values": ["n"]}]}},
                {"weight": 5, "preference": {}}
            ])
        );
        let (required, _) = create_node_affinity(&PersistentPodStateSpec::default(), &state);
        assert_eq!(required, None);
    }
}
