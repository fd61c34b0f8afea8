//! The conventions' client metrics, from kite's `chat` spans: how long each model call took
//! (`gen_ai.client.operation.duration`, seconds) and the tokens it used
//! (`gen_ai.client.token.usage`, by `gen_ai.token.type`), with the units and bucket
//! boundaries the conventions advise.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// A `tracing` layer recording the GenAI client metrics when `chat` spans close.
pub struct GenAiMetrics {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
}

impl GenAiMetrics {
    /// Metrics recorded with `meter`.
    pub fn new(meter: &Meter) -> Self {
        let token_buckets: Vec<f64> = (0..14).map(|i| 4f64.powi(i)).collect();
        Self {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(token_buckets)
                .build(),
        }
    }
}

/// What a `chat` span has said so far.
struct Call {
    started: Instant,
    attributes: Vec<KeyValue>,
    input: Option<u64>,
    output: Option<u64>,
}

/// The span fields that become metric attributes.
const ATTRIBUTES: &[&str] = &[
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "server.address",
    "server.port",
    "error.type",
];

impl Visit for Call {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if ATTRIBUTES.contains(&field.name()) {
            self.attributes.retain(|kv| kv.key.as_str() != field.name());
            self.attributes
                .push(KeyValue::new(field.name(), value.to_owned()));
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "gen_ai.usage.input_tokens" => self.input = Some(value),
            "gen_ai.usage.output_tokens" => self.output = Some(value),
            "server.port" => self.attributes.push(KeyValue::new(
                "server.port",
                i64::try_from(value).unwrap_or(0),
            )),
            _ => {}
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(v) = u64::try_from(value) {
            self.record_u64(field, v);
        }
    }
}

fn is_chat(meta: &tracing::Metadata<'_>) -> bool {
    meta.target() == kite_core::trace::TARGET && meta.name() == "chat"
}

impl<S> Layer<S> for GenAiMetrics
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !is_chat(attrs.metadata()) {
            return;
        }
        let mut call = Call {
            started: Instant::now(),
            attributes: Vec::new(),
            input: None,
            output: None,
        };
        attrs.record(&mut call);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(call);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(call) = span.extensions_mut().get_mut::<Call>()
        {
            values.record(call);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(call) = span.extensions_mut().remove::<Call>() else {
            return;
        };
        let secs = call.started.elapsed().as_secs_f64();
        self.duration.record(secs, &call.attributes);
        for (kind, count) in [("input", call.input), ("output", call.output)] {
            if let Some(n) = count {
                let mut attributes = call.attributes.clone();
                attributes.retain(|kv| kv.key.as_str() != "error.type");
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(n, &attributes);
            }
        }
    }
}
