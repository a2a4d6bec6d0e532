//! Certificate and configuration self-maintenance (OpenKruise's webhook controller): keeps the
//! CA and serving certificate in Secret `kruise-webhook-certs`, loads them into the server
//! without a restart, and keeps `kruise-mutating-webhook-configuration` and
//! `kruise-validating-webhook-configuration` (webhooks of the implemented paths only, with the
//! current `caBundle`) and the conversion webhook of every Kruise CRD whose conversion strategy
//! is `Webhook` in place. With external certificates it only reads the Secret, keeps the
//! configurations current without their `caBundle` (which whoever issues the certificates
//! injects) and reports caBundles that do not match. It resyncs every [`RESYNC`], so a deleted Secret or an
//! overwritten `caBundle` is repaired within that time; a resync that finds everything as it
//! left it reads and writes nothing but a GET per configuration ([`AppliedConfigurations`]).

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::certs::{self, CertBundle};
use super::registry::{self, AdmissionEntry, WebhookType};
use super::server::CertStore;

/// Interval between two syncs.
pub const RESYNC: Duration = Duration::from_secs(20);
/// Name of the mutating configuration.
pub const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
/// Name of the validating configuration.
pub const VALIDATING_CONFIGURATION: &str = "kruise-validating-webhook-configuration";
/// Default Secret name (`SECRET_NAME`).
pub const DEFAULT_SECRET: &str = "kruise-webhook-certs";
/// Default `timeoutSeconds` of every webhook (`--webhook-timeout-seconds`): short, so a
/// manager that hangs delays an API request by at most this long.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 5;
/// Default Service name (`SERVICE_NAME`).
pub const DEFAULT_SERVICE: &str = "kruise-webhook-service";

/// How the API server reaches the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Through a Service (in-cluster): `<service>.<namespace>.svc:443`.
    Service {
        /// Service name.
        name: String,
        /// Service namespace.
        namespace: String,
    },
    /// Directly at `https://<host>:<port>` (e.g. `127.0.0.1` on the local testbed).
    Url {
        /// Host name or IP.
        host: String,
        /// Port.
        port: u16,
    },
}

impl Endpoint {
    /// The name the serving certificate is issued for.
    pub fn cert_host(&self) -> String {
        match self {
            Endpoint::Service { name, namespace } => format!("{name}.{namespace}.svc"),
            Endpoint::Url { host, .. } => host.clone(),
        }
    }

    fn client_config(&self, path: &str, ca_bundle: &str) -> WebhookClientConfig {
        let ca_bundle = Some(ByteString(ca_bundle.as_bytes().to_vec()));
        match self {
            Endpoint::Service { name, namespace } => WebhookClientConfig {
                service: Some(ServiceReference {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    path: Some(path.to_owned()),
                    port: Some(443),
                }),
                ca_bundle,
                url: None,
            },
            Endpoint::Url { host, port } => WebhookClientConfig {
                url: Some(format!("https://{host}:{port}{path}")),
                ca_bundle,
                service: None,
            },
        }
    }
}

/// Settings of the webhook controller.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Namespace of the certificate Secret (`POD_NAMESPACE`, default `kruise-system`).
    pub namespace: String,
    /// Name of the certificate Secret.
    pub secret_name: String,
    /// Where the API server reaches the webhook.
    pub endpoint: Endpoint,
    /// Renew certificates expiring within this window.
    pub renew_before: jiff::SignedDuration,
    /// Only read certificates from the Secret (cert-manager style, gate `EnableExternalCerts`).
    pub external_certs: bool,
    /// Restrict every webhook to namespaces with this `kubernetes.io/metadata.name` (for tests
    /// sharing a cluster); `None` applies OpenKruise's selectors.
    pub only_namespace: Option<String>,
    /// Suffix `-<suffix>` appended to both configuration names, so managers of tests that run
    /// at the same time each own their configurations; `None` uses OpenKruise's names.
    pub name_suffix: Option<String>,
    /// `failurePolicy` per webhook name (`--webhook-failure-policy`), overriding `Fail`.
    pub failure_policies: BTreeMap<String, String>,
    /// `timeoutSeconds` of every webhook (`--webhook-timeout-seconds`; `None`: the API server's
    /// default of 10 s).
    pub timeout_seconds: Option<i32>,
    /// Which pods the pod webhook is called for (`--pod-webhook-scope`).
    pub pod_scope: PodScope,
    /// The webhooks served (the feature gates' and the enabled controllers' choice:
    /// [`registry::Selection`]).
    pub webhooks: registry::Selection,
}

/// What the pod validating webhooks' conditions derive from ([`PodScope::validating_scope`]):
/// budget namespaces, flow-control terms, WorkloadSpread namespaces.
pub type ValidatingScope = (
    Option<Vec<String>>,
    Option<crate::scope::FlowTerms>,
    Option<Option<Vec<String>>>,
);

/// Which pods reach `mpod.kb.io` (see [`crate::scope`]).
#[derive(Clone, Default)]
pub enum PodScope {
    /// Every pod outside `control-plane` namespaces, as OpenKruise's configuration.
    #[default]
    Every,
    /// Only pods a served feature can act on: a `matchConditions` CEL expression over the
    /// SidecarSets of `sidecarsets` (none: only Kruise-owned and launch-priority pods), or
    /// every pod when `every_pod` (gate `KruisePodReadinessGate`).
    Needed {
        /// Where SidecarSets are read (the shared cache).
        sidecarsets: Option<kruise_runtime::cache::Informer<kruise_api::apps::v1beta1::SidecarSet>>,
        /// Where PodUnavailableBudgets are read (the eviction webhook is called only in their
        /// namespaces); `None` when this manager serves no budget checks.
        budgets: Option<
            kruise_runtime::cache::Informer<kruise_api::policy::v1alpha1::PodUnavailableBudget>,
        >,
        /// Where PodDeletionFlowControls are read (the pod validating webhooks are called for
        /// the deletions they may count); `None` when this manager serves no flow control.
        flow_controls: Option<
            kruise_runtime::cache::Informer<kruise_api::rspolicy::v1alpha1::PodDeletionFlowControl>,
        >,
        /// Where PersistentPodStates are read (the pod webhook is called for the pods of the
        /// workloads they may target in their namespaces); `None` when this manager serves no
        /// PersistentPodState.
        persistent_pod_states:
            Option<kruise_runtime::cache::Informer<kruise_api::apps::v1alpha1::PersistentPodState>>,
        /// Every pod needs the webhook anyway.
        every_pod: bool,
        /// Where WorkloadSpreads are read (the pod webhooks are called for the pods of their
        /// namespaces, [`crate::scope::workloadspread_condition`]); `None` when this manager
        /// serves no WorkloadSpread.
        workload_spreads:
            Option<kruise_runtime::cache::Informer<kruise_api::apps::v1alpha1::WorkloadSpread>>,
    },
}

