//! Go's `encoding/json` reading of the pod annotations SidecarSet injection decodes
//! (`map[string]SidecarSetUpgradeSpec`, `map[string]string`), so that what OpenKruise accepts,
//! refuses, keeps and rewrites is the same here:
//!
//! - the input is checked whole first, with the scanner's messages (`invalid character 'x'
//!   looking for beginning of value`, `unexpected end of JSON input`, ...);
//! - `null` leaves a map nil, a `null` member gives the zero value, a member of the wrong type
//!   gives the zero value and the first such error (`json: cannot unmarshal number into Go value
//!   of type string`) — decoding goes on;
//! - struct fields match keys exactly or case-insensitively (Go's folding: `ſ` is `s`, the
//!   Kelvin sign `K` is `k`), the last key in the document wins;
//! - `updateTimestamp` is a `metav1.Time`: `null`, or RFC 3339 as `time.Parse` reads it, written
//!   back in UTC whole seconds, the zero time as `null`.

use std::collections::BTreeMap;

use super::SidecarSetUpgradeSpec;
use crate::sidecarset::resources::go_quote;

/// A JSON document in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool,
    Number,
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The name Go's `UnmarshalTypeError` gives the value.
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool => "bool",
            Json::Number => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }
}

fn type_error(value: &Json, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        value.kind()
    )
}

// ---------------------------------------------------------------------------------------------
// The scanner (`checkValid`)

#[derive(Clone, Copy, PartialEq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy)]
enum Step {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside `true`/`false`/`null`: the rest to read and the literal.
    Literal(&'static [u8], &'static str),
}

const MAX_NESTING_DEPTH: usize = 10_000;

/// Go's `quoteChar`: a byte as the scanner names it in its messages.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let q = go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

