//! Volume rules of `ValidatePodSpec` (`ValidateVolumes`, `validateVolumeSource` and the rules
//! of each volume source), Kubernetes v1.32.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    DownwardAPIVolumeFile, KeyToPath, ObjectFieldSelector, PersistentVolumeClaimSpec,
    ProjectedVolumeSource, ResourceFieldSelector, Volume,
};
use serde_json::json;

use super::super::field::{ErrorList, FieldError, Path};
use super::super::meta::{
    LabelSelectorValidationOptions, validate_annotations, validate_label_selector, validate_labels,
};
use super::super::names::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, name_is_dns_label,
    name_is_dns_subdomain,
};
use super::super::quantity::parse_quantity;
use super::{PodValidationOptions, opt, validate_pull_policy};

/// What container rules need to know about a declared volume.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct VolumeKind {
    /// A `persistentVolumeClaim` or `ephemeral` volume (may back a block device).
    pub pvc_like: bool,
    /// An `image` volume (no sub-paths).
    pub image: bool,
}

/// The volumes that passed validation, by name.
pub(crate) type Volumes = BTreeMap<String, VolumeKind>;

const FILE_MODE_ERROR: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const MORE_THAN_ONE: &str = "may not specify more than 1 volume type";

fn bad_mode(mode: Option<i32>) -> Option<i32> {
    mode.filter(|m| !(0..=0o777).contains(m))
}

/// `ValidateVolumes` (pod template form: no pod name, so no check of the claims generic
/// ephemeral volumes would create): each volume has exactly one valid source and a unique
/// DNS-1123 label name; only volumes without errors are returned.
pub(crate) fn validate_volumes(
    volumes: &[Volume],
    path: &Path,
    opts: &PodValidationOptions,
) -> (Volumes, ErrorList) {
    let mut errs = ErrorList::new();
    let mut all_names: BTreeSet<&str> = BTreeSet::new();
    let mut out = Volumes::new();
    for (i, vol) in volumes.iter().enumerate() {
        let idx = path.index(i);
        let name_path = idx.child("name");
        let mut el = validate_volume_source(vol, &idx, opts);
        if vol.name.is_empty() {
            el.push(FieldError::required(name_path.clone(), ""));
        } else {
            el.extend(
                is_dns1123_label(&vol.name)
                    .into_iter()
                    .map(|m| FieldError::invalid(name_path.clone(), vol.name.as_str(), m)),
            );
        }
        if all_names.contains(vol.name.as_str()) {
            el.push(FieldError::duplicate(name_path, vol.name.as_str()));
        }
        if el.is_empty() {
            all_names.insert(vol.name.as_str());
            out.insert(
                vol.name.clone(),
                VolumeKind {
                    pvc_like: vol.persistent_volume_claim.is_some() || vol.ephemeral.is_some(),
                    image: vol.image.is_some(),
                },
            );
        } else {
            errs.extend(el);
        }
    }
    (out, errs)
}

fn required_str(errs: &mut ErrorList, value: &str, path: Path) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
}

