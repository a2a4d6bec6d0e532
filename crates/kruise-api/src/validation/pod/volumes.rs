//! Volume rules of `ValidatePodSpec` (`ValidateVolumes`, `validateVolumeSource` and the rules
//! of each volume source), Kubernetes v1.32.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    AWSElasticBlockStoreVolumeSource, AzureFileVolumeSource, CSIVolumeSource, CephFSVolumeSource,
    CinderVolumeSource, ClusterTrustBundleProjection, ConfigMapVolumeSource, DownwardAPIProjection,
    DownwardAPIVolumeFile, DownwardAPIVolumeSource, EmptyDirVolumeSource, EphemeralVolumeSource,
    FCVolumeSource, FlexVolumeSource, FlockerVolumeSource, GCEPersistentDiskVolumeSource,
    GitRepoVolumeSource, GlusterfsVolumeSource, HostPathVolumeSource, ImageVolumeSource, KeyToPath,
    NFSVolumeSource, ObjectFieldSelector, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PhotonPersistentDiskVolumeSource, PortworxVolumeSource,
    ProjectedVolumeSource, QuobyteVolumeSource, RBDVolumeSource, ResourceFieldSelector,
    ScaleIOVolumeSource, SecretVolumeSource, ServiceAccountTokenProjection, StorageOSVolumeSource,
    TypedObjectReference, Volume, VsphereVirtualDiskVolumeSource,
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

/// The sources of one volume seen so far (`numVolumes` in Go's `validateVolumeSource`) and the
/// errors found in them.
struct VolumeSources<'a> {
    path: &'a Path,
    count: usize,
    errs: ErrorList,
}

impl<'a> VolumeSources<'a> {
    fn new(path: &'a Path) -> Self {
        Self {
            path,
            count: 0,
            errs: ErrorList::new(),
        }
    }

    /// One source of `validateVolumeSource`: a second one is forbidden (reported on `name`), the
    /// first is checked by `check`.
    fn check<T>(&mut self, src: &Option<T>, name: &str, check: impl FnOnce(&T) -> ErrorList) {
        if let Some(src) = src.as_ref() {
            if self.count > 0 {
                self.errs
                    .push(FieldError::forbidden(self.path.child(name), MORE_THAN_ONE));
            } else {
                self.count += 1;
                self.errs.extend(check(src));
            }
        }
    }

    /// The end of `validateVolumeSource`: some source is required.
    fn finish(mut self) -> ErrorList {
        if self.count == 0 {
            self.errs.push(FieldError::required(
                self.path.clone(),
                "must specify a volume type",
            ));
        }
        self.errs
    }
}

