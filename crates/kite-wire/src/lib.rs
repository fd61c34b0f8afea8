//! Sans-IO wire codecs: they turn kite's [`Request`](kite_core::Request) into provider bytes
//! and provider bytes back into kite's [`Event`](kite_core::Event)s and
//! [`Response`](kite_core::Response)s. Nothing here does I/O, so any HTTP client can drive
//! them and every recorded exchange is a plain unit test.
//!
//! - [`sse`]: server-sent events framing.
//! - [`openai_chat`]: OpenAI Chat Completions and the servers that speak it (Mistral,
//!   OpenRouter, Groq, llama.cpp, vLLM, Ollama).
//! - [`anthropic`]: Anthropic Messages.
//! - [`openai_responses`]: OpenAI Responses (decoding).
//! - [`audio`]: audio transcription (multipart uploads, transcripts, transcript streams).
//! - [`errors`]: provider error envelopes into typed [`ApiError`](kite_core::ApiError)s.
//! - [`schema`]: JSON Schema clean-up for providers' strict modes.

pub mod anthropic;
pub mod audio;
pub mod errors;
pub mod openai_chat;
pub mod openai_responses;
pub mod schema;
pub mod sse;
mod str;

use kite_core::{Error, Event};

/// A decoder for one streamed response: bytes in, events out.
pub trait StreamDecoder: Send {
    /// Decodes `bytes`, appending complete events to `out`. An error ends the stream; events
    /// decoded before it are still in `out`.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), Error>;

    /// Called once when the connection closed: flushes what is pending, or reports a stream
    /// that ended before the provider said it was complete.
    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), Error>;

    /// Where the stream can be picked up on a new connection after this one dropped, when
    /// the provider can resume it.
    fn resume_point(&self) -> Option<ResumePoint> {
        None
    }

    /// A new connection continues the stream from [`resume_point`](Self::resume_point):
    /// framing left over from the dropped one is discarded.
    fn resumed(&mut self) {}
}

/// Where a dropped stream resumes: after event `after` of the provider's response `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumePoint {
    pub id: String,
    pub after: u64,
}

impl<T: StreamDecoder + ?Sized> StreamDecoder for Box<T> {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), Error> {
        (**self).decode(bytes, out)
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        (**self).finish(out)
    }

    fn resume_point(&self) -> Option<ResumePoint> {
        (**self).resume_point()
    }

    fn resumed(&mut self) {
        (**self).resumed()
    }
}
