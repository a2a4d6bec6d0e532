//! A sidecar's resources computed from the pod it is injected into, as OpenKruise v1.9.0's
//! pod mutating webhook does for a SidecarSet container with `resourcesPolicy`
//! (`pkg/webhook/pod/mutating/sidecarset_resources.go`: `applyResourcesPolicy`,
//! `getTargetContainers`, `aggregateResources`, `aggregateResourcesBySum`,
//! `aggregateResourcesByMax`, `evaluateResourceExpression`).
//!
//! 1. Target containers: the pod's native sidecars (init containers with `restartPolicy:
//!    Always`) then its plain containers, whose name the policy's regular expression matches
//!    (anywhere in the name, as Go's `MatchString`), except the containers of the SidecarSets
//!    being injected. None is an error.
//! 2. Their `cpu` and `memory` limits and requests are combined by `sum` or `max`. A limit is
//!    unlimited (no value) as soon as one target has none; a missing request counts as 0.
//! 3. Each non-empty expression is evaluated by [`calculator`](super::calculator) with one
//!    variable, `memory` if the expression contains the word `memory`, `cpu` otherwise, bound
//!    to the combined value of the resource being computed. A limit whose combined value is
//!    unlimited is left unset. A number result becomes milli-CPU for the `cpu` variable
//!    (`NewMilliQuantity(int64(n*1000), DecimalSI)`) and whole units for `memory`
//!    (`NewQuantity(int64(n), DecimalSI)`).
//!
//! Quantities are printed as Go's `Quantity.String()` prints them (what the webhook's patch
//! carries). Go's regular expressions are RE2 and the [`regex`] crate's syntax is close to it;
//! the differences: `\d`, `\w`, `\s` and `\b` are Unicode-aware here and ASCII in Go (container
//! names are ASCII DNS labels, so matching is the same), `\Q...\E` is Go only, and set
//! operations in classes (`[a-z&&[^x]]`) are Rust only. An invalid expression's message is the
//! regex crate's, not Go's (OpenKruise's SidecarSet webhook refuses invalid expressions, so
//! pods never meet one in practice).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::core::v1::{Container, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kruise_api::apps::v1beta1::sidecarset::{ResourcesPolicy, SidecarSet, target_containers_mode};
use kruise_api::validation::quantity::{Format, GoQuantity, QuantityError};

use super::calculator::{CalcError, Value, evaluate, go_f64_to_i64};

/// Which of the four expressions failed (as Go names it in its message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpressionField {
    /// `resourcesExpr.limits.cpu`.
    CpuLimits,
    /// `resourcesExpr.limits.memory`.
    MemoryLimits,
    /// `resourcesExpr.requests.cpu`.
    CpuRequests,
    /// `resourcesExpr.requests.memory`.
    MemoryRequests,
}

impl fmt::Display for ExpressionField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ExpressionField::CpuLimits => "CPU limits",
            ExpressionField::MemoryLimits => "memory limits",
            ExpressionField::CpuRequests => "CPU requests",
            ExpressionField::MemoryRequests => "memory requests",
        })
    }
}

/// Why the resources policy cannot be applied; the messages are Go's (they reach users in the
/// webhook's denial).
#[derive(Debug, thiserror::Error)]
pub enum ResourcesPolicyError {
    /// `targetContainersNameRegex` does not compile as Go's `regexp` compiles it
    /// ([`crate::goregex`]).
    #[error("failed to get target containers: invalid regex pattern {}: {reason}", go_quote(.pattern))]
    InvalidRegex {
        /// The expression.
        pattern: String,
        /// The compiler's complaint.
        reason: String,
    },
    /// No container is a target.
    #[error("no containers match the regex pattern {}", go_quote(.pattern))]
    NoTargetContainers {
        /// The expression (empty when unset).
        pattern: String,
    },
    /// An expression has no value.
    #[error("failed to evaluate {field} expression: failed to parse expression {}: {source}", go_quote(.expr))]
    Expression {
        /// Which expression.
        field: ExpressionField,
        /// The expression.
        expr: String,
        /// The calculator's error.
        source: CalcError,
    },
    /// Not a Go message: a target's `cpu`/`memory` quantity that Go could not have decoded
    /// (Go's webhook refuses such a pod before this point), or one beyond
    /// [`kruise_api::validation::quantity::MAX_SCALE`].
    #[error("container {container:?}: invalid {kind} {resource} quantity {value:?}: {source}")]
    InvalidQuantity {
        /// The container's name.
        container: String,
        /// `limits` or `requests`.
        kind: &'static str,
        /// `cpu` or `memory`.
        resource: &'static str,
        /// The quantity as written.
        value: String,
        /// Why it does not parse.
        source: QuantityError,
    },
}

