//! A model behind an HTTP API: one piece of code for what every provider shares (the
//! transport, retries, authorization, secret redaction, a server that answers in JSON when
//! asked to stream), with what differs between APIs in a [`Codec`].

use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use kite_core::trace::Origin;
use kite_core::{Capabilities, Error, EventStream, Model, Request};
use kite_http::{
    ByteStream, HttpRequest, HttpResponse, Reconnect, ReqwestTransport, Retry, RetryPolicy, Secret,
    Transport, decode_resumable,
};
use kite_wire::{Api, Auth, Codec};
use std::sync::Arc;

/// A model served over HTTP: an [`Api`] (a [`Codec`] for a language model) and the
/// transport, key and headers its requests travel with.
pub struct HttpModel<A> {
    inner: Arc<Inner<A>>,
}

impl<A> Clone for HttpModel<A> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<A> {
    api: A,
    url: String,
    key: Option<Secret>,
    headers: HeaderMap,
    /// Query parameters put on every request's URL, encoded.
    query: String,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
    /// Who and where, for traces: worked out once, not on every call.
    origin: Origin,
}

impl<A> std::fmt::Debug for HttpModel<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpModel")
            .field("url", &self.inner.url)
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

impl<A: Api + Clone> HttpModel<A> {
    /// A model of `api` at `base_url`, with the shared transport and default retries.
    pub fn with_api(api: A, base_url: impl AsRef<str>) -> Self {
        let transport: Arc<dyn Transport> = match ReqwestTransport::shared() {
            Ok(t) => Arc::new(t),
            Err(e) => Arc::new(Broken(e.to_string())),
        };
        let url = format!("{}{}", base_url.as_ref().trim_end_matches('/'), api.path());
        let origin = Origin::at(api.provider_name(), &url);
        Self {
            inner: Arc::new(Inner {
                origin,
                api,
                url,
                key: None,
                headers: HeaderMap::new(),
                query: String::new(),
                transport,
                retry: RetryPolicy::default(),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner<A>)) -> Self {
        // The API's settings may name another provider (a dialect): the origin follows.
        let f = |i: &mut Inner<A>| {
            f(i);
            i.origin = Origin::at(i.api.provider_name(), &i.url);
        };
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => {
                let i = &self.inner;
                let mut copy = Inner {
                    api: i.api.clone(),
                    url: i.url.clone(),
                    key: i.key.clone(),
                    headers: i.headers.clone(),
                    query: i.query.clone(),
                    transport: i.transport.clone(),
                    retry: i.retry,
                    origin: i.origin.clone(),
                };
                f(&mut copy);
                self.inner = Arc::new(copy);
            }
        }
        self
    }

    /// The API's own settings.
    pub(crate) fn api(&self) -> &A {
        &self.inner.api
    }

    /// Changes the API's own settings.
    pub(crate) fn map_api(self, f: impl FnOnce(&mut A)) -> Self {
        self.edit(|i| f(&mut i.api))
    }

    /// The API key.
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

    /// Sends header `name` with every request, its value kept from showing (`Debug`, logs,
    /// cassettes) as a key's is: a configured header is often a credential. A name or value
    /// a header cannot hold is refused.
    pub fn with_header(self, name: &str, value: &str) -> Result<Self, Error> {
        let name = header_name(name)?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            Error::Config(format!(
                "the header {name} holds characters a header cannot"
            ))
        })?;
        value.set_sensitive(true);
        Ok(self.edit(|i| {
            i.headers.insert(name, value);
        }))
    }

    /// Puts query parameter `name=value` on every request's URL (an `api-version`, a
    /// gateway's tenant), encoded.
    pub fn query(self, name: &str, value: &str) -> Self {
        self.edit(|i| {
            i.query = form_urlencoded::Serializer::new(std::mem::take(&mut i.query))
                .append_pair(name, value)
                .finish();
        })
    }

    /// Uses another transport (a cassette, a client with a proxy, a test double).
    pub fn transport(self, transport: impl Transport + 'static) -> Self {
        let t: Arc<dyn Transport> = Arc::new(transport);
        self.edit(|i| i.transport = t)
    }

    /// Sets the retry policy ([`RetryPolicy::none`] to turn retries off). A
    /// [`give_up_after`](RetryPolicy::give_up_after) already set (by an
    /// [`Endpoint`](crate::Endpoint)'s timeouts) stays unless `policy` sets its own.
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.edit(|i| {
            let kept = i.retry.give_up_after;
            i.retry = policy;
            i.retry.give_up_after = policy.give_up_after.or(kept);
        })
    }

    /// Retries stop where they would end past `limit` after the first attempt.
    pub(crate) fn give_up_after(self, limit: std::time::Duration) -> Self {
        self.edit(|i| i.retry.give_up_after = Some(limit))
    }

    /// The URL requests go to.
    pub fn url(&self) -> &str {
        &self.inner.url
    }
}

