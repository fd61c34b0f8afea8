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
pub mod serve;
mod stream;
mod whole;
mod wire;

pub use encode::{DEFAULT_MAX_TOKENS, VERSION, encode_request};
pub use stream::{AnthropicFrames, AnthropicStreamDecoder};
pub use whole::{decode_response, response_events};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "anthropic";

/// Settings a Messages client gives in Anthropic's own terms, which go back to Anthropic
/// as they came (through a gateway, as `provider_hints`) and to no other provider.
pub(crate) const OWN_SETTINGS: [&str; 4] = [
    "thinking",
    "output_config",
    "context_management",
    "cache_control",
];

use crate::{Api, Auth, Codec, StreamDecoder};
use kite_core::{Error, Event, Request};
use serde_json::Value;

/// The Messages [`Codec`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Messages {
    /// `anthropic-beta` features to turn on.
    pub betas: Vec<String>,
}

impl Api for Messages {
    fn path(&self) -> &'static str {
        "/messages"
    }
    fn provider_name(&self) -> &'static str {
        "anthropic"
    }
    fn auth(&self) -> Auth {
        Auth::Header("x-api-key")
    }
    fn headers(&self) -> Vec<(&'static str, String)> {
        self.with_betas(&[])
    }
    fn request_headers(&self, request: &Request) -> Vec<(&'static str, String)> {
        let asked: Vec<&str> = request
            .provider_hints
            .get(NAMESPACE, "beta")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        self.with_betas(&asked)
    }
}

impl Messages {
    /// The headers, with the configured beta features and `more` (each once).
    fn with_betas(&self, more: &[&str]) -> Vec<(&'static str, String)> {
        let mut h = vec![("anthropic-version", VERSION.to_owned())];
        let mut betas: Vec<&str> = self.betas.iter().map(String::as_str).collect();
        for b in more {
            if !betas.contains(b) {
                betas.push(b);
            }
        }
        if !betas.is_empty() {
            h.push(("anthropic-beta", betas.join(",")));
        }
        h
    }
}

impl Codec for Messages {
    fn encode(&self, request: &Request, stream: bool) -> Result<Vec<u8>, Error> {
        encode_request(request, stream)
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(AnthropicStreamDecoder::new())
    }
    fn decode_whole(&self, body: &[u8]) -> Result<Vec<Event>, Error> {
        response_events(body)
    }
    fn count_tokens_body(&self, request: &Request) -> Option<Result<Vec<u8>, Error>> {
        Some(encode::encode_count(request))
    }
    fn decode_count(&self, body: &[u8]) -> Result<u64, Error> {
        serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("input_tokens")?.as_u64())
            .ok_or_else(|| Error::decode("a token count without `input_tokens`", body))
    }
}
