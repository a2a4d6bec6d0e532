//! The cases of OpenKruise v1.9.0's `pkg/util/calculator` tests (`calculator_test.go`,
//! `fuzz_test.go` seeds), with the exact results and error messages Go produces for them, then
//! the Go behaviours those tests do not pin down.

use super::*;

fn quantity(s: &str) -> Value {
    Value::Quantity(GoQuantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}")))
}

fn vars(list: &[(&str, Value)]) -> BTreeMap<String, Value> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// `Ok(printed value)` or `Err(message)`.
fn run(expr: &str, variables: &BTreeMap<String, Value>) -> Result<String, String> {
    evaluate(expr, variables)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

fn check(cases: &[(&str, Result<&str, &str>)], variables: &BTreeMap<String, Value>) {
    for (expr, want) in cases {
        let want = want.map(str::to_owned).map_err(str::to_owned);
        assert_eq!(run(expr, variables), want, "{expr:?}");
    }
}

fn syntax(line: usize, col: usize) -> String {
    CalcError::Syntax { line, col }.to_string()
}

// ---------------------------------------------------------------------------------------------
// calculator_test.go

/// `TestParseNumber` (`parseNumber`; the grammar ignores its error and keeps the value).
#[test]
#[allow(clippy::approx_constant)] // Go's case is the literal 3.14.
fn parse_number_cases() {
    for (input, value, ok) in [
        ("42", 42.0, true),
        ("3.14", 3.14, true),
        ("50%", 0.5, true),
        ("100.5%", 1.005, true),
        ("invalid", 0.0, false),
        ("5..5", 0.0, false),
    ] {
        let ok_go = match input.strip_suffix('%') {
            Some(n) => go_parse_float(n.as_bytes()).1,
            None => go_parse_float(input.as_bytes()).1,
        };
        assert_eq!(ok_go, ok, "{input}");
        assert_eq!(parse_number(input.as_bytes()), value, "{input}");
    }
}

/// `TestBasicArithmetic`.
#[test]
fn basic_arithmetic() {
    check(
        &[
            ("2 + 3", Ok("5")),
            ("10 - 4", Ok("6")),
            ("3 * 4", Ok("12")),
            ("15 / 3", Ok("5")),
            ("(2 + 3) * 4", Ok("20")),
            // `5.` then `.5`: two numbers in a row.
            ("5..5", Err(&syntax(1, 5))),
            // `5%` then a `%` no rule accepts.
            ("5%%", Err(&syntax(1, 4))),
            ("50%", Ok("0.5")),
            ("100% * 2", Ok("2")),
            ("max(10, 20)", Ok("20")),
            ("min(10, 20)", Ok("10")),
            ("1e2", Ok("100")),
            ("1E2", Ok("100")),
            (
                "min(max(max(max(0.5,0.5*0.5),0.5-1.0),0.5-1.0),3.0)",
                Ok("0.5"),
            ),
            ("10 / 0", Err("division by zero")),
            ("unknown(1, 2)", Err("unknown function: unknown")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestQuantityOperations`.
#[test]
fn quantity_operations() {
    check(
        &[
            ("40m + 20m", Ok("60m")),
            ("100Mi - 50Mi", Ok("50Mi")),
            ("2 * 40m", Ok("80m")),
            ("100m / 2", Ok("50m")),
            ("100m", Ok("100m")),
            // 40m < 20: the number wins, as the milli quantity 20000m, printed 20.
            ("max(40m, 20)", Ok("20")),
            ("min(40m, 20m)", Ok("20m")),
            (
                "min(max(max(max(0.5,0.5*0.5),0.5-1.0),0.5-1.0),3.0)",
                Ok("0.5"),
            ),
            (
                "min(max(max(max(500m,0.5*0.5),0.5-1.0),0.5-1.0),3.0)",
                Ok("500m"),
            ),
            ("40m * 2m", Err("multiplication of two quantities")),
            ("2 / 40m", Err("division by quantity")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestValueString`.
#[test]
fn value_string() {
    assert_eq!(Value::Number(42.5).to_string(), "42.5");
    assert_eq!(quantity("100m").to_string(), "100m");
}

/// `TestToQuantity`: a number becomes a non-zero milli quantity; a quantity is copied.
#[test]
fn to_quantity() {
    let mut eval = Eval::new(&BTreeMap::new());
    let q = eval.to_quantity(Val::Num(100.0));
    assert!(!q.is_zero());
    assert_eq!(q.to_string(), "100");
    let Value::Quantity(fifty) = quantity("50m") else {
        unreachable!()
    };
    let v = eval.push(fifty);
    assert_eq!(eval.to_quantity(v).to_string(), "50m");
}

/// `TestArithmeticFunctions` and `TestFunctionCalls` (the helpers on two numbers).
#[test]
fn helpers_on_numbers() {
    let mut eval = Eval::new(&BTreeMap::new());
    let num = |v: Option<Val>| match v {
        Some(Val::Num(n)) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(num(eval.add(Val::Num(10.0), Val::Num(20.0))), 30.0);
    assert_eq!(num(eval.sub(Val::Num(20.0), Val::Num(10.0))), 10.0);
    assert_eq!(num(eval.mul(Val::Num(5.0), Val::Num(3.0))), 15.0);
    assert_eq!(num(eval.div(Val::Num(20.0), Val::Num(4.0))), 5.0);
    assert_eq!(
        num(eval.extremum(Val::Num(10.0), Val::Num(20.0), true)),
        20.0
    );
    assert_eq!(
        num(eval.extremum(Val::Num(10.0), Val::Num(20.0), false)),
        10.0
    );
    assert!(eval.last_error.is_none());
}

/// `TestErrorCases`.
#[test]
fn error_cases() {
    check(
        &[
            ("10 / 0", Err("division by zero")),
            ("1 / -0", Err("division by zero")),
            ("1m / -0", Err("division by zero")),
            ("40m * 2m", Err("multiplication of two quantities")),
            ("2 / 40m", Err("division by quantity")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestVariables`.
#[test]
fn variables() {
    type Case<'a> = (&'a str, &'a [(&'a str, Value)], Result<&'a str, &'a str>);
    let cases: &[Case] = &[
        ("cpu", &[("cpu", quantity("100m"))], Ok("100m")),
        ("cpu * 2", &[("cpu", quantity("50m"))], Ok("100m")),
        ("max(cpu, 200m)", &[("cpu", quantity("100m"))], Ok("200m")),
        (
            "min(max(max(max(0.5,0.5*cpu),cpu-1.0),cpu-1.0),3.0)",
            &[("cpu", quantity("0.5"))],
            Ok("500m"),
        ),
        ("max(0.25, cpu)", &[("cpu", quantity("100m"))], Ok("250m")),
        ("max(cpu, 0.75)", &[("cpu", quantity("500m"))], Ok("750m")),
        ("min(0.8, cpu)", &[("cpu", quantity("1.0"))], Ok("800m")),
        ("min(cpu, 1.5)", &[("cpu", quantity("2.0"))], Ok("1500m")),
        (
            "max(min(2*cpu,-cpu+3.0),2*cpu-3.0)",
            &[("cpu", quantity("1.5"))],
            Ok("1500m"),
        ),
        (
            "max(min(2*cpu,3.0-cpu),2*cpu-3.0)",
            &[("cpu", quantity("1.5"))],
            Ok("1500m"),
        ),
        (
            "undefined_var",
            &[],
            Err("undefined variable: undefined_var"),
        ),
        (
            "memory + 100Mi",
            &[("memory", quantity("200Mi"))],
            Ok("300Mi"),
        ),
        (
            "0.5 * memory + max(0, memory-2Gi)",
            &[("memory", quantity("8Gi"))],
            Ok("10Gi"),
        ),
    ];
    for (expr, list, want) in cases {
        let want = want.map(str::to_owned).map_err(str::to_owned);
        assert_eq!(run(expr, &vars(list)), want, "{expr}");
    }
}

/// `TestNegativeValues`.
#[test]
fn negative_values() {
    check(
        &[
            ("-10", Err("calculation result is negative: -10")),
            ("-100m", Err("calculation result is negative: -100m")),
            ("10 - 20", Err("calculation result is negative: -10")),
            ("50m - 100m", Err("calculation result is negative: -50m")),
            ("20 - 10", Ok("10")),
            ("10 - 10", Ok("0")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestProposalScenarios`.
#[test]
fn proposal_scenarios() {
    let two = vars(&[("cpu1", quantity("200m")), ("cpu2", quantity("400m"))]);
    check(
        &[
            ("(cpu1 + cpu2) * 50%", Ok("300m")),
            ("max(cpu1, cpu2) * 50%", Ok("200m")),
        ],
        &two,
    );
    check(
        &[("max(cpu * 50%, 50m)", Ok("100m"))],
        &vars(&[("cpu", quantity("200m"))]),
    );
    check(
        &[("cpu - 100m", Err("calculation result is negative: -50m"))],
        &vars(&[("cpu", quantity("50m"))]),
    );
}

/// `TestSetVariables` / `TestCalculatorInstanceMethods`: without variables an identifier is
/// undefined; with them it reads the value.
#[test]
fn calculator_instances() {
    assert_eq!(run("2 + 3", &BTreeMap::new()), Ok("5".into()));
    assert_eq!(
        run("cpu", &BTreeMap::new()),
        Err("undefined variable: cpu".into())
    );
    let both = vars(&[("cpu", quantity("100m")), ("memory", quantity("512Mi"))]);
    assert_eq!(run("cpu", &both), Ok("100m".into()));
    assert_eq!(run("memory", &both), Ok("512Mi".into()));
}

/// `TestEdgeCases`.
#[test]
fn edge_cases() {
    check(
        &[
            ("", Err(&syntax(1, 1))),
            ("   ", Err(&syntax(1, 4))),
            ("2 + @", Err(&syntax(1, 6))),
            ("(2 + 3", Err(&syntax(1, 7))),
            ("()", Err(&syntax(1, 3))),
            ("max(min(10, 20), 15)", Ok("15")),
            ("1e3 + 500", Ok("1500")),
            ("1.5e2 * 2", Ok("300")),
            ("999999999999999999 + 1", Ok("1e+18")),
            (
                "0.000000000000000001 + 0.000000000000000002",
                Ok("3.0000000000000002e-18"),
            ),
        ],
        &BTreeMap::new(),
    );
}

/// `TestParserEdgeCases`.
#[test]
fn parser_edge_cases() {
    check(
        &[
            ("2+3+4/2", Ok("7")),
            ("2   +   3", Ok("5")),
            ("2\t+\t3", Ok("5")),
            ("2\n+\n3", Ok("5")),
            ("  2  \t  +  \n  3  ", Ok("5")),
            ("max(  10  ,  20  )", Ok("20")),
            ("( 2 + 3 ) * 4", Ok("20")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestQuantityEdgeCases`.
#[test]
fn quantity_edge_cases() {
    check(
        &[
            ("0m + 0m", Ok("0")),
            ("1000Gi + 500Gi", Ok("1500Gi")),
            ("1.5Gi * 2", Ok("3Gi")),
            ("1Gi + 100Mi", Ok("1124Mi")),
            ("max(100m, 100m)", Ok("100m")),
            ("min(100m, 100m)", Ok("100m")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestFunctionArgumentErrors`.
#[test]
fn function_argument_errors() {
    check(
        &[
            ("max()", Err(&syntax(1, 6))),
            (
                "max(10)",
                Err("max function requires exactly 2 arguments, got 1"),
            ),
            ("max(10, 20, 30)", Err(&syntax(1, 12))),
            ("max(10, 20 / 0)", Err("division by zero")),
            ("max(10, unknown(20, 30))", Err("unknown function: unknown")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestComplexNestedExpressions`.
#[test]
fn complex_nested_expressions() {
    check(
        &[
            ("max(min(max(10, 20), 15), 25)", Ok("25")),
            ("(100m + 50m) * 2 - 50m", Ok("250m")),
            ("max(100m * 50%, 30m)", Ok("50m")),
            ("max(10 + 5, 20 - 5) * 2", Ok("30")),
            ("max(100m, min(200m, 150m)) + 50m", Ok("200m")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestLexerBugFixes`.
#[test]
fn lexer_fixes() {
    check(
        &[
            ("10+-5", Ok("5")),
            ("10--5", Ok("15")),
            ("10 + -5", Ok("5")),
            ("10 - -5", Ok("15")),
            ("20+-10+5", Ok("15")),
            ("100m+50m", Ok("150m")),
            ("1e3", Ok("1000")),
            ("1E3", Ok("1000")),
            ("1e+3", Ok("1000")),
            ("1e-3", Ok("0.001")),
            ("1E+3", Ok("1000")),
            ("1E-3", Ok("0.001")),
            ("1.5e2", Ok("150")),
            ("2.5E+1", Ok("25")),
            ("100m", Ok("100m")),
            ("1k", Ok("1k")),
            ("100M", Ok("100M")),
            ("1G", Ok("1G")),
            ("1T", Ok("1T")),
            ("1P", Ok("1P")),
            ("1Ki", Ok("1Ki")),
            ("100Mi", Ok("100Mi")),
            ("1Gi", Ok("1Gi")),
            ("1Ti", Ok("1Ti")),
            ("1Pi", Ok("1Pi")),
            ("1e3 + 2e2", Ok("1200")),
            ("1e3+-200", Ok("800")),
            ("100m + 50m", Ok("150m")),
            ("200m * 50%", Ok("100m")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestScientificNotationEdgeCases`.
#[test]
fn scientific_notation_edge_cases() {
    check(
        &[
            // strconv.ParseFloat fails and the grammar keeps its 0.
            ("1e", Ok("0")),
            ("1e+", Ok("0")),
            // `1e3` then the identifier `e2`.
            ("1e3e2", Err(&syntax(1, 6))),
            ("max(1e3, 2e2)", Ok("1000")),
            // The number wins, as the milli quantity 1000000m.
            ("max(1e3, 100m)", Ok("1k")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestLexerCoverageEdgeCases`.
#[test]
fn lexer_coverage_edge_cases() {
    check(
        &[
            (".5 + .5", Ok("1")),
            (".5Mi", Ok("512Ki")),
            // `1e` (no exponent digit, so `Ki` is not read as a unit) then the identifier `Ki`.
            ("1eKi", Err(&syntax(1, 5))),
            ("1.5+2", Ok("3.5")),
        ],
        &BTreeMap::new(),
    );
}

/// `TestLexerInternalFunctions`.
#[test]
fn lexer_internals() {
    assert!(is_letter(b'm') && is_letter(b'K'));
    assert!(!is_letter(b'1') && !is_letter(b'+'));
    assert!(is_ident_char(b'a') && is_ident_char(b'1') && is_ident_char(b'_'));
    assert!(!is_ident_char(b'+'));
    assert!(!is_quantity(b""));
    assert!(!is_quantity(b"123"));
    assert!(!is_quantity(b"123xyz"));
    for unit in [
        "100m", "1k", "1M", "1G", "1T", "1P", "1Ki", "100Mi", "1Gi", "1Ti", "1Pi",
    ] {
        assert!(is_quantity(unit.as_bytes()), "{unit}");
    }
    assert!(syntax(1, 1).contains("line 1"));

    let mut lexer = Lexer::new(b"a\nb");
    assert_eq!(lexer.advance(), b'a');
    assert_eq!((lexer.line, lexer.col), (1, 2));
    assert_eq!(lexer.advance(), b'\n');
    assert_eq!((lexer.line, lexer.col), (2, 1));
    assert_eq!(lexer.advance(), b'b');
    assert_eq!(lexer.peek(), 0);
    assert_eq!(lexer.advance(), 0);

    assert_eq!(Lexer::new(b"").number(), b"");
    assert_eq!(Lexer::new(b"50%").number(), b"50%");
    assert_eq!(Lexer::new(b"50%%").number(), b"50%");
}

// ---------------------------------------------------------------------------------------------
// fuzz_test.go: the seed corpus of FuzzParse, with Go's answers.

#[test]
fn fuzz_seeds() {
    check(
        &[
            ("2 + 3", Ok("5")),
            ("10 - 4", Ok("6")),
            ("3 * 4", Ok("12")),
            ("15 / 3", Ok("5")),
            ("(2 + 3) * 4", Ok("20")),
            ("50%", Ok("0.5")),
            ("100% * 2", Ok("2")),
            ("cpu * 50%", Err("undefined variable: cpu")),
            ("max(10, 20)", Ok("20")),
            ("min(10, 20)", Ok("10")),
            ("max(cpu, 200m)", Err("undefined variable: cpu")),
            ("min(memory, 100Mi)", Err("undefined variable: memory")),
            ("40m + 20m", Ok("60m")),
            ("100Mi - 50Mi", Ok("50Mi")),
            ("2 * 40m", Ok("80m")),
            ("100m / 2", Ok("50m")),
            ("max(cpu * 50%, 50m)", Err("undefined variable: cpu")),
            (
                "max(memory * 50%, 100Mi)",
                Err("undefined variable: memory"),
            ),
            ("(cpu1 + cpu2) * 50%", Err("undefined variable: cpu2")),
            ("max(cpu1, cpu2) * 50%", Err("undefined variable: cpu2")),
            ("", Err(&syntax(1, 1))),
            ("   ", Err(&syntax(1, 4))),
            ("0", Ok("0")),
            ("0m", Ok("0")),
            ("0Mi", Ok("0")),
            ("1e3 + 500", Ok("1500")),
            ("1.5e2 * 2", Ok("300")),
            ("max(min(10, 20), 15)", Ok("15")),
            ("max(min(max(10, 20), 15), 25)", Ok("25")),
            ("1000Gi + 500Gi", Ok("1500Gi")),
            ("999999999999999999 + 1", Ok("1e+18")),
            (
                "0.000000000000000001 + 0.000000000000000002",
                Ok("3.0000000000000002e-18"),
            ),
            ("1m + 1m", Ok("2m")),
            ("2   +   3", Ok("5")),
            ("2\t+\t3", Ok("5")),
            ("2\n+\n3", Ok("5")),
            ("10 / 0", Err("division by zero")),
            ("-10", Err("calculation result is negative: -10")),
            ("-100m", Err("calculation result is negative: -100m")),
            ("unknown(1, 2)", Err("unknown function: unknown")),
            ("max()", Err(&syntax(1, 6))),
            (
                "max(10)",
                Err("max function requires exactly 2 arguments, got 1"),
            ),
            ("max(10, 20, 30)", Err(&syntax(1, 12))),
            ("(2 + 3", Err(&syntax(1, 7))),
            ("()", Err(&syntax(1, 3))),
            ("2 + @", Err(&syntax(1, 6))),
        ],
        &BTreeMap::new(),
    );
    // FuzzParseWithVariables / FuzzCalculatorParse seeds.
    let v = vars(&[
        ("cpu", quantity("100m")),
        ("memory", quantity("100Mi")),
        ("cpu1", quantity("200m")),
        ("cpu2", Value::Number(0.5)),
    ]);
    check(
        &[
            ("cpu", Ok("100m")),
            ("cpu * 2", Ok("200m")),
            ("max(cpu, 200m)", Ok("200m")),
            ("memory + 100Mi", Ok("200Mi")),
            // A quantity plus a number variable: 200m + 500m.
            ("cpu1 + cpu2", Ok("700m")),
            ("max(cpu1, cpu2) * 50%", Ok("250m")),
            ("undefined_var", Err("undefined variable: undefined_var")),
            ("(10 + 20) * 3", Ok("90")),
        ],
        &v,
    );
}

// ---------------------------------------------------------------------------------------------
// Go behaviours the OpenKruise tests leave open.

/// Go keeps going after a failed step and reports the last failure, even over a syntax error
/// detected later; the syntax error only when nothing failed before it was detected.
#[test]
fn which_error_wins() {
    check(
        &[
            // The variable is looked up when `+` shows it is not a call; the syntax error at
            // the end comes after.
            ("foo +", Err("undefined variable: foo")),
            ("1/0 + foo", Err("undefined variable: foo")),
            ("foo + 1/0", Err("division by zero")),
            // The failed product is evaluated once `)` shows the term is complete.
            ("2Gi * 3Gi )", Err("multiplication of two quantities")),
            // Inside an open parenthesis the product is complete at the end of input too.
            ("(2Gi * 3Gi", Err("multiplication of two quantities")),
            // But not when the error is found where an operand was expected.
            ("2Gi * )", Err(&syntax(1, 8))),
            // The call is never made: its third argument is a syntax error.
            ("foo(1, 2, 3)", Err(&syntax(1, 10))),
            // Arity and unknown functions are checked before nil arguments.
            (
                "max(1/0)",
                Err("max function requires exactly 2 arguments, got 1"),
            ),
            ("foo(1/0, 2)", Err("unknown function: foo")),
            ("max(1/0, 2)", Err("division by zero")),
            // A syntax error is reported where the lexer stands after the offending token.
            ("1 +\n  * 2", Err(&syntax(2, 4))),
            ("max 1", Err("undefined variable: max")),
            ("2 3", Err(&syntax(1, 4))),
            ("1Ei", Err(&syntax(1, 4))),
        ],
        &BTreeMap::new(),
    );
}

/// Identifiers are lower-cased (Go's `strings.ToLower`); function names too.
#[test]
fn identifiers_and_functions_ignore_case() {
    let v = vars(&[("cpu", quantity("2"))]);
    check(
        &[
            ("CPU * 50%", Ok("1")),
            ("MAX(Cpu, 3)", Ok("3")),
            ("Min(cpu, 3)", Ok("2")),
            ("Foo(cpu)", Err("unknown function: Foo")),
            ("Memory", Err("undefined variable: memory")),
            ("cpu_2", Err("undefined variable: cpu_2")),
        ],
        &v,
    );
}

/// The Go lexer reads bytes, classifying each as the Latin-1 character of that code.
#[test]
fn byte_lexer() {
    check(
        &[
            // A NUL byte ends the input.
            ("1+2\0garbage(", Ok("3")),
            // NBSP (C2 A0): C2 is the letter Â, taken as the unit of `2` (so the number is
            // `2\xC2`, which ParseFloat refuses: 0), and A0 is white space.
            ("2\u{a0}+ 1", Ok("1")),
            ("x\u{a0}", Err("undefined variable: x\u{fffd}")),
            // ê (C3 AA) is two Latin-1 letters, a valid UTF-8 identifier.
            ("caê", Err("undefined variable: caê")),
            // A number takes the letters that follow it as its unit.
            ("5%m", Ok("0")),
            ("1x", Ok("0")),
            ("1e5m", Err(&QuantityError::FormatWrong.to_string())),
            ("1.5.5", Err(&syntax(1, 6))),
        ],
        &BTreeMap::new(),
    );
}

/// Numbers are float64; quantities and numbers meet through milli values.
#[test]
fn numbers_and_quantities() {
    let zero = vars(&[("cpu", Value::Quantity(GoQuantity::zero()))]);
    check(
        &[
            ("0.1 + 0.2", Ok("0.30000000000000004")),
            ("1/3", Ok("0.3333333333333333")),
            ("1e6", Ok("1e+06")),
            ("123456", Ok("123456")),
            ("0.00001", Ok("1e-05")),
            // Out of range: +Inf (NUMBER keeps ParseFloat's value), but 0 with a `%`.
            ("1e999", Ok("+Inf")),
            ("1e999%", Ok("0")),
            ("1e999 - 1e999", Ok("NaN")),
            ("1 - 1e999", Err("calculation result is negative: -Inf")),
            // A number meets a quantity as int64(n*1000) milli: NaN is the smallest int64.
            ("100m + 0.0005", Ok("100m")),
            ("100m * 0.0015", Ok("0")),
            ("100m * 1.5", Ok("150m")),
            ("1Gi / 3", Ok("357913941333m")),
            ("1Gi * 1.5", Ok("1536Mi")),
            ("2Gi * 0.5 + 1", Ok("1073741825")),
            ("1 + 2Gi", Ok("2147483649")),
            ("-(1.5Gi) + 2Gi", Ok("512Mi")),
            ("min(1Ki, 2)", Ok("2")),
            ("max(0.5, 100m) - 100m", Ok("400m")),
        ],
        &BTreeMap::new(),
    );
    check(
        &[
            ("cpu", Ok("0")),
            ("cpu + 100m", Ok("100m")),
            (
                "cpu * 1e999",
                Err("calculation result is negative: -9223372036854775808e-3"),
            ),
        ],
        &zero,
    );
}

/// `Cmp` converts its receiver to an inf.Dec when the other side is one, which changes how a
/// negative sub-milli value rounds in a later `MilliValue` (Go answers, verified on
/// apimachinery: -1.0005 becomes -999m after the comparison, -1001m without).
#[test]
fn comparison_changes_the_variable_representation() {
    let v = vars(&[("cpu", quantity("-1.0005"))]);
    check(
        &[
            ("cpu * 1 + 2", Ok("999m")),
            ("min(cpu, 1.5Gi) * 0 + cpu * 1 + 2", Ok("1001m")),
        ],
        &v,
    );
}

/// Quantities print as Go's `String()`, including the input kept when already canonical by
/// `ParseQuantity`'s rules.
#[test]
fn kept_quantity_strings() {
    let v = vars(&[("cpu", quantity("1.500"))]);
    check(
        &[
            ("cpu", Ok("1.500")),
            ("max(cpu, 1)", Ok("1.500")),
            ("cpu + 0", Ok("1500m")),
            ("007m", Ok("007m")),
            ("1.500k", Ok("1.500k")),
        ],
        &v,
    );
}

#[test]
fn go_format_g_matches_fmt() {
    // Go's `%g` of these float64 bit patterns.
    for (bits, want) in [
        (0u64, "0"),
        (9223372036854775808, "-0"),
        (4607182418800017408, "1"),
        (13830554455654793216, "-1"),
        (4602678819172646912, "0.5"),
        (4681608360884174848, "100000"),
        (4696837138094751744, "999999"),
        (4696837146684686336, "1e+06"),
        (4698053236609777664, "1.234567e+06"),
        (4547007122018943789, "0.0001"),
        (4532020583610935537, "1e-05"),
        (4548686525128629352, "0.00012345"),
        (4504762867522569078, "1.5e-07"),
        (4921056587992461136, "1e+21"),
        (4906019910204099648, "1e+20"),
        (4683220293034128179, "123456.7"),
        (4614256650576692846, "3.14159"),
        (4599676419421066581, "0.3333333333333333"),
        (4604180019048437077, "0.6666666666666666"),
        (9094988921128908188, "1e+300"),
        (1, "5e-324"),
        (9218868437227405311, "1.7976931348623157e+308"),
        (14144428624847236944, "-1e+21"),
        (4599075939470750516, "0.30000000000000004"),
        (4607204936798154260, "1.005"),
        (4636772475726725120, "100.5"),
        (4892433759222981601, "1.2345678901234567e+19"),
        (13785626545772145148, "-0.001"),
        (4598175219545276416, "0.25"),
        (4619567317775286272, "7"),
        (4624633867356078080, "15"),
        (2024, "1e-320"),
        (4728057454347157504, "1.23456789e+08"),
    ] {
        assert_eq!(go_format_g(f64::from_bits(bits)), want, "{bits}");
    }
    assert_eq!(go_format_g(f64::NAN), "NaN");
    assert_eq!(go_format_g(f64::INFINITY), "+Inf");
    assert_eq!(go_format_g(f64::NEG_INFINITY), "-Inf");
}

#[test]
fn go_conversions() {
    assert_eq!(go_f64_to_i64(f64::NAN), i64::MIN);
    assert_eq!(go_f64_to_i64(f64::INFINITY), i64::MIN);
    assert_eq!(go_f64_to_i64(9.3e18), i64::MIN);
    assert_eq!(go_f64_to_i64(-(2f64.powi(63))), i64::MIN);
    assert_eq!(go_f64_to_i64(2f64.powi(63)), i64::MIN);
    assert_eq!(go_f64_to_i64(-2.9), -2);
    assert_eq!(go_f64_to_i64(2.9), 2);
    // Go stops reading exponent digits at 10000.
    assert_eq!(go_parse_float(b"1e0000000001"), (10.0, true));
    assert_eq!(go_parse_float(b"1e-400"), (0.0, true));
    assert_eq!(go_parse_float(b"1e400"), (f64::INFINITY, false));
    assert_eq!(go_parse_float(b"1."), (1.0, true));
    assert_eq!(go_parse_float(b"1.e5"), (100000.0, true));
    assert_eq!(go_parse_float(b".e5"), (0.0, false));
    assert_eq!(go_to_lower("ABC\u{130}Ī".as_bytes()), "abciī");
    assert_eq!(go_to_lower(b"ABC\xc3"), "abc\u{fffd}");
    assert_eq!(go_lossy(b"a\xe2\x80b"), "a\u{fffd}\u{fffd}b");
}

proptest::proptest! {
    /// Any text, any variables: an answer, never a panic (and no recursion to overflow).
    #[test]
    fn never_panics(expr in "\\PC{0,64}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..48), n: f64) {
        let v = vars(&[("cpu", quantity("1.5Gi")), ("memory", Value::Number(n))]);
        let _ = evaluate(&expr, &v);
        let _ = evaluate(&String::from_utf8_lossy(&bytes), &v);
    }

    #[test]
    fn grammar_shaped_text_never_panics(expr in "([-+*/(),. %]|max|min|cpu|memory|[0-9]{1,3}|[0-9]\\.[0-9]|1e[-+]?[0-9]|[mkMGTP]|[KMGTP]i|\\x00|\n){0,40}") {
        let v = vars(&[("cpu", quantity("-1.0005")), ("memory", quantity("4096Pi"))]);
        let _ = evaluate(&expr, &v);
    }
}

#[test]
fn deep_nesting_does_not_recurse() {
    let depth = 200_000;
    let expr = format!("{}1{}", "(-".repeat(depth), ")".repeat(depth));
    assert_eq!(run(&expr, &BTreeMap::new()), Ok("1".into()));
    let unclosed = "max(".repeat(depth);
    assert!(run(&unclosed, &BTreeMap::new()).is_err());
}
