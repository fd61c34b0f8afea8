//! Whole (non-streamed) Responses.

use super::items::{Items, start};
use super::wire::WireResponse;
use crate::errors;
use kite_core::{Error, Event, Response, ResponseBuilder};

/// The events a whole (non-streamed) Responses response stands for.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let parsed: Result<WireResponse, _> = serde_json::from_slice(body);
    let v = match parsed {
        Ok(v) if v.output.is_some() => v,
        other => {
            // Not a response: maybe an error envelope of any shape.
            let any = serde_json::from_slice(body).unwrap_or_default();
            if let Some(e) = errors::from_value(None, &any) {
                return Err(e.into());
            }
            return Err(match other {
                Err(e) => Error::decode(format!("response is not valid JSON: {e}"), body),
                Ok(_) => Error::decode("response has no output", body),
            });
        }
    };
    let output = v.output.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    start(&v, &mut out);
    let mut items = Items::default();
    for (i, item) in output.iter().enumerate() {
        items.done(i as u64, item, true, &mut out);
    }
    items.end(&v, &mut out)?;
    Ok(out)
}

/// Decodes a whole (non-streamed) Responses response.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}
