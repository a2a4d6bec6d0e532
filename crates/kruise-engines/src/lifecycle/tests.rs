use super::readiness::*;
use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodReadinessGate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
#[allow(unused_imports)]
use kruise_api::pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodSpec, CachedPodStatus,
};
use serde_json::json;

fn pod(state: Option<&str>, labels: &[(&str, &str)], finalizers: &[&str]) -> CachedPod {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(s) = state {
        l.insert(keys::LIFECYCLE_STATE.to_owned(), s.to_owned());
    }
    let mut p = CachedPod::default();
    p.metadata.labels = Some(l);
    if !finalizers.is_empty() {
        p.metadata.finalizers = Some(finalizers.iter().map(|s| s.to_string()).collect());
    }
    p
}

fn hook(labels: &[(&str, &str)], finalizers: &[&str], mark: Option<bool>) -> LifecycleHook {
    LifecycleHook {
        labels_handler: (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        finalizers_handler: (!finalizers.is_empty())
            .then(|| finalizers.iter().map(|s| s.to_string()).collect()),
        mark_pod_not_ready: mark,
    }
}

fn now() -> Timestamp {
    "2024-05-06T07:08:09.123Z".parse().unwrap()
}

#[test]
fn states_parse_and_print() {
    let all = [
        LifecycleState::PreparingNormal,
        LifecycleState::Normal,
        LifecycleState::PreparingUpdate,
        LifecycleState::Updating,
        LifecycleState::Updated,
        LifecycleState::PreparingDelete,
    ];
    for s in all {
        assert_eq!(LifecycleState::parse(s.as_str()), Some(s));
        assert_eq!(s.to_string(), s.as_str());
    }
    assert_eq!(LifecycleState::Normal.as_str(), "Normal");
    assert_eq!(LifecycleState::parse("normal"), None);
    assert_eq!(
        pod_state(&pod(Some("Updating"), &[], &[])),
        Some(LifecycleState::Updating)
    );
    assert_eq!(pod_state(&pod(None, &[], &[])), None);
    assert_eq!(state_label(&CachedPod::default()), "");
    assert_eq!(state_label(&pod(Some("Weird"), &[], &[])), "Weird");
    assert!(is_normal_or_unset(&pod(None, &[], &[])));
    assert!(is_normal_or_unset(&pod(Some("Normal"), &[], &[])));
    assert!(!is_normal_or_unset(&pod(Some("Updated"), &[], &[])));
}

#[test]
fn hooked_semantics_match_openkruise() {
    let h = hook(
        &[("hold", "true"), ("x", "1")],
        &["example.com/f1", "example.com/f2"],
        None,
    );
    // (labels, finalizers, any, all)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], bool, bool);
    let cases: &[Case] = &[
        (&[], &[], false, false),
        (&[("hold", "true")], &[], true, false),
        (&[("hold", "false")], &[], false, false),
        (&[], &["example.com/f2"], true, false),
        (
            &[("hold", "true"), ("x", "1")],
            &["example.com/f1"],
            true,
            false,
        ),
        (
            &[("hold", "true"), ("x", "1")],
            &["example.com/f1", "example.com/f2"],
            true,
            true,
        ),
        (
            &[("hold", "true"), ("x", "1")],
            &["example.com/f2", "other", "example.com/f1"],
            true,
            true,
        ),
    ];
    for (labels, fins, any, all) in cases {
        let p = pod(None, labels, fins);
        assert_eq!(is_hooked(&h, &p), *any, "{labels:?} {fins:?}");
        assert_eq!(is_all_hooked(&h, &p), *all, "{labels:?} {fins:?}");
    }
    // no hook
    let p = pod(None, &[("hold", "true")], &[]);
    assert!(!is_hooked_opt(None, &p));
    assert!(!is_all_hooked_opt(None, &p));
    assert!(is_hooked_opt(
        Some(&h),
        &pod(None, &[], &["example.com/f1"])
    ));
    assert!(!is_all_hooked_opt(
        Some(&h),
        &pod(None, &[], &["example.com/f1"])
    ));
    // empty hook: never hooked, always all-hooked
    let empty = hook(&[], &[], None);
    assert!(!is_hooked(&empty, &p));
    assert!(is_all_hooked(&empty, &p));
    // empty handler value matches an absent label
    let h = hook(&[("k", "")], &[], None);
    assert!(is_hooked(&h, &CachedPod::default()));
    assert!(is_all_hooked(&h, &CachedPod::default()));
}

#[test]
fn mark_not_ready_flags() {
    assert!(!is_hook_mark_pod_not_ready(None));
    assert!(!is_hook_mark_pod_not_ready(Some(&hook(&[], &[], None))));
    assert!(is_hook_mark_pod_not_ready(Some(&hook(
        &[],
        &[],
        Some(true)
    ))));
    assert!(!is_lifecycle_mark_pod_not_ready(None));
    let mut l = Lifecycle::default();
    assert!(!is_lifecycle_mark_pod_not_ready(Some(&l)));
    l.pre_normal = Some(hook(&[], &[], Some(true)));
    assert!(!is_lifecycle_mark_pod_not_ready(Some(&l)));
    l.in_place_update = Some(hook(&[], &[], Some(true)));
    assert!(is_lifecycle_mark_pod_not_ready(Some(&l)));
    l.in_place_update = None;
    l.pre_delete = Some(hook(&[], &[], Some(true)));
    assert!(is_lifecycle_mark_pod_not_ready(Some(&l)));
}

#[test]
fn patches() {
    assert_eq!(format_timestamp(now()), "2024-05-06T07:08:09Z");
    assert_eq!(
        label_patch(LifecycleState::PreparingDelete, now()),
        json!({"metadata": {
            "labels": {"lifecycle.apps.kruise.io/state": "PreparingDelete"},
            "annotations": {"lifecycle.apps.kruise.io/timestamp": "2024-05-06T07:08:09Z"}
        }})
    );
    let h = hook(&[("hold", "true")], &["example.com/f"], None);
    assert_eq!(
        state_patch_with_handler(LifecycleState::PreparingUpdate, now(), &h),
        json!({"metadata": {
            "labels": {"lifecycle.apps.kruise.io/state": "PreparingUpdate", "hold": "true"},
            "annotations": {"lifecycle.apps.kruise.io/timestamp": "2024-05-06T07:08:09Z"},
            "finalizers": ["example.com/f"]
        }})
    );
    assert_eq!(
        state_patch_with_handler(
            LifecycleState::PreparingUpdate,
            now(),
            &hook(&[], &[], None)
        )["metadata"]["finalizers"],
        json!([])
    );
    let p = pod(Some("Normal"), &[], &[]);
    assert_eq!(
        state_patch(&p, "Updated", now(), true),
        label_patch(LifecycleState::Updated, now())
    );
    assert_eq!(
        label_patch("Updated", now()),
        label_patch(LifecycleState::Updated, now())
    );
    let mut p = CachedPod::default();
    set_pod_lifecycle(&mut p, LifecycleState::PreparingNormal, now());
    assert_eq!(pod_state(&p), Some(LifecycleState::PreparingNormal));
    assert_eq!(
        p.metadata.annotations.unwrap()[keys::LIFECYCLE_TIMESTAMP],
        "2024-05-06T07:08:09Z"
    );
}

#[test]
fn not_ready_policy() {
    let add = |k: &str| Some(NotReadyChange::Add(NotReadyMessage::new("Lifecycle", k)));
    let remove = |k: &str| Some(NotReadyChange::Remove(NotReadyMessage::new("Lifecycle", k)));
    assert_eq!(
        not_ready_change(LifecycleState::PreparingDelete, true),
        add("preDeleteHook")
    );
    assert_eq!(
        not_ready_change(LifecycleState::PreparingUpdate, true),
        add("preUpdateHook")
    );
    assert_eq!(
        not_ready_change(LifecycleState::Updated, true),
        remove("preUpdateHook")
    );
    assert_eq!(not_ready_change(LifecycleState::Normal, true), None);
    assert_eq!(
        not_ready_change(LifecycleState::PreparingDelete, false),
        None
    );
}

#[test]
fn plans() {
    let p = pod(Some("Normal"), &[], &[]);
    let plan = plan_state_change(&p, LifecycleState::Normal, true, now());
    assert!(!plan.updates_pod());
    assert_eq!(plan.readiness, None);
    let plan = plan_state_change(&p, LifecycleState::PreparingDelete, true, now());
    assert!(plan.updates_pod());
    assert_eq!(
        plan.patch,
        Some(label_patch(LifecycleState::PreparingDelete, now()))
    );
    assert!(matches!(plan.readiness, Some(NotReadyChange::Add(_))));
    // readiness change even when the state is already there
    let p = pod(Some("PreparingDelete"), &[], &[]);
    let plan = plan_state_change(&p, LifecycleState::PreparingDelete, true, now());
    assert!(!plan.updates_pod());
    assert!(plan.readiness.is_some());

    let h = hook(&[("hold", "true")], &[], Some(true));
    let p = pod(Some("Updated"), &[], &[]);
    let plan = plan_state_change_with_handler(&p, LifecycleState::PreparingUpdate, Some(&h), now());
    assert_eq!(
        plan.patch,
        Some(state_patch_with_handler(
            LifecycleState::PreparingUpdate,
            now(),
            &h
        ))
    );
    assert!(matches!(plan.readiness, Some(NotReadyChange::Add(_))));
    let plan = plan_state_change_with_handler(&p, LifecycleState::PreparingUpdate, None, now());
    assert_eq!(
        plan,
        StateChange {
            readiness: None,
            patch: None
        }
    );
}

#[test]
fn plain_state_changes_fold_into_a_status_patch() {
    let status = || {
        json!({"metadata": {"resourceVersion": "42"},
               "status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True"}]}})
    };
    // Updating -> Normal without readiness change: labels and annotations ride along.
    let p = pod(Some("Updating"), &[], &[]);
    let mut patch = status();
    let plan = plan_state_change(&p, LifecycleState::Normal, false, now());
    assert!(fold_into_status_patch(&mut patch, &plan));
    assert_eq!(
        patch,
        json!({"metadata": {"resourceVersion": "42",
                            "labels": {keys::LIFECYCLE_STATE: "Normal"},
                            "annotations": {keys::LIFECYCLE_TIMESTAMP: format_timestamp(now())}},
               "status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True"}]}})
    );
    // Existing label/annotation maps in the status patch are merged, not replaced.
    let mut patch = json!({"metadata": {"labels": {"a": "b"}}, "status": {}});
    assert!(fold_into_status_patch(&mut patch, &plan));
    assert_eq!(patch["metadata"]["labels"]["a"], "b");
    assert_eq!(patch["metadata"]["labels"][keys::LIFECYCLE_STATE], "Normal");

    // Nothing to fold: the pod is already in the state.
    let mut patch = status();
    let none = plan_state_change(
        &pod(Some("Normal"), &[], &[]),
        LifecycleState::Normal,
        false,
        now(),
    );
    assert!(!fold_into_status_patch(&mut patch, &none));
    assert_eq!(patch, status());
    // A readiness change is written on its own (re-read and replace of the status).
    let mut patch = status();
    let marked = plan_state_change(&p, LifecycleState::Updated, true, now());
    assert!(marked.readiness.is_some());
    assert!(!fold_into_status_patch(&mut patch, &marked));
    assert_eq!(patch, status());
    // A handler patch (finalizers) is not folded.
    let h = hook(&[("hold", "true")], &["f"], Some(false));
    let handler = plan_state_change_with_handler(
        &pod(Some("Updated"), &[], &[]),
        LifecycleState::PreparingUpdate,
        Some(&h),
        now(),
    );
    assert!(handler.readiness.is_none() && handler.patch.is_some());
    let mut patch = status();
    assert!(!fold_into_status_patch(&mut patch, &handler));
    assert_eq!(patch, status());
    // A status patch whose metadata is not an object is left alone.
    let mut odd = json!({"metadata": "x"});
    assert!(!fold_into_status_patch(&mut odd, &plan));
    assert_eq!(odd, json!({"metadata": "x"}));
}

