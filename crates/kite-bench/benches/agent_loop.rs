//! The agent loop's own overhead per step: a scripted model that answers instantly and a
//! tool that does nothing, so what is measured is kite (request building, event folding,
//! argument checks, bookkeeping). A step is one model call plus one tool call.
//!
//! `10_steps_traced` runs the same with kite's GenAI spans on (each model call wrapped as
//! an HTTP model wraps it, `kite-otel`'s layer, an exporter that drops what it gets): the
//! difference over 11 model calls and 10 tool calls is what tracing costs a call.
//!
//! Run: `cargo bench -p kite-bench --bench agent_loop`.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kite_agent::{Agent, ToolError, tool};
use kite_core::{EventStream, Message, Model, Request};
use kite_testkit::ScriptedModel;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Args {
    n: u32,
}

const STEPS: u32 = 10;

/// The scripted model, its calls traced as kite's HTTP and local models trace theirs.
struct Traced(ScriptedModel);

impl Model for Traced {
    fn stream(&self, request: &Request) -> EventStream {
        let origin = kite_core::trace::Origin::at("openai", "http://127.0.0.1:8080/v1");
        kite_core::trace::model_call(request, &origin, self.0.stream(request))
    }
}

/// An exporter that drops the spans it is given.
#[derive(Debug)]
struct Discard;

impl opentelemetry_sdk::trace::SpanExporter for Discard {
    async fn export(
        &self,
        _: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

fn script() -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for i in 0..STEPS {
        model = model.tool_calls(&[(&format!("c{i}"), "noop", json!({"n": i}))]);
    }
    model.text("done")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("agent_loop");
    g.bench_function(format!("{STEPS}_steps"), |b| {
        b.iter_batched(
            || {
                let noop = tool("noop", "does nothing", |a: Args, _| async move {
                    Ok::<_, ToolError>(a.n.to_string())
                });
                Agent::new(script(), "m").tool(noop).max_turns(STEPS + 1)
            },
            |agent| {
                let run = rt
                    .block_on(agent.run((), vec![Message::user("go")]))
                    .unwrap();
                assert_eq!(run.turns(), STEPS + 1);
                run
            },
            BatchSize::SmallInput,
        )
    });
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(kite_otel::GenAiExporter::new(Discard))
        .build();
    let telemetry = kite_otel::Telemetry::with_providers(provider, None);
    let subscriber = {
        use tracing_subscriber::layer::SubscriberExt as _;
        tracing_subscriber::registry().with(telemetry.layer())
    };
    let _traced = tracing::subscriber::set_default(subscriber);
    g.bench_function(format!("{STEPS}_steps_traced"), |b| {
        b.iter_batched(
            || {
                let noop = tool("noop", "does nothing", |a: Args, _| async move {
                    Ok::<_, ToolError>(a.n.to_string())
                });
                Agent::new(Traced(script()), "m")
                    .tool(noop)
                    .max_turns(STEPS + 1)
            },
            |agent| {
                let run = rt
                    .block_on(agent.run((), vec![Message::user("go")]))
                    .unwrap();
                assert_eq!(run.turns(), STEPS + 1);
                run
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
