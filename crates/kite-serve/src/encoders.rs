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

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn named(name: &str, v: &Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

impl Encoder for ChunkEncoder {
    fn event(&mut self, event: &Event) -> String {
        ChunkEncoder::event(self, event)
            .into_iter()
            .map(data)
            .collect()
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
        events.iter().map(|(name, v)| named(name, v)).collect()
    }
    fn failed(&mut self, message: &str) -> String {
        // After an error the stream ends with it: no stop reason follows.
        messages::EventEncoder::failed(self);
        named("error", &messages::error_body(message, "api_error"))
    }
    fn finish(&mut self) -> String {
        let events = messages::EventEncoder::finish(self);
        events.iter().map(|(name, v)| named(name, v)).collect()
    }
}

fn typed(events: Vec<Value>) -> String {
    events
        .iter()
        .map(|v| named(v["type"].as_str().unwrap_or("message"), v))
        .collect()
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
