//! kite's tool-calling loop.
//!
//! An [`Agent`] sends the history and its tools to a model, runs the tools the model asks
//! for, sends the results back, and repeats until the model answers, a turn limit is hit, a
//! hook stops the run, or a call waits for a person's approval.
//!
//! - [`Tool`]s, typed with [`tool`] (arguments are a Rust type; schema from `schemars`).
//! - [`Hooks`] observe and steer every step; tools and hooks share a context value.
//! - [`Run`] is the loop's state: plain data, serializable, resumable in another process.
//! - [`Agent::run`] buffers, [`Agent::run_stream`] streams: one driver serves both.
//! - [`Conversation`] keeps history between turns.
//! - [`builtin`] holds a few safe tools (time, arithmetic, reading files under a folder).
//!
//! A run against `kite_testkit::ScriptedModel`, which first asks for a call of the typed
//! tool `add`, then answers in text once it has the result:
//!
//! ```
//! use kite_agent::{Agent, CallStatus, ToolError, tool};
//! use kite_testkit::ScriptedModel;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kite_agent::AgentError> {
//! let model = ScriptedModel::new()
//!     .tool_calls(&[("call_1", "add", json!({"a": 2, "b": 3}))])
//!     .expect(|req| req.tools.iter().any(|t| t.name == "add"))
//!     .text("2 + 3 = 5");
//! let agent = Agent::new(model, "scripted").tool(tool("add", "Adds two integers", |args: Add, _ctx| async move {
//!     Ok::<_, ToolError>(args.a + args.b)
//! }));
//! let run = agent.ask("What is 2 + 3?").await?;
//! assert_eq!(run.tool_calls()[0].status, CallStatus::Ran);
//! assert_eq!(run.tool_calls()[0].result.text_content(), "5");
//! assert_eq!(run.text(), "2 + 3 = 5");
//! # Ok(()) }
//! ```

mod agent;
mod audit;
mod budget;
pub mod builtin;
mod calls;
mod conversation;
mod error;
mod hooks;
mod run;
mod steps;
mod stream;
mod tool;
mod toolkit;
mod toolset;

pub use agent::Agent;
pub use audit::AuditSink;
pub use budget::{Budget, Pricer};
pub use conversation::Conversation;
pub use error::AgentError;
pub use hooks::{Flow, Hooks, ToolDecision};
pub use run::Run;
pub use steps::{CallStatus, Decision, Next, PlannedCall, StepError, StopReason, ToolRecord};
pub use stream::{AgentEvent, AgentStream};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ContextPatch, IntoToolOutput, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, TypedTool,
    schema_of, tool,
};
pub use toolkit::Toolkit;
pub use toolset::ToolSet;
