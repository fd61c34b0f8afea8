//! Server-side tools: a route's own tools (built-in, MCP servers, skills), run by the
//! gateway's tool loop for clients that sent none, so they see only the final answer.
//!
//! The loop is kite-agent's; this module turns its events back into one model's event
//! stream, so every client encoder serves it unchanged: the tool calls and their results
//! stay on the server, the answer's text flows as it comes, and the usage of all the
//! loop's model calls is reported once, summed, before the last call's finish.

use crate::Route;
use futures_util::StreamExt;
use kite_agent::{Agent, AgentError, AgentEvent};
use kite_core::{Error, Event, EventStream, Request};

/// How many model calls one request may make before the loop gives up.
pub(crate) const MAX_TURNS: u32 = 10;

/// The agent answering `request` on `route`: the client's settings, with the route's
/// tools in place of its (empty) own and the route's instructions before its system prompt.
pub(crate) fn agent(route: &Route, mut request: Request) -> Agent {
    if let Some(first) = &route.instructions {
        request.system = Some(match request.system.take() {
            Some(own) => format!("{first}\n\n{own}"),
            None => first.clone(),
        });
    }
    Agent::shared(route.model.clone(), request.model.clone())
        .with_tools(route.tools.clone())
        .max_turns(MAX_TURNS)
        .configure(move |r| *r = request)
}

/// `request` answered by the tool loop on `route`, as one model's events.
pub(crate) fn answer(route: &Route, mut request: Request) -> EventStream {
    let history = std::mem::take(&mut request.messages);
    let agent = agent(route, request);
    let events = agent.run_stream((), history);
    let mut state = Loop::default();
    Box::pin(events.flat_map(move |item| {
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

#[derive(Default)]
struct Loop {
    started: bool,
    /// The text parts already sent, numbered across the loop's calls.
    parts: u32,
    /// The first part number of the current call.
    base: u32,
    finish: Option<Event>,
}

impl Loop {
    fn map(&mut self, event: AgentEvent) -> Vec<Result<Event, Error>> {
        match event {
            AgentEvent::Model(e) => self.model(e),
            AgentEvent::Done(run) => {
                let mut out = vec![Ok(Event::Usage { usage: run.usage() })];
                out.extend(self.finish.take().map(Ok));
                out
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
                // Text of a later call starts a new paragraph.
                let text = if gap { format!("\n\n{text}") } else { text };
                vec![Ok(Event::TextDelta { part: 0, text })]
            }
            // Each call's usage: the sum comes once, at the end.
            Event::Usage { .. } => Vec::new(),
            Event::Finish { .. } => {
                self.finish = Some(event);
                Vec::new()
            }
            Event::ToolCallStart { .. }
            | Event::ToolCallDelta { .. }
            | Event::ToolCallEnd { .. } => Vec::new(),
            other => vec![Ok(other)],
        }
    }
}