fn lifecycle(
    pre_normal: Option<LifecycleHook>,
    in_place: Option<LifecycleHook>,
    pre_delete: Option<LifecycleHook>,
) -> Lifecycle {
    Lifecycle {
        pre_delete,
        in_place_update: in_place,
        pre_normal,
    }
}

fn scheduled(mut p: CachedPod) -> CachedPod {
    p.spec = Some(CachedPodSpec {
        node_name: Some("node-1".into()),
        ..Default::default()
    });
    p
}

#[test]
fn pre_normal_transition() {
    let p = pod(Some("PreparingNormal"), &[("ready", "yes")], &[]);
    assert!(!should_transition_pre_normal_to_normal(None, &p));
    assert!(should_transition_pre_normal_to_normal(
        None,
        &scheduled(p.clone())
    ));
    let l = lifecycle(None, Some(hook(&[("x", "y")], &[], None)), None);
    assert!(should_transition_pre_normal_to_normal(
        Some(&l),
        &scheduled(p.clone())
    ));
    let l = lifecycle(Some(hook(&[("ready", "yes")], &[], None)), None, None);
    assert!(should_transition_pre_normal_to_normal(Some(&l), &p));
    let l = lifecycle(Some(hook(&[("ready", "yes")], &["f"], None)), None, None);
    assert!(!should_transition_pre_normal_to_normal(
        Some(&l),
        &scheduled(p)
    ));
}