/// `validateVolumeSource`: exactly one source, checked by its own rules. Paths follow Go,
/// including its slips (`downwarAPI` for a second downward API source, `persistentDisk` for a
/// GCE disk's fields, `cephFS`/`cephfs`).
fn validate_volume_source(v: &Volume, path: &Path, opts: &PodValidationOptions) -> ErrorList {
    let mut s = VolumeSources::new(path);
    // Go counts `emptyDir` without the "more than 1" check; as the first source it never fails.
    s.check(&v.empty_dir, "emptyDir", |e| {
        validate_empty_dir_volume_source(e, &path.child("emptyDir"))
    });
    s.check(&v.host_path, "hostPath", |h| {
        validate_host_path_volume_source(h, &path.child("hostPath"))
    });
    s.check(&v.git_repo, "gitRepo", |g| {
        validate_git_repo_volume_source(g, &path.child("gitRepo"))
    });
    s.check(&v.gce_persistent_disk, "gcePersistentDisk", |g| {
        validate_gce_persistent_disk_volume_source(g, &path.child("persistentDisk"))
    });
    s.check(&v.aws_elastic_block_store, "awsElasticBlockStore", |a| {
        validate_aws_elastic_block_store_volume_source(a, &path.child("awsElasticBlockStore"))
    });
    s.check(&v.secret, "secret", |sec| {
        validate_secret_volume_source(sec, &path.child("secret"))
    });
    s.check(&v.nfs, "nfs", |n| {
        validate_nfs_volume_source(n, &path.child("nfs"))
    });
    s.check(&v.iscsi, "iscsi", |i| {
        validate_iscsi(i, &path.child("iscsi"))
    });
    s.errs.extend(validate_iscsi_volume_name(v, path));
    s.check(&v.glusterfs, "glusterfs", |g| {
        validate_glusterfs_volume_source(g, &path.child("glusterfs"))
    });
    s.check(&v.flocker, "flocker", |f| {
        validate_flocker_volume_source(f, &path.child("flocker"))
    });
    s.check(&v.persistent_volume_claim, "persistentVolumeClaim", |c| {
        validate_persistent_claim_volume_source(c, &path.child("persistentVolumeClaim"))
    });
    s.check(&v.rbd, "rbd", |r| {
        validate_rbd_volume_source(r, &path.child("rbd"))
    });
    s.check(&v.cinder, "cinder", |c| {
        validate_cinder_volume_source(c, &path.child("cinder"))
    });
    s.check(&v.cephfs, "cephFS", |c| {
        validate_ceph_fs_volume_source(c, &path.child("cephfs"))
    });
    s.check(&v.quobyte, "quobyte", |q| {
        validate_quobyte_volume_source(q, &path.child("quobyte"))
    });
    s.check(&v.downward_api, "downwarAPI", |d| {
        validate_downward_api_volume_source(d, &path.child("downwardAPI"), opts)
    });
    s.check(&v.fc, "fc", |f| {
        validate_fc_volume_source(f, &path.child("fc"))
    });
    s.check(&v.flex_volume, "flexVolume", |f| {
        validate_flex_volume_source(f, &path.child("flexVolume"))
    });
    s.check(&v.config_map, "configMap", |c| {
        validate_config_map_volume_source(c, &path.child("configMap"))
    });
    s.check(&v.azure_file, "azureFile", |a| {
        validate_azure_file(a, &path.child("azureFile"))
    });
    s.check(&v.vsphere_volume, "vsphereVolume", |sv| {
        validate_vsphere_volume_source(sv, &path.child("vsphereVolume"))
    });
    s.check(&v.photon_persistent_disk, "photonPersistentDisk", |pd| {
        validate_photon_persistent_disk_volume_source(pd, &path.child("photonPersistentDisk"))
    });
    s.check(&v.portworx_volume, "portworxVolume", |pw| {
        validate_portworx_volume_source(pw, &path.child("portworxVolume"))
    });
    s.check(&v.azure_disk, "azureDisk", |a| {
        validate_azure_disk(a, &path.child("azureDisk"))
    });
    s.check(&v.storageos, "storageos", |so| {
        validate_storage_os_volume_source(so, &path.child("storageos"))
    });
    s.check(&v.projected, "projected", |p| {
        validate_projected(p, &path.child("projected"), opts)
    });
    s.check(&v.scale_io, "scaleIO", |sio| {
        validate_scale_io_volume_source(sio, &path.child("scaleIO"))
    });
    s.check(&v.csi, "csi", |c| {
        validate_csi_volume_source(c, &path.child("csi"))
    });
    s.check(&v.ephemeral, "ephemeral", |e| {
        validate_ephemeral_volume_source(e, &path.child("ephemeral"))
    });
    s.check(&v.image, "image", |i| {
        validate_image_volume_source(i, &path.child("image"), opts)
    });
    s.finish()
}

/// The `emptyDir` rule of Go's `validateVolumeSource`: a `sizeLimit` must not be negative.
fn validate_empty_dir_volume_source(e: &EmptyDirVolumeSource, p: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(q) = e.size_limit.as_ref()
        && parse_quantity(&q.0).is_ok_and(|q| q.sign() < 0)
    {
        errs.push(FieldError::forbidden(
            p.child("sizeLimit"),
            "SizeLimit field must be a valid resource quantity",
        ));
    }
    errs
}

