//! `metav1.Time` as Kubernetes stores it: RFC 3339 in whole seconds. A time written with its
//! sub-second part is read back without it, so a value compared with what the API server
//! returns must be truncated first (Go's `metav1.Now()` truncates when it is marshalled).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// `t` without its sub-second part (truncated, as Go's `metav1.Time` marshals it).
pub fn whole_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// The current time as it is stored (OpenKruise's `metav1.Now()` once written).
pub fn now() -> Time {
    Time(whole_seconds(Timestamp::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_truncates() {
        let t: Timestamp = "2026-01-01T00:00:01.999Z".parse().unwrap();
        assert_eq!(whole_seconds(t).to_string(), "2026-01-01T00:00:01Z");
        let t: Timestamp = "1969-12-31T23:59:59.5Z".parse().unwrap();
        assert_eq!(whole_seconds(t).subsec_nanosecond(), 0);
        assert_eq!(now().0.subsec_nanosecond(), 0);
    }
}
