use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, Time};
use kruise_api::apps::common::{UpdatePriorityOrderTerm, UpdatePriorityWeightTerm};
use kruise_api::pod::CachedPodCondition;
#[allow(unused_imports)]
use kruise_api::pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodSpec, CachedPodStatus,
};
use serde::Deserialize;

fn labelled(labels: &[(&str, &str)]) -> CachedPod {
    let mut p = CachedPod::default();
    p.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    p
}

fn parse_labels(spec: &str) -> CachedPod {
    let pairs: Vec<(&str, &str)> = spec
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    labelled(&pairs)
}

fn term(k: &str, v: &str) -> UpdateScatterTerm {
    UpdateScatterTerm {
        key: k.into(),
        value: v.into(),
    }
}

// ---- scatter (cases from OpenKruise's own scatter sort tests) ----

#[test]
fn scatter_by_single_rule() {
    let t = term("labelA", "AAA");
    let cases: &[(&[&str], &[usize])] = &[
        (&[""], &[0]),
        (&["labelA=AAA"], &[0]),
        (&["labelA=AAA", "bbb"], &[0, 1]),
        (
            &["", "", "", "", "labelA=AAA", "labelA=AAA"],
            &[4, 0, 1, 2, 3, 5],
        ),
        (
            &["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            &[3, 0, 1, 4, 2, 5],
        ),
        (
            &["", "", "", "labelA=AAA", "", "", "labelA=AAA"],
            &[3, 0, 1, 2, 4, 5, 6],
        ),
        (
            &[
                "",
                "",
                "",
                "",
                "",
                "",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
            ],
            &[6, 0, 1, 2, 7, 3, 4, 5, 8],
        ),
        (
            &[
                "",
                "",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
            ],
            &[2, 3, 0, 4, 1, 5],
        ),
        (
            &["", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"],
            &[3, 0, 1, 4, 2, 5],
        ),
        (
            &[
                "",
                "",
                "labelA=AAA",
                "",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
            ],
            &[2, 4, 0, 5, 6, 1, 7, 3, 8],
        ),
        (
            &[
                "",
                "labelA=AAA",
                "",
                "labelA=AAA",
                "",
                "",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA",
            ],
            &[1, 0, 3, 2, 6, 4, 7, 5, 8],
        ),
        (
            &[
                "",
                "",
                "",
                "",
                "ee",
                "a",
                "",
                "labelA=AAA",
                "labelA=AAA",
                "labelA=AAA,labelB=BBB",
            ],
            &[7, 0, 1, 2, 3, 8, 4, 5, 6, 9],
        ),
    ];
    for (labels, want) in cases {
        let owned: Vec<CachedPod> = labels.iter().map(|s| parse_labels(s)).collect();
        let pods: Vec<&CachedPod> = owned.iter().collect();
        let got = scatter_by_term(&pods, (0..pods.len()).collect(), &t);
        assert_eq!(got, *want, "{labels:?}");
    }
}

type Labels<'a> = &'a [&'a [(&'a str, &'a str)]];

#[test]
fn scatter_terms_selection() {
    let cases: &[(Labels, Vec<UpdateScatterTerm>, Vec<UpdateScatterTerm>)] = &[
        (
            &[
                &[],
                &[],
                &[],
                &[],
                &[("labelA", "AAA")],
                &[("labelA", "AAA")],
            ],
            vec![term("labelA", "AAA")],
            vec![term("labelA", "AAA")],
        ),
        (
            &[
                &[],
                &[],
                &[("labelB", "B")],
                &[("labelB", "BBB")],
                &[("labelA", "AAA")],
                &[("labelA", "AAA")],
            ],
            vec![term("labelA", "AAA"), term("labelB", "BBB")],
            vec![term("labelA", "AAA"), term("labelB", "BBB")],
        ),
        (
            &[
                &[("labelB", "BBB")],
                &[("labelB", "BBB")],
                &[("labelA", "AAA")],
                &[],
            ],
            vec![
                term("labelA", "AAA"),
                term("labelB", "BBB"),
                term("labelC", "C"),
            ],
            vec![term("labelB", "BBB"), term("labelA", "AAA")],
        ),
        // a single term is kept even if no pod carries it
        (&[&[], &[]], vec![term("x", "y")], vec![term("x", "y")]),
    ];
    for (labels, strategy, want) in cases {
        let owned: Vec<CachedPod> = labels.iter().map(|l| labelled(l)).collect();
        let pods: Vec<&CachedPod> = owned.iter().collect();
        let idx: Vec<usize> = (0..pods.len()).collect();
        assert_eq!(scatter_terms(&pods, &idx, strategy), *want);
    }
}

#[test]
fn scatter_sort_cases() {
    let a = ("labelA", "AAA");
    let b = ("labelB", "BBB");
    let c = ("labelC", "CCC");
    let ab = vec![term("labelA", "AAA"), term("labelB", "BBB")];
    let abc = vec![
        term("labelA", "AAA"),
        term("labelB", "BBB"),
        term("labelC", "CCC"),
    ];
    // (all pods' labels, waiting = first n, strategy, expected)
    type Case<'a> = (
        Vec<Vec<(&'a str, &'a str)>>,
        usize,
        Vec<UpdateScatterTerm>,
        Vec<usize>,
    );
    let cases: Vec<Case> = vec![
        (vec![vec![a, b]], 1, vec![term("labelA", "AAA")], vec![0]),
        (vec![vec![]; 6], 6, vec![], vec![0, 1, 2, 3, 4, 5]),
        (
            vec![vec![], vec![], vec![], vec![], vec![a], vec![a]],
            6,
            vec![term("labelA", "AAA")],
            vec![4, 0, 1, 2, 3, 5],
        ),
        (
            vec![
                vec![],
                vec![],
                vec![],
                vec![],
                vec![("sdfb", "eee")],
                vec![("dsf", "same")],
                vec![b],
                vec![a],
                vec![a],
                vec![a, b],
            ],
            10,
            vec![term("labelB", "BBB")],
            vec![6, 0, 1, 2, 3, 4, 5, 7, 8, 9],
        ),
        (
            vec![vec![b], vec![b], vec![], vec![], vec![a], vec![a]],
            6,
            ab.clone(),
            vec![0, 4, 2, 3, 5, 1],
        ),
        (
            vec![vec![], vec![], vec![], vec![b], vec![a, b], vec![a]],
            6,
            ab.clone(),
            vec![4, 0, 1, 2, 5, 3],
        ),
        (
            vec![
                vec![],
                vec![],
                vec![],
                vec![],
                vec![("sdfb", "eee")],
                vec![("dsf", "same")],
                vec![b],
                vec![a],
                vec![a],
                vec![b],
            ],
            10,
            vec![term("labelB", "BBB"), term("labelA", "AAA")],
            vec![7, 6, 0, 1, 2, 3, 4, 5, 9, 8],
        ),
        (
            vec![
                vec![],
                vec![],
                vec![],
                vec![],
                vec![("sdfb", "eee")],
                vec![("dsf", "same")],
                vec![b],
                vec![a],
                vec![a],
                vec![b],
            ],
            10,
            ab.clone(),
            vec![6, 7, 0, 1, 2, 3, 4, 5, 8, 9],
        ),
        (
            vec![
                vec![],
                vec![],
                vec![],
                vec![a],
                vec![("sdfb", "eee")],
                vec![("dsf", "same")],
                vec![a, b],
                vec![],
                vec![],
                vec![],
            ],
            8,
            ab.clone(),
            vec![3, 0, 1, 2, 4, 5, 7, 6],
        ),
        (
            vec![
                vec![],
                vec![],
                vec![],
                vec![a],
                vec![],
                vec![],
                vec![("sdfb", "eee")],
                vec![("dsf", "same")],
                vec![a, b],
                vec![],
                vec![],
                vec![b, a],
            ],
            11,
            ab.clone(),
            vec![0, 1, 2, 4, 3, 5, 6, 7, 9, 10, 8],
        ),
        (
            vec![
                vec![],
                vec![a],
                vec![a],
                vec![b],
                vec![b],
                vec![c],
                vec![c],
                vec![c],
                vec![c],
                vec![c],
            ],
            10,
            abc.clone(),
            vec![3, 1, 5, 0, 6, 7, 8, 9, 2, 4],
        ),
        (
            vec![
                vec![],
                vec![a],
                vec![a, c],
                vec![b, c],
                vec![b],
                vec![],
                vec![],
                vec![c],
                vec![c],
                vec![c],
            ],
            10,
            abc,
            vec![3, 2, 0, 7, 8, 5, 6, 9, 1, 4],
        ),
        (
            vec![vec![], vec![], vec![], vec![], vec![a], vec![a], vec![a]],
            6,
            vec![term("labelA", "AAA")],
            vec![0, 1, 4, 2, 3, 5],
        ),
        (
            vec![
                vec![a],
                vec![a],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![],
                vec![a],
            ],
            7,
            vec![term("labelA", "AAA")],
            vec![2, 0, 3, 4, 5, 6, 1],
        ),
    ];
    for (i, (labels, wait, strategy, want)) in cases.into_iter().enumerate() {
        let owned: Vec<CachedPod> = labels.iter().map(|l| labelled(l)).collect();
        let pods: Vec<&CachedPod> = owned.iter().collect();
        let got = scatter_sort(&pods, (0..wait).collect(), &strategy);
        assert_eq!(got, want, "case {i}");
    }
}

// ---- priority ----

fn weight(w: i32, labels: &[(&str, &str)]) -> UpdatePriorityWeightTerm {
    UpdatePriorityWeightTerm {
        weight: w,
        match_selector: LabelSelector {
            match_labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            match_expressions: None,
        },
    }
}

fn order(keys: &[&str]) -> UpdatePriorityStrategy {
    UpdatePriorityStrategy {
        order_priority: Some(
            keys.iter()
                .map(|k| UpdatePriorityOrderTerm {
                    ordered_key: k.to_string(),
                })
                .collect(),
        ),
        weight_priority: None,
    }
}

fn lmap(labels: &[(&str, &str)]) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn priority_compare_cases() {
    let w2 = UpdatePriorityStrategy {
        weight_priority: Some(vec![
            weight(20, &[("key", "foo")]),
            weight(10, &[("key", "bar")]),
        ]),
        order_priority: None,
    };
    let w3 = UpdatePriorityStrategy {
        weight_priority: Some(vec![
            weight(20, &[("key1", "foo")]),
            weight(10, &[("key2", "bar")]),
            weight(15, &[("key3", "baz")]),
        ]),
        order_priority: None,
    };
    let o = order(&["key1", "key2"]);
    // (strategy, a, b, a strictly before b)
    type Case<'a> = (
        &'a UpdatePriorityStrategy,
        Vec<(&'a str, &'a str)>,
        Vec<(&'a str, &'a str)>,
        Ordering,
    );
    let cases: Vec<Case> = vec![
        (&w2, vec![], vec![], Ordering::Equal),
        (
            &w2,
            vec![("key", "foo")],
            vec![("key", "foo")],
            Ordering::Equal,
        ),
        (
            &w2,
            vec![("key", "bar")],
            vec![("key", "foo")],
            Ordering::Greater,
        ),
        (&w2, vec![], vec![("key", "bar")], Ordering::Greater),
        (
            &w3,
            vec![("key1", "foo")],
            vec![("key2", "bar"), ("key3", "baz")],
            Ordering::Greater,
        ),
        (&o, vec![], vec![], Ordering::Equal),
        (
            &o,
            vec![("key1", "o-10")],
            vec![("key1", "o-5")],
            Ordering::Less,
        ),
        (
            &o,
            vec![("key1", "o-10")],
            vec![("key1", "o-10")],
            Ordering::Equal,
        ),
        (
            &o,
            vec![("key1", "o-10")],
            vec![("key1", "o-20")],
            Ordering::Greater,
        ),
        (
            &o,
            vec![("key2", "o-20")],
            vec![("key1", "o-10")],
            Ordering::Greater,
        ),
        (
            &o,
            vec![("key2", "o-20")],
            vec![("key2", "o-10")],
            Ordering::Less,
        ),
        // pods without any ordered key come first (OpenKruise level -1)
        (&o, vec![], vec![("key1", "o-10")], Ordering::Less),
    ];
    for (i, (s, a, b, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            priority_cmp(s, Some(&lmap(&a)), Some(&lmap(&b))),
            want,
            "case {i}"
        );
    }
    assert_eq!(
        priority_cmp(&UpdatePriorityStrategy::default(), None, None),
        Ordering::Equal
    );
}

#[test]
fn priority_sort_keeps_order_of_equals() {
    let s = UpdatePriorityStrategy {
        weight_priority: Some(vec![
            weight(100, &[("foo", "bar")]),
            weight(90, &[("hello", "world")]),
        ]),
        order_priority: None,
    };
    let owned = [
        labelled(&[("hello", "world")]),
        labelled(&[]),
        labelled(&[("foo", "bar")]),
        labelled(&[]),
    ];
    let pods: Vec<&CachedPod> = owned.iter().collect();
    assert_eq!(priority_sort(&pods, vec![0, 1, 2, 3], &s), vec![2, 0, 1, 3]);
    assert_eq!(
        priority_sort(&pods, vec![0, 1, 2, 3], &UpdatePriorityStrategy::default()),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn int_suffix_and_selectors() {
    for (v, want) in [
        ("sts-10", 10),
        ("5", 5),
        ("abc", 0),
        ("", 0),
        ("a1b2", 2),
        ("x99999999999999999999", 0),
        ("007", 7),
    ] {
        assert_eq!(int_suffix(v), want, "{v}");
    }
    let labels = lmap(&[("a", "1"), ("b", "2")]);
    let expr = |k: &str, op: &str, vals: &[&str]| LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: k.into(),
            operator: op.into(),
            values: Some(vals.iter().map(|s| s.to_string()).collect()),
        }]),
    };
    assert_eq!(
        selector_matches(&LabelSelector::default(), None),
        Some(true)
    );
    assert_eq!(
        selector_matches(&expr("a", "In", &["1", "3"]), Some(&labels)),
        Some(true)
    );
    assert_eq!(
        selector_matches(&expr("a", "In", &[]), Some(&labels)),
        Some(false)
    );
    assert_eq!(
        selector_matches(&expr("c", "NotIn", &["1"]), Some(&labels)),
        Some(true)
    );
    assert_eq!(
        selector_matches(&expr("a", "NotIn", &["1"]), Some(&labels)),
        Some(false)
    );
    assert_eq!(
        selector_matches(&expr("b", "Exists", &["ignored"]), Some(&labels)),
        Some(true)
    );
    assert_eq!(
        selector_matches(&expr("b", "DoesNotExist", &[]), Some(&labels)),
        Some(false)
    );
    assert_eq!(
        selector_matches(&expr("b", "Gt", &["1"]), Some(&labels)),
        None
    );
}

