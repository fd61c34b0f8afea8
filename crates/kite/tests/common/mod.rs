//! What several test files share: the tool the recorded OpenAI tool-call exchanges were
//! made with.

use kite::tool;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Coordinates {
    /// Latitude (e.g., 52.5200)
    latitude: String,
    /// Longitude (e.g., 13.4050)
    longitude: String,
}

/// The tool the recordings were made with; its answer is the one recorded.
pub(crate) fn weather() -> impl kite::Tool {
    tool(
        "weather",
        "Gets current weather for a location",
        |c: Coordinates, _| async move {
            Ok(format!(
                "Current weather at {}, {}: 15°C, Wind: 10 km/h",
                c.latitude, c.longitude
            ))
        },
    )
}
