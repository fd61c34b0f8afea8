//! The loop as a pure, serializable state machine.
//!
//! A [`Run`] holds everything the loop knows: the history, where the loop stands, the tool
//! calls waiting for a decision, usage, every tool call made, and the caller's context. It
//! does no I/O; [`Agent`](crate::Agent) drives it, and so can any program. Because it is
//! plain data, a run paused for approval can be stored and resumed by another process.
//!
//! The protocol: ask [`Run::next`] what to do, do it, and report back.
//!
//! - [`Next::CallModel`]: send [`Run::messages`] to the model; give its answer to
//!   [`Run::model_answered`].
//! - [`Next::DecideTools`]: settle each [`Decision::Undecided`] call of [`Run::planned`] with
//!   [`Run::decide`] (run it, skip it with a reason, or defer it to a person).
//! - [`Next::RunTools`]: run the calls decided [`Decision::Run`], and report one
//!   [`ToolRecord`] per planned call, in order, to [`Run::tools_ran`] (a skipped call's record
//!   carries the reason as its result).
//! - [`Next::Stopped`]: done, or waiting: approve or reject deferred calls with
//!   [`Run::approve`] / [`Run::reject`], then ask again.
//!
//! ```
//! use kite_agent::{CallStatus, Decision, Next, Run, ToolRecord};
//! use kite_core::{Message, Model, Request, ToolResult};
//! # use kite_testkit::ScriptedModel;
//! # use serde_json::json;
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! # let model = ScriptedModel::new()
//! #     .tool_calls(&[("c1", "add", json!({"a": 2, "b": 3})), ("c2", "rm_rf", json!({}))])
//! #     .text("2 + 3 = 5.");
//!
//! let mut run = Run::new((), vec![Message::user("What is 2 + 3?")], 5);
//! loop {
//!     match run.next() {
//!         Next::CallModel => {
//!             let mut request = Request::new("gpt-4o-mini");
//!             request.messages = run.messages().to_vec();
//!             let answer = model.complete(&request).await.unwrap();
//!             run.model_answered(answer);
//!         }
//!         Next::DecideTools => {
//!             let undecided: Vec<(String, String)> = run
//!                 .planned()
//!                 .iter()
//!                 .map(|p| (p.call.id.clone(), p.call.name.clone()))
//!                 .collect();
//!             for (id, name) in undecided {
//!                 let decision = match name.as_str() {
//!                     "add" => Decision::Run,
//!                     other => Decision::Skip(format!("{other} is not allowed here")),
//!                 };
//!                 run.decide(&id, decision);
//!             }
//!         }
//!         Next::RunTools(planned) => {
//!             let records = planned
//!                 .iter()
//!                 .map(|p| {
//!                     let (result, status) = match &p.decision {
//!                         Decision::Run => (ToolResult::text(&p.call.id, "5"), CallStatus::Ran),
//!                         Decision::Skip(why) => (
//!                             ToolResult::error(&p.call.id, format!("not run: {why}")),
//!                             CallStatus::Skipped,
//!                         ),
//!                         _ => unreachable!("every call is decided"),
//!                     };
//!                     ToolRecord::new(run.turns(), p.call.clone(), result, status)
//!                 })
//!                 .collect();
//!             run.tools_ran(records).unwrap();
//!         }
//!         Next::Stopped(_) => break,
//!     }
//! }
//! assert_eq!(run.text(), "2 + 3 = 5.");
//! assert_eq!(run.tool_calls()[1].status, CallStatus::Skipped);
//! # });
//! ```

use crate::steps::{Decision, Next, PlannedCall, StepError, StopReason, ToolRecord};
use kite_core::{Message, Response, Role, Usage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

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
    last_call: Usage,
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
            last_call: Usage::default(),
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
        self.last_call = response.usage;
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

    /// Decides what to do with planned call `call_id`, while it is undecided or deferred.
    /// False when no such call waits for a decision.
    pub fn decide(&mut self, call_id: &str, decision: Decision) -> bool {
        match self.planned_mut().iter_mut().find(|c| {
            c.call.id == call_id && matches!(c.decision, Decision::Undecided | Decision::Deferred)
        }) {
            Some(c) => {
                c.decision = decision;
                true
            }
            None => false,
        }
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
        let deferred = self
            .planned()
            .iter()
            .any(|c| c.call.id == call_id && c.decision == Decision::Deferred);
        deferred && self.decide(call_id, decision)
    }

    /// Records what became of the planned calls, one record per call in call order, and
    /// moves on. Records that do not match the planned calls are refused, and the run is
    /// left as it was.
    pub fn tools_ran(&mut self, records: Vec<ToolRecord>) -> Result<(), StepError> {
        let planned = self.planned();
        if planned.is_empty() {
            return Err(StepError("no tool calls are planned".into()));
        }
        if planned
            .iter()
            .any(|p| !matches!(p.decision, Decision::Run | Decision::Skip(_)))
        {
            return Err(StepError(
                "a planned call is not decided yet (undecided or waiting for approval)".into(),
            ));
        }
        let matches = planned.len() == records.len()
            && planned
                .iter()
                .zip(&records)
                .all(|(p, r)| p.call.id == r.call.id && r.result.call_id == r.call.id);
        if !matches {
            return Err(StepError(
                "the records do not match the planned calls one for one, in order".into(),
            ));
        }
        let parts = records
            .iter()
            .map(|r| kite_core::Part::ToolResult(r.result.clone()))
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
        Ok(())
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

    /// What the last model call used: its input is how large the conversation had grown,
    /// which [`usage`](Self::usage), summed over the calls, does not say.
    pub fn last_call_usage(&self) -> Usage {
        self.last_call
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
