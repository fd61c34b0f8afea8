//! The HTTP transport under an MCP session: rmcp's reqwest client, taught to recover a session
//! the server has forgotten and to carry the server's OAuth token (a request the server
//! refuses for want of one, or of a better one, is sent again with the new token), and
//! transport failures told without rmcp's type names.

use crate::oauth::{Login, OAuthError};
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

/// How many times one request is sent again with a new token.
const REPLAYS: usize = 3;

/// The Streamable HTTP transport to `url`: the configured `headers` (marked sensitive) and
/// bearer `token`, or the `login`'s token, on every request; redirects only within the
/// origin.
pub(crate) fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
    token: Option<String>,
    login: Option<Arc<Login>>,
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
        SessionAware {
            http: client,
            login,
        },
        cfg,
    ))
}

/// Whether the server at `url` speaks the 2024-11-05 HTTP+SSE transport (an event stream
/// at GET that first names the endpoint to post to), which rmcp does not: asked once a
/// connection failed, within 3 s.
pub(crate) async fn speaks_old_sse(url: &str, headers: &BTreeMap<String, String>) -> bool {
    let probe = async {
        let client = reqwest::Client::builder()
            .redirect(kite_http::same_origin_redirects())
            .build()
            .ok()?;
        let mut asked = client
            .get(url)
            .header(http::header::ACCEPT, "text/event-stream");
        for (k, v) in headers {
            asked = asked.header(k.as_str(), v.as_str());
        }
        let mut r = asked.send().await.ok()?;
        let streams = r
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !r.status().is_success() || !streams {
            return None;
        }
        let mut seen = Vec::new();
        while seen.len() < 4096 {
            let chunk = r.chunk().await.ok()??;
            seen.extend_from_slice(&chunk);
            let text = String::from_utf8_lossy(&seen);
            if text.contains("event: endpoint") || text.contains("event:endpoint") {
                return Some(());
            }
        }
        None
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(3), probe).await,
        Ok(Some(()))
    )
}

/// What went wrong in a transport, without rmcp's type names.
pub(crate) fn transport_message(error: &rmcp::transport::DynamicTransportError) -> String {
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)) => {
            "the server refuses its bearer token (bearer_token or bearer_token_env): check \
             it, or leave it out to log in with OAuth"
                .to_owned()
        }
        Some(StreamableHttpError::Io(io))
            if let Some(e) = io.get_ref().and_then(|e| e.downcast_ref::<OAuthError>()) =>
        {
            e.to_string()
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
pub(crate) struct SessionAware {
    http: reqwest::Client,
    login: Option<Arc<Login>>,
}

fn refused(e: OAuthError) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Io(std::io::Error::other(e))
}

impl SessionAware {
    /// What `send` gets with the login's token (else `given`), sent again with a new token
    /// while the server asks for one (a 401) or for more scopes (a 403), a few times.
    async fn authorized<T, F, Fut>(
        &self,
        given: Option<String>,
        send: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let Some(login) = &self.login else {
            return send(given).await;
        };
        let mut token = login.bearer().await;
        for _ in 0..=REPLAYS {
            let (header, forbidden) = match send(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(e)) => (e.www_authenticate_header, false),
                // A 401 with no challenge: the well-known places say the rest.
                Err(StreamableHttpError::UnexpectedServerResponse(m))
                    if m.starts_with("HTTP 401") =>
                {
                    (String::new(), false)
                }
                Err(StreamableHttpError::Client(e))
                    if e.status() == Some(reqwest::StatusCode::UNAUTHORIZED) =>
                {
                    (String::new(), false)
                }
                Err(StreamableHttpError::InsufficientScope(e)) => (e.www_authenticate_header, true),
                other => {
                    if other.is_ok() && token.is_some() {
                        login.worked();
                    }
                    return other;
                }
            };
            let renewed = login.challenged(token.as_deref(), &header, forbidden).await;
            token = Some(renewed.map_err(refused)?);
        }
        Err(refused(OAuthError::failed(
            "the server kept refusing the new tokens it was sent",
        )))
    }
}

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
            .authorized(auth_header, |token| {
                self.http.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                )
            })
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
            .authorized(auth_header, |token| {
                self.http.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
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
        let token = match &self.login {
            Some(login) => login.bearer().await,
            None => auth_header,
        };
        self.http
            .delete_session(uri, session_id, token, custom_headers)
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
        self.authorized(auth_header, |token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
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
        self.authorized(auth_header, |token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
