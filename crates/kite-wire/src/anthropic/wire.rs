//! Serde shapes of Messages bodies and stream events. Only what kite reads is named; every
//! other field is skipped. Blocks and deltas kite passes through whole are kept as raw JSON
//! and turned into values only then.

use crate::str::Str;
use serde::Deserialize;
use serde_json::value::RawValue;

/// A stream event (`message_start`, `content_block_delta`, ...).
#[derive(Deserialize)]
pub(super) struct StreamEvent<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default)]
    pub index: Option<u32>,
    /// `message_start`'s message (or, in an `error` event, the error's message).
    #[serde(default, borrow)]
    pub message: Option<&'a RawValue>,
    /// `content_block_start`'s block.
    #[serde(default, borrow)]
    pub content_block: Option<&'a RawValue>,
    /// A block's delta, or `message_delta`'s stop reason.
    #[serde(default, borrow)]
    pub delta: Option<&'a RawValue>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// A message's id, model and usage: `message_start`'s message.
#[derive(Default, Deserialize)]
pub(super) struct MessageHead<'a> {
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub model: Option<Str<'a>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// A whole (non-streamed) message.
#[derive(Deserialize)]
pub(super) struct WholeMessage<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub model: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub content: Option<Vec<&'a RawValue>>,
    #[serde(default, borrow)]
    pub stop_reason: Option<Str<'a>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// A content block as it opens (or whole, in a whole message).
#[derive(Default, Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub text: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub thinking: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub signature: Option<Str<'a>>,
    /// `redacted_thinking`'s opaque data.
    #[serde(default, borrow)]
    pub data: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub name: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub citations: Option<&'a RawValue>,
}

/// A block's delta (`text_delta`, `thinking_delta`, ...) or `message_delta`'s delta.
#[derive(Default, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub text: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub thinking: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub signature: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub partial_json: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub stop_reason: Option<Str<'a>>,
}

/// Usage as Anthropic reports it; later reports name only what changed.
#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

/// `raw` read as `T`.
pub(super) fn read<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
}
