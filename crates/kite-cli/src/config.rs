//! `kite.toml`: where it is found and what it holds.
//!
//! The first of these is read: the path given with `--config` (or `KITE_CONFIG`), which
//! must exist; `kite.toml` in the working directory; `kite/kite.toml` in the XDG config
//! directory (`$XDG_CONFIG_HOME`, else `~/.config`). With none of them, the configuration
//! is empty.

use kite::Error;
use kite::mcp::McpConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Everything `kite.toml` may say.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[mcp.servers.NAME]`: MCP servers whose tools `kite ask` offers.
    #[serde(default)]
    pub mcp: McpConfig,
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
    let config = toml::from_str(&text)
        .map_err(|e| Error::Config(format!("{}: {}", path.display(), e.to_string().trim_end())))?;
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
