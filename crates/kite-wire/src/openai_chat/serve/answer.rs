//! kite's answer as a Chat Completions client reads it: a whole completion, the
//! `chat.completion.chunk` events of a stream ([`ChunkEncoder`]), and errors.

use kite_core::{Event, FinishReason, Part, Response, ToolCall, Usage};
use serde_json::{Map, Value, json};

/// The name a client reads for `reason`: one of the API's own.
fn finish_name(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        _ => "stop",
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens.saturating_add(u.output_tokens),
        "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
    })
}

fn tool_call_json(c: &ToolCall) -> Value {
    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
}

/// A whole `chat.completion` for `response`, answering as `model`.
pub fn encode_response(response: &Response, id: &str, model: &str, created: u64) -> Value {
    let m = &response.message;
    let text: String = m
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = m.tool_calls().map(tool_call_json).collect();
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_name(&response.finish_reason)}],
        "usage": usage_json(&response.usage),
    })
}

/// Turns kite's events into `chat.completion.chunk`s, one call's worth.
#[derive(Debug)]
pub struct ChunkEncoder {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    started: bool,
    usage: Option<Usage>,
    /// The calls whose arguments have been sent in pieces.
    argued: std::collections::HashSet<u32>,
}

impl ChunkEncoder {
    /// An encoder for completion `id`, answering as `model`.
    pub fn new(
        id: impl Into<String>,
        model: impl Into<String>,
        created: u64,
        include_usage: bool,
    ) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            created,
            include_usage,
            started: false,
            usage: None,
            argued: std::collections::HashSet::new(),
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }

    /// The chunks `event` makes (none for what clients are not sent).
    pub fn event(&mut self, event: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(self.chunk(json!({"role": "assistant", "content": ""}), None));
        }
        match event {
            Event::TextDelta { text, .. } => out.push(self.chunk(json!({"content": text}), None)),
            Event::ReasoningDelta { text, .. } => {
                out.push(self.chunk(json!({"reasoning_content": text}), None));
            }
            Event::RefusalDelta { text, .. } => out.push(self.chunk(json!({"refusal": text}), None)),
            Event::ToolCallStart { index, id, name } => out.push(self.chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            )),
            Event::ToolCallDelta { index, arguments } => {
                self.argued.insert(*index);
                out.push(self.chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
                    None,
                ));
            }
            // A call that came whole: its arguments go in one piece.
            Event::ToolCallEnd { index, call } if !self.argued.contains(index) => out.push(self.chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": call.arguments}}]}),
                None,
            )),
            Event::Usage { usage } => self.usage = Some(*usage),
            Event::Finish { reason } => out.push(self.chunk(json!({}), Some(finish_name(reason)))),
            _ => {}
        }
        out
    }

    /// The last chunk: the usage, when the client asked for it.
    pub fn finish(&mut self) -> Option<Value> {
        let usage = self.usage.take().filter(|_| self.include_usage)?;
        Some(json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage_json(&usage),
        }))
    }
}

/// An error body as OpenAI writes one: a refused request's `param` is the field its
/// message names first.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    let param = match kind {
        "invalid_request_error" => crate::client::param_of(message),
        _ => None,
    };
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}
