//! How to reach an MCP server, and which of its tools to offer.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One server: how to reach it, and which of its tools the model sees.
///
/// Deserializes from the `[mcp.servers.NAME]` tables of `kite.toml`:
///
/// ```toml
/// [mcp.servers.files]
/// command = "npx"
/// args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
///
/// [mcp.servers.search]
/// url = "https://mcp.example.com/mcp"
/// headers = { "X-Team" = "kite" }
/// bearer_token_env = "SEARCH_TOKEN"
/// reject = ["delete_index"]
/// ```
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(flatten)]
    pub transport: TransportConfig,
    /// What to put before this server's tool names (then `_`) when they are prefixed;
    /// the server's id by default.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Offer only these tools (their names on the server).
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    /// Never offer these tools.
    #[serde(default)]
    pub reject: Vec<String>,
    /// How long a tool call may run without news (progress resets it); default 60 s.
    #[serde(default, rename = "timeout_secs", with = "secs")]
    pub timeout: Option<Duration>,
}

/// How to reach a server: a child process over stdio, or a URL over Streamable HTTP.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(untagged, deny_unknown_fields)]
pub enum TransportConfig {
    /// A command kite starts; its stderr goes to kite's log.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// A server kite reaches over Streamable HTTP.
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// A bearer token sent as `Authorization: Bearer …`.
        #[serde(default)]
        bearer_token: Option<String>,
        /// The environment variable holding the bearer token (read when connecting).
        #[serde(default)]
        bearer_token_env: Option<String>,
    },
}

impl ServerConfig {
    /// A server started as `command args…`, spoken to over stdio.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with(TransportConfig::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// A server at `url`, spoken to over Streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with(TransportConfig::Http {
            url: url.into(),
            headers: BTreeMap::new(),
            bearer_token: None,
            bearer_token_env: None,
        })
    }

    fn with(transport: TransportConfig) -> Self {
        Self {
            transport,
            prefix: None,
            allow: None,
            reject: Vec::new(),
            timeout: None,
        }
    }

    /// Sets an environment variable of a stdio server (ignored over HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored over HTTP).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let TransportConfig::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sends a header with every HTTP request (ignored over stdio).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sends `Authorization: Bearer TOKEN` (ignored over stdio).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let TransportConfig::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// Prefixes this server's tool names with `prefix` and `_` when they are prefixed.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Offers only these tools.
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Never offers these tools.
    pub fn reject<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.reject.extend(names.into_iter().map(Into::into));
        self
    }

    /// How long a tool call may run without news from the server.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether the model is offered the server's tool `name`.
    pub(crate) fn offers(&self, name: &str) -> bool {
        !self.reject.iter().any(|r| r == name)
            && self
                .allow
                .as_ref()
                .is_none_or(|a| a.iter().any(|n| n == name))
    }
}

/// Header values and tokens are secrets: `Debug` shows only their names.
impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ServerConfig");
        match &self.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => d
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd),
            TransportConfig::Http {
                url,
                headers,
                bearer_token,
                bearer_token_env,
            } => d
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("bearer_token", &bearer_token.as_ref().map(|_| "<redacted>"))
                .field("bearer_token_env", bearer_token_env),
        };
        d.field("prefix", &self.prefix)
            .field("allow", &self.allow)
            .field("reject", &self.reject)
            .field("timeout", &self.timeout)
            .finish()
    }
}

mod secs {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64))
    }
}
