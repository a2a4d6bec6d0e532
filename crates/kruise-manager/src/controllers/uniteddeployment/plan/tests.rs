//! Unit tests of the UnitedDeployment plan (cases from OpenKruise's `allocator_test.go` and the
//! e2e expectations).

use super::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::apps::v1alpha1::{
    AdaptiveUnitedDeploymentStrategy, Topology, UnitedDeploymentScheduleStrategy,
    UnitedDeploymentSpec,
};

fn ud(replicas: Option<i32>, subsets: Vec<SubsetSpec>) -> UnitedDeployment {
    UnitedDeployment::new(
        "ud",
        UnitedDeploymentSpec {
            replicas,
            topology: Some(Topology {
                subsets: Some(subsets),
                schedule_strategy: None,
            }),
            ..Default::default()
        },
    )
}

fn subset(name: &str, replicas: Option<&str>, min: Option<&str>, max: Option<&str>) -> SubsetSpec {
    let v = |s: &str| match s.parse::<i32>() {
        Ok(i) => IntOrString::Int(i),
        Err(_) => IntOrString::String(s.into()),
    };
    SubsetSpec {
        name: name.into(),
        replicas: replicas.map(v),
        min_replicas: min.map(v),
        max_replicas: max.map(v),
        ..Default::default()
    }
}

fn alloc(ud: &UnitedDeployment) -> Vec<i32> {
    allocate(ud, &BTreeMap::new())
        .unwrap()
        .values()
        .copied()
        .collect()
}

#[test]
fn elastic_allocator_follows_the_e2e_expectations() {
    let subsets = vec![
        subset("subset-0", None, Some("1"), Some("2")),
        subset("subset-1", None, Some("1"), Some("2")),
        subset("subset-2", None, Some("1"), None),
    ];
    assert_eq!(alloc(&ud(Some(3), subsets.clone())), [1, 1, 1]);
    assert_eq!(alloc(&ud(Some(7), subsets.clone())), [2, 2, 3]);
    assert_eq!(alloc(&ud(Some(1), subsets)), [1, 0, 0]);
}

#[test]
fn specific_allocator_follows_the_e2e_expectations() {
    let subsets = vec![
        subset("subset-0", Some("25%"), None, None),
        subset("subset-1", Some("25%"), None, None),
        subset("subset-2", None, None, None),
    ];
    assert_eq!(alloc(&ud(Some(3), subsets.clone())), [1, 1, 1]);
    assert_eq!(alloc(&ud(Some(4), subsets.clone())), [1, 1, 2]);
    assert_eq!(alloc(&ud(Some(1), subsets)), [0, 0, 1]);
}

#[test]
fn specific_allocator_spreads_evenly_and_reports_bad_sums() {
    let even = vec![
        subset("a", None, None, None),
        subset("b", None, None, None),
        subset("c", None, None, None),
    ];
    assert_eq!(alloc(&ud(Some(10), even.clone())), [3, 3, 4]);
    let err = allocate(
        &ud(
            Some(2),
            vec![
                subset("a", Some("3"), None, None),
                subset("b", None, None, None),
            ],
        ),
        &BTreeMap::new(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "specified subsets' replica (3) is greater than UnitedDeployment replica (2)"
    );
    let err = allocate(&ud(None, even), &BTreeMap::new()).unwrap_err();
    assert_eq!(
        err,
        "all subsets must be specified when UnitedDeployment replica is unspecified"
    );
}

#[test]
fn parse_subset_replicas_rounds_half_up_and_words_errors_as_openkruise() {
    assert_eq!(
        parse_subset_replicas(3, &IntOrString::String("50%".into())),
        Ok(2)
    );
    assert_eq!(
        parse_subset_replicas(3, &IntOrString::String("25%".into())),
        Ok(1)
    );
    assert_eq!(
        parse_subset_replicas(-1, &IntOrString::String("5%".into())),
        Err(
            "subsetReplicas (5%) should not be string when unitedDeployment replicas is empty"
                .into()
        )
    );
    assert_eq!(
        parse_subset_replicas(3, &IntOrString::String("150%".into())),
        Err("subset replicas (150%) should be in range [0, 100]".into())
    );
    assert_eq!(
        parse_subset_replicas(3, &IntOrString::String("x%".into())),
        Err("subset replicas (x%) should be correct percentage integer: strconv.ParseInt: parsing \"x\": invalid syntax".into())
    );
}

#[test]
fn adaptive_allocator_keeps_running_pods_and_moves_the_rest() {
    let mut u = ud(
        Some(3),
        vec![
            subset("subset-0", None, None, Some("2")),
            subset("subset-1", None, None, Some("2")),
            subset("subset-2", None, None, None),
        ],
    );
    u.spec.topology.as_mut().unwrap().schedule_strategy = Some(UnitedDeploymentScheduleStrategy {
        type_: Some("Adaptive".into()),
        adaptive: Some(AdaptiveUnitedDeploymentStrategy::default()),
    });
    let mut existing = BTreeMap::new();
    existing.insert(
        "subset-1".to_owned(),
        Subset {
            spec_replicas: 1,
            unschedulable: Unschedulable {
                unschedulable: true,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let got = allocate(&u, &existing).unwrap();
    assert_eq!(got.values().copied().collect::<Vec<_>>(), [2, 0, 1]);
}

#[test]
fn reservation_allocator_creates_temporary_pods_elsewhere() {
    let names: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
    let min: BTreeMap<String, i32> = names.iter().map(|n| (n.clone(), 0)).collect();
    let max: BTreeMap<String, i32> = [("a".to_owned(), 2), ("b".to_owned(), i32::MAX)].into();
    let mut existing = BTreeMap::new();
    existing.insert(
        "a".to_owned(),
        Subset {
            spec_replicas: 2,
            unschedulable: Unschedulable {
                unschedulable: true,
                marked: true,
                reserved_pods: 2,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let got = allocate_with_reservation(3, &min, &max, &existing, &names);
    assert_eq!(got["a"], 2);
    assert_eq!(got["b"], 3);
}

#[test]
fn partitions_are_capped_by_replicas() {
    let mut u = ud(
        Some(4),
        vec![subset("a", None, None, None), subset("b", None, None, None)],
    );
    u.spec.update_strategy = Some(kruise_api::apps::v1alpha1::UnitedDeploymentUpdateStrategy {
        type_: Some("Manual".into()),
        manual_update: Some(kruise_api::apps::v1alpha1::ManualUpdate {
            partitions: Some([("a".to_owned(), 5)].into()),
        }),
    });
    let replicas: BTreeMap<String, i32> = [("a".to_owned(), 2), ("b".to_owned(), 2)].into();
    let p = next_partitions(&u, &replicas);
    assert_eq!(p["a"], 2);
    assert_eq!(p["b"], 0);
}

#[test]
fn updated_condition_flips_with_the_revision() {
    let now = jiff::Timestamp::now();
    let mut st = UnitedDeploymentStatus::default();
    set_updated_condition(&mut st, "r1", "r2", now);
    let c = &st.conditions.as_ref().unwrap()[0];
    assert_eq!(c.status.as_deref(), Some("False"));
    assert_eq!(c.message.as_deref(), Some("updating to revision r2"));
    set_updated_condition(&mut st, "r2", "r2", now);
    assert_eq!(
        st.conditions.as_ref().unwrap()[0].reason.as_deref(),
        Some("UnitedDeploymentRevisionUpdated")
    );
}
