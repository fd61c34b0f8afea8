//! Whole (non-streamed) Messages responses.

use super::blocks::Blocks;
use super::wire::WholeMessage;
use crate::{errors, finish_reason};
use kite_core::{ApiError, Error, Event, Response, ResponseBuilder};
use serde_json::Value;

/// The events a whole (non-streamed) Messages response stands for.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let m: WholeMessage = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("message is not valid JSON: {e}"), body))?;
    if m.kind.as_ref().is_some_and(|k| k.as_str() == "error") {
        let v: Value = serde_json::from_slice(body).unwrap_or_default();
        let e = errors::from_value(None, &v).unwrap_or_else(|| ApiError::new(None, v.to_string()));
        return Err(e.into());
    }
    let Some(content) = m.content else {
        return Err(Error::decode("message has no content", body));
    };
    let mut out = vec![Event::Start {
        id: m.id.map(|s| s.into_string()),
        model: m.model.map(|s| s.into_string()),
    }];
    let mut blocks = Blocks::default();
    for (i, block) in content.into_iter().enumerate() {
        blocks.start(i as u32, block, &mut out);
        blocks.stop(i as u32, &mut out);
    }
    if let Some(u) = &m.usage {
        blocks.usage(u);
    }
    blocks.finish = m.stop_reason.map(|r| finish_reason(r.as_str()));
    blocks.finish(&mut out);
    Ok(out)
}

/// Decodes a whole (non-streamed) Messages response.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}
