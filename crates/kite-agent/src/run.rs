//! The loop as a pure, serializable state machine.
//!
//! A [`Run`] holds everything the loop knows: the history, where the loop stands, the tool
//! calls waiting for a decision, usage, every tool call made, and the caller's context. It
//! does no I/O; [`Agent`](crate::Agent) drives it. Because it is plain data, a run paused for
//! approval can be stored and resumed by another process.

use kite_core::{FinishReason, Message, Response, Role, ToolCall, ToolResult, Usage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One run of the tool-calling loop, finished or not.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "C: Serialize", deserialize = "C: DeserializeOwned"))]
pub struct Run<C = ()> {
    /// The caller's context, as hooks and tools left it.
    pub context: C,
    messages: Vec<Message>,
    /// Where the messages this run added begin.
    first_new: usize,
    turns: u32,
    max_turns: u32,
    usage: Usage,
    records: Vec<ToolRecord>,
    phase: Phase,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    /// The model is to be called.
    Model,
    /// The last assistant message asked for these calls.
    Tools {
        calls: Vec<PlannedCall>,
    },
    Done {
        stop: StopReason,
    },
}

/// A tool call the model asked for, and what is to be done with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The call, with its arguments as hooks left them.
    pub call: ToolCall,
    pub decision: Decision,
}

/// What is to be done with a tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum Decision {
    /// Hooks have not been asked yet.
    Undecided,
    Run,
    /// Not run; the model is told the reason.
    Skip(String),
    /// Waiting for a person.
    Deferred,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without asking for tools.
    Finished { finish_reason: FinishReason },
    /// The model was called `max_turns` times and still asked for tools.
    TurnLimit { max_turns: u32 },
    /// A hook stopped the run.
    Hook { message: String },
    /// Tool calls wait for a person: approve or reject them, then drive the run again.
    AwaitingApproval { call_ids: Vec<String> },
    /// The caller cancelled the run.
    Cancelled,
}

/// A tool call made during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// The model call (1-based) whose answer asked for it.
    pub turn: u32,
    pub call: ToolCall,
    pub result: ToolResult,
    /// Whether the tool ran, or why not.
    pub status: CallStatus,
    pub duration: Duration,
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
    CallModel,
    /// Ask the hooks about calls still undecided.
    DecideTools,
    /// Run (or skip) the planned calls.
    RunTools(&'a [PlannedCall]),
    Stopped(StopReason),
}

impl<C> Run<C> {
    /// A run that continues `history` (which ends with the new user message).
    pub fn new(context: C, history: Vec<Message>, max_turns: u32) -> Self {
        Self {
            context,
            first_new: history.len(),
            messages: history,
            turns: 0,
            max_turns,
            usage: Usage::default(),
            records: Vec::new(),
            phase: Phase::Model,
        }
    }

