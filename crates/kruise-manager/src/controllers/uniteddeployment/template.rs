//! The subset workloads a UnitedDeployment builds (OpenKruise v1.9.0
//! `pkg/controller/uniteddeployment/adapter`: `ApplySubsetTemplate` of the StatefulSet, Advanced
//! StatefulSet, CloneSet and Deployment adapters), written on the workload's JSON so one code
//! path serves the four kinds: labels (the template's, the selector's `matchLabels`,
//! `apps.kruise.io/controller-revision-hash`, `apps.kruise.io/subset-name`), annotations,
//! `generateName` `<ud>-<subset>-`, the controller reference, the spec from the template with the
//! subset's selector, replicas and partition, the pod template's subset and revision labels, the
//! subset's node selector term and tolerations, then the subset's `patch` (a strategic merge patch
//! with the `PodTemplateSpec` schema: [`kruise_engines::strategicpatch`]) and the
//! `apps.kruise.io/subset-patch` annotation.

use serde_json::{Map, Value, json};

use kruise_api::apps::v1alpha1::{Subset as SubsetSpec, UnitedDeployment};
use kruise_api::keys;

/// The four kinds of subset workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `apps/v1` StatefulSet (`statefulSetTemplate`).
    StatefulSet,
    /// `apps.kruise.io/v1beta1` StatefulSet (`advancedStatefulSetTemplate`).
    AdvancedStatefulSet,
    /// `apps.kruise.io/v1alpha1` CloneSet (`cloneSetTemplate`).
    CloneSet,
    /// `apps/v1` Deployment (`deploymentTemplate`).
    Deployment,
}

impl Kind {
    /// Every kind, in OpenKruise's `getSubsetControls` order.
    pub const ALL: [Kind; 4] = [
        Kind::StatefulSet,
        Kind::AdvancedStatefulSet,
        Kind::CloneSet,
        Kind::Deployment,
    ];

    /// The kind of the UnitedDeployment's template (`None`: no template set).
    pub fn of(ud: &UnitedDeployment) -> Option<Kind> {
        let t = ud.spec.template.as_ref()?;
        if t.stateful_set_template.is_some() {
            Some(Kind::StatefulSet)
        } else if t.advanced_stateful_set_template.is_some() {
            Some(Kind::AdvancedStatefulSet)
        } else if t.clone_set_template.is_some() {
            Some(Kind::CloneSet)
        } else if t.deployment_template.is_some() {
            Some(Kind::Deployment)
        } else {
            None
        }
    }

    /// OpenKruise's subset type name (`subSetType`), used in Events.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::StatefulSet => "StatefulSet",
            Kind::AdvancedStatefulSet => "AdvancedStatefulSet",
            Kind::CloneSet => "CloneSet",
            Kind::Deployment => "Deployment",
        }
    }

    /// `apiVersion` and `kind` of the workload.
    pub fn type_meta(self) -> (&'static str, &'static str) {
        match self {
            Kind::StatefulSet => ("apps/v1", "StatefulSet"),
            Kind::AdvancedStatefulSet => ("apps.kruise.io/v1beta1", "StatefulSet"),
            Kind::CloneSet => ("apps.kruise.io/v1alpha1", "CloneSet"),
            Kind::Deployment => ("apps/v1", "Deployment"),
        }
    }

    fn field(self) -> &'static str {
        match self {
            Kind::StatefulSet => "statefulSetTemplate",
            Kind::AdvancedStatefulSet => "advancedStatefulSetTemplate",
            Kind::CloneSet => "cloneSetTemplate",
            Kind::Deployment => "deploymentTemplate",
        }
    }
}

/// `getSubsetPrefix`: `<ud>-<subset>-`, or `<ud>-` when that is not a valid name prefix.
pub fn subset_prefix(ud: &str, subset: &str) -> String {
    let prefix = format!("{ud}-{subset}-");
    if kruise_api::validation::names::name_is_dns_subdomain(&prefix, true).is_empty() {
        prefix
    } else {
        format!("{ud}-")
    }
}

