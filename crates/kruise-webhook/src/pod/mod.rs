//! Pod admission (`/mutate-pod`, pods CREATE): OpenKruise v1.9.0's pod mutating webhook with the
//! `KruisePodReady` readiness gate, SidecarSet injection ([`sidecarset`]) and container launch
//! priority ([`mutation`]) and the PodUnavailableBudget annotation ([`budget`]), in OpenKruise's
//! order; `/validate-pod` ([`validate`]) holds pod deletions and evictions to pod-deletion flow
//! control ([`flowcontrol`]) and pod deletions, evictions and updates to the budgets
//! ([`budget::validate`]); PersistentPodState's node affinity ([`persistentpodstate`]);
//! WorkloadSpread ([`workloadspread`]) assigns subsets at creation and records deletions and
//! evictions. Enhanced liveness probe and PodProbeMarker steps are not implemented yet.

pub mod budget;
pub mod flowcontrol;
pub mod mutation;
pub mod persistentpodstate;
pub mod sidecarset;
pub mod workloadspread;
pub mod writelog;

use kruise_runtime::features::Feature;

use k8s_openapi::api::core::v1::Pod;
use kruise_engines::revision::go_json::{self, GoType};
use kube::core::admission::Operation;

use crate::support::{
    CODE_BAD_REQUEST, CODE_INTERNAL, allow, change_patch, decode_workload_value, errored,
    patch_response,
};
use crate::{HandlerContext, Request, Response};

/// `/validate-pod` (`vpod.kb.io`: pods UPDATE and DELETE; `vpodeviction.kb.io`: `pods/eviction`
/// CREATE): a deletion or eviction a PodDeletionFlowControl counts is judged against its
/// windows first (refused: nothing spent), then against its PodUnavailableBudget
/// ([`budget::validate`]), and recorded in the flow-control objects only once the budget
/// admitted it. So a deletion its budget refuses spends no flow-control room, and one flow
/// control refuses touches no budget; only when a concurrent admission takes the last room
/// between the two steps does a refused deletion keep the budget unit it took (conservative:
/// never more disruption than either allows).
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    // WorkloadSpread bookkeeping of deletions and evictions first, as OpenKruise's order.
    if matches!(req.operation, Operation::Delete | Operation::Create)
        && ctx.gates.enabled(Feature::WorkloadSpread)
        && let Err(e) = workloadspread::validate(req, ctx).await
    {
        return errored(req, CODE_BAD_REQUEST, e);
    }
    let flow = match &ctx.lookup {
        Some(lookup) => match flowcontrol::pending(req, lookup).await {
            Ok(p) => p,
            Err(e) => return errored(req, CODE_BAD_REQUEST, e),
        },
        None => None,
    };
    if let Some(p) = &flow
        && let Some(reason) = p.judge()
    {
        return errored(req, p.code(), reason);
    }
    let resp = budget::validate(req, ctx).await;
    if !resp.allowed {
        return resp;
    }
    if let Some(p) = flow {
        let client = ctx.lookup.as_ref().and_then(|l| l.client());
        if let Some(reason) = p.record(client, req.dry_run).await {
            return errored(req, p.code(), reason);
        }
    }
    resp
}