/// `validateHostPathVolumeSource`: a path without backsteps and a known type.
fn validate_host_path_volume_source(h: &HostPathVolumeSource, p: &Path) -> ErrorList {
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

/// `validateGitRepoVolumeSource`: a repository and a local, descending directory.
fn validate_git_repo_volume_source(g: &GitRepoVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &g.repository, p.child("repository"));
    e.extend(validate_local_descending_path(
        opt(&g.directory),
        &p.child("directory"),
    ));
    e
}

/// `validateGCEPersistentDiskVolumeSource`: a disk name and a partition in 0..=255.
fn validate_gce_persistent_disk_volume_source(
    g: &GCEPersistentDiskVolumeSource,
    p: &Path,
) -> ErrorList {
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

/// `validateAWSElasticBlockStoreVolumeSource`: a volume ID and a partition in 0..=255.
fn validate_aws_elastic_block_store_volume_source(
    a: &AWSElasticBlockStoreVolumeSource,
    p: &Path,
) -> ErrorList {
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

/// `validateSecretVolumeSource`: a secret name, a file mode and valid items.
fn validate_secret_volume_source(s: &SecretVolumeSource, p: &Path) -> ErrorList {
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

/// `validateNFSVolumeSource`: a server and an absolute path.
fn validate_nfs_volume_source(s: &NFSVolumeSource, p: &Path) -> ErrorList {
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

/// The iSCSI rule of Go's `validateVolumeSource` (checked even for a second, forbidden source):
/// with an initiator name, `<volume name>:<targetPortal>` must fit in 64 characters.
fn validate_iscsi_volume_name(v: &Volume, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(s) = v.iscsi.as_ref()
        && s.initiator_name.is_some()
        && v.name.len() + 1 + s.target_portal.len() > 64
    {
        errs.push(FieldError::invalid(
            path.child("name"),
            v.name.as_str(),
            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
        ));
    }
    errs
}

/// `validateGlusterfsVolumeSource`: endpoints and a path.
fn validate_glusterfs_volume_source(g: &GlusterfsVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &g.endpoints, p.child("endpoints"));
    required_str(&mut e, &g.path, p.child("path"));
    e
}

/// `validateFlockerVolumeSource`: exactly one of dataset name and UUID, a name without `/`.
fn validate_flocker_volume_source(f: &FlockerVolumeSource, p: &Path) -> ErrorList {
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

/// `validatePersistentClaimVolumeSource`: a claim name.
fn validate_persistent_claim_volume_source(
    c: &PersistentVolumeClaimVolumeSource,
    p: &Path,
) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &c.claim_name, p.child("claimName"));
    e
}

/// `validateRBDVolumeSource`: monitors and an image.
fn validate_rbd_volume_source(r: &RBDVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    if r.monitors.is_empty() {
        e.push(FieldError::required(p.child("monitors"), ""));
    }
    required_str(&mut e, &r.image, p.child("image"));
    e
}

/// `validateCinderVolumeSource`: a volume ID, and a name for a secret reference.
fn validate_cinder_volume_source(c: &CinderVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &c.volume_id, p.child("volumeID"));
    if let Some(s) = c.secret_ref.as_ref() {
        required_str(&mut e, &s.name, p.children(&["secretRef", "name"]));
    }
    e
}

/// `validateCephFSVolumeSource`: monitors.
fn validate_ceph_fs_volume_source(c: &CephFSVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    if c.monitors.is_empty() {
        e.push(FieldError::required(p.child("monitors"), ""));
    }
    e
}

/// `validateQuobyteVolumeSource`: a registry of `host:port` pairs, a tenant of at most 64
/// characters and a volume.
fn validate_quobyte_volume_source(q: &QuobyteVolumeSource, p: &Path) -> ErrorList {
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

/// `validateDownwardAPIVolumeSource`: a file mode and valid files.
fn validate_downward_api_volume_source(
    d: &DownwardAPIVolumeSource,
    p: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut e = ErrorList::new();
    if let Some(m) = bad_mode(d.default_mode) {
        e.push(FieldError::invalid(
            p.child("defaultMode"),
            m,
            FILE_MODE_ERROR,
        ));
    }
    for f in d.items.iter().flatten() {
        e.extend(validate_downward_api_volume_file(f, p, opts));
    }
    e
}

/// `validateFCVolumeSource`: either target WWNs (with a LUN in 0..=255) or WWIDs.
fn validate_fc_volume_source(f: &FCVolumeSource, p: &Path) -> ErrorList {
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

/// `validateFlexVolumeSource`: a driver, and no option in the reserved namespaces.
fn validate_flex_volume_source(f: &FlexVolumeSource, p: &Path) -> ErrorList {
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

/// `validateConfigMapVolumeSource`: a name, a file mode and valid items.
fn validate_config_map_volume_source(c: &ConfigMapVolumeSource, p: &Path) -> ErrorList {
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

/// `validateAzureFile`: a secret name and a share name.
fn validate_azure_file(a: &AzureFileVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &a.secret_name, p.child("secretName"));
    required_str(&mut e, &a.share_name, p.child("shareName"));
    e
}

/// `validateVsphereVolumeSource`: a volume path.
fn validate_vsphere_volume_source(s: &VsphereVirtualDiskVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &s.volume_path, p.child("volumePath"));
    e
}

/// `validatePhotonPersistentDiskVolumeSource`: a disk ID.
fn validate_photon_persistent_disk_volume_source(
    s: &PhotonPersistentDiskVolumeSource,
    p: &Path,
) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &s.pd_id, p.child("pdID"));
    e
}

/// `validatePortworxVolumeSource`: a volume ID.
fn validate_portworx_volume_source(s: &PortworxVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &s.volume_id, p.child("volumeID"));
    e
}

