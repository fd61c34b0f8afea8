//! Finding what looks like an API key in text, so that it is never written to a cassette.
//!
//! Written by hand: a handful of fixed prefixes followed by a run of key characters is all
//! it takes, and a regex engine would be the heaviest dependency of the transport.

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
                out.push(Finding {
                    offset: start,
                    kind: prefix,
                    len: prefix.len() + run,
                });
            }
            from = body + run.max(1).min(bytes.len() - body);
            if from >= bytes.len() {
                break;
            }
        }
    }
    out.sort_by_key(|f| f.offset);
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
}