/// `/mutate-pod`: on pod creation (not for subresources), injects the readiness gate and the
/// container launch barrier env, answering with the JSON patch. As OpenKruise's handler, it
/// judges every pod that reaches it: which namespaces do is the webhook configuration's
/// `namespaceSelector` (the admission corpus recorded OpenKruise injecting the gate into a
/// Kruise-owned pod in `kube-system`).
pub async fn mutate(req: &Request, ctx: &HandlerContext) -> Response {
    if req.operation != Operation::Create
        || req.sub_resource.as_deref().is_some_and(|s| !s.is_empty())
    {
        return allow(req);
    }
    // The request's object as JSON, once: decoded into the pod, and what the patch must apply to.
    let raw = match req.object.as_ref().map(serde_json::to_value) {
        Some(Ok(v)) => v,
        Some(Err(e)) => return errored(req, CODE_BAD_REQUEST, e.to_string()),
        None => return errored(req, CODE_BAD_REQUEST, "there is no content to decode"),
    };
    let mut pod: Pod = match decode_workload_value(raw.clone()) {
        Ok(p) => p,
        Err(e) => return errored(req, CODE_BAD_REQUEST, e),
    };
    if pod.metadata.namespace.as_deref().unwrap_or("").is_empty() {
        pod.metadata.namespace = req.namespace.clone();
    }
    // The pod as Go writes it before any change (the patch's left side).
    let original = match go_typed(&pod) {
        Ok(v) => v,
        Err(e) => return errored(req, CODE_INTERNAL, e),
    };
    let mut changed = mutation::inject_readiness_gate(&ctx.gates, &mut pod);
    if ctx.gates.enabled(Feature::WorkloadSpread) {
        match workloadspread::mutate(req, ctx, &mut pod).await {
            Err(e) => return errored(req, CODE_INTERNAL, e),
            Ok(true) => changed = true,
            Ok(false) => {}
        }
    }
    if req.resource.resource == "pods" {
        let view = match &ctx.lookup {
            Some(lookup) => {
                let ns = pod.metadata.namespace.clone().unwrap_or_default();
                match sidecarset_view(lookup, &ns).await {
                    Ok(v) => v,
                    Err(e) => return errored(req, CODE_INTERNAL, e),
                }
            }
            None => sidecarset::SidecarSetView::default(),
        };
        let opts = kruise_engines::sidecarset::inject::InjectOptions {
            sort_containers_by_name: ctx
                .gates
                .enabled(kruise_runtime::features::Feature::EnableSortSidecarContainerByName),
            now: jiff::Timestamp::now(),
        };
        match sidecarset::mutate(&mut pod, &view, opts, &mut || rand::random::<f64>()) {
            Err(e) => return errored(req, CODE_INTERNAL, e),
            Ok(false) => changed = true,
            Ok(true) => {}
        }
    }
    if req.resource.resource == "pods" {
        match mutation::launch_priorities(&pod) {
            Err(e) => return errored(req, CODE_INTERNAL, e.to_string()),
            Ok(Some(p)) => {
                mutation::apply_launch_priorities(&mut pod, &p, &mutation::random_name_suffix());
                changed = true;
            }
            Ok(None) => {}
        }
    }
    // The related-pub annotation (after launch priority, as OpenKruise's order).
    if (ctx.gates.enabled(Feature::PodUnavailableBudgetUpdateGate)
        || ctx.gates.enabled(Feature::PodUnavailableBudgetDeleteGate))
        && req.resource.resource == "pods"
        && let Some(lookup) = &ctx.lookup
    {
        match budget::related_budget(lookup, &pod).await {
            Err(e) => return errored(req, CODE_INTERNAL, e),
            Ok(Some(name)) => {
                pod.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(kruise_api::keys::PUB_RELATED.to_string(), name);
                changed = true;
            }
            Ok(None) => {}
        }
    }
    // PersistentPodState node affinity (after the related-pub annotation, as OpenKruise).
    if req.resource.resource == "pods"
        && let Some(lookup) = &ctx.lookup
    {
        match persistentpodstate::mutate(lookup, &mut pod).await {
            Err(e) => return errored(req, CODE_INTERNAL, e),
            Ok(true) => changed = true,
            Ok(false) => {}
        }
    }
    if !changed {
        return allow(req);
    }
    let patch = go_typed(&pod).map(|after| change_patch(Some(raw), &original, &after));
    patch_response(req, patch)
}

/// The pod as OpenKruise's handler writes it for its patch: Go's `encoding/json` of a typed
/// `corev1.Pod` (`PatchResponseFromRaw(json.Marshal(original), json.Marshal(pod))`), so what the
/// Rust types leave out where Go always writes a field (a container restored from a SidecarSet
/// revision without `resources` gets `resources: {}`) is in the patch as Go writes it.
fn go_typed(p: &Pod) -> Result<serde_json::Value, String> {
    let mut v = serde_json::to_value(p).map_err(|e| e.to_string())?;
    go_json::normalize(&mut v, GoType::Pod);
    Ok(v)
}

