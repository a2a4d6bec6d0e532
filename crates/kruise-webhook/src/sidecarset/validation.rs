//! The rules of OpenKruise v1.9.0's SidecarSet validating webhook
//! (`pkg/webhook/sidecarset/validating/sidecarset_create_update_handler.go` and `utils.go`), as
//! pure functions over the v1beta1 object (a v1alpha1 request is converted first, as OpenKruise
//! converts it). What the rules read from the cluster is passed in ([`SpecLookups`], the other
//! SidecarSets); [`super::validate`] fetches it through [`crate::lookup::Lookup`].
//!
//! Field paths are OpenKruise's, including its unusual ones: the container rules name
//! `spec[<i>].resourcesPolicy`, `spec[<i>].transferEnv.fieldRef`, `spec.container.podInjectPolicy`;
//! the injection revision is reported on `revision`, the partition/selector clash on
//! `updateStrategy`, the fake pod's Kubernetes validation on `spec.containers[<i>]...`,
//! `spec.initContainers[<i>]...` and `spec.volumes[<i>]...`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1beta1 as b1;
use kruise_api::validation::meta::{
    LabelSelectorValidationOptions, label_selector_convertible, validate_label_selector,
    validate_object_meta_generic,
};
use kruise_api::validation::names::{is_qualified_name, max_len_error, regex_error};
use kruise_api::validation::pod::{PodValidationOptions, validate_pod_create};
use kruise_engines::revision::go_json::{self, GoType};
use kruise_engines::sidecarset::hash::is_sidecar_container;
use kruise_runtime::features::{Feature, FeatureGates};
use serde_json::{Value, json};

use crate::common::{selector_is_empty, validate_priority_strategy, validate_scatter_strategy};
use crate::field::{ErrorList, FieldError, Path};
use kruise_engines::goregex;

/// The ConfigMap key holding the patch-metadata whitelist (OpenKruise
/// `configuration.SidecarSetPatchPodMetadataWhiteListKey`).
pub const PATCH_POD_METADATA_WHITELIST_KEY: &str = "SidecarSet_PatchPodMetadata_WhiteList";
/// OpenKruise's configuration ConfigMap (in the manager's namespace).
pub const KRUISE_CONFIGURATION: &str = "kruise-configuration";

const NAME_MAX_LEN: usize = 63;
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";
const NAME_MSG: &str = "sidecarset name must consist of alphanumeric characters or '-'";

/// What the spec rules read from the cluster, fetched beforehand.
#[derive(Clone, Debug, Default)]
pub struct SpecLookups {
    /// The injection revision (`injectionStrategy.revision` naming a revision or a custom
    /// version): `Ok` when OpenKruise's `GetHistorySidecarSet` finds and restores it, `Err` with
    /// its error otherwise; `None` when there is nothing to look up.
    pub revision: Option<Result<(), String>>,
    /// The data of ConfigMap `kruise-configuration` (`None`: it does not exist), read when the
    /// SidecarSet patches pod metadata; `Err` when it could not be read.
    pub kruise_configuration: Option<Result<Option<BTreeMap<String, String>>, String>>,
}

/// OpenKruise `validateSidecarSetName`: alphanumerics and `-`, at most 63 characters.
pub fn validate_sidecarset_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

/// OpenKruise's `validateSelector`: a valid, non-empty selector that converts.
fn validate_selector(sel: &LabelSelector, path: &Path) -> ErrorList {
    let mut errs =
        validate_label_selector(Some(sel), LabelSelectorValidationOptions::default(), path);
    if selector_is_empty(sel) {
        errs.push(FieldError::invalid(
            path.clone(),
            json!(sel),
            "empty selector is not valid for sidecarset.",
        ));
    }
    if !label_selector_convertible(sel) {
        errs.push(FieldError::invalid(path.child("selector"), json!(sel), ""));
    }
    errs
}

use kruise_api::validation::intstr::validate_positive_int_or_percent;

