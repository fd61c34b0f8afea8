//! `kite.toml`: where it is found and what it holds.
//!
//! The path given with `--config` (or `KITE_CONFIG`), which must exist, is read alone.
//! Otherwise the personal `kite/kite.toml` in the XDG config directory (`$XDG_CONFIG_HOME`,
//! else `~/.config`) is read, with `kite.toml` in the working directory over it
//! (`config/layers.rs`), which kite refuses to use until it is trusted
//! (`config/trust.rs`). With none of them, the configuration is empty.
//!
//! Beside it: what the file may say (`settings`), trusting a project's file (`trust`),
//! choosing the model a session talks to (`choose`, with clap's closed `choices`), and
//! where requests go and how long they may take (`endpoint`).

pub(crate) mod choices;
pub(crate) mod choose;
pub(crate) mod endpoint;
mod layers;
pub(crate) mod own;
pub(crate) mod settings;
pub(crate) mod trust;

pub(crate) use crate::config::settings::{Config, HttpConfig, StoreConfig, parse, seconds};
use kite::Error;
use std::path::{Path, PathBuf};

/// A configuration and the files it came from, the last one over the others.
pub(crate) struct Loaded {
    pub path: Option<PathBuf>,
    pub paths: Vec<PathBuf>,
    pub config: Config,
}

/// Finds and reads the configuration: the file named, else the personal one with the
/// working directory's over it (`layers.rs`).
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, Error> {
    let paths: Vec<PathBuf> = match explicit {
        Some(p) if p.is_file() => vec![p.to_owned()],
        Some(p) if p.exists() => {
            return Err(Error::Config(format!(
                "the configuration {} is not a file",
                p.display()
            )));
        }
        Some(p) => {
            return Err(Error::Config(format!(
                "the configuration {} does not exist",
                p.display()
            )));
        }
        // The personal file first, the project's over it.
        None => candidates()
            .into_iter()
            .rev()
            .filter(|p| p.is_file())
            .collect(),
    };
    let mut merged = toml::Table::new();
    for path in &paths {
        let project = explicit.is_none() && path == Path::new(WORKING_DIR_CONFIG);
        layers::merge(&mut merged, read_one(path, project, explicit.is_some())?);
    }
    let mut config: Config = match paths.len() {
        0 => Config::default(),
        _ => toml::Value::Table(merged).try_into().map_err(|e| {
            let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            Error::Config(format!("{} together: {e}", files.join(" over ")))
        })?,
    };
    for (name, table) in &config.providers {
        own::check(name, table).map_err(|e| {
            let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            Error::Config(format!("{}: {e}", files.join(" over ")))
        })?;
    }
    let named = config.prompts.file.take();
    config.prompts = std::mem::take(&mut config.prompts).or(prompts_file(named)?);
    Ok(Loaded {
        path: paths.last().cloned(),
        paths,
        config,
    })
}

/// The file at `path` as a table, once checked: it parses (what it says of secrets is
/// kept from showing), a `project` file is trusted, a personal one is the user's own
/// alone (a file named with --config, `explicit`, is the user's choice), and it is made
/// whole on its own (`layers::settle`).
fn read_one(path: &Path, project: bool, explicit: bool) -> Result<toml::Table, Error> {
    let text = read_small(path, "the configuration")?;
    let config = parse(&text).map_err(|e| {
        // The error quotes the file: a password in any URL in it must not show.
        for word in text.split(|c: char| c.is_whitespace() || "\"'[],{}=".contains(c)) {
            if word.contains("://") {
                kite::mcp::url_secrets(word)
                    .iter()
                    .for_each(|v| crate::terminal::secrets::secret(v));
            }
        }
        Error::Config(format!("{}: {e}", path.display()))
    })?;
    keep_secret(&config);
    // Saying what is wrong with a file does nothing it asks; doing what it asks needs trust.
    if project {
        crate::config::trust::check(path, &text)?;
    } else if !explicit {
        // The personal configuration is trusted as the user's own: only if it is.
        for place in [Some(path), path.parent()].into_iter().flatten() {
            own_only(place).map_err(|why| {
                Error::Config(format!("{}: {why}; kite does not use it", place.display()))
            })?;
        }
    }
    let mut table = crate::config::settings::parse_table(&text)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    layers::settle(path, &mut table)?;
    Ok(table)
}

/// What the configuration's MCP servers are sent, kept from showing as a provider's key is.
fn keep_secret(config: &Config) {
    for server in config.mcp.servers.values() {
        match &server.transport {
            kite::mcp::TransportConfig::Http {
                url,
                headers,
                bearer_token,
                bearer_token_env,
                oauth,
            } => {
                if let Some(v) = oauth
                    .as_ref()
                    .and_then(|o| o.client_secret.as_deref())
                    .and_then(|s| kite::mcp::expand_env(s).ok())
                {
                    crate::terminal::secrets::secret(&v);
                }
                kite::mcp::url_secrets(url)
                    .iter()
                    .for_each(|v| crate::terminal::secrets::secret(v));
                headers
                    .iter()
                    .filter(|(name, value)| kite::mcp::looks_secret(name, value))
                    .for_each(|(_, v)| crate::terminal::secrets::secret(v));
                bearer_token
                    .iter()
                    .for_each(|v| crate::terminal::secrets::secret(v));
                if let Some(v) = bearer_token_env
                    .as_ref()
                    .and_then(|var| std::env::var(var).ok())
                {
                    crate::terminal::secrets::secret(&v);
                }
            }
            kite::mcp::TransportConfig::Stdio { env, .. } => {
                for (name, value) in env {
                    if let Ok(v) = kite::mcp::expand_env(value)
                        && kite::mcp::looks_secret(name, &v)
                    {
                        crate::terminal::secrets::secret(&v);
                    }
                }
            }
        }
    }
}

