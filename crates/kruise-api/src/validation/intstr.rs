//! Kubernetes' IntOrString rules (`k8s.io/kubernetes/pkg/apis/apps/validation`,
//! `k8s.io/apimachinery/pkg/util/validation`) as OpenKruise's webhooks apply them, with the
//! value printed as apimachinery prints an `intstr.IntOrString` in a field error: Go's `%#v`
//! (`intstr.IntOrString{Type:1, IntVal:0, StrVal:"20%"}`), since the type's `String` method has
//! a pointer receiver and `field.Error` dereferences pointers.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::field::{ErrorList, FieldError, Path};

/// apimachinery's `IsValidPercent` message.
pub const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// Go's `%#v` of an `intstr.IntOrString`: `intstr.IntOrString{Type:0, IntVal:5, StrVal:""}` or
/// `intstr.IntOrString{Type:1, IntVal:0, StrVal:"20%"}` (the string quoted as Go's `%q`).
pub fn go_sharp_v(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(n) => format!("intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}"),
        IntOrString::String(s) => {
            format!(
                "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                go_quote(s)
            )
        }
    }
}

/// Go's `%#v` of a `[]intstr.IntOrString` (`[]intstr.IntOrString(nil)` when absent).
pub fn go_sharp_v_slice(list: Option<&[IntOrString]>) -> String {
    match list {
        None => "[]intstr.IntOrString(nil)".to_owned(),
        Some(items) => format!(
            "[]intstr.IntOrString{{{}}}",
            items.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
    }
}

pub use super::gofmt::quote as go_quote;

/// `field.Invalid(path, intOrString, detail)`: the value printed as Go prints it.
pub fn invalid(path: Path, v: &IntOrString, detail: impl Into<String>) -> FieldError {
    FieldError::invalid_stringer(path, go_sharp_v(v), detail)
}

/// apimachinery's `IsValidPercent`: `^[0-9]+%$`; the number before `%` when it is one.
pub fn percent_value(v: &IntOrString) -> Option<i64> {
    let IntOrString::String(s) = v else {
        return None;
    };
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<i64>().unwrap_or(i64::MAX))
}

/// apps validation `ValidatePositiveIntOrPercent`: a string must be a percentage (`N%`), an
/// integer must be `>= 0` (`ValidateNonnegativeField`, the number printed bare).
pub fn validate_positive_int_or_percent(v: &IntOrString, path: &Path) -> ErrorList {
    match v {
        IntOrString::String(_) if percent_value(v).is_none() => {
            vec![invalid(path.clone(), v, PERCENT_MSG)]
        }
        IntOrString::Int(n) if *n < 0 => vec![FieldError::invalid(
            path.clone(),
            i64::from(*n),
            "must be greater than or equal to 0",
        )],
        _ => ErrorList::new(),
    }
}

/// apps validation `IsNotMoreThan100Percent`: a percentage above 100 is refused.
pub fn is_not_more_than_100_percent(v: &IntOrString, path: &Path) -> ErrorList {
    match percent_value(v) {
        Some(n) if n > 100 => vec![invalid(path.clone(), v, "must not be greater than 100%")],
        _ => ErrorList::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(
            go_sharp_v(&IntOrString::Int(-1)),
            r#"intstr.IntOrString{Type:0, IntVal:-1, StrVal:""}"#
        );
        assert_eq!(
            go_sharp_v(&IntOrString::String("0%".into())),
            r#"intstr.IntOrString{Type:1, IntVal:0, StrVal:"0%"}"#
        );
        assert_eq!(
            go_sharp_v_slice(Some(&[
                IntOrString::Int(-1),
                IntOrString::String("a".into())
            ])),
            r#"[]intstr.IntOrString{intstr.IntOrString{Type:0, IntVal:-1, StrVal:""}, intstr.IntOrString{Type:1, IntVal:0, StrVal:"a"}}"#
        );
        assert_eq!(go_sharp_v_slice(None), "[]intstr.IntOrString(nil)");
    }

    #[test]
    fn positive_int_or_percent() {
        let p = Path::new("spec").child("x");
        assert!(validate_positive_int_or_percent(&IntOrString::String("5%".into()), &p).is_empty());
        assert_eq!(
            validate_positive_int_or_percent(&IntOrString::String("5".into()), &p)[0].to_string(),
            format!(
                r#"spec.x: Invalid value: intstr.IntOrString{{Type:1, IntVal:0, StrVal:"5"}}: {PERCENT_MSG}"#
            )
        );
        assert_eq!(
            validate_positive_int_or_percent(&IntOrString::Int(-2), &p)[0].to_string(),
            "spec.x: Invalid value: -2: must be greater than or equal to 0"
        );
        assert_eq!(
            is_not_more_than_100_percent(&IntOrString::String("150%".into()), &p)[0].to_string(),
            r#"spec.x: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%"#
        );
    }
}
