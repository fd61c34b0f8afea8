//! Running a turn's tool calls: each planned call run (or skipped) with a snapshot of the
//! context, as many at once as the agent allows, then what became of them applied to the
//! run in call order.

use crate::AgentError;
use crate::agent::Agent;
use crate::hooks::Flow;
use crate::run::Run;
use crate::steps::{CallStatus, Decision, PlannedCall, StopReason, ToolRecord};
use crate::stream::{AgentEvent, Sink};
use crate::tool::{ContextPatch, ToolContext, ToolError};
use futures_util::{FutureExt, StreamExt};
use kite_core::{ToolResult, trace};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// What one tool call produced, before hooks see it.
struct Executed<C> {
    result: ToolResult,
    patch: Option<ContextPatch<C>>,
    status: CallStatus,
    duration: std::time::Duration,
}

impl<C: Clone + Send + Sync + 'static> Agent<C> {
    /// Runs the planned calls, then applies what became of them to the run.
    pub(crate) async fn run_tools(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<(), AgentError> {
        let planned: Vec<PlannedCall> = run.planned().to_vec();
        let executed = self.execute_all(run, &planned, cancel, sink).await?;
        self.apply(run, &planned, executed, sink)
    }

    /// Runs (or skips) `planned`, as many at once as the agent allows, each with a snapshot
    /// of the context. Stops early when `cancel` fires: calls not finished by then are
    /// missing from the result.
    async fn execute_all(
        &self,
        run: &Run<C>,
        planned: &[PlannedCall],
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<Vec<Executed<C>>, AgentError> {
        let snapshot = Arc::new(run.context.clone());
        if let Some(sink) = sink {
            for p in planned.iter().filter(|p| p.decision == Decision::Run) {
                sink.push(AgentEvent::ToolStarted {
                    call: p.call.clone(),
                });
            }
        }
        let calls = cancel.child_token();
        let mut executing = futures_util::stream::iter(planned.iter().cloned())
            .map(|p| self.execute(p, snapshot.clone(), calls.clone()))
            .buffered(self.concurrency);
        let mut executed = Vec::with_capacity(planned.len());
        while executed.len() < planned.len() {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                next = executing.next() => next,
            };
            match next {
                Some(e) => executed.push(e?),
                None => break,
            }
        }
        // Tell tools (and work they handed to other tasks) first, then drop what still runs.
        calls.cancel();
        Ok(executed)
    }

    /// Applies what became of the planned calls, in call order: the redaction of secrets,
    /// result hooks, context patches, the audit and the stream, then the records
    /// into the run. A call missing
    /// from `executed` was cancelled.
    fn apply(
        &self,
        run: &mut Run<C>,
        planned: &[PlannedCall],
        mut executed: Vec<Executed<C>>,
        sink: Option<&Sink<C>>,
    ) -> Result<(), AgentError> {
        let turn = run.turns();
        let finished = executed.len();
        let mut records = Vec::with_capacity(planned.len());
        let mut stop = None;
        for (i, p) in planned.iter().enumerate() {
            let record = match executed.get_mut(i) {
                Some(e) => {
                    if let Some(secrets) = &self.secrets {
                        secrets.redact_result(&mut e.result);
                    }
                    for h in &self.hooks {
                        if stop.is_some() {
                            break;
                        }
                        if let Flow::Stop(message) =
                            h.on_tool_result(&mut run.context, &p.call, &mut e.result)
                        {
                            stop = Some(message);
                        }
                    }
                    if let Some(patch) = e.patch.take() {
                        patch(&mut run.context);
                    }
                    ToolRecord {
                        turn,
                        call: p.call.clone(),
                        result: e.result.clone(),
                        status: e.status.clone(),
                        duration: e.duration,
                    }
                }
                None => cancelled_record(turn, &p.call),
            };
            if let Some(audit) = &self.audit {
                audit.record(&record);
            }
            if let Some(sink) = sink {
                sink.push(AgentEvent::ToolFinished {
                    record: record.clone(),
                });
            }
            records.push(record);
        }
        run.tools_ran(records)?;
        if let Some(message) = stop {
            run.stop(StopReason::Hook { message });
        } else if finished < planned.len() {
            run.stop(StopReason::Cancelled);
        }
        Ok(())
    }

    /// Runs one planned call in an `execute_tool` span. Only infrastructure failures are
    /// errors; everything the model should hear about becomes an error result.
    async fn execute(
        &self,
        planned: PlannedCall,
        context: Arc<C>,
        cancel: CancellationToken,
    ) -> Result<Executed<C>, AgentError> {
        let call = &planned.call;
        let span = trace::tool_span(&call.name, &call.id, &call.arguments);
        let pending = trace::Pending::new(span.clone());
        let executed = self
            .execute_untraced(planned, context, cancel)
            .instrument(span.clone())
            .await;
        match &executed {
            Ok(e) => {
                // Refused arguments and tool errors failed; a declined call did not run.
                let kind = match e.status {
                    CallStatus::Skipped => None,
                    CallStatus::Refused => Some("refused"),
                    _ if e.result.is_error => Some("tool_error"),
                    _ => None,
                };
                trace::tool_result(&span, Some(&e.result), kind);
            }
            Err(_) => trace::tool_result(&span, None, Some("fatal")),
        }
        pending.finish();
        executed
    }

    async fn execute_untraced(
        &self,
        planned: PlannedCall,
        context: Arc<C>,
        cancel: CancellationToken,
    ) -> Result<Executed<C>, AgentError> {
        let call = &planned.call;
        let started = Instant::now();
        let done = |result: ToolResult, patch, status| Executed {
            result,
            patch,
            status,
            duration: started.elapsed(),
        };
        let reason = match &planned.decision {
            Decision::Run => None,
            Decision::Skip(reason) => Some(reason.clone()),
            Decision::Undecided | Decision::Deferred => Some("not approved".to_owned()),
        };
        if let Some(reason) = reason {
            let result = named(
                ToolResult::error(&call.id, format!("not run: {reason}")),
                call,
            );
            return Ok(done(result, None, CallStatus::Skipped));
        }
        let prepared = match self.tools.prepare(call) {
            Ok(p) => p,
            Err(message) => {
                let result = named(ToolResult::error(&call.id, message), call);
                return Ok(done(result, None, CallStatus::Refused));
            }
        };
        let ctx = ToolContext {
            context,
            call_id: call.id.clone(),
            cancel,
        };
        let outcome = AssertUnwindSafe(prepared.tool.call(prepared.args, ctx))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(ToolError::fatal(format!("the tool panicked: {what}")))
            });
        match outcome {
            Ok(out) => {
                let result = ToolResult {
                    call_id: call.id.clone(),
                    name: Some(call.name.clone()),
                    content: out.content,
                    is_error: out.is_error,
                };
                Ok(done(result, out.patch, CallStatus::Ran))
            }
            Err(ToolError::Model(message)) => {
                let result = named(ToolResult::error(&call.id, message), call);
                Ok(done(result, None, CallStatus::Ran))
            }
            Err(ToolError::Fatal(source)) => Err(AgentError::Tool {
                tool: call.name.clone(),
                call_id: call.id.clone(),
                source,
            }),
        }
    }
}

fn named(mut result: ToolResult, call: &kite_core::ToolCall) -> ToolResult {
    result.name = Some(call.name.clone());
    result
}

pub(crate) fn cancelled_record(turn: u32, call: &kite_core::ToolCall) -> ToolRecord {
    ToolRecord {
        turn,
        call: call.clone(),
        result: named(
            ToolResult::error(&call.id, "not run: the run was cancelled"),
            call,
        ),
        status: CallStatus::Skipped,
        duration: std::time::Duration::ZERO,
    }
}
