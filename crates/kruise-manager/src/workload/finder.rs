//! The workload behind a pod or a reference (OpenKruise v1.9.0 `pkg/util/controllerfinder`):
//! its desired replicas (`scale`), selector and UID, and the pods it runs. Used by every
//! controller and webhook that reasons about "the pods of a workload" — PodUnavailableBudget
//! today; WorkloadSpread and PersistentPodState next.
//!
//! Kinds, as OpenKruise's finders in order: ReplicationController, Deployment, ReplicaSet (a
//! ReplicaSet a Deployment controls answers as that Deployment), StatefulSet, CloneSet and
//! Advanced StatefulSet are read from the shared cache (Deployments, StatefulSets, CloneSets and
//! Advanced StatefulSets from informers started with the controller; ReplicaSets and
//! ReplicationControllers, read only when a reference names them, from lazily started ones).
//! Any other kind is read through its `/scale` subresource (discovery maps the kind to its
//! resource), so Argo Rollouts, KubeVela workloads and any CRD with a scale subresource work;
//! a kind without one is found with an unknown scale (−1, OpenKruise's `ReplicasUnknown`).
//!
//! Not reproduced: OpenKruise's `getPodStatefulSetLike` (custom kinds listed in the
//! `kruise-configuration` ConfigMap's PersistentPodState whitelist, read through
//! `spec.replicas`); such a kind is read through `/scale` instead when it has one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::ReplicationController;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_api::pod::CachedPod;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, Resource};

use kruise_engines::podutil;
use kruise_engines::updatesort::selector_matches;
use kruise_runtime::cache::{CacheSync, Cached, Informer, read_synced};
use kruise_runtime::runner::Context;

/// OpenKruise's `ReplicasUnknown`: the workload exists but its desired replicas are unknown.
pub const REPLICAS_UNKNOWN: i32 = -1;

/// How long a read waits for a lazily started informer's initial list.
const LAZY_SYNC_WAIT: Duration = Duration::from_secs(10);

/// A workload as the finder sees it (OpenKruise `ScaleAndSelector`).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// apiVersion as the object reports it.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Desired replicas (`spec.replicas`, 1 when unset as the API defaults it; the scale
    /// subresource's `spec.replicas`; [`REPLICAS_UNKNOWN`]).
    pub scale: i32,
    /// Pod selector, when the kind has one.
    pub selector: Option<LabelSelector>,
    /// Whether the workload is being deleted.
    pub deleting: bool,
}

/// Errors of a lookup.
#[derive(Debug, thiserror::Error)]
pub enum FinderError {
    /// A live read (scale subresource, discovery, generic GET) failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// A lazily started cache did not finish its initial list in time.
    #[error("the {0} cache has not synced yet")]
    NotSynced(String),
    /// The scale subresource's selector could not be parsed.
    #[error("{0}")]
    Invalid(String),
}

/// Finds workloads and their pods; cheap to clone (shared informers and discovery cache).
#[derive(Clone)]
pub struct Finder {
    client: Client,
    deployments: Informer<Deployment>,
    statefulsets: Informer<StatefulSet>,
    clonesets: Informer<CloneSet>,
    advanced_statefulsets: Informer<AdvancedStatefulSet>,
    replicasets: Informer<ReplicaSet>,
    replication_controllers: Informer<ReplicationController>,
    /// Resolved kinds (`group/version/kind` → resource); only successes are kept, so a CRD
    /// installed later is found on the next lookup.
    resources: Arc<Mutex<HashMap<String, ApiResource>>>,
}

impl Finder {
    /// A finder on the shared cache of `ctx`; starts the Deployment, StatefulSet, CloneSet and
    /// Advanced StatefulSet informers (see [`Finder::caches`]).
    pub fn new(ctx: &Context) -> Self {
        Self {
            client: ctx.client.clone(),
            deployments: ctx.cache.informer(),
            statefulsets: ctx.cache.informer(),
            clonesets: ctx.cache.informer(),
            advanced_statefulsets: ctx.cache.informer(),
            replicasets: ctx.cache.lazy_informer(),
            replication_controllers: ctx.cache.lazy_informer(),
            resources: Arc::default(),
        }
    }

