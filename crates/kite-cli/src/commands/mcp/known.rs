//! The tools each configured MCP server listed last time, kept in kite's data folder
//! (`mcp-tools/`), so that `kite ask` and `kite chat` offer them at once while the servers
//! start in the background: a question that calls none of them never waits for a server,
//! and the first call to one waits for its server alone. Once a server is up its own list
//! replaces the one kept, and is kept for next time.
//!
//! A server is known by what starts it (its command, arguments and folder, or its URL's
//! origin and path) and the names of the variables and headers it is given, never their
//! values: change any of those and it is started before the first question again.

use kite::mcp::{Hub, RemoteTool, ServerConfig, TransportConfig};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The tools server `id` listed when last connected, if kept.
pub(super) fn load(id: &str, config: &ServerConfig) -> Option<Vec<RemoteTool>> {
    let path = file(id, config)?;
    if !path.exists() {
        return None;
    }
    let text = crate::config::read_small(&path, "the MCP tools kept").ok()?;
    serde_json::from_str(&text).ok()
}

/// Keeps the tools of every server of `servers` that is connected now.
pub(crate) fn keep(hub: &Hub, servers: &BTreeMap<String, ServerConfig>) {
    for (id, config) in servers {
        let (Some(tools), Some(path)) = (hub.listed(id), file(id, config)) else {
            continue;
        };
        if load(id, config).as_ref() == Some(&tools) {
            continue;
        }
        if let Err(e) = write(&path, &tools) {
            tracing::debug!(server = %id, error = %e, "cannot keep the MCP server's tools");
        }
    }
}

/// Written aside and moved into place, so a list is never half written.
fn write(path: &std::path::Path, tools: &[RemoteTool]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    crate::config::private_data_dir()?;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let body = serde_json::to_vec(tools).map_err(std::io::Error::other)?;
    let aside = path.with_extension(format!("new-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&aside)
        .and_then(|mut f| f.write_all(&body))
        .and_then(|()| std::fs::rename(&aside, path))
}

/// Where server `id`'s tools are kept: its id (made safe for a file name) and a digest of
/// what starts it.
fn file(id: &str, config: &ServerConfig) -> Option<PathBuf> {
    let mut h = Sha256::new();
    let mut put = |part: &str| {
        h.update(part.as_bytes());
        h.update([0]);
    };
    match &config.transport {
        TransportConfig::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            put("stdio");
            put(command);
            args.iter().for_each(|a| put(a));
            put(&cwd
                .as_ref()
                .map(|c| c.display().to_string())
                .unwrap_or_default());
            env.keys().for_each(|k| put(k));
        }
        TransportConfig::Http { url, headers, .. } => {
            put("http");
            // Without its query or user part, which may hold a secret.
            let bare = match url::Url::parse(url) {
                Ok(mut u) => {
                    u.set_query(None);
                    u.set_fragment(None);
                    let _ = u.set_username("");
                    let _ = u.set_password(None);
                    u.to_string()
                }
                Err(_) => String::new(),
            };
            put(&bare);
            headers.keys().for_each(|k| put(k));
        }
    }
    let digest: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let safe: String = id
        .chars()
        .take(64)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect();
    Some(
        crate::config::data_dir()?
            .join("mcp-tools")
            .join(format!("{safe}-{digest}.json")),
    )
}
