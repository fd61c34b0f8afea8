//! Finding what looks like an API key in text, so that it is never written to a cassette.
//!
//! Written by hand: a handful of fixed prefixes followed by a run of key characters is all
//! it takes, and a regex engine would be the heaviest dependency of the transport.
//!
//! A body is scanned three ways: its raw text; each JSON string it holds, decoded (a key
//! written with escapes); and, for an event stream, the strings at the same place in
//! successive events joined together (a key streamed out in pieces).

use serde_json::Value;
use std::collections::BTreeMap;

/// Key prefixes and the shortest run of key characters that must follow them.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 20),     // OpenAI, Anthropic (sk-ant-), OpenRouter (sk-or-), DeepSeek
    ("gsk_", 20),    // Groq
    ("xai-", 20),    // xAI
    ("AIza", 30),    // Google
    ("AKIA", 16),    // AWS access key ids
    ("Bearer ", 20), // any bearer token
    ("ghp_", 30),    // GitHub
    ("hf_", 30),     // Hugging Face
];

/// A place in `text` that looks like a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Byte offset of the match.
    pub offset: usize,
    /// The prefix it starts with, and its length; never the key itself.
    pub kind: &'static str,
    pub len: usize,
}

fn key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'
}

/// Every place in `text` that looks like a key.
pub fn scan(text: &str) -> Vec<Finding> {
    matches(text).into_iter().map(|(f, _)| f).collect()
}

/// Every place in a body (JSON, an event stream, or any text) that looks like a key: in
/// its raw text, in each JSON string decoded, and in the text a stream spreads over its
/// events. A key found only in decoded or joined text is reported at the start of the
/// event (or body) it begins in.
pub fn scan_body(body: &[u8]) -> Vec<Finding> {
    let text = String::from_utf8_lossy(body);
    let raw = matches(&text);
    let mut seen: Vec<String> = raw.iter().map(|(_, k)| (*k).to_owned()).collect();
    let mut out: Vec<Finding> = raw.into_iter().map(|(f, _)| f).collect();
    // Each decoded string with its event's offset; and the strings at each place in the
    // JSON joined over events, with where each piece starts and its event's offset.
    let mut decoded = Vec::new();
    let mut joined: BTreeMap<String, (String, Vec<(usize, usize)>)> = BTreeMap::new();
    for (offset, payload) in payloads(&text) {
        let Ok(value) = serde_json::from_str::<Value>(payload) else {
            continue;
        };
        strings(&value, &mut String::new(), &mut |path, s| {
            decoded.push((offset, s.to_owned()));
            let (all, starts) = joined.entry(path.to_owned()).or_default();
            starts.push((all.len(), offset));
            all.push_str(s);
        });
    }
    let mut report = |text: &str, at: &dyn Fn(usize) -> usize| {
        for (f, key) in matches(text) {
            if !seen.iter().any(|k| k == key) {
                seen.push(key.to_owned());
                out.push(Finding {
                    offset: at(f.offset),
                    ..f
                });
            }
        }
    };
    for (offset, s) in &decoded {
        report(s, &|_| *offset);
    }
    for (all, starts) in joined.values() {
        report(all, &|i| {
            starts
                .iter()
                .rev()
                .find(|(from, _)| *from <= i)
                .map_or(0, |(_, offset)| *offset)
        });
    }
    out.sort_by_key(|f| f.offset);
    out
}

/// The JSON payloads of a body with their byte offsets: each event's `data` of an event
/// stream, or the whole body.
fn payloads(text: &str) -> Vec<(usize, &str)> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return vec![(text.len() - trimmed.len(), trimmed)];
    }
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(data) = line.strip_prefix("data:") {
            out.push((offset, data.trim()));
        }
        offset += line.len();
    }
    out
}

/// Calls `f` with each string in `v` and its place (object keys and array indices).
fn strings(v: &Value, path: &mut String, f: &mut dyn FnMut(&str, &str)) {
    let len = path.len();
    match v {
        Value::String(s) => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("/{i}"));
                strings(item, path, f);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push('/');
                path.push_str(k);
                strings(item, path, f);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Every place in `text` that looks like a key, with the key itself (kept inside this
/// module, to tell findings apart).
fn matches(text: &str) -> Vec<(Finding, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    for (prefix, min) in PREFIXES {
        let mut from = 0;
        let p = prefix.as_bytes();
        while let Some(at) = bytes[from..].windows(p.len()).position(|w| w == p) {
            let start = from + at;
            // A key starts a word: `task-` must not count as `sk-`.
            let starts_word = start == 0 || !key_char(bytes[start - 1]);
            let body = start + prefix.len();
            let run = bytes[body..].iter().take_while(|b| key_char(**b)).count();
            if starts_word && run >= *min {
                let len = prefix.len() + run;
                let finding = Finding {
                    offset: start,
                    kind: prefix,
                    len,
                };
                out.push((finding, &text[start..start + len]));
            }
            from = body + run.max(1).min(bytes.len() - body);
            if from >= bytes.len() {
                break;
            }
        }
    }
    out.sort_by_key(|(f, _)| f.offset);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_and_look_alikes_are_not() {
        let found = scan(
            r#"{"a":"sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX","b":"Bearer abcdefghijklmnopqrstuvwxyz0123"}"#,
        );
        assert_eq!(
            found.iter().map(|f| f.kind).collect::<Vec<_>>(),
            ["sk-", "Bearer "]
        );
        assert!(scan("a task-ABCDEFGHIJKLMNOPQRSTUVWXYZ and sk-short").is_empty());
        assert!(scan("").is_empty());
        assert!(
            scan("sk-é Bearer ü sk-").is_empty(),
            "no panic inside a character"
        );
        assert_eq!(scan("sk-").len(), 0);
        assert_eq!(
            scan("xsk-ABCDEFGHIJKLMNOPQRSTUVWXYZ gsk_ABCDEFGHIJKLMNOPQRSTUVWXYZ").len(),
            1
        );
    }

    const SPLIT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"the key is sk-proj-ABCDEF\"}}]}\n\n\
                         data: {\"choices\":[{\"delta\":{\"content\":\"GHIJKLMNOPQRSTUVWXYZ, keep it\"}}]}\n\n\
                         data: [DONE]\n\n";

    #[test]
    fn a_key_split_across_stream_events_is_found_at_the_event_it_starts_in() {
        assert!(scan(SPLIT).is_empty(), "no piece alone looks like a key");
        let found = scan_body(SPLIT.as_bytes());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].kind, found[0].len, found[0].offset),
            ("sk-", 34, 0)
        );
    }

    #[test]
    fn an_escaped_key_is_found_once_and_a_plain_one_is_not_reported_twice() {
        let escaped = r#"{"a":"sk\u002dABCDEFGHIJKLMNOPQRSTUVWXYZ"}"#;
        assert!(scan(escaped).is_empty());
        assert_eq!(scan_body(escaped.as_bytes()).len(), 1);
        let plain = r#"{"a":"sk-ABCDEFGHIJKLMNOPQRSTUVWXYZ"}"#;
        assert_eq!(scan_body(plain.as_bytes()).len(), 1);
        assert!(
            scan_body(b"data: {\"a\":\"sk-\"}\n\ndata: {\"b\":\"ABCDEFGHIJKLMNOPQRSTUVWXYZ\"}\n\n")
                .is_empty(),
            "pieces at different places are not joined"
        );
        assert!(scan_body(b"\xff\xfe not json { at all").is_empty());
    }
}
