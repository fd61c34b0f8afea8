//! Request bodies reduced to what matters for matching: keys sorted, volatile fields gone,
//! tools in name order, plus the user's own rules.

use serde_json::{Map, Value};

/// Fields that change between runs without changing what is asked, removed before matching.
const VOLATILE: &[&str] = &["stream_options", "metadata", "user", "safety_identifier"];

/// How request bodies are normalized before they are stored and compared.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// JSON pointers (`/temperature`, `/messages/0/content`) removed before matching.
    pub ignore: Vec<String>,
    /// JSON pointers whose values are replaced by `"<masked>"` (still present, never
    /// compared, never written).
    pub mask: Vec<String>,
}

impl Rules {
    /// The normalized form of a request body: JSON re-written with sorted keys, or the
    /// body as text when it is not JSON.
    pub fn normalize(&self, body: &[u8]) -> Normalized {
        let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
            return Normalized::Text(String::from_utf8_lossy(body).into_owned());
        };
        if let Value::Object(map) = &mut v {
            for k in VOLATILE {
                map.remove(*k);
            }
            if let Some(Value::Array(tools)) = map.get_mut("tools") {
                tools.sort_by_key(tool_name);
            }
        }
        for p in &self.ignore {
            remove_pointer(&mut v, p);
        }
        for p in &self.mask {
            if let Some(slot) = v.pointer_mut(p) {
                *slot = Value::String("<masked>".into());
            }
        }
        Normalized::Json(sorted(v))
    }
}

/// A normalized body.
#[derive(Clone, Debug, PartialEq)]
pub enum Normalized {
    Json(Value),
    Text(String),
}

impl Normalized {
    /// The form written to disk and shown in diffs: pretty JSON, or the text.
    pub fn pretty(&self) -> String {
        match self {
            Normalized::Json(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
            Normalized::Text(t) => t.clone(),
        }
    }
}

fn tool_name(t: &Value) -> String {
    t.pointer("/function/name")
        .or_else(|| t.get("name"))
        .or_else(|| t.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// `v` with every object's keys in sorted order, so equal bodies print equal.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn volatile_fields_go_tools_sort_and_rules_apply() {
        let rules = Rules {
            ignore: vec!["/temperature".into()],
            mask: vec!["/messages/0/content".into()],
        };
        let a = rules.normalize(
            json!({"model": "m", "stream_options": {"include_usage": true}, "user": "u1",
                   "temperature": 0.2, "messages": [{"role": "user", "content": "hi"}],
                   "tools": [{"type": "function", "function": {"name": "b"}},
                             {"type": "function", "function": {"name": "a"}}]})
            .to_string()
            .as_bytes(),
        );
        let b = rules.normalize(
            br#"{ "tools": [{"function": {"name": "a"}, "type": "function"},
                           {"function": {"name": "b"}, "type": "function"}],
                 "messages": [{"content": "hello", "role": "user"}], "model": "m",
                 "temperature": 1.0, "metadata": {"run": 7} }"#,
        );
        assert_eq!(a, b);
        assert_eq!(
            a,
            Normalized::Json(
                json!({"messages": [{"content": "<masked>", "role": "user"}],
                "model": "m", "tools": [{"function": {"name": "a"}, "type": "function"},
                {"function": {"name": "b"}, "type": "function"}]})
            )
        );
        assert!(a.pretty().find("\"messages\"").unwrap() < a.pretty().find("\"model\"").unwrap());
        assert_eq!(
            rules.normalize(b"not json"),
            Normalized::Text("not json".into())
        );
    }
}
