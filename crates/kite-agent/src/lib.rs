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
    ContextPatch, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, TypedTool, schema_of, tool,
};
pub use toolkit::Toolkit;
pub use toolset::ToolSet;
