//! The cases of OpenKruise v1.9.0's `sidecarset_resources_test.go` (`TestApplyResourcesPolicy`,
//! `TestAggregateResourcesBySum`, `TestAggregateResourcesByMax`, `TestGetTargetContainers`,
//! `TestEvaluateResourceExpression`), then the behaviours they leave open.

use super::*;
use kruise_api::apps::v1beta1::sidecarset::{
    ResourceExprLimits, ResourceExprRequests, ResourcesExpr, SidecarContainer, SidecarSetSpec,
};

fn list(entries: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
    (!entries.is_empty()).then(|| {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    })
}

fn container(name: &str, limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Container {
    Container {
        name: name.into(),
        image: Some("nginx:1.14.2".into()),
        resources: Some(ResourceRequirements {
            limits: list(limits),
            requests: list(requests),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn native_sidecar(mut c: Container) -> Container {
    c.restart_policy = Some("Always".into());
    c
}

fn exprs(s: Option<&str>) -> Option<String> {
    s.map(str::to_owned)
}

/// A policy; `limits`/`requests` are `(cpu, memory)` expressions.
fn policy(
    mode: &str,
    regex: &str,
    limits: Option<(Option<&str>, Option<&str>)>,
    requests: Option<(Option<&str>, Option<&str>)>,
) -> ResourcesPolicy {
    ResourcesPolicy {
        target_containers_mode: mode.into(),
        target_containers_name_regex: Some(regex.into()),
        resources_expr: ResourcesExpr {
            limits: limits.map(|(cpu, memory)| ResourceExprLimits {
                cpu: exprs(cpu),
                memory: exprs(memory),
            }),
            requests: requests.map(|(cpu, memory)| ResourceExprRequests {
                cpu: exprs(cpu),
                memory: exprs(memory),
            }),
        },
    }
}

fn get<'a>(l: &'a Option<BTreeMap<String, Quantity>>, k: &str) -> Option<&'a str> {
    l.as_ref().and_then(|l| l.get(k)).map(|q| q.0.as_str())
}

/// `(cpu limit, memory limit, cpu request, memory request)` as printed; `None` when unset.
type Printed<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

fn printed(r: &ResourceRequirements) -> Printed<'_> {
    (
        get(&r.limits, "cpu"),
        get(&r.limits, "memory"),
        get(&r.requests, "cpu"),
        get(&r.requests, "memory"),
    )
}

fn apply(
    init: &[Container],
    containers: &[Container],
    p: &ResourcesPolicy,
) -> Result<ResourceRequirements, ResourcesPolicyError> {
    apply_resources_policy(init, containers, p, &BTreeSet::new())
}

fn two_apps(first: &str, second: &str) -> Vec<Container> {
    vec![
        container(
            first,
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container(
            second,
            &[("cpu", "400m"), ("memory", "400Mi")],
            &[("cpu", "100m"), ("memory", "200Mi")],
        ),
    ]
}

// ---------------------------------------------------------------------------------------------
// TestApplyResourcesPolicy

#[test]
fn apply_sum_with_percentage() {
    let p = policy(
        "sum",
        ".*",
        Some((Some("cpu*50%"), Some("200Mi"))),
        Some((Some("cpu*50%"), Some("100Mi"))),
    );
    let r = apply(&[], &two_apps("app1", "app2"), &p).unwrap();
    assert_eq!(
        printed(&r),
        (Some("300m"), Some("200Mi"), Some("75m"), Some("100Mi"))
    );
}

#[test]
fn apply_max_with_expression() {
    let p = policy(
        "max",
        "^large.engine.v.*$",
        Some((Some("max(cpu*50%, 50m)"), Some("200Mi"))),
        Some((Some("max(cpu*50%, 50m)"), Some("100Mi"))),
    );
    let r = apply(&[], &two_apps("large.engine.v4", "large.engine.v8"), &p).unwrap();
    assert_eq!(
        printed(&r),
        (Some("200m"), Some("200Mi"), Some("50m"), Some("100Mi"))
    );
}

#[test]
fn apply_regex_filters_one_container() {
    let p = policy(
        "sum",
        "^large.engine.v4$",
        Some((Some("max(cpu*50%, 50m)"), Some("200Mi"))),
        Some((Some("max(cpu*50%, 50m)"), Some("100Mi"))),
    );
    let r = apply(&[], &two_apps("large.engine.v4", "large.engine.v8"), &p).unwrap();
    assert_eq!(
        printed(&r),
        (Some("100m"), Some("200Mi"), Some("50m"), Some("100Mi"))
    );
}

#[test]
fn apply_without_matching_container_fails() {
    let p = policy("sum", "^nonexistent$", Some((Some("cpu*50%"), None)), None);
    let pod = [container("app1", &[("cpu", "200m")], &[])];
    let err = apply(&[], &pod, &p).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"no containers match the regex pattern "^nonexistent$""#
    );
}

#[test]
fn apply_sum_with_one_unlimited_cpu() {
    let pod = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "100m"), ("memory", "100Mi")],
        ),
        container(
            "app2",
            &[("memory", "400Mi")],
            &[("cpu", "50m"), ("memory", "200Mi")],
        ),
    ];
    let p = policy(
        "sum",
        ".*",
        Some((Some("cpu*50%"), Some("memory*30%"))),
        Some((Some("cpu*30%"), Some("memory*20%"))),
    );
    let r = apply(&[], &pod, &p).unwrap();
    assert_eq!(
        printed(&r),
        (None, Some("180Mi"), Some("45m"), Some("60Mi"))
    );
}

