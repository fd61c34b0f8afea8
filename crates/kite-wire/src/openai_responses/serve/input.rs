//! The items of a client's Responses `input`, in kite's terms: messages, the calls the
//! model made (of functions, custom tools, `local_shell` and `apply_patch`) and their
//! outputs, reasoning, and the hosted web searches an upstream made (which go back to it
//! whole, as reasoning items do). Calls are named as the model knows their tools
//! ([`ClientTools`]).

use super::tools::{ClientTools, Kind};
use super::{NAMESPACE, fields, str_of};
use crate::client::{data_url, inline_file, known, shown};
use kite_core::{
    Document, DocumentSource, ImageSource, Message, Metadata, Part, Reasoning, Role, ToolCall,
    ToolResult,
};
use serde_json::{Value, json};

/// What the items so far have made: the conversation, the system prompt's texts, and the
/// tools given among them (`additional_tools`).
pub(super) struct Input<'a> {
    pub messages: &'a mut Vec<Message>,
    pub system: &'a mut Vec<String>,
    pub tools: &'a mut ClientTools,
    pub specs: &'a mut Vec<kite_core::ToolSpec>,
    pub hosted: &'a mut Vec<Value>,
}

/// The parts of the assistant turn that `out` ends with, begun if it does not.
fn assistant(out: &mut Vec<Message>) -> &mut Vec<Part> {
    if out.last().is_none_or(|m| m.role != Role::Assistant) {
        out.push(Message::new(Role::Assistant, Vec::new()));
    }
    &mut out.last_mut().expect("just pushed").parts
}