fn obj<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    let map = v.as_object_mut().expect("an object");
    let slot = map.entry(key.to_owned()).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("an object")
}

/// `ApplySubsetTemplate`: `workload` (the existing workload's JSON, or `{}` for a new one)
/// becomes subset `subset_name` of `ud` at `revision` with `replicas` and `partition`.
///
/// # Errors
/// `fail to find subset config <name>`, a template that cannot be encoded, or a patch that
/// cannot be applied.
pub fn apply_subset_template(
    ud: &UnitedDeployment,
    kind: Kind,
    subset_name: &str,
    revision: &str,
    replicas: i32,
    partition: i32,
    workload: &mut Value,
) -> Result<(), String> {
    let subset = ud
        .spec
        .topology
        .as_ref()
        .and_then(|t| t.subsets.as_ref())
        .and_then(|s| s.iter().find(|s| s.name == subset_name))
        .ok_or_else(|| format!("fail to find subset config {subset_name}"))?;
    let template = serde_json::to_value(ud.spec.template.as_ref())
        .map_err(|e| e.to_string())?
        .get(kind.field())
        .cloned()
        .unwrap_or(Value::Null);
    if !workload.is_object() {
        *workload = json!({});
    }
    let (api_version, kind_name) = kind.type_meta();
    workload["apiVersion"] = json!(api_version);
    workload["kind"] = json!(kind_name);
    let ud_name = ud.metadata.name.clone().unwrap_or_default();
    {
        let meta = obj(workload, "metadata");
        meta.insert("namespace".into(), json!(ud.metadata.namespace));
        let labels = meta
            .entry("labels")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("labels are not an object")?;
        if let Some(l) = template
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
        {
            for (k, v) in l {
                labels.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in ud.spec.selector.match_labels.iter().flatten() {
            labels.insert(k.clone(), json!(v));
        }
        labels.insert(
            keys::KRUISE_CONTROLLER_REVISION_HASH.into(),
            json!(revision),
        );
        labels.insert(keys::SUBSET_NAME.into(), json!(subset_name));
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("annotations are not an object")?;
        if let Some(a) = template
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            for (k, v) in a {
                annotations.insert(k.clone(), v.clone());
            }
        }
        meta.insert(
            "generateName".into(),
            json!(subset_prefix(&ud_name, subset_name)),
        );
        set_controller_reference(meta, ud);
    }
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut selector = serde_json::to_value(&ud.spec.selector).map_err(|e| e.to_string())?;
    obj(&mut selector, "matchLabels").insert(keys::SUBSET_NAME.into(), json!(subset_name));
    spec["selector"] = selector;
    spec["replicas"] = json!(replicas);
    let strategy_type = template
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        Kind::CloneSet => {
            obj(&mut spec, "updateStrategy").insert("partition".into(), json!(partition));
        }
        Kind::StatefulSet | Kind::AdvancedStatefulSet
            if strategy_type.is_empty() || strategy_type == "RollingUpdate" =>
        {
            let us = obj(&mut spec, "updateStrategy");
            if kind == Kind::StatefulSet {
                us.insert("type".into(), json!("RollingUpdate"));
            }
            let ru = us.entry("rollingUpdate").or_insert_with(|| json!({}));
            if !ru.is_object() {
                *ru = json!({});
            }
            ru["partition"] = json!(partition);
        }
        _ => {}
    }
    {
        let tpl = obj(&mut spec, "template");
        let tpl_meta = tpl.entry("metadata").or_insert_with(|| json!({}));
        if !tpl_meta.is_object() {
            *tpl_meta = json!({});
        }
        let labels = obj(tpl_meta, "labels");
        labels.insert(keys::SUBSET_NAME.into(), json!(subset_name));
        labels.insert(
            keys::KRUISE_CONTROLLER_REVISION_HASH.into(),
            json!(revision),
        );
    }
    {
        let pod_spec = spec
            .pointer_mut("/template")
            .map(|t| {
                let m = t.as_object_mut().expect("template object");
                m.entry("spec").or_insert_with(|| json!({}))
            })
            .ok_or("no template")?;
        if !pod_spec.is_object() {
            *pod_spec = json!({});
        }
        attach_node_affinity(pod_spec, subset);
        attach_tolerations(pod_spec, subset);
    }
    if let Some(patch) = &subset.patch {
        let tpl = spec.get_mut("template").ok_or("no template")?;
        *tpl = kruise_engines::strategicpatch::strategic_merge_patch(
            tpl,
            patch,
            kruise_engines::strategicpatch::Schema::PodTemplateSpec,
        )?;
    }
    workload["spec"] = spec;
    obj(workload, "metadata")
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("annotations are not an object")?
        .insert(
            keys::SUBSET_PATCH.into(),
            json!(super::plan::patch_text(subset)),
        );
    Ok(())
}

