//! `kite serve`: an OpenAI-compatible gateway in front of any kite model.
//!
//! `POST /v1/chat/completions` (whole and streamed, tools, tool choice, structured output,
//! `stream_options.include_usage`), `GET /v1/models` and `GET /health`, on axum. A client's
//! request is decoded with kite-wire's Chat Completions codec run the other way
//! (`openai_chat::serve`), answered by a kite [`Model`], and encoded back in the client's
//! format; errors come back in OpenAI's error shape with the upstream's status, never a
//! provider key.
//!
//! Client keys are kept as SHA-256 digests and compared in constant time; with none, the
//! gateway asks for no key and must listen on loopback only ([`Gateway::check_addr`]).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use kite_core::{ApiErrorKind, Error, Model, ResponseBuilder};
use kite_wire::openai_chat::serve::{ChunkEncoder, decode_request, encode_response, error_body};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

/// The largest request body read (16 MiB).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// A model served under a public name.
pub struct Route {
    /// The name clients ask for.
    pub name: String,
    /// The model that answers.
    pub model: Arc<dyn Model>,
    /// The name the model is asked for upstream.
    pub upstream: String,
}

/// What the gateway serves, and to whom.
pub struct Gateway {
    routes: Vec<Route>,
    /// With `catch_all`, a model name no route names goes to the first route, under the
    /// client's own name.
    catch_all: bool,
    keys: Vec<[u8; 32]>,
    ids: AtomicU64,
}

impl Gateway {
    /// A gateway serving `routes`; with `catch_all`, any other model name goes to the first
    /// route (as `kite serve` does with no routes configured).
    pub fn new(routes: Vec<Route>, catch_all: bool) -> Self {
        Self {
            routes,
            catch_all,
            keys: Vec::new(),
            ids: AtomicU64::new(0),
        }
    }

    /// Accepts `key` from clients (kept as its SHA-256 digest only).
    pub fn key(mut self, key: &str) -> Self {
        self.keys.push(Sha256::digest(key.as_bytes()).into());
        self
    }

    /// Refuses an address off loopback when no client key is set.
    pub fn check_addr(&self, addr: &SocketAddr) -> Result<(), String> {
        match (self.keys.is_empty(), addr.ip().is_loopback()) {
            (true, false) => Err(format!(
                "{addr} is reachable from other machines: set a client key (--api-key or \
                 [serve] keys), or listen on 127.0.0.1"
            )),
            _ => Ok(()),
        }
    }

    /// Whether `headers` carry an accepted key (any request, when none is set).
    fn authorized(&self, headers: &HeaderMap) -> bool {
        if self.keys.is_empty() {
            return true;
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
        let Some(given) = given else { return false };
        let digest: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
        // Every key is compared, so the time taken says nothing of which one matched.
        self.keys
            .iter()
            .fold(0u8, |hit, k| hit | k.ct_eq(&digest).unwrap_u8())
            == 1
    }

    fn route(&self, name: &str) -> Option<(&Route, String)> {
        match self.routes.iter().find(|r| r.name == name) {
            Some(r) => Some((r, r.upstream.clone())),
            None if self.catch_all => self.routes.first().map(|r| (r, name.to_owned())),
            None => None,
        }
    }

    fn next_id(&self) -> String {
        format!(
            "chatcmpl-kite-{}",
            self.ids.fetch_add(1, Ordering::Relaxed) + 1
        )
    }
}

/// The gateway's routes.
pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route(
            "/health",
            get(|| async { axum::Json(json!({"status": "ok"})) }),
        )
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(gateway)
}

/// An error in OpenAI's shape.
fn error(status: StatusCode, message: &str, kind: &str, code: Option<&str>) -> Response {
    (status, axum::Json(error_body(message, kind, code))).into_response()
}

fn unauthorized() -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        "Incorrect API key provided.",
        "invalid_request_error",
        Some("invalid_api_key"),
    )
}

/// An upstream failure as the client should see it: the status it stands for, in
/// OpenAI's shape, with kite's words (the upstream's were redacted of its key already).
fn upstream_error(e: &Error) -> Response {
    let (status, kind) = match e {
        Error::Api(api) => {
            let status = api
                .status
                .and_then(|s| StatusCode::from_u16(s).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY);
            let kind = match api.kind {
                ApiErrorKind::RateLimited => "rate_limit_error",
                ApiErrorKind::Authentication | ApiErrorKind::PermissionDenied => {
                    // The gateway's own key to the provider is wrong: the client's is not.
                    return error(
                        StatusCode::BAD_GATEWAY,
                        "the gateway's upstream refused its credentials",
                        "api_error",
                        None,
                    );
                }
                _ if status.is_server_error() => "api_error",
                _ => "invalid_request_error",
            };
            (status, kind)
        }
        Error::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request_error"),
        Error::Transport(_) => (StatusCode::BAD_GATEWAY, "api_error"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "api_error"),
    };
    error(status, &e.to_string(), kind, None)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn models(State(gw): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    if !gw.authorized(&headers) {
        return unauthorized();
    }
    let data: Vec<Value> = gw
        .routes
        .iter()
        .map(|r| json!({"id": r.name, "object": "model", "created": 0, "owned_by": "kite"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn chat(State(gw): State<Arc<Gateway>>, headers: HeaderMap, body: Bytes) -> Response {
    if !gw.authorized(&headers) {
        return unauthorized();
    }
    let client = match decode_request(&body) {
        Ok(c) => c,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &e.to_string(),
                "invalid_request_error",
                None,
            );
        }
    };
    let public = client.request.model.clone();
    let Some((route, upstream)) = gw.route(&public) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("The model `{public}` does not exist or you do not have access to it."),
            "invalid_request_error",
            Some("model_not_found"),
        );
    };
    let mut request = client.request;
    request.model = upstream;
    let id = gw.next_id();
    let created = now();
    let mut events = route.model.stream(&request);
    if !client.stream {
        let mut builder = ResponseBuilder::new();
        while let Some(event) = events.next().await {
            match event {
                Ok(e) => builder.push(e),
                Err(e) => return upstream_error(&e),
            }
        }
        return match builder.finish() {
            Ok(response) => {
                axum::Json(encode_response(&response, &id, &public, created)).into_response()
            }
            Err(e) => upstream_error(&e),
        };
    }
    // The first event decides between a stream and an error the client can read.
    let first = match events.next().await {
        Some(Err(e)) => return upstream_error(&e),
        first => first,
    };
    let encoder = Arc::new(std::sync::Mutex::new(ChunkEncoder::new(
        id,
        public,
        created,
        client.include_usage,
    )));
    let last = encoder.clone();
    let sse = |v: Value| format!("data: {v}\n\n");
    let body = futures_util::stream::iter(first)
        .chain(events)
        .map(move |event| match event {
            Ok(e) => {
                let mut enc = encoder.lock().unwrap_or_else(|p| p.into_inner());
                enc.event(&e).into_iter().map(sse).collect::<String>()
            }
            // Mid-stream, an error can only be said in the stream.
            Err(e) => sse(error_body(&e.to_string(), "api_error", None)),
        })
        .chain(futures_util::stream::once(async move {
            // The usage comes last, when the client asked for it.
            let mut enc = last.lock().unwrap_or_else(|p| p.into_inner());
            let usage = enc.finish().map(sse).unwrap_or_default();
            format!("{usage}data: [DONE]\n\n")
        }))
        .map(Ok::<_, std::convert::Infallible>);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Serves `gateway` on `listener` until `shutdown` resolves; streams in flight end cleanly.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(gateway))
        .with_graceful_shutdown(shutdown)
        .await
}