impl std::fmt::Debug for PodScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodScope::Every => f.write_str("Every"),
            PodScope::Needed { every_pod, .. } => f
                .debug_struct("Needed")
                .field("every_pod", every_pod)
                .finish_non_exhaustive(),
        }
    }
}

impl PodScope {
    /// Waits at most `wait` for the caches the conditions derive from (SidecarSets,
    /// PodUnavailableBudgets) to complete
    /// their initial list, so that the first configuration written is already the narrowed one
    /// and not rewritten a moment later.
    pub async fn wait_synced(&self, wait: std::time::Duration) {
        let PodScope::Needed {
            sidecarsets,
            budgets,
            flow_controls,
            persistent_pod_states,
            workload_spreads,
            ..
        } = self
        else {
            return;
        };
        let syncs: Vec<_> = sidecarsets
            .iter()
            .map(|i| i.synced())
            .chain(workload_spreads.iter().map(|i| i.synced()))
            .chain(budgets.iter().map(|i| i.synced()))
            .chain(flow_controls.iter().map(|i| i.synced()))
            .chain(persistent_pod_states.iter().map(|i| i.synced()))
            .collect();
        let _ = tokio::time::timeout(wait, async {
            for s in syncs {
                s.wait().await;
            }
        })
        .await;
    }

    /// The namespaces holding a PodUnavailableBudget, sorted; `None` when budgets are not read
    /// or their cache has not completed its initial list (then every eviction calls the
    /// webhook).
    pub fn budget_namespaces(&self) -> Option<Vec<String>> {
        let PodScope::Needed {
            budgets: Some(b), ..
        } = self
        else {
            return None;
        };
        if !b.synced().is_synced() {
            return None;
        }
        let mut nss: Vec<String> = b
            .store()
            .state()
            .iter()
            .filter_map(|x| x.metadata.namespace.clone())
            .collect();
        nss.sort();
        nss.dedup();
        Some(nss)
    }

    /// The deletions the PodDeletionFlowControls may count ([`crate::scope::flow_control_terms`]);
    /// `None` when flow control is not served or there is no object; every deletion while
    /// their cache has not completed its initial list.
    pub fn flow_terms(&self) -> Option<crate::scope::FlowTerms> {
        let PodScope::Needed {
            flow_controls: Some(f),
            ..
        } = self
        else {
            return None;
        };
        if !f.synced().is_synced() {
            return Some(crate::scope::FlowTerms::every());
        }
        let objects: Vec<_> = f.store().state().iter().map(|o| (**o).clone()).collect();
        crate::scope::flow_control_terms(&objects)
    }

    /// What the pod validating webhooks' conditions derive from now: the namespaces holding a
    /// budget, the flow-control terms and the namespaces holding a WorkloadSpread (a change
    /// re-applies the validating configuration).
    pub fn validating_scope(&self) -> ValidatingScope {
        (
            self.budget_namespaces(),
            self.flow_terms(),
            self.workloadspread_namespaces(),
        )
    }

    /// The namespaces holding a WorkloadSpread, sorted: `None` when WorkloadSpreads are not
    /// served, `Some(None)` while their cache has not completed its initial list (every pod).
    pub fn workloadspread_namespaces(&self) -> Option<Option<Vec<String>>> {
        let PodScope::Needed {
            workload_spreads: Some(w),
            ..
        } = self
        else {
            return None;
        };
        if !w.synced().is_synced() {
            return Some(None);
        }
        let mut nss: Vec<String> = w
            .store()
            .state()
            .iter()
            .filter_map(|x| x.metadata.namespace.clone())
            .collect();
        nss.sort();
        nss.dedup();
        Some(Some(nss))
    }

    /// `condition` widened by the WorkloadSpread term of `webhook` (`None`: every request).
    fn with_workloadspreads(&self, webhook: &str, condition: Option<String>) -> Option<String> {
        let condition = condition?;
        match self.workloadspread_namespaces() {
            None => Some(condition),
            Some(None) => None,
            Some(Some(nss)) => match crate::scope::workloadspread_condition(webhook, &nss) {
                Some(t) => Some(format!("({condition}) || {t}")),
                None => Some(condition),
            },
        }
    }

    /// The `matchConditions` expression of the pod webhook now; `None` for every pod.
    pub fn condition(&self) -> Option<String> {
        match self {
            PodScope::Every => None,
            PodScope::Needed {
                sidecarsets,
                persistent_pod_states,
                every_pod,
                ..
            } => {
                // Until the SidecarSet cache has completed its initial list, the webhook cannot
                // know which pods a SidecarSet selects: every pod (a restarted manager must not
                // narrow the scope to "no SidecarSet" for a moment).
                if sidecarsets
                    .as_ref()
                    .is_some_and(|i| !i.synced().is_synced())
                {
                    return None;
                }
                let sets: Vec<kruise_api::apps::v1beta1::SidecarSet> = sidecarsets
                    .as_ref()
                    .map(|i| i.store().state().iter().map(|s| (**s).clone()).collect())
                    .unwrap_or_default();
                let condition = crate::scope::pod_webhook_condition(&sets, *every_pod)?;
                // PersistentPodStates: every pod of their namespaces until their cache synced.
                let pps = match persistent_pod_states {
                    None => None,
                    Some(i) if !i.synced().is_synced() => return None,
                    Some(i) => {
                        let objects: Vec<_> = i.store().state();
                        crate::scope::persistent_pod_state_expression(&objects)
                    }
                };
                let condition = match pps {
                    Some(e) => format!("{condition} || {e}"),
                    None => condition,
                };
                self.with_workloadspreads("mpod.kb.io", Some(condition))
            }
        }
    }
}

impl WebhookSettings {
    /// Names of the mutating and validating configurations this manager maintains:
    /// [`MUTATING_CONFIGURATION`] and [`VALIDATING_CONFIGURATION`], with `-<name_suffix>`.
    pub fn configuration_names(&self) -> (String, String) {
        match &self.name_suffix {
            Some(sfx) => (
                format!("{MUTATING_CONFIGURATION}-{sfx}"),
                format!("{VALIDATING_CONFIGURATION}-{sfx}"),
            ),
            None => (
                MUTATING_CONFIGURATION.to_owned(),
                VALIDATING_CONFIGURATION.to_owned(),
            ),
        }
    }
}

