//! Streamed responses: SSE frames into events, tool calls assembled by index.

use super::NAMESPACE;
use super::wire::{Chunk, Content, ContentPart, Delta};
use crate::errors;
use crate::sse::{Frames, SseStream};
use kite_core::{Error, Event, FinishReason, Metadata, ToolCall, TransportErrorKind, Usage};
use serde_json::Value;

/// Decodes a streamed chat completion.
///
/// ```
/// use kite_wire::{StreamDecoder, openai_chat::ChatStreamDecoder};
/// use kite_core::Event;
///
/// let body = b"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
///              data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
///              data: [DONE]\n\n";
/// let mut dec = ChatStreamDecoder::new();
/// let mut events = Vec::new();
/// dec.decode(body, &mut events).unwrap();
/// dec.finish(&mut events).unwrap();
/// assert!(matches!(&events[1], Event::TextDelta { text, .. } if text == "Hi"));
/// assert!(matches!(events.last(), Some(Event::Finish { .. })));
/// ```
pub type ChatStreamDecoder = SseStream<ChatFrames>;

/// What the events of a chat completion stream mean (see [`ChatStreamDecoder`]).
#[derive(Debug, Default)]
pub struct ChatFrames {
    asm: Assembler,
}

impl Frames for ChatFrames {
    fn frame(&mut self, event: &str, data: &[u8], out: &mut Vec<Event>) -> Result<bool, Error> {
        let data = data.trim_ascii_end();
        match event {
            "" | "message" | "chunk" => {}
            "error" => return Err(errors::from_event(data)),
            other => {
                out.push(crate::sse::unknown(other, data));
                return Ok(false);
            }
        }
        if data == b"[DONE]" {
            self.asm.close(true, out);
            return Ok(true);
        }
        // One UTF-8 check of the whole chunk lets the parser trust every string in it
        // (`from_slice` would check each string it reads on its own, which costs more).
        let chunk: Chunk = std::str::from_utf8(data)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
            .map_err(|e| Error::decode(format!("chunk is not valid JSON: {e}"), data))?;
        self.asm.chunk(chunk, out)?;
        Ok(false)
    }

    fn eof(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        if self.asm.finish.is_none() {
            return Err(Error::transport(
                TransportErrorKind::ConnectionClosed,
                "the stream ended before the response was complete",
            ));
        }
        self.asm.close(false, out);
        Ok(())
    }
}

/// The state shared by streamed and whole responses: a whole response is one chunk whose
/// `message` is the complete delta.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    started: bool,
    calls: Vec<PendingCall>,
    calls_closed: bool,
    reasoning_open: bool,
    reasoning_details: Vec<Value>,
    pub(super) finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// The kind of the part being streamed, and its number: Chat Completions has no part
    /// identity of its own, so a change of kind starts a new part.
    kind: Option<Kind>,
    part: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    Refusal,
    Call,
}