struct Scanner {
    step: Step,
    parse: Vec<Parse>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Scanner {
    fn error(c: u8, context: &str) -> Result<(), String> {
        Err(format!("invalid character {} {context}", quote_char(c)))
    }

    fn set_top(&mut self, p: Parse) {
        if let Some(last) = self.parse.last_mut() {
            *last = p;
        }
    }

    fn push(&mut self, c: u8, p: Parse) -> Result<(), String> {
        self.parse.push(p);
        if self.parse.len() <= MAX_NESTING_DEPTH {
            Ok(())
        } else {
            Self::error(c, "exceeded max depth")
        }
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        match c {
            b'{' => {
                self.step = Step::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey)
            }
            b'[' => {
                self.step = Step::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue)
            }
            b'"' => {
                self.step = Step::InString;
                Ok(())
            }
            b'-' => {
                self.step = Step::Neg;
                Ok(())
            }
            b'0' => {
                self.step = Step::Zero;
                Ok(())
            }
            b't' => {
                self.step = Step::Literal(b"rue", "true");
                Ok(())
            }
            b'f' => {
                self.step = Step::Literal(b"alse", "false");
                Ok(())
            }
            b'n' => {
                self.step = Step::Literal(b"ull", "null");
                Ok(())
            }
            b'1'..=b'9' => {
                self.step = Step::One;
                Ok(())
            }
            _ => Self::error(c, "looking for beginning of value"),
        }
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.parse.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            return self.end_top_step(c);
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return Ok(());
        }
        match top {
            Parse::ObjectKey => {
                if c == b':' {
                    self.set_top(Parse::ObjectValue);
                    self.step = Step::BeginValue;
                    return Ok(());
                }
                Self::error(c, "after object key")
            }
            Parse::ObjectValue => {
                if c == b',' {
                    self.set_top(Parse::ObjectKey);
                    self.step = Step::BeginString;
                    return Ok(());
                }
                if c == b'}' {
                    self.parse.pop();
                    self.step = Step::EndValue;
                    return Ok(());
                }
                Self::error(c, "after object key:value pair")
            }
            Parse::ArrayValue => {
                if c == b',' {
                    self.step = Step::BeginValue;
                    return Ok(());
                }
                if c == b']' {
                    self.parse.pop();
                    self.step = Step::EndValue;
                    return Ok(());
                }
                Self::error(c, "after array element")
            }
        }
    }

    fn end_top_step(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            Ok(())
        } else {
            Self::error(c, "after top-level value")
        }
    }

    /// One byte of input in the current state (Go's `scanner.step`).
    fn feed(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            Step::BeginValue => self.begin_value(c),
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b'}' {
                    self.set_top(Parse::ObjectValue);
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => self.end_top_step(c),
            Step::InString | Step::InStringEsc | Step::InStringEscU(_) => self.string_step(c),
            Step::Literal(rest, word) => self.literal_step(c, rest, word),
            Step::Neg
            | Step::One
            | Step::Zero
            | Step::Dot
            | Step::Dot0
            | Step::E
            | Step::ESign
            | Step::E0 => self.number_step(c),
        }
    }

    /// Inside a string literal (Go's `stateInString`, `stateInStringEsc`,
    /// `stateInStringEscU*`).
    fn string_step(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::InString => match c {
                b'"' => {
                    self.step = Step::EndValue;
                    Ok(())
                }
                b'\\' => {
                    self.step = Step::InStringEsc;
                    Ok(())
                }
                c if c < 0x20 => Self::error(c, "in string literal"),
                _ => Ok(()),
            },
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = Step::InString;
                    Ok(())
                }
                b'u' => {
                    self.step = Step::InStringEscU(0);
                    Ok(())
                }
                _ => Self::error(c, "in string escape code"),
            },
            Step::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Self::error(c, "in \\u hexadecimal character escape");
                }
                self.step = if n == 3 {
                    Step::InString
                } else {
                    Step::InStringEscU(n + 1)
                };
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Inside a numeric literal (Go's `stateNeg`, `state1`, `state0`, `stateDot`,
    /// `stateDot0`, `stateE`, `stateESign`, `stateE0`).
    fn number_step(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::Neg => match c {
                b'0' => {
                    self.step = Step::Zero;
                    Ok(())
                }
                b'1'..=b'9' => {
                    self.step = Step::One;
                    Ok(())
                }
                _ => Self::error(c, "in numeric literal"),
            },
            Step::One if c.is_ascii_digit() => Ok(()),
            Step::One | Step::Zero => self.zero(c),
            Step::Dot if c.is_ascii_digit() => {
                self.step = Step::Dot0;
                Ok(())
            }
            Step::Dot => Self::error(c, "after decimal point in numeric literal"),
            Step::Dot0 if c.is_ascii_digit() => Ok(()),
            Step::Dot0 if c == b'e' || c == b'E' => {
                self.step = Step::E;
                Ok(())
            }
            Step::E if c == b'+' || c == b'-' => {
                self.step = Step::ESign;
                Ok(())
            }
            Step::E | Step::ESign => self.e_sign(c),
            Step::E0 if c.is_ascii_digit() => Ok(()),
            Step::Dot0 | Step::E0 => self.end_value(c),
            _ => Ok(()),
        }
    }

    /// Inside `true`, `false` or `null` (Go's `stateT`, `stateTr`, ...): `rest` is what is
    /// still expected of `word`.
    fn literal_step(
        &mut self,
        c: u8,
        rest: &'static [u8],
        word: &'static str,
    ) -> Result<(), String> {
        if c != rest[0] {
            return Self::error(
                c,
                &format!("in literal {word} (expecting {})", quote_char(rest[0])),
            );
        }
        self.step = if rest.len() == 1 {
            Step::EndValue
        } else {
            Step::Literal(&rest[1..], word)
        };
        Ok(())
    }

    fn begin_string(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.step = Step::InString;
            return Ok(());
        }
        Self::error(c, "looking for beginning of object key string")
    }

    fn zero(&mut self, c: u8) -> Result<(), String> {
        if c == b'.' {
            self.step = Step::Dot;
            return Ok(());
        }
        if c == b'e' || c == b'E' {
            self.step = Step::E;
            return Ok(());
        }
        self.end_value(c)
    }

    fn e_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            self.step = Step::E0;
            return Ok(());
        }
        Self::error(c, "in exponent of numeric literal")
    }
}