impl<A: Api> HttpModel<A> {
    /// Sends a request to the URL followed by `suffix`, with the key, headers and
    /// retries of this model. An error status is a typed error.
    pub(crate) async fn call(
        &self,
        method: http::Method,
        suffix: &str,
        body: Option<(&str, bytes::Bytes)>,
    ) -> Result<HttpResponse, Error> {
        let mut req = HttpRequest::new(method, format!("{}{suffix}", self.inner.url));
        if let Some((content_type, body)) = body {
            req.headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_str(content_type)
                    .map_err(|_| Error::InvalidRequest("bad content type".into()))?,
            );
            req.body = body;
        }
        self.inner.send(self.inner.authorize(req)?).await
    }

    /// Sends a GET to `path` beside the API's own (`/models` for `/chat/completions`),
    /// with the key, headers and retries of this model.
    pub(crate) async fn get_beside(&self, path: &str) -> Result<HttpResponse, Error> {
        let url = &self.inner.url;
        let base = url.strip_suffix(self.inner.api.path()).unwrap_or(url);
        let req = HttpRequest::new(http::Method::GET, format!("{base}{path}"));
        self.inner.send(self.inner.authorize(req)?).await
    }
}

impl<A: Api> Inner<A> {
    /// Puts the key, the API's headers and the extra headers on `req`.
    pub(crate) fn authorize(&self, mut req: HttpRequest) -> Result<HttpRequest, Error> {
        if let Some(key) = &self.key {
            let (name, value) = match self.api.auth() {
                Auth::Bearer => (
                    http::header::AUTHORIZATION,
                    format!("Bearer {}", key.expose()),
                ),
                Auth::Header(name) => (header_name(name)?, key.expose().to_owned()),
            };
            req.headers.insert(name, secret_header(&value)?);
        }
        put_headers(&mut req, self.api.headers())?;
        for (k, v) in &self.headers {
            req.headers.insert(k.clone(), v.clone());
        }
        if !self.query.is_empty() {
            let joint = if req.url.contains('?') { '&' } else { '?' };
            req.url = format!("{}{joint}{}", req.url, self.query);
        }
        Ok(req)
    }

    /// The headers `request` asks the API for (Anthropic's betas); those configured for
    /// the model still win.
    fn asked_headers(&self, request: &Request) -> Vec<(&'static str, String)> {
        let asked = self.api.request_headers(request);
        asked
            .into_iter()
            .filter(|(name, _)| !self.headers.contains_key(*name))
            .collect()
    }

    /// Sends `req` with retries; an error status becomes a typed error.
    pub(crate) async fn send(&self, req: HttpRequest) -> Result<HttpResponse, Error> {
        let resp = Retry::new(&*self.transport, self.retry).send(req).await?;
        if !resp.is_success() {
            return Err(self.api_error(resp).await);
        }
        Ok(resp)
    }

    async fn api_error(&self, resp: HttpResponse) -> Error {
        let status = resp.status;
        let request_id = resp.request_id();
        let retry_after = resp.retry_after();
        let body = match resp.bytes_up_to(HttpResponse::MAX_ERROR_BODY).await {
            Ok(b) => b,
            Err(e) => return e,
        };
        let mut e = self.api.decode_error(status, &body);
        e.request_id = e.request_id.or(request_id);
        e.retry_after = retry_after;
        // An answer that is no API's error (a web page, nothing) says where it came from:
        // most often the base URL is not an API's.
        if e.code.is_none() && e.error_type.is_none() {
            e.message = format!("{} [from {}]", e.message, kite_http::shown_url(&self.url));
        }
        if let Some(key) = &self.key {
            e.message = key.redact(&e.message);
            e.body = e.body.map(|b| key.redact(&b));
        }
        e.into()
    }
}

impl<A: Codec> Inner<A> {
    /// The streaming HTTP request for `request`, encoded now so the caller may keep its
    /// request.
    fn http_request(&self, request: &Request) -> Result<HttpRequest, Error> {
        let req = HttpRequest::post_json(&self.url, self.api.encode(request, true)?);
        let mut req = self.authorize(accept_events(req))?;
        put_headers(&mut req, self.asked_headers(request))?;
        Ok(req)
    }

