//! Printing events: plain text for people, JSON lines for scripts.

use kite::{Error, Event};
use serde_json::{Value, json};
use std::io::Write;

pub struct Output {
    json: bool,
    wrote_text: bool,
    at_line_start: bool,
}

impl Output {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            wrote_text: false,
            at_line_start: true,
        }
    }

    pub fn event(&mut self, e: &Event) {
        if self.json {
            if let Some(v) = json_event(e) {
                line(&v);
            }
            return;
        }
        let text = match e {
            Event::TextDelta { text } | Event::RefusalDelta { text } => text,
            _ => return,
        };
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
        self.wrote_text = true;
        self.at_line_start = text.ends_with('\n');
    }

    /// Ends the answer with a newline, if it lacks one.
    pub fn end(&mut self) {
        if !self.json && self.wrote_text && !self.at_line_start {
            println!();
        }
    }

    pub fn error(&mut self, e: &Error) {
        if self.json {
            line(&json_error(e));
        } else {
            self.end();
        }
    }
}

fn line(v: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{v}");
    let _ = stdout.flush();
}

/// The JSON line for an event; fragments that a later event carries whole are left out.
fn json_event(e: &Event) -> Option<Value> {
    Some(match e {
        Event::Start { id, model } => json!({"type": "start", "id": id, "model": model}),
        Event::TextDelta { text } => json!({"type": "text_delta", "text": text}),
        Event::ReasoningDelta { text } => json!({"type": "reasoning_delta", "text": text}),
        Event::RefusalDelta { text } => json!({"type": "refusal_delta", "text": text}),
        Event::ToolCallEnd { call, .. } => json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": call.parse_arguments().unwrap_or_else(|_| Value::String(call.arguments.clone())),
        }),
        Event::Usage { usage } => {
            let mut v = serde_json::to_value(usage).unwrap_or_default();
            v["type"] = json!("usage");
            v
        }
        Event::Finish { reason } => json!({"type": "done", "finish_reason": reason.as_str()}),
        Event::Unknown { kind, data } => json!({"type": "unknown", "kind": kind, "data": data}),
        Event::ToolCallStart { .. } | Event::ToolCallDelta { .. } | Event::ReasoningEnd { .. } => {
            return None;
        }
    })
}

fn json_error(e: &Error) -> Value {
    let mut v = json!({"type": "error", "message": error_line(e)});
    match e {
        Error::Api(a) => {
            v["kind"] = json!("api");
            v["status"] = json!(a.status);
            v["code"] = json!(a.code);
            v["request_id"] = json!(a.request_id);
        }
        Error::Decode(_) => v["kind"] = json!("decode"),
        Error::Transport(_) => v["kind"] = json!("transport"),
        Error::Config(_) => v["kind"] = json!("config"),
        Error::InvalidRequest(_) => v["kind"] = json!("invalid_request"),
        Error::Cancelled => v["kind"] = json!("cancelled"),
        _ => v["kind"] = json!("other"),
    }
    v
}

/// One line that says what went wrong.
pub fn error_line(e: &Error) -> String {
    e.to_string().replace('\n', " ")
}
