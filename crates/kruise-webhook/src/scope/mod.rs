//! Which pods the pod webhook (`mpod.kb.io`, `/mutate-pod`) needs to see, as a CEL
//! `matchConditions` expression the API server evaluates before calling it.
//!
//! OpenKruise sends every pod of every namespace without a `control-plane` label to its pod
//! webhook with `failurePolicy: Fail`, so a manager that is down stops pod creation
//! cluster-wide. kruise-rs narrows the call to the pods some feature it serves can act on:
//!
//! - pods whose controller is a Kruise workload (`apps.kruise.io/*`): the `KruisePodReady`
//!   readiness gate;
//! - pods asking for container launch priority (the `apps.kruise.io/container-launch-priority`
//!   annotation or a `KRUISE_CONTAINER_PRIORITY` env var);
//! - pods a SidecarSet can select: its `selector` over the pod's labels and, when its
//!   `namespaceSelector` pins namespaces by `kubernetes.io/metadata.name`, the request's
//!   namespace (other namespace selectors cannot be evaluated on the request and are left to
//!   the handler, so the condition errs on the side of calling);
//! - pods of a workload a PersistentPodState targets, in its namespace (its node affinity).
//!
//! Everything else never depends on the manager. With gate `KruisePodReadinessGate` on (every
//! pod gets the gate) the webhook must see every pod: no condition.

use std::fmt::Write as _;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kruise_api::apps::v1beta1::SidecarSet;
use kruise_api::keys;
use kruise_api::rspolicy::v1alpha1::{FlowControlScope, PodDeletionFlowControl};

/// Name of the match condition on `mpod.kb.io`.
pub const MATCH_CONDITION_NAME: &str = "kruise-rs-pod-needs-kruise";

/// A CEL string literal (single-quoted, `\` and `'` escaped, control characters as `\xNN`).
pub fn cel_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

const LABELS: &str = "object.metadata.labels";

fn has_label(labels: &str, key: &str) -> String {
    format!("(has({labels}) && {} in {labels})", cel_string(key))
}

fn label_is(labels: &str, key: &str, value: &str) -> String {
    format!(
        "({} && {labels}[{}] == {})",
        has_label(labels, key),
        cel_string(key),
        cel_string(value)
    )
}

fn list(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| cel_string(v)).collect();
    format!("[{}]", items.join(", "))
}

fn requirement(labels: &str, r: &LabelSelectorRequirement) -> Option<String> {
    let values = r.values.clone().unwrap_or_default();
    let key = cel_string(&r.key);
    Some(match r.operator.as_str() {
        "In" => format!(
            "({} && {labels}[{key}] in {})",
            has_label(labels, &r.key),
            list(&values)
        ),
        "NotIn" => format!(
            "(!{} || !({labels}[{key}] in {}))",
            has_label(labels, &r.key),
            list(&values)
        ),
        "Exists" => has_label(labels, &r.key),
        "DoesNotExist" => format!("!{}", has_label(labels, &r.key)),
        _ => return None,
    })
}

/// CEL over `object` (a pod) that is true when `selector` selects it, as
/// `LabelSelectorAsSelector` matching does; `None` for an operator CEL cannot express (the
/// caller then calls for every pod).
pub fn selector_expression(selector: &LabelSelector) -> Option<String> {
    selector_expression_over(selector, LABELS)
}

/// [`selector_expression`] over the labels at CEL path `labels` (e.g.
/// `oldObject.metadata.labels` for a DELETE, which has no `object`).
pub fn selector_expression_over(selector: &LabelSelector, labels: &str) -> Option<String> {
    let mut terms: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| label_is(labels, k, v))
        .collect();
    for r in selector.match_expressions.iter().flatten() {
        terms.push(requirement(labels, r)?);
    }
    if terms.is_empty() {
        return Some("true".to_string());
    }
    Some(terms.join(" && "))
}

/// The namespaces a SidecarSet's `namespaceSelector` pins by `kubernetes.io/metadata.name`
/// (`matchLabels`, or an `In` expression), if it does.
fn pinned_namespaces(s: &SidecarSet) -> Option<Vec<String>> {
    pinned_by(s.spec.namespace_selector.as_ref()?)
}

