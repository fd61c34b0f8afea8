//! What the decoders of clients' requests (`*/serve.rs`) share: each field read as its type
//! or refused, the fields each API's decoder takes, and the checks on a whole request.
//!
//! Nothing a client sends is dropped unseen. A field is read and honoured (or refused by
//! the provider's encoder when that provider cannot honour it); or it is a hint that
//! cannot change the answer (a cache key), taken and left; or it asks for what the
//! gateway does not serve, and its request is refused with 400 naming it, unless its value
//! asks for nothing (`n: 1`, `logprobs: false`). A field no list names is refused too.

use kite_core::{Error, Request, ToolChoice};
use serde_json::{Map, Value};

fn bad(what: impl Into<String>) -> Error {
    Error::InvalidRequest(what.into())
}

/// A client request's top-level fields.
pub(crate) struct Fields<'a> {
    o: &'a Map<String, Value>,
}

/// A field the gateway does not serve, the type its values have, the values that ask for
/// nothing it lacks, and why.
pub(crate) struct Unserved {
    pub name: &'static str,
    pub shape: Shape,
    pub accepts: fn(&Value) -> bool,
    pub why: &'static str,
}

/// A field passed on to the providers whose API has it (an OpenAI `logit_bias`): asked
/// of that API ([`Request::provider_options`]), so that a route to another refuses it,
/// naming it, unless its value asks for nothing.
pub(crate) struct Passed {
    pub name: &'static str,
    pub shape: Shape,
    pub asks_nothing: fn(&Value) -> bool,
}

/// The JSON type of a field's values: one of another type is a mistake to name as such
/// (`"n": "3"`), not a setting the gateway lacks.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    Number,
    Bool,
    Text,
    Object,
    Array,
    Any,
}

impl Shape {
    fn fits(self, v: &Value) -> bool {
        match self {
            Shape::Number => v.is_number(),
            Shape::Bool => v.is_boolean(),
            Shape::Text => v.is_string(),
            Shape::Object => v.is_object(),
            Shape::Array => v.is_array(),
            Shape::Any => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Number => "a number",
            Shape::Bool => "true or false",
            Shape::Text => "text",
            Shape::Object => "an object",
            Shape::Array => "an array",
            Shape::Any => "a value",
        }
    }
}

impl<'a> Fields<'a> {
    /// The fields of `v`, which must be an object.
    pub(crate) fn of(v: &'a Value) -> Result<Self, Error> {
        v.as_object()
            .map(|o| Self { o })
            .ok_or_else(|| bad("the body is not a JSON object"))
    }

    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.o.get(name).filter(|v| !v.is_null())
    }

    /// Refuses a field that is neither `taken` nor `unserved` (`api` names the API).
    pub(crate) fn only(
        &self,
        api: &str,
        taken: &[&str],
        unserved: &[Unserved],
    ) -> Result<(), Error> {
        for name in self.o.keys() {
            let known = taken.contains(&name.as_str()) || unserved.iter().any(|u| u.name == name);
            if !known {
                return Err(bad(format!(
                    "`{name}` is not a field of {api} requests that this gateway serves"
                )));
            }
        }
        for u in unserved {
            let Some(v) = self.get(u.name) else { continue };
            if !u.shape.fits(v) {
                return Err(bad(format!(
                    "`{}` must be {}, not {}",
                    u.name,
                    u.shape.name(),
                    clipped(v)
                )));
            }
            if !(u.accepts)(v) {
                return Err(bad(format!("`{}` is not served: {}", u.name, u.why)));
            }
        }
        Ok(())
    }

    /// Asks the API whose codec writes `namespace` for each of `passed` the request sets
    /// (a value of another type is refused).
    pub(crate) fn pass_on(
        &self,
        passed: &[Passed],
        namespace: &str,
        request: &mut Request,
    ) -> Result<(), Error> {
        for p in passed {
            let Some(v) = self.get(p.name) else { continue };
            if !p.shape.fits(v) {
                return Err(bad(format!(
                    "`{}` must be {}, not {}",
                    p.name,
                    p.shape.name(),
                    clipped(v)
                )));
            }
            if !(p.asks_nothing)(v) {
                request
                    .provider_options
                    .insert(namespace, p.name, v.clone());
            }
        }
        Ok(())
    }

    /// Offers the API whose codec writes `namespace` its cache hints
    /// (`prompt_cache_key`, `prompt_cache_retention`), text each: they route a request to
    /// where its prompt is cached, and the other providers do without.
    pub(crate) fn cache_hints(&self, namespace: &str, request: &mut Request) -> Result<(), Error> {
        for name in ["prompt_cache_key", "prompt_cache_retention"] {
            if let Some(hint) = self.string(name)? {
                request.provider_hints.insert(namespace, name, hint.into());
            }
        }
        Ok(())
    }

    /// A text field, refused when it is anything else.
    pub(crate) fn string(&self, name: &str) -> Result<Option<&'a str>, Error> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(bad(format!("`{name}` must be text, not {other}"))),
        }
    }

    /// A text field that must be one of `allowed`.
    pub(crate) fn one_of(&self, name: &str, allowed: &[&str]) -> Result<Option<&'a str>, Error> {
        match self.string(name)? {
            Some(s) if !allowed.contains(&s) => Err(bad(format!(
                "`{name}` must be one of {}, not {}",
                allowed.join(", "),
                shown(Some(s))
            ))),
            other => Ok(other),
        }
    }

    /// A whole-number field.
    pub(crate) fn integer(&self, name: &str) -> Result<Option<i64>, Error> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| bad(format!("`{name}` is too large"))),
            Some(other) => Err(bad(format!("`{name}` must be a whole number, not {other}"))),
        }
    }

    /// An array field.
    pub(crate) fn array(&self, name: &str) -> Result<&'a [Value], Error> {
        match self.get(name) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(bad(format!("`{name}` must be an array, not {other}"))),
        }
    }

    /// Stop sequences: one text or an array of texts.
    pub(crate) fn texts(&self, name: &str) -> Result<Vec<String>, Error> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(all)) => all
                .iter()
                .map(|s| match s {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(bad(format!("`{name}` holds {other}, which is not text"))),
                })
                .collect(),
            Some(other) => Err(bad(format!("`{name}` must be text or texts, not {other}"))),
        }
    }

    /// `stream_options`: an object of which only `include_usage` is read and
    /// `include_obfuscation` (padding the gateway never adds) is taken.
    pub(crate) fn include_usage(&self) -> Result<bool, Error> {
        let Some(options) = self.get("stream_options") else {
            return Ok(false);
        };
        let o = options
            .as_object()
            .ok_or_else(|| bad("`stream_options` must be an object"))?;
        if let Some(k) = o
            .keys()
            .find(|k| !["include_usage", "include_obfuscation"].contains(&k.as_str()))
        {
            return Err(bad(format!("`stream_options.{k}` is not served")));
        }
        Ok(flag("stream_options.include_usage", o.get("include_usage"))?.unwrap_or(false))
    }
}

