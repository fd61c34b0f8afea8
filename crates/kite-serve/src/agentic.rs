//! Server-side tools: a route's own tools (built-in, MCP servers', skills'), run by the
//! gateway's tool loop for clients that sent none, so they never see a tool call.
//!
//! The loop is kite-agent's; this module turns its events back into one model's event
//! stream, so every client encoder serves it unchanged: the tool calls and their results
//! stay on the server, the text of each step flows as it comes (a later step's text starts
//! a new paragraph), and the usage so far follows each model call, summed and priced call
//! by call, so what a client spends is counted even when it leaves before the end.

use crate::{Gateway, Route};
use futures_util::StreamExt;
use kite_agent::{Agent, AgentError, AgentEvent, StopReason, Toolkit};
use kite_core::{Error, Event, EventStream, FinishReason, Metadata, Request, Usage};

/// How many model calls one request may make before the loop gives up, unless the route
/// says otherwise.
pub(crate) const MAX_TURNS: u32 = 10;

/// Tools made afresh for each request that runs a route's tools: their state (a skills
/// workspace, the skills already loaded) belongs to that request alone.
pub trait RequestKit: Toolkit<()> + Send + Sync {}

impl<T: Toolkit<()> + Send + Sync> RequestKit for T {}

/// What makes a route's [`RequestKit`] for each request.
pub type KitMaker = std::sync::Arc<dyn Fn() -> Result<Box<dyn RequestKit>, String> + Send + Sync>;

/// The agent answering `request` on `route`: the client's settings, with the route's tools
/// in place of its (empty) own, the route's instructions before its system prompt, and
/// calls priced as the gateway prices them. The kit made for this request must live as
/// long as the agent runs.
pub(crate) fn agent(
    gw: &Gateway,
    route: &Route,
    mut request: Request,
) -> Result<(Agent, Option<Box<dyn RequestKit>>), Error> {
    let mut first = route.instructions.clone();
    if request.tool_choice.is_none() {
        request.tool_choice = route.tool_choice.clone();
    }
    let (tools, kit) = match &route.kit {
        Some(make) => {
            let kit = make().map_err(|e| Error::other(std::io::Error::other(e)))?;
            let tools = route.tools.fork();
            for tool in kit.tools() {
                tools.add_arc(tool);
            }
            if let Some(text) = kit.instructions() {
                first = Some(first.map_or(text.clone(), |f| format!("{f}\n\n{text}")));
            }
            (tools, Some(kit))
        }
        None => (route.tools.clone(), None),
    };
    if let Some(first) = first {
        request.system = Some(match request.system.take() {
            Some(own) => format!("{first}\n\n{own}"),
            None => first,
        });
    }
    let mut agent = Agent::shared(route.model.clone(), request.model.clone())
        .with_tools(tools)
        .max_turns(route.max_turns)
        .redact(gw.secrets.clone())
        .configure(move |r| *r = request);
    if let Some(pricer) = &gw.pricer {
        agent = agent.pricer(pricer.clone());
    }
    Ok((agent, kit))
}

/// `request` answered by the tool loop on `route`, as one model's events.
pub(crate) fn answer(gw: &Gateway, route: &Route, mut request: Request) -> EventStream {
    let history = std::mem::take(&mut request.messages);
    let route_model = request.model.clone();
    let (agent, kit) = match agent(gw, route, request) {
        Ok(made) => made,
        Err(e) => return Box::pin(futures_util::stream::once(async move { Err(e) })),
    };
    let events = agent.run_stream((), history);
    let mut state = Loop::default();
    if let Some(pricer) = gw.pricer.clone() {
        // Each call priced alone, as the provider bills it (tiers, per-request fees).
        let provider = route.model.origin().provider;
        let model = route_model.clone();
        state.price = Some(Box::new(move |u: &Usage| pricer(&provider, &model, u)));
    }
    Box::pin(events.flat_map(move |item| {
        // The request's kit lives as long as its stream.
        let _kit = &kit;
        futures_util::stream::iter(match item {
            Ok(event) => state.map(event),
            Err(e) => vec![Err(model_error(e))],
        })
    }))
}

/// A loop error in a model's terms.
pub(crate) fn model_error(e: AgentError) -> Error {
    match e {
        AgentError::Model(e) => e,
        other => Error::other(other),
    }
}

/// What one call's usage costs, when its provider does not say.
type Price = Box<dyn Fn(&Usage) -> Option<f64> + Send>;

#[derive(Default)]
struct Loop {
    price: Option<Price>,
    started: bool,
    /// The text parts already sent, numbered across the loop's calls.
    parts: u32,
    /// The first part number of the current call.
    base: u32,
    /// The usage of the calls finished so far.
    spent: Usage,
    /// The usage the current call has reported so far.
    current: Usage,
}

impl Loop {
    fn map(&mut self, event: AgentEvent) -> Vec<Result<Event, Error>> {
        match event {
            AgentEvent::Model(e) => self.model(e),
            AgentEvent::Done(run) => {
                // Why the loop ended, in a model's words: a loop cut short by its turn limit
                // did not answer, and its last call's `tool_calls` would promise calls the
                // client never sees.
                let reason = match run.stop_reason() {
                    // A last answer that names tool calls it did not make promises nothing.
                    Some(StopReason::Finished {
                        finish_reason: FinishReason::ToolCalls,
                    }) => FinishReason::Stop,
                    Some(StopReason::Finished { finish_reason }) => finish_reason.clone(),
                    Some(StopReason::TurnLimit { .. } | StopReason::BudgetExceeded { .. }) => {
                        FinishReason::Length
                    }
                    _ => FinishReason::Stop,
                };
                vec![Ok(Event::Finish { reason })]
            }
            // The tools run here: the client sees their effect in the answer only.
            _ => Vec::new(),
        }
    }

    fn model(&mut self, event: Event) -> Vec<Result<Event, Error>> {
        match event {
            Event::Start { .. } if self.started => {
                // A new call of the loop: its text parts follow the last one's.
                self.base = self.parts;
                Vec::new()
            }
            Event::Start { .. } => {
                self.started = true;
                vec![Ok(event)]
            }
            Event::TextDelta { part, text } => {
                let part = self.base + part;
                let gap = part >= self.parts && self.parts > 0;
                self.parts = self.parts.max(part + 1);
                let text = if gap { format!("\n\n{text}") } else { text };
                vec![Ok(Event::TextDelta { part: 0, text })]
            }
            // Each call's usage, added to the earlier calls': the client's meter counts
            // what grew.
            Event::Usage { mut usage } => {
                if usage.cost.is_none() {
                    usage.cost = self.price.as_ref().and_then(|price| price(&usage));
                }
                self.current = usage;
                vec![Ok(Event::Usage {
                    usage: self.spent + usage,
                })]
            }
            Event::Finish { .. } => {
                self.spent += std::mem::take(&mut self.current);
                Vec::new()
            }
            // What a provider needs to take reasoning back is for the history the gateway
            // keeps, not for a client that never sees the steps.
            Event::ReasoningEnd { part, .. } => vec![Ok(Event::ReasoningEnd {
                part,
                metadata: Metadata::default(),
            })],
            Event::Metadata { .. }
            | Event::ToolCallStart { .. }
            | Event::ToolCallDelta { .. }
            | Event::ToolCallEnd { .. } => Vec::new(),
            other => vec![Ok(other)],
        }
    }
}