    async fn open(self: Arc<Self>, req: HttpRequest) -> Result<EventStream, Error> {
        let resp = self.send(req).await?;
        if resp.is_json() {
            // A server that ignored the request to stream answered with one JSON body.
            let bytes = resp.bytes().await?;
            let events = self.api.decode_whole(&bytes)?;
            return Ok(Box::pin(futures_util::stream::iter(
                events.into_iter().map(Ok),
            )));
        }
        let reconnect = self.clone().reconnect();
        Ok(decode_resumable(
            resp.body,
            self.api.stream_decoder(),
            Some(reconnect),
        ))
    }

    /// Opens the stream that continues a dropped one.
    fn reconnect(self: Arc<Self>) -> Reconnect {
        Box::new(move |point| {
            let inner = self.clone();
            Box::pin(async move {
                let path = inner.api.resume_path(&point).ok_or_else(|| {
                    Error::Config("this API cannot resume a dropped stream".into())
                })?;
                let url = format!("{}{path}", inner.url);
                let req =
                    inner.authorize(accept_events(HttpRequest::new(http::Method::GET, url)))?;
                Ok::<ByteStream, Error>(inner.send(req).await?.body)
            })
        })
    }
}

fn accept_events(mut req: HttpRequest) -> HttpRequest {
    req.headers.insert(
        http::header::ACCEPT,
        HeaderValue::from_static("text/event-stream"),
    );
    req
}

impl<A: Codec> HttpModel<A> {
    /// The event stream at the URL followed by `suffix` (a stream that already exists on
    /// the provider).
    pub(crate) fn open_stream(&self, method: http::Method, suffix: String) -> EventStream {
        let url = format!("{}{suffix}", self.inner.url);
        self.events(
            self.inner
                .authorize(accept_events(HttpRequest::new(method, url))),
        )
    }

    fn events(&self, req: Result<HttpRequest, Error>) -> EventStream {
        let req = match req {
            Ok(req) => req,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        let inner = self.inner.clone();
        Box::pin(
            futures_util::stream::once(inner.open(req)).flat_map(|opened| match opened {
                Ok(events) => events,
                Err(e) => Box::pin(futures_util::stream::iter([Err(e)])) as EventStream,
            }),
        )
    }
}

impl<A: Codec> Model for HttpModel<A> {
    fn stream(&self, request: &Request) -> EventStream {
        let events = self.events(self.inner.http_request(request));
        kite_core::trace::model_call(request, &self.inner.origin, events)
    }

    fn origin(&self) -> Origin {
        self.inner.origin.clone()
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::default();
        c.images = true;
        c.json_schema = true;
        c
    }

    fn count_tokens(
        &self,
        request: &Request,
    ) -> Option<kite_core::ModelFuture<'static, Result<u64, Error>>> {
        let body = self.inner.api.count_tokens_body(request)?;
        let inner = self.inner.clone();
        let headers = inner.asked_headers(request);
        Some(Box::pin(async move {
            let url = format!("{}/count_tokens", inner.url);
            let mut req = inner.authorize(HttpRequest::post_json(&url, body?))?;
            put_headers(&mut req, headers)?;
            // A count is a few bytes: more is not one.
            let answer = inner.send(req).await?.bytes_up_to(64 * 1024).await?;
            inner.api.decode_count(&answer)
        }))
    }
}

/// Sets an API's `headers` on `req`.
fn put_headers(req: &mut HttpRequest, headers: Vec<(&'static str, String)>) -> Result<(), Error> {
    for (name, value) in headers {
        let value = HeaderValue::from_str(&value).map_err(|_| {
            Error::Config(format!(
                "the {name} header holds characters a header cannot"
            ))
        })?;
        req.headers.insert(header_name(name)?, value);
    }
    Ok(())
}

fn header_name(name: &str) -> Result<HeaderName, Error> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| Error::Config(format!("{name:?} is not a header name")))
}

/// A header value holding a secret, marked so it never prints.
fn secret_header(value: &str) -> Result<HeaderValue, Error> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| Error::Config("the API key holds characters a header cannot".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

/// Stands in for a transport that could not be built, so the error shows at the first call.
struct Broken(String);

impl Transport for Broken {
    fn send(&self, _: HttpRequest) -> kite_http::TransportFuture<'_> {
        let msg = self.0.clone();
        Box::pin(async move { Err(Error::Config(msg)) })
    }
}