/// The namespaces a namespace selector pins by `kubernetes.io/metadata.name` (`matchLabels`,
/// or an `In` expression), if it does.
fn pinned_by(sel: &LabelSelector) -> Option<Vec<String>> {
    if let Some(v) = sel
        .match_labels
        .as_ref()
        .and_then(|m| m.get("kubernetes.io/metadata.name"))
    {
        return Some(vec![v.clone()]);
    }
    sel.match_expressions
        .iter()
        .flatten()
        .find(|e| e.key == "kubernetes.io/metadata.name" && e.operator == "In")
        .map(|e| e.values.clone().unwrap_or_default())
}

/// CEL true for the pods SidecarSet `s` can inject into; `None` when the pod webhook must see
/// every pod for it (a selector CEL cannot express). A SidecarSet whose injection is paused or
/// whose selector is empty selects nothing.
pub fn sidecarset_expression(s: &SidecarSet) -> Option<Option<String>> {
    let paused = s
        .spec
        .injection_strategy
        .as_ref()
        .and_then(|i| i.paused)
        .unwrap_or(false);
    let Some(selector) = s.spec.selector.as_ref() else {
        return Some(None);
    };
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if paused || empty {
        return Some(None);
    }
    let labels = selector_expression(selector)?;
    Some(Some(match pinned_namespaces(s) {
        Some(nss) => format!("(request.namespace in {} && {labels})", list(&nss)),
        None => format!("({labels})"),
    }))
}

/// The `matchConditions` expression of `mpod.kb.io`: true for the pods the pod webhook can act
/// on (see the module docs). `None` means every pod (no condition): gate
/// `KruisePodReadinessGate` on, or a SidecarSet selector CEL cannot express.
pub fn pod_webhook_condition(sidecarsets: &[SidecarSet], every_pod: bool) -> Option<String> {
    if every_pod {
        return None;
    }
    let mut terms = vec![
        "(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, \
         has(r.controller) && r.controller && r.apiVersion.startsWith('apps.kruise.io/')))"
            .to_string(),
        format!(
            "(has(object.metadata.annotations) && {k} in object.metadata.annotations)",
            k = cel_string(keys::CONTAINER_LAUNCH_PRIORITY)
        ),
        format!(
            "object.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name == {}))",
            cel_string(keys::CONTAINER_LAUNCH_PRIORITY_ENV)
        ),
    ];
    let mut sorted: Vec<&SidecarSet> = sidecarsets.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for s in sorted {
        match sidecarset_expression(s) {
            None => return None,
            Some(None) => {}
            Some(Some(e)) => terms.push(e),
        }
    }
    Some(terms.join(" || "))
}

/// CEL true for the pods a PersistentPodState of `objects` may give node affinity to: in its
/// namespace, controlled by the workload its `targetRef` names (same group, any version, kind
/// and name); `None` when there is none (no term). PersistentPodStates being deleted are
/// skipped (OpenKruise's `SelectorPersistentPodState` skips them).
pub fn persistent_pod_state_expression<P>(objects: &[P]) -> Option<String>
where
    P: AsRef<kruise_api::apps::v1alpha1::PersistentPodState>,
{
    let mut terms: Vec<String> = objects
        .iter()
        .map(AsRef::as_ref)
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| {
            let r = &p.spec.target_reference;
            let group = kruise_engines::persistentpodstate::group_of(&r.api_version)?;
            let version = if group.is_empty() {
                "!r.apiVersion.contains('/')".to_string()
            } else {
                format!(
                    "r.apiVersion.startsWith({})",
                    cel_string(&format!("{group}/"))
                )
            };
            Some(format!(
                "(request.namespace == {ns} && has(object.metadata.ownerReferences) && \
                 object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && \
                 r.kind == {kind} && r.name == {name} && {version}))",
                ns = cel_string(p.metadata.namespace.as_deref().unwrap_or("")),
                kind = cel_string(&r.kind),
                name = cel_string(&r.name),
            ))
        })
        .collect();
    terms.sort();
    terms.dedup();
    (!terms.is_empty()).then(|| terms.join(" || "))
}

/// The deletions pod-deletion flow-control objects (`PodDeletionFlowControl`) may count, as CEL
/// terms of the pod validating webhooks: `delete` over a pod DELETE (`oldObject` is the pod),
/// `evict` over an eviction (which names the pod but carries none of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowTerms {
    /// True for a DELETE some object may count.
    pub delete: String,
    /// True for an eviction some object may count.
    pub evict: String,
}

impl FlowTerms {
    /// Every deletion and eviction (the objects are not known yet).
    pub fn every() -> Self {
        Self {
            delete: "true".to_string(),
            evict: "true".to_string(),
        }
    }
}

