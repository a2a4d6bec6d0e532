//! Whether OpenKruise v1.9.0 accepts a `resourcesPolicy.resourcesExpr` expression: its webhook
//! (`validateResourceExpression`) runs the resource calculator (`pkg/util/calculator`, a goyacc
//! grammar) on the expression with the one variable the field may use (`cpu` or `memory`) set
//! to the plain number 1, and refuses the expression when `Parse` fails. This module reproduces
//! that verdict: the calculator's lexer (bytes read as Latin-1 runes, numbers with exponents,
//! percentages and Kubernetes unit suffixes, identifiers), its grammar (`+ -` over `* /` over
//! unary `-`, parentheses, `max(a, b)` / `min(a, b)`, left associative) and the evaluation errors
//! it reports (a malformed quantity, an undefined variable, an unknown function or a wrong number
//! of arguments, division by zero or by a quantity, the product of two quantities, a negative
//! result). Error texts are close to the calculator's but not guaranteed identical.

use kruise_api::validation::quantity::parse_quantity;

/// A value of the calculator: a plain number or a quantity (kept as nano-units; what does not
/// fit saturates, which leaves its sign intact).
#[derive(Clone, Copy, Debug)]
enum Val {
    Num(f64),
    /// Nano-units.
    Qty(i128),
}

const NANO_PER_MILLI: i128 = 1_000_000;

/// Go's `resource.NewMilliQuantity(int64(n*1000))` in nano-units (`int64` conversion
/// saturating).
fn milli_quantity(n: f64) -> i128 {
    i128::from((n * 1000.0) as i64) * NANO_PER_MILLI
}

/// `MilliValue()`: nano-units rounded away from zero to milli-units.
fn milli_value(nanos: i128) -> i64 {
    let q = nanos / NANO_PER_MILLI;
    let r = nanos % NANO_PER_MILLI;
    let m = if r > 0 {
        q + 1
    } else if r < 0 {
        q - 1
    } else {
        q
    };
    m.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn as_qty(v: Val) -> i128 {
    match v {
        Val::Qty(q) => q,
        Val::Num(n) => milli_quantity(n),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Number(String),
    Quantity(String),
    Ident(String),
    Op(u8),
    /// Any other byte (a syntax error wherever it appears).
    Other(u8),
}

/// `unicode.IsLetter` of a byte read as a rune (the calculator's lexer reads bytes).
fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
        || matches!(b, 0xAA | 0xB5 | 0xBA | 0xC0..=0xD6 | 0xD8..=0xF6 | 0xF8..=0xFF)
}

/// `unicode.IsSpace` of a byte read as a rune.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' | 0x85 | 0xA0)
}

/// The lexer's `readNumber`, from `pos`: digits, one `.`, one exponent (`e`/`E`, then an
/// optional sign), one `%`, then a run of letters as the unit.
fn read_number(b: &[u8], mut pos: usize) -> usize {
    let (mut dot, mut exp, mut percent, mut want_exp_digit) = (false, false, false, false);
    while pos < b.len() {
        let c = b[pos];
        if c.is_ascii_digit() {
            want_exp_digit = false;
            pos += 1;
        } else if c == b'.' {
            if dot || exp || percent {
                break;
            }
            dot = true;
            pos += 1;
        } else if c == b'e' || c == b'E' {
            if exp || percent {
                break;
            }
            exp = true;
            want_exp_digit = true;
            pos += 1;
        } else if c == b'+' || c == b'-' {
            if !want_exp_digit {
                break;
            }
            want_exp_digit = false;
            pos += 1;
        } else if c == b'%' {
            if percent {
                break;
            }
            percent = true;
            pos += 1;
        } else if is_letter(c) {
            if want_exp_digit {
                break;
            }
            while pos < b.len() && is_letter(b[pos]) {
                pos += 1;
            }
            break;
        } else {
            break;
        }
    }
    pos
}

/// The lexer's `isQuantity`: a numeric part followed by one of the supported unit suffixes.
fn is_quantity(s: &str) -> bool {
    let Some(end) = s
        .bytes()
        .position(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')))
    else {
        return false;
    };
    end > 0
        && matches!(
            &s[end..],
            "m" | "k" | "M" | "G" | "T" | "P" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi"
        )
}

fn lex(input: &str) -> Vec<Tok> {
    let b = input.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        while pos < b.len() && is_space(b[pos]) {
            pos += 1;
        }
        if pos >= b.len() || b[pos] == 0 {
            return out;
        }
        let c = b[pos];
        match c {
            b'+' | b'-' | b'*' | b'/' | b'(' | b')' | b',' => {
                out.push(Tok::Op(c));
                pos += 1;
            }
            b'.' | b'0'..=b'9' => {
                let end = read_number(b, pos);
                let text = String::from_utf8_lossy(&b[pos..end]).into_owned();
                pos = end;
                out.push(if is_quantity(&text) {
                    Tok::Quantity(text)
                } else {
                    Tok::Number(text)
                });
            }
            _ if is_letter(c) => {
                let start = pos;
                while pos < b.len()
                    && (is_letter(b[pos]) || b[pos].is_ascii_digit() || b[pos] == b'_')
                {
                    pos += 1;
                }
                out.push(Tok::Ident(
                    String::from_utf8_lossy(&b[start..pos]).into_owned(),
                ));
            }
            _ => {
                out.push(Tok::Other(c));
                pos += 1;
            }
        }
    }
}

