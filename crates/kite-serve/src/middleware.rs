//! What runs before a handler: admission (before the body is read) and the request log.

use crate::Gateway;
use crate::errors::{Api, Kind, error};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// Admits a request before its body is read: a JSON body on `POST` (a web page cannot send
/// one across sites without a preflight, which kite never answers), a loopback `Host`
/// when no key is set (against DNS rebinding), then the key and its limits. Then reads the
/// body, within its size and deadline. The caller goes on in the request's extensions.
pub(crate) async fn gate(
    State(gw): State<Arc<Gateway>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = request.uri().path();
    // Probes (a load balancer's, an orchestrator's) ask with no key.
    if matches!(path, "/health" | "/ready") || crate::web::PUBLIC.contains(&path) {
        return next.run(request).await;
    }
    // With admin keys, the metrics (every key's name and counts) are theirs alone.
    if path == "/metrics" && !gw.admin_keys.is_empty() {
        if crate::admin::http::is_admin(&gw, request.headers()) {
            return next.run(request).await;
        }
        return error(
            Api::Chat,
            StatusCode::UNAUTHORIZED,
            "the metrics need an admin key ([serve] admin_keys)",
            Kind::Auth,
        );
    }
    // The admin API asks for keys of its own, before a body is read; its bodies are small.
    if path.starts_with("/v1/admin/") {
        match crate::admin::http::admitted(&gw, request.headers()) {
            Ok(admin) => request.extensions_mut().insert(admin),
            Err(refused) => return *refused,
        };
        if request.method() == axum::http::Method::POST {
            let limit = crate::admin::http::MAX_BODY;
            request = match read_body(Api::Chat, request, gw.deadlines.body, limit).await {
                Ok(read) => read,
                Err(refused) => return *refused,
            };
        }
        return next.run(request).await;
    }
    let api = Api::of(path, request.headers());
    if gw.draining.load(std::sync::atomic::Ordering::Relaxed) {
        let mut refused = error(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "This server is stopping; try again in a moment (another replica may answer).",
            Kind::Unavailable,
        );
        let h = refused.headers_mut();
        h.insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
        h.insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return refused;
    }
    let headers = request.headers();
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    // A cancel (`POST /v1/responses/{id}/cancel`) carries no body.
    let bodiless = path.ends_with("/cancel")
        && headers
            .get(header::CONTENT_LENGTH)
            .is_none_or(|v| v.as_bytes() == b"0");
    if request.method() == axum::http::Method::POST && !json && !bodiless {
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
    // A question, or a count of tokens (the provider's own, which it limits too), spends a
    // key's requests and must fit its limits and budget; a cancel does not.
    let counted = request.method() == axum::http::Method::POST && !path.ends_with("/cancel");
    match gw.admit(api, request.headers(), counted).await {
        Ok((caller, slot)) => {
            request.extensions_mut().insert(caller);
            let slot = slot.map(Arc::new);
            if let Some(slot) = &slot {
                request.extensions_mut().insert(slot.clone());
            }
            if request.method() == axum::http::Method::POST {
                // The body, within the key's largest; then its share of what the gateway
                // decodes at once (held once it is read, so that bodies sent slowly hold
                // none of it).
                let limit = caller_sizes(&gw, &request).body_limit();
                request = match read_body(api, request, gw.deadlines.body, limit).await {
                    Ok(read) => read,
                    Err(refused) => return *refused,
                };
                let size = http_body::Body::size_hint(request.body())
                    .exact()
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(limit);
                match gw.decoding.hold(api, size).await {
                    Ok(held) => request.extensions_mut().insert(held),
                    Err(refused) => return *refused,
                };
            }
            let response = next.run(request).await;
            match slot {
                // The request's place among those at once is held until its answer ends.
                Some(slot) => response.map(|body| {
                    use http_body_util::BodyExt;
                    axum::body::Body::new(body.map_frame(move |frame| {
                        let _ = &slot;
                        frame
                    }))
                }),
                None => response,
            }
        }
        Err(refused) => *refused,
    }
}

/// What the caller of `request` (admitted) may send and keep.
fn caller_sizes(gw: &Gateway, request: &axum::extract::Request) -> crate::allowance::Sizes {
    match request.extensions().get::<crate::keys::Caller>() {
        Some(crate::keys::Caller::Key(key)) => key.sizes.or(gw.sizes),
        _ => gw.sizes,
    }
}

/// `request` with its body read whole, within `limit` bytes and `deadline`: past either, a
/// refusal in the client's API's shape (413, 408).
async fn read_body(
    api: Api,
    request: axum::extract::Request,
    deadline: Duration,
    limit: usize,
) -> Result<axum::extract::Request, Box<Response>> {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let refuse = |status, message: &str| Box::new(error(api, status, message, Kind::Invalid));
    let too_large = || {
        Box::new(error(
            api,
            StatusCode::PAYLOAD_TOO_LARGE,
            &match limit >= 1 << 20 {
                true => format!("the request body is larger than {} MiB", limit >> 20),
                false => format!("the request body is larger than {} KiB", limit >> 10),
            },
            Kind::TooLarge,
        ))
    };
    // A body announced larger than the limit is refused before any of it is read.
    if http_body::Body::size_hint(&body)
        .lower()
        .try_into()
        .is_ok_and(|n: usize| n > limit)
    {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, limit);
    match tokio::time::timeout(deadline, limited.collect()).await {
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request body did not come within {} s",
                deadline.as_secs_f64()
            ),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(refuse(
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )),
        Ok(Ok(whole)) => Ok(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::from(whole.to_bytes()),
        )),
    }
}

