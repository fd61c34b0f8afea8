//! MCP servers as a source of kite tools.
//!
//! A [`Hub`] connects to many Model Context Protocol servers at once, over stdio (a child
//! process whose stderr goes to the log) or Streamable HTTP, and offers their tools to the
//! agent loop under one set of names. It watches each server: a process that exits or a
//! connection that drops retires the server's tools at once and starts reconnecting with
//! backoff; a call that finds its server gone reconnects and is retried once; a periodic ping
//! finds servers that hang. `notifications/tools/list_changed` refreshes the tool list.
//!
//! The protocol is spoken by `rmcp`, the official Rust SDK; none of its types appear in
//! this crate's API, so its changes stay here.
//!
//! Servers are described by an `McpConfig`, the `[mcp]` table of `kite.toml` (read here
//! from the same fields in JSON); a server names exactly one transport, and its `Debug`
//! never shows a token:
//!
//! ```
//! use kite_mcp::{McpConfig, ServerConfig, TransportConfig};
//! use serde_json::json;
//!
//! let config: McpConfig = serde_json::from_value(json!({"servers": {
//!     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]},
//!     "search": {"url": "https://mcp.example.com/mcp", "bearer_token": "sk-secret",
//!                "reject": ["delete_index"], "timeout_secs": 30}
//! }}))?;
//! let files = ServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]);
//! assert_eq!(config.servers["files"], files);
//! let search = &config.servers["search"];
//! assert!(matches!(&search.transport, TransportConfig::Http { url, .. } if url == "https://mcp.example.com/mcp"));
//! assert_eq!(search.reject, ["delete_index"]);
//! assert_eq!(search.timeout, Some(std::time::Duration::from_secs(30)));
//! assert!(!format!("{search:?}").contains("sk-secret"));
//! assert!(serde_json::from_value::<ServerConfig>(json!({"command": "npx", "url": "https://x"})).is_err());
//! # Ok::<(), serde_json::Error>(())
//! ```

mod catalog;
mod child;
mod config;
mod error;
mod handler;
mod http_client;
mod hub;
mod naming;
mod oauth;
mod options;
mod sampling;
mod secrets;
mod server_requests;
mod session;
mod supervisor;
mod tool;

pub use catalog::{Prompt, PromptArgument, PromptMessages, Resource, ResourceContent};
pub use child::{INHERITED, expand as expand_env, looks_secret};
pub use config::{McpConfig, SamplingConfig, ServerConfig, TransportConfig};
pub use error::Error;
pub use hub::{Hub, HubOptions, Prefixing, ServerReport, ServerStatus};
#[cfg(feature = "keyring")]
pub use oauth::KeyringTokens;
pub use oauth::{
    Approval, Authorizer, CLIENT_METADATA_URL, FileTokens, Grant, Headless, MemoryTokens,
    OAuthConfig, OAuthError, OAuthOptions, Saved, SecretSink, TokenStore,
};
pub use sampling::SamplingLimits;
pub use secrets::url_secrets;
pub use server_requests::{ElicitAnswer, Elicitation, Elicitor, ModelSampler, Sampler};
pub use session::{CallResult, RemoteTool};
