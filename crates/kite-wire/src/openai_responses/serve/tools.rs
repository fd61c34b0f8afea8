//! A Responses client's tools in kite's terms, and their calls back in the client's.
//!
//! Every model kite speaks to takes function tools alone, so each of the client's tools
//! becomes one: a function in a `namespace` is named `namespace__name` (Codex's own flat
//! form); a `custom` (free-form) tool takes its text as one string argument, `input`;
//! `local_shell` and `apply_patch` take their action and operation as arguments. The
//! [`ClientTools`] made while decoding remembers each one, so a call the model makes goes
//! back to the client as the item its tool asks for, under its own name. A name too long
//! for providers (64 characters) is cut and ends in a hash of the whole, so it stays the
//! same from one request to the next.
//!
//! OpenAI's hosted web search, which only OpenAI can run, is not a function: the decoder
//! hands it back for the gateway's policy to pass on or refuse. The other hosted tools are
//! refused: each would reach the gateway's own OpenAI account.

use super::fields;
use crate::client::{known, shown};
use crate::codec::fnv1a;
use kite_core::ToolSpec;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// What kind of tool a client gave, and so what item its calls are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Function,
    Custom,
    LocalShell,
    ApplyPatch,
}

/// A client's tool as kite names it: its namespace and name, and its kind.
#[derive(Clone, Debug)]
struct Given {
    namespace: Option<String>,
    name: String,
    kind: Kind,
}

/// The tools of one client request, by the name the model knows each by.
#[derive(Clone, Debug, Default)]
pub struct ClientTools {
    by_flat: HashMap<String, Given>,
}

/// The hosted tools passed on (by the gateway's policy): OpenAI's web search, which
/// reads only the public web.
pub(crate) const HOSTED: &[&str] = &[
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "web_search_preview_2025_03_11",
];

/// The hosted tools refused: each reaches what belongs to the gateway's own OpenAI account
/// (its vector stores and files, containers, connectors and MCP servers, spending on
/// images), which a client's key must not, or acts through calls kite cannot carry back.
const REFUSED_HOSTED: &[&str] = &[
    "file_search",
    "code_interpreter",
    "computer_use",
    "computer_use_preview",
    "computer",
    "image_generation",
    "mcp",
    "shell",
    "tool_search",
];

/// The longest function name providers take.
const MAX_NAME: usize = 64;

/// The name the model knows `name` in `namespace` by.
fn flat(namespace: Option<&str>, name: &str) -> String {
    let whole = match namespace {
        Some(ns) => format!(
            "{}__{}",
            ns.trim_end_matches('_'),
            name.trim_start_matches('_')
        ),
        None => name.to_owned(),
    };
    if whole.len() <= MAX_NAME {
        return whole;
    }
    let mut cut = MAX_NAME - 17;
    while !whole.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{:016x}", &whole[..cut], fnv1a(&whole))
}

impl ClientTools {
    /// Reads tool `t` (in `namespace`, if any): a function for the model onto `out`, or a
    /// hosted tool onto `hosted`.
    pub(crate) fn add(
        &mut self,
        namespace: Option<&str>,
        t: &Value,
        out: &mut Vec<ToolSpec>,
        hosted: &mut Vec<Value>,
    ) -> Result<(), String> {
        let kind = t.get("type").and_then(Value::as_str);
        let spec = match kind {
            Some("namespace") if namespace.is_none() => {
                known(t, "a namespace tool", fields::NAMESPACE_TOOL)?;
                let ns = t
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                    .ok_or("a namespace needs a name")?;
                let tools = t
                    .get("tools")
                    .and_then(Value::as_array)
                    .ok_or("a namespace needs its `tools`, an array")?;
                for (i, inner) in tools.iter().enumerate() {
                    self.add(Some(ns), inner, out, hosted)
                        .map_err(|e| format!("in its tools[{i}]: {e}"))?;
                }
                return Ok(());
            }
            Some("namespace") => return Err("a namespace cannot hold another".into()),
            Some("function") => {
                known(t, "a function tool", fields::TOOL)?;
                let mut spec = ToolSpec::new(
                    name(t)?,
                    text(t, "description"),
                    match t.get("parameters") {
                        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                        Some(p) => unmarked(p),
                    },
                );
                spec.strict = t.get("strict").and_then(Value::as_bool);
                (Kind::Function, spec)
            }
            Some("custom") => {
                known(t, "a custom tool", fields::CUSTOM_TOOL)?;
                (Kind::Custom, custom(t)?)
            }
            Some("local_shell") => (Kind::LocalShell, local_shell()),
            Some("apply_patch") => (Kind::ApplyPatch, apply_patch()),
            Some(h) if HOSTED.contains(&h) && namespace.is_none() => {
                hosted.push(t.clone());
                return Ok(());
            }
            Some(h) if HOSTED.contains(&h) => {
                return Err(format!("the hosted tool `{h}` cannot be in a namespace"));
            }
            Some(h) if REFUSED_HOSTED.contains(&h) => {
                return Err(format!(
                    "the hosted tool `{h}` is not served: it would reach the gateway's own \
                     OpenAI account (its files, containers, connectors or spending)"
                ));
            }
            other => {
                return Err(format!(
                    "tools of type {} are not served; function, custom, namespace, \
                     local_shell, apply_patch and web_search are",
                    shown(other)
                ));
            }
        };
        let (kind, mut spec) = spec;
        let flat_name = flat(namespace, &spec.name);
        if self.by_flat.contains_key(&flat_name) {
            return Err(format!("the tool `{flat_name}` is given twice"));
        }
        let given = Given {
            namespace: namespace.map(str::to_owned),
            name: std::mem::replace(&mut spec.name, flat_name.clone()),
            kind,
        };
        self.by_flat.insert(flat_name, given);
        out.push(spec);
        Ok(())
    }

