//! The messages of a client's Messages request, block by block.
//!
//! A block's cache breakpoint (`cache_control`) is kept on its message, in this codec's
//! namespace under `cache_control`, keyed by the block's part index: the Anthropic encoder
//! puts it back on the same block, and the other codecs leave it out (their providers
//! cache prompts by themselves).

use super::fields;
use crate::anthropic::NAMESPACE;
use crate::client::{known, shown};
use kite_core::{
    Document, DocumentSource, ImageSource, Message, Metadata, Part, Reasoning, Role, ToolCall,
    ToolResult,
};
use serde_json::{Map, Value, json};

/// Decodes one client message onto `out`: its tool results first, as their own messages,
/// then the rest of the turn. A system message stays where it is, in order.
pub(super) fn decode_message(m: &Value, out: &mut Vec<Message>) -> Result<(), String> {
    known(m, "a message", fields::MESSAGE)?;
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("system") => Role::System,
        other => {
            return Err(format!(
                "role: {} is not user, assistant or system",
                shown(other)
            ));
        }
    };
    let blocks = match m.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => return Err("content: must be text or blocks".into()),
    };
    let mut parts = Vec::new();
    let mut breakpoints = Map::new();
    let mut results = Vec::new();
    for b in &blocks {
        let kind = b.get("type").and_then(Value::as_str);
        let fields = match kind {
            Some("text") => fields::TEXT,
            Some("tool_use") => fields::TOOL_USE,
            Some("tool_result") => fields::TOOL_RESULT,
            Some("thinking") => fields::THINKING,
            Some("redacted_thinking") => fields::REDACTED_THINKING,
            _ => &[],
        };
        if !fields.is_empty() {
            known(b, &format!("a {} block", kind.unwrap_or_default()), fields)?;
        }
        if role == Role::Assistant && matches!(kind, Some("image" | "document")) {
            return Err(format!(
                "{} blocks belong in the user's messages, not the assistant's",
                kind.unwrap_or_default()
            ));
        }
        if role == Role::System && kind != Some("text") {
            return Err(format!(
                "a system message takes text blocks only, not blocks of type {}",
                shown(kind)
            ));
        }
        let cache = b.get("cache_control").filter(|c| !c.is_null());
        if let Some(c) = cache {
            cache_breakpoint(c)?;
        }
        if let (Some(cache), true) = (cache, kind != Some("tool_result")) {
            breakpoints.insert(parts.len().to_string(), cache.clone());
        }
        match kind {
            Some("text") => parts.push(Part::text(
                b.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            Some("image") => parts.push(image(b)?),
            Some("document") => parts.push(document(b)?),
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
                let mut r = ToolResult::text(id, "");
                r.content = result_content(b.get("content"))?;
                r.is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                let mut message = Message::tool_result(r);
                if let Some(cache) = cache {
                    message.metadata = cached(Map::from_iter([("0".to_owned(), cache.clone())]));
                }
                results.push(message);
            }
            // Thinking goes back as it came, signature and all, for Anthropic to take.
            Some("thinking" | "redacted_thinking") if role != Role::Assistant => {
                return Err("thinking blocks belong in the assistant's messages".into());
            }
            Some("thinking") => {
                let signature = b
                    .get("signature")
                    .and_then(Value::as_str)
                    .ok_or("thinking.signature: Field required")?;
                parts.push(Part::Reasoning(Reasoning {
                    text: b
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    metadata: Metadata::with(NAMESPACE, "signature", json!(signature)),
                }));
            }
            Some("redacted_thinking") => {
                let data = b
                    .get("data")
                    .filter(|d| d.is_string())
                    .ok_or("redacted_thinking.data: must be text")?;
                parts.push(Part::Reasoning(Reasoning {
                    text: String::new(),
                    metadata: Metadata::with(NAMESPACE, "redacted_data", data.clone()),
                }));
            }
            other => {
                return Err(format!(
                    "content blocks of type {} are not served",
                    shown(other)
                ));
            }
        }
    }
    out.extend(results);
    if !parts.is_empty() {
        let mut message = Message::new(role, parts);
        if !breakpoints.is_empty() {
            message.metadata = cached(breakpoints);
        }
        out.push(message);
    }
    Ok(())
}

