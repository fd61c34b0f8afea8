//! `--json`: one JSON line per event a script cares about.

use super::{error_line, outln};
use kite::agent::{CallStatus, ToolRecord};
use kite::cassette::CassetteError;
use kite::{AgentError, AgentEvent, Error, Event};
use serde_json::{Value, json};

pub(super) fn line(v: &Value) {
    outln!("{v}");
}

/// The JSON line for an event; fragments that a later event carries whole, and per-call
/// usage and finish (summed up in the last lines), are left out.
pub(super) fn json_event(e: &AgentEvent) -> Option<Value> {
    Some(match e {
        AgentEvent::Model(event) => match event {
            Event::Start { id, model } => json!({"type": "start", "id": id, "model": model}),
            Event::TextDelta { text, .. } => json!({"type": "text_delta", "text": text}),
            Event::ReasoningDelta { text, .. } => json!({"type": "reasoning_delta", "text": text}),
            Event::RefusalDelta { text, .. } => json!({"type": "refusal_delta", "text": text}),
            Event::ToolCallEnd { call, .. } => json!({
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": call.parse_arguments().unwrap_or_else(|_| Value::String(call.arguments.clone())),
            }),
            Event::Unknown { kind, data } => json!({"type": "unknown", "kind": kind, "data": data}),
            _ => return None,
        },
        AgentEvent::ToolFinished { record } => tool_result(record),
        _ => return None,
    })
}

fn tool_result(r: &ToolRecord) -> Value {
    let status = match r.status {
        CallStatus::Ran => "ran",
        CallStatus::Skipped => "skipped",
        CallStatus::Refused => "refused",
    };
    json!({
        "type": "tool_result",
        "id": r.call.id,
        "name": r.call.name,
        "content": r.result.text_content(),
        "is_error": r.result.is_error,
        "status": status,
        "duration_ms": r.duration.as_millis() as u64,
    })
}

pub(super) fn json_error(e: &AgentError) -> Value {
    let mut v = json!({"type": "error", "message": error_line(e)});
    let kind = match e {
        AgentError::Model(Error::Api(a)) => {
            v["status"] = json!(a.status);
            v["code"] = json!(a.code);
            v["request_id"] = json!(a.request_id);
            "api"
        }
        AgentError::Model(Error::Decode(_)) => "decode",
        AgentError::Model(Error::Transport(_)) => "transport",
        AgentError::Model(Error::Config(_)) => "config",
        AgentError::Model(Error::InvalidRequest(_)) => "invalid_request",
        AgentError::Model(Error::Cancelled) => "cancelled",
        AgentError::Model(e) if CassetteError::of(e).is_some() => {
            v["cassette"] = json!(CassetteError::of(e).map(|c| c.kind.as_str()));
            "cassette"
        }
        AgentError::Model(_) => "other",
        AgentError::Tool { .. } => "tool",
        _ => "other",
    };
    v["kind"] = json!(kind);
    v
}
