//! kite's HTTP layer: a [`Transport`] moves bytes; [`ReqwestTransport`] is the real one,
//! [`Retry`] wraps any transport with backoff, and [`decode_stream`] turns a response body
//! into kite events with any [`StreamDecoder`](kite_wire::StreamDecoder).

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
