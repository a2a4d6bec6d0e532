//! Pod-template defaults that OpenKruise's mutating webhooks inject into workload templates
//! (CloneSet, Advanced StatefulSet, UnitedDeployment, ...) unless the `TemplateNoDefaults` gate
//! is on. They are the Kubernetes v1 defaults of the embedded types (as of the Kubernetes 1.32
//! libraries OpenKruise v1.9.0 is built with), with one OpenKruise twist: regular containers
//! default `imagePullPolicy` to `Always` (so that an in-place image change always pulls),
//! while init containers get the usual tag-based default.
//!
//! Not reproduced: canonicalization of resource quantities (Go rounds them up to milli scale
//! and re-serializes them in canonical form, e.g. `1000m` → `1`); the quantity strings are kept
//! as written. Port defaulting for `hostNetwork` pods (gate
//! `DefaultHostNetworkHostPortsInPodTemplates`, off by default) is not applied.

use k8s_openapi::api::core::v1::{
    Container, EphemeralContainer, HTTPGetAction, PersistentVolumeClaim, PodSecurityContext,
    PodSpec, Probe, Volume,
};

/// Default `terminationGracePeriodSeconds` (seconds).
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;
/// Default file mode of secret/configMap/downwardAPI/projected volumes (0644 octal).
pub const DEFAULT_VOLUME_MODE: i32 = 0o644;

/// Applies the pod-spec defaults described in the module documentation. Idempotent.
pub fn set_defaults_pod_spec(spec: &mut PodSpec) {
    if spec.dns_policy.as_deref().unwrap_or("").is_empty() {
        spec.dns_policy = Some("ClusterFirst".into());
    }
    if spec.restart_policy.as_deref().unwrap_or("").is_empty() {
        spec.restart_policy = Some("Always".into());
    }
    if spec.security_context.is_none() {
        spec.security_context = Some(PodSecurityContext::default());
    }
    if spec.termination_grace_period_seconds.is_none() {
        spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    }
    if spec.scheduler_name.as_deref().unwrap_or("").is_empty() {
        spec.scheduler_name = Some("default-scheduler".into());
    }
    if let Some(volumes) = spec.volumes.as_mut() {
        volumes.iter_mut().for_each(set_defaults_volume);
    }
    for c in spec.init_containers.iter_mut().flatten() {
        set_defaults_container(c, false);
    }
    for c in &mut spec.containers {
        set_defaults_container(c, true);
    }
    for c in spec.ephemeral_containers.iter_mut().flatten() {
        set_defaults_ephemeral_container(c);
    }
}

/// `imagePullPolicy` Kubernetes picks for an image: `Always` for the `latest` tag or no tag,
/// `IfNotPresent` otherwise (a digest without tag counts as "no tag" only when no digest is
/// given — Kubernetes treats `name@sha256:...` as untagged but not latest).
pub fn default_image_pull_policy(image: &str) -> &'static str {
    match image_tag(image) {
        ImageTag::Latest => "Always",
        ImageTag::Other => "IfNotPresent",
    }
}

enum ImageTag {
    Latest,
    Other,
}

