//! Anthropic Messages (`POST /v1/messages`): decoding streamed and whole responses.
//!
//! Content blocks map onto kite's events: `text` to text deltas, `thinking` to reasoning
//! whose `signature` rides in [`Metadata`](kite_core::Metadata) under this namespace (as does
//! a `redacted_thinking` block's opaque data), `tool_use` to tool calls whose input JSON is
//! assembled from `input_json_delta` fragments. Blocks kite has no type for (server tools,
//! their results) and citation deltas pass through as [`Event::Unknown`](kite_core::Event).

mod blocks;
mod stream;

pub use stream::{AnthropicStreamDecoder, decode_response, response_events};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "anthropic";
