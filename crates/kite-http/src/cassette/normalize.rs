//! Request bodies reduced to what matters for matching: keys sorted, volatile fields gone,
//! tools in name order, plus the user's own rules. A `multipart/form-data` upload (audio)
//! becomes its fields and, for each file, its name, type, size and SHA-256.

use bytes::Bytes;
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

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
    /// The normalized form of a request body sent with `content_type`: JSON re-written
    /// with sorted keys, a multipart upload as `{"fields": …, "files": …}`, or else the body
    /// as text (a digest when it is not text).
    pub fn normalize(&self, content_type: Option<&str>, body: &[u8]) -> Normalized {
        let parsed = match content_type {
            Some(ct) if ct.starts_with("multipart/form-data") => multipart(ct, body),
            _ => serde_json::from_slice::<Value>(body).ok(),
        };
        let Some(mut v) = parsed else {
            return Normalized::Text(match std::str::from_utf8(body) {
                Ok(text) => text.to_owned(),
                Err(_) => format!("<{} bytes, sha256 {}>", body.len(), sha256(body)),
            });
        };
        if let Value::Object(map) = &mut v {
            let fields = match map.get_mut("fields") {
                Some(Value::Object(fields)) => fields,
                _ => map,
            };
            for k in VOLATILE {
                fields.remove(*k);
            }
            if let Some(Value::Array(tools)) = fields.get_mut("tools") {
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
    /// A JSON body or multipart upload, keys sorted and the rules applied.
    Json(Value),
    /// Any other body: its text, or a digest when it is not text.
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

/// A `multipart/form-data` body as `{"fields": {name: value}, "files": {name: {filename,
/// content_type, bytes, sha256}}}`; a name sent more than once holds a list. `None` when
/// the body does not parse.
///
/// `multer` parses streams; the body is already whole, so every step is ready at once.
fn multipart(content_type: &str, body: &[u8]) -> Option<Value> {
    let boundary = multer::parse_boundary(content_type).ok()?;
    let whole = Bytes::copy_from_slice(body);
    let stream = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(whole)]);
    let mut form = multer::Multipart::new(stream, boundary);
    let (mut fields, mut files) = (Map::new(), Map::new());
    while let Some(field) = form.next_field().now_or_never()?.ok()? {
        let name = field.name().unwrap_or_default().to_owned();
        let filename = field.file_name().map(str::to_owned);
        let media = field.content_type().map(ToString::to_string);
        let data = field.bytes().now_or_never()?.ok()?;
        let (map, value) = match filename {
            Some(filename) => (
                &mut files,
                json!({"filename": filename, "content_type": media, "bytes": data.len(),
                       "sha256": sha256(&data)}),
            ),
            None => (
                &mut fields,
                Value::String(String::from_utf8_lossy(&data).into_owned()),
            ),
        };
        match map.get_mut(&name) {
            Some(Value::Array(list)) => list.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                map.insert(name, value);
            }
        }
    }
    Some(json!({"fields": fields, "files": files}))
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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
            None,
            json!({"model": "m", "stream_options": {"include_usage": true}, "user": "u1",
                   "temperature": 0.2, "messages": [{"role": "user", "content": "hi"}],
                   "tools": [{"type": "function", "function": {"name": "b"}},
                             {"type": "function", "function": {"name": "a"}}]})
            .to_string()
            .as_bytes(),
        );
        let b = rules.normalize(
            None,
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
            rules.normalize(None, b"not json"),
            Normalized::Text("not json".into())
        );
    }

    #[test]
    fn an_upload_becomes_its_fields_and_a_digest_of_each_file() {
        use kite_core::{Audio, TranscriptionRequest};
        let mut req = TranscriptionRequest::new("whisper-1", Audio::new("a.mp3", vec![7; 1000]));
        req.language = Some("en".into());
        req.timestamp_granularities = vec!["word".into(), "segment".into()];
        let form = kite_wire::audio::encode_request(&req, false).unwrap();
        let rules = Rules {
            ignore: vec!["/fields/language".into()],
            mask: vec![],
        };
        let Normalized::Json(v) = rules.normalize(Some(&form.content_type), &form.body) else {
            panic!("not parsed");
        };
        assert_eq!(v["fields"]["model"], "whisper-1");
        assert!(v["fields"].get("language").is_none(), "ignored by a rule");
        assert_eq!(
            v["fields"]["timestamp_granularities[]"],
            json!(["word", "segment"])
        );
        let file = &v["files"]["file"];
        assert_eq!(file["filename"], "a.mp3");
        assert_eq!(file["content_type"], "audio/mpeg");
        assert_eq!(file["bytes"], 1000);
        assert_eq!(file["sha256"], sha256(&[7; 1000]));
        // Another file, same fields: the digest tells them apart.
        let other = kite_wire::audio::encode_request(
            &TranscriptionRequest {
                audio: Audio::new("a.mp3", vec![8; 1000]),
                ..req
            },
            false,
        )
        .unwrap();
        assert_ne!(
            rules.normalize(Some(&other.content_type), &other.body),
            Normalized::Json(v)
        );
        // A body that is not text is summarized, never written raw.
        let Normalized::Text(t) = rules.normalize(None, &[0xff, 0xfe, 0]) else {
            panic!()
        };
        assert!(t.starts_with("<3 bytes, sha256 "), "{t}");
    }
}
