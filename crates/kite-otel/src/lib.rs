//! kite's traces and metrics, exported with OpenTelemetry.
//!
//! kite's crates describe what they do with `tracing` spans after the OpenTelemetry GenAI
//! semantic conventions ([`kite_core::trace`]): `invoke_agent`, `chat {model}` and
//! `execute_tool {name}`. [`Telemetry`] turns them into OpenTelemetry spans (through
//! `tracing-opentelemetry`), adds the conventions' client metrics
//! (`gen_ai.client.operation.duration`, `gen_ai.client.token.usage`), and exports both
//! over OTLP/HTTP, configured by the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, ...).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//!
//! let telemetry = kite_otel::Telemetry::from_env("my-app", None).expect("the OTLP settings");
//! tracing_subscriber::registry()
//!     .with(telemetry.as_ref().map(|t| t.layer()))
//!     .init();
//! // ... run agents ...
//! if let Some(t) = telemetry {
//!     let _ = t.shutdown(std::time::Duration::from_secs(2)); // sends what is left
//! }
//! ```
//!
//! [`Telemetry::with_providers`] takes OpenTelemetry's providers instead, with any exporter:
//! here one that keeps the spans in memory, for a model call to a loopback server.
//!
//! ```
//! use kite::{FinishReason, Message, Model, OpenAiCompatible, Request, Response};
//! use kite::wire::openai_chat::Dialect;
//! use kite_otel::{GenAiExporter, Telemetry};
//! use kite_testkit::render::{Shape, sse};
//! use kite_testkit::{ReplayServer, Reply};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let spans = InMemorySpanExporter::default();
//! let tracer = SdkTracerProvider::builder()
//!     .with_simple_exporter(GenAiExporter::new(spans.clone()))
//!     .build();
//! let telemetry = Telemetry::with_providers(tracer, None);
//! let subscriber = tracing_subscriber::registry().with(telemetry.layer());
//! let _guard = tracing::subscriber::set_default(subscriber);
//!
//! let mut answer = Response::empty(FinishReason::Stop);
//! answer.message = Message::assistant("Hello.");
//! let server = ReplayServer::start(vec![Reply::sse(sse(Shape::Chat, &answer, 1))]).await;
//! let model = OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::OpenAi);
//! model.complete(&Request::new("gpt-5-nano").message(Message::user("Hi"))).await?;
//!
//! let finished = spans.get_finished_spans()?;
//! assert!(finished.iter().any(|s| s.name == "chat gpt-5-nano"));
//! telemetry.shutdown(std::time::Duration::from_secs(1))?;
//! # Ok(()) }
//! ```

mod export;
mod metrics;

pub use export::{GenAiExporter, Redact};
pub use metrics::GenAiMetrics;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// Telemetry that could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry export: {0}")]
pub struct Error(String);

/// Where kite's spans and metrics go, and the means to send what is left before exiting.
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The exporters' settings may hold headers with tokens: nothing of them is shown.
        f.debug_struct("Telemetry")
            .field("traces", &self.tracer.is_some())
            .field("metrics", &self.meter.is_some())
            .finish_non_exhaustive()
    }
}

/// Whether the environment asks for OTLP export of `signal` (`TRACES`, `METRICS`): an
/// endpoint for it, no `OTEL_SDK_DISABLED=true`, no `OTEL_{signal}_EXPORTER=none`.
fn wanted(signal: &str) -> bool {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let none = var(&format!("OTEL_{signal}_EXPORTER"))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    let endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")).is_some();
    endpoint && !disabled && !none
}

/// The resource: what the SDK reads from `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`,
/// with `service` as the name when they give none.
fn resource(service: &str) -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder();
    match named {
        true => builder.build(),
        false => builder.with_service_name(service.to_owned()).build(),
    }
}