/// The target containers' combined resources (Go's aggregated `ResourceList`s).
#[derive(Clone, Debug, Default)]
pub struct Aggregated {
    /// Combined `limits.cpu`; `None` when unlimited (a target has no CPU limit).
    pub cpu_limit: Option<GoQuantity>,
    /// Combined `limits.memory`; `None` when unlimited.
    pub memory_limit: Option<GoQuantity>,
    /// Combined `requests.cpu`; `None` when absent, which reads as Go's zero quantity.
    pub cpu_request: Option<GoQuantity>,
    /// Combined `requests.memory`; `None` when absent.
    pub memory_request: Option<GoQuantity>,
}

/// The names of the containers and init containers of the SidecarSets being injected, which
/// are never targets (what Go collects from `matchedSidecarSets` in `getTargetContainers`).
pub fn sidecar_container_names<'a>(
    sidecarsets: impl IntoIterator<Item = &'a SidecarSet>,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for set in sidecarsets {
        let spec = &set.spec;
        for c in spec
            .init_containers
            .iter()
            .chain(&spec.containers)
            .flatten()
        {
            names.insert(c.container.name.clone());
        }
    }
    names
}

/// `applyResourcesPolicy`: the resources of a sidecar with `policy`, computed from the pod's
/// `init_containers` and `containers`; `kruise_sidecar_names` are the containers of the
/// SidecarSets being injected ([`sidecar_container_names`]).
///
/// The result replaces the sidecar's `resources` (Go assigns it whole): `limits`/`requests`
/// hold only the resources computed (`cpu`, `memory`) and are `None` when empty. An unset
/// regular expression is Go's empty string, which matches every name (the SidecarSet CRD
/// defaults it to `.*`).
pub fn apply_resources_policy(
    init_containers: &[Container],
    containers: &[Container],
    policy: &ResourcesPolicy,
    kruise_sidecar_names: &BTreeSet<String>,
) -> Result<ResourceRequirements, ResourcesPolicyError> {
    let pattern = policy.target_containers_name_regex.as_deref().unwrap_or("");
    let targets = target_containers(init_containers, containers, pattern, kruise_sidecar_names)?;
    if targets.is_empty() {
        return Err(ResourcesPolicyError::NoTargetContainers {
            pattern: pattern.to_owned(),
        });
    }
    let aggregated = aggregate(&targets, &policy.target_containers_mode)?;
    let zero = GoQuantity::zero();

    let mut resources = ResourceRequirements::default();
    if let Some(limits) = &policy.resources_expr.limits {
        let mut list = BTreeMap::new();
        let wanted = [
            (
                ExpressionField::CpuLimits,
                "cpu",
                &limits.cpu,
                &aggregated.cpu_limit,
            ),
            (
                ExpressionField::MemoryLimits,
                "memory",
                &limits.memory,
                &aggregated.memory_limit,
            ),
        ];
        for (field, resource, expr, combined) in wanted {
            // An unlimited combined value leaves the limit unset.
            if let (Some(expr), Some(combined)) = (nonempty(expr), combined)
                && let Some(q) = evaluate_field(field, expr, combined, true)?
            {
                list.insert(resource.to_owned(), Quantity(q.to_string()));
            }
        }
        resources.limits = (!list.is_empty()).then_some(list);
    }
    if let Some(requests) = &policy.resources_expr.requests {
        let mut list = BTreeMap::new();
        let wanted = [
            (
                ExpressionField::CpuRequests,
                "cpu",
                &requests.cpu,
                &aggregated.cpu_request,
            ),
            (
                ExpressionField::MemoryRequests,
                "memory",
                &requests.memory,
                &aggregated.memory_request,
            ),
        ];
        for (field, resource, expr, combined) in wanted {
            if let Some(expr) = nonempty(expr) {
                let combined = combined.as_ref().unwrap_or(&zero);
                if let Some(q) = evaluate_field(field, expr, combined, false)? {
                    list.insert(resource.to_owned(), Quantity(q.to_string()));
                }
            }
        }
        resources.requests = (!list.is_empty()).then_some(list);
    }
    Ok(resources)
}

