//! PodUnavailableBudget checks of the pod webhooks (OpenKruise v1.9.0
//! `pkg/webhook/pod/validating/pod_unavailable_budget.go`, `pkg/control/pubcontrol`
//! `PodUnavailableBudgetValidatePod`, and the mutating step `pubMutatingPod`).
//!
//! `/validate-pod` (webhooks `vpod.kb.io`: pods UPDATE and DELETE; `vpodeviction.kb.io`:
//! `pods/eviction` CREATE): a deletion or eviction (gate `PodUnavailableBudgetDeleteGate`), or
//! an update that may make the pod unavailable (gate `PodUnavailableBudgetUpdateGate`), of a
//! pod that names a budget in `kruise.io/related-pub`, ready and consistent, is admitted only
//! by taking one unit of the budget's `unavailableAllowed` and recording the pod in
//! `disruptedPods` (`unavailablePods` for an update) — a status write bound to the budget's
//! resourceVersion, so concurrent admissions (in this replica or another) never both spend
//! the last unit: a conflict is retried on a fresh read, 4 times. Refused: the denial says
//! `podunavailablebudgets.policy.kruise.io "<name>" is forbidden: pub unavailable allowed is
//! negative`, and the pod gets the Warning Event `PubPreventPodDeletion`. A dry run is judged
//! but writes nothing. Pods with `pub.kruise.io/no-protect: "true"`, pods not ready or in the
//! middle of an update, budgets with `desiredAvailable` 0, operations the budget does not
//! guard (`kruise.io/pub-protect-operations`) and pods already recorded pass.
//!
//! `/mutate-pod` on CREATE ([`related_budget`]): the pod gets `kruise.io/related-pub` naming the
//! budget that covers it — one whose `targetRef` is the pod's workload (its controller owner; a
//! ReplicaSet's Deployment), else one whose selector selects its labels.

use std::sync::{Arc, LazyLock};

use k8s_openapi::api::core::v1::Pod;
use kruise_api::keys;
use kruise_api::pod::CachedPod;
use kruise_api::policy::v1alpha1::{PodUnavailableBudget, TargetReference};
use kruise_engines::podunavailablebudget::{self as engine, Operation};
use kruise_runtime::features::Feature;
use kube::api::{Api, PostParams};
use kube::core::admission::Operation as AdmissionOp;

use crate::lookup::Lookup;
use crate::support::{CODE_BAD_REQUEST, CODE_FORBIDDEN, allow, decode, errored};
use crate::{HandlerContext, Request, Response};

/// Labels of [`REFUSALS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, prometheus_client::encoding::EncodeLabelSet)]
pub struct RefusalLabels {
    /// `<kind>_<namespace>_<name>` of the pod's workload (`unknown_<namespace>_<pod>` without
    /// one).
    pub kind_namespace_name: String,
    /// Who asked (the request's user; `kruise-manager` for the CloneSet controller).
    pub username: String,
}

/// OpenKruise's `pod_unavailable_budget` counter: disruptions a budget refused, by workload and
/// user. The process registers it once (`kruise-manager` does at start-up).
pub static REFUSALS: LazyLock<
    prometheus_client::metrics::family::Family<
        RefusalLabels,
        kruise_runtime::metrics::UntypedCounter,
    >,
> = LazyLock::new(Default::default);

/// How many times a status write that conflicts is tried (OpenKruise's `ConflictRetry`).
const CONFLICT_ATTEMPTS: usize = 4;

/// `/validate-pod` (see the module docs). Gates as OpenKruise's `validatingPodFn`.
pub async fn validate(req: &Request, ctx: &HandlerContext) -> Response {
    if req.operation == AdmissionOp::Delete && req.old_object.is_none() {
        return allow(req);
    }
    let gate = match req.operation {
        AdmissionOp::Update => Feature::PodUnavailableBudgetUpdateGate,
        AdmissionOp::Delete | AdmissionOp::Create => Feature::PodUnavailableBudgetDeleteGate,
        _ => return allow(req),
    };
    if !ctx.gates.enabled(gate) {
        return allow(req);
    }
    let Some(lookup) = &ctx.lookup else {
        return allow(req);
    };
    match check(req, ctx, lookup).await {
        Ok(None) => allow(req),
        Ok(Some(reason)) => errored(req, CODE_FORBIDDEN, reason),
        Err(e) => errored(req, CODE_BAD_REQUEST, e),
    }
}

