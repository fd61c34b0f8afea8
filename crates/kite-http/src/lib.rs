//! kite's HTTP layer: a [`Transport`] moves bytes; [`ReqwestTransport`] is the real one,
//! [`Retry`] wraps any transport with backoff, and [`decode_stream`] turns a response body
//! into kite events with any [`StreamDecoder`](kite_wire::StreamDecoder).
//!
//! A transport of its own (here in memory, answering 503 once) wrapped in `Retry`, and the
//! streamed body of the answer that follows decoded into a response:
//!
//! ```
//! use kite_http::{HttpRequest, HttpResponse, Retry, RetryPolicy, Transport, TransportFuture, decode_stream};
//! use kite_wire::openai_chat::ChatStreamDecoder;
//! use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
//!
//! struct Flaky(AtomicU32);
//!
//! impl Transport for Flaky {
//!     fn send(&self, _request: HttpRequest) -> TransportFuture<'_> {
//!         let (status, body) = match self.0.fetch_add(1, Ordering::SeqCst) {
//!             0 => (503, ""),
//!             _ => (200, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"),
//!         };
//!         Box::pin(async move { Ok(HttpResponse::from_bytes(status, http::HeaderMap::new(), body.into())) })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), kite_core::Error> {
//! let flaky = Arc::new(Flaky(AtomicU32::new(0)));
//! let policy = RetryPolicy { server_error_base: std::time::Duration::ZERO, ..RetryPolicy::default() };
//! let transport = Retry::new(flaky.clone(), policy);
//! let response = transport.send(HttpRequest::post_json("https://api.example.com/v1/chat/completions", "{}")).await?;
//! assert_eq!((response.status, flaky.0.load(Ordering::SeqCst)), (200, 2));
//! let answer = kite_core::collect(decode_stream(response.body, ChatStreamDecoder::new())).await?;
//! assert_eq!(answer.text(), "Hi");
//! # Ok(()) }
//! ```

pub mod cassette;
mod decode;
mod reqwest_transport;
mod retry;
mod retry_after;
mod secret;
mod transport;

pub use decode::{Reconnect, decode_resumable, decode_stream};
pub use reqwest_transport::{ReqwestTransport, Timeouts, same_origin_redirects};
pub use retry::{Retry, RetryPolicy};
pub use retry_after::parse_retry_after;
pub use secret::{Secret, redact_all};
pub use transport::{ByteStream, HttpRequest, HttpResponse, Transport, TransportFuture};

/// `url` as an error may show it: scheme, host, port and path, never a query or a user and
/// password (a key may ride in either).
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let mut shown = format!("{}://{}", u.scheme(), u.host_str().unwrap_or_default());
            if let Some(port) = u.port() {
                shown.push_str(&format!(":{port}"));
            }
            shown.push_str(u.path());
            shown
        }
        Err(_) => "a URL that does not parse".to_owned(),
    }
}
