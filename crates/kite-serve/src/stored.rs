//! `POST /v1/responses` with state, as OpenAI keeps it, when the gateway has a store:
//! `store` (true unless the client says false) keeps each response with its own input and
//! a link to the response it continues, within its key's quota of stored bytes;
//! `previous_response_id` continues from one, on any replica; `GET`, `DELETE` and
//! `input_items` read and remove them; `background` runs a response as a task any replica
//! reports, with `POST .../cancel`. Each key sees its own responses and no other's (a 404,
//! as for one that does not exist).
//!
//! kite-wire's decoder is stateless and refuses these fields, so they are taken out here
//! and the conversation is sent whole: each earlier turn's input and output, read back
//! along the links in one query, then the new input. A response is kept before the client hears of its end, so the next turn finds it
//! wherever it goes. A background run is touched every few seconds; one untouched for
//! [`background::STALE`] (its replica died) is marked failed by any replica. The endpoints of
//! stored responses stay together here, a little past 450 lines.

use crate::Gateway;
use crate::errors::{Api, Kind, error};
use crate::handlers::{Ask, Keep, answer, fresh, invalid, now};
use crate::keys::Caller;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kite_store::Fleet;
use kite_store::fleet::StoredResponse;
use kite_wire::openai_responses::serve as responses;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

mod background;
mod chain;

pub(crate) use background::{Runs, watch};
use chain::{caller_sizes, conversation, within_quota};

/// How long one read or write of a stored response may take.
const DEADLINE: Duration = Duration::from_secs(5);

pub(crate) fn routes() -> axum::Router<Arc<Gateway>> {
    axum::Router::new()
        .route("/v1/responses", post(create))
        .route("/v1/responses/{id}", get(retrieve).delete(delete))
        .route("/v1/responses/{id}/input_items", get(input_items))
        .route("/v1/responses/{id}/cancel", post(background::cancel))
}

/// Whose responses the caller sees.
pub(crate) fn owner(caller: &Caller) -> String {
    caller.id().unwrap_or("-").to_owned()
}

fn unavailable() -> Response {
    error(
        Api::Chat,
        StatusCode::SERVICE_UNAVAILABLE,
        "stored responses cannot be reached just now; try again in a moment",
        Kind::Unavailable,
    )
}

fn unavailable_to_store() -> Response {
    let mut r = error(
        Api::Chat,
        StatusCode::SERVICE_UNAVAILABLE,
        "responses cannot be stored just now: try again in a moment, or send `store: false`",
        Kind::Unavailable,
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("2"),
    );
    r
}

fn not_found(id: &str) -> Response {
    error(
        Api::Chat,
        StatusCode::NOT_FOUND,
        &format!("No response found with id '{id}'."),
        Kind::Missing,
    )
}

fn bad(message: &str) -> Response {
    error(Api::Chat, StatusCode::BAD_REQUEST, message, Kind::Invalid)
}

/// The stored responses, when the gateway has a store.
pub(crate) fn fleet(gw: &Gateway) -> Option<Arc<dyn Fleet>> {
    Some(gw.keys.registry.as_ref()?.fleet.clone())
}

/// The response `id` of `owner`: 404 when there is none or it is another key's.
pub(crate) async fn load(
    fleet: &Arc<dyn Fleet>,
    id: &str,
    owner: &str,
) -> Result<StoredResponse, Box<Response>> {
    match tokio::time::timeout(DEADLINE, fleet.response(id)).await {
        Ok(Ok(Some(r))) if r.owner == owner => Ok(r),
        Ok(Ok(_)) => Err(Box::new(not_found(id))),
        _ => Err(Box::new(unavailable())),
    }
}

/// Keeps `response` (a few tries, within the deadline); false when it could not.
pub(crate) async fn put(fleet: &Arc<dyn Fleet>, response: StoredResponse) -> bool {
    for _ in 0..3 {
        if let Ok(Ok(())) =
            tokio::time::timeout(DEADLINE, fleet.put_response(response.clone())).await
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tracing::warn!(target: "kite::serve", id = %response.id, "a response could not be stored");
    false
}

/// `input` as items: text is one user message; anything else is given back, for the
/// decoder to say what is wrong with it.
fn items(input: Value) -> Result<Vec<Value>, Value> {
    match input {
        Value::String(s) => Ok(vec![json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": s}],
        })]),
        Value::Array(a) => Ok(a),
        other => Err(other),
    }
}

/// A response's id, model, time and the client's tools: what writes it, whole or streamed.
struct Reply {
    id: String,
    public: String,
    created: u64,
    tools: responses::ClientTools,
}

