//! Automatic PodUnavailableBudgets (kruise-rs; on OpenKruise's roadmap, not in OpenKruise
//! v1.9): a CloneSet, Advanced StatefulSet, Deployment or StatefulSet annotated
//! [`kruise_api::keys::AUTO_BUDGET`] gets a `policy.kruise.io/v1alpha1` PodUnavailableBudget
//! that this controller creates, keeps in line with the workload and deletes when the
//! annotation goes; the Kubernetes garbage collector deletes it with the workload (controller
//! owner reference with `blockOwnerDeletion`). The budget itself is enforced as any other: the
//! PodUnavailableBudget controller computes its status and the pod webhooks hold deletions,
//! evictions and updates to it.
//!
//! Same shape as every controller: [`setup`] (watches: the four workload kinds and the
//! budgets, all from the shared cache), [`reconcile`] (one pass, writes in `sync`), the pure
//! decisions in [`plan`] (annotation value, name, shape, what to write), and Events on the
//! workload instead of a status (`AutoBudgetInvalid`, `AutoBudgetConflict` warnings;
//! `AutoBudgetCreated`, `AutoBudgetUpdated`, `AutoBudgetDeleted`).
//!
//! The work item is a [`Subject`]: one workload, keyed by the name of its budget
//! (`<kind prefix>-<name>`, see [`plan::budget_name`]), so that one queue serves four kinds
//! and a budget's events map to their workload by name. The subjects live in a small store of
//! their own, filled from the shared informers' events (no watch of its own); a workload
//! change triggers a pass only when what the budget depends on changed (the annotation, the
//! update strategy's `maxUnavailable`, the UID), and every budget change triggers the pass of
//! the workload it is named after or covers. A pass reads the workload and the budgets from
//! the shared cache.
//!
//! Runs when `PodUnavailableBudgetDeleteGate` or `PodUnavailableBudgetUpdateGate` is on (its
//! registry entry), as the PodUnavailableBudget controller.

pub mod plan;
mod sync;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedSender, unbounded};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::CloneSet;
use kruise_api::apps::v1beta1::StatefulSet as AdvancedStatefulSet;
use kruise_api::keys;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kube::Resource;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher;
use serde::{Deserialize, Serialize};

use kruise_runtime::cache::{CacheEvent, Cached, Informer};
use kruise_runtime::runner::{self as runtime, Context, Triggers};

use crate::scaffold;
use plan::{WorkloadInfo, WorkloadKind};

pub use crate::scaffold::Error;

/// Name of the controller in `--controllers`, metrics and logs.
pub const CONTROLLER_NAME: &str = "autobudget";

/// The work item: one workload of the four kinds, named (and keyed) by its budget's name in
/// the workload's namespace. Not an API object: it exists only in this controller's store.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Subject {
    /// `name` = the budget's name, `namespace` = the workload's.
    pub metadata: ObjectMeta,
    /// The workload's kind.
    pub kind: WorkloadKind,
    /// The workload's name.
    pub workload: String,
}

impl Resource for Subject {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "AutoBudgetSubject".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "autobudget.kruise-rs.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "autobudgetsubjects".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A workload kind the annotation works on, as the shared cache holds it.
pub trait AutoBudgetWorkload: Cached {
    /// Its kind.
    const KIND: WorkloadKind;
    /// The update strategy's `maxUnavailable`, if set.
    fn strategy_max_unavailable(&self) -> Option<&IntOrString>;

