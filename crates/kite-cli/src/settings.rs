//! What `kite.toml` may say, and the checks on it: the file's schema, apart from where the
//! file is found (`config`), so that it can be read (and fuzzed) on its own.

use kite::http::Timeouts;
use kite::mcp::McpConfig;
use serde::Deserialize;
use std::time::Duration;

/// Everything `kite.toml` may say.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// `[mcp.servers.NAME]`: MCP servers whose tools `kite ask` offers.
    #[serde(default)]
    pub mcp: McpConfig,
    /// `[http]`: how long calls to providers may take.
    #[serde(default)]
    pub http: HttpConfig,
    /// `[store]`: where conversations are kept.
    #[serde(default)]
    pub store: StoreConfig,
}

/// The `[store]` table: where conversations are kept. `KITE_STORE_URL` overrides it.
///
/// ```toml
/// [store]
/// url = "postgres://kite@db.internal/kite"   # or a SQLite file's path
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreConfig {
    /// A `postgres://` URL, or the path of a SQLite file. Default: `conversations.db` in
    /// kite's XDG data folder.
    pub url: Option<String>,
}

/// The `[http]` table: deadlines of calls to providers, in seconds.
///
/// ```toml
/// [http]
/// connect_timeout_secs = 10   # reaching the server
/// timeout_secs = 600          # until the answer starts (reasoning models think first)
/// idle_timeout_secs = 120     # silence once the answer has started
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawHttp")]
pub(crate) struct HttpConfig {
    pub connect: Option<Duration>,
    pub timeout: Option<Duration>,
    pub idle: Option<Duration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    connect_timeout_secs: Option<f64>,
    timeout_secs: Option<f64>,
    idle_timeout_secs: Option<f64>,
}

impl TryFrom<RawHttp> for HttpConfig {
    type Error = String;

    fn try_from(raw: RawHttp) -> Result<Self, String> {
        let secs =
            |what: &str, s: Option<f64>| s.map(|s| kite::duration_from_secs(what, s)).transpose();
        Ok(Self {
            connect: secs("`connect_timeout_secs`", raw.connect_timeout_secs)?,
            timeout: secs("`timeout_secs`", raw.timeout_secs)?,
            idle: secs("`idle_timeout_secs`", raw.idle_timeout_secs)?,
        })
    }
}

impl HttpConfig {
    /// The deadlines: `timeout` and `idle` from flags first, then this table, then the
    /// defaults.
    pub(crate) fn timeouts(&self, timeout: Option<Duration>, idle: Option<Duration>) -> Timeouts {
        let default = Timeouts::default();
        Timeouts {
            connect: self.connect.unwrap_or(default.connect),
            response: timeout.or(self.timeout).unwrap_or(default.response),
            idle: idle.or(self.idle).unwrap_or(default.idle),
        }
    }
}

/// A flag's number of seconds, checked: `--timeout 1e300` is refused, not a panic.
pub(crate) fn seconds(s: &str) -> Result<Duration, String> {
    let n: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    kite::duration_from_secs("it", n)
}

/// The configuration in `text` (a `kite.toml`), or what is wrong with it.
pub(crate) fn parse(text: &str) -> Result<Config, String> {
    toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())
}
