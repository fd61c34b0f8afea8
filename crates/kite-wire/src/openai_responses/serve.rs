//! Responses the other way round, for a server that speaks it to its clients: a client's
//! stateless `POST /v1/responses` decoded into a kite [`Request`], and kite's answer encoded
//! as a whole `response` object or as the stream events ([`EventEncoder`]).
//!
//! Only stateless requests are served: the client sends the whole conversation in `input`
//! (messages, `function_call` and `function_call_output` items, and back the `reasoning`
//! items it was given). `previous_response_id` and `conversation`, which name what the
//! server would have stored, are refused; `store` is taken and left (nothing is stored).
//! Only function tools are served.
//!
//! An answer's parts become output items in order: a text (or refusal) part a `message`
//! item, reasoning a `reasoning` item, a tool call a `function_call` item. Item ids are made from the response id and the item's place, so
//! the streamed items and the final response name them alike.

mod events;
#[cfg(test)]
mod tests;

pub use crate::openai_chat::serve::error_body;
pub use events::EventEncoder;

use super::NAMESPACE;
mod fields;

use crate::client::{Fields, check, flag, known, number, shown, tokens};
use fields::{TAKEN, UNSERVED};
use kite_core::{
    Error, FinishReason, ImageSource, Message, Metadata, Part, Reasoning, ReasoningConfig, Request,
    Response, ResponseFormat, Role, ToolCall, ToolChoice, ToolResult, ToolSpec, Usage,
};
use serde_json::{Value, json};

/// A client's request, and whether it wants a stream.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The request, for any kite model.
    pub request: Request,
    /// `stream: true`.
    pub stream: bool,
}

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Decodes a client's `POST /v1/responses` body: every field read, refused, or (`store`,
/// cache hints) taken and left; see `client.rs`.
pub fn decode_request(body: &[u8]) -> Result<ClientRequest, Error> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let f = Fields::of(&v)?;
    for stored in ["previous_response_id", "conversation"] {
        if f.get(stored).is_some_and(|x| x != "") {
            return Err(bad(format!(
                "`{stored}` is not supported: this gateway keeps no stored responses; \
                 send the whole conversation in `input`"
            )));
        }
    }
    f.only("Responses", TAKEN, UNSERVED)?;
    let model = f
        .string("model")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("`model` is missing"))?;
    let mut request = Request::new(model);
    let mut system: Vec<String> = f
        .string("instructions")?
        .map(str::to_owned)
        .into_iter()
        .collect();
    match f.get("input") {
        Some(Value::String(s)) => request.messages.push(Message::user(s.clone())),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                decode_item(item, &mut request.messages, &mut system)
                    .map_err(|e| bad(format!("input[{i}]: {e}")))?;
            }
        }
        _ => return Err(bad("`input` must be text or an array of items")),
    }
    system.retain(|s| !s.is_empty());
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
        Some(c) => {
            if str_of(c, "type") == Some("function") {
                known(c, "`tool_choice`", fields::CHOICE).map_err(bad)?;
            }
            match (str_of(c, "type"), str_of(c, "name")) {
                (Some("function"), Some(name)) => Some(ToolChoice::Tool(name.to_owned())),
                (Some("function"), None) => return Err(bad("`tool_choice.name` is missing")),
                (other, _) => {
                    return Err(bad(format!(
                        "a `tool_choice` of type {} is not served; give `auto`, `none`, \
                         `required` or a function",
                        shown(other)
                    )));
                }
            }
        }
    };
    request.parallel_tool_calls = flag("parallel_tool_calls", f.get("parallel_tool_calls"))?;
    request.temperature = number("temperature", f.get("temperature"), 0.0..=2.0)?;
    request.top_p = number("top_p", f.get("top_p"), 0.0..=1.0)?;
    request.max_tokens = tokens("max_output_tokens", f.get("max_output_tokens"))?;
    request.user = f
        .string("safety_identifier")?
        .or(f.string("user")?)
        .map(str::to_owned);
    if let Some(r) = f.get("reasoning") {
        let r = Fields::of(r).map_err(|_| bad("`reasoning` must be an object"))?;
        r.only(
            "Responses `reasoning`",
            &["effort", "summary", "generate_summary"],
            &[],
        )?;
        let config = ReasoningConfig {
            effort: r.string("effort")?.map(str::to_owned),
            summary: r
                .string("summary")?
                .or(r.string("generate_summary")?)
                .map(str::to_owned),
            ..ReasoningConfig::default()
        };
        request.reasoning = (config != ReasoningConfig::default()).then_some(config);
    }
    if let Some(text) = f.get("text") {
        let text = Fields::of(text).map_err(|_| bad("`text` must be an object"))?;
        text.only("Responses `text`", &["format", "verbosity"], &[])?;
        request.response_format = match text.get("format") {
            None => None,
            Some(format) => Some(decode_format(format)?),
        };
        request.verbosity = text
            .one_of("verbosity", &["low", "medium", "high"])?
            .map(str::to_owned);
    }
    // Taken and left: the gateway keeps nothing whatever `store` says (what would use it,
    // `previous_response_id`, is refused), and cache hints do not change the answer.
    flag("store", f.get("store"))?;
    // The usage always comes, in `response.completed`.
    f.include_usage()?;
    f.string("prompt_cache_key")?;
    f.string("prompt_cache_retention")?;
    check(&request, "input")?;
    Ok(ClientRequest {
        request,
        stream: flag("stream", f.get("stream"))?.unwrap_or(false),
    })
}