#[test]
fn apply_max_with_one_unlimited_memory() {
    let pod = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "100m"), ("memory", "100Mi")],
        ),
        container("app2", &[("cpu", "400m")], &[("cpu", "200m")]),
    ];
    let p = policy(
        "max",
        ".*",
        Some((Some("cpu*40%"), Some("memory*30%"))),
        Some((Some("cpu*25%"), Some("memory*20%"))),
    );
    let r = apply(&[], &pod, &p).unwrap();
    assert_eq!(printed(&r), (Some("160m"), None, Some("50m"), Some("20Mi")));
}

#[test]
fn apply_sum_with_container_without_requests() {
    let pod = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "100m"), ("memory", "100Mi")],
        ),
        container("app2", &[("cpu", "400m"), ("memory", "400Mi")], &[]),
    ];
    let p = policy(
        "sum",
        ".*",
        Some((Some("cpu*50%"), Some("memory*30%"))),
        Some((Some("cpu*30%"), Some("memory*20%"))),
    );
    let r = apply(&[], &pod, &p).unwrap();
    assert_eq!(
        printed(&r),
        (Some("300m"), Some("180Mi"), Some("30m"), Some("20Mi"))
    );
}

#[test]
fn apply_counts_native_sidecars_only() {
    let init = [
        native_sidecar(container(
            "app1",
            &[("cpu", "400m"), ("memory", "800Mi")],
            &[("cpu", "200m"), ("memory", "400Mi")],
        )),
        // A plain init container is never a target.
        container(
            "app2",
            &[("cpu", "400m"), ("memory", "800Mi")],
            &[("cpu", "200m"), ("memory", "400Mi")],
        ),
    ];
    let pod = [container(
        "app2",
        &[("cpu", "600m"), ("memory", "1200Mi")],
        &[("cpu", "300m"), ("memory", "600Mi")],
    )];
    let p = policy(
        "sum",
        "^app.*$",
        Some((Some("max(cpu*30%, 50m)"), Some("max(memory*25%, 100Mi)"))),
        Some((Some("cpu*20%"), Some("memory*15%"))),
    );
    let r = apply(&init, &pod, &p).unwrap();
    assert_eq!(
        printed(&r),
        (Some("300m"), Some("500Mi"), Some("100m"), Some("150Mi"))
    );
}

// ---------------------------------------------------------------------------------------------
// TestAggregateResourcesBySum / TestAggregateResourcesByMax

fn shown(q: &Option<GoQuantity>) -> Option<String> {
    q.as_ref().map(|q| q.to_string())
}

fn aggregated(a: &Aggregated) -> [Option<String>; 4] {
    [
        shown(&a.cpu_limit),
        shown(&a.memory_limit),
        shown(&a.cpu_request),
        shown(&a.memory_request),
    ]
}

fn some(values: [Option<&str>; 4]) -> [Option<String>; 4] {
    values.map(|v| v.map(str::to_owned))
}

