//! The last touch before spans leave: what `tracing` can only record as text becomes the
//! type the conventions give it.

use opentelemetry::{Array, KeyValue, StringValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::time::Duration;

/// Attributes the conventions define as string arrays, which kite records as JSON arrays in
/// text (`tracing` fields hold no arrays).
const STRING_ARRAYS: &[&str] = &["gen_ai.response.finish_reasons"];

/// A span exporter that gives [`STRING_ARRAYS`] their array type, then hands the spans to
/// the exporter it wraps.
#[derive(Debug)]
pub struct GenAiExporter<E> {
    inner: E,
}

impl<E> GenAiExporter<E> {
    /// Wraps `inner`.
    pub fn new(inner: E) -> Self {
        Self { inner }
    }
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
        self.inner.export(batch.into_iter().map(retype).collect())
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
