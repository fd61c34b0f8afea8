//! What is stored: conversations, their turns, and the messages of each turn.

use kite_core::{Message, Part, Usage};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A stored conversation's description: everything but its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Its id: 32 lowercase hex digits.
    pub id: String,
    /// A title for lists (the start of the first message, until someone names it).
    pub title: String,
    /// The provider last used, as kite names it.
    pub provider: Option<String>,
    /// The model last used.
    pub model: Option<String>,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// When a turn was last added, in milliseconds since the Unix epoch.
    pub updated_ms: i64,
    /// How many turns it holds: the version a writer must name to add the next one.
    pub version: i64,
}

/// One turn: the user's message and every assistant and tool message it led to, with the
/// usage of its model calls. A note (something that happened, told to the model on the next
/// turn) is a turn of one user message and no usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The messages, in order. The system prompt is never among them: it is given on every
    /// call.
    pub messages: Vec<Message>,
    /// What the turn's model calls cost, summed.
    pub usage: Usage,
    /// The tokens the turn's last model call took in and gave out: how large the
    /// conversation had grown by the end of the turn, as the provider counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// The provider that answered, as kite names it.
    pub provider: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// A summary compaction wrote in place of the turns it archived.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary: bool,
    /// The answer was cut short (stopped, Ctrl-C, an error): its last message is what had
    /// been shown of it when it stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
}

impl Turn {
    /// A turn of `messages` (for instance a run's new messages).
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// The turn as far as it is consistent: a tool call whose result never came (the turn
    /// was cut off by an error or Ctrl-C) is left out, and so is a message it leaves empty,
    /// so the history stays one every provider accepts.
    pub fn settled(mut self) -> Self {
        let answered: HashSet<String> = self
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter_map(|p| match p {
                Part::ToolResult(r) => Some(r.call_id.clone()),
                _ => None,
            })
            .collect();
        for m in &mut self.messages {
            m.parts.retain(|p| match p {
                Part::ToolCall(c) => answered.contains(&c.id),
                _ => true,
            });
        }
        self.messages.retain(|m| !m.parts.is_empty());
        self
    }
}

/// A turn as stored: its number in the conversation (from 1), when it was added, and
/// whether compaction archived it (an archived turn stays in the store but is no longer
/// sent to the model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredTurn {
    /// Its number, from 1.
    pub number: i64,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// Compaction replaced it with a summary.
    pub archived: bool,
    /// The turn.
    pub turn: Turn,
}

/// The messages to send the model: the live turns' messages, a summary first (it stands for
/// everything before the turns kept verbatim), then the others in order. Archived turns are
/// left out.
pub fn history(turns: &[StoredTurn]) -> Vec<kite_core::Message> {
    let live = turns.iter().filter(|t| !t.archived);
    let (summaries, rest): (Vec<_>, Vec<_>) = live.partition(|t| t.turn.summary);
    summaries
        .into_iter()
        .chain(rest)
        .flat_map(|t| t.turn.messages.iter().cloned())
        .collect()
}

impl Conversation {
    /// A new, empty conversation titled by the first words of `title`.
    pub(crate) fn begin(title: &str) -> Self {
        let now = now_ms();
        Self {
            id: new_id(),
            title: title_of(title),
            provider: None,
            model: None,
            created_ms: now,
            updated_ms: now,
            version: 0,
        }
    }

    /// Refuses a writer that saw this conversation at another `version`.
    pub(crate) fn check(&self, version: i64) -> Result<(), crate::StoreError> {
        match self.version == version {
            true => Ok(()),
            false => Err(crate::StoreError::Conflict {
                id: self.id.clone(),
                expected: version,
                found: self.version,
            }),
        }
    }
}

impl Turn {
    /// The turn as stored: JSON.
    pub(crate) fn body(&self) -> Result<String, crate::StoreError> {
        serde_json::to_string(self)
            .map_err(|e| crate::StoreError::Backend(format!("cannot write the turn: {e}")))
    }
}

/// A new conversation id: 128 random bits as hex.
fn new_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// A title from the first words of `text`.
fn title_of(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
