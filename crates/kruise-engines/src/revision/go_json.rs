//! Byte-exact emulation of how OpenKruise (Go) serialises revision data.
//!
//! OpenKruise builds a ControllerRevision's data by encoding the workload with Go's
//! `encoding/json` (typed structs of `k8s.io/api` v0.32), decoding the result into a generic
//! `map[string]interface{}` and encoding that map again. The revision name is a hash of those
//! bytes, so reproducing the name requires reproducing the bytes. Two steps matter:
//!
//! 1. **Typed encoding** ([`normalize`]): Go always writes non-pointer struct fields (for example
//!    `metadata.creationTimestamp: null` and `resources: {}` on every container) and drops
//!    `omitempty` fields holding their zero value (`""`, `0`, `false`, `[]`, `{}`), while the
//!    Rust types (k8s-openapi) write exactly what is set. [`normalize`] walks a JSON value with a
//!    table of the Go field shapes of `k8s.io/api` v0.32 (`go_types_v1_32.txt`, extracted by
//!    reflection over the Go types of v0.32.10 by `make golden`, hack/golden) and applies Go's
//!    rules. Fields unknown to that table (newer than Kubernetes 1.32) are kept unchanged.
//! 2. **Generic encoding** ([`to_vec`]): object keys sorted byte-wise, `<`, `>`, `&`, U+2028 and
//!    U+2029 escaped as `\u00xx`/`\u20xx`, numbers printed the way Go prints a `float64`.
//!
//! Resource quantities are written as Go writes a decoded `resource.Quantity`
//! (`kruise_api::validation::quantity::go_json_text`: `"0.5"` becomes `"500m"`, a canonical
//! string is kept). Not reproduced: Go re-formats timestamps; they are kept as written. A JSON
//! number given for a quantity is read back as serde_json prints it (`1e3` as `1000.0`, which
//! Go would keep as `1e3`).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// Go type whose field table drives [`normalize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoType {
    /// `k8s.io/api/core/v1.PodTemplateSpec`.
    PodTemplateSpec,
    /// `k8s.io/api/core/v1.PersistentVolumeClaim`.
    PersistentVolumeClaim,
    /// `k8s.io/api/core/v1.Pod`.
    Pod,
    /// OpenKruise v1.9.0 `apps/v1alpha1.CloneSet`.
    CloneSet,
    /// OpenKruise v1.9.0 `apps/v1alpha1.StatefulSet`.
    StatefulSetV1alpha1,
    /// OpenKruise v1.9.0 `apps/v1beta1.StatefulSet`.
    StatefulSetV1beta1,
    /// OpenKruise v1.9.0 `apps/v1alpha1.DaemonSet`.
    DaemonSetV1alpha1,
    /// OpenKruise v1.9.0 `apps/v1beta1.DaemonSet`.
    DaemonSetV1beta1,
    /// OpenKruise v1.9.0 `apps/v1alpha1.SidecarSet`.
    SidecarSetV1alpha1,
    /// OpenKruise v1.9.0 `apps/v1beta1.SidecarSet`.
    SidecarSetV1beta1,
    /// OpenKruise v1.9.0 `policy/v1alpha1.PodUnavailableBudget`.
    PodUnavailableBudget,
    /// OpenKruise v1.9.0 `apps/v1alpha1.BroadcastJob`.
    BroadcastJobV1alpha1,
    /// OpenKruise v1.9.0 `apps/v1beta1.BroadcastJob`.
    BroadcastJobV1beta1,
    /// OpenKruise v1.9.0 `apps/v1alpha1.AdvancedCronJob`.
    AdvancedCronJobV1alpha1,
    /// OpenKruise v1.9.0 `apps/v1beta1.AdvancedCronJob`.
    AdvancedCronJobV1beta1,
    /// OpenKruise v1.9.0 `apps/v1alpha1.PersistentPodState`.
    PersistentPodState,
    /// OpenKruise v1.9.0 `apps/v1alpha1.UnitedDeployment`.
    UnitedDeployment,
    /// OpenKruise v1.9.0 `apps/v1alpha1.ContainerRecreateRequest`.
    ContainerRecreateRequest,
    /// OpenKruise v1.9.0 `apps/v1alpha1.PodProbeMarker`.
    PodProbeMarker,
}