/// Differential vectors: random pods/strategies run through OpenKruise v1.9.0's own
/// `prioritySort` + `scatterSort` (Go), compared with ours. Generated by `make golden`
/// (hack/golden, seeded, so a rerun writes the same file).
const GO_SORT_VECTORS: &str = include_str!("go_sort_vectors.tsv");

#[derive(Deserialize)]
struct SortCase {
    labels: Vec<BTreeMap<String, String>>,
    wait: usize,
    priority: Option<UpdatePriorityStrategy>,
    scatter: Option<UpdateScatterStrategy>,
}

#[test]
fn priority_and_scatter_match_openkruise_go() {
    let mut n = 0;
    for line in GO_SORT_VECTORS.lines() {
        let (input, want) = line.split_once('\t').unwrap();
        let case: SortCase = serde_json::from_str(input).unwrap();
        let want: Vec<usize> = serde_json::from_str(want).unwrap();
        let owned: Vec<CachedPod> = case
            .labels
            .iter()
            .map(|l| {
                let mut p = CachedPod::default();
                p.metadata.labels = Some(l.clone());
                p
            })
            .collect();
        let pods: Vec<&CachedPod> = owned.iter().collect();
        let mut idx: Vec<usize> = (0..case.wait).collect();
        if let Some(p) = &case.priority {
            idx = priority_sort(&pods, idx, p);
        }
        if let Some(s) = &case.scatter {
            idx = scatter_sort(&pods, idx, s);
        }
        assert_eq!(idx, want, "{input}");
        n += 1;
    }
    assert!(n >= 100);
}

