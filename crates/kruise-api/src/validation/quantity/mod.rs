//! Resource quantities as apimachinery's `resource.Quantity` (v0.32) parses, compares and
//! prints them: `ParseQuantity` (with its exact error messages), `Cmp`, `MilliValue`-style
//! scaling and the canonical `String()` form (`1000m` → `1`, `2048Ki` → `2Mi`, `1.5Gi` →
//! `1536Mi`).
//!
//! The value is kept exactly, as an integer mantissa times a power of ten, rounded up to
//! nano precision as Go does on parsing.
//!
//! [`GoQuantity`] is the same quantity with Go's in-memory state (int64 or `inf.Dec`
//! representation, kept input string) and its arithmetic (`Add`, `Neg`, `Cmp`, `MilliValue`,
//! `SetMilli`, ...), for computations whose printed result must be Go's.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};

mod go_quantity;

pub use go_quantity::{GoQuantity, MAX_SCALE};

/// The regular expression a quantity must match (`ErrFormatWrong`).
pub const QUANTITY_REGEX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Why a string is not a quantity; the text is Go's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// `ErrFormatWrong`.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// `ErrNumeric`.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// `ErrSuffix`.
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// Not one of Go's errors: refused by [`GoQuantity::parse`] because the representation's
    /// decimal scale is beyond ±[`MAX_SCALE`] (Go would expand it into a number with that many
    /// digits).
    #[error("quantity out of the supported range (decimal scale beyond ±10000)")]
    OutOfRange,
}

/// How a quantity is written (`resource.Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (powers of 1024).
    BinarySI,
    /// `12M` (powers of 1000).
    DecimalSI,
}

/// A parsed quantity: `mantissa × 10^exponent`.
#[derive(Clone, Debug)]
pub struct Quantity {
    mantissa: BigInt,
    exponent: i64,
    /// The notation the quantity was written in (decides the canonical suffix).
    pub format: Format,
}

/// What Go's `parseQuantityString` splits a quantity into.
struct Parts {
    positive: bool,
    /// The signed number as written, before the suffix (`-01.50` of `-01.50Gi`); `0` when the
    /// number is only zeros.
    value: String,
    /// Integer digits without leading zeros (`0` when there are none).
    num: String,
    /// Fraction digits.
    denom: String,
    suffix: String,
}

/// Go's `parseQuantityString`: sign, integer digits, fraction digits and suffix.
fn split(s: &str) -> Result<Parts, QuantityError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    if pos < end {
        match b[0] {
            b'-' => {
                positive = false;
                pos += 1;
            }
            b'+' => pos += 1,
            _ => {}
        }
    }
    let parts = |value: &str, num: &str, denom: &str, suffix: &str| Parts {
        positive,
        value: value.to_owned(),
        num: num.to_owned(),
        denom: denom.to_owned(),
        suffix: suffix.to_owned(),
    };
    // Leading zeros.
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(parts("0", "0", "", ""));
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[num_start..pos];
    if pos >= end {
        return Ok(parts(s, num, "", ""));
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let d_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[d_start..pos];
        if pos >= end {
            return Ok(parts(s, num, denom, ""));
        }
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::FormatWrong);
    }
    Ok(parts(value, num, denom, &s[suffix_start..]))
}

/// `quantitySuffixer.interpret`: base, exponent and format of a suffix.
fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSI));
    let bin = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let e: i64 = s[1..].parse().ok()?;
            // Go keeps the exponent as an int32.
            Some((10, i64::from(e as i32), Format::DecimalExponent))
        }
        _ => None,
    }
}

fn pow10(n: u64) -> BigInt {
    num_traits::pow(BigInt::from(10u8), n as usize)
}