fn decode_format(f: &Value) -> Result<ResponseFormat, Error> {
    known(f, "`text.format`", fields::FORMAT).map_err(bad)?;
    match str_of(f, "type") {
        Some("text") => Ok(ResponseFormat::Text),
        Some("json_object") => Ok(ResponseFormat::JsonObject),
        Some("json_schema") => Ok(ResponseFormat::JsonSchema {
            name: str_of(f, "name").unwrap_or("answer").to_owned(),
            schema: f
                .get("schema")
                .cloned()
                .ok_or_else(|| bad("`text.format.schema` is missing"))?,
            description: str_of(f, "description").map(str::to_owned),
            strict: f.get("strict").and_then(Value::as_bool),
        }),
        _ => Err(bad(
            "`text.format.type` must be text, json_object or json_schema",
        )),
    }
}

fn decode_tool(t: &Value) -> Result<ToolSpec, String> {
    match str_of(t, "type") {
        Some("function") => known(t, "a function tool", fields::TOOL)?,
        other => {
            return Err(format!(
                "tools of type {} are not served; only function tools are",
                shown(other)
            ));
        }
    }
    let name = str_of(t, "name").ok_or("a function tool needs a name")?;
    let mut spec = ToolSpec::new(
        name,
        str_of(t, "description").unwrap_or_default(),
        match t.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p) => p.clone(),
        },
    );
    spec.strict = t.get("strict").and_then(Value::as_bool);
    Ok(spec)
}

/// The parts of the assistant turn that `out` ends with, begun if it does not.
fn assistant(out: &mut Vec<Message>) -> &mut Vec<Part> {
    if out.last().is_none_or(|m| m.role != Role::Assistant) {
        out.push(Message::new(Role::Assistant, Vec::new()));
    }
    &mut out.last_mut().expect("just pushed").parts
}

