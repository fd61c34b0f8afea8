//! The Rust clients, each doing the whole client path of one streamed completion as its
//! library's documentation shows it: build the request, send it, read the stream, decode
//! its events, join the text deltas, and check the text is the recording's. Each returns
//! the time from the start of the request to the first text delta in hand.

use crate::server::Raw;
use futures::StreamExt;
use std::future::Future;
use std::time::{Duration, Instant};

/// The model the requests name, and what they ask.
pub(crate) const MODEL: &str = "gpt-5-nano";
pub(crate) const PROMPT: &str = "Count from 1 to 3, one number a line.";

/// One library's streaming path.
pub(crate) trait Client: Send + Sync + 'static {
    /// One streamed completion: the time to its first text delta.
    fn once(&self) -> impl Future<Output = Result<Duration, String>> + Send;
}

/// What every client does with the text it joined.
fn check(text: &str, expected: &str, first: Option<Duration>) -> Result<Duration, String> {
    match (text == expected, first) {
        (true, Some(first)) => Ok(first),
        _ => Err(format!("the text was {text:?}, not {expected:?}")),
    }
}

/// The floor (no library): see [`Raw`].
impl Client for Raw {
    fn once(&self) -> impl Future<Output = Result<Duration, String>> + Send {
        Raw::once(self)
    }
}

/// kite: `OpenAiCompatible` (an `HttpModel` of Chat Completions) and `Model::stream`.
pub(crate) struct Kite {
    model: kite::OpenAiCompatible,
    expected: String,
}

impl Kite {
    pub(crate) fn new(base: &str, expected: &str) -> Self {
        let model = kite::OpenAiCompatible::new(base, kite::wire::openai_chat::Dialect::OpenAi)
            .api_key("sk-bench");
        Self {
            model,
            expected: expected.to_owned(),
        }
    }
}

impl Client for Kite {
    async fn once(&self) -> Result<Duration, String> {
        use kite::Model;
        let started = Instant::now();
        let request = kite::Request::new(MODEL).message(kite::Message::user(PROMPT));
        let mut stream = self.model.stream(&request);
        let (mut text, mut first) = (String::new(), None);
        while let Some(event) = stream.next().await {
            if let kite::Event::TextDelta { text: delta, .. } = event.map_err(|e| e.to_string())? {
                first.get_or_insert_with(|| started.elapsed());
                text.push_str(&delta);
            }
        }
        check(&text, &self.expected, first)
    }
}

/// async-openai: `Client::chat().create_stream`, its default reqwest client.
pub(crate) struct AsyncOpenAi {
    client: async_openai::Client<async_openai::config::OpenAIConfig>,
    expected: String,
}

impl AsyncOpenAi {
    pub(crate) fn new(base: &str, expected: &str) -> Self {
        let config = async_openai::config::OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key("sk-bench");
        Self {
            client: async_openai::Client::with_config(config),
            expected: expected.to_owned(),
        }
    }
}

impl Client for AsyncOpenAi {
    async fn once(&self) -> Result<Duration, String> {
        use async_openai::types::chat::{
            ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
        };
        let started = Instant::now();
        let message = ChatCompletionRequestUserMessageArgs::default()
            .content(PROMPT)
            .build()
            .map_err(|e| e.to_string())?;
        let request = CreateChatCompletionRequestArgs::default()
            .model(MODEL)
            .messages([message.into()])
            .build()
            .map_err(|e| e.to_string())?;
        let mut stream = self
            .client
            .chat()
            .create_stream(request)
            .await
            .map_err(|e| e.to_string())?;
        let (mut text, mut first) = (String::new(), None);
        while let Some(chunk) = stream.next().await {
            for choice in chunk.map_err(|e| e.to_string())?.choices {
                if let Some(delta) = choice.delta.content {
                    first.get_or_insert_with(|| started.elapsed());
                    text.push_str(&delta);
                }
            }
        }
        check(&text, &self.expected, first)
    }
}

/// rig: its OpenAI provider at the loopback base URL (`OpenAIConfig::with_base_url`), a
/// Chat Completions model, `Model::stream`, on rig's shared reqwest client.
pub(crate) struct Rig {
    model: rig_core::driver::Model<rig_core::providers::openai::wire::Chat>,
    expected: String,
}

impl Rig {
    pub(crate) fn new(base: &str, expected: &str) -> Self {
        let model = rig_core::providers::openai::OpenAIConfig::new("sk-bench")
            .with_base_url(base)
            .client()
            .chat(MODEL);
        Self {
            model,
            expected: expected.to_owned(),
        }
    }
}

impl Client for Rig {
    async fn once(&self) -> Result<Duration, String> {
        use rig_core::streaming::{Item, StreamEvent};
        let started = Instant::now();
        let request = rig_core::completion::CompletionRequest::new(PROMPT);
        let mut stream = self.model.stream(request).map_err(|e| e.to_string())?;
        let (mut text, mut first) = (String::new(), None);
        while let Some(item) = stream.next().await {
            if let Item::Event(StreamEvent::Text { text: delta, .. }) =
                item.map_err(|e| e.to_string())?
            {
                first.get_or_insert_with(|| started.elapsed());
                text.push_str(&delta);
            }
        }
        check(&text, &self.expected, first)
    }
}