/// `validateStorageOSVolumeSource`: a DNS-1123 label volume name (and namespace, if set), and a
/// name for a secret reference.
fn validate_storage_os_volume_source(s: &StorageOSVolumeSource, p: &Path) -> ErrorList {
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

/// `validateScaleIOVolumeSource`: a gateway, a system and a volume name.
fn validate_scale_io_volume_source(s: &ScaleIOVolumeSource, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    required_str(&mut e, &s.gateway, p.child("gateway"));
    required_str(&mut e, &s.system, p.child("system"));
    required_str(&mut e, opt(&s.volume_name), p.child("volumeName"));
    e
}

/// `validateCSIVolumeSource`: a driver name, and a DNS subdomain name for a node-publish
/// secret reference.
fn validate_csi_volume_source(c: &CSIVolumeSource, p: &Path) -> ErrorList {
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

/// `validateEphemeralVolumeSource`: a claim template (`ValidatePersistentVolumeClaimTemplate`:
/// template metadata, then the claim spec).
fn validate_ephemeral_volume_source(eph: &EphemeralVolumeSource, p: &Path) -> ErrorList {
    match eph.volume_claim_template.as_ref() {
        None => vec![FieldError::required(p.child("volumeClaimTemplate"), "")],
        Some(t) => {
            let tp = p.child("volumeClaimTemplate");
            let meta = t.metadata.clone().unwrap_or_default();
            let mp = tp.child("metadata");
            let mut e = validate_annotations(meta.annotations.as_ref(), &mp.child("annotations"));
            e.extend(validate_labels(meta.labels.as_ref(), &mp.child("labels")));
            e.extend(validate_template_meta_allow_list(&meta, &mp));
            e.extend(validate_pvc_spec(&t.spec, &tp.child("spec")));
            e
        }
    }
}

/// `validateImageVolumeSource`: a reference (for pods) and a pull policy.
fn validate_image_volume_source(
    i: &ImageVolumeSource,
    p: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
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
    e.extend(validate_pvc_access_modes(modes, &p.child("accessModes")));
    e.extend(validate_pvc_storage_request(
        spec,
        &p.child("resources").key("storage"),
    ));
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
    if let Some(ds) = spec.data_source.as_ref() {
        e.extend(validate_data_source(
            &ds.name,
            &ds.kind,
            ds.api_group.as_deref(),
            &p.child("dataSource"),
        ));
    }
    if let Some(dr) = spec.data_source_ref.as_ref() {
        e.extend(validate_data_source_ref(dr, &p.child("dataSourceRef")));
    }
    e.extend(validate_data_source_and_ref(spec, p));
    e
}

/// The access-mode loop of `ValidatePersistentVolumeClaimSpec`: known modes, and
/// `ReadWriteOncePod` alone.
fn validate_pvc_access_modes(modes: &[String], p: &Path) -> ErrorList {
    const MODES: &[&str] = &[
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let mut e = ErrorList::new();
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        if !MODES.contains(&m.as_str()) {
            e.push(FieldError::not_supported(p.clone(), m.as_str(), MODES));
        }
        if m == "ReadWriteOncePod" {
            rwop = true;
        } else if MODES.contains(&m.as_str()) {
            other = true;
        }
    }
    if rwop && other {
        e.push(FieldError::forbidden(
            p.clone(),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    e
}

/// The storage-request rule of `ValidatePersistentVolumeClaimSpec`
/// (`ValidatePositiveQuantityValue`): required and greater than zero.
fn validate_pvc_storage_request(spec: &PersistentVolumeClaimSpec, sp: &Path) -> ErrorList {
    let mut e = ErrorList::new();
    match spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
    {
        None => e.push(FieldError::required(sp.clone(), "")),
        Some(q) => match parse_quantity(&q.0) {
            Ok(v) if v.sign() <= 0 => e.push(FieldError::invalid(
                sp.clone(),
                v.canonical(),
                "must be greater than zero",
            )),
            _ => {}
        },
    }
    e
}

/// `validateDataSource`: a name and a kind, `PersistentVolumeClaim` for the core group, a
/// DNS-1123 subdomain group otherwise (also the common part of `validateDataSourceRef`).
fn validate_data_source(name: &str, kind: &str, group: Option<&str>, dp: &Path) -> ErrorList {
    let mut e = ErrorList::new();
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
    e
}

/// `validateDataSourceRef`: the `validateDataSource` rules, and a DNS-1123 label namespace.
fn validate_data_source_ref(dr: &TypedObjectReference, dp: &Path) -> ErrorList {
    let mut e = validate_data_source(&dr.name, &dr.kind, dr.api_group.as_deref(), dp);
    if let Some(ns) = dr.namespace.as_deref()
        && !ns.is_empty()
    {
        e.extend(
            name_is_dns_label(ns, false)
                .into_iter()
                .map(|m| FieldError::invalid(dp.child("namespace"), ns, m)),
        );
    }
    e
}

/// The `dataSource`/`dataSourceRef` agreement rule of `ValidatePersistentVolumeClaimSpec`
/// (`isDataSourceEqualDataSourceRef`): no `dataSource` with a cross-namespace reference,
/// otherwise both equal when both are set.
fn validate_data_source_and_ref(spec: &PersistentVolumeClaimSpec, p: &Path) -> ErrorList {
    let mut e = ErrorList::new();
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

/// `validateProjectedVolumeSource`: a file mode, then the sources.
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
    e.extend(validate_projection_sources(proj, p, opts));
    e
}

/// The state `validateProjectionSources` shares between the sources of one projected volume.
struct Projection<'a> {
    /// The projected volume's path (duplicate and token paths are reported on it).
    path: &'a Path,
    opts: &'a PodValidationOptions,
    /// The file paths projected so far (`allPaths` in Go).
    all_paths: BTreeSet<String>,
    errs: ErrorList,
}

/// `validateProjectionSources`: each source has exactly one valid projection, and no two
/// projections write the same path.
fn validate_projection_sources(
    proj: &ProjectedVolumeSource,
    p: &Path,
    opts: &PodValidationOptions,
) -> ErrorList {
    let mut ctx = Projection {
        path: p,
        opts,
        all_paths: BTreeSet::new(),
        errs: ErrorList::new(),
    };
    for (i, src) in proj.sources.iter().flatten().enumerate() {
        let mut n = 0;
        let sp = p.child("sources").index(i);
        if let Some(s) = src.secret.as_ref() {
            n += 1;
            ctx.key_to_path_items(&s.name, s.items.as_deref(), &sp.child("secret"));
        }
        if let Some(c) = src.config_map.as_ref() {
            n += 1;
            ctx.key_to_path_items(&c.name, c.items.as_deref(), &sp.child("configMap"));
        }
        if let Some(d) = src.downward_api.as_ref() {
            n += 1;
            ctx.downward_api(d, &sp.child("downwardAPI"));
        }
        if let Some(t) = src.service_account_token.as_ref() {
            n += 1;
            ctx.service_account_token(t, &sp.child("serviceAccountToken"));
        }
        if let Some(b) = src.cluster_trust_bundle.as_ref() {
            n += 1;
            ctx.cluster_trust_bundle(b, &sp.child("clusterTrustBundle"));
        }
        if n > 1 {
            ctx.errs.push(FieldError::forbidden(
                sp,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    ctx.errs
}

impl Projection<'_> {
    /// The duplicate-path rule of `validateProjectionSources`: `path` must not be projected
    /// twice (reported with `value` on the volume's path).
    fn claim_path(&mut self, path: &str, value: &str) {
        if !self.all_paths.insert(path.to_owned()) {
            self.errs.push(FieldError::invalid(
                self.path.clone(),
                value,
                "conflicting duplicate paths",
            ));
        }
    }

    /// The `secret` and `configMap` projections of `validateProjectionSources`: a name and valid
    /// items with unique paths.
    fn key_to_path_items(&mut self, name: &str, items: Option<&[KeyToPath]>, pp: &Path) {
        required_str(&mut self.errs, name, pp.child("name"));
        for (j, kp) in items.into_iter().flatten().enumerate() {
            self.errs
                .extend(validate_key_to_path(kp, &pp.child("items").index(j)));
            if !kp.path.is_empty() {
                self.claim_path(&kp.path, name);
            }
        }
    }

    /// The `downwardAPI` projection of `validateProjectionSources`: valid files with unique
    /// paths.
    fn downward_api(&mut self, d: &DownwardAPIProjection, pp: &Path) {
        for f in d.items.iter().flatten() {
            self.errs
                .extend(validate_downward_api_volume_file(f, pp, self.opts));
            if !f.path.is_empty() {
                self.claim_path(&f.path, &f.path);
            }
        }
    }

    /// The `serviceAccountToken` projection of `validateProjectionSources`: an expiration
    /// between 10 minutes and 2^32 seconds, and a (local) path.
    fn service_account_token(&mut self, t: &ServiceAccountTokenProjection, pp: &Path) {
        let exp = t.expiration_seconds.unwrap_or(0);
        if exp < 10 * 60 {
            self.errs.push(FieldError::invalid(
                pp.child("expirationSeconds"),
                exp,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if exp > 1 << 32 {
            self.errs.push(FieldError::invalid(
                pp.child("expirationSeconds"),
                exp,
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        if t.path.is_empty() {
            self.errs
                .push(FieldError::required(self.path.child("path"), ""));
        } else if !self.opts.allow_non_local_projected_token_path {
            self.errs.extend(validate_local_non_reserved_path(
                &t.path,
                &self.path.child("path"),
            ));
        }
    }

    /// The `clusterTrustBundle` projection of `validateProjectionSources`: a name or a signer
    /// name (with a label selector), and a unique local path.
    fn cluster_trust_bundle(&mut self, b: &ClusterTrustBundleProjection, pp: &Path) {
        let e = &mut self.errs;
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
        self.claim_path(&b.path, &b.path);
    }
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
