//! OpenAI Responses (`POST /v1/responses`): request encoding, and decoding of streamed,
//! whole and stored responses; [`serve`] runs it the other way, for a server.
//!
//! Output items map onto kite's events: `message` content to text and refusal deltas,
//! `reasoning` summaries to reasoning deltas with the whole item (id, `encrypted_content`)
//! kept in [`Metadata`](kite_core::Metadata) under this namespace so it can be replayed,
//! `function_call` to tool calls (the call's `call_id` is the tool call's id). Items kite has no
//! type for (web search and other built-in tools) pass through as
//! [`Event::Unknown`](kite_core::Event).

mod encode;
mod items;
pub mod serve;
mod stored;
mod stream;
mod whole;
mod wire;

pub use encode::{Options, encode_request};
pub use stored::{Status, Stored, decode_stored};
pub use stream::{ResponsesFrames, ResponsesStreamDecoder};
pub use whole::{decode_response, response_events};

/// The metadata namespace this codec writes.
pub const NAMESPACE: &str = "responses";

use crate::{Api, Codec, ResumePoint, StreamDecoder};
use kite_core::{Error, Event, Request};

/// The Responses [`Codec`], with how requests carry the conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Responses {
    /// How requests carry the conversation; `stream` is set per call.
    pub options: Options,
}

impl Api for Responses {
    fn path(&self) -> &'static str {
        "/responses"
    }
    fn provider_name(&self) -> &'static str {
        "openai"
    }
}

impl Codec for Responses {
    fn encode(&self, request: &Request, stream: bool) -> Result<Vec<u8>, Error> {
        encode_request(request, &self.options, stream)
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(ResponsesStreamDecoder::new())
    }
    fn decode_whole(&self, body: &[u8]) -> Result<Vec<Event>, Error> {
        response_events(body)
    }
    fn resume_path(&self, point: &ResumePoint) -> Option<String> {
        Some(format!(
            "/{}?stream=true&starting_after={}",
            point.id, point.after
        ))
    }
}