fn decode_item(
    item: &Value,
    out: &mut Vec<Message>,
    system: &mut Vec<String>,
) -> Result<(), String> {
    match str_of(item, "type") {
        None | Some("message") => {
            known(item, "a message", fields::MESSAGE)?;
            decode_message(item, out, system)
        }
        Some("function_call") => {
            known(item, "a function_call", fields::FUNCTION_CALL)?;
            let id = str_of(item, "call_id").ok_or("a function_call needs a call_id")?;
            let name = str_of(item, "name").ok_or("a function_call needs a name")?;
            let arguments = match item.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => "{}".to_owned(),
                Some(other) => other.to_string(),
            };
            let mut call = ToolCall::new(id, name, arguments);
            if let Some(item_id) = str_of(item, "id") {
                call.metadata = Metadata::with(NAMESPACE, "item_id", json!(item_id));
            }
            assistant(out).push(Part::ToolCall(call));
            Ok(())
        }
        Some("function_call_output") => {
            known(item, "a function_call_output", fields::FUNCTION_OUTPUT)?;
            let id = str_of(item, "call_id").ok_or("a function_call_output needs a call_id")?;
            let mut result = ToolResult::text(id, "");
            result.content = match item.get("output") {
                Some(Value::String(s)) => vec![Part::text(s.clone())],
                Some(Value::Array(parts)) => {
                    parts.iter().map(content_part).collect::<Result<_, _>>()?
                }
                _ => return Err("a function_call_output needs an output".into()),
            };
            out.push(Message::tool_result(result));
            Ok(())
        }
        Some("reasoning") => {
            known(item, "a reasoning item", fields::REASONING)?;
            let text: Vec<&str> = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| str_of(s, "text"))
                .collect();
            // Only encrypted reasoning can go back to a stateless upstream, and only whole.
            let metadata = match item.get("encrypted_content") {
                Some(Value::String(_)) => Metadata::with(NAMESPACE, "item", item.clone()),
                _ => Metadata::new(),
            };
            let text = text.join("\n\n");
            if !text.is_empty() || !metadata.is_empty() {
                assistant(out).push(Part::Reasoning(Reasoning { text, metadata }));
            }
            Ok(())
        }
        Some("item_reference") => Err("item references are not served: this gateway keeps no \
                                       stored items; send the items themselves"
            .into()),
        Some(other) => Err(format!("items of type `{other}` are not served")),
    }
}

fn decode_message(
    m: &Value,
    out: &mut Vec<Message>,
    system: &mut Vec<String>,
) -> Result<(), String> {
    let parts = match m.get("content") {
        Some(Value::String(s)) => vec![Part::text(s.clone())],
        Some(Value::Array(parts)) => parts.iter().map(content_part).collect::<Result<_, _>>()?,
        _ => return Err("`content` must be text or an array of parts".into()),
    };
    match str_of(m, "role") {
        Some("system" | "developer") => system.push(
            parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => Ok(text.as_str()),
                    _ => Err("a system message takes text only"),
                })
                .collect::<Result<Vec<_>, _>>()?
                .join(""),
        ),
        Some("user") => out.push(Message::new(Role::User, parts)),
        Some("assistant") => assistant(out).extend(parts),
        other => {
            return Err(format!(
                "the role {} is not one of system, developer, user or assistant",
                shown(other)
            ));
        }
    }
    Ok(())
}

fn content_part(p: &Value) -> Result<Part, String> {
    match str_of(p, "type") {
        Some("input_text" | "output_text" | "text") => {
            known(p, "a text part", fields::TEXT_PART)?;
            Ok(Part::text(str_of(p, "text").unwrap_or_default()))
        }
        Some("refusal") => {
            known(p, "a refusal part", fields::REFUSAL_PART)?;
            Ok(Part::Refusal {
                text: str_of(p, "refusal").unwrap_or_default().to_owned(),
            })
        }
        Some("input_image") => {
            if p.get("file_id").is_some_and(|f| !f.is_null()) {
                return Err(
                    "an input_image by `file_id` is not served: this gateway keeps \
                            no stored files; give `image_url`"
                        .into(),
                );
            }
            known(p, "an image part", fields::IMAGE_PART)?;
            let url = str_of(p, "image_url")
                .ok_or("an input_image needs an image_url (stored files are not served)")?;
            let source = match url
                .strip_prefix("data:")
                .and_then(|d| d.split_once(','))
                .and_then(|(head, data)| Some((head.strip_suffix(";base64")?, data)))
            {
                Some((media_type, data)) => ImageSource::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                },
                None => ImageSource::Url {
                    url: url.to_owned(),
                },
            };
            let detail = str_of(p, "detail")
                .filter(|d| *d != "auto")
                .map(str::to_owned);
            Ok(Part::Image { source, detail })
        }
        other => Err(format!(
            "content parts of type {} are not served",
            shown(other)
        )),
    }
}

