//! kite: build programs that talk to language models and call tools.
//!
//! One data model ([`Request`], [`Message`], [`Response`]) and one stream of [`Event`]s for
//! every provider. Pick a provider with [`Provider`], or build one with
//! [`OpenAiCompatible`] for any server that speaks the OpenAI Chat Completions API. An
//! [`Agent`] runs the tool-calling loop over any of them.
//!
//! ```no_run
//! use kite::{Message, Model, Provider, Request};
//!
//! # async fn demo() -> Result<(), kite::Error> {
//! let model = Provider::OpenAi.from_env()?; // reads OPENAI_API_KEY (and OPENAI_BASE_URL)
//! let answer = model
//!     .complete(&Request::new("gpt-4o-mini").message(Message::user("Say hi")))
//!     .await?;
//! println!("{}", answer.text());
//! # Ok(()) }
//! ```
//!
//! The same call goes to any server that speaks a provider's API, given its address; here a
//! loopback server that answers with a stream OpenAI sent (no key is needed for a server
//! named this way):
//!
//! ```
//! use kite::{Endpoint, Message, Model, Provider, Request};
//! use kite_testkit::{ReplayServer, Reply, fixture};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kite::Error> {
//! let recorded = fixture("openai/chat-completions/stream-text-with-usage/response.sse");
//! let server = ReplayServer::start(vec![Reply::sse(recorded)]).await;
//! let at = Endpoint::at(format!("{}/v1", server.url()));
//! let model = Provider::OpenAi.model("gpt-4o-mini", &at)?;
//! let answer = model
//!     .complete(&Request::new("gpt-4o-mini").message(Message::user("Count to three.")))
//!     .await?;
//! assert_eq!(answer.text(), "1\n2\n3");
//! assert!(answer.usage.total_tokens > 0);
//! assert_eq!(server.requests()[0].path, "/v1/chat/completions");
//! # Ok(()) }
//! ```

mod providers;

pub use futures_util::StreamExt;
pub use kite_agent::{
    Agent, AgentError, AgentEvent, Budget, Conversation, Flow, Hooks, Run, StopReason, Tool,
    ToolContext, ToolDecision, ToolError, ToolOutput, tool,
};
pub use kite_core::*;
pub use kite_wire::{Api, Auth, Codec};
pub use providers::{
    Anthropic, Endpoint, HttpModel, KnownModel, OpenAiApi, OpenAiCompatible, OpenAiResponses,
    PollPolicy, Provider, Transcriber, TranscriptEvents, context_window, is_deep_research,
    model_from_env,
};

/// The tool-calling loop in full: tools, hooks, runs, built-in tools.
pub use kite_agent as agent;

/// The crates a program's own types need for tools and typed data, as kite uses them: a
/// crate of one's own can derive with them without naming them in its `Cargo.toml`
/// (`#[derive(kite::serde::Deserialize, kite::schemars::JsonSchema)]`, with
/// `#[serde(crate = "kite::serde")]` and `#[schemars(crate = "kite::schemars")]`).
pub use schemars;
pub use serde;
pub use serde_json;

/// The embedded local model (feature `local`).
#[cfg(feature = "local")]
pub use kite_local as local;

/// MCP servers as tool sources (feature `mcp`).
#[cfg(feature = "mcp")]
pub use kite_mcp as mcp;

/// OpenTelemetry export of kite's GenAI spans and metrics (feature `otel`); the spans
/// themselves are [`trace`]'s, through `tracing`.
#[cfg(feature = "otel")]
pub use kite_otel as otel;

/// What model calls cost (feature `prices`).
#[cfg(feature = "prices")]
pub use kite_prices as prices;

/// The OpenAI-compatible gateway (feature `serve`).
#[cfg(feature = "serve")]
pub use kite_serve as serve;

/// Agent Skills: folders of instructions and scripts, disclosed as needed (feature `skills`).
#[cfg(feature = "skills")]
pub use kite_skills as skills;

/// Stored conversations and portable conversation state (feature `store`).
#[cfg(feature = "store")]
pub use kite_store as store;

/// Codecs, for callers that bring their own HTTP client.
pub use kite_wire as wire;

/// Transports: the reqwest transport, retries, and the [`Transport`](http::Transport) trait.
pub use kite_http as http;

/// Cassettes: record real traffic once, replay it offline in tests, fail on drift.
pub use kite_http::cassette;