// ---- default order and deletion order ----

fn ts(s: i64) -> Time {
    Time(Timestamp::from_second(s).unwrap())
}

#[derive(Default, Clone)]
struct P {
    node: &'static str,
    phase: &'static str,
    ready: Option<i64>,
    restarts: i32,
    created: Option<i64>,
    cost: Option<&'static str>,
    state: Option<&'static str>,
}

fn mk(p: &P) -> CachedPod {
    let mut pod = CachedPod::default();
    pod.metadata.creation_timestamp = p.created.map(ts);
    if let Some(c) = p.cost {
        pod.metadata.annotations =
            Some([(keys::POD_DELETION_COST.to_owned(), c.to_owned())].into());
    }
    if let Some(s) = p.state {
        pod.metadata.labels = Some([(keys::LIFECYCLE_STATE.to_owned(), s.to_owned())].into());
    }
    pod.spec = Some(CachedPodSpec {
        node_name: (!p.node.is_empty()).then(|| p.node.to_owned()),
        containers: vec![CachedContainer {
            name: "c".into(),
            ..Default::default()
        }],
        ..Default::default()
    });
    let mut conditions = Vec::new();
    if let Some(t) = p.ready {
        conditions.push(CachedPodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: (t > 0).then(|| ts(t)),
            ..Default::default()
        });
    }
    pod.status = Some(CachedPodStatus {
        phase: (!p.phase.is_empty()).then(|| p.phase.into()),
        conditions: Some(conditions),
        container_statuses: Some(vec![CachedContainerStatus {
            name: "c".into(),
            restart_count: p.restarts,
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

fn running(node: &'static str, ready: i64, created: i64) -> P {
    P {
        node,
        phase: "Running",
        ready: Some(ready),
        created: Some(created),
        ..Default::default()
    }
}

#[test]
fn deletion_cost_parsing() {
    for (v, want) in [
        ("10", 10),
        ("-5", -5),
        ("0", 0),
        ("+10", 0),
        ("008", 0),
        ("-007", -7),
        ("abc", 0),
        ("", 0),
        ("2147483648", 0),
        ("-2147483648", i32::MIN),
    ] {
        let p = mk(&P {
            cost: Some(v),
            ..Default::default()
        });
        assert_eq!(deletion_cost(&p), want, "{v}");
    }
    assert_eq!(deletion_cost(&CachedPod::default()), 0);
}

fn now() -> Timestamp {
    Timestamp::from_second(10_000).unwrap()
}

#[test]
fn deletion_order_criteria() {
    // Each pair: (first to delete, second) differing in one criterion, in priority order.
    let base = running("n1", 100, 50);
    let pairs: Vec<(P, P, &str)> = vec![
        (
            P {
                node: "",
                ..base.clone()
            },
            base.clone(),
            "unassigned first",
        ),
        (
            P {
                phase: "Pending",
                ..base.clone()
            },
            P {
                phase: "Unknown",
                ..base.clone()
            },
            "pending < unknown",
        ),
        (
            P {
                phase: "Unknown",
                ..base.clone()
            },
            base.clone(),
            "unknown < running",
        ),
        (
            P {
                state: Some("PreparingUpdate"),
                ..base.clone()
            },
            base.clone(),
            "unavailable (lifecycle not Normal) first",
        ),
        (
            P {
                phase: "Running",
                ready: None,
                ..base.clone()
            },
            base.clone(),
            "not ready first",
        ),
        (
            P {
                cost: Some("-1"),
                ..base.clone()
            },
            base.clone(),
            "lower deletion cost first",
        ),
        (
            running("n1", 200, 50),
            base.clone(),
            "more recently ready first",
        ),
        (
            P {
                restarts: 3,
                ..base.clone()
            },
            base.clone(),
            "more restarts first",
        ),
        (running("n1", 100, 60), base.clone(), "newer first"),
        (
            P {
                created: None,
                ..base.clone()
            },
            base.clone(),
            "no creation time first",
        ),
    ];
    for (first, second, why) in pairs {
        let (a, b) = (mk(&first), mk(&second));
        assert_eq!(sort_for_deletion(&[&a, &b], now()), vec![0, 1], "{why}");
        assert_eq!(
            sort_for_deletion(&[&b, &a], now()),
            vec![1, 0],
            "{why} (swapped)"
        );
    }
}

#[test]
fn same_node_ranks_prefer_crowded_nodes() {
    // three pods on n1, one on n2, one unassigned
    let pods_owned = [
        mk(&running("n1", 100, 10)), // oldest ready on n1: most valuable -> rank 0
        mk(&running("n1", 300, 10)), // most recently ready -> rank 2
        mk(&running("n1", 200, 10)), // rank 1
        mk(&running("n2", 300, 10)),
        mk(&P {
            phase: "Pending",
            ..Default::default()
        }),
    ];
    let pods: Vec<&CachedPod> = pods_owned.iter().collect();
    assert_eq!(same_node_ranks(&pods), vec![0.0, 2.0, 1.0, 0.0, 0.0]);
    // unassigned pending pod first; then rank 2, rank 1; then n2's pod (rank 0, ready at 300)
    // before n1's oldest (rank 0, ready at 100)
    assert_eq!(sort_for_deletion(&pods, now()), vec![4, 1, 2, 3, 0]);
    // deletion cost beats rank
    let mut cheap = pods_owned[0].clone();
    cheap.metadata.annotations =
        Some([(keys::POD_DELETION_COST.to_owned(), "-10".to_owned())].into());
    let pods2: Vec<&CachedPod> = vec![&cheap, &pods_owned[1], &pods_owned[2], &pods_owned[3]];
    assert_eq!(sort_for_deletion(&pods2, now())[0], 0);
}

#[test]
fn min_ready_seconds_availability() {
    // both ready; only one has been ready long enough
    let a = mk(&running("n1", 9_990, 10));
    let b = mk(&running("n2", 9_000, 10));
    assert_eq!(
        sort_for_deletion_min_ready(&[&b, &a], now(), 60),
        vec![1, 0]
    );
    assert!(available_in_lifecycle(&b, 60, now()));
    assert!(!available_in_lifecycle(&a, 60, now()));
    let mut c = b.clone();
    c.status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()
        .push(CachedPodCondition {
            type_: keys::IN_PLACE_UPDATE_READY.into(),
            status: "False".into(),
            ..Default::default()
        });
    assert!(!available_in_lifecycle(&c, 0, now()));
    // without availability function the ready time decides
    assert_eq!(
        sort_for_deletion_with(&[&b, &a], &[0.0, 0.0], None),
        vec![1, 0]
    );
}

#[test]
fn spread_ranks_weight_domains() {
    let nodes: HashMap<String, BTreeMap<String, String>> = [
        (
            "n1".to_owned(),
            lmap(&[("zone", "z1"), ("kubernetes.io/hostname", "n1")]),
        ),
        (
            "n2".to_owned(),
            lmap(&[("zone", "z1"), ("kubernetes.io/hostname", "n2")]),
        ),
        (
            "n3".to_owned(),
            lmap(&[("zone", "z2"), ("kubernetes.io/hostname", "n3")]),
        ),
    ]
    .into();
    let owned = [
        mk(&running("n1", 100, 10)),
        mk(&running("n2", 200, 10)),
        mk(&running("n3", 300, 10)),
        mk(&running("n4", 300, 10)), // unknown node: not ranked
    ];
    let pods: Vec<&CachedPod> = owned.iter().collect();
    let c = [SpreadConstraint {
        topology_key: "zone".into(),
        limited_values: vec![],
    }];
    let r = spread_constraint_ranks(&pods, &c, &nodes);
    let w = (4.0f64).ln();
    // z1 = [n2 pod (ready later) first, n1 pod]; z2 = [n3 pod]
    assert_eq!(r, vec![w, 2.0 * w, w, 0.0]);
    let c = [SpreadConstraint {
        topology_key: "zone".into(),
        limited_values: vec!["z2".into()],
    }];
    let r = spread_constraint_ranks(&pods, &c, &nodes);
    assert_eq!(r, vec![0.0, 0.0, 3.0f64.ln(), 0.0]);
    let order = sort_for_deletion_with(
        &pods,
        &spread_constraint_ranks(
            &pods,
            &[SpreadConstraint {
                topology_key: "zone".into(),
                limited_values: vec![],
            }],
            &nodes,
        ),
        None,
    );
    assert_eq!(order[0], 1);
}

#[test]
fn update_order() {
    let owned = [
        mk(&running("n1", 100, 10)),
        mk(&P {
            phase: "Pending",
            created: Some(10),
            ..Default::default()
        }),
        mk(&P {
            state: Some("PreparingUpdate"),
            ..running("n1", 100, 10)
        }),
        mk(&running("n1", 200, 10)),
    ];
    let pods: Vec<&CachedPod> = owned.iter().collect();
    // default: pending/unassigned first, then ready later first; PreparingUpdate moved first
    assert_eq!(
        sort_update_indexes(&pods, vec![0, 1, 2, 3], None, None),
        vec![2, 1, 3, 0]
    );
    assert_eq!(
        sort_update_indexes(&pods, vec![0, 3], None, None),
        vec![3, 0]
    );
    assert_eq!(
        sort_update_indexes(&pods, vec![], None, None),
        Vec::<usize>::new()
    );
    // priority then applies on top of the default order
    let mut with_label = owned.clone();
    with_label[0].metadata.labels = Some(lmap(&[("k", "v")]));
    let pods: Vec<&CachedPod> = with_label.iter().collect();
    let s = UpdatePriorityStrategy {
        weight_priority: Some(vec![weight(10, &[("k", "v")])]),
        order_priority: None,
    };
    assert_eq!(
        sort_update_indexes(&pods, vec![0, 1, 3], Some(&s), None),
        vec![0, 1, 3]
    );
    let scatter = vec![term("k", "v")];
    assert_eq!(
        sort_update_indexes(&pods, vec![0, 1, 3], None, Some(&scatter)),
        vec![1, 3, 0]
    );
}

#[test]
fn active_pods_order_cases() {
    let base = running("n1", 100, 50);
    let mut sidecar = mk(&base);
    sidecar.spec.as_mut().unwrap().init_containers = Some(vec![CachedContainer {
        name: "s".into(),
        restart_policy: Some("Always".into()),
        ..Default::default()
    }]);
    sidecar.status.as_mut().unwrap().init_container_statuses = Some(vec![CachedContainerStatus {
        name: "s".into(),
        restart_count: 4,
        ..Default::default()
    }]);
    let plain = mk(&base);
    assert_eq!(active_pods_cmp(&sidecar, &plain), Ordering::Less);
    assert_eq!(active_pods_cmp(&plain, &plain), Ordering::Equal);
    let unready = mk(&P {
        ready: None,
        ..base.clone()
    });
    assert_eq!(active_pods_cmp(&unready, &plain), Ordering::Less);
    // deletion cost does not matter for the update order
    let cheap = mk(&P {
        cost: Some("-100"),
        ..base.clone()
    });
    assert_eq!(active_pods_cmp(&cheap, &plain), Ordering::Equal);
    let zero_ready = mk(&P {
        ready: Some(0),
        ..base
    });
    assert_eq!(active_pods_cmp(&zero_ready, &plain), Ordering::Less);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn arb_pod() -> impl Strategy<Value = CachedPod> {
        (
            prop::sample::select(vec!["", "n1", "n2", "n3"]),
            prop::sample::select(vec!["", "Pending", "Running", "Unknown", "Failed"]),
            proptest::option::of(0i64..5),
            0i32..3,
            proptest::option::of(0i64..5),
            proptest::option::of(prop::sample::select(vec!["-1", "0", "5", "x"])),
            proptest::option::of(prop::sample::select(vec![
                "Normal",
                "PreparingUpdate",
                "PreparingDelete",
            ])),
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b"]),
                prop::sample::select(vec!["x", "y", "1-2"]),
                0..2,
            ),
        )
            .prop_map(
                |(node, phase, ready, restarts, created, cost, state, labels)| {
                    let mut p = mk(&P {
                        node,
                        phase,
                        ready: ready.map(|r| r * 100),
                        restarts,
                        created,
                        cost,
                        state,
                    });
                    p.metadata.labels.get_or_insert_with(BTreeMap::new).extend(
                        labels
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v.to_owned())),
                    );
                    p
                },
            )
    }

    fn is_permutation(v: &[usize], of: &[usize]) -> bool {
        let mut a = v.to_vec();
        let mut b = of.to_vec();
        a.sort_unstable();
        b.sort_unstable();
        a == b
    }

    proptest! {
        #[test]
        fn deletion_order_is_a_consistent_permutation(pods in prop::collection::vec(arb_pod(), 0..12)) {
            let refs: Vec<&CachedPod> = pods.iter().collect();
            let order = sort_for_deletion(&refs, now());
            prop_assert!(is_permutation(&order, &(0..pods.len()).collect::<Vec<_>>()));
            // sorting the sorted list again changes nothing (the comparison is a total preorder)
            let sorted: Vec<&CachedPod> = order.iter().map(|&i| refs[i]).collect();
            let ranks = same_node_ranks(&refs);
            let sorted_ranks: Vec<f64> = order.iter().map(|&i| ranks[i]).collect();
            let available = |p: &CachedPod| available_in_lifecycle(p, 0, now());
            let again = sort_for_deletion_with(&sorted, &sorted_ranks, Some(&available));
            prop_assert_eq!(again, (0..pods.len()).collect::<Vec<_>>());
        }

        #[test]
        fn update_order_is_a_permutation_with_preparing_update_first(
            pods in prop::collection::vec(arb_pod(), 0..12),
            mask in any::<u16>(),
            scatter in prop::collection::vec((prop::sample::select(vec!["a", "b"]), prop::sample::select(vec!["x", "y"])), 0..3),
            order_keys in prop::collection::vec(prop::sample::select(vec!["a", "b"]), 0..2),
        ) {
            let refs: Vec<&CachedPod> = pods.iter().collect();
            let wait: Vec<usize> = (0..pods.len()).filter(|i| mask & (1 << i) != 0).collect();
            let scatter: UpdateScatterStrategy = scatter.into_iter().map(|(k, v)| term(k, v)).collect();
            let prio = order(&order_keys);
            let got = sort_update_indexes(&refs, wait.clone(), Some(&prio), Some(&scatter));
            prop_assert!(is_permutation(&got, &wait));
            let first_other = got.iter().position(|&i| lifecycle::pod_state(refs[i]) != Some(lifecycle::LifecycleState::PreparingUpdate));
            if let Some(k) = first_other {
                prop_assert!(got[k..].iter().all(|&i| lifecycle::pod_state(refs[i]) != Some(lifecycle::LifecycleState::PreparingUpdate)));
            }
        }
    }
}
