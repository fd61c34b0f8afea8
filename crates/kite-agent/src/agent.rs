//! The driver: one async loop that runs a [`Run`] against a model, tools and hooks.

use crate::AgentError;
use crate::audit::AuditSink;
use crate::hooks::{Flow, Hooks, ToolDecision};
use crate::run::{CallStatus, Decision, Next, PlannedCall, Run, StopReason, ToolRecord};
use crate::stream::{AgentEvent, AgentStream, Sink};
use crate::tool::{ContextPatch, Tool, ToolContext, ToolError};
use crate::toolset::ToolSet;
use futures_util::{FutureExt, StreamExt};
use kite_core::{Message, Model, Request, ResponseBuilder, ToolChoice, ToolResult};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The tool-calling loop for one model: tools, hooks, limits.
///
/// ```no_run
/// # async fn demo(model: impl kite_core::Model + 'static) -> Result<(), kite_agent::AgentError> {
/// use kite_agent::Agent;
/// let agent = Agent::new(model, "gpt-4o-mini").system("Be brief.");
/// let run = agent.ask("What is 2 + 2?").await?;
/// println!("{}", run.text());
/// # Ok(()) }
/// ```
pub struct Agent<C = ()> {
    model: Arc<dyn Model>,
    template: Request,
    tools: ToolSet<C>,
    hooks: Vec<Arc<dyn Hooks<C>>>,
    audit: Option<Arc<dyn AuditSink>>,
    max_turns: u32,
    concurrency: usize,
    reset_tool_choice: bool,
}

impl<C> Clone for Agent<C> {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            template: self.template.clone(),
            tools: self.tools.clone(),
            hooks: self.hooks.clone(),
            audit: self.audit.clone(),
            max_turns: self.max_turns,
            concurrency: self.concurrency,
            reset_tool_choice: self.reset_tool_choice,
        }
    }
}

/// What one tool call produced, before hooks see it.
struct Executed<C> {
    result: ToolResult,
    patch: Option<ContextPatch<C>>,
    status: CallStatus,
    duration: std::time::Duration,
}

impl Agent<()> {
    /// An agent asking `model_name` of `model`, with no context; at most 10 model calls per
    /// run, 8 tool calls at once.
    pub fn new(model: impl Model + 'static, model_name: impl Into<String>) -> Self {
        Self::with_context(model, model_name)
    }
}

