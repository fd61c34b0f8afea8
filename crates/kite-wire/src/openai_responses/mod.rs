//! OpenAI Responses (`POST /v1/responses`): request encoding, and decoding of streamed,
//! whole and stored responses.
//!
//! Output items map onto kite's events: `message` content to text and refusal deltas,
//! `reasoning` summaries to reasoning deltas with the whole item (id, `encrypted_content`)
//! kept in [`Metadata`](kite_core::Metadata) under this namespace so it can be replayed,
//! `function_call` to tool calls (the call's `call_id` is the tool call's id). Items kite has no
//! type for (web search and other built-in tools) pass through as
//! [`Event::Unknown`](kite_core::Event).

mod decode;
mod encode;

pub use decode::{
    ResponsesFrames, ResponsesStreamDecoder, Status, Stored, decode_response, decode_stored,
    response_events,
};
pub use encode::{Options, encode_request};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "responses";
