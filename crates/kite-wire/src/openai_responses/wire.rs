//! Serde shapes of Responses bodies and stream events. Only what kite reads is named; every
//! other field is skipped. Items kite keeps or passes through whole are held as raw JSON and
//! turned into values only then.

use crate::str::{AnyStr, Str};
use kite_core::Usage;
use serde::Deserialize;
use serde_json::value::RawValue;

/// A stream event (`response.output_text.delta`, `response.completed`, ...).
#[derive(Deserialize)]
pub(super) struct StreamEvent<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default)]
    pub sequence_number: Option<u64>,
    #[serde(default)]
    pub output_index: Option<u64>,
    #[serde(default)]
    pub summary_index: Option<u64>,
    /// A text delta (other events may carry deltas of other shapes).
    #[serde(default, borrow)]
    pub delta: AnyStr<'a>,
    #[serde(default, borrow)]
    pub item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub response: Option<Box<WireResponse<'a>>>,
}

/// A response: whole, stored, or as `response.created` and `response.completed` carry it.
#[derive(Default, Deserialize)]
pub(super) struct WireResponse<'a> {
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub model: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub status: Option<Str<'a>>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default, borrow)]
    pub output: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// Why it failed, in whatever shape the server wrote it.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub incomplete_details: Option<Incomplete<'a>>,
}

/// Why a response is incomplete.
#[derive(Deserialize)]
pub(super) struct Incomplete<'a> {
    #[serde(default, borrow)]
    pub reason: Option<Str<'a>>,
}

/// An output item.
#[derive(Default, Deserialize)]
pub(super) struct Item<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub call_id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub name: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub arguments: Option<Str<'a>>,
    /// A message's content parts.
    #[serde(default, borrow)]
    pub content: Option<Vec<ContentPart<'a>>>,
    /// A reasoning item's summary parts.
    #[serde(default, borrow)]
    pub summary: Option<Vec<ContentPart<'a>>>,
}

/// A part of a message's content or of a reasoning summary.
#[derive(Deserialize)]
pub(super) struct ContentPart<'a> {
    #[serde(rename = "type", default, borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub text: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub refusal: Option<Str<'a>>,
}

/// Usage as Responses reports it.
#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<&WireUsage> for Usage {
    fn from(u: &WireUsage) -> Usage {
        let details = |d: Option<u64>| d.unwrap_or(0);
        Usage {
            input_tokens: details(u.input_tokens),
            output_tokens: details(u.output_tokens),
            total_tokens: details(u.total_tokens),
            cached_input_tokens: details(
                u.input_tokens_details
                    .as_ref()
                    .and_then(|d| d.cached_tokens),
            ),
            cache_write_tokens: 0,
            reasoning_tokens: details(
                u.output_tokens_details
                    .as_ref()
                    .and_then(|d| d.reasoning_tokens),
            ),
            cost: None,
        }
    }
}