/// A message's cache breakpoints, by part index.
fn cached(breakpoints: Map<String, Value>) -> Metadata {
    Metadata::with(NAMESPACE, "cache_control", Value::Object(breakpoints))
}

/// The text of a `tool_result`'s content (text, or text blocks).
fn result_content(content: Option<&Value>) -> Result<Vec<Part>, String> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Part::text(s.clone())]),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    known(b, "a text block", fields::TEXT)?;
                    Ok(Part::text(
                        b.get("text").and_then(Value::as_str).unwrap_or_default(),
                    ))
                }
                Some("image") => image(b),
                Some("document") => document(b),
                other => Err(format!(
                    "tool_result.content: blocks of type {} are not served",
                    shown(other)
                )),
            })
            .collect(),
        Some(_) => Err("tool_result.content: must be text or blocks".into()),
    }
}

/// A system prompt's block: text alone (as Anthropic takes), never dropped unseen.
pub(super) fn system_text(b: &Value) -> Result<&str, String> {
    match b.get("type").and_then(Value::as_str) {
        Some("text") => {
            known(b, "a text block", fields::TEXT)?;
            b.get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| "text: Field required".to_owned())
        }
        other => Err(format!(
            "the system prompt takes text blocks only, not blocks of type {}",
            shown(other)
        )),
    }
}

fn image(b: &Value) -> Result<Part, String> {
    known(b, "an image block", fields::IMAGE)?;
    let source = b.get("source").ok_or("image.source: Field required")?;
    known(source, "an image's source", fields::IMAGE_SOURCE)?;
    Ok(match b.pointer("/source/type").and_then(Value::as_str) {
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
    })
}

/// A document block: a PDF or text inline, one at a URL, or text given as blocks. Its
/// `context` and `citations` settings go back to Anthropic alone.
fn document(b: &Value) -> Result<Part, String> {
    known(b, "a document block", fields::DOCUMENT)?;
    let source = b.get("source").ok_or("document.source: Field required")?;
    known(source, "a document's source", fields::DOCUMENT_SOURCE)?;
    let text_of = |key: &str| {
        source
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("document.source.{key}: must be text"))
    };
    let source = match source.get("type").and_then(Value::as_str) {
        Some("base64") => DocumentSource::Base64 {
            media_type: text_of("media_type")?,
            data: text_of("data")?,
        },
        Some("text") => DocumentSource::Text {
            text: text_of("data")?,
        },
        Some("url") => DocumentSource::Url {
            url: text_of("url")?,
        },
        Some("content") => DocumentSource::Text {
            text: match source.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .map(|c| match c.get("type").and_then(Value::as_str) {
                        Some("text") => system_text(c).map(str::to_owned),
                        other => Err(format!(
                            "document.source.content: takes text blocks only, not blocks \
                             of type {}",
                            shown(other)
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n\n"),
                _ => return Err("document.source.content: must be text or blocks".into()),
            },
        },
        other => {
            return Err(format!(
                "document.source.type: {} is not served (files by id are not kept here); \
                 give base64, text, url or content",
                shown(other)
            ));
        }
    };
    let mut document = Document::new(source);
    document.title = b.get("title").and_then(Value::as_str).map(str::to_owned);
    for key in ["context", "citations"] {
        if let Some(v) = b.get(key).filter(|v| !v.is_null()) {
            document.metadata.insert(NAMESPACE, key, v.clone());
        }
    }
    Ok(Part::Document(document))
}

/// Refuses a cache breakpoint that is not one: `{"type": "ephemeral"}`, with a `ttl` of
/// `5m` or `1h` at most.
pub(super) fn cache_breakpoint(c: &Value) -> Result<(), String> {
    known(c, "`cache_control`", &["type", "ttl"])?;
    if c.get("type").and_then(Value::as_str) != Some("ephemeral") {
        return Err("cache_control.type: must be `ephemeral`".into());
    }
    match c.get("ttl") {
        None | Some(Value::Null) => Ok(()),
        Some(t) if t == "5m" || t == "1h" => Ok(()),
        Some(_) => Err("cache_control.ttl: must be `5m` or `1h`".into()),
    }
}
