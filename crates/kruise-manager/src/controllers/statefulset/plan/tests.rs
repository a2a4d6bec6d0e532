use super::*;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kruise_api::pod::CachedPod;
use serde_json::json;

fn set(spec: serde_json::Value) -> StatefulSet {
    let mut v = json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}},
    });
    for (k, val) in spec.as_object().unwrap() {
        v["spec"][k] = val.clone();
    }
    serde_json::from_value(v).unwrap()
}

fn pod(name: &str, rev: &str) -> CachedPod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid"),
                     "labels": {"controller-revision-hash": rev}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    }))
    .unwrap()
}

fn now() -> jiff::Timestamp {
    "2026-01-01T00:00:10Z".parse().unwrap()
}

#[test]
fn pods_go_to_their_slots_or_are_condemned_highest_first() {
    let s = set(json!({"replicas": 3, "reserveOrdinals": [1]}));
    let range = ordinal_range(&s, false);
    assert_eq!((range.start, range.end), (0, 4));
    let pods = [
        pod("web-0", "r"),
        pod("web-1", "r"),
        pod("web-3", "r"),
        pod("web-5", "r"),
        pod("web-9", "r"),
    ];
    let refs: Vec<&CachedPod> = pods.iter().collect();
    let a = assign(&refs, &range);
    assert_eq!(a.slots, vec![Some(0), None, None, Some(2)]);
    assert_eq!(a.condemned, vec![4, 3, 1]);
}

#[test]
fn start_ordinal_only_with_the_gate() {
    let s = set(json!({"replicas": 2, "ordinals": {"start": 10}}));
    assert_eq!(ordinal_range(&s, true).start, 10);
    assert_eq!(ordinal_range(&s, false).start, 0);
}

#[test]
fn partition_keeps_the_first_slots_on_the_current_revision() {
    let s = set(
        json!({"replicas": 5, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
    );
    // all slots empty: slots 0 and 1 get the current revision
    let mut filled: Vec<Option<bool>> = vec![None; 5];
    let mut current = vec![];
    for slot in 0..5 {
        let c = is_current_revision_needed(&s, slot, slot as i32, &filled);
        filled[slot] = Some(!c);
        current.push(c);
    }
    assert_eq!(current, vec![true, true, false, false, false]);
    // a reserved hole does not count: slot 2 after holes 0,1 reserved is the first pod
    let filled = vec![None, None, None];
    assert!(is_current_revision_needed(&s, 2, 2, &filled));
    // OnDelete: always the update revision
    let s = set(json!({"replicas": 5, "updateStrategy": {"type": "OnDelete"}}));
    assert!(!is_current_revision_needed(&s, 0, 0, &[None]));
}

#[test]
fn unordered_partition_counts_pods_not_updated() {
    let s = set(
        json!({"replicas": 3, "podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"partition": 1, "unorderedUpdate": {}}}}),
    );
    // one old pod exists elsewhere: the partition is used up, the new pod gets the update revision
    assert!(!is_current_revision_needed(
        &s,
        0,
        0,
        &[None, Some(false), Some(true)]
    ));
    // only updated pods: the new pod keeps the current revision
    assert!(is_current_revision_needed(
        &s,
        0,
        0,
        &[None, Some(true), Some(true)]
    ));
}

#[test]
fn ordered_update_goes_from_the_top_down_to_the_partition() {
    let (p0, p2, p4) = (pod("web-0", "a"), pod("web-2", "a"), pod("web-4", "a"));
    let slots = [Some(&p0), None, Some(&p2), None, Some(&p4)];
    let ru: RollingUpdateStatefulSetStrategy =
        serde_json::from_value(json!({"partition": 2})).unwrap();
    assert_eq!(
        sort_pods_to_update(Some(&ru), "b", 3, &slots, false),
        vec![4]
    );
    let ru: RollingUpdateStatefulSetStrategy =
        serde_json::from_value(json!({"partition": 0})).unwrap();
    assert_eq!(
        sort_pods_to_update(Some(&ru), "b", 3, &slots, false),
        vec![4, 2, 0]
    );
    let ru: RollingUpdateStatefulSetStrategy =
        serde_json::from_value(json!({"partition": 3})).unwrap();
    assert!(sort_pods_to_update(Some(&ru), "b", 3, &slots, false).is_empty());
}

#[test]
fn unordered_update_puts_updated_pods_first_then_priority() {
    let mut a = pod("web-0", "old");
    a.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("prio".into(), "1".into());
    let mut b = pod("web-1", "old");
    b.metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("prio".into(), "9".into());
    let c = pod("web-2", "web-new");
    let slots = [Some(&a), Some(&b), Some(&c)];
    let ru: RollingUpdateStatefulSetStrategy = serde_json::from_value(json!({
        "partition": 0,
        "unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": "prio"}]}}
    }))
    .unwrap();
    assert_eq!(
        sort_pods_to_update(Some(&ru), "web-new", 3, &slots, false),
        vec![2, 1, 0]
    );
    // partition 1 leaves room for two: the updated one and the highest priority
    let ru: RollingUpdateStatefulSetStrategy = serde_json::from_value(json!({
        "partition": 1,
        "unorderedUpdate": {"priorityStrategy": {"orderPriority": [{"orderedKey": "prio"}]}}
    }))
    .unwrap();
    assert_eq!(
        sort_pods_to_update(Some(&ru), "web-new", 3, &slots, false),
        vec![2, 1]
    );
}

