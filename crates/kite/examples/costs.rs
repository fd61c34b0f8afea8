//! The tracing and costs guide's program (docs/src/guides/tracing-and-costs.md): an agent
//! whose calls are priced from genai-prices' data and held to a budget, its spans exported
//! over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --features otel,prices --example costs -- "Hi!"`

use kite::otel::Telemetry;
use kite::prices::{PriceTable, call_cost};
use kite::{Agent, Budget, Provider};
use std::sync::Arc;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

// ANCHOR: frugal
/// `agent`, its calls priced from the price table carried in the binary, and stopped before
/// a run spends more than 50 cents or 200,000 tokens.
fn frugal(agent: Agent) -> Agent {
    agent
        .pricer(Arc::new(|provider, model, usage| {
            call_cost(PriceTable::snapshot(), provider, model, usage)
        }))
        .budget(Budget {
            max_cost: Some(0.50),
            max_tokens: Some(200_000),
        })
}
// ANCHOR_END: frugal

// ANCHOR: telemetry
/// Spans and metrics sent over OTLP/HTTP when the standard variables name an endpoint
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...), else `None`.
fn start_telemetry() -> Result<Option<Telemetry>, kite::otel::Error> {
    let telemetry = Telemetry::from_env("costs-example", None)?;
    tracing_subscriber::registry()
        .with(telemetry.as_ref().map(|t| t.layer()))
        .init();
    Ok(telemetry)
}

/// Sends what is still buffered, before the program ends.
fn finish_telemetry(telemetry: Option<Telemetry>) -> Result<(), kite::otel::Error> {
    match telemetry {
        Some(t) => t.shutdown(Duration::from_secs(5)),
        None => Ok(()),
    }
}
// ANCHOR_END: telemetry

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let telemetry = start_telemetry()?;
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let agent = frugal(Agent::new(Provider::OpenAi.from_env()?, "gpt-4o-mini"));
    let run = agent.ask(question).await?;
    println!("{}", run.text());
    let usage = run.usage();
    match usage.cost {
        Some(cost) => eprintln!("[{} tokens, ${cost:.6}]", usage.total_tokens),
        None => eprintln!("[{} tokens, cost unknown]", usage.total_tokens),
    }
    finish_telemetry(telemetry)?;
    Ok(())
}