/// The checks every client API's request gets once decoded: something to answer (a
/// message that says something), and a tool choice the tools can meet. `messages` names the field the conversation came in.
pub(crate) fn check(request: &Request, messages: &str) -> Result<(), Error> {
    let said =
        |p: &kite_core::Part| !matches!(p, kite_core::Part::Text { text } if text.is_empty());
    if request.messages.is_empty() {
        return Err(bad(format!(
            "`{messages}` is empty: there is nothing to answer"
        )));
    }
    let asked = |m: &kite_core::Message| m.role != kite_core::Role::System;
    if !request
        .messages
        .iter()
        .any(|m| asked(m) && m.parts.iter().any(said))
    {
        return Err(bad(format!(
            "`{messages}` holds no text or other content: there is nothing to answer"
        )));
    }
    match &request.tool_choice {
        Some(ToolChoice::Required) if request.tools.is_empty() => Err(bad(
            "`tool_choice` asks for a tool call, but `tools` offers none",
        )),
        Some(ToolChoice::Tool(name)) if !request.tools.iter().any(|t| &t.name == name) => Err(bad(
            format!("`tool_choice` names the tool `{name}`, which `tools` does not offer"),
        )),
        _ => Ok(()),
    }
}

/// `v` as JSON, cut to 40 characters: enough to see what was sent, never a whole body.
fn clipped(v: &Value) -> String {
    let whole = v.to_string();
    match whole.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &whole[..at]),
        None => whole,
    }
}

/// A type or role a client gave, as a client reads it: in backticks, or `none`.
pub(crate) fn shown(given: Option<&str>) -> String {
    match given {
        Some(s) => format!("`{s}`"),
        None => "none".to_owned(),
    }
}

/// The field a refusal names: the decoders begin their messages with it (`` `n` is not
/// served… ``, `tools[0]: …`, `messages.1: …`). None when the message names none.
pub(crate) fn param_of(message: &str) -> Option<&str> {
    let m = message.strip_prefix("invalid request: ").unwrap_or(message);
    let name = match m.strip_prefix('`') {
        Some(rest) => rest.split_once('`')?.0,
        None => m.split_once(": ")?.0,
    };
    let path = |c: char| c.is_ascii_alphanumeric() || "_.[]-".contains(c);
    let first = name.chars().next()?;
    (first.is_ascii_alphabetic() || first == '_')
        .then_some(name)
        .filter(|n| n.chars().all(path))
}

/// The media type and base64 data of a `data:TYPE;base64,DATA` URL.
pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let (head, data) = url.strip_prefix("data:")?.split_once(',')?;
    Some((head.strip_suffix(";base64")?, data))
}