/// What the SidecarSet step reads, from the shared cache: every SidecarSet, the labels of the
/// pod's namespace (only when a SidecarSet exists) and the SidecarSet revisions of the manager's
/// namespace (only when a SidecarSet pins an injection revision).
async fn sidecarset_view(
    lookup: &crate::lookup::Lookup,
    namespace: &str,
) -> Result<sidecarset::SidecarSetView, String> {
    let sidecarsets = lookup.sidecar_sets().await?;
    if sidecarsets.is_empty() {
        return Ok(sidecarset::SidecarSetView::default());
    }
    let ns = if namespace.is_empty() {
        "default"
    } else {
        namespace
    };
    let namespace_labels = match lookup.namespace(ns).await {
        Ok(Some(n)) => Some(n.metadata.labels.clone().unwrap_or_default()),
        _ => None,
    };
    let pins = sidecarsets.iter().any(|s| {
        s.spec
            .injection_strategy
            .as_ref()
            .and_then(|i| i.revision.as_ref())
            .is_some_and(|r| r.revision_name.is_some() || r.custom_version.is_some())
    });
    let revisions = if pins {
        lookup
            .controller_revisions(&crate::kruise_namespace(), &Default::default())
            .await?
    } else {
        Vec::new()
    };
    Ok(sidecarset::SidecarSetView {
        sidecarsets,
        namespace_labels,
        revisions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::{apply_patch, testing::request};
    use kruise_runtime::features::FeatureGates;
    use serde_json::json;

    #[tokio::test]
    async fn pod_handler_injects_gate_for_kruise_pods_in_any_namespace_that_reaches_it() {
        let pod = |ns: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns, "ownerReferences": [
                {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "a", "image": "x"}]}})
        };
        let ctx = HandlerContext {
            gates: FeatureGates::default(),
            lookup: None,
        };
        let resp = mutate(
            &request("CREATE", "pods", "v1", Some(pod("ns")), None),
            &ctx,
        )
        .await;
        let patch: json_patch::Patch =
            serde_json::from_slice(resp.patch.as_deref().unwrap()).unwrap();
        let patched = apply_patch(&pod("ns"), &patch).unwrap();
        assert_eq!(
            patched["spec"]["readinessGates"],
            json!([{"conditionType": "KruisePodReady"}])
        );
        let resp = mutate(
            &request("CREATE", "pods", "v1", Some(pod("kube-system")), None),
            &ctx,
        )
        .await;
        assert!(resp.allowed && resp.patch.is_some());
    }

    /// A container restored from a SidecarSet revision that has no `resources` is injected
    /// with `resources: {}`, as Go writes every `corev1.Container` (recorded in the
    /// pod-sidecarset admission corpus).
    #[tokio::test]
    async fn containers_restored_from_a_revision_are_written_as_go_writes_them() {
        let set = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
            "metadata": {"name": "s", "annotations": {"kruise.io/sidecarset-hash": "h",
                "kruise.io/sidecarset-hash-without-image": "w"}},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                "injectionStrategy": {"revision": {"revisionName": "s-v1", "policy": "Always"}},
                "containers": [{"name": "c", "image": "new", "resources": {}}]},
            "status": {"matchedPods": 0, "updatedPods": 0, "readyPods": 0, "latestRevision": "s-v2"}});
        let revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "s-v1", "namespace": crate::kruise_namespace(),
                "labels": {"kruise.io/sidecarset-name": "s"}},
            "revision": 1,
            "data": {"spec": {"$patch": "replace", "containers": [{"name": "c", "image": "old"}]}}});
        let lookup = crate::lookup::Lookup::fixed_cluster(crate::lookup::FixedCluster {
            sidecar_sets: vec![serde_json::from_value(set).unwrap()],
            controller_revisions: vec![serde_json::from_value(revision).unwrap()],
            ..Default::default()
        });
        let ctx = HandlerContext {
            gates: FeatureGates::default(),
            lookup: Some(lookup),
        };
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a"}, "creationTimestamp": null},
            "spec": {"containers": [{"name": "main", "image": "x", "resources": {}}]}, "status": {}});
        let resp = mutate(
            &request("CREATE", "pods", "v1", Some(pod.clone()), None),
            &ctx,
        )
        .await;
        assert!(resp.allowed, "{}", resp.result.message);
        let patch: json_patch::Patch =
            serde_json::from_slice(resp.patch.as_deref().unwrap()).unwrap();
        let patched = apply_patch(&pod, &patch).unwrap();
        // No podInjectPolicy in the revision: after the pod's containers.
        assert_eq!(patched["spec"]["containers"][1]["image"], "old");
        assert_eq!(patched["spec"]["containers"][1]["resources"], json!({}));
    }
}