/// `mantissa / 10^places`, rounded away from zero (inf's `RoundUp`).
fn div_round_away(mantissa: &BigInt, places: u64) -> BigInt {
    if mantissa.is_zero() {
        return BigInt::zero();
    }
    // |mantissa| < 10^places: the quotient is 0 and the remainder not, so ±1 (without computing
    // a huge power of ten for absurd exponents such as `1e-999999999`).
    if places > mantissa.magnitude().to_string().len() as u64 {
        return if mantissa.is_negative() {
            -BigInt::one()
        } else {
            BigInt::one()
        };
    }
    let d = pow10(places);
    let (q, r) = (mantissa / &d, mantissa % &d);
    if r.is_zero() {
        q
    } else if mantissa.is_negative() {
        q - 1
    } else {
        q + 1
    }
}

impl Quantity {
    /// Go's `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        let Parts {
            positive,
            num,
            denom,
            suffix,
            ..
        } = split(s)?;
        let (base, exp, mut format) = interpret(&suffix).ok_or(QuantityError::Suffix)?;
        let digits = format!("{num}{denom}");
        let mut mantissa: BigInt = digits.parse().map_err(|_| QuantityError::Numeric)?;
        let mut exponent = -(denom.len() as i64);
        if base == 10 {
            exponent += exp;
        } else {
            mantissa <<= exp as usize;
        }
        let mut q = Quantity {
            mantissa,
            exponent,
            format,
        };
        // Round up to nano precision.
        if q.exponent < -9 {
            let places = (-9 - q.exponent) as u64;
            q.mantissa = div_round_away(&q.mantissa, places);
            q.exponent = -9;
        }
        if format == Format::BinarySI {
            let max = Quantity::from_int(BigInt::from(i64::MAX));
            if q.cmp(&max) == Ordering::Greater {
                q.mantissa = BigInt::from(i64::MAX);
                q.exponent = 0;
            }
            if q.cmp(&Quantity::from_int(BigInt::one())) == Ordering::Less && q.sign() > 0 {
                format = Format::DecimalSI;
            }
        }
        if !positive {
            q.mantissa = -q.mantissa;
        }
        q.format = format;
        q.normalize();
        Ok(q)
    }

    fn from_int(v: BigInt) -> Self {
        Quantity {
            mantissa: v,
            exponent: 0,
            format: Format::DecimalSI,
        }
    }

    /// Moves trailing decimal zeros of the mantissa into the exponent.
    fn normalize(&mut self) {
        if self.mantissa.is_zero() {
            self.exponent = 0;
            return;
        }
        let ten = BigInt::from(10u8);
        while (&self.mantissa % &ten).is_zero() {
            self.mantissa /= &ten;
            self.exponent += 1;
        }
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match self.mantissa.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa.is_zero()
    }

    /// Number of decimal digits of the mantissa's magnitude.
    fn digits(&self) -> i64 {
        self.mantissa.magnitude().to_string().len() as i64
    }

    /// `Cmp`: compares the values (also [`Ord`]).
    pub fn compare(&self, other: &Quantity) -> Ordering {
        match self.sign().cmp(&other.sign()) {
            Ordering::Equal => {}
            o => return o,
        }
        if self.is_zero() {
            return Ordering::Equal;
        }
        // Compare magnitudes first (avoids scaling by huge powers of ten).
        let (ma, mb) = (
            self.digits() + self.exponent,
            other.digits() + other.exponent,
        );
        let by_mag = if ma != mb {
            ma.cmp(&mb)
        } else {
            let e = self.exponent.min(other.exponent);
            let a = &self.mantissa.abs() * pow10((self.exponent - e) as u64);
            let b = &other.mantissa.abs() * pow10((other.exponent - e) as u64);
            a.cmp(&b)
        };
        if self.sign() < 0 {
            by_mag.reverse()
        } else {
            by_mag
        }
    }

    /// The value in units of `10^scale`, rounded away from zero (Go's `ScaledValue`, e.g.
    /// `MilliValue` is `scaled_value(-3)`); `None` beyond 128 bits.
    pub fn scaled_value(&self, scale: i64) -> Option<i128> {
        // Beyond 10^39 nothing fits in 128 bits (and `1e999999999` must not be expanded).
        if !self.is_zero() && self.digits() + (self.exponent - scale) > 39 {
            return None;
        }
        let v = if self.exponent >= scale {
            &self.mantissa * pow10((self.exponent - scale) as u64)
        } else {
            div_round_away(&self.mantissa, (scale - self.exponent) as u64)
        };
        v.to_i128()
    }

    /// `RoundUp(scale)`: the value rounded away from zero to units of `10^scale`.
    pub fn round_up(&self, scale: i64) -> Quantity {
        if self.exponent >= scale {
            return self.clone();
        }
        let mut q = Quantity {
            mantissa: div_round_away(&self.mantissa, (scale - self.exponent) as u64),
            exponent: scale,
            format: self.format,
        };
        q.normalize();
        q
    }

    /// The canonical form (Go's `Quantity.String()` of a parsed value).
    pub fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut format = self.format;
        let mut int_value: Option<BigInt> = None;
        if format == Format::BinarySI {
            let lo = Quantity::from_int(BigInt::from(-1024));
            let hi = Quantity::from_int(BigInt::from(1024));
            if self.cmp(&lo) == Ordering::Greater && self.cmp(&hi) == Ordering::Less {
                format = Format::DecimalSI;
            } else if self.exponent < 0 {
                // Not an integer: not exactly representable in base 1024.
                format = Format::DecimalSI;
            } else {
                int_value = Some(&self.mantissa * pow10(self.exponent as u64));
            }
        }
        match (format, int_value) {
            (Format::BinarySI, Some(mut v)) => {
                let k = BigInt::from(1024);
                let mut e = 0;
                while e < 6 && (&v % &k).is_zero() {
                    v /= &k;
                    e += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][e];
                format!("{v}{suffix}")
            }
            _ => {
                let mut amount = self.mantissa.clone();
                let mut e = self.exponent;
                while e.rem_euclid(3) != 0 {
                    amount *= 10;
                    e -= 1;
                }
                let suffix = match format {
                    Format::DecimalExponent if e == 0 => String::new(),
                    Format::DecimalExponent => format!("e{e}"),
                    _ => match e {
                        -9 => "n".into(),
                        -6 => "u".into(),
                        -3 => "m".into(),
                        0 => String::new(),
                        3 => "k".into(),
                        6 => "M".into(),
                        9 => "G".into(),
                        12 => "T".into(),
                        15 => "P".into(),
                        18 => "E".into(),
                        // Go finds no suffix and writes none.
                        _ => String::new(),
                    },
                };
                format!("{amount}{suffix}")
            }
        }
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.compare(other)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// Parses a quantity as Go's JSON decoding does (`UnmarshalJSON`: surrounding space trimmed).
pub fn parse_quantity(s: &str) -> Result<Quantity, QuantityError> {
    Quantity::parse(s.trim())
}

