//! Cron schedules as OpenKruise's AdvancedCronJob reads them: robfig/cron v3's `ParseStandard`
//! (five fields — minute, hour, day of month, month, day of week — or a descriptor) with the
//! `TZ=` / `CRON_TZ=` prefix, and `formatSchedule` (OpenKruise v1.9.0
//! `pkg/controller/advancedcronjob/advancedcronjob_utils.go`), which puts `spec.timeZone` in
//! front as `TZ=<zone>` when the schedule names no zone itself.
//!
//! The cron fields are parsed and evaluated by the `croner` crate (Vixie-cron semantics: when
//! neither day field is `*`, a day matches either); this module adds what robfig/cron has
//! around them, with its error texts: the zone prefix (`provided bad location …`), the
//! descriptors (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
//! `@hourly`, case-sensitive as robfig's; `@every <Go duration>`, at least one second, whole
//! seconds), the field count (`expected exactly 5 fields, found N: [..]`) and robfig's refusal
//! of croner's extensions (`L`, `W`, `#`, `+`, names in numeric fields). Known difference: the
//! texts of errors inside a field are croner's (the verdict is the same).

use std::fmt;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// robfig/cron returned this error.
    Invalid(String),
    /// robfig/cron panics on this input (a `TZ=` prefix with no space after it); OpenKruise's
    /// webhook recovers and reports `invalid cron schedule: <panic>`.
    Panic(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Invalid(m) | ParseError::Panic(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Clone)]
enum Kind {
    Cron(Box<Cron>),
    /// `@every`: whole seconds, at least one.
    Every(SignedDuration),
}

/// A parsed schedule: its times and the zone they are computed in.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    tz: TimeZone,
}

/// Go's `time.LoadLocation`: `""` and `"UTC"` are UTC, `"Local"` the process' zone, anything
/// else an IANA name (error texts as Go's).
pub fn load_location(name: &str) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        "Local" => Ok(TimeZone::system()),
        _ if name.contains("..") || name.starts_with('/') || name.starts_with('\\') => {
            Err("time: invalid location name".to_string())
        }
        _ => TimeZone::get(name).map_err(|_| format!("unknown time zone {name}")),
    }
}

/// OpenKruise's `formatSchedule`: a schedule that mentions `TZ` is kept; else a `timeZone`
/// that loads is put in front as `TZ=<zone> `; else the schedule alone.
pub fn format_schedule(schedule: &str, time_zone: Option<&str>) -> String {
    if schedule.contains("TZ") {
        return schedule.to_string();
    }
    match time_zone {
        Some(tz) if load_location(tz).is_ok() => format!("TZ={tz} {schedule}"),
        _ => schedule.to_string(),
    }
}

/// Go's `strconv.Quote` for the texts robfig quotes (ASCII; others are escaped as Rust does).
fn go_quote(s: &str) -> String {
    format!("{s:?}")
}

/// Go's `time.ParseDuration` error texts from `go-parse-duration`'s.
fn go_duration_error(input: &str, err: &go_parse_duration::Error) -> String {
    let go_parse_duration::Error::ParseError(msg) = err;
    let q = go_quote(input);
    if msg.starts_with("missing unit") {
        format!("time: missing unit in duration {q}")
    } else if let Some(rest) = msg.strip_prefix("unknown unit ") {
        let unit = rest.split(" in duration").next().unwrap_or("");
        format!("time: unknown unit {} in duration {q}", go_quote(unit))
    } else {
        format!("time: invalid duration {q}")
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// robfig's refusal of what croner accepts and robfig does not: characters outside its
/// syntax and words that are not a name of that field (robfig's `strconv.Atoi` error).
fn robfig_field_check(index: usize, field: &str) -> Result<(), ParseError> {
    for expr in field.split(',').filter(|e| !e.is_empty()) {
        let range = expr.split('/').next().unwrap_or("");
        for atom in range.split('-') {
            if atom.is_empty()
                || atom == "*"
                || atom == "?"
                || atom.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            let lower = atom.to_ascii_lowercase();
            let named = match index {
                3 => MONTHS.contains(&lower.as_str()),
                4 => DAYS.contains(&lower.as_str()),
                _ => false,
            };
            if !named {
                return Err(ParseError::Invalid(format!(
                    "failed to parse int from {atom}: strconv.Atoi: parsing {}: invalid syntax",
                    go_quote(atom)
                )));
            }
        }
    }
    Ok(())
}

fn croner_parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .sloppy_ranges(true)
        .build()
}

/// robfig/cron v3's `ParseStandard` (see the module documentation).
pub fn parse_standard(spec: &str) -> Result<Schedule, ParseError> {
    if spec.is_empty() {
        return Err(ParseError::Invalid("empty spec string".into()));
    }
    let mut tz = TimeZone::system();
    let mut rest = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let Some(space) = spec.find(' ') else {
            // Go's message for `spec[eq+1 : -1]` names only the bad upper bound.
            return Err(ParseError::Panic(
                "runtime error: slice bounds out of range [:-1]".to_string(),
            ));
        };
        let name = &spec[eq + 1..space];
        tz = load_location(name)
            .map_err(|e| ParseError::Invalid(format!("provided bad location {name}: {e}")))?;
        rest = spec[space..].trim();
    }
    if rest.starts_with('@') {
        return parse_descriptor(rest).map(|kind| Schedule { kind, tz });
    }
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(ParseError::Invalid(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        )));
    }
    for (i, f) in fields.iter().enumerate() {
        robfig_field_check(i, f)?;
    }
    let cron = croner_parser()
        .parse(&fields.join(" "))
        .map_err(|e| ParseError::Invalid(e.to_string()))?;
    Ok(Schedule {
        kind: Kind::Cron(Box::new(cron)),
        tz,
    })
}