    /// The caches a controller using the finder must wait for (the eagerly started ones).
    pub fn caches(&self) -> Vec<CacheSync> {
        vec![
            self.deployments.synced(),
            self.statefulsets.synced(),
            self.clonesets.synced(),
            self.advanced_statefulsets.synced(),
        ]
    }

    /// The Deployment informer (watched by controllers that follow replica changes).
    pub fn deployments(&self) -> &Informer<Deployment> {
        &self.deployments
    }

    /// The StatefulSet informer.
    pub fn statefulsets(&self) -> &Informer<StatefulSet> {
        &self.statefulsets
    }

    /// The CloneSet informer.
    pub fn clonesets(&self) -> &Informer<CloneSet> {
        &self.clonesets
    }

    /// The Advanced StatefulSet informer.
    pub fn advanced_statefulsets(&self) -> &Informer<AdvancedStatefulSet> {
        &self.advanced_statefulsets
    }

    /// `GetScaleAndSelectorForRef`: the workload `apiVersion`/`kind`/`name` in `namespace`, if it
    /// exists and (when `uid` is given) has that UID.
    ///
    /// # Errors
    /// [`FinderError`] when a live read fails or a lazy cache does not sync.
    pub async fn workload(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
    ) -> Result<Option<Workload>, FinderError> {
        let Some(group) = group_of(api_version) else {
            return Ok(None);
        };
        let uid_ok = |w: &Workload| uid.is_none_or(|u| u == w.uid);
        let found = match (group, kind) {
            ("", "ReplicationController") => {
                let rc = lazy_get(&self.replication_controllers, namespace, name).await?;
                rc.map(|rc| {
                    let spec = rc.spec.as_ref();
                    workload_of(
                        &*rc,
                        spec.and_then(|s| s.replicas).unwrap_or(1),
                        spec.and_then(|s| s.selector.clone())
                            .map(|m| LabelSelector {
                                match_labels: Some(m),
                                ..Default::default()
                            }),
                    )
                })
            }
            ("apps", "Deployment") => self.deployment(namespace, name),
            ("apps", "ReplicaSet") => {
                let Some(rs) = lazy_get(&self.replicasets, namespace, name).await? else {
                    return Ok(None);
                };
                if uid.is_some_and(|u| rs.metadata.uid.as_deref() != Some(u)) {
                    return Ok(None);
                }
                if let Some(owner) = controller_ref(&rs.metadata)
                    && owner.kind == "Deployment"
                {
                    return Ok(self
                        .deployment(namespace, &owner.name)
                        .filter(|d| d.uid == owner.uid));
                }
                let spec = Some(&rs.spec);
                Some(workload_of(
                    &*rs,
                    spec.and_then(|s| s.replicas).unwrap_or(1),
                    spec.map(|s| s.selector.clone()),
                ))
            }
            ("apps", "StatefulSet") => get(&self.statefulsets, namespace, name).map(|s| {
                let spec = Some(&s.spec);
                workload_of(
                    &*s,
                    spec.and_then(|s| s.replicas).unwrap_or(1),
                    spec.map(|s| s.selector.clone()),
                )
            }),
            ("apps.kruise.io", "CloneSet") => get(&self.clonesets, namespace, name).map(|c| {
                workload_of(
                    &*c,
                    c.spec.replicas.unwrap_or(1),
                    Some(c.spec.selector.clone()),
                )
            }),
            ("apps.kruise.io", "StatefulSet") => get(&self.advanced_statefulsets, namespace, name)
                .map(|s| {
                    workload_of(
                        &*s,
                        s.spec.replicas.unwrap_or(1),
                        Some(s.spec.selector.clone()),
                    )
                }),
            _ if is_builtin(group, kind) => None,
            _ => self.scaled(api_version, kind, namespace, name).await?,
        };
        Ok(found.filter(uid_ok))
    }

    fn deployment(&self, namespace: &str, name: &str) -> Option<Workload> {
        get(&self.deployments, namespace, name).map(|d| {
            let spec = Some(&d.spec);
            workload_of(
                &*d,
                spec.and_then(|s| s.replicas).unwrap_or(1),
                spec.map(|s| s.selector.clone()),
            )
        })
    }