#[test]
fn refresh_targets() {
    let ipu = hook(&[("hold", "true")], &[], None);
    let with_ipu = lifecycle(None, Some(ipu.clone()), None);
    let only_pre_delete = lifecycle(None, None, Some(hook(&[("d", "1")], &[], None)));
    let rev_labels = [(crate::revision::CONTROLLER_REVISION_HASH_LABEL, "cs-new")];
    let old_labels = [(crate::revision::CONTROLLER_REVISION_HASH_LABEL, "cs-old")];
    use LifecycleState::*;
    // (lifecycle, pod, update completed, expected)
    let cases: Vec<(Option<&Lifecycle>, CachedPod, bool, Option<LifecycleState>)> = vec![
        (None, pod(Some("PreparingNormal"), &[], &[]), false, None),
        (
            None,
            scheduled(pod(Some("PreparingNormal"), &[], &[])),
            false,
            Some(Normal),
        ),
        (
            None,
            pod(Some("PreparingUpdate"), &old_labels, &[]),
            false,
            None,
        ),
        (
            None,
            pod(Some("PreparingUpdate"), &rev_labels, &[]),
            false,
            Some(Normal),
        ),
        (
            Some(&with_ipu),
            pod(Some("PreparingUpdate"), &rev_labels, &[]),
            false,
            Some(Updated),
        ),
        (
            Some(&with_ipu),
            pod(
                Some("PreparingUpdate"),
                &[rev_labels[0], ("hold", "true")],
                &[],
            ),
            false,
            Some(Normal),
        ),
        (
            Some(&with_ipu),
            pod(Some("Updating"), &[], &[]),
            false,
            None,
        ),
        (
            Some(&with_ipu),
            pod(Some("Updating"), &[], &[]),
            true,
            Some(Updated),
        ),
        (
            Some(&with_ipu),
            pod(Some("Updating"), &[("hold", "true")], &[]),
            true,
            Some(Normal),
        ),
        (None, pod(Some("Updating"), &[], &[]), true, Some(Normal)),
        // a lifecycle without an inPlaceUpdate hook still goes through Updated
        (
            Some(&only_pre_delete),
            pod(Some("Updating"), &[], &[]),
            true,
            Some(Updated),
        ),
        (
            Some(&only_pre_delete),
            pod(Some("Updated"), &[], &[]),
            false,
            Some(Normal),
        ),
        (None, pod(Some("Updated"), &[], &[]), false, Some(Normal)),
        (Some(&with_ipu), pod(Some("Updated"), &[], &[]), false, None),
        (
            Some(&with_ipu),
            pod(Some("Updated"), &[("hold", "true")], &[]),
            false,
            Some(Normal),
        ),
        (None, pod(Some("Normal"), &[], &[]), true, None),
        (
            None,
            scheduled(pod(Some("PreparingDelete"), &[], &[])),
            true,
            None,
        ),
        (None, scheduled(pod(None, &[], &[])), true, None),
        (None, scheduled(pod(Some("Bogus"), &[], &[])), true, None),
    ];
    for (i, (l, p, done, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            refresh_target_state(l, &p, "cs-new", done),
            want,
            "case {i}"
        );
    }
    assert!(!refresh_mark_not_ready(None));
    let l = lifecycle(None, Some(hook(&[], &[], Some(true))), None);
    assert!(refresh_mark_not_ready(Some(&l)));
}