impl GoType {
    fn name(self) -> &'static str {
        match self {
            GoType::PodTemplateSpec => "PodTemplateSpec",
            GoType::PersistentVolumeClaim => "PersistentVolumeClaim",
            GoType::Pod => "Pod",
            GoType::CloneSet => "apps/v1alpha1.CloneSet",
            GoType::StatefulSetV1alpha1 => "apps/v1alpha1.StatefulSet",
            GoType::StatefulSetV1beta1 => "apps/v1beta1.StatefulSet",
            GoType::DaemonSetV1alpha1 => "apps/v1alpha1.DaemonSet",
            GoType::DaemonSetV1beta1 => "apps/v1beta1.DaemonSet",
            GoType::SidecarSetV1alpha1 => "apps/v1alpha1.SidecarSet",
            GoType::SidecarSetV1beta1 => "apps/v1beta1.SidecarSet",
            GoType::PodUnavailableBudget => "policy/v1alpha1.PodUnavailableBudget",
            GoType::BroadcastJobV1alpha1 => "apps/v1alpha1.BroadcastJob",
            GoType::BroadcastJobV1beta1 => "apps/v1beta1.BroadcastJob",
            GoType::AdvancedCronJobV1alpha1 => "apps/v1alpha1.AdvancedCronJob",
            GoType::AdvancedCronJobV1beta1 => "apps/v1beta1.AdvancedCronJob",
            GoType::PersistentPodState => "apps/v1alpha1.PersistentPodState",
            GoType::UnitedDeployment => "apps/v1alpha1.UnitedDeployment",
            GoType::ContainerRecreateRequest => "apps/v1alpha1.ContainerRecreateRequest",
            GoType::PodProbeMarker => "apps/v1alpha1.PodProbeMarker",
        }
    }
}

/// Go `encoding/json` bytes of a generic JSON value (what `json.Marshal` writes for the
/// equivalent `map[string]interface{}` tree).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_value(value, &mut out);
    out
}

/// [`to_vec`] as a `String` (the output is always valid UTF-8).
pub fn to_string(value: &Value) -> String {
    String::from_utf8(to_vec(value)).unwrap_or_default()
}

/// Rewrites `value` (the JSON of a `ty`) into what Go's typed `encoding/json` would produce after
/// decoding it into the Go struct and encoding it again. See the module documentation.
pub fn normalize(value: &mut Value, ty: GoType) {
    let schema = schema();
    normalize_struct_value(schema, value, ty.name());
}

/// [`normalize`], then what Go's decoding of `decoded_from` (the JSON the value was decoded
/// from) would have kept: a slice or map field without `omitempty` that Go decoded from an
/// absent or `null` value stays `nil` and encodes as `null`, where the Rust type (a plain `Vec`
/// or map, e.g. `spec.containers`) gives `[]`/`{}`. This is what an OpenKruise mutating webhook
/// answers with: the object decoded from the request, defaulted and encoded again.
pub fn normalize_decoded(value: &mut Value, decoded_from: &Value, ty: GoType) {
    let schema = schema();
    normalize_struct_value(schema, value, ty.name());
    restore_nil(schema, value, Some(decoded_from), &Kind::Struct(ty.name()));
}

/// Fills in what Go's decoding into the typed object `ty` would hold although the JSON lacks
/// it: every absent (or `null`) field without `omitempty` gets its zero value (`""`, `0`,
/// `false`, `[]`, `{}`, and a non-pointer struct an object filled the same way). Pointer fields
/// stay absent. In `k8s.io/api` a field without `omitempty` is one the OpenAPI schema, and so
/// k8s-openapi's decoder, calls required: after this, a workload decodes into the Rust types
/// wherever Go decodes it (`containers` absent, a container without `name`) and the webhook
/// judges the same zero values Go's does. [`normalize_decoded`] writes the `nil`s back.
pub fn fill_go_zero_values(value: &mut Value, ty: GoType) {
    fill_zero(schema(), value, &Kind::Struct(ty.name()));
}

fn fill_zero(schema: &Schema, value: &mut Value, kind: &Kind) {
    match (kind, value) {
        (Kind::Struct(name), Value::Object(map)) => {
            for field in schema.get(name).into_iter().flatten() {
                let absent = map.get(field.name).is_none_or(Value::is_null);
                if absent && !field.omitempty {
                    let zero = match &field.kind {
                        Kind::Str | Kind::Bytes => Some(Value::String(String::new())),
                        Kind::Int(_) => Some(Value::from(0)),
                        Kind::Bool => Some(Value::Bool(false)),
                        Kind::Slice(_) => Some(Value::Array(Vec::new())),
                        Kind::Map(_) | Kind::Struct(_) => Some(Value::Object(Map::new())),
                        Kind::Ptr(_) | Kind::Custom(_) => None,
                    };
                    if let Some(z) = zero {
                        map.insert(field.name.to_owned(), z);
                    }
                } else if absent && matches!(field.kind, Kind::Struct(_)) {
                    map.insert(field.name.to_owned(), Value::Object(Map::new()));
                }
                if let Some(v) = map.get_mut(field.name) {
                    fill_zero(schema, v, &field.kind);
                }
            }
        }
        (Kind::Ptr(inner), v) => fill_zero(schema, v, inner),
        (Kind::Slice(inner), Value::Array(items)) => {
            items.iter_mut().for_each(|v| fill_zero(schema, v, inner));
        }
        (Kind::Map(inner), Value::Object(entries)) => {
            entries
                .values_mut()
                .for_each(|v| fill_zero(schema, v, inner));
        }
        _ => {}
    }
}

