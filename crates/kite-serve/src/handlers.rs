//! The endpoints: the model list, usage, Chat Completions, Responses and Messages, whole
//! and streamed.

use crate::Gateway;
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
use kite_wire::openai_responses::serve as responses;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
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

pub(crate) async fn models(State(gw): State<Arc<Gateway>>) -> Response {
    let data: Vec<Value> = gw
        .routes
        .iter()
        .map(|r| json!({"id": r.name, "object": "model", "created": 0, "owned_by": "kite"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// What the caller's key (or, with no keys, everyone) has used since the gateway started.
pub(crate) async fn usage(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    axum::Json(json!({"object": "usage", "usage": gw.keys.used(caller)})).into_response()
}

pub(crate) async fn chat(
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
    let (first, events) = match gw.open(api, caller, client.request).await {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    let id = gw.next_id();
    let created = now();
    if !client.stream {
        return match whole(first, events).await {
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
    event_stream(body)
}

pub(crate) async fn responses(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    body: Bytes,
) -> Response {
    let api = Api::Chat;
    let client = match responses::decode_request(&body) {
        Ok(c) => c,
        Err(e) => return error(api, StatusCode::BAD_REQUEST, &e.to_string(), Kind::Invalid),
    };
    let public = client.request.model.clone();
    let (first, events) = match gw.open(api, caller, client.request).await {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    let id = format!("resp_kite_{}", gw.ids.fetch_add(1, Ordering::Relaxed) + 1);
    let created = now();
    if !client.stream {
        return match whole(first, events).await {
            Ok(r) => {
                axum::Json(responses::encode_response(&r, &id, &public, created)).into_response()
            }
            Err(e) => upstream_error(api, &e),
        };
    }
    let encoder = Arc::new(std::sync::Mutex::new(responses::EventEncoder::new(
        id, public, created,
    )));
    let last = encoder.clone();
    let sse = |events: Vec<Value>| {
        events
            .into_iter()
            .map(|data| {
                let name = data["type"].as_str().unwrap_or("message").to_owned();
                format!("event: {name}\ndata: {data}\n\n")
            })
            .collect::<String>()
    };
    let body = futures_util::stream::iter(first)
        .chain(events)
        .map(move |event| {
            let mut enc = encoder.lock().unwrap_or_else(|p| p.into_inner());
            match event {
                Ok(e) => sse(enc.event(&e)),
                // After a failure the stream ends with it.
                Err(e) => sse(enc.failed(&e.to_string())),
            }
        })
        .chain(futures_util::stream::once(async move {
            sse(last.lock().unwrap_or_else(|p| p.into_inner()).finish())
        }))
        .map(Ok::<_, std::convert::Infallible>);
    event_stream(body)
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

pub(crate) async fn anthropic(
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
    let (first, events) = match gw.open(api, caller, client.request).await {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    let id = format!("msg_kite_{}", gw.ids.fetch_add(1, Ordering::Relaxed) + 1);
    if !client.stream {
        return match whole(first, events).await {
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
    event_stream(body)
}
