//! Anthropic Messages the other way round, for a server that speaks it to its clients: a
//! client's `POST /v1/messages` decoded into a kite [`Request`], and kite's answer encoded
//! as a whole message or as Messages stream events.

mod decode;
mod fields;
mod messages;

use super::NAMESPACE;
pub use decode::{decode_count_request, decode_request};
use kite_core::{Event, FinishReason, Metadata, Part, Request, Response, Usage};
use serde_json::{Value, json};

/// A client's request, and whether it wants a stream.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The request, for any kite model.
    pub request: Request,
    /// `stream: true`.
    pub stream: bool,
}

/// The stop reason a client reads for `reason`: one of the API's own.
fn stop_reason(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter => "refusal",
        _ => "end_turn",
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u
            .input_tokens
            .saturating_sub(u.cached_input_tokens.saturating_add(u.cache_write_tokens)),
        "output_tokens": u.output_tokens,
        "cache_read_input_tokens": u.cached_input_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens,
    })
}

/// A whole message for `response`, answering as `model`.
pub fn encode_response(response: &Response, id: &str, model: &str) -> Value {
    let content: Vec<Value> = response
        .message
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::ToolCall(c) => Some(json!({"type": "tool_use", "id": c.id, "name": c.name,
                "input": serde_json::from_str::<Value>(&c.arguments).unwrap_or(json!({}))})),
            Part::Reasoning(r) => thinking_block(&r.text, &r.metadata),
            _ => None,
        })
        .collect();
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(&response.finish_reason),
        "stop_sequence": Value::Null,
        "usage": usage_json(&response.usage),
    })
}

/// Anthropic's own thinking (it carries a signature, or redacted data) as the block a
/// client sends back unchanged; other providers' reasoning has no such block.
fn thinking_block(text: &str, metadata: &Metadata) -> Option<Value> {
    if let Some(data) = metadata.get(NAMESPACE, "redacted_data") {
        return Some(json!({"type": "redacted_thinking", "data": data}));
    }
    let signature = metadata.get(NAMESPACE, "signature")?;
    Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
}

/// Turns kite's events into Messages stream events (`(name, data)` pairs). Text streams
/// as it comes; a tool call goes out whole once it is complete, so that calls an upstream
/// interleaves still make one block each, in order; Anthropic's thinking goes out whole
/// with its signature once it has it.
#[derive(Debug)]
pub struct EventEncoder {
    id: String,
    model: String,
    started: bool,
    /// A text block is open.
    text_open: bool,
    index: u32,
    usage: Usage,
    reason: Option<FinishReason>,
    failed: bool,
    /// The thinking under way, until its end says whether it is Anthropic's own.
    thinking: String,
}

