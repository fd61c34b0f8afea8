//! OpenAI Chat Completions (`POST /v1/chat/completions`) and the servers that speak it.
//!
//! - [`encode_request`] writes a `Request` as the JSON body.
//! - [`decode_response`] reads a non-streamed JSON body into a
//!   `Response`.
//! - [`ChatStreamDecoder`] reads a streamed (SSE) body into `Event`s.
//!
//! Servers differ in small ways; a [`Dialect`] names which one is spoken. Decoding accepts
//! every dialect's output whatever the dialect: `reasoning_content` / `reasoning` fields,
//! Mistral's content-chunk arrays and whole tool calls in one chunk, OpenRouter's
//! `reasoning_details`, cost and errors inside a 200 stream, Groq's `event: error` and
//! `x_groq.usage`, and the legacy `function_call`.

mod encode;
pub mod serve;
mod stream;
mod whole;
mod wire;

pub use encode::encode_request;
pub use stream::{ChatFrames, ChatStreamDecoder};
pub use whole::{decode_response, response_events};

use crate::{Api, Codec, StreamDecoder};
use kite_core::{Error, Event, Request};

/// The Chat Completions [`Codec`], speaking one [`Dialect`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChatCompletions {
    /// Which server is spoken to.
    pub dialect: Dialect,
}

impl ChatCompletions {
    /// The codec for `dialect`.
    pub fn new(dialect: Dialect) -> Self {
        Self { dialect }
    }
}

impl Api for ChatCompletions {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }
    fn provider_name(&self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "openai",
            Dialect::Mistral => "mistral_ai",
            Dialect::OpenRouter => "openrouter",
            Dialect::Groq => "groq",
            Dialect::Compatible => "openai_compatible",
        }
    }
}

impl Codec for ChatCompletions {
    fn encode(&self, request: &Request, stream: bool) -> Result<Vec<u8>, Error> {
        encode_request(request, self.dialect, stream)
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(ChatStreamDecoder::new())
    }
    fn decode_whole(&self, body: &[u8]) -> Result<Vec<Event>, Error> {
        response_events(body)
    }
}

/// The metadata namespace this codec writes ([`kite_core::Metadata`]).
pub const NAMESPACE: &str = "chat";

/// Which server speaks the protocol; decides the few request fields that differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// api.openai.com: `max_completion_tokens`, `stream_options.include_usage`.
    #[default]
    OpenAi,
    /// api.mistral.ai: `max_tokens`, `random_seed`; no `stream_options` or `user`.
    Mistral,
    /// openrouter.ai: `max_tokens`; reasoning details round-trip.
    OpenRouter,
    /// api.groq.com: `max_completion_tokens`.
    Groq,
    /// Any other compatible server (llama.cpp, vLLM, Ollama, proxies): the most widely
    /// accepted field names.
    Compatible,
}

impl Dialect {
    /// Its name in errors.
    fn name(self) -> &'static str {
        match self {
            Dialect::OpenAi => "OpenAI Chat Completions",
            Dialect::Mistral => "Mistral",
            Dialect::OpenRouter => "OpenRouter",
            Dialect::Groq => "Groq",
            Dialect::Compatible => "this server",
        }
    }

    /// Whether it takes `top_k` (OpenRouter does, and so do most compatible servers).
    fn takes_top_k(self) -> bool {
        matches!(self, Dialect::OpenRouter | Dialect::Compatible)
    }

    fn max_tokens_field(self) -> &'static str {
        match self {
            Dialect::OpenAi | Dialect::Groq => "max_completion_tokens",
            _ => "max_tokens",
        }
    }

    fn seed_field(self) -> &'static str {
        match self {
            Dialect::Mistral => "random_seed",
            _ => "seed",
        }
    }

    /// How the request's reasoning settings are written, when the dialect has a field.
    fn reasoning(
        self,
        r: &kite_core::ReasoningConfig,
    ) -> Option<(&'static str, serde_json::Value)> {
        use serde_json::json;
        match self {
            Dialect::OpenRouter => match (&r.effort, r.budget_tokens) {
                (_, Some(max)) => Some(("reasoning", json!({"max_tokens": max}))),
                (Some(e), None) => Some(("reasoning", json!({"effort": e}))),
                (None, None) => None,
            },
            Dialect::OpenAi | Dialect::Groq | Dialect::Compatible => {
                Some(("reasoning_effort", json!(r.effort.as_ref()?)))
            }
            Dialect::Mistral => None,
        }
    }

    fn stream_options(self) -> bool {
        !matches!(self, Dialect::Mistral)
    }

    fn sends_user(self) -> bool {
        !matches!(self, Dialect::Mistral)
    }
}
