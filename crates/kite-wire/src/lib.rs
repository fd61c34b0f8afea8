//! Sans-IO wire codecs: they turn kite's [`Request`](kite_core::Request) into provider bytes
//! and provider bytes back into kite's [`Event`](kite_core::Event)s and
//! [`Response`](kite_core::Response)s. Nothing here does I/O, so any HTTP client can drive
//! them and every recorded exchange is a plain unit test.
//!
//! Every model API implements one contract, [`Codec`] (with [`Api`] for where requests go
//! and how they are authorized): [`openai_chat::ChatCompletions`], [`anthropic::Messages`]
//! and [`openai_responses::Responses`]. Each codec's folder has the same rooms: `wire.rs`
//! (the typed serde shapes), `encode.rs`, `stream.rs` and `whole.rs`.
//!
//! - [`sse`]: server-sent events framing.
//! - [`openai_chat`]: OpenAI Chat Completions and the servers that speak it (Mistral,
//!   OpenRouter, Groq, llama.cpp, vLLM, Ollama).
//! - [`anthropic`]: Anthropic Messages.
//! - [`openai_responses`]: OpenAI Responses (requests, and streamed, whole and stored answers).
//! - [`audio`]: audio transcription (multipart uploads, transcripts, transcript streams).
//! - [`errors`]: provider error envelopes into typed [`ApiError`](kite_core::ApiError)s.
//! - [`schema`]: JSON Schema clean-up for providers' strict modes.
//!
//! A request encoded for Anthropic Messages, and an OpenAI Chat Completions stream, cut in
//! the middle of an event as a network may cut it, decoded back into a response:
//!
//! ```
//! use kite_core::{FinishReason, Message, Request, ResponseBuilder};
//! use kite_wire::{Codec, StreamDecoder, anthropic::Messages, openai_chat::ChatCompletions};
//!
//! let request = Request::new("claude-haiku-4-5").system("Be brief.").message(Message::user("Hi"));
//! let body: serde_json::Value = serde_json::from_slice(&Messages::default().encode(&request, true)?)?;
//! assert_eq!(body["system"], "Be brief.");
//! assert_eq!(body["max_tokens"], 4096); // Anthropic requires one; kite's default
//! assert_eq!(body["stream"], true);
//!
//! let mut decoder = ChatCompletions::default().stream_decoder();
//! let mut events = Vec::new();
//! decoder.decode(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel", &mut events)?;
//! decoder.decode(b"lo\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
//!                  data: [DONE]\n\n", &mut events)?;
//! decoder.finish(&mut events)?;
//! let response = ResponseBuilder::build(events)?;
//! assert_eq!(response.text(), "Hello");
//! assert_eq!(response.finish_reason, FinishReason::Stop);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod anthropic;
pub mod audio;
mod client;
mod codec;
pub mod errors;
pub mod openai_chat;
pub mod openai_responses;
pub mod schema;
pub mod sse;
mod str;

pub use codec::{Api, Auth, Codec, ResumePoint, StreamDecoder};

/// kite's finish reason for a provider's name of it (`stop`, `end_turn`, `max_tokens`,
/// `tool_use`, ...); a name kite does not know is kept as
/// [`FinishReason::Other`](kite_core::FinishReason::Other).
pub fn finish_reason(wire: &str) -> kite_core::FinishReason {
    use kite_core::FinishReason;
    match wire {
        "stop" | "end_turn" | "stop_sequence" | "eos" => FinishReason::Stop,
        "length" | "max_tokens" | "model_length" => FinishReason::Length,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}
