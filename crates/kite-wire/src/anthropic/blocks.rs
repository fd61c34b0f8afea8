//! Content blocks, opened, filled and closed: the state the streamed and whole faces share.

use super::NAMESPACE;
use super::encode::ANSWER_TOOL;
use super::wire::{self, Block, Delta, WireUsage};
use crate::str::{Str, text, value};
use kite_core::{Event, FinishReason, Metadata, ToolCall, Usage};
use serde_json::Value;
use serde_json::value::RawValue;

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
        start_input: Option<Value>,
        json: String,
    },
    /// A call of [`ANSWER_TOOL`]: the answer itself, as text.
    Answer {
        start_input: Option<Value>,
        sent: bool,
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
    /// The answer came as a call of [`ANSWER_TOOL`].
    answered: bool,
}

impl Blocks {
    /// A block opens; whatever content it already holds is emitted. A block whose fields
    /// do not have the shapes kite reads passes through whole, as one it has no type for.
    pub(super) fn start(&mut self, index: u32, raw: &RawValue, out: &mut Vec<Event>) {
        let block: Block = wire::read(raw).unwrap_or_default();
        let open = match block.kind.as_ref().map_or("", |k| k.as_str()) {
            "text" => {
                if let Some(text) = block.text.filter(|t| !t.as_str().is_empty()) {
                    out.push(Event::text(index, text.into_string()));
                }
                if let Some(c) = block.citations {
                    out.push(Event::Unknown {
                        kind: "anthropic.citations".into(),
                        data: value(c),
                    });
                }
                Open::Text
            }
            "thinking" => {
                if let Some(text) = block.thinking.filter(|t| !t.as_str().is_empty()) {
                    out.push(Event::reasoning(index, text.into_string()));
                }
                Open::Thinking {
                    signature: text(block.signature),
                }
            }
            "redacted_thinking" => Open::Redacted {
                data: block.data.map_or(Value::Null, value),
            },
            "tool_use"
                if block
                    .name
                    .as_ref()
                    .is_some_and(|n| n.as_str() == ANSWER_TOOL) =>
            {
                self.answered = true;
                Open::Answer {
                    start_input: block.input.map(value),
                    sent: false,
                }
            }
            "tool_use" => {
                let id = text(block.id);
                let name = text(block.name);
                let call = self.calls;
                self.calls += 1;
                out.push(Event::ToolCallStart {
                    index: call,
                    id: id.clone(),
                    name: name.clone(),
                });
                Open::ToolUse {
                    call,
                    id,
                    name,
                    start_input: block.input.map(value),
                    json: String::new(),
                }
            }
            _ => Open::Other {
                block: value(raw),
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

    /// A delta for an open block; one kite cannot read passes through.
    pub(super) fn delta(&mut self, index: u32, raw: &RawValue, out: &mut Vec<Event>) {
        let delta: Delta = wire::read(raw).unwrap_or_default();
        let kind = delta.kind.as_ref().map_or("", |k| k.as_str());
        match (kind, self.find(index)) {
            ("text_delta", _) => {
                let text = text(delta.text);
                if !text.is_empty() {
                    out.push(Event::text(index, text));
                }
            }
            ("thinking_delta", _) => {
                let text = text(delta.thinking);
                if !text.is_empty() {
                    out.push(Event::reasoning(index, text));
                }
            }
            ("signature_delta", Some(Open::Thinking { signature })) => {
                signature.push_str(delta.signature.as_ref().map_or("", Str::as_str));
            }
            ("input_json_delta", Some(Open::ToolUse { call, json, .. })) => {
                let part = text(delta.partial_json);
                if !part.is_empty() {
                    json.push_str(&part);
                    out.push(Event::ToolCallDelta {
                        index: *call,
                        arguments: part,
                    });
                }
            }
            ("input_json_delta", Some(Open::Answer { sent, .. })) => {
                let part = text(delta.partial_json);
                if !part.is_empty() {
                    *sent = true;
                    out.push(Event::text(index, part));
                }
            }
            ("input_json_delta", Some(Open::Other { json, .. })) => {
                json.push_str(delta.partial_json.as_ref().map_or("", Str::as_str))
            }
            _ => out.push(Event::Unknown {
                kind: format!("anthropic.{kind}"),
                data: value(raw),
            }),
        }
    }

    /// A block closes: reasoning gets its signature, a tool call its whole input.
    pub(super) fn stop(&mut self, index: u32, out: &mut Vec<Event>) {
        let Some(pos) = self.open.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, open) = self.open.remove(pos);
        match open {
            Open::Text => {}
            Open::Thinking { signature } => out.push(Event::ReasoningEnd {
                part: index,
                metadata: Metadata::with(NAMESPACE, "signature", Value::String(signature)),
            }),
            Open::Redacted { data } => out.push(Event::ReasoningEnd {
                part: index,
                metadata: Metadata::with(NAMESPACE, "redacted_data", data),
            }),
            Open::ToolUse {
                call,
                id,
                name,
                start_input,
                json,
            } => {
                let arguments = match start_input {
                    _ if !json.is_empty() => json,
                    Some(input) if input.as_object().is_some_and(|o| !o.is_empty()) => {
                        input.to_string()
                    }
                    _ => "{}".to_owned(),
                };
                out.push(Event::ToolCallEnd {
                    index: call,
                    call: ToolCall::new(id, name, arguments),
                });
            }
            Open::Answer { start_input, sent } => {
                if let (false, Some(input)) = (sent, start_input) {
                    out.push(Event::text(index, input.to_string()));
                }
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
    pub(super) fn usage(&mut self, u: &WireUsage) {
        let cache_read = u.cache_read_input_tokens;
        let cache_write = u.cache_creation_input_tokens;
        if let Some(input) = u.input_tokens {
            self.usage.input_tokens = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
        }
        if let Some(read) = cache_read {
            self.usage.cached_input_tokens = read;
        }
        if let Some(write) = cache_write {
            self.usage.cache_write_tokens = write;
        }
        if let Some(output) = u.output_tokens {
            self.usage.output_tokens = output;
        }
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
    }

    /// The end of the message: usage and the stop reason.
    pub(super) fn finish(&mut self, out: &mut Vec<Event>) {
        let open: Vec<u32> = self.open.iter().map(|(i, _)| *i).collect();
        for i in open {
            self.stop(i, out);
        }
        out.push(Event::Usage { usage: self.usage });
        // An answer given through the format's tool ends as any answer does.
        if self.answered && self.calls == 0 && self.finish == Some(FinishReason::ToolCalls) {
            self.finish = Some(FinishReason::Stop);
        }
        if let Some(reason) = self.finish.take() {
            out.push(Event::Finish { reason });
        }
    }
}
