//! Anthropic Messages the other way round, for a server that speaks it to its clients: a
//! client's `POST /v1/messages` decoded into a kite [`Request`], and kite's answer encoded
//! as a whole message or as Messages stream events.

use crate::codec::{number, tokens};
use kite_core::{
    Error, Event, FinishReason, ImageSource, Message, Part, Request, Response, Role, ToolCall,
    ToolChoice, ToolResult, ToolSpec, Usage,
};
use serde_json::{Value, json};

/// A client's request, and whether it wants a stream.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The request, for any kite model.
    pub request: Request,
    /// `stream: true`.
    pub stream: bool,
}

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

/// Decodes a client's `POST /v1/messages` body.
pub fn decode_request(body: &[u8]) -> Result<ClientRequest, Error> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let model = v
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("model: Field required"))?;
    let mut request = Request::new(model);
    request.max_tokens = Some(
        tokens("max_tokens", v.get("max_tokens"))?
            .ok_or_else(|| bad("max_tokens: Field required"))?,
    );
    request.system = match v.get("system") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(blocks)) => Some(
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
        Some(_) => return Err(bad("system: must be text or text blocks")),
    };
    let messages = v
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("messages: Field required"))?;
    for (i, m) in messages.iter().enumerate() {
        decode_message(m, &mut request.messages).map_err(|e| bad(format!("messages.{i}: {e}")))?;
    }
    for (i, t) in v
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = t
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("tools.{i}.name: Field required")))?;
        request.tools.push(ToolSpec::new(
            name,
            t.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            t.get("input_schema")
                .cloned()
                .unwrap_or(json!({"type": "object"})),
        ));
    }
    request.tool_choice = match v.pointer("/tool_choice/type").and_then(Value::as_str) {
        None => None,
        Some("auto") => Some(ToolChoice::Auto),
        Some("any") => Some(ToolChoice::Required),
        Some("none") => Some(ToolChoice::None),
        Some("tool") => v
            .pointer("/tool_choice/name")
            .and_then(Value::as_str)
            .map(|n| ToolChoice::Tool(n.to_owned())),
        Some(other) => return Err(bad(format!("tool_choice.type: {other:?} is not known"))),
    };
    request.temperature = number("temperature", v.get("temperature"), 0.0..=1.0)?;
    request.top_p = number("top_p", v.get("top_p"), 0.0..=1.0)?;
    request.stop = v
        .get("stop_sequences")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(ClientRequest {
        request,
        stream: crate::codec::flag("stream", v.get("stream"))?.unwrap_or(false),
    })
}

/// The text of a `tool_result`'s content (text, or text blocks).
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn decode_message(m: &Value, out: &mut Vec<Message>) -> Result<(), String> {
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => return Err(format!("role: {other:?} is not user or assistant")),
    };
    let blocks = match m.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => return Err("content: must be text or blocks".into()),
    };
    let mut parts = Vec::new();
    let mut results = Vec::new();
    for b in &blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(Part::text(
                b.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            Some("image") => parts.push(match b.pointer("/source/type").and_then(Value::as_str) {
                Some("url") => Part::image_url(
                    b.pointer("/source/url")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                _ => Part::Image {
                    source: ImageSource::Base64 {
                        media_type: b
                            .pointer("/source/media_type")
                            .and_then(Value::as_str)
                            .unwrap_or("image/png")
                            .to_owned(),
                        data: b
                            .pointer("/source/data")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    },
                    detail: None,
                },
            }),
            Some("tool_use") => {
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("tool_use.id: Field required")?;
                let name = b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or("tool_use.name: Field required")?;
                let input = b.get("input").cloned().unwrap_or(json!({}));
                parts.push(Part::ToolCall(ToolCall::new(id, name, input.to_string())));
            }
            Some("tool_result") => {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or("tool_result.tool_use_id: Field required")?;
                let mut r = ToolResult::text(id, result_text(b.get("content")));
                r.is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                results.push(r);
            }
            // Thinking blocks and the like are the provider's, not the conversation's.
            _ => {}
        }
    }
    // Tool results go first, as their own messages; the rest of a user turn follows.
    out.extend(results.into_iter().map(Message::tool_result));
    if !parts.is_empty() {
        out.push(Message::new(role, parts));
    }
    Ok(())
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

/// Turns kite's events into Messages stream events (`(name, data)` pairs). Text streams
/// as it comes; a tool call goes out whole once it is complete, so that calls an upstream
/// interleaves still make one block each, in order.
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
