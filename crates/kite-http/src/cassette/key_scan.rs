//! Finding what looks like an API key in text, so that it is never written to a cassette.
//!
//! Written by hand: a handful of fixed prefixes followed by a run of key characters is all
//! it takes, and a regex engine would be the heaviest dependency of the transport.
//!
//! A body is scanned three ways: its raw text; each JSON string (and object key) it holds,
//! decoded, and JSON held inside such a string, decoded in turn (a key written with
//! escapes); and, for an event stream or JSON lines, the strings at the same place in
//! successive events joined together (a key streamed out in pieces). Events are split here
//! rather than by the SSE framer because a finding must point at the event it begins in.

use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

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
    /// The prefix it starts with; never the key itself.
    pub kind: &'static str,
    /// Length in bytes of the key, prefix included.
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
    let mut seen: HashSet<String> = raw.iter().map(|(_, k)| (*k).to_owned()).collect();
    let mut out: Vec<Finding> = raw.into_iter().map(|(f, _)| f).collect();
    // Each decoded string with its event's offset; and the strings at each place in the
    // JSON joined over events, with where each piece starts and its event's offset.
    let mut decoded = Vec::new();
    let mut joined: BTreeMap<String, (String, Vec<(usize, usize)>)> = BTreeMap::new();
    for (offset, payload) in payloads(&text) {
        let Ok(value) = serde_json::from_str::<Value>(&payload) else {
            continue;
        };
        strings(&value, &mut String::new(), 0, &mut |path, s| {
            decoded.push((offset, s.to_owned()));
            let (all, starts) = joined.entry(path.to_owned()).or_default();
            starts.push((all.len(), offset));
            all.push_str(s);
        });
    }
    let mut report = |text: &str, at: &dyn Fn(usize) -> usize| {
        for (f, key) in matches(text) {
            if seen.insert(key.to_owned()) {
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
            // The last piece that starts at or before `i` (pieces are in order).
            let n = starts.partition_point(|(from, _)| *from <= i);
            n.checked_sub(1).map_or(0, |n| starts[n].1)
        });
    }
    out.sort_by_key(|f| f.offset);
    out
}

/// The JSON payloads of a body with their byte offsets: the whole body when it is JSON,
/// else each event's `data` of an event stream (lines ended by LF, CR or CRLF, `data`
/// lines of one event joined), else each line (JSON lines).
fn payloads(text: &str) -> Vec<(usize, String)> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let start = text.len() - body.len();
    let trimmed = body.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok()
    {
        return vec![(text.len() - trimmed.len(), trimmed.to_owned())];
    }
    let mut lines = Vec::new();
    let bytes = body.as_bytes();
    let mut from = 0;
    while from <= bytes.len() {
        let end = bytes[from..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
            .map_or(bytes.len(), |i| from + i);
        lines.push((start + from, &body[from..end]));
        if end == bytes.len() {
            break;
        }
        from = end + 1 + usize::from(bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n'));
    }
    let mut events: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (offset, line) in &lines {
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.strip_prefix(' ').unwrap_or(data);
            match events.last_mut() {
                Some((_, joined)) if open => {
                    joined.push('\n');
                    joined.push_str(data);
                }
                _ => events.push((*offset, data.to_owned())),
            }
            open = true;
        } else if line.is_empty() {
            open = false;
        }
    }
    if events.is_empty() {
        // Not an event stream: JSON lines, perhaps.
        events = lines
            .iter()
            .filter(|(_, l)| l.trim_start().starts_with(['{', '[']))
            .map(|(o, l)| (*o, (*l).to_owned()))
            .collect();
    }
    events
}

/// Calls `f` with each string and object key in `v` and its place (object keys and array
/// indices); a string that holds JSON is walked too, a level or two down.
fn strings(v: &Value, path: &mut String, depth: u8, f: &mut dyn FnMut(&str, &str)) {
    let len = path.len();
    match v {
        Value::String(s) => {
            f(path, s);
            let t = s.trim_start();
            if depth < 2
                && (t.starts_with('{') || t.starts_with('['))
                && let Ok(inner) = serde_json::from_str::<Value>(t)
            {
                path.push_str("/(json)");
                strings(&inner, path, depth + 1, f);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("/{i}"));
                strings(item, path, depth, f);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push('/');
                f(path, k);
                path.push_str(k);
                strings(item, path, depth, f);
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

    #[test]
    fn other_framings_of_a_split_or_hidden_key_are_found_too() {
        let crlf = SPLIT.replace("\n", "\r\n");
        let cr = SPLIT.replace("\n", "\r");
        let bom = format!("\u{feff}{SPLIT}");
        let multiline = "data: {\"a\":\ndata: \"sk\\u002dproj-ABCDEFGHIJKLMNOPQRSTUVWXYZ\"}\n\n";
        let ndjson = "{\"t\":\"key sk-proj-ABCDEF\"}\n{\"t\":\"GHIJKLMNOPQRSTUVWXYZ\"}\n";
        let name = r#"{"sk\u002dproj-ABCDEFGHIJKLMNOPQRSTUVWXYZ": 1}"#;
        let nested = r#"{"arguments":"{\"k\":\"sk\\u002dproj-ABCDEFGHIJKLMNOPQRSTUVWXYZ\"}"}"#;
        for (what, body) in [
            ("crlf", crlf.as_str()),
            ("cr", cr.as_str()),
            ("bom", bom.as_str()),
            ("multi-line data", multiline),
            ("json lines", ndjson),
            ("object key", name),
            ("json in a string", nested),
        ] {
            assert!(scan(body).is_empty(), "{what}: the raw text hides it");
            assert_eq!(scan_body(body.as_bytes()).len(), 1, "{what}");
        }
    }

    #[test]
    fn many_keys_are_scanned_in_linear_time() {
        // Ten thousand distinct escaped keys: quadratic bookkeeping would take minutes.
        let body: String = (0..10_000)
            .map(|i| format!("{{\"k\":\"sk\\u002d{i:0>24}\"}}\n"))
            .collect();
        // Each key once, and the joined stream of them (one run of key characters).
        assert_eq!(scan_body(body.as_bytes()).len(), 10_001);
    }
}