    /// What [`plan::plan`] reads of it.
    fn info(&self) -> WorkloadInfo {
        let m = self.meta();
        WorkloadInfo {
            kind: Self::KIND,
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
            resource_version: m.resource_version.clone().unwrap_or_default(),
            annotation: m
                .annotations
                .as_ref()
                .and_then(|a| a.get(keys::AUTO_BUDGET))
                .cloned(),
            max_unavailable: self.strategy_max_unavailable().cloned(),
        }
    }
}

impl AutoBudgetWorkload for CloneSet {
    const KIND: WorkloadKind = WorkloadKind::CloneSet;
    fn strategy_max_unavailable(&self) -> Option<&IntOrString> {
        self.spec.update_strategy.as_ref()?.max_unavailable.as_ref()
    }
}

impl AutoBudgetWorkload for AdvancedStatefulSet {
    const KIND: WorkloadKind = WorkloadKind::AdvancedStatefulSet;
    fn strategy_max_unavailable(&self) -> Option<&IntOrString> {
        self.spec
            .update_strategy
            .as_ref()?
            .rolling_update
            .as_ref()?
            .max_unavailable
            .as_ref()
    }
}

impl AutoBudgetWorkload for Deployment {
    const KIND: WorkloadKind = WorkloadKind::Deployment;
    fn strategy_max_unavailable(&self) -> Option<&IntOrString> {
        self.spec
            .strategy
            .as_ref()?
            .rolling_update
            .as_ref()?
            .max_unavailable
            .as_ref()
    }
}

impl AutoBudgetWorkload for StatefulSet {
    const KIND: WorkloadKind = WorkloadKind::StatefulSet;
    fn strategy_max_unavailable(&self) -> Option<&IntOrString> {
        self.spec
            .update_strategy
            .as_ref()?
            .rolling_update
            .as_ref()?
            .max_unavailable
            .as_ref()
    }
}

/// State shared by all passes.
#[derive(Clone)]
pub struct State {
    /// Budgets.
    pub budgets: Informer<PodUnavailableBudget>,
    /// CloneSets.
    pub clonesets: Informer<CloneSet>,
    /// Advanced StatefulSets.
    pub advanced_statefulsets: Informer<AdvancedStatefulSet>,
    /// Deployments.
    pub deployments: Informer<Deployment>,
    /// StatefulSets (`apps/v1`).
    pub statefulsets: Informer<StatefulSet>,
}

impl State {
    /// The workload a subject stands for, as the cache shows it now (`None`: gone).
    pub fn workload(&self, s: &Subject) -> Option<WorkloadInfo> {
        fn read<K: AutoBudgetWorkload>(
            inf: &Informer<K>,
            ns: &str,
            name: &str,
        ) -> Option<WorkloadInfo> {
            let w = inf.store().get(&ObjectRef::new(name).within(ns))?;
            w.meta().deletion_timestamp.is_none().then(|| w.info())
        }
        let ns = s.metadata.namespace.as_deref().unwrap_or("");
        match s.kind {
            WorkloadKind::CloneSet => read(&self.clonesets, ns, &s.workload),
            WorkloadKind::AdvancedStatefulSet => read(&self.advanced_statefulsets, ns, &s.workload),
            WorkloadKind::Deployment => read(&self.deployments, ns, &s.workload),
            WorkloadKind::StatefulSet => read(&self.statefulsets, ns, &s.workload),
        }
    }
}

/// Sets the controller up (informers start at once) and returns the future that runs it with
/// `workers` (`--autobudget-workers`) once every cache it reads has synced.
pub fn setup(
    ctx: &Arc<Context>,
    workers: u16,
) -> impl std::future::Future<Output = Result<(), runtime::Error>> + Send + 'static {
    let ctx = ctx.clone();
    let state = State {
        budgets: ctx.cache.informer(),
        clonesets: ctx.cache.informer(),
        advanced_statefulsets: ctx.cache.informer(),
        deployments: ctx.cache.informer(),
        statefulsets: ctx.cache.informer(),
    };
    let caches = vec![
        state.budgets.synced(),
        state.clonesets.synced(),
        state.advanced_statefulsets.synced(),
        state.deployments.synced(),
        state.statefulsets.synced(),
    ];
    let (store, mut writer) = kube::runtime::reflector::store::<Subject>();
    // The subjects come from the workload informers' events only: the store is ready (and
    // empty) from the start; the runner waits for the workload caches anyway.
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    let subjects = Subjects {
        writer: Arc::new(Mutex::new(writer)),
        seen: Arc::default(),
    };
    let (objects_tx, objects_rx) = unbounded::<Arc<Subject>>();
    let (refs_tx, refs_rx) = unbounded::<ObjectRef<Subject>>();
    let observers = futures::future::join5(
        observe_workloads(&state.clonesets, subjects.clone(), objects_tx.clone()),
        observe_workloads(
            &state.advanced_statefulsets,
            subjects.clone(),
            objects_tx.clone(),
        ),
        observe_workloads(&state.deployments, subjects.clone(), objects_tx.clone()),
        observe_workloads(&state.statefulsets, subjects, objects_tx),
        observe_budgets(&state.budgets, store.clone(), refs_tx),
    );
    let controller = scaffold::Controller::new(
        CONTROLLER_NAME,
        workers,
        Triggers::new(objects_rx, store).reconcile_on(refs_rx),
        caches,
    );
    scaffold::run(ctx, controller, observers, state, reconcile)
}

