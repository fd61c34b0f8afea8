//! The providers kite knows by name: where they live, which API they speak, and where their
//! keys come from.

use super::{Anthropic, OpenAiCompatible};
use kite_core::{Error, Model};
use kite_wire::openai_chat::Dialect;
use std::sync::Arc;

/// A provider kite knows by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Mistral,
    OpenRouter,
    Groq,
}

impl Provider {
    /// Every named provider, in the order a key is looked for.
    pub const ALL: [Provider; 5] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Mistral,
        Provider::OpenRouter,
        Provider::Groq,
    ];

    /// The provider called `name` (`openai`, `anthropic`, `mistral`, `openrouter`, `groq`).
    pub fn parse(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name.to_ascii_lowercase())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown provider {name:?}; known: openai, anthropic, mistral, openrouter, groq"
                ))
            })
    }

    /// kite's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Mistral => "mistral",
            Provider::OpenRouter => "openrouter",
            Provider::Groq => "groq",
        }
    }

    /// The environment variable holding its API key.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Mistral => "MISTRAL_API_KEY",
            Provider::OpenRouter => "OPENROUTER_API_KEY",
            Provider::Groq => "GROQ_API_KEY",
        }
    }

    /// Its API's base URL.
    pub fn base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com/v1",
            Provider::Mistral => "https://api.mistral.ai/v1",
            Provider::OpenRouter => "https://openrouter.ai/api/v1",
            Provider::Groq => "https://api.groq.com/openai/v1",
        }
    }

    /// A sensible inexpensive model to use when none is named.
    pub fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi => "gpt-4o-mini",
            Provider::Anthropic => "claude-haiku-4-5",
            Provider::Mistral => "mistral-small-latest",
            Provider::OpenRouter => "openai/gpt-4o-mini",
            Provider::Groq => "llama-3.3-70b-versatile",
        }
    }

    /// The first provider whose key is set in the environment.
    pub fn detect() -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| key_from_env(p.key_var()).is_some())
    }

    /// The provider's model with its key from the environment.
    pub fn from_env(self) -> Result<Arc<dyn Model>, Error> {
        self.model(None)
    }

    /// The provider's model, at `base_url` if given (a proxy or a compatible server). The key
    /// comes from the environment; it may be absent only when a base URL is given.
    pub fn model(self, base_url: Option<&str>) -> Result<Arc<dyn Model>, Error> {
        let key = key_from_env(self.key_var());
        if key.is_none() && base_url.is_none() {
            return Err(Error::Config(format!(
                "{} is not set; export it, or point --base-url at a compatible server",
                self.key_var()
            )));
        }
        let base = base_url.unwrap_or(self.base_url());
        let dialect = match self {
            Provider::Anthropic => {
                let mut m = Anthropic::new(base);
                if let Some(key) = key {
                    m = m.api_key(key);
                }
                return Ok(Arc::new(m));
            }
            Provider::OpenAi => Dialect::OpenAi,
            Provider::Mistral => Dialect::Mistral,
            Provider::OpenRouter => Dialect::OpenRouter,
            Provider::Groq => Dialect::Groq,
        };
        let mut m = OpenAiCompatible::new(base, dialect);
        if let Some(key) = key {
            m = m.api_key(key);
        }
        if self == Provider::OpenRouter {
            m = m.header("x-title", "kite");
        }
        Ok(Arc::new(m))
    }
}

fn key_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}