/// `podUnavailableBudgetValidatingPod`: `Ok(None)` admits, `Ok(Some(reason))` refuses.
async fn check(
    req: &Request,
    ctx: &HandlerContext,
    lookup: &Lookup,
) -> Result<Option<String>, String> {
    let sub = req.sub_resource.as_deref().unwrap_or("");
    let (pod, operation): (Pod, Operation) = match req.operation {
        AdmissionOp::Update => {
            let new: Pod = decode(req.object.as_ref().ok_or("there is no content to decode")?)?;
            if annotation(&new.metadata, keys::PUB_RELATED).is_none() {
                return Ok(None);
            }
            let old: Pod = decode(req.old_object.as_ref().ok_or("there is no old object")?)?;
            let resize = engine::can_resize_in_place(&old, &new);
            if !engine::is_pod_unavailable_changed(&old, &new) {
                return Ok(None);
            }
            (
                old,
                if resize {
                    Operation::Resize
                } else {
                    Operation::Update
                },
            )
        }
        AdmissionOp::Delete => {
            if !sub.is_empty() {
                return Ok(None);
            }
            let old: Pod = decode(req.old_object.as_ref().ok_or("there is no old object")?)?;
            (old, Operation::Delete)
        }
        AdmissionOp::Create => {
            if sub != "eviction" {
                return Ok(None);
            }
            let ns = req.namespace.as_deref().unwrap_or("");
            let Some(cached) = lookup.pod(ns, &req.name).await? else {
                return Err(format!("pods \"{}\" not found", req.name));
            };
            let pod: Pod = serde_json::to_value(cached.as_ref())
                .and_then(serde_json::from_value)
                .map_err(|e| e.to_string())?;
            (pod, Operation::Evict)
        }
        _ => return Ok(None),
    };
    let Some(budget_name) = annotation(&pod.metadata, keys::PUB_RELATED) else {
        return Ok(None);
    };
    validate_pod(req, ctx, lookup, &pod, budget_name, operation, req.dry_run).await
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// `PodUnavailableBudgetValidatePod` (see the module docs) for a pod of an admission request.
async fn validate_pod(
    req: &Request,
    ctx: &HandlerContext,
    lookup: &Lookup,
    pod: &Pod,
    budget_name: &str,
    operation: Operation,
    dry_run: bool,
) -> Result<Option<String>, String> {
    let cached: CachedPod = serde_json::to_value(pod)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())?;
    let ns = pod
        .metadata
        .namespace
        .as_deref()
        .or(req.namespace.as_deref())
        .unwrap_or("");
    if !counts_against_budget(&cached) {
        return Ok(None);
    }
    let Some(budget) = lookup.budget(ns, budget_name).await? else {
        return Ok(None);
    };
    let username = req.user_info.username.clone().unwrap_or_default();
    admit(
        lookup.client(),
        &budget,
        &cached,
        &Disruption {
            operation,
            in_place_vertical_scaling: ctx.gates.enabled(Feature::InPlacePodVerticalScaling),
            username: &username,
            dry_run,
        },
    )
    .await
}

/// Whether a pod goes through a budget at all: not exempt (`pub.kruise.io/no-protect`) and
/// available (ready and consistent: a pod that is not does not count as available, so
/// disrupting it costs nothing).
pub fn counts_against_budget(pod: &CachedPod) -> bool {
    annotation(&pod.metadata, keys::PUB_NO_PROTECT) != Some("true") && engine::is_pod_available(pod)
}

/// The budget-spending half of `PodUnavailableBudgetValidatePod`, shared by the pod webhook and
/// the CloneSet controller (OpenKruise checks a CloneSet's pod against its budget before
/// updating it): `Ok(None)` admits `operation` on `pod` under `budget` (one unit spent and the
/// pod recorded, unless `dry_run`, or nothing to spend), `Ok(Some(reason))` refuses it (Warning
/// Event `PubPreventPodDeletion` on the pod). Without a client (tests, corpus replay) the
/// verdict is taken on `budget` as it is, writing nothing.
///
/// # Errors
/// None today; the `Result` leaves room for lookups the caller delegates.
pub async fn admit(
    client: Option<&kube::Client>,
    budget: &Arc<PodUnavailableBudget>,
    pod: &CachedPod,
    disruption: &Disruption<'_>,
) -> Result<Option<String>, String> {
    let Disruption {
        operation,
        in_place_vertical_scaling,
        username,
        dry_run,
    } = *disruption;
    if budget
        .status
        .as_ref()
        .is_none_or(|s| s.desired_available == 0)
        || !engine::needs_protection(budget, operation, in_place_vertical_scaling)
    {
        return Ok(None);
    }
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    if engine::is_recorded(budget, &pod_name) {
        return Ok(None);
    }
    let Some(client) = client else {
        let mut b = (**budget).clone();
        return Ok(engine::check_and_decrement(
            &mut b,
            &pod_name,
            operation,
            jiff::Timestamp::now(),
        )
        .err());
    };
    let ns = budget.metadata.namespace.clone().unwrap_or_default();
    let budget_name = budget.metadata.name.clone().unwrap_or_default();
    let lock = WRITTEN.lock(budget);
    let _held = lock.lock().await;
    let api: Api<PodUnavailableBudget> = Api::namespaced(client.clone(), &ns);
    let mut current = WRITTEN.newer(budget.clone());
    for attempt in 1..=CONFLICT_ATTEMPTS {
        if engine::is_recorded(&current, &pod_name) {
            return Ok(None);
        }
        let mut next = (*current).clone();
        if let Err(reason) =
            engine::check_and_decrement(&mut next, &pod_name, operation, jiff::Timestamp::now())
        {
            count_refusal(pod, username);
            prevented(client, pod).await;
            return Ok(Some(reason));
        }
        if dry_run {
            return Ok(None);
        }
        match api
            .replace_status(&budget_name, &PostParams::default(), &next)
            .await
        {
            Ok(written) => {
                WRITTEN.remember(written);
                return Ok(None);
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < CONFLICT_ATTEMPTS => {
                match api.get_opt(&budget_name).await {
                    Ok(Some(fresh)) => current = Arc::new(fresh),
                    Ok(None) => return Ok(None),
                    Err(e) => return Ok(Some(e.to_string())),
                }
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Some(format!(
                    "Timeout: couldn't update PodUnavailableBudget {budget_name} due to conflicts"
                )));
            }
            Err(e) => return Ok(Some(e.to_string())),
        }
    }
    Ok(None)
}

