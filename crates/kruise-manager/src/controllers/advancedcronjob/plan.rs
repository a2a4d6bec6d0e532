//! The pure decisions of one AdvancedCronJob pass (OpenKruise v1.9.0
//! `pkg/controller/advancedcronjob/advancedcronjob_job_controller.go` `reconcileJob`, the same
//! in `advancedcronjob_broadcastjob_controller.go`): which children are active, succeeded or
//! failed, the last schedule time, the finished children beyond the history limits, the
//! missed run and the next one (`getNextSchedule`, with its "too many missed start times"),
//! and what the concurrency policy makes of a due run.

use jiff::{SignedDuration, Timestamp};
use kruise_api::apps::v1beta1::advancedcronjob::concurrency_policy;
use kruise_engines::cron::Schedule;

/// More missed start times than this (since the last run, the creation, or the starting
/// deadline) and OpenKruise gives up computing them.
pub const MAX_MISSED_STARTS: usize = 100;

/// OpenKruise's error for more than [`MAX_MISSED_STARTS`] missed start times.
pub const TOO_MANY_MISSED: &str = "too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew";

/// How a child ended (`isJobFinished`: a `Complete` or `Failed` condition with status True).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// Still running.
    Active,
    /// `Complete`.
    Succeeded,
    /// `Failed`.
    Failed,
}

/// What a pass reads of one child (Job or BroadcastJob).
#[derive(Debug, Clone, PartialEq)]
pub struct Child {
    /// Its name.
    pub name: String,
    /// Its state.
    pub finished: Finished,
    /// Its `apps.kruise.io/scheduled-at` annotation, parsed (`None`: absent or unparsable).
    pub scheduled_at: Option<Timestamp>,
    /// `status.startTime`.
    pub start_time: Option<Timestamp>,
}

/// `isJobFinished` over a child's conditions `(type, status)`.
pub fn finished<'a>(conditions: impl IntoIterator<Item = (&'a str, &'a str)>) -> Finished {
    for (t, s) in conditions {
        if s == "True" {
            match t {
                "Complete" => return Finished::Succeeded,
                "Failed" => return Finished::Failed,
                _ => {}
            }
        }
    }
    Finished::Active
}

/// The latest scheduled time of the children (status.lastScheduleTime; `None` when none has
/// the annotation).
pub fn last_schedule_time(children: &[Child]) -> Option<Timestamp> {
    children.iter().filter_map(|c| c.scheduled_at).max()
}

/// The names of the finished children in `state` to delete so that at most `limit` remain,
/// the oldest first by `status.startTime` (no start time counts as oldest), as OpenKruise's
/// history clean-up. `None` limit: keep all.
pub fn history_to_delete(children: &[Child], state: Finished, limit: Option<i32>) -> Vec<String> {
    let Some(limit) = limit else {
        return Vec::new();
    };
    let mut done: Vec<&Child> = children.iter().filter(|c| c.finished == state).collect();
    // `sort.Slice` with "nil start time is before a set one".
    done.sort_by(|a, b| match (a.start_time, b.start_time) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    });
    let excess = (done.len() as i64 - i64::from(limit)).max(0) as usize;
    done.into_iter()
        .take(excess)
        .map(|c| c.name.clone())
        .collect()
}

/// `getNextSchedule`'s answer: the latest start time missed up to now (none) and the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// The most recent due time not yet run, if any.
    pub missed: Option<Timestamp>,
    /// The next time after now (`None`: the schedule has no further time).
    pub next: Option<Timestamp>,
}

/// OpenKruise's `getNextSchedule`: start from the last schedule time (else the creation time),
/// or from `now - startingDeadlineSeconds` when that is later; walk the times up to `now`;
/// more than [`MAX_MISSED_STARTS`] is an error ([`TOO_MANY_MISSED`]).
pub fn next_schedule(
    schedule: &Schedule,
    created: Timestamp,
    last_schedule: Option<Timestamp>,
    starting_deadline_seconds: Option<i64>,
    now: Timestamp,
) -> Result<Times, &'static str> {
    let mut earliest = last_schedule.unwrap_or(created);
    if let Some(d) = starting_deadline_seconds {
        let deadline = now
            .checked_sub(SignedDuration::from_secs(d))
            .unwrap_or(Timestamp::MIN);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    if earliest > now {
        return Ok(Times {
            missed: None,
            next: schedule.next(now),
        });
    }
    let mut missed = None;
    let mut starts = 0;
    let mut t = schedule.next(earliest);
    while let Some(at) = t.filter(|at| *at <= now) {
        missed = Some(at);
        starts += 1;
        if starts > MAX_MISSED_STARTS {
            return Err(TOO_MANY_MISSED);
        }
        t = schedule.next(at);
    }
    Ok(Times {
        missed,
        next: schedule.next(now),
    })
}

