//! Grammars that make the model write a well-formed tool call.

use kite_core::{Error, ToolSpec};
use serde_json::{Map, Value, json};

/// The names a tool gives the argument that holds a path.
const PATHS: &[&str] = &[
    "path",
    "file",
    "filename",
    "file_name",
    "file_path",
    "filepath",
    "folder",
    "dir",
    "directory",
];

/// A GBNF grammar whose `root` is one `<tool_call>` block calling one of `tools` (or only
/// the one named `only`) with arguments that fit its schema, and, when `files` names any,
/// a path argument that is one of them.
pub(crate) fn tool_call(
    tools: &[ToolSpec],
    only: Option<&str>,
    files: &[String],
) -> Result<String, Error> {
    let mut defs = Map::new();
    let alternatives: Vec<Value> = tools
        .iter()
        .filter(|t| only.is_none_or(|n| n == t.name))
        .map(|t| {
            let mut params = (*t.parameters).clone();
            // `$ref`s point at the root of the tool's schema: move its definitions there.
            if let Some(Value::Object(d)) = params.as_object_mut().and_then(|p| p.remove("$defs")) {
                defs.extend(d);
            }
            if let Some(p) = params.as_object_mut() {
                p.remove("$schema");
            }
            if !files.is_empty() {
                narrow_paths(&mut params, files);
            }
            json!({
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": params},
                "required": ["name", "arguments"],
            })
        })
        .collect();
    let mut schema = match alternatives.len() {
        0 => {
            return Err(Error::InvalidRequest(match only {
                Some(n) => format!("tool_choice names `{n}`, which the request does not offer"),
                None => "tool_choice requires a tool call but the request offers no tools".into(),
            }));
        }
        1 => alternatives.into_iter().next().unwrap_or_default(),
        _ => json!({"oneOf": alternatives}),
    };
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| {
        Error::InvalidRequest(format!(
            "a tool's schema cannot be turned into a grammar: {e}"
        ))
    })?;
    Ok(wrap(&gbnf))
}

/// Makes each string argument of `params` named as a path take only one of `files`.
fn narrow_paths(params: &mut Value, files: &[String]) {
    let Some(Value::Object(props)) = params.get_mut("properties") else {
        return;
    };
    for (name, schema) in props.iter_mut() {
        let is_text = schema.get("type") == Some(&json!("string"))
            || schema
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.contains(&json!("string")));
        if is_text && PATHS.contains(&name.to_lowercase().as_str()) {
            schema["enum"] = json!(files);
        }
    }
}

/// The grammar `g` (made by [`tool_call`]) from just after its opening tag: what follows
/// once the model has written `<tool_call>` on its own.
pub(crate) fn after_open(g: &str) -> String {
    let rules = g.split_once('\n').map_or("", |(_, rest)| rest);
    format!("root ::= [ \\t\\n]* call [ \\t\\n]* \"</tool_call>\"\n{rules}")
}

/// Renames the converter's `root` rule to `call` and puts the tags around it.
fn wrap(gbnf: &str) -> String {
    let mut out = String::from("root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n");
    for line in gbnf.lines() {
        match line.strip_prefix("root ::=") {
            Some(rest) => {
                out.push_str("call ::=");
                out.push_str(rest);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_the_opening_tag_the_call_and_closing_tag_remain() {
        let g = wrap("root ::= \"{\" space \"}\"\nspace ::= \" \"?\n");
        assert_eq!(
            after_open(&g),
            "root ::= [ \\t\\n]* call [ \\t\\n]* \"</tool_call>\"\ncall ::= \"{\" space \"}\"\nspace ::= \" \"?\n"
        );
    }

    #[test]
    fn a_path_is_one_of_the_files_named() {
        let read = ToolSpec::new(
            "read_file",
            "Read a file.",
            json!({"type": "object", "properties": {"path": {"type": "string"},
                "limit": {"type": "integer"}}, "required": ["path"]}),
        );
        let files = ["Cargo.toml".to_string()];
        let g = tool_call(std::slice::from_ref(&read), None, &files).unwrap();
        assert!(g.contains("Cargo.toml"), "{g}");
        let free = tool_call(&[read], None, &[]).unwrap();
        assert!(!free.contains("Cargo.toml"), "{free}");
    }

    #[test]
    fn the_root_rule_is_renamed_and_wrapped() {
        let g = wrap("root ::= \"{\" space \"}\"\nspace ::= \" \"?\n");
        assert_eq!(
            g,
            "root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\ncall ::= \"{\" space \"}\"\nspace ::= \" \"?\n"
        );
    }
}
