//! Messages in the conventions' JSON shape, for `gen_ai.input.messages` and
//! `gen_ai.output.messages` when content is captured.

use crate::{Message, Part, Role};
use serde_json::{Value, json};

/// A message in the conventions' JSON shape (`{"role", "parts": [...]}`).
pub fn message_json(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let parts: Vec<Value> = message.parts.iter().map(part_json).collect();
    json!({"role": role, "parts": parts})
}

fn part_json(part: &Part) -> Value {
    match part {
        Part::Text { text } => json!({"type": "text", "content": text}),
        Part::Reasoning(r) => json!({"type": "reasoning", "content": r.text}),
        Part::Refusal { text } => json!({"type": "refusal", "content": text}),
        Part::ToolCall(c) => {
            let arguments =
                serde_json::from_str::<Value>(&c.arguments).unwrap_or(c.arguments.clone().into());
            json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": arguments})
        }
        Part::ToolResult(r) => {
            json!({"type": "tool_call_response", "id": r.call_id, "response": r.text_content()})
        }
        Part::Document(d) => match &d.source {
            crate::DocumentSource::Url { url } => {
                json!({"type": "uri", "modality": "document", "uri": url})
            }
            crate::DocumentSource::Base64 { media_type, .. } => {
                json!({"type": "blob", "modality": "document", "mime_type": media_type})
            }
            crate::DocumentSource::Text { text } => json!({"type": "text", "content": text}),
        },
        Part::Image { source, .. } => match source {
            crate::ImageSource::Url { url } => {
                json!({"type": "uri", "modality": "image", "uri": url})
            }
            crate::ImageSource::Base64 { media_type, .. } => {
                // The bytes are left out: a trace is no place for them.
                json!({"type": "blob", "modality": "image", "mime_type": media_type})
            }
        },
    }
}
