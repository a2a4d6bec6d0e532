//! The admission-parity corpus: the cases sent through OpenKruise v1.9.0's webhooks by
//! `kruise-admission-corpus record` (this crate's binary; see `hack/admission-corpus/README.md`)
//! and the record format of `tests/admission-corpus/<kind>.jsonl`, replayed by kruise-webhook's
//! tests.
//!
//! Cases are generated deterministically: hand-written objects for every rule of OpenKruise's
//! validating and mutating webhooks of a kind, plus mutations of valid objects (one field set to
//! each value of a list of wrong types, out-of-range numbers, percent strings, empty and huge
//! values, or removed), seeded pairs of such mutations, and updates of stored objects. A case's
//! `id` names what it changes, so a re-recording keeps ids (and their `deviation` marks) stable.

use std::collections::BTreeMap;

mod advancedcronjob;
mod broadcastjob;
mod containerrecreaterequest;
mod deletionprotection;
mod ephemeraljob;
mod persistentpodstate;
mod pod_sidecarset;
mod pod_workloadspread;
mod podprobemarker;
mod podunavailablebudget;
mod resourcedistribution;
mod sidecarset;
mod uniteddeployment;
mod workloadspread;

pub use sidecarset::KRUISE_NAMESPACE;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Namespace every case's object lives in.
pub const NAMESPACE: &str = "corpus";

/// One admission case: what is sent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    /// Stable identifier, `<corpus>/<operation>/<what changed>`.
    pub id: String,
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind, e.g. `CloneSet`.
    pub kind: String,
    /// Resource (plural), e.g. `clonesets`.
    pub resource: String,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: String,
    /// The object sent (absent for DELETE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The stored object (UPDATE, DELETE). For UPDATE it is the object as OpenKruise's mutating
    /// webhook left it on create (what the API server would have stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    /// The request's namespace (`request.namespace` of the AdmissionReview) when it is not
    /// [`NAMESPACE`]: the pod-sidecarset corpus creates pods in several namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The request's `dryRun` (absent: `false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// UPDATE only: the new object is the stored old object (what the mutating webhook left on
    /// create) with this JSON merge patch (RFC 7386) applied, for webhooks whose create writes
    /// values a case cannot know (the ContainerRecreateRequest webhook copies the pod's UID).
    /// The recorder writes the merged object as `object` and drops this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_into_stored: Option<Value>,
}

impl Case {
    /// The namespace the AdmissionReview names (`request.namespace`).
    pub fn request_namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or(NAMESPACE)
    }
}

/// A webhook's answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// `response.allowed`.
    pub allowed: bool,
    /// `response.status.code` (0 when absent).
    #[serde(default)]
    pub code: u16,
    /// `response.status.message` (empty when absent).
    #[serde(default)]
    pub message: String,
    /// The field paths the message names ([`paths_in_message`]).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Mutating webhooks: the object after the answer's JSON patch (the sent object when there
    /// is no patch); absent for validating webhooks and denials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patched: Option<Value>,
}

/// One recorded case: the case, OpenKruise's answers, and a deviation mark when kruise-rs
/// deliberately answers differently.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The case.
    #[serde(flatten)]
    pub case: Case,
    /// The mutating webhook's answer (absent for DELETE or kinds without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<Answer>,
    /// The validating webhook's answer for the mutated object (absent when the mutating webhook
    /// denied, or for kinds without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<Answer>,
    /// Why kruise-rs deliberately differs (listed in the README's compatibility section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation: Option<String>,
}

impl Record {
    /// Whether the object passes admission as a whole (mutation and validation allowed).
    pub fn allowed(&self) -> bool {
        self.mutation.as_ref().is_none_or(|a| a.allowed)
            && self.validation.as_ref().is_none_or(|a| a.allowed)
    }
}

