//! WorkloadSpread admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/workloadspread/validating` (`/validate-apps-kruise-io-v1alpha1-workloadspread`,
//! `vworkloadspread.kb.io`, CREATE and UPDATE): `targetRef` (a CloneSet, Deployment,
//! ReplicaSet, Job or StatefulSet of the right group, or a kind of the `kruise-configuration`
//! whitelist), the subsets (names, node selector terms, tolerations, the patch applied to the
//! target's pod template when the target exists, `maxReplicas` all of one type, integers for a
//! StatefulSet, percentages summing to 100% unless the last subset is unlimited),
//! `scheduleStrategy`, `targetFilter`, no other WorkloadSpread of the namespace with the same
//! target, and `targetRef` immutable. Denials carry code 400 and the aggregated field errors;
//! with gate `WorkloadSpread` off every request is refused with code 403, as OpenKruise.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{TargetReference, WorkloadSpread, WorkloadSpreadSubset};
use kruise_api::validation::field::{ErrorList, FieldError, Path};
use kruise_api::validation::meta::label_selector_as_selector_error;
use kruise_api::validation::pod::{
    PodValidationOptions, validate_node_selector_term, validate_pod_spec, validate_tolerations,
};
use kruise_engines::strategicpatch::{Schema, strategic_merge_patch};
use kruise_runtime::features::Feature;
use kube::core::admission::Operation;
use serde_json::Value;

use crate::field::aggregate;
use crate::pod::workloadspread::{self as ws_util, CustomWorkload, group_of};
use crate::support::{CODE_BAD_REQUEST, allow, decode_object, decode_old_object, errored};
use crate::{HandlerContext, Request, Response};

/// `MaxScheduledFailedDuration` in seconds.
const MAX_SCHEDULED_FAILED_SECONDS: i32 = 300;

/// `/validate-apps-kruise-io-v1alpha1-workloadspread` (see the module docs).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    if !ctx.gates.enabled(Feature::WorkloadSpread) {
        return errored(req, 403, "feature-gate WorkloadSpread is not enabled");
    }
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj: WorkloadSpread = match decode_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<WorkloadSpread> = if req.operation == Operation::Update {
        match decode_old_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let ns = obj
        .metadata
        .namespace
        .clone()
        .or_else(|| req.namespace.clone())
        .unwrap_or_default();
    let mut errs = ErrorList::new();
    let (whitelist, template) = match &ctx.lookup {
        Some(lookup) => {
            let wl = ws_util::whitelist(lookup).await;
            let t = &obj.spec.target_reference;
            let template = if builtin_kind_ok(t) {
                ws_util::get_workload(lookup, &t.api_version, &t.kind, &ns, &t.name)
                    .await
                    .ok()
                    .flatten()
                    .and_then(|o| pod_template(&t.kind, &o.to_json()))
            } else {
                None
            };
            (wl, template)
        }
        None => (Vec::new(), None),
    };
    errs.extend(validate_spec(&obj, &whitelist, template.as_ref()));
    if let Some(lookup) = &ctx.lookup {
        match lookup.list_lazy::<WorkloadSpread>(&ns).await {
            Ok(others) => errs.extend(validate_conflict(
                &obj,
                others.iter().map(|o| o.as_ref()),
                &Path::new("spec"),
            )),
            Err(e) => errs.push(FieldError::internal(
                Path::new(""),
                format!("query other WorkloadSpread failed, err: {e}"),
            )),
        }
    }
    if let Some(old) = &old {
        errs.extend(validate_update(&obj, old));
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_BAD_REQUEST, msg),
        None => allow(req),
    }
}

/// Go's `%#v` of a `TargetReference` (how field errors show it).
pub fn target_text(t: &TargetReference) -> String {
    format!(
        "v1alpha1.TargetReference{{APIVersion:{:?}, Kind:{:?}, Name:{:?}}}",
        t.api_version, t.kind, t.name
    )
}

