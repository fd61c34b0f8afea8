//! Anthropic Messages (`POST /v1/messages`): the request body, and streamed and whole
//! responses.
//!
//! Content blocks map onto kite's events: `text` to text deltas, `thinking` to reasoning
//! whose `signature` rides in [`Metadata`](kite_core::Metadata) under this namespace (as does
//! a `redacted_thinking` block's opaque data), `tool_use` to tool calls whose input JSON is
//! assembled from `input_json_delta` fragments. Blocks kite has no type for (server tools,
//! their results) and citation deltas pass through as [`Event::Unknown`](kite_core::Event).

mod blocks;
mod encode;
mod stream;

pub use encode::{DEFAULT_MAX_TOKENS, VERSION, encode_request};
pub use stream::{AnthropicFrames, AnthropicStreamDecoder, decode_response, response_events};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "anthropic";
