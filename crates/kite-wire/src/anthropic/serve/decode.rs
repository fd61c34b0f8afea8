//! Decoding a client's `POST /v1/messages` body into a kite [`Request`].

use super::ClientRequest;
use super::fields::{self, TAKEN, UNSERVED};
use crate::anthropic::NAMESPACE;
use crate::client::{Fields, check, flag, known, number, shown, tokens};
use kite_core::{
    Error, ImageSource, Message, Metadata, Part, Reasoning, Request, Role, ToolCall, ToolChoice,
    ToolResult, ToolSpec,
};
use serde_json::{Value, json};

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

/// Decodes a client's `POST /v1/messages` body: every field read, refused, or (a cache
/// breakpoint) taken and left; see `client.rs`.
pub fn decode_request(body: &[u8]) -> Result<ClientRequest, Error> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let f = Fields::of(&v)?;
    f.only("Messages", TAKEN, UNSERVED)?;
    let model = f
        .string("model")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("model: Field required"))?;
    let mut request = Request::new(model);
    request.max_tokens = Some(
        tokens("max_tokens", f.get("max_tokens"))?
            .ok_or_else(|| bad("max_tokens: Field required"))?,
    );
    request.system = match f.get("system") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(blocks)) => Some(
            blocks
                .iter()
                .enumerate()
                .map(|(i, b)| system_text(b).map_err(|e| bad(format!("system.{i}: {e}"))))
                .collect::<Result<Vec<_>, _>>()?
                .join("\n\n"),
        ),
        Some(_) => return Err(bad("system: must be text or text blocks")),
    };
    let messages = f
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("messages: Field required"))?;
    for (i, m) in messages.iter().enumerate() {
        decode_message(m, &mut request.messages).map_err(|e| bad(format!("messages.{i}: {e}")))?;
    }
    for (i, t) in f.array("tools")?.iter().enumerate() {
        request
            .tools
            .push(decode_tool(t).map_err(|e| bad(format!("tools.{i}: {e}")))?);
    }
    if let Some(choice) = f.get("tool_choice") {
        known(choice, "`tool_choice`", fields::CHOICE).map_err(bad)?;
        let c = Fields::of(choice).map_err(|_| bad("tool_choice: must be an object"))?;
        request.tool_choice = match c.string("type")? {
            Some("auto") => Some(ToolChoice::Auto),
            Some("any") => Some(ToolChoice::Required),
            Some("none") => Some(ToolChoice::None),
            Some("tool") => Some(ToolChoice::Tool(
                c.string("name")?
                    .ok_or_else(|| bad("tool_choice.name: Field required"))?
                    .to_owned(),
            )),
            other => {
                return Err(bad(format!(
                    "tool_choice.type: {} is not one of auto, any, none or tool",
                    shown(other)
                )));
            }
        };
        if flag(
            "tool_choice.disable_parallel_tool_use",
            c.get("disable_parallel_tool_use"),
        )? == Some(true)
        {
            request.parallel_tool_calls = Some(false);
        }
    }
    request.temperature = number("temperature", f.get("temperature"), 0.0..=1.0)?;
    request.top_p = number("top_p", f.get("top_p"), 0.0..=1.0)?;
    request.top_k = match f.integer("top_k")? {
        None => None,
        Some(k) => Some(
            u32::try_from(k)
                .ok()
                .filter(|k| *k >= 1)
                .ok_or_else(|| bad(format!("top_k: must be a whole number from 1, not {k}")))?,
        ),
    };
    request.stop = f.texts("stop_sequences")?;
    if let Some(user) = f.get("metadata").and_then(|m| m.get("user_id")) {
        request.user = Some(
            user.as_str()
                .ok_or_else(|| bad("metadata.user_id: must be text"))?
                .to_owned(),
        );
    }
    request.reasoning = thinking(f.get("thinking"))?;
    check(&request, "messages")?;
    Ok(ClientRequest {
        request,
        stream: flag("stream", f.get("stream"))?.unwrap_or(false),
    })
}

/// A client's tool: a function of its own (server tools, which Anthropic runs, are not
/// served).
fn decode_tool(t: &Value) -> Result<ToolSpec, String> {
    match t.get("type").and_then(Value::as_str) {
        None | Some("custom") => known(t, "a client tool", fields::TOOL)?,
        Some(other) => {
            return Err(format!(
                "tools of type `{other}` are Anthropic's own and are not served; only \
                 client tools are"
            ));
        }
    }
    let name = t
        .get("name")
        .and_then(Value::as_str)
        .ok_or("name: Field required")?;
    let mut spec = ToolSpec::new(
        name,
        t.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        t.get("input_schema")
            .cloned()
            .unwrap_or(json!({"type": "object"})),
    );
    spec.strict = t.get("strict").and_then(Value::as_bool);
    Ok(spec)
}

/// `thinking`: a budget of tokens to think with, or none.
fn thinking(v: Option<&Value>) -> Result<Option<kite_core::ReasoningConfig>, Error> {
    let Some(v) = v else {
        return Ok(None);
    };
    known(v, "`thinking`", fields::THINKING_SETTING).map_err(bad)?;
    match v.get("type").and_then(Value::as_str) {
        Some("disabled") => Ok(None),
        Some("enabled") => {
            let budget = tokens("thinking.budget_tokens", v.get("budget_tokens"))?
                .ok_or_else(|| bad("thinking.budget_tokens: Field required"))?;
            Ok(Some(kite_core::ReasoningConfig {
                budget_tokens: Some(budget),
                ..kite_core::ReasoningConfig::default()
            }))
        }
        other => Err(bad(format!(
            "thinking.type: {} is not one of enabled or disabled",
            shown(other)
        ))),
    }
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
fn system_text(b: &Value) -> Result<&str, String> {
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

fn decode_message(m: &Value, out: &mut Vec<Message>) -> Result<(), String> {
    known(m, "a message", fields::MESSAGE)?;
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => {
            return Err(format!("role: {} is not user or assistant", shown(other)));
        }
    };
    let blocks = match m.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => return Err("content: must be text or blocks".into()),
    };
    let mut parts = Vec::new();
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
        match kind {
            Some("text") => parts.push(Part::text(
                b.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            Some("image") => parts.push(image(b)?),
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
                results.push(r);
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
    // Tool results go first, as their own messages; the rest of a user turn follows.
    out.extend(results.into_iter().map(Message::tool_result));
    if !parts.is_empty() {
        out.push(Message::new(role, parts));
    }
    Ok(())
}