/// Go's `%#v` of an `intstr.IntOrString`.
fn intstr_text(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => format!("intstr.IntOrString{{Type:0, IntVal:{i}, StrVal:\"\"}}"),
        IntOrString::String(s) => {
            format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}")
        }
    }
}

fn builtin_kind_ok(t: &TargetReference) -> bool {
    let g = group_of(&t.api_version).unwrap_or("-");
    matches!(
        (t.kind.as_str(), g),
        ("CloneSet", "apps.kruise.io")
            | ("Deployment", "apps")
            | ("ReplicaSet", "apps")
            | ("Job", "batch")
            | ("StatefulSet", "apps" | "apps.kruise.io")
    )
}

/// The target's pod template as `validateWorkloadSpreadSubsets` reads it (CloneSet and
/// StatefulSet with their volumeClaimTemplates as volumes).
fn pod_template(kind: &str, obj: &Value) -> Option<Value> {
    let mut t = obj.pointer("/spec/template")?.clone();
    if matches!(kind, "CloneSet" | "StatefulSet")
        && let Some(claims) = obj
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
    {
        let spec = t.as_object_mut()?.entry("spec").or_insert(Value::Null);
        if !spec.is_object() {
            *spec = Value::Object(Default::default());
        }
        let vols = spec
            .as_object_mut()?
            .entry("volumes")
            .or_insert(Value::Array(Vec::new()));
        if let Some(list) = vols.as_array_mut() {
            for c in claims {
                let name = c.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
                list.push(serde_json::json!({"name": name,
                    "persistentVolumeClaim": {"claimName": name}}));
            }
        }
    }
    Some(t)
}

/// `validateWorkloadSpreadSpec` (`template`: the target's pod template when it exists).
pub fn validate_spec(
    obj: &WorkloadSpread,
    whitelist: &[CustomWorkload],
    template: Option<&Value>,
) -> ErrorList {
    let spec = &obj.spec;
    let path = Path::new("spec");
    let mut errs = ErrorList::new();
    let t = &spec.target_reference;
    let tp = path.child("targetRef");
    let mut template = template;
    if t.api_version.is_empty() || t.name.is_empty() || t.kind.is_empty() {
        errs.push(FieldError::invalid_stringer(
            tp.clone(),
            target_text(t),
            "empty TargetReference is not valid for WorkloadSpread.",
        ));
        template = None;
    } else {
        let group = group_of(&t.api_version);
        let check = |groups: &[&str], what: &str, errs: &mut ErrorList| {
            if !group.is_some_and(|g| groups.contains(&g)) {
                errs.push(FieldError::invalid_stringer(
                    tp.clone(),
                    target_text(t),
                    format!("TargetReference is not valid for {what}."),
                ));
            }
        };
        match t.kind.as_str() {
            "CloneSet" => check(&["apps.kruise.io"], "CloneSet", &mut errs),
            "Deployment" => check(&["apps"], "Deployment", &mut errs),
            "ReplicaSet" => check(&["apps"], "ReplicaSet", &mut errs),
            "Job" => check(&["batch"], "Job", &mut errs),
            "StatefulSet" => check(&["apps", "apps.kruise.io"], "StatefulSet", &mut errs),
            _ => {
                template = None;
                let ok = group.is_some_and(|g| {
                    whitelist
                        .iter()
                        .any(|w| w.gvk.kind == t.kind && w.gvk.group == g)
                });
                if !ok {
                    errs.push(FieldError::invalid_stringer(
                        tp.clone(),
                        target_text(t),
                        "TargetReference's GroupKind is not permitted.",
                    ));
                }
            }
        }
        // An Advanced StatefulSet's template is not read (OpenKruise gets an apps/v1 one).
        if t.kind == "StatefulSet" && group != Some("apps") {
            template = None;
        }
    }
    errs.extend(validate_subsets(obj, template, &path.child("subsets")));
    let strategy = spec.schedule_strategy.clone().unwrap_or_default();
    let type_ = strategy.type_.clone().unwrap_or_default();
    let sp = path.child("scheduleStrategy");
    if !type_.is_empty() && type_ != "Fixed" && type_ != "Adaptive" {
        errs.push(FieldError::invalid(
            sp.child("type"),
            type_.clone(),
            "ScheduleStrategy's type is not valid",
        ));
    }
    if let Some(adaptive) = &strategy.adaptive {
        let secs = adaptive.reschedule_critical_seconds;
        // A nil pointer shows as the string "null" (quoted), a set one as its number.
        let secs_text = secs.map_or_else(|| "\"null\"".to_string(), |s| s.to_string());
        if type_ != "Adaptive" {
            errs.push(FieldError::invalid_stringer(
                sp.child("type"),
                secs_text.clone(),
                "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
            ));
        }
        let n = spec.subsets.len();
        if n > 1 && spec.subsets[n - 1].max_replicas.is_some() {
            errs.push(FieldError::invalid_stringer(
                sp.child("adaptive"),
                secs_text.clone(),
                "the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy",
            ));
        }
        let allowed = if n > 1 {
            (MAX_SCHEDULED_FAILED_SECONDS - 5) / (n as i32 - 1)
        } else {
            i32::MAX
        };
        if let Some(s) = secs
            && (s < 0 || s > allowed)
        {
            errs.push(FieldError::invalid(
                sp.child("adaptive").child("rescheduleCriticalSeconds"),
                s,
                format!(
                    "rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {allowed} is not permitted"
                ),
            ));
        }
    }
    if let Some(f) = &spec.target_filter
        && let Some(sel) = &f.selector
        && let Some(e) = label_selector_as_selector_error(sel)
    {
        // The filter is shown as Go's `%#v` of a pointer to it; only the detail is reproducible.
        errs.push(FieldError::invalid_stringer(
            path.child("targetFilter"),
            format!("{f:?}"),
            e,
        ));
    }
    errs
}

