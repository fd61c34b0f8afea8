//! OpenAI Responses (`POST /v1/responses`): decoding streamed and whole responses.
//!
//! Output items map onto kite's events: `message` content to text and refusal deltas,
//! `reasoning` summaries to reasoning deltas with the whole item (id, `encrypted_content`)
//! kept in [`Metadata`](kite_core::Metadata) under this namespace so it can be replayed,
//! `function_call` to tool calls (the call's `call_id` is the tool call's id). Items kite has no
//! type for (web search and other built-in tools) pass through as
//! [`Event::Unknown`](kite_core::Event).

mod decode;

pub use decode::{ResponsesFrames, ResponsesStreamDecoder, decode_response, response_events};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "responses";
