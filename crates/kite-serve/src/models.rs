//! `GET /v1/models` and `GET /v1/models/{id}`: the names the gateway serves, in the shape
//! of the client's API. An Anthropic client (one that sends `anthropic-version`, or its key
//! as `x-api-key` with no bearer token) gets Anthropic's list, paged by `limit`,
//! `after_id` and `before_id`; any other, OpenAI's.

use crate::Gateway;
use crate::errors::{Api, unknown_model};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// When the gateway's models are said to have been made: nothing better is known.
const CREATED: &str = "1970-01-01T00:00:00Z";

/// Whether the client speaks Anthropic's API.
pub(crate) fn anthropic(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
        || (headers.contains_key("x-api-key") && !headers.contains_key("authorization"))
}

/// The names listed: the upstream's own with a catch-all, else the routes'.
fn names(gw: &Gateway) -> Vec<&str> {
    match gw.listed.is_empty() {
        true => gw.names().collect(),
        false => gw.listed.iter().map(String::as_str).collect(),
    }
}

fn entry(name: &str, anthropic: bool) -> Value {
    match anthropic {
        true => json!({"type": "model", "id": name, "display_name": name, "created_at": CREATED}),
        false => json!({"id": name, "object": "model", "created": 0, "owned_by": "kite"}),
    }
}

/// Anthropic's paging of the list.
#[derive(Deserialize)]
pub(crate) struct Page {
    limit: Option<usize>,
    after_id: Option<String>,
    before_id: Option<String>,
}

pub(crate) async fn models(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    Query(page): Query<Page>,
) -> Response {
    let names = names(&gw);
    if !anthropic(&headers) {
        let data: Vec<Value> = names.iter().map(|n| entry(n, false)).collect();
        return axum::Json(json!({"object": "list", "data": data})).into_response();
    }
    let limit = page.limit.unwrap_or(20).clamp(1, 1000);
    let at = |id: &Option<String>| {
        id.as_ref()
            .and_then(|id| names.iter().position(|n| n == id))
    };
    let (from, to) = match (at(&page.after_id), at(&page.before_id)) {
        (Some(after), _) => (after + 1, (after + 1 + limit).min(names.len())),
        (None, Some(before)) => (before.saturating_sub(limit), before),
        (None, None) => (0, limit.min(names.len())),
    };
    let shown = &names[from..to.max(from)];
    let has_more = match page.before_id.is_some() && page.after_id.is_none() {
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
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let anthropic = anthropic(&headers);
    match names(&gw).contains(&id.as_str()) {
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
