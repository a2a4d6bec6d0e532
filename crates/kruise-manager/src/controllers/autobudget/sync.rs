//! One pass over one workload's automatic budget: read the workload and the budgets from the
//! shared cache, [`plan::plan`], write, record Events on the workload.

use k8s_openapi::api::core::v1::ObjectReference;
use kruise_api::policy::v1alpha1::PodUnavailableBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use tracing::info;

use kruise_runtime::runner::Context;

use super::plan::{self, Write};
use super::{Error, State, Subject};
use crate::workload::is_status;

/// The pass (module docs of [`super`]).
pub async fn sync(subject: &Subject, ctx: &Context, state: &State) -> Result<Action, Error> {
    // A workload gone or being deleted: the garbage collector deletes its budget.
    let Some(w) = state.workload(subject) else {
        return Ok(Action::await_change());
    };
    let name = plan::budget_name(w.kind, &w.name);
    let existing = state
        .budgets
        .store()
        .get(&ObjectRef::new(&name).within(&w.namespace));
    let others: Vec<_> = state
        .budgets
        .in_namespace(&w.namespace)
        .into_iter()
        .filter(|b| b.metadata.name.as_deref() != Some(name.as_str()))
        .collect();
    let p = plan::plan(&w, existing.as_deref(), others.iter().map(AsRef::as_ref));
    let regarding = ObjectReference {
        api_version: Some(w.kind.api_version().to_owned()),
        kind: Some(w.kind.kind().to_owned()),
        name: Some(w.name.clone()),
        namespace: Some(w.namespace.clone()),
        uid: Some(w.uid.clone()),
        resource_version: Some(w.resource_version.clone()),
        ..ObjectReference::default()
    };
    if let Some(warning) = &p.warning {
        ctx.recorder
            .warning(&regarding, warning.reason, &warning.message)
            .await;
    }
    let api: Api<PodUnavailableBudget> = Api::namespaced(ctx.client.clone(), &w.namespace);
    let key = format!("{}/{name}", w.namespace);
    match p.write {
        Write::None => {}
        Write::Create(budget) => match api.create(&PostParams::default(), &budget).await {
            Ok(_) => {
                info!(budget = %key, workload = %w.name, "automatic budget created");
                let note = format!(
                    "Created PodUnavailableBudget {name} with maxUnavailable {}",
                    budget
                        .spec
                        .max_unavailable
                        .as_ref()
                        .map(plan::show)
                        .unwrap_or_default()
                );
                ctx.recorder
                    .normal(&regarding, "AutoBudgetCreated", &note)
                    .await;
            }
            // The cache is behind; the budget's event brings the next pass.
            Err(e) if is_status(&e, 409) => {}
            // Refused by admission (e.g. a budget created meanwhile covers the workload).
            Err(kube::Error::Api(e)) if e.code == 400 || e.code == 422 => {
                ctx.recorder
                    .warning(
                        &regarding,
                        plan::REASON_CONFLICT,
                        &format!(
                            "Creating PodUnavailableBudget {name} was refused: {}",
                            e.message
                        ),
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        },
        Write::Patch { name, patch } => {
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(b) => {
                    info!(budget = %key, "automatic budget updated");
                    let note = format!(
                        "Updated PodUnavailableBudget {name} to maxUnavailable {}",
                        b.spec
                            .max_unavailable
                            .as_ref()
                            .map(plan::show)
                            .unwrap_or_default()
                    );
                    ctx.recorder
                        .normal(&regarding, "AutoBudgetUpdated", &note)
                        .await;
                }
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Write::Delete { name, uid } => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {
                    info!(budget = %key, "automatic budget deleted");
                    ctx.recorder
                        .normal(
                            &regarding,
                            "AutoBudgetDeleted",
                            &format!("Deleted PodUnavailableBudget {name}"),
                        )
                        .await;
                }
                // Gone, or replaced by another object of that name (the next event decides).
                Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(Action::await_change())
}
