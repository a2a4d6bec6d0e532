//! Defaults of SidecarSet, as OpenKruise's mutating webhook (`/mutate-apps-kruise-io-sidecarset`)
//! fills them in, for each served version directly (OpenKruise defaults each version on its own):
//!
//! - `updateStrategy`: type `RollingUpdate`, `maxUnavailable` 1, `partition` 0;
//! - every sidecar: `podInjectPolicy` `BeforeAppContainer` (`AfterAppContainer` for init
//!   containers), `upgradeStrategy.upgradeType` `ColdUpgrade`, `shareVolumePolicy.type`
//!   `disabled`, plus the upstream container defaults OpenKruise applies to it:
//!   `imagePullPolicy` (`Always` for a `:latest` or untagged image, else `IfNotPresent`),
//!   `terminationMessagePath` `/dev/termination-log`, `terminationMessagePolicy` `File`, port
//!   protocol `TCP`, `fieldRef.apiVersion` `v1` (env and `transferEnv`), liveness/readiness
//!   probe timings (timeout 1 s, period 10 s, success 1, failure 3) and HTTP GET `path` `/` and
//!   `scheme` `HTTP` (probes and lifecycle hooks);
//! - `volumes`: the upstream volume defaults (an empty volume becomes `emptyDir: {}`, hostPath
//!   `type: ""`, file modes 0644 for secret/configMap/downwardAPI/projected volumes, service
//!   account token expiry 3600 s, `fieldRef.apiVersion` `v1`);
//! - `revisionHistoryLimit`: 10; `patchPodMetadata[].patchPolicy`: `Retain`;
//!   `injectionStrategy.revision.policy`: `Always` when a revision is given.
//!
//! A missing parent object (`updateStrategy`, a sidecar's `upgradeStrategy` or
//! `shareVolumePolicy`) is created to hold its defaults; OpenKruise's Go structs always exist.
//!
//! - container resources: quantities finer than milli-units rounded up (`SetDefaults_ResourceList`).
//!
//! The webhook also writes the hash annotations (`kruise.io/sidecarset-hash`,
//! `kruise.io/sidecarset-hash-without-image`), which are not defaults but hashes of Go's JSON
//! encoding (`kruise_engines::sidecarset::hash`). The `imagePullPolicy` default parses the image
//! as distribution/reference v0.6 does (`ParseNormalizedNamed`).

use k8s_openapi::api::core::v1::{Container, HTTPGetAction, ObjectFieldSelector, Probe, Volume};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apps::v1alpha1 as a1;
use crate::apps::v1beta1 as b1;

/// Default of `spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
/// Default of `spec.updateStrategy.maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;
/// Default file mode of secret, configMap, downwardAPI and projected volumes (0644).
pub const DEFAULT_VOLUME_MODE: i32 = 0o644;
/// Default `expirationSeconds` of a projected service account token.
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;