impl<C: Clone + Send + Sync + 'static> Agent<C> {
    /// An agent whose runs carry a context of type `C`, shared by hooks and tools.
    pub fn with_context(model: impl Model + 'static, model_name: impl Into<String>) -> Self {
        Self::shared(Arc::new(model), model_name)
    }

    /// An agent over a shared model.
    pub fn shared(model: Arc<dyn Model>, model_name: impl Into<String>) -> Self {
        Self {
            model,
            template: Request::new(model_name),
            tools: ToolSet::new(),
            hooks: Vec::new(),
            audit: None,
            max_turns: 10,
            concurrency: 8,
            reset_tool_choice: true,
        }
    }

    /// System instructions sent with every model call and never stored in the history.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.template.system = Some(system.into());
        self
    }

    /// Sets request options (temperature, max tokens, tool choice, provider extras) for
    /// every model call.
    pub fn configure(mut self, f: impl FnOnce(&mut Request)) -> Self {
        f(&mut self.template);
        self
    }

    /// Adds a tool.
    pub fn tool(self, tool: impl Tool<C>) -> Self {
        self.tools.add(tool);
        self
    }

    /// The tool set, to add, remove or filter tools while the agent is in use.
    pub fn tools(&self) -> &ToolSet<C> {
        &self.tools
    }

    /// Uses `tools` (shared with whoever else holds it).
    pub fn with_tools(mut self, tools: ToolSet<C>) -> Self {
        self.tools = tools;
        self
    }

    /// Adds a hook; hooks are asked in the order they were added.
    pub fn hook(mut self, hook: impl Hooks<C> + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Sends a record of every tool call to `sink`.
    pub fn audit(mut self, sink: impl AuditSink + 'static) -> Self {
        self.audit = Some(Arc::new(sink));
        self
    }

    /// Model calls allowed per run (default 10).
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns.max(1);
        self
    }

    /// Keeps a `tool_choice` that forces a call (required, or a named tool) on every model
    /// call. By default it applies until tools have run once, then the model may answer:
    /// forced on every call, a run could only end at its turn limit.
    pub fn keep_tool_choice(mut self) -> Self {
        self.reset_tool_choice = false;
        self
    }

    /// Tool calls of one turn run at once, at most (default 8).
    pub fn concurrency(mut self, calls: usize) -> Self {
        self.concurrency = calls.max(1);
        self
    }

    /// A run of `history` (ending with the new user message), not yet started.
    pub fn start(&self, context: C, history: Vec<Message>) -> Run<C> {
        Run::new(context, history, self.max_turns)
    }

    /// Runs `history` to the end; the returned run holds the answer, the history, every tool
    /// call and the usage.
    pub async fn run(&self, context: C, history: Vec<Message>) -> Result<Run<C>, AgentError> {
        let mut run = self.start(context, history);
        self.drive(&mut run).await?;
        Ok(run)
    }

    /// Runs one user message with a default context.
    pub async fn ask(&self, prompt: impl Into<String>) -> Result<Run<C>, AgentError>
    where
        C: Default,
    {
        self.run(C::default(), vec![Message::user(prompt)]).await
    }

    /// Drives `run` until it stops: finished, at its turn limit, stopped by a hook, or
    /// waiting for approval. On error the run is left as it was before the failing step.
    pub async fn drive(&self, run: &mut Run<C>) -> Result<StopReason, AgentError> {
        self.drive_inner(run, &CancellationToken::new(), None).await
    }

    /// Like [`drive`](Self::drive), stopping with [`StopReason::Cancelled`] when `cancel` fires.
    pub async fn drive_cancellable(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
    ) -> Result<StopReason, AgentError> {
        self.drive_inner(run, cancel, None).await
    }

    /// Runs `history`, streaming model events and tool calls as they happen; the last item
    /// is [`AgentEvent::Done`] with the run.
    pub fn run_stream(&self, context: C, history: Vec<Message>) -> AgentStream<C> {
        self.resume_stream(self.start(context, history))
    }

    /// Streams the rest of a run (a new one, or one resumed after approval).
    pub fn resume_stream(&self, mut run: Run<C>) -> AgentStream<C> {
        let agent = self.clone();
        AgentStream::new(move |sink, cancel| async move {
            agent.drive_inner(&mut run, &cancel, Some(&sink)).await?;
            Ok(run)
        })
    }

    async fn drive_inner(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<StopReason, AgentError> {
        loop {
            if cancel.is_cancelled() && run.stop_reason().is_none() {
                self.cancel(run);
            }
            match run.next() {
                Next::Stopped(reason) => return Ok(reason),
                Next::CallModel => self.call_model(run, cancel, sink).await?,
                Next::DecideTools => self.decide_tools(run),
                Next::RunTools(_) => self.run_tools(run, cancel, sink).await?,
            }
        }
    }

    /// Cancels between steps: calls already planned get a result saying so, so the history
    /// stays one a provider accepts.
    fn cancel(&self, run: &mut Run<C>) {
        let turn = run.turns();
        let records: Vec<ToolRecord> = run
            .planned()
            .iter()
            .map(|p| cancelled_record(turn, &p.call))
            .collect();
        if !records.is_empty() {
            let results = records.iter().map(|r| r.result.clone()).collect();
            run.tools_ran(results, records);
        }
        run.stop(StopReason::Cancelled);
    }

    async fn call_model(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<(), AgentError> {
        let mut request = self.template.clone();
        request.tools = self.tools.specs();
        if self.reset_tool_choice
            && !run.tool_calls().is_empty()
            && matches!(
                request.tool_choice,
                Some(ToolChoice::Required | ToolChoice::Tool(_))
            )
        {
            request.tool_choice = Some(ToolChoice::Auto);
        }
        // Without hooks the history is lent to the request and taken back; a hook may edit
        // the request's messages for this call only, so then they are a copy.
        let lent = self.hooks.is_empty();
        if lent {
            request.messages = run.take_messages();
        } else {
            request.messages = run.messages().to_vec();
        }
        for h in &self.hooks {
            if let Flow::Stop(message) = h.before_model(&mut run.context, &mut request) {
                run.stop(StopReason::Hook { message });
                return Ok(());
            }
        }
        let mut stream = self.model.stream(&request);
        if lent {
            run.restore_messages(std::mem::take(&mut request.messages));
        }
        let mut builder = ResponseBuilder::new();
        loop {
            let item = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    run.stop(StopReason::Cancelled);
                    return Ok(());
                }
                item = stream.next() => item,
            };
            let Some(event) = item else { break };
            let event = event?;
            for h in &self.hooks {
                if let Flow::Stop(message) = h.on_event(&mut run.context, &event) {
                    run.stop(StopReason::Hook { message });
                    return Ok(());
                }
            }
            if let Some(sink) = sink {
                sink.push(AgentEvent::Model(event.clone()));
            }
            builder.push(event);
        }
        let response = builder.finish()?;
        let mut stop = None;
        for h in &self.hooks {
            if let Flow::Stop(message) = h.on_assistant_message(&mut run.context, &response.message)
            {
                stop = Some(message);
                break;
            }
        }
        run.model_answered(response);
        if let Some(message) = stop {
            run.stop(StopReason::Hook { message });
        }
        Ok(())
    }

    fn decide_tools(&self, run: &mut Run<C>) {
        let (context, planned) = run.context_and_planned();
        for p in planned
            .iter_mut()
            .filter(|p| p.decision == Decision::Undecided)
        {
            p.decision = Decision::Run;
            for h in &self.hooks {
                match h.before_tool(context, &mut p.call) {
                    ToolDecision::Run => continue,
                    ToolDecision::Skip(reason) => p.decision = Decision::Skip(reason),
                    ToolDecision::Defer => p.decision = Decision::Deferred,
                }
                break;
            }
        }
    }

    async fn run_tools(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<(), AgentError> {
        let planned: Vec<PlannedCall> = run.planned().to_vec();
        let snapshot = Arc::new(run.context.clone());
        let turn = run.turns();
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
        drop(executing);

        let mut results = Vec::with_capacity(planned.len());
        let mut records = Vec::with_capacity(planned.len());
        let mut stop = None;
        for (i, p) in planned.iter().enumerate() {
            let record = match executed.get_mut(i) {
                Some(e) => {
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
            results.push(record.result.clone());
            records.push(record);
        }
        run.tools_ran(results, records);
        if let Some(message) = stop {
            run.stop(StopReason::Hook { message });
        } else if executed.len() < planned.len() {
            run.stop(StopReason::Cancelled);
        }
        Ok(())
    }

    /// Runs one planned call. Only infrastructure failures are errors; everything the model
    /// should hear about becomes an error result.
    async fn execute(
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

fn cancelled_record(turn: u32, call: &kite_core::ToolCall) -> ToolRecord {
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