impl Input<'_> {
    pub(super) fn item(&mut self, item: &Value) -> Result<(), String> {
        match str_of(item, "type") {
            None | Some("message") => {
                known(item, "a message", fields::MESSAGE)?;
                self.message(item)
            }
            Some("additional_tools") => {
                known(item, "an additional_tools item", fields::ADDITIONAL_TOOLS)?;
                let tools = item
                    .get("tools")
                    .and_then(Value::as_array)
                    .ok_or("an additional_tools item needs its `tools`, an array")?;
                for (i, t) in tools.iter().enumerate() {
                    self.tools
                        .add(None, t, self.specs, self.hosted)
                        .map_err(|e| format!("tools[{i}]: {e}"))?;
                }
                Ok(())
            }
            Some("function_call") => {
                known(item, "a function_call", fields::FUNCTION_CALL)?;
                let arguments = match item.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(other) => other.to_string(),
                };
                self.call(item, Kind::Function, arguments)
            }
            Some("custom_tool_call") => {
                known(item, "a custom_tool_call", fields::CUSTOM_CALL)?;
                let input = match item.get("input") {
                    None | Some(Value::Null) => "",
                    Some(Value::String(s)) => s,
                    Some(_) => return Err("a custom_tool_call's `input` must be text".into()),
                };
                self.call(item, Kind::Custom, json!({"input": input}).to_string())
            }
            Some("local_shell_call") => {
                known(item, "a local_shell_call", fields::LOCAL_SHELL_CALL)?;
                let mut action = item
                    .get("action")
                    .and_then(Value::as_object)
                    .cloned()
                    .ok_or("a local_shell_call needs an action")?;
                action.remove("type");
                self.call(item, Kind::LocalShell, Value::Object(action).to_string())
            }
            Some("apply_patch_call") => {
                known(item, "an apply_patch_call", fields::APPLY_PATCH_CALL)?;
                let operation = item
                    .get("operation")
                    .filter(|o| o.is_object())
                    .ok_or("an apply_patch_call needs an operation")?;
                self.call(item, Kind::ApplyPatch, operation.to_string())
            }
            Some(
                kind @ ("function_call_output"
                | "custom_tool_call_output"
                | "local_shell_call_output"
                | "apply_patch_call_output"),
            ) => {
                known(item, &format!("a {kind}"), fields::CALL_OUTPUT)?;
                // A local shell's output names its call by `id` alone.
                let id = str_of(item, "call_id")
                    .or_else(|| (kind == "local_shell_call_output").then(|| str_of(item, "id"))?)
                    .ok_or_else(|| format!("a {kind} needs a call_id"))?;
                let mut result = ToolResult::text(id, "");
                result.content = match item.get("output") {
                    Some(Value::String(s)) => vec![Part::text(s.clone())],
                    Some(Value::Array(parts)) => {
                        parts.iter().map(content_part).collect::<Result<_, _>>()?
                    }
                    None | Some(Value::Null) if kind == "apply_patch_call_output" => Vec::new(),
                    _ => return Err(format!("a {kind} needs an output")),
                };
                result.is_error = str_of(item, "status") == Some("failed");
                self.messages.push(Message::tool_result(result));
                Ok(())
            }
            Some("reasoning") => {
                known(item, "a reasoning item", fields::REASONING)?;
                if item
                    .get("summary")
                    .is_some_and(|s| !s.is_array() && !s.is_null())
                {
                    return Err("a reasoning item's `summary` must be an array".into());
                }
                let text: Vec<&str> = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| str_of(s, "text"))
                    .collect();
                // Only encrypted reasoning can go back to a stateless upstream, and only
                // whole.
                let metadata = match item.get("encrypted_content") {
                    Some(Value::String(_)) => Metadata::with(NAMESPACE, "item", item.clone()),
                    _ => Metadata::new(),
                };
                let text = text.join("\n\n");
                if !text.is_empty() || !metadata.is_empty() {
                    assistant(self.messages).push(Part::Reasoning(Reasoning { text, metadata }));
                }
                Ok(())
            }
            // A hosted web search the upstream made: only a Responses upstream can take it
            // back, whole, as it takes back its reasoning items (the other encoders leave
            // those out).
            Some("web_search_call") => {
                let item = Metadata::with(NAMESPACE, "item", item.clone());
                assistant(self.messages).push(Part::Reasoning(Reasoning {
                    text: String::new(),
                    metadata: item,
                }));
                Ok(())
            }
            Some("item_reference") => Err("item references are not served: this gateway keeps \
                                           no stored items; send the items themselves"
                .into()),
            Some(other) => Err(format!("items of type `{other}` are not served")),
        }
    }

    /// A call the model made, of a tool of `kind`, with `arguments` as the model wrote them.
    fn call(&mut self, item: &Value, kind: Kind, arguments: String) -> Result<(), String> {
        let id = str_of(item, "call_id").ok_or("a call needs a call_id")?;
        let name = match kind {
            Kind::LocalShell | Kind::ApplyPatch => "",
            Kind::Function | Kind::Custom => str_of(item, "name").ok_or("a call needs a name")?,
        };
        let name = self.tools.flat_name(str_of(item, "namespace"), name, kind);
        let mut call = ToolCall::new(id, name, arguments);
        if let Some(item_id) = str_of(item, "id") {
            call.metadata = Metadata::with(NAMESPACE, "item_id", json!(item_id));
        }
        assistant(self.messages).push(Part::ToolCall(call));
        Ok(())
    }

    fn message(&mut self, m: &Value) -> Result<(), String> {
        let parts = match m.get("content") {
            Some(Value::String(s)) => vec![Part::text(s.clone())],
            Some(Value::Array(parts)) => {
                parts.iter().map(content_part).collect::<Result<_, _>>()?
            }
            _ => return Err("`content` must be text or an array of parts".into()),
        };
        match str_of(m, "role") {
            // Instructions before the conversation are its system prompt; later ones stay
            // where they are, so the prompt before them stays the same (and cached).
            Some("system" | "developer") => {
                let text = parts
                    .iter()
                    .map(|p| match p {
                        Part::Text { text } => Ok(text.as_str()),
                        _ => Err("a system message takes text only"),
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join("\n\n");
                match self.messages.is_empty() {
                    true => self.system.push(text),
                    false => self.messages.push(Message::system(text)),
                }
            }
            Some("user") => self.messages.push(Message::new(Role::User, parts)),
            Some("assistant") => assistant(self.messages).extend(parts),
            other => {
                return Err(format!(
                    "the role {} is not one of system, developer, user or assistant",
                    shown(other)
                ));
            }
        }
        Ok(())
    }
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
            let source = match data_url(url) {
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
        Some("input_file") => {
            known(p, "a file part", fields::FILE_PART)?;
            match str_of(p, "file_url") {
                Some(url) => {
                    let mut d = Document::new(DocumentSource::Url {
                        url: url.to_owned(),
                    });
                    d.title = str_of(p, "filename").map(str::to_owned);
                    Ok(Part::Document(d))
                }
                None => inline_file(
                    str_of(p, "file_data"),
                    p.get("file_id"),
                    str_of(p, "filename"),
                ),
            }
        }
        other => Err(format!(
            "content parts of type {} are not served",
            shown(other)
        )),
    }
}
