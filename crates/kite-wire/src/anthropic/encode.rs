//! Request encoding.

use super::{NAMESPACE, OWN_SETTINGS};
use crate::codec::{Setting, refuse_foreign, refuse_lacking};
use kite_core::{
    Document, DocumentSource, Error, ImageSource, Message, Part, Request, ResponseFormat, Role,
    ToolChoice,
};
use serde_json::{Map, Value, json};

/// `max_tokens` when the request sets none: Anthropic requires one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The `anthropic-version` header value this codec speaks.
pub const VERSION: &str = "2023-06-01";

/// The JSON body of a Messages request. Thinking blocks from earlier answers go back with
/// their signatures (and redacted thinking with its data) exactly as received.
pub fn encode_request(req: &Request, stream: bool) -> Result<Vec<u8>, Error> {
    if req.model.is_empty() {
        return Err(Error::InvalidRequest("no model named".into()));
    }
    refuse_foreign(req, NAMESPACE, "Anthropic Messages")?;
    if req.tools.iter().any(|t| t.name == ANSWER_TOOL) {
        return Err(Error::InvalidRequest(format!(
            "the tool name `{ANSWER_TOOL}` is kept for structured answers; name the tool \
             otherwise"
        )));
    }
    refuse_lacking(
        req,
        "Anthropic Messages",
        &[
            Setting::Seed,
            Setting::FrequencyPenalty,
            Setting::PresencePenalty,
        ],
    )?;
    let mut system = system_blocks(req);
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = message(m)?;
        if blocks.is_empty() {
            continue;
        }
        // A system message joins the system prompt, in order.
        if m.role == Role::System {
            system.extend(blocks);
            continue;
        }
        // Consecutive messages of one role are one turn to Anthropic.
        match messages.last_mut() {
            Some((r, content)) if *r == role => content.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    // Thinking counts against max_tokens, which must exceed its budget. A turn that goes on
    // from tool calls made without Anthropic's own thinking (another provider's, or none
    // kept) cannot think: Anthropic refuses such a turn with thinking on.
    let can_think = !unsigned_tool_turn(&messages);
    let budget = req
        .reasoning
        .as_ref()
        .and_then(|r| r.budget())
        .filter(|_| can_think);
    body.insert(
        "max_tokens".into(),
        json!(
            req.max_tokens
                .unwrap_or_else(|| DEFAULT_MAX_TOKENS.saturating_add(budget.unwrap_or(0)))
        ),
    );
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    // What a client of Anthropic's own API asked for goes back as it came.
    for name in OWN_SETTINGS {
        if let Some(v) = req.provider_hints.get(NAMESPACE, name) {
            if name != "thinking" || can_think {
                body.insert(name.into(), v.clone());
            }
        }
    }
    body.insert(
        "messages".into(),
        Value::Array(
            messages
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        ),
    );
    // Plain text, unless a block holds a cache breakpoint.
    if system.iter().any(|b| b.get("cache_control").is_some()) {
        body.insert("system".into(), Value::Array(system));
    } else if !system.is_empty() {
        let texts: Vec<&str> = system.iter().filter_map(|b| b["text"].as_str()).collect();
        body.insert("system".into(), json!(texts.join("\n\n")));
    }
    let mut tools = tool_blocks(req);
    // A JSON answer is asked for as a call of a tool whose input is the answer (the
    // decoders turn it back into text), unless the client asked Anthropic's own way.
    let answer_tool = answer_tool(req, budget.is_some());
    let mut choice = req.tool_choice.clone();
    if let Some((tool, forced)) = answer_tool {
        tools.push(tool);
        // Some call must be made, and with no tool of the client's to call (none offered,
        // or none allowed), the answer's; a tool the client forces keeps its turn first.
        choice = match (forced, &req.tool_choice) {
            (false, _) => Some(ToolChoice::Auto),
            (true, Some(ToolChoice::Tool(name))) => Some(ToolChoice::Tool(name.clone())),
            (true, Some(ToolChoice::None)) => Some(ToolChoice::Tool(ANSWER_TOOL.into())),
            (true, _) if req.tools.is_empty() => Some(ToolChoice::Tool(ANSWER_TOOL.into())),
            (true, _) => Some(ToolChoice::Required),
        };
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    // One call at a time is said through the tool choice, so an unset one becomes `auto`.
    let choice = match (choice, req.parallel_tool_calls) {
        (None, Some(false)) if !req.tools.is_empty() => Some(ToolChoice::Auto),
        (choice, _) => choice,
    };
    if let Some(choice) = &choice {
        let mut c = match choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        if req.parallel_tool_calls == Some(false) && !matches!(choice, ToolChoice::None) {
            c["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), c);
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(k) = req.top_k {
        body.insert("top_k".into(), json!(k));
    }
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    if let Some(user) = &req.user {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    for (k, v) in &req.extra {
        body.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(body)).map_err(|e| Error::InvalidRequest(e.to_string()))
}

/// Whether the conversation ends in tool results answering an assistant turn that made
/// its calls without a thinking block: one that cannot go on with thinking.
fn unsigned_tool_turn(messages: &[(&'static str, Vec<Value>)]) -> bool {
    let Some(at) = messages.iter().rposition(|(role, _)| *role == "assistant") else {
        return false;
    };
    let last_assistant = &messages[at].1;
    let only_results = messages[at + 1..]
        .iter()
        .all(|(_, blocks)| blocks.iter().all(|b| b["type"] == "tool_result"));
    let calls = only_results && last_assistant.iter().any(|b| b["type"] == "tool_use");
    let thought = last_assistant
        .iter()
        .any(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
    calls && !thought
}

/// The tool whose input is a JSON answer (see [`answer_tool`]).
pub(crate) const ANSWER_TOOL: &str = "kite_structured_answer";

/// The tool a JSON answer is given through, for a request that asks for one in kite's
/// terms, and whether its call can be forced (not while the model thinks, which Anthropic
/// does not allow with a forced call: the tool is then only offered, with `auto`).
fn answer_tool(req: &Request, thinks: bool) -> Option<(Value, bool)> {
    let native = req
        .provider_hints
        .get(NAMESPACE, "output_config")
        .is_some_and(|c| c.get("format").is_some_and(|f| !f.is_null()));
    let (schema, description) = match &req.response_format {
        _ if native => return None,
        Some(ResponseFormat::JsonSchema {
            schema,
            description,
            ..
        }) => (schema.clone(), description.clone()),
        Some(ResponseFormat::JsonObject) => (json!({"type": "object"}), None),
        _ => return None,
    };
    let thinks = thinks
        || req
            .provider_hints
            .get(NAMESPACE, "thinking")
            .is_some_and(|t| t.get("type").is_some_and(|k| k != "disabled"));
    let description = description.unwrap_or_else(|| {
        "Give your whole answer by calling this tool: its input is the answer.".into()
    });
    let tool = json!({"name": ANSWER_TOOL, "description": description, "input_schema": schema});
    Some((tool, !thinks))
}

/// The tools: a client's own (with what only Anthropic reads of them) when they came
/// through a gateway unchanged, else each spec's name, description and schema.
fn tool_blocks(req: &Request) -> Vec<Value> {
    if let Some(Value::Array(given)) = req.provider_hints.get(NAMESPACE, "tools") {
        let same = given.len() == req.tools.len()
            && given
                .iter()
                .zip(&req.tools)
                .all(|(g, t)| g["name"] == t.name.as_str());
        if same {
            return given.clone();
        }
    }
    req.tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect()
}

/// The system prompt as text blocks: the client's own blocks (cache breakpoints and all)
/// when they came through a gateway unchanged, else the request's text as one.
fn system_blocks(req: &Request) -> Vec<Value> {
    let Some(text) = &req.system else {
        return Vec::new();
    };
    if let Some(Value::Array(blocks)) = req.provider_hints.get(NAMESPACE, "system") {
        let same = blocks
            .iter()
            .map(|b| b.get("text").and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n\n");
        if same == *text {
            return blocks.clone();
        }
    }
    vec![json!({"type": "text", "text": text})]
}

fn message(m: &Message) -> Result<(&'static str, Vec<Value>), Error> {
    let role = if m.role == Role::Assistant {
        "assistant"
    } else {
        "user"
    };
    let mut blocks = Vec::new();
    let breakpoints = m.metadata.get(NAMESPACE, "cache_control");
    for (i, p) in m.parts.iter().enumerate() {
        let before = blocks.len();
        match p {
            Part::Text { text } | Part::Refusal { text } => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            Part::Image { source, .. } => blocks.push(image(source)),
            Part::Document(d) => blocks.push(document(d)),
            Part::ToolCall(c) => {
                let input = c.parse_arguments().unwrap_or_else(|_| json!({}));
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            Part::ToolResult(r) => {
                let content: Vec<Value> = r
                    .content
                    .iter()
                    .map(|c| match c {
                        Part::Image { source, .. } => image(source),
                        Part::Document(d) => document(d),
                        other => json!({"type": "text", "text": match other {
                            Part::Text { text } => text.as_str(),
                            _ => "",
                        }}),
                    })
                    .collect();
                let content = match content.as_slice() {
                    [one] if one["type"] == "text" => one["text"].clone(),
                    _ => Value::Array(content),
                };
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": r.call_id, "content": content});
                if r.is_error {
                    block["is_error"] = json!(true);
                }
                blocks.push(block);
            }
            Part::Reasoning(r) => {
                // Only Anthropic's own reasoning can go back to it.
                if let Some(data) = r.metadata.get(NAMESPACE, "redacted_data") {
                    blocks.push(json!({"type": "redacted_thinking", "data": data}));
                } else if let Some(sig) = r.metadata.get(NAMESPACE, "signature") {
                    blocks.push(json!({"type": "thinking", "thinking": r.text, "signature": sig}));
                }
            }
            _ => {
                return Err(Error::InvalidRequest(
                    "Anthropic Messages cannot carry a part of this kind".into(),
                ));
            }
        }
        if let (Some(cache), Some(block)) = (
            breakpoints.and_then(|b| b.get(i.to_string())),
            blocks.get_mut(before),
        ) {
            block["cache_control"] = cache.clone();
        }
    }
    Ok((role, blocks))
}

fn document(d: &Document) -> Value {
    let source = match &d.source {
        DocumentSource::Url { url } => json!({"type": "url", "url": url}),
        DocumentSource::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        DocumentSource::Text { text } => {
            json!({"type": "text", "media_type": "text/plain", "data": text})
        }
    };
    let mut block = json!({"type": "document", "source": source});
    if let Some(title) = &d.title {
        block["title"] = json!(title);
    }
    for key in ["context", "citations"] {
        if let Some(v) = d.metadata.get(NAMESPACE, key) {
            block[key] = v.clone();
        }
    }
    block
}

fn image(source: &ImageSource) -> Value {
    match source {
        ImageSource::Url { url } => json!({"type": "image", "source": {"type": "url", "url": url}}),
        ImageSource::Base64 { media_type, data } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
    }
}

/// The body of a `count_tokens` request for `req`: what the model would read, without
/// what only shapes the answer (its length, sampling, stop sequences), which that endpoint
/// refuses.
pub(super) fn encode_count(req: &Request) -> Result<Vec<u8>, Error> {
    let mut body: Map<String, Value> = serde_json::from_slice(&encode_request(req, false)?)
        .map_err(|e| Error::InvalidRequest(e.to_string()))?;
    for answer_only in [
        "max_tokens",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
    ] {
        body.remove(answer_only);
    }
    serde_json::to_vec(&body).map_err(|e| Error::InvalidRequest(e.to_string()))
}
