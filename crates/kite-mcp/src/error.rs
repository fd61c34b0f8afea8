//! What can go wrong with an MCP server.

/// A failure to reach or use an MCP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No server has this id.
    #[error("no MCP server called {0:?}")]
    UnknownServer(String),
    /// The server could not be started or reached, or the handshake failed.
    #[error("MCP server {server:?}: cannot connect: {message}")]
    Connect { server: String, message: String },
    /// The connection dropped, the process exited or the session expired.
    #[error("MCP server {server:?}: connection lost: {message}")]
    Disconnected { server: String, message: String },
    /// The server did not answer in time.
    #[error("MCP server {server:?}: no answer to {what} within {seconds} s")]
    Timeout {
        server: String,
        what: String,
        seconds: u64,
    },
    /// The server answered with a JSON-RPC error.
    #[error("MCP server {server:?}: {message} (code {code})")]
    Server {
        server: String,
        code: i32,
        message: String,
    },
    /// The server answered with something kite cannot read.
    #[error("MCP server {server:?}: unreadable answer: {message}")]
    Malformed { server: String, message: String },
    /// The call was cancelled.
    #[error("MCP server {server:?}: {what} cancelled")]
    Cancelled { server: String, what: String },
}

impl Error {
    /// Whether reconnecting may cure it.
    pub fn is_disconnect(&self) -> bool {
        matches!(self, Error::Disconnected { .. })
    }
}