/// How long the first configuration sync waits for the pod scope's caches.
const SCOPE_SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The mutating and validating configurations for the implemented webhooks, as OpenKruise
/// v1.9.0's manifests declare them (names, rules, `failurePolicy: Fail`, `sideEffects: None`,
/// the API server's default 10 s timeout, `mpod.kb.io` skipping namespaces labelled
/// `control-plane`), pointing at `s.endpoint` with `ca_bundle_pem` (base64-encoded here; empty
/// for the checked-in manifests).
pub fn configurations(s: &WebhookSettings, ca_bundle_pem: &str) -> (Value, Value) {
    let (mutating, validating) = typed_configurations(s, ca_bundle_pem, s.pod_scope.condition());
    let value = |v: serde_json::Result<Value>| v.unwrap_or(Value::Null);
    (
        value(serde_json::to_value(mutating)),
        value(serde_json::to_value(validating)),
    )
}

/// [`configurations`] as k8s-openapi objects, one webhook per [`registry::REGISTRY`] entry the gates
/// enable, in its order;
/// `pod_condition` narrows the webhooks that skip `control-plane` namespaces (the pod webhooks)
/// with a `matchConditions` expression.
pub fn typed_configurations(
    s: &WebhookSettings,
    ca_bundle_pem: &str,
    pod_condition: Option<String>,
) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let strings = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    let selector = |e: &AdmissionEntry| {
        let mut exprs = Vec::new();
        if e.skip_control_plane {
            exprs.push(LabelSelectorRequirement {
                key: "control-plane".into(),
                operator: "DoesNotExist".into(),
                values: None,
            });
            // The manager's own namespace never goes through its pod webhooks (its replacement
            // pods must start while it is down).
            exprs.push(LabelSelectorRequirement {
                key: "kubernetes.io/metadata.name".into(),
                operator: "NotIn".into(),
                values: Some(vec![s.namespace.clone()]),
            });
        }
        if let Some(ns) = &s.only_namespace {
            exprs.push(LabelSelectorRequirement {
                key: "kubernetes.io/metadata.name".into(),
                operator: "In".into(),
                values: Some(vec![ns.clone()]),
            });
        }
        (!exprs.is_empty()).then_some(LabelSelector {
            match_expressions: Some(exprs),
            match_labels: None,
        })
    };
    let rules = |e: &AdmissionEntry| {
        Some(vec![RuleWithOperations {
            api_groups: strings(&[e.api_group]),
            api_versions: strings(e.api_versions),
            operations: strings(e.operations),
            resources: strings(&[e.resource]),
            scope: None,
        }])
    };
    let review_versions = || vec!["v1".to_owned(), "v1beta1".to_owned()];
    let failure_policy = |e: &AdmissionEntry| {
        Some(
            s.failure_policies
                .get(e.name)
                .cloned()
                .unwrap_or_else(|| "Fail".to_owned()),
        )
    };
    let match_conditions = |e: &AdmissionEntry| {
        // Tests sharing a cluster: a namespaceSelector does not restrict cluster-scoped kinds
        // (SidecarSets), so their webhooks only see the objects pinned to the namespace.
        if let (Some(ns), "sidecarsets") = (&s.only_namespace, e.resource) {
            return Some(vec![MatchCondition {
                name: "kruise-rs-e2e-only-namespace".to_owned(),
                expression: crate::scope::sidecarset_pinned_to(ns),
            }]);
        }
        if let (Some(ns), "resourcedistributions") = (&s.only_namespace, e.resource) {
            return Some(vec![MatchCondition {
                name: "kruise-rs-e2e-only-namespace".to_owned(),
                expression: crate::resourcedistribution::pinned_to(ns),
            }]);
        }
        if !matches!(s.pod_scope, PodScope::Every) {
            use kruise_runtime::features::Feature;
            let gates = &s.webhooks.gates;
            if e.name == "vuniteddeployment.kb.io" {
                return Some(vec![MatchCondition {
                    name: crate::scope::MATCH_CONDITION_NAME.to_owned(),
                    expression: crate::scope::united_deployment_condition(
                        gates.enabled(Feature::ResourcesDeletionProtection),
                        s.webhooks.serves_name("muniteddeployment.kb.io"),
                    ),
                }]);
            }
            if let Some(expression) = crate::scope::deletion_condition(
                e.name,
                gates.enabled(Feature::ResourcesDeletionProtection),
            ) {
                return Some(vec![MatchCondition {
                    name: crate::scope::MATCH_CONDITION_NAME.to_owned(),
                    expression,
                }]);
            }
            if let Some(cond) = crate::scope::budget_condition(
                e.name,
                gates.enabled(Feature::PodUnavailableBudgetDeleteGate),
                gates.enabled(Feature::PodUnavailableBudgetUpdateGate),
                s.pod_scope.budget_namespaces().as_deref(),
                s.pod_scope.flow_terms().as_ref(),
            ) {
                let cond = cond.and_then(|c| s.pod_scope.with_workloadspreads(e.name, Some(c)));
                return cond.map(|expression| {
                    vec![MatchCondition {
                        name: crate::scope::MATCH_CONDITION_NAME.to_owned(),
                        expression,
                    }]
                });
            }
        }
        let cond = pod_condition.as_ref().filter(|_| e.skip_control_plane)?;
        Some(vec![MatchCondition {
            name: crate::scope::MATCH_CONDITION_NAME.to_owned(),
            expression: cond.clone(),
        }])
    };
    let of_type = |t: WebhookType| s.webhooks.entries().filter(move |e| e.webhook_type == t);
    let (mutating_name, validating_name) = s.configuration_names();
    let mutating = MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(mutating_name),
            ..ObjectMeta::default()
        },
        webhooks: Some(
            of_type(WebhookType::Mutating)
                .map(|e| MutatingWebhook {
                    name: e.name.to_owned(),
                    admission_review_versions: review_versions(),
                    client_config: s.endpoint.client_config(e.path, ca_bundle_pem),
                    failure_policy: failure_policy(e),
                    side_effects: "None".into(),
                    rules: rules(e),
                    namespace_selector: selector(e),
                    match_conditions: match_conditions(e),
                    timeout_seconds: s.timeout_seconds,
                    ..MutatingWebhook::default()
                })
                .collect(),
        ),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(validating_name),
            ..ObjectMeta::default()
        },
        webhooks: Some(
            of_type(WebhookType::Validating)
                .map(|e| ValidatingWebhook {
                    name: e.name.to_owned(),
                    admission_review_versions: review_versions(),
                    client_config: s.endpoint.client_config(e.path, ca_bundle_pem),
                    failure_policy: failure_policy(e),
                    side_effects: "None".into(),
                    rules: rules(e),
                    namespace_selector: selector(e),
                    match_conditions: match_conditions(e),
                    timeout_seconds: s.timeout_seconds,
                    ..ValidatingWebhook::default()
                })
                .collect(),
        ),
    };
    (mutating, validating)
}

