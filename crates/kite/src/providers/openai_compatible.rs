//! Any server that speaks OpenAI Chat Completions.

use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use kite_core::{Capabilities, Error, EventStream, Model, Request};
use kite_http::{
    HttpRequest, HttpResponse, ReqwestTransport, Retry, RetryPolicy, Secret, Transport,
    decode_stream,
};
use kite_wire::errors::decode_error;
use kite_wire::openai_chat::{ChatStreamDecoder, Dialect, encode_request, response_events};
use std::sync::Arc;

/// A Chat Completions model: OpenAI, Mistral, OpenRouter, Groq, or any compatible server
/// (llama.cpp, vLLM, Ollama, a proxy).
///
/// ```no_run
/// use kite::{OpenAiCompatible, wire::openai_chat::Dialect};
/// let local = OpenAiCompatible::new("http://127.0.0.1:8080/v1", Dialect::Compatible);
/// ```
#[derive(Clone)]
pub struct OpenAiCompatible {
    inner: Arc<Inner>,
}

struct Inner {
    endpoint: String,
    dialect: Dialect,
    key: Option<Secret>,
    headers: HeaderMap,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &self.inner.endpoint)
            .field("dialect", &self.inner.dialect)
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatible {
    /// A model at `base_url` (the part before `/chat/completions`, e.g.
    /// `https://api.openai.com/v1`), with the shared transport and default retries.
    pub fn new(base_url: impl AsRef<str>, dialect: Dialect) -> Self {
        let transport: Arc<dyn Transport> = match ReqwestTransport::shared() {
            Ok(t) => Arc::new(t),
            Err(e) => Arc::new(Broken(e.to_string())),
        };
        Self {
            inner: Arc::new(Inner {
                endpoint: format!(
                    "{}/chat/completions",
                    base_url.as_ref().trim_end_matches('/')
                ),
                dialect,
                key: None,
                headers: HeaderMap::new(),
                transport,
                retry: RetryPolicy::default(),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let i = &self.inner;
                let mut copy = Inner {
                    endpoint: i.endpoint.clone(),
                    dialect: i.dialect,
                    key: i.key.clone(),
                    headers: i.headers.clone(),
                    transport: i.transport.clone(),
                    retry: i.retry,
                };
                f(&mut copy);
                self.inner = Arc::new(copy);
            }
        }
        self
    }

    /// Sends `Authorization: Bearer <key>`.
    pub fn api_key(self, key: impl Into<String>) -> Self {
        let key = Secret::new(key);
        self.edit(|i| i.key = Some(key))
    }

    /// Sends an extra header with every request.
    pub fn header(self, name: &'static str, value: &str) -> Self {
        let value = HeaderValue::from_str(value).ok();
        self.edit(|i| {
            if let Some(v) = value {
                i.headers.insert(HeaderName::from_static(name), v);
            }
        })
    }

    /// Uses another transport (a cassette, a client with a proxy, a test double).
    pub fn transport(self, transport: impl Transport + 'static) -> Self {
        let t: Arc<dyn Transport> = Arc::new(transport);
        self.edit(|i| i.transport = t)
    }

    /// Sets the retry policy ([`RetryPolicy::none`] to turn retries off).
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.edit(|i| i.retry = policy)
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }
}

impl Inner {
    /// The HTTP request for `request`, encoded now so the caller may keep its request.
    fn http_request(&self, request: &Request) -> Result<HttpRequest, Error> {
        let body = encode_request(request, self.dialect, true)?;
        let mut req = HttpRequest::post_json(&self.endpoint, body);
        req.headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        for (k, v) in &self.headers {
            req.headers.insert(k.clone(), v.clone());
        }
        if let Some(key) = &self.key {
            let mut v =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    Error::Config("the API key holds characters a header cannot".into())
                })?;
            v.set_sensitive(true);
            req.headers.insert(http::header::AUTHORIZATION, v);
        }
        Ok(req)
    }

    async fn open(&self, req: HttpRequest) -> Result<EventStream, Error> {
        let resp = Retry::new(&*self.transport, self.retry).send(req).await?;
        if !resp.is_success() {
            return Err(self.api_error(resp).await);
        }
        if resp.is_json() {
            // A server that ignored `stream: true` answered with one JSON body.
            let bytes = resp.bytes().await?;
            let events = response_events(&bytes)?;
            return Ok(Box::pin(futures_util::stream::iter(
                events.into_iter().map(Ok),
            )));
        }
        Ok(decode_stream(resp.body, ChatStreamDecoder::new()))
    }

    async fn api_error(&self, resp: HttpResponse) -> Error {
        let status = resp.status;
        let request_id = resp.request_id();
        let retry_after = resp.retry_after();
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return e,
        };
        let mut e = decode_error(status, &body);
        e.request_id = e.request_id.or(request_id);
        e.retry_after = retry_after;
        if let Some(key) = &self.key {
            e.message = key.redact(&e.message);
            e.body = e.body.map(|b| key.redact(&b));
        }
        e.into()
    }
}

impl Model for OpenAiCompatible {
    fn stream(&self, request: &Request) -> EventStream {
        let req = match self.inner.http_request(request) {
            Ok(req) => req,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        let inner = self.inner.clone();
        Box::pin(
            futures_util::stream::once(async move { inner.open(req).await }).flat_map(|opened| {
                match opened {
                    Ok(events) => events,
                    Err(e) => Box::pin(futures_util::stream::iter([Err(e)])) as EventStream,
                }
            }),
        )
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::default();
        c.images = true;
        c.json_schema = true;
        c
    }
}

/// Stands in for a transport that could not be built, so the error shows at the first call.
struct Broken(String);

impl Transport for Broken {
    fn send(&self, _: HttpRequest) -> kite_http::TransportFuture<'_> {
        let msg = self.0.clone();
        Box::pin(async move { Err(Error::Config(msg)) })
    }
}