/// Where Go's `encoding/json` would refuse to decode a JSON value into the typed Go object:
/// the field's path (`spec.updateStrategy.rollingUpdate`, list indices as `[0]`), why, and
/// the error text Go's decoder returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeMismatch {
    /// Path of the offending field, dotted with `[i]` indices; empty for the root.
    pub path: String,
    /// Go's reason, e.g. `cannot unmarshal array into a Go struct of type RollingUpdateStatefulSetStrategy`.
    pub reason: String,
    /// The error as Go's `json.Unmarshal` returns it (what OpenKruise's webhook denies with):
    /// `json: cannot unmarshal number 2147483648 into Go struct field CloneSetSpec.spec.replicas
    /// of type int32` (`UnmarshalTypeError`: the JSON value, the innermost Go struct and the
    /// path of JSON field names from the root, without list indices or map keys, and the Go
    /// type), or a custom decoder's own message (a malformed quantity).
    pub message: String,
}

/// Checks that Go's `json.Unmarshal` into the Go type `ty` accepts `value` where the shapes are
/// concerned, reporting a refusal: a struct given anything but an
/// object, a slice anything but an array, a map anything but an object, a string/bool/integer
/// field a value of another JSON type (or a number with a fraction for an integer), a
/// `resource.Quantity` a string that `resource.ParseQuantity` refuses, an `IntOrString`
/// anything but a string or int32, a `metav1.Time` anything but a string. `null` is always
/// accepted (Go leaves the zero value). Which refusal is reported follows Go (see
/// `check_kind`): the first error of a type's own decoder, else the first type mismatch, in
/// document order. serde's derived decoders are laxer in one place that
/// matters (a struct may be given as an array), so admission checks this before decoding.
/// Fields unknown to the type tables are not looked at.
pub fn check_decodable(value: &Value, ty: GoType) -> Result<(), DecodeMismatch> {
    let mut saved = None;
    let root = GoCtx {
        path: "",
        fields: "",
        in_struct: None,
        go_type: "",
    };
    check_kind(schema(), value, &Kind::Struct(ty.name()), &root, &mut saved)?;
    saved.map_or(Ok(()), Err)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Where the decoder is, as Go's decoder tracks it for its errors.
struct GoCtx<'a> {
    /// Dotted path with list indices and map keys (kruise-rs' field paths).
    path: &'a str,
    /// Go's `errorContext.FieldStack`: struct field names only, joined by `.`.
    fields: &'a str,
    /// Go's `errorContext.Struct`: the struct whose field is being decoded.
    in_struct: Option<&'static str>,
    /// The Go type of the value at this place, as `reflect` prints it (empty when unknown).
    go_type: &'a str,
}

/// `reflect.Type.Name()` of a table struct name (`apps/v1alpha1.CloneSetSpec` → `CloneSetSpec`).
fn short_name(table_name: &str) -> &str {
    table_name.rsplit('.').next().unwrap_or(table_name)
}

/// The Go type a table struct name prints as (`apps/v1alpha1.CloneSetSpec` →
/// `v1alpha1.CloneSetSpec`; core and meta types are in packages named `v1`).
fn struct_type_string(table_name: &str) -> String {
    match table_name.rsplit_once('.') {
        Some((pkg, name)) => format!("{}.{name}", pkg.rsplit('/').next().unwrap_or(pkg)),
        None => format!("v1.{table_name}"),
    }
}

/// Go's `UnmarshalTypeError` text for `value_text` (`number`, `number 1.5`, `string`, ...)
/// at `ctx`, whose Go type is `go_type`.
fn type_error(ctx: &GoCtx<'_>, value_text: &str, go_type: &str) -> String {
    match ctx.in_struct {
        Some(s) => format!(
            "json: cannot unmarshal {value_text} into Go struct field {}.{} of type {go_type}",
            short_name(s),
            ctx.fields
        ),
        None => format!("json: cannot unmarshal {value_text} into Go value of type {go_type}"),
    }
}

/// A type mismatch at `ctx`: kruise-rs' reason (`what` is the Go kind it names) and Go's
/// `UnmarshalTypeError` for `value_text` into `go_type`.
fn mismatch_at(
    ctx: &GoCtx<'_>,
    value: &Value,
    what: &str,
    value_text: &str,
    go_type: &str,
) -> DecodeMismatch {
    DecodeMismatch {
        path: ctx.path.to_owned(),
        reason: format!(
            "cannot unmarshal {} into a Go value of type {what}",
            json_kind(value)
        ),
        message: type_error(ctx, value_text, go_type),
    }
}

/// The Go type at `ctx` (a pointer is followed: Go's decoder allocates it and decodes into the
/// element), or `fallback` where the tables do not say.
fn go_type_or<'a>(ctx: &GoCtx<'a>, fallback: &'a str) -> &'a str {
    match ctx.go_type.trim_start_matches('*') {
        "" => fallback,
        t => t,
    }
}

