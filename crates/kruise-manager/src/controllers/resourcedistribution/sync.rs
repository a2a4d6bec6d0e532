//! One pass of the ResourceDistribution controller (OpenKruise's `doReconcile`:
//! `distributeResource`, `cleanResource`, `handleErrors`, `updateDistributorStatus`).

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::apps::v1alpha1::ResourceDistribution;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::Value;
use tracing::{debug, warn};

use kruise_runtime::runner::Context;

use super::plan::{self, Failure, Kind, NamespaceFailure, NamespaceView, Resource};
use super::{Error, State, Verified};

/// Copies written or checked at the same time (OpenKruise's `syncItSlowly` grows batches from 1).
const CONCURRENCY: usize = 8;

/// What every per-namespace step needs.
struct Pass<'a> {
    ctx: &'a Context,
    state: &'a State,
    rd: &'a ResourceDistribution,
    resource: Resource,
    hash: String,
}

impl Pass<'_> {
    fn api(&self, namespace: &str) -> Api<DynamicObject> {
        let ar = match self.resource.kind {
            Kind::Secret => ApiResource::erase::<Secret>(&()),
            Kind::ConfigMap => ApiResource::erase::<ConfigMap>(&()),
        };
        Api::namespaced_with(self.ctx.client.clone(), namespace, &ar)
    }

    fn rd_name(&self) -> &str {
        self.rd.metadata.name.as_deref().unwrap_or("")
    }

    fn key(&self, namespace: &str) -> super::CopyKey {
        (
            self.resource.kind,
            namespace.to_owned(),
            self.resource.name.clone(),
        )
    }

    fn remember(&self, namespace: &str, written: &DynamicObject) {
        if let Some(rv) = written.metadata.resource_version.clone() {
            self.state.verified().insert(
                self.key(namespace),
                Verified {
                    resource_version: rv,
                    hash: self.hash.clone(),
                },
            );
        }
    }

    fn fail(namespace: &str, kind: Failure, message: impl Into<String>) -> NamespaceFailure {
        NamespaceFailure {
            namespace: namespace.to_owned(),
            kind,
            message: message.into(),
        }
    }

    /// OpenKruise's per-namespace step of `distributeResource`.
    async fn distribute(&self, namespace: &str) -> Option<NamespaceFailure> {
        let ns = self
            .state
            .namespaces
            .store()
            .get(&ObjectRef::new(namespace));
        if ns.is_none_or(|n| n.metadata.deletion_timestamp.is_some()) {
            return Some(Self::fail(
                namespace,
                Failure::NotExist,
                plan::NOT_EXIST_MESSAGE,
            ));
        }
        match self
            .state
            .cached_copy(self.resource.kind, namespace, &self.resource.name)
        {
            None => self.create(namespace).await,
            Some(meta) => {
                if !plan::controlled_by(&meta, self.rd_name()) {
                    return Some(Self::fail(
                        namespace,
                        Failure::Conflict,
                        plan::CONFLICT_MESSAGE,
                    ));
                }
                let known = Verified {
                    resource_version: meta.resource_version.clone().unwrap_or_default(),
                    hash: self.hash.clone(),
                };
                if self.state.verified().get(&self.key(namespace)) == Some(&known) {
                    return None;
                }
                self.check(namespace).await
            }
        }
    }

    async fn create(&self, namespace: &str) -> Option<NamespaceFailure> {
        let copy = plan::make_copy(self.rd, namespace, &self.hash, None);
        let obj: DynamicObject = match serde_json::from_value(copy) {
            Ok(o) => o,
            Err(e) => return Some(Self::fail(namespace, Failure::Create, e.to_string())),
        };
        match self
            .api(namespace)
            .create(&PostParams::default(), &obj)
            .await
        {
            Ok(written) => {
                debug!(rd = self.rd_name(), namespace, "created copy");
                self.remember(namespace, &written);
                None
            }
            // The cache had not shown it yet: read and judge it.
            Err(kube::Error::Api(e)) if e.code == 409 => Box::pin(self.check(namespace)).await,
            Err(e) => Some(Self::fail(namespace, Failure::Create, api_message(&e))),
        }
    }

    /// Reads the copy and updates it when its content differs (`needToUpdate`).
    async fn check(&self, namespace: &str) -> Option<NamespaceFailure> {
        let api = self.api(namespace);
        let live = match api.get_opt(&self.resource.name).await {
            Ok(Some(o)) => o,
            Ok(None) => return Box::pin(self.create(namespace)).await,
            Err(e) => return Some(Self::fail(namespace, Failure::Get, api_message(&e))),
        };
        if !plan::controlled_by(&live.metadata, self.rd_name()) {
            return Some(Self::fail(
                namespace,
                Failure::Conflict,
                plan::CONFLICT_MESSAGE,
            ));
        }
        let live_json = serde_json::to_value(&live).unwrap_or(Value::Null);
        if !plan::need_to_update(&live_json, &self.rd.spec.resource) {
            self.remember(namespace, &live);
            return None;
        }
        let copy = plan::make_copy(self.rd, namespace, &self.hash, Some(&live_json));
        let obj: DynamicObject = match serde_json::from_value(copy) {
            Ok(o) => o,
            Err(e) => return Some(Self::fail(namespace, Failure::Update, e.to_string())),
        };
        match api
            .replace(&self.resource.name, &PostParams::default(), &obj)
            .await
        {
            Ok(written) => {
                debug!(rd = self.rd_name(), namespace, "updated copy");
                self.remember(namespace, &written);
                None
            }
            Err(e) => Some(Self::fail(namespace, Failure::Update, api_message(&e))),
        }
    }

    /// OpenKruise's per-namespace step of `cleanResource`.
    async fn clean(&self, namespace: &str) -> Option<NamespaceFailure> {
        let ns = self
            .state
            .namespaces
            .store()
            .get(&ObjectRef::new(namespace));
        if ns.is_none_or(|n| n.metadata.deletion_timestamp.is_some()) {
            return None;
        }
        let meta = self
            .state
            .cached_copy(self.resource.kind, namespace, &self.resource.name)?;
        if !plan::controlled_by(&meta, self.rd_name()) {
            return None;
        }
        match self
            .api(namespace)
            .delete(&self.resource.name, &DeleteParams::default())
            .await
        {
            Ok(_) => {
                debug!(rd = self.rd_name(), namespace, "deleted copy");
                self.state.verified().remove(&self.key(namespace));
                None
            }
            Err(kube::Error::Api(e)) if e.code == 404 => None,
            Err(e) => Some(Self::fail(namespace, Failure::Delete, api_message(&e))),
        }
    }
}

