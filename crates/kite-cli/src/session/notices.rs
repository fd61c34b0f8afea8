//! What a session says on stderr as it opens: that the local model's context is crowded by
//! tools, or that the conversation continued was had with another model.

use super::Session;
use crate::terminal::output::errln;

impl Session {
    /// Says so when the conversation continued was had with another model than the one
    /// that answers now: it goes on, but not unseen.
    pub(crate) fn say_if_another_model(&self) {
        let Some(c) = self.thread.conversation() else {
            return;
        };
        let Some(before) = c.model.as_deref().filter(|m| *m != self.chosen.name) else {
            return;
        };
        let by = |provider: Option<&str>, model: &str| match provider {
            Some(p) => format!("{model} ({p})"),
            None => model.to_owned(),
        };
        errln!(
            "kite: this conversation was with {}; it goes on with {} (--model {} keeps it)",
            crate::terminal::text::printable(&by(c.provider.as_deref(), before)),
            by(
                Some(&self.chosen.model.origin().provider),
                &self.chosen.name
            ),
            crate::terminal::text::printable(before)
        );
    }

    /// For the local model's small context: says when the tools' definitions take more
    /// than half of it.
    pub(super) fn warn_of_crowded_context(&self) {
        let (true, Some(window)) = (self.chosen.local, self.chosen.window) else {
            return;
        };
        let specs = self.agent.tools().specs();
        if specs.is_empty() {
            return;
        }
        let text = serde_json::to_string(&specs).unwrap_or_default();
        let used = self.chosen.tokens.count(&text);
        if used > u64::from(window) / 2 {
            errln!(
                "kite: the {} tools' definitions take {used} of the local model's {window} \
                 tokens of context; it will be slow and may fail. Offer fewer (--no-mcp, \
                 fewer servers in kite.toml) or a larger --context-size",
                specs.len()
            );
        }
    }
}
