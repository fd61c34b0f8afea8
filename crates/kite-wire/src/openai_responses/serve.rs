//! Responses the other way round, for a server that speaks it to its clients: a client's
//! stateless `POST /v1/responses` decoded into a kite [`Request`], and kite's answer encoded
//! as a whole `response` object or as the stream events ([`EventEncoder`]).
//!
//! Only stateless requests are served: the client sends the whole conversation in `input`
//! (messages, calls and their outputs, and back the `reasoning` items it was given; see
//! `serve/input.rs`). `previous_response_id` and `conversation`, which name what the server
//! would have stored, are refused; `store` is taken and left (nothing is stored). The
//! client's tools (functions, namespaces, custom, `local_shell`, `apply_patch`) become
//! functions, and OpenAI's hosted web search is set aside for the gateway's policy; see
//! `serve/tools.rs`.
//!
//! An answer's parts become output items in order: a text (or refusal) part a `message`
//! item, reasoning a `reasoning` item, a tool call the item its tool asks for
//! (`function_call`, `custom_tool_call`, `local_shell_call`, `apply_patch_call`). Item ids
//! are made from the response id and the item's place, so the streamed items and the
//! final response name them alike.

mod events;
mod input;
#[cfg(test)]
mod tests;
mod tools;

pub use crate::openai_chat::serve::error_body;
pub use events::EventEncoder;
pub use tools::ClientTools;

use super::NAMESPACE;
mod fields;

use crate::client::{Fields, check, flag, known, number, shown, tokens};
use fields::{PASSED, TAKEN, UNSERVED};
use input::Input;
use kite_core::{
    Error, FinishReason, Message, Metadata, Part, ReasoningConfig, Request, Response,
    ResponseFormat, ToolChoice, Usage,
};
use serde_json::{Value, json};
use tools::Kind;

/// A client's request, and whether it wants a stream.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// The request, for any kite model.
    pub request: Request,
    /// `stream: true`.
    pub stream: bool,
    /// The client's tools, by the names the model knows them by: give them to the
    /// encoder, so calls go back in the client's terms.
    pub tools: ClientTools,
    /// The hosted tools (`web_search`, ...) the client gave, which only OpenAI can run: the
    /// gateway's policy passes them on or refuses them.
    pub hosted: Vec<Value>,
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
    decode_value(&v)
}

/// Decodes a client's `POST /v1/responses` body already read as JSON (by a server that
/// took some fields out first), as [`decode_request`] does.
pub fn decode_value(v: &Value) -> Result<ClientRequest, Error> {
    let f = Fields::of(v)?;
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
    let mut tools = ClientTools::default();
    let mut hosted = Vec::new();
    for (i, t) in f.array("tools")?.iter().enumerate() {
        tools
            .add(None, t, &mut request.tools, &mut hosted)
            .map_err(|e| bad(format!("tools[{i}]: {e}")))?;
    }
    let mut input = Input {
        messages: &mut request.messages,
        system: &mut system,
        tools: &mut tools,
        specs: &mut request.tools,
        hosted: &mut hosted,
    };
    match f.get("input") {
        Some(Value::String(s)) => input.messages.push(Message::user(s.clone())),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                input
                    .item(item)
                    .map_err(|e| bad(format!("input[{i}]: {e}")))?;
            }
        }
        _ => return Err(bad("`input` must be text or an array of items")),
    }
    system.retain(|s| !s.is_empty());
    if !system.is_empty() {
        request.system = Some(system.join("\n\n"));
    }
    request.tool_choice = match f.get("tool_choice") {
        None => None,
        Some(Value::String(s)) if s == "auto" => Some(ToolChoice::Auto),
        Some(Value::String(s)) if s == "none" => Some(ToolChoice::None),
        Some(Value::String(s)) if s == "required" => Some(ToolChoice::Required),
        Some(c) => {
            if matches!(str_of(c, "type"), Some("function" | "custom")) {
                known(c, "`tool_choice`", fields::CHOICE).map_err(bad)?;
            }
            match (str_of(c, "type"), str_of(c, "name")) {
                (Some("function"), Some(name)) => Some(ToolChoice::Tool(tools.flat_name(
                    str_of(c, "namespace"),
                    name,
                    Kind::Function,
                ))),
                (Some("custom"), Some(name)) => Some(ToolChoice::Tool(tools.flat_name(
                    str_of(c, "namespace"),
                    name,
                    Kind::Custom,
                ))),
                (Some("function" | "custom"), None) => {
                    return Err(bad("`tool_choice.name` is missing"));
                }
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
            &["effort", "summary", "generate_summary", "context"],
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
    f.pass_on(PASSED, NAMESPACE, &mut request)?;
    f.cache_hints(NAMESPACE, &mut request)?;
    check(&request, "input")?;
    Ok(ClientRequest {
        request,
        stream: flag("stream", f.get("stream"))?.unwrap_or(false),
        tools,
        hosted,
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

/// A whole `response` object for `response`, answering as `model`, its calls in the terms
/// of the client's `tools`.
pub fn encode_response(
    response: &Response,
    id: &str,
    model: &str,
    created: u64,
    tools: &ClientTools,
) -> Value {
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
            Part::ToolCall(c) => tools.call_item(
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
