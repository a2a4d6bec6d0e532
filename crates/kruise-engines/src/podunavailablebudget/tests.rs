//! Cases of OpenKruise v1.9.0's `pub_controller_test.go` (`TestPubReconcile`,
//! `TestDesiredAvailableForPub`) and `pub_control_test.go` (`IsPodStateConsistent`), on the
//! pure functions.

use super::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

fn now() -> Timestamp {
    "2026-11-28T12:00:00Z".parse().unwrap()
}

fn pod(name: &str) -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main", "image": "nginx:1.25", "imageID": "docker.io/library/nginx@sha256:aaaa", "ready": true, "restartCount": 0}]
        }
    }))
    .unwrap()
}

fn pods(n: usize) -> Vec<CachedPod> {
    (0..n).map(|i| pod(&format!("web-{i}"))).collect()
}

fn budget(max: Option<IntOrString>, min: Option<IntOrString>) -> PodUnavailableBudget {
    let mut b = PodUnavailableBudget::new(
        "pub",
        PodUnavailableBudgetSpec {
            max_unavailable: max,
            min_available: min,
            ..Default::default()
        },
    );
    b.metadata.generation = Some(1);
    b
}

fn pct(s: &str) -> Option<IntOrString> {
    Some(IntOrString::String(s.to_string()))
}

fn status(
    b: &PodUnavailableBudget,
    pods: &[CachedPod],
    expected: i32,
) -> PodUnavailableBudgetStatus {
    let refs: Vec<&CachedPod> = pods.iter().collect();
    plan_status(b, &refs, expected, now()).unwrap().status
}

fn counts(s: &PodUnavailableBudgetStatus) -> (i32, i32, i32, i32) {
    (
        s.unavailable_allowed,
        s.current_available,
        s.desired_available,
        s.total_replicas,
    )
}

#[test]
fn desired_available_from_max_unavailable_or_min_available() {
    // TestDesiredAvailableForPub: maxUnavailable 10% of 15 rounds up to 2.
    assert_eq!(
        desired_available(&budget(pct("10%"), None).spec, 15),
        Ok(13)
    );
    // maxUnavailable 100 of 10: never below 0.
    let b = budget(Some(IntOrString::Int(100)), None);
    assert_eq!(desired_available(&b.spec, 10), Ok(0));
    // minAvailable as a number is taken as it is, a percentage rounds up.
    let b = budget(None, Some(IntOrString::Int(100)));
    assert_eq!(desired_available(&b.spec, 10), Ok(100));
    assert_eq!(desired_available(&budget(None, pct("50%")).spec, 10), Ok(5));
    assert_eq!(desired_available(&budget(None, pct("81%")).spec, 10), Ok(9));
    // maxUnavailable wins over minAvailable; neither gives 0.
    let b = budget(pct("0%"), Some(IntOrString::Int(1)));
    assert_eq!(desired_available(&b.spec, 10), Ok(10));
    assert_eq!(desired_available(&budget(None, None).spec, 10), Ok(0));
    assert!(desired_available(&budget(pct("ten"), None).spec, 10).is_err());
}

#[test]
fn status_of_ready_pods_as_the_reconcile_cases() {
    let ten = pods(10);
    // "maxUnavailable 0%" / "100%" / "minAvailable 100 int" / "minAvailable 50%".
    assert_eq!(
        counts(&status(&budget(pct("0%"), None), &ten, 10)),
        (0, 10, 10, 10)
    );
    assert_eq!(
        counts(&status(&budget(pct("100%"), None), &ten, 10)),
        (10, 10, 0, 10)
    );
    let five = pods(5);
    let b = budget(None, Some(IntOrString::Int(100)));
    assert_eq!(counts(&status(&b, &five, 10)), (0, 5, 100, 10));
    assert_eq!(
        counts(&status(&budget(None, pct("50%")), &five, 10)),
        (0, 5, 5, 10)
    );
    // "selector and maxUnavailable 30%" with the protect-total-replicas count of 15.
    assert_eq!(
        counts(&status(&budget(pct("30%"), None), &ten, 15)),
        (0, 10, 10, 15)
    );
    let s = status(&budget(pct("30%"), None), &ten, 10);
    assert_eq!(s.observed_generation, 1);
    assert_eq!(s.disrupted_pods, None);
}

