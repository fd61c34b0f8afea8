//! The endpoints: the model list, usage, Chat Completions, Responses and Messages, whole
//! and streamed.

use crate::Gateway;
use crate::encoders::Encoder;
use crate::errors::{Api, Kind, error, upstream_error};
use crate::keys::Caller;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kite_core::{Event, EventStream, ResponseBuilder};
use kite_wire::anthropic::serve as messages;
use kite_wire::openai_chat::serve::{ChunkEncoder, decode_request, encode_response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The whole answer: `first`, then the rest of `events`.
pub(crate) async fn whole(
    first: Option<Result<Event, kite_core::Error>>,
    events: EventStream,
) -> Result<kite_core::Response, kite_core::Error> {
    let mut builder = ResponseBuilder::new();
    let mut all = futures_util::stream::iter(first).chain(events);
    while let Some(event) = all.next().await {
        builder.push(event?);
    }
    builder.finish()
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a client asks, as an answer needs it.
pub(crate) struct Ask {
    pub api: Api,
    pub caller: Caller,
    pub request: kite_core::Request,
    /// A streamed answer.
    pub stream: bool,
    /// What keeps the answer once whole.
    pub keep: Option<Keep>,
    /// `Cache-Control: no-cache`: answered afresh, and not kept in the cache.
    pub fresh: bool,
    /// The request's slot: what it uses is counted there.
    pub slot: Option<Arc<crate::limits::Slot>>,
    /// Its share of the bytes decoded at once, given back once its answer has begun.
    pub held: Option<crate::allowance::Held>,
}

/// Whether `headers` ask for an answer afresh: `Cache-Control: no-cache`, `no-store` or
/// `max-age=0`, or `Pragma: no-cache`.
pub(crate) fn fresh(headers: &axum::http::HeaderMap) -> bool {
    let said = |name| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|d| d.trim().to_ascii_lowercase().replace(' ', ""))
            .collect::<Vec<_>>()
    };
    said(header::CACHE_CONTROL)
        .iter()
        .any(|d| matches!(d.as_str(), "no-cache" | "no-store" | "max-age=0"))
        || said(header::PRAGMA).iter().any(|d| d == "no-cache")
}

/// What keeps an answer once it is whole (a stored response), before the client is told
/// it ended.
pub(crate) type Keep =
    Box<dyn FnOnce(kite_core::Response) -> futures_util::future::BoxFuture<'static, ()> + Send>;