fn nonempty(expr: &Option<String>) -> Option<&str> {
    expr.as_deref().filter(|e| !e.is_empty())
}

fn evaluate_field(
    field: ExpressionField,
    expr: &str,
    combined: &GoQuantity,
    is_limit: bool,
) -> Result<Option<GoQuantity>, ResourcesPolicyError> {
    evaluate_resource_expression(expr, combined, is_limit).map_err(|source| {
        ResourcesPolicyError::Expression {
            field,
            expr: expr.to_owned(),
            source,
        }
    })
}

/// `getTargetContainers`: native sidecars (init containers with `restartPolicy: Always`), then
/// plain containers, whose name `name_regex` matches, without the containers named in
/// `kruise_sidecar_names`; in pod order.
pub fn target_containers<'a>(
    init_containers: &'a [Container],
    containers: &'a [Container],
    name_regex: &str,
    kruise_sidecar_names: &BTreeSet<String>,
) -> Result<Vec<&'a Container>, ResourcesPolicyError> {
    let pattern = crate::goregex::compile(name_regex).map_err(|reason| {
        ResourcesPolicyError::InvalidRegex {
            pattern: name_regex.to_owned(),
            reason,
        }
    })?;
    let native_sidecars = init_containers
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    Ok(native_sidecars
        .chain(containers)
        .filter(|c| !kruise_sidecar_names.contains(&c.name) && pattern.is_match(&c.name))
        .collect())
}

/// `aggregateResources`: by [`aggregate_by_sum`] for `sum`, [`aggregate_by_max`] for `max`,
/// nothing for any other mode (so limits are unlimited and requests read as 0).
pub fn aggregate(
    containers: &[&Container],
    mode: &str,
) -> Result<Aggregated, ResourcesPolicyError> {
    match mode {
        target_containers_mode::SUM => aggregate_by_sum(containers),
        target_containers_mode::MAX => aggregate_by_max(containers),
        _ => Ok(Aggregated::default()),
    }
}

/// One of a container's `cpu`/`memory` limits or requests, decoded as Go's JSON decoder does
/// (`UnmarshalJSON`: surrounding white space trimmed, then `ParseQuantity`).
fn container_quantity(
    c: &Container,
    limits: bool,
    resource: &'static str,
) -> Result<Option<GoQuantity>, ResourcesPolicyError> {
    let list = c.resources.as_ref().and_then(|r| {
        if limits {
            r.limits.as_ref()
        } else {
            r.requests.as_ref()
        }
    });
    let Some(Quantity(text)) = list.and_then(|l| l.get(resource)) else {
        return Ok(None);
    };
    GoQuantity::parse(text.trim()).map(Some).map_err(|source| {
        ResourcesPolicyError::InvalidQuantity {
            container: c.name.clone(),
            kind: if limits { "limits" } else { "requests" },
            resource,
            value: text.clone(),
            source,
        }
    })
}

/// `aggregateResourcesBySum`: the sums (from `NewQuantity(0, DecimalSI)`, with Go's `Add`); a
/// limit only if every container has one; a request only if the sum is not zero.
pub fn aggregate_by_sum(containers: &[&Container]) -> Result<Aggregated, ResourcesPolicyError> {
    let mut sums: [GoQuantity; 4] = std::array::from_fn(|_| GoQuantity::new(0, Format::DecimalSI));
    let mut limited = [true, true];
    for c in containers {
        for (i, resource) in ["cpu", "memory"].into_iter().enumerate() {
            match container_quantity(c, true, resource)? {
                Some(q) => sums[i].add(&q),
                None => limited[i] = false,
            }
            if let Some(q) = container_quantity(c, false, resource)? {
                sums[2 + i].add(&q);
            }
        }
    }
    let [cpu_limit, memory_limit, cpu_request, memory_request] = sums;
    let request = |q: GoQuantity| (!q.is_zero()).then_some(q);
    Ok(Aggregated {
        cpu_limit: limited[0].then_some(cpu_limit),
        memory_limit: limited[1].then_some(memory_limit),
        cpu_request: request(cpu_request),
        memory_request: request(memory_request),
    })
}

