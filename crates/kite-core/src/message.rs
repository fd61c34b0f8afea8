//! Messages and their content parts.

use crate::Metadata;
use serde::{Deserialize, Serialize};

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that steer the model.
    System,
    /// The person or program the model answers.
    User,
    /// The model: its answers and tool calls.
    Assistant,
    /// Results of tool calls, sent back to the model.
    Tool,
}

/// One message of a conversation: a role and ordered content parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks it.
    pub role: Role,
    /// Its content, in order.
    pub parts: Vec<Part>,
    /// Provider data about the whole message that a later request may need (for OpenAI
    /// Responses, the id of the stored response that produced it).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// A piece of message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image.
    Image {
        /// Where the image comes from: a URL or inline data.
        source: ImageSource,
        /// Provider hint for image resolution (`"low"`, `"high"`, `"auto"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A tool call the model asks for, in an assistant message.
    ToolCall(ToolCall),
    /// The result of a tool call, in a tool message.
    ToolResult(ToolResult),
    /// The model's reasoning ("thinking") before it answers.
    Reasoning(Reasoning),
    /// The model declined to answer (OpenAI `refusal`).
    Refusal {
        /// What the model said instead of an answer.
        text: String,
    },
    /// A document the model reads: a PDF or text, inline or at a URL.
    Document(Document),
}

/// A document the model reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Where it comes from.
    pub source: DocumentSource,
    /// Its title or file name, told to the model where the provider takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Provider data about it that goes back to that provider (Anthropic's `context` and
    /// `citations` settings).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// Where a document comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DocumentSource {
    /// A document at a URL, which the provider fetches.
    Url {
        /// The document's URL.
        url: String,
    },
    /// A file sent inline (a PDF).
    Base64 {
        /// Its media type (`application/pdf`).
        media_type: String,
        /// Its bytes, base64-encoded.
        data: String,
    },
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
}

impl Document {
    /// A document with no title or metadata.
    pub fn new(source: DocumentSource) -> Self {
        Self {
            source,
            title: None,
            metadata: Metadata::new(),
        }
    }

    /// Its text with its title first, for providers that take documents only as text;
    /// `None` for a file or a URL.
    pub fn as_text(&self) -> Option<String> {
        let DocumentSource::Text { text } = &self.source else {
            return None;
        };
        Some(match &self.title {
            Some(title) => format!("{title}\n\n{text}"),
            None => text.clone(),
        })
    }
}

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// An image at a URL, which is sent to the provider as it is.
    Url {
        /// The image's URL.
        url: String,
    },
    /// An image sent inline.
    Base64 {
        /// The image's media type (`image/png`, `image/jpeg`, ...).
        media_type: String,
        /// The image's bytes, base64-encoded.
        data: String,
    },
}

/// A call of a tool requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; a tool result names it.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments as the model wrote them: JSON text, kept raw so that a malformed
    /// argument string can be reported back to the model and the history re-sent as it was.
    pub arguments: String,
    /// Provider data about the call that a later request may need (for OpenAI Responses,
    /// the item id).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl ToolCall {
    /// A call with the given id, name and JSON argument text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            metadata: Metadata::new(),
        }
    }

    /// The arguments parsed as JSON. An empty argument string counts as `{}`, as every
    /// provider sends it for tools without parameters.
    pub fn parse_arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// The result of a tool call, sent back to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this answers.
    pub call_id: String,
    /// The tool's name (some providers want it next to the result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Text and image parts.
    pub content: Vec<Part>,
    /// True when the tool failed and the model should see the failure.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful text result.
    pub fn text(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            name: None,
            content: vec![Part::text(text)],
            is_error: false,
        }
    }

    /// A failed result whose text the model sees.
    pub fn error(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(call_id, text)
        }
    }

    /// The text parts joined.
    pub fn text_content(&self) -> String {
        join_text(&self.content)
    }
}

/// Model reasoning ("thinking"). `metadata` carries what the provider needs to accept the
/// reasoning back in a later request (signatures, encrypted content, item ids).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning as the provider shows it (some show only a summary, or nothing).
    pub text: String,
    /// What the provider needs to accept the reasoning back.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    /// An image part from a URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        Part::Image {
            source: ImageSource::Url { url: url.into() },
            detail: None,
        }
    }

    /// An image part from base64 data.
    pub fn image_base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Part::Image {
            source: ImageSource::Base64 {
                media_type: media_type.into(),
                data: data.into(),
            },
            detail: None,
        }
    }
}

impl Message {
    /// A message with the given role and parts.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            role,
            parts,
            metadata: Metadata::new(),
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![Part::text(text)])
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![Part::text(text)])
    }

    /// A tool message holding one result.
    pub fn tool_result(result: ToolResult) -> Self {
        Self::new(Role::Tool, vec![Part::ToolResult(result)])
    }

    /// The text parts joined.
    pub fn text(&self) -> String {
        join_text(&self.parts)
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

fn join_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        if let Part::Text { text } = p {
            out.push_str(text);
        }
    }
    out
}
