//! Request encoding.

use super::NAMESPACE;
use crate::codec::{Setting, end_user, refuse_foreign, refuse_lacking};
use crate::schema;
use kite_core::{
    DocumentSource, Error, ImageSource, Message, Part, Request, ResponseFormat, Role, ToolChoice,
};
use serde_json::{Map, Value, json};

/// How a Responses request carries the conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// Stored (`store: true`): the history up to the last answer this API stored is named by
    /// `previous_response_id` and only what came after it is sent. Otherwise (`store: false`)
    /// nothing is kept by the provider: the whole history is sent each time, with the
    /// encrypted reasoning items it returned.
    pub store: bool,
    /// Run in the background (`background: true`, which needs `store`): the answer can be
    /// polled, cancelled, and its stream resumed.
    pub background: bool,
    /// The provider's own tools to offer besides the request's functions, as it names them
    /// (`{"type": "web_search_preview"}`; deep-research models need one).
    pub hosted_tools: Vec<Value>,
}

/// The JSON body of a Responses request, asking for an SSE stream when `stream` is true.
pub fn encode_request(req: &Request, opts: &Options, stream: bool) -> Result<Vec<u8>, Error> {
    if req.model.is_empty() {
        return Err(Error::InvalidRequest("no model named".into()));
    }
    if !req.stop.is_empty() {
        return Err(Error::InvalidRequest(
            "OpenAI Responses has no stop sequences; use Chat Completions for them".into(),
        ));
    }
    refuse_foreign(req, NAMESPACE, "OpenAI Responses")?;
    refuse_lacking(
        req,
        "OpenAI Responses",
        &[
            Setting::Seed,
            Setting::FrequencyPenalty,
            Setting::PresencePenalty,
            Setting::TopK,
        ],
    )?;
    let store = opts.store || opts.background;
    // With a stored answer in the history, the provider holds everything up to it.
    let (previous, rest) = match store.then(|| last_stored(&req.messages)).flatten() {
        Some((i, id)) => (Some(id), &req.messages[i + 1..]),
        None => (None, &req.messages[..]),
    };
    let mut input = Vec::with_capacity(rest.len());
    for m in rest {
        encode_message(m, &mut input);
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    if let Some(system) = &req.system {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("input".into(), Value::Array(input));
    if let Some(id) = previous {
        body.insert("previous_response_id".into(), json!(id));
    }
    body.insert("store".into(), json!(store));
    if !store {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if opts.background {
        body.insert("background".into(), json!(true));
    }
    // Hosted tools a client of this API's own gave (through a gateway), besides those
    // configured for the model.
    let asked: Vec<Value> = [&req.provider_options, &req.provider_hints]
        .into_iter()
        .filter_map(|m| m.get(NAMESPACE, "tools")?.as_array().cloned())
        .flatten()
        .filter(|t| !opts.hosted_tools.contains(t))
        .collect();
    if !req.tools.is_empty() || !opts.hosted_tools.is_empty() || !asked.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = Map::new();
                f.insert("type".into(), json!("function"));
                f.extend(schema::openai_function(t));
                // Responses makes tools strict unless told otherwise, which refuses schemas
                // with optional fields; kite keeps strictness opt-in on every API.
                f.insert("strict".into(), json!(t.strict == Some(true)));
                Value::Object(f)
            })
            .collect();
        tools.extend(opts.hosted_tools.iter().cloned());
        tools.extend(asked);
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        let v = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
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
    put("max_output_tokens", req.max_tokens.map(Value::from));
    put(
        "safety_identifier",
        req.user.as_deref().map(|u| Value::from(end_user(u))),
    );
    put(
        "reasoning",
        req.reasoning.as_ref().map(|r| {
            let mut v = Map::new();
            if let Some(e) = &r.effort {
                v.insert("effort".into(), json!(e));
            }
            if let Some(s) = &r.summary {
                v.insert("summary".into(), json!(s));
            }
            Value::Object(v)
        }),
    );
    let mut text = Map::new();
    if let Some(f) = &req.response_format {
        let format = match f {
            ResponseFormat::Text => json!({"type": "text"}),
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { .. } => {
                let mut s = Map::new();
                s.insert("type".into(), json!("json_schema"));
                s.extend(schema::openai_json_schema(f).unwrap_or_default());
                Value::Object(s)
            }
        };
        text.insert("format".into(), format);
    }
    if let Some(v) = &req.verbosity {
        text.insert("verbosity".into(), json!(v));
    }
    put("text", (!text.is_empty()).then_some(Value::Object(text)));
    body.insert("stream".into(), json!(stream));
    // What a client of this API asked for and was offered in its terms (through a
    // gateway: OpenAI's own fields, its cache hints); its hosted tools are with the others.
    let own = req.provider_options.fields(NAMESPACE);
    for (k, v) in own.chain(req.provider_hints.fields(NAMESPACE)) {
        if k != "tools" {
            body.insert(k.to_owned(), v.clone());
        }
    }
    for (k, v) in &req.extra {
        body.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(body)).map_err(|e| Error::InvalidRequest(e.to_string()))
}

/// The last assistant message this API stored, by index, with its response id.
fn last_stored(messages: &[Message]) -> Option<(usize, String)> {
    messages.iter().enumerate().rev().find_map(|(i, m)| {
        let id = m.metadata.get(NAMESPACE, "response_id")?.as_str()?;
        (m.role == Role::Assistant).then(|| (i, id.to_owned()))
    })
}

fn encode_message(m: &Message, out: &mut Vec<Value>) {
    match m.role {
        Role::User | Role::System => {
            let role = if m.role == Role::User {
                "user"
            } else {
                "system"
            };
            let content: Vec<&Part> = m
                .parts
                .iter()
                .filter(|p| {
                    matches!(
                        p,
                        Part::Text { .. } | Part::Image { .. } | Part::Document(_)
                    )
                })
                .collect();
            let value = match content.as_slice() {
                [] => None,
                [Part::Text { text }] => Some(json!(text)),
                parts => Some(Value::Array(
                    parts.iter().filter_map(|p| input_part(p)).collect(),
                )),
            };
            if let Some(content) = value {
                out.push(json!({"role": role, "content": content}));
            }
            tool_results(m, out);
        }
        Role::Tool => tool_results(m, out),
        Role::Assistant => {
            // Text runs become message items; reasoning and calls are items of their own, in
            // the order the model produced them.
            let mut content: Vec<Value> = Vec::new();
            let flush = |content: &mut Vec<Value>, out: &mut Vec<Value>| {
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": std::mem::take(content)}));
                }
            };
            for p in &m.parts {
                match p {
                    Part::Text { text } => {
                        content.push(json!({"type": "output_text", "text": text}));
                    }
                    Part::Refusal { text } => {
                        content.push(json!({"type": "refusal", "refusal": text}));
                    }
                    Part::Reasoning(r) => {
                        // Only this API's own reasoning items can go back to it, whole.
                        if let Some(item) = r.metadata.get(NAMESPACE, "item") {
                            flush(&mut content, out);
                            out.push(item.clone());
                        }
                    }
                    Part::ToolCall(c) => {
                        flush(&mut content, out);
                        out.push(json!({
                            "type": "function_call",
                            "call_id": c.id,
                            "name": c.name,
                            "arguments": c.arguments,
                        }));
                    }
                    // Images and results are the user's and the tools' turn, never the
                    // assistant's; a part kind this codec does not know is not sent.
                    _ => {}
                }
            }
            flush(&mut content, out);
        }
    }
}