#[test]
fn in_place_gate() {
    let ipu = hook(&[("hold", "true")], &[], Some(true));
    let l = lifecycle(None, Some(ipu), None);
    let hold = [("hold", "true")];
    use InPlaceUpdateGate::*;
    let cases: Vec<(Option<&Lifecycle>, CachedPod, InPlaceUpdateGate)> = vec![
        (None, pod(None, &hold, &[]), Update),
        (
            Some(&l),
            pod(None, &hold, &[]),
            ToPreparingUpdate {
                mark_not_ready: true,
            },
        ),
        (
            Some(&l),
            pod(Some("Normal"), &hold, &[]),
            ToPreparingUpdate {
                mark_not_ready: true,
            },
        ),
        (
            Some(&l),
            pod(Some("PreparingNormal"), &hold, &[]),
            ToPreparingUpdate {
                mark_not_ready: true,
            },
        ),
        (Some(&l), pod(Some("Normal"), &[], &[]), Update),
        (
            Some(&l),
            pod(Some("Updated"), &[], &[]),
            ToPreparingUpdateWithHandler,
        ),
        (
            None,
            pod(Some("Updated"), &[], &[]),
            ToPreparingUpdateWithHandler,
        ),
        (Some(&l), pod(Some("PreparingUpdate"), &hold, &[]), Wait),
        (Some(&l), pod(Some("PreparingUpdate"), &[], &[]), Update),
        (None, pod(Some("PreparingUpdate"), &hold, &[]), Update),
        (Some(&l), pod(Some("Updating"), &hold, &[]), Update),
        (
            Some(&l),
            pod(Some("PreparingDelete"), &[], &[]),
            NotAllowed("PreparingDelete".into()),
        ),
        (
            Some(&l),
            pod(Some("Bogus"), &[], &[]),
            NotAllowed("Bogus".into()),
        ),
    ];
    for (i, (l, p, want)) in cases.into_iter().enumerate() {
        assert_eq!(in_place_update_gate(l, &p), want, "case {i}");
    }
}

