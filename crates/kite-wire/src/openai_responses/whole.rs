//! Whole (non-streamed) Responses.

use super::items::{Items, start};
use super::wire::WireResponse;
use crate::errors;
use kite_core::{Error, Event, Response, ResponseBuilder};

/// The events a whole (non-streamed) Responses response stands for.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let v: WireResponse = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("response is not valid JSON: {e}"), body))?;
    let Some(output) = &v.output else {
        let any = serde_json::from_slice(body).unwrap_or_default();
        if let Some(e) = errors::from_value(None, &any) {
            return Err(e.into());
        }
        return Err(Error::decode("response has no output", body));
    };
    let mut out = Vec::new();
    start(&v, &mut out);
    let mut items = Items::default();
    for (i, item) in output.iter().enumerate() {
        items.done(i as u64, item, true, &mut out)?;
    }
    items.end(&v, &mut out)?;
    Ok(out)
}

/// Decodes a whole (non-streamed) Responses response.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}
