//! The transport contract.

use bytes::Bytes;
use futures_core::Stream;
use http::{HeaderMap, Method};
use kite_core::Error;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A response body arriving in pieces.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// The future a [`Transport`] returns.
pub type TransportFuture<'a> =
    Pin<Box<dyn Future<Output = Result<HttpResponse, Error>> + Send + 'a>>;

/// Sends one HTTP request and returns the response once its headers arrive.
///
/// An HTTP error status is a response, not an error: the caller decides what it means.
/// Errors are failures to move bytes.
pub trait Transport: Send + Sync {
    /// Sends `request`; resolves once the response's status and headers are in.
    fn send(&self, request: HttpRequest) -> TransportFuture<'_>;
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        (**self).send(request)
    }
}

/// A request: cheap to clone, so it can be sent again.
#[derive(Clone, Debug)]
pub struct HttpRequest {
    /// The HTTP method.
    pub method: Method,
    /// The full URL, query included.
    pub url: String,
    /// Mark secret values with `HeaderValue::set_sensitive` so they never print.
    pub headers: HeaderMap,
    /// The body, whole; empty for none.
    pub body: Bytes,
}

impl HttpRequest {
    /// A request with no body.
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Self {
            method,
            url: url.into(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    /// A POST of a JSON body.
    pub fn post_json(url: impl Into<String>, body: impl Into<Bytes>) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Self {
            method: Method::POST,
            url: url.into(),
            headers,
            body: body.into(),
        }
    }
}

/// A response whose body is still to be read.
pub struct HttpResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers as received.
    pub headers: HeaderMap,
    /// The body, read as it arrives.
    pub body: ByteStream,
}

impl std::fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl HttpResponse {
    /// A response with a body already in memory.
    pub fn from_bytes(status: u16, headers: HeaderMap, body: Bytes) -> Self {
        Self {
            status,
            headers,
            body: Box::pin(futures_util::stream::once(async move { Ok(body) })),
        }
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The most [`bytes`](Self::bytes) reads of a body: far above any answer, and a
    /// bound on what a server that never stops can make kite hold.
    pub const MAX_BODY: usize = 64 * 1024 * 1024;
    /// The most of an error body that is read: enough for any error message.
    pub const MAX_ERROR_BODY: usize = 1024 * 1024;

    /// Reads the whole body; one larger than [`MAX_BODY`](Self::MAX_BODY) is an error.
    pub async fn bytes(self) -> Result<Bytes, Error> {
        let body = self.bytes_up_to(Self::MAX_BODY + 1).await?;
        if body.len() > Self::MAX_BODY {
            return Err(Error::decode(
                format!("the answer is larger than {} bytes", Self::MAX_BODY),
                &body[..256],
            ));
        }
        Ok(body)
    }

    /// Reads the body up to `max` bytes; the rest is not read (the connection closes).
    pub async fn bytes_up_to(mut self, max: usize) -> Result<Bytes, Error> {
        use futures_util::StreamExt;
        let mut out = Vec::new();
        while let Some(chunk) = self.body.next().await {
            let chunk = chunk?;
            let room = max - out.len();
            if chunk.len() >= room {
                out.extend_from_slice(&chunk[..room]);
                break;
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out.into())
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The provider's request id (`x-request-id`, `request-id`, ...).
    pub fn request_id(&self) -> Option<String> {
        [
            "x-request-id",
            "request-id",
            "x-groq-id",
            "mistral-correlation-id",
            "cf-ray",
        ]
        .iter()
        .find_map(|h| self.header(h))
        .map(str::to_owned)
    }

    /// How long the server asked us to wait (`retry-after-ms`, then `Retry-After`); a wait
    /// too long to represent is `Duration::MAX`.
    pub fn retry_after(&self) -> Option<Duration> {
        if let Some(ms) = self
            .header("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            && ms.is_finite()
            && ms >= 0.0
        {
            return Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.header("retry-after")
            .and_then(|v| crate::parse_retry_after(v, now))
    }

    /// True when the body is JSON rather than an event stream.
    pub fn is_json(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.contains("json"))
    }
}

impl<T: Transport + ?Sized> Transport for &T {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        (**self).send(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(name: &'static str, value: &str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(name, http::HeaderValue::from_str(value).unwrap());
        HttpResponse::from_bytes(429, headers, Bytes::new()).retry_after()
    }

    #[test]
    fn a_wait_too_long_for_a_duration_saturates_instead_of_panicking() {
        assert_eq!(
            waiting("retry-after-ms", "1500"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(waiting("retry-after-ms", "1e300"), Some(Duration::MAX));
        assert_eq!(waiting("retry-after", &"5".repeat(40)), Some(Duration::MAX));
        assert_eq!(waiting("retry-after-ms", "-3"), None);
    }

    #[tokio::test]
    async fn a_body_that_never_ends_is_read_only_up_to_its_bound() {
        let endless = futures_util::stream::repeat_with(|| Ok(Bytes::from(vec![b'x'; 1000])));
        let resp = HttpResponse {
            status: 400,
            headers: HeaderMap::new(),
            body: Box::pin(endless),
        };
        assert_eq!(resp.bytes_up_to(2500).await.unwrap().len(), 2500);
        let endless = futures_util::stream::repeat_with(|| Ok(Bytes::from(vec![b'x'; 1 << 20])));
        let resp = HttpResponse {
            status: 200,
            headers: HeaderMap::new(),
            body: Box::pin(endless),
        };
        let e = resp.bytes().await.unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
    }
}
