//! PersistentPodState admission (`apps.kruise.io/v1alpha1`), as OpenKruise v1.9.0's
//! `pkg/webhook/persistentpodstate/validating` (`/validate-apps-kruise-io-persistentpodstate`,
//! CREATE and UPDATE): a complete `targetRef` whose kind is a StatefulSet (`apps` or
//! `apps.kruise.io`) or whitelisted in ConfigMap `kruise-configuration`
//! (`PPS_Watch_Custom_Workload_WhiteList`), a required or preferred topology, `targetRef`
//! immutable, and no other PersistentPodState of the namespace targeting the same workload
//! (group, kind and name). Denials carry code 400 and the aggregated field errors, as
//! OpenKruise's `admission.Errored(http.StatusBadRequest, ...)`; field values are printed as
//! Go's `%#v` of the API types.

use kruise_api::apps::v1alpha1::{PersistentPodState, PersistentPodStateSpec, TargetReference};
use kruise_api::validation::field::{ErrorList, FieldError, Path};
use kruise_api::validation::gofmt::quote;
use kruise_engines::persistentpodstate::{WhiteList, group_of};
use kube::core::admission::Operation;

use crate::field::aggregate;
use crate::support::{
    CODE_BAD_REQUEST, allow, decode_workload_object, decode_workload_old_object, errored,
};
use crate::{HandlerContext, Request, Response};

/// `/validate-apps-kruise-io-persistentpodstate` (see the module docs).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return allow(req);
    }
    let obj: PersistentPodState = match decode_workload_object(req) {
        Ok(o) => o,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    let old: Option<PersistentPodState> = if req.operation == Operation::Update {
        match decode_workload_old_object(req) {
            Ok(o) => o,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        }
    } else {
        None
    };
    let spec_path = Path::new("spec");
    let whitelist = match &ctx.lookup {
        Some(lookup) => lookup.pps_whitelist().await,
        None => Ok(WhiteList::default()),
    };
    let whitelist = match whitelist {
        Ok(w) => w,
        Err(e) => {
            let errs = vec![FieldError::internal(
                Path::new(""),
                format!("failed to get persistent pod state config white list, error: {e}"),
            )];
            return errored(req, CODE_BAD_REQUEST, aggregate(&errs).unwrap_or_default());
        }
    };
    let mut errs = validate_spec(&obj, &spec_path, &whitelist);
    if let Some(old) = &old {
        errs.extend(validate_update(&obj, old, &spec_path));
    }
    let ns = obj
        .metadata
        .namespace
        .as_deref()
        .or(req.namespace.as_deref())
        .unwrap_or("");
    if let Some(lookup) = &ctx.lookup {
        match lookup.persistent_pod_states_in(ns).await {
            Ok(others) => errs.extend(validate_conflict(
                &obj,
                others.iter().map(|o| o.as_ref()),
                &spec_path,
            )),
            Err(e) => errs.push(FieldError::internal(
                Path::new(""),
                format!("query other PersistentPodState failed, err: {e}"),
            )),
        }
    }
    match aggregate(&errs) {
        Some(msg) => errored(req, CODE_BAD_REQUEST, msg),
        None => allow(req),
    }
}

/// `validatePersistentPodStateSpec`.
pub fn validate_spec(obj: &PersistentPodState, path: &Path, whitelist: &WhiteList) -> ErrorList {
    let spec = &obj.spec;
    let r = &spec.target_reference;
    let mut errs = ErrorList::new();
    if r.api_version.is_empty() || r.name.is_empty() || r.kind.is_empty() {
        errs.push(FieldError::invalid_stringer(
            path.child("TargetReference"),
            go_target_reference(r),
            "empty TargetReference is not valid for PersistentPodState.",
        ));
    }
    if !whitelist.allows(&r.api_version, &r.kind) {
        errs.push(FieldError::invalid_stringer(
            path.child("TargetReference"),
            go_target_reference(r),
            "TargetReference.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList",
        ));
    }
    if spec.required_persistent_topology.is_none()
        && spec
            .preferred_persistent_topology
            .as_ref()
            .is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::invalid_stringer(
            path.clone(),
            go_spec(spec),
            "TopologyConstraint and TopologyPreference cannot be empty at the same time",
        ));
    }
    errs
}

/// `validateUpdateObjImmutable`: `targetRef` cannot change.
pub fn validate_update(
    obj: &PersistentPodState,
    old: &PersistentPodState,
    path: &Path,
) -> ErrorList {
    if obj.spec.target_reference != old.spec.target_reference {
        return vec![FieldError::required(
            path.child("targetRef"),
            "targetRef cannot be modified",
        )];
    }
    Vec::new()
}

