//! What a model answers.

use crate::{Event, Message, Part, Role, ToolCall, Usage};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A complete answer from a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The provider's id of this response, when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered, as the provider names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The assistant message.
    pub message: Message,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// Tokens (and cost) the call spent.
    pub usage: Usage,
}

impl Response {
    /// An empty assistant response.
    pub fn empty(finish_reason: FinishReason) -> Self {
        Self {
            id: None,
            model: None,
            message: Message::new(Role::Assistant, Vec::new()),
            finish_reason,
            usage: Usage::default(),
        }
    }

    /// The answer's text.
    pub fn text(&self) -> String {
        self.message.text()
    }

    /// The tool calls the model asked for.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.message.tool_calls()
    }

    /// The events a provider would have streamed for this response; folding them with a
    /// [`ResponseBuilder`](crate::ResponseBuilder) gives the response back.
    pub fn into_events(self) -> Vec<Event> {
        let mut out = vec![Event::Start {
            id: self.id,
            model: self.model,
        }];
        if !self.message.metadata.is_empty() {
            out.push(Event::Metadata {
                metadata: self.message.metadata,
            });
        }
        let mut index = 0;
        for (part, p) in (0..).zip(self.message.parts) {
            match p {
                Part::Text { text } => out.push(Event::TextDelta { part, text }),
                Part::Refusal { text } => out.push(Event::RefusalDelta { part, text }),
                Part::Reasoning(r) => {
                    if !r.text.is_empty() {
                        out.push(Event::reasoning(part, r.text));
                    }
                    out.push(Event::ReasoningEnd {
                        part,
                        metadata: r.metadata,
                    });
                }
                Part::ToolCall(call) => {
                    out.push(Event::ToolCallStart {
                        index,
                        id: call.id.clone(),
                        name: call.name.clone(),
                    });
                    out.push(Event::ToolCallDelta {
                        index,
                        arguments: call.arguments.clone(),
                    });
                    out.push(Event::ToolCallEnd { index, call });
                    index += 1;
                }
                Part::Image { .. } | Part::Document(_) | Part::ToolResult(_) => {}
            }
        }
        out.push(Event::Usage { usage: self.usage });
        out.push(Event::Finish {
            reason: self.finish_reason,
        });
        out
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end or a stop sequence.
    Stop,
    /// The token limit cut the answer.
    Length,
    /// The model wants tools called.
    ToolCalls,
    /// A content filter cut the answer.
    ContentFilter,
    /// A reason kite has no name for, as the provider sent it.
    Other(String),
}

impl FinishReason {
    /// The reason kite calls `s` (see [`as_str`](Self::as_str)); any other name is
    /// [`Other`](Self::Other). Providers' own names are mapped by their codecs.
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "tool_calls" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }

    /// kite's name for the reason.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Other(s) => s,
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(Self::parse(&s))
    }
}
