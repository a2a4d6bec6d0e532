//! The decisions of the `autobudget` controller as pure functions: which `maxUnavailable` a
//! workload's annotation asks for ([`wanted`]), the budget's name ([`budget_name`]) and shape
//! ([`desired_budget`]), and what to write given the budgets the cache shows ([`plan`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise_api::keys;
use kruise_api::policy::v1alpha1::{
    PodUnavailableBudget, PodUnavailableBudgetSpec, TargetReference,
};
use kruise_api::validation::field::{Path, aggregate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Longest object name Kubernetes accepts (a DNS subdomain).
pub const MAX_NAME_LEN: usize = 253;

/// Event reason: the annotation (or the update strategy it points to) gives no valid budget.
pub const REASON_INVALID: &str = "AutoBudgetInvalid";
/// Event reason: a budget the workload does not own blocks the automatic one.
pub const REASON_CONFLICT: &str = "AutoBudgetConflict";

/// The workload kinds the annotation [`keys::AUTO_BUDGET`] works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WorkloadKind {
    /// `apps.kruise.io/v1alpha1` CloneSet.
    CloneSet,
    /// `apps.kruise.io/v1beta1` StatefulSet (Advanced StatefulSet).
    AdvancedStatefulSet,
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` StatefulSet.
    StatefulSet,
}

impl WorkloadKind {
    /// Every kind, in the order the budget's name prefixes are tried.
    pub const ALL: [WorkloadKind; 4] = [
        WorkloadKind::CloneSet,
        WorkloadKind::AdvancedStatefulSet,
        WorkloadKind::Deployment,
        WorkloadKind::StatefulSet,
    ];

    /// The apiVersion written into the budget's `targetRef` and owner reference.
    pub fn api_version(self) -> &'static str {
        match self {
            WorkloadKind::CloneSet => "apps.kruise.io/v1alpha1",
            WorkloadKind::AdvancedStatefulSet => "apps.kruise.io/v1beta1",
            WorkloadKind::Deployment | WorkloadKind::StatefulSet => "apps/v1",
        }
    }

    /// The API kind.
    pub fn kind(self) -> &'static str {
        match self {
            WorkloadKind::CloneSet => "CloneSet",
            WorkloadKind::AdvancedStatefulSet | WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::Deployment => "Deployment",
        }
    }

    /// The prefix of the budget's name (`<prefix>-<workload>`); the Advanced StatefulSet's
    /// differs from the `apps/v1` StatefulSet's so that both may have budgets under one name.
    pub fn prefix(self) -> &'static str {
        match self {
            WorkloadKind::CloneSet => "cloneset",
            WorkloadKind::AdvancedStatefulSet => "advancedstatefulset",
            WorkloadKind::Deployment => "deployment",
            WorkloadKind::StatefulSet => "statefulset",
        }
    }

    /// The update strategy's `maxUnavailable` when the workload leaves it unset (the value
    /// its controller assumes): CloneSet `20%`, Deployment `25%`, StatefulSets `1`.
    pub fn default_max_unavailable(self) -> IntOrString {
        match self {
            WorkloadKind::CloneSet => {
                IntOrString::String(keys::DEFAULT_CLONESET_MAX_UNAVAILABLE.to_owned())
            }
            WorkloadKind::Deployment => IntOrString::String("25%".to_owned()),
            WorkloadKind::AdvancedStatefulSet | WorkloadKind::StatefulSet => IntOrString::Int(1),
        }
    }

    /// The kind a budget's `targetRef` names (group and kind; any version), if one of these.
    pub fn of_target(r: &TargetReference) -> Option<Self> {
        let group = r
            .api_version
            .as_deref()
            .and_then(|v| v.split_once('/'))
            .map_or("", |(g, _)| g);
        match (group, r.kind.as_deref()?) {
            ("apps.kruise.io", "CloneSet") => Some(WorkloadKind::CloneSet),
            ("apps.kruise.io", "StatefulSet") => Some(WorkloadKind::AdvancedStatefulSet),
            ("apps", "Deployment") => Some(WorkloadKind::Deployment),
            ("apps", "StatefulSet") => Some(WorkloadKind::StatefulSet),
            _ => None,
        }
    }
}

/// What the controller knows of one workload (read from the shared cache).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadInfo {
    /// Its kind.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID (the budget's controller owner reference).
    pub uid: String,
    /// resourceVersion (named in the Events about it, so that an Event about a later version
    /// is an Event of its own rather than a repetition of an earlier one).
    pub resource_version: String,
    /// The value of [`keys::AUTO_BUDGET`], if present.
    pub annotation: Option<String>,
    /// The update strategy's `maxUnavailable`, if set.
    pub max_unavailable: Option<IntOrString>,
}

/// What the annotation asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Wanted {
    /// No budget: the annotation is absent, empty or `"false"`.
    Off,
    /// A budget with this `maxUnavailable`.
    Budget(IntOrString),
    /// No budget, and a Warning Event with this message: the value is neither `"true"`,
    /// `"false"`, an integer nor a percentage, or the budget it gives would be refused.
    Invalid(String),
}

/// The budget the annotation asks for (see [`keys::AUTO_BUDGET`]): `"true"` takes the update
/// strategy's `maxUnavailable` (or the kind's default), a non-negative integer or a percentage
/// up to 100% is taken as it is.
pub fn wanted(w: &WorkloadInfo) -> Wanted {
    match w.annotation.as_deref() {
        None | Some("" | "false") => Wanted::Off,
        Some("true") => Wanted::Budget(
            w.max_unavailable
                .clone()
                .unwrap_or_else(|| w.kind.default_max_unavailable()),
        ),
        Some(v) => match parse_value(v) {
            Some(m) => Wanted::Budget(m),
            None => Wanted::Invalid(format!(
                "annotation {}={:?} is invalid: want \"true\", \"false\", a non-negative integer or a percentage from 0% to 100%; no PodUnavailableBudget is kept",
                keys::AUTO_BUDGET,
                v
            )),
        },
    }
}

/// An annotation value that is a `maxUnavailable` by itself: decimal digits fitting an
/// `int32` (`"2"`), or decimal digits and `%` up to 100 (`"30%"`, as apimachinery's
/// `IsValidPercent` and the budget webhook's 100% limit).
pub fn parse_value(v: &str) -> Option<IntOrString> {
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if all_digits(v) {
        return v.parse::<i32>().ok().map(IntOrString::Int);
    }
    let digits = v.strip_suffix('%')?;
    (all_digits(digits) && digits.parse::<u32>().is_ok_and(|n| n <= 100))
        .then(|| IntOrString::String(v.to_owned()))
}

/// The budget's name: `<kind prefix>-<workload name>`; a name longer than
/// [`MAX_NAME_LEN`] is cut and ends with `-` and eight hex digits of the FNV-1a hash of the
/// whole name, so that it stays unique and valid.
pub fn budget_name(kind: WorkloadKind, workload: &str) -> String {
    let full = format!("{}-{}", kind.prefix(), workload);
    if full.len() <= MAX_NAME_LEN {
        return full;
    }
    let suffix = format!("-{:08x}", fnv1a32(full.as_bytes()));
    let head: String = full.chars().take(MAX_NAME_LEN - suffix.len()).collect();
    format!("{}{suffix}", head.trim_end_matches(['-', '.']))
}

/// 32-bit FNV-1a.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// The budget for workload `w` with `max_unavailable`: in its namespace, named
/// [`budget_name`], labelled [`keys::AUTO_BUDGET_LABEL`], `targetRef` the workload, and
/// controlled by it (owner reference with `controller` and `blockOwnerDeletion`, so the
/// garbage collector deletes it with the workload).
pub fn desired_budget(w: &WorkloadInfo, max_unavailable: IntOrString) -> PodUnavailableBudget {
    PodUnavailableBudget {
        metadata: ObjectMeta {
            name: Some(budget_name(w.kind, &w.name)),
            namespace: Some(w.namespace.clone()),
            labels: Some(BTreeMap::from([(
                keys::AUTO_BUDGET_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: w.kind.api_version().to_owned(),
                kind: w.kind.kind().to_owned(),
                name: w.name.clone(),
                uid: w.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: PodUnavailableBudgetSpec {
            target_reference: Some(target_of(w)),
            max_unavailable: Some(max_unavailable),
            ..PodUnavailableBudgetSpec::default()
        },
        status: None,
    }
}

fn target_of(w: &WorkloadInfo) -> TargetReference {
    TargetReference {
        api_version: Some(w.kind.api_version().to_owned()),
        kind: Some(w.kind.kind().to_owned()),
        name: Some(w.name.clone()),
    }
}

/// Whether `budget` is controlled by the object with UID `uid`.
pub fn owned_by(budget: &PodUnavailableBudget, uid: &str) -> bool {
    budget
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// A write of one pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Nothing to write.
    None,
    /// Create this budget.
    Create(Box<PodUnavailableBudget>),
    /// Merge-patch the owned budget `name` with `patch` (its `maxUnavailable`, no
    /// `minAvailable`, the label).
    Patch {
        /// Budget name.
        name: String,
        /// The JSON merge patch.
        patch: Value,
    },
    /// Delete the owned budget `name`, if it still has `uid`.
    Delete {
        /// Budget name.
        name: String,
        /// Its UID (the deletion's precondition).
        uid: String,
    },
}

/// A Warning Event on the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// [`REASON_INVALID`] or [`REASON_CONFLICT`].
    pub reason: &'static str,
    /// The note.
    pub message: String,
}

/// The outcome of one pass over one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The write.
    pub write: Write,
    /// The Warning Event to record, if any.
    pub warning: Option<Warning>,
}

/// One pass over workload `w`: `existing` is the budget of its [`budget_name`] in the cache,
/// `others` the other budgets of its namespace.
///
/// * annotation off: delete the budget if `w` controls it, else nothing;
/// * invalid value (or a budget our own webhook would refuse): a [`REASON_INVALID`] warning,
///   and the owned budget, if any, is deleted;
/// * a budget of that name not controlled by `w`, or another budget covering the same
///   workload (the webhook's conflict rule): a [`REASON_CONFLICT`] warning naming it, nothing
///   written;
/// * no budget: create it; an owned budget whose `maxUnavailable`, `minAvailable` or label
///   drifted: patch it back; one whose `targetRef` differs (immutable): delete it (the next
///   pass creates it again); one being deleted: wait.
pub fn plan<'a>(
    w: &WorkloadInfo,
    existing: Option<&PodUnavailableBudget>,
    others: impl IntoIterator<Item = &'a PodUnavailableBudget>,
) -> Plan {
    let name = budget_name(w.kind, &w.name);
    let owned = existing.filter(|b| owned_by(b, &w.uid));
    let delete_owned = || match owned {
        Some(b) => Write::Delete {
            name: name.clone(),
            uid: b.metadata.uid.clone().unwrap_or_default(),
        },
        None => Write::None,
    };
    let invalid = |message: String| Plan {
        write: delete_owned(),
        warning: Some(Warning {
            reason: REASON_INVALID,
            message,
        }),
    };
    let max = match wanted(w) {
        Wanted::Off => {
            return Plan {
                write: delete_owned(),
                warning: None,
            };
        }
        Wanted::Invalid(message) => return invalid(message),
        Wanted::Budget(m) => m,
    };
    let desired = desired_budget(w, max.clone());
    let errs = kruise_webhook::podunavailablebudget::validate_budget(&desired, None);
    if let Some(msg) = aggregate(&errs) {
        return invalid(format!(
            "annotation {}={:?} gives maxUnavailable {} that a PodUnavailableBudget cannot have: {msg}; no PodUnavailableBudget is kept",
            keys::AUTO_BUDGET,
            w.annotation.as_deref().unwrap_or(""),
            show(&max)
        ));
    }
    let conflict = |message: String| Plan {
        write: Write::None,
        warning: Some(Warning {
            reason: REASON_CONFLICT,
            message,
        }),
    };
    let Some(existing) = existing else {
        for other in others {
            let one = kruise_webhook::podunavailablebudget::validate_conflicts(
                &desired,
                std::iter::once(other),
                &Path::new("spec"),
            );
            if !one.is_empty() {
                return conflict(format!(
                    "PodUnavailableBudget {}/{} already covers {} {}; the automatic PodUnavailableBudget {name} is not created",
                    w.namespace,
                    other.metadata.name.as_deref().unwrap_or(""),
                    w.kind.kind(),
                    w.name
                ));
            }
        }
        return Plan {
            write: Write::Create(Box::new(desired)),
            warning: None,
        };
    };
    if owned.is_none() {
        return conflict(format!(
            "PodUnavailableBudget {}/{name} exists and is not controlled by this {}; it is left alone and no automatic PodUnavailableBudget is kept",
            w.namespace,
            w.kind.kind()
        ));
    }
    let write = if existing.metadata.deletion_timestamp.is_some() {
        Write::None
    } else if existing.spec.target_reference != desired.spec.target_reference {
        delete_owned()
    } else if existing.spec.max_unavailable.as_ref() != Some(&max)
        || existing.spec.min_available.is_some()
        || existing
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(keys::AUTO_BUDGET_LABEL))
            .map(String::as_str)
            != Some("true")
    {
        Write::Patch {
            name,
            patch: json!({
                "metadata": {"labels": {keys::AUTO_BUDGET_LABEL: "true"}},
                "spec": {"maxUnavailable": max, "minAvailable": null},
            }),
        }
    } else {
        Write::None
    };
    Plan {
        write,
        warning: None,
    }
}

/// An IntOrString as users write it (`1`, `20%`).
pub fn show(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(kind: WorkloadKind, annotation: Option<&str>) -> WorkloadInfo {
        WorkloadInfo {
            kind,
            namespace: "ns".into(),
            name: "web".into(),
            uid: "uid-1".into(),
            resource_version: "1".into(),
            annotation: annotation.map(str::to_owned),
            max_unavailable: None,
        }
    }

    fn s(v: &str) -> IntOrString {
        IntOrString::String(v.into())
    }

    #[test]
    fn values() {
        assert_eq!(parse_value("2"), Some(IntOrString::Int(2)));
        assert_eq!(parse_value("0"), Some(IntOrString::Int(0)));
        assert_eq!(parse_value("30%"), Some(s("30%")));
        assert_eq!(parse_value("100%"), Some(s("100%")));
        assert_eq!(parse_value("0%"), Some(s("0%")));
        for bad in [
            "abc",
            "-1",
            "+1",
            "150%",
            "101%",
            "%",
            "1.5",
            " 1",
            "1 ",
            "99999999999",
            "True",
        ] {
            assert_eq!(parse_value(bad), None, "{bad}");
        }
    }

    #[test]
    fn defaults_per_kind() {
        let want = |kind, strategy: Option<IntOrString>| {
            let mut w = workload(kind, Some("true"));
            w.max_unavailable = strategy;
            wanted(&w)
        };
        assert_eq!(want(WorkloadKind::CloneSet, None), Wanted::Budget(s("20%")));
        assert_eq!(
            want(WorkloadKind::Deployment, None),
            Wanted::Budget(s("25%"))
        );
        assert_eq!(
            want(WorkloadKind::StatefulSet, None),
            Wanted::Budget(IntOrString::Int(1))
        );
        assert_eq!(
            want(WorkloadKind::AdvancedStatefulSet, None),
            Wanted::Budget(IntOrString::Int(1))
        );
        assert_eq!(
            want(WorkloadKind::CloneSet, Some(IntOrString::Int(3))),
            Wanted::Budget(IntOrString::Int(3))
        );
        // An explicit value wins over the strategy.
        let mut w = workload(WorkloadKind::CloneSet, Some("40%"));
        w.max_unavailable = Some(IntOrString::Int(3));
        assert_eq!(wanted(&w), Wanted::Budget(s("40%")));
        for off in [None, Some(""), Some("false")] {
            assert_eq!(wanted(&workload(WorkloadKind::CloneSet, off)), Wanted::Off);
        }
        let Wanted::Invalid(msg) = wanted(&workload(WorkloadKind::CloneSet, Some("abc"))) else {
            panic!("abc is invalid")
        };
        assert!(
            msg.contains("policy.kruise-rs.io/pod-unavailable-budget=\"abc\""),
            "{msg}"
        );
    }

    #[test]
    fn names() {
        assert_eq!(budget_name(WorkloadKind::CloneSet, "web"), "cloneset-web");
        assert_eq!(
            budget_name(WorkloadKind::AdvancedStatefulSet, "db"),
            "advancedstatefulset-db"
        );
        assert_eq!(
            budget_name(WorkloadKind::StatefulSet, "db"),
            "statefulset-db"
        );
        assert_eq!(
            budget_name(WorkloadKind::Deployment, "web"),
            "deployment-web"
        );
        let long = "a".repeat(250);
        let n = budget_name(WorkloadKind::AdvancedStatefulSet, &long);
        assert_eq!(n.len(), MAX_NAME_LEN);
        assert_ne!(n, budget_name(WorkloadKind::StatefulSet, &long));
        // A cut that would end in '-' or '.' is trimmed before the hash.
        let dotted = format!("{}.{}", "b".repeat(223), "c".repeat(40));
        let n = budget_name(WorkloadKind::AdvancedStatefulSet, &dotted);
        assert!(n.len() <= MAX_NAME_LEN);
        assert!(!n.contains(".-"), "{n}");
    }

    #[test]
    fn creates_the_budget() {
        let mut w = workload(WorkloadKind::CloneSet, Some("true"));
        w.max_unavailable = Some(IntOrString::Int(2));
        let p = plan(&w, None, []);
        assert_eq!(p.warning, None);
        let Write::Create(b) = p.write else {
            panic!("{p:?}")
        };
        assert_eq!(b.metadata.name.as_deref(), Some("cloneset-web"));
        assert_eq!(b.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(b.spec.max_unavailable, Some(IntOrString::Int(2)));
        assert_eq!(
            b.spec.target_reference,
            Some(TargetReference {
                api_version: Some("apps.kruise.io/v1alpha1".into()),
                kind: Some("CloneSet".into()),
                name: Some("web".into()),
            })
        );
        let o = &b.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (o.uid.as_str(), o.controller, o.block_owner_deletion),
            ("uid-1", Some(true), Some(true))
        );
        assert_eq!(
            b.metadata.labels.as_ref().unwrap()[keys::AUTO_BUDGET_LABEL],
            "true"
        );
        assert!(kruise_webhook::podunavailablebudget::validate_budget(&b, None).is_empty());
    }

    fn owned(w: &WorkloadInfo, max: IntOrString) -> PodUnavailableBudget {
        let mut b = desired_budget(w, max);
        b.metadata.uid = Some("pub-uid".into());
        b
    }

    #[test]
    fn follows_and_reverts_drift() {
        let w = workload(WorkloadKind::Deployment, Some("1"));
        let b = owned(&w, IntOrString::Int(1));
        assert_eq!(plan(&w, Some(&b), []).write, Write::None);
        // The workload asks for something else now.
        let w2 = workload(WorkloadKind::Deployment, Some("30%"));
        assert_eq!(
            plan(&w2, Some(&b), []).write,
            Write::Patch {
                name: "deployment-web".into(),
                patch: json!({
                    "metadata": {"labels": {keys::AUTO_BUDGET_LABEL: "true"}},
                    "spec": {"maxUnavailable": "30%", "minAvailable": null},
                }),
            }
        );
        // A hand edit to minAvailable is reverted.
        let mut edited = b.clone();
        edited.spec.max_unavailable = None;
        edited.spec.min_available = Some(IntOrString::Int(2));
        assert!(matches!(
            plan(&w, Some(&edited), []).write,
            Write::Patch { .. }
        ));
        // A budget being deleted is waited for.
        let mut going = edited;
        going.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        assert_eq!(plan(&w, Some(&going), []).write, Write::None);
    }

    #[test]
    fn removal_deletes_only_what_it_owns() {
        let on = workload(WorkloadKind::StatefulSet, Some("true"));
        let b = owned(&on, IntOrString::Int(1));
        for off in [None, Some("false"), Some("")] {
            let w = workload(WorkloadKind::StatefulSet, off);
            assert_eq!(
                plan(&w, Some(&b), []),
                Plan {
                    write: Write::Delete {
                        name: "statefulset-web".into(),
                        uid: "pub-uid".into()
                    },
                    warning: None
                }
            );
            assert_eq!(plan(&w, None, []).write, Write::None);
        }
        // Someone else's budget of that name is not deleted.
        let mut theirs = b.clone();
        theirs.metadata.owner_references = None;
        let w = workload(WorkloadKind::StatefulSet, None);
        assert_eq!(plan(&w, Some(&theirs), []).write, Write::None);
        // A malformed value: warning, and the owned budget goes.
        let w = workload(WorkloadKind::StatefulSet, Some("150%"));
        let p = plan(&w, Some(&b), []);
        assert!(matches!(p.write, Write::Delete { .. }));
        assert_eq!(p.warning.unwrap().reason, REASON_INVALID);
    }

    #[test]
    fn conflicts_are_reported_not_touched() {
        let w = workload(WorkloadKind::CloneSet, Some("true"));
        // Same name, not ours.
        let mut theirs = owned(&w, IntOrString::Int(5));
        theirs.metadata.owner_references = None;
        let p = plan(&w, Some(&theirs), []);
        assert_eq!(p.write, Write::None);
        let warn = p.warning.unwrap();
        assert_eq!(warn.reason, REASON_CONFLICT);
        assert!(warn.message.contains("ns/cloneset-web"), "{}", warn.message);
        // Another name covering the same CloneSet (any version of the group).
        let mut other = theirs.clone();
        other.metadata.name = Some("hand-made".into());
        if let Some(r) = other.spec.target_reference.as_mut() {
            r.api_version = Some("apps.kruise.io/v1beta1".into());
        }
        let p = plan(&w, None, [&other]);
        assert_eq!(p.write, Write::None);
        assert!(p.warning.unwrap().message.contains("ns/hand-made"));
        // A budget over another workload is no conflict.
        if let Some(r) = other.spec.target_reference.as_mut() {
            r.name = Some("api".into());
        }
        assert!(matches!(plan(&w, None, [&other]).write, Write::Create(_)));
    }

    #[test]
    fn an_invalid_strategy_value_gives_no_budget() {
        let mut w = workload(WorkloadKind::Deployment, Some("true"));
        w.max_unavailable = Some(s("abc"));
        let p = plan(&w, None, []);
        assert_eq!(p.write, Write::None);
        assert_eq!(p.warning.unwrap().reason, REASON_INVALID);
    }

    #[test]
    fn target_kinds() {
        let t = |v: &str, k: &str| {
            WorkloadKind::of_target(&TargetReference {
                api_version: Some(v.into()),
                kind: Some(k.into()),
                name: Some("x".into()),
            })
        };
        assert_eq!(t("apps/v1", "StatefulSet"), Some(WorkloadKind::StatefulSet));
        assert_eq!(
            t("apps.kruise.io/v1alpha1", "StatefulSet"),
            Some(WorkloadKind::AdvancedStatefulSet)
        );
        assert_eq!(t("apps/v1", "ReplicaSet"), None);
        for k in WorkloadKind::ALL {
            assert_eq!(t(k.api_version(), k.kind()), Some(k));
        }
    }
}