/// The prompts file: the one `[prompts] file` names (`named`), which must exist, else
/// `kite/prompts.toml` in the XDG config folder if there is one.
fn prompts_file(named: Option<PathBuf>) -> Result<crate::config::settings::Prompts, Error> {
    let path = match named {
        Some(p) => p,
        None => match config_dir().map(|d| d.join("kite/prompts.toml")) {
            Some(p) if p.is_file() => p,
            _ => return Ok(Default::default()),
        },
    };
    let text = read_small(&path, "the prompts file")?;
    crate::config::settings::parse_prompts(&text)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

/// The text of the file at `path` (`what`), a regular file of at most 1 MiB. It is opened
/// without waiting, so that a FIFO or a device in its place is refused, not waited on.
pub(crate) fn read_small(path: &Path, what: &str) -> Result<String, Error> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    const MAX: u64 = 1024 * 1024;
    let cannot = |e: &dyn std::fmt::Display| {
        Error::Config(format!("cannot read {what} {}: {e}", path.display()))
    };
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| cannot(&e))?;
    let meta = file.metadata().map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"it is not a file"));
    }
    let mut text = String::new();
    file.take(MAX + 1)
        .read_to_string(&mut text)
        .map_err(|e| cannot(&e))?;
    if text.len() as u64 > MAX {
        return Err(cannot(&"it is larger than 1 MiB"));
    }
    Ok(text)
}

/// An XDG base folder: `$var` if absolute (the XDG specification ignores a relative one,
/// which would point into whatever folder kite runs in), else `$HOME/fallback`.
fn xdg(var: &str, fallback: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|v| v.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
pub(crate) fn config_dir() -> Option<PathBuf> {
    xdg("XDG_CONFIG_HOME", ".config")
}

/// kite's cache folder, `kite` in `$XDG_CACHE_HOME` (else `~/.cache`).
pub(crate) fn cache_dir() -> Option<PathBuf> {
    xdg("XDG_CACHE_HOME", ".cache").map(|d| d.join("kite"))
}

/// kite's data folder, `kite` in `$XDG_DATA_HOME` (else `~/.local/share`).
pub(crate) fn data_dir() -> Option<PathBuf> {
    xdg("XDG_DATA_HOME", ".local/share").map(|d| d.join("kite"))
}

/// kite's data folder, made if missing, private to the user (what it holds may be as
/// secret as the conversations): refused when another user owns it or others may write
/// in it, since then they could read or change what kite keeps there.
pub(crate) fn private_data_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = data_dir().ok_or_else(|| std::io::Error::other("no home folder"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    own_only(&dir).map_err(|why| {
        std::io::Error::other(format!(
            "kite's data folder {} {why}; make it yours and private (chmod 700)",
            dir.display()
        ))
    })?;
    Ok(dir)
}

/// `Err` says why `path` is not the user's own alone: another user owns it (root aside,
/// who may anyway), or others may write it (a folder's sticky bit aside only for others'
/// files, so not here).
pub(crate) fn own_only(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!("belongs to another user (uid {})", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err("may be written by other users".into());
    }
    Ok(())
}

/// What kite keeps of its own, which tools never read (`builtin::read_file`'s `hidden`):
/// every configuration it may read (the one loaded, `KITE_CONFIG`, the working
/// directory's, the personal folder with its trust list and prompts), its data folder
/// (conversations, the fleet's keys and ledger, MCP logins), and a SQLite store kept
/// elsewhere (`KITE_STORE_URL`, `[store] url`), with its journal files.
pub(crate) fn own_paths(loaded: &Loaded) -> Vec<PathBuf> {
    let mut out = candidates();
    out.extend(loaded.paths.iter().cloned());
    out.extend(std::env::var_os("KITE_CONFIG").map(PathBuf::from));
    out.extend(config_dir().map(|d| d.join("kite")));
    out.extend(data_dir());
    let store = std::env::var("KITE_STORE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| loaded.config.store.url.clone());
    if let Some(file) = store.filter(|u| !u.contains("://") && !u.contains('=')) {
        for end in ["", "-wal", "-shm", "-journal"] {
            out.push(PathBuf::from(format!("{file}{end}")));
        }
    }
    out
}

/// The configuration in the working directory, which must be trusted.
const WORKING_DIR_CONFIG: &str = "kite.toml";

/// Where a configuration is looked for when none is named, in order.
fn candidates() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(WORKING_DIR_CONFIG)];
    if let Some(dir) = config_dir() {
        out.push(dir.join("kite/kite.toml"));
    }
    out
}
