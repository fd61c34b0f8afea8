//! [`Secrets`]: every secret a program knows, in one list its parts share, so that a value
//! learnt late (an OAuth token a refresh brings) is hidden everywhere from then on.

use super::{MIN_SECRET, redact_all, redact_parts};
use crate::{Message, ToolResult};
use std::collections::VecDeque;
use std::sync::{Arc, RwLock};

/// How many passing secrets (tokens a refresh replaces) are kept: those of hours of
/// refreshes, so that a server refreshing for months does not slow every redaction.
pub const PASSING: usize = 256;

/// Every secret a program knows: values told once (keys, configured headers) and values
/// that come and go (tokens, the newest [`PASSING`] of them). Clones share one list.
/// Values shorter than [`MIN_SECRET`] are not kept. `Debug` shows how many there are,
/// never a value.
#[derive(Clone, Default)]
pub struct Secrets(Arc<RwLock<Known>>);

#[derive(Default)]
struct Known {
    /// The longest first, so that a secret that holds another is hidden whole.
    lasting: Vec<String>,
    passing: VecDeque<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = self.0.read().unwrap_or_else(|e| e.into_inner());
        write!(f, "Secrets({})", known.lasting.len() + known.passing.len())
    }
}

impl Secrets {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// A list of `values`.
    pub fn of<S: AsRef<str>>(values: &[S]) -> Self {
        let secrets = Self::new();
        for v in values {
            secrets.add(v.as_ref());
        }
        secrets
    }

    /// Hides `value` from now on.
    pub fn add(&self, value: &str) {
        let value = value.trim();
        if value.len() < MIN_SECRET {
            return;
        }
        let mut known = self.0.write().unwrap_or_else(|e| e.into_inner());
        if !known.lasting.iter().any(|s| s == value) {
            known.lasting.push(value.to_owned());
            known.lasting.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// Hides `value`, a secret that will pass (a token a refresh replaces), from now on:
    /// the oldest are let go past [`PASSING`], and one told again is the newest again.
    pub fn add_passing(&self, value: &str) {
        let value = value.trim();
        if value.len() < MIN_SECRET {
            return;
        }
        let mut known = self.0.write().unwrap_or_else(|e| e.into_inner());
        known.passing.retain(|s| s != value);
        known.passing.push_back(value.to_owned());
        if known.passing.len() > PASSING {
            known.passing.pop_front();
        }
    }

    /// Every secret known now, the longest first.
    pub fn all(&self) -> Vec<String> {
        let known = self.0.read().unwrap_or_else(|e| e.into_inner());
        let mut all = known.lasting.clone();
        all.extend(known.passing.iter().cloned());
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all
    }

    /// Whether no secret is known.
    pub fn is_empty(&self) -> bool {
        let known = self.0.read().unwrap_or_else(|e| e.into_inner());
        known.lasting.is_empty() && known.passing.is_empty()
    }

    /// `text` with every known secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        if self.is_empty() {
            return text.to_owned();
        }
        redact_all(text, &self.all())
    }

    /// `message` with every known secret replaced in what was said (see
    /// [`redact_message`](super::redact_message)).
    pub fn redact_message(&self, message: &mut Message) {
        if !self.is_empty() {
            redact_parts(&mut message.parts, &self.all());
        }
    }

    /// A tool's result with every known secret replaced in what it says.
    pub fn redact_result(&self, result: &mut ToolResult) {
        if !self.is_empty() {
            redact_parts(&mut result.content, &self.all());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Part;

    #[test]
    fn clones_share_what_is_learnt_later_and_debug_shows_no_value() {
        let secrets = Secrets::of(&["sk-first-key-0001"]);
        let shared = secrets.clone();
        secrets.add_passing("oauth-token-0002");
        secrets.add("short");
        assert_eq!(
            shared.redact("sk-first-key-0001 and oauth-token-0002, short"),
            "[redacted] and [redacted], short"
        );
        assert_eq!(format!("{shared:?}"), "Secrets(2)");
    }

    #[test]
    fn the_oldest_passing_secrets_are_let_go_and_one_told_again_is_kept() {
        let secrets = Secrets::new();
        secrets.add_passing("token-number-0");
        for i in 1..=PASSING {
            secrets.add_passing(&format!("token-number-{i}"));
            if i == PASSING / 2 {
                secrets.add_passing("token-number-0");
            }
        }
        assert_eq!(secrets.all().len(), PASSING);
        assert_eq!(secrets.redact("token-number-0"), "[redacted]");
        assert_eq!(secrets.redact("token-number-1"), "token-number-1");
    }

    #[test]
    fn a_tool_result_is_redacted_at_any_depth() {
        let secrets = Secrets::of(&["ghp_the-token-of-a-server"]);
        let mut result = ToolResult {
            call_id: "c".into(),
            name: None,
            content: vec![Part::text("token: ghp_the-token-of-a-server")],
            is_error: false,
        };
        secrets.redact_result(&mut result);
        assert_eq!(result.content, vec![Part::text("token: [redacted]")]);
    }
}