/// Answers `request` for `caller`: whole, as `whole` writes a response, or streamed through
/// `encoder`; `keep` is given the whole answer, when it ends well, before the client hears
/// of its end.
pub(crate) async fn answer<E: Encoder>(
    gw: Arc<Gateway>,
    ask: Ask,
    whole_body: impl FnOnce(&kite_core::Response) -> Value,
    encoder: E,
) -> Response {
    let Ask {
        api,
        caller,
        request,
        stream,
        keep,
        fresh,
        slot,
        held,
    } = ask;
    use crate::answer::Lookup;
    let looked = crate::answer::lookup(&gw, api, &caller, &request, fresh).await;
    let (opened, cached) = match looked {
        Ok(Lookup::Hit(hit)) => (*hit, Some(true)),
        Ok(lookup) => match gw.open(api, &caller, request, slot).await {
            Ok(mut opened) => {
                // A miss is kept once whole, its first event too.
                if let Lookup::Miss(key) = lookup {
                    let all = futures_util::stream::iter(opened.first.take()).chain(opened.events);
                    opened.events = crate::answer::kept_in_cache(&gw, key, Box::pin(all));
                }
                (opened, gw.cache.as_ref().map(|_| false))
            }
            Err(refused) => return *refused,
        },
        Err(refused) => return *refused,
    };
    // What decoding made is gone now: the request is the provider's.
    if let Some(held) = held {
        held.release();
    }
    let crate::answer::Opened {
        first,
        events,
        route,
        provider,
        model,
        tally,
    } = opened;
    // Who answered whom, for the request's metrics and its ledger row.
    let served = Answered {
        route,
        key: gw.keys.label(&caller),
        caller,
        provider,
        model,
        tally,
        cached: cached == Some(true),
    };
    let events = until_stopped(events, gw.stop.clone());
    if !stream {
        // A client that leaves before the whole answer is written down all the same.
        let left = crate::ledger::LeftEarly::arm(&gw, &served);
        let whole = whole(first, events).await;
        let mut answer = match whole {
            Ok(r) => {
                let body = whole_body(&r);
                if let Some(keep) = keep {
                    keep(r).await;
                }
                axum::Json(body).into_response()
            }
            Err(e) => {
                failed_midway(&served.route, &e);
                upstream_error(api, &e, &gw.secrets.all())
            }
        };
        mark(&mut answer, cached);
        answer.extensions_mut().insert(served);
        // Its row is the request log's from here (kept whole first, when asked).
        left.disarm();
        return answer;
    }
    let route = served.route.clone();
    let secrets = gw.secrets.clone();
    // With something to keep, the answer is also built whole as it streams.
    let built = keep.as_ref().map(|_| ResponseBuilder::new());
    let state = Arc::new(tokio::sync::Mutex::new((encoder, built, keep)));
    let body = futures_util::stream::iter(first)
        .chain(events)
        .map(Some)
        .chain(futures_util::stream::once(async { None }))
        .then(move |item| {
            let (state, route, secrets) = (state.clone(), route.clone(), secrets.clone());
            async move {
                let mut guard = state.lock().await;
                let (enc, built, keep) = &mut *guard;
                match item {
                    Some(Ok(e)) => {
                        if let Some(b) = built {
                            b.push(e.clone());
                        }
                        enc.event(&e)
                    }
                    Some(Err(e)) => {
                        failed_midway(&route, &e);
                        *built = None;
                        enc.failed(&crate::errors::told(&e, &secrets.all()))
                    }
                    None => {
                        if let (Some(b), Some(keep)) = (built.take(), keep.take())
                            && let Ok(r) = b.finish()
                        {
                            keep(r).await;
                        }
                        enc.finish()
                    }
                }
            }
        })
        .map(Ok::<_, std::convert::Infallible>);
    let ping = match api {
        Api::Messages => "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        Api::Chat => ": keep-alive\n\n",
    };
    let every = gw.deadlines.keep_alive;
    let mut answer = event_stream(kept_alive(body, ping, every));
    mark(&mut answer, cached);
    answer.extensions_mut().insert(served);
    answer
}

/// Says on `answer` whether the cache gave it (with a cache).
fn mark(answer: &mut Response, cached: Option<bool>) {
    if let Some(hit) = cached {
        let said = match hit {
            true => "hit",
            false => "miss",
        };
        answer
            .headers_mut()
            .insert("x-kite-cache", axum::http::HeaderValue::from_static(said));
    }
}

/// Says in the log that an answer begun on `route` failed before its end: its request's
/// line shows the status its head was sent with.
fn failed_midway(route: &str, e: &kite_core::Error) {
    tracing::warn!(target: "kite::serve", route = %route, error = %e, "answer failed midway");
}

/// The route that answered a request, the key that asked and what the answer used, on
/// its response for the metrics and the ledger row `log_request` keeps.
#[derive(Clone, Debug)]
pub(crate) struct Answered {
    pub route: String,
    /// The key's label in the metrics.
    pub key: String,
    pub caller: Caller,
    /// The upstream provider and the model asked of it.
    pub provider: String,
    pub model: String,
    pub tally: Arc<std::sync::Mutex<crate::answer::Tally>>,
    /// The cache gave the answer.
    pub cached: bool,
}

/// `body`, with `ping` (Anthropic's ping event, or an SSE comment every client skips)
/// after each `every` of silence ([`Deadlines::keep_alive`](crate::Deadlines)).
fn kept_alive<S>(
    body: S,
    ping: &'static str,
    every: std::time::Duration,
) -> impl futures_util::Stream<Item = Result<String, std::convert::Infallible>> + Send
where
    S: futures_util::Stream<Item = Result<String, std::convert::Infallible>> + Send + 'static,
{
    futures_util::stream::unfold(Box::pin(body), move |mut body| async move {
        tokio::select! {
            next = body.next() => next.map(|item| (item, body)),
            () = tokio::time::sleep(every) => Some((Ok(ping.to_owned()), body)),
        }
    })
}