#[test]
fn aggregate_by_sum_cases() {
    let all = two_apps("app1", "app2");
    let refs: Vec<&Container> = all.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_sum(&refs).unwrap()),
        some([Some("600m"), Some("600Mi"), Some("150m"), Some("300Mi")])
    );

    let no_cpu_limit = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container(
            "app2",
            &[("memory", "400Mi")],
            &[("cpu", "100m"), ("memory", "200Mi")],
        ),
    ];
    let refs: Vec<&Container> = no_cpu_limit.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_sum(&refs).unwrap()),
        some([None, Some("600Mi"), Some("150m"), Some("300Mi")])
    );

    let no_requests = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container("app2", &[("cpu", "400m"), ("memory", "400Mi")], &[]),
    ];
    let refs: Vec<&Container> = no_requests.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_sum(&refs).unwrap()),
        some([Some("600m"), Some("600Mi"), Some("50m"), Some("100Mi")])
    );
}

#[test]
fn aggregate_by_max_cases() {
    let all = two_apps("app1", "app2");
    let refs: Vec<&Container> = all.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_max(&refs).unwrap()),
        some([Some("400m"), Some("400Mi"), Some("100m"), Some("200Mi")])
    );

    let no_memory_limit = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container("app2", &[("cpu", "400m")], &[("cpu", "100m")]),
    ];
    let refs: Vec<&Container> = no_memory_limit.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_max(&refs).unwrap()),
        some([Some("400m"), None, Some("100m"), Some("100Mi")])
    );

    let no_cpu_limit = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container("app2", &[("memory", "400Mi")], &[("memory", "200Mi")]),
    ];
    let refs: Vec<&Container> = no_cpu_limit.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_max(&refs).unwrap()),
        some([None, Some("400Mi"), Some("50m"), Some("200Mi")])
    );

    let no_requests = [
        container(
            "app1",
            &[("cpu", "200m"), ("memory", "200Mi")],
            &[("cpu", "50m"), ("memory", "100Mi")],
        ),
        container("app2", &[("cpu", "100m"), ("memory", "150Mi")], &[]),
    ];
    let refs: Vec<&Container> = no_requests.iter().collect();
    assert_eq!(
        aggregated(&aggregate_by_max(&refs).unwrap()),
        some([Some("200m"), Some("200Mi"), Some("50m"), Some("100Mi")])
    );
}

// ---------------------------------------------------------------------------------------------
// TestGetTargetContainers

#[test]
fn target_containers_exclude_injected_and_plain_init_containers() {
    let sidecarset = SidecarSet::new(
        "test-sidecarset",
        SidecarSetSpec {
            init_containers: Some(vec![SidecarContainer {
                container: Container {
                    name: "init-sidecar1".into(),
                    ..Default::default()
                },
                ..Default::default()
            }]),
            containers: Some(vec![SidecarContainer {
                container: Container {
                    name: "sidecar1".into(),
                    ..Default::default()
                },
                ..Default::default()
            }]),
            ..Default::default()
        },
    );
    let names = sidecar_container_names([&sidecarset]);
    let named = |n: &str| Container {
        name: n.into(),
        ..Default::default()
    };
    let init = [
        named("init-sidecar1"),
        named("plain-init-container"),
        native_sidecar(named("sidecar-container")),
    ];
    let pod = [named("app1"), named("app2"), named("sidecar1")];
    let targets = target_containers(&init, &pod, "^.*$", &names).unwrap();
    let got: Vec<&str> = targets.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(got, ["sidecar-container", "app1", "app2"]);
}

// ---------------------------------------------------------------------------------------------
// TestEvaluateResourceExpression

