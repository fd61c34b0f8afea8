//! kite's events as Responses stream events.

use super::tools::{ClientTools, Kind, custom_input};
use super::{incomplete_reason, item_id, message_item, reasoning_item, response_json, text_part};
use kite_core::{Event, FinishReason, Metadata, Usage};
use serde_json::{Value, json};

/// The message item being written, one part of kite's message: the last item opened.
#[derive(Debug)]
struct OpenMessage {
    index: usize,
    id: String,
    /// kite's number of the part.
    part: u32,
    refusal: bool,
    text: String,
}

/// A tool call, by kite's index.
#[derive(Debug)]
struct Call {
    index: u32,
    output_index: usize,
    id: String,
    call_id: String,
    name: String,
    arguments: String,
    /// Its arguments have been sent in pieces.
    argued: bool,
    done: bool,
    /// The kind of the client's tool it calls: a function's arguments stream as they
    /// come, a custom tool's input is sent whole, and the item of a call of `local_shell`
    /// or `apply_patch` only once complete (it cannot be shown in part).
    kind: Kind,
}

/// Turns kite's events into Responses stream events, one call's worth: each a JSON object
/// with its `type` and `sequence_number`, to be sent as `event: {type}` / `data: {json}`.
///
/// Text streams as it comes, each of kite's text (or refusal) parts a `message` item of its
/// own. Tool calls stream as items of their own, which may interleave; a call whose
/// arguments come only whole (at [`Event::ToolCallEnd`]) sends them in one delta. Reasoning
/// is held until it is complete, so that the item sent is the one a Responses upstream can
/// take back (its id and encrypted content), then sent with its summary whole. The last
/// event carries the whole response, as [`encode_response`](super::encode_response) makes it.
#[derive(Debug)]
pub struct EventEncoder {
    id: String,
    model: String,
    created: u64,
    sequence: u64,
    started: bool,
    ended: bool,
    /// Done items by output index; `None` while open.
    output: Vec<Option<Value>>,
    message: Option<OpenMessage>,
    /// Reasoning not yet sent: its part number and text.
    reasoning: Option<(u32, String)>,
    calls: Vec<Call>,
    usage: Usage,
    reason: Option<FinishReason>,
    tools: ClientTools,
}

