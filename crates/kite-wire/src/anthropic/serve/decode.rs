//! Decoding a client's `POST /v1/messages` body into a kite [`Request`].

use super::ClientRequest;
use super::fields::{self, TAKEN, UNSERVED};
use super::messages::{cache_breakpoint, decode_message, system_text};
use crate::anthropic::{NAMESPACE, OWN_SETTINGS};
use crate::client::{Fields, check, flag, known, number, shown, tokens};
use kite_core::{Error, Request, ResponseFormat, ToolChoice, ToolSpec};
use serde_json::{Value, json};

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

/// Decodes a client's `POST /v1/messages` body: every field read, refused, or (a cache
/// breakpoint) taken and left; see `client.rs`.
pub fn decode_request(body: &[u8]) -> Result<ClientRequest, Error> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    decode_value(&v)
}

/// Decodes a client's `POST /v1/messages/count_tokens` body: what a Messages request
/// takes, with no length for an answer that will not be made.
pub fn decode_count_request(body: &[u8]) -> Result<Request, Error> {
    let mut v: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        if flag("stream", o.get("stream"))? == Some(true) {
            return Err(bad("stream: a count is not streamed"));
        }
        o.remove("stream");
        o.entry("max_tokens").or_insert(json!(1));
    }
    Ok(decode_value(&v)?.request)
}

fn decode_value(v: &Value) -> Result<ClientRequest, Error> {
    let f = Fields::of(v)?;
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
        Some(Value::Array(blocks)) => {
            // The blocks themselves go to Anthropic, their cache breakpoints with them.
            hint(&mut request, "system", Value::Array(blocks.clone()));
            Some(
                blocks
                    .iter()
                    .enumerate()
                    .map(|(i, b)| system_text(b).map_err(|e| bad(format!("system.{i}: {e}"))))
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n\n"),
            )
        }
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
    output_config(f.get("output_config"), &mut request)?;
    if let Some(c) = f.get("cache_control") {
        cache_breakpoint(c).map_err(bad)?;
    }
    if f.get("context_management").is_some_and(|c| !c.is_object()) {
        return Err(bad("context_management: must be an object"));
    }
    // Anthropic's own settings go to Anthropic as they came; for the other providers,
    // the conversation is sent whole and the model thinks as it does by default.
    for name in OWN_SETTINGS {
        if let Some(v) = f.get(name) {
            hint(&mut request, name, v.clone());
        }
    }
    // The tools themselves too, with what only Anthropic reads of them (cache breakpoints,
    // `strict`, deferred loading, examples).
    if !request.tools.is_empty() {
        hint(
            &mut request,
            "tools",
            Value::Array(f.array("tools")?.to_vec()),
        );
    }
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
                "tools of type `{other}` are not served: only client tools (with no type, or \
                 `custom`) are; Anthropic's server tools run on its side alone"
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

/// Offers `value` to Anthropic under `name` (see [`Request::provider_hints`]).
fn hint(request: &mut Request, name: &str, value: Value) {
    request.provider_hints.insert(NAMESPACE, name, value);
}

/// `thinking`: a budget of tokens to think with; adaptive (the model decides, as each
/// does by default), or none.
fn thinking(v: Option<&Value>) -> Result<Option<kite_core::ReasoningConfig>, Error> {
    let Some(v) = v else {
        return Ok(None);
    };
    known(v, "`thinking`", fields::THINKING_SETTING).map_err(bad)?;
    if let Some(display) = v.get("display") {
        if !matches!(display.as_str(), Some("summarized" | "omitted")) {
            return Err(bad(format!(
                "thinking.display: {} is not one of summarized or omitted",
                shown(display.as_str())
            )));
        }
    }
    match v.get("type").and_then(Value::as_str) {
        Some("disabled" | "adaptive") => Ok(None),
        Some("enabled") => {
            let budget = tokens("thinking.budget_tokens", v.get("budget_tokens"))?
                .ok_or_else(|| bad("thinking.budget_tokens: Field required"))?;
            Ok(Some(kite_core::ReasoningConfig {
                budget_tokens: Some(budget),
                ..kite_core::ReasoningConfig::default()
            }))
        }
        other => Err(bad(format!(
            "thinking.type: {} is not one of enabled, adaptive or disabled",
            shown(other)
        ))),
    }
}

/// `output_config`: how hard the model works (`effort`, Anthropic's own, offered to it
/// alone) and the answer's JSON format, which every provider is asked for.
fn output_config(v: Option<&Value>, request: &mut Request) -> Result<(), Error> {
    let Some(v) = v else {
        return Ok(());
    };
    known(v, "`output_config`", fields::OUTPUT_CONFIG).map_err(bad)?;
    if let Some(effort) = v.get("effort") {
        if !effort.is_string() {
            return Err(bad("output_config.effort: must be text"));
        }
    }
    let Some(format) = v.get("format").filter(|f| !f.is_null()) else {
        return Ok(());
    };
    known(format, "`output_config.format`", fields::FORMAT).map_err(bad)?;
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = format
                .get("schema")
                .filter(|s| s.is_object())
                .ok_or_else(|| bad("output_config.format.schema: must be an object"))?;
            request.response_format = Some(ResponseFormat::JsonSchema {
                name: "output".into(),
                schema: schema.clone(),
                description: None,
                strict: Some(true),
            });
            Ok(())
        }
        other => Err(bad(format!(
            "output_config.format.type: {} is not json_schema",
            shown(other)
        ))),
    }
}
