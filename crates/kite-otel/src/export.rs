//! The last touch before spans leave: what `tracing` can only record as text becomes the
//! type the conventions give it, and no secret the program knows of leaves in any text of
//! a span (a path, captured content, an error).

use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::Arc;
use std::time::Duration;

/// What hides secrets in a span's text (see [`GenAiExporter::redacting`]).
pub type Redact = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Attributes the conventions define as string arrays, which kite records as JSON arrays in
/// text (`tracing` fields hold no arrays).
const STRING_ARRAYS: &[&str] = &["gen_ai.response.finish_reasons"];

/// A span exporter that gives the attributes the conventions define as string arrays
/// (`gen_ai.response.finish_reasons`) their array type and hides secrets, then
/// hands the spans to the exporter it wraps.
pub struct GenAiExporter<E> {
    inner: E,
    redact: Option<Redact>,
}

impl<E: std::fmt::Debug> std::fmt::Debug for GenAiExporter<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenAiExporter")
            .field("inner", &self.inner)
            .field("redacting", &self.redact.is_some())
            .finish()
    }
}

impl<E> GenAiExporter<E> {
    /// Wraps `inner`.
    pub fn new(inner: E) -> Self {
        Self {
            inner,
            redact: None,
        }
    }

    /// Passes every text of every span (its name, attributes, events and status) through
    /// `redact` before it leaves: the paths a server records, and captured content, may
    /// hold a key.
    pub fn redacting(mut self, redact: Redact) -> Self {
        self.redact = Some(redact);
        self
    }
}

/// `span` with every text passed through `redact`.
fn redacted(mut span: SpanData, redact: &Redact) -> SpanData {
    let value = |v: &mut Value| match v {
        Value::String(s) => *s = StringValue::from(redact(s.as_str())),
        Value::Array(Array::String(items)) => {
            for item in items {
                *item = StringValue::from(redact(item.as_str()));
            }
        }
        _ => {}
    };
    let name = redact(&span.name);
    if name != span.name {
        span.name = name.into();
    }
    for kv in &mut span.attributes {
        value(&mut kv.value);
    }
    for event in span.events.events.iter_mut() {
        let name = redact(&event.name);
        if name != event.name {
            event.name = name.into();
        }
        for kv in &mut event.attributes {
            value(&mut kv.value);
        }
    }
    if let opentelemetry::trace::Status::Error { description } = &mut span.status {
        *description = redact(description).into();
    }
    span
}

/// `span` with its JSON-array attributes as arrays.
pub(crate) fn retype(mut span: SpanData) -> SpanData {
    for kv in &mut span.attributes {
        if !STRING_ARRAYS.contains(&kv.key.as_str()) {
            continue;
        }
        let Value::String(text) = &kv.value else {
            continue;
        };
        if let Ok(items) = serde_json::from_str::<Vec<String>>(text.as_str()) {
            let items: Vec<StringValue> = items.into_iter().map(StringValue::from).collect();
            *kv = KeyValue::new(kv.key.clone(), Value::Array(Array::String(items)));
        }
    }
    span
}

impl<E: SpanExporter> SpanExporter for GenAiExporter<E> {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let batch = batch.into_iter().map(retype);
        let batch = match &self.redact {
            Some(redact) => batch.map(|s| redacted(s, redact)).collect(),
            None => batch.collect(),
        };
        self.inner.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}
