//! Kubernetes' pod template validation (`ValidatePodTemplateSpec` and `ValidatePodSpec` of
//! `k8s.io/kubernetes/pkg/apis/core/validation`, v1.32 as vendored by OpenKruise v1.9.0), on
//! the v1 types.
//!
//! Kubernetes validates its internal (`core`) types; the v1 → core conversion only renames and
//! moves fields, so the rules are applied to the v1 types directly with Go's zero values for
//! absent fields (an absent string is `""`, an absent number `0`). Callers that want
//! OpenKruise's verdicts default the template first (OpenKruise's webhooks run
//! `SetDefaultPodSpec` before converting; see `crate::defaults::podspec`).
//!
//! Not reproduced: the checks that need a real pod (`ResourceIsPod`, pod names for generic
//! ephemeral volume claims, static pods), pod-level `resources` (gate `PodLevelResources`, off
//! in OpenKruise's options), and fields newer than Kubernetes 1.32 that the v1.37 types carry
//! (Go's decoder drops them, so they are ignored here).

mod containers;
mod resources;
mod scheduling;
mod security;
mod volumes;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodTemplateSpec};
use serde_json::json;

use super::field::{ErrorList, FieldError, Path};
use super::meta::{validate_annotations, validate_labels};
use super::names::{
    inclusive_range_error, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_ip,
    name_is_dns_subdomain,
};

pub use containers::validate_ephemeral_job_containers;
pub use resources::{is_extended_resource_name, is_huge_page_resource_name, is_native_resource};
pub use scheduling::{validate_node_selector_term, validate_tolerations};
pub use security::is_valid_sysctl_name;

/// `PodValidationOptions` (the options that matter for templates).
#[derive(Clone, Debug, Default)]
pub struct PodValidationOptions {
    /// Any `controller.kubernetes.io/pod-deletion-cost` annotation value.
    pub allow_invalid_pod_deletion_cost: bool,
    /// Invalid label values in pod (anti-)affinity term selectors.
    pub allow_invalid_label_value_in_selector: bool,
    /// Huge-page quantities that are not a whole number of pages.
    pub allow_indivisible_huge_pages_values: bool,
    /// Do not validate topology spread constraint label selectors.
    pub allow_invalid_topology_spread_constraint_label_selector: bool,
    /// Projected service account tokens with a non-local path.
    pub allow_non_local_projected_token_path: bool,
    /// Namespaced sysctls with `hostNetwork`/`hostIPC`.
    pub allow_namespaced_sysctls_for_host_net_and_host_ipc: bool,
    /// The spec belongs to a pod (stricter host-port and image volume rules).
    pub resource_is_pod: bool,
    /// Env var names of any printable ASCII but `=`.
    pub allow_relaxed_environment_variable_validation: bool,
    /// DNS search domains with `_`, and `.`.
    pub allow_relaxed_dns_search_validation: bool,
    /// A lifecycle `sleep` of 0 seconds.
    pub allow_pod_lifecycle_sleep_action_zero_value: bool,
    /// Only `Recursive` as `seLinuxChangePolicy`.
    pub allow_only_recursive_selinux_change_policy: bool,
    /// `resizePolicy` on (sidecar) init containers.
    pub allow_sidecar_resize_policy: bool,
    /// Privileged containers (Kubernetes' `capabilities.AllowPrivileged`; OpenKruise's
    /// `--allow-privileged` flag, default true).
    pub allow_privileged: bool,
}

impl PodValidationOptions {
    /// The options OpenKruise v1.9.0's workload webhooks validate templates with
    /// (`webhookutil.DefaultPodValidationOptions`, and privileged containers allowed).
    pub fn openkruise() -> Self {
        Self {
            allow_invalid_pod_deletion_cost: true,
            allow_indivisible_huge_pages_values: true,
            allow_invalid_label_value_in_selector: true,
            allow_invalid_topology_spread_constraint_label_selector: true,
            resource_is_pod: false,
            allow_privileged: true,
            ..Self::default()
        }
    }
}

/// An optional string as Go's zero value.
pub(crate) fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// `validatePullPolicy`: `Always`, `IfNotPresent` or `Never`, required.
pub(crate) fn validate_pull_policy(policy: &str, path: &Path) -> ErrorList {
    match policy {
        "Always" | "IfNotPresent" | "Never" => ErrorList::new(),
        "" => vec![FieldError::required(path.clone(), "")],
        other => vec![FieldError::not_supported(
            path.clone(),
            other,
            &["Always", "IfNotPresent", "Never"],
        )],
    }
}

