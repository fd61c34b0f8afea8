//! The HTTP transport under an MCP session: rmcp's reqwest client, taught to recover a session
//! the server has forgotten, and transport failures told without rmcp's type names.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The Streamable HTTP transport to `url`: the configured `headers` (marked sensitive) and
/// bearer `token` on every request, redirects only within the origin.
pub(crate) fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    token: Option<String>,
) -> Result<StreamableHttpClientTransport<SessionAware>, String> {
    let mut custom = HashMap::new();
    for (k, v) in headers {
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let mut value = http::HeaderValue::from_str(v)
            .map_err(|_| format!("header {k:?}: not a valid value"))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    if let Some(token) = token {
        cfg = cfg.auth_header(token);
    }
    let client = reqwest::Client::builder()
        .redirect(kite_http::same_origin_redirects())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    Ok(StreamableHttpClientTransport::with_client(
        SessionAware(client),
        cfg,
    ))
}

/// What went wrong in a transport, without rmcp's type names.
pub(crate) fn transport_message(error: &rmcp::transport::DynamicTransportError) -> String {
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)) => {
            "the server asks for authorization; give it a bearer token \
             (bearer_token or bearer_token_env)"
                .to_owned()
        }
        _ => error.error.to_string(),
    }
}

/// rmcp's reqwest client, taught one more sign of a forgotten session.
///
/// The spec answers a request for an unknown `Mcp-Session-Id` with HTTP 404, which rmcp
/// takes as an expired session: it initializes again and resends the request. Servers
/// built on the JS SDK's examples (server-everything among them) answer 400 with a
/// JSON-RPC error that has no id instead; rmcp cannot route that to the request, which
/// would wait until its deadline. A request that was sent within a session and is answered
/// with an id-less error is therefore treated as a session the server no longer knows.
#[derive(Clone)]
pub(crate) struct SessionAware(reqwest::Client);

/// What was posted: a request, within a session or not.
struct Asked {
    request_in_session: bool,
}

impl Asked {
    fn of(message: &ClientJsonRpcMessage, session_id: &Option<Arc<str>>) -> Self {
        Self {
            request_in_session: session_id.is_some()
                && matches!(message, ClientJsonRpcMessage::Request(_)),
        }
    }

    fn mend(
        self,
        answer: StreamableHttpPostResponse,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        match answer {
            StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)
                if self.request_in_session && e.id.is_none() =>
            {
                tracing::debug!(error = %e.error.message, "request refused outside any session; starting a new one");
                Err(StreamableHttpError::SessionExpired)
            }
            other => Ok(other),
        }
    }
}

impl StreamableHttpClient for SessionAware {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let asked = Asked::of(&message, &session_id);
        let answer = self
            .0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await?;
        asked.mend(answer)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let asked = Asked::of(&message, &session_id);
        let answer = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        asked.mend(answer)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<(), StreamableHttpError<reqwest::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<http::HeaderName, http::HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
