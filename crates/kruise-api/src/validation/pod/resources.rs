//! Resource requirement rules (`ValidateContainerResourceRequirements` and the resource-name
//! helpers of `pkg/apis/core/helper`), Kubernetes v1.32.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ResourceClaim, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;

use super::super::field::{ErrorList, FieldError, Path};
use super::super::names::{is_dns1123_label, is_qualified_name};
use super::super::quantity::{Quantity, parse_quantity};
use super::PodValidationOptions;

const HUGE_PAGES_PREFIX: &str = "hugepages-";
const DEFAULT_NAMESPACE_PREFIX: &str = "kubernetes.io/";
const REQUESTS_PREFIX: &str = "requests.";

const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// `IsHugePageResourceName`.
pub fn is_huge_page_resource_name(name: &str) -> bool {
    name.starts_with(HUGE_PAGES_PREFIX)
}

/// `IsNativeResource`: unprefixed, or in the `kubernetes.io/` namespace.
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains(DEFAULT_NAMESPACE_PREFIX)
}

/// `IsExtendedResourceName`: not native, not `requests.`-prefixed, and a qualified name once
/// prefixed with `requests.`.
pub fn is_extended_resource_name(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with(REQUESTS_PREFIX)
        && is_qualified_name(&format!("{REQUESTS_PREFIX}{name}")).is_empty()
}

/// `IsOvercommitAllowed`: native and not huge pages.
pub fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_huge_page_resource_name(name)
}

fn is_standard_resource_name(name: &str) -> bool {
    STANDARD_RESOURCES.contains(&name)
        || name.starts_with(HUGE_PAGES_PREFIX)
        || name.starts_with("requests.hugepages-")
}

fn is_integer_resource_name(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource_name(name)
}

/// `validateContainerResourceName`.
fn validate_container_resource_name(name: &str, path: &Path) -> ErrorList {
    // Go shows a `core.ResourceName` through its `String()`: unquoted.
    let invalid = |m: &str| FieldError::invalid_stringer(path.clone(), name, m);
    let mut errs: ErrorList = is_qualified_name(name).iter().map(|m| invalid(m)).collect();
    if errs.is_empty() && !name.contains('/') && !is_standard_resource_name(name) {
        errs.push(invalid(
            "must be a standard resource type or fully qualified",
        ));
    }
    if !name.contains('/') {
        if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !is_huge_page_resource_name(name) {
            errs.push(invalid("must be a standard resource for containers"));
        }
    } else if !is_native_resource(name) && !is_extended_resource_name(name) {
        errs.push(invalid("doesn't follow extended resource name standard"));
    }
    errs
}

