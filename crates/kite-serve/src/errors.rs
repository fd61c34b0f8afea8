//! Errors as each client's API writes them, and which upstream failures another route
//! may mend.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kite_core::{ApiErrorKind, Error};
use kite_wire::anthropic::serve as messages;

/// The API a client speaks, which decides the shape of its errors.
#[derive(Clone, Copy)]
pub(crate) enum Api {
    Chat,
    Messages,
}

impl Api {
    /// The API of a request to `path` with `headers`: Anthropic's endpoints, and the shared
    /// ones asked by an Anthropic client, answer in its shape.
    pub(crate) fn of(path: &str, headers: &axum::http::HeaderMap) -> Self {
        match path.starts_with("/v1/messages") || crate::models::anthropic(headers) {
            true => Api::Messages,
            false => Api::Chat,
        }
    }
}

/// What kind of failure, named in each API's words.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Auth,
    /// A model that is not served.
    NotFound,
    /// Anything else that is not there (a path, a conversation).
    Missing,
    Invalid,
    RateLimit,
    Upstream,
    /// The server cannot answer now (it is stopping).
    Unavailable,
    /// A budget is spent.
    Quota,
    /// The key may not do this (ask for that model).
    Forbidden,
    /// The request is larger than the key may send or keep.
    TooLarge,
}

/// An error in the client's API's shape.
pub(crate) fn error(api: Api, status: StatusCode, message: &str, kind: Kind) -> Response {
    let body = match api {
        Api::Chat => {
            let (kind, code) = match kind {
                Kind::Auth => ("invalid_request_error", Some("invalid_api_key")),
                Kind::NotFound => ("invalid_request_error", Some("model_not_found")),
                Kind::Missing => ("invalid_request_error", None),
                Kind::Invalid => ("invalid_request_error", None),
                Kind::RateLimit => ("rate_limit_error", Some("rate_limit_exceeded")),
                Kind::Upstream => ("api_error", None),
                Kind::Unavailable => ("server_error", Some("service_unavailable")),
                Kind::Quota => ("insufficient_quota", Some("insufficient_quota")),
                Kind::Forbidden => ("invalid_request_error", Some("model_not_allowed")),
                Kind::TooLarge => ("invalid_request_error", Some("request_too_large")),
            };
            kite_wire::openai_chat::serve::error_body(message, kind, code)
        }
        Api::Messages => messages::error_body(
            message,
            match kind {
                Kind::Auth => "authentication_error",
                Kind::NotFound | Kind::Missing => "not_found_error",
                Kind::Invalid => "invalid_request_error",
                Kind::RateLimit => "rate_limit_error",
                Kind::Upstream => "api_error",
                Kind::Unavailable => "overloaded_error",
                Kind::Quota => "rate_limit_error",
                Kind::Forbidden => "permission_error",
                Kind::TooLarge => "request_too_large",
            },
        ),
    };
    (status, axum::Json(body)).into_response()
}

/// A caller without the right key; `token`: the gateway asks for its token (no key set);
/// `given`: the caller gave a key (a wrong one), not none.
pub(crate) fn unauthorized(api: Api, token: bool, given: bool) -> Response {
    let said = match given {
        true => "Incorrect API key provided.",
        false => "No API key provided (as a bearer token, or in x-api-key).",
    };
    let message = match token {
        true => format!(
            "{said} This gateway asks for the token kite serve printed when it started: give \
             it as the API key, or open the web chat's address it printed."
        ),
        false => said.to_owned(),
    };
    error(api, StatusCode::UNAUTHORIZED, &message, Kind::Auth)
}

/// A key, or its team, over its budget: OpenAI's `insufficient_quota` (429, which its
/// SDKs do not retry), in the client's API's shape.
pub(crate) fn over_budget(api: Api, over: &crate::registry::OverBudget) -> Response {
    let period = match over.budget.period {
        kite_store::fleet::Period::Day => " today",
        kite_store::fleet::Period::Month => " this month",
        kite_store::fleet::Period::Total => "",
    };
    let mut r = error(
        api,
        StatusCode::TOO_MANY_REQUESTS,
        &format!(
            "You exceeded your current quota: {} has spent its budget of ${}{period}.",
            over.whose, over.budget.usd
        ),
        Kind::Quota,
    );
    // Asking again changes nothing before the period ends (and a total, never).
    let h = r.headers_mut();
    h.insert(
        "x-should-retry",
        axum::http::HeaderValue::from_static("false"),
    );
    let now = crate::admin::now_ms();
    if let Some(end) = over.budget.period.end(now)
        && let Ok(v) = axum::http::HeaderValue::from_str(&((end - now) / 1000).max(1).to_string())
    {
        h.insert(axum::http::header::RETRY_AFTER, v);
    }
    r
}

