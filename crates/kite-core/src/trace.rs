//! Spans after the OpenTelemetry GenAI semantic conventions, through `tracing`: one per
//! model call ([`model_call`]), one per tool call ([`tool_span`]), one per agent run
//! ([`agent_span`]). A program that only uses `tracing` sees them as they are; `kite-otel`
//! exports them as OpenTelemetry spans and metrics.
//!
//! Written by hand: it sits on every event of every stream, so it stays a field update per
//! event, and it is kite's own vocabulary.
//!
//! Message content (the instructions, messages, tool arguments and results) is recorded
//! only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` says so (`SPAN_ONLY`,
//! `SPAN_AND_EVENT` or `true`), as the conventions suggest. Keys and headers never are:
//! nothing here sees them.

use crate::{Error, Event, EventStream, FinishReason, Request, Usage};
use futures_core::Stream;
use serde_json::{Value, json};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tracing::field::Empty;

mod content;
mod origin;
mod spans;
pub use content::message_json;
pub use origin::{LOCAL_PROVIDER, Origin};
pub use spans::{agent_span, mcp_span, tool_result, tool_span};

/// The `tracing` target of every span and event here.
pub const TARGET: &str = "kite::gen_ai";

/// The target of the HTTP server spans `kite serve` opens around each request (the
/// OpenTelemetry HTTP conventions: `{method} {route}`, kind server), the parents of the
/// GenAI spans of the calls made for it.
pub const SERVER_TARGET: &str = "kite::serve::http";

/// Whether message content goes on spans: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
/// is `SPAN_ONLY`, `SPAN_AND_EVENT` or `true` (in any case).
pub fn capture_content() -> bool {
    std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_ok_and(|v| {
        let v = v.trim().to_ascii_lowercase();
        matches!(v.as_str(), "span_only" | "span_and_event" | "true")
    })
}

/// `stream`, the answer to `request` from the model at `origin`, inside a `chat {model}`
/// span that records what the call was, how it went and what it used.
pub fn model_call(request: &Request, origin: &Origin, stream: EventStream) -> EventStream {
    let span = tracing::info_span!(
        target: TARGET,
        "chat",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = if origin.address.is_some() { "client" } else { "internal" },
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %origin.provider,
        gen_ai.request.model = %request.model,
        gen_ai.request.max_tokens = Empty,
        gen_ai.request.temperature = Empty,
        gen_ai.request.top_p = Empty,
        gen_ai.request.seed = Empty,
        gen_ai.request.stream = true,
        server.address = Empty,
        server.port = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.time_to_first_chunk = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        kite.usage.cost = Empty,
        "error.type" = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
    );
    if span.is_disabled() {
        return stream;
    }
    if let Some(v) = request.max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(v));
    }
    if let Some(v) = request.temperature {
        span.record("gen_ai.request.temperature", v);
    }
    if let Some(v) = request.top_p {
        span.record("gen_ai.request.top_p", v);
    }
    if let Some(v) = request.seed {
        span.record("gen_ai.request.seed", v);
    }
    if let Some(a) = &origin.address {
        span.record("server.address", a.as_str());
    }
    if let Some(p) = origin.port {
        span.record("server.port", i64::from(p));
    }
    let capture = capture_content();
    if capture {
        if let Some(system) = &request.system {
            let text = json!([{"type": "text", "content": system}]).to_string();
            span.record("gen_ai.system_instructions", text.as_str());
        }
        let input: Vec<Value> = request.messages.iter().map(message_json).collect();
        span.record(
            "gen_ai.input.messages",
            Value::from(input).to_string().as_str(),
        );
    }
    Box::pin(Traced {
        inner: stream,
        span,
        started: Instant::now(),
        first_chunk: false,
        usage: None,
        reasons: Vec::new(),
        output: capture.then(crate::ResponseBuilder::default),
        ended: false,
    })
}

/// A model call's stream, recording into its span as events go by.
struct Traced {
    inner: EventStream,
    span: tracing::Span,
    started: Instant,
    first_chunk: bool,
    usage: Option<Usage>,
    reasons: Vec<FinishReason>,
    /// The answer so far, when content is captured.
    output: Option<crate::ResponseBuilder>,
    ended: bool,
}

impl Traced {
    fn saw(&mut self, event: &Event) {
        match event {
            Event::Start { id, model } => {
                if let Some(id) = id {
                    self.span.record("gen_ai.response.id", id.as_str());
                }
                if let Some(m) = model {
                    self.span.record("gen_ai.response.model", m.as_str());
                }
            }
            Event::TextDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::RefusalDelta { .. }
            | Event::ToolCallStart { .. }
                if !self.first_chunk =>
            {
                self.first_chunk = true;
                let secs = self.started.elapsed().as_secs_f64();
                self.span
                    .record("gen_ai.response.time_to_first_chunk", secs);
            }
            Event::Usage { usage } => {
                let total = self.usage.get_or_insert_with(Usage::default);
                // Some providers send counts twice (at the start and the end): the last wins
                // for each count they give.
                *total = merge(*total, *usage);
                record_usage(&self.span, total);
            }
            Event::Finish { reason } => {
                self.reasons.push(reason.clone());
                let names: Vec<&str> = self.reasons.iter().map(conventional_reason).collect();
                self.span.record(
                    "gen_ai.response.finish_reasons",
                    Value::from(names).to_string().as_str(),
                );
            }
            _ => {}
        }
        if let Some(out) = &mut self.output {
            out.push(event.clone());
        }
    }

