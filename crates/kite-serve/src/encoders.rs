//! Each client API's stream encoder as server-sent-event text, for `handlers::answer`:
//! Chat Completions' chunks, Anthropic's named events, and Responses' typed events.

use kite_core::Event;
use kite_wire::anthropic::serve as messages;
use kite_wire::openai_chat::serve::ChunkEncoder;
use kite_wire::openai_responses::serve as responses;
use serde_json::Value;

/// A client API's stream encoder, as server-sent-event text.
pub(crate) trait Encoder: Send + 'static {
    /// What one of kite's events says to the client.
    fn event(&mut self, event: &Event) -> String;
    /// What a failure midway says (`message`, as the client is told it); the stream ends
    /// with it.
    fn failed(&mut self, message: &str) -> String;
    /// What closes the stream.
    fn finish(&mut self) -> String;
}

/// Adds `v` to `out` as an event's `data:` line, after its `event:` line when it is named.
/// serde_json writes the text as `Display` would, without a formatter between them (twice
/// as fast; every streamed answer's events go through here).
fn push(out: &mut String, name: Option<&str>, v: &Value) {
    if let Some(name) = name {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    out.push_str("data: ");
    // A `Value` always serializes: its keys are strings.
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
    out.push_str("\n\n");
}

fn data(v: Value) -> String {
    let mut out = String::new();
    push(&mut out, None, &v);
    out
}

fn named<'a>(events: impl IntoIterator<Item = (&'a str, &'a Value)>) -> String {
    let mut out = String::new();
    for (name, v) in events {
        push(&mut out, Some(name), v);
    }
    out
}

impl Encoder for ChunkEncoder {
    fn event(&mut self, event: &Event) -> String {
        let mut out = String::new();
        for v in ChunkEncoder::event(self, event) {
            push(&mut out, None, &v);
        }
        out
    }
    fn failed(&mut self, message: &str) -> String {
        // Mid-stream, an error can only be said in the stream.
        data(kite_wire::openai_chat::serve::error_body(
            message,
            "api_error",
            None,
        ))
    }
    fn finish(&mut self) -> String {
        // The usage comes last, when the client asked for it.
        let usage = ChunkEncoder::finish(self).map(data).unwrap_or_default();
        format!("{usage}data: [DONE]\n\n")
    }
}

impl Encoder for messages::EventEncoder {
    fn event(&mut self, event: &Event) -> String {
        let events = messages::EventEncoder::event(self, event);
        named(events.iter().map(|(name, v)| (*name, v)))
    }
    fn failed(&mut self, message: &str) -> String {
        // After an error the stream ends with it: no stop reason follows.
        messages::EventEncoder::failed(self);
        named([("error", &messages::error_body(message, "api_error"))])
    }
    fn finish(&mut self) -> String {
        let events = messages::EventEncoder::finish(self);
        named(events.iter().map(|(name, v)| (*name, v)))
    }
}

fn typed(events: Vec<Value>) -> String {
    named(
        events
            .iter()
            .map(|v| (v["type"].as_str().unwrap_or("message"), v)),
    )
}

impl Encoder for responses::EventEncoder {
    fn event(&mut self, event: &Event) -> String {
        typed(responses::EventEncoder::event(self, event))
    }
    fn failed(&mut self, message: &str) -> String {
        typed(responses::EventEncoder::failed(self, message))
    }
    fn finish(&mut self) -> String {
        typed(responses::EventEncoder::finish(self))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_are_written_as_display_writes_them() {
        let v = serde_json::json!({"b": "a \"quote\", é and\na line", "a": [1, 2.5, null, {}]});
        let mut out = String::new();
        super::push(&mut out, Some("delta"), &v);
        super::push(&mut out, None, &v);
        assert_eq!(out, format!("event: delta\ndata: {v}\n\ndata: {v}\n\n"));
    }
}
