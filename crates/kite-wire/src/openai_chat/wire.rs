//! Serde shapes of Chat Completions bodies and chunks. Only what kite reads is named; every
//! other field is skipped, which keeps decoding fast and unknown fields harmless.

use crate::str::Str;
use kite_core::Usage;
use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde_json::Value;

/// A streamed chunk, or a whole non-streamed completion (which has `message` where a chunk
/// has `delta`).
#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub model: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub choices: Option<Vec<Choice<'a>>>,
    // Rare fields are boxed: a smaller struct is cheaper to move through serde's layers.
    #[serde(default)]
    pub usage: Option<Box<WireUsage>>,
    /// Groq reports streamed usage here.
    #[serde(default)]
    pub x_groq: Option<Box<XGroq>>,
    /// OpenRouter (and some proxies) put errors inside an otherwise normal chunk.
    #[serde(default)]
    pub error: Option<Box<Value>>,
}

#[derive(Deserialize)]
pub(super) struct XGroq {
    #[serde(default)]
    pub usage: Option<Box<WireUsage>>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub index: u32,
    /// `delta` in a chunk, `message` in a whole completion.
    #[serde(default, borrow, alias = "message")]
    pub delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
pub(super) struct Delta<'a> {
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    #[serde(default, borrow)]
    pub function_call: Option<Box<FunctionDelta<'a>>>,
}

#[derive(Deserialize)]
pub(super) struct ToolCallDelta<'a> {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default, borrow)]
    pub id: Option<Str<'a>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Str<'a>>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// `content`: a string, or (Mistral) an array of typed chunks.
pub(super) enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
pub(super) struct ContentPart {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
    /// Mistral reasoning: `{"type":"thinking","thinking":[{"type":"text","text":...}]}`.
    #[serde(default)]
    pub thinking: Option<Vec<ContentPart>>,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_str<E>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut parts = Vec::new();
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// OpenRouter's cost in credits.
    #[serde(default)]
    cost: Option<f64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        let input = u.prompt_tokens.unwrap_or(0);
        let output = u.completion_tokens.unwrap_or(0);
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: u.total_tokens.unwrap_or(input + output),
            cached_input_tokens: u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: u
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cost: u.cost,
        }
    }
}