#[test]
fn unavailable_pods_are_not_counted() {
    let mut ps = pods(10);
    // Not ready, an unavailable label, terminating, succeeded: 4 pods do not count.
    ps[0].status.as_mut().unwrap().conditions = Some(vec![]);
    ps[1].metadata.labels.as_mut().unwrap().insert(
        "unavailable-pod.kruise.io/maintenance".into(),
        "true".into(),
    );
    ps[2].metadata.deletion_timestamp = Some(Time(now()));
    ps[3].status.as_mut().unwrap().phase = Some("Succeeded".into());
    assert_eq!(
        counts(&status(&budget(pct("30%"), None), &ps, 10)),
        (0, 6, 7, 10)
    );
}

#[test]
fn pending_disruptions_expire_and_are_rechecked() {
    let ps = pods(10);
    let mut b = budget(pct("50%"), None);
    let t = |secs: i64| Time(now() - SignedDuration::from_secs(secs));
    b.status = Some(PodUnavailableBudgetStatus {
        disrupted_pods: Some(BTreeMap::from([
            ("web-0".to_string(), t(5)),  // pending until +15 s
            ("web-1".to_string(), t(25)), // expired: NotDeleted
            ("gone".to_string(), t(1)),   // no such pod: dropped
        ])),
        unavailable_pods: Some(BTreeMap::from([
            ("web-2".to_string(), t(3)),  // pending until +7 s
            ("web-3".to_string(), t(11)), // expired: dropped quietly
        ])),
        ..Default::default()
    });
    let refs: Vec<&CachedPod> = ps.iter().collect();
    let plan = plan_status(&b, &refs, 10, now()).unwrap();
    assert!(plan.changed);
    assert_eq!(plan.not_deleted, ["web-1"]);
    assert_eq!(
        plan.status
            .disrupted_pods
            .as_ref()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["web-0"]
    );
    assert_eq!(
        plan.status
            .unavailable_pods
            .as_ref()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["web-2"]
    );
    assert_eq!(plan.recheck_at, Some(now() + SignedDuration::from_secs(7)));
    // web-0 and web-2 are pending: 8 of 10 available, 5 desired.
    assert_eq!(counts(&plan.status), (3, 8, 5, 10));

    // Written back unchanged, the next pass writes nothing; empty maps equal missing ones.
    let mut again = b.clone();
    again.status = Some(plan.status.clone());
    assert!(!plan_status(&again, &refs, 10, now()).unwrap().changed);
    let mut empty = budget(pct("50%"), None);
    empty.status = Some(PodUnavailableBudgetStatus {
        disrupted_pods: Some(BTreeMap::new()),
        ..status(&empty, &ps, 10)
    });
    assert!(!plan_status(&empty, &refs, 10, now()).unwrap().changed);
}

#[test]
fn state_consistency_follows_digests_and_in_place_state() {
    // All images digests: consistent when the status runs that digest (repositories compared
    // as written, as Go's `reference.Parse`: `nginx` is not `docker.io/library/nginx`).
    let digest = "docker.io/library/nginx@sha256:1111111111111111111111111111111111111111111111111111111111111111";
    let mut p = pod("web-0");
    p.spec.as_mut().unwrap().containers[0].image = Some(digest.into());
    let st = &mut p
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0];
    st.image_id = digest.to_string();
    assert!(is_pod_state_consistent(&p));
    let st = &mut p
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0];
    st.image_id =
        "docker.io/library/nginx@sha256:2222222222222222222222222222222222222222222222222222222222222222"
            .into();
    assert!(!is_pod_state_consistent(&p));
    assert!(!is_pod_available(&p));

    // Tags: consistent unless an in-place update is still in its grace period.
    let mut p = pod("web-1");
    assert!(is_pod_state_consistent(&p));
    p.metadata.annotations = Some(BTreeMap::from([(
        keys::IN_PLACE_UPDATE_GRACE.to_string(),
        r#"{"revision":"r2","containerImages":{"main":"nginx:1.26"},"graceSeconds":10}"#
            .to_string(),
    )]));
    assert!(!is_pod_state_consistent(&p));
}

#[test]
fn references_compare_group_kind_and_name() {
    let r = |v: &str, k: &str, n: &str| TargetReference {
        api_version: Some(v.into()),
        kind: Some(k.into()),
        name: Some(n.into()),
    };
    assert!(is_reference_equal(
        &r("apps.kruise.io/v1alpha1", "CloneSet", "web"),
        &r("apps.kruise.io/v1beta1", "CloneSet", "web")
    ));
    assert!(is_reference_equal(
        &r("v1", "ReplicationController", "a"),
        &r("v1", "ReplicationController", "a")
    ));
    assert!(!is_reference_equal(
        &r("apps/v1", "StatefulSet", "web"),
        &r("apps.kruise.io/v1beta1", "StatefulSet", "web")
    ));
    assert!(!is_reference_equal(
        &r("a/b/c", "X", "web"),
        &r("a/b/c", "X", "web")
    ));
}