/// `incomplete_details.reason` for an answer that ended with `reason`, if it is cut short.
fn incomplete_reason(reason: &FinishReason) -> Option<&'static str> {
    match reason {
        FinishReason::Length => Some("max_output_tokens"),
        FinishReason::ContentFilter => Some("content_filter"),
        _ => None,
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens.saturating_add(u.output_tokens),
    })
}

/// The id of output item `index` of response `id`: `msg_…`, `fc_…`, `rs_…` by `prefix`.
fn item_id(prefix: &str, id: &str, index: usize) -> String {
    format!(
        "{prefix}_{}_{index}",
        id.strip_prefix("resp_").unwrap_or(id)
    )
}

fn text_part(refusal: bool, text: &str) -> Value {
    if refusal {
        json!({"type": "refusal", "refusal": text})
    } else {
        json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text})
    }
}

fn message_item(id: &str, status: &str, content: Vec<Value>) -> Value {
    json!({"id": id, "type": "message", "status": status, "content": content, "role": "assistant"})
}

fn call_item(id: &str, status: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function_call", "status": status, "arguments": arguments,
        "call_id": call_id, "name": name})
}

/// A reasoning item: the upstream's own when it came from Responses (so its encrypted
/// content can come back to it), else one with `text` as its summary.
fn reasoning_item(id: &str, text: &str, metadata: &Metadata) -> Value {
    if let Some(item @ Value::Object(_)) = metadata.get(NAMESPACE, "item") {
        return item.clone();
    }
    let summary: Vec<Value> = (!text.is_empty())
        .then(|| json!({"type": "summary_text", "text": text}))
        .into_iter()
        .collect();
    json!({"id": id, "type": "reasoning", "summary": summary})
}

/// The `response` object around `output`, as a whole answer and `response.completed` have
/// it; `reason` is `None` while it is in progress.
fn response_json(
    id: &str,
    model: &str,
    created: u64,
    output: Vec<Value>,
    reason: Option<&FinishReason>,
    usage: Option<&Usage>,
) -> Value {
    let cut = reason.and_then(incomplete_reason);
    let status = match (reason, cut) {
        (None, _) => "in_progress",
        (Some(_), Some(_)) => "incomplete",
        (Some(_), None) => "completed",
    };
    json!({
        "id": id,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": Value::Null,
        "incomplete_details": cut.map(|r| json!({"reason": r})),
        "instructions": Value::Null,
        "model": model,
        "output": output,
        "usage": usage.map(usage_json),
        "metadata": {},
    })
}

/// A whole `response` object for `response`, answering as `model`.
pub fn encode_response(response: &Response, id: &str, model: &str, created: u64) -> Value {
    let mut output: Vec<Value> = Vec::new();
    // Messages of an answer cut short are incomplete themselves.
    let said = match incomplete_reason(&response.finish_reason) {
        Some(_) => "incomplete",
        None => "completed",
    };
    for p in &response.message.parts {
        let n = output.len();
        output.push(match p {
            Part::Text { text } => {
                message_item(&item_id("msg", id, n), said, vec![text_part(false, text)])
            }
            Part::Refusal { text } => {
                message_item(&item_id("msg", id, n), said, vec![text_part(true, text)])
            }
            Part::Reasoning(r) => reasoning_item(&item_id("rs", id, n), &r.text, &r.metadata),
            Part::ToolCall(c) => call_item(
                &item_id("fc", id, n),
                "completed",
                &c.id,
                &c.name,
                &c.arguments,
            ),
            _ => continue,
        });
    }
    let usage = response.usage;
    response_json(
        id,
        model,
        created,
        output,
        Some(&response.finish_reason),
        Some(&usage),
    )
}