/// Whether `Host` names this machine by a loopback name or address.
pub(crate) fn loopback_host(headers: &HeaderMap) -> bool {
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
pub(crate) async fn log_request(
    State(gw): State<Arc<Gateway>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    // Random, so that the ledger tells apart every replica's requests.
    let id = gw.next_id("req_");
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |m| m.as_str())
        .to_owned();
    let span = tracing::info_span!(
        target: kite_core::trace::SERVER_TARGET,
        "request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        url.path = %log_safe(&path),
        http.response.status_code = tracing::field::Empty,
        kite.request_id = %id,
    );
    let started = std::time::Instant::now();
    // A client that leaves before its answer starts is logged too, as nginx's 499.
    let mut unanswered = Unanswered {
        id: &id,
        method: &method,
        path: &path,
        started,
        armed: true,
    };
    let flying = InFlight::new(gw.clone());
    let came = crate::admin::now_ms();
    let mut response = next.run(request).instrument(span.clone()).await;
    unanswered.armed = false;
    let answered = response
        .extensions()
        .get::<crate::handlers::Answered>()
        .cloned();
    let route = answered
        .as_ref()
        .map_or("-".to_owned(), |a| a.route.clone());
    let first_byte = started.elapsed();
    gw.metrics.answered(
        crate::metrics::Served {
            route: route.clone(),
            key: match (
                &answered,
                response.extensions().get::<crate::admission::Refused>(),
            ) {
                (Some(a), _) => a.key.clone(),
                (None, Some(refused)) => refused.0.clone(),
                (None, None) => "-".to_owned(),
            },
            status: response.status().as_u16(),
        },
        first_byte.as_secs_f64(),
    );
    // Its ledger row, written when its answer ends (or its client leaves).
    let row = answered.map(|answered| Draft {
        request_id: id.clone(),
        time_ms: came,
        status: response.status().as_u16(),
        first_byte,
        answered,
    });
    let flying = flying.answering(route, started, row);
    span.record("http.response.status_code", response.status().as_u16());
    if response.status().is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
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
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streamed {
        return response;
    }
    // A streamed answer's span (and its place among those in flight) lasts as long as its
    // stream: it ends with the last event, or when the client leaves.
    let (parts, body) = response.into_parts();
    let flying = Arc::new(std::sync::Mutex::new(flying));
    let at_end = flying.clone();
    let body = body
        .into_data_stream()
        .map(move |chunk| {
            let _ = &flying;
            span.in_scope(|| chunk)
        })
        // Written before the stream's end reaches the client, so that it finds its
        // answer in its usage at once.
        .chain(futures_util::stream::poll_fn(move |_| {
            at_end.lock().unwrap_or_else(|e| e.into_inner()).write_row();
            std::task::Poll::Ready(None)
        }));
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// A request's ledger row, but for its end.
struct Draft {
    request_id: String,
    time_ms: i64,
    status: u16,
    first_byte: Duration,
    answered: crate::handlers::Answered,
}

/// A request among those in flight, until dropped: with its answer, when it streams.
struct InFlight {
    gw: Arc<Gateway>,
    /// The route that answers, and when the request came, once its answer began.
    answering: Option<(String, std::time::Instant)>,
    /// Its ledger row, until written.
    row: Option<Draft>,
}

impl InFlight {
    fn new(gw: Arc<Gateway>) -> Self {
        gw.metrics.in_flight.inc();
        Self {
            gw,
            answering: None,
            row: None,
        }
    }

    fn answering(mut self, route: String, started: std::time::Instant, row: Option<Draft>) -> Self {
        self.answering = Some((route, started));
        self.row = row;
        self
    }

    /// Writes the request's ledger row, once.
    fn write_row(&mut self) {
        let (Some(draft), Some(ledger), Some((_, started))) =
            (self.row.take(), &self.gw.ledger, &self.answering)
        else {
            return;
        };
        ledger.record(crate::ledger::row(
            &draft.answered,
            draft.request_id,
            draft.time_ms,
            draft.status,
            Some(draft.first_byte),
            started.elapsed(),
        ));
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.write_row();
        self.gw.metrics.in_flight.dec();
        if let Some((route, started)) = &self.answering {
            self.gw
                .metrics
                .ended(route, started.elapsed().as_secs_f64());
        }
    }
}

/// Logs a request whose client left before its answer started, when dropped armed.
struct Unanswered<'a> {
    id: &'a str,
    method: &'a axum::http::Method,
    path: &'a str,
    started: std::time::Instant,
    armed: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.armed {
            tracing::info!(
                target: "kite::serve",
                request_id = %self.id,
                method = %self.method,
                path = %log_safe(self.path),
                status = 499u16,
                ms = self.started.elapsed().as_millis() as u64,
                "request"
            );
        }
    }
}

/// A path as it may be logged: printable ASCII, at most 200 characters.
pub(crate) fn log_safe(path: &str) -> String {
    path.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(200)
        .collect()
}