/// Go's `ParseQuantity` fast path: when `s` parses into an int64 amount, its scale and whether
/// Go keeps `s` as the quantity's cached string (it does when the number is written in
/// canonical form). `None` when Go takes the arbitrary-precision path (or `s` does not parse).
fn int64_fast_path(s: &str) -> Option<(i64, bool)> {
    if s == "0" {
        return Some((0, true));
    }
    let Parts {
        num, denom, suffix, ..
    } = split(s).ok()?;
    let (_, exp, format) = interpret(&suffix)?;
    let digits = (num.len() + denom.len()) as i64;
    let (mut scale, precision, multiplier_bits) = match format {
        Format::DecimalExponent | Format::DecimalSI => (exp, 18 - digits, 0),
        Format::BinarySI if exp >= 0 && denom.is_empty() => {
            // Go: 15 - len(num) - int32(float32(exponent)*3/10) - 1 (exact for 10, 20, ... 60).
            (0, 15 - num.len() as i64 - exp * 3 / 10 - 1, exp)
        }
        Format::BinarySI => (0, -1, 0),
    };
    if precision < 0 {
        return None;
    }
    scale -= denom.len() as i64;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{num}{denom}");
    let value: i64 = shifted.parse().ok()?;
    // The product must fit an int64, or Go takes the slow path (which keeps no string).
    value.checked_mul(1i64.checked_shl(multiplier_bits as u32)?)?;
    let kept = match format {
        Format::BinarySI => exp % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    Some((scale, kept))
}

/// Whether Kubernetes' `SetDefaults_ResourceList` changes the quantity Go decodes from `text`
/// (`RoundUp(-3)` leaves an int64 amount of milli scale or coarser untouched and replaces
/// anything finer, or any arbitrary-precision amount); `Some` with the text Go then writes, `None`
/// when the quantity stays as decoded (or `text` is not a quantity).
pub fn go_round_up_milli(text: &str) -> Option<String> {
    let trimmed = text.trim();
    let q = Quantity::parse(trimmed).ok()?;
    match int64_fast_path(trimmed) {
        Some((scale, _)) if scale >= -3 => None,
        _ => Some(q.round_up(-3).canonical()),
    }
}

/// The text Go's `encoding/json` writes for a `resource.Quantity` that `UnmarshalJSON` decoded
/// from `text` (the JSON string's content, or a JSON number as written): the trimmed input itself
/// when `ParseQuantity` kept it (already canonical, or canonical but for a `+` sign or leading
/// zeros, which Go then writes back as they are), else the canonical form (`0.5` → `500m`,
/// `1000m` → `1`). With `round_up_milli`, the quantity is first rounded up to milli units as
/// Kubernetes' `SetDefaults_ResourceList` does to container resources (`RoundUp(-3)`, which
/// keeps the string only when nothing finer than milli was written). `None` if `text` is not a
/// quantity.
pub fn go_json_text(text: &str, round_up_milli: bool) -> Option<String> {
    let trimmed = text.trim();
    let q = Quantity::parse(trimmed).ok()?;
    match int64_fast_path(trimmed) {
        Some((scale, true)) if !round_up_milli || scale >= -3 => Some(trimmed.to_owned()),
        _ if round_up_milli => Some(q.round_up(-3).canonical()),
        _ => Some(q.canonical()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parse_errors_like_go() {
        assert_eq!(Quantity::parse("").unwrap_err(), QuantityError::FormatWrong);
        assert_eq!(
            Quantity::parse("abc").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(
            Quantity::parse("1.2.3").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(
            Quantity::parse("1 Gi").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(
            Quantity::parse("1Gb").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(
            Quantity::parse("1Kb").unwrap_err(),
            QuantityError::FormatWrong
        );
        assert_eq!(Quantity::parse("1iK").unwrap_err(), QuantityError::Suffix);
        assert_eq!(
            QuantityError::FormatWrong.to_string(),
            format!("quantities must match the regular expression '{QUANTITY_REGEX}'")
        );
        for ok in [
            "0", "1", "-1", "+1", "1.5", ".5", "1e3", "1E3", "1e-3", "100m", "1Ki", "-", ".",
        ] {
            assert!(Quantity::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("0.1", "100m"),
            ("2048Ki", "2Mi"),
            ("1.5Gi", "1536Mi"),
            ("1024", "1024"),
            ("1Ki", "1Ki"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1E6", "1e6"),
            ("12e-1", "1200e-3"),
            ("1k", "1k"),
            ("1000", "1k"),
            ("0.0000000001", "1n"),
            ("-1Mi", "-1Mi"),
            ("0Gi", "0"),
            ("1M", "1M"),
            ("128Mi", "128Mi"),
        ] {
            assert_eq!(q(input).canonical(), want, "{input}");
        }
    }

    #[test]
    fn comparisons_and_scales() {
        assert_eq!(q("1").cmp(&q("1000m")), Ordering::Equal);
        assert_eq!(q("2").cmp(&q("1")), Ordering::Greater);
        assert_eq!(q("1Gi").cmp(&q("1G")), Ordering::Greater);
        assert_eq!(q("-1").cmp(&q("0")), Ordering::Less);
        assert_eq!(q("-2").cmp(&q("-1")), Ordering::Less);
        assert_eq!(q("1e30").cmp(&q("1e29")), Ordering::Greater);
        assert_eq!(q("1.5").scaled_value(-3), Some(1500));
        assert_eq!(q("1.0001").scaled_value(-3), Some(1001));
        assert_eq!(q("1.5").scaled_value(0), Some(2));
        // Absurd exponents are neither expanded nor a reason to hang.
        assert_eq!(q("1e999999999").scaled_value(-3), None);
        assert_eq!(q("1e-999999999").canonical(), "1e-9");
        assert_eq!(q("1e999999999").cmp(&q("1")), Ordering::Greater);
        assert_eq!(
            q("0.0001").round_up(-3).cmp(&q("0.0002").round_up(-3)),
            Ordering::Equal
        );
    }

    #[test]
    fn json_text_as_go_writes_it() {
        for (input, plain, rounded) in [
            ("100m", "100m", "100m"),
            ("1000m", "1", "1"),
            ("0.1", "100m", "100m"),
            ("+100m", "+100m", "+100m"),
            ("0100Mi", "0100Mi", "0100Mi"),
            ("1024Mi", "1Gi", "1Gi"),
            ("8Ki", "8Ki", "8Ki"),
            ("1.5Gi", "1536Mi", "1536Mi"),
            ("1e3", "1e3", "1e3"),
            ("1E3", "1E3", "1E3"),
            ("0.0001", "100u", "1m"),
            ("100u", "100u", "1m"),
            ("1n", "1n", "1m"),
            (" 2 ", "2", "2"),
            ("00", "0", "0"),
            ("0", "0", "0"),
            ("-1", "-1", "-1"),
            ("1.000", "1", "1"),
            (
                "12345678901234567890",
                "12345678901234567890",
                "12345678901234567890",
            ),
        ] {
            assert_eq!(
                go_json_text(input, false).as_deref(),
                Some(plain),
                "{input}"
            );
            assert_eq!(
                go_json_text(input, true).as_deref(),
                Some(rounded),
                "{input} rounded"
            );
        }
        assert_eq!(go_json_text("x", false), None);
        assert_eq!(go_round_up_milli("1000m"), None);
        assert_eq!(go_round_up_milli("1.000"), None);
        assert_eq!(go_round_up_milli("100u").as_deref(), Some("1m"));
        assert_eq!(go_round_up_milli("1.5Gi").as_deref(), Some("1536Mi"));
    }

    /// Accepted and refused exactly as Go's `resource.ParseQuantity` (v0.32) answered for each
    /// of these strings (checked against Go when written).
    #[test]
    fn accepts_and_refuses_as_go_parse_quantity() {
        for ok in [
            "1", "0", "-", "+", ".", "1.5", "100m", "1Gi", "1e3", "1E", "2E-3", "+1.5Ki", "0.0001",
            "Gi", "e3", "m",
        ] {
            assert!(parse_quantity(ok).is_ok(), "{ok}");
        }
        for bad in ["", "abc", "1.2.3", "1 Gi", "1x"] {
            let e = parse_quantity(bad).unwrap_err().to_string();
            assert!(e.starts_with("quantities must match"), "{bad}: {e}");
        }
        for bad in ["1e", "1iG", "1Ki3"] {
            let e = parse_quantity(bad).unwrap_err().to_string();
            assert_eq!(e, "unable to parse quantity's suffix", "{bad}");
        }
    }
}