impl EventEncoder {
    /// An encoder for message `id`, answering as `model`.
    pub fn new(id: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            started: false,
            text_open: false,
            index: 0,
            usage: Usage::default(),
            reason: None,
            failed: false,
            thinking: String::new(),
        }
    }

    fn close_text(&mut self, out: &mut Vec<(&'static str, Value)>) {
        if std::mem::take(&mut self.text_open) {
            out.push((
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.index}),
            ));
            self.index += 1;
        }
    }

    /// The stream events `event` makes.
    pub fn event(&mut self, event: &Event) -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push((
                "message_start",
                json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [], "stop_reason": Value::Null, "stop_sequence": Value::Null,
                "usage": {"input_tokens": 0, "output_tokens": 0}}}),
            ));
        }
        match event {
            Event::TextDelta { text, .. } => {
                if !self.text_open {
                    self.text_open = true;
                    out.push((
                        "content_block_start",
                        json!({"type": "content_block_start",
                        "index": self.index, "content_block": {"type": "text", "text": ""}}),
                    ));
                }
                out.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta",
                    "index": self.index, "delta": {"type": "text_delta", "text": text}}),
                ));
            }
            Event::ToolCallEnd { call, .. } => {
                self.close_text(&mut out);
                let i = self.index;
                out.push(("content_block_start", json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
                out.push((
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": call.arguments}}),
                ));
                out.push((
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                ));
                self.index += 1;
            }
            Event::ReasoningDelta { text, .. } => self.thinking.push_str(text),
            Event::ReasoningEnd { metadata, .. } => {
                let text = std::mem::take(&mut self.thinking);
                if let Some(block) = thinking_block(&text, metadata) {
                    self.close_text(&mut out);
                    let i = self.index;
                    let (open, delta) = match block["type"].as_str() {
                        Some("thinking") => (
                            json!({"type": "thinking", "thinking": "", "signature": ""}),
                            vec![
                                json!({"type": "thinking_delta", "thinking": text}),
                                json!({"type": "signature_delta", "signature": block["signature"]}),
                            ],
                        ),
                        _ => (block, Vec::new()),
                    };
                    out.push((
                        "content_block_start",
                        json!({"type": "content_block_start",
                        "index": i, "content_block": open}),
                    ));
                    for d in delta {
                        out.push((
                            "content_block_delta",
                            json!({"type": "content_block_delta",
                            "index": i, "delta": d}),
                        ));
                    }
                    out.push((
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": i}),
                    ));
                    self.index += 1;
                }
            }
            Event::Usage { usage } => self.usage = *usage,
            Event::Finish { reason } => self.reason = Some(reason.clone()),
            _ => {}
        }
        out
    }

    /// The stream failed: its end says nothing more (no stop reason that would pass a cut
    /// answer for a whole one).
    pub fn failed(&mut self) {
        self.failed = true;
    }

    /// The last events: the open block closed, the stop reason with the usage, the end.
    pub fn finish(&mut self) -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        if self.failed {
            return out;
        }
        if !self.started {
            out.extend(self.event(&Event::Usage { usage: self.usage }));
        }
        self.close_text(&mut out);
        let reason = self.reason.take().unwrap_or(FinishReason::Stop);
        out.push((
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(&reason), "stop_sequence": Value::Null},
            "usage": usage_json(&self.usage)}),
        ));
        out.push(("message_stop", json!({"type": "message_stop"})));
        out
    }
}

/// An error body as Anthropic writes one.
pub fn error_body(message: &str, kind: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_core::ToolCall;

    #[test]
    fn interleaved_tool_calls_become_one_whole_block_each() {
        let mut enc = EventEncoder::new("msg_1", "m");
        let call = |id: &str, args: &str| ToolCall::new(id, "add", args);
        let events = [
            Event::text(0, "Let me add."),
            Event::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "add".into(),
            },
            Event::ToolCallStart {
                index: 1,
                id: "b".into(),
                name: "add".into(),
            },
            Event::ToolCallDelta {
                index: 0,
                arguments: r#"{"a":1,"#.into(),
            },
            Event::ToolCallDelta {
                index: 1,
                arguments: r#"{"a":3,"#.into(),
            },
            Event::ToolCallEnd {
                index: 0,
                call: call("a", r#"{"a":1,"b":2}"#),
            },
            Event::ToolCallEnd {
                index: 1,
                call: call("b", r#"{"a":3,"b":4}"#),
            },
            Event::Finish {
                reason: FinishReason::ToolCalls,
            },
        ];
        let mut out: Vec<(&str, Value)> = events.iter().flat_map(|e| enc.event(e)).collect();
        out.extend(enc.finish());
        let names: Vec<&str> = out.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(out[4].1["content_block"]["id"], "a");
        assert_eq!(out[5].1["delta"]["partial_json"], r#"{"a":1,"b":2}"#);
        assert_eq!(out[7].1["index"], 2);
        assert_eq!(out[8].1["delta"]["partial_json"], r#"{"a":3,"b":4}"#);
        assert_eq!(out[10].1["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn a_failed_stream_ends_without_a_stop_reason() {
        let mut enc = EventEncoder::new("msg_1", "m");
        let _ = enc.event(&Event::text(0, "Half"));
        enc.failed();
        assert!(enc.finish().is_empty());
    }
}