impl EventEncoder {
    /// An encoder for response `id`, answering as `model`, made at `created` (Unix seconds),
    /// its calls in the terms of the client's `tools`.
    pub fn new(
        id: impl Into<String>,
        model: impl Into<String>,
        created: u64,
        tools: ClientTools,
    ) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            created,
            sequence: 0,
            started: false,
            ended: false,
            output: Vec::new(),
            message: None,
            reasoning: None,
            calls: Vec::new(),
            usage: Usage::default(),
            reason: None,
            tools,
        }
    }

    fn push(&mut self, out: &mut Vec<Value>, kind: &str, mut fields: Value) {
        if let Value::Object(m) = &mut fields {
            m.insert("type".into(), json!(kind));
            m.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        out.push(fields);
    }

    fn response(&self, reason: Option<&FinishReason>, usage: Option<&Usage>) -> Value {
        let output = self.output.iter().flatten().cloned().collect();
        response_json(&self.id, &self.model, self.created, output, reason, usage)
    }

    fn start(&mut self, out: &mut Vec<Value>) {
        if !std::mem::replace(&mut self.started, true) {
            let response = self.response(None, None);
            self.push(out, "response.created", json!({"response": response}));
            self.push(out, "response.in_progress", json!({"response": response}));
        }
    }

    fn open_item(&mut self, out: &mut Vec<Value>, item: Value) -> usize {
        let index = self.output.len();
        self.output.push(None);
        self.push(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        index
    }

    fn close_item(&mut self, out: &mut Vec<Value>, index: usize, item: Value) {
        self.output[index] = Some(item.clone());
        self.push(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    fn close_message(&mut self, out: &mut Vec<Value>) {
        let Some(m) = self.message.take() else { return };
        let at = json!({"item_id": m.id, "output_index": m.index, "content_index": 0});
        let mut done = at.clone();
        if m.refusal {
            done["refusal"] = json!(m.text);
            self.push(out, "response.refusal.done", done);
        } else {
            done["text"] = json!(m.text);
            done["logprobs"] = json!([]);
            self.push(out, "response.output_text.done", done);
        }
        let part = text_part(m.refusal, &m.text);
        let mut part_done = at;
        part_done["part"] = part.clone();
        self.push(out, "response.content_part.done", part_done);
        // A message cut short by the answer's end is itself incomplete.
        let status = match self.reason.as_ref().and_then(incomplete_reason) {
            Some(_) => "incomplete",
            None => "completed",
        };
        self.close_item(out, m.index, message_item(&m.id, status, vec![part]));
    }

    fn text(&mut self, out: &mut Vec<Value>, part: u32, refusal: bool, text: &str) {
        self.send_reasoning(out, &Metadata::new());
        let same = |m: &OpenMessage| (m.part, m.refusal) == (part, refusal);
        if !self.message.as_ref().is_some_and(same) {
            self.close_message(out);
            let id = item_id("msg", &self.id, self.output.len());
            let index = self.open_item(out, message_item(&id, "in_progress", Vec::new()));
            let added = json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": text_part(refusal, "")});
            self.push(out, "response.content_part.added", added);
            let text = String::new();
            self.message = Some(OpenMessage {
                index,
                id,
                part,
                refusal,
                text,
            });
        }
        let m = self.message.as_mut().expect("opened above");
        m.text.push_str(text);
        let mut delta = json!({"item_id": m.id, "output_index": m.index, "content_index": 0,
            "delta": text});
        if refusal {
            self.push(out, "response.refusal.delta", delta);
        } else {
            delta["logprobs"] = json!([]);
            self.push(out, "response.output_text.delta", delta);
        }
    }

    /// Sends the reasoning held, if any, as one whole item.
    fn send_reasoning(&mut self, out: &mut Vec<Value>, metadata: &Metadata) {
        let Some((_, text)) = self.reasoning.take() else {
            return;
        };
        self.close_message(out);
        let item = reasoning_item(&item_id("rs", &self.id, self.output.len()), &text, metadata);
        let id = item.get("id").cloned().unwrap_or_default();
        let index = self.open_item(out, json!({"id": id, "type": "reasoning", "summary": []}));
        let summary = item.get("summary").and_then(Value::as_array).cloned();
        for (i, s) in summary.into_iter().flatten().enumerate() {
            let at = json!({"item_id": id, "output_index": index, "summary_index": i});
            let text = s.get("text").cloned().unwrap_or(json!(""));
            let with = |k: &str, v: Value| {
                let mut e = at.clone();
                e[k] = v;
                e
            };
            let empty = json!({"type": "summary_text", "text": ""});
            self.push(
                out,
                "response.reasoning_summary_part.added",
                with("part", empty),
            );
            let delta = with("delta", text.clone());
            self.push(out, "response.reasoning_summary_text.delta", delta);
            self.push(
                out,
                "response.reasoning_summary_text.done",
                with("text", text),
            );
            self.push(out, "response.reasoning_summary_part.done", with("part", s));
        }
        self.close_item(out, index, item);
    }

    fn open_call(&mut self, out: &mut Vec<Value>, index: u32, call_id: &str, name: &str) -> usize {
        self.send_reasoning(out, &Metadata::new());
        self.close_message(out);
        let id = item_id("fc", &self.id, self.output.len());
        let kind = self.tools.kind(name);
        let output_index = match kind {
            Kind::Function | Kind::Custom => {
                let item = self.tools.call_item(&id, "in_progress", call_id, name, "");
                self.open_item(out, item)
            }
            Kind::LocalShell | Kind::ApplyPatch => {
                self.output.push(None);
                self.output.len() - 1
            }
        };
        self.calls.push(Call {
            index,
            output_index,
            id,
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments: String::new(),
            argued: false,
            done: false,
            kind,
        });
        self.calls.len() - 1
    }

    fn arguments_delta(&mut self, out: &mut Vec<Value>, at: usize, delta: &str) {
        let c = &mut self.calls[at];
        c.arguments.push_str(delta);
        c.argued = true;
        if c.kind == Kind::Function {
            let e = json!({"item_id": c.id, "output_index": c.output_index, "delta": delta});
            self.push(out, "response.function_call_arguments.delta", e);
        }
    }

    fn close_call(&mut self, out: &mut Vec<Value>, at: usize) {
        let c = &mut self.calls[at];
        c.done = true;
        let (id, index, kind) = (c.id.clone(), c.output_index, c.kind);
        let item = self
            .tools
            .call_item(&id, "completed", &c.call_id, &c.name, &c.arguments);
        let at_item = json!({"item_id": id, "output_index": index});
        match kind {
            Kind::Function => {
                let mut done = at_item;
                done["arguments"] = json!(c.arguments);
                self.push(out, "response.function_call_arguments.done", done);
            }
            Kind::Custom => {
                let input = custom_input(&c.arguments);
                let (mut delta, mut done) = (at_item.clone(), at_item);
                delta["delta"] = json!(input);
                done["input"] = json!(input);
                self.push(out, "response.custom_tool_call_input.delta", delta);
                self.push(out, "response.custom_tool_call_input.done", done);
            }
            Kind::LocalShell | Kind::ApplyPatch => {
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                let added = json!({"output_index": index, "item": added});
                self.push(out, "response.output_item.added", added);
            }
        }
        self.close_item(out, index, item);
    }

    /// The stream events `event` makes (none for what clients are not sent).
    pub fn event(&mut self, event: &Event) -> Vec<Value> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        self.start(&mut out);
        let open = |calls: &[Call], index: u32| calls.iter().position(|c| c.index == index);
        match event {
            Event::TextDelta { part, text } => self.text(&mut out, *part, false, text),
            Event::RefusalDelta { part, text } => self.text(&mut out, *part, true, text),
            Event::ReasoningDelta { part, text } => {
                if self.reasoning.as_ref().is_some_and(|r| r.0 != *part) {
                    self.send_reasoning(&mut out, &Metadata::new());
                }
                self.reasoning
                    .get_or_insert((*part, String::new()))
                    .1
                    .push_str(text);
            }
            Event::ReasoningEnd { part, metadata } => {
                if self.reasoning.as_ref().is_some_and(|r| r.0 != *part) {
                    self.send_reasoning(&mut out, &Metadata::new());
                }
                self.reasoning.get_or_insert((*part, String::new()));
                self.send_reasoning(&mut out, metadata);
            }
            Event::ToolCallStart { index, id, name } if open(&self.calls, *index).is_none() => {
                self.open_call(&mut out, *index, id, name);
            }
            Event::ToolCallDelta { index, arguments } => {
                if let Some(at) = open(&self.calls, *index).filter(|&at| !self.calls[at].done) {
                    self.arguments_delta(&mut out, at, arguments);
                }
            }
            Event::ToolCallEnd { index, call } => {
                let at = match open(&self.calls, *index) {
                    Some(at) if self.calls[at].done => return out,
                    Some(at) => at,
                    None => self.open_call(&mut out, *index, &call.id, &call.name),
                };
                // A call that came whole: its arguments go in one piece.
                if !self.calls[at].argued && !call.arguments.is_empty() {
                    self.arguments_delta(&mut out, at, &call.arguments);
                }
                let c = &mut self.calls[at];
                c.arguments.clone_from(&call.arguments);
                if c.call_id.is_empty() {
                    c.call_id.clone_from(&call.id);
                }
                self.close_call(&mut out, at);
            }
            // An item of the upstream's own (a hosted tool's call, which only a Responses
            // upstream makes): passed on whole, in its place, for the client to send back.
            Event::Unknown { kind, data }
                if kind == "responses.output_item" && data.get("type").is_some() =>
            {
                self.send_reasoning(&mut out, &Metadata::new());
                self.close_message(&mut out);
                let index = self.open_item(&mut out, data.clone());
                self.close_item(&mut out, index, data.clone());
            }
            Event::Usage { usage } => self.usage = *usage,
            Event::Finish { reason } => self.reason = Some(reason.clone()),
            _ => {}
        }
        out
    }

    /// The last events: what is still open closed, then `response.completed` (or
    /// `response.incomplete` when the answer was cut short) with the whole response.
    pub fn finish(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if std::mem::replace(&mut self.ended, true) {
            return out;
        }
        self.start(&mut out);
        self.send_reasoning(&mut out, &Metadata::new());
        self.close_message(&mut out);
        for at in 0..self.calls.len() {
            if !self.calls[at].done {
                self.close_call(&mut out, at);
            }
        }
        let reason = self.reason.take().unwrap_or(FinishReason::Stop);
        let kind = match incomplete_reason(&reason) {
            Some(_) => "response.incomplete",
            None => "response.completed",
        };
        let response = self.response(Some(&reason), Some(&self.usage));
        self.push(&mut out, kind, json!({"response": response}));
        out
    }

    /// The stream failed with `message`: `response.failed`, with the items done so far, and
    /// nothing after it (no end that would pass a cut answer for a whole one).
    pub fn failed(&mut self, message: &str) -> Vec<Value> {
        let mut out = Vec::new();
        if std::mem::replace(&mut self.ended, true) {
            return out;
        }
        self.start(&mut out);
        let mut response = self.response(None, Some(&self.usage));
        response["status"] = json!("failed");
        response["error"] = json!({"code": "server_error", "message": message});
        self.push(&mut out, "response.failed", json!({"response": response}));
        out
    }
}
