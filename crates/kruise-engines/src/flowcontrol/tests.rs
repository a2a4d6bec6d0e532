use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kruise_api::rspolicy::v1alpha1::{AdmittedDeletion, PodDeletionFlowControl};
use serde_json::json;

use super::*;

fn fc(spec: serde_json::Value) -> PodDeletionFlowControl {
    serde_json::from_value(json!({
        "apiVersion": "policy.kruise-rs.io/v1alpha1", "kind": "PodDeletionFlowControl",
        "metadata": {"name": "fc"}, "spec": spec,
    }))
    .unwrap()
}

fn t0() -> Timestamp {
    "2026-11-29T04:00:00Z".parse().unwrap()
}

fn entry(pod: &str, secs_after_t0: i64) -> AdmittedDeletion {
    AdmittedDeletion {
        pod: pod.to_string(),
        uid: Some(format!("uid-{pod}")),
        time: Time(t0() + SignedDuration::from_secs(secs_after_t0)),
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn windows_parse_like_the_crd_pattern_allows() {
    assert_eq!(parse_window("30s").unwrap().as_secs(), 30);
    assert_eq!(parse_window("1m").unwrap().as_secs(), 60);
    assert_eq!(parse_window("1h30m").unwrap().as_secs(), 5400);
    assert_eq!(parse_window("1d").unwrap().as_secs(), 86400);
    assert_eq!(parse_window("7d").unwrap().as_secs(), 7 * 86400);
    for bad in ["", "0s", "8d", "1w", "1 m", "-1m", "m", "1.5h", "P1D"] {
        let err = parse_window(bad).unwrap_err();
        assert!(err.contains("invalid window"), "{bad}: {err}");
    }
}

#[test]
fn scope_selectors_and_exemptions_decide_what_counts() {
    let kruise = fc(json!({"limits": [{"window": "1m", "maxDeletions": 1}]}));
    let ns = labels(&[("kubernetes.io/metadata.name", "a")]);
    let del = |owner: Option<&'static str>, user: &'static str| Deletion {
        labels: None,
        controller_api_version: owner,
        namespace_labels: Some(&ns),
        username: user,
    };
    assert!(selects(&kruise, &del(Some("apps.kruise.io/v1alpha1"), "u")));
    assert!(!selects(&kruise, &del(Some("apps/v1"), "u")));
    assert!(!selects(&kruise, &del(None, "u")));

    let all = fc(json!({
        "scope": "AllWorkloads",
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "a"}},
        "podSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
        "limits": [{"window": "1m", "maxDeletions": 1}],
        "exempt": {"usernames": ["system:serviceaccount:kube-system:drainer"]},
    }));
    assert!(selects(&all, &del(None, "u")));
    assert!(selects(&all, &del(Some("apps/v1"), "u")));
    assert!(!selects(
        &all,
        &del(None, "system:serviceaccount:kube-system:drainer")
    ));
    let other_ns = labels(&[("kubernetes.io/metadata.name", "b")]);
    assert!(!selects(
        &all,
        &Deletion {
            namespace_labels: Some(&other_ns),
            ..del(None, "u")
        }
    ));
    let db = labels(&[("tier", "db")]);
    assert!(!selects(
        &all,
        &Deletion {
            labels: Some(&db),
            ..del(None, "u")
        }
    ));
}

#[test]
fn every_window_must_have_room_and_the_denial_says_when() {
    let f = fc(json!({"limits": [
        {"window": "1m", "maxDeletions": 2},
        {"window": "1h", "maxDeletions": 3},
    ]}));
    let now = t0() + SignedDuration::from_secs(100);
    // Two in the last minute (at +50 and +90): the 1m window is full until +110.
    let log = vec![entry("ns/a", 50), entry("ns/b", 90)];
    let err = judge(&f, &log, now).unwrap_err();
    assert_eq!(
        err,
        "pod deletion flow control fc: 2 deletions in the last 1m (limit 2); the next is \
         allowed in 11s"
    );
    assert!(judge(&f, &log, t0() + SignedDuration::from_secs(111)).is_ok());
    // The hour holds three: refused even when the minute has room.
    let log = vec![entry("ns/a", 0), entry("ns/b", 10), entry("ns/c", 20)];
    let err = judge(&f, &log, now).unwrap_err();
    assert!(
        err.contains("3 deletions in the last 1h (limit 3)"),
        "{err}"
    );
    assert!(err.contains("allowed in 3501s"), "{err}");
    // Limit 0 refuses everything.
    let none = fc(json!({"limits": [{"window": "1m", "maxDeletions": 0}]}));
    assert!(
        judge(&none, &[], now)
            .unwrap_err()
            .contains("no deletions are allowed")
    );
    // An invalid window refuses with the reason.
    let bad = fc(json!({"limits": [{"window": "1w", "maxDeletions": 5}]}));
    assert!(
        judge(&bad, &[], now)
            .unwrap_err()
            .contains("invalid window \"1w\"")
    );
}

#[test]
fn recording_prunes_past_the_longest_window_and_status_counts_each_window() {
    let f = fc(json!({"limits": [
        {"window": "1m", "maxDeletions": 2},
        {"window": "10m", "maxDeletions": 5},
    ]}));
    let l = limits(&f).unwrap();
    let now = t0() + SignedDuration::from_secs(700);
    let log = vec![entry("ns/old", 0), entry("ns/a", 200), entry("ns/b", 690)];
    let next = record(&l, &log, "ns/c", Some("uid-c"), now);
    let pods: Vec<&str> = next.iter().map(|e| e.pod.as_str()).collect();
    assert_eq!(pods, ["ns/a", "ns/b", "ns/c"]);
    let w = windows(&l, &next, now);
    assert_eq!((w[0].used, w[0].remaining), (2, 0));
    assert_eq!((w[1].used, w[1].remaining), (3, 2));
    assert_eq!(summary(&l, &w), "1m:2/2 10m:3/5");
    // ns/b leaves the minute at +750.
    assert_eq!(
        next_change(&l, &next, now),
        Some(t0() + SignedDuration::from_secs(750))
    );
    assert_eq!(next_change(&l, &[], now), None);
}

#[test]
fn a_pod_is_recorded_once_by_uid() {
    let log = vec![entry("ns/a", 0)];
    assert!(is_recorded(&log, "ns/a", Some("uid-ns/a")));
    // Same name, new pod (a StatefulSet's pod recreated): not recorded.
    assert!(!is_recorded(&log, "ns/a", Some("other")));
    assert!(is_recorded(&log, "ns/a", None));
}