/// `message` with the pointer addresses Go prints replaced by `0x0`, so that recording the same
/// case twice gives the same bytes: `%#v`'s `(*bool)(0x3a6b2c)` becomes `(*bool)(0x0)`, and
/// `%+v`'s pointer fields (`PriorityStrategy:0x389f3cb02030`, a field name, `:` and at least six
/// hex digits) become `PriorityStrategy:0x0`.
pub fn without_pointer_addresses(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(pos) = rest.find("0x") {
        let before = &rest[..pos];
        let after = &rest[pos + 2..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        let in_parens = before.ends_with('(') && after[hex..].starts_with(')') && hex > 0;
        let field_value = before
            .strip_suffix(':')
            .is_some_and(|b| b.ends_with(|c: char| c.is_ascii_alphanumeric()))
            && hex >= 6;
        out.push_str(before);
        if in_parens || field_value {
            out.push_str("0x0");
            rest = &after[hex..];
        } else {
            out.push_str("0x");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The field paths a denial message names, as a sorted, de-duplicated list: every
/// `<path>: <error type>` of apimachinery's field errors (`Required value`, `Invalid value`,
/// `Unsupported value`, `Forbidden`, `Duplicate value`, `Not found`, `Too long`, `Too many`,
/// `Internal error`), and the field of a JSON decoding error
/// (`... into Go struct field CloneSetSpec.spec.replicas of type int32` → `spec.replicas`).
pub fn paths_in_message(message: &str) -> Vec<String> {
    const TYPES: &[&str] = &[
        ": Required value",
        ": Invalid value",
        ": Unsupported value",
        ": Forbidden",
        ": Duplicate value",
        ": Not found",
        ": Too long",
        ": Too many",
        ": Internal error",
    ];
    let mut out = Vec::new();
    for ty in TYPES {
        let mut from = 0;
        while let Some(pos) = message[from..].find(ty) {
            let end = from + pos;
            // The path runs back to the start, "[" or ", " (a path's own brackets hold keys or
            // indices, so scan back over balanced brackets).
            let head = &message[..end];
            let mut depth = 0i32;
            let mut start = 0;
            for (i, ch) in head.char_indices().rev() {
                match ch {
                    ']' => depth += 1,
                    '[' if depth > 0 => depth -= 1,
                    '[' => {
                        start = i + 1;
                        break;
                    }
                    ' ' if depth == 0 => {
                        start = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            let path = head[start..].trim_end_matches(',');
            if !path.is_empty() && !path.contains(':') {
                out.push(path.to_owned());
            }
            from = end + ty.len();
        }
    }
    if let Some(pos) = message.find("Go struct field ") {
        let rest = &message[pos + "Go struct field ".len()..];
        let field = rest.split(' ').next().unwrap_or("");
        if let Some((_, path)) = field.split_once('.') {
            out.push(path.to_owned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// An edit of a valid object: set the value at a JSON pointer (creating missing objects on the
/// way) or remove the field.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Set `pointer` to the value.
    Set(&'static str, Value),
    /// Remove `pointer`.
    Remove(&'static str),
}

impl Edit {
    fn label(&self) -> String {
        match self {
            Edit::Set(p, v) => format!("{}={}", dotted(p), short(v)),
            Edit::Remove(p) => format!("{}=<removed>", dotted(p)),
        }
    }

    /// Applies the edit to `obj`.
    pub fn apply(&self, obj: &mut Value) {
        match self {
            Edit::Set(p, v) => set_pointer(obj, p, v.clone()),
            Edit::Remove(p) => remove_pointer(obj, p),
        }
    }
}

fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 48 {
        format!("{}…#{:x}", &s[..40], fxhash(&s))
    } else {
        s
    }
}

fn fxhash(s: &str) -> u32 {
    s.bytes().fold(0x811c9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x01000193)
    })
}

fn set_pointer(obj: &mut Value, pointer: &str, v: Value) {
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    let mut cur = obj;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let key = part.replace("~1", "/").replace("~0", "~");
        if let Ok(idx) = key.parse::<usize>()
            && cur.is_array()
        {
            let arr = cur.as_array_mut().expect("array");
            while arr.len() <= idx {
                arr.push(json!({}));
            }
            if last {
                arr[idx] = v;
                return;
            }
            cur = &mut arr[idx];
            continue;
        }
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = cur.as_object_mut().expect("object");
        if last {
            map.insert(key, v);
            return;
        }
        // A missing step becomes an array when the next one is an index.
        let next_is_index = parts[i + 1].parse::<usize>().is_ok();
        cur = map
            .entry(key)
            .or_insert_with(|| if next_is_index { json!([]) } else { json!({}) });
    }
}

fn remove_pointer(obj: &mut Value, pointer: &str) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let last = last.replace("~1", "/").replace("~0", "~");
    if let Some(p) = obj.pointer_mut(parent) {
        match p {
            Value::Object(m) => {
                m.remove(&last);
            }
            Value::Array(a) => {
                if let Ok(i) = last.parse::<usize>()
                    && i < a.len()
                {
                    a.remove(i);
                }
            }
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Value lists

fn int32s() -> Vec<Value> {
    vec![
        json!(-1),
        json!(0),
        json!(1),
        json!(5),
        json!(2147483647),
        json!(2147483648i64),
        json!("3"),
        json!(1.5),
        Value::Null,
    ]
}

fn int_or_percent() -> Vec<Value> {
    vec![
        json!(0),
        json!(1),
        json!(2),
        json!(-1),
        json!(100),
        json!("0%"),
        json!("20%"),
        json!("50%"),
        json!("100%"),
        json!("150%"),
        json!("-10%"),
        json!("abc"),
        json!(""),
        json!("3"),
        json!("1.5%"),
        json!("99999999999999%"),
        json!(true),
    ]
}

fn strings(valid: &[&str]) -> Vec<Value> {
    let mut v: Vec<Value> = valid.iter().map(|s| json!(s)).collect();
    v.extend([json!(""), json!("Bogus"), json!(5)]);
    v
}

fn bools() -> Vec<Value> {
    vec![json!(true), json!(false), json!("true"), Value::Null]
}

fn label_maps() -> Vec<Value> {
    vec![
        json!({}),
        json!({"app": "other"}),
        json!({"app": "demo", "extra": "x"}),
        json!({"app": "-bad-"}),
        json!({"bad key!": "v"}),
        json!({"example.com/app": "demo"}),
        json!({"app": "a".repeat(64)}),
        json!({"a".repeat(64): "v"}),
        json!("app=demo"),
    ]
}

fn selectors() -> Vec<Value> {
    vec![
        json!({}),
        json!({"matchLabels": {}}),
        json!({"matchLabels": {"app": "other"}}),
        json!({"matchLabels": {"app": "demo", "tier": "web"}}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["demo"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["demo"]}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}),
        json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}),
        json!({"matchLabels": {"bad key!": "v"}}),
        json!({"matchLabels": {"app": "-bad-"}}),
        json!("app=demo"),
    ]
}

/// Edits of a pod spec (prefix `p`, e.g. `/spec/template/spec` or `/spec`), shared by every
/// kind whose webhooks validate or mutate a pod spec.
fn pod_spec_edits(p: &'static str) -> Vec<Edit> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let at = |s: &str| -> &'static str { leak(format!("{p}{s}")) };
    let mut e: Vec<Edit> = Vec::new();
    let mut set = |ptr: &'static str, vals: Vec<Value>| {
        for v in vals {
            e.push(Edit::Set(ptr, v));
        }
    };
    set(
        at("/containers/0/name"),
        vec![
            json!(""),
            json!("Main"),
            json!("main_1"),
            json!("a".repeat(64)),
            json!("sidecar"),
            json!(7),
        ],
    );
    set(
        at("/containers/0/image"),
        vec![json!(""), json!(" "), json!("nginx:1.27"), json!(3)],
    );
    set(
        at("/containers/0/imagePullPolicy"),
        strings(&["Always", "IfNotPresent", "Never"]),
    );
    set(
        at("/containers/0/terminationMessagePolicy"),
        strings(&["File", "FallbackToLogsOnError"]),
    );
    set(
        at("/containers/0/ports"),
        vec![
            json!([{"containerPort": 80}]),
            json!([{"containerPort": 0}]),
            json!([{"containerPort": 70000}]),
            json!([{"containerPort": 80, "protocol": "ICMP"}]),
            json!([{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}]),
            json!([{"containerPort": 80, "name": "HTTP_BAD"}]),
            json!([{"containerPort": 80, "name": "a-very-long-port-name"}]),
            json!([{"containerPort": 80, "hostPort": 70000}]),
            json!([{"containerPort": "80"}]),
            json!([{}]),
        ],
    );
    set(
        at("/containers/0/env"),
        vec![
            json!([{"name": "GOOD", "value": "1"}]),
            json!([{"name": "", "value": "1"}]),
            json!([{"name": "1BAD=", "value": "1"}]),
            json!([{"name": "has space", "value": "1"}]),
            json!([{"name": "X", "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
            json!([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
            json!([{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]),
            json!([{"name": "X", "valueFrom": {}}]),
            json!([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": ""}}}]),
            json!([{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]),
            json!([{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]),
            json!([{"name": "X", "valueFrom": {"resourceFieldRef": {"resource": "bogus"}}}]),
            json!({"name": "X"}),
        ],
    );
    set(
        at("/containers/0/resources"),
        vec![
            json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}}),
            json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
            json!({"requests": {"cpu": "-1"}}),
            json!({"requests": {"cpu": "abc"}}),
            json!({"limits": {"memory": "1Gi"}}),
            json!({"requests": {"bogus": "1"}}),
            json!({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}),
            json!({"requests": {"hugepages-2Mi": "1Gi"}}),
            json!({"requests": {"cpu": 1}}),
        ],
    );
    set(
        at("/containers/0/volumeMounts"),
        vec![
            json!([{"name": "data", "mountPath": "/data"}]),
            json!([{"name": "missing", "mountPath": "/data"}]),
            json!([{"name": "data", "mountPath": ""}]),
            json!([{"name": "data", "mountPath": "/d"}, {"name": "data", "mountPath": "/d"}]),
            json!([{"name": "data", "mountPath": "/d", "subPath": "../x"}]),
            json!([{"name": "data", "mountPath": "/d", "subPath": "/abs"}]),
            json!([{"name": "data", "mountPath": "/d", "mountPropagation": "Bogus"}]),
            json!([{"name": "data", "mountPath": "/d", "subPath": "a", "subPathExpr": "b"}]),
        ],
    );
    set(
        at("/containers/0/livenessProbe"),
        vec![
            json!({"httpGet": {"path": "/", "port": 80}}),
            json!({}),
            json!({"httpGet": {"path": "/", "port": 80}, "tcpSocket": {"port": 80}}),
            json!({"httpGet": {"path": "/", "port": 0}}),
            json!({"httpGet": {"path": "/", "port": "bad_name"}}),
            json!({"tcpSocket": {"port": 80}, "successThreshold": 2}),
            json!({"exec": {"command": ["true"]}, "periodSeconds": -1}),
            json!({"exec": {"command": ["true"]}, "timeoutSeconds": -5}),
            json!({"grpc": {"port": 9000}}),
        ],
    );
    set(
        at("/containers/0/readinessProbe"),
        vec![
            json!({"tcpSocket": {"port": 80}, "successThreshold": 3}),
            json!({"exec": {}}),
            json!({"httpGet": {"path": "/", "port": 80, "scheme": "FTP"}}),
        ],
    );
    set(
        at("/containers/0/lifecycle"),
        vec![
            json!({"preStop": {"exec": {"command": ["sleep", "1"]}}}),
            json!({"postStart": {}}),
            json!({"preStop": {"sleep": {"seconds": 5}}}),
            json!({"preStop": {"sleep": {"seconds": -1}}}),
        ],
    );
    set(
        at("/containers/0/securityContext"),
        vec![
            json!({"runAsUser": 1000, "runAsNonRoot": true}),
            json!({"runAsUser": -1}),
            json!({"privileged": true, "allowPrivilegeEscalation": false}),
            json!({"capabilities": {"add": ["NET_ADMIN"]}}),
        ],
    );
    set(
        at("/containers/1"),
        vec![
            json!({"name": "sidecar", "image": "busybox:1.36"}),
            json!({"name": "main", "image": "busybox:1.36"}),
            json!({"name": "sidecar"}),
            json!({"name": "sidecar", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 80}]}),
        ],
    );
    set(
        at("/initContainers"),
        vec![
            json!([{"name": "init", "image": "busybox:1.36"}]),
            json!([{"name": "main", "image": "busybox:1.36"}]),
            json!([{"name": "init", "image": "busybox:1.36", "restartPolicy": "Always"}]),
            json!([{"name": "init", "image": "busybox:1.36", "restartPolicy": "Never"}]),
            json!([{"name": "init", "image": "busybox", "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}}]),
            json!([{"name": "init", "image": "busybox", "readinessProbe": {"exec": {"command": ["x"]}}}]),
        ],
    );
    set(
        at("/containers/0/restartPolicy"),
        vec![json!("Always"), json!("Never")],
    );
    set(
        at("/volumes"),
        vec![
            json!([{"name": "data", "emptyDir": {}}]),
            json!([{"name": "Data", "emptyDir": {}}]),
            json!([{"name": "", "emptyDir": {}}]),
            json!([{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]),
            json!([{"name": "data"}]),
            json!([{"name": "data", "emptyDir": {}, "hostPath": {"path": "/tmp"}}]),
            json!([{"name": "data", "hostPath": {"path": ""}}]),
            json!([{"name": "data", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x"}]}}]),
            json!([{"name": "data", "secret": {"secretName": "s", "defaultMode": 4096}}]),
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": ""}}]),
            json!([{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}]),
            json!([{"name": "data", "emptyDir": {"medium": "Bogus"}}]),
            json!({"name": "data"}),
        ],
    );
    set(
        at("/restartPolicy"),
        strings(&["Always", "OnFailure", "Never"]),
    );
    set(
        at("/dnsPolicy"),
        strings(&["ClusterFirst", "Default", "None", "ClusterFirstWithHostNet"]),
    );
    set(
        at("/dnsConfig"),
        vec![
            json!({"nameservers": ["1.1.1.1"]}),
            json!({"nameservers": ["not-an-ip"]}),
            json!({"options": [{"name": ""}]}),
        ],
    );
    set(
        at("/terminationGracePeriodSeconds"),
        vec![json!(-1), json!(0), json!(30), json!("30")],
    );
    set(
        at("/activeDeadlineSeconds"),
        vec![json!(0), json!(10), json!(-1)],
    );
    set(
        at("/nodeSelector"),
        vec![
            json!({"disktype": "ssd"}),
            json!({"bad key!": "x"}),
            json!({"k": "-bad-"}),
        ],
    );
    set(
        at("/tolerations"),
        vec![
            json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]),
            json!([{"key": "k", "operator": "Exists", "value": "v"}]),
            json!([{"key": "k", "operator": "Bogus"}]),
            json!([{"key": "k", "operator": "Equal", "value": "v", "effect": "Bogus"}]),
            json!([{"operator": "Equal", "value": "v"}]),
            json!([{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 10}]),
        ],
    );
    set(
        at("/affinity"),
        vec![
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Bogus"}]}]}}}),
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "", "labelSelector": {"matchLabels": {"app": "demo"}}}]}}),
            json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": {"topologyKey": "zone"}}]}}),
        ],
    );
    set(
        at("/topologySpreadConstraints"),
        vec![
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
            json!([{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
            json!([{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}]),
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Bogus"}]),
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
        ],
    );
    set(
        at("/hostname"),
        vec![json!("web-0"), json!("Bad_Host"), json!("")],
    );
    set(at("/subdomain"), vec![json!("svc"), json!("Bad.Sub")]);
    set(
        at("/serviceAccountName"),
        vec![json!("default"), json!("Bad_SA")],
    );
    set(
        at("/priorityClassName"),
        vec![json!("high"), json!("Bad_Class")],
    );
    set(
        at("/imagePullSecrets"),
        vec![json!([{"name": "regcred"}]), json!([{"name": ""}])],
    );
    set(
        at("/schedulingGates"),
        vec![
            json!([{"name": "example.com/gate"}]),
            json!([{"name": "bad gate"}]),
        ],
    );
    set(at("/hostNetwork"), bools());
    set(
        at("/securityContext"),
        vec![
            json!({"runAsUser": 1000, "fsGroup": 2000}),
            json!({"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]}),
            json!({"sysctls": [{"name": "bad sysctl", "value": "1"}]}),
            json!({"runAsGroup": -5}),
        ],
    );
    set(at("/containers"), vec![json!([]), Value::Null, json!({})]);
    e.push(Edit::Remove(at("/containers/0/image")));
    e.push(Edit::Remove(at("/containers")));
    e
}

// ---------------------------------------------------------------------------------------------
// Kinds

/// One corpus file: a kind (and version) and its cases.
pub struct Corpus {
    /// File stem under `tests/admission-corpus/` (e.g. `cloneset`).
    pub name: &'static str,
    /// The cases, in a deterministic order.
    pub cases: Vec<Case>,
    /// Objects the cluster holds while this corpus is recorded (created before its first case,
    /// deleted after its last), as a client creates them; the recorder writes what the cluster
    /// then held to `<name>.cluster.json`, which the replay looks objects up in. Empty for the
    /// corpora recorded on an empty cluster.
    pub cluster: Vec<Value>,
}

/// Every corpus: CloneSet, Advanced StatefulSet and Advanced DaemonSet (v1beta1 and v1alpha1
/// each), Pod, SidecarSet (v1beta1 with OpenKruise's patch-metadata whitelist in the cluster,
/// v1alpha1 without), and Pod again for SidecarSet injection (`pod-sidecarset`, with SidecarSets,
/// ControllerRevisions and Namespaces in the cluster).
pub fn all() -> Vec<Corpus> {
    vec![
        Corpus {
            name: "cloneset",
            cases: cloneset_cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "statefulset-v1beta1",
            cases: statefulset_cases("v1beta1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "statefulset-v1alpha1",
            cases: statefulset_cases("v1alpha1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "daemonset-v1beta1",
            cases: daemonset_cases("v1beta1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "daemonset-v1alpha1",
            cases: daemonset_cases("v1alpha1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "pod",
            cases: pod_cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "sidecarset-v1beta1",
            cases: sidecarset::cases("v1beta1"),
            cluster: sidecarset::cluster(true),
        },
        Corpus {
            name: "sidecarset-v1alpha1",
            cases: sidecarset::cases("v1alpha1"),
            cluster: sidecarset::cluster(false),
        },
        Corpus {
            name: "pod-sidecarset",
            cases: pod_sidecarset::cases(),
            cluster: pod_sidecarset::cluster(),
        },
        Corpus {
            name: "deletionprotection",
            cases: deletionprotection::cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "ephemeraljob",
            cases: ephemeraljob::cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "persistentpodstate",
            cases: persistentpodstate::cases(),
            cluster: persistentpodstate::cluster(),
        },
        Corpus {
            name: "podprobemarker",
            cases: podprobemarker::cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "podunavailablebudget",
            cases: podunavailablebudget::cases(),
            cluster: podunavailablebudget::cluster(),
        },
        Corpus {
            name: "containerrecreaterequest",
            cases: containerrecreaterequest::cases(),
            cluster: containerrecreaterequest::cluster(),
        },
        Corpus {
            name: "resourcedistribution",
            cases: resourcedistribution::cases(),
            cluster: Vec::new(),
        },
        Corpus {
            name: "pod-workloadspread",
            cases: pod_workloadspread::cases(),
            cluster: pod_workloadspread::cluster(),
        },
        Corpus {
            name: "workloadspread",
            cases: workloadspread::cases(),
            cluster: workloadspread::cluster(),
        },
        Corpus {
            name: "broadcastjob-v1beta1",
            cases: broadcastjob::cases("v1beta1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "broadcastjob-v1alpha1",
            cases: broadcastjob::cases("v1alpha1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "advancedcronjob-v1beta1",
            cases: advancedcronjob::cases("v1beta1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "advancedcronjob-v1alpha1",
            cases: advancedcronjob::cases("v1alpha1"),
            cluster: Vec::new(),
        },
        Corpus {
            name: "uniteddeployment",
            cases: uniteddeployment::cases(),
            cluster: Vec::new(),
        },
    ]
}

struct Builder {
    prefix: &'static str,
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    resource: &'static str,
    cases: Vec<Case>,
}

impl Builder {
    fn create(&mut self, label: &str, object: Value) {
        self.cases.push(Case {
            id: format!("{}/create/{label}", self.prefix),
            group: self.group.into(),
            version: self.version.into(),
            kind: self.kind.into(),
            resource: self.resource.into(),
            operation: "CREATE".into(),
            object: Some(object),
            old_object: None,
            namespace: None,
            dry_run: false,
            merge_into_stored: None,
        });
    }

    /// An UPDATE: both objects carry what the API server adds to stored objects (uid,
    /// resourceVersion, generation, creationTimestamp), as a client's update would.
    fn update(&mut self, label: &str, mut old: Value, mut object: Value) {
        for o in [&mut old, &mut object] {
            let m = &mut o["metadata"];
            m["uid"] = json!("6f9d2b1e-0000-4000-8000-00000000c0de");
            m["resourceVersion"] = json!("1000");
            m["generation"] = json!(1);
            m["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        self.cases.push(Case {
            id: format!("{}/update/{label}", self.prefix),
            group: self.group.into(),
            version: self.version.into(),
            kind: self.kind.into(),
            resource: self.resource.into(),
            operation: "UPDATE".into(),
            object: Some(object),
            old_object: Some(old),
            namespace: None,
            dry_run: false,
            merge_into_stored: None,
        });
    }

    /// An UPDATE whose new object is the stored `old` with merge patch `patch` (see
    /// [`Case::merge_into_stored`]); `old` carries what the API server adds to stored objects.
    fn update_stored(&mut self, label: &str, old: Value, patch: Value) {
        self.update(label, old.clone(), old);
        let case = self.cases.last_mut().expect("just pushed");
        case.merge_into_stored = Some(patch);
    }

    fn delete(&mut self, label: &str, old: Value) {
        self.cases.push(Case {
            id: format!("{}/delete/{label}", self.prefix),
            group: self.group.into(),
            version: self.version.into(),
            kind: self.kind.into(),
            resource: self.resource.into(),
            operation: "DELETE".into(),
            object: None,
            old_object: Some(old),
            namespace: None,
            dry_run: false,
            merge_into_stored: None,
        });
    }

    /// One CREATE per edit on each base, then `pairs` seeded two-edit combinations.
    fn edits(&mut self, bases: &[(&str, Value)], edits: &[Edit], pairs: usize, seed: u64) {
        for (bname, base) in bases {
            for e in edits {
                let mut o = base.clone();
                e.apply(&mut o);
                self.create(&format!("{bname}/{}", e.label()), o);
            }
        }
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..pairs {
            let (bname, base) = &bases[rng.random_range(0..bases.len())];
            let a = &edits[rng.random_range(0..edits.len())];
            let b = &edits[rng.random_range(0..edits.len())];
            let mut o = base.clone();
            a.apply(&mut o);
            b.apply(&mut o);
            self.create(&format!("{bname}/{}+{}", a.label(), b.label()), o);
        }
    }

    /// The object-name cases of a kind, each a CREATE of `base` with another `metadata.name` or
    /// `generateName`: dots, 63/64 and 253/254 characters, upper case, a leading digit, leading
    /// and trailing `-`, an underscore, an empty name, no name at all, and `generateName` (alone,
    /// invalid, too long, beside a name). Every webhook applies its own name rule
    /// (`NameIsDNSSubdomain`, `ValidateStatefulSetName`, `validateSidecarSetName`, ...), which
    /// these cases pin.
    fn names(&mut self, base: &Value) {
        let long = |n: usize| "a".repeat(n);
        let names: Vec<(&str, Value)> = vec![
            ("dots", json!("f152.a.b")),
            ("dot", json!("web.v2")),
            ("63", json!(long(63))),
            ("64", json!(long(64))),
            ("253", json!(long(253))),
            ("254", json!(long(254))),
            ("63-dotted", json!(format!("{}.b", long(61)))),
            ("upper", json!("Web")),
            ("all-upper", json!("WEB")),
            ("leading-digit", json!("1web")),
            ("digits", json!("123")),
            ("leading-dash", json!("-web")),
            ("trailing-dash", json!("web-")),
            ("underscore", json!("a_b")),
            ("empty", json!("")),
        ];
        for (label, name) in names {
            let mut o = base.clone();
            o["metadata"]["name"] = name;
            self.create(&format!("name/{label}"), o);
        }
        let mut unnamed = base.clone();
        if let Some(m) = unnamed["metadata"].as_object_mut() {
            m.remove("name");
        }
        self.create("name/absent", unnamed.clone());
        for (label, generate) in [
            ("plain", json!("web-")),
            ("no-dash", json!("web")),
            ("dots", json!("web.v2-")),
            ("upper", json!("Web-")),
            ("58", json!(format!("{}-", long(57)))),
            ("63", json!(format!("{}-", long(62)))),
            ("64", json!(format!("{}-", long(63)))),
            ("254", json!(format!("{}-", long(253)))),
            ("underscore", json!("a_b-")),
        ] {
            let mut o = unnamed.clone();
            o["metadata"]["generateName"] = generate.clone();
            self.create(&format!("generateName/{label}"), o);
            let mut named = base.clone();
            named["metadata"]["generateName"] = generate;
            self.create(&format!("generateName/{label}+name"), named);
        }
    }

    fn finish(mut self) -> Vec<Case> {
        // Ids stay unique even when two edits happen to have the same label.
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for c in &mut self.cases {
            let n = seen.entry(c.id.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                c.id = format!("{}#{}", c.id, n);
            }
        }
        self.cases
    }
}

fn pod_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}
    })
}

fn cloneset_base() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs", "namespace": NAMESPACE},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": pod_template()
        }
    })
}

fn cloneset_full() -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs-full", "namespace": NAMESPACE, "labels": {"team": "a"}},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}, "annotations": {"note": "x"}},
                "spec": {
                    "containers": [{
                        "name": "main", "image": "nginx:1.25",
                        "ports": [{"containerPort": 80, "name": "http"}],
                        "env": [{"name": "MODE", "value": "prod"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                    }],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "terminationGracePeriodSeconds": 10
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }],
            "scaleStrategy": {"maxUnavailable": 1, "disablePVCReuse": true},
            "updateStrategy": {"type": "InPlaceIfPossible", "partition": 1, "maxUnavailable": "20%", "maxSurge": 0,
                "inPlaceUpdateStrategy": {"gracePeriodSeconds": 5}},
            "minReadySeconds": 5,
            "revisionHistoryLimit": 5,
            "lifecycle": {"preDelete": {"labelsHandler": {"example.com/hook": "true"}}}
        }
    })
}

fn cloneset_cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "cloneset",
        group: "apps.kruise.io",
        version: "v1alpha1",
        kind: "CloneSet",
        resource: "clonesets",
        cases: Vec::new(),
    };
    b.create("valid/minimal", cloneset_base());
    b.create("valid/full", cloneset_full());
    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set("/spec/replicas", int32s());
    set("/spec/selector", selectors());
    set("/spec/template/metadata/labels", label_maps());
    set("/spec/minReadySeconds", int32s());
    set(
        "/spec/progressDeadlineSeconds",
        vec![json!(0), json!(3), json!(600), json!(-1)],
    );
    set(
        "/spec/revisionHistoryLimit",
        vec![json!(-1), json!(0), json!(10), json!("x")],
    );
    set(
        "/spec/updateStrategy/type",
        strings(&["ReCreate", "InPlaceIfPossible", "InPlaceOnly"]),
    );
    set("/spec/updateStrategy/partition", int_or_percent());
    set("/spec/updateStrategy/maxUnavailable", int_or_percent());
    set("/spec/updateStrategy/maxSurge", int_or_percent());
    set("/spec/updateStrategy/paused", bools());
    set(
        "/spec/updateStrategy/priorityStrategy",
        vec![
            json!({"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"orderPriority": [{"orderedKey": "key1"}]}),
            json!({"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"k": "v"}}}], "orderPriority": [{"orderedKey": "key1"}]}),
            json!({"weightPriority": [{"weight": 101, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"weightPriority": [{"weight": -1, "matchSelector": {"matchLabels": {"k": "v"}}}]}),
            json!({"orderPriority": [{"orderedKey": ""}]}),
            json!({}),
        ],
    );
    set(
        "/spec/updateStrategy/scatterStrategy",
        vec![
            json!([{"key": "k", "value": "v"}]),
            json!([{"key": "k", "value": "v"}, {"key": "k", "value": "v"}]),
            json!([{"key": "", "value": "v"}]),
            json!([{"key": "k", "value": ""}]),
        ],
    );
    set(
        "/spec/updateStrategy/inPlaceUpdateStrategy",
        vec![
            json!({"gracePeriodSeconds": 10}),
            json!({"gracePeriodSeconds": -1}),
        ],
    );
    set("/spec/scaleStrategy/maxUnavailable", int_or_percent());
    set(
        "/spec/scaleStrategy/podsToDelete",
        vec![json!([]), json!(["a", "a"]), json!(["ghost"]), json!("a")],
    );
    set("/spec/scaleStrategy/disablePVCReuse", bools());
    set(
        "/spec/volumeClaimTemplates",
        vec![
            json!([]),
            json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]),
            json!([{"metadata": {}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]),
            json!([{"spec": {"resources": {"requests": {"storage": "1Gi"}}}}]),
            json!([{"metadata": {"name": "Bad_Name"}, "spec": {}}]),
            json!([{"metadata": {"name": "data"}}, {"metadata": {"name": "data"}}]),
            json!([{"metadata": {"name": "data"}, "spec": {"storageClassName": "standard"}}]),
        ],
    );
    set(
        "/spec/lifecycle",
        vec![
            json!({"preDelete": {"finalizersHandler": ["example.com/hook"]}}),
            json!({"inPlaceUpdate": {"labelsHandler": {"bad key!": "x"}}}),
            json!({"preNormal": {"labelsHandler": {"k": "v"}}}),
            json!({"preDelete": {"markPodNotReady": true}}),
            json!({"preDelete": {"labelsHandler": "x"}}),
        ],
    );
    set(
        "/metadata/name",
        vec![json!("Bad_Name"), json!("a".repeat(254)), json!("ok-name")],
    );
    set(
        "/metadata/labels",
        vec![
            json!({"policy.kruise.io/delete-protection": "Always"}),
            json!({"policy.kruise.io/delete-protection": "Cascading"}),
            json!({"policy.kruise.io/delete-protection": "Bogus"}),
        ],
    );
    set(
        "/metadata/annotations",
        vec![json!({"bad key!": "x"}), json!({"ok": "y"})],
    );
    set(
        "/spec/template/spec/restartPolicy",
        vec![json!("Never"), json!("OnFailure")],
    );
    set("/spec", vec![json!({}), json!("x")]);
    edits.push(Edit::Remove("/spec/selector"));
    edits.push(Edit::Remove("/spec/template"));
    edits.push(Edit::Remove("/spec/replicas"));
    edits.push(Edit::Remove("/spec/template/metadata"));
    edits.extend(pod_spec_edits("/spec/template/spec"));
    b.edits(
        &[("min", cloneset_base()), ("full", cloneset_full())],
        &edits,
        120,
        0x6b72_7569_7365,
    );
    b.names(&cloneset_base());

    // Updates of stored objects.
    let upd: Vec<Edit> = vec![
        Edit::Set("/spec/replicas", json!(10)),
        Edit::Set("/spec/replicas", json!(0)),
        Edit::Set("/spec/replicas", json!(-2)),
        Edit::Set(
            "/spec/selector",
            json!({"matchLabels": {"app": "demo", "new": "x"}}),
        ),
        Edit::Set("/spec/selector", json!({"matchLabels": {"app": "other"}})),
        Edit::Set(
            "/spec/template/spec/containers/0/image",
            json!("nginx:1.27"),
        ),
        Edit::Set(
            "/spec/template/spec/containers/0/env",
            json!([{"name": "A", "value": "1"}]),
        ),
        Edit::Set("/spec/template/metadata/labels/app", json!("other")),
        Edit::Set("/spec/template/metadata/labels/version", json!("v2")),
        Edit::Set("/spec/updateStrategy/type", json!("InPlaceOnly")),
        Edit::Set("/spec/updateStrategy/partition", json!("150%")),
        Edit::Set("/spec/updateStrategy/paused", json!(true)),
        Edit::Set("/spec/scaleStrategy/podsToDelete", json!(["ghost"])),
        Edit::Set(
            "/spec/volumeClaimTemplates",
            json!([{"metadata": {"name": "other"}, "spec": {"resources": {"requests": {"storage": "2Gi"}}}}]),
        ),
        Edit::Set(
            "/spec/volumeClaimTemplates/0/spec/resources/requests/storage",
            json!("5Gi"),
        ),
        Edit::Set("/spec/minReadySeconds", json!(-1)),
        Edit::Set("/spec/revisionHistoryLimit", json!(1)),
        Edit::Set(
            "/metadata/labels/policy.kruise.io~1delete-protection",
            json!("Always"),
        ),
        Edit::Remove("/spec/template/spec/containers/0/imagePullPolicy"),
        Edit::Set(
            "/spec/template/spec/containers/1",
            json!({"name": "sidecar", "image": "busybox"}),
        ),
    ];
    for (bname, base) in [("min", cloneset_base()), ("full", cloneset_full())] {
        for e in upd.iter() {
            let mut o = base.clone();
            e.apply(&mut o);
            b.update(&format!("{bname}/{}", e.label()), base.clone(), o);
        }
        for (prot, replicas) in [
            ("Always", 3),
            ("Always", 0),
            ("Cascading", 3),
            ("Cascading", 0),
            ("Bogus", 3),
        ] {
            let mut o = base.clone();
            Edit::Set(
                "/metadata/labels/policy.kruise.io~1delete-protection",
                json!(prot),
            )
            .apply(&mut o);
            Edit::Set("/spec/replicas", json!(replicas)).apply(&mut o);
            b.delete(&format!("{bname}/protection={prot},replicas={replicas}"), o);
        }
        b.delete(&format!("{bname}/unprotected"), base.clone());
    }
    b.finish()
}

fn statefulset_base(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "StatefulSet",
        "metadata": {"name": "sts", "namespace": NAMESPACE},
        "spec": {
            "replicas": 3,
            "serviceName": "sts",
            "selector": {"matchLabels": {"app": "demo"}},
            "template": pod_template()
        }
    })
}

fn statefulset_full(version: &str) -> Value {
    let mut v = json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "StatefulSet",
        "metadata": {"name": "sts-full", "namespace": NAMESPACE},
        "spec": {
            "replicas": 4,
            "serviceName": "sts",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                    "containers": [{"name": "main", "image": "nginx:1.25",
                        "volumeMounts": [{"name": "www", "mountPath": "/www"}]}]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }],
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "partition": 1, "maxUnavailable": 2, "podUpdatePolicy": "InPlaceIfPossible",
                "inPlaceUpdateStrategy": {"gracePeriodSeconds": 5}, "minReadySeconds": 3}},
            "revisionHistoryLimit": 5
        }
    });
    if version == "v1beta1" {
        v["spec"]["reserveOrdinals"] = json!([1]);
        v["spec"]["scaleStrategy"] = json!({"maxUnavailable": 1});
        v["spec"]["lifecycle"] = json!({"preDelete": {"finalizersHandler": ["example.com/hook"]}});
    }
    v
}

fn statefulset_cases(version: &'static str) -> Vec<Case> {
    let mut b = Builder {
        prefix: if version == "v1beta1" {
            "statefulset-v1beta1"
        } else {
            "statefulset-v1alpha1"
        },
        group: "apps.kruise.io",
        version,
        kind: "StatefulSet",
        resource: "statefulsets",
        cases: Vec::new(),
    };
    b.create("valid/minimal", statefulset_base(version));
    b.create("valid/full", statefulset_full(version));
    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set("/spec/replicas", int32s());
    set("/spec/selector", selectors());
    set("/spec/template/metadata/labels", label_maps());
    set(
        "/spec/serviceName",
        vec![json!(""), json!("Bad_Svc"), json!(3)],
    );
    set(
        "/spec/podManagementPolicy",
        strings(&["OrderedReady", "Parallel"]),
    );
    set(
        "/spec/revisionHistoryLimit",
        vec![json!(-1), json!(0), json!(10)],
    );
    set(
        "/spec/updateStrategy/type",
        strings(&["RollingUpdate", "OnDelete"]),
    );
    set("/spec/updateStrategy/rollingUpdate/partition", int32s());
    set(
        "/spec/updateStrategy/rollingUpdate/maxUnavailable",
        int_or_percent(),
    );
    set(
        "/spec/updateStrategy/rollingUpdate/podUpdatePolicy",
        strings(&["ReCreate", "InPlaceIfPossible", "InPlaceOnly"]),
    );
    set("/spec/updateStrategy/rollingUpdate/paused", bools());
    set(
        "/spec/updateStrategy/rollingUpdate/minReadySeconds",
        int32s(),
    );
    set(
        "/spec/updateStrategy/rollingUpdate/unorderedUpdate",
        vec![
            json!({"priorityStrategy": {"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"k": "v"}}}]}}),
            json!({"priorityStrategy": {"orderPriority": [{"orderedKey": "key1"}], "weightPriority": [{"weight": 1, "matchSelector": {"matchLabels": {"k": "v"}}}]}}),
            json!({"priorityStrategy": {"weightPriority": [{"weight": 200, "matchSelector": {"matchLabels": {"k": "v"}}}]}}),
            json!({}),
        ],
    );
    set(
        "/spec/updateStrategy/rollingUpdate/inPlaceUpdateStrategy",
        vec![
            json!({"gracePeriodSeconds": 10}),
            json!({"gracePeriodSeconds": -1}),
        ],
    );
    set(
        "/spec/volumeClaimTemplates",
        vec![
            json!([]),
            json!([{"metadata": {}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]),
            json!([{"metadata": {"name": "Bad_Name"}, "spec": {}}]),
            json!([{"metadata": {"name": "www"}, "spec": {"accessModes": ["Bogus"], "resources": {"requests": {"storage": "1Gi"}}}}]),
            json!([{"metadata": {"name": "www"}}, {"metadata": {"name": "www"}}]),
        ],
    );
    set(
        "/spec/persistentVolumeClaimRetentionPolicy",
        vec![
            json!({"whenDeleted": "Retain", "whenScaled": "Delete"}),
            json!({"whenDeleted": "Bogus"}),
            json!({"whenScaled": ""}),
        ],
    );
    set(
        "/spec/ordinals",
        vec![
            json!({"start": 0}),
            json!({"start": 5}),
            json!({"start": -1}),
        ],
    );
    set(
        "/spec/minReadySeconds",
        vec![json!(-1), json!(0), json!(10), json!("x")],
    );
    set(
        "/spec/volumeClaimTemplates/0",
        vec![
            json!("x"),
            json!({"metadata": {"name": "www"}, "spec": "x"}),
        ],
    );
    set("/spec/updateStrategy", vec![json!("x")]);
    set(
        "/spec/updateStrategy/rollingUpdate",
        vec![json!("x"), json!([])],
    );
    set(
        "/spec/template/spec/containers/0/ports/0/containerPort",
        vec![json!(0), json!(-1), json!(65536)],
    );
    set("/spec/selector/matchLabels/app", vec![json!(""), json!(5)]);
    set("/spec/template/metadata/labels/app", vec![json!(5)]);
    set("/spec/revisionHistoryLimit", vec![json!("x")]);
    set("/spec/ordinals/start", vec![json!("x")]);
    set(
        "/spec/template/metadata/annotations",
        vec![
            json!({"bad key!": "x"}),
            json!({"a": 1}),
            json!({"ok": "x"}),
        ],
    );
    set(
        "/spec/template/spec/readinessGates",
        vec![json!([{"conditionType": "Other"}]), json!([]), json!("x")],
    );
    set("/spec/template/spec/containers", vec![json!("x")]);
    set("/spec/template/spec", vec![json!(5)]);
    set("/spec/template/metadata", vec![json!("x")]);
    set("/spec/replicas", vec![json!("x")]);
    set("/spec/volumeClaimTemplates", vec![json!("x")]);
    set(
        "/spec/persistentVolumeClaimRetentionPolicy",
        vec![json!("x")],
    );
    set(
        "/spec/updateStrategy/rollingUpdate/partition",
        vec![json!("50%")],
    );
    if version == "v1beta1" {
        set(
            "/spec/reserveOrdinals",
            vec![
                json!([0, 2]),
                json!([-1]),
                json!(["1-3"]),
                json!(["3-1"]),
                json!(["a"]),
                json!([1, 1]),
            ],
        );
        set("/spec/scaleStrategy/maxUnavailable", int_or_percent());
        set(
            "/spec/lifecycle",
            vec![
                json!({"preDelete": {"labelsHandler": {"k": "v"}}}),
                json!({"inPlaceUpdate": {"labelsHandler": {"bad key!": "x"}}}),
            ],
        );
        set(
            "/spec/volumeClaimUpdateStrategy",
            vec![
                json!({"type": "OnDelete"}),
                json!({"type": "OnPodRollingUpdate"}),
                json!({"type": "Bogus"}),
            ],
        );
    }
    set("/metadata/name", vec![json!("Bad_Name"), json!("ok-name")]);
    set(
        "/metadata/labels",
        vec![
            json!({"policy.kruise.io/delete-protection": "Always"}),
            json!({"policy.kruise.io/delete-protection": "Bogus"}),
        ],
    );
    set("/spec", vec![json!({}), json!("x")]);
    edits.push(Edit::Remove("/spec/selector"));
    edits.push(Edit::Remove("/spec/template"));
    edits.push(Edit::Remove("/spec/replicas"));
    edits.extend(pod_spec_edits("/spec/template/spec"));
    b.edits(
        &[
            ("min", statefulset_base(version)),
            ("full", statefulset_full(version)),
        ],
        &edits,
        80,
        if version == "v1beta1" {
            0x5354_5331
        } else {
            0x5354_5330
        },
    );
    b.names(&statefulset_base(version));
    let upd: Vec<Edit> = vec![
        Edit::Set("/spec/replicas", json!(10)),
        Edit::Set("/spec/replicas", json!(-2)),
        Edit::Set(
            "/spec/selector",
            json!({"matchLabels": {"app": "demo", "new": "x"}}),
        ),
        Edit::Set("/spec/serviceName", json!("other")),
        Edit::Set("/spec/podManagementPolicy", json!("OrderedReady")),
        Edit::Set("/spec/podManagementPolicy", json!("Parallel")),
        Edit::Set(
            "/spec/template/spec/containers/0/image",
            json!("nginx:1.27"),
        ),
        Edit::Set("/spec/template/metadata/labels/app", json!("other")),
        Edit::Set("/spec/updateStrategy/rollingUpdate/partition", json!(2)),
        Edit::Set("/spec/updateStrategy/type", json!("OnDelete")),
        Edit::Set(
            "/spec/volumeClaimTemplates",
            json!([{"metadata": {"name": "other"}, "spec": {"resources": {"requests": {"storage": "2Gi"}}}}]),
        ),
        Edit::Set(
            "/spec/volumeClaimTemplates/0/spec/resources/requests/storage",
            json!("5Gi"),
        ),
        Edit::Set("/spec/revisionHistoryLimit", json!(1)),
        Edit::Set(
            "/spec/persistentVolumeClaimRetentionPolicy",
            json!({"whenDeleted": "Delete", "whenScaled": "Delete"}),
        ),
        Edit::Set("/spec/ordinals", json!({"start": 3})),
        Edit::Set("/spec/minReadySeconds", json!(7)),
        Edit::Set(
            "/metadata/labels/policy.kruise.io~1delete-protection",
            json!("Always"),
        ),
    ];
    for (bname, base) in [
        ("min", statefulset_base(version)),
        ("full", statefulset_full(version)),
    ] {
        for e in upd.iter() {
            let mut o = base.clone();
            e.apply(&mut o);
            b.update(&format!("{bname}/{}", e.label()), base.clone(), o);
        }
        for (prot, replicas) in [
            ("Always", 3),
            ("Cascading", 3),
            ("Cascading", 0),
            ("Bogus", 1),
        ] {
            let mut o = base.clone();
            Edit::Set(
                "/metadata/labels/policy.kruise.io~1delete-protection",
                json!(prot),
            )
            .apply(&mut o);
            Edit::Set("/spec/replicas", json!(replicas)).apply(&mut o);
            b.delete(&format!("{bname}/protection={prot},replicas={replicas}"), o);
        }
        b.delete(&format!("{bname}/unprotected"), base.clone());
    }
    b.finish()
}

fn daemonset_base(version: &str) -> Value {
    json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "template": pod_template()
        }
    })
}

fn daemonset_full(version: &str) -> Value {
    let mut v = json!({
        "apiVersion": format!("apps.kruise.io/{version}"), "kind": "DaemonSet",
        "metadata": {"name": "ds-full", "namespace": NAMESPACE, "labels": {"team": "a"}},
        "spec": {
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {
                    "restartPolicy": "Always",
                    "tolerations": [{"operator": "Exists"}],
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                    "containers": [{"name": "main", "image": "nginx:1.25",
                        "resources": {"requests": {"cpu": "100m"}}}]
                }
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": "20%", "maxSurge": 0,
                "partition": 1, "paused": false, "selector": {"matchLabels": {"node": "a"}}}},
            "minReadySeconds": 5,
            "burstReplicas": 10,
            "revisionHistoryLimit": 5,
            "lifecycle": {"preDelete": {"labelsHandler": {"example.com/hook": "true"}}}
        }
    });
    if version == "v1beta1" {
        v["spec"]["scaleStrategy"] = json!({"partitionedScaling": true});
    }
    v
}

fn daemonset_cases(version: &'static str) -> Vec<Case> {
    let mut b = Builder {
        prefix: if version == "v1beta1" {
            "daemonset-v1beta1"
        } else {
            "daemonset-v1alpha1"
        },
        group: "apps.kruise.io",
        version,
        kind: "DaemonSet",
        resource: "daemonsets",
        cases: Vec::new(),
    };
    b.create("valid/minimal", daemonset_base(version));
    b.create("valid/full", daemonset_full(version));
    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set("/spec/selector", selectors());
    set("/spec/template/metadata/labels", label_maps());
    set("/spec/burstReplicas", int_or_percent());
    set("/spec/minReadySeconds", int32s());
    set(
        "/spec/revisionHistoryLimit",
        vec![json!(-1), json!(0), json!(10), json!("x")],
    );
    set(
        "/spec/updateStrategy/type",
        strings(&["RollingUpdate", "OnDelete"]),
    );
    set(
        "/spec/updateStrategy",
        vec![
            json!({"type": "RollingUpdate"}),
            json!({"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 1}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "Surging"}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "Surging", "maxUnavailable": 1}}),
            json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible", "maxSurge": "10%"}}),
            json!("x"),
        ],
    );
    set(
        "/spec/updateStrategy/rollingUpdate/rollingUpdateType",
        strings(&["Standard", "InPlaceIfPossible", "Surging"]),
    );
    set(
        "/spec/updateStrategy/rollingUpdate/maxUnavailable",
        int_or_percent(),
    );
    set(
        "/spec/updateStrategy/rollingUpdate/maxSurge",
        int_or_percent(),
    );
    set(
        "/spec/updateStrategy/rollingUpdate/partition",
        int_or_percent(),
    );
    set("/spec/updateStrategy/rollingUpdate/paused", bools());
    set("/spec/updateStrategy/rollingUpdate/selector", selectors());
    set(
        "/spec/updateStrategy/rollingUpdate",
        vec![json!("x"), json!([]), json!(null)],
    );
    set(
        "/spec/lifecycle",
        vec![
            json!({"preDelete": {"labelsHandler": {"k": "v"}}}),
            json!({"inPlaceUpdate": {"labelsHandler": {"k": "v"}}}),
            json!({"preNormal": {"finalizersHandler": ["example.com/x"]}}),
            json!("x"),
        ],
    );
    set(
        "/spec/template/spec/restartPolicy",
        vec![
            json!("Always"),
            json!("Never"),
            json!("OnFailure"),
            json!(""),
        ],
    );
    set(
        "/spec/template/spec/activeDeadlineSeconds",
        vec![json!(10), json!(0)],
    );
    if version == "v1beta1" {
        set(
            "/spec/scaleStrategy",
            vec![json!({"partitionedScaling": false}), json!({}), json!("x")],
        );
    } else {
        set(
            "/metadata/annotations",
            vec![json!({"daemonset.kruise.io/progressive-create-pod": "true"})],
        );
    }
    set("/metadata/name", vec![json!("Bad_Name"), json!("ok-name")]);
    set("/spec", vec![json!({}), json!("x")]);
    set("/spec/template/spec/containers", vec![json!("x")]);
    set("/spec/template/metadata/labels/app", vec![json!(5)]);
    edits.push(Edit::Remove("/spec/selector"));
    edits.push(Edit::Remove("/spec/template"));
    edits.push(Edit::Remove("/spec/updateStrategy"));
    edits.extend(pod_spec_edits("/spec/template/spec"));
    b.edits(
        &[
            ("min", daemonset_base(version)),
            ("full", daemonset_full(version)),
        ],
        &edits,
        80,
        if version == "v1beta1" {
            0x4453_5331
        } else {
            0x4453_5330
        },
    );
    b.names(&daemonset_base(version));
    let upd: Vec<Edit> = vec![
        Edit::Set(
            "/spec/selector",
            json!({"matchLabels": {"app": "demo", "new": "x"}}),
        ),
        Edit::Set(
            "/spec/template/spec/containers/0/image",
            json!("nginx:1.27"),
        ),
        Edit::Set("/spec/template/metadata/labels/app", json!("other")),
        Edit::Set("/spec/updateStrategy", json!({"type": "OnDelete"})),
        Edit::Set(
            "/spec/updateStrategy",
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}),
        ),
        Edit::Set("/spec/burstReplicas", json!(5)),
        Edit::Set("/spec/minReadySeconds", json!(7)),
        Edit::Set("/spec/minReadySeconds", json!(-7)),
        Edit::Set("/spec/revisionHistoryLimit", json!(1)),
        Edit::Set(
            "/spec/lifecycle",
            json!({"preDelete": {"finalizersHandler": ["example.com/x"]}}),
        ),
        Edit::Set(
            "/spec/lifecycle",
            json!({"inPlaceUpdate": {"finalizersHandler": ["example.com/x"]}}),
        ),
        Edit::Set("/metadata/name", json!("renamed")),
        Edit::Set("/metadata/labels/team", json!("b")),
    ];
    let mut upd = upd;
    if version == "v1beta1" {
        upd.push(Edit::Set(
            "/spec/scaleStrategy",
            json!({"partitionedScaling": false}),
        ));
    }
    for (bname, base) in [
        ("min", daemonset_base(version)),
        ("full", daemonset_full(version)),
    ] {
        for e in upd.iter() {
            let mut o = base.clone();
            e.apply(&mut o);
            b.update(&format!("{bname}/{}", e.label()), base.clone(), o);
        }
    }
    b.finish()
}

fn pod_base() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": NAMESPACE, "labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}
    })
}

fn owned(kind: &str, api_version: &str) -> Value {
    let mut p = pod_base();
    p["metadata"]["ownerReferences"] = json!([{
        "apiVersion": api_version, "kind": kind, "name": "owner", "uid": "0a1b2c3d-0000-4000-8000-000000000001",
        "controller": true, "blockOwnerDeletion": true
    }]);
    p
}

fn pod_cases() -> Vec<Case> {
    let mut b = Builder {
        prefix: "pod",
        group: "",
        version: "v1",
        kind: "Pod",
        resource: "pods",
        cases: Vec::new(),
    };
    let bases: Vec<(&str, Value)> = vec![
        ("plain", pod_base()),
        ("cloneset", owned("CloneSet", "apps.kruise.io/v1alpha1")),
        (
            "asts-v1beta1",
            owned("StatefulSet", "apps.kruise.io/v1beta1"),
        ),
        (
            "asts-v1alpha1",
            owned("StatefulSet", "apps.kruise.io/v1alpha1"),
        ),
        ("daemonset", owned("DaemonSet", "apps.kruise.io/v1alpha1")),
        ("native-sts", owned("StatefulSet", "apps/v1")),
        ("replicaset", owned("ReplicaSet", "apps/v1")),
    ];
    for (n, p) in &bases {
        b.create(&format!("valid/{n}"), p.clone());
    }
    let mut edits: Vec<Edit> = Vec::new();
    let mut set = |p: &'static str, vals: Vec<Value>| {
        edits.extend(vals.into_iter().map(|v| Edit::Set(p, v)));
    };
    set(
        "/metadata/annotations",
        vec![
            json!({"apps.kruise.io/container-launch-priority": "Ordered"}),
            json!({"apps.kruise.io/container-launch-priority": "ordered"}),
            json!({"apps.kruise.io/container-launch-priority": "Bogus"}),
            json!({"apps.kruise.io/using-enhanced-liveness": "true"}),
            json!({"apps.kruise.io/using-enhanced-liveness": "false"}),
            json!({"note": "x"}),
        ],
    );
    set(
        "/spec/containers/1",
        vec![
            json!({"name": "sidecar", "image": "busybox", "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "10"}]}),
            json!({"name": "sidecar", "image": "busybox", "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "-20"}]}),
            json!({"name": "sidecar", "image": "busybox", "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "abc"}]}),
            json!({"name": "sidecar", "image": "busybox", "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "2000"}]}),
            json!({"name": "sidecar", "image": "busybox"}),
        ],
    );
    set(
        "/spec/containers/0/env",
        vec![
            json!([{"name": "KRUISE_CONTAINER_PRIORITY", "value": "5"}]),
            json!([{"name": "KRUISE_CONTAINER_PRIORITY", "value": "5"}, {"name": "OTHER", "value": "x"}]),
        ],
    );
    set(
        "/spec/containers/0/livenessProbe",
        vec![
            json!({"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 5}),
            json!({"exec": {"command": ["true"]}}),
        ],
    );
    set(
        "/spec/readinessGates",
        vec![
            json!([{"conditionType": "KruisePodReady"}]),
            json!([{"conditionType": "InPlaceUpdateReady"}]),
            json!([{"conditionType": "Other"}]),
            json!("x"),
        ],
    );
    set(
        "/metadata/namespace",
        vec![
            json!(""),
            json!("kube-system"),
            json!("kruise-system"),
            json!("other"),
        ],
    );
    set(
        "/metadata/ownerReferences/0/controller",
        vec![json!(false), Value::Null, json!("yes")],
    );
    set(
        "/metadata/ownerReferences/0/apiVersion",
        vec![
            json!("apps.kruise.io/v1beta1"),
            json!("apps.kruise.io/v2"),
            json!(""),
        ],
    );
    set("/metadata/labels", vec![json!("x"), json!({"a": 1})]);
    set("/metadata", vec![json!("x"), json!([])]);
    set("/spec", vec![json!("x"), json!([])]);
    set("/status", vec![json!({"phase": "Running"}), json!("x")]);
    // Wrong JSON types anywhere in a pod are decode errors: more of them, across fields.
    set(
        "/spec/containers/0/ports/0/containerPort",
        vec![json!("80"), json!(true), json!(1.5)],
    );
    set("/spec/containers/0/stdin", vec![json!("yes"), json!(1)]);
    set("/spec/priority", vec![json!("high"), json!(1.5), json!(10)]);
    set("/spec/nodeName", vec![json!(3), json!("node-1")]);
    set("/spec/enableServiceLinks", vec![json!("no"), json!(false)]);
    set("/metadata/generateName", vec![json!(3), json!("p-")]);
    set("/spec/containers/0/args", vec![json!("x"), json!([1])]);
    set(
        "/spec/containers/0/command",
        vec![json!("sh -c"), json!({})],
    );
    set("/spec/containers/0/workingDir", vec![json!(3)]);
    set("/spec/containers/0/tty", vec![json!("x")]);
    set("/spec/containers/0/resources/limits", vec![json!("1")]);
    set("/spec/containers/0/env/0/value", vec![json!(1)]);
    set("/spec/hostPID", vec![json!("x")]);
    set("/spec/hostIPC", vec![json!(1)]);
    set("/spec/schedulerName", vec![json!(3)]);
    set("/spec/runtimeClassName", vec![json!(5)]);
    set("/spec/automountServiceAccountToken", vec![json!("x")]);
    set("/spec/shareProcessNamespace", vec![json!(1)]);
    set("/spec/hostAliases", vec![json!("x")]);
    set("/spec/volumes/0/emptyDir", vec![json!("x")]);
    set("/metadata/finalizers", vec![json!("x")]);
    set("/metadata/ownerReferences", vec![json!("x")]);
    set("/metadata/annotations", vec![json!({"a": 1}), json!("x")]);
    b.edits(&bases, &edits, 60, 0x504f_4453);
    // Pod spec edits matter to the webhook only through decoding and the features it applies:
    // a plain pod and a Kruise-owned one.
    b.edits(&bases[..2], &pod_spec_edits("/spec"), 0, 0);
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_addresses_are_masked() {
        assert_eq!(
            without_pointer_addresses("Privileged:(*bool)(0x3a6b2c), x:(0x), y:(0xzz)"),
            "Privileged:(*bool)(0x0), x:(0x), y:(0xzz)"
        );
        assert_eq!(
            without_pointer_addresses(
                "MaxUnavailable:2 PriorityStrategy:0x389f3cb02030 ScatterStrategy:[]"
            ),
            "MaxUnavailable:2 PriorityStrategy:0x0 ScatterStrategy:[]"
        );
        assert_eq!(
            without_pointer_addresses("value 0x1234567 a:0x12"),
            "value 0x1234567 a:0x12"
        );
    }

    #[test]
    fn paths_are_found_in_apimachinery_messages() {
        assert_eq!(
            paths_in_message("spec.selector: Required value"),
            vec!["spec.selector"]
        );
        assert_eq!(
            paths_in_message(
                "[spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"x\"}: `selector` does not match template `labels`]"
            ),
            vec!["spec.replicas", "spec.template.metadata.labels"]
        );
        assert_eq!(
            paths_in_message(
                "spec.template.spec.containers[0].env[1].name: Invalid value: \"1BAD=\": a valid environment variable name"
            ),
            vec!["spec.template.spec.containers[0].env[1].name"]
        );
        assert_eq!(
            paths_in_message("metadata.labels[bad key!]: Invalid value: \"bad key!\": name part"),
            vec!["metadata.labels[bad key!]"]
        );
        assert_eq!(
            paths_in_message(
                "json: cannot unmarshal string into Go struct field CloneSetSpec.spec.replicas of type int32"
            ),
            vec!["spec.replicas"]
        );
        assert!(paths_in_message("forbidden to delete").is_empty());
    }

    #[test]
    fn every_corpus_is_large_and_ids_are_unique() {
        // Kinds whose webhooks have few rules: every rule and value class is covered with
        // fewer cases (PodUnavailableBudget: 12 rules; deletion protection: 8 kinds × label
        // values × replicas).
        let small = [
            ("containerrecreaterequest", 240),
            ("deletionprotection", 100),
            ("ephemeraljob", 100),
            ("podunavailablebudget", 100),
            ("podprobemarker", 150),
            ("persistentpodstate", 100),
            ("resourcedistribution", 100),
            ("workloadspread", 100),
            ("pod-workloadspread", 50),
        ];
        for c in all() {
            let min = small
                .iter()
                .find(|(n, _)| *n == c.name)
                .map_or(500, |(_, m)| *m);
            assert!(c.cases.len() >= min, "{}: {}", c.name, c.cases.len());
            let mut ids: Vec<&str> = c.cases.iter().map(|c| c.id.as_str()).collect();
            ids.sort_unstable();
            let n = ids.len();
            ids.dedup();
            assert_eq!(ids.len(), n, "{}", c.name);
        }
    }

    #[test]
    fn edits_create_and_remove_nested_fields() {
        let mut v = json!({"spec": {"containers": [{"name": "a"}]}});
        Edit::Set("/spec/containers/1", json!({"name": "b"})).apply(&mut v);
        Edit::Set("/spec/x/y", json!(1)).apply(&mut v);
        Edit::Remove("/spec/containers/0/name").apply(&mut v);
        assert_eq!(
            v,
            json!({"spec": {"containers": [{}, {"name": "b"}], "x": {"y": 1}}})
        );
        let mut v = json!({"metadata": {}});
        Edit::Set("/metadata/labels/a~1b", json!("v")).apply(&mut v);
        assert_eq!(v, json!({"metadata": {"labels": {"a/b": "v"}}}));
    }
}
