//! Stateful pod identities: ordinals parsed from pod names, reserved ordinals and the range of
//! ordinals a StatefulSet runs (OpenKruise v1.9.0 `pkg/util/api/asts.go` and
//! `pkg/controller/statefulset/stateful_set_utils.go`).

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// OpenKruise's `ParseRange`: `"a-b"` (exactly one `-`, both sides Go `strconv.Atoi` integers,
/// `a <= b`) → `(a, b)`.
///
/// # Errors
/// `invalid range <s>` for a wrong shape or `a > b`; Go's Atoi message for a side that is not an
/// integer.
pub fn parse_range(s: &str) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() != 2 {
        return Err(format!("invalid range {s}"));
    }
    let atoi = |p: &str| {
        p.parse::<i64>()
            .map_err(|_| format!("strconv.Atoi: parsing {p:?}: invalid syntax"))
    };
    let (start, end) = (atoi(parts[0])?, atoi(parts[1])?);
    if start > end {
        return Err(format!("invalid range {s}"));
    }
    Ok((start, end))
}

/// OpenKruise's `GetReserveOrdinalIntSet`: integers as they are, strings as inclusive ranges.
/// As in v1.9.0, one string that is not a valid range makes the whole set empty (the webhook
/// refuses such lists; objects stored before it did get no reserved ordinal at all).
pub fn reserve_set(reserve: &[IntOrString]) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for elem in reserve {
        match elem {
            IntOrString::Int(n) => {
                out.insert(i64::from(*n));
            }
            IntOrString::String(s) => match parse_range(s) {
                Ok((a, b)) => out.extend(a..=b),
                Err(_) => return BTreeSet::new(),
            },
        }
    }
    out
}

/// The parent name and ordinal of a stateful pod name (`<parent>-<ordinal>`, OpenKruise's
/// `getParentNameAndOrdinal` with the regexp `(.*)-([0-9]+)$`): `None` when the name has no
/// numeric suffix; an ordinal that overflows int32 is `-1` (the parent still matches).
pub fn parent_and_ordinal(pod_name: &str) -> Option<(&str, i32)> {
    let (parent, digits) = pod_name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse::<i32>().unwrap_or(-1)))
}

/// The ordinals a StatefulSet keeps pods at (OpenKruise `getStatefulSetReplicasRange`):
/// `replicas` ordinals counted upwards from `start`, skipping the reserved ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrdinalRange {
    /// First ordinal (`spec.ordinals.start`, 0 without the StatefulSetStartOrdinal gate).
    pub start: i32,
    /// One past the last ordinal in use.
    pub end: i32,
    /// Reserved ordinals ([`reserve_set`]).
    pub reserve: BTreeSet<i64>,
}

impl OrdinalRange {
    /// The range for `replicas` pods from `start` skipping `reserve`.
    pub fn new(replicas: i32, start: i32, reserve: BTreeSet<i64>) -> Self {
        let mut counted = 0;
        let mut o = start;
        while counted < replicas.max(0) {
            if !reserve.contains(&i64::from(o)) {
                counted += 1;
            }
            o += 1;
        }
        Self {
            start,
            end: o,
            reserve,
        }
    }

    /// Whether `ordinal` is reserved.
    pub fn is_reserved(&self, ordinal: i32) -> bool {
        self.reserve.contains(&i64::from(ordinal))
    }

    /// Whether a pod at `ordinal` belongs to the set (OpenKruise `podInOrdinalRange`): within
    /// `[start, end)` and not reserved.
    pub fn contains(&self, ordinal: i32) -> bool {
        ordinal >= self.start && ordinal < self.end && !self.is_reserved(ordinal)
    }

    /// Number of slots (`end - start`), reserved ones included.
    pub fn len(&self) -> usize {
        usize::try_from(self.end - self.start).unwrap_or(0)
    }

    /// Whether the range has no slot.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_go() {
        assert_eq!(parse_range("2-5"), Ok((2, 5)));
        assert_eq!(parse_range("+2-5"), Ok((2, 5)));
        assert!(parse_range("5-2").is_err());
        assert!(parse_range("5").is_err());
        assert!(parse_range("1-2-3").is_err());
        assert!(parse_range("a-3").unwrap_err().contains("invalid syntax"));
    }

    #[test]
    fn reserve_set_as_openkruise() {
        let r = reserve_set(&[IntOrString::Int(1), IntOrString::String("3-5".into())]);
        assert_eq!(r.into_iter().collect::<Vec<_>>(), vec![1, 3, 4, 5]);
        // one bad range empties everything (v1.9.0)
        let r = reserve_set(&[IntOrString::Int(1), IntOrString::String("x".into())]);
        assert!(r.is_empty());
    }

    #[test]
    fn ordinals_from_names() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web-99999999999"), Some(("web", -1)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-a1"), None);
        assert_eq!(parent_and_ordinal("web-"), None);
    }

    #[test]
    fn ordinal_range_skips_reserved() {
        let r = OrdinalRange::new(4, 2, [1, 3].into_iter().collect());
        assert_eq!((r.start, r.end), (2, 7));
        assert!(!r.contains(3) && r.contains(2) && r.contains(6) && !r.contains(7));
        let r = OrdinalRange::new(4, 0, [1, 3].into_iter().collect());
        assert_eq!(r.end, 6);
        let r = OrdinalRange::new(0, 0, BTreeSet::new());
        assert!(r.is_empty());
        let r = OrdinalRange::new(3, 10, BTreeSet::new());
        assert_eq!((r.start, r.end), (10, 13));
    }
}
