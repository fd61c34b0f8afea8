//! `--verbose`: one line on stderr as each model call, tool call and run ends, from kite's
//! GenAI spans (`kite_core::trace`): what it was, how long it took, the time to the first
//! chunk, the tokens and why it ended.
//!
//! ```text
//! kite: chat gpt-5-nano: 1.42 s (first chunk 0.38 s), 812 in / 64 out tokens, stop
//! kite: execute_tool now: 0.2 ms
//! kite: invoke_agent: 2.91 s, 1634 in / 120 out tokens
//! ```

use crate::terminal::output::errln;
use std::collections::BTreeMap;
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The layer; it sees only kite's GenAI spans.
pub(crate) struct Verbose;

/// A span's start and the fields said so far.
struct Seen {
    started: Instant,
    fields: BTreeMap<&'static str, String>,
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.fields.insert(field.name(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields.insert(field.name(), value.to_owned());
    }
}

impl<S> Layer<S> for Verbose
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != kite::trace::TARGET {
            return;
        }
        let mut seen = Seen {
            started: Instant::now(),
            fields: BTreeMap::new(),
        };
        attrs.record(&mut seen);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(seen);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(seen) = span.extensions_mut().get_mut::<Seen>()
        {
            values.record(seen);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(seen) = span.extensions_mut().remove::<Seen>() else {
            return;
        };
        errln!("kite: {}", line(&seen));
    }
}

/// A duration in seconds, as a person reads it.
fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1000.0)
    } else {
        format!("{s:.2} s")
    }
}

fn line(seen: &Seen) -> String {
    let f = &seen.fields;
    let name = f.get("otel.name").map_or("span", String::as_str);
    let mut out = format!("{name}: {}", secs(seen.started.elapsed().as_secs_f64()));
    if let Some(first) = f
        .get("gen_ai.response.time_to_first_chunk")
        .and_then(|s| s.parse::<f64>().ok())
    {
        out.push_str(&format!(" (first chunk {})", secs(first)));
    }
    if let (Some(i), Some(o)) = (
        f.get("gen_ai.usage.input_tokens"),
        f.get("gen_ai.usage.output_tokens"),
    ) {
        out.push_str(&format!(", {i} in / {o} out tokens"));
        if let Some(c) = f.get("gen_ai.usage.cache_read.input_tokens") {
            out.push_str(&format!(" ({c} cached)"));
        }
    }
    if let Some(cost) = f.get("kite.usage.cost").and_then(|c| c.parse::<f64>().ok()) {
        out.push_str(&format!(", {}", crate::terminal::text::dollars(cost)));
    }
    if let Some(reasons) = f.get("gen_ai.response.finish_reasons") {
        let reasons: Vec<String> = serde_json::from_str(reasons).unwrap_or_default();
        out.push_str(&format!(", {}", reasons.join(" ")));
    }
    if let Some(e) = f.get("error.type") {
        out.push_str(&format!(", failed ({e})"));
    }
    crate::terminal::text::printable(&out).into_owned()
}
