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

/// `now`: the current UTC date and time (RFC 3339) and Unix time.
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
                &json!({"utc": rfc3339(secs), "unix": secs}),
            ))
        },
    )
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(784_111_777), "1994-11-06T08:49:37Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
