//! PersistentPodState cases (`persistentpodstate`): every rule of OpenKruise v1.9.0's
//! `pkg/webhook/persistentpodstate/validating` — a complete `targetRef` (apiVersion, kind and
//! name), its kind a StatefulSet of `apps` / `apps.kruise.io` or whitelisted in
//! `kruise-configuration` ([`cluster`] whitelists `corpus.kruise.io` `Like`), a required or
//! preferred topology, `targetRef` immutable on update, and no other PersistentPodState of the
//! namespace targeting the same group, kind and name (those of [`cluster`]); plus the decoding
//! of wrong JSON types.

use serde_json::{Value, json};

use super::{Builder, Case, KRUISE_NAMESPACE, NAMESPACE};

fn pps(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "PersistentPodState",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec
    })
}

fn target(api_version: &str, kind: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name})
}

/// The whitelist ConfigMap and two PersistentPodStates new ones may conflict with: over
/// StatefulSet `taken` (`apps/v1`) and over `Like` `taken-like`.
pub fn cluster() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": KRUISE_NAMESPACE},
            "data": {"PPS_Watch_Custom_Workload_WhiteList":
                "{\"workloads\":[{\"Group\":\"corpus.kruise.io\",\"Version\":\"v1\",\"Kind\":\"Like\"}]}"}
        }),
        pps(
            "corpus-taken",
            json!({"targetRef": target("apps/v1", "StatefulSet", "taken"),
                   "requiredPersistentTopology": {"nodeTopologyKeys": ["kubernetes.io/hostname"]}}),
        ),
        pps(
            "corpus-taken-like",
            json!({"targetRef": target("corpus.kruise.io/v1", "Like", "taken-like"),
                   "preferredPersistentTopology": [{"weight": 100, "preference": {"nodeTopologyKeys": ["zone"]}}]}),
        ),
    ]
}

