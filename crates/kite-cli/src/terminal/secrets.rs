//! The secrets kite knows of: provider keys, MCP servers' tokens and header values, the
//! gateway's client keys, OAuth tokens as they are refreshed. Registered once, in one
//! [`Secrets`] list that the log (`logging`), the answer and errors (`output`), the turns
//! kite stores (`session::history`), tool results (the agent) and the gateway share, so a
//! token learnt late is hidden everywhere from then on.

use kite::redact::Secrets;
use std::sync::LazyLock;

/// Every value registered with [`secret`] or [`passing_secret`].
static KNOWN: LazyLock<Secrets> = LazyLock::new(Secrets::new);

/// The list itself, to hand to the parts of kite that hide secrets as they go.
pub(crate) fn known() -> &'static Secrets {
    &KNOWN
}

/// Every secret registered so far, the longest first.
pub(crate) fn secrets() -> Vec<String> {
    KNOWN.all()
}

/// Keeps `value` out of everything kite writes from now on (values shorter than
/// [`MIN_SECRET`](kite::redact::MIN_SECRET) are placeholders and words, not hidden).
pub(crate) fn secret(value: &str) {
    KNOWN.add(value);
}

/// Registers a secret that will pass (a token a refresh replaces): the oldest of them are
/// let go past [`PASSING`](kite::redact::PASSING).
pub(crate) fn passing_secret(value: &str) {
    KNOWN.add_passing(value);
}

/// `text` with every registered secret replaced.
pub(crate) fn redact(text: &str) -> String {
    KNOWN.redact(text)
}