fn parse_descriptor(d: &str) -> Result<Kind, ParseError> {
    let nickname = match d {
        "@yearly" | "@annually" => "@yearly",
        "@monthly" => "@monthly",
        "@weekly" => "@weekly",
        "@daily" | "@midnight" => "@daily",
        "@hourly" => "@hourly",
        _ => {
            const EVERY: &str = "@every ";
            let Some(text) = d.strip_prefix(EVERY) else {
                return Err(ParseError::Invalid(format!("unrecognized descriptor: {d}")));
            };
            let nanos = go_parse_duration::parse_duration(text).map_err(|e| {
                ParseError::Invalid(format!(
                    "failed to parse duration {d}: {}",
                    go_duration_error(text, &e)
                ))
            })?;
            // robfig's `Every`: below a second is a second; sub-second parts are dropped.
            let secs = (nanos / 1_000_000_000).max(1);
            return Ok(Kind::Every(SignedDuration::from_secs(secs)));
        }
    };
    let cron = croner_parser()
        .parse(nickname)
        .map_err(|e| ParseError::Invalid(e.to_string()))?;
    Ok(Kind::Cron(Box::new(cron)))
}

impl Schedule {
    /// The zone robfig returns the times in (and OpenKruise formats the `scheduled-at`
    /// annotation in): the schedule's for cron fields, the process' for `@every` (robfig's
    /// `ConstantDelaySchedule` keeps the zone of the time it is given, the local one).
    pub fn time_zone(&self) -> TimeZone {
        match self.kind {
            Kind::Cron(_) => self.tz.clone(),
            Kind::Every(_) => TimeZone::system(),
        }
    }