/// A key asking for a model it may not use.
pub(crate) fn not_allowed(api: Api, name: &str) -> Response {
    error(
        api,
        StatusCode::FORBIDDEN,
        &format!(
            "This key may not use the model `{}`.",
            crate::text::shown(name)
        ),
        Kind::Forbidden,
    )
}

pub(crate) fn unknown_model(api: Api, name: &str) -> Response {
    error(
        api,
        StatusCode::NOT_FOUND,
        &format!(
            "The model `{}` does not exist or you do not have access to it.",
            crate::text::shown(name)
        ),
        Kind::NotFound,
    )
}

/// What a client is told of an upstream failure `e`: with `secrets` (the gateway's) hidden
/// in it; and the provider refusing the gateway's own credentials is the gateway's
/// business, not theirs.
pub(crate) fn told(e: &Error, secrets: &[String]) -> String {
    let said = match e {
        Error::Api(a)
            if matches!(
                a.kind,
                ApiErrorKind::Authentication | ApiErrorKind::PermissionDenied
            ) =>
        {
            REFUSED.to_owned()
        }
        e => e.to_string(),
    };
    kite_core::redact::redact_all(&said, secrets)
}

const REFUSED: &str = "the gateway's upstream refused its credentials";

/// An upstream failure as the client should see it: the status it stands for, in its
/// API's shape, with kite's words (and the upstream's, with `secrets` hidden in them).
pub(crate) fn upstream_error(api: Api, e: &Error, secrets: &[String]) -> Response {
    let (status, kind) = match e {
        Error::Api(a) => {
            // Only an error status passes through; anything else from upstream is the
            // gateway's failure.
            let status = a
                .status
                .and_then(|s| StatusCode::from_u16(s).ok())
                .filter(|s| s.is_client_error() || s.is_server_error())
                .unwrap_or(StatusCode::BAD_GATEWAY);
            match a.kind {
                // The gateway's own key to the provider is wrong, not the client's.
                ApiErrorKind::Authentication | ApiErrorKind::PermissionDenied => {
                    return error(api, StatusCode::BAD_GATEWAY, REFUSED, Kind::Upstream);
                }
                ApiErrorKind::RateLimited => (status, Kind::RateLimit),
                ApiErrorKind::NotFound => (status, Kind::NotFound),
                _ if status.is_server_error() => (status, Kind::Upstream),
                _ => (status, Kind::Invalid),
            }
        }
        Error::InvalidRequest(_) => (StatusCode::BAD_REQUEST, Kind::Invalid),
        Error::Transport(_) => (StatusCode::BAD_GATEWAY, Kind::Upstream),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, Kind::Upstream),
    };
    let mut answer = error(api, status, &told(e, secrets), kind);
    // The gateway has retried already: a client that retries too (the official SDKs, and
    // the agents on them, honour this) would only make its user wait minutes longer.
    if status.is_server_error() {
        answer.headers_mut().insert(
            "x-should-retry",
            axum::http::HeaderValue::from_static("false"),
        );
    }
    answer
}

/// Whether another route may do better: the provider was busy, failing, unreachable or
/// refused kite's key; not when the request itself was at fault.
pub(crate) fn worth_another_route(e: &Error) -> bool {
    match e {
        Error::Api(a) => matches!(
            a.kind,
            ApiErrorKind::RateLimited
                | ApiErrorKind::Overloaded
                | ApiErrorKind::Server
                | ApiErrorKind::Timeout
                | ApiErrorKind::Authentication
                | ApiErrorKind::PermissionDenied
                | ApiErrorKind::QuotaExceeded
        ),
        Error::Transport(_) | Error::Engine(_) | Error::Config(_) => true,
        _ => false,
    }
}
