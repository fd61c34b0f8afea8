//! OpenAI Responses: a model, and the responses the provider stores (retrieve, cancel,
//! delete, wait for a background run, reattach to its stream).

use super::http_model::HttpModel;
use http::Method;
use kite_core::{Error, EventStream, Request, Response};
use kite_wire::openai_responses::{self, Options, Responses, Stored};
use serde_json::Value;
use std::time::Duration;

/// An OpenAI Responses model.
///
/// By default nothing is stored by the provider and the whole history, with the encrypted
/// reasoning it returned, goes with each request. [`store`](Self::store) continues stored
/// conversations by `previous_response_id`; [`background`](Self::background) runs each
/// request in the background, so that a dropped stream resumes where it stopped.
///
/// ```no_run
/// # async fn demo() -> Result<(), kite::Error> {
/// let model = kite::OpenAiResponses::new("https://api.openai.com/v1").api_key("sk-...");
/// let run = model.start(&kite::Request::new("o3-deep-research")
///     .message(kite::Message::user("Survey Rust LLM libraries."))).await?;
/// println!("started {}", run.id);
/// let answer = model.wait(&run.id, kite::PollPolicy::default()).await?;
/// println!("{}", answer.text());
/// # Ok(()) }
/// ```
pub type OpenAiResponses = HttpModel<Responses>;

/// How often [`OpenAiResponses::wait`] asks whether a background run is done: first after
/// `initial`, then each wait `factor` times longer, up to `max`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PollPolicy {
    /// The first wait (default 1 s).
    pub initial: Duration,
    /// The longest wait between two asks (default 20 s).
    pub max: Duration,
    /// How much longer each wait is than the one before (default 1.5).
    pub factor: f64,
    /// Give up (with a timeout error) after this long; `None` waits as long as it takes.
    pub timeout: Option<Duration>,
}

impl Default for PollPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(20),
            factor: 1.5,
            timeout: None,
        }
    }
}

impl OpenAiResponses {
    /// A model at `base_url` (the part before `/responses`).
    pub fn new(base_url: impl AsRef<str>) -> Self {
        Self::with_api(Responses::default(), base_url)
    }

    /// Lets the provider store responses and continues from the last stored answer in the
    /// history (`previous_response_id`) instead of sending it all again.
    pub fn store(self, store: bool) -> Self {
        self.map_api(|api| api.options.store = store)
    }

    /// Runs every request in the background (stored): a dropped stream resumes after the
    /// last event received.
    pub fn background(self, background: bool) -> Self {
        self.map_api(|api| api.options.background = background)
    }

    /// Offers the provider's own tools (web search, file search, MCP) as well, given as the
    /// provider writes them: `json!({"type": "web_search_preview"})`.
    pub fn hosted_tools(self, tools: Vec<Value>) -> Self {
        self.map_api(|api| api.options.hosted_tools = tools)
    }

    /// Starts `request` as a background run and returns at once with its id and status
    /// (usually queued).
    pub async fn start(&self, request: &Request) -> Result<Stored, Error> {
        let opts = Options {
            background: true,
            ..self.api().options.clone()
        };
        let body = openai_responses::encode_request(request, &opts, false)?;
        let resp = self
            .call(Method::POST, "", Some(("application/json", body.into())))
            .await?;
        openai_responses::decode_stored(&resp.bytes().await?)
    }

    /// The stored response `id`: its status and, once done, its answer.
    pub async fn get(&self, id: &str) -> Result<Stored, Error> {
        let resp = self.call(Method::GET, &id_path(id)?, None).await?;
        openai_responses::decode_stored(&resp.bytes().await?)
    }

    /// Cancels the background run `id`; returns its status after the cancel.
    pub async fn cancel(&self, id: &str) -> Result<Stored, Error> {
        let path = format!("{}/cancel", id_path(id)?);
        let resp = self.call(Method::POST, &path, None).await?;
        openai_responses::decode_stored(&resp.bytes().await?)
    }

    /// Deletes the stored response `id`.
    pub async fn delete(&self, id: &str) -> Result<(), Error> {
        self.call(Method::DELETE, &id_path(id)?, None)
            .await?
            .bytes()
            .await?;
        Ok(())
    }

    /// Polls the response `id` until it is done and returns its answer. A failed run is its
    /// error; a cancelled one is an answer whose finish reason says so.
    pub async fn wait(&self, id: &str, poll: PollPolicy) -> Result<Response, Error> {
        let started = std::time::Instant::now();
        let mut delay = poll.initial;
        loop {
            let stored = self.get(id).await?;
            if let Some(result) = stored.result {
                return result;
            }
            if let Some(limit) = poll.timeout
                && started.elapsed() + delay > limit
            {
                return Err(Error::transport(
                    kite_core::TransportErrorKind::RequestTimeout,
                    format!(
                        "response {id} is still {} after {:?}",
                        stored.status.as_str(),
                        started.elapsed()
                    ),
                ));
            }
            tracing::debug!(
                id,
                status = stored.status.as_str(),
                ?delay,
                "waiting for a background response"
            );
            tokio::time::sleep(delay).await;
            delay = delay.mul_f64(poll.factor).min(poll.max);
        }
    }

    /// The events of the background run `id` from after event `after` (from its start
    /// when `None`), resuming again if this connection drops too.
    pub fn resume(&self, id: &str, after: Option<u64>) -> EventStream {
        let mut suffix = match id_path(id) {
            Ok(p) => format!("{p}?stream=true"),
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        if let Some(n) = after {
            suffix.push_str(&format!("&starting_after={n}"));
        }
        self.open_stream(Method::GET, suffix)
    }
}

/// `/{id}`, for an id that is safe in a URL path.
fn id_path(id: &str) -> Result<String, Error> {
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(Error::InvalidRequest(format!(
            "{id:?} is not a response id"
        )));
    }
    Ok(format!("/{id}"))
}
