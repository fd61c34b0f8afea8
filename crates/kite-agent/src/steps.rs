//! The words of the [`Run`](crate::Run) protocol: what to do next, what is decided about
//! each tool call, what became of it, and why a run stopped.

use kite_core::{FinishReason, ToolCall, ToolResult};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A tool call the model asked for, and what is to be done with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The call, with its arguments as hooks left them.
    pub call: ToolCall,
    /// What is to be done with it.
    pub decision: Decision,
}

/// What is to be done with a tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum Decision {
    /// Nobody has decided yet.
    Undecided,
    /// Run it.
    Run,
    /// Not run; the model is told the reason.
    Skip(String),
    /// Waiting for a person.
    Deferred,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without asking for tools.
    Finished {
        /// Why the model's last answer ended.
        finish_reason: FinishReason,
    },
    /// The model was called `max_turns` times and still asked for tools.
    TurnLimit {
        /// The run's limit on model calls.
        max_turns: u32,
    },
    /// A hook stopped the run.
    Hook {
        /// The reason the hook gave.
        message: String,
    },
    /// Tool calls wait for a person: approve or reject them, then drive the run again.
    AwaitingApproval {
        /// The provider's ids of the deferred calls, in call order.
        call_ids: Vec<String>,
    },
    /// The caller cancelled the run.
    Cancelled,
    /// One more model call would have taken the run past its [`Budget`](crate::Budget).
    BudgetExceeded {
        /// Input and output tokens spent.
        tokens: u64,
        /// Dollars spent, when known.
        cost: Option<f64>,
    },
}

impl StopReason {
    /// Its name: `finished`, `turn_limit`, `hook`, `awaiting_approval`, `cancelled` or
    /// `budget_exceeded`.
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::Finished { .. } => "finished",
            StopReason::TurnLimit { .. } => "turn_limit",
            StopReason::Hook { .. } => "hook",
            StopReason::AwaitingApproval { .. } => "awaiting_approval",
            StopReason::Cancelled => "cancelled",
            StopReason::BudgetExceeded { .. } => "budget_exceeded",
        }
    }
}

/// A tool call made during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// The model call (1-based) whose answer asked for it.
    pub turn: u32,
    /// The call, with the arguments it ran with.
    pub call: ToolCall,
    /// What the model is told.
    pub result: ToolResult,
    /// Whether the tool ran, or why not.
    pub status: CallStatus,
    /// How long it took.
    pub duration: Duration,
}

impl ToolRecord {
    /// The record of `call`, asked for by model call `turn`, with its `result`; no time
    /// measured.
    pub fn new(turn: u32, call: ToolCall, result: ToolResult, status: CallStatus) -> Self {
        Self {
            turn,
            call,
            result,
            status,
            duration: Duration::ZERO,
        }
    }
}

/// Whether a tool call ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran (its result may still be an error for the model).
    Ran,
    /// A hook or a person declined it.
    Skipped,
    /// No such tool, or arguments that were not JSON or did not fit the schema.
    Refused,
}

/// What the driver is to do next.
#[derive(Debug, PartialEq)]
pub enum Next<'a> {
    /// Send the history to the model and report its answer to
    /// [`Run::model_answered`](crate::Run::model_answered).
    CallModel,
    /// Settle the calls still undecided with [`Run::decide`](crate::Run::decide).
    DecideTools,
    /// Run (or skip) the planned calls and report them to
    /// [`Run::tools_ran`](crate::Run::tools_ran).
    RunTools(&'a [PlannedCall]),
    /// The run stopped (or waits for approval), and why.
    Stopped(StopReason),
}

/// A step reported to a [`Run`](crate::Run) that does not fit where it stands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the run cannot take this step: {0}")]
pub struct StepError(pub String);
