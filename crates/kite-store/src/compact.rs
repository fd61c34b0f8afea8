//! Compaction: when a conversation grows past its policy, the older turns are summarized
//! with a model call and archived (kept in the store, no longer sent), and the last turns
//! stay verbatim. Turns are whole units (a user message and everything it led to), so a
//! tool call is never separated from its result.

use crate::{Estimate, Store, StoreError, StoredTurn, TokenCounter, Turn};
use kite_core::{Message, Model, Request};

/// The prompt the summary is asked for with, when the user has not written their own.
pub const DEFAULT_PROMPT: &str = "You condense conversations. Summarize the conversation \
below so that it can continue without it: keep every fact, decision, name, number and open \
question, what tools were used and what they returned, and what the user wants. Write it as \
notes, in the conversation's language, with nothing else.";

/// When a conversation is compacted, and how many of its last turns stay verbatim.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Policy {
    /// When the live turns hold more than `max` messages.
    Messages {
        /// The most messages sent as they are.
        max: usize,
        /// Turns kept verbatim.
        keep: usize,
    },
    /// When the live turns' messages take more than `max` bytes (as stored JSON).
    Bytes {
        /// The most bytes sent as they are (50 000, say).
        max: usize,
        /// Turns kept verbatim.
        keep: usize,
    },
    /// When the prompt passes `max` tokens (some way below the model's context window): as
    /// the provider reported for the last turn, plus the [`Compactor`]'s count of what came
    /// after it or where nothing was reported.
    Tokens {
        /// The most tokens sent.
        max: u64,
        /// Turns kept verbatim.
        keep: usize,
    },
}

impl Policy {
    fn keep(&self) -> usize {
        match *self {
            Policy::Messages { keep, .. }
            | Policy::Bytes { keep, .. }
            | Policy::Tokens { keep, .. } => keep,
        }
    }
}

/// Compacts conversations: a [`Policy`], the prompt the summary is asked for with
/// ([`DEFAULT_PROMPT`] unless given), and what counts tokens where the provider reported
/// none ([`Estimate`] unless given).
pub struct Compactor<'a> {
    policy: Policy,
    prompt: &'a str,
    tokens: &'a dyn TokenCounter,
    starting: Option<&'a (dyn Fn() + Send + Sync)>,
}

impl<'a> Compactor<'a> {
    /// Compaction by `policy`, with the default prompt and the estimate.
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            prompt: DEFAULT_PROMPT,
            tokens: &Estimate,
            starting: None,
        }
    }

    /// Called once compaction is found due, before the model is asked for the summary (to
    /// tell a user why the next answer takes longer).
    pub fn on_start(mut self, starting: &'a (dyn Fn() + Send + Sync)) -> Self {
        self.starting = Some(starting);
        self
    }

    /// The summary's prompt (from the user's prompts file, say).
    pub fn prompt(mut self, prompt: &'a str) -> Self {
        self.prompt = prompt;
        self
    }

    /// What counts tokens where no usage was reported: the model's own tokenizer.
    pub fn tokens(mut self, counter: &'a dyn TokenCounter) -> Self {
        self.tokens = counter;
        self
    }

    /// Whether `turns` (the live ones) are past the policy. For tokens: what the provider
    /// reported for the last turn that has usage, plus the count of what came after it.
    pub fn due(&self, turns: &[StoredTurn]) -> bool {
        let json = |t: &StoredTurn| serde_json::to_string(&t.turn.messages).unwrap_or_default();
        match self.policy {
            Policy::Messages { max, .. } => {
                turns.iter().map(|t| t.turn.messages.len()).sum::<usize>() > max
            }
            Policy::Bytes { max, .. } => turns.iter().map(|t| json(t).len()).sum::<usize>() > max,
            Policy::Tokens { max, .. } => {
                // The size the provider reported at the end of the last turn that has one
                // (a summary's usage is the summarizing call's, not the conversation's).
                let size = |t: &Turn| match t.context_tokens {
                    Some(n) => Some(n),
                    None if t.usage.input_tokens > 0 => {
                        Some(t.usage.input_tokens + t.usage.output_tokens)
                    }
                    None => None,
                };
                let reported = turns
                    .iter()
                    .rposition(|t| !t.turn.summary && size(&t.turn).is_some());
                let (known, after) = match reported {
                    Some(i) => (size(&turns[i].turn).unwrap_or(0), &turns[i + 1..]),
                    None => (0, turns),
                };
                // A tokenizer takes a while over megabytes; past one, an estimate will do.
                let count = |text: String| match text.len() > 1 << 20 {
                    true => Estimate.count(&text),
                    false => self.tokens.count(&text),
                };
                let counted: u64 = after.iter().map(|t| count(json(t))).sum();
                known + counted > max
            }
        }
    }

    /// Compacts conversation `id` when the policy says so (or always, with `force`): the
    /// older turns are summarized by `model` (called `model_name`), then archived, and the
    /// summary is stored in their place. Returns the new version, or `None` when nothing
    /// needed compacting.
    pub async fn run(
        &self,
        store: &dyn Store,
        id: &str,
        model: &dyn Model,
        model_name: &str,
        force: bool,
    ) -> Result<Option<i64>, CompactError> {
        let version = store.get(id).await?.version;
        let turns = store.turns(id).await?;
        let live: Vec<StoredTurn> = turns.into_iter().filter(|t| !t.archived).collect();
        let keep = self.policy.keep();
        if (!force && !self.due(&live)) || live.len() <= keep {
            return Ok(None);
        }
        if let Some(starting) = self.starting {
            starting();
        }
        let older = &live[..live.len() - keep];
        let through = older.last().map_or(0, |t| t.number);
        let transcript = transcript(&crate::history(older));
        let request = Request::new(model_name)
            .system(self.prompt)
            .message(Message::user(transcript));
        let answer = model.complete(&request).await?;
        let text = answer.text();
        if text.trim().is_empty() {
            return Err(kite_core::Error::InvalidRequest(
                "the model wrote an empty summary".into(),
            )
            .into());
        }
        let mut summary = Turn::new(vec![Message::user(format!(
            "(A summary of the conversation so far, written when it grew long.)\n\n{text}"
        ))]);
        summary.usage = answer.usage;
        Ok(Some(store.compact(id, version, through, summary).await?))
    }
}

/// Why compaction failed. The conversation is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The summary could not be had from the model.
    #[error("the summary failed: {0}")]
    Model(#[from] kite_core::Error),
}

/// Messages as a transcript to summarize: who said what, tool calls and their results.
fn transcript(messages: &[Message]) -> String {
    use kite_core::{Part, Role};
    let mut out = String::new();
    for m in messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::Tool => "Tool",
            _ => "System",
        };
        for p in &m.parts {
            let line = match p {
                Part::Text { text } | Part::Refusal { text } => format!("{who}: {text}"),
                Part::ToolCall(c) => format!("{who} called {}({})", c.name, c.arguments),
                Part::ToolResult(r) => format!("Tool result: {}", r.text_content()),
                _ => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}
