//! `kite.toml`: where it is found and what it holds.
//!
//! The first of these is read: the path given with `--config` (or `KITE_CONFIG`), which
//! must exist; `kite.toml` in the working directory; `kite/kite.toml` in the XDG config
//! directory (`$XDG_CONFIG_HOME`, else `~/.config`). With none of them, the configuration
//! is empty.

use kite::Error;
use kite::http::Timeouts;
use kite::mcp::McpConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything `kite.toml` may say.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[mcp.servers.NAME]`: MCP servers whose tools `kite ask` offers.
    #[serde(default)]
    pub mcp: McpConfig,
    /// `[http]`: how long calls to providers may take.
    #[serde(default)]
    pub http: HttpConfig,
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
pub struct HttpConfig {
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
    pub fn timeouts(&self, timeout: Option<Duration>, idle: Option<Duration>) -> Timeouts {
        let default = Timeouts::default();
        Timeouts {
            connect: self.connect.unwrap_or(default.connect),
            response: timeout.or(self.timeout).unwrap_or(default.response),
            idle: idle.or(self.idle).unwrap_or(default.idle),
        }
    }
}

/// A flag's number of seconds, checked: `--timeout 1e300` is refused, not a panic.
pub fn seconds(s: &str) -> Result<Duration, String> {
    let n: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    kite::duration_from_secs("the number of seconds", n)
}

/// A configuration and the file it came from.
pub struct Loaded {
    pub path: Option<PathBuf>,
    pub config: Config,
}

/// Finds and reads the configuration.
pub fn load(explicit: Option<&Path>) -> Result<Loaded, Error> {
    let path = match explicit {
        Some(p) if p.is_file() => Some(p.to_owned()),
        Some(p) => {
            return Err(Error::Config(format!(
                "the configuration {} does not exist",
                p.display()
            )));
        }
        None => candidates().into_iter().find(|p| p.is_file()),
    };
    let Some(path) = path else {
        return Ok(Loaded {
            path: None,
            config: Config::default(),
        });
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::Config(format!("cannot read {}: {e}", path.display())))?;
    let config = parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    // What servers are sent is as secret as a provider's key.
    for server in config.mcp.servers.values() {
        if let kite::mcp::TransportConfig::Http {
            headers,
            bearer_token,
            bearer_token_env,
            ..
        } = &server.transport
        {
            headers.values().for_each(|v| crate::logging::secret(v));
            bearer_token.iter().for_each(|v| crate::logging::secret(v));
            if let Some(v) = bearer_token_env
                .as_ref()
                .and_then(|var| std::env::var(var).ok())
            {
                crate::logging::secret(&v);
            }
        }
    }
    Ok(Loaded {
        path: Some(path),
        config,
    })
}

/// The configuration in `text` (a `kite.toml`), or what is wrong with it.
pub fn parse(text: &str) -> Result<Config, String> {
    toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())
}

/// Where a configuration is looked for when none is named, in order.
fn candidates() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("kite.toml")];
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(dir) = xdg {
        out.push(dir.join("kite/kite.toml"));
    }
    out
}
