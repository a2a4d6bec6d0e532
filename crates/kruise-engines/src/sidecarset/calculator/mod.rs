//! The resource expression language of SidecarSet `resourcesPolicy`, as OpenKruise v1.9.0's
//! `pkg/util/calculator` evaluates it (`lexer.go`, `calculator.y` and the helpers of the
//! generated `calculator_y.go`: `parseNumber`, `parseQuantity`, `toQuantity`, `add`, `sub`,
//! `mul`, `div`, `callFunc`, `maxFunc`, `minFunc`, `getVariable`; `calculator.go`'s `Parse`).
//!
//! # The language
//!
//! - numbers: `2`, `0.5`, `.5`, `1e3`, `2.5E+1`, percentages `50%` (= 0.5);
//! - quantities: a number followed by `m k M G T P Ki Mi Gi Ti Pi` (`200m`, `1.5Gi`);
//! - variables, looked up by their lower-cased name (`CPU` reads `cpu`);
//! - `+ - * /` (usual precedence, left-associative), unary minus, parentheses;
//! - `max(a, b)` and `min(a, b)`, exactly two arguments (`max(a)` parses but is refused).
//!
//! Mixing numbers and quantities, as Go does it:
//! - `+` and `-`: a number becomes `NewMilliQuantity(int64(n*1000), DecimalSI)` and the
//!   quantities are added exactly; the result keeps the left operand's format (the right one's
//!   when the left is zero);
//! - `*`: quantity × quantity is refused; quantity × number is `SetMilli(int64(float64(
//!   q.MilliValue()) * n))` on a copy of the quantity (its format is kept, so `1.5Gi * 2` is
//!   `3Gi`);
//! - `/`: a quantity divisor is refused, 0 is refused; quantity / number is `SetMilli(int64(
//!   float64(q.MilliValue()) / n))`;
//! - `max`/`min` of a quantity and a number compare against the number as a milli quantity and
//!   return that milli quantity when the number wins;
//! - a negative final result is refused.
//!
//! `int64(f)` is amd64's conversion: NaN and values out of the int64 range become the smallest
//! int64 (`1e999` parses as +Inf, as `strconv.ParseFloat` returns it).
//!
//! # Errors
//!
//! [`CalcError`]'s messages are Go's. Go keeps evaluating after a failed step (with a nil
//! value) and reports the last error recorded; a syntax error is reported only if no step
//! failed before it was detected. [`evaluate`] records the same steps in the same order.
//!
//! # Why a hand-written parser
//!
//! The result must follow the goyacc LALR(1) parser step by step, not only the grammar: which
//! semantic actions have run when a syntax error is detected decides the message, and the
//! position in that message is the byte column of the Go lexer after the offending token. The
//! lexer is itself byte-oriented with Go's quirks (Latin-1 classification of every byte,
//! a NUL byte read as the end of input, numbers swallowing trailing letters). A combinator
//! crate would need all of that re-encoded around it and recurses on nesting; the operator
//! stack below mirrors the LALR reductions directly, without recursion, so no input can
//! exhaust the stack.

use std::collections::BTreeMap;
use std::fmt;

use kruise_api::validation::quantity::{Format, GoQuantity, QuantityError};

/// A value of the language (Go's `calculator.Value`).
#[derive(Clone, Debug)]
pub enum Value {
    /// A plain number (`float64`).
    Number(f64),
    /// A Kubernetes quantity.
    Quantity(GoQuantity),
}

impl fmt::Display for Value {
    /// Go's `Value.String()`: `%g` for a number, `Quantity.String()` for a quantity.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Number(n) => f.write_str(&go_format_g(*n)),
            Value::Quantity(q) => write!(f, "{q}"),
        }
    }
}