/// `aggregateResourcesByMax`: the largest value of each (the first one on ties, as Go keeps
/// the current maximum unless `Cmp` says greater); a limit only if every container has one.
pub fn aggregate_by_max(containers: &[&Container]) -> Result<Aggregated, ResourcesPolicyError> {
    let mut max: [Option<GoQuantity>; 4] = Default::default();
    let mut limited = [true, true];
    for c in containers {
        for (i, resource) in ["cpu", "memory"].into_iter().enumerate() {
            let limit = container_quantity(c, true, resource)?;
            if limit.is_none() {
                limited[i] = false;
            }
            let request = container_quantity(c, false, resource)?;
            for (slot, candidate) in [(i, limit), (2 + i, request)] {
                let Some(mut candidate) = candidate else {
                    continue;
                };
                // Go: `!exists || cpu.Cmp(maxCPU) > 0`, the candidate being the receiver (it
                // may become an inf.Dec, and is stored as such).
                let larger = match &max[slot] {
                    None => true,
                    Some(current) => candidate.compare(current).is_gt(),
                };
                if larger {
                    max[slot] = Some(candidate);
                }
            }
        }
    }
    let [cpu_limit, memory_limit, cpu_request, memory_request] = max;
    Ok(Aggregated {
        cpu_limit: cpu_limit.filter(|_| limited[0]),
        memory_limit: memory_limit.filter(|_| limited[1]),
        cpu_request,
        memory_request,
    })
}

/// `evaluateResourceExpression`: `expr` evaluated with `aggregated` bound to `memory` if the
/// expression contains the word `memory` (ASCII word boundaries, as Go's `\bmemory\b`), to
/// `cpu` otherwise. `Ok(None)` only for an empty limit expression (unlimited); an empty request
/// expression is 0. A number result is converted as the module doc says.
pub fn evaluate_resource_expression(
    expr: &str,
    aggregated: &GoQuantity,
    is_limit: bool,
) -> Result<Option<GoQuantity>, CalcError> {
    if expr.is_empty() {
        return Ok((!is_limit).then(|| GoQuantity::new(0, Format::DecimalSI)));
    }
    let variable = if mentions_memory(expr) {
        "memory"
    } else {
        "cpu"
    };
    let variables = BTreeMap::from([(variable.to_owned(), Value::Quantity(aggregated.clone()))]);
    Ok(Some(match evaluate(expr, &variables)? {
        Value::Quantity(q) => q,
        Value::Number(n) if variable == "cpu" => {
            GoQuantity::new_milli(go_f64_to_i64(n * 1000.0), Format::DecimalSI)
        }
        Value::Number(n) => GoQuantity::new(go_f64_to_i64(n), Format::DecimalSI),
    }))
}

/// Whether `memory` occurs in `expr` as a word (RE2's `\bmemory\b`: ASCII word characters).
fn mentions_memory(expr: &str) -> bool {
    let b = expr.as_bytes();
    let word = |i: usize| {
        b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    expr.match_indices("memory")
        .any(|(i, _)| (i == 0 || !word(i - 1)) && !word(i + "memory".len()))
}

/// Go's `strconv.Quote` (`%q`): `"`-quoted, with `\"`, `\\`, the C escapes, `\xNN` for other
/// ASCII controls and `\uNNNN`/`\UNNNNNNNN` for characters that are not printable.
///
/// Printable is Go's `unicode.IsPrint` (letters, marks, numbers, punctuation, symbols and the
/// ASCII space), approximated without Unicode tables: controls, white space, format
/// characters, private-use characters and noncharacters are escaped; code points unassigned in
/// Go's Unicode version are printed as they are, where Go would escape them.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn go_is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format_char = matches!(
        u,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private_use = matches!(u, 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd);
    let noncharacter = matches!(u, 0xfdd0..=0xfdef) || u & 0xfffe == 0xfffe;
    !(format_char || private_use || noncharacter)
}

#[cfg(test)]
mod tests;
