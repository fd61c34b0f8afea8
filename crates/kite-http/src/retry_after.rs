//! `Retry-After`: how long a server asked to be left alone.

use std::time::Duration;

/// Parses a `Retry-After` header value: delay seconds (fractions allowed) or an HTTP date
/// relative to `now_unix` seconds. A delay too long for a `Duration` is `Duration::MAX`.
pub fn parse_retry_after(value: &str, now_unix: u64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let at = parse_http_date(v)?;
    Some(Duration::from_secs(at.saturating_sub(now_unix)))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds.
fn parse_http_date(s: &str) -> Option<u64> {
    let mut it = s.split_whitespace();
    let _weekday = it.next()?;
    let day: u64 = it.next()?.parse().ok()?;
    let month = match it.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    let in_range =
        (1..=31).contains(&day) && (1970..=9999).contains(&year) && h < 24 && m < 60 && sec < 61;
    if it.next()? != "GMT" || !in_range {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("7", 0), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", 0),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_retry_after("-1", 0), None);
        // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_770),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after("soon", 0), None);
    }

    #[test]
    fn a_date_out_of_range_is_no_date() {
        // Each of these once overflowed the arithmetic.
        for date in [
            "Sun, 06 Nov 99999999999999 08:49:37 GMT",
            "Sun, 06 Nov 1994 99999999999999:49:37 GMT",
            "Sun, 06 Nov 1994 08:99999999999999:37 GMT",
            "Sun, 06 Nov 1994 08:49:99999999999999 GMT",
        ] {
            assert_eq!(parse_retry_after(date, 0), None, "{date}");
        }
    }

    #[test]
    fn a_retry_after_too_long_for_a_duration_saturates() {
        // Found by the `bodies` fuzz target: this once panicked in Duration::from_secs_f64.
        let huge = "5".repeat(40);
        assert_eq!(parse_retry_after(&huge, 0), Some(Duration::MAX));
        assert_eq!(parse_retry_after("1e300", 0), Some(Duration::MAX));
    }
}