fn tool_results(m: &Message, out: &mut Vec<Value>) {
    for p in &m.parts {
        let Part::ToolResult(r) = p else { continue };
        let output = match r.content.as_slice() {
            [Part::Text { text }] => json!(text),
            parts => Value::Array(parts.iter().filter_map(input_part).collect()),
        };
        out.push(json!({"type": "function_call_output", "call_id": r.call_id, "output": output}));
    }
}

/// A text, image or document part as input content.
fn input_part(p: &Part) -> Option<Value> {
    Some(match p {
        Part::Image { source, detail } => {
            let url = match source {
                ImageSource::Url { url } => url.clone(),
                ImageSource::Base64 { media_type, data } => {
                    format!("data:{media_type};base64,{data}")
                }
            };
            json!({"type": "input_image", "image_url": url, "detail": detail.as_deref().unwrap_or("auto")})
        }
        Part::Text { text } => json!({"type": "input_text", "text": text}),
        Part::Document(d) => match &d.source {
            DocumentSource::Text { .. } => json!({"type": "input_text", "text": d.as_text()}),
            DocumentSource::Base64 { media_type, data } => json!({"type": "input_file",
                "filename": d.title.clone().unwrap_or_else(|| "document".into()),
                "file_data": format!("data:{media_type};base64,{data}")}),
            DocumentSource::Url { url } => json!({"type": "input_file", "file_url": url}),
        },
        _ => return None,
    })
}
