//! SidecarSet injection into a pod being created — OpenKruise v1.9.0's
//! `pkg/webhook/pod/mutating/sidecarset.go` (`sidecarsetMutatingPod` after the SidecarSets are
//! chosen, `buildSidecars`, `mergeSidecarContainers`, `mergeSidecarSecrets`) and
//! `sidecarset_hotupgrade.go`, as a pure function: the caller picks the matching SidecarSets
//! (already resolved to the revision to inject) and passes the clock.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, LocalObjectReference, ObjectFieldSelector, Pod, Volume,
};
use kruise_api::apps::v1beta1::{SidecarContainer, SidecarSet};
use kruise_api::keys;

use super::control::{
    self, SidecarSetUpgradeSpec, go_time, hot_upgrade_names, injected_volume_devices,
    injected_volume_mounts_and_envs, is_hot_upgrade, is_native_sidecar, merge_env,
    merge_volume_devices, merge_volume_mounts, transfer_envs,
};
use super::resources;

/// Options of one injection.
#[derive(Debug, Clone, Copy)]
pub struct InjectOptions {
    /// Gate `EnableSortSidecarContainerByName`: injected containers sorted by name.
    pub sort_containers_by_name: bool,
    /// The time written into the upgrade specs.
    pub now: jiff::Timestamp,
}

/// Why injection refused the pod (the webhook denies the create with this text).
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// A hash annotation of the pod is unreadable.
    #[error("pod({namespace}/{name}) {source}")]
    Annotation {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        name: String,
        /// The decoding error.
        source: control::AnnotationError,
    },
    /// `patchPodMetadata` could not be applied.
    #[error("{0}")]
    PatchMetadata(#[from] control::PatchMetadataError),
    /// A `resourcesPolicy` could not be evaluated.
    #[error("{0}")]
    Resources(String),
    /// Where OpenKruise's webhook panics and controller-runtime answers with the recovered
    /// value: a pod annotation it reads into a map is `null`, and it writes into that nil map.
    #[error("panic: {0} [recovered]")]
    Panic(&'static str),
}

/// The Go runtime's message for a write into a nil map.
const NIL_MAP: &str = "assignment to entry in nil map";

/// Injects the SidecarSets `matched` (in this order; owned, borrowed or shared — anything that
/// borrows as a [`SidecarSet`], so a caller need not copy cached ones) into a pod being created (OpenKruise
/// `sidecarsetMutatingPod` from the metadata patch on). Returns whether the pod is unchanged
/// (`skip`), as OpenKruise's handler does.
///
/// Steps: `patchPodMetadata` of every SidecarSet; then per SidecarSet its init containers
/// (shared mounts, transferred env, `IS_INJECTED`, resources policy, hot-upgrade pairs for
/// native sidecars), image pull secrets and containers (the same, hot-upgrade pairs with
/// version env vars), the volumes its containers mount and the upgrade specs; then the init
/// containers sorted by name after the pod's own, the containers before or after the pod's
/// (sorted by name with [`InjectOptions::sort_containers_by_name`]; a container of the same
/// name as one of the pod's replaces it in place), volumes (the pod's win), pull secrets
/// (union) and the annotations `kruise.io/sidecarset-hash`, `-hash-without-image`,
/// `-injected-list` and, with hot upgrade, `-working-hotupgrade-container` and the version
/// annotations.
///
/// # Errors
/// [`InjectError`]: unreadable hash annotations, a metadata merge patch that is not JSON, a
/// resources policy that cannot be evaluated, a `null` hash or hot-upgrade annotation on a pod
/// that gets sidecars (Go panics).
pub fn inject<S: std::borrow::Borrow<SidecarSet>>(
    pod: &mut Pod,
    matched: &[S],
    opts: InjectOptions,
) -> Result<bool, InjectError> {
    let matched: Vec<&SidecarSet> = matched.iter().map(|s| s.borrow()).collect();
    let matched = matched.as_slice();
    let mut skip = true;
    pod.metadata
        .annotations
        .get_or_insert_with(Default::default);
    for s in matched {
        let patches = s.spec.patch_pod_metadata.as_deref().unwrap_or(&[]);
        if !control::patch_pod_metadata(pod, patches)? {
            skip = false;
        }
    }
    let built = build_sidecars(pod, matched, opts)?;
    if built.containers.is_empty() && built.init_containers.is_empty() {
        drop_empty_annotations(pod);
        return Ok(skip);
    }
    let Built {
        mut containers,
        mut init_containers,
        secrets,
        volumes,
        annotations,
    } = built;
    init_containers.sort_by(|a, b| a.container.name.cmp(&b.container.name));
    let spec = pod.spec.get_or_insert_with(Default::default);
    let own_init = spec.init_containers.take().unwrap_or_default();
    let merged_init = merge_sidecar_containers(own_init, &init_containers);
    spec.init_containers = (!merged_init.is_empty()).then_some(merged_init);
    if opts.sort_containers_by_name {
        containers.sort_by(|a, b| a.container.name.cmp(&b.container.name));
    }
    let own = std::mem::take(&mut spec.containers);
    spec.containers = merge_sidecar_containers(own, &containers);
    let mut all_volumes = spec.volumes.take().unwrap_or_default();
    let mut names: BTreeSet<String> = all_volumes.iter().map(|v| v.name.clone()).collect();
    for v in volumes {
        if names.insert(v.name.clone()) {
            all_volumes.push(v);
        }
    }
    spec.volumes = (!all_volumes.is_empty()).then_some(all_volumes);
    let merged_secrets =
        merge_secrets(spec.image_pull_secrets.take().unwrap_or_default(), &secrets);
    spec.image_pull_secrets = (!merged_secrets.is_empty()).then_some(merged_secrets);
    let anns = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    for (k, v) in annotations {
        anns.insert(k, v);
    }
    Ok(false)
}

/// Go omits an empty annotation map; so do we (no `annotations: {}` in the patch).
fn drop_empty_annotations(pod: &mut Pod) {
    if pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.is_empty())
    {
        pod.metadata.annotations = None;
    }
}

