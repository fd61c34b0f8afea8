//! Chat Completions the other way round, for a server that speaks it to its clients: a
//! client's request decoded into a kite [`Request`], and kite's answer encoded as a whole
//! completion or as `chat.completion.chunk` events.

mod answer;
mod fields;

pub use answer::{ChunkEncoder, encode_response, error_body};

use crate::client::{Fields, check, flag, inline_file, known, number, shown, tokens};
use fields::{PASSED, TAKEN, UNSERVED};
use kite_core::{
    Error, Message, Part, Request, ResponseFormat, Role, ToolCall, ToolChoice, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// A client's request: what to ask, and how it wants the answer.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The request, for any kite model.
    pub request: Request,
    /// `stream: true`.
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
}

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

/// Decodes a client's `POST /chat/completions` body: every field read, refused, or (a
/// cache hint) taken and left; see `client.rs`.
pub fn decode_request(body: &[u8]) -> Result<ClientRequest, Error> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let f = Fields::of(&v)?;
    f.only("Chat Completions", TAKEN, UNSERVED)?;
    let model = f
        .string("model")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("`model` is missing"))?;
    let mut request = Request::new(model);
    let messages = f
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("`messages` must be an array"))?;
    let mut system: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        decode_message(m, &mut request.messages, &mut system)
            .map_err(|e| bad(format!("messages[{i}]: {e}")))?;
    }
    if !system.is_empty() {
        request.system = Some(system.join("\n\n"));
    }
    for (i, t) in f.array("tools")?.iter().enumerate() {
        request
            .tools
            .push(decode_tool(t).map_err(|e| bad(format!("tools[{i}]: {e}")))?);
    }
    request.tool_choice = match f.get("tool_choice") {
        None => None,
        Some(Value::String(s)) if s == "auto" => Some(ToolChoice::Auto),
        Some(Value::String(s)) if s == "none" => Some(ToolChoice::None),
        Some(Value::String(s)) if s == "required" => Some(ToolChoice::Required),
        Some(c) => Some(decode_choice(c).map_err(bad)?),
    };
    request.parallel_tool_calls = flag("parallel_tool_calls", f.get("parallel_tool_calls"))?;
    request.temperature = number("temperature", f.get("temperature"), 0.0..=2.0)?;
    request.top_p = number("top_p", f.get("top_p"), 0.0..=1.0)?;
    // A penalty of 0 asks for nothing, and any model takes it.
    let penalty =
        |name: &str| number(name, f.get(name), -2.0..=2.0).map(|p| p.filter(|p| *p != 0.0));
    request.frequency_penalty = penalty("frequency_penalty")?;
    request.presence_penalty = penalty("presence_penalty")?;
    request.seed = f.integer("seed")?;
    // vLLM's, llama.cpp's and most compatible servers' own: kept where a provider takes it.
    request.top_k = match f.integer("top_k")? {
        Some(k) if k < 0 => return Err(bad("`top_k` must be 0 or more")),
        Some(k) => Some(u32::try_from(k).unwrap_or(u32::MAX)),
        None => None,
    };
    request.max_tokens = match f.get("max_completion_tokens") {
        Some(n) => tokens("max_completion_tokens", Some(n))?,
        None => tokens("max_tokens", f.get("max_tokens"))?,
    };
    request.stop = f.texts("stop")?;
    request.user = f
        .string("user")?
        .or(f.string("safety_identifier")?)
        .map(str::to_owned);
    request.response_format = match f.get("response_format") {
        None => None,
        Some(format) => Some(decode_format(format)?),
    };
    if let Some(effort) = f.string("reasoning_effort")? {
        request.reasoning = Some(kite_core::ReasoningConfig::effort(effort));
    }
    request.verbosity = f
        .one_of("verbosity", &["low", "medium", "high"])?
        .map(str::to_owned);
    // Cache hints: the answer is the same with or without them.
    f.pass_on(PASSED, super::NAMESPACE, &mut request)?;
    f.cache_hints(super::NAMESPACE, &mut request)?;
    check(&request, "messages")?;
    Ok(ClientRequest {
        request,
        stream: flag("stream", f.get("stream"))?.unwrap_or(false),
        include_usage: f.include_usage()?,
    })
}

/// A `tool_choice` that names a function.
fn decode_choice(c: &Value) -> Result<ToolChoice, String> {
    match c.get("type").and_then(Value::as_str) {
        Some("function") => known(c, "`tool_choice`", fields::CHOICE)?,
        other => {
            return Err(format!(
                "a `tool_choice` of type {} is not served; give `auto`, `none`, `required` \
                 or a function",
                shown(other)
            ));
        }
    }
    let f = c
        .get("function")
        .ok_or("`tool_choice.function` is missing")?;
    known(f, "`tool_choice.function`", fields::CHOSEN)?;
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .ok_or("`tool_choice.function.name` is missing")?;
    Ok(ToolChoice::Tool(name.to_owned()))
}