    /// `getScaleController` then `getRefUID`: a kind outside the built-in list, read through its
    /// `/scale` subresource, else found with an unknown scale.
    async fn scaled(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Workload>, FinderError> {
        let Some(resource) = self.resource(api_version, kind).await? else {
            return Ok(None);
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &resource);
        let scale = match api.get_scale(name).await {
            Ok(scale) => scale,
            // No such object, or a kind without a scale subresource: OpenKruise's `getRefUID`
            // reads the object itself (its scale unknown). The manager's role may not allow
            // reading an arbitrary kind: then it is not found, as it would be without RBAC.
            Err(kube::Error::Api(e)) if e.code == 404 => {
                return match api.get_opt(name).await {
                    Ok(obj) => Ok(obj.map(|o| Workload {
                        api_version: api_version.to_string(),
                        kind: kind.to_string(),
                        name: name.to_string(),
                        uid: o.metadata.uid.clone().unwrap_or_default(),
                        scale: REPLICAS_UNKNOWN,
                        selector: None,
                        deleting: o.metadata.deletion_timestamp.is_some(),
                    })),
                    Err(kube::Error::Api(e)) if e.code == 403 => Ok(None),
                    Err(e) => Err(e.into()),
                };
            }
            Err(e) => return Err(e.into()),
        };
        let text = scale
            .status
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        Ok(Some(Workload {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
            uid: scale.metadata.uid.clone().unwrap_or_default(),
            scale: scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            selector: Some(
                kruise_engines::selector::parse_label_selector(&text)
                    .map_err(FinderError::Invalid)?,
            ),
            deleting: scale.metadata.deletion_timestamp.is_some(),
        }))
    }

    /// The API resource of `apiVersion`/`kind` (discovery, cached on success); `None` when the
    /// server does not serve it.
    async fn resource(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<ApiResource>, FinderError> {
        let key = format!("{api_version}/{kind}");
        if let Some(r) = lock(&self.resources).get(&key) {
            return Ok(Some(r.clone()));
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok((resource, _)) => {
                lock(&self.resources).insert(key, resource.clone());
                Ok(Some(resource))
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `GetExpectedScaleForPods`: the sum of the desired replicas of the workloads controlling
    /// `pods` (each workload once; a Deployment once for all its ReplicaSets; workloads being
    /// deleted and pods without a controller count nothing).
    ///
    /// # Errors
    /// As [`Finder::workload`].
    pub async fn expected_scale_for_pods(&self, pods: &[&CachedPod]) -> Result<i32, FinderError> {
        let mut seen_refs = std::collections::BTreeSet::new();
        let mut scales: BTreeMap<String, i32> = BTreeMap::new();
        for pod in pods {
            let Some(owner) = controller_ref(&pod.metadata) else {
                continue;
            };
            if !seen_refs.insert(owner.uid.clone()) {
                continue;
            }
            let ns = pod.metadata.namespace.as_deref().unwrap_or("");
            let found = self
                .workload(
                    &owner.api_version,
                    &owner.kind,
                    ns,
                    &owner.name,
                    Some(&owner.uid),
                )
                .await?;
            if let Some(w) = found.filter(|w| !w.deleting) {
                scales.insert(w.uid, w.scale);
            }
        }
        Ok(scales.values().sum())
    }

    /// `GetPodsForRef`: the pods of workload `apiVersion`/`kind`/`name` in `namespace` (only
    /// active ones when `active`) and its desired replicas. Pods are those whose controller is
    /// the workload (for a Deployment: its ReplicaSets); a kind read through `/scale` whose
    /// pods it does not own directly falls back to the scale selector. A missing or deleting
    /// workload, or one scaled to 0, has no pods.
    ///
    /// # Errors
    /// As [`Finder::workload`].
    pub async fn pods_for_ref(
        &self,
        pods: &Informer<CachedPod>,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        active: bool,
    ) -> Result<(Vec<Arc<CachedPod>>, i32), FinderError> {
        let Some(w) = self
            .workload(api_version, kind, namespace, name, None)
            .await?
            .filter(|w| !w.deleting)
        else {
            return Ok((Vec::new(), 0));
        };
        // A ReplicaSet a Deployment controls answers as the Deployment: its own pods are
        // still what a reference to the ReplicaSet means.
        let (uids, fallback) = match kind {
            "ReplicaSet" => {
                let rs = lazy_get(&self.replicasets, namespace, name).await?;
                (
                    rs.and_then(|r| r.metadata.uid.clone())
                        .into_iter()
                        .collect(),
                    None,
                )
            }
            "StatefulSet" | "ReplicationController" | "CloneSet" => (vec![w.uid.clone()], None),
            "Deployment" => {
                let owned = self.replicasets_of(&w, namespace).await?;
                if owned.is_empty() {
                    (vec![w.uid.clone()], None)
                } else {
                    (owned, None)
                }
            }
            _ => (vec![w.uid.clone()], w.selector.clone()),
        };
        if w.scale == 0 {
            return Ok((Vec::new(), 0));
        }
        let keep = |p: &Arc<CachedPod>| {
            p.metadata.namespace.as_deref() == Some(namespace) && (!active || podutil::is_active(p))
        };
        let mut matched: Vec<Arc<CachedPod>> = uids
            .iter()
            .flat_map(|uid| pods.owned_by(uid))
            .filter(keep)
            .collect();
        if matched.is_empty()
            && let Some(selector) = fallback
        {
            matched = pods
                .in_namespace(namespace)
                .into_iter()
                .filter(keep)
                .filter(|p| selector_matches(&selector, p.metadata.labels.as_ref()) == Some(true))
                .collect();
        }
        Ok((matched, w.scale))
    }

    /// The UIDs of the ReplicaSets Deployment `w` controls (selected by its selector, not being
    /// deleted; those scaled to 0 included, they may still hold pods).
    async fn replicasets_of(
        &self,
        w: &Workload,
        namespace: &str,
    ) -> Result<Vec<String>, FinderError> {
        if !read_synced(&self.replicasets, LAZY_SYNC_WAIT).await {
            return Err(FinderError::NotSynced(self.replicasets.name().to_string()));
        }
        let Some(selector) = &w.selector else {
            return Ok(Vec::new());
        };
        Ok(self
            .replicasets
            .owned_by(&w.uid)
            .into_iter()
            .filter(|rs| rs.metadata.namespace.as_deref() == Some(namespace))
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .filter(|rs| selector_matches(selector, rs.metadata.labels.as_ref()) == Some(true))
            .filter_map(|rs| rs.metadata.uid.clone())
            .collect())
    }
}

/// The controller owner reference of an object.
pub fn controller_ref(
    meta: &ObjectMeta,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|o| o.controller == Some(true))
}

/// The group of an apiVersion (`""` for the core group); `None` when it is not
/// `[group/]version`.
pub fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((g, v)) if !v.contains('/') => Some(g),
        Some(_) => None,
    }
}

/// OpenKruise's `validWorkloadList`: the kinds its typed finders read (others go through
/// `/scale`).
fn is_builtin(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "ReplicaSet" | "StatefulSet" | "Deployment")
            | ("", "ReplicationController")
            | ("apps.kruise.io", "CloneSet" | "StatefulSet")
    )
}