#[test]
fn pre_delete_decision() {
    let l = lifecycle(None, None, Some(hook(&[], &["f"], Some(true))));
    assert_eq!(
        pre_delete_hooked(Some(&l), &pod(None, &[], &["f"])),
        Some(true)
    );
    assert_eq!(pre_delete_hooked(Some(&l), &pod(None, &[], &[])), None);
    assert_eq!(pre_delete_hooked(None, &pod(None, &[], &["f"])), None);
    let l = lifecycle(None, None, Some(hook(&[("a", "b")], &[], None)));
    assert_eq!(
        pre_delete_hooked(Some(&l), &pod(None, &[("a", "b")], &[])),
        Some(false)
    );
}

// ---- readiness ----

fn condition(type_: &str, status: &str, message: Option<&str>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        message: message.map(Into::into),
        ..Default::default()
    }
}

fn gated_pod(conditions: Vec<PodCondition>) -> CachedPod {
    CachedPod {
        spec: Some(CachedPodSpec {
            readiness_gates: Some(vec![PodReadinessGate {
                condition_type: keys::KRUISE_POD_READY.into(),
            }]),
            ..Default::default()
        }),
        status: Some(CachedPodStatus {
            conditions: Some(conditions.into_iter().map(Into::into).collect()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn kruise_condition(p: &CachedPod) -> PodCondition {
    readiness_condition(p).unwrap().into()
}

#[test]
fn messages_encode_like_go() {
    let mut m = vec![
        NotReadyMessage::new("Lifecycle", "preUpdateHook"),
        NotReadyMessage::new("ContainerRecreateRequest", "x"),
        NotReadyMessage::new("Lifecycle", "preDeleteHook"),
    ];
    assert_eq!(
        dump_messages(&mut m),
        r#"[{"userAgent":"ContainerRecreateRequest","key":"x"},{"userAgent":"Lifecycle","key":"preDeleteHook"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]"#
    );
    assert_eq!(dump_messages(&mut []), "[]");
    assert_eq!(
        dump_messages(&mut [NotReadyMessage::new("a<b", "k")]),
        r#"[{"userAgent":"a\u003cb","key":"k"}]"#
    );
    assert_eq!(parse_messages(""), vec![]);
    assert_eq!(parse_messages("garbage"), vec![]);
    assert_eq!(
        parse_messages(r#"[{"key":"k","userAgent":"u","extra":1}]"#),
        vec![NotReadyMessage::new("u", "k")]
    );
}

#[test]
fn add_key_creates_or_updates_condition_and_ready() {
    let msg = NotReadyMessage::new("Lifecycle", "preDeleteHook");
    // no gate: nothing
    let mut p = gated_pod(vec![]);
    p.spec = None;
    assert!(!needs_add_not_ready_key(&p, &msg));
    assert!(!add_not_ready_key(&mut p, &msg, now()));

    // no condition: appended with empty status
    let mut p = gated_pod(vec![
        condition("ContainersReady", "True", None),
        condition("Ready", "True", None),
    ]);
    assert!(needs_add_not_ready_key(&p, &msg));
    assert!(add_not_ready_key(&mut p, &msg, now()));
    let c = kruise_condition(&p);
    assert_eq!(c.status, "");
    assert_eq!(
        c.message.as_deref(),
        Some(r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#)
    );
    assert_eq!(c.last_transition_time, Some(Time(now())));
    // Ready recomputed to False because the gate is not True
    let ready = crate::podutil::get_condition(&p, "Ready").unwrap();
    assert_eq!(ready.status, "False");

    // existing True condition: becomes False with the key
    let mut p = gated_pod(vec![condition(keys::KRUISE_POD_READY, "True", Some("[]"))]);
    assert!(needs_add_not_ready_key(&p, &msg));
    assert!(add_not_ready_key(&mut p, &msg, now()));
    let c = kruise_condition(&p);
    assert_eq!(c.status, "False");
    assert_eq!(
        c.message.as_deref(),
        Some(r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#)
    );
    assert!(already_has_key(&p, &msg));
    assert!(!needs_add_not_ready_key(&p, &msg));
    // adding again: no change
    assert!(!add_not_ready_key(&mut p, &msg, now()));
    // a second key is merged and sorted
    let other = NotReadyMessage::new("ContainerRecreateRequest", "crr");
    assert!(add_not_ready_key(&mut p, &other, now()));
    assert_eq!(
        kruise_condition(&p).message.as_deref(),
        Some(
            r#"[{"userAgent":"ContainerRecreateRequest","key":"crr"},{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#
        )
    );
    // True condition whose message still lists the key: not "already has", but no change
    let mut p = gated_pod(vec![condition(
        keys::KRUISE_POD_READY,
        "True",
        Some(r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#),
    )]);
    assert!(!already_has_key(&p, &msg));
    assert!(!add_not_ready_key(&mut p, &msg, now()));
}

#[test]
fn remove_key() {
    let msg = NotReadyMessage::new("Lifecycle", "preUpdateHook");
    let other = NotReadyMessage::new("ContainerRecreateRequest", "crr");
    let two = r#"[{"userAgent":"ContainerRecreateRequest","key":"crr"},{"userAgent":"Lifecycle","key":"preUpdateHook"}]"#;
    let mut p = gated_pod(vec![condition(keys::KRUISE_POD_READY, "False", Some(two))]);
    assert!(remove_not_ready_key(&mut p, &msg, now()));
    let c = kruise_condition(&p);
    assert_eq!(c.status, "False");
    assert_eq!(
        c.message.as_deref(),
        Some(r#"[{"userAgent":"ContainerRecreateRequest","key":"crr"}]"#)
    );
    assert!(!remove_not_ready_key(&mut p, &msg, now()));
    assert!(remove_not_ready_key(&mut p, &other, now()));
    let c = kruise_condition(&p);
    assert_eq!(c.status, "True");
    assert_eq!(c.message.as_deref(), Some("[]"));
    // no condition / no gate
    let mut p = gated_pod(vec![]);
    assert!(!remove_not_ready_key(&mut p, &msg, now()));
    let mut p = gated_pod(vec![condition(keys::KRUISE_POD_READY, "False", Some(two))]);
    p.spec = None;
    assert!(!remove_not_ready_key(&mut p, &msg, now()));
    // apply_not_ready_change dispatches
    let mut p = gated_pod(vec![condition(keys::KRUISE_POD_READY, "True", Some("[]"))]);
    assert!(apply_not_ready_change(
        &mut p,
        &NotReadyChange::Add(msg.clone()),
        now()
    ));
    assert!(apply_not_ready_change(
        &mut p,
        &NotReadyChange::Remove(msg),
        now()
    ));
    assert_eq!(kruise_condition(&p).status, "True");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn arb_msg() -> impl Strategy<Value = NotReadyMessage> {
        (
            prop::sample::select(vec!["Lifecycle", "CRR", "x<y"]),
            prop::sample::select(vec!["a", "b", "preDeleteHook"]),
        )
            .prop_map(|(u, k)| NotReadyMessage::new(u, k))
    }

    proptest! {
        /// Adding and removing keys in any order: the condition is True exactly when no key is
        /// left, and the message always lists the held keys, sorted, once each.
        #[test]
        fn not_ready_keys_track_a_set(ops in prop::collection::vec((any::<bool>(), arb_msg()), 0..20)) {
            let mut p = gated_pod(vec![condition(keys::KRUISE_POD_READY, "True", Some("[]"))]);
            let mut held = std::collections::BTreeSet::new();
            for (add, m) in ops {
                if add {
                    let changed = add_not_ready_key(&mut p, &m, now());
                    prop_assert_eq!(changed, held.insert(m));
                } else {
                    let changed = remove_not_ready_key(&mut p, &m, now());
                    prop_assert_eq!(changed, held.remove(&m));
                }
            }
            let c = kruise_condition(&p);
            let mut want: Vec<NotReadyMessage> = held.iter().cloned().collect();
            prop_assert_eq!(c.message.clone().unwrap(), dump_messages(&mut want));
            prop_assert_eq!(parse_messages(c.message.as_deref().unwrap()), want);
            if held.is_empty() {
                prop_assert_eq!(c.status.as_str(), "True");
            } else {
                prop_assert_eq!(c.status.as_str(), "False");
            }
        }
    }
}
