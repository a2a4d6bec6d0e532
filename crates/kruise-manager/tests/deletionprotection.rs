//! Deletion protection of built-in kinds and UnitedDeployments end to end on the testbed
//! (OpenKruise v1.9.0 `pkg/webhook/util/deletionprotection`, e2e
//! `policy/v1alpha1/deletionprotection.go`): a manager run as users run it with gates
//! `ResourcesDeletionProtection` and `DeletionProtectionForCRDCascadingGate` refuses deleting a
//! Deployment, UnitedDeployment, CloneSet, Service, Namespace or CustomResourceDefinition labelled
//! `policy.kruise.io/delete-protection` as OpenKruise does (counting workload refusals in
//! `workload_deletion_protection`), and lets it go once the label (or what `Cascading` counts)
//! is gone.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruise_api::apps::v1alpha1::UnitedDeployment;
use kruise_e2e::manager::{ManagerSpec, TestManager};
use kruise_e2e::{TestEnv, install_crds, wait_for};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(120);
const GATES: &str = "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true";
const FORBIDDEN: &str =
    "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=";

fn refused<T: std::fmt::Debug>(r: Result<T, kube::Error>, want: &str) {
    match r {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403, "{e:?}");
            assert!(
                e.message.contains(want),
                "{} does not say {want}",
                e.message
            );
        }
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn protected_objects_are_refused_until_unprotected() {
    let env = TestEnv::connect().await.expect("testbed");
    install_crds(&env).await.expect("CRDs");
    let ns = env.namespace("delprot").await.unwrap();
    let m = TestManager::start(
        ManagerSpec::new(env!("CARGO_BIN_EXE_kruise-manager"), ns.name())
            .args(&["--feature-gates", GATES]),
        TIMEOUT,
    )
    .await;
    let pp = PatchParams::default();
    let set_label = |v: Option<&str>| json!({"metadata": {"labels": {"policy.kruise.io/delete-protection": v}}});

    // Deployment: Always, then Cascading with replicas, then scaled to 0.
    let deployments: Api<Deployment> = ns.api();
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"policy.kruise.io/delete-protection": "Always"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}},
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    // The webhook configuration may lag the manager's start by a moment.
    wait_for("Deployment deletion refused", TIMEOUT, || async {
        deployments
            .delete(
                "web",
                &DeleteParams {
                    dry_run: true,
                    ..DeleteParams::default()
                },
            )
            .await
            .is_err()
            .then_some(())
    })
    .await
    .unwrap();
    refused(
        deployments.delete("web", &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Always"),
    );
    deployments
        .patch("web", &pp, &Patch::Merge(set_label(Some("Cascading"))))
        .await
        .unwrap();
    refused(
        deployments.delete("web", &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Cascading and replicas 2>0"),
    );
    deployments
        .patch("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 0}})))
        .await
        .unwrap();
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .expect("a Cascading Deployment with 0 replicas is deleted");

    // UnitedDeployment (its controller makes the subset workloads meanwhile): Always, then
    // Cascading with replicas, then 0 replicas; an unlabelled one goes without a webhook call.
    let uds: Api<UnitedDeployment> = ns.api();
    let ud = |name: &str, replicas: i32, label: Option<&str>| -> UnitedDeployment {
        let mut o = json!({
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "template": {"statefulSetTemplate": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}},
                "topology": {"subsets": [{"name": "a", "nodeSelectorTerm": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}}]}},
        });
        if let Some(v) = label {
            o["metadata"]["labels"] = json!({"policy.kruise.io/delete-protection": v});
        }
        serde_json::from_value(o).unwrap()
    };
    uds.create(&PostParams::default(), &ud("ud", 2, Some("Always")))
        .await
        .unwrap();
    refused(
        uds.delete("ud", &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Always"),
    );
    uds.patch("ud", &pp, &Patch::Merge(set_label(Some("Cascading"))))
        .await
        .unwrap();
    refused(
        uds.delete("ud", &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Cascading and replicas 2>0"),
    );
    uds.patch("ud", &pp, &Patch::Merge(json!({"spec": {"replicas": 0}})))
        .await
        .unwrap();
    uds.delete("ud", &DeleteParams::default())
        .await
        .expect("a Cascading UnitedDeployment with 0 replicas is deleted");
    uds.create(&PostParams::default(), &ud("plain", 3, None))
        .await
        .unwrap();
    uds.delete("plain", &DeleteParams::default())
        .await
        .expect("an unlabelled UnitedDeployment is deleted");
    // OpenKruise's metric: `<Kind>_<namespace>_<name>`, one per refusal.
    let series = format!("kind_namespace_name=\"UnitedDeployment_{}_ud\"", ns.name());
    let text = m.process.metrics_text().await.expect("metrics");
    let counted: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("workload_deletion_protection{") && l.contains(&series))
        .collect();
    assert_eq!(counted.len(), 1, "{counted:?}");
    // At least one per refused request, and one more when the API server first judged the
    // allowed delete against its watch cache's older copy (still `replicas: 2`): a refusal
    // there makes it re-read the object and judge again (etcd3 `conditionalDelete`), so the
    // webhook refused a call OpenKruise's would refuse too.
    let refusals: f64 = counted[0]
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert!(refusals >= 2.0, "two refusals: {}", counted[0]);
    assert!(
        !text.contains(&format!("UnitedDeployment_{}_plain", ns.name())),
        "an admitted deletion is not counted"
    );

    // A CloneSet is protected by its own webhook and counted in the same metric, as
    // OpenKruise's CloneSet handler counts it.
    let clonesets: Api<kruise_api::apps::v1alpha1::CloneSet> = ns.api();
    let cs: kruise_api::apps::v1alpha1::CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs", "labels": {"policy.kruise.io/delete-protection": "Always"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "cs"}},
                 "template": {"metadata": {"labels": {"app": "cs"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap();
    clonesets.create(&PostParams::default(), &cs).await.unwrap();
    refused(
        clonesets.delete("cs", &DeleteParams::default()).await,
        "Always",
    );
    let series = format!("kind_namespace_name=\"CloneSet_{}_cs\"", ns.name());
    let text = m.process.metrics_text().await.expect("metrics");
    assert!(
        text.lines()
            .any(|l| l.starts_with("workload_deletion_protection{")
                && l.contains(&series)
                && l.ends_with(" 1")),
        "{series} not counted"
    );
    clonesets
        .patch("cs", &pp, &Patch::Merge(set_label(None)))
        .await
        .unwrap();
    clonesets
        .delete("cs", &DeleteParams::default())
        .await
        .expect("an unlabelled CloneSet is deleted");

    // Service: Always only.
    let services: Api<Service> = ns.api();
    let s: Service = serde_json::from_value(json!({
        "metadata": {"name": "svc", "labels": {"policy.kruise.io/delete-protection": "Always"}},
        "spec": {"ports": [{"port": 80}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &s).await.unwrap();
    refused(
        services.delete("svc", &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Always"),
    );
    services
        .patch("svc", &pp, &Patch::Merge(set_label(None)))
        .await
        .unwrap();
    services
        .delete("svc", &DeleteParams::default())
        .await
        .expect("an unlabelled Service is deleted");

    // Namespace: Cascading while it holds an active pod.
    let pods: Api<Pod> = ns.api();
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &p).await.unwrap();
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .patch(ns.name(), &pp, &Patch::Merge(set_label(Some("Cascading"))))
        .await
        .unwrap();
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    refused(
        namespaces.delete(ns.name(), &dry).await,
        &format!("{FORBIDDEN}Cascading and active pods 1>0"),
    );
    pods.delete(
        "p",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    wait_for(
        "the namespace's deletion admitted once its pod is gone",
        TIMEOUT,
        || async { namespaces.delete(ns.name(), &dry).await.ok().map(|_| ()) },
    )
    .await
    .unwrap();
    namespaces
        .patch(ns.name(), &pp, &Patch::Merge(set_label(None)))
        .await
        .unwrap();

    // CustomResourceDefinition: Always, then Cascading while an object of it exists.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let name = "gadgets.delprot.kruise-rs.io";
    let _ = crds.patch(name, &pp, &Patch::Merge(set_label(None))).await;
    let _ = crds.delete(name, &DeleteParams::default()).await;
    wait_for("no leftover CRD", TIMEOUT, || async {
        crds.get_opt(name)
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await
    .unwrap();
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"policy.kruise.io/delete-protection": "Always"}},
        "spec": {"group": "delprot.kruise-rs.io", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    refused(
        crds.delete(name, &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Always"),
    );
    kruise_e2e::wait_crd_established(&crds, name, TIMEOUT)
        .await
        .unwrap();
    let gadgets = kruise_e2e::dynamic_api(
        &env.client,
        Some(ns.name()),
        ("delprot.kruise-rs.io", "v1", "Gadget"),
        "gadgets",
    );
    let g = kruise_e2e::dynamic_object(json!({
        "apiVersion": "delprot.kruise-rs.io/v1", "kind": "Gadget", "metadata": {"name": "g"},
    }));
    wait_for("a Gadget created", TIMEOUT, || async {
        gadgets.create(&PostParams::default(), &g).await.ok()
    })
    .await
    .unwrap();
    crds.patch(name, &pp, &Patch::Merge(set_label(Some("Cascading"))))
        .await
        .unwrap();
    refused(
        crds.delete(name, &DeleteParams::default()).await,
        &format!("{FORBIDDEN}Cascading and active CRs 1>0"),
    );
    gadgets.delete("g", &DeleteParams::default()).await.unwrap();
    crds.delete(name, &DeleteParams::default())
        .await
        .expect("a Cascading CRD without objects is deleted");
}