    fn failed(&mut self, e: &Error) {
        self.ended = true;
        let kind = error_type(e);
        // An error's text may quote what was sent or answered: content, shown only when
        // content is captured.
        let description = match capture_content() {
            true => e.to_string(),
            false => format!("the call failed ({kind})"),
        };
        fail(&self.span, &kind, &description);
    }

    /// Records what was answered, when content is captured.
    fn end(&mut self) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let Some(out) = self.output.take() else {
            return;
        };
        if let Ok(response) = out.finish() {
            let mut message = message_json(&response.message);
            message["finish_reason"] = conventional_reason(&response.finish_reason).into();
            self.span.record(
                "gen_ai.output.messages",
                Value::from(vec![message]).to_string().as_str(),
            );
        }
    }
}

impl Drop for Traced {
    /// A call dropped before its end (Ctrl-C, a caller that gave up) says so.
    fn drop(&mut self) {
        if !self.ended {
            fail(&self.span, "cancelled", "dropped before its end");
        }
    }
}

/// Marks `span` failed: `error.type` is `kind`, the status an error with `description`
/// (kite's own words; nothing of the content unless it is captured).
pub fn fail(span: &tracing::Span, kind: &str, description: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", description);
}

/// A span that must end one way or the other: dropped before [`finish`](Self::finish)
/// (its future cancelled, the program ending), it is marked cancelled.
pub struct Pending {
    span: tracing::Span,
    finished: bool,
}

impl Pending {
    /// Watches `span`.
    pub fn new(span: tracing::Span) -> Self {
        Self {
            span,
            finished: false,
        }
    }

    /// The span.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The work ended (well or not, as recorded on the span).
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.finished && !self.span.is_disabled() {
            fail(&self.span, "cancelled", "ended before it finished");
        }
    }
}

impl Stream for Traced {
    type Item = Result<Event, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let entered = this.span.clone();
        let _entered = entered.enter();
        let polled = this.inner.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(event))) => this.saw(event),
            Poll::Ready(Some(Err(e))) => this.failed(e),
            Poll::Ready(None) => this.end(),
            Poll::Pending => {}
        }
        polled
    }
}

/// `b`'s counts where it has them, else `a`'s (a provider that reports usage twice gives
/// the whole counts the second time); `b`'s cost, else `a`'s.
fn merge(a: Usage, b: Usage) -> Usage {
    let pick = |x: u64, y: u64| if y > 0 { y } else { x };
    Usage {
        input_tokens: pick(a.input_tokens, b.input_tokens),
        output_tokens: pick(a.output_tokens, b.output_tokens),
        total_tokens: pick(a.total_tokens, b.total_tokens),
        cached_input_tokens: pick(a.cached_input_tokens, b.cached_input_tokens),
        cache_write_tokens: pick(a.cache_write_tokens, b.cache_write_tokens),
        reasoning_tokens: pick(a.reasoning_tokens, b.reasoning_tokens),
        cost: b.cost.or(a.cost),
    }
}

/// `n` as a signed count: OpenTelemetry's integers are `i64`, and `tracing-opentelemetry`
/// records a `u64` as text.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Records `usage` on `span` (a model call's or an agent run's).
pub fn record_usage(span: &tracing::Span, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    if usage.cached_input_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            int(usage.cached_input_tokens),
        );
    }
    if usage.cache_write_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_creation.input_tokens",
            int(usage.cache_write_tokens),
        );
    }
    if usage.reasoning_tokens > 0 {
        span.record(
            "gen_ai.usage.reasoning.output_tokens",
            int(usage.reasoning_tokens),
        );
    }
    if let Some(cost) = usage.cost {
        span.record("kite.usage.cost", cost);
    }
}

/// The conventions' name for a finish reason (`tool_call`, not `tool_calls`).
fn conventional_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::ToolCalls => "tool_call",
        other => other.as_str(),
    }
}

/// `error.type` for `e`: the HTTP status when there is one, else kite's kind of failure.
pub fn error_type(e: &Error) -> String {
    match e {
        Error::Api(api) => match api.status {
            Some(status) => status.to_string(),
            None => snake(&format!("{:?}", api.kind)),
        },
        Error::Transport(t) => snake(&format!("{:?}", t.kind)),
        Error::Decode(_) => "decode".into(),
        Error::InvalidRequest(_) => "invalid_request".into(),
        Error::Config(_) => "config".into(),
        Error::Engine(_) => "engine".into(),
        Error::Cancelled => "cancelled".into(),
        Error::Other(_) => "_OTHER".into(),
    }
}

/// `CamelCase` as `camel_case`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests;