/// Walks `value` as Go's decoder does, in document order (the order of `value`'s keys). Like
/// Go: a value of the wrong JSON type (or an integer out of range) is remembered in `saved` (the
/// first one) and decoding goes on; an error of a type's own `UnmarshalJSON` (Quantity,
/// IntOrString, Time) ends decoding at once and wins over a remembered one.
fn check_kind(
    schema: &Schema,
    value: &Value,
    kind: &Kind,
    ctx: &GoCtx<'_>,
    saved: &mut Option<DecodeMismatch>,
) -> Result<(), DecodeMismatch> {
    let mut save = |m: DecodeMismatch| {
        saved.get_or_insert(m);
        Ok(())
    };
    let simple = |what: &str, fallback: &str| {
        mismatch_at(
            ctx,
            value,
            what,
            json_kind(value),
            go_type_or(ctx, fallback),
        )
    };
    match (kind, value) {
        (_, Value::Null) => Ok(()),
        (Kind::Ptr(inner), _) => check_kind(schema, value, inner, ctx, saved),
        (Kind::Struct(name), Value::Object(map)) => check_struct(schema, name, map, ctx, saved),
        (Kind::Struct(name), _) => save(simple(
            name.rsplit('.').next().unwrap_or(name),
            &struct_type_string(name),
        )),
        (Kind::Slice(inner), Value::Array(items)) => {
            let elem = ctx.go_type.trim_start_matches('*').strip_prefix("[]");
            items.iter().enumerate().try_for_each(|(i, v)| {
                let p = format!("{}[{i}]", ctx.path);
                let c = GoCtx {
                    path: &p,
                    go_type: elem.unwrap_or(""),
                    ..*ctx
                };
                check_kind(schema, v, inner, &c, saved)
            })
        }
        (Kind::Slice(_), _) => save(simple("slice", "[]interface {}")),
        (Kind::Map(inner), Value::Object(entries)) => {
            let elem = ctx
                .go_type
                .trim_start_matches('*')
                .strip_prefix("map[string]");
            entries.iter().try_for_each(|(k, v)| {
                let p = format!("{}.{k}", ctx.path);
                let c = GoCtx {
                    path: &p,
                    go_type: elem.unwrap_or(""),
                    ..*ctx
                };
                check_kind(schema, v, inner, &c, saved)
            })
        }
        (Kind::Map(_), _) => save(simple("map", "map[string]interface {}")),
        (Kind::Str | Kind::Bytes, Value::String(_)) | (Kind::Bool, Value::Bool(_)) => Ok(()),
        (Kind::Str, _) => save(simple("string", "string")),
        (Kind::Bytes, _) => save(simple("string", "[]uint8")),
        (Kind::Bool, _) => save(simple("bool", "bool")),
        (Kind::Int(bits), _) => match int_mismatch(ctx, value, *bits) {
            Some(m) => save(m),
            None => Ok(()),
        },
        (Kind::Custom(custom), _) => check_custom(*custom, value, ctx),
    }
}

/// The fields of struct `name` given as an object, in document order: each known field is
/// checked with the struct as Go's error context (`errorContext.Struct`) and its JSON name
/// added to the field stack; unknown fields are skipped, as Go's decoder skips them.
fn check_struct(
    schema: &Schema,
    name: &'static str,
    map: &serde_json::Map<String, Value>,
    ctx: &GoCtx<'_>,
    saved: &mut Option<DecodeMismatch>,
) -> Result<(), DecodeMismatch> {
    let fields = schema.get(name);
    for (key, v) in map {
        let Some(field) = fields.and_then(|f| f.iter().find(|f| f.name == key)) else {
            continue;
        };
        let join = |base: &str| {
            if base.is_empty() {
                key.clone()
            } else {
                format!("{base}.{key}")
            }
        };
        let (p, f) = (join(ctx.path), join(ctx.fields));
        let inner = GoCtx {
            path: &p,
            fields: &f,
            in_struct: Some(name),
            go_type: field.go_type,
        };
        check_kind(schema, v, &field.kind, &inner, saved)?;
    }
    Ok(())
}

/// An integer field given `value`: `None` when Go decodes it, else the mismatch (an integer Go
/// cannot hold puts its literal into the message: `number 2147483648`, `number 1.5`).
fn int_mismatch(ctx: &GoCtx<'_>, value: &Value, bits: u8) -> Option<DecodeMismatch> {
    let what = if bits == 32 { "int32" } else { "int64" };
    let Value::Number(n) = value else {
        return Some(mismatch_at(
            ctx,
            value,
            what,
            json_kind(value),
            go_type_or(ctx, what),
        ));
    };
    let in_range = match (n.as_i64(), bits) {
        (Some(n), 32) => i32::try_from(n).is_ok(),
        (Some(_), _) => true,
        (None, _) => n.is_u64() && bits > 32,
    };
    (!in_range).then(|| {
        mismatch_at(
            ctx,
            value,
            what,
            &format!("number {n}"),
            go_type_or(ctx, what),
        )
    })
}