/// The text Go's client prints for an API error: the Status message.
fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// One pass (module documentation of the controller).
pub async fn sync(
    rd: &ResourceDistribution,
    ctx: &Context,
    state: &State,
) -> Result<Action, Error> {
    let resource = match plan::parse_resource(&rd.spec.resource) {
        Ok(r) => r,
        Err(e) => {
            warn!(rd = %rd.name_any(), error = %e, "spec.resource cannot be distributed");
            return Ok(Action::await_change());
        }
    };
    let namespaces = state.namespaces.store().state();
    let views = namespaces.iter().map(|n| NamespaceView {
        name: n.metadata.name.as_deref().unwrap_or(""),
        labels: n.metadata.labels.as_ref(),
    });
    let (matched, unmatched) =
        plan::target_namespaces(&rd.spec.targets, views).map_err(Error::Other)?;
    drop(namespaces);
    let pass = Pass {
        ctx,
        state,
        rd,
        hash: plan::hash_resource(&rd.spec.resource),
        resource,
    };
    let pass = &pass;
    let mut failures: Vec<NamespaceFailure> = futures::stream::iter(matched.clone())
        .map(|ns| async move { pass.distribute(&ns).await })
        .buffered(CONCURRENCY)
        .filter_map(std::future::ready)
        .collect()
        .await;
    let succeeded = matched.len() - failures.len();
    let cleaned: Vec<NamespaceFailure> = futures::stream::iter(unmatched)
        .map(|ns| async move { pass.clean(&ns).await })
        .buffered(CONCURRENCY)
        .filter_map(std::future::ready)
        .collect()
        .await;
    failures.extend(cleaned);
    let status = plan::new_status(
        rd,
        &failures,
        i32::try_from(matched.len()).unwrap_or(i32::MAX),
        i32::try_from(succeeded).unwrap_or(i32::MAX),
        &Time(jiff::Timestamp::now()),
    );
    if rd.status.as_ref() != Some(&status) {
        write_status(ctx, rd, &status).await?;
    }
    if plan::retryable(&failures) {
        let messages: Vec<String> = failures
            .iter()
            .filter(|f| !matches!(f.kind, Failure::Conflict | Failure::NotExist))
            .map(|f| format!("{}: {}", f.namespace, f.message))
            .collect();
        return Err(Error::Other(messages.join(", ")));
    }
    Ok(Action::await_change())
}

/// Writes `status` (a merge patch of `status` naming every field, so absent ones are cleared).
async fn write_status(
    ctx: &Context,
    rd: &ResourceDistribution,
    status: &kruise_api::apps::v1alpha1::ResourceDistributionStatus,
) -> Result<(), Error> {
    let mut value = serde_json::to_value(status).map_err(|e| Error::Other(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        for key in [
            "desired",
            "succeeded",
            "failed",
            "observedGeneration",
            "conditions",
        ] {
            map.entry(key).or_insert(Value::Null);
        }
    }
    let api: Api<ResourceDistribution> = Api::all(ctx.client.clone());
    match api
        .patch_status(
            &rd.name_any(),
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "status": value })),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