/// What is asked of a budget for one pod ([`admit`]).
#[derive(Debug, Clone, Copy)]
pub struct Disruption<'a> {
    /// The operation.
    pub operation: Operation,
    /// Gate `InPlacePodVerticalScaling` (without it a guarded UPDATE guards RESIZE too).
    pub in_place_vertical_scaling: bool,
    /// Who asks (the request's user; `kruise-manager` for the CloneSet controller).
    pub username: &'a str,
    /// A dry run: judged, nothing written.
    pub dry_run: bool,
}

/// One more refusal in [`REFUSALS`] for `pod` (labels as OpenKruise's).
fn count_refusal(pod: &CachedPod, username: &str) {
    let ns = pod
        .metadata
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let (kind, name) = match pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    {
        Some(o) => (o.kind.clone(), o.name.clone()),
        None => (
            "unknown".to_string(),
            pod.metadata.name.clone().unwrap_or_default(),
        ),
    };
    REFUSALS
        .get_or_create(&RefusalLabels {
            kind_namespace_name: format!("{kind}_{ns}_{name}"),
            username: username.to_string(),
        })
        .inc();
}

/// The Warning Event OpenKruise reports on a pod whose disruption a budget refused.
async fn prevented(client: &kube::Client, pod: &CachedPod) {
    static RECORDER: std::sync::OnceLock<kruise_runtime::events::EventRecorder> =
        std::sync::OnceLock::new();
    let recorder =
        RECORDER.get_or_init(|| kruise_runtime::events::EventRecorder::new(client.clone()));
    recorder
        .warning(
            &kruise_runtime::events::object_ref(pod),
            "PubPreventPodDeletion",
            "openkruise pub prevents pod deletion",
        )
        .await;
}

/// This process's last writes and per-object locks ([`super::writelog`]).
static WRITTEN: LazyLock<super::writelog::WriteLog<PodUnavailableBudget>> =
    LazyLock::new(Default::default);

/// `GetPubForPod` of the mutating webhook: the budget covering a new pod — a `targetRef` to
/// the pod's workload (its controller owner; for a ReplicaSet owned by a Deployment, the
/// Deployment), else a non-empty selector selecting its labels. Budgets are taken in the
/// namespace's order (by name), the first match wins.
///
/// # Errors
/// A lookup's API error, as text.
pub async fn related_budget(lookup: &Lookup, pod: &Pod) -> Result<Option<String>, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or("");
    let mut budgets = lookup.budgets_in(ns).await?;
    if budgets.is_empty() {
        return Ok(None);
    }
    budgets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let workload = workload_of(lookup, pod).await?;
    for b in budgets {
        let covers = match (&b.spec.target_reference, &workload) {
            (Some(r), Some(w)) => engine::is_reference_equal(w, r),
            _ => engine::selects(&b, pod.metadata.labels.as_ref()),
        };
        if covers {
            return Ok(b.metadata.name.clone());
        }
    }
    Ok(None)
}

/// The pod's workload as a reference: its controller owner, or that owner's Deployment when it
/// is a ReplicaSet a Deployment controls.
async fn workload_of(lookup: &Lookup, pod: &Pod) -> Result<Option<TargetReference>, String> {
    let Some(owner) = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    else {
        return Ok(None);
    };
    let as_ref = |api_version: &str, kind: &str, name: &str| TargetReference {
        api_version: Some(api_version.to_string()),
        kind: Some(kind.to_string()),
        name: Some(name.to_string()),
    };
    if owner.kind == "ReplicaSet" && owner.api_version.starts_with("apps/") {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(rs) = lookup.replica_set(ns, &owner.name).await? else {
            return Ok(None);
        };
        if let Some(d) = rs
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "Deployment")
        {
            return Ok(Some(as_ref(&d.api_version, &d.kind, &d.name)));
        }
    }
    Ok(Some(as_ref(&owner.api_version, &owner.kind, &owner.name)))
}
