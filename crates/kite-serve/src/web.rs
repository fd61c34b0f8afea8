//! The web chat: a page served from the binary (`web/`: plain HTML, CSS and JavaScript,
//! no build step) and the small API it calls. Its conversations are the caller's store's
//! (with no key, the user's, shared with `kite chat`; with keys, each key's own); each
//! question runs the tool loop with the route's tools, and what
//! happens is streamed to the page as server-sent events: `conversation`, `text`,
//! `tool_call`, `tool_result`, `error`, and `done` last.
//!
//! The page's API sits behind the same gate as the gateway (keys, or the token); the page
//! itself and its two files hold no data, so they are served to anyone. Visiting
//! `/?token=TOKEN` sets the token as an HttpOnly, SameSite=Strict cookie for this port and
//! sends the browser on to `/`, so the token leaves the address bar.

use crate::Gateway;
use crate::errors::{Api, Kind, error};
use crate::keys::Caller;
use axum::Router;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kite_core::{Message, Part};
use kite_store::StoreError;
use serde_json::{Value, json};
use std::sync::Arc;

/// What the page may load and from where: its own files only.
const POLICY: &str = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/// The paths that hold no data, served without a key.
pub(crate) const PUBLIC: [&str; 3] = ["/", "/app.js", "/app.css"];

mod chat;

use chat::chat;

pub(crate) fn routes() -> Router<Arc<Gateway>> {
    Router::new()
        .route("/", get(page))
        .route(
            "/app.js",
            get(|| file("text/javascript", include_str!("../web/app.js"))),
        )
        .route(
            "/app.css",
            get(|| file("text/css", include_str!("../web/app.css"))),
        )
        .route("/api/conversations", get(list))
        .route("/api/conversations/{id}", get(show).delete(remove))
        .route("/api/chat", post(chat))
}

async fn file(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, format!("{kind}; charset=utf-8")),
            (header::CONTENT_SECURITY_POLICY, POLICY.to_owned()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::CACHE_CONTROL, "no-cache".to_owned()),
        ],
        body,
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct Visit {
    token: Option<String>,
}

/// The page; with the right `?token=`, the cookie that carries it, and on to `/`.
async fn page(
    State(gw): State<Arc<Gateway>>,
    axum::extract::Query(visit): axum::extract::Query<Visit>,
    headers: axum::http::HeaderMap,
) -> Response {
    match visit.token.filter(|t| gw.keys.is_token(t)) {
        Some(token) => {
            let cookie = format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                crate::keys::cookie_name(&crate::keys::port(&headers)),
                token.trim()
            );
            (
                StatusCode::SEE_OTHER,
                [
                    (header::LOCATION, "/".to_owned()),
                    (header::SET_COOKIE, cookie),
                    (header::CACHE_CONTROL, "no-store".to_owned()),
                    (header::REFERRER_POLICY, "no-referrer".to_owned()),
                ],
            )
                .into_response()
        }
        _ => file("text/html", include_str!("../web/index.html")).await,
    }
}

fn bad(status: StatusCode, message: &str, kind: Kind) -> Response {
    error(Api::Chat, status, message, kind)
}

fn store_error(e: StoreError) -> Response {
    match e {
        StoreError::NotFound(_) => {
            bad(StatusCode::NOT_FOUND, "no such conversation", Kind::Missing)
        }
        e => {
            tracing::warn!(target: "kite::serve", error = %e, "the conversation store failed");
            bad(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the conversation store failed",
                Kind::Upstream,
            )
        }
    }
}

fn no_store() -> Response {
    bad(
        StatusCode::NOT_FOUND,
        "this server keeps no conversations",
        Kind::Missing,
    )
}

async fn list(State(gw): State<Arc<Gateway>>, Extension(caller): Extension<Caller>) -> Response {
    let Some(store) = gw.store_for(&caller) else {
        // Nothing is kept, so there is nothing to list.
        return axum::Json(json!({"conversations": [], "stored": false})).into_response();
    };
    match store.list().await {
        Ok(all) => {
            let all: Vec<Value> = all
                .iter()
                .map(|c| json!({"id": c.id, "title": c.title, "model": c.model, "updated_ms": c.updated_ms}))
                .collect();
            axum::Json(json!({"conversations": all, "stored": true})).into_response()
        }
        Err(e) => store_error(e),
    }
}

async fn show(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let Some(store) = gw.store_for(&caller) else {
        return no_store();
    };
    let conversation = match store.get(&id).await {
        Ok(c) => c,
        Err(e) => return store_error(e),
    };
    let turns = match store.turns(&id).await {
        Ok(t) => t,
        Err(e) => return store_error(e),
    };
    // What was hidden as it streamed stays hidden when the conversation is read again.
    let messages: Vec<Value> = turns
        .iter()
        .filter(|t| !t.turn.summary)
        .flat_map(|t| &t.turn.messages)
        .map(|m| message(m, &gw.secrets.all()))
        .collect();
    axum::Json(json!({"id": conversation.id, "title": conversation.title, "messages": messages}))
        .into_response()
}

async fn remove(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let Some(store) = gw.store_for(&caller) else {
        return no_store();
    };
    match store.delete(&id).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => store_error(StoreError::NotFound(id)),
        Err(e) => store_error(e),
    }
}

/// A stored message as the page shows it: its text, tool calls and tool results, with
/// `secrets` hidden.
fn message(m: &Message, secrets: &[String]) -> Value {
    let hide = |text: &str| kite_core::redact::redact_all(text, secrets);
    let parts: Vec<Value> = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({"type": "text", "text": hide(text)})),
            Part::ToolCall(c) => Some(
                json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": hide(&c.arguments)}),
            ),
            Part::ToolResult(r) => Some(json!({
                "type": "tool_result", "id": r.call_id, "output": hide(&r.text_content()), "error": r.is_error
            })),
            _ => None,
        })
        .collect();
    json!({"role": m.role, "parts": parts})
}