/// Go's `checkValid`: `Err` with the scanner's message for the first byte it refuses, or
/// `unexpected end of JSON input`.
fn check_valid(text: &str) -> Result<(), String> {
    let mut s = Scanner {
        step: Step::BeginValue,
        parse: Vec::new(),
        end_top: false,
    };
    for &c in text.as_bytes() {
        s.feed(c)?;
    }
    if s.end_top {
        return Ok(());
    }
    // Go's eof(): one more space, which ends a number but not a literal or a string.
    s.feed(b' ')?;
    if s.end_top {
        Ok(())
    } else {
        Err("unexpected end of JSON input".to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// The tree of a valid document

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while self.i < self.b.len() && is_space(self.b[self.i]) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Json {
        self.skip_space();
        match self.b.get(self.i).copied().unwrap_or(b'n') {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                loop {
                    self.skip_space();
                    if self.b.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        return Json::Object(members);
                    }
                    if self.b.get(self.i) == Some(&b',') {
                        self.i += 1;
                        self.skip_space();
                    }
                    let key = self.string();
                    self.skip_space();
                    self.i += 1; // ':'
                    let v = self.value();
                    members.push((key, v));
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.b.get(self.i) {
                        Some(b']') | None => {
                            self.i += 1;
                            return Json::Array(items);
                        }
                        Some(b',') => self.i += 1,
                        _ => items.push(self.value()),
                    }
                }
            }
            b'"' => Json::String(self.string()),
            b't' => {
                self.i += 4;
                Json::Bool
            }
            b'f' => {
                self.i += 5;
                Json::Bool
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            _ => {
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                Json::Number
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.b.get(at..at + 4)?;
        if self.b.get(at.wrapping_sub(2)..at) != Some(b"\\u") {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    }

    /// A string literal (the reader is on its `"`), unescaped as Go does: a `\u` surrogate
    /// that is not half of a pair is U+FFFD.
    fn string(&mut self) -> String {
        self.i += 1;
        let mut out = Vec::new();
        while self.i < self.b.len() {
            let c = self.b[self.i];
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\\' => {
                    let e = self.b.get(self.i + 1).copied().unwrap_or(b'\\');
                    self.i += 2;
                    let simple = match e {
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        other => Some(other),
                    };
                    if let Some(b) = simple {
                        out.push(b);
                        continue;
                    }
                    let r = self.hex4(self.i).unwrap_or(0xFFFD);
                    self.i += 4;
                    let ch = if (0xD800..0xE000).contains(&r) {
                        match self.hex4(self.i + 2) {
                            Some(lo)
                                if (0xD800..0xDC00).contains(&r)
                                    && (0xDC00..0xE000).contains(&lo) =>
                            {
                                self.i += 6;
                                char::from_u32(0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00))
                            }
                            _ => None,
                        }
                    } else {
                        char::from_u32(r)
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(
                        ch.unwrap_or('\u{FFFD}').encode_utf8(&mut buf).as_bytes(),
                    );
                }
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A document as Go's decoder sees it: `Err` with Go's syntax error, else its tree.
pub(crate) fn parse(text: &str) -> Result<Json, String> {
    check_valid(text)?;
    Ok(Reader {
        b: text.as_bytes(),
        i: 0,
    }
    .value())
}

// ---------------------------------------------------------------------------------------------
// Targets

/// `json.Unmarshal(text, &m)` for a fresh `m := map[string]string{}`: the map (`None` when the
/// document is `null`, which leaves `m` nil), and Go's error. After a type error the map holds
/// what was decoded, the mismatched members as `""`; after a syntax error it is empty.
pub(crate) fn string_map(text: &str) -> (Option<BTreeMap<String, String>>, Option<String>) {
    let doc = match parse(text) {
        Ok(d) => d,
        Err(e) => return (Some(BTreeMap::new()), Some(e)),
    };
    let members = match doc {
        Json::Null => return (None, None),
        Json::Object(m) => m,
        other => {
            return (
                Some(BTreeMap::new()),
                Some(type_error(&other, "map[string]string")),
            );
        }
    };
    let mut out = BTreeMap::new();
    let mut err = None;
    for (k, v) in members {
        let s = match v {
            Json::String(s) => s,
            Json::Null => String::new(),
            other => {
                err.get_or_insert_with(|| type_error(&other, "string"));
                String::new()
            }
        };
        out.insert(k, s);
    }
    (Some(out), err)
}

/// Go's `foldName` of a key, compared with the upper-case ASCII name of a field.
fn folds_to(key: &str, field_upper: &str) -> bool {
    let folded: String = key
        .chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            '\u{017F}' => 'S',
            '\u{212A}' => 'K',
            c => c,
        })
        .collect();
    folded == field_upper
}

/// `json.Unmarshal(text, &m)` for `m := map[string]SidecarSetUpgradeSpec{}`: `Ok(None)` for
/// `null` (a nil map), `Err(())` when Go reports any error (the caller then reads the older
/// format).
pub(crate) fn upgrade_specs(
    text: &str,
) -> Result<Option<BTreeMap<String, SidecarSetUpgradeSpec>>, ()> {
    let members = match parse(text).map_err(|_| ())? {
        Json::Null => return Ok(None),
        Json::Object(m) => m,
        _ => return Err(()),
    };
    let mut out = BTreeMap::new();
    for (k, v) in members {
        let spec = match v {
            Json::Null => SidecarSetUpgradeSpec::default(),
            Json::Object(fields) => upgrade_spec(fields)?,
            _ => return Err(()),
        };
        out.insert(k, spec);
    }
    Ok(Some(out))
}

fn string_field(v: Json, into: &mut String) -> Result<(), ()> {
    match v {
        Json::String(s) => *into = s,
        Json::Null => {}
        _ => return Err(()),
    }
    Ok(())
}

fn upgrade_spec(fields: Vec<(String, Json)>) -> Result<SidecarSetUpgradeSpec, ()> {
    let mut s = SidecarSetUpgradeSpec::default();
    for (k, v) in fields {
        if folds_to(&k, "UPDATETIMESTAMP") {
            s.update_timestamp = match v {
                Json::Null => None,
                Json::String(t) => go_time_reformat(&t).ok_or(())?,
                _ => return Err(()),
            };
        } else if folds_to(&k, "HASH") {
            string_field(v, &mut s.hash)?;
        } else if folds_to(&k, "SIDECARSETNAME") {
            string_field(v, &mut s.sidecar_set_name)?;
        } else if folds_to(&k, "CONTROLLERREVISION") {
            string_field(v, &mut s.controller_revision)?;
        } else if folds_to(&k, "SIDECARLIST") {
            s.sidecar_list = match v {
                Json::Null => None,
                Json::Array(items) => Some(
                    items
                        .into_iter()
                        .map(|i| match i {
                            Json::String(n) => Ok(n),
                            Json::Null => Ok(String::new()),
                            _ => Err(()),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                _ => return Err(()),
            };
        }
    }
    Ok(s)
}

// ---------------------------------------------------------------------------------------------
// metav1.Time

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn days_in(month: i64, year: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `time.Parse(time.RFC3339, s)`: seconds since the Unix epoch and nanoseconds, or `None`
/// where Go errs. Go's general parser, which accepts all its fast path does and more: a
/// one-digit hour, a `,` before the fraction, zone offsets up to `24:60`.
fn parse_rfc3339(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let num = |i: usize, n: usize| -> i64 {
        b[i..i + n]
            .iter()
            .fold(0, |acc, c| acc * 10 + i64::from(c - b'0'))
    };
    if !(0..4).all(digit) {
        return None;
    }
    let year = num(0, 4);
    let mut i = 4;
    let lit = |i: &mut usize, c: u8| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    lit(&mut i, b'-')?;
    let two = |i: &mut usize| -> Option<i64> {
        (digit(*i) && digit(*i + 1)).then(|| {
            *i += 2;
            num(*i - 2, 2)
        })
    };
    let month = two(&mut i)?;
    lit(&mut i, b'-')?;
    let day = two(&mut i)?;
    lit(&mut i, b'T')?;
    let hour = if digit(i) && digit(i + 1) {
        two(&mut i)?
    } else if digit(i) {
        i += 1;
        num(i - 1, 1)
    } else {
        return None;
    };
    lit(&mut i, b':')?;
    let minute = two(&mut i)?;
    lit(&mut i, b':')?;
    let second = two(&mut i)?;
    if !(1..=12).contains(&month) || hour >= 24 || minute >= 60 || second >= 60 {
        return None;
    }
    let mut nanos = 0u32;
    if matches!(b.get(i), Some(b'.' | b',')) && digit(i + 1) {
        let start = i + 1;
        let mut end = start;
        while digit(end) {
            end += 1;
        }
        let used = &b[start..end.min(start + 9)];
        let mut n = used
            .iter()
            .fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0'));
        for _ in used.len()..9 {
            n *= 10;
        }
        nanos = n;
        i = end;
    }
    let offset = match b.get(i) {
        Some(b'Z') => {
            i += 1;
            0
        }
        _ => {
            if b.len() < i + 6 || b[i + 3] != b':' {
                return None;
            }
            let sign = b[i];
            let (hh, mm) = (two(&mut (i + 1))?, two(&mut (i + 4))?);
            if hh > 24 || mm > 60 {
                return None;
            }
            i += 6;
            match sign {
                b'+' => (hh * 60 + mm) * 60,
                b'-' => -(hh * 60 + mm) * 60,
                _ => return None,
            }
        }
    };
    if i != b.len() || day < 1 || day > days_in(month, year) {
        return None;
    }
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some((secs, nanos))
}

/// `metav1.Time` read from `s` and written back: `Some(Some(text))`, `Some(None)` for the zero
/// time (written `null`), `None` where Go's `time.Parse` errs.
fn go_time_reformat(s: &str) -> Option<Option<String>> {
    let (secs, nanos) = parse_rfc3339(s)?;
    // 0001-01-01T00:00:00Z, Go's zero time.
    if secs == -62_135_596_800 && nanos == 0 {
        return Some(None);
    }
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    let year = if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    Some(Some(format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )))
}

#[cfg(test)]
mod tests;
