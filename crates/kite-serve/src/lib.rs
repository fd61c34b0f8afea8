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

mod keys;

use keys::{Caller, Keys};
pub use keys::{KeyUsage, Limits};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use kite_core::{ApiErrorKind, Error, Event, EventStream, Model, ResponseBuilder};
use kite_wire::anthropic::serve as messages;
use kite_wire::openai_chat::serve::{ChunkEncoder, decode_request, encode_response};
use serde_json::{Value, json};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// Routes tried in turn when this one fails before answering (by name).
    pub fallbacks: Vec<String>,
}

/// What the gateway serves, and to whom.
pub struct Gateway {
    routes: Vec<Route>,
    /// With `catch_all`, a model name no route names goes to the first route, under the
    /// client's own name.
    catch_all: bool,
    keys: Keys,
    ids: AtomicU64,
}

impl Gateway {
    /// A gateway serving `routes`; with `catch_all`, any other model name goes to the first
    /// route (as `kite serve` does with no routes configured).
    pub fn new(routes: Vec<Route>, catch_all: bool) -> Self {
        Self {
            routes,
            catch_all,
            keys: Keys::default(),
            ids: AtomicU64::new(0),
        }
    }

    /// Accepts `key` from clients, with no limits (kept as its SHA-256 digest only).
    pub fn key(self, key: &str) -> Self {
        self.key_with(key, Limits::default())
    }

    /// Accepts `key` from clients, within `limits`.
    pub fn key_with(mut self, key: &str, limits: Limits) -> Self {
        self.keys.add(key, limits);
        self
    }

    /// What the `n`th key given has used so far.
    pub fn key_usage(&self, n: usize) -> Option<KeyUsage> {
        self.keys.usage(n)
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

    /// The caller, admitted: a refusal in the client's API's shape when its key is
    /// wrong (401) or over its limits (429 with `Retry-After`).
    fn admit(&self, api: Api, headers: &HeaderMap) -> Result<Caller, Box<Response>> {
        let Some(caller) = self.keys.caller(headers) else {
            return Err(Box::new(unauthorized(api)));
        };
        self.keys.admit(caller).map_err(|wait| {
            let mut r = error(
                api,
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Rate limit reached for this key; try again in {} s.",
                    seconds(wait)
                ),
                Kind::RateLimit,
            );
            if let Ok(v) = header::HeaderValue::from_str(&seconds(wait).to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            Box::new(r)
        })?;
        Ok(caller)
    }

    fn route(&self, name: &str) -> Option<(&Route, String)> {
        match self.routes.iter().find(|r| r.name == name) {
            Some(r) => Some((r, r.upstream.clone())),
            None if self.catch_all => self.routes.first().map(|r| (r, name.to_owned())),
            None => None,
        }
    }

    /// Starts answering `request` on the route its model names, or on that route's
    /// fallbacks in turn while each fails before its first event: the first event and the
    /// rest, or the refusal to send (unknown model, the last failure).
    async fn open(
        self: &Arc<Self>,
        api: Api,
        caller: Caller,
        mut request: kite_core::Request,
    ) -> Result<(Option<Result<Event, Error>>, EventStream), Box<Response>> {
        let public = request.model.clone();
        let Some((route, upstream)) = self.route(&public) else {
            return Err(Box::new(unknown_model(api, &public)));
        };
        let chain = std::iter::once((route, upstream)).chain(
            route
                .fallbacks
                .iter()
                .filter_map(|name| self.routes.iter().find(|r| &r.name == name))
                .map(|r| (r, r.upstream.clone())),
        );
        let mut failure = None;
        for (route, upstream) in chain {
            request.model = upstream;
            let mut events = metered(self.clone(), caller, route.model.stream(&request));
            match events.next().await {
                Some(Err(e)) if worth_another_route(&e) => {
                    tracing::warn!(target: "kite::serve", route = %route.name, error = %e, "route failed; trying the next");
                    failure = Some(e);
                }
                // The request itself is at fault: no other route will do better.
                Some(Err(e)) => return Err(Box::new(upstream_error(api, &e))),
                first => return Ok((first, events)),
            }
        }
        let e = failure.unwrap_or(Error::Cancelled);
        Err(Box::new(upstream_error(api, &e)))
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
        .route("/v1/messages", post(anthropic))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(gateway.clone(), gate))
        .layer(axum::middleware::from_fn(log_request))
        .with_state(gateway)
}

/// The API a client speaks, which decides the shape of its errors.
#[derive(Clone, Copy)]
enum Api {
    Chat,
    Messages,
}

/// What kind of failure, named in each API's words.
#[derive(Clone, Copy)]
enum Kind {
    Auth,
    NotFound,
    Invalid,
    RateLimit,
    Upstream,
}

/// Admits a request before its body is read: a JSON body on `POST` (a web page cannot send
/// one across sites without a preflight, which kite never answers), a loopback `Host`
/// when no key is set (against DNS rebinding), then the key and its limits. The caller
/// goes on in the request's extensions.
async fn gate(
    State(gw): State<Arc<Gateway>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    if path == "/health" {
        return next.run(request).await;
    }
    let api = match path {
        "/v1/messages" => Api::Messages,
        _ => Api::Chat,
    };
    let headers = request.headers();
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if request.method() == axum::http::Method::POST && !json {
        return error(
            api,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the request as JSON (Content-Type: application/json)",
            Kind::Invalid,
        );
    }
    if gw.keys.is_empty() && !loopback_host(headers) {
        return error(
            api,
            StatusCode::FORBIDDEN,
            "this gateway has no keys and answers only requests for localhost",
            Kind::Auth,
        );
    }
    match gw.admit(api, headers) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refused) => *refused,
    }
}