/// The [`FlowTerms`] of `objects` (`None` when there are none: no deletion is counted). Per
/// object: the request's namespace when its `namespaceSelector` pins namespaces by
/// `kubernetes.io/metadata.name` (other namespace selectors cannot be evaluated on the request
/// and are left to the handler), the user not exempt, and for a DELETE the old pod's controller
/// in scope (`KruiseWorkloads`: `apps.kruise.io/*`) and its labels selected by `podSelector`
/// (left to the handler when CEL cannot express it).
pub fn flow_control_terms(objects: &[PodDeletionFlowControl]) -> Option<FlowTerms> {
    if objects.is_empty() {
        return None;
    }
    let mut sorted: Vec<&PodDeletionFlowControl> = objects.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut delete = Vec::new();
    let mut evict = Vec::new();
    for fc in sorted {
        let mut common = Vec::new();
        if let Some(nss) = fc.spec.namespace_selector.as_ref().and_then(pinned_by) {
            common.push(format!("request.namespace in {}", list(&nss)));
        }
        let exempt = fc
            .spec
            .exempt
            .as_ref()
            .map(|e| e.usernames.clone())
            .unwrap_or_default();
        if !exempt.is_empty() {
            common.push(format!("!(request.userInfo.username in {})", list(&exempt)));
        }
        let mut on_pod = common.clone();
        if fc.spec.scope.unwrap_or_default() == FlowControlScope::KruiseWorkloads {
            on_pod.push(
                "(has(oldObject.metadata.ownerReferences) && \
                 oldObject.metadata.ownerReferences.exists(r, has(r.controller) && r.controller \
                 && r.apiVersion.startsWith('apps.kruise.io/')))"
                    .to_string(),
            );
        }
        if let Some(e) = fc
            .spec
            .pod_selector
            .as_ref()
            .and_then(|sel| selector_expression_over(sel, "oldObject.metadata.labels"))
            .filter(|e| e != "true")
        {
            on_pod.push(format!("({e})"));
        }
        let join = |terms: Vec<String>| {
            if terms.is_empty() {
                "true".to_string()
            } else {
                format!("({})", terms.join(" && "))
            }
        };
        delete.push(join(on_pod));
        evict.push(join(common));
    }
    Some(FlowTerms {
        delete: delete.join(" || "),
        evict: evict.join(" || "),
    })
}

/// The `matchConditions` expression of the pod validating webhooks (`vpod.kb.io`,
/// `vpodeviction.kb.io`), which hold pods to PodUnavailableBudgets and deletions to
/// pod-deletion flow control. OpenKruise's handler admits every pod without the
/// `kruise.io/related-pub` annotation, so a deletion (`PodUnavailableBudgetDeleteGate`) calls
/// it for a pod with the annotation, an update (`PodUnavailableBudgetUpdateGate`) for a new pod
/// with it; an eviction names the pod but does not carry it, so an eviction calls it when its
/// namespace is among `budget_namespaces` (the namespaces holding a budget; `None`: not known
/// yet, every eviction calls it). `flow` adds the deletions and evictions flow-control objects
/// may count ([`flow_control_terms`]). `None` for another webhook; `Some(None)`: no condition
/// (every request); `Some(Some("false"))` when nothing is left to check.
pub fn budget_condition(
    webhook: &str,
    delete_gate: bool,
    update_gate: bool,
    budget_namespaces: Option<&[String]>,
    flow: Option<&FlowTerms>,
) -> Option<Option<String>> {
    let has = |obj: &str| {
        format!(
            "({obj} != null && has({obj}.metadata.annotations) && {} in {obj}.metadata.annotations)",
            cel_string(keys::PUB_RELATED)
        )
    };
    let any = |terms: Vec<String>| {
        if terms.is_empty() {
            "false".to_string()
        } else {
            terms.join(" || ")
        }
    };
    match webhook {
        "vpod.kb.io" => {
            let mut terms = Vec::new();
            if delete_gate {
                terms.push(format!(
                    "(request.operation == 'DELETE' && {})",
                    has("oldObject")
                ));
            }
            if update_gate {
                terms.push(format!(
                    "(request.operation == 'UPDATE' && {})",
                    has("object")
                ));
            }
            if let Some(f) = flow {
                terms.push(format!(
                    "(request.operation == 'DELETE' && oldObject != null && ({}))",
                    f.delete
                ));
            }
            Some(Some(any(terms)))
        }
        "vpodeviction.kb.io" => {
            let mut terms = Vec::new();
            match (delete_gate, budget_namespaces) {
                (false, _) | (true, Some([])) => {}
                (true, None) => return Some(None),
                (true, Some(nss)) => terms.push(format!("request.namespace in {}", list(nss))),
            }
            if let Some(f) = flow {
                if f.evict == "true" {
                    return Some(None);
                }
                terms.push(format!("({})", f.evict));
            }
            Some(Some(any(terms)))
        }
        _ => None,
    }
}

