//! Content blocks, opened, filled and closed: the state both faces share.

use super::NAMESPACE;
use kite_core::{Event, FinishReason, Metadata, ToolCall, Usage};
use serde_json::{Value, json};

/// What a block is, while it is open.
#[derive(Debug)]
enum Open {
    Text,
    Thinking {
        signature: String,
    },
    Redacted {
        data: Value,
    },
    ToolUse {
        call: u32,
        id: String,
        name: String,
        start_input: Value,
        json: String,
    },
    /// A block kite has no type for: kept whole, with any input streamed into it.
    Other {
        block: Value,
        json: String,
    },
}

/// Blocks by index, usage, and the stop reason.
#[derive(Debug, Default)]
pub(super) struct Blocks {
    open: Vec<(u32, Open)>,
    pub usage: Usage,
    pub finish: Option<FinishReason>,
    /// Tool calls are numbered in the order they open, from 0.
    calls: u32,
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Blocks {
    /// A block opens; whatever content it already holds is emitted.
    pub fn start(&mut self, index: u32, block: &Value, out: &mut Vec<Event>) {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let open = match kind {
            "text" => {
                let text = str_of(block, "text");
                if !text.is_empty() {
                    out.push(Event::TextDelta { text });
                }
                if let Some(c) = block.get("citations").filter(|c| !c.is_null()) {
                    out.push(Event::Unknown {
                        kind: "anthropic.citations".into(),
                        data: c.clone(),
                    });
                }
                Open::Text
            }
            "thinking" => {
                let text = str_of(block, "thinking");
                if !text.is_empty() {
                    out.push(Event::ReasoningDelta { text });
                }
                Open::Thinking {
                    signature: str_of(block, "signature"),
                }
            }
            "redacted_thinking" => Open::Redacted {
                data: block.get("data").cloned().unwrap_or(Value::Null),
            },
            "tool_use" => {
                let (id, name) = (str_of(block, "id"), str_of(block, "name"));
                let call = self.calls;
                self.calls += 1;
                out.push(Event::ToolCallStart {
                    index: call,
                    id: id.clone(),
                    name: name.clone(),
                });
                let start_input = block.get("input").cloned().unwrap_or(json!({}));
                Open::ToolUse {
                    call,
                    id,
                    name,
                    start_input,
                    json: String::new(),
                }
            }
            _ => Open::Other {
                block: block.clone(),
                json: String::new(),
            },
        };
        self.open.push((index, open));
    }

    fn find(&mut self, index: u32) -> Option<&mut Open> {
        self.open
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, o)| o)
    }

    /// A delta for an open block.
    pub fn delta(&mut self, index: u32, delta: &Value, out: &mut Vec<Event>) {
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        match (kind, self.find(index)) {
            ("text_delta", _) => {
                let text = str_of(delta, "text");
                if !text.is_empty() {
                    out.push(Event::TextDelta { text });
                }
            }
            ("thinking_delta", _) => {
                let text = str_of(delta, "thinking");
                if !text.is_empty() {
                    out.push(Event::ReasoningDelta { text });
                }
            }
            ("signature_delta", Some(Open::Thinking { signature })) => {
                signature.push_str(&str_of(delta, "signature"));
            }
            ("input_json_delta", Some(Open::ToolUse { call, json, .. })) => {
                let part = str_of(delta, "partial_json");
                if !part.is_empty() {
                    json.push_str(&part);
                    out.push(Event::ToolCallDelta {
                        index: *call,
                        arguments: part,
                    });
                }
            }
            ("input_json_delta", Some(Open::Other { json, .. })) => {
                json.push_str(&str_of(delta, "partial_json"))
            }
            _ => out.push(Event::Unknown {
                kind: format!("anthropic.{kind}"),
                data: delta.clone(),
            }),
        }
    }

    /// A block closes: reasoning gets its signature, a tool call its whole input.
    pub fn stop(&mut self, index: u32, out: &mut Vec<Event>) {
        let Some(pos) = self.open.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, open) = self.open.remove(pos);
        match open {
            Open::Text => {}
            Open::Thinking { signature } => out.push(Event::ReasoningEnd {
                metadata: Metadata::with(NAMESPACE, "signature", Value::String(signature)),
            }),
            Open::Redacted { data } => out.push(Event::ReasoningEnd {
                metadata: Metadata::with(NAMESPACE, "redacted_data", data),
            }),
            Open::ToolUse {
                call,
                id,
                name,
                start_input,
                json,
            } => {
                let arguments = if !json.is_empty() {
                    json
                } else if start_input.as_object().is_some_and(|o| !o.is_empty()) {
                    start_input.to_string()
                } else {
                    "{}".to_owned()
                };
                out.push(Event::ToolCallEnd {
                    index: call,
                    call: ToolCall::new(id, name, arguments),
                });
            }
            Open::Other { mut block, json } => {
                if !json.is_empty()
                    && let Ok(input) = serde_json::from_str::<Value>(&json)
                {
                    block["input"] = input;
                }
                out.push(Event::Unknown {
                    kind: "anthropic.content_block".into(),
                    data: block,
                });
            }
        }
    }

    /// Usage as Anthropic reports it: `input_tokens` leaves out cached tokens, so they are
    /// added back; later reports (message_delta) update what they name.
    pub fn usage(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let cache_read = n("cache_read_input_tokens");
        let cache_write = n("cache_creation_input_tokens");
        if let Some(input) = n("input_tokens") {
            self.usage.input_tokens = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
        }
        if let Some(read) = cache_read {
            self.usage.cached_input_tokens = read;
        }
        if let Some(output) = n("output_tokens") {
            self.usage.output_tokens = output;
        }
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
    }

    /// The end of the message: usage and the stop reason.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let open: Vec<u32> = self.open.iter().map(|(i, _)| *i).collect();
        for i in open {
            self.stop(i, out);
        }
        out.push(Event::Usage { usage: self.usage });
        if let Some(reason) = self.finish.take() {
            out.push(Event::Finish { reason });
        }
    }
}