/// Whether `Host` names this machine by a loopback name or address.
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Gives each request an id (`x-request-id` on the answer) and logs it once its answer
/// starts: method, path, status and milliseconds, at target `kite::serve`. Nothing of the
/// headers or the body is logged.
async fn log_request(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    static IDS: AtomicU64 = AtomicU64::new(0);
    let id = format!(
        "req_{:x}_{}",
        now(),
        IDS.fetch_add(1, Ordering::Relaxed) + 1
    );
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let started = std::time::Instant::now();
    let mut response = next.run(request).await;
    tracing::info!(
        target: "kite::serve",
        request_id = %id,
        %method,
        path = %log_safe(&path),
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    if let Ok(v) = header::HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

/// A path as it may be logged: printable ASCII, at most 200 characters.
fn log_safe(path: &str) -> String {
    path.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(200)
        .collect()
}

/// An error in the client's API's shape.
fn error(api: Api, status: StatusCode, message: &str, kind: Kind) -> Response {
    let body = match api {
        Api::Chat => {
            let (kind, code) = match kind {
                Kind::Auth => ("invalid_request_error", Some("invalid_api_key")),
                Kind::NotFound => ("invalid_request_error", Some("model_not_found")),
                Kind::Invalid => ("invalid_request_error", None),
                Kind::RateLimit => ("rate_limit_error", Some("rate_limit_exceeded")),
                Kind::Upstream => ("api_error", None),
            };
            kite_wire::openai_chat::serve::error_body(message, kind, code)
        }
        Api::Messages => messages::error_body(
            message,
            match kind {
                Kind::Auth => "authentication_error",
                Kind::NotFound => "not_found_error",
                Kind::Invalid => "invalid_request_error",
                Kind::RateLimit => "rate_limit_error",
                Kind::Upstream => "api_error",
            },
        ),
    };
    (status, axum::Json(body)).into_response()
}

fn unauthorized(api: Api) -> Response {
    error(
        api,
        StatusCode::UNAUTHORIZED,
        "Incorrect API key provided.",
        Kind::Auth,
    )
}

fn unknown_model(api: Api, name: &str) -> Response {
    error(
        api,
        StatusCode::NOT_FOUND,
        &format!("The model `{name}` does not exist or you do not have access to it."),
        Kind::NotFound,
    )
}

/// An upstream failure as the client should see it: the status it stands for, in its
/// API's shape, with kite's words (the upstream's were redacted of its key already).
fn upstream_error(api: Api, e: &Error) -> Response {
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
                    return error(
                        api,
                        StatusCode::BAD_GATEWAY,
                        "the gateway's upstream refused its credentials",
                        Kind::Upstream,
                    );
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
    error(api, status, &e.to_string(), kind)
}

/// `events`, with the tokens they report counted against `caller` (a provider that reports
/// usage twice is counted once).
fn metered(gw: Arc<Gateway>, caller: Caller, events: EventStream) -> EventStream {
    let mut counted = 0;
    Box::pin(events.inspect(move |e| {
        if let Ok(Event::Usage { usage }) = e {
            let total = usage.input_tokens.saturating_add(usage.output_tokens);
            gw.keys.spent(caller, total.saturating_sub(counted));
            counted = counted.max(total);
        }
    }))
}

/// Whether another route may do better: the provider was busy, failing, unreachable or
/// refused kite's key; not when the request itself was at fault.
fn worth_another_route(e: &Error) -> bool {
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

/// Whole seconds, rounded up: a client that waits that long is not refused again.
fn seconds(wait: std::time::Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn models(State(gw): State<Arc<Gateway>>) -> Response {
    let data: Vec<Value> = gw
        .routes
        .iter()
        .map(|r| json!({"id": r.name, "object": "model", "created": 0, "owned_by": "kite"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn chat(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Response {
    let api = Api::Chat;
    let client = match decode_request(&body) {
        Ok(c) => c,
        Err(e) => return error(api, StatusCode::BAD_REQUEST, &e.to_string(), Kind::Invalid),
    };
    let public = client.request.model.clone();
    let (first, mut events) = match gw.open(api, caller, client.request).await {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    let id = gw.next_id();
    let created = now();
    if !client.stream {
        let mut builder = ResponseBuilder::new();
        let mut all = futures_util::stream::iter(first).chain(&mut events);
        while let Some(event) = all.next().await {
            match event {
                Ok(e) => builder.push(e),
                Err(e) => return upstream_error(api, &e),
            }
        }
        return match builder.finish() {
            Ok(response) => {
                axum::Json(encode_response(&response, &id, &public, created)).into_response()
            }
            Err(e) => upstream_error(api, &e),
        };
    }
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
            Err(e) => sse(kite_wire::openai_chat::serve::error_body(
                &e.to_string(),
                "api_error",
                None,
            )),
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

async fn anthropic(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Response {
    let api = Api::Messages;
    let client = match messages::decode_request(&body) {
        Ok(c) => c,
        Err(e) => return error(api, StatusCode::BAD_REQUEST, &e.to_string(), Kind::Invalid),
    };
    let public = client.request.model.clone();
    let (first, mut events) = match gw.open(api, caller, client.request).await {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    let id = format!("msg_kite_{}", gw.ids.fetch_add(1, Ordering::Relaxed) + 1);
    if !client.stream {
        let mut builder = ResponseBuilder::new();
        let mut all = futures_util::stream::iter(first).chain(&mut events);
        while let Some(event) = all.next().await {
            match event {
                Ok(e) => builder.push(e),
                Err(e) => return upstream_error(api, &e),
            }
        }
        return match builder.finish() {
            Ok(r) => axum::Json(messages::encode_response(&r, &id, &public)).into_response(),
            Err(e) => upstream_error(api, &e),
        };
    }
    let encoder = Arc::new(std::sync::Mutex::new(messages::EventEncoder::new(
        id, public,
    )));
    let last = encoder.clone();
    let sse = |events: Vec<(&str, Value)>| {
        events
            .into_iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect::<String>()
    };
    let body = futures_util::stream::iter(first)
        .chain(events)
        .map(move |event| match event {
            Ok(e) => sse(encoder.lock().unwrap_or_else(|p| p.into_inner()).event(&e)),
            Err(e) => {
                // After an error the stream ends with it: no stop reason follows.
                encoder.lock().unwrap_or_else(|p| p.into_inner()).failed();
                sse(vec![(
                    "error",
                    messages::error_body(&e.to_string(), "api_error"),
                )])
            }
        })
        .chain(futures_util::stream::once(async move {
            sse(last.lock().unwrap_or_else(|p| p.into_inner()).finish())
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
