//! Provider error envelopes into typed errors.
//!
//! Every provider wraps errors differently: OpenAI and Groq `{"error":{"message","type",
//! "code","param"}}`, Anthropic `{"type":"error","error":{"type","message"},"request_id"}`,
//! Mistral `{"detail": ...}` or `{"message": ...}`, OpenRouter a numeric `code` and
//! `metadata.raw`. [`decode_error`] reads all of them; a body it cannot read still becomes an
//! [`ApiError`] carrying the status and the raw text.

use kite_core::ApiError;
use serde_json::Value;
use std::time::Duration;

/// The error an HTTP response with `status` and `body` stands for.
pub fn decode_error(status: u16, body: &[u8]) -> ApiError {
    let text = String::from_utf8_lossy(body);
    let mut err = match serde_json::from_slice::<Value>(body) {
        Ok(v) => from_value(Some(status), &v)
            .unwrap_or_else(|| ApiError::new(Some(status), fallback_message(status, &text))),
        Err(_) => ApiError::new(Some(status), fallback_message(status, &text)),
    };
    err.body = Some(text.into_owned());
    err
}

/// The error a JSON value holds, if it is an error envelope. `status` is the HTTP status, when
/// the error came with one; otherwise one named inside the error is used.
pub fn from_value(status: Option<u16>, v: &Value) -> Option<ApiError> {
    let obj = v.as_object()?;
    let inner = match obj.get("error") {
        Some(Value::Object(e)) => e,
        Some(Value::String(s)) => {
            return Some(ApiError::new(status, s.clone()));
        }
        _ => {
            // Mistral / FastAPI style bodies.
            let detail = obj.get("detail").or_else(|| obj.get("message"))?;
            let message = match detail {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let ty = obj.get("type").and_then(Value::as_str).map(str::to_owned);
            let code = obj.get("code").and_then(code_string);
            return Some(ApiError::new(status, message).with_code(code, ty));
        }
    };
    let mut message = inner
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    // OpenRouter puts the upstream provider's words in metadata.raw.
    if let Some(raw) = inner
        .get("metadata")
        .and_then(|m| m.get("raw"))
        .and_then(Value::as_str)
    {
        message = if message.is_empty() {
            raw.to_owned()
        } else {
            format!("{message}: {raw}")
        };
    }
    let named_status = inner
        .get("status_code")
        .or_else(|| inner.get("code"))
        .and_then(Value::as_u64)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (100..600).contains(n));
    let code = inner.get("code").and_then(code_string);
    let ty = inner.get("type").and_then(Value::as_str).map(str::to_owned);
    let mut err = ApiError::new(status.or(named_status), message).with_code(code, ty);
    err.param = inner
        .get("param")
        .and_then(Value::as_str)
        .map(str::to_owned);
    err.request_id = obj
        .get("request_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some(err)
}

/// The error an `error` event inside a stream stands for (its payload as JSON, or as text
/// when it is not JSON): the stream ends with it.
pub fn from_event(data: &[u8]) -> kite_core::Error {
    let text = || String::from_utf8_lossy(data).into_owned();
    match serde_json::from_slice::<Value>(data) {
        Ok(v) => from_value(None, &v)
            .unwrap_or_else(|| ApiError::new(None, text()))
            .into(),
        Err(e) => kite_core::Error::decode(format!("error event: {e}"), data),
    }
}

fn code_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn fallback_message(status: u16, text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        t.chars().take(500).collect()
    }
}

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
    if it.next()? != "GMT" || !(1..=31).contains(&day) || year < 1970 {
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
    fn a_retry_after_too_long_for_a_duration_saturates() {
        // Found by the `bodies` fuzz target: this once panicked in Duration::from_secs_f64.
        let huge = "5".repeat(40);
        assert_eq!(parse_retry_after(&huge, 0), Some(Duration::MAX));
        assert_eq!(parse_retry_after("1e300", 0), Some(Duration::MAX));
    }

    #[test]
    fn unreadable_bodies_keep_status_and_text() {
        let e = decode_error(502, b"<html>Bad Gateway</html>");
        assert_eq!(e.status, Some(502));
        assert_eq!(e.kind, kite_core::ApiErrorKind::Server);
        assert!(e.message.contains("Bad Gateway"));
        let e = decode_error(500, b"");
        assert!(e.message.contains("empty body"));
    }
}
