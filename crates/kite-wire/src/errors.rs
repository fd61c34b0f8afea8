//! Provider error envelopes into typed errors.
//!
//! Every provider wraps errors differently: OpenAI and Groq `{"error":{"message","type",
//! "code","param"}}`, Anthropic `{"type":"error","error":{"type","message"},"request_id"}`,
//! Mistral `{"detail": ...}` or `{"message": ...}`, OpenRouter a numeric `code` and
//! `metadata.raw`. [`decode_error`] reads all of them; a body it cannot read still becomes an
//! [`ApiError`] carrying the status and the raw text.

use kite_core::{ApiError, ApiErrorKind};
use serde_json::Value;

/// An error with `status`, `message`, and the provider's `code` and `type`, classified by
/// what those say (a spent quota, a rate limit, an unknown model ...) and else by status.
pub fn api_error(
    status: Option<u16>,
    message: impl Into<String>,
    code: Option<String>,
    error_type: Option<String>,
) -> ApiError {
    let mut e = ApiError::new(status, message).with_code(code, error_type);
    if let Some(kind) = classify(&e) {
        e.kind = kind;
    }
    e
}

/// What the provider's code, type and words say the error is, when they say.
fn classify(e: &ApiError) -> Option<ApiErrorKind> {
    let code = e.code.as_deref().unwrap_or("");
    let ty = e.error_type.as_deref().unwrap_or("");
    Some(match (code, ty) {
        ("insufficient_quota", _) | (_, "insufficient_quota") => ApiErrorKind::QuotaExceeded,
        ("context_length_exceeded", _) => ApiErrorKind::ContextLengthExceeded,
        ("invalid_api_key", _) | (_, "authentication_error") => ApiErrorKind::Authentication,
        (_, "overloaded_error") => ApiErrorKind::Overloaded,
        ("rate_limit_exceeded", _) | (_, "rate_limit_error") if too_large(&e.message) => {
            ApiErrorKind::RequestTooLarge
        }
        (_, "rate_limit_error") | ("rate_limit_exceeded", _) => ApiErrorKind::RateLimited,
        (_, "not_found_error") | ("model_not_found", _) => ApiErrorKind::NotFound,
        (_, "permission_error") => ApiErrorKind::PermissionDenied,
        _ if e.status == Some(429) && too_large(&e.message) => ApiErrorKind::RequestTooLarge,
        _ => return None,
    })
}

/// A rate limit the request alone exceeds (OpenAI: "Request too large for gpt-4o ... on
/// tokens per min (TPM): Limit 30000, Requested 50000"): waiting will never let it through.
fn too_large(message: &str) -> bool {
    if message.starts_with("Request too large") {
        return true;
    }
    // Digits may be grouped: `1,000,000` or `1_000_000`.
    let number_after = |label: &str| -> Option<u64> {
        let rest = &message[message.find(label)? + label.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    matches!(
        (number_after("Limit"), number_after("Requested")),
        (Some(limit), Some(requested)) if requested > limit
    )
}

/// The error an HTTP response with `status` and `body` stands for.
pub fn decode_error(status: u16, body: &[u8]) -> ApiError {
    let text = String::from_utf8_lossy(body);
    let mut err = match serde_json::from_slice::<Value>(body) {
        Ok(v) => from_value(Some(status), &v).unwrap_or_else(|| {
            api_error(Some(status), fallback_message(status, &text), None, None)
        }),
        Err(_) => api_error(Some(status), fallback_message(status, &text), None, None),
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
            return Some(api_error(status, s.clone(), None, None));
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
            return Some(api_error(status, message, code, ty));
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
    let mut err = api_error(status.or(named_status), message, code, ty);
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
        return format!("HTTP {status} with an empty body");
    }
    if t.starts_with('<') {
        // A web page, not an API's error (a wrong base URL, a proxy's page): its title,
        // its text on one line, and no markup.
        let title = between(t, "<title>", "</title>").map(str::trim);
        let words = page_text(t);
        let said = match title {
            Some(title) if !title.is_empty() && !words.starts_with(title) => {
                format!("{title}: {words}")
            }
            _ => words,
        };
        return format!(
            "HTTP {status} with a web page, not an API's error (is the URL an API's base, \
             such as https://host/v1?): {}",
            said.chars().take(300).collect::<String>()
        );
    }
    t.chars().take(500).collect()
}

/// What lies between `start` and `end` in `text`, the first time.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let to = text[from..].find(end)? + from;
    Some(&text[from..to])
}

/// A page's text: its markup, scripts and styles left out, its spaces made one.
fn page_text(page: &str) -> String {
    // From inside the body's own tag (its attributes), else from the start.
    let (body, mut in_tag) = match between(page, "<body", "</body>") {
        Some(body) => (body, true),
        None => (page, false),
    };
    let mut out = String::new();
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_bodies_keep_status_and_text() {
        let e = decode_error(502, b"<html>Bad Gateway</html>");
        assert_eq!(e.status, Some(502));
        assert_eq!(e.kind, kite_core::ApiErrorKind::Server);
        assert!(e.message.contains("Bad Gateway"));
        let e = decode_error(500, b"");
        assert!(e.message.contains("empty body"));
        let page = b"<!DOCTYPE HTML>\n<html><head><title>Error response</title>\n</head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 404</p></body></html>";
        let e = decode_error(404, page);
        assert!(
            !e.message.contains('<') && !e.message.contains('\n'),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("web page") && e.message.contains("Error code: 404"),
            "{}",
            e.message
        );
    }
}
