//! Kubernetes-style field errors (apimachinery's `k8s.io/apimachinery/pkg/util/validation/field`).
//!
//! A [`FieldError`] renders like apimachinery's `field.Error`
//! (`spec.replicas: Invalid value: -1: must be greater than or equal to 0`) and an error list
//! renders like `ErrorList.ToAggregate()` (one error alone, several as `[a, b]`), which is the
//! message OpenKruise's webhooks return on a denial. Bad values are carried as JSON and rendered
//! as Go renders scalars (strings quoted, numbers bare); Go prints structs and maps with `%#v`
//! (`core.SecurityContext{...}`, `map[string]string{...}`), kruise-rs as compact JSON.

use std::fmt;

use serde_json::Value;

/// A dotted field path with list indexes and map keys, e.g. `spec.template.spec.containers[0].image`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// A path starting at `root` (e.g. `"spec"`).
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path one field deeper (`.child`).
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_owned())
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// The path of list element `i` (`[i]`).
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{i}]", self.0))
    }

    /// The path `child` levels deeper, one `.name` per element (Go's `Child(a, b, ...)`).
    pub fn children(&self, names: &[&str]) -> Self {
        names.iter().fold(self.clone(), |p, n| p.child(n))
    }

    /// The path of a map entry or named list element (`[key]`).
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field (apimachinery's `field.ErrorType`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `Invalid value: <value>`.
    Invalid(Value),
    /// `Invalid value: <text>` for a value Go prints with its `String()` method, unquoted
    /// (resource names, quantities).
    InvalidStringer(String),
    /// `Required value`.
    Required,
    /// `Forbidden`.
    Forbidden,
    /// `Duplicate value: <value>`.
    Duplicate(Value),
    /// `Not found: <value>`.
    NotFound(Value),
    /// `Unsupported value: <value>: supported values: "a", "b"`.
    NotSupported(Value, Vec<String>),
    /// `Too long` (the detail says how long it may be; the value is not shown).
    TooLong,
    /// `Too many: <count>`.
    TooMany(Value),
    /// `Internal error`.
    Internal,
}

/// One field error: the path, the kind (with the offending value) and a free-text detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field the error is about.
    pub path: Path,
    /// The kind of error, carrying the bad value where the kind has one.
    pub kind: ErrorKind,
    /// Extra explanation; may be empty.
    pub detail: String,
}

/// The errors of one validation run, in the order they were found.
pub type ErrorList = Vec<FieldError>;

impl FieldError {
    /// `path: Invalid value: value: detail`.
    pub fn invalid(path: Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Invalid(value.into()),
            detail: detail.into(),
        }
    }

    /// `path: Invalid value: text: detail` where Go shows the value through its `String()`
    /// method (unquoted), e.g. a resource name or a quantity.
    pub fn invalid_stringer(
        path: Path,
        text: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            path,
            kind: ErrorKind::InvalidStringer(text.into()),
            detail: detail.into(),
        }
    }

    /// `path: Required value[: detail]`.
    pub fn required(path: Path, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Required,
            detail: detail.into(),
        }
    }

    /// `path: Forbidden: detail`.
    pub fn forbidden(path: Path, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Forbidden,
            detail: detail.into(),
        }
    }

    /// `path: Duplicate value: value`.
    pub fn duplicate(path: Path, value: impl Into<Value>) -> Self {
        Self {
            path,
            kind: ErrorKind::Duplicate(value.into()),
            detail: String::new(),
        }
    }

    /// `path: Not found: value`.
    pub fn not_found(path: Path, value: impl Into<Value>) -> Self {
        Self {
            path,
            kind: ErrorKind::NotFound(value.into()),
            detail: String::new(),
        }
    }

    /// `path: Unsupported value: value: supported values: "a", "b"`.
    pub fn not_supported(path: Path, value: impl Into<Value>, supported: &[&str]) -> Self {
        Self {
            path,
            kind: ErrorKind::NotSupported(
                value.into(),
                supported.iter().map(|s| (*s).to_owned()).collect(),
            ),
            detail: String::new(),
        }
    }
}