    /// What to do next.
    pub fn next(&self) -> Next<'_> {
        match &self.phase {
            Phase::Model => Next::CallModel,
            Phase::Done { stop } => Next::Stopped(stop.clone()),
            Phase::Tools { calls } => {
                if calls.iter().any(|c| c.decision == Decision::Undecided) {
                    Next::DecideTools
                } else if let Some(stop) = self.awaiting() {
                    Next::Stopped(stop)
                } else {
                    Next::RunTools(calls)
                }
            }
        }
    }

    fn awaiting(&self) -> Option<StopReason> {
        let Phase::Tools { calls } = &self.phase else {
            return None;
        };
        let call_ids: Vec<String> = calls
            .iter()
            .filter(|c| c.decision == Decision::Deferred)
            .map(|c| c.call.id.clone())
            .collect();
        (!call_ids.is_empty()).then_some(StopReason::AwaitingApproval { call_ids })
    }

    /// Records the model's answer.
    pub fn model_answered(&mut self, response: Response) {
        self.turns += 1;
        self.usage += response.usage;
        let calls: Vec<PlannedCall> = response
            .message
            .tool_calls()
            .map(|c| PlannedCall {
                call: c.clone(),
                decision: Decision::Undecided,
            })
            .collect();
        if !response.message.parts.is_empty() {
            self.messages.push(response.message);
        }
        self.phase = if calls.is_empty() {
            Phase::Done {
                stop: StopReason::Finished {
                    finish_reason: response.finish_reason,
                },
            }
        } else {
            Phase::Tools { calls }
        };
    }

    /// The calls waiting for a decision or to be run.
    pub fn planned(&self) -> &[PlannedCall] {
        match &self.phase {
            Phase::Tools { calls } => calls,
            _ => &[],
        }
    }

    fn planned_mut(&mut self) -> &mut [PlannedCall] {
        self.context_and_planned().1
    }

    /// The context and the planned calls, both mutable, for the driver asking hooks.
    pub(crate) fn context_and_planned(&mut self) -> (&mut C, &mut [PlannedCall]) {
        let calls: &mut [PlannedCall] = match &mut self.phase {
            Phase::Tools { calls } => calls,
            _ => &mut [],
        };
        (&mut self.context, calls)
    }

    /// Approves a deferred call. False when no deferred call has that id.
    pub fn approve(&mut self, call_id: &str) -> bool {
        self.settle(call_id, Decision::Run)
    }

    /// Rejects a deferred call; the model is told `reason`. False when no deferred call has
    /// that id.
    pub fn reject(&mut self, call_id: &str, reason: impl Into<String>) -> bool {
        self.settle(call_id, Decision::Skip(reason.into()))
    }

    fn settle(&mut self, call_id: &str, decision: Decision) -> bool {
        match self
            .planned_mut()
            .iter_mut()
            .find(|c| c.call.id == call_id && c.decision == Decision::Deferred)
        {
            Some(c) => {
                c.decision = decision;
                true
            }
            None => false,
        }
    }

    /// Records the results of the planned calls (in call order) and moves on.
    pub fn tools_ran(&mut self, results: Vec<ToolResult>, records: Vec<ToolRecord>) {
        let parts = results
            .into_iter()
            .map(kite_core::Part::ToolResult)
            .collect();
        self.messages.push(Message::new(Role::Tool, parts));
        self.records.extend(records);
        self.phase = if self.turns >= self.max_turns {
            Phase::Done {
                stop: StopReason::TurnLimit {
                    max_turns: self.max_turns,
                },
            }
        } else {
            Phase::Model
        };
    }

    /// Ends the run.
    pub fn stop(&mut self, reason: StopReason) {
        self.phase = Phase::Done { stop: reason };
    }

    /// Why the run stopped, or `None` while it can go on.
    pub fn stop_reason(&self) -> Option<StopReason> {
        match self.next() {
            Next::Stopped(stop) => Some(stop),
            _ => None,
        }
    }

    /// The answer: the text of the last assistant message.
    pub fn text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default()
    }

    /// The whole history, ready to store and send again.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages this run added.
    pub fn new_messages(&self) -> &[Message] {
        &self.messages[self.first_new.min(self.messages.len())..]
    }

    /// Lends the history out (see [`restore_messages`](Self::restore_messages)).
    pub(crate) fn take_messages(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// Takes lent history back.
    pub(crate) fn restore_messages(&mut self, messages: Vec<Message>) {
        self.messages = messages;
    }

    /// The history, given up.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// Every tool call made, in order, with its result and timing.
    pub fn tool_calls(&self) -> &[ToolRecord] {
        &self.records
    }

    /// Usage summed over all model calls.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Model calls made.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Lets the run call the model `more` more times (after a turn limit, say).
    pub fn extend_turns(&mut self, more: u32) {
        self.max_turns = self.turns.saturating_add(more);
        if matches!(
            self.phase,
            Phase::Done {
                stop: StopReason::TurnLimit { .. }
            }
        ) {
            self.phase = Phase::Model;
        }
    }
}
