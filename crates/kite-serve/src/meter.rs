//! What an answer uses, counted against its caller as it is reported: the key's usage, the
//! route's metrics, the answer's tally (its ledger row) and the request's slot (its tokens
//! per minute). A provider that reports usage twice is counted once; an answer the provider
//! gives no price for is priced by the gateway's pricer when it can be.
//!
//! An answer that ends with no usage reported (its client left before the provider said
//! it, or the provider never does) is estimated when it ends, at about four characters a
//! token of what was asked and what was said, so that leaving early does not make an
//! answer free.

use crate::answer::Tally;
use crate::keys::{Caller, Spent};
use crate::{Gateway, Route};
use kite_core::{Error, Event, Part, Usage};
use std::sync::{Arc, Mutex};

/// Characters a token, as kite's estimates count them.
const CHARS_A_TOKEN: usize = 4;

pub(crate) struct Meter {
    gw: Arc<Gateway>,
    caller: Caller,
    provider: String,
    /// The request's worst case held against its key's budget, given back when the answer
    /// ends (and its ledger row counts what it cost).
    _reservation: Option<crate::registry::Reservation>,
    model: String,
    route: String,
    tally: Arc<Mutex<Tally>>,
    slot: Option<Arc<crate::limits::Slot>>,
    counted: Spent,
    seen: Usage,
    /// Characters asked, and said so far, for an estimate.
    asked: usize,
    said: usize,
    began: bool,
    reported: bool,
    failed: bool,
}

/// The characters of `request`: its system prompt, its messages' text, calls and results,
/// and its tools' descriptions.
pub(crate) fn asked(request: &kite_core::Request) -> usize {
    fn part(p: &Part) -> usize {
        match p {
            Part::Text { text, .. } => text.len(),
            Part::ToolCall(c) => c.name.len() + c.arguments.len(),
            Part::ToolResult(r) => r.content.iter().map(part).sum(),
            Part::Reasoning(r) => r.text.len(),
            Part::Refusal { text, .. } => text.len(),
            _ => 0,
        }
    }
    let system = request.system.as_ref().map_or(0, String::len);
    let messages: usize = request
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .map(part)
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len())
        .sum();
    system + messages + tools
}

impl Meter {
    pub(crate) fn new(
        gw: &Arc<Gateway>,
        caller: Caller,
        route: &Route,
        request: &kite_core::Request,
        tally: &Arc<Mutex<Tally>>,
        slot: Option<Arc<crate::limits::Slot>>,
        reservation: Option<crate::registry::Reservation>,
    ) -> Self {
        Self {
            _reservation: reservation,
            gw: gw.clone(),
            caller,
            provider: route.model.origin().provider,
            model: request.model.clone(),
            route: route.name.clone(),
            tally: tally.clone(),
            slot,
            counted: Spent::default(),
            seen: Usage::default(),
            asked: asked(request),
            said: 0,
            began: false,
            reported: false,
            failed: false,
        }
    }

    pub(crate) fn event(&mut self, e: &Result<Event, Error>) {
        let event = match e {
            Ok(event) => event,
            // Failures of the upstream, before its answer began or in the middle.
            Err(e) => {
                self.failed = true;
                let kind = kite_core::trace::error_type(e);
                self.gw.metrics.upstream_error(kind);
                return;
            }
        };
        self.began = true;
        match event {
            // A report of nothing (what some upstreams say when they say nothing) is none.
            Event::Usage { usage } if usage.input_tokens + usage.output_tokens == 0 => {}
            Event::Usage { usage } => {
                self.reported = true;
                self.count(usage);
            }
            Event::TextDelta { text, .. }
            | Event::ReasoningDelta { text, .. }
            | Event::RefusalDelta { text, .. } => self.said += text.len(),
            Event::ToolCallDelta { arguments, .. } => self.said += arguments.len(),
            _ => {}
        }
    }

    fn count(&mut self, usage: &Usage) {
        let gw = &self.gw;
        let cost = usage.cost.or_else(|| {
            let pricer = gw.pricer.as_ref()?;
            pricer(&self.provider, &self.model, usage)
        });
        let now = Spent::of(usage, cost);
        let new = now.beyond(&self.counted);
        gw.keys.spent(&self.caller, new);
        self.counted = self.counted.most(now);
        // A provider that reports usage again reports what it has used so far.
        let more = usage.beyond(&self.seen);
        self.seen += more;
        gw.metrics.used(&self.route, &more, Some(new.cost));
        {
            let mut t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
            t.usage += more;
            t.cost += new.cost;
            t.unpriced |= new.unpriced;
        }
        if let Some(slot) = &self.slot {
            slot.used(new.input_tokens.saturating_add(new.output_tokens));
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if self.reported || !self.began || self.failed {
            return;
        }
        let (input, output) = (self.asked / CHARS_A_TOKEN, self.said / CHARS_A_TOKEN);
        let usage = Usage {
            input_tokens: input as u64,
            output_tokens: output as u64,
            total_tokens: (input + output) as u64,
            ..Usage::default()
        };
        tracing::debug!(target: "kite::serve", route = %self.route, input, output, "no usage was reported: estimated");
        self.count(&usage);
    }
}