    /// robfig's `Schedule.Next`: the first activation strictly after `t` (whole seconds), or
    /// `None` when there is none within croner's search limit.
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        match &self.kind {
            Kind::Every(d) => {
                let whole = Timestamp::from_second(t.as_second()).ok()?;
                whole.checked_add(*d).ok()
            }
            Kind::Cron(c) => {
                let zoned = t.to_zoned(self.tz.clone());
                c.find_next_occurrence(&zoned, false)
                    .ok()
                    .map(|z| z.timestamp())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn err(spec: &str) -> String {
        parse_standard(spec).unwrap_err().to_string()
    }

    #[test]
    fn five_fields_in_utc() {
        let s = parse_standard("TZ=UTC */5 * * * *").unwrap();
        assert_eq!(
            s.next(ts("2026-01-01T10:02:30Z")),
            Some(ts("2026-01-01T10:05:00Z"))
        );
        assert_eq!(
            s.next(ts("2026-01-01T10:05:00Z")),
            Some(ts("2026-01-01T10:10:00Z"))
        );
    }

    #[test]
    fn time_zone_prefix_and_format_schedule() {
        assert_eq!(
            format_schedule("0 9 * * *", Some("Asia/Shanghai")),
            "TZ=Asia/Shanghai 0 9 * * *"
        );
        assert_eq!(
            format_schedule("CRON_TZ=UTC 0 9 * * *", Some("Asia/Shanghai")),
            "CRON_TZ=UTC 0 9 * * *"
        );
        assert_eq!(format_schedule("0 9 * * *", Some("Nowhere/X")), "0 9 * * *");
        let s = parse_standard(&format_schedule("0 9 * * *", Some("Asia/Shanghai"))).unwrap();
        // 09:00 in Shanghai is 01:00 UTC.
        assert_eq!(
            s.next(ts("2026-01-01T00:00:00Z")),
            Some(ts("2026-01-01T01:00:00Z"))
        );
        let s = parse_standard("CRON_TZ=America/New_York 30 6 * * *").unwrap();
        assert_eq!(
            s.next(ts("2026-07-01T00:00:00Z")),
            Some(ts("2026-07-01T10:30:00Z"))
        );
    }

    #[test]
    fn descriptors() {
        let h = parse_standard("TZ=UTC @hourly").unwrap();
        assert_eq!(
            h.next(ts("2026-01-01T10:00:00Z")),
            Some(ts("2026-01-01T11:00:00Z"))
        );
        let m = parse_standard("TZ=UTC @midnight").unwrap();
        assert_eq!(
            m.next(ts("2026-01-01T10:00:00Z")),
            Some(ts("2026-01-02T00:00:00Z"))
        );
        let w = parse_standard("TZ=UTC @weekly").unwrap();
        // 2026-01-01 is a Thursday; the next Sunday is the 4th.
        assert_eq!(
            w.next(ts("2026-01-01T10:00:00Z")),
            Some(ts("2026-01-04T00:00:00Z"))
        );
        let e = parse_standard("@every 1m30s").unwrap();
        assert_eq!(
            e.next(ts("2026-01-01T10:00:00.700Z")),
            Some(ts("2026-01-01T10:01:30Z"))
        );
        let tiny = parse_standard("@every 10ms").unwrap();
        assert_eq!(
            tiny.next(ts("2026-01-01T10:00:00Z")),
            Some(ts("2026-01-01T10:00:01Z"))
        );
    }

    #[test]
    fn day_fields_follow_vixie_cron() {
        // Both restricted: either matches (the 1st, or a Monday).
        let s = parse_standard("TZ=UTC 0 0 1 * MON").unwrap();
        // 2026-01-01 (Thu) 00:00 → next: Monday 2026-01-05.
        assert_eq!(
            s.next(ts("2026-01-01T00:00:00Z")),
            Some(ts("2026-01-05T00:00:00Z"))
        );
        // Only the weekday restricted: Mondays only.
        let s = parse_standard("TZ=UTC 0 0 * * mon").unwrap();
        assert_eq!(
            s.next(ts("2026-01-05T00:00:00Z")),
            Some(ts("2026-01-12T00:00:00Z"))
        );
    }

    #[test]
    fn robfig_error_texts() {
        assert_eq!(err(""), "empty spec string");
        assert_eq!(
            err("* * * *"),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
        assert_eq!(
            err("0 * * * * *"),
            "expected exactly 5 fields, found 6: [0 * * * * *]"
        );
        assert_eq!(err("@Hourly"), "unrecognized descriptor: @Hourly");
        assert_eq!(
            err("@every 5x"),
            "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(
            err("@every abc"),
            "failed to parse duration @every abc: time: invalid duration \"abc\""
        );
        assert_eq!(
            err("TZ=Mars/Base * * * * *"),
            "provided bad location Mars/Base: unknown time zone Mars/Base"
        );
        assert_eq!(
            parse_standard("TZ=UTC").unwrap_err(),
            (ParseError::Panic("runtime error: slice bounds out of range [:-1]".into()))
        );
        assert_eq!(
            err("abc * * * *"),
            "failed to parse int from abc: strconv.Atoi: parsing \"abc\": invalid syntax"
        );
        // croner's extensions are refused, as robfig refuses them.
        assert!(parse_standard("0 0 L * *").is_err());
        assert!(parse_standard("0 0 * * 5#2").is_err());
        assert!(parse_standard("60 * * * *").is_err());
        assert!(parse_standard("*/0 * * * *").is_err());
        // robfig's `N/step` (N to the maximum) is accepted.
        assert!(parse_standard("5/15 * * * *").is_ok());
        assert!(parse_standard("* * ? * *").is_ok());
        assert!(parse_standard("0 0 1 jan,Feb *").is_ok());
    }
}