/// The calculator's `parseNumber`: a trailing `%` divides by 100; what `strconv.ParseFloat`
/// refuses is 0 (the grammar ignores the error).
fn parse_number(s: &str) -> f64 {
    let (digits, scale) = match s.strip_suffix('%') {
        Some(d) => (d, 100.0),
        None => (s, 1.0),
    };
    go_parse_float(digits).map_or(0.0, |f| f / scale)
}

/// `strconv.ParseFloat(s, 64)` for the strings the lexer can produce (digits, `.`, an exponent,
/// letters): `None` where Go reports a syntax error; out-of-range values are ±Inf as in Go.
fn go_parse_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut mantissa_digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        mantissa_digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok()
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    variable: &'a str,
    /// The first evaluation error (the calculator keeps evaluating and reports one).
    error: Option<String>,
}

type Parsed = Result<Option<Val>, String>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn fail(&mut self, msg: String) -> Option<Val> {
        self.error.get_or_insert(msg);
        None
    }

    fn syntax(&self) -> String {
        match self.peek() {
            Some(t) => format!("parse error: syntax error: unexpected {t:?}"),
            None => "parse error: syntax error: unexpected end of input".to_owned(),
        }
    }

    fn expect(&mut self, op: u8) -> Result<(), String> {
        if self.peek() == Some(&Tok::Op(op)) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax())
        }
    }

    fn expr(&mut self) -> Parsed {
        let mut left = self.term()?;
        while let Some(Tok::Op(op @ (b'+' | b'-'))) = self.peek().cloned() {
            self.pos += 1;
            let right = self.term()?;
            left = match (left, right) {
                (Some(l), Some(r)) => Some(match (l, r) {
                    (Val::Num(a), Val::Num(b)) => Val::Num(if op == b'+' { a + b } else { a - b }),
                    _ => {
                        let (a, b) = (as_qty(l), as_qty(r));
                        Val::Qty(if op == b'+' {
                            a.saturating_add(b)
                        } else {
                            a.saturating_sub(b)
                        })
                    }
                }),
                _ => None,
            };
        }
        Ok(left)
    }

    fn term(&mut self) -> Parsed {
        let mut left = self.factor()?;
        while let Some(Tok::Op(op @ (b'*' | b'/'))) = self.peek().cloned() {
            self.pos += 1;
            let right = self.factor()?;
            left = match (left, right) {
                (Some(l), Some(r)) if op == b'*' => self.mul(l, r),
                (Some(l), Some(r)) => self.div(l, r),
                _ => None,
            };
        }
        Ok(left)
    }

    fn mul(&mut self, l: Val, r: Val) -> Option<Val> {
        match (l, r) {
            (Val::Qty(_), Val::Qty(_)) => self.fail("multiplication of two quantities".into()),
            (Val::Qty(q), Val::Num(n)) | (Val::Num(n), Val::Qty(q)) => Some(Val::Qty(
                i128::from((milli_value(q) as f64 * n) as i64) * NANO_PER_MILLI,
            )),
            (Val::Num(a), Val::Num(b)) => Some(Val::Num(a * b)),
        }
    }

    fn div(&mut self, l: Val, r: Val) -> Option<Val> {
        match (l, r) {
            (_, Val::Qty(_)) => self.fail("division by quantity".into()),
            (_, Val::Num(0.0)) => self.fail("division by zero".into()),
            (Val::Qty(q), Val::Num(n)) => Some(Val::Qty(
                i128::from((milli_value(q) as f64 / n) as i64) * NANO_PER_MILLI,
            )),
            (Val::Num(a), Val::Num(b)) => Some(Val::Num(a / b)),
        }
    }

    fn factor(&mut self) -> Parsed {
        let Some(tok) = self.peek().cloned() else {
            return Err(self.syntax());
        };
        self.pos += 1;
        match tok {
            Tok::Number(s) => Ok(Some(Val::Num(parse_number(&s)))),
            Tok::Quantity(s) => Ok(match parse_quantity(&s) {
                Ok(q) => Some(Val::Qty(q.scaled_value(-9).unwrap_or(if q.sign() < 0 {
                    i128::MIN / 4
                } else {
                    i128::MAX / 4
                }))),
                Err(e) => self.fail(e.to_string()),
            }),
            Tok::Op(b'(') => {
                let v = self.expr()?;
                self.expect(b')')?;
                Ok(v)
            }
            Tok::Op(b'-') => Ok(self.factor()?.map(|v| match v {
                Val::Num(n) => Val::Num(-n),
                Val::Qty(q) => Val::Qty(q.saturating_neg()),
            })),
            Tok::Ident(name) if self.peek() == Some(&Tok::Op(b'(')) => {
                self.pos += 1;
                let mut args = vec![self.expr()?];
                if self.peek() == Some(&Tok::Op(b',')) {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
                self.expect(b')')?;
                Ok(self.call(&name, &args))
            }
            Tok::Ident(name) => Ok(if name.to_lowercase() == self.variable {
                Some(Val::Num(1.0))
            } else {
                self.fail(format!("undefined variable: {}", name.to_lowercase()))
            }),
            _ => {
                self.pos -= 1;
                Err(self.syntax())
            }
        }
    }

    fn call(&mut self, name: &str, args: &[Option<Val>]) -> Option<Val> {
        let lower = name.to_lowercase();
        let is_max = match lower.as_str() {
            "max" => true,
            "min" => false,
            _ => return self.fail(format!("unknown function: {name}")),
        };
        if args.len() != 2 {
            return self.fail(format!(
                "{lower} function requires exactly 2 arguments, got {}",
                args.len()
            ));
        }
        let (Some(l), Some(r)) = (args[0], args[1]) else {
            return None;
        };
        Some(match (l, r) {
            (Val::Num(a), Val::Num(b)) => Val::Num(if (a >= b) == is_max { a } else { b }),
            _ => {
                let (a, b) = (as_qty(l), as_qty(r));
                let pick_left = if is_max { a >= b } else { a <= b };
                Val::Qty(if pick_left { a } else { b })
            }
        })
    }
}

