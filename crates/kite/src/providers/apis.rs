//! The HTTP APIs kite speaks.

use super::http_model::{Api, HttpModel, Service, secret_header};
use http::{HeaderMap, HeaderValue};
use kite_core::{Error, Event, Request};
use kite_http::Secret;
use kite_wire::StreamDecoder;
use kite_wire::{anthropic, openai_chat};

/// OpenAI Chat Completions, in one of its dialects.
#[derive(Clone, Copy, Debug)]
pub struct ChatCompletionsApi(pub openai_chat::Dialect);

impl Service for ChatCompletionsApi {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }
    fn headers(&self, key: Option<&Secret>, headers: &mut HeaderMap) -> Result<(), Error> {
        bearer(key, headers)
    }
}

impl Api for ChatCompletionsApi {
    fn encode(&self, request: &Request) -> Result<Vec<u8>, Error> {
        openai_chat::encode_request(request, self.0, true)
    }
    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(openai_chat::ChatStreamDecoder::new())
    }
    fn response_events(&self, body: &[u8]) -> Result<Vec<Event>, Error> {
        openai_chat::response_events(body)
    }
}

/// `Authorization: Bearer KEY`, as OpenAI and the servers like it want.
pub(crate) fn bearer(key: Option<&Secret>, headers: &mut HeaderMap) -> Result<(), Error> {
    if let Some(key) = key {
        headers.insert(
            http::header::AUTHORIZATION,
            secret_header(&format!("Bearer {}", key.expose()))?,
        );
    }
    Ok(())
}

/// A Chat Completions model: OpenAI, Mistral, OpenRouter, Groq, or any compatible server
/// (llama.cpp, vLLM, Ollama, a proxy).
///
/// ```no_run
/// use kite::{OpenAiCompatible, wire::openai_chat::Dialect};
/// let local = OpenAiCompatible::new("http://127.0.0.1:8080/v1", Dialect::Compatible);
/// ```
pub type OpenAiCompatible = HttpModel<ChatCompletionsApi>;

impl OpenAiCompatible {
    /// A model at `base_url` (the part before `/chat/completions`, e.g.
    /// `https://api.openai.com/v1`).
    pub fn new(base_url: impl AsRef<str>, dialect: openai_chat::Dialect) -> Self {
        Self::with_api(ChatCompletionsApi(dialect), base_url)
    }
}

/// Anthropic Messages.
#[derive(Clone, Debug, Default)]
pub struct MessagesApi {
    /// `anthropic-beta` features to turn on.
    pub betas: Vec<String>,
}

impl Api for MessagesApi {
    fn encode(&self, request: &Request) -> Result<Vec<u8>, Error> {
        anthropic::encode_request(request, true)
    }
    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(anthropic::AnthropicStreamDecoder::new())
    }
    fn response_events(&self, body: &[u8]) -> Result<Vec<Event>, Error> {
        anthropic::response_events(body)
    }
}

impl Service for MessagesApi {
    fn path(&self) -> &'static str {
        "/messages"
    }
    fn headers(&self, key: Option<&Secret>, headers: &mut HeaderMap) -> Result<(), Error> {
        if let Some(key) = key {
            headers.insert("x-api-key", secret_header(key.expose())?);
        }
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(anthropic::VERSION),
        );
        if !self.betas.is_empty() {
            let v = HeaderValue::from_str(&self.betas.join(",")).map_err(|_| {
                Error::Config("a beta name holds characters a header cannot".into())
            })?;
            headers.insert("anthropic-beta", v);
        }
        Ok(())
    }
}

/// An Anthropic Messages model.
///
/// ```no_run
/// let claude = kite::Anthropic::new("https://api.anthropic.com/v1").api_key("sk-ant-...");
/// ```
pub type Anthropic = HttpModel<MessagesApi>;

impl Anthropic {
    /// A model at `base_url` (the part before `/messages`).
    pub fn new(base_url: impl AsRef<str>) -> Self {
        Self::with_api(MessagesApi::default(), base_url)
    }

    /// Turns on `anthropic-beta` features.
    pub fn betas<I: IntoIterator<Item = S>, S: Into<String>>(self, betas: I) -> Self {
        let betas: Vec<String> = betas.into_iter().map(Into::into).collect();
        self.map_api(|api| api.betas = betas)
    }
}