/// One pass over one workload (see the module documentation).
pub async fn reconcile(
    subject: Arc<Subject>,
    ctx: Arc<Context>,
    state: State,
) -> Result<Action, Error> {
    let key = scaffold::key(subject.as_ref());
    crate::workload::bounded_pass(&key, sync::sync(&subject, &ctx, &state), Error::Other).await
}

/// What a workload's budget depends on: the annotation, the strategy's `maxUnavailable`, the
/// UID (a workload deleted and created again under the same name).
type Inputs = (Option<String>, Option<IntOrString>, String);

/// The subject store's writer and the last inputs seen per subject.
#[derive(Clone)]
struct Subjects {
    writer: Arc<Mutex<Writer<Subject>>>,
    seen: Arc<Mutex<HashMap<ObjectRef<Subject>, Inputs>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Follows one workload informer (the objects already cached, then every change): each
/// workload is a [`Subject`] in the store while it exists; a pass is triggered when it first
/// appears and whenever its [`Inputs`] change. A deleted workload's subject is dropped (the
/// garbage collector deletes its budget).
fn observe_workloads<K: AutoBudgetWorkload>(
    informer: &Informer<K>,
    subjects: Subjects,
    objects: UnboundedSender<Arc<Subject>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K> {
    let rx = informer.subscribe();
    let existing = informer.store().state();
    futures::stream::iter(existing.into_iter().map(CacheEvent::Apply))
        .chain(rx)
        .for_each(move |event| {
            let w = event.object();
            let info = w.info();
            let subject = Subject {
                metadata: ObjectMeta {
                    name: Some(plan::budget_name(K::KIND, &info.name)),
                    namespace: Some(info.namespace.clone()),
                    ..ObjectMeta::default()
                },
                kind: K::KIND,
                workload: info.name.clone(),
            };
            let key = ObjectRef::from_obj(&subject);
            match &event {
                CacheEvent::Apply(_) => {
                    let inputs = (info.annotation, info.max_unavailable, info.uid);
                    let changed = lock(&subjects.seen).insert(key, inputs.clone()) != Some(inputs);
                    lock(&subjects.writer)
                        .apply_watcher_event(&watcher::Event::Apply(subject.clone()));
                    if changed {
                        let _ = objects.unbounded_send(Arc::new(subject));
                    }
                }
                CacheEvent::Delete(_) => {
                    lock(&subjects.seen).remove(&key);
                    lock(&subjects.writer).apply_watcher_event(&watcher::Event::Delete(subject));
                }
            }
            std::future::ready(())
        })
}

/// What of a budget a pass depends on (its status, rewritten by the PodUnavailableBudget
/// controller on every pod change, is not).
type BudgetInputs = (
    Option<String>,
    Option<i64>,
    bool,
    Option<BTreeMap<String, String>>,
    Option<Vec<OwnerReference>>,
);

/// Every budget change but a status-only one triggers the pass of the subject named like the
/// budget and of the subject of the workload its `targetRef` names (a conflicting budget going
/// away lets the automatic one be created); subjects not in the store (budgets of other
/// workloads) are skipped.
fn observe_budgets(
    budgets: &Informer<PodUnavailableBudget>,
    subjects: Store<Subject>,
    refs: UnboundedSender<ObjectRef<Subject>>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<> {
    let seen = Mutex::new(HashMap::<ObjectRef<PodUnavailableBudget>, BudgetInputs>::new());
    budgets.subscribe().for_each(move |event| {
        let b = event.object();
        let key = ObjectRef::from_obj(b.as_ref());
        let changed = match &event {
            CacheEvent::Delete(_) => {
                lock(&seen).remove(&key);
                true
            }
            CacheEvent::Apply(_) => {
                let m = &b.metadata;
                let now = (
                    m.uid.clone(),
                    m.generation,
                    m.deletion_timestamp.is_some(),
                    m.labels.clone(),
                    m.owner_references.clone(),
                );
                lock(&seen).insert(key, now.clone()) != Some(now)
            }
        };
        if !changed {
            return std::future::ready(());
        }
        let ns = b.metadata.namespace.as_deref().unwrap_or("");
        let by_name = b.metadata.name.clone();
        let by_target = b.spec.target_reference.as_ref().and_then(|r| {
            let kind = WorkloadKind::of_target(r)?;
            Some(plan::budget_name(kind, r.name.as_deref()?))
        });
        let mut names: Vec<String> = by_name.into_iter().chain(by_target).collect();
        names.dedup();
        for name in names {
            let r = ObjectRef::new(&name).within(ns);
            if subjects.get(&r).is_some() {
                let _ = refs.unbounded_send(r);
            }
        }
        std::future::ready(())
    })
}
