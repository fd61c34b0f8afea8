//! A stored conversation read back, and what a key may keep: each response keeps its own
//! input and a link to the one it continues, so a conversation of many turns is read along
//! its links in one query ([`conversation`]), within bounds of turns and bytes; and a key's
//! stored responses stay within its quota of bytes ([`within_quota`]).

use super::{DEADLINE, bad, not_found, unavailable, unavailable_to_store};
use crate::Gateway;
use crate::errors::{Api, Kind, error};
use crate::keys::Caller;
use axum::http::StatusCode;
use axum::response::Response;
use kite_store::Fleet;
use serde_json::Value;
use std::sync::Arc;

/// The largest conversation continued with `previous_response_id` (16 MiB, as large as a
/// request may be).
const MAX_KEPT: usize = crate::MAX_BODY;

/// The most turns a conversation continued with `previous_response_id` may have.
const MAX_TURNS: usize = 1_000;

/// What `caller` may send and keep.
pub(super) fn caller_sizes(gw: &Gateway, caller: &Caller) -> crate::allowance::Sizes {
    match caller {
        Caller::Key(key) => key.sizes.or(gw.sizes),
        Caller::Anyone => gw.sizes,
    }
}

/// Refuses (413) a response of about `adding` bytes more that would take `owner`'s stored
/// responses past `room`.
pub(super) async fn within_quota(
    fleet: &Arc<dyn Fleet>,
    owner: &str,
    room: Option<u64>,
    adding: usize,
) -> Result<(), Box<Response>> {
    let Some(room) = room else {
        return Ok(());
    };
    let used = match tokio::time::timeout(DEADLINE, fleet.stored_bytes(owner)).await {
        Ok(Ok(used)) => used,
        _ => return Err(Box::new(unavailable_to_store())),
    };
    if used.saturating_add(adding as u64) <= room {
        return Ok(());
    }
    Err(Box::new(error(
        Api::Chat,
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!(
            "this key's stored responses hold {} MiB, and it may keep {} MiB: delete some \
             (DELETE /v1/responses/{{id}}), or send store: false",
            used >> 20,
            room >> 20
        ),
        Kind::TooLarge,
    )))
}

/// The conversation up to and including response `id` of `owner`, as input items: each
/// turn's own input, then its output, oldest first. Refused when the response is not
/// there or is another key's (404), still under way, a link of it is gone, or it is past
/// [`MAX_TURNS`] or, with `adding` more bytes, [`MAX_KEPT`].
pub(super) async fn conversation(
    fleet: &Arc<dyn Fleet>,
    id: &str,
    owner: &str,
    adding: usize,
) -> Result<Vec<Value>, Box<Response>> {
    let chain = match tokio::time::timeout(DEADLINE, fleet.response_chain(id, MAX_TURNS + 1)).await
    {
        Ok(Ok(chain)) => chain,
        _ => return Err(Box::new(unavailable())),
    };
    let Some(newest) = chain.first().filter(|r| r.owner == owner) else {
        return Err(Box::new(not_found(id)));
    };
    if kite_store::fleet::UNDER_WAY.contains(&newest.status.as_str()) {
        return Err(Box::new(bad(&format!(
            "response {id} is still {}: wait for it to end",
            newest.status
        ))));
    }
    if chain.len() > MAX_TURNS {
        return Err(Box::new(bad(&format!(
            "the conversation continued with previous_response_id is over {MAX_TURNS} turns: \
             start a new one"
        ))));
    }
    if let Some(gone) = chain.last().and_then(|r| r.previous.as_deref()) {
        return Err(Box::new(bad(&format!(
            "the conversation before response {id} is gone (response {gone} was deleted): \
             start a new one, or send the input whole"
        ))));
    }
    let bytes: usize = chain.iter().map(|r| r.input.len() + r.body.len()).sum();
    if chain.iter().any(|r| r.owner != owner) || bytes + adding > MAX_KEPT {
        return Err(Box::new(bad(&format!(
            "the conversation continued with previous_response_id is over {} MiB: start a \
             new one (or send the input whole, with store: false)",
            MAX_KEPT >> 20
        ))));
    }
    let mut items = Vec::new();
    for turn in chain.iter().rev() {
        items.extend(serde_json::from_str::<Vec<Value>>(&turn.input).unwrap_or_default());
        let mut said: Value = serde_json::from_str(&turn.body).unwrap_or_default();
        if let Some(Value::Array(output)) = said.get_mut("output").map(Value::take) {
            items.extend(output);
        }
    }
    Ok(items)
}
