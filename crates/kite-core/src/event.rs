//! The one stream event grammar every provider decodes into.

use crate::{FinishReason, Metadata, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a streamed model response.
///
/// A stream is: `Start`, then any interleaving of text, reasoning, refusal and tool-call
/// events, then `Usage` (when the provider reports it) and `Finish`. Tool-call events carry
/// the provider's `index`, so parallel calls whose fragments interleave assemble correctly;
/// `ToolCallEnd` carries the whole call, so a consumer may ignore the fragments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The response began; `id` is the provider's response id.
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// The current reasoning block is complete; `metadata` is what the provider needs to
    /// accept it back (signature, encrypted content).
    ReasoningEnd {
        metadata: Metadata,
    },
    RefusalDelta {
        text: String,
    },
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
    },
    /// A fragment of a call's JSON arguments.
    ToolCallDelta {
        index: u32,
        arguments: String,
    },
    ToolCallEnd {
        index: u32,
        call: ToolCall,
    },
    Usage {
        usage: Usage,
    },
    Finish {
        reason: FinishReason,
    },
    /// Provider data about the whole message, kept in its
    /// [`Message::metadata`](crate::Message) for later requests.
    Metadata {
        metadata: Metadata,
    },
    /// An event kite does not know, passed through as the provider sent it.
    Unknown {
        kind: String,
        data: Value,
    },
}
