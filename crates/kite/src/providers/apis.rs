//! The model APIs kite speaks over HTTP, each an [`HttpModel`] of its codec.

use super::http_model::HttpModel;
use kite_wire::anthropic::Messages;
use kite_wire::openai_chat::{ChatCompletions, Dialect};

/// A Chat Completions model: OpenAI, Mistral, OpenRouter, Groq, or any compatible server
/// (llama.cpp, vLLM, Ollama, a proxy).
///
/// ```no_run
/// use kite::{OpenAiCompatible, wire::openai_chat::Dialect};
/// let local = OpenAiCompatible::new("http://127.0.0.1:8080/v1", Dialect::Compatible);
/// ```
pub type OpenAiCompatible = HttpModel<ChatCompletions>;

impl OpenAiCompatible {
    /// A model at `base_url` (the part before `/chat/completions`, e.g.
    /// `https://api.openai.com/v1`).
    pub fn new(base_url: impl AsRef<str>, dialect: Dialect) -> Self {
        Self::with_api(ChatCompletions::new(dialect), base_url)
    }
}

/// An Anthropic Messages model.
///
/// ```no_run
/// let claude = kite::Anthropic::new("https://api.anthropic.com/v1").api_key("sk-ant-...");
/// ```
pub type Anthropic = HttpModel<Messages>;

impl Anthropic {
    /// A model at `base_url` (the part before `/messages`).
    pub fn new(base_url: impl AsRef<str>) -> Self {
        Self::with_api(Messages::default(), base_url)
    }

    /// Turns on `anthropic-beta` features.
    pub fn betas<I: IntoIterator<Item = S>, S: Into<String>>(self, betas: I) -> Self {
        let betas: Vec<String> = betas.into_iter().map(Into::into).collect();
        self.map_api(|api| api.betas = betas)
    }
}
