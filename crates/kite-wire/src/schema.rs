//! JSON Schema clean-up for providers' strict modes.

use kite_core::{ResponseFormat, ToolSpec};
use serde_json::{Map, Value, json};

/// `schema` rewritten for OpenAI's strict mode when `strict`, else as it is.
pub fn strict_if(strict: bool, schema: &Value) -> Value {
    if strict {
        openai_strict(schema)
    } else {
        schema.clone()
    }
}

/// A function tool's fields as OpenAI's APIs write them: name, description, parameters
/// (rewritten when strict) and `strict` when set.
pub(crate) fn openai_function(t: &ToolSpec) -> Map<String, Value> {
    let mut f = Map::new();
    f.insert("name".into(), json!(t.name));
    if !t.description.is_empty() {
        f.insert("description".into(), json!(t.description));
    }
    f.insert(
        "parameters".into(),
        strict_if(t.strict == Some(true), &t.parameters),
    );
    if let Some(strict) = t.strict {
        f.insert("strict".into(), json!(strict));
    }
    f
}

/// A JSON-schema response format's fields as OpenAI's APIs write them (name, schema,
/// description, strict); `None` for the other formats.
pub(crate) fn openai_json_schema(format: &ResponseFormat) -> Option<Map<String, Value>> {
    let ResponseFormat::JsonSchema {
        name,
        schema,
        description,
        strict,
    } = format
    else {
        return None;
    };
    let mut s = Map::new();
    s.insert("name".into(), json!(name));
    s.insert("schema".into(), strict_if(*strict == Some(true), schema));
    if let Some(d) = description {
        s.insert("description".into(), json!(d));
    }
    if let Some(strict) = strict {
        s.insert("strict".into(), json!(strict));
    }
    Some(s)
}

/// `schema` rewritten into the subset OpenAI's strict mode (tools and structured output)
/// accepts: every object closed with `additionalProperties: false`, every property listed in
/// `required` (a property that was optional becomes nullable instead), and no `$schema` or
/// `default` keywords. Applied at every depth, including `$defs`.
///
/// ```
/// use serde_json::json;
/// let strict = kite_wire::schema::openai_strict(&json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}},
///     "required": ["city"],
/// }));
/// assert_eq!(strict, json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
///     "required": ["city", "days"],
///     "additionalProperties": false,
/// }));
/// ```
pub fn openai_strict(schema: &Value) -> Value {
    let mut s = schema.clone();
    strict_in_place(&mut s);
    s
}

fn strict_in_place(v: &mut Value) {
    let Value::Object(obj) = v else {
        if let Value::Array(items) = v {
            items.iter_mut().for_each(strict_in_place);
        }
        return;
    };
    obj.remove("$schema");
    obj.remove("default");
    for key in ["items", "not", "additionalItems"] {
        if let Some(sub) = obj.get_mut(key) {
            strict_in_place(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = obj.get_mut(key) {
            subs.iter_mut().for_each(strict_in_place);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = obj.get_mut(key) {
            defs.values_mut().for_each(strict_in_place);
        }
    }
    if !matches!(obj.get("properties"), Some(Value::Object(_))) {
        if obj.get("type") == Some(&json!("object")) {
            obj.insert("additionalProperties".into(), Value::Bool(false));
            obj.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            // No properties, so none required: strict mode wants `required` to name each
            // property and nothing else, as below.
            obj.insert("required".into(), Value::Array(Vec::new()));
        }
        return;
    }
    let required: Vec<String> = match obj.get("required") {
        Some(Value::Array(r)) => r
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let mut all = Vec::new();
    for (name, prop) in obj
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flatten()
    {
        strict_in_place(prop);
        if !required.contains(name) {
            make_nullable(prop);
        }
        all.push(Value::String(name.clone()));
    }
    obj.insert("required".into(), Value::Array(all));
    obj.insert("additionalProperties".into(), Value::Bool(false));
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(p) = prop else { return };
    match p.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            p.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&json!("null")) {
                types.push(json!("null"));
            }
        }
        Some(_) => {}
        None => {
            let inner = std::mem::take(p);
            p.insert(
                "anyOf".into(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_objects_refs_and_unions_are_made_strict() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Trip",
            "type": "object",
            "properties": {
                "stops": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "home": {"$ref": "#/$defs/Place"},
                "mode": {"type": ["string", "null"], "enum": ["car", "train", null]},
                "meta": {"type": "object"}
            },
            "required": ["stops"],
            "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}}
        });
        let s = openai_strict(&schema);
        assert!(s.get("$schema").is_none());
        assert_eq!(s["title"], "Trip");
        assert_eq!(s["required"], json!(["stops", "home", "mode", "meta"]));
        assert_eq!(s["additionalProperties"], false);
        let stop = &s["properties"]["stops"]["items"];
        assert_eq!(stop["required"], json!(["name"]));
        assert_eq!(
            stop["properties"]["name"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(stop["additionalProperties"], false);
        assert_eq!(
            s["properties"]["home"],
            json!({"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]})
        );
        assert_eq!(s["properties"]["mode"]["type"], json!(["string", "null"]));
        assert_eq!(s["properties"]["meta"]["additionalProperties"], false);
        assert_eq!(s["$defs"]["Place"]["additionalProperties"], false);
        assert_eq!(s["$defs"]["Place"]["properties"]["lat"]["type"], "number");
    }

    /// Found by the `serve_requests` fuzz target: `required` naming properties an object
    /// does not have was kept, so the schema was not strict, and making it strict again
    /// changed it.
    #[test]
    fn an_object_without_properties_requires_none_and_stays_strict() {
        for schema in [
            json!({"type": "object", "required": ["city"]}),
            json!({"type": "object", "propertiez": {"city": {}}, "required": ["city"]}),
        ] {
            let s = openai_strict(&schema);
            assert_eq!(s["properties"], json!({}), "{schema}");
            assert_eq!(s["required"], json!([]), "{schema}");
            assert_eq!(s["additionalProperties"], false, "{schema}");
            assert_eq!(openai_strict(&s), s, "{schema}: strict twice differs");
        }
    }
}