/// OpenKruise `validateResourceExpression(expr, variable)`: `Err` with the reason when the
/// calculator refuses the expression with `variable` (`cpu` or `memory`) set to 1.
pub fn check_expression(expr: &str, variable: &str) -> Result<(), String> {
    if expr.is_empty() {
        return Ok(());
    }
    let toks = lex(expr);
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        variable,
        error: None,
    };
    let parsed = p.expr().and_then(|v| {
        if p.pos < toks.len() {
            Err(p.syntax())
        } else {
            Ok(v)
        }
    });
    let value = match (parsed, p.error) {
        (Err(syntax), Some(e)) => return Err(format!("invalid expression: {e} ({syntax})")),
        (Err(syntax), None) => return Err(format!("invalid expression: {syntax}")),
        (Ok(_), Some(e)) => return Err(format!("invalid expression: {e}")),
        (Ok(None), None) => return Err("invalid expression: no result from parser".into()),
        (Ok(Some(v)), None) => v,
    };
    let negative = match value {
        Val::Num(n) => n < 0.0,
        Val::Qty(q) => q < 0,
    };
    if negative {
        return Err("invalid expression: calculation result is negative".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_expressions() {
        for e in [
            "cpu",
            "CPU",
            "cpu*50%",
            "cpu * 0.5 + 100m",
            "max(cpu, 100m)",
            "MIN(cpu*2, 1)",
            "-(-cpu)",
            "--1",
            "2x",
            "1e3",
            "1.5Gi - 1Gi",
            "(cpu)",
            "cpu/2",
            "100m*cpu",
            "5.",
            "1e400 - 1e400",
        ] {
            assert_eq!(check_expression(e, "cpu"), Ok(()), "{e}");
        }
        assert_eq!(check_expression("memory + 10Mi", "memory"), Ok(()));
        assert_eq!(check_expression("", "cpu"), Ok(()));
    }

    #[test]
    fn refused_expressions() {
        for e in [
            "memory",
            "cpu +",
            "+cpu",
            "cpu - 2",
            "cpu / 0",
            "1 / 1m",
            "1m * 1m",
            "max(cpu)",
            "max(1, 2, 3)",
            "foo(1)",
            "cpu(1)",
            "max",
            "(cpu",
            "cpu)",
            "1.2.3",
            "1e3m",
            "5%%",
            "%",
            "cpu ^ 2",
            "1em",
            "-1m",
            "1 2",
            "cpü",
        ] {
            assert!(check_expression(e, "cpu").is_err(), "{e}");
        }
    }
}
