//! Non-streamed responses.

use super::stream::Assembler;
use super::wire::Chunk;
use crate::errors;
use kite_core::{Error, Event, Response, ResponseBuilder};

/// The events a whole (non-streamed) JSON completion stands for, as if it had been streamed.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let chunk: Chunk = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("completion is not valid JSON: {e}"), body))?;
    if chunk.choices.is_none() && chunk.error.is_none() {
        // Not a completion: maybe an error envelope of another shape.
        if let Some(e) = serde_json::from_slice(body)
            .ok()
            .and_then(|v| errors::from_value(None, &v))
        {
            return Err(e.into());
        }
        return Err(Error::decode("completion has no choices", body));
    }
    let mut asm = Assembler::default();
    let mut out = Vec::new();
    asm.chunk(chunk, &mut out)?;
    asm.close(true, &mut out);
    Ok(out)
}

/// Decodes a whole (non-streamed) JSON completion.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}
