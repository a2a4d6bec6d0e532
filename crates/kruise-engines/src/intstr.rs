//! IntOrString values (`5`, `"20%"`) resolved against a total — the one place kruise-rs parses
//! them. Go has two flavours and OpenKruise uses both, so both are here, named after the Go
//! function they reproduce:
//!
//! - [`scaled_value`] — apimachinery `intstr.GetScaledValueFromIntOrPercent`: the percentage is
//!   an integer (`strconv.Atoi`), `"12.5%"` is an error. Used by Kubernetes-style knobs
//!   (StatefulSet `maxUnavailable`, CloneSet `maxSurge`/`maxUnavailable` in the controller).
//! - [`scaled_value_fractional`] — OpenKruise `util.GetScaledValueFromIntOrPercent`: the
//!   percentage may be fractional (`strconv.ParseFloat`). Used by OpenKruise's own knobs
//!   (CloneSet `partition`, the webhooks' checks).
//!
//! Both: an integer is returned as is; `"N%"` is `N% of total`, rounded up when `round_up`, else
//! down; results saturate at the `i64` range. Errors carry Go's messages.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why an IntOrString does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntStrError {
    /// A string without a trailing `%`.
    #[error("invalid type: string is not a percentage")]
    NotAPercentage,
    /// The number before `%` does not parse (Go's `strconv` message).
    #[error("strconv.{func}: parsing {number:?}: invalid syntax")]
    InvalidNumber {
        /// `Atoi` or `ParseFloat`.
        func: &'static str,
        /// The text before `%`.
        number: String,
    },
}

/// The text form of an IntOrString (`5`, `20%`), as Go's `IntOrString.String()`.
pub fn text(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// The number before `%`, or [`IntStrError::NotAPercentage`].
fn percent_text(s: &str) -> Result<&str, IntStrError> {
    s.strip_suffix('%').ok_or(IntStrError::NotAPercentage)
}

/// apimachinery `GetScaledValueFromIntOrPercent` (integer percentages). See the module docs.
///
/// # Errors
/// [`IntStrError`] for a string that is not `<integer>%`.
pub fn scaled_value(v: &IntOrString, total: i64, round_up: bool) -> Result<i64, IntStrError> {
    match v {
        IntOrString::Int(i) => Ok(i64::from(*i)),
        IntOrString::String(s) => {
            let number = percent_text(s)?;
            let n: i64 = number.parse().map_err(|_| IntStrError::InvalidNumber {
                func: "Atoi",
                number: number.to_owned(),
            })?;
            let product = i128::from(n) * i128::from(total);
            let v = if round_up {
                product.div_euclid(100) + i128::from(product.rem_euclid(100) != 0)
            } else {
                product.div_euclid(100)
            };
            Ok(v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
        }
    }
}

/// OpenKruise `util.GetScaledValueFromIntOrPercent` (fractional percentages). See the module
/// docs.
///
/// # Errors
/// [`IntStrError`] for a string that is not `<number>%` (infinite and NaN numbers included).
pub fn scaled_value_fractional(
    v: &IntOrString,
    total: i64,
    round_up: bool,
) -> Result<i64, IntStrError> {
    match v {
        IntOrString::Int(i) => Ok(i64::from(*i)),
        IntOrString::String(s) => {
            let number = percent_text(s)?;
            let bad = || IntStrError::InvalidNumber {
                func: "ParseFloat",
                number: number.to_owned(),
            };
            let f: f64 = number.parse().map_err(|_| bad())?;
            if !f.is_finite() {
                return Err(bad());
            }
            let scaled = f * total as f64 / 100.0;
            let r = if round_up {
                scaled.ceil()
            } else {
                scaled.floor()
            };
            Ok(r.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
        }
    }
}

/// OpenKruise `util.CalculatePartitionReplicas`: the number of pods kept on the old revision
/// for `partition` out of `replicas` (fractional percentages, rounded up, so any non-zero
/// percentage keeps at least one old pod), except that a percentage below `100%` with more
/// than one replica lets at least one pod update; clamped to `[0, replicas]`. No partition is
/// 0. Shared by CloneSet and SidecarSet.
///
/// # Errors
/// [`IntStrError`] for a string that is not `<number>%`.
pub fn partition_replicas(
    partition: Option<&IntOrString>,
    replicas: i32,
) -> Result<i32, IntStrError> {
    let Some(p) = partition else {
        return Ok(0);
    };
    let v = scaled_value_fractional(p, i64::from(replicas), true)?;
    let mut v = v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
    if replicas > 1 && v == replicas && matches!(p, IntOrString::String(s) if s != "100%") {
        v = replicas - 1;
    }
    Ok(v.clamp(0, replicas.max(0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn integer_and_fractional_percentages_as_go() {
        assert_eq!(scaled_value(&IntOrString::Int(3), 10, true), Ok(3));
        assert_eq!(scaled_value(&s("25%"), 10, true), Ok(3));
        assert_eq!(scaled_value(&s("25%"), 10, false), Ok(2));
        assert_eq!(scaled_value(&s("0%"), 10, true), Ok(0));
        assert_eq!(
            scaled_value(&s("12.5%"), 8, true),
            Err(IntStrError::InvalidNumber {
                func: "Atoi",
                number: "12.5".into()
            })
        );
        assert_eq!(
            scaled_value(&s("12"), 8, true),
            Err(IntStrError::NotAPercentage)
        );
        assert_eq!(scaled_value_fractional(&s("12.5%"), 8, true), Ok(1));
        assert_eq!(scaled_value_fractional(&s("12.5%"), 7, false), Ok(0));
        assert_eq!(scaled_value_fractional(&s("150%"), 4, true), Ok(6));
        assert!(scaled_value_fractional(&s("inf%"), 4, true).is_err());
        assert_eq!(
            IntStrError::InvalidNumber {
                func: "ParseFloat",
                number: "x".into()
            }
            .to_string(),
            r#"strconv.ParseFloat: parsing "x": invalid syntax"#
        );
        assert_eq!(text(&s("20%")), "20%");
        assert_eq!(text(&IntOrString::Int(-1)), "-1");
    }

    proptest! {
        #[test]
        fn both_flavours_agree_on_integer_percentages(pct in 0i64..=1000, total in 0i64..=10_000, up: bool) {
            let v = s(&format!("{pct}%"));
            prop_assert_eq!(scaled_value(&v, total, up), scaled_value_fractional(&v, total, up));
        }
    }
}