#[derive(Debug)]
struct PendingCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    /// The number of the part a delta of `kind` belongs to.
    fn part(&mut self, kind: Kind) -> u32 {
        if self.kind != Some(kind) {
            if self.kind.is_some() {
                self.part += 1;
            }
            self.kind = Some(kind);
        }
        self.part
    }

    pub(super) fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<Event>) -> Result<(), Error> {
        if let Some(err) = &chunk.error
            && !err.is_null()
        {
            let mut wrapper = serde_json::Map::new();
            wrapper.insert("error".into(), (**err).clone());
            let e = errors::from_value(None, &Value::Object(wrapper))
                .unwrap_or_else(|| kite_core::ApiError::new(None, err.to_string()));
            return Err(e.into());
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: chunk.id.map(|s| s.into_string()),
                model: chunk.model.map(|s| s.into_string()),
            });
        }
        if let Some(u) = chunk.usage.or(chunk.x_groq.and_then(|x| x.usage)) {
            self.usage = Some((*u).into());
        }
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.close_parts(out);
                self.finish = Some(crate::finish_reason(reason.as_str()));
            }
        }
        Ok(())
    }

    fn delta(&mut self, d: Delta<'_>, out: &mut Vec<Event>) {
        if let Some(text) = d.reasoning_content.or(d.reasoning)
            && !text.is_empty()
        {
            self.reasoning_open = true;
            let part = self.part(Kind::Reasoning);
            out.push(Event::ReasoningDelta { part, text });
        }
        if let Some(details) = d.reasoning_details {
            self.reasoning_open = true;
            self.part(Kind::Reasoning);
            for detail in details {
                merge_detail(&mut self.reasoning_details, detail);
            }
        }
        match d.content {
            Some(Content::Text(text)) if !text.is_empty() => {
                self.end_reasoning(out);
                let part = self.part(Kind::Text);
                out.push(Event::TextDelta { part, text });
            }
            Some(Content::Parts(parts)) => self.content_parts(parts, out),
            _ => {}
        }
        if let Some(text) = d.refusal
            && !text.is_empty()
        {
            self.end_reasoning(out);
            let part = self.part(Kind::Refusal);
            out.push(Event::RefusalDelta { part, text });
        }
        for (pos, tc) in d.tool_calls.into_iter().flatten().enumerate() {
            let index = tc.index.unwrap_or(pos as u32);
            let (name, args) = match tc.function {
                Some(f) => (f.name, f.arguments),
                None => (None, None),
            };
            self.call_delta(index, tc.id.map(|s| s.into_string()), name, args, out);
        }
        if let Some(f) = d.function_call {
            self.call_delta(0, None, f.name, f.arguments, out);
        }
    }

    fn content_parts(&mut self, parts: Vec<ContentPart>, out: &mut Vec<Event>) {
        for p in parts {
            match p.kind.as_str() {
                "thinking" => {
                    for t in p.thinking.into_iter().flatten() {
                        if let Some(text) = t.text.filter(|t| !t.is_empty()) {
                            self.reasoning_open = true;
                            let part = self.part(Kind::Reasoning);
                            out.push(Event::ReasoningDelta { part, text });
                        }
                    }
                }
                _ => {
                    if let Some(text) = p.text.filter(|t| !t.is_empty()) {
                        self.end_reasoning(out);
                        let part = self.part(Kind::Text);
                        out.push(Event::TextDelta { part, text });
                    }
                }
            }
        }
    }

    fn call_delta(
        &mut self,
        index: u32,
        id: Option<String>,
        name: Option<crate::str::Str<'_>>,
        args: Option<String>,
        out: &mut Vec<Event>,
    ) {
        self.end_reasoning(out);
        self.part(Kind::Call);
        let pos = match self.calls.iter().position(|c| c.index == index) {
            Some(pos) => {
                if let Some(name) = name {
                    self.calls[pos].name.push_str(name.as_str());
                }
                pos
            }
            None => {
                let id = id.unwrap_or_else(|| format!("call_{index}"));
                let name = name.map(|n| n.into_string()).unwrap_or_default();
                out.push(Event::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(PendingCall {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        if let Some(args) = args.filter(|a| !a.is_empty()) {
            self.calls[pos].arguments.push_str(&args);
            out.push(Event::ToolCallDelta {
                index,
                arguments: args,
            });
        }
    }

    fn end_reasoning(&mut self, out: &mut Vec<Event>) {
        if self.reasoning_open {
            self.reasoning_open = false;
            if !self.reasoning_details.is_empty() {
                let details = std::mem::take(&mut self.reasoning_details);
                out.push(Event::ReasoningEnd {
                    part: self.part,
                    metadata: Metadata::with(NAMESPACE, "reasoning_details", Value::Array(details)),
                });
            }
        }
    }

    /// Closes reasoning and tool calls: nothing more arrives for them after a finish reason.
    fn close_parts(&mut self, out: &mut Vec<Event>) {
        self.end_reasoning(out);
        if self.calls_closed {
            return;
        }
        self.calls_closed = true;
        self.calls.sort_by_key(|c| c.index);
        for c in self.calls.drain(..) {
            out.push(Event::ToolCallEnd {
                index: c.index,
                call: ToolCall::new(c.id, c.name, c.arguments),
            });
        }
    }

    /// Ends the response. `done` is an explicit end (`[DONE]`, a whole body): a missing finish
    /// reason is then inferred rather than reported.
    pub(super) fn close(&mut self, done: bool, out: &mut Vec<Event>) {
        let had_calls = !self.calls.is_empty();
        self.close_parts(out);
        if let Some(usage) = self.usage.take() {
            out.push(Event::Usage { usage });
        }
        let reason = match self.finish.take() {
            Some(r) => r,
            None if done && had_calls => FinishReason::ToolCalls,
            None if done => FinishReason::Stop,
            None => return,
        };
        out.push(Event::Finish { reason });
    }
}

/// Merges a streamed `reasoning_details` entry (OpenRouter) into the list: fragments of the
/// same `type` and `index` are one detail whose text grows.
fn merge_detail(list: &mut Vec<Value>, detail: Value) {
    let key = |v: &Value| (v.get("type").cloned(), v.get("index").cloned());
    let k = key(&detail);
    let Some(existing) = list.iter_mut().find(|e| key(e) == k) else {
        list.push(detail);
        return;
    };
    let (Some(dst), Value::Object(src)) = (existing.as_object_mut(), detail) else {
        return;
    };
    for (field, value) in src {
        match (dst.get_mut(&field), value) {
            (Some(Value::String(a)), Value::String(b))
                if matches!(field.as_str(), "text" | "summary" | "data") =>
            {
                a.push_str(&b)
            }
            (_, Value::Null) => {}
            (_, v) => {
                dst.insert(field, v);
            }
        }
    }
}