/// Annotation where OpenKruise keeps a configuration's webhooks as installed (JSON list) before
/// dropping those without a handler.
pub const TEMPLATE_ANNOTATION: &str = "template";

/// The path a webhook's `clientConfig` calls (`service.path`, or the path of `url`).
fn webhook_path(webhook: &Value) -> Option<String> {
    if let Some(p) = webhook
        .pointer("/clientConfig/service/path")
        .and_then(Value::as_str)
    {
        return Some(p.to_owned());
    }
    let url = webhook
        .pointer("/clientConfig/url")
        .and_then(Value::as_str)?;
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    Some(rest.find('/').map_or("/".to_owned(), |i| {
        rest[i..].split('?').next().unwrap_or("/").to_owned()
    }))
}

/// OpenKruise's rule for installed configurations: webhooks whose path this manager does not
/// serve are removed (the API server would otherwise call a path that answers 404 and, with
/// `failurePolicy: Fail`, refuse the request). The webhooks as installed are kept, once, in the
/// [`TEMPLATE_ANNOTATION`] annotation, where OpenKruise keeps them too. Returns the pruned
/// configuration, or `None` when every webhook is served.
pub fn prune_unserved(config: &Value, served: &[&str]) -> Option<Value> {
    let hooks = config.get("webhooks")?.as_array()?;
    let keep: Vec<Value> = hooks
        .iter()
        .filter(|w| webhook_path(w).is_some_and(|p| served.contains(&p.as_str())))
        .cloned()
        .collect();
    if keep.len() == hooks.len() {
        return None;
    }
    let mut out = config.clone();
    out["webhooks"] = Value::Array(keep);
    let annotations = &mut out["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    if annotations.get(TEMPLATE_ANNOTATION).is_none() {
        annotations[TEMPLATE_ANNOTATION] =
            Value::String(serde_json::to_string(hooks).unwrap_or_default());
    }
    Some(out)
}

/// CRDs whose install manifests turn on the conversion webhook in OpenKruise v1.9.0
/// (`config/crd/patches/webhook_in_*.yaml`); the controller keeps the `clientConfig` of every
/// Kruise CRD with `conversion.strategy: Webhook`, these or others.
pub const CONVERSION_WEBHOOK_CRDS: &[&str] = &[
    "statefulsets.apps.kruise.io",
    "daemonsets.apps.kruise.io",
    "sidecarsets.apps.kruise.io",
];

/// The `spec.conversion.webhook` a CRD needs to reach `/convert` at `endpoint` with
/// `ca_bundle_pem` (empty for the checked-in patches).
pub fn conversion_webhook(endpoint: &Endpoint, ca_bundle_pem: &str) -> Value {
    // The same JSON shape as apiextensions' WebhookClientConfig.
    let mut client =
        serde_json::to_value(endpoint.client_config(crate::paths::CONVERT, ca_bundle_pem))
            .unwrap_or_default();
    if ca_bundle_pem.is_empty() {
        client.as_object_mut().map(|o| o.remove("caBundle"));
    }
    json!({"clientConfig": client, "conversionReviewVersions": ["v1", "v1beta1"]})
}

/// Whether `crd` is a Kruise kind served in two versions whose `conversion.strategy` is
/// `Webhook` (the CRDs whose conversion webhook the manager maintains, as OpenKruise).
fn converts_via_webhook(crd: &Value) -> bool {
    let str_at = |p: &str| crd.pointer(p).and_then(Value::as_str);
    str_at("/spec/group") == Some("apps.kruise.io")
        && str_at("/spec/names/kind")
            .is_some_and(|k| super::conversion::CONVERTIBLE_KINDS.contains(&k))
        && str_at("/spec/conversion/strategy") == Some("Webhook")
}

/// The merge patch that points `crd`'s conversion webhook at `endpoint` with `ca_bundle_pem`, or
/// `None` when the CRD is not a Kruise kind with `conversion.strategy: Webhook` or is already
/// correct (OpenKruise's rule: CRDs without the Webhook strategy are left alone).
pub fn conversion_patch(crd: &Value, endpoint: &Endpoint, ca_bundle_pem: &str) -> Option<Value> {
    if !converts_via_webhook(crd) {
        return None;
    }
    let want = conversion_webhook(endpoint, ca_bundle_pem);
    let have = crd
        .pointer("/spec/conversion/webhook")
        .cloned()
        .unwrap_or(Value::Null);
    if have.get("clientConfig") == want.get("clientConfig") {
        return None;
    }
    let mut client = want["clientConfig"].clone();
    // A merge patch must clear the other kind of endpoint explicitly.
    for key in ["url", "service"] {
        if client.get(key).is_none() {
            client[key] = Value::Null;
        }
    }
    Some(json!({"spec": {"conversion": {"webhook": {
        "clientConfig": client,
        "conversionReviewVersions": want["conversionReviewVersions"].clone(),
    }}}}))
}

