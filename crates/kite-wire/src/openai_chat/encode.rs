//! Request encoding.

use super::{Dialect, NAMESPACE};
use crate::anthropic::NAMESPACE as ANTHROPIC;
use crate::codec::{Setting, end_user, refuse_foreign, refuse_lacking};
use crate::schema;
use kite_core::{
    DocumentSource, Error, ImageSource, Message, Part, Request, ResponseFormat, Role, ToolChoice,
};
use serde_json::{Map, Value, json};

/// The JSON body of a chat completion request. With `stream`, the body asks for an SSE
/// stream (and for usage in it, where the dialect supports that).
pub fn encode_request(req: &Request, dialect: Dialect, stream: bool) -> Result<Vec<u8>, Error> {
    let body = encode_value(req, dialect, stream)?;
    serde_json::to_vec(&body).map_err(|e| Error::InvalidRequest(e.to_string()))
}

fn encode_value(req: &Request, dialect: Dialect, stream: bool) -> Result<Value, Error> {
    if req.model.is_empty() {
        return Err(Error::InvalidRequest("no model named".into()));
    }
    refuse_foreign(req, NAMESPACE, dialect.name())?;
    if !dialect.takes_top_k() {
        refuse_lacking(req, dialect.name(), &[Setting::TopK])?;
    }
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    // OpenAI takes system messages anywhere; other servers (Mistral, many chat templates)
    // only first, so theirs are folded into one, in order.
    let fold = dialect != Dialect::OpenAi;
    let mut system: Vec<String> = req.system.iter().cloned().collect();
    if fold {
        system.extend(
            req.messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(Message::text),
        );
    }
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for m in req
        .messages
        .iter()
        .filter(|m| !fold || m.role != Role::System)
    {
        // OpenRouter takes Anthropic's cache breakpoints on text parts, for the models
        // that cache by them; the others cache prompts by themselves.
        let marks = match dialect {
            Dialect::OpenRouter => m.metadata.get(ANTHROPIC, "cache_control"),
            _ => None,
        };
        encode_message(m, marks, &mut messages)?;
    }
    if dialect == Dialect::OpenRouter {
        mark_system(req, &mut messages);
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": schema::openai_function(t)}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        let v = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), v);
    }
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            body.insert(k.into(), v);
        }
    };
    put(
        "parallel_tool_calls",
        req.parallel_tool_calls.map(Value::from),
    );
    put("temperature", req.temperature.map(Value::from));
    put("top_p", req.top_p.map(Value::from));
    put(dialect.max_tokens_field(), req.max_tokens.map(Value::from));
    put("stop", (!req.stop.is_empty()).then(|| json!(req.stop)));
    put(dialect.seed_field(), req.seed.map(Value::from));
    put("frequency_penalty", req.frequency_penalty.map(Value::from));
    put("presence_penalty", req.presence_penalty.map(Value::from));
    put("top_k", req.top_k.map(Value::from));
    // A hint: only OpenAI's models take it.
    put(
        "verbosity",
        req.verbosity
            .clone()
            .filter(|_| dialect == Dialect::OpenAi)
            .map(Value::from),
    );
    if let Some((field, v)) = req.reasoning.as_ref().and_then(|r| dialect.reasoning(r)) {
        put(field, Some(v));
    }
    put(
        "user",
        req.user
            .as_deref()
            .filter(|_| dialect.sends_user())
            .map(|u| Value::from(end_user(u))),
    );
    put(
        "response_format",
        req.response_format.as_ref().map(|f| match f {
            ResponseFormat::Text => json!({"type": "text"}),
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { .. } => {
                json!({"type": "json_schema", "json_schema": schema::openai_json_schema(f)})
            }
        }),
    );
    if stream {
        body.insert("stream".into(), json!(true));
        if dialect.stream_options() {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    // What a client of this API asked for in its terms (through a gateway): OpenAI's own
    // fields, which only OpenAI and the servers that copy its API take.
    for (k, v) in req.provider_options.fields(NAMESPACE) {
        if !matches!(dialect, Dialect::OpenAi | Dialect::Compatible) {
            return Err(Error::InvalidRequest(format!(
                "`{k}` is OpenAI's own, and {} does not take it; leave it out for this model",
                dialect.name()
            )));
        }
        body.insert(k.to_owned(), v.clone());
    }
    // Its cache hints, for OpenAI alone.
    if dialect == Dialect::OpenAi {
        for (k, v) in req.provider_hints.fields(NAMESPACE) {
            body.insert(k.to_owned(), v.clone());
        }
    }
    for (k, v) in &req.extra {
        body.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(body))
}

/// The cache breakpoint `marks` (by part index) put on part `i`, if any.
fn breakpoint(marks: Option<&Value>, i: usize) -> Option<&Value> {
    marks?.get(i.to_string())
}

/// The system message as text parts with the client's cache breakpoints, when the system
/// prompt came from an Anthropic client's blocks unchanged.
fn mark_system(req: &Request, messages: &mut [Value]) {
    let Some(Value::Array(blocks)) = req.provider_hints.get(ANTHROPIC, "system") else {
        return;
    };
    let joined = blocks
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n\n");
    let Some(first) = messages.first_mut().filter(|m| m["role"] == "system") else {
        return;
    };
    let Some(text) = first["content"].as_str() else {
        return;
    };
    if req.system.as_deref() != Some(joined.as_str()) || !text.starts_with(&joined) {
        return;
    }
    let mut parts: Vec<Value> = blocks
        .iter()
        .map(|b| {
            let mut part = json!({"type": "text", "text": b["text"]});
            if let Some(c) = b.get("cache_control") {
                part["cache_control"] = c.clone();
            }
            part
        })
        .collect();
    // System messages folded in after it.
    let rest = text[joined.len()..].trim_start_matches("\n\n");
    if !rest.is_empty() {
        parts.push(json!({"type": "text", "text": rest}));
    }
    first["content"] = Value::Array(parts);
}

fn encode_message(m: &Message, marks: Option<&Value>, out: &mut Vec<Value>) -> Result<(), Error> {
    // Tool results become one `tool` message each, whatever message carried them. A tool
    // message holds text alone: what else a result holds (an image, a PDF) follows them in
    // a user message of its own, which the tool message points to.
    let mut shown = Vec::new();
    for (i, p) in m.parts.iter().enumerate() {
        if let Part::ToolResult(r) = p {
            let mut texts = Vec::new();
            for c in &r.content {
                match c {
                    Part::Text { text } => texts.push(text.clone()),
                    Part::Document(d) if d.as_text().is_some() => texts.extend(d.as_text()),
                    other => {
                        texts.push("[shown in the next message]".into());
                        shown.push(user_part(other)?);
                    }
                }
            }
            let content = match breakpoint(marks, i) {
                Some(c) => json!([{"type": "text", "text": texts.concat(), "cache_control": c}]),
                None => json!(texts.concat()),
            };
            out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": content}));
        }
    }
    if !shown.is_empty() {
        out.push(json!({"role": "user", "content": shown}));
    }
    match m.role {
        Role::Tool => Ok(()),
        Role::System => {
            out.push(json!({"role": "system", "content": m.text()}));
            Ok(())
        }
        Role::User => {
            let content: Vec<(usize, &Part)> = m
                .parts
                .iter()
                .enumerate()
                .filter(|(_, p)| {
                    matches!(
                        p,
                        Part::Text { .. } | Part::Image { .. } | Part::Document(_)
                    )
                })
                .collect();
            if content.is_empty() {
                return Ok(());
            }
            let marked = content.iter().any(|(i, _)| breakpoint(marks, *i).is_some());
            let value = match content.as_slice() {
                [(_, Part::Text { text })] if !marked => json!(text),
                parts => Value::Array(
                    parts
                        .iter()
                        .map(|(i, p)| {
                            let mut part = user_part(p)?;
                            if let (Some(c), Part::Text { .. }) = (breakpoint(marks, *i), p) {
                                part["cache_control"] = c.clone();
                            }
                            Ok(part)
                        })
                        .collect::<Result<_, Error>>()?,
                ),
            };
            out.push(json!({"role": "user", "content": value}));
            Ok(())
        }
        Role::Assistant => {
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            let text = m.text();
            let calls: Vec<Value> = m
                .tool_calls()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            let refusal: String = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Refusal { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let details: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::Reasoning(r) => r.metadata.get(NAMESPACE, "reasoning_details"),
                    _ => None,
                })
                .filter_map(Value::as_array)
                .flatten()
                .cloned()
                .collect();
            let content = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            msg.insert("content".into(), content);
            if !refusal.is_empty() {
                msg.insert("refusal".into(), json!(refusal));
            }
            if !calls.is_empty() {
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            if !details.is_empty() {
                msg.insert("reasoning_details".into(), Value::Array(details));
            }
            if text.is_empty() && calls_or_refusal_empty(&msg) {
                return Ok(());
            }
            out.push(Value::Object(msg));
            Ok(())
        }
    }
}

fn calls_or_refusal_empty(msg: &Map<String, Value>) -> bool {
    !msg.contains_key("tool_calls") && !msg.contains_key("refusal")
}

fn user_part(p: &Part) -> Result<Value, Error> {
    Ok(match p {
        Part::Text { text } => json!({"type": "text", "text": text}),
        Part::Document(d) => match &d.source {
            DocumentSource::Text { .. } => json!({"type": "text", "text": d.as_text()}),
            DocumentSource::Base64 { media_type, data } => json!({"type": "file", "file": {
                "filename": d.title.clone().unwrap_or_else(|| "document".into()),
                "file_data": format!("data:{media_type};base64,{data}")}}),
            DocumentSource::Url { .. } => {
                return Err(Error::InvalidRequest(
                    "Chat Completions takes documents inline only, not at a URL".into(),
                ));
            }
        },
        Part::Image { source, detail } => {
            let url = match source {
                ImageSource::Url { url } => url.clone(),
                ImageSource::Base64 { media_type, data } => {
                    format!("data:{media_type};base64,{data}")
                }
            };
            let mut image = Map::new();
            image.insert("url".into(), json!(url));
            if let Some(d) = detail {
                image.insert("detail".into(), json!(d));
            }
            json!({"type": "image_url", "image_url": image})
        }
        _ => {
            return Err(Error::InvalidRequest(
                "Chat Completions cannot carry a part of this kind in a message".into(),
            ));
        }
    })
}
