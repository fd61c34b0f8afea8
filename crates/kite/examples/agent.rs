//! A tool-calling agent in one screen: a typed tool, a hook that asks before anything costly,
//! and the run streamed as it happens.
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --example agent -- "Convert 250 EUR to USD"`

use kite::agent::ToolRecord;
use kite::{Agent, AgentEvent, Event, Hooks, Message, Provider, StreamExt, ToolCall, ToolDecision};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's arguments: the doc comments become the schema's descriptions.
#[derive(Deserialize, JsonSchema)]
struct Convert {
    /// Amount in the source currency.
    amount: f64,
    /// ISO code of the source currency, e.g. "EUR".
    from: String,
    /// ISO code of the target currency, e.g. "USD".
    to: String,
}

/// A hook: refuse conversions of large amounts without a person's approval.
struct Careful;

impl Hooks<()> for Careful {
    fn before_tool(&self, _: &mut (), call: &mut ToolCall) -> ToolDecision {
        let amount = call
            .parse_arguments()
            .ok()
            .and_then(|a| a["amount"].as_f64());
        match amount {
            Some(a) if a > 1_000_000.0 => {
                ToolDecision::Skip("amounts over a million need approval".into())
            }
            _ => ToolDecision::Run,
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let provider = Provider::detect().ok_or("set OPENAI_API_KEY or another provider's key")?;

    let convert = kite::tool(
        "convert",
        "Convert money between currencies",
        |c: Convert, _| async move {
            let rate = match (c.from.as_str(), c.to.as_str()) {
                ("EUR", "USD") => 1.08,
                ("USD", "EUR") => 0.93,
                _ => {
                    return Err(kite::ToolError::model(format!(
                        "no rate for {} to {}",
                        c.from, c.to
                    )));
                }
            };
            Ok(format!("{:.2} {}", c.amount * rate, c.to))
        },
    );

    let agent = Agent::new(provider.from_env()?, provider.default_model())
        .system("Use the tools for any arithmetic on money.")
        .tool(convert)
        .hook(Careful)
        .audit(|r: &ToolRecord| eprintln!("[audit] {} took {:?}", r.call.name, r.duration));

    let mut events = agent.run_stream((), vec![Message::user(question)]);
    while let Some(event) = events.next().await {
        match event? {
            AgentEvent::Model(Event::TextDelta { text, .. }) => print!("{text}"),
            AgentEvent::ToolStarted { call } => {
                eprintln!("[tool] {}({})", call.name, call.arguments)
            }
            AgentEvent::ToolFinished { record } => {
                eprintln!("[tool] -> {}", record.result.text_content())
            }
            AgentEvent::Done(run) => println!(
                "\n[{} model calls, {} tokens]",
                run.turns(),
                run.usage().total_tokens
            ),
            _ => {}
        }
    }
    Ok(())
}