/// `events`, ended by an error (503, "stopping") once `stop` is cancelled: a stream cut off
/// at the end of a shutdown's grace still ends in its API's way.
pub(crate) fn until_stopped(
    events: EventStream,
    stop: tokio_util::sync::CancellationToken,
) -> EventStream {
    Box::pin(futures_util::stream::unfold(
        (events, Some(stop)),
        |(mut events, stop)| async move {
            let stop = stop?;
            tokio::select! {
                biased;
                next = events.next() => next.map(|e| (e, (events, Some(stop)))),
                () = stop.cancelled() => {
                    let mut e = kite_core::ApiError::new(
                        Some(503),
                        "the server stopped before this answer was complete; ask again",
                    );
                    e.retry_after = Some(std::time::Duration::from_secs(5));
                    Some((Err(kite_core::Error::Api(Box::new(e))), (events, None)))
                }
            }
        },
    ))
}

pub(crate) fn invalid(api: Api, e: &kite_core::Error) -> Response {
    error(api, StatusCode::BAD_REQUEST, &e.to_string(), Kind::Invalid)
}

pub(crate) async fn chat(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    slot: Option<Extension<Arc<crate::limits::Slot>>>,
    held: Option<Extension<crate::allowance::Held>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let client = match decode_request(&body) {
        Ok(c) => c,
        Err(e) => return invalid(Api::Chat, &e),
    };
    let (public, id, created) = (
        client.request.model.clone(),
        gw.next_id("chatcmpl-kite-"),
        now(),
    );
    let encoder = ChunkEncoder::new(id.clone(), public.clone(), created, client.include_usage);
    let whole = move |r: &kite_core::Response| encode_response(r, &id, &public, created);
    let ask = Ask {
        api: Api::Chat,
        caller,
        request: client.request,
        stream: client.stream,
        keep: None,
        fresh: fresh(&headers),
        slot: slot.map(|Extension(s)| s),
        held: held.map(|Extension(h)| h),
    };
    answer(gw, ask, whole, encoder).await
}

pub(crate) async fn anthropic(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    slot: Option<Extension<Arc<crate::limits::Slot>>>,
    held: Option<Extension<crate::allowance::Held>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let mut client = match messages::decode_request(&body) {
        Ok(c) => c,
        Err(e) => return invalid(Api::Messages, &e),
    };
    offer_betas(&headers, &mut client.request);
    let public = client.request.model.clone();
    let id = gw.next_id("msg_kite_");
    let encoder = messages::EventEncoder::new(id.clone(), public.clone());
    let whole = move |r: &kite_core::Response| messages::encode_response(r, &id, &public);
    let ask = Ask {
        api: Api::Messages,
        caller,
        request: client.request,
        stream: client.stream,
        keep: None,
        fresh: fresh(&headers),
        slot: slot.map(|Extension(s)| s),
        held: held.map(|Extension(h)| h),
    };
    answer(gw, ask, whole, encoder).await
}

/// Offers Anthropic the beta features a Messages client turns on (other providers answer
/// without them, as the log says once).
pub(crate) fn offer_betas(headers: &axum::http::HeaderMap, request: &mut kite_core::Request) {
    let betas = betas(headers);
    if betas.is_empty() {
        return;
    }
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        tracing::info!(
            "anthropic-beta features are passed on to Anthropic; other providers answer \
             without them"
        );
    });
    request
        .provider_hints
        .insert("anthropic", "beta", json!(betas));
}

/// The beta features a Messages client turns on (`anthropic-beta`, comma-separated, in
/// one header or several).
fn betas(headers: &axum::http::HeaderMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for value in headers.get_all("anthropic-beta") {
        for beta in value.to_str().unwrap_or_default().split(',') {
            let beta = beta.trim();
            if !beta.is_empty() && !out.iter().any(|b| b == beta) {
                out.push(beta.to_owned());
            }
        }
    }
    out
}

/// A streamed answer of server-sent events.
pub(crate) fn event_stream(
    body: impl futures_util::Stream<Item = Result<String, std::convert::Infallible>> + Send + 'static,
) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