/// Why an expression has no value. The messages are Go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    /// The grammar was not followed; `line`/`col` are the Go lexer's (1-based, counted in
    /// bytes) after the token where the error was detected.
    #[error("parse error: syntax error at line {line}, col {col}")]
    Syntax {
        /// Line of the lexer.
        line: usize,
        /// Column of the lexer.
        col: usize,
    },
    /// An identifier that is neither a variable nor followed by `(`; holds the lower-cased
    /// name.
    #[error("undefined variable: {0}")]
    UndefinedVariable(String),
    /// A call of anything but `max`/`min`; holds the name as written.
    #[error("unknown function: {0}")]
    UnknownFunction(String),
    /// `max(x)` or `min(x)`.
    #[error("{function} function requires exactly 2 arguments, got {got}")]
    Arity {
        /// `max` or `min`.
        function: &'static str,
        /// The number of arguments given.
        got: usize,
    },
    /// `quantity * quantity`.
    #[error("multiplication of two quantities")]
    QuantityProduct,
    /// `x / quantity`.
    #[error("division by quantity")]
    DivisionByQuantity,
    /// `x / 0`.
    #[error("division by zero")]
    DivisionByZero,
    /// A quantity token `resource.ParseQuantity` refuses (such as `1e3m`).
    #[error("{0}")]
    Quantity(QuantityError),
    /// The result is below zero; holds it as Go prints it.
    #[error("calculation result is negative: {0}")]
    Negative(String),
    /// Go's fallback when the parser accepted without a value; not reachable from text.
    #[error("no result from parser")]
    NoResult,
}