#[test]
fn availability_waits_for_min_ready_seconds() {
    let p = pod("web-0", "r");
    assert_eq!(running_and_available(&p, 0, now()), (true, None));
    assert_eq!(running_and_available(&p, 5, now()), (true, None));
    let (avail, wait) = running_and_available(&p, 30, now());
    assert!(!avail);
    assert_eq!(wait, Some(Duration::from_secs(20)));
    let mut hooked = p.clone();
    hooked
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(keys::LIFECYCLE_STATE.into(), "PreparingNormal".into());
    assert_eq!(running_and_available(&hooked, 0, now()), (false, None));
    assert!(!is_healthy(&hooked));
}

#[test]
fn identity_and_storage_are_checked_and_repaired() {
    let s = set(
        json!({"replicas": 1, "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [], "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "emptyDir": {}}]}}}),
    );
    let mut p = pod("web-0", "r");
    assert!(!identity_matches(&s, &p));
    update_identity(&s, &mut p, 0, true);
    assert!(identity_matches(&s, &p));
    assert_eq!(p.metadata.labels.as_ref().unwrap()[POD_INDEX_LABEL], "0");
    p.spec = s.spec.template.spec.as_ref().map(Into::into);
    assert!(!storage_matches(&s, &p));
    update_storage(&s, &mut p, 0);
    assert!(storage_matches(&s, &p));
    let vols: Vec<&str> = p
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .as_ref()
        .unwrap()
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(vols, vec!["data", "cfg"]);
    let claims = claims_for(&s, 0);
    assert_eq!(claims[0].metadata.name.as_deref(), Some("data-web-0"));
    assert_eq!(claims[0].metadata.labels.as_ref().unwrap()["app"], "web");
}

#[test]
fn retention_policy_owner_references() {
    let cases = [
        (("Retain", "Retain"), false, (false, false)),
        (("Delete", "Retain"), false, (true, false)),
        (("Retain", "Delete"), false, (false, false)),
        (("Retain", "Delete"), true, (false, true)),
        (("Delete", "Delete"), false, (true, false)),
        (("Delete", "Delete"), true, (false, true)),
    ];
    for ((deleted, scaled), down, want) in cases {
        let s = set(
            json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": deleted, "whenScaled": scaled}}),
        );
        assert_eq!(
            desired_claim_owners(&s, down),
            want,
            "{deleted}/{scaled} scaled_down={down}"
        );
    }
    let s = set(
        json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}}),
    );
    let p = pod("web-3", "r");
    let mut claim: PersistentVolumeClaim =
        serde_json::from_value(json!({"metadata": {"name": "data-web-3"}})).unwrap();
    assert!(claim_owner_matches(&s, &p, &claim, false));
    assert!(!claim_owner_matches(&s, &p, &claim, true));
    assert!(fix_claim_owners(&s, &p, &mut claim, true));
    assert!(claim_owner_matches(&s, &p, &claim, true));
    assert_eq!(
        claim.metadata.owner_references.as_ref().unwrap()[0].kind,
        "Pod"
    );
    assert!(claim_is_stale(&s, "web-3", &claim));
    assert!(fix_claim_owners(&s, &p, &mut claim, false));
    assert!(claim.metadata.owner_references.is_none());
}

#[test]
fn status_counts_and_rollout_completion() {
    let s = set(json!({"replicas": 3, "updateStrategy": {"type": "RollingUpdate"}}));
    let mut terminating = pod("web-2", "old");
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    let pods = [pod("web-0", "new"), pod("web-1", "old"), terminating];
    let refs: Vec<&CachedPod> = pods.iter().collect();
    let mut st = StatefulSetStatus::default();
    count_replicas(&mut st, &refs, 0, "old", "new", now());
    assert_eq!(
        (st.replicas, st.ready_replicas, st.available_replicas),
        (3, 3, 3)
    );
    assert_eq!((st.current_replicas, st.updated_replicas), (1, 1));
    assert_eq!(st.updated_ready_replicas, Some(1));
    st.update_revision = Some("new".into());
    st.current_revision = Some("old".into());
    complete_rolling_update(&s, &mut st);
    assert_eq!(st.current_revision.as_deref(), Some("old"));
    let mut done = StatefulSetStatus {
        replicas: 2,
        ready_replicas: 2,
        updated_replicas: 2,
        update_revision: Some("new".into()),
        ..Default::default()
    };
    complete_rolling_update(&s, &mut done);
    assert_eq!(done.current_revision.as_deref(), Some("new"));
    assert_eq!(done.current_replicas, 2);
}

#[test]
fn claims_compatibility_for_status() {
    let t: PersistentVolumeClaim = serde_json::from_value(json!({"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
    .unwrap();
    let mut c = t.clone();
    c.metadata.name = Some("data-web-0".into());
    assert!(claim_compatible(&c, &t));
    assert!(!claim_ready(&c));
    c.status = Some(serde_json::from_value(json!({"capacity": {"storage": "2Gi"}})).unwrap());
    assert!(claim_ready(&c));
    let mut small = c.clone();
    small.spec.as_mut().unwrap().resources =
        Some(serde_json::from_value(json!({"requests": {"storage": "500Mi"}})).unwrap());
    assert!(!claim_compatible(&small, &t));
}
