//! Providers: codecs and a transport put together as [`Model`](kite_core::Model)s.

mod catalog;
mod openai_compatible;

pub use catalog::Provider;
pub use openai_compatible::OpenAiCompatible;
