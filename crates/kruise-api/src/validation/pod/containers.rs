//! Container rules of `ValidatePodSpec` (`validateContainers`, `validateInitContainers`,
//! `validateEphemeralContainers`, `validateContainerCommon` and what they call), Kubernetes
//! v1.32.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvFromSource, EnvVar, EphemeralContainer, Lifecycle,
    LifecycleHandler, Probe, ResourceRequirements, SecurityContext, VolumeDevice, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::super::field::{ErrorList, FieldError, Path};
use super::super::names::{
    is_config_map_key, is_dns1123_label, is_env_var_name, is_http_header_name, is_valid_group_id,
    is_valid_port_name, is_valid_port_num, is_valid_user_id, name_is_dns_subdomain,
};
use super::resources::validate_container_resource_requirements;
use super::security::{
    validate_app_armor_profile_field, validate_seccomp_profile_field,
    validate_windows_security_context_options,
};
use super::volumes::{
    Volumes, validate_container_resource_field_selector, validate_local_descending_path,
    validate_object_field_selector, validate_path_no_backsteps,
};
use super::{PodValidationOptions, opt, validate_pull_policy};

/// Everything container rules need from the pod.
pub(crate) struct PodContext<'a> {
    pub volumes: &'a Volumes,
    pub pod_claim_names: &'a BTreeSet<String>,
    pub grace_period: Option<i64>,
    pub restart_policy: &'a str,
    pub host_users: bool,
    pub opts: &'a PodValidationOptions,
}

/// `validateContainers`: at least one container; each valid, uniquely named; handlers and
/// probes valid (`successThreshold` 1 for liveness and startup probes); no `restartPolicy`;
/// host ports unique across containers.
pub(crate) fn validate_containers(
    containers: &[Container],
    path: &Path,
    ctx: &PodContext<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if containers.is_empty() {
        errs.push(FieldError::required(path.clone(), ""));
        return errs;
    }
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, &p, ctx));
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), c.name.as_str()));
        }
        if let Some(l) = c.lifecycle.as_ref() {
            errs.extend(validate_lifecycle(l, ctx, &p.child("lifecycle")));
        }
        errs.extend(validate_liveness_or_startup_probe(
            c.liveness_probe.as_ref(),
            ctx,
            &p.child("livenessProbe"),
        ));
        errs.extend(validate_readiness_probe(
            c.readiness_probe.as_ref(),
            ctx,
            &p.child("readinessProbe"),
        ));
        errs.extend(validate_liveness_or_startup_probe(
            c.startup_probe.as_ref(),
            ctx,
            &p.child("startupProbe"),
        ));
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(
                p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(check_host_port_conflicts(containers.iter(), path));
    errs
}

/// `validateInitContainers`: each valid; `restartPolicy` only `Always` (a sidecar); names
/// unique across init and regular containers; host ports unique per init container; lifecycle
/// and probes only for sidecars; no `resizePolicy`.
pub(crate) fn validate_init_containers(
    containers: &[Container],
    regular: &[Container],
    path: &Path,
    ctx: &PodContext<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<&str> = regular.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_container_common(c, &p, ctx));
        let mut restart_always = false;
        if let Some(rp) = c.restart_policy.as_deref() {
            if rp != "Always" {
                errs.push(FieldError::not_supported(
                    p.child("restartPolicy"),
                    rp,
                    &["Always"],
                ));
            }
            restart_always = rp == "Always";
        }
        if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), c.name.as_str()));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        errs.extend(check_host_port_conflicts(std::iter::once(c), path));
        if restart_always {
            if let Some(l) = c.lifecycle.as_ref() {
                errs.extend(validate_lifecycle(l, ctx, &p.child("lifecycle")));
            }
            errs.extend(validate_liveness_or_startup_probe(
                c.liveness_probe.as_ref(),
                ctx,
                &p.child("livenessProbe"),
            ));
            errs.extend(validate_readiness_probe(
                c.readiness_probe.as_ref(),
                ctx,
                &p.child("readinessProbe"),
            ));
            errs.extend(validate_liveness_or_startup_probe(
                c.startup_probe.as_ref(),
                ctx,
                &p.child("startupProbe"),
            ));
        } else {
            const MSG: &str = "may not be set for init containers without restartPolicy=Always";
            if c.lifecycle.is_some() {
                errs.push(FieldError::forbidden(p.child("lifecycle"), MSG));
            }
            if c.liveness_probe.is_some() {
                errs.push(FieldError::forbidden(p.child("livenessProbe"), MSG));
            }
            if c.readiness_probe.is_some() {
                errs.push(FieldError::forbidden(p.child("readinessProbe"), MSG));
            }
            if c.startup_probe.is_some() {
                errs.push(FieldError::forbidden(p.child("startupProbe"), MSG));
            }
        }
        if !ctx.opts.allow_sidecar_resize_policy
            && c.resize_policy.as_ref().is_some_and(|r| !r.is_empty())
        {
            errs.push(FieldError::invalid(
                p.child("resizePolicy"),
                json!(c.resize_policy),
                "must not be set for init containers",
            ));
        }
    }
    errs
}

