//! The providers kite knows by name: where they live, which API they speak, and where their
//! keys come from.

use super::{Anthropic, HttpModel, OpenAiCompatible, OpenAiResponses, Transcriber};
use kite_core::{Error, Model};
use kite_http::{ReqwestTransport, Timeouts, Transport};
use kite_wire::Api;
use kite_wire::openai_chat::Dialect;
use std::sync::Arc;

/// Where a provider's requests go and how they travel: the provider's own URL or
/// `base_url` (a proxy, a compatible server), over the network with `timeouts` (default
/// [`Timeouts::default`]) or through `transport` (a cassette, say).
#[derive(Clone, Default)]
pub struct Endpoint {
    /// The base URL in place of the provider's own.
    pub base_url: Option<String>,
    /// The transport in place of the network.
    pub transport: Option<Arc<dyn Transport>>,
    /// How long connecting, the answer's start and silences mid-answer may take, when
    /// requests go over the network (a `transport` brings its own).
    pub timeouts: Option<Timeouts>,
}

impl Endpoint {
    /// The provider's own URL, over the network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests go to `url` instead.
    pub fn at(url: impl Into<String>) -> Self {
        Self {
            base_url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Requests travel through `transport`.
    pub fn transport(mut self, transport: impl Transport + 'static) -> Self {
        self.transport = Some(Arc::new(transport));
        self
    }

    /// `m`, its requests sent the way this endpoint says: through its transport, or over the
    /// network with its timeouts. (The base URL is given when `m` is made.) With timeouts,
    /// no retry begins that would end past the wait for an answer to start
    /// ([`RetryPolicy::give_up_after`](kite_http::RetryPolicy::give_up_after)): the caller
    /// hears why the last attempt failed before that deadline passes.
    pub fn carry<A: Api + Clone>(&self, m: HttpModel<A>) -> Result<HttpModel<A>, Error> {
        let m = match self.timeouts {
            Some(t) => m.give_up_after(t.response),
            None => m,
        };
        Ok(match (&self.transport, self.timeouts) {
            (Some(t), _) => m.transport(t.clone()),
            (None, Some(t)) => m.transport(ReqwestTransport::shared()?.with_timeouts(t)),
            (None, None) => m,
        })
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("transport", &self.transport.as_ref().map(|_| "custom"))
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// A provider kite knows by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Mistral's Chat Completions.
    Mistral,
    /// OpenRouter's Chat Completions.
    OpenRouter,
    /// Groq's Chat Completions.
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

    /// The first provider whose key is set in the environment (a key that is not UTF-8
    /// counts as set: using it then says what is wrong with it).
    pub fn detect() -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|p| !matches!(key_from_env(p.key_var()), Ok(None)))
    }

    /// The provider that serves `model` over `api`. OpenAI's deep-research models are
    /// served by Responses only, so they go there unless `api` says otherwise; `api` picks
    /// between OpenAI's two APIs, and other providers speak only their own.
    pub fn for_model(self, model: &str, api: Option<OpenAiApi>) -> Result<Self, Error> {
        match (self, api) {
            (Provider::OpenAi | Provider::OpenAiResponses, Some(OpenAiApi::Chat)) => {
                Ok(Provider::OpenAi)
            }
            (Provider::OpenAi | Provider::OpenAiResponses, Some(OpenAiApi::Responses)) => {
                Ok(Provider::OpenAiResponses)
            }
            (Provider::OpenAi, None) if is_deep_research(model) => Ok(Provider::OpenAiResponses),
            (p, Some(OpenAiApi::Responses)) => Err(Error::Config(format!(
                "{} has no Responses API in kite; use the openai-responses provider",
                p.name()
            ))),
            (p, _) => Ok(p),
        }
    }

    /// The provider's model for `model` at `endpoint`, with its key from the environment.
    /// A deep-research model runs in the background (its stream resumes when dropped) with
    /// web search offered. Route between OpenAI's APIs with [`for_model`](Self::for_model)
    /// first.
    pub fn model(self, model: &str, endpoint: &Endpoint) -> Result<Arc<dyn Model>, Error> {
        let dialect = match self {
            Provider::OpenAiResponses => {
                let m = self.responses(model, endpoint)?;
                let m = m.background(is_deep_research(model));
                return Ok(Arc::new(m));
            }
            Provider::Anthropic => {
                let m = Anthropic::new(self.url(endpoint));
                return Ok(Arc::new(self.connect(m, endpoint)?));
            }
            Provider::OpenAi => Dialect::OpenAi,
            Provider::Mistral => Dialect::Mistral,
            Provider::OpenRouter => Dialect::OpenRouter,
            Provider::Groq => Dialect::Groq,
        };
        let mut m = self.connect(OpenAiCompatible::new(self.url(endpoint), dialect), endpoint)?;
        if self == Provider::OpenRouter {
            m = m.header("x-title", "kite");
        }
        Ok(Arc::new(m))
    }

    /// The provider's default model, with its key from the environment. As the providers'
    /// own SDKs do, `OPENAI_BASE_URL` (ending in `/v1`) or `ANTHROPIC_BASE_URL` (the host,
    /// without `/v1`) sends OpenAI's or Anthropic's requests elsewhere when set.
    pub fn from_env(self) -> Result<Arc<dyn Model>, Error> {
        self.model(self.default_model(), &self.endpoint_from_env()?)
    }

    /// The endpoint the SDKs' base-URL variable names, else the provider's own.
    fn endpoint_from_env(self) -> Result<Endpoint, Error> {
        match self.base_url_var() {
            Some(var) => self.endpoint_at(var, std::env::var_os(var)),
            None => Ok(Endpoint::new()),
        }
    }

    /// The base URL the providers' SDKs' variable names (`OPENAI_BASE_URL`, ending in
    /// `/v1`; `ANTHROPIC_BASE_URL`, the host), as [`from_env`](Self::from_env) reads it;
    /// `None` when it is unset or blank, or the provider has none.
    pub fn base_url_from_env(self) -> Result<Option<String>, Error> {
        Ok(self.endpoint_from_env()?.base_url)
    }

    /// The SDKs' variable for another base URL: OpenAI's ends in `/v1`, Anthropic's does not.
    fn base_url_var(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi | Provider::OpenAiResponses => Some("OPENAI_BASE_URL"),
            Provider::Anthropic => Some("ANTHROPIC_BASE_URL"),
            _ => None,
        }
    }

