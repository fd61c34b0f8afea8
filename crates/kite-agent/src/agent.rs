//! The driver: one async loop that runs a [`Run`] against a model, tools and hooks.

use crate::AgentError;
use crate::audit::AuditSink;
use crate::budget::{Budget, Pricer};
use crate::calls::cancelled_record;
use crate::hooks::{Flow, Hooks, ToolDecision};
use crate::run::Run;
use crate::steps::{Decision, Next, StopReason, ToolRecord};
use crate::stream::{AgentEvent, AgentStream, Sink};
use crate::tool::Tool;
use crate::toolkit::Toolkit;
use crate::toolset::ToolSet;
use futures_util::StreamExt;
use kite_core::trace;
use kite_core::{Message, Model, Request, ResponseBuilder, ToolChoice};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// The tool-calling loop for one model: tools, hooks, limits.
///
/// Clones of an agent share its [`ToolSet`]: a tool added to one (by [`tool`](Self::tool)
/// or through [`tools`](Self::tools)) is offered by all of them, which is what lets
/// [`Hub::bind`](https://docs.rs/kite-mcp) keep every clone's tools in step. To give a clone
/// tools of its own, hand it a copy: `agent.clone().with_tools(agent.tools().fork())`.
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
    pub(crate) tools: ToolSet<C>,
    pub(crate) hooks: Vec<Arc<dyn Hooks<C>>>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    max_turns: u32,
    pub(crate) concurrency: usize,
    reset_tool_choice: bool,
    budget: Budget,
    pricer: Option<Pricer>,
    /// Hidden in every tool result before the model, the stream or the run sees it.
    pub(crate) secrets: Option<kite_core::redact::Secrets>,
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
            budget: self.budget,
            pricer: self.pricer.clone(),
            secrets: self.secrets.clone(),
        }
    }
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
            budget: Budget::default(),
            pricer: None,
            secrets: None,
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

    /// Stops a run before a model call that would take it past `budget` (see [`Budget`]).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Prices each model call the provider did not price (its [`Usage::cost`](kite_core::Usage)),
    /// so that runs, traces and budgets know what they cost.
    pub fn pricer(mut self, pricer: Pricer) -> Self {
        self.pricer = Some(pricer);
        self
    }

    /// Adds a tool to the agent's tool set, which its clones share (see [`Agent`]).
    pub fn tool(self, tool: impl Tool<C>) -> Self {
        self.tools.add(tool);
        self
    }

    /// Adds a toolkit's tools to the tool set and its instructions to the system prompt
    /// (after what [`system`](Self::system) set before; a later `system` replaces both).
    pub fn toolkit(mut self, kit: &impl Toolkit<C>) -> Self {
        for tool in kit.tools() {
            self.tools.add_arc(tool);
        }
        if let Some(text) = kit.instructions() {
            self.template.system = Some(match self.template.system.take() {
                Some(system) if !system.is_empty() => format!("{system}\n\n{text}"),
                _ => text,
            });
        }
        self
    }

    /// The tool set, to add, remove or filter tools while the agent is in use.
    pub fn tools(&self) -> &ToolSet<C> {
        &self.tools
    }

    /// Uses `tools`, shared with whoever else holds it ([`ToolSet::fork`] makes a copy
    /// that is not).
    pub fn with_tools(mut self, tools: ToolSet<C>) -> Self {
        self.tools = tools;
        self
    }

    /// Adds a hook; hooks are asked in the order they were added.
    pub fn hook(mut self, hook: impl Hooks<C> + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Hides every one of `secrets` (as the list is when each result comes) in what tools
    /// give back, before hooks, the model, the stream or the stored run see it:
    /// a tool that reads a file holding a key, or a server that echoes its own token,
    /// tells the model `[redacted]`.
    pub fn redact(mut self, secrets: kite_core::redact::Secrets) -> Self {
        self.secrets = Some(secrets);
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
        AgentStream::new(move |sink, cancel, failed| async move {
            match agent.drive_inner(&mut run, &cancel, Some(&sink)).await {
                Ok(_) => Ok(run),
                Err(e) => {
                    *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(run);
                    Err(e)
                }
            }
        })
    }

    /// Drives `run` inside an `invoke_agent` span, which ends with the run's usage (and the
    /// error, when there is one).
    async fn drive_inner(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<StopReason, AgentError> {
        let origin = self.model.origin();
        let span = trace::agent_span(None, &origin.provider, &self.template.model);
        let pending = trace::Pending::new(span.clone());
        let before = run.usage();
        let result = self
            .drive_steps(run, cancel, sink)
            .instrument(span.clone())
            .await;
        // What this drive used (a resumed run has used some before).
        let used = run.usage();
        trace::record_usage(
            &span,
            &kite_core::Usage {
                input_tokens: used.input_tokens.saturating_sub(before.input_tokens),
                output_tokens: used.output_tokens.saturating_sub(before.output_tokens),
                total_tokens: used.total_tokens.saturating_sub(before.total_tokens),
                cached_input_tokens: used
                    .cached_input_tokens
                    .saturating_sub(before.cached_input_tokens),
                cache_write_tokens: used
                    .cache_write_tokens
                    .saturating_sub(before.cache_write_tokens),
                reasoning_tokens: used
                    .reasoning_tokens
                    .saturating_sub(before.reasoning_tokens),
                cost: used.cost.map(|c| c - before.cost.unwrap_or(0.0)),
            },
        );
        if let Err(e) = &result {
            let kind = match e {
                AgentError::Model(e) => trace::error_type(e),
                AgentError::Tool { .. } => "tool".to_owned(),
                _ => "_OTHER".to_owned(),
            };
            trace::fail(&span, &kind, "the run failed");
        }
        pending.finish();
        result
    }

    async fn drive_steps(
        &self,
        run: &mut Run<C>,
        cancel: &CancellationToken,
        sink: Option<&Sink<C>>,
    ) -> Result<StopReason, AgentError> {
        loop {
            if cancel.is_cancelled() && run.stop_reason().is_none() {
                self.cancel(run)?;
            }
            match run.next() {
                Next::Stopped(reason) => return Ok(reason),
                Next::CallModel => match self.budget.check(&run.usage(), &run.last_call_usage()) {
                    Some(reason) => run.stop(reason),
                    None => self.call_model(run, cancel, sink).await?,
                },
                Next::DecideTools => self.decide_tools(run),
                Next::RunTools(_) => self.run_tools(run, cancel, sink).await?,
            }
        }
    }

    /// Cancels between steps: calls already planned get a result saying so, so the history
    /// stays one a provider accepts.
    fn cancel(&self, run: &mut Run<C>) -> Result<(), AgentError> {
        let turn = run.turns();
        let records: Vec<ToolRecord> = run
            .planned()
            .iter()
            .map(|p| cancelled_record(turn, &p.call))
            .collect();
        for r in &records {
            run.decide(&r.call.id, Decision::Skip("the run was cancelled".into()));
        }
        if !records.is_empty() {
            run.tools_ran(records)?;
        }
        run.stop(StopReason::Cancelled);
        Ok(())
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
        let mut response = builder.finish()?;
        if let (Some(pricer), None) = (&self.pricer, response.usage.cost) {
            // The answering model's name (often dated) first, then the one asked for.
            let provider = self.model.origin().provider;
            let usage = response.usage;
            response.usage.cost = response
                .model
                .as_deref()
                .and_then(|m| pricer(&provider, m, &usage))
                .or_else(|| pricer(&provider, &self.template.model, &usage));
        }
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
}