/// A type with its own `UnmarshalJSON`: its error ends decoding at once.
fn check_custom(custom: Custom, value: &Value, ctx: &GoCtx<'_>) -> Result<(), DecodeMismatch> {
    match (custom, value) {
        (Custom::IntOrString, Value::String(_)) => Ok(()),
        (Custom::IntOrString, Value::Number(n))
            if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) =>
        {
            Ok(())
        }
        // IntOrString's UnmarshalJSON decodes a non-string into its int32 field; the decoder
        // adds the field's context to that error.
        (Custom::IntOrString, Value::Number(n)) => Err(mismatch_at(
            ctx,
            value,
            "int32",
            &format!("number {n}"),
            "int32",
        )),
        (Custom::IntOrString, _) => {
            Err(mismatch_at(ctx, value, "int32", json_kind(value), "int32"))
        }
        (Custom::Time, Value::String(_)) => Ok(()),
        // metav1.Time's UnmarshalJSON decodes a non-null value into a string first.
        (Custom::Time, _) => Err(mismatch_at(ctx, value, "Time", json_kind(value), "string")),
        (Custom::Quantity, _) => {
            let text = match value {
                Value::String(s) => s.trim().to_owned(),
                other => other.to_string(),
            };
            kruise_api::validation::quantity::parse_quantity(&text)
                .map(|_| ())
                .map_err(|e| DecodeMismatch {
                    path: ctx.path.to_owned(),
                    reason: e.to_string(),
                    message: e.to_string(),
                })
        }
        (Custom::Raw, _) => Ok(()),
    }
}

fn restore_nil(schema: &Schema, value: &mut Value, raw: Option<&Value>, kind: &Kind) {
    match (kind, value) {
        (Kind::Struct(name), Value::Object(map)) => {
            let Some(fields) = schema.get(name) else {
                return;
            };
            for field in fields {
                let Some(v) = map.get_mut(field.name) else {
                    continue;
                };
                let r = raw.and_then(|r| r.get(field.name)).filter(|r| !r.is_null());
                let empty_container = match (&field.kind, &*v) {
                    (Kind::Slice(_), Value::Array(a)) => a.is_empty(),
                    (Kind::Map(_), Value::Object(m)) => m.is_empty(),
                    _ => false,
                };
                if empty_container && !field.omitempty && r.is_none() {
                    *v = Value::Null;
                } else {
                    restore_nil(schema, v, r, &field.kind);
                }
            }
        }
        (Kind::Ptr(inner), v) => restore_nil(schema, v, raw, inner),
        (Kind::Slice(inner), Value::Array(items)) => {
            for (i, item) in items.iter_mut().enumerate() {
                restore_nil(schema, item, raw.and_then(|r| r.get(i)), inner);
            }
        }
        (Kind::Map(inner), Value::Object(entries)) => {
            for (k, item) in entries.iter_mut() {
                restore_nil(schema, item, raw.and_then(|r| r.get(k.as_str())), inner);
            }
        }
        _ => {}
    }
}

/// A string as Go's `encoding/json` quotes it (HTML-safe escapes, see [`to_vec`]).
pub fn quote(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_string(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Generic encoder

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Go decodes every JSON number into a float64 before encoding it again.
            let f = n.as_f64().unwrap_or(0.0);
            out.extend_from_slice(format_go_float(f).as_bytes());
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_value(&map[key.as_str()], out);
            }
            out.push(b'}');
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    // Runs of characters written as they are are copied at once.
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, c) in s.char_indices() {
        let escaped: &[u8] = match c {
            '"' => b"\\\"",
            '\\' => b"\\\\",
            '\u{8}' => b"\\b",
            '\u{c}' => b"\\f",
            '\n' => b"\\n",
            '\r' => b"\\r",
            '\t' => b"\\t",
            '\u{2028}' => b"\\u2028",
            '\u{2029}' => b"\\u2029",
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => {
                out.extend_from_slice(&bytes[run..i]);
                run = i + 1;
                let b = c as u32 as u8;
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 0xf) as usize]);
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        out.extend_from_slice(escaped);
        run = i + c.len_utf8();
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

/// A float64 as Go's `encoding/json` prints it: shortest round-trip digits, plain notation for
/// `1e-6 <= |f| < 1e21` (and zero), otherwise exponent notation like `1e+21` / `1.5e-7`.
fn format_go_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        return format!("{f}");
    }
    // Rust prints `1.5e-7` / `1e21`; Go prints `1.5e-07` / `1e+21` and then shortens a
    // two-digit negative exponent with a leading zero (`e-07` → `e-7`).
    let s = format!("{f:e}");
    let Some((mantissa, exp)) = s.split_once('e') else {
        return s;
    };
    match exp.strip_prefix('-') {
        Some(digits) => format!("{mantissa}e-{digits}"),
        None if exp.len() < 2 => format!("{mantissa}e+0{exp}"),
        None => format!("{mantissa}e+{exp}"),
    }
}

/// Go `encoding/json` bytes of `value` encoded as the typed Go value `ty`: like [`to_vec`], but
/// struct fields are written in Go declaration order and fields unknown to the Go type are left
/// out (what `json.Marshal` of the typed struct writes). Call [`normalize`] first.
pub fn to_vec_typed(value: &Value, ty: GoType) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_typed(schema(), value, &Kind::Struct(ty.name()), &mut out);
    out
}

