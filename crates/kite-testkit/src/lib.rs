//! Test helpers.
//!
//! [`ScriptedModel`] is a [`Model`](kite_core::Model) that plays a fixed sequence of replies
//! and fails the test on an unexpected or missing call.
//!
//! [`ReplayServer`] is a real HTTP/1.1 server on a loopback port that answers each request
//! with the next scripted [`Reply`]: recorded bytes streamed in small pieces with delays, or
//! a failure — a connection reset before or after the first byte, a stream that stalls, bytes
//! that are not HTTP. Point any kite provider's base URL at it.
//!
//! [`FaultProxy`] sits between a client and any loopback server and injects a [`Fault`]:
//! latency, single bytes, a bandwidth cap, a reset, a stall or a half-close after N bytes, a
//! chunked answer cut before its end, a certificate nobody trusts, a name that does not
//! resolve.
//!
//! [`TlsStreamServer`] answers over HTTPS as providers' servers do: HTTP/2 or HTTP/1.1 by
//! ALPN, a cap on the streams an HTTP/2 connection carries, a slow event stream.
//!
//! [`mcp`] finds the real MCP servers tests talk to; [`engines`] starts real Postgres,
//! Redis and haproxy servers of a test's own.
//!
//! [`fixture`] reads a recorded exchange from the workspace's `testdata/wire/`.
//!
//! [`render::sse`] writes a [`Response`](kite_core::Response) as each provider would stream
//! it, so a scripted scenario can run through the real codecs and transport.
//!
//! ```
//! use kite_testkit::{ReplayServer, Reply};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # fn main() -> std::io::Result<()> {
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let server = ReplayServer::start(vec![
//!     Reply::status(429).header("retry-after", "1"),
//!     Reply::sse(b"data: [DONE]\n\n".to_vec()).chunked(7, std::time::Duration::from_millis(2)),
//! ]).await;
//! let base_url = server.url(); // http://127.0.0.1:PORT
//! // Any client will do: here, one request by hand.
//! let mut conn = tokio::net::TcpStream::connect(base_url.trim_start_matches("http://")).await?;
//! conn.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
//!     .await?;
//! let mut reply = [0u8; 64];
//! let n = conn.read(&mut reply).await?;
//! assert!(reply[..n].starts_with(b"HTTP/1.1 429"));
//! assert_eq!(server.requests()[0].path, "/v1/chat/completions");
//! assert_eq!(server.unused(), 1); // the stream is left for the next request
//! # Ok(()) })
//! # }
//! ```

pub mod engines;
mod faults;
pub mod mcp;
pub mod render;
mod scripted;
mod server;
mod tls_server;

pub use faults::{Fault, FaultProxy};
pub use scripted::ScriptedModel;
pub use server::{RecordedRequest, ReplayServer, Reply, SilentServer};
pub use tls_server::TlsStreamServer;

/// The bytes of `path` under the workspace's `testdata/wire/` (recorded provider traffic;
/// its README lists every case and its source), e.g.
/// `fixture("openai/chat-completions/text-basic/response.json")`. Panics, naming the file,
/// when it is missing: a test cannot go on without it.
pub fn fixture(path: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wire");
    std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("testdata/wire/{path}: {e}"))
}