struct Built {
    containers: Vec<SidecarContainer>,
    init_containers: Vec<SidecarContainer>,
    secrets: Vec<LocalObjectReference>,
    volumes: Vec<Volume>,
    annotations: BTreeMap<String, String>,
}

fn annotation_error(pod: &Pod, source: control::AnnotationError) -> InjectError {
    InjectError::Annotation {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        source,
    }
}

/// OpenKruise `buildSidecars` for a pod being created.
fn build_sidecars(
    pod: &Pod,
    matched: &[&SidecarSet],
    opts: InjectOptions,
) -> Result<Built, InjectError> {
    let anns = pod.metadata.annotations.clone().unwrap_or_default();
    let parse = |key: &str| {
        control::parse_upgrade_specs(anns.get(key).map(String::as_str), key)
            .map_err(|e| annotation_error(pod, e))
    };
    let mut hashes = parse(keys::SIDECARSET_HASH)?;
    let mut hashes_without_image = parse(keys::SIDECARSET_HASH_WITHOUT_IMAGE)?;
    let mut set_names = control::injected_list(pod);
    let ts = go_time(opts.now);
    let kruise_names = resources::sidecar_container_names(matched.iter().copied());
    let mut b = Builder {
        pod,
        kruise_names: &kruise_names,
        hot_info: control::hot_upgrade_info_or_nil(pod),
        out: Built {
            containers: Vec::new(),
            init_containers: Vec::new(),
            secrets: Vec::new(),
            volumes: Vec::new(),
            annotations: BTreeMap::new(),
        },
    };
    for s in matched {
        let sname = control::name(s).to_string();
        set_names.insert(sname.clone());
        let Some(sidecar_list) = b.inject(s)? else {
            continue;
        };
        let (Some(hashes), Some(hashes_without_image)) =
            (hashes.as_mut(), hashes_without_image.as_mut())
        else {
            return Err(InjectError::Panic(NIL_MAP));
        };
        let list: Vec<String> = sidecar_list.into_iter().collect();
        let spec = |hash: &str, revision: String| SidecarSetUpgradeSpec {
            update_timestamp: Some(ts.clone()),
            hash: hash.to_string(),
            sidecar_set_name: sname.clone(),
            sidecar_list: Some(list.clone()),
            controller_revision: revision,
        };
        let revision = s
            .status
            .as_ref()
            .and_then(|st| st.latest_revision.clone())
            .unwrap_or_default();
        hashes.insert(
            sname.clone(),
            spec(control::sidecarset_revision(s), revision),
        );
        hashes_without_image.insert(
            sname.clone(),
            spec(control::sidecarset_without_image_revision(s), String::new()),
        );
    }
    let mut out = b.out;
    // A nil map (a `null` annotation, nothing injected) is written back as `null`.
    let encode = |m: &Option<BTreeMap<String, SidecarSetUpgradeSpec>>| {
        m.as_ref()
            .map_or_else(|| "null".to_string(), control::encode_upgrade_specs)
    };
    out.annotations
        .insert(keys::SIDECARSET_HASH.to_string(), encode(&hashes));
    out.annotations.insert(
        keys::SIDECARSET_HASH_WITHOUT_IMAGE.to_string(),
        encode(&hashes_without_image),
    );
    out.annotations.insert(
        keys::SIDECARSET_INJECTED_LIST.to_string(),
        set_names.into_iter().collect::<Vec<_>>().join(","),
    );
    Ok(out)
}