/// Evaluates `expr` as Go's `calculator.ParseWithVariables(expr, variables)` (or `Parse` with
/// no variables) and returns the result, or the error Go reports.
///
/// Identifiers are looked up in `variables` by their lower-cased name, so the keys should be
/// lower case (`cpu`, `memory`). Never panics, whatever the input.
pub fn evaluate(expr: &str, variables: &BTreeMap<String, Value>) -> Result<Value, CalcError> {
    let mut eval = Eval::new(variables);
    match eval.run(expr.as_bytes()) {
        Err((line, col)) => Err(eval
            .last_error
            .take()
            .unwrap_or(CalcError::Syntax { line, col })),
        Ok(result) => match result {
            None => Err(eval.last_error.take().unwrap_or(CalcError::NoResult)),
            Some(Val::Num(n)) if n < 0.0 => Err(CalcError::Negative(go_format_g(n))),
            Some(Val::Num(n)) => Ok(Value::Number(n)),
            Some(Val::Qty(i)) => {
                let q = eval.quantities.swap_remove(i);
                if q.sign() < 0 {
                    Err(CalcError::Negative(q.to_string()))
                } else {
                    Ok(Value::Quantity(q))
                }
            }
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Lexer (lexer.go): bytes, each classified as the Latin-1 character of that code.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token<'a> {
    Number(&'a [u8]),
    Quantity(&'a [u8]),
    Ident(&'a [u8]),
    /// An operator, a parenthesis, a comma, or any other byte (which no rule accepts).
    Char(u8),
    End,
}

/// `unicode.IsSpace` of a byte read as a rune.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0)
}

/// `unicode.IsLetter` of a byte read as a rune (Latin-1).
fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
        || matches!(b, 0xaa | 0xb5 | 0xba | 0xc0..=0xd6 | 0xd8..=0xf6 | 0xf8..=0xff)
}

fn is_ident_char(b: u8) -> bool {
    is_letter(b) || b.is_ascii_digit() || b == b'_'
}

/// `isQuantity`: a numeric part followed by exactly one of the supported units.
fn is_quantity(s: &[u8]) -> bool {
    let num_end = s
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'));
    match num_end {
        None | Some(0) => false,
        Some(i) => matches!(
            &s[i..],
            b"m" | b"k" | b"M" | b"G" | b"T" | b"P" | b"Ki" | b"Mi" | b"Gi" | b"Ti" | b"Pi"
        ),
    }
}

struct Lexer<'a> {
    input: &'a [u8],
    pos: usize,
    line: usize,
    col: usize,
}

impl<'a> Lexer<'a> {
    fn new(input: &'a [u8]) -> Self {
        Lexer {
            input,
            pos: 0,
            line: 1,
            col: 1,
        }
    }

    /// The next byte, 0 at the end (a NUL byte reads as 0 too).
    fn peek(&self) -> u8 {
        self.input.get(self.pos).copied().unwrap_or(0)
    }

    fn advance(&mut self) -> u8 {
        let Some(&b) = self.input.get(self.pos) else {
            return 0;
        };
        self.pos += 1;
        if b == b'\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        b
    }

    /// Steps back over a byte that is not a newline.
    fn back(&mut self) {
        self.pos -= 1;
        self.col -= 1;
    }

    fn token(&mut self) -> Token<'a> {
        while self.peek() != 0 && is_space(self.peek()) {
            self.advance();
        }
        let b = self.advance();
        match b {
            0 => Token::End,
            b'.' | b'0'..=b'9' => {
                self.back();
                let s = self.number();
                if is_quantity(s) {
                    Token::Quantity(s)
                } else {
                    Token::Number(s)
                }
            }
            b if is_letter(b) => {
                self.back();
                let start = self.pos;
                while is_ident_char(self.peek()) {
                    self.advance();
                }
                Token::Ident(&self.input[start..self.pos])
            }
            b => Token::Char(b),
        }
    }

    /// `readNumber`: digits, one `.`, one exponent with an optional sign right after it, one
    /// `%`, then a run of letters (a unit, unless an exponent digit is still expected).
    fn number(&mut self) -> &'a [u8] {
        let start = self.pos;
        let (mut dot, mut exp, mut percent, mut exp_digit_expected) = (false, false, false, false);
        loop {
            match self.peek() {
                b'0'..=b'9' => exp_digit_expected = false,
                b'.' => {
                    if dot || exp || percent {
                        break;
                    }
                    dot = true;
                }
                b'e' | b'E' => {
                    if exp || percent {
                        break;
                    }
                    exp = true;
                    exp_digit_expected = true;
                }
                b'+' | b'-' => {
                    if !exp_digit_expected {
                        break;
                    }
                    exp_digit_expected = false;
                }
                b'%' => {
                    if percent {
                        break;
                    }
                    percent = true;
                }
                b if is_letter(b) => {
                    if !exp_digit_expected {
                        while is_letter(self.peek()) {
                            self.advance();
                        }
                    }
                    break;
                }
                _ => break,
            }
            self.advance();
        }
        &self.input[start..self.pos]
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation: an operator-precedence parser performing calculator.y's actions in the order the
// goyacc parser reduces.

/// A value on the stack; `None` on the value stack is Go's nil (a failed step). Quantities
/// live in [`Eval::quantities`] so that a variable keeps its identity: Go hands out the same
/// `*Value` for every use of a variable, and `Cmp` may convert it in place.
#[derive(Clone, Copy, Debug)]
enum Val {
    Num(f64),
    Qty(usize),
}

enum Op<'a> {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
    Paren,
    /// A function call; `first` is the first argument once a `,` has been read.
    Call {
        name: &'a [u8],
        first: Option<Option<Val>>,
    },
}

struct Eval {
    quantities: Vec<GoQuantity>,
    variables: BTreeMap<String, Val>,
    last_error: Option<CalcError>,
}

impl Eval {
    fn new(variables: &BTreeMap<String, Value>) -> Self {
        let mut eval = Eval {
            quantities: Vec::new(),
            variables: BTreeMap::new(),
            last_error: None,
        };
        for (name, value) in variables {
            let val = match value {
                Value::Number(n) => Val::Num(*n),
                Value::Quantity(q) => eval.push(q.clone()),
            };
            eval.variables.insert(name.clone(), val);
        }
        eval
    }

    fn push(&mut self, q: GoQuantity) -> Val {
        self.quantities.push(q);
        Val::Qty(self.quantities.len() - 1)
    }

    fn fail(&mut self, e: CalcError) -> Option<Val> {
        self.last_error = Some(e);
        None
    }

    /// Parses and evaluates; `Err` is a syntax error at the lexer's (line, col).
    fn run(&mut self, input: &[u8]) -> Result<Option<Val>, (usize, usize)> {
        let mut lexer = Lexer::new(input);
        let mut values: Vec<Option<Val>> = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        let mut tok = lexer.token();
        loop {
            // An operand is expected.
            match tok {
                Token::Number(s) => {
                    values.push(Some(Val::Num(parse_number(s))));
                    tok = lexer.token();
                }
                Token::Quantity(s) => {
                    let v = self.quantity(s);
                    values.push(v);
                    tok = lexer.token();
                }
                Token::Ident(name) => {
                    let next = lexer.token();
                    if next == Token::Char(b'(') {
                        ops.push(Op::Call { name, first: None });
                        tok = lexer.token();
                        continue;
                    }
                    let v = self.variable(name);
                    values.push(v);
                    tok = next;
                }
                Token::Char(b'(') => {
                    ops.push(Op::Paren);
                    tok = lexer.token();
                    continue;
                }
                Token::Char(b'-') => {
                    ops.push(Op::Neg);
                    tok = lexer.token();
                    continue;
                }
                _ => return Err((lexer.line, lexer.col)),
            }
            // An operand is complete: read what follows it.
            loop {
                while matches!(ops.last(), Some(Op::Neg)) {
                    ops.pop();
                    let v = values.pop().flatten();
                    let r = self.negate(v);
                    values.push(r);
                }
                match tok {
                    Token::Char(c @ (b'+' | b'-' | b'*' | b'/')) => {
                        let additive = c == b'+' || c == b'-';
                        self.reduce(&mut ops, &mut values, additive);
                        ops.push(match c {
                            b'+' => Op::Add,
                            b'-' => Op::Sub,
                            b'*' => Op::Mul,
                            _ => Op::Div,
                        });
                        tok = lexer.token();
                        break;
                    }
                    Token::Char(b')') => {
                        self.reduce(&mut ops, &mut values, true);
                        match ops.pop() {
                            Some(Op::Paren) => {}
                            Some(Op::Call { name, first }) => {
                                let last = values.pop().flatten();
                                let args: Vec<Option<Val>> = match first {
                                    None => vec![last],
                                    Some(first) => vec![first, last],
                                };
                                let r = self.call(name, &args);
                                values.push(r);
                            }
                            _ => return Err((lexer.line, lexer.col)),
                        }
                        tok = lexer.token();
                    }
                    Token::Char(b',') => {
                        self.reduce(&mut ops, &mut values, true);
                        match ops.last_mut() {
                            Some(Op::Call {
                                first: first @ None,
                                ..
                            }) => {
                                *first = Some(values.pop().flatten());
                            }
                            _ => return Err((lexer.line, lexer.col)),
                        }
                        tok = lexer.token();
                        break;
                    }
                    Token::End => {
                        self.reduce(&mut ops, &mut values, true);
                        if !ops.is_empty() {
                            return Err((lexer.line, lexer.col));
                        }
                        return Ok(values.pop().flatten());
                    }
                    _ => {
                        // Whatever cannot follow an operand: goyacc first reduces what it can
                        // (up to the innermost open parenthesis), then reports.
                        self.reduce(&mut ops, &mut values, true);
                        return Err((lexer.line, lexer.col));
                    }
                }
            }
        }
    }

    /// Applies the pending binary operators down to the innermost parenthesis or call: all of
    /// them before `+`/`-` (and any token that closes an operand), only `*`/`/` before `*`/`/`.
    fn reduce(&mut self, ops: &mut Vec<Op>, values: &mut Vec<Option<Val>>, additive: bool) {
        while let Some(op) = ops.last() {
            let apply: fn(&mut Eval, Val, Val) -> Option<Val> = match op {
                Op::Add if additive => Eval::add,
                Op::Sub if additive => Eval::sub,
                Op::Mul => Eval::mul,
                Op::Div => Eval::div,
                _ => break,
            };
            ops.pop();
            let right = values.pop().flatten();
            let left = values.pop().flatten();
            let r = match (left, right) {
                (Some(l), Some(r)) => apply(self, l, r),
                _ => None,
            };
            values.push(r);
        }
    }

    /// `factor: QUANTITY`.
    fn quantity(&mut self, s: &[u8]) -> Option<Val> {
        // A quantity token is ASCII (digits, `.eE+-`, a unit from a fixed list).
        let s = String::from_utf8_lossy(s);
        match GoQuantity::parse(&s) {
            Ok(q) => Some(self.push(q)),
            Err(e) => self.fail(CalcError::Quantity(e)),
        }
    }

    /// `factor: IDENT` (`getVariable`).
    fn variable(&mut self, name: &[u8]) -> Option<Val> {
        let name = go_to_lower(name);
        match self.variables.get(&name) {
            Some(v) => Some(*v),
            None => self.fail(CalcError::UndefinedVariable(name)),
        }
    }

    /// `toQuantity`: a copy of a quantity, or a number as a DecimalSI milli quantity.
    fn to_quantity(&self, v: Val) -> GoQuantity {
        match v {
            Val::Qty(i) => self.quantities[i].clone(),
            Val::Num(n) => GoQuantity::new_milli(go_f64_to_i64(n * 1000.0), Format::DecimalSI),
        }
    }

    fn add(&mut self, left: Val, right: Val) -> Option<Val> {
        if let (Val::Num(l), Val::Num(r)) = (left, right) {
            return Some(Val::Num(l + r));
        }
        let mut q = self.to_quantity(left);
        q.add(&self.to_quantity(right));
        Some(self.push(q))
    }

    fn sub(&mut self, left: Val, right: Val) -> Option<Val> {
        if let (Val::Num(l), Val::Num(r)) = (left, right) {
            return Some(Val::Num(l - r));
        }
        let mut q = self.to_quantity(left);
        let mut negated = self.to_quantity(right);
        negated.neg();
        q.add(&negated);
        Some(self.push(q))
    }

    /// A copy of quantity `i` set to `int64(float64(MilliValue()) op n)` milli-units.
    fn scale(&mut self, i: usize, n: f64, divide: bool) -> Option<Val> {
        let mut q = self.quantities[i].clone();
        let milli = self.quantities[i].milli_value() as f64;
        q.set_milli(go_f64_to_i64(if divide { milli / n } else { milli * n }));
        Some(self.push(q))
    }

    fn mul(&mut self, left: Val, right: Val) -> Option<Val> {
        match (left, right) {
            (Val::Qty(_), Val::Qty(_)) => self.fail(CalcError::QuantityProduct),
            (Val::Qty(i), Val::Num(n)) | (Val::Num(n), Val::Qty(i)) => self.scale(i, n, false),
            (Val::Num(l), Val::Num(r)) => Some(Val::Num(l * r)),
        }
    }

    fn div(&mut self, left: Val, right: Val) -> Option<Val> {
        match (left, right) {
            (_, Val::Qty(_)) => self.fail(CalcError::DivisionByQuantity),
            // Matches -0 as well, as Go's `== 0` does.
            (_, Val::Num(0.0)) => self.fail(CalcError::DivisionByZero),
            (Val::Qty(i), Val::Num(r)) => self.scale(i, r, true),
            (Val::Num(l), Val::Num(r)) => Some(Val::Num(l / r)),
        }
    }

    /// `factor: '-' factor`.
    fn negate(&mut self, v: Option<Val>) -> Option<Val> {
        match v? {
            Val::Num(n) => Some(Val::Num(-n)),
            Val::Qty(i) => {
                let mut q = self.quantities[i].clone();
                q.neg();
                Some(self.push(q))
            }
        }
    }

    /// `callFunc`.
    fn call(&mut self, name: &[u8], args: &[Option<Val>]) -> Option<Val> {
        let function = match go_to_lower(name).as_str() {
            "max" => "max",
            "min" => "min",
            _ => return self.fail(CalcError::UnknownFunction(go_lossy(name))),
        };
        if args.len() != 2 {
            return self.fail(CalcError::Arity {
                function,
                got: args.len(),
            });
        }
        let (left, right) = (args[0]?, args[1]?);
        self.extremum(left, right, function == "max")
    }

    /// `maxFunc` / `minFunc`, including which side is copied and which `Cmp` receiver may be
    /// converted to an `inf.Dec` in place.
    fn extremum(&mut self, left: Val, right: Val, max: bool) -> Option<Val> {
        let keep_left = |o: std::cmp::Ordering| if max { o.is_ge() } else { o.is_le() };
        let milli = |n: f64| GoQuantity::new_milli(go_f64_to_i64(n * 1000.0), Format::DecimalSI);
        let q = match (left, right) {
            (Val::Qty(l), Val::Qty(r)) => {
                // left.Quantity.Cmp(right.Quantity): the variable itself may change.
                let other = self.quantities[r].clone();
                let o = self.quantities[l].compare(&other);
                self.quantities[if keep_left(o) { l } else { r }].clone()
            }
            (Val::Qty(l), Val::Num(n)) => {
                let number = milli(n);
                // maxFunc compares a copy, minFunc the quantity itself; a DecimalSI milli
                // quantity is an int64 amount, so neither converts anything.
                let o = self.quantities[l].clone().compare(&number);
                if keep_left(o) {
                    self.quantities[l].clone()
                } else {
                    number
                }
            }
            (Val::Num(n), Val::Qty(r)) => {
                // The number's quantity is the receiver and is returned after the comparison.
                let mut number = milli(n);
                let o = number.compare(&self.quantities[r]);
                if keep_left(o) {
                    number
                } else {
                    self.quantities[r].clone()
                }
            }
            (Val::Num(l), Val::Num(r)) => {
                let left_wins = if max { l >= r } else { l <= r };
                return Some(Val::Num(if left_wins { l } else { r }));
            }
        };
        Some(self.push(q))
    }
}

// ---------------------------------------------------------------------------------------------
// Go's number and string conversions.

/// `parseNumber` with its error ignored, as the grammar action does: `strconv.ParseFloat`'s
/// value (0 on a syntax error, ±Inf out of range); with a `%` suffix, the number / 100, or 0 on
/// any error.
fn parse_number(s: &[u8]) -> f64 {
    match s.strip_suffix(b"%") {
        Some(n) => match go_parse_float(n) {
            (v, true) => v / 100.0,
            (_, false) => 0.0,
        },
        None => go_parse_float(s).0,
    }
}

/// `strconv.ParseFloat(s, 64)` for the strings the lexer produces (no sign, no `inf`/`nan`, no
/// hex, no underscores): the value and whether there was no error.
fn go_parse_float(s: &[u8]) -> (f64, bool) {
    let Ok(text) = std::str::from_utf8(s) else {
        return (0.0, false);
    };
    // Go stops accumulating exponent digits once the exponent reaches 10000.
    let text = match text.find(['e', 'E']) {
        Some(i) => {
            let (mantissa, exp) = text.split_at(i + 1);
            let (sign, digits) = match exp.as_bytes().first() {
                Some(b'+' | b'-') => exp.split_at(1),
                _ => ("", exp),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return (0.0, false);
            }
            let mut e: u32 = 0;
            for d in digits.bytes() {
                if e < 10000 {
                    e = e * 10 + u32::from(d - b'0');
                }
            }
            format!("{mantissa}{sign}{e}")
        }
        None => text.to_owned(),
    };
    match text.parse::<f64>() {
        Ok(v) if v.is_infinite() => (v, false),
        Ok(v) => (v, true),
        Err(_) => (0.0, false),
    }
}

/// Go's `int64(f)` on amd64: truncation, and the smallest int64 for NaN or out of range.
pub(crate) fn go_f64_to_i64(f: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// Go's `fmt.Sprintf("%g", f)`: shortest round-trip digits, exponent form (`1e+06`, `1e-05`)
/// when the decimal exponent is below -4 or at least 6.
pub(crate) fn go_format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde<exp>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.unsigned_abs());
    }
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// Bytes as Go's JSON encoding shows a Go string: valid UTF-8 as is, each invalid byte as
/// U+FFFD.
fn go_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}

/// Go's `strings.ToLower`: ASCII lowered as ASCII; otherwise every character mapped by
/// `unicode.ToLower` (simple case mapping) and every invalid byte replaced by U+FFFD.
fn go_to_lower(bytes: &[u8]) -> String {
    if bytes.is_ascii() {
        return String::from_utf8_lossy(bytes).to_ascii_lowercase();
    }
    go_lossy(bytes)
        .chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) => l,
                // Only U+0130 lowers to two characters; its simple mapping is `i`.
                _ if c == '\u{130}' => 'i',
                _ => c,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