/// The checked-in manifests (`config/webhook/`): the two configurations pointing at Service
/// `kruise-webhook-service` in `kruise-system` without a caBundle (the manager fills it in), the
/// Service itself, and one CRD patch per [`CONVERSION_WEBHOOK_CRDS`] entry turning the
/// conversion webhook on. Returns `(file name, YAML)` pairs.
pub fn manifests() -> Vec<(String, String)> {
    let s = WebhookSettings {
        namespace: "kruise-system".into(),
        secret_name: DEFAULT_SECRET.into(),
        endpoint: Endpoint::Service {
            name: DEFAULT_SERVICE.into(),
            namespace: "kruise-system".into(),
        },
        renew_before: jiff::SignedDuration::ZERO,
        external_certs: false,
        only_namespace: None,
        name_suffix: None,
        failure_policies: BTreeMap::new(),
        timeout_seconds: Some(DEFAULT_TIMEOUT_SECONDS),
        pod_scope: PodScope::Needed {
            sidecarsets: None,
            every_pod: false,
            budgets: None,
            flow_controls: None,
            persistent_pod_states: None,
            workload_spreads: None,
        },
        webhooks: registry::Selection::default(),
    };
    let (mut m, mut v) = configurations(&s, "");
    for cfg in [&mut m, &mut v] {
        if let Some(hooks) = cfg["webhooks"].as_array_mut() {
            for h in hooks {
                h["clientConfig"]
                    .as_object_mut()
                    .map(|o| o.remove("caBundle"));
            }
        }
    }
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": DEFAULT_SERVICE, "namespace": "kruise-system"},
        "spec": {"ports": [{"port": 443, "targetPort": 9876}],
                 "selector": {"control-plane": "controller-manager"}},
    });
    let header = "# Generated by `make crds` (kruise-webhookgen); do not edit.\n";
    let yaml = |docs: &[&Value]| {
        let mut out = header.to_owned();
        for d in docs {
            out.push_str("---\n");
            out.push_str(&serde_yaml_ng::to_string(d).unwrap_or_default());
        }
        out
    };
    let mut files = vec![("manifests.yaml".to_owned(), yaml(&[&m, &v, &service]))];
    for crd in CONVERSION_WEBHOOK_CRDS {
        let plural = crd.split('.').next().unwrap_or(crd);
        let patch = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd},
            "spec": {"conversion": {"strategy": "Webhook",
                                    "webhook": conversion_webhook(&s.endpoint, "")}},
        });
        files.push((
            format!("crd-conversion/webhook_in_{plural}.yaml"),
            yaml(&[&patch]),
        ));
    }
    files
}

/// The configurations this manager applies: [`configurations`] with the bundle's CA, or — with
/// external certificates — without any `caBundle`, so that server-side apply never takes the
/// field from whoever injects it (e.g. cert-manager's CA injector) while the webhooks, their
/// rules, failure policies, timeouts and the pod webhook's scope are still kept current. That
/// is what keeps SidecarSet injection working in that mode: the scope follows the SidecarSets
/// whatever issues the certificates.
pub fn desired_configurations(s: &WebhookSettings, bundle: &CertBundle) -> (Value, Value) {
    if !s.external_certs {
        return configurations(s, &bundle.ca_cert);
    }
    let (mut m, mut v) = configurations(s, "");
    for cfg in [&mut m, &mut v] {
        for hook in cfg["webhooks"].as_array_mut().into_iter().flatten() {
            if let Some(client) = hook["clientConfig"].as_object_mut() {
                client.remove("caBundle");
            }
        }
    }
    (m, v)
}

/// What this manager last wrote to each webhook configuration: the desired object (as JSON) and
/// the resourceVersion the write left. A resync whose desired object is unchanged and finds the
/// configuration still at that resourceVersion (one GET of its metadata) writes nothing;
/// otherwise the configuration is applied again (someone edited it, or the certificate or
/// the pod webhook's scope changed). OpenKruise's webhook controller likewise writes only when
/// the configuration differs.
#[derive(Debug, Default)]
pub struct AppliedConfigurations(BTreeMap<String, (String, String)>);

/// One sync: make sure the Secret holds a valid bundle (creating or renewing it), load it into
/// `store`, and apply both configurations unless they are as last applied (`applied`). Returns
/// the bundle in use.
pub async fn sync_once(
    client: &Client,
    s: &WebhookSettings,
    store: &CertStore,
    applied: &mut AppliedConfigurations,
) -> Result<CertBundle, kube::Error> {
    let bundle = ensure_certificates(client, s).await?;
    store
        .load(&bundle)
        .map_err(|e| kube::Error::Service(e.to_string().into()))?;
    let (mutating, validating) = desired_configurations(s, &bundle);
    let mapi: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vapi: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let pp = PatchParams::apply("kruise-manager").force();
    let (mutating_name, validating_name) = s.configuration_names();
    let served = s.webhooks.paths();
    apply_configuration(&mapi, &mutating_name, &pp, &mutating, &served, applied).await?;
    apply_configuration(&vapi, &validating_name, &pp, &validating, &served, applied).await?;
    if s.external_certs {
        // As OpenKruise with EnableExternalCerts: the caBundles are injected by whoever issues
        // the certificates (e.g. cert-manager's CA injector); the configurations above were
        // applied without one (this manager never owns the field), so only report a mismatch.
        check_external_ca_bundles(client, s, &bundle, &served).await?;
    } else {
        ensure_conversion_webhooks(client, s, &bundle).await?;
    }
    Ok(bundle)
}

/// OpenKruise's cert writers: the bundle in the Secret when it is usable (with external
/// certificates, whatever is there), else a fresh CA and serving certificate for the webhook's
/// host, written to the Secret (when another replica wrote it first, its bundle is used).
async fn ensure_certificates(
    client: &Client,
    s: &WebhookSettings,
) -> Result<CertBundle, kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &s.namespace);
    let host = s.endpoint.cert_host();
    let now = jiff::Timestamp::now();
    let existing = secrets.get_opt(&s.secret_name).await?;
    let current = existing
        .as_ref()
        .and_then(|sec| sec.data.as_ref())
        .and_then(certs::from_secret_data);
    let why = match &current {
        Some(b) if s.external_certs => return Ok(b.clone()),
        Some(b) => match certs::needs_renewal(b, &host, now, s.renew_before) {
            None => return Ok(b.clone()),
            Some(why) => why,
        },
        None if s.external_certs => {
            return Err(kube::Error::Service(
                format!(
                    "external certificates: Secret {}/{} has no usable certificate",
                    s.namespace, s.secret_name
                )
                .into(),
            ));
        }
        None => "missing".to_owned(),
    };
    info!(secret = %s.secret_name, reason = %why, host = %host, "generating webhook certificates");
    let fresh =
        certs::generate(&host, now).map_err(|e| kube::Error::Service(e.to_string().into()))?;
    let mut secret = existing.clone().unwrap_or_default();
    secret.metadata.name = Some(s.secret_name.clone());
    secret.metadata.namespace = Some(s.namespace.clone());
    secret.data = Some(certs::to_secret_data(&fresh));
    let written = if existing.is_some() {
        secrets
            .replace(&s.secret_name, &PostParams::default(), &secret)
            .await
    } else {
        secrets.create(&PostParams::default(), &secret).await
    };
    match written {
        Ok(_) => Ok(fresh),
        // Another replica won the race: use what it wrote.
        Err(kube::Error::Api(e)) if e.code == 409 => secrets
            .get(&s.secret_name)
            .await?
            .data
            .as_ref()
            .and_then(certs::from_secret_data)
            .ok_or_else(|| kube::Error::Service("webhook Secret changed under us".into())),
        Err(e) => Err(e),
    }
}