impl Reply {
    /// The reply to `client`, whose hosted tools the gateway's policy places first.
    fn to(gw: &Gateway, client: &mut responses::ClientRequest) -> Self {
        gw.place_hosted_tools(client);
        Self {
            id: gw.next_id("resp_"),
            public: client.request.model.clone(),
            created: now(),
            tools: client.tools.clone(),
        }
    }

    /// What writes the whole response.
    fn encode(&self) -> impl Fn(&kite_core::Response) -> Value + Clone + Send + Sync + 'static {
        let Reply {
            id,
            public,
            created,
            tools,
        } = self;
        let (id, public, created, tools) = (id.clone(), public.clone(), *created, tools.clone());
        move |r: &kite_core::Response| responses::encode_response(r, &id, &public, created, &tools)
    }

    /// What writes it streamed.
    fn encoder(self) -> responses::EventEncoder {
        responses::EventEncoder::new(self.id, self.public, self.created, self.tools)
    }
}

async fn create(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    slot: Option<Extension<Arc<crate::limits::Slot>>>,
    held: Option<Extension<crate::allowance::Held>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let fresh = fresh(&headers);
    let slot = slot.map(|Extension(s)| s);
    let held = held.map(|Extension(h)| h);
    // With no store, or a body that is no object, the stateless decoder says what is wrong.
    let (Some(fleet), Ok(Value::Object(mut v))) = (fleet(&gw), serde_json::from_slice(&body))
    else {
        return stateless(gw, caller, &body, fresh, slot, held).await;
    };
    let store = v.get("store") != Some(&Value::Bool(false));
    let previous = match v.remove("previous_response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if !p.is_empty() => Some(p),
        Some(_) => return bad("`previous_response_id` must be a response's id"),
    };
    let background = match v.remove("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return bad("`background` must be true or false"),
    };
    // Asked to keep what cannot be kept just now: said before anything is spent.
    if (store || previous.is_some()) && gw.keys.registry.as_ref().is_some_and(|r| r.store_down()) {
        return unavailable_to_store();
    }
    if background && !store {
        return bad("`background` needs `store`: a background response is kept to be polled");
    }
    if background && v.get("stream") == Some(&Value::Bool(true)) {
        return bad(
            "streaming a background response is not served: poll it with GET /v1/responses/{id}",
        );
    }
    let owner = owner(&caller);
    let mut input = match v.remove("input").map(items) {
        Some(Ok(all)) => Some(all),
        Some(Err(other)) => {
            v.insert("input".into(), other);
            None
        }
        None => None,
    };
    // What is kept of the input: this turn's own; what came before is in the chain.
    let kept_input = match (store, &input) {
        (true, Some(own)) => serde_json::to_string(own).unwrap_or_else(|_| "[]".into()),
        _ => "[]".into(),
    };
    if store {
        let room = caller_sizes(&gw, &caller).max_stored;
        if let Err(refused) = within_quota(&fleet, &owner, room, body.len()).await {
            return *refused;
        }
    }
    if let Some(previous) = &previous {
        let mut all = match conversation(&fleet, previous, &owner, body.len()).await {
            Ok(items) => items,
            Err(refused) => return *refused,
        };
        all.extend(input.take().unwrap_or_default());
        input = Some(all);
    }
    if let Some(all) = input {
        v.insert("input".into(), Value::Array(all));
    }
    let mut client = match responses::decode_value(&Value::Object(v)) {
        Ok(c) => c,
        Err(e) => return invalid(Api::Chat, &e),
    };
    let reply = Reply::to(&gw, &mut client);
    let now_ms = crate::admin::now_ms();
    let kept = StoredResponse {
        id: reply.id.clone(),
        owner,
        status: "queued".into(),
        created_ms: now_ms,
        updated_ms: now_ms,
        cancel: false,
        body: String::new(),
        input: kept_input,
        previous,
    };
    let encode = reply.encode();
    if background {
        let run = background::Run {
            caller,
            request: client.request,
            kept,
            slot,
        };
        return background::start(gw, fleet, run, reply.public, encode).await;
    }
    let keep: Option<Keep> = store.then(|| {
        let encode = encode.clone();
        Box::new(move |r: kite_core::Response| {
            let body = encode(&r);
            let kept = StoredResponse {
                status: body["status"].as_str().unwrap_or("completed").to_owned(),
                body: body.to_string(),
                updated_ms: crate::admin::now_ms(),
                ..kept
            };
            Box::pin(async move {
                put(&fleet, kept).await;
            }) as futures_util::future::BoxFuture<'static, ()>
        }) as Keep
    });
    let encoder = reply.encoder();
    let ask = Ask {
        api: Api::Chat,
        caller,
        request: client.request,
        stream: client.stream,
        keep,
        fresh,
        slot,
        held,
    };
    answer(gw, ask, encode, encoder).await
}

