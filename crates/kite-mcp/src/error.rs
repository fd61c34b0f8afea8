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
    Connect {
        /// The server's id.
        server: String,
        /// Why (secrets redacted), with the end of the server's stderr when it wrote any.
        message: String,
    },
    /// The connection dropped, the process exited or the session expired.
    #[error("MCP server {server:?}: connection lost: {message}")]
    Disconnected {
        /// The server's id.
        server: String,
        /// What happened (secrets redacted).
        message: String,
    },
    /// The server did not answer in time.
    #[error("MCP server {server:?}: no answer to {what} within {seconds} s")]
    Timeout {
        /// The server's id.
        server: String,
        /// The request that went unanswered (`tools/call NAME`, ...).
        what: String,
        /// How long kite waited, in whole seconds.
        seconds: u64,
    },
    /// The server answered with a JSON-RPC error.
    #[error("MCP server {server:?}: {message} (code {code})")]
    Server {
        /// The server's id.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The error's message (secrets redacted).
        message: String,
    },
    /// The server answered with something kite cannot read.
    #[error("MCP server {server:?}: unreadable answer: {message}")]
    Malformed {
        /// The server's id.
        server: String,
        /// What could not be read.
        message: String,
    },
    /// The call was cancelled.
    #[error("MCP server {server:?}: {what} cancelled")]
    Cancelled {
        /// The server's id.
        server: String,
        /// The request that was cancelled (`tools/call NAME`, ...).
        what: String,
    },
}

impl Error {
    /// Whether reconnecting may cure it.
    pub fn is_disconnect(&self) -> bool {
        matches!(self, Error::Disconnected { .. })
    }
}