/// `validatePerConflict`: the first other PersistentPodState (by name) targeting the same
/// group, kind and name.
pub fn validate_conflict<'a>(
    obj: &PersistentPodState,
    others: impl IntoIterator<Item = &'a PersistentPodState>,
    path: &Path,
) -> ErrorList {
    let cur = &obj.spec.target_reference;
    for other in others {
        if other.metadata.name == obj.metadata.name {
            continue;
        }
        let o = &other.spec.target_reference;
        if group_of(&cur.api_version).unwrap_or("") == group_of(&o.api_version).unwrap_or("")
            && cur.kind == o.kind
            && cur.name == o.name
        {
            return vec![FieldError::invalid_stringer(
                path.child("targetReference"),
                go_target_reference(cur),
                format!(
                    "targetReference is in conflict with other PersistentPodState {}",
                    other.metadata.name.as_deref().unwrap_or("")
                ),
            )];
        }
    }
    Vec::new()
}

/// Go's `%#v` of a `v1alpha1.TargetReference`.
fn go_target_reference(r: &TargetReference) -> String {
    kruise_api::validation::gofmt::target_reference_sharp_v(&r.api_version, &r.kind, &r.name)
}

/// Go's `%#v` of a `v1alpha1.PersistentPodStateSpec` whose required topology is nil (the only
/// spec this error prints; a pointer would print as an address).
fn go_spec(spec: &PersistentPodStateSpec) -> String {
    let annotations = match &spec.persistent_pod_annotations {
        None => "[]v1alpha1.PersistentPodAnnotation(nil)".to_string(),
        Some(list) => format!(
            "[]v1alpha1.PersistentPodAnnotation{{{}}}",
            list.iter()
                .map(|a| format!("v1alpha1.PersistentPodAnnotation{{Key:{}}}", quote(&a.key)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let preferred = match &spec.preferred_persistent_topology {
        None => "[]v1alpha1.PreferredTopologyTerm(nil)".to_string(),
        Some(_) => "[]v1alpha1.PreferredTopologyTerm{}".to_string(),
    };
    format!(
        "v1alpha1.PersistentPodStateSpec{{TargetReference:{}, PersistentPodAnnotations:{}, RequiredPersistentTopology:(*v1alpha1.NodeTopologyTerm)(nil), PreferredPersistentTopology:{}, PersistentPodStateRetentionPolicy:{}}}",
        go_target_reference(&spec.target_reference),
        annotations,
        preferred,
        quote(
            spec.persistent_pod_state_retention_policy
                .as_deref()
                .unwrap_or("")
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_api::apps::v1alpha1::NodeTopologyTerm;

    fn pps(name: &str, api_version: &str, kind: &str, target: &str) -> PersistentPodState {
        PersistentPodState::new(
            name,
            PersistentPodStateSpec {
                target_reference: TargetReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: target.into(),
                },
                required_persistent_topology: Some(NodeTopologyTerm {
                    node_topology_keys: vec!["k".into()],
                }),
                ..Default::default()
            },
        )
    }

    #[test]
    fn spec_errors_name_the_fields_as_openkruise() {
        let mut obj = pps("a", "apps/v1", "Deployment", "");
        obj.spec.required_persistent_topology = None;
        let errs = validate_spec(&obj, &Path::new("spec"), &WhiteList::default());
        let msg = aggregate(&errs).unwrap();
        assert_eq!(
            msg,
            "[spec.TargetReference: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"\"}: empty TargetReference is not valid for PersistentPodState., \
spec.TargetReference: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"\"}: TargetReference.Kind must be StatefulSet or in PPS_Watch_Custom_Workload_WhiteList, \
spec: Invalid value: v1alpha1.PersistentPodStateSpec{TargetReference:v1alpha1.TargetReference{APIVersion:\"apps/v1\", Kind:\"Deployment\", Name:\"\"}, PersistentPodAnnotations:[]v1alpha1.PersistentPodAnnotation(nil), RequiredPersistentTopology:(*v1alpha1.NodeTopologyTerm)(nil), PreferredPersistentTopology:[]v1alpha1.PreferredTopologyTerm(nil), PersistentPodStateRetentionPolicy:\"\"}: TopologyConstraint and TopologyPreference cannot be empty at the same time]"
        );
        assert!(
            validate_spec(
                &pps("a", "apps.kruise.io/v1beta1", "StatefulSet", "s"),
                &Path::new("spec"),
                &WhiteList::default()
            )
            .is_empty()
        );
    }

    #[test]
    fn a_second_state_of_one_workload_and_a_changed_target_are_refused() {
        let a = pps("a", "apps/v1", "StatefulSet", "s");
        let b = pps("b", "apps/v2", "StatefulSet", "s");
        let errs = validate_conflict(&b, [&a, &b], &Path::new("spec"));
        assert_eq!(
            aggregate(&errs).unwrap(),
            "spec.targetReference: Invalid value: v1alpha1.TargetReference{APIVersion:\"apps/v2\", Kind:\"StatefulSet\", Name:\"s\"}: targetReference is in conflict with other PersistentPodState a"
        );
        assert!(validate_conflict(&a, [&a], &Path::new("spec")).is_empty());
        assert_eq!(
            aggregate(&validate_update(&b, &a, &Path::new("spec"))).unwrap(),
            "spec.targetRef: Required value: targetRef cannot be modified"
        );
    }
}