fn is_unset(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

fn set_str(slot: &mut Option<String>, value: &str) {
    if is_unset(slot) {
        *slot = Some(value.to_string());
    }
}

/// Fills in the defaults of a v1alpha1 SidecarSet.
pub fn set_defaults_sidecarset(obj: &mut a1::SidecarSet) {
    let spec = &mut obj.spec;
    let update = spec.update_strategy.get_or_insert_with(Default::default);
    set_str(
        &mut update.type_,
        a1::sidecarset_update_strategy_type::ROLLING_UPDATE,
    );
    update_strategy_numbers(&mut update.max_unavailable, &mut update.partition);

    let groups = [
        (
            &mut spec.init_containers,
            a1::pod_inject_policy::AFTER_APP_CONTAINER,
        ),
        (
            &mut spec.containers,
            a1::pod_inject_policy::BEFORE_APP_CONTAINER,
        ),
    ];
    for (containers, inject_policy) in groups {
        for c in containers.iter_mut().flatten() {
            set_str(&mut c.pod_inject_policy, inject_policy);
            let upgrade = c.upgrade_strategy.get_or_insert_with(Default::default);
            set_str(
                &mut upgrade.upgrade_type,
                a1::sidecar_container_upgrade_type::COLD_UPGRADE,
            );
            let share = c.share_volume_policy.get_or_insert_with(Default::default);
            set_str(&mut share.type_, a1::share_volume_policy_type::DISABLED);
            for env in c.transfer_env.iter_mut().flatten() {
                if let Some(from) = env.source_container_name_from.as_mut() {
                    field_selector(&mut from.field_ref);
                }
            }
            container_defaults(&mut c.container);
        }
    }

    volume_defaults(spec.volumes.iter_mut().flatten());
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    for patch in spec.patch_pod_metadata.iter_mut().flatten() {
        set_str(&mut patch.patch_policy, a1::sidecarset_patch_policy::RETAIN);
    }
    if let Some(revision) = spec
        .injection_strategy
        .as_mut()
        .and_then(|i| i.revision.as_mut())
    {
        set_str(
            &mut revision.policy,
            a1::sidecarset_inject_revision_policy::ALWAYS,
        );
    }
}

/// Fills in the defaults of a v1beta1 SidecarSet (the same defaults as v1alpha1).
pub fn set_defaults_sidecarset_v1beta1(obj: &mut b1::SidecarSet) {
    let spec = &mut obj.spec;
    let update = spec.update_strategy.get_or_insert_with(Default::default);
    set_str(
        &mut update.type_,
        b1::sidecarset_update_strategy_type::ROLLING_UPDATE,
    );
    update_strategy_numbers(&mut update.max_unavailable, &mut update.partition);

    let groups = [
        (
            &mut spec.init_containers,
            b1::pod_inject_policy::AFTER_APP_CONTAINER,
        ),
        (
            &mut spec.containers,
            b1::pod_inject_policy::BEFORE_APP_CONTAINER,
        ),
    ];
    for (containers, inject_policy) in groups {
        for c in containers.iter_mut().flatten() {
            set_str(&mut c.pod_inject_policy, inject_policy);
            let upgrade = c.upgrade_strategy.get_or_insert_with(Default::default);
            set_str(
                &mut upgrade.upgrade_type,
                b1::sidecar_container_upgrade_type::COLD_UPGRADE,
            );
            let share = c.share_volume_policy.get_or_insert_with(Default::default);
            set_str(&mut share.type_, b1::share_volume_policy_type::DISABLED);
            for env in c.transfer_env.iter_mut().flatten() {
                if let Some(from) = env.source_container_name_from.as_mut() {
                    field_selector(&mut from.field_ref);
                }
            }
            container_defaults(&mut c.container);
        }
    }

    volume_defaults(spec.volumes.iter_mut().flatten());
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    for patch in spec.patch_pod_metadata.iter_mut().flatten() {
        set_str(&mut patch.patch_policy, b1::sidecarset_patch_policy::RETAIN);
    }
    if let Some(revision) = spec
        .injection_strategy
        .as_mut()
        .and_then(|i| i.revision.as_mut())
    {
        set_str(
            &mut revision.policy,
            b1::sidecarset_inject_revision_policy::ALWAYS,
        );
    }
}

fn update_strategy_numbers(
    max_unavailable: &mut Option<IntOrString>,
    partition: &mut Option<IntOrString>,
) {
    max_unavailable.get_or_insert(IntOrString::Int(DEFAULT_MAX_UNAVAILABLE));
    partition.get_or_insert(IntOrString::Int(0));
}

/// `fieldRef.apiVersion` defaults to `v1`.
fn field_selector(selector: &mut Option<ObjectFieldSelector>) {
    if let Some(s) = selector {
        set_str(&mut s.api_version, "v1");
    }
}

/// The upstream container defaults OpenKruise applies to a sidecar container.
fn container_defaults(c: &mut Container) {
    round_resources(c);
    if is_unset(&c.image_pull_policy) {
        let policy = if image_defaults_to_latest(c.image.as_deref().unwrap_or_default()) {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.image_pull_policy = Some(policy.to_string());
    }
    set_str(&mut c.termination_message_path, "/dev/termination-log");
    set_str(&mut c.termination_message_policy, "File");
    for port in c.ports.iter_mut().flatten() {
        set_str(&mut port.protocol, "TCP");
    }
    for env in c.env.iter_mut().flatten() {
        if let Some(from) = env.value_from.as_mut() {
            field_selector(&mut from.field_ref);
        }
    }
    for probe in [c.liveness_probe.as_mut(), c.readiness_probe.as_mut()]
        .into_iter()
        .flatten()
    {
        probe_defaults(probe);
    }
    if let Some(lifecycle) = c.lifecycle.as_mut() {
        for handler in [lifecycle.post_start.as_mut(), lifecycle.pre_stop.as_mut()]
            .into_iter()
            .flatten()
        {
            if let Some(get) = handler.http_get.as_mut() {
                http_get_defaults(get);
            }
        }
    }
}

fn probe_defaults(p: &mut Probe) {
    for (slot, value) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if slot.unwrap_or_default() == 0 {
            *slot = Some(value);
        }
    }
    if let Some(get) = p.http_get.as_mut() {
        http_get_defaults(get);
    }
}

fn http_get_defaults(get: &mut HTTPGetAction) {
    set_str(&mut get.path, "/");
    set_str(&mut get.scheme, "HTTP");
}

/// Whether Kubernetes' `SetDefaults_Container` picks `Always` for `image`: the reference parses
/// (`parsers.ParseImageName`, i.e. distribution/reference v0.6 `ParseNormalizedNamed`) and its tag
/// is `latest`, or it has neither tag nor digest. A reference that does not parse gets
/// `IfNotPresent`.
fn image_defaults_to_latest(image: &str) -> bool {
    match parse_image_reference(image) {
        Some((tag, digest)) => tag == Some("latest") || (tag.is_none() && !digest),
        None => false,
    }
}

/// distribution/reference `ParseNormalizedNamed`: `Some((tag, has_digest))` when `image` is a
/// valid reference.
fn parse_image_reference(image: &str) -> Option<(Option<&str>, bool)> {
    if image.len() == 64
        && image
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    // splitDockerDomain: the first component is a domain when it looks like one.
    let (domain, remainder) = match image.split_once('/') {
        None => ("docker.io", image),
        Some((first, rest))
            if first == "localhost"
                || first.contains(['.', ':'])
                || first.to_lowercase() != first =>
        {
            (first, rest)
        }
        Some(_) => ("docker.io", image),
    };
    let remote = remainder.split(':').next().unwrap_or(remainder);
    if remote.to_lowercase() != remote {
        return None;
    }
    let (rest, digest) = match remainder.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (remainder, None),
    };
    let (path, tag) = match rest.rsplit_once(':') {
        Some((p, t)) if !t.contains('/') => (p, Some(t)),
        _ => (rest, None),
    };
    let name_ok = valid_domain_and_port(domain)
        && path.len() <= 255
        && !path.is_empty()
        && path.split('/').all(valid_path_component);
    if !name_ok || tag.is_some_and(|t| !valid_tag(t)) || digest.is_some_and(|d| !valid_digest(d)) {
        return None;
    }
    Some((tag, digest.is_some()))
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !b[0].is_ascii_lowercase() && !b[0].is_ascii_digit() {
        return false;
    }
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let sep_start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[sep_start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|x| x == b'-');
        if !ok || i == b.len() {
            return false;
        }
    }
    true
}

