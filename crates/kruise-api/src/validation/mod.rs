//! Pure validation rules of the Kubernetes API machinery that OpenKruise's admission webhooks
//! apply, as plain functions over the typed objects (no I/O):
//!
//! - [`field`]: field paths and errors, rendered as apimachinery renders them;
//! - [`names`]: the string rules (DNS-1123 names, qualified names, label values, port names,
//!   env var names, ...) with Kubernetes' messages;
//! - [`meta`]: labels, annotations, label selectors and object metadata;
//! - [`gofmt`]: Go's `fmt` renderings that messages embed (`%q`, selectors' `String()`, `%+v`);
//! - [`intstr`]: IntOrString rules (`ValidatePositiveIntOrPercent`, `IsNotMoreThan100Percent`)
//!   with values printed as Go prints them;
//! - [`quantity`]: resource quantities (parsing, comparison, canonical form);
//! - [`pod`]: Kubernetes' pod template validation (`ValidatePodTemplateSpec`).
//!
//! The rules follow Kubernetes v1.32 (`k8s.io/kubernetes` v1.32.10, `k8s.io/apimachinery`
//! v0.32.10), the libraries OpenKruise v1.9.0 is built with.

pub mod field;
pub mod gofmt;
pub mod intstr;
pub mod meta;
pub mod names;
pub mod pod;
pub mod quantity;

pub use field::{ErrorKind, ErrorList, FieldError, Path, aggregate, render_value};
pub use pod::{PodValidationOptions, validate_pod_spec, validate_pod_template_spec};
