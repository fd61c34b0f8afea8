//! kite's error type: what went wrong, with what an operator needs to act on it.

use std::time::Duration;

/// Any failure of a model call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The provider answered with an error (an HTTP error status, or an error inside a stream).
    #[error(transparent)]
    Api(Box<ApiError>),
    /// Bytes from the provider could not be understood.
    #[error(transparent)]
    Decode(Box<DecodeError>),
    /// The connection failed, timed out or was cut.
    #[error(transparent)]
    Transport(TransportError),
    /// The request cannot be expressed for this provider.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// kite is not set up to make the call (no key, unknown provider, bad URL, no model file).
    #[error("{0}")]
    Config(String),
    /// A model running in this process failed.
    #[error("local model: {0}")]
    Engine(String),
    /// The caller cancelled the call.
    #[error("cancelled")]
    Cancelled,
    /// A part built on kite-core failed in its own way (a cassette that cannot replay a
    /// call, say): downcast to its type to learn more, e.g.
    /// `kite_http::cassette::CassetteError::of(&error)`.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// A decode error for `payload`.
    pub fn decode(message: impl Into<String>, payload: impl AsRef<[u8]>) -> Self {
        Error::Decode(Box::new(DecodeError::new(message, payload)))
    }

    /// A transport error.
    pub fn transport(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        Error::Transport(TransportError {
            kind,
            message: message.into(),
        })
    }

    /// The error of a part built on kite-core, as [`Error::Other`].
    pub fn other(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Other(Box::new(e))
    }

    /// The API error, when this is one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(Box::new(e))
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(Box::new(e))
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        Error::Transport(e)
    }
}

/// An error the provider reported.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP status; for an error inside a 200 stream, the status the provider named in
    /// the error, if any.
    pub status: Option<u16>,
    /// What kind of failure it is, across providers.
    pub kind: ApiErrorKind,
    /// The provider's machine-readable code (`invalid_api_key`, `tool_use_failed`, ...).
    pub code: Option<String>,
    /// The provider's error type (`invalid_request_error`, `overloaded_error`, ...).
    pub error_type: Option<String>,
    /// The request parameter at fault, when named.
    pub param: Option<String>,
    /// What the provider said went wrong (or the start of the body, when it could not be read).
    pub message: String,
    /// The provider's request id, for support tickets.
    pub request_id: Option<String>,
    /// How long the provider asked us to wait (`Retry-After`).
    pub retry_after: Option<Duration>,
    /// The error body as received (secrets redacted), for whatever the fields above miss.
    pub body: Option<String>,
}

impl ApiError {
    /// An error with a status and message, its kind derived from the status. The codecs
    /// refine the kind from what the provider's code and type say.
    pub fn new(status: Option<u16>, message: impl Into<String>) -> Self {
        let mut e = Self {
            status,
            kind: ApiErrorKind::Other,
            code: None,
            error_type: None,
            param: None,
            message: message.into(),
            request_id: None,
            retry_after: None,
            body: None,
        };
        e.kind = ApiErrorKind::classify(&e);
        e
    }

    /// Sets the provider's code and type, keeping the kind. To classify by what they say,
    /// as the codecs do, use `kite_wire::errors::api_error`.
    pub fn with_code(mut self, code: Option<String>, error_type: Option<String>) -> Self {
        self.code = code;
        self.error_type = error_type;
        self
    }

    /// True when sending the same request again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ApiErrorKind::RateLimited
                | ApiErrorKind::Overloaded
                | ApiErrorKind::Server
                | ApiErrorKind::Timeout
        )
    }

    fn describe(&self) -> String {
        let mut s = String::from("provider error");
        if let Some(status) = self.status {
            s.push_str(&format!(" {status}"));
        }
        if let Some(code) = self.code.as_ref().or(self.error_type.as_ref()) {
            s.push_str(&format!(" ({code})"));
        }
        s.push_str(": ");
        s.push_str(&self.message);
        if let Some(id) = &self.request_id {
            s.push_str(&format!(" [request id {id}]"));
        }
        s
    }
}

/// What kind of failure the provider reported, across providers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiErrorKind {
    /// The key is missing or wrong.
    Authentication,
    /// The key is valid but may not use this model or resource.
    PermissionDenied,
    /// Unknown model or resource.
    NotFound,
    /// Malformed or unsupported request.
    InvalidRequest,
    /// The prompt is larger than the model's context.
    ContextLengthExceeded,
    /// Too many requests or tokens per unit of time: retry later.
    RateLimited,
    /// The request alone is over a rate limit (more tokens than a minute allows): retrying
    /// will not help; make it smaller.
    RequestTooLarge,
    /// Out of credits or quota: retrying will not help.
    QuotaExceeded,
    /// The provider is overloaded: retry later.
    Overloaded,
    /// The provider failed: retry later.
    Server,
    /// The provider gave up waiting (HTTP 408): retry later.
    Timeout,
    /// Anything else.
    Other,
}

impl ApiErrorKind {
    /// The kind an HTTP status stands for.
    fn classify(e: &ApiError) -> Self {
        match e.status {
            Some(401) => Self::Authentication,
            Some(402) => Self::QuotaExceeded,
            Some(403) => Self::PermissionDenied,
            Some(404) => Self::NotFound,
            Some(408) => Self::Timeout,
            Some(413) => Self::InvalidRequest,
            Some(429) => Self::RateLimited,
            Some(503) | Some(529) => Self::Overloaded,
            Some(s) if s >= 500 => Self::Server,
            Some(400..=499) => Self::InvalidRequest,
            _ => Self::Other,
        }
    }
}

/// Bytes that could not be decoded, with the offending payload.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("could not decode provider data: {message} (payload: {payload})")]
pub struct DecodeError {
    /// What could not be understood, and why.
    pub message: String,
    /// The payload at fault, cut to at most [`DecodeError::MAX_PAYLOAD`] bytes.
    pub payload: String,
}

impl DecodeError {
    /// How much of the payload is kept.
    pub const MAX_PAYLOAD: usize = 2048;

    /// A decode error keeping (the start of) `payload`.
    pub fn new(message: impl Into<String>, payload: impl AsRef<[u8]>) -> Self {
        let bytes = payload.as_ref();
        let cut = &bytes[..bytes.len().min(Self::MAX_PAYLOAD)];
        let mut payload = String::from_utf8_lossy(cut).into_owned();
        if bytes.len() > Self::MAX_PAYLOAD {
            payload.push_str("...");
        }
        Self {
            message: message.into(),
            payload,
        }
    }
}

/// A failure to move bytes.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct TransportError {
    /// Where moving bytes failed.
    pub kind: TransportErrorKind,
    /// What happened, in detail.
    pub message: String,
}

/// Where moving bytes failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// Could not connect.
    Connect,
    /// Connecting took too long.
    ConnectTimeout,
    /// The response headers took too long.
    RequestTimeout,
    /// The stream went quiet for longer than the idle timeout.
    IdleTimeout,
    /// The connection was closed or reset.
    ConnectionClosed,
    /// Anything else (TLS, protocol).
    Other,
}

impl std::fmt::Display for TransportErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Connect => "could not connect",
            Self::ConnectTimeout => "connect timed out",
            Self::RequestTimeout => "no response in time",
            Self::IdleTimeout => "stream stalled",
            Self::ConnectionClosed => "connection closed",
            Self::Other => "transport failure",
        })
    }
}
