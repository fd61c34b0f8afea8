//! Providers: codecs and a transport put together as [`Model`](kite_core::Model)s.

mod apis;
mod audio;
mod catalog;
mod first;
mod http_model;
mod models;
mod responses;

pub use apis::{Anthropic, OpenAiCompatible};
pub use audio::{Transcriber, TranscriptEvents};
pub use catalog::{Endpoint, OpenAiApi, Provider, is_deep_research};
pub use first::model_from_env;
pub use http_model::HttpModel;
pub use models::{KnownModel, context_window};
pub use responses::{OpenAiResponses, PollPolicy};
