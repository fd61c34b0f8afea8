//! Providers' names for finish reasons and errors, mapped onto kite's one set.

use kite_core::{ApiError, ApiErrorKind, Error, FinishReason};
use kite_wire::errors::api_error;
use kite_wire::finish_reason;
use serde_json::json;

#[test]
fn finish_reasons_of_every_provider_map_to_one_set() {
    for (wire, want) in [
        ("stop", FinishReason::Stop),
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("max_tokens", FinishReason::Length),
        ("tool_calls", FinishReason::ToolCalls),
        ("function_call", FinishReason::ToolCalls),
        ("tool_use", FinishReason::ToolCalls),
        ("content_filter", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
    ] {
        assert_eq!(finish_reason(wire), want, "{wire}");
    }
    assert_eq!(
        serde_json::to_value(FinishReason::ToolCalls).unwrap(),
        json!("tool_calls")
    );
}

#[test]
fn api_errors_are_classified_from_status_code_and_type() {
    let k = |s: Option<u16>, code: Option<&str>, ty: Option<&str>| {
        api_error(s, "m", code.map(Into::into), ty.map(Into::into)).kind
    };
    assert_eq!(
        k(Some(429), Some("insufficient_quota"), None),
        ApiErrorKind::QuotaExceeded
    );
    assert_eq!(
        k(Some(429), Some("rate_limit_exceeded"), Some("tokens")),
        ApiErrorKind::RateLimited
    );
    assert_eq!(
        k(Some(400), Some("context_length_exceeded"), None),
        ApiErrorKind::ContextLengthExceeded
    );
    assert_eq!(
        k(Some(529), None, Some("overloaded_error")),
        ApiErrorKind::Overloaded
    );
    assert_eq!(k(Some(401), None, None), ApiErrorKind::Authentication);
    assert_eq!(k(Some(404), None, None), ApiErrorKind::NotFound);
    assert_eq!(k(Some(502), None, None), ApiErrorKind::Server);
    assert_eq!(k(None, None, None), ApiErrorKind::Other);
    assert!(ApiError::new(Some(503), "m").is_retryable());
    assert!(!ApiError::new(Some(400), "m").is_retryable());
    let shown = Error::from(api_error(
        Some(401),
        "bad key",
        Some("invalid_api_key".into()),
        None,
    ))
    .to_string();
    assert_eq!(shown, "provider error 401 (invalid_api_key): bad key");
}

#[test]
fn a_request_too_large_is_told_from_a_passing_rate_limit() {
    let kind = |message: &str| {
        api_error(Some(429), message, Some("rate_limit_exceeded".into()), None).kind
    };
    assert_eq!(
        kind("Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000."),
        ApiErrorKind::RequestTooLarge
    );
    assert_eq!(
        kind(
            "Rate limit reached on tokens per min: Limit 1,000,000, Used 999,000, Requested 20,000."
        ),
        ApiErrorKind::RateLimited
    );
    assert_eq!(
        kind("tokens per min: Limit 1_000, Requested 2_000"),
        ApiErrorKind::RequestTooLarge
    );
    // A 429 whose error is a plain string is classified by its words too.
    let e =
        kite_wire::errors::decode_error(429, br#"{"error":"Request too large for this limit"}"#);
    assert_eq!(e.kind, ApiErrorKind::RequestTooLarge);
}