/// What to do about a due run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// Nothing is due.
    NothingDue,
    /// The missed run is past `startingDeadlineSeconds`.
    TooLate(Timestamp),
    /// `Forbid` and a child is still active.
    Forbidden(Timestamp),
    /// Create the child for this time, first deleting these active children (`Replace`).
    Create {
        /// The scheduled time (name suffix and annotation).
        at: Timestamp,
        /// Active children to delete first.
        replace: Vec<String>,
    },
}

/// Steps 6 of `reconcileJob`: the deadline check, then the concurrency policy
/// (`Allow`, the default, runs beside active children).
pub fn decide_run(
    missed: Option<Timestamp>,
    starting_deadline_seconds: Option<i64>,
    concurrency_policy: Option<&str>,
    children: &[Child],
    now: Timestamp,
) -> Run {
    let Some(at) = missed else {
        return Run::NothingDue;
    };
    if let Some(d) = starting_deadline_seconds
        && at
            .checked_add(SignedDuration::from_secs(d))
            .is_ok_and(|limit| limit < now)
    {
        return Run::TooLate(at);
    }
    let active: Vec<String> = children
        .iter()
        .filter(|c| c.finished == Finished::Active)
        .map(|c| c.name.clone())
        .collect();
    match concurrency_policy {
        Some(concurrency_policy::FORBID) if !active.is_empty() => Run::Forbidden(at),
        Some(concurrency_policy::REPLACE) => Run::Create {
            at,
            replace: active,
        },
        _ => Run::Create {
            at,
            replace: Vec::new(),
        },
    }
}

/// The child's name for scheduled time `at`: `<cronjob>-<unix seconds>` (deterministic, so a
/// run is created once whatever happens between passes).
pub fn child_name(cronjob: &str, at: Timestamp) -> String {
    format!("{cronjob}-{}", at.as_second())
}