#[test]
fn evaluate_resource_expression_cases() {
    let q = |s: &str| GoQuantity::parse(s).unwrap();
    // (expression, aggregated value, is limit, Ok(Some(printed)) / Ok(None) / Err)
    type Case<'a> = (&'a str, &'a str, bool, Result<Option<&'a str>, ()>);
    let cases: &[Case] = &[
        ("", "100m", true, Ok(None)),
        ("", "100m", false, Ok(Some("0"))),
        ("cpu*50%", "200m", true, Ok(Some("100m"))),
        ("memory*30%", "600Mi", true, Ok(Some("180Mi"))),
        ("max(cpu*50%, 100m)", "150m", true, Ok(Some("100m"))),
        ("max(cpu*50%, 100m)", "400m", true, Ok(Some("200m"))),
        ("cpu + 50m", "100m", true, Ok(Some("150m"))),
        (
            "max(memory*20% + 100Mi, 200Mi)",
            "800Mi",
            true,
            Ok(Some("260Mi")),
        ),
        ("500m", "100m", true, Ok(Some("500m"))),
        ("1Gi", "500Mi", true, Ok(Some("1Gi"))),
        ("cpu * invalid", "100m", true, Err(())),
        ("cpu*50%", "0", false, Ok(Some("0"))),
        ("memory*25%", "400Mi", false, Ok(Some("100Mi"))),
        ("1", "2", false, Ok(Some("1"))),
        ("1", "2Mi", false, Ok(Some("1"))),
    ];
    for (expr, value, is_limit, want) in cases {
        let got = evaluate_resource_expression(expr, &q(value), *is_limit)
            .map(|r| r.map(|q| q.to_string()))
            .map_err(|_| ());
        let want = want.map(|w| w.map(str::to_owned));
        assert_eq!(got, want, "{expr:?} with {value}");
    }
    assert_eq!(
        evaluate_resource_expression("cpu * invalid", &q("100m"), true)
            .unwrap_err()
            .to_string(),
        "undefined variable: invalid"
    );
}

// ---------------------------------------------------------------------------------------------
// Behaviours the OpenKruise tests leave open.