/// What [`build_sidecars`] accumulates over the matched SidecarSets (the loop body of
/// OpenKruise's `buildSidecars`).
struct Builder<'a> {
    pod: &'a Pod,
    /// The containers of every matched SidecarSet (a resources policy leaves them out).
    kruise_names: &'a BTreeSet<String>,
    /// The pod's working hot-upgrade containers (`None`: a `null` annotation, Go's nil map).
    hot_info: Option<BTreeMap<String, String>>,
    out: Built,
}

impl Builder<'_> {
    /// Injects SidecarSet `s`: its init containers, image pull secrets and containers, each
    /// prepared for the pod (resources policy, shared volumes and env), a hot-upgrade sidecar as
    /// its pair. Returns the names of its sidecars when it injected any container.
    fn inject(&mut self, s: &SidecarSet) -> Result<Option<BTreeSet<String>>, InjectError> {
        let volumes: BTreeMap<&str, &Volume> = s
            .spec
            .volumes
            .iter()
            .flatten()
            .map(|v| (v.name.as_str(), v))
            .collect();
        let mut injecting = false;
        let mut sidecar_list = BTreeSet::new();
        for init in control::init_containers(s) {
            let native = is_native_sidecar(&init.container);
            if native {
                sidecar_list.insert(init.container.name.clone());
            }
            let c = self.prepared(init, &volumes)?;
            injecting = true;
            if native && is_hot_upgrade(&c) {
                let pair = self.hot_upgrade_pair(&c)?;
                self.out.init_containers.extend(pair);
            } else {
                self.out.init_containers.push(c);
            }
        }
        self.out
            .secrets
            .extend(s.spec.image_pull_secrets.iter().flatten().cloned());
        for sc in control::containers(s) {
            sidecar_list.insert(sc.container.name.clone());
            let c = self.prepared(sc, &volumes)?;
            injecting = true;
            if is_hot_upgrade(&c) {
                let pair = self.hot_upgrade_pair(&c)?;
                self.out.containers.extend(pair);
            } else {
                self.out.containers.push(c);
            }
        }
        Ok(injecting.then_some(sidecar_list))
    }

    /// A sidecar container as injected: its resources policy applied, its volumes and env
    /// prepared for the pod ([`prepare_container`]).
    fn prepared(
        &mut self,
        sc: &SidecarContainer,
        volumes: &BTreeMap<&str, &Volume>,
    ) -> Result<SidecarContainer, InjectError> {
        let mut c = sc.clone();
        if let Some(policy) = &c.resources_policy {
            c.container.resources = Some(apply_policy(self.pod, policy, self.kruise_names)?);
        }
        prepare_container(&mut c, self.pod, volumes, &mut self.out.volumes);
        Ok(c)
    }

    /// The two containers of a hot-upgrade sidecar, recording its working container (Go
    /// panics on a nil map: `InjectError::Panic`).
    fn hot_upgrade_pair(
        &mut self,
        c: &SidecarContainer,
    ) -> Result<Vec<SidecarContainer>, InjectError> {
        let hot_info = self.hot_info.as_mut().ok_or(InjectError::Panic(NIL_MAP))?;
        let (pair, anns) = hot_upgrade_pair(hot_info, c);
        self.out.annotations.extend(anns);
        Ok(pair)
    }
}

/// The resources a `resourcesPolicy` computes from the pod's containers (not the matched
/// SidecarSets' own, `kruise_names`).
fn apply_policy(
    pod: &Pod,
    policy: &kruise_api::apps::v1beta1::ResourcesPolicy,
    kruise_names: &BTreeSet<String>,
) -> Result<k8s_openapi::api::core::v1::ResourceRequirements, InjectError> {
    let spec = pod.spec.as_ref();
    let init = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[]);
    let containers = spec.map(|s| s.containers.as_slice()).unwrap_or(&[]);
    resources::apply_resources_policy(init, containers, policy, kruise_names)
        .map_err(|e| InjectError::Resources(e.to_string()))
}