    /// The name the model knows a client's tool by (one no longer offered included). A
    /// call named without its namespace (Codex echoes those of its `functions` namespace
    /// so) is the tool of that name in the one namespace that has it.
    pub(crate) fn flat_name(&self, namespace: Option<&str>, name: &str, kind: Kind) -> String {
        let named = match kind {
            Kind::LocalShell => "local_shell",
            Kind::ApplyPatch => "apply_patch",
            Kind::Function | Kind::Custom => name,
        };
        let whole = flat(namespace, named);
        if namespace.is_some() || self.by_flat.contains_key(&whole) {
            return whole;
        }
        let mut same = self
            .by_flat
            .iter()
            .filter(|(_, g)| g.name == named && g.kind == kind);
        match (same.next(), same.next()) {
            (Some((flat_name, _)), None) => flat_name.clone(),
            _ => whole,
        }
    }

    /// The kind of tool the model's `flat_name` stands for.
    pub(crate) fn kind(&self, flat_name: &str) -> Kind {
        self.by_flat
            .get(flat_name)
            .map_or(Kind::Function, |g| g.kind)
    }

    /// The output item for a call of `flat_name` with `arguments` (JSON text from the
    /// model), in the client's terms.
    pub(crate) fn call_item(
        &self,
        id: &str,
        status: &str,
        call_id: &str,
        flat_name: &str,
        arguments: &str,
    ) -> Value {
        let Some(given) = self.by_flat.get(flat_name) else {
            return json!({"id": id, "type": "function_call", "status": status,
                "arguments": arguments, "call_id": call_id, "name": flat_name});
        };
        let args = || serde_json::from_str::<Value>(arguments).unwrap_or(Value::Null);
        let mut item = match given.kind {
            Kind::Function => json!({"type": "function_call", "arguments": arguments,
                "name": given.name}),
            Kind::Custom => json!({"type": "custom_tool_call", "name": given.name,
                "input": custom_input(arguments)}),
            // A call whose arguments the client could not read as its tool's goes back as a
            // function call, which the client answers as one it does not know.
            Kind::LocalShell => match args()
                .as_object()
                .filter(|a| a.get("command").is_some_and(Value::is_array))
            {
                Some(action) => {
                    let mut action = action.clone();
                    action.insert("type".into(), json!("exec"));
                    json!({"type": "local_shell_call", "action": action})
                }
                None => json!({"type": "function_call", "arguments": arguments,
                    "name": "local_shell"}),
            },
            Kind::ApplyPatch => match args() {
                op if op["type"].is_string() && op["path"].is_string() => {
                    json!({"type": "apply_patch_call", "operation": op})
                }
                _ => json!({"type": "function_call", "arguments": arguments,
                    "name": "apply_patch"}),
            },
        };
        item["id"] = json!(id);
        item["status"] = json!(status);
        item["call_id"] = json!(call_id);
        if let Some(ns) = &given.namespace {
            item["namespace"] = json!(ns);
        }
        item
    }
}

/// The free-form text of a custom tool's call: its `input` argument (or, from a model
/// that did not write JSON, all it wrote).
pub(crate) fn custom_input(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(o)) => match o.get("input") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        _ => arguments.to_owned(),
    }
}

fn name(t: &Value) -> Result<String, String> {
    t.get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| "a tool needs a name".to_owned())
}

fn text(t: &Value, key: &str) -> String {
    t.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A schema without the marks some clients put on properties for themselves
/// (`"encrypted": true`), which providers refuse as unknown keywords.
fn unmarked(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, v)| !(*k == "encrypted" && v.is_boolean()))
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// A custom tool as a function of one string, its grammar (if any) told to the model.
fn custom(t: &Value) -> Result<ToolSpec, String> {
    let mut description = text(t, "description");
    match t.get("format") {
        None | Some(Value::Null) => {}
        Some(f) => {
            known(f, "a custom tool's format", fields::CUSTOM_FORMAT)?;
            match f.get("type").and_then(Value::as_str) {
                Some("text") => {}
                Some("grammar") => {
                    let syntax = text(f, "syntax");
                    let definition = text(f, "definition");
                    description.push_str(&format!(
                        "\n\nThe input must follow this {syntax} grammar:\n{definition}"
                    ));
                }
                other => {
                    return Err(format!(
                        "a custom tool's format of type {} is not one of text or grammar",
                        shown(other)
                    ));
                }
            }
        }
    }
    Ok(ToolSpec::new(
        name(t)?,
        description.trim_start(),
        json!({"type": "object", "properties": {"input": {"type": "string",
            "description": "The tool's whole input, as free-form text."}},
            "required": ["input"], "additionalProperties": false}),
    ))
}

fn local_shell() -> ToolSpec {
    ToolSpec::new(
        "local_shell",
        "Runs a command on the user's machine.",
        json!({"type": "object", "properties": {
            "command": {"type": "array", "items": {"type": "string"},
                "description": "The program and its arguments."},
            "working_directory": {"type": "string"},
            "timeout_ms": {"type": "integer"},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["command"]}),
    )
}

fn apply_patch() -> ToolSpec {
    ToolSpec::new(
        "apply_patch",
        "Creates, updates or deletes a file: `diff` is the new file's content for \
         create_file, a V4A diff for update_file, and empty for delete_file.",
        json!({"type": "object", "properties": {
            "type": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
            "path": {"type": "string"},
            "diff": {"type": "string"}},
            "required": ["type", "path"]}),
    )
}

#[cfg(test)]
mod tests;
