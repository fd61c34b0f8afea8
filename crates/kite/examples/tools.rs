//! The tools guide's program (docs/src/guides/tools.md): a typed tool, and an agent that
//! calls it and answers from its result.
//!
//! `OPENAI_API_KEY=... cargo run -p kite-llm --example tools -- "Weather in Berlin (52.52, 13.405)?"`
//!
//! `OPENAI_BASE_URL` sends the requests to another OpenAI-compatible server.

// ANCHOR: program
use kite::{Agent, Provider, tool};

/// The tool's arguments: the doc comments become the schema's descriptions.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Coordinates {
    /// Latitude, e.g. "52.5200".
    latitude: String,
    /// Longitude, e.g. "13.4050".
    longitude: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let weather = tool(
        "weather",
        "Gets current weather for a location",
        |c: Coordinates, _| async move {
            let (lat, lon) = (c.latitude, c.longitude);
            Ok(format!("Current weather at {lat}, {lon}: 15°C"))
        },
    );
    let agent = Agent::new(Provider::OpenAi.from_env()?, "gpt-5-nano").tool(weather);
    let run = agent.ask(question).await?;
    println!("{}", run.text());
    eprintln!(
        "[{} tool calls, {} tokens]",
        run.tool_calls().len(),
        run.usage().total_tokens
    );
    Ok(())
}
// ANCHOR_END: program