fn int_or_percent(v: &IntOrString) -> Option<i64> {
    // `GetValueFromIntOrPercent(v, 100, true)`.
    ws_util::scaled(v, 100, true)
}

/// `validateWorkloadSpreadSubsets`.
fn validate_subsets(ws: &WorkloadSpread, template: Option<&Value>, path: &Path) -> ErrorList {
    let subsets = &ws.spec.subsets;
    let mut errs = ErrorList::new();
    if subsets.is_empty() {
        errs.push(FieldError::required(
            path.clone(),
            "subsets number must >= 1 in WorkloadSpread",
        ));
        return errs;
    }
    let mut names = std::collections::BTreeSet::new();
    let mut sum = 0i64;
    let mut first_type: Option<bool> = None; // Some(true): string
    for (i, s) in subsets.iter().enumerate() {
        let p = path.index(i);
        if s.name.is_empty() {
            errs.push(FieldError::invalid(p.child("name"), "", ""));
        } else {
            if names.contains(&s.name) {
                errs.push(FieldError::invalid(
                    p.child("name"),
                    s.name.clone(),
                    format!("duplicated subset name {}", s.name),
                ));
            }
            names.insert(s.name.clone());
        }
        if let Some(term) = &s.required_node_selector_term {
            errs.extend(validate_node_selector_term(
                term,
                false,
                &p.child("requiredNodeSelectorTerm"),
            ));
        }
        if let Some(terms) = &s.preferred_node_selector_terms {
            let pp = p.child("preferredSchedulingTerms");
            for (j, t) in terms.iter().enumerate() {
                if t.weight <= 0 || t.weight > 100 {
                    errs.push(FieldError::invalid(
                        pp.index(j).child("weight"),
                        t.weight,
                        "must be in the range 1-100",
                    ));
                }
                errs.extend(validate_node_selector_term(
                    &t.preference,
                    true,
                    &pp.index(j).child("preference"),
                ));
            }
        }
        if let Some(t) = &s.tolerations {
            errs.extend(validate_tolerations(t, &p.child("tolerations")));
        }
        if let (Some(patch), Some(template)) = (s.patch.as_ref().filter(|p| !p.is_null()), template)
        {
            errs.extend(validate_patch(s, patch, template, &p.child("patch")));
        }
        if let Some(m) = &s.max_replicas {
            let is_str = matches!(m, IntOrString::String(_));
            match first_type {
                None => first_type = Some(is_str),
                Some(t) if t != is_str => {
                    errs.push(FieldError::invalid_stringer(
                        p.child("maxReplicas"),
                        intstr_text(m),
                        "the maxReplicas type of all subsets must be the same",
                    ));
                    return errs;
                }
                _ => {}
            }
            if ws.spec.target_reference.kind == "StatefulSet" && is_str {
                errs.push(FieldError::invalid_stringer(
                    p.child("maxReplicas"),
                    intstr_text(m),
                    "the maxReplicas type must be Int for StatefulSet",
                ));
                return errs;
            }
            let v = int_or_percent(m);
            if v.is_none_or(|v| v < 0) {
                errs.push(FieldError::invalid_stringer(
                    p.child("maxReplicas"),
                    intstr_text(m),
                    "maxReplicas is not valid for subset",
                ));
                return errs;
            }
            if is_str {
                sum += v.unwrap_or(0);
                if sum > 100 {
                    errs.push(FieldError::invalid_stringer(
                        p.child("maxReplicas"),
                        intstr_text(m),
                        "the sum of all subset's maxReplicas exceeds 100% is no permitted",
                    ));
                    return errs;
                }
            }
        }
    }
    if first_type == Some(true)
        && sum < 100
        && subsets.last().is_some_and(|s| s.max_replicas.is_some())
    {
        let text = subsets[0]
            .max_replicas
            .as_ref()
            .map_or_else(|| "\"null\"".to_string(), intstr_text);
        errs.push(FieldError::invalid_stringer(
            path.index(0).child("maxReplicas"),
            text,
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent",
        ));
    }
    errs
}

