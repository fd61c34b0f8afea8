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
#[serde(try_from = "RawServer")]
pub struct ServerConfig {
    /// How to reach the server.
    pub transport: TransportConfig,
    /// What to put before this server's tool names (then `_`) when they are prefixed;
    /// the server's id by default.
    pub prefix: Option<String>,
    /// Offer only these tools (their names on the server).
    pub allow: Option<Vec<String>>,
    /// Never offer these tools.
    pub reject: Vec<String>,
    /// How long a tool call may run without news (progress resets it); default 60 s.
    pub timeout: Option<Duration>,
    /// How long starting the server may take: the process starting (or the connection),
    /// the handshake and the first tool list. Default: the hub's, 10 s.
    pub startup_timeout: Option<Duration>,
}

/// How to reach a server: a child process over stdio, or a URL over Streamable HTTP.
#[derive(Clone, PartialEq)]
pub enum TransportConfig {
    /// A command kite starts; its stderr goes to kite's log. It inherits only a short
    /// allow-list of kite's environment ([`INHERITED`](crate::INHERITED) and `LC_*`)
    /// plus `env`, where `${NAME}` forwards kite's variable `NAME`.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the inherited ones.
        env: BTreeMap<String, String>,
        /// The directory it runs in; kite's own when unset.
        cwd: Option<PathBuf>,
    },
    /// A server kite reaches over Streamable HTTP.
    Http {
        /// The server's endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// A bearer token sent as `Authorization: Bearer …`.
        bearer_token: Option<String>,
        /// The environment variable holding the bearer token (read when connecting).
        bearer_token_env: Option<String>,
        /// How its OAuth tokens are got, when it asks for them (`[mcp.servers.NAME.oauth]`).
        oauth: Option<crate::OAuthConfig>,
    },
}

/// The `[mcp]` table of `kite.toml`: servers by id, and what they may ask of the model.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Each server by its id.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    /// `[mcp.sampling]`: what servers may ask of the model.
    #[serde(default)]
    pub sampling: SamplingConfig,
}

/// `[mcp.sampling]`: what servers may ask of the model (see [`SamplingLimits`](crate::SamplingLimits)), and
/// whether a person is asked first (`ask`, the default where there is a terminal).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SamplingConfig {
    /// The most tokens one answer may have.
    pub max_tokens: Option<u32>,
    /// The most answers a server may ask for during one of its tool calls.
    pub max_requests: Option<u32>,
    /// The most dollars all answers may cost together.
    #[serde(default, deserialize_with = "dollars")]
    pub max_cost: Option<f64>,
    /// Whether a person approves each request first (default true); with none to ask,
    /// requests are refused.
    pub ask: Option<bool>,
}

impl SamplingConfig {
    /// The limits it sets, the others at their defaults.
    pub fn limits(&self) -> crate::SamplingLimits {
        let all = crate::SamplingLimits::default();
        crate::SamplingLimits {
            max_tokens: self.max_tokens.unwrap_or(all.max_tokens).max(1),
            max_requests: self.max_requests.unwrap_or(all.max_requests),
            max_cost: self.max_cost.or(all.max_cost),
        }
    }
}

/// Dollars: a finite number, at least 0.
fn dollars<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(v) if !v.is_finite() || v < 0.0 => Err(serde::de::Error::custom(
            "`max_cost` is a number of dollars, 0 or more",
        )),
        v => Ok(v),
    }
}

/// A server's table as written, before it is checked to name one transport.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_token: Option<String>,
    bearer_token_env: Option<String>,
    oauth: Option<crate::OAuthConfig>,
    prefix: Option<String>,
    allow: Option<Vec<String>>,
    #[serde(default)]
    reject: Vec<String>,
    timeout_secs: Option<f64>,
    startup_timeout_secs: Option<f64>,
}

impl TryFrom<RawServer> for ServerConfig {
    type Error = String;