/// `ValidatePodTemplateSpec`: template labels and annotations (reported on `<path>.labels` and
/// `<path>.annotations`), the pod-specific annotations, the pod spec, agreement of deprecated
/// seccomp/AppArmor annotations with the fields, and no ephemeral containers.
pub fn validate_pod_template_spec(
    template: &PodTemplateSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let empty_spec = PodSpec::default();
    let spec = template.spec.as_ref().unwrap_or(&empty_spec);
    let mut errs = validate_pod_template_meta(template, path, opts);
    let sp = path.child("spec");
    errs.extend(validate_pod_spec(spec, &sp, opts));
    let annotations = template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    errs.extend(security::validate_annotations_match_fields(
        &annotations,
        spec,
        &sp,
    ));
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|e| !e.is_empty())
    {
        errs.push(FieldError::forbidden(
            sp.child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `ValidatePodCreate` of a pod (OpenKruise's SidecarSet webhook validates its containers and
/// volumes this way, in a fake pod): object metadata (name a DNS-1123 subdomain, namespace
/// required), the pod-specific annotations, the pod spec, projected service account tokens only
/// with a service account, no leading or trailing whitespace in container and init container
/// images, no ephemeral containers, no `nodeName` while scheduling gates remain, agreement of
/// deprecated seccomp/AppArmor annotations with the fields. Pod IPs in the status are not
/// looked at, nor are generic ephemeral volume claim names (`<pod>-<volume>`).
pub fn validate_pod_create(pod: &Pod, opts: &PodValidationOptions) -> ErrorList {
    let empty_spec = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&empty_spec);
    let meta_path = Path::new("metadata");
    let spec_path = Path::new("spec");
    let mut errs = super::meta::validate_object_meta(
        &pod.metadata,
        true,
        super::meta::dns_subdomain_name,
        &meta_path,
    );
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    errs.extend(security::validate_pod_specific_annotations(
        &annotations,
        spec,
        &meta_path.child("annotations"),
        opts,
    ));
    errs.extend(validate_pod_spec(spec, &spec_path, opts));
    if opt(&spec.service_account_name).is_empty() {
        for (vi, v) in spec.volumes.iter().flatten().enumerate() {
            let Some(projected) = v.projected.as_ref() else {
                continue;
            };
            for (si, source) in projected.sources.iter().flatten().enumerate() {
                if source.service_account_token.is_some() {
                    errs.push(FieldError::forbidden(
                        spec_path
                            .child("volumes")
                            .index(vi)
                            .child("projected")
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    let init = spec.init_containers.as_deref().unwrap_or_default();
    for (list, name) in [
        (spec.containers.as_slice(), "containers"),
        (init, "initContainers"),
    ] {
        for (i, c) in list.iter().enumerate() {
            let image = opt(&c.image);
            if image.len() != image.trim().len() {
                errs.push(FieldError::invalid(
                    spec_path.child(name).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|e| !e.is_empty())
    {
        errs.push(FieldError::forbidden(
            spec_path.child("ephemeralContainers"),
            "cannot be set on create",
        ));
    }
    if !opt(&spec.node_name).is_empty()
        && spec
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
    {
        errs.push(FieldError::forbidden(
            spec_path.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errs.extend(security::validate_annotations_match_fields(
        &annotations,
        spec,
        &spec_path,
    ));
    errs
}

/// The metadata half of [`validate_pod_template_spec`] (all `ValidatePodTemplateSpecForStatefulSet`
/// checks besides the selector): labels, annotations and the pod-specific annotations.
pub fn validate_pod_template_meta(
    template: &PodTemplateSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let empty_spec = PodSpec::default();
    let spec = template.spec.as_ref().unwrap_or(&empty_spec);
    let meta = template.metadata.as_ref();
    let mut errs = validate_labels(meta.and_then(|m| m.labels.as_ref()), &path.child("labels"));
    let annotations = meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
    errs.extend(validate_annotations(
        Some(&annotations),
        &path.child("annotations"),
    ));
    errs.extend(security::validate_pod_specific_annotations(
        &annotations,
        spec,
        &path.child("annotations"),
        opts,
    ));
    errs
}

/// `ValidatePodSpec` (podMeta nil: a template's spec).
pub fn validate_pod_spec(spec: &PodSpec, path: &Path, opts: &PodValidationOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    if spec.termination_grace_period_seconds.is_none() {
        errs.push(FieldError::required(
            path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    errs.extend(validate_pod_spec_containers(spec, path, opts));
    errs.extend(validate_host_network_deps(spec, path, opts));
    errs.extend(validate_restart_policy(
        opt(&spec.restart_policy),
        &path.child("restartPolicy"),
    ));
    errs.extend(validate_dns_policy(
        opt(&spec.dns_policy),
        &path.child("dnsPolicy"),
    ));
    errs.extend(validate_labels(
        spec.node_selector.as_ref(),
        &path.child("nodeSelector"),
    ));
    errs.extend(security::validate_pod_security_context(
        spec,
        &path.child("securityContext"),
        opts,
    ));
    // validateImagePullSecrets: only `name` may be set, the only field the v1 type has.
    errs.extend(scheduling::validate_affinity(
        spec.affinity.as_ref(),
        opts,
        &path.child("affinity"),
    ));
    errs.extend(validate_dns_config(spec, &path.child("dnsConfig"), opts));
    errs.extend(validate_readiness_gates(
        spec,
        &path.child("readinessGates"),
    ));
    errs.extend(validate_scheduling_gates(
        spec,
        &path.child("schedulingGates"),
    ));
    errs.extend(scheduling::validate_topology_spread_constraints(
        spec.topology_spread_constraints
            .as_deref()
            .unwrap_or_default(),
        &path.child("topologySpreadConstraints"),
        opts,
    ));
    errs.extend(security::validate_windows_host_process_pod(
        spec, path, opts,
    ));
    errs.extend(validate_host_users(spec, path));
    errs.extend(validate_pod_spec_names_and_deadline(spec, path));
    if let Some(t) = spec.tolerations.as_deref().filter(|t| !t.is_empty()) {
        errs.extend(scheduling::validate_tolerations(
            t,
            &path.child("tolerations"),
        ));
    }
    errs.extend(validate_host_aliases(spec, &path.child("hostAliases")));
    errs.extend(validate_pod_spec_class_names(spec, path));
    if let Some(pp) = spec.preemption_policy.as_deref() {
        errs.extend(validate_preemption_policy(
            pp,
            &path.child("preemptionPolicy"),
        ));
    }
    if let Some(overhead) = spec.overhead.as_ref() {
        errs.extend(validate_overhead(overhead, &path.child("overhead"), opts));
    }
    errs.extend(validate_os(spec, path));
    errs
}

/// The volume, resource-claim and container steps of `ValidatePodSpec` (`ValidateVolumes`,
/// `validatePodResourceClaims`, `validateContainers`, `validateInitContainers`,
/// `validateEphemeralContainers`), which share the volumes and claim names found.
fn validate_pod_spec_containers(
    spec: &PodSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let host_users = spec.host_users.is_none_or(|h| h);
    let (vols, verrs) = volumes::validate_volumes(
        spec.volumes.as_deref().unwrap_or_default(),
        &path.child("volumes"),
        opts,
    );
    errs.extend(verrs);
    let claim_names: BTreeSet<String> = spec
        .resource_claims
        .iter()
        .flatten()
        .filter(|c| !c.name.is_empty())
        .map(|c| c.name.clone())
        .collect();
    errs.extend(validate_pod_resource_claims(
        spec,
        &path.child("resourceClaims"),
    ));
    let ctx = containers::PodContext {
        volumes: &vols,
        pod_claim_names: &claim_names,
        grace_period: spec.termination_grace_period_seconds,
        restart_policy: opt(&spec.restart_policy),
        host_users,
        opts,
    };
    let init = spec.init_containers.as_deref().unwrap_or_default();
    errs.extend(containers::validate_containers(
        &spec.containers,
        &path.child("containers"),
        &ctx,
    ));
    errs.extend(containers::validate_init_containers(
        init,
        &spec.containers,
        &path.child("initContainers"),
        &ctx,
    ));
    errs.extend(containers::validate_ephemeral_containers(
        spec.ephemeral_containers.as_deref().unwrap_or_default(),
        &spec.containers,
        init,
        &path.child("ephemeralContainers"),
        &ctx,
    ));
    errs
}

/// `validateReadinessGates`: condition types are qualified names.
fn validate_readiness_gates(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, g) in spec.readiness_gates.iter().flatten().enumerate() {
        let p = path.index(i).child("conditionType");
        errs.extend(
            is_qualified_name(&g.condition_type)
                .into_iter()
                .map(|m| FieldError::invalid(p.clone(), g.condition_type.as_str(), m)),
        );
    }
    errs
}

/// `validateSchedulingGates`: unique qualified names.
fn validate_scheduling_gates(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut gates: BTreeSet<&str> = BTreeSet::new();
    for (i, g) in spec.scheduling_gates.iter().flatten().enumerate() {
        let p = path.index(i);
        errs.extend(
            is_qualified_name(&g.name)
                .into_iter()
                .map(|m| FieldError::invalid(p.clone(), g.name.as_str(), m)),
        );
        if !gates.insert(g.name.as_str()) {
            errs.push(FieldError::duplicate(p, g.name.as_str()));
        }
    }
    errs
}

/// The name and deadline steps of `ValidatePodSpec`: `ValidateServiceAccountName` and
/// `ValidateNodeName` (DNS subdomains), `activeDeadlineSeconds` in 1..=2^31-1, and `hostname`
/// and `subdomain` (`ValidateDNS1123Label`).
fn validate_pod_spec_names_and_deadline(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (value, child) in [
        (opt(&spec.service_account_name), "serviceAccountName"),
        (opt(&spec.node_name), "nodeName"),
    ] {
        if !value.is_empty() {
            errs.extend(
                name_is_dns_subdomain(value, false)
                    .into_iter()
                    .map(|m| FieldError::invalid(path.child(child), value, m)),
            );
        }
    }
    if let Some(v) = spec.active_deadline_seconds
        && (v < 1 || v > i64::from(i32::MAX))
    {
        errs.push(FieldError::invalid(
            path.child("activeDeadlineSeconds"),
            v,
            inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for (value, child) in [
        (opt(&spec.hostname), "hostname"),
        (opt(&spec.subdomain), "subdomain"),
    ] {
        if !value.is_empty() {
            errs.extend(
                is_dns1123_label(value)
                    .into_iter()
                    .map(|m| FieldError::invalid(path.child(child), value, m)),
            );
        }
    }
    errs
}

/// `ValidateHostAliases`: IP addresses and DNS-1123 subdomain host names.
fn validate_host_aliases(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, a) in spec.host_aliases.iter().flatten().enumerate() {
        let ip = a.ip.as_str();
        let p = path.index(i);
        if let Some(m) = is_valid_ip(ip) {
            errs.push(FieldError::invalid(p.child("ip"), ip, m));
        }
        for (j, h) in a.hostnames.iter().flatten().enumerate() {
            errs.extend(
                is_dns1123_subdomain(h)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("hostnames").index(j), h.as_str(), m)),
            );
        }
    }
    errs
}

/// The class-name steps of `ValidatePodSpec`: `ValidatePriorityClassName` and
/// `ValidateRuntimeClassName` (DNS subdomains).
fn validate_pod_spec_class_names(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let pcn = opt(&spec.priority_class_name);
    if !pcn.is_empty() {
        errs.extend(
            name_is_dns_subdomain(pcn, false)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("priorityClassName"), pcn, m)),
        );
    }
    if let Some(rc) = spec.runtime_class_name.as_deref() {
        errs.extend(
            name_is_dns_subdomain(rc, false)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("runtimeClassName"), rc, m)),
        );
    }
    errs
}

/// `validatePreemptionPolicy`: `PreemptLowerPriority` or `Never`, required.
fn validate_preemption_policy(policy: &str, p: &Path) -> ErrorList {
    match policy {
        "PreemptLowerPriority" | "Never" => ErrorList::new(),
        "" => vec![FieldError::required(p.clone(), "")],
        other => vec![FieldError::not_supported(
            p.clone(),
            other,
            &["PreemptLowerPriority", "Never"],
        )],
    }
}

/// `validateOverhead`: the overhead checked as the limits of a container's resources.
fn validate_overhead(overhead: &QuantityMap, p: &Path, opts: &PodValidationOptions) -> ErrorList {
    let req = k8s_openapi::api::core::v1::ResourceRequirements {
        limits: Some(overhead.clone()),
        ..Default::default()
    };
    resources::validate_container_resource_requirements(&req, &BTreeSet::new(), p, opts)
}

/// `validateOS` and the OS switch of `ValidatePodSpec`: a `linux` or `windows` name, then the
/// fields that OS forbids (`validateLinux`, `validateWindows`).
fn validate_os(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(os) = spec.os.as_ref() {
        let p = path.child("os");
        if os.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), "cannot be empty"));
        } else if os.name != "linux" && os.name != "windows" {
            errs.push(FieldError::not_supported(
                p,
                os.name.as_str(),
                &["linux", "windows"],
            ));
        } else if os.name == "linux" {
            errs.extend(validate_linux(spec, path));
        } else {
            errs.extend(validate_windows(spec, path));
        }
    }
    errs
}

fn validate_pod_resource_claims(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, c) in spec.resource_claims.iter().flatten().enumerate() {
        let p = path.index(i);
        if c.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), c.name.as_str()));
        } else {
            errs.extend(
                is_dns1123_label(&c.name)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("name"), c.name.as_str(), m)),
            );
            names.insert(c.name.as_str());
        }
        match (c.resource_claim_name.as_deref(), c.resource_claim_template_name.as_deref()) {
            (Some(_), Some(_)) => errs.push(FieldError::invalid(p.clone(), json!(c), "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")),
            (None, None) => errs.push(FieldError::invalid(p.clone(), json!(c), "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")),
            _ => {}
        }
        for (v, child) in [
            (c.resource_claim_name.as_deref(), "resourceClaimName"),
            (
                c.resource_claim_template_name.as_deref(),
                "resourceClaimTemplateName",
            ),
        ] {
            if let Some(v) = v {
                errs.extend(
                    name_is_dns_subdomain(v, false)
                        .into_iter()
                        .map(|m| FieldError::invalid(p.child(child), v, m)),
                );
            }
        }
    }
    errs
}

/// `validatePodHostNetworkDeps`: with `hostNetwork`, a set host port must equal the container
/// port.
fn validate_host_network_deps(
    spec: &PodSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if spec.host_network != Some(true) {
        return errs;
    }
    for (i, c) in spec.containers.iter().enumerate() {
        for (j, port) in c.ports.iter().flatten().enumerate() {
            let hp = port.host_port.unwrap_or(0);
            if (opts.resource_is_pod || hp != 0) && hp != port.container_port {
                errs.push(FieldError::invalid(
                    path.child("containers")
                        .index(i)
                        .child("ports")
                        .index(j)
                        .child("hostPort"),
                    hp,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    errs
}

fn validate_restart_policy(policy: &str, path: &Path) -> ErrorList {
    match policy {
        "Always" | "OnFailure" | "Never" => ErrorList::new(),
        "" => vec![FieldError::required(path.clone(), "")],
        other => vec![FieldError::not_supported(
            path.clone(),
            other,
            &["Always", "OnFailure", "Never"],
        )],
    }
}

fn validate_dns_policy(policy: &str, path: &Path) -> ErrorList {
    match policy {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => ErrorList::new(),
        "" => vec![FieldError::required(path.clone(), "")],
        other => vec![FieldError::not_supported(
            path.clone(),
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )],
    }
}

/// `validatePodDNSConfig`: `dnsPolicy: None` needs a config with a nameserver; at most 3 valid
/// IP nameservers, at most 32 search domains (2048 characters) that are DNS subdomains, named
/// options.
fn validate_dns_config(spec: &PodSpec, path: &Path, opts: &PodValidationOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    let cfg = spec.dns_config.as_ref();
    let nameservers = cfg
        .and_then(|c| c.nameservers.as_deref())
        .unwrap_or_default();
    if opt(&spec.dns_policy) == "None" {
        if cfg.is_none() {
            errs.push(FieldError::required(
                path.clone(),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return errs;
        }
        if nameservers.is_empty() {
            errs.push(FieldError::required(
                path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return errs;
        }
    }
    let Some(cfg) = cfg else {
        return errs;
    };
    if nameservers.len() > 3 {
        errs.push(FieldError::invalid(
            path.child("nameservers"),
            json!(nameservers),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        if let Some(m) = is_valid_ip(ns) {
            errs.push(FieldError::invalid(
                path.child("nameservers").index(i),
                ns.as_str(),
                m,
            ));
        }
    }
    let searches = cfg.searches.as_deref().unwrap_or_default();
    if searches.len() > 32 {
        errs.push(FieldError::invalid(
            path.child("searches"),
            json!(searches),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        errs.push(FieldError::invalid(
            path.child("searches"),
            json!(searches),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, s) in searches.iter().enumerate() {
        let p = path.child("searches").index(i);
        if opts.allow_relaxed_dns_search_validation {
            if s != "." {
                let t = s.strip_suffix('.').unwrap_or(s);
                let ok = t.len() <= 253
                    && t.split('.').all(|l| {
                        let l = l.strip_prefix('_').unwrap_or(l);
                        let b = l.as_bytes();
                        let lower = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
                        !b.is_empty()
                            && lower(b[0])
                            && lower(b[b.len() - 1])
                            && b.iter().all(|c| lower(*c) || *c == b'-' || *c == b'_')
                    });
                if !ok {
                    errs.push(FieldError::invalid(p, t, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
                }
            }
        } else {
            let t = s.strip_suffix('.').unwrap_or(s);
            errs.extend(
                is_dns1123_subdomain(t)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.clone(), t, m)),
            );
        }
    }
    for (i, o) in cfg.options.iter().flatten().enumerate() {
        if opt(&o.name).is_empty() {
            errs.push(FieldError::required(
                path.child("options").index(i),
                "must not be empty",
            ));
        }
    }
    errs
}

/// `validateHostUsers`: without host users, no host network, PID or IPC namespaces.
fn validate_host_users(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if spec.host_users != Some(false) {
        return errs;
    }
    for (on, child) in [
        (spec.host_network, "hostNetwork"),
        (spec.host_pid, "HostPID"),
        (spec.host_ipc, "HostIPC"),
    ] {
        if on == Some(true) {
            errs.push(FieldError::forbidden(
                path.child(child),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
    }
    errs
}

/// `validateLinux`: no Windows options.
fn validate_linux(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    const MSG: &str = "windows options cannot be set for a linux pod";
    if spec
        .security_context
        .as_ref()
        .is_some_and(|s| s.windows_options.is_some())
    {
        errs.push(FieldError::forbidden(
            path.child("securityContext").child("windowsOptions"),
            MSG,
        ));
    }
    for (c, cp) in security::visit_containers(spec, path) {
        if c.security_context
            .as_ref()
            .is_some_and(|s| s.windows_options.is_some())
        {
            errs.push(FieldError::forbidden(
                cp.child("securityContext").child("windowsOptions"),
                MSG,
            ));
        }
    }
    errs
}

/// `validateWindows`: no Linux-only security settings on the pod or its containers.
fn validate_windows(spec: &PodSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    const MSG: &str = "cannot be set for a windows pod";
    let empty = k8s_openapi::api::core::v1::PodSecurityContext::default();
    let sc = spec.security_context.as_ref().unwrap_or(&empty);
    let p = path.child("securityContext");
    let pod_checks = [
        (sc.app_armor_profile.is_some(), p.child("appArmorProfile")),
        (sc.se_linux_options.is_some(), p.child("seLinuxOptions")),
        (spec.host_users.is_some(), path.child("hostUsers")),
        (spec.host_pid == Some(true), path.child("hostPID")),
        (spec.host_ipc == Some(true), path.child("hostIPC")),
        (sc.seccomp_profile.is_some(), p.child("seccompProfile")),
        (sc.fs_group.is_some(), p.child("fsGroup")),
        (
            sc.fs_group_change_policy.is_some(),
            p.child("fsGroupChangePolicy"),
        ),
        (
            sc.sysctls.as_ref().is_some_and(|s| !s.is_empty()),
            p.child("sysctls"),
        ),
        (
            spec.share_process_namespace.is_some(),
            path.child("shareProcessNamespace"),
        ),
        (sc.run_as_user.is_some(), p.child("runAsUser")),
        (sc.run_as_group.is_some(), p.child("runAsGroup")),
        (
            sc.supplemental_groups.is_some(),
            p.child("supplementalGroups"),
        ),
        (
            sc.supplemental_groups_policy.is_some(),
            p.child("supplementalGroupsPolicy"),
        ),
        (
            sc.se_linux_change_policy.is_some(),
            p.child("seLinuxChangePolicy"),
        ),
    ];
    for (set, fp) in pod_checks {
        if set {
            errs.push(FieldError::forbidden(fp, MSG));
        }
    }
    for (c, cp) in security::visit_containers(spec, path) {
        let Some(sc) = c.security_context.as_ref() else {
            continue;
        };
        let p = cp.child("securityContext");
        let checks = [
            (sc.app_armor_profile.is_some(), "appArmorProfile"),
            (sc.se_linux_options.is_some(), "seLinuxOptions"),
            (sc.seccomp_profile.is_some(), "seccompProfile"),
            (sc.capabilities.is_some(), "capabilities"),
            (
                sc.read_only_root_filesystem.is_some(),
                "readOnlyRootFilesystem",
            ),
            (sc.privileged.is_some(), "privileged"),
            (
                sc.allow_privilege_escalation.is_some(),
                "allowPrivilegeEscalation",
            ),
            (sc.proc_mount.is_some(), "procMount"),
            (sc.run_as_user.is_some(), "runAsUser"),
            (sc.run_as_group.is_some(), "runAsGroup"),
        ];
        for (set, child) in checks {
            if set {
                errs.push(FieldError::forbidden(p.child(child), MSG));
            }
        }
    }
    errs
}

type QuantityMap = BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

fn push_all<'a>(out: &mut Vec<&'a str>, m: Option<&'a QuantityMap>) {
    out.extend(m.into_iter().flatten().map(|(_, q)| q.0.as_str()));
}

fn push_requirements<'a>(
    out: &mut Vec<&'a str>,
    r: Option<&'a k8s_openapi::api::core::v1::ResourceRequirements>,
) {
    if let Some(r) = r {
        push_all(out, r.limits.as_ref());
        push_all(out, r.requests.as_ref());
    }
}

fn push_env_divisors<'a>(
    out: &mut Vec<&'a str>,
    env: Option<&'a Vec<k8s_openapi::api::core::v1::EnvVar>>,
) {
    for e in env.into_iter().flatten() {
        if let Some(d) = e
            .value_from
            .as_ref()
            .and_then(|v| v.resource_field_ref.as_ref())
            .and_then(|r| r.divisor.as_ref())
        {
            out.push(d.0.as_str());
        }
    }
}

/// Every quantity a pod spec carries (for the decode-time check Go's JSON decoding makes):
/// container (init, regular, ephemeral) limits and requests and env divisors, pod overhead and
/// pod-level resources, `emptyDir` size limits, downward API divisors and ephemeral volume claim
/// resources.
pub fn pod_spec_quantities(spec: &PodSpec) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
    {
        push_requirements(&mut out, c.resources.as_ref());
        push_env_divisors(&mut out, c.env.as_ref());
    }
    for c in spec.ephemeral_containers.iter().flatten() {
        push_requirements(&mut out, c.resources.as_ref());
        push_env_divisors(&mut out, c.env.as_ref());
    }
    push_all(&mut out, spec.overhead.as_ref());
    push_requirements(&mut out, spec.resources.as_ref());
    for v in spec.volumes.iter().flatten() {
        if let Some(q) = v.empty_dir.as_ref().and_then(|e| e.size_limit.as_ref()) {
            out.push(q.0.as_str());
        }
        let files = v
            .downward_api
            .iter()
            .flat_map(|d| d.items.iter().flatten())
            .chain(
                v.projected
                    .iter()
                    .flat_map(|p| p.sources.iter().flatten())
                    .flat_map(|s| s.downward_api.iter().flat_map(|d| d.items.iter().flatten())),
            );
        for f in files {
            if let Some(d) = f
                .resource_field_ref
                .as_ref()
                .and_then(|r| r.divisor.as_ref())
            {
                out.push(d.0.as_str());
            }
        }
        if let Some(r) = v
            .ephemeral
            .as_ref()
            .and_then(|e| e.volume_claim_template.as_ref())
            .and_then(|t| t.spec.resources.as_ref())
        {
            push_all(&mut out, r.limits.as_ref());
            push_all(&mut out, r.requests.as_ref());
        }
    }
    out
}