/// `fmt.Sprintf("%++v", strategy)` of OpenKruise's `*SidecarSetUpdateStrategy` (what its
/// "Partition and Selector cannot be used together" error carries as the value):
/// `&{Type:RollingUpdate Paused:false Selector:&LabelSelector{...} Partition:1
/// MaxUnavailable:1 PriorityStrategy:<nil> ScatterStrategy:[]}`.
fn go_update_strategy_plus_v(s: &b1::SidecarSetUpdateStrategy) -> String {
    use kruise_api::validation::gofmt;
    // fmt prints a pointer to a struct inside a struct as its address (only the top level is
    // followed), so a set `priorityStrategy` is an address in Go's message; kruise-rs writes a
    // fixed one of the same shape.
    let priority = match &s.priority_strategy {
        None => "<nil>".to_owned(),
        Some(_) => "0xc000100000".to_owned(),
    };
    let scatter: Vec<String> = s
        .scatter_strategy
        .iter()
        .flatten()
        .map(|t| format!("{{Key:{} Value:{}}}", t.key, t.value))
        .collect();
    format!(
        "&{{Type:{} Paused:{} Selector:{} Partition:{} MaxUnavailable:{} PriorityStrategy:{} ScatterStrategy:[{}]}}",
        opt(&s.type_),
        s.paused.unwrap_or(false),
        gofmt::label_selector_string(s.selector.as_ref()),
        gofmt::int_or_string_ptr_v(s.partition.as_ref()),
        gofmt::int_or_string_ptr_v(s.max_unavailable.as_ref()),
        priority,
        scatter.join(" ")
    )
}

/// OpenKruise `validateSidecarSetUpdateStrategy` (only a `RollingUpdate` strategy is checked).
fn validate_update_strategy(s: &b1::SidecarSetUpdateStrategy, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if opt(&s.type_) != b1::sidecarset_update_strategy_type::ROLLING_UPDATE {
        return errs;
    }
    let partition_set = match &s.partition {
        None => false,
        Some(IntOrString::String(_)) => true,
        Some(IntOrString::Int(n)) => *n != 0,
    };
    if partition_set && s.selector.is_some() {
        errs.push(FieldError::invalid(
            Path::new("updateStrategy"),
            go_update_strategy_plus_v(s),
            "Partition and Selector cannot be used together",
        ));
    }
    if let Some(sel) = &s.selector {
        errs.extend(validate_selector(sel, &path.child("selector")));
    }
    if let Some(p) = &s.partition {
        errs.extend(validate_positive_int_or_percent(
            p,
            &path.child("partition"),
        ));
    }
    if let Some(m) = &s.max_unavailable {
        errs.extend(validate_positive_int_or_percent(
            m,
            &path.child("maxUnavailable"),
        ));
    }
    if let Err(e) = validate_priority_strategy(s.priority_strategy.as_ref()) {
        errs.push(FieldError::required(path.child("priorityStrategy"), e));
    }
    if let Some(terms) = s.scatter_strategy.as_deref()
        && let Err(e) = validate_scatter_strategy(Some(terms))
    {
        errs.push(FieldError::required(path.child("scatterStrategy"), e));
    }
    errs
}

/// OpenKruise `validateSidecarSetInjectionStrategy`; `revision` is the looked-up revision's
/// fate (see [`SpecLookups::revision`]).
fn validate_injection_strategy(
    s: Option<&b1::SidecarSetInjectionStrategy>,
    revision: Option<&Result<(), String>>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(info) = s.and_then(|s| s.revision.as_ref()) else {
        return errs;
    };
    if info.revision_name.is_none() && info.custom_version.is_none() {
        errs.push(FieldError::invalid(
            Path::new("revision"),
            json!(info),
            "revisionName and customVersion cannot be empty simultaneously",
        ));
    } else if let Some(Err(e)) = revision {
        // Go passes the nil `*SidecarSet` it got back; apimachinery prints a nil pointer as
        // the string "null", quoted.
        errs.push(FieldError::invalid(
            Path::new("revision"),
            "null",
            format!("Cannot find specific ControllerRevision, err: {e}"),
        ));
    }
    match opt(&info.policy) {
        "" | "Always" | "Partial" => {}
        other => errs.push(FieldError::invalid(
            Path::new("revision").child("policy"),
            json!(info),
            format!("Invalid policy {other}, supported: [Always, Partial]"),
        )),
    }
    errs
}