impl FieldError {
    /// `path: Too long: may not be more than <max> bytes` (`field.TooLong`).
    pub fn too_long(path: Path, max: usize) -> Self {
        Self {
            path,
            kind: ErrorKind::TooLong,
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// `path: Too many: <actual>: must have at most <max> items` (`field.TooMany`).
    pub fn too_many(path: Path, actual: usize, max: usize) -> Self {
        Self {
            path,
            kind: ErrorKind::TooMany(actual.into()),
            detail: format!("must have at most {max} items"),
        }
    }

    /// `path: Internal error: detail` (`field.InternalError`).
    pub fn internal(path: Path, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Internal,
            detail: detail.into(),
        }
    }

    /// The same error with a different detail (Go code that sets `err.Detail` afterwards).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }
}

/// Renders a value as apimachinery does in field errors: strings quoted, numbers and booleans
/// bare, `null` as `null`, anything else as compact JSON.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path)?;
        match &self.kind {
            ErrorKind::Invalid(v) => write!(f, "Invalid value: {}", render_value(v))?,
            ErrorKind::InvalidStringer(t) => write!(f, "Invalid value: {t}")?,
            ErrorKind::Required => f.write_str("Required value")?,
            ErrorKind::Forbidden => f.write_str("Forbidden")?,
            ErrorKind::Duplicate(v) => write!(f, "Duplicate value: {}", render_value(v))?,
            ErrorKind::NotFound(v) => write!(f, "Not found: {}", render_value(v))?,
            ErrorKind::TooLong => f.write_str("Too long")?,
            ErrorKind::TooMany(v) => write!(f, "Too many: {}", render_value(v))?,
            ErrorKind::Internal => f.write_str("Internal error")?,
            ErrorKind::NotSupported(v, supported) => {
                write!(f, "Unsupported value: {}", render_value(v))?;
                if !supported.is_empty() {
                    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
                    write!(f, ": supported values: {}", quoted.join(", "))?;
                }
            }
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// The denial message for a list of errors, like `ErrorList.ToAggregate().Error()`: the single
/// message when there is one error, `[m1, m2]` for several (duplicates removed); `None` when the
/// list is empty.
pub fn aggregate(errs: &[FieldError]) -> Option<String> {
    let mut msgs: Vec<String> = Vec::new();
    for e in errs {
        let m = e.to_string();
        if !msgs.contains(&m) {
            msgs.push(m);
        }
    }
    match msgs.len() {
        0 => None,
        1 => msgs.pop(),
        _ => Some(format!("[{}]", msgs.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_like_apimachinery() {
        let p = Path::new("spec").child("replicas");
        assert_eq!(
            FieldError::invalid(p.clone(), -1, "must be greater than or equal to 0").to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::required(Path::new("spec").child("selector"), "").to_string(),
            "spec.selector: Required value"
        );
        assert_eq!(
            FieldError::not_supported(Path::new("spec").child("x"), json!("Never"), &["Always"])
                .to_string(),
            "spec.x: Unsupported value: \"Never\": supported values: \"Always\""
        );
        assert_eq!(
            FieldError::forbidden(p.clone(), "no").to_string(),
            "spec.replicas: Forbidden: no"
        );
        assert_eq!(
            FieldError::duplicate(Path::new("a").index(1).child("name"), "x").to_string(),
            "a[1].name: Duplicate value: \"x\""
        );
        assert_eq!(
            FieldError::not_found(Path::new("m").key("k"), "v").to_string(),
            "m[k]: Not found: \"v\""
        );
    }

    #[test]
    fn aggregate_one_or_many() {
        assert_eq!(aggregate(&[]), None);
        let a = FieldError::required(Path::new("a"), "");
        let b = FieldError::required(Path::new("b"), "x");
        assert_eq!(
            aggregate(std::slice::from_ref(&a)).unwrap(),
            "a: Required value"
        );
        assert_eq!(
            aggregate(&[a.clone(), b, a]).unwrap(),
            "[a: Required value, b: Required value: x]"
        );
    }
}