impl Telemetry {
    /// OTLP/HTTP export as the standard variables say, or `None` when no endpoint is set
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the `_TRACES_` and `_METRICS_` ones). `service`
    /// names the program when `OTEL_SERVICE_NAME` does not; `redact`, when given, hides
    /// secrets in every span's text before it leaves.
    pub fn from_env(service: &str, redact: Option<Redact>) -> Result<Option<Self>, Error> {
        if !wanted("TRACES") && !wanted("METRICS") {
            return Ok(None);
        }
        let meter = match wanted("METRICS") {
            false => None,
            true => {
                let exporter = opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .build()
                    .map_err(|e| Error(e.to_string()))?;
                Some(
                    SdkMeterProvider::builder()
                        .with_resource(resource(service))
                        .with_periodic_exporter(exporter)
                        .build(),
                )
            }
        };
        let tracer = match wanted("TRACES") {
            false => None,
            true => {
                let spans = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .build()
                    .map_err(|e| Error(e.to_string()))?;
                let mut exporter = GenAiExporter::new(spans);
                if let Some(redact) = redact {
                    exporter = exporter.redacting(redact);
                }
                Some(
                    SdkTracerProvider::builder()
                        .with_resource(resource(service))
                        .with_batch_exporter(exporter)
                        .build(),
                )
            }
        };
        Ok(Some(Self { tracer, meter }))
    }

    /// Telemetry over the given providers (tests, programs with exporters of their own).
    /// Give the tracer provider its exporter wrapped in [`GenAiExporter`].
    pub fn with_providers(tracer: SdkTracerProvider, meter: Option<SdkMeterProvider>) -> Self {
        Self {
            tracer: Some(tracer),
            meter,
        }
    }

    /// The `tracing` layer that turns kite's spans into OpenTelemetry spans (with retries
    /// and warnings from kite's crates as their events) and records the metrics.
    pub fn layer<S>(&self) -> impl Layer<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        // kite's GenAI spans, `kite serve`'s HTTP server spans, and warnings of kite's
        // crates (retries) as their events (`kite` takes in `kite_http`, `kite_mcp` and the
        // rest).
        let targets = Targets::new()
            .with_target(kite_core::trace::TARGET, tracing::Level::INFO)
            .with_target(kite_core::trace::SERVER_TARGET, tracing::Level::INFO)
            .with_target("kite", tracing::Level::WARN);
        let spans = self.tracer.as_ref().map(|t| {
            tracing_opentelemetry::layer()
                .with_tracer(t.tracer("kite"))
                .with_location(false)
                .with_threads(false)
                .with_level(false)
                .with_tracked_inactivity(false)
        });
        let metrics = self
            .meter
            .as_ref()
            .map(|m| GenAiMetrics::new(&opentelemetry::metrics::MeterProvider::meter(m, "kite")));
        Layer::and_then(spans, metrics).with_filter(targets)
    }

    /// Sends what is left and stops, waiting at most `timeout` in all (a collector that is
    /// down or silent costs that long, no more); `Err` says what could not be sent. The
    /// sending goes on in a thread of its own, left behind past the deadline.
    pub fn shutdown(self, timeout: Duration) -> Result<(), Error> {
        let (done, outcome) = std::sync::mpsc::channel();
        let sending = std::thread::Builder::new()
            .name("kite-otel-shutdown".into())
            .spawn(move || {
                let mut failed = Vec::new();
                if let Some(t) = self.tracer
                    && let Err(e) = t.shutdown_with_timeout(timeout)
                {
                    failed.push(format!("the traces: {e}"));
                }
                if let Some(m) = self.meter
                    && let Err(e) = m.shutdown_with_timeout(timeout)
                {
                    failed.push(format!("the metrics: {e}"));
                }
                let _ = done.send(failed);
            })
            .map_err(|e| Error(format!("cannot send what is left: {e}")))?;
        match outcome.recv_timeout(timeout) {
            Ok(failed) if failed.is_empty() => {
                let _ = sending.join();
                Ok(())
            }
            Ok(failed) => Err(Error(format!("could not send {}", failed.join("; ")))),
            Err(_) => Err(Error(format!(
                "the collector did not take what was left within {} s",
                timeout.as_secs_f64()
            ))),
        }
    }
}
