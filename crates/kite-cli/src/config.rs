//! `kite.toml`: where it is found and what it holds.
//!
//! The first of these is read: the path given with `--config` (or `KITE_CONFIG`), which
//! must exist; `kite.toml` in the working directory; `kite/kite.toml` in the XDG config
//! directory (`$XDG_CONFIG_HOME`, else `~/.config`). With none of them, the configuration
//! is empty.

pub(crate) use crate::settings::{Config, HttpConfig, StoreConfig, parse, seconds};
use kite::Error;
use std::path::{Path, PathBuf};

/// A configuration and the file it came from.
pub(crate) struct Loaded {
    pub path: Option<PathBuf>,
    pub config: Config,
}

/// Finds and reads the configuration.
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, Error> {
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
    let config = parse(&text).map_err(|e| {
        // The error quotes the file: a password in any URL in it must not show.
        for word in text.split(|c: char| c.is_whitespace() || "\"'[],{}=".contains(c)) {
            if word.contains("://") {
                kite::mcp::url_secrets(word)
                    .iter()
                    .for_each(|v| crate::logging::secret(v));
            }
        }
        Error::Config(format!("{}: {e}", path.display()))
    })?;
    // What servers are sent is as secret as a provider's key.
    for server in config.mcp.servers.values() {
        match &server.transport {
            kite::mcp::TransportConfig::Http {
                url,
                headers,
                bearer_token,
                bearer_token_env,
            } => {
                kite::mcp::url_secrets(url)
                    .iter()
                    .for_each(|v| crate::logging::secret(v));
                headers
                    .iter()
                    .filter(|(name, value)| kite::mcp::looks_secret(name, value))
                    .for_each(|(_, v)| crate::logging::secret(v));
                bearer_token.iter().for_each(|v| crate::logging::secret(v));
                if let Some(v) = bearer_token_env
                    .as_ref()
                    .and_then(|var| std::env::var(var).ok())
                {
                    crate::logging::secret(&v);
                }
            }
            kite::mcp::TransportConfig::Stdio { env, .. } => {
                for (name, value) in env {
                    if let Ok(v) = kite::mcp::expand_env(value)
                        && kite::mcp::looks_secret(name, &v)
                    {
                        crate::logging::secret(&v);
                    }
                }
            }
        }
    }
    Ok(Loaded {
        path: Some(path),
        config,
    })
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