/// The cases, deterministic.
pub fn cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "persistentpodstate",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "PersistentPodState",
        resource: "persistentpodstates",
        cases: Vec::new(),
    };
    let required = json!({"nodeTopologyKeys": ["kubernetes.io/hostname"]});
    let preferred = json!([{"weight": 100, "preference": {"nodeTopologyKeys": ["topology.kubernetes.io/zone"]}}]);
    let valid = pps(
        "pps",
        json!({"targetRef": target("apps.kruise.io/v1beta1", "StatefulSet", "web"),
               "requiredPersistentTopology": required}),
    );
    b.create("valid", valid.clone());

    // targetRef: every apiVersion × kind × name class, with each topology shape.
    let api_versions = [
        "apps/v1",
        "apps/v2",
        "apps.kruise.io/v1alpha1",
        "apps.kruise.io/v1beta1",
        "corpus.kruise.io/v1",
        "corpus.kruise.io/v9",
        "other.io/v1",
        "v1",
        "",
        "a/b/c",
    ];
    let kinds = [
        "StatefulSet",
        "Like",
        "Deployment",
        "CloneSet",
        "statefulset",
        "",
    ];
    let names = ["web", "taken", "taken-like", ""];
    let topologies: [(&str, Value); 3] = [
        ("required", json!({"requiredPersistentTopology": required})),
        (
            "preferred",
            json!({"preferredPersistentTopology": preferred}),
        ),
        ("none", json!({})),
    ];
    let mut n = 0;
    for av in api_versions {
        for kind in kinds {
            for name in names {
                // Every combination with the required topology; the others on a stride.
                for (t, (label, topo)) in topologies.iter().enumerate() {
                    if t > 0 && (n + t) % 5 != 0 {
                        continue;
                    }
                    let mut spec = topo.clone();
                    spec["targetRef"] = target(av, kind, name);
                    b.create(&format!("target-{n}-{label}"), pps("pps", spec));
                }
                n += 1;
            }
        }
    }

    // Topology shapes.
    for (label, spec) in [
        (
            "both",
            json!({"requiredPersistentTopology": required, "preferredPersistentTopology": preferred}),
        ),
        (
            "preferred-empty-list",
            json!({"preferredPersistentTopology": []}),
        ),
        (
            "required-empty-keys",
            json!({"requiredPersistentTopology": {"nodeTopologyKeys": []}}),
        ),
        ("required-null", json!({"requiredPersistentTopology": null})),
        (
            "preferred-null",
            json!({"preferredPersistentTopology": null}),
        ),
        (
            "preferred-zero-weight",
            json!({"preferredPersistentTopology": [{"weight": 0, "preference": {"nodeTopologyKeys": []}}]}),
        ),
        (
            "preferred-negative-weight",
            json!({"preferredPersistentTopology": [{"weight": -5, "preference": {"nodeTopologyKeys": ["a"]}}]}),
        ),
        (
            "annotations-only",
            json!({"persistentPodAnnotations": [{"key": "ip"}]}),
        ),
        (
            "annotations-and-required",
            json!({"persistentPodAnnotations": [{"key": "ip"}, {"key": ""}], "requiredPersistentTopology": required}),
        ),
        (
            "retention-when-deleted",
            json!({"requiredPersistentTopology": required, "persistentPodStateRetentionPolicy": "WhenDeleted"}),
        ),
        (
            "retention-when-scaled",
            json!({"requiredPersistentTopology": required, "persistentPodStateRetentionPolicy": "WhenScaled"}),
        ),
        (
            "retention-unknown",
            json!({"requiredPersistentTopology": required, "persistentPodStateRetentionPolicy": "Never"}),
        ),
        (
            "retention-only",
            json!({"persistentPodStateRetentionPolicy": "WhenDeleted"}),
        ),
        (
            "annotations-retention-none",
            json!({"persistentPodAnnotations": [], "persistentPodStateRetentionPolicy": "WhenScaled"}),
        ),
    ] {
        let mut spec = spec;
        spec["targetRef"] = target("apps/v1", "StatefulSet", "web");
        b.create(&format!("topology-{label}"), pps("pps", spec));
    }

    // Wrong JSON types.
    for (label, path, value) in [
        ("target-ref-string", "targetRef", json!("x")),
        ("target-ref-name-number", "targetRef/name", json!(5)),
        (
            "required-keys-string",
            "requiredPersistentTopology/nodeTopologyKeys",
            json!("k"),
        ),
        ("required-number", "requiredPersistentTopology", json!(3)),
        (
            "preferred-object",
            "preferredPersistentTopology",
            json!({"weight": 1}),
        ),
        (
            "retention-number",
            "persistentPodStateRetentionPolicy",
            json!(1),
        ),
        (
            "annotations-string",
            "persistentPodAnnotations",
            json!("ip"),
        ),
    ] {
        let mut o = valid.clone();
        let mut cur = &mut o["spec"];
        let parts: Vec<&str> = path.split('/').collect();
        for p in &parts[..parts.len() - 1] {
            cur = &mut cur[*p];
        }
        cur[parts[parts.len() - 1]] = value;
        b.create(&format!("type-{label}"), o);
    }

    // The name of an existing one (an update of itself is no conflict).
    b.create(
        "same-name-as-taken",
        pps(
            "corpus-taken",
            json!({"targetRef": target("apps/v1", "StatefulSet", "taken"), "requiredPersistentTopology": required}),
        ),
    );

    // Updates.
    let mut edits: Vec<(&str, Value, Value)> = Vec::new();
    let mut v = valid.clone();
    v["spec"]["targetRef"]["name"] = json!("other");
    edits.push(("target-name-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"]["apiVersion"] = json!("apps.kruise.io/v1alpha1");
    edits.push(("target-version-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"]["kind"] = json!("Like");
    edits.push(("target-kind-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["requiredPersistentTopology"] = json!({"nodeTopologyKeys": ["zone"]});
    edits.push(("required-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["persistentPodStateRetentionPolicy"] = json!("WhenDeleted");
    edits.push(("retention-changed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]
        .as_object_mut()
        .unwrap()
        .remove("requiredPersistentTopology");
    edits.push(("topology-removed", valid.clone(), v));
    let mut v = valid.clone();
    v["spec"]["targetRef"]["name"] = json!("taken");
    edits.push(("target-changed-to-taken", valid.clone(), v));
    let taken = pps(
        "corpus-taken",
        json!({"targetRef": target("apps/v1", "StatefulSet", "taken"), "requiredPersistentTopology": required}),
    );
    let mut v = taken.clone();
    v["spec"]["preferredPersistentTopology"] = preferred.clone();
    edits.push(("taken-itself-updated", taken.clone(), v));
    let mut v = valid.clone();
    v["metadata"]["labels"] = json!({"a": "b"});
    edits.push(("labels-added", valid, v));
    for (label, old, new) in edits {
        b.update(label, old, new);
    }
    b.cases
}
