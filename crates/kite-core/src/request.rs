//! What is sent to a model.

use crate::{Message, Metadata};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// A request to a language model, independent of provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model to call, by the provider's name for it.
    pub model: String,
    /// Instructions kept apart from the history; codecs place them where the provider wants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether and which tool the model must call; unset, the provider decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may ask for several tool calls in one answer; unset, the
    /// provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature: higher is more varied, lower more predictable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: only tokens within this top share of probability are drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The most tokens the model may generate in its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sequences that end the answer where the model writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The shape of the answer; unset, plain text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// A sampling seed, for providers that can repeat an answer given the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// How much the model should think, for models that reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    /// An end-user identifier passed to the provider for abuse monitoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Penalizes tokens by how often they have appeared (-2 to 2). Providers with no such
    /// setting refuse a request that sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Penalizes tokens that have appeared at all (-2 to 2). Providers with no such setting
    /// refuse a request that sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Samples only among the `top_k` likeliest tokens. Providers with no such setting
    /// refuse a request that sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// How long the answer should be (`low`, `medium`, `high`): a hint, sent to the models
    /// that take it (OpenAI's) and left out for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Provider options kite has no field for, merged into the top level of the wire body
    /// last (so they can also override what kite wrote).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// What one API is asked for in its own terms, keyed by the namespace of the codec that
    /// speaks it (`chat.logit_bias`, a hosted tool under `responses.tools`): that codec
    /// passes it on, and any other refuses the request, naming it.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub provider_options: Metadata,
    /// What one API is offered in its own terms (an `anthropic-beta` value, a cache
    /// breakpoint, a context edit): that codec passes it on, and the others leave it out,
    /// the answer meaning the same without it.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub provider_hints: Metadata,
}

impl Request {
    /// An empty request for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Sets the system instructions.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Appends a message.
    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: ToolSpec) -> Self {
        self.tools.push(tool);
        self
    }

    /// Why a model speaking `api` (its codec's namespace `own`) refuses this request, when
    /// it asks another API for something in that API's terms
    /// ([`provider_options`](Self::provider_options)): the field named as the client named
    /// it (with the types of the tools it lists), and whose it is.
    pub fn foreign_option(&self, own: &str, api: &str) -> Option<String> {
        let (ns, key, value) = self.provider_options.iter().find(|(ns, _, _)| *ns != own)?;
        let kinds: Vec<&str> = value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("type")?.as_str())
            .collect();
        let field = match kinds.is_empty() {
            true => format!("`{key}`"),
            false => format!("`{key}` ({})", kinds.join(", ")),
        };
        let whose = match ns {
            "chat" => "OpenAI Chat Completions",
            "responses" => "OpenAI Responses",
            "anthropic" => "Anthropic Messages",
            other => other,
        };
        let own = match whose.ends_with('s') {
            true => format!("{whose}'"),
            false => format!("{whose}'s"),
        };
        Some(format!(
            "{field} is {own} own, and this route's model ({api}) does not take it; leave \
             it out, or ask a model served through {whose}"
        ))
    }

    /// Sets one provider-specific field of the wire body.
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }
}

/// A tool the model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What the tool does, told to the model; may be empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// JSON Schema of the arguments object, shared: a spec is copied into every request,
    /// its schema never is.
    pub parameters: Arc<Value>,
    /// Ask the provider to enforce the schema exactly (OpenAI `strict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ToolSpec {
    /// A tool spec.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
            strict: None,
        }
    }
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// How much a reasoning model thinks, and what of it is shown. Each codec sends what its
/// provider understands: an effort for OpenAI and OpenRouter, a token budget for Anthropic
/// (derived from the effort when no budget is given).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningConfig {
    /// `"minimal"`, `"low"`, `"medium"`, `"high"` (providers add names; they pass through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Tokens the model may spend thinking (Anthropic `budget_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// Ask for a summary of the reasoning (OpenAI Responses: `"auto"`, `"concise"`,
    /// `"detailed"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl ReasoningConfig {
    /// Reasoning at `effort`.
    pub fn effort(effort: impl Into<String>) -> Self {
        Self {
            effort: Some(effort.into()),
            ..Self::default()
        }
    }

    /// The thinking budget in tokens: the one given, or one derived from the effort.
    pub fn budget(&self) -> Option<u32> {
        self.budget_tokens
            .or_else(|| match self.effort.as_deref()? {
                "none" => None,
                "minimal" => Some(1024),
                "low" => Some(2048),
                "medium" => Some(8192),
                _ => Some(24576),
            })
    }
}

/// The shape of the answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Plain text.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching `schema`.
    JsonSchema {
        /// A name for the schema (OpenAI requires one).
        name: String,
        /// The JSON Schema the answer must match.
        schema: Value,
        /// What the answer is for, told to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Ask the provider to enforce the schema exactly (OpenAI `strict`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
    },
}