/// The WorkloadSpread terms of the pod webhooks (OpenKruise's
/// `pkg/webhook/pod/{mutating,validating}/workloadspread.go` act only on these): at creation
/// (`mpod.kb.io`) a pod with a controller owner in a namespace holding a WorkloadSpread
/// (`namespaces`); a DELETE (`vpod.kb.io`) of a pod carrying
/// `apps.kruise.io/matched-workloadspread`; an eviction (`vpodeviction.kb.io`) in such a
/// namespace. `None` when no term applies to `webhook` or `namespaces` is empty.
pub fn workloadspread_condition(webhook: &str, namespaces: &[String]) -> Option<String> {
    match webhook {
        "mpod.kb.io" if !namespaces.is_empty() => Some(format!(
            "(request.namespace in {} && has(object.metadata.ownerReferences) && \
             object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller))",
            list(namespaces)
        )),
        "vpod.kb.io" => Some(format!(
            "(request.operation == 'DELETE' && oldObject != null && \
             has(oldObject.metadata.annotations) && {} in oldObject.metadata.annotations)",
            cel_string(keys::MATCHED_WORKLOADSPREAD)
        )),
        "vpodeviction.kb.io" if !namespaces.is_empty() => {
            Some(format!("(request.namespace in {})", list(namespaces)))
        }
        _ => None,
    }
}

/// The `matchConditions` expression of the deletion-protection webhooks
/// ([`crate::deletionprotection::WEBHOOKS`]: `vbuiltin*`, `vcustomresourcedefinition`,
/// `vnamespace`, `vservice`, `vingress`, and for deletions `vuniteddeployment`, see
/// [`united_deployment_condition`]): their
/// handlers refuse only objects labelled `policy.kruise.io/delete-protection` while gate
/// `ResourcesDeletionProtection` is on, so they are called only for those (never with the gate
/// off). `None` for another webhook.
pub fn deletion_condition(webhook: &str, gate: bool) -> Option<String> {
    if !crate::deletionprotection::WEBHOOKS.contains(&webhook) {
        return None;
    }
    Some(if gate {
        format!(
            "(oldObject != null && has(oldObject.metadata.labels) && {} in oldObject.metadata.labels)",
            cel_string(keys::DELETION_PROTECTION)
        )
    } else {
        "false".to_string()
    })
}

/// The `matchConditions` expression of `vuniteddeployment.kb.io`, which validates creates and
/// updates (where a manager runs the UnitedDeployment controller: `validates_writes`, i.e. it
/// serves `muniteddeployment.kb.io`) and protects deletions (objects labelled
/// `policy.kruise.io/delete-protection` while `ResourcesDeletionProtection` is on, as
/// [`deletion_condition`]): every create and update plus the protected deletions, or — a
/// manager without the controller — the protected deletions only.
pub fn united_deployment_condition(gate: bool, validates_writes: bool) -> String {
    let delete =
        deletion_condition("vuniteddeployment.kb.io", gate).unwrap_or_else(|| "false".to_string());
    match (validates_writes, gate) {
        (true, true) => format!("request.operation != 'DELETE' || {delete}"),
        (true, false) => "request.operation != 'DELETE'".to_string(),
        (false, true) => format!("request.operation == 'DELETE' && {delete}"),
        (false, false) => "false".to_string(),
    }
}

/// CEL true for a SidecarSet (either version) that can only select pods of namespace `ns`:
/// v1beta1 `spec.namespaceSelector.matchLabels["kubernetes.io/metadata.name"]`, or v1alpha1
/// `spec.namespace`. Used to give each test's manager the SidecarSets of its namespace only.
pub fn sidecarset_pinned_to(ns: &str) -> String {
    let ns = cel_string(ns);
    format!(
        "(has(object.spec.namespace) && object.spec.namespace == {ns}) || \
         (has(object.spec.namespaceSelector) && has(object.spec.namespaceSelector.matchLabels) && \
         'kubernetes.io/metadata.name' in object.spec.namespaceSelector.matchLabels && \
         object.spec.namespaceSelector.matchLabels['kubernetes.io/metadata.name'] == {ns})"
    )
}

#[cfg(test)]
mod tests;
