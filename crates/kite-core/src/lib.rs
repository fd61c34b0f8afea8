//! kite's provider-neutral data model.
//!
//! Everything a conversation with a language model is made of — [`Message`]s and their
//! [`Part`]s, a [`Request`], a [`Response`], the streaming [`Event`] grammar every provider
//! shares, [`Usage`] and [`Error`] — plus the [`Model`] trait that providers implement.
//!
//! This crate does no I/O and depends on no runtime: codecs (`kite-wire`) and transports
//! (`kite-http`) build on it.
//!
//! ```
//! use kite_core::{Message, Request, ToolSpec};
//! use serde_json::json;
//!
//! let request = Request::new("gpt-4o-mini")
//!     .system("You are terse.")
//!     .message(Message::user("What is the weather in Paris?"))
//!     .tool(ToolSpec::new(
//!         "weather",
//!         "Current weather for a city",
//!         json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!     ));
//! assert_eq!(request.tools[0].name, "weather");
//! ```

mod accumulate;
pub mod child_env;
mod duration;
mod error;
mod event;
mod message;
mod metadata;
mod model;
pub mod redact;
mod request;
mod response;
pub mod trace;
mod transcript;
mod usage;

pub use accumulate::ResponseBuilder;
pub use duration::duration_from_secs;
pub use error::{ApiError, ApiErrorKind, DecodeError, Error, TransportError, TransportErrorKind};
pub use event::Event;
pub use message::{
    Document, DocumentSource, ImageSource, Message, Part, Reasoning, Role, ToolCall, ToolResult,
};
pub use metadata::Metadata;
pub use model::{Capabilities, EventStream, Model, ModelFuture, collect};
pub use request::{ReasoningConfig, Request, ResponseFormat, ToolChoice, ToolSpec};
pub use response::{FinishReason, Response};
pub use transcript::{
    Audio, Segment, Transcript, TranscriptEvent, TranscriptFormat, TranscriptionRequest, Word,
};
pub use usage::Usage;