/// With external certificates: an error naming every configuration (of the webhooks this
/// manager serves) and every converting CRD whose caBundle is not the Secret's CA.
async fn check_external_ca_bundles(
    client: &Client,
    s: &WebhookSettings,
    bundle: &CertBundle,
    served: &[&str],
) -> Result<(), kube::Error> {
    let want = base64::engine::general_purpose::STANDARD.encode(bundle.ca_cert.as_bytes());
    let (mutating_name, validating_name) = s.configuration_names();
    let mapi: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let vapi: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut stale = Vec::new();
    for (name, cfg) in [
        (
            &mutating_name,
            mapi.get_opt(&mutating_name)
                .await?
                .and_then(|c| to_value(&c)),
        ),
        (
            &validating_name,
            vapi.get_opt(&validating_name)
                .await?
                .and_then(|c| to_value(&c)),
        ),
    ] {
        let hooks = cfg
            .as_ref()
            .and_then(|c| c["webhooks"].as_array().cloned())
            .unwrap_or_default();
        if hooks.iter().any(|h| {
            webhook_path(h).is_some_and(|p| served.contains(&p.as_str()))
                && h.pointer("/clientConfig/caBundle").and_then(Value::as_str)
                    != Some(want.as_str())
        }) {
            stale.push(name.clone());
        }
    }
    for crd in crds.list(&ListParams::default()).await? {
        let v = to_value(&crd).unwrap_or_default();
        let bundle = v
            .pointer("/spec/conversion/webhook/clientConfig/caBundle")
            .and_then(Value::as_str);
        let ours = s.webhooks.converts(&crd.name_any());
        if ours && converts_via_webhook(&v) && bundle != Some(want.as_str()) {
            stale.push(format!("CRD {}", crd.name_any()));
        }
    }
    if stale.is_empty() {
        return Ok(());
    }
    Err(kube::Error::Service(
        format!(
            "external certificates: caBundle of {} does not match Secret {}/{}",
            stale.join(", "),
            s.namespace,
            s.secret_name
        )
        .into(),
    ))
}

/// OpenKruise's `crd.Ensure`: every Kruise CRD with `conversion.strategy: Webhook` points at
/// `/convert` with the bundle's CA ([`conversion_patch`]).
async fn ensure_conversion_webhooks(
    client: &Client,
    s: &WebhookSettings,
    bundle: &CertBundle,
) -> Result<(), kube::Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds.list(&ListParams::default()).await? {
        let name = crd.name_any();
        if !s.webhooks.converts(&name) {
            continue;
        }
        let value =
            serde_json::to_value(&crd).map_err(|e| kube::Error::Service(e.to_string().into()))?;
        if let Some(patch) = conversion_patch(&value, &s.endpoint, &bundle.ca_cert) {
            crds.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            info!(crd = %name, "updated conversion webhook caBundle");
        }
    }
    Ok(())
}

/// Server-side applies one webhook configuration, then removes the webhooks it holds that this
/// manager does not serve ([`prune_unserved`]). Skipped (one metadata GET, no write) when
/// `desired` is what this manager last applied and the configuration has not changed since
/// ([`AppliedConfigurations`]).
async fn apply_configuration<K>(
    api: &Api<K>,
    name: &str,
    pp: &PatchParams,
    desired: &Value,
    served: &[&str],
    applied: &mut AppliedConfigurations,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let desired_json = desired.to_string();
    if let Some((rv, last)) = applied.0.get(name)
        && *last == desired_json
        && api
            .get_metadata_opt(name)
            .await?
            .and_then(|m| m.metadata.resource_version)
            .as_ref()
            == Some(rv)
    {
        return Ok(());
    }
    applied.0.remove(name);
    let mut written = api.patch(name, pp, &Patch::Apply(desired)).await?;
    if let Some(pruned) = to_value(&written).and_then(|v| prune_unserved(&v, served)) {
        let pruned: K = from_value(pruned)?;
        written = api.replace(name, &PostParams::default(), &pruned).await?;
        info!(
            configuration = name,
            "removed webhooks this manager does not serve"
        );
    }
    if let Some(rv) = written.meta().resource_version.clone() {
        applied.0.insert(name.to_owned(), (rv, desired_json));
    }
    Ok(())
}

fn to_value<T: serde::Serialize>(obj: &T) -> Option<Value> {
    serde_json::to_value(obj).ok()
}

fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, kube::Error> {
    serde_json::from_value(v).map_err(|e| kube::Error::Service(e.to_string().into()))
}