fn write_typed(schema: &Schema, value: &Value, kind: &Kind, out: &mut Vec<u8>) {
    match (kind, value) {
        (Kind::Struct(name), Value::Object(map)) => {
            let Some(fields) = schema.get(name) else {
                write_value(value, out);
                return;
            };
            out.push(b'{');
            let mut first = true;
            for field in fields {
                let Some(v) = map.get(field.name) else {
                    continue;
                };
                if !first {
                    out.push(b',');
                }
                first = false;
                write_string(field.name, out);
                out.push(b':');
                write_typed(schema, v, &field.kind, out);
            }
            out.push(b'}');
        }
        (Kind::Ptr(inner), v) if !v.is_null() => write_typed(schema, v, inner, out),
        (Kind::Slice(inner), Value::Array(items)) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_typed(schema, item, inner, out);
            }
            out.push(b']');
        }
        (Kind::Map(inner), Value::Object(map)) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_typed(schema, &map[key.as_str()], inner, out);
            }
            out.push(b'}');
        }
        (Kind::Int(_), Value::Number(n)) if n.is_i64() || n.is_u64() => {
            out.extend_from_slice(n.to_string().as_bytes());
        }
        _ => write_value(value, out),
    }
}

// ---------------------------------------------------------------------------------------------
// Go struct shapes

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Str,
    /// An integer of this many bits (32 for `int32`, 64 for the others).
    Int(u8),
    Bool,
    Bytes,
    Struct(&'static str),
    Custom(Custom),
    Ptr(Box<Kind>),
    Slice(Box<Kind>),
    Map(Box<Kind>),
}

/// Types with their own JSON marshaller.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Custom {
    /// `metav1.Time`: zero value encodes as `null`.
    Time,
    /// `resource.Quantity`: zero value encodes as `"0"`.
    Quantity,
    /// `intstr.IntOrString`: zero value encodes as `0`.
    IntOrString,
    /// `metav1.FieldsV1`: raw JSON, only used behind a pointer.
    Raw,
}

#[derive(Debug)]
struct Field {
    name: &'static str,
    omitempty: bool,
    kind: Kind,
    /// The field's Go type as `reflect` prints it (`*int32`, `v1.PullPolicy`,
    /// `[]v1.Container`), named by Go's JSON decoding errors; empty in older tables.
    go_type: &'static str,
}

type Schema = HashMap<&'static str, Vec<Field>>;

const GO_TYPES: &str = include_str!("go_types_v1_32.txt");
/// OpenKruise's workload types (qualified names such as `apps/v1beta1.StatefulSetSpec`), from
/// the same generator (hack/golden `kruiseTypes`).
const GO_KRUISE_TYPES: &str = include_str!("go_types_kruise_v1_9.txt");

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut s = parse_schema(GO_TYPES);
        s.extend(parse_schema(GO_KRUISE_TYPES));
        s
    })
}

fn parse_schema(text: &'static str) -> Schema {
    let mut types = HashMap::new();
    for line in text.lines() {
        let Some((ty, fields)) = line.split_once(": ") else {
            continue;
        };
        let fields = fields
            .split(' ')
            .filter_map(|f| {
                let (head, shape) = f.split_once('=')?;
                let (kind, go_type) = shape.split_once('#').unwrap_or((shape, ""));
                let (name, omitempty) = match head.split_once(',') {
                    Some((name, opts)) => (name, opts.split(',').any(|o| o == "omitempty")),
                    None => (head, false),
                };
                Some(Field {
                    name,
                    omitempty,
                    kind: parse_kind(kind)?,
                    go_type,
                })
            })
            .collect();
        types.insert(ty, fields);
    }
    types
}

fn parse_kind(s: &'static str) -> Option<Kind> {
    let wrapped = |prefix: &str| {
        s.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(parse_kind)
            .map(Box::new)
    };
    Some(match s {
        "string" => Kind::Str,
        "bool" => Kind::Bool,
        "bytes" => Kind::Bytes,
        "int32" => Kind::Int(32),
        "int" | "int64" | "uint" | "uint32" | "uint64" | "float32" | "float64" => Kind::Int(64),
        _ if s.starts_with("ptr(") => Kind::Ptr(wrapped("ptr(")?),
        _ if s.starts_with("slice(") => Kind::Slice(wrapped("slice(")?),
        _ if s.starts_with("map(") => Kind::Map(wrapped("map(")?),
        _ => {
            if let Some(name) = s.strip_prefix("struct:") {
                Kind::Struct(name)
            } else if let Some(name) = s.strip_prefix("custom:") {
                Kind::Custom(match name {
                    "Time" | "MicroTime" => Custom::Time,
                    "Quantity" => Custom::Quantity,
                    "IntOrString" => Custom::IntOrString,
                    _ => Custom::Raw,
                })
            } else {
                return None;
            }
        }
    })
}