/// `controllerutil.SetControllerReference`: the UnitedDeployment's reference replaces one to
/// the same owner and is added otherwise.
fn set_controller_reference(meta: &mut Map<String, Value>, ud: &UnitedDeployment) {
    let uid = ud.metadata.uid.clone().unwrap_or_default();
    let reference = json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "UnitedDeployment",
        "name": ud.metadata.name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let refs = meta.entry("ownerReferences").or_insert_with(|| json!([]));
    if !refs.is_array() {
        *refs = json!([]);
    }
    let list = refs.as_array_mut().expect("an array");
    if let Some(existing) = list.iter_mut().find(|r| {
        r.get("uid").and_then(Value::as_str) == Some(uid.as_str())
            || (r.get("kind").and_then(Value::as_str) == Some("UnitedDeployment")
                && r.get("name") == reference.get("name"))
    }) {
        *existing = reference;
    } else {
        list.push(reference);
    }
}

/// `attachNodeAffinity`: the subset's `matchExpressions` are appended to every required node
/// selector term of the pod (a first empty term is created when there is none).
fn attach_node_affinity(pod_spec: &mut Value, subset: &SubsetSpec) {
    let exprs = subset
        .node_selector_term
        .as_ref()
        .and_then(|t| t.match_expressions.as_ref())
        .filter(|e| !e.is_empty());
    let Some(exprs) = exprs else {
        return;
    };
    let exprs: Vec<Value> = exprs
        .iter()
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect();
    let aff = obj(pod_spec, "affinity");
    let na = aff.entry("nodeAffinity").or_insert_with(|| json!({}));
    if !na.is_object() {
        *na = json!({});
    }
    let req = obj(na, "requiredDuringSchedulingIgnoredDuringExecution");
    let terms = req.entry("nodeSelectorTerms").or_insert_with(|| json!([]));
    if !terms.is_array() {
        *terms = json!([]);
    }
    let terms = terms.as_array_mut().expect("an array");
    if terms.is_empty() {
        terms.push(json!({}));
    }
    for term in terms.iter_mut() {
        if !term.is_object() {
            *term = json!({});
        }
        let list = term
            .as_object_mut()
            .expect("an object")
            .entry("matchExpressions")
            .or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        list.as_array_mut()
            .expect("an array")
            .extend(exprs.iter().cloned());
    }
}

/// `attachTolerations`: the subset's tolerations are appended to the pod's.
fn attach_tolerations(pod_spec: &mut Value, subset: &SubsetSpec) {
    let Some(tols) = &subset.tolerations else {
        return;
    };
    let list = pod_spec
        .as_object_mut()
        .expect("an object")
        .entry("tolerations")
        .or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    list.as_array_mut()
        .expect("an array")
        .extend(tols.iter().filter_map(|t| serde_json::to_value(t).ok()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_falls_back_to_the_ud_name_when_too_long() {
        assert_eq!(subset_prefix("ud", "a"), "ud-a-");
        let long = "x".repeat(252);
        assert_eq!(subset_prefix("ud", &long), "ud-");
        assert_eq!(subset_prefix("ud", "A_b"), "ud-");
    }
}