/// Ephemeral container fields that may not be set (those `allowedEphemeralContainerFields`
/// does not allow, among the fields of Kubernetes 1.32's `EphemeralContainerCommon`).
const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// An ephemeral container as the `Container` its common part is.
pub(crate) fn ephemeral_as_container(ec: &EphemeralContainer) -> Container {
    let mut v = serde_json::to_value(ec).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.remove("targetContainerName");
    }
    serde_json::from_value(v).unwrap_or_default()
}

/// `validateEphemeralContainers` (checked although templates may not have any): common
/// container rules, no surrounding whitespace in the image, a name unique across all
/// containers, an existing target container, only the allowed fields, no sub-paths.
pub(crate) fn validate_ephemeral_containers(
    ephemeral: &[EphemeralContainer],
    containers: &[Container],
    init: &[Container],
    path: &Path,
    ctx: &PodContext<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if ephemeral.is_empty() {
        return errs;
    }
    let others: BTreeSet<&str> = containers
        .iter()
        .chain(init)
        .map(|c| c.name.as_str())
        .collect();
    let mut all: BTreeSet<String> = others.iter().map(|s| (*s).to_owned()).collect();
    for (i, ec) in ephemeral.iter().enumerate() {
        let p = path.index(i);
        let c = ephemeral_as_container(ec);
        errs.extend(validate_container_common(&c, &p, ctx));
        let image = opt(&c.image);
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                p.child("image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        if !all.insert(ec.name.clone()) {
            errs.push(FieldError::duplicate(p.child("name"), ec.name.as_str()));
        }
        let target = opt(&ec.target_container_name);
        if !target.is_empty() && !others.contains(target) {
            errs.push(FieldError::not_found(
                p.child("targetContainerName"),
                target,
            ));
        }
        let v = serde_json::to_value(&c).unwrap_or_default();
        for f in EPHEMERAL_FORBIDDEN {
            let set = v.get(*f).is_some_and(|x| {
                !(x.is_null()
                    || x.as_array().is_some_and(Vec::is_empty)
                    || x.as_object().is_some_and(serde_json::Map::is_empty))
            });
            if set {
                errs.push(FieldError::forbidden(
                    p.child(f),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        for (j, vm) in ec.volume_mounts.iter().flatten().enumerate() {
            let mp = p.child("volumeMounts").index(j);
            if !opt(&vm.sub_path).is_empty() {
                errs.push(FieldError::forbidden(
                    mp.child("subPath"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
            if !opt(&vm.sub_path_expr).is_empty() {
                errs.push(FieldError::forbidden(
                    mp.child("subPathExpr"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    errs
}

/// `validateContainerCommon`: name (a DNS-1123 label), image (non-empty; surrounding spaces
/// are allowed in templates), termination message policy, ports, env, envFrom, volume mounts
/// and devices, pull policy, resources, resize policy and security context.
pub(crate) fn validate_container_common(
    c: &Container,
    path: &Path,
    ctx: &PodContext<'_>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let np = path.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(np, ""));
    } else {
        errs.extend(
            is_dns1123_label(&c.name)
                .into_iter()
                .map(|m| FieldError::invalid(np.clone(), c.name.as_str(), m)),
        );
    }
    if opt(&c.image).is_empty() {
        errs.push(FieldError::required(path.child("image"), ""));
    }
    match opt(&c.termination_message_policy) {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(FieldError::required(
            path.child("terminationMessagePolicy"),
            "",
        )),
        other => errs.push(FieldError::not_supported(
            path.child("terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    let mounts = c.volume_mounts.as_deref().unwrap_or_default();
    let devices = c.volume_devices.as_deref().unwrap_or_default();
    // GetVolumeMountMap / GetVolumeDeviceMap: name → path, the last one wins.
    let mount_map: BTreeMap<&str, &str> = mounts
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    let device_map: BTreeMap<&str, &str> = devices
        .iter()
        .map(|d| (d.name.as_str(), d.device_path.as_str()))
        .collect();
    errs.extend(validate_container_ports(
        c.ports.as_deref().unwrap_or_default(),
        &path.child("ports"),
    ));
    errs.extend(validate_env(
        c.env.as_deref().unwrap_or_default(),
        &path.child("env"),
        ctx.opts,
    ));
    errs.extend(validate_env_from(
        c.env_from.as_deref().unwrap_or_default(),
        &path.child("envFrom"),
        ctx.opts,
    ));
    errs.extend(validate_volume_mounts(
        mounts,
        &device_map,
        ctx.volumes,
        c,
        &path.child("volumeMounts"),
    ));
    errs.extend(validate_volume_devices(
        devices,
        &mount_map,
        ctx.volumes,
        &path.child("volumeDevices"),
    ));
    errs.extend(validate_pull_policy(
        opt(&c.image_pull_policy),
        &path.child("imagePullPolicy"),
    ));
    let empty = ResourceRequirements::default();
    errs.extend(validate_container_resource_requirements(
        c.resources.as_ref().unwrap_or(&empty),
        ctx.pod_claim_names,
        &path.child("resources"),
        ctx.opts,
    ));
    errs.extend(validate_resize_policy(
        c,
        &path.child("resizePolicy"),
        ctx.restart_policy,
    ));
    errs.extend(validate_security_context(
        c.security_context.as_ref(),
        &path.child("securityContext"),
        ctx.host_users,
        ctx.opts,
    ));
    errs
}

fn validate_container_ports(ports: &[ContainerPort], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = opt(&port.name);
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                errs.extend(
                    msgs.into_iter()
                        .map(|m| FieldError::invalid(p.child("name"), name, m)),
                );
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(p.child("name"), name));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(p.child("containerPort"), ""));
        } else {
            errs.extend(
                is_valid_port_num(i64::from(port.container_port))
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("containerPort"), port.container_port, m)),
            );
        }
        let host_port = port.host_port.unwrap_or(0);
        if host_port != 0 {
            errs.extend(
                is_valid_port_num(i64::from(host_port))
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("hostPort"), host_port, m)),
            );
        }
        match opt(&port.protocol) {
            "" => errs.push(FieldError::required(p.child("protocol"), "")),
            "SCTP" | "TCP" | "UDP" => {}
            other => errs.push(FieldError::not_supported(
                p.child("protocol"),
                other,
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
    errs
}

const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn env_name_errors(name: &str, opts: &PodValidationOptions) -> Vec<String> {
    if opts.allow_relaxed_environment_variable_validation {
        let mut errs = Vec::new();
        if name.is_empty() {
            errs.push("environment variable name must be non-empty".to_owned());
        }
        if name
            .chars()
            .any(|c| !c.is_ascii() || c.is_ascii_control() || c == '=')
        {
            errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='".to_owned());
        }
        errs
    } else {
        is_env_var_name(name)
    }
}

/// `ValidateEnv`: names, and `valueFrom` with exactly one source (and no `value`).
pub(crate) fn validate_env(vars: &[EnvVar], path: &Path, opts: &PodValidationOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, ev) in vars.iter().enumerate() {
        let p = path.index(i);
        if ev.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        } else {
            errs.extend(
                env_name_errors(&ev.name, opts)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("name"), ev.name.as_str(), m)),
            );
        }
        errs.extend(validate_env_var_value_from(ev, &p.child("valueFrom")));
    }
    errs
}

fn validate_env_var_value_from(ev: &EnvVar, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(from) = ev.value_from.as_ref() else {
        return errs;
    };
    let mut n = 0;
    if let Some(fr) = from.field_ref.as_ref() {
        n += 1;
        errs.extend(validate_object_field_selector(
            fr,
            ENV_FIELD_PATHS,
            &path.child("fieldRef"),
        ));
    }
    if let Some(rf) = from.resource_field_ref.as_ref() {
        n += 1;
        errs.extend(validate_container_resource_field_selector(
            rf,
            &path.child("resourceFieldRef"),
            false,
        ));
    }
    if let Some(cm) = from.config_map_key_ref.as_ref() {
        n += 1;
        errs.extend(validate_key_selector(
            &cm.name,
            &cm.key,
            &path.child("configMapKeyRef"),
        ));
    }
    if let Some(s) = from.secret_key_ref.as_ref() {
        n += 1;
        errs.extend(validate_key_selector(
            &s.name,
            &s.key,
            &path.child("secretKeyRef"),
        ));
    }
    if n == 0 {
        errs.push(FieldError::invalid(
            path.clone(),
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ));
    } else if !opt(&ev.value).is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            "",
            "may not be specified when `value` is not empty",
        ));
    } else if n > 1 {
        errs.push(FieldError::invalid(
            path.clone(),
            "",
            "may not have more than one field specified at a time",
        ));
    }
    errs
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn validate_key_selector(name: &str, key: &str, path: &Path) -> ErrorList {
    let mut errs: ErrorList = name_is_dns_subdomain(name, false)
        .into_iter()
        .map(|m| FieldError::invalid(path.child("name"), name, m))
        .collect();
    if key.is_empty() {
        errs.push(FieldError::required(path.child("key"), ""));
    } else {
        errs.extend(
            is_config_map_key(key)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("key"), key, m)),
        );
    }
    errs
}

/// `ValidateEnvFrom`: prefix an env var name; exactly one of `configMapRef` and `secretRef`,
/// named by a DNS subdomain (a trailing `-` allowed).
fn validate_env_from(
    vars: &[EnvFromSource],
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, ev) in vars.iter().enumerate() {
        let p = path.index(i);
        let prefix = opt(&ev.prefix);
        if !prefix.is_empty() {
            errs.extend(
                env_name_errors(prefix, opts)
                    .into_iter()
                    .map(|m| FieldError::invalid(p.child("prefix"), prefix, m)),
            );
        }
        let mut n = 0;
        for (src, child) in [
            (
                ev.config_map_ref.as_ref().map(|c| c.name.as_str()),
                "configMapRef",
            ),
            (ev.secret_ref.as_ref().map(|s| s.name.as_str()), "secretRef"),
        ] {
            let Some(name) = src else { continue };
            n += 1;
            let np = p.child(child).child("name");
            if name.is_empty() {
                errs.push(FieldError::required(np, ""));
            } else {
                errs.extend(
                    name_is_dns_subdomain(name, true)
                        .into_iter()
                        .map(|m| FieldError::invalid(np.clone(), name, m)),
                );
            }
        }
        if n == 0 {
            errs.push(FieldError::invalid(
                path.clone(),
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if n > 1 {
            errs.push(FieldError::invalid(
                path.clone(),
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

/// `ValidateVolumeMounts`: a declared volume, a unique mount path, no overlap with volume
/// devices, relative sub-paths without `..` (reported on `volumeMounts.subPath`, without the
/// index, as Kubernetes does), valid mount propagation and recursive read-only.
fn validate_volume_mounts(
    mounts: &[VolumeMount],
    devices: &BTreeMap<&str, &str>,
    volumes: &Volumes,
    c: &Container,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut mount_points: BTreeSet<&str> = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = path.index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if !volumes.contains_key(&m.name) {
            errs.push(FieldError::not_found(p.child("name"), m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(p.child("mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                p.child("mountPath"),
                m.mount_path.as_str(),
                "must be unique",
            ));
        }
        if devices.contains_key(m.name.as_str()) {
            errs.push(FieldError::invalid(
                p.child("name"),
                m.name.as_str(),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.values().any(|d| *d == m.mount_path) {
            errs.push(FieldError::invalid(
                p.child("mountPath"),
                m.mount_path.as_str(),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let (sub, sub_expr) = (opt(&m.sub_path), opt(&m.sub_path_expr));
        if volumes.get(&m.name).is_some_and(|v| v.image) {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    p.child("subPath"),
                    sub,
                    "not allowed in image volume sources",
                ));
            }
            if !sub_expr.is_empty() {
                errs.push(FieldError::invalid(
                    p.child("subPathExpr"),
                    sub_expr,
                    "not allowed in image volume sources",
                ));
            }
        }
        if !sub.is_empty() {
            errs.extend(validate_local_descending_path(sub, &path.child("subPath")));
        }
        if !sub_expr.is_empty() {
            if !sub.is_empty() {
                errs.push(FieldError::invalid(
                    p.child("subPathExpr"),
                    sub_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(validate_local_descending_path(
                sub_expr,
                &path.child("subPathExpr"),
            ));
        }
        if let Some(mp) = m.mount_propagation.as_deref() {
            let pp = path.child("mountPropagation");
            const SUPPORTED: &[&str] = &["Bidirectional", "HostToContainer", "None"];
            if !SUPPORTED.contains(&mp) {
                errs.push(FieldError::not_supported(pp.clone(), mp, SUPPORTED));
            }
            let privileged = c.security_context.as_ref().and_then(|s| s.privileged) == Some(true);
            if mp == "Bidirectional" && !privileged {
                errs.push(FieldError::forbidden(
                    pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = m.recursive_read_only.as_deref() {
            let rp = path.child("recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m.read_only != Some(true) {
                        errs.push(FieldError::forbidden(
                            rp.clone(),
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                        errs.push(FieldError::forbidden(
                            rp,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => errs.push(FieldError::not_supported(
                    rp,
                    other,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
    errs
}

/// `ValidateVolumeDevices`: a declared claim-backed volume, unique names and paths without
/// `..`, no overlap with volume mounts.
fn validate_volume_devices(
    devices: &[VolumeDevice],
    mounts: &BTreeMap<&str, &str>,
    volumes: &Volumes,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut paths: BTreeSet<&str> = BTreeSet::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, d) in devices.iter().enumerate() {
        let p = path.index(i);
        let (name, dev_path) = (d.name.as_str(), d.device_path.as_str());
        let matched = volumes.get(name);
        if name.is_empty() {
            errs.push(FieldError::required(p.child("name"), ""));
        }
        if names.contains(name) {
            errs.push(FieldError::invalid(p.child("name"), name, "must be unique"));
        }
        match matched {
            Some(v) if !v.pvc_like => errs.push(FieldError::invalid(
                p.child("name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )),
            Some(_) => {}
            None => errs.push(FieldError::not_found(p.child("name"), name)),
        }
        if dev_path.is_empty() {
            errs.push(FieldError::required(p.child("devicePath"), ""));
        }
        if paths.contains(dev_path) {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                dev_path,
                "must be unique",
            ));
        }
        if !dev_path.is_empty()
            && !validate_path_no_backsteps(dev_path, &path.child("devicePath")).is_empty()
        {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                dev_path,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(dev_path);
        }
        if mounts.contains_key(name) {
            errs.push(FieldError::invalid(
                p.child("name"),
                name,
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.values().any(|m| *m == dev_path) {
            errs.push(FieldError::invalid(
                p.child("devicePath"),
                dev_path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
    errs
}

/// `validateResizePolicy`: `cpu`/`memory` once each, `NotRequired`/`RestartContainer`, only
/// `NotRequired` when the pod never restarts.
fn validate_resize_policy(c: &Container, path: &Path, pod_restart_policy: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for (i, p) in c.resize_policy.iter().flatten().enumerate() {
        if !seen.insert(p.resource_name.as_str()) {
            errs.push(FieldError::duplicate(
                path.index(i),
                p.resource_name.as_str(),
            ));
        }
        match p.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => errs.push(FieldError::required(path.clone(), "")),
            other => errs.push(FieldError::not_supported(
                path.clone(),
                other,
                &["cpu", "memory"],
            )),
        }
        match p.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(FieldError::required(path.clone(), "")),
            other => errs.push(FieldError::not_supported(
                path.clone(),
                other,
                &["NotRequired", "RestartContainer"],
            )),
        }
        if pod_restart_policy == "Never" && p.restart_policy != "NotRequired" {
            errs.push(FieldError::invalid(
                path.clone(),
                p.restart_policy.as_str(),
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
    errs
}

/// `ValidateSecurityContext` of a container.
fn validate_security_context(
    sc: Option<&SecurityContext>,
    path: &Path,
    host_users: bool,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(sc) = sc else {
        return errs;
    };
    if sc.privileged == Some(true) && !opts.allow_privileged {
        errs.push(FieldError::forbidden(
            path.child("privileged"),
            "disallowed by cluster policy",
        ));
    }
    if let Some(u) = sc.run_as_user {
        errs.extend(
            is_valid_user_id(u)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("runAsUser"), u, m)),
        );
    }
    if let Some(g) = sc.run_as_group {
        errs.extend(
            is_valid_group_id(g)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("runAsGroup"), g, m)),
        );
    }
    if let Some(pm) = sc.proc_mount.as_deref() {
        if pm != "Default" && pm != "Unmasked" {
            errs.push(FieldError::not_supported(
                path.child("procMount"),
                pm,
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(FieldError::invalid(
                path.child("procMount"),
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    errs.extend(validate_seccomp_profile_field(
        sc.seccomp_profile.as_ref(),
        &path.child("seccompProfile"),
    ));
    if sc.allow_privilege_escalation == Some(false) {
        if sc.privileged == Some(true) {
            errs.push(FieldError::invalid(
                path.clone(),
                json!(sc),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        for cap in sc.capabilities.iter().flat_map(|c| c.add.iter().flatten()) {
            if cap == "CAP_SYS_ADMIN" {
                errs.push(FieldError::invalid(
                    path.clone(),
                    json!(sc),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    errs.extend(validate_windows_security_context_options(
        sc.windows_options.as_ref(),
        &path.child("windowsOptions"),
    ));
    errs.extend(validate_app_armor_profile_field(
        sc.app_armor_profile.as_ref(),
        &path.child("appArmorProfile"),
    ));
    errs
}

/// `validateLivenessProbe` / `validateStartupProbe`: a valid probe with `successThreshold` 1.
fn validate_liveness_or_startup_probe(
    probe: Option<&Probe>,
    ctx: &PodContext<'_>,
    path: &Path,
) -> ErrorList {
    let Some(probe) = probe else {
        return ErrorList::new();
    };
    let mut errs = validate_probe(probe, ctx, path);
    let st = probe.success_threshold.unwrap_or(0);
    if st != 1 {
        errs.push(FieldError::invalid(
            path.child("successThreshold"),
            st,
            "must be 1",
        ));
    }
    errs
}

/// `validateReadinessProbe`: a valid probe without `terminationGracePeriodSeconds`.
fn validate_readiness_probe(probe: Option<&Probe>, ctx: &PodContext<'_>, path: &Path) -> ErrorList {
    let Some(probe) = probe else {
        return ErrorList::new();
    };
    let mut errs = validate_probe(probe, ctx, path);
    if let Some(t) = probe.termination_grace_period_seconds {
        errs.push(FieldError::invalid(
            path.child("terminationGracePeriodSeconds"),
            t,
            "must not be set for readinessProbes",
        ));
    }
    errs
}

fn validate_probe(probe: &Probe, ctx: &PodContext<'_>, path: &Path) -> ErrorList {
    let handler = Handler {
        exec: probe
            .exec
            .as_ref()
            .map(|e| e.command.as_deref().unwrap_or_default()),
        http_get: probe.http_get.as_ref(),
        tcp_socket: probe.tcp_socket.as_ref().map(|t| &t.port),
        grpc: probe.grpc.as_ref().map(|g| g.port),
        sleep: None,
    };
    let mut errs = validate_handler(&handler, ctx, path);
    for (v, name) in [
        (probe.initial_delay_seconds, "initialDelaySeconds"),
        (probe.timeout_seconds, "timeoutSeconds"),
        (probe.period_seconds, "periodSeconds"),
        (probe.success_threshold, "successThreshold"),
        (probe.failure_threshold, "failureThreshold"),
    ] {
        let v = v.unwrap_or(0);
        if v < 0 {
            errs.push(FieldError::invalid(
                path.child(name),
                v,
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(t) = probe.termination_grace_period_seconds
        && t <= 0
    {
        errs.push(FieldError::invalid(
            path.child("terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
    errs
}

/// Go's `commonHandler`.
struct Handler<'a> {
    exec: Option<&'a [String]>,
    http_get: Option<&'a k8s_openapi::api::core::v1::HTTPGetAction>,
    tcp_socket: Option<&'a IntOrString>,
    grpc: Option<i32>,
    sleep: Option<i64>,
}

fn lifecycle_handler(h: &LifecycleHandler) -> Handler<'_> {
    Handler {
        exec: h
            .exec
            .as_ref()
            .map(|e| e.command.as_deref().unwrap_or_default()),
        http_get: h.http_get.as_ref(),
        tcp_socket: h.tcp_socket.as_ref().map(|t| &t.port),
        grpc: None,
        sleep: h.sleep.as_ref().map(|s| s.seconds),
    }
}

fn validate_lifecycle(l: &Lifecycle, ctx: &PodContext<'_>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(h) = l.post_start.as_ref() {
        errs.extend(validate_handler(
            &lifecycle_handler(h),
            ctx,
            &path.child("postStart"),
        ));
    }
    if let Some(h) = l.pre_stop.as_ref() {
        errs.extend(validate_handler(
            &lifecycle_handler(h),
            ctx,
            &path.child("preStop"),
        ));
    }
    errs
}

/// `ValidatePortNumOrName`.
fn validate_port_num_or_name(port: &IntOrString, path: &Path) -> ErrorList {
    match port {
        IntOrString::Int(n) => is_valid_port_num(i64::from(*n))
            .into_iter()
            .map(|m| FieldError::invalid(path.clone(), *n, m))
            .collect(),
        IntOrString::String(s) => is_valid_port_name(s)
            .into_iter()
            .map(|m| FieldError::invalid(path.clone(), s.as_str(), m))
            .collect(),
    }
}

/// `validateHandler`: exactly one of exec, httpGet, tcpSocket, grpc and sleep, each valid.
fn validate_handler(h: &Handler<'_>, ctx: &PodContext<'_>, path: &Path) -> ErrorList {
    const MORE: &str = "may not specify more than 1 handler type";
    let mut errs = ErrorList::new();
    let mut n = 0;
    if let Some(cmd) = h.exec {
        n += 1;
        if cmd.is_empty() {
            errs.push(FieldError::required(
                path.child("exec").child("command"),
                "",
            ));
        }
    }
    if let Some(g) = h.http_get {
        let p = path.child("httpGet");
        if n > 0 {
            errs.push(FieldError::forbidden(p, MORE));
        } else {
            n += 1;
            if opt(&g.path).is_empty() {
                errs.push(FieldError::required(p.child("path"), ""));
            }
            errs.extend(validate_port_num_or_name(&g.port, &p.child("port")));
            let scheme = opt(&g.scheme);
            if scheme != "HTTP" && scheme != "HTTPS" {
                errs.push(FieldError::not_supported(
                    p.child("scheme"),
                    scheme,
                    &["HTTP", "HTTPS"],
                ));
            }
            for header in g.http_headers.iter().flatten() {
                errs.extend(
                    is_http_header_name(&header.name).into_iter().map(|m| {
                        FieldError::invalid(p.child("httpHeaders"), header.name.as_str(), m)
                    }),
                );
            }
        }
    }
    if let Some(port) = h.tcp_socket {
        let p = path.child("tcpSocket");
        if n > 0 {
            errs.push(FieldError::forbidden(p, MORE));
        } else {
            n += 1;
            errs.extend(validate_port_num_or_name(port, &p.child("port")));
        }
    }
    if let Some(port) = h.grpc {
        let p = path.child("grpc");
        if n > 0 {
            errs.push(FieldError::forbidden(p, MORE));
        } else {
            n += 1;
            errs.extend(validate_port_num_or_name(
                &IntOrString::Int(port),
                &p.child("port"),
            ));
        }
    }
    if let Some(secs) = h.sleep {
        let p = path.child("sleep");
        if n > 0 {
            errs.push(FieldError::forbidden(p, MORE));
        } else {
            n += 1;
            if let Some(grace) = ctx.grace_period {
                if ctx.opts.allow_pod_lifecycle_sleep_action_zero_value {
                    if secs < 0 || secs > grace {
                        errs.push(FieldError::invalid(p, secs, format!("must be non-negative and less than terminationGracePeriodSeconds ({grace})")));
                    }
                } else if secs <= 0 || secs > grace {
                    errs.push(FieldError::invalid(p, secs, format!("must be greater than 0 and less than terminationGracePeriodSeconds ({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.")));
                }
            }
        }
    }
    if n == 0 {
        errs.push(FieldError::required(
            path.clone(),
            "must specify a handler type",
        ));
    }
    errs
}

/// `AccumulateUniqueHostPorts`: `<protocol>/<hostIP>/<hostPort>` must be unique.
fn check_host_port_conflicts<'a>(
    containers: impl Iterator<Item = &'a Container>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (ci, c) in containers.enumerate() {
        for (pi, port) in c.ports.iter().flatten().enumerate() {
            let hp = port.host_port.unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!("{}/{}/{}", opt(&port.protocol), opt(&port.host_ip), hp);
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    path.index(ci).child("ports").index(pi).child("hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

/// OpenKruise v1.9.0's EphemeralJob check of `spec.template.ephemeralContainers`
/// (`pkg/webhook/ephemeraljob/validating/validation.go`, `validateEphemeralContainers`, errors
/// under `path`, OpenKruise passes `ephemeralContainers`): its own `validateContainerCommon`
/// (name a DNS-1123 label, image required, termination message policy, ports, env, envFrom,
/// pull policy required, security context with `hostUsers` true — no volume mount, device or
/// resource checks), no surrounding whitespace in the image, unique names, none of the fields
/// outside OpenKruise's allow-list (`ports`, `resources`, `resizePolicy`, `restartPolicy`, the
/// probes and `lifecycle`; set means non-nil, as Go's `reflect.DeepEqual` with the zero value),
/// and no `subPath` / `subPathExpr` in volume mounts. The target container is not checked.
pub fn validate_ephemeral_job_containers(
    ephemeral: &[EphemeralContainer],
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    const FORBIDDEN: &str = "cannot be set for an Ephemeral Container";
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for (i, ec) in ephemeral.iter().enumerate() {
        let p = path.index(i);
        let np = p.child("name");
        if ec.name.is_empty() {
            errs.push(FieldError::required(np, ""));
        } else {
            errs.extend(
                is_dns1123_label(&ec.name)
                    .into_iter()
                    .map(|m| FieldError::invalid(np.clone(), ec.name.as_str(), m)),
            );
        }
        let image = opt(&ec.image);
        if image.is_empty() {
            errs.push(FieldError::required(p.child("image"), ""));
        }
        match opt(&ec.termination_message_policy) {
            "File" | "FallbackToLogsOnError" => {}
            "" => errs.push(FieldError::required(
                p.child("terminationMessagePolicy"),
                "",
            )),
            other => errs.push(FieldError::not_supported(
                p.child("terminationMessagePolicy"),
                other,
                &["File", "FallbackToLogsOnError"],
            )),
        }
        errs.extend(validate_container_ports(
            ec.ports.as_deref().unwrap_or_default(),
            &p.child("ports"),
        ));
        errs.extend(validate_env(
            ec.env.as_deref().unwrap_or_default(),
            &p.child("env"),
            opts,
        ));
        errs.extend(validate_env_from(
            ec.env_from.as_deref().unwrap_or_default(),
            &p.child("envFrom"),
            opts,
        ));
        errs.extend(validate_pull_policy(
            opt(&ec.image_pull_policy),
            &p.child("imagePullPolicy"),
        ));
        errs.extend(validate_security_context(
            ec.security_context.as_ref(),
            &p.child("securityContext"),
            true,
            opts,
        ));
        if image.len() != image.trim().len() {
            errs.push(FieldError::invalid(
                p.child("image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        if !names.insert(ec.name.as_str()) {
            errs.push(FieldError::duplicate(p.child("name"), ec.name.as_str()));
        }
        let resources_set = ec
            .resources
            .as_ref()
            .is_some_and(|r| r.limits.is_some() || r.requests.is_some() || r.claims.is_some());
        for (field, set) in [
            ("ports", ec.ports.is_some()),
            ("resources", resources_set),
            ("resizePolicy", ec.resize_policy.is_some()),
            ("restartPolicy", ec.restart_policy.is_some()),
            ("livenessProbe", ec.liveness_probe.is_some()),
            ("readinessProbe", ec.readiness_probe.is_some()),
            ("startupProbe", ec.startup_probe.is_some()),
            ("lifecycle", ec.lifecycle.is_some()),
        ] {
            if set {
                errs.push(FieldError::forbidden(p.child(field), FORBIDDEN));
            }
        }
        for (j, vm) in ec.volume_mounts.iter().flatten().enumerate() {
            let mp = p.child("volumeMounts").index(j);
            if !opt(&vm.sub_path).is_empty() {
                errs.push(FieldError::forbidden(mp.child("subPath"), FORBIDDEN));
            }
            if !opt(&vm.sub_path_expr).is_empty() {
                errs.push(FieldError::forbidden(mp.child("subPathExpr"), FORBIDDEN));
            }
        }
    }
    errs
}