fn workload_of<K: Resource<DynamicType = ()>>(
    obj: &K,
    scale: i32,
    selector: Option<LabelSelector>,
) -> Workload {
    let meta = obj.meta();
    Workload {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        scale,
        selector,
        deleting: meta.deletion_timestamp.is_some(),
    }
}

fn get<K: Cached>(informer: &Informer<K>, namespace: &str, name: &str) -> Option<Arc<K>> {
    informer
        .store()
        .get(&ObjectRef::new(name).within(namespace))
}

async fn lazy_get<K: Cached>(
    informer: &Informer<K>,
    namespace: &str,
    name: &str,
) -> Result<Option<Arc<K>>, FinderError> {
    if !read_synced(informer, LAZY_SYNC_WAIT).await {
        return Err(FinderError::NotSynced(informer.name().to_string()));
    }
    Ok(get(informer, namespace, name))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_builtin_kinds() {
        assert_eq!(group_of("v1"), Some(""));
        assert_eq!(group_of("apps.kruise.io/v1beta1"), Some("apps.kruise.io"));
        assert_eq!(group_of("a/b/c"), None);
        assert!(is_builtin("apps", "Deployment"));
        assert!(is_builtin("apps.kruise.io", "StatefulSet"));
        assert!(!is_builtin("argoproj.io", "Rollout"));
        assert!(!is_builtin("apps.kruise.io", "DaemonSet"));
    }
}