fn decode_format(f: &Value) -> Result<ResponseFormat, Error> {
    known(f, "`response_format`", fields::FORMAT).map_err(bad)?;
    match f.get("type").and_then(Value::as_str) {
        Some("text") => Ok(ResponseFormat::Text),
        Some("json_object") => Ok(ResponseFormat::JsonObject),
        Some("json_schema") => {
            let s = f
                .get("json_schema")
                .ok_or_else(|| bad("`response_format.json_schema` is missing"))?;
            known(s, "`response_format.json_schema`", fields::SCHEMA).map_err(bad)?;
            Ok(ResponseFormat::JsonSchema {
                name: s
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("answer")
                    .to_owned(),
                schema: s.get("schema").cloned().unwrap_or(json!({})),
                description: s
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                strict: s.get("strict").and_then(Value::as_bool),
            })
        }
        _ => Err(bad(
            "`response_format.type` must be text, json_object or json_schema",
        )),
    }
}

fn decode_tool(t: &Value) -> Result<ToolSpec, String> {
    match t.get("type").and_then(Value::as_str) {
        Some("function") | None => known(t, "a tool", fields::TOOL)?,
        other => {
            return Err(format!(
                "tools of type {} are not served; only function tools are",
                shown(other)
            ));
        }
    }
    let f = t
        .get("function")
        .ok_or("a function tool needs `function`")?;
    known(f, "a tool's function", fields::FUNCTION)?;
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool needs a name")?;
    let mut spec = ToolSpec::new(
        name,
        f.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        f.get("parameters")
            .cloned()
            .unwrap_or(json!({"type": "object", "properties": {}})),
    );
    spec.strict = f.get("strict").and_then(Value::as_bool);
    Ok(spec)
}

/// Text, or the parts of a content array.
fn content_parts(content: Option<&Value>) -> Result<Vec<Part>, String> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Part::text(s.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                Some("text") => {
                    known(p, "a text part", fields::TEXT_PART)?;
                    Ok(Part::text(
                        p.get("text").and_then(Value::as_str).unwrap_or_default(),
                    ))
                }
                Some("image_url") => {
                    known(p, "an image part", fields::IMAGE_PART)?;
                    let image = p
                        .get("image_url")
                        .ok_or("an image part needs `image_url`")?;
                    known(image, "`image_url`", fields::IMAGE_URL)?;
                    let url = image
                        .get("url")
                        .and_then(Value::as_str)
                        .ok_or("an image part needs `image_url.url`")?;
                    let mut part = Part::image_url(url);
                    if let Part::Image { detail, .. } = &mut part {
                        *detail = image
                            .get("detail")
                            .and_then(Value::as_str)
                            .filter(|d| *d != "auto")
                            .map(str::to_owned);
                    }
                    Ok(part)
                }
                Some("file") => {
                    known(p, "a file part", fields::FILE_PART)?;
                    let file = p.get("file").ok_or("a file part needs `file`")?;
                    known(file, "`file`", fields::FILE)?;
                    let text = |k: &str| file.get(k).and_then(Value::as_str);
                    inline_file(text("file_data"), file.get("file_id"), text("filename"))
                }
                other => Err(format!(
                    "content parts of type {} are not served",
                    shown(other)
                )),
            })
            .collect(),
        Some(_) => Err("`content` must be text or an array of parts".into()),
    }
}

/// The text of a message that takes text only (`who`: a system or tool message): any other
/// part is refused, not dropped.
fn text_of(content: Option<&Value>, who: &str) -> Result<String, String> {
    content_parts(content)?
        .iter()
        .map(|p| match p {
            Part::Text { text } => Ok(text.as_str()),
            _ => Err(format!("{who} takes text only")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(|texts| texts.join(""))
}

fn decode_message(
    m: &Value,
    out: &mut Vec<Message>,
    system: &mut Vec<String>,
) -> Result<(), String> {
    known(m, "a message", fields::MESSAGE)?;
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .ok_or("a message needs a role")?;
    let content = m.get("content");
    match role {
        "system" | "developer" => system.push(text_of(content, "a system message")?),
        "user" => out.push(Message::new(Role::User, content_parts(content)?)),
        "assistant" => {
            let mut parts = content_parts(content)?;
            for c in m
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                known(c, "a tool call", fields::TOOL_CALL)?;
                if let Some(f) = c.get("function") {
                    known(f, "a tool call's function", fields::CALLED)?;
                }
                let id = c
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or("a tool call needs an id")?;
                let name = c
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .ok_or("a tool call needs a function name")?;
                let args = c
                    .pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("{}");
                parts.push(Part::ToolCall(ToolCall::new(id, name, args)));
            }
            out.push(Message::new(Role::Assistant, parts));
        }
        "tool" => {
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .ok_or("a tool message needs tool_call_id")?;
            out.push(Message::tool_result(ToolResult::text(
                id,
                text_of(content, "a tool message")?,
            )));
        }
        other => {
            return Err(format!(
                "the role `{other}` is not one of system, developer, user, assistant or tool"
            ));
        }
    }
    Ok(())
}