/// Runs [`sync_once`] now and every [`RESYNC`] until `shutdown`, and re-applies the mutating
/// configuration whenever `wake` is notified, logging failures; calls `on_ready` after the
/// first successful sync.
pub async fn run(
    client: Client,
    s: WebhookSettings,
    store: CertStore,
    on_ready: impl Fn() + Send,
    shutdown: CancellationToken,
    wake: std::sync::Arc<tokio::sync::Notify>,
) {
    let mut ready = false;
    let mut bundle: Option<CertBundle> = None;
    let mut next_full = tokio::time::Instant::now();
    let mut applied = AppliedConfigurations::default();
    // The pod webhook's condition as last applied: a SidecarSet change that does not change it
    // (e.g. a status write) costs no write.
    let mut applied_condition: Option<Option<String>> = None;
    // The namespaces holding a PodUnavailableBudget and the flow-control terms as last applied
    // (the pod validating webhooks' scope, in the validating configuration).
    let mut applied_namespaces = None;
    s.pod_scope.wait_synced(SCOPE_SYNC_WAIT).await;
    loop {
        let full = bundle.is_none() || tokio::time::Instant::now() >= next_full;
        let condition = s.pod_scope.condition();
        let namespaces = s.pod_scope.validating_scope();
        if full {
            match sync_once(&client, &s, &store, &mut applied).await {
                Ok(b) => {
                    applied_condition = Some(condition);
                    applied_namespaces = Some(namespaces.clone());
                    bundle = Some(b);
                    next_full = tokio::time::Instant::now() + RESYNC;
                    if !ready {
                        ready = true;
                        on_ready();
                    }
                }
                Err(e) => {
                    next_full = tokio::time::Instant::now() + RESYNC;
                    warn!(error = %e, "webhook certificate/configuration sync failed");
                }
            }
        } else if let Some(b) = &bundle
            && applied_condition.as_ref() != Some(&condition)
        {
            // Woken by a change the pod webhook's scope derives from (a SidecarSet): re-apply
            // the mutating configuration at once, so pods created right after the change reach
            // the webhook. The full sync (certificates, both configurations, CRDs) keeps its
            // period.
            match sync_mutating(&client, &s, b, &mut applied).await {
                Ok(()) => applied_condition = Some(condition),
                Err(e) => warn!(error = %e, "webhook configuration update failed"),
            }
        }
        if !full
            && let Some(b) = &bundle
            && applied_namespaces.as_ref() != Some(&namespaces)
        {
            // A budget appeared in or left a namespace, or a flow-control object changed what
            // it counts: the pod validating webhooks follow at once.
            match sync_validating(&client, &s, b, &mut applied).await {
                Ok(()) => applied_namespaces = Some(namespaces),
                Err(e) => warn!(error = %e, "webhook configuration update failed"),
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(next_full) => {}
            _ = wake.notified() => {}
        }
    }
}

/// Applies the mutating configuration only (with the certificate of the last full sync; with
/// external certificates without a caBundle, see [`desired_configurations`]).
async fn sync_mutating(
    client: &Client,
    s: &WebhookSettings,
    bundle: &CertBundle,
    applied: &mut AppliedConfigurations,
) -> Result<(), kube::Error> {
    let (mutating, _) = desired_configurations(s, bundle);
    let mapi: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let pp = PatchParams::apply("kruise-manager").force();
    let (mutating_name, _) = s.configuration_names();
    let served = s.webhooks.paths();
    apply_configuration(&mapi, &mutating_name, &pp, &mutating, &served, applied).await
}

/// Re-applies only the validating configuration (the eviction webhook's scope changed).
async fn sync_validating(
    client: &Client,
    s: &WebhookSettings,
    bundle: &CertBundle,
    applied: &mut AppliedConfigurations,
) -> Result<(), kube::Error> {
    let (_, validating) = desired_configurations(s, bundle);
    let vapi: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let pp = PatchParams::apply("kruise-manager").force();
    let (_, validating_name) = s.configuration_names();
    let served = s.webhooks.paths();
    apply_configuration(&vapi, &validating_name, &pp, &validating, &served, applied).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(endpoint: Endpoint, only: Option<&str>) -> WebhookSettings {
        WebhookSettings {
            namespace: "kruise-system".into(),
            secret_name: DEFAULT_SECRET.into(),
            endpoint,
            renew_before: jiff::SignedDuration::from_hours(24 * 180),
            external_certs: false,
            only_namespace: only.map(str::to_owned),
            name_suffix: None,
            failure_policies: BTreeMap::new(),
            timeout_seconds: None,
            pod_scope: PodScope::Every,
            webhooks: registry::Selection::default(),
        }
    }

    fn hook<'a>(cfg: &'a Value, name: &str) -> &'a Value {
        cfg["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == name)
            .unwrap_or_else(|| panic!("webhook {name} missing"))
    }

    fn service_settings() -> WebhookSettings {
        settings(
            Endpoint::Service {
                name: DEFAULT_SERVICE.into(),
                namespace: "kruise-system".into(),
            },
            None,
        )
    }

    #[test]
    fn configurations_follow_openkruise_names_rules_and_paths() {
        let (m, v) = configurations(&service_settings(), "CA");
        assert_eq!(m["metadata"]["name"], MUTATING_CONFIGURATION);
        assert_eq!(v["metadata"]["name"], VALIDATING_CONFIGURATION);
        let mc = hook(&m, "mcloneset.kb.io");
        assert_eq!(
            mc["clientConfig"]["service"]["path"],
            "/mutate-apps-kruise-io-v1alpha1-cloneset"
        );
        assert_eq!(mc["clientConfig"]["service"]["port"], 443);
        assert_eq!(mc["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(mc["failurePolicy"], "Fail");
        assert_eq!(mc["sideEffects"], "None");
        assert!(
            mc.get("timeoutSeconds").is_none(),
            "OpenKruise leaves the 10s default"
        );
        assert_eq!(mc["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert!(mc.get("namespaceSelector").is_none());
        let vc = hook(&v, "vcloneset.kb.io");
        assert_eq!(
            vc["rules"][0]["operations"],
            json!(["CREATE", "UPDATE", "DELETE"])
        );
        let vs = hook(&v, "vstatefulset.kb.io");
        assert_eq!(
            vs["clientConfig"]["service"]["path"],
            "/validate-apps-kruise-io-statefulset"
        );
        assert_eq!(
            vs["rules"][0]["apiVersions"],
            json!(["v1alpha1", "v1beta1"])
        );
        let mp = hook(&m, "mpod.kb.io");
        assert_eq!(mp["rules"][0]["apiGroups"], json!([""]));
        assert_eq!(mp["rules"][0]["resources"], json!(["pods"]));
        assert_eq!(mp["rules"][0]["operations"], json!(["CREATE"]));
        // OpenKruise's `control-plane` exclusion, plus the manager's own namespace.
        assert_eq!(
            mp["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "control-plane", "operator": "DoesNotExist"},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kruise-system"]}]})
        );
        assert!(mp.get("matchConditions").is_none(), "PodScope::Every");
    }

    /// A restarted manager must not narrow the pod webhook to "no SidecarSet" while its
    /// SidecarSet cache is still listing: every pod until the cache has synced, then the
    /// SidecarSets' selectors.
    #[tokio::test]
    async fn pod_scope_waits_for_the_sidecarset_cache() {
        use kruise_runtime::testing::{ListReply, ScriptedApi};
        let api = ScriptedApi::new();
        let path = "/apis/apps.kruise.io/v1beta1/sidecarsets";
        api.list(
            path,
            ListReply::After(
                Duration::from_millis(300),
                vec![
                    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
                    "metadata": {"name": "s", "uid": "u", "resourceVersion": "1"},
                    "spec": {"selector": {"matchLabels": {"app": "meshed"}}}}),
                ],
            ),
        );
        let ctx = kruise_runtime::runner::Context::new(
            api.client(),
            Default::default(),
            Default::default(),
        );
        let informer = ctx
            .cache
            .cluster_informer::<kruise_api::apps::v1beta1::SidecarSet>();
        let scope = PodScope::Needed {
            sidecarsets: Some(informer.clone()),
            every_pod: false,
            budgets: None,
            flow_controls: None,
            persistent_pod_states: None,
            workload_spreads: None,
        };
        assert_eq!(scope.condition(), None, "not synced yet: every pod");
        assert!(informer.synced().wait().await);
        let cond = scope.condition().expect("narrowed once synced");
        assert!(cond.contains("'meshed'"), "{cond}");
        ctx.shutdown.cancel();
    }

    #[test]
    fn pod_scope_failure_policies_and_timeouts() {
        let mut s = service_settings();
        s.pod_scope = PodScope::Needed {
            sidecarsets: None,
            every_pod: false,
            budgets: None,
            flow_controls: None,
            persistent_pod_states: None,
            workload_spreads: None,
        };
        s.failure_policies
            .insert("mpod.kb.io".into(), "Ignore".into());
        s.timeout_seconds = Some(5);
        let (m, v) = configurations(&s, "CA");
        let mp = hook(&m, "mpod.kb.io");
        assert_eq!(mp["failurePolicy"], "Ignore");
        assert_eq!(mp["timeoutSeconds"], 5);
        assert_eq!(
            mp["matchConditions"][0]["name"],
            crate::scope::MATCH_CONDITION_NAME
        );
        assert!(
            mp["matchConditions"][0]["expression"]
                .as_str()
                .unwrap()
                .contains("apps.kruise.io/")
        );
        // Only the pod webhooks are narrowed; the others keep Fail.
        let mc = hook(&m, "mcloneset.kb.io");
        assert!(mc.get("matchConditions").is_none());
        assert_eq!(mc["failurePolicy"], "Fail");
        assert_eq!(hook(&v, "vcloneset.kb.io")["timeoutSeconds"], 5);
        // Every pod (gate KruisePodReadinessGate): no condition.
        s.pod_scope = PodScope::Needed {
            sidecarsets: None,
            every_pod: true,
            budgets: None,
            flow_controls: None,
            persistent_pod_states: None,
            workload_spreads: None,
        };
        let (m, _) = configurations(&s, "CA");
        assert!(hook(&m, "mpod.kb.io").get("matchConditions").is_none());
    }

    #[test]
    fn url_endpoint_and_namespace_restriction() {
        let s = settings(
            Endpoint::Url {
                host: "127.0.0.1".into(),
                port: 9876,
            },
            Some("e2e-x"),
        );
        assert_eq!(s.endpoint.cert_host(), "127.0.0.1");
        let (m, _) = configurations(&s, "CA");
        let mc = hook(&m, "mcloneset.kb.io");
        assert_eq!(
            mc["clientConfig"]["url"],
            "https://127.0.0.1:9876/mutate-apps-kruise-io-v1alpha1-cloneset"
        );
        assert_eq!(
            mc["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["e2e-x"])
        );
        let mp = hook(&m, "mpod.kb.io");
        assert_eq!(
            mp["namespaceSelector"]["matchExpressions"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }

    fn crd(kind: &str, strategy: &str, webhook: Option<Value>) -> Value {
        let mut c = json!({"spec": {"group": "apps.kruise.io", "names": {"kind": kind},
                                    "conversion": {"strategy": strategy}}});
        if let Some(w) = webhook {
            c["spec"]["conversion"]["webhook"] = w;
        }
        c
    }

    #[test]
    fn conversion_patch_only_for_kruise_webhook_crds_that_differ() {
        let url = Endpoint::Url {
            host: "127.0.0.1".into(),
            port: 9876,
        };
        assert!(conversion_patch(&crd("StatefulSet", "None", None), &url, "CA").is_none());
        assert!(conversion_patch(&crd("CloneSet", "Webhook", None), &url, "CA").is_none());
        let p = conversion_patch(&crd("StatefulSet", "Webhook", None), &url, "CA").unwrap();
        let cc = &p["spec"]["conversion"]["webhook"]["clientConfig"];
        assert_eq!(cc["url"], "https://127.0.0.1:9876/convert");
        assert_eq!(cc["caBundle"], "Q0E=");
        assert!(cc["service"].is_null() && cc.as_object().unwrap().contains_key("service"));
        let correct = conversion_webhook(&url, "CA");
        assert!(
            conversion_patch(
                &crd("StatefulSet", "Webhook", Some(correct.clone())),
                &url,
                "CA"
            )
            .is_none()
        );
        let mut corrupted = correct;
        corrupted["clientConfig"]["caBundle"] = json!("Ym9ndXM=");
        assert!(
            conversion_patch(&crd("StatefulSet", "Webhook", Some(corrupted)), &url, "CA").is_some()
        );
    }

    #[test]
    fn manifests_carry_no_ca_bundle_and_enable_conversion_for_openkruise_crds() {
        let files = manifests();
        let (_, main) = files.iter().find(|(n, _)| n == "manifests.yaml").unwrap();
        assert!(!main.contains("caBundle"));
        assert!(
            main.contains("kruise-mutating-webhook-configuration")
                && main.contains("kruise-webhook-service")
        );
        for crd in CONVERSION_WEBHOOK_CRDS {
            let plural = crd.split('.').next().unwrap();
            let (_, y) = files
                .iter()
                .find(|(n, _)| n == &format!("crd-conversion/webhook_in_{plural}.yaml"))
                .unwrap();
            assert!(
                y.contains("strategy: Webhook") && y.contains("path: /convert"),
                "{y}"
            );
        }
    }

    #[test]
    fn unserved_webhooks_are_pruned_and_the_installed_list_kept_as_template() {
        let s = service_settings();
        let (mut m, _) = configurations(&s, "CA");
        assert!(prune_unserved(&m, &s.webhooks.paths()).is_none());
        let foreign = json!({"name": "mnodeimage.kb.io",
            "clientConfig": {"url": "https://127.0.0.1:9876/mutate-apps-kruise-io-v1alpha1-nodeimage"}});
        m["webhooks"].as_array_mut().unwrap().push(foreign);
        let pruned = prune_unserved(&m, &s.webhooks.paths()).unwrap();
        let served = registry::REGISTRY
            .iter()
            .filter(|e| e.webhook_type == registry::WebhookType::Mutating)
            .count();
        assert_eq!(pruned["webhooks"].as_array().unwrap().len(), served);
        assert!(
            pruned["webhooks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| w["name"] != "mnodeimage.kb.io")
        );
        let template: Vec<Value> = serde_json::from_str(
            pruned["metadata"]["annotations"][TEMPLATE_ANNOTATION]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(template.len(), served + 1);
        // An existing template (e.g. written by OpenKruise) is never overwritten.
        let mut again = m.clone();
        again["metadata"]["annotations"] = json!({TEMPLATE_ANNOTATION: "[]"});
        let pruned = prune_unserved(&again, &s.webhooks.paths()).unwrap();
        assert_eq!(pruned["metadata"]["annotations"][TEMPLATE_ANNOTATION], "[]");
        assert_eq!(
            webhook_path(&json!({"clientConfig": {"url": "https://h:1/convert?x=1"}})).as_deref(),
            Some("/convert")
        );
    }
}