/// A Responses request answered with nothing kept.
async fn stateless(
    gw: Arc<Gateway>,
    caller: Caller,
    body: &[u8],
    fresh: bool,
    slot: Option<Arc<crate::limits::Slot>>,
    held: Option<crate::allowance::Held>,
) -> Response {
    let mut client = match responses::decode_request(body) {
        Ok(c) => c,
        Err(e) => return invalid(Api::Chat, &e),
    };
    let reply = Reply::to(&gw, &mut client);
    let whole = reply.encode();
    let encoder = reply.encoder();
    let ask = Ask {
        api: Api::Chat,
        caller,
        request: client.request,
        stream: client.stream,
        keep: None,
        fresh,
        slot,
        held,
    };
    answer(gw, ask, whole, encoder).await
}

/// The store, or the answer that there is none.
fn need(gw: &Gateway) -> Result<Arc<dyn Fleet>, Box<Response>> {
    fleet(gw).ok_or_else(|| {
        Box::new(error(
            Api::Chat,
            StatusCode::NOT_FOUND,
            "this gateway keeps no responses (it runs with no store)",
            Kind::Missing,
        ))
    })
}

async fn retrieve(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let found = async {
        let fleet = need(&gw)?;
        load(&fleet, &id, &owner(&caller)).await
    };
    match found.await {
        Ok(r) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            r.body,
        )
            .into_response(),
        Err(refused) => *refused,
    }
}

async fn delete(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    let deleted = async {
        let fleet = need(&gw)?;
        load(&fleet, &id, &owner(&caller)).await?;
        match tokio::time::timeout(DEADLINE, fleet.delete_response(&id)).await {
            // A run under way here stops now; elsewhere, at its next touch.
            Ok(Ok(_)) => {
                gw.background_runs.cancel(&id);
                Ok(())
            }
            _ => Err(Box::new(unavailable())),
        }
    };
    match deleted.await {
        Ok(()) => {
            axum::Json(json!({"id": id, "object": "response", "deleted": true})).into_response()
        }
        Err(refused) => *refused,
    }
}

/// `?order=asc|desc&limit=N&after=ID` (newest first and 20, as OpenAI's defaults).
#[derive(Default, serde::Deserialize)]
struct Listing {
    order: Option<String>,
    limit: Option<usize>,
    after: Option<String>,
}

async fn input_items(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    listing: Result<Query<Listing>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let usage = "input_items takes order (asc or desc), limit (1 to 100) and after (an item's id)";
    let Ok(Query(listing)) = listing else {
        return bad(usage);
    };
    if !matches!(listing.order.as_deref(), None | Some("asc" | "desc"))
        || listing.limit.is_some_and(|l| !(1..=100).contains(&l))
    {
        return bad(usage);
    }
    let owner = owner(&caller);
    let stored = async {
        let fleet = need(&gw)?;
        let stored = load(&fleet, &id, &owner).await?;
        // Its input is the conversation before it, then its own.
        let mut all = match &stored.previous {
            Some(previous) => conversation(&fleet, previous, &owner, 0).await?,
            None => Vec::new(),
        };
        all.extend(serde_json::from_str::<Vec<Value>>(&stored.input).unwrap_or_default());
        Ok::<_, Box<Response>>((stored, all))
    };
    let (stored, mut all) = match stored.await {
        Ok(found) => found,
        Err(refused) => return *refused,
    };
    // Every item has an id, as OpenAI gives them.
    for (i, item) in all.iter_mut().enumerate() {
        if let Some(o) = item.as_object_mut()
            && !o.contains_key("id")
        {
            o.insert("id".into(), format!("in_{}_{i}", stored.id).into());
        }
    }
    if listing.order.as_deref() != Some("asc") {
        all.reverse();
    }
    if let Some(after) = &listing.after {
        let Some(at) = all.iter().position(|i| i["id"] == after.as_str()) else {
            return bad(&format!("response {id} has no input item {after:?}"));
        };
        all.drain(..=at);
    }
    let limit = listing.limit.unwrap_or(20);
    let has_more = all.len() > limit;
    all.truncate(limit);
    axum::Json(json!({
        "object": "list",
        "first_id": all.first().map(|i| i["id"].clone()),
        "last_id": all.last().map(|i| i["id"].clone()),
        "has_more": has_more,
        "data": all,
    }))
    .into_response()
}