/// `ValidateResourceQuantityValue`: not negative; a whole number for integer resources.
fn validate_quantity_value(name: &str, q: &Quantity, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if q.sign() < 0 {
        errs.push(FieldError::invalid(
            path.clone(),
            q.canonical(),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_resource_name(name) && q.scaled_value(-3).is_some_and(|m| m % 1000 != 0) {
        // Go passes the Quantity itself, printed through its String(): unquoted.
        errs.push(FieldError::invalid_stringer(
            path.clone(),
            q.canonical(),
            "must be an integer",
        ));
    }
    errs
}

/// `validateResourceQuantityHugePageValue`: a whole number of pages unless allowed otherwise.
fn huge_page_value_error(name: &str, q: &Quantity, opts: &PodValidationOptions) -> Option<String> {
    if !is_huge_page_resource_name(name) || opts.allow_indivisible_huge_pages_values {
        return None;
    }
    let page = parse_quantity(&name[HUGE_PAGES_PREFIX.len()..]).ok();
    let divisible = page.is_some_and(|p| {
        p.sign() > 0
            && p.scaled_value(-3).is_some_and(|m| m % 1000 == 0)
            && match (q.scaled_value(0), p.scaled_value(0)) {
                (Some(v), Some(s)) if s != 0 => v % s == 0,
                _ => false,
            }
    });
    (!divisible).then(|| {
        format!(
            "{} is not positive integer multiple of {name}",
            q.canonical()
        )
    })
}

/// The parsed quantities of a resource list, rounded up to milli precision as
/// `SetDefaults_ResourceList` leaves them (OpenKruise defaults the template before validating);
/// malformed quantities are skipped (they never get past decoding in Go).
fn parsed(list: Option<&BTreeMap<String, K8sQuantity>>) -> Vec<(&str, Quantity)> {
    list.into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            parse_quantity(&v.0)
                .ok()
                .map(|q| (k.as_str(), q.round_up(-3)))
        })
        .collect()
}

/// `ValidateContainerResourceRequirements`: names, values, requests within limits (equal for
/// resources that cannot be overcommitted, whose limit is then required), huge pages only with
/// cpu or memory, and claims naming pod resource claims.
pub(crate) fn validate_container_resource_requirements(
    req: &ResourceRequirements,
    pod_claim_names: &BTreeSet<String>,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let limits = parsed(req.limits.as_ref());
    let requests = parsed(req.requests.as_ref());
    let (mut lim_cpu_mem, mut req_cpu_mem, mut lim_huge, mut req_huge) =
        (false, false, false, false);
    for (name, q) in &limits {
        let p = lim_path.key(name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_quantity_value(name, q, &p));
        if is_huge_page_resource_name(name) {
            lim_huge = true;
            if let Some(m) = huge_page_value_error(name, q, opts) {
                errs.push(FieldError::invalid(p.clone(), q.canonical(), m));
            }
        }
        if *name == "cpu" || *name == "memory" {
            lim_cpu_mem = true;
        }
    }
    for (name, q) in &requests {
        let p = req_path.key(name);
        errs.extend(validate_container_resource_name(name, &p));
        errs.extend(validate_quantity_value(name, q, &p));
        match limits.iter().find(|(n, _)| n == name) {
            Some((_, limit)) => {
                let ord = q.cmp(limit);
                if ord != std::cmp::Ordering::Equal && !is_overcommit_allowed(name) {
                    errs.push(FieldError::invalid(
                        req_path.clone(),
                        q.canonical(),
                        format!("must be equal to {name} limit of {}", limit.canonical()),
                    ));
                } else if ord == std::cmp::Ordering::Greater {
                    errs.push(FieldError::invalid(
                        req_path.clone(),
                        q.canonical(),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            limit.canonical()
                        ),
                    ));
                }
            }
            None if !is_overcommit_allowed(name) => errs.push(FieldError::required(
                lim_path.clone(),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        if is_huge_page_resource_name(name) {
            req_huge = true;
            if let Some(m) = huge_page_value_error(name, q, opts) {
                errs.push(FieldError::invalid(p.clone(), q.canonical(), m));
            }
        }
        if *name == "cpu" || *name == "memory" {
            req_cpu_mem = true;
        }
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        errs.push(FieldError::forbidden(
            path.clone(),
            "HugePages require cpu or memory",
        ));
    }
    errs.extend(validate_resource_claim_names(
        req.claims.as_deref().unwrap_or_default(),
        pod_claim_names,
        &path.child("claims"),
    ));
    errs
}

/// `validateResourceClaimNames`: unique claim (and claim/request) names, each naming one of the
/// pod's resource claims.
fn validate_resource_claim_names(
    claims: &[ResourceClaim],
    pod_claim_names: &BTreeSet<String>,
    cp: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let name = claim.name.as_str();
        if name.is_empty() {
            errs.push(FieldError::required(cp.index(i), ""));
            continue;
        }
        let request = claim.request.as_deref().unwrap_or("");
        if names.contains(name) {
            errs.push(FieldError::duplicate(cp.index(i), name));
        } else {
            let mut key = name.to_owned();
            if !request.is_empty() {
                errs.extend(
                    is_dns1123_label(request)
                        .into_iter()
                        .map(|m| FieldError::invalid(cp.index(i).child("request"), request, m)),
                );
                key = format!("{name}/{request}");
            }
            if names.contains(&key) {
                errs.push(FieldError::duplicate(cp.index(i), key.as_str()));
            } else if request.is_empty() {
                for k in &names {
                    if k.split_once('/').is_some_and(|(n, _)| n == name) {
                        errs.push(FieldError::duplicate(cp.index(i), name));
                    }
                }
            }
            names.insert(key);
        }
        if !pod_claim_names.contains(name) {
            let detail = if pod_claim_names.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_owned()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    pod_claim_names
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            errs.push(FieldError::not_found(cp.index(i), name).with_detail(detail));
        }
    }
    errs
}