fn image_tag(image: &str) -> ImageTag {
    // Strip a digest; an image pinned by digest has no implicit `latest`.
    let (name, has_digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    // The tag is after the last ':' that comes after the last '/' (a registry port is not a tag).
    let last_segment = name.rsplit('/').next().unwrap_or(name);
    match last_segment.rsplit_once(':') {
        Some((_, "latest")) => ImageTag::Latest,
        Some(_) => ImageTag::Other,
        None if has_digest => ImageTag::Other,
        None => ImageTag::Latest,
    }
}

fn set_defaults_container(c: &mut Container, regular: bool) {
    if c.image_pull_policy.as_deref().unwrap_or("").is_empty() {
        let policy = if regular {
            "Always"
        } else {
            default_image_pull_policy(c.image.as_deref().unwrap_or(""))
        };
        c.image_pull_policy = Some(policy.into());
    }
    if c.termination_message_path
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        c.termination_message_path = Some("/dev/termination-log".into());
    }
    if c.termination_message_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        c.termination_message_policy = Some("File".into());
    }
    for p in c.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".into());
        }
    }
    for e in c.env.iter_mut().flatten() {
        if let Some(f) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut())
            && f.api_version.as_deref().unwrap_or("").is_empty()
        {
            f.api_version = Some("v1".into());
        }
    }
    for probe in [
        c.liveness_probe.as_mut(),
        c.readiness_probe.as_mut(),
        c.startup_probe.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        set_defaults_probe(probe);
    }
    if let Some(l) = c.lifecycle.as_mut() {
        for h in [l.post_start.as_mut(), l.pre_stop.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(g) = h.http_get.as_mut() {
                set_defaults_http_get(g);
            }
        }
    }
}

fn set_defaults_ephemeral_container(c: &mut EphemeralContainer) {
    // OpenKruise defaults ports, env field refs, probes and lifecycle of ephemeral containers,
    // but not their pull policy or termination message settings.
    for p in c.ports.iter_mut().flatten() {
        if p.protocol.as_deref().unwrap_or("").is_empty() {
            p.protocol = Some("TCP".into());
        }
    }
    for e in c.env.iter_mut().flatten() {
        if let Some(f) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut())
            && f.api_version.as_deref().unwrap_or("").is_empty()
        {
            f.api_version = Some("v1".into());
        }
    }
    for probe in [
        c.liveness_probe.as_mut(),
        c.readiness_probe.as_mut(),
        c.startup_probe.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        set_defaults_probe(probe);
    }
    if let Some(l) = c.lifecycle.as_mut() {
        for h in [l.post_start.as_mut(), l.pre_stop.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(g) = h.http_get.as_mut() {
                set_defaults_http_get(g);
            }
        }
    }
}

fn set_defaults_probe(p: &mut Probe) {
    for (field, default) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if field.unwrap_or(0) == 0 {
            *field = Some(default);
        }
    }
    if let Some(g) = p.http_get.as_mut() {
        set_defaults_http_get(g);
    }
}

fn set_defaults_http_get(g: &mut HTTPGetAction) {
    if g.path.as_deref().unwrap_or("").is_empty() {
        g.path = Some("/".into());
    }
    if g.scheme.as_deref().unwrap_or("").is_empty() {
        g.scheme = Some("HTTP".into());
    }
}

fn set_defaults_volume(v: &mut Volume) {
    let has_source = {
        let mut probe = serde_json::to_value(&*v).unwrap_or_default();
        if let Some(o) = probe.as_object_mut() {
            o.remove("name");
        }
        probe.as_object().is_some_and(|o| !o.is_empty())
    };
    if !has_source {
        v.empty_dir = Some(Default::default());
    }
    if let Some(h) = v.host_path.as_mut()
        && h.type_.is_none()
    {
        h.type_ = Some(String::new());
    }
    if let Some(s) = v.secret.as_mut()
        && s.default_mode.is_none()
    {
        s.default_mode = Some(DEFAULT_VOLUME_MODE);
    }
    if let Some(c) = v.config_map.as_mut()
        && c.default_mode.is_none()
    {
        c.default_mode = Some(DEFAULT_VOLUME_MODE);
    }
    if let Some(d) = v.downward_api.as_mut() {
        if d.default_mode.is_none() {
            d.default_mode = Some(DEFAULT_VOLUME_MODE);
        }
        for item in d.items.iter_mut().flatten() {
            if let Some(f) = item.field_ref.as_mut()
                && f.api_version.as_deref().unwrap_or("").is_empty()
            {
                f.api_version = Some("v1".into());
            }
        }
    }
    if let Some(p) = v.projected.as_mut() {
        if p.default_mode.is_none() {
            p.default_mode = Some(DEFAULT_VOLUME_MODE);
        }
        for src in p.sources.iter_mut().flatten() {
            if let Some(d) = src.downward_api.as_mut() {
                for item in d.items.iter_mut().flatten() {
                    if let Some(f) = item.field_ref.as_mut()
                        && f.api_version.as_deref().unwrap_or("").is_empty()
                    {
                        f.api_version = Some("v1".into());
                    }
                }
            }
            if let Some(t) = src.service_account_token.as_mut()
                && t.expiration_seconds.is_none()
            {
                t.expiration_seconds = Some(3600);
            }
        }
    }
}

