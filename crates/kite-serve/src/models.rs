//! `GET /v1/models` and `GET /v1/models/{id}`: the names the gateway serves, in the shape
//! of the client's API. An Anthropic client (one that sends `anthropic-version`, or its key
//! as `x-api-key` with no bearer token) gets Anthropic's list, paged by `limit`,
//! `after_id` and `before_id`; any other, OpenAI's. A key limited to some models sees
//! those alone.

use crate::Gateway;
use crate::errors::{Api, Kind, error, unknown_model};
use crate::keys::Caller;
use axum::extract::{Extension, Path, Query, State};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// When the gateway's models are said to have been made: nothing better is known.
const CREATED: &str = "1970-01-01T00:00:00Z";

/// Whether the client speaks Anthropic's API.
pub(crate) fn anthropic(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
        || (headers.contains_key("x-api-key") && !headers.contains_key("authorization"))
}

/// The names listed to `caller`: the upstream's own with a catch-all, else the routes';
/// those its key may use.
fn names<'a>(gw: &'a Gateway, caller: &Caller) -> Vec<&'a str> {
    let all: Vec<&str> = match gw.listed.is_empty() {
        true => gw.names().collect(),
        false => gw.listed.iter().map(String::as_str).collect(),
    };
    match caller {
        Caller::Key(k) => all.into_iter().filter(|n| k.may_use(n)).collect(),
        Caller::Anyone => all,
    }
}

fn entry(name: &str, anthropic: bool) -> Value {
    match anthropic {
        true => json!({"type": "model", "id": name, "display_name": name, "created_at": CREATED}),
        false => json!({"id": name, "object": "model", "created": 0, "owned_by": "kite"}),
    }
}

pub(crate) async fn models(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let names = names(&gw, &caller);
    if !anthropic(&headers) {
        let data: Vec<Value> = names.iter().map(|n| entry(n, false)).collect();
        return axum::Json(json!({"object": "list", "data": data})).into_response();
    }
    // Anthropic's paging: `limit` (1 to 1000, default 20), `after_id`, `before_id`.
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => 20,
        Some(Ok(l)) if (1..=1000).contains(&l) => l,
        Some(_) => {
            return error(
                Api::Messages,
                StatusCode::BAD_REQUEST,
                "limit: must be a whole number from 1 to 1000",
                Kind::Invalid,
            );
        }
    };
    let (after, before) = (query.get("after_id"), query.get("before_id"));
    if let Some(unknown) = [after, before]
        .into_iter()
        .flatten()
        .find(|id| !names.contains(&id.as_str()))
    {
        return unknown_model(Api::Messages, unknown);
    }
    let at = |id: Option<&String>| id.and_then(|id| names.iter().position(|n| n == id));
    let (from, to) = match (at(after), at(before)) {
        (Some(after), _) => (after + 1, (after + 1 + limit).min(names.len())),
        (None, Some(before)) => (before.saturating_sub(limit), before),
        (None, None) => (0, limit.min(names.len())),
    };
    let shown = &names[from..to.max(from)];
    let has_more = match before.is_some() && after.is_none() {
        true => from > 0,
        false => to < names.len(),
    };
    axum::Json(json!({
        "data": shown.iter().map(|n| entry(n, true)).collect::<Vec<_>>(),
        "has_more": has_more,
        "first_id": shown.first(),
        "last_id": shown.last(),
    }))
    .into_response()
}

pub(crate) async fn model(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let anthropic = anthropic(&headers);
    match names(&gw, &caller).contains(&id.as_str()) {
        true => axum::Json(entry(&id, anthropic)).into_response(),
        false => unknown_model(
            match anthropic {
                true => Api::Messages,
                false => Api::Chat,
            },
            &id,
        ),
    }
}