/// The subset patch applied to the target's pod template (with the `Pod` schema, as OpenKruise
/// applies it to the template's JSON), validated as a pod spec. A patch apimachinery refuses
/// gives OpenKruise's three answers: "failed to merge patch: <error>", "failed to unmarshal:
/// unexpected end of JSON input" (Go goes on with no document) and the errors of an empty pod
/// spec.
fn validate_patch(
    _s: &WorkloadSpreadSubset,
    patch: &Value,
    template: &Value,
    path: &Path,
) -> ErrorList {
    let opts = PodValidationOptions::openkruise();
    let pod = match strategic_merge_patch(template, patch, Schema::Pod) {
        Ok(pod) => pod,
        Err(e) => {
            let mut errs = vec![
                FieldError::invalid(
                    path.clone(),
                    patch.to_string(),
                    format!("failed to merge patch: {e}"),
                ),
                FieldError::invalid(
                    path.clone(),
                    patch.to_string(),
                    "failed to unmarshal: unexpected end of JSON input",
                ),
            ];
            errs.extend(validate_pod_spec(&PodSpec::default(), path, &opts));
            return errs;
        }
    };
    let pod: Pod = match serde_json::from_value(pod) {
        Ok(p) => p,
        Err(e) => {
            return vec![FieldError::invalid(
                path.clone(),
                patch.to_string(),
                format!("failed to unmarshal: {e}"),
            )];
        }
    };
    match &pod.spec {
        Some(spec) => validate_pod_spec(spec, path, &opts),
        None => validate_pod_spec(&PodSpec::default(), path, &opts),
    }
}

/// `validateWorkloadSpreadConflict`: no other WorkloadSpread of the namespace targets the same
/// group, kind and name.
pub fn validate_conflict<'a>(
    ws: &WorkloadSpread,
    others: impl Iterator<Item = &'a WorkloadSpread>,
    path: &Path,
) -> ErrorList {
    let t1 = &ws.spec.target_reference;
    for other in others {
        if other.metadata.name == ws.metadata.name {
            continue;
        }
        let t2 = &other.spec.target_reference;
        let g1 = group_of(&t1.api_version).unwrap_or("");
        let g2 = group_of(&t2.api_version).unwrap_or("");
        if g1 == g2 && t1.kind == t2.kind && t1.name == t2.name {
            return vec![FieldError::invalid_stringer(
                path.child("targetRef"),
                target_text(t1),
                format!(
                    "ws.spec.targetRef is in conflict with other WorkloadSpread {}",
                    other.metadata.name.as_deref().unwrap_or("")
                ),
            )];
        }
    }
    ErrorList::new()
}

