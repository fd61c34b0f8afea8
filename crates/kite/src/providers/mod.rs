//! Providers: codecs and a transport put together as [`Model`](kite_core::Model)s.

mod apis;
mod catalog;
mod http_model;

pub use apis::{Anthropic, ChatCompletionsApi, MessagesApi, OpenAiCompatible};
pub use catalog::Provider;
pub use http_model::{Api, HttpModel};
