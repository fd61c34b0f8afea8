//! The one stream event grammar every provider decodes into.

use crate::{FinishReason, Metadata, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a streamed model response.
///
/// A stream is: `Start`, then any interleaving of text, reasoning, refusal and tool-call
/// events, then `Usage` (when the provider reports it) and `Finish`. Text, reasoning and
/// refusal deltas carry the `part` they belong to: deltas with the same part extend one
/// block, and a new part number starts a new block, so text, thinking, then text again
/// render as three blocks. Tool-call events carry the provider's `index`, so parallel calls
/// whose fragments interleave assemble correctly; `ToolCallEnd` carries the whole call, so a
/// consumer may ignore the fragments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The response began.
    Start {
        /// The provider's response id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The model that answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Answer text.
    TextDelta {
        /// The part of the message it belongs to.
        #[serde(default)]
        part: u32,
        /// The text.
        text: String,
    },
    /// Reasoning (thinking) text.
    ReasoningDelta {
        /// The part of the message it belongs to.
        #[serde(default)]
        part: u32,
        /// The text.
        text: String,
    },
    /// Reasoning part `part` is complete; `metadata` is what the provider needs to accept it
    /// back (signature, encrypted content).
    ReasoningEnd {
        /// The part of the message it closes.
        #[serde(default)]
        part: u32,
        /// Provider data to send back with it.
        metadata: Metadata,
    },
    /// The model declined to answer.
    RefusalDelta {
        /// The part of the message it belongs to.
        #[serde(default)]
        part: u32,
        /// The text.
        text: String,
    },
    /// A tool call began.
    ToolCallStart {
        /// The call's place among the message's calls.
        index: u32,
        /// The provider's id of the call.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a call's JSON arguments.
    ToolCallDelta {
        /// The call's place among the message's calls.
        index: u32,
        /// The fragment.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// The call's place among the message's calls.
        index: u32,
        /// The whole call.
        call: ToolCall,
    },
    /// Token counts (and cost, when the provider reports it).
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The response is complete.
    Finish {
        /// Why it ended.
        reason: FinishReason,
    },
    /// Provider data about the whole message, kept in its
    /// [`Message::metadata`](crate::Message) for later requests.
    Metadata {
        /// The data.
        metadata: Metadata,
    },
    /// An event kite does not know, passed through as the provider sent it.
    Unknown {
        /// The provider's name for it.
        kind: String,
        /// Its payload.
        data: Value,
    },
}

impl Event {
    /// Text for part `part`.
    pub fn text(part: u32, text: impl Into<String>) -> Self {
        Event::TextDelta {
            part,
            text: text.into(),
        }
    }

    /// Reasoning for part `part`.
    pub fn reasoning(part: u32, text: impl Into<String>) -> Self {
        Event::ReasoningDelta {
            part,
            text: text.into(),
        }
    }
}
