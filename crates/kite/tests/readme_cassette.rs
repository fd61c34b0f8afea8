//! The book's cassette example (docs/src/guides/cassettes.md), as a user writes it: a test
//! that replays the cassette committed in `tests/cassettes/weather_in_berlin`, with no key
//! and no network. (The cassette was recorded from OpenAI's answers in `testdata/wire`,
//! served on loopback.)

// ANCHOR: test
use kite::cassette::Cassette;
use kite::{Agent, Endpoint, Provider, Tool, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Coordinates {
    latitude: String,
    longitude: String,
}

fn weather() -> impl Tool {
    tool(
        "weather",
        "Gets current weather for a location",
        |c: Coordinates, _| async move {
            let (lat, lon) = (c.latitude, c.longitude);
            Ok(format!("Current weather at {lat}, {lon}: 15°C"))
        },
    )
}

#[tokio::test]
async fn weather_in_berlin() -> Result<(), Box<dyn std::error::Error>> {
    // tests/cassettes/weather_in_berlin, in the mode KITE_CASSETTE names
    let cassette = Cassette::named("weather_in_berlin")?;
    let model = Provider::OpenAi.model("gpt-4o-mini", &Endpoint::new().transport(cassette))?;
    let agent = Agent::new(model, "gpt-5-nano")
        .system("Be brief.")
        .tool(weather());
    let run = agent.ask("Weather in Berlin (52.5200, 13.4050)?").await?;
    assert!(run.text().contains("°C"));
    assert_eq!(run.tool_calls().len(), 1);
    Ok(())
}
// ANCHOR_END: test