    fn try_from(raw: RawServer) -> Result<Self, String> {
        let stdio_only = !raw.args.is_empty() || !raw.env.is_empty() || raw.cwd.is_some();
        let http_only = !raw.headers.is_empty()
            || raw.bearer_token.is_some()
            || raw.bearer_token_env.is_some()
            || raw.oauth.is_some();
        let transport = match (raw.command, raw.url) {
            (Some(_), Some(_)) => {
                return Err(
                    "a server has either `command` (stdio) or `url` (HTTP), not both".into(),
                );
            }
            (None, None) => {
                return Err("a server needs `command` (stdio) or `url` (HTTP)".into());
            }
            (Some(_), None) if http_only => {
                return Err(
                    "`headers`, `bearer_token`, `bearer_token_env` and `oauth` are for `url` \
                     servers"
                        .into(),
                );
            }
            (None, Some(_)) if stdio_only => {
                return Err("`args`, `env` and `cwd` are for `command` servers".into());
            }
            (Some(command), None) => TransportConfig::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                cwd: raw.cwd,
            },
            (None, Some(url)) => TransportConfig::Http {
                url,
                headers: raw.headers,
                bearer_token: raw.bearer_token,
                bearer_token_env: raw.bearer_token_env,
                oauth: raw.oauth,
            },
        };
        let secs = |what: &str, s: Option<f64>| {
            s.map(|s| kite_core::duration_from_secs(what, s))
                .transpose()
        };
        Ok(Self {
            transport,
            prefix: raw.prefix,
            allow: raw.allow,
            reject: raw.reject,
            timeout: secs("`timeout_secs`", raw.timeout_secs)?,
            startup_timeout: secs("`startup_timeout_secs`", raw.startup_timeout_secs)?,
        })
    }
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
            oauth: None,
        })
    }

    fn with(transport: TransportConfig) -> Self {
        Self {
            transport,
            prefix: None,
            allow: None,
            reject: Vec::new(),
            timeout: None,
            startup_timeout: None,
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

    /// Gets its OAuth tokens as `oauth` says (ignored over stdio).
    pub fn oauth(mut self, oauth: crate::OAuthConfig) -> Self {
        if let TransportConfig::Http { oauth: o, .. } = &mut self.transport {
            *o = Some(oauth);
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

    /// Sends `Authorization: Bearer` with the token in environment variable `var`, read
    /// at each connection (ignored over stdio).
    pub fn bearer_token_env(mut self, var: impl Into<String>) -> Self {
        if let TransportConfig::Http {
            bearer_token_env, ..
        } = &mut self.transport
        {
            *bearer_token_env = Some(var.into());
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

    /// How long starting the server may take (process, handshake, first tool list).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
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
                oauth,
            } => d
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("bearer_token", &bearer_token.as_ref().map(|_| "<redacted>"))
                .field("bearer_token_env", bearer_token_env)
                .field("oauth", oauth),
        };
        d.field("prefix", &self.prefix)
            .field("allow", &self.allow)
            .field("reject", &self.reject)
            .field("timeout", &self.timeout)
            .field("startup_timeout", &self.startup_timeout)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<McpConfig, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn servers_parse_from_their_tables() {
        let config = parse(json!({"servers": {
            "files": {"command": "npx", "args": ["-y", "server-filesystem", "/srv"],
                      "env": {"A": "1"}, "reject": ["write_file"], "timeout_secs": 2.5},
            "search": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "kite"},
                       "bearer_token_env": "SEARCH_TOKEN", "prefix": "s", "allow": ["find"]}
        }}))
        .unwrap();
        assert_eq!(
            config.servers["files"],
            ServerConfig::stdio("npx", ["-y", "server-filesystem", "/srv"])
                .env("A", "1")
                .reject(["write_file"])
                .timeout(Duration::from_millis(2500))
        );
        let quick = parse(json!({"servers": {"q": {"command": "a", "startup_timeout_secs": 0.5}}}))
            .unwrap();
        assert_eq!(
            quick.servers["q"].startup_timeout,
            Some(Duration::from_millis(500))
        );
        let search = &config.servers["search"];
        assert!(matches!(
            &search.transport,
            TransportConfig::Http { url, bearer_token_env: Some(var), .. }
                if url == "https://mcp.example.com/mcp" && var == "SEARCH_TOKEN"
        ));
        assert!(search.offers("find") && !search.offers("drop"));
        assert_eq!(search.prefix.as_deref(), Some("s"));
    }

    #[test]
    fn a_table_that_names_no_or_two_transports_or_unknown_keys_is_refused() {
        for (table, says) in [
            (json!({"args": ["x"]}), "needs `command`"),
            (json!({"command": "a", "url": "http://b"}), "not both"),
            (
                json!({"url": "http://b", "args": ["x"]}),
                "for `command` servers",
            ),
            (
                json!({"command": "a", "headers": {"A": "b"}}),
                "for `url` servers",
            ),
            (
                json!({"command": "a", "comand": "b"}),
                "unknown field `comand`",
            ),
            (json!({"command": "a", "timeout_secs": 0}), "from 0.001"),
            (
                json!({"command": "a", "timeout_secs": 1e300}),
                "`timeout_secs` must be a number of seconds from 0.001 to 604800",
            ),
            (
                json!({"command": "a", "startup_timeout_secs": -2}),
                "`startup_timeout_secs` must be",
            ),
        ] {
            let e = parse(json!({"servers": {"x": table}})).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn debug_hides_header_values_and_tokens() {
        let c = ServerConfig::http("https://h/mcp")
            .header("X-Api-Key", "hdr-secret")
            .bearer_token("tok-secret");
        let shown = format!("{c:?}");
        assert!(
            shown.contains("X-Api-Key") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert!(
            !shown.contains("hdr-secret") && !shown.contains("tok-secret"),
            "{shown}"
        );
    }
}
