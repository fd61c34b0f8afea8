//! Hooks: observe and steer the loop.

use kite_core::{Event, Message, Request, ToolCall, ToolResult};

/// Whether the run goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the run.
    Continue,
    /// End the run cleanly; the reason is in its outcome.
    Stop(String),
}

/// What to do with a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolDecision {
    /// Run it (with the arguments as the hook left them).
    Run,
    /// Do not run it; the model is told why.
    Skip(String),
    /// Pause the run until a person approves or rejects the call (see
    /// [`Run::approve`](crate::Run::approve)).
    Defer,
}

/// Observes and steers a run. Every method has a default that lets the run go on, so a hook
/// implements only what it needs. Hooks get the run's context mutably: what they write,
/// later hooks and tools see.
///
/// Hooks are called in the order they were added; the first that stops, skips or defers
/// decides.
pub trait Hooks<C>: Send + Sync {
    /// Before each model call; may change the request.
    fn before_model(&self, _ctx: &mut C, _request: &mut Request) -> Flow {
        Flow::Continue
    }

    /// On each event of the model's stream.
    fn on_event(&self, _ctx: &mut C, _event: &Event) -> Flow {
        Flow::Continue
    }

    /// On each assistant message, before its tool calls run. A stop keeps the message in
    /// the history and runs none of its calls.
    fn on_assistant_message(&self, _ctx: &mut C, _message: &Message) -> Flow {
        Flow::Continue
    }

    /// Before each tool call; may rewrite `call.arguments`.
    fn before_tool(&self, _ctx: &mut C, _call: &mut ToolCall) -> ToolDecision {
        ToolDecision::Run
    }

    /// On each tool result, in call order; may rewrite it.
    fn on_tool_result(&self, _ctx: &mut C, _call: &ToolCall, _result: &mut ToolResult) -> Flow {
        Flow::Continue
    }
}