/// What Go writes for a field whose value is absent (zero): `None` if the field is omitted.
fn zero_encoding(schema: &Schema, field: &Field) -> Option<Value> {
    match &field.kind {
        Kind::Struct(name) => Some(zero_struct(schema, name)),
        Kind::Custom(Custom::Time) | Kind::Custom(Custom::Raw) => Some(Value::Null),
        Kind::Custom(Custom::Quantity) => Some(Value::String("0".to_owned())),
        Kind::Custom(Custom::IntOrString) => Some(Value::from(0)),
        _ if field.omitempty => None,
        Kind::Ptr(_) | Kind::Slice(_) | Kind::Map(_) | Kind::Bytes => Some(Value::Null),
        Kind::Str => Some(Value::String(String::new())),
        Kind::Int(_) => Some(Value::from(0)),
        Kind::Bool => Some(Value::Bool(false)),
    }
}

fn zero_struct(schema: &Schema, name: &str) -> Value {
    let mut map = Map::new();
    if let Some(fields) = schema.get(name) {
        for field in fields {
            if let Some(v) = zero_encoding(schema, field) {
                map.insert(field.name.to_owned(), v);
            }
        }
    }
    Value::Object(map)
}

/// Whether `omitempty` drops this (present, non-null) value.
fn is_go_empty(value: &Value, kind: &Kind) -> bool {
    match (kind, value) {
        (Kind::Str | Kind::Bytes, Value::String(s)) => s.is_empty(),
        (Kind::Int(_), Value::Number(n)) => n.as_f64() == Some(0.0),
        (Kind::Bool, Value::Bool(b)) => !*b,
        (Kind::Slice(_), Value::Array(a)) => a.is_empty(),
        (Kind::Map(_), Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

fn normalize_struct_value(schema: &Schema, value: &mut Value, name: &str) {
    match value {
        Value::Object(map) => normalize_struct(schema, map, name),
        // Go decodes `null` into a struct as its zero value.
        Value::Null => *value = zero_struct(schema, name),
        _ => {}
    }
}

fn normalize_struct(schema: &Schema, map: &mut Map<String, Value>, name: &str) {
    let Some(fields) = schema.get(name) else {
        return;
    };
    for field in fields {
        let present = match map.get_mut(field.name) {
            None | Some(Value::Null) => false,
            Some(v) if field.omitempty && is_go_empty(v, &field.kind) => false,
            Some(v) => {
                normalize_value(schema, v, &field.kind);
                true
            }
        };
        if !present {
            match zero_encoding(schema, field) {
                Some(zero) => {
                    map.insert(field.name.to_owned(), zero);
                }
                None => {
                    map.remove(field.name);
                }
            }
        }
    }
}

fn normalize_value(schema: &Schema, value: &mut Value, kind: &Kind) {
    match kind {
        Kind::Struct(name) => normalize_struct_value(schema, value, name),
        Kind::Ptr(inner) => normalize_value(schema, value, inner),
        Kind::Slice(inner) => {
            if let Value::Array(items) = value {
                for item in items {
                    normalize_value(schema, item, inner);
                }
            }
        }
        Kind::Map(inner) => {
            if let Value::Object(entries) = value {
                for item in entries.values_mut() {
                    normalize_value(schema, item, inner);
                }
            }
        }
        Kind::Custom(Custom::Quantity) => {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return,
            };
            if let Some(t) = kruise_api::validation::quantity::go_json_text(&text, false) {
                *value = Value::String(t);
            }
        }
        Kind::Custom(_) | Kind::Str | Kind::Int(_) | Kind::Bool | Kind::Bytes => {}
    }
}

/// The Go shape of the field at `path` (JSON field names) inside the struct `name`.
fn field_kind<'s>(schema: &'s Schema, name: &str, path: &[&str]) -> Option<&'s Kind> {
    let (first, rest) = path.split_first()?;
    let field = schema.get(name)?.iter().find(|f| f.name == *first)?;
    if rest.is_empty() {
        return Some(&field.kind);
    }
    let mut kind = &field.kind;
    while let Kind::Ptr(inner) = kind {
        kind = inner;
    }
    match kind {
        Kind::Struct(n) => field_kind(schema, n, rest),
        _ => None,
    }
}

/// [`normalize`] for the value of one field: `value` is rewritten as Go's typed encoding writes
/// the field at `path` (JSON field names, e.g. `["spec", "containers"]`) of a `ty` — for a list
/// of structs, each element. Nothing happens when `ty` has no such field.
pub fn normalize_field(value: &mut Value, ty: GoType, path: &[&str]) {
    let schema = schema();
    if let Some(kind) = field_kind(schema, ty.name(), path) {
        normalize_value(schema, value, kind);
    }
}