/// Mounts, env and devices of one injected (init) container, and the SidecarSet volumes it
/// uses added to `volumes_out`.
fn prepare_container(
    c: &mut SidecarContainer,
    pod: &Pod,
    volumes: &BTreeMap<&str, &Volume>,
    volumes_out: &mut Vec<Volume>,
) {
    let (mounts, mount_envs) = injected_volume_mounts_and_envs(c, pod);
    let mut envs = transfer_envs(c, pod);
    merge_env(&mut envs, &mount_envs);
    for m in c.container.volume_mounts.iter().flatten() {
        if let Some(v) = volumes.get(m.name.as_str()) {
            volumes_out.push((*v).clone());
        }
    }
    for d in c.container.volume_devices.iter().flatten() {
        if let Some(v) = volumes.get(d.name.as_str()) {
            volumes_out.push((*v).clone());
        }
    }
    merge_volume_mounts(&mut c.container, &mounts);
    let env = c.container.env.get_or_insert_with(Vec::new);
    env.push(EnvVar {
        name: control::SIDECAR_ENV_KEY.to_string(),
        value: Some("true".to_string()),
        value_from: None,
    });
    merge_env(env, &envs);
    let devices = injected_volume_devices(c, pod);
    merge_volume_devices(&mut c.container, &devices);
}

/// OpenKruise `injectHotUpgradeContainers`: the pair `<name>-1` (the sidecar) and `<name>-2`
/// (the empty image), both with the version env vars, and their version annotations; the
/// working container recorded in `hot_info` (`<name>-1`).
fn hot_upgrade_pair(
    hot_info: &mut BTreeMap<String, String>,
    c: &SidecarContainer,
) -> (Vec<SidecarContainer>, BTreeMap<String, String>) {
    let (n1, n2) = hot_upgrade_names(&c.container.name);
    let mut c1 = c.clone();
    let mut c2 = c.clone();
    c1.container.name = n1.clone();
    c2.container.name = n2.clone();
    c2.container.image = Some(control::hot_upgrade_empty_image(c).to_string());
    set_version_env(&mut c1.container);
    set_version_env(&mut c2.container);
    let mut anns = BTreeMap::new();
    anns.insert(control::version_annotation(&n1), "1".to_string());
    anns.insert(control::version_alt_annotation(&n1), "0".to_string());
    anns.insert(control::version_annotation(&n2), "0".to_string());
    anns.insert(control::version_alt_annotation(&n2), "1".to_string());
    hot_info.insert(c.container.name.clone(), n1);
    anns.insert(
        keys::SIDECARSET_WORKING_HOT_UPGRADE_CONTAINER.to_string(),
        control::encode_string_map(hot_info),
    );
    (vec![c1, c2], anns)
}

fn field_env(name: &str, annotation: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.annotations['{annotation}']"),
            }),
            ..Default::default()
        }),
    }
}

fn set_version_env(c: &mut Container) {
    let env = c.env.get_or_insert_with(Vec::new);
    env.push(field_env(
        control::SIDECARSET_VERSION_ENV,
        &control::version_annotation(&c.name),
    ));
    env.push(field_env(
        control::SIDECARSET_VERSION_ALT_ENV,
        &control::version_alt_annotation(&c.name),
    ));
}

/// OpenKruise `mergeSidecarContainers`: an injected container named like one of `origins`
/// replaces it in place; the others go before (`BeforeAppContainer`) or after (otherwise) the
/// pod's containers, in their given order.
fn merge_sidecar_containers(
    mut origins: Vec<Container>,
    injected: &[SidecarContainer],
) -> Vec<Container> {
    let index: BTreeMap<String, usize> = origins
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    let mut before = Vec::new();
    let mut after = Vec::new();
    for s in injected {
        if let Some(&i) = index.get(&s.container.name) {
            origins[i] = s.container.clone();
            continue;
        }
        match s.pod_inject_policy.as_deref() {
            Some("BeforeAppContainer") => before.push(s.container.clone()),
            _ => after.push(s.container.clone()),
        }
    }
    before.append(&mut origins);
    before.append(&mut after);
    before
}

/// OpenKruise `mergeSidecarSecrets`: the pod's secrets, then the sidecars', each name once.
fn merge_secrets(
    pod: Vec<LocalObjectReference>,
    sidecar: &[LocalObjectReference],
) -> Vec<LocalObjectReference> {
    let mut seen = BTreeSet::new();
    pod.into_iter()
        .chain(sidecar.iter().cloned())
        .filter(|s| seen.insert(s.name.clone()))
        .collect()
}

#[cfg(test)]
mod tests;