/// A file a client sends inline as a data URL (`data:application/pdf;base64,...`), named
/// `name`, as a document: OpenAI's `file` and `input_file` parts. Files kept by the
/// provider (`file_id`) are not: the gateway keeps none.
pub(crate) fn inline_file(
    file_data: Option<&str>,
    file_id: Option<&Value>,
    name: Option<&str>,
) -> Result<kite_core::Part, String> {
    if file_id.is_some_and(|f| !f.is_null()) {
        return Err(
            "a file by `file_id` is not served: this gateway keeps no stored \
                    files; give `file_data`"
                .into(),
        );
    }
    let data = file_data.ok_or("a file part needs `file_data`")?;
    let (media_type, data) = data_url(data)
        .filter(|(media_type, _)| !media_type.is_empty())
        .ok_or("`file_data` must be a base64 data URL (data:TYPE;base64,...)")?;
    let mut d = kite_core::Document::new(kite_core::DocumentSource::Base64 {
        media_type: media_type.to_owned(),
        data: data.to_owned(),
    });
    d.title = name.map(str::to_owned);
    Ok(kite_core::Part::Document(d))
}

/// Refuses a field of the object `v` that `fields` does not name (a null one counts as
/// absent): a field inside a message, part or tool that kite does not know is refused as a
/// top-level one is, not dropped unseen. `what` names the object ("a message").
pub(crate) fn known(v: &Value, what: &str, fields: &[&str]) -> Result<(), String> {
    let Some(o) = v.as_object() else {
        return Err(format!("{what} must be an object"));
    };
    match o
        .iter()
        .find(|(k, v)| !v.is_null() && !fields.contains(&k.as_str()))
    {
        Some((k, _)) => Err(format!(
            "`{k}` is not a field of {what} that this gateway serves"
        )),
        None => Ok(()),
    }
}

/// `null`, `false` or the like: a value that asks for nothing.
pub(crate) fn nothing(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Bool(true) => false,
    }
}

/// A factor of 1 (or null) asks for nothing: `repetition_penalty`'s neutral value.
pub(crate) fn one(v: &Value) -> bool {
    v.is_null() || v.as_f64() == Some(1.0)
}

/// The service tiers that ask for no particular one.
pub(crate) fn default_tier(v: &Value) -> bool {
    matches!(v.as_str(), Some("auto" | "default" | "standard_only"))
}

/// The boolean `field` called `name` of a client's request (`None` when absent or null), refused
/// when it is anything else: `"stream": "yes"` is a mistake to say, not a `false` to guess.
pub(crate) fn flag(name: &str, field: Option<&Value>) -> Result<Option<bool>, Error> {
    match field {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(bad(format!("`{name}` must be true or false, not {other}"))),
    }
}

/// The number `field` called `name` of a client's request, within `range` (`None` when
/// absent or null), refused when it is not a number or out of range: a sampling setting
/// the gateway would drop unseen changes what the client pays for.
pub(crate) fn number(
    name: &str,
    field: Option<&Value>,
    range: std::ops::RangeInclusive<f64>,
) -> Result<Option<f64>, Error> {
    match field {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if range.contains(&x) => Ok(Some(x)),
            _ => Err(bad(format!(
                "`{name}` must be between {} and {}, not {n}",
                range.start(),
                range.end()
            ))),
        },
        Some(other) => Err(bad(format!("`{name}` must be a number, not {other}"))),
    }
}

/// The token count `field` called `name` of a client's request: a whole number from 1
/// (`None` when absent or null); larger than kite counts, it is kite's largest.
pub(crate) fn tokens(name: &str, field: Option<&Value>) -> Result<Option<u32>, Error> {
    match field {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(t) if t >= 1 => u32::try_from(t).map(Some).map_err(|_| {
                bad(format!(
                    "`{name}` must be a whole number of tokens up to {}, not {n}",
                    u32::MAX
                ))
            }),
            _ => Err(bad(format!(
                "`{name}` must be a whole number of tokens from 1, not {n}"
            ))),
        },
        Some(other) => Err(bad(format!(
            "`{name}` must be a whole number of tokens, not {other}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::param_of;

    #[test]
    fn a_refusal_names_its_field_as_param() {
        for (message, param) in [
            (
                "invalid request: `n` is not served: one answer only",
                Some("n"),
            ),
            (
                "invalid request: tools[0]: a tool needs a name",
                Some("tools[0]"),
            ),
            ("messages.1: role: `x` is not user", Some("messages.1")),
            ("`tool_choice.name` is missing", Some("tool_choice.name")),
            ("the body is not JSON: EOF", None),
            ("no route serves that", None),
        ] {
            assert_eq!(param_of(message), param, "{message}");
        }
    }
}
