//! What a server offers besides tools: resources to read and prompts to fill in.

use base64::Engine;
use kite_core::{Message, Role};
use serde_json::Value;

/// A resource a server offers.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    /// The URI to read it by.
    pub uri: String,
    /// The server's name for it.
    pub name: String,
    /// A name for people to read, when the server gives one.
    pub title: Option<String>,
    /// What it holds, when the server says.
    pub description: Option<String>,
    /// Its media type, when the server says.
    pub mime_type: Option<String>,
}

/// One piece of a resource as read: text, or bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceContent {
    /// Text.
    Text {
        /// The URI of the resource it belongs to.
        uri: String,
        /// Its media type, when the server says.
        mime_type: Option<String>,
        /// The content as text.
        text: String,
    },
    /// Binary data.
    Blob {
        /// The URI of the resource it belongs to.
        uri: String,
        /// Its media type, when the server says.
        mime_type: Option<String>,
        /// The content, decoded from base64.
        bytes: Vec<u8>,
    },
}

/// A prompt template a server offers.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// The name to ask for it by.
    pub name: String,
    /// A name for people to read, when the server gives one.
    pub title: Option<String>,
    /// What it is for, when the server says.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a [`Prompt`].
#[derive(Clone, Debug, PartialEq)]
pub struct PromptArgument {
    /// The name to pass it under.
    pub name: String,
    /// What it means, when the server says.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt filled in by its server: messages ready for a model.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptMessages {
    /// What the prompt is for, when the server says.
    pub description: Option<String>,
    /// The messages, each from the user or the assistant.
    pub messages: Vec<Message>,
}

fn string(v: &Value, key: &str) -> Option<String> {
    v[key].as_str().map(str::to_owned)
}

impl Resource {
    pub(crate) fn from_json(v: &Value) -> Self {
        Self {
            uri: string(v, "uri").unwrap_or_default(),
            name: string(v, "name").unwrap_or_default(),
            title: string(v, "title"),
            description: string(v, "description"),
            mime_type: string(v, "mimeType"),
        }
    }
}

impl ResourceContent {
    /// The `contents` of a `resources/read` result; a blob that is not base64 is an error.
    pub(crate) fn all_from_json(result: &Value) -> Result<Vec<Self>, String> {
        let mut out = Vec::new();
        for c in result["contents"].as_array().into_iter().flatten() {
            let uri = string(c, "uri").unwrap_or_default();
            let mime_type = string(c, "mimeType");
            out.push(match (c["text"].as_str(), c["blob"].as_str()) {
                (Some(text), _) => Self::Text {
                    uri,
                    mime_type,
                    text: text.to_owned(),
                },
                (None, Some(blob)) => Self::Blob {
                    bytes: base64::engine::general_purpose::STANDARD
                        .decode(blob)
                        .map_err(|e| format!("the blob of {uri} is not base64: {e}"))?,
                    uri,
                    mime_type,
                },
                (None, None) => return Err(format!("{uri} has neither text nor blob")),
            });
        }
        Ok(out)
    }
}

impl Prompt {
    pub(crate) fn from_json(v: &Value) -> Self {
        Self {
            name: string(v, "name").unwrap_or_default(),
            title: string(v, "title"),
            description: string(v, "description"),
            arguments: v["arguments"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| PromptArgument {
                    name: string(a, "name").unwrap_or_default(),
                    description: string(a, "description"),
                    required: a["required"].as_bool().unwrap_or(false),
                })
                .collect(),
        }
    }
}

impl PromptMessages {
    pub(crate) fn from_json(v: &Value) -> Self {
        Self {
            description: string(v, "description"),
            messages: v["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| {
                    let role = match m["role"].as_str() {
                        Some("assistant") => Role::Assistant,
                        _ => Role::User,
                    };
                    Message::new(role, vec![crate::tool::part(&m["content"])])
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_results_decode_text_and_blobs_and_refuse_bad_base64() {
        let ok = json!({"contents": [
            {"uri": "a://t", "mimeType": "text/plain", "text": "hi"},
            {"uri": "a://b", "blob": "AAEC"}
        ]});
        assert_eq!(
            ResourceContent::all_from_json(&ok).unwrap(),
            [
                ResourceContent::Text {
                    uri: "a://t".into(),
                    mime_type: Some("text/plain".into()),
                    text: "hi".into()
                },
                ResourceContent::Blob {
                    uri: "a://b".into(),
                    mime_type: None,
                    bytes: vec![0, 1, 2]
                }
            ]
        );
        let bad = json!({"contents": [{"uri": "a://b", "blob": "!!"}]});
        assert!(
            ResourceContent::all_from_json(&bad)
                .unwrap_err()
                .contains("a://b")
        );
    }
}
