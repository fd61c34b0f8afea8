//! The current date and time.

use crate::{Tool, ToolError, ToolOutput, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

/// No arguments: the schema says so (`additionalProperties: false`), so constrained decoders
/// write `{}`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// `now`: the current UTC date and time as people say it (with the weekday), in RFC 3339,
/// and as Unix time.
pub fn now<C: Send + Sync + 'static>() -> impl Tool<C> {
    tool(
        "now",
        "The current date and time in UTC.",
        |_: NoArgs, _| async {
            let secs = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_err(|e| ToolError::model(format!("the clock is before 1970: {e}")))?
                .as_secs();
            Ok(ToolOutput::json(
                &json!({"date": spoken(secs), "utc": rfc3339(secs), "unix": secs}),
            ))
        },
    )
}

/// Unix seconds as people say them: `Tuesday, 8 December 2026, 00:23 UTC`.
fn spoken(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let (year, month, day) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{}, {day} {} {year}, {:02}:{:02} UTC",
        weekday(secs),
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60
    )
}

/// The UTC year, month (1–12) and day of Unix seconds `secs`.
fn civil(secs: u64) -> (i64, i64, i64) {
    // Howard Hinnant's algorithm.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339(secs: u64) -> String {
    let (year, month, day) = civil(secs);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The English name of the UTC weekday of Unix seconds `secs` (1970-01-01 was a Thursday).
fn weekday(secs: u64) -> &'static str {
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    DAYS[(secs / 86_400 % 7) as usize]
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_weekday() {
        assert_eq!(super::weekday(0), "Thursday");
        // 2000-02-29 was a Tuesday; 1994-11-06, a Sunday.
        assert_eq!(super::weekday(951_782_400), "Tuesday");
        assert_eq!(super::weekday(784_111_777), "Sunday");
        assert_eq!(
            super::spoken(784_111_777),
            "Sunday, 6 November 1994, 08:49 UTC"
        );
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(784_111_777), "1994-11-06T08:49:37Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