/// `validateWorkloadSpreadUpdate`: `targetRef` (group, kind, name) immutable. (Object metadata
/// rules are the API server's own.)
pub fn validate_update(new: &WorkloadSpread, old: &WorkloadSpread) -> ErrorList {
    let (a, b) = (&new.spec.target_reference, &old.spec.target_reference);
    let ga = group_of(&a.api_version).unwrap_or("");
    let gb = group_of(&b.api_version).unwrap_or("");
    if ga != gb || a.kind != b.kind || a.name != b.name {
        return vec![FieldError::invalid_stringer(
            Path::new("spec").child("targetRef"),
            target_text(a),
            "change TargetReference is not permitted for WorkloadSpread",
        )];
    }
    ErrorList::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::validation::field::aggregate;
    use serde_json::json;

    fn ws(spec: Value) -> WorkloadSpread {
        serde_json::from_value(json!({"metadata": {"name": "ws", "namespace": "ns"}, "spec": spec}))
            .unwrap()
    }

    fn msg(w: &WorkloadSpread) -> Option<String> {
        aggregate(&validate_spec(w, &[], None))
    }

    #[test]
    fn target_kinds_and_groups() {
        let w = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "CloneSet", "name": "a"},
            "subsets": [{"name": "a"}]}),
        );
        assert_eq!(
            msg(&w).unwrap(),
            "spec.targetRef: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v1\", Kind:\"CloneSet\", Name:\"a\"}: TargetReference is not valid for CloneSet."
        );
        let w = ws(
            json!({"targetRef": {"apiVersion": "x.io/v1", "kind": "Foo", "name": "a"},
            "subsets": [{"name": "a"}]}),
        );
        assert!(
            msg(&w)
                .unwrap()
                .ends_with("TargetReference's GroupKind is not permitted.")
        );
    }

    #[test]
    fn max_replicas_rules() {
        let w = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
            "subsets": [{"name": "a", "maxReplicas": "30%"}, {"name": "b", "maxReplicas": "30%"}]}),
        );
        assert_eq!(
            msg(&w).unwrap(),
            "spec.subsets[0].maxReplicas: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"30%\"}: maxReplicas sum of all subsets must equal 100% when type is specified as percent"
        );
        let w = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
            "subsets": [{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": "30%"}]}),
        );
        assert!(
            msg(&w)
                .unwrap()
                .contains("the maxReplicas type of all subsets must be the same")
        );
        let w = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
            "subsets": [{"name": "a", "maxReplicas": 1}, {"name": "a"}]}),
        );
        assert_eq!(
            msg(&w).unwrap(),
            "spec.subsets[1].name: Invalid value: \"a\": duplicated subset name a"
        );
    }

    #[test]
    fn adaptive_rules() {
        let w = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
            "subsets": [{"name": "a", "maxReplicas": 1}, {"name": "b"}, {"name": "c"}],
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 200}}}),
        );
        assert_eq!(
            msg(&w).unwrap(),
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: 200: rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > 147 is not permitted"
        );
    }

    #[test]
    fn conflicts_and_updates() {
        let a = ws(
            json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "subsets": [{"name": "a"}]}),
        );
        let mut b = a.clone();
        b.metadata.name = Some("other".into());
        assert_eq!(
            aggregate(&validate_conflict(&a, [&b].into_iter(), &Path::new("spec"))).unwrap(),
            "spec.targetRef: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"d\"}: ws.spec.targetRef is in conflict with other WorkloadSpread other"
        );
        b.spec.target_reference.name = "e".into();
        assert!(!validate_update(&a, &b).is_empty());
    }
}