    /// The endpoint for `value`, the value of `var`: the provider's own when unset or blank.
    /// Anthropic's gets `/v1` added, as its SDK adds it (so a value ending in `/v1` gets two).
    fn endpoint_at(self, var: &str, value: Option<std::ffi::OsString>) -> Result<Endpoint, Error> {
        let Some(url) = value.filter(|v| !v.to_string_lossy().trim().is_empty()) else {
            return Ok(Endpoint::new());
        };
        let url = url
            .into_string()
            .map_err(|_| Error::Config(format!("{var} is not UTF-8")))?;
        let suffix = if self == Provider::Anthropic {
            "/v1"
        } else {
            ""
        };
        Ok(Endpoint::at(format!(
            "{}{suffix}",
            url.trim_end_matches('/')
        )))
    }

    /// The OpenAI Responses model for `model` with its key from the environment, at
    /// `endpoint`: for what only Responses does (stored responses, background runs). A
    /// deep-research model is offered web search, which it needs.
    pub fn responses(self, model: &str, endpoint: &Endpoint) -> Result<OpenAiResponses, Error> {
        if !matches!(self, Provider::OpenAi | Provider::OpenAiResponses) {
            return Err(Error::Config(format!(
                "{} has no Responses API in kite",
                self.name()
            )));
        }
        let m = self.connect(OpenAiResponses::new(self.url(endpoint)), endpoint)?;
        Ok(if is_deep_research(model) {
            m.hosted_tools(vec![serde_json::json!({"type": "web_search_preview"})])
        } else {
            m
        })
    }

    /// The provider's speech-to-text API, with its key from the environment, at
    /// `endpoint`.
    pub fn transcriber(self, endpoint: &Endpoint) -> Result<Transcriber, Error> {
        if self == Provider::Anthropic {
            return Err(Error::Config("anthropic has no transcription API".into()));
        }
        self.connect(Transcriber::new(self.url(endpoint)), endpoint)
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

    /// The base URL requests go to.
    fn url(self, endpoint: &Endpoint) -> &str {
        endpoint.base_url.as_deref().unwrap_or(self.base_url())
    }

    /// `m` with the key from the environment and the endpoint's transport. The key may be
    /// absent only when the endpoint names a base URL or a transport (a cassette replays
    /// without one).
    pub(super) fn connect<A: Api + Clone>(
        self,
        mut m: HttpModel<A>,
        endpoint: &Endpoint,
    ) -> Result<HttpModel<A>, Error> {
        match key_from_env(self.key_var())? {
            Some(key) => m = m.api_key(key),
            None if endpoint.base_url.is_none() && endpoint.transport.is_none() => {
                return Err(Error::Config(format!(
                    "{} is not set; export it, or point the base URL at a compatible server",
                    self.key_var()
                )));
            }
            None => {}
        }
        endpoint.carry(m)
    }
}

/// Which of OpenAI's APIs to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenAiApi {
    /// Chat Completions.
    Chat,
    /// Responses.
    Responses,
}

impl OpenAiApi {
    /// Both APIs.
    pub const ALL: [OpenAiApi; 2] = [OpenAiApi::Chat, OpenAiApi::Responses];

    /// kite's name for it: `chat` or `responses`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
        }
    }

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

/// The key `var` holds, if it holds one; a value that is not UTF-8 is an error naming it
/// (and not the value).
fn key_from_env(var: &str) -> Result<Option<String>, Error> {
    match std::env::var(var) {
        Ok(k) => Ok(Some(k).filter(|k| !k.trim().is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::Config(format!(
            "{var} is not UTF-8; a key is plain text: set it again"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::Provider;
    use std::ffi::OsString;

    fn url(p: Provider, value: Option<&str>) -> Option<String> {
        p.endpoint_at("VAR", value.map(OsString::from))
            .unwrap()
            .base_url
    }

    #[test]
    fn a_base_url_from_the_environment_is_read_as_each_sdk_reads_it() {
        let openai = Some("http://127.0.0.1:8080/v1/");
        assert_eq!(
            url(Provider::OpenAi, openai).as_deref(),
            Some("http://127.0.0.1:8080/v1")
        );
        assert_eq!(
            url(Provider::Anthropic, Some("https://proxy.example")).as_deref(),
            Some("https://proxy.example/v1")
        );
        assert_eq!(url(Provider::OpenAi, Some("")), None);
        assert_eq!(url(Provider::OpenAi, Some(" ")), None);
        assert_eq!(url(Provider::OpenAi, None), None);
        assert_eq!(Provider::Groq.base_url_var(), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_base_url_that_is_not_utf8_is_refused_by_name() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0x68, 0xff]);
        let err = Provider::OpenAi
            .endpoint_at("OPENAI_BASE_URL", Some(bad))
            .unwrap_err();
        assert!(
            err.to_string().contains("OPENAI_BASE_URL is not UTF-8"),
            "{err}"
        );
    }
}