/// The `apps.kruise.io/scheduled-at` value: Go's `time.RFC3339` of `at` in the schedule's
/// zone (`2006-01-02T15:04:05Z` at offset zero, else `…+08:00`).
pub fn scheduled_at_text(at: Timestamp, tz: &jiff::tz::TimeZone) -> String {
    let z = at.to_zoned(tz.clone());
    if z.offset().seconds() == 0 {
        z.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// The `apps.kruise.io/scheduled-at` annotation parsed as Go's `time.Parse(time.RFC3339, ..)`.
pub fn parse_scheduled_at(text: &str) -> Option<Timestamp> {
    text.parse::<Timestamp>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_engines::cron::parse_standard;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn child(name: &str, finished: Finished, at: Option<&str>, start: Option<&str>) -> Child {
        Child {
            name: name.into(),
            finished,
            scheduled_at: at.map(ts),
            start_time: start.map(ts),
        }
    }

    #[test]
    fn finished_reads_true_complete_or_failed() {
        assert_eq!(finished([("Complete", "True")]), Finished::Succeeded);
        assert_eq!(finished([("Failed", "True")]), Finished::Failed);
        assert_eq!(finished([("Complete", "False")]), Finished::Active);
        assert_eq!(finished([("Suspended", "True")]), Finished::Active);
        assert_eq!(finished([]), Finished::Active);
    }

    #[test]
    fn last_schedule_time_is_the_latest_annotation() {
        let c = [
            child("a", Finished::Succeeded, Some("2026-01-01T10:00:00Z"), None),
            child("b", Finished::Active, Some("2026-01-01T10:02:00Z"), None),
            child("c", Finished::Active, None, None),
        ];
        assert_eq!(last_schedule_time(&c), Some(ts("2026-01-01T10:02:00Z")));
        assert_eq!(last_schedule_time(&c[2..]), None);
    }

    #[test]
    fn history_keeps_the_newest_by_start_time() {
        let c = [
            child(
                "s3",
                Finished::Succeeded,
                None,
                Some("2026-01-01T10:03:00Z"),
            ),
            child(
                "s1",
                Finished::Succeeded,
                None,
                Some("2026-01-01T10:01:00Z"),
            ),
            child("s0", Finished::Succeeded, None, None),
            child(
                "s2",
                Finished::Succeeded,
                None,
                Some("2026-01-01T10:02:00Z"),
            ),
            child("f1", Finished::Failed, None, Some("2026-01-01T10:01:00Z")),
            child("a", Finished::Active, None, Some("2026-01-01T09:00:00Z")),
        ];
        assert_eq!(
            history_to_delete(&c, Finished::Succeeded, Some(2)),
            vec!["s0".to_string(), "s1".to_string()]
        );
        assert_eq!(
            history_to_delete(&c, Finished::Succeeded, Some(4)),
            Vec::<String>::new()
        );
        assert_eq!(history_to_delete(&c, Finished::Succeeded, Some(0)).len(), 4);
        assert_eq!(
            history_to_delete(&c, Finished::Succeeded, None),
            Vec::<String>::new()
        );
        assert_eq!(
            history_to_delete(&c, Finished::Failed, Some(0)),
            vec!["f1".to_string()]
        );
    }

    #[test]
    fn next_schedule_from_creation_and_last_run() {
        let s = parse_standard("TZ=UTC * * * * *").unwrap();
        let created = ts("2026-01-01T10:00:30Z");
        // Nothing due before the first minute.
        let t = next_schedule(&s, created, None, None, ts("2026-01-01T10:00:50Z")).unwrap();
        assert_eq!(t.missed, None);
        assert_eq!(t.next, Some(ts("2026-01-01T10:01:00Z")));
        // Three minutes later: the latest missed run is the one due.
        let t = next_schedule(&s, created, None, None, ts("2026-01-01T10:03:10Z")).unwrap();
        assert_eq!(t.missed, Some(ts("2026-01-01T10:03:00Z")));
        assert_eq!(t.next, Some(ts("2026-01-01T10:04:00Z")));
        // Run already made at 10:03: nothing due.
        let t = next_schedule(
            &s,
            created,
            Some(ts("2026-01-01T10:03:00Z")),
            None,
            ts("2026-01-01T10:03:10Z"),
        )
        .unwrap();
        assert_eq!(t.missed, None);
    }

    #[test]
    fn too_many_missed_start_times_unless_a_deadline_bounds_them() {
        let s = parse_standard("TZ=UTC * * * * *").unwrap();
        let created = ts("2026-01-01T00:00:00Z");
        let now = ts("2026-01-01T02:00:10Z");
        assert_eq!(
            next_schedule(&s, created, None, None, now),
            Err(TOO_MANY_MISSED)
        );
        // 100 missed is still fine.
        let t = next_schedule(&s, created, None, None, ts("2026-01-01T01:40:00Z")).unwrap();
        assert_eq!(t.missed, Some(ts("2026-01-01T01:40:00Z")));
        let t = next_schedule(&s, created, None, Some(200), now).unwrap();
        assert_eq!(t.missed, Some(ts("2026-01-01T02:00:00Z")));
    }

    #[test]
    fn deadline_and_concurrency() {
        let now = ts("2026-01-01T10:03:30Z");
        let t = ts("2026-01-01T10:03:00Z");
        let at = Some(t);
        let running = [child("old", Finished::Active, None, None)];
        assert_eq!(decide_run(None, None, None, &running, now), Run::NothingDue);
        assert_eq!(
            decide_run(at, Some(10), None, &running, now),
            Run::TooLate(t)
        );
        assert!(matches!(
            decide_run(at, Some(60), None, &running, now),
            Run::Create { .. }
        ));
        assert_eq!(
            decide_run(at, None, Some("Forbid"), &running, now),
            Run::Forbidden(t)
        );
        assert_eq!(
            decide_run(at, None, Some("Forbid"), &[], now),
            Run::Create {
                at: t,
                replace: vec![]
            }
        );
        assert_eq!(
            decide_run(at, None, Some("Replace"), &running, now),
            Run::Create {
                at: t,
                replace: vec!["old".into()]
            }
        );
        assert_eq!(
            decide_run(at, None, Some("Allow"), &running, now),
            Run::Create {
                at: t,
                replace: vec![]
            }
        );
    }

    #[test]
    fn names_and_annotation() {
        let at = ts("2026-01-01T10:03:00Z");
        assert_eq!(child_name("acj", at), "acj-1767261780");
        assert_eq!(
            scheduled_at_text(at, &jiff::tz::TimeZone::UTC),
            "2026-01-01T10:03:00Z"
        );
        let sh = jiff::tz::TimeZone::get("Asia/Shanghai").unwrap();
        let text = scheduled_at_text(at, &sh);
        assert_eq!(text, "2026-01-01T18:03:00+08:00");
        assert_eq!(parse_scheduled_at(&text), Some(at));
        assert_eq!(parse_scheduled_at("garbage"), None);
    }
}