/// OpenKruise `validateResourcesPolicy` of a sidecar (`path`: `spec[<i>].resourcesPolicy`).
fn validate_resources_policy(c: &b1::SidecarContainer, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(policy) = c.resources_policy.as_ref() else {
        return errs;
    };
    let res = c.container.resources.as_ref();
    let has = |m: Option<
        &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >| { m.is_some_and(|m| !m.is_empty()) };
    if has(res.and_then(|r| r.limits.as_ref())) || has(res.and_then(|r| r.requests.as_ref())) {
        errs.push(FieldError::invalid(
            path.clone(),
            json!(policy),
            "resourcesPolicy and resources cannot be configured together",
        ));
        return errs;
    }
    let regex = opt(&policy.target_containers_name_regex);
    if regex.is_empty() {
        errs.push(FieldError::required(
            path.child("targetContainersNameRegex"),
            "invalid empty regex",
        ));
    } else if let Err(e) = goregex::compile(regex) {
        errs.push(FieldError::invalid(
            path.child("targetContainersNameRegex"),
            regex,
            format!("invalid regex pattern: {e}"),
        ));
    }
    let expr = &policy.resources_expr;
    let ep = path.child("resourcesExpr");
    if expr.limits.is_none() && expr.requests.is_none() {
        errs.push(FieldError::invalid(
            ep,
            json!(expr),
            "at least one of limits or requests must be configured",
        ));
        return errs;
    }
    // OpenKruise `validateResourceExpression`: the calculator run with the field's variable
    // set to the number 1; any error refuses the expression.
    let check_expression = |expr: &str, variable: &str| -> Result<(), String> {
        if expr.is_empty() {
            return Ok(());
        }
        let vars = std::collections::BTreeMap::from([(
            variable.to_string(),
            kruise_engines::sidecarset::calculator::Value::Number(1.0),
        )]);
        kruise_engines::sidecarset::calculator::evaluate(expr, &vars)
            .map(|_| ())
            .map_err(|e| format!("invalid expression: {e}"))
    };
    let mut check = |p: Path, cpu: &Option<String>, memory: &Option<String>| {
        for (name, v) in [("cpu", cpu), ("memory", memory)] {
            if let Err(e) = check_expression(opt(v), name) {
                errs.push(FieldError::invalid(p.child(name), opt(v), e));
            }
        }
    };
    if let Some(l) = &expr.limits {
        check(ep.child("limits"), &l.cpu, &l.memory);
    }
    if let Some(r) = &expr.requests {
        check(ep.child("requests"), &r.cpu, &r.memory);
    }
    errs
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['key']` → (`metadata.labels`,
/// `key`).
fn split_subscripted(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (head, sub) = s.split_once("['")?;
    (!head.is_empty()).then_some((head, sub))
}

/// OpenKruise `validateDownwardAPI` of `transferEnv` (`path`: `spec[<i>].transferEnv`).
fn validate_transfer_env(envs: &[b1::TransferEnvVar], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let fp = path.child("fieldRef");
    for env in envs {
        let Some(fs) = env
            .source_container_name_from
            .as_ref()
            .and_then(|s| s.field_ref.as_ref())
        else {
            continue;
        };
        let api_version = opt(&fs.api_version);
        if api_version.is_empty() {
            errs.push(FieldError::required(fp.child("apiVersion"), ""));
            continue;
        }
        if fs.field_path.is_empty() {
            errs.push(FieldError::required(fp.child("fieldPath"), ""));
            continue;
        }
        // sidecarcontrol.ConvertDownwardAPIFieldLabel: v1 only, subscripted labels/annotations.
        let converted = if api_version != "v1" {
            Err(format!("unsupported pod version: {api_version}"))
        } else {
            match split_subscripted(&fs.field_path) {
                Some(("metadata.annotations" | "metadata.labels", _)) => Ok(()),
                Some((p, _)) => Err(format!("field path not supported: {p}")),
                None => Err(format!("field label not supported: {}", fs.field_path)),
            }
        };
        if let Err(e) = converted {
            errs.push(FieldError::invalid(
                fp.child("fieldPath"),
                fs.field_path.as_str(),
                format!("error converting fieldPath: {e}"),
            ));
            continue;
        }
        if let Some((p, sub)) = split_subscripted(&fs.field_path) {
            let msgs = if p == "metadata.annotations" {
                is_qualified_name(&sub.to_lowercase())
            } else {
                is_qualified_name(sub)
            };
            errs.extend(
                msgs.into_iter()
                    .map(|m| FieldError::invalid(fp.clone(), sub, m)),
            );
        }
    }
    errs
}

/// OpenKruise `validateContainersForSidecarSet`: per-sidecar rules, then Kubernetes'
/// `ValidatePodCreate` of a fake pod holding the sidecars (or a placeholder container when there
/// are only init containers) and the volumes.
fn validate_containers(spec: &b1::SidecarSetSpec, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let init = spec.init_containers.as_deref().unwrap_or_default();
    let containers = spec.containers.as_deref().unwrap_or_default();
    for (i, c) in init.iter().enumerate() {
        if c.resources_policy.is_some() {
            let rp = path.index(i).child("resourcesPolicy");
            if !is_sidecar_container(&c.container) {
                errs.push(FieldError::invalid(
                    rp.clone(),
                    json!(c.resources_policy),
                    "resourcesPolicy is only supported for containers with RestartPolicy Always",
                ));
            }
            errs.extend(validate_resources_policy(c, &rp));
        }
    }
    for (i, c) in containers.iter().enumerate() {
        let inject = opt(&c.pod_inject_policy);
        if inject != b1::pod_inject_policy::BEFORE_APP_CONTAINER
            && inject != b1::pod_inject_policy::AFTER_APP_CONTAINER
        {
            errs.push(FieldError::invalid(
                path.child("container").child("podInjectPolicy"),
                inject,
                "unsupported pod inject policy",
            ));
        }
        let share = c
            .share_volume_policy
            .as_ref()
            .map(|s| opt(&s.type_))
            .unwrap_or("");
        if share != b1::share_volume_policy_type::ENABLED
            && share != b1::share_volume_policy_type::DISABLED
        {
            errs.push(FieldError::invalid(
                path.child("container").child("shareVolumePolicy"),
                json!({"type": share}),
                "unsupported share volume policy",
            ));
        }
        errs.extend(validate_transfer_env(
            c.transfer_env.as_deref().unwrap_or_default(),
            &path.index(i).child("transferEnv"),
        ));
        if c.resources_policy.is_some() {
            errs.extend(validate_resources_policy(
                c,
                &path.index(i).child("resourcesPolicy"),
            ));
        }
    }
    let mut pod_containers: Vec<Container> =
        containers.iter().map(|c| c.container.clone()).collect();
    if pod_containers.is_empty() {
        pod_containers.push(Container {
            name: "test".into(),
            image: Some("busybox".into()),
            image_pull_policy: Some("IfNotPresent".into()),
            termination_message_policy: Some("File".into()),
            ..Container::default()
        });
    }
    let init_containers: Vec<Container> = init.iter().map(|c| c.container.clone()).collect();
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("test".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            dns_policy: Some("ClusterFirst".into()),
            restart_policy: Some("Always".into()),
            init_containers: (!init_containers.is_empty()).then_some(init_containers),
            containers: pod_containers,
            volumes: spec.volumes.clone(),
            service_account_name: Some("default".into()),
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        status: None,
    };
    errs.extend(validate_pod_create(
        &pod,
        &PodValidationOptions::openkruise(),
    ));
    errs
}

/// The patch-metadata whitelist of `kruise-configuration` (OpenKruise
/// `SidecarSetPatchMetadataWhiteList`).
#[derive(serde::Deserialize)]
struct Whitelist {
    #[serde(default)]
    rules: Option<Vec<WhitelistRule>>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WhitelistRule {
    #[serde(default)]
    selector: Option<LabelSelector>,
    #[serde(default)]
    allowed_annotation_key_exprs: Option<Vec<String>>,
}

/// OpenKruise `sidecarcontrol.ValidateSidecarSetPatchMetadataWhitelist`: the error when a
/// patched annotation key is not allowed. Without a whitelist (or without rules that apply to
/// this SidecarSet) the gate `SidecarSetPatchPodMetadataDefaultsAllowed` decides.
fn check_patch_whitelist(
    set: &b1::SidecarSet,
    config: &Result<Option<BTreeMap<String, String>>, String>,
    gates: &FeatureGates,
) -> Result<(), String> {
    let defaults_allowed = gates.enabled(Feature::SidecarSetPatchPodMetadataDefaultsAllowed);
    let data = config.as_ref().map_err(Clone::clone)?;
    let value = data
        .as_ref()
        .and_then(|d| d.get(PATCH_POD_METADATA_WHITELIST_KEY));
    let Some(value) = value else {
        return if defaults_allowed {
            Ok(())
        } else {
            Err("SidecarSet patch metadata whitelist not found".into())
        };
    };
    let list: Whitelist = go_json_unmarshal(value)?;
    let mut regexes = Vec::new();
    for rule in list.rules.unwrap_or_default() {
        if let Some(sel) = &rule.selector
            && !unvalidated_selector_matches(sel, set.metadata.labels.as_ref())?
        {
            continue;
        }
        for expr in rule.allowed_annotation_key_exprs.unwrap_or_default() {
            regexes.push(goregex::compile(&expr)?);
        }
    }
    if regexes.is_empty() {
        return if defaults_allowed {
            Ok(())
        } else {
            Err("sidecarSet patch metadata annotation is not allowed".into())
        };
    }
    for patch in set.spec.patch_pod_metadata.iter().flatten() {
        for key in patch.annotations.iter().flatten().map(|(k, _)| k) {
            if !regexes.iter().any(|r| r.is_match(key)) {
                return Err(format!(
                    "sidecarSet patch metadata annotation({key}) is not allowed"
                ));
            }
        }
    }
    Ok(())
}

/// OpenKruise `util.ValidatedLabelSelectorAsSelector(sel).Matches(labels)`: requirements are
/// built without validating keys or values (only an unknown operator is an error); an empty
/// selector matches everything.
fn unvalidated_selector_matches(
    sel: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, String> {
    let get = |k: &str| labels.and_then(|l| l.get(k));
    let mut ok = true;
    for (k, v) in sel.match_labels.iter().flatten() {
        ok &= get(k) == Some(v);
    }
    for req in sel.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or_default();
        let value = get(&req.key);
        ok &= match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => return Err(format!("{other:?} is not a valid pod selector operator")),
        };
    }
    Ok(ok)
}

/// `json.Unmarshal` of the whitelist: Go's decoder is lenient where serde is not only in ways
/// that do not matter here (unknown fields are ignored by both).
fn go_json_unmarshal(text: &str) -> Result<Whitelist, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// OpenKruise `validateSidecarSetSpec`.
fn validate_spec(set: &b1::SidecarSet, gates: &FeatureGates, lookups: &SpecLookups) -> ErrorList {
    let spec = &set.spec;
    let sp = Path::new("spec");
    let mut errs = ErrorList::new();
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    let rolling = opt(&strategy.type_) == b1::sidecarset_update_strategy_type::ROLLING_UPDATE;
    for c in spec.init_containers.iter().flatten() {
        if is_sidecar_container(&c.container) && rolling {
            errs.push(FieldError::required(
                sp.child("updateStrategy"),
                "The initContainer in-place upgrade is not currently supported.",
            ));
        }
    }
    match &spec.selector {
        None => errs.push(FieldError::required(
            sp.child("selector"),
            "no selector defined for SidecarSet",
        )),
        Some(sel) => errs.extend(validate_selector(sel, &sp.child("selector"))),
    }
    if let Some(ns) = &spec.namespace_selector {
        errs.extend(validate_selector(ns, &sp.child("namespaceSelector")));
    }
    errs.extend(validate_injection_strategy(
        spec.injection_strategy.as_ref(),
        lookups.revision.as_ref(),
    ));
    errs.extend(validate_update_strategy(
        &strategy,
        &sp.child("updateStrategy"),
    ));
    let no_init = spec.init_containers.as_ref().is_none_or(Vec::is_empty);
    let no_containers = spec.containers.as_ref().is_none_or(Vec::is_empty);
    if no_init && no_containers {
        errs.push(FieldError::required(
            sp.clone(),
            "no initContainer or container defined for SidecarSet",
        ));
    } else {
        errs.extend(validate_containers(spec, &sp));
    }
    let patches = spec.patch_pod_metadata.as_deref().unwrap_or_default();
    if !patches.is_empty() {
        let config = lookups.kruise_configuration.clone().unwrap_or(Ok(None));
        if let Err(e) = check_patch_whitelist(set, &config, gates) {
            errs.push(FieldError::required(sp.child("patchPodMetadata"), e));
        }
    }
    let mut keys = BTreeSet::new();
    for patch in patches {
        let annotations = patch.annotations.clone().unwrap_or_default();
        if annotations.is_empty() {
            errs.push(FieldError::required(
                sp.child("patchPodMetadata"),
                "no annotations defined for SidecarSet",
            ));
        } else {
            let meta = ObjectMeta {
                name: Some("fake-name".into()),
                annotations: Some(annotations.clone()),
                ..ObjectMeta::default()
            };
            errs.extend(validate_object_meta_generic(
                &meta,
                false,
                validate_sidecarset_name,
                &Path::new("patchPodMetadata"),
            ));
        }
        if opt(&patch.patch_policy).is_empty() {
            errs.push(FieldError::required(
                sp.child("patchPodMetadata"),
                "no patchPolicy defined for patchPodMetadata",
            ));
        }
        for k in annotations.keys() {
            if !keys.insert(k.clone()) {
                errs.push(FieldError::required(
                    sp.child("patchPodMetadata"),
                    format!("patch annotation[{k}] already exist"),
                ));
            }
        }
    }
    errs
}

/// OpenKruise `validateSidecarContainerConflict` (update): every container must have existed
/// before, and its upgrade type may not change.
fn validate_container_changes(new: &b1::SidecarSet, old: &b1::SidecarSet) -> ErrorList {
    let path = Path::new("spec").child("containers");
    let upgrade_type = |c: &b1::SidecarContainer| -> String {
        c.upgrade_strategy
            .as_ref()
            .map(|u| opt(&u.upgrade_type).to_owned())
            .unwrap_or_default()
    };
    let old_types: BTreeMap<&str, String> = old
        .spec
        .containers
        .iter()
        .flatten()
        .map(|c| (c.container.name.as_str(), upgrade_type(c)))
        .collect();
    let mut errs = ErrorList::new();
    for c in new.spec.containers.iter().flatten() {
        let name = c.container.name.as_str();
        match old_types.get(name) {
            Some(t) if !t.is_empty() && *t != upgrade_type(c) => errs.push(FieldError::invalid(
                path.child("upgradeStrategy").child("upgradeType"),
                name,
                format!("container {name} upgradeType is immutable"),
            )),
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                path.child("name"),
                name,
                format!("container {name} is not found"),
            )),
        }
    }
    errs
}

/// Every rule OpenKruise's webhook checks before it looks at the other SidecarSets
/// (`validateSidecarSet` up to the conflict check): object metadata, the spec, and on update
/// the container list. The conflicts are checked by [`validate_conflicts`] only when this finds
/// nothing, as in OpenKruise.
pub fn validate_sidecarset(
    set: &b1::SidecarSet,
    old: Option<&b1::SidecarSet>,
    gates: &FeatureGates,
    lookups: &SpecLookups,
) -> ErrorList {
    let mut errs = validate_object_meta_generic(
        &set.metadata,
        false,
        validate_sidecarset_name,
        &Path::new("metadata"),
    );
    errs.extend(validate_spec(set, gates, lookups));
    if let Some(old) = old {
        errs.extend(validate_container_changes(set, old));
    }
    errs
}

/// OpenKruise `util.IsSelectorOverlapping`: whether some label set could match both selectors
/// (as OpenKruise approximates it: matchLabels and `In`/`Exists` requirements of one against
/// the other's, both ways; a value `ALL` counts as any value).
pub fn is_selector_overlapping(a: &LabelSelector, b: &LabelSelector) -> bool {
    !(is_disjoint(a, b) || is_disjoint(b, a))
}

fn is_disjoint(a: &LabelSelector, b: &LabelSelector) -> bool {
    const ALL: &str = "ALL";
    let mut matched: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (k, v) in a.match_labels.iter().flatten() {
        matched.insert(k, vec![v]);
    }
    for req in a.match_expressions.iter().flatten() {
        match req.operator.as_str() {
            // Go appends value by value: an empty list adds no entry.
            "In" => {
                for v in req.values.iter().flatten() {
                    matched.entry(req.key.as_str()).or_default().push(v);
                }
            }
            "Exists" => {
                matched.insert(req.key.as_str(), vec![ALL]);
            }
            _ => {}
        }
    }
    for (k, v) in b.match_labels.iter().flatten() {
        if let Some(values) = matched.get(k.as_str())
            && !values.contains(&ALL)
            && !values.contains(&v.as_str())
        {
            return true;
        }
    }
    for req in b.match_expressions.iter().flatten() {
        let values = matched.get(req.key.as_str());
        let req_values: Vec<&str> = req.values.iter().flatten().map(String::as_str).collect();
        let disjoint = match req.operator.as_str() {
            "In" => values.is_some_and(|values| {
                !values.contains(&ALL) && !values.iter().any(|v| req_values.contains(v))
            }),
            "NotIn" => values.is_some_and(|values| values.iter().all(|v| req_values.contains(v))),
            "Exists" => values.is_none(),
            "DoesNotExist" => values.is_some(),
            _ => false,
        };
        if disjoint {
            return true;
        }
    }
    false
}

/// A volume as Go holds it, for `reflect.DeepEqual` of two decoded volumes: the Go JSON form.
fn go_volume(v: &Volume) -> Value {
    let mut value = json!([v]);
    go_json::normalize_field(&mut value, GoType::SidecarSetV1beta1, &["spec", "volumes"]);
    value
}

/// OpenKruise `validateSidecarConflict`: among the other SidecarSets whose pods may overlap
/// this one's (namespace selectors and selectors overlapping), none may inject an init
/// container or container of the same name, a volume of the same name that differs, or patch
/// the same annotation when either side overwrites it. `others` is every SidecarSet in the
/// cluster (this one is skipped by name); a failed list is an internal error.
pub fn validate_conflicts(
    set: &b1::SidecarSet,
    others: Result<&[Arc<b1::SidecarSet>], String>,
) -> ErrorList {
    let sp = Path::new("spec");
    let mut errs = ErrorList::new();
    let others = match others {
        Ok(o) => o,
        Err(e) => {
            errs.push(FieldError::internal(
                Path::new(""),
                format!("query other sidecarsets failed, err: {e}"),
            ));
            &[]
        }
    };
    let name = set.metadata.name.as_deref().unwrap_or("");
    let empty = LabelSelector::default();
    let selector = set.spec.selector.as_ref().unwrap_or(&empty);
    let mut init_in_others: BTreeMap<String, &str> = BTreeMap::new();
    let mut containers_in_others: BTreeMap<String, &str> = BTreeMap::new();
    let mut volumes_in_others: BTreeMap<String, &b1::SidecarSet> = BTreeMap::new();
    let mut annotations_in_others: BTreeMap<String, (String, String)> = BTreeMap::new();
    for other in others {
        let namespaces_overlap =
            match (&set.spec.namespace_selector, &other.spec.namespace_selector) {
                (Some(a), Some(b)) => is_selector_overlapping(a, b),
                _ => true,
            };
        let other_selector = other.spec.selector.as_ref().unwrap_or(&empty);
        if !(namespaces_overlap && is_selector_overlapping(selector, other_selector)) {
            continue;
        }
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name {
            continue;
        }
        for c in other.spec.init_containers.iter().flatten() {
            init_in_others.insert(c.container.name.clone(), other_name);
        }
        for c in other.spec.containers.iter().flatten() {
            containers_in_others.insert(c.container.name.clone(), other_name);
        }
        for v in other.spec.volumes.iter().flatten() {
            volumes_in_others.insert(v.name.clone(), other);
        }
        for p in other.spec.patch_pod_metadata.iter().flatten() {
            let policy = opt(&p.patch_policy);
            if policy == b1::sidecarset_patch_policy::RETAIN {
                continue;
            }
            for k in p.annotations.iter().flatten().map(|(k, _)| k) {
                annotations_in_others.insert(k.clone(), (other_name.to_owned(), policy.to_owned()));
            }
        }
    }
    for (list, seen) in [
        (&set.spec.init_containers, &init_in_others),
        (&set.spec.containers, &containers_in_others),
    ] {
        for c in list.iter().flatten() {
            if let Some(other) = seen.get(&c.container.name) {
                errs.push(FieldError::invalid(
                    sp.child("containers"),
                    c.container.name.as_str(),
                    format!("container {} already exist in {other}", c.container.name),
                ));
            }
        }
    }
    for v in set.spec.volumes.iter().flatten() {
        let Some(other) = volumes_in_others.get(&v.name) else {
            continue;
        };
        let theirs = other
            .spec
            .volumes
            .iter()
            .flatten()
            .find(|o| o.name == v.name);
        if theirs.map(go_volume) != Some(go_volume(v)) {
            errs.push(FieldError::invalid(
                sp.child("volumes"),
                v.name.as_str(),
                format!(
                    "volume {} is in conflict with sidecarset {}",
                    v.name,
                    other.metadata.name.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    for p in set.spec.patch_pod_metadata.iter().flatten() {
        let policy = opt(&p.patch_policy);
        if policy == b1::sidecarset_patch_policy::RETAIN {
            continue;
        }
        for k in p.annotations.iter().flatten().map(|(k, _)| k) {
            let Some((other, other_policy)) = annotations_in_others.get(k) else {
                continue;
            };
            if policy == b1::sidecarset_patch_policy::OVERWRITE
                || other_policy == b1::sidecarset_patch_policy::OVERWRITE
            {
                errs.push(FieldError::invalid(
                    sp.child("patchPodMetadata"),
                    k.as_str(),
                    format!("annotation {k} is in conflict with sidecarset {other}"),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(v: Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn selector_overlap_as_openkruise_approximates_it() {
        let a = sel(json!({"matchLabels": {"app": "a"}}));
        let b = sel(json!({"matchLabels": {"app": "b"}}));
        let any_app = sel(json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}));
        let not_a = sel(
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}),
        );
        let other_key = sel(json!({"matchLabels": {"tier": "x"}}));
        let wildcard = sel(json!({"matchLabels": {"app": "ALL"}}));
        assert!(!is_selector_overlapping(&a, &b));
        assert!(is_selector_overlapping(&a, &a));
        assert!(is_selector_overlapping(&a, &any_app));
        assert!(!is_selector_overlapping(&a, &not_a));
        assert!(is_selector_overlapping(&a, &other_key));
        // `ALL` is a wildcard only among the first selector's values, so only one way round.
        assert!(!is_disjoint(&wildcard, &b));
        assert!(!is_selector_overlapping(&wildcard, &b));
    }

    #[test]
    fn names_and_subscripts() {
        assert!(validate_sidecarset_name("ok-Name-1", false).is_empty());
        assert_eq!(validate_sidecarset_name("bad.name", false).len(), 1);
        assert_eq!(validate_sidecarset_name(&"a".repeat(64), false).len(), 1);
        assert_eq!(
            split_subscripted("metadata.labels['app']"),
            Some(("metadata.labels", "app"))
        );
        assert_eq!(split_subscripted("metadata.name"), None);
        assert_eq!(split_subscripted("['x']"), None);
    }
}
