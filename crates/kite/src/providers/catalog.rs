//! The providers kite knows by name: where they live, which API they speak, and where their
//! keys come from.

use super::{Anthropic, HttpModel, OpenAiCompatible, OpenAiResponses, Service, Transcriber};
use kite_core::{Error, Model};
use kite_wire::openai_chat::Dialect;
use std::sync::Arc;

/// A provider kite knows by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses.
    OpenAiResponses,
    Anthropic,
    Mistral,
    OpenRouter,
    Groq,
}

impl Provider {
    /// Every named provider, in the order a key is looked for.
    pub const ALL: [Provider; 6] = [
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Mistral,
        Provider::OpenRouter,
        Provider::Groq,
    ];

    /// The provider called `name` (`openai`, `openai-responses`, `anthropic`, `mistral`,
    /// `openrouter`, `groq`).
    pub fn parse(name: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name.to_ascii_lowercase())
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown provider {name:?}; known: openai, openai-responses, anthropic, \
                     mistral, openrouter, groq"
                ))
            })
    }

    /// kite's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Mistral => "mistral",
            Provider::OpenRouter => "openrouter",
            Provider::Groq => "groq",
        }
    }

    /// The environment variable holding its API key.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Mistral => "MISTRAL_API_KEY",
            Provider::OpenRouter => "OPENROUTER_API_KEY",
            Provider::Groq => "GROQ_API_KEY",
        }
    }

    /// Its API's base URL.
    pub fn base_url(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com/v1",
            Provider::Mistral => "https://api.mistral.ai/v1",
            Provider::OpenRouter => "https://openrouter.ai/api/v1",
            Provider::Groq => "https://api.groq.com/openai/v1",
        }
    }

    /// A sensible inexpensive model to use when none is named.
    pub fn default_model(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => "gpt-4o-mini",
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

    /// The provider that serves `model` over `api`. OpenAI's deep-research models are
    /// served by Responses only, so they go there unless `api` says otherwise; `api` picks
    /// between OpenAI's two APIs, and other providers speak only their own.
    pub fn for_model(self, model: &str, api: Option<WireApi>) -> Result<Self, Error> {
        match (self, api) {
            (Provider::OpenAi | Provider::OpenAiResponses, Some(WireApi::Chat)) => {
                Ok(Provider::OpenAi)
            }
            (Provider::OpenAi | Provider::OpenAiResponses, Some(WireApi::Responses)) => {
                Ok(Provider::OpenAiResponses)
            }
            (Provider::OpenAi, None) if is_deep_research(model) => Ok(Provider::OpenAiResponses),
            (p, Some(WireApi::Responses)) => Err(Error::Config(format!(
                "{} has no Responses API in kite; use --provider openai-responses",
                p.name()
            ))),
            (p, _) => Ok(p),
        }
    }

    /// The model to run `model` with: the provider that serves it (see
    /// [`for_model`](Self::for_model)), at `base_url` if given. A deep-research model runs
    /// in the background (its stream resumes when dropped) with web search offered.
    pub fn open(
        self,
        model: &str,
        base_url: Option<&str>,
        api: Option<WireApi>,
    ) -> Result<Arc<dyn Model>, Error> {
        let provider = self.for_model(model, api)?;
        if provider == Provider::OpenAiResponses && is_deep_research(model) {
            let m = provider.responses_for(model, base_url)?.background(true);
            return Ok(Arc::new(m));
        }
        provider.model(base_url)
    }

    /// The OpenAI Responses model with its key from the environment, at `base_url` if given:
    /// for what only Responses does (stored responses, background runs).
    pub fn responses(self, base_url: Option<&str>) -> Result<OpenAiResponses, Error> {
        if !matches!(self, Provider::OpenAi | Provider::OpenAiResponses) {
            return Err(Error::Config(format!(
                "{} has no Responses API in kite",
                self.name()
            )));
        }
        Ok(with_key(
            OpenAiResponses::new(base_url.unwrap_or(self.base_url())),
            self.key(base_url)?,
        ))
    }

    /// Like [`responses`](Self::responses), set up for `model`: a deep-research model is
    /// offered web search, which it needs.
    pub fn responses_for(
        self,
        model: &str,
        base_url: Option<&str>,
    ) -> Result<OpenAiResponses, Error> {
        let m = self.responses(base_url)?;
        Ok(if is_deep_research(model) {
            m.hosted_tools(vec![serde_json::json!({"type": "web_search_preview"})])
        } else {
            m
        })
    }

    /// The provider's speech-to-text endpoint, with its key from the environment, at
    /// `base_url` if given.
    pub fn transcriber(self, base_url: Option<&str>) -> Result<Transcriber, Error> {
        if self == Provider::Anthropic {
            return Err(Error::Config("anthropic has no transcription API".into()));
        }
        Ok(with_key(
            Transcriber::new(base_url.unwrap_or(self.base_url())),
            self.key(base_url)?,
        ))
    }

    /// A sensible transcription model to use when none is named.
    pub fn default_transcription_model(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => Some("gpt-4o-mini-transcribe"),
            Provider::Mistral => Some("voxtral-mini-latest"),
            Provider::OpenRouter => Some("openai/gpt-4o-mini-transcribe"),
            Provider::Groq => Some("whisper-large-v3-turbo"),
            Provider::Anthropic => None,
        }
    }

    /// The key from the environment; it may be absent only when a base URL is given.
    fn key(self, base_url: Option<&str>) -> Result<Option<String>, Error> {
        let key = key_from_env(self.key_var());
        if key.is_none() && base_url.is_none() {
            return Err(Error::Config(format!(
                "{} is not set; export it, or point --base-url at a compatible server",
                self.key_var()
            )));
        }
        Ok(key)
    }

    /// The provider's model with its key from the environment.
    pub fn from_env(self) -> Result<Arc<dyn Model>, Error> {
        self.model(None)
    }

    /// The provider's model, at `base_url` if given (a proxy or a compatible server). The key
    /// comes from the environment; it may be absent only when a base URL is given.
    pub fn model(self, base_url: Option<&str>) -> Result<Arc<dyn Model>, Error> {
        let base = base_url.unwrap_or(self.base_url());
        let dialect = match self {
            Provider::OpenAiResponses => return Ok(Arc::new(self.responses(base_url)?)),
            Provider::Anthropic => {
                return Ok(Arc::new(with_key(
                    Anthropic::new(base),
                    self.key(base_url)?,
                )));
            }
            Provider::OpenAi => Dialect::OpenAi,
            Provider::Mistral => Dialect::Mistral,
            Provider::OpenRouter => Dialect::OpenRouter,
            Provider::Groq => Dialect::Groq,
        };
        let mut m = with_key(OpenAiCompatible::new(base, dialect), self.key(base_url)?);
        if self == Provider::OpenRouter {
            m = m.header("x-title", "kite");
        }
        Ok(Arc::new(m))
    }
}

/// Which of OpenAI's APIs to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireApi {
    /// Chat Completions.
    Chat,
    /// Responses.
    Responses,
}

impl WireApi {
    /// `chat` or `responses`.
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "chat" => Ok(Self::Chat),
            "responses" => Ok(Self::Responses),
            other => Err(Error::Config(format!(
                "unknown API {other:?}; known: chat, responses"
            ))),
        }
    }
}

/// Deep-research models (`o3-deep-research`, `o4-mini-deep-research-2025-06-26`): long
/// background runs that need a search tool.
pub fn is_deep_research(model: &str) -> bool {
    model.contains("deep-research")
}

/// `m` with `key`, when there is one.
fn with_key<A: Service + Clone>(m: HttpModel<A>, key: Option<String>) -> HttpModel<A> {
    match key {
        Some(key) => m.api_key(key),
        None => m,
    }
}

fn key_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|k| !k.trim().is_empty())
}
