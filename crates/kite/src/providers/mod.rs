//! Providers: codecs and a transport put together as [`Model`](kite_core::Model)s.

mod apis;
mod audio;
mod catalog;
mod http_model;
mod responses;

pub use apis::{Anthropic, ChatCompletionsApi, MessagesApi, OpenAiCompatible};
pub use audio::{Transcriber, TranscriptEvents, TranscriptionApi};
pub use catalog::{Endpoint, Provider, WireApi, is_deep_research};
pub use http_model::{Api, HttpModel, Service};
pub use responses::{OpenAiResponses, PollPolicy, ResponsesApi};