#[test]
fn empty_or_missing_selectors_select_nothing() {
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let mut b = budget(pct("10%"), None);
    assert!(!selects(&b, Some(&labels)));
    b.spec.selector = Some(Default::default());
    assert!(!selects(&b, Some(&labels)));
    b.spec.selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(labels.clone()),
            ..Default::default()
        },
    );
    assert!(selects(&b, Some(&labels)));
    assert!(!selects(&b, None));
}

#[test]
fn protected_operations_follow_the_annotation_and_the_resize_gate() {
    let mut b = budget(pct("10%"), None);
    for op in [Operation::Delete, Operation::Evict, Operation::Update] {
        assert!(needs_protection(&b, op, true), "{op:?} guarded by default");
    }
    // Without InPlacePodVerticalScaling a guarded UPDATE guards RESIZE too.
    assert!(!needs_protection(&b, Operation::Resize, true));
    assert!(needs_protection(&b, Operation::Resize, false));
    b.metadata.annotations = Some(BTreeMap::from([(
        keys::PUB_PROTECT_OPERATIONS.to_string(),
        "EVICT,RESIZE".to_string(),
    )]));
    assert!(needs_protection(&b, Operation::Evict, true));
    assert!(needs_protection(&b, Operation::Resize, true));
    assert!(!needs_protection(&b, Operation::Delete, false));
    assert!(!needs_protection(&b, Operation::Update, false));
}

#[test]
fn check_and_decrement_spends_one_unit_and_records_the_pod() {
    let mut b = budget(pct("10%"), None);
    b.metadata.name = Some("web-pub".into());
    b.status = Some(PodUnavailableBudgetStatus {
        unavailable_allowed: 1,
        ..Default::default()
    });
    check_and_decrement(&mut b, "web-0", Operation::Evict, now()).unwrap();
    let s = b.status.clone().unwrap();
    assert_eq!(s.unavailable_allowed, 0);
    assert!(s.disrupted_pods.unwrap().contains_key("web-0"));
    assert!(is_recorded(&b, "web-0"));
    assert_eq!(
        check_and_decrement(&mut b, "web-1", Operation::Delete, now()),
        Err("podunavailablebudgets.policy.kruise.io \"web-pub\" is forbidden: pub unavailable allowed is negative".to_string())
    );
    // An update goes to unavailablePods.
    b.status.as_mut().unwrap().unavailable_allowed = 1;
    check_and_decrement(&mut b, "web-2", Operation::Update, now()).unwrap();
    assert!(
        b.status
            .unwrap()
            .unavailable_pods
            .unwrap()
            .contains_key("web-2")
    );
}

fn full_pod(v: serde_json::Value) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(v).unwrap()
}

#[test]
fn unavailable_changes_and_in_place_resizes() {
    let base = json!({
        "metadata": {"name": "p", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}}]}
    });
    let old = full_pod(base.clone());
    // Metadata only: no unavailability.
    let mut v = base.clone();
    v["metadata"]["labels"]["tier"] = json!("x");
    assert!(!is_pod_unavailable_changed(&old, &full_pod(v)));
    // An unavailable label: unavailable, and no resize.
    let mut v = base.clone();
    v["metadata"]["labels"]["unavailable-pod.kruise.io/x"] = json!("true");
    assert!(is_pod_unavailable_changed(&old, &full_pod(v.clone())));
    assert!(!can_resize_in_place(&old, &full_pod(v)));
    // A CPU resize keeps the QoS class (Burstable): a resize.
    let mut v = base.clone();
    v["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("300m");
    let resized = full_pod(v);
    assert!(is_pod_unavailable_changed(&old, &resized));
    assert!(can_resize_in_place(&old, &resized));
    // ... unless the container must restart for it.
    let mut v = base.clone();
    v["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!("300m");
    v["spec"]["containers"][0]["resizePolicy"] =
        json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
    assert!(!can_resize_in_place(&old, &full_pod(v)));
    // An image change is no resize.
    let mut v = base.clone();
    v["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    assert!(!can_resize_in_place(&old, &full_pod(v)));
    // Requests equal to limits: Guaranteed; a resize into Burstable changes the class.
    let mut v = base.clone();
    v["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("200m");
    let guaranteed = full_pod(v);
    assert_eq!(qos_class(&guaranteed), "Guaranteed");
    assert_eq!(qos_class(&old), "Burstable");
    assert!(!can_resize_in_place(&guaranteed, &old));
    assert_eq!(
        qos_class(&full_pod(json!({"spec": {"containers": [{"name": "c"}]}}))),
        "BestEffort"
    );
}