/// Defaults of a `volumeClaimTemplates` entry: `status.phase: Pending` — OpenKruise calls
/// Kubernetes' `SetDefaults_PersistentVolumeClaim` only (not `SetDefaults_PersistentVolumeClaimSpec`,
/// so no `volumeMode`), as the admission corpus recorded.
pub fn set_defaults_pvc_template(pvc: &mut PersistentVolumeClaim) {
    let status = pvc.status.get_or_insert_with(Default::default);
    if status.phase.as_deref().unwrap_or("").is_empty() {
        status.phase = Some("Pending".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn empty_pod_spec_gets_kubernetes_and_openkruise_defaults() {
        let mut s = spec(json!({
            "containers": [{"name": "main", "image": "nginx:1.25",
                "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"port": 80}},
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "volumes": [{"name": "scratch"}, {"name": "s", "secret": {"secretName": "x"}},
                        {"name": "h", "hostPath": {"path": "/tmp"}}],
        }));
        set_defaults_pod_spec(&mut s);
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({
                "containers": [{"name": "main", "image": "nginx:1.25",
                    "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                        "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                        "failureThreshold": 3},
                    "env": [{"name": "N", "valueFrom": {"fieldRef":
                        {"fieldPath": "metadata.name", "apiVersion": "v1"}}}]}],
                "initContainers": [{"name": "init", "image": "busybox",
                    "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}],
                "volumes": [{"name": "scratch", "emptyDir": {}},
                            {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
                            {"name": "h", "hostPath": {"path": "/tmp", "type": ""}}],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30,
                "schedulerName": "default-scheduler",
            })
        );
    }

    #[test]
    fn explicit_values_are_kept_and_defaults_are_idempotent() {
        let mut s = spec(json!({
            "containers": [{"name": "main", "image": "nginx", "imagePullPolicy": "Never",
                "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5}}],
            "restartPolicy": "OnFailure",
            "terminationGracePeriodSeconds": 0,
        }));
        set_defaults_pod_spec(&mut s);
        let once = s.clone();
        set_defaults_pod_spec(&mut s);
        assert_eq!(s, once);
        assert_eq!(s.restart_policy.as_deref(), Some("OnFailure"));
        assert_eq!(s.termination_grace_period_seconds, Some(0));
        let c = &s.containers[0];
        assert_eq!(c.image_pull_policy.as_deref(), Some("Never"));
        assert_eq!(c.liveness_probe.as_ref().unwrap().period_seconds, Some(5));
    }

    #[test]
    fn init_container_pull_policy_follows_the_tag() {
        for (image, policy) in [
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("busybox:1.36", "IfNotPresent"),
            ("registry:5000/busybox", "Always"),
            ("registry:5000/busybox:1.36", "IfNotPresent"),
            ("busybox@sha256:abcd", "IfNotPresent"),
        ] {
            assert_eq!(default_image_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn pvc_template_defaults() {
        let mut pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        }))
        .unwrap();
        set_defaults_pvc_template(&mut pvc);
        assert_eq!(pvc.spec.as_ref().unwrap().volume_mode, None);
        assert_eq!(
            pvc.status.as_ref().unwrap().phase.as_deref(),
            Some("Pending")
        );
    }
}
