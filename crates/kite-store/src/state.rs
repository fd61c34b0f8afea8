//! Portable state for programs that keep conversations themselves (in a cookie, a row of
//! their own, a cache): a conversation as opaque, versioned bytes, and back.
//!
//! The bytes are a header (`kite-state`, the format version, and a SHA-256 digest of the
//! body, cut to 8 bytes) and the body as JSON. Bytes that are empty, truncated, altered or
//! from an unknown version are never trusted: [`State::from_bytes`] logs why and starts a
//! fresh conversation, so bad bytes cannot crash or poison a run.

use kite_core::{Message, Metadata, Part};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const MAGIC: &[u8] = b"kite-state";
/// The format this kite writes and reads.
const FORMAT: u8 = 1;
const DIGEST: usize = 8;

/// A conversation a program keeps itself: the history, and the provider it was had with
/// (provider-specific pieces only make sense to that provider).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The provider that produced the history's answers, as kite names it.
    pub provider: Option<String>,
    /// The history, without the system prompt.
    pub messages: Vec<Message>,
}

/// Why bytes were not a [`State`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not state bytes at all (empty, or another format).
    #[error("not kite conversation state")]
    NotState,
    /// State of a format this kite does not know.
    #[error("conversation state of format {0}; this kite reads format {FORMAT}")]
    UnknownFormat(u8),
    /// Cut short, or changed after they were written.
    #[error("conversation state that was cut short or altered")]
    Damaged,
}

impl State {
    /// The state of `messages`, had with `provider`.
    pub fn new(provider: Option<String>, messages: Vec<Message>) -> Self {
        Self { provider, messages }
    }

    /// The state as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing kite's own types cannot fail.
        let body = serde_json::to_vec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(MAGIC.len() + 1 + DIGEST + body.len());
        out.extend_from_slice(MAGIC);
        out.push(FORMAT);
        out.extend_from_slice(&Sha256::digest(&body)[..DIGEST]);
        out.extend_from_slice(&body);
        out
    }

    /// The state in `bytes`, or why they are not one.
    pub fn try_from_bytes(bytes: &[u8]) -> Result<Self, StateError> {
        let rest = bytes.strip_prefix(MAGIC).ok_or(StateError::NotState)?;
        let (&format, rest) = rest.split_first().ok_or(StateError::Damaged)?;
        if format != FORMAT {
            return Err(StateError::UnknownFormat(format));
        }
        if rest.len() < DIGEST {
            return Err(StateError::Damaged);
        }
        let (digest, body) = rest.split_at(DIGEST);
        if Sha256::digest(body)[..DIGEST] != *digest {
            return Err(StateError::Damaged);
        }
        serde_json::from_slice(body).map_err(|_| StateError::Damaged)
    }

    /// The state in `bytes`; bytes that are not one (see [`try_from_bytes`](Self::try_from_bytes))
    /// are discarded with a warning, and the conversation starts fresh.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self::try_from_bytes(bytes).unwrap_or_else(|e| {
            tracing::warn!(error = %e, bytes = bytes.len(), "conversation state discarded; starting fresh");
            Self::default()
        })
    }

    /// Adds something that happened ("the user visited the pricing page") without a model
    /// call; the model sees it on the next turn.
    pub fn note(&mut self, text: impl Into<String>) {
        self.messages.push(Message::user(text));
    }

    /// The history ready for `provider`: when it is the one the state was had with, as it
    /// is; otherwise without the pieces only the other provider understands (reasoning with
    /// its signatures or encrypted content, ids of its stored items), which another provider
    /// would refuse.
    pub fn for_provider(mut self, provider: &str) -> Self {
        if self.provider.as_deref() == Some(provider) {
            return self;
        }
        for m in &mut self.messages {
            m.metadata = Metadata::new();
            m.parts.retain(|p| !matches!(p, Part::Reasoning(_)));
            for p in &mut m.parts {
                if let Part::ToolCall(c) = p {
                    c.metadata = Metadata::new();
                }
            }
        }
        self.messages.retain(|m| !m.parts.is_empty());
        self.provider = Some(provider.to_owned());
        self
    }
}
