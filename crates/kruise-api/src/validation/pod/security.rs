//! Security rules of `ValidatePodSpec` and `ValidatePodTemplateSpec`: pod security context
//! (ids, sysctls, fsGroup policy, seccomp, AppArmor, Windows options), and the deprecated
//! seccomp/AppArmor annotations and their agreement with the fields. Kubernetes v1.32.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    AppArmorProfile, Container, PodSecurityContext, PodSpec, SeccompProfile,
    WindowsSecurityContextOptions,
};
use serde_json::json;

use super::super::field::{ErrorList, FieldError, Path};
use super::super::names::{is_dns1123_subdomain, is_valid_group_id, is_valid_user_id};
use super::volumes::validate_local_descending_path;
use super::{PodValidationOptions, opt};

/// `validateSeccompProfileField`.
pub(crate) fn validate_seccomp_profile_field(
    sp: Option<&SeccompProfile>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(sp) = sp else {
        return errs;
    };
    let tp = path.child("type");
    match sp.type_.as_str() {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            tp,
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            tp,
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    if sp.type_ == "Localhost" {
        match sp.localhost_profile.as_deref() {
            None => errs.push(FieldError::required(
                path.child("localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(p) => errs.extend(validate_local_descending_path(
                p,
                &path.child("localhostProfile"),
            )),
        }
    } else if sp.localhost_profile.is_some() {
        errs.push(FieldError::invalid(
            path.child("localhostProfile"),
            json!(sp),
            "can only be set when seccomp type is Localhost",
        ));
    }
    errs
}

/// `ValidateAppArmorProfileField`.
pub(crate) fn validate_app_armor_profile_field(
    p: Option<&AppArmorProfile>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(p) = p else {
        return errs;
    };
    let lp = path.child("localhostProfile");
    match p.type_.as_str() {
        "Localhost" => match p.localhost_profile.as_deref() {
            None => errs.push(FieldError::required(
                lp,
                "must be set when AppArmor type is Localhost",
            )),
            Some(profile) => {
                let trimmed = profile.trim();
                if trimmed != profile {
                    errs.push(FieldError::invalid(
                        lp.clone(),
                        profile,
                        "must not be padded with whitespace",
                    ));
                } else if trimmed.is_empty() {
                    errs.push(FieldError::required(
                        lp.clone(),
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if profile.len() > 4095 {
                    errs.push(FieldError::too_long(lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(profile) = p.localhost_profile.as_deref() {
                errs.push(FieldError::invalid(
                    lp,
                    profile,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            path.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    errs
}

/// Matches `^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$` (a NetBIOS domain).
fn is_netbios_domain(d: &str) -> bool {
    let bad = |c: char| "\\/:*?\"<>|".contains(c);
    let n = d.chars().count();
    (1..=15).contains(&n) && d.chars().all(|c| !bad(c)) && !d.starts_with('.')
}

/// Matches a DNS name of labels `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?` joined by `.`.
fn is_windows_dns_domain(d: &str) -> bool {
    d.split('.').all(|l| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// `validateWindowsSecurityContextOptions`.
pub(crate) fn validate_windows_security_context_options(
    w: Option<&WindowsSecurityContextOptions>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(w) = w else {
        return errs;
    };
    if let Some(name) = w.gmsa_credential_spec_name.as_deref() {
        errs.extend(
            is_dns1123_subdomain(name)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("gmsaCredentialSpecName"), name, m)),
        );
    }
    if let Some(spec) = w.gmsa_credential_spec.as_deref() {
        let p = path.child("gmsaCredentialSpec");
        if spec.is_empty() {
            errs.push(FieldError::invalid(
                p,
                spec,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if spec.len() > 64 * 1024 {
            errs.push(FieldError::invalid(
                p,
                spec,
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    if let Some(user) = w.run_as_user_name.as_deref() {
        let p = path.child("runAsUserName");
        let parts: Vec<&str> = user.split('\\').collect();
        if user.is_empty() {
            errs.push(FieldError::invalid(
                p,
                user,
                "runAsUserName cannot be an empty string",
            ));
        } else if user.chars().any(|c| c.is_ascii_control()) {
            errs.push(FieldError::invalid(
                p,
                user,
                "runAsUserName cannot contain control characters",
            ));
        } else if parts.len() > 2 {
            errs.push(FieldError::invalid(
                p,
                user,
                "runAsUserName cannot contain more than one backslash",
            ));
        } else {
            let (has_domain, domain, name) = match parts.as_slice() {
                [u] => (false, "", *u),
                [d, u] => (true, *d, *u),
                _ => unreachable!("at most two parts"),
            };
            if domain.len() >= 256 {
                errs.push(FieldError::invalid(
                    p.clone(),
                    user,
                    "runAsUserName's Domain length must be under 256 characters",
                ));
            }
            if has_domain && !(is_netbios_domain(domain) || is_windows_dns_domain(domain)) {
                errs.push(FieldError::invalid(
                    p.clone(),
                    user,
                    "runAsUserName's Domain doesn't match the NetBios nor the DNS format",
                ));
            }
            if name.is_empty() {
                errs.push(FieldError::invalid(
                    p.clone(),
                    user,
                    "runAsUserName's User cannot be empty",
                ));
            } else if name.len() > 104 {
                errs.push(FieldError::invalid(
                    p.clone(),
                    user,
                    "runAsUserName's User length must not be longer than 104 characters",
                ));
            }
            if !name.is_empty() && name.chars().all(|c| c == '.' || c == ' ') {
                errs.push(FieldError::invalid(
                    p.clone(),
                    user,
                    "runAsUserName's User cannot contain only periods or spaces",
                ));
            }
            if name.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
                errs.push(FieldError::invalid(p, user, "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"));
            }
        }
    }
    errs
}

/// The regular expression sysctl names must match (as Kubernetes prints it).
const SYSCTL_REGEX: &str =
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// `IsValidSysctlName`: segments `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`, at most
/// 253 characters.
pub fn is_valid_sysctl_name(name: &str) -> bool {
    let seg = |s: &str| {
        let b = s.as_bytes();
        let lower = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && lower(b[0])
            && lower(b[b.len() - 1])
            && b.iter().all(|c| lower(*c) || *c == b'-' || *c == b'_')
    };
    name.len() <= 253 && name.split(['.', '/']).all(seg)
}

/// The kernel namespace of a sysctl (`utilsysctl.GetNamespace`): `Net`, `IPC` or none.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    // NormalizeName: `a/b.c` → `a.b/c` when the first separator is `/`.
    let normalized: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_owned(),
    };
    let val = match normalized.find('*') {
        Some(i) => &normalized[..i],
        None => normalized.as_str(),
    };
    const IPC_NAMES: &[&str] = &[
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if IPC_NAMES.contains(&val) {
        return Some("IPC");
    }
    if val.starts_with("net.") {
        return Some("Net");
    }
    if val.starts_with("fs.mqueue.") {
        return Some("IPC");
    }
    None
}

/// `validatePodSpecSecurityContext` (the host namespaces are the pod spec's `hostNetwork`,
/// `hostPID`, `hostIPC`, which Kubernetes' internal type keeps in the security context).
pub(crate) fn validate_pod_security_context(
    spec: &PodSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    // Kubernetes' internal pod spec always has a security context (it holds the host
    // namespaces).
    let empty = PodSecurityContext::default();
    let sc = spec.security_context.as_ref().unwrap_or(&empty);
    if let Some(g) = sc.fs_group {
        errs.extend(
            is_valid_group_id(g)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("fsGroup"), g, m)),
        );
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
    for (i, g) in sc.supplemental_groups.iter().flatten().enumerate() {
        errs.extend(
            is_valid_group_id(*g)
                .into_iter()
                .map(|m| FieldError::invalid(path.child("supplementalGroups").index(i), *g, m)),
        );
    }
    let host_pid = spec.host_pid == Some(true);
    if spec.share_process_namespace == Some(true) && host_pid {
        errs.push(FieldError::invalid(
            path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    if sc.sysctls.as_ref().is_some_and(|s| !s.is_empty()) {
        errs.extend(validate_sysctls(spec, sc, &path.child("sysctls"), opts));
    }
    if let Some(p) = sc.fs_group_change_policy.as_deref()
        && p != "Always"
        && p != "OnRootMismatch"
    {
        errs.push(FieldError::not_supported(
            path.child("fsGroupChangePolicy"),
            p,
            &["Always", "OnRootMismatch"],
        ));
    }
    errs.extend(validate_seccomp_profile_field(
        sc.seccomp_profile.as_ref(),
        &path.child("seccompProfile"),
    ));
    errs.extend(validate_windows_security_context_options(
        sc.windows_options.as_ref(),
        &path.child("windowsOptions"),
    ));
    errs.extend(validate_app_armor_profile_field(
        sc.app_armor_profile.as_ref(),
        &path.child("appArmorProfile"),
    ));
    if let Some(p) = sc.supplemental_groups_policy.as_deref()
        && p != "Merge"
        && p != "Strict"
    {
        errs.push(FieldError::not_supported(
            path.child("supplementalGroupsPolicy"),
            p,
            &["Merge", "Strict"],
        ));
    }
    if let Some(p) = sc.se_linux_change_policy.as_deref() {
        let pp = path.child("seLinuxChangePolicy");
        if opts.allow_only_recursive_selinux_change_policy {
            if p != "Recursive" {
                errs.push(FieldError::not_supported(pp, p, &["Recursive"]));
            }
        } else if p != "MountOption" && p != "Recursive" {
            errs.push(FieldError::not_supported(
                pp,
                p,
                &["MountOption", "Recursive"],
            ));
        }
    }
    errs
}

fn validate_sysctls(
    spec: &PodSpec,
    sc: &PodSecurityContext,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeMap<&str, ()> = BTreeMap::new();
    for (i, s) in sc.sysctls.iter().flatten().enumerate() {
        let np = path.index(i).child("name");
        if s.name.is_empty() {
            errs.push(FieldError::required(np.clone(), ""));
        } else if !is_valid_sysctl_name(&s.name) {
            errs.push(FieldError::invalid(
                np.clone(),
                s.name.as_str(),
                format!("must have at most 253 characters and match regex {SYSCTL_REGEX}"),
            ));
        } else if names.contains_key(s.name.as_str()) {
            errs.push(FieldError::duplicate(np.clone(), s.name.as_str()));
        }
        if !opts.allow_namespaced_sysctls_for_host_net_and_host_ipc {
            match sysctl_namespace(&s.name) {
                Some("Net") if spec.host_network == Some(true) => errs.push(FieldError::invalid(
                    np,
                    s.name.as_str(),
                    "may not be specified when 'hostNetwork' is true",
                )),
                Some("IPC") if spec.host_ipc == Some(true) => errs.push(FieldError::invalid(
                    np,
                    s.name.as_str(),
                    "may not be specified when 'hostIPC' is true",
                )),
                _ => {}
            }
        }
        names.insert(s.name.as_str(), ());
    }
    errs
}

const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER_ANNOTATION_PREFIX: &str =
    "container.apparmor.security.beta.kubernetes.io/";

/// `ValidateSeccompProfile` of an annotation value.
fn validate_seccomp_annotation_value(p: &str, path: &Path) -> ErrorList {
    match p {
        "runtime/default" | "docker/default" | "unconfined" => ErrorList::new(),
        _ => match p.strip_prefix("localhost/") {
            Some(rest) => validate_local_descending_path(rest, path),
            None => vec![FieldError::invalid(
                path.clone(),
                p,
                "must be a valid seccomp profile",
            )],
        },
    }
}

/// Every container of the spec with its path (`VisitContainersWithPath`: init, regular,
/// ephemeral).
pub(crate) fn visit_containers(spec: &PodSpec, path: &Path) -> Vec<(Container, Path)> {
    let mut out = Vec::new();
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        out.push((c.clone(), path.child("initContainers").index(i)));
    }
    for (i, c) in spec.containers.iter().enumerate() {
        out.push((c.clone(), path.child("containers").index(i)));
    }
    for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
        out.push((
            super::containers::ephemeral_as_container(c),
            path.child("ephemeralContainers").index(i),
        ));
    }
    out
}

/// The pod-specific annotation rules (`ValidatePodSpecificAnnotations` without the deletion
/// cost, which OpenKruise allows to be anything): the mirror-pod annotation needs a node name,
/// the tolerations annotation must hold valid tolerations, seccomp annotations hold valid
/// profiles, AppArmor annotations name a container and hold a valid profile.
pub(crate) fn validate_pod_specific_annotations(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(v) = annotations.get("kubernetes.io/config.mirror")
        && opt(&spec.node_name).is_empty()
    {
        errs.push(FieldError::invalid(
            path.key("kubernetes.io/config.mirror"),
            v.as_str(),
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    const TOLERATIONS: &str = "scheduler.alpha.kubernetes.io/tolerations";
    if let Some(v) = annotations.get(TOLERATIONS).filter(|v| !v.is_empty()) {
        match serde_json::from_str::<Vec<k8s_openapi::api::core::v1::Toleration>>(v) {
            Err(e) => errs.push(FieldError::invalid(
                path.clone(),
                TOLERATIONS,
                e.to_string(),
            )),
            Ok(t) if !t.is_empty() => {
                errs.extend(super::scheduling::validate_tolerations(
                    &t,
                    &path.child(TOLERATIONS),
                ));
            }
            Ok(_) => {}
        }
    }
    if !opts.allow_invalid_pod_deletion_cost
        && let Some(v) = annotations.get("controller.kubernetes.io/pod-deletion-cost")
        && v.parse::<i32>().is_err()
    {
        errs.push(FieldError::invalid(
            path.key("controller.kubernetes.io/pod-deletion-cost"),
            v.as_str(),
            "must be a 32bit integer",
        ));
    }
    if let Some(p) = annotations.get(SECCOMP_POD_ANNOTATION) {
        errs.extend(validate_seccomp_annotation_value(
            p,
            &path.child(SECCOMP_POD_ANNOTATION),
        ));
    }
    for (k, p) in annotations {
        if k.starts_with(SECCOMP_CONTAINER_ANNOTATION_PREFIX) {
            errs.extend(validate_seccomp_annotation_value(p, &path.child(k)));
        }
    }
    let containers = visit_containers(spec, &Path::new("spec"));
    for (k, p) in annotations {
        let Some(name) = k.strip_prefix(APPARMOR_CONTAINER_ANNOTATION_PREFIX) else {
            continue;
        };
        if !containers.iter().any(|(c, _)| c.name == name) {
            errs.push(FieldError::invalid(
                path.key(k),
                name,
                "container not found",
            ));
        }
        let ok = p.is_empty()
            || p == "runtime/default"
            || p == "unconfined"
            || p.starts_with("localhost/");
        if !ok {
            errs.push(FieldError::invalid(
                path.key(k),
                p.as_str(),
                format!("invalid AppArmor profile name: {p:?}"),
            ));
        }
    }
    errs
}

/// `validateSeccompAnnotationsAndFields` and `validateAppArmorAnnotationsAndFieldsMatchOnCreate`:
/// where both a deprecated annotation and the field are set, they must agree.
pub(crate) fn validate_annotations_match_fields(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    spec_path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let pod_sc = spec.security_context.as_ref();
    let seccomp_match = |annotation: &str, field: &SeccompProfile, p: Path| -> Option<FieldError> {
        match field.type_.as_str() {
            "Unconfined" if annotation != "unconfined" => Some(FieldError::forbidden(
                p.child("type"),
                "seccomp type in annotation and field must match",
            )),
            "RuntimeDefault"
                if annotation != "runtime/default" && annotation != "docker/default" =>
            {
                Some(FieldError::forbidden(
                    p.child("type"),
                    "seccomp type in annotation and field must match",
                ))
            }
            "Localhost" => match annotation.strip_prefix("localhost/") {
                None => Some(FieldError::forbidden(
                    p.child("type"),
                    "seccomp type in annotation and field must match",
                )),
                Some(rest) if field.localhost_profile.as_deref() != Some(rest) => {
                    Some(FieldError::forbidden(
                        p.child("localhostProfile"),
                        "seccomp profile in annotation and field must match",
                    ))
                }
                Some(_) => None,
            },
            _ => None,
        }
    };
    if let Some(f) = pod_sc.and_then(|s| s.seccomp_profile.as_ref())
        && let Some(a) = annotations.get(SECCOMP_POD_ANNOTATION)
    {
        errs.extend(seccomp_match(
            a,
            f,
            spec_path.child("securityContext").child("seccompProfile"),
        ));
    }
    let containers = visit_containers(spec, spec_path);
    for (c, cp) in &containers {
        let Some(f) = c
            .security_context
            .as_ref()
            .and_then(|s| s.seccomp_profile.as_ref())
        else {
            continue;
        };
        if let Some(a) =
            annotations.get(&format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", c.name))
        {
            errs.extend(seccomp_match(
                a,
                f,
                cp.child("securityContext").child("seccompProfile"),
            ));
        }
    }
    if spec.os.as_ref().is_some_and(|o| o.name == "windows") {
        return errs;
    }
    let pod_profile = pod_sc.and_then(|s| s.app_armor_profile.as_ref());
    for (c, cp) in &containers {
        let profile = c
            .security_context
            .as_ref()
            .and_then(|s| s.app_armor_profile.as_ref())
            .or(pod_profile);
        let Some(profile) = profile else { continue };
        let Some(a) = annotations.get(&format!("{APPARMOR_CONTAINER_ANNOTATION_PREFIX}{}", c.name))
        else {
            continue;
        };
        let ap = cp.child("securityContext").child("appArmorProfile");
        const TYPE_MSG: &str = "apparmor type in annotation and field must match";
        match profile.type_.as_str() {
            "Unconfined" if a != "unconfined" => {
                errs.push(FieldError::forbidden(ap.child("type"), TYPE_MSG))
            }
            "RuntimeDefault" if a != "runtime/default" => {
                errs.push(FieldError::forbidden(ap.child("type"), TYPE_MSG))
            }
            "Localhost" => match a.strip_prefix("localhost/") {
                None => errs.push(FieldError::forbidden(ap.child("type"), TYPE_MSG)),
                Some(rest) if profile.localhost_profile.as_deref() != Some(rest) => {
                    errs.push(FieldError::forbidden(
                        ap.child("localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    ))
                }
                Some(_) => {}
            },
            _ => {}
        }
    }
    errs
}

/// `validateWindowsHostProcessPod`: host-process settings of pod and containers agree; if any
/// container is a host process, all are and the pod uses the host network.
pub(crate) fn validate_windows_host_process_pod(
    spec: &PodSpec,
    path: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let pod_hp = spec
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process);
    let host_network = spec.host_network == Some(true);
    let (mut count, mut hp_count) = (0, 0);
    for (c, cp) in visit_containers(spec, path) {
        count += 1;
        let c_hp = c
            .security_context
            .as_ref()
            .and_then(|s| s.windows_options.as_ref())
            .and_then(|w| w.host_process);
        if let (Some(p), Some(ch)) = (pod_hp, c_hp)
            && p != ch
        {
            errs.push(FieldError::invalid(
                cp.children(&["securityContext", "windowsOptions", "hostProcess"]),
                ch,
                format!("pod hostProcess value must be identical if both are specified, was {p}"),
            ));
        }
        if c_hp == Some(true) || (c_hp.is_none() && pod_hp == Some(true)) {
            hp_count += 1;
        }
    }
    if hp_count > 0 {
        if hp_count != count {
            errs.push(FieldError::invalid(
                path.clone(),
                "",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !host_network {
            errs.push(FieldError::invalid(
                path.child("hostNetwork"),
                host_network,
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
        if !opts.allow_privileged {
            errs.push(FieldError::forbidden(
                path.clone(),
                "hostProcess containers are disallowed by cluster policy",
            ));
        }
    }
    errs
}