/// `validateVolumeSource`: exactly one source, checked by its own rules. Paths follow Go,
/// including its slips (`downwarAPI` for a second downward API source, `persistentDisk` for a
/// GCE disk's fields, `cephFS`/`cephfs`).
fn validate_volume_source(v: &Volume, path: &Path, opts: &PodValidationOptions) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut n = 0;
    // One source: a second one is forbidden (reported on `$name`), the first is checked by
    // `$body`.
    macro_rules! source {
        ($field:expr, $name:literal, $body:expr) => {
            if let Some(src) = $field.as_ref() {
                if n > 0 {
                    errs.push(FieldError::forbidden(path.child($name), MORE_THAN_ONE));
                } else {
                    n += 1;
                    #[allow(clippy::redundant_closure_call)]
                    errs.extend(($body)(src));
                }
            }
        };
    }
    if let Some(e) = v.empty_dir.as_ref() {
        n += 1;
        if let Some(q) = e.size_limit.as_ref()
            && parse_quantity(&q.0).is_ok_and(|q| q.sign() < 0)
        {
            errs.push(FieldError::forbidden(
                path.child("emptyDir").child("sizeLimit"),
                "SizeLimit field must be a valid resource quantity",
            ));
        }
    }
    source!(
        v.host_path,
        "hostPath",
        |h: &k8s_openapi::api::core::v1::HostPathVolumeSource| {
            let p = path.child("hostPath");
            let mut e = ErrorList::new();
            if h.path.is_empty() {
                e.push(FieldError::required(p.child("path"), ""));
                return e;
            }
            e.extend(validate_path_no_backsteps(&h.path, &p.child("path")));
            if let Some(t) = h.type_.as_deref() {
                const TYPES: &[&str] = &[
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if !TYPES.contains(&t) {
                    e.push(FieldError::not_supported(p.child("type"), t, TYPES));
                }
            }
            e
        }
    );
    source!(
        v.git_repo,
        "gitRepo",
        |g: &k8s_openapi::api::core::v1::GitRepoVolumeSource| {
            let p = path.child("gitRepo");
            let mut e = ErrorList::new();
            required_str(&mut e, &g.repository, p.child("repository"));
            e.extend(validate_local_descending_path(
                opt(&g.directory),
                &p.child("directory"),
            ));
            e
        }
    );
    source!(
        v.gce_persistent_disk,
        "gcePersistentDisk",
        |g: &k8s_openapi::api::core::v1::GCEPersistentDiskVolumeSource| {
            let p = path.child("persistentDisk");
            let mut e = ErrorList::new();
            required_str(&mut e, &g.pd_name, p.child("pdName"));
            let part = g.partition.unwrap_or(0);
            if !(0..=255).contains(&part) {
                e.push(FieldError::invalid(
                    p.child("partition"),
                    part,
                    "must be between 1 and 255, inclusive",
                ));
            }
            e
        }
    );
    source!(
        v.aws_elastic_block_store,
        "awsElasticBlockStore",
        |a: &k8s_openapi::api::core::v1::AWSElasticBlockStoreVolumeSource| {
            let p = path.child("awsElasticBlockStore");
            let mut e = ErrorList::new();
            required_str(&mut e, &a.volume_id, p.child("volumeID"));
            let part = a.partition.unwrap_or(0);
            if !(0..=255).contains(&part) {
                e.push(FieldError::invalid(
                    p.child("partition"),
                    part,
                    "must be between 1 and 255, inclusive",
                ));
            }
            e
        }
    );
    source!(
        v.secret,
        "secret",
        |s: &k8s_openapi::api::core::v1::SecretVolumeSource| {
            let p = path.child("secret");
            let mut e = ErrorList::new();
            required_str(&mut e, opt(&s.secret_name), p.child("secretName"));
            if let Some(m) = bad_mode(s.default_mode) {
                e.push(FieldError::invalid(
                    p.child("defaultMode"),
                    m,
                    FILE_MODE_ERROR,
                ));
            }
            for (i, kp) in s.items.iter().flatten().enumerate() {
                e.extend(validate_key_to_path(kp, &p.child("items").index(i)));
            }
            e
        }
    );
    source!(
        v.nfs,
        "nfs",
        |s: &k8s_openapi::api::core::v1::NFSVolumeSource| {
            let p = path.child("nfs");
            let mut e = ErrorList::new();
            required_str(&mut e, &s.server, p.child("server"));
            required_str(&mut e, &s.path, p.child("path"));
            if !s.path.starts_with('/') {
                e.push(FieldError::invalid(
                    p.child("path"),
                    s.path.as_str(),
                    "must be an absolute path",
                ));
            }
            e
        }
    );
    if let Some(s) = v.iscsi.as_ref() {
        source!(
            v.iscsi,
            "iscsi",
            |s: &k8s_openapi::api::core::v1::ISCSIVolumeSource| validate_iscsi(
                s,
                &path.child("iscsi")
            )
        );
        if s.initiator_name.is_some() && v.name.len() + 1 + s.target_portal.len() > 64 {
            errs.push(FieldError::invalid(
                path.child("name"),
                v.name.as_str(),
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
    source!(
        v.glusterfs,
        "glusterfs",
        |g: &k8s_openapi::api::core::v1::GlusterfsVolumeSource| {
            let p = path.child("glusterfs");
            let mut e = ErrorList::new();
            required_str(&mut e, &g.endpoints, p.child("endpoints"));
            required_str(&mut e, &g.path, p.child("path"));
            e
        }
    );
    source!(
        v.flocker,
        "flocker",
        |f: &k8s_openapi::api::core::v1::FlockerVolumeSource| {
            let p = path.child("flocker");
            let mut e = ErrorList::new();
            let (name, uuid) = (opt(&f.dataset_name), opt(&f.dataset_uuid));
            if name.is_empty() && uuid.is_empty() {
                e.push(FieldError::required(
                    p.clone(),
                    "one of datasetName and datasetUUID is required",
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                e.push(FieldError::invalid(
                    p.clone(),
                    "resource",
                    "datasetName and datasetUUID can not be specified simultaneously",
                ));
            }
            if name.contains('/') {
                e.push(FieldError::invalid(
                    p.child("datasetName"),
                    name,
                    "must not contain '/'",
                ));
            }
            e
        }
    );
    source!(
        v.persistent_volume_claim,
        "persistentVolumeClaim",
        |c: &k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource| {
            let mut e = ErrorList::new();
            required_str(
                &mut e,
                &c.claim_name,
                path.child("persistentVolumeClaim").child("claimName"),
            );
            e
        }
    );
    source!(
        v.rbd,
        "rbd",
        |r: &k8s_openapi::api::core::v1::RBDVolumeSource| {
            let p = path.child("rbd");
            let mut e = ErrorList::new();
            if r.monitors.is_empty() {
                e.push(FieldError::required(p.child("monitors"), ""));
            }
            required_str(&mut e, &r.image, p.child("image"));
            e
        }
    );
    source!(
        v.cinder,
        "cinder",
        |c: &k8s_openapi::api::core::v1::CinderVolumeSource| {
            let p = path.child("cinder");
            let mut e = ErrorList::new();
            required_str(&mut e, &c.volume_id, p.child("volumeID"));
            if let Some(s) = c.secret_ref.as_ref() {
                required_str(&mut e, &s.name, p.children(&["secretRef", "name"]));
            }
            e
        }
    );
    source!(
        v.cephfs,
        "cephFS",
        |c: &k8s_openapi::api::core::v1::CephFSVolumeSource| {
            let mut e = ErrorList::new();
            if c.monitors.is_empty() {
                e.push(FieldError::required(
                    path.child("cephfs").child("monitors"),
                    "",
                ));
            }
            e
        }
    );
    source!(
        v.quobyte,
        "quobyte",
        |q: &k8s_openapi::api::core::v1::QuobyteVolumeSource| {
            let p = path.child("quobyte");
            let mut e = ErrorList::new();
            const REG: &str = "must be a host:port pair or multiple pairs separated by commas";
            if q.registry.is_empty() {
                e.push(FieldError::required(p.child("registry"), REG));
            } else if opt(&q.tenant).len() >= 65 {
                e.push(FieldError::required(
                    p.child("tenant"),
                    "must be a UUID and may not exceed a length of 64 characters",
                ));
            } else {
                for pair in q.registry.split(',') {
                    if !is_host_port(pair) {
                        e.push(FieldError::invalid(
                            p.child("registry"),
                            q.registry.as_str(),
                            REG,
                        ));
                    }
                }
            }
            required_str(&mut e, &q.volume, p.child("volume"));
            e
        }
    );
    source!(
        v.downward_api,
        "downwarAPI",
        |d: &k8s_openapi::api::core::v1::DownwardAPIVolumeSource| {
            let p = path.child("downwardAPI");
            let mut e = ErrorList::new();
            if let Some(m) = bad_mode(d.default_mode) {
                e.push(FieldError::invalid(
                    p.child("defaultMode"),
                    m,
                    FILE_MODE_ERROR,
                ));
            }
            for f in d.items.iter().flatten() {
                e.extend(validate_downward_api_volume_file(f, &p, opts));
            }
            e
        }
    );
    source!(
        v.fc,
        "fc",
        |f: &k8s_openapi::api::core::v1::FCVolumeSource| {
            let p = path.child("fc");
            let mut e = ErrorList::new();
            let wwns = f.target_wwns.as_deref().unwrap_or_default();
            let wwids = f.wwids.as_deref().unwrap_or_default();
            if wwns.is_empty() && wwids.is_empty() {
                e.push(FieldError::required(
                    p.child("targetWWNs"),
                    "must specify either targetWWNs or wwids, but not both",
                ));
            }
            if !wwns.is_empty() && !wwids.is_empty() {
                e.push(FieldError::invalid(
                    p.child("targetWWNs"),
                    json!(wwns),
                    "targetWWNs and wwids can not be specified simultaneously",
                ));
            }
            if !wwns.is_empty() {
                match f.lun {
                    None => e.push(FieldError::required(
                        p.child("lun"),
                        "lun is required if targetWWNs is specified",
                    )),
                    Some(l) if !(0..=255).contains(&l) => {
                        e.push(FieldError::invalid(
                            p.child("lun"),
                            l,
                            "must be between 0 and 255, inclusive",
                        ));
                    }
                    Some(_) => {}
                }
            }
            e
        }
    );
    source!(
        v.flex_volume,
        "flexVolume",
        |f: &k8s_openapi::api::core::v1::FlexVolumeSource| {
            let p = path.child("flexVolume");
            let mut e = ErrorList::new();
            required_str(&mut e, &f.driver, p.child("driver"));
            for k in f.options.iter().flat_map(|o| o.keys()) {
                let ns = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
                let normalized = format!(".{}", ns.to_lowercase());
                if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                    e.push(FieldError::invalid(
                        p.child("options").key(k),
                        k.as_str(),
                        "kubernetes.io and k8s.io namespaces are reserved",
                    ));
                }
            }
            e
        }
    );
    source!(
        v.config_map,
        "configMap",
        |c: &k8s_openapi::api::core::v1::ConfigMapVolumeSource| {
            let p = path.child("configMap");
            let mut e = ErrorList::new();
            required_str(&mut e, &c.name, p.child("name"));
            if let Some(m) = bad_mode(c.default_mode) {
                e.push(FieldError::invalid(
                    p.child("defaultMode"),
                    m,
                    FILE_MODE_ERROR,
                ));
            }
            for (i, kp) in c.items.iter().flatten().enumerate() {
                e.extend(validate_key_to_path(kp, &p.child("items").index(i)));
            }
            e
        }
    );
    source!(
        v.azure_file,
        "azureFile",
        |a: &k8s_openapi::api::core::v1::AzureFileVolumeSource| {
            let p = path.child("azureFile");
            let mut e = ErrorList::new();
            required_str(&mut e, &a.secret_name, p.child("secretName"));
            required_str(&mut e, &a.share_name, p.child("shareName"));
            e
        }
    );
    source!(
        v.vsphere_volume,
        "vsphereVolume",
        |s: &k8s_openapi::api::core::v1::VsphereVirtualDiskVolumeSource| {
            let mut e = ErrorList::new();
            required_str(
                &mut e,
                &s.volume_path,
                path.child("vsphereVolume").child("volumePath"),
            );
            e
        }
    );
    source!(
        v.photon_persistent_disk,
        "photonPersistentDisk",
        |s: &k8s_openapi::api::core::v1::PhotonPersistentDiskVolumeSource| {
            let mut e = ErrorList::new();
            required_str(
                &mut e,
                &s.pd_id,
                path.child("photonPersistentDisk").child("pdID"),
            );
            e
        }
    );
    source!(
        v.portworx_volume,
        "portworxVolume",
        |s: &k8s_openapi::api::core::v1::PortworxVolumeSource| {
            let mut e = ErrorList::new();
            required_str(
                &mut e,
                &s.volume_id,
                path.child("portworxVolume").child("volumeID"),
            );
            e
        }
    );
    source!(
        v.azure_disk,
        "azureDisk",
        |a: &k8s_openapi::api::core::v1::AzureDiskVolumeSource| validate_azure_disk(
            a,
            &path.child("azureDisk")
        )
    );
    source!(
        v.storageos,
        "storageos",
        |s: &k8s_openapi::api::core::v1::StorageOSVolumeSource| {
            let p = path.child("storageos");
            let mut e = ErrorList::new();
            let name = opt(&s.volume_name);
            if name.is_empty() {
                e.push(FieldError::required(p.child("volumeName"), ""));
            } else {
                e.extend(
                    is_dns1123_label(name)
                        .into_iter()
                        .map(|m| FieldError::invalid(p.child("volumeName"), name, m)),
                );
            }
            let ns = opt(&s.volume_namespace);
            if !ns.is_empty() {
                e.extend(
                    is_dns1123_label(ns)
                        .into_iter()
                        .map(|m| FieldError::invalid(p.child("volumeNamespace"), ns, m)),
                );
            }
            if let Some(r) = s.secret_ref.as_ref() {
                required_str(&mut e, &r.name, p.children(&["secretRef", "name"]));
            }
            e
        }
    );
    source!(v.projected, "projected", |p: &ProjectedVolumeSource| {
        validate_projected(p, &path.child("projected"), opts)
    });
    source!(
        v.scale_io,
        "scaleIO",
        |s: &k8s_openapi::api::core::v1::ScaleIOVolumeSource| {
            let p = path.child("scaleIO");
            let mut e = ErrorList::new();
            required_str(&mut e, &s.gateway, p.child("gateway"));
            required_str(&mut e, &s.system, p.child("system"));
            required_str(&mut e, opt(&s.volume_name), p.child("volumeName"));
            e
        }
    );
    source!(
        v.csi,
        "csi",
        |c: &k8s_openapi::api::core::v1::CSIVolumeSource| {
            let p = path.child("csi");
            let mut e = validate_csi_driver_name(&c.driver, &p.child("driver"));
            if let Some(r) = c.node_publish_secret_ref.as_ref() {
                if r.name.is_empty() {
                    e.push(FieldError::required(
                        p.children(&["nodePublishSecretRef", "name"]),
                        "",
                    ));
                } else {
                    e.extend(
                        name_is_dns_subdomain(&r.name, false)
                            .into_iter()
                            .map(|m| FieldError::invalid(p.child("name"), r.name.as_str(), m)),
                    );
                }
            }
            e
        }
    );
    source!(
        v.ephemeral,
        "ephemeral",
        |eph: &k8s_openapi::api::core::v1::EphemeralVolumeSource| {
            let p = path.child("ephemeral");
            match eph.volume_claim_template.as_ref() {
                None => vec![FieldError::required(p.child("volumeClaimTemplate"), "")],
                Some(t) => {
                    let tp = p.child("volumeClaimTemplate");
                    let meta = t.metadata.clone().unwrap_or_default();
                    let mp = tp.child("metadata");
                    let mut e =
                        validate_annotations(meta.annotations.as_ref(), &mp.child("annotations"));
                    e.extend(validate_labels(meta.labels.as_ref(), &mp.child("labels")));
                    e.extend(validate_template_meta_allow_list(&meta, &mp));
                    e.extend(validate_pvc_spec(&t.spec, &tp.child("spec")));
                    e
                }
            }
        }
    );
    source!(
        v.image,
        "image",
        |i: &k8s_openapi::api::core::v1::ImageVolumeSource| {
            let p = path.child("image");
            let mut e = ErrorList::new();
            if opts.resource_is_pod && opt(&i.reference).is_empty() {
                e.push(FieldError::required(p.child("reference"), ""));
            }
            e.extend(validate_pull_policy(
                opt(&i.pull_policy),
                &p.child("pullPolicy"),
            ));
            e
        }
    );
    if n == 0 {
        errs.push(FieldError::required(
            path.clone(),
            "must specify a volume type",
        ));
    }
    errs
}

/// `net.SplitHostPort` accepts `host:port` (brackets around IPv6 hosts).
fn is_host_port(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('[') {
        return rest
            .split_once(']')
            .is_some_and(|(h, p)| !h.contains(']') && p.starts_with(':') && !p[1..].contains(':'));
    }
    match s.rsplit_once(':') {
        Some((h, _)) => !h.contains(':') && !h.contains('[') && !h.contains(']'),
        None => false,
    }
}

fn validate_iscsi(s: &k8s_openapi::api::core::v1::ISCSIVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &s.target_portal, p.child("targetPortal"));
    if s.iqn.is_empty() {
        e.push(FieldError::required(p.child("iqn"), ""));
    } else if let Some(msg) = iscsi_name_error(&s.iqn) {
        e.push(FieldError::invalid(p.child("iqn"), s.iqn.as_str(), msg));
    }
    if !(0..=255).contains(&s.lun) {
        e.push(FieldError::invalid(
            p.child("lun"),
            s.lun,
            "must be between 0 and 255, inclusive",
        ));
    }
    if (s.chap_auth_discovery == Some(true) || s.chap_auth_session == Some(true))
        && s.secret_ref.is_none()
    {
        e.push(FieldError::required(p.child("secretRef"), ""));
    }
    if let Some(init) = s.initiator_name.as_deref() {
        let ip = p.child("initiatorname");
        if !["iqn", "eui", "naa"].iter().any(|x| init.starts_with(x)) {
            e.push(FieldError::invalid(
                ip.clone(),
                init,
                "must be valid format starting with iqn, eui, or naa",
            ));
        }
        if ["iqn", "eui", "naa"].iter().any(|x| init.starts_with(x))
            && iscsi_name_error(init).is_some()
        {
            e.push(FieldError::invalid(ip, init, "must be valid format"));
        }
    }
    e
}

/// The iSCSI qualified-name rules (`iqn.YYYY-MM.<name>:<id>`, `eui.` and 16 alphanumerics,
/// `naa.` and 32 alphanumerics); the reason a name breaks them.
fn iscsi_name_error(name: &str) -> Option<&'static str> {
    let fixed = |n: usize| {
        name.len() == 4 + n
            && name.is_char_boundary(4)
            && name[4..].bytes().all(|c| c.is_ascii_alphanumeric())
    };
    let ok = if name.starts_with("iqn") {
        // `iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`, unanchored at the start.
        name.match_indices("iqn.").any(|(i, _)| {
            let b = &name.as_bytes()[i + 4..];
            if b.len() < 8
                || !b[..4].iter().all(u8::is_ascii_digit)
                || b[4] != b'-'
                || !b[5..7].iter().all(u8::is_ascii_digit)
                || b[7] != b'.'
            {
                return false;
            }
            let tail = &name[i + 12..];
            tail.match_indices(':').any(|(j, _)| {
                let (host, id) = (&tail[..j], &tail[j + 1..]);
                !host.is_empty()
                    && host
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
                    && !id.is_empty()
                    && !id
                        .chars()
                        .any(|c| ",;*&$|".contains(c) || c.is_whitespace())
            })
        })
    } else if name.starts_with("eui") {
        fixed(16)
    } else if name.starts_with("naa") {
        fixed(32)
    } else {
        return Some("must be valid format starting with iqn, eui, or naa");
    };
    (!ok).then_some("must be valid format")
}

fn validate_azure_disk(
    a: &k8s_openapi::api::core::v1::AzureDiskVolumeSource,
    p: &Path,
) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &a.disk_name, p.child("diskName"));
    required_str(&mut e, &a.disk_uri, p.child("diskURI"));
    if let Some(c) = a.caching_mode.as_deref()
        && !["None", "ReadOnly", "ReadWrite"].contains(&c)
    {
        e.push(FieldError::not_supported(
            p.child("cachingMode"),
            c,
            &["None", "ReadOnly", "ReadWrite"],
        ));
    }
    if let Some(k) = a.kind.as_deref() {
        if !["Dedicated", "Managed", "Shared"].contains(&k) {
            e.push(FieldError::not_supported(
                p.child("kind"),
                k,
                &["Dedicated", "Managed", "Shared"],
            ));
        }
        if k == "Managed" && !a.disk_uri.starts_with("/subscriptions/") {
            e.push(FieldError::not_supported(
                p.child("diskURI"),
                a.disk_uri.as_str(),
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        if k != "Managed" && !a.disk_uri.starts_with("https://") {
            e.push(FieldError::not_supported(
                p.child("diskURI"),
                a.disk_uri.as_str(),
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
    }
    e
}

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS-1123 subdomain (lower-cased).
pub(crate) fn validate_csi_driver_name(driver: &str, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    if driver.is_empty() {
        e.push(FieldError::required(p.clone(), ""));
    }
    if driver.len() > 63 {
        e.push(FieldError::too_long(p.clone(), 63));
    }
    e.extend(
        is_dns1123_subdomain(&driver.to_lowercase())
            .into_iter()
            .map(|m| FieldError::invalid(p.clone(), driver, m)),
    );
    e
}

/// Template object meta may only set labels and annotations (`validateFieldAllowList`).
fn validate_template_meta_allow_list(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    p: &Path,
) -> ErrorList {
    let mut v = serde_json::to_value(meta).unwrap_or_default();
    let mut e = ErrorList::new();
    if let Some(m) = v.as_object_mut() {
        m.remove("labels");
        m.remove("annotations");
        for (k, val) in m.iter() {
            let empty = val.is_null()
                || val.as_str() == Some("")
                || val.as_array().is_some_and(Vec::is_empty)
                || val.as_object().is_some_and(serde_json::Map::is_empty)
                || val.as_i64() == Some(0);
            if !empty {
                // Go names the field after the struct field, first letter lowered (`UID` → `uID`).
                let name = if k == "uid" { "uID" } else { k.as_str() };
                e.push(FieldError::forbidden(p.child(name), "cannot be set"));
            }
        }
    }
    e
}

/// `ValidatePersistentVolumeClaimSpec` for a generic ephemeral volume's claim template.
fn validate_pvc_spec(spec: &PersistentVolumeClaimSpec, p: &Path) -> ErrorList {
    const MODES: &[&str] = &[
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let mut e = ErrorList::new();
    let modes = spec.access_modes.as_deref().unwrap_or_default();
    if modes.is_empty() {
        e.push(FieldError::required(
            p.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if spec.selector.is_some() {
        e.extend(validate_label_selector(
            spec.selector.as_ref(),
            LabelSelectorValidationOptions::default(),
            &p.child("selector"),
        ));
    }
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        if !MODES.contains(&m.as_str()) {
            e.push(FieldError::not_supported(
                p.child("accessModes"),
                m.as_str(),
                MODES,
            ));
        }
        if m == "ReadWriteOncePod" {
            rwop = true;
        } else if MODES.contains(&m.as_str()) {
            other = true;
        }
    }
    if rwop && other {
        e.push(FieldError::forbidden(
            p.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let sp = p.child("resources").key("storage");
    match spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
    {
        None => e.push(FieldError::required(sp, "")),
        Some(q) => match parse_quantity(&q.0) {
            Ok(v) if v.sign() <= 0 => e.push(FieldError::invalid(
                sp,
                v.canonical(),
                "must be greater than zero",
            )),
            _ => {}
        },
    }
    if let Some(sc) = spec.storage_class_name.as_deref()
        && !sc.is_empty()
    {
        e.extend(
            name_is_dns_subdomain(sc, false)
                .into_iter()
                .map(|m| FieldError::invalid(p.child("storageClassName"), sc, m)),
        );
    }
    if let Some(vm) = spec.volume_mode.as_deref()
        && !["Block", "Filesystem"].contains(&vm)
    {
        e.push(FieldError::not_supported(
            p.child("volumeMode"),
            vm,
            &["Block", "Filesystem"],
        ));
    }
    let data_source_ref =
        |e: &mut ErrorList, name: &str, kind: &str, group: Option<&str>, dp: Path| {
            if name.is_empty() {
                e.push(FieldError::required(dp.child("name"), ""));
            }
            if kind.is_empty() {
                e.push(FieldError::required(dp.child("kind"), ""));
            }
            let g = group.unwrap_or("");
            if g.is_empty() && kind != "PersistentVolumeClaim" {
                e.push(FieldError::invalid(
                    dp.clone(),
                    kind,
                    "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                ));
            }
            if !g.is_empty() {
                e.extend(
                    is_dns1123_subdomain(g)
                        .into_iter()
                        .map(|m| FieldError::invalid(dp.child("apiGroup"), g, m)),
                );
            }
        };
    if let Some(ds) = spec.data_source.as_ref() {
        data_source_ref(
            &mut e,
            &ds.name,
            &ds.kind,
            ds.api_group.as_deref(),
            p.child("dataSource"),
        );
    }
    if let Some(dr) = spec.data_source_ref.as_ref() {
        data_source_ref(
            &mut e,
            &dr.name,
            &dr.kind,
            dr.api_group.as_deref(),
            p.child("dataSourceRef"),
        );
        if let Some(ns) = dr.namespace.as_deref()
            && !ns.is_empty()
        {
            e.extend(
                name_is_dns_label(ns, false).into_iter().map(|m| {
                    FieldError::invalid(p.child("dataSourceRef").child("namespace"), ns, m)
                }),
            );
        }
    }
    let ref_ns = spec
        .data_source_ref
        .as_ref()
        .and_then(|r| r.namespace.as_deref())
        .filter(|n| !n.is_empty());
    if ref_ns.is_some() {
        if spec.data_source.is_some() {
            e.push(FieldError::invalid(
                p.clone(),
                p.child("dataSource").to_string(),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(ds), Some(dr)) = (spec.data_source.as_ref(), spec.data_source_ref.as_ref())
    {
        let same = ds.api_group.as_deref().unwrap_or("") == dr.api_group.as_deref().unwrap_or("")
            && ds.kind == dr.kind
            && ds.name == dr.name;
        if !same {
            e.push(FieldError::invalid(
                p.clone(),
                p.child("dataSource").to_string(),
                "must match dataSourceRef",
            ));
        }
    }
    e
}

fn validate_key_to_path(kp: &KeyToPath, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &kp.key, p.child("key"));
    required_str(&mut e, &kp.path, p.child("path"));
    e.extend(validate_local_non_reserved_path(&kp.path, &p.child("path")));
    if let Some(m) = bad_mode(kp.mode) {
        e.push(FieldError::invalid(p.child("mode"), m, FILE_MODE_ERROR));
    }
    e
}

const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

fn validate_downward_api_volume_file(
    f: &DownwardAPIVolumeFile,
    p: &Path,
    _opts: &PodValidationOptions,
) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &f.path, p.child("path"));
    e.extend(validate_local_non_reserved_path(&f.path, &p.child("path")));
    if let Some(fr) = f.field_ref.as_ref() {
        e.extend(validate_object_field_selector(
            fr,
            VOLUME_FIELD_PATHS,
            &p.child("fieldRef"),
        ));
        if f.resource_field_ref.is_some() {
            e.push(FieldError::invalid(
                p.clone(),
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rf) = f.resource_field_ref.as_ref() {
        e.extend(validate_container_resource_field_selector(
            rf,
            &p.child("resourceFieldRef"),
            true,
        ));
    } else {
        e.push(FieldError::required(
            p.clone(),
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    if let Some(m) = bad_mode(f.mode) {
        e.push(FieldError::invalid(p.child("mode"), m, FILE_MODE_ERROR));
    }
    e
}

fn validate_projected(
    proj: &ProjectedVolumeSource,
    p: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut e = ErrorList::new();
    if let Some(m) = bad_mode(proj.default_mode) {
        e.push(FieldError::invalid(
            p.child("defaultMode"),
            m,
            FILE_MODE_ERROR,
        ));
    }
    let mut all_paths: BTreeSet<String> = BTreeSet::new();
    for (i, src) in proj.sources.iter().flatten().enumerate() {
        let mut n = 0;
        let sp = p.child("sources").index(i);
        if let Some(s) = src.secret.as_ref() {
            n += 1;
            let pp = sp.child("secret");
            required_str(&mut e, &s.name, pp.child("name"));
            for (j, kp) in s.items.iter().flatten().enumerate() {
                e.extend(validate_key_to_path(kp, &pp.child("items").index(j)));
                if !kp.path.is_empty() && !all_paths.insert(kp.path.clone()) {
                    e.push(FieldError::invalid(
                        p.clone(),
                        s.name.as_str(),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        if let Some(c) = src.config_map.as_ref() {
            n += 1;
            let pp = sp.child("configMap");
            required_str(&mut e, &c.name, pp.child("name"));
            for (j, kp) in c.items.iter().flatten().enumerate() {
                e.extend(validate_key_to_path(kp, &pp.child("items").index(j)));
                if !kp.path.is_empty() && !all_paths.insert(kp.path.clone()) {
                    e.push(FieldError::invalid(
                        p.clone(),
                        c.name.as_str(),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        if let Some(d) = src.downward_api.as_ref() {
            n += 1;
            let pp = sp.child("downwardAPI");
            for f in d.items.iter().flatten() {
                e.extend(validate_downward_api_volume_file(f, &pp, opts));
                if !f.path.is_empty() && !all_paths.insert(f.path.clone()) {
                    e.push(FieldError::invalid(
                        p.clone(),
                        f.path.as_str(),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        if let Some(t) = src.service_account_token.as_ref() {
            n += 1;
            let pp = sp.child("serviceAccountToken");
            let exp = t.expiration_seconds.unwrap_or(0);
            if exp < 10 * 60 {
                e.push(FieldError::invalid(
                    pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                e.push(FieldError::invalid(
                    pp.child("expirationSeconds"),
                    exp,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            if t.path.is_empty() {
                e.push(FieldError::required(p.child("path"), ""));
            } else if !opts.allow_non_local_projected_token_path {
                e.extend(validate_local_non_reserved_path(&t.path, &p.child("path")));
            }
        }
        if let Some(b) = src.cluster_trust_bundle.as_ref() {
            n += 1;
            let pp = sp.child("clusterTrustBundle");
            match (b.name.as_deref(), b.signer_name.as_deref()) {
                (Some(_), Some(_)) => e.push(FieldError::invalid(
                    pp.clone(),
                    json!(b),
                    "only one of name and signerName may be used",
                )),
                (Some(name), None) => {
                    if name.is_empty() {
                        e.push(FieldError::required(
                            pp.child("name"),
                            "must be a valid object name",
                        ));
                    }
                    for m in cluster_trust_bundle_name_errors(name) {
                        e.push(FieldError::invalid(
                            pp.child("name"),
                            name,
                            format!("not a valid clustertrustbundlename: {m}"),
                        ));
                    }
                    if b.label_selector.is_some() {
                        e.push(FieldError::invalid(
                            pp.child("labelSelector"),
                            json!(b.label_selector),
                            "labelSelector must be unset if name is specified",
                        ));
                    }
                }
                (None, Some(signer)) => {
                    if signer.is_empty() {
                        e.push(FieldError::required(
                            pp.child("signerName"),
                            "must be a valid signer name",
                        ));
                    }
                    e.extend(validate_signer_name(&pp.child("signerName"), signer));
                    e.extend(validate_label_selector(
                        b.label_selector.as_ref(),
                        LabelSelectorValidationOptions::default(),
                        &pp.child("labelSelector"),
                    ));
                }
                (None, None) => e.push(FieldError::required(
                    pp.clone(),
                    "either name or signerName must be specified",
                )),
            }
            if b.path.is_empty() {
                e.push(FieldError::required(pp.child("path"), ""));
            }
            e.extend(validate_local_non_reserved_path(&b.path, &pp.child("path")));
            if !all_paths.insert(b.path.clone()) {
                e.push(FieldError::invalid(
                    p.clone(),
                    b.path.as_str(),
                    "conflicting duplicate paths",
                ));
            }
        }
        if n > 1 {
            e.push(FieldError::forbidden(
                sp,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    e
}

/// `ValidateClusterTrustBundleName` for the signer the name implies
/// (`extractSignerNameFromClusterTrustBundleName`): `<signer with : for />:<subdomain>` when the
/// name has a `:`, a plain DNS subdomain otherwise.
fn cluster_trust_bundle_name_errors(name: &str) -> Vec<String> {
    match name.rfind(':') {
        Some(i) => {
            let signer = name[..i].replace(':', "/");
            let prefix = format!("{}:", signer.replace('/', ":"));
            match name.strip_prefix(&prefix) {
                None => vec![format!(
                    "ClusterTrustBundle for signerName {signer} must be named with prefix {prefix}"
                )],
                Some(rest) => name_is_dns_subdomain(rest, false),
            }
        }
        None => name_is_dns_subdomain(name, false),
    }
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain a DNS name with at least two labels,
/// the path DNS subdomains joined by `.`.
fn validate_signer_name(p: &Path, name: &str) -> ErrorList {
    let mut e = ErrorList::new();
    if name.is_empty() {
        e.push(FieldError::required(p.clone(), ""));
        return e;
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [domain, path] = segments.as_slice() else {
        e.push(FieldError::invalid(
            p.clone(),
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return e;
    };
    if domain.len() > 253 {
        e.push(FieldError::too_long(p.clone(), 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for l in &labels {
        let errs = is_dns1123_label(l);
        if !errs.is_empty() {
            for m in errs {
                e.push(FieldError::invalid(
                    p.clone(),
                    *domain,
                    format!("validating label {l:?}: {m}"),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        e.push(FieldError::invalid(
            p.clone(),
            *domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for l in path.split('.') {
        let errs = is_dns1123_subdomain(l);
        if !errs.is_empty() {
            for m in errs {
                e.push(FieldError::invalid(
                    p.clone(),
                    *path,
                    format!("validating label {l:?}: {m}"),
                ));
            }
            break;
        }
    }
    let max = 253 + (253 + 63 + 1) + 1;
    if name.len() > max {
        e.push(FieldError::too_long(p.clone(), max));
    }
    e
}

/// `validateLocalDescendingPath`: relative, and no `..` element.
pub(crate) fn validate_local_descending_path(target: &str, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    if target.starts_with('/') {
        e.push(FieldError::invalid(
            p.clone(),
            target,
            "must be a relative path",
        ));
    }
    e.extend(validate_path_no_backsteps(target, p));
    e
}

/// `validatePathNoBacksteps`: no `..` element.
pub(crate) fn validate_path_no_backsteps(target: &str, p: &Path) -> ErrorList {
    if target.split('/').any(|s| s == "..") {
        vec![FieldError::invalid(
            p.clone(),
            target,
            "must not contain '..'",
        )]
    } else {
        ErrorList::new()
    }
}

/// `ValidateLocalNonReservedPath`: a local descending path that does not start with `..`.
pub(crate) fn validate_local_non_reserved_path(target: &str, p: &Path) -> ErrorList {
    let mut e = validate_local_descending_path(target, p);
    if target.starts_with("..") && !target.starts_with("../") {
        e.push(FieldError::invalid(
            p.clone(),
            target,
            "must not start with '..'",
        ));
    }
    e
}

/// Go's `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['key']` → (`metadata.labels`,
/// `key`).
fn split_subscripted(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (head, sub) = s.split_once("['")?;
    (!head.is_empty()).then_some((head, sub))
}

/// Field labels `ConvertDownwardAPIFieldLabel` accepts for `v1`.
const CONVERTIBLE_FIELD_LABELS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateObjectFieldSelector`: `apiVersion` (defaulted to `v1`) and a supported field path;
/// label and annotation subscripts must be qualified names.
pub(crate) fn validate_object_field_selector(
    fs: &ObjectFieldSelector,
    expressions: &[&str],
    p: &Path,
) -> ErrorList {
    let version = opt(&fs.api_version);
    if version.is_empty() {
        return vec![FieldError::required(p.child("apiVersion"), "")];
    }
    if fs.field_path.is_empty() {
        return vec![FieldError::required(p.child("fieldPath"), "")];
    }
    let label = fs.field_path.as_str();
    // ConvertDownwardAPIFieldLabel.
    let converted: Result<String, String> = if version != "v1" {
        Err(format!("unsupported pod version: {version}"))
    } else if let Some((path, _)) = split_subscripted(label) {
        match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_owned()),
            _ => Err(format!("field label does not support subscript: {label}")),
        }
    } else if label == "spec.host" {
        Ok("spec.nodeName".into())
    } else if CONVERTIBLE_FIELD_LABELS.contains(&label) {
        Ok(label.to_owned())
    } else {
        Err(format!("field label not supported: {label}"))
    };
    let internal = match converted {
        Ok(l) => l,
        Err(err) => {
            return vec![FieldError::invalid(
                p.child("fieldPath"),
                label,
                format!("error converting fieldPath: {err}"),
            )];
        }
    };
    let mut e = ErrorList::new();
    match split_subscripted(&internal) {
        Some(("metadata.annotations", sub)) => e.extend(
            is_qualified_name(&sub.to_lowercase())
                .into_iter()
                .map(|m| FieldError::invalid(p.clone(), sub.to_lowercase(), m)),
        ),
        Some(("metadata.labels", sub)) => e.extend(
            is_qualified_name(sub)
                .into_iter()
                .map(|m| FieldError::invalid(p.clone(), sub, m)),
        ),
        Some((path, _)) => e.push(FieldError::invalid(
            p.clone(),
            path,
            "does not support subscript",
        )),
        None => {
            if !expressions.contains(&internal.as_str()) {
                let mut sorted = expressions.to_vec();
                sorted.sort_unstable();
                e.push(FieldError::not_supported(
                    p.child("fieldPath"),
                    internal.as_str(),
                    &sorted,
                ));
            }
        }
    }
    e
}

/// Resources a `resourceFieldRef` may name.
pub(crate) const CONTAINER_RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `validateContainerResourceFieldSelector` (with the huge-pages prefixes of the downward API)
/// and `validateContainerResourceDivisor`.
pub(crate) fn validate_container_resource_field_selector(
    fs: &ResourceFieldSelector,
    p: &Path,
    volume: bool,
) -> ErrorList {
    let mut e = ErrorList::new();
    if volume && opt(&fs.container_name).is_empty() {
        e.push(FieldError::required(p.child("containerName"), ""));
    } else if fs.resource.is_empty() {
        e.push(FieldError::required(p.child("resource"), ""));
    } else if !CONTAINER_RESOURCE_FIELD_PATHS.contains(&fs.resource.as_str())
        && !fs.resource.starts_with("requests.hugepages-")
        && !fs.resource.starts_with("limits.hugepages-")
    {
        e.push(FieldError::not_supported(
            p.child("resource"),
            fs.resource.as_str(),
            CONTAINER_RESOURCE_FIELD_PATHS,
        ));
    }
    // validateContainerResourceDivisor.
    let divisor = fs
        .divisor
        .as_ref()
        .and_then(|d| parse_quantity(&d.0).ok())
        .filter(|d| !d.is_zero());
    if let Some(d) = divisor {
        let text = d.canonical();
        const MEM: &[&str] = &[
            "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
        ];
        let r = fs.resource.as_str();
        let dp = p.child("divisor");
        match r {
            "limits.cpu" | "requests.cpu" if !["1m", "1"].contains(&text.as_str()) => {
                e.push(FieldError::invalid(
                    dp.clone(),
                    r,
                    "only divisor's values 1m and 1 are supported with the cpu resource",
                ));
            }
            "limits.memory" | "requests.memory" if !MEM.contains(&text.as_str()) => {
                e.push(FieldError::invalid(dp.clone(), r, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"));
            }
            "limits.ephemeral-storage" | "requests.ephemeral-storage"
                if !MEM.contains(&text.as_str()) =>
            {
                e.push(FieldError::invalid(dp.clone(), r, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"));
            }
            _ => {}
        }
        if (r.starts_with("requests.hugepages-") || r.starts_with("limits.hugepages-"))
            && !MEM.contains(&text.as_str())
        {
            e.push(FieldError::invalid(dp, r, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"));
        }
    }
    e
}