/// [`to_vec_typed`] for the value of one field (`path` as in [`normalize_field`]): the bytes Go's
/// `json.Marshal` writes for that field's Go value (`null` for a nil list). Call
/// [`normalize_field`] first. `None` when `ty` has no such field.
pub fn to_vec_typed_field(value: &Value, ty: GoType, path: &[&str]) -> Option<Vec<u8>> {
    let schema = schema();
    let kind = field_kind(schema, ty.name(), path)?;
    let mut out = Vec::with_capacity(256);
    write_typed(schema, value, kind, &mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_parses_every_line() {
        let schema = schema();
        assert_eq!(
            schema.len(),
            GO_TYPES.lines().count() + GO_KRUISE_TYPES.lines().count()
        );
        for fields in schema.values() {
            assert!(!fields.is_empty());
        }
        let container = &schema["Container"];
        let resources = container.iter().find(|f| f.name == "resources").unwrap();
        assert_eq!(resources.kind, Kind::Struct("ResourceRequirements"));
        assert!(resources.omitempty);
        // every referenced struct has a table entry
        fn check(schema: &Schema, kind: &Kind) {
            match kind {
                Kind::Struct(n) => assert!(schema.contains_key(n), "missing {n}"),
                Kind::Ptr(k) | Kind::Slice(k) | Kind::Map(k) => check(schema, k),
                _ => {}
            }
        }
        for fields in schema.values() {
            for f in fields {
                check(schema, &f.kind);
            }
        }
    }

    #[test]
    fn decodable_as_go_would_decode() {
        let ok = json!({"spec": {"selector": null, "replicas": 3, "updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}},
            "template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1}}}]}}}});
        assert_eq!(check_decodable(&ok, GoType::StatefulSetV1beta1), Ok(()));
        let array_as_struct = json!({"spec": {"updateStrategy": {"rollingUpdate": []}}});
        assert_eq!(
            check_decodable(&array_as_struct, GoType::StatefulSetV1beta1)
                .unwrap_err()
                .path,
            "spec.updateStrategy.rollingUpdate"
        );
        let bad_quantity = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "x"}}}]}}}});
        assert_eq!(
            check_decodable(&bad_quantity, GoType::CloneSet)
                .unwrap_err()
                .path,
            "spec.template.spec.containers[0].resources.limits.cpu"
        );
        let fraction = json!({"spec": {"replicas": 1.5}});
        assert!(check_decodable(&fraction, GoType::CloneSet).is_err());
    }

    #[test]
    fn encoder_sorts_keys_and_escapes_like_go() {
        let v = json!({"b": 1, "a": "<x>&\u{2028}\"\\\n\t\u{1}\u{8}\u{c}é", "$patch": "replace", "A": [true, null]});
        assert_eq!(
            to_string(&v),
            r#"{"$patch":"replace","A":[true,null],"a":"\u003cx\u003e\u0026\u2028\"\\\n\t\u0001\b\fé","b":1}"#
        );
    }

    #[test]
    fn floats_print_like_go() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (80.0, "80"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e22, "1.5e+22"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-10, "1e-10"),
            (9007199254740993.0, "9007199254740992"),
        ];
        for (f, want) in cases {
            assert_eq!(format_go_float(*f), *want, "{f}");
        }
        // integers beyond 2^53 lose precision as they do through Go's float64
        assert_eq!(to_string(&json!(9007199254740993u64)), "9007199254740992");
    }

    #[test]
    fn normalize_adds_go_struct_fields_and_drops_empty_values() {
        let mut v = json!({
            "metadata": {"labels": {"app": "a"}, "annotations": {}},
            "spec": {
                "containers": [{
                    "name": "main", "image": "nginx", "stdin": false, "args": [],
                    "ports": [{"containerPort": 80, "hostPort": 0}],
                    "env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
                    "securityContext": {},
                }],
                "nodeSelector": {},
                "tolerations": [],
                "terminationGracePeriodSeconds": 0,
                "hostNetwork": false,
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}},
                "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
                "futureField": {"x": []},
            }
        });
        normalize(&mut v, GoType::PodTemplateSpec);
        assert_eq!(
            v,
            json!({
                "metadata": {"creationTimestamp": null, "labels": {"app": "a"}},
                "spec": {
                    "containers": [{
                        "name": "main", "image": "nginx", "resources": {},
                        "ports": [{"containerPort": 80}],
                        "env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}}],
                        "securityContext": {},
                    }],
                    "terminationGracePeriodSeconds": 0,
                    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}},
                    "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {
                        "metadata": {"creationTimestamp": null},
                        "spec": {"resources": {}}
                    }}}],
                    "futureField": {"x": []},
                }
            })
        );
    }

    #[test]
    fn normalize_empty_template_matches_go_zero_value() {
        let mut v = json!({});
        normalize(&mut v, GoType::PodTemplateSpec);
        assert_eq!(
            to_string(&v),
            r#"{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}"#
        );
    }

    #[test]
    fn normalize_pvc_writes_status_and_metadata() {
        let mut v =
            json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}});
        normalize(&mut v, GoType::PersistentVolumeClaim);
        assert_eq!(
            to_string(&v),
            r#"{"metadata":{"creationTimestamp":null,"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{}},"status":{}}"#
        );
    }
}