#[test]
fn error_messages_are_gos() {
    let pod = two_apps("app1", "app2");
    let message = |p: ResourcesPolicy| apply(&[], &pod, &p).unwrap_err().to_string();
    assert_eq!(
        message(policy(
            "sum",
            ".*",
            Some((Some("cpu * invalid"), None)),
            None
        )),
        r#"failed to evaluate CPU limits expression: failed to parse expression "cpu * invalid": undefined variable: invalid"#
    );
    assert_eq!(
        message(policy(
            "sum",
            ".*",
            Some((None, Some("memory - 1Gi"))),
            None
        )),
        r#"failed to evaluate memory limits expression: failed to parse expression "memory - 1Gi": calculation result is negative: -424Mi"#
    );
    assert_eq!(
        message(policy("max", ".*", None, Some((Some("cpu / 0"), None)))),
        r#"failed to evaluate CPU requests expression: failed to parse expression "cpu / 0": division by zero"#
    );
    assert_eq!(
        message(policy(
            "max",
            ".*",
            None,
            Some((None, Some("max(memory\t")))
        )),
        r#"failed to evaluate memory requests expression: failed to parse expression "max(memory\t": parse error: syntax error at line 1, col 12"#
    );
    // The CPU limit is evaluated first.
    assert_eq!(
        message(policy(
            "sum",
            ".*",
            Some((Some("1/0"), Some("2Gi*2Gi"))),
            Some((Some("x"), None))
        )),
        r#"failed to evaluate CPU limits expression: failed to parse expression "1/0": division by zero"#
    );
    let err = message(policy("sum", "(", Some((Some("cpu"), None)), None));
    assert!(
        err.starts_with(r#"failed to get target containers: invalid regex pattern "(": "#),
        "{err}"
    );
    assert_eq!(
        message(policy("sum", "^x\u{a0}\n$", None, None)),
        r#"no containers match the regex pattern "^x\u00a0\n$""#
    );
}

#[test]
fn unset_regex_matches_every_container() {
    let mut p = policy("sum", "", Some((Some("cpu"), None)), None);
    p.target_containers_name_regex = None;
    let r = apply(&[], &two_apps("a", "b"), &p).unwrap();
    assert_eq!(printed(&r), (Some("600m"), None, None, None));
    // Matching is a search, not a full match.
    let p = policy("sum", "pp", Some((Some("cpu"), None)), None);
    let r = apply(&[], &two_apps("app1", "other"), &p).unwrap();
    assert_eq!(printed(&r), (Some("200m"), None, None, None));
}

#[test]
fn variable_follows_the_word_memory() {
    assert!(mentions_memory("memory*2"));
    assert!(mentions_memory("max(memory, 1Gi)"));
    assert!(mentions_memory("1 + memory"));
    assert!(mentions_memory("memoryé"));
    assert!(!mentions_memory("memoryx"));
    assert!(!mentions_memory("xmemory"));
    assert!(!mentions_memory("memory_2"));
    assert!(!mentions_memory("MEMORY"));
    let q = GoQuantity::parse("2").unwrap();
    // The variable is named by the expression, whatever the resource: `memory` here reads the
    // CPU value, and a number result is milli-CPU when the variable is `cpu`.
    let eval = |e: &str| {
        evaluate_resource_expression(e, &q, true)
            .map(|r| r.map(|q| q.to_string()))
            .map_err(|e| e.to_string())
    };
    assert_eq!(eval("memory * 2"), Ok(Some("4".into())));
    assert_eq!(eval("0.5"), Ok(Some("500m".into())));
    assert_eq!(eval("0.0005"), Ok(Some("0".into())));
    assert_eq!(eval("MEMORY"), Err("undefined variable: memory".into()));
    assert_eq!(eval("cpu*memory"), Err("undefined variable: cpu".into()));
    // int64(+Inf * 1000) on amd64.
    assert_eq!(eval("1e999"), Ok(Some("-9223372036854775808m".into())));
}

#[test]
fn unknown_mode_aggregates_nothing() {
    let p = policy(
        "avg",
        ".*",
        Some((Some("cpu"), Some("memory"))),
        Some((Some("cpu + 100m"), Some("memory"))),
    );
    let r = apply(&[], &two_apps("a", "b"), &p).unwrap();
    assert_eq!(r.limits, None);
    assert_eq!(printed(&r), (None, None, Some("100m"), Some("0")));
}

#[test]
fn results_print_as_go() {
    // max keeps the first of equal values and Go's String() keeps a canonical input as written.
    let pod = |a: &str, b: &str| {
        vec![
            container("a", &[("cpu", a)], &[]),
            container("b", &[("cpu", b)], &[]),
        ]
    };
    let p = policy("max", ".*", Some((Some("cpu"), None)), None);
    let cpu = |c: &[Container]| printed(&apply(&[], c, &p).unwrap()).0.map(str::to_owned);
    assert_eq!(cpu(&pod("1", "1000m")), Some("1".into()));
    assert_eq!(cpu(&pod("1000m", "1")), Some("1".into()));
    assert_eq!(cpu(&pod("+1", "500m")), Some("+1".into()));
    assert_eq!(cpu(&pod("1.500", "1")), Some("1.500".into()));
    // A sum is printed canonically in the first container's format.
    let p = policy("sum", ".*", Some((Some("cpu"), None)), None);
    let cpu = |c: &[Container]| printed(&apply(&[], c, &p).unwrap()).0.map(str::to_owned);
    assert_eq!(cpu(&pod("+1", "500m")), Some("1500m".into()));
    assert_eq!(cpu(&pod("1Gi", "1Mi")), Some("1025Mi".into()));
    assert_eq!(cpu(&pod("1M", "1Mi")), Some("2048576".into()));
    assert_eq!(cpu(&pod(" 1 ", "0")), Some("1".into()));
    // Requests adding up to 0 are absent, which reads as 0.
    let zero = [container("a", &[], &[("cpu", "0")])];
    let p = policy("sum", ".*", None, Some((Some("cpu + 1"), None)));
    assert_eq!(
        printed(&apply(&[], &zero, &p).unwrap()),
        (None, None, Some("1"), None)
    );
}

#[test]
fn undecodable_quantities_are_reported() {
    let pod = [container("a", &[("cpu", "abc")], &[])];
    let p = policy("sum", ".*", Some((Some("cpu"), None)), None);
    assert_eq!(
        apply(&[], &pod, &p).unwrap_err().to_string(),
        "container \"a\": invalid limits cpu quantity \"abc\": quantities must match the regular \
         expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

#[test]
fn go_quote_escapes_as_strconv() {
    assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(
        go_quote("\x07\x08\x0c\n\r\t\x0b\x00\x7f"),
        r#""\a\b\f\n\r\t\v\x00\x7f""#
    );
    // Go's answer for "é\u00ad\ue000😀 \t\x00" (checked against strconv.Quote).
    assert_eq!(
        go_quote("é\u{ad}\u{e000}😀 \t\x00"),
        r#""é\u00ad\ue000😀 \t\x00""#
    );
    assert_eq!(go_quote("\u{feff}\u{10fffe}"), r#""\ufeff\U0010fffe""#);
}