/// `host (':' [0-9]+)?` with host a domain name (`[a-zA-Z0-9]` components, inner `-`, dotted) or
/// a bracketed IPv6 address.
fn valid_domain_and_port(d: &str) -> bool {
    let (host, port) = if let Some(rest) = d.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return false;
        };
        if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return false;
        }
        match after {
            "" => return true,
            _ => ("x", after.strip_prefix(':')),
        }
    } else {
        match d.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (d, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    host.split('.').all(|c| {
        let b = c.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
    })
}

/// `[\w][\w.-]{0,127}`
fn valid_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric() || c == '_')
        && tag.len() <= 128
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// A digest the reference grammar accepts and go-digest validates: sha256, sha384 or sha512 with
/// that many lowercase hex digits.
fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match algo {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Container resources as Kubernetes' `SetDefaults_ResourceList` leaves them: quantities
/// finer than milli-units rounded up to milli-units (written as Go then writes them).
fn round_resources(c: &mut Container) {
    if let Some(r) = c.resources.as_mut() {
        for list in [r.limits.as_mut(), r.requests.as_mut()]
            .into_iter()
            .flatten()
        {
            for q in list.values_mut() {
                if let Some(t) = crate::validation::quantity::go_round_up_milli(&q.0) {
                    q.0 = t;
                }
            }
        }
    }
}

/// The upstream volume defaults OpenKruise applies to SidecarSet volumes.
fn volume_defaults<'a>(volumes: impl Iterator<Item = &'a mut Volume>) {
    for v in volumes {
        if *v
            == (Volume {
                name: v.name.clone(),
                ..Default::default()
            })
        {
            v.empty_dir = Some(Default::default());
        }
        if let Some(host_path) = v.host_path.as_mut() {
            host_path.type_.get_or_insert_with(String::new);
        }
        if let Some(secret) = v.secret.as_mut() {
            secret.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
        }
        if let Some(downward) = v.downward_api.as_mut() {
            downward.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
            for item in downward.items.iter_mut().flatten() {
                field_selector(&mut item.field_ref);
            }
        }
        if let Some(config_map) = v.config_map.as_mut() {
            config_map.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
        }
        if let Some(projected) = v.projected.as_mut() {
            projected.default_mode.get_or_insert(DEFAULT_VOLUME_MODE);
            for source in projected.sources.iter_mut().flatten() {
                if let Some(downward) = source.downward_api.as_mut() {
                    for item in downward.items.iter_mut().flatten() {
                        field_selector(&mut item.field_ref);
                    }
                }
                if let Some(token) = source.service_account_token.as_mut() {
                    token
                        .expiration_seconds
                        .get_or_insert(DEFAULT_TOKEN_EXPIRATION_SECONDS);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn v1alpha1(spec: serde_json::Value) -> a1::SidecarSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "SidecarSet",
            "metadata": {"name": "s"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn v1beta1(spec: serde_json::Value) -> b1::SidecarSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "SidecarSet",
            "metadata": {"name": "s"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn defaulted_container(name: &str, image: &str, pull: &str, inject: &str) -> serde_json::Value {
        json!({
            "name": name,
            "image": image,
            "imagePullPolicy": pull,
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "podInjectPolicy": inject,
            "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
            "shareVolumePolicy": {"type": "disabled"},
        })
    }

    fn input() -> serde_json::Value {
        json!({
            "initContainers": [{"name": "init", "image": "busybox:1.36"}],
            "containers": [{"name": "sidecar", "image": "busybox"}],
            "volumes": [{"name": "scratch"}],
            "patchPodMetadata": [{"annotations": {"a": "b"}}],
            "injectionStrategy": {"revision": {"revisionName": "s-abc"}},
        })
    }

    fn expected() -> serde_json::Value {
        json!({
            "initContainers": [defaulted_container("init", "busybox:1.36", "IfNotPresent", "AfterAppContainer")],
            "containers": [defaulted_container("sidecar", "busybox", "Always", "BeforeAppContainer")],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
            "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1, "partition": 0},
            "injectionStrategy": {"revision": {"revisionName": "s-abc", "policy": "Always"}},
            "revisionHistoryLimit": 10,
            "patchPodMetadata": [{"annotations": {"a": "b"}, "patchPolicy": "Retain"}],
        })
    }

    #[test]
    fn sidecarset_v1alpha1_empty_object_gets_openkruise_defaults() {
        let mut obj = v1alpha1(json!({}));
        set_defaults_sidecarset(&mut obj);
        assert_eq!(
            serde_json::to_value(&obj.spec).unwrap(),
            json!({
                "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1, "partition": 0},
                "revisionHistoryLimit": 10,
            })
        );

        let mut obj = v1alpha1(input());
        set_defaults_sidecarset(&mut obj);
        assert_eq!(serde_json::to_value(&obj.spec).unwrap(), expected());
    }

    #[test]
    fn sidecarset_v1beta1_empty_object_gets_openkruise_defaults() {
        let mut obj = v1beta1(input());
        set_defaults_sidecarset_v1beta1(&mut obj);
        assert_eq!(serde_json::to_value(&obj.spec).unwrap(), expected());
    }

    #[test]
    fn sidecarset_container_and_volume_details() {
        let spec = json!({
            "containers": [{
                "name": "proxy",
                "image": "envoyproxy/envoy:v1.30.1",
                "ports": [{"containerPort": 15001}],
                "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "livenessProbe": {"httpGet": {"port": 15020}},
                "readinessProbe": {"tcpSocket": {"port": 15001}, "periodSeconds": 5},
                "lifecycle": {"preStop": {"httpGet": {"port": 15000, "path": "/quit"}}},
                "transferEnv": [{"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}, "envName": "X"}],
            }],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "sec", "secret": {"secretName": "sec"}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
            ],
        });
        let mut obj = v1beta1(spec);
        set_defaults_sidecarset_v1beta1(&mut obj);
        let v = serde_json::to_value(&obj.spec).unwrap();
        let c = &v["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 15020, "path": "/", "scheme": "HTTP"},
                   "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 15000, "path": "/quit", "scheme": "HTTP"})
        );
        assert_eq!(
            c["transferEnv"][0]["sourceContainerNameFrom"]["fieldRef"]["apiVersion"],
            "v1"
        );
        let vols = &v["volumes"];
        assert_eq!(vols[0]["configMap"]["defaultMode"], 420);
        assert_eq!(vols[1]["secret"]["defaultMode"], 420);
        assert_eq!(vols[2]["hostPath"]["type"], "");
        assert_eq!(vols[3]["downwardAPI"]["defaultMode"], 420);
        assert_eq!(
            vols[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            "v1"
        );
        assert_eq!(vols[4]["projected"]["defaultMode"], 420);
        assert_eq!(
            vols[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
    }

    #[test]
    fn sidecarset_explicit_values_are_kept() {
        let sample: b1::SidecarSet = serde_yaml_ng::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config/samples/apps.kruise.io_v1beta1_sidecarset.yaml"
        )))
        .unwrap();
        let mut obj = sample.clone();
        set_defaults_sidecarset_v1beta1(&mut obj);
        let s = &obj.spec;
        let update = s.update_strategy.as_ref().unwrap();
        assert_eq!(
            update.max_unavailable,
            Some(IntOrString::String("20%".into()))
        );
        assert_eq!(update.partition, Some(IntOrString::Int(0)));
        let c = &s.containers.as_ref().unwrap()[1];
        assert_eq!(c.pod_inject_policy.as_deref(), Some("AfterAppContainer"));
        assert_eq!(
            c.upgrade_strategy.as_ref().unwrap().upgrade_type.as_deref(),
            Some("HotUpgrade")
        );
        assert_eq!(
            s.containers.as_ref().unwrap()[0]
                .share_volume_policy
                .as_ref()
                .unwrap()
                .type_
                .as_deref(),
            Some("enabled")
        );
        assert_eq!(
            s.patch_pod_metadata.as_ref().unwrap()[0]
                .patch_policy
                .as_deref(),
            Some("MergePatchJson")
        );
        // Besides container-level defaults nothing in the sample changes.
        assert_eq!(s.selector, sample.spec.selector);
        assert_eq!(s.injection_strategy, sample.spec.injection_strategy);
        assert_eq!(s.revision_history_limit, Some(10));
    }

    #[test]
    fn sidecarset_defaulting_is_idempotent() {
        let mut a = v1alpha1(input());
        set_defaults_sidecarset(&mut a);
        let once = a.clone();
        set_defaults_sidecarset(&mut a);
        assert_eq!(a, once);

        let mut b = v1beta1(input());
        set_defaults_sidecarset_v1beta1(&mut b);
        let once = b.clone();
        set_defaults_sidecarset_v1beta1(&mut b);
        assert_eq!(b, once);
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, latest) in [
            ("busybox", true),
            ("busybox:latest", true),
            ("docker.io/library/busybox", true),
            ("localhost:5000/team/app", true),
            ("registry.example.com:443/app:latest", true),
            ("busybox:1.36", false),
            ("busybox@sha256:0123456789abcdef", false),
            ("busybox:latest@sha256:0123456789abcdef", false),
            (
                "busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                true,
            ),
            (
                "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                false,
            ),
            ("busybox:Latest", false),
            ("library/Busybox:1", false),
            ("Registry.example.com/app", true),
            ("a..b", false),
            ("a__b:1", false),
            ("a--b", true),
            ("[::1]:5000/app", true),
            ("Busybox", false),
            ("", false),
            ("bad image", false),
        ] {
            assert_eq!(image_defaults_to_latest(image), latest, "{image}");
        }
    }
}
