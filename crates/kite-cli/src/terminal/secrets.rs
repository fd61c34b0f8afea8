//! The secrets kite knows of: provider keys, MCP servers' tokens and header values, the
//! gateway's client keys, OAuth tokens as they are refreshed. Registered once, then hidden
//! from everything kite writes: the log (`logging`), the answer and errors (`output`), and
//! the turns it stores (`session::history`).

use std::sync::RwLock;

/// What must never be written: every value registered with [`secret`].
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Secrets that come and go (OAuth tokens, refreshed again and again by a long `kite
/// serve`): the newest [`PASSING`] of them, hidden as the others are.
static PASSING_SECRETS: RwLock<std::collections::VecDeque<String>> =
    RwLock::new(std::collections::VecDeque::new());

/// How many passing secrets are hidden: those of hours of refreshes.
const PASSING: usize = 256;

/// Every secret registered so far.
pub(crate) fn secrets() -> Vec<String> {
    let mut all = SECRETS.read().unwrap_or_else(|e| e.into_inner()).clone();
    all.extend(
        PASSING_SECRETS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned(),
    );
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    all
}

/// Keeps `value` out of the log from now on (values shorter than
/// [`MIN_SECRET`](kite::redact::MIN_SECRET) are placeholders and words, not hidden).
pub(crate) fn secret(value: &str) {
    let value = value.trim();
    if value.len() < kite::redact::MIN_SECRET {
        return;
    }
    let mut all = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|s| s == value) {
        all.push(value.to_owned());
        // The longest first, so a secret that holds another is hidden whole.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// Registers a secret that will pass (a token a refresh replaces): the oldest of them are
/// let go past [`PASSING`], so that a server refreshing for months does not slow every line.
pub(crate) fn passing_secret(value: &str) {
    let value = value.trim();
    if value.len() < kite::redact::MIN_SECRET {
        return;
    }
    let mut all = PASSING_SECRETS.write().unwrap_or_else(|e| e.into_inner());
    // One told again is the newest again: a secret still in use is never let go.
    all.retain(|s| s != value);
    all.push_back(value.to_owned());
    if all.len() > PASSING {
        all.pop_front();
    }
}

/// `text` with every registered secret replaced.
pub(crate) fn redact(text: &str) -> String {
    let text = kite::http::redact_all(text, &SECRETS.read().unwrap_or_else(|e| e.into_inner()));
    let passing = PASSING_SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if passing.is_empty() {
        return text;
    }
    let mut longest: Vec<&String> = passing.iter().collect();
    longest.sort_by_key(|s| std::cmp::Reverse(s.len()));
    kite::http::redact_all(&text, &longest)
}
